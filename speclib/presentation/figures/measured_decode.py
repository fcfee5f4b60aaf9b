"""Figures and tables of the chapter "The roofline against measured
decoding": measured time per output token against the roofline, by chip,
tensor-parallel width and framework; the time the roofline does not count;
and the ratio tables.

These figures have no controls: their compute functions read the measured
runs and the roofline's predictions (:mod:`speclib.evidence.validation`),
and their panels follow the chips in the data.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from ...evidence import validation as _val
from ..definition import Axis, Figure, HLine, Key, Line, Panel, Points, Text
from ..style import CYCLE
from ..tables import NumberTable
from .common import TP_COLORS

FRAMEWORK_MARKERS = {"vLLM": "o", "TRT": "s"}
TPOT_TICKS = (1, 2, 5, 10, 20, 50, 100)
CONCURRENCIES = (4, 8, 16, 32, 64, 128)


def _compared(comparison):
    """``comparison``, or the roofline's comparison with every measured run."""
    return _val.compare() if comparison is None else comparison


def _chip_panels(y_label, series, **y):
    """Panels made from the data: one per chip, its note then ``series(chip)``
    against concurrency; the y axis (log, ``y``) labelled in the first column."""
    return lambda data: tuple(
        Panel(Axis("concurrent requests", "log2", ticks=CONCURRENCIES), Axis(y_label if i % 3 == 0 else "", "log", **y),
              (Text(0.5, 0.5, f"{{{chip}_note}}", coords="axes", align="center"), *series(chip)), title=chip, legend="")
        for i, chip in enumerate(data["chips"]))


# --- measured TPOT against the roofline ------------------------------------------------


def _measured_tpot(p, xp):
    comparison = _compared(p.comparison)
    chips = _val.chips_with_runs(p.workload, p.precision)
    conc, tp, fw = comparison.column("concurrency"), comparison.column("tp"), comparison.column("framework")
    inp, out_len = _val.WORKLOADS[p.workload]
    out = {"chips": chips, "kv": comparison.kv_precision, "inp": inp, "out_len": out_len}
    for chip in chips:
        idx = comparison.select(workload=p.workload, chip=chip, precision=p.precision)
        out[f"{chip}_note"] = ("no hardware preset" if chip in comparison.missing
                               else f"no {p.precision} runs" if len(idx) == 0 else "")
        for n in _val.TP_WIDTHS:
            sel = idx[tp[idx] == n]
            line = sel[np.argsort(conc[sel])]
            if len(line):  # the roofline does not depend on the framework: one line per TP
                line = line[fw[line] == comparison.records[line[0]].framework]
            out[f"{chip}_tp{n}_x"] = conc[line].astype(float)
            out[f"{chip}_tp{n}_pred"] = comparison.predicted_s[line] * 1e3
            for f in FRAMEWORK_MARKERS:
                pts = sel[fw[sel] == f]
                out[f"{chip}_{f}_tp{n}_x"] = conc[pts].astype(float)
                out[f"{chip}_{f}_tp{n}_ms"] = comparison.measured_s[pts] * 1e3
    return out


def _tpot_series(chip):
    for n in _val.TP_WIDTHS:
        yield Line(f"{chip}_tp{n}_x", f"{chip}_tp{n}_pred", color=TP_COLORS[n], dash="dashed", width=1.3)
        for f, marker in FRAMEWORK_MARKERS.items():
            yield Points(f"{chip}_{f}_tp{n}_x", f"{chip}_{f}_tp{n}_ms", color=TP_COLORS[n], marker=marker,
                         filled=f == "vLLM", gid=f"measured_{chip}_{f}_tp{n}")


measured_tpot = Figure(
    name="measured_tpot",
    title="Llama-3.3-70B, {precision}, {inp:,} in / {out_len:,} out tokens: measured TPOT against the roofline "
          "({kv} KV cache)",
    compute=_measured_tpot, panels=_chip_panels("TPOT (ms)", _tpot_series, ticks=TPOT_TICKS), columns=3,
    size=(9.0, 5.8), params={"workload": "1k1k", "precision": "fp8", "comparison": None},
    keys=(*(Key(f"TP = {n}", color=TP_COLORS[n]) for n in _val.TP_WIDTHS), Key("measured, vLLM", marker="o"),
          Key("measured, TRT-LLM", marker="s", filled=False), Key("roofline", dash="dashed")),
    doc="Measured TPOT (markers: circles vLLM, squares TRT-LLM) and the roofline (dashed) against concurrency, one "
        "panel per chip that has runs at this precision, colour = tensor-parallel width.")


# --- the time the roofline does not count -------------------------------------------------


def _excess(p, xp):
    comparison = _compared(p.comparison)
    tp = comparison.column("tp")
    inp, out_len = _val.WORKLOADS[p.workload]
    out = {"series": [], "inp": inp, "out_len": out_len}
    for i, chip in enumerate(_val.CHIPS):
        for fw in FRAMEWORK_MARKERS:
            sel = comparison.select(workload=p.workload, precision=p.precision, concurrency=p.concurrency, chip=chip,
                                    framework=fw)
            if len(sel) == 0:
                continue
            sel = sel[np.argsort(tp[sel])]
            out[f"{chip}_{fw}_tp"] = tp[sel].astype(float)
            out[f"{chip}_{fw}_excess"] = (comparison.measured_s[sel] - comparison.predicted_s[sel]) * 1e3
            out["series"].append((chip, fw, CYCLE[i % len(CYCLE)]))
    return out


def _excess_panels(data):
    series = tuple(Line(f"{chip}_{fw}_tp", f"{chip}_{fw}_excess", label=f"{chip} {fw}", color=c,
                        marker=FRAMEWORK_MARKERS[fw], dash="solid" if fw == "vLLM" else "dotted",
                        gid=f"excess_{chip}_{fw}") for chip, fw, c in data["series"])
    return (Panel(Axis("tensor-parallel GPUs", "log2", ticks=(1, 2, 4, 8)),
                  Axis("measured − roofline TPOT (ms)", lo=0), series,
                  title="Time the roofline does not count: {precision}, {concurrency} concurrent requests, "
                        "{inp:,}/{out_len:,}", legend="upper right"),)


roofline_excess = Figure(
    name="roofline_excess", title="", compute=_excess, panels=_excess_panels, size=(7.0, 3.8),
    params={"workload": "1k1k", "precision": "fp8", "concurrency": 4, "comparison": None},
    doc="Measured minus predicted TPOT at one concurrency against the tensor-parallel width, per chip and "
        "framework: the time a step spends on work the roofline does not count.")


# --- measured over predicted, every run ------------------------------------------------------


def _ratio(p, xp):
    comparison = _compared(p.comparison)
    conc = comparison.column("concurrency").astype(float)
    tp, fws, wls, precs = (comparison.column(k) for k in ("tp", "framework", "workload", "precision"))
    out = {"chips": list(_val.CHIPS), "which": "all precisions (fp4 faded)" if p.precision is None else p.precision}
    for chip in _val.CHIPS:
        where = dict(chip=chip) if p.precision is None else dict(chip=chip, precision=p.precision)
        idx = comparison.select(**where)
        out[f"{chip}_note"] = "no hardware preset" if chip in comparison.missing else ""
        # the workloads nudged apart so that their markers do not overlap
        for n, fw, (wl, nudge), prec in product(_val.TP_WIDTHS, FRAMEWORK_MARKERS, (("1k1k", 0.93), ("1k8k", 1.07)),
                                                ("fp8", "fp4")):
            sel = idx[(tp[idx] == n) & (fws[idx] == fw) & (wls[idx] == wl) & (precs[idx] == prec)]
            out[f"{chip}_{n}_{fw}_{wl}_{prec}_x"] = conc[sel] * nudge
            out[f"{chip}_{n}_{fw}_{wl}_{prec}_y"] = comparison.ratio[sel]
    return out


def _ratio_series(chip):
    yield HLine(1.0, color="gutter", dash="solid", width=1.0)
    for n, (fw, marker), wl, (prec, alpha) in product(_val.TP_WIDTHS, FRAMEWORK_MARKERS.items(), ("1k1k", "1k8k"),
                                                      (("fp8", 0.9), ("fp4", 0.5))):
        yield Points(f"{chip}_{n}_{fw}_{wl}_{prec}_x", f"{chip}_{n}_{fw}_{wl}_{prec}_y", color=TP_COLORS[n],
                     marker=marker, size=4, filled=wl == "1k1k", alpha=alpha)


tpot_ratio = Figure(
    name="tpot_ratio",
    title="Llama-3.3-70B: measured over roofline TPOT, {which}; below the red line the roofline is beaten",
    compute=_ratio, columns=3, size=(9.0, 5.8), params={"precision": None, "comparison": None},
    panels=_chip_panels("measured / roofline", _ratio_series, lo=0.5, hi=20, ticks=(0.5, 1, 2, 5, 10, 20)),
    keys=(*(Key(f"TP = {n}", color=TP_COLORS[n], marker="o") for n in _val.TP_WIDTHS), Key("1k1k", marker="o"),
          Key("1k8k", marker="o", filled=False), Key("TRT-LLM", marker="s")),
    doc="Measured / predicted TPOT against concurrency for every run, one panel per chip; colour = TP, filled = "
        "1k1k, hollow = 1k8k, circles vLLM, squares TRT-LLM.")


# --- tables ------------------------------------------------------------------------------


def _fmt_range(values) -> str:
    if len(values) == 0:
        return "-"
    return f"{np.median(values):.2f} ({np.min(values):.2f}-{np.max(values):.2f})"


def ratio_table(comparison=None, *, little: bool = False) -> NumberTable:
    """Measured / predicted TPOT per workload, chip, framework and precision:
    the median over concurrencies (and its min-max) at each TP, and how many
    runs beat the roofline."""
    comparison = _compared(comparison)
    rows = [(*key, *(_fmt_range(by_tp[n]) for n in _val.TP_WIDTHS), str(below))
            for key, by_tp, below in comparison.ratio_groups(little)]
    batch = "the decode batch from Little's law" if little else "batch = concurrency"
    note = f" Skipped (no hardware preset): {', '.join(comparison.missing)}." if comparison.missing else ""
    caption = (f"Measured / predicted TPOT, Llama-3.3-70B, {batch}, {comparison.kv_precision} KV cache: "
               f"median over concurrencies (min-max) at each tensor-parallel width; "
               f"last column counts runs faster than the roofline.{note}")
    columns = ("workload", "chip", "framework", "precision", *(f"TP={n}" for n in _val.TP_WIDTHS), "below")
    return NumberTable(columns, tuple(rows), caption=caption, css_class="speclib-ratio-table", align="llll")


def below_roofline_table(comparison=None) -> NumberTable:
    """The runs measured faster than the roofline at batch = concurrency, with
    what their own throughput says the decode batch really was."""
    c = _compared(comparison)
    rows = tuple((r.workload, r.chip, r.framework, r.precision, f"{r.tp}", f"{r.concurrency}",
                  f"{r.ttft_ms / 1e3:.1f}", f"{r.tpot_ms:.2f}", f"{c.predicted_s[i] * 1e3:.2f}",
                  f"{c.little_batch[i]:.1f}", f"{c.predicted_little_s[i] * 1e3:.2f}")
                 for i in c.below_roofline() for r in (c.records[i],))
    columns = ("workload", "chip", "framework", "prec", "TP", "conc", "TTFT s", "TPOT ms", "pred ms", "Little B",
               "pred(B) ms")
    caption = ("Runs faster than the roofline at batch = concurrency. TTFT: time to first token; "
               "pred: roofline at batch = concurrency; Little B: decode batch implied by the run's "
               "throughput and TPOT; pred(B): roofline at that batch.")
    return NumberTable(columns, rows, caption=caption, css_class="speclib-below-table", align="llll")


def consistency_table(kv_precisions=("fp8", "bf16"), records=None) -> NumberTable:
    """How many runs beat the roofline under each KV-cache precision assumed,
    at batch = concurrency and at the Little's-law decode batch, and how far
    the Little's-law batch sits from the concurrency."""
    rows = tuple((k["kv_precision"], str(k["runs"]), str(k["below"]), str(k["below_little"]),
                  ", ".join(f"{v:.2f}" for v in k["little_share"]))
                 for k in _val.kv_consistency(kv_precisions, records))
    columns = ("KV cache", "runs", "below roofline, batch = concurrency", "below roofline, Little's-law batch",
               "Little batch / concurrency: min, median, max")
    caption = "Runs measured faster than the roofline, by KV-cache precision assumed in the prediction"
    return NumberTable(columns, rows, caption=caption, css_class="speclib-consistency-table", align="l")
