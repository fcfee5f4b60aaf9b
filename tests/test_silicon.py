"""One layer's components measured on a GPU (issue 37): the roofline each
point is held against, by hand byte and FLOP counts, and the measurement
file's reader.

Expected numbers are datasheet arithmetic (H100 SXM: 3.35 TB/s, 989.4 dense
bf16 TFLOP/s, 1,978.9 fp8), the models' published shapes, the calibration
file read directly, or the fake timer's own constants: never the code under
test's output.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from speclib.evidence import silicon

ROOT = Path(__file__).resolve().parents[1]
M_H100, BF16_H100, FP8_H100 = 3.35e12, 989.4e12, 1978.9e12
H100 = silicon.hardware_for_device("NVIDIA H100 80GB HBM3")


# --- the roofline each point records, by hand ----------------------------------------------------


@pytest.mark.parametrize("kind, shape, B, T, S, dtype, expected", [
    # Llama-3.1-8B's MLP at B = 1: its 3 x 4096 x 14336 bf16 weights read once
    ("dense", "Llama-3.1-8B", 1, 1, None, "bf16", 3 * 4096 * 14336 * 2 / M_H100),
    # the same in fp8: one byte per weight
    ("dense", "Llama-3.1-8B", 1, 1, None, "fp8", 3 * 4096 * 14336 / M_H100),
    # Llama-3.3-70B at B x T = 2048: compute-bound, 2 FLOPs per weight and position
    ("dense", "Llama-3-70B", 256, 8, None, "bf16", 2 * 2048 * 3 * 8192 * 28672 / BF16_H100),
    ("dense", "Llama-3-70B", 256, 8, None, "fp8", 2 * 2048 * 3 * 8192 * 28672 / FP8_H100),
    # DeepSeek-V3 at one position: its 8 routed experts (no shared one), 3 x 7168 x 2048 weights each
    ("moe", "DeepSeek-V3", 1, 1, None, "bf16", 8 * 3 * 7168 * 2048 * 2 / M_H100),
    # two positions: 256 (1 - (248/256)^2) = 15.75 experts expected
    ("moe", "DeepSeek-V3", 1, 2, None, "bf16", 15.75 * 3 * 7168 * 2048 * 2 / M_H100),
    ("moe", "Qwen3-30B-A3B", 1, 1, None, "fp8", 8 * 3 * 2048 * 768 / M_H100),
    ("moe", "gpt-oss-120b", 1, 1, None, "bf16", 4 * 3 * 2880 * 2880 * 2 / M_H100),
    # MLA at T = 1 over 4,096 tokens: the 576-wide bf16 latent per token and 128 heads' 576-wide query
    ("attention", "DeepSeek-V3", 1, 1, 4096, "bf16", (4096 * 576 * 2 + 128 * 576 * 2) / M_H100),
    # ... at T = 8: compute-bound, 2 x 128 x (576 + 512) FLOPs per query-token pair
    ("attention", "DeepSeek-V3", 1, 8, 4096, "bf16", 8 * 4096 * 2 * 128 * (576 + 512) / BF16_H100),
    # GQA: 8 KV heads of 128, K and V, and 64 query heads of 128
    ("attention", "Llama-3-70B", 2, 4, 1024, "bf16", 2 * (1024 * 2 * 8 * 128 * 2 + 4 * 64 * 128 * 2) / M_H100),
])
def test_the_recorded_roofline_is_the_hand_count(kind, shape, B, T, S, dtype, expected):
    assert silicon.predicted_seconds(kind, shape, B, T, S, dtype, H100) == pytest.approx(expected, rel=1e-12)


def test_a_moe_roofline_of_a_dense_model_is_refused():
    with pytest.raises(ValueError, match="kind 'moe' needs a mixture-of-experts model"):
        silicon.predicted_seconds("moe", "Llama-3.1-8B", 1, 1, None, "bf16", H100)
    with pytest.raises(ValueError, match="^kind must be one of"):
        silicon.predicted_seconds("mlp", "Llama-3.1-8B", 1, 1, None, "bf16", H100)
    with pytest.raises(ValueError, match="^precision must be one of 'bf16', 'fp8'"):
        silicon.predicted_seconds("dense", "Llama-3.1-8B", 1, 1, None, "fp16", H100)


@pytest.mark.parametrize("name, slug, preset", [
    ("NVIDIA H100 80GB HBM3", "h100-80gb-hbm3", "H100-SXM"),
    ("NVIDIA H200", "h200", "H200"),
    ("NVIDIA H100 PCIe", "h100-pcie", None),
    ("NVIDIA H100 NVL", "h100-nvl", None),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb", None),
])
def test_a_device_name_gives_its_file_name_and_preset(name, slug, preset):
    assert silicon.device_slug(name) == slug
    hw = silicon.hardware_for_device(name)
    assert (hw.name if hw else None) == preset


# --- the analysis by hand ----------------------------------------------------------------------


def test_a_width_series_by_hand():
    T = np.array([1.0, 2.0, 4.0])
    s = silicon.WidthSeries("attention", "x", "bf16", 1.0, 1024.0, T, np.array([1.0, 1.05, 1.5]),
                            np.array([2.0, 2.0, 4.0]))
    assert list(s.relative()) == [1.0, 1.05, 1.5] and list(s.relative(roofline=True)) == [1.0, 1.0, 2.0]
    assert s.marginal() == pytest.approx([0.05, 0.225]) and list(s.marginal(roofline=True)) == [0.0, 1.0]
    assert s.turn(0.1) == 4.0 and s.turn(0.01) == 2.0 and s.turn(0.6) != s.turn(0.6)  # NaN: never grew 60 %


# --- bad files ------------------------------------------------------------------------------


def _point(**change):
    p = {"kind": "dense", "shape": "Llama-3.1-8B", "B": 1, "T": 1, "dtype": "bf16", "seconds": 1e-4,
         "repeats": 25, "method": "mm", "graph": True, "predicted_s": 1e-4}
    p.update(change)
    return {k: v for k, v in p.items() if v is not ...}


def _doc(**change):
    d = {"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "cuda": "12.8", "date": "2026-06-30",
         "budget_s": 420, "elapsed_s": 300, "points": [_point()]}
    d.update(change)
    return {k: v for k, v in d.items() if v is not ...}


@pytest.mark.parametrize("doc, message", [
    (_doc(points=...), r"points must be a non-empty list"),
    (_doc(points=[]), r"points must be a non-empty list"),
    (_doc(gpu=...), r": gpu must be a non-empty string"),
    (_doc(gpu="NVIDIA A100-SXM4-80GB"), r"gpu 'NVIDIA A100-SXM4-80GB' maps to no hardware preset"),
    (_doc(hardware="TPU"), r": hardware: unknown hardware 'TPU'"),
    (_doc(budget_s=-1), r": budget_s must be a number > 0; got -1"),
    (_doc(points=[_point(kind="mlp")]), r"points\[0\]: kind must be one of moe, dense, attention; got 'mlp'"),
    (_doc(points=[_point(), _point(seconds=0)]), r"points\[1\]: seconds must be a number > 0; got 0"),
    (_doc(points=[_point(seconds="fast")]), r"points\[0\]: seconds must be a number > 0; got 'fast'"),
    (_doc(points=[_point(B=1.5)]), r"points\[0\]: B must be an integer > 0; got 1.5"),
    (_doc(points=[_point(T=...)]), r"points\[0\]: T must be an integer > 0; got None"),
    (_doc(points=[_point(dtype="fp16")]), r"points\[0\]: dtype must be one of bf16, fp8; got 'fp16'"),
    (_doc(points=[_point(graph="yes")]), r"points\[0\]: graph must be true or false; got 'yes'"),
    (_doc(points=[_point(shape="GPT-5")]), r"points\[0\]: shape: unknown model 'GPT-5'"),
    (_doc(points=[_point(kind="moe")]), r"points\[0\]: shape: .*kind 'moe' needs a mixture-of-experts model"),
    (_doc(points=[_point(kind="attention")]), r"points\[0\]: S must be an integer > 0; got None"),
    (_doc(points=[_point(predicted_s=-2)]), r"points\[0\]: predicted_s must be a number > 0 or null; got -2"),
    (_doc(points=[3]), r"points\[0\]: a point must be an object"),
    (_doc(notes="none"), r": notes must be a list; got 'none'"),
    (_doc(dry_run=True), r": dry_run is true: a dry run times tiny shapes on a CPU"),
])
def test_a_bad_file_is_refused_naming_the_file_and_the_field(tmp_path, doc, message):
    path = tmp_path / "bad-layers.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"^{tmp_path}.*bad-layers.json.*{message}"):
        silicon.read_layers(path)


def test_a_good_minimal_file_reads(tmp_path):
    path = tmp_path / "ok-layers.json"
    path.write_text(json.dumps(_doc()))
    m = silicon.read_layers(path)
    assert len(m) == 1 and m.roofline_s[0] == pytest.approx(3 * 4096 * 14336 * 2 / M_H100)


@pytest.mark.parametrize("text, message", [("{", "not a JSON file"), ("[1]", "must hold a JSON object")])
def test_a_file_that_is_not_a_measurement_is_refused(tmp_path, text, message):
    path = tmp_path / "x-layers.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"x-layers.json: {message}"):
        silicon.read_layers(path)
    with pytest.raises(ValueError, match="cannot read the measurements"):
        silicon.read_layers(tmp_path / "missing.json")


def test_nothing_is_shipped_until_a_run_is():
    """speclib/data/measured/ holds only real runs' files (none yet is not an error)."""
    assert all(p.name.endswith("-layers.json") for p in silicon.shipped_files())
    assert len(silicon.shipped()) == len(silicon.shipped_files())
