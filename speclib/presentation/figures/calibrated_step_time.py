"""Figures and tables of the chapter "A calibrated step time": measured
decoding against the roofline and the calibrated step time fitted on the
other workload, the held-out errors, and gamma* under either step time."""
from __future__ import annotations

import numpy as np

from ..._checks import checked_int
from ...core import capacity as _capacity
from ...core.deployment import Deployment
from ...evidence import validation as _val
from ...presets import resolve
from ..definition import Axis, Choice, Figure, Key, Line, Panel, Points
from ..style import COLORS, CYCLE
from . import common
from .draft_length import integer_batches

#: How each way of timing a step is drawn, and named.
STEP_TIME_COLORS = {"roofline": COLORS["total"], "calibrated": CYCLE[1], "per_token": CYCLE[2], "anchored": CYCLE[4]}
STEP_TIME_LABELS = {"roofline": "roofline (the paper's step)", "calibrated": "calibrated step time",
                    "per_token": "calibrated, per-sequence time per position",
                    "anchored": "roofline + the run's own fixed time"}


def _tpot(p, xp):
    held = _val.held_out() if p.held is None else p.held
    runs = held.runs
    out = {"tps": [], "train": next(w for w in _val.WORKLOADS if w != p.workload)}
    for tp in _val.TP_WIDTHS:
        idx = runs.select(chip=p.chip, framework=p.engine, precision=p.precision, workload=p.workload, tp=tp)
        if idx.size == 0:
            continue
        idx = idx[np.argsort(runs.column("concurrency")[idx])]
        out["tps"].append(tp)
        out[f"c{tp}"] = runs.column("concurrency")[idx].astype(float)
        out[f"measured{tp}"] = runs.measured_s[idx] * 1e3
        out[f"roofline{tp}"] = runs.predicted_s[idx] * 1e3
        out[f"calibrated{tp}"] = held.predicted_s[idx] * 1e3
    return out


def _tpot_panels(data):
    series = []
    for tp in data["tps"]:
        c = common.TP_COLORS[tp]
        series += [Points(f"c{tp}", f"measured{tp}", color=c, size=5, gid=f"measured_tp{tp}"),
                   Line(f"c{tp}", f"roofline{tp}", color=c, dash="dashed", width=1.3, gid=f"roofline_tp{tp}"),
                   Line(f"c{tp}", f"calibrated{tp}", label=f"TP = {tp}", color=c, width=1.8, gid=f"calibrated_tp{tp}")]
    return (Panel(Axis("concurrent requests (decode batch)", "log", ticks=(4, 8, 16, 32, 64, 128)),
                  Axis("time per output token (ms)", lo=0), tuple(series),
                  title="Llama-3.3-70B on {chip}, {engine}, {precision}, {workload}: calibrated on {train} only",
                  legend="upper left"),)


calibrated_tpot = Figure(
    name="calibrated_tpot", title="", compute=_tpot, panels=_tpot_panels, size=(7.6, 4.4),
    params={"chip": "B200", "engine": "vLLM", "precision": "fp8", "workload": "1k8k", "held": None},
    keys=(Key("measured", marker="o"), Key("calibrated (held out)"), Key("roofline (lower bound)", dash="dashed")),
    doc="Measured TPOT against concurrency for one chip, engine and precision, one colour per TP: the measurement "
        "(markers), the roofline (dashed) and the calibrated prediction fitted on the other workload (solid).")


def held_out_rows(held=None, by=("chip", "tp")):
    """Rows (group..., runs, median |error| %, max |error| %) of the held-out
    errors: each run predicted by the calibration fitted on the other workload."""
    held = _val.held_out() if held is None else held
    return [(*g, n, 100 * med, 100 * worst) for *g, n, med, worst in held.summary(by)]


def ablation_rows(variants=None):
    """Rows (terms, parameters, median and max |error| % testing on 1k8k,
    then on 1k1k) for calibrations with fewer or more terms."""
    return [(label, params, *(100 * v for test in ("1k8k", "1k1k") for v in held.overall(test)[1:]))
            for label, params, held in _val.ablation(variants or _val.ABLATION)]


# --- gamma* with either step time ----------------------------------------------------------


def _step_time_gamma(p, xp):
    model, hw = resolve(p.model, p.hardware)
    tp = checked_int("tp", p.tp, lo=1, hi=_capacity.MAX_TP)
    B = xp.asarray(integer_batches(n=p.points))
    gammas = xp.arange(0, p.gamma_max + 1)[:, None]
    out = {"B": B, "model": model.name, "where": hw.name if tp == 1 else f"{tp} x {hw.name}"}
    for how in ("roofline", "calibrated"):
        out[f"gamma_{how}"], out[f"speedup_{how}"] = common.best(xp, common.deployed_speedups(
            Deployment(model, hw, step_time=how, tp=tp), xp, p.alpha, gammas, B, p.S, p.c_draft))
    out["y_top"] = xp.maximum(6, xp.maximum(xp.max(out["gamma_roofline"]), xp.max(out["gamma_calibrated"])) + 1) + 1
    limit = common.fits(model, hw, xp, p.S, tp)
    out["max_batch"] = np.inf if limit is None else limit
    out["no_fit"] = 0 * B > 1 if limit is None else B > limit
    return out


step_time_gamma = Figure(
    name="step_time_gamma",
    title="\u03b3* with either step time: {model} on {where}\nS = {S:,.0f}, \u03b1 = {alpha:.0%}, drafter "
          "{c_draft:.0%} of a step",
    compute=_step_time_gamma,
    controls=(common.seq_slider(4096, "sequence length S"), common.alpha_slider(0.75, "acceptance \u03b1"),
              common.draft_cost_slider(0.10, "drafter cost (of a step)"),
              Choice("tp", "tensor-parallel GPUs", (1, 2, 4, 8), 1)),
    params={"model": None, "hardware": None, "gamma_max": 16, "points": 300},
    panels=(Panel(common.batch_axis(common.BATCH_RANGE[0], common.BATCH_RANGE[1]),
                  Axis("optimal draft length \u03b3*", lo=0, hi="y_top"),
                  (common.MEMORY_BANDS,
                   *(Line("B", f"gamma_{how}", label=STEP_TIME_LABELS[how], color=STEP_TIME_COLORS[how],
                          dash="dashed" if how == "roofline" else "solid", step=True, gid=f"gamma_{how}")
                     for how in ("roofline", "calibrated"))),
                  legend="upper right"),),
    doc="gamma* against batch with the roofline and the calibrated step time, on tp GPUs, with the batches that "
        "cannot fit hatched.",
)
