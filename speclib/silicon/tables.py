"""Kernel latencies measured on silicon, read from the tables speclib ships.

The tables are NVIDIA's, measured for AIConfigurator (the ``aiconfigurator-core``
package, Apache-2.0), one file per chip and serving engine in
``speclib/data/silicon/`` (``<chip>-<engine>.json``), imported by
``scripts/import_silicon_tables.py`` with only the shapes the presets use. Each
file names its chip, engine, engine version, the package (database) version
and the collection metadata of each table it holds:

* ``gemm``: one GEMM of m tokens by an (n, k) weight, per dtype;
* ``moe``: one MoE layer's routed experts (grouped GEMMs) over a number of
  tokens entering the layer, per expert shape, dtype and (moe_tp, moe_ep) split;
* ``gqa``: one layer's decode attention, B sequences of one query position
  each over a context, per heads, KV heads, head width and KV dtype;
* ``mla``: one layer's absorbed MLA decode attention (DeepSeek's latent of
  512 + 64), per query heads on the GPU and KV dtype;
* ``allreduce``: the engine's all-reduce of bf16 elements over n GPUs.

How a point between measured ones is read (:class:`Curve`, :class:`Grid`):
log-log linear in tokens (a GEMM's m, the MoE's tokens, the all-reduce's
elements) and bilinear in log batch and log context for attention; a GEMM's
(n, k) between the stored shapes bilinear in log n and log k of log latency;
below the smallest point flat (a kernel's latency floor), above the largest
linear in the quantity (a kernel past its table is bound by its work, which
grows linearly), as :attr:`Curve.beyond` says. Only numpy and json.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

#: speclib's chip presets and AIConfigurator's system names for them.
SYSTEMS = {"H100-SXM": "h100_sxm", "H200": "h200_sxm", "B200": "b200_sxm", "B300": "b300_sxm"}
#: speclib's engine names and AIConfigurator's frameworks.
FRAMEWORKS = {"TRT": "trtllm", "SGLang": "sglang", "vLLM": "vllm"}
#: Where the tables live, inside the package.
DATA_DIR = ("data", "silicon")
#: The routing the MoE tables are kept for: uniform, speclib's default.
MOE_DISTRIBUTIONS = ("balanced",)
#: The licence notice each file carries.
NOTICE = ("Data from NVIDIA AIConfigurator (aiconfigurator-core, https://github.com/ai-dynamo/aiconfigurator), "
          "Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved. "
          "SPDX-License-Identifier: Apache-2.0. Licensed under the Apache License, Version 2.0 "
          "(http://www.apache.org/licenses/LICENSE-2.0); distributed on an \"AS IS\" BASIS, WITHOUT WARRANTIES OR "
          "CONDITIONS OF ANY KIND. Modified: a subset of the rows (the shapes speclib's presets use) converted from "
          "Parquet to JSON, the fastest kernel kept where several measured one point.")


#: The table dtypes a speclib precision runs in, in the order tried: the GEMMs
#: (fp8 block-scaled, as DeepSeek's, Qwen3's and GLM's fp8 checkpoints are,
#: else per-tensor; fp4 as NVFP4) and the grouped experts (fp4 as NVFP4, else
#: MXFP4 weights: gpt-oss's checkpoint).
GEMM_DTYPES = {"bf16": ("bfloat16",), "fp8": ("fp8_block", "fp8"), "fp4": ("nvfp4",)}
MOE_DTYPES = {"bf16": ("bfloat16",), "fp8": ("fp8_block", "fp8"),
              "fp4": ("nvfp4", "w4a8_mxfp4_mxfp8", "w4a16_mxfp4")}


def precisions_of(model) -> set:
    """The precisions a preset's GEMMs may be served in: every one speclib
    prices (bf16, fp8, fp4), since a deployment's ``weights=`` serves any
    checkpoint in any of them (the measured runs serve Llama-3.3-70B in fp8
    and fp4)."""
    return {"bf16", "fp8", "fp4"}


def gemm_dtypes(precision: str, model) -> tuple:
    """The GEMM table dtypes ``precision`` runs in for ``model``, in the order
    tried: fp8 per-tensor first for Llama's checkpoints (NVIDIA's and Meta's
    fp8 Llamas are per-tensor), block-scaled first for the rest."""
    out = GEMM_DTYPES[precision]
    if precision == "fp8" and model.name.lower().startswith("llama"):
        out = tuple(reversed(out))
    return out


def slug(chip: str) -> str:
    return chip.lower()


def gqa_heads(n_heads: int, kv_heads: int, tp: int) -> tuple:
    """(query heads, KV heads) one GPU runs under a tensor-parallel split of
    ``tp``: the query heads split evenly, the KV heads down to one per GPU
    (replicated below that, as the engines do)."""
    return n_heads // tp, max(1, kv_heads // tp)


def mla_from_table(attention) -> bool:
    """Whether an MLA preset's decode kernel is the one the MLA tables
    measure: DeepSeek's latent (512 + 64) over the whole context, no
    compression (DeepSeek-V4's compressed layers are not in them)."""
    return (type(attention).__name__ == "MLAAttention" and attention.kv_lora_rank == 512
            and attention.rope_dim == 64 and attention.hca_ratio is None and attention.csa_ratio is None)


@dataclass(frozen=True)
class Gemm:
    """One GEMM of a layer: ``name``, an (``n``, ``k``) weight, which
    precision's dtype it runs in (``"dense"``, ``"ffn"`` or ``"bf16"``), the
    layers that run it (``"attention"``, ``"moe"``, ``"dense_ffn"``, ``"all"``
    or ``"once"``) and the share of the step's tokens it sees."""

    name: str
    n: int
    k: int
    precision: str
    layers: str
    part: str
    token_share: float = 1.0


def layer_gemms(model, tp: int, dp_attention: bool = False):
    """The GEMMs one GPU runs for ``model`` split over ``tp`` GPUs, or None
    where speclib cannot list them from the preset (DeepSeek-V4's grouped
    output projection): then the step prices its dense part by the roofline.
    Attention projections are split by head (whole on every GPU, over its own
    sequences, under data-parallel attention); MLPs and shared experts split
    by width; routers whole; the output head split by vocabulary."""
    a, h = model.attention, model.hidden_size
    t = 1 if dp_attention else tp
    share = 1.0 / tp if dp_attention else 1.0
    out = []
    if type(a).__name__ == "GQAAttention":
        qh, kv = gqa_heads(a.n_heads, a.kv_heads, t)
        out += [Gemm("qkv_proj", (qh + 2 * kv) * a.head_dim, h, "dense", "attention", "dense", share),
                Gemm("o_proj", h, qh * a.head_dim, "dense", "attention", "dense", share)]
    elif type(a).__name__ == "MLAAttention" and a.o_groups is None and a.q_lora_rank:
        heads = a.n_heads // t
        nope = a.mha_nope_dim or (a.q_head_dim - a.rope_dim)
        v = a.mha_v_dim or a.o_head_dim
        out += [Gemm("qkv_a_proj", a.q_lora_rank + a.kv_proj_width, h, "dense", "attention", "dense", share),
                Gemm("q_b_proj", heads * a.q_head_dim, a.q_lora_rank, "dense", "attention", "dense", share),
                # the absorbed up-projections, batched per head: as one GEMM of the same weight
                Gemm("w_kc", heads * a.kv_lora_rank, nope, "bf16", "attention", "dense", share),
                Gemm("w_vc", heads * v, a.kv_lora_rank, "bf16", "attention", "dense", share),
                Gemm("o_proj", h, heads * a.o_head_dim, "dense", "attention", "dense", share)]
    else:
        return None
    f = model.ffn
    if f.is_moe:
        out.append(Gemm("router", f.n_routed, h, "bf16", "moe", "dense"))
        if f.n_shared:
            w = f.n_shared * f.expert_width // tp
            out += [Gemm("shared_gate_up", 2 * w, h, "ffn", "moe", "ffn"), Gemm("shared_down", h, w, "ffn", "moe", "ffn")]
        if model.n_dense_layers:
            w = model.dense_ffn_width // tp
            out += [Gemm("dense_gate_up", 2 * w, h, "dense", "dense_ffn", "dense"),
                    Gemm("dense_down", h, w, "dense", "dense_ffn", "dense")]
    else:
        w = f.width // tp
        out += [Gemm("gate_up", 2 * w, h, "ffn", "all", "ffn"), Gemm("down", h, w, "ffn", "all", "ffn")]
    out.append(Gemm("lm_head", model.vocab_size // tp, h, "bf16", "once", "dense"))
    return tuple(out)


class Curve:
    """Latency against one quantity x (tokens, elements), read log-log
    linearly between measured points; flat below the first point; beyond the
    last, linear in x through the last point (``beyond``)."""

    beyond = "linear in the quantity beyond the last measured point"

    def __init__(self, x, seconds):
        x = np.asarray(x, dtype=float)
        y = np.asarray(seconds, dtype=float)
        keep = np.isfinite(y) & (y > 0)
        if keep.sum() < 2:
            raise ValueError("a curve needs at least two measured points")
        order = np.argsort(x[keep])
        self.x, self.y = x[keep][order], y[keep][order]
        self._lx, self._ly = np.log(self.x), np.log(self.y)

    def __call__(self, x):
        x = np.asarray(x, dtype=float)
        inside = np.exp(np.interp(np.log(np.clip(x, self.x[0], self.x[-1])), self._lx, self._ly))
        return np.where(x > self.x[-1], self.y[-1] * x / self.x[-1], inside)

    def measured(self, x):
        """Whether each x lies within the measured range (at or above the first point, at or below the last)."""
        return np.asarray(x, dtype=float) <= self.x[-1]


class Grid:
    """Latency over (batch, context), read bilinearly in log batch and log
    context of log latency inside the measured grid; flat below the first
    row or column; beyond the last, linear in each quantity (attention's work
    grows linearly in both). A gap in a row is read across that row's
    measured points; a row with fewer than two is dropped."""

    def __init__(self, batch, context, seconds):
        b = np.asarray(batch, dtype=float)
        s = np.asarray(context, dtype=float)
        y = np.array([[np.nan if v is None else v for v in row] for row in seconds], dtype=float)
        rows, keep = [], []
        for i in range(len(b)):
            ok = np.isfinite(y[i]) & (y[i] > 0)
            if ok.sum() < 2:
                continue
            rows.append(np.exp(np.interp(np.log(s), np.log(s[ok]), np.log(y[i][ok]))))
            keep.append(i)
        if len(keep) < 2:
            raise ValueError("a grid needs at least two batches with two measured contexts")
        self.b, self.s = b[keep], s
        self.y = np.array(rows)
        self._lb, self._ls, self._ly = np.log(self.b), np.log(self.s), np.log(self.y)

    def __call__(self, batch, context):
        B = np.asarray(batch, dtype=float)
        S = np.asarray(context, dtype=float)
        lb = np.log(np.clip(B, self.b[0], self.b[-1]))
        ls = np.log(np.clip(S, self.s[0], self.s[-1]))
        i = np.clip(np.searchsorted(self._lb, lb, side="right") - 1, 0, len(self.b) - 2)
        j = np.clip(np.searchsorted(self._ls, ls, side="right") - 1, 0, len(self.s) - 2)
        u = (lb - self._lb[i]) / (self._lb[i + 1] - self._lb[i])
        v = (ls - self._ls[j]) / (self._ls[j + 1] - self._ls[j])
        ly = ((1 - u) * (1 - v) * self._ly[i, j] + u * (1 - v) * self._ly[i + 1, j]
              + (1 - u) * v * self._ly[i, j + 1] + u * v * self._ly[i + 1, j + 1])
        out = np.exp(ly)
        out = np.where(B > self.b[-1], out * B / self.b[-1], out)
        return np.where(S > self.s[-1], out * S / self.s[-1], out)

    def measured(self, batch, context):
        return (np.asarray(batch, dtype=float) <= self.b[-1]) & (np.asarray(context, dtype=float) <= self.s[-1])


MS = 1e-3


class Tables:
    """One chip's and engine's tables (a file of ``speclib/data/silicon/``):
    ``chip``, ``engine``, ``engine_version``, ``database`` (the package and
    its version) and the readers below, each returning a :class:`Curve` or
    :class:`Grid` in seconds, or None where the file measures no such op."""

    def __init__(self, data: dict, name: str = ""):
        self.name = name
        self.data = data
        for field in ("chip", "engine", "engine_version", "database", "tables", "notice"):
            if field not in data:
                raise ValueError(f"{name or 'silicon table'}: field {field!r} is missing")
        self.chip, self.engine, self.engine_version = data["chip"], data["engine"], data["engine_version"]
        self.database = data["database"]
        self.tables = data["tables"]
        self._gemm = None

    @property
    def label(self) -> str:
        """What a priced component says it was read from."""
        return (f"{self.engine} {self.engine_version} on {self.chip}, "
                f"{self.database.get('package', '')} {self.database.get('version', '')}")

    def source(self, table: str) -> str:
        return f"measured {table} ({self.label})"

    # --- GEMMs -----------------------------------------------------------------------
    def _gemms(self):
        if self._gemm is None:
            t = self.tables.get("gemm")
            by = {}
            if t:
                m = np.asarray(t["m"], dtype=float)
                for s in t["shapes"]:
                    lat = np.array([np.nan if v is None else v * MS for v in s["latency_ms"]])
                    by.setdefault(s["dtype"], {})[(s["n"], s["k"])] = (m, lat)
            self._gemm = by
        return self._gemm

    def gemm_dtypes(self) -> tuple:
        return tuple(self._gemms())

    def gemm(self, dtype: str, n: int, k: int):
        """The Curve of a GEMM of an (n, k) weight in ``dtype`` against m,
        bilinear in log n and log k between the stored shapes that bracket
        it; past the largest n or k measured (an output head's vocabulary),
        that shape's time scaled linearly in n and k (the weight it streams);
        None where they are not stored."""
        shapes = self._gemms().get(dtype)
        if not shapes:
            return None
        ns = sorted({s[0] for s in shapes})
        ks = sorted({s[1] for s in shapes})
        if n > ns[-1] or k > ks[-1]:
            inner = self.gemm(dtype, min(n, ns[-1]), min(k, ks[-1]))
            if inner is None:
                return None
            scale = max(n / ns[-1], 1.0) * max(k / ks[-1], 1.0)
            return Curve(inner.x, inner.y * scale)
        n0, n1 = _bracket(ns, n)
        k0, k1 = _bracket(ks, k)
        if n0 is None or k0 is None:
            return None
        corners = [(a, b) for a in (n0, n1) for b in (k0, k1)]
        if any(c not in shapes for c in corners):
            return None
        m = shapes[corners[0]][0]
        wn = 0.0 if n1 == n0 else (np.log(n) - np.log(n0)) / (np.log(n1) - np.log(n0))
        wk = 0.0 if k1 == k0 else (np.log(k) - np.log(k0)) / (np.log(k1) - np.log(k0))
        logs = {c: np.log(shapes[c][1]) for c in corners}
        ly = ((1 - wn) * (1 - wk) * logs[(n0, k0)] + wn * (1 - wk) * logs[(n1, k0)]
              + (1 - wn) * wk * logs[(n0, k1)] + wn * wk * logs[(n1, k1)])
        return Curve(m, np.exp(ly))

    # --- MoE ---------------------------------------------------------------------------
    def moe(self, dtypes, hidden, inter, topk, experts, moe_tp, moe_ep, distribution="balanced"):
        """(the Curve of one MoE layer's routed experts against the tokens
        entering it, the table dtype) for the first of ``dtypes`` measured at
        this shape and split; (None, None) where none is."""
        t = self.tables.get("moe")
        if not t:
            return None, None
        for dtype in dtypes:
            for c in t["configs"]:
                if (c["dtype"], c["hidden"], c["inter"], c["topk"], c["experts"], c["moe_tp"], c["moe_ep"],
                        c["distribution"]) == (dtype, hidden, inter, topk, experts, moe_tp, moe_ep, distribution):
                    if len(c["tokens"]) >= 2:
                        return Curve(c["tokens"], np.asarray(c["latency_ms"]) * MS), dtype
        return None, None

    # --- attention ---------------------------------------------------------------------
    def gqa(self, heads, kv_heads, head_dim, kv_dtype):
        """The Grid of one layer's decode attention (one query position per
        sequence) at these heads on the GPU; None where not measured."""
        for c in (self.tables.get("gqa") or {}).get("configs", ()):
            if (c["heads"], c["kv_heads"], c["head_dim"], c["kv_dtype"]) == (heads, kv_heads, head_dim, kv_dtype):
                return Grid(c["batch"], c["context"], [[None if v is None else v * MS for v in r]
                                                       for r in c["latency_ms"]])
        return None

    def mla(self, heads, kv_dtype):
        """The Grid of one layer's absorbed MLA decode attention at ``heads``
        query heads on the GPU, linear in heads between the two measured head
        counts that bracket it (attention's work is per head); None where not
        measured."""
        configs = {c["heads"]: c for c in (self.tables.get("mla") or {}).get("configs", ())
                   if c["kv_dtype"] == kv_dtype}
        if not configs:
            return None
        lo, hi = _bracket(sorted(configs), heads)
        if lo is None:
            return None

        def grid(h):
            c = configs[h]
            return Grid(c["batch"], c["context"], [[None if v is None else v * MS for v in r] for r in c["latency_ms"]])

        if lo == hi:
            return grid(lo)
        return _Mixed(grid(lo), grid(hi), (heads - lo) / (hi - lo))

    # --- collectives -------------------------------------------------------------------
    def allreduce(self, gpus: int):
        """The Curve of the engine's bf16 all-reduce over ``gpus`` GPUs
        against elements; None where not measured."""
        for c in (self.tables.get("allreduce") or {}).get("configs", ()):
            if c["gpus"] == gpus:
                return Curve(c["elements"], np.asarray(c["latency_ms"]) * MS)
        return None


class _Mixed:
    """Two grids read at one point, mixed linearly (a head count between two measured ones)."""

    def __init__(self, lo, hi, w):
        self.lo, self.hi, self.w = lo, hi, float(w)

    def __call__(self, batch, context):
        return (1 - self.w) * self.lo(batch, context) + self.w * self.hi(batch, context)

    def measured(self, batch, context):
        return self.lo.measured(batch, context) & self.hi.measured(batch, context)


def _bracket(grid, x):
    """(lo, hi) of sorted ``grid`` around x (equal where x is on it); (None, None) outside."""
    if not grid or x < grid[0] or x > grid[-1]:
        return None, None
    i = int(np.searchsorted(grid, x))
    if grid[i] == x:
        return x, x
    return grid[i - 1], grid[i]


def table_files() -> tuple:
    """The names of the shipped table files."""
    root = resources.files("speclib").joinpath(*DATA_DIR)
    return tuple(sorted(p.name for p in root.iterdir() if p.name.endswith(".json")))


@lru_cache(maxsize=None)
def load(name: str) -> Tables:
    """The shipped tables of one file (``"h100-sxm-trt.json"``)."""
    path = resources.files("speclib").joinpath(*DATA_DIR, name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no silicon table file {name!r} (shipped: {', '.join(table_files())})") from None
    return Tables(data, name)


def tables_for(hardware, engine: str):
    """The shipped :class:`Tables` of ``hardware`` (a preset) served by
    ``engine``, or None where none is shipped (an AMD chip, a chip without
    tables): the measured step then prices every part by the roofline."""
    chip = getattr(hardware, "name", hardware)
    if chip not in SYSTEMS or engine not in FRAMEWORKS:
        return None
    name = f"{slug(chip)}-{engine.lower()}.json"
    if name not in table_files():
        return None
    return load(name)
