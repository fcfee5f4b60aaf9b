"""Every emitted engine configuration is parsed by the named release's own
argument parser or schema, rebuilt from an extract of that release's source
shipped in tests/data/engines (the flags, their types and choices, as the
release's parser defines them; see each file's ``about``)."""
import argparse
import json
import math
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


# --- TensorRT-LLM 1.3.0rc27: the LLM API's fields and validators (tests/data/engines/trtllm-llm-args.json) ------
TRT = json.loads((DATA / "trtllm-llm-args.json").read_text())


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


TRT_KINDS = {
    "optional_int": lambda v: v is None or _is_int(v),
    "nonnegative_int": lambda v: _is_int(v) and v >= 0,
    "optional_nonnegative_int": lambda v: v is None or (_is_int(v) and v >= 0),
    "optional_positive_int": lambda v: v is None or (_is_int(v) and v > 0),
    "bool": lambda v: isinstance(v, bool),
    "optional_str": lambda v: v is None or isinstance(v, str),
    "optional_int_list": lambda v: v is None or (isinstance(v, list) and all(_is_int(x) for x in v)),
    "int_int_map": lambda v: v is None or (isinstance(v, dict) and all(_is_int(a) and _is_int(b)
                                                                        for a, b in v.items())),
}


def _check_fields(mapping, fields, where):
    unknown = set(mapping) - set(fields)
    assert not unknown, f"TensorRT-LLM {TRT['release']} {where} forbids extra fields: {unknown}"
    for key, value in mapping.items():
        field = fields[key]
        if field["kind"] == "literal":
            assert value in field["values"], (where, key, value)
        elif field["kind"] in TRT_KINDS:
            assert TRT_KINDS[field["kind"]](value), (where, key, value, field["type"])


def trtllm_graph_batch_sizes(batch_sizes, max_batch_size, enable_padding):
    """The decode CUDA graphs BaseCudaGraphConfig's validator captures, restated from the extract's rules."""
    if batch_sizes:
        batch_sizes = sorted(batch_sizes)
        assert max_batch_size in (0, max(batch_sizes)), "max_batch_size must equal max(batch_sizes)"
        return batch_sizes
    top = max_batch_size or TRT["cuda_graph_config"]["default_max_batch_size"]
    if enable_padding:
        sizes = [1, 2, 4] + [8 * i for i in range(1, 17)]
        while sizes[-1] + 64 <= top:
            sizes.append(sizes[-1] + 64)
    else:
        sizes = list(range(1, 32)) + [32, 64, 128] + [2 ** i for i in range(8, math.ceil(math.log(top, 2)))]
    sizes = sorted(b for b in sizes if b <= top)
    return sizes if sizes and sizes[-1] == top else sizes + [top]


def check_trtllm_speculative(spec):
    """speculative_config as release 1.3.0rc27 parses it: the union's decoding_type, the fields and types of
    DecodingBaseConfig, validate_draft_len_schedule_and_sort, the max_concurrency exclusion and each type's
    checks on max_draft_len and speculative_model."""
    extract = TRT["speculative_config"]
    assert spec.get(extract["discriminator"]) in extract["decoding_types"], spec.get("decoding_type")
    _check_fields({k: v for k, v in spec.items() if k != "decoding_type"}, extract["fields"], "speculative_config")
    rules, kind = extract["rules"], spec["decoding_type"]
    top, schedule = spec.get("max_draft_len"), spec.get("draft_len_schedule")
    if kind in rules["max_draft_len_positive"]:
        assert top is None or top > 0, f"{kind} refuses max_draft_len {top}"
    if kind in rules["speculative_model_required"]:
        assert spec.get("speculative_model"), f"{kind} needs speculative_model"
    if schedule is not None:
        assert spec.get("max_concurrency") is None, "max_concurrency and draft_len_schedule are mutually exclusive"
        assert all(b >= rules["draft_len_schedule_keys_min"] for b in schedule), schedule
        assert all(k >= rules["draft_len_schedule_values_min"] for k in schedule.values()), schedule
        if top is not None:
            assert schedule[min(schedule)] == top, "the smallest key must map to max_draft_len"
            assert all(k <= top for k in schedule.values()), "no draft length above max_draft_len"


def check_trtllm_options(options):
    """The options as TorchLlmArgs in release 1.3.0rc27 takes them (fields, types, validators from the
    extract); returns the decode CUDA-graph batch sizes the release captures for them (draft_len_schedule's
    keys merged in, padding forced on with a schedule)."""
    _check_fields(options, {k: {**v, "kind": v["kind"] if v["kind"] in TRT_KINDS else "nested"}
                            for k, v in TRT["top"].items()}, "LLM API")
    spec = options.get("speculative_config")
    if spec is not None:
        check_trtllm_speculative(spec)
    graphs = dict(options.get("cuda_graph_config") or {})
    extract = TRT["cuda_graph_config"]
    if "mode" not in graphs:  # TorchLlmArgs.infer_cuda_graph_config_mode
        graphs["mode"] = "encode" if any(graphs.get(k) not in (None, 0) for k in extract["encoder_keys"]) else "decode"
    _check_fields(graphs, extract["fields"], "cuda_graph_config")
    schedule = (spec or {}).get("draft_len_schedule")
    sizes = trtllm_graph_batch_sizes(graphs.get("batch_sizes"), graphs.get("max_batch_size", 0),
                                     True if schedule else graphs.get("enable_padding", False))
    if schedule:
        sizes = sorted(set(sizes) | {b for b in schedule if b <= sizes[-1]})
    return sizes


def trtllm_lookup(spec, batch):
    """get_draft_len_for_batch_size as the extract states it: the first key >= the batch, 0 above the last."""
    keys = sorted(spec["draft_len_schedule"])
    return next((spec["draft_len_schedule"][b] for b in keys if b >= batch), 0)


TRT_CASES = {
    # (model, chip, tp, alpha, context, max_batch, method, draft model)
    "qwen-eagle3": ("qwen3-235b-a22b", "H100", 8, 0.8, 2500, 128, "eagle3", "x/eagle3"),
    "r1-mtp-above-128": ("deepseek-r1", "H200", 8, 0.7, 2048, 512, None, None),  # K = 0 mid-table, batch 297
    "llama-draft-model": ("llama-3-70b", "H200", 4, 0.8, 4096, 256, "draft_model", "x/draft"),
    "llama-dflash": ("llama-3-70b", "H200", 4, 0.8, 4096, 64, "dflash", "x/dflash"),
    "r1-ngram": ("deepseek-r1", "H200", 8, 0.6, 2048, 64, "ngram", None),
    "never-drafts": ("deepseek-r1", "H200", 8, 0.05, 2048, 64, None, None),
}


@pytest.mark.parametrize("case", list(TRT_CASES))
def test_every_trtllm_config_fits_the_release_schema(case):
    model, chip, tp, alpha, seq, max_batch, method, path = TRT_CASES[case]
    sched = speclib.schedule(seq=seq, alpha=alpha, max_batch=max_batch,
                             deployment=speclib.Deployment(model, chip, tp=tp))
    text = render(sched, "trtllm", **({"method": method} if method else {}), **({"draft_model": path} if path else {}))
    options = yaml.safe_load(text)
    graphs = check_trtllm_options(options)
    # the release and the commit its validators were read at are named in the output
    assert TRT["release"] == engines.TRTLLM_RELEASE and TRT["commit"] == engines.TRTLLM_COMMIT
    assert f"TensorRT-LLM {TRT['release']}" in " ".join(text.split()) and TRT["commit"][:10] in text
    # the batch the table is priced to runs, on a captured graph (padded up to the next one)
    assert options["max_batch_size"] == sched.max_batch and graphs[-1] >= sched.max_batch
    table = sched.table(first_is_max=True, implicit_zero_tail=True)
    spec = options.get("speculative_config")
    if spec is None:  # a table that never drafts: every decoding type refuses max_draft_len 0
        assert case == "never-drafts" and set(table.k_per_batch) == {0} and "No speculative_config" in text
        return
    schedule = spec["draft_len_schedule"]
    assert list(schedule) == sorted(schedule) and set(schedule) <= set(graphs)  # ascending; a graph per key
    assert [trtllm_lookup(spec, b) for b in range(1, sched.max_batch + 1)] == [int(k) for k in table.k_per_batch]
    if case == "r1-mtp-above-128":
        assert 0 in schedule.values() and min(schedule.values()) == 0 < spec["max_draft_len"]
        # without the emitted cuda_graph_config the release's graphs stop at 128: batches above run eagerly
        assert sched.max_batch > trtllm_graph_batch_sizes(None, 0, True)[-1] == 128


def test_the_trtllm_schema_refuses_what_the_release_lacks():
    good = {"max_batch_size": 256, "cuda_graph_config": {"max_batch_size": 256, "enable_padding": True},
            "speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 4, "speculative_model": "x",
                                   "draft_len_schedule": {4: 4, 64: 2, 200: 0}}}
    assert check_trtllm_options(good)[-1] == 256
    spec = good["speculative_config"]
    for bad in ({**good, "max_num_seqs": 256},  # vLLM's name
                {**good, "cuda_graph_config": {"max_batch_size": 256, "batch_sizes": [1, 8, 64]}},
                {**good, "cuda_graph_config": {"max_batch_size": 256, "max_num_seqs": 8}},
                {**good, "speculative_config": {**spec, "decoding_type": "DraftTarget"}},  # the literal: Draft_Target
                {**good, "speculative_config": {**spec, "max_concurrency": 200}},
                {**good, "speculative_config": {**spec, "draft_len_schedule": {4: 3, 64: 2}}},  # smallest key != 4
                {**good, "speculative_config": {**spec, "draft_len_schedule": {4: 4, 64: 5}}},
                {**good, "speculative_config": {**spec, "draft_len_schedule": {0: 4, 64: 2}}},
                {**good, "speculative_config": {**spec, "max_draft_len": 0, "draft_len_schedule": {64: 0}}},
                {**good, "speculative_config": {**spec, "speculative_model": None}},
                {**good, "speculative_config": {**spec, "num_speculative_tokens": 4}}):  # vLLM's key
        with pytest.raises(AssertionError):
            check_trtllm_options(bad)


def test_the_trtllm_options_run_the_priced_batch_on_graphs(qwen_h100):
    options = yaml.safe_load(render(qwen_h100, "trtllm", method="eagle3", draft_model="x/eagle3"))
    check_trtllm_options(options)
    n = qwen_h100.max_batch
    # graphs to the priced batch, padded (by default TensorRT-LLM captures to 128 and runs other batches eagerly)
    assert options["max_batch_size"] == n and options["cuda_graph_config"] == {"max_batch_size": n,
                                                                               "enable_padding": True}


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
    trt_has = set(TRT["top"]) | set(TRT["cuda_graph_config"]["fields"]) | set(TRT["speculative_config"]["fields"])
    _, sglang = sglang_parser()
    sglang_has = {f for flag in sglang["flags"] for f in flag["flags"]}
    for name, has in (("vllm", vllm_has), ("trtllm", trt_has), ("sglang", sglang_has)):
        assert set(limits[name].fields) <= has, (name, set(limits[name].fields) - has)
    facts = sglang["facts"]
    assert limits["sglang"].release == sglang["release"]
    assert f"at most {facts['max_running_requests_with_speculation_when_unset']} requests" in limits["sglang"].running_batch
    assert all(a in limits["sglang"].methods for a in facts["adaptive_algorithms"])
    assert "--cuda-graph-max-bs " not in sglang_has and "--cuda-graph-max-bs-decode" in sglang_has
    assert "max_concurrency" in TRT["speculative_config"]["fields"] and "max_concurrency" in limits["trtllm"].draft_length
    assert limits["trtllm"].release.startswith(TRT["release"]) and TRT["commit"][:10] in limits["trtllm"].release
