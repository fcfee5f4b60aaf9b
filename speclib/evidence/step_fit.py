"""The engine step fitted on measured decoding *and* measured speculative
runs, and held out run by run.

The calibrated step of :mod:`speclib.core.calibrated` prices one GPU's share
of a step of B sequences, T positions each, at context S as

    t = mu_chip * roofline / tp + kappa * flops / tp + a_(chip, engine)
        + d * B + e * B * (T - 1)

and a speculative step adds, for each sequential pass of the drafter, its
priced work and ``a_d`` (:data:`speclib.formulas.step.engine_step_expr`). The decode benchmarks
(T = 1) identify mu, a, d and kappa (kappa through tensor parallelism: the
FLOPs divide by tp, d does not); the speculative runs identify e and a_d
and pin kappa where the verify width grows. Every term is fitted by
non-negative least squares on relative error:

* a decode run: predicted TPOT / measured - 1 (plus the prefill of arriving
  requests, its FLOPs at peak times ``prefill``, a fitted efficiency);
* a speculative run with a speed-up: N t_plain / t_spec / measured - 1,
  linear in the constants once the denominator is held at the last
  iterate (iteratively reweighted);
* a sweep without a run without speculation: each draft length's
  throughput relative to the smallest at the same batch.

Where a run's source states its prompt and output lengths and the prefill
runs on the decoding GPUs, its steps carry the arriving requests' prefill
as the decode runs' do (a speculative step N times a plain step's, as it
commits N tokens per sequence), since the measured speed-up includes it
(:data:`speclib.formulas.workload.served_speedup_expr`).

Each speculative run weighs as much as any other however many points it
has, and the speculative runs together weigh as much as the decode runs.

:func:`leave_one_run_out` predicts every speculative run from constants
fitted without it, and every decode sweep from constants fitted without
it; :func:`bootstrap` resamples the runs for the constants'
intervals; :func:`ablation` refits without each candidate term.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._checks import checked_choice
from ..core import acceptance as _acc
from ..core import calibrated as _cal
from ..core import step as _step
from ..presets import hardware as hardware_preset
from ..presets import resolve
from . import engines as _eng
from . import validation as _val

#: The terms of the fitted step (see the module notes): ``factor`` (mu per
#: chip), ``fixed`` (a per chip and engine), ``per_sequence`` (d),
#: ``compute`` (kappa, FLOPs at peak not hidden under the memory stream),
#: ``per_position`` (e, each verified position past the first),
#: ``per_draft_pass`` (a_d), ``prefill`` (the prefill's FLOPs at peak, scaled).
TERMS = ("factor", "fixed", "per_sequence", "compute", "per_position", "per_draft_pass", "prefill")
#: Terms that may be dropped to test whether the data need them.
CANDIDATES = ("compute", "per_position", "per_draft_pass", "prefill", "per_sequence")
#: The terms of the shipped fit: those whose removal worsens the held-out
#: errors (:func:`ablation`). ``compute`` fits to 0 and ``per_draft_pass``
#: makes the held-out speed-ups worse (see the ablation the engines chapter
#: prints), so both were tried and left out; ``speclib fit`` still fits a_d to a
#: reader's own runs, where their draft lengths identify it.
DEFAULT_TERMS = ("factor", "fixed", "per_sequence", "per_position", "prefill")
#: Context assumed where a source gives none (tokens), and the drafter's
#: share of a plain step where the data give none (one layer and the head).
DEFAULT_CONTEXT = 1500.0
DEFAULT_DRAFT_SHARE = 0.05
#: How a drafter pass's work is priced: "roofline" (its own roofline: one
#: layer's worth of the target's active weights and the output head; the
#: held-out choice) or "share" (the data's c_draft, or DEFAULT_DRAFT_SHARE,
#: of a plain step).
DRAFTER_PRICING = "roofline"
#: Whether the time per drafter pass is one constant or one per engine.
DRAFT_PASS_BY_ENGINE = False
#: What the time per extra verified position (e) is fitted per: "vendor" (one
#: for each chip vendor's software stack, CUDA or ROCm: the held-out choice),
#: "all" (one constant) or "chip".
PER_POSITION_BY = "vendor"
PER_POSITION_GROUPS = ("vendor", "all", "chip")
#: Acceptance assumed where a source reports none (labelled in each run).
ASSUMED_ALPHA = 0.7
#: Engines named in the speculative data, as the calibration names them;
#: SGLang is not in the decode data and takes vLLM's fixed time on the chip.
ENGINE_KEYS = {"vLLM": "vLLM", "SGLang": "vLLM", "TensorRT-LLM": "TRT", "TRT": "TRT"}
#: Drafters with no model to run (no passes).
NO_PASS_DRAFTERS = ("ngram",)
#: Drafters that draft every position in one pass.
ONE_PASS_DRAFTERS = ("p-eagle", "dflash")


@dataclass(frozen=True)
class SpecRun:
    """A measured speculative run, as the fit uses it. ``points``: (batch,
    gamma, value) with ``value`` a speed-up (``quantity="speedup"``) or a
    throughput (``"throughput"``: only ratios between draft lengths at one
    batch are used); ``accept``: committed tokens per verify by gamma where
    the source prints them, else from ``alpha``."""

    id: str
    label: str
    url: str
    engine: str
    model: str
    chip: str
    gpus: int
    expert_parallel: bool
    context: float
    alpha: float
    accept: dict
    draft_share: float
    drafter: str
    verify_tokens: int
    quantity: str
    points: tuple
    assumed: str
    acceptance_reported: bool = True
    #: (prompt, output) tokens per request where the source states both and
    #: the prefill runs on the decoding GPUs (not disaggregated): the
    #: measured throughput or latency then includes the arriving requests'
    #: prefill, which speculation does not speed up
    prefill_lengths: tuple = ()

    def committed(self, gamma) -> float:
        if int(gamma) in self.accept:
            return float(self.accept[int(gamma)])
        return float(_acc.committed_numeric(np.asarray(self.alpha), np.asarray(float(gamma))))

    def width(self, gamma) -> float:
        """Positions verified per sequence."""
        return float(self.verify_tokens) if self.verify_tokens else float(gamma) + 1.0

    def passes(self, gamma) -> float:
        kind = self.drafter.lower()
        if kind.startswith(NO_PASS_DRAFTERS):
            return 0.0
        if kind.startswith(ONE_PASS_DRAFTERS):
            return 1.0
        return float(gamma)

    @property
    def batches(self) -> tuple:
        return tuple(sorted({int(b) for b, _, _ in self.points}))


def _from_measurements(r: _eng.EngineRun):
    if not r.batch_reported:
        return None  # the batch is not known: shown, not fitted
    if "speedup" in r.measured:
        values = r.measured["speedup"]
        batches = r.batches if len(r.batches) == len(values) else r.batches * len(values)
        points = tuple((int(b), int(r.gamma), float(v)) for b, v in zip(batches, values))
        quantity = "speedup"
    else:
        thr = r.measured["throughput"]
        points = tuple((int(b), int(g), float(thr[i][j])) for i, b in enumerate(r.batches)
                       for j, g in enumerate(r.gammas))
        quantity = "throughput"
    accept = {}
    if "accept_length" in r.acceptance:
        accept = {int(r.gamma): float(r.acceptance["accept_length"])}
    drafter = "mtp" if "MTP" in r.label else "eagle"
    w = r.workload
    # the expert-parallel runs (LMSYS) prefill on other nodes (disaggregated, as their source states)
    lengths = ((float(w["input"]), float(w["output"])) if w.get("input") and w.get("output")
               and not r.expert_parallel and "disaggregat" not in str(r.deployment.get("what", "")) else ())
    return SpecRun(id=r.id, label=r.label, url=r.url, engine=r.engine, model=r.model, chip=r.hardware, gpus=r.gpus,
                   expert_parallel=r.expert_parallel, context=r.context, alpha=r.alpha, accept=accept,
                   draft_share=r.c_draft, drafter=drafter, verify_tokens=0, quantity=quantity, points=points,
                   assumed=r.assumed, acceptance_reported=r.acceptance_reported, prefill_lengths=lengths)


def _from_sweep(s: _eng.SweepRun):
    preset = s.model.get("preset")
    if not preset:
        return None  # no preset to price it with
    acc = s.acceptance
    accept, alpha = {}, ASSUMED_ALPHA
    if isinstance(acc.get("accept_length"), dict):
        accept = {int(k): float(v) for k, v in acc["accept_length"].items()}
    if "alpha" in acc:
        alpha = float(acc["alpha"])
    verify = int(s.drafter.get("verify_tokens") or 0)
    gammas = {int(g) for g in s.gamma}
    if isinstance(acc.get("accept_length"), (int, float)):
        if verify or len(gammas) > 1:  # a tree or several depths: the length is per verify of this run
            accept = {g: float(acc["accept_length"]) for g in gammas}
        else:
            alpha = _eng.alpha_from_accept_length(float(acc["accept_length"]), next(iter(gammas)))
    w = s.workload
    context = float(w["context"]) if w.get("context") else (
        w["input"] + (w["output"] - 1) / 2 if w.get("input") and w.get("output") else DEFAULT_CONTEXT)
    if s.quantity == "speedup":
        points = tuple((int(b), int(g), float(v)) for b, g, v in zip(s.batch, s.gamma, s.spec))
        quantity = "speedup"
    elif np.all(np.isfinite(s.base)):
        points = tuple((int(b), int(g), float(v)) for b, g, v in zip(s.batch, s.gamma, s.speedup))
        quantity = "speedup"
    else:
        points = tuple((int(b), int(g), float(v)) for b, g, v in zip(s.batch, s.gamma, s.spec))
        quantity = "throughput"
    kind = str(s.drafter.get("type", ""))
    share = 0.0 if kind.lower().startswith(NO_PASS_DRAFTERS) else DEFAULT_DRAFT_SHARE
    return SpecRun(id=s.id, label=s.label, url=s.source["url"], engine=s.engine["name"], model=preset,
                   chip=s.hardware["chip"], gpus=int(s.parallelism.get("tp") or s.hardware["count"]),
                   expert_parallel=False, context=context, alpha=alpha, accept=accept, draft_share=share, drafter=kind, verify_tokens=verify, quantity=quantity,
                   points=points, assumed=s.assumed,
                   acceptance_reported=bool(accept) or "accept_length" in acc or "measured_rate" in acc
                   or ("alpha" in acc and not acc.get("assumed")),
                   prefill_lengths=(float(w["input"]), float(w["output"])) if w.get("input") and w.get("output")
                   else ())


@lru_cache(maxsize=1)
def spec_runs() -> tuple:
    """Every measured speculative run the fit can price (known batch, a
    model preset), from both data files."""
    out = [_from_measurements(r) for r in _eng.load_runs()] + [_from_sweep(s) for s in _eng.load_sweeps()]
    return tuple(r for r in out if r is not None)


def spec_run(run_id: str) -> SpecRun:
    for r in spec_runs():
        if r.id == run_id:
            return r
    raise ValueError(f"run_id must be one of {', '.join(r.id for r in spec_runs())}; got {run_id!r}")


# --- features: each step's time as constants x features -----------------------------------


def _chip(name: str) -> str:
    """The calibration's name for a chip (its name before the first '-')."""
    return hardware_preset(name).name.split("-")[0]


def _per_position_key(vendor: str, chip: str):
    """The fit's name of e for a chip (see :data:`PER_POSITION_BY`)."""
    return {"vendor": ("per_position", vendor), "chip": ("per_position", chip), "all": "per_position"}[PER_POSITION_BY]


class _Steps:
    """Feature vectors of one speculative run's steps."""

    def __init__(self, run: SpecRun):
        self.run = run
        model, hw = resolve(run.model, run.chip)
        self.chip = _chip(run.chip)
        self.engine = ENGINE_KEYS.get(run.engine, "vLLM")
        self.step_model = _step.step_model(model, hw)
        if run.expert_parallel:
            self.ledger = _eng._ledger(_eng.run(run.id))
            self.seconds = model.n_layers / hw.memory_bandwidth
        self.tp = 1 if run.expert_parallel else run.gpus
        self.vendor = hw.vendor

    def step(self, B, T) -> dict:
        S = np.float64(self.run.context)
        B, T = np.float64(B), np.float64(T)
        if self.run.expert_parallel:
            roof = self.seconds * (self.ledger.decode(B, S) if T == 1 else self.ledger.verify(B, T, S))
        else:
            roof = self.step_model.time(B, T, S) / self.tp
        return {("factor", self.chip): float(roof), "compute": float(self.step_model.flop_time(B, T, S) / self.tp),
                ("fixed", self.chip, self.engine): 1.0, "per_sequence": float(B),
                _per_position_key(self.vendor, self.chip): float(B * (T - 1))}

    def prefill(self, B) -> float:
        """Seconds of prompt work a plain step of B sequences carries in the
        run's closed loop (its FLOPs at peak, as the decode runs charge it;
        :data:`speclib.formulas.workload.prefill_share_seconds_expr`); 0
        where the source does not state both lengths or prefills elsewhere."""
        if not self.run.prefill_lengths:
            return 0.0
        I, O = self.run.prefill_lengths
        model, hw = resolve(self.run.model, self.run.chip)
        return float(_val.prefill_seconds(model, hw, B, I, O, self.tp, self.step_model.architecture.dense_precision))

    def plain(self, B) -> dict:
        """A plain decode step, with the prefill it carries."""
        out = self.step(B, 1)
        p = self.prefill(np.float64(B))
        if p:
            out["prefill"] = p
        return out

    def draft_pass(self, B, positions=1.0) -> float:
        """Roofline seconds of one drafter pass (this GPU's share): one
        decoder layer's worth of the target's active weights plus the output
        head, in bf16, over B sequences of ``positions`` positions."""
        hw = self.step_model.hardware
        model, _ = resolve(self.run.model, self.run.chip)
        weights = model.active_params() / model.n_layers + model.vocab_size * model.hidden_size
        flops = 2.0 * weights * B * positions
        return max(flops / hw.peak_flops("bf16"), 2.0 * weights / hw.memory_bandwidth) / self.tp

    def spec(self, B, gamma) -> dict:
        run = self.run
        out = self.step(B, run.width(gamma))
        passes = run.passes(gamma)
        if DRAFTER_PRICING == "share":
            plain = self.step(B, 1)
            for k, v in plain.items():  # the drafter's priced work: a share of a plain step per pass
                out[k] = out.get(k, 0.0) + run.draft_share * passes * v
        elif passes:
            positions = float(gamma) / passes
            out[("factor", self.chip)] += passes * self.draft_pass(B, positions)
        out[("per_draft_pass", self.run.engine) if DRAFT_PASS_BY_ENGINE else "per_draft_pass"] = passes
        p = self.prefill(np.float64(B))
        if p:  # a step commits N tokens per sequence, so N times a plain step's arrivals
            out["prefill"] = run.committed(gamma) * p
        return out


# --- the fit ------------------------------------------------------------------------------


def _decode_rows():
    """(features, measured TPOT s, workload, concurrency) of every decoding run."""
    runs = _val.decoding_runs()
    model, _ = resolve(_val.MEASURED_MODEL, None)
    feats, y, workload, conc = [], [], [], []
    for i, r in enumerate(runs.records):
        hw = hardware_preset(r.chip)
        sm = _step.step_model(model, hw)
        B, S = float(r.concurrency), float(_val.mean_decode_context(r.input_len, r.output_len))
        feats.append({("factor", r.chip): float(runs.predicted_s[i]),
                      "compute": float(sm.flop_time(np.float64(B), np.float64(1), np.float64(S),
                                                    precision=r.precision) / r.tp),
                      ("fixed", r.chip, r.framework): 1.0, "per_sequence": B,
                      "prefill": float(_val.prefill_seconds(model, hw, B, r.input_len, r.output_len, r.tp,
                                                            r.precision))})
        y.append(float(runs.measured_s[i]))
        workload.append(r.workload)
        conc.append(int(r.concurrency))
    return feats, np.array(y), np.array(workload), np.array(conc)


_ROWS: dict = {}


def _rows(run: SpecRun) -> list:
    """The fit's rows of ``run`` (computed once per run and acceptance):
    (kind, batch, gamma, measured, numerator features, denominator
    features, committed tokens (ratio for a sweep), reference gamma)."""
    key = (run.id, run.alpha, DRAFTER_PRICING, DRAFT_PASS_BY_ENGINE, PER_POSITION_BY)
    if key not in _ROWS:
        steps = _Steps(run)
        rows = []
        for b, gv in _by_batch(run).items():
            if run.quantity == "speedup":
                for g, v in gv:
                    if (b, g) not in run_inconsistent(run):
                        rows.append(("speedup", b, g, v, steps.plain(b), steps.spec(b, g), run.committed(g), None))
            else:
                g0, v0 = gv[0]
                ref = steps.spec(b, g0)
                for g, v in gv[1:]:
                    rows.append(("ratio", b, g, v / v0, ref, steps.spec(b, g), run.committed(g) / run.committed(g0),
                                 g0))
        _ROWS[key] = rows
    return _ROWS[key]


def _by_batch(run: SpecRun) -> dict:
    out = {}
    for b, g, v in run.points:
        out.setdefault(b, []).append((g, v))
    return {b: sorted(gv) for b, gv in sorted(out.items())}


def run_inconsistent(run: SpecRun) -> tuple:
    """(batch, gamma) points whose printed speed-up exceeds the tokens a
    verify commits: no step model can give more than N (every step free),
    so the point measures something else (end-to-end time with other
    work, say) and is shown but neither fitted nor scored."""
    if run.quantity != "speedup":
        return ()
    return tuple((b, g) for b, g, v in run.points if v > run.committed(g) + 1e-9)


def below_floor() -> list:
    """Measured speed-ups below the least any step model in which verifying T
    positions costs at most T plain steps can give: N / (T + drafting share x
    passes). Rows: run, batch, gamma, measured, floor."""
    rows = []
    for run in spec_runs():
        if run.quantity != "speedup":
            continue
        for b, g, v in run.points:
            floor = run.committed(g) / (run.width(g) + run.draft_share * run.passes(g))
            if v < floor:
                rows.append((run.id, int(b), int(g), v, floor))
    return rows


def alpha_fitted(run: SpecRun) -> bool:
    """Whether ``run``'s acceptance is fitted to its smallest batch: its
    source reports none, and it has points at three or more batches (or a
    sweep over draft lengths), so the rest of the run is still a prediction."""
    return not run.acceptance_reported and (len(run.batches) >= 3 or run.quantity == "throughput")


#: Acceptance rates searched when a run's is fitted to its smallest batch.
ALPHA_GRID = np.round(np.arange(0.30, 0.991, 0.005), 3)


def fit_alpha(f: "Fit", run: SpecRun) -> float:
    """The acceptance that best explains ``run``'s smallest batch (its
    speed-ups, or its throughput ratios over draft lengths) under the
    constants of ``f``."""
    steps = _Steps(run)
    b = min(_by_batch(run))
    gv = [(g, v) for g, v in _by_batch(run)[b] if (b, g) not in run_inconsistent(run)]
    g = np.array([x for x, _ in gv], dtype=float)
    t = np.array([f.time(steps.spec(b, x)) for x in g])
    n = _acc.committed_numeric(ALPHA_GRID[:, None], g[None, :])
    if run.quantity == "speedup":
        meas = np.array([v for _, v in gv])
        pred = n * f.time(steps.plain(b)) / t
    else:
        meas = np.array([v for _, v in gv]) / gv[0][1]
        pred = (n / t) / (n[:, :1] / t[0])
    return float(ALPHA_GRID[np.argmin(((np.log(pred) - np.log(meas)) ** 2).sum(axis=1))])


@lru_cache(maxsize=1)
def _problem():
    """The decode rows (features as dicts, computed once) and the feature names."""
    dec_feats, dec_y, dec_wl, dec_conc = _decode_rows()
    names = sorted({k for f in dec_feats for k in f} | {k for run in spec_runs() for row in _rows(run)
                                                        for f in row[4:6] for k in f}, key=str)
    return dec_feats, dec_y, dec_wl, dec_conc, names


def _vec(feat: dict, index: dict) -> np.ndarray:
    v = np.zeros(len(index))
    for k, x in feat.items():
        if k in index:
            v[index[k]] = x
    return v


def _term(name) -> str:
    return name[0] if isinstance(name, tuple) else name


def _nnls(A, b):
    """min |A x - b| with x >= 0 (active set: drop the most negative, refit)."""
    free = np.ones(A.shape[1], dtype=bool)
    x = np.zeros(A.shape[1])
    for _ in range(A.shape[1] + 1):
        x = np.zeros(A.shape[1])
        if free.any():
            x[free] = np.linalg.lstsq(A[:, free], b, rcond=None)[0]
        neg = free & (x < 0)
        if not neg.any():
            return x
        free[np.flatnonzero(neg)[np.argmin(x[neg])]] = False
    return np.clip(x, 0, None)


@dataclass(frozen=True)
class Fit:
    """Fitted constants by feature name, the terms used and what was fitted."""

    theta: dict
    terms: tuple
    runs: tuple  # speculative run ids fitted
    workloads: tuple  # decode workloads fitted
    alphas: dict = dataclasses.field(default_factory=dict)  # acceptances fitted to a run's smallest batch

    def time(self, feat: dict) -> float:
        return sum(self.theta.get(k, self._fallback(k)) * v for k, v in feat.items())

    def _fallback(self, k):
        if isinstance(k, tuple) and k[0] == "per_position":  # a calibration with one e for every chip
            return self.theta.get("per_position", 0.0)
        if isinstance(k, tuple) and k[0] == "fixed":  # an engine not fitted on this chip: the chip's vLLM time
            return self.theta.get(("fixed", k[1], "vLLM"), 0.0)
        if isinstance(k, tuple) and k[0] == "factor":
            return 1.0
        if k == "prefill" and "prefill" not in self.terms:  # not fitted: at peak, as the decode runs charge it
            return 1.0
        return 0.0

    @classmethod
    def of(cls, calibration: _cal.Calibration) -> "Fit":
        """A calibration's constants as a fit (to price the runs with, e.g.
        the decode-only calibration, which never saw a speculative run)."""
        theta = {("factor", c): v for c, v in calibration.roofline_factor.items()}
        theta.update({("fixed", c, e): v for c, by in calibration.fixed_s.items() for e, v in by.items()})
        theta.update({"per_sequence": calibration.per_sequence_s, "compute": calibration.compute_factor,
                      "per_position": calibration.per_position_s, "per_draft_pass": calibration.per_draft_pass_s,
                      "prefill": calibration.prefill_factor})
        theta.update({("per_position", v): e for v, e in calibration.per_position_by_vendor.items()})
        return cls(theta=theta, terms=TERMS, runs=(), workloads=calibration.fitted_on)

    def calibration(self) -> _cal.Calibration:
        factor = {k[1]: v for k, v in self.theta.items() if _term(k) == "factor"}
        fixed = {}
        for k, v in self.theta.items():
            if _term(k) == "fixed":
                fixed.setdefault(k[1], {})[k[2]] = v
        by_vendor = ({k[1]: v for k, v in self.theta.items() if isinstance(k, tuple) and k[0] == "per_position"}
                     if PER_POSITION_BY == "vendor" else {})
        # a chip of no fitted vendor takes the larger e: the step that speculates less
        per_position = self.theta.get("per_position", max(by_vendor.values(), default=0.0))
        return _cal.Calibration(
            roofline_factor=factor, fixed_s=fixed, per_sequence_s=self.theta.get("per_sequence", 0.0),
            compute_factor=self.theta.get("compute", 0.0), per_position_s=per_position,
            per_position_by_vendor=by_vendor,
            per_draft_pass_s=self.theta.get("per_draft_pass", 0.0), prefill_factor=self.theta.get("prefill", 0.0),
            model=_val.MEASURED_MODEL + " decoding, and measured speculative runs", fitted_on=self.workloads,
            batch_range=(1, 128),
            source="speclib.evidence.step_fit.fit on the InferenceMAX Llama-3.3-70B decoding runs and "
                   f"{len(self.runs)} measured speculative runs (data/engine-speculation), terms {', '.join(self.terms)}")


def fit(terms=DEFAULT_TERMS, *, exclude_runs=(), workloads=None, run_weights=None, decode_weights=None,
        iterations: int = 8, alphas=None) -> Fit:
    """Fit the constants of ``terms`` on every decode run (of ``workloads``)
    and every speculative run not in ``exclude_runs`` (see the module notes).
    ``run_weights``/``decode_weights``: multiplicities (the bootstrap's)."""
    terms = tuple(checked_choice("terms", t, TERMS) for t in terms)
    dec_feats, dec_y, dec_wl, _, names = _problem()
    names = [n for n in names if _term(n) in terms]
    index = {n: i for i, n in enumerate(names)}
    keep_dec = np.ones(len(dec_y), dtype=bool) if workloads is None else np.isin(dec_wl, list(workloads))
    dw = np.ones(len(dec_y)) if decode_weights is None else np.asarray(decode_weights, dtype=float)
    keep_dec &= dw > 0
    Xd = np.stack([_vec(f, index) for f in dec_feats])[keep_dec]
    offset = np.zeros(len(dec_y))
    if "prefill" not in terms:  # the prefill at peak, not fitted
        offset = np.array([f["prefill"] for f in dec_feats])
    if "factor" not in terms:
        offset = offset + np.array([sum(v for k, v in f.items() if _term(k) == "factor") for f in dec_feats])
    yd, od, wd = dec_y[keep_dec], offset[keep_dec], np.sqrt(dw[keep_dec])
    alphas = dict(alphas or {})
    runs = [r for r in spec_runs() if r.id not in exclude_runs and (run_weights is None or run_weights.get(r.id, 0))]
    if any(alpha_fitted(r) and r.id not in alphas for r in runs):
        # first without the runs whose acceptance is unknown, then each one's
        # acceptance from its smallest batch, then everything
        first = fit(terms, exclude_runs=tuple(exclude_runs) + tuple(r.id for r in runs if alpha_fitted(r)),
                    workloads=workloads, run_weights=run_weights, decode_weights=decode_weights,
                    iterations=iterations, alphas=alphas)
        alphas.update({r.id: fit_alpha(first, r) for r in runs if alpha_fitted(r) and r.id not in alphas})
    runs = [dataclasses.replace(r, alpha=alphas[r.id]) if r.id in alphas else r for r in runs]
    spec_runs_used = [(run, _rows(run)) for run in runs if _rows(run)]
    n_spec_rows = sum(len(rows) for _, rows in spec_runs_used)
    balance = np.sqrt(keep_dec.sum() / max(n_spec_rows, 1))
    mean_rows = n_spec_rows / max(len(spec_runs_used), 1)
    P, Q, W, O = [], [], [], []  # spec rows: numerator and denominator vectors, weight, unfitted prefill
    for run, rows in spec_runs_used:
        m = 1.0 if run_weights is None else run_weights[run.id]
        w = balance * np.sqrt(m * mean_rows / len(rows))
        for kind, b, g, value, num, den, n, _ in rows:
            P.append(n * _vec(num, index))
            Q.append(value * _vec(den, index))
            W.append(w)
            O.append(0.0 if "prefill" in terms else n * num.get("prefill", 0.0) - value * den.get("prefill", 0.0))
    P, Q, W, O = (np.array(P).reshape(-1, len(names)), np.array(Q).reshape(-1, len(names)), np.array(W),
                  np.array(O))
    Ad, bd = Xd * (wd / yd)[:, None], wd * (1 - od / yd)
    theta = _nnls(Ad, bd)
    if len(P):
        # The chip's factor and the engine's fixed time are the decode runs' to
        # set (a property of the chip and the engine, measured on every chip);
        # the speculative runs fit the rest with them held.
        held = np.array([_term(n) in ("factor", "fixed") for n in names])
        for _ in range(iterations):
            scale = np.maximum(Q @ theta, 1e-9)
            A = np.vstack([Ad, (P - Q) * (W / scale)[:, None]])
            b = np.concatenate([bd, -O * W / scale]) - A[:, held] @ theta[held]
            theta = theta.copy()
            theta[~held] = _nnls(A[:, ~held], b)
    return Fit(theta={n: float(v) for n, v in zip(names, theta)}, terms=terms,
               runs=tuple(r.id for r, _ in spec_runs_used), alphas=alphas,
               workloads=tuple(sorted(set(dec_wl[keep_dec]))))


# --- predictions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunPrediction:
    """A run's points: measured and predicted (speed-ups, or ratios to the
    smallest draft length at the same batch), and the best draft length
    per batch where several were measured."""

    run: SpecRun
    batch: np.ndarray
    gamma: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    best: dict  # batch -> (measured gamma*, predicted gamma*)
    scored: np.ndarray  # False where the point set the run's acceptance or contradicts itself

    @property
    def error(self) -> np.ndarray:
        return self.predicted / self.measured - 1.0


def predict_run(f: Fit, run: SpecRun) -> RunPrediction:
    """``run``'s points under ``f``. A run whose acceptance is fitted
    (:func:`alpha_fitted`) takes it from its smallest batch under ``f``;
    those points, and any the data contradict (:func:`run_inconsistent`),
    are not scored."""
    fitted_at = None
    if alpha_fitted(run):
        run = dataclasses.replace(run, alpha=f.alphas.get(run.id) or fit_alpha(f, run))
        fitted_at = min(run.batches)
    bad = run_inconsistent(run)
    steps = _Steps(run)
    batch, gamma, meas, pred, scored = [], [], [], [], []
    best = {}
    for b, gv in _by_batch(run).items():
        rate = {g: run.committed(g) / f.time(steps.spec(b, g)) for g, _ in gv}
        if run.quantity == "speedup":
            plain = 1.0 / f.time(steps.plain(b))
            rows = [(g, v, rate[g] / plain) for g, v in gv]
        else:
            g0, v0 = gv[0]
            rows = [(g, v / v0, rate[g] / rate[g0]) for g, v in gv[1:]]
        for g, v, q in rows:
            batch.append(b), gamma.append(g), meas.append(v), pred.append(q)
            scored.append(b != fitted_at and (b, g) not in bad)
        if len(gv) > 1 and b != fitted_at:
            best[b] = (max(gv, key=lambda t: t[1])[0], max(rate, key=rate.get))
    return RunPrediction(run, np.array(batch), np.array(gamma), np.array(meas), np.array(pred), best,
                         np.array(scored, dtype=bool))


def predict_decode(f: Fit) -> np.ndarray:
    """Predicted TPOT (s) of every decoding run under ``f``."""
    dec_feats, *_ = _problem()
    return np.array([f.time({k: v for k, v in d.items() if k != "prefill"})
                     + d["prefill"] * (f.theta.get("prefill", 0.0) if "prefill" in f.terms else 1.0)
                     for d in dec_feats])


@dataclass(frozen=True)
class HeldOut:
    """Every speculative run predicted without itself, every decode sweep
    without itself, and the targets the engines chapter prints."""

    runs: tuple  # RunPrediction per run
    decode_measured: np.ndarray
    decode_predicted: np.ndarray
    decode_concurrency: np.ndarray
    decode_workload: np.ndarray
    terms: tuple

    def speedup_errors(self) -> np.ndarray:
        return np.concatenate([p.error[p.scored] for p in self.runs]) if self.runs else np.zeros(0)

    def best_hits(self) -> tuple:
        """(points within +-1 of the measured best draft length, points)."""
        pairs = [v for p in self.runs for v in p.best.values()]
        return sum(abs(m - q) <= 1 for m, q in pairs), len(pairs)

    def decode_errors(self) -> np.ndarray:
        return self.decode_predicted / self.decode_measured - 1.0

    def decode_by_concurrency(self) -> list:
        """(concurrency, runs, median signed error) rows."""
        e = self.decode_errors()
        return [(int(c), int((self.decode_concurrency == c).sum()), float(np.median(e[self.decode_concurrency == c])))
                for c in np.unique(self.decode_concurrency)]

    def summary(self) -> dict:
        e = np.abs(self.speedup_errors())
        hit, n = self.best_hits()
        d = np.abs(self.decode_errors())
        return {"runs": len(self.runs), "points": int(e.size), "median_abs_error": float(np.median(e)),
                "max_abs_error": float(np.max(e)), "best_gamma_within_1": hit, "best_gamma_points": n,
                "decode_runs": int(d.size), "decode_median_abs_error": float(np.median(d)),
                "decode_worst_median_signed": max((abs(m) for _, _, m in self.decode_by_concurrency()), default=0.0)}

    def run(self, run_id: str) -> RunPrediction:
        for p in self.runs:
            if p.run.id == run_id:
                return p
        raise ValueError(f"run_id must be one of {', '.join(p.run.id for p in self.runs)}; got {run_id!r}")


def leave_one_run_out(terms=DEFAULT_TERMS) -> HeldOut:
    """Each speculative run predicted by constants fitted without it; each
    decode sweep (:func:`decode_groups`) likewise."""
    preds = tuple(predict_run(fit(terms, exclude_runs=(r.id,)), r) for r in spec_runs())
    _, dec_y, dec_wl, dec_conc, *_ = _problem()
    groups = decode_groups()
    predicted = np.empty(len(dec_y))
    for g in np.unique(groups):
        out = groups == g
        predicted[out] = predict_decode(fit(terms, decode_weights=(~out).astype(float)))[out]
    return HeldOut(preds, dec_y, predicted, dec_conc, dec_wl, tuple(terms))


def decode_groups() -> np.ndarray:
    """Each decode run's sweep (workload, chip, engine, precision, TP: one
    configuration measured at several concurrencies), as a label per run."""
    runs = _val.decoding_runs()
    return np.array([f"{r.workload} {r.chip} {r.framework} {r.precision} TP{r.tp}" for r in runs.records])


def bootstrap(terms=DEFAULT_TERMS, samples: int = 200, seed: int = 0) -> dict:
    """{constant: (5th, 50th, 95th percentile)} over fits to resampled data:
    the speculative runs drawn with replacement, the decode runs likewise."""
    rng = np.random.default_rng(seed)
    runs = [r.id for r in spec_runs()]
    _, dec_y, *_ = _problem()
    draws = {}
    for _ in range(samples):
        pick = rng.integers(0, len(runs), len(runs))
        weights = {r: float((pick == i).sum()) for i, r in enumerate(runs)}
        dw = np.bincount(rng.integers(0, len(dec_y), len(dec_y)), minlength=len(dec_y)).astype(float)
        f = fit(terms, run_weights=weights, decode_weights=dw)
        for k, v in f.theta.items():
            draws.setdefault(k, []).append(v)
    return {k: tuple(float(np.percentile(v, q)) for q in (5, 50, 95)) for k, v in draws.items()}


def against(calibration: _cal.Calibration) -> HeldOut:
    """Every speculative run priced by ``calibration`` as it is (not refitted:
    for the decode-only calibration, every run is held out by construction)."""
    f = Fit.of(calibration)
    _, dec_y, dec_wl, dec_conc, *_ = _problem()
    return HeldOut(tuple(predict_run(f, r) for r in spec_runs()), dec_y, predict_decode(f), dec_conc, dec_wl, TERMS)


def ablation(terms=DEFAULT_TERMS) -> list:
    """(term dropped or "none", held-out summary) for the full model and
    without each candidate term."""
    out = [("none", leave_one_run_out(terms).summary())]
    for t in CANDIDATES:
        if t in terms:
            out.append((f"without {t}", leave_one_run_out(tuple(x for x in terms if x != t)).summary()))
        else:
            out.append((f"with {t}", leave_one_run_out(tuple(terms) + (t,)).summary()))
    global DRAFTER_PRICING, DRAFT_PASS_BY_ENGINE, PER_POSITION_BY
    try:
        DRAFTER_PRICING = "share"
        _problem.cache_clear()
        out.append(("drafter as a share of a step", leave_one_run_out(terms).summary()))
        DRAFTER_PRICING, DRAFT_PASS_BY_ENGINE = "roofline", True
        _problem.cache_clear()
        out.append(("a_d per engine", leave_one_run_out(tuple(terms) + ("per_draft_pass",)).summary()))
        DRAFT_PASS_BY_ENGINE = False
        for group, label in (("all", "one e for every chip"), ("chip", "e per chip")):
            PER_POSITION_BY = group
            _problem.cache_clear()
            out.append((label, leave_one_run_out(terms).summary()))
    finally:
        DRAFTER_PRICING, DRAFT_PASS_BY_ENGINE, PER_POSITION_BY = "roofline", False, "vendor"
        _problem.cache_clear()
    return out


def write_calibration(path=None) -> dict:
    """Fit on everything and write the shipped calibration,
    ``data/calibration/step_time.json`` (what ``step_time="calibrated"`` prices with)."""
    from pathlib import Path

    f = fit()
    data = {"about": "Calibrated step time (speclib.core.calibrated): the shipped constants, fitted by "
                     "speclib.evidence.step_fit on measured decoding and measured speculative runs. Written by `python -m speclib.evidence.step_fit "
                     "--write-calibration`; tests/test_step_fit.py refits and compares.",
            **f.calibration().to_json()}
    target = Path(path) if path is not None else Path(__file__).resolve().parents[1].joinpath(*_cal.CALIBRATION_FILE)
    target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def _main(argv=None) -> int:  # pragma: no cover - a maintenance command
    import argparse

    parser = argparse.ArgumentParser(prog="python -m speclib.evidence.step_fit")
    parser.add_argument("--write-calibration", action="store_true")
    if parser.parse_args(argv).write_calibration:
        write_calibration()
    return 0



# --- a reader's own measurements ------------------------------------------------------------


@dataclass(frozen=True)
class OwnFit:
    """A calibration fitted to one deployment's measurements, and each
    record's fitted TPOT (``residuals``: (record, fitted ms, error))."""

    calibration: _cal.Calibration
    residuals: tuple


def fit_measurements(records, model, hardware, *, tp: int = 1, engine: str = _cal.DEFAULT_ENGINE,
                     label: str = "") -> OwnFit:
    """Fit a deployment's step from its own benchmark records
    (:func:`speclib.evidence.bench_results.read_results`): the fixed time a,
    the time per sequence d and, from the runs with speculation (their
    ``gamma`` and measured ``accept_length``), the time per extra verified
    position e and per drafter pass a_d. The chip factor mu stays the shipped
    one (a property of the chip; on one deployment's decode runs it is not
    separable from a and d), and the prefill of arriving requests is charged
    as the shipped calibration charges it. Refuses, naming the file and the
    field, data that cannot identify a term."""
    m, hw = resolve(model, hardware)
    engine = checked_choice("engine", engine, _cal.ENGINES)
    records = list(records)
    if not records:
        raise ValueError("records: no measurements to fit")
    shipped = _cal.shipped_calibration()
    try:
        chip = _chip(hw.name)
    except ValueError:  # a chip from a hardware config, not a preset: its own name, and the roofline's speed
        chip = hw.name
    mu = shipped.roofline_factor.get(chip, 1.0)
    sm = _step.step_model(m, hw)
    rows, ys, plain_b, spec_b = [], [], set(), set()
    for r in records:
        where = f"{r.source}: "
        if r.concurrency is None:
            raise ValueError(f"{where}max_concurrency is not set; the fit needs the batch (runs at a fixed concurrency)")
        B, S = float(r.concurrency), float(r.input_len + (r.output_len - 1) / 2)
        g = int(r.gamma or 0)
        n = 1.0
        if g:
            if r.accept_length is None:
                raise ValueError(f"{where}accept_length is missing for a run with gamma {g}; the fit needs the "
                                 "measured tokens per verify")
            n = float(r.accept_length)
            spec_b.add(B)
        else:
            plain_b.add(B)
        T = (g + 1.0) if g else 1.0
        plain_roof = float(sm.time(np.float64(B), np.float64(1.0), np.float64(S))) * mu / tp
        roof = float(sm.time(np.float64(B), np.float64(T), np.float64(S))) * mu / tp
        share = DEFAULT_DRAFT_SHARE * g
        prefill = float(_val.prefill_seconds(m, hw, B, r.input_len, r.output_len, tp)) * shipped.prefill_factor
        x = np.array([1.0 + share, B * (1.0 + share), B * (T - 1.0), float(g)])
        y = n * (r.tpot_ms * 1e-3 - prefill) - (roof + share * plain_roof)
        rows.append(x), ys.append((y, n * r.tpot_ms * 1e-3, r, roof + share * plain_roof, prefill, n))
    name = records[0].source
    if len(plain_b) < 2:
        raise ValueError(f"{name}: max_concurrency: runs without speculation at {len(plain_b)} distinct batch(es); "
                         "the fixed and per-sequence times need at least two")
    if spec_b and len(spec_b) < 2:
        raise ValueError(f"{name}: max_concurrency: runs with speculation at one batch only; the per-position and "
                         "per-pass times need at least two batches")
    X = np.array(rows)
    if not spec_b:
        X = X[:, :2]
    scale = np.array([t for _, t, *_ in ys])
    theta = _nnls(X / scale[:, None], np.array([y for y, *_ in ys]) / scale)
    theta = np.concatenate([theta, np.zeros(4 - theta.size)])
    residuals = []
    for x, (_, _, r, kernel, prefill, n) in zip(rows, ys):
        fitted = (kernel + float(x @ theta)) / n + prefill
        residuals.append((r, fitted * 1e3, fitted / (r.tpot_ms * 1e-3) - 1.0))
    cal = _cal.Calibration(
        roofline_factor={chip: mu}, fixed_s={chip: {engine: float(theta[0])}}, per_sequence_s=float(theta[1]),
        per_position_s=float(theta[2]), per_draft_pass_s=float(theta[3]), prefill_factor=shipped.prefill_factor,
        model=m.name, fitted_on=tuple(sorted({r.source for r in records})),
        batch_range=(int(min(plain_b | spec_b)), int(max(plain_b | spec_b))), label=label or name,
        source=f"speclib.evidence.step_fit.fit_measurements: {len(records)} runs of {m.name} on {tp} x {hw.name} "
               f"({engine}); mu held at the shipped {mu:.3g}")
    return OwnFit(cal, tuple(residuals))


#: The fields a calibration file must have.
CALIBRATION_FIELDS = ("roofline_factor", "fixed_s", "per_sequence_s")


def read_calibration(path) -> _cal.Calibration:
    """A calibration file (as ``speclib fit`` writes it), checked: a missing
    or bad field is a ValueError naming the file and the field."""
    from pathlib import Path

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{p}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: not JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p}: must hold a JSON object")
    for key in CALIBRATION_FIELDS:
        if key not in data:
            raise ValueError(f"{p}: missing field {key}")
    for key in ("per_sequence_s", "compute_factor", "per_position_s", "per_draft_pass_s", "prefill_factor"):
        if key in data and (isinstance(data[key], bool) or not isinstance(data[key], (int, float))
                            or not np.isfinite(data[key]) or data[key] < 0):
            raise ValueError(f"{p}: {key} must be a number >= 0; got {data[key]!r}")
    if not isinstance(data["roofline_factor"], dict) or not data["roofline_factor"]:
        raise ValueError(f"{p}: roofline_factor must map chip names to factors")
    for chip, v in data["roofline_factor"].items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
            raise ValueError(f"{p}: roofline_factor.{chip} must be a number > 0; got {v!r}")
    if not isinstance(data["fixed_s"], dict):
        raise ValueError(f"{p}: fixed_s must map chip names to {{engine: seconds}}")
    for chip, by in data["fixed_s"].items():
        if not isinstance(by, dict):
            raise ValueError(f"{p}: fixed_s.{chip} must map engines to seconds")
        for e, v in by.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ValueError(f"{p}: fixed_s.{chip}.{e} must be a number >= 0; got {v!r}")
    by_vendor = data.get("per_position_by_vendor", {})
    if not isinstance(by_vendor, dict):
        raise ValueError(f"{p}: per_position_by_vendor must map vendors (NVIDIA, AMD) to seconds")
    for vendor, v in by_vendor.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
            raise ValueError(f"{p}: per_position_by_vendor.{vendor} must be a number >= 0; got {v!r}")
    return dataclasses.replace(_cal.Calibration.from_json(data), label=data.get("label") or p.name)


#: The constants a reader reads off a fit: scale to the unit, and the unit.
UNITS = {"per_sequence": (1e6, "\u00b5s per sequence per step"),
         "per_position": (1e6, "\u00b5s per verified position past the first, per sequence"),
         "per_draft_pass": (1e3, "ms per drafter pass"), "compute": (1.0, "\u00d7 FLOPs at peak (\u03ba)"),
         "prefill": (1.0, "\u00d7 the prefill's FLOPs at peak")}


def constants(terms=DEFAULT_TERMS, *, samples: int = 200) -> list:
    """Every fitted constant with its 5-95 % bootstrap interval over ``samples``
    refits to resampled runs: (constant, value, interval, unit) in the unit of
    :data:`UNITS`; the chip factors (mu) and fixed times (a) after them."""
    f, ci = fit(terms), bootstrap(terms, samples)
    named = [(k, k, *UNITS[k]) for k in UNITS if k in f.theta]
    named += [(k, f"per_position, {k[1]}", *UNITS["per_position"])
              for k in sorted((k for k in f.theta if isinstance(k, tuple) and k[0] == "per_position"), key=str)]
    for k in sorted((k for k in f.theta if isinstance(k, tuple) and k[0] in ("factor", "fixed")), key=str):
        named.append((k, f"\u03bc {k[1]}", 1.0, "\u00d7 the roofline") if k[0] == "factor"
                     else (k, f"a {k[1]}, {k[2]}", 1e3, "ms per step"))
    return [(name, f.theta[k] * scale, f"{ci[k][0] * scale:.3g} \u2013 {ci[k][2] * scale:.3g}", unit)
            for k, name, scale, unit in named]


def targets(held: "HeldOut | None" = None) -> list:
    """The engines issue's held-out targets: (what, target, held out, met)."""
    held = leave_one_run_out() if held is None else held
    s = held.summary()
    hit, n = held.best_hits()
    v4 = held.run("vllm-v4pro-mi355x")
    v4_32 = float(v4.predicted[v4.batch == 32][0])
    qwen = held.run("sglang-autospec")
    q = [qwen.best[b][1] for b in sorted(qwen.best)]
    rows = [
        ("speed-up, median |error|", "\u2264 10 %", f"{100 * s['median_abs_error']:.1f} %",
         s["median_abs_error"] <= 0.10),
        ("speed-up, max |error|", "\u2264 25 %", f"{100 * s['max_abs_error']:.0f} %", s["max_abs_error"] <= 0.25),
        ("best draft length within \u00b11", "\u2265 80 % of (run, batch)", f"{hit} of {n}", hit >= 0.8 * n),
        ("DeepSeek-V4-Pro, 8 x MI355X, concurrency 32", "below 1.0\u00d7 (measured 0.63\u00d7)", f"{v4_32:.2f}\u00d7",
         v4_32 < 1.0),
        ("Qwen3-235B best draft length, batch 2 \u2192 64", "falling", " \u2192 ".join(map(str, q)), q[0] > q[-1]),
        ("decode TPOT, median |error|", "\u2264 12 %", f"{100 * s['decode_median_abs_error']:.1f} %",
         s["decode_median_abs_error"] <= 0.12),
        ("decode TPOT, worst median signed error by concurrency", "\u2264 15 %",
         f"{100 * s['decode_worst_median_signed']:.1f} %", s["decode_worst_median_signed"] <= 0.15),
    ]
    return [(*r[:3], "yes" if r[3] else "no") for r in rows]


def report(terms=DEFAULT_TERMS, *, bootstrap_samples: int = 200) -> str:
    """The fit in words and numbers, as ``benchmarks/bench_step_fit.py``
    prints it: the constants with their bootstrap intervals (:func:`constants`),
    the held-out errors by point, the targets (:func:`targets`), and each
    candidate term's effect when dropped or added."""
    f = fit(terms)
    h = leave_one_run_out(terms)
    out = ["Constants (fit on every run; 5-95 % bootstrap interval over resampled runs):"]
    out += [f"  {name:<22} {value:9.3g} {unit}  [{interval}]"
            for name, value, interval, unit in constants(terms, samples=bootstrap_samples)]
    if f.alphas:
        out.append("  acceptance fitted to a run's smallest batch (not reported): "
                   + ", ".join(f"{k} {v:.3f}" for k, v in f.alphas.items()))
    out += ["", "Held out (each run predicted by constants fitted without it):",
            f"  {'run':<32} {'batch':>6} {'gamma':>5} {'measured':>9} {'predicted':>9} {'error':>7}"]
    for p in h.runs:
        for b, g, m, q, ok in zip(p.batch, p.gamma, p.measured, p.predicted, p.scored):
            out.append(f"  {p.run.id[:32]:<32} {int(b):>6} {int(g):>5} {m:>9.2f} {q:>9.2f} {100 * (q / m - 1):>6.0f}%"
                       + ("" if ok else "  (not scored)"))
        for b, (mb, qb) in p.best.items():
            out.append(f"  {p.run.id[:32]:<32} {int(b):>6}  best draft length: measured {mb}, predicted {qb}")
    out += ["", "Targets (held out):"]
    out += [f"  {what}: {value} (target {target}; met: {met})" for what, target, value, met in targets(h)]
    out += ["  decode TPOT median signed error by concurrency: "
            + ", ".join(f"{c}: {100 * m:+.1f} %" for c, _, m in h.decode_by_concurrency()),
            "", "Each variant (held-out speed-up median and max |error|, best-length hits, decode median |error|):"]
    for term, sm in ablation(terms):
        out.append(f"  {('the fitted terms' if term == 'none' else term):<30} "
                   f"{100 * sm['median_abs_error']:5.1f} %  {100 * sm['max_abs_error']:4.0f} %  "
                   f"{sm['best_gamma_within_1']}/{sm['best_gamma_points']}  {100 * sm['decode_median_abs_error']:5.1f} %")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
