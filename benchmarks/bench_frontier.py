"""The frontiers held against InferenceX, and the time one takes.

Prints (it asserts nothing: the numbers move with the calibrated step):

* every configuration of DeepSeek-R1 fp8 InferenceX measured with MTP on and
  off, predicted by the calibrated step fitted without every run on its chip
  (speclib.calibration.frontiers.held_out_frontiers): the error of output
  tokens per second per GPU at each measured point's own speed per user, and
  at its own number of users; the crossing of the two frontiers, measured
  and predicted, and whether they agree;
* per chip and per engine, and the targets: throughput per GPU at matched
  speed per user, held out by chip, median |error| <= 15 %; the crossing
  within 20 % of measured (or, where the measured frontiers do not cross,
  the same arm winning over the speeds they share) on at least 4 of 5 chips;
* the time of `speclib.frontier` for one deployment (20 concurrencies, with
  and without speculation, the calibrated step with its intervals) against
  the target of 0.5 s, and of the cheapest configuration at a target.

Run from the repository root:  python benchmarks/bench_frontier.py
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
from _timing import median_ms

try:
    import speclib
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import speclib

from speclib.calibration import frontiers as fe

TARGET_ERROR = 0.15
TARGET_CHIPS = 4
TARGET_SECONDS = 0.5


def _crossing(c) -> str:
    if not c.above:
        return "no common speed"
    if c.crosses:
        return f"{c.speed:6.1f} ({'MTP' if c.above == 'speculative' else 'plain'} above)"
    return f"none over {c.lowest:.0f}-{c.highest:.0f} ({'MTP' if c.above == 'speculative' else 'plain'} wins)"


def held_out() -> dict:
    start = time.perf_counter()
    checks = fe.held_out_frontiers()
    seconds = time.perf_counter() - start
    print(f"DeepSeek-R1 fp8, InferenceX, MTP on and off: {len(checks)} configurations, each predicted by the "
          f"calibrated step fitted without its chip ({seconds:.1f} s)\n")
    print(f"{'configuration':<36} {'alpha':>5} {'pts':>3} {'|err| speed':>11} {'|err| users':>11}  "
          f"{'crossing measured':<34} {'crossing predicted':<34} agree")
    for c in checks:
        m, p = c.crossovers()
        e, ec = np.abs(c.errors), np.abs(c.errors_at_concurrency)
        agree = c.crossover_agrees()
        print(f"{c.measured.label:<36} {c.alpha:5.2f} {e.size:3d} "
              f"{(f'{100 * np.median(e):.0f} %' if e.size else '-'):>11} {100 * np.median(ec):9.0f} %  "
              f"{_crossing(m):<34} {_crossing(p):<34} {'-' if agree is None else 'yes' if agree else 'no'}")
    s = fe.summary(checks)
    print("\nper chip (held out):")
    for chip, r in s["by_chip"].items():
        print(f"  {chip:<7} {r['points']:3d} points, median |error| at matched speed {100 * r['median_abs_error']:5.1f} %;"
              f" crossings agree {r['crossovers_agree']} of {r['crossovers_compared']} (measured crossings: "
              f"{r['measured_crossings']}): {'agrees' if r['agrees'] else 'does not agree' if r['crossovers_compared'] else 'nothing to compare'}")
    print("per engine: " + ", ".join(f"{e} {100 * v:.1f} %" for e, v in s["by_engine"].items()))
    print(f"\nall {s['points']} points: median |error| of throughput per GPU at matched speed per user "
          f"{100 * s['median_abs_error']:.1f} % (mean signed {100 * s['mean_signed_error']:+.1f} %); at matched "
          f"users {100 * s['median_abs_error_at_concurrency']:.1f} %")
    met_error = s["median_abs_error"] <= TARGET_ERROR
    met_chips = s["chips_agreeing"] >= TARGET_CHIPS
    print(f"  target median |error| at matched speed <= {100 * TARGET_ERROR:.0f} %: "
          f"{'met' if met_error else 'MISSED'} ({100 * s['median_abs_error']:.1f} %)")
    print(f"  target crossing agrees on >= {TARGET_CHIPS} of {s['chips']} chips: {'met' if met_chips else 'MISSED'} "
          f"({s['chips_agreeing']}; chips with a measured crossing: "
          f"{sum(r['measured_crossings'] > 0 for r in s['by_chip'].values())})")
    return s


def timing():
    dep = speclib.Deployment("DeepSeek-R1", "H200", tp=8, engine="SGLang", step_time="calibrated", weights="fp8",
                             kv_cache="bf16")
    run = lambda: speclib.frontier(dep, "1k1k", alpha=0.6)  # noqa: E731 - 20 concurrencies, gamma* at each
    f = run()
    ms = median_ms(run, 7)
    cheap = median_ms(lambda: f.cheapest(50.0, 2.5), 5)
    print(f"\nspeclib.frontier, DeepSeek-R1 on 8 x H200 (SGLang), {f.plain.concurrency.size} concurrencies, with and "
          f"without speculation (draft lengths 1-{speclib.core.frontier.DEFAULT_GAMMA_MAX} at each), the calibrated "
          f"step with its 80 % intervals: median {ms:.0f} ms")
    print(f"  the cheapest configuration at 50 tokens/s per user (every concurrency memory holds, the saving's "
          f"interval): median {cheap:.0f} ms")
    print(f"  target frontier <= {1e3 * TARGET_SECONDS:.0f} ms: {'met' if ms <= 1e3 * TARGET_SECONDS else 'MISSED'}")


if __name__ == "__main__":
    held_out()
    timing()
