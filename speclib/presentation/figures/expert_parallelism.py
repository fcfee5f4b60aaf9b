"""Figures and table of the chapter "Expert parallelism": gamma* and the
speedup against the batch per GPU with the experts spread over G GPUs, the
ledger with the all-to-all in it, and a summary per G."""
from __future__ import annotations

import numpy as np

from ...core import cost as _cost
from ...core import parallel as _par
from ...core import speculation as _spec
from ...core.deployment import Deployment
from ...core.speculation import zero_gamma_bands
from ...presets import resolve
from ..definition import Axis, Figure, HLine, Key, Line, Panel
from ..style import COLORS, CYCLE
from ..tables import NumberTable
from . import common
from .draft_length import integer_batches

#: The step model every gamma* and speedup of the chapter is priced with, as its tables' captions name it.
STEP_MODEL = "priced by the paper's ledger (the roofline per layer) with the all-to-all added"

#: Colours of the EP group sizes.
G_COLORS = (COLORS["total"], CYCLE[0], CYCLE[3], CYCLE[2], CYCLE[4])
EP_BATCHES = (1, 4096)

#: The network the chapter's groups are joined by: B200s in one 72-GPU NVLink 5
#: domain, as an NVL72 rack joins them (an HGX board's 8 do not hold G = 64).
NETWORK = _par.NVL72


def _network_name(hw, interconnect, latency=True) -> str:
    net = _par.network(hw, interconnect)
    if net is None:
        return "a free network"
    return net.name if latency else f"{net.name} (bandwidth only)"


def _optimal(cost_model, alpha, B, S, c_draft):
    return _spec.optimal_gamma(alpha, B, S, c_draft, deployment=Deployment(cost_model=cost_model))


def _ep(p, xp):
    model, hw = resolve(p.model, p.hardware)
    net = p.interconnect
    B = integer_batches(EP_BATCHES[0], EP_BATCHES[1], p.points)
    out = {"B": B, "model": model.name, "hardware": hw.name, "network": _network_name(hw, net, p.latency),
           "Gs": list(p.Gs)}
    for G in p.Gs:
        cm = _par.expert_parallel_cost_model(model, hw, G, net, latency=p.latency, attention="paper")
        free = _par.expert_parallel_cost_model(model, hw, G, _par.FREE_NETWORK, attention="paper")
        out[f"gamma_G{G}"], out[f"speedup_G{G}"] = _optimal(cm, p.alpha, B, p.S, p.c_draft)
        out[f"free_gamma_G{G}"], out[f"free_speedup_G{G}"] = _optimal(free, p.alpha, B, p.S, p.c_draft)
        ledger = _par.ledger(cm, B, p.S, p.c_draft)
        out[f"total_G{G}"] = ledger["total"]
        out[f"comm_G{G}"] = ledger["comm"] * ledger["comm_share"] if G > 1 else np.zeros_like(B)
        out[f"multi_G{G}"] = G > 1
    return out


def _ep_panels(data):
    top, bottom = [], []
    for i, G in enumerate(data["Gs"]):
        c = G_COLORS[i % len(G_COLORS)]
        top += [Line("B", f"gamma_G{G}", label=f"G = {G}", color=c, step=True, gid=f"gamma_G{G}"),
                Line("B", f"free_gamma_G{G}", color=c, dash="dashed", width=1.2, step=True, when=f"multi_G{G}")]
        bottom += [Line("B", f"speedup_G{G}", color=c, gid=f"speedup_G{G}"),
                   Line("B", f"free_speedup_G{G}", color=c, dash="dashed", width=1.2, when=f"multi_G{G}")]
    return (Panel(common.batch_axis(label=""), Axis("optimal draft length \u03b3*", lo=0), tuple(top),
                  title="Experts over G GPUs: {model} on {hardware} + {network}\nS = {S:,.0f}, \u03b1 = {alpha:.0%}, "
                        "drafter {c_draft:.0%} of a step", legend="upper right"),
            Panel(common.batch_axis(label="batch per GPU (sequences)"), Axis("speedup at \u03b3*"),
                  (*bottom, HLine(1.0, width=0.8, dash="solid")), legend=""))


_PARAMS = {"Gs": (1, 8, 64), "model": None, "hardware": None, "S": 4096, "alpha": 0.75, "c_draft": 0.10,
           "interconnect": NETWORK, "latency": True, "points": 300}

ep_gamma_star = Figure(
    name="ep_gamma_star", title="", compute=_ep, panels=_ep_panels, columns=1, size=(7.0, 5.6), params=_PARAMS,
    keys=(Key("free network", color=COLORS["ridge"], dash="dashed"),),
    doc="gamma* (top) and the speedup at gamma* (bottom) against the batch per GPU, experts spread over G GPUs; "
        "solid with the all-to-all tax (its latency and its bytes), dashed with a free network (same G).")

#: The same by bandwidth alone: the all-to-all's latency left out.
ep_gamma_star_bandwidth = ep_gamma_star.variant("ep_gamma_star_bandwidth", latency=False)


def _ledger_panels(data):
    series = []
    for i, G in enumerate(data["Gs"]):
        c = G_COLORS[i % len(G_COLORS)]
        series += [Line("B", f"total_G{G}", label=f"G = {G}: speculated-token cost", color=c, gid=f"total_G{G}"),
                   Line("B", f"comm_G{G}", label=f"G = {G}: of which all-to-all", color=c, dash="dashed", width=1.3,
                        when=f"multi_G{G}", gid=f"comm_G{G}")]
    return (Panel(common.batch_axis(label="batch per GPU (sequences)"),
                  Axis("cost of a speculated token\n(\u00d7 a token already in the batch)", lo=0, hi=1.75),
                  (*series, HLine(1.0, width=1.0)),
                  title="The ledger with expert parallelism: {model} on {hardware}, S = {S:,.0f}",
                  legend="upper left"),)


ep_marginal_cost = Figure(
    name="ep_marginal_cost", title="", compute=_ep, panels=_ledger_panels, size=(7.0, 4.0), params=_PARAMS,
    doc="The cost of a speculated token (the paper's ledger, total) against the batch per GPU for each G (solid), "
        "and the part of it that is the all-to-all (dashed): the communication slope times its cost share.")


def _zero_runs(B, g):
    spans = [f"{lo:,.0f}-{hi:,.0f}" for lo, hi, _ in zero_gamma_bands(B, g)]
    return ", ".join(spans) if spans else "never"


def expert_parallel_summary(Gs=(1, 8, 64), model=None, hardware=None, *, S=4096, alpha=0.75, c_draft=0.1,
                            interconnect=NETWORK, B=None) -> NumberTable:
    """Per G: where speculation pays (gamma* >= 1) against the batch per GPU
    ``B`` (default 1..4,096 sequences per GPU, whole numbers, about 300
    log-spaced), the best speedup and where, and what the all-to-all (its
    latency and its bytes) does to the speedup against a free network: the
    most it takes away and the most it adds (its latency is paid by a plain
    step too, so it can add)."""
    m, hw = resolve(model, hardware)
    B = _cost.check_batch(integer_batches(EP_BATCHES[0], EP_BATCHES[1], 300) if B is None else B).ravel()
    rows, held = [], []
    for G in Gs:
        g, s = _optimal(_par.expert_parallel_cost_model(m, hw, G, interconnect, attention="paper"), alpha, B, S,
                        c_draft)
        g0, s0 = _optimal(_par.expert_parallel_cost_model(m, hw, G, _par.FREE_NETWORK, attention="paper"), alpha, B,
                          S, c_draft)
        best = int(np.argmax(s))
        dep = group_deployment(m, hw, G, interconnect)
        mark, point = common.held_point(dep, S, B[best] * G, g[best])
        held.append(point)
        rows.append((str(G), _zero_runs(B, g), str(g.max()), f"{s[best]:.3f}", f"{B[best]:,.0f}{mark}",
                     f"{max(np.max(1 - s / s0), 0.0):.1%}", f"{max(np.max(s / s0 - 1), 0.0):.1%}",
                     str(np.count_nonzero(g != g0)), f"{dep.max_batch(float(S)) // G:,}"))
    caption = (f"Expert parallelism, {m.name} on {hw.name} + {_network_name(hw, interconnect)}, {STEP_MODEL}: "
               f"S = {float(S):,.0f}, \u03b1 = {float(alpha):.0%}, drafter {float(c_draft):.0%} of a step, batch per "
               f"GPU {B[0]:,.0f} to {B[-1]:,.0f}. Last column: the sequences per GPU the group holds without "
               f"drafting, its attention split by sequence and its cache as the paper prices it; {common.NOT_HELD}: "
               "a batch the group does not hold at that draft length")
    head = ("G", "\u03b3* = 0 (batch per GPU)", "largest \u03b3*", "best speedup", "at batch",
            "speedup lost to all-to-all (max)", "speedup added by its latency (max)",
            "batches where the all-to-all changes \u03b3*", "batch per GPU held")
    return NumberTable(head, tuple(rows), caption=caption, align="rl",
                       css_class="speclib-nowrap speclib-ep-summary", held=tuple(held))


def group_deployment(model, hardware, G, interconnect=NETWORK) -> Deployment:
    """The G-GPU group the expert-parallel ledger prices, as a deployment
    holds it: experts split over the G GPUs joined by ``interconnect`` (an
    interconnect preset; None: the chip's own; a free network: the chip's
    own NVLink domain, as the group's memory does not depend on it),
    attention by sequence (one GPU: the model alone)."""
    if G == 1:
        return Deployment(model, hardware, attention="paper")
    net = _par.network(hardware, interconnect)
    net = NETWORK if net is None else net.name
    return Deployment(model, hardware, tp=G, ep=G, dp_attention=True, attention="paper", interconnect=net)


def all_to_all_latency(cases=((8, NETWORK), (64, NETWORK), (64, "InfiniBand-NDR")), model=None, hardware=None, *,
                       S=4096,
                       alpha=0.75, c_draft=0.1, B=None) -> NumberTable:
    """The all-to-all priced by bandwidth alone against latency plus
    bandwidth, per (G, interconnect) in ``cases`` (None: the chip's own
    network): the tokens per GPU below which its latency outweighs its bytes,
    the latency's share of a plain step at one sequence per GPU, and gamma*
    and its speedup at one sequence per GPU, the best speedup and the batch
    per GPU where it is reached, each way."""
    m, hw = resolve(model, hardware)
    B = _cost.check_batch(integer_batches(EP_BATCHES[0], EP_BATCHES[1], 300) if B is None else B).ravel()
    rows = []
    for G, net in cases:
        cms = {lat: _par.expert_parallel_cost_model(m, hw, G, net, latency=lat, attention="paper")
               for lat in (False, True)}
        res = {lat: _optimal(cm, alpha, B, S, c_draft) for lat, cm in cms.items()}
        share = float(cms[True].comm_latency() / cms[True].decode(1.0, float(S)))
        cells = []
        for lat in (False, True):
            g, s = res[lat]
            best = int(np.argmax(s))
            cells += [f"{g[0]} / {s[0]:.3f}", f"{s[best]:.3f} at {B[best]:,.0f}"]
        rows.append((str(G), _network_name(hw, net), f"{cms[True].latency_crossover():,.0f}", f"{share:.0%}", *cells))
    head = ("G", "network", "latency outweighs the bytes below (tokens per GPU)",
            "latency's share of a plain step at 1 sequence per GPU",
            "bandwidth only: γ* / speedup at 1 per GPU", "bandwidth only: best speedup",
            "with latency: γ* / speedup at 1 per GPU", "with latency: best speedup")
    caption = (f"The all-to-all by bandwidth alone and with its latency, {m.name} on {hw.name}, {STEP_MODEL}: "
               f"S = {float(S):,.0f}, \u03b1 = {float(alpha):.0%}, drafter {float(c_draft):.0%} of a step, batch per "
               f"GPU {B[0]:,.0f} to {B[-1]:,.0f}")
    return NumberTable(head, tuple(rows), caption=caption, align="rl",
                       css_class="speclib-nowrap speclib-ep-summary")
