"""Figures and a table of the chapter "The paper on silicon": one layer's
components timed on a GPU (``benchmarks/bench_layers.py``) against the
roofline, read and analysed by :mod:`speclib.evidence.silicon`.

The figures have no controls: their compute functions read a measurement
(``measured``: a :class:`~speclib.evidence.silicon.LayerMeasurements`, the
path of a ``<gpu>-layers.json``, or None for the first one shipped in
``speclib/data/measured/``), and their panels follow what it holds. Until a
measurement is shipped they draw one panel saying so.
"""
from __future__ import annotations

import numpy as np

from ...core import layers as _layers
from speclib.evidence import silicon as _si
from ..definition import Axis, Figure, HLine, Key, Line, Panel, Points, Text, VLine
from ..style import COLORS, CYCLE
from ..tables import NumberTable

#: What a figure says while no measurement is shipped.
NO_MEASUREMENT = "No measurement shipped yet: benchmarks/bench_layers.py writes one on a GPU"
BATCH_TICKS = (1, 4, 16, 64, 256)
WIDTH_TICKS = (1, 2, 3, 4, 6, 8)
KIND_TITLES = {"dense": "dense MLP", "moe": "MoE layer, routed experts"}
#: One colour per measured shape, and per context, the same in every panel
#: (a shape or context the benchmark does not measure takes the cycle's next).
SHAPE_COLORS = {"Llama-3.1-8B": CYCLE[0], "Llama-3-70B": CYCLE[1], "Qwen3-30B-A3B": CYCLE[2],
                "DeepSeek-V3": CYCLE[3], "gpt-oss-120b": CYCLE[4]}
CONTEXT_COLORS = {1024: CYCLE[0], 4096: CYCLE[1], 16384: CYCLE[2], 32768: CYCLE[3]}
MEASURED_KEYS = (Key("measured", marker="o"), Key("roofline", dash="dashed"))


def _color(table: dict, key, i: int) -> str:
    return table.get(key, CYCLE[(len(table) + i) % len(CYCLE)])


def measurement(measured=None):
    """``measured`` as a :class:`~speclib.evidence.silicon.LayerMeasurements`:
    itself, the file at that path, or (None) the first shipped one; None
    when nothing is shipped."""
    if measured is None:
        shipped = _si.shipped()
        return shipped[0] if shipped else None
    if isinstance(measured, _si.LayerMeasurements):
        return measured
    return _si.read_layers(measured)


def _nothing(extra: dict) -> dict:
    return {"empty": True, "note": NO_MEASUREMENT, "gpu": "No measurement yet", **extra}


def _empty_panels():
    return (Panel(Axis(""), Axis(""), (Text(0.5, 0.5, "{note}", coords="axes", align="center"),), legend="",
                  grid=False),)


def _about(m) -> dict:
    gpu = m.gpu[len("NVIDIA "):] if m.gpu.startswith("NVIDIA ") else m.gpu
    return {"empty": False, "note": "", "gpu": gpu}


# --- (a) the marginal cost of a verified position: the free band and the expert tax ---------------


def _verify_width(p, xp):
    m = measurement(p.measured)
    out = {"kinds": [], "y_top": p.T + 0.6}
    if m is None:
        return _nothing(out)
    out.update(_about(m))
    B_line = np.geomspace(1, max(BATCH_TICKS), 97)
    for kind in ("dense", "moe"):
        taxed = _si.expert_tax(m, kind, p.T, p.dtype)
        if not taxed:
            continue
        out["kinds"].append(kind)
        out[f"{kind}_shapes"] = list(taxed)
        for i, (shape, (B, measured, _)) in enumerate(taxed.items()):
            line = (_si.predicted_seconds(kind, shape, B_line, p.T, None, p.dtype, m.hardware)
                    / _si.predicted_seconds(kind, shape, B_line, 1, None, p.dtype, m.hardware))
            out.update({f"{kind}{i}_B": B, f"{kind}{i}_measured": measured, f"{kind}{i}_B_line": B_line,
                        f"{kind}{i}_roofline": line})
    return out


def _verify_width_panels(data):
    if data["empty"]:
        return _empty_panels()
    panels = []
    for n, kind in enumerate(data["kinds"]):
        series = [HLine(1.0, color="ridge", dash="dotted", width=1.0), HLine("T", color="ridge", dash="dotted",
                                                                             width=1.0)]
        for i, shape in enumerate(data[f"{kind}_shapes"]):
            c = _color(SHAPE_COLORS, shape, i)
            series += [Line(f"{kind}{i}_B_line", f"{kind}{i}_roofline", color=c, dash="dashed", width=1.3,
                            gid=f"roofline_{kind}_{shape}"),
                       Points(f"{kind}{i}_B", f"{kind}{i}_measured", color=c, gid=f"measured_{kind}_{shape}")]
        panels.append(Panel(Axis("batch B (sequences)", "log2", ticks=BATCH_TICKS),
                            Axis("t(B, T) / t(B, 1)" if n == 0 else "", lo=0.9, hi="y_top"), tuple(series),
                            title=f"{KIND_TITLES[kind]}, {{dtype}}", legend=""))
    return tuple(panels)


verify_width = Figure(
    name="silicon_verify_width",
    title="{gpu}: one layer's FFN at T = {T} positions per sequence over T = 1",
    compute=_verify_width, panels=_verify_width_panels, columns=2, size=(9.0, 4.2),
    params={"measured": None, "T": 2, "dtype": "bf16"},
    keys=(*(Key(shape, color=c, marker="o") for shape, c in SHAPE_COLORS.items()), *MEASURED_KEYS),
    doc="Measured t(B, T) / t(B, 1) (markers) against the roofline's (dashed) for a dense MLP and a MoE layer's "
        "routed experts, against the batch: 1 is a free verified position (the dense band), T a position that "
        "pays in full (the expert tax at small batch).")


# --- (b) attention against the verify width ---------------------------------------------------------


def _attention(p, xp):
    m = measurement(p.measured)
    out = {"shapes": [], "y_top": 2.0}
    if m is None:
        return _nothing(out)
    out.update(_about(m), layouts={}, index={})
    T_line = np.linspace(1, max(WIDTH_TICKS), 113)
    for j, shape in enumerate(m.shapes("attention")):
        series = [s for s in _si.width_series(m, "attention", p.dtype) if s.shape == shape and s.B == p.B]
        if not series:
            continue
        out["shapes"].append(shape)
        out["index"][shape] = j
        out["layouts"][shape] = _si.attention_layout(shape).upper()
        out[f"a{j}_ridge"] = _layers.attention_ridge_width(shape, m.hardware, kv_precision=p.dtype)
        out[f"a{j}_contexts"] = [s.S for s in series]
        for i, s in enumerate(series):
            line = _si.predicted_seconds("attention", shape, p.B, np.ceil(T_line), s.S, p.dtype, m.hardware)
            out.update({f"a{j}_{i}_T": s.T, f"a{j}_{i}_measured": s.relative(), f"a{j}_{i}_T_line": T_line,
                        f"a{j}_{i}_roofline": line / line[0]})
            out["y_top"] = max(out["y_top"], 1.05 * np.nanmax(s.relative()), 1.05 * np.max(line / line[0]))
    return out


def _attention_panels(data):
    if data["empty"]:
        return _empty_panels()
    panels = []
    for n, shape in enumerate(data["shapes"]):
        j = data["index"][shape]
        ridge = data[f"a{j}_ridge"]
        series = [VLine(f"a{j}_ridge", color="ridge", width=1.0, gid=f"ridge_{shape}")] \
            if ridge <= max(WIDTH_TICKS) else []
        for i, S in enumerate(data[f"a{j}_contexts"]):
            c = _color(CONTEXT_COLORS, S, i)
            series += [Line(f"a{j}_{i}_T_line", f"a{j}_{i}_roofline", color=c, dash="dashed", width=1.3, step=True,
                            gid=f"roofline_{shape}_{S:.0f}"),
                       Points(f"a{j}_{i}_T", f"a{j}_{i}_measured", color=c, gid=f"measured_{shape}_{S:.0f}")]
        panels.append(Panel(Axis("verify width T (query positions per sequence)", ticks=WIDTH_TICKS, lo=0.5, hi=8.5),
                            Axis("t(T) / t(1)" if n == 0 else "", lo=0, hi="y_top"), tuple(series),
                            title=f"{shape} ({data['layouts'][shape]}): roofline ridge at T = {ridge:.2f}",
                            legend=""))
    return tuple(panels)


attention_width = Figure(
    name="silicon_attention",
    title="{gpu}: attention of B = {B} sequences against the verify width, over T = 1",
    compute=_attention, panels=_attention_panels, columns=2, size=(9.0, 4.2),
    params={"measured": None, "B": 8, "dtype": "bf16"},
    keys=(*(Key(f"S = {S:,}", color=c, marker="o") for S, c in CONTEXT_COLORS.items()), *MEASURED_KEYS,
          Key("roofline ridge m_c R / f", color=COLORS["ridge"], dash="dashed")),
    doc="Measured attention time over its time at T = 1 (markers) and the roofline's (dashed steps), one colour "
        "per context S, MLA and GQA side by side; the vertical line is the roofline's ridge width m_c R / f "
        "(drawn where it falls within the widths measured, and named in each panel's title).")


# --- (c) measured over roofline -----------------------------------------------------------------


def _ratio(p, xp):
    m = measurement(p.measured)
    if m is None:
        return _nothing({"groups": [], "hardware": "none"})
    out = {**_about(m), "groups": [], "mu": _si.calibrated_factor(m), "hardware": m.hardware.name}
    for kind in _si.KINDS:
        for shape in m.shapes(kind):
            idx = m.select(kind=kind, shape=shape, dtype=p.dtype)
            if len(idx):
                g = len(out["groups"])
                out["groups"].append((kind, str(shape)))
                out[f"g{g}_tokens"] = m.B[idx] * m.T[idx]
                out[f"g{g}_ratio"] = m.ratio[idx]
    return out


_RATIO_MARKERS = {"moe": "o", "dense": "s", "attention": "^"}


def _ratio_panels(data):
    if data["empty"]:
        return _empty_panels()
    series = [HLine(1.0, color="ridge", dash="solid", width=1.0),
              HLine("mu", color="total", dash="dashed", width=1.2, label="calibrated step's chip factor",
                    gid="chip_factor")]
    for g, (kind, shape) in enumerate(data["groups"]):
        series.append(Points(f"g{g}_tokens", f"g{g}_ratio", label=f"{kind}: {shape}", color=_color(SHAPE_COLORS, shape, g),
                             marker=_RATIO_MARKERS[kind], size=3.5, gid=f"ratio_{kind}_{shape}"))
    return (Panel(Axis("positions B x T", "log2", ticks=(1, 16, 256, 2048)), Axis("measured / roofline", "log"),
                  tuple(series), legend="below"),)


ratio = Figure(
    name="silicon_ratio", title="{gpu}: measured over roofline ({hardware}) time, {dtype}",
    compute=_ratio, panels=_ratio_panels, size=(7.0, 4.2), params={"measured": None, "dtype": "bf16"},
    doc="Every measured point's time over the roofline's, against the positions it verifies, by kind and shape; "
        "the dashed line is the calibrated step's roofline factor for the chip.")


def ratio_table(measured=None) -> NumberTable:
    """Measured / roofline time per kind and precision: the median, the
    interquartile range and the extremes, beside the calibrated step's chip
    factor."""
    m = measurement(measured)
    columns = ("kind", "precision", "points", "median", "25-75 %", "min-max")
    if m is None:
        return NumberTable(columns, (), caption=NO_MEASUREMENT, css_class="speclib-silicon-table", align="ll")
    rows = tuple((kind, dtype, str(n), f"{med:.2f}", f"{q25:.2f}-{q75:.2f}", f"{lo:.2f}-{hi:.2f}")
                 for kind, dtype, n, med, q25, q75, lo, hi in _si.ratio_summary(m))
    caption = (f"Measured / roofline time on {m.gpu} (roofline: {m.hardware.name}); the calibrated step's "
               f"roofline factor for this chip is {_si.calibrated_factor(m):.2f}.")
    return NumberTable(columns, rows, caption=caption, css_class="speclib-silicon-table", align="ll")
