"""A sympy expression's value at a point, to 50 significant digits, for the tests that hold
speclib's printed functions (numpy, JavaScript) to the expression they are printed from.

The expression is printed for mpmath (sympy's MpmathPrinter) and evaluated in mpmath's arbitrary
precision: a route independent of the printers and of float64 arithmetic that speclib's own
functions take. At 50 digits it gives what ``evalf(30)`` gives on every catalogued formula, two
hundred times faster (one of them, the served attention's cost, took nine seconds to ``evalf``
at five points)."""
from __future__ import annotations

import mpmath
import sympy as sp

DIGITS = 50


def exact(expr, args):
    """A function of floats (in the order of ``args``) returning ``expr``'s value as a float."""
    function = sp.lambdify(args, expr, modules="mpmath")

    def value(*point) -> float:
        with mpmath.workdps(DIGITS):
            return float(function(*(mpmath.mpf(x) for x in point)))

    return value
