"""Small display helpers for the chapters: equations rendered from speclib's
sympy objects, and tables of computed numbers with an HTML and a plain-text
form (both deterministic, for ``pytest --nbval``)."""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
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


def number(value) -> str:
    """Whole numbers with thousands separators, others to four significant
    figures (so float noise never reaches the text)."""
    v = float(value)
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1e4:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def _cell(value, fmt):
    if isinstance(value, str):
        return value
    if value is None:
        return "\u2014"
    if callable(fmt):
        return fmt(value)
    if fmt == "":
        return number(value)
    return format(value, fmt)


@dataclass(frozen=True)
class NumberTable:
    """A small table of computed values: ``columns`` are headers, ``rows``
    tuples of values, ``formats`` one format spec (or callable) per column."""

    columns: tuple
    rows: tuple
    formats: tuple = ()
    caption: str = ""

    def _text_rows(self):
        formats = tuple(self.formats) + ("",) * (len(self.columns) - len(self.formats))
        return [[_cell(v, f) for v, f in zip(row, formats)] for row in self.rows]

    def _repr_html_(self) -> str:
        head = "".join(f'<th style="text-align:right">{html.escape(str(c))}</th>' for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f'<td style="text-align:right">{html.escape(c)}</td>' for c in row) + "</tr>"
            for row in self._text_rows()
        )
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return f'<table class="speclib-number-table">{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    def __repr__(self) -> str:
        rows = self._text_rows()
        widths = [max(len(str(c)), *(len(r[i]) for r in rows)) if rows else len(str(c))
                  for i, c in enumerate(self.columns)]
        lines = [self.caption] if self.caption else []
        lines.append("  ".join(f"{str(c):>{w}}" for c, w in zip(self.columns, widths)))
        lines += ["  ".join(f"{v:>{w}}" for v, w in zip(r, widths)) for r in rows]
        return "\n".join(line.rstrip() for line in lines)


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
