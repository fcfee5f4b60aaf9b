"""Speed of the sequel's priced policy (issue 11, point 8).

Times the vectorised gamma* of Qwen3.6-35B-A3B with its MTP drafter priced
by its own roofline, the whole step priced as the sequel's simulator prices
it, over 301 log-spaced batches from 1 to 30,000 and every gamma in 0..64
(i.i.d. acceptance 0.75, so all 65 draft lengths are searched):

    deployment = speclib.Deployment("Qwen3.6-35B-A3B", drafter="Qwen3.6-MTP", roofline="aggregate")
    speclib.optimal_gamma(0.75, B, 512, gamma_max=64, deployment=deployment)

against the same answer from a plain Python loop over the 301 x 65 points
(one scalar speclib.speedup call each, keeping the first best gamma). Checks
they agree, prints both medians and their ratio, and exits non-zero if the
answers differ or a target is missed: vectorised median <= 5 ms, and at least
10x faster than the loop.

Run from the repository root:  python benchmarks/bench_priced_policy.py
(or ``bash scripts/bench.sh priced``).
"""
from __future__ import annotations

import sys

import numpy as np
from _timing import median_ms, verdict

import speclib

ALPHA, S, GAMMA_MAX = 0.75, 512, 64
DEPLOYMENT = speclib.Deployment("Qwen3.6-35B-A3B", drafter="Qwen3.6-MTP", roofline="aggregate")
BATCHES = np.geomspace(1, 30_000, 301)
VECTORISED_REPEATS = 100
LOOP_REPEATS = 2
TARGET_MS = 5.0
TARGET_RATIO = 10.0


def vectorised():
    return speclib.optimal_gamma(ALPHA, BATCHES, S, gamma_max=GAMMA_MAX, deployment=DEPLOYMENT)


def loop():
    best_gamma = np.empty(BATCHES.size, dtype=int)
    best_speedup = np.empty(BATCHES.size)
    for i, batch in enumerate(BATCHES):
        top_gamma, top = 0, -np.inf
        for gamma in range(GAMMA_MAX + 1):
            value = speclib.speedup(ALPHA, gamma, float(batch), S, deployment=DEPLOYMENT)
            if value > top:  # strict: ties keep the shorter draft
                top_gamma, top = gamma, value
        best_gamma[i], best_speedup[i] = top_gamma, top
    return best_gamma, best_speedup



def main() -> int:
    gamma_vec, speedup_vec = vectorised()
    gamma_loop, speedup_loop = loop()
    assert np.array_equal(gamma_vec, gamma_loop), "vectorised and loop gamma* differ"
    max_rel = float(np.max(np.abs(speedup_vec - speedup_loop) / speedup_loop))
    assert max_rel <= 1e-12, f"vectorised and loop speedups differ by {max_rel:.3g} (relative)"
    vec_ms = median_ms(vectorised, VECTORISED_REPEATS)
    loop_ms = median_ms(loop, LOOP_REPEATS)
    print(f"priced policy: optimal_gamma(alpha={ALPHA}, B = {BATCHES.size} log-spaced in [1, 30000], S={S}, "
          f"{DEPLOYMENT.model.name} + {DEPLOYMENT.drafter.name}, {DEPLOYMENT.roofline} roofline, gamma 0..{GAMMA_MAX})")
    print(f"  answers agree: gamma* identical at all {BATCHES.size} batches, speedups within {max_rel:.1e} (relative)")
    print(f"  vectorised median: {vec_ms:8.3f} ms  ({VECTORISED_REPEATS} calls)")
    print(f"  loop median:       {loop_ms:8.1f} ms  ({LOOP_REPEATS} runs of {BATCHES.size * (GAMMA_MAX + 1):,} "
          "scalar speedup calls)")
    return 0 if verdict(vec_ms, loop_ms, TARGET_MS, TARGET_RATIO) else 1


if __name__ == "__main__":
    sys.exit(main())
