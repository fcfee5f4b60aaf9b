"""Figures and tables of the chapter "The draft length per concurrency": the
priced policy's gamma* against the simulator's best fixed draft length, the
throughput of every fixed draft length and of the policy (ours as lines, the
simulator's as points), throughput against latency, and the comparison
tables with the simulated grid."""
from __future__ import annotations

import matplotlib as mpl
import numpy as np

from ...core import optimum as _optimum
from ...core.step import ROOFLINES
from speclib.evidence import simulator as sequel
from ...formulas import numpy_functions as nf
from ..arrays import numpy_ops
from ..._checks import checked_choice
from ..definition import Axis, Choice, Figure, Key, Line, Panel, Points, Text, Toggle
from ..style import COLORS
from ..tables import NumberTable
from . import common
from . import simulated_serving as serving
from .draft_length import integer_batches

MS = 1e3
ROOFLINE = Choice("roofline", "pricing rule", tuple((f"{r}: {serving.ROOFLINE_LABELS[r]}", r)
                                                    for r in ROOFLINES), "aggregate")
ACCEPTANCE = Choice("acceptance", "acceptance", sequel.ACCEPTANCES, "measured")
ROLLBACK = Choice("rollback", "linear attention rolled back", (
    ("not at all, as the simulator", "none"), ("a snapshot per verified position (vLLM, SGLang)", "snapshot"),
    ("a replay of the accepted positions", "recompute")), sequel.ROLLBACK)
MARKERS = {"mtp": "o", "dflash": "s"}
_VIRIDIS = mpl.colormaps["viridis"]


def gamma_colors(gammas, gamma_max):
    """A colour per fixed draft length: plain decoding in the total's colour, then viridis from 1 to ``gamma_max``."""
    return [COLORS["total"] if g == 0 else mpl.colors.to_hex(_VIRIDIS((g - 1) / max(gamma_max - 1, 1)))
            for g in gammas]


#: Concurrencies marked on the axis: every other one of the grid's (a factor of 4 apart), so that the
#: labels of 512, 1024 and 2048 never run together, in a narrow panel or on a phone.
CONCURRENCY_TICKS = tuple(float(c) for c in sequel.load_grid().concurrency[::2])


def concurrency_axis(label="concurrency (sequences decoding together)", lo=None, hi=None):
    return Axis(label, "log2", lo, hi, ticks=CONCURRENCY_TICKS)


def tpot_ms(B, throughput):
    """Milliseconds per output token of each of ``B`` sequences in a closed
    loop that commits ``throughput`` tokens per second."""
    return nf.time_per_output_token(np.asarray(B, dtype=float), np.asarray(throughput, dtype=float)) * MS


def concurrency_batches(points):
    """The simulated grid's concurrencies, and about ``points`` whole batches log-spaced over them."""
    C = sequel.load_grid().concurrency
    return C, integer_batches(C[0], C[-1], points)


def _gamma(p, xp):
    C, B = concurrency_batches(p.points)
    out = {"B": B, "C": C, "rule": serving.ROOFLINE_LABELS[p.roofline],
           "model": sequel.simulated_model().name, "hardware": sequel.HARDWARE,
           # headroom above the longest draft for the legend, which then hides no line
           "y_top": max(rows.gamma_max for rows in sequel.load_grid().drafters.values()) + 10}
    out["rollback_label"] = ", no rollback" if p.rollback == "none" else f", rollback: {p.rollback}"
    for key in sequel.DRAFTER_KEYS:
        out[f"gamma_{key}"], _ = sequel.policy(key, B, roofline=p.roofline, acceptance=p.acceptance,
                                               rollback=p.rollback)
        out[f"best_{key}"] = sequel.load_grid().drafters[key].best_gamma
    return out


concurrency_gamma = Figure(
    name="concurrency_gamma",
    title="Draft length per concurrency: {model} on {hardware}\n{rule}, {acceptance} acceptance{rollback_label}",
    compute=_gamma, controls=(ROOFLINE, ACCEPTANCE, ROLLBACK), params={"points": 200},
    panels=(Panel(concurrency_axis(), Axis("draft length \u03b3*", lo=0, hi="y_top"),
                  tuple(s for key in sequel.DRAFTER_KEYS for s in (
                      Line("B", f"gamma_{key}", label=f"{serving.DRAFTER_LABELS[key]}: priced policy (ours)",
                           color=key, step=True, gid=f"gamma_{key}"),
                      Points("C", f"best_{key}", label=f"{serving.DRAFTER_LABELS[key]}: the simulator's best fixed "
                             "\u03b3", color=key, marker=MARKERS[key], filled=False, size=6, gid=f"simulated_{key}"))),
                  legend="upper left"),),
    doc="gamma* of the priced policy against concurrency for both drafters (lines), with the simulator's best fixed "
        "gamma (markers).")

_KEYS = (Key("no speculation", color=COLORS["total"]), Key("fixed \u03b3 (darker: shorter)", color="#21918c"),
         Key("priced policy", color=COLORS["policy"], dash="dashed"),
         Key("simulator, fixed \u03b3", color=COLORS["ridge"], marker="o"),
         Key("simulator's policy", color=COLORS["policy"], marker="x"))


def _per_drafter(p, xp, tpot=False):
    C, B = concurrency_batches(p.points)
    acceptance = getattr(p, "acceptance", "measured")
    out = {"B": B, "C": C, "rule": serving.ROOFLINE_LABELS[p.roofline]}
    tops = []
    for key in sequel.DRAFTER_KEYS:
        rows = sequel.load_grid().drafters[key]
        ours = sequel.fixed_throughput(key, B, rows.gammas, roofline=p.roofline, acceptance=acceptance)
        _, pol = sequel.policy(key, B, roofline=p.roofline, acceptance=acceptance)
        out[f"{key}_colors"] = gamma_colors(rows.gammas, rows.gamma_max)
        base, sim_base = (ours[0], rows.goodput[0]) if not tpot and p.relative else (1.0, 1.0)
        for part, x, y, b in (("", B, ours, base), ("_policy", B, pol, base), ("_sim", C, rows.goodput, sim_base),
                              ("_adaptive", C, rows.adaptive_goodput, sim_base)):
            out[f"{key}{part}_x"] = tpot_ms(x, y) if tpot else np.asarray(x, dtype=float)
            out[f"{key}{part}_y"] = y / b
        tops += [float((ours / base).max()), float((rows.goodput / sim_base).max())]
    return out, tops


def _drafter_series(key):
    return (Line(f"{key}_x", f"{key}_y", colors=f"{key}_colors", width=1.0, gid=f"{key}_fixed"),
            Points(f"{key}_sim_x", f"{key}_sim_y", colors=f"{key}_colors", size=3.5, gid=f"{key}_simulated"),
            Line(f"{key}_policy_x", f"{key}_policy_y", color="policy", dash="dashed", width=2.2, gid=f"{key}_policy"),
            Points(f"{key}_adaptive_x", f"{key}_adaptive_y", color="policy", marker="x", size=7,
                   gid=f"{key}_adaptive"))


def _throughput(p, xp):
    out, tops = _per_drafter(p, xp)
    out["what"] = "Speedup over plain decoding" if p.relative else "Throughput"
    out["y_label"] = "throughput over plain decoding (\u00d7)" if p.relative else "committed output tokens per second"
    out["y_scale"] = "linear" if p.relative else "log"
    out["y_lo"] = 0.0 if p.relative else 1e3
    out["y_hi"] = (float(common.nice_ceiling(numpy_ops, 1.05 * max(tops))) if p.relative
                   else 10.0 ** np.ceil(np.log10(max(tops))))
    out["x_lo"], out["x_hi"] = out["C"][0] / 1.25, out["C"][-1] * 1.25
    return out


concurrency_throughput = Figure(
    name="concurrency_throughput",
    title="{what} against concurrency on B200 ({rule}, no rollback)",
    compute=_throughput, controls=(ROOFLINE, Toggle("relative", "over plain decoding", True)), params={"points": 120},
    panels=tuple(Panel(concurrency_axis("concurrency", "x_lo", "x_hi"),
                       Axis("{y_label}" if key == "mtp" else "", "y_scale", "y_lo", "y_hi"), _drafter_series(key),
                       title=serving.DRAFTER_LABELS[key], legend="") for key in sequel.DRAFTER_KEYS),
    size=(8.6, 4.6), keys=_KEYS,
    doc="Committed tokens per second against concurrency: plain decoding, each fixed gamma and the priced policy "
        "(ours: lines; the simulator: points), optionally as a speedup over plain decoding.")


def _nice_log_bounds(values):
    """The tightest 1-2-5 bounds around the finite positive ``values``."""
    v = np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in values])
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = float(v.min()), float(v.max())
    steps = np.array([1.0, 2.0, 5.0, 10.0])
    e_lo, e_hi = np.floor(np.log10(lo)), np.floor(np.log10(hi))
    return (float(steps[steps * 10 ** e_lo <= lo * (1 + 1e-12)].max() * 10 ** e_lo),
            float(steps[steps * 10 ** e_hi >= hi * (1 - 1e-12)].min() * 10 ** e_hi))


def _tpot(p, xp):
    out, _ = _per_drafter(p, xp, tpot=True)
    C = out["C"]
    x_lim = _nice_log_bounds([out[f"{k}_{w}x"] for k in sequel.DRAFTER_KEYS for w in ("", "sim_")])
    y_lim = (1e3, _nice_log_bounds([out[f"{k}_{w}y"] for k in sequel.DRAFTER_KEYS for w in ("", "sim_")])[1])
    tau = np.geomspace(x_lim[0], x_lim[1], 50)
    out["tau"] = tau
    out["contours"] = nf.closed_loop_throughput(C[:, None], tau[None, :] / MS)
    out["contour_colors"] = [COLORS["ridge"]] * len(C)
    out.update(x_lo=x_lim[0], x_hi=x_lim[1], y_lo=y_lim[0], y_hi=y_lim[1])
    # each contour labelled where it enters the axes: the left edge, or the top
    x_in = np.full(C.shape, x_lim[0] * 1.12)
    y_in = nf.closed_loop_throughput(C, x_in / MS)
    top = y_in > y_lim[1] / 1.25
    y_in = np.where(top, y_lim[1] / 1.25, y_in)
    x_in = np.where(top, tpot_ms(C, y_in), x_in)
    for i, c in enumerate(C):
        shown = x_in[i] < x_lim[1] and y_in[i] > y_lim[0]
        out[f"c{i}_x"], out[f"c{i}_y"], out[f"c{i}"] = (x_in[i] if shown else np.nan), y_in[i], c
    return out


def _tpot_panel(key, first):
    notes = tuple(Text(f"c{i}_x", f"c{i}_y", f"{{c{i}:,.0f}}", color=COLORS["ridge"], size=7)
                  for i in range(len(sequel.load_grid().concurrency)))
    return Panel(Axis("time per output token (ms)", "log", "x_lo", "x_hi"),
                 Axis("committed output tokens per second" if first else "", "log", "y_lo", "y_hi", ticks="batch"),
                 (Line("tau", "contours", colors="contour_colors", dash="dotted", width=0.8), *notes,
                  *_drafter_series(key)), title=serving.DRAFTER_LABELS[key], legend="")


throughput_tpot = Figure(
    name="throughput_tpot",
    title="Throughput against latency, dotted: constant concurrency\n{rule}, no rollback, {acceptance} acceptance",
    compute=_tpot, controls=(ROOFLINE, ACCEPTANCE), params={"points": 120},
    panels=tuple(_tpot_panel(key, i == 0) for i, key in enumerate(sequel.DRAFTER_KEYS)), size=(8.6, 4.6),
    keys=_KEYS,
    doc="Throughput against time per output token, each curve traced by concurrency, with lines of constant "
        "concurrency (Little's law).")


# --- tables: the closed form against the simulated grid -----------------------------------


def sequel_comparison(drafter="dflash", comparison=None) -> NumberTable:
    """One drafter's ("mtp" or "dflash") simulated grid against the closed form
    (``comparison``, default :func:`speclib.evidence.simulator.compare` with
    the book's choices), a row per concurrency: the best fixed gamma each
    finds and the priced policy's gamma*, the simulated throughput there and
    our error, the worst error over every gamma, and the policy's shortfall
    against the best fixed gamma next to the simulator's own policy's."""
    key = checked_choice("drafter", drafter, sequel.DRAFTER_KEYS)
    c = (sequel.compare() if comparison is None else comparison)[key]
    grid, s = c.grid, c.summary()
    rows = tuple((f"{conc:,.0f}", f"{grid.best_gamma[j]} / {c.predicted_best_gamma[j]} / {c.policy_gamma[j]}",
                  f"{grid.best_goodput[j]:,.0f}", f"{c.error_at_best_gamma[j]:+.2%}", f"{c.worst_error[j]:.2%}",
                  f"{c.policy_shortfall[j]:+.2%}", f"{c.simulated_policy_shortfall[j]:+.2%}")
                 for j, conc in enumerate(np.asarray(sequel.load_grid().concurrency)))
    caption = (f"{serving.DRAFTER_LABELS[key]}, ours (one roofline over the step and over each drafter pass, "
               f"no rollback: the sequel's simulator's rule) against the simulator's throughput (committed output "
               f"tokens per second) at the simulator's best fixed \u03b3 at each concurrency C. Over all "
               f"{c.predicted.size} cells of the grid |error| has median {s['median_error']:.2%} and "
               f"max {s['max_error']:.2%}; the best fixed \u03b3 agrees at {s['best_gamma_agrees']} of "
               f"{s['concurrencies']} concurrencies. Shortfall: 1 - simulated throughput at a policy's \u03b3 / at "
               f"the best fixed \u03b3 (largest: ours {s['policy_shortfall']:.2%}, the simulator's own "
               f"{s['simulated_policy_shortfall']:.2%}).")
    # kept on one line per cell: "15 / 15 / 15" must not wrap
    return NumberTable(("C", "best \u03b3: simulator / ours / policy", "simulated tok/s", "error", "largest |error|",
                        "shortfall: ours", "shortfall: simulator's"), rows, caption=caption,
                       css_class="speclib-nowrap")


#: The modelling choices :func:`speclib.evidence.simulator.compare` makes to
#: price a step as the simulator does, each as the keyword that undoes it and
#: what undoing it means.
MODELLING_CHOICES = (
    ({}, "all of the book's choices (the simulator's aggregate roofline, its weights, its FLOPs)"),
    ({"roofline": "per-component"}, "each component its own roofline, the times added, as the paper does"),
    ({"output_gate": True}, "the attention output gate of the published config counted"),
    ({"linear_attention_flops": True}, "linear attention's FLOPs charged"),
    ({"expert_count": "slots"}, "experts counted as the simulator counts them, k independent picks per token"),
    ({"rollback": "snapshot"}, "the linear layers' state kept at every verified position, as vLLM and SGLang roll "
                               "back a rejected draft (the simulator does not)"),
    ({"rollback": "recompute"}, "the accepted positions replayed from the state before the step instead"),
)


def _keyword(name, value) -> str:
    """A keyword as the table names it: a flag switched on by its name alone, any other value after it."""
    if value is True:
        return name
    return f"{name} {value}" if isinstance(value, str) else f"{name} {value:g}"


def modelling_choices(choices=MODELLING_CHOICES) -> NumberTable:
    """What each modelling choice is worth: the comparison with the simulator
    redone with one choice undone at a time, a row per variant and drafter.
    ``choices``: pairs of (keywords of :func:`speclib.evidence.simulator.compare`,
    description)."""
    rows = []
    for keywords, description in choices:
        if not isinstance(keywords, dict):
            raise ValueError(f"choices must be pairs of (keywords dict, description); got {keywords!r}")
        comparisons, keyword = sequel.compare(**keywords), ", ".join(_keyword(k, v) for k, v in keywords.items())
        for i, key in enumerate(sequel.DRAFTER_KEYS):
            s = comparisons[key].summary()
            label = (f"{description} ({keyword})" if keyword else str(description)) if i == 0 else ""
            rows.append((label, serving.DRAFTER_LABELS[key], f"{s['median_error']:.2%}", f"{s['max_error']:.2%}",
                         f"{s['best_gamma_agrees']} of {s['concurrencies']}", f"{s['policy_shortfall']:.2%}"))
    caption = ("The closed form against the simulated grid with one modelling choice undone at a time "
               "(the keyword of speclib.evidence.simulator.compare in brackets, a flag switched on by its name). "
               "Worst shortfall: the most simulated "
               "throughput our policy's \u03b3* loses against the best fixed \u03b3 at any concurrency.")
    return NumberTable(("variant", "drafter", "median |error|", "max |error|", "best \u03b3 agrees", "worst shortfall"),
                       tuple(rows), caption=caption, align="ll")


def longest_draft_band(drafter="dflash", *, rollback=sequel.ROLLBACK, max_batch=2048, threshold=3.0) -> dict:
    """Where the priced policy of ``drafter`` drafts its longest, at every
    whole batch from 1 to ``max_batch`` on the sequel's roofline (one
    aggregate roofline over the step and over each drafter pass, the
    simulated context, the measured survival curve), with the linear layers
    rolled back by ``rollback``: the longest gamma* (``gamma``), the first and
    last batch drafting it (``lo``, ``hi``), the least and most speedup over
    plain decoding there (``speedup_lo``, ``speedup_hi``), the peak speedup
    over every batch and where (``peak``, ``peak_at``; ``peak_ties`` and
    ``peak_flat``, the batches within :data:`speclib.core.optimum.TIES` and
    :data:`~speclib.core.optimum.PRACTICALLY_FLAT` of it), and the first and last
    batch whose speedup reaches ``threshold`` (``above_lo``, ``above_hi``;
    None if none does)."""
    key = checked_choice("drafter", drafter, sequel.DRAFTER_KEYS)
    B = np.arange(1.0, float(max_batch) + 1.0)
    g, X = sequel.policy(key, B, rollback=rollback)
    speedup = X / sequel.fixed_throughput(key, B, [0], rollback=rollback)[0]
    at = np.flatnonzero(g == g.max())
    if at[-1] - at[0] + 1 != at.size:
        raise ValueError(f"the longest draft of {key} is not one band of batches; the summary would mislead")
    above = np.flatnonzero(speedup >= threshold)
    peak = _optimum.optimum(B, speedup, "max")
    return {"gamma": int(g.max()), "lo": float(B[at[0]]), "hi": float(B[at[-1]]),
            "speedup_lo": float(speedup[at].min()), "speedup_hi": float(speedup[at].max()),
            "peak": peak.value, "peak_at": peak.at, "peak_ties": peak.ties, "peak_flat": peak.flat,
            "above_lo": float(B[above[0]]) if above.size else None,
            "above_hi": float(B[above[-1]]) if above.size else None}
