"""Depth-dependent acceptance: N from a measured survival curve
(speclib.core.acceptance.expected_committed_from_survival, SurvivalCurve) and
optimal_gamma / speedup fed a curve instead of alpha.

Independent routes: a direct Python sum over the curve, sympy's own
evaluation of the survival-form expression, the geometric special case
against the i.i.d. formula, and a seeded simulation of the accept process
with depth-dependent conditional acceptance.
"""
import json
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from speclib.formulas import acceptance as acc_forms
import speclib
from speclib.core import acceptance as acc
from speclib.evidence import derivations
from speclib.core import speculation
from speclib.presentation.figures import acceptance_curves

#: The acceptance chapter's figures and tables price DeepSeek-V4's attention as the paper does.
PAPER = speclib.Deployment(attention="paper")

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "acceptance" / "survival.json"
MTP = [0.779, 0.583, 0.444, 0.349, 0.279, 0.226, 0.185, 0.155]
DECAYING = [0.9, 0.7, 0.7, 0.4, 0.1, 0.0]


def direct_sum(curve, gamma):
    total = 1.0
    for d in range(1, gamma + 1):
        total += curve[d - 1]
    return total


# --- symbolic -----------------------------------------------------------------


def test_survival_form_reduces_to_the_iid_sum_for_a_geometric_curve():
    alpha, gamma = acc_forms.alpha, acc_forms.gamma
    geometric = acc_forms.expected_committed_geometric_expr
    iid = acc_forms.expected_committed_expr
    # general branch of each piecewise, then the alpha = 1 branch
    general = lambda e: next(v for v, c in (e.args if isinstance(e, sp.Piecewise) else ((e, sp.true),)) if c is sp.true)
    geo_general = sum(general(term) if isinstance(term, sp.Piecewise) else term for term in sp.Add.make_args(geometric))
    assert sp.simplify(geo_general - general(iid)) == 0
    for n in range(6):
        assert sp.simplify(geometric.subs(gamma, n).subs(alpha, 1) - (n + 1)) == 0


def test_forward_difference_is_the_next_survival_and_n0_is_one():
    s, gamma = acc_forms.survival, acc_forms.gamma
    assert acc_forms.committed_at_zero_expr == 1
    assert acc_forms.committed_increment_expr == s[gamma + 1]
    for n in range(5):
        lhs = acc_forms.expected_committed_survival_expr.subs(gamma, n + 1).doit()
        rhs = acc_forms.expected_committed_survival_expr.subs(gamma, n).doit() + s[n + 1]
        assert sp.expand(lhs - rhs) == 0


# --- numeric ------------------------------------------------------------------


@pytest.mark.parametrize("curve", [MTP, DECAYING, [1.0, 1.0, 1.0], [0.0], [0.3]])
def test_matches_a_direct_sum(curve):
    gammas = np.arange(len(curve) + 1)
    got = speclib.expected_committed_from_survival(curve, gammas)
    expected = [direct_sum(curve, int(g)) for g in gammas]
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)


def test_matches_sympys_evaluation_of_the_survival_expression():
    s, gamma = acc_forms.survival, acc_forms.gamma
    for g in range(len(MTP) + 1):
        expr = acc_forms.expected_committed_survival_expr.subs(gamma, g).doit()
        value = float(expr.subs({s[d + 1]: sp.Rational(str(MTP[d])) for d in range(len(MTP))}))
        assert speclib.expected_committed_from_survival(MTP, g) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.75, 0.95, 1.0])
def test_geometric_curve_equals_expected_committed(alpha):
    length = 40
    curve = [alpha**d for d in range(1, length + 1)]
    gammas = np.arange(length + 1)
    np.testing.assert_allclose(
        speclib.expected_committed_from_survival(curve, gammas),
        speclib.expected_committed(alpha, gammas),
        rtol=1e-12,
    )


def test_scalar_gamma_gives_a_float_and_arrays_broadcast():
    assert isinstance(speclib.expected_committed_from_survival(MTP, 3), float)
    out = speclib.expected_committed_from_survival(MTP, np.array([[0, 1], [2, 8]]))
    assert out.shape == (2, 2)


def test_simulated_accept_process_matches():
    # Draft position d is accepted with conditional probability p_d given all
    # before it were; the run stops at the first rejection; N = accepted + 1.
    rng = np.random.default_rng(20260622)
    curve = acc.SurvivalCurve(MTP)
    p = curve.conditional_acceptance
    trials, gamma = 200_000, 6
    accepted = rng.random((trials, gamma)) < p[:gamma]
    prefix = np.cumprod(accepted, axis=1).sum(axis=1)
    simulated = 1 + prefix.mean()
    stderr = prefix.std() / np.sqrt(trials)
    assert abs(simulated - speclib.expected_committed_from_survival(curve, gamma)) < 5 * stderr


# --- validation ---------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, words",
    [
        ([], "empty"),
        ([0.5, 0.6], "non-increasing"),
        ([1.1, 0.5], "[0, 1]"),
        ([0.5, -0.1], "[0, 1]"),
        ([[0.5, 0.4]], "1-D"),
        ([0.5, np.nan], "NaN"),
        ("abc", "survival"),
    ],
)
def test_bad_curves_raise(bad, words):
    with pytest.raises(ValueError, match="survival") as err:
        speclib.expected_committed_from_survival(bad, 0)
    assert words in str(err.value)


@pytest.mark.parametrize("gamma", [9, -1, 1.5])
def test_gamma_outside_the_curve_raises_naming_gamma_and_range(gamma):
    with pytest.raises(ValueError, match=r"gamma.*\[0, 8\]"):
        speclib.expected_committed_from_survival(MTP, gamma)


def test_curve_is_read_only_and_copied():
    source = np.array(MTP)
    curve = acc.SurvivalCurve(source)
    source[0] = 0.0
    assert curve.values[0] == MTP[0]
    with pytest.raises(ValueError):
        curve.values[0] = 0.1


# --- shipped data -------------------------------------------------------------


def test_loader_returns_both_measured_curves():
    curves = acc.load_survival_curves()
    assert set(curves) == {"mtp", "dflash"}
    assert len(curves["mtp"]) == 8 and len(curves["dflash"]) == 15
    assert curves["mtp"].values.tolist() == MTP
    assert curves["mtp"].first_position_acceptance == MTP[0]


@pytest.mark.skipif(not SHARED.exists(), reason="the shared data folder is not next to this checkout")
def test_packaged_copy_equals_the_shared_data():
    raw = json.loads(SHARED.read_text())
    curves = acc.load_survival_curves()
    assert curves["mtp"].values.tolist() == raw["mtp"]
    assert curves["dflash"].values.tolist() == raw["dflash"]


# --- speedup and optimal_gamma with a curve -----------------------------------

BATCHES = np.array([1.0, 4.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0])


@pytest.mark.parametrize("alpha", [0.5, 0.75, 0.9])
def test_geometric_curve_gives_the_iid_optimum(alpha):
    length = 64
    curve = acc.geometric_survival(alpha, length)
    g_curve, s_curve = speclib.optimal_gamma(curve, BATCHES, 4096, 0.1)
    g_iid, s_iid = speclib.optimal_gamma(alpha, BATCHES, 4096, 0.1, gamma_max=length)
    np.testing.assert_array_equal(g_curve, g_iid)
    np.testing.assert_allclose(s_curve, s_iid, rtol=1e-12)


def test_search_is_capped_at_the_curve_length():
    # A curve that never decays makes longer drafts pay; the search stops at
    # the last measured position.
    B = 100.0
    assert speclib.optimal_gamma(1.0, B, 4096, 0.0)[0] > 5  # uncapped, alpha = 1 drafts longer
    curve = acc.SurvivalCurve([1.0] * 5)
    g, _ = speclib.optimal_gamma(curve, B, 4096, 0.0, gamma_max=64)
    assert g == 5
    g, _ = speclib.optimal_gamma(curve, B, 4096, 0.0, gamma_max=3)
    assert g == 3


def test_optimum_is_a_brute_force_maximum_over_speedup():
    curve = acc.load_survival_curves()["dflash"]
    g_star, best = speclib.optimal_gamma(curve, BATCHES, 4096, 0.1)
    for i, B in enumerate(BATCHES):
        values = [speclib.speedup(curve, g, B, 4096, 0.1) for g in range(len(curve) + 1)]
        assert g_star[i] == int(np.argmax(values))
        assert best[i] == pytest.approx(max(values), rel=1e-12)


def test_speedup_with_a_curve_is_one_at_gamma_zero_and_rejects_long_drafts():
    curve = acc.load_survival_curves()["mtp"]
    assert speclib.speedup(curve, 0, 100, 4096) == 1.0
    with pytest.raises(ValueError, match="gamma"):
        speclib.speedup(curve, 9, 100, 4096)


def test_plain_list_alpha_still_means_iid_alphas():
    g_list, _ = speclib.optimal_gamma([0.5, 0.9], 3000.0, 4096, 0.1)
    g_each = [speclib.optimal_gamma(a, 3000.0, 4096, 0.1)[0] for a in (0.5, 0.9)]
    assert list(g_list) == g_each


def test_cost_model_and_model_together_are_refused():
    cm = speclib.core.cost.cost_model()
    with pytest.raises(ValueError, match="cost_model"):
        speculation.Deployment("DeepSeek-V4-Flash", cost_model=cm)


def test_passing_the_default_cost_model_changes_nothing():
    cm = speclib.core.cost.cost_model()
    a = speculation.optimal_gamma(0.75, BATCHES, 4096, 0.1)
    b = speculation.optimal_gamma(0.75, BATCHES, 4096, 0.1, deployment=speculation.Deployment(cost_model=cm))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


# --- presentation objects -------------------------------------------------------


def test_derivation_and_tables_render_deterministically():
    d = derivations.survival()
    assert d.keys() == ["tail", "zero", "difference", "iid"]
    assert "<" in d._repr_html_() and repr(d) == repr(derivations.survival())
    table = acceptance_curves.committed_table()
    text = repr(table)
    assert text == repr(acceptance_curves.committed_table()) and "<table" in table._repr_html_()
    # one row per position of the longest curve, plus caption and header
    assert len(text.splitlines()) == 15 + 2


def test_compare_survival_counts_are_consistent():
    batches = np.unique(np.round(np.geomspace(1, 30000, 60)))
    summary = acceptance_curves.compare_survival(B=batches)
    curves = acc.load_survival_curves()
    for row, curve in zip(summary.rows, curves.values()):
        g_m, s_m = speclib.optimal_gamma(curve, batches, 4096, 0.1, deployment=PAPER)
        g_i, s_i = speclib.optimal_gamma(curve.iid(), batches, 4096, 0.1, deployment=PAPER)
        differs = np.count_nonzero(g_m != g_i)
        assert row[3] == f"{differs} of {len(batches)}" and int(row[5]) + int(row[6]) == differs
        assert row[7] == f"{np.max(1 - s_m / s_i):.1%}"
        c = speculation.against_iid(curve, batches, 4096, 0.1, deployment=PAPER)
        assert c["differs"] == differs and c["shortfall"] == np.max(1 - s_m / s_i)
        assert not row[7].startswith("-")  # at gamma* = 0 or 1 the two agree exactly


def test_the_chapter_figures_draw_speclibs_gamma_star_under_each_curve():
    d = acceptance_curves.survival_gamma_star.data(points=60)
    curves = acc.load_survival_curves()
    for key, curve in curves.items():
        g, s = speclib.optimal_gamma(curve, d["B"], 4096, 0.10, deployment=PAPER)
        np.testing.assert_array_equal(d[f"{key}_measured_gamma"], g)
        # Brute force at one batch: the argmax over the curve's own draft lengths.
        b = d["B"][len(d["B"]) // 2]
        best = int(np.argmax([speclib.speedup(curve, n, b, 4096, 0.10, deployment=PAPER)
                              for n in range(len(curve) + 1)]))
        assert best == d[f"{key}_measured_gamma"][len(d["B"]) // 2]
    ratio = acceptance_curves.survival_speedup_ratio.data(points=60)
    np.testing.assert_allclose(ratio["mtp_ratio_capped"], ratio["mtp_measured_speedup"] / ratio["mtp_capped_speedup"])


def test_the_iid_comparison_counts_what_the_chapter_states_by_brute_force():
    """iid_comparison against a loop over draft lengths and batches: the
    batches where gamma* moves by more than a step, the largest i.i.d. gamma*
    searched to 64, and where the i.i.d. N(gamma) over- and understates the curve's."""
    batches = np.unique(np.round(np.geomspace(1, 30000, 40)))
    facts = acceptance_curves.iid_comparison(B=batches)
    for key, curve in acc.load_survival_curves().items():
        f = facts[key]
        alpha = curve.values[0]
        jumps, top = [], 0
        for b in batches:
            drafts = range(len(curve) + 1)
            measured = int(np.argmax([speclib.speedup(curve, n, b, 4096, 0.1, deployment=PAPER) for n in drafts]))
            iid = int(np.argmax([speclib.speedup(curve.iid(), n, b, 4096, 0.1, deployment=PAPER) for n in drafts]))
            free = int(np.argmax([speclib.speedup(alpha, n, b, 4096, 0.1, deployment=PAPER) for n in range(65)]))
            top = max(top, free)
            if abs(measured - iid) > 1:
                jumps.append(b)
        assert list(f["jumps"]) == jumps and f["iid_max_gamma"] == top
        gap = [sum(alpha ** d for d in range(1, n + 1)) - sum(curve.values[:n]) for n in range(1, len(curve) + 1)]
        assert f["overstates"] == pytest.approx(max(gap)) and f["overstates_at"] == 1 + int(np.argmax(gap))
        assert f["understates_from"] == next((n + 1 for n, x in enumerate(gap) if x < -1e-12), None)
