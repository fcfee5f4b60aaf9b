"""How far ahead to speculate: the throughput speedup of a draft length gamma
over plain decoding, and the draft length gamma* that maximises it.

Acceptance is either i.i.d. (``alpha`` a number or an array of numbers) or a
measured per-position survival curve (``alpha`` a
:class:`speclib.acceptance.SurvivalCurve`). The step costs come from the
single-GPU :class:`speclib.cost.CostModel` of ``model`` on ``hardware``, or
from any cost model passed as ``cost_model=`` (for example
:func:`speclib.parallel.expert_parallel_cost_model`).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import acceptance as _acc
from ._checks import checked_int, scalar_or_array
from . import cost as _cost
from .cost import check_batch, check_context, check_draft_cost
from .tables import NumberTable, RendersAsTable

alpha, gamma = _acc.alpha, _acc.gamma
N = sp.Symbol("N", positive=True)  # expected committed tokens per verify pass
C_0 = sp.Symbol("C_0", positive=True)  # plain decode step cost
C_v = sp.Symbol("C_v", positive=True)  # verify step cost at width gamma + 1
c = sp.Symbol("c", nonnegative=True)  # drafter cost per drafted token, x C_0

#: Tokens per unit cost with speculation over tokens per unit cost without:
#: one verify pass commits N tokens for C_v plus gamma drafter steps, while
#: plain decoding commits one token per C_0.
speedup_expr = N * C_0 / (C_v + c * gamma * C_0)

#: The same with N written out (the general branch, alpha != 1).
speedup_closed_form = speedup_expr.subs(N, _acc.expected_committed_closed_form)

_speedup_from_parts = sp.lambdify((N, C_0, C_v, c, gamma), speedup_expr, "numpy")


def _speedup_from_committed(n, gamma_arr, B_arr, S_arr, c_arr, cm):
    c0 = cm.decode(B_arr, S_arr)
    cv = cm.verify(B_arr, gamma_arr + 1.0, S_arr)
    return _speedup_from_parts(n, c0, cv, c_arr, gamma_arr)


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


# --- measured survival curves against the i.i.d. model ------------------------------


class SurvivalComparison(RendersAsTable):
    """gamma* and the best speedup under each measured survival curve against
    the i.i.d. curve of the same first-position acceptance (searched over the
    same draft lengths), across a grid of batches."""

    def __init__(self, rows, batches, S, c_draft, model_name, hardware_name):
        self.rows = rows
        self.batches = batches
        self.S, self.c_draft = S, c_draft
        self.model_name, self.hardware_name = model_name, hardware_name

    def _caption(self) -> str:
        return (f"Measured survival curve against i.i.d. acceptance with the same alpha = survival(1): "
                f"{self.model_name} on {self.hardware_name}, S = {self.S:,.0f}, drafter {self.c_draft:.0%} of a step, "
                f"{len(self.batches)} batches from {self.batches[0]:,.0f} to {self.batches[-1]:,.0f}. "
                f"Shortfall: 1 - measured best speedup / i.i.d. best speedup.")

    _HEAD = ("drafter", "alpha", "positions", "gamma* differs", "largest |diff|", "longer", "shorter",
             "largest shortfall", "at batch", "gamma* there (measured / i.i.d.)")

    def _cells(self, r):
        return (r["name"], f"{r['alpha']:.3f}", str(r["length"]), f"{r['differs']} of {len(self.batches)}",
                str(r["max_diff"]), str(r["longer"]), str(r["shorter"]), f"{r['shortfall']:.1%}",
                f"{r['at_batch']:,.0f}", f"{r['gamma_measured']} / {r['gamma_iid']}")

    def as_table(self) -> NumberTable:
        return NumberTable(self._HEAD, tuple(self._cells(r) for r in self.rows), caption=self._caption(),
                           css_class="speclib-survival-comparison", align="l")


def compare_survival(curves=None, B=None, S=4096, c_draft=0.1, model=None, hardware=None, *, query_bytes=False):
    """:class:`SurvivalComparison` of each curve in ``curves`` (default: the
    shipped MTP and DFlash curves) with its i.i.d. counterpart over the batches
    ``B`` (default: 600 whole-sequence batches from 1 to 30,000)."""
    from .presets import resolve

    curves = _acc.load_survival_curves() if curves is None else {k: _acc.as_survival_curve(v)
                                                                 for k, v in dict(curves).items()}
    if B is None:
        B = np.unique(np.round(np.geomspace(1, 30_000, 600)))
    B = check_batch(B).ravel()
    m, h = resolve(model, hardware)
    rows = []
    for curve in curves.values():
        g_m, s_m = optimal_gamma(curve, B, S, c_draft, m, h, query_bytes=query_bytes)
        g_i, s_i = optimal_gamma(curve.iid(), B, S, c_draft, m, h, query_bytes=query_bytes)
        shortfall = 1 - s_m / s_i
        worst = int(np.argmax(shortfall))
        diff = g_m - g_i
        rows.append(dict(name=curve.name, alpha=curve.first_position_acceptance, length=len(curve),
                         differs=int(np.count_nonzero(diff)), max_diff=int(np.max(np.abs(diff))),
                         longer=int(np.count_nonzero(diff > 0)), shorter=int(np.count_nonzero(diff < 0)),
                         shortfall=float(shortfall[worst]), at_batch=float(B[worst]),
                         gamma_measured=int(g_m[worst]), gamma_iid=int(g_i[worst])))
    return SurvivalComparison(rows, B, float(S), float(c_draft), m.name, h.name)
