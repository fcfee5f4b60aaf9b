"""Every emitted engine configuration is parsed by the named release's own
argument parser or schema, rebuilt from an extract of that release's source
shipped in tests/data/engines (the flags, their types and choices, as the
release's parser defines them; see each file's ``about``)."""
import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

import speclib
from speclib.tools import engines
from speclib.tools.schedule import render

DATA = Path(__file__).parent / "data" / "engines"


def sglang_parser():
    """SGLang 0.5.23's parser for the flags of the extract: argparse actions
    with the release's names, aliases, types, nargs and choices; unknown flags
    are errors (argparse's exit, turned into an exception)."""
    extract = json.loads((DATA / "sglang-0.5.23-server-args.json").read_text())
    assert extract["release"] == engines.SGLANG_RELEASE
    parser = argparse.ArgumentParser(exit_on_error=False, add_help=False)
    types = {"int": int, "float": float, "str": str}
    for flag in extract["flags"]:
        kw = {}
        if flag.get("action") == "store_true":
            kw["action"] = "store_true"
        elif flag.get("action") == "boolean_optional":
            kw["action"] = argparse.BooleanOptionalAction
            flag = dict(flag, flags=[f for f in flag["flags"] if not f.startswith("--no-")])
        else:
            kw["type"] = types[flag["type"]]
            if "nargs" in flag:
                kw["nargs"] = flag["nargs"]
            if flag.get("choices"):
                kw["choices"] = flag["choices"]
        parser.add_argument(*flag["flags"], **kw)
    return parser, extract


def parse_sglang(args: str):
    parser, extract = sglang_parser()
    import shlex

    try:
        ns, unknown = parser.parse_known_args(shlex.split(args))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise AssertionError(f"SGLang {extract['release']} refuses {args!r}: {exc}") from None
    assert not unknown, f"SGLang {extract['release']} has no flag {unknown}"
    if ns.speculative_algorithm is not None:
        assert ns.speculative_algorithm in extract["speculative_algorithm_choices"]
    return ns, extract


def load_slots(config):
    """SGLang 0.5.23's ``_load_adaptive_config`` rules: integer-string batch keys,
    candidate_steps a non-empty list of non-negative ints; at least one key."""
    entries = {}
    for key, entry in config.items():
        if not key.isdigit():
            continue
        steps = entry.get("candidate_steps")
        assert isinstance(steps, list) and steps and all(isinstance(x, int) and x >= 0 for x in steps)
        entries[int(key)] = entry
    assert entries, "no integer-string batch-size key"
    return sorted({s for e in entries.values() for s in e["candidate_steps"]})


@pytest.fixture(scope="module")
def qwen_h100():
    # the case: Qwen3-235B on 8 x H100, EAGLE-3, concurrency up to 128
    return speclib.schedule(seq=2500, alpha=0.8, max_batch=128,
                            deployment=speclib.Deployment("qwen3-235b-a22b", "H100", tp=8))


def test_every_sglang_form_parses_and_runs_the_priced_batch(qwen_h100):
    sched = qwen_h100
    doc = yaml.safe_load(render(sched, "sglang", method="eagle3", draft_model="x/eagle3"))
    assert doc["release"] == "SGLang 0.5.23"
    assert sched.max_batch > 48  # a case where the default cap would bite
    for name in ("by_batch_size", "static", "adaptive_tiers"):
        ns, extract = parse_sglang(doc[name]["args"])
        held = sched.max_batch if name != "static" else (sched.static().held_to or sched.max_batch)
        # without the flag SGLang runs 48 at most with speculation on; the graphs stop at the pool
        assert ns.max_running_requests == held and ns.cuda_graph_max_bs_decode == held
        assert ns.tp_size == 8
        assert ns.speculative_eagle_topk == 1 and ns.speculative_num_draft_tokens == ns.speculative_num_steps + 1
        if "adaptive_config" in doc[name]:
            assert ns.speculative_adaptive
            assert ns.speculative_num_steps in load_slots(doc[name]["adaptive_config"])


def test_sglang_under_dp_attention_is_static_and_says_why():
    sched = speclib.schedule(seq=2048, alpha=0.7, max_batch=256,
                             deployment=speclib.Deployment("deepseek-r1", "H200", tp=8, ep=8, dp_attention=True,
                                                           drafter="deepseek-r1-mtp"))
    text = render(sched, "sglang")
    doc = yaml.safe_load(text)
    assert "by_batch_size" not in doc and "adaptive_tiers" not in doc
    assert "attention data parallelism" in doc["static_only"] and "static only" in text
    ns, _ = parse_sglang(doc["static"]["args"])
    assert ns.attn_dp_size == 8 and ns.ep_size == 8 and ns.max_running_requests >= 1


def test_the_parser_refuses_what_the_release_lacks():
    # the extract is a real parse: a flag the release does not have, or a bad value, fails
    with pytest.raises(AssertionError):
        parse_sglang("--cuda-graph-max-bs 128")  # 0.5.23 spells it --cuda-graph-max-bs-decode
    with pytest.raises(AssertionError):
        parse_sglang("--max-running-requests many")


# --- vLLM v0.34.0: SpeculativeConfig, extra fields forbidden ---------------------------------
def _matches(value, node, methods) -> bool:
    """Whether ``value`` (parsed JSON) is of the annotation ``node`` (a Python
    expression tree of vLLM's annotation): unions, None, int, str, bool,
    float, list[...] and tuple[...] (JSON lists) and SpeculativeMethod (its
    Literal's names); any other name is not one speclib may emit."""
    import ast

    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _matches(value, node.left, methods) or _matches(value, node.right, methods)
    if isinstance(node, ast.Constant) and node.value is None:
        return value is None
    if isinstance(node, ast.Name):
        simple = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool), "str": lambda v: isinstance(v, str),
                  "bool": lambda v: isinstance(v, bool), "float": lambda v: isinstance(v, (int, float)),
                  "SpeculativeMethod": lambda v: v in methods}
        assert node.id in simple, f"annotation {node.id} is not one speclib emits"
        return simple[node.id](value)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(value, list):
        if node.value.id == "list":
            return all(_matches(v, node.slice, methods) for v in value)
        if node.value.id == "tuple":
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return len(items) == len(value) and all(_matches(v, t, methods) for v, t in zip(value, items))
    return False


def check_vllm_speculative_config(config):
    import ast

    extract = json.loads((DATA / "vllm-0.34.0-speculative-config.json").read_text())
    unknown = set(config) - set(extract["fields"])
    assert not unknown, f"vLLM {extract['release']} forbids extra fields: {unknown}"
    for key, value in config.items():
        annotation = ast.parse(extract["fields"][key], mode="eval").body
        assert _matches(value, annotation, set(extract["methods"])), (key, value, extract["fields"][key])
    assert config["num_speculative_tokens"] > 0  # Field(gt=0)
    # the field takes any string (a registered custom method); speclib names only the release's own methods
    assert config.get("method") is None or config["method"] in extract["methods"], config.get("method")
    return extract


@pytest.mark.parametrize("case", ["llama-eagle3", "r1-mtp", "qwen-h100"])
def test_every_vllm_config_fits_the_release_schema(case, qwen_h100):
    if case == "qwen-h100":
        sched, kw = qwen_h100, dict(method="eagle3", draft_model="x/eagle3")
    elif case == "llama-eagle3":
        sched = speclib.schedule(seq=4096, alpha=0.8, max_batch=256,
                                 deployment=speclib.Deployment("llama-3-70b", "H200", tp=4))
        kw = dict(method="eagle3", draft_model="yuhuili/EAGLE3-LLaMA3.3-Instruct-70B")
    else:
        sched = speclib.schedule(seq=2048, alpha=0.7, max_batch=256,
                                 deployment=speclib.Deployment("deepseek-r1", "H200", tp=8))
        kw = {}
    text = render(sched, "vllm", **kw)
    ns = parse_vllm_config_file(text)
    assert ns.max_num_seqs == sched.max_batch  # runs the batch the table is priced to
    config = ns.speculative_config
    extract = check_vllm_speculative_config(config)
    assert extract["release"] == "v0.34.0"
    # the schedule reads back to the per-batch optimum by the release's lookup (restated in engines.expand_vllm)
    assert engines.expand_vllm(config, sched.max_batch) == [int(k) for k in sched.table().k_per_batch]


def parse_vllm_config_file(text: str):
    """vLLM's form read as ``vllm serve MODEL --config FILE.yaml`` reads it
    (the loader's rules and the flags' types from tests/data/engines/vllm-serving-args.json):
    each top-level key a flag, a mapping passed on as JSON, underscores read
    as dashes; a flag the extract does not list is refused."""
    extract = json.loads((DATA / "vllm-serving-args.json").read_text())
    # read in the same release as the speculative config it sits beside, and the output says which
    assert extract["release"] == json.loads((DATA / "vllm-0.34.0-speculative-config.json").read_text())["release"]
    assert extract["release"] in engines.VLLM_SERVING_SOURCE
    document = yaml.safe_load(text)  # JSON is YAML: the file may be saved as FILE.yaml
    argv = []
    for key, value in document.items():
        argv += ["--" + key, json.dumps(value) if isinstance(value, dict) else str(value)]
    argv = [a.replace("_", "-") if a.startswith("--") else a for a in argv]
    parser = argparse.ArgumentParser(exit_on_error=False, add_help=False)
    types = {"int": int, "json": json.loads}
    for flag, kind in extract["config_flags"].items():
        parser.add_argument(flag, type=types[kind])
    try:
        ns, unknown = parser.parse_known_args(argv)
    except argparse.ArgumentError as exc:
        raise AssertionError(f"vLLM refuses {argv}: {exc}") from None
    assert not unknown, f"vLLM's config flags have no {unknown}"
    assert ns.max_num_seqs >= extract["max_num_seqs_min"]
    return ns


def test_the_vllm_config_file_refuses_what_vllm_lacks():
    good = {"max_num_seqs": 8, "speculative_config": {"num_speculative_tokens": 1}}
    assert parse_vllm_config_file(json.dumps(good)).max_num_seqs == 8
    for bad in ({**good, "max_batch_size": 8},  # TensorRT-LLM's name
                {**good, "max_num_seqs": "many"}, {**good, "max_num_seqs": 0}):
        with pytest.raises(AssertionError):
            parse_vllm_config_file(json.dumps(bad))


def test_the_vllm_schema_refuses_what_the_release_lacks():
    good = {"method": "eagle3", "model": "x", "num_speculative_tokens": 3,
            "num_speculative_tokens_per_batch_size": [[1, 16, 3], [17, 64, 1]]}
    check_vllm_speculative_config(good)
    for bad in ({**good, "num_speculative_tokens_per_batch_size": {"1-16": 3}},  # the unreleased dict draft
                {**good, "draft_len_schedule": {4: 3}},  # TensorRT-LLM's key
                {**good, "method": "eagle4"},
                {**good, "num_speculative_tokens_per_batch_size": [[1, 16]]}):
        with pytest.raises(AssertionError):
            check_vllm_speculative_config(bad)


# --- TensorRT-LLM: the LLM API's fields (release not verified; see the extract's about) --------
def check_trtllm_options(options):
    extract = json.loads((DATA / "trtllm-llm-args-fields.json").read_text())
    is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    kinds = {"nonnegative_int": lambda v: is_int(v) and v >= 0, "positive_int": lambda v: is_int(v) and v > 0,
             "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
             "int_list": lambda v: isinstance(v, list) and all(is_int(x) for x in v),
             "int_int_map": lambda v: isinstance(v, dict) and all(is_int(a) and is_int(b) for a, b in v.items())}

    def check(mapping, schema, where):
        unknown = set(mapping) - set(schema)
        assert not unknown, f"{where}: TensorRT-LLM has no field {unknown}"
        for key, value in mapping.items():
            kind = schema[key]
            if isinstance(kind, list):
                assert value in kind, (where, key, value)
            elif kind in extract:
                check(value, extract[kind], f"{where}.{key}")
            else:
                assert kinds[kind](value), (where, key, value)

    check(options, extract["top"], "options")


def test_the_trtllm_options_run_the_priced_batch_on_graphs(qwen_h100):
    options = yaml.safe_load(render(qwen_h100, "trtllm", method="eagle3", draft_model="x/eagle3"))
    check_trtllm_options(options)
    n = qwen_h100.max_batch
    # graphs to the priced batch, padded (by default TensorRT-LLM captures to 128 and runs other batches eagerly)
    assert options["max_batch_size"] == n and options["cuda_graph_config"] == {"max_batch_size": n,
                                                                               "enable_padding": True}
    with pytest.raises(AssertionError):
        check_trtllm_options({**options, "max_num_seqs": n})  # vLLM's name


def test_the_limits_table_names_fields_the_release_parses_and_speclib_writes(qwen_h100):
    """Each engine's row of the limits table (engines.engine_limits) names keys or flags that speclib writes for
    that engine and that the named release's parser or schema has, and states the cap and the methods the
    release's own source gives (the extracts in tests/data/engines)."""
    limits = {e.engine: e for e in engines.engine_limits()}
    assert list(limits) == ["vllm", "trtllm", "sglang"]
    for name, row in limits.items():
        written = render(qwen_h100, name, method="eagle3", draft_model="x/eagle3")
        assert all(field in written for field in row.fields), (name, row.fields)
    vllm = json.loads((DATA / "vllm-0.34.0-speculative-config.json").read_text())
    serving = json.loads((DATA / "vllm-serving-args.json").read_text())
    vllm_has = set(vllm["fields"]) | {f.lstrip("-").replace("-", "_") for f in serving["config_flags"]}
    trt = json.loads((DATA / "trtllm-llm-args-fields.json").read_text())
    trt_has = set(trt["top"]) | set(trt["cuda_graph_config"]) | set(trt["speculative_config"])
    _, sglang = sglang_parser()
    sglang_has = {f for flag in sglang["flags"] for f in flag["flags"]}
    for name, has in (("vllm", vllm_has), ("trtllm", trt_has), ("sglang", sglang_has)):
        assert set(limits[name].fields) <= has, (name, set(limits[name].fields) - has)
    facts = sglang["facts"]
    assert limits["sglang"].release == sglang["release"]
    assert f"at most {facts['max_running_requests_with_speculation_when_unset']} requests" in limits["sglang"].running_batch
    assert all(a in limits["sglang"].methods for a in facts["adaptive_algorithms"])
    assert "--cuda-graph-max-bs " not in sglang_has and "--cuda-graph-max-bs-decode" in sglang_has
    assert "max_concurrency" in trt["speculative_config"] and "max_concurrency" in limits["trtllm"].draft_length
