"""The method a configuration names is one the model has, in the engine's own
spelling, with the drafter's checkpoint where the engine needs one.

Every model preset is walked through every engine's configuration writer.
Whether a model has MTP layers is read here from its shipped config.json by
plain dictionary lookups (not by speclib's parser); the engines' method names
and path keys are typed from their sources:

* vLLM, vllm/config/speculative.py (``SpeculativeMethod``; ``model`` is
  required with ``num_speculative_tokens`` unless the method is mtp or ngram);
* SGLang, docs/advanced_features/speculative_decoding.md (``EAGLE``,
  ``EAGLE3``, ``STANDALONE``, ``NGRAM``; ``DFLASH`` in the DFlash
  README's launch line) and ``--speculative-draft-model-path``;
* TensorRT-LLM, docs/source/features/speculative-decoding.md (decoding types
  ``MTP``, ``Eagle3``, ``NGram``, ``PARD``, ``DFlash``, ``SA``;
  ``speculative_model``) and, for a draft model, ``Draft_Target``: the
  ``decoding_type`` literal of the ``speculative_config`` union in
  tensorrt_llm/llmapi/llm_args.py as read for release 1.3.0rc27
  (tests/data/engines/trtllm-llm-args.json).
"""
from __future__ import annotations

import json
import shlex

import pytest
import yaml

import speclib
from speclib import presets
from speclib.tools import cli, engines
from speclib.tools.schedule import render, schedule

VLLM_METHODS = {"ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "custom_class", "eagle", "eagle3",
                "extract_hidden_states", "mtp", "dflash", "ngram_gpu", "dspark"}
SGLANG_ALGORITHMS = {"EAGLE", "EAGLE3", "STANDALONE", "NGRAM", "DFLASH"}
TRTLLM_TYPES = {"MTP", "Eagle3", "NGram", "Draft_Target", "PARD", "DFlash", "SA"}
#: The engine's names of the drafters that drafts with the target's own MTP layers.
MTP_NAMES = {"vllm": "mtp", "sglang": "EAGLE", "trtllm": "MTP"}
#: The drafters of their own each engine takes, by the engine's name, and whether it needs a checkpoint.
EXTERNAL = {
    "vllm": {"eagle3": True, "eagle": True, "draft_model": True, "dflash": True, "ngram": False},
    "sglang": {"EAGLE3": True, "EAGLE": True, "STANDALONE": True, "DFLASH": True},
    "trtllm": {"Eagle3": True, "Draft_Target": True, "DFlash": True, "NGram": False},
}
SPEC = {"eagle3": "eagle3", "eagle": "eagle", "draft_model": "draft_model", "dflash": "dflash", "ngram": "ngram",
        "EAGLE3": "eagle3", "EAGLE": "eagle", "STANDALONE": "draft_model", "DFLASH": "dflash",
        "Eagle3": "eagle3", "Draft_Target": "draft_model", "DFlash": "dflash", "NGram": "ngram"}
PATH = "org/drafter-checkpoint"


def has_mtp_layers(name) -> bool:
    """Whether the shipped config.json declares MTP layers, read by hand."""
    cfg = json.loads(presets.shipped_configs()[name].read_text(encoding="utf-8"))
    text = cfg.get("text_config") or {}
    counts = [c.get(key) for c in (cfg, text) for key in ("num_nextn_predict_layers", "mtp_num_hidden_layers")]
    return any(isinstance(n, int) and n > 0 for n in counts)


def preset_names():
    return sorted(presets.shipped_configs())


@pytest.fixture(scope="module")
def schedules():
    """A small schedule of every preset (memory check off: the configuration, not the fit, is tested)."""
    return {name: schedule(seq=1024, alpha=0.8, c_draft=0.1, max_batch=16, gamma_max=8,
                           deployment=speclib.Deployment(name, "B200", reserve=None)) for name in preset_names()}


def printed(text, engine):
    """(the method the configuration names, the drafter's checkpoint it gives or None), read back."""
    if engine == "vllm":
        config = json.loads(text)["speculative_config"]
        return config["method"], config.get("model")
    doc = yaml.safe_load(text)
    if engine == "trtllm":
        spec = doc["speculative_config"]
        return spec["decoding_type"], spec.get("speculative_model")
    words = shlex.split(doc["static"]["args"])
    flags = {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}
    return flags["--speculative-algorithm"], flags.get("--speculative-draft-model-path")


def test_the_mtp_presets_are_those_whose_config_declares_mtp_layers():
    declared = {name for name in preset_names() if has_mtp_layers(name)}
    assert {"deepseek-v3", "deepseek-v4-flash", "glm-4.7", "qwen3.6-35b-a3b"} <= declared
    assert not declared & {"llama-3-70b", "llama-3.1-8b", "mixtral-8x7b", "gpt-oss-120b"}
    assert declared == {name for name in preset_names() if presets.model(name).mtp_layers > 0}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("name", preset_names())
def test_every_method_printed_for_a_model_is_one_it_has(schedules, name, engine):
    sched = schedules[name]
    mtp = has_mtp_layers(name)
    known = {"vllm": VLLM_METHODS, "sglang": SGLANG_ALGORITHMS, "trtllm": TRTLLM_TYPES}[engine]
    # with no method named: the model's own MTP layers where it has them, else a one-line refusal
    if mtp:
        method, path = printed(render(sched, engine), engine)
        assert (method, path) == (MTP_NAMES[engine], None)
    else:
        with pytest.raises(ValueError, match=r"^method: .* has no MTP layers") as caught:
            render(sched, engine)
        assert "\n" not in str(caught.value)
    # every drafter of its own the engine takes, with its checkpoint where it needs one
    for own_name, needs_path in EXTERNAL[engine].items():
        text = render(sched, engine, method=SPEC[own_name], draft_model=PATH if needs_path else None)
        method, path = printed(text, engine)
        assert method in known and method == own_name and path == (PATH if needs_path else None)
    # MTP is printed for a model only if its config has MTP layers
    if not mtp:
        with pytest.raises(ValueError, match=r"^method: mtp drafts with the model's own MTP layers"):
            render(sched, engine, method="mtp")


@pytest.mark.parametrize("engine, needs", [("vllm", 'the speculative_config key "model"'),
                                          ("sglang", "--speculative-draft-model-path"),
                                          ("trtllm", "speculative_model")])
def test_a_missing_drafter_path_is_refused_in_one_line_naming_the_engines_key(schedules, engine, needs):
    with pytest.raises(ValueError) as caught:
        render(schedules["llama-3-70b"], engine, method="eagle3")
    message = str(caught.value)
    assert message.startswith("draft_model: method eagle3 needs the drafter's checkpoint") and needs in message
    assert "\n" not in message


@pytest.mark.parametrize("argv, option, words", [
    (["--model", "llama-3-70b", "--engine", "vllm"], "--method", "has no MTP layers"),
    (["--model", "llama-3-70b", "--engine", "sglang", "--method", "mtp"], "--method", "Llama-3-70B has none"),
    (["--model", "mixtral-8x7b", "--engine", "trtllm", "--method", "MTP"], "--method", "Mixtral-8x7B has none"),
    (["--model", "llama-3-70b", "--engine", "vllm", "--method", "eagle3"], "--draft-model", '"model"'),
    (["--model", "llama-3-70b", "--engine", "sglang", "--method", "EAGLE3"], "--draft-model",
     "--speculative-draft-model-path"),
    (["--model", "llama-3-70b", "--engine", "trtllm", "--method", "Eagle3"], "--draft-model", "speculative_model"),
    (["--model", "deepseek-v3", "--engine", "vllm", "--draft-model", "x/y"], "--draft-model", "own MTP layers"),
    (["--model", "llama-3-70b", "--engine", "trtllm", "--method", "eagle", "--draft-model", "x/y"], "--method",
     "TensorRT-LLM has no EAGLE"),
    (["--model", "llama-3-70b", "--engine", "vllm", "--method", "medusa"], "--method", "must be one of"),
    (["--model", "deepseek-v3", "--format", "table", "--method", "mtp"], "--method", "the table names no method"),
])
def test_the_command_refuses_in_one_line_with_exit_2(capsys, argv, option, words):
    code = cli.main(["schedule", "--alpha", "0.8", "--max-batch", "16", "--hardware", "b200", "--tp", "8", *argv])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert captured.err.startswith(f"speclib schedule: error: {option}") and words in captured.err


def test_a_drafter_preset_fixes_the_method():
    sched = schedule(seq=512, max_batch=16, deployment=speclib.Deployment(
        "qwen3.6-35b-a3b", "B200", drafter="qwen3.6-dflash", roofline="aggregate", reserve=None))
    with pytest.raises(ValueError, match=r"^draft_model: method dflash needs"):
        render(sched, "vllm")
    config = json.loads(render(sched, "vllm", draft_model="z-lab/Qwen3.6-35B-A3B-DFlash"))["speculative_config"]
    assert (config["method"], config["model"]) == ("dflash", "z-lab/Qwen3.6-35B-A3B-DFlash")
    with pytest.raises(ValueError, match=r"^method: the schedule was priced for a DFlash drafter"):
        render(sched, "vllm", method="mtp")


def test_engine_spellings_name_the_same_method(schedules):
    sched = schedules["llama-3-70b"]
    for spelling in ("eagle3", "EAGLE3", "Eagle3", "eagle-3"):
        assert json.loads(render(sched, "vllm", method=spelling, draft_model=PATH))["speculative_config"]["method"] == "eagle3"
    for spelling in ("draft_model", "STANDALONE", "DraftTarget", "Draft_Target"):
        assert printed(render(sched, "trtllm", method=spelling, draft_model=PATH), "trtllm")[0] == "Draft_Target"
    assert json.loads(render(schedules["deepseek-v3"], "vllm", method="deepseek_mtp"))["speculative_config"]["method"] == "mtp"


def test_sglang_pins_a_draft_length_per_batch_slot_as_its_router_reads_it():
    """The batch-size slots of SGLang's adaptive config, read back by the router's rule (a batch padded up
    to its CUDA-graph size, then the largest key at or below it), worked by hand."""
    ranges = [engines.Range(1, 3, 4), engines.Range(4, 9, 2), engines.Range(10, 20, 0)]
    config = engines.sglang_slots_config(ranges)
    assert config == {"1": {"candidate_steps": [4]}, "4": {"candidate_steps": [2]}, "10": {"candidate_steps": [0]}}
    assert engines.expand_sglang_slots(config, 20) == [4] * 3 + [2] * 6 + [0] * 11
    # with CUDA graphs at 1, 2, 4, 8, 16, 32: batch 3 runs as 4, 9 as 16
    padded = engines.expand_sglang_slots(config, 20, cuda_graph_bs=[1, 2, 4, 8, 16, 32])
    assert padded[:4] == [4, 4, 2, 2] and padded[8] == 0
    with pytest.raises(ValueError, match="one"):
        engines.expand_sglang_slots({"1": {"candidate_steps": [1, 3]}}, 4)
    with pytest.raises(ValueError, match="batch-size key"):
        engines.expand_sglang_slots({"candidate_steps": [1, 3, 7]}, 4)
    flags = engines.parse_sglang_args(engines.sglang_slots_args(ranges, "EAGLE3", "a b/c"))
    assert flags["adaptive"] and (flags["num_steps"], flags["draft_model"]) == (4, "a b/c")
