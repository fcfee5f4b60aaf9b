"""Figures of the chapter "Putting it on an engine": gamma* per batch size
with the batch ranges an engine's table chooses, and how the table moves
with context.

They take a schedule (:func:`speclib.schedule`'s
:class:`~speclib.tools.schedule.Schedule`, or anything with its attributes)
as the parameter ``schedule`` instead of building one, since schedules are a
tool above this layer: the notebook builds them and passes them in.
"""
from __future__ import annotations

import numpy as np

from ..definition import Axis, Bands, Figure, Line, Panel
from ..style import CYCLE
from . import common


def _ranges(p, xp):
    sched = p.schedule
    out = {"B": np.asarray(sched.batches, dtype=float), "gamma_star": sched.gamma_star, "zero": sched.gamma_star == 0,
           "y_top": max(1, int(sched.gamma_star.max())) + 0.8, "heading": p.title or
           f"{sched.model} on {sched.hardware}, context {sched.contexts[0]:g}", "tables": list(p.max_ranges)}
    for n in p.max_ranges:
        table = sched.table(n, sched.max_k)
        out[f"k{n}"] = table.k_per_batch
        out[f"k{n}_label"] = f"{n} range{'s' if n > 1 else ''}: keeps {100 * table.kept:.1f} %"
    out["B_max"] = float(out["B"][-1])
    return out


def _range_panels(data):
    tables = tuple(Line("B", f"k{n}", label=f"{{k{n}_label}}", color=c, dash="dashed", width=1.4, step=True,
                        gid=f"table_{n}") for c, n in zip(CYCLE, data["tables"]))
    return (Panel(common.batch_axis(1, "B_max", "batch size B (sequences decoding together)"),
                  Axis("draft length", lo=-0.3, hi="y_top"),
                  (Bands("B", "zero", label="gamma* = 0", color="gutter", gid="zero_band"),
                   Line("B", "gamma_star", label="gamma* per batch", color="total", width=2.2, step=True,
                        gid="gamma_star"), *tables),
                  title="{heading}", legend="upper right"),)


schedule_ranges = Figure(
    name="schedule_ranges", title="", compute=_ranges, panels=_range_panels,
    params={"schedule": None, "max_ranges": (3,), "title": None},
    doc="gamma* against batch size (log axis), with each vLLM-style table of at most max_ranges ranges drawn over "
        "it, and the batches where gamma* = 0 shaded.")


def _contexts(p, xp):
    sched = p.schedule
    order = np.argsort(sched.contexts)
    out = {"B": np.asarray(sched.batches, dtype=float), "order": [int(c) for c in order],
           "heading": p.title or f"{sched.model} on {sched.hardware}: the table moves with context"}
    for c in order:
        out[f"g{int(c)}"] = sched.gamma_star_at(int(c))
        out[f"g{int(c)}_label"] = f"context {sched.contexts[c]:,.0f} tokens"
    out["B_max"] = float(out["B"][-1])
    return out


def _context_panels(data):
    return (Panel(common.batch_axis(1, "B_max", "batch size B (sequences decoding together)"), Axis("gamma*"),
                  tuple(Line("B", f"g{c}", label=f"{{g{c}_label}}", color=color, width=1.8, step=True)
                        for color, c in zip(CYCLE, data["order"])), title="{heading}", legend="upper right"),)


schedule_contexts = Figure(
    name="schedule_contexts", title="", compute=_contexts, panels=_context_panels,
    params={"schedule": None, "title": None},
    doc="gamma* against batch size at each of the schedule's context lengths.")
