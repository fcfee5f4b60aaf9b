"""How far ahead to speculate: the throughput speedup of a draft length gamma
over plain decoding, and the draft length gamma* that maximises it.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import acceptance as _acc
from ._checks import checked_int, scalar_or_array
from .cost import check_batch, check_context, check_draft_cost, cost_model

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


def _speedup_arrays(alpha_arr, gamma_arr, B_arr, S_arr, c_arr, cm):
    n = _acc.committed_numeric(alpha_arr, gamma_arr)
    c0 = cm.decode(B_arr, S_arr)
    cv = cm.verify(B_arr, gamma_arr + 1.0, S_arr)
    return _speedup_from_parts(n, c0, cv, c_arr, gamma_arr)


def speedup(alpha, gamma, B, S, c_draft=0.1, model=None, hardware=None, *, query_bytes: bool = False):
    """Throughput of speculative decoding with draft length ``gamma`` relative to
    plain decoding, at batch ``B`` sequences and context ``S``; broadcasts.

    ``gamma = 0`` gives exactly 1. ``c_draft`` is the drafter's cost per drafted
    token as a fraction of a plain decode step.
    """
    alpha_arr, gamma_arr = _acc.check_alpha(alpha), _acc.check_gamma(gamma)
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    cm = cost_model(model, hardware, query_bytes)
    return scalar_or_array(_speedup_arrays(alpha_arr, gamma_arr, B_arr, S_arr, c_arr, cm))


def optimal_gamma(alpha, B, S, c_draft=0.1, model=None, hardware=None, gamma_max: int = 64, *, query_bytes: bool = False):
    """The draft length gamma* in {0, ..., gamma_max} with the highest speedup,
    and that speedup; arrays broadcast over ``alpha``, ``B``, ``S``, ``c_draft``.

    gamma* = 0 means plain decoding wins (speedup exactly 1). Ties go to the
    shorter draft.
    """
    alpha_arr = _acc.check_alpha(alpha)
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    gamma_max = checked_int("gamma_max", gamma_max, lo=0, hi=4096)
    cm = cost_model(model, hardware, query_bytes)
    alpha_arr, B_arr, S_arr, c_arr = np.broadcast_arrays(alpha_arr, B_arr, S_arr, c_arr)
    gammas = np.arange(gamma_max + 1, dtype=float).reshape((-1,) + (1,) * alpha_arr.ndim)
    table = _speedup_arrays(alpha_arr, gammas, B_arr, S_arr, c_arr, cm)
    best = np.argmax(table, axis=0)
    best_speedup = np.take_along_axis(table, best[None], axis=0)[0]
    if best.ndim == 0:
        return int(best), float(best_speedup)
    return best, best_speedup
