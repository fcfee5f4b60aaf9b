"""A deployment's own path: acceptance from the engine's metrics or log
(``speclib acceptance``), a chip from a file (``--hardware-config``), a model
from its config.json in ``speclib fit``, and the whole path on the shipped
samples. Expected numbers are the samples' hand counts (see the samples'
README), a polynomial's root, a bisection, the presets, or the library's own
answer reached by another route."""
from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import yaml

import speclib
from speclib import presets
from speclib.core import calibrated as cal
from speclib.core import step as st
from speclib.core.deployment import Deployment
from speclib.evidence import engine_metrics as em
from speclib.calibration import own_fit
from speclib.evidence import spec_runs
from speclib.tools import cli

SAMPLES = Path(str(resources.files("speclib").joinpath("data", "samples")))
QWEN_CONFIG = presets.shipped_configs()["qwen3-30b-a3b"]
H20 = SAMPLES / "h20.yaml"
BENCH = sorted(SAMPLES.glob("base-c*.json")) + sorted(SAMPLES.glob("spec-k4-c*.json"))

#: The samples' hand counts (their README).
RUN_COUNTS = ([16000, 12400, 9400, 7000], 20000)
SCRAPE_COUNTS = ([19900, 15350, 11600, 8600], 25000)
LOG_LINES = [(10000, [0.810, 0.640, 0.480, 0.360]), (20000, [0.795, 0.615, 0.465, 0.345]),
             (15000, [0.800, 0.620, 0.470, 0.350])]
SGLANG_LINES = [(32, 2.80), (64, 2.60), (32, 3.00)]
STEP = dict(a=4e-3, d=3e-5, e=6e-5, a_d=8e-4)


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- acceptance from vLLM's Prometheus metrics ---------------------------------------------
def test_two_scrapes_give_the_runs_own_survival_curve():
    got = em.read_engine_metrics(SAMPLES / "vllm-metrics-after.prom", SAMPLES / "vllm-metrics-before.prom")
    counts, drafts = RUN_COUNTS
    assert got.survival.values == pytest.approx([c / drafts for c in counts], abs=1e-12)
    assert got.survival.values == pytest.approx([0.80, 0.62, 0.47, 0.35], abs=1e-12)
    assert got.accept_length == pytest.approx(1 + sum(counts) / drafts)
    assert got.measured and got.gamma == 4 and got.model == "Qwen/Qwen3-30B-A3B"
    # the i.i.d. alpha with the same mean length: a root of 1 + a + ... + a^4 = N
    roots = np.roots([1, 1, 1, 1, 1 - got.accept_length])
    alpha = [r.real for r in roots if abs(r.imag) < 1e-12 and 0 < r.real < 1]
    assert got.alpha == pytest.approx(alpha[0], abs=1e-9)


def test_one_scrape_counts_since_the_server_started():
    got = em.read_engine_metrics(SAMPLES / "vllm-metrics-after.prom")
    counts, drafts = SCRAPE_COUNTS
    assert got.survival.values == pytest.approx([c / drafts for c in counts], abs=1e-12)


def _scrape(path, per_engine, model="m"):
    """A scrape written by prometheus_client itself, with vLLM's counter names and labels."""
    from prometheus_client import CollectorRegistry, Counter, generate_latest

    registry = CollectorRegistry()
    labels = ["model_name", "engine"]
    drafts = Counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", labels, registry=registry)
    tokens = Counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", labels, registry=registry)
    accepted = Counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", labels, registry=registry)
    per_pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
                      labels + ["position"], registry=registry)
    for engine, (n, counts) in per_engine.items():
        drafts.labels(model, engine).inc(n)
        tokens.labels(model, engine).inc(n * len(counts))
        accepted.labels(model, engine).inc(sum(counts))
        for j, c in enumerate(counts):
            per_pos.labels(model, engine, str(j)).inc(c)
    path.write_bytes(generate_latest(registry))
    return path


def test_engines_of_one_server_are_summed_and_labels_escape(tmp_path):
    rng = np.random.default_rng(7)
    per_engine = {}
    for engine in ("0", "1"):
        n = int(rng.integers(100, 10_000))
        counts = sorted((int(x) for x in rng.integers(0, n, size=5)), reverse=True)
        per_engine[engine] = (n, counts)
    path = _scrape(tmp_path / "m.prom", per_engine, model='my "model", v2')
    got = em.read_engine_metrics(path)
    total = sum(n for n, _ in per_engine.values())
    expected = [sum(c[j] for _, c in per_engine.values()) / total for j in range(5)]
    assert got.survival.values == pytest.approx(expected, abs=1e-12)
    assert got.model == 'my "model", v2'


def test_the_interval_is_wilsons(tmp_path):
    got = em.read_engine_metrics(SAMPLES / "vllm-metrics-after.prom", SAMPLES / "vllm-metrics-before.prom")
    lower, upper = got.interval()
    counts, n = RUN_COUNTS
    z = 1.959963984540054
    for c, lo, hi in zip(counts, lower.values, upper.values):
        # the two p with |c/n - p| = z sqrt(p (1 - p) / n), found by bisection
        def gap(p):
            return abs(c / n - p) - z * np.sqrt(p * (1 - p) / n)

        for a, b, got_end in ((0.0, c / n, lo), (c / n, 1.0, hi)):
            for _ in range(100):
                m = (a + b) / 2
                a, b = (m, b) if (gap(m) > 0) == (gap(a) > 0) else (a, m)
            assert got_end == pytest.approx((a + b) / 2, abs=1e-9)
    assert em.read_engine_metrics(SAMPLES / "sglang-decode.log", gamma=3).interval() is None


# --- acceptance from the logs ---------------------------------------------------------------
def test_vllm_log_lines_are_weighted_by_their_drafts():
    got = em.read_engine_metrics(SAMPLES / "vllm-spec-decode.log")
    total = sum(n for n, _ in LOG_LINES)
    expected = [sum(n * r[j] for n, r in LOG_LINES) / total for j in range(4)]
    assert got.survival.values == pytest.approx(expected, abs=1e-12)
    assert got.survival.values[0] == pytest.approx(36000 / 45000)
    accepted = sum(round(n * sum(r)) for n, r in LOG_LINES)
    assert got.accept_length == pytest.approx(1 + accepted / total)
    assert got.lines == 3 and got.measured


def test_sglang_accept_length_gives_the_implied_iid_curve_labelled_as_such():
    got = em.read_engine_metrics(SAMPLES / "sglang-decode.log", gamma=3)
    length = sum(r * x for r, x in SGLANG_LINES) / sum(r for r, _ in SGLANG_LINES)
    assert length == pytest.approx(2.75) and got.accept_length == pytest.approx(length)
    roots = np.roots([1, 1, 1, 1 - length])  # 1 + a + a^2 + a^3 = N
    alpha = next(r.real for r in roots if abs(r.imag) < 1e-12 and 0 < r.real < 1)
    assert got.alpha == pytest.approx(alpha, abs=1e-9)
    assert got.survival.values == pytest.approx([alpha, alpha ** 2, alpha ** 3], abs=1e-9)
    assert not got.measured and "implied" in got.survival.name
    assert "implied" in got.to_json()["about"]


# --- bad input ----------------------------------------------------------------------------------
def _bad_scrapes(tmp_path):
    cases = {}
    (tmp_path / "empty.prom").write_text("")
    cases["empty"] = ((tmp_path / "empty.prom",), "empty file")
    (tmp_path / "plain.prom").write_text("# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n"
                                         'vllm:num_requests_running{engine="0",model_name="m"} 3.0\n')
    cases["no speculative counters"] = ((tmp_path / "plain.prom",), "no speculative-decoding counters")
    before = _scrape(tmp_path / "b.prom", {"0": (1000, [800, 600])})
    after = _scrape(tmp_path / "a.prom", {"0": (500, [400, 300])})
    cases["decrease"] = ((after, before), "decreased between the scrapes")
    cases["position beyond the drafts"] = ((_scrape(tmp_path / "p.prom", {"0": (100, [120, 90])}),),
                                           "more than the 100 drafts")
    cases["rising"] = ((_scrape(tmp_path / "r.prom", {"0": (100, [50, 60])}),), "exceeds")
    gap = (tmp_path / "gap.prom")
    gap.write_text(_scrape(tmp_path / "g.prom", {"0": (100, [80, 60, 40])}).read_text()
                   .replace('position="1"', 'position="7"'))
    cases["missing position"] = ((gap,), 'no position="1"')
    cases["no drafts"] = ((_scrape(tmp_path / "z.prom", {"0": (0, [0, 0])}),), "counts no drafts")
    (tmp_path / "v.log").write_text("INFO 06-12 14:03:31 [metrics.py:96] SpecDecoding metrics: Mean acceptance "
                                    "length: 2.00, garbled\n")
    cases["bad vllm line"] = ((tmp_path / "v.log",), "line 1")
    return cases


@pytest.mark.parametrize("case", ["empty", "no speculative counters", "decrease", "position beyond the drafts",
                                  "rising", "missing position", "no drafts", "bad vllm line"])
def test_bad_engine_files_are_one_line_exit_2_and_nothing_written(capsys, tmp_path, case):
    files, message = _bad_scrapes(tmp_path)[case]
    with pytest.raises(ValueError, match=message):
        em.read_engine_metrics(files[0], files[1] if len(files) > 1 else None)
    out = tmp_path / "curve.json"
    argv = ["acceptance", files[0], "--output", out] + (["--before", files[1]] if len(files) > 1 else [])
    code, stdout, err = run(capsys, *argv)
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("speclib acceptance: error: ") and message in err
    assert not out.exists()


def test_sglang_log_without_the_draft_length_is_refused(capsys):
    code, _, err = run(capsys, "acceptance", SAMPLES / "sglang-decode.log")
    assert code == 2 and "gamma" in err and "speculative_num_steps" in err


# --- the acceptance command and --acceptance ---------------------------------------------------
def test_acceptance_prints_the_rates_and_writes_a_curve_the_other_commands_read(capsys, tmp_path):
    out = tmp_path / "curve.json"
    code, text, err = run(capsys, "acceptance", SAMPLES / "vllm-metrics-after.prom", "--before",
                          SAMPLES / "vllm-metrics-before.prom", "--output", out)
    assert code == 0 and err == ""
    for value in ("0.8000", "0.6200", "0.4700", "0.3500", "3.2400"):
        assert value in text
    written = json.loads(out.read_text())
    assert written["survival"] == pytest.approx([0.80, 0.62, 0.47, 0.35])
    curve = speclib.SurvivalCurve([0.80, 0.62, 0.47, 0.35])
    # gamma --acceptance against a brute force over draft lengths with the curve
    code, text, _ = run(capsys, "gamma", "--model", "llama-3-70b", "--hardware", "h100", "--batch", 16, "--seq", 2048,
                        "--acceptance", out, "--json")
    record = json.loads(text)
    speedups = [speclib.speedup(curve, g, 16, 2048, 0.1, model="llama-3-70b", hardware="h100") for g in range(5)]
    best = max(range(5), key=lambda g: (speedups[g], -g))
    assert record["gamma_star"] == best and record["speedup"] == pytest.approx(speedups[best], rel=1e-12)
    assert record["acceptance"] == pytest.approx(list(curve.values)) and record["gamma_max"] == 4
    # the engine's own file works as --acceptance too, and gives the same curve
    code, same, _ = run(capsys, "gamma", "--model", "llama-3-70b", "--hardware", "h100", "--batch", 16, "--seq", 2048,
                        "--acceptance", SAMPLES / "vllm-spec-decode.log", "--json")
    assert json.loads(same)["acceptance"] == pytest.approx(
        list(em.read_engine_metrics(SAMPLES / "vllm-spec-decode.log").survival.values))
    # schedule --acceptance with the interval's ends (FILE#KEY)
    for key in ("survival", "survival_lower", "survival_upper"):
        code, text, err = run(capsys, "schedule", "--model", "llama-3-70b", "--acceptance", f"{out}#{key}",
                              "--max-batch", 64, "--engine", "vllm", "--method", "eagle3", "--draft-model",
                              "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B")
        assert code == 0, err
    # profile --acceptance: no draft longer than the curve is profiled
    code, text, _ = run(capsys, "profile", "--model", "llama-3-70b", "--acceptance", out, "--batch", "1,8")
    assert {int(row.split(",")[1]) for row in text.splitlines()[1:]} == {0, 1, 2, 3, 4}


def test_alpha_and_acceptance_together_are_refused(capsys, tmp_path):
    code, _, err = run(capsys, "gamma", "--batch", 8, "--seq", 1024, "--alpha", 0.7, "--acceptance",
                       SAMPLES / "vllm-spec-decode.log")
    assert code == 2 and err.count("\n") == 1 and "--acceptance" in err


# --- --hardware-config ---------------------------------------------------------------------------
def test_the_sample_chip_reads_to_its_numbers():
    h20 = presets.from_hardware_config(H20)
    assert (h20.name, h20.vendor, h20.interconnect) == ("H20", "NVIDIA", "NVLink4")
    assert h20.memory_bandwidth == 4.0e12 and h20.hbm_capacity == 96e9
    assert h20.peak_flops("bf16") == 148e12 and h20.peak_flops("fp8") == 296e12
    assert h20.peak_flops("fp4") == 296e12 and not h20.native("fp4")  # runs at the fp8 peak


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_presets_own_record_as_a_file_is_that_preset(tmp_path, suffix):
    record = next(r for r in json.loads((Path(presets.__file__).parent / "hardware.json").read_text())["hardware"]
                  if r["name"] == "MI355X")
    path = tmp_path / f"chip{suffix}"
    path.write_text(json.dumps(record) if suffix == ".json" else yaml.safe_dump(record))
    assert presets.from_hardware_config(path) == presets.hardware("MI355X")


def test_the_roofline_path_with_a_hardware_config_is_the_presets(capsys, tmp_path):
    record = next(r for r in json.loads((Path(presets.__file__).parent / "hardware.json").read_text())["hardware"]
                  if r["name"] == "H200")
    record["name"] = "my-h200"
    path = tmp_path / "my-h200.yaml"
    path.write_text(yaml.safe_dump(record))
    point = ["--model", "deepseek-v3", "--batch", 32, "--seq", 4096, "--alpha", 0.8, "--json"]
    _, mine, _ = run(capsys, "gamma", "--hardware-config", path, *point)
    _, preset, _ = run(capsys, "gamma", "--hardware", "h200", *point)
    mine, preset = json.loads(mine), json.loads(preset)
    assert mine.pop("hardware") == "my-h200" and preset.pop("hardware") == "H200"
    assert mine == preset
    sched = ["--model", "deepseek-v3", "--alpha", 0.8, "--max-batch", 64, "--engine", "vllm", "--tp", 8]
    assert run(capsys, "schedule", "--hardware-config", path, *sched)[1] == run(capsys, "schedule", "--hardware",
                                                                                 "h200", *sched)[1]
    code, csv_text, err = run(capsys, "sweep", "--hardware-config", path, "--model", "deepseek-v3", "--batch", "1,64",
                              "--seq", 4096, "--alpha", 0.8)
    assert code == 0 and "my-h200" in csv_text, err
    code, listing, _ = run(capsys, "presets", "--hardware-only", "--hardware-config", H20)
    assert code == 0 and "\nH20 " in listing


@pytest.mark.parametrize("change, field", [
    ({"memory_bandwidth_TBps": None}, "memory_bandwidth_TBps"),
    ({"hbm_capacity_GB": 0}, "hbm_capacity_GB"),
    ({"bf16_TFLOPS": -5}, "bf16_TFLOPS"),
    ({"fp8_TFLOPS": "fast"}, "fp8_TFLOPS"),
    ({"vendor": ""}, "vendor"),
    ({"interconnect": "carrier-pigeon"}, "interconnect"),
    ({"bandwidth": 4}, "bandwidth"),
])
def test_a_bad_hardware_config_names_the_field(capsys, tmp_path, change, field):
    data = yaml.safe_load(H20.read_text())
    data.update(change)
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=field):
        presets.from_hardware_config(path)
    code, out, err = run(capsys, "gamma", "--hardware-config", path, "--batch", 8, "--seq", 1024, "--alpha", 0.7)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and field in err, err


@pytest.mark.parametrize("field", ["vendor", "memory_bandwidth_TBps", "hbm_capacity_GB", "bf16_TFLOPS", "fp8_TFLOPS",
                                   "fp4_TFLOPS"])
def test_a_missing_hardware_field_is_named(tmp_path, field):
    data = yaml.safe_load(H20.read_text())
    del data[field]
    path = tmp_path / "chip.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=f"missing field {field}"):
        presets.from_hardware_config(path)


# --- speclib fit --model-config and the samples ---------------------------------------------------
def _bench_sample(model, chip, B, gamma, accept=3.24, length=1024):
    """TPOT of one sample run: the calibrated step written out by hand (the fit is not used): the roofline at
    the chip's datasheet speed (a chip the calibration has not seen), attention's factor and the time per MoE
    layer of the shipped calibration for its vendor, the prefill of arriving requests at its roofline and the
    shipped efficiency, and the sample's own a, d, e and a_d."""
    shipped = cal.shipped_calibration()
    S = length + (length - 1) / 2
    sm = st.step_model(model, chip)
    nu, moe = shipped.attention_factor(chip), shipped.moe_layer(chip) * model.step_architecture().moe_layers
    prefill = float(Deployment(model, chip).parallel_step().prefill_share(np.float64(B), length, length))
    prefill *= shipped.prefill_factor

    def kernels(T):
        B_, T_, S_ = np.float64(B), np.float64(T), np.float64(S)
        return float(sm.time(B_, T_, S_) + nu * sm.component_times(B_, T_, S_)["attention"]) + moe

    plain = kernels(1)
    if not gamma:
        return (plain + STEP["a"] + STEP["d"] * B + prefill) * 1e3
    verify = kernels(gamma + 1)
    draft = spec_runs.DEFAULT_DRAFT_SHARE * gamma * (plain + STEP["a"] + STEP["d"] * B)
    t = verify + STEP["a"] + STEP["d"] * B + STEP["e"] * B * gamma + draft + STEP["a_d"] * gamma
    return (t / accept + prefill) * 1e3


def test_the_bench_samples_are_the_written_out_step():
    model, chip = presets.from_hf_config(QWEN_CONFIG), presets.from_hardware_config(H20)
    for path in BENCH:
        rec = json.loads(path.read_text())
        gamma = 4 if path.name.startswith("spec") else 0
        assert rec["mean_tpot_ms"] == pytest.approx(_bench_sample(model, chip, rec["max_concurrency"], gamma),
                                                    abs=1e-4), path.name


def test_fit_reads_a_model_config_and_a_hardware_config_and_recovers_the_step(capsys, tmp_path):
    out = tmp_path / "mine.json"
    code, text, err = run(capsys, "fit", *BENCH, "--model-config", QWEN_CONFIG, "--hardware-config", H20,
                          "--output", out)
    assert code == 0, err
    got = own_fit.read_calibration(out)
    assert got.fixed_s["H20"]["vLLM"] == pytest.approx(STEP["a"], rel=1e-3)
    assert got.per_sequence_s == pytest.approx(STEP["d"], rel=1e-3)
    assert got.per_position_s == pytest.approx(STEP["e"], rel=1e-3)
    assert got.per_draft_pass_s == pytest.approx(STEP["a_d"], rel=1e-3)
    assert got.roofline_factor == {"H20": 1.0}
    # the same model by preset name gives the same fit
    copy = tmp_path / "preset.yaml"
    shutil.copy(H20, copy)
    code, _, err = run(capsys, "fit", *BENCH, "--model", "qwen3-30b-a3b", "--hardware-config", copy,
                       "--output", tmp_path / "preset.json")
    by_name = own_fit.read_calibration(tmp_path / "preset.json")
    assert (by_name.fixed_s, by_name.per_sequence_s, by_name.per_position_s) == (got.fixed_s, got.per_sequence_s,
                                                                                 got.per_position_s)


@pytest.mark.parametrize("argv, option", [
    (["--hardware-config", "H20"], "--model"),
    (["--model", "qwen3-30b-a3b"], "--hardware"),
    (["--model", "qwen3-30b-a3b", "--model-config", "CFG", "--hardware-config", "H20"], "--model-config"),
])
def test_fit_needs_one_model_and_one_chip(capsys, tmp_path, argv, option):
    argv = [str({"H20": H20, "CFG": QWEN_CONFIG}.get(a, a)) for a in argv]
    code, _, err = run(capsys, "fit", *BENCH, *argv, "--output", tmp_path / "o.json")
    assert code == 2 and option in err and not (tmp_path / "o.json").exists()


def test_the_whole_path_on_the_samples(capsys, tmp_path):
    curve, fitted = tmp_path / "curve.json", tmp_path / "h20.json"
    assert run(capsys, "acceptance", SAMPLES / "vllm-metrics-after.prom", "--before",
               SAMPLES / "vllm-metrics-before.prom", "--output", curve)[0] == 0
    assert run(capsys, "fit", *BENCH, "--model-config", QWEN_CONFIG, "--hardware-config", H20,
               "--output", fitted)[0] == 0
    deployment = ["--model-config", QWEN_CONFIG, "--hardware-config", H20, "--seq", 2048, "--max-batch", 64,
                  "--acceptance", curve, "--draft-cost", spec_runs.DEFAULT_DRAFT_SHARE]
    code, text, err = run(capsys, "schedule", *deployment, "--calibration", fitted, "--engine", "vllm",
                          "--method", "eagle3", "--draft-model", "./qwen3-30b-a3b-eagle3")
    assert code == 0, err
    config = json.loads(text[text.index("{"):])
    # the same schedule through the library, from the pieces read by their own functions
    sched = speclib.schedule(seq=2048, alpha=speclib.SurvivalCurve([0.80, 0.62, 0.47, 0.35]), max_batch=64,
                             deployment=speclib.Deployment(presets.from_hf_config(QWEN_CONFIG),
                                                           presets.from_hardware_config(H20),
                                                           step_time=own_fit.read_calibration(fitted),
                                                           c_draft=spec_runs.DEFAULT_DRAFT_SHARE))
    per_batch = {b: k for lo, hi, k in config["speculative_config"]["num_speculative_tokens_per_batch_size"]
                 for b in range(lo, hi + 1)}
    assert [per_batch[b] for b in range(1, sched.max_batch + 1)] == [int(g) for g in sched.gamma_star]
    assert max(per_batch.values()) <= 4  # the curve has 4 positions


def test_run_line_splits_and_expands_as_a_shell_does(tmp_path, monkeypatch):
    monkeypatch.chdir(SAMPLES)
    status, text = cli.run_line("speclib acceptance 'vllm-metrics-after.prom' --before vllm-metrics-b*.prom")
    assert status == 0 and "the counts between two scrapes (vllm-metrics-before.prom -> vllm-metrics-after.prom)" in text
    status, text = cli.run_line("speclib acceptance sglang-decode.log")
    assert status == 2 and text.startswith("speclib acceptance: error:")
    with pytest.raises(ValueError, match="speclib command"):
        cli.run_line("rm -rf /")
