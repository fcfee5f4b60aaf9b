"""Tables of computed values, shown two ways: HTML for the book and aligned
plain text for a terminal and for a notebook's stored ``text/plain`` output.

Both forms are deterministic (``pytest --nbval`` compares them between runs),
and this module imports neither matplotlib nor IPython, so the maths modules
can render their tables without pulling in the plotting stack. Every table of
the library goes through :class:`NumberTable`.
"""
from __future__ import annotations

import html
from dataclasses import dataclass


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


_CSS_ALIGN = {"l": "left", "r": "right"}


@dataclass(frozen=True)
class NumberTable:
    """A small table of computed values: ``columns`` are headers, ``rows``
    tuples of values, ``formats`` one format spec (or callable) per column
    (missing ones: :func:`number`); strings are shown as they are and None
    as a dash. ``align`` holds one ``"l"`` or ``"r"`` per column (missing
    ones: right); ``css_class`` adds a class of its own to the HTML table's
    ``speclib-number-table`` (its padding and type) for styling. ``held``:
    the operating points it prints, which a test holds against what each
    deployment's memory holds."""

    columns: tuple
    rows: tuple
    formats: tuple = ()
    caption: str = ""
    css_class: str = ""
    align: str = ""
    #: the operating points the table prints, for the memory check
    #: (:func:`speclib.presentation.figures.common.held_point`): (deployment,
    #: context, batch, draft length, whether the table marks it as not held)
    held: tuple = ()

    def __post_init__(self):
        if len(self.align) > len(self.columns) or set(self.align) - set(_CSS_ALIGN):
            raise ValueError(f"align must be at most {len(self.columns)} characters, each 'l' or 'r'; "
                             f"got {self.align!r}")

    def _alignments(self) -> str:
        return self.align + "r" * (len(self.columns) - len(self.align))

    def _text_rows(self):
        formats = tuple(self.formats) + ("",) * (len(self.columns) - len(self.formats))
        return [[_cell(v, f) for v, f in zip(row, formats)] for row in self.rows]

    def _repr_html_(self) -> str:
        styles = [f' style="text-align:{_CSS_ALIGN[a]}"' for a in self._alignments()]
        head = "".join(f"<th{s}>{html.escape(str(c))}</th>" for c, s in zip(self.columns, styles))
        body = "".join(
            "<tr>" + "".join(f"<td{s}>{html.escape(c)}</td>" for c, s in zip(row, styles)) + "</tr>"
            for row in self._text_rows()
        )
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        classes = " ".join(("speclib-number-table", *self.css_class.split()))
        return (f'<table class="{html.escape(classes)}">{caption}'
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def __repr__(self) -> str:
        rows = self._text_rows()
        widths = [max(len(str(c)), *(len(r[i]) for r in rows)) if rows else len(str(c))
                  for i, c in enumerate(self.columns)]
        sides = [">" if a == "r" else "<" for a in self._alignments()]
        lines = [self.caption] if self.caption else []
        lines.append("  ".join(f"{str(c):{s}{w}}" for c, s, w in zip(self.columns, sides, widths)))
        lines += ["  ".join(f"{v:{s}{w}}" for v, s, w in zip(r, sides, widths)) for r in rows]
        return "\n".join(line.rstrip() for line in lines)


__all__ = ["NumberTable", "number"]
