"""Figures of the deployment-realism chapters: what fits in HBM, the calibrated
step time against measured decoding, skewed expert routing, and the model
against published engine measurements of speculative decoding.

Every number comes from :mod:`speclib.capacity`, :mod:`speclib.validation`,
:mod:`speclib.moe`, :mod:`speclib.speculation` and
:mod:`speclib.evidence.engines`; nothing here re-derives the model.
"""
from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..._checks import checked_array, checked_int
from ...core import acceptance as _acc
from ...core import capacity as _capacity
from ...core import moe as _moe
from ...core import speculation as _spec
from ...evidence import engines as _eng
from ...evidence import validation as _val
from ...presets import resolve
from . import _style
from ._style import COLORS, CYCLE, MEMORY_ALPHA, MEMORY_HATCH
from .paper import BATCH_RANGE, MEMORY_LABEL, Plot, integer_batches, memory_limit, memory_patch

#: The model presets the capacity figure compares.
CAPACITY_MODELS = ("DeepSeek-V4-Flash", "Qwen3.6-35B-A3B", "Llama-3-70B", "Mixtral-8x7B", "DeepSeek-V3",
                   "Qwen3-235B-A22B")
#: Colours of the two ways of timing a step.
STEP_TIME_COLORS = {"roofline": COLORS["total"], "calibrated": CYCLE[1], "per_token": CYCLE[2], "anchored": CYCLE[4]}
STEP_TIME_LABELS = {"roofline": "roofline (the paper's step)", "calibrated": "calibrated step time",
                    "per_token": "calibrated, per-sequence time per position", "anchored": "roofline + the run's own fixed time"}
TP_COLORS = {1: CYCLE[0], 2: CYCLE[1], 4: CYCLE[2], 8: CYCLE[3]}


def _log_axis(axis, formatter=_style.batch_label):
    getattr(axis.axes, f"set_{axis.axis_name}scale")("log")
    axis.set_major_formatter(FuncFormatter(formatter))


def _context_label(x, _p=None) -> str:
    return f"{x / 1024:g}k" if x >= 1024 else f"{x:g}"


# --- capacity -----------------------------------------------------------------------------


def capacity_limits(models=CAPACITY_MODELS, hardware="B200", tp=1, *, contexts=(512, 131_072), points=120):
    """The largest batch whose weights and KV caches fit in ``tp`` GPUs of
    ``hardware`` (10% kept free), against the context, one line per model;
    the paper's largest batch (30,000) for scale."""
    S = np.geomspace(contexts[0], contexts[1], points)
    _, hw = resolve(None, hardware)
    tp = checked_int("tp", tp, lo=1, hi=_capacity.MAX_TP)
    fig = _style.new_figure((7.4, 4.2))
    with _style.style():
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(_context_label))
        _log_axis(ax.yaxis)
        handles, notes = [], []
        for i, name in enumerate(models):
            m, _ = resolve(name, None)
            limit = _capacity.max_batch(m, hw, S, tp).astype(float)
            if not np.any(limit > 0):
                need = _capacity.weight_bytes(m) / 1e9
                notes.append(f"{m.name}: weights alone ({need:,.0f} GB) exceed the usable HBM")
                continue
            limit[limit <= 0] = np.nan
            handles += ax.plot(S, limit, color=CYCLE[i % len(CYCLE)], label=m.name, gid=f"capacity_{m.name}")
        handles.append(ax.axhline(BATCH_RANGE[1], color=COLORS["memory"], ls=":", lw=1.4,
                                  label="the paper's largest batch (30,000)", gid="paper_batch"))
        ax.set_xlim(S[0], S[-1])
        ax.set_xlabel("context per sequence S (tokens)")
        ax.set_ylabel("largest batch that fits (sequences)")
        where = f"one {hw.name}" if tp == 1 else f"{tp} x {hw.name}"
        ax.set_title(f"What fits: weights + KV cache in {where} ({hw.hbm_capacity / 1e9:,.0f} GB, 10% kept free)",
                     loc="left")
        ax.legend(handles=handles, loc="lower left", fontsize=8.5)
        if notes:
            ax.text(0.99, 0.86, "\n".join(notes), transform=ax.transAxes, ha="right", va="top", fontsize=8,
                    color=COLORS["memory"])
    return fig


def capacity_rows(models=CAPACITY_MODELS, chips=("B200", "H200", "MI355X", "GB300"), context=4096, batch=30_000):
    """Table rows: model, weights (GB), bytes per sequence at ``context``
    (MB), the largest batch at ``context`` on one GPU of each chip, and the
    smallest tensor-parallel size (a power of two) holding ``batch`` of them
    on the first chip."""
    rows = []
    for name in models:
        m, _ = resolve(name, None)
        row = [m.name, _capacity.weight_bytes(m) / 1e9, _capacity.sequence_bytes(context, m) / 1e6]
        row += [_capacity.max_batch(m, chip, context) for chip in chips]
        row.append(_capacity.min_tp(batch, context, m, chips[0]))
        rows.append(tuple(row))
    return rows


# --- the calibrated step time -------------------------------------------------------------


def calibrated_tpot(chip="B200", engine="vLLM", precision="fp8", workload="1k8k", held=None):
    """Measured TPOT against concurrency for one chip, engine and precision,
    one colour per TP: the measurement (markers), the roofline (dashed) and
    the calibrated prediction fitted on the *other* workload (solid)."""
    held = _val.held_out() if held is None else held
    runs = held.runs
    fig = _style.new_figure((7.6, 4.2))
    with _style.style():
        ax = fig.add_subplot()
        _log_axis(ax.xaxis)
        ax.set_xticks([4, 8, 16, 32, 64, 128])
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
        for tp in _val.TP_WIDTHS:
            idx = runs.select(chip=chip, framework=engine, precision=precision, workload=workload, tp=tp)
            if idx.size == 0:
                continue
            conc = runs.column("concurrency")[idx]
            order = np.argsort(conc)
            idx, conc = idx[order], conc[order]
            color = TP_COLORS[tp]
            ax.plot(conc, runs.measured_s[idx] * 1e3, "o", color=color, ms=5, gid=f"measured_tp{tp}")
            ax.plot(conc, runs.predicted_s[idx] * 1e3, "--", color=color, lw=1.3, gid=f"roofline_tp{tp}")
            ax.plot(conc, held.predicted_s[idx] * 1e3, "-", color=color, lw=1.8, gid=f"calibrated_tp{tp}")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("concurrent requests (decode batch)")
        ax.set_ylabel("time per output token (ms)")
        train = next(w for w in _val.WORKLOADS if w != workload)
        ax.set_title(f"Llama-3.3-70B on {chip}, {engine}, {precision}, {workload}: calibrated on {train} only",
                     loc="left")
        handles = [Line2D([], [], color=TP_COLORS[t], lw=6, label=f"TP = {t}") for t in _val.TP_WIDTHS
                   if runs.select(chip=chip, framework=engine, precision=precision, workload=workload, tp=t).size]
        handles += [Line2D([], [], color="k", marker="o", ls="none", label="measured"),
                    Line2D([], [], color="k", ls="-", label="calibrated (held out)"),
                    Line2D([], [], color="k", ls="--", lw=1.3, label="roofline (lower bound)")]
        ax.legend(handles=handles, ncols=2, fontsize=8.5, loc="upper left")
    return fig


def held_out_rows(held=None, by=("chip", "tp")):
    """Rows (group..., runs, median |error| %, max |error| %) of the held-out
    errors: each run predicted by the calibration fitted on the other workload."""
    held = _val.held_out() if held is None else held
    return [(*g, n, 100 * med, 100 * worst) for *g, n, med, worst in held.summary(by)]


def ablation_rows(variants=None):
    """Rows (terms, parameters, median and max |error| % testing on 1k8k,
    then on 1k1k) for calibrations with fewer or more terms."""
    variants = variants or (
        ("roofline alone", ()),
        ("x chip factor", ("factor",)),
        ("+ fixed time per step", ("factor", "fixed")),
        ("+ time per sequence", ("factor", "fixed", "per_sequence")),
        ("+ prefill share (kept)", _val.DEFAULT_TERMS),
        ("+ all-reduce time", _val.DEFAULT_TERMS + ("allreduce",)),
    )
    rows = []
    for label, terms in variants:
        held = _val.held_out(terms)
        cal = held.fits["1k1k"].calibration
        params = (len(cal.roofline_factor) * ("factor" in terms)
                  + sum(len(v) for v in cal.fixed_s.values()) * ("fixed" in terms)
                  + ("per_sequence" in terms) + ("allreduce" in terms))
        a, b = held.overall("1k8k"), held.overall("1k1k")
        rows.append((label, params, 100 * a[1], 100 * a[2], 100 * b[1], 100 * b[2]))
    return rows


# --- skewed routing -----------------------------------------------------------------------


def width_depth(popularity=None, k=8, E=256):
    """Distinct routed experts one MoE layer reads for N positions in one
    verify: measured from N sequences (width) and from one sequence (depth),
    against the uniform coupon count and the skewed count from the measured
    popularity."""
    data = _moe.measured_width_depth()
    p = _moe.measured_popularity() if popularity is None else popularity
    N = np.linspace(1, 16, 200)
    fig = _style.new_figure((6.6, 4.0))
    with _style.style():
        ax = fig.add_subplot()
        ax.plot(N, _moe.experts_activated(N, k, E), "--", color=COLORS["ridge"], lw=1.4,
                label="uniform routing: E (1 - (1 - k/E)^N)", gid="uniform")
        ax.plot(N, _moe.experts_activated(N, k, E, routing=p), color=COLORS["moe"],
                label="measured popularity: \u03a3 [1 - (1 - k p\u1d62)^N]", gid="skewed")
        ax.plot(data["N"], data["width"], "o", color=COLORS["moe"], mfc="white", mew=1.5,
                label="measured: N sequences (width)", gid="width")
        ax.plot(data["N"], data["depth"], "s", color=CYCLE[0], label="measured: one sequence, N positions (depth)",
                gid="depth")
        ax.set_xlabel("positions in the verify step N")
        ax.set_ylabel("distinct routed experts per layer")
        ax.set_xlim(0.5, 16.5)
        ax.set_ylim(0, None)
        ax.set_title(f"{data['model']}: experts a verify step reads (top-{k} of {E})", loc="left")
        ax.legend(fontsize=8.5, loc="upper left")
    return fig


def _routing_pricings(model, hardware, S, drafter, c_draft, popularity):
    m, hw = resolve(model, hardware)
    E = m.ffn.n_routed
    uniform = np.full(E, 1.0 / E)
    kw = dict(drafter=drafter, c_draft=c_draft)
    return {"uniform": _spec.pricing(m, hw, routing=uniform, **kw), "skewed": _spec.pricing(m, hw, routing=popularity,
                                                                                             **kw)}


def skew_effects(model="Qwen3.6-35B-A3B", hardware="B200", *, S=512, drafter="Qwen3.6-MTP", c_draft=None, alpha=None,
                 popularity=None, batch_range=(1, 4096), points=160, gamma_max=16):
    """What measured routing skew does, against uniform routing, on the whole
    step: the cost of verifying one speculated token (a step of 2 positions
    over a plain one, the expert tax as a ratio; left) and gamma* with its
    speedup (right). ``alpha`` None uses the drafter preset's measured
    survival curve."""
    p = _moe.measured_popularity() if popularity is None else popularity
    m, hw = resolve(model, hardware)
    B = integer_batches(batch_range[0], batch_range[1], points)
    priced = _routing_pricings(m, hw, S, drafter, c_draft, p)
    colors = {"uniform": COLORS["ridge"], "skewed": COLORS["moe"]}
    fig = _style.new_figure((9.0, 3.8))
    with _style.style():
        left, right = fig.subplots(1, 2)
        for key, pr in priced.items():
            plain = pr.step_model.time(B, 1.0, S)
            ratio = pr.step_model.time(B, 2.0, S) / plain
            left.plot(B, ratio, color=colors[key], ls="--" if key == "uniform" else "-", label=f"{key} routing",
                      gid=f"tax_{key}")
            acceptance = pr.measured_acceptance() if alpha is None else _acc.check_alpha(alpha)
            g, sp = _spec.best_gamma(pr, acceptance, B.astype(float), np.full(B.shape, float(S)), gamma_max)
            right.plot(B, g, color=colors[key], drawstyle="steps-mid", ls="--" if key == "uniform" else "-",
                       label=f"\u03b3*, {key}", gid=f"gamma_{key}")
        for ax in (left, right):
            _log_axis(ax.xaxis)
            ax.set_xlabel("batch (sequences)")
            ax.set_xlim(B[0], B[-1])
        left.axhline(1.0, color=COLORS["ridge"], lw=0.8, ls=":")
        left.set_ylabel("verify 2 positions / plain step")
        left.set_title("price of one speculated token", loc="left", fontsize=10)
        right.set_ylabel("optimal draft length \u03b3*")
        right.yaxis.set_major_locator(MaxNLocator(integer=True))
        right.set_ylim(0, None)
        what = "measured survival" if alpha is None else f"\u03b1 = {alpha:g}"
        right.set_title(f"\u03b3* ({what}, S = {S:,})", loc="left", fontsize=10)
        left.legend(fontsize=8.5)
        right.legend(fontsize=8.5, loc="lower right")
        fig.suptitle(f"{m.name} on {hw.name}: uniform against measured routing", x=0.01, ha="left")
    return fig


def skew_rows(model="Qwen3.6-35B-A3B", hardware="B200", *, S=512, drafter="Qwen3.6-MTP", c_draft=None, alpha=None,
              batches=(1, 2, 4, 8, 16, 32, 64, 256, 1024), popularity=None, gamma_max=16):
    """Rows (batch, experts per layer touched by a plain step: uniform,
    skewed; verify-2 over plain: uniform, skewed; gamma* and speedup:
    uniform, skewed)."""
    p = _moe.measured_popularity() if popularity is None else popularity
    m, hw = resolve(model, hardware)
    priced = _routing_pricings(m, hw, S, drafter, c_draft, p)
    rows = []
    for b in batches:
        row = [b]
        B = np.asarray(float(b))
        for key in ("uniform", "skewed"):
            row.append(float(priced[key].step_model.experts_touched(B, np.asarray(1.0))))
        for key in ("uniform", "skewed"):
            st = priced[key].step_model
            row.append(float(st.time(B, 2.0, S) / st.time(B, 1.0, S)))
        for key in ("uniform", "skewed"):
            pr = priced[key]
            acceptance = pr.measured_acceptance() if alpha is None else _acc.check_alpha(alpha)
            g, sp = _spec.best_gamma(pr, acceptance, B, np.asarray(float(S)), gamma_max)
            row += [g, sp]
        rows.append(tuple(row))
    return rows


# --- engine measurements -------------------------------------------------------------------


def engine_speedups(runs=None):
    """Left: DeepSeek-V3 on 8 H200 with tensor parallelism, speedup of three
    MTP drafts (alpha 0.68) against batch under each step time, with the
    SGLang documentation's measured points. Right: Qwen3-235B-A22B with
    EAGLE-3, throughput over draft lengths relative to one draft, at batch 1
    and 64, measured (markers) and modelled (lines)."""
    docs = _eng.run("sglang-docs")
    sweep = _eng.gamma_sweep("sglang-autospec")
    B = integer_batches(1, 256, 120).astype(float)
    fig = _style.new_figure((9.6, 5.0))
    with _style.style():
        left, right = fig.subplots(1, 2)
        for how in ("roofline", "calibrated", "per_token"):
            left.plot(B, _eng.speedup(docs, how, B), color=STEP_TIME_COLORS[how], label=STEP_TIME_LABELS[how],
                      ls="--" if how == "roofline" else "-", gid=f"docs_{how}")
        left.plot(docs.batches, docs.measured["speedup"], "*", color=COLORS["moe"], ms=13, mec="k", mew=0.6,
                  label="measured (SGLang docs)", gid="docs_measured")
        left.axhline(1.0, color=COLORS["ridge"], lw=0.8, ls=":")
        _log_axis(left.xaxis)
        left.set_xlabel("batch (sequences)")
        left.set_ylabel("speedup over plain decoding")
        left.set_title(f"DeepSeek-V3, 8 x H200 (TP): \u03b3 = {docs.gamma}, \u03b1 = {docs.alpha:g}", loc="left",
                       fontsize=10)
        left_handles = left.get_lines()[:4]
        g = sweep["gammas"]
        for i, b in enumerate(sweep["batches"]):
            if b not in (1, 64):
                continue
            color = CYCLE[0] if b == 1 else CYCLE[3]
            right.plot(g, sweep["measured"][i], "o", color=color, ms=6, label=f"B = {b:g}: measured",
                       gid=f"sweep_measured_{b:g}")
            right.plot(g, sweep["per_token"][i], "-", color=color, label=f"B = {b:g}: calibrated, per position",
                       gid=f"sweep_per_token_{b:g}")
            right.plot(g, sweep["roofline"][i], "--", color=color, lw=1.3, label=f"B = {b:g}: roofline",
                       gid=f"sweep_roofline_{b:g}")
        right.axhline(1.0, color=COLORS["ridge"], lw=0.8, ls=":")
        right.set_xlabel("draft length \u03b3 (SGLang num_steps)")
        right.set_ylabel("throughput / throughput at \u03b3 = 1")
        right.set_title("Qwen3-235B-A22B + EAGLE-3, SGLang", loc="left", fontsize=10)
        left.legend(handles=left_handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncols=2,
                    frameon=False)
        right.legend(fontsize=8, ncols=2, loc="upper center", bbox_to_anchor=(0.5, -0.17), frameon=False)
    return fig


def engine_rows(points=None):
    """Rows of the comparison table: source, setting, measured, roofline,
    calibrated, per position, anchored (ranges where the batch is unknown)."""
    points = _eng.comparison() if points is None else points
    rows = []
    for p in points:
        r = p.run
        rows.append((r.label, p.at, p.measured, _fmt(p.roofline), _fmt(p.calibrated), _fmt(p.per_token),
                     _fmt(p.anchored)))
    return rows


def _fmt(value):
    if isinstance(value, tuple):
        return f"{value[0]:.2f}\u2013{value[1]:.2f}"
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "\u2013"
    return f"{value:.2f}"


# --- gamma* with either step time (a live figure) -------------------------------------------


class StepTimeGammaPlot(Plot):
    """gamma* against batch with the roofline and the calibrated step time,
    on ``tp`` GPUs, with the batches that cannot fit hatched."""

    name = "step_time_gamma"
    defaults = {"S": 4096, "alpha": 0.75, "c_draft": 0.10, "tp": 1, "gamma_max": 16, "batch_range": BATCH_RANGE,
                "points": 300}

    def _build(self):
        ax = self.ax = self.figure.add_subplot()
        self.lines = {how: ax.plot([], [], color=STEP_TIME_COLORS[how], drawstyle="steps-mid",
                                   ls="--" if how == "roofline" else "-", label=STEP_TIME_LABELS[how],
                                   gid=f"gamma_{how}")[0] for how in ("roofline", "calibrated")}
        self.memory_band = None
        _log_axis(ax.xaxis)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("batch (sequences)")
        ax.set_ylabel("optimal draft length \u03b3*")

    def _draw(self, S, alpha, c_draft, tp, gamma_max, batch_range, points):
        S = float(checked_array("S", S, lo=0, lo_open=True))
        tp = checked_int("tp", tp, lo=1, hi=_capacity.MAX_TP)
        B = integer_batches(batch_range[0], batch_range[1], points)
        self.batches, self.gamma_star, self.speedup = B, {}, {}
        top = 6
        for how, line in self.lines.items():
            g, sp = _spec.optimal_gamma(alpha, B, S, c_draft, self.model, self.hardware, gamma_max, step_time=how,
                                        tp=tp)
            self.gamma_star[how], self.speedup[how] = g, sp
            line.set_data(B, g)
            top = max(top, int(g.max()) + 1)
        ax = self.ax
        if self.memory_band is not None:
            self.memory_band.remove()
            self.memory_band = None
        self.max_batch = memory_limit(self.model, self.hardware, S, tp)
        handles = list(self.lines.values())
        if self.max_batch is not None and self.max_batch < B[-1]:
            lo = max(float(B[0]), self.max_batch + 0.5)
            self.memory_band = memory_patch(ax, [(lo, 0), (B[-1], 0), (B[-1], 1), (lo, 1)])
            self.memory_band.set_transform(ax.get_xaxis_transform())
            handles.append(self.memory_band)
        ax.set_xlim(B[0], B[-1])
        ax.set_ylim(0, top + 1)
        where = self.hardware.name if tp == 1 else f"{tp} x {self.hardware.name}"
        self._title(ax, f"\u03b3* with either step time: {self.model.name} on {where}\n"
                        f"S = {S:,.0f}, \u03b1 = {float(alpha):.0%}, drafter {float(c_draft):.0%} of a step")
        self._legend(ax, handles, loc="upper right", fontsize=8.5)


def step_time_gamma(model=None, hardware=None, **params):
    """gamma* against batch under the roofline and the calibrated step time.
    Parameters: ``S``, ``alpha``, ``c_draft``, ``tp``, ``gamma_max``."""
    return StepTimeGammaPlot(model=model, hardware=hardware, **params).figure


__all__ = [
    "StepTimeGammaPlot",
    "ablation_rows",
    "calibrated_tpot",
    "capacity_limits",
    "capacity_rows",
    "engine_rows",
    "engine_speedups",
    "held_out_rows",
    "skew_effects",
    "skew_rows",
    "step_time_gamma",
    "width_depth",
]
