"""The engine step fitted on measured decoding *and* measured speculative
runs: the constants of a :class:`~speclib.calibration.step_features.Form`,
found by non-negative least squares on relative error, exported as a
:class:`~speclib.core.calibrated.Calibration`.

* a decode run (:mod:`speclib.evidence.decode_runs`): predicted TPOT /
  measured - 1, its step and the prefill its closed loop carries;
* a speculative run with a speed-up (:mod:`speclib.evidence.spec_runs`):
  N t_plain / t_spec / measured - 1, linear in the constants once the
  denominator is held at the last iterate (iteratively reweighted);
* a sweep without a run without speculation: each draft length's
  throughput relative to the smallest at the same batch.

Where a run's source states its prompt and output lengths and the prefill
runs on the decoding GPUs, its steps carry the arriving requests' prefill
as the decode runs' do (a speculative step N times a plain step's, as it
commits N tokens per sequence), since the measured speed-up includes it
(:data:`speclib.formulas.workload.served_speedup_expr`). The collectives'
time is priced, not fitted (:data:`speclib.calibration.step_features.FIXED_FEATURES`).

Each speculative run weighs as much as any other however many points it
has, and the speculative runs together weigh as much as the decode runs. A
chip's factor and a chip's engine's fixed time are the decode runs' to set;
a chip or an engine no decode run measured takes its vendor's median.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core import acceptance as _acc
from ..core import calibrated as _cal
from .. import presets as _presets
from ..presets import hardware as hardware_preset
from ..presets import resolve
from speclib.evidence import decode_runs as _dec
from speclib.evidence import spec_runs as _spec
from speclib.evidence.spec_runs import SpecRun
from speclib.calibration import step_features as _feat
from speclib.calibration.step_features import BY_VENDOR, DEFAULT_TERMS, FIXED_FEATURES, TERMS, Form, as_form


def _by_batch(run: SpecRun) -> dict:
    out = {}
    for b, g, v in run.points:
        out.setdefault(b, []).append((g, v))
    return {b: sorted(gv) for b, gv in sorted(out.items())}


_ROWS: dict = {}


def _form_key(run: SpecRun, form: Form) -> tuple:
    return (run.id, run.alpha, _feat.DRAFTER_PRICING, _feat.DRAFT_PASS_BY_ENGINE, _feat.DRAFTER_LAYER_COSTS,
            _feat.EAGER_FACTOR, form.fixed)


def _rows(run: SpecRun, form: Form = None) -> list:
    """The fit's rows of ``run`` (computed once per run, acceptance and
    form): (kind, batch, gamma, measured, numerator features, denominator
    features, committed tokens (ratio for a sweep), reference gamma)."""
    form = form or Form()
    key = _form_key(run, form)
    if key not in _ROWS:
        steps = _feat.SpecSteps(run, form)
        rows = []
        for b, gv in _by_batch(run).items():
            if run.quantity == "speedup":
                for g, v in gv:
                    if (b, g) not in _spec.run_inconsistent(run):
                        rows.append(("speedup", b, g, v, steps.plain(b), steps.spec(b, g), run.committed(g, b), None))
            else:
                g0, v0 = gv[0]
                ref = steps.spec(b, g0)
                for g, v in gv[1:]:
                    rows.append(("ratio", b, g, v / v0, ref, steps.spec(b, g), run.committed(g, b) / run.committed(g0, b),
                                 g0))
        _ROWS[key] = rows
    return _ROWS[key]


@lru_cache(maxsize=None)
def _problem(fixed: str = "chip"):
    """The decode rows (features as dicts, computed once per fixed-time
    scaling), their measured TPOT (s) and the feature names."""
    runs = _dec.decode_runs()
    form = Form(DEFAULT_TERMS, fixed)
    feats = [_feat.decode_features(r, form) for r in runs]
    y = np.array([r.tpot_s for r in runs])
    names = sorted({k for f in feats for k in f} | {k for f in (Form(DEFAULT_TERMS, s) for s in _feat.FIXED_SCALINGS)
                                                   for run in _spec.spec_runs() for row in _rows(run, f)
                                                   for d in row[4:6] for k in d}, key=str)
    return feats, y, runs, names


def decode_rows() -> tuple:
    """(the decode runs a fit uses, in order, their measured TPOT in seconds)."""
    _, y, runs, _ = _problem()
    return runs, y


def _names() -> list:
    return _problem()[3]


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


#: Engines with no decode runs, and the engine whose fixed time they share
#: (every engine of :data:`speclib.core.calibrated.ENGINES` has its own).
SHARED_ENGINES: dict = {}
#: Each calibrated chip's vendor and generation (for a chip the fit did not see).
_VENDOR = {_feat.chip_key(h.name): h.vendor for h in _presets._HARDWARE}
_GENERATION = {_feat.chip_key(h.name): h.generation for h in _presets._HARDWARE}


@dataclass(frozen=True)
class Fit:
    """Fitted constants by feature name, the form fitted and what it was fitted on."""

    theta: dict
    terms: tuple
    runs: tuple  # speculative run ids fitted
    workloads: tuple  # decode workloads fitted
    alphas: dict = dataclasses.field(default_factory=dict)  # acceptances fitted to a run's smallest batch
    fixed: str = "chip"  # how the fixed time scales (Form.fixed)
    pooled: tuple = ()  # terms fitted as one constant for every chip (Form.pooled)
    imputed: tuple = ()  # factors and fixed times no decode run set: their vendor's median
    decode_models: tuple = ()  # the models of the decode runs fitted

    @property
    def form(self) -> Form:
        return Form(tuple(t for t in self.terms if t in TERMS), self.fixed, self.pooled)

    def time(self, feat: dict) -> float:
        return sum(self.theta.get(k, self._fallback(k)) * v for k, v in feat.items())

    def _fallback(self, k):
        if k in FIXED_FEATURES:
            return 1.0
        if isinstance(k, tuple) and k[0] in self.theta:  # a term with one constant for every chip
            return self.theta[k[0]]
        if isinstance(k, tuple) and k[0] == "per_position":  # a calibration with one e for every chip
            return self.theta.get("per_position", 0.0)
        if isinstance(k, tuple) and k[0] == "fixed":  # an engine or chip not fitted: the vendor's, else the chip's vLLM
            vendor = self.theta.get(("vendor_fixed", _VENDOR.get(k[1], ""), k[2]))
            return vendor if vendor is not None else self.theta.get(("fixed", k[1], "vLLM"), 0.0)
        if isinstance(k, tuple) and k[0] == "factor":
            return self.theta.get(("vendor_factor", _VENDOR.get(k[1], "")), 1.0)
        if isinstance(k, tuple) and k[0] == "extra_flops":  # a vendor without its own: the larger
            return max((v for n, v in self.theta.items() if _term(n) == "extra_flops"), default=0.0)
        if isinstance(k, tuple) and k[0] in ("moe_fixed", "attention_factor", "token_layer"):  # a vendor without its own: the larger
            return max((v for n, v in self.theta.items() if _term(n) == k[0]), default=0.0)
        if k == "prefill" and "prefill" not in self.terms:  # not fitted: at its roofline
            return 1.0
        return 0.0

    @classmethod
    def of(cls, calibration: _cal.Calibration) -> "Fit":
        """A calibration's constants as a fit (to price the runs with)."""
        theta = {("factor", c): v for c, v in calibration.roofline_factor.items()}
        theta.update({("fixed", c, e): v for c, by in calibration.fixed_s.items() for e, v in by.items()})
        theta.update({"per_sequence": calibration.per_sequence_s, "compute": calibration.compute_factor,
                      "per_position": calibration.per_position_s, "per_draft_pass": calibration.per_draft_pass_s,
                      "prefill": calibration.prefill_factor})
        theta.update({("per_position", v): e for v, e in calibration.per_position_by_vendor.items()})
        theta.update({("extra_flops", v): x for v, x in calibration.extra_flops_by_vendor.items()})
        theta.update({("moe_fixed", v): x for v, x in calibration.moe_layer_s.items()})
        theta.update({("attention_factor", v): x for v, x in calibration.attention_factor_by_vendor.items()})
        theta.update({("token_layer", v): x for v, x in calibration.token_layer_by_vendor.items()})
        theta.update({("vendor_factor", v): x for v, x in calibration.vendor_factor.items()})
        theta.update({("vendor_fixed", v, e): x for v, by in calibration.vendor_fixed_s.items() for e, x in by.items()})
        return cls(theta=theta, terms=TERMS, runs=(), workloads=calibration.fitted_on,
                   fixed="layers" if calibration.fixed_layers_ref else "chip")

    def calibration(self) -> _cal.Calibration:
        """These constants as a :class:`~speclib.core.calibrated.Calibration`,
        with each vendor's median chip for chips the fit did not see and
        what the fit has seen."""
        factor = {k[1]: v for k, v in self.theta.items() if _term(k) == "factor" and k not in self.imputed}
        fixed = {}
        for k, v in self.theta.items():
            if _term(k) == "fixed" and k not in self.imputed and k[1] in factor:
                fixed.setdefault(k[1], {})[k[2]] = v
        by_vendor = {k[1]: v for k, v in self.theta.items() if isinstance(k, tuple) and k[0] == "per_position"}
        # a chip of no fitted vendor takes the larger e: the step that speculates less
        per_position = self.theta.get("per_position", max(by_vendor.values(), default=0.0))
        extra = {k[1]: v for k, v in self.theta.items() if isinstance(k, tuple) and k[0] == "extra_flops"}
        if "extra_flops" in self.theta:  # one for every chip: the same for each vendor
            extra = {vendor: self.theta["extra_flops"] for vendor in sorted(set(_VENDOR.values()))}
        moe = {k[1]: v for k, v in self.theta.items() if isinstance(k, tuple) and k[0] == "moe_fixed"}
        token = {k[1]: v for k, v in self.theta.items() if isinstance(k, tuple) and k[0] == "token_layer"}
        if "token_layer" in self.theta:  # one for every chip: the same for each vendor
            token = {vendor: self.theta["token_layer"] for vendor in sorted(set(_VENDOR.values()))}
        attention = {k[1]: v for k, v in self.theta.items() if isinstance(k, tuple) and k[0] == "attention_factor"}
        vendor_factor, vendor_fixed = _vendor_medians(factor, fixed)
        runs = [_spec.spec_run(r) for r in self.runs]
        seen = {}
        if runs:
            models = [resolve(r.model, None)[0] for r in runs]
            seen = {"active_params": [float(min(m.active_params() for m in models)),
                                      float(max(m.active_params() for m in models))],
                    "vendors": sorted({hardware_preset(r.chip).vendor for r in runs}),
                    "engines": sorted({_cal_engine(r.engine) for r in runs}),
                    "batch": [1, int(max(max(r.batches) for r in runs))]}
        decode = " and ".join(self.decode_models) or "no"
        return _cal.Calibration(
            roofline_factor=factor, fixed_s=fixed, per_sequence_s=self.theta.get("per_sequence", 0.0),
            compute_factor=self.theta.get("compute", 0.0), per_position_s=per_position,
            per_position_by_vendor=by_vendor, extra_flops_by_vendor=extra, moe_layer_s=moe,
            attention_factor_by_vendor=attention, token_layer_by_vendor=token,
            fixed_layers_ref=_feat.layers_ref() if self.fixed == "layers" else 0.0,
            shared_engines=dict(SHARED_ENGINES), vendor_factor=vendor_factor, vendor_fixed_s=vendor_fixed, seen=seen,
            per_draft_pass_s=self.theta.get("per_draft_pass", 0.0), prefill_factor=self.theta.get("prefill", 1.0),
            model=f"{decode} decoding, and measured speculative runs", fitted_on=self.workloads,
            batch_range=(1, int(max(r.concurrency for r in _dec.decode_runs()))),
            source=f"speclib.calibration.step_fit.fit on the decoding runs of {decode} (InferenceMAX, InferenceX) and "
                   f"{len(self.runs)} measured speculative runs (data/engine-speculation, InferenceX), form: "
                   f"{self.form.label}")


def roofline_fit() -> Fit:
    """The roofline as a fit: every chip at its datasheet speed, no fixed,
    per-sequence or per-position time (to price the runs as the paper's
    whole step would, each run's acceptance fitted where it is unknown)."""
    return Fit(theta={}, terms=("factor",), runs=(), workloads=())


def _cal_engine(engine: str) -> str:
    """A run's engine as :data:`speclib.core.calibrated.ENGINES` names it."""
    return {"TensorRT-LLM": "TRT"}.get(engine, engine)


def _vendor_medians(factor: dict, fixed: dict) -> tuple:
    """({vendor: median mu}, {vendor: {engine: median a}}) over the fitted chips."""
    vf, va = {}, {}
    for chip, mu in factor.items():
        vf.setdefault(_VENDOR.get(chip, ""), []).append(mu)
    for chip, by in fixed.items():
        for engine, a in by.items():
            va.setdefault(_VENDOR.get(chip, ""), {}).setdefault(engine, []).append(a)
    return ({v: float(np.median(x)) for v, x in vf.items() if v},
            {v: {e: float(np.median(x)) for e, x in by.items()} for v, by in va.items() if v})


_MATRICES: dict = {}


def _decode_matrix(fixed: str = "chip"):
    """The decode runs' features over every feature name (computed once per scaling)."""
    feats, *_ = _problem(fixed)
    names = _names()
    key = ("decode", fixed, tuple(names))
    if key not in _MATRICES:
        index = {n: i for i, n in enumerate(names)}
        _MATRICES[key] = np.stack([_vec(f, index) for f in feats])
    return _MATRICES[key]


def _spec_matrix(run: SpecRun, form: Form):
    """``run``'s fit rows over every feature name, as (P, Q): each row's
    committed tokens times its numerator's features, and its measured value
    times its denominator's (computed once per run, acceptance and form)."""
    key = _form_key(run, form)
    if key not in _MATRICES:
        names = _names()
        index = {n: i for i, n in enumerate(names)}
        rows = _rows(run, form)
        P = np.array([n * _vec(num, index) for _, _, _, _, num, _, n, _ in rows]).reshape(-1, len(names))
        Q = np.array([value * _vec(den, index) for _, _, _, value, _, den, _, _ in rows]).reshape(-1, len(names))
        _MATRICES[key] = (P, Q)
    return _MATRICES[key]


def decode_mask(*, models=None, workloads=None, chips=None, sources=None) -> np.ndarray:
    """Which decode runs are of ``models`` (families), ``workloads``, ``chips``
    and ``sources`` (None: any)."""
    runs = _problem()[2]
    keep = np.ones(len(runs), dtype=bool)
    for values, of in ((models, lambda r: r.family), (workloads, lambda r: r.workload),
                       (chips, lambda r: _feat.chip_key(r.chip)), (sources, lambda r: r.source)):
        if values is not None:
            keep &= np.array([of(r) in values for r in runs], dtype=bool)
    return keep


def fit(terms=DEFAULT_TERMS, *, exclude_runs=(), workloads=None, run_weights=None, decode_weights=None,
        iterations: int = 8, alphas=None, decode: bool = True) -> Fit:
    """Fit the constants of ``terms`` (a tuple of :data:`TERMS` or a
    :class:`Form`) on every decode run (of ``workloads``; weighted by
    ``decode_weights``, 0 leaving a run out; none with ``decode=False``)
    and every speculative run not in ``exclude_runs`` (see the module notes).
    ``run_weights``/``decode_weights``: multiplicities (the bootstrap's).
    Without decode runs nothing sets the chips' factors, so they stay at the
    datasheet's 1 and the speculative runs fit the fixed times too: a
    speed-up fixes every term only relative to the roofline, which is all
    the prediction of another speed-up needs."""
    form = as_form(terms)
    terms = form.terms
    dec_feats, dec_y, dec_runs, _ = _problem(form.fixed)
    all_names = _names()
    names, cols = _parameters(form, all_names)
    fixed_cols = [i for i, n in enumerate(all_names) if n in FIXED_FEATURES]
    prefill_col = [i for i, n in enumerate(all_names) if n == "prefill"]
    factor_all = np.array([_term(n) == "factor" for n in all_names], dtype=bool)
    dec_wl = np.array([r.workload for r in dec_runs])
    keep_dec = np.ones(len(dec_y), dtype=bool) if workloads is None else np.isin(dec_wl, list(workloads))
    dw = np.ones(len(dec_y)) if decode_weights is None else np.asarray(decode_weights, dtype=float)
    keep_dec &= (dw > 0) & bool(decode)
    dw = dw * _class_balance(dec_runs, keep_dec)
    X_all = _decode_matrix(form.fixed)
    offset = X_all[:, fixed_cols].sum(axis=1)
    if "prefill" not in terms:  # the prefill at its roofline, not fitted
        offset = offset + X_all[:, prefill_col].sum(axis=1)
    if "factor" not in terms:
        offset = offset + X_all[:, factor_all].sum(axis=1)
    Xd = X_all[keep_dec] @ cols
    yd, od, wd = dec_y[keep_dec], offset[keep_dec], np.sqrt(dw[keep_dec])
    alphas = dict(alphas or {})
    runs = [r for r in _spec.spec_runs() if r.id not in exclude_runs and (run_weights is None or run_weights.get(r.id, 0))]
    if any(_spec.alpha_fitted(r) and r.id not in alphas for r in runs):
        # first without the runs whose acceptance is unknown, then each one's
        # acceptance from its smallest batch, then everything
        first = fit(form, exclude_runs=tuple(exclude_runs) + tuple(r.id for r in runs if _spec.alpha_fitted(r)),
                    workloads=workloads, run_weights=run_weights, decode_weights=decode_weights,
                    iterations=iterations, alphas=alphas, decode=decode)
        alphas.update({r.id: fit_alpha(first, r) for r in runs if _spec.alpha_fitted(r) and r.id not in alphas})
    runs = [dataclasses.replace(r, alpha=alphas[r.id]) if r.id in alphas else r for r in runs]
    used = [(run, _spec_matrix(run, form)) for run in runs]
    used = [(run, pq) for run, pq in used if len(pq[0])]
    n_spec_rows = sum(len(pq[0]) for _, pq in used)
    balance = np.sqrt(keep_dec.sum() / max(n_spec_rows, 1)) if keep_dec.any() else 1.0
    mean_rows = n_spec_rows / max(len(used), 1)
    P = np.concatenate([pq[0] for _, pq in used]) if used else np.zeros((0, len(all_names)))
    Q = np.concatenate([pq[1] for _, pq in used]) if used else np.zeros((0, len(all_names)))
    W = np.concatenate([np.full(len(pq[0]), balance * np.sqrt((1.0 if run_weights is None else run_weights[run.id])
                                                               * mean_rows / len(pq[0]))) for run, pq in used]) \
        if used else np.zeros(0)
    offsets = fixed_cols + ([] if "prefill" in terms else prefill_col)
    O = (P - Q)[:, offsets].sum(axis=1)  # what the rows' unfitted features add
    Q_off = Q[:, offsets].sum(axis=1)
    P, Q = P @ cols, Q @ cols
    factor = np.array([_term(n) == "factor" for n in names], dtype=bool)
    imputed = ()
    if keep_dec.any():
        Ad, bd = Xd * (wd / yd)[:, None], wd * (1 - od / yd)
        theta = _nnls(Ad, bd)
        # The chip's factor and the engine's fixed time are the decode runs' to
        # set (a property of the chip and the engine, measured on every chip);
        # the speculative runs fit the rest with them held. A chip (or an
        # engine on it) with no decode run takes its vendor's median, as the
        # calibration prices a chip it has not seen.
        held = np.array([_term(n) in ("factor", "fixed") for n in names], dtype=bool)
        seen = np.abs(Xd).sum(axis=0) > 0
        theta, imputed = _impute(names, theta, held & ~seen)
        Ad = Ad * seen  # the imputed columns are held: they take no part in the decode rows
    else:  # the chips at the datasheet's speed, everything else from the speculative runs
        Ad, bd = np.zeros((0, len(names))), np.zeros(0)
        theta, held = factor.astype(float), factor
    if len(P):
        for _ in range(iterations):
            scale = np.maximum(Q @ theta + Q_off, 1e-9)
            A = np.vstack([Ad, (P - Q) * (W / scale)[:, None]])
            b = np.concatenate([bd, -O * W / scale]) - A[:, held] @ theta[held]
            theta = theta.copy()
            theta[~held] = _nnls(A[:, ~held], b)
    if not keep_dec.any():  # a fixed time no speculative run touches: its vendor's median, as above
        touched = (np.abs(P).sum(axis=0) + np.abs(Q).sum(axis=0)) > 0
        theta, imputed = _impute(names, theta, np.array([_term(n) == "fixed" for n in names]) & ~touched)
    models = tuple(sorted({r.family for r, k in zip(dec_runs, keep_dec) if k}))
    return Fit(theta={n: float(v) for n, v in zip(names, theta)}, terms=terms,
               runs=tuple(r.id for r, _ in used), alphas=alphas,
               workloads=tuple(sorted(set(dec_wl[keep_dec]))), fixed=form.fixed, pooled=form.pooled,
               imputed=imputed, decode_models=models)


def _class_balance(runs, keep) -> np.ndarray:
    """Weights that give each model family's decode runs (of those kept) the
    same total weight, whatever the number of runs measured of it: each class
    of model is as much evidence as another."""
    families = np.array([r.family for r in runs])
    out = np.ones(len(runs))
    kept = families[keep]
    names = sorted(set(kept))
    for fam in names:
        mine = families == fam
        out[mine] = keep.sum() / (len(names) * max((mine & keep).sum(), 1))
    return out


def _parameters(form: Form, all_names) -> tuple:
    """(the constants ``form`` fits, the 0/1 matrix that maps every feature
    onto them): a feature of a term the form lacks maps to none, the
    vendors' features of a pooled term to one constant."""
    names = []
    for n in all_names:
        if _term(n) in form.terms:
            key = _term(n) if _term(n) in form.pooled else n
            if key not in names:
                names.append(key)
    index = {n: i for i, n in enumerate(names)}
    cols = np.zeros((len(all_names), len(names)))
    for i, n in enumerate(all_names):
        if _term(n) in form.terms:
            cols[i, index[_term(n) if _term(n) in form.pooled else n]] = 1.0
    return names, cols


def _impute(names, theta, missing):
    """``theta`` with each factor or fixed time that no decode run sets (a
    chip, or an engine on a chip, never measured decoding) at the median of
    the ones set for chips of the same generation, else of the same vendor
    (the same engine; else any vendor): (theta, the names imputed)."""
    theta = theta.copy()
    have = [(n, v) for n, v, m in zip(names, theta, missing) if not m and _term(n) in ("factor", "fixed")]
    for i in np.flatnonzero(missing):
        n = names[i]
        vendor, generation = _VENDOR.get(n[1], ""), _GENERATION.get(n[1], "")
        same = [v for m, v in have if m[0] == n[0] and m[2:] == n[2:] and _GENERATION.get(m[1]) == generation]
        same = same or [v for m, v in have if m[0] == n[0] and m[2:] == n[2:] and _VENDOR.get(m[1]) == vendor]
        same = same or [v for m, v in have if m[0] == n[0] and m[2:] == n[2:]]
        theta[i] = float(np.median(same)) if same else (1.0 if n[0] == "factor" else 0.0)
    return theta, tuple(names[i] for i in np.flatnonzero(missing))


#: Acceptance rates searched when a run's is fitted to its smallest batch.
ALPHA_GRID = np.round(np.arange(0.30, 0.991, 0.005), 3)


_ALPHA_STEPS: dict = {}


def _alpha_steps(run: SpecRun, form: Form) -> tuple:
    """What :func:`fit_alpha` prices of ``run``'s smallest batch, which no
    fitted constant changes: (its (gamma, value) points, each draft length's
    step features, the plain step's), computed once per run, its points and
    the form's scaling (a fit prices them again for every fold and
    bootstrap draw)."""
    key = (_form_key(run, form), run.points)
    if key not in _ALPHA_STEPS:
        steps = _feat.SpecSteps(run, form)
        b = min(_by_batch(run))
        gv = [(g, v) for g, v in _by_batch(run)[b] if (b, g) not in _spec.run_inconsistent(run)]
        _ALPHA_STEPS[key] = (gv, [steps.spec(b, float(g)) for g, _ in gv], steps.plain(b))
    return _ALPHA_STEPS[key]


def fit_alpha(f: Fit, run: SpecRun) -> float:
    """The acceptance that best explains ``run``'s smallest batch (its
    speed-ups, or its throughput ratios over draft lengths) under the
    constants of ``f``."""
    gv, spec_steps, plain_step = _alpha_steps(run, f.form)
    g = np.array([x for x, _ in gv], dtype=float)
    t = np.array([f.time(features) for features in spec_steps])
    return best_alpha(run, gv, _acc.committed_numeric(ALPHA_GRID[:, None], g[None, :]), t, f.time(plain_step))


def best_alpha(run: SpecRun, gv, n, t, plain) -> float:
    """The value of :data:`ALPHA_GRID` whose predictions best explain ``run``'s
    points ``gv`` ((gamma, value) at one batch), least squares in log: ``n``
    the tokens committed a step at each grid value and gamma (grid x gammas),
    ``t`` the seconds of each speculative step (gammas, or grid x gammas where
    the step depends on what it commits), ``plain`` the plain step's seconds.
    A run of speed-ups is scored on n plain / t, one of throughputs on each
    draft length's rate over the first's."""
    if run.quantity == "speedup":
        meas = np.array([v for _, v in gv])
        pred = n * plain / t
    else:
        meas = np.array([v for _, v in gv]) / gv[0][1]
        pred = (n / t) / (n[:, :1] / t[..., :1])
    return float(ALPHA_GRID[np.argmin(((np.log(pred) - np.log(meas)) ** 2).sum(axis=1))])
