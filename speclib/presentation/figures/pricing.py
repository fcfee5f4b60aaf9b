"""Figures of the chapter "Pricing a speculated token": Figure 2, the ledger,
and the introduction's dense contrast (its variant on Llama-3-70B); and the
chapter's break-even table, the ledger's slope beside the verify's price."""
from __future__ import annotations

import numpy as np

from ...core import cost as _cost
from ...core import speculation as _spec
from ...core.deployment import Deployment
from ...presets import attention_kind, resolve
from ..definition import Area, Figure, HLine, Line, Panel, Toggle
from ..tables import NumberTable
from . import common

#: The ledger's stacked components, bottom to top, with their legend labels.
COMPONENTS = (
    ("attn_proj", "attention projections"),
    ("moe", "FFN"),
    ("attention", "attention ({attn} at verify width 2)"),
    ("drafter", "drafter"),
)


def _ledger(p, xp):
    model, hw = resolve(p.model, p.hardware)
    cm = common.cost_model(model, hw, p.query_bytes)
    B = xp.geomspace(common.BATCH_RANGE[0], common.BATCH_RANGE[1], p.points)
    parts = common.ledger(cm, xp, B, p.S, p.c_draft)
    out = {"B": B, "total": parts["total"], "model": model.name, "hardware": hw.name,
           "ffn": "FFN (MoE experts)" if model.ffn.is_moe else "FFN (dense)",
           # the model's own attention (MLA, GQA, MHA): Llama-3-70B's is GQA
           "attn": attention_kind(model).split()[0],
           "query": ", query bytes counted" if p.query_bytes else ""}
    bottom = 0.0 * B
    for key, _ in COMPONENTS:
        top = bottom + parts[key]
        out[f"{key}_lo"], out[f"{key}_hi"] = bottom, top
        bottom = top
    # The paper's 0-1.3, grown in steps of 0.1 when a costly drafter pushes the total above it.
    peak = xp.max(parts["total"])
    out["y_top"] = xp.where(peak <= 1.25, 1.3, xp.ceil((peak + 0.05) * 10) / 10)
    return out


def _component_areas():
    labels = {"moe": "{ffn}"}
    return tuple(Area("B", f"{key}_hi", y0=f"{key}_lo", when="components", color=key, alpha=0.35,
                      label=labels.get(key, label), gid=f"band_{key}") for key, label in COMPONENTS)


ledger = Figure(
    name="ledger",
    title="Price of a speculated token: {model} on {hardware}\nS = {S:,.0f} tokens, drafter {c_draft:.0%} of a step"
          "{query}",
    compute=_ledger,
    controls=(common.seq_slider(8192), common.draft_cost_slider(0.10),
              Toggle("components", "show the components", False),
              Toggle("query_bytes", "count query bytes", False)),
    params={"model": None, "hardware": None, "points": 400},
    panels=(Panel(
        x=common.batch_axis(common.BATCH_RANGE[0], common.BATCH_RANGE[1]),
        y=common.Axis("cost of a speculated token (\u00d7 a real token)", lo=0, hi="y_top"),
        series=(*_component_areas(),
                HLine(1.0, label="full price (1\u00d7 a real token)", gid="full_price"),
                Line("B", "total", label="speculated token (total)", color="total", gid="total")),
        # below the axes: inside, with the components shown, it would hide the total's peak and the full price
        legend="below"),),
    doc="Figure 2: the cost of one speculated token as a multiple of a token already in the batch, "
        "optionally split into the components' shares (stacked, so their top is the total).",
)

#: The pricing chapter's second ledger opens with the components shown.
ledger_components = ledger.variant("ledger_components", components=True)
#: The introduction's dense contrast: Llama-3-70B's ledger, components shown.
ledger_dense = ledger.variant("ledger_dense", model="Llama-3-70B", components=True)


#: What the chapter's break-even table and sentences price.
LEDGER = "the paper's per-layer ledger (roofline)"


def break_even(batches=(1, 4, 8, 16, 43, 128, 1024, 4096, 10_000, 30_000), S=4096, alpha=0.75, c_draft=0.10,
               model=None, hardware=None) -> NumberTable:
    """The ledger's total (a slope: the price of one more token at decode,
    :func:`speclib.marginal_cost`) beside the price a drafted token actually
    pays (the secant of the whole verify, :func:`speclib.core.cost.verify_price`)
    and the speedup of one drafted token at acceptance ``alpha``: the token
    pays exactly when ``alpha`` beats the second column, not the first."""
    m, hw = resolve(model, hardware)
    B = np.asarray(batches, dtype=float)
    slope = _cost.marginal_cost(B, S, c_draft, m, hw, attention="paper")["total"]
    price = _cost.verify_price(B, S, c_draft, 1, m, hw, attention="paper")["total"]
    dep = Deployment(m, hw, attention="paper")
    gain = _spec.speedup(alpha, 1, B, S, c_draft, deployment=dep)
    marks, points = zip(*(common.held_point(dep, S, b, 1) for b in B))
    return NumberTable(
        ("batch B", "ledger's total (slope)", "price of one drafted token (secant)",
         f"speed-up with \u03b3 = 1, \u03b1 = {alpha:.2f}"),
        tuple(zip((f"{b:,.0f}{mk}" for b, mk in zip(B, marks)), slope, price, gain)), formats=("", ".3f", ".3f", ".3f"),
        caption=f"{m.name} on {hw.name}, S = {S:,.0f}, drafter {c_draft:.0%} of a step; priced by {LEDGER}. "
                f"One drafted token pays exactly when \u03b1 beats the secant. "
                f"{common.memory_sentence(dep, S, served_too=True)}",
        held=points)


def required_acceptance(S=8192, c_draft=0.10, model=None, hardware=None, batches=None) -> dict:
    """The acceptance rate one drafted token needs (its secant price,
    :func:`speclib.core.cost.verify_price`) over ``batches`` (default every
    whole batch from 1 to 30,000): ``lowest`` and ``highest``, the ranges of
    batches where they fall, ties included (``lowest_at`` to ``lowest_to``,
    ``highest_at`` to ``highest_to``: past the far knee the price is flat, a
    plateau of floating-point ties), and ``ledger_highest``,
    the ledger's total (its slope) at most, for contrast."""
    m, hw = resolve(model, hardware)
    B = np.arange(common.BATCH_RANGE[0], common.BATCH_RANGE[1] + 1, dtype=float) if batches is None \
        else np.asarray(batches, dtype=float)
    price = _cost.verify_price(B, S, c_draft, 1, m, hw, attention="paper")["total"]
    slope = _cost.marginal_cost(B, S, c_draft, m, hw, attention="paper")["total"]
    (lo_from, lo_to), (hi_from, hi_to) = common.extreme_range(B, price, "min"), common.extreme_range(B, price, "max")
    return {"lowest": float(price.min()), "lowest_at": lo_from, "lowest_to": lo_to,
            "highest": float(price.max()), "highest_at": hi_from, "highest_to": hi_to,
            "ledger_highest": float(slope.max())}
