"""Figures of the chapter "Putting it on an engine": gamma* per batch size
with the batch ranges an engine's table chooses.

The functions take a schedule object (:func:`speclib.schedule`'s
:class:`~speclib.tools.schedule.Schedule`, or anything with the same
attributes) instead of building one, since schedules are a tool above this
layer: the notebook builds them and passes them in.
"""
from __future__ import annotations

import numpy as np

from . import _style


def _steps(ax, batches, ks, **style):
    ax.step(batches, ks, where="mid", **style)


def schedule_ranges(sched, *, max_ranges=(3,), title=None):
    """gamma* against batch size (log axis), with each vLLM-style table of at
    most ``max_ranges`` ranges drawn over it, and the batches where gamma* = 0
    shaded."""
    with _style.style():
        return _schedule_ranges(sched, max_ranges, title)


def _schedule_ranges(sched, max_ranges, title):
    fig = _style.new_figure()
    ax = fig.subplots()
    b = sched.batches
    gstar = sched.gamma_star
    zero = gstar == 0
    if zero.any():
        edges = np.flatnonzero(np.diff(np.r_[0, zero.astype(int), 0]))
        for i, (lo, hi) in enumerate(zip(edges[::2], edges[1::2])):
            ax.axvspan(b[lo] - 0.5, b[hi - 1] + 0.5, color=_style.COLORS["gutter"], alpha=_style.BAND_ALPHA,
                       lw=0, label="gamma* = 0" if i == 0 else None)
    _steps(ax, b, gstar, color=_style.COLORS["total"], lw=2.2, label="gamma* per batch")
    for color, n in zip(_style.CYCLE, max_ranges):
        table = sched.table(n, sched.max_k)
        _steps(ax, b, table.k_per_batch, color=color, lw=1.4, ls="--",
               label=f"{n} range{'s' if n > 1 else ''}: keeps {100 * table.kept:.1f} %")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(_style.batch_label)
    ax.set_xlim(1, b[-1])
    ax.set_ylim(-0.3, max(1, int(gstar.max())) + 0.8)
    ax.set_xlabel("batch size B (sequences decoding together)")
    ax.set_ylabel("draft length")
    ax.set_title(title or f"{sched.model} on {sched.hardware}, context {sched.contexts[0]:g}")
    ax.legend(loc="upper right")
    return fig


def schedule_contexts(sched, *, title=None):
    """gamma* against batch size at each of the schedule's context lengths."""
    with _style.style():
        return _schedule_contexts(sched, title)


def _schedule_contexts(sched, title):
    fig = _style.new_figure()
    ax = fig.subplots()
    b = sched.batches
    order = np.argsort(sched.contexts)
    for color, c in zip(_style.CYCLE, order):
        _steps(ax, b, sched.gamma_star_at(int(c)), color=color, lw=1.8,
               label=f"context {sched.contexts[c]:,.0f} tokens")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(_style.batch_label)
    ax.set_xlim(1, b[-1])
    ax.set_xlabel("batch size B (sequences decoding together)")
    ax.set_ylabel("gamma*")
    ax.set_title(title or f"{sched.model} on {sched.hardware}: the table moves with context")
    ax.legend(loc="upper right")
    return fig
