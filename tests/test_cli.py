"""The command line: each subcommand's output against the library (and a
brute-force search), bad input, help text, and the module entry point."""
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import speclib
from speclib import presets
from speclib.tools import cli
from speclib.tools.commands import options, sweep

REPO = Path(__file__).resolve().parents[1]
POINT = ["--batch", "64", "--seq", "4096", "--alpha", "0.75", "--draft-cost", "0.1"]


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- gamma ------------------------------------------------------------------------------
def test_gamma_json_is_the_brute_force_optimum(capsys):
    code, out, err = run(capsys, "gamma", "--model", "deepseek-v4-flash", "--hardware", "b200", *POINT, "--json")
    assert code == 0 and err == ""
    record = json.loads(out)
    # brute force: evaluate every draft length one at a time and keep the best
    speedups = [speclib.speedup(0.75, g, 64, 4096, 0.1) for g in range(65)]
    best = max(range(65), key=lambda g: (speedups[g], -g))
    assert record["gamma_star"] == best
    assert record["speedup"] == pytest.approx(speedups[best], rel=1e-12)
    assert record["marginal_cost"] == speclib.marginal_cost(64, 4096, 0.1)
    assert sum(record["cost_shares"].values()) == pytest.approx(1.0)
    assert record["model"] == "DeepSeek-V4-Flash" and record["hardware"] == "B200"


def test_gamma_text_shows_gamma_speedup_and_every_component(capsys):
    code, out, err = run(capsys, "gamma", "--model", "deepseek-v4-flash", "--hardware", "b200", *POINT)
    assert code == 0 and err == ""
    gamma_star, speedup = speclib.optimal_gamma(0.75, 64, 4096, 0.1)
    assert f"gamma*   {gamma_star} " in out
    assert f"speedup  {speedup:.4f}x" in out
    costs = speclib.marginal_cost(64, 4096, 0.1)
    # each component labelled by its kind in the model (V4-Flash: a mixture of experts, MLA attention)
    labels = {"attn_proj": "attention projections", "moe": "MoE FFN", "attention": "attention (MLA)",
              "drafter": "drafter", "total": "total"}
    rows = [line.strip() for line in out.splitlines()]
    for name, label in labels.items():
        (row,) = [r for r in rows if r.startswith(label + "  ")]
        assert float(row[len(label):].split()[0]) == pytest.approx(costs[name], abs=5e-4)
    assert not any(r.startswith("moe ") for r in rows)


def test_gamma_labels_a_dense_ffn_as_dense(capsys):
    code, out, _ = run(capsys, "gamma", "--model", "llama-3-70b", "--hardware", "h200", "--tp", "2", *POINT)
    rows = [line.strip() for line in out.splitlines()]
    assert code == 0 and any(r.startswith("dense FFN  ") for r in rows) and any(r.startswith("attention (GQA)  ") for r in rows)
    assert not any("MoE" in r or r.startswith("moe") for r in rows)
    _, text, _ = run(capsys, "gamma", "--model", "llama-3-70b", "--hardware", "h200", "--tp", "2", *POINT, "--json")
    assert json.loads(text)["components"]["moe"] == "dense FFN"


def test_gamma_ledger_reads_one_gpu_of_the_tensor_parallel_group(capsys):
    # DeepSeek-V3 on H200 (config: 128 heads, latent 512 + rope 64, bf16): one GPU of TP8 computes 16 heads
    # over the whole latent, so attention turns compute-bound from T = 8 * 206.125 * 1152 / 278528 = 6.8, past
    # the first speculated token's width of 2: slope 0 at TP8, 1 on one GPU (T* = 0.85)
    point = ["--model", "deepseek-v3", "--hardware", "h200", "--batch", "16", "--seq", "8192", "--alpha", "0.8"]
    records = {}
    for tp in ("1", "8"):
        code, out, err = run(capsys, "gamma", *point, "--tp", tp, "--json")
        assert code == 0 and err == ""
        records[tp] = json.loads(out)
    assert 8 * (989.4e12 / 4.8e12) * 1152 / 278528 > 2 > (989.4e12 / 4.8e12) * 1152 / 278528
    assert records["1"]["marginal_cost"]["attention"] == 1.0 and records["8"]["marginal_cost"]["attention"] == 0.0
    assert records["8"]["tp"] == 8 and records["1"]["tp"] == 1
    assert records["8"]["cost_shares"]["attention"] > records["1"]["cost_shares"]["attention"]
    assert records["8"]["marginal_cost"] == speclib.marginal_cost(
        16, 8192, 0.1, "deepseek-v3", "h200", layout=speclib.core.layout.Layout(8))
    _, text, _ = run(capsys, "gamma", *point, "--tp", "8")
    assert "one GPU of 8" in text.splitlines()[0]
    attention_row = next(line.split() for line in text.splitlines() if line.strip().startswith("attention (MLA)"))
    assert attention_row[2] == "0.000"


def test_gamma_query_bytes_and_gamma_max_reach_the_library(capsys):
    code, out, _ = run(capsys, "gamma", *POINT, "--query-bytes", "--gamma-max", "3", "--json")
    record = json.loads(out)
    assert (record["gamma_star"], record["speedup"]) == speclib.optimal_gamma(
        0.75, 64, 4096, 0.1, gamma_max=3, deployment=speclib.Deployment(query_bytes=True)
    )
    assert record["gamma_star"] <= 3 and record["query_bytes"] is True
    assert record["marginal_cost"] == speclib.marginal_cost(64, 4096, 0.1, query_bytes=True)


def test_gamma_with_a_model_config_matches_the_preset(capsys):
    path = str(presets.CONFIG_DIR / "mixtral-8x7b.json")
    _, by_config, _ = run(capsys, "gamma", "--model-config", path, "--hardware", "h100", *POINT, "--json")
    _, by_name, _ = run(capsys, "gamma", "--model", "mixtral", "--hardware", "h100", *POINT, "--json")
    assert json.loads(by_config) == json.loads(by_name)


# --- sweep ------------------------------------------------------------------------------
def read_csv(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    return {key: [row[key] for row in rows] for key in rows[0]}


def test_sweep_csv_reads_back_to_optimal_gamma(capsys):
    code, out, err = run(
        capsys, "sweep", "--batch", "1,8,64,512", "--seq", "1024,4096,32768", "--alpha", "0.6,0.75,0.9",
        "--draft-cost", "0.05,0.2",
    )
    assert code == 0 and err == ""
    table = read_csv(out)
    assert list(table) == list(sweep.SWEEP_COLUMNS + sweep.CAPACITY_COLUMNS + sweep.ATTENTION_COLUMNS
                                 + sweep.PRECISION_COLUMNS)  # appended
    assert set(table["attention"]) == {"served"}  # the default of every entry point
    assert len(table["batch"]) == 4 * 3 * 3 * 2
    B, S, A, C = (np.array(table[k], dtype=float) for k in ("batch", "seq", "alpha", "draft_cost"))
    gamma_star, speedup = speclib.optimal_gamma(A, B, S, C)
    np.testing.assert_array_equal(np.array(table["gamma_star"], dtype=int), gamma_star)
    np.testing.assert_array_equal(np.array(table["speedup"], dtype=float), speedup)  # exact round trip
    # every combination appears once
    assert len(set(zip(B, S, A, C))) == len(B)
    assert set(table["model"]) == {"DeepSeek-V4-Flash"} and set(table["hardware"]) == {"B200"}


def test_sweep_over_models_and_chips(capsys):
    _, out, _ = run(
        capsys, "sweep", "--model", "llama-3-70b,qwen3-235b", "--hardware", "h200,mi355x", "--batch", "1:1000:log5",
        "--seq", "8192", "--alpha", "0.8",
    )
    table = read_csv(out)
    assert len(table["batch"]) == 2 * 2 * 5
    for model, chip in [("Llama-3-70B", "H200"), ("Qwen3-235B-A22B", "MI355X")]:
        rows = [i for i, (m, h) in enumerate(zip(table["model"], table["hardware"])) if (m, h) == (model, chip)]
        B = np.array([table["batch"][i] for i in rows], dtype=float)
        expected, _ = speclib.optimal_gamma(0.8, B, 8192, 0.1, model=model, hardware=chip)
        np.testing.assert_array_equal([int(table["gamma_star"][i]) for i in rows], expected)


def test_sweep_table_is_aligned(capsys):
    code, out, _ = run(capsys, "sweep", "--batch", "1,30000", "--seq", "512", "--alpha", "0.5,0.99", "--format", "table")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == list(sweep.SWEEP_COLUMNS + sweep.CAPACITY_COLUMNS + sweep.ATTENTION_COLUMNS
                                 + sweep.PRECISION_COLUMNS)
    assert len(lines) == 1 + 4
    assert len({len(line) for line in lines}) == 1  # right-aligned last column: equal widths


def test_sweep_writes_to_a_file(capsys, tmp_path):
    target = tmp_path / "out.csv"
    code, out, _ = run(capsys, "sweep", "--batch", "4", "--seq", "100", "--alpha", "0.7", "--output", str(target))
    assert code == 0 and out == ""
    assert target.read_text().splitlines()[0] == ",".join(sweep.SWEEP_COLUMNS + sweep.CAPACITY_COLUMNS
                                                          + sweep.ATTENTION_COLUMNS + sweep.PRECISION_COLUMNS)


@pytest.mark.parametrize(
    "text, counts, expected",
    [
        ("1,8,64", True, [1, 8, 64]),
        ("1:4:4", True, [1, 2, 3, 4]),
        ("0.6:0.9:lin4", False, np.linspace(0.6, 0.9, 4)),
        ("1:30000:log20", True, np.unique(np.round(np.geomspace(1, 30000, 20)))),
        ("1:30000:log20", False, np.geomspace(1, 30000, 20)),
        ("1:2:log50", True, [1, 2]),  # rounded points collapse
        ("0.5, 2:3:2", False, [0.5, 2, 3]),
    ],
)
def test_grid_syntax(text, counts, expected):
    np.testing.assert_allclose(options.parse_grid("--x", text, counts=counts), expected)


# --- presets ------------------------------------------------------------------------------
def test_presets_lists_every_model_and_chip(capsys):
    code, out, err = run(capsys, "presets")
    assert code == 0 and err == ""
    for item in presets.all_models() + presets.all_hardware():
        assert item.name in out
    assert "106,954,752" in out  # V4-Flash W_attn
    assert "281.2" in out and "1125.0" in out  # B200 ridges
    assert "runs at the fp8 peak" in out


def test_presets_json_and_sources(capsys):
    _, out, _ = run(capsys, "presets", "--json")
    record = json.loads(out)
    assert [m["name"] for m in record["models"]] == presets.model_names()
    assert [h["name"] for h in record["hardware"]] == presets.hardware_names()
    b200 = record["hardware"][0]
    assert b200["ridge_bf16"] == 2.25e15 / 8e12
    _, out, _ = run(capsys, "presets", "--hardware-only", "--sources")
    assert "Sources" in out and "datasheet" in out and "DeepSeek" not in out.split("Sources")[0]


def test_presets_with_a_model_config(capsys, tmp_path):
    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps({"hidden_size": 512, "num_attention_heads": 8, "intermediate_size": 2048}))
    _, out, _ = run(capsys, "presets", "--models-only", "--model-config", str(cfg))
    assert "tiny" in out and "dense 2048" in out


# --- bad input ----------------------------------------------------------------------------------
BAD = [
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--ep", "x"], "--ep", "[1, inf)"),
    (["gamma", "--batch", "-1", "--seq", "4096", "--alpha", "0.75"], "--batch", "(0, inf)"),
    (["gamma", "--batch", "x", "--seq", "4096", "--alpha", "0.75"], "--batch", "(0, inf)"),
    (["gamma", "--batch", "1", "--seq", "0", "--alpha", "0.75"], "--seq", "(0, inf)"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "1.5"], "--alpha", "[0, 1]"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "nan"], "--alpha", "[0, 1]"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--draft-cost", "-0.1"], "--draft-cost", "[0, inf)"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--gamma-max", "5000"], "--gamma-max", "[0, 4096]"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--gamma-max", "2.5"], "--gamma-max", "[0, 4096]"),
    (["gamma", "--seq", "10", "--alpha", "0.5"], "--batch", "required"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--model", "gpt-5"], "--model", "DeepSeek-V4-Flash"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--hardware", "tpu"], "--hardware", "MI355X"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--model", "v3,mixtral"], "--model", "one model"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--model-config", "/no/such.json"], "--model-config", "cannot read"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--model", "v3", "--model-config", "x.json"], "--model-config", "not both"),
    (["sweep", "--batch", "1,-8", "--seq", "10", "--alpha", "0.5"], "--batch", "(0, inf)"),
    (["sweep", "--batch", "1", "--seq", "10", "--alpha", "0.5:1.5:3"], "--alpha", "[0, 1]"),
    (["sweep", "--batch", "0:100:log5", "--seq", "10", "--alpha", "0.5"], "--batch", "START > 0"),
    (["sweep", "--batch", "1:100:log0", "--seq", "10", "--alpha", "0.5"], "--batch", "[1, 100000]"),
    (["sweep", "--batch", "1:2:3:4", "--seq", "10", "--alpha", "0.5"], "--batch", "START:STOP:N"),
    (["sweep", "--batch", "1,,2", "--seq", "10", "--alpha", "0.5"], "--batch", "empty item"),
    (["sweep", "--batch", "1:30000:30000", "--seq", "1:1000:1000", "--alpha", "0.5"], "--batch", "at most"),
    (["sweep", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--format", "xml"], "--format", "csv"),
    (["sweep", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--output", "/no/such/dir/x.csv"], "--output", "cannot write"),
    (["presets", "--models-only", "--hardware-only"], "--hardware-only", "not allowed"),
    (["gamma", "--batch", "8", "--seq", "512", "--drafter", "eagle-9"], "--drafter", "Qwen3.6-MTP"),
    (["gamma", "--batch", "8", "--seq", "512", "--drafter", "mtp", "--draft-cost", "0.1"], "--drafter", "not both"),
    (["gamma", "--batch", "8", "--seq", "512"], "--alpha", "required"),
    (["gamma", "--batch", "0", "--seq", "512", "--drafter", "mtp", "--model", "qwen3.6"], "--batch", "(0, inf)"),
    (["gamma", "--batch", "8", "--seq", "512", "--drafter", "mtp", "--roofline", "max"], "--roofline", "aggregate"),
    (["gamma", "--batch", "8", "--seq", "512", "--drafter", "mtp,dflash"], "--drafter", "one drafter"),
    (["sweep", "--batch", "8", "--seq", "512"], "--alpha", "required"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--tp", "0"], "--tp", "[1, 1024]"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--tp", "two"], "--tp", "[1, 1024]"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--reserve", "1"], "--reserve", "[0, 1)"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--step-time", "fitted"], "--step-time", "measured"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--step-time", "calibrated", "--hardware", "mi300x",
      "--engine", "trtllm"], "trtllm", "not measured on MI300X"),
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--engine", "TRT"], "--engine", "vllm, sglang, trtllm"),
    (["schedule", "--alpha", "0.5", "--max-batch", "8", "--engine", "table"], "--engine", "--format table"),
    (["sweep", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--tp", "2000"], "--tp", "[1, 1024]"),
    # an HGX B200 board's NVLink joins 8 GPUs: a tensor-parallel group across boards is refused, not priced
    (["gamma", "--batch", "1", "--seq", "10", "--alpha", "0.5", "--model", "deepseek-r1", "--hardware", "b200",
      "--tp", "16"], "--tp", "at most 8"),
    (["schedule", "--alpha", "0.5", "--max-batch", "8", "--model", "deepseek-r1", "--hardware", "gb200", "--tp", "128"],
     "--tp", "at most 72"),
    ([], "gamma,sweep,presets", "required"),
    (["frobnicate"], "gamma", "invalid choice"),
]


@pytest.mark.parametrize("argv, option, allowed", BAD, ids=[" ".join(b[0]) or "(nothing)" for b in BAD])
def test_bad_input_is_one_line_naming_the_option(capsys, argv, option, allowed):
    code, out, err = run(capsys, *argv)
    assert code == options.EXIT_USAGE
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert option in err and allowed in err
    assert "Traceback" not in err


@pytest.mark.parametrize("option, value", [("--batch", "0"), ("--seq", "-5"), ("--alpha", "2"), ("--draft-cost", "-1"), ("--gamma-max", "-1")])
def test_option_ranges_agree_with_speclibs_own_messages(capsys, option, value):
    # OPTION_RANGES is what the CLI says for a non-number; speclib says the range
    # itself for a number out of range: both must agree.
    argv = {"--batch": "1", "--seq": "10", "--alpha": "0.5", "--draft-cost": "0.1", "--gamma-max": "8"}
    argv[option] = value
    _, _, err = run(capsys, "gamma", *[x for kv in argv.items() for x in kv])
    assert f"{option} must be {options.OPTION_RANGES[option]}" in err


# --- drafters priced by their own roofline -----------------------------------------------------
QWEN_POINT = ["--model", "qwen3.6-35b-a3b", "--hardware", "b200", "--batch", "64", "--seq", "512"]


@pytest.mark.parametrize("drafter", ["qwen3.6-mtp", "qwen3.6-dflash"])
def test_gamma_with_a_drafter_is_the_priced_policy(capsys, drafter):
    code, out, err = run(capsys, "gamma", *QWEN_POINT, "--drafter", drafter, "--roofline", "aggregate", "--json")
    assert code == 0 and err == ""
    record = json.loads(out)
    point = dict(deployment=speclib.Deployment("Qwen3.6-35B-A3B", drafter=drafter, roofline="aggregate"))
    assert (record["gamma_star"], record["speedup"]) == speclib.optimal_gamma(None, 64, 512, **point)
    g = record["gamma_star"]
    assert record["throughput"]["speculative"] == pytest.approx(
        float(speclib.core.speculation.throughput(64, g, 512, **point)), rel=1e-12)
    assert record["throughput"]["plain"] == pytest.approx(
        float(speclib.core.speculation.throughput(64, 0, 512, **point)), rel=1e-12)
    assert record["throughput"]["speculative"] / record["throughput"]["plain"] == pytest.approx(record["speedup"])
    parts = record["step_seconds"]
    # the deployment's default: the linear layers' state kept at every verified position
    assert parts["verify"] == pytest.approx(speclib.core.step.step_time(
        64, g + 1, 512, "Qwen3.6-35B-A3B", roofline="aggregate", rollback=speclib.core.step.DEFAULT_ROLLBACK),
        rel=1e-12)
    assert parts["draft"] == pytest.approx(speclib.core.drafters.draft_time(g, 64, drafter, roofline="aggregate"),
                                           rel=1e-12)
    assert record["acceptance"] == "measured"


def test_gamma_with_a_drafter_prints_the_step_in_microseconds(capsys):
    code, out, _ = run(capsys, "gamma", *QWEN_POINT, "--drafter", "mtp", "--alpha", "0.8")
    assert code == 0
    g, s = speclib.optimal_gamma(0.8, 64, 512, deployment=speclib.Deployment("Qwen3.6-35B-A3B", drafter="mtp"))
    assert f"gamma*      {g} " in out and f"speedup     {s:.4f}x" in out
    draft = speclib.core.drafters.draft_time(g, 64, "mtp")
    assert f"{draft * 1e6:,.1f}" in out and "acceptance 0.8 (i.i.d.)" in out


def test_sweep_with_drafters_adds_their_columns(capsys):
    code, out, _ = run(capsys, "sweep", "--model", "qwen3.6-35b-a3b", "--drafter", "mtp,dflash", "--batch", "1,64,1024",
                       "--seq", "512", "--roofline", "aggregate")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0])[:len(sweep.SWEEP_COLUMNS) + 2] == [*sweep.SWEEP_COLUMNS, "drafter", "roofline"]
    assert len(rows) == 6 and {r["alpha"] for r in rows} == {"measured"} and {r["draft_cost"] for r in rows} == {""}
    for r in rows:
        deployment = speclib.Deployment("Qwen3.6-35B-A3B", drafter=r["drafter"], roofline="aggregate")
        expected = speclib.optimal_gamma(None, float(r["batch"]), 512, deployment=deployment)
        assert (int(r["gamma_star"]), float(r["speedup"])) == expected


def test_sweep_without_drafters_keeps_its_columns(capsys):
    code, out, _ = run(capsys, "sweep", "--batch", "8", "--seq", "512", "--alpha", "0.7")
    assert code == 0 and out.splitlines()[0].startswith(",".join(sweep.SWEEP_COLUMNS) + ",fits")


# --- help ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, example", [
    ([], "speclib gamma --model"),
    (["gamma"], "speclib gamma --model deepseek-v4-flash --hardware b200"),
    (["sweep"], "1:30000:log20"),
    (["presets"], "speclib presets --json"),
])
def test_help_shows_examples(capsys, argv, example):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and example in out


# --- the module entry point -------------------------------------------------------------------------
def module_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MPLBACKEND", None)
    return env


def test_python_dash_m_speclib_runs_gamma():
    result = subprocess.run(
        [sys.executable, "-m", "speclib", "gamma", *POINT, "--json"],
        capture_output=True, text=True, cwd=REPO, env=module_env(), timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["gamma_star"] == speclib.optimal_gamma(0.75, 64, 4096, 0.1)[0]


def test_python_dash_m_speclib_bad_input_exits_2_without_traceback():
    result = subprocess.run(
        [sys.executable, "-m", "speclib", "gamma", "--batch", "0", "--seq", "1", "--alpha", "0.5"],
        capture_output=True, text=True, cwd=REPO, env=module_env(), timeout=300,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--batch" in result.stderr and "Traceback" not in result.stderr


# --- memory, calibrated step time --------------------------------------------------------------
def test_gamma_at_a_batch_that_cannot_fit_says_so_in_one_line_and_still_answers(capsys):
    code, out, err = run(capsys, "gamma", "--batch", "30000", "--seq", "4096", "--alpha", "0.75")
    assert code == 0 and err == ""
    memory = [line for line in out.splitlines() if "memory:" in line]
    assert len(memory) == 1
    assert "do not fit on one B200" in memory[0] and "holds the whole MLA latent" in memory[0]
    assert "gamma*" in out  # the per-layer answer stands
    # split by sequence over eight GPUs, the compressed caches as served hold them
    code, out, _ = run(capsys, "gamma", "--batch", "30000", "--seq", "4096", "--alpha", "0.75", "--tp", "8",
                       "--ep", "8", "--dp-attention", "--attention", "served")
    assert code == 0 and "memory:" not in out


def test_gamma_json_reports_the_memory_check(capsys):
    _, out, _ = run(capsys, "gamma", "--batch", "64", "--seq", "4096", "--alpha", "0.75", "--json")
    record = json.loads(out)
    memory = record["memory"]
    held = speclib.Deployment(c_draft=0.1).max_batch(4096, record["gamma_star"])
    assert memory["fits"] and memory["max_batch"] == held


def test_gamma_calibrated_step_time_matches_the_library(capsys):
    _, out, _ = run(capsys, "gamma", "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8", "--batch", "16",
                    "--seq", "8192", "--alpha", "0.8", "--step-time", "calibrated", "--json")
    record = json.loads(out)
    g, s = speclib.optimal_gamma(0.8, 16, 8192, 0.1,
                                 deployment=speclib.Deployment("deepseek-v3", "h200", step_time="calibrated", tp=8))
    assert (record["gamma_star"], record["speedup"]) == (g, s)
    assert record["step_time"] == "calibrated" and record["tp"] == 8


def test_sweep_fits_column_and_calibrated_step_time(capsys):
    _, out, _ = run(capsys, "sweep", "--batch", "1,64,1000", "--seq", "1024,32768", "--alpha", "0.75",
                    "--step-time", "calibrated", "--tp", "2")
    table = read_csv(out)
    assert list(table)[-8:] == ["step_time", "tp", "fits", "max_batch", "attention", "weights", "kv_cache", "running"]
    assert list(table)[:8] == list(sweep.SWEEP_COLUMNS)
    B, S = np.array(table["batch"], dtype=float), np.array(table["seq"], dtype=float)
    deployment = speclib.Deployment(step_time="calibrated", tp=2)
    g, _ = speclib.optimal_gamma(0.75, B, S, 0.1, deployment=deployment)
    np.testing.assert_array_equal(np.array(table["gamma_star"], dtype=int), g)
    limit = [deployment.max_batch(s, k) for s, k in zip(S, g)]  # what it holds while drafting gamma*
    assert table["max_batch"] == [str(x) for x in limit]
    assert table["fits"] == [str(b <= m).lower() for b, m in zip(B, limit)]
    # the calibrated step reads a batch as a concurrency: gamma* runs what memory holds, the rest queued
    assert table["running"] == [str(int(min(b, m))) for b, m in zip(B, limit)]
    assert "false" in table["fits"]  # the grid goes past what memory holds


def test_a_missing_extra_is_one_line_and_status_2(monkeypatch, capsys):
    from speclib import _extras

    def needs_the_book(args, out):
        _extras.require("this part", ("a_module_that_is_not_installed",))

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    for action in parser._subparsers._group_actions:
        action.choices["presets"].set_defaults(handler=needs_the_book)
    assert cli.main(["presets"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'speclib[book]'" in err[0] and "a_module_that_is_not_installed" in err[0]


def test_version_works_and_is_the_packages(capsys):
    import speclib

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"speclib {speclib.__version__}"


@pytest.mark.parametrize("command", ["gamma", "sweep"])
def test_a_chip_of_a_vendor_without_fitted_constants_is_one_line(capsys, tmp_path, command):
    chip = {"name": "X1", "vendor": "Intel", "memory_bandwidth_TBps": 3.35, "hbm_capacity_GB": 80,
            "bf16_TFLOPS": 989, "fp8_TFLOPS": 1979, "fp4_TFLOPS": None}
    path = tmp_path / "x1.json"
    path.write_text(json.dumps(chip))
    code, out, err = run(capsys, command, "--batch", "1", "--seq", "10", "--alpha", "0.5", "--step-time", "calibrated",
                         "--hardware-config", str(path))
    assert code == options.EXIT_USAGE and out == "" and err.count("\n") == 1
    assert "X1" in err and "vendor 'Intel' has no fitted constants" in err


# --- the step priced from measured kernel tables ------------------------------------------------------


def test_gamma_prices_from_the_measured_tables_and_says_which_parts(capsys):
    point = ["--model", "deepseek-r1", "--tp", "8", "--batch", "32", "--seq", "4096", "--alpha", "0.7",
             "--step-time", "measured", "--engine", "SGLang", "--drafter", "mtp"]
    code, out, _ = run(capsys, "gamma", "--hardware", "h200", *point)
    assert code == 0
    assert "measured kernel tables (SGLang 0.5.14 on H200, aiconfigurator-core 0.12.0)" in out.splitlines()[0]
    # the same deployment priced through the library: the CLI only prints it
    deployment = speclib.Deployment("deepseek-r1", "h200", tp=8, drafter="mtp", engine="SGLang",
                                    step_time="measured")
    gamma_star = speclib.optimal_gamma(0.7, 32, 4096, deployment=deployment)[0]
    assert f"gamma*      {gamma_star}   " in out
    # no table for an AMD chip: every part by the roofline, and the header says so
    code, out, _ = run(capsys, "gamma", "--hardware", "mi300x", *point)
    assert code == 0 and "measured kernel tables" not in out.splitlines()[0]
    assert "by the roofline (no measured tables for MI300X with SGLang)" in out.splitlines()[0]


@pytest.mark.parametrize("argv", [
    ["gamma", "--model", "llama-3.1-8b", "--hardware", "h100", "--batch", "8", "--seq", "4096", "--alpha", "0.7",
     "--step-time", "calibrated"],
    ["schedule", "--model", "llama-3.1-8b", "--hardware", "h100", "--max-batch", "32", "--alpha", "0.7",
     "--step-time", "calibrated"],
    ["frontier", "--model", "llama-3.1-8b", "--hardware", "h100", "--alpha", "0.7", "--step-time", "calibrated",
     "--concurrency", "1,8"],
])
def test_a_calibrated_interval_is_named_for_what_it_is(capsys, argv):
    code, out, _ = run(capsys, *argv)
    assert code == 0
    text = " ".join(out.split())  # the schedule wraps its header
    assert "80 % cross-conformal by model family" in text
    assert "coverage held out per family: DeepSeek" in text and "acceptance ±0.05 per position" in text
    assert "bootstrap" not in text


def test_an_acceptance_at_the_edge_is_said_once_on_stderr_by_gamma_and_sweep(capsys):
    """The issue's edge: alpha >= 0.99. gamma at alpha 1 reaches the search cap and says it is no optimum; a sweep
    says it once for each edge acceptance of its grid, with the longest draft that acceptance gave, and nothing
    for one inside."""
    base = ("--model", "deepseek-v4-flash", "--hardware", "b200", "--seq", "4096")
    code, _, err = run(capsys, "gamma", *base, "--batch", "8", "--alpha", "1.0", "--gamma-max", "8")
    edge = [line for line in err.splitlines() if "at the edge" in line]
    assert code == 0 and len(edge) == 1 and "gamma* = 8 is the search cap (--gamma-max 8)" in edge[0]
    code, out, err = run(capsys, "sweep", *base, "--batch", "1,64", "--alpha", "0.5,0.995", "--format", "csv")
    edge = [line for line in err.splitlines() if "at the edge" in line]
    rows = list(csv.DictReader(io.StringIO(out)))
    longest = max(int(r["gamma_star"]) for r in rows if r["alpha"] == "0.995")
    assert code == 0 and len(edge) == 1 and "acceptance 0.995 is at the edge" in edge[0]
    assert f"gamma* = {longest} " in edge[0] and not any("acceptance 0.5 " in line for line in err.splitlines())


# --- --interconnect: the network joining the --tp GPUs -----------------------------------
def test_interconnect_lets_tp_span_an_nvl72_rack_and_prices_the_collectives_over_it(capsys):
    """B200's own NVLink5 joins 8 GPUs, so --tp 16 is refused; named as the NVL72 rack's, it is priced, the
    header says over which network, and the price is the library's Deployment over that network (the
    command reads no other)."""
    argv = ["gamma", "--model", "deepseek-r1", "--hardware", "b200", "--tp", "16", *POINT]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "--tp must be at most 8" in err
    code, out, err = run(capsys, *argv, "--interconnect", "nvl72")
    assert code == 0 and "one GPU of 16 over NVLink5-NVL72" in out.splitlines()[0]
    code, out, _ = run(capsys, *argv, "--interconnect", "nvl72", "--json")
    record = json.loads(out)
    assert (record["gamma_star"], record["speedup"]) == speclib.optimal_gamma(
        0.75, 64, 4096, 0.1, deployment=speclib.Deployment("deepseek-r1", "b200", tp=16, interconnect="NVLink5-NVL72"))
    # the same 16 GPUs as GB200, whose own domain is the NVL72 rack, take the flag as given by default
    code, out, err = run(capsys, "gamma", "--model", "deepseek-r1", "--hardware", "gb200", "--tp", "16", *POINT)
    assert code == 0, err
