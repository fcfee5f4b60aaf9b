"""The reproduction registry (speclib.claims): one test per claim.

A claim expected to reproduce fails if our value leaves the tolerance of the
paper's value. A claim expected to differ must say why, and its value is pinned
by an independent route so that any later change to the model shows up:
brute-force scans and bisections, enumeration of acceptance outcomes, and
sympy ``evalf`` of speclib's cost expressions with the architecture numbers
typed here from docs/model.md and from the sources the presets cite. Nothing here is
copied from claims.py's output.
"""
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from speclib.formulas import attention as attention_forms
from speclib.formulas import cost as cost_forms
from speclib.core import attention
from speclib.evidence import claims
from speclib.core import cost

CLAIMS = claims.registry()
BY_ID = {c.id: c for c in CLAIMS}

# --- docs/model.md, typed from its text ---------------------------------------------------
R_BF16 = 2.25e15 / 8e12  # B200 bf16 ridge, FLOP/byte
MLA = {"m_c": 576, "m_q": 73_728, "f": 139_264}
HCA_RATIO = 128
INDEXER = {"m_c": 128 * 1, "m_q": 64 * 128 * 2, "f": 2 * 64 * 128}  # one 128-wide fp8 key; 64 bf16 query heads; score only

# Table 1 exactly as docs/model.md prints it, and its bold cells (compute-bound).
TABLE1 = {
    512: (193, 322, 484, 645),
    1024: (215, 387, 645, 967),
    8192: (238, 469, 910, 1719),
    16384: (240, 476, 938, 1820),
    1048576: (242, 483, 967, 1932),
}
PAPER_VALUES = {
    "mla.m_c": 576,
    "mla.m_q": 73_728,
    "mla.f": 139_264,
    "mla.query_context_ratio": 128,
    "ridge.bf16": 281,
    "ridge.fp8": 563,
    "ridge.fp4": 1125,
    "moe.expert_knee": 43,
    "moe.dense_knee": 298,
    "moe.ridge_asymptotic": 10_950,
    "moe.ridge_exact": 10_950,
    "ledger.r_moe_b1": 0.85,
    "ledger.r_moe_b1_no_shared": 0.99,
    "ledger.proj_knee": 281,
    "ledger.attention_crossover": 1.16,
    "hca.t2_ridge_context": 45_000,  # "about 45k"
    "hca.speculation_band_high": 40_000,  # "about 30k and 40k": the band's upper edge
    "moe.origin_half_slope_with_shared": 0.5,
    "moe.batch1_half_slope_with_shared": 0.5,
    "csa.indexer_slope": 128,
    "mla.mha_form_crossover": 170,
    "attention.gqa_slope": 8,
    "older.tokens_per_pass": 3.2,
    "model.expert_params": 25_165_824,
    "model.attn_proj_params": 107,
    **{f"table1.value.S{s}_T{t}": v for s, row in TABLE1.items() for t, v in zip((1, 2, 4, 8), row)},
}

# --- Llama-3-70B (Meta config.json) and H100 SXM (datasheet, dense) -------------------
LLAMA_HIDDEN, LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_HEAD_DIM, LLAMA_FFN = 8192, 64, 8, 128, 28672
# q, k, v projections (hidden -> (64 + 2*8) heads x 128) and o (64 x 128 -> hidden)
LLAMA_W_ATTN = LLAMA_HIDDEN * (LLAMA_HEADS + 2 * LLAMA_KV_HEADS) * LLAMA_HEAD_DIM + LLAMA_HEADS * LLAMA_HEAD_DIM * LLAMA_HIDDEN
LLAMA_W_FFN = 3 * LLAMA_HIDDEN * LLAMA_FFN  # gate, up, down
H100_RIDGE_BF16 = 989.4e12 / 3.35e12
GQA_SUBS = {attention_forms.n_h: LLAMA_HEADS, attention_forms.n_kv: LLAMA_KV_HEADS, attention_forms.d_h: LLAMA_HEAD_DIM, attention_forms.b_kv: 2, attention_forms.b_q: 2}
LLAMA_M_C = float(attention_forms.gqa_context_bytes_expr.subs(GQA_SUBS))
LLAMA_F = float(attention_forms.gqa_flops_per_pair_expr.subs(GQA_SUBS))


def llama_step_cost(batch, width, context):
    """C_verify for Llama-3-70B on an H100 by sympy evalf of speclib's cost
    expressions (bf16 weights, query bytes left out as in the ledger)."""
    tokens = batch * width
    gemm = lambda weights: cost_forms.gemm_cost_expr.subs(  # noqa: E731
        {cost_forms.W: weights, cost_forms.b_w: 2, cost_forms.R: H100_RIDGE_BF16, cost_forms.t: tokens}
    )
    attn = cost_forms.attn_cost_expr.subs(
        {cost_forms.B: batch, cost_forms.q: width, cost_forms.S: context, cost_forms.m_c: LLAMA_M_C, cost_forms.m_q: 0, cost_forms.f: LLAMA_F, cost_forms.R: H100_RIDGE_BF16}
    )
    return float((gemm(LLAMA_W_ATTN) + gemm(LLAMA_W_FFN) + attn).evalf(30))


def committed_by_prefix(alpha, gamma):
    """Expected tokens per verify pass from the distribution of the accepted
    prefix (j drafts accepted, then a rejection or the end), plus the bonus token."""
    total = 0.0
    for j in range(gamma + 1):
        p = alpha**j * ((1 - alpha) if j < gamma else 1.0)
        total += p * (j + 1)
    return total


def llama_best_speedup(alpha, batch, context, c_draft, gamma_max):
    base = llama_step_cost(batch, 1, context)
    gains = [
        committed_by_prefix(alpha, g) * base / (llama_step_cost(batch, g + 1, context) + c_draft * g * base)
        for g in range(gamma_max + 1)
    ]
    best = max(range(gamma_max + 1), key=lambda g: (gains[g], -g))
    return best, gains[best]


def mla_intensity(T, S, consts=MLA):
    return float(attention.intensity_from_constants(T, S, consts["m_c"], consts["m_q"], consts["f"]))


def bisect(fn, lo, hi, iters=200):
    """Root of an increasing fn on [lo, hi] by bisection."""
    assert fn(lo) < 0 < fn(hi)
    for _ in range(iters):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fn(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def hca_t2_crossing():
    return bisect(lambda S: mla_intensity(2, S / HCA_RATIO) - R_BF16, 1e3, 1e6)


def first_width_above_ridge(consts, S_eff, ridge=R_BF16):
    for T in range(1, 10_000):
        if mla_intensity(T, S_eff, consts) > ridge:
            return T
    raise AssertionError("no width reaches the ridge")


# --- the pinned values of the claims that differ ---------------------------------------


def pin_origin_slope_with_shared():
    # finite differences of the (uncapped) MoE intensity near the origin and far out
    from speclib.core import moe

    h = 1e-6
    near = (moe.ffn_intensity(2e-4 + h, capped=False) - moe.ffn_intensity(2e-4 - h, capped=False)) / (2 * h)
    far = moe.ffn_intensity(1e6 + 1, capped=False) - moe.ffn_intensity(1e6, capped=False)
    return near / far, 1e-2


def pin_slope_at_one_with_shared():
    # the same finite differences at a batch of one
    from speclib.core import moe

    h = 1e-6
    here = (moe.ffn_intensity(1 + h, capped=False) - moe.ffn_intensity(1 - h, capped=False)) / (2 * h)
    far = moe.ffn_intensity(1e6 + 1, capped=False) - moe.ffn_intensity(1e6, capped=False)
    return here / far, 1e-3


def pin_gqa_hundreds():
    first = first_width_above_ridge({"m_c": LLAMA_M_C, "m_q": 0, "f": LLAMA_F}, 1e9)
    assert first == 36  # 8 T > 281.25 first at T = 36
    return float(first >= 100), 0


def pin_hca_crossing():
    return hca_t2_crossing(), 1e-6


def pin_hca_speedup_band():
    # At S = 10,000, well outside 25k-45k, a draft of one already pays for HCA
    # attention on its own (alpha = 0.75, no drafter cost, query bytes counted).
    s = 10_000 / HCA_RATIO
    subs = {cost_forms.B: 1, cost_forms.S: s, cost_forms.m_c: MLA["m_c"], cost_forms.m_q: MLA["m_q"], cost_forms.f: MLA["f"], cost_forms.R: R_BF16}
    c1 = float(cost_forms.attn_cost_expr.subs({**subs, cost_forms.q: 1}))
    c2 = float(cost_forms.attn_cost_expr.subs({**subs, cost_forms.q: 2}))
    assert committed_by_prefix(0.75, 1) * c1 / c2 > 1
    return 0.0, 0


def pin_indexer_first_compute_bound():
    return float(first_width_above_ridge(INDEXER, 1e12)), 0


def pin_crossover_with_query_bytes():
    return bisect(lambda T: mla_intensity(T, 512) - R_BF16, 1.0, 2.0), 1e-9


def pin_tokens_per_pass():
    # all 2^4 accept/reject patterns of 4 drafts; a pass commits the accepted
    # prefix plus the target's bonus token
    total = 0.0
    for pattern in itertools.product((True, False), repeat=4):
        p = math.prod(0.8 if a else 0.2 for a in pattern)
        prefix = next((i for i, a in enumerate(pattern) if not a), 4)
        total += p * (prefix + 1)
    return total, 1e-12


def pin_speedup_alpha85():
    return llama_best_speedup(0.85, 1, 2048, 8 / 70, 8)[1], 1e-9


def pin_plain_decoding_above_64():
    return float(llama_best_speedup(0.7, 128, 2048, 8 / 70, 64)[0]), 0


def pin_csa_own_selections():
    # each of T query positions keeps its own top 512 of the S/4 compressed positions, as disjoint as they can
    # be (position i takes 512 consecutive positions from i * 512, wrapping): FLOPs for T * 512 pairs over the
    # bytes of the union actually read, counted as a set; against MLA at S = 512 (Table 1's row)
    K, gaps = 512, []
    for S in (8192, 131072, 1048576):
        n = S // 4
        for T in (1, 2, 4, 8):
            union = set()
            for i in range(T):
                union.update(((i * K + np.arange(K)) % n).tolist())
            csa = MLA["f"] * T * K / (MLA["m_c"] * len(union) + MLA["m_q"] * T)
            mla512 = MLA["f"] * T * 512 / (MLA["m_c"] * 512 + MLA["m_q"] * T)
            gaps.append(abs(csa - mla512))
    return max(gaps), 1e-12


def tp8_counted_attention_slope(B, S, q, tp=8, n_h=64):
    """d log C / d log q of one GPU's attention cost (byte-equivalents, query bytes left out as in the ledger)
    for DeepSeek-V4-Flash split over tp B200s by head: n_h / tp heads of f / n_h FLOPs per pair each, over the
    whole latent (m_c bytes per position), by a central difference."""
    def cost(width):
        flops = B * (n_h // tp) * (MLA["f"] / n_h) * width * S
        return max(flops / R_BF16, B * MLA["m_c"] * S)

    h = 1e-4  # both sides of the difference on one branch of the roofline (T* is 1.16 or 9.31, q = 2)
    return (math.log(cost(q * (1 + h))) - math.log(cost(q * (1 - h)))) / (math.log1p(h) - math.log1p(-h))


def pin_first_speculated_tp8():
    # the ledger's grid (B = 1..30,000, S = 512, 8k, 128k): is attention's slope at q = 2 one everywhere?
    slopes = [tp8_counted_attention_slope(B, S, 2.0) for B in np.geomspace(1, 30_000, 60) for S in (512, 8192, 131072)]
    assert max(abs(x) for x in slopes) < 1e-9  # memory-bound: 1/8 of the heads' FLOPs under the whole latent's read
    return float(all(abs(x - 1) < 1e-9 for x in slopes)), 0


# --- the sequel, re-implemented from docs/sequel.md's formulas with numbers typed here ----
# Qwen3.6-35B-A3B as the simulator counts attention (no output gate), our
# GatedDeltaNet accounting: 30 linear layers (q, k, v, z in; decay and update
# gates; short convolution; out), 10 attention layers, routers, lm_head.
Q_H, Q_VOCAB = 2048, 248_320
Q_GDN = Q_H * (2 * 16 * 128 + 2 * 32 * 128) + Q_H * 2 * 32 + (2 * 16 * 128 + 32 * 128) * 4 + 32 * 128 * Q_H
Q_ATTN = Q_H * (16 + 2 * 2) * 256 + 16 * 256 * Q_H
Q_DENSE = 30 * Q_GDN + 10 * Q_ATTN + 40 * Q_H * 256 + Q_VOCAB * Q_H
Q_W, Q_E, Q_K = 3 * Q_H * 512 * 40, 256, 8
Q_KV, Q_STATE = 10 * 2 * 2 * 256 * 2, 30 * (32 * 128 * 128 + 8192 * 4) * 2
PEAK, BW = 2.25e15, 8e12
MTP_DENSE, MTP_W, DF_P, DF_D = 535_822_336, 3 * Q_H * 512, 982_515_712, 16


def q_experts(tokens):
    return Q_E * (1 - (1 - Q_K / Q_E) ** tokens)


def q_verify_seconds(B, T, S):
    s_eff = S + math.ceil(T / 2)
    flops = 2 * (Q_DENSE + (Q_K + 1) * Q_W) * B * T + B * 10 * 4 * 16 * 256 * T * s_eff
    moved = 2 * Q_W * (1 + q_experts(B * T)) + 2 * Q_DENSE + B * (Q_KV * s_eff + Q_STATE)
    return max(flops / PEAK, moved / BW)


def q_mtp_seconds(gamma, B):
    active = MTP_DENSE + (Q_K + 1) * MTP_W
    resident = MTP_DENSE + (1 + q_experts(B)) * MTP_W
    return gamma * max(2 * active * B / PEAK, 2 * resident / BW)


def q_dflash_seconds(gamma, B):
    return 0.0 if gamma == 0 else max(2 * DF_P * B * DF_D / PEAK, 2 * DF_P / BW)


SURVIVAL = {
    "mtp": json.loads((Path(claims.__file__).parents[1] / "data" / "acceptance" / "survival.json").read_text())["mtp"],
    "dflash": json.loads((Path(claims.__file__).parents[1] / "data" / "acceptance" / "survival.json").read_text())["dflash"],
}
GRID = json.loads((Path(claims.__file__).parents[1] / "data" / "serving-simulation" / "drafter_grid.json").read_text())


def q_throughput(key, B, gamma, S=512.5):
    draft = q_mtp_seconds if key == "mtp" else q_dflash_seconds
    committed = 1 + sum(SURVIVAL[key][:gamma])
    return B * committed / (q_verify_seconds(B, gamma + 1, S) + draft(gamma, B))


def q_table(key):
    """Predicted throughput, rows gamma = 0..gamma_max, columns the grid's concurrencies."""
    top = GRID["drafters"][key]["gamma_max"]
    return np.array([[q_throughput(key, float(c), g) for c in GRID["conc"]] for g in range(top + 1)])


def q_simulated(key):
    d = GRID["drafters"][key]
    rows = sorted(d["fixed"], key=lambda r: r["gamma"])
    return np.array([d["nospec"]["goodput"]] + [r["goodput"] for r in rows])


def q_gain(key, conc):
    at = GRID["conc"].index(conc)
    table = q_table(key)
    return table[:, at].max() / table[0, at], 1e-12


def q_crossover(gamma):
    """Bisection on the two drafters' times, from docs/sequel.md's formulas."""
    return bisect(lambda B: q_dflash_seconds(gamma, B) - q_mtp_seconds(gamma, B), 1.0, 1e4), 1e-9


def pin_sequel_plain_ms():
    return q_verify_seconds(1.0, 1, 0.0) * 1e3, 1e-12


def pin_sequel_plain_gb():
    return (2 * Q_W * (1 + Q_K) + 2 * Q_DENSE + Q_KV * 1 + Q_STATE) / 1e9, 1e-12


def pin_sequel_fit_median_dflash():
    return 100 * float(np.median(np.abs(q_table("dflash") / q_simulated("dflash") - 1))), 1e-9


def pin_sequel_mistuned_dflash():
    table = q_table("dflash")
    return float(np.max(table.max(axis=0) / table.min(axis=0))), 1e-12


#: Claims expected to differ from the paper, with an independent route to our value
#: and the relative tolerance of that route.
PINNED = {
    "sequel.plain_step_ms": pin_sequel_plain_ms,
    "sequel.plain_step_GB": pin_sequel_plain_gb,
    "sequel.dflash_block_us": lambda: (2 * DF_P / BW * 1e6, 1e-12),
    "sequel.crossover_gamma4": lambda: q_crossover(4),
    "sequel.crossover_gamma8": lambda: q_crossover(8),
    "sequel.active_nonexpert": lambda: (Q_DENSE, 0),
    # docs/sequel.md's layer: 8 FLOP per state element per position over the state read and written back
    "sequel.gdn_intensity_per_T": lambda: (8 * 32 * 128 * 128 / (2 * (32 * 128 * 128 + 8192 * 4) * 2), 1e-12),
    "sequel.fit_median_dflash": pin_sequel_fit_median_dflash,
    "sequel.mistuned_dflash": pin_sequel_mistuned_dflash,
    "sequel.headline.plain_c1": lambda: (q_throughput("mtp", 1.0, 0), 1e-12),
    **{f"sequel.headline.gain_{key}_c{conc}": (lambda key=key, conc=conc: q_gain(key, conc))
       for key, conc in (("dflash", 8), ("mtp", 64), ("dflash", 64), ("mtp", 128), ("dflash", 128), ("mtp", 512),
                         ("dflash", 512), ("mtp", 2048), ("dflash", 2048))},
    "moe.origin_half_slope_with_shared": pin_origin_slope_with_shared,
    "moe.batch1_half_slope_with_shared": pin_slope_at_one_with_shared,
    # held to the precision of the post's own "about 45k" for the same crossing, "about 40k" differs
    "hca.speculation_band_high": pin_hca_crossing,
    "attention.gqa_memory_bound_to_hundreds": pin_gqa_hundreds,
    "hca.speculation_band_speedup": pin_hca_speedup_band,
    "csa.indexer_compute_bound_by": pin_indexer_first_compute_bound,
    # each query position its own top 512 (DeepSeek's sparse attention), where the post reads one shared selection
    "csa.main_equals_mla_512": pin_csa_own_selections,
    # the post prices one GPU holding every head; at TP8 each GPU reads the whole latent for 1/8 of them
    "ledger.first_speculated_full_price_tp8": pin_first_speculated_tp8,
    # the post's fp4 ridge needs fp4 activations: with fp8 ones (W4A8) the experts run at the fp8 rate
    "moe.ridge_exact_w4a8": lambda: (4.5e15 / 8e12 * 0.53 * 257 / 14, 1e-9),
    "older.tokens_per_pass": pin_tokens_per_pass,
    "older.speedup_alpha85": pin_speedup_alpha85,
    "older.plain_decoding_wins_above_64": pin_plain_decoding_above_64,
}

#: One id (at least) per bullet of issue 4.
REQUIRED_IDS = (
    # Table 1: 20 values, 20 bound flags; constants; ridges
    *(f"table1.value.S{s}_T{t}" for s in TABLE1 for t in (1, 2, 4, 8)),
    *(f"table1.bound.S{s}_T{t}" for s in TABLE1 for t in (1, 2, 4, 8)),
    "mla.m_c", "mla.m_q", "mla.f", "mla.query_context_ratio",
    "ridge.bf16", "ridge.fp8", "ridge.fp4",
    # expert tax
    "moe.expert_knee", "moe.dense_knee", "moe.ridge_asymptotic", "moe.ridge_exact", "moe.slope_ratio",
    "moe.origin_half_slope_routed", "moe.origin_half_slope_with_shared",
    # ledger and the attention crossover
    "ledger.r_moe_b1", "ledger.r_moe_b1_no_shared", "ledger.proj_knee", "ledger.attention_crossover",
    "table1.decode_memory_bound_all", "table1.first_speculated_compute_bound_all",
    # HCA
    "hca.t2_ridge_context", "hca.moderate_verifies_memory_bound_20k",
    "hca.speculation_band_low", "hca.speculation_band_high", "hca.speculation_band_speedup",
    # CSA and dense attention
    "csa.main_equals_mla_512", "csa.indexer_slope", "csa.indexer_compute_bound_by",
    "mla.mha_form_crossover", "attention.gqa_slope", "attention.mha_slope",
    # Figure 3
    "fig3.gutter", "fig3.large_batch_zero",
    # expert parallelism
    "ep.tax_shrinks", "ep.comm_does_not_amortise",
    # the older article
    "older.tokens_per_pass", "older.speedup_alpha60", "older.speedup_alpha80",
    "older.plain_decoding_wins_above_64",
)


# --- the registry as a whole -------------------------------------------------------------


def test_ids_are_unique():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))


def test_every_issue_bullet_is_covered():
    missing = [i for i in REQUIRED_IDS if i not in BY_ID]
    assert not missing


def test_pinned_ids_exist():
    assert set(PINNED) <= set(BY_ID)


def test_counts_add_up():
    n = claims.counts(CLAIMS)
    assert n["reproduced"] + n["differs"] == len(CLAIMS)
    assert [c.id for c in claims.differences(CLAIMS)] == [c.id for c in CLAIMS if c.id in PINNED]


@pytest.mark.parametrize("claim_id", sorted(PAPER_VALUES))
def test_paper_value_matches_model_md(claim_id):
    assert BY_ID[claim_id].paper_value == PAPER_VALUES[claim_id]


@pytest.mark.parametrize("s", sorted(TABLE1))
def test_table1_bold_cells_are_t_at_least_2(s):
    # docs/model.md prints T = 1 plain and T = 2, 4, 8 bold in every row
    for t in (1, 2, 4, 8):
        assert BY_ID[f"table1.bound.S{s}_T{t}"].paper_text == ("memory-bound" if t == 1 else "compute-bound")


# --- one test per claim ----------------------------------------------------------------------


@pytest.mark.parametrize("claim_id", [c.id for c in CLAIMS])
def test_claim(claim_id):
    claim = BY_ID[claim_id]
    if claim_id in PINNED:
        expected, rel = PINNED[claim_id]()
        assert claim.status == "differs", f"{claim_id} now reproduces: move it out of PINNED and update the book"
        assert claim.note.strip()
        assert claim.our_value == pytest.approx(expected, rel=rel, abs=0)
    else:
        allowed = claim.tolerance * abs(claim.paper_value) if claim.tolerance_kind == "relative" else claim.tolerance
        assert abs(claim.our_value - claim.paper_value) <= allowed + 1e-12, claim.note
        assert claim.status == "reproduced"


# --- independent checks of a few reproduced numbers -----------------------------------------


def test_csa_shared_selection_is_the_posts_zero_gap():
    # the post's reading, one top 512 shared by a verify's positions, puts CSA on Table 1's S = 512 row
    assert BY_ID["csa.main_equals_mla_512"].values["shared"] == pytest.approx(0, abs=1e-9)
    own = MLA["f"] * 512 / (MLA["m_c"] * 512 + MLA["m_q"])
    assert BY_ID["csa.main_equals_mla_512"].values["own"] == pytest.approx(own, rel=1e-12) and round(own) == 193


def test_first_speculated_token_under_tp8_and_dp_attention():
    # the widths the notes quote, typed: R m_c tp / f at TP8 (each GPU the whole latent), R m_c / f under DP attention
    tp8, dp8 = BY_ID["ledger.first_speculated_full_price_tp8"], BY_ID["ledger.first_speculated_full_price_dp8"]
    assert tp8.values["width"] == pytest.approx(R_BF16 * MLA["m_c"] * 8 / MLA["f"], rel=1e-12)
    assert tp8.values["width"] > 2 > dp8.values["dp_width"]
    assert dp8.values["dp_width"] == pytest.approx(R_BF16 * MLA["m_c"] / MLA["f"], rel=1e-12)
    assert tp8.status == "differs" and tp8.side == "source" and dp8.status == "reproduced"
    # DP attention: each GPU whole heads of its own sequences, counted as one GPU of tp = 1
    assert all(tp8_counted_attention_slope(B, S, 2.0, tp=1) == pytest.approx(1, abs=1e-9)
               for B in (1, 300, 30_000) for S in (512, 131072))
    # DeepSeek-V3 at TP8 on H200 (config: 128 heads, latent 512 + rope 64, bf16): a verify of 4 over 512, query
    # bytes counted, per GPU 16 heads' FLOPs (2 (2 * 512 + 64) per pair and head) over the whole latent's read
    # plus 16 heads' queries; against the H200's dense bf16 peak over its HBM bandwidth
    flops = 16 * 2 * (2 * 512 + 64) * 4 * 512
    moved = (512 + 64) * 2 * 512 + 16 * (512 + 64) * 2 * 4
    assert flops / moved == pytest.approx(107.457, abs=1e-3)
    assert tp8.values["v3_T4"] == pytest.approx(flops / moved, rel=1e-12)
    assert tp8.values["h200_ridge"] == pytest.approx(989.4e12 / 4.8e12, rel=1e-12)
    assert flops / moved < 989.4e12 / 4.8e12  # 107 < 206: memory-bound


def test_figure3_gutter_by_brute_force():
    # gamma* by looping over gamma with speedup(), at Figure 3's defaults
    from speclib import speedup

    def gamma_star(B):
        values = [speedup(0.75, g, B, 4096, 0.1) for g in range(65)]
        return int(np.argmax(values))

    assert gamma_star(1) > 0
    assert gamma_star(8) == 0
    assert gamma_star(20) > 0
    assert gamma_star(30_000) == 0
    runs = claims.zero_runs(np.arange(1, 9), [1, 0, 0, 2, 3, 0, 1, 0])
    assert runs == [(2, 3), (6, 6), (8, 8)]


def test_figure3_with_the_attention_as_served_by_brute_force():
    """The large-batch edge the fig3 notes give for the attention as served,
    found by looping over gamma with speedup()."""
    from speclib import Deployment, speedup

    served = Deployment(attention="served")

    def gamma_star(B):
        return int(np.argmax([speedup(0.75, g, B, 4096, 0.1, deployment=served) for g in range(65)]))

    note = BY_ID["fig3.large_batch_zero"].note
    first = int(note.split("With the attention as served, from B = ")[1].rstrip(".").replace(",", ""))
    assert gamma_star(first - 1) > 0 and gamma_star(first) == 0


def test_the_expert_parallel_claims_by_hand():
    from speclib.core import parallel
    # the bandwidth term is linear in tokens: doubling the tokens doubles it
    cm = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72, latency=False)
    assert float(cm.comm(2.0)) == pytest.approx(2 * float(cm.comm(1.0)), rel=1e-14)
    # priced with its latency, the slope at one token is the bandwidth term's share of the whole
    with_latency = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72)
    share = float(cm.comm(1.0)) / float(with_latency.comm(1.0))
    assert f"its slope is {share:.3f} at one sequence per GPU" in BY_ID["ep.comm_does_not_amortise"].note


def test_every_source_of_a_claim_can_be_found():
    """A source the book checks has an address and a date (the post, the
    sequel), or, lacking both, its bibliography entry names who published it
    (the older article, under its publisher's name); notes known only by whom
    they are credited to, with no address, date or publisher, are not checked."""
    from pybtex.database import parse_file

    from speclib.evidence import claim_data

    bib = parse_file(str(Path(__file__).resolve().parents[1] / "references.bib")).entries
    used = {c.source for c in CLAIMS}
    for source in claim_data.load().sources.values():
        assert source.cite in used and source.cite in bib
        if not (source.url and source.date):
            fields = bib[source.cite].fields
            assert "url" not in fields and "year" not in fields  # the data file and the bibliography agree
            assert source.author and source.author in fields.get("howpublished", ""), source


def test_hca_band_low_edge_by_bisection():
    # KV read of the compressed context equals two query tokens' bytes
    edge = bisect(lambda S: MLA["m_c"] * S / HCA_RATIO - 2 * MLA["m_q"], 1e3, 1e6)
    assert BY_ID["hca.speculation_band_low"].our_value == pytest.approx(edge, rel=1e-9)


def test_hca_widest_memory_bound_width_at_20k_by_scan():
    widest = first_width_above_ridge(MLA, 20_000 / HCA_RATIO) - 1
    assert claims.hca_widest_memory_bound(20_000) == widest


def test_the_sequel_weight_counts_by_hand():
    # docs/sequel.md's shapes, typed above: the MTP layer is a 2d -> d fusion, one attention block and the head
    assert BY_ID["sequel.mtp_dense_params"].our_value == 2 * Q_H * Q_H + Q_ATTN + Q_VOCAB * Q_H
    assert BY_ID["sequel.attention_params_per_layer"].our_value == pytest.approx(Q_ATTN / 1e6, rel=1e-15)
    gated = Q_ATTN + 16 * 256 * Q_H  # the output gate doubles the query projection
    assert f"with it a layer holds {gated / 1e6:.2f} M" in BY_ID["sequel.attention_params_per_layer"].note
    assert f"{10 * 16 * 256 * Q_H:,} parameters over the 10 full-attention layers" in \
        BY_ID["sequel.attention_params_per_layer"].note


def test_the_per_component_note_counts_the_policy_of_the_pricing_rule():
    """The note's count with the drafter priced per component too is what the
    priced policy picks under that rule (speclib.evidence.simulator.rule_shortfall,
    through speclib.optimal_gamma), held against the grid's best fixed gamma."""
    from speclib.evidence import simulator
    for key in ("mtp", "dflash"):
        g, _ = simulator.rule_shortfall(key)["per-component"]
        moved = int(np.count_nonzero(g != simulator.load_grid().drafters[key].best_gamma))
        assert f"the best gamma differs at {moved} of 12 concurrencies" in BY_ID[f"sequel.per_component_gamma_{key}"].note

# --- the Claim record --------------------------------------------------------------------------


def test_status_is_derived_and_a_difference_needs_a_note_and_a_side():
    ok = claims.Claim("x", "s", "t", paper_value=100, our_value=100.4, tolerance=0.5)
    assert ok.status == "reproduced" and ok.verdict == "reproduced"
    with pytest.raises(ValueError, match="note"):
        claims.Claim("x", "s", "t", paper_value=100, our_value=101, tolerance=0.5, side="source")
    with pytest.raises(ValueError, match="side"):
        claims.Claim("x", "s", "t", paper_value=100, our_value=101, tolerance=0.5, note="why")
    off = claims.Claim("x", "s", "t", paper_value=100, our_value=101, tolerance=0.5, note="why", side="source",
                       source_called="the post")
    assert off.status == "differs" and off.verdict == "the post differs"
    with pytest.raises(TypeError):
        claims.Claim("x", "s", "t", paper_value=1, our_value=1, tolerance=0, status="reproduced")


def test_relative_tolerance():
    assert claims.Claim("x", "s", "t", 200, 209, 0.05, "relative").status == "reproduced"
    assert claims.Claim("x", "s", "t", 200, 211, 0.05, "relative", note="n", side="source").status == "differs"


# --- who differs -------------------------------------------------------------------------------


def gain(ours, simulated, **kw):
    """A gain printed as "1.16" (trusted to +-0.005), ours and the simulator's."""
    return claims.Claim("g", "s", "a gain", paper_value=1.16, our_value=ours, tolerance=0.005, note="n",
                        simulator_value=simulated, source_called="the post", **kw)


def test_a_difference_of_the_closed_form_alone_is_labelled_as_such():
    """The simulator gives the printed number, the closed form is 2 % off: the
    closed form differs, not the post."""
    claim = gain(1.183, 1.159)
    assert (claim.status, claim.side, claim.verdict) == ("differs", "closed form", "our closed form differs")


@pytest.mark.parametrize("ours, simulated, verdict", [
    (1.161, 1.158, "reproduced"),
    (1.183, 1.159, "our closed form differs"),
    (1.162, 1.175, "the simulator differs"),
    (1.183, 1.175, "the post differs"),
])
def test_who_differs_is_derived_from_the_closed_form_and_the_simulator(ours, simulated, verdict):
    assert gain(ours, simulated).verdict == verdict


def test_a_side_cannot_be_typed_where_the_simulator_decides_it():
    with pytest.raises(ValueError, match="simulator's value decides"):
        gain(1.183, 1.159, side="source")
    with pytest.raises(ValueError, match="side must be one of"):
        claims.Claim("x", "s", "t", paper_value=1, our_value=2, tolerance=0, note="n", side="nobody")


def test_every_headline_gain_that_differs_is_the_closed_form_s_and_the_grid_gives_the_post_s_number():
    """Read straight from the shipped grid (not through speclib): where our
    closed form's gain misses the post's, the simulated gain rounds to it, and
    the verdict names our closed form."""
    differing = [c for c in CLAIMS if c.id.startswith("sequel.headline.gain_") and c.status == "differs"]
    assert len(differing) == 9
    for claim in differing:
        key, conc = re.fullmatch(r"sequel\.headline\.gain_(\w+)_c(\d+)", claim.id).groups()
        simulated = q_simulated(key)[:, GRID["conc"].index(int(conc))]
        assert abs(simulated.max() / simulated[0] - claim.paper_value) <= 0.005
        assert claim.verdict == "our closed form differs"
    plain = BY_ID["sequel.headline.plain_c1"]
    assert abs(q_simulated("mtp")[0, 0] - plain.paper_value) <= 0.5 and plain.verdict == "our closed form differs"


def test_a_rounded_figure_matches_when_ours_rounds_to_it():
    """"about 45k" concedes its last digit: 45,555 gives it (it rounds down to
    45k); printed without "about", 45k must be a rounding of ours, and 45,555
    rounds to 46k."""
    about = claims.Claim("h", "s", "t", paper_value=45_000, our_value=45_555,
                         tolerance=claims.printed_tolerance("45k", approximate=True))
    assert about.status == "reproduced"
    plain = claims.Claim("h", "s", "t", paper_value=45_000, our_value=45_555, tolerance=claims.printed_tolerance("45k"),
                         note="n", side="source")
    assert plain.status == "differs"
    assert claims.Claim("h", "s", "t", paper_value=45_000, our_value=46_001, note="n", side="source",
                        tolerance=claims.printed_tolerance("45k", approximate=True)).status == "differs"
    crossing = BY_ID["hca.t2_ridge_context"]
    assert crossing.status == "reproduced" and round(crossing.our_value, -3) != 45_000
    assert crossing.our_value == pytest.approx(hca_t2_crossing(), rel=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tolerance_kind": "percent"}, "tolerance_kind"),
        ({"tolerance": -1}, "tolerance"),
        ({"kind": "other"}, "kind"),
        ({"kind": "boolean", "our_value": 0.5}, "boolean"),
    ],
)
def test_bad_claims_are_rejected(kwargs, match):
    base = {"id": "x", "section": "s", "statement": "t", "paper_value": 1, "our_value": 1, "tolerance": 0}
    with pytest.raises(ValueError, match=match):
        claims.Claim(**{**base, **kwargs})


@pytest.mark.parametrize(
    "text, approximate, expected",
    [("281", False, 0.5), ("0.85", True, 0.01), ("1.16", False, 0.005), ("10,950", True, 10), ("10,950", False, 0.5),
     ("170", True, 10), ("45k", False, 500), ("45k", True, 1000), ("30k", True, 10_000), ("1125", False, 0.5)],
)
def test_printed_tolerance(text, approximate, expected):
    assert claims.printed_tolerance(text, approximate) == pytest.approx(expected)


def test_ridge_563_reproduces_only_on_the_inclusive_edge():
    fp8 = BY_ID["ridge.fp8"]
    assert abs(fp8.our_value - fp8.paper_value) == pytest.approx(fp8.tolerance)
    assert fp8.status == "reproduced" and fp8.note


def test_model_constants_from_model_md_shapes():
    # q_a 4096x1024, q_b 1024x(64*512), kv 4096x512, grouped o_a 8x(4096x1024), o_b 8192x4096
    w_attn = 4096 * 1024 + 1024 * 64 * 512 + 4096 * 512 + 8 * 4096 * 1024 + 8192 * 4096
    assert BY_ID["model.attn_proj_params"].our_value * 1e6 == pytest.approx(w_attn, rel=1e-12)
    assert BY_ID["model.expert_params"].our_value == 3 * 4096 * 2048


# --- rendering ------------------------------------------------------------------------------------


def test_table_text_is_deterministic_and_html_escaped():
    first, second = claims.table(CLAIMS), claims.table(claims.registry())
    assert repr(first) == repr(second)
    assert not re.search(r"0x[0-9a-fA-F]{6,}", repr(first))  # no memory addresses
    html = first._repr_html_()
    assert html.count("<tr") == len(CLAIMS) + 1
    odd = claims.Claim("x<y", "s", "a & b", paper_value=1, our_value=1, tolerance=0)
    assert "x&lt;y" in claims.table([odd])._repr_html_() and "a &amp; b" in claims.table([odd])._repr_html_()
    assert all(len(row) == len(claims.COLUMNS) for row in first.rows)


def test_table_filters():
    diffs = claims.table(CLAIMS, status="differs")
    assert {r[3] for r in diffs.rows} == {"the post differs", "the article differs", "our closed form differs"}
    assert len(claims.table(CLAIMS, section=claims.sections(CLAIMS)[0]).claims) > 0
    with pytest.raises(ValueError, match="status"):
        claims.table(CLAIMS, status="maybe")


def test_the_ridges_the_report_quotes_are_the_datasheets():
    """The numbers a note quotes (Claim.values) are the ones it computed: the
    B200's dense peaks over its 8 TB/s, typed from the datasheet."""
    assert BY_ID["ridge.bf16"].values["ridge"] == pytest.approx(2.25e15 / 8e12, rel=1e-12)
    assert BY_ID["ridge.fp8"].values["ridge"] == pytest.approx(4.5e15 / 8e12, rel=1e-12)
    assert BY_ID["older.tokens_per_pass"].values["accepted"] == pytest.approx(sum(0.8 ** d for d in range(1, 5)))


def test_the_per_component_counts_name_both_readings_of_the_sequel():
    """The sequel's "4 of 12" prices the verify step per component and the
    drafter as its simulator does; its note gives the step priced per
    component throughout, which is what the pricing-rule chapter's policy
    picks (speclib.evidence.simulator.rule_shortfall, another route: the
    priced policy through a Deployment, against the grid's best gamma)."""
    from speclib.evidence import simulator

    grid = simulator.load_grid()
    for key in simulator.DRAFTER_KEYS:
        gamma, _ = simulator.rule_shortfall(key)["per-component"]
        values = BY_ID[f"sequel.per_component_gamma_{key}"].values
        assert values["whole_step"] == np.count_nonzero(gamma != grid.drafters[key].best_gamma)
        assert values["concurrencies"] == len(grid.concurrency)
    assert BY_ID["sequel.per_component_gamma_mtp"].values["whole_step"] != BY_ID["sequel.per_component_gamma_mtp"].our_value


def test_the_crossover_with_query_bytes_is_ours_not_the_posts():
    # the post states the crossover without the query bytes (1.16); the one with them at S = 512 is our own check
    assert "ledger.attention_crossover_with_query_bytes_S512" not in BY_ID
    expected, rel = pin_crossover_with_query_bytes()
    assert claims.mla_crossover_with_query_bytes(512) == pytest.approx(expected, rel=rel)
    assert 1.16 < expected < 2  # it stays below two: the first speculated token is compute-bound either way


def test_the_mixture_of_experts_slope_never_falls_to_half_with_the_shared_expert():
    from speclib.core import moe

    B = np.geomspace(1, 1e4, 4001)
    slope = np.gradient(moe.ffn_intensity(B, capped=False), B)
    far = moe.ffn_intensity(1e6 + 1, capped=False) - moe.ffn_intensity(1e6, capped=False)
    least = np.argmin(slope / far)
    at, lowest = BY_ID["moe.batch1_half_slope_with_shared"].values["lowest_at"], \
        BY_ID["moe.batch1_half_slope_with_shared"].values["lowest"]
    assert lowest == pytest.approx(slope[least] / far, rel=1e-3) and at == pytest.approx(B[least], rel=1e-2)
    assert lowest > 0.5


# --- independent checks ------------------------------------------------------------------


def _post():
    return [c for c in CLAIMS if c.source == claims.POST]


def test_table1_s_cells_are_one_check_and_every_other_claim_of_the_post_one_of_its_own():
    # Table 1 as docs/model.md prints it: 20 intensities, 20 bold marks, and its two summary rows
    table1 = 2 * sum(len(row) for row in TABLE1.values()) + 2
    assert table1 == 42
    found = claims.checks(_post())
    grid = [k for k in found if k.id == "table1"]
    assert len(grid) == 1 and len(grid[0].claims) == table1
    assert all(k.alone for k in found if k.id != "table1")
    n = claims.check_counts(_post())
    assert n["checks"] == len(_post()) - table1 + 1 and n["claims"] == len(_post())
    assert n["reproduced"] + n["differs"] == n["checks"]


def test_table1_s_check_deviation_is_the_largest_over_the_printed_grid():
    # the typed constants of docs/model.md, not the code under test
    worst = max(abs(mla_intensity(t, s) - v) for s, row in TABLE1.items() for t, v in zip((1, 2, 4, 8), row))
    grid, = [k for k in claims.checks(_post()) if k.id == "table1"]
    assert grid.max_deviation == pytest.approx(worst, abs=1e-9)
    assert grid.status == "reproduced" and worst <= 0.5


def test_every_check_of_the_post_names_a_library_function_that_imports():
    import importlib
    for k in claims.checks(_post()):
        assert k.id in claims.HELD_BY, k.id
        parts = k.held_by.split(".")
        for i in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for attr in parts[i:]:
                obj = getattr(obj, attr)
            break
        else:
            raise AssertionError(k.held_by)
    assert set(claims.HELD_BY) == {k.id for k in claims.checks(_post())}


def test_the_check_table_has_one_row_per_check_and_reads_the_same_twice():
    t = claims.check_table(CLAIMS, source=claims.POST)
    assert len(t.rows) == claims.check_counts(_post())["checks"]
    assert repr(t) == repr(claims.check_table(CLAIMS, source=claims.POST))
    assert "<script" not in t._repr_html_()


# --- the referee's physics (issue 49, point 3): each reading a row, ours beside the post's ----------------------


def test_w4a8_halves_the_far_knee_by_the_ridge_written_out():
    # R b (E + 1) / (2 (k + 1)) with the fp8 ridge (4.5 PFLOP/s dense over 8 TB/s), b = 0.53, E = 256, k = 6
    claim = BY_ID["moe.ridge_exact_w4a8"]
    assert claim.our_value == pytest.approx(4.5e15 / 8e12 * 0.53 * 257 / 14, rel=1e-9)
    assert claim.status == "differs" and claim.side == "source"


def test_w4a8_moves_figure3_s_edge_not_its_gutter_by_brute_force():
    from speclib import Deployment, speedup

    w4a8 = Deployment(attention="paper", activations="fp8")

    def gamma_star(B):
        return int(np.argmax([speedup(0.75, g, B, 4096, 0.1, deployment=w4a8) for g in range(65)]))

    note = BY_ID["fig3.w4a8"].note
    lo, hi = (int(x) for x in re.search(r"for B = ([\d,]+)-([\d,]+) with W4A8", note).groups())
    assert gamma_star(lo - 1) > 0 and gamma_star(lo) == 0 == gamma_star(hi) and gamma_star(hi + 1) > 0
    last = int(re.search(r"stops paying after ([\d,]+) sequences", note).group(1).replace(",", ""))
    assert gamma_star(last) > 0 and gamma_star(last + 1) == 0
    assert BY_ID["fig3.w4a8"].status == "reproduced"


def test_the_group_limited_straggler_slows_both_steps_and_the_tax_still_shrinks():
    from speclib import presets
    from speclib.core import layout, step

    sm = step.step_model(presets.model("DeepSeek-V3"), presets.hardware("H200"), attention="paper")
    B, S = np.float64(claims.EP_BATCH), np.float64(claims.FIG3_CONTEXT)
    even = layout.ParallelStep(sm, layout.Layout(8, 8))
    grouped = layout.ParallelStep(sm, layout.Layout(8, 8), group_limited=True)
    for T in (1.0, 2.0):  # the most loaded GPU is never faster than the mean one
        assert grouped.kernel_time(B, np.float64(T), S) > even.kernel_time(B, np.float64(T), S)
    claim = BY_ID["ep.tax_shrinks_group_limited"]
    assert claim.values["grouped"] < claim.values["ep"] < claim.values["tp"] and claim.status == "reproduced"


def test_the_ledger_needs_no_recurrent_state_for_a_model_without_linear_layers():
    models = Path(__file__).resolve().parents[1] / "speclib" / "presets" / "models"

    def linear_keys(name):  # a hybrid's config names its linear-attention layers (Qwen3.6: linear_num_value_heads, ...)
        text = (models / name).read_text()
        return re.findall(r'"linear_[a-z_]+"', text) + re.findall(r'"linear_attention"', text)

    assert linear_keys("qwen3.6-35b-a3b.json")  # the route can see a hybrid
    assert linear_keys("deepseek-v4-flash.json") == []
    assert BY_ID["ledger.no_recurrent_state"].status == "reproduced"
