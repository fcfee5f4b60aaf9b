"""Timing helpers shared by the benchmarks (run as scripts from the
repository root; this folder is then on the import path)."""
from __future__ import annotations

import statistics
import time


def median_ms(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` in milliseconds over ``repeats`` calls
    (call it once before, so that caches are built outside the timing)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def verdict(vectorised_ms: float, loop_ms: float, target_ms: float, target_ratio: float) -> bool:
    """Print the ratio and whether both targets are met; True if they are."""
    ratio = loop_ms / vectorised_ms
    fast_enough, far_enough = vectorised_ms <= target_ms, ratio >= target_ratio
    print(f"  ratio loop/vectorised: {ratio:.0f}x")
    print(f"  target vectorised <= {target_ms:g} ms: {'met' if fast_enough else 'MISSED'}")
    print(f"  target ratio >= {target_ratio:.0f}x: {'met' if far_enough else 'MISSED'}")
    return fast_enough and far_enough
