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
    drafter on the same clock.

    ``running``: the sequences a deployment decodes at once of a batch asked
    for, a function of checked arrays (batch, context, gamma)
    (:meth:`speclib.core.deployment.Deployment.running`: no more than memory
    holds, the rest queued); None prices every sequence asked for at once.
    With it, :meth:`speedup` and :meth:`throughput` read their ``B`` as a
    closed loop's concurrency and price each arm at its own running batch;
    :meth:`plain` and :meth:`step` stay the step of the batch they are given."""

    def __init__(self, step_model: _step.StepModel, drafter, exposed_host=None, running=None):
        self.step_model = step_model
        self.drafter = drafter
        #: seconds per speculative step of host time the plain path hides and the speculative path does not
        #: (a function of the batch; None: both paths overlap alike, :mod:`speclib.core.overlap`)
        self.exposed_host = exposed_host
        self.running = running
        self.max_gamma = drafter.max_gamma
        self.acceptance = drafter.acceptance

    def held(self, B, S, gamma=0.0):
        """The sequences running of ``B`` asked for at context ``S`` while
        drafting ``gamma`` tokens (``B`` itself, broadcast, without a memory
        check); 0 where not one fits."""
        if self.running is None:
            return np.broadcast_arrays(B, S, gamma)[0]
        return self.running(B, S, gamma)

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
        """Committed tokens per second drafting ``gamma`` (``n`` a step) over
        those of plain decoding, at batch ``B`` (with :attr:`running`: a
        concurrency, each arm at its own running batch, 0 where the draft's
        slots leave room for no sequence and NaN where plain decoding holds
        none either)."""
        if self.running is None:
            return F.priced_speedup(n, self.plain(B, S, F), self.step(gamma, B, S, F))
        return self._concurrent(n, gamma, B, S, lambda at: self.step(gamma, at, S, F), F)

    def _concurrent(self, n, slots, B, S, step, F=nf):
        """The speed-up at concurrency ``B`` of a draft holding the slots of a
        chain of ``slots`` tokens whose step at a running batch is ``step``
        (with :attr:`running`): each arm at its own running batch."""
        plain, spec = self.running(B, S, 0.0), self.running(B, S, slots)
        c_0, c_g = self.plain(_priced_at(plain, B), S, F), step(_priced_at(spec, B))
        with np.errstate(divide="ignore", invalid="ignore"):
            # below what memory holds both arms run the same batch: the step's own ratio, bit for bit
            out = np.where(spec == plain, F.priced_speedup(n, c_0, c_g), F.concurrent_speedup(n, c_0, c_g, plain, spec))
        return np.where(plain > 0, out, np.nan)

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
        """A draft tree's speed-up (with :attr:`running`: at concurrency
        ``B``, its slots counted as those of a chain of ``width - 1`` drafted
        tokens, which a verify of ``width`` positions holds)."""
        if self.running is None:
            return nf.priced_speedup(n, self.plain(B, S), self.tree_step(depth, topk, width, B, S))
        return self._concurrent(n, width - 1.0, B, S, lambda at: self.tree_step(depth, topk, width, at, S))

    def throughput(self, B, gamma, S, acceptance):
        """Committed tokens per second of ``B`` sequences (with
        :attr:`running`: of the sequences running of ``B`` asked for; 0 where
        the draft's slots leave room for none, NaN where plain decoding holds
        none either); arguments checked by the caller."""
        n = _acc.Acceptance.of(acceptance).committed(gamma)
        if self.running is None:
            return nf.throughput(B, n, self.step(gamma, B, S))
        run, plain = self.running(B, S, gamma), self.running(B, S, 0.0)
        out = nf.throughput(run, n, self.step(gamma, _priced_at(run, B), S))
        return np.where(plain > 0, out, np.nan)

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


def _priced_at(running, B):
    """The batch a step is priced at: the running one, or ``B`` where none
    runs (a step of no sequence is not priced; its result is set apart)."""
    return np.where(running > 0, running, B)
