"""Figures of the chapter "How far ahead to speculate": Figure 3 (gamma*
against batch), the speedup curves behind it, and gamma* as a map over batch
and sequence length (and its tensor-parallel variant in the capacity chapter)."""
from __future__ import annotations

import numpy as np

from ...core import capacity as _capacity
from ...core import cost as _cost
from ...core import speculation as _spec
from ...core.deployment import Deployment
from ...presets import resolve
from ..definition import Axis, Bands, Figure, Heatmap, HLine, Line, Panel, Text
from ..tables import NumberTable
from . import common

GAMMA_AXIS_LABEL = "optimal draft length \u03b3*"
#: The step model of this chapter's tables: the paper's ledger, a roofline per component of one layer.
LEDGER = "the paper's per-layer ledger (roofline)"


def integer_batches(lo=common.BATCH_RANGE[0], hi=common.BATCH_RANGE[1], n=600):
    """Whole-sequence batches, about ``n`` of them log-spaced from ``lo`` to ``hi``."""
    return np.unique(np.round(np.geomspace(lo, hi, n)))


def _optimal_gamma(p, xp):
    model, hw = resolve(p.model, p.hardware)
    cm = common.cost_model(model, hw, p.query_bytes, p.attention)
    B = xp.asarray(integer_batches(n=p.points))
    gammas = xp.arange(0, p.gamma_max + 1)[:, None]
    g, best = common.best(xp, common.speedups(cm, xp, p.alpha, gammas, B, p.S, p.c_draft))
    out = {"B": B, "gamma_star": g, "speedup": best, "zero": g == 0, "model": model.name, "hardware": hw.name,
           "y_top": xp.maximum(6, 4 * xp.ceil((xp.max(g) + 2) / 4)), "memory_label": common.memory_label(model),
           "attention_label": _ATTENTION_LABELS[p.attention]}
    limit = common.fits(model, hw, xp, p.S) if p.capacity else None
    if limit is None:
        out.update(no_fit=0 * B > 1, max_batch=np.inf, memory_x=np.nan, memory_y=np.nan)
    else:
        out["no_fit"] = B > limit
        out["max_batch"] = limit
        lo = xp.maximum(B[0], limit + 0.5)
        out["memory_x"] = xp.where(limit < B[-1], xp.sqrt(lo * B[-1]), np.nan)
        out["memory_y"] = 0.6 * out["y_top"]
    return out


#: How the titles name the attention the ledger prices.
_ATTENTION_LABELS = {"paper": "", "served": ", attention as served"}

optimal_gamma = Figure(
    name="optimal_gamma",
    title="Optimal draft length: {model} on {hardware}\nS = {S:,.0f}, \u03b1 = {alpha:.0%}, drafter {c_draft:.0%} "
          "of a step{attention_label}",
    compute=_optimal_gamma,
    controls=(common.seq_slider(4096), common.alpha_slider(0.75), common.draft_cost_slider(0.10),
              common.attention_choice()),
    params={"model": None, "hardware": None, "gamma_max": 64, "query_bytes": False, "points": 600, "capacity": True},
    panels=(Panel(
        x=common.batch_axis(common.BATCH_RANGE[0], common.BATCH_RANGE[1]),
        y=Axis(GAMMA_AXIS_LABEL, lo=0, hi="y_top"),
        series=(Bands("B", "zero", label="\u03b3* = 0: plain decoding wins", text="\u03b3* = 0", inner_text="gutter",
                      color="gutter", alpha=0.12, gid="zero_band"),
                common.LABELLED_MEMORY_BANDS,
                Text("memory_x", "memory_y", "does not fit:\nB > {max_batch:,.0f}", align="center",
                     gid="memory_label"),
                Line("B", "gamma_star", label="optimal draft length \u03b3*", color="total", step=True,
                     gid="gamma_star")),
        legend="below"),),  # inside, the legend hid the gutter's band and its label
    doc="Figure 3: the draft length gamma* maximising throughput against batch, the batches where "
        "speculation does not pay (gamma* = 0) shaded, and those that cannot fit in HBM hatched.",
)


def _speedup_curves(p, xp):
    model, hw = resolve(p.model, p.hardware)
    cm = common.cost_model(model, hw, p.query_bytes)
    Bs = np.asarray(p.batches, dtype=float)
    gammas = xp.arange(0, p.gamma_max + 1)
    table = common.speedups(cm, xp, p.alpha, gammas[:, None], xp.asarray(Bs)[None, :], p.S, p.c_draft)
    g, best = common.best(xp, table)
    # Axis limits move in coarse steps, so that small moves keep the frame still.
    x_hi = xp.minimum(p.gamma_max, xp.maximum(10, 8 * xp.ceil((xp.max(g) + 4) / 8)))
    shown = xp.where(gammas[:, None] <= x_hi, table, 0.0)
    return {"gamma": gammas, "speedup": table.T, "gamma_star": g[:, None], "best": best[:, None],
            "x_hi": x_hi + 0.3, "y_top": common.nice_ceiling(xp, 1.08 * xp.max(shown)),
            "labels": [f"B = {b:,.0f}" for b in Bs], "model": model.name, "hardware": hw.name}


speedup_curves = Figure(
    name="speedup_curves",
    title="Speedup against draft length: {model} on {hardware}\nS = {S:,.0f}, \u03b1 = {alpha:.0%}, drafter "
          "{c_draft:.0%}; \u2605 = best \u03b3 at each batch",
    compute=_speedup_curves,
    controls=(common.seq_slider(4096), common.alpha_slider(0.75), common.draft_cost_slider(0.10)),
    params={"model": None, "hardware": None, "batches": (1, 8, 64, 512, 4096), "gamma_max": 64,
            "query_bytes": False},
    panels=(Panel(
        x=Axis("draft length \u03b3 (tokens proposed per verify)", lo=-0.3, hi="x_hi"),
        y=Axis("throughput speedup over plain decoding (\u00d7)", lo=0, hi="y_top"),
        series=(HLine(1.0, text="no speculation", gid="no_speculation"),
                Line("gamma", "speedup", labels="labels", width=1.6, marker="o", gid="speedup"),
                Line("gamma_star", "best", width=0, marker="*", gid="peak")),
        legend="best"),),
    doc="The curves behind Figure 3: speedup against draft length at a few batches, each curve's best marked.",
)


def _gamma_map(p, xp):
    model, hw = resolve(p.model, p.hardware)
    cm = common.cost_model(model, hw, p.query_bytes, p.attention)
    B = xp.geomspace(common.BATCH_RANGE[0], common.BATCH_RANGE[1], p.batch_points)
    S = xp.geomspace(common.SEQ_RANGE[0], common.SEQ_RANGE[1], p.context_points)
    gammas = xp.arange(0, p.gamma_max + 1)[:, None, None]
    g, _ = common.best(xp, common.speedups(cm, xp, p.alpha, gammas, B[None, None, :], S[None, :, None], p.c_draft))
    out = {"B": B, "S": S, "gamma_star": g, "vmax": xp.maximum(6, xp.max(g)), "model": model.name,
           "hardware": hw.name, "tp_label": "" if p.tp == 1 else f" x {p.tp}",
           "attention_label": _ATTENTION_LABELS[p.attention],
           "hatch_label": "hatched: does not fit in HBM" + (", cache as served" if "served" in
                                                            common.memory_label(model) else "")}
    limit = common.fits(model, hw, xp, S, p.tp) if p.capacity else None
    out["no_fit"] = (B[None, :] > limit[:, None]) if limit is not None else (0 * B[None, :] + 0 * S[:, None] > 1)
    return out


gamma_map = Figure(
    name="gamma_map",
    title="\u03b3* over batch and sequence length: {model} on {hardware}{tp_label}\n\u03b1 = {alpha:.0%}, drafter "
          "{c_draft:.0%} of a step{attention_label}",
    compute=_gamma_map,
    controls=(common.alpha_slider(0.75), common.draft_cost_slider(0.10), common.attention_choice()),
    params={"model": None, "hardware": None, "gamma_max": 64, "query_bytes": False, "batch_points": 160,
            "context_points": 90, "capacity": True, "tp": 1},
    # Live, a coarser grid: the argmax over 65 draft lengths per cell is the whole redraw.
    live_params={"batch_points": 100, "context_points": 50},
    panels=(Panel(
        x=common.batch_axis(common.BATCH_RANGE[0], common.BATCH_RANGE[1]),
        y=Axis("average sequence length S (tokens)", "log2", common.SEQ_RANGE[0], common.SEQ_RANGE[1]),
        series=(Heatmap("B", "S", "gamma_star", colors="gamma", vmax="vmax", mask="no_fit",
                        label="\u03b3* (pink: 0; {hatch_label})", gid="gamma_map"),),
        legend="", grid=False),),
    doc="gamma* over batch and context length at once: Figure 3 for every S, with the cells whose batch "
        "cannot fit in HBM hatched.",
)

#: The capacity chapter's map: DeepSeek-V4-Flash split over eight B200s.
gamma_map_tp8 = gamma_map.variant("gamma_map_tp8", tp=8)


def _runs(pairs) -> str:
    return ", ".join(f"{lo:,.0f}\u2013{hi:,.0f}" for lo, hi in pairs) or "none"


def _last(batch) -> str:
    if batch is None:
        return "none"
    return f"{batch:,.0f}" + (" (every batch)" if batch == common.BATCH_RANGE[1] else "")


def served_attention_edges(contexts=(512, 4096, 32768, 131072), model=None, hardware=None, *, alpha=0.75,
                           c_draft=0.10) -> NumberTable:
    """Figure 3's features at each context in ``contexts``, with the attention
    priced as the paper prices it and as served
    (:data:`speclib.core.cost.ATTENTIONS`): the gutter (gamma* = 0 between
    batches where speculation pays) and the last batch with gamma* > 0, on
    every whole batch from 1 to 30,000; and the largest batch whose weights
    and KV cache fit on one chip with either cache."""
    m, hw = resolve(model, hardware)
    rows = []
    for S in contexts:
        regions = {a: _spec.gamma_regions(alpha, S, c_draft, deployment=Deployment(m, hw, attention=a))
                   for a in ("paper", "served")}
        last = {a: _last(r["last_speculating"]) for a, r in regions.items()}
        rows.append((f"{S:,.0f}", _runs(regions["paper"]["gutters"]), _runs(regions["served"]["gutters"]),
                     last["paper"], last["served"],
                     f"{_capacity.max_batch(m, hw, S, attention='paper'):,}", f"{_capacity.max_batch(m, hw, S):,}"))
    head = ("context S", "gutter: the paper's attention", "gutter: as served",
            "last batch with \u03b3* > 0: the paper's", "last batch with \u03b3* > 0: as served",
            "largest batch that fits: the paper's cache", "largest batch that fits: the cache as served")
    caption = (f"{m.name} on one {hw.name}, priced by {LEDGER} with either attention, \u03b1 = {alpha:.2f}, "
               f"drafter {c_draft:.0%} of a step; batches 1 to "
               f"{common.BATCH_RANGE[1]:,}. The paper's attention: every layer MLA over the whole context, and a "
               "full MLA cache in every layer; as served: each layer over the context its compression ratio "
               "leaves it, and the compressed cache (10% of HBM kept free)")
    return NumberTable(head, tuple(rows), caption=caption, align="l")


def gutter_table(batches=(1, 2, 3, 4, 8, 12, 13, 14, 16, 43), S=4096, alpha=0.75, c_draft=0.10, model=None,
                 hardware=None) -> NumberTable:
    """The gutter's mechanism at ``batches``: the price of one drafted token
    (the secant of the whole verify, :func:`speclib.core.cost.verify_price`),
    the speedup of one drafted token, and gamma* with its speedup. A batch is
    in the gutter when even the first drafted token's price exceeds
    ``alpha`` and no longer draft makes up for it."""
    m, hw = resolve(model, hardware)
    B = np.asarray(batches, dtype=float)
    price = _cost.verify_price(B, S, c_draft, 1, m, hw, attention="paper")["total"]
    dep = Deployment(m, hw, attention="paper")
    one = _spec.speedup(alpha, 1, B, S, c_draft, deployment=dep)
    g, best = _spec.optimal_gamma(alpha, B, S, c_draft, deployment=dep)
    marks, points = zip(*(common.held_point(dep, S, b, k) for b, k in zip(B, g)))
    return NumberTable(("batch B", "price of one drafted token", "speed-up with \u03b3 = 1", "\u03b3*",
                        "speed-up at \u03b3*"), tuple(zip((f"{b:,.0f}{mk}" for b, mk in zip(B, marks)), price, one, g,
                                                          best)),
                       formats=("", ".3f", ".3f", "", ".3f"),
                       caption=f"{m.name} on {hw.name}, \u03b1 = {alpha:.2f}, S = {S:,.0f}, drafter {c_draft:.0%} of a "
                               f"step; priced by {LEDGER}. {common.memory_sentence(dep, S, served_too=True)}",
                       held=points)


def regions_table(alphas=(0.6, 0.7, 0.75, 0.8, 0.9), S=4096, c_draft=0.10, model=None, hardware=None) -> NumberTable:
    """Where speculation pays along every whole batch from 1 to 30,000 at
    each acceptance of ``alphas`` (:func:`speclib.core.speculation.gamma_regions`):
    the gutters, the largest gamma* and the first batch reaching it, and the
    last batch with gamma* > 0, each batch marked where one chip does not
    hold it at its gamma* (the paper's per-layer ledger prices a layer at any
    batch)."""
    m, hw = resolve(model, hardware)
    paper = Deployment(m, hw, attention="paper")  # the paper's pricing, as its Figure 3 draws it
    dep = Deployment(m, hw, attention="served")  # what one chip holds, its cache as served
    rows, held = [], []
    for alpha in alphas:
        g = _spec.gamma_regions(alpha, S, c_draft, batches=None, deployment=paper)

        def marked(B):  # the batch with the mark of its gamma*, and the point the memory check holds
            gamma = int(_spec.optimal_gamma(alpha, B, S, c_draft, deployment=paper)[0])
            mark, point = common.held_point(dep, S, B, gamma)
            held.append(point)
            return f"{B:,.0f}{mark}"

        gutters = ", ".join(f"{lo:,.0f}\u2013{marked(hi)}" if lo != hi else marked(lo) for lo, hi in g["gutters"])
        last = g["last_speculating"]
        rows.append((f"{alpha:.2f}", gutters or "none", g["best_gamma"], marked(g["best_batch"]),
                     "none" if last is None else marked(last)))
    return NumberTable(("\u03b1", "gutter (\u03b3* = 0) at batches", "largest \u03b3*", "first reached at B",
                        "last batch with \u03b3* > 0"), tuple(rows),
                       caption=f"{m.name} on {hw.name}, S = {S:,.0f}, drafter {c_draft:.0%} of a step, priced by "
                               f"{LEDGER}; batches 1 to 30,000 (the gutter's mark is its last batch's). "
                               f"{common.memory_sentence(dep, S, served_too=True)}",
                       held=tuple(held))


#: The introduction's first look: a dense model against the MoE the post follows.
FIRST_LOOK_MODELS = ("Llama-3-70B", "DeepSeek-V4-Flash")


def first_look(batches=(1, 4, 16, 64, 256, 1024, 4096, 16384), S=4096, alpha=0.75, c_draft=0.10,
               models=FIRST_LOOK_MODELS, hardware=None) -> NumberTable:
    """gamma* and its speedup at a few batches for each of ``models``, on
    the paper's per-layer ledger (the introduction's table)."""
    B = np.asarray(batches, dtype=float)
    rows, held, holding = [], [], []
    for name in models:
        m, hw = resolve(name, hardware)
        dep = Deployment(m, hw, attention="paper")
        g, gain = _spec.optimal_gamma(alpha, B, S, c_draft, deployment=dep)
        marks, points = zip(*(common.held_point(dep, S, b, k) for b, k in zip(B, g)))
        held += points
        rows += [(m.name, "\u03b3*", *(f"{k}{mk}" for k, mk in zip(g, marks))),
                 ("", "gain", *(f"{x:.2f}\u00d7" for x in gain))]
        holding.append(f"for {m.name}, {common.holds(dep, S, served_too=True)}")
    return NumberTable(("model", "batch B", *(f"{b:,.0f}" for b in B)), tuple(rows),
                       caption=f"Best draft length and its throughput gain on one {hw.name}, priced by {LEDGER}; "
                               f"\u03b1 = {alpha:.2f}, S = {S:,.0f}, drafter {c_draft:.0%} of a step. "
                               f"{common.NOT_HELD}: a batch one {hw.name} does not hold at that draft length; "
                               + "; ".join(holding),
                       held=tuple(held))


def where_ahead(S=4096, alpha=0.75, c_draft=0.10, models=FIRST_LOOK_MODELS, hardware=None,
                batches=None) -> tuple:
    """The whole batches (default 1 to 16,384) at which the second of
    ``models`` gains more from speculating at its best draft length than the
    first, as (first, last); None if it never does. Raises if they are not
    one contiguous run, which the sentence this feeds would misstate."""
    B = np.arange(1, 16_385, dtype=float) if batches is None else np.asarray(batches, dtype=float)
    gains = [_spec.optimal_gamma(alpha, B, S, c_draft, deployment=Deployment(name, hardware, attention="paper"))[1]
             for name in models]
    ahead = B[gains[1] > gains[0]]
    if ahead.size == 0:
        return None
    if ahead.size != ahead[-1] - ahead[0] + 1 and batches is None:
        raise ValueError(f"{models[1]} is ahead of {models[0]} over more than one run of batches")
    return float(ahead[0]), float(ahead[-1])


#: The conclusion's worked examples: (batch, context, acceptance, drafter cost).
WORKED_EXAMPLES = ((8, 8192, 0.7, 0.05), (256, 8192, 0.7, 0.05), (2048, 32768, 0.8, 0.10))


def worked_examples(examples=WORKED_EXAMPLES, model=None, hardware=None) -> NumberTable:
    """gamma* and its speed-up at each (batch, context, acceptance, drafter
    cost) of ``examples``, on the paper's ledger, each marked where one chip
    does not hold the batch at that draft length, with the smallest group
    that does (its attention split by sequence, the cache as served)."""
    m, hw = resolve(model, hardware)
    dep = Deployment(m, hw, attention="paper")
    rows, held = [], []
    for B, S, alpha, c in examples:
        gamma, gain = _spec.optimal_gamma(alpha, B, S, c, deployment=dep)
        mark, point = common.held_point(dep, S, B, gamma)
        held.append(point)
        group = "one" if not mark else _smallest_group(m, hw, B, S, gamma)
        rows.append((f"{B:,}{mark}", f"{S:,}", f"{alpha:.2f}", f"{c:.0%}", gamma, f"{gain:.2f}", group))
    return NumberTable(("batch B", "context S", "\u03b1", "drafter", "\u03b3*", "speed-up", "GPUs that hold it"),
                       tuple(rows), align="rrrrrrr",
                       caption=f"{m.name} on one {hw.name}, priced by {LEDGER}, which prices a layer at any batch. "
                               f"{common.NOT_HELD}: one {hw.name} does not hold the batch at that draft length, "
                               "with a full cache in every layer as the paper prices it; last column: the fewest "
                               f"{hw.name}s that hold it, attention split by sequence over them and the cache as "
                               "served",
                       held=tuple(held))


def _smallest_group(model, hardware, B, S, gamma) -> str:
    for n in (2, 4, 8, 16, 32, 64):
        if Deployment(model, hardware, tp=n, dp_attention=True, attention="served").max_batch(S, gamma) >= B:
            return f"{n}"
    return "more than 64"
