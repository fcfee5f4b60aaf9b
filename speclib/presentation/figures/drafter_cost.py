"""Figures of the chapter "What drafting costs": the two drafters' times
against batch beside the target's plain step, and which drafter is cheaper
over draft length and batch."""
from __future__ import annotations

import numpy as np

from ...core import drafters as _drafters
from ...core import step as _step
from speclib.evidence import simulator as sequel
from ...presets import resolve
from ..definition import Axis, Figure, Heatmap, Line, Panel, Points, Slider, Text, VLine
from . import common
from . import simulated_serving as serving
from .draft_length_per_concurrency import ROOFLINE

US = 1e6
_LABELS = {"mtp": "MTP: \u03b3 passes of one position", "dflash": "DFlash: one pass over its block"}


def _cost(p, xp):
    hw = resolve(None, p.hardware)[1]
    B = xp.geomspace(serving.DRAFTER_BATCHES[0], serving.DRAFTER_BATCHES[1], p.points)
    drafters = {key: _drafters.resolve_drafter(name, None, hw, roofline=p.roofline)
                for key, name in sequel.DRAFTERS.items()}
    target = _step.step_model(sequel.simulated_model(), hw, roofline=p.roofline)
    out = {"B": B, "hardware": hw.name, "rule": serving.ROOFLINE_LABELS[p.roofline], "model": serving.HYBRID_MODEL,
           "S": sequel.context()}
    for key, d in drafters.items():
        out[key] = d.time(p.gamma, B, 0.0, None, xp.F) * US
    out["target"] = target.time(B, 1.0, sequel.context(), xp.F) * US
    longest = drafters["mtp"].time(float(serving.dflash_block()), B, 0.0, None, xp.F) * US

    # Where the two drafters cost the same: the first grid batch where MTP is no dearer, interpolated in
    # log B from the one before (0: MTP is cheaper everywhere; inf: DFlash is, up to the axis' end).
    gap = xp.log(out["dflash"]) - xp.log(out["mtp"])
    first = xp.first_true(gap >= 0)
    k = xp.maximum(first, 1)
    g0, g1 = xp.take(gap, k - 1), xp.take(gap, k)
    b0, b1 = xp.log(xp.take(B, k - 1)), xp.log(xp.take(B, k))
    crossing = xp.exp(b0 + (b1 - b0) * (0.0 - g0) / (g1 - g0))
    out["crossover"] = xp.where(first == 0, 0.0, xp.where(first < 0, float("inf"), crossing))
    inside = (out["crossover"] > serving.DRAFTER_BATCHES[0]) & (out["crossover"] < serving.DRAFTER_BATCHES[1])
    lo = xp.minimum(xp.minimum(xp.min(out["mtp"]), xp.min(out["dflash"])), xp.min(out["target"]))
    hi = xp.maximum(xp.max(longest), xp.max(out["target"]))
    out["y_lo"], out["y_hi"] = 10.0 ** xp.floor(xp.log10(lo)), 10.0 ** xp.ceil(xp.log10(hi))
    out["cross_x"] = xp.where(inside, out["crossover"], float("nan"))
    out["note_y"] = out["y_lo"] * 1.4
    out["same_x"] = out["cross_x"] * 1.08
    out["mtp_x"] = xp.where(out["crossover"] == 0, 1.2, float("nan"))
    out["dflash_x"] = xp.where(out["crossover"] >= serving.DRAFTER_BATCHES[1], 1.2, float("nan"))
    return out


drafter_cost = Figure(
    name="drafter_cost",
    title="What drafting costs: the {model} drafters on {hardware}\n\u03b3 = {gamma}, {rule}",
    compute=_cost,
    controls=(Slider("gamma", "draft length \u03b3", 1, serving.dflash_block(), 4, step=1, integer=True, format=","),
              ROOFLINE, common.hardware_choice()),
    params={"points": 200},
    panels=(Panel(common.batch_axis(*serving.DRAFTER_BATCHES), Axis("time (\u00b5s)", "log", "y_lo", "y_hi"),
                  (*(Line("B", key, label=_LABELS[key], color=key, gid=f"draft_{key}") for key in sequel.DRAFTER_KEYS),
                   Line("B", "target", label="the target's plain decode step (S = {S:g})", color="ridge",
                        dash="dashed", width=1.4, gid="target_step"),
                   VLine("cross_x", color="total", dash="dotted", width=1.0, gid="crossover"),
                   Text("same_x", "note_y", "same cost at B \u2248 {crossover:,.0f}", gid="crossover_label"),
                   Text("mtp_x", "note_y", "MTP is cheaper at every batch"),
                   Text("dflash_x", "note_y", "DFlash is cheaper at every batch shown")),
                  legend="upper left"),),
    doc="Seconds to draft gamma tokens, MTP (gamma passes in series) against DFlash (one block), against batch, "
        "with the target's plain decode step for scale and the batch where the two drafters cost the same.",
)


def _crossover(p, xp):
    hw = resolve(None, p.hardware)[1]
    B = np.geomspace(serving.DRAFTER_BATCHES[0], serving.DRAFTER_BATCHES[1], p.points)
    gammas = np.arange(1.0, p.gamma_max + 1)
    times = {key: _drafters.draft_time(gammas[:, None], B[None, :], name, hw, roofline=p.roofline)
             for key, name in sequel.DRAFTERS.items()}
    g_line = np.linspace(1, p.gamma_max, 200)
    exact_g = gammas[gammas >= 2]
    return {"B": B, "gammas": gammas, "log2_ratio": np.log2(times["mtp"] / times["dflash"]),
            "closed_x": _drafters.closed_form_crossover(g_line, hw), "closed_y": g_line, "exact_g": exact_g,
            "exact_x": _drafters.crossover_batches(exact_g, hw, roofline=p.roofline), "hardware": hw.name,
            "rule": serving.ROOFLINE_LABELS[p.roofline], "y_hi": p.gamma_max + 0.5, "ratio_max": p.ratio_max}


drafter_crossover = Figure(
    name="drafter_crossover",
    title="Which drafter is cheaper on {hardware}\n{rule}",
    compute=_crossover,
    controls=(ROOFLINE, common.hardware_choice()),
    params={"gamma_max": 16, "points": 160, "ratio_max": 4.0},
    live_params={"points": 80},
    panels=(Panel(common.batch_axis(*serving.DRAFTER_BATCHES), Axis("draft length \u03b3", lo=0.5, hi="y_hi"),
                  (Heatmap("B", "gammas", "log2_ratio", colors="diverging", vmax="ratio_max",
                           label="log\u2082(MTP time / DFlash time)",
                           gid="ratio_map"),
                   Line("closed_x", "closed_y", color="#ffffff", width=2.2),
                   Line("closed_x", "closed_y", label="closed form: MTP saturated, DFlash compute-bound",
                        color="total", dash="dashed", width=0.8, gid="closed_form"),
                   Points("exact_x", "exact_g", label="exact: equal draft times", color="total", filled=False,
                          size=5, gid="exact_boundary")),
                  legend="below", grid=False),),
    doc="Which drafter is cheaper over draft length and batch: log2 of MTP's time over DFlash's (DFlash cheaper "
        "where positive), with the saturated closed form B ~ 24 gamma and the exact boundary.",
)
