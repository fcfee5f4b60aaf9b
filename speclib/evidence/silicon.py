"""The paper's mechanism timed on a GPU: one layer's components measured by
``benchmarks/bench_layers.py``, held against the roofline.

A measurement file (``<gpu>-layers.json``, shipped in
``speclib/data/measured/``) holds, for one chip, the seconds of

* ``moe``: one mixture-of-experts layer's routed experts (gate, up and down
  projections, SwiGLU) over B x T positions routed top-k uniformly at random;
* ``dense``: a dense model's MLP over the same positions;
* ``attention``: B sequences of T query positions over S cached tokens, in
  MLA's absorbed form (DeepSeek-V3) or GQA (Llama-3-70B),

each point beside the roofline speclib gives for it
(:mod:`speclib.core.layers`). This module reads such a file (a bad field is
a ValueError naming the file and the field) and computes, for such a run,
the marginal cost of one more verified
position against the roofline's (the free band of a dense layer, the expert
tax of a MoE layer), the verify width at which attention starts to cost more
(MLA against GQA, measured against the roofline's ridge), and the measured
time over the roofline's per kind, beside the calibrated step's chip factor.
No run is shipped; the book's chapter on measured kernels reads NVIDIA's
kernel tables instead (:mod:`speclib.evidence.measured_kernels`).
"""
from __future__ import annotations

import dataclasses
import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from .._checks import checked_array, checked_choice
from ..core import calibrated as _cal
from ..core import layers as _layers
from ..presets import Hardware, resolve
from ..presets import hardware as hardware_preset

#: What a point measures.
KINDS = ("moe", "dense", "attention")
#: The precisions a point may be measured in.
DTYPES = tuple(_layers.ELEMENT_BYTES)
#: Where the shipped measurement files live, inside the package.
MEASURED_DIR = ("data", "measured")
#: The file a run writes: ``<gpu slug>`` then this.
FILE_SUFFIX = "-layers.json"
#: How much longer than at T = 1 a time must be to count as grown (10 %).
TURN_THRESHOLD = 0.10
#: The device names that map to a hardware preset, tried in order: a name
#: containing the first and none of the third maps to the second (an H100
#: PCIe or NVL has other clocks and bandwidth, and no preset).
DEVICE_PRESETS = (("H200", "H200", ()), ("H100", "H100-SXM", ("PCIE", "NVL")))


def device_slug(name: str) -> str:
    """A file-name slug of the device name torch reports:
    ``"NVIDIA H100 80GB HBM3"`` -> ``"h100-80gb-hbm3"``."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a device name (a non-empty string); got {name!r}")
    words = re.sub(r"^nvidia\s+", "", name.strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", words).strip("-")


def hardware_for_device(name: str):
    """The hardware preset for a device name torch reports (see
    :data:`DEVICE_PRESETS`), or None if none fits."""
    upper = str(name).upper()
    for key, preset, unless in DEVICE_PRESETS:
        if key in upper and not any(u in upper for u in unless):
            return hardware_preset(preset)
    return None


def _check_kind(kind: str, model) -> None:
    if kind == "moe" and not model.ffn.is_moe:
        raise ValueError(f"shape {model.name!r} is dense; kind 'moe' needs a mixture-of-experts model")
    if kind == "dense" and model.ffn.is_moe:
        raise ValueError(f"shape {model.name!r} is a mixture of experts; kind 'dense' needs a dense model")


def attention_layout(shape: str) -> str:
    """The attention layout of the model ``shape``: "mla" or "gqa"."""
    model, _ = resolve(shape, None)
    return model.attention.kind


def predicted_seconds(kind: str, shape: str, B, T, S=None, dtype: str = "bf16", hardware=None):
    """The roofline's seconds for one measured point: ``kind`` of
    :data:`KINDS` for the model ``shape`` on ``hardware``, ``B`` sequences of
    ``T`` positions (and ``S`` cached tokens for attention), in ``dtype``."""
    kind = checked_choice("kind", kind, KINDS)
    model, hardware = resolve(shape, hardware)
    if kind == "attention":
        if S is None:
            raise ValueError("S must be a number in (0, inf) for kind 'attention'; got None")
        return _layers.attention_time(B, T, S, model, hardware, kv_precision=dtype)
    _check_kind(kind, model)
    return _layers.ffn_time(B, T, model, hardware, precision=dtype)


# --- reading a measurement file ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LayerMeasurements:
    """One chip's measured layer components (a ``<gpu>-layers.json``): the
    run's description and one array per field of the points, with
    ``roofline_s`` the roofline speclib gives now for each point (the file's
    ``predicted_s`` is what it gave when the file was written)."""

    path: str
    gpu: str
    hardware: Hardware
    torch: str
    cuda: str
    date: str
    clocks: object
    budget_s: float
    elapsed_s: float
    notes: tuple
    trimmed: tuple
    kind: np.ndarray
    shape: np.ndarray
    B: np.ndarray
    T: np.ndarray
    S: np.ndarray  # NaN where the point is not attention
    dtype: np.ndarray
    seconds: np.ndarray
    repeats: np.ndarray
    method: np.ndarray
    graph: np.ndarray
    predicted_s: np.ndarray  # NaN where the file has none
    experts_touched: np.ndarray  # NaN where the point is not moe or the file has none
    roofline_s: np.ndarray

    def __len__(self) -> int:
        return len(self.seconds)

    @property
    def ratio(self) -> np.ndarray:
        """Measured over roofline seconds, per point."""
        return self.seconds / self.roofline_s

    def select(self, **where) -> np.ndarray:
        """Indices of the points whose fields equal ``where``'s values
        (``kind="moe", dtype="bf16"``), in file order."""
        keep = np.ones(len(self), dtype=bool)
        for name, value in where.items():
            if name not in ("kind", "shape", "B", "T", "S", "dtype", "method"):
                raise ValueError(f"select() field must be one of kind, shape, B, T, S, dtype, method; got {name!r}")
            keep &= getattr(self, name) == value
        return np.flatnonzero(keep)

    def shapes(self, kind: str) -> tuple:
        """The shapes measured for ``kind``, in file order."""
        kind = checked_choice("kind", kind, KINDS)
        return tuple(dict.fromkeys(self.shape[self.kind == kind]))


def _bad(where: str, field: str, allowed: str, value) -> ValueError:
    return ValueError(f"{where}: {field} must be {allowed}; got {value!r}")


def _number(where, rec, field, *, lo=0.0, integer=False, optional=False):
    value = rec.get(field)
    if value is None and optional:
        return np.nan
    kind = "an integer" if integer else "a number"
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and value > lo
    if not ok or (integer and value != int(value)):
        raise _bad(where, field, f"{kind} > {lo:g}" + (" or null" if optional else ""), value)
    return float(value)


def _text(where, rec, field, *, optional=False):
    value = rec.get(field)
    if value is None and optional:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise _bad(where, field, "a non-empty string" + (" or null" if optional else ""), value)
    return value


def _point(where: str, rec, hardware) -> dict:
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: a point must be an object; got {rec!r}")
    kind = rec.get("kind")
    if kind not in KINDS:
        raise _bad(where, "kind", f"one of {', '.join(KINDS)}", kind)
    shape = _text(where, rec, "shape")
    try:
        model, _ = resolve(shape, None)
        _check_kind(kind, model)
    except ValueError as exc:
        raise ValueError(f"{where}: shape: {exc}") from None
    dtype = rec.get("dtype")
    if dtype not in DTYPES:
        raise _bad(where, "dtype", f"one of {', '.join(DTYPES)}", dtype)
    out = {"kind": kind, "shape": model.name, "dtype": dtype,
           "B": _number(where, rec, "B", integer=True), "T": _number(where, rec, "T", integer=True),
           "S": _number(where, rec, "S", integer=True) if kind == "attention" else np.nan,
           "seconds": _number(where, rec, "seconds"), "repeats": _number(where, rec, "repeats", integer=True),
           "method": _text(where, rec, "method"),
           "predicted_s": _number(where, rec, "predicted_s", optional=True),
           "experts_touched": (_number(where, rec, "experts_touched", integer=True, optional=True)
                               if kind == "moe" else np.nan)}
    if not isinstance(rec.get("graph"), bool):
        raise _bad(where, "graph", "true or false", rec.get("graph"))
    out["graph"] = rec["graph"]
    S = None if kind == "attention" and np.isnan(out["S"]) else out["S"]
    out["roofline_s"] = float(predicted_seconds(kind, model.name, out["B"], out["T"], S, dtype, hardware))
    return out


def read_layers(path, hardware=None) -> LayerMeasurements:
    """The measurements in the file at ``path`` (what
    ``benchmarks/bench_layers.py`` writes), checked: a missing or bad field is
    a ValueError naming the file and the field. ``hardware``: the preset to
    hold them against (default: the file's ``hardware``, else the preset its
    ``gpu`` name maps to, :func:`hardware_for_device`)."""
    name = str(path)
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{name}: cannot read the measurements ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{name}: not a JSON file ({exc})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{name}: must hold a JSON object with gpu, torch, date, budget_s, elapsed_s and points")
    gpu = _text(name, doc, "gpu")
    if doc.get("dry_run"):
        raise ValueError(f"{name}: dry_run is true: a dry run times tiny shapes on a CPU, not the models' layers")
    if hardware is None and doc.get("hardware") is not None:
        try:
            hardware = hardware_preset(doc["hardware"])
        except ValueError as exc:
            raise ValueError(f"{name}: hardware: {exc}") from None
    if hardware is None:
        hardware = hardware_for_device(gpu)
        if hardware is None:
            raise ValueError(f"{name}: gpu {gpu!r} maps to no hardware preset (an H100 SXM or an H200); "
                             "pass hardware= to hold it against one")
    else:
        _, hardware = resolve(None, hardware)
    points = doc.get("points")
    if not isinstance(points, list) or not points:
        raise _bad(name, "points", "a non-empty list", points if not isinstance(points, list) else "[]")
    rows = [_point(f"{name}: points[{i}]", rec, hardware) for i, rec in enumerate(points)]
    for field in ("notes", "trimmed"):
        if not isinstance(doc.get(field, []), list):
            raise _bad(name, field, "a list", doc.get(field))
    columns = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    return LayerMeasurements(
        path=name, gpu=gpu, hardware=hardware, torch=_text(name, doc, "torch"),
        cuda=_text(name, doc, "cuda", optional=True), date=_text(name, doc, "date"), clocks=doc.get("clocks"),
        budget_s=_number(name, doc, "budget_s"), elapsed_s=_number(name, doc, "elapsed_s"),
        notes=tuple(doc.get("notes", [])), trimmed=tuple(doc.get("trimmed", [])),
        **{key: columns[key].astype(float) if key in ("B", "T", "S", "seconds", "repeats", "predicted_s",
                                                      "experts_touched", "roofline_s") else columns[key]
           for key in columns})


def shipped_files() -> tuple:
    """The measurement files shipped in ``speclib/data/measured/``, sorted by name."""
    root = resources.files("speclib").joinpath(*MEASURED_DIR)
    if not root.is_dir():
        return ()
    return tuple(sorted((p for p in root.iterdir() if p.name.endswith(FILE_SUFFIX)), key=lambda p: p.name))


@lru_cache(maxsize=None)
def shipped() -> tuple:
    """Every shipped measurement, read (an empty tuple until a run's file is shipped)."""
    return tuple(read_layers(p) for p in shipped_files())


# --- (a) the marginal cost of one more verified position ------------------------------------


@dataclasses.dataclass(frozen=True)
class WidthSeries:
    """One component's time against the verify width T at one batch B (and
    context S): measured and roofline seconds at each measured T, sorted."""

    kind: str
    shape: str
    dtype: str
    B: float
    S: float
    T: np.ndarray
    measured_s: np.ndarray
    roofline_s: np.ndarray

    def _at_one(self, seconds) -> float:
        return float(seconds[0]) if self.T[0] == 1 else np.nan

    def relative(self, roofline: bool = False) -> np.ndarray:
        """t(B, T) / t(B, 1) at each T (NaN without a point at T = 1)."""
        seconds = self.roofline_s if roofline else self.measured_s
        return seconds / self._at_one(seconds)

    def marginal(self, roofline: bool = False) -> np.ndarray:
        """Seconds per verified position between neighbouring measured
        widths, (t(T') - t(T)) / (T' - T): one fewer than the widths."""
        seconds = self.roofline_s if roofline else self.measured_s
        return np.diff(seconds) / np.diff(self.T)

    def turn(self, threshold: float = TURN_THRESHOLD, roofline: bool = False) -> float:
        """The smallest measured T whose time exceeds t(B, 1) by more than
        ``threshold`` (NaN if none does, or without T = 1)."""
        grown = self.relative(roofline) > 1.0 + threshold
        return float(self.T[np.argmax(grown)]) if grown.any() else np.nan


def width_series(m: LayerMeasurements, kind: str, dtype: str = "bf16") -> tuple:
    """The points of ``kind`` in ``dtype`` as :class:`WidthSeries`, one per
    (shape, S, B), in the order the shapes, contexts and batches first appear."""
    kind = checked_choice("kind", kind, KINDS)
    dtype = checked_choice("dtype", dtype, DTYPES)
    idx = m.select(kind=kind, dtype=dtype)
    S_key = np.where(np.isnan(m.S), -1.0, m.S)  # NaN (no context) never equals itself: -1 stands for it
    keys = dict.fromkeys((m.shape[i], S_key[i], m.B[i]) for i in idx)
    out = []
    for shape, S, B in keys:
        sel = idx[(m.shape[idx] == shape) & (m.B[idx] == B) & (S_key[idx] == S)]
        sel = sel[np.argsort(m.T[sel], kind="stable")]
        out.append(WidthSeries(kind, str(shape), dtype, float(B), np.nan if S < 0 else float(S), m.T[sel], m.seconds[sel],
                               m.roofline_s[sel]))
    return tuple(out)


def marginal_rows(m: LayerMeasurements, kind: str = "moe", dtype: str = "bf16") -> list:
    """Rows (shape, B, T from, T to, measured and roofline microseconds per
    added position, measured and roofline t(B, T to) / t(B, 1)) of the FFN
    points of ``kind`` ("moe" or "dense")."""
    if checked_choice("kind", kind, KINDS) == "attention":
        raise ValueError("kind must be 'moe' or 'dense' for marginal_rows; got 'attention' (see attention_turns)")
    rows = []
    for s in width_series(m, kind, dtype):
        marginal, roof = s.marginal() * 1e6, s.marginal(roofline=True) * 1e6
        rel, rel_roof = s.relative(), s.relative(roofline=True)
        for j in range(len(s.T) - 1):
            rows.append((s.shape, s.B, s.T[j], s.T[j + 1], marginal[j], roof[j], rel[j + 1], rel_roof[j + 1]))
    return rows


def expert_tax(m: LayerMeasurements, kind: str = "moe", T: int = 2, dtype: str = "bf16") -> dict:
    """{shape: (B, measured t(B, T) / t(B, 1), roofline's)} at the batches
    measured at both widths: for a dense layer the free band (1 until the
    GEMMs turn compute-bound), for a MoE layer the expert tax (close to T at
    small B, where each added position brings its own experts)."""
    T = float(checked_array("T", T, lo=2, integer=True))
    out = {}
    for s in width_series(m, kind, dtype):
        at = np.flatnonzero(s.T == T)
        if s.T[0] != 1 or not len(at):
            continue
        B, meas, roof = out.get(s.shape, ([], [], []))
        B.append(s.B)
        meas.append(s.relative()[at[0]])
        roof.append(s.relative(roofline=True)[at[0]])
        out[s.shape] = (B, meas, roof)
    return {shape: tuple(np.array(v) for v in values) for shape, values in out.items()}


# --- (b) attention: where it starts to cost -----------------------------------------------


def attention_turns(m: LayerMeasurements, threshold: float = TURN_THRESHOLD, dtype: str = "bf16") -> list:
    """Rows (shape, layout, S, B, measured turn, roofline turn, ridge width)
    of the attention points: the smallest measured T whose time exceeds
    t(B, 1) by more than ``threshold``, measured and on the roofline (NaN: it
    did not grow within the widths measured), and the roofline's ridge width
    m_c R / f (:func:`speclib.core.layers.attention_ridge_width`)."""
    threshold = float(checked_array("threshold", threshold, lo=0, lo_open=True))
    rows = []
    for s in width_series(m, "attention", dtype):
        ridge = _layers.attention_ridge_width(s.shape, m.hardware, kv_precision=dtype)
        rows.append((s.shape, attention_layout(s.shape), s.S, s.B, s.turn(threshold), s.turn(threshold, roofline=True),
                     ridge))
    return rows


# --- (c) measured over roofline, per kind ----------------------------------------------


def calibrated_factor(m: LayerMeasurements) -> float:
    """The shipped calibrated step's roofline factor mu for the measured chip
    (its vendor's median for a chip it has not fitted)."""
    return float(_cal.shipped_calibration().constants(m.hardware)[0])


def ratio_summary(m: LayerMeasurements) -> list:
    """Rows (kind, dtype, points, median, 25th and 75th percentile, min, max)
    of measured / roofline seconds, per kind and precision measured."""
    rows = []
    for kind in KINDS:
        for dtype in DTYPES:
            r = m.ratio[m.select(kind=kind, dtype=dtype)]
            if len(r):
                q25, median, q75 = np.percentile(r, [25, 50, 75])
                rows.append((kind, dtype, len(r), float(median), float(q25), float(q75), float(r.min()),
                             float(r.max())))
    return rows
