"""The engine's host work fitted on top of the measured step, and held out.

The measured step (``step_time="measured"``, :mod:`speclib.silicon.step`)
reads every kernel of a step from NVIDIA's measured tables and fits
nothing; what no kernel table holds (the engine's scheduling, building the
next step's inputs, the sampler) is missing from it, so it runs faster than
the engines measured. Here that missing part alone is fitted, with the
engine step's closed form (:data:`speclib.formulas.step.engine_step_expr`,
through :func:`speclib.formulas.numpy_functions.engine_step`) at the
measured kernels' time, T = 1 and no other term:

    TPOT = t_measured + a_engine + d * B

* ``t_measured``: the measured step's TPOT of the run through the public
  function (:func:`speclib.core.decode.tpot` with the run's deployment at
  ``step_time="measured"`` and its workload): the tables' kernels, the
  roofline where no table exists, and the prefill of arriving requests as
  the measured step prices it (at its roofline, unscaled). Computed once a
  run; nothing in it is fitted;
* ``a_engine``: a fixed time per step for each serving engine (one constant
  an engine, whatever the chip or model);
* ``d``: a time per running sequence per step (one constant for every
  engine), B the sequences the run decodes at once
  (:attr:`~speclib.evidence.decode_runs.DecodeRun.running`).

Four constants at most (three engines), found by non-negative least squares
on relative error, as the calibrated step's are
(:func:`speclib.calibration.step_fit._nnls`): linear, since
``t_measured`` is fixed. An engine the fit has no run of takes the median of
the fitted engines' fixed times. Beside them stands the one published
estimate of an engine's host time the repository holds
(:data:`speclib.core.overlap.HOST_FIXED_S`, :data:`~speclib.core.overlap.HOST_PER_REQUEST_S`:
SGLang on an H100, the time an overlap scheduler hides).

:func:`held_out` holds a whole chip, model family or engine out at a time
(:data:`GROUPINGS`): the constants are fitted on the other groups' runs and
predict the group's; nothing is chosen inside a fold (the form is fixed
above), so the nesting has no inner choice to make. Each held-out figure
stands beside, on the same runs: the measured step with nothing fitted; the
null baseline "the median TPOT of the same chip and engine" outside the
group (a chip held out: of the same engine,
:func:`speclib.calibration.baselines.same_chip_engine_tpot`); and the
calibrated step held out the same way, as stored
(:func:`speclib.calibration.held_out.stored_decode_predicted`), where a
stored hold-out of that grouping exists (by chip and by model family).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._checks import checked_choice
from ..formulas import numpy_functions as nf
from ..silicon import tables as _tables
from speclib.calibration import baselines as _base
from speclib.calibration.step_features import chip_key
from speclib.calibration.step_fit import _nnls

#: The groupings a hold-out takes a whole unit out by, and the unit of a run.
GROUPINGS = {"chip": lambda r: chip_key(r.chip), "model": lambda r: r.family, "engine": lambda r: r.engine}
#: The hold-outs of the calibrated step stored under the same grouping
#: (:data:`speclib.calibration.held_out.GROUPINGS`); none by engine.
STORED_GROUPING = {"chip": "chip", "model": "model"}


def table_runs() -> tuple:
    """The measured decode runs (:func:`speclib.evidence.decode_runs.decode_runs`)
    on a chip that has measured kernel tables (the H100, H200, B200 and B300)."""
    from speclib.evidence import decode_runs as _dec

    return tuple(r for r in _dec.decode_runs() if r.chip in _tables.SYSTEMS or r.chip in ("H100", "H200-SXM"))


_KERNEL: dict = {}


def measured_tpot(run) -> float:
    """Seconds per output token of ``run`` by the measured step alone (its
    kernels from the tables and the prefill its closed loop carries; nothing
    fitted), through :func:`speclib.core.decode.tpot`. Computed once a run."""
    from speclib.core.decode import tpot

    if run not in _KERNEL:
        _KERNEL[run] = float(tpot(run.concurrency, run.context, workload=(run.input_len, run.output_len),
                                  deployment=run.deployment("measured")))
    return _KERNEL[run]


def _host(a, d, B):
    """The host part of the engine step (:func:`~speclib.formulas.numpy_functions.engine_step`
    at no kernel time, T = 1): a + d B."""
    z = 0.0 * np.asarray(B, dtype=float)
    return nf.engine_step(z, z, a, d, z, B, 1.0 + z, z, z, z, z)


@dataclass(frozen=True)
class HostFit:
    """The fitted host work: ``fixed_s`` {engine: seconds a step},
    ``per_sequence_s`` (seconds a running sequence a step), and ``runs``,
    how many runs it was fitted on."""

    fixed_s: dict
    per_sequence_s: float
    runs: int = 0

    def fixed(self, engine: str) -> float:
        """An engine's fixed time; one the fit did not see: the median of the fitted engines'."""
        if engine in self.fixed_s:
            return float(self.fixed_s[engine])
        return float(np.median(list(self.fixed_s.values())))

    def host_time(self, engine: str, batch) -> np.ndarray:
        """Seconds of host work a step of ``batch`` running sequences on ``engine``."""
        return _host(self.fixed(engine), self.per_sequence_s, batch)

    def tpot(self, runs, kernel=None) -> np.ndarray:
        """Each run's TPOT (s): its measured step (``kernel``, else :func:`measured_tpot`) plus the host work."""
        kernel = np.array([measured_tpot(r) for r in runs]) if kernel is None else np.asarray(kernel, dtype=float)
        host = np.array([float(self.host_time(r.engine, r.running)) for r in runs])
        return kernel + host


def fit(runs, kernel=None) -> HostFit:
    """The host constants fitted on ``runs`` (decode runs with ``tpot_s``):
    min sum ((t_measured + a_e + d B) / y - 1)^2 over a_e, d >= 0.
    ``kernel``: each run's measured step's TPOT (else :func:`measured_tpot`)."""
    runs = list(runs)
    if not runs:
        raise ValueError("fit needs at least one decode run")
    kernel = np.array([measured_tpot(r) for r in runs]) if kernel is None else np.asarray(kernel, dtype=float)
    y = np.array([r.tpot_s for r in runs], dtype=float)
    B = np.array([r.running for r in runs], dtype=float)
    engines = sorted({r.engine for r in runs})
    of = np.array([r.engine for r in runs])
    one = np.ones_like(B)
    cols = [np.where(of == e, _host(one, 0.0 * one, B), 0.0) for e in engines] + [_host(0.0 * one, one, B)]
    A = np.column_stack(cols) / y[:, None]
    x = _nnls(A, 1.0 - kernel / y)
    return HostFit({e: float(v) for e, v in zip(engines, x[:-1])}, float(x[-1]), len(runs))


@dataclass(frozen=True)
class HostHeldOut:
    """Every run's TPOT predicted with its group (``by``) held out, beside the
    baselines on the same runs. Arrays are in the order of ``runs``;
    ``calibrated`` is NaN where no stored hold-out of the grouping holds the run."""

    by: str
    runs: tuple
    groups: np.ndarray
    measured: np.ndarray  # the runs' measured TPOT (s)
    kernel: np.ndarray  # the measured step alone
    predicted: np.ndarray  # the measured step plus the host work fitted without the group
    null: np.ndarray  # the median TPOT of the same chip and engine outside the group
    calibrated: np.ndarray
    fits: dict  # group -> HostFit fitted without it

    def errors(self, which: str = "predicted") -> np.ndarray:
        """Relative error of ``which`` (``predicted``, ``kernel``, ``null`` or ``calibrated``) per run."""
        return getattr(self, which) / self.measured - 1.0

    def rows(self) -> list:
        """(unit, runs, median |error| of: measured + host, measured alone,
        the null baseline, the calibrated step; NaN where it has no point)
        per held-out unit, then "all"."""
        out = []
        units = [(g, self.groups == g) for g in sorted(set(self.groups))] + [("all", np.ones(len(self.runs), bool))]
        for g, mask in units:
            meds = []
            for which in ("predicted", "kernel", "null", "calibrated"):
                e = np.abs(self.errors(which)[mask])
                e = e[np.isfinite(e)]
                meds.append(float(np.median(e)) if e.size else float("nan"))
            out.append((g, int(mask.sum()), *meds))
        return out


def folds(by: str, runs) -> list:
    """(group, training mask, held-out mask) of each unit of ``runs`` ``by``
    a grouping (:data:`GROUPINGS`): the held-out mask is the group's runs,
    the training mask every other run."""
    by = checked_choice("by", by, tuple(GROUPINGS))
    groups = np.array([GROUPINGS[by](r) for r in runs])
    return [(g, groups != g, groups == g) for g in sorted(set(groups))]


def held_out(by: str = "model", runs=None) -> HostHeldOut:
    """Each run of ``runs`` (default :func:`table_runs`) predicted by the host
    constants fitted without its ``by`` group, beside the measured step
    alone, the null baseline and the stored calibrated hold-out."""
    by = checked_choice("by", by, tuple(GROUPINGS))
    runs = tuple(table_runs() if runs is None else runs)
    kernel = np.array([measured_tpot(r) for r in runs])
    y = np.array([r.tpot_s for r in runs])
    groups = np.array([GROUPINGS[by](r) for r in runs])
    predicted = np.full(len(runs), np.nan)
    fits = {}
    for g, train, test in folds(by, runs):
        f = fit([r for r, t in zip(runs, train) if t], kernel[train])
        fits[g] = f
        predicted[test] = f.tpot([r for r, t in zip(runs, test) if t], kernel[test])
    null = _base.same_chip_engine_tpot(y, groups, [chip_key(r.chip) for r in runs], [r.engine for r in runs])
    return HostHeldOut(by, runs, groups, y, kernel, predicted, null, _stored_calibrated(by, runs), fits)


def _stored_calibrated(by: str, runs) -> np.ndarray:
    """The calibrated step's stored held-out TPOT of each of ``runs`` by the same grouping (NaN: none stored)."""
    from speclib.calibration import held_out as _ho
    from speclib.evidence import decode_runs as _dec

    out = np.full(len(runs), np.nan)
    if by not in STORED_GROUPING:
        return out
    stored = dict(zip(_dec.decode_runs(), _ho.stored_decode_predicted(STORED_GROUPING[by])))
    return np.array([stored.get(r, np.nan) for r in runs], dtype=float)


def with_truth(runs, tpot_s) -> tuple:
    """``runs`` with their measured TPOT replaced by ``tpot_s`` (seconds): a
    synthetic set for a check of the fit."""
    return tuple(dataclasses.replace(r, tpot_s=float(t)) for r, t in zip(runs, tpot_s))


def independent_estimate() -> dict:
    """The published host time per step the repository holds, beside which
    the fitted constants stand: {"fixed_s", "per_sequence_s", "source",
    "what"} (:data:`speclib.core.overlap.HOST_FIXED_S`)."""
    from ..core import overlap as _ov

    return {"fixed_s": _ov.HOST_FIXED_S, "per_sequence_s": _ov.HOST_PER_REQUEST_S, "source": _ov.HOST_SOURCE,
            "what": "SGLang on an H100 at TP 2 (Qwen3-Omni's thinker): the host time a step spends, which an "
                    "overlap scheduler hides"}


#: The issue's decode target held out by model family: median |TPOT error|,
#: and below the null baseline on the same runs.
FAMILY_TARGET = 0.15


def targets(by_model: HostHeldOut) -> list:
    """(what, target, measured, met) of the measured step plus host work
    held out by model family; the speculative target (median over runs of
    each run's median |speed-up error| <= 10 %) is not scored here."""
    rows = {r[0]: r for r in by_model.rows()}
    _, n, host, _, null, _ = rows["all"]
    return [("decode TPOT held out by model family: median |error| over its runs", f"\u2264 {FAMILY_TARGET:.0%}",
             f"{host:.1%} over {n} runs", bool(host <= FAMILY_TARGET)),
            ("the same, below the null baseline (median TPOT of the same chip and engine)", "below",
             f"{host:.1%} against {null:.1%}", bool(host < null)),
            ("speculative speed-ups held out: median over runs of each run's median |error|", "\u2264 10 %",
             "not scored: no speculative run is priced with the measured step here", None)]
