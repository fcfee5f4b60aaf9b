"""The MoE roofline: how many experts a batch touches, and what that does to
arithmetic intensity (the paper's "expert tax", its first chart and appendix).
The closed forms are in :mod:`speclib.formulas.moe`.
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_array, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import resolve
from ._symbolic import twin_lookup

__getattr__ = twin_lookup("moe")


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
    with np.errstate(divide="ignore"):  # k == E: log1p(-1) = -inf, see speclib.formulas.moe.numeric_form
        return scalar_or_array(nf.experts_activated(B_arr, k_arr, E_arr))


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
    ridge = hardware.ridge(ffn.precision) if capped else float("inf")
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
    ridge = hardware.ridge(model.ffn.precision) if capped else float("inf")
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
    ridge = hardware.ridge(ffn.precision)
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
