"""Skewed routing: the expected distinct experts under a measured popularity,
checked against sympy (the uniform limit), a Monte Carlo of tokens routed
with those probabilities, and the measured width curve."""
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from speclib.core import moe
from speclib.core import step
from speclib.formulas import moe as fmoe

POPULARITY = moe.measured_popularity()
MEASURED = moe.measured_width_depth()


def test_the_skewed_sum_reduces_to_the_uniform_coupon_count():
    assert fmoe.skewed_reduces_to_uniform() == 0


def test_the_skewed_sum_is_the_catalogue_term_summed():
    E, k, B = 5, 2, sp.Rational(7, 2)
    shares = [sp.Rational(v, 20) for v in (1, 2, 3, 4, 10)]
    exact = fmoe.experts_activated_skewed_expr.subs({fmoe.E: E, fmoe.k: k, fmoe.B: B}).doit()
    exact = exact.subs({fmoe.p[j]: shares[j] for j in range(E)})
    assert float(exact) == pytest.approx(moe.experts_activated(3.5, 2, 5, routing=[float(s) for s in shares]),
                                         rel=1e-13)


def test_uniform_shares_give_the_uniform_count():
    B = np.geomspace(0.5, 5000, 40)
    uniform = np.full(256, 1 / 256)
    assert np.allclose(moe.experts_activated(B, 8, 256, routing=uniform), moe.experts_activated(B, 8, 256),
                       rtol=1e-12)


def test_measured_popularity_reproduces_the_measured_width_curve():
    """width_vs_depth.json: N independent sequences in one verify, Qwen3.6-35B-A3B (k = 8 of 256)."""
    predicted = moe.experts_activated(MEASURED["N"], 8, 256, routing=POPULARITY)
    assert np.all(np.abs(predicted / MEASURED["width"] - 1) < 0.005)


def test_one_sequences_depth_touches_fewer_experts_than_the_skewed_width():
    predicted = moe.experts_activated(MEASURED["N"], 8, 256, routing=POPULARITY)
    assert np.all(MEASURED["depth"][1:] < predicted[1:])
    assert np.all(predicted[1:] < MEASURED["uniform"][1:] * 1.01)


def _systematic_sample(inclusion, rng, size):
    """``size`` independent draws (rows) of k distinct experts with inclusion
    probabilities ``inclusion`` (sum k, each <= 1): systematic (Madow)
    sampling, exact for every expert."""
    edges = np.concatenate([[0.0], np.cumsum(inclusion)])
    points = rng.uniform(size=(size, 1)) + np.arange(round(edges[-1]))
    return np.searchsorted(edges, points, side="right") - 1


def test_monte_carlo_of_routed_tokens_matches_the_expectation():
    rng = np.random.default_rng(14)
    k, shares = 8, POPULARITY
    inclusion = k * shares
    trials = 3000
    for B in (1, 3, 16, 64):
        # every token of every trial at once: row t * B + j is token j of trial t
        picks = _systematic_sample(inclusion, rng, trials * B)
        ordered = np.sort(picks, axis=1)
        assert np.all(ordered[:, 1:] != ordered[:, :-1]), "a token picked an expert twice"
        touched = np.zeros((trials, shares.size), dtype=bool)
        touched[np.repeat(np.arange(trials), B)[:, None], picks] = True
        counts = touched.sum(axis=1)
        expected = moe.experts_activated(B, k, 256, routing=shares)
        standard_error = np.std(counts) / np.sqrt(len(counts))
        assert abs(np.mean(counts) - expected) < 4 * standard_error + 1e-9


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1), st.floats(min_value=1.0, max_value=3000),
       st.floats(min_value=0.1, max_value=5.0))
def test_skew_never_touches_more_experts_than_uniform(seed, B, concentration):
    """1 - (1 - q)^B is concave in q for B >= 1, so at a fixed sum of pick
    probabilities the equal split touches the most experts (below one token
    the smooth interpolation is convex and the inequality turns)."""
    rng = np.random.default_rng(seed)
    shares = rng.dirichlet(np.full(64, concentration))
    shares = np.minimum(shares, 1 / 4)
    shares /= shares.sum()
    if shares.max() * 4 > 1:
        return
    assert moe.experts_activated(B, 4, 64, routing=shares) <= moe.experts_activated(B, 4, 64) * (1 + 1e-12)


def test_step_model_with_uniform_routing_is_the_uniform_step():
    B, T, S = np.array([1.0, 8, 64, 512])[:, None], np.arange(1, 9.0), 4096.0
    plain = step.step_time(B, T, S, "qwen3.6")
    same = step.step_time(B, T, S, "qwen3.6", routing=np.full(256, 1 / 256))
    assert np.allclose(plain, same, rtol=1e-12)
    skewed = step.step_time(B, T, S, "qwen3.6", routing=POPULARITY)
    assert np.all(skewed <= plain * (1 + 1e-12)) and np.any(skewed < plain * 0.97)


def test_step_model_slots_count_with_routing():
    model = step.step_model("qwen3.6", routing=POPULARITY, expert_count="slots")
    touched = model.experts_touched(np.array(2.0), np.array(1.0))
    assert touched == pytest.approx(np.sum(1 - (1 - POPULARITY) ** 16))


# --- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("routing, message", [
    (np.full(255, 1 / 255), r"routing must be a vector of 256 expert shares"),
    (np.full((16, 16), 1 / 256), r"routing must be a vector of 256 expert shares"),
    (np.r_[-0.01, np.full(255, 1.01 / 255)], r"routing shares must be non-negative"),
    (np.full(256, 1.01 / 256), r"routing shares must sum to 1 \(within 0.001\); got 1.01"),
    (np.r_[np.nan, np.full(255, 1 / 255)], r"routing must hold finite shares"),
    (np.r_[0.2, np.full(255, 0.8 / 255)], r"routing: with k = 8 picks per token no share may exceed 1/k"),
    ("popular", r"routing must be a vector"),
])
def test_bad_popularity_names_routing(routing, message):
    with pytest.raises(ValueError, match=message):
        moe.experts_activated(4, 8, 256, routing=routing)


def test_routing_needs_a_mixture_of_experts():
    with pytest.raises(ValueError, match="routing is for mixture-of-experts models"):
        step.step_model("llama-3-70b", routing=POPULARITY)


def test_a_sum_within_tolerance_is_rescaled():
    shares = POPULARITY * 1.0008
    assert moe.experts_activated(10, 8, 256, routing=shares) == pytest.approx(
        moe.experts_activated(10, 8, 256, routing=POPULARITY), rel=1e-12)


# --- the chapter's gutter: the whole step against the paper's per-layer ledger -------------------


def test_outside_the_layers_by_hand():
    from speclib.presentation.figures import skewed_routing
    # DeepSeek-V4-Flash's config: vocabulary 129,280, hidden 4,096, 43 MoE layers of 256 routed experts
    out = skewed_routing.outside_the_layers("DeepSeek-V4-Flash")
    assert out == {"head": 129_280 * 4096, "routers": 43 * 4096 * 256, "total": 129_280 * 4096 + 43 * 4096 * 256}
    for model in ("Qwen3.6-35B-A3B", "Llama-3-70B", "DeepSeek-V3"):  # linear layers, dense, dense FFN layers
        with pytest.raises(ValueError, match="model must be a mixture-of-experts model whose layers are all alike"):
            skewed_routing.outside_the_layers(model)


def test_gutter_by_brute_force_and_the_ledger():
    """The whole step's gutter by looping over gamma with speclib.speedup on a
    Deployment with equal shares; left without the weights outside the layers
    it is the per-layer ledger's (Figure 3's, from the claims)."""
    import speclib
    from speclib.evidence import claims
    from speclib.presentation.figures import skewed_routing
    case = skewed_routing.V4_CASE
    g = skewed_routing.gutter(**case, max_batch=20)
    # the chapter's sensitivity prices DeepSeek-V4's attention as the paper does
    whole = speclib.Deployment(case["model"], case["hardware"], c_draft=case["c_draft"], routing=np.full(256, 1 / 256),
                               attention="paper")
    skewed = whole.replace(routing=POPULARITY)

    def best(deployment, B):
        values = [float(speclib.speedup(case["alpha"], k, B, case["S"], deployment=deployment)) for k in range(17)]
        return int(np.argmax(values)), max(values)

    zeros = [B for B in range(1, 21) if best(whole, B)[0] == 0]
    assert g["uniform"] == [(zeros[0], zeros[-1])] and zeros == list(range(zeros[0], zeros[-1] + 1))
    assert g["skewed"] == [] and all(best(skewed, B)[0] > 0 for B in range(1, 21))
    gains = [best(skewed, B)[1] for B in zeros]
    assert g["skewed_speedup"] == pytest.approx((min(gains), max(gains)), rel=1e-12)
    assert g["layers_only"] == claims.figure3_zero_runs()[:1]
    assert skewed_routing.runs_text(g["uniform"]) == f"{zeros[0]}\u2013{zeros[-1]}"
    assert skewed_routing.runs_text([(3, 3), (1000, 1200)]) == "3 and 1,000\u20131,200"
