"""Intervals that mean what they say: a held-out speed-up's interval holds
acceptance's own uncertainty and the step's error on groups it has not
seen, calibrated over the exchangeable unit with the finite-sample rule.

* **Acceptance.** Each point is priced at its acceptance less and more
  :data:`ACCEPTANCE_RANGE` (the rate its committed tokens per verify
  imply, measured or fitted), through the committed tokens per verify: the
  band :func:`acceptance_band` (a verify's time does not depend on what it
  accepts).
* **The step.** A point's score is how far its measured value lies outside
  its band, in log (0 inside). The unit the hold-out holds out (a model
  family, a chip, a source, a run) is what is exchangeable, not the point:
  a family's points share its errors. The scores of ``n`` calibration
  units are pooled by their distributions, each unit weighing the same
  whatever its points (each point ``1 / (n n_unit)``: the CDF pooling of
  Dunn, Wasserman and Ramdas, 2023), and the half-width is the smallest
  score whose weighted share reaches the finite-sample level
  ``(n + 1) level / n`` (:func:`unit_quantile`; infinite where that exceeds
  1: too few units for the level). Why that level holds: with a point mass
  at infinity of weight ``1 / (n + 1)`` beside the ``n`` units' pooled
  distribution, the quantile at ``level`` is what the rule reads, and it is
  no smaller than the same quantile with the new unit's own distribution
  in the mass's place; that one is symmetric in the ``n + 1`` units, so,
  units being exchangeable, the share of a new unit's points it holds is
  on average at least ``level``. Where each unit has one score this is the
  usual ``ceil((n + 1) level) / n`` rule; where units have several, it is
  narrower (at five units and 80 %, the 96th percentile of the pooled
  shares rather than the largest score). The guarantee is on average over
  units, not within each: a unit whose errors are larger than the others'
  is covered less (:func:`coverage_by` reports it).
* **Cross-conformal.** The scores of the units other than the one predicted
  are their own held-out scores (each predicted without its unit), so the
  interval of a unit held out is calibrated on the others without a second
  fit: a cross-conformal (CV+-like) interval over units, which is what the
  name it carries says (:data:`INTERVAL_NAME`).

Coverage is reported per model family and per chip (:func:`coverage_by`).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..core import acceptance as _acc
from ..core.calibrated import ACCEPTANCE_RANGE, INTERVAL_LEVEL  # noqa: F401 - the range: the rate its committed
# tokens imply, less and more this much (the library's intervals hold the same range)


def interval_name(unit: str, level: float = INTERVAL_LEVEL) -> str:
    """What an interval calibrated over ``unit`` is called where it is printed."""
    return (f"{100 * level:.0f} % cross-conformal interval over {unit} (pooled, finite-sample rule; acceptance "
            f"\u00b1{ACCEPTANCE_RANGE:g})")


def finite_sample_level(n_units: int, level: float = INTERVAL_LEVEL) -> float:
    """The share of the pooled scores of ``n_units`` calibration units, each
    unit weighing the same, that a half-width must reach: ``(n + 1) level /
    n`` (above 1: no finite quantile holds it). Where each unit holds one
    score, the smallest score reaching it is the ``ceil((n + 1) level)``-th,
    the usual split-conformal rule."""
    if n_units < 1:
        return math.inf
    return (n_units + 1) * level / n_units


def unit_quantile(scores, units, level: float = INTERVAL_LEVEL) -> float:
    """The smallest of ``scores`` whose share reaches
    :func:`finite_sample_level` of the number of distinct ``units``, each
    unit weighing the same (its points share its weight); infinite where
    the level exceeds 1."""
    scores, units = np.asarray(scores, dtype=float), np.asarray(units)
    names = np.unique(units)
    k = finite_sample_level(names.size, level)
    if k > 1.0 + 1e-12:
        return math.inf
    weight = np.zeros(scores.size)
    for u in names:
        mine = units == u
        weight[mine] = 1.0 / (names.size * mine.sum())
    order = np.argsort(scores, kind="stable")
    cum = np.cumsum(weight[order])
    return float(scores[order][min(int(np.searchsorted(cum, k - 1e-9)), scores.size - 1)])


def _alpha_at(run, batch, gamma) -> float:
    """The i.i.d. rate a point's committed tokens per verify imply."""
    from speclib.evidence.engines import alpha_from_accept_length

    n = run.accept_at.get((int(batch), int(gamma))) or run.accept.get(int(gamma))
    if not n:
        return float(run.alpha)
    try:
        return alpha_from_accept_length(float(n), int(gamma))
    except ValueError:  # a tree's committed tokens exceed a chain's: its rate is not a chain's
        return float(run.alpha)


def _committed(alpha, gamma) -> float:
    return float(_acc.committed_numeric(np.asarray(float(np.clip(alpha, 0.0, 1.0))), np.asarray(float(gamma))))


def acceptance_band(p, delta: float = ACCEPTANCE_RANGE) -> tuple:
    """(lo, hi) of each of ``p``'s predicted points with its acceptance less
    and more ``delta``: a speed-up scales with the committed tokens per
    verify at its draft length, a ratio between draft lengths at one batch
    with their ratio."""
    lo, hi = p.predicted.copy(), p.predicted.copy()
    first = {}
    for b, g, _ in p.run.points:
        first[b] = min(first.get(b, g), g)
    for i, (b, g) in enumerate(zip(p.batch, p.gamma)):
        a = _alpha_at(p.run, b, g)
        factors = []
        for d in (-delta, delta):
            f = _committed(a + d, g) / _committed(a, g)
            if not p.is_speedup:
                g0 = first[int(b)]
                a0 = _alpha_at(p.run, b, g0)
                f /= _committed(a0 + d, g0) / _committed(a0, g0)
            factors.append(f)
        lo[i], hi[i] = p.predicted[i] * min(factors + [1.0]), p.predicted[i] * max(factors + [1.0])
    return lo, hi


def band_scores(p, delta: float = ACCEPTANCE_RANGE) -> np.ndarray:
    """How far each of ``p``'s measured points lies outside its acceptance
    band, in log (0 inside it)."""
    lo, hi = acceptance_band(p, delta)
    return np.maximum.reduce([np.log(p.measured / hi), np.log(lo / p.measured), np.zeros(p.measured.size)])


def calibrated(held, unit_of, level: float = INTERVAL_LEVEL, delta: float = ACCEPTANCE_RANGE):
    """``held`` (a :class:`~speclib.calibration.held_out.HeldOut`) with each
    point's interval replaced: its acceptance band widened by the
    :func:`unit_quantile` of the scored points' :func:`band_scores` of every
    unit but its own (``unit_of(prediction)``)."""
    q = half_widths(held, unit_of, level, delta)
    out = []
    for p in held.runs:
        lo, hi = acceptance_band(p, delta)
        w = q[unit_of(p)]
        out.append(dataclasses.replace(p, lo=lo * np.exp(-w), hi=hi * np.exp(w)))
    return dataclasses.replace(held, runs=tuple(out))


def coverage_by(held, key) -> list:
    """(key, points inside their interval, scored points) of ``held``'s runs
    grouped by ``key(prediction)`` (a family, a chip), sorted by key."""
    out = {}
    for p in held.runs:
        inside = ((p.measured >= p.lo) & (p.measured <= p.hi))[p.scored]
        k = key(p)
        a, n = out.get(k, (0, 0))
        out[k] = (a + int(inside.sum()), n + int(inside.size))
    return [(k, a, n) for k, (a, n) in sorted(out.items())]


def half_widths(held, unit_of, level: float = INTERVAL_LEVEL, delta: float = ACCEPTANCE_RANGE) -> dict:
    """{unit: the log half-width its points' intervals take beyond their
    acceptance band} (:func:`calibrated`)."""
    scores = {p.run.id: band_scores(p, delta) for p in held.runs}
    units = {p.run.id: unit_of(p) for p in held.runs}
    out = {}
    for name in sorted(set(units.values())):
        others = [q for q in held.runs if units[q.run.id] != name]
        s = np.concatenate([scores[q.run.id][q.scored] for q in others]) if others else np.zeros(0)
        u = np.concatenate([[units[q.run.id]] * int(q.scored.sum()) for q in others]) if others else np.zeros(0)
        out[name] = unit_quantile(s, u, level) if s.size else math.inf
    return out

