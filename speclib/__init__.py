"""speclib: the cost model of "The economics of speculative decoding"
(F. Finn, 2026) as sympy-derived closed forms, with presets and figures.

The public API (everything broadcasts over numpy arrays; ``model=`` and
``hardware=`` default to DeepSeek-V4-Flash on one B200, as in the paper)::

    experts_activated(B, k, E, routing=None)          the experts a batch touches
    expected_committed(alpha, gamma)                  tokens committed per verify pass
    expected_committed_from_survival(survival, gamma)
    attention_intensity(T, S, model=None, variant=None)
    marginal_cost(B, S, c_draft, model=None, hardware=None)
    speedup(alpha, gamma, B, S, c_draft, model=None, hardware=None)
    optimal_gamma(alpha, B, S, c_draft, model=None, hardware=None, gamma_max=64)
    throughput(B, gamma, S, *, model=None, hardware=None, drafter=None, ...)
    max_batch(model, hardware, context, tp=1)         what fits in HBM
    schedule(model=..., hardware=..., seq=..., alpha=..., max_batch=N)   gamma* per batch size, as engines read it
    SurvivalCurve                                     depth-dependent acceptance
    presets                                           chips, models, drafters: presets.model(name), ...

Everything else has one home, imported by its own path: the closed forms in
:mod:`speclib.formulas` (sympy), the numeric model in :mod:`speclib.core`
(:mod:`~speclib.core.moe`, :mod:`~speclib.core.attention`,
:mod:`~speclib.core.cost`, :mod:`~speclib.core.speculation`, ...), the model
checked in :mod:`speclib.evidence`, the book in :mod:`speclib.presentation`
and the ``speclib`` command and engine schedules in :mod:`speclib.tools`.
``import speclib`` loads numpy and the presets only: no sympy, matplotlib or
ipywidgets.
"""
#: The one place the version is set (pyproject.toml reads it from here).
__version__ = "0.2.0"

from . import presets  # noqa: E402 - after the version, which the build reads without importing
from .core.acceptance import SurvivalCurve, expected_committed, expected_committed_from_survival
from .core.attention import attention_intensity
from .core.capacity import max_batch
from .core.cost import marginal_cost
from .core.moe import experts_activated
from .core.speculation import optimal_gamma, speedup, throughput


def schedule(*args, **kwargs):
    """gamma* for every batch size, as a serving engine's table: see
    :func:`speclib.tools.schedule.schedule` (imported on first call, so that
    ``import speclib`` stays light)."""
    from .tools.schedule import schedule as _schedule

    return _schedule(*args, **kwargs)


__all__ = [
    "SurvivalCurve",
    "attention_intensity",
    "expected_committed",
    "expected_committed_from_survival",
    "experts_activated",
    "marginal_cost",
    "max_batch",
    "optimal_gamma",
    "presets",
    "schedule",
    "speedup",
    "throughput",
]
