"""Expected committed tokens per verify pass (speclib.acceptance).

Independent routes: sympy (explicit finite sums, the alpha -> 1 limit, the
expm1 rewrite), high-precision evalf, and a seeded Monte Carlo of the accept
process itself.
"""
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.codegen.cfunctions import expm1

from speclib.formulas import acceptance as acc_forms
import speclib
from speclib.core import acceptance as acc

alpha, gamma = acc_forms.alpha, acc_forms.gamma


# --- symbolic -----------------------------------------------------------------


@pytest.mark.parametrize("n", range(0, 9))
def test_closed_form_is_the_finite_geometric_sum(n):
    explicit = sum(alpha**i for i in range(n + 1))
    assert sp.cancel(acc_forms.expected_committed_closed_form.subs(gamma, n) - explicit) == 0
    # sympy's own summation: each branch of its Piecewise against the sum
    summed = acc_forms.expected_committed_expr.subs(gamma, n)
    branches = summed.args if isinstance(summed, sp.Piecewise) else ((summed, sp.true),)
    for value, condition in branches:
        at = {alpha: 1} if condition == sp.Eq(alpha, 1) else {}
        assert sp.cancel(value - explicit.subs(at)) == 0


def test_closed_form_tends_to_gamma_plus_one_as_alpha_tends_to_one():
    assert sp.limit(acc_forms.expected_committed_closed_form, alpha, 1) == gamma + 1
    assert sp.limit(acc_forms.expected_committed_closed_form, alpha, 1, "-") == gamma + 1


def test_summation_keeps_the_alpha_one_branch_exact():
    assert acc_forms.expected_committed_expr.subs(alpha, 1) == gamma + 1


def test_stable_form_equals_the_closed_form():
    # On alpha > 0 (alpha = 0 is the closed form's limit, checked numerically
    # below), expm1(x) = exp(x) - 1 and exp(n log a) = a**n.
    a = sp.Symbol("a", positive=True)
    stable = acc_forms.expected_committed_stable_expr.subs(alpha, a).replace(expm1, lambda x: sp.exp(x) - 1)
    closed = acc_forms.expected_committed_closed_form.subs(alpha, a)
    assert sp.simplify(sp.powsimp(sp.expand_log(stable - closed, force=True), force=True)) == 0
    for n in range(5):
        assert sp.simplify(stable.subs(gamma, n) - closed.subs(gamma, n)) == 0


# --- numeric ------------------------------------------------------------------


@pytest.mark.parametrize("a", [0.0, 0.25, 0.5, 0.75, 0.9, 1.0])
def test_matches_the_explicit_sum_numerically(a):
    gammas = np.arange(0, 65)
    explicit = np.array([sum(a**i for i in range(g + 1)) for g in gammas])
    np.testing.assert_allclose(speclib.expected_committed(a, gammas), explicit, rtol=1e-12)


def test_edges_are_exact():
    assert speclib.expected_committed(0.3, 0) == 1.0  # no drafts: only the bonus token
    assert speclib.expected_committed(0.0, 7) == 1.0  # every draft rejected
    assert speclib.expected_committed(1.0, 7) == 8.0  # every draft accepted


@pytest.mark.parametrize("a", [1 - 1e-6, 1 - 1e-9, 1 - 1e-12, 1 - 2**-52])
@pytest.mark.parametrize("g", [1, 10, 64, 1000])
def test_stays_accurate_a_hair_below_one(a, g):
    # Exact rational arithmetic on the float's value, then rounded.
    exact = sp.Rational(a)
    expected = float(((1 - exact ** (g + 1)) / (1 - exact)).evalf(40))
    assert speclib.expected_committed(a, g) == pytest.approx(expected, rel=1e-12)


def simulate_committed(rng, a, g, trials):
    """Draw i.i.d. accept/reject for each of g drafts; one pass commits the
    accepted prefix (drafts before the first reject) plus the bonus token."""
    if g == 0:
        return np.ones(trials)
    accepted = rng.random((trials, g)) < a
    prefix = np.where(accepted.all(axis=1), g, np.argmin(accepted, axis=1))
    return prefix + 1.0


@pytest.mark.parametrize(
    "a, g", [(0.0, 4), (0.3, 1), (0.5, 3), (0.75, 4), (0.75, 16), (0.9, 8), (0.99, 64), (1.0, 5)]
)
def test_matches_a_monte_carlo_of_the_accept_process(a, g):
    rng = np.random.default_rng(int(1e6 * a) + g)
    committed = simulate_committed(rng, a, g, trials=40_000)
    standard_error = committed.std(ddof=1) / np.sqrt(committed.size)
    assert abs(committed.mean() - speclib.expected_committed(a, g)) <= 4 * standard_error + 1e-12


def test_monte_carlo_can_tell_the_bonus_token_apart():
    # Power check: forgetting the bonus token (N - 1) must be rejected.
    rng = np.random.default_rng(3)
    committed = simulate_committed(rng, 0.75, 4, trials=40_000)
    standard_error = committed.std(ddof=1) / np.sqrt(committed.size)
    assert abs(committed.mean() - (speclib.expected_committed(0.75, 4) - 1)) > 20 * standard_error


def test_broadcasts_over_alpha_and_gamma():
    out = speclib.expected_committed(np.array([[0.5], [0.9]]), np.arange(4))
    assert out.shape == (2, 4)


@settings(max_examples=50, deadline=None)
@given(
    a=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    g=st.integers(min_value=0, max_value=200),
)
def test_numpy_equals_sympy_evalf(a, g):
    expected = float(acc_forms.expected_committed_expr.subs({alpha: sp.Rational(a), gamma: g}).evalf(30))
    assert speclib.expected_committed(a, g) == pytest.approx(expected, rel=1e-12)
