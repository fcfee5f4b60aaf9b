"""Throughput per GPU against speed per user (speclib.core.frontier), the
price of a token, InferenceX's measured frontiers (speclib.calibration.frontiers)
and ``speclib frontier``: each against an independent route (the sympy
identities, the library's throughput and prefill priced one point at a time,
a brute-force search, synthetic frontiers whose crossing is known)."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
import sympy as sp

import speclib
from speclib import presets
from speclib.core import frontier as fr
from speclib.evidence import decode_runs as dr
from speclib.calibration import frontiers as fe
from speclib.formulas import workload as fw
from speclib.tools import cli

#: DeepSeek-V3's MTP on eight H200, the roofline step (no draws), and a workload of short requests.
DEP = speclib.Deployment("DeepSeek-V3", "H200", tp=8, drafter="deepseek-v3-mtp")
WORKLOAD = (1024.0, 512.0)
CONTEXT = 1024.0 + (512.0 - 1.0) / 2.0


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- the closed forms ------------------------------------------------------------------------------
def test_the_speculative_tpots_ratio_is_the_served_speedup():
    plain = fw.speculative_tpot_expr.subs({fw.C_g: fw.C_0, fw.N_c: 1})
    assert sp.simplify(plain / fw.speculative_tpot_expr - fw.served_speedup_expr) == 0


def test_a_dollar_an_hour_at_a_token_a_second_is_a_price_by_hand():
    # 3.6 a GPU-hour at 1,000 tokens a second: 3.6 buys 3.6 million tokens, so a million costs 1
    assert speclib.formulas.numpy_functions.cost_per_million_tokens(3.6, 1000.0) == pytest.approx(1.0)
    assert float(fw.cost_per_million_tokens_expr.subs({fw.P_hour: 2, fw.X_gpu: 100})) == pytest.approx(
        2 / (100 * 3600) * 1e6)


def test_throughput_per_gpu_times_gpus_and_tpot_is_the_running_batch():
    assert sp.simplify(fw.throughput_per_gpu_expr * fw.tau * fw.n_tp - fw.B_run) == 0
    assert sp.simplify(fw.user_speed_expr * fw.C_users * fw.tau - fw.B_run) == 0


# --- the frontier against the library priced point by point ------------------------------------
@pytest.fixture(scope="module")
def front():
    return fr.frontier(DEP, WORKLOAD, alpha=0.7, concurrencies=[1, 3, 16, 100, 700, 5000])


def _prefill(B):
    """Seconds of arriving prompts a plain step of B sequences carries, at the roofline on DEP's layout."""
    return float(DEP.parallel_step().prefill_share(np.float64(B), *WORKLOAD))


def test_each_point_is_the_librarys_throughput_and_prefill_one_at_a_time(front):
    p, s = front.plain, front.speculative
    for i, C in enumerate(p.concurrency):
        # plain: what memory holds decodes, a token per step plus the arriving prompts
        M0 = DEP.replace(drafter=None).max_batch(CONTEXT)
        B = min(C, M0)
        tau = float(speclib.tpot(B, CONTEXT, deployment=DEP.replace(drafter=None))) + _prefill(B)
        assert p.running[i] == B
        assert p.throughput_per_gpu[i] == pytest.approx(B / tau / 8, rel=1e-9)
        assert p.speed_per_user[i] == pytest.approx(B / C / tau, rel=1e-9)
        # speculation: brute force over draft lengths up to the drafter's longest (its preset's depth), each step's
        # committed tokens from speclib.throughput
        best = None
        for g in range(1, min(fr.DEFAULT_GAMMA_MAX, presets.drafter("deepseek-v3-mtp").depth) + 1):
            Bg = min(C, DEP.max_batch(CONTEXT, g))
            committed_rate = float(speclib.throughput(Bg, g, CONTEXT, acceptance=0.7, deployment=DEP))  # B N / C_g
            tau_g = Bg / committed_rate + _prefill(Bg)  # C_g / N + p
            x = Bg / tau_g / 8
            if best is None or x > best[0] * (1 + 1e-12):
                best = (x, g, Bg, tau_g)
        x, g, Bg, tau_g = best
        assert s.gamma[i] == g and s.running[i] == Bg
        assert s.throughput_per_gpu[i] == pytest.approx(x, rel=1e-9)
        assert s.speed_per_user[i] == pytest.approx(Bg / C / tau_g, rel=1e-9)


def test_speed_falls_and_throughput_never_does_as_users_are_added():
    f = fr.frontier(DEP, WORKLOAD, alpha=0.7, gamma=2, concurrencies=np.arange(1, 2000, 7))
    for arm in (f.plain, f.speculative):
        assert np.all(np.diff(arm.speed_per_user) < 0)
        assert np.all(np.diff(arm.throughput_per_gpu) >= -1e-9 * arm.throughput_per_gpu[1:])


def test_past_what_memory_holds_users_wait_and_throughput_stays():
    f = fr.frontier(DEP, WORKLOAD, alpha=0.7, gamma=3, concurrencies=[10, 4000, 8000, 16000])
    for arm, held in ((f.plain, DEP.replace(drafter=None).max_batch(CONTEXT)), (f.speculative,
                                                                               DEP.max_batch(CONTEXT, 3))):
        assert 10 < held < 4000
        assert list(arm.running) == [10, held, held, held] and list(arm.queueing) == [False, True, True, True]
        assert np.allclose(arm.throughput_per_gpu[1:], arm.throughput_per_gpu[1])
        # every user decodes a share held / C of the time: the speed halves as users double
        assert np.allclose(arm.speed_per_user[1:] * arm.concurrency[1:], arm.speed_per_user[1] * 4000)
    assert any("wait their turn" in note for note in f.notes)


def test_without_a_memory_check_nobody_waits():
    f = fr.frontier(DEP.replace(reserve=None), WORKLOAD, alpha=0.7, gamma=2, concurrencies=[16000])
    assert f.plain.running[0] == 16000 and f.speculative.running[0] == 16000


def test_a_fixed_draft_length_and_the_model_mtp_preset_are_used():
    plain_deployment = speclib.Deployment("DeepSeek-V3", "H200", tp=8)
    f = fr.frontier(plain_deployment, WORKLOAD, alpha=0.6, gamma=2, concurrencies=[4, 64])
    assert f.speculative_deployment.drafter.name == "DeepSeek-V3-MTP" and f.deployment.drafter is None
    assert set(f.speculative.gamma) == {2} and set(f.plain.gamma) == {0}


# --- intervals -----------------------------------------------------------------------------------------
def test_a_calibrated_step_brackets_each_point_and_the_roofline_has_no_interval():
    cal = speclib.Deployment("DeepSeek-V3", "H200", tp=8, step_time="calibrated")
    f = fr.frontier(cal, WORKLOAD, alpha=0.6, concurrencies=[1, 32, 256])
    for arm in (f.plain, f.speculative):
        assert np.all(arm.speed_lo <= arm.speed_per_user) and np.all(arm.speed_per_user <= arm.speed_hi)
        assert np.all(arm.throughput_lo <= arm.throughput_per_gpu)
        assert np.all(arm.throughput_per_gpu <= arm.throughput_hi)
    none = fr.frontier(DEP, WORKLOAD, alpha=0.6, concurrencies=[1])
    assert none.plain.speed_lo is None
    with pytest.raises(ValueError, match="interval=True"):
        fr.frontier(DEP, WORKLOAD, alpha=0.6, concurrencies=[1], interval=True)


# --- the crossing ------------------------------------------------------------------------------------
def test_crossover_of_frontiers_whose_crossing_is_known():
    s = np.geomspace(5, 200, 60)
    # plain: x = 10^4 / s; speculative: x = 200 * 100 / s * (s / 40)^0.5 -> equal where (s/40)^0.5 = 0.5,
    # i.e. s = 10: speculation wins above 10 tokens/s per user, plain below
    plain, spec = 1e4 / s, 2e4 / s * (s / 40.0) ** 0.5
    c = fr.crossover(s, plain, s, spec)
    assert c.crosses and c.above == "speculative" and c.speed == pytest.approx(10.0, rel=2e-3)
    swapped = fr.crossover(s, spec, s, plain)
    assert swapped.above == "plain" and swapped.speed == pytest.approx(10.0, rel=2e-3)


def test_no_crossing_and_an_excursion_won_back_is_no_crossing():
    s = np.geomspace(5, 200, 60)
    c = fr.crossover(s, 1e4 / s, s, 2e4 / s)
    assert not c.crosses and c.above == "speculative" and (c.lowest, c.highest) == pytest.approx((5, 200))
    wiggle = 2e4 / s * np.where((s > 50) & (s < 60), 0.1, 1.0)  # loses briefly, wins again below
    assert not fr.crossover(s, 1e4 / s, s, wiggle).crosses
    apart = fr.crossover([100, 200], [1, 2], [5, 10], [1, 2])
    assert apart.above == "" and "share no speed" in str(apart)


# --- the price of a token ---------------------------------------------------------------------------
def test_the_cheapest_configuration_is_the_brute_force_one(front):
    target, price = 40.0, 2.0
    got = front.cheapest(target, price)
    dense = fr.frontier(DEP, WORKLOAD, alpha=0.7, concurrencies=np.arange(1, 2001))
    for name, arm in (("plain", dense.plain), ("speculative", dense.speculative)):
        ok = [i for i in range(arm.concurrency.size) if arm.speed_per_user[i] >= target]
        i = max(ok, key=lambda j: arm.throughput_per_gpu[j])
        assert got[name]["concurrency"] == arm.concurrency[i] and got[name]["gamma"] == arm.gamma[i]
        assert got[name]["cost_per_million"] == pytest.approx(price * 1e6 / (arm.throughput_per_gpu[i] * 3600))
    assert got["saving"] == pytest.approx(1 - got["speculative"]["cost_per_million"]
                                          / got["plain"]["cost_per_million"])
    assert front.cheapest(target, 9.0)["saving"] == pytest.approx(got["saving"])  # the price cancels


def test_a_target_only_speculation_reaches_and_one_nothing_reaches():
    f = fr.frontier(DEP, WORKLOAD, alpha=0.8, concurrencies=[1, 2, 4])
    between = (f.plain.speed_per_user[0] + f.speculative.speed_per_user[0]) / 2
    got = f.cheapest(between)
    assert got["plain"] is None and got["speculative"]["tokens_per_user"] >= between and got["saving"] is None
    with pytest.raises(ValueError, match="min_tokens_per_user must be at most"):
        f.cheapest(10 * f.speculative.speed_per_user[0])


@pytest.mark.parametrize("call, match", [
    (lambda f: f.cost_per_million(-1.0), "price_per_gpu_hour must be a number in \\(0, inf\\)"),
    (lambda f: f.cheapest(0.0), "min_tokens_per_user"),
])
def test_bad_prices_and_targets_name_their_parameter(front, call, match):
    with pytest.raises(ValueError, match=match):
        call(front)


@pytest.mark.parametrize("kwargs, match", [
    ({"workload": "2k2k"}, "workload must be one of"),
    ({"gamma": 0}, "gamma must be an integer in \\[1"),
    ({"concurrencies": [0, 4]}, "concurrencies must be an integer"),
    ({"alpha": [0.5, 0.6]}, "alpha must be one number"),
    ({"alpha": None}, "alpha must be given"),
])
def test_bad_input_names_its_parameter(kwargs, match):
    args = {"workload": WORKLOAD, "alpha": 0.7, **kwargs}
    with pytest.raises(ValueError, match=match):
        fr.frontier(DEP, args.pop("workload"), **args)


def test_a_deployment_that_cannot_hold_its_weights_is_refused():
    with pytest.raises(ValueError, match="cannot hold"):
        fr.frontier(speclib.Deployment("DeepSeek-V3", "H200", tp=1), WORKLOAD, alpha=0.7)


# --- InferenceX's frontiers ---------------------------------------------------------------------------
def test_a_measured_point_is_the_median_of_its_runs_output_share():
    m = next(x for x in fe.measured_frontiers() if x.label == "H200 SGLang fp8 TP8 1k1k")
    rows = [r for r in dr.read_r1()["rows"] if (r["chip"], r["engine"], r["precision"], r["spec"], r["tp"], r["ep"],
                                                r["isl"], r["osl"], r["conc"]) == ("H200", "SGLang", "fp8", "none", 8,
                                                                                   1, 1024, 1024, 64)]
    # 1k/1k: half the tokens InferenceX counts per GPU are output; Little's law keeps every one of these runs
    assert len(rows) == m.plain.runs[list(m.plain.concurrency).index(64)]
    i = list(m.plain.concurrency).index(64)
    assert m.plain.throughput_per_gpu[i] == pytest.approx(np.median([r["tput_per_gpu"] / 2 for r in rows]))
    assert m.plain.speed_per_user[i] == pytest.approx(np.median([1000.0 / r["tpot_ms"] for r in rows]))
    assert m.gamma == 2  # SGLang's launch script on NVIDIA chips


def test_matched_error_of_a_frontier_ten_percent_high():
    s = np.geomspace(10, 100, 30)
    e = fe.matched_error([20.0, 50.0, 500.0], 1e4 / np.array([20.0, 50.0, 500.0]), s, 1.1e4 / s)
    assert e[:2] == pytest.approx([0.1, 0.1]) and np.isnan(e[2])


def test_a_chip_held_out_is_priced_without_its_own_constants():
    cal = fe.held_out_fit("H200").calibration()
    assert "H200" not in cal.roofline_factor and "H200" not in cal.fixed_s


# --- the command line ---------------------------------------------------------------------------------
ARGS = ["frontier", "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8", "--alpha", "0.7",
        "--workload", "1024,512", "--concurrency", "1,3,16,100"]


def test_csv_has_a_row_per_point_that_reads_back_exactly(capsys):
    code, out, err = run(capsys, *ARGS, "--format", "csv", "--price-per-gpu-hour", "2")
    assert code == 0 and err == ""
    rows = list(csv.DictReader(io.StringIO(out)))
    f = fr.frontier(DEP.replace(drafter=None), WORKLOAD, alpha=0.7, concurrencies=[1, 3, 16, 100])
    assert [r["arm"] for r in rows] == ["plain"] * 4 + ["speculative"] * 4
    for r, want in zip(rows, f.rows(2.0)):
        assert float(r["tokens_per_gpu"]) == want["tokens_per_gpu"]
        assert float(r["cost_per_million"]) == want["cost_per_million"]
        assert int(r["gamma"]) == want["gamma"]


def test_json_carries_the_crossing_and_the_target(capsys):
    code, out, _ = run(capsys, *ARGS, "--format", "json", "--min-tokens-per-user", "30")
    record = json.loads(out)
    f = fr.frontier(DEP.replace(drafter=None), WORKLOAD, alpha=0.7, concurrencies=[1, 3, 16, 100])
    assert code == 0 and len(record["points"]) == 8 and record["drafter"] == "DeepSeek-V3-MTP"
    assert record["crossover"]["text"] == str(f.crossover())
    assert record["target"]["saving"] == pytest.approx(f.cheapest(30)["saving"])


def test_the_table_states_the_crossing_and_the_saving(capsys):
    code, out, _ = run(capsys, *ARGS, "--price-per-gpu-hour", "2", "--min-tokens-per-user", "30")
    assert code == 0 and "plain/Mtok" in out and "cheaper per token" in out
    assert str(fr.frontier(DEP.replace(drafter=None), WORKLOAD, alpha=0.7,
                           concurrencies=[1, 3, 16, 100]).crossover()) in out


@pytest.mark.parametrize("suffix, magic", [("png", b"\x89PNG"), ("svg", b"<?xml")])
def test_plot_writes_the_picture(capsys, tmp_path, suffix, magic):
    path = tmp_path / f"f.{suffix}"
    code, _, _ = run(capsys, *ARGS, "--plot", str(path), "--price-per-gpu-hour", "2")
    assert code == 0 and path.read_bytes().startswith(magic)


@pytest.mark.parametrize("extra, message", [
    (["--price-per-gpu-hour", "-1"], "--price-per-gpu-hour must be a number in (0, inf)"),
    (["--min-tokens-per-user", "100000"], "--min-tokens-per-user must be at most"),
    (["--workload", "2k2k"], "--workload must be one of"),
    (["--workload", "1,2,3"], "--workload must be a workload's name"),
    (["--plot", "x.pdf"], "--plot: FILE must end in .png or .svg"),
    (["--gamma", "0"], "--gamma must be an integer in [1"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(capsys, tmp_path, extra, message):
    out_file, plot = tmp_path / "out.csv", tmp_path / "f.png"
    argv = [*ARGS, "--output", str(out_file), *(["--plot", str(plot)] if "--plot" not in extra else []), *extra]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    assert not out_file.exists() and not plot.exists()


def test_the_cost_figure_says_how_far_its_curves_run_from_the_points_drawn_with_them():
    """The live cost figure at B200, TensorRT-LLM and 8k/1k draws curves well above InferenceX's points, though
    its step was fitted on them; the panel says by how much, each ratio read here by hand: the drawn curve at
    each measured point's speed, linear in log-log between its two neighbours, over the measured throughput."""
    import math

    from speclib.presentation.figures import cost_of_a_token as cost

    d = cost.configuration("B200", "TRT", "8k1k")
    ratios = {}
    for arm in ("plain", "mtp"):
        pts = sorted(zip(d[f"{arm}_speed"], d[f"{arm}_x"]))
        got = []
        for s, x in zip(d[f"measured_{arm}_speed"], d[f"measured_{arm}_x"]):
            for (s0, x0), (s1, x1) in zip(pts, pts[1:]):
                if s0 <= s <= s1:
                    t = (math.log(s) - math.log(s0)) / (math.log(s1) - math.log(s0))
                    got.append(math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0))) / x)
                    break
        ratios[arm] = float(np.median(got))
    assert ratios["plain"] > 1.5 and ratios["mtp"] > 1.5  # the curves run well above the points
    assert f"{ratios['plain']:.2f}\u00d7 (plain)" in d["note"] and f"{ratios['mtp']:.2f}\u00d7 (MTP)" in d["note"]
    # every configuration InferenceX measured says it, whatever the ratio; one it did not says that instead
    assert cost.configuration("H200", "SGLang", "1k1k")["note"].startswith("drawn / measured at the same speed")
    assert "did not measure" in cost.configuration("B300", "TRT", "8k1k")["note"]
