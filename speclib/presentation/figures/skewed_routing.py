"""Figures and table of the chapter "Skewed expert routing": the experts a
verify step reads, measured by width and by depth against the uniform and
the skewed counts, and what measured routing skew does to the price of a
speculated token and to gamma*."""
from __future__ import annotations

import numpy as np

from ...core import moe as _moe
from ...core import speculation as _spec
from ...core.deployment import Deployment
from ...presets import resolve
from ..definition import Axis, Figure, HLine, Line, Panel, Points
from ..style import CYCLE
from . import common
from .draft_length import integer_batches


def _width_depth(p, xp):
    data = _moe.measured_width_depth()
    shares = _moe.measured_popularity() if p.popularity is None else p.popularity
    N = np.linspace(1, 16, 200)
    return {"N": N, "uniform": _moe.experts_activated(N, p.k, p.E),
            "skewed": _moe.experts_activated(N, p.k, p.E, routing=shares), "measured_N": data["N"],
            "width": data["width"], "depth": data["depth"], "model": data["model"]}


width_depth = Figure(
    name="width_depth", title="", compute=_width_depth, size=(6.6, 4.0),
    params={"popularity": None, "k": 8, "E": 256},
    panels=(Panel(Axis("positions in the verify step N", lo=0.5, hi=16.5), Axis("distinct routed experts per layer",
                                                                                 lo=0),
                  (Line("N", "uniform", label="uniform routing: E (1 - (1 - k/E)^N)", color="ridge", dash="dashed",
                        width=1.4, gid="uniform"),
                   Line("N", "skewed", label="measured popularity: \u03a3 [1 - (1 - k p\u1d62)^N]", color="moe",
                        gid="skewed"),
                   Points("measured_N", "width", label="measured: N sequences (width)", color="moe", filled=False,
                          size=6, gid="width"),
                   Points("measured_N", "depth", label="measured: one sequence, N positions (depth)", color=CYCLE[0],
                          marker="s", size=5, gid="depth")),
                  title="{model}: experts a verify step reads (top-{k} of {E})", legend="upper left"),),
    doc="Distinct routed experts one MoE layer reads for N positions in one verify: measured from N sequences "
        "(width) and from one sequence (depth), against the uniform coupon count and the skewed count from the "
        "measured popularity.")


def _effects(p, xp):
    m, hw = resolve(p.model, p.hardware)
    B = integer_batches(p.batch_range[0], p.batch_range[1], p.points)
    return {"B": B, "model": m.name, "hardware": hw.name,
            "what": "measured survival" if p.alpha is None else f"\u03b1 = {p.alpha:g}",
            **_spec.routing_skew(B, p.S, Deployment(m, hw, drafter=p.drafter, c_draft=p.c_draft, attention="paper"),
                                 alpha=p.alpha, popularity=p.popularity, gamma_max=p.gamma_max)}


def _effect_lines(prefix, label):
    return tuple(Line("B", f"{prefix}_{key}", label=label.format(key=key), color="ridge" if key == "uniform" else "moe",
                      dash="dashed" if key == "uniform" else "solid", step=prefix == "gamma", gid=f"{prefix}_{key}")
                 for key in ("uniform", "skewed"))


skew_effects = Figure(
    name="skew_effects", title="{model} on {hardware}: uniform against measured routing\nthe whole step, each component its own roofline", compute=_effects,
    size=(9.0, 3.8),
    params={"model": "Qwen3.6-35B-A3B", "hardware": "B200", "S": 512, "drafter": "Qwen3.6-MTP", "c_draft": None,
            "alpha": None, "popularity": None, "batch_range": (1, 4096), "points": 160, "gamma_max": 16},
    panels=(Panel(common.batch_axis(), Axis("verify 2 positions / plain step"),
                  (*_effect_lines("tax", "{key} routing"), HLine(1.0, dash="dotted", width=0.8)),
                  title="price of one speculated token", legend="below"),
            Panel(common.batch_axis(), Axis("optimal draft length \u03b3*", lo=0),
                  _effect_lines("gamma", "\u03b3*, {key}"), title="\u03b3* ({what}, S = {S:,.0f})",
                  legend="upper right")),
    doc="What measured routing skew does, against uniform routing, on the whole step: the cost of verifying one "
        "speculated token (a step of 2 positions over a plain one, the expert tax as a ratio; left) and gamma* "
        "(right). alpha None uses the drafter preset's measured survival curve.")


def skew_rows(model="Qwen3.6-35B-A3B", hardware="B200", *, S=512, drafter="Qwen3.6-MTP", c_draft=None, alpha=None,
              batches=(1, 2, 4, 8, 16, 32, 64, 256, 1024), popularity=None, gamma_max=16):
    """Rows (batch, experts per layer touched by a plain step: uniform,
    skewed; verify-2 over plain: uniform, skewed; gamma* and speedup:
    uniform, skewed)."""
    dep = Deployment(model, hardware, drafter=drafter, c_draft=c_draft, attention="paper")
    e = _spec.routing_skew(np.asarray(batches, dtype=float), S, dep, alpha=alpha, popularity=popularity,
                           gamma_max=gamma_max)
    columns = ("experts_uniform", "experts_skewed", "tax_uniform", "tax_skewed", "gamma_uniform", "speedup_uniform",
               "gamma_skewed", "speedup_skewed")
    return [(b, *(e[c][i].item() for c in columns)) for i, b in enumerate(batches)]


#: The sensitivity case of the chapter: DeepSeek-V4-Flash at Figure 3's settings.
V4_CASE = {"model": "DeepSeek-V4-Flash", "hardware": "B200", "S": 4096, "c_draft": 0.10, "alpha": 0.75}


#: What the per-layer ledger leaves out and the gutter on the whole step, computed in the core (the
#: reproduction report checks them too): importable from here as the chapter names them.
outside_the_layers = _spec.outside_the_layers
gutter = _spec.whole_step_gutter


def runs_text(runs) -> str:
    """Runs of batches as the prose writes them: '5–12', or '5–12 and 40–41'."""
    return " and ".join(f"{a:,}" if a == b else f"{a:,}\u2013{b:,}" for a, b in runs) or "none"
