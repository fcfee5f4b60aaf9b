"""The MoE roofline: how many experts a batch touches, and what that does to
arithmetic intensity (the paper's "expert tax", its first chart and appendix).

Each closed form is a sympy expression written once here; the numpy functions
are generated from them at import with ``lambdify``.
"""
from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from ._checks import checked_array, scalar_or_array

# B is a token count: the batch of a plain decode step, or batch x verify width.
B = sp.Symbol("B", positive=True)
k = sp.Symbol("k", positive=True)  # routed experts picked per token
E = sp.Symbol("E", positive=True)  # routed experts in the layer
n_s = sp.Symbol("n_s", nonnegative=True)  # always-on shared experts
b = sp.Symbol("b", positive=True)  # bytes per expert parameter
R = sp.Symbol("R", positive=True)  # ridge point of the expert GEMM precision, FLOP/byte

#: Coupon-collector (occupancy) expectation: a token misses a given expert with
#: probability 1 - k/E, all B tokens miss it with (1 - k/E)^B.
experts_activated_expr = E * (1 - (1 - k / E) ** B)

#: Fresh experts brought in per extra token, written in the paper's form.
#: ``tests`` check it is dA/dB; it is not obtained by differentiating here so
#: that the check means something.
experts_activated_rate_expr = -E * sp.log(1 - k / E) * (1 - k / E) ** B

#: Intensity of a dense FFN holding the same parameters: 2 FLOP per weight per
#: token, weights read once, b bytes each.
dense_intensity_uncapped_expr = 2 * B / b

#: MoE intensity: each token applies k routed + n_s shared experts (compute),
#: while the bytes are those of the distinct routed experts touched plus the
#: shared ones.
moe_intensity_uncapped_expr = 2 * B * (k + n_s) / (b * (experts_activated_expr + n_s))

dense_intensity_expr = sp.Min(dense_intensity_uncapped_expr, R)
moe_intensity_expr = sp.Min(moe_intensity_uncapped_expr, R)

#: Batch at which the dense line meets the ridge.
dense_knee_expr = sp.solve(sp.Eq(dense_intensity_uncapped_expr, R), B)[0]

#: Far-out MoE line (every expert resident, A = E) and where it meets the ridge.
moe_saturated_intensity_expr = moe_intensity_uncapped_expr.subs(experts_activated_expr, E)
moe_ridge_batch_expr = sp.solve(sp.Eq(moe_saturated_intensity_expr, R), B)[0]

#: Ratio of the saturated MoE slope to the dense slope: (k + n_s)/(E + n_s).
moe_slope_ratio_expr = sp.simplify(
    sp.diff(moe_saturated_intensity_expr, B) / sp.diff(dense_intensity_uncapped_expr, B)
)

#: The knee of the coupon count: where B*k reaches E.
expert_knee_expr = E / k

#: Probability that one token misses a given routed expert.
miss_probability_expr = 1 - k / E


def numeric_form(expr):
    """``expr`` with the coupon-collector terms rewritten for floating point,
    for ``lambdify`` only (the sympy expressions above stay as written):

    1 - (1 - k/E)**x  ->  -expm1(x*log1p(-k/E))
        (1 - k/E)**x  ->  exp(x*log1p(-k/E))
        log(1 - k/E)  ->  log1p(-k/E)

    The same functions (the tests check it); but 1 - (1 - k/E)**B cancels to a
    few digits at a tiny batch, and numpy's float power is several times slower
    than exp/expm1, which made it most of ``optimal_gamma``'s run time.
    At k = E, log1p(-1) = -inf gives the right limits (expm1(-inf) = -1) but
    numpy warns: callers silence ``divide`` or avoid k = E.
    """
    log_miss = log1p(-k / E)

    def is_miss_power(e):
        return e.is_Pow and e.base == miss_probability_expr

    def is_complement(e):  # 1 - miss**x
        return (
            e.is_Add
            and len(e.args) == 2
            and sp.S.One in e.args
            and any(is_miss_power(-a) for a in e.args if a != 1)
        )

    def complement(e):
        power = next(-a for a in e.args if a != 1)
        return -expm1(power.exp * log_miss)

    expr = expr.replace(is_complement, complement)
    expr = expr.replace(is_miss_power, lambda e: sp.exp(e.exp * log_miss))
    return expr.replace(lambda e: isinstance(e, sp.log) and e.args[0] == miss_probability_expr, lambda e: log_miss)


_experts_activated = sp.lambdify((B, k, E), numeric_form(experts_activated_expr), "numpy")
_experts_activated_rate = sp.lambdify((B, k, E), numeric_form(experts_activated_rate_expr), "numpy")
_dense_intensity = sp.lambdify((B, b, R), dense_intensity_expr, "numpy")
_moe_intensity = sp.lambdify((B, k, E, n_s, b, R), numeric_form(moe_intensity_expr), "numpy")


def _check_experts(k_value, E_value):
    E_arr = checked_array("E", E_value, lo=1, integer=True)
    k_arr = checked_array("k", k_value, lo=1, integer=True)
    if (k_arr > E_arr).any():
        raise ValueError("k must be in [1, E] (experts picked per token cannot exceed experts available)")
    return k_arr, E_arr


def experts_activated(B, k, E):
    """Expected number of distinct routed experts touched by ``B`` tokens,
    each picking ``k`` distinct experts of ``E`` uniformly at random.

    ``B`` may be any positive real (a fractional batch is the smooth
    interpolation the roofline uses); arrays broadcast.
    """
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    k_arr, E_arr = _check_experts(k, E)
    with np.errstate(divide="ignore"):  # k == E: log1p(-1) = -inf, see numeric_form
        return scalar_or_array(_experts_activated(B_arr, k_arr, E_arr))


def experts_activated_rate(B, k, E):
    """dA/dB: fresh routed experts brought in by one more token at batch ``B``."""
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    k_arr, E_arr = _check_experts(k, E)
    # k == E: every token touches every expert, so no token brings a fresh one;
    # the closed form's log(0) * 0 is that limit.
    full = k_arr == E_arr
    safe_k = k_arr - full  # any value < E; the result is overwritten below
    rate = _experts_activated_rate(B_arr, safe_k, E_arr)
    rate = rate * ~full if full.any() else rate
    return scalar_or_array(rate)


def ffn_intensity(B, model=None, hardware=None, *, capped: bool = True):
    """Arithmetic intensity (FLOP/byte) of the model's FFN at ``B`` tokens,
    capped at the ridge of the FFN precision unless ``capped=False``.

    For a MoE model this is the MoE line of the paper's Figure 1; for a dense
    model, the dense line.
    """
    from .presets import resolve

    model, hardware = resolve(model, hardware)
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    ffn = model.ffn
    ridge = hardware.ridge(ffn.precision) if capped else float("inf")
    if ffn.is_moe:
        with np.errstate(divide="ignore"):  # k == E: log1p(-1) = -inf, see numeric_form
            out = _moe_intensity(B_arr, ffn.top_k, ffn.n_routed, ffn.n_shared, ffn.weight_bytes, ridge)
    else:
        out = _dense_intensity(B_arr, ffn.weight_bytes, ridge)
    return scalar_or_array(out)


def dense_equivalent_intensity(B, model=None, hardware=None, *, capped: bool = True):
    """Intensity of a dense FFN with the same parameters and weight bytes as the
    model's experts (the paper's comparison line in Figure 1)."""
    from .presets import resolve

    model, hardware = resolve(model, hardware)
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    ridge = hardware.ridge(model.ffn.precision) if capped else float("inf")
    return scalar_or_array(_dense_intensity(B_arr, model.ffn.weight_bytes, ridge))


def knees(model=None, hardware=None) -> dict:
    """The batch sizes where Figure 1 changes shape, for a MoE model.

    ``expert_knee``: E/k, where the coupon count saturates; ``dense_knee``: the
    dense line meets the ridge; ``moe_ridge_asymptotic``: the saturated MoE line
    meets the ridge (closed form); ``moe_ridge``: the exact crossing of the full
    MoE curve with the ridge, solved numerically.
    """
    from .presets import resolve

    model, hardware = resolve(model, hardware)
    ffn = model.ffn
    ridge = hardware.ridge(ffn.precision)
    dense = float(dense_knee_expr.subs({b: ffn.weight_bytes, R: ridge}))
    if not ffn.is_moe:
        return {"dense_knee": dense}
    values = {k: ffn.top_k, E: ffn.n_routed, n_s: ffn.n_shared, b: ffn.weight_bytes, R: ridge}
    asymptotic = float(moe_ridge_batch_expr.subs(values))
    exact = float(
        sp.nsolve(
            (moe_intensity_uncapped_expr - R).subs(values),
            B,
            asymptotic,
        )
    )
    return {
        "expert_knee": float(expert_knee_expr.subs(values)),
        "dense_knee": dense,
        "moe_ridge_asymptotic": asymptotic,
        "moe_ridge": exact,
        "slope_ratio": float(moe_slope_ratio_expr.subs(values)),
    }
