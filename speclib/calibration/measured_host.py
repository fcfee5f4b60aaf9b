"""The engine's host work fitted on top of the measured step, and held out.

The measured step (``step_time="measured"``, :mod:`speclib.silicon.step`)
reads every kernel of a step from NVIDIA's measured tables and fits
nothing; what no kernel table holds (the engine's scheduling, building the
next step's inputs, the sampler) is missing from it, so it runs faster than
the engines measured. Here that missing part alone is fitted, with the
engine step's closed form (:data:`speclib.formulas.step.engine_step_expr`,
through :func:`speclib.formulas.numpy_functions.engine_step`) at the
measured kernels' time, T = 1 and no other term:

    TPOT = t_measured + a_engine + d * B

* ``t_measured``: the measured step's TPOT of the run through the public
  function (:func:`speclib.core.decode.tpot` with the run's deployment at
  ``step_time="measured"`` and its workload): the tables' kernels, the
  roofline where no table exists, and the prefill of arriving requests as
  the measured step prices it (at its roofline, unscaled). Computed once a
  run; nothing in it is fitted;
* ``a_engine``: a fixed time per step for each serving engine (one constant
  an engine, whatever the chip or model);
* ``d``: a time per running sequence per step (one constant for every
  engine), B the sequences the run decodes at once
  (:attr:`~speclib.evidence.decode_runs.DecodeRun.running`).

Four constants at most (three engines), found by non-negative least squares
on relative error, as the calibrated step's are
(:func:`speclib.calibration.step_fit._nnls`): linear, since
``t_measured`` is fixed. An engine the fit has no run of takes the median of
the fitted engines' fixed times. Beside them stands the one published
estimate of an engine's host time the repository holds
(:data:`speclib.core.overlap.HOST_FIXED_S`, :data:`~speclib.core.overlap.HOST_PER_REQUEST_S`:
SGLang on an H100, the time an overlap scheduler hides).

:func:`held_out` holds a whole chip, model family or engine out at a time
(:data:`GROUPINGS`): the constants are fitted on the other groups' runs and
predict the group's; nothing is chosen inside a fold (the form is fixed
above), so the nesting has no inner choice to make. Each held-out figure
stands beside, on the same runs: the measured step with nothing fitted; the
null baseline "the median TPOT of the same chip and engine" outside the
group (a chip held out: of the same engine,
:func:`speclib.calibration.baselines.same_chip_engine_tpot`); and the
calibrated step held out the same way, as stored
(:func:`speclib.calibration.held_out.stored_decode_predicted`), where a
stored hold-out of that grouping exists (by chip and by model family).
Which of the two to price a held-out group's decode TPOT with is chosen,
nested, in :mod:`speclib.calibration.step_choice`.

:func:`spec_held_out` prices the speculative runs the calibrated step is
held out on with the measured step plus the host constants fitted on the
decode runs outside the run's family (or chip) (:class:`MeasuredSpecSteps`),
so that :func:`speclib.calibration.held_out.skill_of` sets its decisions
beside the null baselines and the calibrated step's stored hold-out on the
same points. Nothing prices a verified position past the first beyond what
the tables hold: the decode runs (T = 1) cannot identify such a term.

:func:`spec_held_out_per_position` adds the one term they cannot identify,
e_pos B (T - 1) (the e term of :data:`speclib.formulas.step.engine_step_expr`),
fitted by least squares on the relative speed-up error of the speculative
runs outside the held-out family (or chip), each priced with that fold's
host constants, so neither the group's decode runs nor its speculative runs
reach its prediction (:func:`fit_per_position`). e_pos is given at L_ref
attention layers and scaled by the target's (``scale="layers"``, the
calibrated step's own scaling, :data:`speclib.formulas.step.fixed_by_layers_expr`):
the larger part of what the tables miss is per layer (a verify's MLA block
in NVIDIA's AIConfigurator tables costs a median 0.70 us more per extra
position per attention layer than the decode kernel the measured step scales
by the roofline's T / 1, some 56 us over 80 layers, against 0.7 to 16 us a row
for the sampler and rejection test once a step), and it keeps e_pos in the
calibrated e's unit. ``scale="step"`` (once a step, whatever the depth) is a
sensitivity, not chosen between on the held-out score. One constant for
every engine: a fold held out by family keeps 18 to 41 speculative runs,
26 of the 42 SGLang's, too few of the others' for a constant each.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._checks import checked_choice
from ..formulas import numpy_functions as nf
from ..silicon import tables as _tables
from speclib.calibration import baselines as _base
from speclib.calibration.step_features import chip_key
from speclib.calibration.step_fit import _nnls

#: How the fitted per-extra-position term e_pos scales (:class:`MeasuredSpecSteps`):
#: ``"layers"`` (the default), given at L_ref attention layers and scaled by the
#: target's, as the calibrated step's e is; ``"step"``, once a step whatever the depth.
POSITION_SCALES = ("layers", "step")
#: The groupings a hold-out takes a whole unit out by, and the unit of a run.
GROUPINGS = {"chip": lambda r: chip_key(r.chip), "model": lambda r: r.family, "engine": lambda r: r.engine}
#: The hold-outs of the calibrated step stored under the same grouping
#: (:data:`speclib.calibration.held_out.GROUPINGS`); none by engine.
STORED_GROUPING = {"chip": "chip", "model": "model"}


def table_runs() -> tuple:
    """The measured decode runs (:func:`speclib.evidence.decode_runs.decode_runs`)
    on a chip that has measured kernel tables (the H100, H200, B200 and B300)."""
    from ..presets import hardware
    from speclib.evidence import decode_runs as _dec

    return tuple(r for r in _dec.decode_runs() if hardware(r.chip).name in _tables.SYSTEMS)


_KERNEL: dict = {}


def measured_tpot(run) -> float:
    """Seconds per output token of ``run`` by the measured step alone (its
    kernels from the tables and the prefill its closed loop carries; nothing
    fitted), through :func:`speclib.core.decode.tpot`. Computed once a run."""
    from speclib.core.decode import tpot

    if run not in _KERNEL:
        _KERNEL[run] = float(tpot(run.concurrency, run.context, workload=(run.input_len, run.output_len),
                                  deployment=run.deployment("measured")))
    return _KERNEL[run]


def _host(a, d, B):
    """The host part of the engine step (:func:`~speclib.formulas.numpy_functions.engine_step`
    at no kernel time, T = 1): a + d B."""
    z = 0.0 * np.asarray(B, dtype=float)
    return nf.engine_step(z, z, a, d, z, B, 1.0 + z, z, z, z, z)


@dataclass(frozen=True)
class HostFit:
    """The fitted host work: ``fixed_s`` {engine: seconds a step},
    ``per_sequence_s`` (seconds a running sequence a step), and ``runs``,
    how many runs it was fitted on."""

    fixed_s: dict
    per_sequence_s: float
    runs: int = 0

    def fixed(self, engine: str) -> float:
        """An engine's fixed time; one the fit did not see: the median of the fitted engines'."""
        if engine in self.fixed_s:
            return float(self.fixed_s[engine])
        return float(np.median(list(self.fixed_s.values())))

    def host_time(self, engine: str, batch) -> np.ndarray:
        """Seconds of host work a step of ``batch`` running sequences on ``engine``."""
        return _host(self.fixed(engine), self.per_sequence_s, batch)

    def tpot(self, runs, kernel=None) -> np.ndarray:
        """Each run's TPOT (s): its measured step (``kernel``, else :func:`measured_tpot`) plus the host work."""
        kernel = np.array([measured_tpot(r) for r in runs]) if kernel is None else np.asarray(kernel, dtype=float)
        host = np.array([float(self.host_time(r.engine, r.running)) for r in runs])
        return kernel + host


def fit(runs, kernel=None) -> HostFit:
    """The host constants fitted on ``runs`` (decode runs with ``tpot_s``):
    min sum ((t_measured + a_e + d B) / y - 1)^2 over a_e, d >= 0.
    ``kernel``: each run's measured step's TPOT (else :func:`measured_tpot`)."""
    runs = list(runs)
    if not runs:
        raise ValueError("fit needs at least one decode run")
    kernel = np.array([measured_tpot(r) for r in runs]) if kernel is None else np.asarray(kernel, dtype=float)
    y = np.array([r.tpot_s for r in runs], dtype=float)
    B = np.array([r.running for r in runs], dtype=float)
    engines = sorted({r.engine for r in runs})
    of = np.array([r.engine for r in runs])
    one = np.ones_like(B)
    cols = [np.where(of == e, _host(one, 0.0 * one, B), 0.0) for e in engines] + [_host(0.0 * one, one, B)]
    A = np.column_stack(cols) / y[:, None]
    x = _nnls(A, 1.0 - kernel / y)
    return HostFit({e: float(v) for e, v in zip(engines, x[:-1])}, float(x[-1]), len(runs))


@dataclass(frozen=True)
class HostHeldOut:
    """Every run's TPOT predicted with its group (``by``) held out, beside the
    baselines on the same runs. Arrays are in the order of ``runs``;
    ``calibrated`` is NaN where no stored hold-out of the grouping holds the run."""

    by: str
    runs: tuple
    groups: np.ndarray
    measured: np.ndarray  # the runs' measured TPOT (s)
    kernel: np.ndarray  # the measured step alone
    predicted: np.ndarray  # the measured step plus the host work fitted without the group
    null: np.ndarray  # the median TPOT of the same chip and engine outside the group
    calibrated: np.ndarray
    fits: dict  # group -> HostFit fitted without it

    def errors(self, which: str = "predicted") -> np.ndarray:
        """Relative error of ``which`` (``predicted``, ``kernel``, ``null`` or ``calibrated``) per run."""
        return getattr(self, which) / self.measured - 1.0

    def rows(self) -> list:
        """(unit, runs, median |error| of: measured + host, measured alone,
        the null baseline, the calibrated step; NaN where it has no point)
        per held-out unit, then "all"."""
        out = []
        units = [(g, self.groups == g) for g in sorted(set(self.groups))] + [("all", np.ones(len(self.runs), bool))]
        for g, mask in units:
            meds = []
            for which in ("predicted", "kernel", "null", "calibrated"):
                e = np.abs(self.errors(which)[mask])
                e = e[np.isfinite(e)]
                meds.append(float(np.median(e)) if e.size else float("nan"))
            out.append((g, int(mask.sum()), *meds))
        return out


def folds(by: str, runs) -> list:
    """(group, training mask, held-out mask) of each unit of ``runs`` ``by``
    a grouping (:data:`GROUPINGS`): the held-out mask is the group's runs,
    the training mask every other run."""
    by = checked_choice("by", by, tuple(GROUPINGS))
    groups = np.array([GROUPINGS[by](r) for r in runs])
    return [(g, groups != g, groups == g) for g in sorted(set(groups))]


def held_out(by: str = "model", runs=None) -> HostHeldOut:
    """Each run of ``runs`` (default :func:`table_runs`) predicted by the host
    constants fitted without its ``by`` group, beside the measured step
    alone, the null baseline and the stored calibrated hold-out."""
    by = checked_choice("by", by, tuple(GROUPINGS))
    runs = tuple(table_runs() if runs is None else runs)
    kernel = np.array([measured_tpot(r) for r in runs])
    y = np.array([r.tpot_s for r in runs])
    groups = np.array([GROUPINGS[by](r) for r in runs])
    predicted = np.full(len(runs), np.nan)
    fits = {}
    for g, train, test in folds(by, runs):
        f = fit([r for r, t in zip(runs, train) if t], kernel[train])
        fits[g] = f
        predicted[test] = f.tpot([r for r, t in zip(runs, test) if t], kernel[test])
    null = _base.same_chip_engine_tpot(y, groups, [chip_key(r.chip) for r in runs], [r.engine for r in runs])
    return HostHeldOut(by, runs, groups, y, kernel, predicted, null, _stored_calibrated(by, runs), fits)


def _stored_calibrated(by: str, runs) -> np.ndarray:
    """The calibrated step's stored held-out TPOT of each of ``runs`` by the same grouping (NaN: none stored)."""
    from speclib.calibration import held_out as _ho
    from speclib.evidence import decode_runs as _dec

    out = np.full(len(runs), np.nan)
    if by not in STORED_GROUPING:
        return out
    stored = dict(zip(_dec.decode_runs(), _ho.stored_decode_predicted(STORED_GROUPING[by])))
    return np.array([stored.get(r, np.nan) for r in runs], dtype=float)


def with_truth(runs, tpot_s) -> tuple:
    """``runs`` with their measured TPOT replaced by ``tpot_s`` (seconds): a
    synthetic set for a check of the fit."""
    return tuple(dataclasses.replace(r, tpot_s=float(t)) for r, t in zip(runs, tpot_s))


def independent_estimate() -> dict:
    """The published host time per step the repository holds, beside which
    the fitted constants stand: {"fixed_s", "per_sequence_s", "source",
    "what"} (:data:`speclib.core.overlap.HOST_FIXED_S`)."""
    from ..core import overlap as _ov

    return {"fixed_s": _ov.HOST_FIXED_S, "per_sequence_s": _ov.HOST_PER_REQUEST_S, "source": _ov.HOST_SOURCE,
            "what": "SGLang on an H100 at TP 2 (Qwen3-Omni's thinker): the host time a step spends, which an "
                    "overlap scheduler hides"}


#: The issue's decode target held out by model family: median |TPOT error|,
#: and below the null baseline on the same runs.
FAMILY_TARGET = 0.15


def targets(by_model: HostHeldOut, spec_run_median: float = float("nan")) -> list:
    """(what, target, measured, met) of the measured step plus host work
    held out by model family: decode TPOT, and the speculative runs'
    median over runs of each run's median |speed-up error| (``spec_run_median``,
    from :func:`spec_summaries`; NaN: not scored)."""
    rows = {r[0]: r for r in by_model.rows()}
    _, n, host, _, null, _ = rows["all"]
    return [("decode TPOT held out by model family: median |error| over its runs", f"\u2264 {FAMILY_TARGET:.0%}",
             f"{host:.1%} over {n} runs", bool(host <= FAMILY_TARGET)),
            ("the same, below the null baseline (median TPOT of the same chip and engine)", "below",
             f"{host:.1%} against {null:.1%}", bool(host < null)),
            ("speculative speed-ups held out by model family: median over runs of each run's median |error|",
             "\u2264 10 %", "not scored" if not np.isfinite(spec_run_median) else f"{spec_run_median:.1%}",
             None if not np.isfinite(spec_run_median) else bool(spec_run_median <= 0.10))]


# --- the speculative runs priced by the measured step plus host work ---------------------

class MeasuredSpecSteps:
    """Seconds of one speculative run's steps (:class:`speclib.evidence.spec_runs.SpecRun`)
    by the measured step plus ``host`` (a :class:`HostFit`): the target's
    step of B sequences of T positions from the tables of the run's chip and
    engine (the roofline where none, :class:`speclib.silicon.step.MeasuredStepModel`),
    the host work once a step, the prefill of arriving requests at its
    roofline (N times a plain step's for a step committing N tokens), and
    each drafter pass as the calibrated fit's features price it
    (:meth:`speclib.calibration.step_features.SpecSteps.draft_pass`: the
    drafter preset's roofline or the stand-in, with its layers'
    collectives), except an MTP module of the target's own shape, which runs
    the target's measured layer and head (:class:`speclib.silicon.step.MeasuredDrafter`'s rule).
    Nothing is fitted here but ``host``."""

    def __init__(self, run, host: HostFit, per_position_s: float = 0.0, scale: str = "layers"):
        from ..core.deployment import Deployment
        from speclib.calibration import step_features as _feat

        self.run, self.host = run, host
        self.per_position_s = float(per_position_s)
        self.scale = checked_choice("scale", scale, POSITION_SCALES)
        self.engine = _feat.engine_key(run.engine)
        self.features = _feat.SpecSteps(run)  # its layout, drafter preset and roofline draft pass
        dep = Deployment(run.model, run.chip, tp=self.features.tp, ep=run.ep, dp_attention=run.dp_attention,
                         weights=run.weights, kv_cache=run.kv_cache, rollback=_feat.ENGINE_ROLLBACK,
                         attention=_feat.RUN_ATTENTION, engine=self.engine, step_time="measured")
        self.step = dep.measured_step()
        preset = _feat._drafter_preset(run)
        self.preset = preset
        model = self.step.model
        self.own_mtp = (preset is not None and preset.kind == "mtp" and preset.target is not None
                        and preset.target.lower() in {model.name.lower(), *(x.lower() for x in model.aliases)}
                        and self.step.tables is not None and "dense" not in self.step._why)

    def measured(self) -> bool:
        """Whether every part of the target's step is read from a table."""
        return self.step.measured()

    def _target(self, B, T) -> float:
        return float(self.step.time(np.float64(B), np.float64(T), np.float64(self.run.context)))

    def _host(self, B) -> float:
        return float(self.host.host_time(self.engine, float(B)))

    def plain(self, B) -> float:
        return self._target(B, 1.0) + self._host(B) + self.features.prefill(B)

    def draft(self, B, gamma) -> float:
        """Seconds of the drafter's passes in a step drafting ``gamma`` positions."""
        run = self.run
        passes = run.passes(gamma)
        if not passes:
            return 0.0
        positions = float(gamma) / passes
        if self.own_mtp:
            S = np.float64(run.context)
            return passes * float(self.preset.layers * self.step.layer_time(np.float64(B), positions, S)
                                  + self.step.head_time(np.float64(B) * positions))
        layers = float(self.preset.layers if self.preset is not None else 1)
        moe = bool(self.preset.step.n_routed > 0) if self.preset is not None else self.features.model.moe_layers > 0
        return passes * (self.features.draft_pass(B, positions)
                         + float(self.step.draft_layers(np.float64(B), positions, int(layers), moe)))

    def per_position(self, per_position_s=None) -> float:
        """e_pos at this run's target (seconds per verified position past the
        first, per sequence): ``per_position_s`` (default this step's), given
        at L_ref attention layers and scaled to the target's,
        e L_a / L_ref (:data:`speclib.formulas.step.fixed_by_layers_expr`, as
        the calibrated step scales its e), or as it stands with ``scale="step"``."""
        e = self.per_position_s if per_position_s is None else float(per_position_s)
        if self.scale == "step":
            return e
        from speclib.calibration.step_features import layers_ref

        return float(nf.fixed_by_layers(e, float(self.step.architecture.attention_layers), layers_ref()))

    def extra(self, B, gamma, per_position_s=None) -> float:
        """Seconds of the fitted per-extra-position work in a step verifying
        ``gamma``'s width: e_pos B (T - 1) (:func:`~speclib.formulas.numpy_functions.engine_step`
        at that term alone); 0 where e_pos is 0 (the default)."""
        z = 0.0
        return float(nf.engine_step(z, z, z, z, self.per_position(per_position_s), float(B), self.run.width(gamma),
                                    z, z, z, z))

    def spec(self, B, gamma, committed=None) -> float:
        run = self.run
        n = run.committed(gamma, B) if committed is None else committed
        return (self._target(B, run.width(gamma)) + self.draft(B, gamma) + self._host(B)
                + n * self.features.prefill(B) + self.extra(B, gamma))


def _fitted_alpha(steps: MeasuredSpecSteps) -> float:
    """The acceptance that best explains the run's smallest batch under the
    measured step plus host work (:func:`speclib.calibration.step_fit.fit_alpha`'s
    grid and score)."""
    from ..core import acceptance as _acc
    from speclib.calibration.step_fit import ALPHA_GRID, _by_batch, best_alpha
    from speclib.evidence import spec_runs as _spec

    run = steps.run
    b = min(_by_batch(run))
    gv = [(g, v) for g, v in _by_batch(run)[b] if (b, g) not in _spec.run_inconsistent(run)]
    g = np.array([x for x, _ in gv], dtype=float)
    n = _acc.committed_numeric(ALPHA_GRID[:, None], g[None, :])
    t = np.array([[steps.spec(b, x, committed=float(nn)) for x, nn in zip(g, row)] for row in n])
    return best_alpha(run, gv, n, t, steps.plain(b))


def predict_spec_run(run, host: HostFit, per_position_s: float = 0.0, scale: str = "layers"):
    """``run``'s points (a :class:`speclib.calibration.step_predictions.RunPrediction`)
    priced by the measured step plus ``host`` (and, where ``per_position_s``
    is not 0, the per-extra-position term, :meth:`MeasuredSpecSteps.extra`),
    scored as the calibrated step's are
    (:func:`speclib.calibration.step_predictions.predict_run`): a run whose
    acceptance is fitted takes it at its smallest batch, whose points are
    not scored, nor the points its data contradict."""
    from speclib.calibration.step_fit import _by_batch
    from speclib.calibration.step_predictions import RunPrediction
    from speclib.evidence import spec_runs as _spec

    steps = MeasuredSpecSteps(run, host, per_position_s, scale)
    fitted_at = None
    if _spec.alpha_fitted(run):
        run = dataclasses.replace(run, alpha=_fitted_alpha(steps))
        steps.run = run
        fitted_at = min(run.batches)
    rows, rates = [], {}
    for b, gv in _by_batch(run).items():
        rate = {g: run.committed(g, b) / steps.spec(b, g) for g, _ in gv}
        rates[b] = rate
        if run.quantity == "speedup":
            plain = 1.0 / steps.plain(b)
            rows += [(b, g, v, rate[g] / plain) for g, v in gv]
        else:
            g0, v0 = gv[0]
            rows += [(b, g, v / v0, rate[g] / rate[g0]) for g, v in gv[1:]]
    bad = _spec.run_inconsistent(run)
    best = {}
    for b, gv in _by_batch(run).items():
        if len(gv) > 1 and b != fitted_at:
            best[b] = (max(gv, key=lambda t: t[1])[0], max(rates[b], key=rates[b].get))
    batch = np.array([r[0] for r in rows])
    gamma = np.array([r[1] for r in rows])
    nan = np.full(len(rows), np.nan)
    return RunPrediction(run, batch, gamma, np.array([r[2] for r in rows]), np.array([r[3] for r in rows]), best,
                         np.array([b != fitted_at and (b, g) not in bad for b, g in zip(batch, gamma)], dtype=bool),
                         nan, nan)


def spec_held_out(by: str = "model", runs=None, ids=None):
    """The speculative runs the calibrated step is held out on
    (:func:`speclib.calibration.held_out.stored_held_out`), each priced by
    the measured step plus the host constants fitted on the decode runs
    (:func:`table_runs`) outside its ``by`` group (``"model"``: its family;
    ``"chip"``), as a :class:`speclib.calibration.held_out.HeldOut` whose
    decode predictions are this module's :func:`held_out` of the same
    grouping (NaN for a decode run on a chip without tables), so that
    :func:`speclib.calibration.held_out.skill_of` sets it beside the null
    baselines on the same points. ``runs``: the decode runs the host work is
    fitted on (default :func:`table_runs`); ``ids``: only these speculative
    runs (default: every one the stored hold-out has). Returns (that
    HeldOut, {run id: whether every part of its target's step is read from
    a table})."""
    held, from_tables, _ = _spec_held_out(by, runs, ids, None)
    return held, from_tables


def spec_held_out_per_position(by: str = "model", runs=None, ids=None, train_ids=None, scale: str = "layers",
                               spec=None):
    """As :func:`spec_held_out`, with the per-extra-position term e_pos
    (:meth:`MeasuredSpecSteps.extra`, scaled ``scale``) fitted, nested, on
    the speculative runs of ``train_ids`` (default: ``ids``) outside the
    held-out group, each priced with the host constants of the same fold
    (:func:`fit_per_position`): neither the group's decode runs nor its
    speculative runs inform its prediction. ``spec``: the speculative runs
    (default :func:`speclib.evidence.spec_runs.spec_runs`; a check passes a
    changed copy). Returns (HeldOut, {run id: from tables}, {group: (e_pos,
    training runs, training points)})."""
    scale = checked_choice("scale", scale, POSITION_SCALES)
    return _spec_held_out(by, runs, ids, scale, train_ids, spec)


def _spec_held_out(by, runs, ids, scale, train_ids=None, spec=None):
    from speclib.calibration import held_out as _ho
    from speclib.evidence import decode_runs as _dec
    from speclib.evidence import spec_runs as _spec

    by = checked_choice("by", by, tuple(STORED_GROUPING))
    stored = _ho.stored_held_out(by)
    ids = {p.run.id for p in stored.runs} if ids is None else set(ids)
    train_ids = ids if train_ids is None else set(train_ids)
    runs = tuple(table_runs() if runs is None else runs)
    unit = GROUPINGS[by]
    every = tuple(_spec.spec_runs() if spec is None else spec)
    fits, positions, preds, from_tables = {}, {}, [], {}
    for r in every:
        if r.id not in ids:
            continue
        g = _ho.group_of(r, by)
        if g not in fits:
            fits[g] = fit([d for d in runs if unit(d) != g])
            if scale is not None:
                train = [s for s in every if s.id in train_ids and _ho.group_of(s, by) != g]
                positions[g] = fit_per_position(train, fits[g], scale)
        e = positions[g][0] if scale is not None else 0.0
        p = predict_spec_run(r, fits[g], e, scale or "layers")
        preds.append(p)
        from_tables[r.id] = MeasuredSpecSteps(r, fits[g]).measured()
    dec = held_out(by, runs)
    at = dict(zip(dec.runs, dec.predicted))
    decode = np.array([at.get(r, np.nan) for r in _dec.decode_runs()], dtype=float)
    held = dataclasses.replace(stored, runs=tuple(preds), decode_predicted=decode, terms=(), forms={}, by=by)
    return held, from_tables, positions


# --- the per-extra-position term fitted on speculative runs ------------------------------

#: The largest e_pos searched (seconds per extra position per sequence, at
#: L_ref attention layers or per step): 25 times the calibrated step's e.
PER_POSITION_MAX_S = 3e-3

_PARTS: dict = {}


def _parts(run, scale: str) -> dict:
    """What of ``run``'s priced steps neither the host work nor e_pos nor
    the acceptance changes (:class:`MeasuredSpecSteps` at no host work):
    {batch: (plain kernels + prefill, prefill, host engine key)}, and per
    (batch, gamma): (target step of its width + drafter passes, e_pos's
    seconds per second of e_pos). Computed once a run and scale."""
    key = (run.id, scale, run.model, run.chip, tuple((int(b), int(g)) for b, g, _ in run.points))
    if key not in _PARTS:
        from speclib.calibration.step_fit import _by_batch

        steps = MeasuredSpecSteps(run, HostFit({}, 0.0), 0.0, scale)
        zero = HostFit({steps.engine: 0.0}, 0.0)
        steps.host = zero
        batches, points = {}, {}
        for b, gv in _by_batch(run).items():
            batches[b] = (steps.plain(b), float(steps.features.prefill(b)))
            for g, _ in gv:
                points[b, g] = (steps._target(b, run.width(g)) + steps.draft(b, g), steps.extra(b, g, 1.0))
        _PARTS[key] = {"engine": steps.engine, "batches": batches, "points": points}
    return _PARTS[key]


def _spec_errors(run, host: HostFit, e: float, scale: str) -> np.ndarray:
    """Relative errors of ``run``'s scored points priced with host work
    ``host`` and e_pos ``e``, by the route :func:`predict_spec_run` takes
    (acceptance fitted at the smallest batch where the run's is, under the
    same e_pos), from :func:`_parts`: fast enough to search e_pos over."""
    from ..core import acceptance as _acc
    from speclib.calibration.step_fit import ALPHA_GRID, _by_batch, best_alpha
    from speclib.evidence import spec_runs as _spec

    parts = _parts(run, scale)
    hb = {b: float(host.host_time(parts["engine"], float(b))) for b in parts["batches"]}

    def t(b, g, n):
        k, x = parts["points"][b, g]
        return k + hb[b] + e * x + n * parts["batches"][b][1]

    fitted_at = None
    if _spec.alpha_fitted(run):
        b = min(_by_batch(run))
        gv = [(g, v) for g, v in _by_batch(run)[b] if (b, g) not in _spec.run_inconsistent(run)]
        g = np.array([x for x, _ in gv], dtype=float)
        n = _acc.committed_numeric(ALPHA_GRID[:, None], g[None, :])
        k = np.array([parts["points"][b, x][0] for x, _ in gv])
        xe = np.array([parts["points"][b, x][1] for x, _ in gv])
        tt = k[None, :] + hb[b] + e * xe[None, :] + n * parts["batches"][b][1]
        run = dataclasses.replace(run, alpha=best_alpha(run, gv, n, tt, parts["batches"][b][0] + hb[b]))
        fitted_at = min(run.batches)
    bad = _spec.run_inconsistent(run)
    out = []
    for b, gv in _by_batch(run).items():
        rate = {g: run.committed(g, b) / t(b, g, run.committed(g, b)) for g, _ in gv}
        if run.quantity == "speedup":
            rows = [(g, v, rate[g] * (parts["batches"][b][0] + hb[b])) for g, v in gv]
        else:
            g0, v0 = gv[0]
            rows = [(g, v / v0, rate[g] / rate[g0]) for g, v in gv[1:]]
        out += [q / v - 1.0 for g, v, q in rows if b != fitted_at and (b, g) not in bad]
    return np.array(out, dtype=float)


def per_position_loss(runs, host: HostFit, e: float, scale: str = "layers") -> float:
    """Sum over ``runs``' scored points of the squared relative speed-up error at e_pos ``e``."""
    return float(sum(float((_spec_errors(r, host, e, scale) ** 2).sum()) for r in runs))


def fit_per_position(runs, host: HostFit, scale: str = "layers", upper: float = PER_POSITION_MAX_S) -> tuple:
    """e_pos fitted on the speculative ``runs`` under ``host``: the e >= 0
    (at most ``upper``) that minimises :func:`per_position_loss` (least
    squares on the relative speed-up error, each run's acceptance refitted
    under e where it is fitted): a grid of 61 values, then a golden-section
    search between the best one's neighbours. The loss is piecewise in e
    (an acceptance refitted on :data:`~speclib.calibration.step_fit.ALPHA_GRID`
    jumps), so a coarser grid can land on another piece: with 31 values the
    Qwen and Kimi folds by family find 131 us where 61 find 139. Returns
    (e_pos, runs, scored points)."""
    runs = list(runs)
    if not runs:
        raise ValueError("fit_per_position needs at least one speculative run")
    grid = np.linspace(0.0, upper, 61)
    loss = [per_position_loss(runs, host, x, scale) for x in grid]
    i = int(np.argmin(loss))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    r = (np.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - r * (hi - lo), lo + r * (hi - lo)
    fc, fd = per_position_loss(runs, host, c, scale), per_position_loss(runs, host, d, scale)
    for _ in range(30):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - r * (hi - lo)
            fc = per_position_loss(runs, host, c, scale)
        else:
            lo, c, fc = c, d, fd
            d = lo + r * (hi - lo)
            fd = per_position_loss(runs, host, d, scale)
    best = min([(loss[i], grid[i]), (fc, c), (fd, d)])[1]
    points = sum(len(_spec_errors(x, host, best, scale)) for x in runs)
    return float(best), len(runs), int(points)


def per_position_estimates() -> dict:
    """What e_pos is held against, seconds per extra position per sequence
    at L_ref attention layers: the calibrated step's e
    (:func:`speclib.core.calibrated.shipped_calibration`, fitted on every
    speculative run, in-sample), the range NVIDIA's AIConfigurator's
    measured verify-against-decode MLA block and the sampler's published
    per-row cost give it (:func:`speclib.calibration.step_report.peer_verify_estimate`),
    and the sampler alone (:data:`speclib.calibration.step_report.SAMPLER_S`,
    seconds a row, once a step)."""
    from ..core.calibrated import shipped_calibration
    from speclib.calibration import step_report as _rep
    from speclib.calibration.step_features import layers_ref

    cal = shipped_calibration()
    peer = _rep.peer_verify_estimate()
    return {"calibrated_s": float(cal.per_position_s), "calibrated_layers_ref": float(cal.fixed_layers_ref or 0.0),
            "layers_ref": layers_ref(), "peer_lo_s": peer["per_position_lo_s"], "peer_hi_s": peer["per_position_hi_s"],
            "peer_mla_median_us": peer["mla_median_us"], "sampler_s": tuple(_rep.SAMPLER_S)}


def spec_summaries(by: str = "model", held=None, from_tables=None) -> list:
    """(subset, runs, points, speed-up median |error|, median over runs of
    each run's median |error|, the same two of the calibrated step's stored
    hold-out ``by`` the grouping on the same runs) for every run, and for the
    runs whose target step is read wholly from tables."""
    from speclib.calibration import held_out as _ho

    if held is None:
        held, from_tables = spec_held_out(by)
    stored = {p.run.id: p for p in _ho.stored_held_out(by).runs}
    out = []
    for name, keep in (("every run", lambda p: True), ("target step from tables", lambda p: from_tables[p.run.id])):
        mine = tuple(p for p in held.runs if keep(p))
        theirs = tuple(stored[p.run.id] for p in mine)
        a = dataclasses.replace(held, runs=mine).summary()
        b = dataclasses.replace(held, runs=theirs).summary()
        out.append((name, a["runs"], int(sum(int(p.scored.sum()) for p in mine)), a["median_abs_error"],
                    a["run_median_abs_error"], b["median_abs_error"], b["run_median_abs_error"]))
    return out


#: What :func:`peer_decode_points` is called where the peers' side-by-side prints it.
PEER_LABEL = "speclib, measured step + host work held out by chip"


def peer_decode_points(data=None) -> list:
    """:func:`speclib.evidence.peer.decode_points` of a peer's file
    (``data``: its parsed file, or the default peer's) with the measured
    step plus the host work fitted without each run's chip
    (:func:`held_out` by chip) in place of the peer's TPOT
    (:func:`speclib.evidence.peer.priced_decode_points`): the one speclib
    step that, like the peers, prices each op from measured tables, on the
    same runs. A run on a chip without tables raises."""
    from speclib.evidence import peer as _peer

    held = held_out("chip")
    by_run = dict(zip(held.runs, held.predicted))

    def tpot(runs, idx):
        missing = [r for r in runs if r not in by_run]
        if missing:
            raise RuntimeError(f"peer_decode_points: no measured step for {missing[0].chip} {missing[0].engine} "
                               "(a chip without tables)")
        return [by_run[r] for r in runs]

    return _peer.priced_decode_points(tpot, data)
