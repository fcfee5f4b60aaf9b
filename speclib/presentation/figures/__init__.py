"""The book's figures, one module per chapter, each figure one definition
(:class:`speclib.presentation.definition.Figure`): call it for the static
image, ``.widget()`` for the live one in a kernel, ``.data()`` for its numbers.
A chapter's tables sit beside its figures; :mod:`.common` holds what several
chapters share, :mod:`.simulated_serving` the setting and numbers of the
chapters on the sequel's serving simulation.

Importing this package imports every chapter module, so that the registry of
definitions (:data:`speclib.presentation.definition.REGISTRY`), which the HTML
book's live figures are generated from, is complete.
"""
from . import (acceptance_curves, attention, calibrated_step_time, common, deployment_capacity,  # noqa: F401
               deployments, draft_length, draft_length_per_concurrency, drafter_cost, engine_schedules,
               engines_vs_model, expert_parallelism, expert_tax, hybrid_attention, measured_decode, pricing,
               pricing_rule, simulated_serving, skewed_routing)
