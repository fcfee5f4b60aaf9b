"""The roofline against measured decode (speclib.validation).

Independent routes: the predicted step is recomputed here from the preset's
published parameter counts (total_params, the KV geometry), the chip's
datasheet bandwidth and peak and the interconnect's measured all-reduce
latency, not through speclib.core; the workload algebra against direct
numeric sums; the loader against the raw JSON files.
"""
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from speclib import presets
from speclib.evidence import derivations
from speclib.evidence import validation
from speclib.presentation.figures import engine_step_time

LLAMA = presets.model("Llama-3.3-70B")
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "decode-benchmarks"


def hand_step_seconds(model, hw, batch, context, tp, weight_bytes, kv_bytes, peak):
    """Whole-model decode step from published totals: decoder weights at
    ``weight_bytes``, output head in bf16, KV for every sequence; GEMMs at
    ``peak``, the head at the bf16 peak, each its own max(compute, memory).
    The step's position attends over the cache and itself, ``context`` + 1
    tokens (T = 1: S + ceil(T/2))."""
    context = context + 1
    head_params = model.vocab_size * model.hidden_size
    decoder_params = model.total_params() - 2 * head_params  # minus input embedding and output head
    att = model.attention
    kv_per_token = 2 * att.n_kv_heads * att.head_dim * kv_bytes * model.n_layers
    bw = hw.memory_bandwidth
    gemm = max(decoder_params * weight_bytes / bw, 2 * decoder_params * batch / peak)
    head = max(head_params * 2.0 / bw, 2 * head_params * batch / hw.bf16_flops)
    kv_read = batch * context * kv_per_token / bw
    attn_flops = batch * context * model.n_layers * 4 * att.n_heads * att.head_dim / hw.bf16_flops
    return (gemm + head + max(kv_read, attn_flops)) / tp


@pytest.mark.parametrize("chip", ["B200", "H100", "MI300X"])
def test_predicted_tpot_small_batch_is_bytes_over_bandwidth(chip):
    hw = presets.hardware(chip)
    got = validation.predicted_tpot(LLAMA, hw, 1, 2048, tp=1, precision="fp8")
    expected = hand_step_seconds(LLAMA, hw, 1, 2048, 1, 1.0, 1.0, hw.fp8_flops)
    assert got == pytest.approx(expected, rel=1e-9)
    # and it is the memory term alone: the fp8 decoder (1 B each) plus the bf16
    # head (2 B each) weigh exactly total_params bytes, as the input embedding
    # the step does not read has as many parameters as the head; plus the KV
    bytes_read = LLAMA.total_params() + 2049 * 2 * 8 * 128 * 80
    assert got == pytest.approx(bytes_read / hw.memory_bandwidth, rel=1e-9)


def test_predicted_tpot_compute_bound_batch():
    hw = presets.hardware("B200")
    got = validation.predicted_tpot(LLAMA, hw, 4096, 0, tp=1, precision="fp8")
    expected = hand_step_seconds(LLAMA, hw, 4096, 0, 1, 1.0, 1.0, hw.fp8_flops)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got > validation.predicted_tpot(LLAMA, hw, 1, 0) * 5  # the FLOPs now dominate


#: NCCL's all-reduce of a small message on H200s (AIConfigurator's measured database, nccl-tests, NCCL
#: 2.29.2, 2 KiB): 6.31, 9.59 and 15.98 us at 2, 4 and 8 GPUs.
NCCL_H200_US = {2: 6.31, 4: 9.59, 8: 15.98}


def test_tensor_parallel_divides_and_adds_the_all_reduces_and_arrays_broadcast():
    # Llama's 8 KV heads split evenly over up to 8 GPUs, so every byte and FLOP divides by tp; the step then
    # waits on two all-reduces per layer of every sequence's activations (8,192 bf16 values): a latency
    # each, and a ring's 2 (tp - 1) / tp of the bytes over NVLink 4's 450 GB/s each way
    hw = presets.hardware("H200")
    batch = np.array([4.0, 64.0, 128.0])
    one = validation.predicted_tpot(LLAMA, hw, batch, 1536, tp=1)
    for tp in (2, 4, 8):
        allreduce = 2 * 80 * (NCCL_H200_US[tp] * 1e-6 + 2 * (tp - 1) / tp * batch * 8192 * 2 / 450e9)
        np.testing.assert_allclose(validation.predicted_tpot(LLAMA, hw, batch, 1536, tp=tp), one / tp + allreduce,
                                   rtol=1e-12)
    grid = validation.predicted_tpot(LLAMA, hw, batch[:, None], np.array([1024.0, 8192.0])[None, :], tp=[[1], [2], [8]])
    assert grid.shape == (3, 2)


def test_kv_and_weight_formats():
    hw = presets.hardware("B200")
    fp8 = validation.predicted_tpot(LLAMA, hw, 1, 0, precision="fp8")
    fp4 = validation.predicted_tpot(LLAMA, hw, 1, 0, precision="fp4")
    head = LLAMA.vocab_size * LLAMA.hidden_size
    decoder = LLAMA.total_params() - 2 * head
    one = 2 * 8 * 128 * 80  # the KV bytes of the one token the step attends to (its own, fp8)
    assert fp4 == pytest.approx((decoder * 4.5 / 8 + 2 * head + one) / hw.memory_bandwidth, rel=1e-9)  # NVFP4
    mi355 = presets.hardware("MI355X")
    mx = validation.predicted_tpot(LLAMA, mi355, 1, 0, precision="fp4")
    assert mx == pytest.approx((decoder * 4.25 / 8 + 2 * head + one) / mi355.memory_bandwidth, rel=1e-9)  # MXFP4
    kv8 = validation.predicted_tpot(LLAMA, hw, 32, 4096, kv_precision="fp8")
    kv16 = validation.predicted_tpot(LLAMA, hw, 32, 4096, kv_precision="bf16")
    assert kv16 - kv8 == pytest.approx(32 * 4097 * 2 * 8 * 128 * 80 * (2 - 1) / hw.memory_bandwidth, rel=1e-9)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(precision="int3"), "precision"),
        (dict(kv_precision="fp4"), "kv_precision"),
        (dict(tp=0), "tp"),
        (dict(tp=1.5), "tp"),
        (dict(batch=0), "batch"),
        (dict(context=-1), "context"),
    ],
)
def test_bad_input(kwargs, words):
    args = dict(model=LLAMA, hardware="B200", batch=8, context=1024)
    args.update(kwargs)
    with pytest.raises(ValueError, match=words):
        validation.predicted_tpot(**args)


# --- workload algebra --------------------------------------------------------------


@pytest.mark.parametrize("I, O", [(1024, 1024), (1024, 8192), (7, 1)])
def test_mean_decode_context_is_the_average_over_steps(I, O):
    assert validation.mean_decode_context(I, O) == pytest.approx(np.mean(I + np.arange(O)), rel=1e-15)


def test_littles_law_recovers_a_known_batch():
    # B requests decoding, one token per tau each; the benchmark reports input
    # plus output tokens per second per GPU.
    B, tau, tp, I, O = 48.0, 0.025, 2, 1024, 8192
    output_rate = B / tau
    per_gpu_total = output_rate * (I + O) / O / tp
    assert validation.littles_law_batch(per_gpu_total, tp, I, O, tau) == pytest.approx(B, rel=1e-12)


# --- the measured data ----------------------------------------------------------------


def test_loader_counts_records():
    records = validation.load_measurements()
    assert len(records) == 454
    by_workload = {w: sum(r.workload == w for r in records) for w in ("1k1k", "1k8k")}
    assert by_workload == {"1k1k": 227, "1k8k": 227}
    assert {r.chip for r in records} == {"B200", "H100", "H200", "MI300X", "MI325X", "MI355X"}
    assert {r.framework for r in records} == {"vLLM", "TRT"}
    assert {r.precision for r in records} == {"fp8", "fp4"}
    assert {r.tp for r in records} == {1, 2, 4, 8}


@pytest.mark.skipif(not SHARED.exists(), reason="the shared data folder is not next to this checkout")
def test_packaged_records_match_the_shared_files():
    raw = []
    for path in sorted(SHARED.glob("*/*/*.json")):
        raw.extend(json.loads(path.read_text()))
    records = validation.load_measurements()
    assert len(raw) == len(records)
    assert sorted(r["TPOT (ms)"] for r in raw) == sorted(r.tpot_ms for r in records)


def test_compare_skips_chips_without_a_preset_and_says_so():
    record = validation.load_measurements()[0]
    fake = dataclasses.replace(record, chip="NoSuchChip")
    comparison = validation.compare([record, fake])
    assert comparison.missing == ("NoSuchChip",)
    assert len(comparison) == 1
    assert "NoSuchChip" in repr(engine_step_time.ratio_table(comparison))


def test_compare_uses_concurrency_and_the_mean_context():
    records = validation.load_measurements()
    comparison = validation.compare(records)
    i = 7
    r = comparison.records[i]
    expected = validation.predicted_tpot(LLAMA, r.chip, r.concurrency, validation.mean_decode_context(r.input_len, r.output_len),
                                         r.tp, r.precision)
    assert comparison.predicted_s[i] == pytest.approx(expected, rel=1e-14)
    assert comparison.ratio[i] == pytest.approx(r.tpot_ms * 1e-3 / expected, rel=1e-14)


def test_roofline_bounds_every_run_at_its_decode_batch():
    # A run faster than the roofline would mean a wrong constant; at the batch
    # the run's own throughput implies, none is (with the fp8 KV cache the
    # benchmark configures).
    comparison = validation.compare()
    assert len(comparison.below_roofline(little=True)) == 0


def test_tables_render_both_ways():
    comparison = validation.compare()
    table = engine_step_time.ratio_table(comparison)
    text, page = repr(table), table._repr_html_()
    assert "MI355X" in text and "<table" in page
    assert repr(engine_step_time.ratio_table(comparison)) == text  # deterministic
    below = engine_step_time.below_roofline_table(comparison)
    assert len(below.rows) == len(comparison.below_roofline())
    assert "<table" in below._repr_html_()


def test_derivation_steps():
    d = derivations.decode_workload()
    assert float(d["context_1k1k"].rhs) == validation.mean_decode_context(1024, 1024)
    assert float(d["kv"].rhs) == 2 * 8 * 128 * 1 * 80
    assert d["weights"].value == pytest.approx(LLAMA.total_params() / 1e9, rel=1e-5)


def test_kv_consistency_counts():
    found = validation.kv_consistency()
    for kv, row in zip(("fp8", "bf16"), found):
        c = validation.compare(kv_precision=kv)
        assert row["kv_precision"] == kv and row["below"] == len(c.below_roofline()) and row["runs"] == len(c)
    # a wider KV cache can only raise the prediction, so never fewer runs below it
    assert found[1]["below"] >= found[0]["below"]
    table = engine_step_time.consistency_table()
    assert [r[2] for r in table.rows] == [str(row["below"]) for row in found] and "<table" in table._repr_html_()


def test_ratio_groups_cover_every_run_once():
    comparison = validation.compare()
    groups = comparison.ratio_groups()
    assert sum(len(r) for _, by_tp, _ in groups for r in by_tp.values()) == len(comparison)
    assert sum(below for *_, below in groups) == len(comparison.below_roofline())
    assert len({key for key, *_ in groups}) == len(groups)


def test_the_chapter_figures_draw_the_measured_runs_against_the_roofline():
    comparison = validation.compare()
    d = engine_step_time.measured_tpot.data()
    drawn = sum(len(d[k]) for k in d if k.endswith("_ms"))
    runs = len(comparison.select(workload="1k1k", precision="fp8"))
    assert drawn == runs  # every measured 1k1k fp8 run is a marker, once
    fig = engine_step_time.measured_tpot()
    assert len([ax for ax in fig.axes if ax.get_visible()]) == len(d["chips"])
    excess = engine_step_time.roofline_excess.data()
    for chip, fw, _ in excess["series"]:
        idx = comparison.select(workload="1k1k", precision="fp8", concurrency=4, chip=chip, framework=fw)
        expected = sorted(zip(comparison.column("tp")[idx], (comparison.measured_s[idx] - comparison.predicted_s[idx]) * 1e3))
        np.testing.assert_allclose(excess[f"{chip}_{fw}_excess"], [e for _, e in expected])


def test_chips_with_runs_are_the_measured_chips_in_order():
    records = validation.load_measurements()
    chips = validation.chips_with_runs("1k1k", "fp8")
    assert chips == [c for c in validation.CHIPS if c in {r.chip for r in records
                                                           if r.workload == "1k1k" and r.precision == "fp8"}]
    assert chips and validation.chips_with_runs("1k1k", "no-such-precision") == []
