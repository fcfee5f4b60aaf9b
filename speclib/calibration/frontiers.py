"""The frontiers InferenceX measured, and the ones the calibrated step
predicts without the chip's runs.

InferenceX (SemiAnalysis) publishes DeepSeek-R1's throughput per GPU against
its speed per user, with MTP on and off, for each chip, engine, layout and
workload (:mod:`speclib.evidence.decode_runs`). Each such configuration is a
:class:`MeasuredFrontier`: per concurrency, the median over the dates it
was measured on of its speed per user (1 / TPOT, an MTP run's committed
tokens included) and of its output tokens per second per GPU (InferenceX's
``tput_per_gpu`` counts input and output tokens; its output share is
O / (I + O)), the queueing runs left out by the rule every fit uses
(:data:`speclib.evidence.decode_runs.QUEUEING_FRACTION`).

:func:`held_out_frontiers` predicts each configuration with the calibrated
step fitted without every run on its chip (:func:`speclib.calibration.held_out._fold`
by chip, the shipped form), through :func:`speclib.core.frontier.frontier`,
and scores:

* the throughput per GPU at matched speed per user: each measured point
  against the predicted frontier (interpolated in log-log) at the same
  speed, for both arms;
* where the MTP frontier crosses the plain one, measured against predicted
  (:func:`speclib.core.frontier.crossover`). A measured pair of frontiers
  that does not cross over the speeds both reach says only that the
  crossing, if any, lies outside them; a prediction agrees with it when it
  has the same arm winning over those speeds, to within
  :data:`CROSSOVER_TOLERANCE` of their slower end.

MTP's acceptance is not reported: each configuration's is fitted, under the
held-out step, at the smallest concurrency both arms measured
(:func:`speclib.calibration.step_fit.fit_alpha` on its pair,
:func:`speclib.evidence.spec_runs.r1_mtp_pairs`); a configuration measured
with no concurrency in common takes the median of the configurations of the
same engine and draft length on the other chips (with none, it is left out). The draft length is the
one its launch script sets (:func:`speclib.evidence.spec_runs.r1_mtp_gamma`).
"""
from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core import frontier as _fr
from ..core.deployment import Deployment
from ..presets import hardware as hardware_preset
from speclib.evidence import decode_runs as _dec
from speclib.calibration import held_out as _ho
from speclib.evidence import spec_runs as _spec
from speclib.calibration import step_features as _feat
from speclib.calibration.step_features import SHIPPED_FORM
from speclib.calibration.step_fit import fit_alpha

#: How far (relative) a predicted crossover may lie from the measured one, or
#: past the slower end of the speeds where the measured frontiers do not cross.
CROSSOVER_TOLERANCE = 0.2
#: Concurrencies a predicted frontier is evaluated at to be matched against
#: measured points (dense, so that the log-log interpolation between them is fine).
MATCH_CONCURRENCIES = tuple(int(c) for c in np.unique(np.rint(np.geomspace(1, 1024, 80))))


@dataclass(frozen=True)
class MeasuredArm:
    """One measured frontier: per concurrency, the median speed per user
    (tokens/s), output tokens per second per GPU and how many runs."""

    concurrency: np.ndarray
    speed_per_user: np.ndarray
    throughput_per_gpu: np.ndarray
    runs: np.ndarray


@dataclass(frozen=True)
class MeasuredFrontier:
    """A configuration InferenceX measured with MTP on and off (see the module notes)."""

    chip: str
    engine: str
    weights: str
    kv_cache: str
    tp: int
    ep: int
    dp_attention: bool
    workload: str
    input_len: float
    output_len: float
    gamma: int
    plain: MeasuredArm
    mtp: MeasuredArm

    @property
    def layout(self) -> str:
        return _dec.layout_label(self.tp, self.ep, self.dp_attention)

    @property
    def label(self) -> str:
        return f"{self.chip} {self.engine} {self.weights} {self.layout} {self.workload}"

    @property
    def pair_id(self) -> str:
        """The id of its MTP pair in :func:`speclib.evidence.spec_runs.r1_mtp_pairs`."""
        return (f"inferencex-r1-mtp-{self.chip}-{self.engine}-{self.weights}-{self.layout.replace(' ', '-')}-"
                f"{self.workload}").lower()

    def deployment(self, step_time="calibrated") -> Deployment:
        """The deployment it served, priced with ``step_time`` (no drafter:
        the frontier speculates with the model's MTP preset)."""
        return Deployment(_dec.R1_MODEL, self.chip, tp=self.tp, ep=self.ep, dp_attention=self.dp_attention,
                          engine=self.engine, weights=self.weights, kv_cache=self.kv_cache, step_time=step_time)

    def crossover(self) -> _fr.Crossover:
        return _fr.crossover(self.plain.speed_per_user, self.plain.throughput_per_gpu, self.mtp.speed_per_user,
                             self.mtp.throughput_per_gpu)

    @property
    def comparable(self) -> bool:
        """Whether both arms were measured at two or more concurrencies over a common range of speeds."""
        return self.plain.concurrency.size >= 2 and self.mtp.concurrency.size >= 2 and bool(self.crossover().above)


def _arm(runs) -> MeasuredArm:
    by = collections.defaultdict(list)
    for r in runs:
        if not r.queueing:
            by[r.concurrency].append(r)
    C = sorted(by)
    out = lambda r: r.throughput_per_gpu * r.output_len / (r.input_len + r.output_len)  # noqa: E731
    return MeasuredArm(np.array(C, dtype=float), np.array([np.median([1.0 / r.tpot_s for r in by[c]]) for c in C]),
                       np.array([np.median([out(r) for r in by[c]]) for c in C]),
                       np.array([len(by[c]) for c in C], dtype=int))


@lru_cache(maxsize=None)
def measured_frontiers(weights: str = "fp8") -> tuple:
    """Every configuration of DeepSeek-R1 in ``weights`` InferenceX measured
    with MTP (at a concurrency that was not queueing) and without, as
    :class:`MeasuredFrontier`, in a stable order."""
    key = lambda r: (r.chip, r.engine, r.weights, r.tp, r.ep, r.dp_attention, r.workload)  # noqa: E731
    plain, mtp = collections.defaultdict(list), collections.defaultdict(list)
    for r in _dec.all_runs("r1"):
        plain[key(r)].append(r)
    for r in _dec.mtp_runs():
        mtp[key(r)].append(r)
    out = []
    for k in sorted(set(plain) & set(mtp), key=str):
        if k[2] != weights:
            continue
        p, m = _arm(plain[k]), _arm(mtp[k])
        if not (p.concurrency.size and m.concurrency.size):
            continue
        first = mtp[k][0]
        vendor = hardware_preset(first.chip).vendor
        out.append(MeasuredFrontier(first.chip, first.engine, first.weights, first.kv_cache, first.tp, first.ep,
                                    first.dp_attention, first.workload, first.input_len, first.output_len,
                                    _spec.r1_mtp_gamma(first.engine, vendor, first.dp_attention), p, m))
    return tuple(out)


def chips(weights: str = "fp8") -> tuple:
    """The chips with a configuration measured with MTP on and off."""
    return tuple(sorted({m.chip for m in measured_frontiers(weights)}))


@dataclass(frozen=True)
class FrontierCheck:
    """One configuration's measured frontiers against the ones predicted
    without its chip: the acceptance fitted (and how), the predicted
    frontiers at :data:`MATCH_CONCURRENCIES`, each measured point's error of
    throughput per GPU at its own speed per user (NaN where that speed lies
    outside the predicted frontier) and at its own concurrency."""

    measured: MeasuredFrontier
    alpha: float
    alpha_how: str
    predicted: _fr.Frontier
    plain_error: np.ndarray
    mtp_error: np.ndarray
    #: the same at the measured point's own concurrency (the error of its TPOT, 1 / (1 + e) - 1)
    plain_error_at_concurrency: np.ndarray = None
    mtp_error_at_concurrency: np.ndarray = None

    @property
    def errors(self) -> np.ndarray:
        """Every measured point's error at matched speed per user (those inside the predicted frontier)."""
        e = np.concatenate([self.plain_error, self.mtp_error])
        return e[np.isfinite(e)]

    @property
    def errors_at_concurrency(self) -> np.ndarray:
        return np.concatenate([self.plain_error_at_concurrency, self.mtp_error_at_concurrency])

    def crossovers(self) -> tuple:
        """(measured, predicted) :class:`~speclib.core.frontier.Crossover`."""
        return self.measured.crossover(), self.predicted.crossover()

    def crossover_agrees(self):
        """Whether the predicted crossover agrees with the measured one (see
        the module notes); None where the measured arms share no speed."""
        m, p = self.crossovers()
        if not m.above:
            return None
        tol = CROSSOVER_TOLERANCE
        if m.crosses:
            return bool(p.crosses and p.above == m.above and abs(p.speed / m.speed - 1.0) <= tol)
        # no measured crossing over [lowest, highest]: the prediction must have the same arm winning there
        if not p.above:
            return False
        if not p.crosses:
            return p.above == m.above
        return p.above == m.above and p.speed <= m.lowest * (1.0 + tol)


def matched_error(measured_speed, measured_throughput, speed, throughput) -> np.ndarray:
    """Predicted over measured throughput per GPU - 1 at each measured
    point's speed per user, the predicted frontier (``speed``,
    ``throughput``) interpolated in log-log; NaN outside its speeds."""
    s, x = _fr._sorted(speed, throughput)
    ms = np.asarray(measured_speed, dtype=float)
    inside = (ms >= s[0]) & (ms <= s[-1])
    at = np.exp(np.interp(np.log(ms), np.log(s), np.log(x)))
    return np.where(inside, at / np.asarray(measured_throughput, dtype=float) - 1.0, np.nan)


@lru_cache(maxsize=None)
def held_out_fit(chip: str):
    """The calibrated step fitted without every run on ``chip`` (the shipped
    form; :func:`speclib.calibration.held_out._fold` by chip)."""
    return _ho._fold("chip", _feat.chip_key(chip)).fit(SHIPPED_FORM)


def _pairs() -> dict:
    return {r.id: r for r in _spec.r1_mtp_pairs()}


def _alpha(fit, frontier: MeasuredFrontier, fitted: dict) -> tuple:
    """(the acceptance, how it was found); ``fitted``: {label: (frontier, its fitted acceptance)}."""
    pair = _pairs().get(frontier.pair_id)
    if pair is not None:
        return fitted[frontier.label][1], f"fitted at concurrency {min(pair.batches)}"
    same = [a for m, a in fitted.values() if (m.engine, m.gamma) == (frontier.engine, frontier.gamma)
            and m.chip != frontier.chip]
    if not same:
        return None, "no acceptance: no concurrency measured with MTP on and off"
    return float(np.median(same)), f"the median of {len(same)} other chips' {frontier.engine} configurations"


def check(frontier: MeasuredFrontier, fit, alpha: float, how: str = "") -> FrontierCheck:
    """``frontier`` against its prediction by ``fit`` (a
    :class:`~speclib.calibration.step_fit.Fit`) at acceptance ``alpha``."""
    workload = (frontier.input_len, frontier.output_len)
    C = np.union1d(np.union1d(MATCH_CONCURRENCIES, frontier.plain.concurrency), frontier.mtp.concurrency)
    predicted = _fr.frontier(frontier.deployment(fit.calibration()), workload, gamma=frontier.gamma, alpha=alpha,
                             concurrencies=C, interval=False)
    p, s = predicted.plain, predicted.speculative
    at = lambda arm, measured: arm.throughput_per_gpu[np.searchsorted(C, measured.concurrency)] \
        / measured.throughput_per_gpu - 1.0  # noqa: E731
    return FrontierCheck(frontier, alpha, how, predicted,
                         matched_error(frontier.plain.speed_per_user, frontier.plain.throughput_per_gpu,
                                       p.speed_per_user, p.throughput_per_gpu),
                         matched_error(frontier.mtp.speed_per_user, frontier.mtp.throughput_per_gpu,
                                       s.speed_per_user, s.throughput_per_gpu),
                         at(p, frontier.plain), at(s, frontier.mtp))


def check_fitted(frontier: MeasuredFrontier, fit) -> FrontierCheck:
    """:func:`check` at the acceptance ``fit`` gives ``frontier``: fitted under it
    at its MTP pair's smallest concurrency, or the shipped one where it has no pair."""
    pair = _pairs().get(frontier.pair_id)
    return check(frontier, fit, fit_alpha(fit, pair) if pair is not None else shipped_alpha(frontier)[0])


@lru_cache(maxsize=None)
def held_out_frontiers(weights: str = "fp8") -> tuple:
    """:class:`FrontierCheck` for every configuration of :func:`measured_frontiers`
    whose deployment can be priced, each predicted by the step fitted without
    its chip (see the module notes)."""
    frontiers = measured_frontiers(weights)
    fitted, fits = {}, {}
    for m in frontiers:  # first the acceptances fitted on pairs, for the configurations without one
        fits.setdefault(m.chip, held_out_fit(m.chip))
        pair = _pairs().get(m.pair_id)
        if pair is not None:
            fitted[m.label] = (m, fit_alpha(fits[m.chip], pair))
    out = []
    for m in frontiers:
        alpha, how = _alpha(fits[m.chip], m, fitted)
        if alpha is None:
            continue
        try:
            out.append(check(m, fits[m.chip], alpha, how))
        except ValueError:  # a layout the presets cannot price (a chip's interconnect without latencies)
            continue
    return tuple(out)


def summary(checks=None) -> dict:
    """The targets: the median |error| of throughput per GPU at matched speed
    per user over every measured point, per chip and per engine; each chip's
    crossovers (configurations that agree, of those comparable) and whether
    the chip agrees (every comparable configuration does)."""
    checks = held_out_frontiers() if checks is None else checks
    errors = np.concatenate([c.errors for c in checks]) if checks else np.zeros(0)
    by_chip, by_engine = {}, {}
    for c in checks:
        by_chip.setdefault(c.measured.chip, []).append(c)
        by_engine.setdefault(c.measured.engine, []).append(c)
    med = lambda cs: float(np.median(np.abs(np.concatenate([c.errors for c in cs])))) \
        if any(c.errors.size for c in cs) else float("nan")  # noqa: E731
    chip_rows = {}
    for chip, cs in sorted(by_chip.items()):
        verdicts = [c.crossover_agrees() for c in cs]
        scored = [v for v in verdicts if v is not None]
        chip_rows[chip] = {"points": int(sum(c.errors.size for c in cs)), "median_abs_error": med(cs),
                           "crossovers_agree": int(sum(scored)), "crossovers_compared": len(scored),
                           "agrees": bool(scored) and all(scored),
                           "measured_crossings": int(sum(c.measured.crossover().crosses for c in cs))}
    at_c = np.concatenate([c.errors_at_concurrency for c in checks]) if checks else np.zeros(0)
    return {"points": int(errors.size),
            "median_abs_error": float(np.median(np.abs(errors))) if errors.size else float("nan"),
            "median_abs_error_at_concurrency": float(np.median(np.abs(at_c))) if at_c.size else float("nan"),
            "mean_signed_error": float(np.mean(errors)) if errors.size else float("nan"),
            "by_chip": chip_rows, "by_engine": {e: med(cs) for e, cs in sorted(by_engine.items())},
            "chips_agreeing": sum(r["agrees"] for r in chip_rows.values()), "chips": len(chip_rows)}


# --- the frontiers the shipped step predicts (the book's figure) --------------------------------------


def reference(chip: str, engine: str, workload: str, weights: str = "fp8"):
    """The configuration of ``chip``, ``engine`` and ``workload`` InferenceX
    measured with MTP on and off at the most concurrencies (None where it
    measured none)."""
    found = [m for m in measured_frontiers(weights) if (m.chip, m.engine, m.workload) == (chip, engine, workload)]
    return max(found, key=lambda m: (m.plain.concurrency.size + m.mtp.concurrency.size, -m.ep, not m.dp_attention),
               default=None)


@lru_cache(maxsize=None)
def _shipped_alphas(weights: str = "fp8") -> dict:
    from ..core.calibrated import shipped_calibration
    from speclib.calibration.step_fit import Fit

    fit = Fit.of(shipped_calibration())
    pairs = _pairs()
    return {m.label: (m, fit_alpha(fit, pairs[m.pair_id])) for m in measured_frontiers(weights) if m.pair_id in pairs}


def shipped_alpha(frontier: MeasuredFrontier) -> tuple:
    """(MTP's acceptance in ``frontier``, how it was found) under the shipped
    calibrated step: fitted at its smallest concurrency with both arms
    measured, else the median of the same engine and draft length's."""
    fitted = _shipped_alphas(frontier.weights)
    pair = _pairs().get(frontier.pair_id)
    if pair is not None:
        return fitted[frontier.label][1], f"fitted at concurrency {min(pair.batches)}"
    same = [a for m, a in fitted.values() if (m.engine, m.gamma) == (frontier.engine, frontier.gamma)]
    return float(np.median(same)), f"the median of {len(same)} {frontier.engine} configurations"


def engine_alpha(engine: str, gamma: int, weights: str = "fp8") -> float:
    """The median acceptance fitted under the shipped step over the
    configurations of ``engine`` served with draft length ``gamma``."""
    same = [a for m, a in _shipped_alphas(weights).values() if (m.engine, m.gamma) == (engine, gamma)]
    return float(np.median(same))


def measured_at(frontier: MeasuredFrontier, speed: float) -> tuple:
    """(plain, MTP) output tokens per second per GPU at ``speed`` tokens/s
    per user, each measured arm interpolated in log-log between its points
    (NaN where the speed lies outside the arm's)."""
    out = []
    for arm in (frontier.plain, frontier.mtp):
        s, x = _fr._sorted(arm.speed_per_user, arm.throughput_per_gpu)
        inside = s.size >= 2 and s[0] <= speed <= s[-1]
        out.append(float(np.exp(np.interp(np.log(speed), np.log(s), np.log(x)))) if inside else float("nan"))
    return tuple(out)
