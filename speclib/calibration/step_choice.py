"""A nested choice between the calibrated step and the measured step plus
host work for decode TPOT, held out by model family or by chip.

Two candidates price a decode run's TPOT (:data:`CANDIDATES`, in the order a
tie is broken):

* ``"measured+host"``: the measured step (every kernel from NVIDIA's measured
  tables) plus the engine's host work fitted on the other runs
  (:func:`speclib.calibration.measured_host.fit`); its outer prediction of a
  held-out group is :func:`speclib.calibration.measured_host.held_out`'s;
* ``"calibrated"``: the roofline step with fitted constants, in outer fold F
  the form stored for F (:func:`speclib.calibration.held_out.stored_held_out`
  ``(by).forms[F]``, chosen without F) fitted without F; its outer prediction
  is the stored one (:func:`speclib.calibration.held_out.stored_decode_predicted`).

Neither is better everywhere (held out by model family the measured step
plus host work is the closer, by chip the calibrated step), so in each outer
fold F the candidate is chosen on the runs outside F alone (:func:`choose_nested`):
each candidate is fitted without F and without an inner group G and predicts
G's runs, for every inner group G; the candidate with the lower inner score
predicts F with its outer prediction. No measured TPOT of F reaches F's
choice, so the nested choice's error on F is held out as its candidates' are.

The inner score (:func:`inner_score`) is pooled: the median |relative error|
over every inner held-out point of the fold, over the null baseline's
(the median TPOT of the same chip and engine among the runs outside F and G,
:func:`speclib.calibration.baselines.same_chip_engine_tpot`) on the same
points, the points being those where both candidates and the null have a
prediction. Pooled rather than the median over inner groups of each group's
ratio, because by chip three inner groups are left (the median of three
ratios is the middle group's alone) and by model family one chip of the
other family's runs is as few as 29 runs; and the outer figure it stands for
is itself pooled (the median |error| over the held-out runs). Both candidates
are divided by the same null on the same points, so the choice is the one
the pooled median |error| makes; the ratio says how far each is from the
null. A tie goes to the measured step plus host work (measured before fitted).

The inner unit (:func:`inner_grouping`) is the outer grouping's own where the
runs outside F hold at least two of its groups (by chip: three remain of the
four chips with tables). By model family it cannot be: the decode runs are
of two families (DeepSeek, Llama), so outside F one family is left, and
holding it out too leaves no decode run to fit the host work on (nor the
calibrated step's chip factors). There the inner unit is the chip, within
the one family left: the inner score then measures a new chip's error, not a
new family's, which is the one weakness of the choice by family.

What is not nested: the calibrated candidate's form in fold F was chosen
(:func:`speclib.calibration.held_out.choose_form`) on every run outside F,
inner group G's included, so its inner score is, if anything, optimistic;
the tie rule and the candidate list are fixed above, not chosen on these
runs.

The computation is quick (two outer folds by family, four by chip, each with
three inner fits of each candidate; a few seconds): it is computed, not
stored. ``python benchmarks/bench_measured_step.py --held-out`` prints it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import checked_choice

#: The candidates, in the order a tie is broken (the measured step first).
CANDIDATES = ("measured+host", "calibrated")
#: The groupings the choice is held out by (the calibrated step's stored hold-outs).
GROUPINGS = ("model", "chip")


def inner_score(measured, predicted, null) -> float:
    """The pooled inner score of ``predicted`` (lower is better): the median
    |relative error| over the points, over the null baseline's on the same
    points. ``measured``, ``predicted``, ``null``: the same points (the caller
    keeps only those where every candidate and the null are finite). inf where
    no point is left; NaN where the null's error is 0."""
    measured, predicted, null = (np.asarray(x, dtype=float) for x in (measured, predicted, null))
    if not measured.size:
        return float("inf")
    mine = float(np.median(np.abs(predicted / measured - 1.0)))
    base = float(np.median(np.abs(null / measured - 1.0)))
    return mine / base if base > 0 else float("nan")


def choose_nested(groups, measured, outer: dict, inner, null, candidates=None) -> tuple:
    """The nested choice, on arrays and injected callables (no fit of its own).

    ``groups``: each point's outer group; ``measured``: each point's truth;
    ``outer``: {candidate: each point's prediction fitted without its outer
    group}; ``inner(candidate, F)``: each point's prediction fitted without F
    and without the point's inner group (NaN where none), read only outside F;
    ``null(F)``: each point's null baseline among the points outside F and
    its inner group, read only outside F; ``candidates``: the order a tie is
    broken in (default: ``outer``'s keys).

    In each outer fold F every candidate is scored by :func:`inner_score` on
    the points outside F where every candidate and the null are finite, and
    the lowest wins (the first of ``candidates`` on a tie). ``measured`` is
    read only outside F for F's choice. Returns ({F: chosen}, {F: {candidate:
    score}}, {F: inner points}, each point's prediction by its fold's chosen
    candidate)."""
    groups = np.asarray(groups)
    measured = np.asarray(measured, dtype=float)
    candidates = tuple(outer) if candidates is None else tuple(candidates)
    chosen, scores, points = {}, {}, {}
    predicted = np.full(measured.size, np.nan)
    for F in sorted(set(groups.tolist())):
        out = groups != F
        preds = {c: np.asarray(inner(c, F), dtype=float) for c in candidates}
        base = np.asarray(null(F), dtype=float)
        ok = out & np.isfinite(base) & np.logical_and.reduce([np.isfinite(preds[c]) for c in candidates])
        scores[F] = {c: inner_score(measured[ok], preds[c][ok], base[ok]) for c in candidates}
        points[F] = int(ok.sum())
        best = candidates[0]
        for c in candidates[1:]:
            if scores[F][c] < scores[F][best]:  # strictly lower: a tie stays with the earlier
                best = c
        chosen[F] = best
        predicted[~out] = np.asarray(outer[best], dtype=float)[~out]
    return chosen, scores, points, predicted


@dataclass(frozen=True)
class StepChoice:
    """The nested choice held out ``by`` a grouping (see the module notes).
    Arrays are in the order of ``runs``."""

    by: str
    inner_by: dict  # F -> the unit its inner folds hold out
    runs: tuple
    groups: np.ndarray
    measured: np.ndarray
    outer: dict  # candidate -> each run's outer held-out TPOT (s)
    null: np.ndarray  # the outer null baseline (measured_host.held_out's)
    chosen: dict  # F -> the candidate chosen for F
    scores: dict  # F -> {candidate: inner score}
    points: dict  # F -> the inner points both candidates were scored on
    inner_groups: dict  # F -> the inner groups
    inner: dict  # F -> {candidate: each run's TPOT fitted without F and its inner group (NaN on F)}
    inner_null: dict  # F -> each run's null among the runs outside F and its inner group (NaN on F)
    predicted: np.ndarray  # each run's TPOT by its fold's chosen candidate

    def same_points(self, null: bool = True) -> np.ndarray:
        """The runs where every candidate and the nested choice have a
        prediction, and (``null``) the null baseline too."""
        ok = np.isfinite(self.predicted)
        if null:
            ok &= np.isfinite(self.null)
        for v in self.outer.values():
            ok &= np.isfinite(v)
        return ok

    def medians(self, mask=None, null: bool = True) -> dict:
        """{"runs", "nested", each candidate, "null"}: median |relative error|
        on the same runs (:meth:`same_points`, and ``mask``). ``null=False``:
        also on the runs the null has no prediction for (no run of the same
        engine outside the group), its median then NaN."""
        ok = self.same_points(null)
        if mask is not None:
            ok &= np.asarray(mask, dtype=bool)
        med = (lambda p: float(np.median(np.abs(p[ok] / self.measured[ok] - 1.0))) if ok.any() else float("nan"))
        return {"runs": int(ok.sum()), "nested": med(self.predicted), **{c: med(v) for c, v in self.outer.items()},
                "null": med(self.null) if null else float("nan")}

    def rows(self) -> list:
        """(fold, its runs, inner unit, inner groups, inner points, {candidate:
        inner score}, chosen, :meth:`medians` on the fold's runs without the
        null, the same on those the null has a prediction for) per outer fold."""
        return [(F, int((self.groups == F).sum()), self.inner_by[F], tuple(self.inner_groups[F]), self.points[F],
                 dict(self.scores[F]), self.chosen[F], self.medians(self.groups == F, null=False),
                 self.medians(self.groups == F)) for F in sorted(self.chosen)]


def inner_grouping(by: str, runs, F) -> str:
    """The unit an inner fold of outer fold F holds out: ``by`` where the
    ``runs`` outside F hold at least two of its groups, else the chip."""
    from speclib.calibration import measured_host as _mh

    left = {_mh.GROUPINGS[by](r) for r in runs if _mh.GROUPINGS[by](r) != F}
    return by if len(left) >= 2 else "chip"


def _calibrated_inner(by, inner_by, F, G, form, at) -> np.ndarray:
    """The calibrated step's TPOT of the runs at ``at`` (their indices in the
    decode runs) fitted with ``form`` without F (``by``) and G (``inner_by``)."""
    from speclib.calibration import held_out as _ho

    f = _ho._fold(by, F).join(_ho._fold(inner_by, G)).fit(form)
    return _ho.predict_decode(f)[at]


def step_choice(by: str = "model", runs=None) -> StepChoice:
    """The nested choice between :data:`CANDIDATES` for the decode TPOT of
    ``runs`` (default :func:`speclib.calibration.measured_host.table_runs`)
    held out ``by`` (``"model"``: family; ``"chip"``), with every inner fit
    done here (a few seconds; see the module notes)."""
    from speclib.calibration import baselines as _base
    from speclib.calibration import held_out as _ho
    from speclib.calibration import measured_host as _mh
    from speclib.calibration.step_features import chip_key
    from speclib.evidence import decode_runs as _dec

    by = checked_choice("by", by, GROUPINGS)
    runs = tuple(_mh.table_runs() if runs is None else runs)
    host = _mh.held_out(by, runs)
    y, kernel = host.measured, host.kernel
    groups = host.groups
    chips = np.array([chip_key(r.chip) for r in runs])
    engines = np.array([r.engine for r in runs])
    position = {r: i for i, r in enumerate(_dec.decode_runs())}
    at = np.array([position[r] for r in runs])
    forms = _ho.stored_held_out(by).forms
    outer = {"measured+host": host.predicted, "calibrated": host.calibrated}
    inner, nulls, inner_by, inner_groups = {}, {}, {}, {}
    for F in sorted(set(groups.tolist())):
        unit = inner_by[F] = inner_grouping(by, runs, F)
        ig = np.array([_mh.GROUPINGS[unit](r) for r in runs])
        out = groups != F
        inner_groups[F] = sorted(set(ig[out].tolist()))
        pred = {c: np.full(len(runs), np.nan) for c in CANDIDATES}
        for G in inner_groups[F]:
            test = out & (ig == G)
            train = out & (ig != G)
            if train.any():
                f = _mh.fit([r for r, t in zip(runs, train) if t], kernel[train])
                pred["measured+host"][test] = f.tpot([r for r, t in zip(runs, test) if t], kernel[test])
            pred["calibrated"][test] = _calibrated_inner(by, unit, F, G, forms[F], at[test])
        inner[F] = pred
        null = np.full(len(runs), np.nan)
        null[out] = _base.same_chip_engine_tpot(y[out], ig[out], chips[out], engines[out])
        nulls[F] = null
    chosen, scores, points, predicted = choose_nested(groups, y, outer, lambda c, F: inner[F][c],
                                                      lambda F: nulls[F], CANDIDATES)
    return StepChoice(by, inner_by, runs, groups, y, outer, host.null, chosen, scores, points, inner_groups, inner,
                      nulls, predicted)
