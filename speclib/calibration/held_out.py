"""The fitted step held out: every measured run predicted by constants
fitted without it, a group at a time, with intervals; the form chosen by
held-out error; the shipped calibration and the stored hold-outs.

A group is held out whole, its speculative runs
(:mod:`speclib.evidence.spec_runs`) and its decode runs
(:mod:`speclib.evidence.decode_runs`) together (:data:`GROUPINGS`):

* ``"run"``: each speculative run alone; each decode sweep (one deployment
  and workload at several concurrencies) in turn;
* ``"model"``: a model family (every DeepSeek run, decode and speculative);
* ``"source"``: a source (every run of one publication or benchmark);
* ``"chip"``: a chip (every run on it): its factor and fixed times then come
  from the chips of its generation, else of its vendor, as a chip the
  calibration has not seen does.

:func:`bootstrap_fits` resamples the model families for the constants'
intervals and :func:`residual_sd` measures what they do not carry;
:func:`choose_form` picks the form by held-out error by model family.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from .._checks import checked_choice
from ..core import calibrated as _cal
from speclib.evidence import spec_runs as _spec
from speclib.calibration import step_features as _feat
from speclib.evidence.spec_runs import SpecRun
from speclib.calibration.step_features import DEFAULT_TERMS, FIXED_SCALINGS, SHIPPED_FORM, Form, as_form
from speclib.calibration.step_fit import _problem, fit
from speclib.calibration.step_predictions import RunPrediction, predict_decode, predict_run
from speclib.calibration.baselines import FLAT_SLOPE, SWEEP_BATCHES, direction, direction_rows, gain_slope, sweeps  # noqa: F401


@dataclass(frozen=True)
class HeldOut:
    """Every speculative run predicted by constants fitted without its group
    (``by``: :data:`GROUPINGS`), the decode runs likewise, and the forms
    fitted in each fold."""

    runs: tuple  # RunPrediction per run
    decode_measured: np.ndarray
    decode_predicted: np.ndarray  # NaN where a decode run was not held out
    decode_concurrency: np.ndarray
    decode_workload: np.ndarray
    terms: tuple
    by: str = "run"
    forms: dict = dataclasses.field(default_factory=dict)  # group -> Form fitted without it

    def speedup_errors(self) -> np.ndarray:
        return np.concatenate([p.error[p.scored] for p in self.runs]) if self.runs else np.zeros(0)

    def best_hits(self) -> tuple:
        """(points within +-1 of the measured best draft length, points)."""
        return best_hits(self.runs)

    def decode_errors(self, mask=None) -> np.ndarray:
        e = self.decode_predicted / self.decode_measured - 1.0
        keep = np.isfinite(e) if mask is None else np.isfinite(e) & np.asarray(mask, dtype=bool)
        return e[keep]

    def decode_by_concurrency(self, mask=None) -> list:
        """(concurrency, runs, median signed error) rows (of the decode runs in ``mask``)."""
        e = self.decode_predicted / self.decode_measured - 1.0
        ok = np.isfinite(e) if mask is None else np.isfinite(e) & np.asarray(mask, dtype=bool)
        return [(int(c), int((ok & (self.decode_concurrency == c)).sum()),
                 float(np.median(e[ok & (self.decode_concurrency == c)])))
                for c in np.unique(self.decode_concurrency[ok])]

    def run_medians(self) -> list:
        """(run id, median |error| of its scored points) for each run with one."""
        return [(p.run.id, float(np.median(np.abs(p.error[p.scored])))) for p in self.runs if p.scored.any()]

    def sign_right(self) -> float:
        """The fraction of scored speed-up points (over plain decoding)
        predicted on the same side of 1x as measured."""
        right, n = sign_hits(self.runs)
        return right / n if n else float("nan")

    def interval_coverage(self) -> float:
        """The fraction of scored points inside their interval (NaN without intervals)."""
        inside = [((p.measured >= p.lo) & (p.measured <= p.hi))[p.scored] for p in self.runs
                  if p.lo is not None and np.isfinite(p.lo).all()]
        return float(np.mean(np.concatenate(inside))) if inside else float("nan")

    def decode_summary(self, mask=None) -> dict:
        """The decode runs' held-out errors (of those in ``mask``): how many,
        the median |error| and the worst median signed error by concurrency."""
        d = np.abs(self.decode_errors(mask))
        by_conc = self.decode_by_concurrency(mask)
        return {"decode_runs": int(d.size),
                "decode_median_abs_error": float(np.median(d)) if d.size else float("nan"),
                "decode_worst_median_signed": max((abs(m) for _, _, m in by_conc), default=float("nan"))}

    def directions(self) -> list:
        """How the gain changes with batch, measured and predicted, for every
        sweep (:func:`sweeps`: a run's points at one draft length over three
        or more batches): rows of (run id, gamma, batches, measured slope,
        predicted slope, right), a slope being the change of log gain per
        doubling of the batch (:func:`gain_slope`) and right when both fall,
        both rise or both stay flat (:func:`direction`)."""
        return direction_rows(self.runs)

    def direction_right(self) -> float:
        """The fraction of sweeps whose gain moves with batch the way it was measured to."""
        rows = self.directions()
        return float(np.mean([r[-1] for r in rows])) if rows else float("nan")

    def summary(self) -> dict:
        e = np.abs(self.speedup_errors())
        hit, n = self.best_hits()
        d = self.directions()
        return {"runs": len(self.runs), "points": int(e.size), "median_abs_error": float(np.median(e)),
                "p90_abs_error": float(np.percentile(e, 90)), "max_abs_error": float(np.max(e)),
                "run_median_abs_error": float(np.median([m for _, m in self.run_medians()])),
                "sign_right": self.sign_right(), "interval_coverage": self.interval_coverage(),
                "best_gamma_within_1": hit, "best_gamma_points": n,
                "direction_right": sum(r[-1] for r in d), "direction_sweeps": len(d), **self.decode_summary()}

    def run(self, run_id: str) -> RunPrediction:
        for p in self.runs:
            if p.run.id == run_id:
                return p
        raise ValueError(f"run_id must be one of {', '.join(p.run.id for p in self.runs)}; got {run_id!r}")


#: How runs are grouped when held out: one run, a model family, a source, a chip.
GROUPINGS = ("run", "model", "source", "chip")

def sign_hits(preds) -> tuple:
    """(scored speed-up points predicted on the side of 1x they were
    measured on, scored speed-up points) of ``preds``."""
    m = [p.measured[p.scored] for p in preds if p.is_speedup]
    q = [p.predicted[p.scored] for p in preds if p.is_speedup]
    if not m:
        return 0, 0
    m, q = np.concatenate(m), np.concatenate(q)
    return int(np.sum((m > 1.0) == (q > 1.0))), int(m.size)


def best_hits(preds) -> tuple:
    """((run, batch) pairs whose predicted best draft length is within one of
    the measured, pairs) of ``preds``."""
    pairs = [v for p in preds for v in p.best.values()]
    return sum(abs(m - q) <= 1 for m, q in pairs), len(pairs)


def group_of(run: SpecRun, by: str) -> str:
    """The group the speculative ``run`` is held out with."""
    by = checked_choice("by", by, GROUPINGS)
    return {"run": run.id, "model": run.family, "source": run.source,
            "chip": _feat.chip_key(run.chip)}[by]


def decode_groups(by: str = "run") -> np.ndarray:
    """Each decode run's group ``by`` a grouping (``"run"``: its sweep, one
    deployment and workload measured at several concurrencies)."""
    by = checked_choice("by", by, GROUPINGS)
    runs = _problem()[2]
    of = {"run": lambda r: r.sweep, "model": lambda r: r.family, "source": lambda r: r.source,
          "chip": lambda r: _feat.chip_key(r.chip)}[by]
    return np.array([of(r) for r in runs])


def groups(by: str) -> dict:
    """{group: run ids} of the speculative runs, ``by`` one of :data:`GROUPINGS`."""
    out = {}
    for r in _spec.spec_runs():
        out.setdefault(group_of(r, by), []).append(r.id)
    return {g: tuple(ids) for g, ids in out.items()}


@dataclass(frozen=True)
class Fold:
    """What a fit leaves out: speculative run ids and a decode mask (True: held out)."""

    runs: tuple
    decode: np.ndarray

    def fit(self, form, **kw):
        return fit(form, exclude_runs=self.runs, decode_weights=(~self.decode).astype(float), **kw)

    def join(self, other: "Fold") -> "Fold":
        return Fold(tuple(dict.fromkeys(self.runs + other.runs)), self.decode | other.decode)


def no_fold() -> Fold:
    return Fold((), np.zeros(len(_problem()[1]), dtype=bool))


def _fold(by: str, group: str) -> Fold:
    """The runs, speculative and decode, of ``group`` ``by`` a grouping."""
    ids = tuple(r.id for r in _spec.spec_runs() if group_of(r, by) == group)
    decode = decode_groups(by) == group if by != "run" else np.zeros(len(_problem()[1]), dtype=bool)
    return Fold(ids, decode)


def _group_names(by: str, exclude: Fold) -> list:
    names = {group_of(r, by) for r in _spec.spec_runs() if r.id not in exclude.runs}
    if by != "run":
        names |= set(decode_groups(by)[~exclude.decode])
    return sorted(names)


#: The forms a fitted step is chosen from (simplest first: a tie goes to the
#: earlier). Each has the chip's factor and fixed time, the time per
#: sequence, the prefill's efficiency, attention's own factor and the time
#: per MoE layer, and prices what the extra verified positions add beyond the
#: roofline in one of four ways, each one constant for every chip: not at all,
#: as a time per extra position in each attention layer (e), as their FLOPs at
#: a fitted fraction of peak (chi), or both; with and without a time per token
#: per layer (tau); the fixed time (and e) per layer of the model, or the same
#: for every model.
_BASE = ("factor", "fixed", "per_sequence", "prefill", "attention_factor", "moe_fixed")
_EXTRA = ((), ("per_position",), ("extra_flops",), ("per_position", "extra_flops"))
CANDIDATE_FORMS = tuple(Form(_BASE + extra + token, fixed, extra + token) for fixed in ("layers", "chip")
                        for token in ((), ("token_layer",)) for extra in _EXTRA)
#: The grouping a choice between forms is scored on: a model family at a
#: time, since a new deployment is most often of a model the fit has not seen.
CHOICE_GROUPING = "model"


def _predict_group(form: Form, by: str, exclude: Fold = None) -> list:
    """Each speculative run not in ``exclude`` predicted by ``form`` fitted
    without its ``by`` group (and ``exclude``)."""
    exclude = exclude or no_fold()
    out = []
    for g in _group_names(by, exclude):
        fold = _fold(by, g)
        mine = [r for r in _spec.spec_runs() if r.id in fold.runs and r.id not in exclude.runs]
        if not mine:
            continue
        f = exclude.join(fold).fit(form)
        out += [predict_run(f, r) for r in mine]
    return out


def _run_medians(preds) -> np.ndarray:
    """Each run's median |error| over its scored points (NaN for a run with none)."""
    return np.array([float(np.median(np.abs(p.error[p.scored]))) if p.scored.any() else np.nan for p in preds])


def _median_of(medians: np.ndarray) -> float:
    medians = medians[np.isfinite(medians)]
    return float(np.median(medians)) if medians.size else float("inf")


def choice_score(preds) -> float:
    """The error a choice is scored on: the median over runs of each run's
    median |error| (lower is better; each run counts once)."""
    return _median_of(_run_medians(preds))


def _decision_counts(p) -> tuple:
    """One run's share of :func:`decision_parts`: (gains on the right side of
    1x, gains scored, best draft lengths within one, (batch) pairs, sweeps in
    the right direction, sweeps)."""
    sign, n_sign = sign_hits([p])
    best, n_best = best_hits([p])
    rows = direction_rows([p])
    return sign, n_sign, best, n_best, sum(bool(r[-1]) for r in rows), len(rows)


def _parts_of(counts) -> tuple:
    sign, n_sign, best, n_best, right, n_sweeps = (int(c) for c in counts)
    return (sign / n_sign if n_sign else float("nan"), best / n_best if n_best else float("nan"),
            right / n_sweeps if n_sweeps else float("nan"))


def _score_of(counts) -> float:
    parts = [x for x in _parts_of(counts) if np.isfinite(x)]
    return float(np.mean(parts)) if parts else float("nan")


def _counts(preds) -> np.ndarray:
    """:func:`_decision_counts` of each of ``preds``, a row each."""
    return np.array([_decision_counts(p) for p in preds], dtype=np.int64).reshape(-1, 6)


def decision_parts(preds) -> tuple:
    """The three decisions a deployment is priced for, as fractions right:
    the gain on the right side of 1x (points), the best draft length within
    one ((run, batch) pairs) and the direction of the gain with batch
    (sweeps); NaN where ``preds`` have none of a kind. Each is a sum over
    the runs (their points, pairs and sweeps) over another."""
    return _parts_of(_counts(preds).sum(axis=0))


def decision_score(preds) -> float:
    """The mean of :func:`decision_parts` (higher is better): each decision
    weighs the same, whatever the number of points, pairs or sweeps it has."""
    return _score_of(_counts(preds).sum(axis=0))


def _bootstrap_runs(per_run: np.ndarray, score, samples: int = 200, seed: int = 0) -> float:
    """The bootstrap standard error, over the runs, of ``score`` of
    ``per_run`` (a row per run: what the score reads of that run, its
    points, pairs and sweeps together), the runs drawn with replacement."""
    if not len(per_run):
        return 0.0
    rng = np.random.default_rng(seed)
    n = len(per_run)
    values = np.array([score(per_run[rng.integers(0, n, n)]) for _ in range(samples)])
    values = values[np.isfinite(values)]
    return float(np.std(values)) if values.size else 0.0


def _decision_error(preds, samples: int = 200, seed: int = 0) -> float:
    """The bootstrap standard error of :func:`decision_score` over the runs."""
    return _bootstrap_runs(_counts(preds), lambda rows: _score_of(rows.sum(axis=0)), samples, seed)


def _standard_error(preds, samples: int = 200, seed: int = 0) -> float:
    """The bootstrap standard error of :func:`choice_score` over the runs."""
    return _bootstrap_runs(_run_medians(preds), _median_of, samples, seed)


def form_size(form: Form) -> int:
    """How many constants a form fits on every run (its chips' factors and fixed times included)."""
    from speclib.calibration.step_fit import _names, _parameters

    return len(_parameters(form, _names())[0])


def choose_form(exclude: Fold = None, candidates=CANDIDATE_FORMS) -> tuple:
    """(the form chosen on the runs not in ``exclude``, {form: (decision
    skill, error skill)}), each candidate held out by model family
    (:data:`CHOICE_GROUPING`) and scored against the null baselines on the
    same points (:mod:`speclib.calibration.baselines`). The rule, skill first:

    1. the decisions (:func:`~speclib.calibration.baselines.decision_skill`:
       the step's share right less always a gain's, the best constant
       draft's and the gain-falls rule's): where the best form beats the
       baselines by more than one bootstrap standard error, the forms within
       one standard error of it are kept; where none does, the decisions
       cannot tell the forms apart and every form is kept (a choice among
       forms with no skill would be a choice on noise);
    2. of those, the ones whose
       :func:`~speclib.calibration.baselines.error_skill` (against the speed-up
       as measured at the run's smallest batch) is within one standard error
       of the best of them are as accurate as the data can tell;
    3. of those, the one with the fewest constants, the better decisions
       then the better error skill breaking ties."""
    return choose_from({form: _predict_group(form, CHOICE_GROUPING, exclude) for form in candidates})


def _family(p) -> str:
    return p.run.family


def _bootstrap_skill(rows: list, score, samples: int = 200, seed: int = 0) -> float:
    """The bootstrap standard error, over the runs, of ``score`` of a list of
    per-run items ``rows``, the runs drawn with replacement."""
    if not rows:
        return 0.0
    rng = np.random.default_rng(seed)
    n = len(rows)
    values = np.array([score([rows[i] for i in rng.integers(0, n, n)]) for _ in range(samples)])
    values = values[np.isfinite(values)]
    return float(np.std(values)) if values.size else 0.0


def decision_se(preds: dict) -> float:
    """The bootstrap standard error over the runs of the best decision skill
    among ``preds`` ({form: predictions held out by model family}): the
    noise :func:`choose_from` holds the decisions' skill against."""
    from speclib.calibration import baselines as _bl

    counts = {f: _bl.decision_counts(p, _family) for f, p in preds.items()}
    errors = {f: [_bl.persistence_errors(q) for q in p] for f, p in preds.items()}
    best = max(preds, key=lambda f: (_bl.decision_skill(counts[f]), _bl.error_skill(errors[f])))
    return _bootstrap_skill(list(counts[best]), lambda rows: _bl.decision_skill(np.array(rows)))


def choose_from(preds: dict, size=None, unit_of=None) -> tuple:
    """:func:`choose_form`'s rule on ``preds``, {form: its runs' predictions
    held out by model family}: (the form chosen, {form: (decision skill,
    error skill)}). ``size``: what step 3 counts (default :func:`form_size`;
    :mod:`speclib.calibration.step_choice` passes a candidate's rank);
    ``unit_of``: the group a prediction was held out with, which the best
    constant draft is chosen without (default its model family)."""
    from speclib.calibration import baselines as _bl  # noqa: F811

    size = form_size if size is None else size
    unit_of = _family if unit_of is None else unit_of
    candidates = tuple(preds)
    counts = {f: _bl.decision_counts(p, unit_of) for f, p in preds.items()}
    errors = {f: [_bl.persistence_errors(q) for q in p] for f, p in preds.items()}
    decisions = {f: _bl.decision_skill(counts[f]) for f in candidates}
    skill = {f: _bl.error_skill(errors[f]) for f in candidates}
    best = max(candidates, key=lambda f: (decisions[f], skill[f]))
    se = _bootstrap_skill(list(counts[best]), lambda rows: _bl.decision_skill(np.array(rows)))
    good = [f for f in candidates if decisions[f] >= decisions[best] - se] if decisions[best] - se > 0 else \
        list(candidates)
    accurate = max(good, key=lambda f: skill[f])
    bar = skill[accurate] - _bootstrap_skill(errors[accurate], _bl.error_skill)
    chosen = min((f for f in good if skill[f] >= bar), key=lambda f: (size(f), -decisions[f], -skill[f]))
    return chosen, {f: (decisions[f], skill[f]) for f in candidates}


def bootstrap_fits(form: Form = None, *, exclude: Fold = None, samples: int = 100, seed: int = 0) -> list:
    """Fits of ``form`` to ``samples`` resamplings of the runs not in
    ``exclude``: the model families drawn with replacement (a family's
    speculative runs together, since a prediction for a new deployment is a
    prediction for a family the fit has not seen), and the decode runs with
    replacement."""
    form = form or SHIPPED_FORM
    exclude = exclude or no_fold()
    rng = np.random.default_rng(seed)
    runs = [r for r in _spec.spec_runs() if r.id not in exclude.runs]
    families = sorted({r.family for r in runs})
    n_dec = len(_problem()[1])
    keep = ~exclude.decode
    out = []
    for _ in range(samples):
        pick = rng.integers(0, len(families), len(families))
        count = {fam: float((pick == i).sum()) for i, fam in enumerate(families)}
        weights = {r.id: count[r.family] for r in runs}
        dw = np.bincount(rng.integers(0, n_dec, n_dec), minlength=n_dec).astype(float) * keep
        out.append(fit(form, exclude_runs=exclude.runs, run_weights=weights, decode_weights=dw))
    return out


def residual_sd(form: Form = None, *, exclude: Fold = None, level: float = _cal.INTERVAL_LEVEL) -> float:
    """The spread of the log error of points held out by model family on the
    runs not in ``exclude`` (what a prediction for an unseen family misses
    beyond its constants), as the standard deviation of the normal whose
    central ``level`` holds as many of those errors as the errors' own
    central ``level`` does: the ``level`` quantile of their distance from
    their median, over the normal's (a split-conformal spread, so that an
    interval covers what it claims on families the fit has not seen, heavy
    tails included, where a robust deviation would narrow it to the bulk)."""
    from statistics import NormalDist

    preds = _predict_group(form or SHIPPED_FORM, CHOICE_GROUPING, exclude)
    e = np.concatenate([np.log(p.predicted[p.scored] / p.measured[p.scored]) for p in preds])
    if not e.size:
        return 0.0
    return float(np.quantile(np.abs(e - np.median(e)), level) / NormalDist().inv_cdf((1.0 + level) / 2.0))


#: Draws the intervals are taken over.
INTERVAL_DRAWS = 100


def held_out(by: str = "run", terms=None, *, choose=None, intervals: bool = True) -> HeldOut:
    """Every run predicted by a step fitted without its group (``by`` one of
    :data:`GROUPINGS`, see the module notes). ``terms``: the form fitted
    (default: the shipped one). ``choose`` (by default for every grouping
    but ``"run"``): in each fold the form is chosen among
    :data:`CANDIDATE_FORMS` by its own held-out skill over the baselines on
    the runs left in (:func:`choose_form`), so that the score reported is
    not the one the form was chosen on. ``intervals``: each point gets the
    cross-conformal interval over the grouping's unit
    (:func:`speclib.calibration.conformal.calibrated`: acceptance's range, and
    the finite-sample quantile of the other units' held-out scores). The
    book and the benchmark read the stored result (:func:`stored_held_out`)."""
    by = checked_choice("by", by, GROUPINGS)
    base = as_form(terms) if terms is not None else SHIPPED_FORM
    choose = (by != "run") if choose is None else bool(choose)
    _, dec_y, dec_runs, _ = _problem()
    preds, forms = {}, {}
    predicted = np.full(len(dec_y), np.nan)
    for g in _group_names(by, no_fold()):
        forms[g], fold_preds, fold_decode = held_out_fold(by, g, base, choose=choose)
        preds.update(fold_preds)
        predicted[np.isfinite(fold_decode)] = fold_decode[np.isfinite(fold_decode)]
    if by == "run":
        sweeps = decode_groups("run")
        for s in np.unique(sweeps):
            out = sweeps == s
            predicted[out] = predict_decode(Fold((), out).fit(base))[out]
    held = HeldOut(tuple(preds[r.id] for r in _spec.spec_runs() if r.id in preds), dec_y, predicted,
                   np.array([r.concurrency for r in dec_runs]), np.array([r.workload for r in dec_runs]),
                   base.terms, by, forms)
    return with_intervals(held) if intervals else held


def interval_unit(by: str):
    """The exchangeable unit the intervals of a hold-out ``by`` a grouping
    are calibrated over: a prediction's group (its run, family, source or chip)."""
    by = checked_choice("by", by, GROUPINGS)
    return lambda p: group_of(p.run, by)


def with_intervals(held: HeldOut) -> HeldOut:
    """``held`` with each point's cross-conformal interval over its
    grouping's unit (:func:`speclib.calibration.conformal.calibrated`)."""
    from speclib.calibration import conformal

    return conformal.calibrated(held, interval_unit(held.by))


def held_out_fold(by: str, group: str, terms=None, *, choose: bool = False) -> tuple:
    """(the form fitted, {run id: :class:`RunPrediction`}, the decode runs'
    predicted TPOT, NaN outside the fold) for the runs of one ``group`` held
    out ``by`` a grouping (see :func:`held_out`), without intervals (a
    point's interval is calibrated on the other groups' scores:
    :func:`with_intervals`)."""
    base = as_form(terms) if terms is not None else SHIPPED_FORM
    fold = _fold(by, group)
    form = choose_form(fold)[0] if choose else base
    f = fold.fit(form)
    mine = [r for r in _spec.spec_runs() if r.id in fold.runs]
    decode = np.full(len(fold.decode), np.nan)
    if fold.decode.any():
        decode[fold.decode] = predict_decode(f)[fold.decode]
    return form, {r.id: predict_run(f, r) for r in mine}, decode


def leave_one_run_out(terms=None) -> HeldOut:
    """Each speculative run predicted by constants fitted without it; each
    decode sweep likewise (:func:`held_out` by run, without intervals)."""
    return held_out("run", terms, intervals=False)


def held_out_decode(by: str = "workload", terms=None) -> np.ndarray:
    """Each decode run's TPOT (s) predicted by ``terms`` (default: the
    shipped form) fitted without the decode runs of its group, ``by``
    ``"workload"`` or ``"chip"`` (every speculative run stays in)."""
    form = as_form(terms) if terms is not None else SHIPPED_FORM
    runs = _problem()[2]
    of = {"workload": lambda r: r.workload, "chip": lambda r: _feat.chip_key(r.chip)}[
        checked_choice("by", by, ("workload", "chip"))]
    keys = np.array([of(r) for r in runs])
    out = np.full(len(runs), np.nan)
    for k in np.unique(keys):
        mine = keys == k
        out[mine] = predict_decode(Fold((), mine).fit(form))[mine]
    return out


#: The decode terms whose need the ablation shows: (label, form), the shipped form first.
DECODE_VARIANTS = (
    ("the shipped form", SHIPPED_FORM),
    ("without attention's own factor", Form(tuple(t for t in SHIPPED_FORM.terms if t != "attention_factor"),
                                            SHIPPED_FORM.fixed, SHIPPED_FORM.pooled)),
    ("without the time per MoE layer", Form(tuple(t for t in SHIPPED_FORM.terms if t != "moe_fixed"),
                                            SHIPPED_FORM.fixed, SHIPPED_FORM.pooled)),
    ("without either", Form(tuple(t for t in SHIPPED_FORM.terms if t not in ("attention_factor", "moe_fixed")),
                            SHIPPED_FORM.fixed, SHIPPED_FORM.pooled)),
    # the fixed time's other scaling than the shipped form's
    ("the fixed time by chip alone" if SHIPPED_FORM.fixed == "layers" else "the fixed time scaled by layers",
     Form(SHIPPED_FORM.terms, "chip" if SHIPPED_FORM.fixed == "layers" else "layers", SHIPPED_FORM.pooled)),
)


def decode_ablation() -> list:
    """For each of :data:`DECODE_VARIANTS` and for the collectives left
    uncharged: (variant, held out by chip: the decode runs' median |error|
    and worst median signed error by concurrency, Llama's and DeepSeek's
    median |error|; held out by model family: the speed-ups' median |error|)."""
    runs = _problem()[2]
    fam = np.array([r.family for r in runs])

    def row(label, form):
        chip = held_out("chip", form, choose=False, intervals=False)
        model = held_out("model", form, choose=False, intervals=False)
        s = chip.decode_summary()
        return (label, s["decode_median_abs_error"], s["decode_worst_median_signed"],
                chip.decode_summary(fam == "Llama")["decode_median_abs_error"],
                chip.decode_summary(fam == "DeepSeek")["decode_median_abs_error"],
                model.summary()["median_abs_error"])

    out = [row(label, form) for label, form in DECODE_VARIANTS]
    try:
        _feat.COLLECTIVES_CHARGED = False
        _clear_caches()
        out.append(row("the collectives not charged", SHIPPED_FORM))
    finally:
        _feat.COLLECTIVES_CHARGED = True
        _clear_caches()
    return out


def _clear_caches():
    from speclib.calibration import step_fit, step_predictions

    _problem.cache_clear()
    step_fit._ROWS.clear()
    step_fit._MATRICES.clear()
    step_predictions._POINTS.clear()


def held_out_workloads(terms=None) -> list:
    """Decode TPOT fitted on one workload's decode runs (and every
    speculative run) and predicted on each other workload: (train, test,
    runs, median |error|, worst median signed error by concurrency)."""
    form = as_form(terms) if terms is not None else SHIPPED_FORM
    _, dec_y, dec_runs, _ = _problem()
    dec_wl = np.array([r.workload for r in dec_runs])
    dec_conc = np.array([r.concurrency for r in dec_runs])
    rows = []
    for train in sorted(set(dec_wl)):
        pred = predict_decode(fit(form, workloads=(train,)))
        for test in sorted(set(dec_wl) - {train}):
            m = dec_wl == test
            e = pred[m] / dec_y[m] - 1.0
            worst = max(abs(float(np.median(e[dec_conc[m] == c]))) for c in np.unique(dec_conc[m]))
            rows.append((train, test, int(m.sum()), float(np.median(np.abs(e))), worst))
    return rows


def bootstrap(terms=None, samples: int = 200, seed: int = 0) -> dict:
    """{constant: (5th, 50th, 95th percentile)} over :func:`bootstrap_fits`."""
    draws = {}
    for f in bootstrap_fits(as_form(terms) if terms is not None else SHIPPED_FORM, samples=samples, seed=seed):
        for k, v in f.theta.items():
            draws.setdefault(k, []).append(v)
    return {k: tuple(float(np.percentile(v, q)) for q in (5, 50, 95)) for k, v in draws.items()}


def against(calibration: _cal.Calibration) -> HeldOut:
    """Every run priced by ``calibration`` as it is (not refitted)."""
    from speclib.calibration.step_fit import Fit

    f = Fit.of(calibration)
    _, dec_y, dec_runs, _ = _problem()
    return HeldOut(tuple(predict_run(f, r) for r in _spec.spec_runs()), dec_y, predict_decode(f),
                   np.array([r.concurrency for r in dec_runs]), np.array([r.workload for r in dec_runs]),
                   _feat.TERMS)


def _with(form: Form, *terms) -> Form:
    """``form`` with ``terms`` added, each one constant for every chip."""
    return Form(form.terms + tuple(t for t in terms if t not in form.terms), form.fixed,
                form.pooled + tuple(t for t in terms if t not in form.pooled))


def _without(form: Form, *terms) -> Form:
    return Form(tuple(t for t in form.terms if t not in terms), form.fixed,
                tuple(t for t in form.pooled if t not in terms))


#: The physics the shipped form is held against, one change at a time:
#: (label, the form, the module switches of :mod:`speclib.calibration.step_features`
#: it sets). A fitted term is kept only where it moves the hold-outs.
TERM_VARIANTS = (
    ("the shipped form", SHIPPED_FORM, {}),
    ("without e: a verify's extra positions at their roofline alone", _without(SHIPPED_FORM, "per_position"), {}),
    ("with tau, a time per token per layer", _with(SHIPPED_FORM, "token_layer"), {}),
    ("with the extra positions' FLOPs at a fitted fraction of peak", _with(SHIPPED_FORM, "extra_flops"), {}),
    ("without the per-sequence host time", _without(SHIPPED_FORM, "per_sequence"), {}),
    ("a drafter pass without its layers' costs (its roofline alone)", SHIPPED_FORM, {"DRAFTER_LAYER_COSTS": False}),
    ("a drafter pass as a share of a plain step", SHIPPED_FORM, {"DRAFTER_PRICING": "share"}),
    ("a step beyond its engine's CUDA graphs 22 % slower", SHIPPED_FORM, {"EAGER_FACTOR": 1.22}),
)


def term_ablation(groupings=("model", "chip")) -> list:
    """For each of :data:`TERM_VARIANTS`: (label, {grouping: the held-out
    summary of :meth:`HeldOut.summary`}), the form fixed (not chosen in each
    fold), without intervals."""
    out = []
    for label, form, switches in TERM_VARIANTS:
        saved = {k: getattr(_feat, k) for k in switches}
        try:
            for k, v in switches.items():
                setattr(_feat, k, v)
            if switches:
                _clear_caches()
            out.append((label, {by: held_out(by, form, choose=False, intervals=False).summary() for by in groupings}))
        finally:
            for k, v in saved.items():
                setattr(_feat, k, v)
            if switches:
                _clear_caches()
    return out


def shipped_fit(samples: int = INTERVAL_DRAWS) -> _cal.Calibration:
    """The calibration to ship: :data:`SHIPPED_FORM` fitted on every run, with
    ``samples`` bootstrap draws (:func:`bootstrap_fits`) and the held-out
    residual spread (:func:`residual_sd`) that its intervals are taken over."""
    cal = fit(SHIPPED_FORM).calibration()
    draws = []
    for f in bootstrap_fits(SHIPPED_FORM, samples=samples):
        c = f.calibration().to_json()
        draws.append({k: _rounded(c[k]) for k in _cal.DRAW_FIELDS if k in c})
    return dataclasses.replace(cal, draws=tuple(draws), residual_sd=residual_sd(SHIPPED_FORM))


def _rounded(value):
    """A constant to 6 significant digits (the draws' spread is far wider)."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return float(f"{value:.6g}")


def write_calibration(path=None) -> dict:
    """Fit on everything and write the shipped calibration,
    ``data/calibration/step_time.json`` (what ``step_time="calibrated"`` prices with)."""
    from pathlib import Path

    data = {"about": "Calibrated step time (speclib.core.calibrated): the shipped constants, fitted by "
                     "speclib.calibration.step_fit on measured decoding and measured speculative runs, with bootstrap "
                     "draws (model families resampled) for intervals. Written by `python -m speclib.calibration.held_out "
                     "--write-calibration`; tests/test_step_fit.py refits and compares.",
            **shipped_fit().to_json()}
    target = Path(path) if path is not None else Path(__file__).resolve().parents[1].joinpath(*_cal.CALIBRATION_FILE)
    target.write_text(_dumps(data), encoding="utf-8")
    return data


def _dumps(data: dict) -> str:
    """JSON with one line per item of a long list (the draws, the points)."""
    out = []
    for key, value in data.items():
        if isinstance(value, list) and len(value) > 20:
            items = ",\n  ".join(json.dumps(v, separators=(",", ":")) for v in value)
            out.append(f" {json.dumps(key)}: [\n  {items}\n ]")
        else:
            out.append(f" {json.dumps(key)}: {json.dumps(value, indent=1)}")
    return "{\n" + ",\n".join(out) + "\n}\n"


#: Where the stored hold-outs live, beside the calibration.
HELD_OUT_FILE = ("data", "calibration", "held_out.json")


def prediction_record(p: RunPrediction, bounds: bool = True) -> dict:
    """A :class:`RunPrediction` as stored: its acceptance, its points
    (batch, gamma, measured, predicted, [lo, hi,] scored) and its best draft
    lengths by batch; ``bounds=False`` leaves the interval out (read back
    as NaN by :func:`_prediction`)."""
    cols = (p.batch, p.gamma, p.measured, p.predicted) + ((p.lo, p.hi) if bounds else ()) + (p.scored,)
    return {"alpha": float(p.run.alpha),
            "points": [[int(row[0]), int(row[1]), *(float(x) for x in row[2:-1]), bool(row[-1])] for row in zip(*cols)],
            "best": [[int(b), int(mb), int(qb)] for b, (mb, qb) in sorted(p.best.items())]}


def _fold_record(form: Form, preds: dict) -> dict:
    return {"form": {"terms": list(form.terms), "fixed": form.fixed, "pooled": list(form.pooled)},
            "runs": {rid: prediction_record(p) for rid, p in preds.items()}}


def write_held_out(path=None) -> dict:
    """Compute the hold-outs of :func:`held_out` (with their cross-conformal
    intervals; the form chosen inside each fold for every grouping but the
    run) and write them
    to ``data/calibration/held_out.json``, which the book and the benchmark
    read (:func:`stored_held_out`); a test recomputes a fold."""
    from pathlib import Path

    data = {"about": "The calibrated step's held-out predictions (speclib.calibration.held_out.held_out), by run, by "
                     "model family, by source and by chip, each fold's form (chosen in the fold on its skill over the null "
                     "baselines), each point's 80 % cross-conformal interval over the grouping's unit, and "
                     "each decode run's held-out TPOT. Written by `python -m speclib.calibration.held_out "
                     "--write-calibration`; tests/test_step_fit.py recomputes a fold and compares.",
            "shipped_form": _fold_record(SHIPPED_FORM, {})["form"]}
    for by in GROUPINGS:
        h = held_out(by)
        data[by] = {"folds": {g: _fold_record(h.forms[g], {p.run.id: p for p in h.runs if group_of(p.run, by) == g})
                              for g in sorted(h.forms)},
                    "decode_predicted": _numbers(h.decode_predicted)}
        data[by].update(_skill_record(h))
    preds = {form: _predict_group(form, CHOICE_GROUPING) for form in CANDIDATE_FORMS}
    chosen, scores = choose_from(preds)
    data["forms_decision_se"] = decision_se(preds)
    data["forms"] = [{"form": _fold_record(form, {})["form"], "decision_skill": float(score[0]),
                      "error_skill": float(score[1]), "size": form_size(form), "kept": form == chosen}
                     for form, score in scores.items()]
    data["decode_by_workload"] = _numbers(held_out_decode("workload"))
    data["decode_ablation"] = [list(row) for row in decode_ablation()]
    data["term_ablation"] = [[label, {by: {k: v for k, v in summary.items()} for by, summary in by_grouping.items()}]
                             for label, by_grouping in term_ablation()]
    target = Path(path) if path is not None else Path(__file__).resolve().parents[1].joinpath(*HELD_OUT_FILE)
    target.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    return data


def rewrite_stored_intervals(path=None) -> dict:
    """Recompute the intervals of the stored hold-outs from their stored
    predictions (:func:`with_intervals`: the rule of
    :mod:`speclib.calibration.conformal` as it is now) and write them, with
    what they cover, back into ``data/calibration/held_out.json``; nothing
    is refitted, no prediction changes."""
    from pathlib import Path

    target = Path(path) if path is not None else Path(__file__).resolve().parents[1].joinpath(*HELD_OUT_FILE)
    data = json.loads(target.read_text(encoding="utf-8"))
    for by in GROUPINGS:
        held = with_intervals(stored_held_out(by))
        for p in held.runs:
            rec = data[by]["folds"][group_of(p.run, by)]["runs"][p.run.id]
            for row, lo, hi in zip(rec["points"], p.lo, p.hi):
                row[4], row[5] = float(lo), float(hi)
        data[by]["coverage"] = _skill_record(held)["coverage"]
    target.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    _stored.cache_clear()
    stored_held_out.cache_clear()
    return data


def skill_of(held: HeldOut) -> list:
    """:func:`speclib.calibration.baselines.skill_rows` of ``held``, each run
    and decode run in the group it is held out with (a decode run held out
    by run: its sweep)."""
    from speclib.calibration import baselines

    return baselines.skill_rows(held, lambda p: group_of(p.run, held.by), decode_groups(held.by))


def _skill_record(held: HeldOut) -> dict:
    """What the command line reads without the runs: every held-out figure
    beside its baselines (:func:`speclib.calibration.baselines.skill_rows`) and
    what the intervals cover per family and per chip."""
    from speclib.calibration import baselines, conformal

    return {"skill": [list(r) for r in skill_of(held)],
            "coverage": {"family": [list(r) for r in conformal.coverage_by(held, lambda p: p.run.family)],
                         "chip": [list(r) for r in conformal.coverage_by(held, lambda p: _feat.chip_key(p.run.chip))]}}


def stored_skill(by: str = "model") -> dict:
    """{"skill": rows of :func:`speclib.calibration.baselines.skill_rows`,
    "coverage": {"family" | "chip": (key, inside, points) rows}} of the
    stored hold-out ``by`` a grouping, read from the file alone (the command
    line's trust line)."""
    rec = _stored()[checked_choice("by", by, GROUPINGS)]
    return {"skill": [tuple(r) for r in rec["skill"]],
            "coverage": {k: [tuple(r) for r in v] for k, v in rec["coverage"].items()}}


def _numbers(values) -> list:
    return [None if not np.isfinite(x) else float(f"{x:.9g}") for x in values]


@lru_cache(maxsize=1)
def _stored() -> dict:
    return json.loads(resources.files("speclib").joinpath(*HELD_OUT_FILE).read_text(encoding="utf-8"))


def stored_decode_predicted(by: str = "model") -> np.ndarray:
    """Each decode run's TPOT (s) held out ``by`` a grouping, as stored, in
    the order of :func:`speclib.evidence.decode_runs.decode_runs` (NaN where
    a run was not held out), read from the file alone."""
    values = _stored()[checked_choice("by", by, GROUPINGS)]["decode_predicted"]
    return np.array([np.nan if x is None else x for x in values], dtype=float)


def stored_forms() -> tuple:
    """(the form kept, {form: (decision skill, error skill)}) of
    :func:`choose_form` on every run, as stored."""
    scores, kept = {}, None
    for rec in _stored()["forms"]:
        form = Form(tuple(rec["form"]["terms"]), rec["form"]["fixed"], tuple(rec["form"]["pooled"]))
        scores[form] = (rec["decision_skill"], rec["error_skill"])
        kept = form if rec["kept"] else kept
    return kept, scores


def stored_forms_decision_se() -> float:
    """:func:`decision_se` of the forms on every run, as stored."""
    return float(_stored()["forms_decision_se"])


def stored_decode_by_workload() -> np.ndarray:
    """:func:`held_out_decode` by workload, as stored."""
    return np.array([np.nan if x is None else x for x in _stored()["decode_by_workload"]], dtype=float)


def stored_term_ablation() -> list:
    """:func:`term_ablation`, as stored."""
    return [(label, by_grouping) for label, by_grouping in _stored()["term_ablation"]]


def stored_decode_ablation() -> list:
    """:func:`decode_ablation`, as stored."""
    return [tuple(row) for row in _stored()["decode_ablation"]]


def _prediction(run: SpecRun, record: dict) -> RunPrediction:
    """:func:`prediction_record` read back (a record without bounds: lo and hi NaN)."""
    pts = np.array(record["points"], dtype=float)
    pts = pts.reshape(-1, pts.shape[-1] if pts.size else 7)
    lo, hi = (pts[:, 4], pts[:, 5]) if pts.shape[1] == 7 else (np.full(len(pts), np.nan),) * 2
    return RunPrediction(dataclasses.replace(run, alpha=record["alpha"]), pts[:, 0].astype(int), pts[:, 1].astype(int),
                         pts[:, 2], pts[:, 3], {int(b): (int(mb), int(qb)) for b, mb, qb in record["best"]},
                         pts[:, -1].astype(bool), lo, hi)


@lru_cache(maxsize=None)
def stored_held_out(by: str = "run") -> HeldOut:
    """The stored :func:`held_out` of ``by`` (written by :func:`write_held_out`)."""
    by = checked_choice("by", by, GROUPINGS)
    data = _stored()[by]
    records, forms = {}, {}
    for g, fold in data["folds"].items():
        forms[g] = Form(tuple(fold["form"]["terms"]), fold["form"]["fixed"], tuple(fold["form"]["pooled"]))
        records.update(fold["runs"])
    _, dec_y, dec_runs, _ = _problem()
    dec = np.array([np.nan if x is None else x for x in data["decode_predicted"]], dtype=float)
    return HeldOut(tuple(_prediction(r, records[r.id]) for r in _spec.spec_runs() if r.id in records), dec_y, dec,
                   np.array([r.concurrency for r in dec_runs]), np.array([r.workload for r in dec_runs]),
                   SHIPPED_FORM.terms, by, forms)


#: Where the library's own intervals read their half-widths (written from
#: the stored hold-out by model family, :func:`write_library_intervals`).
LIBRARY_INTERVALS_FILE = ("data", "calibration", "intervals.json")


def library_intervals(held=None, level: float = _cal.INTERVAL_LEVEL, delta: float = None) -> dict:
    """What the library's calibrated intervals (``speedup(..., interval=True)``,
    the schedule's, the frontier's) read, from the stored hold-out by model
    family (``held``: :func:`speclib.calibration.held_out.stored_held_out`
    ``("model")`` unless given), with no refit:

    * ``speedup``: {family: the log half-width beyond the acceptance band of
      the speed-up of a model of that family}: the :func:`unit_quantile` of
      the held-out :func:`~speclib.calibration.conformal.band_scores` of the other families (the
      cross-conformal interval its own hold-out is), and ``speedup_any``,
      over every family (a family the hold-out lacks: one more unit);
    * ``decode`` / ``decode_any``: the same of the held-out plain decode
      TPOT's ``|log(predicted / measured)|``, each decode run's family its
      unit (a frontier's plain arm, and its speculative arm with the
      speed-up's added);
    * ``coverage``: what the stored intervals cover, per family and per chip."""
    from speclib.calibration.conformal import ACCEPTANCE_RANGE

    delta = ACCEPTANCE_RANGE if delta is None else delta
    from speclib.calibration.conformal import band_scores, coverage_by, unit_quantile

    held = stored_held_out("model") if held is None else held
    scores = np.concatenate([band_scores(p, delta)[p.scored] for p in held.runs])
    units = np.concatenate([[p.run.family] * int(p.scored.sum()) for p in held.runs])
    dec = np.abs(np.log(held.decode_predicted / held.decode_measured))
    dec_units = decode_groups("model")
    keep = np.isfinite(dec)
    dec, dec_units = dec[keep], dec_units[keep]

    def per_family(s, u):
        return {f: unit_quantile(s[u != f], u[u != f], level) for f in sorted(set(u))}

    return {"about": "The log half-widths of speclib's own calibrated intervals beyond their acceptance band "
                     f"(acceptance \u00b1{delta:g}): the pooled finite-sample {100 * level:.0f} % quantile of the stored "
                     "hold-out by model family's scores, each family weighing the same, per family over the other "
                     "families (cross-conformal), and over every family for a family the hold-out lacks. Written by "
                     "`python -m speclib.calibration.held_out --write-calibration` (or `--write-intervals`) from "
                     "data/calibration/held_out.json; "
                     "tests/test_conformal.py recomputes it by brute force.",
            "level": level, "unit": "model family", "acceptance_range": delta,
            "speedup": per_family(scores, units), "speedup_any": unit_quantile(scores, units, level),
            "decode": per_family(dec, dec_units), "decode_any": unit_quantile(dec, dec_units, level),
            "coverage": {"family": [list(r) for r in coverage_by(held, lambda p: p.run.family)],
                         "chip": [list(r) for r in coverage_by(held, lambda p: _feat.chip_key(p.run.chip))]}}


def write_library_intervals(path=None) -> dict:
    """Write :func:`library_intervals` to ``data/calibration/intervals.json``."""
    import json
    from pathlib import Path

    data = library_intervals()
    clean = json.loads(json.dumps(data).replace("Infinity", "null"))
    target = Path(path) if path is not None else Path(__file__).resolve().parents[1].joinpath(*LIBRARY_INTERVALS_FILE)
    target.write_text(json.dumps(clean, indent=1) + "\n", encoding="utf-8")
    return data


def _main(argv=None) -> int:  # pragma: no cover - a maintenance command
    import argparse

    parser = argparse.ArgumentParser(prog="python -m speclib.calibration.held_out")
    parser.add_argument("--write-calibration", action="store_true")
    parser.add_argument("--write-intervals", action="store_true",
                        help="recompute the stored hold-outs' intervals from their stored predictions (no refit)")
    args = parser.parse_args(argv)
    if args.write_intervals and not args.write_calibration:
        rewrite_stored_intervals()
        write_library_intervals()
    if args.write_calibration:
        write_calibration()
        write_held_out()
        _stored.cache_clear()  # the intervals read the hold-out just written
        stored_held_out.cache_clear()
        write_library_intervals()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
