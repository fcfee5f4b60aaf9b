"""Speculation schedules (issue 12): every emitted engine config parses back
and makes the engine's own lookup pick gamma* wherever no engine limit binds;
the engines' documented examples survive the round trip; the range search is
checked against brute force; measured step costs (and the model's own,
written by ``speclib profile``) give the model's schedule back."""
import contextlib
import io
import itertools
import json
import os

import numpy as np
import pytest
import yaml

import speclib
from speclib.core import calibrated as cal
from speclib.tools import engines
from speclib.tools.cli import main
from speclib.tools.schedule import (
    StepCosts,
    StepCostsError,
    _segment,
    profile,
    render,
    schedule,
    write_step_costs,
)

DSV4 = dict(model="DeepSeek-V4-Flash", hardware="B200", seq=4096, alpha=0.75, c_draft=0.1)
#: The model's properties (the gutter, the large-batch zero, a dense model's
#: monotone table) hold at batches past what one GPU's memory holds; these
#: fixtures switch the memory check off (reserve=None) to test them there.
NO_MEMORY_CAP = dict(reserve=None)
#: Llama-3-70B has no MTP layers: its configurations name an EAGLE-3 head and its checkpoint
#: (the EAGLE authors' head for Llama-3.3-70B-Instruct).
LLAMA_EAGLE3 = dict(method="eagle3", draft_model="yuhuili/EAGLE3-LLaMA3.3-Instruct-70B")
LLAMA_EAGLE3_ARGV = ["--method", "eagle3", "--draft-model", "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _split(kw):
    """The deployment's options apart from a call's own arguments."""
    own = {k: kw[k] for k in ("seq", "alpha", "c_draft", "max_batch", "gamma_max", "step_costs", "batches") if k in kw}
    return own, speclib.Deployment(**{k: v for k, v in kw.items() if k not in own})


def make(**kw):
    """schedule() of the deployment the loose options describe."""
    own, deployment = _split(kw)
    return schedule(**own, deployment=deployment)


def make_profile(**kw):
    """profile() of the deployment the loose options describe."""
    own, deployment = _split(kw)
    return profile(**own, deployment=deployment)


def optimal(n, **kw):
    """gamma* at batches 1..n by brute force: every draft length priced on its
    own, and where the deployment checks memory only those whose draft it
    holds at that batch (ties to the shorter draft)."""
    own, deployment = _split(kw)
    B = np.arange(1, n + 1, dtype=float)
    g, _ = speclib.optimal_gamma(own.get("alpha"), B, own["seq"], own.get("c_draft"), deployment=deployment)
    if deployment.reserve is None:
        return [int(x) for x in g]
    top = int(own.get("gamma_max", 64))
    alpha = own.get("alpha")
    if isinstance(alpha, speclib.SurvivalCurve):
        top = min(top, len(alpha))
    best, best_at = np.zeros(n, dtype=int), np.full(n, -np.inf)
    for k in range(top + 1):
        value = np.asarray(speclib.speedup(alpha, k, B, own["seq"], own.get("c_draft"), deployment=deployment))
        value = np.where(B <= deployment.max_batch(own["seq"], k), value, -np.inf)
        better = value > best_at
        best, best_at = np.where(better, k, best), np.where(better, value, best_at)
    return [int(x) for x in best]


@pytest.fixture(scope="module")
def dsv4():
    return make(**DSV4, max_batch=4096, **NO_MEMORY_CAP)


@pytest.fixture(scope="module")
def llama():
    return make(model="Llama-3-70B", hardware="B200", seq=4096, alpha=0.8, max_batch=2048, **NO_MEMORY_CAP)


@pytest.fixture(scope="module")
def qwen_mtp():
    return make(model="Qwen3.6-35B-A3B", hardware="B200", seq=512, drafter="qwen3.6-mtp",
                    roofline="aggregate", max_batch=2048, **NO_MEMORY_CAP)


# --- the per-batch optimum is optimal_gamma's -------------------------------------------
def test_gamma_star_is_optimal_gamma(dsv4, qwen_mtp):
    assert list(dsv4.gamma_star) == optimal(4096, **DSV4, **NO_MEMORY_CAP)
    assert list(qwen_mtp.gamma_star) == optimal(2048, model="Qwen3.6-35B-A3B", hardware="B200", seq=512,
                                                drafter="qwen3.6-mtp", roofline="aggregate", **NO_MEMORY_CAP)


def test_dense_table_is_monotone(llama):
    ks = [r.k for r in llama.ranges]
    assert ks == sorted(ks, reverse=True) and len(ks) > 1
    config = json.loads(render(llama, "vllm", **LLAMA_EAGLE3))["speculative_config"]
    assert (config["method"], config["model"]) == ("eagle3", LLAMA_EAGLE3["draft_model"])
    table = [k for _, _, k in config["num_speculative_tokens_per_batch_size"]]
    assert table == sorted(table, reverse=True)


def test_deepseek_shows_the_gutter():
    """gamma* = 0 between ranges that speculate: the expert tax at small batch."""
    sched = make(**DSV4, max_batch=30000, **NO_MEMORY_CAP)
    ks = [r.k for r in sched.ranges]
    inner_zero = [i for i, k in enumerate(ks) if k == 0 and 0 < i < len(ks) - 1]
    assert inner_zero, ks
    i = inner_zero[0]
    assert ks[i - 1] > 0 and ks[i + 1] > 0
    assert ks[-1] == 0  # and past the compute ridge, no speculation at all
    config = json.loads(render(sched, "vllm"))["speculative_config"]
    table = config["num_speculative_tokens_per_batch_size"]
    assert any(k == 0 for _, _, k in table[1:-1])


# --- the memory check (issue 14) ------------------------------------------------------------
def test_the_table_stops_where_memory_does():
    fit = speclib.Deployment("DeepSeek-V4-Flash", "B200").max_batch(4096)
    capped = make(**DSV4, max_batch=4096)
    assert capped.max_batch == fit < 4096 and f"capped at batch {fit:,}" in capped.memory
    assert list(capped.gamma_star) == optimal(fit, **DSV4)
    wider = make(**DSV4, max_batch=4096, tp=8, ep=8, dp_attention=True)
    assert wider.max_batch == min(4096, speclib.Deployment(tp=8, ep=8, dp_attention=True).max_batch(4096))
    served = speclib.Deployment("DeepSeek-V4-Flash", "B200", attention="served").max_batch(4096)
    status, out, _ = run(["schedule", "--model", "deepseek-v4-flash", "--seq", "4096", "--alpha", "0.75",
                          "--max-batch", "4096", "--engine", "vllm"])  # a schedule serves: V4's attention as served
    assert status == 0 and json.loads(out)["speculative_config"]["num_speculative_tokens_per_batch_size"][-1][1] == served


def test_weights_that_do_not_fit_name_the_tensor_parallel_size_that_does():
    need = speclib.core.capacity.min_tp(1, 4096, "DeepSeek-V4-Pro", "H100")
    with pytest.raises(ValueError, match=rf"^tp must be at least {need}: DeepSeek-V4-Pro's weights do not fit on one H100"):
        make(model="DeepSeek-V4-Pro", hardware="H100", seq=4096, alpha=0.75, max_batch=64)
    status, _, err = run(["schedule", "--model", "deepseek-v4-pro", "--hardware", "h100", "--seq", "4096",
                          "--alpha", "0.75", "--max-batch", "64"])
    assert status == 2 and err.count("\n") == 1 and "--tp" in err and str(need) in err


def test_a_calibrated_schedule_prices_every_step_with_the_calibrated_time():
    kw = dict(model="Qwen3.6-35B-A3B", hardware="B200", seq=512, drafter="qwen3.6-mtp", **NO_MEMORY_CAP)
    calibrated = make(**kw, max_batch=256, step_time="calibrated", engine="TRT")
    g, _ = speclib.optimal_gamma(None, np.arange(1, 257), 512, deployment=speclib.Deployment(
        "Qwen3.6-35B-A3B", "B200", drafter="qwen3.6-mtp", step_time="calibrated", engine="TRT"))
    assert list(calibrated.gamma_star) == [int(x) for x in g]
    assert "calibrated step time (trtllm" in calibrated.source  # the engine as --engine spells it
    # the output engine picks the calibration: TensorRT-LLM's measured per-step costs for trtllm
    status, out, _ = run(["schedule", "--model", "qwen3.6-35b-a3b", "--drafter", "mtp", "--seq", "512",
                          "--max-batch", "256", "--engine", "trtllm", "--step-time", "calibrated"])
    assert status == 0 and "calibrated step time (trtllm" in out


# --- every emitted config parses back and expands to gamma* ------------------------------
@pytest.mark.parametrize("which", ["dsv4", "llama", "qwen_mtp"])
def test_vllm_config_expands_to_gamma_star(which, request):
    sched = request.getfixturevalue(which)
    config = json.loads(render(sched, "vllm", **(LLAMA_EAGLE3 if which == "llama" else {})))["speculative_config"]
    assert config["method"] == ("eagle3" if which == "llama" else "mtp")
    assert config["num_speculative_tokens"] == max(1, int(sched.gamma_star.max()))
    assert engines.expand_vllm(config, sched.max_batch) == [int(g) for g in sched.gamma_star]
    ranges = config["num_speculative_tokens_per_batch_size"]
    assert ranges[0][0] == 1 and ranges[-1][1] == sched.max_batch
    assert all(a[2] != b[2] for a, b in zip(ranges, ranges[1:]))  # adjacent equal K merged


@pytest.mark.parametrize("which", ["dsv4", "llama", "qwen_mtp"])
def test_trtllm_config_expands_to_its_table(which, request):
    sched = request.getfixturevalue(which)
    text = render(sched, "trtllm", **(LLAMA_EAGLE3 if which == "llama" else {}))
    spec = yaml.safe_load(text)["speculative_config"]
    assert spec["decoding_type"] == ("Eagle3" if which == "llama" else "MTP") and "max_concurrency" not in spec
    ks = engines.expand_trtllm(spec, sched.max_batch)
    table = sched.table(first_is_max=True, implicit_zero_tail=True)
    assert ks == [int(k) for k in table.k_per_batch]
    gstar = [int(g) for g in sched.gamma_star]
    if gstar[0] == max(gstar):  # TensorRT-LLM's first-key rule does not bind: gamma* everywhere
        assert ks == gstar
    assert "this table keeps" in text and "max_concurrency" in text  # stated in comments


def test_trtllm_dense_is_gamma_star(llama):
    spec = yaml.safe_load(render(llama, "trtllm", **LLAMA_EAGLE3))["speculative_config"]
    assert (spec["decoding_type"], spec["speculative_model"]) == ("Eagle3", LLAMA_EAGLE3["draft_model"])
    assert engines.expand_trtllm(spec, llama.max_batch) == [int(g) for g in llama.gamma_star]
    assert spec["max_draft_len"] == int(llama.gamma_star[0])


def test_trtllm_turns_off_above_the_last_speculating_batch(dsv4):
    sched = make(**DSV4, max_batch=8192)
    text = render(sched, "trtllm")
    spec = yaml.safe_load(text)["speculative_config"]
    last_speculating = max(r.hi for r in sched.ranges if r.k > 0)
    assert max(spec["draft_len_schedule"]) == last_speculating  # the trailing zero range is implicit
    assert f"max_concurrency: {last_speculating}" in text
    assert engines.expand_trtllm(spec, 8192 + 10)[-1] == 0


@pytest.mark.parametrize("which", ["dsv4", "llama", "qwen_mtp"])
def test_sglang_document_parses_and_expands(which, request):
    sched = request.getfixturevalue(which)
    kw = LLAMA_EAGLE3 if which == "llama" else {}
    doc = yaml.safe_load(render(sched, "sglang", **kw))
    # one server: the batch-size slots give each batch its gamma*, as SGLang's router reads them
    slots = doc["by_batch_size"]
    assert engines.expand_sglang_slots(slots["adaptive_config"], sched.max_batch) == [int(g) for g in sched.gamma_star]
    parsed = engines.parse_sglang_args(slots["args"])
    assert parsed["adaptive"] and parsed["topk"] == 1 and parsed["num_steps"] == max(1, int(sched.gamma_star.max()))
    assert parsed["algorithm"] == ("EAGLE3" if kw else "EAGLE") and parsed["draft_model"] == kw.get("draft_model")
    # one static depth: the single K that keeps the most, by brute force over the searched lengths
    static = doc["static"]
    kept = [sched.kept(np.full(sched.max_batch, g)) for g in sched.gammas]
    assert static["gamma"] == int(sched.gammas[int(np.argmax(kept))])
    assert engines.parse_sglang_args(static["args"]).get("num_steps", 0) == static["gamma"]
    adaptive = doc["adaptive_tiers"]
    tiers = adaptive["candidate_steps"]
    assert 1 <= len(tiers) <= 3 and all(t >= 1 for t in tiers) and tiers == sorted(tiers)
    assert adaptive["adaptive_config"] == {"1": {"candidate_steps": tiers}}
    parsed = engines.parse_sglang_args(adaptive["args"])
    assert parsed["adaptive"] and parsed["topk"] == 1 and parsed["num_steps"] in tiers
    assert parsed["num_draft_tokens"] == parsed["num_steps"] + 1
    # each batch's best tier is the best of the set
    best = engines.expand_ranges([engines.Range(*r) for r in adaptive["best_tier_by_batch"]], sched.max_batch)
    rel = sched.relative()
    for b in (1, 7, sched.max_batch // 2, sched.max_batch):
        rows = [int(np.searchsorted(sched.gammas, t)) for t in tiers]
        assert best[b - 1] == tiers[int(np.argmax(rel[rows, b - 1]))]


def test_the_tier_set_is_the_best_of_all_tier_sets(dsv4):
    small = make(**DSV4, max_batch=300)
    tiers = small.tiers(3)
    w = small._weighted()
    top = int(small.gamma_star.max())
    best = max(
        (float(np.sum(np.max(w[list(combo)], axis=0))), combo)
        for n in (1, 2, 3) for combo in itertools.combinations(range(1, top + 1), n)
    )
    assert tiers.kept == pytest.approx(best[0], rel=1e-12)


# --- memory's edge: batches no draft fits ---------------------------------------------------
@pytest.fixture(scope="module")
def sglang_edge():
    """DeepSeek-V4-Flash as served on two B200s, SGLang's calibrated step: the batches are capped
    where memory holds no more sequences without a draft, and the last few of them it holds with
    no draft at all."""
    dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=2, step_time="calibrated", engine="SGLang",
                             drafter="deepseek-v4-flash-mtp", attention="served")
    return dep, schedule(seq=4096, alpha=0.75, max_batch=8192, deployment=dep)


def test_a_batch_no_draft_fits_is_left_out_of_the_static_depth_and_the_tiers(sglang_edge):
    dep, sched = sglang_edge
    S, B, gammas = 4096, sched.batches, sched.gammas
    limits = np.array([dep.max_batch(S, int(g)) for g in gammas])
    out = B > min(limits[0], limits[1:].max())  # no draft fits (or, at a longer context, not even none)
    assert out.any() and out[-1] and not out[0], "the case this is about: batches held without a draft only"
    np.testing.assert_array_equal(sched.left_out(), out)
    # by hand: 1/B over the batches left in; each depth over the batches memory holds at it
    w = np.where(out, 0.0, 1.0 / B)
    w /= w.sum()
    holds = B[None, :] <= limits[:, None]
    speed = sched.speedups[0]
    best = np.where(holds | (gammas == 0)[:, None], speed, -np.inf).max(axis=0)
    values = [float(np.sum((w * speed[i] / best)[~out & holds[i]])) for i in range(len(gammas))]
    static = sched.static()
    assert static.ranges[0].k == gammas[int(np.argmax(values))] > 0
    assert static.kept == pytest.approx(max(values), rel=1e-9)
    assert static.ranges[0].hi == limits[static.ranges[0].k] == static.held_to
    # the tier set's ideal controller: each batch its best tier that memory holds; finite, at most the optimum
    tiers = sched.tiers(3)
    assert np.isfinite(tiers.kept) and 0 < tiers.kept <= 1 and np.isfinite(tiers.worst)
    # what the engine reads, and what the comments say was left out and why
    text = render(sched, "sglang")
    doc = yaml.safe_load(text)
    assert doc["static"]["gamma"] == static.ranges[0].k > 0
    assert doc["static"]["batch_sizes"] == [1, int(limits[static.ranges[0].k])]
    assert all(np.isfinite(doc[form]["kept"]) for form in ("static", "adaptive_tiers"))
    table = " ".join(render(sched, "table").split())
    first = int(np.argmax(out)) + 1
    assert (f"left out of every kept: batches {first:,}-{sched.max_batch:,}: memory holds none of them with a "
            f"draft ({limits[1:].max():,} at most") in table
    assert "inf %" not in table


def test_a_longer_context_leaves_out_the_batches_it_does_not_hold():
    dep = speclib.Deployment("Qwen3.6-35B-A3B", "B200", drafter="qwen3.6-mtp")
    sched = schedule(seq=[4096, 65536], max_batch=100_000, deployment=dep)
    B = sched.batches
    plain, drafting = dep.max_batch(65536, 0), dep.max_batch(65536, 1)
    assert plain < sched.max_batch  # the longer context holds fewer sequences than the batches cover
    np.testing.assert_array_equal(sched.left_out(1), B > min(plain, drafting))
    assert sched.left_out(1).sum() > sched.left_out(0).sum()


# --- limits -------------------------------------------------------------------------------
def test_max_ranges_and_max_k_are_respected(dsv4):
    for n in (1, 2, 3, 5):
        config = json.loads(render(dsv4.limited(n), "vllm"))["speculative_config"]
        assert len(config["num_speculative_tokens_per_batch_size"]) <= n
    capped = dsv4.limited(max_k=2)
    assert (capped.max_k, capped.max_ranges, dsv4.max_k) == (2, None, None)  # a copy, the schedule untouched
    np.testing.assert_array_equal(capped.speedups, dsv4.speedups)
    config = json.loads(render(capped, "vllm"))["speculative_config"]
    assert max(k for *_, k in config["num_speculative_tokens_per_batch_size"]) <= 2
    spec = yaml.safe_load(render(dsv4.limited(3), "trtllm"))["speculative_config"]
    assert len(spec["draft_len_schedule"]) <= 3


@pytest.mark.parametrize("limits, message", [
    (dict(max_ranges=0), r"^max_ranges must be an integer in \[1, 64\]"),
    (dict(max_ranges=2.5), r"^max_ranges must be an integer"),
    (dict(max_k=-1), r"^max_k must be an integer in \[0, inf\)"),
])
def test_bad_limits_name_the_parameter(dsv4, limits, message):
    with pytest.raises(ValueError, match=message):
        dsv4.limited(**limits)


def test_fewer_ranges_keep_less(dsv4):
    kept = [dsv4.table(n).kept for n in (1, 2, 3, 4, 8)]
    assert kept == sorted(kept) and kept[-1] <= 1.0
    assert dsv4.table().kept == pytest.approx(1.0)


def _brute(rel, gammas, max_ranges, first_is_max, zero_tail):
    n, best = rel.shape[1], -np.inf
    for segments in range(1, max_ranges + 2):
        for cuts in itertools.combinations(range(1, n), segments - 1):
            bounds = [0, *cuts, n]
            for ks in itertools.product(range(len(gammas)), repeat=segments):
                per_batch = np.concatenate([[ks[i]] * (bounds[i + 1] - bounds[i]) for i in range(segments)])
                ranges = engines.ranges_from_lookup(gammas[per_batch])
                counted = list(ranges)
                if zero_tail:
                    while len(counted) > 1 and counted[-1].k == 0:
                        counted.pop()
                if len(counted) > max_ranges or (first_is_max and any(r.k > counted[0].k for r in counted)):
                    continue
                best = max(best, float(rel[per_batch, np.arange(n)].sum()))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_range_search_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 9)), int(rng.integers(2, 5))
    rel, gammas = rng.random((k, n)), np.arange(k)
    max_ranges = int(rng.integers(1, 4))
    first_is_max, zero_tail = bool(rng.integers(2)), bool(rng.integers(2))
    ks = _segment(rel, gammas, np.ones(k, bool), max_ranges, first_is_max, zero_tail)
    ranges = engines.ranges_from_lookup(ks)
    counted = list(ranges)
    if zero_tail:
        while len(counted) > 1 and counted[-1].k == 0:
            counted.pop()
    assert len(counted) <= max_ranges
    assert not first_is_max or all(r.k <= counted[0].k for r in counted)
    assert float(rel[ks, np.arange(n)].sum()) == pytest.approx(_brute(rel, gammas, max_ranges, first_is_max,
                                                                       zero_tail), abs=1e-12)


# --- the context axis (proposed in vLLM) --------------------------------------------------
def test_context_axis_is_rectangular_and_expands_per_context():
    seqs = [1024, 8192, 65536]
    sched = make(**{**DSV4, "seq": seqs}, max_batch=2048)
    doc = json.loads(render(sched, "vllm"))
    assert "proposed" in doc["proposed_context_axis"]["status"]
    base = doc["speculative_config"]
    assert engines.expand_vllm(base, 2048) == optimal(2048, **{**DSV4, "seq": seqs[0]})
    proposed = doc["proposed_context_axis"]["speculative_config"]
    entries = proposed["num_speculative_tokens_per_batch_size"]
    assert all(len(e) == 5 for e in entries)
    for s in seqs:
        assert engines.expand_vllm(proposed, 2048, context=s) == optimal(2048, **{**DSV4, "seq": s})
    moved = [engines.expand_vllm(proposed, 2048, context=s) for s in seqs]
    assert moved[0] != moved[-1]  # the table moves with context length


# --- the engines' documented examples round-trip -------------------------------------------
VLLM_DOC = {"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3,
            "num_speculative_tokens_per_batch_size": [[1, 64, 3], [65, 128, 1], [129, 512, 0]]}
VLLM_DOC_EAGLE3 = [[1, 16, 5], [17, 32, 4], [33, 64, 3], [65, 128, 1], [129, 512, 0]]


def test_vllm_documented_example_round_trips():
    ks = engines.expand_vllm(VLLM_DOC, 512)
    assert ks[:64] == [3] * 64 and ks[64:128] == [1] * 64 and ks[128:] == [0] * 384
    again = engines.vllm_config(engines.ranges_from_lookup(ks), method="eagle")
    assert again["num_speculative_tokens_per_batch_size"] == VLLM_DOC["num_speculative_tokens_per_batch_size"]
    assert again["num_speculative_tokens"] == 3
    eagle3 = engines.vllm_config(engines.ranges_from_lookup(engines.expand_vllm(
        {"num_speculative_tokens": 5, "num_speculative_tokens_per_batch_size": VLLM_DOC_EAGLE3}, 512)))
    assert eagle3["num_speculative_tokens_per_batch_size"] == VLLM_DOC_EAGLE3
    # vLLM's lookup carries the last K past the table and fills gaps with the previous K
    assert engines.expand_vllm(VLLM_DOC, 600)[-1] == 0
    gap = {"num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 16, 3], [32, 128, 2]]}
    assert engines.expand_vllm(gap, 40)[16:31] == [3] * 15


@pytest.mark.parametrize("bad", [
    [[2, 8, 1]],  # must start at 1
    [[1, 8, 2], [8, 16, 1]],  # overlap
    [[1, 8, -1]],  # negative K
    [[1, 8, 2], [9, 16, 1, 1, 100, 2]],  # mixed arity
])
def test_vllm_rules_reject_what_vllm_rejects(bad):
    with pytest.raises(ValueError):
        engines.expand_vllm({"num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": bad}, 32)


TRT_DOC = {"max_draft_len": 4, "draft_len_schedule": {4: 4, 8: 2, 32: 1}}


def test_trtllm_documented_example_round_trips():
    ks = engines.expand_trtllm(TRT_DOC, 40)
    assert ks[:4] == [4] * 4 and ks[4:8] == [2] * 4 and ks[8:32] == [1] * 24 and ks[32:] == [0] * 8
    max_draft_len, schedule_map, concurrency = engines.trtllm_schedule(engines.ranges_from_lookup(ks))
    assert (max_draft_len, schedule_map, concurrency) == (4, {4: 4, 8: 2, 32: 1}, 32)
    # the documented YAML shape parses through PyYAML with integer keys
    text = yaml.safe_dump({"speculative_config": {"decoding_type": "Eagle3", **TRT_DOC}}, sort_keys=False)
    assert yaml.safe_load(text)["speculative_config"]["draft_len_schedule"] == {4: 4, 8: 2, 32: 1}
    # max_concurrency alone is the schedule {max_concurrency: max_draft_len}
    assert engines.expand_trtllm({"max_draft_len": 3, "max_concurrency": 16}, 20) == [3] * 16 + [0] * 4


@pytest.mark.parametrize("bad", [
    {"max_draft_len": 4, "draft_len_schedule": {4: 2, 8: 4}},  # smallest key must be max_draft_len
    {"max_draft_len": 2, "draft_len_schedule": {4: 2, 8: 3}},  # no value above max_draft_len
    {"max_draft_len": 2, "draft_len_schedule": {4: 2}, "max_concurrency": 8},  # mutually exclusive
])
def test_trtllm_rules_reject_what_trtllm_rejects(bad):
    with pytest.raises(ValueError):
        engines.expand_trtllm(bad, 16)


def test_sglang_documented_examples_parse():
    # docs/advanced_features/adaptive_speculative_decoding.md: usage and config examples
    usage = ("--speculative-algorithm EAGLE --speculative-draft-model-path lmsys/sglang-EAGLE-llama2-chat-7B "
             "--speculative-eagle-topk 1 --speculative-num-steps 3 --speculative-num-draft-tokens 4 "
             "--speculative-adaptive")
    parsed = engines.parse_sglang_args(usage)
    assert parsed == {"algorithm": "EAGLE", "draft_model": "lmsys/sglang-EAGLE-llama2-chat-7B", "num_steps": 3,
                      "topk": 1, "num_draft_tokens": 4, "adaptive": True}
    config = {"candidate_steps": [1, 3, 7], "ema_alpha": 0.2, "warmup_batches": 10, "update_interval": 5}
    assert engines.sglang_adaptive_config(config["candidate_steps"]) == {"1": {"candidate_steps": [1, 3, 7]}}
    # the MTP example: one step, topk 1, two draft tokens
    assert engines.parse_sglang_args("--speculative-num-steps 1 --speculative-eagle-topk 1 "
                                     "--speculative-num-draft-tokens 2")["num_steps"] == 1
    assert engines.parse_sglang_args(engines.sglang_static_args(3)) == {"algorithm": "EAGLE", "draft_model": None,
                                                                        "num_steps": 3, "topk": 1,
                                                                        "num_draft_tokens": 4}
    with pytest.raises(ValueError, match="num_steps \\+ 1"):
        engines.parse_sglang_args("--speculative-num-steps 3 --speculative-eagle-topk 1 "
                                  "--speculative-num-draft-tokens 6")


# --- measured step costs -----------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    dict(model="DeepSeek-V4-Flash", seq=4096, c_draft=0.1, alpha=0.75),
    dict(model="Llama-3-70B", seq=2048, alpha=0.8),
    dict(model="Qwen3.6-35B-A3B", seq=512, drafter="qwen3.6-mtp", roofline="aggregate"),
    dict(model="Qwen3.6-35B-A3B", seq=512, drafter="qwen3.6-dflash", roofline="aggregate"),
])
def test_profile_then_schedule_is_the_model_schedule(kw, tmp_path):
    kw = dict(hardware="B200", **kw)
    alpha = kw.pop("alpha", None)
    model_sched = make(**kw, alpha=alpha, max_batch=1024, gamma_max=16)
    cost_kw = {k: v for k, v in kw.items() if k != "alpha"}
    path = tmp_path / "steps.csv"
    with open(path, "w", newline="") as stream:
        make_profile(**cost_kw, max_batch=1024, gamma_max=16).write(stream)
    measured_kw = {k: v for k, v in kw.items() if k not in ("c_draft", "roofline")}
    measured = make(**measured_kw, alpha=alpha, max_batch=1024, step_costs=str(path), gamma_max=16)
    assert list(measured.gamma_star) == list(model_sched.gamma_star)
    np.testing.assert_allclose(measured.speedup, model_sched.speedup, rtol=1e-12)
    method = (LLAMA_EAGLE3 if kw["model"] == "Llama-3-70B" else
              dict(draft_model="z-lab/Qwen3.6-35B-A3B-DFlash") if kw.get("drafter") == "qwen3.6-dflash" else {})
    assert render(measured, "vllm", **method) == render(model_sched, "vllm", **method)


def test_profile_cli_round_trip(tmp_path):
    path = tmp_path / "steps.csv"
    status, out, err = run(["profile", "--model", "llama-3-70b", "--seq", "4096", "--max-batch", "256",
                            "--output", str(path)])
    held = speclib.Deployment("llama-3-70b").max_batch(4096)  # 256 is past it: one line on standard error says so
    assert (status, out) == (0, "") and err.startswith(f"speclib profile: batch 256 is above what memory holds at "
                                                       f"4,096 tokens ({held:,} sequences with \u03b3 = 0, ")
    assert err.count("\n") == 1
    header = path.read_text().splitlines()[0]
    assert header == "batch_size,num_draft_tokens,step_seconds,attention"  # the last column says how it was priced
    assert {row.split(",")[-1] for row in path.read_text().splitlines()[1:]} == {"served"}
    s1, from_model, _ = run(["schedule", "--model", "llama-3-70b", "--seq", "4096", "--alpha", "0.8",
                             "--max-batch", "256", "--gamma-max", "16", "--engine", "vllm", *LLAMA_EAGLE3_ARGV])
    s2, from_file, _ = run(["schedule", "--model", "llama-3-70b", "--seq", "4096", "--alpha", "0.8",
                            "--max-batch", "256", "--gamma-max", "16", "--engine", "vllm",
                            "--step-costs", str(path), *LLAMA_EAGLE3_ARGV])
    assert s1 == s2 == 0 and from_model == from_file


def test_measured_costs_interpolate_in_log_batch(tmp_path):
    costs = StepCosts(np.array([1.0, 100.0]), np.array([0, 1]), np.array([[1.0, 3.0], [2.0, 4.0]]))
    at = costs.at(np.array([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(at, [[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]])
    with pytest.raises(StepCostsError, match="1..100"):
        costs.at(np.array([200.0]))


def _write(path, text):
    path.write_text(text)
    return str(path)


GOOD = "batch_size,num_draft_tokens,step_seconds\n1,0,0.001\n1,1,0.0015\n64,0,0.002\n64,1,0.0025\n"


@pytest.mark.parametrize("text, line, words", [
    ("batch_size,step_seconds\n1,0.001\n", 1, "missing column 'num_draft_tokens'"),
    (GOOD + "128,0,-0.003\n", 6, "step_seconds must be > 0"),
    (GOOD + "128,0,0\n", 6, "step_seconds must be > 0"),
    (GOOD.replace("64,1,0.0025", "64,1,fast"), 5, "step_seconds is not a number"),
    (GOOD.replace("64,0,0.002", "sixty-four,0,0.002"), 4, "batch_size is not a number"),
    (GOOD + "64,1,0.003\n", 6, "duplicate row for batch_size 64, num_draft_tokens 1 (first at line 5)"),
    (GOOD + "1.5,0,0.001\n", 6, "batch_size must be a whole number"),
    ("batch_size,num_draft_tokens,step_seconds\n1,1,0.001\n", 2, "no row has num_draft_tokens 0"),
    (GOOD + "128,0,0.003\n", 6, "batch_size 128 has no row for num_draft_tokens 1"),
    ("", 1, "empty file"),
])
def test_bad_csv_exits_2_with_one_line_and_writes_nothing(tmp_path, text, line, words):
    path = _write(tmp_path / "bad.csv", text)
    target = tmp_path / "out.json"
    status, out, err = run(["schedule", "--alpha", "0.75", "--max-batch", "64", "--step-costs", path,
                            "--engine", "vllm", "--output", str(target)])
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("speclib schedule: error: --step-costs:")
    assert f"{path}, line {line}:" in err and words in err
    assert not target.exists()


def test_batch_outside_the_measured_range_names_the_range(tmp_path):
    path = _write(tmp_path / "steps.csv", GOOD)
    status, out, err = run(["schedule", "--alpha", "0.75", "--max-batch", "100", "--step-costs", path])
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "measures batch sizes 1..64" in err and "1..100" in err


def test_output_file_is_replaced_only_on_success(tmp_path):
    target = tmp_path / "config.json"
    target.write_text("old")
    status, _, _ = run(["schedule", "--alpha", "0.75", "--max-batch", "64", "--engine", "vllm",
                        "--output", str(target)])
    assert status == 0 and json.loads(target.read_text())["speculative_config"]["num_speculative_tokens_per_batch_size"]
    status, _, err = run(["schedule", "--alpha", "7", "--max-batch", "64", "--output", str(target)])
    assert status == 2 and json.loads(target.read_text())  # untouched
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".speclib-")]


# --- the command ---------------------------------------------------------------------------
def test_table_says_what_each_engine_keeps():
    status, out, err = run(["schedule", "--model", "deepseek-v4-flash", "--alpha", "0.75", "--draft-cost", "0.1",
                            "--max-batch", "1024"])
    # 1,024 is past what memory holds: one line on standard error says where the schedule stops
    assert status == 0 and err.startswith("speclib schedule: batch 1024 is above what memory holds at 4,096 tokens")
    assert err.count("\n") == 1 and "the schedule stops at" in err
    for words in ("vLLM", "TensorRT-LLM", "SGLang adaptive tiers", "3 ranges keep", "weighted by 1/B"):
        assert words in out


@pytest.mark.parametrize("argv, option", [
    (["--alpha", "0.75", "--max-batch", "0"], "--max-batch"),
    (["--alpha", "0.75", "--max-batch", "64", "--max-ranges", "0"], "--max-ranges"),
    (["--alpha", "0.75", "--max-batch", "64", "--max-k", "-1"], "--max-k"),
    (["--alpha", "1.5", "--max-batch", "64"], "--alpha"),
    (["--max-batch", "64"], "--alpha"),
    (["--alpha", "0.7", "--acceptance", "x.json", "--max-batch", "64"], "--acceptance"),
    (["--acceptance", "/nonexistent.json", "--max-batch", "64"], "--acceptance"),
    (["--alpha", "0.7", "--max-batch", "64", "--engine", "nope"], "--engine"),
    (["--alpha", "0.7", "--max-batch", "64", "--seq", "0"], "--seq"),
])
def test_bad_options_exit_2_naming_the_option(argv, option):
    status, out, err = run(["schedule", *argv])
    assert status == 2 and out == "" and err.count("\n") == 1 and option in err


def test_acceptance_file(tmp_path):
    curve = tmp_path / "curve.json"
    curve.write_text(json.dumps({"mtp": [0.8, 0.6, 0.4], "dflash": [0.7, 0.5]}))
    status, out, _ = run(["schedule", "--acceptance", f"{curve}#mtp", "--max-batch", "64", "--engine", "vllm"])
    assert status == 0
    assert engines.expand_vllm(json.loads(out), 64) == optimal(
        64, seq=4096, alpha=speclib.SurvivalCurve([0.8, 0.6, 0.4]), c_draft=0.1, attention="served")
    rising = tmp_path / "rising.txt"
    rising.write_text("0.5, 0.7")
    status, _, err = run(["schedule", "--acceptance", str(rising), "--max-batch", "64"])
    assert status == 2 and "--acceptance" in err and "non-increasing" in err


def test_speclib_schedule_is_exported():
    assert "schedule" in speclib.__all__
    a = speclib.schedule(model="Llama-3-70B", seq=4096, alpha=0.8, max_batch=32)
    b = schedule(model="Llama-3-70B", seq=4096, alpha=0.8, max_batch=32)
    np.testing.assert_array_equal(a.gamma_star, b.gamma_star)


def test_write_step_costs_reads_back_exactly(tmp_path):
    costs = make_profile(model="Llama-3-70B", seq=4096, batches=[1, 3, 17], gamma_max=4)
    path = tmp_path / "c.csv"
    with open(path, "w", newline="") as stream:
        write_step_costs(stream, costs.batches, costs.gammas, costs.seconds)
    again = StepCosts.read(path)
    np.testing.assert_array_equal(again.seconds, costs.seconds)
    np.testing.assert_array_equal(again.batches, costs.batches)


@pytest.mark.parametrize("kw, tp", [(dict(model="Llama-3-70B"), 8),
                                    (dict(model="Qwen3.6-35B-A3B", drafter="qwen3.6-mtp", roofline="aggregate"), 2)])
def test_profiled_seconds_split_over_tensor_parallel_gpus(kw, tp, monkeypatch):
    """Both pricings (the paper's ledger and the whole step) time a step on
    tp GPUs at 1/tp of one GPU's roofline time, with the collectives free and
    as many KV heads as GPUs or more (Qwen3.6 has two: at tp = 2 each GPU
    holds one); the whole step then waits on the collectives too."""
    from speclib.core import layout

    one = make_profile(hardware="B200", seq=4096, max_batch=8, gamma_max=4, **kw)
    split = make_profile(hardware="B200", seq=4096, max_batch=8, gamma_max=4, tp=tp, **kw)
    with monkeypatch.context() as m:
        m.setattr(layout.ParallelStep, "communication", lambda self, B, T, F=None, **_: 0.0 * B * T)
        free = make_profile(hardware="B200", seq=4096, max_batch=8, gamma_max=4, tp=tp, **kw)
    np.testing.assert_allclose(free.seconds, one.seconds / tp, rtol=1e-12)
    if "drafter" in kw:  # the whole step: the collectives add
        assert np.all(split.seconds > free.seconds)
    else:  # the paper's ledger prices no collectives
        np.testing.assert_allclose(split.seconds, free.seconds, rtol=1e-12)


def test_the_chapter_figure_draws_the_schedule_and_its_tables():
    from speclib.presentation.figures import engine_schedules

    sched = speclib.schedule(seq=4096, alpha=0.75, max_batch=256,
                             deployment=speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=2))
    d = engine_schedules.schedule_ranges.data(schedule=sched, max_ranges=(2, 3))
    np.testing.assert_array_equal(d["gamma_star"], sched.gamma_star)
    for n in (2, 3):
        table = sched.table(n, sched.max_k)
        np.testing.assert_array_equal(d[f"k{n}"], table.k_per_batch)
    fig = engine_schedules.schedule_ranges(schedule=sched, max_ranges=(2, 3))
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()][:2] == ["gamma* = 0", "gamma* per batch"]


# --- the text fits a terminal and the book's column; a roofline schedule says what it is -----
@pytest.fixture(scope="module")
def dsv4_calibrated():
    return make(**DSV4, max_batch=512, tp=2, step_time="calibrated")


@pytest.mark.parametrize("which", ["dsv4", "llama", "qwen_mtp", "dsv4_calibrated"])
@pytest.mark.parametrize("engine", ["table", "trtllm", "sglang", "vllm"])
def test_every_line_of_the_text_fits_the_width(which, engine, request):
    sched = request.getfixturevalue(which)
    for width in (76, 64):  # the tables' rows are not wrapped: 64 holds the widest
        method = LLAMA_EAGLE3 if which == "llama" and engine != "table" else {}
        text = render(sched, engine, width=width, **method)
        long = [line for line in text.splitlines() if len(line) > width]
        assert long == [], long


@pytest.mark.parametrize("which", ["dsv4", "dsv4_calibrated"])
def test_folded_sglang_args_read_back_as_the_engines_flags(which, request):
    """A folded args block reads back as the string engines.py writes, so the
    flags pasted from the YAML start the server it describes."""
    sched = request.getfixturevalue(which)
    doc = yaml.safe_load(render(sched, "sglang", width=60))
    table = sched.table()
    serve = lambda held: " " + engines.sglang_serving_args(held or sched.max_batch, tp=sched.tp)  # noqa: E731
    assert doc["by_batch_size"]["args"] == engines.sglang_slots_args(table.ranges, "EAGLE") + serve(None)
    static = sched.static()
    assert doc["static"]["args"] == engines.sglang_static_args(doc["static"]["gamma"], "EAGLE") + serve(
        static.held_to)
    tiers = sched.tiers(3)
    top = list(tiers.tiers)
    assert doc["adaptive_tiers"]["args"] == engines.sglang_adaptive_args(top, top[len(top) // 2], "EAGLE") + serve(
        tiers.held_to)


def test_a_roofline_schedule_warns_and_a_calibrated_one_gives_its_interval(dsv4, dsv4_calibrated, tmp_path):
    roofline_text = " ".join(render(dsv4, "table").split())  # unwrapped
    assert "warning: roofline step time (a lower bound" in roofline_text and "--step-time calibrated" in roofline_text
    assert "80 % interval:" not in roofline_text and "1x inside" not in roofline_text
    calibrated_text = " ".join(render(dsv4_calibrated, "table").split())
    assert "warning:" not in calibrated_text and "interval: 80 % cross-conformal by model family" in calibrated_text
    assert "of the speed-up of the best draft" in calibrated_text and "bootstrap" not in calibrated_text
    # a schedule from measured step costs (here the model's own) prices no roofline: no warning
    steps = make_profile(model="Llama-3-70B", hardware="B200", seq=4096, max_batch=64, gamma_max=8)
    measured = schedule(seq=4096, alpha=0.8, max_batch=64, gamma_max=8, step_costs=steps,
                        deployment=speclib.Deployment("Llama-3-70B", "B200"))
    assert measured.warnings == () and "warning:" not in render(measured, "table")
    for engine in ("trtllm", "sglang"):  # in the YAML forms the warning is a comment
        lines = render(dsv4, engine).splitlines()
        assert any(line.startswith("# warning: roofline step time") for line in lines)


def test_vllm_json_keeps_stdout_clean_and_warns_on_stderr():
    argv = ["schedule", "--model", "deepseek-v4-flash", "--alpha", "0.75", "--max-batch", "64", "--engine", "vllm"]
    status, out, err = run(argv)
    assert status == 0 and json.loads(out)["speculative_config"]["num_speculative_tokens_per_batch_size"]
    assert err.count("warning:") == 1 and "warning: roofline step time" in err
    # and vLLM's documented limits of the per-batch table, one note a line (MTP is not among the tested methods)
    notes = [line for line in err.splitlines() if line.startswith("speclib schedule: note: ")]
    assert len(notes) == err.count("\n") - 2 == 5 and "tested with eagle, eagle3 and dflash" in notes[2]
    assert "[start_bs, end_bs, K] from vLLM v0.25.0 on" in notes[0]  # the release that reads this form
    assert notes[1].startswith("speclib schedule: note: max_num_seqs 64 runs the batch the table is priced to")
    assert json.loads(out)["max_num_seqs"] == 64
    # the header JSON cannot carry comes first: what the schedule is of, and its attention as served (the default)
    assert err.splitlines()[0].startswith("speclib schedule: DeepSeek-V4-Flash on B200; context 4096 tokens")
    assert err.splitlines()[0].endswith("; attention as served; precision: weights fp8 (experts fp4), KV cache fp8 "
                                        "(the checkpoint's)")
    status, out, err = run(argv + ["--step-time", "calibrated"])
    assert status == 0 and json.loads(out) and "warning:" not in err and err.count("note:") == 5


def test_a_vllm_table_with_a_range_of_k_0_says_what_that_range_costs_on_model_runner_v1():
    # vllm-project/vllm#49548: on V1 a table of K = 0 only raised TPOT by 6.56 % at 2 sequences, 21.58 % at 189
    zero = [engines.Range(1, 64, 3), engines.Range(65, 512, 0)]
    text = " ".join(engines.vllm_limits("eagle3", zero))
    assert "K = 0 range 65-512 decodes without drafting but on piecewise graphs" in text
    assert "6.6 % higher at 2 sequences and 21.6 % at 189" in text and "#49548" in text
    assert "_maybe_override_dynamic_sd_cudagraph_mode" in text and "#45953" in text
    plain = " ".join(engines.vllm_limits("eagle3", [engines.Range(1, 512, 3)]))
    assert "piecewise" in plain and "K = 0" not in plain  # the downgrade is the table's, a K = 0 range or not


# --- the chapter's table of both step models and the facts its prose quotes ---------------------
def test_the_calibrated_figure_hatches_where_the_interval_holds_1x():
    from speclib.presentation.figures import engine_schedules

    # priced as the paper prices DeepSeek-V4's attention, the calibrated interval holds 1x at some batches
    sched = make(**DSV4, max_batch=512, tp=2, step_time="calibrated", attention="paper")
    d = engine_schedules.schedule_ranges.data(schedule=sched, max_ranges=(2,))
    lo, hi = sched.interval
    assert ((lo < 1) & (hi > 1)).any()
    np.testing.assert_array_equal(d["uncertain"], (lo < 1) & (hi > 1))
    fig = engine_schedules.schedule_ranges(schedule=sched, max_ranges=(2,))
    assert "80 % interval holds 1x" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_beside_calibrated_gives_each_schedules_gamma_star_at_every_batch(dsv4_calibrated):
    from speclib.presentation.figures import engine_schedules

    roofline = make(**DSV4, max_batch=512, tp=2)
    table = engine_schedules.beside_calibrated(roofline, dsv4_calibrated)
    covered = []
    for row in table.rows:
        lo, _, hi = row[0].partition("-")
        batches = range(int(lo), int(hi or lo) + 1)
        covered += batches
        # gamma* of each batch in the row, searched again by optimal_gamma (not the schedules' own tables)
        for which, column in ((roofline, 1), (dsv4_calibrated, 3)):
            dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=2,
                                     step_time="calibrated" if which is dsv4_calibrated else "roofline")
            g, _ = speclib.optimal_gamma(0.75, np.array(list(batches), float), 4096, 0.1, deployment=dep)
            assert set(int(x) for x in g) == {row[column]}, row
    assert covered == list(range(1, 513))  # every batch once, in order
    assert "roofline" in table.caption and "calibrated" in table.caption
    with pytest.raises(ValueError, match="calibrated"):
        engine_schedules.beside_calibrated(make(**DSV4, max_batch=64, tp=2), dsv4_calibrated)


def test_the_facts_the_prose_quotes_agree_with_where_speculation_stops_paying(dsv4_calibrated):
    """stop and unsure_from against speclib.core.speculation.stops_paying
    (its own sweep over batches); the peak's run against a brute-force scan."""
    from speclib.core.speculation import stops_paying
    from speclib.presentation.figures import engine_schedules

    dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=2, step_time="calibrated")
    facts = engine_schedules.facts(dsv4_calibrated)
    paying = stops_paying(0.75, 4096, 0.1, deployment=dep, max_batch=512)
    assert (facts["stop"], facts["unsure_from"]) == (paying["at"], paying["may_from"])
    roofline = make(**DSV4, max_batch=512, tp=2)
    f = engine_schedules.facts(roofline)
    g = optimal(512, **DSV4, tp=2)
    peak_batches = [b for b in range(1, 513) if g[b - 1] == max(g)]
    run = [b for b in peak_batches if all(g[x - 1] == max(g) for x in range(peak_batches[0], b + 1))]
    assert (f["peak"], f["peak_from"], f["peak_to"]) == (max(g), run[0], run[-1])
    assert f["short_to"] == next(b for b in range(1, 513) if g[b - 1] > g[0]) - 1
    assert f["unsure_from"] is None and f["first"] == g[0]
    trt = roofline.table(first_is_max=True, implicit_zero_tail=True)
    assert (f["trt_keeps"], f["trt_worst_batch"]) == (trt.worst, trt.worst_batch)


def test_an_sglang_schedule_prices_sglangs_own_fixed_time():
    # SGLang's decode runs (DeepSeek-R1, InferenceX) give it fixed times of its own on the chips it ran
    assert cal.shipped_calibration().fixed_s["B200"]["SGLang"] != cal.shipped_calibration().fixed_s["B200"]["vLLM"]
    argv = ["schedule", "--model", "deepseek-v4-flash", "--alpha", "0.75", "--max-batch", "64", "--step-time",
            "calibrated"]
    _, sglang, _ = run(argv + ["--engine", "sglang"])
    comments = " ".join(line.lstrip("# ") for line in sglang.splitlines() if line.startswith("#"))
    assert "no fixed time of its own" not in comments
    doc = yaml.safe_load(sglang)
    mine = speclib.schedule(seq=4096, alpha=0.75, max_batch=64, deployment=speclib.Deployment(
        step_time="calibrated", engine="SGLang", attention="served"))
    # the command's table is the library's default (ranges the interval cannot tell apart merged)
    assert engines.expand_sglang_slots(doc["by_batch_size"]["adaptive_config"], 64) == [int(g) for g in
                                                                                       mine.table().k_per_batch]


def test_facts_at_another_context_are_that_contexts():
    from speclib.presentation.figures import engine_schedules

    sched = make(**{**DSV4, "seq": [4096, 65536]}, max_batch=1024, tp=8)
    long = engine_schedules.facts(sched, c=1)
    g = optimal(1024, **{**DSV4, "seq": 65536}, tp=8)
    zero_from = next(b for b in range(1, 1025) if all(x == 0 for x in g[b - 1:]))
    # past the last batch memory holds with a draft, plain decoding is memory's choice, not the model's
    dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", tp=8)
    held = min(max(dep.max_batch(65536, k) for k in range(1, 65)), dep.max_batch(65536, 0))
    assert long["drafts_held_to"] == (held if held < 1024 else None)
    assert long["stop"] == (zero_from if zero_from <= held else None)
    assert long["first"] == g[0] and long["trt_keeps"] is None
