"""The MoE roofline (speclib.moe): the coupon-collector expert count, its rate,
the FFN intensities and their knees.

Independent routes: sympy identities and limits; a seeded Monte Carlo of
uniform top-k routing; sympy ``evalf`` against the lambdified numpy; the
paper's printed numbers (docs/model.md).
"""
import dataclasses

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.codegen.cfunctions import expm1, log1p

from speclib.formulas import cost as cost_forms
from speclib.formulas import moe as moe_forms
import speclib
from speclib import presets
from speclib.core import cost
from speclib.core import moe

V4 = presets.DEEPSEEK_V4_FLASH
B200 = presets.B200


# --- symbolic -----------------------------------------------------------------


def test_rate_is_the_derivative_of_the_count():
    derivative = sp.diff(moe_forms.experts_activated_expr, moe_forms.B)
    assert sp.simplify(derivative - moe_forms.experts_activated_rate_expr) == 0


def test_count_is_bk_when_experts_are_plentiful():
    # B << E/k: a batch almost never shares an expert, so A -> B*k.
    assert sp.simplify(sp.limit(moe_forms.experts_activated_expr, moe_forms.E, sp.oo) - moe_forms.B * moe_forms.k) == 0
    # Same statement at the small-batch end: the slope at B = 0 tends to k.
    slope_at_zero = moe_forms.experts_activated_rate_expr.subs(moe_forms.B, 0)
    assert sp.limit(slope_at_zero, moe_forms.E, sp.oo) == moe_forms.k


def test_count_saturates_at_E():
    # Write the miss probability 1 - k/E as exp(-lam), lam > 0, which encodes
    # 0 < k < E, so sympy can take the B -> oo limit for every such k, E.
    lam = sp.Symbol("lam", positive=True)
    A = moe_forms.experts_activated_expr.subs(moe_forms.k, moe_forms.E * (1 - sp.exp(-lam)))
    assert sp.limit(A, moe_forms.B, sp.oo) == moe_forms.E


def test_saturated_slope_ratio_is_k_plus_shared_over_E_plus_shared():
    expected = (moe_forms.k + moe_forms.n_s) / (moe_forms.E + moe_forms.n_s)
    assert sp.simplify(moe_forms.moe_slope_ratio_expr - expected) == 0


def test_dense_knee_and_moe_ridge_batch_solve_their_equations():
    assert sp.simplify(moe_forms.dense_intensity_uncapped_expr.subs(moe_forms.B, moe_forms.dense_knee_expr) - moe_forms.R) == 0
    saturated = moe_forms.moe_saturated_intensity_expr.subs(moe_forms.B, moe_forms.moe_ridge_batch_expr)
    assert sp.simplify(saturated - moe_forms.R) == 0


def _plain(expr):
    """Undo numeric_form: expm1(x) = exp(x) - 1, log1p(x) = log(1 + x), and
    exp(x log q) = q**x."""
    expr = expr.replace(expm1, lambda x: sp.exp(x) - 1).replace(log1p, lambda x: sp.log(1 + x))

    def is_exp_of_log(e):
        return isinstance(e, sp.exp) and any(isinstance(a, sp.log) for a in sp.Mul.make_args(e.args[0]))

    def as_power(e):
        log_q = next(a for a in sp.Mul.make_args(e.args[0]) if isinstance(a, sp.log))
        return log_q.args[0] ** sp.cancel(e.args[0] / log_q)

    return expr.replace(is_exp_of_log, as_power)


def _same(a, b):
    if isinstance(b, sp.Piecewise):  # branch by branch: values and conditions
        return len(a.args) == len(b.args) and all(
            _same(va, vb) and (ca == cb or _same(ca.lhs - ca.rhs, cb.lhs - cb.rhs))
            for (va, ca), (vb, cb) in zip(a.args, b.args)
        )
    return sp.simplify(a - b) == 0


@pytest.mark.parametrize(
    "expr",
    [moe_forms.experts_activated_expr, moe_forms.experts_activated_rate_expr, moe_forms.moe_intensity_uncapped_expr,
     cost_forms.moe_memory_expr, cost_forms.moe_slope_expr],
    ids=["count", "rate", "moe_intensity", "moe_memory_cost", "moe_slope"],
)
def test_numeric_form_is_the_same_function(expr):
    rewritten = moe_forms.numeric_form(expr)
    powers = [p for p in rewritten.atoms(sp.Pow) if p.base == moe_forms.miss_probability_expr]
    assert not powers, "a float power is left"
    assert rewritten.has(log1p), "nothing was rewritten"
    assert _same(_plain(rewritten), expr)


# --- Monte Carlo of uniform top-k routing --------------------------------------


def routed_expert_counts(rng, k, E, B, trials, max_keys=1 << 22):
    """Distinct experts touched when each of B tokens picks k distinct experts
    of E uniformly: the k smallest of E i.i.d. uniform keys are a uniform
    k-subset. Returns one count per trial."""
    counts = []
    per_chunk = max(1, max_keys // (B * E))
    for start in range(0, trials, per_chunk):
        n = min(per_chunk, trials - start)
        keys = rng.random((n, B, E), dtype=np.float32)
        picks = np.argpartition(keys, k - 1, axis=-1)[..., :k].reshape(n, B * k)
        touched = np.zeros((n, E), dtype=bool)
        touched[np.arange(n)[:, None], picks] = True
        counts.append(touched.sum(axis=1))
    return np.concatenate(counts)


ROUTING_CASES = [
    (6, 256, 1),
    (6, 256, 2),
    (6, 256, 10),
    (6, 256, 43),
    (6, 256, 200),
    (2, 8, 1),
    (2, 8, 3),
    (2, 8, 5),
    (2, 8, 20),
    (8, 128, 1),
    (8, 128, 5),
    (8, 128, 16),
    (8, 128, 60),
]


@pytest.mark.parametrize("k, E, B", ROUTING_CASES)
def test_count_matches_monte_carlo_routing(k, E, B):
    rng = np.random.default_rng(20260608 + 1000 * k + 10 * E + B)
    counts = routed_expert_counts(rng, k, E, B, trials=1500)
    mean = counts.mean()
    standard_error = counts.std(ddof=1) / np.sqrt(counts.size)
    expected = speclib.experts_activated(B, k, E)
    assert abs(mean - expected) <= 4 * standard_error + 1e-9 * E


def test_monte_carlo_can_tell_distinct_picks_from_picks_with_replacement():
    # Power check: with replacement (B*k independent picks) the count would be
    # E(1 - (1 - 1/E)^(Bk)); the routing Monte Carlo must reject that.
    k, E, B = 2, 8, 3
    counts = routed_expert_counts(np.random.default_rng(7), k, E, B, trials=4000)
    standard_error = counts.std(ddof=1) / np.sqrt(counts.size)
    with_replacement = E * (1 - (1 - 1 / E) ** (B * k))
    assert abs(counts.mean() - with_replacement) > 6 * standard_error
    assert abs(counts.mean() - speclib.experts_activated(B, k, E)) < 4 * standard_error


# --- numeric behaviour ----------------------------------------------------------


def test_rate_matches_a_finite_difference_of_the_count():
    B = np.geomspace(0.01, 5000, 60)
    h = 1e-5 * B
    central = (speclib.experts_activated(B + h, 6, 256) - speclib.experts_activated(B - h, 6, 256)) / (2 * h)
    np.testing.assert_allclose(moe.experts_activated_rate(B, 6, 256), central, rtol=1e-6, atol=1e-12)


def test_rate_is_zero_when_every_token_takes_every_expert():
    rate = moe.experts_activated_rate(np.array([0.5, 1.0, 7.0]), 8, 8)
    assert np.all(rate == 0)
    assert speclib.experts_activated(3, 8, 8) == pytest.approx(8)


def test_count_broadcasts():
    out = speclib.experts_activated(np.array([[1.0], [10.0]]), np.array([2, 6]), 256)
    assert out.shape == (2, 2)


def test_intensity_is_capped_at_the_fp4_ridge_and_below_dense():
    B = np.geomspace(1, 1e6, 200)
    moe_line = moe.ffn_intensity(B)
    dense_line = moe.dense_equivalent_intensity(B)
    assert np.all(moe_line <= B200.ridge("fp4") + 1e-9)
    assert np.all(moe_line <= dense_line + 1e-9)
    assert moe_line[-1] == pytest.approx(1125)


# --- numpy against sympy evalf --------------------------------------------------

positive_batch = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def routing(draw):
    E = draw(st.integers(min_value=1, max_value=1024))
    k = draw(st.integers(min_value=1, max_value=E))
    return k, E


@settings(max_examples=50, deadline=None)
@given(B=positive_batch, kE=routing())
def test_count_and_rate_equal_sympy_evalf(B, kE):
    k, E = kE
    values = {moe_forms.B: sp.Float(B, 30), moe_forms.k: k, moe_forms.E: E}
    count = float(moe_forms.experts_activated_expr.subs(values).evalf(30))
    assert speclib.experts_activated(B, k, E) == pytest.approx(count, rel=1e-9, abs=1e-12)
    if k < E:
        rate = float(moe_forms.experts_activated_rate_expr.subs(values).evalf(30))
        assert moe.experts_activated_rate(B, k, E) == pytest.approx(rate, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("B", [1e-12, 1e-9, 1e-6, 1e-3])
@pytest.mark.parametrize("k, E", [(6, 256), (1, 1024), (2, 8)])
def test_count_keeps_full_precision_at_tiny_batches(B, k, E):
    # 1 - (1 - k/E)^B cancels here; compare with exact arithmetic at 40 digits.
    exact = moe_forms.experts_activated_expr.subs({moe_forms.B: sp.Rational(B), moe_forms.k: k, moe_forms.E: E}).evalf(40)
    assert speclib.experts_activated(B, k, E) == pytest.approx(float(exact), rel=1e-13)


# The model's constants substituted once, exactly, so each example only
# substitutes B.
V4_MOE_INTENSITY = moe_forms.moe_intensity_expr.subs(
    {
        moe_forms.k: V4.ffn.top_k,
        moe_forms.E: V4.ffn.n_routed,
        moe_forms.n_s: V4.ffn.n_shared,
        moe_forms.b: sp.nsimplify(V4.ffn.weight_bytes),
        moe_forms.R: sp.nsimplify(B200.ridge("fp4")),
    }
)


@settings(max_examples=50, deadline=None)
@given(B=positive_batch)
def test_ffn_intensity_equals_sympy_evalf(B):
    expected = float(V4_MOE_INTENSITY.subs(moe_forms.B, sp.Float(B, 30)).evalf(30))
    assert moe.ffn_intensity(B) == pytest.approx(expected, rel=1e-9)


# --- the paper's numbers (docs/model.md section 1) ----------------------------------


def test_paper_knees():
    knees = moe.knees()
    assert round(knees["expert_knee"], 1) == 42.7  # E/k ~ 42.7
    assert round(knees["dense_knee"]) == 298  # R4*b/2 ~ 298
    # "meets the ridge at ~10,950 tokens": the closed form gives 10,945.4.
    assert knees["moe_ridge_asymptotic"] == pytest.approx(10950, rel=1e-3)
    assert knees["moe_ridge"] == pytest.approx(10950, rel=1e-3)
    assert knees["slope_ratio"] == pytest.approx(7 / 257)  # (k+1)/(E+1)


def test_paper_moe_line_meets_the_ridge_where_knees_says():
    # Independent of the closed form: bisect the uncapped numeric intensity.
    lo, hi = 1000.0, 1e6
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if moe.ffn_intensity(mid, capped=False) < 1125 else (lo, mid)
    assert moe.knees()["moe_ridge"] == pytest.approx(lo, rel=1e-9)


def test_paper_expert_params():
    assert V4.expert_params == 25_165_824


def test_dense_model_has_only_a_dense_knee():
    llama = presets.LLAMA_3_70B
    knees = moe.knees(llama, "H100")
    assert set(knees) == {"dense_knee"}
    # bf16 weights (2 bytes) on H100: the dense line meets the ridge at R*b/2 = R.
    assert knees["dense_knee"] == pytest.approx(presets.H100_SXM.ridge("bf16"))


def test_without_shared_expert_the_count_alone_sets_the_bytes():
    no_shared = dataclasses.replace(V4, ffn=dataclasses.replace(V4.ffn, n_shared=0))
    B = np.array([1.0, 10.0, 100.0])
    # Uncapped intensity = 2Bk / (b A(B)); at B = 1, A = k so it is 2/b.
    got = moe.ffn_intensity(B, no_shared, capped=False)
    assert got[0] == pytest.approx(2 / V4.ffn.weight_bytes)
