"""A step fitted to one deployment's own benchmark files (``speclib fit``):
the fixed time, the time per sequence and, from runs with speculation, the
time per extra verified position and per drafter pass, with the chip's
factors held at the shipped calibration's; and the calibration files it
writes, read back checked."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np

from .._checks import checked_choice
from ..core import calibrated as _cal
from ..core.deployment import Deployment
from ..presets import hardware as hardware_preset
from ..presets import resolve
from speclib.evidence.spec_runs import DEFAULT_DRAFT_SHARE
from speclib.calibration.step_features import chip_key
from speclib.calibration.step_fit import _nnls


#: The terms a fit on a deployment's own runs sets, in its design's column
#: order: the fixed time a, the time per sequence d, the time per extra
#: verified position e and per drafter pass a_d. A term the runs cannot set
#: (e and a_d without runs with speculation; one named in ``hold``) stays at
#: the shipped calibration's value: the prior.
TERMS = ("fixed", "per_sequence", "per_position", "per_draft_pass")


@dataclass(frozen=True)
class OwnFit:
    """A calibration fitted to one deployment's measurements, and each
    record's fitted TPOT (``residuals``: (record, fitted ms, error)).
    ``theta``: the fitted a, d, e and a_d (:data:`TERMS`), with ``prior``
    naming those held at the shipped calibration's value; :meth:`predict`
    prices other records of the same deployment with them."""

    calibration: _cal.Calibration
    residuals: tuple
    theta: tuple = ()
    prior: tuple = ()
    pricer: object = dataclasses.field(default=None, repr=False, compare=False)

    def predict(self, records, accept_length=None) -> np.ndarray:
        """Each record's TPOT (ms) as this fit prices it: its batch, context,
        draft length and measured tokens per verify (``accept_length`` where
        the record has none)."""
        rows = [self.pricer.row(r, accept_length) for r in records]
        return np.array([(kernel + float(x @ np.array(self.theta))) / n + prefill
                         for x, _, kernel, prefill, n in rows]) * 1e3


class _Pricer:
    """One deployment's step as :func:`fit_measurements` prices a record:
    its roofline kernels with the chip's factors held at the shipped
    calibration's, the collectives, the prefill of arriving requests, and
    the design row of the fitted terms."""

    def __init__(self, m, hw, *, tp, layout, shipped):
        try:
            chip = chip_key(hw.name)
            preset = hardware_preset(hw.name) == hw
        except ValueError:  # a chip from a hardware config, not a preset: its own name
            chip, preset = hw.name, False
        mu = shipped.roofline_factor.get(chip, 1.0)  # a hardware config's chip the fit did not see: the roofline
        if preset and chip not in shipped.roofline_factor:
            try:  # a preset the shipped fit did not see (MI350X): its generation's factor, as the shipped step's
                mu = shipped.chip_factor(hw)
            except ValueError:  # a vendor with no fitted chip: the roofline's speed
                pass
        self.chip, self.hw, self.shipped = chip, hw, shipped
        self.mu = mu
        self.nu = shipped.attention_factor(hw)
        self.step = Deployment(m, hw, tp=tp, **layout).parallel_step()
        self.moe_s = shipped.moe_layer(hw)
        self.moe = self.moe_s * self.step.architecture.moe_layers
        self.prior = np.array([0.0, shipped.per_sequence_s,
                               shipped.per_position(hw, self.step.architecture.attention_layers),
                               shipped.per_draft_pass_s])

    def kernels(self, B, T, S):  # this GPU's calibrated kernels and its collectives (mu and nu held)
        B, T, S = np.float64(B), np.float64(T), np.float64(S)
        step = self.step
        return float(self.mu * step.kernel_time(B, T, S) + self.nu * step.component_times(B, T, S)["attention"]
                     + step.communication(B, T)) + self.moe

    def row(self, r, accept_length=None):
        """(design row, measured seconds per verify, the kernels' seconds,
        the prefill's seconds per token, tokens per verify) of record ``r``."""
        where = f"{r.source}: "
        if r.concurrency is None:
            raise ValueError(f"{where}max_concurrency is not set; the fit needs the batch (runs at a fixed concurrency)")
        B, S = float(r.concurrency), float(r.input_len + (r.output_len - 1) / 2)
        g = int(r.gamma or 0)
        n = 1.0
        if g:
            n = r.accept_length if r.accept_length is not None else accept_length
            if n is None:
                raise ValueError(f"{where}accept_length is missing for a run with gamma {g}; the fit needs the "
                                 "measured tokens per verify")
            n = float(n)
        T = (g + 1.0) if g else 1.0
        plain_roof = self.kernels(B, 1.0, S)
        roof = self.kernels(B, T, S)
        share = DEFAULT_DRAFT_SHARE * g
        prefill = float(self.step.prefill_share(np.float64(B), r.input_len, r.output_len)) * self.shipped.prefill_factor
        x = np.array([1.0 + share, B * (1.0 + share), B * (T - 1.0), float(g)])
        return x, n * r.tpot_ms * 1e-3, roof + share * plain_roof, prefill, n


#: The fields of a deployment's layout :func:`fit_measurements` takes beyond ``tp``.
LAYOUT_FIELDS = ("ep", "dp_attention", "weights", "kv_cache")


def fit_measurements(records, model, hardware, *, tp: int = 1, engine: str = _cal.DEFAULT_ENGINE,
                     label: str = "", layout=None, accept_length: float = None, hold=()) -> OwnFit:
    """Fit a deployment's step from its own benchmark records
    (:func:`speclib.evidence.bench_results.read_results`): the fixed time a,
    the time per sequence d and, from the runs with speculation (their
    ``gamma`` and measured ``accept_length``; ``accept_length`` here for
    records without one), the time per extra verified position e and per
    drafter pass a_d. The shipped calibration is the prior: the chip factor
    mu stays the shipped one (a property of the chip; on one deployment's
    decode runs it is not separable from a and d), the prefill of arriving
    requests is charged as the shipped calibration charges it, and e and a_d
    stay at the shipped values where no run with speculation sets them (or
    where ``hold`` names them, of :data:`TERMS`). ``layout``: the
    deployment's layout and precisions beyond ``tp``, a mapping of
    :data:`LAYOUT_FIELDS` (:class:`speclib.Deployment`'s ``ep``,
    ``dp_attention``, ``weights``, ``kv_cache``). Refuses, naming the file and the field,
    data that cannot identify a term."""
    m, hw = resolve(model, hardware)
    engine = checked_choice("engine", engine, _cal.ENGINES)
    records = list(records)
    if not records:
        raise ValueError("records: no measurements to fit")
    for term in hold:
        checked_choice("hold", term, TERMS[2:])
    layout = dict(layout or {})
    for key in layout:
        checked_choice("layout", key, LAYOUT_FIELDS)
    layout = {k: v for k, v in layout.items() if v not in (None, 1, False)}
    pricer = _Pricer(m, hw, tp=tp, layout=layout, shipped=_cal.shipped_calibration())
    return _fit(pricer, records, m=m, hw=hw, tp=tp, engine=engine, label=label, accept_length=accept_length,
                hold=tuple(hold))


def _fit(pricer, records, *, m, hw, tp, engine, label, accept_length, hold) -> OwnFit:
    rows = [pricer.row(r, accept_length) for r in records]
    plain_b = {float(r.concurrency) for r in records if not r.gamma}
    spec_b = {float(r.concurrency) for r in records if r.gamma}
    name = records[0].source
    if len(plain_b) < 2:
        raise ValueError(f"{name}: max_concurrency: runs without speculation at {len(plain_b)} distinct batch(es); "
                         "the fixed and per-sequence times need at least two")
    if spec_b and len(spec_b) < 2:
        raise ValueError(f"{name}: max_concurrency: runs with speculation at one batch only; the per-position and "
                         "per-pass times need at least two batches")
    prior = tuple(TERMS[i] for i in (2, 3) if not spec_b or TERMS[i] in hold)
    free = [i for i, t in enumerate(TERMS) if t not in prior]
    X = np.array([x for x, *_ in rows])
    held = np.zeros(len(TERMS))
    for i, t in enumerate(TERMS):
        if t in prior:
            held[i] = pricer.prior[i]
    y = np.array([measured - kernel - n * prefill for _, measured, kernel, prefill, n in rows]) - X @ held
    scale = np.array([measured for _, measured, *_ in rows])
    theta = held.copy()
    theta[free] = _nnls(X[:, free] / scale[:, None], y / scale)
    residuals = []
    for r, (x, measured, kernel, prefill, n) in zip(records, rows):
        fitted = (kernel + float(x @ theta)) / n + prefill
        residuals.append((r, fitted * 1e3, fitted / (r.tpot_ms * 1e-3) - 1.0))
    chip, mu, nu, moe = pricer.chip, pricer.mu, pricer.nu, pricer.moe
    cal = _cal.Calibration(
        roofline_factor={chip: mu}, fixed_s={chip: {engine: float(theta[0])}}, per_sequence_s=float(theta[1]),
        per_position_s=float(theta[2]), per_draft_pass_s=float(theta[3]), prefill_factor=pricer.shipped.prefill_factor,
        attention_factor_by_vendor={hw.vendor: nu} if nu else {},
        moe_layer_s={hw.vendor: pricer.moe_s} if moe else {},
        model=m.name, fitted_on=tuple(sorted({r.source for r in records})),
        batch_range=(int(min(plain_b | spec_b)), int(max(plain_b | spec_b))), label=label or name,
        source=f"speclib.calibration.own_fit.fit_measurements: {len(records)} runs of {m.name} on {tp} x {hw.name} "
               f"({engine}); mu held at the shipped {mu:.3g}, attention's nu at {nu:.3g}"
               + (f"; {' and '.join(prior)} at the shipped calibration's (the prior)" if prior else ""))
    return OwnFit(cal, tuple(residuals), tuple(float(v) for v in theta), prior, pricer)


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
