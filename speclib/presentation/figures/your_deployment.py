"""What the chapter "Your own deployment, end to end" shows: a ``speclib``
command line and what it printed, as a terminal would, fitted to the book's
text column.

The command is broken before its options into shell continuation lines
(``\\`` at the end of a line), so it can be copied as it is; a line of
prose in the output longer than the column is wrapped, and a table's row
(two or more runs of spaces between its cells) is kept whole. In the book
the block scrolls sideways inside its own box where a row is still wider
than the column, its first columns (the keys) in view.
"""
from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass

#: Characters of monospaced text the book's column shows (as speclib schedule's text).
WIDTH = 76
_COLUMNS = re.compile(r"\S {2,}\S")


def command_lines(line: str, width: int = WIDTH) -> list:
    """``$ line``, broken before an option (a word starting ``--``, with the
    words after it up to the next option) where the line would pass
    ``width``; every line but the last ends in `` \\``."""
    groups = []
    for word in line.split(" "):
        if word.startswith("--") or not groups:
            groups.append(word)
        else:
            groups[-1] += " " + word
    lines, current = [], "$ " + groups[0]
    for group in groups[1:]:
        if len(current) + 1 + len(group) + 2 > width:
            lines.append(current + " \\")
            current = "    " + group
        else:
            current += " " + group
    return lines + [current]


def is_table_row(line: str) -> bool:
    """Whether ``line`` is a row of a table: two or more runs of spaces between words."""
    return len(_COLUMNS.findall(line.strip())) >= 2


def output_lines(printed: str, width: int = WIDTH) -> list:
    """The lines of ``printed``, each line of prose longer than ``width``
    wrapped (its continuation indented two more spaces), a table's rows kept whole."""
    out = []
    for line in printed.rstrip("\n").splitlines():
        body = line.lstrip(" ")
        indent = line[:len(line) - len(body)]
        if len(line) <= width or is_table_row(line):
            out.append(line)
        else:
            out += textwrap.wrap(body, width, initial_indent=indent, subsequent_indent=indent + "  ",
                                 break_long_words=False, break_on_hyphens=False)
    return out


@dataclass(frozen=True)
class Terminal:
    """A command line and what it printed, shown as a terminal would: plain
    text in a kernel's text output, a ``<pre>`` block in HTML."""

    line: str
    printed: str
    width: int = WIDTH

    def text(self) -> str:
        return "\n".join(command_lines(self.line, self.width) + output_lines(self.printed, self.width))

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        # A table row is kept whole, so a line may be wider than the wrap width: the text is scaled so
        # the widest line fits the column (a monospace character is 0.6 em wide, 0.62 with a margin;
        # the pre's padding and border take about 3 em), never above the theme's size nor below 7 px
        # (a phone's column scrolls).
        text = self.text()
        widest = max(len(line) for line in text.splitlines())
        size = f"max(7px, min(0.875em, calc(100cqw / {0.62 * widest + 3:.1f})))"
        return (f'<div class="speclib-terminal-box" style="container-type: inline-size">'
                f'<pre class="speclib-terminal" style="font-size: {size}">{html.escape(text)}</pre></div>')
