"""Figures and tables of the chapter "What fits in memory": the largest
batch whose weights and KV caches fit in HBM, against the context, per model
(and, in :mod:`.draft_length`, the gamma* map split over eight GPUs); what
each engine replicates over its GPUs; and what one GPU of a speculative
deployment holds, item by item."""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from ..._checks import checked_int
from ...core import capacity as _capacity
from ...core.deployment import Deployment
from ...presets import resolve
from ..definition import Axis, Figure, HLine, Line, Panel, Text
from ..style import CYCLE
from ..tables import NumberTable
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


def capacity_table(models=CAPACITY_MODELS, chips=("B200", "H200", "MI355X", "GB300"), context=4096,
                   batch=30_000) -> NumberTable:
    """:func:`capacity_rows` as a table, a group that does not exist shown as "none"."""
    group = lambda n: "none" if n is None else f"{n:,}"  # noqa: E731
    rows = tuple((*row[:-2], group(row[-2]), group(row[-1]))
                 for row in capacity_rows(models, chips, context, batch))
    first = chips[0]
    return NumberTable(
        ("model", "weights (GB)", "MB per sequence", *(f"max batch, one {c}" for c in chips),
         f"{first}s for {batch:,}, plain TP", f"{first}s for {batch:,}, DP attention"),
        rows, formats=("", ",.1f", ",.1f"), align="l",
        caption=f"S = {context:,} tokens, {_capacity.DEFAULT_RESERVE:.0%} of HBM kept free, each cache as the model "
                f"serves it; last two columns: the smallest power-of-two group of {first}s that holds {batch:,} such "
                f"sequences under plain tensor parallelism and with data-parallel attention (none: no group of up "
                f"to {_capacity.MAX_TP:,} GPUs)")


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


def replication_table() -> NumberTable:
    """:data:`speclib.core.capacity.REPLICATION` as a table: what each engine
    holds whole on every GPU, splits, and adds for a draft (gamma written
    \u03b3), one column per engine. Its sources are
    :data:`speclib.core.capacity.REPLICATION_SOURCES`, which the chapter cites
    beside it (a table's caption cannot)."""
    gamma = lambda text: re.sub(r"\bgamma\b", "\u03b3", text)  # noqa: E731
    rows = tuple(tuple(gamma(cell) for cell in row) for row in _capacity.REPLICATION)
    return NumberTable(("what", *common.ENGINE_NAMES.values()), rows, align="llll",
                       caption="What each engine holds whole on every GPU, splits between them, and adds for a "
                               "draft (sources cited in the text)")


#: The units the memory table shows each kind of row in, and their bytes.
UNITS = {"GB": 1e9, "MB": 1e6, "tokens": 1.0, "states": 1.0, "sequences": 1.0}


def memory_rows(columns, context=4096):
    """What one GPU holds for each ``(label, deployment, gamma)`` of
    ``columns``, side by side: rows ``(what, unit, value per column)``.
    First the items of :meth:`speclib.core.capacity.DeploymentMemory.rows`
    (weights in GB, per-sequence items in MB); then the draft's cache slots
    and, for a model with linear-attention layers, its rollback states per
    sequence and layer (:func:`speclib.core.capacity.draft_counts`); then one
    GPU's weights and bytes per sequence in all, its usable memory and the
    largest batch the group holds at ``context``. A row that is zero in every
    column is left out."""
    held = [d.memory(context, g) for _, d, g in columns]
    out = []
    for i, (what, _, _) in enumerate(held[0].rows()):
        unit = "MB" if what.startswith("per sequence") else "GB"
        what = re.sub(r" \((.*)\)$", r", \1", what)  # "target weights (split)": its unit goes in brackets
        out.append((what, unit, *(h.rows()[i][1] / UNITS[unit] for h in held)))
    counts = [_capacity.draft_counts(d.engine, g) for _, d, g in columns]
    hybrid = [d.model.cache_layout()["linear"] > 0 and d.rollback != "none" for _, d, _ in columns]
    out.append(("cache slots for the draft, per sequence", "tokens", *(float(c[0]) for c in counts)))
    out.append(("rollback states for the draft, per sequence and linear layer", "states",
                *(float(c[1]) if h else 0.0 for c, h in zip(counts, hybrid))))
    out.append(("weights on one GPU, in all", "GB", *(h.per_gpu_weights / 1e9 for h in held)))
    out.append(("per sequence on one GPU, in all", "MB", *(h.per_sequence / 1e6 for h in held)))
    out.append(("usable memory of one GPU", "GB", *(h.usable / 1e9 for h in held)))
    out.append(("largest batch the group holds", "sequences", *(float(h.max_batch) for h in held)))
    return [row for row in out if any(v != 0 for v in row[2:])]


def memory_table(columns, context=4096, caption="") -> NumberTable:
    """:func:`memory_rows` as a table, one column per deployment, each row's
    unit in its name; ``caption`` after the context and the reserve."""
    fmt = {"GB": "{:,.1f}", "MB": "{:,.1f}", "tokens": "{:,.0f}", "states": "{:,.0f}", "sequences": "{:,.0f}"}
    rows = tuple((f"{what} ({unit})", *(fmt[unit].format(v) for v in values))
                 for what, unit, *values in memory_rows(columns, context))
    reserves = {_capacity._reserve_of(d, None) for _, d, _ in columns}
    kept = ", ".join(f"{r:.0%}" for r in sorted(reserves))
    head = f"What one GPU holds at S = {context:,.0f} tokens, {kept} of HBM kept free"
    return NumberTable(("what", *(label for label, _, _ in columns)), rows, align="l",
                       caption=f"{head}: {caption}" if caption else head)


#: The gamma the worked DeepSeek-V3 and Llama deployments draft.
WORKED_GAMMA = 3


def worked_deployments() -> dict:
    """The deployments the chapter's worked memory tables set side by side,
    by name: ``"qwen"``, Qwen3.6-35B-A3B on one B200 with its MTP drafter,
    not drafting and drafting 8 tokens (vLLM, snapshot rollback);
    ``"deepseek"``, DeepSeek-V3 on eight H200s with its MTP module on
    SGLang, under plain tensor parallelism and with data-parallel attention
    and its experts over the eight; ``"llama"``, Llama-3-70B on four H200s
    with its EAGLE-3 head on each engine. Each a tuple of
    ``(label, Deployment, gamma)``."""
    qwen = Deployment("Qwen3.6-35B-A3B", "B200", drafter="Qwen3.6-MTP", engine="vLLM")
    v3 = dict(model="DeepSeek-V3", hardware="H200", tp=8, drafter="DeepSeek-V3-MTP", engine="SGLang")
    llama = dict(model="Llama-3-70B", hardware="H200", tp=4, drafter="Llama-3.3-70B-EAGLE3")
    return {
        "qwen": (("MTP loaded, no draft", qwen, 0), ("drafting 8 tokens", qwen, 8)),
        "deepseek": (("plain tensor parallelism", Deployment(**v3), WORKED_GAMMA),
                     ("data-parallel attention, experts over 8", Deployment(**v3, ep=8, dp_attention=True),
                      WORKED_GAMMA)),
        "llama": tuple((name, Deployment(**llama, engine=e), WORKED_GAMMA) for e, name in common.ENGINE_NAMES.items()),
    }


def worked_memory_table(name: str, context=4096) -> NumberTable:
    """The worked table ``name`` of :func:`worked_deployments`, its caption
    naming the deployment and the draft."""
    columns = worked_deployments()[name]
    d = columns[0][1]
    where = f"one {d.hardware.name}" if d.tp == 1 else f"{d.tp} x {d.hardware.name}"
    drafts = sorted({g for _, _, g in columns})
    draft = " and ".join(f"{g:.0f}" for g in drafts)
    engines = sorted({common.ENGINE_NAMES[c[1].engine] for c in columns})
    engine = engines[0] if len(engines) == 1 else "each engine"
    caption = (f"{d.model.name} on {where} with its {d.drafter.name} drafter on {engine}, drafting {draft} "
               f"tokens a step")
    return memory_table(columns, context, caption)
