"""One GPU's share of a step that a serving engine splits over several GPUs.

The paper prices one GPU. An engine serving a large model splits it over a
group of ``tp`` GPUs (one node, in the data this project holds) in one of a
few layouts, each with its own price (:class:`Layout`):

* **tensor parallelism** (the default): every weight matrix is split over
  the ``tp`` GPUs, so each reads 1/tp of every weight and does 1/tp of the
  FLOPs. Attention is split by head: a grouped-query layer's KV cache is
  split by KV head, but never below one whole head per GPU (with fewer KV
  heads than GPUs each head is held, and read, by tp / n_kv GPUs,
  :data:`speclib.formulas.step.gqa_kv_share_expr`); MLA's latent is one cache
  that every query head reads, so every GPU holds and reads all of it
  (SGLang, vLLM and TensorRT-LLM all replicate it without data-parallel
  attention). Two all-reduces per layer join the partial sums, after
  attention's output projection and after the feed-forward block
  (:data:`speclib.formulas.step.allreduce_time_expr`): each waits the
  interconnect's all-reduce latency at tp GPUs
  (:meth:`speclib.presets.Interconnect.allreduce_latency_at`, measured, with
  its source) and moves its bytes over the link.
* **expert parallelism** (``ep`` > 1, dividing tp): the routed experts are
  split whole over ``ep`` groups of GPUs instead of each being sliced: each
  group reads the experts the step's tokens touch among its own, in
  expectation the same bytes as slicing every expert, but the step waits
  for the most loaded group, whose touched experts and token picks lie
  above the mean (:func:`speclib.core.moe.rank_max_load`: the expected
  maximum under uniform routing or a measured popularity).
* **data-parallel attention** (``dp_attention``): attention and its
  projections run on each GPU for its own B / tp sequences, with a full copy
  of the attention weights; so the KV cache is split by sequence (1/tp of it
  each, the reason engines offer it for MLA) and the attention projections
  are read whole by every GPU. With expert parallelism, each MoE layer's
  tokens go to their experts' GPUs and back, an all-to-all dispatch and
  combine (:mod:`speclib.core.parallel`'s pricing, latency included) instead
  of the all-reduces.

``B`` is the group's batch: the sequences the ``tp`` GPUs serve together,
what a benchmark's concurrency is. Every time here is one GPU's, and the
GPUs of the group run in step (the step waits for the slowest; with experts
split whole, the most loaded, which :mod:`speclib.core.parallel` prices as
its own question).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import checked_int
from ..formulas import numpy_functions as nf
from ..presets import default_interconnect
from . import moe as _moe
from .step import StepModel

#: Bytes per activation element the collectives move (bf16).
ACTIVATION_BYTES = 2.0
#: The all-to-all's bytes per element: dispatch in fp8, combine in bf16, as
#: DeepEP moves them (:mod:`speclib.core.parallel`).
DISPATCH_BYTES, COMBINE_BYTES = 1.0, 2.0
#: Collectives per layer at decode under tensor-parallel attention: after
#: attention's output projection and after the feed-forward block.
ALLREDUCES_PER_LAYER = 2
#: All-to-all phases per MoE layer under data-parallel attention with
#: expert parallelism: a dispatch and a combine.
ALL_TO_ALL_PER_LAYER = 2


@dataclass(frozen=True)
class Layout:
    """How an engine splits a model over ``tp`` GPUs: ``ep`` (GPUs the routed
    experts are split over, whole; 1: every expert sliced over the tp GPUs)
    and ``dp_attention`` (attention split by sequence instead of by head)."""

    tp: int = 1
    ep: int = 1
    dp_attention: bool = False

    def __post_init__(self):
        object.__setattr__(self, "tp", checked_int("tp", self.tp, lo=1))
        object.__setattr__(self, "ep", checked_int("ep", self.ep, lo=1))
        if not isinstance(self.dp_attention, (bool, np.bool_)):
            raise ValueError(f"dp_attention must be True or False; got {self.dp_attention!r}")
        object.__setattr__(self, "dp_attention", bool(self.dp_attention))
        if self.tp % self.ep:
            raise ValueError(f"ep must divide tp (the experts are split over GPUs of the tensor-parallel group, "
                             f"as SGLang's --ep-size and TensorRT-LLM's ep_size are); got ep={self.ep}, tp={self.tp}")
        if self.dp_attention and self.tp == 1:
            raise ValueError("dp_attention splits attention by sequence over the tensor-parallel GPUs: it needs tp > 1")

    @property
    def plain(self) -> bool:
        """Whether this is plain tensor parallelism (or one GPU)."""
        return self.ep == 1 and not self.dp_attention

    def check(self, architecture) -> "Layout":
        """Refuse a layout ``architecture`` cannot be served with, naming the field."""
        a = architecture
        if self.tp > 1 and not self.dp_attention and not head_split_ok(self.tp, a.n_heads, a.kv_heads):
            allowed = ", ".join(str(t) for t in head_splits(a.n_heads, a.kv_heads))
            how = (f" and {a.kv_heads} KV heads (each KV head whole on a GPU, or replicated over tp / "
                   f"{a.kv_heads} GPUs)" if a.kv_heads else "")
            raise ValueError(f"tp must divide {a.name}'s {a.n_heads} attention heads{how}, as vLLM and SGLang split "
                             f"them; got tp={self.tp}; allowed: {allowed}")
        if self.ep > 1:
            if not a.is_moe:
                raise ValueError(f"ep splits routed experts over GPUs; {a.name} has none (ep must be 1)")
            if a.n_routed % self.ep:
                raise ValueError(f"ep must divide the routed experts ({a.n_routed} in {a.name}); got ep={self.ep}")
        if self.dp_attention and not a.attention_layers:
            raise ValueError(f"dp_attention splits the attention cache by sequence; {a.name} has no attention layers "
                             "with a cache to split")
        return self

    def __str__(self) -> str:
        if self.tp == 1:
            return "one GPU"
        parts = [f"TP{self.tp}"] + ([f"EP{self.ep}"] if self.ep > 1 else []) + (
            ["data-parallel attention"] if self.dp_attention else [])
        return " ".join(parts)


def head_split_ok(tp: int, n_heads: int, kv_heads: int) -> bool:
    """Whether tensor-parallel attention over ``tp`` GPUs can split ``n_heads``
    query heads and ``kv_heads`` KV heads (0: MLA's one latent, held whole on
    every GPU) as the engines do: the query heads evenly (vLLM 0.34.0,
    ``ModelConfig.verify_with_parallel_config``: "Total number of attention
    heads must be divisible by tensor parallel size"), the KV heads evenly
    when there are at least tp of them, else each replicated over
    tp / kv_heads GPUs, which must be whole (``QKVParallelLinear`` in vLLM
    0.34.0's vllm/model_executor/layers/linear.py and SGLang 0.5.23's
    sglang/srt/layers/linear.py: ``divide(tp_size, total_num_kv_heads)``).
    ``n_heads`` 0 (not known): no check."""
    if tp == 1 or n_heads <= 0:
        return True
    if n_heads % tp:
        return False
    if kv_heads <= 0:
        return True
    return (tp % kv_heads == 0) if tp >= kv_heads else (kv_heads % tp == 0)


def head_splits(n_heads: int, kv_heads: int) -> list:
    """The tensor-parallel sizes :func:`head_split_ok` allows, 1..``n_heads``."""
    return [t for t in range(1, max(n_heads, 1) + 1) if head_split_ok(t, n_heads, kv_heads)]


def cache_share(architecture, layout: Layout, F=nf):
    """The share of each sequence's attention cache one GPU of ``layout``
    holds and reads, for the group's batch: all of it on one GPU; 1/tp under
    data-parallel attention (each GPU holds its own sequences); under tensor
    parallelism an MLA latent whole (every GPU holds it, as SGLang, vLLM and
    TensorRT-LLM do), a GQA cache split by KV head down to one head per GPU
    (:data:`speclib.formulas.step.gqa_kv_share_expr`)."""
    n = layout.tp
    if n == 1:
        return 1.0
    if layout.dp_attention:
        return 1.0 / n
    if not architecture.kv_heads:  # MLA: one latent every query head reads
        return 1.0
    return F.gqa_kv_share(float(n), float(architecture.kv_heads))


class ParallelStep:
    """One GPU's share of a step of ``step_model`` split by ``layout`` over
    GPUs joined by ``interconnect`` (None: the chip's own), in the interface
    of :class:`speclib.core.step.StepModel` (``components``,
    ``component_times``, ``time``, ``flop_time``), plus the collectives'
    time (:meth:`communication`), which :meth:`time` includes."""

    def __init__(self, step_model: StepModel, layout: Layout, interconnect=None, *, group_limited: bool = False):
        self.step_model = step_model
        if not isinstance(group_limited, (bool, np.bool_)):
            raise ValueError(f"group_limited must be True or False; got {group_limited!r}")
        #: Whether the most loaded expert-parallel GPU is priced with the
        #: model's group-limited routing (its architecture's
        #: ``expert_groups``, the groups placed whole on the GPUs); False, the
        #: default and what the shipped calibration was fitted with, prices
        #: it ungrouped.
        self.group_limited = bool(group_limited) and step_model.architecture.expert_groups is not None
        self.architecture = step_model.architecture
        self.hardware = step_model.hardware
        self.roofline = step_model.roofline
        self.layout = layout.check(step_model.architecture)
        self.tp = layout.tp
        self.interconnect = interconnect if interconnect is not None else default_interconnect(self.hardware)
        self.collective_latency = (self.interconnect.allreduce_latency_at(self.tp) if self._allreduces()
                                   else 0.0)
        if self.tp > 1 and not self._allreduces() and self.interconnect.latency is None:
            raise ValueError(f"interconnect {self.interconnect.name!r} has no all-to-all latency (latency_us): "
                             "expert parallelism with data-parallel attention cannot be priced on it")

    def _allreduces(self) -> bool:
        return self.tp > 1 and not (self.layout.dp_attention and self.layout.ep > 1)

    def experts_touched(self, B, T, F=nf):
        return self.step_model.experts_touched(B, T, F)

    def scaled(self, seconds):
        """A whole-model time split evenly over the group: one GPU's share
        (a drafter's passes, which run split as the target's are)."""
        return seconds / self.tp

    def kv_share(self, F=nf):
        """The share of a full-attention layer's cache one GPU reads."""
        return cache_share(self.architecture, self.layout, F)

    def components(self, B, T, S, F=nf) -> dict:
        """{component: (FLOPs, bytes)} of one GPU's share of the step."""
        a, n = self.architecture, float(self.tp)
        whole = self.step_model.components(B, T, S, F)
        if n == 1:
            return whole
        dense_flops, dense_bytes = whole["dense"]
        if self.layout.dp_attention:  # the attention projections are whole on every GPU
            replicated = a.attention_params * a.dense_bytes
            dense_bytes = (dense_bytes - replicated) / n + replicated
        else:
            dense_bytes = dense_bytes / n
        ffn_flops, ffn_bytes = whole["ffn"]
        if self.layout.ep > 1:
            ffn_flops, ffn_bytes = self._expert_parallel_ffn(B, T)
        attention_flops, attention_bytes = whole["attention"]
        full = self.step_model.cache_bytes(B, T, S, F)
        attention_bytes = full * self.kv_share(F) + (attention_bytes - full) / n
        return {"dense": (dense_flops / n, dense_bytes), "ffn": (ffn_flops / n, ffn_bytes / n),
                "attention": (attention_flops / n, attention_bytes)}

    def _expert_parallel_ffn(self, B, T):
        """The experts' (FLOPs, bytes) of the whole group as the most loaded
        of the ``ep`` GPU groups that hold the routed experts sees them, so
        that over the tp GPUs they are one GPU's share of the step it waits
        for: the experts its tokens touch at the most (expected), its token
        picks at the most, and the shared experts split evenly
        (:func:`speclib.core.moe.rank_max_load`)."""
        a, G = self.architecture, self.layout.ep
        tokens = np.asarray(B * T, dtype=float)
        touched, served = _moe.rank_max_load(tokens, a.top_k, a.n_routed, G, self.step_model.routing,
                                             a.expert_groups if self.group_limited else None)
        routed_flops = 2.0 * a.top_k * a.ffn_params * tokens * served
        shared_flops = 2.0 * a.n_shared * a.ffn_params * tokens
        return routed_flops + shared_flops, a.ffn_params * a.ffn_bytes * (a.n_shared + G * touched)

    def communication(self, B, T, F=nf, *, layers=None, moe_layers=None):
        """Seconds one GPU waits on the step's collectives (0 on one GPU);
        ``layers`` and ``moe_layers`` (None: the model's): the collectives of
        a pass through that many layers, a drafter's split as the target is."""
        a, n = self.architecture, self.tp
        if n == 1:
            return 0.0 * B * T
        layers = a.n_layers if layers is None else layers
        moe_layers = a.moe_layers if moe_layers is None else moe_layers
        link = self.interconnect.bandwidth
        if self._allreduces():
            return F.allreduce_time(float(ALLREDUCES_PER_LAYER * layers), self.collective_latency, float(n),
                                    B, T, float(a.hidden_size), ACTIVATION_BYTES, link / 2.0)
        M = self.hardware.memory_bandwidth
        per_layer = (F.comm_cost(B * T / n, float(a.top_k), float(n), float(a.hidden_size), DISPATCH_BYTES,
                                 COMBINE_BYTES, M, link)
                     + F.comm_latency_cost(float(ALL_TO_ALL_PER_LAYER), self.interconnect.latency, M)) / M
        return moe_layers * per_layer

    def draft_layers(self, B, positions, layers: int, moe: bool):
        """What a drafter's pass over ``B`` sequences of ``positions`` positions
        adds to its roofline for running ``layers`` layers split as the
        target is: their collectives (the calibrated step adds its per-layer
        costs, :meth:`speclib.core.calibrated.CalibratedStepModel.draft_layers`)."""
        return self.communication(B, positions, layers=layers, moe_layers=layers * float(bool(moe)))

    def component_times(self, B, T, S, F=nf) -> dict:
        """{component: seconds} of one GPU, each by its own roofline, and the collectives."""
        M = self.hardware.memory_bandwidth
        peak = self.step_model._peak
        out = {name: F.roofline_time(flops, moved, peak[name], M)
               for name, (flops, moved) in self.components(B, T, S, F).items()}
        if self.tp > 1:
            out["communication"] = self.communication(B, T, F)
        return out

    def kernel_time(self, B, T, S, F=nf):
        """Seconds of one GPU's kernels (the step without its collectives),
        composed as the step model composes them (per component, or one
        roofline per precision stream)."""
        return self.step_model.compose(self.components(B, T, S, F), F)

    def time(self, B, T, S, F=nf):
        """Seconds of one GPU's share of the step, its collectives included."""
        return self.kernel_time(B, T, S, F) + self.communication(B, T, F)

    def flop_time(self, B, T, S, F=nf, precision=None):
        """Seconds of one GPU's FLOPs at the chip's peak."""
        return self.step_model.flop_time(B, T, S, F, precision) / self.tp

    # --- the prefill of arriving requests -------------------------------------------------
    def prefill_bytes(self, prompt) -> float:
        """Bytes one GPU reads to prefill a prompt of ``prompt`` tokens: its
        share of the dense weights and of every expert the prompt's tokens
        touch (the cache it writes is left out)."""
        a = self.architecture
        dense = a.dense_params * a.dense_bytes
        if self.layout.dp_attention:  # the attention projections are whole on every GPU
            replicated = a.attention_params * a.dense_bytes
            dense = (dense - replicated) / self.tp + replicated
        else:
            dense = dense / self.tp
        touched = self.step_model.experts_touched(np.asarray(prompt, dtype=float), np.asarray(1.0))
        return dense + a.ffn_params * a.ffn_bytes * (a.n_shared + touched) / self.tp

    def prefill_share(self, B, prompt, output):
        """Seconds of prefill one decode step of ``B`` sequences carries in a
        closed loop of requests of ``prompt`` and ``output`` tokens, by the
        prefill's roofline on this layout
        (:data:`speclib.formulas.workload.prefill_share_roofline_expr`)."""
        a = self.architecture
        return nf.prefill_share_roofline(B, prompt, output, a.active_params, float(a.attention_layers),
                                         a.prefill_flops_per_pair, float(self.tp),
                                         self.hardware.peak_flops(a.dense_precision), self.prefill_bytes(prompt),
                                         self.hardware.memory_bandwidth)
