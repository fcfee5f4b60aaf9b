"""Bad input gets a ValueError naming the parameter and its allowed range, and
the edges of the valid range give finite numbers without warnings.
"""
import itertools
import math

import numpy as np
import pytest

import speclib
from speclib import presets
from speclib.core import attention
from speclib.core import cost
from speclib.core import moe

NAN, INF = float("nan"), float("inf")

POSITIVE = r"\(0, inf\)"
NON_NEGATIVE = r"\[0, inf\)"
UNIT = r"\[0, 1\]"

# (id, call, message pattern): the pattern names the parameter, then its range.
BAD_CALLS = [
    # experts_activated(B, k, E)
    ("experts B=0", lambda: speclib.experts_activated(0, 6, 256), rf"^B .*{POSITIVE}"),
    ("experts B<0", lambda: speclib.experts_activated(-3, 6, 256), rf"^B .*{POSITIVE}"),
    ("experts B=nan", lambda: speclib.experts_activated(NAN, 6, 256), rf"^B .*{POSITIVE}.*NaN"),
    ("experts B=inf", lambda: speclib.experts_activated(INF, 6, 256), rf"^B .*{POSITIVE}"),
    ("experts B in array", lambda: speclib.experts_activated(np.array([1.0, NAN]), 6, 256), rf"^B .*{POSITIVE}"),
    ("experts B text", lambda: speclib.experts_activated("many", 6, 256), rf"^B .*{POSITIVE}"),
    ("experts B empty", lambda: speclib.experts_activated([], 6, 256), rf"^B .*{POSITIVE}"),
    ("experts k>E", lambda: speclib.experts_activated(1, 300, 256), r"^k .*\[1, E\]"),
    ("experts k>E in array", lambda: speclib.experts_activated(1, np.array([2, 9]), 8), r"^k .*\[1, E\]"),
    ("experts k=0", lambda: speclib.experts_activated(1, 0, 256), r"^k .*integer.*\[1, inf\)"),
    ("experts k fractional", lambda: speclib.experts_activated(1, 2.5, 256), r"^k .*integer.*\[1, inf\)"),
    ("experts E fractional", lambda: speclib.experts_activated(1, 2, 8.5), r"^E .*integer.*\[1, inf\)"),
    ("experts E=nan", lambda: speclib.experts_activated(1, 2, NAN), r"^E .*\[1, inf\)"),
    # moe helpers
    ("rate B=0", lambda: moe.experts_activated_rate(0, 6, 256), rf"^B .*{POSITIVE}"),
    ("rate k>E", lambda: moe.experts_activated_rate(1, 9, 8), r"^k .*\[1, E\]"),
    ("ffn_intensity B<0", lambda: moe.ffn_intensity(-1), rf"^B .*{POSITIVE}"),
    ("ffn_intensity model", lambda: moe.ffn_intensity(8, model="GPT-9"), r"unknown model 'GPT-9'; known: .*DeepSeek-V4-Flash"),
    ("ffn_intensity hardware", lambda: moe.ffn_intensity(8, hardware="TPU"), r"unknown hardware 'TPU'; known: .*B200"),
    ("dense_intensity B=nan", lambda: moe.dense_equivalent_intensity(NAN), rf"^B .*{POSITIVE}"),
    ("knees model", lambda: moe.knees("GPT-9"), r"unknown model .*known"),
    # expected_committed(alpha, gamma)
    ("committed alpha>1", lambda: speclib.expected_committed(1.5, 3), rf"^alpha .*{UNIT}"),
    ("committed alpha<0", lambda: speclib.expected_committed(-0.1, 3), rf"^alpha .*{UNIT}"),
    ("committed alpha=nan", lambda: speclib.expected_committed(NAN, 3), rf"^alpha .*{UNIT}.*NaN"),
    ("committed alpha complex", lambda: speclib.expected_committed(0.5j, 3), rf"^alpha .*{UNIT}"),
    ("committed gamma<0", lambda: speclib.expected_committed(0.5, -1), rf"^gamma .*integer.*{NON_NEGATIVE}"),
    ("committed gamma fractional", lambda: speclib.expected_committed(0.5, 2.5), rf"^gamma .*integer.*{NON_NEGATIVE}"),
    ("committed gamma=inf", lambda: speclib.expected_committed(0.5, INF), rf"^gamma .*integer.*{NON_NEGATIVE}"),
    # attention_intensity(T, S, model, variant)
    ("intensity T=0", lambda: speclib.attention_intensity(0, 1024), rf"^T .*{POSITIVE}"),
    ("intensity S=0", lambda: speclib.attention_intensity(1, 0), rf"^S .*{POSITIVE}"),
    ("intensity S<0", lambda: speclib.attention_intensity(1, -512), rf"^S .*{POSITIVE}"),
    ("intensity S=inf", lambda: speclib.attention_intensity(1, INF), rf"^S .*{POSITIVE}"),
    ("intensity variant", lambda: speclib.attention_intensity(1, 1024, variant="sliding"), r"^variant must be one of 'mla', 'hca', 'csa', 'indexer'"),
    ("intensity variant type", lambda: speclib.attention_intensity(1, 1024, variant=3), r"^variant must be one of"),
    ("intensity gqa on MLA", lambda: speclib.attention_intensity(1, 1024, variant="gqa"), r"variant 'gqa' .*'mla', 'hca', 'csa', 'indexer'"),
    ("intensity hca on GQA", lambda: speclib.attention_intensity(1, 1024, "Llama-3-70B", "hca"), r"variant 'hca' .*'gqa'"),
    ("intensity model", lambda: speclib.attention_intensity(1, 1024, model="GPT-9"), r"unknown model 'GPT-9'; known: .*DeepSeek-V4-Flash"),
    ("intensity_from_constants m_c", lambda: attention.intensity_from_constants(1, 1, 0, 1, 1), rf"^context_bytes .*{POSITIVE}"),
    ("intensity_from_constants m_q", lambda: attention.intensity_from_constants(1, 1, 1, -1, 1), rf"^query_bytes .*{NON_NEGATIVE}"),
    ("compute_bound_width variant", lambda: attention.compute_bound_width(variant="x"), r"^variant must be one of"),
    ("compute_bound_width hardware", lambda: attention.compute_bound_width(hardware="x"), r"unknown hardware 'x'; known"),
    ("mha_form_crossover GQA", lambda: attention.mha_form_crossover("Llama-3-70B"), r"^model must use MLA"),
    # marginal_cost(B, S, c_draft, model, hardware)
    ("marginal B=0", lambda: speclib.marginal_cost(0, 4096), rf"^B .*{POSITIVE}"),
    ("marginal S=0", lambda: speclib.marginal_cost(8, 0), rf"^S .*{POSITIVE}"),
    ("marginal c<0", lambda: speclib.marginal_cost(8, 4096, -0.1), rf"^c_draft .*{NON_NEGATIVE}"),
    ("marginal c=nan", lambda: speclib.marginal_cost(8, 4096, NAN), rf"^c_draft .*{NON_NEGATIVE}"),
    ("marginal verify_width", lambda: speclib.marginal_cost(8, 4096, 0.1, verify_width=0.5), r"^verify_width .*\[1, inf\)"),
    ("marginal model", lambda: speclib.marginal_cost(8, 4096, 0.1, model="GPT-9"), r"unknown model 'GPT-9'; known"),
    ("marginal hardware", lambda: speclib.marginal_cost(8, 4096, 0.1, hardware="TPU"), r"unknown hardware 'TPU'; known: .*B200"),
    ("cost_shares S=nan", lambda: cost.cost_shares(8, NAN), rf"^S .*{POSITIVE}"),
    ("cost_model model", lambda: cost.cost_model("GPT-9"), r"unknown model"),
    # speedup(alpha, gamma, B, S, c_draft)
    ("speedup alpha>1", lambda: speclib.speedup(1.01, 2, 8, 4096), rf"^alpha .*{UNIT}"),
    ("speedup gamma<0", lambda: speclib.speedup(0.5, -2, 8, 4096), rf"^gamma .*{NON_NEGATIVE}"),
    ("speedup gamma fractional", lambda: speclib.speedup(0.5, 1.5, 8, 4096), rf"^gamma .*integer"),
    ("speedup B<0", lambda: speclib.speedup(0.5, 2, -8, 4096), rf"^B .*{POSITIVE}"),
    ("speedup S=0", lambda: speclib.speedup(0.5, 2, 8, 0), rf"^S .*{POSITIVE}"),
    ("speedup c<0", lambda: speclib.speedup(0.5, 2, 8, 4096, -1), rf"^c_draft .*{NON_NEGATIVE}"),
    ("speedup c=inf", lambda: speclib.speedup(0.5, 2, 8, 4096, INF), rf"^c_draft .*{NON_NEGATIVE}"),
    ("speedup hardware", lambda: speclib.speedup(0.5, 2, 8, 4096, 0.1, hardware="TPU"), r"unknown hardware"),
    # optimal_gamma(alpha, B, S, c_draft, ..., gamma_max)
    ("optimal alpha<0", lambda: speclib.optimal_gamma(-0.5, 8, 4096), rf"^alpha .*{UNIT}"),
    ("optimal alpha=inf", lambda: speclib.optimal_gamma(INF, 8, 4096), rf"^alpha .*{UNIT}"),
    ("optimal B=0", lambda: speclib.optimal_gamma(0.5, 0, 4096), rf"^B .*{POSITIVE}"),
    ("optimal S<0", lambda: speclib.optimal_gamma(0.5, 8, -1), rf"^S .*{POSITIVE}"),
    ("optimal c<0", lambda: speclib.optimal_gamma(0.5, 8, 4096, -0.1), rf"^c_draft .*{NON_NEGATIVE}"),
    ("optimal gamma_max<0", lambda: speclib.optimal_gamma(0.5, 8, 4096, gamma_max=-1), r"^gamma_max .*integer.*\[0, \d+\]"),
    ("optimal gamma_max fractional", lambda: speclib.optimal_gamma(0.5, 8, 4096, gamma_max=2.5), r"^gamma_max .*integer.*\[0, \d+\]"),
    ("optimal gamma_max nan", lambda: speclib.optimal_gamma(0.5, 8, 4096, gamma_max=NAN), r"^gamma_max .*integer.*\[0, \d+\]"),
    ("optimal gamma_max text", lambda: speclib.optimal_gamma(0.5, 8, 4096, gamma_max="8"), r"^gamma_max .*integer.*\[0, \d+\]"),
    ("optimal gamma_max bool", lambda: speclib.optimal_gamma(0.5, 8, 4096, gamma_max=True), r"^gamma_max .*integer.*\[0, \d+\]"),
    ("optimal gamma_max huge", lambda: speclib.optimal_gamma(0.5, 8, 4096, gamma_max=10**9), r"^gamma_max .*integer.*\[0, \d+\]"),
    ("optimal model", lambda: speclib.optimal_gamma(0.5, 8, 4096, model="GPT-9"), r"unknown model"),
    # presets
    ("hardware name", lambda: presets.hardware("TPU-v9"), r"unknown hardware 'TPU-v9'; known: .*B200.*H100"),
    ("model name", lambda: presets.model("GPT-9"), r"unknown model 'GPT-9'; known: .*DeepSeek-V4-Flash"),
    ("precision", lambda: presets.B200.ridge("fp16"), r"^precision must be one of 'fp4', 'fp8', 'bf16'"),
]


@pytest.mark.parametrize("call, pattern", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_value_error_naming_parameter_and_range(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


# --- the edges of the valid range: finite numbers, no warnings ------------------

EDGE_ALPHAS = (0.0, 1.0, 0.5, 1 - 1e-15)
EDGE_BATCHES = (1e-6, 1.0, 1e9)
EDGE_CONTEXTS = (1.0, 4096.0, 1e9)
EDGE_DRAFTS = (0.0, 0.1, 10.0)


def all_finite(value):
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, tuple):
        return all(all_finite(v) for v in value)
    return bool(np.all(np.isfinite(value)))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("model", ["DeepSeek-V4-Flash", "Llama-3-70B"])
@pytest.mark.parametrize("hardware", ["B200", "H100"])
@pytest.mark.parametrize("query_bytes", [False, True])
def test_edges_give_finite_values_without_warnings(model, hardware, query_bytes):
    for B, S, c_draft in itertools.product(EDGE_BATCHES, EDGE_CONTEXTS, EDGE_DRAFTS):
        ledger = speclib.marginal_cost(B, S, c_draft, model, hardware, query_bytes=query_bytes)
        assert all_finite(ledger), (B, S, c_draft)
        for alpha in EDGE_ALPHAS:
            deployment = speclib.Deployment(model, hardware, query_bytes=query_bytes)
            gamma_star, best = speclib.optimal_gamma(alpha, B, S, c_draft, deployment=deployment)
            assert math.isfinite(best) and best >= 1.0, (alpha, B, S, c_draft)
            spd = speclib.speedup(alpha, np.array([0, 1, 64]), B, S, c_draft, deployment=deployment)
            assert all_finite(spd) and spd[0] == 1.0, (alpha, B, S, c_draft)


@pytest.mark.filterwarnings("error")
def test_edges_as_arrays_give_finite_values_without_warnings():
    B = np.array(EDGE_BATCHES)[:, None, None]
    S = np.array(EDGE_CONTEXTS)[None, :, None]
    c_draft = np.array(EDGE_DRAFTS)[None, None, :]
    assert all_finite(speclib.marginal_cost(B, S, c_draft))
    alpha = np.array(EDGE_ALPHAS)[:, None, None, None]
    gamma_star, best = speclib.optimal_gamma(alpha, B, S, c_draft)
    assert best.shape == (4, 3, 3, 3) and all_finite(best) and np.all(best >= 1)
    assert all_finite(speclib.speedup(alpha, 7, B, S, c_draft))
    assert all_finite(speclib.expected_committed(np.array(EDGE_ALPHAS), np.array([[0], [1], [1000]])))
    assert all_finite(speclib.experts_activated(np.array(EDGE_BATCHES), 6, 256))
    assert all_finite(moe.experts_activated_rate(np.array(EDGE_BATCHES), 6, 256))
    assert all_finite(speclib.attention_intensity(np.array([1e-6, 1, 1e6]), np.array(EDGE_CONTEXTS)[:, None]))
    for variant in ("hca", "csa", "indexer"):
        assert all_finite(speclib.attention_intensity(2, np.array(EDGE_CONTEXTS), variant=variant))


@pytest.mark.filterwarnings("error")
def test_no_speculation_wins_when_nothing_is_accepted():
    # alpha = 0: every draft is wasted, so gamma* = 0 with speedup exactly 1.
    gamma_star, best = speclib.optimal_gamma(0.0, np.array(EDGE_BATCHES), 4096, 0.0)
    assert np.all(gamma_star == 0) and np.all(best == 1.0)


def test_valid_extremes_are_accepted():
    assert speclib.expected_committed(0, 0) == 1
    assert speclib.expected_committed(1, 0) == 1
    assert speclib.optimal_gamma(0.5, 8, 4096, 0.0, gamma_max=0) == (0, 1.0)
    assert speclib.experts_activated(1, 256, 256) == pytest.approx(256)
    assert speclib.marginal_cost(8, 4096, 0.0)["drafter"] == 0.0
