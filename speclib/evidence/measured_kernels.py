"""The paper's two kernel claims held against NVIDIA's measured kernel tables
(:mod:`speclib.silicon.tables`: AIConfigurator's, one file per chip and
engine), for the chapter "The paper on measured silicon".

(a) The expert tax. One MoE layer's routed experts, measured against the
tokens entering it (:func:`expert_tax`), beside the coupon count: while the
layer is memory-bound its time is the distinct experts the tokens touch
times one expert's bytes over the bandwidth, so t(T) / t(1) should follow
A(T) / A(1), A the expected distinct experts
(:func:`speclib.core.moe.experts_activated`, the closed form of
:data:`speclib.formulas.moe.experts_activated_expr`).

(b) The verify cost of attention. The tables time decode attention, one
query position per sequence. T positions of one sequence read the same
cache with T times the queries: absorbed MLA is one latent every query head
reads, GQA one K and V per KV head its group reads, and the decode kernels
pack a sequence's query positions as extra query heads over that cache. So
T positions per sequence are read here as the table's kernel at T times the
query heads per GPU, over the same KV heads (:func:`verify_cost`). Where the
table lacks that head count, the point is missing and said so. Beside it:
the roofline's time ratio and T*, the positions at which one GPU's
attention turns compute-bound (:func:`speclib.core.attention.compute_bound_width`).

Every result names what the table lacks (``missing``): a chip or engine
with no file, an op the file does not measure, a shape or point it holds
no number for. No gap is filled silently: only measured cells are returned.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._checks import checked_choice, checked_int
from ..core import attention as _attention
from ..core import moe as _moe
from ..core.layers import ELEMENT_BYTES
from ..formulas import numpy_functions as nf
from ..presets import resolve
from ..silicon import tables as _tables

#: The chips and engines the tables are shipped for, in the chapter's order.
CHIPS = ("H100-SXM", "H200", "B200", "B300")
ENGINES = ("SGLang", "TRT", "vLLM")
#: MoE presets whose expert shape the tables hold, with the precision their
#: experts are read in: DeepSeek-V3 as its fp8 (block-scaled) checkpoint,
#: Qwen3-235B-A22B as its bf16 one.
MOE_MODELS = {"DeepSeek-V3": "fp8", "Qwen3-235B-A22B": "bf16"}
#: Tokens entering the MoE layer the chapter reads up to.
MOE_MAX_TOKENS = 4096
#: The attention presets and the tensor-parallel split (query heads per GPU)
#: the chapter reads them at: DeepSeek-V3 on 8 GPUs (16 of its 128 heads on
#: each; 16 T heads are measured up to T = 8), Llama-3.1-8B on 2 (16 query
#: heads over 4 KV heads; measured up to T = 4).
ATTENTION_MODELS = {"DeepSeek-V3": 8, "Llama-3.1-8B": 2}
#: The batch of sequences and the context each holds, where attention is read.
BATCH = 64
CONTEXT = 4096
#: Query positions per sequence tried.
POSITIONS = (1, 2, 3, 4, 5, 6, 7, 8)


def _file_for(chip: str, engine: str):
    """(the chip's preset, its Tables for ``engine`` or None, why none)."""
    chip = checked_choice("chip", chip, CHIPS)
    engine = checked_choice("engine", engine, ENGINES)
    _, hardware = resolve(None, chip)
    t = _tables.tables_for(hardware, engine)
    why = "" if t is not None else f"no table file for {engine} on {chip}"
    return hardware, t, why


# --- (a) the expert tax --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ExpertTax:
    """One MoE layer's routed experts on one chip and engine: the measured
    seconds at each measured token count (``tokens``; empty where the table
    lacks the shape, ``missing`` saying why), the coupon count A(T) there,
    and the memory-bound time it predicts, A(T) x one expert's bytes / the
    chip's bandwidth."""

    chip: str
    engine: str
    model: str
    precision: str
    dtype: str  # the table dtype read ("" where none)
    source: str
    tokens: np.ndarray
    measured_s: np.ndarray
    distinct: np.ndarray
    predicted_s: np.ndarray
    top_k: int
    experts: int
    per_expert_bytes: float
    bandwidth: float  # the chip's datasheet HBM bandwidth, bytes/s
    missing: str = ""

    @property
    def readable_experts(self) -> np.ndarray:
        """The most experts' weights the measured time could have read at the
        datasheet bandwidth (above the coupon count A(T), the kernel had time
        to spare; below it, the table cannot have read A(T) distinct experts)."""
        return self.measured_s * self.bandwidth / self.per_expert_bytes

    @property
    def measured_ratio(self) -> np.ndarray:
        """t(T) / t(1), measured."""
        return self.measured_s / self.measured_s[0] if len(self.tokens) else self.measured_s

    @property
    def coupon_ratio(self) -> np.ndarray:
        """A(T) / A(1): the time ratio the coupon count predicts while memory-bound."""
        return self.distinct / self.distinct[0] if len(self.tokens) else self.distinct

    def at(self, tokens: int):
        """(measured ratio, coupon ratio) at a measured token count; (nan, nan) where not measured."""
        i = np.flatnonzero(self.tokens == tokens)
        if not len(i):
            return float("nan"), float("nan")
        return float(self.measured_ratio[i[0]]), float(self.coupon_ratio[i[0]])


def expert_tax(chip: str, engine: str, model: str = "DeepSeek-V3", precision=None,
               max_tokens: int = MOE_MAX_TOKENS) -> ExpertTax:
    """The measured MoE layer (all experts on one GPU: moe_tp = moe_ep = 1,
    uniform routing) of ``model`` on ``chip`` under ``engine`` against the
    tokens entering it, up to ``max_tokens``, beside the coupon count.
    ``precision``: the experts' (default :data:`MOE_MODELS`'s)."""
    m, _ = resolve(model, None)
    if not m.ffn.is_moe:
        raise ValueError(f"model must be a mixture-of-experts model; {m.name} has a dense FFN")
    precision = MOE_MODELS.get(m.name, m.ffn.precision) if precision is None else precision
    precision = checked_choice("precision", precision, tuple(_tables.MOE_DTYPES))
    max_tokens = checked_int("max_tokens", max_tokens, lo=2)
    f = m.ffn
    hardware, t, why = _file_for(chip, engine)
    empty = np.array([])
    per_expert = float(nf.expert_bytes(m.expert_params, ELEMENT_BYTES.get(precision, f.weight_bytes), 0.0, 1.0))
    base = dict(chip=hardware.name, engine=engine, model=m.name, precision=precision, top_k=f.top_k,
                experts=f.n_routed, per_expert_bytes=per_expert, bandwidth=hardware.memory_bandwidth)
    if t is None:
        return ExpertTax(dtype="", source="", tokens=empty, measured_s=empty, distinct=empty, predicted_s=empty,
                         missing=why, **base)
    curve, dtype = t.moe(_tables.MOE_DTYPES[precision], m.hidden_size, f.expert_width, f.top_k, f.n_routed, 1, 1)
    if curve is None:
        return ExpertTax(dtype="", source=t.label, tokens=empty, measured_s=empty, distinct=empty,
                         predicted_s=empty, missing=(f"{t.name} measures no MoE of hidden {m.hidden_size}, expert "
                                                     f"width {f.expert_width}, top-{f.top_k} of {f.n_routed} in "
                                                     f"{precision}"), **base)
    keep = curve.x <= max_tokens
    tokens, seconds = curve.x[keep], curve.y[keep]
    missing = "" if tokens[0] == 1 else f"{t.name} has no point at one token (first: {tokens[0]:g})"
    distinct = np.asarray(_moe.experts_activated(tokens, f.top_k, f.n_routed), dtype=float)
    predicted = distinct * per_expert / hardware.memory_bandwidth
    return ExpertTax(dtype=dtype, source=t.label, tokens=tokens, measured_s=seconds, distinct=distinct,
                     predicted_s=predicted, missing=missing, **base)


# --- (b) the verify cost of attention -------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class VerifyCost:
    """One layer's decode attention per sequence on one chip and engine,
    against query positions per sequence T (read as T times the query heads
    per GPU over the same cache), at ``batch`` sequences of ``context``
    tokens: the measured seconds per sequence at each T the table holds,
    the roofline's time ratio t(T) / t(1) there and its T* (where one GPU's
    attention turns compute-bound), and ``missing``: what the table lacks."""

    chip: str
    engine: str
    model: str
    layout: str  # "mla" or "gqa"
    tp: int
    heads: int  # query heads per GPU at T = 1
    kv_heads: int  # KV heads per GPU (1 for MLA's latent)
    kv_dtype: str
    batch: int
    context: int
    source: str
    T: np.ndarray
    seconds: np.ndarray  # per sequence
    roofline_ratio: np.ndarray
    ridge_T: float
    missing: tuple = ()

    @property
    def ratio(self) -> np.ndarray:
        """t(T) / t(1), measured (NaN throughout without a point at T = 1)."""
        if not len(self.T) or self.T[0] != 1:
            return np.full(len(self.T), np.nan)
        return self.seconds / self.seconds[0]

    def at(self, T: int) -> float:
        i = np.flatnonzero(self.T == T)
        return float(self.ratio[i[0]]) if len(i) else float("nan")


def _cell(config: dict, batch: int, context: int):
    """The seconds a table config measures at (batch, context), or None."""
    if batch not in config["batch"] or context not in config["context"]:
        return None
    v = config["latency_ms"][config["batch"].index(batch)][config["context"].index(context)]
    return None if v is None else v * _tables.MS


def roofline_ratio(T, model, hardware, tp: int, context: int) -> np.ndarray:
    """The roofline's t(T) / t(1) for one GPU's attention of a sequence of
    ``context`` tokens with T query positions, heads split over ``tp`` GPUs:
    its bytes (the cache, with the copies the split reads, plus the queries)
    times max(1, intensity / ridge)."""
    m, hw = resolve(model, hardware)
    T = np.asarray(T, dtype=float)
    context_bytes, query_bytes, _, _ = m.attention.variant_constants(m.attention.kind, float(context))
    copies = _attention.cache_copies(m, tp)
    ridge = hw.ridge(m.attention_precision)

    def time(q):
        intensity = np.asarray(_attention.attention_intensity(q, float(context), m, tp=tp), dtype=float)
        return (copies * context_bytes * context + query_bytes * q) * np.maximum(1.0, intensity / ridge)

    return time(T) / time(np.ones_like(T))


def verify_cost(chip: str, engine: str, model: str = "DeepSeek-V3", tp=None, batch: int = BATCH,
                context: int = CONTEXT, positions=POSITIONS) -> VerifyCost:
    """The measured attention of ``model`` (MLA or GQA) on ``chip`` under
    ``engine`` per sequence, at ``batch`` sequences of ``context`` tokens,
    heads split over ``tp`` GPUs (default :data:`ATTENTION_MODELS`'s),
    against the query positions per sequence in ``positions``."""
    m, _ = resolve(model, None)
    tp = checked_int("tp", ATTENTION_MODELS.get(m.name, 1) if tp is None else tp, lo=1)
    batch, context = checked_int("batch", batch, lo=1), checked_int("context", context, lo=1)
    positions = tuple(checked_int("positions", q, lo=1) for q in positions)
    a = m.attention
    hardware, t, why = _file_for(chip, engine)
    if type(a).__name__ == "GQAAttention":
        layout = "gqa"
        heads, kv = _tables.gqa_heads(a.n_heads, a.kv_heads, tp)
    elif _tables.mla_from_table(a):
        layout, heads, kv = "mla", a.n_heads // tp, 1
    else:
        raise ValueError(f"model must have GQA or DeepSeek's MLA (latent 512 + 64); {m.name} has neither")
    kv_dtype = "fp8" if a.kv_bytes <= 1.0 else "bfloat16"
    ridge_T = _attention.compute_bound_width(m, hardware, tp=tp)
    T_all = np.asarray(positions, dtype=float)
    base = dict(chip=hardware.name, engine=engine, model=m.name, layout=layout, tp=tp, heads=heads, kv_heads=kv,
                kv_dtype=kv_dtype, batch=batch, context=context, ridge_T=ridge_T)
    if t is None:
        return VerifyCost(source="", T=np.array([]), seconds=np.array([]), roofline_ratio=np.array([]),
                          missing=(why,), **base)
    configs = (t.tables.get(layout) or {}).get("configs", ())
    if not configs:
        return VerifyCost(source=t.label, T=np.array([]), seconds=np.array([]), roofline_ratio=np.array([]),
                          missing=(f"{t.name} measures no {layout.upper()} attention",), **base)
    got_T, got_s, missing = [], [], []
    for q in positions:
        want = heads * q
        match = [c for c in configs if c["heads"] == want and c["kv_dtype"] == kv_dtype
                 and (layout == "mla" or (c["kv_heads"], c["head_dim"]) == (kv, a.head_dim))]
        if not match:
            missing.append(f"T = {q}: no {layout.upper()} kernel at {want} query heads"
                           + (f" over {kv} KV heads of {a.head_dim}" if layout == "gqa" else "") + f" ({kv_dtype})")
            continue
        s = _cell(match[0], batch, context)
        if s is None:
            missing.append(f"T = {q}: no point at {batch} sequences of {context} tokens")
            continue
        got_T.append(float(q))
        got_s.append(s / batch)
    T = np.array(got_T)
    return VerifyCost(source=t.label, T=T, seconds=np.array(got_s),
                      roofline_ratio=roofline_ratio(T, m, hardware, tp, context) if len(T) else T,
                      missing=tuple(missing), **base)


# --- every chip and engine --------------------------------------------------------------------------


def expert_taxes(model: str = "DeepSeek-V3") -> tuple:
    """:func:`expert_tax` for every chip and engine, chips outermost."""
    return tuple(expert_tax(c, e, model) for c in CHIPS for e in ENGINES)


def verify_costs(model: str = "DeepSeek-V3") -> tuple:
    """:func:`verify_cost` for every chip and engine, chips outermost."""
    return tuple(verify_cost(c, e, model) for c in CHIPS for e in ENGINES)


def gaps() -> tuple:
    """Every gap the chapter's readings meet: (what, chip, engine, why)."""
    out = []
    for model in MOE_MODELS:
        out += [(f"MoE {r.model}", r.chip, r.engine, r.missing) for r in expert_taxes(model) if r.missing]
    for model in ATTENTION_MODELS:
        for r in verify_costs(model):
            out += [(f"{r.layout.upper()} {r.model}", r.chip, r.engine, why) for why in r.missing]
    return tuple(out)
