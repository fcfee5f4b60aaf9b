"""speclib: the cost model of "The economics of speculative decoding"
(F. Finn, 2026) as sympy-derived closed forms, with presets and figures.

Public API (all broadcast over numpy arrays; ``model=`` and ``hardware=``
default to DeepSeek-V4-Flash on one B200, as in the paper)::

    experts_activated(B, k, E)
    expected_committed(alpha, gamma)
    expected_committed_from_survival(survival, gamma)
    attention_intensity(T, S, model=None, variant=None)
    marginal_cost(B, S, c_draft, model=None, hardware=None)
    speedup(alpha, gamma, B, S, c_draft, model=None, hardware=None)
    optimal_gamma(alpha, B, S, c_draft, model=None, hardware=None, gamma_max=64)
    presets.hardware(name), presets.model(name), presets.from_hf_config(path)

``alpha`` may also be a :class:`SurvivalCurve` (depth-dependent acceptance).

Modules, one idea each: :mod:`.moe` (the expert tax), :mod:`.attention`
(attention intensity), :mod:`.acceptance` (committed tokens), :mod:`.cost`
(per-component rooflines and the ledger), :mod:`.speculation` (speedup and
gamma*), :mod:`.presets` (chips and models), :mod:`.parallel` (expert
parallelism), :mod:`.validation` (the roofline against measured decode),
:mod:`.claims` (the paper's numbers, recomputed), :mod:`.derivations`
(step-by-step sympy derivations), :mod:`.figures` and :mod:`.widgets` (the
book's figures, static and live), :mod:`.cli` (the ``speclib`` command).
"""
from . import acceptance, attention, cost, moe, presets, speculation
from .acceptance import SurvivalCurve, expected_committed, expected_committed_from_survival
from .attention import attention_intensity
from .cost import marginal_cost
from .moe import experts_activated
from .speculation import optimal_gamma, speedup

__all__ = [
    "SurvivalCurve",
    "acceptance",
    "attention",
    "attention_intensity",
    "cost",
    "expected_committed",
    "expected_committed_from_survival",
    "experts_activated",
    "marginal_cost",
    "moe",
    "optimal_gamma",
    "presets",
    "speculation",
    "speedup",
]
