"""How many tokens one verify pass commits: the accepted draft prefix plus the
target's own bonus token, under i.i.d. acceptance alpha per draft token.
"""
from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import expm1

from ._checks import checked_array, scalar_or_array

alpha = sp.Symbol("alpha", nonnegative=True)
gamma = sp.Symbol("gamma", integer=True, nonnegative=True)
_d = sp.Symbol("d", integer=True, nonnegative=True)

#: Draft position d (0-based; d = 0 is the bonus token) is committed when the d
#: drafts before it are all accepted, with probability alpha**d. sympy sums the
#: geometric series itself, returning the alpha = 1 branch (gamma + 1) exactly.
expected_committed_expr = sp.summation(alpha**_d, (_d, 0, gamma))

#: The alpha != 1 branch, (1 - alpha**(gamma+1)) / (1 - alpha).
expected_committed_closed_form = next(
    expr for expr, cond in expected_committed_expr.args if cond is sp.true
)

#: The same branch written with expm1 so that alpha a hair below 1 does not
#: lose digits to 1 - alpha**(gamma+1); the tests check it equals the closed form.
#: The denominator is kept unevaluated (sympy would turn it into alpha - 1) so
#: that gamma = 0 gives exactly x/x = 1 in floating point.
expected_committed_stable_expr = expm1((gamma + 1) * sp.log(alpha)) / expm1(sp.log(alpha), evaluate=False)

_N_stable = sp.lambdify((alpha, gamma), expected_committed_stable_expr, "numpy")
_N_at_one = sp.lambdify(gamma, expected_committed_expr.args[0][0], "numpy")


def committed_numeric(alpha_arr: np.ndarray, gamma_arr: np.ndarray) -> np.ndarray:
    """N(alpha, gamma) for already-checked arrays (no validation)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        general = _N_stable(alpha_arr, gamma_arr)
    return np.where(alpha_arr == 1, _N_at_one(gamma_arr) + 0 * alpha_arr, general)


def check_alpha(alpha_value) -> np.ndarray:
    return checked_array("alpha", alpha_value, lo=0, hi=1)


def check_gamma(gamma_value) -> np.ndarray:
    return checked_array("gamma", gamma_value, lo=0, integer=True)


def expected_committed(alpha, gamma):
    """Expected tokens committed by one verify pass with draft length ``gamma``
    and i.i.d. acceptance ``alpha``: (1 - alpha^(gamma+1)) / (1 - alpha), and
    exactly gamma + 1 at alpha = 1. Broadcasts over arrays."""
    return scalar_or_array(committed_numeric(check_alpha(alpha), check_gamma(gamma)))
