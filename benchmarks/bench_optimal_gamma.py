"""Speed of speclib.optimal_gamma over a batch sweep (issue 2, point 6).

Times the vectorised call that Figure 3 makes on every slider move,

    speclib.optimal_gamma(0.75, B, 4096, 0.1, gamma_max=64)

over 301 log-spaced batches B from 1 to 30,000, against the same answer
computed by a plain Python loop over the points (each B and each gamma,
calling speclib.speedup on scalars and keeping the first best gamma). Checks
the two agree, prints both medians and their ratio, and exits non-zero if the
answers differ or a target is missed:

    vectorised median <= 2 ms, and at least 10x faster than the loop.

Run from the repository root:  python benchmarks/bench_optimal_gamma.py
(or ``bash scripts/bench.sh`` for every benchmark).
"""
from __future__ import annotations

import os
import sys

import numpy as np
from _timing import median_ms, verdict

try:
    import speclib
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import speclib

ALPHA, S, C_DRAFT, GAMMA_MAX = 0.75, 4096, 0.1, 64
BATCHES = np.geomspace(1, 30_000, 301)
VECTORISED_REPEATS = 300
LOOP_REPEATS = 3
TARGET_MS = 2.0
TARGET_RATIO = 10.0


def vectorised():
    return speclib.optimal_gamma(ALPHA, BATCHES, S, C_DRAFT, gamma_max=GAMMA_MAX)


def loop():
    """The same argmax, one scalar speedup at a time."""
    best_gamma = np.empty(BATCHES.size, dtype=int)
    best_speedup = np.empty(BATCHES.size)
    for i, batch in enumerate(BATCHES):
        top_gamma, top = 0, -np.inf
        for gamma in range(GAMMA_MAX + 1):
            value = speclib.speedup(ALPHA, gamma, float(batch), S, C_DRAFT)
            if value > top:  # strict: ties keep the shorter draft
                top_gamma, top = gamma, value
        best_gamma[i], best_speedup[i] = top_gamma, top
    return best_gamma, best_speedup


def loop_over_batches():
    """A milder baseline: vectorised over gamma, one scalar call per batch."""
    pairs = [speclib.optimal_gamma(ALPHA, float(batch), S, C_DRAFT, gamma_max=GAMMA_MAX) for batch in BATCHES]
    return np.array([g for g, _ in pairs]), np.array([s for _, s in pairs])



def calibrated():
    """The same map under the calibrated step time (engines issue, point 6)."""
    return speclib.optimal_gamma(ALPHA, BATCHES, S, C_DRAFT, gamma_max=GAMMA_MAX, deployment=CALIBRATED)


CALIBRATED = speclib.Deployment(step_time="calibrated")
#: The calibrated map may take at most this multiple of the roofline map's time.
CALIBRATED_RATIO = 2.0


def main() -> int:
    gamma_vec, speedup_vec = vectorised()
    gamma_loop, speedup_loop = loop()
    assert np.array_equal(gamma_vec, gamma_loop), "vectorised and loop gamma* differ"
    max_rel = float(np.max(np.abs(speedup_vec - speedup_loop) / speedup_loop))
    assert max_rel <= 1e-12, f"vectorised and loop speedups differ by {max_rel:.3g} (relative)"
    gamma_b, speedup_b = loop_over_batches()
    assert np.array_equal(gamma_vec, gamma_b), "vectorised and per-batch gamma* differ"
    assert np.allclose(speedup_vec, speedup_b, rtol=1e-12, atol=0), "vectorised and per-batch speedups differ"

    vec_ms = median_ms(vectorised, VECTORISED_REPEATS)
    loop_ms = median_ms(loop, LOOP_REPEATS)
    per_batch_ms = median_ms(loop_over_batches, 10)

    print(f"optimal_gamma(alpha={ALPHA}, B = 301 log-spaced in [1, 30000], S={S}, c_draft={C_DRAFT}, gamma_max={GAMMA_MAX})")
    print(f"  answers agree: gamma* identical at all {BATCHES.size} batches, speedups within {max_rel:.1e} (relative)")
    print(f"  vectorised median: {vec_ms:8.3f} ms  ({VECTORISED_REPEATS} calls)")
    print(f"  loop median:       {loop_ms:8.1f} ms  ({LOOP_REPEATS} runs of {BATCHES.size * (GAMMA_MAX + 1)} scalar speedup calls)")
    print(f"  (for scale: one scalar optimal_gamma call per batch, 301 calls: {per_batch_ms:.1f} ms median, "
          f"{per_batch_ms / vec_ms:.0f}x the vectorised call)")
    calibrated()
    cal_ms = median_ms(calibrated, VECTORISED_REPEATS)
    ratio = cal_ms / vec_ms
    print(f"  the same map under the calibrated step time: {cal_ms:8.3f} ms median, {ratio:.2f}x the roofline map "
          f"(target <= {CALIBRATED_RATIO:g}x: {'met' if ratio <= CALIBRATED_RATIO else 'MISSED'})")
    ok = verdict(vec_ms, loop_ms, TARGET_MS, TARGET_RATIO)
    return 0 if ok and ratio <= CALIBRATED_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
