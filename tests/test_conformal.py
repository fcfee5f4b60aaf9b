"""Intervals calibrated over exchangeable units (speclib.evidence.conformal): the finite-sample rule by hand and
against a Monte Carlo of exchangeable units, acceptance's range priced through the committed tokens, and the
stored hold-outs' intervals built from their own points."""
import math

import numpy as np
import pytest

from speclib.evidence import conformal as cf
from speclib.evidence import held_out
from speclib.evidence.spec_runs import SpecRun
from speclib.evidence.step_predictions import RunPrediction


def test_the_finite_sample_level_is_the_ceiling_rule():
    assert cf.finite_sample_level(9, 0.8) == pytest.approx(8 / 9)  # ceil(10 x 0.8) = 8
    assert cf.finite_sample_level(5, 0.8) == 1.0  # ceil(4.8) = 5: the largest of five units
    assert cf.finite_sample_level(3, 0.8) > 1.0  # ceil(3.2) = 4 of 3: no finite interval
    assert math.isinf(cf.unit_quantile([0.1, 0.2, 0.3], ["a", "b", "c"], 0.8))


def test_each_unit_weighs_the_same_whatever_its_points():
    scores = [0.1, 0.3, 0.2, 0.5, 0.6, 0.7, 0.8]
    units = ["A", "A", "B", "C", "C", "C", "C"]
    # three units, level 0.5: ceil(4 x 0.5) / 3 = 2/3; weights A 1/6 each, B 1/3, C 1/12 each; sorted
    # 0.1 (1/6), 0.2 (1/2), 0.3 (2/3): the third
    assert cf.unit_quantile(scores, units, 0.5) == pytest.approx(0.3)


def _coverage(rng, trials, n, level, within, rule):
    out = np.empty(trials)
    for t in range(trials):
        sizes = rng.integers(1, 7, n + 1)
        effects = rng.normal(0.0, 1.0, n + 1)
        scores = [np.abs(effects[j] + rng.normal(0.0, within, sizes[j])) for j in range(n + 1)]
        units = np.concatenate([[j] * sizes[j] for j in range(n)])
        q = rule(np.concatenate(scores[:n]), units)
        out[t] = np.mean(scores[n] <= q)
    return out


@pytest.mark.parametrize("within", [0.0, 0.5])
def test_the_rule_covers_a_new_unit_in_a_monte_carlo_of_exchangeable_units(within):
    rng = np.random.default_rng(7)
    n, level, trials = 9, 0.8, 3000
    cover = _coverage(rng, trials, n, level, within, lambda s, u: cf.unit_quantile(s, u, level))
    se = cover.std() / np.sqrt(trials)
    # at least the level on a unit none of the n was (an exchangeable unit's scores: the guarantee), and with
    # one point's worth of no ties, no more than level + 1 / (n + 1)
    assert cover.mean() >= level - 3 * se
    assert cover.mean() <= level + 1 / (n + 1) + 3 * se
    # the points pooled, each point one vote, at the plain level undercover: the finite-sample rule is what
    # holds the level
    naive = _coverage(np.random.default_rng(7), trials, n, level, within, lambda s, u: np.quantile(s, level))
    assert naive.mean() < level - 3 * se


def _run(alpha=0.7):
    return SpecRun(id="r", label="", url="", engine="vLLM", model="llama-3-8b", chip="H100", gpus=1,
                   expert_parallel=False, context=1000.0, alpha=alpha, accept={}, draft_share=0.05, drafter="eagle",
                   verify_tokens=0, quantity="speedup", points=((1, 3, 2.0),), assumed="", family="A")


def test_acceptances_range_is_priced_through_the_committed_tokens():
    p = RunPrediction(_run(0.7), np.array([1]), np.array([3]), np.array([2.5]), np.array([2.0]), {},
                      np.array([True]))
    lo, hi = cf.acceptance_band(p, 0.05)
    n = lambda a: 1 + a + a ** 2 + a ** 3  # noqa: E731 - committed tokens of three i.i.d. drafts, summed by hand
    assert lo[0] == pytest.approx(2.0 * n(0.65) / n(0.7)) and hi[0] == pytest.approx(2.0 * n(0.75) / n(0.7))
    # 2.5 lies above the band by log(2.5 / hi)
    assert cf.band_scores(p, 0.05)[0] == pytest.approx(np.log(2.5 / hi[0]))


def test_the_stored_hold_outs_intervals_come_from_the_other_units_scores():
    held = held_out.stored_held_out("model")
    unit = lambda p: p.run.family  # noqa: E731
    widths = cf.half_widths(held, unit)
    deepseek = [p for p in held.runs if p.run.family == "DeepSeek"]
    others = [p for p in held.runs if p.run.family != "DeepSeek"]
    s = np.concatenate([cf.band_scores(p)[p.scored] for p in others])
    # five other families: ceil(6 x 0.8) = 5 of 5, the largest of their scores
    assert widths["DeepSeek"] == pytest.approx(s.max())
    c = cf.calibrated(held, unit)
    p = next(q for q in c.runs if q.run.id == deepseek[0].run.id)
    lo, hi = cf.acceptance_band(deepseek[0])
    np.testing.assert_allclose(p.lo, lo * np.exp(-widths["DeepSeek"]))
    np.testing.assert_allclose(p.hi, hi * np.exp(widths["DeepSeek"]))
