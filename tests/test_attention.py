"""The attention roofline (speclib.attention): AI(T, S), the MLA/GQA/indexer
constants, DeepSeek-V4's HCA and CSA variants and the two crossovers.

Independent routes: sympy limits and identities; sympy ``evalf`` with the
paper's constants typed from docs/model.md (not read from the presets); a bisection
on the numeric function; Table 1 and the other numbers the paper prints.
"""
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from speclib.formulas import attention as at_forms
import speclib
from speclib.core import attention as at
from speclib import presets

V4 = presets.DEEPSEEK_V4_FLASH
BF16_RIDGE = 281.25  # 2.25 PFLOP/s / 8 TB/s (docs/model.md)

# docs/model.md's MLA constants for DeepSeek-V4-Flash.
M_C, M_Q, F = 576, 73_728, 139_264


# --- symbolic -----------------------------------------------------------------


def test_long_context_limit_is_f_T_over_m_c():
    assert sp.simplify(sp.limit(at_forms.intensity_expr, at_forms.S, sp.oo) - at_forms.f * at_forms.T / at_forms.m_c) == 0


def test_query_to_context_bytes_ratio():
    ratio = at_forms.mla_query_bytes_expr / at_forms.mla_context_bytes_expr
    assert sp.simplify(ratio - at_forms.n_h * at_forms.b_q / at_forms.b_kv) == 0


def test_compute_bound_width_is_m_c_R_over_f():
    assert sp.simplify(at_forms.compute_bound_width_expr - at_forms.m_c * at_forms.R / at_forms.f) == 0
    # and it is where the long-context intensity meets the ridge
    long_context = (at_forms.f * at_forms.T / at_forms.m_c).subs(at_forms.T, at_forms.compute_bound_width_expr)
    assert sp.simplify(long_context - at_forms.R) == 0


def test_mha_form_crossover_equalises_the_two_forms_flops():
    at_crossover = (at_forms.mqa_form_flops_expr - at_forms.mha_form_flops_expr).subs(at_forms.T, at_forms.mha_form_crossover_expr)
    assert sp.simplify(at_crossover) == 0


def test_past_the_mha_crossover_the_up_projected_form_is_cheaper():
    widths = {at_forms.d_c: 512, at_forms.d_r: 64, at_forms.d_n: 128, at_forms.d_v: 128, at_forms.n_h: 64, at_forms.S: 4096}
    crossover = float(at_forms.mha_form_crossover_expr.subs(widths))
    for T_value, mha_cheaper in ((crossover * 0.9, False), (crossover * 1.1, True)):
        values = {**widths, at_forms.T: T_value}
        mqa = float(at_forms.mqa_form_flops_expr.subs(values))
        mha = float(at_forms.mha_form_flops_expr.subs(values))
        assert (mha < mqa) is mha_cheaper


# --- the paper's constants and Table 1 (docs/model.md section 2) ----------------------


def test_paper_mla_constants():
    assert V4.context_bytes == M_C
    assert V4.query_bytes == M_Q
    assert V4.flops_per_pair == F
    assert V4.query_bytes / V4.context_bytes == 128  # n_h * b_q / b_kv = 64 * 2 / 1


TABLE_1 = {  # S: intensities at T = 1, 2, 4, 8, as printed
    512: (193, 322, 484, 645),
    1_024: (215, 387, 645, 967),
    8_192: (238, 469, 910, 1719),
    16_384: (240, 476, 938, 1820),
    1_048_576: (242, 483, 967, 1932),
}
TABLE_1_T = (1, 2, 4, 8)


@pytest.mark.parametrize("S", sorted(TABLE_1))
def test_paper_table_1_to_the_printed_integer(S):
    got = speclib.attention_intensity(np.array(TABLE_1_T, dtype=float), S)
    printed = TABLE_1[S]
    assert [int(np.floor(x + 0.5)) for x in got] == list(printed)


def test_paper_table_1_bold_cells_are_the_compute_bound_ones():
    T, S = np.meshgrid(TABLE_1_T, sorted(TABLE_1))
    got = speclib.attention_intensity(T, S)
    bold = T >= 2  # the paper bolds every cell from T = 2 on
    assert np.array_equal(got > BF16_RIDGE, bold)


def test_paper_attention_crossover():
    width = at.compute_bound_width()
    assert round(width, 2) == 1.16
    # and the numeric intensity agrees that q = 2 is compute-bound at every S
    S = np.geomspace(1, 1e9, 50)
    assert np.all(speclib.attention_intensity(2, S, query_bytes=False) > BF16_RIDGE)
    assert np.all(speclib.attention_intensity(width, S, query_bytes=False) == pytest.approx(BF16_RIDGE))


def test_paper_mha_form_crossover_is_about_170():
    # speclib's widths (DeepSeek-V3's 128/128 up-projection) give 512*256/768.
    crossover = at.mha_form_crossover()
    assert 170 <= crossover < 171
    assert crossover == pytest.approx(512 * 256 / 768)


def bisect(fn, lo, hi, target, iterations=200):
    """The x in [lo, hi] where increasing ``fn`` crosses ``target``."""
    for _ in range(iterations):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if fn(mid) < target else (lo, mid)
    return lo


def test_paper_hca_two_tokens_cross_the_ridge_near_45k():
    S_cross = bisect(lambda s: speclib.attention_intensity(2, s, variant="hca"), 1e3, 1e7, BF16_RIDGE)
    # The paper says "S ~ 45k"; the model gives 45,556.
    assert 45_000 <= S_cross < 46_000


def test_paper_hca_moderate_verifies_stay_memory_bound_around_20k():
    assert np.all(speclib.attention_intensity(np.array([2, 4, 8]), 20_000, variant="hca") < BF16_RIDGE)


def test_hca_compresses_the_context_but_not_the_query_term():
    S = np.geomspace(128, 1e7, 30)
    expected = F * 2 * (S / 128) / (M_C * (S / 128) + M_Q * 2)
    np.testing.assert_allclose(speclib.attention_intensity(2, S, variant="HCA"), expected, rtol=1e-12)


def test_paper_csa_main_attention_is_table_1_row_512_at_any_long_context():
    row_512 = np.array(TABLE_1[512], dtype=float)
    for S in (4_096, 65_536, 1_048_576):
        # the post's reading: one top-512 selection shared by the verify's positions
        got = speclib.attention_intensity(np.array(TABLE_1_T, dtype=float), S, variant="csa", csa_overlap=1)
        assert [int(np.floor(x + 0.5)) for x in got] == list(row_512)
        assert got[0] < BF16_RIDGE < got[1]


def test_paper_indexer_intensity_is_about_128_T():
    T = np.array([1.0, 2.0, 4.0, 8.0])
    got = speclib.attention_intensity(T, 1e9, variant="indexer")
    np.testing.assert_allclose(got / T, 128, rtol=1e-3)
    # memory-bound for a token or two; compute-bound from T = 3 (the paper's
    # "by T ~ 4" is loose: 128 * 3 = 384 > 281 already)
    assert list(got[:2] < BF16_RIDGE) == [True, True]
    assert speclib.attention_intensity(3, 1e9, variant="indexer") > BF16_RIDGE


def test_paper_gqa_llama_runs_at_about_8_T():
    T = np.array([1.0, 2.0, 4.0])
    got = speclib.attention_intensity(T, 1e9, model="Llama-3-70B")
    np.testing.assert_allclose(got / T, 8, rtol=1e-3)


def test_ledger_form_drops_the_query_term():
    S = np.geomspace(1, 1e6, 20)
    np.testing.assert_allclose(speclib.attention_intensity(4, S, query_bytes=False), F * 4 / M_C, rtol=1e-12)


# --- numpy against sympy evalf ------------------------------------------------

VARIANT_CONTEXT = {  # effective context per variant, from docs/model.md's description
    "mla": lambda S: S,
    "hca": lambda S: S / 128,
    "csa": lambda S: sp.Min(S / 4, 512),
}


@settings(max_examples=50, deadline=None)
@given(
    T=st.floats(min_value=1e-3, max_value=1e4, allow_nan=False),
    S=st.floats(min_value=1.0, max_value=1e8, allow_nan=False),
    variant=st.sampled_from(sorted(VARIANT_CONTEXT)),
)
def test_intensity_equals_sympy_evalf(T, S, variant):
    S_eff = VARIANT_CONTEXT[variant](sp.Float(S, 30))
    values = {at_forms.T: sp.Float(T, 30), at_forms.S: S_eff, at_forms.m_c: M_C, at_forms.m_q: M_Q, at_forms.f: F}
    expected = float(at_forms.intensity_expr.subs(values).evalf(30))
    overlap = {"csa_overlap": 1} if variant == "csa" else {}  # one shared selection: AI at the selected context
    assert speclib.attention_intensity(T, S, variant=variant, **overlap) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(
    T=st.floats(min_value=1e-3, max_value=1e4, allow_nan=False),
    S=st.floats(min_value=1.0, max_value=1e8, allow_nan=False),
)
def test_indexer_intensity_equals_sympy_evalf(T, S):
    # 64 heads, one 128-wide fp8 key per 4x-compressed position, bf16 queries,
    # score only (docs/model.md).
    constants = {at_forms.n_h: 64, at_forms.d_h: 128, at_forms.b_kv: 1, at_forms.b_q: 2}
    values = {
        at_forms.T: sp.Float(T, 30),
        at_forms.S: sp.Float(S, 30) / 4,
        at_forms.m_c: at_forms.indexer_context_bytes_expr.subs(constants),
        at_forms.m_q: at_forms.indexer_query_bytes_expr.subs(constants),
        at_forms.f: at_forms.indexer_flops_per_pair_expr.subs(constants),
    }
    expected = float(at_forms.intensity_expr.subs(values).evalf(30))
    assert speclib.attention_intensity(T, S, variant="indexer") == pytest.approx(expected, rel=1e-12)


def test_intensity_from_constants_broadcasts():
    out = at.intensity_from_constants(np.array([[1.0], [2.0]]), np.array([512.0, 1024.0, 2048.0]), M_C, M_Q, F)
    assert out.shape == (2, 3)


def test_csa_main_attention_reads_all_compressed_positions_below_top_k():
    # docs/model.md: CSA compresses ~4x, keeps the top ~512 positions; MLA constants
    # f = 139,264, m_c = 576, m_q = 73,728. At S = 1,024 only 256 compressed
    # positions exist, so all are attended; from S = 2,048 the cap binds.
    def mla(T, S):
        return 139_264 * T * S / (576 * S + 73_728 * T)

    assert speclib.attention_intensity(1, 1024, variant="csa") == pytest.approx(mla(1, 256), rel=1e-12)
    assert speclib.attention_intensity(2, 2048, variant="csa") == pytest.approx(mla(2, 512), rel=1e-12)
    # past the cap each query position reads its own 512 (the post's reading: one shared selection)
    assert speclib.attention_intensity(2, 10**6, variant="csa", csa_overlap=1) == pytest.approx(mla(2, 512), rel=1e-12)
    assert speclib.attention_intensity(2, 10**6, variant="csa") == pytest.approx(
        139_264 * 2 * 512 / (576 * 1024 + 73_728 * 2), rel=1e-12)


def test_variant_contexts_are_the_sympy_substitutions():
    S, c, K = at_forms.S, at_forms.c_hca, at_forms.K_csa
    assert at_forms.hca_context_expr == S / c
    assert at_forms.csa_context_expr.subs({at_forms.c_csa: 4, K: 512, S: 4096}) == 512
    assert at_forms.csa_context_expr.subs({at_forms.c_csa: 4, K: 512, S: 1024}) == 256


def test_linear_intensity_of_the_hybrid_is_over_its_state_read_and_written():
    """GatedDeltaNet: 8 FLOP per state element per position over the bytes a
    step moves, the state read and written back (docs/sequel.md: state
    32 x 128 x 128 x 2 B plus the convolution's 8,192 x 4 x 2 B per layer)."""
    T = np.array([1.0, 2.0, 16.0])
    expected = 8 * 32 * 128 * 128 * T / (2 * (32 * 128 * 128 * 2 + 8192 * 4 * 2))
    np.testing.assert_allclose(speclib.core.attention.linear_intensity(T), expected, rtol=1e-14)
    with pytest.raises(ValueError, match=r"^model must be a hybrid"):
        speclib.core.attention.linear_intensity(1.0, "Llama-3-70B")
    with pytest.raises(ValueError, match=r"^T must be a number in \(0, inf\)"):
        speclib.core.attention.linear_intensity(0.0)
