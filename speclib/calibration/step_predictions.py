"""A fitted step's predictions of the measured runs: each speculative run's
points (:func:`predict_run`, with intervals over a bootstrap's fits) and
each decode run's TPOT (:func:`predict_decode`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..core import calibrated as _cal
from speclib.evidence import spec_runs as _spec
from speclib.calibration import step_features as _feat
from speclib.evidence.spec_runs import SpecRun
from speclib.calibration.step_fit import Fit, _by_batch, _decode_matrix, _names, _vec, fit_alpha
from speclib.calibration.step_features import FIXED_FEATURES, Form



@dataclass(frozen=True)
class RunPrediction:
    """A run's points: measured and predicted (speed-ups, or ratios to the
    smallest draft length at the same batch), the best draft length per
    batch where several were measured, and, where draws were given, each
    point's interval (``lo``, ``hi``; NaN without)."""

    run: SpecRun
    batch: np.ndarray
    gamma: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    best: dict  # batch -> (measured gamma*, predicted gamma*)
    scored: np.ndarray  # False where the point set the run's acceptance or contradicts itself
    lo: np.ndarray = None
    hi: np.ndarray = None

    @property
    def error(self) -> np.ndarray:
        return self.predicted / self.measured - 1.0

    @property
    def is_speedup(self) -> bool:
        """Whether the points are speed-ups over plain decoding (else ratios between draft lengths)."""
        return self.run.quantity == "speedup"


def _theta_vector(f: Fit) -> np.ndarray:
    """``f``'s constants over every feature name (its fallbacks where it has none)."""
    return np.array([f.theta[n] if n in f.theta else f._fallback(n) for n in _names()])


class _Points:
    """Every point of one run (all its batches and draft lengths) as feature
    rows over every feature name, to price under any constants at once."""

    def __init__(self, run: SpecRun, form: Form):
        index = {n: i for i, n in enumerate(_names())}
        steps = _feat.SpecSteps(run, form)
        self.by_batch = _by_batch(run)
        self.plain = {b: _vec(steps.plain(b), index) for b in self.by_batch}
        self.spec = {(b, g): _vec(steps.spec(b, g), index) for b, gv in self.by_batch.items() for g, _ in gv}


_POINTS: dict = {}


def _points(run: SpecRun, form: Form) -> _Points:
    key = (run.id, run.alpha, _feat.DRAFTER_PRICING, _feat.DRAFT_PASS_BY_ENGINE, _feat.DRAFTER_LAYER_COSTS, _feat.EAGER_FACTOR,
           form.fixed)
    if key not in _POINTS:
        _POINTS[key] = _Points(run, form)
    return _POINTS[key]


def _predict_values(f: Fit, run: SpecRun):
    """(run with its acceptance, fitted-at batch, rows of (batch, gamma,
    measured, predicted), {batch: rate by gamma}) of ``run`` under ``f``."""
    fitted_at = None
    if _spec.alpha_fitted(run):
        run = dataclasses.replace(run, alpha=f.alphas.get(run.id) or fit_alpha(f, run))
        fitted_at = min(run.batches)
    pts = _points(run, f.form)
    theta = _theta_vector(f)
    rows, rates = [], {}
    for b, gv in pts.by_batch.items():
        rate = {g: run.committed(g, b) / float(pts.spec[(b, g)] @ theta) for g, _ in gv}
        rates[b] = rate
        if run.quantity == "speedup":
            plain = 1.0 / float(pts.plain[b] @ theta)
            rows += [(b, g, v, rate[g] / plain) for g, v in gv]
        else:
            g0, v0 = gv[0]
            rows += [(b, g, v / v0, rate[g] / rate[g0]) for g, v in gv[1:]]
    return run, fitted_at, rows, rates


def predict_run(f: Fit, run: SpecRun, draws=(), residual_sd: float = 0.0) -> RunPrediction:
    """``run``'s points under ``f``, with each point's interval over the
    fits ``draws`` (a bootstrap's) spread by ``residual_sd`` when given. A
    run whose acceptance is fitted (:func:`alpha_fitted`) takes it from its
    smallest batch under each fit; those points, and any the data
    contradict (:func:`run_inconsistent`), are not scored."""
    run_a, fitted_at, rows, rates = _predict_values(f, run)
    bad = _spec.run_inconsistent(run_a)
    batch = np.array([r[0] for r in rows])
    gamma = np.array([r[1] for r in rows])
    best = {}
    for b, gv in _by_batch(run_a).items():
        if len(gv) > 1 and b != fitted_at:
            best[b] = (max(gv, key=lambda t: t[1])[0], max(rates[b], key=rates[b].get))
    lo = hi = np.full(len(rows), np.nan)
    if draws:
        values = np.array([[r[3] for r in _predict_values(d, run)[2]] for d in draws])
        lo, hi = _cal.interval_of(values, residual_sd)
    return RunPrediction(run_a, batch, gamma, np.array([r[2] for r in rows]), np.array([r[3] for r in rows]), best,
                         np.array([b != fitted_at and (b, g) not in bad for b, g in zip(batch, gamma)], dtype=bool),
                         lo, hi)


def predict_decode(f: Fit) -> np.ndarray:
    """Predicted TPOT (s) of every decoding run under ``f``."""
    X = _decode_matrix(f.fixed)
    theta = _theta_vector(f)
    names = _names()
    pre = np.array([n == "prefill" for n in names])
    prefill = f.theta.get("prefill", 0.0) if "prefill" in f.terms else 1.0
    return X[:, ~pre] @ theta[~pre] + X[:, pre].sum(axis=1) * prefill




#: The draft lengths :func:`best_draft` searches (0: no speculation).
BEST_DRAFT_SEARCH = 8


def best_draft(f: Fit, run: SpecRun, batches=None, max_gamma: int = BEST_DRAFT_SEARCH) -> dict:
    """{batch: the draft length in 0..``max_gamma`` with the highest predicted
    speed-up under ``f``} at ``run``'s batches (or ``batches``), its
    acceptance i.i.d. at the rate its measurements imply: the accept length
    it reports at its smallest batch's draft length where it reports one,
    else its acceptance (fitted at its smallest batch where the source gives
    none, :func:`~speclib.evidence.spec_runs.alpha_fitted`). A drafter that
    drafts in one pass or has no model is priced as the run's drafter is."""
    from speclib.evidence import engines as _eng
    from ..core import acceptance as _acc

    if _spec.alpha_fitted(run):
        run = dataclasses.replace(run, alpha=f.alphas.get(run.id) or fit_alpha(f, run))
    b0 = min(run.batches)
    g0 = min(g for b, g, _ in run.points if b == b0)
    if run.accept_at.get((b0, g0)) or run.accept.get(g0):
        alpha = _eng.alpha_from_accept_length(run.accept_at.get((b0, g0)) or run.accept[g0], g0)
    else:
        alpha = run.alpha
    run = dataclasses.replace(run, alpha=alpha, accept={}, accept_at={})
    steps = _feat.SpecSteps(run, f.form)
    out = {}
    for b in (run.batches if batches is None else batches):
        plain = f.time(steps.plain(b))
        gains = [1.0] + [run.committed(g, b) * plain / f.time(steps.spec(b, g)) for g in range(1, max_gamma + 1)]
        out[int(b)] = int(np.argmax(gains))
    return out
