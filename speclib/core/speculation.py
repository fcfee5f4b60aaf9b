"""How far ahead to speculate: the throughput speedup of a draft length gamma
over plain decoding, and the draft length gamma* that maximises it.

Acceptance is either i.i.d. (``alpha`` a number or an array of numbers) or a
measured per-position survival curve (``alpha`` a
:class:`speclib.acceptance.SurvivalCurve`). The step costs come from the
single-GPU :class:`speclib.cost.CostModel` of ``model`` on ``hardware``, or
from any cost model passed as ``cost_model=`` (for example
:func:`speclib.parallel.expert_parallel_cost_model`). The speedup's closed form
is in :mod:`speclib.formulas.speculation`.
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from . import acceptance as _acc
from . import cost as _cost
from ._symbolic import twin_lookup
from .cost import check_batch, check_context, check_draft_cost

__getattr__ = twin_lookup("speculation")


def _speedup_from_committed(n, gamma_arr, B_arr, S_arr, c_arr, cm):
    c0 = cm.decode(B_arr, S_arr)
    cv = cm.verify(B_arr, gamma_arr + 1.0, S_arr)
    return nf.speedup(n, c0, cv, c_arr, gamma_arr)


def _speedup_arrays(alpha_arr, gamma_arr, B_arr, S_arr, c_arr, cm):
    return _speedup_from_committed(_acc.committed_numeric(alpha_arr, gamma_arr), gamma_arr, B_arr, S_arr, c_arr, cm)


def _resolve_cost_model(model, hardware, query_bytes, cost_model):
    if cost_model is None:
        return _cost.cost_model(model, hardware, query_bytes)
    if model is not None or hardware is not None:
        raise ValueError("give either cost_model or model/hardware, not both (cost_model already fixes the model and chip)")
    if not all(hasattr(cost_model, m) for m in ("decode", "verify")):
        raise ValueError(f"cost_model must have decode(B, S) and verify(B, width, S) methods; got {cost_model!r}")
    return cost_model


def speedup(alpha, gamma, B, S, c_draft=0.1, model=None, hardware=None, *, query_bytes: bool = False,
            cost_model=None):
    """Throughput of speculative decoding with draft length ``gamma`` relative to
    plain decoding, at batch ``B`` sequences and context ``S``; broadcasts.

    ``alpha``: the i.i.d. acceptance (a number or array), or a
    :class:`~speclib.acceptance.SurvivalCurve` for depth-dependent acceptance
    (``gamma`` then at most the curve's length). ``gamma = 0`` gives exactly 1.
    ``c_draft`` is the drafter's cost per drafted token as a fraction of a
    plain decode step. ``cost_model`` replaces the single-GPU model of
    ``model`` on ``hardware``.
    """
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    cm = _resolve_cost_model(model, hardware, query_bytes, cost_model)
    if isinstance(alpha, _acc.SurvivalCurve):
        gamma_arr = _acc.check_gamma_for_curve(gamma, alpha)
        n = _acc.committed_from_curve(alpha, gamma_arr)
        return scalar_or_array(_speedup_from_committed(n, gamma_arr, B_arr, S_arr, c_arr, cm))
    alpha_arr, gamma_arr = _acc.check_alpha(alpha), _acc.check_gamma(gamma)
    return scalar_or_array(_speedup_arrays(alpha_arr, gamma_arr, B_arr, S_arr, c_arr, cm))


def optimal_gamma(alpha, B, S, c_draft=0.1, model=None, hardware=None, gamma_max: int = 64, *,
                  query_bytes: bool = False, cost_model=None):
    """The draft length gamma* in {0, ..., gamma_max} with the highest speedup,
    and that speedup; arrays broadcast over ``alpha``, ``B``, ``S``, ``c_draft``.

    ``alpha`` may be a :class:`~speclib.acceptance.SurvivalCurve` instead of
    an i.i.d. acceptance; the search then stops at the curve's length (no
    survival is known past it): gamma in {0, ..., min(gamma_max, len(curve))}.
    gamma* = 0 means plain decoding wins (speedup exactly 1). Ties go to the
    shorter draft. ``cost_model`` replaces the single-GPU model of ``model``
    on ``hardware``.
    """
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    gamma_max = checked_int("gamma_max", gamma_max, lo=0, hi=4096)
    cm = _resolve_cost_model(model, hardware, query_bytes, cost_model)
    if isinstance(alpha, _acc.SurvivalCurve):
        B_arr, S_arr, c_arr = np.broadcast_arrays(B_arr, S_arr, c_arr)
        gamma_top = min(gamma_max, len(alpha))
        gammas = np.arange(gamma_top + 1, dtype=float).reshape((-1,) + (1,) * B_arr.ndim)
        n = _acc.committed_from_curve(alpha, gammas)
        table = _speedup_from_committed(n, gammas, B_arr, S_arr, c_arr, cm)
    else:
        alpha_arr = _acc.check_alpha(alpha)
        alpha_arr, B_arr, S_arr, c_arr = np.broadcast_arrays(alpha_arr, B_arr, S_arr, c_arr)
        gammas = np.arange(gamma_max + 1, dtype=float).reshape((-1,) + (1,) * alpha_arr.ndim)
        table = _speedup_arrays(alpha_arr, gammas, B_arr, S_arr, c_arr, cm)
    best = np.argmax(table, axis=0)
    best_speedup = np.take_along_axis(table, best[None], axis=0)[0]
    if best.ndim == 0:
        return int(best), float(best_speedup)
    return best, best_speedup
