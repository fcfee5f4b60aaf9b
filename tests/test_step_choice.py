"""The nested choice between the calibrated step and the measured step plus
host work (speclib.calibration.step_choice): the chooser keeps the candidate
whose inner error is lower, a tie goes to the measured step, no held-out
group's measured TPOT reaches its own choice or prediction, and on the
project's runs each fold's choice follows from inner scores computed on the
same points for both candidates."""
from types import SimpleNamespace

import numpy as np
import pytest

from speclib.calibration import held_out as ho
from speclib.calibration import measured_host as mh
from speclib.calibration import step_choice as sc

M, C = sc.CANDIDATES  # "measured+host", "calibrated"


# --- a synthetic setup: the chooser alone, on arrays and callables ----------------------

GROUPS = np.repeat(np.array(["a", "b", "c", "d"]), 5)
#: A fixed factor a point each (no truth in it), so that errors differ between points.
SPREAD = 1.0 + 0.1 * np.sin(np.arange(GROUPS.size))


def _truth(seed=0):
    return np.random.default_rng(seed).uniform(0.01, 0.05, GROUPS.size)


def _setup(truth, bias):
    """Candidates that predict a point as the mean truth of the points outside
    F and its group, times (1 + ``bias[candidate]``); the null, the median of
    the same points. Every callable reads the truth only outside F and the
    point's group, as a fit without them would."""
    def inner(c, F):
        out = np.full(truth.size, np.nan)
        for g in set(GROUPS.tolist()) - {F}:
            keep = (GROUPS != F) & (GROUPS != g)
            out[GROUPS == g] = truth[keep].mean() * (1.0 + bias[c]) * SPREAD[GROUPS == g]
        return out

    def null(F):
        out = np.full(truth.size, np.nan)
        for g in set(GROUPS.tolist()) - {F}:
            keep = (GROUPS != F) & (GROUPS != g)
            out[GROUPS == g] = np.median(truth[keep]) * 1.5
        return out

    outer = {}
    for c in (M, C):
        p = np.full(truth.size, np.nan)
        for F in set(GROUPS.tolist()):
            p[GROUPS == F] = truth[GROUPS != F].mean() * (1.0 + bias[c])
        outer[c] = p
    return outer, inner, null


def test_the_chooser_keeps_the_candidate_whose_inner_error_is_lower():
    """Inner predictions off the truth by a set relative error a candidate: the smaller one wins every fold."""
    truth = _truth()
    outer, _, null = _setup(truth, {M: 0.0, C: 0.5})  # outer predictions that differ
    for worse, better in ((M, C), (C, M)):
        off = {worse: 0.3, better: 0.1}

        def inner(c, F):
            return np.where(GROUPS != F, truth * (1.0 + off[c] * SPREAD), np.nan)

        chosen, scores, points, predicted = sc.choose_nested(GROUPS, truth, outer, inner, null, (M, C))
        assert set(chosen.values()) == {better}
        for F in chosen:
            assert scores[F][better] < scores[F][worse]
            assert points[F] == int((GROUPS != F).sum())
            np.testing.assert_array_equal(predicted[GROUPS == F], outer[better][GROUPS == F])


def test_a_tie_goes_to_the_measured_step():
    truth = _truth()
    outer, inner, null = _setup(truth, {M: 0.2, C: 0.2})
    chosen, scores, _, _ = sc.choose_nested(GROUPS, truth, outer, inner, null, (M, C))
    assert all(scores[F][M] == scores[F][C] for F in scores)
    assert set(chosen.values()) == {M}
    # the order named decides, not the candidates' names
    chosen, _, _, _ = sc.choose_nested(GROUPS, truth, outer, inner, null, (C, M))
    assert set(chosen.values()) == {C}


def test_a_held_out_groups_truth_never_reaches_its_own_choice_or_prediction():
    truth = _truth()
    bias = {M: 0.15, C: -0.12}
    base = sc.choose_nested(GROUPS, truth, *_setup(truth, bias), (M, C))
    for F in ("a", "c"):
        moved = truth.copy()
        moved[GROUPS == F] *= np.linspace(0.1, 30.0, 5)
        chosen, scores, points, predicted = sc.choose_nested(GROUPS, moved, *_setup(moved, bias), (M, C))
        assert chosen[F] == base[0][F] and scores[F] == base[1][F] and points[F] == base[2][F]
        np.testing.assert_array_equal(predicted[GROUPS == F], base[3][GROUPS == F])
        # the same change does reach the other folds' inner scores (the check can fail)
        assert any(scores[G] != base[1][G] for G in scores if G != F)


def test_the_inner_score_is_taken_on_the_points_both_candidates_and_the_null_have():
    truth = _truth()
    outer, inner, null = _setup(truth, {M: 0.1, C: 0.3})

    def holed(c, F):
        p = inner(c, F).copy()
        if c == C:
            p[:3] = np.nan  # group "a"'s first points: the calibrated step has none
        return p

    _, scores, points, _ = sc.choose_nested(GROUPS, truth, outer, holed, null, (M, C))
    F = "b"
    ok = (GROUPS != F) & (np.arange(GROUPS.size) >= 3)
    assert points[F] == int(ok.sum())
    for c in (M, C):
        assert scores[F][c] == pytest.approx(sc.inner_score(truth[ok], inner(c, F)[ok], null(F)[ok]))


def test_the_inner_score_is_the_median_error_over_the_nulls():
    y = np.array([1.0, 2.0, 4.0])
    assert sc.inner_score(y, y * np.array([1.1, 0.8, 1.0]), y * 1.5) == pytest.approx(0.1 / 0.5)
    assert sc.inner_score([], [], []) == float("inf")


def test_the_inner_unit_is_the_outer_one_while_two_of_its_groups_are_left():
    runs = [SimpleNamespace(family=f, chip="H100") for f in ("A", "A", "B", "C")]
    assert sc.inner_grouping("model", runs, "A") == "model"
    assert sc.inner_grouping("model", runs[:3], "A") == "chip"  # one family left: hold out its chips


# --- on the project's runs ------------------------------------------------------------

@pytest.fixture(scope="module")
def by_chip():
    return sc.step_choice("chip")


@pytest.fixture(scope="module")
def by_model():
    return sc.step_choice("model")


def test_the_outer_predictions_are_the_candidates_own_hold_outs(by_chip):
    host = mh.held_out("chip")
    assert by_chip.runs == host.runs
    np.testing.assert_array_equal(by_chip.outer[M], host.predicted)
    np.testing.assert_array_equal(by_chip.outer[C], host.calibrated)
    np.testing.assert_array_equal(by_chip.null, host.null)


def test_each_folds_choice_follows_its_inner_scores_on_the_same_points(by_chip, by_model):
    for c in (by_chip, by_model):
        for F, chosen in c.chosen.items():
            mine = c.groups == F
            # nothing of F is predicted in its own inner folds
            assert all(np.isnan(c.inner[F][k][mine]).all() for k in (M, C)) and np.isnan(c.inner_null[F][mine]).all()
            ok = ~mine & np.isfinite(c.inner_null[F]) & np.isfinite(c.inner[F][M]) & np.isfinite(c.inner[F][C])
            assert c.points[F] == int(ok.sum()) > 0
            for k in (M, C):
                assert c.scores[F][k] == pytest.approx(sc.inner_score(c.measured[ok], c.inner[F][k][ok],
                                                                      c.inner_null[F][ok]))
            assert chosen == (C if c.scores[F][C] < c.scores[F][M] else M)
            np.testing.assert_array_equal(c.predicted[mine], c.outer[chosen][mine])


def test_an_inner_cell_is_each_candidate_fitted_without_both_groups(by_chip):
    F, G = "H100", "B300"
    runs = np.array(by_chip.runs, dtype=object)
    test = by_chip.groups == G
    train = (by_chip.groups != F) & ~test
    f = mh.fit(list(runs[train]))
    np.testing.assert_allclose(by_chip.inner[F][M][test], f.tpot(list(runs[test])), rtol=1e-12)
    cal = ho.predict_decode(ho._fold("chip", F).join(ho._fold("chip", G)).fit(ho.stored_held_out("chip").forms[F]))
    from speclib.evidence import decode_runs as dr

    at = {r: i for i, r in enumerate(dr.decode_runs())}
    np.testing.assert_allclose(by_chip.inner[F][C][test], cal[[at[r] for r in runs[test]]], rtol=1e-12)


def test_by_family_the_inner_folds_hold_out_a_chip_of_the_other_family(by_model):
    assert set(by_model.chosen) == {"DeepSeek", "Llama"}
    assert set(by_model.inner_by.values()) == {"chip"}
    for F, groups in by_model.inner_groups.items():
        assert set(groups) == {mh.GROUPINGS["chip"](r) for r, g in zip(by_model.runs, by_model.groups) if g != F}


def test_the_medians_stand_on_the_same_runs(by_chip):
    m = by_chip.medians()
    ok = by_chip.same_points()
    assert m["runs"] == int(ok.sum())
    err = lambda p: float(np.median(np.abs(p[ok] / by_chip.measured[ok] - 1.0)))  # noqa: E731
    assert m["nested"] == pytest.approx(err(by_chip.predicted))
    assert m["null"] == pytest.approx(err(by_chip.null))
    for k in (M, C):
        assert m[k] == pytest.approx(err(by_chip.outer[k]))


# --- the speculative speed-ups: the same nested choice -------------------------------------

import dataclasses  # noqa: E402

from speclib.evidence import spec_runs as sr  # noqa: E402


def _spec_setup(off, preds=None):
    """Outer and inner predictions of the stored hold-out by family's runs (the
    truth as stored), each candidate's predictions the truth times (1 +
    ``off[candidate]`` x a fixed spread a point): no fit, only the chooser."""
    preds = list(ho.stored_held_out("model").runs if preds is None else preds)
    groups = {p.run.id: p.run.family for p in preds}

    def cand(c):
        return [dataclasses.replace(p, predicted=p.measured * (1.0 + off[c] * (1.0 + 0.5 * np.cos(np.arange(p.measured.size)))))
                for p in preds]

    outer = {c: {p.run.id: p for p in cand(c)} for c in (M, C)}
    inner = {F: {c: cand(c) for c in (M, C)} for F in set(groups.values())}  # F's own runs left in: dropped by the chooser
    return groups, outer, inner


def test_the_speculative_choice_follows_the_inner_scores():
    for worse, better in ((M, C), (C, M)):
        groups, outer, inner = _spec_setup({worse: 0.4, better: -0.02})
        chosen, scores, points, predicted = sc.choose_spec(groups, outer, inner, (M, C))
        assert set(chosen.values()) == {better}
        for F in chosen:
            assert scores[F][better][1] > scores[F][worse][1]  # the error skill
            assert scores[F][better][2] < scores[F][worse][2]  # the median |error|
    # a tie (the same predictions) goes to the measured step, and to the first named
    groups, outer, inner = _spec_setup({M: 0.1, C: 0.1})
    assert set(sc.choose_spec(groups, outer, inner, (M, C))[0].values()) == {M}
    assert set(sc.choose_spec(groups, outer, inner, (C, M))[0].values()) == {C}


def test_a_folds_measured_speedups_never_reach_its_own_choice():
    setup = _spec_setup({M: 0.05, C: 0.08})
    base = sc.choose_spec(*setup, (M, C))
    groups, outer, inner = setup
    for F in ("DeepSeek", "Kimi"):
        def move(p):  # F's measured speed-ups changed, every prediction kept
            return dataclasses.replace(p, measured=p.measured * np.linspace(0.2, 5.0, p.measured.size)) \
                if groups[p.run.id] == F else p

        moved_outer = {c: {k: move(p) for k, p in v.items()} for c, v in outer.items()}
        moved_inner = {G: {c: [move(p) for p in v] for c, v in cells.items()} for G, cells in inner.items()}
        chosen, scores, points, predicted = sc.choose_spec(groups, moved_outer, moved_inner, (M, C))
        assert chosen[F] == base[0][F] and scores[F] == base[1][F] and points[F] == base[2][F]
        assert all(predicted[k].predicted is base[3][k].predicted for k, g in groups.items() if g == F)
        # the same change does reach the other folds' inner scores (the check can fail)
        assert any(scores[G] != base[1][G] for G in scores if G != F)


def test_a_stored_inner_cell_is_the_candidates_fitted_without_both_groups_whatever_fs_measured_speedups():
    """One cell recomputed (F Qwen, G gpt by family) with F's measured speed-ups
    changed: the measured step's e_pos is fitted on the speculative runs outside
    F and G, so G's predictions are the stored ones."""
    F, G = "Qwen", "gpt"
    spec = tuple(dataclasses.replace(r, points=tuple((b, g, v * (0.3 + i)) for i, (b, g, v) in enumerate(r.points)))
                 if r.family == F else r for r in sr.spec_runs())
    cell = sc.spec_inner_cell("model", F, G, ho.stored_held_out("model").forms[F], spec=spec)
    stored = sc.stored_spec_choice("model")
    for c in (M, C):
        mine = [p for p in stored.inner[F][c] if p.run.family == G]
        assert [p.run.id for p in cell[c]] == [p.run.id for p in mine] and mine
        for p, q in zip(cell[c], mine):
            np.testing.assert_allclose(p.predicted, q.predicted, rtol=1e-6)
            np.testing.assert_array_equal(p.scored, q.scored)
    assert sc.spec_inner_cell("model", "DeepSeek", "Llama", None) is None  # no decode run left: skipped


@pytest.fixture(scope="module", params=["model", "chip"])
def spec_choice(request):
    return sc.stored_spec_choice(request.param)


def test_the_nested_predictions_of_a_fold_are_its_chosen_candidates_outer_ones(spec_choice):
    c = spec_choice
    nested = {p.run.id: p for p in c.held.runs}
    assert set(nested) == set(c.groups)
    for F, pick in c.chosen.items():
        outer = {p.run.id: p for p in c.outer[pick].runs}
        for rid, g in c.groups.items():
            if g == F:
                assert nested[rid] is outer[rid]
    assert c.held.by == c.by and np.isnan(c.held.decode_predicted).all()


def test_both_candidates_are_scored_on_the_same_points(spec_choice):
    c = spec_choice
    for F in c.chosen:
        assert F not in c.inner_groups[F] and F not in c.skipped[F]
        a, b = sc.same_points(*([p for p in c.inner[F][k] if c.groups[p.run.id] != F] for k in (M, C)))
        assert [p.run.id for p in a] == [p.run.id for p in b]
        assert all(np.array_equal(p.scored, q.scored) and set(p.best) == set(q.best) for p, q in zip(a, b))
        assert c.points[F] == (len(a), sum(int(p.scored.sum()) for p in a)) and c.points[F][1] > 0
        pick, skill = ho.choose_from({M: a, C: b}, size=sc.CANDIDATES.index, unit_of=lambda p: ho.group_of(p.run, c.by))
        assert pick == c.chosen[F]
        assert {k: skill[k] for k in (M, C)} == {k: c.scores[F][k][:2] for k in (M, C)}
    # the nested choice and its candidates' outer hold-outs are summarised on the same points
    same = c.same()
    keys = [[(p.run.id, tuple(p.scored)) for p in h.runs] for h in same.values()]
    assert keys[0] == keys[1] == keys[2]


def test_same_points_cuts_to_what_every_candidate_scores():
    p, q = ho.stored_held_out("model").runs[:2]
    unscored = dataclasses.replace(p, scored=np.zeros_like(p.scored))
    a, b = sc.same_points([p, q], [unscored])
    assert [x.run.id for x in a] == [p.run.id] and not a[0].scored.any() and not b[0].scored.any()
