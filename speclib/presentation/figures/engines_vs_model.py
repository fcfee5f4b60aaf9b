"""Figures and tables of the speculative half of the chapter "How far to trust the step":
published engine measurements of speculative decoding against the roofline,
the calibrated step time and its variants, held out four ways; each family's
bias and interval coverage, the DeepSeek evidence's layouts, and draft
trees. Each ``*_facts`` function returns the numbers the chapter's prose
glues."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...core import speculation as _spec
from speclib.evidence import engines as _eng
from speclib.calibration import held_out as _ho
from speclib.evidence import spec_runs as _runs
from speclib.calibration import step_features as _feat
from speclib.calibration import step_fit as _fit
from speclib.calibration import step_predictions as _pred
from speclib.calibration import step_report as _rep
from ...presets import resolve
from ..definition import Axis, Choice, Figure, HLine, Line, Panel, Points, VLine
from ..tables import NumberTable
from ..style import CYCLE
from . import common
from .engine_step_time import STEP_TIME_COLORS, STEP_TIME_LABELS, step_time_gamma
from .engine_step_time import target_facts  # noqa: F401 - the chapter reads the targets on speculation here
from .engine_step_time import targets_table as _targets_table
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
                  title="DeepSeek-V3, 8 x H200 (TP): \u03b3 = {gamma}, \u03b1 = {alpha:g}", legend="below"),
            Panel(Axis("draft length \u03b3 (SGLang num_steps)"), Axis("throughput / throughput at \u03b3 = 1"),
                  tuple(right), title="Qwen3-235B-A22B + EAGLE-3, SGLang", legend="below"))


engine_speedups = Figure(
    name="engine_speedups", title="", compute=_speedups, panels=_speedup_panels, size=(9.6, 4.6),
    params={"runs": None},
    doc="Left: DeepSeek-V3 on 8 H200 with tensor parallelism, speedup of three MTP drafts against batch under each "
        "step time, with the SGLang documentation's measured points. Right: Qwen3-235B-A22B with EAGLE-3, "
        "throughput over draft lengths relative to one draft, at batch 1 and 64, measured and modelled.")


def engine_rows(points=None):
    """Rows of the comparison table: source, setting, measured, roofline,
    calibrated, anchored (ranges where the batch is unknown)."""
    points = _eng.comparison() if points is None else points
    return [(p.run.label, p.at, p.measured, _fmt(p.roofline), _fmt(p.calibrated), _fmt(p.anchored))
            for p in points]


def _fmt(value):
    if isinstance(value, tuple):
        return f"{value[0]:.2f}\u2013{value[1]:.2f}"
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "\u2013"
    return f"{value:.2f}"


#: gamma* under either step time for DeepSeek-V3 on 8 H200, the engines' setting.
step_time_gamma_v3 = step_time_gamma.variant("step_time_gamma_v3", model="DeepSeek-V3", hardware="H200", S=2048,
                                             alpha=0.68, c_draft=0.05, tp=8, gamma_max=8)


# --- the engine step fitted on the runs, held out (speclib.calibration.held_out) ---------------


def fit_run_rows(held=None):
    """Rows per run: run, engine, model on chip, points scored, median and max
    |error| (%), best draft length (measured -> predicted, by batch)."""
    held = _ho.stored_held_out("run") if held is None else held
    rows = []
    for p in held.runs:
        e = np.abs(p.error[p.scored]) * 100
        best = ", ".join(f"{b}: {m}\u2192{q}" for b, (m, q) in p.best.items()) or "\u2013"
        rows.append((p.run.id, p.run.engine, f"{resolve(p.run.model, None)[0].name} on {p.run.gpus} x {p.run.chip}",
                     int(e.size),
                     float(np.median(e)) if e.size else None, float(e.max()) if e.size else None, best))
    return rows


def fit_ablation_rows():
    """Each decode term dropped: variant, held out by chip the decode runs'
    median |error| and worst median signed error by concurrency (%), Llama's
    and DeepSeek's median (%), and by model family the speed-ups' median (%)."""
    return [(name, *(100 * v for v in values)) for name, *values in _ho.stored_decode_ablation()]


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
        deployment = _spec.Deployment(model, hw, step_time=step_time, tp=p.tp if kind == "calibrated" else 1,
                                      attention="paper")
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



# --- the runs, held out three ways (the stored hold-outs of speclib.calibration.step_fit) ------------


def _acceptance_label(run) -> str:
    if run.accept or run.accept_at:
        return "reported"
    if _runs.alpha_fitted(run):
        return "fitted at its smallest batch"
    return f"assumed \u03b1 = {run.alpha:g}" if not run.acceptance_reported else f"\u03b1 = {run.alpha:.2f}"


def runs_table() -> NumberTable:
    """Every measured speculative run the step is fitted on and held out against."""
    rows = []
    for r in _runs.spec_runs():
        model = resolve(r.model, None)[0]
        # a run that names another checkpoint of the preset's architecture (DeepSeek-R1, priced by the
        # DeepSeek-V3 preset) in its own spelling keeps that name; a lower-case id is the preset's
        name = r.model if r.model[:1].isupper() and r.model.lower() != model.name.lower() else model.name
        rows.append((model.family, name, f"{r.gpus} \u00d7 {r.chip}", r.engine, r.drafter.split(" (")[0],
                     ", ".join(map(str, r.batches)), _acceptance_label(r), r.cite))
    return NumberTable(("family", "model", "GPUs", "engine", "drafter", "batches", "acceptance", "source"),
                       tuple(rows), align="llllllll",
                       caption="the measured runs of speculative decoding: each source is in the bibliography under "
                               "the key in the last column")


def holdout_table() -> NumberTable:
    """The hold-outs of the calibrated step side by side."""
    return NumberTable(("held out", "one run at a time", "one model family at a time", "one source at a time",
                        "one chip at a time"),
                       tuple(_rep.holdout_rows()), align="lrrrr",
                       caption="the calibrated step (fitted on engines), each run predicted without its run, its model "
                               "family, its source or its chip; in the last three the form is chosen inside each fold")


def family_table() -> NumberTable:
    """Held out by model family: each family's runs, points, median |error|
    and median signed error, the share of its points inside their interval,
    how many of its runs have their acceptance fitted at their smallest
    batch, and the form its fold chose."""
    rows = tuple((f, n, pts, f"{100 * med:.0f} %", f"{100 * bias:+.0f} %", f"{100 * cov:.0f} %", fitted, form)
                 for f, n, pts, med, bias, cov, fitted, form in _rep.family_rows())
    return NumberTable(("family held out", "runs", "points", "median |error|", "median signed error",
                        "inside their 80 % cross-conformal interval", "runs with acceptance fitted",
                        "form chosen without it"), rows,
                       align="lrrrrrrl",
                       caption="the calibrated step held out one model family at a time; a run whose source reports no "
                               "acceptance has it fitted at its smallest batch, whose points then set it and are not "
                               "scored")


def targets_table(kind: str = "speculative") -> NumberTable:
    """The figures against their targets, of one kind
    (:data:`speclib.calibration.step_report.TARGET_KINDS`; the chapter prints
    both kinds in one table, :func:`.engine_step_time.targets_table` of None)."""
    return _targets_table(kind)


def constants_table() -> NumberTable:
    """The shipped step's constants, each with its 5-95 % interval over the
    calibration's bootstrap draws (model families resampled)."""
    return NumberTable(("constant", "fitted", "5\u201395 % interval", "unit", "identified?"), tuple(_rep.constants()),
                       formats=("", ".3g", "", "", ""), align="lrrll",
                       caption="the calibrated step fitted on every run; intervals over refits to model families "
                               "drawn with replacement; a constant at zero in every refit is not identified by these "
                               "runs (the other terms take up what it stands for), and one whose interval reaches "
                               "zero is not bounded from it")


def estimates_table() -> NumberTable:
    """Each fitted term beside an independent estimate of what it stands for."""
    rows = tuple((term, what, fitted, estimate, cite.replace(",", ", ") if cite else "\u2013")
                 for term, what, fitted, estimate, cite in _rep.estimate_rows())
    return NumberTable(("term", "stands for", "fitted", "independent estimate", "source"), rows, align="lllll",
                       caption="the fitted terms beside what published measurements of the same work give; each "
                               "source is in the bibliography under the key in the last column")


def estimate_keys() -> tuple:
    """Every bibliography key :func:`estimates_table` names, in its order."""
    return tuple(k for *_, cite in _rep.ESTIMATES if cite for k in cite.split(","))


def forms_table() -> NumberTable:
    """Every candidate form's held-out skill by model family on every run (what the choice saw): on the
    decisions over their baselines, and on the error over the speed-up at each run's smallest batch."""
    best, scores = _ho.stored_forms()
    rows = [(form.label, _ho.form_size(form), f"{d:+.3f}", f"{100 * e:+.1f} %", "kept" if form == best else "")
            for form, (d, e) in sorted(scores.items(), key=lambda kv: (-kv[1][0], -kv[1][1]))]
    return NumberTable(("form of the calibrated step", "constants", "decision skill", "error skill", ""),
                       tuple(rows), align="lrrrl",
                       caption="each candidate form of the calibrated step, held out one model family at a time on "
                               "every run: its share right less its baseline's on three decisions, averaged (the "
                               "gain on the right side of 1\u00d7 against always a gain, the best draft within one "
                               "against the best constant draft chosen without the family, the gain's direction "
                               "with batch against the gain falls), and 1 less its median |error| over the speed-up "
                               "measured at the run's smallest batch's on the same points; above zero, the form "
                               "beats the baselines")


def skill_table() -> NumberTable:
    """Every held-out figure beside its null baselines on the same items, held out by model family and by chip
    (:func:`speclib.calibration.baselines.skill_rows`)."""
    model, chip = _rep.skill_table("model"), _rep.skill_table("chip")
    rows = tuple((m[0], m[3], m[2], m[4], m[5], c[2], c[4], c[5]) for m, c in zip(model, chip))
    return NumberTable(("held-out figure (items)", "null baseline", "by family: the step", "the baseline",
                        "beats it", "by chip: the step", "the baseline", "beats it"), rows, align="llrrlrrl",
                       caption="each held-out figure of the calibrated step (the form chosen inside each fold) beside "
                               "its null baselines scored on the same points, pairs, sweeps or runs; the constant "
                               "draft chosen on every pair is in-sample and shown only for scale")


def coverage_table() -> NumberTable:
    """What the intervals cover, per model family and per chip, held out by model family (calibrated over the
    families) and by chip (over the chips)."""
    rows = []
    for by, words in (("model", "by model family"), ("chip", "by chip")):
        for per, key, inside, n in _rep.coverage_rows(by=by):
            rows.append((words, per, key, n, f"{inside} of {n}", f"{100 * inside / n:.0f} %"))
    return NumberTable(("held out", "per", "", "points", "inside", "share"), tuple(rows), align="lllrrr",
                       caption=f"the points inside their {_rep.interval_words('model')} held out by model family, "
                               "and inside the same over chips held out by chip, per family and per chip")


def term_ablation_table() -> NumberTable:
    """The shipped form and each physical term added, removed or priced another way, held out by model family
    and by chip, the form fixed (:func:`speclib.calibration.held_out.term_ablation`, as stored)."""
    rows = []
    for label, by in _ho.stored_term_ablation():
        m, c = by["model"], by["chip"]
        rows.append((label, 100 * m["median_abs_error"], 100 * m["p90_abs_error"], 100 * m["sign_right"],
                     f"{m['best_gamma_within_1']} of {m['best_gamma_points']}",
                     f"{m['direction_right']} of {m['direction_sweeps']}", 100 * c["median_abs_error"],
                     f"{c['direction_right']} of {c['direction_sweeps']}", 100 * c["decode_median_abs_error"]))
    return NumberTable(("variant", "median |error| (%)", "90th pct (%)", "sign right (%)", "best draft \u00b11",
                        "direction right", "by chip: median (%)", "by chip: direction", "by chip: decode (%)"),
                       tuple(rows), formats=("", ".1f", ".1f", ".1f", "", "", ".1f", "", ".1f"), align="l",
                       caption="each term of the step, held out by model family (the first five columns) and by chip "
                               "(the last three), the form fixed rather than chosen in each fold")


def run_rows(by: str = "model"):
    """Per run, held out ``by`` a grouping: run, family, points, median |error| (%),
    points inside their 80 % interval, best draft length measured -> predicted."""
    held = _ho.stored_held_out(by)
    rows = []
    for p in held.runs:
        e = np.abs(p.error[p.scored]) * 100
        inside = ((p.measured >= p.lo) & (p.measured <= p.hi))[p.scored]
        best = ", ".join(f"{b}: {m}\u2192{q}" for b, (m, q) in p.best.items()) or "\u2013"
        rows.append((p.run.id, p.run.family, int(e.size), float(np.median(e)) if e.size else None,
                     f"{int(inside.sum())} of {int(inside.size)}", best))
    return rows


def dspark_table(run_id: str = "vllm-dspark-dsv4-flash-mi350x-k7") -> NumberTable:
    """One run by concurrency: measured, the calibrated step held out by model
    family (with its interval), and the roofline (each with the acceptance
    that best fits the run's smallest batch)."""
    held = _ho.stored_held_out("model").run(run_id)
    roof = _pred.predict_run(_fit.roofline_fit(), _runs.spec_run(run_id))
    rows = tuple((int(b), f"{m:.2f}\u00d7", f"{q:.2f}\u00d7 [{lo:.2f}\u2013{hi:.2f}]" if ok else f"{q:.2f}\u00d7 (sets \u03b1)",
                  f"{r:.2f}\u00d7") for b, m, q, lo, hi, ok, r in
                 zip(held.batch, held.measured, held.predicted, held.lo, held.hi, held.scored, roof.predicted))
    run = held.run
    short = roof.predicted[0] < held.measured[0] * (1 - 0.01)
    at_most = roof.run.alpha >= float(_fit.ALPHA_GRID[-1])
    how = ("the most the search allows, still short at the smallest concurrency" if short and at_most
           else "still short at the smallest concurrency" if short else "fitted at the smallest concurrency")
    return NumberTable(("concurrency", "measured", "calibrated, its family held out [80 % interval]", "roofline"),
                       rows, align="rrrr",
                       caption=f"{resolve(run.model, None)[0].name} with DSpark, K = 7, {run.gpus} \u00d7 {run.chip}, "
                               f"{run.engine}: speed-up over no speculation, measured, under the calibrated step "
                               f"(fitted without any DeepSeek run) and under the roofline (acceptance "
                               f"{roof.run.alpha:.2f}, {how})")


def dspark_facts(run_id: str = "vllm-dspark-dsv4-flash-mi350x-k7") -> dict:
    """What :func:`dspark_table` shows, in numbers: the scored points, how
    many lie inside their interval, above it and below it, whether the
    calibrated prediction falls with every doubling of the batch, whether
    the roofline's speed-up rises anywhere above the smallest batch, and
    whether it reaches the measured gain at the smallest batch."""
    held = _ho.stored_held_out("model").run(run_id)
    roof = _pred.predict_run(_fit.roofline_fit(), _runs.spec_run(run_id))
    ok = held.scored
    m, lo, hi = held.measured[ok], held.lo[ok], held.hi[ok]
    return {"dspark_scored": int(ok.sum()), "dspark_inside": int(((m >= lo) & (m <= hi)).sum()),
            "dspark_above": int((m > hi).sum()), "dspark_below": int((m < lo).sum()),
            "dspark_calibrated_falls": bool(np.all(np.diff(held.predicted) < 0)),
            "dspark_calibrated_falls_overall": bool(held.predicted[-1] < held.predicted[0]),
            "dspark_first_predicted": float(held.predicted[0]), "dspark_last_measured": float(held.measured[-1]),
            "dspark_active_b": resolve(held.run.model, None)[0].active_params() / 1e9,
            "dspark_measured_falls": bool(np.all(np.diff(held.measured) < 0)),
            "dspark_roofline_rises": bool(np.any(np.diff(roof.predicted) > 0)),
            "dspark_roofline_peak": float(roof.predicted.max()),
            "dspark_roofline_peak_batch": int(held.batch[int(np.argmax(roof.predicted))]),
            "dspark_first_batch": int(held.batch[0]), "dspark_first_measured": float(held.measured[0]),
            "dspark_roofline_reaches_first": bool(roof.predicted[0] >= held.measured[0] * (1 - 0.01)),
            "dspark_fall_verdict": ("more steeply than the engine's" if held.predicted[-1] < held.measured[-1]
                                    else "less steeply than the engine's")}


def _held_points(p, xp):
    held = _ho.stored_held_out("model")
    out = {"families": sorted({q.run.family for q in held.runs}), "lim": [0.4, 6.0]}
    for fam in out["families"]:
        m, q, lo, hi = (np.concatenate([getattr(r, k)[r.scored] for r in held.runs if r.run.family == fam])
                        for k in ("measured", "predicted", "lo", "hi"))
        out[f"{fam}_m"], out[f"{fam}_q"] = m, q
        out[f"{fam}_bar_x"], out[f"{fam}_bar_y"] = np.stack([m, m], axis=1), np.stack([lo, hi], axis=1)
    out["diag"] = np.array(out["lim"])
    return out


def _held_points_panels(data):
    series = [Line("diag", "diag", color="#888888", dash="dotted", width=0.8),
              HLine(1.0, dash="dotted", width=0.8), VLine(1.0, dash="dotted", width=0.8)]
    for i, fam in enumerate(data["families"]):
        series += [Line(f"{fam}_bar_x", f"{fam}_bar_y", color=CYCLE[i % len(CYCLE)], width=1.0, alpha=0.45),
                   Points(f"{fam}_m", f"{fam}_q", label=fam, color=CYCLE[i % len(CYCLE)], size=5, gid=f"held_{fam}")]
    return (Panel(Axis("measured speed-up", "log", lo=0.4, hi=6.0, ticks=(0.5, 1, 2, 4)),
                  Axis("predicted, its model family held out", "log", lo=0.4, hi=6.0, ticks=(0.5, 1, 2, 4)),
                  tuple(series), title="the calibrated step, each point with its 80 % interval", legend="upper left"),)


held_out_points = Figure(
    name="held_out_points", title="", compute=_held_points, panels=_held_points_panels, size=(6.4, 6.0),
    doc="Every scored point of the measured runs: measured speed-up against the calibrated step's prediction with "
        "the point's model family held out, its 80 % interval as a bar; dotted: the diagonal and 1x.")


#: The change in gain a doubling of the batch makes, in %, for the slope figure's axes.
SLOPE_LIM = (-30.0, 20.0)


def _slope_pct(slope):
    """A slope of log gain per doubling as the % change of the gain a doubling makes."""
    return 100.0 * np.expm1(np.asarray(slope, dtype=float))


def _gain_slopes(p, xp):
    held = _ho.stored_held_out("model")
    rows = held.directions()
    family = {q.run.id: q.run.family for q in held.runs}
    out = {"families": sorted({family[r[0]] for r in rows}), "lim": np.array(SLOPE_LIM)}
    for fam in out["families"]:
        mine = [r for r in rows if family[r[0]] == fam]
        out[f"{fam}_m"] = _slope_pct([r[3] for r in mine])
        out[f"{fam}_q"] = _slope_pct([r[4] for r in mine])
    flat = 100.0 * np.expm1(_ho.FLAT_SLOPE)
    out["flat_x"] = np.array([SLOPE_LIM[0], SLOPE_LIM[1]])
    out["flat_lo"], out["flat_hi"] = np.array([-flat, -flat]), np.array([flat, flat])
    return out


def _gain_slopes_panels(data):
    series = [Line("lim", "lim", color="#888888", dash="dotted", width=0.8),
              Line("flat_x", "flat_lo", color="#bbbbbb", dash="dashed", width=0.6),
              Line("flat_x", "flat_hi", color="#bbbbbb", dash="dashed", width=0.6),
              HLine(0.0, dash="dotted", width=0.8), VLine(0.0, dash="dotted", width=0.8)]
    for i, fam in enumerate(data["families"]):
        series.append(Points(f"{fam}_m", f"{fam}_q", label=fam, color=CYCLE[i % len(CYCLE)], size=6,
                             gid=f"slope_{fam}"))
    return (Panel(Axis("measured: change of the gain per doubling of the batch (%)", lo=SLOPE_LIM[0],
                       hi=SLOPE_LIM[1]),
                  Axis("predicted, its model family held out (%)", lo=SLOPE_LIM[0], hi=SLOPE_LIM[1]),
                  tuple(series), title="how the gain moves as the batch grows, one point per sweep",
                  legend="upper left"),)


gain_slopes = Figure(
    name="gain_slopes", title="", compute=_gain_slopes, panels=_gain_slopes_panels, size=(6.4, 6.0),
    doc="Every sweep of three or more batches at one draft length: how much the measured gain changes each time the "
        "batch doubles (least squares in log gain against log batch) against the calibrated step's, its model "
        "family held out; dotted: the diagonal and no change; dashed: the band counted as flat. A point in the "
        "lower left quadrant is a fall predicted as a fall.")


def slopes_table() -> NumberTable:
    """Each sweep's measured and predicted change of the gain per doubling of the batch, held out by model family."""
    held = _ho.stored_held_out("model")
    word = {-1: "falls", 0: "flat", 1: "rises"}
    rows = [(run_id, g, f"{b[0]}\u2013{b[-1]}", float(_slope_pct(m)), float(_slope_pct(q)),
             word[_ho.direction(m)], word[_ho.direction(q)], "yes" if ok else "no")
            for run_id, g, b, m, q, ok in held.directions()]
    return NumberTable(("run", "\u03b3", "batches", "measured, % per doubling", "predicted, %", "measured",
                        "predicted", "right"), tuple(rows), formats=("", "d", "", "+.1f", "+.1f"), align="lrr",
                       caption="each sweep of three or more batches at one draft length: the change of the gain each "
                               "time the batch doubles, measured and predicted with the run's model family held out")


def peer_falls_table() -> NumberTable:
    """DeepSeek-R1's MTP pairs on NVIDIA chips: the fall of the gain from each configuration's smallest
    concurrency, measured, predicted by the calibrated step (its model family held out) and by NVIDIA's
    AIConfigurator and AISimulate from their measured kernel tables (:mod:`speclib.evidence.peer`), on the
    points both peers place."""
    from speclib.evidence import peer

    nan = (float("nan"),) * 6
    ours = {(r[0], r[2]): r for r in peer.falls(_rep.r1_points(_ho.stored_held_out("model")))}
    aisim = {(r[0], r[2]): r for r in peer.falls(peer.mtp_points("aisimulate"))}
    rows = []

    def cell(predicted, err):
        return "\u2013" if predicted != predicted else f"{predicted:.2f} ({100 * err:+.1f} %)"

    for run_id, c0, c, measured, predicted, err, top in peer.falls(peer.mtp_points("aiconfigurator")):
        mine, sim = ours.get((run_id, c), nan), aisim.get((run_id, c), nan)
        rows.append((run_id.removeprefix(_runs.R1_PAIR_PREFIX), f"{c0} \u2192 {c}", measured, cell(mine[4], mine[5]),
                     cell(predicted, err), cell(sim[4], sim[5])))
    # Each prediction beside its error, in one cell: six columns keep the table inside the text column.
    return NumberTable(("configuration", "concurrency", "measured", "speclib (error)", "AIConfigurator (error)",
                        "AISimulate (error)"), tuple(rows),
                       formats=("", "", ".2f", "", "", ""), align="llrrrr",
                       caption="DeepSeek-R1 with and without MTP on NVIDIA chips: the speed-up at each concurrency over "
                               "the speed-up at the configuration's smallest, measured and predicted by speclib and by "
                               "two peers, NVIDIA's AIConfigurator and AISimulate; in brackets, each prediction's error")


def stops_facts() -> dict:
    """The numbers of the section on where speculation stops paying: the
    sweeps whose gain's direction with batch is right, held out by model
    family (the form chosen in each fold) and with the shipped form fixed;
    how many sweeps fall as measured and as predicted; DeepSeek-R1's fall of
    the gain against AIConfigurator's; each physical term's effect on the
    directions; and the checks that add nothing (the MoE's padded tiles)."""
    from speclib.evidence import peer

    held = _ho.stored_held_out("model")
    rows = held.directions()
    ablation = dict(_ho.stored_term_ablation())
    shipped, no_e = ablation[_ho.TERM_VARIANTS[0][0]]["model"], ablation[_ho.TERM_VARIANTS[1][0]]["model"]
    eager = next(by["model"] for label, by in _ho.stored_term_ablation() if "CUDA graphs" in label)
    ours, theirs, sim = _rep.r1_falls(held), peer.fall_summary(peer.mtp_points()), peer.fall_summary(
        peer.mtp_points("aisimulate"))
    every = _rep.r1_falls(held, nvidia_only=False)
    tiles = {t: _rep.tile_padding(t) for t in _rep.MOE_TILES}
    return {"sweeps": len(rows), "sweeps_right": sum(r[-1] for r in rows),
            "sweeps_fall_measured": sum(_ho.direction(r[3]) < 0 for r in rows),
            "sweeps_fall_predicted": sum(_ho.direction(r[4]) < 0 for r in rows),
            "sweeps_rise_predicted": sum(_ho.direction(r[4]) > 0 for r in rows),
            "sweep_runs": len({r[0] for r in rows}), "flat_pct": float(100 * np.expm1(_ho.FLAT_SLOPE)),
            "shipped_direction": shipped["direction_right"], "no_e_direction": no_e["direction_right"],
            "no_e_median": no_e["median_abs_error"], "shipped_median": shipped["median_abs_error"],
            "eager_direction": eager["direction_right"], "eager_median": eager["median_abs_error"],
            "falls_ours": ours["median_abs_error"], "falls_ours_top": ours["median_abs_error_top"],
            "falls_peer": theirs["median_abs_error"], "falls_peer_top": theirs["median_abs_error_top"],
            "falls_aisim": sim["median_abs_error"], "falls_aisim_top": sim["median_abs_error_top"],
            "falls_configs": ours["configurations"], "falls_every": every["median_abs_error"],
            "falls_every_top": every["median_abs_error_top"], "falls_every_configs": every["configurations"],
            "tile_small": tiles[_rep.MOE_TILES[0]]["tile"], "tile_large": tiles[_rep.MOE_TILES[-1]]["tile"],
            "tile_ratio": tiles[_rep.MOE_TILES[-1]]["largest_ratio"]}


def _point(points, run_id, at):
    return next(p for p in points if p.run.id == run_id and p.at == at)


#: (batch, context) at which the chapter states what one extra verified position costs a sequence.
EXTRA_AT = (32, 2048)


def chapter_facts() -> dict:
    """The numbers the chapter's prose states, each computed here from the
    data, the pricings and the stored hold-outs (the chapter glues them)."""
    points = _eng.comparison()
    runs = _runs.spec_runs()
    model = _ho.stored_held_out("model")
    out = {"runs": len(runs), "families": len({r.family for r in runs}), "sources": len({r.source for r in runs}),
           "points_scored": int(sum(p.scored.sum() for p in model.runs))}
    docs1, v4_1, v4_8 = (_point(points, "sglang-docs", "batch 1"), _point(points, "vllm-v4pro-mi355x", "concurrency 1"),
                         _point(points, "vllm-v4pro-mi355x", "concurrency 8"))
    qps = _point(points, "vllm-qps", "QPS 1")
    out.update(docs1_roofline=docs1.roofline, docs1_calibrated=docs1.calibrated, v4pro1_roofline=v4_1.roofline,
               v4pro8_roofline=v4_8.roofline, qps_roofline_lo=qps.roofline[0], qps_roofline_hi=qps.roofline[1])
    sweep = _eng.gamma_sweep("sglang-autospec")
    out.update(qwen_best_first=int(sweep["best_measured"][0]), qwen_best_last=int(sweep["best_measured"][-1]),
               qwen_roofline_first=int(sweep["best_roofline"][0]), qwen_roofline_last=int(sweep["best_roofline"][-1]),
               qwen_calibrated_first=int(sweep["best_calibrated"][0]),
               qwen_calibrated_last=int(sweep["best_calibrated"][-1]), qwen_last_batch=int(sweep["batches"][-1]))
    first, last = out["qwen_calibrated_first"], out["qwen_calibrated_last"]
    out["qwen_calibrated_verdict"] = (
        "shortens it too" if last < first else
        "keeps it where it was (the FLOPs it charges each extra position are too small a part of this model's "
        "step at these batches to shorten the draft, so it misses part of what the engine pays per position)"
        if last == first else "lengthens it")
    floor = [row for row in _runs.below_floor() if row[0] == "vllm-v4pro-mi355x"]
    out["v4pro_floor"] = floor[0][4] if floor else float("nan")
    f = _fit.fit(_feat.SHIPPED_FORM)
    chi = f.theta.get("extra_flops", 0.0)
    e = f.theta.get("per_position", 0.0)
    out.update(e_us=1e6 * e, e_us_layer=1e6 * e / _feat.layers_ref(), d_us=1e6 * f.theta.get("per_sequence", 0.0),
               prefill=f.theta["prefill"], chi=chi, extra_eta=1.0 / chi if chi else float("nan"),
               layers_ref=int(_feat.layers_ref()))
    from ...core.deployment import Deployment

    v3 = Deployment("deepseek-v3", "H200", tp=8, step_time="calibrated").pricing(whole_step=True).step_model
    out["h200_fixed_ms"] = 1e3 * v3.fixed
    # what one extra verified position costs each sequence, DeepSeek-V3 on eight H200 at 32 sequences of 2,048
    B, S = np.float64(EXTRA_AT[0]), np.float64(EXTRA_AT[1])
    extra = v3.extra_flops_factor * v3.extra_work(B, np.float64(2.0), S) + v3.extra_positions(B, np.float64(2.0))
    out.update(extra_us_v3=1e6 * float(extra) / EXTRA_AT[0], extra_batch=EXTRA_AT[0], extra_context=EXTRA_AT[1])
    m, hw = resolve("deepseek-v3", "H200")
    from ...core import step as _step
    out["v3_weights_ms"] = 1e3 * float(_step.step_model(m, hw).time(np.float64(1), np.float64(1), np.float64(2048))) / 8
    for by in _ho.GROUPINGS:
        held = _ho.stored_held_out(by)
        s = held.summary()
        out.update({f"{by}_{k}": v for k, v in s.items() if isinstance(v, float)})
        out[f"{by}_best"] = "{} of {}".format(*held.best_hits())
    dspark = model.run("vllm-dspark-dsv4-flash-mi350x-k7")
    at32 = list(dspark.batch).index(32)
    out.update(dspark32_predicted=float(dspark.predicted[at32]), dspark32_lo=float(dspark.lo[at32]),
               dspark32_hi=float(dspark.hi[at32]), dspark_last_predicted=float(dspark.predicted[-1]),
               dspark_last_batch=int(dspark.batch[-1]))
    rows = _rep.constants()
    zero = [name for name, _, _, _, note in rows if note.startswith("not identified")]
    soft = [name for name, _, _, _, note in rows if note.startswith("not bounded")]
    out["unidentified_text"] = (f"the runs do not identify {common.join_and(zero)}, at zero in every refit: the other terms "
                                "take up what it stands for" if zero else "the runs identify every constant")
    out["unbounded_text"] = (f"{common.join_and(soft)} {'is' if len(soft) == 1 else 'are'} not bounded from zero"
                             if soft else "every interval is bounded from zero")
    best, scores = _ho.stored_forms()
    flops_only = next(form for form in scores if "extra_flops" in form.terms and "per_position" not in form.terms
                      and "token_layer" not in form.terms and form.fixed == "layers")
    out.update(best_decisions=max(d for d, _ in scores.values()), kept_decisions=scores[best][0],
               kept_score=scores[best][1], best_score=max(e for _, e in scores.values()), forms=len(scores),
               decision_se=_ho.stored_forms_decision_se(),
               forms_beating=sum(1 for d, _ in scores.values() if d > 0),
               kept_flops="extra_flops" in best.terms, kept_e="per_position" in best.terms,
               kept_tau="token_layer" in best.terms, kept_label=best.label,
               flops_only_decisions=scores[flops_only][0], flops_only_score=scores[flops_only][1])
    fams = {fam: med for fam, _, _, med, *_ in _rep.family_rows()}
    out.update(llama_family_median=fams.get("Llama", float("nan")), qwen_family_median=fams.get("Qwen", float("nan")))
    return out


# --- what the DeepSeek evidence is: its GPUs and layouts ------------------------------------

#: The most sequences a point of the gutter has: the paper's speculation loses at a few to a dozen.
GUTTER_BATCH = 16


def deepseek_evidence(runs=None) -> dict:
    """The DeepSeek runs as evidence on the gutter: how many, how many on
    eight GPUs or more, how many split their experts over GPUs (expert
    parallelism, whether the source says so or the layout names ``ep``),
    and their points at :data:`GUTTER_BATCH` sequences or fewer: how many,
    how many of those measured a loss (below 1x), and how many of those
    points are on runs in plain tensor parallelism."""
    runs = _runs.spec_runs() if runs is None else runs
    ds = [r for r in runs if r.family == "DeepSeek" and r.quantity == "speedup"]
    ep = [r for r in ds if r.expert_parallel or r.ep > 1]
    small = [(r, v) for r in ds for b, _, v in r.points if b <= GUTTER_BATCH]
    return {"ds_runs": len(ds), "ds_eight_or_more": sum(1 for r in ds if r.gpus >= 8),
            "ds_fewest_gpus": min(r.gpus for r in ds), "ds_expert_parallel": len(ep),
            "ds_small_points": len(small), "ds_small_losses": sum(1 for _, v in small if v < 1.0),
            "ds_small_plain_tp": sum(1 for r, _ in small if not (r.expert_parallel or r.ep > 1 or r.dp_attention)),
            "gutter_batch": GUTTER_BATCH}


# --- draft trees ------------------------------------------------------------------------------


def tree_facts(accept_length: float = 3.0, depth: int = 3, topk: int = 4, width: int = 8, batches=(8, 256),
               context: float = 4096) -> dict:
    """A draft tree against a chain of the same depth committing the same
    tokens a step, on Llama-3-70B with its EAGLE-3 head on four H200 under
    SGLang, calibrated (:func:`speclib.tree_speedup`): at each of
    ``batches``, the tree's speed-up (``width`` positions verified, ``topk``
    candidates a level), the chain's (depth + 1 positions), and the accept
    length the tree needs to match the chain (a speed-up is proportional to
    the tokens a step commits)."""
    from ...core.deployment import Deployment
    from ...core.speculation import tree_speedup

    dep = Deployment("llama-3-70b", "H200", tp=4, engine="SGLang", drafter="llama-3.3-70b-eagle3",
                     step_time="calibrated")
    out = {"tree_accept": accept_length, "tree_depth": depth, "tree_topk": topk, "tree_width": width,
           "chain_width": depth + 1, "tree_context": context, "tree_most": depth + 1}
    for B in batches:
        tree = float(tree_speedup(accept_length, B, context, depth=depth, width=width, topk=topk, deployment=dep))
        chain = float(tree_speedup(accept_length, B, context, depth=depth, width=depth + 1, deployment=dep))
        out.update({f"tree_{B}": tree, f"chain_{B}": chain, f"tree_needs_{B}": accept_length * chain / tree,
                    f"tree_batch_fits_{B}": bool(B <= dep.max_batch(context, gamma=width - 1))})
    return out



# --- part IV's honesty: each family's bias and coverage, the points that are not tests ----------


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def family_facts(rows=None, held=None) -> dict:
    """What the family table (:func:`speclib.calibration.step_report.family_rows`)
    says in a sentence: the most negative and most positive median signed
    error and the lowest and highest interval coverage, each with its
    family and its points; the runs whose acceptance is fitted at their
    smallest batch and the points there, which set it and are not scored;
    and the DeepSeek family's row."""
    rows = _rep.family_rows() if rows is None else rows
    held = _ho.stored_held_out("model") if held is None else held
    lo_bias, hi_bias = min(rows, key=lambda r: r[4]), max(rows, key=lambda r: r[4])
    lo_cov, hi_cov = min(rows, key=lambda r: r[5]), max(rows, key=lambda r: r[5])
    fitted = [p for p in held.runs if _runs.alpha_fitted(p.run)]
    out = {"family_count": len(rows), "bias_lo": lo_bias[4], "bias_lo_family": lo_bias[0],
           "bias_lo_points": _count(lo_bias[2], "point"), "bias_hi": hi_bias[4], "bias_hi_family": hi_bias[0],
           "bias_hi_points": _count(hi_bias[2], "point"), "coverage_lo": lo_cov[5], "coverage_lo_family": lo_cov[0],
           "coverage_lo_points": _count(lo_cov[2], "point"), "coverage_hi": hi_cov[5],
           "coverage_hi_family": hi_cov[0], "coverage_hi_points": _count(hi_cov[2], "point"),
           "coverage_in_band": sum(1 for r in rows if 0.7 <= r[5] <= 0.9),
           "fitted_runs": sum(r[6] for r in rows), "all_runs": sum(r[1] for r in rows),
           "fitted_points": int(sum((p.batch == p.batch.min()).sum() for p in fitted))}
    for r in rows:
        if r[0] == "DeepSeek":
            out.update(ds_family_points=r[2], ds_family_bias=r[4], ds_family_coverage=r[5])
    return out


def sign_facts(held=None, near: float = 0.1) -> dict:
    """The scored speed-ups held out by model family on the wrong side of
    1x: how many, and how many of them were measured within ``near`` of 1x
    (where any error flips the sign)."""
    held = _ho.stored_held_out("model") if held is None else held
    wrong = near_one = total = 0
    for p in held.runs:
        if not p.is_speedup:
            continue
        m, q = p.measured[p.scored], p.predicted[p.scored]
        bad = (m > 1.0) != (q > 1.0)
        total += m.size
        wrong += int(bad.sum())
        near_one += int((bad & (np.abs(m - 1.0) < near)).sum())
    return {"sign_points": total, "sign_wrong": wrong, "sign_wrong_near_one": near_one, "sign_near": near}


def estimate_facts(f=None) -> dict:
    """Each fitted term against its independent estimate
    (:func:`speclib.calibration.step_report.estimate_ranges`): the fitted value
    in µs and where it falls, "inside", "below" or "above" the estimate's
    range, and how many times the estimate's top it is."""
    f = _fit.fit(_feat.SHIPPED_FORM) if f is None else f
    values = {"moe_fixed": f.theta.get(("moe_fixed", "NVIDIA"), 0.0), "per_sequence": f.theta["per_sequence"]}
    if "per_position" in f.theta:  # a term the form leaves out has no value to place
        values["per_position"] = f.theta["per_position"]
    out = {}
    for term, v in values.items():
        lo, hi = _rep.estimate_ranges()[term]
        out[f"est_{term}_us"] = 1e6 * v
        out[f"est_{term}_where"] = "inside" if lo <= v <= hi else "below" if v < lo else "above"
        out[f"est_{term}_over_top"] = v / hi
    peer = _rep.peer_verify_estimate()
    out.update(est_peer_mla_median_us=peer["mla_median_us"], est_peer_mla_max_us=peer["mla_max_us"])
    return out


def figure3_facts(data=None, small: int = 16) -> dict:
    """Figure 3 under either step (:data:`paper_vs_calibrated`, its
    defaults): whether the paper's step drafts nothing somewhere up to
    ``small`` sequences at some acceptance, and the calibrated step drafts
    wherever it does (the gutter closes); and whether at every acceptance
    the calibrated step drafts nothing at a batch where the paper's still
    drafts."""
    d = paper_vs_calibrated.data() if data is None else data
    B = np.asarray(d["B"])
    gutters, closed, stops_earlier = 0, True, True
    for i in range(len(PAPER_ALPHAS)):
        paper, cal = np.asarray(d[f"paper{i}"]), np.asarray(d[f"calibrated{i}"])
        gutter = (B <= small) & (paper == 0)
        gutters += int(gutter.any())
        closed &= bool((cal[gutter] > 0).all())
        stops_earlier &= bool(((cal == 0) & (paper > 0)).any())
    return {"figure3_gutter_closes": gutters > 0 and closed, "figure3_stops_earlier": stops_earlier}


def skill_facts() -> dict:
    """How many of the null baselines the step beats held out by model family and by chip (the in-sample
    constant draft left out), and the baselines it loses to, as a phrase."""
    out = {}
    for by in ("model", "chip"):
        rows = [r for r in _rep.skill_table(by) if "in-sample" not in r[3]]
        out[f"skill_{by}_beats"] = sum(r[5] == "yes" for r in rows)
        out[f"skill_{by}_loses"] = common.join_and(sorted({r[3] for r in rows if r[5] == "no"}))
        out["skill_baselines"] = len(rows)
    return out
