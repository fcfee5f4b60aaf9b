"""Hardware and model presets (speclib.presets): lookup by name, the
precision fallback, immutability, and the paper's B200 and DeepSeek-V4-Flash
numbers (docs/model.md) derived from architecture numbers.
"""
import dataclasses

import pytest

import speclib
from speclib import presets


# --- lookup -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["B200", "b200", "  B200 "])
def test_hardware_names_are_case_insensitive(name):
    assert presets.hardware(name) is presets.B200


@pytest.mark.parametrize("name", ["DeepSeek-V4-Flash", "deepseek-v4-flash", "DEEPSEEK-V4-FLASH", "v4-flash"])
def test_model_names_are_case_insensitive(name):
    assert presets.model(name) is presets.DEEPSEEK_V4_FLASH


@pytest.mark.parametrize("name", ["h100", "H100-SXM", "h100-sxm"])
def test_hardware_aliases(name):
    assert presets.hardware(name) is presets.H100_SXM


def test_unknown_hardware_lists_the_known_ones():
    with pytest.raises(ValueError) as info:
        presets.hardware("TPU-v9")
    message = str(info.value)
    assert "TPU-v9" in message
    for known in ("B200", "H100-SXM", "H200", "MI300X"):
        assert known in message


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(ValueError) as info:
        presets.model("GPT-9")
    message = str(info.value)
    assert "GPT-9" in message
    for known in ("DeepSeek-V4-Flash", "Llama-3-70B"):
        assert known in message


@pytest.mark.parametrize("bad", [None, 3, 2.5, ["B200"]])
def test_non_string_names_are_rejected(bad):
    with pytest.raises(ValueError, match="known"):
        presets.hardware(bad)
    with pytest.raises(ValueError, match="known"):
        presets.model(bad)


def test_public_api_accepts_names_and_presets_alike():
    by_name = speclib.marginal_cost(64, 4096, 0.1, "deepseek-v4-flash", "b200")
    by_preset = speclib.marginal_cost(64, 4096, 0.1, presets.DEEPSEEK_V4_FLASH, presets.B200)
    by_default = speclib.marginal_cost(64, 4096, 0.1)
    assert by_name == by_preset == by_default


def test_every_preset_is_reachable_by_its_own_name():
    for h in presets.all_hardware():
        assert presets.hardware(h.name.upper()) is h
    for m in presets.all_models():
        assert presets.model(m.name.lower()) is m


# --- precision fallback -----------------------------------------------------------


def test_fp4_on_hopper_runs_at_the_fp8_peak():
    h100 = presets.hardware("H100")
    assert not h100.native("fp4")
    assert h100.native("fp8") and h100.native("bf16")
    assert h100.peak_flops("fp4") == h100.peak_flops("fp8") == h100.fp8_flops
    assert h100.ridge("fp4") == h100.ridge("fp8")


def test_b200_has_native_fp4():
    assert presets.B200.native("fp4")
    assert presets.B200.peak_flops("fp4") == 2 * presets.B200.peak_flops("fp8")


@pytest.mark.parametrize("precision", ["FP8", "Bf16", " fp4 "])
def test_precision_names_are_case_insensitive(precision):
    assert presets.B200.peak_flops(precision) > 0


def test_unknown_precision_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match=r"precision must be one of 'fp4', 'fp8', 'bf16'"):
        presets.B200.peak_flops("fp16")
    with pytest.raises(ValueError, match=r"precision must be one of"):
        presets.H100_SXM.native("int8")


# --- immutability -------------------------------------------------------------


def test_hardware_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        presets.B200.memory_bandwidth = 1.0


def test_model_and_its_parts_are_frozen():
    v4 = presets.DEEPSEEK_V4_FLASH
    with pytest.raises(dataclasses.FrozenInstanceError):
        v4.hidden_size = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        v4.ffn.top_k = 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        v4.attention.n_heads = 1


def test_presets_are_hashable_so_cost_models_can_be_cached():
    assert len({presets.B200, presets.H100_SXM, presets.B200}) == 2
    assert hash(presets.DEEPSEEK_V4_FLASH) == hash(presets.model("deepseek-v4-flash"))


# --- the paper's numbers (docs/model.md) --------------------------------------------------


def test_paper_b200_ridges():
    b200 = presets.B200
    assert b200.memory_bandwidth == 8e12
    assert b200.ridge("bf16") == 281.25
    assert b200.ridge("fp8") == 562.5
    assert b200.ridge("fp4") == 1125


def test_paper_deepseek_v4_flash_derived_quantities():
    v4 = presets.DEEPSEEK_V4_FLASH
    assert v4.context_bytes == 576  # m_c = (d_c + d_r) b_kv
    assert v4.query_bytes == 73_728  # m_q = n_h (d_c + d_r) b_q
    assert v4.flops_per_pair == 139_264  # f = 2 n_h (2 d_c + d_r)
    assert v4.expert_params == 25_165_824  # W_E = 3 * 4096 * 2048
    assert v4.attn_proj_params == pytest.approx(107e6, rel=5e-3)  # "W_attn ~ 107e6"
    assert (v4.ffn.n_routed, v4.ffn.top_k, v4.ffn.n_shared) == (256, 6, 1)
    assert v4.ffn.weight_bytes == 0.53


def test_paper_precisions_of_each_component():
    v4 = presets.DEEPSEEK_V4_FLASH
    assert (v4.proj_precision, v4.ffn.precision, v4.attention_precision) == ("fp8", "fp4", "bf16")
    assert v4.proj_weight_bytes == 1


def test_defaults_are_the_papers_model_and_chip():
    assert presets.resolve() == (presets.DEEPSEEK_V4_FLASH, presets.B200)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_routed=8, top_k=9, n_shared=0, expert_width=10, weight_bytes=1.0), r"top_k.*\[1, 8\]"),
        (dict(n_routed=8, top_k=0, n_shared=0, expert_width=10, weight_bytes=1.0), r"top_k.*\[1, 8\]"),
        (dict(n_routed=0, top_k=1, n_shared=0, expert_width=10, weight_bytes=1.0), r"n_routed"),
        (dict(n_routed=8, top_k=2, n_shared=-1, expert_width=10, weight_bytes=1.0), r"n_shared"),
        (dict(n_routed=8, top_k=2, n_shared=0, expert_width=10, weight_bytes=0.0), r"weight_bytes.*\(0, inf\)"),
        (dict(n_routed=8, top_k=2, n_shared=0, expert_width=10, weight_bytes=1.0, precision="fp2"), r"precision"),
    ],
)
def test_moe_ffn_rejects_impossible_routing(kwargs, match):
    with pytest.raises(ValueError, match=match):
        presets.MoEFFN(**kwargs)


def test_dense_ffn_rejects_bad_width():
    with pytest.raises(ValueError, match=r"width"):
        presets.DenseFFN(width=0, weight_bytes=2.0)


# --- the preset tables are data, read by one reader ------------------------------
def test_every_shipped_config_is_listed_once_in_models_json():
    from speclib.presets import catalog

    listed = [p.stem for p in catalog.model_files()]
    assert sorted(listed) == sorted(presets.shipped_configs()) and len(set(listed)) == len(listed)
    assert presets.model_names() == [presets.from_hf_config(p).name for p in catalog.model_files()]


def test_the_reader_converts_units_to_si():
    import json

    from speclib.presets import catalog

    raw = json.loads((catalog.DATA_DIR / "hardware.json").read_text())["hardware"]
    b200 = next(r for r in raw if r["name"] == "B200")
    assert presets.B200.memory_bandwidth == b200["memory_bandwidth_TBps"] * 1e12 == 8e12  # the paper's 8 TB/s
    assert presets.B200.fp4_flops == 9e15  # the paper's 9 PFLOPS
    assert presets.interconnect("NVLink5").bandwidth == 1.8e12


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.pop("source"), r"missing fields \['source'\]"),
    (lambda r: r.update(hbm="80 GB"), r"unknown fields \['hbm'\]"),
])
def test_a_bad_hardware_record_names_the_file_record_and_field(tmp_path, monkeypatch, edit, message):
    import json
    import shutil

    from speclib.presets import catalog

    shutil.copy(catalog.DATA_DIR / "hardware.json", tmp_path / "hardware.json")
    data = json.loads((tmp_path / "hardware.json").read_text())
    edit(data["hardware"][1])
    (tmp_path / "hardware.json").write_text(json.dumps(data))
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"hardware\.json: hardware\[1\] \(H100-SXM\): " + message):
        catalog.read_table("hardware")


def test_each_chip_names_an_interconnect_preset():
    for chip in presets.all_hardware():
        assert presets.default_interconnect(chip).name == chip.interconnect
