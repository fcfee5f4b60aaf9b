"""The host work fitted on top of the measured step (speclib.calibration.measured_host):
the fit recovers host constants a synthetic set was built with, a held-out
unit's own runs never reach its fit, the baselines stand on the same runs,
and the benchmark's --held-out runs."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from speclib.calibration import measured_host as mh

ROOT = Path(__file__).resolve().parents[1]
#: Host constants chosen for the synthetic runs (seconds).
CHOSEN = {"SGLang": 1.2e-3, "TRT": 0.3e-3, "vLLM": 0.7e-3}
CHOSEN_D = 15e-6


@pytest.fixture(scope="module")
def sample():
    """Every 12th decode run on a chip with tables: every engine, chip and family among them."""
    runs = mh.table_runs()[::12]
    assert {r.engine for r in runs} == set(CHOSEN)
    assert len({r.chip for r in runs}) >= 3 and len({r.family for r in runs}) == 2
    return runs


@pytest.fixture(scope="module")
def synthetic(sample):
    """The sample with each TPOT set to the measured step's plus the chosen host time, by hand."""
    truth = [mh.measured_tpot(r) + CHOSEN[r.engine] + CHOSEN_D * r.running for r in sample]
    return mh.with_truth(sample, truth)


def test_fit_recovers_the_host_time_a_synthetic_set_was_built_with(synthetic):
    f = mh.fit(synthetic)
    assert f.runs == len(synthetic)
    for engine, a in CHOSEN.items():
        assert f.fixed_s[engine] == pytest.approx(a, rel=1e-6)
    assert f.per_sequence_s == pytest.approx(CHOSEN_D, rel=1e-6)
    # and so predicts the synthetic TPOT exactly
    np.testing.assert_allclose(f.tpot(synthetic), [r.tpot_s for r in synthetic], rtol=1e-9)


def test_a_host_time_below_zero_sits_at_zero(sample):
    """A set faster than its measured kernels by a fixed time: that engine's constant is held at zero."""
    truth = [mh.measured_tpot(r) * (0.9 if r.engine == "TRT" else 1.0) + (0.0 if r.engine == "TRT" else 1e-3)
             for r in sample]
    f = mh.fit(mh.with_truth(sample, truth))
    assert f.fixed_s["TRT"] == 0.0
    assert f.fixed_s["SGLang"] > 0.0 and f.fixed_s["vLLM"] > 0.0


def test_an_engine_the_fit_did_not_see_takes_the_median_fixed_time():
    f = mh.HostFit({"A": 1e-3, "B": 3e-3, "C": 8e-3}, 2e-6)
    assert f.fixed("D") == pytest.approx(3e-3)
    assert f.fixed("C") == pytest.approx(8e-3)
    assert float(f.host_time("D", 10)) == pytest.approx(3e-3 + 10 * 2e-6)


@pytest.mark.parametrize("by", ["chip", "model", "engine"])
def test_folds_partition_the_runs_by_their_unit(sample, by):
    seen = np.zeros(len(sample), dtype=int)
    for g, train, test in mh.folds(by, sample):
        assert not (train & test).any() and (train | test).all()
        assert {mh.GROUPINGS[by](r) for r, t in zip(sample, test) if t} == {g}
        assert g not in {mh.GROUPINGS[by](r) for r, t in zip(sample, train) if t}
        seen += test
    assert (seen == 1).all()


@pytest.mark.parametrize("by", ["chip", "model"])
def test_a_held_out_unit_never_sees_its_own_runs(synthetic, by):
    """Tripling the measured TPOT of one unit's runs leaves that unit's
    held-out predictions as they were (and changes another unit's, whose fit
    the tripled runs are in)."""
    base = mh.held_out(by, synthetic)
    unit = sorted(set(base.groups))[0]
    mine = base.groups == unit
    changed = mh.with_truth(synthetic, [r.tpot_s * (3.0 if m else 1.0) for r, m in zip(synthetic, mine)])
    again = mh.held_out(by, changed)
    np.testing.assert_allclose(again.predicted[mine], base.predicted[mine], rtol=1e-12)
    assert not np.allclose(again.predicted[~mine], base.predicted[~mine], rtol=1e-3)
    # the synthetic set's own host constants are found without each unit too, where it has every engine
    for g, f in base.fits.items():
        for engine in f.fixed_s:
            assert f.fixed_s[engine] == pytest.approx(CHOSEN[engine], rel=1e-6)


def test_the_null_baseline_is_the_median_of_the_same_chip_and_engine_outside_the_unit(sample):
    h = mh.held_out("model", sample)
    i = 0
    r = sample[i]
    pool = [s.tpot_s for s in sample if s.family != r.family and s.engine == r.engine
            and mh.chip_key(s.chip) == mh.chip_key(r.chip)]
    if not pool:  # no such run outside the family: the same engine's
        pool = [s.tpot_s for s in sample if s.family != r.family and s.engine == r.engine]
    assert h.null[i] == pytest.approx(float(np.median(pool)))
    # held out by chip, no run of the chip is left: the same engine's on other chips
    c = mh.held_out("chip", sample)
    pool = [s.tpot_s for s in sample if mh.chip_key(s.chip) != mh.chip_key(r.chip) and s.engine == r.engine]
    assert c.null[i] == pytest.approx(float(np.median(pool)))


def test_the_calibrated_hold_out_stands_on_the_same_runs(sample):
    h = mh.held_out("model", sample)
    assert np.isfinite(h.calibrated).all()  # every decode run is held out by family in the stored file
    assert np.isnan(mh.held_out("engine", sample).calibrated).all()  # none is stored by engine
    ratio = h.calibrated / h.measured
    assert 0.3 < np.median(ratio) < 3.0  # a TPOT of the same run, not another's


def test_rows_are_medians_per_unit_and_overall(synthetic):
    h = mh.held_out("chip", synthetic)
    rows = {r[0]: r for r in h.rows()}
    assert sum(rows[g][1] for g in rows if g != "all") == rows["all"][1] == len(synthetic)
    # the synthetic runs' host work is the same constants in every fold: predicted exactly, held out
    assert rows["all"][2] == pytest.approx(0.0, abs=1e-9)
    # the measured step alone is too fast on them by the chosen host time
    alone = np.median([abs(mh.measured_tpot(r) / r.tpot_s - 1.0) for r in synthetic])
    assert rows["all"][3] == pytest.approx(alone)


def test_targets_are_met_or_missed_from_the_family_hold_out(synthetic):
    rows = mh.targets(mh.held_out("model", synthetic))
    assert rows[0][3] is True and rows[1][3] is True  # exact predictions: under 15 % and below the null
    assert rows[2][3] is None


def test_the_benchmark_prints_the_hold_out_on_a_subset():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_measured_step.py"), "--no-timing",
                          "--held-out", "--every", "25", "--no-sensitivity", "--spec-ids",
                          "lmsys-large,trtllm-ngram-llama4-scout,tokenspeed-dspark-kimik3-mi355x-1k1k"],
                         capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for by in ("chip", "model", "engine"):
        assert any(line.startswith(f"{by:10s} all") for line in text.splitlines()), by
    assert "independent estimate (sglangomni760): 0.90 ms" in text
    assert "decode TPOT held out by model family" in text and ("met" in text or "missed" in text)
    # the e_pos block: each fold's e_pos, trained on the other families' runs of the three
    assert "plus e_pos" in text and "the calibrated step's e 116.5 us at 80 attention layers" in text
    folds = [line.split() for line in text.splitlines() if line.startswith(("model ", "chip "))
             and len(line.split()) == 6]
    assert {f[1] for f in folds if f[0] == "model"} == {"DeepSeek", "Llama", "Kimi"}
    assert all(int(f[2]) == 2 for f in folds if f[0] == "model")


# --- the speculative runs priced by the measured step plus host work ---------------------

def test_a_speculative_point_is_the_public_speed_up_of_the_measured_step_plus_the_host_time():
    """An n-gram run (no drafter passes, no prefill in its loop): its speed-up
    over its committed tokens is the public speclib.speedup's of a measured
    deployment at c_draft 0 (over its own committed tokens), and a host time
    h adds to both steps: (t1 + h) / (t_spec + h)."""
    import speclib
    from speclib.core import acceptance as acc
    from speclib.core.deployment import Deployment
    from speclib.evidence import spec_runs as s

    run = s.spec_run("trtllm-ngram-llama4-scout")
    assert run.passes(5) == 0 and not run.prefill_lengths
    dep = Deployment("llama-4-scout", "B200", tp=8, engine="TRT", step_time="measured")
    h = 2e-3
    none, some = (mh.predict_spec_run(run, mh.HostFit({"TRT": a}, 0.0)) for a in (0.0, h))
    for b, g, q0, qh in zip(none.batch, none.gamma, none.predicted, some.predicted):
        n = float(acc.committed_numeric(np.asarray(0.7), np.asarray(float(g))))
        ratio = float(speclib.speedup(0.7, int(g), int(b), run.context, c_draft=0.0, deployment=dep)) / n
        assert q0 / run.committed(g, b) == pytest.approx(ratio, rel=1e-9)
        t1 = float(speclib.tpot(int(b), run.context, deployment=dep))
        assert qh / run.committed(g, b) == pytest.approx((t1 + h) / (t1 / ratio + h), rel=1e-9)


def test_a_speculative_run_is_priced_without_its_familys_decode_runs(sample):
    ids = ("sglang-docs", "vllm-eagle3-llama33-70b-h200")  # a DeepSeek run, a Llama run
    base, _ = mh.spec_held_out("model", runs=sample, ids=ids)
    deepseek = mh.with_truth(sample, [r.tpot_s * (3.0 if r.family == "DeepSeek" else 1.0) for r in sample])
    again, _ = mh.spec_held_out("model", runs=deepseek, ids=ids)
    by_id = {p.run.id: p for p in base.runs}
    moved = {p.run.id: p for p in again.runs}
    assert {p.run.family for p in base.runs} == {"DeepSeek", "Llama"}
    np.testing.assert_allclose(moved["sglang-docs"].predicted, by_id["sglang-docs"].predicted, rtol=1e-12)
    llama = "vllm-eagle3-llama33-70b-h200"
    assert not np.allclose(moved[llama].predicted, by_id[llama].predicted, rtol=1e-4)


# --- one fitted per-extra-position term e_pos on top -------------------------------------

import dataclasses  # noqa: E402

#: Speculative runs of three families, engines and chips, every one a speed-up.
E_IDS = ("lmsys-large", "sglang-mtp-deepseek-v3-mi300x-random", "inferencex-r1-mtp-h200-sglang-fp8-tp8-1k1k",
         "vllm-v4pro-mi355x", "trtllm-ngram-llama4-scout", "sglang-eagle3-llama31-8b-h100-paper",
         "tokenspeed-dspark-kimik3-mi355x-1k1k")
#: Host constants (not fitted) the synthetic speculative runs are priced with.
E_HOST = mh.HostFit({"SGLang": 1.0e-3, "TRT": 0.4e-3, "vLLM": 0.8e-3}, 12e-6)
#: Llama-3.3-70B's layers: the calibrated step's L_ref, which e_pos is given at.
L_REF = 80.0


@pytest.fixture(scope="module")
def e_runs():
    from speclib.evidence import spec_runs as s

    runs = [s.spec_run(i) for i in E_IDS]
    assert {r.family for r in runs} == {"DeepSeek", "Llama", "Kimi"} and {r.quantity for r in runs} == {"speedup"}
    return runs


def by_hand(run, e, scale="layers"):
    """``run`` with each speed-up set by hand: the committed tokens times the
    plain step over the speculative step at e_pos 0 (both with E_HOST), with
    e B (T - 1) added to the speculative step (times L_a / 80 per attention
    layer); its acceptance as reported, so that none is refitted."""
    steps = mh.MeasuredSpecSteps(run, E_HOST)
    per = steps.step.architecture.attention_layers / L_REF if scale == "layers" else 1.0
    pts = tuple((b, g, run.committed(g, b) * steps.plain(b)
                 / (steps.spec(b, g) + e * b * (run.width(g) - 1.0) * per)) for b, g, _ in run.points)
    return dataclasses.replace(run, points=pts, acceptance_reported=True)


@pytest.mark.parametrize("scale", ["layers", "step"])
def test_e_pos_adds_e_B_T_minus_1_to_the_speculative_step_only(e_runs, scale):
    """Priced at the e_pos a hand-made run was built with, each point is its
    own speed-up exactly; at e_pos 0 it is the measured step plus host work's."""
    for run in e_runs[:3]:
        made = by_hand(run, 80e-6, scale)
        p = mh.predict_spec_run(made, E_HOST, 80e-6, scale)
        np.testing.assert_allclose(p.predicted, p.measured, rtol=1e-9)
        plain = mh.predict_spec_run(made, E_HOST)
        assert (plain.predicted > p.predicted).all()  # each point verifies more than one position
        np.testing.assert_allclose(plain.predicted, mh.predict_spec_run(by_hand(run, 0.0), E_HOST, 0.0).measured,
                                   rtol=1e-9)


@pytest.mark.parametrize("scale, chosen", [("layers", 90e-6), ("step", 40e-6), ("layers", 0.0)])
def test_e_pos_is_recovered_from_speculative_runs_built_with_it(e_runs, scale, chosen):
    made = [by_hand(r, chosen, scale) for r in e_runs]
    e, n, points = mh.fit_per_position(made, E_HOST, scale)
    assert n == len(made) and points == sum(len(r.points) for r in made)
    assert e == pytest.approx(chosen, rel=1e-4, abs=1e-9)
    assert mh.per_position_loss(made, E_HOST, e, scale) == pytest.approx(0.0, abs=1e-12)


def test_the_loss_searched_is_the_scored_points_of_the_public_pricing(e_runs):
    """per_position_loss's fast route against predict_spec_run's scored
    points, on runs as measured (acceptances refitted where they are)."""
    for e in (0.0, 150e-6):
        direct = 0.0
        for r in e_runs:
            p = mh.predict_spec_run(r, E_HOST, e)
            direct += float((((p.predicted / p.measured - 1.0)[p.scored]) ** 2).sum())
        assert mh.per_position_loss(e_runs, E_HOST, e) == pytest.approx(direct, rel=1e-12)


def test_a_held_out_familys_own_speculative_runs_cannot_move_its_e_pos(sample, e_runs):
    """Halving the DeepSeek runs' scored speed-ups (every point of a run
    whose acceptance is reported; past the smallest batch where it is fitted
    there) leaves DeepSeek's e_pos and held-out predictions as they were, and
    moves Llama's e_pos, whose fit they are in."""
    from speclib.evidence import spec_runs as s

    def halved(r):
        if r.family != "DeepSeek" or r.id not in E_IDS:
            return r
        low = min(r.batches) if s.alpha_fitted(r) else -1
        return dataclasses.replace(r, points=tuple((b, g, v * (0.5 if b > low else 1.0)) for b, g, v in r.points))

    every = s.spec_runs()
    base, _, pos = mh.spec_held_out_per_position("model", runs=sample, ids=E_IDS, spec=every)
    again, _, moved = mh.spec_held_out_per_position("model", runs=sample, ids=E_IDS,
                                                   spec=tuple(halved(r) for r in every))
    assert set(pos) == {"DeepSeek", "Llama", "Kimi"}
    assert pos["DeepSeek"][1] == 3 and pos["Llama"][1] == 5  # each family's fold trains on the others' runs
    assert moved["DeepSeek"] == pos["DeepSeek"]
    assert abs(moved["Llama"][0] - pos["Llama"][0]) > 1e-6
    old = {p.run.id: p for p in base.runs}
    for p in again.runs:
        if p.run.family == "DeepSeek":
            np.testing.assert_allclose(p.predicted, old[p.run.id].predicted, rtol=1e-12)
            assert not np.allclose(p.measured, old[p.run.id].measured)  # its own runs did change


def test_e_pos_zero_is_the_measured_step_plus_host_work(sample, e_runs):
    """spec_held_out (no e_pos) and a run priced at e_pos 0 are the same."""
    held, _ = mh.spec_held_out("model", runs=sample, ids=E_IDS[:2])
    fits = {}
    for p in held.runs:
        g = p.run.family
        fits.setdefault(g, mh.fit([d for d in sample if d.family != g]))
        np.testing.assert_array_equal(mh.predict_spec_run(p.run, fits[g], 0.0).predicted, p.predicted)


def test_the_peers_side_by_side_takes_the_measured_step_on_the_same_runs():
    """The measured step plus host work, held out by chip, beside the peers: one row per peer row, the peer's
    measured TPOT kept, speclib's the host hold-out's prediction of that run (found here by its chip, engine,
    concurrency and workload, not by the function's own index)."""
    from speclib.evidence import peer

    pts = mh.peer_decode_points()
    assert [p[:7] for p in pts] == [p[:7] for p in peer.decode_points()]
    held = mh.held_out("chip")
    keyed = {peer.run_key(r): q for r, q in zip(held.runs, held.predicted)}
    rows = peer._data(None)["decode"]["rows"]
    for row, p in list(zip(rows, pts))[:25]:
        assert p[7] == pytest.approx(1e3 * keyed[peer.run_key(row)], rel=1e-12)
        assert p[8] == pytest.approx(p[7] / p[6] - 1, rel=1e-12)
    s = peer.side_by_side(extra_decode={mh.PEER_LABEL: mh.peer_decode_points})
    assert mh.PEER_LABEL in s["decode TPOT"]["median_abs_error"]
    assert mh.PEER_LABEL not in s["MTP speed-up"]["median_abs_error"]
