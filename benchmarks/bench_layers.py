"""One layer's components timed on a GPU: the paper's mechanism measured
(issue 37), each point beside the roofline speclib gives for it.

On a machine with one NVIDIA H100 or H200 and PyTorch with CUDA, from the
repository root:

    python benchmarks/bench_layers.py --out "$OUT" --budget-s 420

It writes one file, ``<gpu>-layers.json`` (the slug of the device name torch
reports: ``h100-80gb-hbm3-layers.json`` on an H100 SXM), into ``--out``, rewritten after every point so that a run cut short
still leaves what it measured, and ends within ``--budget-s`` seconds of its
start (about 7 minutes): the grid is planned up front from a cost estimate
to fit the budget, the points that do not fit are listed in the file as
trimmed, and the run stops adding points if the clock says the next one
would not fit. A maintainer copies the file to ``speclib/data/measured/``;
:mod:`speclib.evidence.silicon` reads it.

What is timed (weights, caches and inputs random, seeded):

* ``moe``: one mixture-of-experts layer's routed experts (gate and up as one
  GEMM, SwiGLU, down) for B x T positions already dispatched (sorted by
  expert), top-k routing drawn uniformly, reading only the experts the tokens
  touch: ``torch._grouped_mm`` (``_scaled_grouped_mm`` in fp8) over every
  expert with the untouched ones given no rows, or a loop over the touched
  experts, whichever is faster at the point (the grouped kernel is used only
  after it agrees with the loop on a small case); DeepSeek-V3/R1, Qwen3-30B-A3B,
  gpt-oss-120b;
* ``dense``: the MLP of Llama-3.1-8B and Llama-3.3-70B for the same positions;
* ``attention``: B sequences of T query positions over S cached tokens, no
  causal mask (every query attends to all S): MLA in its absorbed form
  (DeepSeek-V3: 128 heads reading one shared 576-wide latent per token, as
  one head of T x 128 query rows; the values are the latent's first 512)
  and GQA (Llama-3.3-70B: 64 query heads, 8 KV heads of 128), by a batched
  matmul or by ``scaled_dot_product_attention`` with one backend forced,
  whichever is faster at the point; bf16 only.

Each point is captured in a CUDA graph (eager if the capture fails, and
recorded), warmed up, then replayed ``--repeats`` times (at least 20), each
replay timed by CUDA events with L2 flushed before it; its ``seconds`` is
the median. bf16 everywhere, and fp8 (e4m3, unit scales) for the FFN GEMMs on
chips of compute capability 8.9 and up.

Without a GPU:

    python benchmarks/bench_layers.py                  # prints the plan for an H100 and an H200 (scripts/bench.sh)
    python benchmarks/bench_layers.py --dry-run --out /tmp/dry   # tiny shapes on the CPU, wall-clock timing

The planner, the runner and the file writer import no torch (the tests drive
them with a fake timer); only the timer does.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
import zlib

import numpy as np

try:
    import speclib
except ImportError:  # run as a script from the repository root: this folder is on the path, the root is not
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import speclib
from speclib.evidence import silicon
from speclib.presets import model as model_preset

# --- the grid ------------------------------------------------------------------------------

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
WIDTHS = (1, 2, 3, 4, 6, 8)
CONTEXTS = (1024, 4096, 16384, 32768)
MOE_SHAPES = ("DeepSeek-V3", "Qwen3-30B-A3B", "gpt-oss-120b")
DENSE_SHAPES = ("Llama-3.1-8B", "Llama-3-70B")
ATTENTION_SHAPES = ("DeepSeek-V3", "Llama-3-70B")  # MLA, GQA
FFN_DTYPES = ("bf16", "fp8")
#: The batches and contexts measured first: the grid's ends and a few between.
CORE_BATCHES = (1, 4, 16, 64, 256)
CORE_ATTENTION_BATCHES = (1, 8, 64)
CORE_CONTEXTS = (4096, 32768)
#: The dry run's grid: tiny shapes on the CPU.
DRY_BATCHES, DRY_WIDTHS, DRY_CONTEXTS, DRY_SCALE = (1, 2), (1, 2, 3), (256,), 16


@dataclasses.dataclass(frozen=True)
class Point:
    """One measurement: ``kind`` of ``shape`` over B sequences of T positions
    (and S cached tokens for attention) in ``dtype``; ``tier`` orders the
    grid (0 first)."""

    kind: str
    shape: str
    B: int
    T: int
    S: int | None
    dtype: str
    tier: int

    @property
    def group(self) -> tuple:
        """What a run of points shares (the weights or the cache it allocates once)."""
        return (self.kind, self.shape, self.dtype, self.S)

    def record(self) -> dict:
        out = {"kind": self.kind, "shape": self.shape, "B": self.B, "T": self.T, "dtype": self.dtype}
        if self.kind == "attention":
            out["S"] = self.S
        return out


def tier(kind: str, B: int, S, dtype: str) -> int:
    """The bf16 FFN at the core batches first, then fp8 there, then the other
    batches; attention at the core batches and contexts first."""
    if kind in ("moe", "dense"):
        return (0 if B in CORE_BATCHES else 2) + (1 if dtype == "fp8" else 0)
    core_b, core_s = B in CORE_ATTENTION_BATCHES, S in CORE_CONTEXTS
    return 0 if core_b and core_s else 1 if core_b else 2 if core_s else 3


def grid(*, fp8: bool = True, batches=BATCHES, widths=WIDTHS, contexts=CONTEXTS) -> list:
    """Every point of the full grid, in grid order (kind, shape, dtype, S, B, T)."""
    dtypes = FFN_DTYPES if fp8 else ("bf16",)
    out = []
    for kind, shapes in (("moe", MOE_SHAPES), ("dense", DENSE_SHAPES)):
        out += [Point(kind, s, B, T, None, d, tier(kind, B, None, d))
                for s in shapes for d in dtypes for B in batches for T in widths]
    out += [Point("attention", s, B, T, S, "bf16", tier("attention", B, S, "bf16"))
            for s in ATTENTION_SHAPES for S in contexts for B in batches for T in widths]
    return out


# --- the cost estimate and the plan ----------------------------------------------------------

#: How much slower than its roofline a replay is assumed to run (a pessimistic
#: guess, so that the plan fits), the shortest a replay is assumed to take,
#: what capturing and probing one method costs, and what the timing repeats.
SLACK = {"moe": 2.0, "dense": 1.5, "attention": 3.0}
REPLAY_FLOOR_S = 30e-6
CANDIDATE_OVERHEAD_S = 0.06
#: What capturing the loop over experts costs on top, per expert touched
#: (about six kernels each: launched eagerly, warmed up, captured).
LOOP_PER_EXPERT_S = 1e-3
WARMUP, PROBE_REPEATS, REPEATS = 3, 5, 25
#: Methods tried per point (see CANDIDATES below): the estimate charges each.
CANDIDATE_COUNT = {"moe": 2, "dense": 1, "mla": 3, "gqa": 4}
#: L2 is flushed before every timed replay by zeroing this many bytes.
FLUSH_BYTES = 256 * 2**20
#: Setting up a group: a fixed cost and filling its tensors at this rate.
SETUP_FIXED_S, FILL_RATE = 0.5, 50e9
#: Seconds kept for the start (torch, CUDA), the clocks and the last write.
RESERVE_S = 25.0
#: The share of the budget the plan fills (the rest absorbs a wrong estimate).
PLAN_SHARE = 0.85


def _layout(shape: str) -> str:
    return model_preset(shape).attention.kind


def candidate_count(p: Point) -> int:
    return CANDIDATE_COUNT[_layout(p.shape) if p.kind == "attention" else p.kind]


def estimate_seconds(p: Point, hardware, bandwidth=None) -> float:
    """Seconds one point is expected to take: each candidate method captured
    and probed, the best one timed, at SLACK times its roofline."""
    roof = silicon.predicted_seconds(p.kind, p.shape, p.B, p.T, p.S, p.dtype, hardware)
    flush = FLUSH_BYTES / (bandwidth or hardware.memory_bandwidth)
    replay = max(REPLAY_FLOOR_S, SLACK[p.kind] * float(roof)) + flush
    n = candidate_count(p)
    loop = 0.0
    if p.kind == "moe":
        ffn = model_preset(p.shape).ffn
        loop = LOOP_PER_EXPERT_S * float(speclib.experts_activated(p.B * p.T, ffn.top_k, ffn.n_routed))
    return n * (CANDIDATE_OVERHEAD_S + (WARMUP + PROBE_REPEATS) * replay) + loop + REPEATS * replay


def group_bytes(p: Point, batch: int | None = None) -> float:
    """Bytes a point's group allocates: every expert's weights, the MLP's, or
    the cache of ``batch`` (default the point's B) sequences."""
    m = model_preset(p.shape)
    size = 1.0 if p.dtype == "fp8" else 2.0
    if p.kind == "moe":
        return m.ffn.n_routed * m.expert_params * size
    if p.kind == "dense":
        return m.expert_params * size
    return (batch or p.B) * p.S * m.context_bytes  # context_bytes: the preset's cache, bf16 here


def point_bytes(p: Point) -> float:
    """Bytes a point needs at its peak: its group's tensors and its own
    activations (queries and outputs, dispatched tokens and intermediates)."""
    m = model_preset(p.shape)
    tokens = p.B * p.T
    if p.kind == "moe":
        rows = tokens * m.ffn.top_k
        return group_bytes(p) + rows * (2 * m.hidden_size + 3 * m.ffn.expert_width) * 2
    if p.kind == "dense":
        return group_bytes(p) + tokens * (2 * m.hidden_size + 3 * m.ffn.width) * 2
    return group_bytes(p) + 2 * tokens * m.query_bytes


def setup_seconds(p: Point) -> float:
    return SETUP_FIXED_S + group_bytes(p) / FILL_RATE


@dataclasses.dataclass(frozen=True)
class Plan:
    """The points to measure, in run order, their estimated seconds, and the
    points left out with why (``"time"``, or ``"memory: ..."``)."""

    points: tuple
    estimated_s: float
    trimmed: tuple

    def trimmed_records(self) -> list:
        return [{**p.record(), "reason": why} for p, why in self.trimmed]


def plan(points, estimate, budget_s: float, *, setup=None, memory=None, capacity=None) -> Plan:
    """The points that fit ``budget_s`` seconds by ``estimate(point)``, taken
    tier by tier (a point that does not fit is trimmed and the next tried),
    plus ``setup(point)`` once for each group a tier starts; a point whose
    ``memory(point)`` exceeds ``capacity`` bytes is trimmed first. The run
    order: tier by tier, each group's points together, in grid order.
    A pure function of its arguments."""
    chosen, trimmed, total, started = [], [], 0.0, set()
    for p in sorted(points, key=lambda p: p.tier):  # stable: grid order within a tier
        if memory is not None and capacity is not None and memory(p) > capacity:
            trimmed.append((p, f"memory: needs {memory(p) / 1e9:.1f} GB of {capacity / 1e9:.1f} GB"))
            continue
        cost = estimate(p)
        if setup is not None and (p.tier, p.group) not in started:
            cost += setup(p)
        if total + cost > budget_s:
            trimmed.append((p, "time"))
            continue
        chosen.append(p)
        total += cost
        started.add((p.tier, p.group))
    first = {}
    for i, p in enumerate(chosen):
        first.setdefault((p.tier, p.group), i)
    order = sorted(range(len(chosen)), key=lambda i: (chosen[i].tier, first[(chosen[i].tier, chosen[i].group)], i))
    return Plan(tuple(chosen[i] for i in order), total, tuple(trimmed))


def plan_for(points, hardware, budget_s: float, capacity=None) -> Plan:
    """The plan on ``hardware`` with this script's estimate and setup costs."""
    return plan(points, lambda p: estimate_seconds(p, hardware), budget_s, setup=setup_seconds,
                memory=point_bytes, capacity=capacity)


# --- routing ------------------------------------------------------------------------------


def point_seed(seed: int, p: Point) -> int:
    """A seed of its own for each point (stable across runs and machines)."""
    return zlib.crc32(f"{seed}|{p.kind}|{p.shape}|{p.B}|{p.T}|{p.S}|{p.dtype}".encode())


def draw_routing(tokens: int, k: int, E: int, seed: int) -> np.ndarray:
    """(tokens, k) distinct experts per token, uniformly at random."""
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((tokens, E)), axis=1)[:, :k]


def expert_counts(routing: np.ndarray, E: int) -> np.ndarray:
    """Rows each of the E experts receives."""
    return np.bincount(routing.ravel(), minlength=E)


# --- the run -------------------------------------------------------------------------------

#: The run gives up after this many points in a row fail (a CUDA error that
#: poisons the context fails every point after it).
MAX_FAILURES_IN_A_ROW = 12
#: The file is rewritten at most this often while the run goes on.
SAVE_EVERY_S = 10.0


def measure(points, timer, estimate, *, budget_s: float, clock=time.perf_counter, start=None, hardware=None,
            checkpoint=None) -> tuple:
    """Time ``points`` in order with ``timer(point) -> dict`` (``seconds``,
    ``repeats``, ``method``, ``graph`` and any extra fields), each record
    with speclib's ``predicted_s`` on ``hardware`` (None: no preset). Stops
    before a point that ``estimate`` says would end past ``budget_s`` seconds
    from ``start`` by ``clock``; a point whose timer raises is noted and
    skipped. ``checkpoint(records, notes)`` is called after every point.
    Returns (records, notes)."""
    start = clock() if start is None else start
    records, notes, failed = [], [], 0
    for i, p in enumerate(points):
        if clock() - start + estimate(p) > budget_s:
            notes.append(f"budget: stopped after {len(records)} of {len(points)} planned points "
                         f"({clock() - start:.1f} s of {budget_s:g} s used)")
            break
        before = clock()
        try:
            timing = dict(timer(p))
        except Exception as exc:  # noqa: BLE001 - one failed point must not end the run
            notes.append(f"failed: {p.record()}: {type(exc).__name__}: {str(exc)[:300]}")
            failed += 1
            if failed == MAX_FAILURES_IN_A_ROW:
                notes.append(f"stopped: {failed} points in a row failed (the device may be unusable)")
                break
        else:
            failed = 0
            predicted = None if hardware is None else float(
                silicon.predicted_seconds(p.kind, p.shape, p.B, p.T, p.S, p.dtype, hardware))
            records.append({**p.record(), **timing, "predicted_s": predicted, "wall_s": round(clock() - before, 3)})
        if checkpoint is not None:
            checkpoint(records, notes)
    return records, notes


#: What each method name in the file means.
METHODS = {
    "grouped_mm": "torch._grouped_mm over every expert, untouched experts given no rows (bf16)",
    "scaled_grouped_mm": "torch._scaled_grouped_mm over every expert, rowwise unit scales (fp8 e4m3, bf16 out)",
    "loop": "a loop over the touched experts: gate+up GEMM, SwiGLU, down GEMM each (torch.mm; "
            "torch._scaled_mm with unit tensorwise scales in fp8)",
    "mm": "dense MLP: gate+up GEMM, SwiGLU, down GEMM (torch.mm bf16, torch._scaled_mm fp8)",
    "bmm": "attention by batched matmul: scores, softmax, values, the scores materialised in bf16 (the batch "
           "in chunks of at most 4 GB of scores and softmax), no scaling of the scores",
    "sdpa-flash": "torch scaled_dot_product_attention, flash backend forced",
    "sdpa-efficient": "torch scaled_dot_product_attention, memory-efficient backend forced",
    "sdpa-cudnn": "torch scaled_dot_product_attention, cuDNN backend forced",
}
NOTES = [
    "moe: routed experts only (no shared expert), positions already dispatched (sorted by expert), the "
    "combine (weighted scatter back to tokens) not timed; gate and up stored as one [2w, h] matrix per expert",
    "attention: no causal mask among the T new positions: every query attends to all S cached tokens; "
    "MLA's values are the first 512 of the 576-wide latent (bmm: a strided view; sdpa: the whole latent as "
    "values, 6 % more FLOPs, its last 64 outputs dropped)",
    "fp8: e4m3 weights and activations with unit scales, bf16 out; the SwiGLU output is cast to fp8 "
    "between the GEMMs (timed); the loop's and the dense MLP's rows padded to a multiple of 16 (each expert's "
    "in the loop), the grouped kernel's not",
    "seconds: median over repeats of one CUDA-graph replay (eager where graph is false), L2 flushed before each",
    "predicted_s: speclib.evidence.silicon.predicted_seconds on the hardware preset, the roofline "
    "max(FLOPs/peak, bytes/bandwidth); moe at the expected experts touched",
]


def document(meta: dict, records, notes, trimmed, *, budget_s: float, elapsed_s: float, estimated_s: float) -> dict:
    """The file's contents (the fields :func:`speclib.evidence.silicon.read_layers` reads)."""
    return {**meta, "budget_s": budget_s, "elapsed_s": round(elapsed_s, 3),
            "plan": {"points": len(records) + len(trimmed), "estimated_s": round(estimated_s, 1),
                     "trimmed": len(trimmed)},
            "methods": METHODS, "notes": NOTES + list(notes), "trimmed": list(trimmed), "points": list(records)}


def write_json(path: str, doc: dict) -> None:
    """Write ``doc`` to ``path`` whole or not at all (a temporary file renamed)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as stream:
        json.dump(doc, stream, indent=1)
        stream.write("\n")
    os.replace(tmp, path)


def file_name(gpu: str, dry_run: bool = False) -> str:
    return silicon.device_slug(gpu) + ("-layers-dry-run.json" if dry_run else silicon.FILE_SUFFIX)


def read_clocks() -> dict | None:
    """The SM and memory clocks nvidia-smi reports, or None."""
    fields = ("clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "power.draw", "temperature.gpu")
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    values = [v.strip() for v in out.splitlines()[0].split(",")] if out.strip() else []
    return dict(zip(fields, values)) if len(values) == len(fields) else None


# --- the timer (the only part that needs torch) ------------------------------------------------


def _padded(rows: np.ndarray) -> np.ndarray:
    """Row counts rounded up to a multiple of 16 (0 stays 0): the alignment
    an fp8 GEMM may ask of its rows; a tile of 64 or more rows costs the same."""
    return -(-rows // 16) * 16


def _round16(x: float) -> int:
    return max(16, int(round(x / 16)) * 16)


@dataclasses.dataclass(frozen=True)
class Dims:
    """The sizes a point's tensors take (scaled down in a dry run)."""

    hidden: int = 0
    width: int = 0
    experts: int = 0
    top_k: int = 0
    heads: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    value_dim: int = 0


def dims(p: Point, scale: int = 1) -> Dims:
    m = model_preset(p.shape)
    if p.kind == "moe":
        E = m.ffn.n_routed if scale == 1 else min(m.ffn.n_routed, 16)
        return Dims(hidden=_round16(m.hidden_size / scale), width=_round16(m.ffn.expert_width / scale), experts=E,
                    top_k=min(m.ffn.top_k, E))
    if p.kind == "dense":
        return Dims(hidden=_round16(m.hidden_size / scale), width=_round16(m.ffn.width / scale))
    a = m.attention
    if a.kind == "mla":
        return Dims(heads=max(1, a.n_heads // scale), kv_heads=1, head_dim=a.kv_lora_rank + a.rope_dim,
                    value_dim=a.kv_lora_rank)
    heads = max(a.n_kv_heads, a.n_heads // scale // a.n_kv_heads * a.n_kv_heads)  # whole groups of query heads
    return Dims(heads=heads, kv_heads=a.n_kv_heads, head_dim=a.head_dim, value_dim=a.head_dim)


class LayerTimer:
    """``timer(point) -> dict`` on a CUDA device (CUDA events, CUDA graphs,
    L2 flushed) or, for a dry run, on the CPU (wall clock, eager). Allocates
    a group's weights or cache once, for the largest batch ``points`` give
    it, and frees them when the group changes."""

    def __init__(self, torch, points, *, cuda: bool = True, repeats: int = REPEATS, seed: int = 0, scale: int = 1):
        self.torch, self.cuda, self.repeats, self.seed, self.scale = torch, cuda, repeats, seed, scale
        self.device = "cuda" if cuda else "cpu"
        self.max_batch = {}
        for p in points:
            self.max_batch[p.group] = max(self.max_batch.get(p.group, 0), p.B)
        self.key, self.state = None, None
        self.unavailable = {}  # (shape, dtype, method) -> why
        self.grouped_ok = {}  # (shape, dtype) -> whether the grouped kernel agreed with the loop
        self.losses = {}  # (shape, dtype, method) -> points in a row it lost by more than PRUNE_RATIO
        self.notes = []
        self.flush = torch.empty(FLUSH_BYTES if cuda else 1, dtype=torch.int8, device=self.device)
        self.gen = torch.Generator(device=self.device)

    # tensors ---------------------------------------------------------------------------
    def _randn(self, *shape, dtype=None, scale=0.5):
        t = self.torch
        x = t.randn(*shape, generator=self.gen, device=self.device, dtype=t.bfloat16)
        x.mul_(scale)
        return x if dtype is None else x.to(dtype)

    def _dtype(self, name):
        return self.torch.float8_e4m3fn if name == "fp8" else self.torch.bfloat16

    def _weights(self, n, rows, cols, dtype):
        """n matrices [rows, cols] of random values (in chunks: no bf16 copy of the whole in fp8)."""
        out = self.torch.empty(n, rows, cols, dtype=dtype, device=self.device)
        step = max(1, int(2**30 // (rows * cols * 2)))
        for i in range(0, n, step):
            out[i:i + step] = self._randn(min(step, n - i), rows, cols, dtype=dtype, scale=0.05)
        return out

    def _group(self, p: Point):
        if p.group == self.key:
            return self.state
        self.key, self.state = None, None
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()
        self.gen.manual_seed(zlib.crc32(repr(p.group).encode()) + self.seed)
        d, dtype = dims(p, self.scale), self._dtype(p.dtype)
        if p.kind == "moe":
            state = {"w13": self._weights(d.experts, 2 * d.width, d.hidden, dtype),
                     "w2": self._weights(d.experts, d.hidden, d.width, dtype)}
            if (p.shape, p.dtype) not in self.grouped_ok:
                self.grouped_ok[(p.shape, p.dtype)] = self._check_grouped(p, d, state)
            state["grouped"] = self.grouped_ok[(p.shape, p.dtype)]
        elif p.kind == "dense":
            state = {"w13": self._weights(1, 2 * d.width, d.hidden, dtype)[0],
                     "w2": self._weights(1, d.hidden, d.width, dtype)[0]}
        else:
            Bmax = self.max_batch[p.group]
            if _layout(p.shape) == "mla":
                state = {"c": self._randn(Bmax, p.S, d.head_dim)}
            else:
                state = {"k": self._randn(Bmax, d.kv_heads, p.S, d.head_dim),
                         "v": self._randn(Bmax, d.kv_heads, p.S, d.head_dim)}
        self.key, self.state = p.group, state
        return state

    # the FFN ---------------------------------------------------------------------------
    def _gemm(self, fp8):
        """x [m, k] times w [n, k] transposed, bf16 out."""
        t = self.torch
        if not fp8:
            return lambda x, w: t.mm(x, w.t())
        one = t.ones((), dtype=t.float32, device=self.device)
        return lambda x, w: t._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=t.bfloat16)

    def _swiglu(self, a, width, fp8):
        h = self.torch.nn.functional.silu(a[:, :width]) * a[:, width:]
        return h.to(self.torch.float8_e4m3fn) if fp8 else h

    def _loop(self, x, w13, w2, counts, fp8):
        gemm, width = self._gemm(fp8), w2.shape[-1]
        ends = np.cumsum(counts)
        spans = [(e, int(ends[e] - counts[e]), int(ends[e])) for e in np.flatnonzero(counts)]
        out = self.torch.empty(x.shape[0], w2.shape[1], dtype=self.torch.bfloat16, device=self.device)

        def run():
            for e, lo, hi in spans:
                out[lo:hi] = gemm(self._swiglu(gemm(x[lo:hi], w13[e]), width, fp8), w2[e])
            return out
        return run

    def _grouped(self, x, w13, w2, counts, fp8):
        t, width = self.torch, w2.shape[-1]
        offs = t.tensor(np.cumsum(counts), dtype=t.int32, device=self.device)
        if not fp8:
            def run():
                return t._grouped_mm(self._swiglu(t._grouped_mm(x, w13.transpose(-2, -1), offs=offs), width, False),
                                     w2.transpose(-2, -1), offs=offs)
            return run
        rows, E = x.shape[0], w13.shape[0]
        sa = t.ones(rows, dtype=t.float32, device=self.device)
        sb13 = t.ones(E, w13.shape[1], dtype=t.float32, device=self.device)
        sb2 = t.ones(E, w2.shape[1], dtype=t.float32, device=self.device)

        def run():
            a = t._scaled_grouped_mm(x, w13.transpose(-2, -1), sa, sb13, offs=offs, out_dtype=t.bfloat16)
            return t._scaled_grouped_mm(self._swiglu(a, width, True), w2.transpose(-2, -1), sa, sb2, offs=offs,
                                        out_dtype=t.bfloat16)
        return run

    def _reference(self, x, w13, w2, counts, fp8):
        """The experts' outputs in float32, one expert at a time (fp8: the
        SwiGLU output rounded to fp8 as the kernels round it)."""
        t, width = self.torch, w2.shape[-1]
        out = t.zeros(x.shape[0], w2.shape[1], dtype=t.float32, device=self.device)
        ends = np.cumsum(counts)
        for e in np.flatnonzero(counts):
            lo, hi = int(ends[e] - counts[e]), int(ends[e])
            h = self._swiglu(x[lo:hi].float() @ w13[e].float().t(), width, fp8)
            out[lo:hi] = h.float() @ w2[e].float().t()
        return out

    def _check_grouped(self, p, d, state):
        """Whether the grouped kernel runs and agrees with a float32 reference
        on a small case with uneven and empty groups (else the loop alone is
        used, and that is noted)."""
        fp8 = p.dtype == "fp8"
        counts = np.zeros(d.experts, dtype=int)
        counts[: min(5, d.experts)] = [3, 0, 17, 1, 24][: min(5, d.experts)]
        x = self._randn(int(counts.sum()), d.hidden, dtype=self._dtype(p.dtype))
        name = "scaled_grouped_mm" if fp8 else "grouped_mm"
        try:
            got = self._grouped(x, state["w13"], state["w2"], counts, fp8)().float()
            want = self._reference(x, state["w13"], state["w2"], counts, fp8)
            err = float((got - want).abs().max() / (want.abs().max() + 1e-6))
            ok = err < (0.15 if fp8 else 0.03)
            why = f"differs from a float32 reference by {err:.3g} of its largest value"
        except Exception as exc:  # noqa: BLE001 - not available on this torch or chip
            ok, why = False, f"{type(exc).__name__}: {str(exc)[:200]}"
        if not ok:
            self.notes.append(f"{p.shape} {p.dtype}: {name} not used ({why})")
        return ok

    def _moe(self, p, state):
        d, fp8 = dims(p, self.scale), p.dtype == "fp8"
        routing = draw_routing(p.B * p.T, d.top_k, d.experts, point_seed(self.seed, p))
        counts = expert_counts(routing, d.experts)
        x = self._randn(int(counts.sum()), d.hidden, dtype=self._dtype(p.dtype))
        rows = _padded(counts) if fp8 else counts  # fp8 GEMMs: each expert's rows a multiple of 16
        x_loop = self._randn(int(rows.sum()), d.hidden, dtype=self._dtype(p.dtype)) if fp8 else x
        methods = {"loop": self._loop(x_loop, state["w13"], state["w2"], rows, fp8)}
        if state["grouped"]:
            methods["scaled_grouped_mm" if fp8 else "grouped_mm"] = self._grouped(x, state["w13"], state["w2"],
                                                                                 counts, fp8)
        return methods, {"experts_touched": int((counts > 0).sum())}

    def _dense(self, p, state):
        fp8 = p.dtype == "fp8"
        rows = int(_padded(np.array([p.B * p.T]))[0]) if fp8 else p.B * p.T
        x = self._randn(rows, state["w2"].shape[0], dtype=self._dtype(p.dtype))
        gemm, width = self._gemm(fp8), state["w2"].shape[1]
        return {"mm": lambda: gemm(self._swiglu(gemm(x, state["w13"]), width, fp8), state["w2"])}, {}

    # attention -------------------------------------------------------------------------
    def _attention(self, p, state):
        t, d = self.torch, dims(p, self.scale)
        F = t.nn.functional
        if _layout(p.shape) == "mla":
            c = state["c"][: p.B]
            rows = p.T * d.heads  # every head of every new position reads the one latent
            q = self._randn(p.B, rows, d.head_dim)
            keys, values = c, c[:, :, : d.value_dim]
            q4, c4 = q.unsqueeze(1), c.unsqueeze(1)
            sdpa = lambda: F.scaled_dot_product_attention(q4, c4, c4)[..., : d.value_dim]  # noqa: E731
            per_sequence = rows
        else:
            k, v = state["k"][: p.B], state["v"][: p.B]
            group = d.heads // d.kv_heads
            q = self._randn(p.B, d.kv_heads, group * p.T, d.head_dim)  # the query heads of one KV head together
            q4 = q.reshape(p.B, d.kv_heads, group, p.T, d.head_dim).reshape(p.B, d.heads, p.T, d.head_dim)
            sdpa = lambda: F.scaled_dot_product_attention(q4, k, v, enable_gqa=True)  # noqa: E731
            q, keys, values = (x.reshape(-1, x.shape[-2], d.head_dim) for x in (q, k, v))
            per_sequence = d.heads * p.T
        # the scores (and their softmax) of at most BMM_SCORES_BYTES at a time: the batch in chunks
        chunk = max(1, int(BMM_SCORES_BYTES // (per_sequence * p.S * 2 * 2)) * (q.shape[0] // p.B))

        def bmm():
            for lo in range(0, q.shape[0], chunk):
                hi = lo + chunk
                scores = t.bmm(q[lo:hi], keys[lo:hi].transpose(1, 2))
                t.bmm(t.softmax(scores, dim=-1), values[lo:hi])
        methods = {"bmm": bmm}
        if self.cuda:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            for name, backend in (("sdpa-flash", SDPBackend.FLASH_ATTENTION),
                                  ("sdpa-efficient", SDPBackend.EFFICIENT_ATTENTION),
                                  ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)):
                def forced(backend=backend):
                    with sdpa_kernel([backend]):
                        return sdpa()
                methods[name] = forced
        else:
            methods["sdpa"] = sdpa
        return methods, {}

    # timing ----------------------------------------------------------------------------
    def _prune(self, p: Point, probes: dict, best: float) -> None:
        """Stop trying a method that lost by more than PRUNE_RATIO at
        PRUNE_AFTER points of this shape and precision in a row."""
        for name, probe in probes.items():
            key = (p.shape, p.dtype, name)
            self.losses[key] = self.losses.get(key, 0) + 1 if probe > PRUNE_RATIO * best else 0
            if self.losses[key] == PRUNE_AFTER:
                self.unavailable[key] = "pruned"
                self.notes.append(f"{p.shape} {p.dtype}: {name} not tried after losing by more than "
                                  f"{PRUNE_RATIO:g}x at {PRUNE_AFTER} points in a row")

    def _prepare(self, fn):
        """(replay, graph, holder): a CUDA graph of ``fn`` if it can be captured, else ``fn``."""
        t = self.torch
        fn()  # raises here if the method cannot run at all
        if not self.cuda:
            return fn, False, None
        t.cuda.synchronize()
        try:
            side = t.cuda.Stream()
            side.wait_stream(t.cuda.current_stream())
            with t.cuda.stream(side):
                for _ in range(2):
                    fn()
            t.cuda.current_stream().wait_stream(side)
            g = t.cuda.CUDAGraph()
            with t.cuda.graph(g):
                fn()
            g.replay()
            t.cuda.synchronize()
            return g.replay, True, g
        except Exception:  # noqa: BLE001 - eager instead, recorded as graph=False
            t.cuda.synchronize()
            return fn, False, None

    def _times(self, replay, n: int) -> np.ndarray:
        t = self.torch
        for _ in range(WARMUP):
            replay()
        if not self.cuda:
            out = []
            for _ in range(n):
                start = time.perf_counter()
                replay()
                out.append(time.perf_counter() - start)
            return np.array(out)
        starts = [t.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [t.cuda.Event(enable_timing=True) for _ in range(n)]
        for s, e in zip(starts, ends):
            self.flush.zero_()
            s.record()
            replay()
            e.record()
        t.cuda.synchronize()
        return np.array([s.elapsed_time(e) for s, e in zip(starts, ends)]) / 1e3

    def __call__(self, p: Point) -> dict:
        try:
            state = self._group(p)
            builder = {"moe": self._moe, "dense": self._dense, "attention": self._attention}[p.kind]
            methods, extra = builder(p, state)
            probes, best = {}, None
            for name, fn in methods.items():
                if (p.shape, p.dtype, name) in self.unavailable:
                    continue
                try:
                    replay, graph, holder = self._prepare(fn)
                    probe = float(np.median(self._times(replay, PROBE_REPEATS))) if len(methods) > 1 else 0.0
                except Exception as exc:  # noqa: BLE001 - this method cannot run here
                    why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                    self.unavailable[(p.shape, p.dtype, name)] = why
                    self.notes.append(f"{p.shape} {p.dtype}: {name} unavailable ({why})")
                    if self.cuda:
                        self.torch.cuda.synchronize()
                    continue
                probes[name] = probe
                if best is None or probe < best[0]:
                    best = (probe, name, replay, graph, holder)
                else:
                    del holder
            if best is None:
                raise RuntimeError("no method could run this point")
            self._prune(p, probes, best[0])
            _, name, replay, graph, holder = best
            times = self._times(replay, self.repeats)
            out = {"seconds": float(np.median(times)), "repeats": len(times), "method": name, "graph": graph,
                   "q25_s": float(np.percentile(times, 25)), "q75_s": float(np.percentile(times, 75)), **extra}
            if len(probes) > 1:
                out["probes_s"] = probes
            return out
        finally:
            if self.cuda:
                self.torch.cuda.synchronize()


#: A method that loses by more than this factor at this many points of a
#: shape and precision in a row is not tried further (each try costs a
#: capture, and cuDNN attention builds a plan per shape).
PRUNE_RATIO, PRUNE_AFTER = 1.3, 10
#: The most bytes of scores (with their softmax) the batched-matmul attention
#: materialises at a time: a larger batch is done in chunks of sequences.
BMM_SCORES_BYTES = 4e9


# --- the command ---------------------------------------------------------------------------


def _print_plan(p: Plan, where: str, budget: float) -> None:
    kinds = {}
    for q in p.points:
        kinds[q.kind] = kinds.get(q.kind, 0) + 1
    left = {}
    for q, why in p.trimmed:
        left[why.split(":")[0]] = left.get(why.split(":")[0], 0) + 1
    print(f"{where}: {len(p.points)} points planned ({', '.join(f'{k} {n}' for k, n in kinds.items())}), "
          f"estimated {p.estimated_s:.0f} s of {budget:.0f} s; trimmed: "
          f"{', '.join(f'{n} for {k}' for k, n in left.items()) or 'none'}")


def main(argv=None) -> int:
    t0 = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder to write <gpu>-layers.json into (without it: print the plan only)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="seconds the whole run may take (420)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help=f"timed replays per point (>= 20; {REPEATS})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-fp8", action="store_true", help="bf16 only")
    parser.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU, wall-clock timing")
    args = parser.parse_args(argv)
    if args.repeats < 20:
        parser.error("--repeats must be at least 20")
    if args.out is None and not args.dry_run:
        full = grid(fp8=not args.no_fp8)
        print(f"the full grid: {len(full)} points; planning within --budget-s {args.budget_s:g} s")
        for name in ("H100", "H200"):
            hw = speclib.presets.hardware(name)
            budget = PLAN_SHARE * (args.budget_s - RESERVE_S)
            _print_plan(plan_for(full, hw, budget, capacity=0.85 * hw.hbm_capacity), hw.name, budget)
        print("nothing measured: run with --out FOLDER on a machine with an NVIDIA GPU (see the docstring)")
        return 0
    try:
        import torch
    except ImportError:
        print("bench_layers: needs PyTorch (with CUDA, or --dry-run on the CPU)", file=sys.stderr)
        return 2
    cuda = not args.dry_run
    if cuda and not torch.cuda.is_available():
        print("bench_layers: no CUDA device (use --dry-run to try the script on the CPU)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    if cuda:
        gpu = torch.cuda.get_device_name()
        major, minor = torch.cuda.get_device_capability()
        fp8 = not args.no_fp8 and (major, minor) >= (8, 9)
        free, _ = torch.cuda.mem_get_info()
        capacity = 0.85 * free
    else:
        gpu, fp8, capacity = f"cpu {platform.machine()}", not args.no_fp8, None
    hw = silicon.hardware_for_device(gpu) if cuda else None
    if args.dry_run:
        full = grid(fp8=fp8, batches=DRY_BATCHES, widths=DRY_WIDTHS, contexts=DRY_CONTEXTS)

        def estimate(p):
            return 0.5  # tiny shapes: the roofline says nothing about a CPU
        chosen = plan(full, estimate, float("inf"))
    else:
        full, hw_for_plan = grid(fp8=fp8), hw or speclib.presets.hardware("H100")
        budget = PLAN_SHARE * (args.budget_s - RESERVE_S - (time.perf_counter() - t0))
        chosen = plan_for(full, hw_for_plan, budget, capacity=capacity)

        def estimate(p):
            return estimate_seconds(p, hw_for_plan)
        _print_plan(chosen, gpu, budget)
    meta = {"schema": 1, "gpu": gpu, "hardware": hw.name if hw else None, "torch": torch.__version__,
            "cuda": torch.version.cuda, "date": datetime.date.today().isoformat(),
            "dry_run": bool(args.dry_run), "seed": args.seed, "grid_points": len(full)}
    clocks = {"start": read_clocks() if cuda else None}
    path = os.path.join(args.out, file_name(gpu, args.dry_run))
    timer = LayerTimer(torch, chosen.points, cuda=cuda, repeats=args.repeats, seed=args.seed,
                       scale=DRY_SCALE if args.dry_run else 1)
    trimmed = chosen.trimmed_records()

    last_save = [-math.inf]

    def save(records, notes, final=False):
        if not final and time.perf_counter() - last_save[0] < SAVE_EVERY_S:
            return
        last_save[0] = time.perf_counter()
        clocks["end"] = read_clocks() if (cuda and final) else clocks.get("end")
        write_json(path, document({**meta, "clocks": clocks}, records, timer.notes + notes, trimmed,
                                  budget_s=args.budget_s, elapsed_s=time.perf_counter() - t0,
                                  estimated_s=chosen.estimated_s))

    records, notes = measure(chosen.points, timer, estimate, budget_s=args.budget_s - RESERVE_S / 2, start=t0,
                             hardware=hw, checkpoint=save)
    save(records, notes, final=True)
    print(f"wrote {path}: {len(records)} points in {time.perf_counter() - t0:.1f} s"
          + (f"; {len(notes)} notes" if notes else ""))
    for line in timer.notes + notes:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
