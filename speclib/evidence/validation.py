"""The roofline held against measured decoding: the predicted time per output
token of plain decoding for a dense model, and the InferenceMAX Llama-3.3-70B
serving measurements to compare it with.

The prediction (:func:`predicted_tpot`) is the paper's cost model summed over
a whole model:

* every decode step reads all weights once (the decoder GEMMs at the
  ``precision``'s bytes per parameter, the output head at ``head_bytes``) and
  each sequence's KV cache, ``context`` tokens x m_c bytes per layer x layers,
  at ``kv_precision``'s bytes per element; the step produces one token per
  sequence, so the step time *is* the time per output token;
* each component (attention projections, FFN, attention, output head) is its
  own roofline, max(FLOPs / peak, bytes / HBM bandwidth), with the GEMMs at
  the precision's dense peak and attention at the model's attention
  precision - :class:`speclib.cost.CostModel`, per layer, times the layers;
* tensor parallelism over ``tp`` GPUs splits every weight, the KV cache (by
  KV head) and the FLOPs evenly, so the time is divided by ``tp``; the
  all-reduces it needs are not in the model, nor are kernel launches,
  scheduling or the prefill of arriving requests.

It is therefore a lower bound: a real step can only be slower. A measurement
below it means one of the constants is wrong for that run.
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from importlib import resources

import numpy as np

from .._checks import checked_array, checked_choice, scalar_or_array
from ..core import cost as _cost
from ..formulas import numpy_functions as nf
from ..presets import PRECISIONS, resolve
from ..presets import hardware as hardware_preset

# --- bytes per element of each storage format ------------------------------------

#: Bytes per stored weight. fp4 depends on the block format: NVIDIA's NVFP4
#: keeps one 8-bit scale per 16 values (4.5 bits), the OCP MXFP4 that AMD's
#: checkpoints use one 8-bit scale per 32 (4.25 bits).
NVFP4_BYTES = (4 + 8 / 16) / 8
MXFP4_BYTES = (4 + 8 / 32) / 8
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": NVFP4_BYTES}
#: Chips whose fp4 checkpoints in the measured data are MXFP4 rather than NVFP4
#: (amd/Llama-3.3-70B-Instruct-MXFP4-Preview in the benchmark's configuration).
MXFP4_CHIPS = ("MI355X",)
#: Bytes per KV-cache element.
KV_BYTES = {"bf16": 2.0, "fp8": 1.0}


def weight_bytes_for(precision: str, hardware) -> float:
    """Bytes per weight of ``precision`` as stored on ``hardware``'s checkpoints."""
    precision = checked_choice("precision", precision, PRECISIONS)
    if precision == "fp4" and hardware.name in MXFP4_CHIPS:
        return MXFP4_BYTES
    return WEIGHT_BYTES[precision]


# --- the prediction ------------------------------------------------------------------


@lru_cache(maxsize=None)
def _quantised_cost_model(model, hardware, weight_bytes: float, precision: str, kv_bytes: float):
    ffn = dataclasses.replace(model.ffn, weight_bytes=weight_bytes, precision=precision)
    attention = dataclasses.replace(model.attention, kv_bytes=kv_bytes)
    quantised = dataclasses.replace(model, proj_weight_bytes=weight_bytes, proj_precision=precision, ffn=ffn,
                                    attention=attention)
    return _cost.CostModel(quantised, hardware, query_bytes=False)


def _check_dense(model):
    if model.ffn.is_moe:
        raise ValueError(f"predicted_tpot covers dense models; {model.name} is a mixture of experts")
    if model.n_layers is None or model.vocab_size is None:
        raise ValueError(f"model {model.name!r} needs n_layers and vocab_size to predict a whole-model step")


def predicted_step_bytes(model, hardware, batch, context, precision="fp8", *, kv_precision="fp8", weight_bytes=None,
                         head_bytes=2.0):
    """One decode step of the whole model on one GPU, in HBM byte-equivalents
    (a compute-bound component counts FLOPs / ridge); see the module notes."""
    model, hardware = resolve(model, hardware)
    _check_dense(model)
    precision = checked_choice("precision", precision, PRECISIONS)
    kv_precision = checked_choice("kv_precision", kv_precision, tuple(KV_BYTES))
    wb = weight_bytes_for(precision, hardware) if weight_bytes is None else float(
        checked_array("weight_bytes", weight_bytes, lo=0, lo_open=True))
    hb = float(checked_array("head_bytes", head_bytes, lo=0, lo_open=True))
    B = checked_array("batch", batch, lo=0, lo_open=True)
    S = checked_array("context", context, lo=0)
    cm = _quantised_cost_model(model, hardware, wb, precision, KV_BYTES[kv_precision])
    layers = cm.decode(B, S) * model.n_layers
    # The output head stays in bf16 in the fp8/fp4 checkpoints, and runs at the bf16 peak.
    head = nf.gemm_cost(B, float(model.vocab_size * model.hidden_size), hb, hardware.ridge("bf16"))
    return layers + head


def predicted_tpot(model, hardware, batch, context, tp=1, precision="fp8", *, kv_precision="fp8", weight_bytes=None,
                   head_bytes=2.0):
    """Roofline time per output token, in seconds, of plain decoding of a dense
    ``model`` on ``tp`` GPUs of ``hardware`` with ``batch`` sequences at
    ``context`` cached tokens each; broadcasts over batch, context and tp.

    Weights at ``precision`` (fp4 as NVFP4, or MXFP4 on AMD chips; override
    with ``weight_bytes``), output head at ``head_bytes`` (bf16), KV cache at
    ``kv_precision`` (fp8, as the measured runs configure it). Tensor
    parallelism divides bytes and FLOPs by ``tp``; nothing else is charged.
    """
    tp_arr = checked_array("tp", tp, lo=1, integer=True)
    _, hw = resolve(None, hardware)
    step = predicted_step_bytes(model, hardware, batch, context, precision, kv_precision=kv_precision,
                                weight_bytes=weight_bytes, head_bytes=head_bytes)
    return scalar_or_array(step / (tp_arr * hw.memory_bandwidth))


# --- the measurements ----------------------------------------------------------------

#: Input and output tokens per request of each workload in the data.
WORKLOADS = {"1k1k": (1024, 1024), "1k8k": (1024, 8192)}
#: The model the measurements are for.
MEASURED_MODEL = "Llama-3.3-70B"
#: Chips in the measurements, in the order figures and tables list them.
CHIPS = ("B200", "H100", "H200", "MI300X", "MI325X", "MI355X")
#: Tensor-parallel widths in the measurements, in the order figures and tables list them.
TP_WIDTHS = (1, 2, 4, 8)


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One InferenceMAX run: a chip/framework/precision/TP at one concurrency."""

    workload: str  # "1k1k" or "1k8k"
    chip: str  # the chip as the data names it, e.g. "B200"
    framework: str  # "vLLM" or "TRT"
    precision: str  # "fp8" or "fp4"
    tp: int
    concurrency: int
    ttft_ms: float
    tpot_ms: float
    e2el_s: float
    throughput_per_gpu: float  # input + output tokens per second per GPU

    @property
    def input_len(self) -> int:
        return WORKLOADS[self.workload][0]

    @property
    def output_len(self) -> int:
        return WORKLOADS[self.workload][1]


_FRAMEWORKS = {"VLLM": "vLLM", "TRT": "TRT"}


def load_measurements() -> list:
    """Every measured record shipped in ``speclib/data/decode-benchmarks``, as
    :class:`Measurement` objects, sorted by workload, chip, framework,
    precision, TP and concurrency."""
    root = resources.files("speclib").joinpath("data", "decode-benchmarks")
    records = []
    for workload_dir in root.iterdir():
        if not workload_dir.is_dir():
            continue
        workload = workload_dir.name.split("-")[0]
        for chip_dir in workload_dir.iterdir():
            if not chip_dir.is_dir():
                continue
            for path in chip_dir.iterdir():
                if not path.name.endswith(".json"):
                    continue
                for r in json.loads(path.read_text()):
                    records.append(
                        Measurement(
                            workload=workload,
                            chip=r["Hardware"].split("-")[0],
                            framework=_FRAMEWORKS.get(r["Framework"].upper(), r["Framework"]),
                            precision=r["Precision"].lower(),
                            tp=int(r["TP"]),
                            concurrency=int(r["Conc"]),
                            ttft_ms=float(r["TTFT (ms)"]),
                            tpot_ms=float(r["TPOT (ms)"]),
                            e2el_s=float(r["E2EL (s)"]),
                            throughput_per_gpu=float(r["TPUT per GPU"]),
                        )
                    )
    order = {c: i for i, c in enumerate(CHIPS)}
    records.sort(key=lambda m: (m.workload, order.get(m.chip, len(order)), m.chip, m.framework, m.precision, m.tp,
                                m.concurrency))
    return records


def mean_decode_context(input_len, output_len):
    """Average cached context over a request's decode steps: I + (O - 1)/2
    (:data:`speclib.formulas.workload.mean_decode_context_expr`)."""
    I_arr = checked_array("input_len", input_len, lo=0, lo_open=True)
    O_arr = checked_array("output_len", output_len, lo=1)
    return scalar_or_array(nf.mean_decode_context(I_arr, O_arr))


def littles_law_batch(throughput_per_gpu, tp, input_len, output_len, tpot_s):
    """Requests decoding at once, from a run's own throughput and TPOT
    (:data:`speclib.formulas.workload.littles_law_batch_expr`)."""
    args = [checked_array(n, v, lo=0, lo_open=True) for n, v in
            (("throughput_per_gpu", throughput_per_gpu), ("tp", tp), ("input_len", input_len),
             ("output_len", output_len), ("tpot_s", tpot_s))]
    return scalar_or_array(nf.littles_law_batch(*args))


def _preset_or_none(chip):
    try:
        return hardware_preset(chip)
    except ValueError:
        return None


class Comparison:
    """Measured against predicted TPOT for every record whose chip has a
    preset. Arrays share one index (``records[i]``); ``missing`` lists the
    chips skipped for want of a preset."""

    def __init__(self, records, predicted_s, predicted_little_s, little_batch, missing, kv_precision):
        self.records = list(records)
        self.predicted_s = predicted_s
        self.predicted_little_s = predicted_little_s
        self.little_batch = little_batch
        self.missing = tuple(missing)
        self.kv_precision = kv_precision
        self.measured_s = np.array([r.tpot_ms for r in self.records]) * 1e-3
        self.ratio = self.measured_s / self.predicted_s
        self.ratio_little = self.measured_s / self.predicted_little_s

    def __len__(self):
        return len(self.records)

    def column(self, name):
        """A record field as an array, e.g. ``column("tp")``."""
        return np.array([getattr(r, name) for r in self.records])

    def select(self, **where):
        """Indices of the records whose fields equal the given values."""
        mask = np.ones(len(self), dtype=bool)
        for name, value in where.items():
            mask &= self.column(name) == value
        return np.flatnonzero(mask)

    def below_roofline(self, little: bool = False):
        """Indices where the measurement is faster than the prediction."""
        return np.flatnonzero((self.ratio_little if little else self.ratio) < 1)


def compare(records=None, model=MEASURED_MODEL, *, kv_precision="fp8") -> Comparison:
    """Predict every measured record at batch = its concurrency and at the
    Little's-law batch, with the mean decode context of its workload."""
    records = load_measurements() if records is None else list(records)
    model, _ = resolve(model, None)
    kept, kept_index, missing = [], [], []
    pred, pred_little, little = [], [], []
    groups = {}
    for i, r in enumerate(records):
        groups.setdefault((r.chip, r.precision), []).append(i)
    for (chip, precision), idx in groups.items():
        hw = _preset_or_none(chip)
        if hw is None:
            missing.append(chip)
            continue
        rs = [records[i] for i in idx]
        conc = np.array([r.concurrency for r in rs], dtype=float)
        tp = np.array([r.tp for r in rs], dtype=float)
        context = mean_decode_context([r.input_len for r in rs], [r.output_len for r in rs])
        b_little = littles_law_batch([r.throughput_per_gpu for r in rs], tp, [r.input_len for r in rs],
                                     [r.output_len for r in rs], np.array([r.tpot_ms for r in rs]) * 1e-3)
        kept.extend(rs)
        kept_index.extend(idx)
        pred.append(predicted_tpot(model, hw, conc, context, tp, precision, kv_precision=kv_precision) + 0 * conc)
        pred_little.append(predicted_tpot(model, hw, b_little, context, tp, precision, kv_precision=kv_precision)
                           + 0 * conc)
        little.append(b_little + 0 * conc)
    order = np.argsort(np.array(kept_index, dtype=int), kind="stable")
    cat = lambda parts: np.concatenate(parts)[order] if parts else np.zeros(0)  # noqa: E731
    return Comparison([kept[i] for i in order], cat(pred), cat(pred_little), cat(little), sorted(set(missing)),
                      kv_precision)
