"""Figures and tables of the chapter "The cost of a token": DeepSeek-R1's
throughput per GPU against its speed per user, with MTP and without, as
the calibrated step predicts it (:func:`speclib.core.frontier.frontier`) and
as InferenceX measured it; the price of a million output tokens at a GPU-hour
price and the cheapest configuration at an interactivity target; and the
frontiers predicted without each chip's runs, held against the measured ones
(:mod:`speclib.calibration.frontiers`).

The frontier of a menu's configuration depends on the menus only, so it is
computed in Python once per combination and reaches the page as numbers;
what the sliders move (the price, the target) is computed from it with the
catalogue's closed forms (``xp.F.cost_per_million_tokens``), live in the page."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...core import frontier as _fr
from ...core.deployment import Deployment
from speclib.evidence import decode_runs as _dec
from speclib.calibration import frontiers as _ev
from speclib.calibration import step_features as _feat
from speclib.calibration import step_fit as _fit
from speclib.evidence import spec_runs as _spec
from ...presets import hardware as hardware_preset
from ..definition import Area, Axis, Choice, Figure, Line, Panel, Points, Slider, Text, VLine
from ..tables import NumberTable
from ..style import CYCLE
from . import common

#: The menus: the chips InferenceX measured DeepSeek-R1 on with MTP on and off, its engines, its workloads.
CHIPS = ("B200", "B300", "H200", "MI325X", "MI355X")
ENGINES = (("SGLang", "SGLang"), ("TensorRT-LLM", "TRT"))
WORKLOADS = ("1k1k", "1k8k", "8k1k")
#: Concurrencies the book's frontiers are drawn at.
FIGURE_CONCURRENCIES = tuple(int(c) for c in np.unique(np.rint(np.geomspace(1, 1024, 128))))
#: The defaults: a GPU-hour price and an interactivity target (tokens per second per user).
PRICE = 2.5
TARGET = 50.0
PLAIN, MTP = CYCLE[0], CYCLE[3]


def _nominal(workload: str) -> tuple:
    i, o = workload.split("k")[:2]
    return int(i) * 1024, int(o) * 1024


@lru_cache(maxsize=None)
def configuration(chip: str, engine: str, workload: str) -> dict:
    """What the figure draws for one combination of the menus, as numbers:
    the configuration (InferenceX's with MTP on and off at the most
    concurrencies, else DeepSeek-R1 fp8 on eight GPUs in plain tensor
    parallelism), its two frontiers under the shipped calibrated step with
    their 80 % intervals, and the points InferenceX measured; ``label`` and
    ``note`` say which. A combination the calibration cannot price (an
    engine never measured on the chip) has NaN frontiers and says so."""
    m = _ev.reference(chip, engine, workload)
    vendor = hardware_preset(chip).vendor
    if m is not None:
        dep, gamma = m.deployment("calibrated"), m.gamma
        alpha, how = _ev.shipped_alpha(m)
        lengths = (m.input_len, m.output_len)
        label = f"{m.layout}, MTP \u03b3 = {gamma}, \u03b1 = {alpha:.2f} ({how})"
        note = ""
    else:
        gamma = _spec.r1_mtp_gamma(engine, vendor, False)
        lengths = tuple(_dec.R1_LENGTH_SCALE * x for x in _nominal(workload))
        try:
            dep = Deployment(_dec.R1_MODEL, chip, tp=8, engine=engine, weights="fp8",
                             kv_cache=_dec.r1_kv_cache(chip, engine), step_time="calibrated")
        except ValueError:
            dep = None
        alpha = _ev.engine_alpha(engine, gamma)
        label = f"TP8, MTP \u03b3 = {gamma}, \u03b1 = {alpha:.2f} (the median of the engine's configurations)"
        note = "InferenceX did not measure this configuration\nwith MTP on and off: the model alone"
    nan = np.full(len(FIGURE_CONCURRENCIES), np.nan)
    out = {"label": label, "note": note, "measured": m is not None,
           "concurrency": np.asarray(FIGURE_CONCURRENCIES, dtype=float)}
    if dep is None:
        name = dict((v, k) for k, v in ENGINES)[engine]
        out.update(label=f"{name} was not measured on {vendor} chips", note="nothing to calibrate its step on",
                   **{f"{arm}_{k}": nan for arm in ("plain", "mtp") for k in ("speed", "x", "x_lo", "x_hi")})
    else:
        f = _fr.frontier(dep, lengths, gamma=gamma, alpha=alpha, concurrencies=FIGURE_CONCURRENCIES)
        for arm, a in (("plain", f.plain), ("mtp", f.speculative)):
            out.update({f"{arm}_speed": a.speed_per_user, f"{arm}_x": a.throughput_per_gpu,
                        f"{arm}_x_lo": a.throughput_lo, f"{arm}_x_hi": a.throughput_hi})
    for arm in ("plain", "mtp"):
        got = getattr(m, arm) if m is not None else None
        out[f"measured_{arm}_speed"] = got.speed_per_user if got is not None else np.array([np.nan])
        out[f"measured_{arm}_x"] = got.throughput_per_gpu if got is not None else np.array([np.nan])
    if m is not None and dep is not None:
        out["note"] = fit_note(out)
    return out


def drawn_over_measured(d: dict) -> dict:
    """{arm: the median, over the measured points of ``d`` (a
    :func:`configuration`) the drawn curve reaches, of the drawn throughput
    per GPU at the point's speed per user over the measured one} (NaN where
    the curve reaches none): how far the curves the figure draws lie from the
    points it draws with them, though it was fitted on them."""
    out = {}
    for arm in ("plain", "mtp"):
        r = _ev.matched_error(d[f"measured_{arm}_speed"], d[f"measured_{arm}_x"], d[f"{arm}_speed"], d[f"{arm}_x"])
        r = r[np.isfinite(r)]
        out[arm] = float(np.median(r) + 1.0) if r.size else float("nan")
    return out


def fit_note(d: dict) -> str:
    """What the panel says of a measured configuration: where its curves run
    against the points drawn with them (:func:`drawn_over_measured`)."""
    r = drawn_over_measured(d)
    said = [f"{r[arm]:.2f}\u00d7 ({name})" for arm, name in (("plain", "plain"), ("mtp", "MTP")) if np.isfinite(r[arm])]
    if not said:
        return "the curves reach none of the measured points' speeds"
    return "drawn / measured at the same speed:\n" + ", ".join(said)


def _costs(xp, d: dict, price, target) -> dict:
    """The price of a million output tokens along both frontiers, and the
    cheapest point of each that serves ``target`` tokens/s per user: the
    most whole users whose speed reaches it (the frontier read between its
    points linearly in log-log, as :meth:`speclib.core.frontier.Frontier.cheapest`
    searches every whole number of users), its largest number of users where
    every point is faster, NaN where none is; in the figure array language."""
    out = {}
    C = xp.asarray(d["concurrency"])
    logC = xp.log(C)
    for arm in ("plain", "mtp"):
        speed, x = xp.asarray(d[f"{arm}_speed"]), xp.asarray(d[f"{arm}_x"])
        out[f"{arm}_cost"] = xp.F.cost_per_million_tokens(price, x)
        k = xp.first_true(speed < target)  # the first point slower than the target (-1: none is)
        k0, k1 = xp.maximum(k - 1, 0), xp.maximum(k, 0)
        s0, s1 = xp.log(xp.take(speed, k0)), xp.log(xp.take(speed, k1))
        step = xp.where(k > 0, s1 - s0, -1.0)  # (no step where the target is not between two points)
        at = xp.take(logC, k0) + (xp.log(target) - s0) / step * (xp.take(logC, k1) - xp.take(logC, k0))
        users = xp.where(k < 0, xp.max(C), xp.floor(xp.exp(at) * (1 + 1e-12)))  # whole users that reach it
        j = xp.maximum(xp.first_true(C > users), 1)  # the grid point above them (the last where none is)
        j0 = j - 1
        t = (xp.log(users) - xp.take(logC, j0)) / (xp.take(logC, j) - xp.take(logC, j0))
        read = lambda a: xp.exp(xp.log(xp.take(a, j0)) + t * (xp.log(xp.take(a, j)) - xp.log(xp.take(a, j0))))  # noqa: E731
        out[f"{arm}_best_x"] = xp.where(k == 0, float("nan"), read(x))
        out[f"{arm}_best_speed"] = xp.where(k == 0, float("nan"), read(speed))
        out[f"{arm}_best_users"] = xp.where(k == 0, float("nan"), users)
        out[f"{arm}_best_cost"] = xp.F.cost_per_million_tokens(price, out[f"{arm}_best_x"])
        out[f"{arm}_best_at"] = xp.stack([out[f"{arm}_best_speed"]])  # as points
        out[f"{arm}_best_cost_at"] = xp.stack([out[f"{arm}_best_cost"]])
    out["saving"] = 1.0 - out["plain_best_x"] / out["mtp_best_x"]
    out["saving_x"] = xp.where(xp.isfinite(out["saving"]), out["mtp_best_speed"], float("nan"))
    return out


def _cost_frontier(p, xp):
    d = configuration(p.chip, p.engine, p.workload)
    out = {k: xp.asarray(v) for k, v in d.items() if isinstance(v, np.ndarray)}
    out.update({"label": d["label"], "note": d["note"], "has_measured": d["measured"],
                "engine_name": dict((v, k) for k, v in ENGINES)[p.engine]})
    out.update(_costs(xp, d, p.price, p.target))
    return out


#: The book figure's axes (fixed, so that the frame stays still as the menus change): speed per user,
#: output tokens per second per GPU, the price of a million output tokens.
SPEED_RANGE, THROUGHPUT_RANGE, COST_RANGE = (4.0, 400.0), (5.0, 5000.0), (0.1, 1000.0)


def _frontier_panel(title="throughput against interactivity", measured=True, fixed=True):
    x, y = (SPEED_RANGE, THROUGHPUT_RANGE) if fixed else ((None, None), (None, None))
    series = [Area("plain_speed", "plain_x_hi", y0="plain_x_lo", color=PLAIN, alpha=0.15, gid="plain_band"),
              Area("mtp_speed", "mtp_x_hi", y0="mtp_x_lo", color=MTP, alpha=0.15, gid="mtp_band"),
              Line("plain_speed", "plain_x", label="without speculation (calibrated step)",
                   color=PLAIN, gid="plain"),
              Line("mtp_speed", "mtp_x", label="with MTP (calibrated step, 80 % cross-conformal interval by model family)", color=MTP, gid="mtp")]
    if measured:
        series += [Points("measured_plain_speed", "measured_plain_x", label="InferenceX, MTP off", color=PLAIN,
                          filled=False, size=6, when="has_measured", gid="measured_plain"),
                   Points("measured_mtp_speed", "measured_mtp_x", label="InferenceX, MTP on", color=MTP, marker="s",
                          filled=False, size=6, when="has_measured", gid="measured_mtp")]
    series += [VLine("target", text="target", color="#555555", dash="dotted", gid="target"),
               Text(0.02, 0.08, "{note}", coords="axes", align="left", gid="note")]
    return Panel(Axis("tokens per second per user", "log", *x, ticks="number"),
                 Axis("output tokens per second per GPU", "log", *y, ticks="number"), tuple(series), title=title,
                 legend="below")


def _cost_panel(fixed=True):
    x, y = (SPEED_RANGE, COST_RANGE) if fixed else ((None, None), (None, None))
    return Panel(Axis("tokens per second per user", "log", *x, ticks="number"),
                 Axis("price of a million output tokens", "log", *y, ticks="number"),
                 (Line("plain_speed", "plain_cost", color=PLAIN, gid="plain_cost"),
                  Line("mtp_speed", "mtp_cost", color=MTP, gid="mtp_cost"),
                  VLine("target", color="#555555", dash="dotted", gid="cost_target"),
                  Points("plain_best_at", "plain_best_cost_at", color=PLAIN, size=8, gid="plain_best"),
                  Points("mtp_best_at", "mtp_best_cost_at", color=MTP, size=8, gid="mtp_best"),
                  Text("saving_x", "mtp_best_cost", "speculation: {saving:.0%} cheaper", align="right", dx=-8,
                       dy=-16, gid="saving")),
                 title="at {price:.2f} a GPU-hour; \u25cf the cheapest at the target", legend="below")


cost_frontier = Figure(
    name="cost_frontier",
    title="DeepSeek-R1 fp8 on 8 \u00d7 {chip}, {engine_name}, {workload}: {label}",
    compute=_cost_frontier,
    panels=(_frontier_panel(), _cost_panel()),
    controls=(Choice("chip", "chip", CHIPS, "H200"), Choice("engine", "engine", ENGINES, "SGLang"),
              Choice("workload", "workload", WORKLOADS, "1k1k"),
              Slider("price", "price of a GPU-hour", 0.5, 10.0, PRICE, step=0.25, format=".2f"),
              Slider("target", "tokens per second per user, at least", 10.0, 150.0, TARGET, step=1.0,
                     format=".0f")),
    size=(10.4, 5.0),
    doc="DeepSeek-R1's output tokens per second per GPU against the tokens per second each user sees, with MTP and "
        "without, under the calibrated step (with MTP, its 80 % cross-conformal interval by model family, a "
        "speed-up's over plain decoding) and as InferenceX measured it (left); the price of "
        "a million output tokens along each, and the cheapest configuration of each at the interactivity target "
        "(right).",
)


# --- one deployment's frontier, as `speclib frontier --plot` draws it ------------------------------


@lru_cache(maxsize=1)
def example_frontier():
    """The frontier the static figure draws unless given one: the chapter's default configuration."""
    m = _ev.reference("H200", "SGLang", "1k1k")
    return _fr.frontier(m.deployment("calibrated"), (m.input_len, m.output_len), gamma=m.gamma,
                        alpha=_ev.shipped_alpha(m)[0])


def _deployment_frontier(p, xp):
    f = example_frontier() if p.frontier is None else p.frontier
    d = {"concurrency": f.plain.concurrency}
    for arm, a in (("plain", f.plain), ("mtp", f.speculative)):
        lo = a.throughput_per_gpu if a.throughput_lo is None else a.throughput_lo
        hi = a.throughput_per_gpu if a.throughput_hi is None else a.throughput_hi
        d.update({f"{arm}_speed": a.speed_per_user, f"{arm}_x": a.throughput_per_gpu, f"{arm}_x_lo": lo,
                  f"{arm}_x_hi": hi})
    out = dict(d)
    out.update(_costs(xp, d, PRICE if p.price is None else p.price, np.nan if p.target is None else p.target))
    dep = f.deployment
    out["label"] = (f"{f.model_name} on {dep.tp} \u00d7 {dep.hardware.name}, {dep.engine}: "
                    f"{f.prompt:,.0f} in, {f.output:,.0f} out; {f.acceptance.describe()}")
    out["target"] = np.nan if p.target is None else float(p.target)
    out["price"] = PRICE if p.price is None else float(p.price)
    out["priced"] = p.price is not None
    out["note"] = ""
    return out


def _deployment_panels(data):
    panels = (_frontier_panel(measured=False, fixed=False),)
    return panels + ((_cost_panel(fixed=False),) if data["priced"] else ())


deployment_frontier = Figure(
    name="deployment_frontier", title="{label}", compute=_deployment_frontier, panels=_deployment_panels,
    params={"frontier": None, "price": None, "target": None}, size=(10.4, 5.0),
    doc="One deployment's frontiers with and without speculation (a speclib.core.frontier.Frontier), and with a "
        "price the price of a million output tokens along each: what `speclib frontier --plot` draws.")


# --- the frontiers held out by chip (speclib.calibration.frontiers) ----------------------------------


def _pct(x) -> str:
    return "\u2013" if x is None or not np.isfinite(x) else f"{100 * x:+.0f} %"


def _crossing(c) -> str:
    if not c.above:
        return "no common speed"
    if c.crosses:
        return f"{c.speed:.0f}"
    who = "MTP" if c.above == "speculative" else "plain"
    return f"none: {who} wins {c.lowest:.0f}\u2013{c.highest:.0f}"


def held_out_table(checks=None) -> NumberTable:
    """Each configuration measured with MTP on and off against its frontiers
    predicted by the calibrated step fitted without its chip."""
    checks = _ev.held_out_frontiers() if checks is None else checks
    rows = []
    for c in checks:
        m, p = c.crossovers()
        e, ec = c.errors, c.errors_at_concurrency
        agrees = c.crossover_agrees()
        rows.append((c.measured.label, f"{c.alpha:.2f}", int(e.size),
                     f"{100 * np.median(np.abs(e)):.0f} %" if e.size else "\u2013",
                     f"{100 * np.median(np.abs(ec)):.0f} %", _crossing(m), _crossing(p),
                     "\u2013" if agrees is None else ("yes" if agrees else "no")))
    return NumberTable(("configuration", "\u03b1 fitted", "points", "|error| at matched speed",
                        "|error| at matched users", "crossing, measured (tokens/s per user)", "crossing, predicted",
                        "agree"), tuple(rows), align="lrrrrlll",
                       caption="DeepSeek-R1 fp8 as InferenceX measured it, each configuration predicted by the "
                               "calibrated step fitted without every run on its chip: the median |error| of output "
                               "tokens per second per GPU at each measured point's own speed per user, and at its "
                               "own number of users; where the MTP frontier crosses the plain one")


def chip_rows(summary=None) -> list:
    """Per chip: points, median |error| at matched speed per user, crossovers agreeing of those compared."""
    summary = _ev.summary() if summary is None else summary
    return [(chip, r["points"], 100 * r["median_abs_error"], f"{r['crossovers_agree']} of {r['crossovers_compared']}")
            for chip, r in summary["by_chip"].items()]


def chip_table(summary=None) -> NumberTable:
    return NumberTable(("chip held out", "points", "median |error| at matched speed (%)", "crossings that agree"),
                       tuple(chip_rows(summary)), align="lrrr",
                       caption="the frontiers held out by chip (calibrated step): per chip",
                       formats=("", "", ".0f", ""))


# --- the numbers the chapter's prose glues ------------------------------------------------------------


def shipped_frontiers() -> list:
    """(measured configuration, its frontiers under the shipped calibrated step) for every configuration
    InferenceX measured with MTP on and off (fp8), at the figure's concurrencies."""
    out = []
    for m in _ev.measured_frontiers():
        try:
            f = _fr.frontier(m.deployment("calibrated"), (m.input_len, m.output_len), gamma=m.gamma,
                             alpha=_ev.shipped_alpha(m)[0], concurrencies=FIGURE_CONCURRENCIES, interval=False)
        except ValueError:  # a layout the presets cannot price
            continue
        out.append((m, f))
    return out


def measured_savings(target: float = TARGET) -> list:
    """(configuration, 1 - plain / MTP output tokens per GPU at ``target`` tokens/s per user) where
    InferenceX measured both arms on either side of the target."""
    out = []
    for m in _ev.measured_frontiers():
        plain, mtp = _ev.measured_at(m, target)
        if np.isfinite(plain) and np.isfinite(mtp):
            out.append((m, 1.0 - plain / mtp))
    return out


def _users_at(arm, speed: float) -> float:
    """The users at which ``arm`` serves each ``speed`` tokens/s (interpolated in log-log)."""
    s, c = _fr._sorted(arm.speed_per_user, arm.concurrency)
    return float(np.exp(np.interp(np.log(speed), np.log(s), np.log(c))))


def facts(price: float = PRICE, target: float = TARGET) -> dict:
    """The chapter's numbers: the default configuration's cheapest points, saving and speed-up at a fixed
    number of users; the savings over every configuration, predicted and measured; where the frontiers
    cross; and the frontiers held out by chip."""
    m = _ev.reference("H200", "SGLang", "1k1k")
    alpha, _ = _ev.shipped_alpha(m)
    f = _fr.frontier(m.deployment("calibrated"), (m.input_len, m.output_len), gamma=m.gamma, alpha=alpha)
    best = f.cheapest(target, price)
    users = best["plain"]["concurrency"]
    at_users = _fr.frontier(m.deployment("calibrated"), (m.input_len, m.output_len), gamma=m.gamma, alpha=alpha,
                            concurrencies=[users], interval=False)
    out = {"alpha": alpha, "gamma": m.gamma, "plain_users": users, "plain_cost": best["plain"]["cost_per_million"],
           "mtp_users": best["speculative"]["concurrency"], "mtp_cost": best["speculative"]["cost_per_million"],
           "saving": best["saving"], "saving_lo": best["saving_80"][0], "saving_hi": best["saving_80"][1],
           "matched_ratio": best["speculative"]["tokens_per_gpu"] / best["plain"]["tokens_per_gpu"],
           "fixed_ratio": float(at_users.speculative.throughput_per_gpu[0] / at_users.plain.throughput_per_gpu[0]),
           "crossing": f.crossover()}
    shipped = shipped_frontiers()
    savings = [(mm, ff.cheapest(target)["saving"]) for mm, ff in shipped]
    savings = [(mm, s) for mm, s in savings if s is not None]
    out.update(configurations=len(shipped), saving_min=min(s for _, s in savings),
               saving_max=max(s for _, s in savings), savings_positive=sum(s > 0 for _, s in savings),
               savings_count=len(savings))
    crossings = [ff.crossover() for _, ff in shipped]
    users = [_users_at(ff.plain, c.speed) for c, (_, ff) in zip(crossings, shipped) if c.crosses]
    out.update(crossings=sum(c.crosses for c in crossings), crossing_users_min=min(users, default=float("nan")),
               crossing_fastest=max((c.speed for c in crossings if c.crosses), default=float("nan")),
               crossing_winner_above=sorted({c.above for c in crossings if c.crosses}))
    measured = measured_savings(target)
    out.update(measured_count=len(measured), measured_positive=sum(s > 0 for _, s in measured),
               measured_min=min((s for _, s in measured), default=float("nan")),
               measured_max=max((s for _, s in measured), default=float("nan")))
    s = _ev.summary()
    out.update(held_points=s["points"], held_error=s["median_abs_error"],
               held_error_users=s["median_abs_error_at_concurrency"], held_signed=s["mean_signed_error"],
               chips=s["chips"], chips_agreeing=s["chips_agreeing"],
               measured_crossings=sum(r["measured_crossings"] for r in s["by_chip"].values()),
               compared=sum(r["crossovers_compared"] for r in s["by_chip"].values()),
               agreeing=sum(r["crossovers_agree"] for r in s["by_chip"].values()),
               uncompared_chips=[c for c, r in s["by_chip"].items() if not r["crossovers_compared"]])
    out["default_crossing"] = out["crossing"].speed
    # the configurations whose held-out prediction disagrees with the measured frontiers: where each predicted
    # crossing lies, against the slowest speed both measured arms reach
    wrong = [(c.measured, *c.crossovers()) for c in _ev.held_out_frontiers() if c.crossover_agrees() is False]
    out["disagreeing"] = len(wrong)
    # the same configurations predicted by the step fitted on every run, their own chip's runs in
    full = _fit.fit(_feat.SHIPPED_FORM)
    out["disagreeing_in_sample"] = sum(_ev.check_fitted(m, full).crossover_agrees() is False for m, _, _ in wrong)
    out["disagreeing_chips"] = sorted({m.chip for m, _, _ in wrong})
    out["disagreeing_text"] = common.join_and([
        f"{m.chip} under {common.ENGINE_NAMES.get(m.engine, m.engine)} at {m.workload.replace('k', 'k/', 1)}"
        + (f" (predicted to cross at {p.speed:.0f} tokens/s per user, measured from {mc.lowest:.0f})" if p.crosses
           else "") for m, mc, p in wrong])
    return out
