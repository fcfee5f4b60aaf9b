"""The engine step fitted on measured runs: how long one fit, the held-out
runs and a calibrated answer take, and the held-out figures against their
targets (printed, not asserted).

    python benchmarks/bench_step_fit.py            # the stored hold-outs (data/calibration/held_out.json)
    python benchmarks/bench_step_fit.py --recompute   # recompute the four hold-outs first (an hour)
"""
import argparse
import subprocess
import sys
import time

import numpy as np

import speclib
from speclib.calibration import held_out, step_features, step_fit, step_report
from speclib.evidence import spec_runs


def _timed(fn, repeat=1):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recompute", action="store_true", help="recompute the hold-outs instead of reading them")
    args = parser.parse_args()
    t0 = time.perf_counter()
    step_fit.decode_rows()  # features of every run, computed once
    step_fit.fit(step_features.SHIPPED_FORM)
    first = time.perf_counter() - t0
    one = _timed(lambda: step_fit.fit(step_features.SHIPPED_FORM), 5)
    by_model = _timed(lambda: held_out.held_out("model", choose=False, intervals=False))
    by_chip = _timed(lambda: held_out.held_out("chip", choose=False, intervals=False))
    runs, _ = step_fit.decode_rows()
    print(f"one fit of the shipped form on every run: {one * 1e3:.0f} ms (target <= 2 s; the first, with every "
          f"run's features: {first:.1f} s); leave one model family out, no intervals: {by_model:.2f} s, one chip: "
          f"{by_chip:.2f} s, over {len(spec_runs.spec_runs())} speculative and {len(runs)} decode runs")
    if args.recompute:
        t0 = time.perf_counter()
        for by in held_out.GROUPINGS:
            held_out.stored_held_out.cache_clear()
            h = held_out.held_out(by)
            print(f"held out by {by}, form chosen in each fold where nested, with intervals: "
                  f"{time.perf_counter() - t0:.1f} s; {h.summary()}")
    # the calibrated gamma*-map against the roofline's, in one run
    B = np.geomspace(1, 4096, 64)[:, None]
    S = np.geomspace(512, 131072, 48)[None, :]
    cal = speclib.Deployment("deepseek-v3", "H200", tp=8, step_time="calibrated")
    roof = speclib.Deployment("deepseek-v3", "H200", tp=8)
    t_cal = _timed(lambda: speclib.optimal_gamma(0.75, B, S, 0.05, deployment=cal), 3)
    t_roof = _timed(lambda: speclib.optimal_gamma(0.75, B, S, 0.05, deployment=roof), 3)
    print(f"gamma*-map of 64 x 48 (batch, context): calibrated {t_cal * 1e3:.0f} ms, roofline {t_roof * 1e3:.0f} ms: "
          f"{t_cal / t_roof:.2f}x (target <= 2x)")
    free = cal.replace(reserve=None)  # every sequence at once: no bound by what memory holds
    t_free = _timed(lambda: speclib.optimal_gamma(0.75, B, S, 0.05, deployment=free), 3)
    print(f"the same calibrated map, each draft length at the batch memory holds: {t_cal * 1e3:.0f} ms; without a "
          f"memory check (reserve=None): {t_free * 1e3:.0f} ms: {t_cal / t_free:.2f}x (target <= 2x)")
    t_int = _timed(lambda: speclib.optimal_gamma(0.75, 64, 4096, 0.05, deployment=cal, interval=True), 3)
    print(f"gamma* with its 80 % interval, one deployment: {t_int * 1e3:.0f} ms in the library")
    cmd = [sys.executable, "-m", "speclib", "gamma", "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8",
           "--step-time", "calibrated", "--batch", "64", "--seq", "4096", "--alpha", "0.75", "--draft-cost", "0.05"]
    t_cli = _timed(lambda: subprocess.run(cmd, check=True, capture_output=True), 3)
    print(f"`speclib gamma --step-time calibrated` with its interval, a whole process: {t_cli * 1e3:.0f} ms "
          "(target: well under a second)")
    print()
    print(step_report.report())


if __name__ == "__main__":
    main()
