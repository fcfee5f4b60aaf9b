"""How far ahead to speculate: the throughput speedup of a draft length gamma
over plain decoding, and the draft length gamma* that maximises it.

Acceptance is either i.i.d. (``alpha`` a number or an array of numbers) or a
measured per-position survival curve (``alpha`` a
:class:`speclib.core.acceptance.SurvivalCurve`), sorted out once by
:meth:`speclib.core.acceptance.Acceptance.of`. The step costs come from a
:class:`speclib.core.deployment.Deployment` (``deployment=``): by default the
single-GPU :class:`speclib.core.cost.CostModel` of ``model`` on ``hardware``
(the shorthand), or any cost model the deployment names as ``cost_model``
(for example :func:`speclib.core.parallel.expert_parallel_cost_model`). The
speedup's closed form is in :mod:`speclib.formulas.speculation`.

How a speculative step is priced (:meth:`speclib.core.deployment.Deployment.pricing`):

* the paper's ledger (the default): one representative layer's
  per-component rooflines (:class:`speclib.core.cost.CostModel`), the drafter a
  constant fraction ``c_draft`` of a plain step
  (:class:`~speclib.core.pricing.LedgerPricing`);
* the whole step (the sequel's): every layer and the output head in
  seconds (:class:`speclib.core.step.StepModel`), with a drafter priced by
  its own roofline (the deployment's ``drafter``), under either composition
  rule (``roofline="per-component"`` or ``"aggregate"``)
  (:class:`~speclib.core.pricing.StepPricing`). It is used as soon as a
  drafter preset is given, the aggregate rule is asked for, the model is a
  hybrid (one layer cannot stand for layers of two kinds), the step time is
  calibrated or a routing is given.

What memory holds: priced whole, a deployment with a memory check (a
``reserve``, :attr:`~speclib.core.deployment.Deployment.memory_checked`)
reads a batch ``B`` as a closed loop's concurrency. An arm drafting gamma
tokens decodes R_gamma = min(B, M_gamma) sequences at once, M_gamma what
memory holds with the draft's cache slots
(:meth:`~speclib.core.deployment.Deployment.max_batch`, no more than M_0), and
the rest wait in the queue (their wait is time to a first token, not time
per output token): :meth:`~speclib.core.deployment.Deployment.running`, the
one place a batch is bounded. The throughput is R_gamma N / t_gamma(R_gamma),
and the speed-up at a concurrency is the ratio of the two arms' throughputs
(:data:`speclib.formulas.workload.concurrent_speedup_expr`; in a closed loop
each user's speed is the throughput over B, so it is each user's speed-up
too). Below both limits nothing changes. A draft whose slots leave room for
no sequence has no throughput (0: gamma* never takes it); where plain
decoding holds none either, an array's result is NaN and a call at one point
is refused with a ``ValueError`` naming ``context`` (``gamma`` for a draft
that does not fit). ``reserve=None`` is no memory check: every sequence
asked for runs at once, as the paper's and the sequel's figures assume. The
paper's one-layer ledger (:class:`~speclib.core.pricing.LedgerPricing`) is
dimensionless, not a deployment in seconds: it prices the batch as given.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._checks import checked_array, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from . import acceptance as _acc
from . import calibrated as _cal
from . import capacity as _capacity
from . import drafters as _draft
from . import moe as _moe
from . import optimum as _optimum
from . import step as _step
from .cost import check_batch, check_context
from .deployment import Deployment, deployment_of, refuse_unheld  # noqa: F401 - Deployment importable from here
from .pricing import LedgerPricing, StepPricing  # noqa: F401 - importable from here too
from ..presets import resolve as _resolve


def committed(acceptance, gamma):
    """N for checked ``gamma``: an :class:`~speclib.core.acceptance.Acceptance`
    (or anything :meth:`~speclib.core.acceptance.Acceptance.of` takes)."""
    return _acc.Acceptance.of(acceptance).committed(gamma)


def _checked_gamma(gamma, acceptance, priced):
    return _draft.check_gamma_for_drafter(acceptance.checked_gamma(gamma), priced.drafter)


def speedup(alpha, gamma, B, S, c_draft=None, model=None, hardware=None, *, deployment=None, interval=False):
    """Throughput of speculative decoding with draft length ``gamma`` relative to
    plain decoding, at batch ``B`` sequences and context ``S``; broadcasts.

    ``alpha``: the i.i.d. acceptance (a number or array), or a
    :class:`~speclib.core.acceptance.SurvivalCurve` for depth-dependent acceptance
    (``gamma`` then at most the curve's length), or None with a drafter preset
    (its measured curve); :meth:`~speclib.core.acceptance.Acceptance.of` sorts
    it out. ``gamma = 0`` gives exactly 1. ``c_draft`` is the paper's
    drafter cost per drafted token as a fraction of a plain decode step (0.1
    unless given here or in the deployment). ``deployment``: a
    :class:`~speclib.core.deployment.Deployment` saying how the step is priced
    (a drafter preset, the composition rule, a calibrated step, ``tp``,
    routing, a cost model, ...); ``model`` and ``hardware`` instead price
    the default deployment of that model on that chip.

    ``interval=True`` (a calibrated step): an
    :class:`~speclib.core.calibrated.Interval`, the speedup with its 80 %
    interval over the calibration's bootstrap draws.

    What memory holds (see the module notes): priced whole with a memory
    check, ``B`` is a concurrency and each arm runs no more sequences than
    memory holds with its draft, the rest queued; the speed-up is the ratio
    of the two arms' throughputs (0 for a draft whose slots leave room for no
    sequence; NaN, or for one point a ``ValueError``, where plain decoding
    holds none). ``reserve=None`` in the deployment prices every sequence at
    once; the paper's ledger prices the batch as given.
    """
    B_arr, S_arr = check_batch(B), check_context(S)
    dep = deployment_of(deployment, model, hardware)
    priced = dep.pricing(c_draft)
    acceptance = _acc.Acceptance.of(alpha, priced)
    gamma_arr = _checked_gamma(gamma, acceptance, priced)
    refuse_unheld(dep, priced, B_arr, S_arr, gamma_arr)
    value = scalar_or_array(priced.speedup(acceptance.committed(gamma_arr), gamma_arr, B_arr, S_arr))
    if not interval:
        return value
    return _interval(dep, c_draft, acceptance, gamma_arr, B_arr, S_arr, value)


def tree_speedup(accept_length, B, S, *, depth, width, topk=1, c_draft=None, deployment=None):
    """Throughput of speculative decoding with a draft tree relative to plain
    decoding, at batch ``B`` and context ``S``; broadcasts over
    ``accept_length``, ``B`` and ``S``.

    A tree drafts ``depth`` levels, expanding ``topk`` candidates per
    sequence at each (SGLang's ``--speculative-num-steps`` and
    ``--speculative-eagle-topk``), and the target verifies ``width``
    positions per sequence (``--speculative-num-draft-tokens``, the root
    included; TensorRT-LLM's dynamic trees likewise): a step is priced as a
    verify of ``width`` positions, what a chain of ``width - 1`` drafted
    tokens costs, plus ``depth`` drafter passes over ``topk`` positions per
    sequence. ``accept_length``: the tokens a step commits, measured (what
    SGLang's log prints as ``accept len``, which ``speclib acceptance``
    reads), in [1, depth + 1]. A chain is ``topk=1``, ``width=depth + 1``.
    ``deployment`` (None: the default) and ``c_draft``: as :func:`speedup`,
    whose bound by what memory holds it shares, the tree's cache slots
    counted as those of a chain of ``width - 1`` drafted tokens."""
    B_arr, S_arr = check_batch(B), check_context(S)
    depth = checked_int("depth", depth, lo=1, hi=4096)
    topk = checked_int("topk", topk, lo=1, hi=4096)
    width = checked_int("width", width, lo=depth + 1, hi=1 + depth * topk)
    n = checked_array("accept_length", accept_length, lo=1, hi=depth + 1)
    dep = deployment_of(deployment)
    priced = dep.pricing(c_draft)
    if priced.max_gamma is not None and depth > priced.max_gamma:
        raise ValueError(f"depth must be at most {priced.max_gamma} ({priced.drafter.max_gamma_reason}); "
                         f"got {depth}")
    refuse_unheld(dep, priced, B_arr, S_arr, np.asarray(width - 1.0))
    return scalar_or_array(priced.tree_speedup(n, float(depth), float(topk), float(width), B_arr, S_arr))


def _interval(dep, c_draft, acceptance, gamma, B, S, value):
    """``value`` (the speedup of ``gamma``) with its cross-conformal interval
    by model family (:func:`speclib.core.calibrated.interval_name`): priced
    at acceptance less and more its stated range, widened by the stored
    hold-out's half-width for the model's family. Needs a calibrated step
    (the hold-out's scores are its)."""
    _cal.draws_of(dep.step_time)  # a ValueError where the step is not a calibrated one
    n = acceptance.committed(gamma)
    lo, hi = _cal.conformal_bounds(np.broadcast_to(value, np.shape(value)), np.broadcast_to(n, np.shape(value)),
                                   tuple(np.broadcast_to(x, np.shape(value))
                                         for x in _cal.acceptance_range(acceptance, gamma)), dep.model)
    plain = np.broadcast_to(np.asarray(gamma) == 0, np.shape(value))  # no draft: exactly plain decoding
    lo, hi = np.where(plain, value, lo), np.where(plain, value, hi)
    return _cal.Interval(value, scalar_or_array(lo), scalar_or_array(hi))


def speedup_table(priced, acceptance, B, S, top: int):
    """speedup[gamma, ...] for gamma in 0..``top`` under ``priced``, for a
    checked acceptance and checked arrays ``B``, ``S`` (broadcast together):
    the table :func:`best_gamma` and a schedule take the argmax of."""
    acceptance = _acc.Acceptance.of(acceptance, priced)
    if acceptance.curve is not None:
        B, S = priced.broadcast(B, S)
    else:
        alpha, B, S = np.broadcast_arrays(acceptance.alpha, B, S)
        B, S = priced.broadcast(B, S)
        acceptance = _acc.Acceptance(alpha=np.broadcast_to(alpha, B.shape))
    gammas = np.arange(top + 1, dtype=float).reshape((-1,) + (1,) * B.ndim)
    return priced.speedup(acceptance.committed(gammas), gammas, B, S)


def best_gamma(priced, acceptance, B, S, gamma_max: int = 64):
    """gamma* and its speedup for a checked acceptance (an
    :class:`~speclib.core.acceptance.Acceptance`, or i.i.d. alphas or a
    survival curve) and checked arrays ``B``, ``S`` under ``priced``: the
    argmax over gamma in {0, ..., gamma_max}, capped at the curve's length and
    the drafter's block; ties go to the shorter draft."""
    acceptance = _acc.Acceptance.of(acceptance, priced)
    for cap in (acceptance.max_gamma, priced.max_gamma):
        if cap is not None:
            gamma_max = min(gamma_max, cap)
    table = speedup_table(priced, acceptance, B, S, gamma_max)
    best = np.argmax(table, axis=0)
    best_speedup = np.take_along_axis(table, best[None], axis=0)[0]
    if best.ndim == 0:
        return int(best), float(best_speedup)
    return best, best_speedup


def optimal_gamma(alpha, B, S, c_draft=None, model=None, hardware=None, gamma_max: int = 64, *, deployment=None,
                  interval=False):
    """The draft length gamma* in {0, ..., gamma_max} with the highest speedup,
    and that speedup; arrays broadcast over ``alpha``, ``B``, ``S``, ``c_draft``.

    ``alpha`` may be a :class:`~speclib.core.acceptance.SurvivalCurve` instead of
    an i.i.d. acceptance; the search then stops at the curve's length (no
    survival is known past it): gamma in {0, ..., min(gamma_max, len(curve))};
    and at a DFlash drafter's block. gamma* = 0 means plain decoding wins
    (speedup exactly 1). Ties go to the shorter draft. With a drafter priced
    by its roofline this is the sequel's priced policy: at a fixed batch the
    highest speedup is the highest throughput (:func:`throughput`). The other
    arguments are :func:`speedup`'s; with ``interval=True`` the speedup is
    an :class:`~speclib.core.calibrated.Interval` (gamma* is the fit's).

    What memory holds (see the module notes): priced whole with a memory
    check, ``B`` is a concurrency and each draft length is priced at the
    sequences memory holds with its draft slots, the rest queued, so gamma*
    is the draft length with the most throughput at that concurrency; a
    draft whose slots leave room for no sequence is never chosen. Where
    plain decoding holds no sequence, gamma* is 0 with a NaN speedup (for
    one point: a ``ValueError`` naming ``context``). ``reserve=None`` in the
    deployment prices every sequence at once, as the paper's and the
    sequel's figures do; the paper's ledger prices the batch as given.
    """
    B_arr, S_arr = check_batch(B), check_context(S)
    gamma_max = checked_int("gamma_max", gamma_max, lo=0, hi=4096)
    dep = deployment_of(deployment, model, hardware)
    priced = dep.pricing(c_draft)
    acceptance = _acc.Acceptance.of(alpha, priced)
    refuse_unheld(dep, priced, B_arr, S_arr)
    best, value = best_gamma(priced, acceptance, B_arr, S_arr, gamma_max)
    if not interval:
        return best, value
    gamma = np.asarray(best, dtype=float)
    if acceptance.curve is None:
        acceptance = _acc.Acceptance(alpha=np.broadcast_to(acceptance.alpha, np.shape(value)))
    return best, _interval(dep, c_draft, acceptance, gamma, B_arr, S_arr, value)


def draft_interval(dep, c_draft, acceptance, table, B, S):
    """The interval, at each batch, of the speed-up of the best draft length
    of at least one (``table``: :func:`speedup_table`'s, at the checked
    ``B`` and ``S``): its :data:`~speclib.core.calibrated.INTERVAL_LEVEL`
    cross-conformal interval by model family
    (:func:`speclib.core.calibrated.interval_name`), acceptance's range and
    the stored hold-out's half-width for the model's family: (lo, hi); None
    without a calibrated step (the roofline, a fit without the shipped
    calibration's draws)."""
    calibration = _cal.calibration_of(dep.step_time)
    if calibration is None or not calibration.draws or table.shape[0] < 2:
        return None
    g = (1 + np.argmax(table[1:], axis=0)).astype(float)  # the best draft length that speculates
    acceptance = _acc.Acceptance.of(acceptance)
    if acceptance.curve is None:
        acceptance = _acc.Acceptance(alpha=np.broadcast_to(acceptance.alpha, np.shape(g)))
    value = dep.pricing(c_draft).speedup(acceptance.committed(g), g, B, S)
    return _cal.conformal_bounds(value, acceptance.committed(g), _cal.acceptance_range(acceptance, g), dep.model)


def stops_paying(alpha, S, c_draft=None, *, deployment, max_batch: int = 4096, gamma_max: int = 64) -> dict:
    """Where speculation stops paying as batch grows, over the batches that
    fit in the deployment's memory (:func:`speclib.core.capacity.max_batch`,
    up to ``max_batch``), each draft length priced at the sequences memory
    holds with its slots (the rest queued, as :func:`optimal_gamma` prices a
    concurrency): ``at``, the smallest batch from which gamma* is 0 at
    every larger batch (None: it pays at every batch that fits); under a
    calibrated step with draws, ``may_from``, from which the 80 % interval of
    the best draft's speed-up reaches below 1x at every larger batch, and
    ``surely_from``, from which it lies wholly below (None where that never
    happens); ``max_batch``, the largest batch looked at."""
    dep = deployment_of(deployment)
    priced = dep.pricing(c_draft)
    acceptance = _acc.Acceptance.of(alpha, priced)
    top_batch = checked_int("max_batch", max_batch, lo=1, hi=1 << 20)
    if dep.cost_model is None and dep.reserve is not None:
        top_batch = max(1, min(top_batch, int(dep.max_batch(float(S)))))
    B = np.arange(1, top_batch + 1, dtype=float)
    S_arr = np.full_like(B, float(check_context(S)))
    top = min(x for x in (gamma_max, acceptance.max_gamma, priced.max_gamma) if x is not None)
    table = speedup_table(priced, acceptance, B, S_arr, top)
    gamma = np.argmax(table, axis=0)

    def from_(mask):
        if not mask[-1]:
            return None
        return int(B[np.flatnonzero(~mask)[-1] + 1]) if (~mask).any() else 1

    out = {"at": from_(gamma == 0), "may_from": None, "surely_from": None, "max_batch": int(B[-1])}
    band = draft_interval(dep, c_draft, acceptance, table, B, S_arr)
    if band is not None:
        out["may_from"], out["surely_from"] = from_(band[0] < 1.0), from_(band[1] < 1.0)
    return out


def zero_gamma_bands(batches, gamma_star):
    """Runs of consecutive ``batches`` where ``gamma_star`` is 0, as a list of
    ``(first, last, kind)``; ``kind`` is ``"gutter"`` when speculation pays on
    both sides of the run, ``"edge"`` otherwise (the run touches either end)."""
    batches = np.asarray(batches, dtype=float)
    zero = np.asarray(gamma_star) == 0
    if batches.shape != zero.shape or batches.ndim != 1:
        raise ValueError("batches and gamma_star must be 1-D arrays of the same length")
    edges = np.flatnonzero(np.diff(np.concatenate([[0], zero.astype(np.int8), [0]])))
    return [(float(batches[a]), float(batches[b - 1]), "gutter" if 0 < a and b < zero.size else "edge")
            for a, b in zip(edges[::2], edges[1::2])]


def gamma_regions(alpha=0.75, S=4096, c_draft=0.10, model=None, hardware=None, batches=None, gamma_max=64, *,
                  deployment=None):
    """Where speculation pays along a batch axis (default every whole batch
    from 1 to 30,000, Figure 3's), for ``model`` on ``hardware`` or as
    ``deployment`` prices it: ``bands`` (the runs with gamma* = 0, as
    from :func:`zero_gamma_bands`), ``gutters`` (those with speculation paying
    on both sides, as (first, last)), ``low_edge`` / ``high_edge`` (the run at
    the smallest / largest batch, or None; a run over every batch is the low
    edge), ``best_gamma``, ``best_batch`` and ``best_batch_to`` (the largest
    gamma* and the first and last batch reaching it: gamma* is a whole number,
    so its largest is a plateau of ties, :func:`speclib.core.optimum.optimum`),
    ``last_speculating`` (the largest batch with gamma* >
    0, None if there is none)."""
    B = np.arange(1.0, 30_001.0) if batches is None else np.asarray(batches, float)
    g, _ = optimal_gamma(alpha, B, S, c_draft, model, hardware, gamma_max, deployment=deployment)
    bands = zero_gamma_bands(B, g)
    edges = [(lo, hi) for lo, hi, kind in bands if kind == "edge"]
    positive = np.flatnonzero(g > 0)
    best = _optimum.optimum(B, g, "max")
    return {"bands": bands, "gutters": [(lo, hi) for lo, hi, kind in bands if kind == "gutter"],
            "low_edge": next(((lo, hi) for lo, hi in edges if lo == B[0]), None),
            "high_edge": next(((lo, hi) for lo, hi in edges if hi == B[-1] and lo != B[0]), None),
            "best_gamma": int(g.max()), "best_batch": best.ties[0], "best_batch_to": best.ties[1],
            "last_speculating": float(B[positive[-1]]) if positive.size else None}


def throughput(B, gamma, S, *, acceptance=None, c_draft=None, model=None, hardware=None, deployment=None):
    """Committed output tokens per second of ``B`` sequences decoding with
    draft length ``gamma`` at context ``S`` (the whole model's step in
    seconds; ``gamma = 0`` is plain decoding); broadcasts.

    ``acceptance``: an i.i.d. alpha, a
    :class:`~speclib.core.acceptance.SurvivalCurve`, or None for the drafter
    preset's measured curve. ``c_draft``: the paper's constant drafter cost
    (0.1 unless given) when the deployment has no drafter preset.
    ``deployment`` (or ``model`` and ``hardware``): see :func:`speedup`;
    with ``tp`` GPUs, the tokens per second of the whole group decoding B
    sequences. The whole step is priced even where the paper's ledger would
    do, so a deployment with a ``cost_model`` or ``query_bytes`` is refused.

    What memory holds (see the module notes): with the deployment's memory
    check, ``B`` is a concurrency and the throughput is that of the
    sequences memory holds with the draft's slots, the rest queued: flat
    above what memory holds; 0 for a draft whose slots leave room for no
    sequence, NaN where plain decoding holds none (for one point: a
    ``ValueError`` naming ``gamma`` or ``context``). ``reserve=None`` in the
    deployment prices every sequence at once, as the sequel's figures do.
    """
    B_arr, S_arr = check_batch(B), check_context(S)
    dep = deployment_of(deployment, model, hardware)
    priced = dep.pricing(c_draft, whole_step=True)
    accepted = _acc.Acceptance.of(acceptance, priced)
    gamma_arr = _checked_gamma(gamma, accepted, priced)
    refuse_unheld(dep, priced, B_arr, S_arr, gamma_arr)
    return scalar_or_array(priced.throughput(B_arr, gamma_arr, S_arr, accepted))


def against_iid(curve, B, S, c_draft=None, *, deployment=None) -> dict:
    """gamma* over the batches ``B`` (an array) under the survival ``curve``
    against the i.i.d. curve of the same first-position acceptance, searched
    over the same draft lengths: at how many batches they differ
    (``differs``), by how much at most (``max_diff``), how often the curve's
    is ``longer`` or ``shorter``; the largest ``shortfall`` 1 - best speedup
    / i.i.d. best speedup, the first batch ``at`` it, and gamma* there (``gamma``,
    ``iid_gamma``)."""
    g, s = optimal_gamma(curve, B, S, c_draft, deployment=deployment)
    g_iid, s_iid = optimal_gamma(curve.iid(), B, S, c_draft, deployment=deployment)
    shortfall, diff = 1 - s / s_iid, g - g_iid
    # the shortfall is flat over a range of batches (the same gamma pair, the
    # same ratio): the first of them, whatever the last bits of the sums
    worst = int(np.argmax(np.round(shortfall, 12)))
    return {"differs": np.count_nonzero(diff), "max_diff": np.max(np.abs(diff)), "longer": np.count_nonzero(diff > 0),
            "shorter": np.count_nonzero(diff < 0), "shortfall": shortfall[worst], "at": B[worst], "gamma": g[worst],
            "iid_gamma": g_iid[worst]}


def routing_skew(B, S, deployment=None, *, alpha=None, popularity=None, gamma_max: int = 16) -> dict:
    """What skewed expert routing does against uniform routing at the batches
    ``B`` (an array) for ``deployment`` (its model, chip, drafter or
    ``c_draft`` and attention; None: the default one): under each (keys
    ending ``_uniform`` and ``_skewed``; ``popularity`` None for the measured
    one), the routed experts per layer a plain step reads (``experts_``), a
    verify of 2 positions over a plain step (``tax_``), gamma* and its
    speedup (``gamma_``, ``speedup_``). ``alpha`` None: the drafter preset's
    measured survival."""
    dep = deployment_of(deployment)
    model = dep.model
    if model is None:
        raise ValueError("deployment: routing skew prices a model's experts; give the deployment a model and "
                         "hardware, not a cost_model")
    routings = {"uniform": np.full(model.ffn.n_routed, 1.0 / model.ffn.n_routed),
                "skewed": _moe.measured_popularity() if popularity is None else popularity}
    out = {}
    for key, routing in routings.items():
        pr = dep.replace(routing=routing).pricing()
        out[f"experts_{key}"] = pr.step_model.experts_touched(B, np.asarray(1.0))
        out[f"tax_{key}"] = pr.step_model.time(B, 2.0, S) / pr.step_model.time(B, 1.0, S)
        out[f"gamma_{key}"], out[f"speedup_{key}"] = best_gamma(pr, alpha, B, np.full(B.shape, float(S)), gamma_max)
    return out


# The whole-step pieces, importable from here too.
step_model = _step.step_model
resolve_drafter = _draft.resolve_drafter


def gutter_fixed_cost(alpha=0.75, S=4096, c_draft=0.10, model=None, hardware=None, *, deployment=None,
                      batches=None, gamma_max: int = 64) -> dict:
    """How deep the paper's gutter is, and the fixed time per step that
    removes it, on the paper's ledger (``deployment`` prices by the ledger;
    default DeepSeek-V4-Flash on one B200 as ``model`` and ``hardware`` name
    it) at i.i.d. acceptance ``alpha``, context ``S`` and drafter cost
    ``c_draft``, over ``batches`` (default every whole batch from 1 to 64).

    Returns ``gutters`` (runs of batches with gamma* = 0 and speculation
    paying on both sides, as :func:`gamma_regions` gives them),
    ``speedup_gamma1`` (the lowest speed-up of one drafted token over the
    gutter's batches) and ``best_speedup`` (the lowest, over them, of the
    best speed-up of any draft of 1 to ``gamma_max`` tokens), then the fixed
    cost per target step, plain and verify alike, at which the first batch
    of the gutter to need the most finds a draft that breaks even
    (:data:`speclib.formulas.speculation.fixed_cost_break_even_expr`,
    minimised over the draft length, maximised over the gutter's batches):
    ``fixed_share`` as a fraction of that batch's plain step, ``fixed_at`` the
    batch, and ``fixed_seconds`` in seconds of the whole model's step (the
    ledger's one layer times the model's layers, over the chip's memory
    bandwidth). Any fixed cost at least that large leaves no gutter. Empty
    gutters give None for the rest."""
    dep = deployment_of(deployment, model, hardware)
    if dep.whole_step:
        raise ValueError("deployment must price by the paper's ledger (a Deployment without a drafter preset, "
                         "step_time, routing or layout that prices the step whole)")
    priced = dep.pricing(c_draft)
    alpha_value = float(checked_array("alpha", alpha, lo=0, lo_open=True, hi=1, hi_open=True))
    S_value = float(check_context(S))
    gamma_max = checked_int("gamma_max", gamma_max, lo=1, hi=4096)
    B = np.arange(1.0, 65.0) if batches is None else np.asarray(check_batch(batches), dtype=float).ravel()
    g, _ = optimal_gamma(alpha_value, B, S_value, c_draft, gamma_max=gamma_max, deployment=dep)
    gutters = [(lo, hi) for lo, hi, kind in zero_gamma_bands(B, g) if kind == "gutter"]
    out = {"gutters": gutters, "speedup_gamma1": None, "best_speedup": None, "fixed_share": None,
           "fixed_at": None, "fixed_seconds": None}
    if not gutters:
        return out
    inside = np.zeros(B.shape, dtype=bool)
    for lo, hi in gutters:
        inside |= (B >= lo) & (B <= hi)
    Bg = B[inside]
    cm, c = priced.cost_model, float(priced.drafter.c)
    c0 = cm.decode(Bg, S_value)
    gammas = np.arange(1.0, gamma_max + 1.0)[:, None]
    n = _acc.committed_numeric(np.float64(alpha_value), gammas)
    cv = cm.verify(Bg[None, :], gammas + 1.0, S_value)
    speed = nf.speedup(n, c0, cv, c, gammas)
    with np.errstate(divide="ignore"):
        each = np.where(n - 1.0 > c * gammas, nf.fixed_cost_break_even(n, c0, cv, c, gammas), np.inf)
    need = np.maximum(each, 0.0).min(axis=0)  # the cheapest draft's
    at = int(np.argmax(need))
    layers = dep.model.n_layers
    out.update(speedup_gamma1=float(speed[0].min()), best_speedup=float(speed.max(axis=0).min()),
               fixed_share=float(need[at] / c0[at]), fixed_at=float(Bg[at]),
               fixed_seconds=None if layers is None else float(need[at] * layers / dep.hardware.memory_bandwidth))
    return out


def outside_the_layers(model="DeepSeek-V4-Flash") -> dict:
    """The weights a whole step reads that the paper's per-layer ledger
    leaves out: the output head and the routers (parameters). Refused for a
    model whose whole-step weights hold more than these besides its layers'
    attention projections (dense FFN layers, a hybrid's linear layers, a
    latent MoE's dense part), where "the rest" would not be the ledger's."""
    m, _ = _resolve(model, None)
    n_layers, n_ffn_layers, n_dense = m._layer_counts()
    if n_dense or m.is_hybrid or not m.ffn.is_moe or m.ffn.dense_params:
        raise ValueError(f"model must be a mixture-of-experts model whose layers are all alike (no dense FFN layers, "
                         f"no linear attention, no latent MoE); got {m.name}")
    total = m.outside_layers_params()
    head = int(nf.outside_layers_params(m.vocab_size, m.hidden_size, 0, 1))
    if m.step_architecture().dense_params != n_layers * m.attn_proj_params + total:
        raise RuntimeError(f"{m.name}: the whole step's dense weights are not its layers' attention projections plus "
                           "the head and routers; what lies outside the layers is not the ledger's")
    return {"head": head, "routers": total - head, "total": total}


def whole_step_gutter(model="DeepSeek-V4-Flash", hardware="B200", *, S=4096, c_draft=0.10, alpha=0.75, popularity=None,
                      max_batch=64, gamma_max=16) -> dict:
    """Where plain decoding beats every draft at small batch, on the whole
    step with each component its own roofline, at every whole batch up to
    ``max_batch``: the runs of gamma* = 0 as (first, last) under uniform
    routing (``"uniform"``), under the measured popularity (``"skewed"``),
    and under uniform routing with the weights outside the layers left out
    (``"layers_only"``: the whole step the paper's per-layer ledger prices,
    times its layers; see :func:`outside_the_layers`); and the least and the
    most the skewed speedup reaches over the uniform runs' batches
    (``"skewed_speedup"``)."""
    m, hw = _resolve(model, hardware)
    B = np.arange(1.0, max_batch + 1.0)
    drafter = _draft.resolve_drafter(None, c_draft, hw)
    uniform = np.full(m.ffn.n_routed, 1.0 / m.ffn.n_routed)
    arch = m.step_architecture()
    # the layers' own projections, at their own bytes: the head and routers (kept in bf16) left out
    layers_only = dataclasses.replace(arch, dense_params=arch.dense_params - outside_the_layers(m)["total"],
                                      dense_bytes=m.proj_weight_bytes, bf16_params=0.0)
    shares = {"uniform": uniform, "skewed": _moe.measured_popularity() if popularity is None else popularity}
    steps = {key: _step.step_model(m, hw, routing=routing, attention="paper") for key, routing in shares.items()}
    steps["layers_only"] = _step.StepModel(layers_only, hw, routing=uniform)
    out, speedups = {}, {}
    for key, sm in steps.items():
        g, speedups[key] = best_gamma(StepPricing(sm, drafter), alpha, B, np.full(B.shape, float(S)),
                                           gamma_max)
        out[key] = [(int(a), int(b)) for a, b, _ in zero_gamma_bands(B, g)]
    inside = np.zeros(B.shape, dtype=bool)
    for a, b in out["uniform"]:
        inside |= (B >= a) & (B <= b)
    out["skewed_speedup"] = ((float(speedups["skewed"][inside].min()), float(speedups["skewed"][inside].max()))
                             if inside.any() else None)
    return out
