"""Figures and tables of the chapter "The engines against the model":
published engine measurements of speculative decoding against the roofline,
the calibrated step time and its variants."""
from __future__ import annotations

import numpy as np

from ...evidence import engines as _eng
from ..definition import Axis, Figure, HLine, Line, Panel, Points
from ..style import CYCLE
from . import common
from .calibrated_step_time import STEP_TIME_COLORS, STEP_TIME_LABELS, step_time_gamma
from .draft_length import integer_batches


def _speedups(p, xp):
    docs = _eng.run("sglang-docs")
    sweep = _eng.gamma_sweep("sglang-autospec")
    B = integer_batches(1, 256, 120).astype(float)
    out = {"B": B, "docs_batches": np.asarray(docs.batches, dtype=float),
           "docs_measured": np.asarray(docs.measured["speedup"], dtype=float), "gamma": docs.gamma,
           "alpha": docs.alpha, "sweep_gammas": np.asarray(sweep["gammas"], dtype=float), "sweep_batches": []}
    for how in ("roofline", "calibrated", "per_token"):
        out[f"docs_{how}"] = _eng.speedup(docs, how, B)
    for i, b in enumerate(sweep["batches"]):
        if b in (1, 64):
            out["sweep_batches"].append(int(b))
            for kind in ("measured", "per_token", "roofline"):
                out[f"sweep_{kind}_{int(b)}"] = np.asarray(sweep[kind][i], dtype=float)
    return out


def _speedup_panels(data):
    left = (*(Line("B", f"docs_{how}", label=STEP_TIME_LABELS[how], color=STEP_TIME_COLORS[how],
                   dash="dashed" if how == "roofline" else "solid", gid=f"docs_{how}")
              for how in ("roofline", "calibrated", "per_token")),
            Points("docs_batches", "docs_measured", label="measured (SGLang docs)", color="moe", marker="*", size=13,
                   gid="docs_measured"),
            HLine(1.0, dash="dotted", width=0.8))
    right = [HLine(1.0, dash="dotted", width=0.8)]
    for b in data["sweep_batches"]:
        c = CYCLE[0] if b == 1 else CYCLE[3]
        right += [Points("sweep_gammas", f"sweep_measured_{b}", label=f"B = {b}: measured", color=c, size=6,
                         gid=f"sweep_measured_{b}"),
                  Line("sweep_gammas", f"sweep_per_token_{b}", label=f"B = {b}: calibrated, per position", color=c,
                       gid=f"sweep_per_token_{b}"),
                  Line("sweep_gammas", f"sweep_roofline_{b}", label=f"B = {b}: roofline", color=c, dash="dashed",
                       width=1.3, gid=f"sweep_roofline_{b}")]
    return (Panel(common.batch_axis(), Axis("speedup over plain decoding"), left,
                  title="DeepSeek-V3, 8 x H200 (TP): \u03b3 = {gamma}, \u03b1 = {alpha:g}", legend="upper right"),
            Panel(Axis("draft length \u03b3 (SGLang num_steps)"), Axis("throughput / throughput at \u03b3 = 1"),
                  tuple(right), title="Qwen3-235B-A22B + EAGLE-3, SGLang", legend="lower left"))


engine_speedups = Figure(
    name="engine_speedups", title="", compute=_speedups, panels=_speedup_panels, size=(9.6, 4.6),
    params={"runs": None},
    doc="Left: DeepSeek-V3 on 8 H200 with tensor parallelism, speedup of three MTP drafts against batch under each "
        "step time, with the SGLang documentation's measured points. Right: Qwen3-235B-A22B with EAGLE-3, "
        "throughput over draft lengths relative to one draft, at batch 1 and 64, measured and modelled.")


def engine_rows(points=None):
    """Rows of the comparison table: source, setting, measured, roofline,
    calibrated, per position, anchored (ranges where the batch is unknown)."""
    points = _eng.comparison() if points is None else points
    return [(p.run.label, p.at, p.measured, _fmt(p.roofline), _fmt(p.calibrated), _fmt(p.per_token),
             _fmt(p.anchored)) for p in points]


def _fmt(value):
    if isinstance(value, tuple):
        return f"{value[0]:.2f}\u2013{value[1]:.2f}"
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "\u2013"
    return f"{value:.2f}"


#: gamma* under either step time for DeepSeek-V3 on 8 H200, the engines' setting.
step_time_gamma_v3 = step_time_gamma.variant("step_time_gamma_v3", model="DeepSeek-V3", hardware="H200", S=2048,
                                             alpha=0.68, c_draft=0.05, tp=8, gamma_max=8)
