"""One layer's components on one chip, in seconds: what a microbenchmark of
the layer times, priced by the per-component rooflines of
:mod:`speclib.core.cost` (max(FLOPs / peak, bytes / bandwidth), the closed
forms of :mod:`speclib.formulas.cost`).

* ``ffn_time``: a dense model's MLP (gate, up and down projections), or a
  mixture of experts' *routed* experts alone (the shared experts, a dense
  GEMM every token uses, are left out: the benchmark times them as a dense
  layer), over B x T positions, the weights in ``precision`` (bf16: 2 bytes
  per weight, fp8: 1) at that precision's peak; the experts touched are the
  expected count under uniform routing (``speclib.formulas.moe``);
* ``attention_time``: B sequences of T query positions over S cached
  tokens each, every query attending to all S (no causal mask among the T),
  the query bytes counted as the paper's Table 1 counts them, the cache in
  ``kv_precision`` and the matrix products at the model's attention
  precision's peak.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

from .._checks import checked_array, checked_choice, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import resolve
from . import cost as _cost
from .attention import KV_FORMATS

#: The precisions a layer is measured in, with the bytes of one stored
#: element (a weight or a cached value) in each.
ELEMENT_BYTES = KV_FORMATS


def check_precision(value) -> str:
    return checked_choice("precision", value, tuple(ELEMENT_BYTES))


@lru_cache(maxsize=None)
def _layer_cost_model(model, hardware, precision: str, kv_precision: str) -> _cost.CostModel:
    """The cost model of one layer of ``model`` as measured: routed experts
    only, weights and cache in the given precisions, query bytes counted."""
    ffn = dataclasses.replace(model.ffn, weight_bytes=ELEMENT_BYTES[precision], precision=precision)
    if ffn.is_moe:
        ffn = dataclasses.replace(ffn, n_shared=0)
    attention = dataclasses.replace(model.attention, kv_bytes=ELEMENT_BYTES[kv_precision])
    layer = dataclasses.replace(model, ffn=ffn, attention=attention)
    return _cost.CostModel(layer, hardware, query_bytes=True)


def ffn_time(B, T, model=None, hardware=None, *, precision: str = "bf16"):
    """Seconds of one layer's FFN over ``B`` sequences of ``T`` positions:
    a dense model's MLP, or a mixture of experts' routed experts (no shared
    expert), weights in ``precision``; broadcasts."""
    model, hardware = resolve(model, hardware)
    cm = _layer_cost_model(model, hardware, check_precision(precision), "bf16")
    tokens = checked_array("B", B, lo=0, lo_open=True) * checked_array("T", T, lo=1, integer=True)
    return scalar_or_array(cm.ffn(tokens) / hardware.memory_bandwidth)


def attention_time(B, T, S, model=None, hardware=None, *, kv_precision: str = "bf16"):
    """Seconds of one layer's attention: ``B`` sequences of ``T`` query
    positions each over ``S`` cached tokens, the cache in ``kv_precision``;
    broadcasts."""
    model, hardware = resolve(model, hardware)
    cm = _layer_cost_model(model, hardware, "bf16", check_precision(kv_precision))
    B_arr = checked_array("B", B, lo=0, lo_open=True)
    T_arr = checked_array("T", T, lo=1, integer=True)
    S_arr = checked_array("S", S, lo=0, lo_open=True)
    return scalar_or_array(cm.attention(B_arr, T_arr, S_arr) / hardware.memory_bandwidth)


def attention_ridge_width(model=None, hardware=None, *, kv_precision: str = "bf16") -> float:
    """The verify width T past which the attention of long contexts is
    compute-bound on ``hardware`` (m_c R / f, the cache in ``kv_precision``):
    about 1.2 for DeepSeek's MLA in bf16 on an H100, 37 for Llama-3-70B's GQA."""
    model, hardware = resolve(model, hardware)
    cm = _layer_cost_model(model, hardware, "bf16", check_precision(kv_precision))
    c = cm.rooflines["attention"].named_constants()
    return float(nf.compute_bound_width(c["m_c"], c["f"], c["R"]))
