"""What each live figure of the HTML book shows and which controls it has.

The controls and their ranges are the paper's (see MODEL.md); the defaults,
batch grids, component names and colours are read from the static figures in
:mod:`speclib.figures`, so the live version opens on exactly the picture the
PNG fallback shows. The result is plain JSON, emitted into the page by
:func:`speclib.web.codegen.model_javascript` and read by ``speclib_live.js``.
"""
from __future__ import annotations

import math

import matplotlib as mpl

from ..figures import _style
from ..figures import paper as _paper
from ..figures import sequel as _sequel
from ...presets import hardware_names, model_names

#: The paper's sequence-length slider: S = 512 * 2**(8u), u in [0, 1].
SEQ_SLIDER = {"base": 512.0, "span": 8.0}
#: Slider resolution in u: 1/64 keeps every power of two (and 2**(1/8) steps
#: between them) exactly reachable.
SEQ_STEP = 1.0 / 64.0

_PERCENT = {"step": 0.01, "format": "percent"}


def _seq_control(default_S: float) -> dict:
    u = math.log2(default_S / SEQ_SLIDER["base"]) / SEQ_SLIDER["span"]
    if abs(round(u / SEQ_STEP) * SEQ_STEP - u) > 1e-12:
        raise ValueError(f"default S = {default_S} is not on the sequence-length slider's grid")
    return {
        "name": "u",
        "param": "S",
        "kind": "range",
        "label": "average sequence length S",
        "min": 0.0,
        "max": 1.0,
        "step": SEQ_STEP,
        "value": u,
        "map": {"kind": "exp2", **SEQ_SLIDER},
        "format": "tokens",
    }


def _drafter_control(default: float) -> dict:
    return {"name": "c_draft", "param": "c_draft", "kind": "range", "label": "drafter cost per drafted token",
            "min": 0.0, "max": 0.5, "value": default, **_PERCENT}


def _alpha_control(default: float) -> dict:
    return {"name": "alpha", "param": "alpha", "kind": "range", "label": "acceptance rate \u03b1",
            "min": 0.01, "max": 0.99, "value": default, **_PERCENT}


def build_live_figures() -> dict:
    """The spec of every live figure, keyed by its cell-tag name."""
    ledger = _paper.LedgerPlot.defaults
    gamma = _paper.OptimalGammaPlot.defaults
    curves = _paper.SpeedupCurvesPlot.defaults
    tax = _paper.ExpertTaxPlot.defaults
    gmap = _paper.GammaMapPlot.defaults
    width = _paper.AttentionWidthPlot.defaults
    compressed = _paper.CompressedAttentionPlot.defaults
    ledger_spec = {
        "title": "Price of a speculated token",
        "controls": [
            _seq_control(ledger["S"]),
            _drafter_control(ledger["c_draft"]),
            {"name": "components", "param": "components", "kind": "checkbox", "label": "show the components",
             "value": bool(ledger["components"])},
            {"name": "query_bytes", "param": "query_bytes", "kind": "checkbox", "label": "count query bytes",
             "value": bool(ledger["query_bytes"])},
        ],
        "x": {"label": "batch (sequences)", "scale": "log", "min": ledger["batch_range"][0],
              "max": ledger["batch_range"][1]},
        "y": {"label": "cost of a speculated token (\u00d7 a real token)", "scale": "linear", "min": 0,
              "max": 1.3},
        "points": ledger["points"],
        "components": [list(c) for c in _paper.LEDGER_COMPONENTS],
    }
    return {
        "expert_tax": _expert_tax_spec(tax, log=False),
        "expert_tax_log": _expert_tax_spec({**tax, **_paper.FIGURES["expert_tax_log"][1]}, log=True),
        "ledger": ledger_spec,
        # The pricing chapter's second ledger opens with the components shown.
        "ledger_components": _ledger_variant(ledger_spec, components=True),
        # The introduction's dense contrast: Llama-3-70B's ledger, components shown.
        "ledger_dense": {**_ledger_variant(ledger_spec, components=True), "model": "Llama-3-70B"},
        "optimal_gamma": {
            "title": "Optimal draft length \u03b3* against batch",
            "controls": [_seq_control(gamma["S"]), _alpha_control(gamma["alpha"]),
                         _drafter_control(gamma["c_draft"])],
            "x": {"label": "batch (sequences)", "scale": "log", "min": gamma["batch_range"][0],
                  "max": gamma["batch_range"][1]},
            "y": {"label": "optimal draft length \u03b3*", "scale": "linear", "min": 0, "max": 6},
            "points": gamma["points"],
            "gamma_max": gamma["gamma_max"],
        },
        "speedup_curves": {
            "title": "Speedup against draft length",
            "controls": [_seq_control(curves["S"]), _alpha_control(curves["alpha"]),
                         _drafter_control(curves["c_draft"])],
            "x": {"label": "draft length \u03b3 (tokens proposed per verify)", "scale": "linear", "min": 0,
                  "max": 10},
            "y": {"label": "throughput speedup over plain decoding (\u00d7)", "scale": "linear", "min": 0, "max": 2},
            "batches": [int(b) for b in curves["batches"]],
            "gamma_max": curves["gamma_max"],
        },
        "gamma_map": {
            "title": "\u03b3* over batch and sequence length",
            "controls": [_alpha_control(gmap["alpha"]), _drafter_control(gmap["c_draft"])],
            "x": {"label": "batch (sequences)", "scale": "log", "min": gmap["batch_range"][0],
                  "max": gmap["batch_range"][1]},
            "y": {"label": "average sequence length S (tokens)", "scale": "log", "base": 2,
                  "min": gmap["context_range"][0], "max": gmap["context_range"][1]},
            # The notebook widget's grid (coarser than the static figure's):
            # the argmax over 65 draft lengths per cell is the redraw budget.
            "batch_points": 100,
            "context_points": 50,
            "gamma_max": gmap["gamma_max"],
        },
        "attention_width": {
            "title": "Attention intensity against verify width",
            "controls": [
                {**_seq_control(width["S"]), "label": "context S"},
                {"name": "query_bytes", "param": "query_bytes", "kind": "checkbox", "label": "count query bytes",
                 "value": bool(width["query_bytes"])},
                {"name": "hardware", "param": "hardware", "kind": "select", "label": "hardware",
                 "options": hardware_names(), "value": None},
            ],
            "x": {"label": "query tokens per sequence T (1 = decode, 1 + \u03b3 when verifying)", "scale": "log",
                  "base": 2, "min": 1, "max": width["width_max"]},
            "y": {"label": "attention intensity (FLOP/byte)", "scale": "log"},
            "points": width["points"],
        },
        "attention_table": {
            "kind": "attention_table",
            "title": "Attention arithmetic intensity",
            "controls": [
                {"name": "model", "param": "model", "kind": "select", "label": "model", "options": model_names(),
                 "value": "DeepSeek-V4-Flash"},
                {"name": "variant", "param": "variant", "kind": "select", "label": "variant (MLA models)",
                 "options": ["mla", "hca", "csa", "indexer"], "value": "mla"},
                {"name": "hardware", "param": "hardware", "kind": "select", "label": "hardware",
                 "options": hardware_names(), "value": "B200"},
                {"name": "query_bytes", "param": "query_bytes", "kind": "checkbox", "label": "count query bytes",
                 "value": True},
            ],
        },
        "compressed_attention": {
            "title": "DeepSeek-V4 attention variants",
            "controls": [
                # The notebook widget's choices for DeepSeek-V4's compression knobs.
                {"name": "hca_ratio", "param": "hca_ratio", "kind": "choice", "label": "HCA compression",
                 "options": [8, 16, 32, 64, 128, 256, 512], "value": None},
                {"name": "csa_top_k", "param": "csa_top_k", "kind": "choice", "label": "CSA top-k",
                 "options": [128, 256, 512, 1024, 2048, 4096], "value": None},
                {"name": "csa_ratio", "param": "csa_ratio", "kind": "choice", "label": "CSA compression",
                 "options": [1, 2, 4, 8, 16], "value": None},
                {"name": "query_bytes", "param": "query_bytes", "kind": "checkbox", "label": "count query bytes",
                 "value": bool(compressed["query_bytes"])},
            ],
            "x": {"label": "context S (tokens)", "scale": "log", "base": 2, "min": compressed["context_range"][0],
                  "max": compressed["context_range"][1]},
            "y": {"label": "attention intensity (FLOP/byte)", "scale": "linear", "min": 0},
            "widths": list(compressed["widths"]),
            # Fewer points than the static figure's: the effective contexts for
            # every knob setting travel in the page.
            "points": 120,
            "panels": [list(v) for v in _paper.V4_VARIANTS],
        },
        **sequel_figures(),
    }


def _select(name: str, label: str, options, value, labels=None) -> dict:
    """A drop-down; ``labels`` maps a value to the text shown for it."""
    opts = [{"value": o, "label": labels[o]} if labels else o for o in options]
    return {"name": name, "param": name, "kind": "select", "label": label, "options": opts, "value": value}


def _roofline_control(default: str) -> dict:
    labels = {r: f"{r}: {_sequel.ROOFLINE_LABELS[r]}" for r in _sequel.ROOFLINES}
    return _select("roofline", "pricing rule", list(_sequel.ROOFLINES), default, labels)


def _acceptance_control(default: str) -> dict:
    return _select("acceptance", "acceptance", list(_sequel.ACCEPTANCES), default)


def _hardware_control(default: str = "B200") -> dict:
    return _select("hardware", "hardware", hardware_names(), default)


_CONCURRENCY_AXIS = {"label": "concurrency (sequences decoding together)", "scale": "log", "base": 2}


def sequel_figures() -> dict:
    """The live figures of the chapters on the sequel (their defaults are the
    static figures' in :mod:`speclib.figures.sequel`)."""
    cost = _sequel.DrafterCostPlot.defaults
    cross = _sequel.DrafterCrossoverPlot.defaults
    hyb = _sequel.HybridIntensityPlot.defaults
    kv = _sequel.KVStatePlot.defaults
    cg = _sequel.ConcurrencyGammaPlot.defaults
    ct = _sequel.ConcurrencyThroughputPlot.defaults
    tt = _sequel.ThroughputTPOTPlot.defaults
    pr = _sequel.PricingRatioPlot.defaults
    pg = _sequel.PricingGammaPlot.defaults
    batches = {"label": "batch (sequences)", "scale": "log", "min": _sequel.DRAFTER_BATCHES[0],
               "max": _sequel.DRAFTER_BATCHES[1]}
    C = [float(c) for c in _sequel.grid().concurrency]
    concurrency = {**_CONCURRENCY_AXIS, "min": C[0], "max": C[-1]}
    drafter_labels = dict(_sequel.DRAFTER_LABELS)
    return {
        "drafter_cost": {
            "title": "What drafting costs",
            "controls": [
                {"name": "gamma", "param": "gamma", "kind": "range", "label": "draft length \u03b3", "min": 1,
                 "max": _sequel.dflash_block(), "step": 1,
                 "value": cost["gamma"], "format": "int"},
                _roofline_control(cost["roofline"]),
                _hardware_control(),
            ],
            "x": batches, "y": {"label": "time (\u00b5s)", "scale": "log"}, "points": cost["points"],
        },
        "drafter_crossover": {
            "title": "Which drafter is cheaper",
            "controls": [_roofline_control(cross["roofline"]), _hardware_control()],
            "x": batches,
            "y": {"label": "draft length \u03b3", "scale": "linear", "min": 0.5, "max": cross["gamma_max"] + 0.5},
            "points": cross["points"], "gamma_max": cross["gamma_max"], "ratio_max": cross["ratio_max"],
            "line_points": 200,
        },
        "hybrid_intensity": {
            "title": "Intensity against verify width",
            "controls": [{**_seq_control(hyb["S"]), "label": "context S"},
                         {"name": "query_bytes", "param": "query_bytes", "kind": "checkbox",
                          "label": "count query bytes", "value": bool(hyb["query_bytes"])},
                         _hardware_control()],
            "x": {"label": "positions per sequence T (1 = decode, 1 + \u03b3 when verifying)", "scale": "log",
                  "base": 2, "min": 1, "max": hyb["width_max"]},
            "y": {"label": "attention intensity (FLOP/byte)", "scale": "log"},
            "points": hyb["points"],
        },
        "kv_state_bytes": {
            "title": "KV cache against recurrent state",
            "controls": [
                {"name": "full_attention_layers", "param": "full_attention_layers", "kind": "choice",
                 "label": "full-attention layers", "options": list(_sequel.FULL_ATTENTION_LAYERS),
                 "value": int(_sequel.hybrid_architecture().attention_layers)},
                _select("kv_format", "KV cache", list(_sequel.KV_FORMATS), "bf16"),
            ],
            "x": {"label": "context S (tokens)", "scale": "log", "base": 2, "min": kv["context_range"][0],
                  "max": kv["context_range"][1]},
            "y": {"label": "MB one sequence keeps", "scale": "log"},
            "points": kv["points"],
        },
        "concurrency_gamma": {
            "title": "Draft length per concurrency",
            "controls": [_roofline_control(cg["roofline"]), _acceptance_control(cg["acceptance"])],
            "x": concurrency, "y": {"label": "draft length \u03b3*", "scale": "linear", "min": 0},
            "points": cg["points"], "drafters": drafter_labels,
        },
        "concurrency_throughput": {
            "title": "Throughput against concurrency",
            "controls": [_roofline_control(ct["roofline"]),
                         {"name": "relative", "param": "relative", "kind": "checkbox",
                          "label": "over plain decoding", "value": bool(ct["relative"])}],
            "x": {**concurrency, "label": "concurrency"}, "points": ct["points"], "drafters": drafter_labels,
        },
        "throughput_tpot": {
            "title": "Throughput against latency",
            "controls": [_roofline_control(tt["roofline"]), _acceptance_control(tt["acceptance"])],
            "x": {"label": "time per output token (ms)", "scale": "log"},
            "y": {"label": "committed output tokens per second", "scale": "log"},
            "points": tt["points"], "drafters": drafter_labels, "contour_points": 50,
            "concurrency": {"min": C[0], "max": C[-1]},
        },
        "pricing_ratio": {
            "title": "Two ways to price a step",
            "controls": [_select("model", "model", model_names(), _sequel.HYBRID_MODEL),
                         {**_seq_control(pr["S"]), "label": "context S"}, _hardware_control()],
            "x": batches, "y": {"label": "per-component time / aggregate time", "scale": "linear"},
            "widths": [int(t) for t in pr["widths"]], "points": pr["points"],
        },
        "pricing_gamma": {
            "title": "What the pricing rule does to \u03b3*",
            "controls": [_select("drafter", "drafter", list(_sequel.DRAFTER_KEYS), pg["drafter"], drafter_labels),
                         _acceptance_control(pg["acceptance"])],
            "x": {**concurrency, "label": "concurrency"}, "points": pg["points"], "drafters": drafter_labels,
        },
    }


def _ledger_variant(spec: dict, **defaults) -> dict:
    """``spec`` with some controls opening at other values."""
    controls = [{**c, "value": defaults.get(c["param"], c["value"])} for c in spec["controls"]]
    return {**spec, "kind": "ledger", "controls": controls}


def _expert_tax_spec(params: dict, log: bool) -> dict:
    scale = "log" if log else "linear"
    return {
        "title": "The expert tax: FFN arithmetic intensity against batch",
        "controls": [
            {"name": "experts", "param": "experts", "kind": "range", "label": "routed experts E",
             "min": 8, "max": 512, "step": 8, "value": None, "format": "int"},
            {"name": "top_k", "param": "top_k", "kind": "range", "label": "experts per token k",
             "min": 1, "max": 16, "step": 1, "value": None, "format": "int"},
            {"name": "weights", "param": "weights", "kind": "select", "label": "expert weights",
             "options": list(_paper.WEIGHT_FORMATS), "value": None},
            {"name": "hardware", "param": "hardware", "kind": "select", "label": "hardware",
             "options": hardware_names(), "value": None},
        ],
        "x": {"label": "batch (tokens in the step)", "scale": scale, "min": 1 if log else 0,
              "max": params["batch_max"]},
        "y": {"label": "arithmetic intensity (FLOP/byte)", "scale": scale, "min": 1 if log else 0,
              "max": params["intensity_max"]},
        "points": 1000,
    }


#: Colours shared with the static figures.
COLORS = dict(_style.COLORS)
CYCLE = list(_style.CYCLE)
#: matplotlib's viridis at 33 stops (the gamma map's colours), and the colour
#: of gamma* = 0 there.
VIRIDIS = [mpl.colors.to_hex(mpl.colormaps["viridis"](i / 32)) for i in range(33)]
COLORS.setdefault("gamma_zero", "#f4cccc")
#: The crossover map's diverging colours (the static figure's colour map) at 33 stops.
DIVERGING = [mpl.colors.to_hex(mpl.colormaps[_sequel.DIVERGING](i / 32)) for i in range(33)]
