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

    ``holds``: what memory holds, the largest batch at checked arrays of
    contexts and draft lengths broadcast together
    (:meth:`speclib.core.deployment.Deployment.max_batch`); None prices every
    sequence asked for at once. With it, :meth:`speedup`, :meth:`throughput`
    and :meth:`tree_speedup` read their ``B`` as a closed loop's concurrency
    and price each arm at its own running batch, no more than memory holds
    with its draft's slots (:func:`held_batches`, the rest queued);
    :meth:`plain` and :meth:`step` stay the step of the batch they are given."""

    def __init__(self, step_model: _step.StepModel, drafter, exposed_host=None, holds=None):
        self.step_model = step_model
        self.drafter = drafter
        #: seconds per speculative step of host time the plain path hides and the speculative path does not
        #: (a function of the batch; None: both paths overlap alike, :mod:`speclib.core.overlap`)
        self.exposed_host = exposed_host
        self.holds = holds
        self.max_gamma = drafter.max_gamma
        self.acceptance = drafter.acceptance

    def held(self, B, S, gamma=0.0):
        """The sequences running of ``B`` asked for at context ``S`` while
        drafting ``gamma`` tokens (``B`` itself, broadcast, without a memory
        check); 0 where not one fits."""
        if self.holds is None:
            return np.broadcast_arrays(B, S, gamma)[0]
        return nf.running_batch(B, held_batches(self.holds, S, gamma))

    def _arm(self, step, slots, B, S, F=nf):
        """(running, seconds of its step) of an arm at concurrency ``B``
        whose draft holds the cache slots of a chain of ``slots`` tokens and
        whose step is ``step(slots, batch, S)``: the step of ``B`` where
        memory holds it, else of what memory holds, timed once per distinct
        (draft, context) (with :attr:`holds`)."""
        table, i_g, i_s, u_g, u_s = _distinct(self.holds, S, slots)
        held = table[i_g, i_s]
        below = B <= held
        if np.all(below):  # memory holds every batch asked for
            return F.running_batch(B, held), step(slots, B, S)
        if np.ndim(getattr(self.drafter, "c", 0.0)):  # drafter costs per point: no table over (draft, context)
            return F.running_batch(B, held), step(slots, np.where(below, B, np.maximum(held, 1.0)), S)
        at_held = step(u_g[:, None], np.maximum(table, 1.0), u_s[None, :])  # a step of no sequence: set apart below
        at_held = np.broadcast_to(at_held, table.shape)[i_g, i_s]
        return F.running_batch(B, held), (at_held if not np.any(below) else np.where(below, step(slots, B, S), at_held))

    def plain_at(self, B, S, F=nf):
        """(the sequences running of ``B`` asked for, the seconds of their
        plain step) at context ``S``: ``B`` and its step without
        :attr:`holds`; the step of what memory holds above it (the rest
        queued); running 0 where not one sequence fits (its step then that of
        one)."""
        if self.holds is None:
            return np.broadcast_arrays(B, S)[0], self.plain(B, S, F)
        return self._arm(lambda _g, b, s: self.plain(b, s, F), 0.0, B, S, F)

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
        those of plain decoding, at batch ``B`` (with :attr:`holds`: a
        concurrency, each arm at its own running batch, 0 where the draft's
        slots leave room for no sequence and NaN where plain decoding holds
        none either)."""
        if self.holds is None:
            return F.priced_speedup(n, self.plain(B, S, F), self.step(gamma, B, S, F))
        return self._concurrent(n, gamma, B, S, lambda g, b, s: self.step(g, b, s, F), F)

    def _concurrent(self, n, slots, B, S, step, F=nf):
        """The speed-up at concurrency ``B`` of a draft holding the slots of a
        chain of ``slots`` tokens and stepping ``step(slots, batch, S)`` (with
        :attr:`holds`): each arm at its own running batch."""
        plain, c_0 = self.plain_at(B, S, F)
        spec, c_g = self._arm(step, slots, B, S, F)
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
        """A draft tree's speed-up (with :attr:`holds`: at concurrency
        ``B``, its slots counted as those of a chain of ``width - 1`` drafted
        tokens, which a verify of ``width`` positions holds)."""
        if self.holds is None:
            return nf.priced_speedup(n, self.plain(B, S), self.tree_step(depth, topk, width, B, S))
        return self._concurrent(n, width - 1.0, B, S, lambda _g, b, s: self.tree_step(depth, topk, width, b, s))

    def throughput(self, B, gamma, S, acceptance):
        """Committed tokens per second of ``B`` sequences (with
        :attr:`holds`: of the sequences running of ``B`` asked for; 0 where
        the draft's slots leave room for none, NaN where plain decoding holds
        none either); arguments checked by the caller."""
        n = _acc.Acceptance.of(acceptance).committed(gamma)
        if self.holds is None:
            return nf.throughput(B, n, self.step(gamma, B, S))
        run, seconds = self._arm(self.step, gamma, B, S)
        return np.where(held_batches(self.holds, S, 0.0) > 0, nf.throughput(run, n, seconds), np.nan)

    def broadcast(self, B, S):
        return np.broadcast_arrays(B, S)

    def measured_acceptance(self):
        """The drafter preset's measured survival curve, padded with zeros to a
        DFlash block: the sequel counts an unmeasured position as never
        surviving."""
        if self.acceptance is None:
            raise ValueError(_acc.NO_ALPHA)
        curve = _acc.drafter_curves()[self.acceptance]
        top = self.max_gamma or len(curve)
        if top > len(curve):
            curve = _acc.SurvivalCurve(np.concatenate([curve.values, np.zeros(top - len(curve))]), name=curve.name,
                                       source=curve.source)
        return curve



def _distinct(holds, S, g):
    """What memory holds (``holds(S, g)``) at contexts ``S`` and draft
    lengths ``g``, counted once per distinct pair: (the table over the
    distinct draft lengths and contexts, the index arrays into it, whose
    broadcast is that of ``S`` and ``g``, the distinct draft lengths, the
    distinct contexts)."""
    S, g = np.asarray(S, dtype=float), np.asarray(g, dtype=float)
    u_s, i_s = np.unique(S, return_inverse=True)
    u_g, i_g = np.unique(g, return_inverse=True)
    table = np.asarray(holds(u_s[None, :], u_g[:, None]), dtype=float)
    return table, i_g.reshape(g.shape), i_s.reshape(S.shape), u_g, u_s


def held_batches(holds, S, g):
    """What memory holds at contexts ``S`` and draft lengths ``g`` (arrays
    broadcast together), by ``holds`` (:meth:`speclib.core.deployment.Deployment.max_batch`),
    counted once per distinct (context, draft length): the grids a batch
    axis or a table over draft lengths repeat are counted once."""
    table, i_g, i_s, _, _ = _distinct(holds, S, g)
    return table[i_g, i_s]
