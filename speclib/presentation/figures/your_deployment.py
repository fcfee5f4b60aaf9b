"""What the chapters of part V show: a ``speclib`` command line and what it
printed, as a terminal would, fitted to the book's text column; the scratch
folder of public engine output the commands run in (:class:`speclib.tools.shell.Shell`); and the
public with-and-without-speculation measurement as a table.

The command is broken before its options into shell continuation lines
(``\\`` at the end of a line), so it can be copied as it is; a line of
prose in the output longer than the column is wrapped, and a table's row
(two or more runs of spaces between its cells) is kept whole. In the book
the block scrolls sideways inside its own box where a row is still wider
than the column, its first columns (the keys) in view.
"""
from __future__ import annotations

import html
import json
import re
import textwrap
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

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


#: The public engine output speclib ships (real runs, each with its source beside it).
PUBLIC = Path(str(resources.files("speclib").joinpath("data", "samples", "public")))


def public_sweep() -> dict:
    """The public with-and-without-speculation measurement shipped in :data:`PUBLIC`
    (vLLM pull request #24243): its source and the runs it quoted."""
    return json.loads((PUBLIC / "vllm-pr24243-minicpm3-eagle3-sweep.json").read_text(encoding="utf-8"))


def public_sweep_table():
    """The measurement's complete runs as a table: concurrency, the seconds
    without and with speculation, their ratio as the source printed it, and
    the mean acceptance length; a run cut off in the stored copy is left out."""
    from ..tables import NumberTable

    runs = sorted((r for r in public_sweep()["quoted"] if r["speedup"] is not None), key=lambda r: r["concurrency"])
    rows = tuple((r["concurrency"], r["samples"], r["baseline_seconds"], r["speculative_seconds"], r["speedup"],
                  r["mean_acceptance_length"]) for r in runs)
    return NumberTable(("concurrency", "samples", "without (s)", "with (s)", "speed-up", "mean acceptance length"),
                       rows, formats=("", "", ".2f", ".2f", ".2f", ".2f"),
                       caption="MiniCPM3 with EAGLE-3 on one RTX 4090, measured: seconds to finish a fixed set "
                               "of samples with and without speculation, as vLLM pull request #24243 printed them")


#: How each few-shot predictor is named in the table, by plan (the baseline from the fitted runs
#: nearest a point is the last one carried forward when the smallest are fitted).
FEW_SHOT_NAMES = {"smallest": {"fitted": "speclib fit", "carried": "last speed-up carried forward",
                               "loglinear": "log-linear"},
                  "spread": {"fitted": "speclib fit", "carried": "nearest run's speed-up", "loglinear": "log-linear"}}
#: The fits the table shows: (concurrencies fitted, the fewest a sweep needs to be shown, plan).
FEW_SHOT_FITS = ((3, 5, "smallest"), (2, 3, "smallest"), (3, 5, "spread"), (2, 3, "spread"))


def few_shot_table():
    """``speclib fit`` on a sweep's smallest concurrencies against the rest
    (:func:`speclib.calibration.few_shot.summary`): per family of sweeps and
    fit, the median |error| on the speed-up and on TPOT, and the share of
    on/off decisions right, for the fit and for the two baselines."""
    from speclib.calibration import few_shot
    from ..tables import NumberTable

    rows = []
    for n_fit, least, plan in FEW_SHOT_FITS:
        for fam, row in few_shot.summary(n_fit, min_points=least, plan=plan).items():
            if not row["sweeps"]:
                continue
            for pred in few_shot.PREDICTORS:
                r = row[pred]
                rows.append((fam, f"{n_fit} {plan}", row["sweeps"], row["points"], FEW_SHOT_NAMES[plan][pred],
                             100 * r["speedup"], 100 * r["tpot"], 100 * r["decision"]))
    return NumberTable(("family", "fitted on", "sweeps", "points predicted", "predictor", "speed-up error (%)",
                        "TPOT error (%)", "on/off right (%)"), tuple(rows),
                       formats=("", "", "", "", "", ".1f", ".1f", ".0f"), align="llrrl",
                       caption="The calibrated step fitted on a sweep's smallest concurrencies, or on three spread over "
                               "it (smallest, middle, largest), priced at the rest: median |error| "
                               "over the points predicted (TPOT: both arms), beside the two baselines on the same "
                               "points (speclib.calibration.few_shot)")
