"""Live versions of the book's figures: ipywidgets controls like the paper's
sliders and toggles, redrawing the figure in place.

Each factory returns a :class:`FigureWidget` (or :class:`TableWidget`), an
ipywidgets ``VBox`` holding the controls and the picture. The figure is built
once; a control move changes the artists' data (``Plot.update``) and the
Agg canvas is re-rendered to an image shown by an ``ipywidgets.Image``.
This needs no browser-side matplotlib, works headless, and a redraw is one
vectorised speclib call plus one Agg render.

Without a browser, ``w.controls`` maps each control's name to its widget and
``w.update(S=4096, alpha=0.6)`` sets controls as a reader would and redraws
once; ``w.plot`` is the underlying :class:`speclib.figures.paper.Plot`.
"""
from __future__ import annotations

import ipywidgets as W
from matplotlib.collections import Collection
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

from .figures import _style
from .figures import paper as _paper
from .figures import sequel as _sequel
from ..presets import hardware_names, model_names

#: The sequence-length slider of the paper: S = 512 * 2**(8u), u in [0, 1].
#: FloatLogSlider's exponent x = 9 + 8u shows S itself.
_SEQ_MIN_EXP, _SEQ_MAX_EXP = 9, 17

_DYNAMIC = (Line2D, Collection, Text, Legend, Patch)


def seq_len_slider(value, description="sequence length S"):
    """S = 512 * 2**(8u) for u in [0, 1], in steps of u = 0.01."""
    return W.FloatLogSlider(value=value, base=2, min=_SEQ_MIN_EXP, max=_SEQ_MAX_EXP, step=0.08,
                            description=description, readout_format=",.0f", continuous_update=True,
                            style={"description_width": "initial"}, layout=W.Layout(width="420px"))


def percent_slider(value, lo, hi, description, step=0.01):
    return W.FloatSlider(value=value, min=lo, max=hi, step=step, description=description, readout_format=".0%",
                         continuous_update=True, style={"description_width": "initial"},
                         layout=W.Layout(width="420px"))


def toggle(value, description):
    return W.Checkbox(value=value, description=description, indent=False)


def dropdown(options, value, description):
    return W.Dropdown(options=options, value=value, description=description, style={"description_width": "initial"})


class _Live(W.VBox):
    """Controls above a view; a change of any control redraws once."""

    def __init__(self, controls: dict, view):
        self.controls = dict(controls)
        self._hold = False
        rows = [W.HBox(list(self.controls.values())[i:i + 2]) for i in range(0, len(self.controls), 2)]
        super().__init__(children=[*rows, view])
        for widget in self.controls.values():
            widget.observe(self._on_change, names="value")

    def _on_change(self, _change):
        if not self._hold:
            self.redraw()

    def values(self) -> dict:
        """The controls' current values by name."""
        return {name: w.value for name, w in self.controls.items()}

    def update(self, **values):
        """Set controls (as a reader moving them would) and redraw once."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {', '.join(sorted(unknown))}; controls: {', '.join(self.controls)}")
        self._hold = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._hold = False
        self.redraw()
        return self

    def redraw(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.values().items())
        return f"{type(self).__name__}({self.name}: {shown})"

    #: What a notebook shows where the controls cannot be drawn: a chapter
    #: opened in JupyterLab before it is run, or a viewer with no kernel.
    NOT_LIVE_HINT = "(a live figure: run this cell to get its controls)"

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"{self!r}\n{self.NOT_LIVE_HINT}"
        return bundle


def _short(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value)


class FigureWidget(_Live):
    """A figure with live controls; ``params(values)`` maps control values to
    ``Plot.update`` keyword arguments.

    Rendering keeps the figure's frame (axes, ticks, grid) as a cached
    background and redraws only the data-bearing artists (lines, fills,
    texts, legends) on top of it; the frame is drawn again only when an axis
    limit or scale changed.
    """

    def __init__(self, plot_cls, controls: dict, params=None, fixed=None):
        self.name = plot_cls.name
        self._params = params or (lambda values: values)
        self._fixed = dict(fixed or {})
        figure = _style.new_canvas_figure(plot_cls.figsize)
        values = {name: w.value for name, w in controls.items()}
        self.plot = plot_cls(figure=figure, live=True, **self._fixed, **self._params(values))
        # Lay the figure out once, then keep that layout: re-running the
        # constrained-layout solver on every move would double the redraw time.
        figure.canvas.draw()
        figure.set_layout_engine("none")
        self._frame = None
        self._background = None
        self.image = W.Image(value=self.render(), format="jpeg",
                             layout=W.Layout(width=f"{int(plot_cls.figsize[0] * _style.DPI)}px"))
        super().__init__(controls, self.image)

    @property
    def figure(self):
        return self.plot.figure

    def redraw(self):
        self.plot.update(**self._params(self.values()))
        self.image.value = self.render()

    def render(self) -> bytes:
        """JPEG bytes of the figure as it stands, blitted over the cached frame.
        (JPEG: ~2 ms to encode against ~20 ms for PNG; the view is transient.)"""
        fig = self.figure
        canvas = fig.canvas
        dynamic = _dynamic_artists(fig)
        for a in dynamic:
            a.set_animated(True)
        frame = _frame_signature(fig)
        if frame != self._frame:
            canvas.draw()  # everything but the animated (data) artists
            self._background = canvas.copy_from_bbox(fig.bbox)
            self._frame = frame
        else:
            canvas.restore_region(self._background)
        renderer = canvas.get_renderer()
        for a in dynamic:
            a.draw(renderer)
        return _style.encode_jpeg(canvas)


def _dynamic_artists(fig):
    """The artists a control move can change, in drawing order: every line,
    fill, text, patch and legend of every axes, then the figure's texts."""
    out = []
    for ax in sorted(fig.axes, key=lambda a: a.get_zorder()):
        # Titles sit outside the axes, never under data: they belong to the frame.
        frame = {ax.patch, *ax.spines.values(), ax.title, ax._left_title, ax._right_title}
        if ax.get_legend() is not None and ax.get_legend().get_gid() == "frame_legend":
            frame.add(ax.get_legend())
        kids = [a for a in ax.get_children() if isinstance(a, _DYNAMIC) and a not in frame and a.get_visible()]
        out.extend(sorted(kids, key=lambda a: a.get_zorder()))
    return out


def _legend_key(ax):
    leg = ax.get_legend()
    if leg is None or leg.get_gid() != "frame_legend":
        return None
    return tuple(t.get_text() for t in leg.get_texts())


def _frame_signature(fig):
    """What the cached background depends on: axes placement, limits, scales
    and titles, and the figure's own texts."""
    axes = tuple(
        (tuple(ax.get_position().bounds), ax.get_xlim(), ax.get_ylim(), ax.get_xscale(), ax.get_yscale(),
         ax.title.get_text(), ax._left_title.get_text(), ax._right_title.get_text(), _legend_key(ax))
        for ax in fig.axes
    )
    return axes, tuple(t.get_text() for t in fig.texts)


class TableWidget(_Live):
    """A table with live controls, re-rendered as HTML."""

    def __init__(self, name, make_table, controls: dict):
        self.name = name
        self._make = make_table
        self.table = make_table(**{n: w.value for n, w in controls.items()})
        self.html = W.HTML(value=self.table._repr_html_())
        super().__init__(controls, self.html)

    def redraw(self):
        self.table = self._make(**self.values())
        self.html.value = self.table._repr_html_()


# --- factories -----------------------------------------------------------------


def expert_tax(model=None, hardware="B200"):
    """Figure 1, live: experts E, top-k, expert weight format, hardware."""
    return _expert_tax(model, hardware)


def _expert_tax(model, hardware, **fixed):
    m, _ = _paper.resolve(model, None)
    ffn = m.ffn
    controls = {
        "experts": W.IntSlider(value=ffn.n_routed, min=8, max=512, step=8, description="routed experts E",
                               style={"description_width": "initial"}, layout=W.Layout(width="420px")),
        "top_k": W.IntSlider(value=ffn.top_k, min=1, max=16, description="experts per token k",
                             style={"description_width": "initial"}, layout=W.Layout(width="420px")),
        "weights": dropdown(list(_paper.WEIGHT_FORMATS), _weight_format(ffn), "expert weights"),
        "hardware": dropdown(hardware_names(), _paper.resolve(None, hardware)[1].name, "hardware"),
    }

    def params(v):
        return {"experts": v["experts"], "top_k": min(v["top_k"], v["experts"]), "weights": v["weights"],
                "hardware": v["hardware"]}

    return FigureWidget(_paper.ExpertTaxPlot, controls, params, fixed={"model": m, "points": 1000, **fixed})


def _weight_format(ffn):
    for name, (b, precision) in _paper.WEIGHT_FORMATS.items():
        if b == ffn.weight_bytes and precision == ffn.precision:
            return name
    return "mxfp4"


def attention_table(model="DeepSeek-V4-Flash", hardware="B200"):
    """Table 1, live: model (MLA or GQA), variant, hardware, query bytes."""
    controls = {
        "model": dropdown(model_names(), _paper.resolve(model, None)[0].name, "model"),
        "variant": dropdown(["mla", "hca", "csa", "indexer"], "mla", "variant (MLA models)"),
        "hardware": dropdown(hardware_names(), _paper.resolve(None, hardware)[1].name, "hardware"),
        "query_bytes": toggle(True, "count query bytes"),
    }

    def make(model, variant, hardware, query_bytes):
        m, _ = _paper.resolve(model, None)
        has_variants = m.attention.kind == "mla"
        # A GQA model has one attention kind: grey the variant choice out.
        controls["variant"].disabled = not has_variants
        return _paper.attention_table(m, hardware, variant=variant if has_variants else None, query_bytes=query_bytes)

    return TableWidget("attention_table", make, controls)


def ledger(model=None, hardware=None):
    """Figure 2, live: sequence length, drafter cost, component toggle."""
    d = _paper.LedgerPlot.defaults
    controls = {
        "S": seq_len_slider(d["S"], "average sequence length S"),
        "c_draft": percent_slider(d["c_draft"], 0.0, 0.5, "drafter cost (of a step)"),
        "components": toggle(d["components"], "show components"),
        "query_bytes": toggle(d["query_bytes"], "count query bytes"),
    }
    return FigureWidget(_paper.LedgerPlot, controls, fixed={"model": model, "hardware": hardware})


def _speculation_widget(plot_class, model, hardware):
    """Figure 3 and the curves behind it share their controls: the paper's
    sequence length, acceptance alpha and drafter cost."""
    d = plot_class.defaults
    controls = {
        "S": seq_len_slider(d["S"], "sequence length S"),
        "alpha": percent_slider(d["alpha"], 0.01, 0.99, "acceptance \u03b1"),
        "c_draft": percent_slider(d["c_draft"], 0.0, 0.5, "drafter cost (of a step)"),
    }
    return FigureWidget(plot_class, controls, fixed={"model": model, "hardware": hardware})


def optimal_gamma(model=None, hardware=None):
    """Figure 3, live: sequence length, acceptance alpha, drafter cost."""
    return _speculation_widget(_paper.OptimalGammaPlot, model, hardware)


def speedup_curves(model=None, hardware=None):
    """The curves behind Figure 3, live: sequence length, alpha, drafter cost."""
    return _speculation_widget(_paper.SpeedupCurvesPlot, model, hardware)


def expert_tax_log(model=None, hardware="B200"):
    """Figure 1 on log-log axes, live (same controls as :func:`expert_tax`)."""
    w = _expert_tax(model, hardware, scale="log", batch_max=30_000)
    w.name = "expert_tax_log"
    return w


def attention_width(model=None, hardware=None):
    """Attention intensity against verify width (MHA, GQA, MLA), live."""
    d = _paper.AttentionWidthPlot.defaults
    controls = {
        "S": seq_len_slider(d["S"], "context S"),
        "query_bytes": toggle(d["query_bytes"], "count query bytes"),
        "hardware": dropdown(hardware_names(), _paper.resolve(None, hardware)[1].name, "hardware"),
    }
    return FigureWidget(_paper.AttentionWidthPlot, controls, fixed={"model": model})


def compressed_attention(model=None, hardware=None):
    """DeepSeek-V4's HCA, CSA and indexer intensities, live: the compression
    knobs and the query-byte toggle."""
    m = _paper.v4_attention_what_if(model)
    attn = m.attention
    controls = {
        "hca_ratio": W.SelectionSlider(options=[8, 16, 32, 64, 128, 256, 512], value=int(attn.hca_ratio),
                                       description="HCA compression", style={"description_width": "initial"}),
        "csa_top_k": W.SelectionSlider(options=[128, 256, 512, 1024, 2048, 4096], value=attn.csa_top_k,
                                       description="CSA top-k", style={"description_width": "initial"}),
        "csa_ratio": W.SelectionSlider(options=[1, 2, 4, 8, 16], value=int(attn.csa_ratio),
                                       description="CSA compression", style={"description_width": "initial"}),
        "query_bytes": toggle(True, "count query bytes"),
    }
    return FigureWidget(_paper.CompressedAttentionPlot, controls, fixed={"model": m, "hardware": hardware})


def gamma_map(model=None, hardware=None):
    """gamma* over batch and sequence length, live: alpha and drafter cost."""
    d = _paper.GammaMapPlot.defaults
    controls = {
        "alpha": percent_slider(d["alpha"], 0.01, 0.99, "acceptance \u03b1"),
        "c_draft": percent_slider(d["c_draft"], 0.0, 0.5, "drafter cost (of a step)"),
    }
    # A coarser grid than the static figure's 160 x 90: the optimal-gamma
    # search over it is the whole redraw budget.
    return FigureWidget(_paper.GammaMapPlot, controls, fixed={"model": model, "hardware": hardware,
                                                               "batch_points": 100, "context_points": 50})


# --- the sequel's chapters ---------------------------------------------------------------

_ROOFLINE_OPTIONS = [(f"{r}: {_sequel.ROOFLINE_LABELS[r]}", r) for r in _sequel.ROOFLINES]
_DRAFTER_OPTIONS = [(_sequel.DRAFTER_LABELS[k], k) for k in _sequel.DRAFTER_KEYS]


def _roofline(value):
    return dropdown(_ROOFLINE_OPTIONS, value, "pricing rule")


def _acceptance(value):
    return dropdown(list(_sequel.ACCEPTANCES), value, "acceptance")


def _drafter(value):
    return dropdown(_DRAFTER_OPTIONS, value, "drafter")


def _chip(hardware):
    return dropdown(hardware_names(), _paper.resolve(None, hardware or "B200")[1].name, "hardware")


def drafter_cost(model=None, hardware=None):
    """MTP and DFlash draft times against batch, live: gamma, the pricing
    rule, the chip."""
    d = _sequel.DrafterCostPlot.defaults
    controls = {
        "gamma": W.IntSlider(value=d["gamma"], min=1, max=16, description="draft length \u03b3",
                             style={"description_width": "initial"}, layout=W.Layout(width="420px")),
        "roofline": _roofline(d["roofline"]),
        "hardware": _chip(hardware),
    }
    return FigureWidget(_sequel.DrafterCostPlot, controls)


def drafter_crossover(model=None, hardware=None):
    """Which drafter is cheaper over gamma and batch, live: the pricing rule, the chip."""
    controls = {"roofline": _roofline(_sequel.DrafterCrossoverPlot.defaults["roofline"]), "hardware": _chip(hardware)}
    return FigureWidget(_sequel.DrafterCrossoverPlot, controls)


def hybrid_intensity(model=None, hardware=None):
    """MLA, GQA and GatedDeltaNet intensity against verify width, live:
    context, query bytes, the chip."""
    d = _sequel.HybridIntensityPlot.defaults
    controls = {
        "S": seq_len_slider(d["S"], "context S"),
        "query_bytes": toggle(d["query_bytes"], "count query bytes"),
        "hardware": _chip(hardware),
    }
    return FigureWidget(_sequel.HybridIntensityPlot, controls)


def kv_state_bytes(model=None, hardware=None):
    """KV cache against linear-attention state per sequence, live: how many
    layers are full attention, and the KV-cache format."""
    arch = _sequel.hybrid_architecture()
    controls = {
        "full_attention_layers": W.SelectionSlider(options=list(_sequel.FULL_ATTENTION_LAYERS),
                                                   value=arch.attention_layers,
                                                   description="full-attention layers",
                                                   style={"description_width": "initial"}),
        "kv_format": dropdown(list(_sequel.KV_FORMATS), "bf16", "KV cache"),
    }
    return FigureWidget(_sequel.KVStatePlot, controls)


def concurrency_gamma(model=None, hardware=None):
    """gamma* against concurrency for both drafters, live: pricing rule, acceptance."""
    d = _sequel.ConcurrencyGammaPlot.defaults
    controls = {"roofline": _roofline(d["roofline"]), "acceptance": _acceptance(d["acceptance"])}
    return FigureWidget(_sequel.ConcurrencyGammaPlot, controls)


def concurrency_throughput(model=None, hardware=None):
    """Throughput against concurrency per drafter, live: pricing rule, and
    tokens per second or the speedup over plain decoding."""
    d = _sequel.ConcurrencyThroughputPlot.defaults
    controls = {"roofline": _roofline(d["roofline"]),
                "relative": toggle(d["relative"], "over plain decoding")}
    return FigureWidget(_sequel.ConcurrencyThroughputPlot, controls)


def throughput_tpot(model=None, hardware=None):
    """Throughput against time per output token per drafter, live: pricing
    rule, acceptance."""
    d = _sequel.ThroughputTPOTPlot.defaults
    controls = {"roofline": _roofline(d["roofline"]), "acceptance": _acceptance(d["acceptance"])}
    return FigureWidget(_sequel.ThroughputTPOTPlot, controls)


def pricing_ratio(model=_sequel.HYBRID_MODEL, hardware=None):
    """Per-component over aggregate step time against batch, live: model,
    context, the chip."""
    d = _sequel.PricingRatioPlot.defaults
    controls = {
        "model": dropdown(model_names(), _paper.resolve(model, None)[0].name, "model"),
        "S": seq_len_slider(d["S"], "context S"),
        "hardware": _chip(hardware),
    }
    return FigureWidget(_sequel.PricingRatioPlot, controls)


def pricing_gamma(model=None, hardware=None):
    """gamma* under each pricing rule and what it loses, live: drafter, acceptance."""
    d = _sequel.PricingGammaPlot.defaults
    controls = {"drafter": _drafter(d["drafter"]), "acceptance": _acceptance(d["acceptance"])}
    return FigureWidget(_sequel.PricingGammaPlot, controls)


#: Every live figure by its figure name.
FACTORIES = {
    "expert_tax": expert_tax,
    "expert_tax_log": expert_tax_log,
    "attention_table": attention_table,
    "attention_width": attention_width,
    "compressed_attention": compressed_attention,
    "ledger": ledger,
    "optimal_gamma": optimal_gamma,
    "speedup_curves": speedup_curves,
    "gamma_map": gamma_map,
    "drafter_cost": drafter_cost,
    "drafter_crossover": drafter_crossover,
    "hybrid_intensity": hybrid_intensity,
    "kv_state_bytes": kv_state_bytes,
    "concurrency_gamma": concurrency_gamma,
    "concurrency_throughput": concurrency_throughput,
    "throughput_tpot": throughput_tpot,
    "pricing_ratio": pricing_ratio,
    "pricing_gamma": pricing_gamma,
}
