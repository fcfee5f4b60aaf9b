"""Figures and tables of the chapter "What fits in memory": the largest
batch whose weights and KV caches fit in HBM, against the context, per model
(and, in :mod:`.draft_length`, the gamma* map split over eight GPUs)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..._checks import checked_int
from ...core import capacity as _capacity
from ...presets import resolve
from ..definition import Axis, Figure, HLine, Line, Panel, Text
from ..style import CYCLE
from . import common
from . import draft_length as _draft_length

#: The model presets the capacity figure compares.
CAPACITY_MODELS = ("DeepSeek-V4-Flash", "Qwen3.6-35B-A3B", "Llama-3-70B", "Mixtral-8x7B", "DeepSeek-V3",
                   "Qwen3-235B-A22B")


def _limits(p, xp):
    S = np.geomspace(p.contexts[0], p.contexts[1], p.points)
    _, hw = resolve(None, p.hardware)
    tp = checked_int("tp", p.tp, lo=1, hi=_capacity.MAX_TP)
    out = {"S": S, "shown": [], "notes": [], "paper_batch": float(common.BATCH_RANGE[1]),
           "where": f"one {hw.name}" if tp == 1 else f"{tp} x {hw.name}", "hbm": hw.hbm_capacity / 1e9}
    for i, name in enumerate(p.models):
        m, _ = resolve(name, None)
        limit = _capacity.max_batch(m, hw, S, tp).astype(float)
        if not np.any(limit > 0):
            out["notes"].append(f"{m.name}: weights alone ({_capacity.weight_bytes(m) / 1e9:,.0f} GB) exceed the "
                                "usable HBM")
            continue
        limit[limit <= 0] = np.nan
        out[f"limit{i}"] = limit
        out["shown"].append((i, m.name))
    out["note"] = "\n".join(out["notes"])
    return out


def _limit_panels(data):
    lines = tuple(Line("S", f"limit{i}", label=name, color=CYCLE[i % len(CYCLE)], gid=f"capacity_{name}")
                  for i, name in data["shown"])
    return (Panel(Axis("context per sequence S (tokens)", "log2", ticks="context"),
                  Axis("largest batch that fits (sequences)", "log", ticks="batch", lo=0.2),
                  (*lines, HLine("paper_batch", label="the paper's largest batch (30,000)", color="memory",
                                 dash="dotted", width=1.4, gid="paper_batch"),
                   Text(0.01, 0.07, "{note}", coords="axes", align="left", size=8, color="#7f7f7f")),
                  title="What fits: weights + KV cache in {where} ({hbm:,.0f} GB, 10% kept free)",
                  legend="below"),)


capacity_limits = Figure(
    name="capacity_limits", title="", compute=_limits, panels=_limit_panels, size=(7.4, 4.2),
    params={"models": CAPACITY_MODELS, "hardware": "B200", "tp": 1, "contexts": (512, 131_072), "points": 120},
    doc="The largest batch whose weights and KV caches fit in tp GPUs of a chip (10% kept free), against the "
        "context, one line per model; the paper's largest batch (30,000) for scale.")


def capacity_rows(models=CAPACITY_MODELS, chips=("B200", "H200", "MI355X", "GB300"), context=4096, batch=30_000):
    """Table rows: model, weights (GB), bytes per sequence at ``context``
    (MB), the largest batch at ``context`` on one GPU of each chip, and the
    smallest group of the first chip (a power of two) holding ``batch`` of
    them under plain tensor parallelism and with data-parallel attention
    (None: no group up to 1,024 GPUs)."""
    rows = []
    for name in models:
        m, _ = resolve(name, None)
        row = [m.name, _capacity.weight_bytes(m) / 1e9, _capacity.sequence_bytes(context, m) / 1e6]
        row += [_capacity.max_batch(m, chip, context) for chip in chips]
        row.append(_capacity.min_tp(batch, context, m, chips[0]))
        row.append(_capacity.min_tp(batch, context, m, chips[0], dp_attention=True))
        rows.append(tuple(row))
    return rows


#: The step model Figure 3's edges are priced with, as the table's caption names it.
EDGES_STEP_MODEL = "\u03b3* priced by the paper's ledger (the roofline per layer)"


def served_attention_edges(contexts=(512, 4096, 32768, 131072), **kwargs):
    """Figure 3's features (the gutter, the last batch with gamma* > 0) beside
    the largest batch that fits, with the attention and its cache as the paper
    prices them and as served (:func:`.draft_length.served_attention_edges`),
    its caption naming the step model that priced gamma*."""
    table = _draft_length.served_attention_edges(contexts, **kwargs)
    if "roofline" in table.caption:
        return table
    return dataclasses.replace(table, caption=f"{EDGES_STEP_MODEL}: {table.caption}")
