"""How a speculative step is priced, the two rules a
:class:`speclib.core.deployment.Deployment` chooses between (see
:mod:`speclib.core.speculation`):

* :class:`LedgerPricing`, the paper's: one representative layer's
  per-component rooflines, the drafter a constant fraction of a plain step;
* :class:`StepPricing`, the sequel's: the whole model's step in seconds, the
  drafter on the same clock.

Both take arrays that are already checked and broadcast them.
"""
from __future__ import annotations

import numpy as np

from ..formulas import numpy_functions as nf
from . import acceptance as _acc
from . import drafters as _draft
from . import step as _step


class LedgerPricing:
    """The paper's: a layer's per-component rooflines, drafting at a
    constant fraction of a plain step (in the cost model's units)."""

    def __init__(self, cost_model, drafter: _draft.ConstantDrafter):
        self.cost_model = cost_model
        self.drafter = drafter
        self.max_gamma = None
        self.acceptance = None

    def speedup(self, n, gamma, B, S):
        c0 = self.cost_model.decode(B, S)
        cv = self.cost_model.verify(B, gamma + 1.0, S)
        return nf.speedup(n, c0, cv, self.drafter.c, gamma)

    def broadcast(self, B, S):
        B, S, _ = np.broadcast_arrays(B, S, self.drafter.c)
        return B, S

    def tree_speedup(self, n, depth, topk, width, B, S):
        """A draft tree's speed-up: ``n`` tokens a step; ``depth`` drafter
        passes at the constant cost each; the target verifying ``width``
        positions a sequence, as a chain of ``width - 1`` drafted tokens is
        verified. (``topk`` does not change a constant drafter's cost.)"""
        c0 = self.cost_model.decode(B, S)
        cv = self.cost_model.verify(B, width, S)
        return nf.speedup(n, c0, cv, self.drafter.c, depth)


class StepPricing:
    """The sequel's: the whole model's step in seconds (``step_model``), the
    drafter on the same clock."""

    def __init__(self, step_model: _step.StepModel, drafter, exposed_host=None):
        self.step_model = step_model
        self.drafter = drafter
        #: seconds per speculative step of host time the plain path hides and the speculative path does not
        #: (a function of the batch; None: both paths overlap alike, :mod:`speclib.core.overlap`)
        self.exposed_host = exposed_host
        self.max_gamma = drafter.max_gamma
        self.acceptance = drafter.acceptance

    def plain(self, B, S, F=nf):
        """Seconds of a plain decode step (``F``: the closed forms, as in
        :meth:`speclib.core.step.StepModel.experts_touched`)."""
        return self.step_model.time(B, 1.0, S, F)

    def step(self, gamma, B, S, F=nf):
        """Seconds of one speculative step: verify gamma + 1 positions, draft gamma."""
        seconds = (self.step_model.time(B, gamma + 1.0, S, F) + self.drafter.time(gamma, B, S, self.step_model, F)
                   + getattr(self.step_model, "per_draft_pass", 0.0) * self.drafter.passes(gamma, F))
        if self.exposed_host is None:
            return seconds
        return seconds + np.where(np.asarray(gamma) > 0, self.exposed_host(B), 0.0)  # none without a draft

    def speedup(self, n, gamma, B, S, F=nf):
        return F.priced_speedup(n, self.plain(B, S, F), self.step(gamma, B, S, F))

    def tree_step(self, depth, topk, width, B, S):
        """Seconds of one step of a draft tree: the target verifies ``width``
        positions a sequence (as it verifies a chain of ``width - 1`` drafted
        tokens), and the drafter runs ``depth`` passes, each over the
        ``topk`` candidates it expands per sequence."""
        verify = self.step_model.time(B, width, S)
        if isinstance(self.drafter, _draft.ConstantDrafter):
            draft = self.drafter.time(depth, B, S, self.step_model)
        else:  # each pass runs the drafter over topk positions of each sequence
            draft = self.drafter.time(depth, B * topk, S, self.step_model)
        per_pass = getattr(self.step_model, "per_draft_pass", 0.0) * self.drafter.passes(depth)
        host = 0.0 if self.exposed_host is None else self.exposed_host(B)
        return verify + draft + per_pass + host

    def tree_speedup(self, n, depth, topk, width, B, S):
        return nf.priced_speedup(n, self.plain(B, S), self.tree_step(depth, topk, width, B, S))

    def throughput(self, B, gamma, S, acceptance):
        """Committed tokens per second (arguments checked by the caller)."""
        return nf.throughput(B, _acc.Acceptance.of(acceptance).committed(gamma), self.step(gamma, B, S))

    def broadcast(self, B, S):
        return np.broadcast_arrays(B, S)

    def measured_acceptance(self):
        """The drafter preset's measured survival curve, padded with zeros to a
        DFlash block: the sequel counts an unmeasured position as never
        surviving."""
        if self.acceptance is None:
            raise ValueError(_acc.NO_ALPHA)
        curve = _acc.load_survival_curves()[self.acceptance]
        top = self.max_gamma or len(curve)
        if top > len(curve):
            curve = _acc.SurvivalCurve(np.concatenate([curve.values, np.zeros(top - len(curve))]), name=curve.name,
                                       source=curve.source)
        return curve
