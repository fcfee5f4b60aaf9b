"""The measured runs of plain decoding a fitted step is held against, of two
model classes, each run as the deployment it was served on.

* **Llama-3.3-70B** (dense, grouped-query attention) from InferenceMAX
  (SemiAnalysis), as republished with F. Finn's "inference arithmetic" post
  (``data/decode-benchmarks/1k1k-70b``, ``1k8k-70b``; read by
  :func:`speclib.evidence.validation.load_measurements`): vLLM and
  TensorRT-LLM on six chips, 1 to 8 GPUs in tensor parallel, fp8 and fp4
  weights, an fp8 KV cache.
* **DeepSeek-R1** (671B mixture of experts, MLA) from InferenceX
  (SemiAnalysis), the web app's fixtures carried into
  ``data/decode-benchmarks/deepseek-r1-inferencex.json`` with each run's
  address: SGLang and TensorRT-LLM on one node of H200, B200, B300, MI300X,
  MI325X or MI355X, with the engine's layout (tensor, expert and
  data-parallel attention), fp8 and fp4 weights, workloads 1k/1k, 1k/8k and
  8k/1k. What the runs' launch scripts say and the data do not (the KV
  cache's precision, the spread of request lengths, MTP's draft length) is
  read from the scripts and stated in the file's ``assumptions``.

One rule drops runs, stated once
(:data:`speclib.evidence.validation.QUEUEING_FRACTION`): a run whose decode
batch by Little's law is below that fraction of its concurrency was
queueing, so its concurrency is not the batch it decoded. The same rule
drops the dates whose runs look broken (a time to first token of minutes),
without a rule of their own.
"""
from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from importlib import resources

import numpy as np

from ..core.deployment import Deployment
from ..formulas import numpy_functions as nf
from ..presets import hardware as hardware_preset
from ..presets import resolve
from speclib.evidence import validation as _val

#: The rule that drops a queueing run (:data:`speclib.evidence.validation.QUEUEING_FRACTION`).
QUEUEING_FRACTION = _val.QUEUEING_FRACTION
#: The sources, as the hold-out by source names them.
SOURCES = {"llama": "InferenceMAX", "r1": "InferenceX"}
#: Where the DeepSeek-R1 runs are, inside the package.
R1_FILE = ("data", "decode-benchmarks", "deepseek-r1-inferencex.json")
#: The model the InferenceX runs served (its preset: DeepSeek-V3's architecture).
R1_MODEL = "DeepSeek-R1"
#: Mean request lengths over nominal: InferenceX draws each request's input
#: and output lengths uniformly from [0.8 L, L] (RANDOM_RANGE_RATIO 0.8).
R1_LENGTH_SCALE = 0.9


def layout_label(tp: int, ep: int, dp_attention: bool) -> str:
    """How a run's layout is named: "TP8", "TP8 EP8", "TP8 EP8 DP-attention" (the runs' ids are built on it)."""
    return f"TP{tp}" + (f" EP{ep}" if ep > 1 else "") + (" DP-attention" if dp_attention else "")


@lru_cache(maxsize=None)
def _family(model: str) -> str:
    """The family of a preset model (cached: the step fit asks for every run's, in every fit)."""
    return resolve(model, None)[0].family


@dataclasses.dataclass(frozen=True)
class DecodeRun:
    """One measured run of plain decoding: a deployment at one concurrency.
    ``input_len`` and ``output_len`` are the mean request lengths;
    ``sweep`` names the configuration it belongs to (the same deployment and
    workload at several concurrencies)."""

    model: str
    chip: str
    engine: str
    weights: str
    kv_cache: str
    tp: int
    ep: int
    dp_attention: bool
    workload: str
    input_len: float
    output_len: float
    concurrency: int
    tpot_s: float
    ttft_s: float
    throughput_per_gpu: float
    source: str
    url: str = ""
    date: str = ""
    engine_version: str = ""

    @property
    def family(self) -> str:
        return _family(self.model)

    @property
    def context(self) -> float:
        """The mean context over a request's decode steps, I + (O - 1) / 2."""
        return float(nf.mean_decode_context(self.input_len, self.output_len))

    @property
    def little_batch(self) -> float:
        """Requests decoding at once by Little's law, from the run's own
        throughput and TPOT (:data:`speclib.formulas.workload.littles_law_batch_expr`)."""
        return float(nf.littles_law_batch(self.throughput_per_gpu, self.tp, self.input_len, self.output_len,
                                          self.tpot_s))

    @property
    def held(self) -> int:
        """The sequences the deployment holds at the run's mean context
        (:meth:`speclib.Deployment.max_batch`; 0: by its count, none)."""
        cached = self.__dict__.get("_held")
        if cached is None:
            cached = int(self._served().max_batch(self.context))
            object.__setattr__(self, "_held", cached)
        return cached

    @property
    def running(self) -> int:
        """The sequences decoding at once: the concurrency, or what memory
        holds where that is less (the rest wait in the queue, and their wait
        is time to first token, not TPOT). A run memory's count says cannot
        be held at all ran nonetheless: its concurrency, as measured."""
        return min(self.concurrency, self.held) if self.held >= 1 else self.concurrency

    @property
    def queueing(self) -> bool:
        return self.little_batch < QUEUEING_FRACTION * self.concurrency

    @property
    def layout(self) -> str:
        return layout_label(self.tp, self.ep, self.dp_attention)

    @property
    def sweep(self) -> str:
        return (f"{self.model} {self.workload} {self.chip} {self.engine} {self.weights} {self.layout}"
                + (f" {self.date}" if self.date else ""))

    def deployment(self, step_time="roofline") -> Deployment:
        """The deployment the run served, priced with ``step_time``: it
        decodes the sequences memory holds of the run's concurrency
        (:meth:`speclib.Deployment.running`), and a run memory's count says
        cannot be held at all, which ran nonetheless, without a memory check
        (``reserve=None``), so that every price of the run is at
        :attr:`running`."""
        served = self._served(step_time)
        return served if self.held >= 1 else served.replace(reserve=None)

    def _served(self, step_time="roofline") -> Deployment:
        return Deployment(self.model, self.chip, tp=self.tp, ep=self.ep, dp_attention=self.dp_attention,
                          engine=self.engine, weights=self.weights, kv_cache=self.kv_cache, step_time=step_time,
                          attention="served")


def _llama_runs() -> list:
    model = _val.MEASURED_MODEL
    out = []
    for r in _val.load_measurements():
        if _val._preset_or_none(r.chip) is None:
            continue
        out.append(DecodeRun(model=model, chip=r.chip, engine=r.framework, weights=r.precision,
                             kv_cache=_val.KV_PRECISION, tp=r.tp, ep=1, dp_attention=False, workload=r.workload,
                             input_len=float(r.input_len), output_len=float(r.output_len),
                             concurrency=r.concurrency, tpot_s=r.tpot_ms * 1e-3, ttft_s=r.ttft_ms * 1e-3,
                             throughput_per_gpu=r.throughput_per_gpu, source=SOURCES["llama"],
                             url=_val.MEASURED_URL))
    return out


def read_r1() -> dict:
    """The DeepSeek-R1 file as it is: its header and its rows as dicts."""
    data = json.loads(resources.files("speclib").joinpath(*R1_FILE).read_text(encoding="utf-8"))
    fields = data["fields"]
    return {**{k: v for k, v in data.items() if k not in ("fields", "rows")},
            "rows": [dict(zip(fields, row)) for row in data["rows"]]}


def r1_kv_cache(chip: str, engine: str) -> str:
    """The KV cache's precision a DeepSeek-R1 run's launch script sets (see
    the file's ``assumptions``): bf16 for SGLang on H200, fp8 elsewhere."""
    return "bf16" if (engine, hardware_preset(chip).name) == ("SGLang", "H200") else "fp8"


def r1_workload(isl: int, osl: int) -> str:
    return f"{isl // 1024}k{osl // 1024}k"


def _r1_runs(spec: str = "none") -> list:
    data = read_r1()
    prefix = data["source"]["run_url_prefix"]
    out = []
    for r in data["rows"]:
        if r["spec"] != spec:
            continue
        out.append(DecodeRun(model=R1_MODEL, chip=hardware_preset(r["chip"]).name, engine=r["engine"],
                             weights=r["precision"], kv_cache=r1_kv_cache(r["chip"], r["engine"]), tp=r["tp"],
                             ep=r["ep"], dp_attention=r["dp_attention"], workload=r1_workload(r["isl"], r["osl"]),
                             input_len=R1_LENGTH_SCALE * r["isl"], output_len=R1_LENGTH_SCALE * r["osl"],
                             concurrency=r["conc"], tpot_s=r["tpot_ms"] * 1e-3, ttft_s=r["ttft_ms"] * 1e-3,
                             throughput_per_gpu=r["tput_per_gpu"], source=SOURCES["r1"], url=prefix + r["run"],
                             date=r["date"], engine_version=r["image"] or ""))
    return out


def _priceable(run: DecodeRun) -> bool:
    """Whether the run's deployment can be priced (its chip's interconnect
    has the latencies its layout's collectives need)."""
    try:
        run.deployment().parallel_step()
    except ValueError:
        return False
    return True


@lru_cache(maxsize=None)
def all_runs(model_class: str = "all") -> tuple:
    """Every measured run of plain decoding (``model_class``: ``"llama"``,
    ``"r1"`` or ``"all"``), queueing ones included."""
    parts = {"llama": _llama_runs, "r1": _r1_runs}
    keys = parts if model_class == "all" else (model_class,)
    if any(k not in parts for k in keys):
        raise ValueError(f"model_class must be one of 'llama', 'r1', 'all'; got {model_class!r}")
    return tuple(r for k in keys for r in parts[k]())


@lru_cache(maxsize=None)
def decode_runs(model_class: str = "all") -> tuple:
    """The runs a fit uses: not queueing (:data:`QUEUEING_FRACTION`), on a
    deployment speclib can price."""
    return tuple(r for r in all_runs(model_class) if not r.queueing and _priceable(r))


def mtp_runs() -> tuple:
    """DeepSeek-R1 served with MTP (every such row of the file), as runs of
    decoding: each one's TPOT is a speculative step's time over the tokens it
    commits, so it pairs with a run without MTP (:mod:`speclib.evidence.spec_runs`)."""
    return tuple(_r1_runs("mtp"))


def target_subset(runs) -> np.ndarray:
    """Which of ``runs`` are the DeepSeek-R1 targets' set: fp8 weights, eight
    GPUs in plain tensor parallelism, SGLang or TensorRT-LLM, on H200, B200,
    MI300X, MI325X or MI355X."""
    chips = {"H200", "B200", "MI300X", "MI325X", "MI355X"}
    return np.array([r.model == R1_MODEL and r.weights == "fp8" and r.tp == 8 and r.ep == 1 and not r.dp_attention
                     and r.chip in chips for r in runs], dtype=bool)


def calibrated_tpot(runs) -> np.ndarray:
    """The shipped calibration's TPOT (s) for each decode run of ``runs``,
    through the public function (:func:`speclib.core.decode.tpot`) with the
    run's deployment and workload."""
    from ..core.decode import tpot

    return np.array([float(tpot(r.concurrency, r.context, workload=(r.input_len, r.output_len),
                                deployment=r.deployment("calibrated"))) for r in runs])
