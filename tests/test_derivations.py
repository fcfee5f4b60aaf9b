"""The appendix derivations (speclib.derivations).

Each derivation's result is checked by a route that does not go through the
step that produced it: finite differences of speclib's numeric functions, a
brute-force search over widths or batches, a seeded Monte Carlo, the numeric
cost model, or the paper's printed value (docs/model.md). Leviathan et
al.'s speedup is typed here from their paper, not taken from speclib.
"""
import dataclasses
import html

import numpy as np
import pytest
import sympy as sp

import speclib.formulas.acceptance
import speclib.formulas.speculation
from speclib.formulas import attention as attention_forms
from speclib.formulas import cost as cost_forms
from speclib.formulas import moe as moe_forms
import speclib
from speclib import presets
from speclib.core import attention
from speclib.core import cost
from speclib.evidence import derivations as dv
from speclib.core import moe

V4 = presets.DEEPSEEK_V4_FLASH
LLAMA = presets.LLAMA_3_70B
B200 = presets.B200
R_BF16 = B200.ridge("bf16")
R_FP4 = B200.ridge("fp4")
#: The appendix derives the paper's ledger: DeepSeek-V4's attention priced as the paper prices it.
PAPER = speclib.Deployment(attention="paper")
LONG = 1e15  # a context long enough that the query bytes do not register


def numeric(step, **values):
    """Evaluate a step's last term with symbols replaced by name."""
    expr = step.rhs
    subs = {s: values[s.name] for s in expr.free_symbols if s.name in values}
    return float(expr.subs(subs))


def slope(fn, x, rel=1e-6):
    """Central finite difference of a numeric function."""
    h = x * rel
    return (fn(x + h) - fn(x - h)) / (2 * h)


def log_slope(fn, x, rel=1e-6):
    return slope(lambda v: np.log(fn(v)), x, rel) * x


# --- structure and rendering -----------------------------------------------------


@pytest.mark.parametrize("builder", dv.ALL, ids=lambda b: b.__name__)
def test_every_step_renders_latex_and_markdown(builder):
    derivation = builder()
    assert len(derivation) >= 3
    markdown = derivation._repr_markdown_()
    page = derivation._repr_html_()
    for step in derivation:
        latex = step.latex()
        assert latex.strip()
        assert latex in markdown
        # the book shows the HTML: maths in MathJax's display delimiters, escaped
        assert "\\[" + html.escape(latex, quote=False) + "\\]" in page
        assert html.escape(step.label) in step._repr_html_()
        assert step._repr_latex_().startswith("$")
        assert "$$" in step._repr_markdown_()
        assert step.label in step.text()
    assert derivation.title in markdown


@pytest.mark.parametrize("builder", dv.ALL, ids=lambda b: b.__name__)
def test_plain_text_repr_is_deterministic(builder):
    first = repr(builder.__wrapped__())
    again = repr(builder.__wrapped__())
    assert first == again
    assert "0x" not in first
    assert first.splitlines()[0] == builder().title


def test_steps_are_found_by_key_and_a_wrong_key_names_the_choices():
    d = dv.experts_activated()
    assert d["knee"] is d.final
    assert d[0].key == d.keys()[0]
    with pytest.raises(KeyError, match="knee"):
        d["no such step"]


def test_a_false_identity_cannot_be_shown():
    builder = dv._Builder("test")
    with pytest.raises(ArithmeticError):
        builder.identity("wrong", "not an identity", moe_forms.k, moe_forms.k + 1)
    builder.identity("right", "an identity", sp.log(moe_forms.k * moe_forms.E), sp.log(moe_forms.k) + sp.log(moe_forms.E))


def test_numbers_are_printed_to_five_significant_figures():
    assert dv._format_number(45555.07) == "45,555"
    assert dv._format_number(1.16327) == "1.1633"
    assert dv._format_number(0) == "0"


def test_wrong_architecture_is_refused():
    with pytest.raises(ValueError, match="MoE"):
        dv.moe_intensity(LLAMA)
    with pytest.raises(ValueError, match="GQA"):
        dv.gqa(V4)
    with pytest.raises(ValueError, match="MLA"):
        dv.hca(LLAMA)
    plain_mla = dataclasses.replace(V4, attention=dataclasses.replace(V4.attention, hca_ratio=None))
    with pytest.raises(ValueError, match="HCA"):
        dv.csa(plain_mla)


# --- MoE ------------------------------------------------------------------------------


def test_miss_probability_matches_a_routing_simulation():
    k, E, B = 6, 256, 8
    rng = np.random.default_rng(20260608)
    picks = rng.random((4000, B, E)).argsort(axis=-1)[..., :k]
    touched = np.zeros((4000, E), dtype=bool)
    np.put_along_axis(touched, picks.reshape(4000, -1), True, axis=-1)
    untouched = 1 - touched.mean()
    assert untouched == pytest.approx(numeric(dv.experts_activated()["miss_all"], k=k, E=E, B=B), abs=3e-3)


def test_derived_rate_is_a_finite_difference_of_the_count():
    step = dv.experts_activated()["rate"]
    for B in (1.0, 10.0, 42.7, 300.0):
        fd = slope(lambda b: moe.experts_activated(b, 6, 256), B)
        assert numeric(step, k=6, E=256, B=B) == pytest.approx(fd, rel=1e-6)


def test_leading_order_rate_is_good_to_order_k_over_E():
    step = dv.experts_activated()["rate_approx"]
    for E, tol in ((256, 0.03), (10**6, 1e-5)):
        exact = moe.experts_activated_rate(5.0, 6, E)
        assert numeric(step, k=6, E=E, B=5.0) == pytest.approx(exact, rel=tol)


def test_small_batch_series_is_exact_for_two_tokens():
    # For B = 2 the count is a quadratic in k, so the O(k^3) series is exact.
    series = dv.experts_activated()["small_batch"].rhs.removeO()
    assert sp.simplify((series - moe_forms.experts_activated_expr).subs(moe_forms.B, 2)) == 0


def test_count_saturates_and_knee_is_the_papers():
    assert moe.experts_activated(50 * 256 / 6, 6, 256) == pytest.approx(256, rel=1e-12)
    assert dv.experts_activated()["knee"].value == pytest.approx(42.7, abs=0.05)  # docs/model.md


def test_dense_knee_meets_the_ridge_for_both_weight_sizes():
    d = dv.moe_intensity()
    knee = d["dense_knee"].value
    assert moe.dense_equivalent_intensity(knee, capped=False) == pytest.approx(R_FP4, rel=1e-12)
    assert knee == pytest.approx(298, abs=0.5)  # docs/model.md
    half = dataclasses.replace(V4, ffn=dataclasses.replace(V4.ffn, weight_bytes=0.5))
    knee_half = d["dense_knee_half"].value
    assert moe.dense_equivalent_intensity(knee_half, half, capped=False) == pytest.approx(R_FP4, rel=1e-12)


def test_moe_ridge_crossing_meets_the_ridge():
    d = dv.moe_intensity()
    crossing = d["ridge"].value
    assert moe.ffn_intensity(crossing, capped=False) == pytest.approx(R_FP4, rel=1e-9)
    assert crossing == pytest.approx(10_950, rel=1e-3)  # docs/model.md
    assert d["ridge_exact"].value == pytest.approx(moe.knees()["moe_ridge"], rel=1e-9)
    half = dataclasses.replace(V4, ffn=dataclasses.replace(V4.ffn, weight_bytes=0.5))
    assert moe.ffn_intensity(d["ridge_half"].value, half, capped=False) == pytest.approx(R_FP4, rel=1e-9)


def test_far_out_slope_ratio_matches_finite_differences():
    far = slope(lambda b: moe.ffn_intensity(b, capped=False), 5000.0)
    dense = slope(lambda b: moe.dense_equivalent_intensity(b, capped=False), 5000.0)
    assert dv.moe_intensity()["slope_ratio"].value == pytest.approx(far / dense, rel=1e-6)


def test_origin_slopes_match_finite_differences_and_a_grid_search():
    d = dv.moe_origin_slope()
    I = lambda b: moe.ffn_intensity(b, capped=False)  # noqa: E731
    far = slope(I, 20_000.0)
    assert d["far"].value == pytest.approx(far, rel=1e-6)
    assert d["origin"].value == pytest.approx(slope(I, 1e-7, rel=1e-3) / far, rel=1e-3)
    assert d["at_one"].value == pytest.approx(slope(I, 1.0) / far, rel=1e-6)
    assert moe.ffn_intensity(1.0) == pytest.approx(moe.dense_equivalent_intensity(1.0), rel=1e-12)
    grid = np.arange(1.0, 200.0, 1e-3)
    local = np.gradient(I(grid), grid) / far
    assert d["dip_at"].value == pytest.approx(grid[np.argmin(local)], abs=5e-3)
    assert d["dip"].value == pytest.approx(local.min(), rel=1e-6)


# --- attention -------------------------------------------------------------------------


def test_generic_crossover_reaches_the_ridge():
    T_x = numeric(dv.attention_intensity().final, m_c=576.0, f=139264.0, R=R_BF16)
    assert attention.attention_intensity(T_x, LONG) == pytest.approx(R_BF16, rel=1e-9)


def test_mla_constants_are_the_papers():
    d = dv.mla()
    assert (d["m_c"].value, d["m_q"].value, d["f"].value) == (576, 73_728, 139_264)  # docs/model.md
    assert d["ratio"].value == 128
    assert round(attention.attention_intensity(1, 1_048_576)) == 242  # Table 1
    assert d["decode"].value >= attention.attention_intensity(1, 1_048_576)
    assert d["crossover"].value == pytest.approx(1.16, abs=0.005)  # docs/model.md
    assert attention.attention_intensity(d["crossover"].value, LONG) == pytest.approx(R_BF16, rel=1e-9)


def test_hca_crossing_context_meets_the_ridge_at_two_tokens():
    d = dv.hca()
    S = d["ridge_T2"].value
    assert attention.attention_intensity(2, S, variant="hca") == pytest.approx(R_BF16, rel=1e-9)
    assert S == pytest.approx(45_000, rel=0.02)  # docs/model.md: "about 45k"


def test_hca_floor_context_is_where_no_width_is_compute_bound():
    S_min = dv.hca()["floor"].value
    assert attention.attention_intensity(1e9, S_min * 0.999, variant="hca") < R_BF16
    assert attention.attention_intensity(1e9, S_min * 1.001, variant="hca") > R_BF16


def test_csa_main_attention_is_the_table_row_at_512():
    # one selection shared by the verify, as the post reads it: Table 1's S = 512 row
    d = dv.csa()
    for T, key, printed in ((1, "main_T1", 193), (2, "main_T2", 322)):
        assert d[key].value == pytest.approx(attention.attention_intensity(T, 1e7, variant="csa", csa_overlap=1),
                                             rel=1e-12)
        assert round(d[key].value) == printed  # Table 1, S = 512
    assert attention.attention_intensity(d["main_crossover"].value, 1e7, variant="csa",
                                         csa_overlap=1) == pytest.approx(R_BF16)


def test_csa_own_selections_stay_at_decode_intensity():
    # each position its own top 512 (speclib's default): T * 512 pairs over T * 512 positions read, counted
    # here from the constants docs/model.md prints, 193 at every width
    d = dv.csa()
    own = 139_264 * 512 / (576 * 512 + 73_728)
    assert d["own_T2"].value == pytest.approx(own, rel=1e-12)
    assert round(d["own_T2"].value) == 193 < R_BF16
    for T in (2, 4, 8):
        assert attention.attention_intensity(T, 1e7, variant="csa") == pytest.approx(own, rel=1e-12)


def test_indexer_first_compute_bound_width_by_brute_force():
    d = dv.csa()
    widths = np.arange(1, 11)
    compute_bound = attention.attention_intensity(widths, LONG, variant="indexer") > R_BF16
    assert d["idx_first"].value == widths[compute_bound][0]
    assert attention.attention_intensity(10.0, LONG, variant="indexer") / 10 == pytest.approx(
        numeric(d["idx_long"], T=1))
    assert d["idx_ratio"].value == 128
    for T in (3, 4):
        S = d[f"idx_S_T{T}"].value
        assert attention.attention_intensity(T, S, variant="indexer") == pytest.approx(R_BF16, rel=1e-9)


def test_gqa_and_mha_long_context_intensity():
    d = dv.gqa()
    assert d["model"].rhs == 8 * attention_forms.T
    assert d["mha"].rhs == attention_forms.T
    for width in (1.0, 4.0):
        assert attention.attention_intensity(width, LONG, LLAMA) == pytest.approx(8 * width, rel=1e-9)
        mha = dataclasses.replace(LLAMA, attention=dataclasses.replace(LLAMA.attention, n_kv_heads=64))
        assert attention.attention_intensity(width, LONG, mha) == pytest.approx(width, rel=1e-9)


def test_mha_form_crossover_by_brute_force():
    a = V4.attention
    values = {attention_forms.d_c: a.kv_lora_rank, attention_forms.d_r: a.rope_dim, attention_forms.d_n: a.mha_nope_dim,
              attention_forms.d_v: a.mha_v_dim, attention_forms.n_h: a.n_heads, attention_forms.S: 1000}
    mqa = sp.lambdify(attention_forms.T, attention_forms.mqa_form_flops_expr.subs(values))
    mha = sp.lambdify(attention_forms.T, attention_forms.mha_form_flops_expr.subs(values))
    widths = np.arange(1, 1000)
    first_cheaper = widths[mha(widths) < mqa(widths)][0]
    crossover = dv.mla_forms().final.value
    assert first_cheaper == int(np.floor(crossover)) + 1
    assert crossover == pytest.approx(170, abs=1)  # docs/model.md


# --- marginal cost ----------------------------------------------------------------------


def test_log_slope_is_a_log_log_finite_difference():
    t = cost_forms.t
    C = sp.Function("C")
    concrete = t**3 + 2 * t
    r = sp.lambdify(t, dv.log_slope()["log_slope"].rhs.subs(C(t), concrete).doit())
    fn = sp.lambdify(t, concrete)
    for value in (0.5, 3.0):
        assert r(value) == pytest.approx(log_slope(fn, value), rel=1e-6)


def test_projection_knee_switches_the_numeric_slope():
    knee = dv.projection_slope().final.value
    cm = cost.cost_model(attention="paper")
    assert cm.proj_slope(knee * 0.99) == 0 and cm.proj_slope(knee * 1.01) == 1
    assert knee == pytest.approx(281, abs=0.5)  # docs/model.md


def test_moe_slope_matches_finite_differences_of_the_cost():
    d = dv.moe_slope()
    cm = cost.cost_model(attention="paper")
    assert d["at_one"].value == pytest.approx(log_slope(cm.ffn, 1.0), rel=1e-6)
    assert d["at_one"].value == pytest.approx(0.85, abs=0.005)  # docs/model.md
    no_shared = dataclasses.replace(V4, ffn=dataclasses.replace(V4.ffn, n_shared=0))
    cm0 = cost.cost_model(no_shared, attention="paper")
    assert d["at_one_no_shared"].value == pytest.approx(log_slope(cm0.ffn, 1.0), rel=1e-6)
    assert d["at_one_no_shared"].value == pytest.approx(0.99, abs=0.005)  # docs/model.md
    assert d["at_knee"].value == pytest.approx(log_slope(cm.ffn, 256 / 6), rel=1e-6)
    assert log_slope(cm.ffn, 5000.0) < 1e-6
    t_ridge = d["compute_from"].value
    assert cm.ffn_slope(t_ridge * 1.001) == pytest.approx(1) and cm.ffn_slope(t_ridge * 0.999) < 1e-6


def test_attention_crossovers_switch_the_numeric_slope():
    d = dv.attention_slope()
    plain, with_q = cost.cost_model(attention="paper"), cost.cost_model(query_bytes=True, attention="paper")
    q_x = d["crossover_noq"].value
    assert plain.attention_slope(1.0, q_x * 0.99, 512.0) == 0
    assert plain.attention_slope(1.0, q_x * 1.01, 512.0) == 1
    S_2 = d["S_q2"].value
    assert with_q.attention_slope(1.0, 2.0, S_2 * 1.01) == 1
    assert with_q.attention_slope(1.0, 2.0, S_2 * 0.99) < 1
    for S in (512, 8192):
        ratio = with_q.attention(1.0, 1.0, float(S)) / plain.attention(1.0, 1.0, float(S))
        assert d[f"bytes_ratio_{S}"].value == pytest.approx(ratio, rel=1e-12)


def test_blend_is_the_log_slope_of_the_numeric_total():
    cm = cost.cost_model(attention="paper")
    B, S, q = 300.0, 4096.0, 1.5  # every component away from its kink

    def total(width):
        return cm.proj(B * width) + cm.ffn(B * width) + cm.attention(B, width, S)

    parts = [(cm.proj_slope(B * q), cm.proj(B * q)), (cm.ffn_slope(B * q), cm.ffn(B * q)),
             (cm.attention_slope(B, q, S), cm.attention(B, q, S))]
    blended = sum(r * C for r, C in parts) / sum(C for _, C in parts)
    assert blended == pytest.approx(log_slope(total, q), rel=1e-5)
    # and the last step: a log-slope in q is the slope in t read at t = B q
    assert log_slope(lambda width: cm.ffn(B * width), q) == pytest.approx(cm.ffn_slope(B * q), rel=1e-5)
    assert dv.ledger_blend().final.key == "t_vs_q"


# --- speculation -----------------------------------------------------------------------------


def test_committed_tokens_match_a_simulated_accept_process():
    rng = np.random.default_rng(8)
    N = dv.committed_tokens()["summation"].rhs
    for alpha, gamma in ((0.6, 3), (0.9, 8)):
        accepted = rng.random((200_000, gamma)) < alpha
        prefix = np.cumprod(accepted, axis=1).sum(axis=1)
        simulated = (prefix + 1).mean()
        assert float(N.subs({speclib.formulas.acceptance.alpha: alpha, speclib.formulas.acceptance.gamma: gamma})) == pytest.approx(
            simulated, rel=5e-3)


def test_committed_limit_and_series():
    d = dv.committed_tokens()
    gamma = speclib.formulas.acceptance.gamma
    for g in (1, 4, 16):
        assert d["limit"].rhs.subs(gamma, g) == pytest.approx(speclib.expected_committed(1 - 1e-9, g), rel=1e-6)
        eps = 1e-3
        series = d["series"].rhs.removeO().subs({gamma: g, sp.Symbol("epsilon", positive=True): eps})
        assert float(series) == pytest.approx(speclib.expected_committed(1 - eps, g), abs=10 * (g * eps) ** 3)


def leviathan_speedup(alpha, gamma, c):
    """Leviathan, Kalman & Matias (2023), Theorem 3.8: expected walltime
    improvement (1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1))."""
    return (1 - alpha ** (gamma + 1)) / ((1 - alpha) * (gamma * c + 1))


def test_reduction_is_leviathans_formula_at_random_points():
    d = dv.speedup_reduction()
    alpha, gamma, c = speclib.formulas.acceptance.alpha, speclib.formulas.acceptance.gamma, speclib.formulas.speculation.c
    rho = sp.Symbol("rho", nonnegative=True)
    flat = sp.lambdify((alpha, gamma, c), d["leviathan"].rhs)
    linear = sp.lambdify((alpha, gamma, c, rho), d["linear_leviathan"].rhs)
    rng = np.random.default_rng(2023)
    a = rng.uniform(0.01, 0.99, 50)
    g = rng.integers(1, 20, 50)
    cc = rng.uniform(0, 1, 50)
    r = rng.uniform(0, 1, 50)
    np.testing.assert_allclose(flat(a, g, cc), leviathan_speedup(a, g, cc), rtol=1e-12)
    np.testing.assert_allclose(linear(a, g, cc, r), leviathan_speedup(a, g, cc + r), rtol=1e-12)
    # and speclib's numeric speedup ingredients agree when C_v = C_0
    N = speclib.expected_committed(a, g)
    np.testing.assert_allclose(N / (1 + cc * g), leviathan_speedup(a, g, cc), rtol=1e-12)


def test_break_even_gain_by_simulation():
    d = dv.break_even()
    assert sp.simplify(d["bookkeeping"].rhs - (sp.Symbol("p", nonnegative=True) - sp.Symbol("r", nonnegative=True))) == 0
    rng = np.random.default_rng(1)
    p, r = 0.7, 0.45
    accepted = rng.random(400_000) < p
    gain = np.where(accepted, 1 - r, -r).mean()
    assert gain == pytest.approx(p - r, abs=3e-3)


def test_break_even_with_speclibs_speedup():
    cm = cost.cost_model(attention="paper")
    B, S, c_draft = 64.0, 4096.0, 0.1
    r = cm.verify(B, 2.0, S) / cm.decode(B, S) - 1
    assert 0 < r + c_draft < 0.95
    assert speclib.speedup(r + c_draft + 0.02, 1, B, S, c_draft, deployment=PAPER) > 1
    assert speclib.speedup(r + c_draft - 0.02, 1, B, S, c_draft, deployment=PAPER) < 1
    assert speclib.speedup(r + c_draft, 1, B, S, c_draft, deployment=PAPER) == pytest.approx(1, rel=1e-12)


def test_break_even_example_matches_the_numeric_model():
    """The derivation's numbers come from sympy on the roofline expressions;
    the numeric ledger, verify price and speedup are another route."""
    d = dv.break_even()
    ledger, price, alpha = (float(x) for x in d["example"].rhs)
    assert ledger == pytest.approx(speclib.marginal_cost(16, 4096, 0.1, attention="paper")["total"], rel=1e-3)
    assert price == pytest.approx(cost.verify_price(16, 4096, 0.1, attention="paper")["total"], rel=1e-3)
    assert alpha == 0.75 and ledger > alpha > price
    assert d["example_speedup"].value == pytest.approx(speclib.speedup(0.75, 1, 16, 4096, 0.1, deployment=PAPER),
                                                       rel=1e-3)
    assert d["Sp1_condition"].expr == (speclib.formulas.acceptance.alpha > speclib.formulas.speculation.P_v)


def test_break_even_secant_and_slope_steps_on_a_cost_counted_by_hand():
    """The secant step is (C(2) - C(1)) / C(1) and the slope step C'(1) / C(1):
    evaluated on a made-up cost, against numbers computed by hand."""
    d = dv.break_even()
    C = sp.Function("C")

    def made_up(expr):  # C(q) = 3 + q^2: C(1) = 4, C(2) = 7, C'(1) = 2
        return expr.replace(C, lambda x: 3 + x ** 2).doit()

    secant, average = made_up(d["secant"].terms[1]), made_up(d["secant"].terms[2])
    slope = made_up(d["slope"].rhs)
    assert secant == sp.Rational(3, 4) and average == sp.Rational(3, 4)
    assert slope == sp.Rational(1, 2)


def test_ledger_query_bytes_matches_the_numeric_ledger():
    d = dv.ledger_query_bytes()
    batches = np.array([1.0, 64.0, 512.0, 4096.0])
    without = speclib.marginal_cost(batches, 512.0, 0.1, attention="paper")["total"]
    with_q = speclib.marginal_cost(batches, 512.0, 0.1, query_bytes=True, attention="paper")["total"]
    for step, a, b in zip(d, without, with_q):
        shown = [float(x) for x in step.rhs]
        np.testing.assert_allclose(shown, [a, b, b - a], rtol=1e-3)


def test_first_speculated_token_step_price_matches_the_numeric_costs_and_model_md():
    secant = dv.attention_slope()["secant_noq"].value
    plain = cost.cost_model(attention="paper")
    for B in (1.0, 64.0, 4096.0):
        for S in (512.0, 8192.0, 131072.0):
            step = plain.attention(B, 2.0, S) / plain.attention(B, 1.0, S) - 1
            assert secant == pytest.approx(step, rel=1e-12)
    # docs/model.md: f = 139,264 FLOP/pair, m_c = 576 B, bf16 ridge 2.25e15 / 8e12
    assert secant == pytest.approx(2 * 139_264 / (2.25e15 / 8e12) / 576 - 1, rel=1e-12)
