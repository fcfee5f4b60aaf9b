"""Display maths for the chapters, rendered from speclib's sympy objects."""
from __future__ import annotations

import sympy as sp


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
