"""A figure, defined once: its controls, one compute function and its axes.

A :class:`Figure` is data plus one pure function:

* ``controls``: :class:`Slider`, :class:`Choice` and :class:`Toggle`, each
  with its range, scale and default; the widgets and the HTML page build their
  controls from these, and nothing else;
* ``compute(p, xp)``: the numbers drawn, from the catalogue's closed forms
  (``xp.F``) and a few generic array steps (:mod:`.arrays`); ``p`` holds
  every parameter (controls and fixed ones such as ``model``);
* ``panels``: the axes and the series drawn on them (:mod:`.spec`: :class:`Line`, :class:`Points`,
  :class:`Area`, :class:`Bands`, :class:`HLine`, :class:`VLine`,
  :class:`Heatmap`, :class:`Text`, :class:`Table`), naming the compute
  function's outputs; a figure without controls may instead give a function
  of its data that returns them (one panel per chip in the data, say).

Three generic renderers draw every definition: :mod:`.static` (matplotlib,
for the book's images and the PDF), :mod:`.interactive` (ipywidgets, in a kernel)
and :mod:`.web` (the HTML page, from the recorded compute graph). Labels and
titles are templates: ``"{model} on {hardware}"`` or ``"{ridge:,.0f}
FLOP/byte"``, filled from the parameters and the scalar outputs, by Python's
``str.format`` and by the same small subset of it in the browser (``,``,
``.Nf``, ``.Ng``, ``.N%``).
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from types import SimpleNamespace
from typing import Callable

from .arrays import Tracer, graph, numpy_ops, param
from .spec import (Area, Axis, Bands, Choice, Heatmap, HLine, Key, Line, Panel, Points, Slider, Table,  # noqa: F401
                   Text, Toggle, VLine, combo_key, fill, value_of)

# --- the figure ----------------------------------------------------------------------

#: Every defined figure by name (filled as the chapter modules are imported).
REGISTRY: dict = {}


@dataclasses.dataclass(frozen=True)
class Figure:
    """A figure defined once (see the module docstring). ``params`` holds the
    parameters that are not controls (``model``, ``hardware``, grid sizes),
    with their defaults. Call it for the static image, ``.widget()`` for the
    live one in a kernel; ``.data(**params)`` is what both draw."""

    name: str
    title: str
    compute: Callable
    panels: tuple
    controls: tuple = ()
    params: dict = dataclasses.field(default_factory=dict)
    size: tuple = (7.0, 4.2)
    columns: int = 0
    doc: str = ""
    #: A legend for the whole figure, below its panels.
    keys: tuple = ()
    #: Parameters the live versions (widget and page) use instead, such as a
    #: coarser grid where a redraw would otherwise take too long.
    live_params: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if callable(self.panels) and self.controls:
            raise ValueError(f"figure {self.name}: a live figure's panels must be fixed, not made from its data")
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names) or set(names) & set(self.params):
            raise ValueError(f"figure {self.name}: a parameter is named twice")
        REGISTRY[self.name] = self

    # parameters -------------------------------------------------------------------
    def defaults(self) -> dict:
        return {**self.params, **{c.name: c.value for c in self.controls}}

    def resolve(self, **values) -> dict:
        """Every parameter's value: ``values`` over the defaults, controls checked."""
        unknown = set(values) - set(self.defaults())
        if unknown:
            raise ValueError(f"{self.name}() got unknown parameter(s) {', '.join(sorted(unknown))}; "
                             f"allowed: {', '.join(sorted(self.defaults()))}")
        out = {**self.defaults(), **values}
        for c in self.controls:
            out[c.name] = c.check(out[c.name])
        return out

    def data(self, **values) -> dict:
        """The compute function's outputs (numpy) at these parameters, plus ``params``."""
        p = self.resolve(**values)
        out = self.compute(SimpleNamespace(**p), numpy_ops)
        return {"params": p, **out}

    def variant(self, name: str, **values) -> "Figure":
        """The same figure under another name with other defaults (a page's own version of it)."""
        controls = tuple(dataclasses.replace(c, value=values.pop(c.name)) if c.name in values else c
                         for c in self.controls)
        unknown = set(values) - set(self.params)
        if unknown:
            raise ValueError(f"{self.name}.variant() got unknown parameter(s) {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, name=name, controls=controls, params={**self.params, **values})

    # the three renderers -------------------------------------------------------------
    def __call__(self, **values):
        """The static figure (a matplotlib Figure, shown once by a notebook cell)."""
        from .static import draw

        return draw(self, self.data(**values))

    def widget(self, **values):
        """The live figure in a kernel: ipywidgets controls over the figure."""
        from .interactive import LiveFigure

        return LiveFigure(self, **{**self.live_params, **values})

    def live(self) -> dict:
        """What the HTML page needs: controls, panels and one recorded compute
        graph per combination of the discrete controls (see :mod:`.arrays`)."""
        p = self.resolve(**self.live_params)
        discrete = [c for c in self.controls if c.discrete]
        graphs, sliders = {}, {c.name: param(c.name) for c in self.controls if not c.discrete}
        # Stored once each: a graph several combinations record (a menu that changes nothing); the shape of
        # graphs that differ only in their constants (a chip's peak and name), each graph keeping its constants
        # in order; and an array several graphs hold (a graph refers to the figure's pool of arrays by index).
        unique, index, pool, pooled, templates, shapes = [], {}, [], {}, [], {}

        def once(store, seen, item):
            text = json.dumps(item, sort_keys=True, separators=(",", ":"))
            if text not in seen:
                seen[text] = len(store)
                store.append(item)
            return seen[text]

        for combo in itertools.product(*(c.values() for c in discrete)):
            values = {**p, **dict(zip((c.name for c in discrete), combo)), **sliders}
            out = graph(self.compute(SimpleNamespace(**values), Tracer()))
            template, consts = _template(out)
            entry = {"t": once(templates, shapes, template), "k": consts,
                     "arrays": [once(pool, pooled, array) for array in out["arrays"]]}
            graphs[combo_key(combo)] = once(unique, index, entry)
        return {
            "name": self.name,
            "title": self.title,
            "controls": [c.spec() for c in self.controls],
            "discrete": [c.name for c in discrete],
            "params": {k: v for k, v in p.items() if isinstance(v, (str, int, float, bool)) or v is None},
            "panels": [_panel_spec(panel) for panel in self.panels],
            "size": list(self.size),
            "columns": self.columns or len(self.panels),
            "graphs": graphs,  # combination key -> index into graph_list
            "graph_list": unique,  # each a template's index, its constants and its arrays' indices into the pool
            "templates": templates,
            "array_pool": pool,
        }


def _template(g: dict) -> tuple:
    """A recorded graph (:func:`.arrays.graph`) less its constants: every ``{"c": ...}``, ``{"s": ...}`` or
    ``{"strs": ...}`` argument and output becomes ``{"k": i}``, the i-th of the constants returned beside it."""
    consts = []

    def leaf(a):
        if "list" in a:
            return {"list": [leaf(v) for v in a["list"]]}
        if len(a) == 1 and next(iter(a)) in ("c", "s", "strs"):
            consts.append(a)
            return {"k": len(consts) - 1}
        return a

    nodes = [[op, [leaf(a) for a in args], attrs] for op, args, attrs in g["nodes"]]
    return {"nodes": nodes, "outputs": {k: leaf(v) for k, v in g["outputs"].items()}}, consts


def combination_graph(live: dict, key: str) -> dict:
    """The recorded graph (:func:`.arrays.graph`) of the combination ``key`` of a figure's :meth:`Figure.live`
    spec: its template with its constants and arrays put back (what ``graphOf`` in speclib_live.js does)."""
    entry = live["graph_list"][live["graphs"][key]]
    template = live["templates"][entry["t"]]

    def leaf(a):
        if "list" in a:
            return {"list": [leaf(v) for v in a["list"]]}
        return entry["k"][a["k"]] if "k" in a else a

    return {"nodes": [[op, [leaf(a) for a in args], attrs] for op, args, attrs in template["nodes"]],
            "outputs": {k: leaf(v) for k, v in template["outputs"].items()},
            "arrays": [live["array_pool"][i] for i in entry["arrays"]]}


def _panel_spec(panel: Panel) -> dict:
    return {"x": dataclasses.asdict(panel.x), "y": dataclasses.asdict(panel.y), "title": panel.title,
            "legend": panel.legend,
            "series": [{"kind": s.kind, **dataclasses.asdict(s)} for s in panel.series]}


