"""Small display helpers for the chapters: equations rendered from speclib's
sympy objects, where a curve crosses a ridge, and (re-exported from
:mod:`speclib.tables`) tables of computed numbers with an HTML and a
plain-text form (both deterministic, for ``pytest --nbval``)."""
from __future__ import annotations

import numpy as np
import sympy as sp

# the table renderer lives in the matplotlib-free speclib.tables; re-exported
# here so chapters keep importing it from speclib.figures
from ..tables import NumberTable, _cell, number  # noqa: F401


def _latex(obj) -> str:
    return obj if isinstance(obj, str) else sp.latex(obj)


def equation(lhs, rhs=None, *more):
    """``lhs = rhs [= more...]`` as display maths; each side is a sympy object
    (rendered with ``sympy.latex``) or a LaTeX string naming a quantity,
    such as ``"A(B)"``. With one argument, the expression alone."""
    from IPython.display import Math

    sides = [lhs] + ([] if rhs is None else [rhs, *more])
    return Math(" = ".join(_latex(s) for s in sides))


def equations(*rows):
    """Several aligned equations, one per ``(lhs, rhs, ...)`` tuple."""
    from IPython.display import Math

    lines = []
    for row in rows:
        first, *rest = row
        lines.append(_latex(first) + " &= " + " = ".join(_latex(s) for s in rest))
    return Math("\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}")


def ridge_crossing(x, y, ridge):
    """The first ``x`` at which the increasing curve ``y(x)`` reaches ``ridge``,
    interpolated linearly in log x between the grid points around it; None
    if it never does, ``x[0]`` if it starts above."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    above = np.flatnonzero(y >= ridge)
    if above.size == 0:
        return None
    i = int(above[0])
    if i == 0:
        return float(x[0])
    frac = (ridge - y[i - 1]) / (y[i] - y[i - 1])
    return float(np.exp(np.log(x[i - 1]) + frac * (np.log(x[i]) - np.log(x[i - 1]))))
