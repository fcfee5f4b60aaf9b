"""Figures and tables of the chapter "Measured acceptance curves": survival
against draft depth against the i.i.d. curve, gamma* and the speedup under
each, and how much the i.i.d. model flatters.

These figures have no controls: their compute functions call speclib's API
directly (numpy), and their panels follow the curves in the data.
"""
from __future__ import annotations

import numpy as np

from ...core import acceptance as _acc
from ...core import cost as _cost
from ...core import speculation as _spec
from ...core.deployment import Deployment
from ...presets import resolve
from ..definition import Axis, Figure, HLine, Line, Panel
from ..tables import NumberTable
from . import common
from .draft_length import integer_batches

#: The parameters of the figures over batch (the measured curves and the setting).
_BATCH_PARAMS = {"curves": None, "model": None, "hardware": None, "S": 4096, "c_draft": 0.10, "points": 400}
#: Colours of the two measured drafters.
DRAFTER_COLORS = {"mtp": "#1f77b4", "dflash": "#ff7f0e"}


def _curves(curves):
    return _acc.load_survival_curves() if curves is None else {k: _acc.as_survival_curve(v)
                                                               for k, v in dict(curves).items()}


# --- survival against depth --------------------------------------------------------------


def _survival(p, xp):
    curves = _curves(p.curves)
    out = {"keys": list(curves)}
    for key, curve in curves.items():
        out.update({f"{key}_d": np.arange(1.0, len(curve) + 1), f"{key}_survival": curve.values,
                    f"{key}_iid": curve.iid().values, f"{key}_conditional": curve.conditional_acceptance,
                    f"{key}_alpha": curve.first_position_acceptance, f"{key}_name": curve.name})
    return out


def _survival_panels(data):
    left, right = [], []
    for k in data["keys"]:
        c = DRAFTER_COLORS.get(k, "")
        left += [Line(f"{k}_d", f"{k}_survival", label=f"{{{k}_name}} measured", color=c, marker="o",
                      gid=f"survival_{k}"),
                 Line(f"{k}_d", f"{k}_iid", label=f"\u03b1^d, \u03b1 = {{{k}_alpha:.3f}}", color=c, dash="dashed",
                      width=1.4, gid=f"iid_{k}")]
        right += [Line(f"{k}_d", f"{k}_conditional", label=f"{{{k}_name}}", color=c, marker="o",
                       gid=f"conditional_{k}"), HLine(f"{k}_alpha", color=c, width=1.2)]
    return (Panel(Axis("draft position d"), Axis("P(position d survives)", lo=0, hi=1), tuple(left),
                  title="Survival against depth"),
            Panel(Axis("draft position d"), Axis("P(d survives | d-1 survived)", lo=0.6, hi=1.0), tuple(right),
                  title="Conditional acceptance (i.i.d.: flat, dashed)", legend="lower right"))


survival_curves = Figure(
    name="survival_curves", title="", compute=_survival, panels=_survival_panels, params={"curves": None},
    size=(8.0, 3.6),
    doc="Measured survival s_d against draft position d with the i.i.d. curve alpha**d of the same first-position "
        "acceptance (left), and the conditional acceptance s_d / s_(d-1), which i.i.d. holds flat at alpha (right).")


# --- gamma* and the speedup under each curve ----------------------------------------------


def _gamma_tables(p, xp=None):
    model, hw = resolve(p.model, p.hardware)
    B, curves = integer_batches(n=p.points), _curves(p.curves)
    out = {"B": B, "keys": list(curves), "model": model.name, "hardware": hw.name}
    for key, curve in curves.items():
        alpha = curve.first_position_acceptance
        for name, acceptance in (("measured", curve), ("capped", curve.iid()), ("free", alpha)):
            out[f"{key}_{name}_gamma"], out[f"{key}_{name}_speedup"] = _spec.optimal_gamma(
                acceptance, B, p.S, p.c_draft, gamma_max=64, deployment=Deployment(model, hw, attention="paper"))
        out.update({f"{key}_name": curve.name, f"{key}_length": len(curve), f"{key}_alpha": alpha})
    return out


def _gamma_panels(data):
    tops, bottoms = [], []
    for k in data["keys"]:
        c = DRAFTER_COLORS.get(k, "")
        tops.append(Panel(common.batch_axis(label=""), Axis("optimal draft length \u03b3*", lo=0), (
            Line("B", f"{k}_free_gamma", label="i.i.d., \u03b3 \u2264 64", color="ridge", dash="dotted", width=1.5,
                 step=True),
            Line("B", f"{k}_capped_gamma", label=f"i.i.d., \u03b3 \u2264 {{{k}_length}}", color="total",
                 dash="dashed", width=1.5, step=True),
            Line("B", f"{k}_measured_gamma", label=f"{{{k}_name}} measured", color=c, step=True, gid=f"gamma_{k}")),
            title=f"{{{k}_name}} (\u03b1 = {{{k}_alpha:.3f}})", legend="upper right"))
        bottoms.append(Panel(common.batch_axis(), Axis("speedup at \u03b3*"), (
            Line("B", f"{k}_free_speedup", color="ridge", dash="dotted", width=1.5),
            Line("B", f"{k}_capped_speedup", color="total", dash="dashed", width=1.5),
            Line("B", f"{k}_measured_speedup", color=c, gid=f"speedup_{k}"),
            HLine(1.0, width=0.8, dash="solid")), legend=""))
    return (*tops, *bottoms)


survival_gamma_star = Figure(
    name="survival_gamma_star",
    title="{model} on {hardware}, S = {S:,.0f}, drafter {c_draft:.0%} of a step; the roofline per layer",
    compute=_gamma_tables, panels=_gamma_panels, columns=2, size=(8.0, 5.6), params=_BATCH_PARAMS,
    doc="gamma* against batch for each measured curve (solid), the i.i.d. curve of the same alpha searched over the "
        "same lengths (dashed), and the i.i.d. model as the paper runs it, up to gamma = 64 (dotted); the speedup at "
        "gamma* underneath.")


def _ratio(p, xp):
    out = _gamma_tables(p)
    for k in out["keys"]:
        out[f"{k}_ratio_capped"] = out[f"{k}_measured_speedup"] / out[f"{k}_capped_speedup"]
        out[f"{k}_ratio_free"] = out[f"{k}_measured_speedup"] / out[f"{k}_free_speedup"]
        out[f"{k}_differs"] = not np.array_equal(out[f"{k}_free_speedup"], out[f"{k}_capped_speedup"])
    return out


def _ratio_panels(data):
    series = []
    for k in data["keys"]:
        c = DRAFTER_COLORS.get(k, "")
        series += [Line("B", f"{k}_ratio_capped", color=c, gid=f"ratio_{k}",
                        label=f"{{{k}_name}}: measured / i.i.d. (\u03b3 \u2264 {{{k}_length}})"),
                   Line("B", f"{k}_ratio_free", label=f"{{{k}_name}}: measured / i.i.d. (\u03b3 \u2264 64)", color=c,
                        dash="dotted", width=1.5, when=f"{k}_differs")]
    return (Panel(common.batch_axis(), Axis("speedup ratio"), (*series, HLine(1.0, width=0.8, dash="solid")),
                  title="How much the i.i.d. model flatters (the roofline per layer)\n"
                        "{model} on {hardware}, S = {S:,.0f}",
                  legend="lower right"),)


survival_speedup_ratio = Figure(
    name="survival_speedup_ratio", title="", compute=_ratio, panels=_ratio_panels, size=(7.0, 3.8),
    params=_BATCH_PARAMS,
    doc="Best speedup under the measured curve over the best the i.i.d. model promises (same alpha; searched to the "
        "curve's length, and to 64).")


# --- tables ---------------------------------------------------------------------------


def _committed_cells(curve, g):
    if g > len(curve):
        return ("", "", "")
    n = _acc.expected_committed_from_survival(curve, g)
    n_iid = _acc.expected_committed(curve.first_position_acceptance, g)
    return (f"{n:.3f}", f"{n_iid:.3f}", f"{n - n_iid:+.3f}")


def committed_table(curves=None) -> NumberTable:
    """N(gamma) under each measured curve in ``curves`` (default: the shipped
    MTP and DFlash curves) and under the i.i.d. curve of the same
    first-position acceptance, gamma = 1 .. the longest curve's length."""
    curves = _curves(curves)
    head = ("\u03b3", *(h for c in curves.values() for h in (f"{c.name} N", "i.i.d. N", "diff")))
    rows = tuple((str(g), *(cell for c in curves.values() for cell in _committed_cells(c, g)))
                 for g in range(1, max(len(c) for c in curves.values()) + 1))
    caption = ("Expected tokens committed per verify pass, N(\u03b3): measured survival curve, the i.i.d. curve "
               "\u03b1^d with \u03b1 = survival(1), and measured minus i.i.d. (positive: the curve beats i.i.d.)")
    return NumberTable(head, rows, caption=caption, css_class="speclib-committed-table")


#: The step model every gamma* and speedup of the chapter is priced with, as its captions name it.
STEP_MODEL = "priced by the paper's ledger (the roofline per layer)"


def iid_comparison(curves=None, B=None, S=4096, c_draft=0.1, model=None, hardware=None, *,
                   query_bytes=False) -> dict:
    """Per curve in ``curves`` (default: the shipped MTP and DFlash curves), by
    its key: the measured curve against the i.i.d. curve of the same
    first-position acceptance, gamma* searched over the same draft lengths,
    over the batches ``B`` (default: 600 whole-sequence batches from 1 to
    30,000): ``batches`` (how many), the counts and the worst shortfall of
    :func:`speclib.core.speculation.against_iid`, ``jumps`` (the batches where
    the two gamma* differ by more than one step), ``iid_max_gamma`` (the
    largest i.i.d. gamma* searched up to 64, as the paper searches);
    ``overstates`` (the most the i.i.d. N(gamma) exceeds the curve's),
    ``overstates_at`` (the gamma where it does) and ``understates_from`` (the
    first gamma at which it falls below the curve's; None if it never does);
    ``peak`` (the draft position where the conditional acceptance is
    highest)."""
    B = _cost.check_batch(integer_batches() if B is None else B).ravel()
    m, h = resolve(model, hardware)
    deployment = Deployment(m, h, query_bytes=query_bytes, attention="paper")
    out = {}
    for key, curve in _curves(curves).items():
        facts = dict(_spec.against_iid(curve, B, S, c_draft, deployment=deployment))
        g, _ = _spec.optimal_gamma(curve, B, S, c_draft, deployment=deployment)
        g_iid, _ = _spec.optimal_gamma(curve.iid(), B, S, c_draft, deployment=deployment)
        g_free, _ = _spec.optimal_gamma(curve.first_position_acceptance, B, S, c_draft, gamma_max=64,
                                        deployment=deployment)
        d = np.arange(1, len(curve) + 1)
        gap = (_acc.expected_committed(curve.first_position_acceptance, d)
               - _acc.expected_committed_from_survival(curve, d))
        below = np.flatnonzero(gap < -1e-12)  # at gamma = 1 the two agree up to rounding
        facts.update(batches=len(B), jumps=B[np.abs(g - g_iid) > 1], iid_max_gamma=int(np.max(g_free)),
                     overstates=float(gap.max()), overstates_at=int(d[np.argmax(gap)]),
                     understates_from=int(d[below[0]]) if below.size else None,
                     peak=int(np.argmax(curve.conditional_acceptance)) + 1, alpha=curve.first_position_acceptance,
                     name=curve.name, positions=len(curve))
        out[key] = facts
    return out


def compare_survival(curves=None, B=None, S=4096, c_draft=0.1, model=None, hardware=None, *,
                     query_bytes=False) -> NumberTable:
    """gamma* and the best speedup under each curve in ``curves`` (default: the
    shipped MTP and DFlash curves) against the i.i.d. curve of the same
    first-position acceptance (searched over the same draft lengths), over the
    batches ``B`` (default: 600 whole-sequence batches from 1 to 30,000):
    :func:`iid_comparison` as a table."""
    B = _cost.check_batch(integer_batches() if B is None else B).ravel()
    m, h = resolve(model, hardware)
    rows = []
    for c in iid_comparison(curves, B, S, c_draft, m, h, query_bytes=query_bytes).values():
        rows.append((c["name"], f"{c['alpha']:.3f}", str(c["positions"]), f"{c['differs']} of {len(B)}",
                     str(c["max_diff"]), str(c["longer"]), str(c["shorter"]), f"{c['shortfall']:.1%}",
                     f"{c['at']:,.0f}", f"{c['gamma']} / {c['iid_gamma']}"))
    caption = (f"Measured survival curve against i.i.d. acceptance with the same \u03b1 = survival(1), {STEP_MODEL}: "
               f"{m.name} on {h.name}, S = {float(S):,.0f}, drafter {float(c_draft):.0%} of a step, {len(B)} batches "
               f"from {B[0]:,.0f} to {B[-1]:,.0f}. Shortfall: 1 - measured best speedup / i.i.d. best speedup.")
    head = ("drafter", "\u03b1", "positions", "\u03b3* differs", "largest |diff|", "longer", "shorter",
            "largest shortfall", "at batch", "\u03b3* there (measured / i.i.d.)")
    return NumberTable(head, tuple(rows), caption=caption, css_class="speclib-survival-comparison",
                       align="l")
