"""The MoE roofline: how many experts a batch touches, and what that does to
arithmetic intensity (the paper's "expert tax", its first chart and appendix).
The closed forms are in :mod:`speclib.formulas.moe`.
"""
from __future__ import annotations

import functools

import json
from importlib import resources

import numpy as np

from .._checks import checked_array, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import resolve



def _check_experts(k_value, E_value):
    E_arr = checked_array("E", E_value, lo=1, integer=True)
    k_arr = checked_array("k", k_value, lo=1, integer=True)
    if (k_arr > E_arr).any():
        raise ValueError("k must be in [1, E] (experts picked per token cannot exceed experts available)")
    return k_arr, E_arr


def experts_activated(B, k, E, routing=None):
    """Expected number of distinct routed experts touched by ``B`` tokens,
    each picking ``k`` distinct experts of ``E``: uniformly at random
    (``routing=None``, the paper's coupon count E(1 - (1 - k/E)^B)), or with
    a measured popularity ``routing``, a vector of E shares p_i summing to 1
    (within 1e-3; rescaled to exactly 1), expert i then picked with
    probability k p_i per token: sum_i [1 - (1 - k p_i)^B]
    (:data:`speclib.formulas.moe.experts_activated_skewed_expr`).

    ``B`` may be any positive real (a fractional batch is the smooth
    interpolation the roofline uses); arrays broadcast (with ``routing``,
    ``k`` and ``E`` are single integers).
    """
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    if routing is not None:
        k_value = checked_int("k", k, lo=1)
        E_value = checked_int("E", E, lo=1)
        if k_value > E_value:
            raise ValueError("k must be in [1, E] (experts picked per token cannot exceed experts available)")
        shares = check_routing(routing, E_value, k_value)
        return scalar_or_array(skewed_count(B_arr, k_value * shares))
    k_arr, E_arr = _check_experts(k, E)
    with np.errstate(divide="ignore"):  # k == E: log1p(-1) = -inf, see speclib.formulas.moe.numeric_form
        return scalar_or_array(nf.experts_activated(B_arr, k_arr, E_arr))


#: How far a popularity vector's sum may stray from 1.
ROUTING_SUM_TOLERANCE = 1e-3


def check_routing(routing, E, k) -> np.ndarray:
    """A routing popularity as a checked vector of E shares summing to 1:
    non-negative, finite, of length E, summing to 1 within
    :data:`ROUTING_SUM_TOLERANCE` (then rescaled to exactly 1), and with no
    expert picked with probability k p_i above 1. Raises ValueError naming
    ``routing`` otherwise."""
    try:
        shares = np.asarray(routing, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"routing must be a vector of {E} expert shares summing to 1; got {routing!r}") from None
    if shares.ndim != 1 or shares.size != E:
        raise ValueError(f"routing must be a vector of {E} expert shares (one per routed expert) summing to 1; "
                         f"got shape {shares.shape}")
    if not np.all(np.isfinite(shares)):
        raise ValueError("routing must hold finite shares; got a NaN or infinite value")
    if np.any(shares < 0):
        raise ValueError(f"routing shares must be non-negative; got {shares.min():g}")
    total = float(shares.sum())
    if abs(total - 1.0) > ROUTING_SUM_TOLERANCE:
        raise ValueError(f"routing shares must sum to 1 (within {ROUTING_SUM_TOLERANCE:g}); got {total:.6g}")
    shares = shares / total
    if k * shares.max() > 1.0 + 1e-12:
        raise ValueError(f"routing: with k = {k} picks per token no share may exceed 1/k = {1 / k:.4g} (a token "
                         f"picks each expert at most once); got {shares.max():.4g}")
    return shares


def skewed_count(tokens, hit) -> np.ndarray:
    """sum_i [1 - (1 - hit_i)^tokens] for checked ``tokens`` (any shape) and
    per-expert pick probabilities ``hit`` (a vector): each distinct token
    count is evaluated once, so a grid of batches x draft lengths stays cheap."""
    tokens = np.asarray(tokens, dtype=float)
    values, inverse = np.unique(tokens, return_inverse=True)
    hit = np.minimum(hit, 1.0)[None, :]
    counts = np.zeros(values.shape)
    for start in range(0, values.size, 4096):
        chunk = values[start:start + 4096, None]
        with np.errstate(divide="ignore"):  # hit == 1: log1p(-1) = -inf and expm1(-inf) = -1, the right limit
            counts[start:start + 4096] = nf.expert_hit_probability(chunk, hit).sum(axis=-1)
    return counts[inverse].reshape(tokens.shape)


def measured_popularity(name="Qwen3.6-35B-A3B") -> np.ndarray:
    """The measured routing popularity shipped with speclib
    (``data/expert-routing/expert_popularity.json``: Qwen3.6-35B-A3B's share of
    routed token-slots per expert, ranked, averaged over its 40 MoE layers,
    from F. Finn's "Adaptive speculative decoding" data), as shares summing
    to 1."""
    data = _routing_data("expert_popularity.json")
    if str(name).strip().lower() != data["model"].lower():
        raise ValueError(f"routing popularity is measured for {data['model']!r} only; got {name!r}")
    shares = np.asarray(data["share_percent"], dtype=float) / 100.0
    return check_routing(shares, shares.size, 1)


def measured_width_depth() -> dict:
    """The measured distinct experts per MoE layer when one verify holds N
    positions (``data/expert-routing/width_vs_depth.json``): ``N``, ``width`` (N
    independent sequences), ``depth`` (N positions of one sequence) and the
    uniform coupon count, as arrays."""
    data = _routing_data("width_vs_depth.json")
    return {"model": data["model"], "N": np.asarray(data["N"], dtype=float),
            "width": np.asarray(data["width_N_independent_sequences"], dtype=float),
            "depth": np.asarray(data["depth_one_sequence_N_positions"], dtype=float),
            "uniform": np.asarray(data["uniform_coupon_collector"], dtype=float)}


def _routing_data(filename: str) -> dict:
    return json.loads(resources.files("speclib").joinpath("data", "expert-routing", filename).read_text(encoding="utf-8"))


def experts_activated_rate(B, k, E):
    """dA/dB: fresh routed experts brought in by one more token at batch ``B``."""
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    k_arr, E_arr = _check_experts(k, E)
    # k == E: every token touches every expert, so no token brings a fresh one;
    # the closed form's log(0) * 0 is that limit.
    full = k_arr == E_arr
    safe_k = k_arr - full  # any value < E; the result is overwritten below
    rate = nf.experts_activated_rate(B_arr, safe_k, E_arr)
    rate = rate * ~full if full.any() else rate
    return scalar_or_array(rate)


def ffn_intensity(B, model=None, hardware=None, *, capped: bool = True):
    """Arithmetic intensity (FLOP/byte) of the model's FFN at ``B`` tokens,
    capped at the ridge of the FFN precision unless ``capped=False``.

    For a MoE model this is the MoE line of the paper's Figure 1; for a dense
    model, the dense line.
    """
    model, hardware = resolve(model, hardware)
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    ffn = model.ffn
    ridge = hardware.gemm_ridge(ffn.precision, model.activations) if capped else float("inf")
    if ffn.is_moe:
        with np.errstate(divide="ignore"):  # k == E: log1p(-1) = -inf, see speclib.formulas.moe.numeric_form
            out = nf.moe_intensity(B_arr, ffn.top_k, ffn.n_routed, ffn.n_shared, ffn.weight_bytes, ridge)
    else:
        out = nf.dense_intensity(B_arr, ffn.weight_bytes, ridge)
    return scalar_or_array(out)


def dense_equivalent_intensity(B, model=None, hardware=None, *, capped: bool = True):
    """Intensity of a dense FFN with the same parameters and weight bytes as the
    model's experts (the paper's comparison line in Figure 1)."""
    model, hardware = resolve(model, hardware)
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    ridge = hardware.gemm_ridge(model.ffn.precision, model.activations) if capped else float("inf")
    return scalar_or_array(nf.dense_intensity(B_arr, model.ffn.weight_bytes, ridge))


def knees(model=None, hardware=None) -> dict:
    """The batch sizes where Figure 1 changes shape.

    ``dense_knee``: the dense line meets the ridge; for a MoE model also
    ``expert_knee`` (E/k, where the coupon count saturates),
    ``moe_ridge_asymptotic`` (the saturated MoE line meets the ridge, closed
    form), ``moe_ridge`` (the exact crossing of the full MoE curve with the
    ridge, by bisection to machine precision: the exact curve lies above the
    saturated line, so it crosses first, inside (0, asymptotic]) and
    ``slope_ratio`` (saturated MoE slope over the dense slope).
    """
    model, hardware = resolve(model, hardware)
    ffn = model.ffn
    ridge = hardware.gemm_ridge(ffn.precision, model.activations)
    dense = float(nf.dense_knee(ffn.weight_bytes, ridge))
    if not ffn.is_moe:
        return {"dense_knee": dense}
    k, E, n_s, b = ffn.top_k, ffn.n_routed, ffn.n_shared, ffn.weight_bytes
    asymptotic = float(nf.moe_ridge_batch(k, E, n_s, b, ridge))
    lo, hi = 0.0, asymptotic
    with np.errstate(divide="ignore"):  # k == E: see speclib.formulas.moe.numeric_form
        while True:
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            if nf.moe_intensity_uncapped(mid, k, E, n_s, b) >= ridge:
                hi = mid
            else:
                lo = mid
    return {
        "expert_knee": float(nf.expert_knee(k, E)),
        "dense_knee": dense,
        "moe_ridge_asymptotic": asymptotic,
        "moe_ridge": hi,
        "slope_ratio": float(nf.moe_slope_ratio(k, E, n_s)),
    }


# --- experts split over GPUs: the most loaded GPU ------------------------------------------

#: Points of the quadrature that takes an expected maximum of normal loads.
_QUADRATURE = 2001


#: Largest array (elements) one quadrature of :func:`max_of_normals` builds at once.
_CHUNK = 4_000_000


def _normal_cdf(z):
    """The standard normal distribution function, elementwise: 1 - Q(z) with
    the complementary error function of Abramowitz and Stegun 7.1.26
    (absolute error below 1.5e-7), in numpy."""
    x = np.abs(z) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erfc = poly * np.exp(-x * x)
    return np.where(z >= 0, 1.0 - 0.5 * erfc, 0.5 * erfc)


@functools.lru_cache(maxsize=None)
def _normal_max_constant(n: int) -> float:
    return float(max_of_normals(np.zeros(n), np.ones(n)))


def normal_max_constant(n: int) -> float:
    """c_n, the expected maximum of ``n`` independent standard normals (0 at
    one; 0.5642 at two, 1.4236 at eight): :func:`max_of_normals` of ``n``
    standard normals."""
    return _normal_max_constant(checked_int("n", n, lo=1))


def max_of_normals(means, sds) -> np.ndarray:
    """The expected maximum of independent normal loads of ``means`` and
    ``sds`` (along the last axis; other axes broadcast), by quadrature of
    E[max] = x0 + int_x0^inf (1 - F) - int_-inf^x0 F, F the product of the
    loads' normal distribution functions."""
    means, sds = np.broadcast_arrays(np.asarray(means, dtype=float), np.asarray(sds, dtype=float))
    if means.ndim > 1 and means.shape[0] * means[0].size * _QUADRATURE > _CHUNK:  # bounded memory, row blocks
        rows = max(1, _CHUNK // (means[0].size * _QUADRATURE))
        return np.concatenate([max_of_normals(means[i:i + rows], sds[i:i + rows])
                               for i in range(0, means.shape[0], rows)])
    Phi = _normal_cdf
    lo = (means - 8.0 * sds).min(axis=-1, keepdims=True)
    hi = (means + 8.0 * sds).max(axis=-1, keepdims=True)
    hi = np.where(hi > lo, hi, lo + 1.0)
    x = lo + (hi - lo) * np.linspace(0.0, 1.0, _QUADRATURE)  # (..., points)
    z = (x[..., None, :] - means[..., :, None]) / np.where(sds > 0, sds, 1.0)[..., :, None]
    cdf = np.where(sds[..., :, None] > 0, Phi(z), (x[..., None, :] >= means[..., :, None]).astype(float))
    F = cdf.prod(axis=-2)
    return lo[..., 0] + np.trapezoid(1.0 - F, x, axis=-1)


def rank_max_load(tokens, k, E, G, routing=None, groups=None) -> tuple:
    """The most loaded of ``G`` GPUs that hold E / G of the routed experts
    each, when ``tokens`` tokens each pick ``k``: (the expected number of its
    experts the tokens touch, never more than E / G, and the expected number
    of token picks it serves over the mean, tokens x k / G). Uniform routing
    (``routing`` None) or a measured popularity (one share per expert, as
    :func:`experts_activated` takes it; the measured shares are ranked, not
    by expert, so they are dealt to the GPUs round-robin, the placement that
    spreads the popular experts). Each GPU's loads are taken as normal about
    their mean (:data:`speclib.formulas.moe.rank_max_expr`); one GPU is the
    whole load, exactly.

    ``groups``: ``(n_group, topk_group)`` of a router that picks a token's
    experts within its top ``topk_group`` of ``n_group`` expert groups
    (DeepSeek-V3/R1: (8, 4)), the groups placed whole on the GPUs in order of
    index (``G`` must divide ``n_group``): a token's picks then bunch on at
    most ``topk_group`` GPUs, and the most loaded GPU is priced by
    :data:`speclib.formulas.moe.group_rank_max_touched_expr` and
    :data:`~speclib.formulas.moe.group_rank_max_picks_expr` (uniform routing
    within the groups; the loads' correlations counted). None or
    ``(1, 1)``: ungrouped."""
    tokens = np.asarray(tokens, dtype=float)
    G = checked_int("G", G, lo=1, hi=E)
    n_group, topk_group = check_groups(groups, k, E)
    if G == 1:
        return experts_activated(tokens, k, E, routing) + 0.0 * tokens, np.ones(tokens.shape)
    if n_group > 1:
        if routing is not None:
            raise ValueError("groups: group-limited routing is priced under uniform routing within the groups; "
                             "give routing=None with groups, or no groups with a measured popularity")
        if n_group % G:
            raise ValueError(f"G must divide the {n_group} expert groups (each GPU holds whole groups) to price "
                             f"group-limited routing; got G={G}")
        c = normal_max_constant(G)
        with np.errstate(invalid="ignore"):
            touched = np.minimum(nf.group_rank_max_touched(tokens, k, E, float(G), n_group, topk_group, c), E / G)
            served = nf.group_rank_max_picks(tokens, k, E, float(G), n_group, topk_group, c) / (tokens * k / G)
        return touched, served
    values, inverse = np.unique(tokens, return_inverse=True)
    if routing is None:
        shares = np.full(E, 1.0 / E)
    else:
        shares = check_routing(routing, E, k)
    blocks = [np.arange(g, E, G) for g in range(G)]
    hit = nf.expert_hit_probability(values[:, None], np.minimum(k * shares, 1.0)[None, :])  # (N, E)
    if routing is None:  # every GPU alike: the closed form
        touched = np.minimum(nf.rank_max_touched(float(E), float(G), hit[:, 0], normal_max_constant(G)), E / G)
    else:
        mean = np.stack([hit[:, b].sum(axis=1) for b in blocks], axis=-1)
        var = np.stack([(hit[:, b] * (1 - hit[:, b])).sum(axis=1) for b in blocks], axis=-1)
        touched = np.minimum(max_of_normals(mean, np.sqrt(var)), max(len(b) for b in blocks))
    picks = values * k
    if routing is None:  # every GPU alike: the closed form
        served = nf.rank_max_picks(picks, float(G), normal_max_constant(G)) / (picks / G)
    else:
        share = np.array([shares[b].sum() for b in blocks])[None, :]
        p = picks[:, None]
        served = max_of_normals(p * share, np.sqrt(p * share * (1 - share))) / (picks / G)
    return touched[inverse].reshape(tokens.shape), served[inverse].reshape(tokens.shape)


def check_groups(groups, k, E) -> tuple:
    """``(n_group, topk_group)`` checked against ``k`` of ``E`` routed
    experts: n_group divides E, topk_group in [1, n_group], and the
    topk_group groups hold at least k experts; None is (1, 1)."""
    if groups is None:
        return 1, 1
    try:
        n_group, topk_group = groups
    except (TypeError, ValueError):
        raise ValueError(f"groups must be (n_group, topk_group) or None; got {groups!r}") from None
    n_group = checked_int("n_group", n_group, lo=1, hi=E)
    topk_group = checked_int("topk_group", topk_group, lo=1, hi=n_group)
    if E % n_group:
        raise ValueError(f"n_group must divide the {E} routed experts; got n_group={n_group}")
    if topk_group * (E // n_group) < k:
        raise ValueError(f"topk_group: {topk_group} groups of {E // n_group} experts hold fewer than the {k} a token "
                         f"picks; topk_group must be at least {-(-k * n_group // E)}")
    if topk_group == n_group:  # every group allowed: ungrouped routing
        return 1, 1
    return n_group, topk_group

