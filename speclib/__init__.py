"""speclib: the cost model of "The economics of speculative decoding"
(F. Finn, 2026) as sympy-derived closed forms, with presets and figures.

The public API (everything broadcasts over numpy arrays; ``model=`` and
``hardware=`` default to DeepSeek-V4-Flash on one B200, as in the paper, and
are a shorthand for ``deployment=Deployment(model, hardware)``; DeepSeek-V4's
attention is priced as served unless ``attention="paper"``, in every entry
point alike)::

    Deployment(model=None, hardware=None, *, tp=1, engine="vLLM", step_time="roofline",
               roofline="per-component", drafter=None, c_draft=None, routing=None,
               query_bytes=False, cost_model=None, reserve=0.1, rollback="snapshot",
               attention="served", comm_latency=None, ep=1, dp_attention=False,
               weights=None, kv_cache=None)
                                                      what a step is priced on, checked once
    Deployment.running(batch, context, gamma=0)      (running, queued): the sequences memory holds of a batch
    experts_activated(B, k, E, routing=None)          the experts a batch touches
    expected_committed(alpha, gamma)                  tokens committed per verify pass
    expected_committed_from_survival(survival, gamma)
    attention_intensity(T, S, model=None, variant=None)
    marginal_cost(B, S, c_draft, model=None, hardware=None)
    speedup(alpha, gamma, B, S, c_draft=None, model=None, hardware=None, *, deployment=None)
    optimal_gamma(alpha, B, S, c_draft=None, model=None, hardware=None, gamma_max=64, *, deployment=None)
    throughput(B, gamma, S, *, acceptance=None, c_draft=None, model=None, hardware=None, deployment=None)
    tpot(batch, context, *, workload=None, model=None, hardware=None, deployment=None)
                                                      time per output token of plain decoding
                                                      (a batch past what memory holds: the rest queued)
    tree_speedup(accept_length, B, S, *, depth, width, topk=1, c_draft=None, deployment=None)
                                                      a draft tree's speed-up, from its measured accept length
    max_batch(model, hardware, context, tp=1, *, deployment=None, gamma=0)
                                                      what fits in HBM (Deployment.max_batch: its layout, draft)
    frontier(deployment=None, workload="1k1k", *, gamma=None, alpha=None, concurrencies=None, gamma_max=8,
             interval=None)                       throughput per GPU against speed per user, with and without
                                                      speculation (.crossover(), .cheapest(min_tokens_per_user, price))
    schedule(model=None, hardware=None, seq=4096, *, alpha=None, c_draft=None, max_batch=256,
             gamma_max=64, deployment=None, step_costs=None)
                                                      gamma* per batch size, as engines read it
    SurvivalCurve                                     depth-dependent acceptance
    presets                                           chips, models, drafters: presets.model(name), ...

``alpha`` (``acceptance`` of ``throughput``) is a number, an array of them, a
``SurvivalCurve`` or None (a drafter preset's measured curve), sorted out once
by :meth:`speclib.core.acceptance.Acceptance.of`.

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
from .core.decode import tpot
from .core.deployment import Deployment
from .core.frontier import frontier
from .core.moe import experts_activated
from .core.speculation import optimal_gamma, speedup, throughput, tree_speedup


def schedule(model=None, hardware=None, seq=4096, *, alpha=None, c_draft=None, max_batch: int = 256,
             gamma_max: int = 64, deployment=None, step_costs=None):
    """gamma* for every batch size, as a serving engine's table: see
    :func:`speclib.tools.schedule.schedule` (imported on first call, so that
    ``import speclib`` stays light)."""
    from .tools.schedule import schedule as _schedule

    return _schedule(model, hardware, seq, alpha=alpha, c_draft=c_draft, max_batch=max_batch, gamma_max=gamma_max,
                     deployment=deployment, step_costs=step_costs)


__all__ = [
    "Deployment",
    "SurvivalCurve",
    "attention_intensity",
    "expected_committed",
    "expected_committed_from_survival",
    "experts_activated",
    "frontier",
    "marginal_cost",
    "max_batch",
    "optimal_gamma",
    "presets",
    "schedule",
    "speedup",
    "throughput",
    "tpot",
    "tree_speedup",
]
