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
