"""The layer benchmark without a GPU (issue 37): its grid, its plan within a
time budget, its run loop with a fake timer and a fake clock, the file it
writes; the roofline it records against hand byte and FLOP counts; and the
analysis on a file whose times are known (a known multiple of the roofline
plus a known constant), recovering them. (The book's chapter on measured
kernels reads NVIDIA's tables instead: tests/test_measured_kernels.py.)

Expected numbers are datasheet arithmetic (H100 SXM: 3.35 TB/s, 989.4 dense
bf16 TFLOP/s, 1,978.9 fp8), the models' published shapes, the calibration
file read directly, or the fake timer's own constants: never the code under
test's output.
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from speclib.evidence import silicon


ROOT = Path(__file__).resolve().parents[1]
M_H100, BF16_H100, FP8_H100 = 3.35e12, 989.4e12, 1978.9e12


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_layers", ROOT / "benchmarks" / "bench_layers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_layers"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
H100 = silicon.hardware_for_device("NVIDIA H100 80GB HBM3")


# --- the script imports no torch ----------------------------------------------------------------


def test_the_planner_the_writer_and_the_analysis_import_no_torch():
    import subprocess

    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('b', {str(ROOT / 'benchmarks' / 'bench_layers.py')!r})\n"
            "m = importlib.util.module_from_spec(spec); sys.modules['b'] = m; spec.loader.exec_module(m)\n"
            "import speclib.evidence.silicon\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_without_a_gpu_the_script_prints_its_plan(capsys):
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert "972 points" in out and "H100-SXM:" in out and "H200:" in out and "nothing measured" in out


# --- the grid and the plan ---------------------------------------------------------------------


def test_the_grid_is_the_issues():
    points = bench.grid()
    # 3 MoE and 2 dense shapes in bf16 and fp8, 2 attention layouts at 4 contexts; 9 batches x 6 widths each
    assert len(points) == (3 * 2 + 2 * 2 + 2 * 4) * 9 * 6 == 972
    assert len(bench.grid(fp8=False)) == (3 + 2 + 2 * 4) * 9 * 6
    assert {p.B for p in points} == {1, 2, 4, 8, 16, 32, 64, 128, 256}
    assert {p.T for p in points} == {1, 2, 3, 4, 6, 8}
    assert {p.S for p in points if p.kind == "attention"} == {1024, 4096, 16384, 32768}
    assert {p.dtype for p in points if p.kind == "attention"} == {"bf16"}
    assert len(set(points)) == len(points)


def _toy(n_tiers=3, groups=2, per_group=4):
    return [bench.Point("dense", f"shape{g}", B, 1, None, "bf16", t)
            for t in range(n_tiers) for g in range(groups) for B in range(1, per_group + 1)]


def test_the_plan_takes_tiers_in_order_until_the_budget_is_spent():
    points = _toy()[::-1]  # given in the wrong order: the plan sorts by tier
    p = bench.plan(points, lambda q: 1.0, 10.0)
    assert len(p.points) == 10 and p.estimated_s == 10.0
    assert [q.tier for q in p.points] == [0] * 8 + [1] * 2
    assert len(p.trimmed) == len(points) - 10 and {why for _, why in p.trimmed} == {"time"}
    # a pure function: the same answer again, its input untouched
    assert bench.plan(points, lambda q: 1.0, 10.0) == p and points == _toy()[::-1]


def test_a_point_too_dear_is_trimmed_and_cheaper_ones_still_taken():
    points = _toy(n_tiers=1, groups=1, per_group=4)
    p = bench.plan(points, lambda q: 5.0 if q.B == 2 else 1.0, 4.0)
    assert [q.B for q in p.points] == [1, 3, 4] and [(q.B, why) for q, why in p.trimmed] == [(2, "time")]


def test_setup_is_charged_once_per_group_and_tier_and_groups_run_together():
    points = _toy(n_tiers=2, groups=3, per_group=2)
    # estimate 0, setup 1: a budget of 3 buys tier 0's three groups and nothing of tier 1
    p = bench.plan(points, lambda q: 0.0, 3.0, setup=lambda q: 1.0)
    assert {q.tier for q in p.points} == {0} and len(p.points) == 6 and p.estimated_s == 3.0
    shuffled = [points[i] for i in (0, 2, 4, 1, 3, 5)]  # groups interleaved
    order = bench.plan(shuffled, lambda q: 0.0, 3.0, setup=lambda q: 1.0).points
    assert [q.shape for q in order] == ["shape0", "shape0", "shape1", "shape1", "shape2", "shape2"]


def test_a_point_that_does_not_fit_in_memory_is_trimmed_with_its_size():
    points = _toy(n_tiers=1, groups=1, per_group=3)
    p = bench.plan(points, lambda q: 1.0, 100.0, memory=lambda q: q.B * 40e9, capacity=100e9)
    assert [q.B for q in p.points] == [1, 2]
    assert p.trimmed == ((points[2], "memory: needs 120.0 GB of 100.0 GB"),)
    assert p.trimmed_records() == [{"kind": "dense", "shape": "shape0", "B": 3, "T": 1, "dtype": "bf16",
                                    "reason": "memory: needs 120.0 GB of 100.0 GB"}]


def test_the_real_plan_fits_its_budget_and_trims_the_last_tiers_first():
    full = bench.grid()
    roomy = bench.plan_for(full, H100, 1e6)
    assert len(roomy.points) == len(full) and roomy.trimmed == ()
    tight = bench.plan_for(full, H100, 60.0)
    assert 0 < len(tight.points) < len(full) and tight.estimated_s <= 60.0
    taken = {q.tier for q in tight.points}
    assert min(q.tier for q, _ in tight.trimmed) >= min(taken)
    assert all(q.tier == 0 for q in tight.points[: len(tight.points) // 2])


def test_a_points_estimate_covers_its_timed_repeats_at_the_roofline():
    # Llama-3-70B's MLP at B x T = 2048 is compute-bound: 2 x 2048 x 3 x 8192 x 28672 FLOPs at the bf16 peak
    p = bench.Point("dense", "Llama-3-70B", 256, 8, None, "bf16", 0)
    roofline = 2 * 2048 * 3 * 8192 * 28672 / BF16_H100
    assert bench.estimate_seconds(p, H100) >= bench.REPEATS * roofline * bench.SLACK["dense"]


def test_the_gpu_memory_a_point_needs_counts_every_expert():
    p = bench.Point("moe", "DeepSeek-V3", 1, 1, None, "bf16", 0)
    assert bench.group_bytes(p) == 256 * 3 * 7168 * 2048 * 2  # 22.5 GB: all the experts of one layer
    a = bench.Point("attention", "Llama-3-70B", 256, 1, 32768, "bf16", 0)
    assert bench.group_bytes(a) == 256 * 32768 * 2 * 8 * 128 * 2  # the GQA cache: 34 GB


# --- routing -------------------------------------------------------------------------------------


def test_routing_picks_k_distinct_experts_per_token_reproducibly():
    r = bench.draw_routing(500, 8, 256, seed=3)
    assert r.shape == (500, 8) and r.min() >= 0 and r.max() < 256
    assert all(len(set(row)) == 8 for row in r)
    assert np.array_equal(r, bench.draw_routing(500, 8, 256, seed=3))
    assert bench.expert_counts(r, 256).sum() == 500 * 8


def test_uniform_routing_touches_the_coupon_collectors_count_on_average():
    # E = 8, k = 2, 3 tokens: 8 (1 - (6/8)^3) = 4.625 distinct experts expected
    touched = [(bench.expert_counts(bench.draw_routing(3, 2, 8, seed=s), 8) > 0).sum() for s in range(4000)]
    assert np.mean(touched) == pytest.approx(4.625, abs=0.03)


# --- the roofline each point records, by hand ----------------------------------------------------


@pytest.mark.parametrize("kind, shape, B, T, S, dtype, expected", [
    # Llama-3.1-8B's MLP at B = 1: its 3 x 4096 x 14336 bf16 weights read once
    ("dense", "Llama-3.1-8B", 1, 1, None, "bf16", 3 * 4096 * 14336 * 2 / M_H100),
    # the same in fp8: one byte per weight
    ("dense", "Llama-3.1-8B", 1, 1, None, "fp8", 3 * 4096 * 14336 / M_H100),
    # Llama-3.3-70B at B x T = 2048: compute-bound, 2 FLOPs per weight and position
    ("dense", "Llama-3-70B", 256, 8, None, "bf16", 2 * 2048 * 3 * 8192 * 28672 / BF16_H100),
    ("dense", "Llama-3-70B", 256, 8, None, "fp8", 2 * 2048 * 3 * 8192 * 28672 / FP8_H100),
    # DeepSeek-V3 at one position: its 8 routed experts (no shared one), 3 x 7168 x 2048 weights each
    ("moe", "DeepSeek-V3", 1, 1, None, "bf16", 8 * 3 * 7168 * 2048 * 2 / M_H100),
    # two positions: 256 (1 - (248/256)^2) = 15.75 experts expected
    ("moe", "DeepSeek-V3", 1, 2, None, "bf16", 15.75 * 3 * 7168 * 2048 * 2 / M_H100),
    ("moe", "Qwen3-30B-A3B", 1, 1, None, "fp8", 8 * 3 * 2048 * 768 / M_H100),
    ("moe", "gpt-oss-120b", 1, 1, None, "bf16", 4 * 3 * 2880 * 2880 * 2 / M_H100),
    # MLA at T = 1 over 4,096 tokens: the 576-wide bf16 latent per token and 128 heads' 576-wide query
    ("attention", "DeepSeek-V3", 1, 1, 4096, "bf16", (4096 * 576 * 2 + 128 * 576 * 2) / M_H100),
    # ... at T = 8: compute-bound, 2 x 128 x (576 + 512) FLOPs per query-token pair
    ("attention", "DeepSeek-V3", 1, 8, 4096, "bf16", 8 * 4096 * 2 * 128 * (576 + 512) / BF16_H100),
    # GQA: 8 KV heads of 128, K and V, and 64 query heads of 128
    ("attention", "Llama-3-70B", 2, 4, 1024, "bf16", 2 * (1024 * 2 * 8 * 128 * 2 + 4 * 64 * 128 * 2) / M_H100),
])
def test_the_recorded_roofline_is_the_hand_count(kind, shape, B, T, S, dtype, expected):
    assert silicon.predicted_seconds(kind, shape, B, T, S, dtype, H100) == pytest.approx(expected, rel=1e-12)


def test_a_moe_roofline_of_a_dense_model_is_refused():
    with pytest.raises(ValueError, match="kind 'moe' needs a mixture-of-experts model"):
        silicon.predicted_seconds("moe", "Llama-3.1-8B", 1, 1, None, "bf16", H100)
    with pytest.raises(ValueError, match="^kind must be one of"):
        silicon.predicted_seconds("mlp", "Llama-3.1-8B", 1, 1, None, "bf16", H100)
    with pytest.raises(ValueError, match="^precision must be one of 'bf16', 'fp8'"):
        silicon.predicted_seconds("dense", "Llama-3.1-8B", 1, 1, None, "fp16", H100)


@pytest.mark.parametrize("name, slug, preset", [
    ("NVIDIA H100 80GB HBM3", "h100-80gb-hbm3", "H100-SXM"),
    ("NVIDIA H200", "h200", "H200"),
    ("NVIDIA H100 PCIe", "h100-pcie", None),
    ("NVIDIA H100 NVL", "h100-nvl", None),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb", None),
])
def test_a_device_name_gives_its_file_name_and_preset(name, slug, preset):
    assert silicon.device_slug(name) == slug
    assert bench.file_name(name) == f"{slug}-layers.json"
    hw = silicon.hardware_for_device(name)
    assert (hw.name if hw else None) == preset


# --- the run with a fake timer ---------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


A, C = 1.7, 20e-6  # the fake timer's seconds: A x roofline + C


def _fake_timer(factor=A, constant=C, clock=None, step=0.0):
    def timer(p):
        if clock is not None:
            clock.now += step
        roof = silicon.predicted_seconds(p.kind, p.shape, p.B, p.T, p.S, p.dtype, H100)
        extra = {"experts_touched": 8} if p.kind == "moe" else {}
        return {"seconds": factor * roof + constant, "repeats": 25, "method": "fake", "graph": True, **extra}
    return timer


def _fake_file(path, factor=A, constant=C, points=None):
    points = bench.grid() if points is None else points
    records, notes = bench.measure(points, _fake_timer(factor, constant), lambda p: 0.0, budget_s=math.inf,
                                   hardware=H100)
    meta = {"schema": 1, "gpu": "NVIDIA H100 80GB HBM3", "hardware": "H100-SXM", "torch": "2.11.0",
            "cuda": "12.8", "date": "2026-06-30", "clocks": None}
    doc = bench.document(meta, records, notes, [], budget_s=420.0, elapsed_s=300.0, estimated_s=280.0)
    bench.write_json(str(path), doc)
    return path


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return silicon.read_layers(_fake_file(tmp_path_factory.mktemp("silicon") / "h100-80gb-hbm3-layers.json"))


@pytest.fixture(scope="module")
def proportional(tmp_path_factory):
    """Every time exactly A x the roofline."""
    return silicon.read_layers(_fake_file(tmp_path_factory.mktemp("silicon") / "p-layers.json", constant=0.0))


def test_the_run_stops_cleanly_when_the_budget_is_spent():
    clock, saved = FakeClock(), []
    points = bench.grid()[:40]
    records, notes = bench.measure(points, _fake_timer(clock=clock, step=1.0), lambda p: 1.0, budget_s=10.0,
                                   clock=clock, start=clock.now, hardware=H100,
                                   checkpoint=lambda r, n: saved.append(len(r)))
    # each point takes 1 s and is expected to: it starts only with 1 s left, so 10 points are measured
    assert len(records) == 10 and saved == list(range(1, 11)) and {r["wall_s"] for r in records} == {1.0}
    assert notes == ["budget: stopped after 10 of 40 planned points (10.0 s of 10 s used)"]


def test_a_point_whose_timer_fails_is_noted_and_the_run_goes_on():
    def timer(p):
        if p.B == 2:
            raise RuntimeError("CUDA out of memory")
        return _fake_timer()(p)
    points = [bench.Point("dense", "Llama-3.1-8B", B, 1, None, "bf16", 0) for B in (1, 2, 4)]
    records, notes = bench.measure(points, timer, lambda p: 0.0, budget_s=10.0, hardware=H100)
    assert [r["B"] for r in records] == [1, 4]
    assert notes == ["failed: {'kind': 'dense', 'shape': 'Llama-3.1-8B', 'B': 2, 'T': 1, 'dtype': 'bf16'}: "
                     "RuntimeError: CUDA out of memory"]


def test_a_run_of_failures_ends_the_run():
    def timer(p):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    points = [bench.Point("dense", "Llama-3.1-8B", B, T, None, "bf16", 0) for B in (1, 2, 4, 8) for T in (1, 2, 3, 4)]
    records, notes = bench.measure(points, timer, lambda p: 0.0, budget_s=10.0)
    assert records == [] and len(notes) == bench.MAX_FAILURES_IN_A_ROW + 1
    assert notes[-1] == f"stopped: {bench.MAX_FAILURES_IN_A_ROW} points in a row failed (the device may be unusable)"


def test_a_method_that_keeps_losing_by_far_is_no_longer_tried():
    from types import SimpleNamespace

    timer = SimpleNamespace(losses={}, unavailable={}, notes=[])
    p = bench.Point("attention", "DeepSeek-V3", 1, 1, 1024, "bf16", 0)
    for i in range(bench.PRUNE_AFTER):
        # bmm within 1.3x of the best: kept; cudnn 2x slower, and once (i = 3) close: its count starts again
        bench.LayerTimer._prune(timer, p, {"sdpa-efficient": 1.0, "bmm": 1.25, "sdpa-cudnn": 1.2 if i == 3 else 2.0},
                                1.0)
    assert timer.unavailable == {}
    for _ in range(4):
        bench.LayerTimer._prune(timer, p, {"sdpa-efficient": 1.0, "bmm": 1.25, "sdpa-cudnn": 2.0}, 1.0)
    assert timer.unavailable == {("DeepSeek-V3", "bf16", "sdpa-cudnn"): "pruned"} and len(timer.notes) == 1


def test_fp8_rows_are_padded_to_sixteen():
    assert list(bench._padded(np.array([0, 1, 15, 16, 17, 2048]))) == [0, 16, 16, 16, 32, 2048]


def test_the_file_holds_every_point_with_its_roofline(measured, tmp_path):
    doc = json.loads(Path(measured.path).read_text())
    assert len(doc["points"]) == 972 and doc["budget_s"] == 420.0 and doc["gpu"] == "NVIDIA H100 80GB HBM3"
    assert set(doc["methods"]) >= {"grouped_mm", "loop", "bmm", "sdpa-flash"} and doc["notes"]
    first = doc["points"][0]
    assert first == {"kind": "moe", "shape": "DeepSeek-V3", "B": 1, "T": 1, "dtype": "bf16",
                     "seconds": pytest.approx(A * 8 * 3 * 7168 * 2048 * 2 / M_H100 + C), "repeats": 25,
                     "method": "fake", "graph": True, "experts_touched": 8,
                     "predicted_s": pytest.approx(8 * 3 * 7168 * 2048 * 2 / M_H100),
                     "wall_s": pytest.approx(0.0, abs=0.05)}
    assert len(measured) == 972 and measured.hardware.name == "H100-SXM"
    np.testing.assert_allclose(measured.roofline_s, measured.predicted_s, rtol=1e-12)
    np.testing.assert_allclose(measured.seconds, A * measured.predicted_s + C, rtol=1e-12)
    # no half-written file is left beside it
    assert not Path(measured.path + ".tmp").exists()


# --- the analysis recovers the fake timer's constants ------------------------------------------


def test_the_ratio_to_the_roofline_is_the_known_multiple(proportional):
    rows = silicon.ratio_summary(proportional)
    assert [(kind, dtype, n) for kind, dtype, n, *_ in rows] == [
        ("moe", "bf16", 162), ("moe", "fp8", 162), ("dense", "bf16", 108), ("dense", "fp8", 108),
        ("attention", "bf16", 432)]
    for *_, median, q25, q75, lo, hi in rows:
        assert [median, q25, q75, lo, hi] == pytest.approx([A] * 5, rel=1e-12)


def test_the_ratio_spreads_as_the_constant_says(measured):
    rows = {(kind, dtype): rest for kind, dtype, *rest in silicon.ratio_summary(measured)}
    n, median, q25, q75, lo, hi = rows[("dense", "bf16")]
    # A + C / roofline: largest at the fastest roofline (Llama-3.1-8B at B = 1, 105 us), smallest at the slowest
    fastest = 3 * 4096 * 14336 * 2 / M_H100
    slowest = 2 * 2048 * 3 * 8192 * 28672 / BF16_H100
    assert hi == pytest.approx(A + C / fastest) and lo == pytest.approx(A + C / slowest)
    assert lo < q25 <= median <= q75 <= hi  # every memory-bound Llama-3.1-8B point shares the fastest


def test_the_marginal_cost_of_a_position_is_the_multiple_of_the_rooflines(measured):
    for kind in ("moe", "dense"):
        rows = silicon.marginal_rows(measured, kind)
        assert len(rows) == len(measured.shapes(kind)) * 9 * 5  # five steps between the six widths
        measured_us, roofline_us = np.array([r[4] for r in rows]), np.array([r[5] for r in rows])
        # to a picosecond: a difference of two times of up to 30 ms keeps about 1e-16 of them
        np.testing.assert_allclose(measured_us, A * roofline_us, rtol=1e-9, atol=1e-6)
        assert (roofline_us > 1).any() and (roofline_us == 0).any()  # the dense band is flat, the tax is not


def test_the_expert_tax_and_the_free_band_by_hand(proportional):
    taxed = silicon.expert_tax(proportional, "moe", T=2)
    B, meas, roof = taxed["DeepSeek-V3"]
    assert B[0] == 1 and meas[0] == pytest.approx(15.75 / 8)  # 256 (1 - (248/256)^2) experts over 8
    np.testing.assert_allclose(meas, roof, rtol=1e-12)
    free = silicon.expert_tax(proportional, "dense", T=2)
    B, meas, _ = free["Llama-3.1-8B"]
    # Llama-3.1-8B's MLP is memory-bound up to B x T = R b / 2 = 295 positions: T = 2 is free up to B = 128;
    # at B = 256 the 512 positions are compute-bound, the 256 of T = 1 not: 512 / (P / M) = 1.73
    assert np.all(meas[B <= 128] == pytest.approx(1.0)) and meas[B == 256] == pytest.approx(512 / (BF16_H100 / M_H100))


def test_the_expert_tax_sees_a_constant_term_dilute_it(measured):
    _, meas, roof = silicon.expert_tax(measured, "moe", T=2)["DeepSeek-V3"]
    r1 = 8 * 3 * 7168 * 2048 * 2 / M_H100
    assert meas[0] == pytest.approx((A * r1 * 15.75 / 8 + C) / (A * r1 + C))
    assert np.all(meas <= roof + 1e-12)


def test_attention_turns_compute_bound_at_two_positions_for_mla_and_never_for_gqa(proportional):
    rows = silicon.attention_turns(proportional)
    assert len(rows) == 2 * 4 * 9
    ridge_mla = 576 * 2 * (BF16_H100 / M_H100) / (2 * 128 * (2 * 512 + 64))  # m_c R / f ~ 1.22
    ridge_gqa = 2 * 8 * 128 * 2 * (BF16_H100 / M_H100) / (4 * 64 * 128)  # ~ 36.9
    for shape, layout, S, B, turn, roof_turn, ridge in rows:
        if layout == "mla":
            assert (turn, roof_turn) == (2.0, 2.0) and ridge == pytest.approx(ridge_mla)
        else:
            assert layout == "gqa" and math.isnan(turn) and math.isnan(roof_turn) and ridge == pytest.approx(ridge_gqa)


def test_a_width_series_by_hand():
    T = np.array([1.0, 2.0, 4.0])
    s = silicon.WidthSeries("attention", "x", "bf16", 1.0, 1024.0, T, np.array([1.0, 1.05, 1.5]),
                            np.array([2.0, 2.0, 4.0]))
    assert list(s.relative()) == [1.0, 1.05, 1.5] and list(s.relative(roofline=True)) == [1.0, 1.0, 2.0]
    assert s.marginal() == pytest.approx([0.05, 0.225]) and list(s.marginal(roofline=True)) == [0.0, 1.0]
    assert s.turn(0.1) == 4.0 and s.turn(0.01) == 2.0 and s.turn(0.6) != s.turn(0.6)  # NaN: never grew 60 %


def test_the_chip_factor_is_the_calibrations_own(measured):
    data = json.loads((ROOT / "speclib" / "data" / "calibration" / "step_time.json").read_text())
    assert silicon.calibrated_factor(measured) == data["roofline_factor"]["H100"]


# --- bad files ------------------------------------------------------------------------------


def _point(**change):
    p = {"kind": "dense", "shape": "Llama-3.1-8B", "B": 1, "T": 1, "dtype": "bf16", "seconds": 1e-4,
         "repeats": 25, "method": "mm", "graph": True, "predicted_s": 1e-4}
    p.update(change)
    return {k: v for k, v in p.items() if v is not ...}


def _doc(**change):
    d = {"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "cuda": "12.8", "date": "2026-06-30",
         "budget_s": 420, "elapsed_s": 300, "points": [_point()]}
    d.update(change)
    return {k: v for k, v in d.items() if v is not ...}


@pytest.mark.parametrize("doc, message", [
    (_doc(points=...), r"points must be a non-empty list"),
    (_doc(points=[]), r"points must be a non-empty list"),
    (_doc(gpu=...), r": gpu must be a non-empty string"),
    (_doc(gpu="NVIDIA A100-SXM4-80GB"), r"gpu 'NVIDIA A100-SXM4-80GB' maps to no hardware preset"),
    (_doc(hardware="TPU"), r": hardware: unknown hardware 'TPU'"),
    (_doc(budget_s=-1), r": budget_s must be a number > 0; got -1"),
    (_doc(points=[_point(kind="mlp")]), r"points\[0\]: kind must be one of moe, dense, attention; got 'mlp'"),
    (_doc(points=[_point(), _point(seconds=0)]), r"points\[1\]: seconds must be a number > 0; got 0"),
    (_doc(points=[_point(seconds="fast")]), r"points\[0\]: seconds must be a number > 0; got 'fast'"),
    (_doc(points=[_point(B=1.5)]), r"points\[0\]: B must be an integer > 0; got 1.5"),
    (_doc(points=[_point(T=...)]), r"points\[0\]: T must be an integer > 0; got None"),
    (_doc(points=[_point(dtype="fp16")]), r"points\[0\]: dtype must be one of bf16, fp8; got 'fp16'"),
    (_doc(points=[_point(graph="yes")]), r"points\[0\]: graph must be true or false; got 'yes'"),
    (_doc(points=[_point(shape="GPT-5")]), r"points\[0\]: shape: unknown model 'GPT-5'"),
    (_doc(points=[_point(kind="moe")]), r"points\[0\]: shape: .*kind 'moe' needs a mixture-of-experts model"),
    (_doc(points=[_point(kind="attention")]), r"points\[0\]: S must be an integer > 0; got None"),
    (_doc(points=[_point(predicted_s=-2)]), r"points\[0\]: predicted_s must be a number > 0 or null; got -2"),
    (_doc(points=[3]), r"points\[0\]: a point must be an object"),
    (_doc(notes="none"), r": notes must be a list; got 'none'"),
    (_doc(dry_run=True), r": dry_run is true: a dry run times tiny shapes on a CPU"),
])
def test_a_bad_file_is_refused_naming_the_file_and_the_field(tmp_path, doc, message):
    path = tmp_path / "bad-layers.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"^{tmp_path}.*bad-layers.json.*{message}"):
        silicon.read_layers(path)


def test_a_good_minimal_file_reads(tmp_path):
    path = tmp_path / "ok-layers.json"
    path.write_text(json.dumps(_doc()))
    m = silicon.read_layers(path)
    assert len(m) == 1 and m.roofline_s[0] == pytest.approx(3 * 4096 * 14336 * 2 / M_H100)


@pytest.mark.parametrize("text, message", [("{", "not a JSON file"), ("[1]", "must hold a JSON object")])
def test_a_file_that_is_not_a_measurement_is_refused(tmp_path, text, message):
    path = tmp_path / "x-layers.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"x-layers.json: {message}"):
        silicon.read_layers(path)
    with pytest.raises(ValueError, match="cannot read the measurements"):
        silicon.read_layers(tmp_path / "missing.json")


def test_nothing_is_shipped_until_a_run_is():
    """speclib/data/measured/ holds only real runs' files (none yet is not an error)."""
    assert all(p.name.endswith("-layers.json") for p in silicon.shipped_files())
    assert len(silicon.shipped()) == len(silicon.shipped_files())
