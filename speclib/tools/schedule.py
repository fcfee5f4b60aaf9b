"""Speculation schedules: the model's best draft length per batch size, as the
table an engine reads.

:func:`schedule` prices every batch size 1..N and every draft length, by the
roofline model (:mod:`speclib.core.speculation`) or by a measured step-cost
table (:class:`StepCosts`), and returns a :class:`Schedule`: gamma* and the
speedup per batch, the merged ranges of the per-batch optimum, and tables
under an engine's limits (a number of ranges, a largest K, TensorRT-LLM's
first-range rule, SGLang's three adaptive tiers), each with what it keeps of
the per-batch optimum. :mod:`speclib.tools.engines` writes them in each
engine's format.

What "kept" means, everywhere: the mean over batch sizes B = 1..N, weighted
by 1/B (every doubling of the load counts as much as any other, so the
thousands of large batch sizes do not drown the small ones), of
throughput(B, K(B)) / throughput(B, gamma*(B)), where K(B) is the table's
draft length at B and gamma*(B) the per-batch optimum over the searched draft
lengths (not capped by the engine). At a fixed batch the throughput ratio
equals the ratio of speedups over plain decoding. "Worst" is the batch size
that keeps least.

Which batches count, under a memory check: a batch that memory holds at no
draft length of at least one, or not even without a draft (a longer context
than the one the batches were capped at), is left out of every "kept" and
of every choice made by it (:meth:`Schedule.left_out`): plain decoding is the
only choice there, and says nothing about a table. A table of batch ranges
hands the engine a draft length per range, so memory must hold each range's
draft length over the whole range (a left-out batch weighs nothing but is
still plain). A static depth or a tier set is a server's own setting: a
server at that depth holds what its memory holds at it, so each is counted
over the batches it holds, and the batches above are left out of its "kept"
(:meth:`Schedule.static`, :meth:`Schedule.tiers`).

Measured step costs (``--step-costs``): a CSV with columns
``batch_size,num_draft_tokens,step_seconds``, the format of the sequel's
simulator. We read ``step_seconds`` as the whole speculative step at that
batch, verifying ``num_draft_tokens + 1`` positions per sequence *and*
drafting them (the wall time an engine's profiler sees; ``num_draft_tokens =
0`` is a plain decode step), so the speedup is
N(gamma) * C(B, 0) / C(B, gamma), with nothing added for the drafter.
``speclib profile`` writes the roofline's own steps in exactly this sense, so
a schedule from its file equals the schedule from the model. Between measured
batch sizes a cost is interpolated linearly in log B, per draft length.
"""
from __future__ import annotations

import csv
import dataclasses
import itertools
import math
import textwrap
from dataclasses import dataclass, field

import numpy as np

from .._checks import checked_int
from ..core import acceptance as _acc
from ..core import calibrated as _cal
from ..core import capacity as _capacity
from ..core import cost as _cost
from ..core import speculation as _spec
from ..core.deployment import deployment_of as _deployment_of
from ..formulas import numpy_functions as nf
from ..presets import resolve
from .engines import Range, ranges_from_lookup

CSV_COLUMNS = ("batch_size", "num_draft_tokens", "step_seconds")
#: Most ranges the range search takes (memory: batches x ranges x draft lengths).
MAX_RANGES = 64
#: Most batch sizes a schedule covers.
MAX_BATCH = 1_000_000
#: The width the schedule's text is wrapped to: a terminal's, and the book's text column.
TEXT_WIDTH = 76
#: What a schedule priced by the roofline says about itself (its header's "warning:" line).
ROOFLINE_WARNING = ("roofline step time (a lower bound, without the engine's own per-step costs): not the "
                    "speed-ups an engine will see; before deploying, price it with --step-time calibrated "
                    "(fitted on engines, with its 80 % interval) or --calibration FILE (your own runs)")


class StepCostsError(ValueError):
    """A bad step-cost file: the message names the file and the line."""


@dataclass
class StepCosts:
    """Measured seconds of one speculative step, batch x draft length."""

    batches: np.ndarray  # sorted batch sizes (float)
    gammas: np.ndarray  # sorted draft lengths (int), 0 first
    seconds: np.ndarray  # (len(gammas), len(batches))
    path: str = ""
    #: how the model priced DeepSeek-V4's attention (``speclib profile``'s last column); None: measured
    attention: str | None = None

    @classmethod
    def read(cls, path) -> "StepCosts":
        """Read and check a CSV; :class:`StepCostsError` names the file and line."""
        name = str(path)
        try:
            with open(path, newline="", encoding="utf-8") as stream:
                rows = list(_numbered_rows(stream))
        except OSError as exc:
            raise StepCostsError(f"{name}: cannot read it ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise StepCostsError(f"{name}: not a UTF-8 text file") from None
        except csv.Error as exc:
            raise StepCostsError(f"{name}: not a CSV file ({exc})") from None
        if not rows:
            raise StepCostsError(f"{name}, line 1: empty file (need a header {','.join(CSV_COLUMNS)})")
        header_line, header = rows[0]
        header = [h.strip() for h in header]
        for column in CSV_COLUMNS:
            if column not in header:
                raise StepCostsError(f"{name}, line {header_line}: missing column {column!r} "
                                     f"(need {','.join(CSV_COLUMNS)})")
        where = {c: header.index(c) for c in CSV_COLUMNS}
        seen = {}
        for line, row in rows[1:]:
            if not any(cell.strip() for cell in row):
                continue
            values = []
            for column in CSV_COLUMNS:
                i = where[column]
                text = row[i].strip() if i < len(row) else ""
                try:
                    value = float(text)
                except ValueError:
                    raise StepCostsError(f"{name}, line {line}: {column} is not a number ({text!r})") from None
                if not math.isfinite(value):
                    raise StepCostsError(f"{name}, line {line}: {column} is not a finite number ({text!r})")
                values.append(value)
            batch, k, seconds = values
            if batch < 1 or not batch.is_integer():
                raise StepCostsError(f"{name}, line {line}: batch_size must be a whole number >= 1 (got {batch:g})")
            if k < 0 or not k.is_integer():
                raise StepCostsError(f"{name}, line {line}: num_draft_tokens must be a whole number >= 0 "
                                     f"(got {k:g})")
            if seconds <= 0:
                raise StepCostsError(f"{name}, line {line}: step_seconds must be > 0 (got {seconds:g})")
            key = (int(batch), int(k))
            if key in seen:
                raise StepCostsError(f"{name}, line {line}: duplicate row for batch_size {key[0]}, "
                                     f"num_draft_tokens {key[1]} (first at line {seen[key][0]})")
            seen[key] = (line, seconds)
        if not seen:
            raise StepCostsError(f"{name}, line {header_line + 1}: no data rows")
        batches = sorted({b for b, _ in seen})
        gammas = sorted({k for _, k in seen})
        if gammas[0] != 0:
            first = min(line for line, _ in seen.values())
            raise StepCostsError(f"{name}, line {first}: no row has num_draft_tokens 0 (the plain decode step "
                                 "every speedup is measured against)")
        table = np.empty((len(gammas), len(batches)))
        for j, b in enumerate(batches):
            for i, k in enumerate(gammas):
                if (b, k) not in seen:
                    first = min(line for (bb, _), (line, _) in seen.items() if bb == b)
                    raise StepCostsError(f"{name}, line {first}: batch_size {b} has no row for num_draft_tokens "
                                         f"{k} (every batch size needs the same draft lengths)")
                table[i, j] = seen[(b, k)][1]
        return cls(np.asarray(batches, dtype=float), np.asarray(gammas), table, name)

    def check_batches(self, lo: int, hi: int):
        if lo < self.batches[0] or hi > self.batches[-1]:
            raise StepCostsError(f"{self.path}: measures batch sizes {self.batches[0]:g}..{self.batches[-1]:g}; "
                                 f"the schedule needs {lo}..{hi} (measure that range, or lower --max-batch)")

    def at(self, B) -> np.ndarray:
        """Seconds at batch sizes ``B`` (within the measured range), one row
        per draft length: linear in log B between measured batches."""
        self.check_batches(int(np.min(B)), int(np.max(B)))
        x, xp = np.log(np.asarray(B, dtype=float)), np.log(self.batches)
        return np.stack([np.interp(x, xp, row) for row in self.seconds])

    def write(self, stream):
        write_step_costs(stream, self.batches, self.gammas, self.seconds, attention=self.attention)


def _numbered_rows(stream):
    reader = csv.reader(stream)
    for row in reader:
        yield reader.line_num, row


def write_step_costs(stream, batches, gammas, seconds, *, attention: str | None = None):
    """The CSV ``speclib profile`` writes (numbers that read back exactly);
    with ``attention``, a last column saying how the model priced
    DeepSeek-V4's attention (:data:`speclib.core.cost.ATTENTIONS`), which
    :meth:`StepCosts.read` leaves aside."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(CSV_COLUMNS + (() if attention is None else ("attention",)))
    last = () if attention is None else (attention,)
    for j, b in enumerate(batches):
        for i, k in enumerate(gammas):
            writer.writerow((int(b), int(k), repr(float(seconds[i, j]))) + last)


def model_step_seconds(priced, gammas, B, S, model, hardware, tp: int = 1) -> np.ndarray:
    """Seconds of one speculative step (verify gamma + 1 positions and draft
    gamma) at each draft length and batch, as the model prices it: the whole
    model's step (:class:`~speclib.core.speculation.StepPricing`, which splits
    it over ``tp`` GPUs itself), or the paper's one-layer ledger in
    byte-equivalents scaled to seconds by the model's layer count over the
    chip's bandwidth and split evenly over ``tp`` GPUs (a scale that cancels
    in every speedup)."""
    g = np.asarray(gammas, dtype=float)[:, None]
    B = np.asarray(B, dtype=float)[None, :]
    S = np.broadcast_to(np.asarray(S, dtype=float), B.shape)
    if isinstance(priced, _spec.StepPricing):
        return np.broadcast_to(priced.step(g, B, S), (g.shape[0], B.shape[1])).copy()
    m, hw = resolve(model, hardware)
    cm, c = priced.cost_model, priced.drafter.c
    units = cm.verify(B, g + 1.0, S) + c * g * cm.decode(B, S)
    return units * m.n_layers / (hw.memory_bandwidth * tp)


@dataclass
class Table:
    """Draft lengths per batch range, and what they keep of the optimum."""

    ranges: tuple
    kept: float
    k_per_batch: np.ndarray = field(repr=False)
    worst: float = 1.0  # the batch that keeps least: its throughput / the optimum's
    worst_batch: int = 1
    #: the last batch the table is set for (a static depth: the most its memory holds at that depth); None: all
    held_to: int | None = None

    def __len__(self):
        return len(self.ranges)


@dataclass
class Tiers:
    """An adaptive tier set: each batch runs the best tier in it."""

    tiers: tuple
    kept: float
    k_per_batch: np.ndarray = field(repr=False)
    worst: float = 1.0
    worst_batch: int = 1
    #: the last batch memory holds at the shallowest tier (None: every batch); the batches above are left out
    held_to: int | None = None

    @property
    def ranges(self):
        """Each batch's best tier, over the batches the set is held at."""
        return tuple(ranges_from_lookup(self.k_per_batch[:self.held_to]))


@dataclass
class Schedule:
    """gamma* per batch size 1..N and the tables built from it.

    ``speedups[c, i, b]``: speedup over plain decoding at context
    ``contexts[c]``, draft length ``gammas[i]`` and batch ``b + 1``. The first
    context is the reference for the batch-only tables.
    """

    model: str
    hardware: str
    contexts: tuple
    acceptance: str
    drafter: str
    roofline: str
    source: str
    gammas: np.ndarray
    speedups: np.ndarray
    max_ranges: int | None = None
    max_k: int | None = None
    first_is_max: bool = False
    memory: str = ""  # what the memory check did to the batch range, for the header
    #: under a calibrated step: (lo, hi) of the 80 % cross-conformal interval by model family
    #: (:func:`speclib.core.calibrated.interval_name`), per batch 1..N at the reference context, of the
    #: speed-up of the best draft length of at least one (None: no interval)
    interval: tuple | None = None
    #: what the interval is (:func:`speclib.core.calibrated.interval_name`), for the header
    interval_name: str = ""
    #: one line for each thing the prediction extrapolates beyond the fit (a calibrated step)
    notes: tuple = ()
    #: what the reader must know before deploying this schedule (:data:`ROOFLINE_WARNING` under the roofline)
    warnings: tuple = ()
    #: ``memory_limits[c, i]``: the largest batch the deployment holds at ``contexts[c]`` while drafting
    #: ``gammas[i]`` tokens (None: no memory check); a draft length is never chosen for a batch it cannot hold
    memory_limits: np.ndarray | None = None
    #: where the schedule runs ("one B200", "8 x H200 TP8 EP8"), for the memory lines
    where: str = ""
    #: the target's own MTP layers (:attr:`speclib.presets.Model.mtp_layers`): whether MTP is a method it has
    mtp_layers: int = 0
    #: the drafter the schedule was priced for: ``constant`` (the paper's c_draft), ``mtp`` or ``dflash``
    drafter_kind: str = "constant"
    #: how DeepSeek-V4's attention was priced and held (:data:`speclib.core.cost.ATTENTIONS`), for the header
    attention: str = _cost.DEFAULT_ATTENTION
    #: the layout the schedule was priced on (:class:`speclib.core.layout.Layout`), for the engines' flags
    tp: int = 1
    ep: int = 1
    dp_attention: bool = False
    #: the precision served (:meth:`speclib.Deployment.precision_words`), for the header
    precision: str = ""
    #: whether the tables merge adjacent ranges whose speed-ups lie inside each other's interval
    #: (:func:`indistinct_groups`; only where there is an interval, at the reference context)
    merge_indistinct: bool = True

    # --- the per-batch optimum ---------------------------------------------------
    @property
    def max_batch(self) -> int:
        return self.speedups.shape[-1]

    @property
    def batches(self) -> np.ndarray:
        return np.arange(1, self.max_batch + 1)

    def feasible(self, c: int = 0) -> np.ndarray:
        """``[i, b]``: whether batch ``b + 1`` fits in memory at ``contexts[c]``
        while drafting ``gammas[i]`` tokens (all True without a memory check;
        gamma = 0 always, so that a batch past what a longer context holds is
        set to plain decoding rather than to a draft)."""
        if self.memory_limits is None:
            return np.ones(self.speedups.shape[1:], dtype=bool)
        held = self.batches[None, :] <= np.asarray(self.memory_limits)[c][:, None]
        held[self.gammas == 0] = True  # plain decoding stands for a batch no draft fits (a longer context's)
        return held

    def _held(self, c: int = 0) -> np.ndarray:
        """The speed-ups at context ``c``, -inf where memory cannot hold the batch at that draft length."""
        return np.where(self.feasible(c), self.speedups[c], -np.inf)

    def gamma_star_at(self, c: int = 0) -> np.ndarray:
        return self.gammas[np.argmax(self._held(c), axis=0)]

    def speedup_at(self, c: int = 0) -> np.ndarray:
        return np.max(self._held(c), axis=0)

    def memory_lines(self, ks=None) -> list:
        """Where memory ends, one line: the largest batch held without a draft
        and at each draft length in ``ks`` (default: the per-batch optimum's),
        at the reference context."""
        if self.memory_limits is None:
            return []
        limits = np.asarray(self.memory_limits)[0]
        shown = sorted({int(k) for k in (self.gamma_star if ks is None else ks)} - {0})
        parts = [f"{int(limits[np.searchsorted(self.gammas, k)]):,} at gamma {k}" for k in shown]
        held = f"{int(limits[0]):,} sequences without drafting" + (", " + ", ".join(parts) if parts else "")
        return [f"memory: {self.where} holds {held} at context {self.contexts[0]:g} (draft slots, rollback states "
                "and the drafter counted); no draft length is set above the batch that holds it"]

    @property
    def gamma_star(self) -> np.ndarray:
        """gamma* at batch 1..N (reference context); ties go to the shorter draft."""
        return self.gamma_star_at(0)

    @property
    def speedup(self) -> np.ndarray:
        return self.speedup_at(0)

    @property
    def ranges(self) -> tuple:
        """The per-batch optimum with adjacent equal gamma* merged."""
        return tuple(ranges_from_lookup(self.gamma_star))

    @property
    def uncertain(self) -> np.ndarray:
        """Per batch 1..N: whether the interval of speculating's best gain
        holds 1x, so that gamma = 0 is as likely as not (all False without an interval)."""
        if self.interval is None:
            return np.zeros(self.max_batch, dtype=bool)
        lo, hi = self.interval
        return (lo < 1.0) & (hi > 1.0)

    def uncertain_ranges(self) -> list:
        """(first, last) batch of each run of :attr:`uncertain` batches."""
        return _runs_of(self.uncertain)

    def relative(self, c: int = 0) -> np.ndarray:
        """throughput(B, gamma) / throughput(B, gamma*(B)) per draft length and
        batch; -inf where memory cannot hold the batch at that draft length."""
        return self._held(c) / self.speedup_at(c)[None, :]

    def left_out(self, c: int = 0) -> np.ndarray:
        """Per batch 1..N: whether it is left out of every "kept" and of every
        choice made by it, at context ``c``: memory holds the batch at no
        draft length of at least one (plain decoding is then the only
        choice, and says nothing of a table), or does not hold it even
        without a draft (a longer context than the one the batches were
        capped at). All False without a memory check."""
        if self.memory_limits is None:
            return np.zeros(self.max_batch, dtype=bool)
        limits = np.asarray(self.memory_limits)[c]
        B = self.batches
        plain = B <= limits[self.gammas == 0].max(initial=0)
        drafting = self.gammas > 0
        if not drafting.any():  # nothing but plain decoding searched: nothing to leave out for it
            return ~plain
        return ~plain | (B > limits[drafting].max())

    def left_out_reasons(self, c: int = 0) -> list:
        """(first, last, why) of each run of batches :meth:`left_out` leaves out."""
        if self.memory_limits is None:
            return []
        limits = np.asarray(self.memory_limits)[c]
        plain = int(limits[self.gammas == 0].max(initial=0))
        drafting = self.gammas > 0
        draft = int(limits[drafting].max()) if drafting.any() else None
        out = []
        for lo, hi in _runs_of(self.left_out(c)):
            if lo > plain:
                why = f"memory does not hold them even without a draft ({plain:,} at most)"
            else:
                why = f"memory holds none of them with a draft ({draft:,} at most, at gamma " \
                      f"{int(self.gammas[drafting][np.argmax(limits[drafting])])}): plain decoding is the only choice"
            out.append((lo, hi, why))
        return out

    def _weights(self, c: int = 0) -> np.ndarray:
        """The weight of each batch size in "kept" at context ``c``: 1/B,
        normalised over the batches not :meth:`left_out` (0 there)."""
        w = np.where(self.left_out(c), 0.0, 1.0 / self.batches)
        total = w.sum()
        return w / total if total > 0 else w

    @property
    def weights(self) -> np.ndarray:
        """The weight of each batch size in "kept": 1/B, normalised over the
        batches not left out (:meth:`left_out`), which weigh 0."""
        return self._weights(0)

    def _weighted(self, c: int = 0) -> np.ndarray:
        """Each batch's share of "kept" per draft length: its throughput ratio
        times its weight; -inf where memory cannot hold the batch at that
        draft length (a left-out batch weighs 0, but is still held to what
        memory holds)."""
        rel = self.relative(c)
        held = np.isfinite(rel)
        return np.where(held, np.where(held, rel, 0.0) * self._weights(c)[None, :], -np.inf)

    def _ratios(self, k_per_batch, c):
        index = np.searchsorted(self.gammas, k_per_batch)
        return self.relative(c)[index, np.arange(self.max_batch)]

    def kept(self, k_per_batch, c: int = 0, among=None) -> float:
        """What a table keeps of the per-batch optimum (see the module notes):
        over the batches not left out (:meth:`left_out`), or over those in the
        mask ``among`` (a static depth or a tier set counts only the batches
        memory holds at its draft lengths); -inf if a batch counted is one
        memory cannot hold at the table's draft length."""
        ratios = self._ratios(k_per_batch, c)
        w = self._weights(c)
        counted = w > 0 if among is None else (w > 0) & np.asarray(among, dtype=bool)
        if not np.all(np.isfinite(ratios[counted])):
            return -np.inf
        return float(np.sum(ratios[counted] * w[counted]))

    def worst(self, k_per_batch, c: int = 0, among=None) -> tuple:
        """(the smallest throughput ratio to the optimum over the batches
        :meth:`kept` counts, its batch)."""
        ratios = self._ratios(k_per_batch, c)
        counted = ~self.left_out(c) if among is None else ~self.left_out(c) & np.asarray(among, dtype=bool)
        if not counted.any():
            return 1.0, 1
        b = int(np.argmin(np.where(counted, ratios, np.inf)))
        return float(ratios[b]), b + 1

    def _table(self, ks, c, among=None, held_to=None):
        return Table(tuple(ranges_from_lookup(ks[:held_to])), self.kept(ks, c, among), ks, *self.worst(ks, c, among),
                     held_to=held_to)

    def speedup_of(self, k_per_batch, c: int = 0) -> np.ndarray:
        index = np.searchsorted(self.gammas, k_per_batch)
        return self.speedups[c][index, np.arange(self.max_batch)]

    def held_at(self, k: int, c: int = 0) -> int:
        """The largest batch (up to N) memory holds at context ``c`` while drafting ``k``."""
        if self.memory_limits is None:
            return self.max_batch
        return int(min(self.max_batch, np.asarray(self.memory_limits)[c][np.searchsorted(self.gammas, k)]))

    # --- tables under limits ----------------------------------------------------
    def table(self, max_ranges=None, max_k=None, *, first_is_max=False, implicit_zero_tail=False,
              c: int = 0) -> Table:
        """The table of at most ``max_ranges`` ranges, every K at most
        ``max_k``, that keeps the most of the per-batch optimum (dynamic
        programming over batches). ``first_is_max``: the first range's K is
        the table's largest (TensorRT-LLM); ``implicit_zero_tail``: a last
        range of K = 0 is free, not counted (TensorRT-LLM drafts 0 above its
        last key). Ties go to the shorter draft and to fewer ranges."""
        rel = self._weighted(c)
        allowed = np.ones(len(self.gammas), dtype=bool) if max_k is None else self.gammas <= max_k
        if not allowed.any():
            raise ValueError(f"max_k must allow a draft length; got {max_k}")
        best = self._capped_best(rel, allowed)
        ks = self.gammas[best]
        if self.merge_indistinct:
            ks = self._distinct_ks(ks, allowed, c)
        ranges = ranges_from_lookup(ks)
        if not _violates(ranges, max_ranges, first_is_max, implicit_zero_tail):
            return self._table(ks, c)
        if self.merge_indistinct and max_ranges is None and self.interval is not None and c == 0:
            # the engine's rule binds: no more ranges than the interval tells apart
            max_ranges = len(ranges) - (1 if implicit_zero_tail and len(ranges) > 1 and ranges[-1].k == 0 else 0)
        # Draft lengths deeper than every batch's optimum are left out of the
        # search (they lose at every batch when the speedup is unimodal in gamma).
        allowed &= self.gammas <= self.gammas[best].max()
        if max_ranges is None:  # only the first-range rule binds
            ks = _first_is_max_unlimited(rel, self.gammas, allowed)
        else:
            ks = _segment(rel, self.gammas, allowed, max_ranges, first_is_max, implicit_zero_tail)
        return self._table(ks, c)

    def static(self, max_k=None, c: int = 0) -> Table:
        """The one draft length for every batch (SGLang's static
        ``--speculative-num-steps``) that keeps the most. A server at one
        depth holds no more sequences than its memory holds at that depth, so
        each depth is counted over the batches it holds (the table's single
        range ends there, :attr:`Table.held_to`) and the batches above are left
        out of its "kept", as are those :meth:`left_out` leaves out of every
        table. Ties go to the shorter draft."""
        allowed = self.gammas if max_k is None else self.gammas[self.gammas <= max_k]
        if not allowed.size:
            raise ValueError(f"max_k must allow a draft length; got {max_k}")
        best, best_value = None, -np.inf
        for k in allowed:
            held = self.held_at(int(k), c)
            value = self.kept(np.full(self.max_batch, k), c, among=self.batches <= held)
            if value > best_value + 1e-12:
                best, best_value = (int(k), held), value
        k, held = best
        return self._table(np.full(self.max_batch, k, dtype=self.gammas.dtype), c, among=self.batches <= held,
                           held_to=held if held < self.max_batch else None)

    def tiers(self, max_tiers: int = 3, max_k=None, *, allow_zero: bool = False, c: int = 0) -> Tiers:
        """The set of at most ``max_tiers`` draft lengths (>= 1 unless
        ``allow_zero``) that keeps the most when every batch runs its best
        tier in the set that memory holds (an ideal controller); exhaustive
        search over tier sets among the draft lengths up to the deepest
        per-batch optimum. A batch that memory holds at no tier of the set is
        left out of the set's "kept", as are those :meth:`left_out` leaves out
        of every table."""
        rel = self._weighted(c)
        gstar = self.gamma_star_at(c)
        top = int(gstar.max()) if max_k is None else min(int(gstar.max()), max_k)
        lowest = 0 if allow_zero else 1
        candidates = [i for i, g in enumerate(self.gammas) if lowest <= g <= max(top, lowest)]
        if max_k is not None:
            candidates = [i for i in candidates if self.gammas[i] <= max_k]
        if not candidates:
            raise ValueError("no draft length fits the tier limits")
        best, best_key = None, None
        for n in range(1, max_tiers + 1):
            for combo in itertools.combinations(candidates, n):
                per_batch = np.max(rel[list(combo)], axis=0)
                value = float(np.sum(per_batch[np.isfinite(per_batch)]))  # a batch no tier holds counts nothing
                key = (round(value, 12), -n, tuple(-i for i in combo))
                if best_key is None or key > best_key:
                    best, best_key = combo, key
        chosen = np.asarray(best)
        pick = chosen[np.argmax(rel[chosen], axis=0)]
        ks = self.gammas[pick]
        held = self.held_at(int(self.gammas[chosen].min()), c)
        among = self.batches <= held
        return Tiers(tuple(int(self.gammas[i]) for i in best), self.kept(ks, c, among), ks,
                     *self.worst(ks, c, among), held_to=held if held < self.max_batch else None)

    def _distinct_ks(self, ks, allowed, c: int = 0) -> np.ndarray:
        """``ks`` (a draft length per batch) with adjacent ranges merged where
        the interval cannot tell their speed-ups apart (:func:`indistinct_groups`:
        a range's speed-up is its mean over its batches at its draft length,
        its interval the widest of its batches'), each merged run at the one
        allowed draft length that keeps the most over its batches (ties to the
        shorter). A range of K = 0 (plain decoding: the on/off call, marked
        where its interval holds 1x) stays its own. Unchanged without an
        interval or off the reference context."""
        ks = np.asarray(ks).copy()
        base = ranges_from_lookup(ks)
        if self.interval is None or c != 0 or len(base) < 2:
            return ks
        lo, hi = (np.asarray(x, dtype=float) for x in self.interval)
        speed = self._held(c)[np.searchsorted(self.gammas, ks), np.arange(self.max_batch)]
        described = [(float(speed[r.lo - 1:r.hi].mean()), float(lo[r.lo - 1:r.hi].min()),
                      float(hi[r.lo - 1:r.hi].max())) for r in base]
        weighted = np.where(np.asarray(allowed)[:, None], self._weighted(c), -np.inf)
        groups = []  # a K = 0 range (speculation off, another graph regime) is never merged with a drafting one
        start = 0
        for i in range(len(base) + 1):
            if i == len(base) or base[i].k == 0:
                groups += [(start + a, start + b) for a, b in indistinct_groups(described[start:i])]
                if i < len(base):
                    groups.append((i, i))
                start = i + 1
        for first, last in groups:
            if first == last:
                continue
            a, b = base[first].lo - 1, base[last].hi
            part = weighted[:, a:b]
            totals = np.where(np.isfinite(part).all(axis=1), np.sum(np.where(np.isfinite(part), part, 0.0), axis=1),
                              -np.inf)
            ks[a:b] = self.gammas[int(np.argmax(totals))]
        return ks

    @staticmethod
    def _capped_best(rel, allowed):
        masked = np.where(allowed[:, None], rel, -np.inf)
        return np.argmax(masked, axis=0)

    def limited(self, max_ranges=None, max_k=None) -> Schedule:
        """This schedule under an engine's limits: at most ``max_ranges``
        batch ranges (1..:data:`MAX_RANGES`) and no draft length above
        ``max_k``, the limits of :attr:`chosen` and of every table
        :func:`render` writes (None: no limit)."""
        max_ranges, max_k = check_limits(max_ranges, max_k)
        return dataclasses.replace(self, max_ranges=max_ranges, max_k=max_k)

    def every_range(self) -> Schedule:
        """This schedule with its tables built from the per-batch optimum's
        own ranges, none merged for lying inside each other's interval."""
        return dataclasses.replace(self, merge_indistinct=False)

    @property
    def chosen(self) -> Table:
        """The table under this schedule's own limits (``max_ranges``, ``max_k``)."""
        return self.table(self.max_ranges, self.max_k, first_is_max=self.first_is_max)

    def context_cells(self, max_k=None):
        """Batch ranges shared by every context (the union of each context's
        breakpoints) and the capped per-batch optimum K in each: a
        rectangular (batch x context) grid, exact where no range limit binds."""
        allowed = np.ones(len(self.gammas), dtype=bool) if max_k is None else self.gammas <= max_k
        per_context = [self.gammas[self._capped_best(self.relative(c), allowed)] for c in range(len(self.contexts))]
        cuts = sorted({r.lo for ks in per_context for r in ranges_from_lookup(ks)})
        bounds = [(lo, hi - 1) for lo, hi in zip(cuts, cuts[1:] + [self.max_batch + 1])]
        return [((lo, hi), [int(ks[lo - 1]) for ks in per_context]) for lo, hi in bounds]


def _runs_of(mask) -> list:
    """(first, last) batch (from 1) of each run of True in ``mask``."""
    m = np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]])
    edges = np.flatnonzero(np.diff(m))
    return [(int(a) + 1, int(b)) for a, b in zip(edges[::2], edges[1::2])]


def check_limits(max_ranges=None, max_k=None) -> tuple:
    """An engine's limits, checked: ``max_ranges`` in [1, :data:`MAX_RANGES`]
    and ``max_k`` >= 0, each an integer or None."""
    if max_ranges is not None:
        max_ranges = checked_int("max_ranges", max_ranges, lo=1, hi=MAX_RANGES)
    if max_k is not None:
        max_k = checked_int("max_k", max_k, lo=0)
    return max_ranges, max_k


def _violates(ranges, max_ranges, first_is_max, implicit_zero_tail):
    counted = list(ranges)
    if implicit_zero_tail:
        while len(counted) > 1 and counted[-1].k == 0:
            counted.pop()
    if max_ranges is not None and len(counted) > max_ranges:
        return True
    return first_is_max and any(r.k > counted[0].k for r in counted)


def _first_is_max_unlimited(rel, gammas, allowed):
    """Any number of ranges, the first range's K the largest: for each
    first K, batch 1 takes it and every other batch its best K up to it."""
    best_value, best_ks = -np.inf, None
    for i in np.flatnonzero(allowed):
        cap = allowed & (gammas <= gammas[i])
        pick = np.argmax(np.where(cap[:, None], rel, -np.inf), axis=0)
        pick[0] = i
        value = float(rel[pick, np.arange(rel.shape[1])].sum())
        if value > best_value + 1e-12:
            best_value, best_ks = value, gammas[pick]
    return best_ks


def _segment(rel, gammas, allowed, max_ranges, first_is_max, implicit_zero_tail):
    """Draft length per batch maximising sum(rel) with at most ``max_ranges``
    contiguous ranges of one K each (see :meth:`Schedule.table`)."""
    best_value, best_ks = -np.inf, None
    if first_is_max:
        firsts = [i for i in np.flatnonzero(allowed)]
        for i in firsts:
            cap = allowed & (gammas <= gammas[i])
            value, ks = _segment_dp(rel, gammas, cap, max_ranges, i, implicit_zero_tail)
            if value > best_value + 1e-12:
                best_value, best_ks = value, ks
        return best_ks
    return _segment_dp(rel, gammas, allowed, max_ranges, None, implicit_zero_tail)[1]


def _segment_dp(rel, gammas, allowed, max_ranges, first, implicit_zero_tail):
    """dp[r, j]: best sum over batches 1..b with r ranges, the last of K
    index idx[j]. A new range may start with any K (one equal to the previous
    merges away, so the count is an upper bound). Back pointers: -1 continues
    the range, j' starts a new one after a range of idx[j']."""
    idx = np.flatnonzero(allowed)
    R = rel[idx]
    m, n = R.shape
    rmax = min(max_ranges, n)
    neg = -np.inf
    dp = np.full((rmax + 1, m), neg)
    if first is None:
        dp[1] = R[:, 0]
    else:
        j0 = int(np.flatnonzero(idx == first)[0])
        dp[1, j0] = R[j0, 0]
    back = np.full((n, rmax + 1, m), -1, dtype=np.int16)
    prefix_best = np.empty((n, rmax + 1))
    prefix_arg = np.empty((n, rmax + 1), dtype=np.int16)
    prefix_best[0], prefix_arg[0] = dp.max(axis=1), dp.argmax(axis=1)
    for b in range(1, n):
        top = dp.max(axis=1)
        arg = dp.argmax(axis=1)
        new = np.full_like(dp, neg)
        new[1:] = top[:-1, None]
        start = new > dp + 1e-12  # ties continue the range
        prev_arg = np.zeros(dp.shape, dtype=np.int16)
        prev_arg[1:] = arg[:-1, None]
        back[b][start] = prev_arg[start]
        dp = np.where(start, new, dp) + R[:, b]
        prefix_best[b], prefix_arg[b] = dp.max(axis=1), dp.argmax(axis=1)
    zero = np.flatnonzero(gammas == 0)
    # The end: all n batches in ranges, or (implicit zero tail) the first e
    # batches in ranges and K = 0 from e + 1 on.
    ends = np.full((n, rmax + 1), -np.inf)  # ends[e - 1, r]: ranges over 1..e, then K = 0
    ends[n - 1] = prefix_best[n - 1]
    if implicit_zero_tail and zero.size:
        tail = np.cumsum(rel[zero[0]][::-1])[::-1]  # tail[i] = sum over batch indices i..n-1
        ends[:-1] = prefix_best[:-1] + tail[1:, None]
    ends[:, 0] = -np.inf
    value = float(ends.max())
    near = np.argwhere(ends >= value - 1e-12)
    end_index, r = min(near.tolist(), key=lambda er: (er[1], -er[0]))  # fewest ranges, then the longest
    end, r = end_index + 1, int(r)
    ks = np.empty(n, dtype=gammas.dtype)
    if end < n:
        ks[end:] = 0
    j, b = int(prefix_arg[end - 1, r]), end - 1
    while b >= 0:
        ks[b] = gammas[idx[j]]
        p = back[b, r, j]
        if p >= 0 and b > 0:
            r, j = r - 1, int(p)
        b -= 1
    return float(value), ks


# --- building a schedule -------------------------------------------------------------
def read_acceptance(path) -> "_acc.SurvivalCurve":
    """A survival curve from a file: a JSON list, a JSON object with
    ``survival`` (or the key after ``#``: ``survival.json#mtp``), or numbers
    separated by commas or white space."""
    import json

    text_path, _, key = str(path).partition("#")
    try:
        with open(text_path, encoding="utf-8") as stream:
            text = stream.read()
    except OSError as exc:
        raise ValueError(f"cannot read {text_path!r} ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = [float(x) for x in text.replace(",", " ").split()]
        except ValueError:
            raise ValueError(f"{text_path}: neither JSON nor numbers separated by commas or spaces") from None
    if isinstance(data, dict):
        key = key or "survival"
        if key not in data:
            raise ValueError(f"{text_path}: no key {key!r} (keys: {', '.join(map(str, data))}; pick one with "
                             f"{text_path}#KEY)")
        data = data[key]
    if not isinstance(data, list) or not data or not all(isinstance(x, (int, float)) for x in data):
        raise ValueError(f"{text_path}: the survival curve must be a non-empty list of numbers")
    return _acc.SurvivalCurve(np.asarray(data, dtype=float), name=str(path))


def schedule(model=None, hardware=None, seq=4096, *, alpha=None, c_draft=None, max_batch: int = 256,
             gamma_max: int = 64, deployment=None, step_costs=None) -> Schedule:
    """gamma* for every batch size 1..``max_batch`` and the tables an engine reads.

    ``seq``: one context length or several (the first is the reference of
    the batch-only tables; the others feed the context axis). ``alpha``: an
    i.i.d. acceptance, a survival curve (a :class:`~speclib.SurvivalCurve`;
    :func:`read_acceptance` reads one from a file), or None with a drafter
    preset (its measured curve). ``deployment`` (or ``model`` and
    ``hardware``, the shorthand): a :class:`~speclib.Deployment` pricing the
    steps as :meth:`speclib.Deployment.pricing` does (its drafter or
    ``c_draft``, roofline, ``step_time``, ``tp``, ``engine``, routing). Or
    ``step_costs`` (a :class:`StepCosts` or a CSV path), measured at one
    context, replaces the model's step (the drafter preset still fixes the
    longest draft and the default curve). The batch range stops at the
    largest batch whose weights and caches fit in the deployment's ``tp``
    GPUs at the first context with its fraction ``reserve`` of HBM kept free
    (:func:`speclib.core.capacity.max_batch`; ``reserve=None`` skips the
    check). The engine's limits (a number of ranges, a largest K) are set
    on the result: :meth:`Schedule.limited`. Its tables merge adjacent
    ranges whose speed-ups lie inside each other's interval
    (:func:`indistinct_groups`), where the calibrated step gives one;
    :meth:`Schedule.every_range` keeps every change of the per-batch optimum.
    """
    max_batch = int(max_batch)
    if not 1 <= max_batch <= MAX_BATCH:
        raise ValueError(f"max_batch must be an integer in [1, {MAX_BATCH}]; got {max_batch}")
    contexts = tuple(float(s) for s in np.atleast_1d(np.asarray(seq, dtype=float)))
    if not contexts or any(not (s > 0 and math.isfinite(s)) for s in contexts):
        raise ValueError(f"seq must be context lengths in (0, inf); got {seq!r}")
    if len(set(contexts)) != len(contexts):
        raise ValueError(f"seq must not repeat a context length; got {seq!r}")
    dep = _model_deployment(deployment, model, hardware)
    m, hw = dep.model, dep.hardware
    if step_costs is not None and not isinstance(step_costs, StepCosts):
        step_costs = StepCosts.read(step_costs)
    if step_costs is not None and (c_draft is not None or dep.c_draft is not None):
        raise ValueError("c_draft: measured step costs already include drafting; give one or the other")
    if step_costs is not None and len(contexts) > 1:
        raise ValueError("seq: measured step costs are at one context length; give one seq (or none)")
    priced = dep.pricing(c_draft)
    max_batch, memory = _memory_cap(dep, contexts[0], max_batch)
    accepted = _acc.Acceptance.of(alpha, priced)
    B = np.arange(1, max_batch + 1, dtype=float)
    top = int(gamma_max)
    for cap in (accepted.max_gamma, priced.max_gamma):
        if cap is not None:
            top = min(top, cap)
    if step_costs is None:
        gammas = np.arange(top + 1)
        tables = np.stack([_spec.speedup_table(priced, accepted, B, np.full_like(B, s), top) for s in contexts])
        source = f"{dep.roofline} roofline" if dep.step_time == "roofline" else (
            f"{dep.step_time} step time ({_cal.spelled(dep.engine)} per-step costs, {dep.roofline} roofline, tp {dep.tp})")
        held = tables[0]
        if dep.reserve is not None:  # the best draft of at least one among those memory holds at each batch
            fits = B[None, :] <= np.asarray(dep.max_batch(contexts[0], gammas.astype(float)))[:, None]
            held = np.where(fits, held, -np.inf)
        interval, notes = _calibrated_interval(dep, c_draft, accepted, held, B, contexts[0])
        if dep.step_time == "measured":  # what the kernel tables do not reach, at the draft each batch takes
            chosen = np.argmax(np.where(np.isfinite(held), held, -np.inf), axis=0).astype(float)
            notes = dep.extrapolates(B, chosen + 1.0, max(contexts))
        warnings = (ROOFLINE_WARNING,) if dep.step_time == "roofline" else ()
    else:
        step_costs.check_batches(1, max_batch)
        keep = step_costs.gammas <= top
        gammas = step_costs.gammas[keep]
        seconds = step_costs.at(B)[keep]
        n = accepted.committed(gammas.astype(float)[:, None])
        tables = nf.priced_speedup(n, seconds[0][None, :], seconds)[None]
        source = f"measured step costs ({step_costs.path})"
        interval, notes, warnings = None, (), ()
    limits = None
    if dep.reserve is not None:
        limits = np.stack([np.asarray(dep.max_batch(s, np.asarray(gammas, dtype=float))) for s in contexts])
    return Schedule(
        model=m.name, hardware=hw.name, contexts=contexts, acceptance=accepted.describe(),
        drafter=priced.drafter.name, roofline=dep.roofline, source=source, gammas=np.asarray(gammas),
        speedups=np.asarray(tables, dtype=float), memory=memory, interval=interval, notes=notes,
        warnings=warnings, memory_limits=limits, where=where_of(dep), mtp_layers=m.mtp_layers,
        drafter_kind=priced.drafter.kind, attention=dep.attention, tp=dep.tp, ep=dep.ep,
        dp_attention=dep.dp_attention, precision=dep.precision_words(),
        interval_name=_cal.interval_name(dep.model) if interval is not None else "",
    )


def _calibrated_interval(dep, c_draft, accepted, table, B, S):
    """(the 80 % cross-conformal interval by model family per batch of the best draft length of at least one
    (:func:`speclib.core.speculation.draft_interval`), the calibration's
    notes) under a calibrated step; (None, ()) otherwise."""
    calibration = _cal.calibration_of(dep.step_time)
    if calibration is None:
        return None, ()
    notes = calibration.notes(dep.model, dep.hardware, dep.engine, B)
    return _spec.draft_interval(dep, c_draft, accepted, table, B, np.full_like(B, S)), notes


def _model_deployment(deployment, model, hardware):
    """The deployment of a schedule or a profile: a model on a chip (a cost
    model alone names neither)."""
    dep = _deployment_of(deployment, model, hardware)
    if dep.cost_model is not None:
        raise ValueError("cost_model: a schedule prices a model on a chip (its memory, its layers in seconds); give "
                         "the deployment a model and hardware instead")
    return dep


def where_of(dep) -> str:
    """Where a deployment runs, in words: "one B200", "8 x H200 (TP8 EP8 data-parallel attention)"."""
    if dep.tp == 1:
        return f"one {dep.hardware.name}"
    return (f"{dep.tp} x {dep.hardware.name}" + ("" if dep.layout.plain else f" ({dep.layout})")
            + dep.interconnect_words())


def _memory_cap(dep, context, max_batch):
    """(batches to cover, a line saying why) under the deployment's memory
    check (:meth:`speclib.Deployment.max_batch` without a draft; each draft
    length's own limit is applied per batch by :class:`Schedule`)."""
    if dep.reserve is None:
        return max_batch, ""
    fit = dep.max_batch(context)
    where, reserve = where_of(dep), dep.reserve
    if fit == 0:
        if dep.layout.plain:
            need = _capacity.min_tp(1, context, dep.model, dep.hardware, reserve=reserve)
            raise ValueError(f"tp must be at least {need}: {dep.model.name}'s weights do not fit on {where} with "
                             f"{reserve:.0%} of HBM kept free")
        raise ValueError(f"tp: {dep.model.name}'s weights do not fit on {where} with {reserve:.0%} of HBM kept free")
    if fit >= max_batch:
        return max_batch, f"memory: all {max_batch:,} batch sizes fit on {where} at context {context:g} without drafting"
    return fit, (f"memory: capped at batch {fit:,}, the largest {where} holds at context {context:g} without "
                 f"drafting, with {reserve:.0%} of HBM kept free (asked for {max_batch:,})")


def profile(model=None, hardware=None, seq=4096, *, c_draft=None, batches=None, max_batch: int = 256,
            gamma_max: int = 16, deployment=None) -> StepCosts:
    """The model's own step costs as a :class:`StepCosts` table (what
    ``speclib profile`` writes): seconds of a speculative step, verify and
    draft, at each batch (1..max_batch unless ``batches``) and draft length
    0..gamma_max (capped at the drafter's block), priced as the
    ``deployment`` (or the default one of ``model`` on ``hardware``) says
    (see :func:`schedule`)."""
    dep = _model_deployment(deployment, model, hardware)
    m, hw = dep.model, dep.hardware
    priced = dep.pricing(c_draft)
    top = int(gamma_max) if priced.max_gamma is None else min(int(gamma_max), priced.max_gamma)
    B = np.arange(1, int(max_batch) + 1, dtype=float) if batches is None else np.unique(np.asarray(batches, float))
    if B.size == 0 or B[0] < 1 or np.any(B != np.round(B)):
        raise ValueError("batches must be whole numbers >= 1")
    gammas = np.arange(top + 1)
    seconds = model_step_seconds(priced, gammas, B, float(seq), m, hw, tp=dep.tp)
    return StepCosts(B, gammas, seconds, f"speclib profile of {m.name} on {hw.name}", attention=dep.attention)


# --- writing a schedule in each engine's form ------------------------------------------
ENGINES = ("vllm", "trtllm", "sglang", "table")

KEPT_DEFINITION = ("kept = mean over batch sizes B = 1..N, weighted by 1/B, of throughput at the table's K / "
                   "throughput at gamma*(B), over the batches memory holds both with a draft and without (a static "
                   "depth or a tier set: those it holds); worst = the batch size that keeps least")


def method_for(sched: Schedule, engine: str, method=None, draft_model: str | None = None) -> tuple:
    """(the :class:`~speclib.tools.methods.Method`, its name in ``engine``) of
    a configuration of ``sched`` for ``engine``: ``method`` (speclib's name or
    the engine's), or the one the schedule implies (its drafter preset's kind,
    else the model's own MTP layers); checked against the model's drafters and
    the engine's, with ``draft_model``, the drafter's checkpoint, where the
    engine needs one (:func:`speclib.tools.methods.resolve`)."""
    from . import methods

    return methods.resolve(method, engine, model=sched.model, mtp_layers=sched.mtp_layers,
                           drafter_kind=sched.drafter_kind if sched.drafter_kind != "constant" else None,
                           draft_model=draft_model)


def engine_notes(sched: Schedule, engine: str, method=None, draft_model: str | None = None) -> list:
    """What ``engine``'s per-batch table can and cannot do with this
    configuration's method (:mod:`speclib.tools.engines`): the lines a vLLM
    configuration, JSON without comments, leaves to standard error."""
    from . import engines

    if engine == "table":
        return []
    _, name = method_for(sched, engine, method, draft_model)
    if engine == "vllm":
        return engines.vllm_limits(name, sched.table(sched.max_ranges, sched.max_k).ranges, sched.max_batch)
    return {"trtllm": engines.trtllm_limits, "sglang": engines.sglang_limits}[engine](name)


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %" if x < 0.9995 or x >= 1.0 - 1e-12 else f"{100 * x:.2f} %"


def _worst(tab) -> str:
    if tab.worst >= 1.0 - 1e-12:
        return "every batch at its optimum"
    return f"worst batch {tab.worst_batch}: {_pct(tab.worst)}"


def _wrap(text: str, width: int, first: str = "", rest: str = "  ") -> list:
    """``text`` as lines of at most ``width`` characters (where its words
    allow), the first starting with ``first`` and the others with ``rest``."""
    return textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False) or [first.rstrip()]


def _comments(lines, width: int) -> list:
    """Each line as YAML comment lines of at most ``width`` characters."""
    return [out for line in lines for out in _wrap(line, width, "# ", "#   ")]


def header_line(sched: Schedule) -> str:
    """The header's first line: what the schedule is of and how it was
    priced (DeepSeek-V4's attention included)."""
    contexts = ", ".join(f"{s:g}" for s in sched.contexts)
    return (f"{sched.model} on {sched.hardware}; context {contexts} tokens; {sched.acceptance}; "
            f"drafter {sched.drafter}; cost: {sched.source}; {_cost.ATTENTION_WORDS[sched.attention]}"
            + (f"; precision: {sched.precision}" if sched.precision else ""))


def _header(sched: Schedule) -> list:
    """What the schedule is of, how it was priced, and what it extrapolates,
    one item a line (:func:`_wrap` fits them to a width)."""
    lines = [
        header_line(sched),
        f"batch sizes 1..{sched.max_batch}; draft lengths searched: {_span(sched.gammas)}",
        *([sched.memory] if sched.memory else []),
        *sched.memory_lines(),
        *(f"warning: {warning}" for warning in sched.warnings),
        *(f"note: extrapolates: {note}" for note in sched.notes),
        *(f"left out of every kept: batch{'es' if lo != hi else ''} {_span_of(lo, hi)}: {why}"
          for lo, hi, why in sched.left_out_reasons()),
    ]
    if sched.interval is not None:
        spans = sched.uncertain_ranges()
        lines.append("interval: " + sched.interval_name + "; of the speed-up of the best draft of at least one "
                     "token; "
                     + ("it holds 1x (so gamma = 0 is as likely as not: '?') at batch sizes "
                        + ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans) if spans
                        else "it stays on one side of 1x at every batch size"))
    return lines


def _span_of(lo: int, hi: int) -> str:
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def _held_note(sched: Schedule, tab) -> str:
    """What a static depth or a tier set leaves out: the batches above what memory holds at its draft length."""
    if tab.held_to is None:
        return ""
    return (f"; memory holds {tab.held_to:,} sequences at it, so batches {_span_of(tab.held_to + 1, sched.max_batch)} "
            "are left out of its kept")


def _span(gammas) -> str:
    g = [int(x) for x in gammas]
    return f"{g[0]}..{g[-1]}" if g == list(range(g[0], g[-1] + 1)) else ", ".join(map(str, g))


def _engine_tables(sched: Schedule):
    """The table each engine gets under this schedule's limits."""
    limits = dict(max_ranges=sched.max_ranges, max_k=sched.max_k)
    return {
        "vllm": sched.table(**limits),
        "trtllm": sched.table(**limits, first_is_max=True, implicit_zero_tail=True),
        "sglang": sched.table(**limits),
        "sglang-static": sched.static(sched.max_k),
        "sglang-adaptive": sched.tiers(3, max_k=sched.max_k),
    }


def render(sched: Schedule, engine: str, method: str | None = None, width: int = TEXT_WIDTH,
           draft_model: str | None = None) -> str:
    """The text ``speclib schedule --engine ENGINE`` prints, its prose and
    comments wrapped to ``width`` characters (a JSON or YAML value is never
    split: a long YAML value is folded, which reads back the same).
    ``method`` and ``draft_model`` (the drafter's checkpoint) are checked
    against the model and the engine by :func:`method_for`; a method the
    model lacks, or a missing path, is a ValueError naming the parameter."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    width = checked_int("width", width, lo=40)
    if engine == "table":
        return _render_table(sched, width)
    chosen, name = method_for(sched, engine, method, draft_model)
    path = draft_model if chosen.needs_path else None
    if engine == "vllm":
        return _render_vllm(sched, name, path)
    if engine == "trtllm":
        return _render_trtllm(sched, name, path, width)
    return _render_sglang(sched, name, path, width)


def _render_vllm(sched, method, path):
    from . import engines

    table = sched.table(sched.max_ranges, sched.max_k)
    config = engines.vllm_config(table.ranges, method=method, model=path)
    if len(sched.contexts) == 1:
        return engines.dumps_json(engines.vllm_serving(config, sched.max_batch)) + "\n"
    order = np.argsort(sched.contexts)
    buckets = engines.context_buckets([sched.contexts[i] for i in order])
    cells = [(bounds, [ks[i] for i in order]) for bounds, ks in sched.context_cells(sched.max_k)]
    proposed = engines.vllm_context_config(cells, buckets, method=method, model=path)
    document = {
        **engines.vllm_serving(config, sched.max_batch),
        "proposed_context_axis": {
            "status": "proposed, not in a vLLM release: RFC vllm-project/vllm#48627, pull request #48944",
            "reference_context": sched.contexts[0],
            "contexts": [sched.contexts[i] for i in order],
            "speculative_config": proposed,
        },
    }
    return engines.dumps_json(document) + "\n"


def _render_trtllm(sched, decoding_type, path, width):
    import yaml

    from . import engines

    table = sched.table(sched.max_ranges, sched.max_k, first_is_max=True, implicit_zero_tail=True)
    max_draft_len, schedule_map, concurrency = engines.trtllm_schedule(table.ranges)
    config = engines.trtllm_config(table.ranges, decoding_type=decoding_type, speculative_model=path,
                                   max_batch_size=sched.max_batch)
    lines = _header(sched) + [
        f"max_batch_size and cuda_graph_config (graphs to {sched.max_batch:,}, padding on) run the batch the "
        f"table is priced to on CUDA graphs; fields as read in {engines.TRTLLM_SOURCE}.",
        "TensorRT-LLM LLM API options (trtllm-serve / trtllm-bench --config FILE): draft length per batch size.",
        f"Keys are the upper ends of batch ranges; above {max(schedule_map)} TensorRT-LLM drafts 0.",
        f"max_concurrency: {concurrency if concurrency is not None else 'none (never speculate)'}  "
        "(speculation is off above it; implied by draft_len_schedule, and TensorRT-LLM rejects the two together)",
        f"The first key must map to max_draft_len: this table keeps {_pct(table.kept)} of the per-batch optimum "
        f"({_worst(table)}).",
        *(["No speculative_config: the table drafts 0 at every batch, and TensorRT-LLM refuses max_draft_len 0 "
           f"for {decoding_type}, so the server runs without speculation."] if max_draft_len == 0 else []),
        *(f"limit: {line}" for line in engines.trtllm_limits(decoding_type)),
        f"{KEPT_DEFINITION}.",
    ]
    return "\n".join(_comments(lines, width)) + "\n" + yaml.safe_dump(config, sort_keys=False,
                                                                   default_flow_style=False, width=width)


def _render_sglang(sched, algorithm, path, width):
    import yaml

    from . import engines

    table = sched.table(sched.max_ranges, sched.max_k)
    static = sched.static(sched.max_k)
    k = int(static.ranges[0].k)
    why_static = engines.sglang_static_reason(algorithm, sched.dp_attention)
    adaptive = why_static is None
    layout = dict(tp=sched.tp, ep=sched.ep, dp_attention=sched.dp_attention)
    serving = engines.sglang_serving_args(sched.max_batch, **layout)
    document = {"release": f"SGLang {engines.SGLANG_RELEASE}"}
    if why_static:
        document["static_only"] = why_static
    lines = _header(sched) + [
        f"SGLang {engines.SGLANG_RELEASE} (its parser read in the release's source): with speculation on and "
        f"--max-running-requests unset it runs at most {engines.SGLANG_SPEC_RUNNING_CAP} requests and its decode "
        "CUDA graphs stop at that pool, so every args line sets --max-running-requests and "
        "--cuda-graph-max-bs-decode to the largest batch it is set for."]
    if adaptive:
        document["by_batch_size"] = {
            "adaptive_config": engines.sglang_slots_config(table.ranges),
            "args": engines.sglang_slots_args(table.ranges, algorithm, path) + " " + serving,
            "kept": round(table.kept, 6),
        }
        lines += [
            "by_batch_size: one server whose draft length follows the batch. SGLang's current source keys "
            "--speculative-adaptive-config by batch size (adaptive_spec_params.py; batch-size slots since pull "
            "request sgl-project/sglang#24055): one slot per batch range, keyed by its first batch, with one "
            "candidate, so the controller never moves it (0: no drafting); write adaptive_config to "
            f"adaptive_spec.json. {len(table)} slots keep {_pct(table.kept)} of the per-batch optimum "
            f"({_worst(table)}). SGLang pads a batch to its CUDA-graph size before it picks the slot, so just "
            "below a slot's first batch its draft length may already run.",
        ]
    document["static"] = {
        "batch_sizes": [1, static.ranges[0].hi],
        "gamma": k,
        "kept": round(static.kept, 6),
        "args": " ".join(a for a in (engines.sglang_static_args(k, algorithm, path),
                                     engines.sglang_serving_args(static.held_to or sched.max_batch, **layout)) if a),
    }
    lines.append(f"static: one depth for every batch size (args empty: plain decoding): {k} keeps "
                 f"{_pct(static.kept)} ({_worst(static)}){_held_note(sched, static)}.")
    if adaptive:
        tiers = sched.tiers(3, max_k=sched.max_k)
        initial = tiers.tiers[len(tiers.tiers) // 2]
        document["adaptive_tiers"] = {
            "candidate_steps": list(tiers.tiers),
            "adaptive_config": engines.sglang_adaptive_config(tiers.tiers),
            "args": engines.sglang_adaptive_args(tiers.tiers, initial, algorithm, path) + " "
                    + engines.sglang_serving_args(tiers.held_to or sched.max_batch, **layout),
            "kept": round(tiers.kept, 6),
            "best_tier_by_batch": [[r.lo, r.hi, r.k] for r in tiers.ranges],
        }
        lines.append("adaptive_tiers: the mode SGLang's adaptive-decoding page documents (tiers >= 1, switched on "
                     "an EMA of the accepted length, not on the batch size), written as one slot from batch 1 "
                     f"because SGLang {engines.SGLANG_RELEASE} refuses a config without a batch-size key: if every "
                     "batch ran its best tier, these "
                     f"keep {_pct(tiers.kept)} ({_worst(tiers)}){_held_note(sched, tiers)}; what the controller "
                     "does is not this.")
    if why_static:
        lines.append(f"static only: {why_static}.")
    lines += [*(f"limit: {line}" for line in engines.sglang_limits(algorithm)), f"{KEPT_DEFINITION}."]
    body = yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=10_000)
    return "\n".join(_comments(lines, width)) + "\n" + _fold_args(body, width)


def _fold_args(body: str, width: int) -> str:
    """Each ``args:`` line of a YAML document longer than ``width`` as a
    folded block, one flag and its value a line (it reads back as the same
    string: a folded block joins its lines with spaces)."""
    out = []
    for line in body.splitlines():
        head, sep, value = line.partition("args: ")
        if sep and len(line) > width and value.startswith("--") and not head.strip(" -"):
            indent = " " * (len(head) + 2)
            groups = []
            for word in value.split():
                if word.startswith("--") or not groups:
                    groups.append(word)
                elif len(indent) + len(groups[-1]) + 1 + len(word) > width:  # a long value on a line of its own
                    groups.append(word)
                else:
                    groups[-1] += " " + word
            out += [f"{head}args: >-"] + [indent + g for g in groups]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _render_table(sched, width):
    speed = sched.speedup
    rows = []
    for r in _split_on(sched.ranges, sched.uncertain):
        lo, hi = float(speed[r.lo - 1:r.hi].min()), float(speed[r.lo - 1:r.hi].max())
        text = f"{lo:.3f}x" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}x"
        row = (f"{r.lo}" if r.lo == r.hi else f"{r.lo}-{r.hi}", str(r.k), text)
        if sched.interval is not None:
            ilo = float(sched.interval[0][r.lo - 1:r.hi].min())
            ihi = float(sched.interval[1][r.lo - 1:r.hi].max())
            row += (f"{ilo:.2f}-{ihi:.2f}x", "?" if sched.uncertain[r.lo - 1] else "")
        rows.append(row)
    lines = [out for line in _header(sched) for out in _wrap(line, width)]
    lines += [""] + _wrap("gamma* per batch size (the per-batch optimum, adjacent batches merged):", width, "", "")
    lines += [""]
    headers = ("batch sizes", "gamma*", "speedup")
    if sched.interval is not None:
        headers += ("80 % interval", "1x inside")
    lines += ["  " + line for line in _format_table(headers, rows)]
    limit = []
    if sched.max_ranges is not None:
        limit.append(f"at most {sched.max_ranges} ranges")
    if sched.max_k is not None:
        limit.append(f"K <= {sched.max_k}")
    tables = _engine_tables(sched)
    lines += [""] + _wrap("What each engine's limits cost" + (f" ({', '.join(limit)})" if limit else "") + ":",
                          width, "", "") + [""]
    v, t, s = tables["vllm"], tables["trtllm"], tables["sglang"]
    one, a = tables["sglang-static"], tables["sglang-adaptive"]
    entries = [
        ("vLLM num_speculative_tokens_per_batch_size", f"{len(v)} ranges keep", v),
        ("TensorRT-LLM draft_len_schedule (first key = max_draft_len)",
         f"{len([r for r in t.ranges if r.k > 0 or r is not t.ranges[-1]])} keys keep", t),
        ("SGLang adaptive slots by batch size (EAGLE, EAGLE3)", f"{len(s)} slots keep", s),
        ("SGLang, one static depth", f"{one.ranges[0].k} keeps", one),
        (f"SGLang adaptive tiers {list(a.tiers)} (ideal controller)", f"{len(a.tiers)} tiers keep", a),
    ]
    for name, count, tab in entries:
        lines += _wrap(f"{name}: {count} {_pct(tab.kept)} of the per-batch optimum ({_worst(tab)})"
                       f"{_held_note(sched, tab) if isinstance(tab, (Table, Tiers)) else ''}", width, "  ", "    ")
    if sched.max_ranges is None:
        lines += [""] + _wrap("Fewer ranges (vLLM's table, chosen to lose the least):", width, "", "") + [""]
        optimum = len(v)
        for n in [n for n in (1, 2, 3, 4, 6, 8) if n < optimum]:
            tab = sched.table(n, sched.max_k)
            lines += _wrap(f"{n} range{'s keep' if n > 1 else ' keeps'} {_pct(tab.kept)} of the per-batch optimum "
                           f"({_worst(tab)}): " + ", ".join(f"{r.lo}-{r.hi}:{r.k}" for r in tab.ranges),
                           width, "  ", "    ")
    lines += [""] + _wrap(f"{KEPT_DEFINITION}.", width, "", "")
    lines += _wrap("vLLM keeps the last range's K above the table; TensorRT-LLM drafts 0 above its last key.",
                   width, "", "")
    return "\n".join(lines) + "\n"


def _split_on(ranges, flag) -> list:
    """``ranges`` cut where ``flag`` (one per batch) changes, so each piece is all flagged or none."""
    out = []
    for r in ranges:
        start = r.lo
        for b in range(r.lo + 1, r.hi + 1):
            if flag[b - 1] != flag[b - 2]:
                out.append(dataclasses.replace(r, lo=start, hi=b - 1))
                start = b
        out.append(dataclasses.replace(r, lo=start, hi=r.hi))
    return out


def _format_table(headers, rows) -> list:
    cells = [list(headers)] + [list(r) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
            for row in cells]


# --- ranges the interval can tell apart ------------------------------------------------------
def _apart(a, b) -> bool:
    """Whether two ranges, each (speed-up, interval low, interval high), can be
    told apart: one's speed-up lies outside the other's interval."""
    return not (a[1] <= b[0] <= a[2] and b[1] <= a[0] <= b[2])


def indistinct_groups(ranges) -> list:
    """The fewest runs of adjacent ranges, each range given as (speed-up,
    interval low, interval high), such that no two ranges in a run can be
    told apart (each one's speed-up inside the other's interval), as
    (first, last) indices: exact, by dynamic programming over the runs'
    last range. Ties keep the earliest cut."""
    n = len(ranges)
    if n == 0:
        return []
    ok = [[False] * n for _ in range(n)]  # ok[i][j]: ranges i..j mutually indistinct
    for i in range(n):
        ok[i][i] = True
        for j in range(i + 1, n):
            ok[i][j] = ok[i][j - 1] and all(not _apart(ranges[k], ranges[j]) for k in range(i, j))
    best = [0] + [math.inf] * n  # best[j]: fewest runs over ranges 0..j-1
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            if ok[i][j - 1] and best[i] + 1 < best[j]:
                best[j], cut[j] = best[i] + 1, i
    groups, j = [], n
    while j > 0:
        groups.append((cut[j], j - 1))
        j = cut[j]
    return groups[::-1]


def distinct_table(sched: "Schedule", c: int = 0) -> "Table":
    """The per-batch optimum with adjacent ranges merged where the interval
    cannot tell their speed-ups apart (:func:`indistinct_groups`; each range's
    speed-up is its mean over its batches, its interval the widest of its
    batches'), each merged run at the one draft length that keeps the most
    over its batches (ties to the shorter). Without an interval: the
    per-batch optimum's own ranges."""
    ks = sched._distinct_ks(sched.gamma_star_at(c), np.ones(len(sched.gammas), dtype=bool), c)
    return sched._table(ks, c)
