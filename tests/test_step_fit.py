"""The engine step fitted on measured runs (speclib.calibration.step_fit, the
runs in spec_runs and decode_runs, their features in step_features, the
predictions in step_predictions, the hold-outs in held_out, the report in
step_report): the fit recovers constants it did not see, held-out
predictions do not use the run they predict, bad data is refused, and
`speclib fit` (own_fit) writes a calibration the other commands price with."""
import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from speclib.core import calibrated as cal
from speclib.core import layout
from speclib.core import step as st
from speclib.core import speculation as spec
from speclib.core.deployment import Deployment
from speclib.evidence import engines, spec_runs
from speclib.calibration import held_out, own_fit, step_features, step_fit, step_predictions
from speclib.calibration import step_report
from speclib.formulas import step as fs
from speclib.presets import resolve
from speclib.tools import cli


def test_the_engine_step_is_the_sympy_expression():
    rng = np.random.default_rng(1)
    vals = rng.uniform(0.1, 3, 11)
    names = (fs.t_k, fs.t_c, fs.a, fs.d, fs.e, fs.B, fs.T, fs.chi, fs.t_x, fs.tau, fs.L_s)
    expected = float(fs.engine_step_expr.subs(dict(zip(names, vals))))
    from speclib.formulas import numpy_functions as nf

    assert nf.engine_step(*vals) == pytest.approx(expected, rel=1e-12)


def test_nnls_matches_a_brute_force_search():
    rng = np.random.default_rng(0)
    for _ in range(20):
        A, b = rng.normal(size=(12, 3)), rng.normal(size=12)
        x = step_fit._nnls(A, b)
        feasible = [np.linalg.norm(b)] + [
            np.linalg.norm(A[:, m] @ np.linalg.lstsq(A[:, m], b, rcond=None)[0] - b)
            for m in ([0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2])
            if np.all(np.linalg.lstsq(A[:, m], b, rcond=None)[0] >= 0)]
        assert np.linalg.norm(A @ x - b) <= min(feasible) + 1e-9
        assert np.all(x >= 0)


def test_a_contradictory_point_is_neither_fitted_nor_scored():
    # TensorRT-LLM's n-gram blog prints a 1.96x speed-up with 1.66 tokens per verify: more than N
    run = spec_runs.spec_run("trtllm-ngram-llama4-scout")
    bad = spec_runs.run_inconsistent(run)
    assert (1, 5) in bad
    assert all(v > run.committed(g) for b, g, v in run.points if (b, g) in bad)
    assert all(row[1:3] not in bad for row in step_fit._rows(run))


def test_a_run_held_out_is_predicted_without_its_own_data():
    run = spec_runs.spec_run("vllm-eagle3-llama31-8b-bs1")  # acceptance reported: nothing is taken from the run
    held = step_predictions.predict_run(step_fit.fit(exclude_runs=(run.id,)), run)
    doubled = dataclasses.replace(run, points=tuple((b, g, 2 * v) for b, g, v in run.points))
    again = step_predictions.predict_run(step_fit.fit(exclude_runs=(run.id,)), doubled)
    np.testing.assert_allclose(held.predicted, again.predicted)
    # ...whereas fitting on it moves the constants
    assert step_fit.fit().theta != step_fit.fit(exclude_runs=(run.id,)).theta


def test_a_run_whose_acceptance_is_fitted_takes_only_its_smallest_batch():
    run = spec_runs.spec_run("vllm-v4pro-mi355x")  # no acceptance reported, three batches
    assert spec_runs.alpha_fitted(run)
    f = step_fit.fit(exclude_runs=(run.id,))
    held = step_predictions.predict_run(f, run)
    first = min(run.batches)
    changed = dataclasses.replace(run, points=tuple((b, g, v if b == first else 2 * v) for b, g, v in run.points))
    again = step_predictions.predict_run(f, changed)
    np.testing.assert_allclose(held.predicted, again.predicted)
    assert not held.scored[held.batch == first].any() and held.scored[held.batch != first].all()


def test_fit_alpha_recovers_an_acceptance_from_ratios_it_generated():
    run = spec_runs.spec_run("sglang-autospec")
    f = step_fit.fit()
    truth = 0.815
    steps = step_features.SpecSteps(run)
    b = min(run.batches)
    g = sorted({g for bb, g, _ in run.points if bb == b})
    n = engines._acc.committed_numeric(np.asarray(truth), np.asarray(g, dtype=float))
    thr = [ni / f.time(steps.spec(b, gi)) for ni, gi in zip(n, g)]
    synthetic = dataclasses.replace(run, points=tuple((b, gi, t) for gi, t in zip(g, thr)))
    assert step_fit.fit_alpha(f, synthetic) == pytest.approx(truth, abs=0.005)


def test_the_shipped_calibration_is_the_joint_fit_on_every_run():
    shipped = cal.shipped_calibration()
    refit = step_fit.fit(step_features.SHIPPED_FORM).calibration()
    assert shipped.per_position_s == pytest.approx(refit.per_position_s, rel=1e-6)
    assert shipped.per_position_by_vendor == pytest.approx(refit.per_position_by_vendor, rel=1e-6)
    assert shipped.extra_flops_by_vendor == pytest.approx(refit.extra_flops_by_vendor, rel=1e-6)
    assert shipped.per_draft_pass_s == pytest.approx(refit.per_draft_pass_s, rel=1e-6)
    assert shipped.prefill_factor == pytest.approx(refit.prefill_factor, rel=1e-6)
    assert shipped.roofline_factor == pytest.approx(refit.roofline_factor, rel=1e-6)
    assert shipped.vendor_factor == pytest.approx(refit.vendor_factor, rel=1e-6)
    assert (shipped.fixed_layers_ref, shipped.seen, shipped.shared_engines) == (
        refit.fixed_layers_ref, refit.seen, refit.shared_engines)
    for chip, by in refit.fixed_s.items():
        for e, v in by.items():
            assert shipped.fixed_s[chip][e] == pytest.approx(v, rel=1e-6)
    # its intervals' draws: the bootstrap over model families, and their held-out spread
    assert len(shipped.draws) == held_out.INTERVAL_DRAWS
    assert shipped.residual_sd == pytest.approx(held_out.residual_sd(step_features.SHIPPED_FORM), rel=1e-6)


def _slope(batch, gain):
    """Least squares of log gain on log2 batch, by numpy's own polynomial fit."""
    return np.polyfit(np.log2(batch), np.log(gain), 1)[0]


def _sweep_directions(preds):
    """(measured, predicted) direction of each sweep, a draft length's three or more batches of one run: -1 falls,
    1 rises, 0 flat (within 1 % a doubling of batch)."""
    cls = lambda x: 0 if abs(x) <= 0.01 else (1 if x > 0 else -1)  # noqa: E731
    for p in preds:
        for g in set(p.gamma.tolist()):
            at = p.gamma == g
            if len(set(p.batch[at].tolist())) >= 3:
                yield cls(_slope(p.batch[at], p.measured[at])), cls(_slope(p.batch[at], p.predicted[at]))


def _decisions_by_hand(preds):
    """The three decision fractions counted point by point, pair by pair and sweep by sweep."""
    sign = [(m > 1) == (q > 1) for p in preds if p.run.quantity == "speedup"
            for m, q, ok in zip(p.measured, p.predicted, p.scored) if ok]
    best = [abs(mb - qb) <= 1 for p in preds for mb, qb in p.best.values()]
    dirs = [m == q for m, q in _sweep_directions(preds)]
    return np.mean(sign), np.mean(best), np.mean(dirs)


def test_the_decisions_are_counted_point_by_point():
    preds = list(held_out.stored_held_out("model").runs)
    assert held_out.decision_parts(preds) == pytest.approx(_decisions_by_hand(preds))
    assert held_out.decision_score(preds) == pytest.approx(np.mean(_decisions_by_hand(preds)))
    rows = held_out.direction_rows(preds)
    assert len(rows) >= 10 and all(len(b) >= 3 for _, _, b, *_ in rows)
    # a gain that halves each doubling falls, one that grows rises, one that moves 0.5 % a doubling is flat
    assert held_out.direction(_slope([1, 2, 4], [2.0, 1.0, 0.5])) == -1
    assert held_out.direction(_slope([1, 2, 4], [1.0, 1.2, 1.44])) == 1
    assert held_out.direction(_slope([1, 2, 4, 8], [1.0, 1.005, 1.01, 1.015])) == 0


def _skill_by_hand(preds):
    """A form's decision skill counted item by item: each decision's share right less its baseline's (always a
    gain; the constant in 1..8 with the most of the other families' pairs within one, the shorter on a tie; the
    gain falls), averaged."""
    sign = [((m > 1) == (q > 1), m > 1) for p in preds if p.run.quantity == "speedup"
            for m, q, ok in zip(p.measured, p.predicted, p.scored) if ok]
    pairs = [(p.run.family, mb, qb) for p in preds for mb, qb in p.best.values()]
    best = []
    for fam, mb, qb in pairs:
        others = [m for f, m, _ in pairs if f != fam]
        c = max(range(1, 9), key=lambda c: (sum(abs(m - c) <= 1 for m in others), -c))
        best.append((abs(mb - qb) <= 1, abs(mb - c) <= 1))
    dirs = [(m == q, m == -1) for m, q in _sweep_directions(preds)]
    return np.mean([np.mean([a for a, _ in x]) - np.mean([b for _, b in x]) for x in (sign, best, dirs) if x])


def _error_skill_by_hand(preds):
    """1 less the step's median |error| over the speed-up at the run's smallest batch's, on the points past it at
    a draft length measured there."""
    step, base = [], []
    for p in preds:
        b0 = p.batch.min()
        at0 = {g: m for b, g, m in zip(p.batch, p.gamma, p.measured) if b == b0}
        for b, g, m, q, ok in zip(p.batch, p.gamma, p.measured, p.predicted, p.scored):
            if ok and b != b0 and g in at0:
                step.append(abs(q / m - 1)), base.append(abs(at0[g] / m - 1))
    return 1 - np.median(step) / np.median(base)


def test_the_shipped_form_is_the_one_the_skill_first_rule_chooses():
    preds = {f: held_out._predict_group(f, "model") for f in held_out.CANDIDATE_FORMS}
    chosen, scores = held_out.choose_from(preds)  # choose_form's rule on these predictions, computed once here
    assert chosen == step_features.SHIPPED_FORM
    # each form's scores, by hand: the decisions' skill over the baselines, the error's over the speed-up at the
    # run's smallest batch
    for f in scores:
        assert scores[f] == pytest.approx((_skill_by_hand(preds[f]), _error_skill_by_hand(preds[f])))
    # forms with more skill on the decisions than the baselines beyond one bootstrap standard error (over the
    # runs, brute force here) keep the forms within one of the best; then the error skill within one standard
    # error of the best of those; then the fewest constants
    rng = np.random.default_rng(0)

    def se(p, score):
        return float(np.std([score([p[i] for i in rng.integers(0, len(p), len(p))]) for _ in range(200)]))

    top = max(scores, key=lambda f: scores[f])
    floor = scores[top][0] - se(preds[top], _skill_by_hand)
    good = [f for f in scores if scores[f][0] >= floor] if floor > 0 else list(scores)
    assert chosen in good
    accurate = max(good, key=lambda f: scores[f][1])
    within = [f for f in good if scores[f][1] >= scores[accurate][1] - se(preds[accurate], _error_skill_by_hand)]
    assert chosen in within
    assert held_out.form_size(chosen) == min(held_out.form_size(f) for f in within)
    # a form without a verify's extra positions beyond the roofline has no skill over the baselines on either
    bare = next(f for f in scores if not set(f.terms) & {"per_position", "extra_flops", "token_layer"})
    assert scores[bare][0] < 0 and scores[bare][1] < 0


def test_leave_one_run_out_scores_every_run():
    h = held_out.stored_held_out("run")
    s = h.summary()
    runs, _ = step_fit.decode_rows()
    llama = np.array([r.family == "Llama" for r in runs])
    assert s["runs"] == len(spec_runs.spec_runs())
    assert s["points"] == sum(int(p.scored.sum()) for p in h.runs) > 50
    assert s["decode_runs"] == len(h.decode_measured) == len(runs)  # every decode sweep held out in turn
    # each decode run predicted without its sweep: one sweep recomputed
    sweeps = held_out.decode_groups("run")
    one = sweeps == sweeps[llama][0]
    again = step_predictions.predict_decode(held_out.Fold((), one).fit(step_features.SHIPPED_FORM))
    np.testing.assert_allclose(h.decode_predicted[one], again[one], rtol=1e-8)
    assert not np.allclose(again[one], step_predictions.predict_decode(step_fit.fit(step_features.SHIPPED_FORM))[one])


def test_the_calibrated_step_adds_the_new_terms_as_the_expression_says():
    m, hw = resolve("qwen3-235b-a22b", "H200")
    base = layout.ParallelStep(st.step_model(m, hw), layout.Layout(8))
    c = dataclasses.replace(cal.shipped_calibration(), per_position_s=1e-4, per_draft_pass_s=2e-3,
                            per_position_by_vendor={})
    plain = cal.CalibratedStepModel(base, hw, calibration=cal.shipped_calibration())
    more = cal.CalibratedStepModel(base, hw, calibration=c)
    B, T, S = np.float64(16), np.float64(4), np.float64(2048)
    e0, a0 = cal.shipped_calibration().per_position(hw), cal.shipped_calibration().per_draft_pass_s
    # e per extra position in each of the model's attention layers, for a model of L_ref = 80 layers
    scale = m.n_layers / 80.0 if c.fixed_layers_ref else 1.0
    assert c.fixed_layers_ref in (0.0, 80.0) and m.n_layers == 94
    assert more.time(B, T, S) - plain.time(B, T, S) == pytest.approx((1e-4 - e0) * scale * 16 * 3)
    p = spec.Deployment("qwen3-235b-a22b", "H200", step_time=c, tp=8, c_draft=0.05).pricing()
    q = spec.Deployment("qwen3-235b-a22b", "H200", step_time="calibrated", tp=8, c_draft=0.05).pricing()
    diff = p.step(np.float64(3), B, S) - q.step(np.float64(3), B, S)
    assert diff == pytest.approx((1e-4 - e0) * scale * 16 * 3 + 3 * (2e-3 - a0))
    # tau: each token of the step in each layer
    t = dataclasses.replace(c, token_layer_by_vendor={"NVIDIA": 1e-6})
    tau = cal.CalibratedStepModel(base, hw, calibration=t)
    assert tau.time(B, T, S) - more.time(B, T, S) == pytest.approx(1e-6 * 16 * 4 * m.n_layers)


def test_each_chip_takes_its_vendors_time_per_position():
    shipped = cal.shipped_calibration()
    by_vendor = dataclasses.replace(shipped, per_position_by_vendor={"NVIDIA": 1e-4, "AMD": 2e-4}, per_position_s=3e-4)
    none = dataclasses.replace(shipped, per_position_by_vendor={}, per_position_s=0.0)
    m = resolve("deepseek-v3", None)[0]
    B, S = np.float64(32), np.float64(2048)
    for chip, e in (("H200", 1e-4), ("MI300X", 2e-4)):
        hw = resolve(None, chip)[1]
        split = layout.ParallelStep(st.step_model(m, hw), layout.Layout(8))
        step = cal.CalibratedStepModel(split, hw, calibration=by_vendor)
        zero = cal.CalibratedStepModel(split, hw, calibration=none)
        # e per extra position in each of DeepSeek-V3's 61 attention layers, for a model of L_ref = 80 layers
        scale = 61 / 80.0 if shipped.fixed_layers_ref else 1.0
        assert m.step_architecture().attention_layers == 61 and shipped.fixed_layers_ref in (0.0, 80.0)
        assert step.time(B, np.float64(3), S) - zero.time(B, np.float64(3), S) == pytest.approx(e * scale * 32 * 2)
    vendorless = dataclasses.replace(resolve(None, "H200")[1], vendor="")
    assert by_vendor.per_position(vendorless) == 3e-4
    # the shipped calibration holds what its form fits: a pooled term is one constant for every chip,
    # and a term the form leaves out is zero
    form = step_features.SHIPPED_FORM
    assert shipped.per_position_by_vendor == {}
    assert (shipped.per_position_s > 0) == ("per_position" in form.terms)
    extra = set(shipped.extra_flops_by_vendor.values())
    assert ("extra_flops" in form.terms) == (extra != {0.0} and bool(extra))
    if "extra_flops" in form.pooled:
        assert len(extra) == 1
    assert cal.Calibration.from_json(shipped.to_json()) == shipped


def test_a_bad_time_per_position_by_vendor_is_one_line_naming_the_field(tmp_path):
    data = cal.shipped_calibration().to_json()
    for bad, field in (({"AMD": -1.0}, "per_position_by_vendor.AMD"), ([1.0], "per_position_by_vendor")):
        path = tmp_path / "cal.json"
        path.write_text(json.dumps({**data, "per_position_by_vendor": bad}))
        with pytest.raises(ValueError, match=rf"^{path}: {field}") as info:
            own_fit.read_calibration(path)
        assert "\n" not in str(info.value)


def _doubled(monkeypatch, ids):
    """spec_runs() with the measured values of the runs ``ids`` changed (each by its own factor, so that
    ratios between draft lengths change too), except at a run's smallest batch where its acceptance is
    fitted there (that batch sets the acceptance and is not scored)."""
    def changed(r):
        keep = min(r.batches) if spec_runs.alpha_fitted(r) else None
        return tuple((b, g, v if b == keep else (1.5 + 0.1 * i) * v) for i, (b, g, v) in enumerate(r.points))
    runs = tuple(dataclasses.replace(r, points=changed(r)) if r.id in ids else r for r in spec_runs.spec_runs())
    monkeypatch.setattr(spec_runs, "spec_runs", lambda: runs)
    step_fit._ROWS.clear()
    step_fit._MATRICES.clear()
    step_predictions._POINTS.clear()
    step_fit._problem.cache_clear()


@pytest.fixture(scope="module")
def glm_fold():
    """The GLM family held out, its form chosen without it: (form, {run: prediction}), computed once for the tests
    that read it (a fold takes minutes)."""
    form, fold, _ = held_out.held_out_fold("model", "GLM", choose=True)
    return form, fold


def test_a_family_held_out_is_predicted_without_any_of_its_runs(monkeypatch, glm_fold):
    glm = held_out.groups("model")["GLM"]
    assert set(glm) == {r.id for r in spec_runs.spec_runs() if resolve(r.model, None)[0].name.startswith("GLM")}
    form, before = glm_fold
    try:
        _doubled(monkeypatch, glm)
        form2, after, _ = held_out.held_out_fold("model", "GLM", choose=True)
    finally:
        monkeypatch.undo()
        for cache in (step_fit._ROWS, step_fit._MATRICES, step_predictions._POINTS):
            cache.clear()
        step_fit._problem.cache_clear()
    assert form2 == form  # chosen without the family too
    for rid in glm:
        np.testing.assert_allclose(after[rid].predicted, before[rid].predicted, rtol=1e-9)
        assert not np.allclose(after[rid].measured[after[rid].scored], before[rid].measured[before[rid].scored])
    # the decode runs are Llama-3.3-70B (InferenceMAX) and DeepSeek-R1 (InferenceX): out with their family,
    # their source or their chip; with one run held out, none is
    runs, _ = step_fit.decode_rows()
    for by, group, of in (("model", "Llama", lambda r: r.family), ("model", "DeepSeek", lambda r: r.family),
                          ("source", "InferenceX", lambda r: r.source), ("chip", "MI355X", lambda r: r.chip)):
        np.testing.assert_array_equal(held_out._fold(by, group).decode, [of(r) == group for r in runs])
    assert not held_out._fold("model", "GLM").decode.any() and not held_out._fold("run", "sglang-autospec").decode.any()


def test_the_stored_hold_outs_are_what_held_out_computes(glm_fold):
    stored = held_out.stored_held_out("model")
    form, fold = glm_fold
    assert stored.forms["GLM"] == form
    for rid, p in fold.items():
        q = stored.run(rid)
        for name in ("predicted", "measured"):
            np.testing.assert_allclose(getattr(q, name), getattr(p, name), rtol=1e-9, err_msg=name)
    # the intervals stored are the cross-conformal ones over model families, read off the stored points
    again = held_out.with_intervals(stored)
    for p, q in zip(stored.runs, again.runs):
        np.testing.assert_allclose(p.lo, q.lo, rtol=1e-9)
        np.testing.assert_allclose(p.hi, q.hi, rtol=1e-9)


def test_a_held_out_summary_is_read_off_its_points():
    held = held_out.stored_held_out("model")
    s = held.summary()
    scored = [(p, p.scored) for p in held.runs]
    e = np.concatenate([np.abs(p.predicted / p.measured - 1)[k] for p, k in scored])
    assert s["median_abs_error"] == pytest.approx(np.median(e)) and s["p90_abs_error"] == pytest.approx(
        np.percentile(e, 90))
    assert s["run_median_abs_error"] == pytest.approx(np.median(
        [np.median(np.abs(p.predicted / p.measured - 1)[k]) for p, k in scored if k.any()]))
    right = total = inside = n = 0
    for p, k in scored:
        for m, q, lo, hi, ok in zip(p.measured, p.predicted, p.lo, p.hi, k):
            if ok:
                inside, n = inside + (lo <= m <= hi), n + 1
                if p.run.quantity == "speedup":
                    right, total = right + ((m > 1) == (q > 1)), total + 1
    assert s["sign_right"] == pytest.approx(right / total) and s["interval_coverage"] == pytest.approx(inside / n)
    # how much the intervals cover is a target the book and benchmarks/bench_step_fit.py report against
    # (70-90 %), met or not, rather than a test: an interval narrower than its coverage is a finding
    assert 0.0 < s["interval_coverage"] < 1.0


def test_an_interval_is_the_draws_quantiles_spread_by_the_residual():
    rng = np.random.default_rng(3)
    draws = np.exp(rng.normal(0.3, 0.1, size=(200, 4)))
    lo, hi = cal.interval_of(draws, 0.0)
    # the quantiles are interpolated in log speed-up, so equal to the draws' own to within their spacing
    np.testing.assert_allclose(lo, np.quantile(draws, 0.1, axis=0), rtol=1e-4)
    np.testing.assert_allclose(hi, np.quantile(draws, 0.9, axis=0), rtol=1e-4)
    # with a spread and one draw: the log-normal's own 10th and 90th percentiles (z = 1.2816), to the grid's step
    lo, hi = cal.interval_of(np.array([[2.0]]), 0.2)
    assert np.log(hi[0] / 2.0) == pytest.approx(0.2 * 1.2816, rel=0.05)
    assert np.log(2.0 / lo[0]) == pytest.approx(0.2 * 1.2816, rel=0.05)


# --- speclib fit ------------------------------------------------------------------------------

TRUE = dict(a=0.006, d=5e-5, e=8e-5, a_d=1.2e-3)


def _vllm_file(path, conc, gamma, tpot_ms, accept=None):
    rec = {"date": "20261125-000000", "backend": "vllm", "model_id": "deepseek-ai/DeepSeek-V3",
           "tokenizer_id": "deepseek-ai/DeepSeek-V3", "num_prompts": 10 * conc, "request_rate": "inf",
           "burstiness": 1.0, "max_concurrency": conc, "duration": 100.0, "completed": 10 * conc,
           "total_input_tokens": 10 * conc * 1024, "total_output_tokens": 10 * conc * 1024,
           "request_throughput": 1.0, "output_throughput": 1000.0, "total_token_throughput": 2000.0,
           "mean_ttft_ms": 100.0, "median_ttft_ms": 100.0, "mean_tpot_ms": tpot_ms, "median_tpot_ms": tpot_ms,
           "mean_itl_ms": tpot_ms, "median_itl_ms": tpot_ms}
    if gamma:
        rec.update({"spec_decode_acceptance_length": accept, "spec_decode_num_drafts": 1000,
                    "spec_decode_draft_tokens": 1000 * gamma,
                    "spec_decode_accepted_tokens": int(round(1000 * (accept - 1))),
                    "spec_decode_acceptance_rate": 100.0 * (accept - 1) / gamma})
    path.write_text(json.dumps(rec))
    return path


def _synthetic(tmp_path, batches=(1, 8, 32), gammas=(2, 4)):
    """Runs generated from known constants by the written-out step (not by the fit): one GPU's share of
    the step over 8 H200s (speclib.core.layout) at the shipped calibration's speed, attention's factor and
    time per MoE layer, plus its collectives; the prefill of arriving requests at its roofline and the
    shipped efficiency."""
    m, hw = resolve("deepseek-v3", "H200")
    shipped = cal.shipped_calibration()
    mu, nu, moe = shipped.roofline_factor["H200"], shipped.attention_factor(hw), shipped.moe_layer(hw) * 58
    split = Deployment(m, hw, tp=8).parallel_step()
    S = 1024 + (1024 - 1) / 2

    def kernels(B, T):
        B, T, S_ = np.float64(B), np.float64(T), np.float64(S)
        return float(mu * split.kernel_time(B, T, S_) + nu * split.component_times(B, T, S_)["attention"]
                     + split.communication(B, T)) + moe

    files = []
    for B in batches:
        roof = kernels(B, 1)
        pre = float(split.prefill_share(np.float64(B), 1024, 1024)) * shipped.prefill_factor
        t1 = roof + TRUE["a"] + TRUE["d"] * B
        files.append(_vllm_file(tmp_path / f"base-{B}.json", B, 0, (t1 + pre) * 1e3))
        for g in gammas:
            rv = kernels(B, g + 1)
            draft = 0.05 * g * (roof + TRUE["a"] + TRUE["d"] * B)
            t = rv + TRUE["a"] + TRUE["d"] * B + TRUE["e"] * B * g + draft + TRUE["a_d"] * g
            n = 1 + 0.7 * (1 - 0.7 ** g) / 0.3
            files.append(_vllm_file(tmp_path / f"mtp{g}-{B}.json", B, g, (t / n + pre) * 1e3, round(n, 6)))
    return files


def _run(*args):
    return subprocess.run([sys.executable, "-m", "speclib", *map(str, args)], capture_output=True, text=True)


def test_speclib_fit_recovers_the_constants_and_schedule_prices_with_them(tmp_path):
    files = _synthetic(tmp_path)
    out = tmp_path / "mine.json"
    r = _run("fit", *files, "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8, "--output", out)
    assert r.returncode == 0, r.stderr
    got = own_fit.read_calibration(out)
    assert got.fixed_s["H200"]["vLLM"] == pytest.approx(TRUE["a"], rel=0.02)
    assert got.per_sequence_s == pytest.approx(TRUE["d"], rel=0.05)
    assert got.per_position_s == pytest.approx(TRUE["e"], rel=0.05)
    assert got.per_draft_pass_s == pytest.approx(TRUE["a_d"], rel=0.05)
    assert "error" in r.stdout and len(r.stdout.splitlines()) == 2 + len(files)
    s = _run("schedule", "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8, "--calibration", out,
             "--alpha", 0.7, "--max-batch", 32, "--engine", "vllm")
    assert s.returncode == 0, s.stderr
    g = _run("gamma", "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8, "--calibration", out,
             "--alpha", 0.7, "--batch", 8, "--seq", 1500, "--json")
    assert g.returncode == 0, g.stderr
    sweep = _run("sweep", "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8, "--calibration", out,
                 "--alpha", 0.7, "--batch", "1,8,64", "--seq", 1500)
    assert sweep.returncode == 0 and str(got) in sweep.stdout, sweep.stderr
    prof = _run("profile", "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8, "--calibration", out,
                "--batch", "1,8,64", "--seq", 1500)
    assert prof.returncode == 0 and prof.stdout.startswith("batch_size"), prof.stderr
    shipped = _run("gamma", "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8, "--step-time", "calibrated",
                   "--alpha", 0.7, "--batch", 8, "--seq", 1500, "--json")
    assert json.loads(g.stdout) != json.loads(shipped.stdout)


@pytest.mark.parametrize("case", ["one_batch", "spec_one_batch", "no_accept", "empty", "nan"])
def test_speclib_fit_refuses_data_that_cannot_identify_a_term(tmp_path, case):
    if case == "one_batch":
        files = _synthetic(tmp_path, batches=(8,))
        field = "max_concurrency"
    elif case == "spec_one_batch":
        files = _synthetic(tmp_path, batches=(1, 8), gammas=())
        files += [_vllm_file(tmp_path / "s.json", 8, 3, 20.0, 2.5)]
        field = "max_concurrency"
    elif case == "no_accept":
        files = _synthetic(tmp_path, gammas=())
        bad = json.loads(files[0].read_text())
        bad.update({"spec_decode_num_drafts": 10})
        files.append(_vllm_file(tmp_path / "x.json", 4, 0, 20.0))
        files.append(tmp_path / "x.json")
        r = _run("fit", *files, "--gamma", 3, "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8,
                 "--output", tmp_path / "o.json")
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "o.json").exists()
        return
    elif case == "empty":
        (tmp_path / "e.json").write_text("")
        files = [tmp_path / "e.json"]
        field = "e.json"
    else:
        f = _vllm_file(tmp_path / "n.json", 4, 0, 20.0)
        f.write_text(f.read_text().replace('"mean_tpot_ms": 20.0', '"mean_tpot_ms": NaN'))
        files, field = [f], "mean_tpot_ms"
    out = tmp_path / "o.json"
    r = _run("fit", *files, "--model", "deepseek-v3", "--hardware", "h200", "--tp", 8, "--output", out)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and field in r.stderr
    assert not out.exists()


def test_a_bad_calibration_file_is_one_line_naming_the_field(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"roofline_factor": {"H200": 1.0}, "fixed_s": {"H200": {"vLLM": -1}},
                             "per_sequence_s": 0.0}))
    r = _run("gamma", "--model", "deepseek-v3", "--hardware", "h200", "--calibration", p, "--alpha", 0.7,
             "--batch", 8, "--seq", 1500)
    assert r.returncode == 2 and "fixed_s.H200.vLLM" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_real_published_result_file_alone_is_refused_for_want_of_batches(tmp_path):
    """vLLM's own result format, a real file (tests/data/bench/SOURCES.md): one concurrency is too few to
    separate the fixed time from the time per sequence."""
    from pathlib import Path

    real = Path(__file__).parent / "data" / "bench" / "vllm_llama8b_h100_c8_excerpt.json"
    out = tmp_path / "o.json"
    r = _run("fit", real, "--model", "llama-3.1-8b", "--hardware", "h100", "--output", out)
    assert r.returncode == 2 and "max_concurrency" in r.stderr and real.name in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("run_id", ["sglang-eagle3-llama33-70b-h100", "eagle3-glm47-flash-h100"])
def test_a_tree_verifies_the_tokens_its_source_sets(run_id):
    # SGLang's --speculative-num-draft-tokens is the tree the target verifies per sequence (root included)
    import re

    sweep = next(s for s in engines.load_sweeps() if s.id == run_id)
    stated = int(re.search(r"num-draft-tokens (\d+)", sweep.drafter["settings"]).group(1))
    run = spec_runs.spec_run(run_id)
    gamma = run.points[0][1]
    assert run.width(gamma) == stated > gamma + 1


def test_the_prefill_a_served_run_carries_is_priced_as_the_expression_says():
    from speclib.formulas import workload as fw

    run = spec_runs.spec_run("sglang-mtp-deepseek-v3-mi300x-random")  # 3200 / 800, prefill on the same GPUs
    assert run.prefill_lengths == (3200.0, 800.0)
    assert not spec_runs.spec_run("lmsys-small-g3").prefill_lengths  # disaggregated: prefill on other nodes
    assert not spec_runs.spec_run("vllm-eagle3-llama31-8b-bs1").prefill_lengths  # lengths not stated
    f = step_fit.fit()
    run = dataclasses.replace(run, alpha=f.alphas[run.id])
    steps = step_features.SpecSteps(run)
    b, g = 64, 2
    plain, spec_ = steps.plain(b), steps.spec(b, g)
    p = plain["prefill"]
    assert p > 0 and spec_["prefill"] == pytest.approx(run.committed(g) * p)
    no_prefill = {k: v for k, v in plain.items() if k != "prefill"}
    spec_no = {k: v for k, v in spec_.items() if k != "prefill"}
    expected = float(fw.served_speedup_expr.subs({fw.N_c: run.committed(g), fw.C_0: f.time(no_prefill),
                                                  fw.C_g: f.time(spec_no), fw.p_s: f.theta["prefill"] * p}))
    pred = step_predictions.predict_run(f, run)
    assert pred.predicted[(pred.batch == b) & (pred.gamma == g)][0] == pytest.approx(expected, rel=1e-9)
    assert 1.0 < expected < run.committed(g) * f.time(no_prefill) / f.time(spec_no)


def test_the_targets_are_read_off_the_held_out_points():
    model, run = held_out.stored_held_out("model"), held_out.stored_held_out("run")
    rows = {what: (value, met) for what, _, value, met in step_report.targets(model, run)}
    errors = np.concatenate([np.abs(p.predicted / p.measured - 1)[p.scored] for p in model.runs])
    median, p90 = float(np.median(errors)), float(np.percentile(errors, 90))
    assert rows["by model family: speed-up, median |error|"] == (f"{100 * median:.1f} %",
                                                                 "yes" if median <= 0.12 else "no")
    assert rows["by model family: speed-up, 90th percentile |error|"] == (f"{100 * p90:.1f} %",
                                                                          "yes" if p90 <= 0.30 else "no")
    v4 = model.run("vllm-v4pro-mi355x")
    at_32, meas = (float(x[list(v4.batch).index(32)]) for x in (v4.predicted, v4.measured))
    assert meas == pytest.approx(0.63, abs=0.005)  # the source's number
    met = at_32 < 1 or abs(at_32 / meas - 1) <= 0.25
    assert rows["DeepSeek-V4-Pro, 8 x MI355X, concurrency 32, held out by model family"] == (
        f"{at_32:.2f}\u00d7", "yes" if met else "no")
    _, _, dirs = _decisions_by_hand(model.runs)
    value, met = rows["by model family: the gain's direction with batch (falling, flat, rising)"]
    right, n = (int(x) for x in value.split(" of "))
    assert right / n == pytest.approx(dirs) and met == ("yes" if dirs >= 0.9 else "no")


def test_the_best_draft_is_the_argmax_of_the_priced_speedups():
    run = spec_runs.spec_run("vllm-peagle-gptoss120b")
    f = held_out._fold("model", run.family).fit(step_features.SHIPPED_FORM)
    best = step_predictions.best_draft(f, run)
    steps = step_features.SpecSteps(dataclasses.replace(
        run, alpha=step_fit.fit_alpha(f, run) if spec_runs.alpha_fitted(run) else run.alpha), f.form)
    alpha = step_fit.fit_alpha(f, run) if spec_runs.alpha_fitted(run) else run.alpha
    for b, g in best.items():  # brute force over 0..8, committed tokens from the i.i.d. sum
        gains = [1.0] + [sum(alpha ** i for i in range(k + 1)) * f.time(steps.plain(b)) / f.time(steps.spec(b, k))
                         for k in range(1, 9)]
        assert g == int(np.argmax(gains))
    # as batch grows the priced best draft shortens: the extra positions cost more when more sequences verify
    assert best[max(best)] < best[min(best)]


def test_a_decode_run_runs_what_memory_holds():
    runs, _ = step_fit.decode_rows()
    r = next(r for r in runs if r.family == "Llama" and r.tp == 1 and r.chip == "H200")
    held = int(r.deployment().max_batch(r.context))
    above = dataclasses.replace(r, concurrency=held + 64)
    assert above.running == held
    f_above = step_features.decode_features(above)
    f_held = step_features.decode_features(dataclasses.replace(r, concurrency=held))
    assert f_above == f_held  # the queued sequences do not enter the step


def test_a_drafter_pass_costs_the_fit_and_a_deployment_alike():
    # the fit prices a measured run's MTP passes as a calibrated Deployment prices its drafter preset's:
    # roofline, fixed time per layer, time per MoE layer, tau and the layers' collectives
    run = spec_runs.spec_run("sglang-docs")
    f = step_fit.fit(step_features.SHIPPED_FORM)
    c = dataclasses.replace(f.calibration(), token_layer_by_vendor={"NVIDIA": 2e-7, "AMD": 2e-7})
    fc = step_fit.Fit.of(c)
    steps = step_features.SpecSteps(run, step_fit.Fit.of(c).form)
    dep = Deployment(run.model, run.chip, tp=run.gpus, engine=step_features.engine_key(run.engine),
                     step_time=c, drafter="deepseek-v3-mtp", rollback=step_features.ENGINE_ROLLBACK)
    priced = dep.pricing()
    B, S, g = np.float64(32), np.float64(run.context), 3
    spec_step = {k: v for k, v in steps.spec(B, g).items() if k != "prefill"}  # the closed loop's, not the drafter's
    with_draft = fc.time(spec_step) - fc.time(steps.step(B, g + 1))
    assert with_draft == pytest.approx(float(priced.drafter.time(np.float64(g), B, S)), rel=1e-6)


def test_each_constant_lies_in_its_bootstrap_interval_in_its_unit():
    f = step_fit.fit(step_features.SHIPPED_FORM)
    rows = {name: (value, interval) for name, value, interval, _, _ in step_report.constants()}
    # a constant at zero with its whole interval there is said not to be identified, one whose interval reaches
    # zero not bounded from it
    for name, value, interval, _, note in step_report.constants():
        lo, hi = (float(x) for x in interval.split(" \u2013 "))
        assert ("not identified" in note) == (value == 0 and hi == 0), name
        assert ("not bounded" in note) == (lo <= 0 < hi), name
    for term in ("per_position", "extra_flops"):  # whichever the shipped form holds
        if term in f.theta:
            assert rows[term][0] == pytest.approx(f.theta[term] * step_report.UNITS[term][0])
    assert rows["per_sequence"][0] == pytest.approx(f.theta["per_sequence"] * 1e6)
    assert rows["moe_fixed, NVIDIA"][0] == pytest.approx(f.theta[("moe_fixed", "NVIDIA")] * 1e6)
    for name, (value, interval) in rows.items():
        lo, hi = (float(x) for x in interval.split(" \u2013 "))
        assert lo <= value * (1 + 1e-9) + 1e-12 and value <= hi * (1 + 1e-9) + 1e-12, name
