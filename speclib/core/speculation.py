"""How far ahead to speculate: the throughput speedup of a draft length gamma
over plain decoding, and the draft length gamma* that maximises it.

Acceptance is either i.i.d. (``alpha`` a number or an array of numbers) or a
measured per-position survival curve (``alpha`` a
:class:`speclib.core.acceptance.SurvivalCurve`). The step costs come from the
single-GPU :class:`speclib.core.cost.CostModel` of ``model`` on ``hardware``, or
from any cost model passed as ``cost_model=`` (for example
:func:`speclib.core.parallel.expert_parallel_cost_model`). The speedup's closed form
is in :mod:`speclib.formulas.speculation`.

How a speculative step is priced:

* the paper's ledger (the default): one representative layer's
  per-component rooflines (:class:`speclib.core.cost.CostModel`), the drafter a
  constant fraction ``c_draft`` of a plain step;
* the whole step (the sequel's): every layer and the output head in
  seconds (:class:`speclib.core.step.StepModel`), with a drafter priced by
  its own roofline (``drafter=``), under either composition rule
  (``roofline="per-component"`` or ``"aggregate"``). It is used as soon as
  a drafter preset is given, the aggregate rule is asked for, or the model
  is a hybrid (one layer cannot stand for layers of two kinds).
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_int, scalar_or_array
from ..presets import resolve
from . import acceptance as _acc
from . import calibrated as _cal
from . import capacity as _capacity
from . import cost as _cost
from . import drafters as _draft
from . import step as _step
from .cost import check_batch, check_context
from .pricing import LedgerPricing, StepPricing



def pricing(model=None, hardware=None, *, c_draft=None, drafter=None, roofline: str = "per-component",
            query_bytes: bool = False, cost_model=None, step_time: str = "roofline", tp: int = 1,
            engine: str = _cal.DEFAULT_ENGINE, routing=None):
    """How a speculative step of ``model`` on ``hardware`` is priced (see the
    module notes): a :class:`LedgerPricing` (the paper's) or a
    :class:`StepPricing` (the whole step, with ``drafter``).

    ``step_time``: ``"roofline"`` (the lower bound, default) or
    ``"calibrated"``, which prices every step, verify and drafter included,
    with the roofline calibrated on measured decoding
    (:mod:`speclib.core.calibrated`; the whole step in seconds, served by
    ``engine``). ``tp``: GPUs the model is split over, evenly (the paper's
    ledger prices ratios, which ``tp`` leaves unchanged; the whole step in
    seconds divides by it; the calibrated step adds its fixed costs once).
    ``routing``: a measured expert popularity in place of uniform routing
    (the whole step; see :func:`speclib.core.moe.experts_activated`). With
    ``cost_model`` (e.g. an expert-parallel ledger), ``step_time="calibrated"``
    prices the ledger's layer times the model's layers in seconds, plus the
    calibrated per-step costs (:class:`speclib.core.calibrated.CalibratedLedger`).
    """
    roofline = _step.check_roofline(roofline)
    step_time = _cal.check_step_time(step_time)
    tp = checked_int("tp", tp, lo=1, hi=_capacity.MAX_TP)
    if cost_model is not None:
        if model is not None or hardware is not None:
            raise ValueError("give either cost_model or model/hardware, not both (cost_model already fixes the model "
                             "and chip)")
        if not all(hasattr(cost_model, m) for m in ("decode", "verify")):
            raise ValueError(f"cost_model must have decode(B, S) and verify(B, width, S) methods; got {cost_model!r}")
        if drafter is not None or roofline != "per-component":
            raise ValueError("cost_model prices the paper's per-layer ledger; drafter= and roofline='aggregate' "
                             "price the whole model's step")
        if routing is not None or tp != 1:
            raise ValueError("cost_model prices the paper's per-layer ledger on one GPU; tp= and routing= price the "
                             "whole model's step")
        if _cal.calibration_of(step_time) is not None:  # the ledger as a whole step in seconds, plus its costs
            cost_model = _cal.CalibratedLedger(cost_model, engine=engine, calibration=_cal.calibration_of(step_time))
        return LedgerPricing(cost_model, _draft.resolve_drafter(None, c_draft, None))
    m, hw = resolve(model, hardware)
    whole_step = drafter is not None or roofline != "per-component" or m.is_hybrid or step_time != "roofline" \
        or routing is not None
    if not whole_step:
        return LedgerPricing(_cost.cost_model(m, hw, query_bytes), _draft.resolve_drafter(None, c_draft, hw))
    if query_bytes:
        raise ValueError("query_bytes is an option of the paper's per-layer ledger; the whole-model step leaves "
                         "the query bytes out, as the sequel does")
    base = _step.step_model(m, hw, roofline=roofline, routing=routing)
    if _cal.calibration_of(step_time) is not None:
        target = _cal.CalibratedStepModel(base, hw, tp=tp, engine=engine, calibration=_cal.calibration_of(step_time))
    else:
        target = base if tp == 1 else _cal.TensorParallelStep(base, tp)
    drafting = _draft.resolve_drafter(drafter, c_draft, hw, roofline=roofline)
    if target is not base and isinstance(drafting, _draft.PricedDrafter):
        drafting = _cal.ScaledDrafter(drafting, target)
    return StepPricing(target, drafting)


def _acceptance(alpha, priced):
    """``alpha`` as i.i.d. acceptances or a survival curve; None means the
    drafter preset's measured curve."""
    if alpha is None:
        if not isinstance(priced, StepPricing):
            raise ValueError("alpha must be given (an acceptance in [0, 1] or a SurvivalCurve): only a drafter "
                             "preset brings a measured survival curve")
        return priced.measured_acceptance()
    return alpha if isinstance(alpha, _acc.SurvivalCurve) else _acc.check_alpha(alpha)


def committed(acceptance, gamma):
    """N for checked ``gamma``: i.i.d. alphas or a survival curve."""
    if isinstance(acceptance, _acc.SurvivalCurve):
        return _acc.committed_from_curve(acceptance, gamma)
    return _acc.committed_numeric(acceptance, gamma)


def _checked_gamma(gamma, acceptance, priced):
    if isinstance(acceptance, _acc.SurvivalCurve):
        gamma_arr = _acc.check_gamma_for_curve(gamma, acceptance)
    else:
        gamma_arr = _acc.check_gamma(gamma)
    return _draft.check_gamma_for_drafter(gamma_arr, priced.drafter)


def speedup(alpha, gamma, B, S, c_draft=None, model=None, hardware=None, *, drafter=None,
            roofline: str = "per-component", query_bytes: bool = False, cost_model=None, step_time: str = "roofline",
            tp: int = 1, engine: str = _cal.DEFAULT_ENGINE, routing=None):
    """Throughput of speculative decoding with draft length ``gamma`` relative to
    plain decoding, at batch ``B`` sequences and context ``S``; broadcasts.

    ``alpha``: the i.i.d. acceptance (a number or array), or a
    :class:`~speclib.core.acceptance.SurvivalCurve` for depth-dependent acceptance
    (``gamma`` then at most the curve's length), or None with a drafter preset
    (its measured curve). ``gamma = 0`` gives exactly 1. ``c_draft`` is the
    paper's drafter cost per drafted token as a fraction of a plain decode
    step (0.1 unless given); ``drafter`` instead names a drafter priced by its
    own roofline (:func:`speclib.presets.drafter`), ``roofline`` how a step's
    components compose (see the module notes). ``cost_model`` replaces the
    single-GPU ledger of ``model`` on ``hardware``. ``step_time``
    (``"roofline"`` or ``"calibrated"``), ``tp``, ``engine`` and ``routing``:
    see :func:`pricing`.
    """
    B_arr, S_arr = check_batch(B), check_context(S)
    priced = pricing(model, hardware, c_draft=c_draft, drafter=drafter, roofline=roofline, query_bytes=query_bytes,
                     cost_model=cost_model, step_time=step_time, tp=tp, engine=engine, routing=routing)
    acceptance = _acceptance(alpha, priced)
    gamma_arr = _checked_gamma(gamma, acceptance, priced)
    return scalar_or_array(priced.speedup(committed(acceptance, gamma_arr), gamma_arr, B_arr, S_arr))


def best_gamma(priced, acceptance, B, S, gamma_max: int = 64):
    """gamma* and its speedup for a checked acceptance (i.i.d. alphas or a
    survival curve) and checked arrays ``B``, ``S`` under ``priced``: the
    argmax over gamma in {0, ..., gamma_max}, capped at the curve's length and
    the drafter's block; ties go to the shorter draft."""
    if isinstance(acceptance, _acc.SurvivalCurve):
        B, S = priced.broadcast(B, S)
        gamma_max = min(gamma_max, len(acceptance))
    else:
        acceptance, B, S = np.broadcast_arrays(acceptance, B, S)
        B, S = priced.broadcast(B, S)
        acceptance = np.broadcast_to(acceptance, B.shape)
    if priced.max_gamma is not None:
        gamma_max = min(gamma_max, priced.max_gamma)
    gammas = np.arange(gamma_max + 1, dtype=float).reshape((-1,) + (1,) * B.ndim)
    table = priced.speedup(committed(acceptance, gammas), gammas, B, S)
    best = np.argmax(table, axis=0)
    best_speedup = np.take_along_axis(table, best[None], axis=0)[0]
    if best.ndim == 0:
        return int(best), float(best_speedup)
    return best, best_speedup


def optimal_gamma(alpha, B, S, c_draft=None, model=None, hardware=None, gamma_max: int = 64, *, drafter=None,
                  roofline: str = "per-component", query_bytes: bool = False, cost_model=None,
                  step_time: str = "roofline", tp: int = 1, engine: str = _cal.DEFAULT_ENGINE, routing=None):
    """The draft length gamma* in {0, ..., gamma_max} with the highest speedup,
    and that speedup; arrays broadcast over ``alpha``, ``B``, ``S``, ``c_draft``.

    ``alpha`` may be a :class:`~speclib.core.acceptance.SurvivalCurve` instead of
    an i.i.d. acceptance; the search then stops at the curve's length (no
    survival is known past it): gamma in {0, ..., min(gamma_max, len(curve))};
    and at a DFlash drafter's block. gamma* = 0 means plain decoding wins
    (speedup exactly 1). Ties go to the shorter draft. With a drafter priced
    by its roofline this is the sequel's priced policy: at a fixed batch the
    highest speedup is the highest throughput (:func:`throughput`). The other
    arguments are :func:`speedup`'s.
    """
    B_arr, S_arr = check_batch(B), check_context(S)
    gamma_max = checked_int("gamma_max", gamma_max, lo=0, hi=4096)
    priced = pricing(model, hardware, c_draft=c_draft, drafter=drafter, roofline=roofline, query_bytes=query_bytes,
                     cost_model=cost_model, step_time=step_time, tp=tp, engine=engine, routing=routing)
    return best_gamma(priced, _acceptance(alpha, priced), B_arr, S_arr, gamma_max)


def throughput(B, gamma, S, *, model=None, hardware=None, drafter=None, c_draft=None, acceptance=None,
               roofline: str = "per-component", step_time: str = "roofline", tp: int = 1,
               engine: str = _cal.DEFAULT_ENGINE, routing=None):
    """Committed output tokens per second of ``B`` sequences decoding with
    draft length ``gamma`` at context ``S`` (the whole model's step in
    seconds; ``gamma = 0`` is plain decoding); broadcasts.

    ``drafter``: a drafter preset priced by its own roofline, or None for
    the paper's constant ``c_draft`` (0.1 unless given). ``acceptance``: an
    i.i.d. alpha, a :class:`~speclib.core.acceptance.SurvivalCurve`, or None for
    the drafter preset's measured curve. ``roofline``: ``"per-component"`` or
    ``"aggregate"`` (the sequel's simulator). ``step_time``, ``tp``,
    ``engine``, ``routing``: see :func:`pricing` (with ``tp`` GPUs, the
    tokens per second of the whole group decoding B sequences).
    """
    B_arr, S_arr = check_batch(B), check_context(S)
    priced = pricing(model, hardware, c_draft=c_draft, drafter=drafter, roofline=roofline, step_time=step_time,
                     tp=tp, engine=engine, routing=routing)
    if isinstance(priced, LedgerPricing):  # the whole step in seconds, even where the ledger would do
        m, hw = resolve(model, hardware)
        priced = StepPricing(_step.step_model(m, hw, roofline=roofline) if tp == 1 else
                             _cal.TensorParallelStep(_step.step_model(m, hw, roofline=roofline), tp),
                             _draft.resolve_drafter(drafter, c_draft, hw, roofline=roofline))
    accepted = _acceptance(acceptance, priced)
    gamma_arr = _checked_gamma(gamma, accepted, priced)
    return scalar_or_array(priced.throughput(B_arr, gamma_arr, S_arr, accepted))


# The whole-step pieces, importable from here too.
step_model = _step.step_model
resolve_drafter = _draft.resolve_drafter
