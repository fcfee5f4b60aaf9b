"""The speed-up sweeps by batch and draft length (data/engine-speculation/sweeps.json):
every run loads with its source, its units are consistent, a printed speed-up agrees
with the pair it comes from, and a bad file is refused naming the file and field."""
import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

from speclib import presets
from speclib.evidence import engines

RUNS = engines.load_sweeps()


def test_the_sweeps_load():
    assert len(RUNS) == 20
    assert len({r.id for r in RUNS}) == len(RUNS)


@pytest.mark.parametrize("r", RUNS, ids=lambda r: r.id)
def test_every_run_has_a_source_and_its_assumptions(r):
    # a repository file, pull request or issue, or a paper's arXiv page
    assert re.match(r"https://(github\.com/[\w.-]+/[\w.-]+/|arxiv\.org/abs/\d{4}\.\d{4,5}$)", r.source["url"])
    assert r.source["title"] and r.source["where"] and r.assumed
    assert r.model["hf_config"].count("/") == 1
    assert r.hardware["count"] >= 1 and r.hardware["chip"]


@pytest.mark.parametrize("r", RUNS, ids=lambda r: r.id)
def test_units_are_consistent(r):
    assert np.all(r.batch >= 1) and np.all(r.gamma >= 1)
    assert np.all(r.batch == np.round(r.batch)) and np.all(r.gamma == np.round(r.gamma))
    s = r.speedup
    if r.quantity == "speedup":
        assert np.all(np.isnan(r.base))
    else:
        # a pair is in one unit: throughput in tokens/s, TPOT and request latency in ms
        assert r.quantity in ("throughput", "tpot_ms", "latency_ms")
    if r.quantity == "latency_ms":
        # milliseconds per request (not seconds), with the run without speculation beside it
        assert np.all(np.isfinite(r.base)) and np.all(r.spec > 100) and np.all(r.base > 100)
    finite = s[np.isfinite(s)]
    # a speculative run between 5x slower and 10x faster: a value outside means
    # the pair was entered the wrong way round or in different units
    assert np.all((finite > 0.2) & (finite < 10))
    if r.quantity == "tpot_ms":
        assert np.all(r.spec < 100) and np.all(r.spec > 0.5)  # milliseconds per token, not seconds
    if r.quantity == "throughput" and r.hardware["count"] == 1:
        assert np.all(r.spec < 1e5)


@pytest.mark.parametrize("r", [r for r in RUNS if np.isfinite(r.printed).any()], ids=lambda r: r.id)
def test_printed_speedups_agree_with_their_pairs(r):
    have = np.isfinite(r.printed)
    # printed to two or more decimals: within half a unit of the second decimal
    np.testing.assert_allclose(r.speedup[have], r.printed[have], atol=0.006)


def test_the_quoted_numbers():
    ngram = engines.sweep("trtllm-ngram-llama4-scout")
    assert list(ngram.batch) == [1, 4, 32] and list(ngram.gamma) == [5, 5, 3]
    np.testing.assert_allclose(ngram.speedup, [1.9613, 1.6399, 1.3306])
    glm = engines.sweep("sglang-autospec-glm47")
    grid = {(b, g): v for b, g, v in zip(glm.batch, glm.gamma, glm.spec)}
    # the pull request's claim: 7 steps best at batch 1 and 3 at batch 64 (of those we store: 5 and 3)
    assert max(range(1, 6), key=lambda g: grid[(1, g)]) == 5
    assert max(range(1, 5), key=lambda g: grid[(64, g)]) == 3
    tpot = engines.sweep("vllm-eagle3-llama31-8b-bs1")
    assert tpot.gamma[np.argmax(tpot.speedup)] == 4  # 'E3 has optimal K=4'


def test_the_source_inconsistency_is_caught_by_the_agreement_check():
    """The EAGLE-1 table's printed ratios at K = 4, 5, 6 disagree with its TPOTs;
    restoring them must fail the agreement test's criterion."""
    e1 = engines.sweep("vllm-eagle-llama31-8b-bs1")
    printed_k4 = 1.567627494  # as the issue prints it
    assert abs(e1.speedup[e1.gamma == 4][0] - printed_k4) > 0.006


def test_preset_names_are_shipped_models():
    shipped = set(presets.shipped_configs())
    for r in RUNS:
        assert r.model["preset"] is None or r.model["preset"] in shipped, r.id


@pytest.mark.parametrize("r", RUNS, ids=lambda r: r.id)
def test_every_run_names_a_model_and_a_chip_speclib_can_price(r):
    # the fit prices every run: a shipped model preset and a hardware preset (by name or alias)
    assert r.model["preset"] in set(presets.shipped_configs())
    assert presets.hardware(r.hardware["chip"]).name in presets.hardware_names()


def test_the_mi300x_mtp_tables():
    """The ROCm blog's Tables 1 and 2: the printed speed-up is the ratio of its
    latencies, and it falls with concurrency in both (as the blog says)."""
    rand = engines.sweep("sglang-mtp-deepseek-v3-mi300x-random")
    assert list(rand.batch) == [1, 2, 4, 8, 16, 32, 64] and set(rand.gamma) == {2}
    np.testing.assert_allclose(rand.base[[0, -1]], [17348.25, 43848.20])
    np.testing.assert_allclose(rand.spec[[0, -1]], [8229.37, 35074.26])
    np.testing.assert_allclose(rand.printed, [2.11, 2.04, 1.84, 1.70, 1.53, 1.44, 1.25])
    share = engines.sweep("sglang-mtp-deepseek-v3-mi300x-sharegpt")
    assert list(share.batch) == [4, 8, 16, 32, 64]
    np.testing.assert_allclose(share.printed, [1.80, 1.75, 1.58, 1.51, 1.36])
    for r in (rand, share):
        assert r.quantity == "latency_ms" and np.all(np.diff(r.speedup) < 0)
        assert r.acceptance.get("assumed") is True


def test_the_eagle3_paper_batch_table():
    """EAGLE-3 paper Table 3 (SGLang, H100): EAGLE-1 loses throughput from batch 24 on,
    EAGLE-3 still gains 1.38x at batch 64 (the abstract's claim)."""
    e3 = engines.sweep("sglang-eagle3-llama31-8b-h100-paper")
    e1 = engines.sweep("sglang-eagle-llama31-8b-h100-paper")
    for r in (e1, e3):
        assert list(r.batch) == [2, 4, 8, 16, 24, 32, 48, 56, 64] and set(r.gamma) == {3}
    np.testing.assert_allclose(e3.speedup, [1.81, 1.82, 1.62, 1.48, 1.39, 1.32, 1.38, 1.34, 1.38])
    np.testing.assert_allclose(e1.speedup, [1.40, 1.38, 1.23, 1.02, 0.93, 0.94, 0.88, 0.99, 0.99])
    assert e3.speedup[-1] == 1.38 and list(e1.batch[e1.speedup < 1]) == [24, 32, 48, 56, 64]
    assert np.all(e3.speedup > e1.speedup)


def test_a_latency_run_without_its_baseline_is_refused(tmp_path):
    doc = _doc()
    run = next(r for r in doc["runs"] if r["quantity"] == "latency_ms")
    del run["points"][0]["base"]
    with pytest.raises(ValueError, match=r"points\[0\]: a latency_ms run needs base"):
        engines.read_sweeps(_write(tmp_path, doc))


def _write(tmp_path, doc):
    path = tmp_path / "sweeps.json"
    path.write_text(json.dumps(doc))
    return path


def _doc():
    return json.loads(engines._sweeps_path().read_text(encoding="utf-8"))


@pytest.mark.parametrize("field", ["source", "quantity", "points", "model", "assumed"])
def test_a_missing_field_names_the_file_and_field(tmp_path, field):
    doc = _doc()
    del doc["runs"][2][field]
    with pytest.raises(ValueError, match=rf"sweeps\.json: runs\[2\].*{field}"):
        engines.read_sweeps(_write(tmp_path, doc))


@pytest.mark.parametrize("where, key, message", [
    ("source", "url", r"source\.url"),
    ("model", "hf_config", r"model\.hf_config"),
    ("point", "gamma", r"points\[0\]: missing field gamma"),
    ("point", "spec", r"points\[0\]: missing field spec"),
])
def test_missing_nested_fields(tmp_path, where, key, message):
    doc = _doc()
    run = doc["runs"][2]
    del (run["points"][0] if where == "point" else run[where])[key]
    with pytest.raises(ValueError, match=message):
        engines.read_sweeps(_write(tmp_path, doc))


def test_bad_values_are_refused(tmp_path):
    doc = _doc()
    bad = copy.deepcopy(doc)
    bad["runs"][0]["points"][0]["batch"] = 0
    with pytest.raises(ValueError, match=r"points\[0\]: batch must be an integer > 0"):
        engines.read_sweeps(_write(tmp_path, bad))
    bad = copy.deepcopy(doc)
    bad["runs"][0]["quantity"] = "tokens"
    with pytest.raises(ValueError, match="quantity must be one of"):
        engines.read_sweeps(_write(tmp_path, bad))
    with pytest.raises(ValueError, match="^run_id must be one of"):
        engines.sweep("nope")


# --- DSpark on AMD and NVIDIA chips, 2026 -----------------------------------------------
BIB = (Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
DSPARK = [r for r in RUNS if r.drafter["type"] == "dspark"]


def test_the_dspark_runs_are_stored():
    assert [r.id for r in DSPARK] == [
        "vllm-dspark-dsv4-flash-mi350x-k7",
        "sglang-dspark-kimik3-b300-lowlat-mxfp4", "sglang-dspark-kimik3-b300-lowlat-nvfp4",
        "sglang-dspark-kimik3-b300-balanced-mxfp4", "sglang-dspark-kimik3-b300-balanced-nvfp4",
        "tokenspeed-dspark-kimik3-mi355x-1k1k", "tokenspeed-dspark-kimik3-mi355x-8k1k"]
    for r in DSPARK:
        # DSpark fills its block in one draft pass (read from vLLM's proposer; see passes_where)
        assert r.passes == 1 and "dspark.py" in r.drafter["passes_where"]


@pytest.mark.parametrize("r", [r for r in RUNS if "key" in r.source], ids=lambda r: r.id)
def test_a_cited_run_names_a_bibliography_entry(r):
    assert re.search(rf"@\w+{{{r.source['key']},", BIB), r.source["key"]


def test_every_dspark_run_cites_its_entry():
    assert all("key" in r.source for r in DSPARK)


def test_the_vllm_rocm_dspark_table():
    """vLLM PR 52362's table: no speculation and fixed K = 7 (tok/s) as printed; the
    gain falls from about 2.5x at concurrency 4 to a loss at 256 (ratios as the
    brief that asked for the run quoted them, to two decimals)."""
    r = engines.sweep("vllm-dspark-dsv4-flash-mi350x-k7")
    assert list(r.batch) == [4, 8, 16, 32, 64, 128, 256] and set(r.gamma) == {7}
    np.testing.assert_allclose(r.base, [381.53, 729.20, 1342.83, 2392.99, 4094.75, 6340.78, 8878.57])
    np.testing.assert_allclose(r.spec, [970.33, 1762.59, 2909.52, 4756.32, 6712.35, 8778.87, 7852.42])
    np.testing.assert_allclose(r.speedup, [2.54, 2.42, 2.17, 1.99, 1.64, 1.38, 0.88], atol=0.005)
    assert np.all(np.diff(r.speedup) < 0) and list(r.batch[r.speedup < 1]) == [256]
    assert r.hardware["chip"] == "MI350X" and r.hardware["assumed"] is True


SGLANG_K3 = {  # SGLang PR 37878: (strategy, quant) -> rows (conc, TTFT, TPOT, tok/s/GPU) NOSPEC and DSPARK
    ("lowlat", "mxfp4"): [(1, (378, 8.51, 127), (389, 2.84, 351)), (16, (3539, 19.47, 785), (3942, 9.88, 1319))],
    ("lowlat", "nvfp4"): [(1, (369, 10.12, 107), (380, 3.24, 313)), (16, (3387, 20.94, 742), (3765, 9.77, 1345))],
    ("balanced", "mxfp4"): [(64, (11635, 40.19, 1395), (12038, 24.47, 1987))],
    ("balanced", "nvfp4"): [(64, (11063, 41.55, 1373), (11664, 22.17, 1946))],
}


@pytest.mark.parametrize("strategy, quant", sorted(SGLANG_K3))
def test_the_sglang_kimi_k3_b300_table(strategy, quant):
    r = engines.sweep(f"sglang-dspark-kimik3-b300-{strategy}-{quant}")
    rows = SGLANG_K3[strategy, quant]
    assert list(r.batch) == [c for c, _, _ in rows] and set(r.gamma) == {7}
    np.testing.assert_allclose(r.base, [base[2] for _, base, _ in rows])
    np.testing.assert_allclose(r.spec, [spec[2] for _, _, spec in rows])
    tpot_spec, tpot_base = r.also["tpot_ms"]
    ttft_spec, ttft_base = r.also["ttft_ms"]
    np.testing.assert_allclose(tpot_base, [base[1] for _, base, _ in rows])
    np.testing.assert_allclose(tpot_spec, [spec[1] for _, _, spec in rows])
    np.testing.assert_allclose(ttft_base, [base[0] for _, base, _ in rows])
    np.testing.assert_allclose(ttft_spec, [spec[0] for _, _, spec in rows])
    # DSpark gains on both measures; TPOT gains more (the throughput counts the
    # 8,192-token prefill, which speculation does not shorten, and TTFT grows)
    assert np.all(r.speedup > 1) and np.all(tpot_base / tpot_spec > r.speedup) and np.all(ttft_spec > ttft_base)
    assert r.hardware["chip"] == "B300" and r.model["preset"] == "kimi-k3"


def test_the_sglang_kimi_k3_gain_falls_with_concurrency():
    gains = {c: g for s in ("lowlat-mxfp4", "balanced-mxfp4")
             for c, g in zip(engines.sweep(f"sglang-dspark-kimik3-b300-{s}").batch,
                             engines.sweep(f"sglang-dspark-kimik3-b300-{s}").speedup)}
    assert gains[1] > gains[16] > gains[64] > 1


def test_the_tokenspeed_kimi_k3_ratios():
    """TokenSpeed PR 905's printed ratios (W4 over no speculation, 3-run medians): at
    8K/1K DSpark loses at concurrency 1 and nearly breaks even by 8 and 16."""
    short = engines.sweep("tokenspeed-dspark-kimik3-mi355x-1k1k")
    long_ = engines.sweep("tokenspeed-dspark-kimik3-mi355x-8k1k")
    assert list(short.batch) == [1, 4, 8, 16] and list(long_.batch) == [1, 8, 16]
    np.testing.assert_allclose(short.speedup, [1.03, 1.04, 1.14, 1.03])
    np.testing.assert_allclose(long_.speedup, [0.77, 0.97, 0.95])
    assert long_.speedup[0] < 1 and long_.speedup[0] < long_.speedup[1:].min()
    # the server batch is capped at 16: no point past it is stored as if it were a batch
    assert short.batch.max() <= 16 and "1.32x" in short.assumed
    assert set(short.gamma) == set(long_.gamma) == {3} and "W4" in short.assumed


# --- the optional fields are checked like the required ones ---------------------------------
def _with_point(tmp_path, **fields):
    doc = _doc()
    run = next(r for r in doc["runs"] if r["id"] == "vllm-dspark-dsv4-flash-mi350x-k7")
    run["points"][0].update(fields)
    return _write(tmp_path, doc)


def test_a_point_may_carry_its_accept_length_and_other_measures(tmp_path):
    path = _with_point(tmp_path, accept_length=3.2, also={"tpot_ms": {"spec": 5.0, "base": 9.0}})
    r = next(r for r in engines.read_sweeps(path) if r.id == "vllm-dspark-dsv4-flash-mi350x-k7")
    assert r.accept_length[0] == 3.2 and np.isnan(r.accept_length[1:]).all()
    spec, base = r.also["tpot_ms"]
    assert (spec[0], base[0]) == (5.0, 9.0) and np.isnan(spec[1:]).all() and len(spec) == len(r.batch)


@pytest.mark.parametrize("fields, message", [
    (dict(accept_length=0.5), r"points\[0\]: accept_length must be a number >= 1"),
    (dict(also={"goodput": {"spec": 1.0}}), r"points\[0\]: also\.goodput is not a measure"),
    (dict(also={"throughput": {"spec": 1.0}}), r"points\[0\]: also\.throughput is not a measure"),  # its own quantity
    (dict(also={"tpot_ms": {"base": 9.0}}), r"points\[0\]: also\.tpot_ms must be an object with spec"),
    (dict(also={"tpot_ms": {"spec": -1.0}}), r"points\[0\]: also\.tpot_ms\.spec must be a number > 0"),
    (dict(also=[1, 2]), r"points\[0\]: also must be an object"),
])
def test_bad_optional_point_fields_are_refused(tmp_path, fields, message):
    with pytest.raises(ValueError, match=r"sweeps\.json: runs\[\d+\] \(vllm-dspark-dsv4-flash-mi350x-k7\): " + message):
        engines.read_sweeps(_with_point(tmp_path, **fields))


@pytest.mark.parametrize("passes", [-1, 1.5, True, "one"])
def test_bad_drafter_passes_are_refused(tmp_path, passes):
    doc = _doc()
    next(r for r in doc["runs"] if r["id"] == "tokenspeed-dspark-kimik3-mi355x-8k1k")["drafter"]["passes"] = passes
    with pytest.raises(ValueError, match=r"\(tokenspeed-dspark-kimik3-mi355x-8k1k\): drafter\.passes must be an integer >= 0"):
        engines.read_sweeps(_write(tmp_path, doc))
