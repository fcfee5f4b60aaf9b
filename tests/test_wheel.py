"""speclib as people install it: the sdist and the wheel built from this
checkout, the wheel installed alone into a fresh virtual environment (no
extras), and the command and the package used there. The lean install must
run the model and the ``speclib`` command without sympy, matplotlib or
ipywidgets, carry its data, and say in one line which extra a missing part
needs.

Built without build isolation (with the pinned ``build``, ``setuptools`` and
``wheel`` of requirements.txt) and installed with pip's cache, so the only
network it may use is the package registry, for numpy, PyYAML and prometheus_client.
"""
from __future__ import annotations

import email.parser
import json
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import speclib

REPO = Path(__file__).resolve().parents[1]
EXTRA_MODULES = ("matplotlib", "ipywidgets", "sympy")
#: The package data a lean install needs: presets, the fitted calibration, the measured data, the live renderer.
PACKAGE_DATA = (
    "speclib/presets/hardware.json", "speclib/presets/models.json", "speclib/presets/drafters.json",
    "speclib/presets/interconnects.json", "speclib/data/calibration/step_time.json",
    "speclib/data/acceptance/survival.json", "speclib/data/peer/aiconfigurator.json", "speclib/data/peer/aisimulate.json",
    "speclib/data/engine-speculation/measurements.json",
    "speclib/presentation/web/static/speclib_live.js",
    "speclib/data/samples/vllm-metrics-before.prom", "speclib/data/samples/vllm-metrics-after.prom",
    "speclib/data/samples/vllm-spec-decode.log", "speclib/data/samples/sglang-decode.log",
    "speclib/data/samples/h20.yaml", "speclib/data/samples/README.md", "speclib/data/silicon/NOTICE",
)
PACKAGE_DATA_GLOBS = ("speclib/presets/models/", "speclib/data/decode-benchmarks/", "speclib/data/serving-simulation/", "speclib/data/expert-routing/",
                     "speclib/data/silicon/")


def run(*args, cwd=None, check=True):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, check=check, timeout=600)


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    done = run(sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", out, REPO,
               check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return wheels[0], sdists[0]


@pytest.fixture(scope="module")
def lean(dists, tmp_path_factory):
    """A fresh virtual environment with the wheel alone installed (no extras)."""
    env = tmp_path_factory.mktemp("lean") / "venv"
    # No pip of its own (ensurepip takes seconds): this pip installs into it.
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    done = run(sys.executable, "-m", "pip", "--python", python, "install", "--disable-pip-version-check", "-q",
               dists[0], check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return env


def missing_package_data(names) -> list:
    names = set(names)
    missing = [p for p in PACKAGE_DATA if p not in names]
    missing += [g for g in PACKAGE_DATA_GLOBS if not any(n.startswith(g) and n.endswith(".json") for n in names)]
    return missing


def test_the_wheel_carries_the_package_data_and_one_version(dists):
    wheel, sdist = dists
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = email.parser.Parser().parsestr(
            z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert missing_package_data(names) == [], "package data missing from the wheel"
    assert meta["Name"] == "speclib" and meta["Version"] == speclib.__version__
    requires = meta.get_all("Requires-Dist")
    lean_deps = sorted(r.split(">")[0].split("=")[0].strip() for r in requires if "extra ==" not in r)
    assert lean_deps == ["PyYAML", "numpy", "prometheus_client"]
    book = [r for r in requires if "extra == \"book\"" in r]
    assert sorted(r.split(">")[0] for r in book) == ["ipywidgets", "matplotlib", "sympy"]
    # what a `twine check` reads: a long description in a content type PyPI renders
    assert meta["Description-Content-Type"] == "text/markdown" and meta.get_payload().strip()
    with tarfile.open(sdist) as t:
        assert any(n.endswith("/pyproject.toml") for n in t.getnames())
        assert any(n.endswith("/speclib/presets/hardware.json") for n in t.getnames())


def test_a_wheel_without_its_data_is_caught(tmp_path):
    assert missing_package_data(["speclib/__init__.py"]) == list(PACKAGE_DATA) + list(PACKAGE_DATA_GLOBS)


def test_the_lean_install_runs_the_command_and_the_model(lean):
    speclib_cmd = lean / "bin" / "speclib"
    python = lean / "bin" / "python"
    version = run(speclib_cmd, "--version")
    assert version.stdout.strip() == f"speclib {speclib.__version__}"
    gamma = run(speclib_cmd, "gamma", "--model", "deepseek-v4-flash", "--hardware", "b200", "--batch", "64",
                "--seq", "4096", "--alpha", "0.75", "--draft-cost", "0.1")
    assert "gamma" in gamma.stdout.lower()
    schedule = run(speclib_cmd, "schedule", "--alpha", "0.75", "--max-batch", "256", "--engine", "vllm")
    document = json.loads(schedule.stdout[schedule.stdout.index("{"):])
    assert document["max_num_seqs"] == 256 and document["speculative_config"]  # what vLLM reads
    model = run(python, "-c", "import speclib; g, s = speclib.optimal_gamma(0.75, 64, 4096, 0.1); print(g)")
    assert int(model.stdout) == speclib.optimal_gamma(0.75, 64, 4096, 0.1)[0]
    absent = run(python, "-c", "import importlib.util as u; print([m for m in %r if u.find_spec(m)])"
                 % (EXTRA_MODULES,))
    assert absent.stdout.strip() == "[]", "the lean install pulled in an extra's package"


def test_the_lean_install_fits_a_calibration_and_prices_with_it(lean, tmp_path):
    from test_step_fit import _synthetic

    speclib_cmd = lean / "bin" / "speclib"
    files = _synthetic(tmp_path)
    out = tmp_path / "mine.json"
    fitted = run(speclib_cmd, "fit", *files, "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8",
                 "--output", out)
    assert "error" in fitted.stdout and out.exists()
    gamma = run(speclib_cmd, "gamma", "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8", "--calibration",
                out, "--alpha", "0.7", "--batch", "8", "--seq", "1500", "--json")
    assert json.loads(gamma.stdout)["step_time"].startswith("calibrated")


def test_the_lean_install_runs_a_deployments_own_path_on_the_shipped_samples(lean, tmp_path):
    """acceptance -> fit -> schedule, on the samples inside the installed package."""
    speclib_cmd = lean / "bin" / "speclib"
    where = run(lean / "bin" / "python", "-c", "import importlib.resources as r; print(r.files('speclib'))",
                cwd=tmp_path)  # not the checkout: python -c puts the working directory on sys.path
    package = Path(where.stdout.strip())
    assert not str(package).startswith(str(REPO)), "the lean venv must use the installed package"
    samples, config = package / "data" / "samples", package / "presets" / "models" / "qwen3-30b-a3b.json"
    curve, fitted = tmp_path / "curve.json", tmp_path / "h20.json"
    accepted = run(speclib_cmd, "acceptance", samples / "vllm-metrics-after.prom", "--before",
                   samples / "vllm-metrics-before.prom", "--output", curve, cwd=tmp_path)
    assert "0.6200" in accepted.stdout
    assert json.loads(curve.read_text())["survival"] == [0.8, 0.62, 0.47, 0.35]
    run(speclib_cmd, "fit", *sorted(samples.glob("base-c*.json")), *sorted(samples.glob("spec-k4-c*.json")),
        "--model-config", config, "--hardware-config", samples / "h20.yaml", "--output", fitted, cwd=tmp_path)
    assert json.loads(fitted.read_text())["per_sequence_s"] > 0
    schedule = run(speclib_cmd, "schedule", "--model-config", config, "--hardware-config", samples / "h20.yaml",
                   "--calibration", fitted, "--acceptance", curve, "--draft-cost", "0.05", "--seq", "2048",
                   "--max-batch", "64", "--engine", "vllm", "--method", "eagle3", "--draft-model",
                   "./qwen3-30b-a3b-eagle3", cwd=tmp_path)
    document = json.loads(schedule.stdout[schedule.stdout.index("{"):])
    assert document["speculative_config"]["num_speculative_tokens_per_batch_size"][0][0] == 1


def test_a_part_that_needs_the_book_extra_says_so_in_one_line(lean):
    python = lean / "bin" / "python"
    for module in ("speclib.presentation.figures", "speclib.formulas.moe", "speclib.evidence.claims"):
        done = run(python, "-c", f"import {module}", check=False)
        assert done.returncode != 0
        last = done.stderr.strip().splitlines()[-1]
        assert "pip install 'speclib[book]'" in last and last.startswith("speclib._extras.MissingExtra"), last
