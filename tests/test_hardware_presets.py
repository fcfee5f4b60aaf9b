"""Hardware presets: ridges against the datasheet figures, written here as the
datasheets print them (rounded TFLOPS, rack totals), not as the presets store them."""
import pytest

from speclib import presets

TB = 1e12
T = 1e12  # TFLOPS
P = 1e15  # PFLOPS

# (chip, precision) -> (peak FLOP/s as printed, bandwidth B/s as printed)
DATASHEET = {
    # docs/model.md: B200 2.25 / 4.5 / 9 PFLOPS dense at 8 TB/s
    ("B200", "bf16"): (2.25 * P, 8 * TB),
    ("B200", "fp8"): (4.5 * P, 8 * TB),
    ("B200", "fp4"): (9 * P, 8 * TB),
    # MI325X: 1,307.4 / 2,614.9 TFLOPS dense at 6 TB/s
    ("MI325X", "bf16"): (1307.4 * T, 6 * TB),
    ("MI325X", "fp8"): (2614.9 * T, 6 * TB),
    # MI355X: ~2.5 / ~5.0 / ~10 PFLOPS dense at 8 TB/s (sheet rounds to 2 figures)
    ("MI355X", "bf16"): (2.5 * P, 8 * TB),
    ("MI355X", "fp8"): (5.0 * P, 8 * TB),
    ("MI355X", "fp4"): (10.0 * P, 8 * TB),
    # MI350X: ~2.3 / ~4.6 / ~9.2 PFLOPS dense at 8 TB/s (the MI355X die at 2.2 GHz)
    ("MI350X", "bf16"): (2.3 * P, 8 * TB),
    ("MI350X", "fp8"): (4.6 * P, 8 * TB),
    ("MI350X", "fp4"): (9.2 * P, 8 * TB),
    # DGX B300, 8 GPUs: 72 PF FP8 and 36 PF BF16 with sparsity; FP4 144 PF with
    # sparsity, dense at the GB300 NVL72 sheet's dense/sparse ratio (1,080/1,440)
    ("B300", "fp8"): (72 * P / 8 / 2, 576 * TB / 72),
    ("B300", "bf16"): (36 * P / 8 / 2, 576 * TB / 72),
    ("B300", "fp4"): (144 * P / 8 * 1080 / 1440, 576 * TB / 72),
    # GB300 NVL72 rack: 1,080 PF dense FP4; 720 PF FP8 and 360 PF BF16 with
    # sparsity; 576 TB/s; 72 GPUs.
    ("GB300", "fp4"): (1080 * P / 72, 576 * TB / 72),
    ("GB300", "fp8"): (720 * P / 72 / 2, 576 * TB / 72),
    ("GB300", "bf16"): (360 * P / 72 / 2, 576 * TB / 72),
}

# The MI355X sheet prints two significant figures; the preset carries the
# exact CU x clock x rate product, 0.66 % above the rounded 2.5/5/10.
ROUNDING = {"MI355X": 0.01, "MI350X": 0.01}


@pytest.mark.parametrize("chip, precision", sorted(DATASHEET))
def test_ridge_matches_datasheet(chip, precision):
    peak, bandwidth = DATASHEET[chip, precision]
    hw = presets.hardware(chip)
    assert hw.ridge(precision) == pytest.approx(peak / bandwidth, rel=ROUNDING.get(chip, 1e-9))


def test_b200_ridges_are_the_papers():
    # docs/model.md: 281.25 (paper writes 281), 562.5 (563), 1125
    assert [presets.B200.ridge(p) for p in ("bf16", "fp8", "fp4")] == [281.25, 562.5, 1125.0]


def test_mi355x_peaks_are_cu_times_clock_times_rate():
    # 8 XCDs x 32 CUs, 2.4 GHz, 8,192 dense FP8 FLOP per clock per CU
    fp8 = 8 * 32 * 2.4e9 * 8192
    assert presets.MI355X.peak_flops("fp8") == pytest.approx(fp8)
    assert presets.MI355X.peak_flops("bf16") == pytest.approx(fp8 / 2)
    assert presets.MI355X.peak_flops("fp4") == pytest.approx(fp8 * 2)


def test_mi350x_peaks_are_cu_times_clock_times_rate():
    # the MI355X's 256 CUs and 8,192 dense FP8 FLOP per clock per CU at 2.2 GHz
    fp8 = 8 * 32 * 2.2e9 * 8192
    assert presets.hardware("MI350X").peak_flops("fp8") == pytest.approx(fp8)
    assert presets.hardware("MI350X").peak_flops("bf16") == pytest.approx(fp8 / 2)
    assert presets.hardware("MI350X").peak_flops("fp4") == pytest.approx(fp8 * 2)
    # the same die at 2.2 instead of 2.4 GHz
    assert presets.hardware("MI350X").peak_flops("fp8") / presets.MI355X.peak_flops("fp8") == pytest.approx(2.2 / 2.4)


def test_b300_is_an_eight_gpu_blackwell_ultra():
    b300 = presets.hardware("B300")
    assert presets.hardware("hgx-b300") is b300 and b300.vendor == "NVIDIA" and b300.interconnect == "NVLink5"
    # 2.3 TB of HBM3e over 8 GPUs, 288 GB each (printed as 2.3 TB: within its rounding)
    assert abs(8 * b300.hbm_capacity - 2.3e12) <= 0.05e12 and b300.hbm_capacity == 288e9
    # the same GPU as GB300's at lower clocks: below it at every precision, same bandwidth
    assert all(b300.peak_flops(p) < presets.GB300.peak_flops(p) for p in ("bf16", "fp8", "fp4"))
    assert b300.memory_bandwidth == presets.GB300.memory_bandwidth


@pytest.mark.parametrize("chip", ["H100-SXM", "H200", "MI300X", "MI325X"])
def test_chips_without_fp4_run_it_at_the_fp8_peak(chip):
    hw = presets.hardware(chip)
    assert not hw.native("fp4")
    assert hw.ridge("fp4") == hw.ridge("fp8")
    assert presets.describe_hardware(hw)["fp4"] == "runs at the fp8 peak"


@pytest.mark.parametrize("chip", ["B200", "MI355X", "GB300"])
def test_chips_with_fp4_have_a_higher_fp4_ridge(chip):
    hw = presets.hardware(chip)
    assert hw.native("fp4")
    assert hw.ridge("fp4") > hw.ridge("fp8") > hw.ridge("bf16")


def test_mi325x_is_mi300x_compute_with_more_bandwidth():
    for precision in presets.PRECISIONS:
        assert presets.MI325X.peak_flops(precision) == presets.MI300X.peak_flops(precision)
    assert presets.MI325X.memory_bandwidth == pytest.approx(6.0 / 5.3 * presets.MI300X.memory_bandwidth)


@pytest.mark.parametrize("hw", presets.all_hardware(), ids=lambda h: h.name)
def test_every_chip_cites_a_source(hw):
    assert "datasheet" in hw.source.lower().replace("data sheet", "datasheet")


def test_derived_figures_say_so():
    assert "sparse/2" in presets.GB300.source
    assert "derived" in presets.MI355X.source.lower()


@pytest.mark.parametrize("name, expected", [("mi355x", "MI355X"), ("Gb300-NVL72", "GB300"), (" MI325X ", "MI325X"), ("h100", "H100-SXM")])
def test_lookup_is_case_insensitive_with_aliases(name, expected):
    assert presets.hardware(name).name == expected


def test_unknown_hardware_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown hardware 'tpu'.*MI355X.*GB300"):
        presets.hardware("tpu")


def test_names_are_unique():
    names = [h.name.lower() for h in presets.all_hardware()]
    aliases = [a.lower() for h in presets.all_hardware() for a in h.aliases]
    assert len(set(names + aliases)) == len(names) + len(aliases)
