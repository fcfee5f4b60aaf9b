"""Every "at B = ..." the prose reports for an extreme found over a grid
(issue 49, point 8): each grid brute-forced here, apart from the function
that found it, and the extreme judged a point or a plateau of ties (within
speclib.core.optimum.TIES of it), as the prose states it. The helper itself is
checked on grids whose answer is known by hand."""
import math

import numpy as np
import pytest

import speclib
from speclib.core import optimum as opt
from speclib.core import speculation

REL = 1e-9  # a tie, typed here: the values are one number but for rounding


def _ties(x, y, which="max"):
    y = np.asarray(y, dtype=float)
    v = y.max() if which == "max" else y.min()
    hit = np.asarray(x, dtype=float)[np.abs(y - v) <= REL * abs(v)]
    return float(hit.min()), float(hit.max())


# --- the helper -------------------------------------------------------------------------------


def test_a_plateau_and_a_point_by_hand():
    x = np.arange(1.0, 101.0)
    flat = opt.optimum(x, np.minimum(x, 40.0))  # rises to 40, then flat to 100
    assert flat.ties == (40.0, 100.0) and flat.plateau and flat.at == 40.0 and flat.verdict == "plateau"
    peak = opt.optimum(x, 1 - (x - 50.0) ** 2 / 1e4)  # within 0.5 %: (x - 50)^2 <= 50, |x - 50| <= 7.07
    assert peak.ties == (50.0, 50.0) and not peak.plateau and peak.flat == (43.0, 57.0)
    low = opt.optimum(x, (x - 30.0) ** 2 + 1.0, "min")
    assert low.at == 30.0 and low.verdict == "point"
    with pytest.raises(ValueError, match="which"):
        opt.extreme_range(x, x, "top")


# --- the audited statements -------------------------------------------------------------------


def test_draft_length_largest_gamma_is_a_plateau_of_batches():
    """draft_length and conclusion: "the largest gamma* is 5, from 20 to 54 sequences" (was "first at 20")."""
    B = np.arange(1.0, 30_001.0)
    dep = speclib.Deployment(attention="paper")
    table = np.stack([np.broadcast_to(speclib.speedup(0.75, g, B, 4096, 0.10, deployment=dep), B.shape)
                      for g in range(65)])
    g = np.argmax(table, axis=0)  # the first gamma of a tie, as any search keeps the shorter draft
    lo, hi = _ties(B, g)
    assert (lo, hi) == (20.0, 54.0) and g.max() == 5
    assert np.all(g[int(lo) - 1:int(hi)] == 5)  # one run: every batch between holds it
    regions = speculation.gamma_regions(0.75, S=4096, c_draft=0.10, deployment=dep)
    assert (regions["best_batch"], regions["best_batch_to"]) == (lo, hi)


def test_pricing_lowest_required_acceptance_is_a_point():
    """pricing: "from 0.25 (at 141 sequences)": one drafted token breaks even when
    (1 + alpha) C_1 = C_2 + c C_1, so alpha = C_2 / C_1 + c - 1, over every batch."""
    from speclib.core import cost
    from speclib.presentation.figures import pricing

    B = np.arange(1.0, 30_001.0)
    cm = cost.cost_model(attention="paper")
    need = cm.verify(B, 2.0, 8192.0) / cm.verify(B, 1.0, 8192.0) + 0.10 - 1.0
    lo, hi = _ties(B, need, "min")
    r = pricing.required_acceptance()
    assert lo == hi == r["lowest_at"] == r["lowest_to"] == 141.0
    lo, hi = _ties(B, need, "max")  # the 0.86: a plateau of ties from the first batch past the far knee
    assert (lo, hi) == (r["highest_at"], r["highest_to"]) == (math.ceil(1125 * 0.53 * 257 / 14), 30_000.0)


def _band(rollback):
    from speclib.evidence import simulator as sequel

    B = np.arange(1.0, 2049.0)
    _, X = sequel.policy("dflash", B, rollback=rollback)
    return B, X / sequel.fixed_throughput("dflash", B, [0], rollback=rollback)[0]


@pytest.mark.parametrize("rollback", ["none", "snapshot"])
def test_draft_length_per_concurrency_peaks_are_points(rollback):
    """draft_length_per_concurrency: "a peak of 3.69x at 100" and "peaks at 2.56x at 63": one batch each,
    though within 0.5 % of the peak over a range (the helper's flat range)."""
    from speclib.presentation.figures import draft_length_per_concurrency as figures

    B, speedup = _band(rollback)
    lo, hi = _ties(B, speedup)
    band = figures.longest_draft_band("dflash", rollback=rollback)
    assert lo == hi == band["peak_at"] and band["peak_ties"] == (lo, hi)
    near = B[speedup >= speedup.max() * (1 - 5e-3)]
    assert band["peak_flat"] == (near.min(), near.max()) and near.min() < lo < near.max()


@pytest.mark.parametrize("net", [None, "InfiniBand-NDR"])
def test_expert_parallel_best_speedup_at_one_sequence_per_gpu_is_a_point(net):
    """expert_parallelism: "at G = 64 the best speedup comes at one sequence per GPU"."""
    from speclib.core import parallel
    from speclib.presentation.figures import expert_parallelism as figures

    cm = parallel.expert_parallel_cost_model(G=64, interconnect=net or figures.NETWORK, attention="paper")
    dep = speclib.Deployment(cost_model=cm)
    B = np.arange(1.0, 65.0)
    best = np.max([np.broadcast_to(speclib.speedup(0.75, g, B, 4096, 0.1, deployment=dep), B.shape)
                   for g in range(65)], axis=0)
    assert _ties(B, best) == (1.0, 1.0)


def test_the_fixed_cost_that_removes_the_gutter_is_needed_most_at_one_batch():
    """conclusion: "a fixed time ... (5.8 % of a plain step at 8 sequences)": the break-even fixed cost
    found by bisection on the speedup with a fixed cost, for every draft of 1..64 at every gutter batch."""
    dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", attention="paper")
    cm = dep.pricing(0.10).cost_model
    gutter = np.arange(4.0, 14.0)

    def speedup(g, c0, cv, F):
        n = sum(0.75 ** i for i in range(g + 1))
        return n * (c0 + F) / (cv + F + 0.10 * g * (c0 + F))

    need = []
    for B in gutter:
        c0 = float(cm.decode(B, 4096.0))
        best = math.inf
        for g in range(1, 65):
            cv = float(cm.verify(B, g + 1.0, 4096.0))
            if speedup(g, c0, cv, 1e6 * c0) <= 1:  # never pays, whatever the fixed cost
                continue
            lo, hi = 0.0, 1e6 * c0
            for _ in range(200):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if speedup(g, c0, cv, mid) < 1 else (lo, mid)
            best = min(best, hi)
        need.append(best)
    assert _ties(gutter, need) == (8.0, 8.0)
    fixed = speculation.gutter_fixed_cost(0.75, 4096, 0.10, deployment=dep)
    assert fixed["fixed_at"] == 8.0 and fixed["gutters"] == [(4.0, 13.0)]


def test_the_roofline_s_dspark_peak_is_one_batch():
    """engines_vs_model: "the roofline has it rising, to 2.58x at 64 requests"."""
    from speclib.presentation.figures import engines_vs_model as evm

    run = "vllm-dspark-dsv4-flash-mi350x-k7"
    held = evm._ho.stored_held_out("model").run(run)
    roof = evm._pred.predict_run(evm._fit.roofline_fit(), evm._runs.spec_run(run))
    assert _ties(held.batch, roof.predicted) == (64.0, 64.0) == (evm.dspark_facts()["dspark_roofline_peak_batch"],) * 2


def test_dflash_s_conditional_acceptance_peaks_at_one_position():
    """acceptance_curves: DFlash's conditional acceptance climbs "up to position 12, then levels off":
    the survival curve's ratios, position by position, have one largest."""
    from speclib.core.acceptance import load_survival_curves
    from speclib.presentation.figures import acceptance_curves as figures

    survival = np.asarray(load_survival_curves()["dflash"].values, dtype=float)
    conditional = survival / np.concatenate([[1.0], survival[:-1]])
    positions = np.arange(1.0, conditional.size + 1.0)
    assert _ties(positions, conditional) == (12.0, 12.0) == (figures.iid_comparison()["dflash"]["peak"],) * 2


def test_hca_s_first_draft_is_cheapest_at_one_context():
    """The reproduction report's note on HCA's band: the first speculated token's attention, against a plain
    step's, is cheapest "at S = 45,550, on a grid of 10 tokens": the roofline max(bytes, FLOPs / R) written
    out with docs/model.md's MLA constants over the 128-fold compressed context, query bytes counted."""
    from speclib.evidence import claims

    m_c, m_q, f, R = 576.0, 73_728.0, 139_264.0, 2.25e15 / 8e12
    S = np.arange(1_000.0, 200_001.0, 10.0)
    s = S / 128

    def cost(T):
        return np.maximum(m_c * s + m_q * T, f * T * s / R)

    price = cost(2) / cost(1) - 1
    assert _ties(S, price, "min") == (45_550.0, 45_550.0) == (claims.hca_cheapest_first_draft_context(),) * 2
