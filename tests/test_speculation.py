"""Speedup of a draft length and the optimal draft length (speclib.speculation).

Independent routes: sympy reduction to Leviathan et al.'s classic formula; a
brute-force argmax whose every speedup is evaluated by sympy ``evalf`` on the
closed forms with docs/model.md's numbers (not through the lambdified numpy);
property tests against evalf; the paper's Figure 3 headline.
"""
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from speclib.formulas import acceptance as acc_forms
from speclib.formulas import cost as cost_forms
from speclib.formulas import speculation as spec_forms
import speclib
from speclib.core import acceptance as acc
from speclib.core import cost
from speclib.core import speculation as spec

alpha, gamma, c = spec_forms.alpha, spec_forms.gamma, spec_forms.c
#: The default model and chip priced as the paper prices them (every layer MLA
#: over the whole context): the closed forms below are the paper's.
PAPER = speclib.Deployment(attention="paper")
N, C_0, C_v = spec_forms.N, spec_forms.C_0, spec_forms.C_v

# --- symbolic: Leviathan et al. (2023) ---------------------------------------------


def classic(drafter_cost):
    return (1 - alpha ** (gamma + 1)) / ((1 - alpha) * (1 + drafter_cost * gamma))


def test_constant_verify_cost_gives_leviathan_et_al():
    reduced = spec_forms.speedup_closed_form.subs(C_v, C_0)
    assert sp.simplify(reduced - classic(c)) == 0


def test_verify_cost_linear_in_gamma_shifts_the_drafter_cost():
    rho = sp.Symbol("rho", nonnegative=True)
    reduced = spec_forms.speedup_closed_form.subs(C_v, C_0 * (1 + rho * gamma))
    assert sp.simplify(reduced - classic(c + rho)) == 0


def test_speedup_uses_the_committed_tokens_of_acceptance():
    assert sp.simplify(spec_forms.speedup_closed_form.subs({C_v: C_0, c: 0}) - acc_forms.expected_committed_closed_form) == 0


# --- brute force with sympy evalf ---------------------------------------------

# docs/model.md's numbers for DeepSeek-V4-Flash on B200 (see tests/test_cost.py for
# where each comes from); query bytes left out, as the ledger and speedup do.
_W_ATTN = 4096 * 1024 + 1024 * 64 * 512 + 4096 * 512 + 8 * 4096 * 1024 + 8192 * 4096
_COMMON = {
    cost_forms.W: _W_ATTN, cost_forms.b_w: 1, cost_forms.W_E: 3 * 4096 * 2048, cost_forms.k: 6, cost_forms.E: 256, cost_forms.n_s: 1,
    cost_forms.b: sp.Rational(53, 100), cost_forms.m_c: 576, cost_forms.m_q: 0, cost_forms.f: 139_264,
}
_tokens = cost_forms.B * cost_forms.q
VERIFY_COST_TERMS = (  # C_proj + C_MoE + C_attn at t = B*q tokens
    cost_forms.gemm_cost_expr.subs({**_COMMON, cost_forms.R: sp.Rational(4500, 8)}).subs(cost_forms.t, _tokens),
    cost_forms.moe_cost_expr.subs({**_COMMON, cost_forms.R: sp.Rational(9000, 8)}).subs(cost_forms.t, _tokens),
    cost_forms.attn_cost_expr.subs({**_COMMON, cost_forms.R: sp.Rational(2250, 8)}),
)


def verify_cost(B, q, S):
    """C_verify by exact symbol replacement in sympy, then evalf. (xreplace
    and term-by-term: ``subs`` on the whole sum gives the same number ~50x
    slower.)"""
    values = {cost_forms.B: sp.Float(B, 30), cost_forms.q: sp.Integer(q), cost_forms.S: sp.Float(S, 30)}
    return sp.Add(*(term.xreplace(values) for term in VERIFY_COST_TERMS)).evalf(30)


def speedup_by_evalf(a, g, B, S, c_draft, plain=None):
    """Sp at one point: numbers substituted into the sympy expressions."""
    plain = verify_cost(B, 1, S) if plain is None else plain
    value = spec_forms.speedup_expr.xreplace(
        {
            N: acc_forms.expected_committed_expr.xreplace({alpha: sp.Rational(a), gamma: sp.Integer(g)}),
            C_0: plain,
            C_v: verify_cost(B, g + 1, S),
            c: sp.Rational(c_draft),
            gamma: g,
        }
    )
    return float(value.evalf(30))


def brute_force_speedups(a, B, S, c_draft, gamma_max):
    """Sp(gamma) for gamma = 0..gamma_max, each evaluated by sympy at 30 digits."""
    plain = verify_cost(B, 1, S)
    return np.array([speedup_by_evalf(a, g, B, S, c_draft, plain) for g in range(gamma_max + 1)])


BRUTE_FORCE_POINTS = [  # (alpha, B, S, c_draft)
    (0.75, 1, 4096, 0.1),
    (0.75, 6, 4096, 0.1),  # the small-batch gutter of Figure 3's defaults
    (0.75, 10, 4096, 0.1),  # the small-batch gutter
    (0.75, 30, 4096, 0.1),
    (0.75, 30_000, 4096, 0.1),
    (0.9, 43, 16_384, 0.05),
    (0.5, 2_000, 512, 0.2),
    (0.99, 500, 131_072, 0.0),
    (1.0, 1, 4096, 0.0),
    (0.0, 100, 4096, 0.1),
]


@pytest.mark.parametrize("a, B, S, c_draft", BRUTE_FORCE_POINTS)
def test_optimal_gamma_equals_brute_force(a, B, S, c_draft):
    table = brute_force_speedups(a, B, S, c_draft, 64)
    expected_gamma = int(np.argmax(table))
    runner_up = np.max(np.delete(table, expected_gamma))
    assert table[expected_gamma] - runner_up > 1e-9, "a near-tie would make the argmax ill-posed"
    gamma_star, best = speclib.optimal_gamma(a, B, S, c_draft, gamma_max=64, deployment=PAPER)
    assert gamma_star == expected_gamma
    assert best == pytest.approx(table[expected_gamma], rel=1e-12)
    np.testing.assert_allclose(speclib.speedup(a, np.arange(65), B, S, c_draft, deployment=PAPER), table, rtol=1e-12)


def test_brute_force_points_cover_the_gutter():
    # The gutter is where the brute force itself says gamma* = 0 at small batch.
    assert np.argmax(brute_force_speedups(0.75, 8, 4096, 0.1, 8)) == 0
    assert np.argmax(brute_force_speedups(0.75, 1, 4096, 0.1, 8)) > 0


def test_gamma_max_bounds_the_search():
    gamma_star, best = speclib.optimal_gamma(1.0, 1, 4096, 0.0, gamma_max=5, deployment=PAPER)
    table = brute_force_speedups(1.0, 1, 4096, 0.0, 5)
    assert gamma_star == int(np.argmax(table)) and best == pytest.approx(table.max(), rel=1e-12)
    assert speclib.optimal_gamma(0.9, 100, 4096, 0.1, gamma_max=0) == (0, 1.0)


# --- numeric ------------------------------------------------------------------


def test_no_speculation_is_exactly_one():
    B = np.geomspace(1e-3, 1e7, 41)[:, None]
    S = np.geomspace(1, 1e7, 9)[None, :]
    for a in (0.0, 0.5, 1.0):
        assert np.all(speclib.speedup(a, 0, B, S, 0.3) == 1.0)


def test_vectorised_optimal_gamma_equals_scalar_calls():
    B = np.geomspace(1, 30_000, 41)
    gamma_star, best = speclib.optimal_gamma(0.75, B, 4096, 0.1)
    for i, b in enumerate(B):
        g, s = speclib.optimal_gamma(0.75, float(b), 4096, 0.1)
        assert (g, s) == (gamma_star[i], best[i])


def test_optimal_gamma_broadcasts_over_alpha_and_batch():
    a = np.array([[0.5], [0.75], [0.9]])
    B = np.geomspace(1, 30_000, 7)
    gamma_star, best = speclib.optimal_gamma(a, B, 4096, 0.1)
    assert gamma_star.shape == best.shape == (3, 7)
    for i in range(3):
        row_gamma, row_best = speclib.optimal_gamma(float(a[i, 0]), B, 4096, 0.1)
        np.testing.assert_array_equal(gamma_star[i], row_gamma)
        np.testing.assert_array_equal(best[i], row_best)


@settings(max_examples=50, deadline=None)
@given(
    a=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    g=st.integers(min_value=0, max_value=64),
    B=st.floats(min_value=1e-3, max_value=1e6, allow_nan=False),
    S=st.floats(min_value=1.0, max_value=1e7, allow_nan=False),
    c_draft=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_speedup_equals_sympy_evalf(a, g, B, S, c_draft):
    expected = speedup_by_evalf(a, g, B, S, c_draft)
    assert speclib.speedup(a, g, B, S, c_draft, deployment=PAPER) == pytest.approx(expected, rel=1e-11)


# --- the paper's Figure 3 headline -----------------------------------------------


def test_paper_gutter_at_small_batch_and_return_to_zero_at_large_batch():
    # Figure 3's defaults: S = 4,096, alpha = 75 %, drafter 10 %.
    B = np.geomspace(1, 30_000, 301)
    gamma_star, best = speclib.optimal_gamma(0.75, B, 4096, 0.1, deployment=PAPER)
    small = B < 100
    zero = np.flatnonzero(small & (gamma_star == 0))
    assert zero.size > 0, "no gutter"
    # the gutter is a dip: speculation pays on both sides of it
    assert gamma_star[: zero[0]].max() > 0 and gamma_star[zero[-1] + 1 : np.flatnonzero(small)[-1] + 1].max() > 0
    assert gamma_star[-1] == 0
    assert np.all(best[gamma_star == 0] == 1.0) and np.all(best >= 1.0)


def test_zero_gamma_bands_on_a_made_up_sequence():
    B = np.array([1, 2, 3, 4, 5, 6])
    g = np.array([2, 0, 0, 1, 0, 0])
    assert spec.zero_gamma_bands(B, g) == [(2.0, 3.0, "gutter"), (5.0, 6.0, "edge")]
    assert spec.zero_gamma_bands(B, np.zeros(6)) == [(1.0, 6.0, "edge")]
    assert spec.zero_gamma_bands(B, np.ones(6)) == []


def test_gamma_regions_match_a_brute_force_scan():
    batches = np.arange(1, 200)
    regions = spec.gamma_regions(0.75, S=4096, c_draft=0.10, batches=batches, deployment=PAPER)
    # Brute force: speedup of every draft length, batch by batch.
    best = [int(np.argmax([speclib.speedup(0.75, g, b, 4096, 0.10, deployment=PAPER) for g in range(65)]))
            for b in batches]
    zero = [b for b, g in zip(batches, best) if g == 0]
    assert regions["gutters"] == [(float(min(zero)), float(max(zero)))]
    assert regions["best_gamma"] == max(best)
    assert regions["best_batch"] == batches[best.index(max(best))]
    assert regions["last_speculating"] == max(b for b, g in zip(batches, best) if g > 0)


def test_gamma_regions_paper_headline():
    # The paper: at the Figure 3 defaults there is a gutter at small batch and
    # gamma* falls back to 0 at very large batch.
    regions = spec.gamma_regions(deployment=PAPER)
    assert len(regions["gutters"]) == 1
    lo, hi = regions["gutters"][0]
    assert 1 < lo and hi < 42.7  # below the expert knee E/k
    assert regions["last_speculating"] < 30_000


# --- draft trees ---------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(model="deepseek-v3", hardware="H200", tp=8, step_time="calibrated"),
                                dict(model="qwen3.6", hardware="B200", drafter="qwen3.6-mtp"),
                                dict(model="deepseek-v4-flash", hardware="B200")])
def test_a_tree_of_width_w_costs_what_a_chain_of_w_minus_1_costs_to_verify(kw):
    d = speclib.Deployment(**kw)
    priced = d.pricing(whole_step=True) if d.whole_step else None
    B, S = np.array([1.0, 16, 256]), 4096.0
    for depth, topk, width in ((3, 4, 8), (5, 2, 9), (2, 8, 16)):
        if priced is not None:  # the verify, apart from the drafting
            tree = priced.tree_step(depth, topk, width, B, S) - priced.tree_step(depth, topk, depth + 1, B, S)
            chain = priced.step_model.time(B, float(width), S) - priced.step_model.time(B, depth + 1.0, S)
            np.testing.assert_allclose(tree, chain, rtol=1e-12)
        else:  # the paper's ledger: a tree's speed-up is a chain's with the verify of width - 1 drafted tokens
            ledger = d.pricing()
            c0, cv = ledger.cost_model.decode(B, S), ledger.cost_model.verify(B, float(width), S)
            n = 2.5
            np.testing.assert_allclose(speclib.tree_speedup(n, B, S, depth=depth, topk=topk, width=width,
                                                            deployment=d),
                                       n * c0 / (cv + 0.1 * depth * c0), rtol=1e-12)


def test_a_one_wide_tree_is_the_chain():
    d = speclib.Deployment("qwen3.6", "B200", drafter="qwen3.6-mtp")
    curve = speclib.SurvivalCurve([0.8, 0.6, 0.45, 0.3])
    B = np.array([1.0, 8, 64, 512])
    for gamma in (1, 2, 4):
        n = speclib.expected_committed_from_survival(curve, gamma)
        np.testing.assert_allclose(speclib.tree_speedup(n, B, 2048, depth=gamma, width=gamma + 1, deployment=d),
                                   speclib.speedup(curve, gamma, B, 2048, deployment=d), rtol=1e-12)


def test_a_wider_tree_costs_more_at_large_batch_for_the_same_accept_length():
    d = speclib.Deployment("llama-3-70b", "H200", tp=4, step_time="calibrated")
    narrow = speclib.tree_speedup(3.0, 512, 2048, depth=3, topk=1, width=4, deployment=d)
    wide = speclib.tree_speedup(3.0, 512, 2048, depth=3, topk=4, width=10, deployment=d)
    assert wide < narrow


@pytest.mark.parametrize("kw, field", [(dict(depth=3, width=3), "width"), (dict(depth=3, topk=2, width=8), "width"),
                                       (dict(depth=0, width=1), "depth"), (dict(depth=3, width=4, topk=0), "topk")])
def test_a_tree_the_engine_cannot_draft_is_refused_naming_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        speclib.tree_speedup(2.0, 8, 1024, **kw)


def test_an_accept_length_beyond_the_tree_is_refused():
    with pytest.raises(ValueError, match="accept_length"):
        speclib.tree_speedup(5.0, 8, 1024, depth=3, width=4)


# --- overlap scheduling ----------------------------------------------------------------------
def test_a_speculative_path_without_overlap_pays_the_host_time_plain_decoding_hides():
    from speclib.core import overlap

    on = speclib.Deployment("llama-3-70b", "H200", tp=4, step_time="calibrated", drafter="llama-3.3-70b-eagle3")
    off = on.replace(spec_overlap=False)
    B, S = np.array([1.0, 32, 256]), 2048.0
    for gamma in (1, 3):
        step_on, step_off = on.pricing().step(gamma, B, S), off.pricing().step(gamma, B, S)
        # by hand: the published estimate, 0.9 ms a step plus 29 us a running request
        np.testing.assert_allclose(step_off - step_on, 0.9e-3 + 29e-6 * B, rtol=1e-12)
    np.testing.assert_array_equal(off.pricing().plain(B, S), on.pricing().plain(B, S))
    assert speclib.speedup(0.8, 0, B, S, deployment=off) == pytest.approx(1.0)
    assert np.all(speclib.speedup(0.8, 3, B, S, deployment=off) < speclib.speedup(0.8, 3, B, S, deployment=on))
    assert {row[0] for row in overlap.OVERLAP} == {"SGLang", "vLLM", "TensorRT-LLM"}


def test_spec_overlap_takes_true_or_false():
    with pytest.raises(ValueError, match="spec_overlap"):
        speclib.Deployment(spec_overlap="no")
