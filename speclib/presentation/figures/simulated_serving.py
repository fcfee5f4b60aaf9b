"""The setting of the chapters on the sequel ("Adaptive speculative decoding",
Finn, 2026) as their figures show it: the book's names for the drafters and
the pricing rules, the models, and the ranges the figures offer.

What they draw is computed below this layer: the simulated grid and the
priced policy against it in :mod:`speclib.evidence.simulator`, the drafters'
times and crossovers in :mod:`speclib.core.drafters`, the hybrid's caches in
:mod:`speclib.core.attention`. The chapters' figure modules
(:mod:`.drafter_cost`, :mod:`.hybrid_attention`,
:mod:`.draft_length_per_concurrency`, :mod:`.pricing_rule`) draw it.
"""
from __future__ import annotations

from speclib.evidence import simulator as _sequel
from ...presets import drafter as drafter_preset

#: How the book names the drafters, by the grid's keys.
DRAFTER_LABELS = {"mtp": "MTP", "dflash": "DFlash"}
#: How the book names the ways a step's components compose into its time (speclib.core.step).
ROOFLINE_LABELS = {"aggregate": "one roofline over the step", "per-component": "each component its own roofline"}
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


def dflash_block() -> int:
    """Positions one DFlash pass drafts: the longest draft either figure offers."""
    return int(drafter_preset(_sequel.DRAFTERS["dflash"]).block)
