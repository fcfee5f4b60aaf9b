"""Tables that summarise what the model says, for the book's chapters beyond
the paper: committed tokens and gamma* under measured survival curves, expert
parallelism per GPU count, the roofline against measured decoding, and the
closed form against the sequel's simulated serving grid. Each is
computed by :mod:`speclib.core` or :mod:`speclib.evidence` and shown as a
:class:`~speclib.presentation.tables.NumberTable` (HTML and text).
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_choice
from ..evidence import sequel as _sequel
from .tables import NumberTable, RendersAsTable


# --- the closed form against the sequel's simulator (chapter: the draft length per concurrency) ---


def _drafter_label(key) -> str:
    return {"mtp": "MTP", "dflash": "DFlash"}.get(key, key)


class SequelComparisonTable(RendersAsTable):
    """One drafter's simulated grid against the closed form, a row per
    concurrency: the best fixed gamma each finds and the priced policy's
    gamma*, the simulated throughput there and our error, the worst error
    over every gamma, and the policy's shortfall against the best fixed
    gamma next to the simulator's own policy's."""

    _HEAD = ("C", "best \u03b3: simulator / ours / policy", "simulated tok/s", "error", "largest |error|",
             "shortfall: ours", "shortfall: simulator's")

    def __init__(self, key: str, comparison: _sequel.DrafterComparison, concurrency):
        self.key, self.comparison, self.concurrency = key, comparison, np.asarray(concurrency)

    def summary(self) -> dict:
        """The numbers of the caption: median and max |error| over the
        whole grid, how many concurrencies agree on the best gamma, and the
        largest shortfall of our policy and of the simulator's."""
        c = self.comparison
        return {"median_error": c.median_error, "max_error": c.max_error,
                "best_gamma_agrees": int(np.count_nonzero(c.best_gamma_agrees)),
                "concurrencies": int(c.best_gamma_agrees.size),
                "policy_shortfall": float(np.max(c.policy_shortfall)),
                "simulated_policy_shortfall": float(np.max(c.simulated_policy_shortfall))}

    def _caption(self) -> str:
        s = self.summary()
        return (f"{_drafter_label(self.key)}, ours against the simulator's throughput (committed output tokens per "
                f"second) at the simulator's best fixed \u03b3 at each concurrency C. Over all "
                f"{_cells_in(self.comparison)} cells of the grid |error| has median {s['median_error']:.2%} and max "
                f"{s['max_error']:.2%}; the best fixed \u03b3 agrees at {s['best_gamma_agrees']} of "
                f"{s['concurrencies']} concurrencies. Shortfall: 1 - simulated throughput at a policy's \u03b3 / at "
                f"the best fixed \u03b3 (largest: ours {s['policy_shortfall']:.2%}, the simulator's own "
                f"{s['simulated_policy_shortfall']:.2%}).")

    def _rows(self):
        c, grid = self.comparison, self.comparison.grid
        cols = np.arange(grid.goodput.shape[1])
        best_rows = np.argmax(grid.goodput, axis=0)
        ours_at_best = c.predicted[best_rows, cols]
        worst = np.max(np.abs(c.relative_error), axis=0)
        for j, conc in enumerate(self.concurrency):
            yield (f"{conc:,.0f}", f"{grid.best_gamma[j]} / {c.predicted_best_gamma[j]} / {c.policy_gamma[j]}",
                   f"{grid.best_goodput[j]:,.0f}", f"{ours_at_best[j] / grid.best_goodput[j] - 1:+.2%}",
                   f"{worst[j]:.2%}", f"{c.policy_shortfall[j]:+.2%}", f"{c.simulated_policy_shortfall[j]:+.2%}")

    def as_table(self) -> NumberTable:
        # kept on one line per cell: "15 / 15 / 15" must not wrap
        return NumberTable(self._HEAD, tuple(self._rows()), caption=self._caption(),
                           css_class="speclib-number-table speclib-nowrap")


def _cells_in(comparison) -> int:
    """Cells of one drafter's grid: every gamma (plain decoding included) at every concurrency."""
    return int(comparison.predicted.size)


def sequel_comparison(drafter="dflash", comparison=None) -> SequelComparisonTable:
    """:class:`SequelComparisonTable` of ``drafter`` ("mtp" or "dflash"),
    from ``comparison`` (default :func:`speclib.evidence.sequel.compare` with
    the book's choices)."""
    key = checked_choice("drafter", drafter, tuple(_sequel.DRAFTERS))
    comparisons = _sequel.compare() if comparison is None else comparison
    return SequelComparisonTable(key, comparisons[key], _sequel.load_grid().concurrency)


#: The modelling choices :func:`speclib.evidence.sequel.compare` makes to
#: price a step as the simulator does, each as the keyword that undoes it and
#: what undoing it means.
MODELLING_CHOICES = (
    ({}, "all of the book's choices (the simulator's aggregate roofline, its weights, its FLOPs)"),
    ({"roofline": "per-component"}, "each component its own roofline, the times added, as the paper does"),
    ({"output_gate": True}, "the attention output gate of the published config counted"),
    ({"linear_attention_flops": True}, "linear attention's FLOPs charged"),
    ({"expert_count": "slots"}, "experts counted as the simulator counts them, k independent picks per token"),
)


class ModellingChoicesTable(RendersAsTable):
    """What each modelling choice is worth: the comparison with the
    simulator redone with one choice undone at a time, a row per variant
    and drafter."""

    _HEAD = ("variant", "drafter", "median |error|", "max |error|", "best \u03b3 agrees", "worst shortfall")

    def __init__(self, rows):
        self.rows = rows

    def _rows(self):
        for description, keywords, comparisons in self.rows:
            keyword = ", ".join(f"{k}={v!r}" for k, v in keywords.items())
            for i, key in enumerate(_sequel.DRAFTERS):
                c = comparisons[key]
                label = (f"{description} ({keyword})" if keyword else description) if i == 0 else ""
                yield (label, _drafter_label(key), f"{c.median_error:.2%}", f"{c.max_error:.2%}",
                       f"{int(np.count_nonzero(c.best_gamma_agrees))} of {c.best_gamma_agrees.size}",
                       f"{float(np.max(c.policy_shortfall)):.2%}")

    def _caption(self):
        return ("The closed form against the simulated grid with one modelling choice undone at a time "
                "(the keyword of speclib.evidence.sequel.compare in brackets). Worst shortfall: the most simulated "
                "throughput our policy's \u03b3* loses against the best fixed \u03b3 at any concurrency.")

    def as_table(self) -> NumberTable:
        return NumberTable(self._HEAD, tuple(self._rows()), caption=self._caption(), align="ll")


def modelling_choices(choices=MODELLING_CHOICES) -> ModellingChoicesTable:
    """:class:`ModellingChoicesTable` over ``choices``: pairs of
    (keywords of :func:`speclib.evidence.sequel.compare`, description)."""
    rows = []
    for keywords, description in choices:
        if not isinstance(keywords, dict):
            raise ValueError(f"choices must be pairs of (keywords dict, description); got {keywords!r}")
        rows.append((str(description), dict(keywords), _sequel.compare(**keywords)))
    return ModellingChoicesTable(rows)
