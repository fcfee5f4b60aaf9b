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
  precision - :class:`speclib.core.cost.CostModel`, per layer, times the layers;
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
from ..core import calibrated as _cal
from ..core import cost as _cost
from ..core.deployment import Deployment
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


# --- a calibrated step time ------------------------------------------------------------
#
# The roofline above is a lower bound. The model below adds what the measured
# runs show it misses, with as few constants as the data need (see
# speclib.core.calibrated for how the constants price a speculative step):
#
#     tpot = mu_chip * roofline + a_(chip, engine) + d * B + prefill
#
# mu, a and d are fitted by least squares on relative error; the prefill of
# arriving requests is not fitted here but computed: each request prefills I
# tokens for every O it decodes, so a decode step of B sequences shares the
# work of B / O prefills, charged at the precision's dense peak (2 FLOPs per
# active weight per token and causal attention over the prompt, split over
# TP GPUs). The joint fit (speclib.evidence.step_fit) fits its efficiency.

#: The terms a calibration may have (the shipped one uses DEFAULT_TERMS).
#: ``factor``: a roofline multiplier per chip; ``fixed``: a time per step per
#: chip and engine; ``per_sequence``: a time per sequence in the step;
#: ``prefill``: the prefill share, computed, not fitted; ``allreduce``: a
#: coefficient on tensor-parallel all-reduce time (two per layer, the
#: activations of every sequence over the link) - tried, not kept.
CALIBRATION_TERMS = ("factor", "fixed", "per_sequence", "prefill", "allreduce")
DEFAULT_TERMS = ("factor", "fixed", "per_sequence", "prefill")
#: A run whose Little's-law batch is below this fraction of its concurrency
#: was queueing: its concurrency is not the decode batch, so it is left out of
#: fits and held-out errors (8 of the 454 runs).
QUEUEING_FRACTION = 0.9


def prefill_seconds(model, hardware, batch, input_len, output_len, tp=1, precision="fp8"):
    """Seconds of prompt work one decode step shares in a closed loop: B / O
    prefills of I tokens, 2 FLOPs per active weight per token plus causal
    attention over the prompt, at ``precision``'s dense peak, split over ``tp``
    GPUs (:data:`speclib.formulas.workload.prefill_share_seconds_expr`); broadcasts."""
    model, hardware = resolve(model, hardware)
    precision = checked_choice("precision", precision, PRECISIONS)
    args = [checked_array(n, v, lo=0, lo_open=True) for n, v in
            (("batch", batch), ("input_len", input_len), ("output_len", output_len), ("tp", tp))]
    B, I, O, n = args
    arch = model.step_architecture()
    return scalar_or_array(nf.prefill_share_seconds(B, I, O, float(model.active_params()), float(arch.attention_layers),
                                                    float(arch.flops_per_pair), n, hardware.peak_flops(precision)))


def allreduce_seconds(model, hardware, batch, tp):
    """Seconds of a step's tensor-parallel all-reduces at the link's
    bandwidth: two per layer, each of B x hidden bf16 activations, a ring
    moving 2 (tp - 1) / tp of them each way; 0 at tp = 1. Used only to test
    whether such a term improves the calibration (it does not)."""
    model, hardware = resolve(model, hardware)
    B = checked_array("batch", batch, lo=0)
    n = checked_array("tp", tp, lo=1, integer=True)
    link = _interconnect_bandwidth(hardware) / 2.0  # each way
    moved = 2 * model.n_layers * B * model.hidden_size * 2.0 * 2.0 * (n - 1) / n
    return scalar_or_array(moved / link)


def _interconnect_bandwidth(hardware) -> float:
    from ..presets import default_interconnect

    return default_interconnect(hardware).bandwidth


def decoding_runs(comparison=None) -> Comparison:
    """The runs whose concurrency is their decode batch (not queueing; see
    :data:`QUEUEING_FRACTION`), as a :class:`Comparison`."""
    c = compare() if comparison is None else comparison
    keep = c.little_batch >= QUEUEING_FRACTION * c.column("concurrency")
    return Comparison([c.records[i] for i in np.flatnonzero(keep)], c.predicted_s[keep], c.predicted_little_s[keep],
                      c.little_batch[keep], c.missing, c.kv_precision)


class FittedCalibration:
    """A calibration fitted on some runs: ``calibration`` (the constants, a
    :class:`speclib.core.calibrated.Calibration`), the ``terms`` it has, and
    ``allreduce`` (its coefficient, 0 unless that term was asked for)."""

    def __init__(self, calibration, terms, allreduce=0.0, workloads=()):
        self.calibration = calibration
        self.terms = tuple(terms)
        self.allreduce = allreduce
        self.workloads = tuple(workloads)

    def predict(self, comparison) -> np.ndarray:
        """Predicted TPOT (s) of each run of ``comparison`` at its concurrency."""
        features = _features(comparison)
        out = np.empty(len(comparison))
        for i, r in enumerate(comparison.records):
            mu, a, d = _constants_or_defaults(self.calibration, r, self.terms)
            out[i] = (mu * features["roofline"][i] + a + d * r.concurrency + self.allreduce * features["allreduce"][i]
                      + ("prefill" in self.terms) * features["prefill"][i])
        return out


def _constants_or_defaults(calibration, record, terms):
    mu = calibration.roofline_factor.get(record.chip, 1.0) if "factor" in terms else 1.0
    a = calibration.fixed_s.get(record.chip, {}).get(record.framework, 0.0) if "fixed" in terms else 0.0
    d = calibration.per_sequence_s if "per_sequence" in terms else 0.0
    return mu, a, d


def _features(comparison) -> dict:
    model, _ = resolve(MEASURED_MODEL, None)
    recs = comparison.records
    prefill = np.array([prefill_seconds(model, hardware_preset(r.chip), r.concurrency, r.input_len, r.output_len, r.tp,
                                        r.precision) for r in recs])
    allreduce = np.array([allreduce_seconds(model, hardware_preset(r.chip), r.concurrency, r.tp) for r in recs])
    return {"roofline": comparison.predicted_s, "prefill": prefill, "allreduce": allreduce}


def fit_calibration(comparison=None, workloads=tuple(WORKLOADS), terms=DEFAULT_TERMS) -> FittedCalibration:
    """Least-squares fit, on relative error, of the calibrated model's
    constants to the decoding runs of ``workloads`` (see the notes above)."""
    terms = tuple(checked_choice("terms", t, CALIBRATION_TERMS) for t in terms)
    runs = decoding_runs(comparison)
    idx = np.flatnonzero(np.isin(runs.column("workload"), list(workloads)))
    if idx.size == 0:
        raise ValueError(f"workloads must name measured workloads ({', '.join(WORKLOADS)}); got {workloads!r}")
    recs = [runs.records[i] for i in idx]
    f = {k: v[idx] for k, v in _features(runs).items()}
    y = runs.measured_s[idx]
    chips = sorted({r.chip for r in recs})
    pairs = sorted({(r.chip, r.framework) for r in recs})
    columns, names = [], []
    offset = np.zeros(len(recs))
    if "factor" in terms:
        for chip in chips:
            columns.append(f["roofline"] * np.array([r.chip == chip for r in recs]))
            names.append(("factor", chip))
    else:
        offset += f["roofline"]
    if "fixed" in terms:
        for chip, engine in pairs:
            columns.append(np.array([float(r.chip == chip and r.framework == engine) for r in recs]))
            names.append(("fixed", (chip, engine)))
    if "per_sequence" in terms:
        columns.append(np.array([float(r.concurrency) for r in recs]))
        names.append(("per_sequence", None))
    if "allreduce" in terms:
        columns.append(f["allreduce"])
        names.append(("allreduce", None))
    if "prefill" in terms:
        offset += f["prefill"]
    coef = np.zeros(0)
    if columns:
        X = np.stack(columns, axis=1)
        coef, *_ = np.linalg.lstsq(X / y[:, None], 1.0 - offset / y, rcond=None)
    factor = {chip: 1.0 for chip in chips}
    fixed = {}
    per_sequence, allreduce = 0.0, 0.0
    for (kind, key), value in zip(names, coef):
        if kind == "factor":
            factor[key] = float(value)
        elif kind == "fixed":
            fixed.setdefault(key[0], {})[key[1]] = float(value)
        elif kind == "per_sequence":
            per_sequence = float(value)
        else:
            allreduce = float(value)
    if "fixed" not in terms:
        fixed = {chip: {e: 0.0 for c, e in pairs if c == chip} for chip in chips}
    calibration = _cal.Calibration(
        roofline_factor=factor, fixed_s=fixed, per_sequence_s=per_sequence, model=MEASURED_MODEL,
        fitted_on=tuple(workloads), batch_range=(int(min(r.concurrency for r in recs)),
                                                 int(max(r.concurrency for r in recs))),
        source="speclib.evidence.validation.fit_calibration on the InferenceMAX Llama-3.3-70B decoding runs (queueing runs "
               f"left out), terms {', '.join(terms)}",
    )
    return FittedCalibration(calibration, terms, allreduce, workloads)


def calibrated_tpot(batch, context, deployment=None, *, precision="fp8", kv_precision="fp8", workload=None):
    """Calibrated time per output token, in seconds, of ``deployment``'s model
    on its chip over its ``tp`` GPUs (a :class:`speclib.Deployment`; None:
    the default one): the roofline of :func:`predicted_tpot` scaled by the
    chip's factor, plus the fixed time per step of the deployment's engine on
    that chip and a time per sequence (the deployment's own
    :class:`~speclib.core.calibrated.Calibration` if its ``step_time`` is one,
    else the shipped calibration, :func:`speclib.core.calibrated.shipped_calibration`).
    With ``workload`` (a measured workload's name or an (input, output) pair
    of lengths) the prefill of arriving requests is added
    (:func:`prefill_seconds`); without, it is one decode step.

    A separate prediction, not a bound: the roofline stays the lower bound.
    Calibrated on Llama-3.3-70B on the measured chips; broadcasts."""
    if deployment is None:
        deployment = Deployment()
    if not isinstance(deployment, Deployment) or deployment.cost_model is not None:
        raise ValueError(f"deployment must be a speclib.Deployment of a model and a chip; got {deployment!r}")
    cal = _cal.calibration_of(deployment.step_time) or _cal.shipped_calibration()
    model, hw, tp = deployment.model, deployment.hardware, deployment.tp
    mu, _, d = cal.constants(hw, deployment.engine)
    a = cal.fixed(hw, deployment.engine, model.n_layers)
    B = checked_array("batch", batch, lo=0, lo_open=True)
    roof = predicted_tpot(model, hw, B, context, tp, precision, kv_precision=kv_precision)
    out = mu * roof + a + d * B
    if workload is not None:
        if isinstance(workload, str):
            if workload not in WORKLOADS:
                raise ValueError(f"workload must be one of {', '.join(map(repr, WORKLOADS))} or an (input, output) "
                                 f"pair of lengths; got {workload!r}")
            workload = WORKLOADS[workload]
        try:
            input_len, output_len = workload
        except (TypeError, ValueError):
            raise ValueError(f"workload must be a measured workload's name or an (input, output) pair; got "
                             f"{workload!r}") from None
        out = out + cal.prefill_factor * prefill_seconds(model, hw, B, input_len, output_len, tp, precision)
    return scalar_or_array(out)


class HeldOut:
    """Calibrations fitted on one workload and tested on the other, both ways:
    ``runs`` (the decoding runs), ``predicted_s`` (each run predicted by the
    fit on the *other* workload), ``error`` (relative: predicted / measured
    - 1) and the two ``fits`` by training workload."""

    def __init__(self, runs, predicted_s, fits, terms):
        self.runs = runs
        self.predicted_s = predicted_s
        self.error = predicted_s / runs.measured_s - 1.0
        self.fits = fits
        self.terms = terms

    def summary(self, by=("chip", "tp")) -> list:
        """Rows (group values..., n, median |error|, max |error|) over the
        groups of record fields ``by`` (all runs: ``by=()``)."""
        keys = [tuple(getattr(r, f) for f in by) for r in self.runs.records]
        order = {c: i for i, c in enumerate(CHIPS)}
        groups = sorted(set(keys), key=lambda k: tuple(order.get(v, v) if isinstance(v, str) else v for v in k))
        rows = []
        for g in groups:
            e = np.abs(self.error[[k == g for k in keys]])
            rows.append((*g, int(e.size), float(np.median(e)), float(np.max(e))))
        return rows

    def overall(self, test_workload=None) -> tuple:
        """(n, median |error|, max |error|) over all runs or one test workload."""
        mask = np.ones(len(self.runs), dtype=bool) if test_workload is None else (
            self.runs.column("workload") == test_workload)
        e = np.abs(self.error[mask])
        return int(e.size), float(np.median(e)), float(np.max(e))


def held_out(terms=DEFAULT_TERMS, comparison=None) -> HeldOut:
    """Fit on each workload, predict the other (both ways)."""
    runs = decoding_runs(comparison)
    predicted = np.empty(len(runs))
    fits = {}
    workloads = runs.column("workload")
    for train in WORKLOADS:
        fits[train] = fit = fit_calibration(runs, (train,), terms)
        test = np.flatnonzero(workloads != train)
        sub = Comparison([runs.records[i] for i in test], runs.predicted_s[test], runs.predicted_little_s[test],
                         runs.little_batch[test], runs.missing, runs.kv_precision)
        predicted[test] = fit.predict(sub)
    return HeldOut(runs, predicted, fits, tuple(terms))


#: Calibrations with fewer or more terms than the shipped one: (label, terms).
ABLATION = (
    ("roofline alone", ()),
    ("x chip factor", ("factor",)),
    ("+ fixed time per step", ("factor", "fixed")),
    ("+ time per sequence", ("factor", "fixed", "per_sequence")),
    ("+ prefill share (kept)", DEFAULT_TERMS),
    ("+ all-reduce time", DEFAULT_TERMS + ("allreduce",)),
)


def ablation(variants=ABLATION) -> list:
    """(label, number of fitted constants, :func:`held_out` errors) for a
    calibration with each variant's terms."""
    out = []
    for label, terms in variants:
        held = held_out(terms)
        cal = held.fits["1k1k"].calibration
        params = (len(cal.roofline_factor) * ("factor" in terms)
                  + sum(len(v) for v in cal.fixed_s.values()) * ("fixed" in terms)
                  + ("per_sequence" in terms) + ("allreduce" in terms))
        out.append((label, params, held))
    return out
