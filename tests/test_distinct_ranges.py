"""Schedules whose ranges the interval can tell apart: adjacent ranges whose
speed-ups lie inside each other's interval merge, the fewest runs possible,
checked against brute force over every way of cutting the ranges into runs."""
import itertools
import random

from speclib.tools.schedule import indistinct_groups


def brute_force(ranges):
    """Every cut of the ranges into adjacent runs; the fewest runs in which
    every pair of ranges has each speed-up inside the other's interval."""
    n = len(ranges)
    best = None
    for mask in itertools.product((0, 1), repeat=n - 1):
        runs, start = [], 0
        for i, cut in enumerate(mask, start=1):
            if cut:
                runs.append((start, i - 1))
                start = i
        runs.append((start, n - 1))
        good = all(ranges[j][1] <= ranges[k][0] <= ranges[j][2] and ranges[k][1] <= ranges[j][0] <= ranges[k][2]
                   for a, b in runs for j in range(a, b + 1) for k in range(a, b + 1))
        if good and (best is None or len(runs) < len(best)):
            best = runs
    return best


def test_a_jittering_schedule_merges_to_what_the_interval_tells_apart():
    # slots 4, 3, 4, 5, 4, 3, 2 whose speed-ups drift down inside overlapping intervals, then one clearly lower
    speedups = [2.00, 1.98, 1.97, 1.95, 1.93, 1.92, 1.40]
    ranges = [(s, s - 0.1, s + 0.1) for s in speedups]
    groups = indistinct_groups(ranges)
    assert groups == [(0, 5), (6, 6)]
    assert len(groups) == len(brute_force(ranges))


def test_against_brute_force():
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 8)
        ranges = []
        for _ in range(n):
            s = rng.uniform(1.0, 2.0)
            ranges.append((s, s - rng.uniform(0.0, 0.4), s + rng.uniform(0.0, 0.4)))
        groups = indistinct_groups(ranges)
        assert len(groups) == len(brute_force(ranges))
        # the groups cover every range once, in order, and each is mutually indistinct
        assert [i for a, b in groups for i in range(a, b + 1)] == list(range(n))
        for a, b in groups:
            for j, k in itertools.combinations(range(a, b + 1), 2):
                assert ranges[j][1] <= ranges[k][0] <= ranges[j][2] and ranges[k][1] <= ranges[j][0] <= ranges[k][2]


def test_ranges_told_apart_stay_apart():
    ranges = [(2.0, 1.95, 2.05), (1.5, 1.45, 1.55), (1.0, 0.95, 1.05)]
    assert indistinct_groups(ranges) == [(0, 0), (1, 1), (2, 2)]
