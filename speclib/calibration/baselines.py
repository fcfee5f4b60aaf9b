"""The null baselines every held-out figure of the calibrated step is shown
beside, each scored on exactly the points, pairs or sweeps the step is
scored on (a figure with no baseline beside it is a hit rate, not a skill):

* the sign of the gain: **always a gain** (every speed-up above 1x);
* the best draft length within one: **the best constant draft length**,
  the one constant that does best on the other groups' (run, batch) pairs,
  chosen without the group it is scored on (:func:`constant_draft`);
* the direction of the gain with batch: **the gain falls with batch**;
* the speed-up itself: **as measured at the run's smallest batch**, at the
  same draft length (:func:`smallest_batch`), scored on the points past
  that batch that have one there: its error, its sign, its direction (flat)
  and its best draft (the one measured best at the smallest batch);
* decode TPOT: **the median of the same chip and engine**, over the decode
  runs of the other groups; where a chip is held out, of the same engine
  (:func:`same_chip_engine_tpot`).

A baseline chosen on every run (a constant draft picked on all pairs) is
in-sample and says so; :func:`skill_rows` puts each held-out figure beside
its baselines for the book, the benchmark and the command line.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A sweep needs this many batches at one draft length for the direction of
#: its gain with batch to be scored.
SWEEP_BATCHES = 3
#: A gain that changes by less than this (in log, per doubling of the batch)
#: counts as flat: neither falling nor rising.
FLAT_SLOPE = 0.01


def gain_slope(batch, gain) -> float:
    """The least-squares slope of log ``gain`` against log2 ``batch``: how
    much the gain changes (in log) each time the batch doubles."""
    x, y = np.log2(np.asarray(batch, dtype=float)), np.log(np.asarray(gain, dtype=float))
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def direction(slope: float) -> int:
    """-1 (the gain falls with batch), 0 (flat: within :data:`FLAT_SLOPE`) or +1 (it rises)."""
    return 0 if abs(slope) <= FLAT_SLOPE else int(np.sign(slope))


def direction_rows(preds) -> list:
    """:meth:`~speclib.calibration.held_out.HeldOut.directions` of ``preds``."""
    rows = []
    for p, g, at in sweeps(preds):
        m, q = gain_slope(p.batch[at], p.measured[at]), gain_slope(p.batch[at], p.predicted[at])
        rows.append((p.run.id, g, tuple(int(b) for b in p.batch[at]), m, q, direction(m) == direction(q)))
    return rows


def sweeps(preds) -> list:
    """(prediction, gamma, the points' mask) for each run's points at one draft
    length over :data:`SWEEP_BATCHES` or more batches (every point, the one
    that set a fitted acceptance included: a direction is a shape)."""
    out = []
    for p in preds:
        for g in np.unique(p.gamma):
            at = p.gamma == g
            if np.unique(p.batch[at]).size >= SWEEP_BATCHES:
                out.append((p, int(g), at))
    return out



#: The draft lengths a constant draft is chosen from.
CONSTANT_DRAFTS = tuple(range(1, 9))


@dataclass(frozen=True)
class Score:
    """A figure scored on some items: ``right`` of ``n`` (a share), or an
    error (``value``, lower is better) over ``n`` items."""

    n: int
    right: int = None
    value: float = None

    @property
    def share(self) -> float:
        return self.right / self.n if self.n and self.right is not None else float("nan")

    def text(self) -> str:
        if self.right is not None:
            return f"{self.right} of {self.n}"
        return "\u2013" if self.value is None or not np.isfinite(self.value) else f"{100 * self.value:.1f} %"


def _speedup_points(preds):
    """(measured, predicted) of the scored speed-up points of ``preds``."""
    m = [p.measured[p.scored] for p in preds if p.is_speedup]
    q = [p.predicted[p.scored] for p in preds if p.is_speedup]
    return (np.concatenate(m), np.concatenate(q)) if m else (np.zeros(0), np.zeros(0))


def sign_scores(preds) -> tuple:
    """(the step, always a gain): the scored speed-up points on the side of
    1x they were measured on."""
    m, q = _speedup_points(preds)
    return Score(int(m.size), int(np.sum((m > 1.0) == (q > 1.0)))), Score(int(m.size), int(np.sum(m > 1.0)))


def direction_scores(rows) -> tuple:
    """(the step, the gain falls with batch) over ``rows``, the sweeps of
    :func:`speclib.calibration.held_out.direction_rows`: (run, gamma, batches,
    measured slope, predicted slope, right)."""
    return (Score(len(rows), sum(bool(r[-1]) for r in rows)),
            Score(len(rows), sum(direction(r[3]) == -1 for r in rows)))


def _pairs(preds, unit_of):
    """(unit, measured best draft, predicted) of every (run, batch) pair of ``preds``."""
    return [(unit_of(p), m, q) for p in preds for m, q in p.best.values()]


def _constant_hits(pairs, c) -> int:
    return sum(abs(m - c) <= 1 for _, m, _ in pairs)


def best_constant(pairs, drafts=CONSTANT_DRAFTS) -> int:
    """The constant draft length with the most of ``pairs`` (``(unit,
    measured, predicted)``) within one of the measured best; a tie goes to
    the shorter draft."""
    return max(drafts, key=lambda c: (_constant_hits(pairs, c), -c))


def constant_draft(preds, unit_of, drafts=CONSTANT_DRAFTS) -> tuple:
    """(the step, the best constant draft held out, the best constant draft
    in-sample, {unit: the constant chosen without it}) on the (run, batch)
    pairs of ``preds``: the step's predicted best within one of the
    measured; the constant chosen on the other units' pairs and scored on
    the unit's (``unit_of(prediction)``: the group it is held out with); and
    the one constant best on every pair (in-sample: chosen on what it is
    scored on)."""
    pairs = _pairs(preds, unit_of)
    step = Score(len(pairs), sum(abs(m - q) <= 1 for _, m, q in pairs))
    chosen, hits = {}, 0
    for u in sorted({u for u, _, _ in pairs}):
        chosen[u] = best_constant([t for t in pairs if t[0] != u], drafts)
        hits += _constant_hits([t for t in pairs if t[0] == u], chosen[u])
    c = best_constant(pairs, drafts)
    return step, Score(len(pairs), hits), Score(len(pairs), _constant_hits(pairs, c)), chosen


def smallest_batch(p) -> tuple:
    """(mask of ``p``'s points, the baseline there): each scored point past
    the run's smallest batch with a point measured at the smallest batch and
    the same draft length, predicted as that measurement (a speed-up, or a
    ratio between draft lengths, as the run's points are)."""
    b0 = p.batch.min()
    at0 = {int(g): float(m) for b, g, m in zip(p.batch, p.gamma, p.measured) if b == b0}
    mask = np.array([bool(ok) and b != b0 and int(g) in at0 for b, g, ok in zip(p.batch, p.gamma, p.scored)],
                    dtype=bool)
    base = np.array([at0.get(int(g), np.nan) if k else np.nan for g, k in zip(p.gamma, mask)])
    return mask, base


def persistence_scores(preds) -> dict:
    """The step beside the speed-up as measured at each run's smallest batch,
    on the points :func:`smallest_batch` defines: {"points": n, "step": the
    step's median |error|, "baseline": the baseline's, "step_sign",
    "baseline_sign": :class:`Score` of the sign of the gain on those of them
    that are speed-ups}."""
    e_step, e_base, m_sp, q_sp, b_sp = [], [], [], [], []
    for p in preds:
        mask, base = smallest_batch(p)
        if not mask.any():
            continue
        e_step.append(p.predicted[mask] / p.measured[mask] - 1.0)
        e_base.append(base[mask] / p.measured[mask] - 1.0)
        if p.is_speedup:
            m_sp.append(p.measured[mask]), q_sp.append(p.predicted[mask]), b_sp.append(base[mask])
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0))
    e_step, e_base, m, q, b = map(cat, (e_step, e_base, m_sp, q_sp, b_sp))
    med = (lambda e: float(np.median(np.abs(e))) if e.size else float("nan"))
    return {"points": int(e_step.size), "step": Score(int(e_step.size), value=med(e_step)),
            "baseline": Score(int(e_base.size), value=med(e_base)),
            "step_sign": Score(int(m.size), int(np.sum((m > 1) == (q > 1)))),
            "baseline_sign": Score(int(m.size), int(np.sum((m > 1) == (b > 1))))}


def measured_best(p, batch) -> int:
    """The draft length measured best at ``batch`` in ``p``'s run (its
    highest measured point there)."""
    pts = [(g, v) for b, g, v in p.run.points if b == batch]
    return max(pts, key=lambda t: t[1])[0] if pts else None


def persistence_best(preds) -> tuple:
    """(the step, the best draft measured at the smallest batch) within one of
    the measured best, on the (run, batch) pairs past a run's smallest batch
    whose smallest batch measured two or more draft lengths."""
    step = base = n = 0
    for p in preds:
        b0 = min(b for b, _, _ in p.run.points)
        if sum(1 for b, _, _ in p.run.points if b == b0) < 2:
            continue
        g0 = measured_best(p, b0)
        for b, (m, q) in p.best.items():
            if b == b0:
                continue
            n += 1
            step += abs(m - q) <= 1
            base += abs(m - g0) <= 1
    return Score(n, int(step)), Score(n, int(base))


def persistence_direction(rows) -> tuple:
    """(the step, a gain that stays as it was at the smallest batch: flat)
    over the sweeps ``rows`` (:func:`direction_scores`)."""
    return (Score(len(rows), sum(bool(r[-1]) for r in rows)),
            Score(len(rows), sum(direction(r[3]) == 0 for r in rows)))


def same_chip_engine_tpot(measured, groups, chips, engines) -> np.ndarray:
    """Each decode run's TPOT predicted as the median measured TPOT of the
    decode runs on its chip and engine outside its group (``groups``: the
    group each run is held out with); where none is left (a chip held out),
    of the runs on its engine outside its group; NaN where none is left of
    either."""
    measured, groups = np.asarray(measured, dtype=float), np.asarray(groups)
    chips, engines = np.asarray(chips), np.asarray(engines)
    out = np.full(measured.size, np.nan)
    for same in ((chips, engines), (engines,)):
        keys = list(zip(*same))
        for key in set(keys):
            mine = np.array([k == key for k in keys], dtype=bool)
            for g in np.unique(groups[mine]):
                pool = measured[mine & (groups != g)]
                todo = mine & (groups == g) & np.isnan(out)
                if pool.size and todo.any():
                    out[todo] = np.median(pool)
    return out


def tpot_scores(measured, predicted, baseline) -> tuple:
    """(the step, the baseline): median |error| of decode TPOT on the runs
    where both are defined."""
    measured, predicted, baseline = (np.asarray(x, dtype=float) for x in (measured, predicted, baseline))
    ok = np.isfinite(predicted) & np.isfinite(baseline)
    med = (lambda x: float(np.median(np.abs(x[ok] / measured[ok] - 1.0))) if ok.any() else float("nan"))
    return Score(int(ok.sum()), value=med(predicted)), Score(int(ok.sum()), value=med(baseline))


def skill_rows(held, unit_of, decode_groups) -> list:
    """Every held-out figure of ``held`` (a :class:`~speclib.calibration.held_out.HeldOut`)
    beside its null baselines on the same items: (figure, items, the step,
    the baseline, the baseline's score, whether the step beats it: "yes",
    "no" or "tie"). ``unit_of(prediction)``: the group a run is held out
    with; ``decode_groups``: each decode run's
    (:func:`speclib.calibration.held_out.skill_of` passes both)."""
    from speclib.calibration.step_features import chip_key
    from speclib.calibration.step_fit import _problem

    preds = list(held.runs)
    unit = unit_of
    rows = []

    def add(figure, step: Score, name, base: Score, higher_better=True):
        a = step.share if step.right is not None else step.value
        b = base.share if base.right is not None else base.value
        verdict = "tie" if a == b else ("yes" if (a > b) == higher_better else "no")
        rows.append((figure, step.n, step.text(), name, base.text(), verdict))

    step, gain = sign_scores(preds)
    add("gain on the right side of 1\u00d7 (points)", step, "always a gain", gain)
    step, held_c, in_c, _ = constant_draft(preds, unit)
    add("best draft within \u00b11 ((run, batch) pairs)", step, "the best constant draft, chosen without the group",
        held_c)
    add("best draft within \u00b11 ((run, batch) pairs)", step, "the best constant draft on every pair (in-sample)",
        in_c)
    d = direction_rows(preds)
    step, falls = direction_scores(d)
    add("the gain's direction with batch (sweeps)", step, "the gain falls with batch", falls)
    step, flat = persistence_direction(d)
    add("the gain's direction with batch (sweeps)", step, "as at the smallest batch (flat)", flat)
    per = persistence_scores(preds)
    add("speed-up past the smallest batch, median |error| (points)", per["step"],
        "as measured at the smallest batch", per["baseline"], higher_better=False)
    add("the same points: gain on the right side of 1\u00d7", per["step_sign"], "as measured at the smallest batch",
        per["baseline_sign"])
    step, base = persistence_best(preds)
    add("best draft within \u00b11, past the smallest batch", step, "the best measured at the smallest batch", base)
    _, dec_y, dec_runs, _ = _problem()
    groups = np.asarray(decode_groups)
    base = same_chip_engine_tpot(dec_y, groups, [chip_key(r.chip) for r in dec_runs], [r.engine for r in dec_runs])
    step, med = tpot_scores(dec_y, held.decode_predicted, base)
    add("decode TPOT, median |error| (runs)", step,
        "the median of the same chip and engine (a chip held out: the same engine)", med, higher_better=False)
    return rows


# --- a form's skill over the baselines, the score a form is chosen on ----------------------

#: The columns of :func:`decision_counts`: for each decision, the step's
#: right, the baseline's right and the items, per run.
DECISION_COLUMNS = ("sign", "always a gain", "points", "best draft", "best constant draft", "pairs",
                    "direction", "the gain falls", "sweeps")


def decision_counts(preds, unit_of) -> np.ndarray:
    """A row per prediction of ``preds`` (:data:`DECISION_COLUMNS`): the
    step's and its baseline's right on the three decisions (the gain's side
    of 1x against always a gain; the best draft within one against the best
    constant draft chosen without the prediction's unit, ``unit_of``; the
    direction with batch against the gain falls) and how many items each
    has, so that a score over runs is a sum of rows."""
    preds = list(preds)
    chosen = constant_draft(preds, unit_of)[3]
    rows = []
    for p in preds:
        step, gain = sign_scores([p])
        pairs = _pairs([p], unit_of)
        c = chosen.get(unit_of(p))
        d = direction_rows([p])
        rows.append((step.right, gain.right, step.n,
                     sum(abs(m - q) <= 1 for _, m, q in pairs), _constant_hits(pairs, c) if pairs else 0, len(pairs),
                     sum(bool(r[-1]) for r in d), sum(direction(r[3]) == -1 for r in d), len(d)))
    return np.array(rows, dtype=np.int64).reshape(-1, len(DECISION_COLUMNS))


def decision_skill(counts) -> float:
    """The step's share right less its baseline's, averaged over the
    decisions that have items in ``counts`` (rows of :func:`decision_counts`,
    summed here): above 0, the step beats the baselines on the decisions
    on average; NaN with no items."""
    total = np.asarray(counts, dtype=float).reshape(-1, len(DECISION_COLUMNS)).sum(axis=0)
    parts = [(total[i] - total[i + 1]) / total[i + 2] for i in (0, 3, 6) if total[i + 2] > 0]
    return float(np.mean(parts)) if parts else float("nan")


def persistence_errors(p) -> tuple:
    """(the step's, the baseline's) relative errors on ``p``'s points past
    its run's smallest batch (:func:`smallest_batch`)."""
    mask, base = smallest_batch(p)
    return p.predicted[mask] / p.measured[mask] - 1.0, base[mask] / p.measured[mask] - 1.0


def error_skill(errors) -> float:
    """1 less the step's median |error| over the baseline's (the speed-up as
    measured at the run's smallest batch) on the same points, ``errors`` a
    :func:`persistence_errors` pair per run: above 0, the step is the more
    accurate; NaN with no points."""
    step = np.concatenate([e for e, _ in errors]) if errors else np.zeros(0)
    base = np.concatenate([b for _, b in errors]) if errors else np.zeros(0)
    if not step.size or not np.median(np.abs(base)) > 0:
        return float("nan")
    return float(1.0 - np.median(np.abs(step)) / np.median(np.abs(base)))


def trust_line(rows, words: str = "by model family") -> str:
    """One line of what the held-out figures of :func:`skill_rows` ``rows``
    say against their baselines, as the command line prints it after a
    calibrated answer: each figure, then its baseline's score, then how
    many of the baselines (the in-sample one left out) the step beats."""
    kept = [r for r in rows if "in-sample" not in r[3]]
    first = {}
    for fig, n, step, name, base, verdict in kept:
        first.setdefault(fig, (step, []))[1].append(f"{name}: {base}")
    parts = [f"{fig.split(' (')[0]} {step} ({'; '.join(bases)})" for fig, (step, bases) in first.items()]
    beats = sum(r[5] == "yes" for r in kept)
    return f"held out {words}: " + ", ".join(parts) + f"; it beats {beats} of {len(kept)} baselines"
