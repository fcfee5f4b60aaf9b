"""Figures of the chapter "The pricing rule": how much more a step costs
priced per component than as one roofline, and what each rule does to
gamma* and to the simulated throughput."""
from __future__ import annotations

import numpy as np

from ...core import step as _step
from speclib.evidence import simulator as sequel
from ...presets import resolve
from ..arrays import numpy_ops
from ..definition import Axis, Choice, Figure, HLine, Line, Panel, Points
from . import common
from . import simulated_serving as serving
from .draft_length_per_concurrency import ACCEPTANCE, concurrency_axis, concurrency_batches

_STYLES = {"aggregate": "solid", "per-component": "dashed"}


def _ratio(p, xp):
    model, hw = resolve(p.model, p.hardware)
    B = xp.geomspace(serving.DRAFTER_BATCHES[0], serving.DRAFTER_BATCHES[1], p.points)
    T = xp.asarray(np.asarray(p.widths, dtype=float))[:, None]
    per, agg = (_step.step_model(model, hw, roofline=rule, attention="paper").time(B[None, :], T, p.S, xp.F)
                for rule in ("per-component", "aggregate"))
    ratio = per / agg
    return {"B": B, "ratio": ratio, "labels": [f"T = {t:g}" for t in p.widths], "model": model.name,
            "hardware": hw.name, "y_hi": xp.maximum(1.2, common.nice_ceiling(xp, 1.04 * xp.max(ratio)))}


pricing_ratio = Figure(
    name="pricing_ratio",
    title="Two ways to price a step: {model} on {hardware}\nS = {S:,.0f}",
    compute=_ratio,
    controls=(common.model_choice(serving.HYBRID_MODEL), common.seq_slider(4096, "context S"),
              common.hardware_choice()),
    params={"widths": serving.PRICING_WIDTHS, "points": 200},
    panels=(Panel(common.batch_axis(*serving.DRAFTER_BATCHES), Axis("per-component time / aggregate time", lo=0.95,
                                                                   hi="y_hi"),
                  (HLine(1.0, text="the rules agree", gid="equal"),
                   Line("B", "ratio", labels="labels", gid="ratio")), legend="upper left"),),
    doc="How much more a step costs priced per component than priced as one roofline, against batch, for a few "
        "verify widths.",
)


def _gamma(p, xp):
    C, B = concurrency_batches(p.points)
    rows = sequel.load_grid().drafters[p.drafter]
    shortfall = sequel.rule_shortfall(p.drafter, acceptance=p.acceptance)
    worst = max(float(shortfall[rule][1].max()) for rule in _step.ROOFLINES)
    out = {"B": B, "C": C, "best": rows.best_gamma, "label": serving.DRAFTER_LABELS[p.drafter],
           "y_top": rows.gamma_max + 1, "loss_top": max(5.0, float(common.nice_ceiling(numpy_ops, 110 * worst)))}
    for rule in _step.ROOFLINES:
        out[f"gamma_{rule}"], _ = sequel.policy(p.drafter, B, roofline=rule, acceptance=p.acceptance)
        out[f"loss_{rule}"] = 100 * shortfall[rule][1]
    return out


pricing_gamma = Figure(
    name="pricing_gamma",
    title="What the pricing rule does to {label}'s \u03b3*\nthe whole step under each rule, no rollback, {acceptance} acceptance",
    compute=_gamma,
    controls=(Choice("drafter", "drafter", tuple((serving.DRAFTER_LABELS[k], k) for k in sequel.DRAFTER_KEYS),
                     "dflash"), ACCEPTANCE),
    params={"points": 200},
    panels=(Panel(concurrency_axis("concurrency"), Axis("draft length \u03b3*", lo=0, hi="y_top"),
                  (*(Line("B", f"gamma_{rule}", label=f"{rule} rule", color=rule, dash=_STYLES[rule], step=True,
                          gid=f"gamma_{rule}") for rule in _step.ROOFLINES),
                   Points("C", "best", label="the simulator's best fixed \u03b3", color="total", filled=False, size=6,
                          gid="simulated_best")), legend="below"),
            Panel(concurrency_axis("concurrency"), Axis("simulated throughput lost (% of the best fixed \u03b3)",
                                                        lo=-0.5, hi="loss_top"),
                  tuple(Line("C", f"loss_{rule}", color=rule, dash=_STYLES[rule], marker="o", gid=f"loss_{rule}")
                        for rule in _step.ROOFLINES), legend="")),
    size=(8.6, 4.0),
    doc="gamma* under each pricing rule against concurrency (left), and what the rule's choice costs in the "
        "simulator (right).",
)


def policy_moves() -> dict:
    """How the paper's rule moves the priced policy against the simulator's
    grid, per drafter key: at how many of the grid's concurrencies gamma*
    differs from the best fixed gamma with the whole step priced per component
    (``both``: verify pass and drafter, as :func:`speclib.evidence.simulator.rule_shortfall`
    prices it) and with only the verify pass priced so (``verify_only``: the
    drafter on the simulator's rule, as the sequel counts), and the largest
    share of simulated throughput the first loses (``worst_loss``). Key
    ``"tipped"``: the concurrencies where the two counts differ."""
    grid = sequel.load_grid()
    verify_only = sequel.compare(roofline="per-component", drafter_roofline="aggregate")
    out, tipped = {}, np.zeros(grid.concurrency.shape, dtype=bool)
    for key in sequel.DRAFTER_KEYS:
        g, loss = sequel.rule_shortfall(key)["per-component"]
        both = np.asarray(g) != grid.drafters[key].best_gamma
        alone = ~verify_only[key].best_gamma_agrees
        tipped |= both != alone
        out[key] = {"both": int(both.sum()), "verify_only": int(alone.sum()), "worst_loss": float(loss.max())}
    out["tipped"] = grid.concurrency[tipped]
    return out
