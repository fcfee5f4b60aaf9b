"""The book's figures, one module per chapter, each figure one definition
(:class:`speclib.presentation.definition.Figure`): call it for the static
image, ``.widget()`` for the live one in a kernel, ``.data()`` for its numbers.

Importing this package imports every chapter module, so that the registry of
definitions (:data:`speclib.presentation.definition.REGISTRY`), which the HTML
book's live figures are generated from, is complete.
"""
from . import (acceptance_curves, attention, calibrated_step_time, common, deployment_capacity,  # noqa: F401
               deployments, draft_length, engine_schedules, engines_vs_model, expert_parallelism, expert_tax,
               measured_decode, pricing, skewed_routing)
# Chapters not yet written as definitions (TEMPORARY, while they are ported):
from . import sequel  # noqa: F401
from .notebook import NumberTable, equation, equations, ridge_crossing  # noqa: F401
from ..style import png_bytes  # noqa: F401
