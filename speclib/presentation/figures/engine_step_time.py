"""Figures and tables of the first half of the chapter "How far to trust the step":
measured decoding against the roofline (the measured time per output
token by chip, tensor-parallel width and framework, the time the roofline
does not count, the ratio tables), the step every model is priced by (its
physics and its parts, each engine's overlap scheduling), DeepSeek-R1's
decode and MTP runs against it, its held-out errors and the ablation of its
terms, the targets on plain decoding, and gamma* under either step time.
Each ``*_facts`` function returns the numbers the chapter's prose glues.

The figures of measured decoding have no controls: their compute functions
read the measured runs and the roofline's predictions
(:mod:`speclib.evidence.validation`), and their panels follow the chips in
the data.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from ..._checks import checked_int
from ...core import capacity as _capacity
from ...core.decode import tpot as _speclib_tpot
from ...core.deployment import Deployment
from speclib.evidence import decode_runs as _dec
from speclib.calibration import held_out as _ho
from speclib.calibration import step_report as _rep
from speclib.evidence import validation as _val
from speclib.calibration.step_fit import decode_rows
from ...presets import resolve
from ..definition import Axis, Choice, Figure, HLine, Key, Line, Panel, Points, Text
from ..style import COLORS, CYCLE
from ..tables import NumberTable
from . import common
from .common import TP_COLORS
from .draft_length import integer_batches


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
                        "{inp:,}/{out_len:,}", legend="below"),)


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


# --- the step time calibrated on measured decoding -------------------------------------

#: How each way of timing a step is drawn, and named.
STEP_TIME_COLORS = {"roofline": COLORS["total"], "calibrated": CYCLE[1], "per_token": CYCLE[2], "anchored": CYCLE[4]}
STEP_TIME_LABELS = {"roofline": "roofline (the paper's step)", "calibrated": "calibrated step time",
                    "per_token": "calibrated, per-sequence time per position",
                    "anchored": "roofline + the run's own fixed time"}


def _decode_runs(p):
    """The indices of the decode runs of ``p``'s model, chip, engine, weights and workload."""
    runs = decode_rows()[0]
    family = resolve(p.model, None)[0].family
    return [i for i, r in enumerate(runs) if r.family == family and r.chip == resolve(None, p.chip)[1].name
            and r.engine == p.engine and r.weights == p.precision and r.workload == p.workload]


def _tpot(p, xp):
    runs, y = decode_rows()
    held = _ho.stored_decode_by_workload() if p.held is None else p.held
    layouts = {}
    for i in _decode_runs(p):
        layouts.setdefault(runs[i].layout, []).append(i)
    out = {"layouts": [], "model": p.model, "chip": resolve(None, p.chip)[1].name}
    for k, (layout, idx) in enumerate(sorted(layouts.items(), key=lambda kv: (runs[kv[1][0]].tp, kv[0]))):
        idx = np.array(idx)[np.argsort([runs[i].concurrency for i in idx], kind="stable")]
        conc = np.array([runs[i].concurrency for i in idx], dtype=float)
        out["layouts"].append(layout)
        out[f"c{k}"], out[f"measured{k}"] = conc, y[idx] * 1e3
        one = sorted({c: i for c, i in zip(conc, idx)}.items())  # one prediction per concurrency
        out[f"cl{k}"] = np.array([c for c, _ in one])
        dep = runs[idx[0]]
        roof = [_tpot_of(c, dep, "roofline") for c, _ in one]
        out[f"roofline{k}"] = np.array(roof) * 1e3
        out[f"calibrated{k}"] = np.array([held[i] for _, i in one]) * 1e3
    return out


def _tpot_of(concurrency, run, step_time):
    from ...core.decode import tpot

    return float(tpot(concurrency, run.context, workload=(run.input_len, run.output_len),
                      deployment=run.deployment(step_time)))


def _tpot_panels(data):
    series = []
    for k, layout in enumerate(data["layouts"]):
        c = CYCLE[k % len(CYCLE)]
        series += [Points(f"c{k}", f"measured{k}", color=c, size=4, alpha=0.7, gid=f"measured_{k}"),
                   Line(f"cl{k}", f"roofline{k}", color=c, dash="dashed", width=1.3, gid=f"roofline_{k}"),
                   Line(f"cl{k}", f"calibrated{k}", label=layout, color=c, width=1.8, gid=f"calibrated_{k}")]
    return (Panel(Axis("concurrent requests (decode batch)", "log", ticks=(1, 4, 16, 64, 256)),
                  Axis("time per output token (ms)", lo=0), tuple(series),
                  title="{model} on {chip}, {engine}, {precision}, {workload}: calibrated without this workload's runs",
                  legend="upper left"),)


calibrated_tpot = Figure(
    name="calibrated_tpot", title="", compute=_tpot, panels=_tpot_panels, size=(7.6, 4.4),
    params={"model": "Llama-3.3-70B", "chip": "B200", "engine": "vLLM", "precision": "fp8", "workload": "1k8k",
            "held": None},
    keys=(Key("measured", marker="o"), Key("calibrated (held out)"), Key("roofline (lower bound)", dash="dashed")),
    doc="Measured TPOT against concurrency for one model, chip, engine, precision and workload, one colour per "
        "layout: the measurement (markers; repeated runs of a configuration on other dates too), the roofline "
        "(dashed) and the calibrated prediction fitted without this workload's decode runs (solid).")


def held_out_rows(held=None, by=("model", "chip", "tp")):
    """Rows (group..., runs, median |error| %, max |error| %) of the decode
    runs, each predicted by the calibrated step fitted without its workload's
    decode runs."""
    runs, y = decode_rows()
    held = _ho.stored_decode_by_workload() if held is None else held
    e = held / y - 1.0
    groups = {}
    for i, r in enumerate(runs):
        key = tuple(getattr(r, f) for f in by)
        groups.setdefault(key, []).append(i)
    order = {c: i for i, c in enumerate(_val.CHIPS)}
    rows = []
    for key in sorted(groups, key=lambda k: tuple((order.get(v, len(order)), v) if isinstance(v, str) else (v, "")
                                                  for v in k)):
        err = np.abs(e[groups[key]])
        rows.append((*key, int(err.size), 100 * float(np.median(err)), 100 * float(np.max(err))))
    return rows


def ablation_rows():
    """Rows (variant, held out by chip: every decode run's median |error| and
    worst median signed error by concurrency, Llama's and DeepSeek's median,
    then by model family the speed-ups' median; all %)."""
    return [(label, *(100 * v for v in values)) for label, *values in _ho.stored_decode_ablation()]


def r1_decode_table() -> NumberTable:
    """DeepSeek-R1's decode runs (fp8, eight GPUs in plain tensor parallel)
    by chip, engine and workload: measured and predicted TPOT, the signed
    error, and the signed error held out by chip."""
    rows = tuple((chip, engine, wl, n, meas, pred, f"{100 * e:+.0f} %", f"{100 * h:+.0f} %")
                 for chip, engine, wl, n, meas, pred, e, h in _rep.r1_decode_rows())
    return NumberTable(("chip", "engine", "workload", "runs", "measured TPOT (ms)", "calibrated (ms)", "error",
                        "error, its chip held out"), rows, formats=("", "", "", "", ".1f", ".1f"), align="lll",
                       caption="DeepSeek-R1, fp8, 8 GPUs in tensor parallel (InferenceX): medians over each "
                               "configuration's runs, every concurrency and date; calibrated: speclib.tpot with the "
                               "shipped constants; held out by chip: fitted without any run on that chip")


def mtp_table() -> NumberTable:
    """DeepSeek-R1's MTP pairs (InferenceX) against the calibrated step with
    their model family held out, each point with its 80 % interval."""
    rows = tuple((label.replace(" (InferenceX)", "").replace(", MTP on/off", ""), b, g, f"{m:.2f}\u00d7",
                  f"{q:.2f}\u00d7 [{lo:.2f}\u2013{hi:.2f}]" if ok else f"{q:.2f}\u00d7 (sets the acceptance)")
                 for label, b, g, m, q, lo, hi, ok in _rep.mtp_rows())
    return NumberTable(("deployment and workload", "concurrency", "\u03b3", "measured", "predicted [80 %]"), rows,
                       align="lrrrr",
                       caption="DeepSeek-R1 with MTP over the same deployment without it, TPOT over TPOT at the same "
                               "concurrency; predicted by the calibrated step fitted without any DeepSeek run, the "
                               "acceptance (which InferenceX does not report) set by the smallest concurrency")


# --- gamma* with either step time ----------------------------------------------------------


def _step_time_gamma(p, xp):
    model, hw = resolve(p.model, p.hardware)
    tp = checked_int("tp", p.tp, lo=1, hi=_capacity.MAX_TP)
    B = xp.asarray(integer_batches(n=p.points))
    gammas = xp.arange(0, p.gamma_max + 1)[:, None]
    out = {"B": B, "model": model.name, "where": hw.name if tp == 1 else f"{tp} x {hw.name}"}
    for how in ("roofline", "calibrated"):
        out[f"gamma_{how}"], out[f"speedup_{how}"] = common.best(xp, common.deployed_speedups(
            Deployment(model, hw, step_time=how, tp=tp, attention="paper"), xp, p.alpha, gammas, B, p.S, p.c_draft))
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


# --- the numbers the chapter states ----------------------------------------------------------


def _median_ratios(comparison, *, precision, tp, little=True, **where):
    """Median measured / predicted TPOT of each (workload, chip, framework) group at ``tp``."""
    out = []
    for key, by_tp, _ in comparison.ratio_groups(little):
        group = dict(zip(("workload", "chip", "framework", "precision"), key))
        if group["precision"] == precision and all(group[k] == v for k, v in where.items()) and len(by_tp[tp]):
            out.append(float(np.median(by_tp[tp])))
    return np.array(out)


def decode_facts(comparison=None) -> dict:
    """Every number the chapter's prose states about measured decoding, computed
    from the data (the chapter glues them): counts of runs, the ratio ranges at
    one and eight GPUs, the time the roofline leaves out, the fp4 runs and the
    queueing run Little's law explains."""
    c = _compared(comparison)
    runs = _val.decoding_runs(c)
    model, _ = resolve(_val.MEASURED_MODEL, None)
    out = {"runs": len(c), "decoding_runs": len(runs), "queueing_runs": len(c) - len(runs)}
    one = _median_ratios(c, precision="fp8", tp=1)
    eight = _median_ratios(c, precision="fp8", tp=8)
    out.update(tp1_ratio_lo=float(one.min()), tp1_ratio_hi=float(one.max()), tp8_ratio_lo=float(eight.min()),
               tp8_ratio_hi=float(eight.max()))
    amd = _median_ratios(c, precision="fp8", tp=1, framework="vLLM")
    amd = np.array([r for r, key in zip(amd, [k for k, by, _ in c.ratio_groups(True) if k[3] == "fp8"
                                               and k[2] == "vLLM" and len(by[1])]) if key[1].startswith("MI")])
    out["amd_tp1_ratio"] = float(np.median(amd))
    fp4 = _median_ratios(c, precision="fp4", tp=8)
    out["fp4_tp8_ratio_hi"] = float(fp4.max())
    # the time the roofline leaves out, at the lowest concurrency (1k1k, fp8)
    idx = c.select(workload="1k1k", precision="fp8", concurrency=4)
    excess = (np.array([c.records[i].tpot_ms for i in idx]) - c.predicted_s[idx] * 1e3)
    out.update(excess_lo_ms=float(excess.min()), excess_hi_ms=float(excess.max()))
    tp8 = c.select(precision="fp8", tp=8)
    out.update(tp8_roofline_lo_ms=float(c.predicted_s[tp8].min() * 1e3),
               tp8_roofline_hi_ms=float(c.predicted_s[tp8].max() * 1e3))
    # the queueing run that beats the roofline at its nominal concurrency
    below = list(c.below_roofline())
    if below:
        i = below[0]
        r = c.records[i]
        out.update(below_tpot_ms=r.tpot_ms, below_pred_ms=float(c.predicted_s[i] * 1e3), below_ttft_s=r.ttft_ms / 1e3,
                   below_little=float(c.little_batch[i]), below_pred_little_ms=float(c.predicted_little_s[i] * 1e3),
                   below_concurrency=r.concurrency)
        # the same run as speclib.tpot prices a concurrency: what memory holds decodes, the rest queue
        served = Deployment(model, r.chip, tp=r.tp, weights=r.precision, kv_cache=c.kv_precision)
        context = float(_val.mean_decode_context(r.input_len, r.output_len))
        out.update(below_held=int(served.max_batch(context)),
                   below_pred_held_ms=float(_speclib_tpot(r.concurrency, context, deployment=served)) * 1e3)
    share = np.array([k["little_share"] for k in _val.kv_consistency(("fp8",))][0])
    out["little_share_median"] = float(share[1])
    return out


def calibration_facts(calibration=None) -> dict:
    """The numbers the chapter states about the calibrated step's decode
    side: how far each vendor's chips sit above the datasheet, the fixed
    times, the time per sequence and per MoE layer, attention's factor, the
    prefill's efficiency and the held-out errors across workloads and chips."""
    from ...core.calibrated import shipped_calibration
    from ...presets import hardware as hardware_preset

    cal = shipped_calibration() if calibration is None else calibration
    over = {v: [mu - 1 for chip, mu in cal.roofline_factor.items() if hardware_preset(chip).vendor == v]
            for v in ("NVIDIA", "AMD")}
    fixed = [a for by in cal.fixed_s.values() for a in by.values()]
    runs, y = decode_rows()
    fam = np.array([r.family for r in runs])
    by_workload = np.abs(_ho.stored_decode_by_workload() / y - 1)
    chip = _ho.stored_held_out("chip")
    rows = held_out_rows()
    medians = np.array([m for *_, n, m, w in rows]) / 100
    r1 = _rep.r1_decode_summary()
    out = {"nvidia_over_lo": min(over["NVIDIA"]), "nvidia_over_hi": max(over["NVIDIA"]),
           "amd_over_lo": min(over["AMD"]), "amd_over_hi": max(over["AMD"]),
           "fixed_lo_ms": 1e3 * min(fixed), "fixed_hi_ms": 1e3 * max(fixed),
           "per_sequence_us": 1e6 * cal.per_sequence_s, "prefill_factor": cal.prefill_factor,
           "combos": len(rows), "combos_below_10": int((medians < 0.10).sum()),
           "combos_below_15": int((medians < 0.15).sum()), "within_20": float((by_workload < 0.20).mean()),
           "llama_by_workload": float(np.median(by_workload[fam == "Llama"])),
           "r1_by_workload": float(np.median(by_workload[fam == "DeepSeek"])),
           "r1_runs": r1["runs"], "r1_median": r1["median_abs_error"], "r1_worst5": r1["worst_median_signed_5"],
           "r1_worst": r1["worst_median_signed"],
           "r1_worst_concurrency": max(r1["by_concurrency"], key=lambda row: abs(row[2]))[0],
           "r1_worst_concurrency_runs": max(r1["by_concurrency"], key=lambda row: abs(row[2]))[1],
           "r1_long_median": r1["long_prompt_median_abs_error"],
           "chip_decode_median": chip.decode_summary()["decode_median_abs_error"],
           "chip_decode_runs": chip.decode_summary()["decode_runs"],
           "chip_r1_median": chip.decode_summary(_dec.target_subset(runs))["decode_median_abs_error"]}
    for vendor in ("NVIDIA", "AMD"):
        out[f"moe_layer_us_{vendor.lower()}"] = 1e6 * cal.moe_layer_s.get(vendor, 0.0)
        out[f"attention_factor_{vendor.lower()}"] = cal.attention_factor_by_vendor.get(vendor, 0.0)
    return out



# --- the physics of one step: layout, collectives, experts, precision, prefill ---------------

#: The deployment the chapter takes a DeepSeek-R1 step apart on: eight H200 in plain tensor
#: parallelism under SGLang with fp8 weights, as InferenceX ran it.
R1_EXAMPLE = {"model": "DeepSeek-R1", "hardware": "H200", "tp": 8, "engine": "SGLang", "weights": "fp8"}


def r1_example(step_time="calibrated", **changes) -> Deployment:
    """:data:`R1_EXAMPLE` (with ``changes``) as a Deployment, with the KV
    cache its launch script sets (:func:`speclib.evidence.decode_runs.r1_kv_cache`)."""
    fields = {**R1_EXAMPLE, **changes}
    return Deployment(**fields, kv_cache=_dec.r1_kv_cache(fields["hardware"], fields["engine"]), step_time=step_time)


def _workload(name) -> tuple:
    from ...core.decode import check_workload

    return check_workload(name)


def step_parts(deployment=None, batches=(4, 64, 256), workload="1k1k") -> tuple:
    """One GPU's step of plain decoding taken apart, in ms, at each of
    ``batches`` and the mean decode context of ``workload``: (part, ms at
    each batch) rows, the parts of the deployment's calibrated step (its
    kernels by component, the collectives, the fixed, per-sequence and
    per-MoE-layer times) and the prefill of the workload's arriving
    requests, then their sum, the time per output token."""
    dep = r1_example() if deployment is None else deployment
    prompt, output = _workload(workload)
    S = float(_val.mean_decode_context(prompt, output))
    step = dep.pricing(whole_step=True).step_model
    B = np.asarray(batches, dtype=float)
    parts = {name: np.broadcast_to(np.asarray(t, dtype=float), B.shape)
             for name, t in step.component_times(B, np.ones_like(B), np.full_like(B, S)).items()}
    parts = {name: t for name, t in parts.items() if np.any(t > 0)}
    parts["prefill of arriving requests"] = (step.calibration.prefill_factor
                                             * dep.parallel_step().prefill_share(B, prompt, output))
    total = sum(parts.values())
    return tuple((name, *(1e3 * float(x) for x in t)) for name, t in (*parts.items(), ("time per output token",
                                                                                        total)))


def step_parts_table(deployment=None, batches=(4, 64, 256), workload="1k1k") -> NumberTable:
    """:func:`step_parts` as a table."""
    dep = r1_example() if deployment is None else deployment
    name = R1_EXAMPLE["model"] if deployment is None else dep.model.name
    prompt, output = _workload(workload)
    return NumberTable(("part of the step", *(f"batch {b} (ms)" for b in batches)), step_parts(dep, batches, workload),
                       formats=("",) + (".2f",) * len(batches), align="l",
                       caption=f"{name} on {dep.tp} \u00d7 {dep.hardware.name} "
                               f"({dep.layout}, {dep.engine}): one GPU's calibrated step of plain decoding, part by "
                               f"part, at the mean context of {prompt:,.0f}-token prompts and {output:,.0f}-token "
                               "outputs; the last row is their sum, what speclib.tpot gives for the workload")


#: The parts of a step that are its kernels' time (the rest: collectives, fixed and per-sequence times, prefill).
KERNEL_PARTS = ("dense", "ffn", "attention")


def parts_facts(rows=None, batches=(4, 64, 256)) -> dict:
    """Shares of the time per output token (:func:`step_parts`, by default
    the DeepSeek-R1 example at 8k/1k) at the smallest and the largest of
    ``batches``: the kernels', attention's, the collectives', the fixed
    time's and the prefill's."""
    rows = step_parts(batches=batches, workload="8k1k") if rows is None else rows
    parts = {r[0]: np.array(r[1:], dtype=float) for r in rows}
    total = parts.pop("time per output token")
    out = {"parts_first_batch": int(batches[0]), "parts_last_batch": int(batches[-1])}
    for where, i in (("first", 0), ("last", -1)):
        share = lambda *names: float(sum(parts.get(n, np.zeros_like(total))[i] for n in names) / total[i])  # noqa: E731
        out.update({f"kernel_share_{where}": share(*KERNEL_PARTS), f"attention_share_{where}": share("attention"),
                    f"comm_share_{where}": share("communication"), f"fixed_share_{where}": share("fixed per step"),
                    f"prefill_share_{where}": share("prefill of arriving requests"),
                    f"tpot_ms_{where}": float(total[i])})
    return out


def physics_facts() -> dict:
    """The numbers the chapter states about what a step of a split model
    costs: the all-reduce latencies of each chip's network at eight GPUs,
    DeepSeek-R1's all-reduces per step and their time, the cache each GPU
    reads under plain tensor parallelism (an MLA latent whole, a GQA cache by
    KV head, never below one head), the most loaded GPU under expert
    parallelism, the bytes of fp8 and fp4 weights and of the bf16 head,
    and the prefill's attention share at long and short prompts."""
    from ...core import moe as _moe
    from ...core.layout import ALLREDUCES_PER_LAYER, Layout, cache_share
    from ...presets import default_interconnect

    out = {}
    for chip, key in (("H200", "nvlink4"), ("B200", "nvlink5"), ("MI300X", "rccl")):
        out[f"allreduce_us_{key}"] = 1e6 * default_interconnect(chip).allreduce_latency_at(8)
    dep = r1_example()
    a = dep.model.step_architecture()
    out["r1_layers"], out["r1_moe_layers"] = int(a.n_layers), int(a.moe_layers)
    out["r1_allreduces"] = int(ALLREDUCES_PER_LAYER * a.n_layers)
    out["r1_allreduce_ms"] = 1e3 * float(dep.parallel_step().communication(4.0, 1.0))
    # the cache one GPU of eight reads, as a share of a sequence's whole cache
    for name, key in (("DeepSeek-R1", "mla"), ("Llama-3.3-70B", "llama"), ("Qwen3-235B-A22B", "qwen")):
        arch = resolve(name, None)[0].step_architecture()
        out[f"cache_share_{key}"] = float(cache_share(arch, Layout(8)))
        out[f"kv_heads_{key}"] = int(arch.kv_heads)
    # expert parallelism over eight GPUs: the most loaded GPU's token picks over the mean
    for B in (4, 64):
        _, served = _moe.rank_max_load(np.float64(B), a.top_k, a.n_routed, 8)
        out[f"ep_most_loaded_{B}"] = float(served)
        # DeepSeek-V3/R1's router picks within 4 of 8 expert groups, each group whole on one of the 8 GPUs
        _, grouped = _moe.rank_max_load(np.float64(B), a.top_k, a.n_routed, 8, groups=a.expert_groups)
        out[f"ep_grouped_{B}"] = float(grouped)
    out["r1_groups"], out["r1_topk_groups"] = a.expert_groups
    out.update(group_limited_runs())
    out["r1_experts"], out["r1_top_k"] = int(a.n_routed), int(a.top_k)
    # weights: fp8 and fp4 experts, the head in bf16
    fp4 = r1_example(weights="fp4").model.step_architecture()
    out["fp8_expert_bytes"], out["fp4_expert_bytes"] = float(a.ffn_bytes), float(fp4.ffn_bytes)
    out["head_gb"] = a.bf16_params * 2 / 1e9
    total = a.dense_params * a.dense_bytes + (a.n_shared + a.n_routed) * a.ffn_params * a.ffn_bytes
    out["r1_weights_gb"], out["r1_weights_gpu_gb"] = total / 1e9, total / 8 / 1e9
    # the prefill: attention's quadratic term as a share of a prompt's FLOPs
    for prompt, key in ((1024, "1k"), (8192, "8k")):
        I = _dec.R1_LENGTH_SCALE * prompt
        attention = a.attention_layers * a.prefill_flops_per_pair * I * (I - 1) / 2
        out[f"prefill_attention_share_{key}"] = attention / (2 * a.active_params * I + attention)
    parts = {wl: dict((row[0], row[2]) for row in step_parts(dep, (4, 64, 256), wl)) for wl in ("1k1k", "8k1k")}
    out["prefill_ms_1k1k_64"] = parts["1k1k"]["prefill of arriving requests"]
    out["prefill_ms_8k1k_64"] = parts["8k1k"]["prefill of arriving requests"]
    return out


# --- the hold-outs and the ablation in words ------------------------------------------------


def _direction(before: float, after: float, up: str = "rises", down: str = "falls") -> str:
    return up if after > before else down


def ablation_facts(rows=None) -> dict:
    """What each decode term does held out (:func:`ablation_rows`): for the
    shipped form and each variant, the decode runs' median |error| and worst
    median signed error by concurrency held out by chip, DeepSeek-R1's
    median, and the speed-ups' median held out by model family (%), with
    the direction each moves in, against the shipped form, as a verb."""
    rows = ablation_rows() if rows is None else rows
    keys = {"the shipped form": "shipped", "without attention's own factor": "no_attention",
            "without the time per MoE layer": "no_moe", "without either": "neither",
            "the fixed time scaled by layers": "layers", "the fixed time by chip alone": "chip_fixed",
            "the collectives not charged": "no_collectives"}
    out = {}
    fields = ("decode", "decode_worst", "llama", "r1", "speedup")
    for label, *values in rows:
        for field, v in zip(fields, values):
            out[f"abl_{keys[label]}_{field}"] = float(v)
    for key in keys.values():
        if key == "shipped" or f"abl_{key}_decode" not in out:  # the fixed time's variant is one of two
            continue
        for field in fields:
            out[f"abl_{key}_{field}_moves"] = _direction(out[f"abl_shipped_{field}"], out[f"abl_{key}_{field}"])
    return out


def r1_facts(rows=None) -> dict:
    """The numbers the chapter states about DeepSeek-R1's decode runs by chip
    and workload (:func:`speclib.calibration.step_report.r1_decode_rows`): how
    many configurations, how many of the 8k/1k ones are predicted too fast,
    and the chip whose runs are predicted worst with their chip held out."""
    rows = _rep.r1_decode_rows() if rows is None else rows
    long = [r for r in rows if r[2] == "8k1k"]
    worst = max(rows, key=lambda r: abs(r[7]))
    return {"r1_configs": len(rows), "r1_long_configs": len(long),
            "r1_long_too_fast": sum(1 for r in long if r[6] < 0),
            "r1_worst_chip": worst[0], "r1_worst_chip_engine": worst[1], "r1_worst_chip_workload": worst[2],
            "r1_worst_chip_error": float(worst[7]), "r1_worst_chip_in_sample": float(worst[6]),
            "r1_worst_chip_side": "too slow" if worst[7] > 0 else "too fast"}


def mtp_facts(rows=None) -> dict:
    """DeepSeek-R1's MTP pairs (:func:`speclib.calibration.step_report.mtp_rows`):
    how many deployments and points, how many points set an acceptance, and
    how many of the rest lie inside their 80 % interval, above it and below."""
    rows = _rep.mtp_rows() if rows is None else rows
    scored = [r for r in rows if r[7]]
    return {"mtp_pairs": len({r[0] for r in rows}), "mtp_points": len(rows), "mtp_scored": len(scored),
            "mtp_inside": sum(1 for r in scored if r[5] <= r[3] <= r[6]),
            "mtp_above": sum(1 for r in scored if r[3] > r[6]), "mtp_below": sum(1 for r in scored if r[3] < r[5])}


def targets_table(kind: str | None = "decode") -> NumberTable:
    """The targets of one kind (:data:`speclib.calibration.step_report.TARGET_KINDS`), or of every kind
    (None: the book prints them in one table), against what is measured."""
    what = {"decode": "plain decoding's time per output token",
            "speculative": "speculation's speed-ups and draft lengths",
            None: "plain decoding's time per output token and speculation's speed-ups and draft lengths"}.get(kind, kind)
    return NumberTable(("what", "target", "measured", "met"), tuple(_rep.targets(kind=kind)), align="llll",
                       caption=f"the calibrated step against its targets on {what}: held out by model family and "
                               "by chip, the form chosen inside each fold, each figure beside its null baselines; a "
                               "figure from the shipped constants or from the form chosen on every run is in-sample, "
                               "reported and not counted as met")


def target_facts(kind: str = "decode") -> dict:
    """How many targets of ``kind`` the calibrated step meets, and the ones it
    misses as one phrase (each with its measured figure and its target)."""
    rows = _rep.targets(kind=kind)
    missed, subject = [], ""
    for what, target, value, met in rows:
        if what.startswith("the same:"):  # a row that continues the one above it: name its subject
            what = subject + what[len("the same"):]
        subject = what.split(":")[0]
        if met == "no":
            missed.append(f"{what} ({value}, against {target})")
    in_sample = sum(1 for *_, met in rows if met == _rep.IN_SAMPLE)
    return {f"{kind}_targets": len(rows), f"{kind}_met": len(rows) - len(missed) - in_sample,
            f"{kind}_in_sample": in_sample, f"{kind}_missed": len(missed), f"{kind}_missed_list": "; ".join(missed) if missed else "none"}


# --- overlap scheduling -----------------------------------------------------------------------


def overlap_table() -> NumberTable:
    """Each engine's overlap scheduling, on its plain path and on its
    speculative path by release and method, with its source's bibliography
    key (:data:`speclib.core.overlap.OVERLAP`)."""
    from ...core.overlap import OVERLAP

    return NumberTable(("engine", "plain path", "speculative path", "source"), tuple(OVERLAP), align="llll",
                       caption="whether each engine prepares the next step on the host while the GPU runs this one; "
                               "the source is in the bibliography under the key in the last column")


def overlap_facts(alpha: float = 0.75, gamma: int = 3, batch: int = 32, context: float = 4096) -> dict:
    """What a speculative path without overlap scheduling costs one
    deployment: Llama-3-70B on four H200 with its EAGLE-3 head
    (``llama-3.3-70b-eagle3``), calibrated, at ``batch`` sequences and
    ``context``, drafting ``gamma`` tokens at acceptance ``alpha``: the
    speed-up with the speculative path overlapped and without, the host
    time per step a plain step hides, and the share of the gain lost."""
    from ...core.overlap import host_time
    from ...core.speculation import speedup

    dep = Deployment("llama-3-70b", "H200", tp=4, drafter="llama-3.3-70b-eagle3", step_time="calibrated")
    with_overlap = float(speedup(alpha, gamma, batch, context, deployment=dep))
    without = float(speedup(alpha, gamma, batch, context, deployment=dep.replace(spec_overlap=False)))
    return {"overlap_alpha": alpha, "overlap_gamma": gamma, "overlap_batch": batch, "overlap_context": context,
            "overlap_speedup": with_overlap, "no_overlap_speedup": without,
            "overlap_host_ms": 1e3 * float(host_time(batch)),
            "overlap_gain_lost": (with_overlap - without) / (with_overlap - 1.0)}


def step_time_gamma_facts(data=None, small: int = 16) -> dict:
    """Where the calibrated step and the roofline disagree on gamma* in
    :data:`step_time_gamma` (its defaults: the paper's deployment): the
    batches up to ``small`` where the roofline drafts nothing (its gutter)
    and the calibrated step's gamma* there, and the first batch that fits in
    memory from which the calibrated step drafts nothing while the roofline
    still drafts (None: none)."""
    d = step_time_gamma.data() if data is None else data
    B, roof, cal, no_fit = (np.asarray(d[k]) for k in ("B", "gamma_roofline", "gamma_calibrated", "no_fit"))
    gutter = (B <= small) & (roof == 0)
    fits = ~no_fit.astype(bool)
    late = np.flatnonzero((cal == 0) & (roof > 0) & fits)
    shorter = np.flatnonzero((cal < roof) & (B > small) & fits)
    last = int(np.flatnonzero(fits)[-1])
    stops = (f"from {int(B[late[0]]):,} sequences it drafts nothing where the roofline still speculates"
             if late.size else f"memory runs out, at {int(d['max_batch']):,} sequences, before it stops")
    return {"calibrated_shorter_from": int(B[shorter[0]]) if shorter.size else None,
            "last_fit_batch": int(B[last]), "calibrated_last_gamma": int(cal[last]),
            "roofline_last_gamma": int(roof[last]), "calibrated_stops_text": stops,
            "gutter_lo": int(B[gutter].min()) if gutter.any() else None,
            "gutter_hi": int(B[gutter].max()) if gutter.any() else None,
            "gutter_calibrated_lo": int(cal[gutter].min()) if gutter.any() else None,
            "gutter_calibrated_hi": int(cal[gutter].max()) if gutter.any() else None,
            "calibrated_stops_from": int(B[late[0]]) if late.size else None}


def group_limited_runs() -> dict:
    """What DeepSeek-R1's group-limited routing does to the decode runs the
    calibration was fitted on with the experts split (ep > 1): each run's
    one-GPU kernel time with the most loaded GPU priced grouped over the same
    priced ungrouped, as the shipped calibration prices it (its constants
    unchanged): how many runs, the median and the largest ratio."""
    from ...core.layout import ParallelStep
    from speclib.evidence import decode_runs as _dec

    ratios = []
    for r in _dec.decode_runs("all"):
        if r.ep == 1:
            continue
        ps = r.deployment().parallel_step()
        grouped = ParallelStep(ps.step_model, ps.layout, ps.interconnect, group_limited=True)
        B, S = np.float64(r.running), np.float64(r.context)
        ratios.append(float(grouped.kernel_time(B, 1.0, S)) / float(ps.kernel_time(B, 1.0, S)))
    return {"ep_runs": len(ratios), "ep_group_kernel_median": float(np.median(ratios)) - 1,
            "ep_group_kernel_max": float(np.max(ratios)) - 1}

