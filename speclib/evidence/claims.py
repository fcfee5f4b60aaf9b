"""Every number the paper states, recomputed by speclib and compared.

:func:`registry` returns one :class:`Claim` per quantitative statement of
Finn (2026), "The economics of speculative decoding" (the post), of its
sequel, "Adaptive speculative decoding" (Finn 2026), and of an older article
on speculative decoding that the same cost model can check with a dense
preset (Llama-3-70B).

What the sources state is data: ``speclib/data/claims.json`` holds every
claim's statement, the printed value (``paper_value``, ``paper_text``), its
source, the tolerance and the fixed words of its note, and is read by
:mod:`.claim_data`. This module holds only the computation: one function
per section of the book computes our value of each of its claims
(``our_value``, at call time, from speclib's sympy expressions, the numpy
functions printed from them and the presets, never typed) and the numbers
its note quotes. ``status`` is *derived*, never typed:

``status == "reproduced"``  when ``|our_value - paper_value| <= allowed``,
``status == "differs"``     otherwise, and then ``note`` must say why and
                            ``side`` who differs (``Claim.verdict``).

Where the quantity is an output of the sequel's simulation, the computation
also yields the simulator's own value (the field ``simulator_value``, read
from the shipped grid), and who differs is derived from the three numbers:
our closed form, the simulator, or the post (see
:func:`speclib.evidence.claim_data.verdict`).

``allowed`` is ``tolerance`` when ``tolerance_kind == "absolute"`` and
``tolerance * |paper_value|`` when it is ``"relative"``.

How tolerances are chosen (the printed-precision rule)
-------------------------------------------------------
* A printed number is a rounding: ours gives it when it rounds to it, within
  half a unit of its last significant digit: "281" allows +-0.5, "0.85"
  +-0.005, "1.16" +-0.005. So 281.25 reproduces "281" and 562.5 reproduces
  "563" (the half-up rounding of 562.5; the edge is inclusive), but only
  within rounding. Table 1's integers are exact roundings, so every cell
  allows +-0.5.
* A figure the source gives as approximate ("about 45k", "~10,950") concedes
  its last digit: ours gives it when it rounds to it up or down, within one
  unit of that digit, and trailing zeros mark the rounding place, not
  significant digits: "about 45k" allows +-1,000 (so 45,555 gives it),
  "~10,950" +-10, "~170" +-10, "~30k" +-10,000.
* A qualitative statement ("memory-bound", "a gutter exists", "close") is a
  ``boolean`` claim: ``paper_value`` 1, ``our_value`` 1 or 0 from a stated,
  computed test, tolerance 0. The test and its threshold are in ``note``.
* A stated band ("1.5-2.5x") is a ``range`` claim: ``paper_value`` is the
  band's centre and ``tolerance`` its half-width, so the claim reproduces
  exactly when our value lies inside the band.
"""
from __future__ import annotations

import dataclasses
import functools
import html
import re
import math

import numpy as np

from .._extras import require as _require

_require("speclib.evidence.claims", ("sympy",))

import sympy as sp  # noqa: E402

from .. import presets
from ..formulas import attention as attention_forms
from ..formulas import cost as cost_forms
from ..formulas import moe as moe_forms
from ..formulas import parallel as parallel_forms
from ..core import acceptance, attention, cost, drafters, moe
from ..core import parallel as _parallel
from ..core import speculation as _spec
from ..core import step as _step
from ..core.deployment import Deployment
from ..core.layout import Layout, ParallelStep
from ..core.speculation import optimal_gamma
from speclib.evidence import claim_data as _claim_data
from speclib.evidence import derivations as _derivations
from speclib.evidence import simulator as _simulator
from speclib.evidence.claim_data import KINDS, SIDES, STATUSES, TOLERANCE_KINDS, Claim, printed_tolerance  # noqa: F401  (the record, re-exported)


def _cite(key: str) -> str:
    return _claim_data.load().sources[key].cite


#: Where a claim comes from, as ``Claim.source`` shows it: the source's key in
#: the book's bibliography (the data file's ``sources`` table gives title,
#: author, date and address).
POST = _cite("post")
SEQUEL = _cite("sequel")
#: The older article checked in an appendix with a dense preset.
OLDER_IRCNF = _cite("ircnf")


# --- computations the claims need -------------------------------------------

#: Table 1's grid.
TABLE_CONTEXTS = (512, 1024, 8192, 16384, 1048576)
TABLE_WIDTHS = (1, 2, 4, 8)
#: Figure 3's defaults and range.
FIG3_CONTEXT = 4096
FIG3_ACCEPTANCE = 0.75
FIG3_DRAFT_COST = 0.1
FIG3_MAX_BATCH = 30_000

#: Assumptions for the older article's dense checks: Llama-3-70B (bf16 weights
#: and cache) on four H100s in tensor parallel (its 140 GB of bf16 weights do
#: not fit one 80 GB H100; the per-layer ledger's ratios, and so every speed-up,
#: are the same at any width), an 8B drafter costing 8/70 of a target step per
#: drafted token, a chat-length context, and the articles' "usually 4-8"
#: drafted tokens (so gamma* is searched up to 8).
DENSE_MODEL = "Llama-3-70B"
DENSE_HARDWARE = "H100"
DENSE_TP = 4
DENSE_DRAFT_COST = 8 / 70
DENSE_CONTEXT = 2048
DENSE_GAMMA_MAX = 8
#: A cheaper drafter, to show how much the dense speedup hinges on its cost.
DENSE_CHEAP_DRAFT_COST = 0.05


def _mla_constants(model):
    return {
        attention_forms.m_c: model.context_bytes,
        attention_forms.m_q: model.query_bytes,
        attention_forms.f: model.flops_per_pair,
    }


def _positive_root(expr, symbol) -> float:
    roots = [r for r in sp.solve(expr, symbol) if r.is_real and r > 0]
    if len(roots) != 1:
        raise AssertionError(f"expected one positive root of {expr} in {symbol}; got {roots}")
    return float(roots[0])


def hca_ridge_context(width, model=None, hardware=None, ridge=None) -> float:
    """Original context S at which HCA attention with ``width`` query tokens
    reaches the bf16 ridge (query bytes included, as in Table 1)."""
    model, hardware = presets.resolve(model, hardware)
    ratio = model.attention.hca_ratio
    R = hardware.ridge(model.attention_precision) if ridge is None else ridge
    expr = attention_forms.intensity_expr.subs(_mla_constants(model)).subs(
        {attention_forms.T: width, attention_forms.S: attention_forms.S / ratio}
    )
    return _positive_root(expr - R, attention_forms.S)


def hca_widest_memory_bound(S, model=None, hardware=None) -> int:
    """Largest integer verify width whose HCA attention at context ``S`` stays
    strictly below the bf16 ridge (a large sentinel if every width does)."""
    model, hardware = presets.resolve(model, hardware)
    R = hardware.ridge(model.attention_precision)
    expr = attention_forms.intensity_expr.subs(_mla_constants(model)).subs(attention_forms.S, S / model.attention.hca_ratio)
    saturated = sp.limit(expr, attention_forms.T, sp.oo)
    if saturated <= R:
        return 10**9
    width = _positive_root(expr - R, attention_forms.T)
    return int(math.ceil(width) - 1)


def hca_all_widths_memory_bound_context(model=None, hardware=None) -> float:
    """Context below which no verify width makes HCA compute-bound: the
    intensity saturates at f*S_eff/m_q < R as T grows."""
    model, hardware = presets.resolve(model, hardware)
    R = hardware.ridge(model.attention_precision)
    expr = attention_forms.intensity_expr.subs(_mla_constants(model)).subs(attention_forms.S, attention_forms.S / model.attention.hca_ratio)
    return _positive_root(sp.limit(expr, attention_forms.T, sp.oo) - R, attention_forms.S)


def hca_kv_dominates_context(width=2, model=None) -> float:
    """Original context above which HCA's KV read outweighs the query bytes of
    ``width`` query tokens, i.e. the memory-branch slope d log C / d log q of
    the attention cost falls below 1/2 at q = ``width``."""
    model, _ = presets.resolve(model, None)
    slope = cost_forms.elasticity(cost_forms.attn_memory_expr, cost_forms.q).subs(
        {cost_forms.m_c: model.context_bytes, cost_forms.m_q: model.query_bytes, cost_forms.q: width}
    )
    slope = slope.subs(cost_forms.S, cost_forms.S / model.attention.hca_ratio)
    return _positive_root(slope - sp.Rational(1, 2), cost_forms.S)


def hca_attention_speedup_band(alpha=FIG3_ACCEPTANCE, c_draft=0.0, model=None, hardware=None, contexts=None, gamma_max=64):
    """Contexts at which speculation pays *for HCA attention alone*: the
    speedup N * C_attn(1) / (C_attn(gamma+1) + c*gamma*C_attn(1)) with the
    query bytes counted, maximised over gamma, exceeds 1. Returns the grid and
    gamma* on it."""
    if contexts is None:
        contexts = np.arange(500.0, 1_000_001.0, 500.0)
    model, hardware = presets.resolve(model, hardware)
    cm = cost.cost_model(model, hardware, query_bytes=True, attention="paper")  # MLA over the HCA context, by hand
    gammas = np.arange(gamma_max + 1, dtype=float)[:, None]
    S_eff = np.asarray(contexts, dtype=float) / model.attention.hca_ratio
    c0 = cm.attention(1.0, 1.0, S_eff)
    cv = cm.attention(1.0, gammas + 1.0, S_eff)
    committed = acceptance.expected_committed(alpha, gammas)
    gain = committed * c0 / (cv + c_draft * gammas * c0)
    return np.asarray(contexts, dtype=float), np.argmax(gain, axis=0)


def hca_cheapest_first_draft_context(model=None, hardware=None) -> float:
    """The original context at which the first speculated token costs HCA
    attention the least, relative to a plain step: C_attn(2) / C_attn(1) - 1
    (query bytes counted; the paper's attention, MLA over the compressed
    context), on a grid of every 10 tokens from 1,000 to 200,000."""
    model, hardware = presets.resolve(model, hardware)
    cm = cost.cost_model(model, hardware, query_bytes=True, attention="paper")
    contexts = np.arange(1_000.0, 200_001.0, 10.0)
    S_eff = contexts / model.attention.hca_ratio
    price = cm.attention(1.0, 2.0, S_eff) / cm.attention(1.0, 1.0, S_eff) - 1.0
    return float(contexts[np.argmin(price)])


def indexer_slope(model=None) -> float:
    """Long-context intensity of CSA's indexer per query token, f/m_c."""
    model, _ = presets.resolve(model, None)
    m_c_i, m_q_i, f_i, _ = model.attention.variant_constants("indexer", 1.0)
    per_token = (attention_forms.intensity_long_context_expr / attention_forms.T).subs({attention_forms.m_c: m_c_i, attention_forms.f: f_i})
    return float(per_token)


def indexer_compute_bound_widths(S, model=None, hardware=None) -> int:
    """Smallest integer width at which CSA's indexer is compute-bound at context S."""
    model, hardware = presets.resolve(model, hardware)
    R = hardware.ridge(model.attention_precision)
    widths = np.arange(1, 4097, dtype=float)
    above = attention.attention_intensity(widths, S, model, "indexer") > R
    return int(widths[np.argmax(above)]) if above.any() else 10**9


def mla_crossover_with_query_bytes(S, model=None, hardware=None) -> float:
    """Verify width at which full MLA attention at context S reaches the bf16
    ridge when the query bytes are counted (Table 1's convention)."""
    model, hardware = presets.resolve(model, hardware)
    R = hardware.ridge(model.attention_precision)
    expr = attention_forms.intensity_expr.subs(_mla_constants(model)).subs(attention_forms.S, S)
    return _positive_root(expr - R, attention_forms.T)


def moe_slope_ratio_at_origin(n_shared=None, model=None) -> float:
    """lim_{B->0} of dI_MoE/dB over the far-out (saturated) MoE slope.

    ``n_shared=0`` drops the shared expert (routed experts only)."""
    model, _ = presets.resolve(model, None)
    ffn = model.ffn
    # b is left symbolic: it cancels, and a float there would leave a sum of
    # logarithms that cancels catastrophically in floating point.
    values = {moe_forms.k: ffn.top_k, moe_forms.E: ffn.n_routed, moe_forms.n_s: ffn.n_shared if n_shared is None else n_shared}
    # the limit as the constant term of the slope's series at B = 0 (the slope is analytic there: the
    # routed experts' 0/0 at B = 0 is removable), which sympy finds a tenth as fast as sp.limit
    origin = sp.diff(moe_forms.moe_intensity_uncapped_expr.subs(values), moe_forms.B).series(
        moe_forms.B, 0, 1).removeO()
    eventual = sp.diff(moe_forms.moe_saturated_intensity_expr.subs(values), moe_forms.B)
    return float(sp.N(sp.simplify(origin / eventual), 30))


def moe_slope_ratio_at(B_value, model=None) -> float:
    """dI_MoE/dB at batch B over the far-out MoE slope (shared expert counted)."""
    model, _ = presets.resolve(model, None)
    ffn = model.ffn
    values = {moe_forms.k: ffn.top_k, moe_forms.E: ffn.n_routed, moe_forms.n_s: ffn.n_shared, moe_forms.b: ffn.weight_bytes}
    local = sp.diff(moe_forms.moe_intensity_uncapped_expr.subs(values), moe_forms.B).subs(moe_forms.B, B_value)
    eventual = sp.diff(moe_forms.moe_saturated_intensity_expr.subs(values), moe_forms.B)
    return float(local / eventual)


def moe_least_slope_ratio(model=None) -> tuple:
    """(B, ratio) where :func:`moe_slope_ratio_at` is least: past the origin the
    slope (shared expert counted) falls below its far-out value and climbs back
    to it as the experts fill; a golden-section search in log B over 1..1,000,
    where that one dip lies."""
    f = lambda x: moe_slope_ratio_at(math.exp(x), model)  # noqa: E731
    lo, hi = 0.0, math.log(1000.0)
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = f(a), f(b)
    while hi - lo > 1e-6:
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = f(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = f(b)
    x = (lo + hi) / 2
    return math.exp(x), f(x)


def zero_runs(batches, gamma_star):
    """Maximal runs of consecutive batches where gamma* == 0, as whole (first, last)
    (:func:`speclib.core.speculation.zero_gamma_bands` without the kind)."""
    return [(int(a), int(b)) for a, b, _ in _spec.zero_gamma_bands(batches, gamma_star)]


def figure3_zero_runs(query_bytes=False, context=FIG3_CONTEXT, alpha=FIG3_ACCEPTANCE, c_draft=FIG3_DRAFT_COST, *,
                      attention="paper"):
    """gamma* = 0 runs over every integer batch 1..30,000 at Figure 3's
    defaults, the attention priced as the paper does or as served."""
    batches = np.arange(1.0, FIG3_MAX_BATCH + 1.0)
    gamma_star, _ = optimal_gamma(alpha, batches, context, c_draft,
                                  deployment=Deployment(query_bytes=query_bytes, attention=attention))
    return zero_runs(batches, gamma_star)


def _no_shared_expert(model):
    return dataclasses.replace(model, ffn=dataclasses.replace(model.ffn, n_shared=0), name=model.name + " (no shared expert)")


def _mha_variant(model):
    attn = model.attention
    return dataclasses.replace(model, attention=dataclasses.replace(attn, n_kv_heads=attn.n_heads), name=model.name + " (MHA)")


def _long_context_slope(model) -> float:
    """f/m_c: the long-context intensity per query token of a model's attention."""
    per_token = attention_forms.intensity_long_context_expr / attention_forms.T
    return float(per_token.subs({attention_forms.m_c: model.context_bytes, attention_forms.f: model.flops_per_pair}))


# --- the registry: our value of every claim ---------------------------------------
#
# Each function below computes the claims of one section: for every claim id in
# speclib/data/claims.json it yields (id, our value, the fields its note
# templates use). What the paper states, the tolerance and the fixed words of
# each note are in the data file.


def _ours(id, value, **fields):
    return id, float(value), fields


def _holds(id, condition, **fields):
    return id, 1.0 if condition else 0.0, fields


def _stated(id):
    """What the data file says the source states for claim ``id``."""
    return _claim_data.load().by_id()[id]


def _constants_and_ridges():
    m = presets.DEEPSEEK_V4_FLASH
    yield _ours("mla.m_c", m.context_bytes)
    yield _ours("mla.m_q", m.query_bytes)
    yield _ours("mla.f", m.flops_per_pair)
    arch = {getattr(attention_forms, name): value for name, value in m.attention.architecture().items()}
    yield _ours("mla.query_context_ratio", attention_forms.mla_query_context_ratio_expr.subs(arch))
    yield _ours("model.expert_params", m.expert_params)
    yield _ours("model.attn_proj_params", m.attn_proj_params / 1e6)
    for precision in ("bf16", "fp8", "fp4"):
        ridge = presets.B200.ridge(precision)
        yield _ours(f"ridge.{precision}", ridge, ridge=ridge)


def _table1():
    m = presets.DEEPSEEK_V4_FLASH
    R = presets.B200.ridge(m.attention_precision)
    S = np.array(TABLE_CONTEXTS, dtype=float)[:, None]
    T = np.array(TABLE_WIDTHS, dtype=float)[None, :]
    grid = attention.attention_intensity(T, S, m, "mla")
    for i, s in enumerate(TABLE_CONTEXTS):
        for j, t in enumerate(TABLE_WIDTHS):
            yield _ours(f"table1.value.S{s}_T{t}", grid[i, j])
    for i, s in enumerate(TABLE_CONTEXTS):
        for j, t in enumerate(TABLE_WIDTHS):
            id = f"table1.bound.S{s}_T{t}"
            bold = _stated(id).paper_text == "compute-bound"  # the paper prints a compute-bound cell bold
            ours = bool(grid[i, j] > R)
            yield _holds(id, ours == bold, intensity=grid[i, j], ridge=R, bound="compute" if ours else "memory")
    yield _holds("table1.decode_memory_bound_all", (grid[:, 0] < R).all(), low=grid[0, 0], high=grid[-1, 0], ridge=R)
    yield _holds("table1.first_speculated_compute_bound_all", (grid[:, 1] > R).all(), low=grid[0, 1],
                 high=grid[-1, 1], ridge=R)


def _expert_tax():
    m = presets.DEEPSEEK_V4_FLASH
    ffn = m.ffn
    kn = moe.knees(m, presets.B200)
    fp4 = presets.B200.ridge("fp4")
    yield _ours("moe.expert_knee", kn["expert_knee"])
    yield _ours("moe.dense_knee", kn["dense_knee"], b=ffn.weight_bytes,
                half_b_knee=lambda: float(moe_forms.dense_knee_expr.subs({moe_forms.b: 0.5, moe_forms.R: fp4})))
    yield _ours("moe.ridge_asymptotic", kn["moe_ridge_asymptotic"])
    yield _ours("moe.ridge_exact", kn["moe_ridge"], half_b=lambda: float(moe_forms.moe_ridge_batch_expr.subs(
        {moe_forms.k: ffn.top_k, moe_forms.E: ffn.n_routed, moe_forms.n_s: ffn.n_shared, moe_forms.b: 0.5, moe_forms.R: fp4})))
    w4a8 = Deployment(attention="paper", activations="fp8")  # fp4 experts, fp8 activations: the fp8 rate
    knee_w4a8 = moe.knees(w4a8.model, w4a8.hardware)["moe_ridge"]
    yield _ours("moe.ridge_exact_w4a8", knee_w4a8, ours=knee_w4a8, w4a4=kn["moe_ridge"],
                ridge_fp8=presets.B200.ridge("fp8"))
    yield _ours("moe.slope_ratio", kn["slope_ratio"])
    yield _ours("moe.origin_half_slope_routed", moe_slope_ratio_at_origin(n_shared=0, model=m))
    with_shared = moe_slope_ratio_at_origin(model=m)
    yield _ours("moe.origin_half_slope_with_shared", with_shared, with_shared=with_shared)
    at_one = moe_slope_ratio_at(1, m)
    least = functools.lru_cache(maxsize=None)(lambda: moe_least_slope_ratio(m))
    yield _ours("moe.batch1_half_slope_with_shared", at_one, at_one=at_one, lowest=lambda: least()[1],
                lowest_at=lambda: least()[0])
    second_fresh = (moe.experts_activated(2, ffn.top_k, ffn.n_routed)
                    - moe.experts_activated(1, ffn.top_k, ffn.n_routed)) / ffn.top_k
    yield _holds("moe.batch2_mostly_fresh", (1 - second_fresh) < 0.1, resident_percent=100 * (1 - second_fresh))
    yield _ours("moe.mxfp4_bytes", ffn.weight_bytes, b=ffn.weight_bytes, mxfp4=(4 + 8 / 32) / 8)


def _attention_context():
    llama = presets.model(DENSE_MODEL)
    yield _ours("attention.gqa_slope", _long_context_slope(llama))
    yield _ours("attention.mha_slope", _long_context_slope(_mha_variant(llama)))
    width = attention.compute_bound_width(llama, presets.B200)
    yield _holds("attention.gqa_memory_bound_to_hundreds", width >= 100, width=width,
                 mha_width=attention.compute_bound_width(_mha_variant(llama), presets.B200))
    yield _ours("mla.mha_form_crossover", attention.mha_form_crossover(presets.DEEPSEEK_V4_FLASH))


def _hca():
    m = presets.DEEPSEEK_V4_FLASH
    crossing = hca_ridge_context(2, m)
    yield _ours("hca.t2_ridge_context", crossing, crossing=crossing,
                crossing_281=lambda: hca_ridge_context(2, m, ridge=281.0))
    width = hca_widest_memory_bound(20_000, m)
    yield _holds("hca.moderate_verifies_memory_bound_20k", width >= 4, width=width,
                 floor_context=hca_all_widths_memory_bound_context(m))
    low = hca_kv_dominates_context(2, m)
    yield _ours("hca.speculation_band_low", low, low=low)
    yield _ours("hca.speculation_band_high", crossing, crossing=crossing, t3=lambda: hca_ridge_context(3, m),
                cheapest=lambda: hca_cheapest_first_draft_context(m))
    contexts, gstar = hca_attention_speedup_band(model=m)
    useful = contexts[gstar > 0]
    confined = useful.size > 0 and useful.min() >= 25_000 and useful.max() <= 45_000
    upper = "beyond 1,000,000" if useful.size and useful.max() == contexts.max() else f"{useful.max():,.0f}"
    yield _holds("hca.speculation_band_speedup", confined, alpha=FIG3_ACCEPTANCE, first=useful.min(), last=upper)


def _csa():
    m = presets.DEEPSEEK_V4_FLASH
    widths = np.array(TABLE_WIDTHS, dtype=float)[:, None]
    long_contexts = np.array([8192.0, 131072.0, 1048576.0])[None, :]
    csa = attention.attention_intensity(widths, long_contexts, m, "csa")
    mla512 = attention.attention_intensity(widths, 512.0, m, "mla")
    yield _ours("csa.main_equals_mla_512", np.max(np.abs(csa - mla512)),
                shared=lambda: float(np.max(np.abs(attention.attention_intensity(widths, long_contexts, m, "csa",
                                                                                 csa_overlap=1) - mla512))),
                own=lambda: float(csa[:, -1].max()))
    yield _ours("csa.indexer_slope", indexer_slope(m))
    long_ctx = 1_048_576
    first = indexer_compute_bound_widths(long_ctx, m)
    yield _ours("csa.indexer_memory_bound_widths", first - 1, context=long_ctx)
    yield _ours("csa.indexer_compute_bound_by", first, first=first,
                ridge=presets.B200.ridge(m.attention_precision),
                short=lambda: indexer_compute_bound_widths(4096, m))


def _ledger():
    m = presets.DEEPSEEK_V4_FLASH
    hw = presets.B200
    S = 8192
    paper = dict(attention="paper")  # the paper's ledger, every layer MLA over the whole context
    yield _ours("ledger.r_moe_b1", cost.marginal_cost(1, S, 0.0, m, hw, **paper)["moe"])
    yield _ours("ledger.r_moe_b1_no_shared", cost.marginal_cost(1, S, 0.0, _no_shared_expert(m), hw, **paper)["moe"])
    knee = float(moe_forms.expert_knee_expr.subs({moe_forms.k: m.ffn.top_k, moe_forms.E: m.ffn.n_routed}))
    yield _ours("ledger.r_moe_past_knee", cost.marginal_cost(10 * knee, S, 0.0, m, hw, **paper)["moe"], batch=10 * knee)
    batch = math.ceil(moe.knees(m, hw)["moe_ridge"])
    yield _ours("ledger.r_moe_compute_bound", cost.marginal_cost(batch, S, 0.0, m, hw, **paper)["moe"], batch=batch)
    proj_knee = _positive_root(
        (cost_forms.gemm_compute_expr - cost_forms.gemm_memory_expr).subs(
            {cost_forms.W: m.attn_proj_params, cost_forms.b_w: m.proj_weight_bytes, cost_forms.R: hw.ridge(m.proj_precision)}
        ),
        cost_forms.t,
    )
    yield _ours("ledger.proj_knee", proj_knee)
    below, above = math.floor(proj_knee), math.ceil(proj_knee)
    before, after = cost.marginal_cost(np.array([below, above]), S, 0.0, m, hw, **paper)["attn_proj"]
    yield _holds("ledger.proj_step", before == 0 and after == 1, before=before, after=after, below=below, above=above)
    yield _ours("ledger.attention_crossover", attention.compute_bound_width(m, hw))
    B = np.geomspace(1, 30_000, 60)[:, None]
    contexts = np.array([512.0, 8192.0, 131072.0])[None, :]
    r_attn = cost.marginal_cost(B, contexts, 0.0, m, hw, **paper)["attention"]
    r_attn_q = cost.marginal_cost(B, contexts, 0.0, m, hw, query_bytes=True, **paper)["attention"]
    yield _holds("ledger.first_speculated_full_price", bool(np.all(r_attn == 1) and np.all(r_attn_q == 1)),
                 r_attn_served=lambda: float(cost.marginal_cost(1.0, 8192.0, 0.0, m, hw, attention="served")["attention"]))
    # the same statement read on one GPU of a tensor-parallel split: every GPU reads the whole latent for 1/8 of
    # the heads (speclib.core.attention.cache_copies), so the first speculated token no longer crosses the ridge
    split = Layout(8)
    r_tp8 = cost.marginal_cost(B, contexts, 0.0, m, hw, layout=split, **paper)["attention"]
    yield _holds("ledger.first_speculated_full_price_tp8", bool(np.all(r_tp8 == 1)),
                 width=attention.compute_bound_width(m, hw, tp=8),
                 dp_width=attention.compute_bound_width(m, hw, tp=8, dp_attention=True),
                 v3_T4=attention.attention_intensity(4, 512, "DeepSeek-V3", tp=8),
                 h200_ridge=presets.H200.ridge("bf16"))
    # ... and under data-parallel attention, where each GPU holds whole heads of its own sequences
    r_dp8 = cost.marginal_cost(B, contexts, 0.0, m, hw, layout=Layout(8, 1, True), **paper)["attention"]
    yield _holds("ledger.first_speculated_full_price_dp8", bool(np.all(r_dp8 == 1)),
                 dp_width=attention.compute_bound_width(m, hw, tp=8, dp_attention=True))
    # the ledger prices no recurrent state: complete for a model without linear-attention layers
    hybrid = presets.model(_simulator.MODEL)
    yield _holds("ledger.no_recurrent_state", m.n_linear_layers == 0 and not m.is_hybrid, linear=m.n_linear_layers,
                 hybrid=hybrid.name, state=hybrid.linear_attention.state_bytes)


def zero_runs_of(regions) -> list:
    """The gutters of :func:`speclib.core.speculation.gamma_regions` as whole (first, last)."""
    return [(int(a), int(b)) for a, b in regions["gutters"]]


def _describe_runs(runs) -> str:
    return ", ".join(f"B = {a:,}-{b:,}" for a, b in runs) or "none"


def _figure3():
    runs = figure3_zero_runs()
    runs_q = figure3_zero_runs(query_bytes=True)
    last = FIG3_MAX_BATCH
    gutters = [r for r in runs if r[1] < last]
    tail = [r for r in runs if r[1] == last and r[0] > 1]
    setting = dict(context=FIG3_CONTEXT, alpha=FIG3_ACCEPTANCE, c_draft=FIG3_DRAFT_COST, max_batch=last)
    served = figure3_zero_runs(attention="served")
    served_tail = [r for r in served if r[1] == last and r[0] > 1]
    yield _holds("fig3.gutter", bool(gutters) and gutters[0][0] < 1000, gutters=_describe_runs(gutters),
                 gutters_with_query_bytes=_describe_runs([r for r in runs_q if r[1] < last]),
                 gutters_served=_describe_runs([r for r in served if r[1] < last]), **setting)
    yield _holds("fig3.large_batch_zero", bool(tail), first=lambda: tail[0][0],
                 first_with_query_bytes=lambda: [r for r in runs_q if r[1] == last][0][0],
                 first_served=f"{served_tail[0][0]:,}" if served_tail else "nowhere in the range", **setting)
    # the post's fp4 ridge read as W4A4; with fp8 activations (W4A8) the experts run at the fp8 rate
    regions = {a: _spec.gamma_regions(FIG3_ACCEPTANCE, S=FIG3_CONTEXT, c_draft=FIG3_DRAFT_COST,
                                      deployment=Deployment(attention="paper", activations=a)) for a in (None, "fp8")}
    w4a4, w4a8 = regions[None], regions["fp8"]
    yield _holds("fig3.w4a8", bool(w4a8["gutters"]) and w4a8["gutters"] == w4a4["gutters"]
                 and w4a8["last_speculating"] < FIG3_MAX_BATCH,
                 gutter_w4a8=_describe_runs(zero_runs_of(w4a8)), gutter_w4a4=_describe_runs(zero_runs_of(w4a4)),
                 last_w4a8=int(w4a8["last_speculating"]), last_w4a4=int(w4a4["last_speculating"]),
                 context=FIG3_CONTEXT, alpha=FIG3_ACCEPTANCE, c_draft=FIG3_DRAFT_COST)
    # the whole step, the output head and the routers counted (the per-layer ledger leaves them out)
    whole = _spec.whole_step_gutter("DeepSeek-V4-Flash", "B200", S=FIG3_CONTEXT, c_draft=FIG3_DRAFT_COST,
                                    alpha=FIG3_ACCEPTANCE)
    outside = _spec.outside_the_layers("DeepSeek-V4-Flash")
    yield _holds("fig3.gutter_whole_step", bool(whole["uniform"]) and whole["uniform"][0][0] < 1000,
                 whole=_describe_runs(whole["uniform"]), layers_only=_describe_runs(whole["layers_only"]),
                 head=outside["head"], routers=outside["routers"])


#: The expert-parallel setting of the post's paragraph, checked at Figure 3's
#: defaults: the experts over 64 B200s in one NVLink 5 domain of 72, as an
#: NVL72 rack joins them (an HGX board's NVLink joins 8).
EP_GPUS = 64
EP_BATCH = 8


def _expert_parallelism():
    m, hw = presets.DEEPSEEK_V4_FLASH, presets.B200
    def ledger(G):  # the paper's ledger, every layer MLA over the whole context
        cm = _parallel.expert_parallel_cost_model(m, hw, G, _parallel.NVL72, attention="paper")
        return _parallel.ledger(cm, EP_BATCH, FIG3_CONTEXT, 0.0)

    one, spread = ledger(1)["moe"], ledger(EP_GPUS)["moe"]
    yield _holds("ep.tax_shrinks", spread < one, batch=EP_BATCH, gpus=EP_GPUS, r_one=one, r_spread=spread)
    cm = _parallel.expert_parallel_cost_model(m, hw, EP_GPUS, _parallel.NVL72, attention="paper")
    yield _holds("ep.comm_does_not_amortise", parallel_forms.comm_slope_expr == 1, gpus=EP_GPUS,
                 network=cm.interconnect.name, latency_us=cm.interconnect.latency * 1e6,
                 slope_one=float(cm.comm_slope(1.0)), crossover=cm.latency_crossover())
    prices = group_limited_tax()
    yield _holds("ep.tax_shrinks_group_limited", prices["grouped"] < prices["tp"], **prices)


#: The group-limited setting: DeepSeek-V3 (top 8 within the top 4 of 8 expert groups) on 8 H200s.
GROUPED_MODEL, GROUPED_HARDWARE, GROUPED_GPUS = "DeepSeek-V3", "H200", 8


def group_limited_tax(batch=EP_BATCH, context=FIG3_CONTEXT) -> dict:
    """The price of one speculated token (one GPU's kernel time of a verify of
    2 over a plain step, the paper's attention) for :data:`GROUPED_MODEL` on
    :data:`GROUPED_GPUS` GPUs: the experts sliced over them (``tp``), split
    whole with every GPU loaded alike (``ep``), and priced at the most loaded
    GPU under the model's group-limited routing (``grouped``,
    :func:`speclib.core.moe.rank_max_load`)."""
    m, hw = presets.model(GROUPED_MODEL), presets.hardware(GROUPED_HARDWARE)
    sm = _step.step_model(m, hw, attention="paper")
    B, S = np.float64(batch), np.float64(context)

    def price(layout, grouped=False):
        ps = ParallelStep(sm, layout, group_limited=grouped)
        return float(ps.kernel_time(B, np.float64(2.0), S) / ps.kernel_time(B, np.float64(1.0), S) - 1.0)

    G = GROUPED_GPUS
    return {"tp": price(Layout(G)), "ep": price(Layout(G, G)), "grouped": price(Layout(G, G), True),
            "model": m.name, "hardware": hw.name, "gpus": G, "batch": batch, "context": context}


def dense_deployment() -> Deployment:
    """The older article's dense deployment: :data:`DENSE_MODEL` on
    :data:`DENSE_TP` :data:`DENSE_HARDWARE` GPUs in tensor parallel, priced by
    the paper's per-layer ledger (whose ratios do not depend on the width)."""
    return Deployment(DENSE_MODEL, DENSE_HARDWARE, tp=DENSE_TP)


def _older_articles():
    dep = dense_deployment()
    n = acceptance.expected_committed(0.8, 4)
    yield _ours("older.tokens_per_pass", n, accepted=n - 1, committed=n)
    held = dep.max_batch(DENSE_CONTEXT)
    dense = dict(model=DENSE_MODEL, hardware=f"{DENSE_TP} x {dep.hardware.name}", context=DENSE_CONTEXT,
                 c_draft=DENSE_DRAFT_COST, gamma_max=DENSE_GAMMA_MAX, held=held)
    for alpha, tag in ((0.6, "60"), (0.8, "80"), (0.85, "85"), (0.95, "95")):
        gstar, best = optimal_gamma(alpha, 1, DENSE_CONTEXT, DENSE_DRAFT_COST, gamma_max=DENSE_GAMMA_MAX,
                                    deployment=dep)
        cheap = lambda alpha=alpha: optimal_gamma(alpha, 1, DENSE_CONTEXT, DENSE_CHEAP_DRAFT_COST,  # noqa: E731
                                                  gamma_max=DENSE_GAMMA_MAX, deployment=dep)
        yield _ours(f"older.speedup_alpha{tag}", best, speedup=best, gamma_star=gstar, cheap_cost=DENSE_CHEAP_DRAFT_COST,
                    cheap=lambda cheap=cheap: cheap()[1], cheap_gamma=lambda cheap=cheap: cheap()[0], **dense)
    batch, alpha = 128, 0.7
    gstar, best = optimal_gamma(alpha, batch, DENSE_CONTEXT, DENSE_DRAFT_COST, deployment=dep)
    # every batch the deployment holds at its context, each at a draft length it holds (plain decoding always)
    batches = np.arange(1.0, held + 1.0)
    gammas = np.arange(65)
    table = np.stack([np.broadcast_to(_spec.speedup(alpha, int(g), batches, DENSE_CONTEXT, DENSE_DRAFT_COST,
                                                    deployment=dep), batches.shape) for g in gammas])
    fits = batches[None, :] <= np.asarray(dep.max_batch(DENSE_CONTEXT, gammas))[:, None]
    scan = gammas[np.argmax(np.where(fits | (gammas == 0)[:, None], table, -np.inf), axis=0)]
    zeros = ", ".join(f"B = {a:,}-{b:,}" for a, b in zero_runs(batches, scan)) or (
        f"no batch the deployment holds (up to {held:,} sequences of {DENSE_CONTEXT:,} tokens)")
    yield _ours("older.plain_decoding_wins_above_64", gstar, gamma_star=gstar, batch=batch, speedup=best,
                alpha=alpha, zero_runs=zeros, **dense)


# --- the sequel: "Adaptive speculative decoding" (Finn 2026) --------------------------

#: The concurrencies of the sequel's headline table (its printed values are in
#: the data file).
SEQUEL_HEADLINE_CONCURRENCY = (1, 8, 64, 128, 512, 2048)
#: The sequel's drafters by the grid's keys, and their labels in the claims.
_SEQUEL_DRAFTER_LABELS = (("mtp", "MTP"), ("dflash", "DFlash"))


def _sequel_step():
    model = _simulator.simulated_model()
    # the simulator's step: each linear layer's state read, none written back (speclib.evidence.simulator.STATE_WRITE)
    sm = _step.step_model(model, _simulator.HARDWARE, roofline="aggregate", state_write=_simulator.STATE_WRITE)
    slots = _step.step_model(model, _simulator.HARDWARE, roofline="aggregate", expert_count="slots",
                             state_write=_simulator.STATE_WRITE)
    one, zero = np.asarray(1.0), np.asarray(0.0)
    ms = float(sm.time(one, one, zero)) * 1e3
    gigabytes = sum(q for _, q in sm.components(one, one, zero).values()) / 1e9
    arch = model.step_architecture()
    counts = dict(ms_slots=float(slots.time(one, one, zero)) * 1e3,
                  gb_slots=sum(q for _, q in slots.components(one, one, zero).values()) / 1e9,
                  write_gb=float(_step.nf.state_write_bytes(1.0, arch.linear_layers, arch.state_bytes)) / 1e9)
    yield _ours("sequel.plain_step_ms", ms, **counts)
    yield _ours("sequel.plain_step_GB", gigabytes, **counts)
    yield _ours("sequel.grid_plain_ms", ms)
    mtp, dflash = (drafters.resolve_drafter(name, None, presets.hardware(_simulator.HARDWARE), roofline="aggregate")
                   for name in _simulator.DRAFTERS.values())
    yield _ours("sequel.mtp_pass_us", float(mtp.time(1, 1.0)) * 1e6)
    m = mtp.preset.step
    yield _ours("sequel.mtp_active_params", (m.dense_params + (m.top_k + m.n_shared) * m.ffn_params) / 1e9)
    # the MTP layer's dense weights rebuilt from the target's config: a 2d -> d fusion of two hidden states,
    # one attention block as the simulator counts it (no output gate) and the output head the two share
    target = _simulator.simulated_model()
    parts = dict(fusion=2 * target.hidden_size * target.hidden_size, attention=int(target.attn_proj_params),
                 head=target.vocab_size * target.hidden_size)
    yield _ours("sequel.mtp_dense_params", sum(parts.values()), **parts)
    block_us = float(dflash.time(1, 1.0)) * 1e6
    yield _ours("sequel.dflash_block_us", block_us, block_us=block_us)
    ridge = presets.hardware(_simulator.HARDWARE).ridge(dflash.preset.step.dense_precision)
    yield _ours("sequel.dflash_compute_bound", ridge / dflash.preset.block)
    yield _ours("sequel.crossover_per_token", _derivations.drafter_crossover()["per_token"].value)
    for gamma in (2, 4, 8, 16):
        exact = drafters.crossover_batch(gamma, hardware=_simulator.HARDWARE, roofline="aggregate")
        yield _ours(f"sequel.crossover_gamma{gamma}", exact, exact=exact, first_batch=math.ceil(exact))
    yield _holds("sequel.gamma1_mtp_cheaper",
                 drafters.crossover_batch(1, hardware=_simulator.HARDWARE, roofline="aggregate") == 0.0)


def _sequel_attention():
    model = presets.model(_simulator.MODEL)
    arch = model.step_architecture()
    ridge = presets.hardware(_simulator.HARDWARE).ridge(model.attention_precision)
    gqa_per_T = arch.flops_per_pair / arch.context_bytes
    yield _ours("sequel.gqa_intensity_per_T", gqa_per_T)
    yield _ours("sequel.gqa_memory_bound_width", ridge / gqa_per_T)
    gdn = model.linear_attention
    per_T = float(attention.nf.linear_intensity(1.0, *(gdn.architecture()[a] for a in ("n_k", "n_v", "d_k", "d_v",
                                                                                       "K_conv", "b_s"))))
    yield _ours("sequel.gdn_intensity_per_T", per_T, ours=per_T)
    yield _ours("sequel.kv_per_token", arch.context_bytes * arch.attention_layers)
    yield _ours("sequel.state_per_layer", gdn.state_bytes)
    yield _ours("sequel.state_per_sequence", arch.state_bytes * arch.linear_layers)
    yield _ours("sequel.kv_equals_state", _derivations.kv_state_crossing()["value"].value)
    yield _ours("sequel.expert_weights", arch.ffn_params)
    simulated = _simulator.simulated_model().step_architecture().dense_params
    yield _ours("sequel.active_nonexpert", simulated, **_active_nonexpert_fields(model, simulated, arch.dense_params))
    ungated = _simulator.simulated_model()
    gate_total = arch.attention_layers * (model.attn_proj_params - ungated.attn_proj_params)
    one, zero = np.asarray(1.0), np.asarray(0.0)
    plain_weights = sum(q for key, (_, q) in _step.step_model(ungated, _simulator.HARDWARE, roofline="aggregate")
                        .components(one, one, zero).items() if key != "attention")
    yield _ours("sequel.attention_params_per_layer", ungated.attn_proj_params / 1e6,
                gated=model.attn_proj_params / 1e6, gate_total=gate_total, layers=int(arch.attention_layers),
                gate_share=gate_total * arch.dense_bytes / plain_weights)


def _active_nonexpert_fields(model, simulated, configured) -> dict:
    gdn, h = model.linear_attention, model.hidden_size
    gates_and_conv = model.n_linear_layers * (h * 2 * gdn.n_value_heads + (2 * gdn.n_key_heads * gdn.key_head_dim
                                              + gdn.n_value_heads * gdn.value_head_dim) * gdn.conv_kernel)
    post = _stated("sequel.active_nonexpert").paper_value
    return dict(simulated=simulated, relative=simulated / post - 1, gates_and_conv=gates_and_conv,
                unplaced=gates_and_conv - (simulated - post), output_gate=configured - simulated)


def _sequel_grid():
    comparison = _simulator.compare()
    grid = _simulator.load_grid()
    C = list(grid.concurrency.astype(int))
    for key, _ in _SEQUEL_DRAFTER_LABELS:
        yield _ours(f"sequel.fit_median_{key}", 100 * comparison[key].median_error,
                    median_slots=lambda key=key: 100 * _simulator.compare(expert_count="slots")[key].median_error)
    yield _ours("sequel.fit_max", 100 * max(c.max_error for c in comparison.values()))
    snapshots = functools.lru_cache(maxsize=None)(lambda: _simulator.compare(rollback="snapshot"))
    yield _ours("sequel.best_gamma_agreement", sum(int(c.best_gamma_agrees.sum()) for c in comparison.values()),
                snapshot_agree=lambda: sum(int(c.best_gamma_agrees.sum()) for c in snapshots().values()),
                snapshot_max=lambda: 100 * max(c.max_error for c in snapshots().values()))
    # "the same step": the verify step priced per component, the drafters as the simulator prices them (the
    # reading the sequel's 27-31 % implies); the notes give the step priced per component throughout, the
    # drafter's passes too, as the pricing-rule chapter prices it
    per = _simulator.compare(roofline="per-component", drafter_roofline="aggregate")
    whole = functools.lru_cache(maxsize=None)(lambda: _simulator.compare(roofline="per-component"))
    for key, _ in _SEQUEL_DRAFTER_LABELS:
        yield _ours(f"sequel.per_component_max_{key}", 100 * per[key].max_error,
                    whole_step_max=lambda key=key: 100 * whole()[key].max_error)
        yield _ours(f"sequel.per_component_gamma_{key}", int((~per[key].best_gamma_agrees).sum()),
                    whole_step=lambda key=key: int((~whole()[key].best_gamma_agrees).sum()), concurrencies=len(C))
    shortfall = max(float(c.policy_shortfall.max()) for c in comparison.values())
    yield _holds("sequel.policy_matches_best_fixed", shortfall <= 0.005, shortfall=shortfall)
    simulated = max(float(c.simulated_policy_shortfall.max()) for c in comparison.values())
    yield _holds("sequel.simulated_policy", simulated <= 0.005, shortfall=simulated)
    for key, _ in _SEQUEL_DRAFTER_LABELS:
        c = comparison[key]
        spread = c.predicted.max(axis=0) / c.predicted.min(axis=0)
        at = int(np.argmax(spread))
        yield _ours(f"sequel.mistuned_{key}", spread[at], ratio=float(spread[at]),
                    simulator_value=float(np.max(c.grid.goodput.max(axis=0) / c.grid.goodput.min(axis=0))),
                    concurrency=int(grid.concurrency[at]), worst_gamma=int(c.grid.gammas[np.argmin(c.predicted[:, at])]))
    dflash = comparison["dflash"]
    at = C.index(128)
    yield _ours("sequel.c128_tpot_cut", dflash.predicted[:, at].max() / dflash.predicted[0, at])
    curves = acceptance.load_survival_curves()
    yield _ours("sequel.mtp_survival_sum", curves["mtp"].values.sum())
    yield _ours("sequel.dflash_survival_sum", curves["dflash"].values.sum())
    moves, losses = [], []
    for key, name in _simulator.DRAFTERS.items():
        priced = _simulator.deployment(key).pricing()
        curve = priced.measured_acceptance()
        measured = curves[key]
        iid = acceptance.geometric_survival(measured.first_position_acceptance, len(measured)).values
        iid = acceptance.SurvivalCurve(np.concatenate([iid, np.zeros(len(curve) - len(measured))]))
        B, S = grid.concurrency, _simulator.context()
        g_m, _ = _spec.best_gamma(priced, curve, B, S)
        g_i, _ = _spec.best_gamma(priced, iid, B, S)
        moves.append(int(np.count_nonzero(g_m != g_i)))
        losses.append(float(np.max(1 - priced.throughput(B, g_i.astype(float), S, curve)
                                   / priced.throughput(B, g_m.astype(float), S, curve))))
    yield _ours("sequel.iid_moves_gamma", max(moves))
    yield _ours("sequel.iid_loss", 100 * max(losses))


def _sequel_headline():
    comparison = _simulator.compare()
    grid = _simulator.load_grid()
    C = list(grid.concurrency.astype(int))
    for conc in SEQUEL_HEADLINE_CONCURRENCY:
        at = C.index(conc)
        if conc == 1:
            ours = comparison["mtp"].predicted[0, at]
            slots = _simulator.compare(expert_count="slots")["mtp"].predicted[0, at]
            simulated = grid.drafters["mtp"].goodput[0, at]
            yield _ours("sequel.headline.plain_c1", ours, ours=ours, relative=ours / simulated - 1, slots=slots,
                        slots_relative=slots / simulated - 1, simulator_value=simulated)
        for key, _ in _SEQUEL_DRAFTER_LABELS:
            c = comparison[key]
            yield _ours(f"sequel.headline.gamma_{key}_c{conc}", c.policy_gamma[at])
            best, plain = c.predicted[:, at].max(), c.predicted[0, at]
            yield _ours(f"sequel.headline.gain_{key}_c{conc}", best / plain,
                        simulator_value=c.grid.goodput[:, at].max() / c.grid.goodput[0, at],
                        best_relative=best / c.grid.goodput[:, at].max() - 1,
                        plain_relative=plain / c.grid.goodput[0, at] - 1)
    gains = {key: c.predicted.max(axis=0) / c.predicted[0] for key, c in comparison.items()}
    small = max(float(g[grid.concurrency <= 8].max()) for g in gains.values())
    yield _holds("sequel.headline.small_at_low_concurrency", small < 1.25, small=small)
    peaks = [int(grid.concurrency[np.argmax(g)]) for g in gains.values()]
    yield _holds("sequel.headline.peak", all(64 <= p <= 512 for p in peaks), mtp=peaks[0], dflash=peaks[1])
    top = C.index(2048)
    yield _holds("sequel.headline.mtp_wins_top", gains["mtp"][top] > gains["dflash"][top],
                 mtp=gains["mtp"][top], dflash=gains["dflash"][top])


#: Every section, in the book's order. A section is a generator of (id, value, fields) from _ours and _holds, each
#: id stated in speclib/data/claims.json. The referee's points on physics the model leaves out (attention under
#: tensor parallelism, CSA's per-position selection, activations, the per-layer ledger's omissions) are claims of
#: the sections they belong to; those still to add (expert-parallel stragglers and group-limited routing, the
#: recurrent state's write, draft positions routing together, the gutter's robustness) go in as a section of their
#: own here, with their entries in claims.json under a section of the same name.
_SECTIONS = (_constants_and_ridges, _table1, _expert_tax, _attention_context, _hca, _csa, _ledger, _figure3,
             _expert_parallelism, _older_articles, _sequel_step, _sequel_attention, _sequel_grid, _sequel_headline)


def computed() -> dict:
    """Our value of every claim, and the fields of its notes, by claim id."""
    out = {}
    for section in _SECTIONS:
        for id, value, fields in section():
            if id in out:
                raise AssertionError(f"claim {id!r} is computed twice")
            out[id] = (value, fields)
            _COMPUTED_BY[id] = f"{__name__}.{section.__name__}"
    return out


_COMPUTED_BY: dict = {}


def computed_by() -> dict:
    """The function of this module that computes each claim, by claim id
    (``"speclib.evidence.claims._table1"``): what holds a check that
    :data:`HELD_BY` does not name."""
    if not _COMPUTED_BY:
        computed()
    return dict(_COMPUTED_BY)


def registry() -> list:
    """Every claim, recomputed now (our values are never cached), in the
    order of ``speclib/data/claims.json`` (the book's order)."""
    data = _claim_data.load()
    ours = computed()
    stated = [spec.id for spec in data.claims]
    missing = [i for i in stated if i not in ours]
    if missing:
        raise ValueError(f"claims in the data file that nothing computes: {missing}")
    unstated = [i for i in ours if i not in set(stated)]
    if unstated:
        raise ValueError(f"claims computed but missing from the data file: {unstated}")
    return [spec.claim(*ours[spec.id]) for spec in data.claims]

def by_id(claims=None) -> dict:
    """The registry as a dict keyed by claim id."""
    return {c.id: c for c in (registry() if claims is None else claims)}


def differences(claims=None) -> list:
    """The claims whose recomputed value leaves the paper's tolerance."""
    return [c for c in (registry() if claims is None else claims) if c.status == "differs"]


def counts(claims=None) -> dict:
    """How many claims reproduce and how many differ."""
    claims = registry() if claims is None else claims
    return {status: sum(c.status == status for c in claims) for status in STATUSES}


def sides(claims=None) -> dict:
    """Of the claims that differ, how many by who differs (:data:`SIDES`)."""
    claims = registry() if claims is None else claims
    return {side: sum(c.status == "differs" and c.side == side for c in claims) for side in SIDES}



# --- independent checks ------------------------------------------------------------
#
# Printed numbers that one computation decides together are one check: Table 1's
# 42 cells (20 intensities, 20 bold marks and two summary rows) are one grid of
# one function, so a wrong constant would move them all at once. The data file
# says which claims share a check (their field ``check``, stated in its "checks"
# table); every other claim is a check of its own.

#: The library function that computes our value of each check of the post,
#: by check id (each must import: tests/test_claims.py resolves every name).
HELD_BY = {
    "mla.m_c": "speclib.presets.architecture.Model.context_bytes",
    "mla.m_q": "speclib.presets.architecture.Model.query_bytes",
    "mla.f": "speclib.presets.architecture.Model.flops_per_pair",
    "mla.query_context_ratio": "speclib.formulas.attention.mla_query_context_ratio_expr",
    "model.expert_params": "speclib.presets.architecture.Model.expert_params",
    "model.attn_proj_params": "speclib.presets.architecture.Model.attn_proj_params",
    "ridge.bf16": "speclib.presets.architecture.Hardware.ridge",
    "ridge.fp8": "speclib.presets.architecture.Hardware.ridge",
    "ridge.fp4": "speclib.presets.architecture.Hardware.ridge",
    "table1": "speclib.core.attention.attention_intensity",
    "moe.expert_knee": "speclib.core.moe.knees",
    "moe.dense_knee": "speclib.core.moe.knees",
    "moe.ridge_asymptotic": "speclib.core.moe.knees",
    "moe.ridge_exact": "speclib.core.moe.knees",
    "moe.slope_ratio": "speclib.core.moe.knees",
    "moe.origin_half_slope_routed": "speclib.evidence.claims.moe_slope_ratio_at_origin",
    "moe.origin_half_slope_with_shared": "speclib.evidence.claims.moe_slope_ratio_at_origin",
    "moe.batch1_half_slope_with_shared": "speclib.evidence.claims.moe_slope_ratio_at",
    "moe.batch2_mostly_fresh": "speclib.core.moe.experts_activated",
    "moe.mxfp4_bytes": "speclib.presets.architecture.MoEFFN",
    "attention.gqa_slope": "speclib.formulas.attention.intensity_long_context_expr",
    "attention.mha_slope": "speclib.formulas.attention.intensity_long_context_expr",
    "attention.gqa_memory_bound_to_hundreds": "speclib.core.attention.compute_bound_width",
    "mla.mha_form_crossover": "speclib.core.attention.mha_form_crossover",
    "hca.t2_ridge_context": "speclib.evidence.claims.hca_ridge_context",
    "hca.moderate_verifies_memory_bound_20k": "speclib.evidence.claims.hca_widest_memory_bound",
    "hca.speculation_band_low": "speclib.evidence.claims.hca_kv_dominates_context",
    "hca.speculation_band_high": "speclib.evidence.claims.hca_ridge_context",
    "hca.speculation_band_speedup": "speclib.evidence.claims.hca_attention_speedup_band",
    "csa.main_equals_mla_512": "speclib.core.attention.attention_intensity",
    "csa.indexer_slope": "speclib.evidence.claims.indexer_slope",
    "csa.indexer_memory_bound_widths": "speclib.evidence.claims.indexer_compute_bound_widths",
    "csa.indexer_compute_bound_by": "speclib.evidence.claims.indexer_compute_bound_widths",
    "ledger.r_moe_b1": "speclib.core.cost.marginal_cost",
    "ledger.r_moe_b1_no_shared": "speclib.core.cost.marginal_cost",
    "ledger.r_moe_past_knee": "speclib.core.cost.marginal_cost",
    "ledger.r_moe_compute_bound": "speclib.core.cost.marginal_cost",
    "ledger.proj_knee": "speclib.formulas.cost.gemm_compute_expr",
    "ledger.proj_step": "speclib.core.cost.marginal_cost",
    "ledger.attention_crossover": "speclib.core.attention.compute_bound_width",
    "ledger.first_speculated_full_price": "speclib.core.cost.marginal_cost",
    "ledger.first_speculated_full_price_tp8": "speclib.core.attention.cache_copies",
    "ledger.first_speculated_full_price_dp8": "speclib.core.attention.cache_copies",
    "fig3.gutter": "speclib.evidence.claims.figure3_zero_runs",
    "fig3.large_batch_zero": "speclib.evidence.claims.figure3_zero_runs",
    "ep.tax_shrinks": "speclib.core.parallel.ledger",
    "ep.comm_does_not_amortise": "speclib.formulas.parallel.comm_slope_expr",
    "moe.ridge_exact_w4a8": "speclib.formulas.moe.gemm_ridge_expr",
    "fig3.w4a8": "speclib.core.speculation.gamma_regions",
    "fig3.gutter_whole_step": "speclib.core.speculation.whole_step_gutter",
    "ledger.no_recurrent_state": "speclib.presets.architecture.Model.is_hybrid",
    "ep.tax_shrinks_group_limited": "speclib.evidence.claims.group_limited_tax",
}


@dataclasses.dataclass(frozen=True)
class Check:
    """One independent check: the claims one computation decides together
    (one claim for most; Table 1's 42 for its grid). ``status`` is
    "reproduced" when every claim reproduces; ``held_by`` names the library
    function that computes ours."""

    id: str
    statement: str
    claims: tuple
    held_by: str

    @property
    def status(self) -> str:
        return "reproduced" if all(c.status == "reproduced" for c in self.claims) else "differs"

    @property
    def max_deviation(self) -> float:
        """The largest |ours - the printed value| over the check's value claims (0 with none)."""
        return max((abs(c.our_value - c.paper_value) for c in self.claims if c.kind == "value"), default=0.0)

    @property
    def alone(self) -> bool:
        return len(self.claims) == 1

    @property
    def paper_text(self) -> str:
        if self.alone:
            return self.claims[0].paper_display
        values = sum(c.kind == "value" for c in self.claims)
        return f"{len(self.claims)} printed: {values} numbers, {len(self.claims) - values} statements"

    @property
    def our_text(self) -> str:
        if self.alone:
            return self.claims[0].our_text
        worst = max((c for c in self.claims if c.kind == "value"), key=lambda c: abs(c.our_value - c.paper_value))
        held = sum(c.kind != "value" and c.status == "reproduced" for c in self.claims)
        statements = sum(c.kind != "value" for c in self.claims)
        return (f"largest deviation {self.max_deviation:.2f} ({worst.id}, allowed {worst.allowed:g}); "
                f"{held} of {statements} statements hold")

    @property
    def verdict(self) -> str:
        if self.alone:
            return self.claims[0].verdict
        differ = [c for c in self.claims if c.status == "differs"]
        return "reproduced" if not differ else f"{len(differ)} of {len(self.claims)} differ"

    @property
    def note(self) -> str:
        if self.alone:
            return self.claims[0].note
        return "; ".join(f"{c.id}: {c.note}" for c in self.claims if c.status == "differs")


def checks(claims=None) -> list:
    """The claims as independent checks, in registry order (a check where its
    first claim stands)."""
    claims = registry() if claims is None else claims
    data, by = _claim_data.load(), computed_by()
    groups = {}
    for c in claims:
        groups.setdefault(c.check, []).append(c)
    out = []
    for key, members in groups.items():
        statement = data.checks[key] if key in data.checks else members[0].statement
        out.append(Check(key, statement, tuple(members), HELD_BY.get(key, by[members[0].id])))
    return out


def check_counts(claims=None) -> dict:
    """How many independent checks the claims make and over how many claims
    (printed numbers, statements and their readings): ``checks``, ``claims``, and of the checks ``reproduced`` and ``differs``."""
    claims = registry() if claims is None else claims
    found = checks(claims)
    return {"checks": len(found), "claims": len(claims),
            **{status: sum(k.status == status for k in found) for status in STATUSES}}


# --- rendering ------------------------------------------------------------------

COLUMNS = ("claim", "paper", "ours", "verdict", "note")


class ClaimTable:
    """The registry as a table: HTML in the book, deterministic plain text
    elsewhere. ``rows`` are tuples in :data:`COLUMNS` order."""

    def __init__(self, claims, title="Claims"):
        self.claims = list(claims)
        self.title = title

    @property
    def rows(self) -> list:
        return [
            (f"{c.id}: {c.statement}", c.paper_display, c.our_text, c.verdict, c.note)
            for c in self.claims
        ]

    def counts(self) -> dict:
        return counts(self.claims)

    def _summary(self) -> str:
        n = self.counts()
        noun = "claim" if len(self.claims) == 1 else "claims"
        verb = "differs" if n["differs"] == 1 else "differ"
        return f"{len(self.claims)} {noun}: {n['reproduced']} reproduced, {n['differs']} {verb}"

    def __repr__(self) -> str:
        lines = [f"{self.title} ({self._summary()})"]
        for claim, paper, ours, status, note in self.rows:
            lines.append(f"[{status}] {claim} | paper {paper} | ours {ours}")
            if note:
                lines.append(f"    note: {note}")
        return "\n".join(lines)

    #: The table's headings and its HTML class.
    columns = COLUMNS
    css_class = "claims-table"

    def _cells_html(self, row) -> str:
        return "".join(f"<td>{html.escape(str(v))}</td>" for v in row)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = []
        for row in self.rows:  # the verdict is each row's fourth cell
            style = "" if row[3] == "reproduced" else ' style="background-color:#fff3cd"'
            body.append(f"<tr{style}>{self._cells_html(row)}</tr>")
        return (
            f"<p><strong>{html.escape(self.title)}</strong>: {html.escape(self._summary())}</p>"
            f'<table class="{self.css_class}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        )


CHECK_COLUMNS = ("check", "paper", "ours", "verdict", "why", "held by")


class CheckTable(ClaimTable):
    """The registry as independent checks, one row each (:func:`checks`):
    HTML in the book, deterministic plain text elsewhere."""

    columns = CHECK_COLUMNS
    css_class = "claims-table checks-table"

    def __init__(self, claims, title="Independent checks"):
        super().__init__(claims, title)
        self.checks = checks(self.claims)

    @property
    def rows(self) -> list:
        return [(k.statement, k.paper_text, k.our_text, k.verdict, k.note, k.held_by) for k in self.checks]

    def counts(self) -> dict:
        return check_counts(self.claims)

    def _summary(self) -> str:
        n = self.counts()
        return (f"{n['checks']} independent checks over {n['claims']} claims: {n['reproduced']} reproduced, "
                f"{n['differs']} differ")

    def __repr__(self) -> str:
        lines = [f"{self.title} ({self._summary()})"]
        for check, paper, ours, status, note, held in self.rows:
            lines.append(f"[{status}] {check} | paper {paper} | ours {ours} | {held}")
            if note:
                lines.append(f"    why: {note}")
        return "\n".join(lines)

    def _cells_html(self, row) -> str:
        cells = "".join(f"<td>{_breakable(v)}</td>" for v in row[:-1])
        return f"{cells}<td><code>{_breakable(row[-1])}</code></td>"


def _breakable(v) -> str:
    """``v`` escaped for HTML, a dotted name in it (speclib.formulas.moe.gemm_ridge_expr) free to break after
    each dot and underscore and nowhere else: a number's decimal point keeps its digits together."""
    return re.sub(r"(\.(?=[A-Za-z_])|_)", r"\1<wbr>", html.escape(str(v)))


def check_table(claims=None, source=None, title="Independent checks") -> CheckTable:
    """One row per independent check of the claims (of one source, or a tuple of them)."""
    claims = registry() if claims is None else claims
    if source is not None:
        wanted = (source,) if isinstance(source, str) else tuple(source)
        claims = [c for c in claims if c.source in wanted]
    return CheckTable(claims, title)


def table(claims=None, section=None, status=None, title=None, source=None) -> ClaimTable:
    """Rows for rendering, optionally one section, one status or some
    sources (a source or a tuple of them) only."""
    claims = registry() if claims is None else claims
    if source is not None:
        wanted = (source,) if isinstance(source, str) else tuple(source)
        claims = [c for c in claims if c.source in wanted]
    if section is not None:
        claims = [c for c in claims if c.section == section]
    if status is not None:
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}; got {status!r}")
        claims = [c for c in claims if c.status == status]
    return ClaimTable(claims, title or section or "Claims")


def sections(claims=None) -> list:
    """Section names in registry order."""
    out = []
    for c in registry() if claims is None else claims:
        if c.section not in out:
            out.append(c.section)
    return out
