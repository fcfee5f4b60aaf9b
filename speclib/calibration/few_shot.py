"""How well ``speclib fit`` on a few of a deployment's own runs predicts the
rest of its sweep: every measured sweep that gives both arms' times (with
and without speculation) at each concurrency is fitted on its smallest
concurrencies (:func:`speclib.calibration.own_fit.fit_measurements`, the
shipped calibration its prior) and priced at the others, beside two null
baselines on the same points: the speed-up (and each arm's TPOT) at the
largest fitted concurrency carried forward, and a straight line in log
concurrency through the fitted points.

The sweeps (:func:`sweeps`):

* each InferenceX DeepSeek-R1 configuration served with MTP and without
  (:func:`speclib.evidence.spec_runs.r1_mtp_pairs`): both arms' TPOT at each
  concurrency. InferenceX reports no acceptance, so the fit takes the tokens
  per verify that best explain the fitted points (a grid over 1 to gamma + 1,
  the drafter pass time held at the prior, with which it is not separable);
* each engine sweep of ``data/engine-speculation/sweeps.json`` whose points
  give both arms as a TPOT, an output throughput or a request latency: a
  throughput is taken as concurrency / throughput seconds per token, a
  latency as latency / output tokens (each sweep's ``assumed`` says so).

Sweeps that print only a speed-up or only the speculative arm give ``speclib
fit`` no time to fit, and are listed by :func:`unscored` with the reason.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from speclib._checks import checked_choice
from speclib.evidence import engines as _eng
from speclib.calibration import own_fit as _own
from speclib.evidence import spec_runs as _spec
from speclib.evidence.bench_results import BenchRecord
from speclib.calibration.step_fit import _cal_engine

#: The two kinds of sweep, as the summary groups them.
FAMILIES = ("InferenceX DeepSeek-R1, MTP on/off", "engine sweeps")
#: Concurrencies fitted, by default: the smallest three.
N_FIT = 3
#: Which concurrencies of a sweep are fitted: its smallest (the issue's
#: few-shot measurement: predict beyond them), or spread over it, the
#: smallest, the largest and evenly between in rank (predict between them).
PLANS = ("smallest", "spread")
#: A sweep scored against the issue's targets has at least this many concurrencies.
MIN_SCORED = 5
#: Tokens per verify searched where a sweep reports none: this many steps per draft token.
ACCEPT_STEPS = 20


@dataclass(frozen=True)
class Sweep:
    """One deployment measured with and without speculation at several
    concurrencies: ``points`` are (concurrency, seconds per output token
    without speculation, with it)."""

    id: str
    label: str
    family: str
    url: str
    model: str
    chip: str
    engine: str
    tp: int
    gamma: int
    input_len: float
    output_len: float
    points: tuple
    accept_length: float = None  # tokens per verify, bonus included, where the source prints it
    ep: int = 1
    dp_attention: bool = False
    weights: str = None
    kv_cache: str = None
    assumed: str = ""

    @property
    def concurrencies(self) -> tuple:
        return tuple(c for c, *_ in self.points)

    def records(self, concurrencies=None) -> list:
        """The sweep as ``speclib fit`` reads benchmark files: a plain and a
        speculative record per concurrency (of ``concurrencies``; None: all)."""
        out = []
        for c, plain, spec in self.points:
            if concurrencies is not None and c not in concurrencies:
                continue
            for gamma, t in ((None, plain), (self.gamma, spec)):
                out.append(BenchRecord(
                    source=f"{self.id} c{c}" + (f" gamma {gamma}" if gamma else ""), format="sweep",
                    concurrency=int(c), input_len=float(self.input_len), output_len=float(self.output_len),
                    tpot_ms=float(t) * 1e3, output_throughput=float(c) / float(t), ttft_ms=0.0, gamma=gamma,
                    accept_length=self.accept_length if gamma else None, tp=self.tp, model=self.model,
                    engine=self.engine))
        return out


def _r1_sweeps() -> list:
    out = []
    for run in _spec.r1_mtp_pairs():
        if not run.tpot_at:
            continue
        (gamma,) = {g for _, g, _ in run.points}
        out.append(Sweep(
            id=run.id, label=run.label, family=FAMILIES[0], url=run.url, model=run.model, chip=run.chip,
            engine=_cal_engine(run.engine), tp=run.gpus, gamma=int(gamma), input_len=run.prefill_lengths[0],
            output_len=run.prefill_lengths[1],
            points=tuple((int(c), *run.tpot_at[c]) for c in sorted(run.tpot_at)), ep=run.ep,
            dp_attention=run.dp_attention, weights=run.weights, kv_cache=run.kv_cache, assumed=run.assumed))
    return out


def _times(s) -> tuple:
    """(seconds per output token without and with speculation at each point,
    what was assumed to get them), or None where the sweep gives no time of
    both arms."""
    if s.quantity == "tpot_ms":
        return s.base * 1e-3, s.spec * 1e-3, ""
    if s.quantity == "throughput":
        return s.batch / s.base, s.batch / s.spec, ("seconds per token taken as concurrency / output throughput "
                                                     "(the closed loop's TPOT, arriving requests' prefill included)")
    if s.quantity == "latency_ms" and s.workload.get("output"):
        out = float(s.workload["output"])
        return (s.base * 1e-3 / out, s.spec * 1e-3 / out,
                "seconds per token taken as request latency / output tokens (the prefill included)")
    return None


def _engine_sweeps() -> tuple:
    """(the engine sweeps that give both arms' times, {id: why not} for the rest)."""
    scored, skipped = [], {}
    for s in _eng.load_sweeps():
        if s.quantity == "speedup":
            skipped[s.id] = "prints speed-ups only: no time of either arm to fit"
            continue
        if not np.all(np.isfinite(s.base)):
            skipped[s.id] = "prints the speculative arm only: no run without speculation"
            continue
        times = _times(s)
        if times is None or not s.model.get("preset"):
            skipped[s.id] = "no time per token or no model preset to price it with"
            continue
        base, spec, how = times
        for gamma in sorted({int(g) for g in s.gamma}):
            keep = np.array([int(g) == gamma for g in s.gamma])
            batches = [int(b) for b in s.batch[keep]]
            if len(set(batches)) != len(batches):
                skipped[s.id] = "two points at one concurrency and draft length"
                break
            acc = s.acceptance.get("accept_length")
            accept = float(acc) if isinstance(acc, (int, float)) else (
                float(acc[str(gamma)]) if isinstance(acc, dict) and str(gamma) in acc else None)
            w = s.workload
            out_len = float(w["output"]) if w.get("output") else _spec.DEFAULT_CONTEXT / 2
            in_len = float(w["input"]) if w.get("input") else max(
                float(w.get("context") or _spec.DEFAULT_CONTEXT) - (out_len - 1) / 2, 1.0)
            assumed = "; ".join(x for x in (how, "" if w.get("input") else
                                            f"mean prompt {in_len:.0f} tokens assumed (the source states none)",
                                            "" if accept else "acceptance not printed: fitted", s.assumed) if x)
            scored.append(Sweep(
                id=s.id + (f"-g{gamma}" if len(set(s.gamma)) > 1 else ""), label=s.label, family=FAMILIES[1],
                url=s.source["url"], model=s.model["preset"], chip=s.hardware["chip"],
                engine=_cal_engine(s.engine["name"]), tp=int(s.parallelism.get("tp") or s.hardware["count"]),
                gamma=gamma, input_len=in_len, output_len=out_len,
                points=tuple(sorted((b, float(t0), float(t1)) for b, t0, t1 in zip(batches, base[keep], spec[keep]))),
                accept_length=accept, ep=int(s.parallelism.get("ep") or 1), assumed=assumed))
    return tuple(scored), skipped


@lru_cache(maxsize=1)
def sweeps() -> tuple:
    """Every measured sweep with both arms' times: InferenceX's DeepSeek-R1
    configurations, then the engine sweeps (see the module notes)."""
    return tuple(_r1_sweeps()) + _engine_sweeps()[0]


def unscored() -> dict:
    """{engine sweep id: why ``speclib fit`` cannot be scored on it}."""
    return dict(_engine_sweeps()[1])


@dataclass(frozen=True)
class Point:
    """One held-out concurrency of a sweep: measured, fitted and the two
    baselines, for the speed-up and for each arm's TPOT (ms)."""

    concurrency: int
    speedup: float
    tpot: tuple  # (without speculation, with it), measured
    fitted_speedup: float
    fitted_tpot: tuple
    carried_speedup: float
    carried_tpot: tuple
    loglinear_speedup: float
    loglinear_tpot: tuple

    def error(self, predictor: str, quantity: str):
        """Relative error(s) of ``predictor`` (fitted, carried, loglinear) on
        ``quantity`` (speedup: one number; tpot: both arms')."""
        got = getattr(self, f"{predictor}_{quantity}")
        if quantity == "speedup":
            return got / self.speedup - 1.0
        return tuple(g / m - 1.0 for g, m in zip(got, self.tpot))

    def decision_right(self, predictor: str) -> bool:
        """Whether ``predictor`` says to speculate (a speed-up above 1) where the measurement does."""
        return (getattr(self, f"{predictor}_speedup") > 1.0) == (self.speedup > 1.0)


@dataclass(frozen=True)
class Result:
    """A sweep fitted on ``n_fit`` of its concurrencies (its smallest, or
    spread over it: ``plan``, :data:`PLANS`): the held-out ``points``, the
    fit's accepted tokens per verify (fitted or the source's), and ``error``
    where the fit could not be made (no points)."""

    sweep: Sweep
    n_fit: int
    points: tuple
    accept_length: float = None
    accept_fitted: bool = False
    fit_residual: float = None  # the largest |relative error| of the fitted TPOTs
    error: str = ""
    plan: str = "smallest"

    def scored(self, min_points: int = MIN_SCORED) -> bool:
        """Held to the targets: a sweep of ``min_points`` concurrencies or more, fitted."""
        return not self.error and len(self.sweep.points) >= max(min_points, self.n_fit + 1)

    def median(self, predictor: str, quantity: str) -> float:
        errs = [e for p in self.points for e in np.atleast_1d(p.error(predictor, quantity))]
        return float(np.median(np.abs(errs))) if errs else float("nan")

    def decisions(self, predictor: str) -> float:
        return float(np.mean([p.decision_right(predictor) for p in self.points])) if self.points else float("nan")


def _loglinear(c, y, at):
    slope, intercept = np.polyfit(np.log(c), y, 1)
    return float(intercept + slope * np.log(at))


def _fit(sweep: Sweep, records):
    """The own fit of ``records`` of ``sweep``: with the source's tokens per
    verify, or the value on a grid that best explains them (the drafter
    pass time then at the prior)."""
    kw = dict(model=sweep.model, hardware=sweep.chip, tp=sweep.tp, engine=sweep.engine,
              layout=dict(ep=sweep.ep, dp_attention=sweep.dp_attention, weights=sweep.weights,
                          kv_cache=sweep.kv_cache))
    if sweep.accept_length is not None:
        return _own.fit_measurements(records, **kw), sweep.accept_length, False
    best = None
    for n in np.linspace(1.0, sweep.gamma + 1.0, ACCEPT_STEPS * sweep.gamma + 1)[1:]:
        fit = _own.fit_measurements(records, accept_length=float(n), hold=("per_draft_pass",), **kw)
        sse = float(sum(err ** 2 for *_, err in fit.residuals))
        if best is None or sse < best[0]:
            best = (sse, fit, float(n))
    return best[1], best[2], True


def fitted_ranks(count: int, n_fit: int, plan: str = "smallest") -> tuple:
    """The ranks (0 the smallest) of the ``n_fit`` concurrencies fitted out
    of ``count``: the first ``n_fit``, or, spread, the first, the last and
    evenly between them, rounded to the nearest rank."""
    plan = checked_choice("plan", plan, PLANS)
    if plan == "smallest":
        return tuple(range(min(n_fit, count)))
    return tuple(sorted({int(round(x)) for x in np.linspace(0, count - 1, n_fit)}))


def few_shot(sweep: Sweep, n_fit: int = N_FIT, plan: str = "smallest") -> Result:
    """``sweep`` fitted on ``n_fit`` of its concurrencies (:func:`fitted_ranks`
    of ``plan``) and priced at the rest, beside two baselines from the
    fitted points: the value at the nearest fitted concurrency (in log
    concurrency; fitted on the smallest, the last one carried forward) and
    a straight line in log concurrency through them."""
    if n_fit < 2:
        raise ValueError(f"n_fit must be at least 2 (the fixed and per-sequence times); got {n_fit!r}")
    cs = sweep.concurrencies
    if len(cs) <= n_fit:
        return Result(sweep, n_fit, (), error=f"{len(cs)} concurrencies: none left to predict after fitting {n_fit}",
                      plan=plan)
    ranks = fitted_ranks(len(cs), n_fit, plan)
    fitted_c = tuple(cs[i] for i in ranks)
    try:
        fit, accept, accept_fitted = _fit(sweep, sweep.records(fitted_c))
    except ValueError as exc:
        return Result(sweep, n_fit, (), error=str(exc), plan=plan)
    c_fit = np.array(fitted_c, dtype=float)
    plain_fit = np.array([sweep.points[i][1] for i in ranks]) * 1e3
    spec_fit = np.array([sweep.points[i][2] for i in ranks]) * 1e3
    speed_fit = plain_fit / spec_fit
    points = []
    for i, (c, plain, spec) in enumerate(sweep.points):
        if i in ranks:
            continue
        plain_ms, spec_ms = fit.predict(sweep.records((c,)), accept_length=accept)
        near = int(np.argmin(np.abs(np.log(c_fit) - np.log(c))))
        points.append(Point(
            concurrency=int(c), speedup=plain / spec, tpot=(plain * 1e3, spec * 1e3),
            fitted_speedup=float(plain_ms / spec_ms), fitted_tpot=(float(plain_ms), float(spec_ms)),
            carried_speedup=float(speed_fit[near]), carried_tpot=(float(plain_fit[near]), float(spec_fit[near])),
            loglinear_speedup=_loglinear(c_fit, speed_fit, c),
            loglinear_tpot=(_loglinear(c_fit, plain_fit, c), _loglinear(c_fit, spec_fit, c))))
    return Result(sweep, n_fit, tuple(points), accept_length=accept, accept_fitted=accept_fitted,
                  fit_residual=float(max(abs(e) for *_, e in fit.residuals)), plan=plan)


@lru_cache(maxsize=None)
def results(n_fit: int = N_FIT, plan: str = "smallest") -> tuple:
    """:func:`few_shot` on every sweep of :func:`sweeps`."""
    return tuple(few_shot(s, n_fit, plan) for s in sweeps())


#: The predictors, in the order the summary shows them.
PREDICTORS = ("fitted", "carried", "loglinear")


def summary(n_fit: int = N_FIT, family: str = None, min_points: int = MIN_SCORED, plan: str = "smallest") -> dict:
    """Per family (or one): the sweeps of ``min_points`` concurrencies or
    more (:meth:`Result.scored`), and
    for each predictor the median over those sweeps' held-out points of the
    |error| on the speed-up and on TPOT (both arms), the share of points
    whose on/off decision is right, and how many sweeps meet the targets
    (median error <= 5 % on both and at most half the carried-forward
    baseline's; decisions right on >= 95 % of points)."""
    out = {}
    for fam in ((family,) if family else FAMILIES):
        scored = [r for r in results(n_fit, plan) if r.sweep.family == fam and r.scored(min_points)]
        points = [p for r in scored for p in r.points]
        row = {"sweeps": len(scored), "points": len(points)}
        for pred in PREDICTORS:
            speed = [abs(p.error(pred, "speedup")) for p in points]
            tpot = [abs(e) for p in points for e in p.error(pred, "tpot")]
            row[pred] = {"speedup": float(np.median(speed)) if speed else float("nan"),
                         "tpot": float(np.median(tpot)) if tpot else float("nan"),
                         "decision": float(np.mean([p.decision_right(pred) for p in points])) if points
                         else float("nan")}
        row["meets"] = sum(1 for r in scored if meets_targets(r))
        out[fam] = row
    return out


def meets_targets(r: Result) -> bool:
    """Whether one sweep's fit meets the few-shot targets (see :func:`summary`)."""
    fs, ft = r.median("fitted", "speedup"), r.median("fitted", "tpot")
    cs, ct = r.median("carried", "speedup"), r.median("carried", "tpot")
    return bool(fs <= 0.05 and ft <= 0.05 and fs <= cs / 2 and ft <= ct / 2 and r.decisions("fitted") >= 0.95)
