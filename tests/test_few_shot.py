"""The few-shot measurement (speclib.calibration.few_shot): ``speclib fit`` on a
sweep's smallest concurrencies recovers a sweep generated from known
constants, the baselines are what their definitions give, and the sweeps are
the data's own arms."""
import json
from importlib import resources

import numpy as np
import pytest

from speclib.core import calibrated as cal
from speclib.core.deployment import Deployment
from speclib.calibration import few_shot, own_fit
from speclib.evidence import spec_runs
from speclib.presets import resolve

#: the constants the synthetic sweep is generated from
TRUE = {"a": 4.0e-3, "d": 6.0e-5, "e": 3.0e-5}
GAMMA, ACCEPT = 2, 2.5  # 2.5 lies on the fit's grid over 1..3 (steps of 1/20)
CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)
IN, OUT = 1024, 1024


def _synthetic_sweep(accept_length=None) -> few_shot.Sweep:
    """Both arms' TPOT from TRUE, written out here from the step's documented
    form (own_fit's module notes): the roofline kernels at the shipped chip
    factor, the attention's factor and MoE time, the collectives, plus
    a + d B (each scaled by 1 + 0.05 gamma for the drafter's passes) and
    e B gamma, over the tokens per verify, plus the arriving prefill."""
    m, hw = resolve("deepseek-v3", "H200")
    shipped = cal.shipped_calibration()
    mu, nu = shipped.roofline_factor["H200"], shipped.attention_factor(hw)
    split = Deployment(m, hw, tp=8).parallel_step()
    moe = shipped.moe_layer(hw) * split.architecture.moe_layers
    S = IN + (OUT - 1) / 2

    def kernels(B, T):
        B, T, S_ = np.float64(B), np.float64(T), np.float64(S)
        return float(mu * split.kernel_time(B, T, S_) + nu * split.component_times(B, T, S_)["attention"]
                     + split.communication(B, T)) + moe

    points = []
    for B in CONCURRENCIES:
        pre = float(split.prefill_share(np.float64(B), IN, OUT)) * shipped.prefill_factor
        plain = kernels(B, 1) + TRUE["a"] + TRUE["d"] * B
        share = 0.05 * GAMMA
        spec = (kernels(B, GAMMA + 1) + share * kernels(B, 1) + (1 + share) * (TRUE["a"] + TRUE["d"] * B)
                + TRUE["e"] * B * GAMMA)
        points.append((B, plain + pre, spec / ACCEPT + pre))
    return few_shot.Sweep(id="synthetic", label="synthetic", family=few_shot.FAMILIES[1], url="", model="deepseek-v3",
                          chip="H200", engine="vLLM", tp=8, gamma=GAMMA, input_len=IN, output_len=OUT,
                          points=tuple(points), accept_length=accept_length)


@pytest.mark.parametrize("accept_length", [ACCEPT, None], ids=["acceptance given", "acceptance fitted"])
def test_a_synthetic_sweep_is_recovered_from_its_three_smallest_concurrencies(accept_length):
    sweep = _synthetic_sweep(accept_length)
    r = few_shot.few_shot(sweep, 3)
    assert not r.error and r.accept_length == pytest.approx(ACCEPT, abs=1e-9)
    assert r.accept_fitted is (accept_length is None)
    assert [p.concurrency for p in r.points] == list(CONCURRENCIES[3:])
    for p, (B, plain, spec) in zip(r.points, sweep.points[3:]):
        assert p.fitted_tpot == pytest.approx((plain * 1e3, spec * 1e3), rel=1e-6)
        assert p.fitted_speedup == pytest.approx(plain / spec, rel=1e-6)
        assert p.decision_right("fitted")
    assert r.median("fitted", "speedup") < 1e-6 and r.median("fitted", "tpot") < 1e-6
    # the baselines do not know the step: they miss the growth with the batch
    assert r.median("carried", "tpot") > 0.1


def test_the_fitted_constants_are_the_generating_ones():
    sweep = _synthetic_sweep(ACCEPT)
    fit = own_fit.fit_measurements(sweep.records(CONCURRENCIES[:3]), "deepseek-v3", "H200", tp=8)
    a, d, e, a_d = fit.theta
    assert (a, d, e) == pytest.approx((TRUE["a"], TRUE["d"], TRUE["e"]), rel=1e-6)
    assert a_d == pytest.approx(0.0, abs=1e-9)


def test_without_speculative_runs_the_shipped_calibration_is_the_prior():
    # e and a_d read from the shipped file itself, not from the calibration object the fit uses
    data = json.loads(resources.files("speclib").joinpath("data", "calibration", "step_time.json").read_text())
    sweep = _synthetic_sweep(ACCEPT)
    plain_only = [r for r in sweep.records(CONCURRENCIES[:3]) if not r.gamma]
    fit = own_fit.fit_measurements(plain_only, "deepseek-v3", "H200", tp=8)
    layers = resolve("deepseek-v3", None)[0].step_architecture().attention_layers
    e_prior = data["per_position_s"] * layers / data["fixed_layers_ref"]
    assert fit.prior == ("per_position", "per_draft_pass")
    assert fit.theta[2] == pytest.approx(e_prior, rel=1e-9) and fit.theta[3] == data["per_draft_pass_s"]
    assert "the prior" in fit.calibration.source


def test_a_preset_chip_the_shipped_fit_did_not_see_takes_its_generations_factor():
    # MI350X is in no shipped fit; the shipped step prices it at the median of the fitted chips of its
    # generation (CDNA 4: MI355X alone), read here from the shipped file, not from the calibration object
    data = json.loads(resources.files("speclib").joinpath("data", "calibration", "step_time.json").read_text())
    assert "MI350X" not in data["roofline_factor"]
    s = next(s for s in few_shot.sweeps() if s.id == "vllm-dspark-dsv4-flash-mi350x-k7")
    fit = own_fit.fit_measurements(s.records(s.concurrencies[:3]), s.model, s.chip, tp=s.tp, engine=s.engine,
                                   accept_length=3.0)
    assert fit.calibration.roofline_factor == {"MI350X": pytest.approx(data["roofline_factor"]["MI355X"], rel=1e-12)}


def test_the_baselines_are_their_definitions():
    # a speed-up exactly linear in log concurrency: the log-linear baseline is exact, the carried one is the
    # last fitted point's
    base = [(c, 10.0 + c, (10.0 + c) / (2.0 - 0.1 * np.log(c))) for c in (1, 2, 4, 8, 16)]
    sweep = few_shot.Sweep(id="line", label="", family=few_shot.FAMILIES[1], url="", model="deepseek-v3",
                           chip="H200", engine="vLLM", tp=8, gamma=GAMMA, input_len=IN, output_len=OUT,
                           points=tuple(base), accept_length=ACCEPT)
    r = few_shot.few_shot(sweep, 3)
    for p in r.points:
        assert p.loglinear_speedup == pytest.approx(2.0 - 0.1 * np.log(p.concurrency), rel=1e-12)
        assert p.carried_speedup == pytest.approx(2.0 - 0.1 * np.log(4), rel=1e-12)
        assert p.carried_tpot == pytest.approx((14.0e3, 14.0e3 / (2.0 - 0.1 * np.log(4))), rel=1e-12)


def test_a_spread_plan_fits_the_ends_and_between():
    assert few_shot.fitted_ranks(7, 3, "spread") == (0, 3, 6)
    assert few_shot.fitted_ranks(4, 2, "spread") == (0, 3)
    assert few_shot.fitted_ranks(5, 3, "Spread") == (0, 2, 4)
    assert few_shot.fitted_ranks(7, 3) == (0, 1, 2)
    with pytest.raises(ValueError, match="plan must be one of 'smallest', 'spread'"):
        few_shot.fitted_ranks(7, 3, "largest")


def test_spread_baselines_are_the_nearest_fitted_run_and_a_line_through_them():
    # fitted on 1, 8 and 64 of seven concurrencies: each other point is priced, none fitted, and its carried
    # baseline is the measured value of the fitted run nearest in log concurrency (4 -> 8, 2 -> 1; 16 and 32
    # -> 8 and 64), the log-linear one a line through the three fitted speed-ups
    sweep = _synthetic_sweep(ACCEPT)
    r = few_shot.few_shot(sweep, 3, "spread")
    measured = {c: (plain, spec) for c, plain, spec in sweep.points}
    assert [p.concurrency for p in r.points] == [2, 4, 16, 32]
    nearest = {2: 1, 4: 8, 16: 8, 32: 64}
    fitted_c = np.log([1.0, 8.0, 64.0])
    fitted_s = [measured[c][0] / measured[c][1] for c in (1, 8, 64)]
    slope, icpt = np.polyfit(fitted_c, fitted_s, 1)
    for p in r.points:
        plain, spec = measured[nearest[p.concurrency]]
        assert p.carried_speedup == pytest.approx(plain / spec, rel=1e-12)
        assert p.carried_tpot == pytest.approx((plain * 1e3, spec * 1e3), rel=1e-12)
        assert p.loglinear_speedup == pytest.approx(icpt + slope * np.log(p.concurrency), rel=1e-12)
    assert r.plan == "spread"


def test_fitted_on_the_smallest_the_cost_of_an_extra_position_comes_out_low():
    # the README's reading of why the smallest runs under-predict the speculative arm: on each engine sweep the
    # fitted time per extra verified position is smaller fitted on the smallest three than on three spread
    # over the sweep, and on the MI300X sweep it sits at its bound, zero
    def e(s, plan):
        ranks = few_shot.fitted_ranks(len(s.concurrencies), 3, plan)
        fit, _, _ = few_shot._fit(s, s.records(tuple(s.concurrencies[i] for i in ranks)))
        return fit.calibration.per_position_s
    engine = [s for s in few_shot.sweeps() if s.family == few_shot.FAMILIES[1] and len(s.concurrencies) >= 5]
    assert len(engine) == 2
    for s in engine:
        assert e(s, "smallest") < e(s, "spread")
    mi300x = next(s for s in engine if s.chip == "MI300X")
    assert e(mi300x, "smallest") == 0.0


def test_a_decision_is_right_only_on_the_same_side_of_one():
    p = few_shot.Point(concurrency=256, speedup=0.9, tpot=(1.0, 1.1), fitted_speedup=1.2, fitted_tpot=(1.0, 0.8),
                       carried_speedup=0.95, carried_tpot=(1.0, 1.0), loglinear_speedup=1.0,
                       loglinear_tpot=(1.0, 1.0))
    assert not p.decision_right("fitted") and p.decision_right("carried") and p.decision_right("loglinear")
    assert p.error("fitted", "speedup") == pytest.approx(1.2 / 0.9 - 1)


def test_each_inferencex_sweep_is_its_pair_of_arms():
    # the pair's printed speed-up at each concurrency is the ratio of the sweep's two arms
    pairs = {r.id: r for r in spec_runs.r1_mtp_pairs()}
    r1 = [s for s in few_shot.sweeps() if s.family == few_shot.FAMILIES[0]]
    assert r1 and {s.id for s in r1} == set(pairs)
    for s in r1:
        printed = {b: v for b, _, v in pairs[s.id].points}
        assert {c: plain / spec for c, plain, spec in s.points} == pytest.approx(printed, rel=1e-12)


def test_an_engine_sweep_from_throughput_is_concurrency_over_throughput():
    s = next(s for s in few_shot.sweeps() if s.id == "vllm-dspark-dsv4-flash-mi350x-k7")
    # the source's table: concurrency 4, no speculation 381.53 tok/s, fixed K=7 970.33 tok/s
    assert s.points[0] == pytest.approx((4, 4 / 381.53, 4 / 970.33))
    assert "concurrency / output throughput" in s.assumed


def test_a_sweep_too_short_to_predict_says_so():
    sweep = _synthetic_sweep(ACCEPT)
    short = few_shot.Sweep(**{**sweep.__dict__, "points": sweep.points[:3]})
    r = few_shot.few_shot(short, 3)
    assert r.points == () and "none left to predict" in r.error and not r.scored()
    with pytest.raises(ValueError, match="n_fit"):
        few_shot.few_shot(sweep, 1)


def test_the_command_line_leads_with_your_own_fit(capsys):
    # speclib --help's first example is speclib fit, and fit's help says what the measurement found
    from speclib.tools import cli
    for argv in ([], ["fit"]):
        with pytest.raises(SystemExit):
            cli.main([*argv, "--help"])
        out = capsys.readouterr().out
        assert "speed-up no better" in out
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert text.index("speclib fit") < text.index("speclib gamma")


def test_the_readme_table_is_what_few_shot_measures():
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for n_fit, least, fam, plan in ((3, 5, few_shot.FAMILIES[1], "smallest"), (2, 3, few_shot.FAMILIES[0], "smallest"),
                                    (3, 5, few_shot.FAMILIES[1], "spread"), (2, 3, few_shot.FAMILIES[0], "spread")):
        row = few_shot.summary(n_fit, min_points=least, plan=plan)[fam]
        f = lambda q: " / ".join(f"{100 * row[p][q]:.1f}" for p in few_shot.PREDICTORS) + " %"  # noqa: E731
        line = f"| {f('speedup')} | {f('tpot')} | {100 * row['fitted']['decision']:.0f} % |"
        assert line in readme, line
