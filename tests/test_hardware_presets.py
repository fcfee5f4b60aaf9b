"""Hardware presets: ridges against the datasheet figures, written here as the
datasheets print them (rounded TFLOPS, rack totals), not as the presets store them."""
import math

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
    # GB200 NVL72 rack: 1,440 PF FP4, 720 PF FP8 and 360 PF BF16, all with
    # sparsity; 576 TB/s; 72 GPUs.
    ("GB200", "fp4"): (1440 * P / 72 / 2, 576 * TB / 72),
    ("GB200", "fp8"): (720 * P / 72 / 2, 576 * TB / 72),
    ("GB200", "bf16"): (360 * P / 72 / 2, 576 * TB / 72),
    # H20 as its partners print it (no public NVIDIA datasheet): 148 / 296
    # TFLOPS dense at 4.0 TB/s; no fp4 (the fp8 peak)
    ("H20", "bf16"): (148 * T, 4.0 * TB),
    ("H20", "fp8"): (296 * T, 4.0 * TB),
    ("H20", "fp4"): (296 * T, 4.0 * TB),
    # A100 80GB SXM: BF16 624 TFLOPS with sparsity at 2,039 GB/s; no fp8 or
    # fp4 tensor cores (both at the bf16 peak)
    ("A100-SXM", "bf16"): (624 * T / 2, 2039e9),
    ("A100-SXM", "fp8"): (624 * T / 2, 2039e9),
    ("A100-SXM", "fp4"): (624 * T / 2, 2039e9),
    # L40S: BF16 733 and FP8 1,466 TFLOPS with sparsity (the sheet's dense
    # BF16 is 362.05, not half of 733) at 864 GB/s; no fp4 (the fp8 peak)
    ("L40S", "bf16"): (362.05 * T, 864e9),
    ("L40S", "fp8"): (1466 * T / 2, 864e9),
    ("L40S", "fp4"): (1466 * T / 2, 864e9),
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


@pytest.mark.parametrize("chip", ["H100-SXM", "H200", "MI300X", "MI325X", "H20", "L40S"])
def test_chips_without_fp4_run_it_at_the_fp8_peak(chip):
    hw = presets.hardware(chip)
    assert not hw.native("fp4")
    assert hw.ridge("fp4") == hw.ridge("fp8")
    assert presets.describe_hardware(hw)["fp4"] == "runs at the fp8 peak"


@pytest.mark.parametrize("chip", ["B200", "MI355X", "GB300", "GB200"])
def test_chips_with_fp4_have_a_higher_fp4_ridge(chip):
    hw = presets.hardware(chip)
    assert hw.native("fp4")
    assert hw.ridge("fp4") > hw.ridge("fp8") > hw.ridge("bf16")


def test_mi325x_is_mi300x_compute_with_more_bandwidth():
    for precision in presets.PRECISIONS:
        assert presets.MI325X.peak_flops(precision) == presets.MI300X.peak_flops(precision)
    assert presets.MI325X.memory_bandwidth == pytest.approx(6.0 / 5.3 * presets.MI300X.memory_bandwidth)


@pytest.mark.parametrize("hw", [h for h in presets.all_hardware() if h.name != "H20"], ids=lambda h: h.name)
def test_every_chip_cites_a_source(hw):
    assert "datasheet" in hw.source.lower().replace("data sheet", "datasheet")


@pytest.mark.parametrize("chip", ["GB200", "A100-SXM", "L40S"])
def test_new_chips_cite_their_datasheets_address(chip):
    # the vendor's own sheet, by its address
    assert "https://www.nvidia.com/" in presets.hardware(chip).source or \
        "https://resources.nvidia.com/" in presets.hardware(chip).source


def test_h20_says_it_has_no_public_datasheet():
    # NVIDIA publishes none: the preset must say its figures are unverified
    source = presets.hardware("H20").source.lower()
    assert "no public datasheet" in source and "unverified" in source


@pytest.mark.parametrize("chip, domain", [("B200", 8), ("B300", 8), ("GB200", 72), ("GB300", 72)])
def test_blackwell_nvlink_domain_is_the_server_or_the_rack(chip, domain):
    # an HGX B200/B300 server joins 8 GPUs by NVLink (the HGX B200 datasheet); an NVL72 rack joins 72 (its name)
    hw = presets.hardware(chip)
    link = presets.default_interconnect(hw)
    assert link.domain_size == domain and link.bandwidth == pytest.approx(1.8e12)
    if domain == 8:
        assert "HGX B200" in link.source


def test_gb200_is_one_nvlink_domain_of_72():
    gb200 = presets.hardware("GB200-NVL72")
    assert gb200.name == "GB200" and gb200.interconnect == "NVLink5-NVL72"
    link = presets.interconnect(gb200.interconnect)
    assert link.domain_size == 72 and "GB200 NVL72 datasheet" in link.source
    # 130 TB/s of NVLink over the rack's 72 GPUs
    assert link.bandwidth == pytest.approx(130e12 / 72, rel=0.01)
    # up to 13.4 TB of HBM3e over 72 GPUs (printed to three figures)
    assert abs(72 * gb200.hbm_capacity - 13.4e12) <= 0.05e12


@pytest.mark.parametrize("chip, capacity, link, link_GBps", [
    ("H20", 96e9, "NVLink4", 900), ("A100-SXM", 80e9, "NVLink3", 600), ("L40S", 48e9, "PCIe4", 64)])
def test_new_chips_memory_and_links_as_printed(chip, capacity, link, link_GBps):
    hw = presets.hardware(chip)
    assert hw.hbm_capacity == capacity and hw.interconnect == link
    assert presets.interconnect(link).bandwidth == link_GBps * 1e9


def test_a100_has_no_fp8_tensor_cores():
    a100 = presets.hardware("a100")
    assert not a100.native("fp8") and not a100.native("fp4")
    assert a100.ridge("fp8") == a100.ridge("bf16")


# AIConfigurator 0.12.0's measured nccl_perf tables, NCCL 2.27.3, all_reduce of 1,024 half-precision elements (us)
MEASURED_ALLREDUCE_US = {"A100-SXM": {2: 10.0, 4: 14.17, 8: 21.53}, "L40S": {2: 6.31, 4: 12.47, 8: 23.3}}


@pytest.mark.parametrize("chip", sorted(MEASURED_ALLREDUCE_US))
def test_the_new_links_small_allreduce_is_the_measured_one(chip):
    link = presets.interconnect(presets.hardware(chip).interconnect)
    assert link.allreduce_latency_at(1) == 0.0
    for gpus, us in MEASURED_ALLREDUCE_US[chip].items():
        assert link.allreduce_latency_at(gpus) == pytest.approx(us * 1e-6, rel=1e-12)
    # between two measured counts: linear in log2 of the GPUs
    by = MEASURED_ALLREDUCE_US[chip]
    assert link.allreduce_latency_at(6) == pytest.approx((by[4] + (by[8] - by[4]) * (math.log2(6) - 2)) * 1e-6)
