"""Intervals calibrated over exchangeable units (speclib.calibration.conformal): the finite-sample rule by hand and
against a Monte Carlo of exchangeable units, acceptance's range priced through the committed tokens, and the
stored hold-outs' intervals built from their own points."""
import math

import numpy as np
import speclib
import pytest

from speclib.calibration import conformal as cf
from speclib.calibration import held_out
from speclib.evidence.spec_runs import SpecRun
from speclib.calibration.step_predictions import RunPrediction


def test_the_finite_sample_level_is_the_pooled_rule():
    assert cf.finite_sample_level(9, 0.8) == pytest.approx(8 / 9)  # 10 x 0.8 / 9
    assert cf.finite_sample_level(5, 0.8) == pytest.approx(0.96)  # 6 x 0.8 / 5: short of the largest score
    assert cf.finite_sample_level(4, 0.8) == pytest.approx(1.0)  # 5 x 0.8 / 4: the largest
    assert cf.finite_sample_level(3, 0.8) > 1.0  # 4 x 0.8 / 3: no finite interval
    assert math.isinf(cf.unit_quantile([0.1, 0.2, 0.3], ["a", "b", "c"], 0.8))


def test_one_score_a_unit_is_the_usual_split_conformal_order_statistic():
    rng = np.random.default_rng(3)
    for n in (4, 5, 7, 9, 12):
        scores = rng.random(n)
        k = math.ceil((n + 1) * 0.8 - 1e-12)  # the ceil((n + 1)(1 - alpha))-th smallest, by hand
        assert cf.unit_quantile(scores, list(range(n)), 0.8) == pytest.approx(np.sort(scores)[k - 1])


def test_each_unit_weighs_the_same_whatever_its_points():
    scores = [0.1, 0.3, 0.2, 0.5, 0.6, 0.7, 0.8]
    units = ["A", "A", "B", "C", "C", "C", "C"]
    # three units, level 0.5: 4 x 0.5 / 3 = 2/3; weights A 1/6 each, B 1/3, C 1/12 each; sorted
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


@pytest.mark.parametrize("n, within", [(9, 0.0), (9, 0.5), (5, 0.5)])
def test_the_rule_covers_a_new_unit_in_a_monte_carlo_of_exchangeable_units(n, within):
    rng = np.random.default_rng(7)
    level, trials = 0.8, 3000
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
    if n == 5:
        # five units at 80 %: the ceiling rule read on pooled shares takes the largest score, and covers more
        # than the pooled rule needs to
        largest = _coverage(np.random.default_rng(7), trials, n, level, within, lambda s, u: np.max(s))
        assert largest.mean() > cover.mean() + 3 * se


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
    u = np.concatenate([[p.run.family] * int(p.scored.sum()) for p in others])
    # five other families, each weighing a fifth: the smallest score whose pooled share reaches 6 x 0.8 / 5,
    # found by brute force; short of the largest of their scores
    assert widths["DeepSeek"] == pytest.approx(_brute_quantile(list(s), list(u)))
    assert widths["DeepSeek"] < s.max()
    c = cf.calibrated(held, unit)
    p = next(q for q in c.runs if q.run.id == deepseek[0].run.id)
    lo, hi = cf.acceptance_band(deepseek[0])
    np.testing.assert_allclose(p.lo, lo * np.exp(-widths["DeepSeek"]))
    np.testing.assert_allclose(p.hi, hi * np.exp(widths["DeepSeek"]))


# --- the library's own intervals: read from the stored hold-out by model family ----------------
def _brute_quantile(scores, units, level=0.8):
    """The finite-sample unit quantile by brute force: every score tried as the half-width, each unit's share
    of points at or below it averaged over the units (each unit weighing the same), the smallest whose average
    reaches (n + 1) level / n; None where that exceeds 1."""
    names = sorted(set(units))
    n = len(names)
    need = (n + 1) * level / n
    if need > 1:
        return None
    for t in sorted(set(scores)):
        share = sum(sum(1 for s, u in zip(scores, units) if u == name and s <= t)
                    / sum(1 for u in units if u == name) for name in names) / n
        if share >= need - 1e-12:
            return t
    return None


def _stored_scores():
    """Each scored point of the stored hold-out by model family: (family, log distance outside its band at
    acceptance -+0.05), the band priced by hand from the committed tokens sum_k alpha^k."""
    import json
    from importlib import resources

    raw = json.loads(resources.files("speclib").joinpath("data", "calibration", "held_out.json").read_text())
    runs = {p.run.id: p for p in held_out.stored_held_out("model").runs}
    out = []
    for fold in raw["model"]["folds"].values():
        for rid, rec in fold["runs"].items():
            p = runs[rid]
            first = {}
            for b, g, *_ in rec["points"]:
                first[b] = min(first.get(b, g), g)
            for b, g, measured, predicted, _, _, scored in rec["points"]:
                if not scored:
                    continue

                def n(a, g):
                    a = min(max(a, 0.0), 1.0)
                    return sum(a ** k for k in range(int(g) + 1))

                factors = [1.0]
                for d in (-0.05, 0.05):
                    a = cf._alpha_at(p.run, b, g)
                    f = n(a + d, g) / n(a, g)
                    if not p.is_speedup:
                        a0 = cf._alpha_at(p.run, b, first[b])
                        f /= n(a0 + d, first[b]) / n(a0, first[b])
                    factors.append(f)
                lo, hi = predicted * min(factors), predicted * max(factors)
                out.append((p.run.family, max(math.log(measured / hi), math.log(lo / measured), 0.0)))
    return out


def test_the_library_half_widths_are_the_brute_force_quantile_of_the_other_families_stored_scores():
    from speclib.core import calibrated as cal

    pts = _stored_scores()
    stored = cal.stored_intervals()
    families = sorted({f for f, _ in pts})
    assert sorted(stored["speedup"]) == families and len(families) >= 5
    for fam in families:
        others = [(f, s) for f, s in pts if f != fam]
        expect = _brute_quantile([s for _, s in others], [f for f, _ in others])
        assert stored["speedup"][fam] == pytest.approx(expect, rel=1e-9, abs=1e-12), fam
    assert stored["speedup_any"] == pytest.approx(_brute_quantile([s for _, s in pts], [f for f, _ in pts]))
    # the plain decode TPOT's: held out on two families, too few for a finite 80 % interval (3 x 0.8 / 2 > 1)
    assert stored["decode_any"] is None and cal.half_width(speclib.Deployment("llama-3.1-8b", "h100").model,
                                                          "decode") == math.inf


def test_a_calibrated_speedup_interval_is_acceptance_range_widened_by_its_familys_half_width():
    from speclib.core import calibrated as cal

    pts = _stored_scores()
    for model, fam in (("llama-3.1-8b", "Llama"), ("deepseek-r1", "DeepSeek")):
        dep = speclib.Deployment(model, "h200", step_time="calibrated", tp=8 if fam == "DeepSeek" else 1)
        alpha, gamma = 0.7, 3
        iv = speclib.speedup(alpha, gamma, 16, 4096, deployment=dep, interval=True)
        others = [(f, s) for f, s in pts if f != fam]
        w = _brute_quantile([s for _, s in others], [f for f, _ in others])
        n = lambda a: sum(a ** k for k in range(gamma + 1))  # noqa: E731
        assert float(iv.lo) == pytest.approx(float(iv.value) * n(alpha - 0.05) / n(alpha) * math.exp(-w), rel=1e-9)
        assert float(iv.hi) == pytest.approx(float(iv.value) * n(alpha + 0.05) / n(alpha) * math.exp(w), rel=1e-9)
        assert f"{100 * cal.INTERVAL_LEVEL:.0f} % cross-conformal by model family" in cal.interval_name(dep.model)
    # no draft: exactly plain decoding, no interval to speak of
    plain = speclib.speedup(0.7, 0, 16, 4096, deployment=dep, interval=True)
    assert float(plain.lo) == float(plain.hi) == float(plain.value) == pytest.approx(1.0)


def test_a_family_the_hold_out_lacks_takes_every_familys_scores():
    from speclib.core import calibrated as cal

    class Other:
        family = "Nemotron"

    pts = _stored_scores()
    assert cal.half_width(Other()) == pytest.approx(_brute_quantile([s for _, s in pts], [f for f, _ in pts]))
