"""A calibrated step time: the roofline plus the per-step costs that measured
decoding and measured speculative decoding show it misses.

The roofline (:class:`speclib.core.step.StepModel`) is a lower bound: the
InferenceMAX Llama-3.3-70B runs decode 1.35 to 2.1 times slower than it on
one GPU and 3.6 to 8.7 times slower at eight (the measured-decode chapter).
:mod:`speclib.calibration.step_fit` fits a small model of the gap jointly on
those runs and on published speculative runs, and writes its constants to
``data/calibration/step_time.json``; this module reads them and prices a
step of B sequences of T positions with them
(:data:`speclib.formulas.step.engine_step_expr`):

    t = mu_chip * t_roofline / tp  +  kappa * t_flops / tp  +  a_(chip, engine)  +  d * B  +  e * B * (T - 1)

* ``mu_chip``: how much slower than the datasheet the chip's kernels move
  bytes and do FLOPs (the roofline's time scaled; 1 = datasheet speed);
* ``kappa``: FLOPs at peak that the memory stream does not hide (tried; the
  shipped fit has 0);
* ``a``: a fixed time per engine step, whatever the batch, the chip's share
  of the weights or the tensor-parallel width (kernel launches, host-side
  scheduling, synchronisation);
* ``d``: a time per sequence in the step (per-request host work);
* ``e``: a time per verified position past the first (sampling and the
  rejection test, the KV writes of rejected positions), which only
  speculative runs identify;
* ``a_d`` (``per_draft_pass_s``): a time per sequential drafter pass (0 in
  the shipped fit, where held out it made predictions worse; ``speclib fit``
  fits it to a reader's own runs).

A drafter priced by its own roofline runs inside the engine step, its passes
scaled by ``mu``; the paper's constant drafter costs its fraction of the
calibrated plain step. ``per_token=True`` charges ``d`` per verified position
instead, a sensitivity the engines chapter shows. The fit, its held-out
errors and what it still misses are in the engines chapter.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import numpy as np

from .._checks import checked_choice
from ..formulas import numpy_functions as nf
from ..presets import hardware as hardware_preset
from .step import StepModel
from .step import step_model as _step_model

#: How a step's time is priced: the roofline (a lower bound) or the
#: roofline calibrated on measured decoding.
STEP_TIMES = ("roofline", "calibrated")
#: The serving engines a calibrated step prices: the ones in the measured
#: data. An engine without constants of its own on a chip shares another's
#: (:attr:`Calibration.shared_engines`), and says so (:meth:`Calibration.notes`).
ENGINES = ("vLLM", "TRT", "SGLang")
#: The engine assumed unless one is named: the only one measured on every chip.
DEFAULT_ENGINE = "vLLM"
#: Each engine as the command line and the headers spell it (``--engine``,
#: any case), beside the calibration's name for it.
ENGINE_SPELLING = {"vLLM": "vllm", "SGLang": "sglang", "TRT": "trtllm"}
ENGINE_OPTIONS = tuple(ENGINE_SPELLING.values())


def spelled(engine: str) -> str:
    """``engine`` (a calibration name, :data:`ENGINES`) as the command line and the headers spell it."""
    return ENGINE_SPELLING.get(engine, engine)


def check_step_time(value):
    """``"roofline"``, ``"calibrated"`` (the shipped calibration) or a
    :class:`Calibration` (one's own fit, e.g. from ``speclib fit``)."""
    if isinstance(value, Calibration):
        return value
    return checked_choice("step_time", value, STEP_TIMES)


def calibration_of(step_time):
    """The calibration a checked ``step_time`` prices with (None: the roofline)."""
    if isinstance(step_time, Calibration):
        return step_time
    return shipped_calibration() if step_time == "calibrated" else None


#: The constants one bootstrap draw holds (the rest are the calibration's own).
DRAW_FIELDS = ("roofline_factor", "fixed_s", "per_sequence_s", "compute_factor", "per_position_s",
               "per_position_by_vendor", "extra_flops_by_vendor", "per_draft_pass_s", "prefill_factor",
               "vendor_factor", "vendor_fixed_s", "moe_layer_s", "attention_factor_by_vendor",
               "token_layer_by_vendor")


@dataclass(frozen=True)
class Calibration:
    """The fitted constants: ``roofline_factor`` (mu) per chip, ``fixed_s``
    (a, seconds) per chip and engine, ``per_sequence_s`` (d, seconds), and
    the rest below (see the module notes)."""

    roofline_factor: dict
    fixed_s: dict
    per_sequence_s: float
    model: str = ""
    fitted_on: tuple = ()
    source: str = ""
    batch_range: tuple = ()  # the smallest and largest batch in the runs fitted
    #: kappa: seconds per second of FLOPs at peak that the memory stream does not hide
    compute_factor: float = 0.0
    #: e: seconds per verified position past the first, per sequence (the
    #: value of a chip whose vendor has none of its own below)
    per_position_s: float = 0.0
    #: a_d: seconds per sequential pass of a drafter
    per_draft_pass_s: float = 0.0
    #: the prefill of arriving requests: its FLOPs at peak times this
    prefill_factor: float = 1.0
    #: a short name for tables and CSV rows (e.g. the file it was read from)
    label: str = ""
    #: e by the chip's vendor ("NVIDIA", "AMD"), where it was fitted per vendor
    per_position_by_vendor: dict = field(default_factory=dict)
    #: chi = 1/eta by vendor: seconds per second of the extra verified
    #: positions' FLOPs at peak (eta: the fraction of peak they run at)
    extra_flops_by_vendor: dict = field(default_factory=dict)
    #: L_ref: the layers of the model ``fixed_s`` was measured on; a model of
    #: L layers takes a x L / L_ref (0: the fixed time is the same for every model)
    fixed_layers_ref: float = 0.0
    #: engines without fixed times of their own, and the engine whose they take
    shared_engines: dict = field(default_factory=dict)
    #: mu and a for a chip of a known vendor that is not in ``roofline_factor``
    #: (the medians over that vendor's fitted chips)
    vendor_factor: dict = field(default_factory=dict)
    vendor_fixed_s: dict = field(default_factory=dict)
    #: what the fit has seen: {"active_params": [lo, hi], "vendors": [...],
    #: "engines": [...], "batch": [lo, hi]}; beyond it a prediction extrapolates
    seen: dict = field(default_factory=dict)
    #: a time per MoE layer per step by the chip's vendor (the kernels a
    #: layer of routed experts adds, whatever the batch); empty: not a term
    moe_layer_s: dict = field(default_factory=dict)
    #: nu by the chip's vendor: how much slower again than the chip's
    #: factor attention's kernels run; empty: not a term
    attention_factor_by_vendor: dict = field(default_factory=dict)
    #: tau by the chip's vendor: seconds per token per layer the roofline
    #: does not count; empty: not a term
    token_layer_by_vendor: dict = field(default_factory=dict)
    #: bootstrap draws of the constants (dicts of :data:`DRAW_FIELDS`), for intervals
    draws: tuple = ()
    #: the spread, in log speed-up, of a held-out run's error that the draws
    #: do not carry; added to the draws' spread in an interval
    residual_sd: float = 0.0

    def __str__(self) -> str:
        return f"calibrated ({self.label})" if self.label else "calibrated"

    def in_range(self, batch) -> bool:
        """Whether ``batch`` lies in the measured batches (beyond them the
        per-sequence term is an extrapolation)."""
        return not self.batch_range or self.batch_range[0] <= batch <= self.batch_range[1]

    def chips(self) -> tuple:
        return tuple(self.roofline_factor)

    def _chip(self, hardware):
        """The fitted chip name of ``hardware``, or None (a chip the fit did not see)."""
        names = {n.lower() for n in (hardware.name, *hardware.aliases)}
        for chip in self.roofline_factor:
            if chip.lower() in names:
                return chip
        return None

    def engine_for(self, engine: str) -> str:
        """The engine whose fixed time ``engine`` takes."""
        engine = checked_choice("engine", engine, ENGINES)
        return self.shared_engines.get(engine, engine)

    def peers(self, hardware) -> tuple:
        """The fitted chips of ``hardware``'s generation (its own excluded)."""
        generation = getattr(hardware, "generation", "")
        if not generation:
            return ()
        out = []
        for chip in self.roofline_factor:
            try:
                preset = hardware_preset(chip)
            except ValueError:
                continue
            if preset.generation == generation and preset.name != hardware.name:
                out.append(chip)
        return tuple(out)

    def chip_factor(self, hardware) -> float:
        """mu for ``hardware``, as :meth:`constants` takes it: the chip's own,
        or, for a chip the fit did not see, the median of the fitted chips of
        its generation, else its vendor's (refused for a vendor with none)."""
        chip = self._chip(hardware)
        if chip is not None:
            return self.roofline_factor[chip]
        peers = self.peers(hardware)
        if peers:
            return float(np.median([self.roofline_factor[p] for p in peers]))
        vendor = getattr(hardware, "vendor", "")
        if vendor not in self.vendor_factor:
            raise ValueError(f"hardware {hardware.name!r} has no calibrated chip factor: its vendor {vendor!r} has "
                             f"no fitted constants (calibrated on {', '.join(self.roofline_factor)})")
        return self.vendor_factor[vendor]

    def constants(self, hardware, engine: str = DEFAULT_ENGINE) -> tuple:
        """(mu, a, d) for ``hardware`` served by ``engine``: the chip's own,
        or, for a chip the fit did not see, the median of the fitted chips of
        its generation (:attr:`speclib.presets.Hardware.generation`), else of
        its vendor's (refused for a vendor with none, and for an engine with
        no fixed time on it)."""
        used = self.engine_for(engine)
        chip = self._chip(hardware)
        peers = self.peers(hardware) if chip is None else ()
        if peers:
            fixed = [self.fixed_s[p][used] for p in peers if used in self.fixed_s.get(p, {})]
            vendor = self.vendor_fixed_s.get(getattr(hardware, "vendor", ""), {})
            if not fixed and used not in vendor:
                raise ValueError(f"engine {spelled(engine)!r} was not measured on {hardware.generation} or "
                                 f"{hardware.vendor} chips")
            return (self.chip_factor(hardware), float(np.median(fixed)) if fixed else vendor[used],
                    self.per_sequence_s)
        if chip is not None:
            fixed = self.fixed_s[chip]
            if used not in fixed:
                vendor = self.vendor_fixed_s.get(getattr(hardware, "vendor", ""), {})
                if used not in vendor:
                    raise ValueError(f"engine {spelled(engine)!r} was not measured on {chip} (measured: "
                                     f"{', '.join(map(spelled, fixed))})")
                return self.chip_factor(hardware), vendor[used], self.per_sequence_s
            return self.chip_factor(hardware), fixed[used], self.per_sequence_s
        vendor = getattr(hardware, "vendor", "")
        if vendor not in self.vendor_factor:
            raise ValueError(f"hardware {hardware.name!r} has no calibrated step time: its vendor {vendor!r} has no "
                             f"fitted constants (calibrated on {', '.join(self.roofline_factor)}"
                             + (f"; vendors {', '.join(self.vendor_factor)}" if self.vendor_factor else "")
                             + "); use step_time='roofline'")
        fixed = self.vendor_fixed_s.get(vendor, {})
        if used not in fixed:
            raise ValueError(f"engine {spelled(engine)!r} was not measured on {vendor} chips (measured: "
                             f"{', '.join(map(spelled, fixed))})")
        return self.chip_factor(hardware), fixed[used], self.per_sequence_s

    def fixed_fallback(self, hardware, engine: str):
        """The line that says ``hardware`` served by ``engine`` has no fixed
        time per step fitted on it, and what it takes instead (its vendor's
        median); None where the chip has its own for that engine, or where
        the chip is not in the fit (:meth:`notes` says that)."""
        chip = self._chip(hardware)
        used = self.engine_for(engine)
        if chip is None or used in self.fixed_s.get(chip, {}):
            return None
        vendor = getattr(hardware, "vendor", "")
        a = self.vendor_fixed_s.get(vendor, {}).get(used)
        if a is None:
            return None  # refused by constants()
        measured = ", ".join(spelled(e) for e in self.fixed_s.get(chip, {})) or "none"
        return (f"{chip} has no fixed time per step fitted for engine {spelled(engine)} (fitted there: {measured}): "
                f"it takes the {vendor} chips' median for {spelled(engine)}, {a * 1e3:.2f} ms per step")

    def fixed(self, hardware, engine: str, layers) -> float:
        """a for ``hardware``, ``engine`` and a model of ``layers`` layers
        (:data:`speclib.formulas.step.fixed_by_layers_expr` where the fit scales it)."""
        a = self.constants(hardware, engine)[1]
        if not self.fixed_layers_ref or layers is None:
            return a
        return float(nf.fixed_by_layers(a, float(layers), self.fixed_layers_ref))

    def attention_factor(self, hardware) -> float:
        """nu for ``hardware``'s vendor (a vendor without its own: the
        largest; 0: not a term of this fit)."""
        if not self.attention_factor_by_vendor:
            return 0.0
        return self.attention_factor_by_vendor.get(hardware.vendor, max(self.attention_factor_by_vendor.values()))

    def moe_layer(self, hardware) -> float:
        """The time per MoE layer per step on ``hardware``'s vendor (a
        vendor without its own: the largest; 0: not a term of this fit)."""
        if not self.moe_layer_s:
            return 0.0
        return self.moe_layer_s.get(hardware.vendor, max(self.moe_layer_s.values()))

    def token_layer(self, hardware) -> float:
        """tau for ``hardware``'s vendor (a vendor without its own: the
        largest; 0: not a term of this fit)."""
        if not self.token_layer_by_vendor:
            return 0.0
        return self.token_layer_by_vendor.get(hardware.vendor, max(self.token_layer_by_vendor.values()))

    def per_position(self, hardware, layers=None) -> float:
        """e for ``hardware``: its vendor's, else the one for every chip; for a
        model of ``layers`` full-attention layers where the fit scales its
        per-step times by layers, e L_a / L_ref
        (:data:`speclib.formulas.step.fixed_by_layers_expr`)."""
        e = self.per_position_by_vendor.get(hardware.vendor, self.per_position_s)
        if not self.fixed_layers_ref or layers is None:
            return e
        return float(nf.fixed_by_layers(e, float(layers), self.fixed_layers_ref))

    def extra_flops(self, hardware) -> float:
        """chi = 1/eta for ``hardware``'s vendor (0: not a term of this fit)."""
        if not self.extra_flops_by_vendor:
            return 0.0
        return self.extra_flops_by_vendor.get(hardware.vendor, max(self.extra_flops_by_vendor.values()))

    def notes(self, model=None, hardware=None, engine: str = DEFAULT_ENGINE, batch=None) -> tuple:
        """One line for each thing a prediction for this deployment
        extrapolates beyond what the fit has seen (empty: nothing)."""
        out = []
        if hardware is not None and self._chip(hardware) is None:
            peers = self.peers(hardware)
            whose = (f"the {hardware.generation} chips' ({', '.join(peers)})" if peers
                     else f"the {hardware.vendor} chips'")
            out.append(f"chip {hardware.name} is not in the fit: it takes {whose} median roofline factor and "
                       "fixed time")
        if self.shared_engines.get(engine):
            out.append(f"engine {spelled(engine)} has no fixed time of its own: it shares "
                       f"{spelled(self.shared_engines[engine])}'s")
        fallback = self.fixed_fallback(hardware, engine) if hardware is not None and engine else None
        if fallback is not None:
            out.append(fallback)
        seen = self.seen
        if hardware is not None and seen.get("vendors") and hardware.vendor not in seen["vendors"]:
            out.append(f"vendor {hardware.vendor} has no speculative run in the fit")
        if engine and seen.get("engines") and engine not in seen["engines"]:
            out.append(f"engine {spelled(engine)} has no speculative run in the fit")
        lo_hi = seen.get("active_params")
        if model is not None and lo_hi:
            active = model.active_params()
            if not lo_hi[0] <= active <= lo_hi[1]:
                out.append(f"model size {active / 1e9:.3g}B active parameters is outside the fitted "
                           f"{lo_hi[0] / 1e9:.3g}-{lo_hi[1] / 1e9:.3g}B")
        b = seen.get("batch") or self.batch_range
        if batch is not None and b:
            top = float(np.max(batch))
            if not b[0] <= top <= b[1]:
                out.append(f"batch {top:g} is outside the fitted {b[0]:g}-{b[1]:g}")
        return tuple(out)

    def draw_calibrations(self) -> tuple:
        """Each bootstrap draw as a :class:`Calibration` (empty without draws)."""
        cached = self.__dict__.get("_draw_cals")
        if cached is None:
            cached = tuple(dataclasses.replace(self, draws=(), **_draw_fields(d)) for d in self.draws)
            object.__setattr__(self, "_draw_cals", cached)
        return cached

    def to_json(self) -> dict:
        out = {"model": self.model, "fitted_on": list(self.fitted_on), "source": self.source,
               "batch_range": list(self.batch_range), "roofline_factor": self.roofline_factor,
               "fixed_s": self.fixed_s, "per_sequence_s": self.per_sequence_s,
               "compute_factor": self.compute_factor, "per_position_s": self.per_position_s,
               "per_draft_pass_s": self.per_draft_pass_s, "prefill_factor": self.prefill_factor,
               "label": self.label}
        for name in ("per_position_by_vendor", "extra_flops_by_vendor", "moe_layer_s", "attention_factor_by_vendor",
                     "token_layer_by_vendor", "shared_engines", "vendor_factor", "vendor_fixed_s", "seen"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.fixed_layers_ref:
            out["fixed_layers_ref"] = self.fixed_layers_ref
        if self.draws:
            out["residual_sd"] = self.residual_sd
            out["draws"] = list(self.draws)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Calibration":
        floats = lambda d: {k: float(v) for k, v in d.items()}  # noqa: E731
        return cls(roofline_factor=floats(data["roofline_factor"]),
                   fixed_s={chip: floats(by) for chip, by in data["fixed_s"].items()},
                   per_sequence_s=float(data["per_sequence_s"]), model=data.get("model", ""),
                   fitted_on=tuple(data.get("fitted_on", ())), source=data.get("source", ""),
                   batch_range=tuple(int(b) for b in data.get("batch_range", ())),
                   compute_factor=float(data.get("compute_factor", 0.0)),
                   per_position_s=float(data.get("per_position_s", 0.0)),
                   per_draft_pass_s=float(data.get("per_draft_pass_s", 0.0)),
                   prefill_factor=float(data.get("prefill_factor", 1.0)), label=str(data.get("label", "")),
                   per_position_by_vendor=floats(data.get("per_position_by_vendor", {})),
                   extra_flops_by_vendor=floats(data.get("extra_flops_by_vendor", {})),
                   moe_layer_s=floats(data.get("moe_layer_s", {})),
                   attention_factor_by_vendor=floats(data.get("attention_factor_by_vendor", {})),
                   token_layer_by_vendor=floats(data.get("token_layer_by_vendor", {})),
                   fixed_layers_ref=float(data.get("fixed_layers_ref", 0.0)),
                   shared_engines=dict(data.get("shared_engines", {})),
                   vendor_factor=floats(data.get("vendor_factor", {})),
                   vendor_fixed_s={v: floats(by) for v, by in data.get("vendor_fixed_s", {}).items()},
                   seen=dict(data.get("seen", {})), draws=tuple(data.get("draws", ())),
                   residual_sd=float(data.get("residual_sd", 0.0)))


def _draw_fields(draw: dict) -> dict:
    """A draw's constants as :class:`Calibration` fields."""
    out = {}
    for name in DRAW_FIELDS:
        if name not in draw:
            continue
        v = draw[name]
        if name == "fixed_s":
            out[name] = {chip: {e: float(x) for e, x in by.items()} for chip, by in v.items()}
        elif name == "vendor_fixed_s":
            out[name] = {vendor: {e: float(x) for e, x in by.items()} for vendor, by in v.items()}
        elif isinstance(v, dict):
            out[name] = {k: float(x) for k, x in v.items()}
        else:
            out[name] = float(v)
    return out


#: The level of a calibrated prediction's interval.
INTERVAL_LEVEL = 0.8


@dataclass(frozen=True)
class Interval:
    """A calibrated prediction and its interval: ``value`` (the fit on every
    run), ``lo`` and ``hi`` (its :data:`INTERVAL_LEVEL` cross-conformal
    interval by model family, :func:`interval_name`: the value at acceptance
    less and more :data:`ACCEPTANCE_RANGE`, widened by the stored hold-out's
    half-width, :func:`half_width`); numbers or arrays."""

    value: object
    lo: object
    hi: object

    def straddles(self, x: float = 1.0):
        """Where the interval holds ``x`` (for a speed-up, 1x: where speculating
        is as likely to lose as to gain)."""
        return (np.asarray(self.lo) < x) & (np.asarray(self.hi) > x)

    def __str__(self) -> str:
        if np.ndim(self.value):
            return repr(self)
        return f"{float(self.value):.2f}\u00d7 [{float(self.lo):.2f}\u2013{float(self.hi):.2f}]"


#: The stated range of acceptance every calibrated interval holds: each
#: position's conditional acceptance (an i.i.d. alpha: alpha itself) less
#: and more this much, as the held-out scores were taken
#: (:mod:`speclib.calibration.conformal` reads this one).
ACCEPTANCE_RANGE = 0.05

#: Where the calibrated intervals read their half-widths: written from the
#: stored hold-out by model family
#: (:func:`speclib.calibration.conformal.write_library_intervals`), nothing refitted.
INTERVALS_FILE = ("data", "calibration", "intervals.json")


@lru_cache(maxsize=1)
def stored_intervals() -> dict:
    """The stored half-widths and coverage (:data:`INTERVALS_FILE`)."""
    path = resources.files("speclib").joinpath(*INTERVALS_FILE)
    return json.loads(path.read_text(encoding="utf-8"))


def half_width(model, kind: str = "speedup") -> float:
    """The log half-width, beyond its acceptance band, of the
    :data:`INTERVAL_LEVEL` cross-conformal interval by model family of a
    prediction for ``model`` (a :class:`~speclib.presets.Model`):
    ``kind`` ``"speedup"`` (a speed-up) or ``"decode"`` (a plain decode
    TPOT). A family the hold-out holds: the pooled finite-sample quantile of
    the other families' held-out scores, each family weighing the same (its own
    hold-out's interval); another: over every family. Infinite where the
    families are too few for the level."""
    data = stored_intervals()
    v = data[kind].get(getattr(model, "family", None), data[kind + "_any"])
    return math.inf if v is None else float(v)


def coverage_line(by: str = "family") -> str:
    """What the stored hold-out's intervals cover, per ``by`` ("family" or "chip")."""
    rows = stored_intervals()["coverage"][by]
    return ", ".join(f"{k} {a}/{n}" for k, a, n in rows)


def interval_name(model=None) -> str:
    """What a calibrated interval is, where it is printed: its level, the
    unit it is calibrated over, acceptance's range, the half-width for
    ``model``'s family, and what the stored hold-out's intervals cover per
    family."""
    fam = getattr(model, "family", None)
    data = stored_intervals()
    held = fam in data["speedup"]
    w = half_width(model) if model is not None else None
    width = "" if w is None else (f"; \u00d7/\u00f7{math.exp(w):.2f} beyond acceptance's range, "
                                  f"{'calibrated on the other families' if held else 'over every family'}")
    return (f"{100 * INTERVAL_LEVEL:.0f} % cross-conformal by model family (pooled, finite-sample rule on the stored "
            f"hold-out; acceptance \u00b1{ACCEPTANCE_RANGE:g} per position{width}), coverage held out per family: "
            + coverage_line("family"))


def acceptance_range(acceptance, gamma) -> tuple:
    """(committed tokens per verify at acceptance less, and more,
    :data:`ACCEPTANCE_RANGE`) for an
    :class:`~speclib.core.acceptance.Acceptance` at checked ``gamma``: an
    i.i.d. alpha shifted, a survival curve's conditional acceptance at
    each position shifted (each clipped to [0, 1])."""
    from . import acceptance as _acc

    gamma = np.asarray(gamma, dtype=float)
    out = []
    for d in (-ACCEPTANCE_RANGE, ACCEPTANCE_RANGE):
        if acceptance.curve is None:
            out.append(_acc.committed_numeric(np.clip(np.asarray(acceptance.alpha, dtype=float) + d, 0.0, 1.0), gamma))
        else:
            c = np.nan_to_num(acceptance.curve.conditional_acceptance, nan=0.0)
            table = 1.0 + np.concatenate([[0.0], np.cumsum(np.cumprod(np.clip(c + d, 0.0, 1.0)))])
            out.append(table[gamma.astype(np.intp)])
    return out[0], out[1]


def conformal_bounds(value, committed, committed_range, model, kind: str = "speedup") -> tuple:
    """(lo, hi) of ``value`` (proportional to ``committed`` tokens per
    verify) over acceptance's range (``committed_range``:
    :func:`acceptance_range`'s) widened by :func:`half_width`."""
    w = half_width(model, kind)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_lo, f_hi = (np.where(committed > 0, n / committed, 1.0) for n in committed_range)
    lo = np.asarray(value, dtype=float) * np.minimum(np.minimum(f_lo, f_hi), 1.0) * math.exp(-w)
    hi = np.asarray(value, dtype=float) * np.maximum(np.maximum(f_lo, f_hi), 1.0) * math.exp(w)
    return lo, hi


_NORMAL = {}


def interval_of(values, residual_sd: float, level: float = INTERVAL_LEVEL) -> tuple:
    """The central ``level`` interval of a prediction whose bootstrap draws
    are ``values`` (along axis 0), each draw spread by a log-normal of
    ``residual_sd``, at 41 fixed normal quantiles (deterministic): (lo, hi),
    each shaped like one draw."""
    if "z" not in _NORMAL:
        from statistics import NormalDist

        _NORMAL["z"] = np.array([NormalDist().inv_cdf((j + 0.5) / 41) for j in range(41)])
    z = _NORMAL["z"]
    # the draws on the last axis, where each point's samples lie together in
    # memory, and both quantiles from one partition of them
    logs = np.moveaxis(np.log(np.asarray(values, dtype=float)), 0, -1)
    samples = (logs[..., None] + residual_sd * z).reshape(logs.shape[:-1] + (-1,))
    q = (1.0 - level) / 2.0
    lo, hi = np.exp(np.quantile(samples, [q, 1.0 - q], axis=-1))
    return lo, hi


def draws_of(step_time) -> tuple:
    """The bootstrap draws (as calibrations) of a checked ``step_time``: a
    ValueError where it has none (the roofline, a fit without draws)."""
    calibration = calibration_of(step_time)
    if calibration is None or not calibration.draws:
        raise ValueError("interval=True needs a calibrated step with bootstrap draws (step_time='calibrated'); "
                         f"got step_time={step_time if isinstance(step_time, str) else str(step_time)!r}")
    return calibration.draw_calibrations()


#: Where the shipped calibration lives, inside the package.
CALIBRATION_FILE = ("data", "calibration", "step_time.json")


@lru_cache(maxsize=1)
def shipped_calibration() -> Calibration:
    """The calibration shipped with speclib (fitted on every measured run)."""
    path = resources.files("speclib").joinpath(*CALIBRATION_FILE)
    return Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))


class CalibratedStepModel:
    """One GPU's share of a step of B sequences of T positions, calibrated:
    ``mu * kernels + kappa * flops + a + d * B + e * B * (T - 1) + ...`` plus
    the collectives it waits on (see the module notes). ``step``: the
    :class:`~speclib.core.layout.ParallelStep` (one GPU's share of the
    whole model's step under the deployment's layout)."""

    roofline = "calibrated"

    def __init__(self, step, hardware, *, engine: str = DEFAULT_ENGINE, calibration: Calibration = None,
                 per_token: bool = False):
        self.per_token = bool(per_token)
        self.step = step
        self.step_model = step.step_model
        self.architecture = step.architecture
        self.hardware = hardware
        self.tp = step.tp
        self.engine = checked_choice("engine", engine, ENGINES)
        self.calibration = calibration or shipped_calibration()
        self.factor, _, self.per_sequence = self.calibration.constants(hardware, self.engine)
        a = self.architecture
        self.layers = float(a.attention_layers + a.linear_layers)
        self.fixed = (self.calibration.fixed(hardware, self.engine, self.layers)
                      + self.calibration.moe_layer(hardware) * a.moe_layers)
        self.token_layer = self.calibration.token_layer(hardware)
        self.compute_factor = self.calibration.compute_factor
        self.attention_factor = self.calibration.attention_factor(hardware)
        self.per_position = self.calibration.per_position(hardware, a.attention_layers)
        self.extra_flops_factor = self.calibration.extra_flops(hardware)
        self.per_draft_pass = self.calibration.per_draft_pass_s

    def experts_touched(self, B, T, F=nf):
        return self.step.experts_touched(B, T, F)

    def scaled(self, seconds):
        """Roofline seconds of a whole-model pass as this GPU's calibrated kernel time."""
        return self.factor * self.step.scaled(seconds)

    def overhead(self, B, T=1.0):
        """The step's fixed, per-sequence (per position with ``per_token``)
        and per-extra-position time."""
        return self.fixed + self.per_sequence * B * (T if self.per_token else 1.0) + self.extra_positions(B, T)

    def component_times(self, B, T, S, F=nf) -> dict:
        """{part: seconds}: this GPU's roofline components scaled, its
        collectives, then the overheads."""
        scale = {"communication": lambda t: t,
                 "attention": lambda t: F.kernel_time(self.factor, t, self.attention_factor, t)}
        parts = {name: scale.get(name, lambda t: self.factor * t)(t)
                 for name, t in self.step.component_times(B, T, S, F).items()}
        if self.compute_factor:
            parts["compute not hidden"] = self.compute(B, T, S, F)
        parts["fixed per step"] = self.fixed + 0.0 * B
        parts["per position" if self.per_token else "per sequence"] = (self.overhead(B, T) - self.fixed
                                                                       - self.extra_positions(B, T))
        if self.per_position:
            parts["per extra position"] = self.extra_positions(B, T)
        if self.extra_flops_factor:
            parts["extra positions' work"] = self.extra_flops_factor * self.extra_work(B, T, S, F)
        if self.token_layer:
            parts["per token per layer"] = self.token_layer * B * T * self.layers
        return parts

    def draft_layers(self, B, positions, layers: int, moe: bool):
        """What a drafter's pass over ``B`` sequences of ``positions``
        positions pays beyond its roofline for running ``layers`` layers, as
        the target's layers pay it: the fixed time per layer (where the fit
        scales the fixed time by layers), the time per MoE layer for a MoE
        drafter, tau for each token in each layer, and its layers'
        collectives (the fit prices the measured runs' drafters so:
        :data:`speclib.calibration.step_features.DRAFTER_LAYER_COSTS`)."""
        cal = self.calibration
        fixed = cal.fixed(self.hardware, self.engine, float(layers)) if cal.fixed_layers_ref else 0.0
        return (fixed + cal.moe_layer(self.hardware) * layers * float(bool(moe))
                + self.token_layer * B * positions * layers + self.step.draft_layers(B, positions, layers, moe))

    def compute(self, B, T, S, F=nf):
        """kappa x this GPU's FLOPs at peak."""
        if not self.compute_factor:
            return 0.0 * B
        return self.compute_factor * self.step.flop_time(B, T, S, F)

    def extra_work(self, B, T, S, F=nf):
        """t_x: the FLOPs the T - 1 extra positions add, at peak, this GPU's
        share (:data:`speclib.formulas.step.extra_positions_time_expr`)."""
        if not self.extra_flops_factor:
            return 0.0 * B * T
        return self.step.flop_time(B, T, S, F) - self.step.flop_time(B, 1.0 + 0.0 * T, S, F)

    def extra_positions(self, B, T):
        """e x B x (T - 1): each verified position past the first."""
        return self.per_position * B * (T - 1.0)

    def kernels(self, B, T, S, F=nf):
        """t_k: this GPU's kernel time, calibrated (:data:`speclib.formulas.step.kernel_time_expr`)."""
        attention = self.step.component_times(B, T, S, F)["attention"] if self.attention_factor else 0.0
        return F.kernel_time(self.factor, self.step.kernel_time(B, T, S, F), self.attention_factor, attention)

    def time(self, B, T, S, F=nf):
        """Seconds of the step (``F``: see :meth:`speclib.core.step.StepModel.experts_touched`):
        :data:`speclib.formulas.step.engine_step_expr` and the collectives."""
        return F.engine_step(self.kernels(B, T, S, F), self.compute(B, T, S, F), self.fixed,
                             self.per_sequence * (T if self.per_token else 1.0), self.per_position, B, T,
                             self.extra_flops_factor, self.extra_work(B, T, S, F), self.token_layer,
                             self.layers) + self.step.communication(B, T, F)


class ScaledDrafter:
    """A drafter priced by its own roofline, its passes run at the target's
    speed (the calibrated chip's, or the datasheet's for a split roofline
    step), split over the group's GPUs, each pass paying for its layers what
    the target's layers pay beyond the roofline: their collectives, and under
    a calibrated step its per-layer costs (:meth:`CalibratedStepModel.draft_layers`,
    :meth:`speclib.core.layout.ParallelStep.draft_layers`)."""

    def __init__(self, drafter, target: CalibratedStepModel):
        self.inner = drafter
        self.target = target
        self.kind, self.name = drafter.kind, drafter.name
        self.max_gamma, self.acceptance = drafter.max_gamma, drafter.acceptance
        self.max_gamma_reason = drafter.max_gamma_reason

    def time(self, gamma, B, S=0.0, target=None, F=nf):
        preset = self.inner.preset
        per_pass = self.target.draft_layers(B, self.inner.positions, preset.layers, preset.step.n_routed > 0)
        return self.target.scaled(self.inner.time(gamma, B, S, None, F)) + self.inner.passes(gamma, F) * per_pass

    def passes(self, gamma, F=nf):
        return self.inner.passes(gamma, F)


class CalibratedLedger:
    """A per-layer ledger (:class:`speclib.core.cost.CostModel` or the expert-
    parallel one, in HBM byte-equivalents per GPU) calibrated as a whole
    step: the layer's cost times the model's layers over the chip's
    bandwidth, scaled by ``mu``, plus ``a`` and ``d`` per sequence on the GPU.
    The paper's ledger stands for every layer; so does this."""

    def __init__(self, cost_model, *, engine: str = DEFAULT_ENGINE, calibration: Calibration = None,
                 per_token: bool = False):
        self.per_token = bool(per_token)
        self.per_draft_pass = (calibration or shipped_calibration()).per_draft_pass_s
        self.cost_model = cost_model
        self.hardware = cost_model.hardware
        layers = getattr(cost_model.model, "n_layers", None)
        if layers is None:
            raise ValueError(f"step_time='calibrated' needs the layer count of {cost_model.model.name} to price a "
                             "whole step from the per-layer ledger")
        self.layers = float(layers)
        self.engine = checked_choice("engine", engine, ENGINES)
        self.calibration = calibration or shipped_calibration()
        self.factor, _, self.per_sequence = self.calibration.constants(self.hardware, self.engine)
        moe_layers = self.layers if cost_model.model.ffn.is_moe else 0.0  # the ledger's layer stands for every layer
        self.fixed = (self.calibration.fixed(self.hardware, self.engine, self.layers)
                      + self.calibration.moe_layer(self.hardware) * moe_layers)
        self.extra_flops_factor = self.calibration.extra_flops(self.hardware)
        self.token_layer = self.calibration.token_layer(self.hardware)  # each token, each of the model's layers
        # The ledger counts bytes, not FLOPs: the extra verified positions' FLOPs come from the same
        # model's whole step on this chip, split over the GPUs the ledger stands for (its G, else one).
        self._flops = _step_model(cost_model.model, self.hardware) if self.extra_flops_factor else None
        self._gpus = float(getattr(cost_model, "G", 1.0))
        self._seconds = self.factor * self.layers / self.hardware.memory_bandwidth

    def extra_work(self, batch, width, context):
        """t_x: the FLOPs of the width - 1 extra positions at peak, this GPU's
        share (:data:`speclib.formulas.step.extra_positions_time_expr`)."""
        if self._flops is None:
            return 0.0 * batch * width
        one = self._flops.flop_time(batch, 1.0 + 0.0 * width, context)
        return (self._flops.flop_time(batch, width, context) - one) / self._gpus

    def decode(self, batch, context):
        return (self._seconds * self.cost_model.decode(batch, context) + self.fixed + self.per_sequence * batch
                + self.token_layer * batch * self.layers)

    def verify(self, batch, width, context):
        per = self.per_sequence * batch * (width if self.per_token else 1.0)
        return (self._seconds * self.cost_model.verify(batch, width, context) + self.fixed + per
                + self.calibration.per_position(self.hardware, self.layers) * batch * (width - 1.0)  # every layer attends
                + self.extra_flops_factor * self.extra_work(batch, width, context)
                + self.token_layer * batch * width * self.layers)
