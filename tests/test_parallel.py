"""Expert parallelism (speclib.parallel).

Independent routes: the single-GPU cost model (G = 1 must reproduce it), a
seeded Monte Carlo of uniform top-k routing over G GPUs, sympy identities
(the comm slope, the G = 1 reduction), and byte counts worked out here from
the model's hidden size and the interconnect datasheet numbers.
"""
import numpy as np
import pytest
import sympy as sp

from speclib.formulas import cost as cost_forms
from speclib.formulas import moe as moe_forms
from speclib.formulas import parallel as parallel_forms
import speclib
from speclib import presets
from speclib.core import cost
from speclib.evidence import derivations
from speclib.core import moe
from speclib.core import parallel
from speclib.presentation.figures import expert_parallelism

BATCHES = np.array([1.0, 2.0, 7.0, 30.0, 100.0, 281.0, 1000.0, 5000.0, 30000.0])
FLASH = presets.model("DeepSeek-V4-Flash")


# --- symbolic -----------------------------------------------------------------


def test_local_count_at_one_gpu_is_the_single_gpu_coupon_count():
    at_one = parallel_forms.local_experts_expr.subs(parallel_forms.G, 1)
    assert sp.simplify(at_one - moe_forms.experts_activated_expr.subs(moe_forms.B, cost_forms.t)) == 0
    assert sp.simplify(parallel_forms.ep_moe_cost_expr.subs(parallel_forms.G, 1) - cost_forms.moe_cost_expr) == 0


def test_local_count_limits():
    E, k, G, t = moe_forms.E, moe_forms.k, parallel_forms.G, cost_forms.t
    # every local expert is read once the group's tokens are plentiful
    assert sp.limit(parallel_forms.local_experts_expr.subs({E: 256, k: 6, G: 8}), t, sp.oo) == sp.Rational(256, 8)
    # a single token in the whole group touches k/G local experts on average
    assert sp.simplify(parallel_forms.local_experts_expr.subs(t, 1 / G) - k / G) == 0


def test_comm_slope_is_one():
    assert parallel_forms.comm_slope_expr == 1
    # and the cost is homogeneous of degree one in tokens
    c = parallel_forms.comm_cost_expr
    lam = sp.Symbol("lam", positive=True)
    assert sp.simplify(c.subs(cost_forms.t, lam * cost_forms.t) - lam * c) == 0


def test_no_traffic_at_one_gpu():
    assert parallel_forms.link_bytes_per_token_expr.subs(parallel_forms.G, 1) == 0


# --- G = 1 reproduces the single-GPU model -------------------------------------


@pytest.mark.parametrize("network", [None, parallel.FREE_NETWORK])
def test_one_gpu_reproduces_single_gpu_costs_exactly(network):
    single = cost.cost_model()
    ep = parallel.expert_parallel_cost_model(G=1, interconnect=network)
    for width in (1.0, 2.0, 5.0):
        np.testing.assert_array_equal(ep.verify(BATCHES, width, 4096.0), single.verify(BATCHES, width, 4096.0))
    np.testing.assert_array_equal(ep.ffn(BATCHES), single.ffn(BATCHES))
    np.testing.assert_array_equal(ep.ffn_slope(BATCHES), single.ffn_slope(BATCHES))
    np.testing.assert_array_equal(ep.comm(BATCHES), np.zeros_like(BATCHES))


def test_one_gpu_reproduces_gamma_star_and_the_ledger():
    g1, s1 = parallel.optimal_gamma(0.75, BATCHES, 4096, 0.1, G=1)
    g0, s0 = speclib.optimal_gamma(0.75, BATCHES, 4096, 0.1)
    np.testing.assert_array_equal(g1, g0)
    np.testing.assert_array_equal(s1, s0)
    ledger_ep = parallel.marginal_cost(BATCHES, 4096, 0.1, G=1)
    ledger = speclib.marginal_cost(BATCHES, 4096, 0.1)
    np.testing.assert_allclose(ledger_ep["total"], ledger["total"], rtol=1e-14)


# --- the local coupon count against a routing Monte Carlo ----------------------


@pytest.mark.parametrize("E, k, G, t", [(256, 6, 8, 3), (256, 6, 64, 1), (64, 2, 4, 5), (256, 6, 8, 40)])
def test_local_count_matches_a_routing_monte_carlo(E, k, G, t):
    rng = np.random.default_rng(1234 + E + k + G + t)
    tokens = G * t
    trials = max(200, int(2e7 // (tokens * E)))
    # each token picks k distinct experts: the k smallest of E uniform keys
    picks = np.argpartition(rng.random((trials, tokens, E)), k, axis=2)[:, :, :k]
    owner = picks // (E // G)  # GPU g holds experts [g E/G, (g+1) E/G)
    touched = np.zeros((trials, E), dtype=bool)
    np.put_along_axis(touched, picks.reshape(trials, -1), True, axis=1)
    local = touched.reshape(trials, G, E // G).sum(axis=2)  # distinct local experts per GPU
    sample = local.mean(axis=1)  # average over GPUs (all have the same expectation)
    expected = parallel.local_experts_activated(t, k, E, G)
    stderr = sample.std() / np.sqrt(trials)
    assert abs(sample.mean() - expected) < 5 * stderr + 1e-12
    # routed picks landing per GPU average k t
    per_gpu_picks = np.stack([(owner == g).sum(axis=(1, 2)) for g in range(G)], axis=1)
    assert abs(per_gpu_picks.mean() - k * t) < 5 * per_gpu_picks.std() / np.sqrt(per_gpu_picks.size) + 1e-12


# --- communication ---------------------------------------------------------------


def test_comm_bytes_hand_count():
    # DeepSeek-V4-Flash: hidden 4096, top-6; fp8 dispatch (1 B), bf16 combine (2 B).
    hidden, k = FLASH.hidden_size, FLASH.ffn.top_k
    for G in (2, 8, 64):
        remote_picks = k * (G - 1) / G
        sent = remote_picks * hidden * (1 + 2)  # dispatch out + combine back to the others
        assert parallel.comm_bytes_per_token(FLASH, G) == pytest.approx(2 * sent)  # + the same received


def test_comm_cost_is_link_time_in_hbm_bytes_and_linear_in_tokens():
    ep = parallel.expert_parallel_cost_model(G=8, latency=False)  # by bandwidth alone
    b200 = presets.hardware("B200")
    link = 18 * 100e9  # NVLink 5: 18 links x 100 GB/s
    per_token_seconds = parallel.comm_bytes_per_token(FLASH, 8) / link
    tokens = np.array([1.0, 10.0, 1000.0])
    np.testing.assert_allclose(ep.comm(tokens), tokens * per_token_seconds * b200.memory_bandwidth, rtol=1e-12)
    np.testing.assert_allclose(ep.comm(2 * tokens), 2 * ep.comm(tokens), rtol=1e-14)
    np.testing.assert_array_equal(ep.comm_slope(tokens), np.ones(3))


# pplx-kernels' README, one token per GPU on H100s: NVLink (EP8) dispatch 41.6 us and
# combine 41.7 us; InfiniBand (IBGDA, EP64) dispatch 121.0 us and combine 58.6 us.
PPLX_LATENCY = {"NVLink4": (41.6e-6 + 41.7e-6) / 2, "NVLink5": (41.6e-6 + 41.7e-6) / 2,
                "InfiniBand-NDR": (121.0e-6 + 58.6e-6) / 2}


@pytest.mark.parametrize("net", sorted(PPLX_LATENCY))
def test_the_latency_is_a_dispatch_and_a_combine_per_layer_whatever_the_tokens(net):
    G = 8 if net != "InfiniBand-NDR" else 64
    hw = "H100" if net == "NVLink4" else "B200"
    with_latency = parallel.expert_parallel_cost_model(hardware=hw, G=G, interconnect=net)
    bandwidth = parallel.expert_parallel_cost_model(hardware=hw, G=G, interconnect=net, latency=False)
    M = presets.hardware(hw).memory_bandwidth
    tokens = np.array([1.0, 10.0, 1000.0])
    # two messages (a dispatch, a combine) of the measured latency each, in HBM byte-equivalents
    np.testing.assert_allclose(with_latency.comm(tokens) - bandwidth.comm(tokens),
                               np.full(3, 2 * PPLX_LATENCY[net] * M), rtol=1e-12)
    # the slope is the bandwidth term's share, and the crossover is where the two terms are equal
    np.testing.assert_allclose(with_latency.comm_slope(tokens), bandwidth.comm(tokens) / with_latency.comm(tokens),
                               rtol=1e-12)
    t_x = with_latency.latency_crossover()
    assert float(bandwidth.comm(t_x)) == pytest.approx(2 * PPLX_LATENCY[net] * M, rel=1e-12)
    assert float(with_latency.comm_slope(t_x)) == pytest.approx(0.5, rel=1e-12)
    # a verify pays it once, like a plain step
    verify = with_latency.verify(BATCHES, 4.0, 4096.0) - bandwidth.verify(BATCHES, 4.0, 4096.0)
    np.testing.assert_allclose(verify, with_latency.decode(BATCHES, 4096.0) - bandwidth.decode(BATCHES, 4096.0),
                               rtol=1e-9)


def test_one_gpu_sends_no_message():
    np.testing.assert_array_equal(parallel.expert_parallel_cost_model(G=1).comm(BATCHES), np.zeros_like(BATCHES))
    assert parallel.expert_parallel_cost_model(G=1).latency_crossover() == float("inf")


def test_an_interconnect_without_a_latency_is_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"^interconnect 'InfinityFabric-MI300' has no latency \(latency_us") as info:
        parallel.expert_parallel_cost_model(hardware="MI300X", G=8)
    assert "\n" not in str(info.value)
    parallel.expert_parallel_cost_model(hardware="MI300X", G=8, latency=False)  # by bandwidth it can be priced
    with pytest.raises(ValueError, match=r"^latency must be True or False"):
        parallel.expert_parallel_cost_model(G=8, latency="yes")


def test_a_preset_file_without_a_latency_is_refused_naming_the_field(tmp_path, monkeypatch):
    import json
    from speclib.presets import catalog
    data = json.loads((catalog.DATA_DIR / "interconnects.json").read_text())
    del data["interconnects"][0]["latency_us"]
    (tmp_path / "interconnects.json").write_text(json.dumps(data))
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"^interconnects.json: interconnects\[0\] \(NVLink4\): missing fields "
                                         r"\['latency_us'\]") as info:
        catalog.read_table("interconnects")
    assert "\n" not in str(info.value)


def test_the_latency_raises_the_speedup_where_it_dominates():
    """Paid by a plain step and a verify alike, the latency makes a speculated
    token cheaper against the step: at one sequence per GPU the speedup is
    higher with it than by bandwidth alone, and higher than over a free
    network."""
    B = np.array([1.0, 4.0, 16.0])
    for G in (8, 64):
        _, s_lat = speclib.optimal_gamma(0.75, B, 4096, 0.1, deployment=speclib.Deployment(
            cost_model=parallel.expert_parallel_cost_model(G=G, interconnect=parallel.NVL72)))
        _, s_bw = speclib.optimal_gamma(0.75, B, 4096, 0.1, deployment=speclib.Deployment(
            cost_model=parallel.expert_parallel_cost_model(G=G, interconnect=parallel.NVL72, latency=False)))
        _, s_free = speclib.optimal_gamma(0.75, B, 4096, 0.1, deployment=speclib.Deployment(
            cost_model=parallel.expert_parallel_cost_model(G=G, interconnect="free")))
        assert np.all(s_lat > s_bw) and np.all(s_lat > s_free)


def test_verify_adds_comm_to_the_free_network_cost():
    with_comm = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72)
    free = parallel.expert_parallel_cost_model(G=64, interconnect="Free")
    diff = with_comm.verify(BATCHES, 3.0, 4096.0) - free.verify(BATCHES, 3.0, 4096.0)
    np.testing.assert_allclose(diff, with_comm.comm(3.0 * BATCHES), rtol=1e-12)


def test_a_free_network_prices_no_link_and_has_no_domain():
    free = parallel.expert_parallel_cost_model(G=256, interconnect=parallel.FREE_NETWORK)
    np.testing.assert_array_equal(free.comm(BATCHES), np.zeros_like(BATCHES))
    g, s = parallel.optimal_gamma(0.75, BATCHES, 4096, 0.1, G=64, interconnect="free")
    g_hand, s_hand = speclib.optimal_gamma(0.75, BATCHES, 4096, 0.1, deployment=speclib.Deployment(
        cost_model=parallel.expert_parallel_cost_model(G=64, interconnect="free")))
    np.testing.assert_array_equal(g, g_hand)
    np.testing.assert_array_equal(s, s_hand)
    with pytest.raises(ValueError, match=r"^unknown interconnect 'pigeon'.*'free'"):
        parallel.speedup(0.8, 3, 8, 512, interconnect="pigeon")


def test_ledger_comm_share_and_slope():
    bandwidth = parallel.ledger(parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72, latency=False), BATCHES, 4096, 0.1)
    assert np.all(bandwidth["comm"] == 1.0)
    ledger = parallel.marginal_cost(BATCHES, 4096, 0.1, G=64, interconnect=parallel.NVL72)
    assert np.all((ledger["comm_share"] > 0) & (ledger["comm_share"] < 1))
    # with its latency the all-to-all amortises: below the crossover a token pays under half of it
    t_x = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72).latency_crossover()
    assert np.all(ledger["comm"][BATCHES < t_x] < 0.5) and np.all(ledger["comm"][BATCHES > t_x] > 0.5)
    with pytest.raises(ValueError, match=r"^cost_model must be an ExpertParallelCostModel"):
        parallel.ledger(cost.cost_model(), BATCHES, 4096)


# --- interconnect presets -----------------------------------------------------------


def test_interconnect_datasheet_numbers():
    assert parallel.interconnect("NVLink5").bandwidth == 1.8e12
    assert parallel.interconnect("nvlink 4").bandwidth == 0.9e12
    assert parallel.interconnect("InfinityFabric-MI300").bandwidth == pytest.approx(896e9)
    assert parallel.interconnect("if-mi355x").bandwidth == pytest.approx(1075.2e9)
    assert parallel.default_interconnect("B200").name == "NVLink5"
    assert parallel.default_interconnect("H100").name == "NVLink4"
    assert parallel.default_interconnect("MI300X").name == "InfinityFabric-MI300"


def test_every_preset_chip_has_an_interconnect_or_says_so():
    for name in presets.hardware_names():
        try:
            net = parallel.default_interconnect(name)
        except ValueError as err:
            assert "interconnect" in str(err)
        else:
            assert net.bandwidth > 0


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("G", [0, 257, 2.5])
def test_bad_gpu_count(G):
    with pytest.raises(ValueError, match="G must be"):
        parallel.expert_parallel_cost_model(G=G, interconnect="InfiniBand-NDR")


def test_group_larger_than_the_domain_is_refused():
    with pytest.raises(ValueError, match=r"G must be in \[1, 8\]"):
        parallel.expert_parallel_cost_model(hardware="H100", G=64)
    parallel.expert_parallel_cost_model(hardware="H100", G=64, interconnect="InfiniBand-NDR")


def test_dense_model_is_refused():
    with pytest.raises(ValueError, match="mixture-of-experts"):
        parallel.expert_parallel_cost_model(model="Llama-3-70B", G=8)


def test_unknown_interconnect():
    with pytest.raises(ValueError, match=r"unknown interconnect .carrier pigeon.; known: .*NVLink"):
        parallel.interconnect("carrier pigeon")


def test_derivation_numbers_match_the_cost_model():
    d = derivations.expert_parallelism(G=64)
    assert d["value_link"].value == parallel.comm_bytes_per_token(FLASH, 64)
    ep = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72, latency=False)
    assert d["value_hbm"].value == pytest.approx(float(ep.comm(1.0)), rel=1e-12)
    with_latency = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72)
    assert d["value_latency"].value == pytest.approx(float(with_latency.comm_latency()), rel=1e-12)
    assert d["value_crossover"].value == pytest.approx(with_latency.latency_crossover(), rel=1e-12)


def test_the_latency_table_agrees_with_the_cost_models():
    B = np.unique(np.round(np.geomspace(1, 4096, 40)))
    table = expert_parallelism.all_to_all_latency(cases=((64, "InfiniBand-NDR"),), B=B)
    row = table.rows[0]
    cm = parallel.expert_parallel_cost_model(G=64, interconnect="InfiniBand-NDR", attention="paper")
    assert row[2] == f"{cm.latency_crossover():,.0f}"
    for lat, cells in ((False, row[4:6]), (True, row[6:8])):
        g, s = speclib.optimal_gamma(0.75, B, 4096, 0.1, deployment=speclib.Deployment(
            cost_model=parallel.expert_parallel_cost_model(G=64, interconnect="InfiniBand-NDR", latency=lat,
                                                           attention="paper")))
        assert cells[0] == f"{g[0]} / {s[0]:.3f}"
        assert cells[1] == f"{s.max():.3f} at {B[int(np.argmax(s))]:,.0f}"


def _paper_optimal_gamma(alpha, B, S, c_draft, G):
    """:func:`speclib.core.parallel.optimal_gamma` with DeepSeek-V4's attention priced as the paper prices it, as the
    chapter's figures and tables do."""
    cm = parallel.expert_parallel_cost_model(G=G, interconnect=parallel.NVL72, attention="paper")
    return speclib.optimal_gamma(alpha, B, S, c_draft, deployment=speclib.Deployment(cost_model=cm))


def test_summary_agrees_with_optimal_gamma():
    B = np.unique(np.round(np.geomspace(1, 4096, 40)))
    table = expert_parallelism.expert_parallel_summary(B=B)
    for row in table.rows:
        g, s = _paper_optimal_gamma(0.75, B, 4096, 0.1, G=int(row[0]))
        assert row[2] == str(g.max())
        assert row[3] == f"{s.max():.3f}"
    assert table.rows[0][5] == table.rows[0][6] == "0.0%"  # G = 1 sends nothing
    assert repr(table) == repr(expert_parallelism.expert_parallel_summary(B=B)) and "<table" in table._repr_html_()


def test_the_chapter_figures_draw_the_expert_parallel_model():
    d = expert_parallelism.ep_gamma_star.data(points=40)
    for G in (1, 8, 64):
        g, s = _paper_optimal_gamma(0.75, d["B"], 4096, 0.10, G=G)
        np.testing.assert_array_equal(d[f"gamma_G{G}"], g)
        ledger = parallel.ledger(parallel.expert_parallel_cost_model(G=G, interconnect=parallel.NVL72, attention="paper"), d["B"], 4096, 0.10)
        np.testing.assert_allclose(d[f"total_G{G}"], ledger["total"])
    # By bandwidth alone a free network can only help: without the all-to-all the speedup is at least as high.
    bw = expert_parallelism.ep_gamma_star_bandwidth.data(points=40)
    assert np.all(bw["free_speedup_G64"] >= bw["speedup_G64"] - 1e-12)
    # With its latency it can help speculation: at one sequence per GPU the all-to-all raises the speedup.
    assert d["speedup_G64"][0] > d["free_speedup_G64"][0]
    assert len(expert_parallelism.ep_gamma_star().axes) == 2


def test_the_summary_over_a_free_network_loses_nothing_to_the_all_to_all():
    table = expert_parallelism.expert_parallel_summary(Gs=(8, 64), interconnect="free")
    assert "a free network" in table.caption
    assert expert_parallelism.STEP_MODEL in table.caption and "roofline" in expert_parallelism.STEP_MODEL
    head = list(table.columns)
    lost, changed = head.index("speedup lost to all-to-all (max)"), head.index("batches where the all-to-all changes γ*")
    added = head.index("speedup added by its latency (max)")
    assert [row[lost] for row in table.rows] == ["0.0%", "0.0%"]
    assert [row[added] for row in table.rows] == ["0.0%", "0.0%"]
    assert [row[changed] for row in table.rows] == ["0", "0"]


def test_a_deployment_chooses_the_latency_of_its_expert_parallel_cost_model():
    B = np.array([1.0, 64.0])
    with_latency = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72)
    bandwidth = parallel.expert_parallel_cost_model(G=64, interconnect=parallel.NVL72, latency=False)
    for cm in (with_latency, bandwidth):
        for flag, want in ((True, with_latency), (False, bandwidth)):
            d = speclib.Deployment(cost_model=cm, comm_latency=flag)
            assert d.cost_model is want
            np.testing.assert_array_equal(
                speclib.optimal_gamma(0.75, B, 4096, 0.1, deployment=d)[1],
                speclib.optimal_gamma(0.75, B, 4096, 0.1, deployment=speclib.Deployment(cost_model=want))[1])
        assert speclib.Deployment(cost_model=cm).cost_model is cm  # None: the cost model's own choice
    with pytest.raises(ValueError, match=r"^comm_latency is an option of an expert-parallel cost model") as info:
        speclib.Deployment(comm_latency=True)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"^comm_latency must be True, False or None"):
        speclib.Deployment(cost_model=with_latency, comm_latency="on")
    with pytest.raises(ValueError, match=r"^interconnect 'InfinityFabric-MI300' has no latency"):
        speclib.Deployment(cost_model=parallel.expert_parallel_cost_model(hardware="MI300X", G=8, latency=False),
                           comm_latency=True)
