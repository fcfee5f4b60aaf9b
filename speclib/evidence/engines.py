"""The model held against published engine measurements of speculative
decoding: SGLang and vLLM running DeepSeek-V3/R1 with its multi-token
prediction head, and SGLang running Qwen3-235B-A22B with an EAGLE-3 drafter
(``data/engine-speculation/measurements.json``; each run cites its source).

Every run is priced four ways, all with the acceptance the source reports
(or, where it reports none, a stated assumption):

* ``roofline``: the paper's ledger, the drafter a constant fraction of a
  step; for a run with expert parallelism and data-parallel attention, the
  expert-parallel ledger of :mod:`speclib.core.parallel` (sequences per GPU, the
  all-to-all over the stated network, not overlapped);
* ``calibrated``: the same step with the calibrated step time
  (:mod:`speclib.core.calibrated`; SGLang is not in the calibration data, so
  its runs use vLLM's constants on the same chip);
* ``per_token``: calibrated, with the per-sequence time charged per verified
  position (a sensitivity: the decode data cannot tell the two apart);
* ``anchored``: the roofline plus a fixed time per step taken from the run's
  own baseline (its measured time per step without speculation, less the
  roofline), where the source gives one.

What each leaves unstated (chip, batch, acceptance, context) is in the run's
``assumed`` field; the chapter shows it beside every number.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from .._checks import checked_choice
from ..core import acceptance as _acc
from ..core import calibrated as _cal
from ..core import drafters as _draft
from ..core import parallel as _par
from ..core import speculation as _spec
from ..core import cost as _cost
from ..core.deployment import Deployment
from ..presets import resolve

#: How a run is priced (see the module notes).
PRICINGS = ("roofline", "calibrated", "per_token", "anchored")


@dataclass(frozen=True)
class EngineRun:
    """One published measurement (fields as in the data file)."""

    id: str
    label: str
    source: str
    url: str
    engine: str
    model: str
    hardware: str
    deployment: dict
    batches: tuple
    batch_reported: bool
    workload: dict
    acceptance: dict
    measured: dict
    c_draft: float
    assumed: str
    gamma: int = None
    gammas: tuple = None
    baseline_step_s: tuple = None

    @property
    def context(self) -> float:
        """Mean cached context over a request's decode steps, I + (O - 1) / 2."""
        return self.workload["input"] + (self.workload["output"] - 1) / 2

    @property
    def gpus(self) -> int:
        return int(self.deployment["gpus"])

    @property
    def expert_parallel(self) -> bool:
        return self.deployment["kind"] == "expert-parallel"

    @property
    def alpha(self) -> float:
        """The i.i.d. acceptance: reported or assumed, or solved from a
        reported accept length N(alpha, gamma) (committed tokens per verify)."""
        if "alpha" in self.acceptance:
            return float(self.acceptance["alpha"])
        return alpha_from_accept_length(self.acceptance["accept_length"], self.gamma)

    @property
    def acceptance_reported(self) -> bool:
        return "accept_length" in self.acceptance or "measured_rate" in self.acceptance


def _data() -> dict:
    path = resources.files("speclib").joinpath("data", "engine-speculation", "measurements.json")
    return json.loads(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def load_runs() -> tuple:
    """Every published run, as :class:`EngineRun` objects, in file order."""
    out = []
    for r in _data()["runs"]:
        out.append(EngineRun(
            id=r["id"], label=r["label"], source=r["source"], url=r["url"], engine=r["engine"], model=r["model"],
            hardware=r["hardware"], deployment=dict(r["deployment"]), batches=tuple(r["batches"]),
            batch_reported=bool(r["batch_reported"]), workload=dict(r["workload"]), acceptance=dict(r["acceptance"]),
            measured=dict(r["measured"]), c_draft=float(r["c_draft"]), assumed=r["assumed"], gamma=r.get("gamma"),
            gammas=tuple(r["gammas"]) if r.get("gammas") else None,
            baseline_step_s=tuple(r["baseline_step_s"]) if r.get("baseline_step_s") else None,
        ))
    return tuple(out)


def run(run_id: str) -> EngineRun:
    """The run called ``run_id``."""
    for r in load_runs():
        if r.id == run_id:
            return r
    raise ValueError(f"run_id must be one of {', '.join(r.id for r in load_runs())}; got {run_id!r}")


def alpha_from_accept_length(accept_length: float, gamma: int) -> float:
    """The i.i.d. alpha whose N(alpha, gamma) is ``accept_length``, by bisection."""
    lo, hi = 0.0, 1.0
    if not 1.0 <= accept_length <= gamma + 1:
        raise ValueError(f"accept_length must be in [1, {gamma + 1}] for {gamma} drafts; got {accept_length!r}")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        n = float(_acc.committed_numeric(np.asarray(mid), np.asarray(float(gamma))))
        lo, hi = (mid, hi) if n < accept_length else (lo, mid)
    return 0.5 * (lo + hi)


# --- pricing a run ----------------------------------------------------------------------
#: How the runs' DeepSeek-V4 attention is priced: as served (compressed as its
#: published config serves it, each verified position reading its own sparse
#: selection), since the engines measured ran it so; the calibrated step's
#: fit prices the runs it is fitted on the same way
#: (:class:`speclib.calibration.step_features.SpecSteps`).
ATTENTION = "served"


def _ledger(r: EngineRun):
    """The per-GPU ledger of the run's deployment. Its all-to-all is priced
    by bandwidth alone: the calibrated step fitted on these runs adds a fixed
    time per step of its own, which takes up the all-to-all's latency too.
    DeepSeek-V4's attention is priced as the paper prices it, as the step fit
    prices these runs (:data:`ATTENTION`)."""
    if r.expert_parallel:
        return _par.expert_parallel_cost_model(r.model, r.hardware, G=r.gpus,
                                               interconnect=r.deployment["interconnect"], latency=False,
                                               attention=ATTENTION)
    return _cost.cost_model(*resolve(r.model, r.hardware), False, ATTENTION)


def _seconds_per_layer_cost(r: EngineRun) -> float:
    """Seconds of one GPU's whole step per unit of the ledger's layer cost."""
    model, hw = resolve(r.model, r.hardware)
    return model.n_layers / (hw.memory_bandwidth * (1 if r.expert_parallel else r.gpus))


def _pricing(r: EngineRun, how: str, fixed_s: float = 0.0):
    drafter = _draft.ConstantDrafter(r.c_draft)
    if how == "roofline":
        return _spec.LedgerPricing(_ledger(r), drafter)
    if how in ("calibrated", "per_token"):
        per_token = how == "per_token"
        if r.expert_parallel:
            return _spec.LedgerPricing(_cal.CalibratedLedger(_ledger(r), per_token=per_token), drafter)
        model, hw = resolve(r.model, r.hardware)
        step = Deployment(model, hw, tp=r.gpus, attention=ATTENTION).parallel_step()
        engine = {"TensorRT-LLM": "TRT"}.get(r.engine, r.engine)
        target = _cal.CalibratedStepModel(step, hw, engine=engine if engine in _cal.ENGINES else _cal.DEFAULT_ENGINE,
                                          per_token=per_token)
        return _spec.StepPricing(target, drafter)
    return _spec.LedgerPricing(_AnchoredLedger(_ledger(r), _seconds_per_layer_cost(r), fixed_s), drafter)


class _AnchoredLedger:
    """The roofline in seconds plus a fixed time per step."""

    def __init__(self, ledger, seconds_per_cost, fixed_s):
        self.ledger, self.k, self.fixed = ledger, seconds_per_cost, fixed_s

    def decode(self, B, S):
        return self.k * self.ledger.decode(B, S) + self.fixed

    def verify(self, B, width, S):
        return self.k * self.ledger.verify(B, width, S) + self.fixed


def roofline_step_s(r: EngineRun, batch) -> np.ndarray:
    """Roofline seconds of one plain decode step (one GPU's share) at ``batch``."""
    B = np.asarray(batch, dtype=float)
    return _seconds_per_layer_cost(r) * _ledger(r).decode(B, np.asarray(r.context))


def anchored_fixed_s(r: EngineRun, batch, baseline_step_s) -> float:
    """The fixed time per step that makes the roofline equal the run's own
    measured plain step: baseline - roofline (never below 0)."""
    return max(float(baseline_step_s) - float(roofline_step_s(r, batch)), 0.0)


def speedup(r: EngineRun, how: str, batch=None, gamma=None, *, fixed_s: float = 0.0):
    """The run's predicted speedup over plain decoding, priced ``how`` (one
    of :data:`PRICINGS`; ``anchored`` takes ``fixed_s``) at ``batch`` (its
    batches) and ``gamma`` (its draft length); broadcasts."""
    how = checked_choice("how", how, PRICINGS)
    B = np.asarray(r.batches if batch is None else batch, dtype=float)
    g = np.asarray(r.gamma if gamma is None else gamma, dtype=float)
    priced = _pricing(r, how, fixed_s)
    n = _acc.committed_numeric(np.asarray(r.alpha), g)
    B, S = np.broadcast_arrays(B, np.asarray(r.context))
    out = priced.speedup(n, g, B, S)
    return float(out) if np.ndim(out) == 0 else out


def best_gamma(r: EngineRun, how: str, batch, gamma_max: int = 8, *, fixed_s: float = 0.0):
    """gamma* in 0..gamma_max and its speedup at ``batch`` under ``how``."""
    priced = _pricing(r, checked_choice("how", how, PRICINGS), fixed_s)
    return _spec.best_gamma(priced, _acc.Acceptance.of(r.alpha), np.asarray(float(batch)), np.asarray(r.context),
                            gamma_max)


# --- the comparison the chapter tabulates ------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One measured speedup and its predictions."""

    run: EngineRun
    at: str  # what the measurement is at ("batch 2 per GPU", "QPS 1", ...)
    batch: float
    measured: float
    roofline: float
    calibrated: float
    per_token: float
    anchored: float  # NaN where the source gives no baseline


def comparison() -> list:
    """Every measured speedup (the gamma sweep aside) with the four predictions."""
    points = []
    for r in load_runs():
        if "speedup" not in r.measured:
            continue
        at = r.measured.get("at")
        for i, value in enumerate(r.measured["speedup"]):
            if r.batch_reported:
                batch = float(r.batches[i] if len(r.batches) > 1 else r.batches[0])
                where = at[i] if at else f"batch {batch:g}" + (" per GPU" if r.expert_parallel else "")
            else:
                batch = float(np.nan)
                where = at[i] if at else ""
            B = np.asarray(r.batches if np.isnan(batch) else batch, dtype=float)
            anchored = np.nan
            if r.baseline_step_s is not None:  # over the batch range when the batch is not reported
                anchored = _summary([speedup(r, "anchored", b, fixed_s=anchored_fixed_s(r, b, r.baseline_step_s[i]))
                                     for b in np.atleast_1d(B)])
            points.append(Point(run=r, at=where, batch=batch, measured=float(value),
                                roofline=_summary(speedup(r, "roofline", B)),
                                calibrated=_summary(speedup(r, "calibrated", B)),
                                per_token=_summary(speedup(r, "per_token", B)), anchored=anchored))
    return points


def _summary(values):
    """A value, or (min, max) over a batch range that was not reported."""
    values = np.atleast_1d(values)
    return float(values[0]) if values.size == 1 else (float(values.min()), float(values.max()))


def gamma_sweep(run_id: str = "sglang-autospec") -> dict:
    """The measured throughput over draft lengths at each batch, relative to
    one draft token, against the models' ratios; and the best draft length
    each finds. ``{"batches", "gammas", "measured", "roofline", "calibrated",
    "per_token"}``: ratios are arrays (batch x gamma); ``best_*`` the best
    gamma per batch."""
    r = run(run_id)
    B = np.asarray(r.batches, dtype=float)[:, None]
    g = np.asarray(r.gammas, dtype=float)[None, :]
    measured = np.asarray(r.measured["throughput"], dtype=float)
    out = {"run": r, "batches": B[:, 0], "gammas": g[0], "measured": measured / measured[:, :1]}
    for how in ("roofline", "calibrated", "per_token"):
        s = speedup(r, how, B, g)
        out[how] = s / s[:, :1]
    for key in ("measured", "roofline", "calibrated", "per_token"):
        out[f"best_{key}"] = g[0][np.argmax(out[key], axis=1)].astype(int)
    return out


# --- sweeps: speed-up by batch and draft length (data/engine-speculation/sweeps.json) ---------

#: What a sweep point measures: a printed speed-up, output tokens/s (higher is
#: faster), the time per output token in ms or the end-to-end time per request
#: in ms (both lower is faster).
SWEEP_QUANTITIES = ("speedup", "throughput", "tpot_ms", "latency_ms")
#: What a sweep's ``batch`` counts.
SWEEP_BATCH_KINDS = ("batch", "concurrency", "max_batch")
#: Other measures a point may carry beside its run's ``quantity`` (in its
#: ``also`` object): each a pair with and without speculation, in the units
#: of :data:`SWEEP_QUANTITIES` (``ttft_ms``: median or mean time to first
#: token, ms, as the source says in the run's ``metric``).
SWEEP_ALSO = ("throughput", "tpot_ms", "ttft_ms", "latency_ms")
_SWEEP_FIELDS = ("id", "label", "source", "engine", "model", "hardware", "parallelism", "drafter", "acceptance",
                 "workload", "batch_kind", "quantity", "metric", "points", "assumed")
_SOURCE_FIELDS = ("url", "title", "date", "where")


@dataclass(frozen=True)
class SweepRun:
    """One run of ``sweeps.json``: a deployment and drafter measured at one
    or more (batch, draft length) points. ``batch``, ``gamma``, ``spec``,
    ``base`` and ``printed`` are arrays over the points (NaN where absent)."""

    id: str
    label: str
    source: dict
    engine: dict
    model: dict
    hardware: dict
    parallelism: dict
    drafter: dict
    acceptance: dict
    workload: dict
    batch_kind: str
    quantity: str
    metric: str
    assumed: str
    batch: np.ndarray
    gamma: np.ndarray
    spec: np.ndarray
    base: np.ndarray
    printed: np.ndarray
    #: committed tokens per verify at each point, where the source prints it per point (NaN elsewhere)
    accept_length: np.ndarray = None
    #: {quantity: (spec, base)} arrays over the points of the other measures the source prints (NaN where absent)
    also: dict = None

    @property
    def passes(self):
        """Sequential drafter passes per speculative step as the record states
        them (``drafter.passes``), or None where it does not."""
        return self.drafter.get("passes")

    @property
    def speedup(self) -> np.ndarray:
        """Speed-up over no speculation per point: the printed one for a
        ``speedup`` run, else from the pair (NaN where the source gives no
        run without speculation)."""
        if self.quantity == "speedup":
            return self.spec
        return self.spec / self.base if self.quantity == "throughput" else self.base / self.spec


def _sweeps_path():
    return resources.files("speclib").joinpath("data", "engine-speculation", "sweeps.json")


def _number(where: str, key: str, value, lo: float = 0.0, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= lo \
            or (integer and int(value) != value):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{where}: {key} must be {kind} > {lo:g}; got {value!r}")
    return float(value)


def _sweep(r: dict, where: str) -> SweepRun:
    missing = [k for k in _SWEEP_FIELDS if k not in r]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")
    where = f"{where} ({r['id']})"
    for key in ("source", "engine", "model", "hardware", "parallelism", "drafter", "acceptance", "workload"):
        if not isinstance(r[key], dict):
            raise ValueError(f"{where}: {key} must be an object")
    gone = [k for k in _SOURCE_FIELDS if k not in r["source"]]
    if gone:
        raise ValueError(f"{where}: missing field(s) source.{', source.'.join(gone)}")
    if not str(r["source"]["url"]).startswith("https://") or not r["source"]["title"]:
        raise ValueError(f"{where}: source.url must be an https:// address and source.title non-empty")
    for key in ("name", "hf_config"):
        if not r["model"].get(key):
            raise ValueError(f"{where}: missing field model.{key}")
    if not r["hardware"].get("chip") or "count" not in r["hardware"]:
        raise ValueError(f"{where}: hardware needs chip and count")
    passes = r["drafter"].get("passes")
    if passes is not None and (isinstance(passes, bool) or not isinstance(passes, int) or passes < 0):
        raise ValueError(f"{where}: drafter.passes must be an integer >= 0 (sequential drafter passes per step); "
                         f"got {passes!r}")
    checked_choice(f"{where}: quantity", r["quantity"], SWEEP_QUANTITIES)
    checked_choice(f"{where}: batch_kind", r["batch_kind"], SWEEP_BATCH_KINDS)
    if not isinstance(r["points"], list) or not r["points"]:
        raise ValueError(f"{where}: points must be a non-empty list")
    value_key = "speedup" if r["quantity"] == "speedup" else "spec"
    cols = {k: [] for k in ("batch", "gamma", "spec", "base", "printed", "accept_length")}
    also = {}
    for i, p in enumerate(r["points"]):
        at = f"{where}: points[{i}]"
        for key in ("batch", "gamma", value_key):
            if key not in p:
                raise ValueError(f"{at}: missing field {key}")
        if value_key == "speedup" and ("base" in p or "spec" in p):
            raise ValueError(f"{at}: a speedup run holds 'speedup' only (a pair belongs to a throughput or tpot_ms run)")
        cols["batch"].append(_number(at, "batch", p["batch"], integer=True))
        cols["gamma"].append(_number(at, "gamma", p["gamma"], integer=True))
        cols["spec"].append(_number(at, value_key, p[value_key]))
        cols["base"].append(_number(at, "base", p["base"]) if "base" in p else np.nan)
        cols["printed"].append(_number(at, "printed_speedup", p["printed_speedup"]) if "printed_speedup" in p
                               else np.nan)
        if r["quantity"] == "latency_ms" and "base" not in p:
            # a request's latency alone says nothing of speculation's gain
            raise ValueError(f"{at}: a latency_ms run needs base (the latency without speculation) at every point")
        cols["accept_length"].append(_accept_length(at, p["accept_length"]) if "accept_length" in p else np.nan)
        for key, pair in _also(p, at, r["quantity"]).items():
            also.setdefault(key, {"spec": [np.nan] * i, "base": [np.nan] * i})
            for side in ("spec", "base"):
                also[key][side].append(pair.get(side, np.nan))
        for key in also:
            for side in ("spec", "base"):
                if len(also[key][side]) < i + 1:
                    also[key][side].append(np.nan)
    return SweepRun(
        id=r["id"], label=r["label"], source=dict(r["source"]), engine=dict(r["engine"]), model=dict(r["model"]),
        hardware=dict(r["hardware"]), parallelism=dict(r["parallelism"]), drafter=dict(r["drafter"]),
        acceptance=dict(r["acceptance"]), workload=dict(r["workload"]), batch_kind=r["batch_kind"],
        quantity=r["quantity"], metric=r["metric"], assumed=r["assumed"],
        **{k: np.asarray(v, dtype=float) for k, v in cols.items()},
        also={k: (np.asarray(v["spec"], dtype=float), np.asarray(v["base"], dtype=float)) for k, v in also.items()},
    )


def _accept_length(at: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 1:
        raise ValueError(f"{at}: accept_length must be a number >= 1 (committed tokens per verify); got {value!r}")
    return float(value)


def _also(p: dict, at: str, quantity: str) -> dict:
    """A point's ``also`` object, checked: {measure: {"spec": x, "base": y}}."""
    also = p.get("also", {})
    if not isinstance(also, dict):
        raise ValueError(f"{at}: also must be an object of measures ({', '.join(SWEEP_ALSO)})")
    out = {}
    for key, pair in also.items():
        if key not in SWEEP_ALSO or key == quantity:
            allowed = ", ".join(k for k in SWEEP_ALSO if k != quantity)
            raise ValueError(f"{at}: also.{key} is not a measure a point may add; allowed: {allowed}")
        if not isinstance(pair, dict) or "spec" not in pair or not set(pair) <= {"spec", "base"}:
            raise ValueError(f"{at}: also.{key} must be an object with spec and, optionally, base")
        out[key] = {side: _number(at, f"also.{key}.{side}", v) for side, v in pair.items()}
    return out


def read_sweeps(path) -> tuple:
    """Every run of a sweeps file (``sweeps.json``'s schema), validated: a
    missing or bad field is a ValueError naming the file and the field."""
    name = getattr(path, "name", str(path))
    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise ValueError(f"{name}: missing field runs (a list)")
    out = [_sweep(r, f"{name}: runs[{i}]") for i, r in enumerate(doc["runs"])]
    ids = [r.id for r in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{name}: duplicate run ids")
    return tuple(out)


@lru_cache(maxsize=1)
def load_sweeps() -> tuple:
    """The shipped sweeps (``data/engine-speculation/sweeps.json``), in file order."""
    return read_sweeps(_sweeps_path())


def sweep(run_id: str) -> SweepRun:
    """The sweep called ``run_id``."""
    for r in load_sweeps():
        if r.id == run_id:
            return r
    raise ValueError(f"run_id must be one of {', '.join(r.id for r in load_sweeps())}; got {run_id!r}")
