"""The setting of the chapters on the sequel ("Adaptive speculative decoding",
Finn, 2026) and the numbers their figures draw: the target as the sequel's
serving simulator counts it, its drafters priced by their own rooflines, the
priced policy against the simulated grid, and the hybrid model's caches.

The target is Qwen3.6-35B-A3B as the simulator counts it
(:func:`speclib.evidence.simulator.simulated_model`), on one B200 unless a figure
offers other chips, at the simulated requests' mean context. Everything here
is numpy over speclib's core (the step in seconds, the drafters, the priced
policy) and the grid of :mod:`speclib.evidence.simulator`; the chapters' figure
modules (:mod:`.drafter_cost`, :mod:`.hybrid_attention`,
:mod:`.draft_length_per_concurrency`, :mod:`.pricing_rule`) draw it.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from ..._checks import checked_array, checked_choice, checked_int
from ...core import attention as _attention
from ...core import drafters as _drafters
from ...core import speculation as _spec
from ...core import step as _step
from ...core.deployment import Deployment
from ...evidence import simulator as _sequel
from ...formulas import numpy_functions as nf
from ...presets import drafter as drafter_preset
from ...presets import resolve

#: The drafters by the grid's keys (preset names), and how the book names them.
DRAFTERS = dict(_sequel.DRAFTERS)
DRAFTER_KEYS = tuple(DRAFTERS)
DRAFTER_LABELS = {"mtp": "MTP", "dflash": "DFlash"}
#: Acceptance: the drafter's measured survival curve, or the geometric curve
#: alpha**d with alpha its first position's survival.
ACCEPTANCES = ("measured", "geometric")
#: How a step's components compose into its time (speclib.core.step).
ROOFLINES = _step.ROOFLINES
ROOFLINE_LABELS = {"aggregate": "one roofline over the step", "per-component": "each component its own roofline"}
#: The KV-cache formats a reader can pick for the hybrid's full attention:
#: bytes per cached element.
KV_FORMATS = {"bf16": 2.0, "fp8": 1.0}
#: The hybrid model of the attention chapter, and the MLA model it is held against.
HYBRID_MODEL = _sequel.MODEL
MLA_MODEL = "DeepSeek-V4-Flash"
#: Full-attention layer counts the KV/state figure offers (divisors of 40:
#: every 10th, 8th, 5th, 4th, 2nd layer, or every layer).
FULL_ATTENTION_LAYERS = (4, 5, 8, 10, 20, 40)
#: The batch axis of the drafter figures, sequences.
DRAFTER_BATCHES = (1, 4096)
#: The verify widths of the pricing-rule figure.
PRICING_WIDTHS = (1, 2, 4, 8, 16)
US, MS, MB = 1e6, 1e3, 1e-6  # seconds to microseconds, to milliseconds; bytes to megabytes

def dflash_block() -> int:
    """Positions one DFlash pass drafts: the longest draft either figure offers."""
    return int(drafter_preset(DRAFTERS["dflash"]).block)


def check_drafter(drafter) -> str:
    return checked_choice("drafter", drafter, DRAFTER_KEYS)


def check_acceptance(acceptance) -> str:
    return checked_choice("acceptance", acceptance, ACCEPTANCES)


# --- the sequel's setting ------------------------------------------------------------


def target_model():
    """Qwen3.6-35B-A3B as the sequel's simulator counts it."""
    return _sequel.simulated_model()


def context() -> float:
    """The simulated requests' mean decode context."""
    return _sequel.context()


def grid():
    """The sequel's simulated grid (:func:`speclib.evidence.simulator.load_grid`)."""
    return _sequel.load_grid()


def acceptance_curve(drafter="dflash", acceptance="measured"):
    """The survival curve the policy uses for ``drafter``: its measured
    curve (a DFlash block's unmeasured last position counted as never
    surviving), or the geometric curve of the same first-position survival
    and length."""
    return _acceptance_curve(check_drafter(drafter), check_acceptance(acceptance))


@lru_cache(maxsize=None)
def _acceptance_curve(drafter, acceptance):
    curve = Deployment(target_model(), _sequel.HARDWARE, drafter=_sequel.DRAFTERS[drafter]).pricing().measured_acceptance()
    return curve if acceptance == "measured" else curve.iid()


def _hardware(hardware):
    return resolve(None, _sequel.HARDWARE if hardware is None else hardware)[1]


# --- what drafting costs ---------------------------------------------------------------


def drafter_times(gamma, B, hardware=None, *, roofline="aggregate") -> dict:
    """Seconds each drafter takes to draft ``gamma`` tokens for ``B``
    sequences, ``{"mtp": ..., "dflash": ...}`` (speclib.core.drafters.draft_time)."""
    hw = _hardware(hardware)
    return {key: _drafters.draft_time(gamma, B, name, hw, roofline=roofline) for key, name in _sequel.DRAFTERS.items()}


def crossover_constants(hardware=None) -> dict:
    """The arguments of :func:`speclib.formulas.numpy_functions.drafter_crossover_batch`
    after gamma, by name, from the two drafter presets and the chip (as
    :func:`speclib.evidence.derivations.drafter_crossover` substitutes them)."""
    hw = _hardware(hardware)
    m, f = drafter_preset(_sequel.DRAFTERS["mtp"]), drafter_preset(_sequel.DRAFTERS["dflash"])
    values = {"b_d": m.step.dense_bytes, "P_MTP": m.step.dense_params, "w_MTP": m.step.ffn_params,
              "E": m.step.n_routed, "n_s": m.step.n_shared, "P_DF": f.step.dense_params, "D": f.block,
              "P": hw.peak_flops(f.step.dense_precision), "M": hw.memory_bandwidth}
    names = nf.ARGUMENTS["drafter_crossover_batch"][1:]
    return {name: float(values[name]) for name in names}


def closed_form_crossover(gamma, hardware=None):
    """The saturated closed form of the batch below which DFlash drafts
    ``gamma`` tokens faster than MTP (the sequel's B ~ 24 gamma on a B200)."""
    g = checked_array("gamma", gamma, lo=1)
    out = nf.drafter_crossover_batch(g, **crossover_constants(hardware))
    return float(out) if np.ndim(out) == 0 else out


def exact_crossover(gammas, hardware=None, *, roofline="aggregate") -> np.ndarray:
    """:func:`speclib.core.drafters.crossover_batch` at each whole ``gammas``."""
    g = checked_array("gammas", gammas, lo=1, integer=True)
    hw = _hardware(hardware)
    return np.array([_drafters.crossover_batch(int(v), hardware=hw, roofline=roofline) for v in np.ravel(g)])


# --- the draft length per concurrency ---------------------------------------------------


def _policy_args(drafter, roofline, acceptance):
    key = check_drafter(drafter)
    deployment = Deployment(target_model(), _sequel.HARDWARE, drafter=_sequel.DRAFTERS[key], roofline=roofline)
    return dict(deployment=deployment), acceptance_curve(key, acceptance)


def policy(drafter, B, *, roofline="aggregate", acceptance="measured"):
    """The priced policy of ``drafter`` at each batch ``B``: gamma* (up to
    the grid's longest draft) and the committed tokens per second it
    reaches, at the simulated context."""
    kwargs, curve = _policy_args(drafter, roofline, acceptance)
    gamma_max = grid().drafters[check_drafter(drafter)].gamma_max
    g, _ = _spec.optimal_gamma(curve, B, context(), gamma_max=gamma_max, **kwargs)
    g = np.asarray(g)
    return g, np.asarray(_spec.throughput(B, g, context(), acceptance=curve, **kwargs))


def fixed_throughput(drafter, B, gammas, *, roofline="aggregate", acceptance="measured") -> np.ndarray:
    """Committed tokens per second at each fixed draft length in ``gammas``
    (rows) and batch in ``B`` (columns); gamma = 0 is plain decoding."""
    kwargs, curve = _policy_args(drafter, roofline, acceptance)
    gammas = np.asarray(gammas, dtype=float)[:, None]
    return np.asarray(_spec.throughput(np.asarray(B, dtype=float)[None, :], gammas, context(), acceptance=curve,
                                       **kwargs))


def tpot_ms(B, throughput):
    """Milliseconds per output token of each of ``B`` sequences in a closed
    loop that commits ``throughput`` tokens per second."""
    return nf.time_per_output_token(np.asarray(B, dtype=float), np.asarray(throughput, dtype=float)) * MS


def simulated_at(drafter, gamma) -> np.ndarray:
    """The simulator's throughput at each grid concurrency, at the draft
    length ``gamma`` chosen there (one per concurrency)."""
    rows = grid().drafters[check_drafter(drafter)]
    gamma = np.asarray(gamma)
    return rows.goodput[np.searchsorted(rows.gammas, gamma), np.arange(rows.goodput.shape[1])]


def rule_shortfall(drafter, *, acceptance="measured") -> dict:
    """Per pricing rule: the gamma* it picks at each grid concurrency, and the
    share of the simulator's best fixed-gamma throughput lost there
    (1 - simulated at that gamma / simulated best)."""
    rows = grid().drafters[check_drafter(drafter)]
    out = {}
    for rule in ROOFLINES:
        g, _ = policy(drafter, grid().concurrency, roofline=rule, acceptance=acceptance)
        out[rule] = (g, 1 - simulated_at(drafter, g) / rows.best_goodput)
    return out


# --- hybrid attention ----------------------------------------------------------------


def linear_intensity(T, model=HYBRID_MODEL):
    """:func:`speclib.core.attention.linear_intensity`, for the hybrid this chapter draws."""
    return _attention.linear_intensity(T, model)


def hybrid_architecture(model=HYBRID_MODEL, *, full_attention_layers=None, kv_format=None):
    """``model``'s whole-step architecture with ``full_attention_layers`` of
    its layers full attention (the rest linear) and its KV cache in
    ``kv_format`` (None keeps the model's own)."""
    m, _ = resolve(model, None)
    if not m.is_hybrid:
        raise ValueError(f"model must be a hybrid with linear-attention layers; {m.name} has none")
    arch = m.step_architecture()
    layers = arch.attention_layers + arch.linear_layers
    changes = {}
    if full_attention_layers is not None:
        n = checked_int("full_attention_layers", full_attention_layers, lo=1, hi=layers)
        changes.update(attention_layers=n, linear_layers=layers - n)
    if kv_format is not None:
        b_kv = KV_FORMATS[checked_choice("kv_format", kv_format, tuple(KV_FORMATS))]
        attn = m.attention
        changes["context_bytes"] = float(nf.gqa_context_bytes(attn.n_kv_heads, attn.head_dim, b_kv))
    return dataclasses.replace(arch, **changes) if changes else arch


def sequence_bytes(S, arch) -> dict:
    """Bytes one sequence keeps at context ``S``: ``kv`` (full-attention
    layers), ``state`` (linear-attention layers), ``total``, and
    ``all_full`` (every layer full attention, the same KV per layer)."""
    S_arr = checked_array("S", S, lo=0)
    layers = arch.attention_layers + arch.linear_layers
    m_c, sigma = arch.context_bytes, arch.state_bytes
    return {
        "kv": nf.cache_bytes(1.0, S_arr, arch.attention_layers, m_c, 0, sigma),
        "state": nf.cache_bytes(1.0, S_arr, 0, m_c, arch.linear_layers, sigma),
        "total": nf.cache_bytes(1.0, S_arr, arch.attention_layers, m_c, arch.linear_layers, sigma),
        "all_full": nf.cache_bytes(1.0, S_arr, layers, m_c, 0, sigma),
    }


def kv_state_crossing(arch) -> float:
    """The context at which the KV cache weighs as much as the state (None
    without linear layers)."""
    if arch.linear_layers == 0:
        return None
    return float(nf.kv_state_crossing(arch.attention_layers, arch.context_bytes, arch.linear_layers, arch.state_bytes))
