"""A nested choice between the calibrated step and the measured step plus
host work for decode TPOT, held out by model family or by chip; and the same
choice for the speculative speed-ups (:func:`spec_choice`, stored:
:func:`stored_spec_choice`; see the notes above :data:`SPEC_CHOICE_FILE`).

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

The decode computation is quick (two outer folds by family, four by chip,
each with three inner fits of each candidate; a few seconds): it is computed,
not stored. The speculative one takes over a minute (81 s on this project's
2-core machine), so it is stored. ``python benchmarks/bench_measured_step.py
--held-out`` prints both.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

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


# --- the speculative speed-ups: the same nested choice --------------------------------------
#
# The two candidates price a speculative run's speed-ups (:data:`CANDIDATES`, the same
# names and tie order as for decode):
#
# * ``"measured+host"``: the measured step plus the host work fitted on the decode runs
#   outside the held-out groups plus the per-extra-position term e_pos fitted on the
#   speculative runs outside them (:func:`speclib.calibration.measured_host.spec_held_out_per_position`,
#   its outer prediction);
# * ``"calibrated"``: the roofline step with fitted constants, in outer fold F the form
#   stored for F, fitted without F (its outer prediction: the stored hold-out,
#   :func:`speclib.calibration.held_out.stored_held_out`).
#
# In outer fold F, for each inner group G of the same grouping outside F, each candidate is
# fitted without F and G (the measured step's host work on the decode runs outside F and
# G, its e_pos on the speculative runs outside F and G; the calibrated step's constants on
# every run, speculative and decode, outside F and G) and predicts G's speculative runs
# (:func:`spec_inner_cell`). Both candidates' inner predictions are scored on the same
# points (:func:`same_points`) by the rule the calibrated step's own form is chosen by
# (:func:`speclib.calibration.held_out.choose_from`): first the decisions' skill over the
# null baselines (the gain's side of 1x against always a gain, the best draft within one
# against the best constant draft chosen without the run's inner group, the gain's
# direction with batch against "the gain falls"), candidates within one bootstrap standard
# error of the best kept where the best beats the baselines by more than one; then, of those,
# the error skill over "the speed-up as measured at the smallest batch" within one standard
# error of the most accurate; then the simpler, which here is the measured step (its rank in
# :data:`CANDIDATES`: four host constants and e_pos against the calibrated step's factors and
# fixed times per chip and its five shared terms), so a tie goes to the measured step. The
# same score, so that choosing between the measured and the roofline step is the choice among
# forms made one level up: a proper held-out score relative to the baseline. The chosen
# candidate predicts F with its outer prediction (:func:`choose_spec`).
#
# Where no decode run is left outside F and G, the measured step's host work cannot be
# fitted without G, and the cell (F, G) is skipped for both candidates: by model family the
# decode runs on chips with tables are of DeepSeek and Llama only, so the DeepSeek fold has
# no Llama inner cell and the Llama fold no DeepSeek one (fitting the host work on G's own
# decode runs would let G's measured TPOT reach its inner prediction, and the calibrated
# step would then be held to a stricter fold than the measured one). Nothing else differs
# from the decode choice's inner unit: the speculative runs outside F always hold two or
# more groups of the outer grouping, so the inner unit is the outer one.
#
# Not nested: the calibrated candidate's form in F was chosen on every run outside F, G's
# included (optimistic for it, as for decode); e_pos's form (per attention layer) was fixed
# before, not chosen here. The whole computation (two groupings, 30 and 56 inner cells of two
# fits each) takes over a minute (81 s here), so it is stored (:data:`SPEC_CHOICE_FILE`, written by
# ``python -m speclib.calibration.step_choice --write``, read by :func:`stored_spec_choice`);
# tests recompute one cell.

#: Where the stored nested choice for the speculative speed-ups lives.
SPEC_CHOICE_FILE = ("data", "calibration", "spec_choice.json")


def same_points(*lists) -> tuple:
    """Lists of RunPredictions cut to the same points: the runs every list
    has (in the first's order), each scored where every list scores it and
    with the (run, batch) pairs of a best draft every list has. The
    predictions of a run must share their points (batch, gamma)."""
    at = [{p.run.id: p for p in preds} for preds in lists[1:]]
    out = [[] for _ in lists]
    for p in lists[0]:
        if any(p.run.id not in a for a in at):
            continue
        mine = [p] + [a[p.run.id] for a in at]
        for q in mine[1:]:
            if not (np.array_equal(p.batch, q.batch) and np.array_equal(p.gamma, q.gamma)):
                raise ValueError(f"run {p.run.id}: the candidates price different points")
        ok = np.logical_and.reduce([np.asarray(q.scored, bool) for q in mine])
        keys = sorted(set.intersection(*(set(q.best) for q in mine)))
        for o, q in zip(out, mine):
            o.append(dataclasses.replace(q, scored=ok, best={k: q.best[k] for k in keys}))
    return tuple(out)


def choose_spec(groups: dict, outer: dict, inner: dict, candidates=CANDIDATES, unit_of=None) -> tuple:
    """The nested choice for the speculative runs, on predictions given (no
    fit of its own).

    ``groups``: {run id: its outer group}; ``outer``: {candidate: {run id:
    RunPrediction fitted without its outer group}}; ``inner``: {F:
    {candidate: [RunPrediction of runs outside F, each fitted without F and
    its inner group]}}; ``candidates``: the order a tie is broken in;
    ``unit_of(prediction)``: its inner group (the best constant draft is
    chosen without it). Each fold's candidates are scored on the same points
    (:func:`same_points`) by :func:`speclib.calibration.held_out.choose_from`,
    the rank in ``candidates`` standing for a form's size. Nothing of F is
    read for F's choice: its runs are dropped from ``inner[F]``. Returns
    ({F: chosen}, {F: {candidate: (decision skill, error skill, median over
    runs of each run's median |error|)}}, {F: (runs, scored points)},
    {run id: the chosen candidate's outer prediction})."""
    from speclib.calibration import held_out as _ho

    candidates = tuple(candidates)
    if len(candidates) != 2:
        raise ValueError("choose_spec chooses between two candidates")
    chosen, scores, points, predicted = {}, {}, {}, {}
    for F in sorted(inner):
        a, b = ([p for p in inner[F][c] if groups[p.run.id] != F] for c in candidates)
        a, b = same_points(a, b)
        preds = {candidates[0]: a, candidates[1]: b}
        pick, skill = _ho.choose_from(preds, size=candidates.index, unit_of=unit_of)
        chosen[F] = pick
        scores[F] = {c: (*skill[c], _ho.choice_score(preds[c])) for c in candidates}
        points[F] = (len(a), int(sum(int(p.scored.sum()) for p in a)))
        for rid, g in groups.items():
            if g == F:
                predicted[rid] = outer[pick][rid]
    return chosen, scores, points, predicted


def spec_inner_cell(by: str, F, G, form, runs=None, spec=None, ids=None):
    """G's speculative runs (not F's) predicted by each candidate fitted
    without F and G (``by``): {candidate: [RunPrediction]}, or None where no
    decode run of ``runs`` (default
    :func:`speclib.calibration.measured_host.table_runs`) is left outside F
    and G to fit the host work on. ``form``: the calibrated step's (F's);
    ``spec``: the speculative runs the measured step's e_pos is fitted on and
    G's runs taken from (default every one; a check passes a changed copy);
    ``ids``: only these speculative runs (default the stored hold-out's)."""
    from speclib.calibration import held_out as _ho
    from speclib.calibration import measured_host as _mh
    from speclib.calibration.step_predictions import predict_run
    from speclib.evidence import spec_runs as _spec

    runs = tuple(_mh.table_runs() if runs is None else runs)
    every = tuple(_spec.spec_runs() if spec is None else spec)
    ids = {p.run.id for p in _ho.stored_held_out(by).runs} if ids is None else set(ids)
    unit = _mh.GROUPINGS[by]
    decode = [d for d in runs if unit(d) not in (F, G)]
    if not decode:
        return None
    mine = [r for r in every if r.id in ids and _ho.group_of(r, by) == G]
    host = _mh.fit(decode)
    train = [s for s in every if s.id in ids and _ho.group_of(s, by) not in (F, G)]
    e = _mh.fit_per_position(train, host, "layers")[0]
    f = _ho._fold(by, F).join(_ho._fold(by, G)).fit(form)
    wanted = {r.id for r in mine}
    return {"measured+host": [_mh.predict_spec_run(r, host, e, "layers") for r in mine],
            "calibrated": [predict_run(f, r) for r in _spec.spec_runs() if r.id in wanted]}


@dataclass(frozen=True)
class SpecChoice:
    """The nested choice for the speculative speed-ups held out ``by`` a
    grouping (see the notes above :data:`SPEC_CHOICE_FILE`)."""

    by: str
    groups: dict  # run id -> its outer group
    chosen: dict  # F -> the candidate chosen for F
    scores: dict  # F -> {candidate: (decision skill, error skill, choice_score)} on the inner points
    points: dict  # F -> (inner runs, inner scored points) both candidates were scored on
    inner_groups: dict  # F -> the inner groups scored
    skipped: dict  # F -> the inner groups with no decode run left to fit the host work on
    inner: dict  # F -> {candidate: [RunPrediction] fitted without F and the run's group}
    outer: dict  # candidate -> HeldOut of its outer hold-out
    held: object  # the nested choice's HeldOut: each fold's runs by its chosen candidate

    def summary_rows(self) -> list:
        """(label, summary) of the nested choice and each candidate's outer
        hold-out (:meth:`~speclib.calibration.held_out.HeldOut.summary`), on
        the same runs and points."""
        return [(label, h.summary()) for label, h in self.same().items()]

    def same(self) -> dict:
        """{"nested", each candidate: its HeldOut cut to the runs and points
        all three have (:func:`same_points`)}, so that each is scored, and
        :func:`speclib.calibration.held_out.skill_of` sets it beside the null
        baselines, on the same points."""
        labels = ("nested",) + tuple(self.outer)
        helds = (self.held,) + tuple(self.outer.values())
        cut = same_points(*(h.runs for h in helds))
        return {k: _replace_runs(h, c) for k, h, c in zip(labels, helds, cut)}


def _replace_runs(held, runs):
    return dataclasses.replace(held, runs=tuple(runs))


def spec_choice(by: str = "model", runs=None) -> SpecChoice:
    """The nested choice between :data:`CANDIDATES` for the speculative
    speed-ups held out ``by`` (``"model"``; ``"chip"``), every inner fit done
    here (minutes: :func:`stored_spec_choice` reads the stored one)."""
    from speclib.calibration import held_out as _ho
    from speclib.calibration import measured_host as _mh

    by = checked_choice("by", by, GROUPINGS)
    stored = _ho.stored_held_out(by)
    measured = _mh.spec_held_out_per_position(by, runs, scale="layers")[0]
    groups = {p.run.id: _ho.group_of(p.run, by) for p in stored.runs}
    inner, inner_groups, skipped = {}, {}, {}
    for F in sorted(set(groups.values())):
        cells = {c: [] for c in CANDIDATES}
        inner_groups[F], skipped[F] = [], []
        for G in sorted(set(groups.values()) - {F}):
            cell = spec_inner_cell(by, F, G, stored.forms[F], runs)
            if cell is None:
                skipped[F].append(G)
                continue
            inner_groups[F].append(G)
            for c in CANDIDATES:
                cells[c] += cell[c]
        inner[F] = cells
    return _assemble(by, stored, measured, groups, inner, inner_groups, skipped)


def _assemble(by, stored, measured, groups, inner, inner_groups, skipped) -> SpecChoice:
    from speclib.calibration import held_out as _ho

    outer_preds = {"measured+host": {p.run.id: p for p in measured.runs},
                   "calibrated": {p.run.id: p for p in stored.runs}}
    unit_of = (lambda p: _ho.group_of(p.run, by))
    chosen, scores, points, predicted = choose_spec(groups, outer_preds, inner, CANDIDATES, unit_of)
    order = [p.run.id for p in stored.runs if p.run.id in predicted]
    nan = np.full(len(stored.decode_measured), np.nan)
    held = _replace_runs(stored, tuple(predicted[i] for i in order))
    held = dataclasses.replace(held, decode_predicted=nan, terms=(), forms={})
    outer = {"measured+host": dataclasses.replace(measured, decode_predicted=nan),
             "calibrated": dataclasses.replace(stored, decode_predicted=nan)}
    return SpecChoice(by, groups, chosen, scores, points, {F: tuple(v) for F, v in inner_groups.items()},
                      {F: tuple(v) for F, v in skipped.items()}, inner, outer, held)


def _record(p) -> dict:
    from speclib.calibration import held_out as _ho

    return {"id": p.run.id, **_ho.prediction_record(p, bounds=False)}


def _prediction(rec: dict, runs: dict):
    from speclib.calibration import held_out as _ho

    return _ho._prediction(runs[rec["id"]], rec)


def write_spec_choice(path=None) -> dict:
    """Compute :func:`spec_choice` by model family and by chip and write every
    inner and outer prediction of the measured step and the choices to
    ``data/calibration/spec_choice.json`` (deterministic JSON), which
    :func:`stored_spec_choice` and the benchmark read."""
    import json
    from pathlib import Path

    data = {"about": "The nested choice between the measured step plus host work plus e_pos and the calibrated step "
                     "for the speculative speed-ups (speclib.calibration.step_choice.spec_choice), by model family and "
                     "by chip: each fold's inner predictions of both candidates, the measured step's outer hold-out "
                     "(the calibrated step's is data/calibration/held_out.json's) and the choice. Written by `python -m "
                     "speclib.calibration.step_choice --write`; tests/test_step_choice.py recomputes a cell."}
    for by in GROUPINGS:
        c = spec_choice(by)
        data[by] = {"measured_outer": [_record(p) for p in c.outer["measured+host"].runs],
                    "folds": {F: {"chosen": c.chosen[F], "inner_groups": list(c.inner_groups[F]),
                                  "skipped": list(c.skipped[F]),
                                  "scores": {k: [float(x) for x in v] for k, v in c.scores[F].items()},
                                  "inner": {k: [_record(p) for p in v] for k, v in c.inner[F].items()}}
                              for F in sorted(c.chosen)}}
    target = Path(path) if path is not None else Path(__file__).resolve().parents[1].joinpath(*SPEC_CHOICE_FILE)
    target.write_text(json.dumps(data, indent=None, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    stored_spec_choice.cache_clear()
    return data


def _stored_file() -> dict:
    import json
    from importlib import resources

    return json.loads(resources.files("speclib").joinpath(*SPEC_CHOICE_FILE).read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def stored_spec_choice(by: str = "model") -> SpecChoice:
    """The stored :func:`spec_choice` ``by`` a grouping: the inner and the
    measured step's outer predictions read from the file, the choice made
    again from them (:func:`choose_spec`, quick), which the stored choice is
    checked against."""
    from speclib.calibration import held_out as _ho
    from speclib.evidence import spec_runs as _spec

    by = checked_choice("by", by, GROUPINGS)
    rec = _stored_file()[by]
    every = {r.id: r for r in _spec.spec_runs()}
    stored = _ho.stored_held_out(by)
    measured = dataclasses.replace(stored, runs=tuple(_prediction(r, every) for r in rec["measured_outer"]),
                                   terms=(), forms={})
    groups = {p.run.id: _ho.group_of(p.run, by) for p in stored.runs}
    inner = {F: {k: [_prediction(r, every) for r in v] for k, v in f["inner"].items()} for F, f in rec["folds"].items()}
    c = _assemble(by, stored, measured, groups, inner, {F: f["inner_groups"] for F, f in rec["folds"].items()},
                  {F: f["skipped"] for F, f in rec["folds"].items()})
    if c.chosen != {F: f["chosen"] for F, f in rec["folds"].items()}:
        raise ValueError(f"the stored nested choice by {by} is not the one its stored inner predictions make")
    return c


def _main(argv=None) -> int:  # pragma: no cover - a maintenance command
    import argparse

    parser = argparse.ArgumentParser(prog="python -m speclib.calibration.step_choice")
    parser.add_argument("--write", action="store_true", help="compute and store the speculative nested choice")
    if parser.parse_args(argv).write:
        write_spec_choice()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
