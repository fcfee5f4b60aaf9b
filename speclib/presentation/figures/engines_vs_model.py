"""Figures and tables of the chapter "The engines against the model":
published engine measurements of speculative decoding against the roofline,
the calibrated step time and its variants."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...core import speculation as _spec
from ...evidence import engines as _eng
from ...evidence import step_fit as _fit
from ...evidence import validation as _val
from ...presets import resolve
from ..definition import Axis, Choice, Figure, HLine, Line, Panel, Points
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


# --- the engine step fitted on the runs, held out (speclib.evidence.step_fit) -----------------


@lru_cache(maxsize=1)
def held_out_fit():
    """Every run predicted by the fit without it (cached: the chapter's tables share it)."""
    return _fit.leave_one_run_out()


def fit_run_rows(held=None):
    """Rows per run: run, engine, model on chip, points scored, median and max
    |error| (%), best draft length (measured -> predicted, by batch)."""
    held = held_out_fit() if held is None else held
    rows = []
    for p in held.runs:
        e = np.abs(p.error[p.scored]) * 100
        best = ", ".join(f"{b}: {m}\u2192{q}" for b, (m, q) in p.best.items()) or "\u2013"
        rows.append((p.run.id, p.run.engine, f"{resolve(p.run.model, None)[0].name} on {p.run.gpus} x {p.run.chip}",
                     int(e.size),
                     float(np.median(e)) if e.size else None, float(e.max()) if e.size else None, best))
    return rows


def against_rows():
    """The decode-only calibration (which never saw a speculative run) against
    the joint fit held out: what, decode-only, joint fit."""
    held = (_fit.against(_fit.Fit.of(_val.fit_calibration().calibration).calibration()), held_out_fit())
    return [("speed-up, median |error|", *(f"{100 * h.summary()['median_abs_error']:.1f} %" for h in held)),
            ("speed-up, max |error|", *(f"{100 * h.summary()['max_abs_error']:.0f} %" for h in held)),
            ("best draft length within \u00b11", *("{} of {}".format(*h.best_hits()) for h in held))]


def fit_ablation_rows():
    """Each candidate term dropped or added: variant, held-out speed-up median
    and max |error| %, best-length hits, decode median |error| %."""
    return [(name if name != "none" else "the fitted terms", 100 * s["median_abs_error"], 100 * s["max_abs_error"],
             f"{s['best_gamma_within_1']} of {s['best_gamma_points']}", 100 * s["decode_median_abs_error"])
            for name, s in _fit.ablation()]


#: The acceptance rates of Figure 3 beside its calibrated counterpart.
PAPER_ALPHAS = (0.6, 0.75, 0.9)


def _paper_vs_calibrated(p, xp):
    model, hw = resolve(p.model, p.hardware)
    B = xp.asarray(integer_batches(n=p.points))
    gammas = xp.arange(0, p.gamma_max + 1)[:, None, None]
    alphas = xp.asarray(PAPER_ALPHAS)[:, None]  # the three acceptance rates at once: a step is priced once for all
    out = {"B": B, "model": model.name, "where": hw.name if p.tp == 1 else f"{p.tp} x {hw.name}"}
    tops = []
    for kind, step_time in (("paper", "roofline"), ("calibrated", "calibrated")):
        deployment = _spec.Deployment(model, hw, step_time=step_time, tp=p.tp if kind == "calibrated" else 1)
        g, _ = common.best(xp, common.deployed_speedups(deployment, xp, alphas, gammas, B, p.S, p.c_draft))
        out.update({f"{kind}{i}": g[i] for i in range(len(PAPER_ALPHAS))})
        tops.append(xp.max(g))
    out["y_top"] = xp.maximum(6, xp.maximum(*tops) + 2)
    return out


def _gamma_lines(kind):
    return tuple(Line("B", f"{kind}{i}", label=f"\u03b1 = {a:.0%}", color=CYCLE[i], step=True, gid=f"{kind}_{i}")
                 for i, a in enumerate(PAPER_ALPHAS))


paper_vs_calibrated = Figure(
    name="paper_vs_calibrated",
    title="\u03b3* against batch: {model} on {where}, S = {S:,.0f}, drafter {c_draft:.0%} of a step",
    compute=_paper_vs_calibrated,
    panels=(Panel(common.batch_axis(), Axis("optimal draft length \u03b3*", lo=0, hi="y_top"), _gamma_lines("paper"),
                  title="the paper's step (roofline), Figure 3", legend="upper right"),
            Panel(common.batch_axis(), Axis("optimal draft length \u03b3*", lo=0, hi="y_top"),
                  _gamma_lines("calibrated"), title="the calibrated step, fitted on engines", legend="upper right")),
    size=(10.4, 4.4),
    controls=(common.seq_slider(4096, "sequence length S"), common.draft_cost_slider(0.10, "drafter cost (of a step)"),
              Choice("tp", "tensor-parallel GPUs", (1, 2, 4, 8), 1)),
    params={"model": None, "hardware": None, "gamma_max": 16, "points": 300},
    doc="The paper's Figure 3 (left: gamma* against batch under the roofline step) beside the same curves under the "
        "calibrated step fitted on measured engines (right), for three acceptance rates.",
)

