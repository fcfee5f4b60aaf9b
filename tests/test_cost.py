"""Per-component rooflines and their log-slopes r = d log C / d log t
(speclib.cost), and the marginal-cost ledger built from them.

Independent routes: a symbolic bound on every Piecewise branch; wide random
numeric grids; finite differences of the numeric costs; sympy ``evalf`` of the
cost expressions with docs/model.md's architecture numbers typed in here; the
paper's printed slopes.
"""
import dataclasses

import numpy as np
import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from speclib.formulas import cost as cost_forms
import speclib
from speclib import presets
from speclib.core import cost

V4 = presets.DEEPSEEK_V4_FLASH

# --- docs/model.md's numbers, typed from its text --------------------------------------
# attention projections: q_a 4096x1024, q_b 1024x(64*512), kv 4096x512,
# grouped o_a 8x(4096x1024), o_b 8192x4096
W_ATTN = 4096 * 1024 + 1024 * 64 * 512 + 4096 * 512 + 8 * 4096 * 1024 + 8192 * 4096
W_EXPERT = 3 * 4096 * 2048
RIDGE = {"bf16": sp.Rational(2_250, 8), "fp8": sp.Rational(4_500, 8), "fp4": sp.Rational(9_000, 8)}
MODEL_MD = {
    cost_forms.W: W_ATTN,
    cost_forms.b_w: 1,  # fp8 projections
    cost_forms.W_E: W_EXPERT,
    cost_forms.k: 6,
    cost_forms.E: 256,
    cost_forms.n_s: 1,
    cost_forms.b: sp.Rational(53, 100),  # MXFP4 as the charts use it
    cost_forms.m_c: 576,
    cost_forms.m_q: 0,  # the ledger leaves the query bytes out
    cost_forms.f: 139_264,
}


def branches(piecewise):
    return [value for value, _ in piecewise.args]


# --- r in [0, 1] on every branch, symbolically ---------------------------------


def test_gemm_slope_branches_are_zero_and_one():
    assert sorted(branches(cost_forms.gemm_slope_expr)) == [0, 1]


def test_attention_slope_branches_lie_in_unit_interval():
    compute, memory = branches(cost_forms.attn_slope_expr)
    assert sp.simplify(compute) == 1
    assert memory.is_nonnegative
    assert sp.simplify(1 - memory).is_nonnegative


def test_moe_slope_compute_branch_is_one():
    assert sp.simplify(branches(cost_forms.moe_slope_expr)[0]) == 1


def test_moe_slope_memory_branch_lies_in_unit_interval():
    # Write the miss probability 1 - k/E as exp(-lam) (lam > 0 encodes
    # 0 < k < E) and the batch as t = log(1 + y)/lam, y > 0. The branch becomes
    # E log(1 + y) / (E y + n_s (1 + y)): plainly >= 0.
    lam, y = sp.symbols("lam y", positive=True)
    memory = branches(cost_forms.moe_slope_expr)[1]
    in_y = sp.simplify(memory.subs(cost_forms.k, cost_forms.E * (1 - sp.exp(-lam))).subs(cost_forms.t, sp.log(1 + y) / lam))
    assert in_y.is_nonnegative
    # 1 - r = (E v + n_s (1 + y)) / (E y + n_s (1 + y)) with v = y - log(1 + y);
    # v(0) = 0 and v' = y / (1 + y) > 0, so v > 0 and r <= 1.
    v = y - sp.log(1 + y)
    E, n_s = cost_forms.E, cost_forms.n_s
    assert sp.simplify(1 - in_y - (E * v + n_s * (1 + y)) / (E * y + n_s * (1 + y))) == 0
    assert v.subs(y, 0) == 0
    assert sp.simplify(sp.diff(v, y)).is_positive


# --- r in [0, 1] numerically, over wide random grids of valid parameters ---------


def random_grid(seed, n=200_000):
    """E in [2, 2048] and k in [1, E - 1] (k == E is checked on its own)."""
    rng = np.random.default_rng(seed)
    E = rng.integers(2, 2049, n).astype(float)
    return rng, E, np.floor(rng.random(n) * (E - 1)) + 1


def test_moe_slope_in_unit_interval_over_a_wide_grid():
    rng, E, k = random_grid(1)
    n = E.size
    t = 10 ** rng.uniform(-3, 7, n)
    n_s = rng.integers(0, 5, n).astype(float)
    W_E = 10 ** rng.uniform(5, 9, n)
    b = rng.uniform(0.25, 2, n)
    R = 10 ** rng.uniform(1, 4, n)
    r = cost.ROOFLINES["moe"].slope(t, k, E, n_s, W_E, b, R)
    assert np.all((r >= 0) & (r <= 1))


def test_moe_memory_branch_in_unit_interval_for_t_from_1e_minus_3_to_1e7():
    memory_branch = sp.lambdify(
        (cost_forms.t, cost_forms.k, cost_forms.E, cost_forms.n_s), branches(cost_forms.moe_slope_expr)[1], "numpy"
    )
    rng, E, k = random_grid(2)
    t = 10 ** rng.uniform(-3, 7, E.size)
    n_s = rng.integers(0, 5, E.size).astype(float)
    with np.errstate(under="ignore"):
        r = memory_branch(t, k, E, n_s)
    assert np.all(np.isfinite(r))
    assert np.all((r >= 0) & (r <= 1))
    # and for the paper's layer on a dense log grid
    t_dense = np.geomspace(1e-3, 1e7, 20_001)
    r_dense = memory_branch(t_dense, 6.0, 256.0, 1.0)
    assert np.all((r_dense >= 0) & (r_dense <= 1))
    r_no_shared = memory_branch(t_dense, 6.0, 256.0, 0.0)
    assert np.all((r_no_shared >= 0) & (r_no_shared <= 1))


def test_gemm_and_attention_slopes_in_unit_interval_over_a_wide_grid():
    rng = np.random.default_rng(3)
    n = 200_000
    t = 10 ** rng.uniform(-3, 7, n)
    W = 10 ** rng.uniform(5, 10, n)
    b_w = rng.uniform(0.25, 4, n)
    R = 10 ** rng.uniform(1, 4, n)
    r_gemm = cost.ROOFLINES["gemm"].slope(t, W, b_w, R)
    assert np.all((r_gemm == 0) | (r_gemm == 1))
    B = 10 ** rng.uniform(-3, 6, n)
    q = 10 ** rng.uniform(0, 4, n)
    S = 10 ** rng.uniform(0, 8, n)
    m_c = 10 ** rng.uniform(1, 5, n)
    m_q = np.where(rng.random(n) < 0.2, 0.0, 10 ** rng.uniform(1, 6, n))
    f = 10 ** rng.uniform(3, 7, n)
    r_attn = cost.ROOFLINES["attn"].slope(B, q, S, m_c, m_q, f, R)
    assert np.all((r_attn >= 0) & (r_attn <= 1))


@pytest.mark.parametrize("query_bytes", [False, True])
@pytest.mark.parametrize("model, hardware", [("DeepSeek-V4-Flash", "B200"), ("DeepSeek-V4-Flash", "H100"), ("Llama-3-70B", "MI300X")])
def test_ledger_slopes_and_total_bounded(model, hardware, query_bytes):
    B = np.geomspace(1e-6, 1e9, 400)[:, None]
    S = np.geomspace(1, 1e7, 30)[None, :]
    out = speclib.marginal_cost(B, S, 0.0, model, hardware, query_bytes=query_bytes)
    for name in ("attn_proj", "moe", "attention"):
        assert np.all((out[name] >= 0) & (out[name] <= 1)), name
    # the blend of slopes in [0, 1] with shares summing to 1, up to rounding
    assert np.all((out["total"] >= 0) & (out["total"] <= 1 + 1e-12))
    shares = cost.cost_shares(B, S, model, hardware, query_bytes=query_bytes)
    np.testing.assert_allclose(sum(shares.values()), 1, rtol=1e-12)


# --- slopes against finite differences of the numeric costs -------------------------


def log_slope(fn, x, h=1e-6):
    return (np.log(fn(x * (1 + h))) - np.log(fn(x * (1 - h)))) / (np.log1p(h) - np.log1p(-h))


def test_slopes_equal_finite_differences_of_the_costs():
    cm = cost.cost_model()
    t = np.geomspace(0.01, 1e6, 500)
    t = t[np.abs(np.log(t / 281.25)) > 1e-3]  # away from the projection kink
    np.testing.assert_allclose(cm.proj_slope(t), log_slope(cm.proj, t), atol=1e-6)
    ffn_kink = speclib.core.moe.knees()["moe_ridge"]
    t = t[np.abs(np.log(t / ffn_kink)) > 1e-3]
    np.testing.assert_allclose(cm.ffn_slope(t), log_slope(cm.ffn, t), atol=1e-6)
    for S in (1.0, 100.0, 4096.0):
        q = np.geomspace(0.01, 100, 300)
        q = q[np.abs(np.log(q / cost_kink_width(S))) > 1e-3]
        np.testing.assert_allclose(
            cm.attention_slope(7.0, q, S), log_slope(lambda w: cm.attention(7.0, w, S), q), atol=1e-6
        )


def cost_kink_width(S):
    """Verify width where f*S*q/R = m_c*S (query bytes left out): m_c*R/f."""
    return 576 * 281.25 / 139_264 + 0 * S


# --- numpy against sympy evalf with docs/model.md's numbers -----------------------------


def evalf_at(expr, values):
    return float(expr.xreplace(values).evalf(30))


PROJ_SUBS = {**MODEL_MD, cost_forms.R: RIDGE["fp8"]}
FFN_SUBS = {**MODEL_MD, cost_forms.R: RIDGE["fp4"]}
ATTN_SUBS = {**MODEL_MD, cost_forms.R: RIDGE["bf16"]}
PROJ_COST = cost_forms.gemm_cost_expr.subs(PROJ_SUBS)
FFN_COST = cost_forms.moe_cost_expr.subs(FFN_SUBS)
ATTN_COST = cost_forms.attn_cost_expr.subs(ATTN_SUBS)
PROJ_SLOPE = cost_forms.gemm_slope_expr.subs(PROJ_SUBS)
FFN_SLOPE = cost_forms.moe_slope_expr.subs(FFN_SUBS)
ATTN_SLOPE = cost_forms.attn_slope_expr.subs(ATTN_SUBS)


def off_kink(compute, memory, values):
    """Keep hypothesis away from points where float rounding could pick the
    other branch of a roofline."""
    c, m = evalf_at(compute, values), evalf_at(memory, values)
    return abs(c - m) > 1e-9 * max(c, m)


@settings(max_examples=50, deadline=None)
@given(
    B=st.floats(min_value=1e-6, max_value=1e9, allow_nan=False),
    S=st.floats(min_value=1.0, max_value=1e7, allow_nan=False),
    c_draft=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_marginal_cost_equals_sympy_evalf(B, S, c_draft):
    B_, S_ = sp.Float(B, 30), sp.Float(S, 30)
    gemm = {cost_forms.t: B_}
    attn_at_1 = {cost_forms.B: B_, cost_forms.q: 1, cost_forms.S: S_}
    attn_at_2 = {cost_forms.B: B_, cost_forms.q: 2, cost_forms.S: S_}
    assume(off_kink(cost_forms.gemm_compute_expr.subs(PROJ_SUBS), cost_forms.gemm_memory_expr.subs(PROJ_SUBS), gemm))
    assume(off_kink(cost_forms.moe_compute_expr.subs(FFN_SUBS), cost_forms.moe_memory_expr.subs(FFN_SUBS), gemm))
    costs = [evalf_at(PROJ_COST, gemm), evalf_at(FFN_COST, gemm), evalf_at(ATTN_COST, attn_at_1)]
    slopes = [evalf_at(PROJ_SLOPE, gemm), evalf_at(FFN_SLOPE, gemm), evalf_at(ATTN_SLOPE, attn_at_2)]
    total = sum(r * c for r, c in zip(slopes, costs)) / sum(costs) + c_draft

    got = speclib.marginal_cost(B, S, c_draft, attention="paper")  # the paper's MLA over the whole context
    assert got["attn_proj"] == slopes[0]
    assert got["moe"] == pytest.approx(slopes[1], rel=1e-9, abs=1e-15)
    assert got["attention"] == pytest.approx(slopes[2], rel=1e-12)
    assert got["drafter"] == c_draft
    assert got["total"] == pytest.approx(total, rel=1e-9)


@settings(max_examples=50, deadline=None)
@given(
    B=st.floats(min_value=1e-3, max_value=1e6, allow_nan=False),
    q=st.integers(min_value=1, max_value=65),
    S=st.floats(min_value=1.0, max_value=1e7, allow_nan=False),
)
def test_verify_cost_equals_sympy_evalf(B, q, S):
    B_, S_ = sp.Float(B, 30), sp.Float(S, 30)
    tokens = {cost_forms.t: B_ * q}
    expected = evalf_at(PROJ_COST, tokens) + evalf_at(FFN_COST, tokens) + evalf_at(ATTN_COST, {cost_forms.B: B_, cost_forms.q: q, cost_forms.S: S_})
    assert cost.cost_model(attention="paper").verify(B, float(q), S) == pytest.approx(expected, rel=1e-12)


# --- the paper's numbers (docs/model.md section 3) -------------------------------------


def test_paper_r_moe_at_batch_one():
    assert round(speclib.marginal_cost(1, 4096, attention="paper")["moe"], 2) == 0.85


def test_paper_r_moe_at_batch_one_without_the_shared_expert():
    no_shared = dataclasses.replace(V4, ffn=dataclasses.replace(V4.ffn, n_shared=0))
    assert round(speclib.marginal_cost(1, 4096, model=no_shared, attention="paper")["moe"], 2) == 0.99


def test_paper_r_moe_falls_past_the_knee_and_returns_to_one_when_compute_bound():
    r = speclib.marginal_cost(np.array([43.0, 200.0, 1000.0, 10_000.0, 11_000.0, 30_000.0]), 4096,
                              attention="paper")["moe"]
    assert r[0] < 0.85 and r[1] < 0.05 and r[2] < 1e-6 and r[3] < 1e-6
    assert r[4] == 1 and r[5] == 1


def test_paper_r_proj_steps_at_the_fp8_knee():
    # 0 below t = R_fp8/2 = 281.25 (1-byte weights), 1 from there on.
    r = speclib.marginal_cost(np.array([1.0, 281.0, 281.25, 282.0, 30_000.0]), 4096, attention="paper")["attn_proj"]
    assert list(r) == [0, 0, 1, 1, 1]


def test_paper_first_speculated_token_is_compute_bound_in_attention_everywhere():
    B = np.geomspace(1e-6, 1e9, 50)[:, None]
    S = np.geomspace(1, 1e8, 50)[None, :]
    assert np.all(speclib.marginal_cost(B, S, 0.1, attention="paper")["attention"] == 1)


def test_drafter_cost_adds_one_for_one():
    B = np.geomspace(1, 30_000, 31)
    without = speclib.marginal_cost(B, 8192, 0.0)["total"]
    with_draft = speclib.marginal_cost(B, 8192, 0.25)["total"]
    np.testing.assert_allclose(with_draft - without, 0.25, atol=1e-12)


def test_paper_w_attn_and_w_e_from_architecture_numbers():
    assert V4.attn_proj_params == W_ATTN
    assert V4.attn_proj_params == pytest.approx(107e6, rel=5e-3)
    assert V4.expert_params == W_EXPERT == 25_165_824


@pytest.mark.filterwarnings("error")
def test_moe_with_every_expert_active_prices_like_a_dense_ffn():
    # k == E: every token touches every expert, so the layer is a dense GEMM
    # over (E + n_s) experts; its slope is 0 or 1 with the step at R*b/2 tokens.
    all_on = dataclasses.replace(V4, ffn=dataclasses.replace(V4.ffn, top_k=V4.ffn.n_routed))
    B = np.array([1.0, 10.0, 200.0, 297.0, 299.0, 1e5])
    r = speclib.marginal_cost(B, 4096, model=all_on)["moe"]
    knee = 1125 * 0.53 / 2  # 298.125
    np.testing.assert_array_equal(r, (B >= knee).astype(float))
    gamma_star, _ = speclib.optimal_gamma(0.7, B, 4096, model=all_on)
    assert np.all(gamma_star >= 0)


# --- the price the speedup sees: a secant, not the ledger's slope ---------------------------------


def test_verify_price_is_what_the_speedup_divides_by():
    """Sp = N / (1 + gamma p): recover p from speclib.speedup (the numeric
    speedup formula, another route) and compare."""
    rng = np.random.default_rng(16)
    B = rng.uniform(1, 30_000, 40)
    S = rng.uniform(512, 131_072, 40)
    c = rng.uniform(0, 0.5, 40)
    gamma = rng.integers(1, 12, 40)
    alpha = rng.uniform(0.05, 0.95, 40)
    sp_ = speclib.speedup(alpha, gamma, B, S, c)
    N = speclib.expected_committed(alpha, gamma)
    np.testing.assert_allclose(cost.verify_price(B, S, c, gamma)["total"], (N / sp_ - 1) / gamma, rtol=1e-10)


def test_one_drafted_token_pays_exactly_when_alpha_beats_the_verify_price():
    B = np.array([1.0, 4.0, 16.0, 43.0, 512.0, 4096.0, 10_000.0])
    price = cost.verify_price(B, 4096, 0.1)["total"]
    assert np.all(price < 1.2)
    np.testing.assert_allclose(speclib.speedup(price, 1, B, 4096, 0.1), 1.0, rtol=1e-12)
    assert np.all(speclib.speedup(price + 0.01, 1, B, 4096, 0.1) > 1)
    assert np.all(speclib.speedup(price - 0.01, 1, B, 4096, 0.1) < 1)


def test_the_ledgers_slope_and_the_verify_price_disagree_at_batch_16():
    """At batch 16 (S = 4,096, drafter 10%) the ledger's total is above
    alpha = 0.75 and yet one drafted token pays: the slope is not the price."""
    slope = speclib.marginal_cost(16, 4096, 0.1)["total"]
    price = cost.verify_price(16, 4096, 0.1)
    assert slope > 0.75 > price["total"]
    assert speclib.speedup(0.75, 1, 16, 4096, 0.1) > 1
    assert price["total"] == pytest.approx(price["verify"] + 0.1, rel=1e-15)


def test_verify_price_equals_the_slope_where_the_step_is_a_straight_line():
    """Llama-3-70B far past its GEMM knees: the weight GEMMs are compute-bound
    (cost proportional to the width) and the GQA attention memory-bound at
    widths 1 and 2 (a constant), so the verify's cost is a straight line in
    the width and secant = slope. MLA's attention bends between widths 1 and 2,
    so for DeepSeek-V4-Flash they differ even there."""
    for B in (1e5, 1e6):
        price = cost.verify_price(B, 4096, 0.0, model="Llama-3-70B")["verify"]
        assert price == pytest.approx(speclib.marginal_cost(B, 4096, 0.0, "Llama-3-70B")["total"], rel=1e-9)
        assert 0 < price < 1
    paper = dict(attention="paper")  # MLA over the whole context
    assert cost.verify_price(1e6, 4096, 0.0, **paper)["verify"] < \
        speclib.marginal_cost(1e6, 4096, 0.0, **paper)["total"] - 0.1


def test_verify_price_refuses_a_draft_of_no_tokens():
    with pytest.raises(ValueError, match="gamma"):
        cost.verify_price(16, 4096, 0.1, gamma=0)
