"""The roofline held against measured decoding: the time per output token
of plain decoding Llama-3.3-70B as the InferenceMAX benchmark measured it,
against the roofline of the deployment each run served.

The prediction (:func:`predicted_tpot`) is the deployment's own whole-model
step at the roofline (:func:`speclib.core.decode.tpot` with
``step_time="roofline"``): every weight read once per step at the run's
precision (the output head in bf16), each sequence's KV cache at the run's
cache precision, each component its own roofline, and over ``tp`` GPUs each
GPU's share (:mod:`speclib.core.layout`) plus the all-reduces tensor
parallelism waits on. Kernel launches, scheduling and the prefill of arriving
requests are not in it, so it is a lower bound: a measurement below it means
one of the constants is wrong for that run.
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from importlib import resources

import numpy as np

from .._checks import checked_array, checked_choice, scalar_or_array
from ..core.decode import tpot as _tpot
from ..core.deployment import Deployment
from ..formulas import numpy_functions as nf
from ..presets import KV_BYTES, PRECISIONS, resolve
from ..presets import hardware as hardware_preset

# --- the prediction ------------------------------------------------------------------


def predicted_tpot(model, hardware, batch, context, tp=1, precision="fp8", *, kv_precision="fp8"):
    """Roofline time per output token, in seconds, of plain decoding of
    ``model`` on ``tp`` GPUs of ``hardware`` (plain tensor parallelism) with
    ``batch`` sequences at ``context`` cached tokens each: the deployment's
    step at the roofline, weights at ``precision`` (fp4 as NVFP4, or MXFP4 on
    AMD chips), KV cache at ``kv_precision`` (fp8, as the measured runs
    configure it); broadcasts over batch, context and tp. ``batch`` is the
    batch decoded, every sequence of it at once (no memory check,
    ``reserve=None``): the comparisons here put the concurrency or Little's
    law's batch there on purpose, where :func:`speclib.tpot` with a memory
    check would read a concurrency as the batch memory holds."""
    checked_choice("precision", precision, PRECISIONS)
    checked_choice("kv_precision", kv_precision, tuple(KV_BYTES))
    B = checked_array("batch", batch, lo=0, lo_open=True)
    S = checked_array("context", context, lo=0)
    tp_arr = checked_array("tp", tp, lo=1, integer=True)
    B, S, tp_arr = np.broadcast_arrays(B, S, tp_arr)
    out = np.empty(B.shape)
    for n in np.unique(tp_arr):
        at = tp_arr == n
        dep = Deployment(model, hardware, tp=int(n), weights=precision, kv_cache=kv_precision, reserve=None)
        out[at] = np.broadcast_to(_tpot(B[at], S[at], deployment=dep), B[at].shape)
    return scalar_or_array(out)


# --- the measurements ----------------------------------------------------------------

#: Input and output tokens per request of each workload in the data.
WORKLOADS = {"1k1k": (1024, 1024), "1k8k": (1024, 8192)}
#: The model the measurements are for.
MEASURED_MODEL = "Llama-3.3-70B"
#: Where they were published.
MEASURED_URL = "https://inferencemax.semianalysis.com/"
#: The KV cache's precision the runs' launch configurations set (fp8 for every engine build).
KV_PRECISION = "fp8"
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


def chips_with_runs(workload, precision) -> list:
    """The chips of :data:`CHIPS` with a measured run of ``workload`` at ``precision``."""
    measured = load_measurements()
    return [c for c in CHIPS if any(r.chip == c and r.precision == precision and r.workload == workload
                                    for r in measured)]


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

    def ratio_groups(self, little: bool = False) -> list:
        """Measured / predicted TPOT by (workload, chip, framework, precision),
        in the records' order: each group's key, its ratios at each width of
        ``TP_WIDTHS`` (``{tp: array}``) and how many of its runs beat the
        roofline; ``little``: at the Little's-law batch."""
        ratio, tp = self.ratio_little if little else self.ratio, self.column("tp")
        groups = []
        for key in dict.fromkeys((r.workload, r.chip, r.framework, r.precision) for r in self.records):
            idx = self.select(workload=key[0], chip=key[1], framework=key[2], precision=key[3])
            groups.append((key, {n: ratio[idx[tp[idx] == n]] for n in TP_WIDTHS}, int(np.sum(ratio[idx] < 1))))
        return groups


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


def kv_consistency(kv_precisions=("fp8", "bf16"), records=None) -> list:
    """For each KV-cache precision assumed in the prediction: the number of
    runs, how many beat the roofline at batch = concurrency (``below``) and at
    the Little's-law batch (``below_little``), and the Little's-law batch over
    the concurrency (``little_share``: min, median, max)."""
    records = load_measurements() if records is None else list(records)
    out = []
    for c in (compare(records, kv_precision=kv) for kv in kv_precisions):
        share = c.little_batch / c.column("concurrency")
        out.append({"kv_precision": c.kv_precision, "runs": len(c), "below": len(c.below_roofline()),
                    "below_little": len(c.below_roofline(little=True)),
                    "little_share": (share.min(), np.median(share), share.max())})
    return out


#: A run whose Little's-law decode batch is below this fraction of its
#: concurrency was queueing (the client kept more requests in flight than the
#: server decoded): its concurrency is not the decode batch, so it is left out
#: of fits and held-out errors. In both data sets the runs fall in two groups,
#: at 0.86 of their concurrency and above and at 0.81 and below.
QUEUEING_FRACTION = 0.85


def decoding_runs(comparison=None) -> Comparison:
    """The runs whose concurrency is their decode batch (not queueing; see
    :data:`QUEUEING_FRACTION`), as a :class:`Comparison`."""
    c = compare() if comparison is None else comparison
    keep = c.little_batch >= QUEUEING_FRACTION * c.column("concurrency")
    return Comparison([c.records[i] for i in np.flatnonzero(keep)], c.predicted_s[keep], c.predicted_little_s[keep],
                      c.little_batch[keep], c.missing, c.kv_precision)
