"""A calibrated step time: the roofline plus the per-step costs that measured
decoding and measured speculative decoding show it misses.

The roofline (:class:`speclib.core.step.StepModel`) is a lower bound: the
InferenceMAX Llama-3.3-70B runs decode 1.35 to 2.1 times slower than it on
one GPU and 3.6 to 8.7 times slower at eight (the measured-decode chapter).
:mod:`speclib.evidence.step_fit` fits a small model of the gap jointly on
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

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from .._checks import checked_choice
from ..formulas import numpy_functions as nf
from .step import StepModel

#: How a step's time is priced: the roofline (a lower bound) or the
#: roofline calibrated on measured decoding.
STEP_TIMES = ("roofline", "calibrated")
#: The engines in the measured data.
ENGINES = ("vLLM", "TRT")
#: The engine assumed unless one is named: the only one measured on every chip.
DEFAULT_ENGINE = "vLLM"


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


@dataclass(frozen=True)
class Calibration:
    """The fitted constants: ``roofline_factor`` (mu) per chip, ``fixed_s``
    (a, seconds) per chip and engine, ``per_sequence_s`` (d, seconds)."""

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

    def __str__(self) -> str:
        return f"calibrated ({self.label})" if self.label else "calibrated"

    def in_range(self, batch) -> bool:
        """Whether ``batch`` lies in the measured batches (beyond them the
        per-sequence term is an extrapolation)."""
        return not self.batch_range or self.batch_range[0] <= batch <= self.batch_range[1]

    def chips(self) -> tuple:
        return tuple(self.roofline_factor)

    def _chip(self, hardware) -> str:
        names = (hardware.name, *hardware.aliases)
        for chip in self.roofline_factor:
            if chip.lower() in (n.lower() for n in names):
                return chip
        raise ValueError(f"hardware {hardware.name!r} has no calibrated step time (calibrated on measured decoding "
                         f"of {', '.join(self.roofline_factor)}); use step_time='roofline'")

    def constants(self, hardware, engine: str = DEFAULT_ENGINE) -> tuple:
        """(mu, a, d) for ``hardware`` served by ``engine``."""
        chip = self._chip(hardware)
        engine = checked_choice("engine", engine, ENGINES)
        fixed = self.fixed_s[chip]
        if engine not in fixed:
            raise ValueError(f"engine {engine!r} was not measured on {chip} (measured: {', '.join(fixed)})")
        return self.roofline_factor[chip], fixed[engine], self.per_sequence_s

    def per_position(self, hardware) -> float:
        """e for ``hardware``: its vendor's, else the one for every chip."""
        return self.per_position_by_vendor.get(hardware.vendor, self.per_position_s)

    def to_json(self) -> dict:
        return {"model": self.model, "fitted_on": list(self.fitted_on), "source": self.source,
                "batch_range": list(self.batch_range), "roofline_factor": self.roofline_factor,
                "fixed_s": self.fixed_s, "per_sequence_s": self.per_sequence_s,
                "compute_factor": self.compute_factor, "per_position_s": self.per_position_s,
                "per_draft_pass_s": self.per_draft_pass_s, "prefill_factor": self.prefill_factor,
                "label": self.label, **({"per_position_by_vendor": self.per_position_by_vendor}
                                        if self.per_position_by_vendor else {})}

    @classmethod
    def from_json(cls, data: dict) -> "Calibration":
        return cls(roofline_factor={k: float(v) for k, v in data["roofline_factor"].items()},
                   fixed_s={chip: {e: float(v) for e, v in by.items()} for chip, by in data["fixed_s"].items()},
                   per_sequence_s=float(data["per_sequence_s"]), model=data.get("model", ""),
                   fitted_on=tuple(data.get("fitted_on", ())), source=data.get("source", ""),
                   batch_range=tuple(int(b) for b in data.get("batch_range", ())),
                   compute_factor=float(data.get("compute_factor", 0.0)),
                   per_position_s=float(data.get("per_position_s", 0.0)),
                   per_draft_pass_s=float(data.get("per_draft_pass_s", 0.0)),
                   prefill_factor=float(data.get("prefill_factor", 1.0)), label=str(data.get("label", "")),
                   per_position_by_vendor={k: float(v) for k, v in data.get("per_position_by_vendor", {}).items()})


#: Where the shipped calibration lives, inside the package.
CALIBRATION_FILE = ("data", "calibration", "step_time.json")


@lru_cache(maxsize=1)
def shipped_calibration() -> Calibration:
    """The calibration shipped with speclib (fitted on every measured run)."""
    path = resources.files("speclib").joinpath(*CALIBRATION_FILE)
    return Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))


class CalibratedStepModel:
    """A :class:`StepModel` of one GPU's share of a step over ``tp`` GPUs,
    calibrated: ``mu * roofline / tp + a + d * B`` (see the module notes)."""

    roofline = "calibrated"

    def __init__(self, step_model: StepModel, hardware, *, tp: int = 1, engine: str = DEFAULT_ENGINE,
                 calibration: Calibration = None, per_token: bool = False):
        self.per_token = bool(per_token)
        self.step_model = step_model
        self.architecture = step_model.architecture
        self.hardware = hardware
        self.tp = int(tp)
        self.engine = checked_choice("engine", engine, ENGINES)
        self.calibration = calibration or shipped_calibration()
        self.factor, self.fixed, self.per_sequence = self.calibration.constants(hardware, self.engine)
        self.compute_factor = self.calibration.compute_factor
        self.per_position = self.calibration.per_position(hardware)
        self.per_draft_pass = self.calibration.per_draft_pass_s

    def scaled(self, seconds):
        """Roofline seconds of the whole step as this GPU's calibrated kernel time."""
        return self.factor * seconds / self.tp

    def overhead(self, B, T=1.0):
        """The step's fixed, per-sequence (per position with ``per_token``)
        and per-extra-position time."""
        return self.fixed + self.per_sequence * B * (T if self.per_token else 1.0) + self.extra_positions(B, T)

    def component_times(self, B, T, S, F=nf) -> dict:
        """{part: seconds}: the roofline components scaled, then the overheads."""
        parts = {name: self.scaled(t) for name, t in self.step_model.component_times(B, T, S, F).items()}
        if self.compute_factor:
            parts["compute not hidden"] = self.compute(B, T, S, F)
        parts["fixed per step"] = self.fixed + 0.0 * B
        parts["per position" if self.per_token else "per sequence"] = (self.overhead(B, T) - self.fixed
                                                                       - self.extra_positions(B, T))
        if self.per_position:
            parts["per extra position"] = self.extra_positions(B, T)
        return parts

    def compute(self, B, T, S, F=nf):
        """kappa x the step's FLOPs at peak, this GPU's share."""
        if not self.compute_factor:
            return 0.0 * B
        return self.compute_factor * self.step_model.flop_time(B, T, S, F) / self.tp

    def extra_positions(self, B, T):
        """e x B x (T - 1): each verified position past the first."""
        return self.per_position * B * (T - 1.0)

    def time(self, B, T, S, F=nf):
        """Seconds of the step (``F``: see :meth:`speclib.core.step.StepModel.experts_touched`);
        :data:`speclib.formulas.step.engine_step_expr`."""
        return F.engine_step(self.scaled(self.step_model.time(B, T, S, F)), self.compute(B, T, S, F), self.fixed,
                             self.per_sequence * (T if self.per_token else 1.0), self.per_position, B, T)


class ScaledDrafter:
    """A drafter priced by its own roofline, its passes run at the calibrated
    chip's speed on ``tp`` GPUs (no fixed time of their own; see the module notes)."""

    def __init__(self, drafter, target: CalibratedStepModel):
        self.inner = drafter
        self.target = target
        self.kind, self.name = drafter.kind, drafter.name
        self.max_gamma, self.acceptance = drafter.max_gamma, drafter.acceptance

    def time(self, gamma, B, S=0.0, target=None, F=nf):
        return self.target.scaled(self.inner.time(gamma, B, S, None, F))

    def passes(self, gamma, F=nf):
        return self.inner.passes(gamma, F)


class TensorParallelStep:
    """The roofline step of one GPU's share over ``tp`` GPUs: bytes and FLOPs
    split evenly, so the time divides by ``tp`` (no communication charged)."""

    def __init__(self, step_model: StepModel, tp: int):
        self.step_model = step_model
        self.architecture = step_model.architecture
        self.hardware = step_model.hardware
        self.roofline = step_model.roofline
        self.tp = int(tp)

    def scaled(self, seconds):
        return seconds / self.tp

    def component_times(self, B, T, S, F=nf) -> dict:
        return {name: t / self.tp for name, t in self.step_model.component_times(B, T, S, F).items()}

    def time(self, B, T, S, F=nf):
        return self.step_model.time(B, T, S, F) / self.tp


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
        self.factor, self.fixed, self.per_sequence = self.calibration.constants(self.hardware, self.engine)
        self._seconds = self.factor * self.layers / self.hardware.memory_bandwidth

    def decode(self, batch, context):
        return self._seconds * self.cost_model.decode(batch, context) + self.fixed + self.per_sequence * batch

    def verify(self, batch, width, context):
        per = self.per_sequence * batch * (width if self.per_token else 1.0)
        return (self._seconds * self.cost_model.verify(batch, width, context) + self.fixed + per
                + self.calibration.per_position(self.hardware) * batch * (width - 1.0))
