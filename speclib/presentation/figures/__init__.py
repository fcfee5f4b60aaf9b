"""The book's figures, one module per chapter (three for "How far to trust the step": its
decode step, its speculative runs, its reconciliation with the sequel), each figure one definition
(:class:`speclib.presentation.definition.Figure`): call it for the static
image, ``.widget()`` for the live one in a kernel, ``.data()`` for its numbers.
A chapter's tables sit beside its figures; :mod:`.common` holds what several
chapters share, :mod:`.simulated_serving` the book's names and ranges for
the chapters on the sequel's serving simulation (its numbers are computed in
:mod:`speclib.evidence.simulator` and :mod:`speclib.core`).

Importing this package imports every chapter module, so that the registry of
definitions (:data:`speclib.presentation.definition.REGISTRY`), which the HTML
book's live figures are generated from, is complete.
"""
from . import (acceptance_curves, attention, common, cost_of_a_token, deployment_capacity, engine_step_time,  # noqa: F401
               deployments, draft_length, draft_length_per_concurrency, drafter_cost, engine_schedules,
               engines_vs_model, expert_parallelism, expert_tax, hybrid_attention, measured_kernels, pricing,
               pricing_rule, reconciliation, simulated_serving, skewed_routing)
