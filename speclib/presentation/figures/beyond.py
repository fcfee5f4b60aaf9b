"""Figures of the "Beyond the paper" chapters: measured acceptance curves,
expert parallelism, and the roofline against measured decode times.

Each function returns a matplotlib Figure made with :func:`._style.new_figure`
(shown once when it ends a notebook cell). All numbers come from
:mod:`speclib.acceptance`, :mod:`speclib.speculation`, :mod:`speclib.parallel`
and :mod:`speclib.validation`; nothing here re-derives the model.
"""
from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

from ..._checks import checked_array
from ...core import parallel as _par
from ...evidence import validation as _val
from ...presets import resolve
from . import _style
from ._style import COLORS, CYCLE
from .paper import integer_batches

#: Colours of the tensor-parallel widths and of the EP group sizes.
TP_COLORS = {1: CYCLE[0], 2: CYCLE[1], 4: CYCLE[2], 8: CYCLE[3]}
G_COLORS = (COLORS["total"], CYCLE[0], CYCLE[3], CYCLE[2], CYCLE[4])
FRAMEWORK_MARKERS = {"vLLM": "o", "TRT": "s"}


def _log_batch_axis(ax, label="batch (sequences)"):
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(_style.batch_label))
    ax.set_xlabel(label)


# --- the roofline against measurements -------------------------------------------------


TPOT_TICKS = (1, 2, 5, 10, 20, 50, 100)
CONCURRENCIES = (4, 8, 16, 32, 64, 128)


def _concurrency_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(CONCURRENCIES))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _chip_panels(fig, n=len(_val.CHIPS)):
    cols = min(3, n)
    rows = int(np.ceil(n / cols))
    axes = fig.subplots(rows, cols, sharex=True, squeeze=False)
    return axes.ravel()


def measured_tpot(workload="1k1k", precision="fp8", comparison=None):
    """Measured TPOT (markers: circles vLLM, squares TRT-LLM) and the roofline
    (dashed) against concurrency, one panel per chip that has runs at this
    precision, colour = tensor-parallel width. A chip with runs but no hardware
    preset gets a blank panel that says so."""
    comparison = _val.compare() if comparison is None else comparison
    measured = _val.load_measurements()
    chips = [c for c in _val.CHIPS if any(r.chip == c and r.precision == precision and r.workload == workload
                                          for r in measured)]
    rows = int(np.ceil(len(chips) / 3))
    fig = _style.new_figure((9.0 if len(chips) > 2 else 8.5, 0.6 + 2.6 * rows))
    with _style.style():
        axes = _chip_panels(fig, len(chips))
        conc = comparison.column("concurrency")
        tp = comparison.column("tp")
        for ax in axes[len(chips):]:
            ax.set_visible(False)
        for ax, chip in zip(axes, chips):
            ax.set_title(chip, loc="left")
            idx = comparison.select(workload=workload, chip=chip, precision=precision)
            if chip in comparison.missing:
                ax.text(0.5, 0.5, "no hardware preset", transform=ax.transAxes, ha="center", va="center")
            elif len(idx) == 0:
                ax.text(0.5, 0.5, f"no {precision} runs", transform=ax.transAxes, ha="center", va="center")
            for n in _val.TP_WIDTHS:
                sel = idx[tp[idx] == n]
                if len(sel) == 0:
                    continue
                color = TP_COLORS[n]
                line = sel[np.argsort(conc[sel])]
                # the roofline does not depend on the framework: one line per TP
                first_fw = comparison.records[line[0]].framework
                line = line[comparison.column("framework")[line] == first_fw]
                ax.plot(conc[line], comparison.predicted_s[line] * 1e3, "--", color=color, lw=1.3)
                for fw, marker in FRAMEWORK_MARKERS.items():
                    pts = sel[comparison.column("framework")[sel] == fw]
                    ax.plot(conc[pts], comparison.measured_s[pts] * 1e3, marker, color=color, ms=4.5, ls="none",
                            mfc=color if fw == "vLLM" else "none", gid=f"measured_{chip}_{fw}_tp{n}")
            _concurrency_axis(ax)
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(FixedLocator(TPOT_TICKS))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _p: f"{y:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        cols = min(3, len(chips))
        for ax in axes[len(chips) - cols:len(chips)]:
            ax.set_xlabel("concurrent requests")
        for ax in axes[::cols]:
            ax.set_ylabel("TPOT (ms)")
        handles = [Line2D([], [], color=TP_COLORS[n], lw=2, label=f"TP = {n}") for n in _val.TP_WIDTHS]
        handles += [Line2D([], [], color="k", marker="o", ls="none", label="measured, vLLM"),
                    Line2D([], [], color="k", marker="s", mfc="none", ls="none", label="measured, TRT-LLM"),
                    Line2D([], [], color="k", ls="--", lw=1.3, label="roofline")]
        fig.legend(handles=handles, loc="outside lower center", ncol=4 if len(chips) <= 2 else 7, fontsize=8)
        inp, out = _val.WORKLOADS[workload]
        fig.suptitle(f"Llama-3.3-70B, {precision}, {inp:,} in / {out:,} out tokens: measured TPOT against the "
                     f"roofline ({comparison.kv_precision} KV cache)", x=0.01, ha="left", fontsize=10)
    return fig


def roofline_excess(workload="1k1k", precision="fp8", concurrency=4, comparison=None):
    """Measured minus predicted TPOT at one concurrency against the
    tensor-parallel width, per chip and framework: the time a step spends
    on work the roofline does not count."""
    comparison = _val.compare() if comparison is None else comparison
    fig = _style.new_figure((7.0, 3.8))
    with _style.style():
        ax = fig.add_subplot()
        idx = comparison.select(workload=workload, precision=precision, concurrency=concurrency)
        tp = comparison.column("tp")
        chips = comparison.column("chip")
        fws = comparison.column("framework")
        for i, chip in enumerate(_val.CHIPS):
            for fw, marker in FRAMEWORK_MARKERS.items():
                sel = idx[(chips[idx] == chip) & (fws[idx] == fw)]
                if len(sel) == 0:
                    continue
                sel = sel[np.argsort(tp[sel])]
                excess = (comparison.measured_s[sel] - comparison.predicted_s[sel]) * 1e3
                color = CYCLE[i % len(CYCLE)]
                ax.plot(tp[sel], excess, marker + ("-" if fw == "vLLM" else ":"), color=color,
                        mfc=color if fw == "vLLM" else "none", label=f"{chip} {fw}", gid=f"excess_{chip}_{fw}")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8])
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: f"{x:g}"))
        ax.set_xlabel("tensor-parallel GPUs")
        ax.set_ylabel("measured \u2212 roofline TPOT (ms)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, ncol=2, loc="upper right")
        inp, out = _val.WORKLOADS[workload]
        ax.set_title(f"Time the roofline does not count: {precision}, {concurrency} concurrent requests, "
                     f"{inp:,}/{out:,}", loc="left")
    return fig


def tpot_ratio(precision=None, comparison=None):
    """Measured / predicted TPOT against concurrency for every run, one panel
    per chip; colour = TP, filled = 1k1k, hollow = 1k8k, circles vLLM,
    squares TRT-LLM. ``precision`` restricts to "fp8" or "fp4"."""
    comparison = _val.compare() if comparison is None else comparison
    fig = _style.new_figure((9.0, 5.6))
    with _style.style():
        axes = _chip_panels(fig)
        conc = comparison.column("concurrency").astype(float)
        tp = comparison.column("tp")
        for ax, chip in zip(axes, _val.CHIPS):
            ax.set_title(chip, loc="left")
            where = dict(chip=chip) if precision is None else dict(chip=chip, precision=precision)
            idx = comparison.select(**where)
            if chip in comparison.missing:
                ax.text(0.5, 0.5, "no hardware preset", transform=ax.transAxes, ha="center", va="center")
            for i in idx:
                r = comparison.records[i]
                color = TP_COLORS[r.tp]
                # nudge the two workloads apart so their markers do not overlap
                x = conc[i] * (0.93 if r.workload == "1k1k" else 1.07)
                ax.plot(x, comparison.ratio[i], FRAMEWORK_MARKERS.get(r.framework, "o"), color=color, ms=4,
                        mfc=color if r.workload == "1k1k" else "none", alpha=0.9 if r.precision == "fp8" else 0.5)
            ax.axhline(1.0, color=COLORS["gutter"], lw=1.0)
            _concurrency_axis(ax)
            ax.set_yscale("log")
            ax.set_ylim(0.5, 20)
            ax.yaxis.set_major_locator(FixedLocator([0.5, 1, 2, 5, 10, 20]))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _p: f"{y:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
        for ax in axes[-3:]:
            ax.set_xlabel("concurrent requests")
        for ax in axes[::3]:
            ax.set_ylabel("measured / roofline")
        handles = [Line2D([], [], color=TP_COLORS[n], marker="o", ls="none", label=f"TP = {n}") for n in _val.TP_WIDTHS]
        handles += [Line2D([], [], color="k", marker="o", ls="none", label="1k1k"),
                    Line2D([], [], color="k", marker="o", mfc="none", ls="none", label="1k8k"),
                    Line2D([], [], color="k", marker="s", ls="none", label="TRT-LLM")]
        fig.legend(handles=handles, loc="outside lower center", ncol=7, fontsize=8)
        which = "all precisions (fp4 faded)" if precision is None else precision
        fig.suptitle(f"Llama-3.3-70B: measured over roofline TPOT, {which}; below the red line the roofline is beaten",
                     x=0.01, ha="left", fontsize=10)
    return fig


__all__ = [
    "measured_tpot",
    "roofline_excess",
    "tpot_ratio",
]
