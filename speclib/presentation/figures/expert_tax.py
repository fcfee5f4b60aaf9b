"""Figures of the chapter "The expert tax": Figure 1 (FFN arithmetic
intensity against batch, dense against MoE) on linear axes as the paper
draws it, and on log-log axes out to 30,000 tokens."""
from __future__ import annotations

from ...presets import resolve
from ..definition import Area, Axis, Choice, Figure, HLine, Line, Panel, Slider, Text
from . import common

#: Expert weight formats a reader can pick: bytes per parameter as stored,
#: and the GEMM precision the experts then run in.
WEIGHT_FORMATS = {"mxfp4": (0.53, "fp4"), "fp8": (1.0, "fp8"), "bf16": (2.0, "bf16")}


def _expert_tax(p, xp):
    model, hw = resolve(p.model, p.hardware)
    ffn = model.ffn
    if not ffn.is_moe:
        raise ValueError(f"model must be a mixture-of-experts model; {model.name} has a dense FFN")
    b, precision = WEIGHT_FORMATS[p.weights]
    ridge = hw.ridge(precision)
    E, n_s = p.experts, float(ffn.n_shared)
    k = xp.minimum(p.top_k, E)
    log = p.scale == "log"
    B = (xp.geomspace if log else xp.linspace)(1.0, p.batch_max, p.points)
    dense = xp.F.dense_intensity(B, b, ridge)
    moe = xp.F.moe_intensity(B, k, E, n_s, b, ridge)
    dense_knee = xp.F.dense_knee(b, ridge)
    expert_knee = xp.F.expert_knee(k, E)
    asymptotic = xp.F.moe_ridge_batch(k, E, n_s, b, ridge)
    # The exact crossing: the full MoE curve lies above its saturated line, so it crosses inside (0, asymptotic].
    moe_ridge = common.bisect(xp, lambda x: xp.F.moe_intensity_uncapped(x, k, E, n_s, b) >= ridge,
                              0.0 * asymptotic, asymptotic)
    on_chart = moe_ridge <= p.batch_max
    native = "" if hw.native(precision) else f" (no native {precision}: runs at the next wider precision's peak)"
    floor = 1e-3 if log else 0.0
    return {
        "B": B, "dense": dense, "moe": moe, "floor": floor + 0.0 * B, "dense_memory": dense < ridge,
        "moe_memory": moe < ridge, "ridge": ridge, "model": model.name, "hardware": hw.name,
        "precision": precision, "native": native, "b": b,
        "shared": f" + {ffn.n_shared} shared" if ffn.n_shared else "",
        "dense_knee": dense_knee, "expert_knee": expert_knee, "moe_ridge": moe_ridge,
        "expert_y": xp.F.moe_intensity(expert_knee, k, E, n_s, b, ridge),
        "moe_ridge_x": xp.where(on_chart, moe_ridge, float("nan")),
        "off_x": xp.where(on_chart, float("nan"), p.batch_max * (0.97 if not log else 0.6)),
        "off_y": 0.5 * p.intensity_max if not log else ridge * 0.3,
        "x_lo": 1.0 if log else 0.0, "y_lo": 1.0 if log else 0.0,
        "y_hi": max(p.intensity_max, ridge * 1.6) if log else p.intensity_max,
    }


def _knee_notes(scale):
    """The three knees, placed clear of the lines and the legend on each scale."""
    off = {"linear": {"dense": (40, -55), "expert": (30, 60), "moe": (-200, -40)},
           "log": {"dense": (-130, -40), "expert": (25, 45), "moe": (-75, -95)}}[scale]
    knees = (("dense", "dense_knee", "ridge", "dense meets the ridge\nat {dense_knee:,.0f} tokens"),
             ("expert", "expert_knee", "expert_y",
              "E/k = {expert_knee:,.1f} tokens: past here\nmost experts are already loaded"),
             ("moe", "moe_ridge_x", "ridge", "MoE meets the ridge\nat {moe_ridge:,.0f} tokens"))
    return (*(Text(x, y, text, size=8.5, dx=off[k][0], dy=off[k][1], arrow=True, marker="o", gid=f"knee_{k}")
              for k, x, y, text in knees),
            Text("off_x", "off_y", "MoE meets the ridge at {moe_ridge:,.0f} tokens\n(off this chart) \u2192", size=9,
                 align="right", gid="knee_off_chart"))


def _figure(name, scale, batch_max, intensity_max):
    ticks = "batch" if scale == "log" else "number"
    return Figure(
        name=name,
        title="The expert tax: {model} FFN on {hardware}, {b:g} bytes/param",
        compute=_expert_tax,
        controls=(Slider("experts", "routed experts E", 8, 512, 256, step=8, integer=True, format=","),
                  Slider("top_k", "experts per token k", 1, 16, 6, step=1, integer=True, format=","),
                  Choice("weights", "expert weights", tuple(WEIGHT_FORMATS), "mxfp4"),
                  common.hardware_choice()),
        params={"model": None, "scale": scale, "batch_max": batch_max, "intensity_max": intensity_max,
                "points": 2000},
        panels=(Panel(
            x=Axis("batch (tokens in the step)", scale, "x_lo", batch_max, ticks=ticks),
            y=Axis("arithmetic intensity (FLOP/byte)", scale, "y_lo", "y_hi"),
            series=(Area("B", "dense", y0="floor", where="dense_memory", color="dense", label="memory-bound: dense",
                         gid="dense_band"),
                    Area("B", "moe", y0="floor", where="moe_memory", color="moe", label="memory-bound: MoE",
                         gid="moe_band"),
                    Line("B", "dense", label="dense FFN, same weights", color="dense", gid="dense"),
                    Line("B", "moe", label="MoE: top-{top_k} of {experts}{shared}", color="moe", gid="moe"),
                    HLine("ridge", label="ridge", text="{hardware} {precision} ridge: {ridge:,.0f} FLOP/byte{native}",
                          gid="ridge"),
                    *_knee_notes(scale)),
            legend="lower right"),),
        doc="Figure 1: FFN arithmetic intensity against batch, dense versus MoE, both capped at the ridge of the "
            "experts' precision, memory-bound regions shaded, the knees marked.",
    )


expert_tax = _figure("expert_tax", "linear", 11_000, 1_200)
#: Figure 1 on log-log axes out to 30,000 tokens, where the expert knee E/k shows.
expert_tax_log = _figure("expert_tax_log", "log", 30_000, 1_200)


__all__ = ["WEIGHT_FORMATS", "expert_tax", "expert_tax_log"]
