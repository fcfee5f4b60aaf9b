"""What drafting costs, in seconds on the same clock as the target's step.

* :class:`ConstantDrafter`: the paper's assumption, each drafted token costs a
  fixed fraction c of the target's plain decode step;
* :class:`PricedDrafter`: a drafter preset (:func:`speclib.presets.drafter`)
  priced by its own roofline on the target's chip, under the same pricing
  rule as the target's step: MTP as gamma passes of one position in series,
  DFlash as one pass over its block whatever gamma is.

The closed forms are in :mod:`speclib.formulas.drafters`.
"""
from __future__ import annotations

import numpy as np

from .._checks import checked_array, checked_int, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import Drafter, drafter as drafter_preset, resolve
from .cost import check_draft_cost
from .step import StepModel, check_roofline


#: The paper's drafter cost per drafted token, as a fraction of a plain step.
DEFAULT_DRAFT_COST = 0.1


class ConstantDrafter:
    """Each drafted token costs ``c`` plain decode steps of the target."""

    kind = "constant"
    max_gamma = None
    max_gamma_reason = ""
    acceptance = None

    def __init__(self, c=DEFAULT_DRAFT_COST):
        self.c = check_draft_cost(c)
        self.name = f"constant ({np.ravel(self.c)[0]:g} x a step)" if self.c.size == 1 else "constant"

    @classmethod
    def unchecked(cls, c):
        """A drafter at cost ``c`` taken as it is, for a value checked where it
        came from: a figure's slider, which while the figure is recorded for
        the browser is a graph node rather than a number."""
        drafter = cls.__new__(cls)
        drafter.c, drafter.name = c, "constant"
        return drafter

    def time(self, gamma, B, S, target: StepModel, F=nf):
        """Seconds of drafting ``gamma`` tokens for ``B`` sequences at context ``S``."""
        return F.constant_draft_time(self.c, gamma, target.time(B, 1.0, S, F))

    def passes(self, gamma, F=nf):
        """Sequential drafter passes for ``gamma`` tokens: one per token."""
        return F.mtp_draft_time(gamma, 1.0)


class PricedDrafter:
    """A drafter preset priced by its own roofline on ``hardware``."""

    def __init__(self, preset: Drafter, hardware, *, roofline: str = "per-component", expert_count: str = "top-k"):
        self.preset = preset
        self.kind = preset.kind
        self.name = preset.name
        self.max_gamma, self.max_gamma_reason = preset.max_gamma, preset.max_gamma_reason
        self.acceptance = preset.acceptance
        self.pass_model = StepModel(preset.step, hardware, roofline=check_roofline(roofline), expert_count=expert_count)
        self.positions = float(preset.positions_per_pass)

    def passes(self, gamma, F=nf):
        """Sequential passes for ``gamma`` tokens: one per token (MTP), one per block (DFlash)."""
        return F.dflash_draft_time(gamma, 1.0) if self.kind == "dflash" else F.mtp_draft_time(gamma, 1.0)

    def pass_time(self, B, S=0.0, F=nf):
        """Seconds of one pass: one position per sequence (MTP) or a block (DFlash)."""
        return self.pass_model.time(B, self.positions, S, F)

    def time(self, gamma, B, S=0.0, target=None, F=nf):
        """Seconds of drafting ``gamma`` tokens for ``B`` sequences (``F``: see :meth:`StepModel.experts_touched`)."""
        draft = F.dflash_draft_time if self.kind == "dflash" else F.mtp_draft_time
        return draft(gamma, self.pass_time(B, S, F))


def check_gamma_for_drafter(gamma_arr, drafter):
    """gamma within what one call of ``drafter`` can draft."""
    top = drafter.max_gamma
    if top is not None and np.any(gamma_arr > top):
        bad = float(np.max(gamma_arr))
        raise ValueError(f"gamma must be in [0, {top}] ({drafter.max_gamma_reason}); got {bad:g}")
    return gamma_arr


def resolve_drafter(drafter, c_draft, hardware, *, roofline: str = "per-component", expert_count: str = "top-k"):
    """``drafter=`` and ``c_draft=`` as one drafter: a preset (name or
    :class:`~speclib.presets.Drafter`) priced on ``hardware``, or the paper's
    constant fraction ``c_draft`` (0.1 when neither is given)."""
    if drafter is None:
        return ConstantDrafter(DEFAULT_DRAFT_COST if c_draft is None else c_draft)
    if c_draft is not None:
        raise ValueError("give either c_draft (the paper's constant drafter cost) or drafter (a drafter priced by its "
                         "own roofline), not both")
    if isinstance(drafter, (ConstantDrafter, PricedDrafter)):
        return drafter
    if not isinstance(drafter, (str, Drafter)):
        raise ValueError(f"drafter must be a drafter preset name or a speclib.presets.Drafter; got {drafter!r}")
    return PricedDrafter(drafter_preset(drafter), hardware, roofline=roofline, expert_count=expert_count)


def draft_time(gamma, B, drafter, hardware=None, *, roofline: str = "per-component"):
    """Seconds a drafter preset takes to draft ``gamma`` tokens for ``B``
    sequences on ``hardware``; broadcasts."""
    _, hw = resolve(None, hardware)
    priced = resolve_drafter(drafter, None, hw, roofline=roofline)
    gamma_arr = checked_array("gamma", gamma, lo=0, integer=True)
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    check_gamma_for_drafter(gamma_arr, priced)
    return scalar_or_array(priced.time(gamma_arr, B_arr))


def crossover_batch(gamma, mtp="Qwen3.6-MTP", dflash="Qwen3.6-DFlash", hardware=None, *,
                    roofline: str = "per-component") -> float:
    """The batch below which one DFlash block drafts ``gamma`` tokens faster
    than ``gamma`` MTP passes (and above which MTP is cheaper), by bisection
    on the two drafters' times; inf if DFlash stays cheaper up to a million
    sequences, 0 if it is never cheaper."""
    gamma = checked_int("gamma", gamma, lo=1)
    _, hw = resolve(None, hardware)
    m = resolve_drafter(mtp, None, hw, roofline=roofline)
    d = resolve_drafter(dflash, None, hw, roofline=roofline)
    check_gamma_for_drafter(np.asarray(float(gamma)), d)

    def dflash_cheaper(B):
        return float(d.time(gamma, B)) < float(m.time(gamma, B))

    lo, hi = 1.0, 1e6
    if not dflash_cheaper(lo):
        return 0.0
    if dflash_cheaper(hi):
        return float("inf")
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if dflash_cheaper(mid) else (lo, mid)
    return hi


def crossover_constants(hardware=None, mtp="Qwen3.6-MTP", dflash="Qwen3.6-DFlash") -> dict:
    """The arguments of :func:`speclib.formulas.numpy_functions.drafter_crossover_batch`
    after gamma, by name, from the two drafter presets and the chip (as
    :func:`speclib.evidence.derivations.drafter_crossover` substitutes them)."""
    _, hw = resolve(None, hardware)
    m, f = drafter_preset(mtp), drafter_preset(dflash)
    values = {"b_d": m.step.dense_bytes, "P_MTP": m.step.dense_params, "w_MTP": m.step.ffn_params,
              "E": m.step.n_routed, "n_s": m.step.n_shared, "P_DF": f.step.dense_params, "D": f.block,
              "P": hw.peak_flops(f.step.dense_precision), "M": hw.memory_bandwidth}
    return {name: float(values[name]) for name in nf.ARGUMENTS["drafter_crossover_batch"][1:]}


def closed_form_crossover(gamma, hardware=None, mtp="Qwen3.6-MTP", dflash="Qwen3.6-DFlash"):
    """The saturated closed form of the batch below which DFlash drafts
    ``gamma`` tokens faster than MTP (the sequel's B ~ 24 gamma on a B200)."""
    g = checked_array("gamma", gamma, lo=1)
    return scalar_or_array(nf.drafter_crossover_batch(g, **crossover_constants(hardware, mtp, dflash)))


def crossover_batches(gammas, hardware=None, *, roofline: str = "per-component") -> np.ndarray:
    """:func:`crossover_batch` at each whole ``gammas``."""
    g = checked_array("gammas", gammas, lo=1, integer=True)
    _, hw = resolve(None, hardware)
    return np.array([crossover_batch(int(v), hardware=hw, roofline=roofline) for v in np.ravel(g)])
