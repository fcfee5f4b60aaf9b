"""What the engine chapters compute for their prose and tables: where
speculation stops paying (against a brute-force scan), the interval of the
best speculating draft, and the facts the chapters glue (against the data
read independently)."""
import numpy as np
import pytest

import speclib
from speclib.core import speculation as spec
from speclib.evidence import held_out, spec_runs, validation
from speclib.presentation.figures import engine_step_time, engines_vs_model, reconciliation

CALIBRATED = speclib.Deployment("deepseek-v4-flash", "B200", tp=8, step_time="calibrated")


def _scan(dep, alpha, S, c, top):
    """gamma* and the best speculating draft's interval at every batch, one batch at a time."""
    gammas, lows, highs = [], [], []
    for B in range(1, top + 1):
        speeds = [float(spec.speedup(alpha, g, B, S, c, deployment=dep)) for g in range(0, 17)]
        gammas.append(int(np.argmax(speeds)))
        g1 = 1 + int(np.argmax(speeds[1:]))
        iv = spec.speedup(alpha, g1, B, S, c, deployment=dep, interval=True)
        lows.append(float(iv.lo)), highs.append(float(iv.hi))
    return np.array(gammas), np.array(lows), np.array(highs)


def test_where_speculation_stops_is_a_brute_force_scans():
    top = 320
    got = spec.stops_paying(0.75, 2048, 0.05, deployment=CALIBRATED, max_batch=top, gamma_max=16)
    gamma, lo, hi = _scan(CALIBRATED, 0.75, 2048, 0.05, top)
    last_speculating = np.flatnonzero(gamma > 0)[-1] + 1
    assert got["at"] == (last_speculating + 1 if last_speculating < top else None)
    assert got["may_from"] == np.flatnonzero(lo >= 1.0)[-1] + 2
    assert got["surely_from"] is None and (hi >= 1.0).any()
    assert got["max_batch"] == top


def test_stops_paying_looks_only_at_batches_that_fit():
    small = speclib.Deployment("llama-3.1-8b", "H100", step_time="calibrated")
    got = spec.stops_paying(0.75, 2048, 0.05, deployment=small, max_batch=4096)
    assert got["max_batch"] == speclib.max_batch("llama-3.1-8b", "H100", 2048)
    roofline = spec.stops_paying(0.75, 2048, 0.05, deployment=small.replace(step_time="roofline"), max_batch=64)
    assert roofline["may_from"] is None and roofline["surely_from"] is None  # no interval without draws


def test_the_schedules_interval_is_the_best_speculating_drafts():
    from speclib.tools.schedule import schedule

    sched = schedule(seq=2048, alpha=0.75, c_draft=0.05, max_batch=64, deployment=CALIBRATED.replace(reserve=None))
    _, lo, hi = _scan(CALIBRATED, 0.75, 2048, 0.05, 64)
    np.testing.assert_allclose(sched.interval[0], lo, rtol=1e-9)
    np.testing.assert_allclose(sched.interval[1], hi, rtol=1e-9)
    assert list(sched.uncertain) == list((lo < 1) & (hi > 1))


def test_the_decode_chapters_facts_are_the_datas():
    facts = engine_step_time.decode_facts()
    records = validation.load_measurements()
    assert facts["runs"] == len(validation.compare()) and facts["runs"] <= len(records)
    assert facts["decoding_runs"] + facts["queueing_runs"] == facts["runs"]
    # the queueing run beats the roofline at its nominal batch, not at the batch Little's law gives
    assert facts["below_tpot_ms"] < facts["below_pred_ms"] and facts["below_pred_little_ms"] < facts["below_tpot_ms"]
    c = validation.compare()
    one = [m.tpot_ms / (p * 1e3) for m, p in zip(c.records, c.predicted_little_s)
           if m.tp == 1 and m.precision == "fp8" and c.little_batch[c.records.index(m)] > 0]
    assert facts["tp1_ratio_lo"] >= min(one) - 1e-12 and facts["tp1_ratio_hi"] <= max(one) + 1e-12


def test_the_engine_chapters_tables_hold_every_run_once():
    runs = spec_runs.spec_runs()
    table = engines_vs_model.runs_table()
    assert len(table.rows) == len(runs)
    assert all(row[-1] for row in table.rows), "every run names its source's bibliography key"
    held = held_out.stored_held_out("model").run("vllm-dspark-dsv4-flash-mi350x-k7")
    rows = engines_vs_model.dspark_table().rows
    assert [r[0] for r in rows] == list(held.batch)
    assert rows[-1][2].startswith(f"{held.predicted[-1]:.2f}")


def test_the_reconciliation_prices_the_sequels_setting_three_ways():
    rows = reconciliation.sequel_rows("dflash", batches=(64,))
    simulator, snapshot, calibrated = (int(r[1].split(":")[0]) for r in rows)
    # a rollback snapshot per verified position makes long drafts dearer; the engines' own costs more so
    assert simulator >= snapshot >= calibrated
    assert "[" in rows[2][1] and "[" not in rows[0][1]
