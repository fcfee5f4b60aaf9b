"""The parts a figure definition is made of, as plain data: its controls
(:class:`Slider`, :class:`Choice`, :class:`Toggle`), its axes and panels, the
series drawn on them, and the templates their labels are written in. The
renderers (:mod:`.static`, :mod:`.interactive`, the browser's) read these;
:mod:`.definition` puts them together into a :class:`~.definition.Figure`.
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable, Optional

import numpy as np

# --- controls ------------------------------------------------------------------------


class _Control:
    """What the page reads of a control: its ``kind`` and fields (a choice's ``canonical`` stays in Python);
    the discrete ones (menus, checkboxes) get one recorded graph per value."""

    def spec(self) -> dict:
        return {"kind": self.kind, **{k: v for k, v in dataclasses.asdict(self).items() if k != "canonical"}}


@dataclasses.dataclass(frozen=True)
class Slider(_Control):
    """A number between ``lo`` and ``hi``. ``scale="log2"`` moves in steps of
    ``step`` in log2 of the value (the paper's sequence-length slider is
    ``Slider("S", ..., 512, 131072, scale="log2", step=1/8)``); ``integer``
    rounds to whole numbers; ``format`` is how the value is shown."""

    name: str
    label: str
    lo: float
    hi: float
    value: float
    step: float = 0.01
    scale: str = "linear"
    integer: bool = False
    format: str = ".3g"

    def __post_init__(self):
        if self.scale not in ("linear", "log2"):
            raise ValueError(f"slider {self.name}: scale must be 'linear' or 'log2'; got {self.scale!r}")
        if not (self.lo <= self.value <= self.hi):
            raise ValueError(f"slider {self.name}: value {self.value} outside [{self.lo}, {self.hi}]")
        if self.scale == "log2" and self.lo <= 0:
            raise ValueError(f"slider {self.name}: a log2 slider needs lo > 0")

    kind, discrete = "slider", False

    def check(self, value):
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name} must be a number in [{self.lo:g}, {self.hi:g}]; got {value!r}") from None
        if not (self.lo - 1e-9 * abs(self.lo) <= v <= self.hi + 1e-9 * abs(self.hi)) or math.isnan(v):
            raise ValueError(f"{self.name} must be in [{self.lo:g}, {self.hi:g}]; got {value!r}")
        return float(round(v)) if self.integer else v


@dataclasses.dataclass(frozen=True)
class Choice(_Control):
    """One of ``options``: ``(label, value)`` pairs (a plain value is its own label)."""

    name: str
    label: str
    options: tuple
    value: Any
    #: Maps another spelling of an option (an alias such as "H100") to the option.
    canonical: Optional[Callable] = None

    def __post_init__(self):
        opts = tuple(o if isinstance(o, tuple) else (str(o), o) for o in self.options)
        object.__setattr__(self, "options", opts)
        if self.value not in self.values():
            raise ValueError(f"choice {self.name}: default {self.value!r} is not an option")

    kind, discrete = "choice", True

    def values(self) -> tuple:
        return tuple(v for _, v in self.options)

    def check(self, value):
        if self.canonical is not None and value not in self.values():
            try:
                value = self.canonical(value)
            except ValueError:
                pass
        if value not in self.values():
            allowed = ", ".join(repr(v) for v in self.values())
            raise ValueError(f"{self.name} must be one of {allowed}; got {value!r}")
        return value


@dataclasses.dataclass(frozen=True)
class Toggle(_Control):
    """On or off."""

    name: str
    label: str
    value: bool

    kind, discrete = "toggle", True

    def values(self) -> tuple:
        return (False, True)

    def check(self, value):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{self.name} must be True or False; got {value!r}")
        return bool(value)


# --- axes and series -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Axis:
    """``scale``: linear, log, log2, or the name of a parameter holding one; ``lo``/``hi``: a number, the name of a
    scalar output, or None (fitted to the data); ``ticks``: "number",
    "batch" (1, 10, 100, 1k), "context" (512, 2k, 128k), "percent", or a tuple of the values to mark."""

    label: str
    scale: str = "linear"
    lo: Any = None
    hi: Any = None
    ticks: str = "number"


@dataclasses.dataclass(frozen=True)
class _Drawn:
    """Keywords most series take: ``when``, an output or parameter that
    hides the series when false, and ``gid``, the id its artists carry."""

    _: dataclasses.KW_ONLY
    when: str = ""
    gid: str = ""


def _series(kind):
    def wrap(cls):
        cls.kind = kind
        return dataclasses.dataclass(frozen=True)(cls)

    return wrap


@_series("line")
class Line(_Drawn):
    """y against x. A 2-D ``y`` is one line per row, labelled from the
    output ``labels`` (a list of strings) and coloured from the cycle unless
    ``color`` is given."""

    x: str
    y: str
    label: str = ""
    color: str = ""
    dash: str = "solid"
    width: float = 2.0
    marker: str = ""
    labels: str = ""
    #: An output holding one colour per row (a family of lines), or "".
    colors: str = ""
    step: bool = False
    alpha: float = 1.0


@_series("area")
class Area(_Drawn):
    """The region between ``y0`` (an output or a number) and ``y``, where the mask output ``where`` is true."""

    x: str
    y: str
    y0: Any = 0.0
    where: str = ""
    label: str = ""
    color: str = ""
    alpha: float = 0.15
    hatch: str = ""


@_series("bands")
class Bands(_Drawn):
    """Vertical bands over the runs of x where the mask output ``mask`` is
    true, each run labelled ``text`` at its top (``inner_text`` for a run
    that touches neither end of the axis)."""

    x: str
    mask: str
    label: str = ""
    text: str = ""
    inner_text: str = ""
    color: str = ""
    alpha: float = 0.15
    hatch: str = ""


@_series("hline")
class HLine(_Drawn):
    y: Any
    label: str = ""
    color: str = ""
    dash: str = "dashed"
    width: float = 1.2
    text: str = ""


@_series("vline")
class VLine(_Drawn):
    x: Any
    label: str = ""
    color: str = ""
    dash: str = "dashed"
    width: float = 1.2
    text: str = ""


@_series("heatmap")
class Heatmap:
    """``z[i, j]`` at ``y[i]``, ``x[j]``; ``colors``: "gamma" (discrete, 0 in
    its own colour), "viridis" or "diverging"; ``vmin``/``vmax`` numbers or
    outputs; ``mask``: an output of z's shape whose true cells are hatched."""

    x: str
    y: str
    z: str
    colors: str = "viridis"
    vmin: Any = None
    vmax: Any = None
    mask: str = ""
    colorbar: bool = True
    label: str = ""
    gid: str = ""


@_series("text")
class Text(_Drawn):
    """A note at data coordinates (numbers or outputs), a template; offset by
    (``dx``, ``dy``) points, with an arrow back to the point if ``arrow``;
    ``marker`` draws the point itself. A coordinate that is not finite hides it."""

    x: Any
    y: Any
    text: str
    color: str = "#333333"
    size: float = 9.0
    align: str = "left"
    dx: float = 0.0
    dy: float = 0.0
    arrow: bool = False
    marker: str = ""
    #: "data", or "axes" (x and y as fractions of the panel, 0 to 1).
    coords: str = "data"


@_series("points")
class Points(_Drawn):
    """Markers at (x, y), without a line; ``filled=False`` draws them hollow."""

    x: str
    y: str
    label: str = ""
    color: str = ""
    marker: str = "o"
    filled: bool = True
    size: float = 4.5
    alpha: float = 1.0
    #: An output holding one colour per row of a 2-D ``y``, or "".
    colors: str = ""


@_series("table")
class Table:
    """A table of numbers (the panel's only series): ``values[i, j]`` in row
    ``rows[i]``, column ``columns[j]``, the cells where ``highlight`` is true
    in bold; ``caption`` a template; ``corner`` the top-left cell."""

    rows: str
    columns: str
    values: str
    highlight: str = ""
    caption: str = ""
    corner: str = ""
    format: str = ",.0f"


@dataclasses.dataclass(frozen=True)
class Key:
    """One entry of a figure-wide legend (below the panels)."""

    label: str
    color: str = "#000000"
    marker: str = ""
    dash: str = "solid"
    filled: bool = True


@dataclasses.dataclass(frozen=True)
class Panel:
    x: Axis
    y: Axis
    series: tuple
    title: str = ""
    legend: str = "best"
    grid: bool = True


def combo_key(values) -> str:
    """The key of one combination of discrete control values (as the page forms it)."""
    return "|".join(_json_scalar(v) for v in values)


def _json_scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


# --- templates -----------------------------------------------------------------------

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")
_FORMAT = re.compile(r"^,?(\.\d+)?[fg%]?$")


def fill(template: str, data: dict) -> str:
    """``template`` with ``{name}`` / ``{name:fmt}`` replaced from ``data``
    (then ``data["params"]``); only the formats the browser also knows."""
    params = data.get("params", {})

    def one(m):
        name, fmt = m.group(1), m.group(2) or ""
        if not _FORMAT.match(fmt):
            raise ValueError(f"template format {fmt!r} is not one the browser knows (',', '.Nf', '.Ng', '.N%')")
        value = data[name] if name in data else params[name]
        if isinstance(value, (np.ndarray, np.generic)):
            value = value.item()
        if fmt == "" and isinstance(value, float) and value.is_integer():
            value = int(value)
        return format(value, fmt)

    return _FIELD.sub(one, template)


def value_of(ref, data):
    """A series field that is a number or the name of an output."""
    if isinstance(ref, str):
        return data[ref] if ref in data else data["params"][ref]
    return ref
