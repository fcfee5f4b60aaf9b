"""Figures and tables of the chapter "Putting it on an engine": gamma* per
batch size with the batch ranges an engine's table chooses (and, under a
calibrated step, where its interval holds 1x), how the table moves with
context, a schedule priced by the roofline beside the same deployment's
calibrated schedule, each engine's limits, and the facts about a schedule the prose quotes.

They take a schedule (:func:`speclib.schedule`'s
:class:`~speclib.tools.schedule.Schedule`, or anything with its attributes)
as the parameter ``schedule`` instead of building one, since schedules are a
tool above this layer: the notebook builds them and passes them in.
"""
from __future__ import annotations

import numpy as np

from ..definition import Axis, Bands, Figure, Line, Panel
from ..style import CYCLE
from ..tables import NumberTable
from . import common


def _ranges(p, xp):
    sched = p.schedule
    out = {"B": np.asarray(sched.batches, dtype=float), "gamma_star": sched.gamma_star, "zero": sched.gamma_star == 0,
           "y_top": max(1, int(sched.gamma_star.max())) + 0.8, "heading": p.title or
           f"{sched.model} on {sched.hardware}, context {sched.contexts[0]:g}", "tables": list(p.max_ranges),
           "uncertain": np.asarray(sched.uncertain, dtype=bool), "has_interval": sched.interval is not None}
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
                   *((Bands("B", "uncertain", label="80 % interval holds 1x", color="drafter", alpha=0.10,
                            gid="uncertain_band"),) if data["has_interval"] else ()),
                   Line("B", "gamma_star", label="gamma* per batch", color="total", width=2.2, step=True,
                        gid="gamma_star"), *tables),
                  title="{heading}", legend="upper right"),)


schedule_ranges = Figure(
    name="schedule_ranges", title="", compute=_ranges, panels=_range_panels,
    params={"schedule": None, "max_ranges": (3,), "title": None},
    doc="gamma* against batch size (log axis), with each vLLM-style table of at most max_ranges ranges drawn over "
        "it, the batches where gamma* = 0 shaded, and, under a calibrated step, those where the 80 % cross-conformal "
        "interval by model family of the best speculating draft's speed-up holds 1x hatched.")


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
                        for color, c in zip(CYCLE, data["order"])), title="{heading}", legend="below"),)


schedule_contexts = Figure(
    name="schedule_contexts", title="", compute=_contexts, panels=_context_panels,
    params={"schedule": None, "title": None},
    doc="gamma* against batch size at each of the schedule's context lengths.")


# --- tables and facts the prose quotes ----------------------------------------------------------

def _runs(*flags) -> list:
    """(first, last) batch (from 1) of each run over which every array in
    ``flags`` keeps its value."""
    n = len(flags[0])
    cuts = [0] + [b for b in range(1, n) if any(f[b] != f[b - 1] for f in flags)] + [n]
    return [(a + 1, b) for a, b in zip(cuts, cuts[1:])]


def _speedups(values) -> str:
    lo, hi = float(np.min(values)), float(np.max(values))
    return f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}x"


def engine_limits_table(limits, aspects) -> NumberTable:
    """Each engine's limits on a draft length per batch, an aspect a row and
    an engine a column: ``limits`` and ``aspects`` as
    :func:`speclib.tools.engines.engine_limits` and
    :data:`~speclib.tools.engines.LIMIT_ASPECTS` give them (a tool above
    this layer, so the notebook passes them in)."""
    limits = tuple(limits)
    return NumberTable(("",) + tuple(e.name for e in limits),
                       tuple((heading, *(getattr(e, field) for e in limits)) for field, heading in aspects),
                       align="l" * (1 + len(limits)), css_class="speclib-prose-table",
                       caption="What each engine takes as a draft length per batch, and what limits it, for the "
                               "release its flags were read in (speclib.tools.engines.engine_limits)")


def beside_calibrated(roofline, calibrated, roofline_label: str = "roofline") -> NumberTable:
    """gamma* per batch range of one deployment under two step models: the
    schedule ``roofline`` (priced by the roofline named ``roofline_label``)
    beside ``calibrated`` (the calibrated step, with the 80 % interval of the
    best speculating draft's speed-up, and "?" where it holds 1x). A row per
    run of batches over which neither schedule's gamma* (nor the interval's
    verdict) changes."""
    if roofline.max_batch != calibrated.max_batch:
        raise ValueError(f"calibrated: covers batches 1..{calibrated.max_batch}, the roofline's schedule "
                         f"1..{roofline.max_batch}; build both over the same batches")
    g_r, g_c, unsure = roofline.gamma_star, calibrated.gamma_star, np.asarray(calibrated.uncertain, dtype=bool)
    rows = []
    for lo, hi in _runs(g_r, g_c, unsure):
        part = slice(lo - 1, hi)
        interval = "\u2014"
        if calibrated.interval is not None:
            interval = (f"{float(np.min(calibrated.interval[0][part])):.2f}-"
                        f"{float(np.max(calibrated.interval[1][part])):.2f}x")
        rows.append((f"{lo}" if lo == hi else f"{lo}-{hi}", int(g_r[lo - 1]), _speedups(roofline.speedup[part]),
                     int(g_c[lo - 1]), _speedups(calibrated.speedup[part]), interval, "?" if unsure[lo - 1] else ""))
    return NumberTable(
        ("batch sizes", "γ* roofline", "speed-up", "γ* calibrated", "speed-up", "80 % interval", "1x inside"),
        tuple(rows), align="l",
        caption=(f"{calibrated.model} on {calibrated.hardware}, drafter {calibrated.drafter}: γ* per batch range "
                 f"priced by the {roofline_label} (a "
                 "lower bound on each step) and by the calibrated step (fitted on engines); the 80 % interval, cross-conformal by model "
                 "family (acceptance \u00b10.05 per position), is of the calibrated speed-up of the best draft of at least one token, and ? marks the batches where it "
                 "holds 1x"))


def facts(schedule, c: int = 0) -> dict:
    """What the prose says about a schedule at its context ``c`` (the
    reference, the first, by default): ``first`` (gamma* at batch 1),
    ``peak`` (the largest gamma*) and the first run of batches holding it
    (``peak_from``, ``peak_to``); ``short_to``, the last batch before gamma*
    first exceeds its value at batch 1; ``stop`` (the first batch of the
    trailing run of gamma* = 0; None: it speculates up to the last batch);
    ``unsure_from``, the first batch of the trailing run where the interval
    holds 1x (None: none, or no interval); ``trt_keeps`` and
    ``trt_worst_batch``: what TensorRT-LLM's first-key rule leaves of the
    worst batch's optimum, and which batch that is (the interval and the
    first-key rule at the reference context only: None elsewhere);
    ``drafts_held_to``: the last batch memory holds with a draft (None: every
    batch). The batches past it, where memory leaves plain decoding the only
    choice (:meth:`~speclib.tools.schedule.Schedule.left_out`), do not count
    as speculation stopping: ``stop`` is over the batches before them."""
    out = np.asarray(schedule.left_out(c), dtype=bool)
    held_to = int(np.argmax(out)) if out.any() else None
    g = np.asarray(schedule.gamma_star_at(c))[:held_to]
    peak = int(g.max())
    first_peak = int(np.argmax(g == peak))
    after = np.flatnonzero(g[first_peak:] != peak)
    above = np.flatnonzero(g > g[0])
    zero = g == 0
    unsure = np.asarray(schedule.uncertain, dtype=bool)
    trt = schedule.table(first_is_max=True, implicit_zero_tail=True) if c == 0 else None

    def trailing(mask):
        if not mask[-1]:
            return None
        off = np.flatnonzero(~mask)
        return int(off[-1]) + 2 if off.size else 1

    return {"first": int(g[0]), "peak": peak, "peak_from": first_peak + 1,
            "peak_to": first_peak + (int(after[0]) if after.size else g.size - first_peak),
            "short_to": int(above[0]) if above.size else g.size, "stop": trailing(zero),
            "unsure_from": trailing(unsure) if schedule.interval is not None and c == 0 else None,
            "trt_keeps": None if trt is None else float(trt.worst),
            "trt_worst_batch": None if trt is None else int(trt.worst_batch),
            "drafts_held_to": held_to}
