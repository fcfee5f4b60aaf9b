"""The precision served: --weights, --kv-cache, --activations and
--drafter-weights on every pricing command, defaulting to the checkpoint's,
said in every header; the FP8 presets; and the activations' precision,
which sets the experts' ridge (W4A8 runs at the fp8 rate).

Expected numbers come from outside the code under test: the memory a batch
needs is counted here by hand from each config's shapes and the bytes of
each format; the W4A8 knee and Figure 3's last speculating batch are the
referee's values (issue 49, re-derived in sympy and numpy without speclib),
and their ratio is the datasheet's fp8 over fp4 peak."""
import dataclasses
import json
import math

import pytest

from speclib import Deployment, presets
from speclib.core import moe
from speclib.core import speculation as spec
from speclib.formulas import numpy_functions as nf
from speclib.presets.architecture import gemm_precision
from speclib.tools import cli

GB = 1e9
RESERVE = 0.1  # vLLM's default, the CLI's --reserve


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- memory by hand ------------------------------------------------------------------------
def _qwen3_235b_weights(bytes_per_weight):
    """Qwen3-235B-A22B's resident weight bytes, from its config.json's shapes:
    94 layers of GQA attention (64 query heads, 4 KV heads of 128) and 128
    experts of width 1536 over hidden 4096, untied embeddings of 151,936; the
    projections and experts at ``bytes_per_weight``, embeddings, output head
    and routers in bf16 (as the FP8 checkpoint keeps them)."""
    h, layers, heads, kv, d, experts, width, vocab = 4096, 94, 64, 4, 128, 128, 1536, 151_936
    attention = h * heads * d + 2 * h * kv * d + heads * d * h
    ffn = experts * 3 * h * width
    bf16 = layers * h * experts + 2 * vocab * h
    return layers * (attention + ffn) * bytes_per_weight + bf16 * 2


def _held_by_hand(weights_per_gpu, hbm, cache_per_token_per_gpu, context):
    return max(0, math.floor(((1 - RESERVE) * hbm - weights_per_gpu) / (context * cache_per_token_per_gpu)))


def test_qwen3_235b_on_eight_h100s_holds_three_times_the_batch_in_fp8():
    # 4 KV heads over 8 GPUs: each GPU keeps one (the engines replicate it), bf16 cache
    cache = 94 * 2 * 1 * 128 * 2
    bf16 = _held_by_hand(_qwen3_235b_weights(2) / 8, 80 * GB, cache, 2560)
    fp8 = _held_by_hand(_qwen3_235b_weights(1) / 8, 80 * GB, cache, 2560)
    assert (bf16, fp8) == (107, 344)  # the numbers, by hand
    assert Deployment("qwen3-235b", "H100", tp=8).max_batch(2560) == bf16
    assert Deployment("qwen3-235b", "H100", tp=8, weights="fp8").max_batch(2560) == fp8
    assert Deployment("qwen3-235b-a22b-fp8", "H100", tp=8).max_batch(2560) == fp8  # the preset, by default


def test_llama_3_70b_on_one_h200_at_8k_holds_a_batch_only_in_fp8():
    h, layers, heads, kv, d, ffn, vocab = 8192, 80, 64, 8, 128, 28_672, 128_256
    params = layers * (h * heads * d + 2 * h * kv * d + heads * d * h + 3 * h * ffn)
    cache = layers * 2 * kv * d * 2
    bf16 = _held_by_hand(params * 2 + 2 * vocab * h * 2, 141 * GB, cache, 8192)
    fp8 = _held_by_hand(params * 1 + 2 * vocab * h * 2, 141 * GB, cache, 8192)
    assert bf16 == 0 and fp8 > 0
    assert Deployment("llama-3-70b", "H200").max_batch(8192) == bf16
    assert Deployment("llama-3-70b", "H200", weights="fp8").max_batch(8192) == fp8
    assert Deployment("llama-3.1-70b-fp8", "H200").max_batch(8192) == fp8
    # an fp8 cache halves the bytes per token: twice the sequences, give or take the rounding
    assert Deployment("llama-3.1-70b-fp8", "H200", kv_cache="fp8").max_batch(8192) in (2 * fp8, 2 * fp8 + 1)


def test_the_schedule_stops_where_the_precision_served_says(capsys):
    base = ("schedule", "--model", "qwen3-235b", "--hardware", "h100", "--tp", "8", "--seq", "2560",
            "--alpha", "0.7", "--max-batch", "400")
    for extra, stop, words in (((), 107, "weights bf16, KV cache bf16 (the checkpoint's)"),
                               (("--weights", "FP8"), 344, "weights fp8, KV cache bf16 (weights as asked")):
        code, out, err = run(capsys, *base, *extra)
        assert code == 0
        assert f"the schedule stops at {stop}" in err
        assert f"precision: {words}" in out  # the header says what was priced


def test_drafter_weights_by_hand():
    eagle = presets.drafter("Llama-3.3-70B-EAGLE3")  # 1,402,994,688 parameters, bf16
    assert eagle.resident_bytes == pytest.approx(1_402_994_688 * 2)
    assert eagle.quantised("fp8").resident_bytes == pytest.approx(1_402_994_688 * 1)
    served = Deployment("llama-3-70b", "H200", weights="fp8", drafter=eagle, drafter_weights="fp8")
    assert served.memory(8192).drafter_weights == pytest.approx(1_402_994_688)
    assert "drafter fp8" in served.precision_words()
    with pytest.raises(ValueError, match="drafter_weights"):
        Deployment("llama-3-70b", "H200", drafter_weights="fp8")


# --- the checkpoint's own precision --------------------------------------------------------
@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1", "qwen3-235b-a22b-fp8", "llama-3.1-70b-fp8",
                                  "llama-3.1-8b-fp8"])
def test_fp8_checkpoints_are_fp8_by_default(name):
    m = presets.model(name)
    assert (m.proj_precision, m.ffn.precision, m.proj_weight_bytes, m.ffn.weight_bytes) == ("fp8", "fp8", 1.0, 1.0)
    assert m.attention.kv_bytes == 2.0 and m.activations is None  # W8A8, bf16 cache
    assert "fp8" in m.source.lower()  # the source says so


def test_fp8_presets_share_their_bf16_twin_architecture():
    for fp8, bf16 in (("qwen3-235b-a22b-fp8", "qwen3-235b"), ("llama-3.1-70b-fp8", "llama-3-70b"),
                      ("llama-3.1-8b-fp8", "llama-3.1-8b")):
        a, b = presets.model(fp8), presets.model(bf16)
        assert a.total_params() == b.total_params()
        same = dataclasses.replace(a.quantised("bf16"), name=b.name, source=b.source, aliases=b.aliases)
        assert same == b.quantised("bf16")  # only the checkpoint's formats differ


def _llama_config(quant):
    return {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16", "quantization_config": quant}


def _group(activations=True):
    f8 = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}
    return {"group_0": {"weights": f8, "input_activations": f8 if activations else None, "targets": ["Linear"]}}


def test_compressed_tensors_fp8_configs_are_read():
    w8a8 = presets.from_hf_config(_llama_config({"quant_method": "compressed-tensors", "config_groups": _group(),
                                                 "ignore": ["lm_head"], "kv_cache_scheme": None}))
    assert (w8a8.proj_precision, w8a8.proj_weight_bytes, w8a8.activations, w8a8.attention.kv_bytes) == (
        "fp8", 1.0, None, 2.0)
    w8a16 = presets.from_hf_config(_llama_config({"quant_method": "compressed-tensors",
                                                  "config_groups": _group(activations=False)}))
    assert w8a16.proj_weight_bytes == 1.0 and w8a16.proj_gemm_precision == "bf16"  # weight-only: bf16 GEMMs
    kv8 = presets.from_hf_config(_llama_config({"quant_method": "compressed-tensors", "config_groups": _group(),
                                                "kv_cache_scheme": {"num_bits": 8, "type": "float"}}))
    assert kv8.attention.kv_bytes == 1.0


# --- every command takes them and says them ------------------------------------------------
PRICING = ("gamma", "sweep", "schedule", "profile", "frontier", "fit")


def test_every_pricing_command_takes_the_precision_options():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in PRICING:
        flags = {f for action in sub.choices[name]._actions for f in action.option_strings}
        assert {"--weights", "--kv-cache", "--activations"} <= flags, name
        assert ("--drafter-weights" in flags) == (name != "fit"), name


def test_every_header_says_the_precision(capsys):
    point = ("--model", "deepseek-r1", "--hardware", "h200", "--tp", "8", "--alpha", "0.7")
    words = "weights fp8, KV cache bf16 (the checkpoint's)"
    code, out, _ = run(capsys, "gamma", *point, "--batch", "16", "--seq", "4096")
    assert code == 0 and f"precision: {words}" in out
    code, out, _ = run(capsys, "gamma", *point, "--batch", "16", "--seq", "4096", "--json")
    assert code == 0 and json.loads(out)["precision"] == words
    code, out, _ = run(capsys, "schedule", *point, "--max-batch", "64", "--seq", "4096")
    assert code == 0 and f"precision: {words}" in " ".join(out.split())  # the table's header wraps
    code, _, err = run(capsys, "schedule", *point, "--max-batch", "64", "--seq", "4096", "--engine", "vllm")
    assert code == 0 and f"precision: {words}" in err  # JSON has no comments: the header is on stderr
    code, out, _ = run(capsys, "frontier", *point, "--concurrency", "1,8", "--weights", "fp8", "--kv-cache", "fp8")
    assert code == 0 and ("precision: weights fp8, KV cache fp8, drafter fp8 (weights, KV cache as asked, the rest "
                          "the checkpoint's)") in out.splitlines()[0]  # its own MTP layers draft
    code, out, _ = run(capsys, "sweep", *point, "--batch", "16", "--seq", "4096", "--kv-cache", "fp8")
    header, row = out.splitlines()[:2]
    assert code == 0 and row.split(",")[header.split(",").index("kv_cache")] == "fp8"


@pytest.mark.parametrize("argv, option", [
    (("--weights", "fp16"), "--weights"),
    (("--kv-cache", "fp4"), "--kv-cache"),
    (("--activations", "int8"), "--activations"),
    (("--drafter-weights", "fp8"), "--drafter-weights"),  # no --drafter to give it to
])
def test_bad_precision_is_one_line_naming_the_option(capsys, argv, option):
    code, out, err = run(capsys, "gamma", "--batch", "8", "--seq", "4096", "--alpha", "0.7", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and option in err


# --- activations: W4A4 against W4A8 ----------------------------------------------------------
def test_w4a8_experts_run_at_the_fp8_rate():
    b200 = presets.hardware("B200")
    assert gemm_precision("fp4", "fp8") == "fp8" and gemm_precision("fp4") == "fp4"
    for chip in (b200, presets.hardware("H200"), presets.hardware("MI355X")):
        for w in presets.PRECISIONS:
            for a in presets.PRECISIONS:
                # the printed Min of the two ridges is the ridge of the wider format
                assert chip.gemm_ridge(w, a) == chip.ridge(gemm_precision(w, a))
                assert float(nf.gemm_ridge(chip.ridge(w), chip.ridge(a))) == chip.gemm_ridge(w, a)


def test_w4a8_moves_the_far_knee_and_figure_3s_edge_but_not_the_gutter():
    flash = presets.model("deepseek-v4-flash")
    b200 = presets.hardware("B200")
    w4a4 = moe.knees(flash, b200)["moe_ridge"]
    w4a8 = moe.knees(flash.quantised(activations="fp8"), b200)["moe_ridge"]
    assert round(w4a4) == 10_945 and round(w4a8) == 5_473  # the paper's and the referee's printed values
    assert w4a8 / w4a4 == pytest.approx(4.5 / 9.0, rel=1e-12)  # B200 datasheet: dense fp8 over fp4 peak
    regions = {a: spec.gamma_regions(0.75, 4096, 0.10, deployment=Deployment(flash, b200, attention="paper",
                                                                              activations=a))
               for a in (None, "fp8")}
    assert regions[None]["last_speculating"] == 6127 and regions["fp8"]["last_speculating"] == 3650
    assert regions[None]["gutters"] == regions["fp8"]["gutters"] == [(4, 13)]


def test_w4a8_is_w4a4_on_a_chip_without_fp4():
    # Hopper multiplies fp4 weights in fp8 anyway: the activations change nothing there
    flash, h200 = presets.model("deepseek-v4-flash"), presets.hardware("H200")
    assert moe.knees(flash, h200) == moe.knees(flash.quantised(activations="fp8"), h200)


def test_activations_in_the_header(capsys):
    code, out, _ = run(capsys, "gamma", "--batch", "64", "--seq", "4096", "--alpha", "0.75", "--activations", "fp8")
    assert code == 0
    assert ("precision: weights fp8 (experts fp4), activations fp8 (experts at the fp8 rate), KV cache fp8 "
            "(activations as asked, the rest the checkpoint's)") in out
