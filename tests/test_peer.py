"""The peers' stored predictions (data/peer/aiconfigurator.json and
data/peer/aisimulate.json, read by speclib.evidence.peer), each file tested
alike: its shape, the database version every call named, every run it names is one of ours
with the same measured numbers (so the file cannot drift from the data it
was priced on), every run the peer could not price is accounted for, and
the module's summaries equal the same summaries computed here by brute
force over the file's rows read as plain JSON."""
import ast
import json
import math
import re
import statistics
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import speclib
from speclib.evidence import decode_runs as dec
from speclib.evidence import peer
from speclib.evidence import spec_runs as spec

ROOT = Path(__file__).resolve().parents[1]
PAIRS = {r.id: r for r in spec.spec_runs() if r.id.startswith("inferencex-r1-mtp")}


class Stored:
    """One peer's stored file read as plain JSON, its tables' rows as dicts."""

    def __init__(self, tool):
        self.tool = tool
        self.text = resources.files("speclib").joinpath("data", "peer", f"{tool}.json").read_text("utf-8")
        raw = self.RAW = json.loads(self.text)
        self.DECODE = [dict(zip(raw["decode"]["fields"], r)) for r in raw["decode"]["rows"]]
        self.MTP = [dict(zip(raw["mtp"]["fields"], r)) for r in raw["mtp"]["rows"]]
        self.OPS = [dict(zip(raw["ops"]["fields"], r)) for r in raw["ops"]["rows"]]
        self.STEPS = {(r[0], r[1], r[2]): dict(zip(raw["ops"]["steps"]["fields"], r)) for r in raw["ops"]["steps"]["rows"]}


STORED = {tool: Stored(tool) for tool in ("aiconfigurator", "aisimulate")}
#: What each file must name: the peer, its package and where it lives.
NAMES = {"aiconfigurator": ("AIConfigurator", "https://github.com/ai-dynamo/aiconfigurator"),
         "aisimulate": ("AISimulate", "https://github.com/ai-dynamo/aisimulate")}


@pytest.fixture(params=sorted(STORED))
def f(request):
    return STORED[request.param]


def our_key(r) -> tuple:
    return (r.url, r.date, r.chip, r.engine, r.weights, r.tp, r.ep, r.dp_attention, r.workload, r.concurrency)


def row_key(r) -> tuple:
    return (r["run"], r["date"], r["chip"], r["engine"], r["weights"], r["tp"], r["ep"], r["dp_attention"],
            r["workload"], r["concurrency"])


OURS = {our_key(r): r for r in dec.decode_runs("r1")}


# --- the file's shape ---------------------------------------------------------------------


def test_header_names_the_peer_its_version_and_the_run(f):
    p = f.RAW["peer"]
    assert (p["name"], p["url"]) == NAMES[f.tool] and p["package"] == f.tool and p["license"].startswith("Apache-2.0")
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", p["version"]) and p["core_version"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", f.RAW["run"]["date"])
    assert "cli_estimate" in f.RAW["run"]["api"] and "--nextn-accepted" in f.RAW["run"]["cli"]
    m = f.RAW["mapping"]
    assert set(m["systems"]) <= {"H200", "B200", "B300", "H100", "GB200", "GB300"}
    assert set(m["backends"]) == {"SGLang", "TRT"} and set(m["models"]) == {"fp8", "fp4"}
    assert len(f.RAW["assumptions"]) >= 5 and all(isinstance(a, str) and a for a in f.RAW["assumptions"])
    for model, systems in f.RAW["coverage"]["models"].items():
        assert model in m["models"].values() and systems


def test_rows_match_their_fields(f):
    assert tuple(f.RAW["decode"]["fields"]) == peer.DECODE_FIELDS
    assert tuple(f.RAW["mtp"]["fields"]) == peer.MTP_FIELDS
    for table in (f.RAW["decode"], f.RAW["mtp"], f.RAW["decode"]["not_priced"], f.RAW["mtp"]["not_priced"]):
        assert table["rows"] and all(len(r) == len(table["fields"]) for r in table["rows"])
    for r in f.DECODE:
        assert r["peer_tpot_ms"] > 0 and r["measured_tpot_ms"] > 0 and isinstance(r["kv_warning"], bool)
        assert r["chip"] in f.RAW["mapping"]["systems"] and r["engine"] in f.RAW["mapping"]["backends"]


def test_each_mtp_configuration_fitted_once_at_its_smallest_concurrency(f):
    by_id = {}
    for r in f.MTP:
        by_id.setdefault(r["id"], []).append(r)
    for run_id, rows in by_id.items():
        fitted = [r for r in rows if r["fitted"]]
        assert len(fitted) == 1 and fitted[0]["concurrency"] == min(r["concurrency"] for r in rows), run_id
        assert len({r["accepted"] for r in rows}) == 1 and 0 <= rows[0]["accepted"] <= rows[0]["gamma"]
        if not fitted[0]["at_bound"]:  # the grid's last step is 0.001 accepted tokens: the speed-up lands close
            assert fitted[0]["peer_speedup"] == pytest.approx(fitted[0]["measured_speedup"], rel=2e-3)
        for r in rows:  # the speed-up is the two TPOTs' ratio
            assert r["peer_speedup"] == pytest.approx(r["peer_tpot_ms"] / r["peer_tpot_mtp_ms"], rel=1e-3)


def test_the_file_is_in_its_written_form(f):
    assert peer.dumps(f.RAW) == f.text
    assert json.loads(peer.dumps(f.RAW)) == f.RAW


def test_every_call_names_its_database_version(f):
    """Left unnamed, a call looks the tool's latest tables up (and they can
    move): the file counts the calls by the version each named, and those
    are the calls made, each a literal version of a backend the mapping
    uses (not an alias such as current or latest)."""
    run, backends = f.RAW["run"], f.RAW["mapping"]["backends"]
    calls = run["database_versions"]["calls"]
    assert sum(calls.values()) == run["calls"] > len(f.DECODE) + len(f.MTP)
    assert set(calls) == {f"{backend} {version}" for backend, version in backends.values()}
    for key in calls:
        assert re.fullmatch(r"(sglang|trtllm) \d+\.\d+\.\d+(rc\d+)?", key), key
    assert "backend_version" in run["api"] and "--backend-version {version}" in run["cli"]
    assert f.tool in run["script"] and f.RAW["peer"]["install"].startswith(f"pip install {f.tool}==")


# --- against our data: the same runs, the same measured numbers ----------------------------


def test_every_decode_row_is_one_of_our_runs_with_its_measured_tpot(f):
    keys = [row_key(r) for r in f.DECODE]
    assert len(set(keys)) == len(keys)
    for r in f.DECODE:
        ours = OURS[row_key(r)]
        assert r["measured_tpot_ms"] == ours.tpot_s * 1e3
        assert (r["isl"], r["osl"]) == (round(ours.input_len), round(ours.output_len))
        assert r["kv_cache"] == ours.kv_cache


def test_every_r1_decode_run_is_priced_or_accounted_for(f):
    priced = {row_key(r) for r in f.DECODE}
    left = {}
    for key, r in OURS.items():
        if key not in priced:
            left[(r.chip, r.engine, r.weights, r.layout, r.workload)] = left.get(
                (r.chip, r.engine, r.weights, r.layout, r.workload), 0) + 1
    stated = {}
    for chip, engine, weights, lay, wl, n, why in f.RAW["decode"]["not_priced"]["rows"]:
        stated[(chip, engine, weights, lay, wl)] = stated.get((chip, engine, weights, lay, wl), 0) + n
        assert why
    assert stated == left
    # AMD chips have no tables; every NVIDIA run of a mapped chip is priced but for the refusals stated
    assert {k[0] for k in left} >= {"MI300X", "MI325X", "MI355X"}


def test_every_mtp_row_is_one_of_our_pairs_with_its_measured_speedup(f):
    for r in f.MTP:
        pair = PAIRS[r["id"]]
        points = {int(b): (int(g), v) for b, g, v in pair.points}
        assert points[r["concurrency"]] == (r["gamma"], r["measured_speedup"])
    for run_id in {r["id"] for r in f.MTP}:
        assert {r["concurrency"] for r in f.MTP if r["id"] == run_id} == {int(b) for b, _, _ in PAIRS[run_id].points}
    refused = {run_id for run_id, _ in f.RAW["mtp"]["not_priced"]["rows"]}
    assert refused | {r["id"] for r in f.MTP} == set(PAIRS) and not refused & {r["id"] for r in f.MTP}
    assert all(PAIRS[i].chip not in f.RAW["mapping"]["systems"] for i in refused)


def test_both_peers_place_the_same_runs():
    """AISimulate carries AIConfigurator's estimate API and prices the same
    deployments: the same decode runs and MTP points, the same refusals."""
    a, b = STORED["aiconfigurator"], STORED["aisimulate"]
    assert {row_key(r) for r in a.DECODE} == {row_key(r) for r in b.DECODE}
    assert {(r["id"], r["concurrency"]) for r in a.MTP} == {(r["id"], r["concurrency"]) for r in b.MTP}
    assert [r[:6] for r in a.RAW["decode"]["not_priced"]["rows"]] == [r[:6] for r in b.RAW["decode"]["not_priced"]["rows"]]
    assert [r[0] for r in a.RAW["mtp"]["not_priced"]["rows"]] == [r[0] for r in b.RAW["mtp"]["not_priced"]["rows"]]


def test_the_peers_are_two_runs_not_one_copied():
    # the two tools share their tables' versions, yet their TPOTs part on some runs: a copied file would not
    a = {row_key(r): r["peer_tpot_ms"] for r in STORED["aiconfigurator"].DECODE}
    gaps = [abs(r["peer_tpot_ms"] / a[row_key(r)] - 1) for r in STORED["aisimulate"].DECODE]
    assert max(gaps) > 0.05 and sum(g > 0.01 for g in gaps) >= 10
    assert STORED["aisimulate"].RAW["peer"]["version"] != STORED["aiconfigurator"].RAW["peer"]["version"]


def test_side_by_side_equals_brute_force():
    """The peers' median |error| on each subset, from the two files' rows as
    plain JSON: decode TPOT over the runs both price (and fp8 on TP8), the
    MTP speed-up at every concurrency past a configuration's smallest."""
    s = peer.side_by_side()
    keys = set.intersection(*({row_key(r) for r in st.DECODE} for st in STORED.values()))
    for tool, st in STORED.items():
        name = NAMES[tool][0]
        rows = [r for r in st.DECODE if row_key(r) in keys]
        e = [abs(r["peer_tpot_ms"] / r["measured_tpot_ms"] - 1) for r in rows]
        t = [abs(r["peer_tpot_ms"] / r["measured_tpot_ms"] - 1) for r in rows
             if r["weights"] == "fp8" and r["tp"] == 8 and r["ep"] == 1 and not r["dp_attention"]]
        smallest = {i: min(r["concurrency"] for r in st.MTP if r["id"] == i) for i in {r["id"] for r in st.MTP}}
        m = [abs(r["peer_speedup"] / r["measured_speedup"] - 1) for r in st.MTP if r["concurrency"] != smallest[r["id"]]]
        for subset, errors in (("decode TPOT", e), ("decode TPOT, fp8 on TP8", t), ("MTP speed-up", m)):
            assert s[subset]["points"] == len(errors)
            assert s[subset]["median_abs_error"][name] == pytest.approx(statistics.median(errors), abs=1e-12)
    assert set(s) == set(peer.SUBSETS)
    for subset in s.values():
        assert {"AIConfigurator", "AISimulate"} < set(subset["median_abs_error"])
        assert any(k.startswith("speclib") for k in subset["median_abs_error"])


# --- the summaries, brute force -------------------------------------------------------------


def brute_falls(rows, measured="measured_speedup", predicted="peer_speedup"):
    """(error at every concurrency past the smallest, error at each configuration's largest)."""
    every, top = [], []
    for run_id in sorted({r["id"] for r in rows}):
        pts = sorted((r for r in rows if r["id"] == run_id), key=lambda r: r["concurrency"])
        first = pts[0]
        for r in pts[1:]:
            e = (r[predicted] / first[predicted]) / (r[measured] / first[measured]) - 1
            every.append(e)
            if r is pts[-1]:
                top.append(e)
    return every, top


def test_fall_summary_equals_brute_force(f):
    every, top = brute_falls(f.MTP)
    s = peer.fall_summary(peer.mtp_points(f.tool))
    assert s["points"] == len(every) and s["configurations"] == len(top) == len({r["id"] for r in f.MTP})
    assert s["median_abs_error"] == pytest.approx(statistics.median(abs(e) for e in every), abs=1e-12)
    assert s["median_abs_error_top"] == pytest.approx(statistics.median(abs(e) for e in top), abs=1e-12)
    assert s["median_signed_error"] == pytest.approx(statistics.median(every), abs=1e-12)
    assert s["worst_abs_error_top"] == pytest.approx(max(abs(e) for e in top), abs=1e-12)


def test_falls_are_ratios_to_the_smallest_concurrency():
    # a hand-made pair of configurations: 2.0 -> 1.5 measured, 2.0 -> 1.8 predicted: +20 %
    pts = [("a", 4, 3, 2.0, 2.0), ("a", 64, 3, 1.5, 1.8), ("b", 1, 2, 1.2, 1.1), ("b", 8, 2, 1.2, 1.1)]
    f = peer.falls(pts)
    assert [(x[0], x[2]) for x in f] == [("a", 64), ("b", 8)]
    assert f[0][3] == pytest.approx(0.75) and f[0][4] == pytest.approx(0.9) and f[0][5] == pytest.approx(0.2)
    assert f[1][5] == pytest.approx(0.0)
    assert peer.fall_summary(pts)["median_abs_error_top"] == pytest.approx(0.1)


def test_decode_table_equals_brute_force(f):
    by_chip = {}
    for r in f.DECODE:
        by_chip.setdefault(r["chip"], []).append(r["peer_tpot_ms"] / r["measured_tpot_ms"] - 1)
    points = peer.decode_points(f.tool)
    table = peer.decode_table("chip", points)
    assert [row[0] for row in table] == sorted(by_chip)
    for chip, n, med, signed in table:
        assert n == len(by_chip[chip])
        assert med == pytest.approx(statistics.median(abs(e) for e in by_chip[chip]), abs=1e-12)
        assert signed == pytest.approx(statistics.median(by_chip[chip]), abs=1e-12)
    by_conc = {}
    for r in f.DECODE:
        by_conc.setdefault(r["concurrency"], []).append(r["peer_tpot_ms"] / r["measured_tpot_ms"] - 1)
    assert {row[0]: row[1] for row in peer.decode_table("concurrency", points)} == {c: len(e) for c, e in by_conc.items()}
    s = peer.decode_summary(points)
    assert s["runs"] == len(f.DECODE)


def test_ours_on_the_same_runs(f):
    ours = peer.ours_mtp_points({r["id"] for r in f.MTP})
    assert {p[0] for p in ours} == {r["id"] for r in f.MTP}
    measured = {(r["id"], r["concurrency"]): r["measured_speedup"] for r in f.MTP}
    assert {(p[0], p[1]): p[3] for p in ours} == measured
    for how in peer.OURS:
        pts = peer.ours_decode_points(how, f.tool)
        assert [p[:7] for p in pts] == [p[:7] for p in peer.decode_points(f.tool)]
        assert all(p[7] > 0 for p in pts)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="by"):
        peer.decode_table(("chip", "colour"))
    with pytest.raises(ValueError, match="how"):
        peer.ours_decode_points("guessed")
    with pytest.raises(ValueError, match="op"):
        peer.verify_extra_per_layer("generation_colour")
    with pytest.raises(ValueError, match="draft_layers"):
        peer.verify_extra_per_layer(draft_layers="yes")


# --- the per-operation breakdown ------------------------------------------------------------


def test_ops_tables_cover_both_arms_of_every_mtp_point(f):
    assert tuple(f.RAW["ops"]["fields"]) == peer.OPS_FIELDS
    assert tuple(f.RAW["ops"]["steps"]["fields"]) == peer.OPS_STEP_FIELDS
    assert f.RAW["ops"]["what"] and f.RAW["ops"]["steps"]["what"] and "SOL" in f.RAW["ops"]["cli"]
    arms = {(r["id"], r["concurrency"], n): r for r in f.MTP for n in (0, r["gamma"])}
    assert set(f.STEPS) == set(arms) and len(f.RAW["ops"]["steps"]["rows"]) == len(arms)
    keys = [(r["id"], r["concurrency"], r["nextn"], r["step"], r["op"]) for r in f.OPS]
    assert len(set(keys)) == len(keys)
    names = {}
    for r in f.OPS:
        assert (r["id"], r["concurrency"], r["nextn"]) in arms
        assert r["step"] in ("mixed", "decode") and r["source"] in ("silicon", "empirical", "mixed")
        assert all(r[k] >= 0 for k in ("ms_per_step", "sol_ms_per_step", "ms_per_iteration", "sol_ms_per_iteration"))
        names.setdefault((r["id"], r["concurrency"], r["nextn"], r["step"]), set()).add(r["op"])
    decode = {k: v for k, v in names.items() if k[3] == "decode"}
    assert len(decode) == len(arms) and all(set(peer.VERIFY_OPS) <= v for v in decode.values())
    for key, m in arms.items():  # the MTP arm is priced at the fitted acceptance, the plain arm at none
        assert f.STEPS[key]["accepted"] == (m["accepted"] if key[2] else 0.0)
    assert peer.ops(f.tool) == f.OPS and [tuple(r.values()) for r in peer.ops_steps(f.tool)] == [tuple(r) for r in
                                                                                  f.RAW["ops"]["steps"]["rows"]]


def test_ops_schedule_is_the_peers_rule(f):
    """Each arm's step counts as the peer's aggregated mode defines them, from
    the pair's lengths and the fitted acceptance (not from the file's own
    columns): 1 + (OSL - 1) / (1 + accepted) decode iterations, one mixed step
    per request's prefill (the context budget is the ISL), the TPOT counting
    all but three of them, the rest decode-only steps; the peer's layers are
    R1's and its MTP scale (layers + nextn) / layers."""
    from speclib import presets

    layers = presets.model("DeepSeek-R1").step_architecture().attention_layers
    for (run_id, c, nextn), st in f.STEPS.items():
        pair = PAIRS[run_id]
        isl, osl = (round(x) for x in pair.prefill_lengths)
        a = st["accepted"]
        assert st["batch"] * (pair.gpus if pair.dp_attention else 1) == c
        assert st["decode_iterations"] == pytest.approx(1 + (osl - 1) / (1 + a), abs=1e-6)
        assert st["mixed_steps"] == math.ceil(isl * st["batch"] / isl) == st["batch"]
        assert st["decode_steps"] == pytest.approx(st["decode_iterations"] - st["mixed_steps"], abs=1e-6)
        assert st["decode_steps"] > 0 and st["mixed_steps_counted"] == max(1, st["mixed_steps"] - 3)
        assert st["tokens_per_iteration"] == pytest.approx(1 + a, abs=1e-12)
        assert st["layers"] == layers
        assert st["layer_scale"] == pytest.approx((layers + nextn) / layers, abs=1e-9)


def test_ops_sum_to_the_stored_tpots(f):
    """What was checked: the peer's TPOT is its TPOT-weighted mean step over the
    tokens one iteration commits, with no overhead outside the operations. So
    (1) each kind of step's operations sum to that step's latency; (2) each
    row's share of an iteration is its step latency times the steps of its
    kind the TPOT counts over all it counts; (3) an arm's shares sum to
    TPOT x tokens per iteration, on the measured tables and at speed of light;
    (4) that TPOT is the one the mtp table stores for the arm."""
    by_arm = {}
    for r in f.OPS:
        by_arm.setdefault((r["id"], r["concurrency"], r["nextn"]), []).append(r)
    mtp = {(r["id"], r["concurrency"]): r for r in f.MTP}
    for key, rows in by_arm.items():
        st = f.STEPS[key]
        counted = {"mixed": st["mixed_steps_counted"], "decode": st["decode_steps"]}
        total = sum(counted.values())
        for kind, step_ms in (("mixed", st["mixed_ms"]), ("decode", st["decode_ms"])):
            assert sum(r["ms_per_step"] for r in rows if r["step"] == kind) == pytest.approx(step_ms, abs=2e-5)
        for r in rows:
            w = counted[r["step"]] / total
            assert r["ms_per_iteration"] == pytest.approx(r["ms_per_step"] * w, abs=2e-6)
            assert r["sol_ms_per_iteration"] == pytest.approx(r["sol_ms_per_step"] * w, abs=2e-6)
        iteration = st["tpot_ms"] * st["tokens_per_iteration"]
        assert sum(r["ms_per_iteration"] for r in rows) == pytest.approx(iteration, abs=5e-5)
        assert (st["mixed_ms"] * counted["mixed"] + st["decode_ms"] * counted["decode"]) / total == pytest.approx(
            iteration, rel=1e-6)
        assert sum(r["sol_ms_per_iteration"] for r in rows) == pytest.approx(
            st["sol_tpot_ms"] * st["tokens_per_iteration"], abs=5e-5)
        m = mtp[key[:2]]
        assert st["tpot_ms"] == pytest.approx(m["peer_tpot_mtp_ms"] if key[2] else m["peer_tpot_ms"], abs=6e-5)
        assert st["sol_tpot_ms"] < st["tpot_ms"]


def brute_verify_extra(f, op, draft_layers):
    """(id, concurrency) -> (us, sol us) per extra verified position per layer, from the rows as plain JSON."""
    out = {}
    for m in f.MTP:
        g = m["gamma"]
        plain, mtp = ([r for r in f.OPS if (r["id"], r["concurrency"], r["nextn"], r["step"], r["op"])
                       == (m["id"], m["concurrency"], n, "decode", op)][0] for n in (0, g))
        st = f.STEPS[(m["id"], m["concurrency"], g)]
        scale = 1.0 if draft_layers else (61 + g) / 61  # R1's 61 layers, g draft layers on top
        out[(m["id"], m["concurrency"])] = tuple(
            (mtp[k] / scale - plain[k]) / (st["batch"] * g) / 61 * 1000 for k in ("ms_per_step", "sol_ms_per_step"))
    return out


@pytest.mark.parametrize("draft_layers", [False, True])
@pytest.mark.parametrize("op", ["generation_mla_block", "generation_moe_overlap"])
def test_verify_extra_per_layer_equals_brute_force(f, op, draft_layers):
    rows = peer.verify_extra_per_layer(op, f.tool, draft_layers=draft_layers)
    expected = brute_verify_extra(f, op, draft_layers)
    assert [(r["id"], r["concurrency"]) for r in rows] == sorted(expected)
    for r in rows:
        us, sol = expected[(r["id"], r["concurrency"])]
        assert r["us"] == pytest.approx(us, rel=1e-6, abs=1e-6)
        assert r["sol_us"] == pytest.approx(sol, rel=1e-6, abs=1e-6)
        assert r["layers"] == 61 and r["extra_positions"] == r["concurrency"] * r["gamma"]
    s = peer.verify_extra_summary(op, f.tool, draft_layers=draft_layers)
    values = [v[0] for v in expected.values()]
    assert s["points"] == len(values) == len(f.MTP)
    assert (s["min_us"], s["max_us"]) == pytest.approx((min(values), max(values)), abs=1e-9)
    assert s["median_us"] == pytest.approx(statistics.median(values), abs=1e-9)
    assert s["sol_median_us"] == pytest.approx(statistics.median(v[1] for v in expected.values()), abs=1e-9)


def test_verify_extra_keeping_the_draft_layers_costs_more(f):
    # the draft layers add gamma layers' work at the verify's positions: never less than without them
    for op in peer.VERIFY_OPS:
        for a, b in zip(peer.verify_extra_per_layer(op, f.tool),
                        peer.verify_extra_per_layer(op, f.tool, draft_layers=True)):
            assert b["us"] > a["us"] and b["sol_us"] > a["sol_us"]


def test_the_peers_verified_position_reads_its_whole_cache_at_speed_of_light(f):
    """The peer's assumption, stated in the file's header, recovered from its
    SOL numbers: one more verified position costs one layer's attention one
    more read of its request's KV cache (R1's latent, 1152 bytes per token per
    layer in bf16, half in fp8) at the mean context ISL + OSL // 2 + 1, at the
    chip's bandwidth (presets): never less, at most 12 % more (a small
    per-position remainder, about 0.011 us, and on B200 a bandwidth some 4 %
    below the preset's). Were the positions of one request to share one read,
    the figure would fall by 1 + gamma."""
    from speclib import presets

    arch = presets.model("DeepSeek-R1").step_architecture()
    for r in peer.verify_extra_per_layer("generation_mla_block", f.tool):
        pair = PAIRS[r["id"]]
        isl, osl = (round(x) for x in pair.prefill_lengths)
        per_token = arch.context_bytes * (0.5 if pair.kv_cache == "fp8" else 1.0)
        read_us = (isl + osl // 2 + 1) * per_token / presets.hardware(pair.chip).memory_bandwidth * 1e6
        assert 1.0 < r["sol_us"] / read_us < 1.12, (r["id"], r["concurrency"], r["sol_us"], read_us)


# --- the peer stays outside the package ----------------------------------------------------


def test_nothing_in_the_package_imports_the_peer():
    for path in Path(speclib.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] in ("aiconfigurator", "aiconfigurator_core", "aisimulate",
                                               "aisimulate_core", "bench_peer")
                           for n in names), path


def test_the_script_prints_the_stored_summary(f):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_peer.py"), "--tool", f.tool, "--summary"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{NAMES[f.tool][0]} {f.RAW['peer']['version']}" in done.stdout and "fall of the gain" in done.stdout
    assert "on the same points" in done.stdout
    assert "extra verified position" in done.stdout
