"""AMD GPUs read through the fake amdsmi module go through the same health rules as NVIDIA's,
with AMD's own limits (the card's hwmon critical/emergency temperatures, its default power cap,
the driver's RAS counters)."""

from __future__ import annotations

import dataclasses

import pytest

from gpuselect.hardware.snapshot import detect
from gpuselect.hardware.types import Snapshot
from gpuselect.health import thresholds as T
from gpuselect.health.model import Severity
from gpuselect.health.rules import EXIT_CRITICAL, EXIT_FINE, EXIT_WARNINGS, evaluate
from tests.fakes import fake_amdsmi as A
from tests.fakes import fake_nvml as F

GIB = 1024**3


def snap(fake: A.FakeAmdSmi) -> Snapshot:
    """No NVIDIA GPU, the fake AMD ones; this machine's RAM and frameworks left out."""
    s = dataclasses.replace(detect(nvml=F.FakeNVML([]), amdsmi=fake, probe=False), torch=None, frameworks=[])
    s.memory.total_bytes = 1024 * GIB
    return s


def one(report, rule_id: str):
    found = [f for f in report.findings if f.id == rule_id]
    assert len(found) == 1, f"{rule_id}: {report.findings}"
    return found[0]


def test_normal_card_is_fine_and_every_rule_ran() -> None:
    r = evaluate(snap(A.FakeAmdSmi()))
    for rule in (
        "gpu.temperature",
        "gpu.memory_temperature",
        "gpu.power_limit",
        "gpu.pcie_link",
        "gpu.ecc",
        "gpu.retired_pages",
        "gpu.memory_held_by_others",
    ):
        assert one(r, rule).severity is Severity.OK, one(r, rule)
    t = one(r, "gpu.temperature")
    assert t.value == 45 and t.threshold == 100 and t.source == T.AMD_TEMP_SOURCE  # 110 °C crit - 10
    assert "junction (hotspot) at 45 °C" in t.detail
    # the only thing amdsmi cannot tell is a throttle-reason bitmask: said, not hidden
    assert one(r, "gpu.clock_events").severity is Severity.UNKNOWN
    assert r.exit_code == EXIT_FINE


def test_hot_card_warns_near_and_is_critical_at_its_own_limit() -> None:
    warm = A.FakeAmdGpu(temps={A.AmdSmiTemperatureType.HOTSPOT: {0: 104, 5: 110, 7: 115}})
    r = evaluate(snap(A.FakeAmdSmi([warm])))
    assert one(r, "gpu.temperature").severity is Severity.WARNING and r.exit_code == EXIT_WARNINGS
    hot = A.FakeAmdGpu(
        temps={A.AmdSmiTemperatureType.HOTSPOT: {0: 111, 5: 110, 7: 115}, A.AmdSmiTemperatureType.VRAM: {0: 96, 5: 95}}
    )
    r = evaluate(snap(A.FakeAmdSmi([hot])))
    f = one(r, "gpu.temperature")
    assert f.severity is Severity.CRITICAL and "slowdown point (110 °C)" in f.title
    assert one(r, "gpu.memory_temperature").severity is Severity.CRITICAL
    assert r.exit_code == EXIT_CRITICAL


def test_card_without_limits_is_judged_on_amds_junction_limit_not_nvidias() -> None:
    """95 °C junction is ordinary for an AMD card; NVIDIA's generic 83-93 °C would call it critical."""
    gpu = A.FakeAmdGpu(temps={A.AmdSmiTemperatureType.HOTSPOT: {0: 95}})
    f = one(evaluate(snap(A.FakeAmdSmi([gpu]))), "gpu.temperature")
    assert f.severity is Severity.OK and f.source == T.AMD_TEMP_FALLBACK.source


def test_an_edge_reading_without_limits_is_not_judged_on_the_junction_limit() -> None:
    """Review 14: the edge sensor reads well below the junction; 95 °C there is hot."""
    gpu = A.FakeAmdGpu(temps={A.AmdSmiTemperatureType.EDGE: {0: 95}})
    f = one(evaluate(snap(A.FakeAmdSmi([gpu]))), "gpu.temperature")
    assert f.source == T.TEMP_FALLBACK.source and f.severity is not Severity.OK
    assert "generic limits used" in f.detail


def test_uncorrectable_ecc_errors_are_critical() -> None:
    gpu = A.FakeAmdGpu(ecc=(12, 3), bad_pages=[{"value": 0, "page_address": 0x1000, "status": "RESERVED"}])
    r = evaluate(snap(A.FakeAmdSmi([gpu])))
    f = one(r, "gpu.ecc")
    assert f.severity is Severity.CRITICAL and f.value == 3 and "rvs" in (f.remedy or "")
    assert one(r, "gpu.retired_pages").value == 1
    assert r.exit_code == EXIT_CRITICAL


def test_bad_pages_past_the_drivers_threshold_are_critical() -> None:
    pages = [{"value": i, "page_address": i * 4096, "status": "RESERVED"} for i in range(8)]
    gpu = A.FakeAmdGpu(bad_pages=pages, bad_page_threshold=8)
    f = one(evaluate(snap(A.FakeAmdSmi([gpu]))), "gpu.retired_pages")
    assert f.severity is Severity.CRITICAL and f.threshold == 8 and f.source == T.AMD_BAD_PAGE_SOURCE


def test_degraded_pcie_link_under_load_warns() -> None:
    gpu = A.FakeAmdGpu(pcie=(8_000, 8, 32_000, 16), activity=(97, 40))
    f = one(evaluate(snap(A.FakeAmdSmi([gpu]))), "gpu.pcie_link")
    assert f.severity is Severity.WARNING and (f.value, f.threshold) == ("Gen3 x8", "Gen5 x16")
    idle = A.FakeAmdGpu(pcie=(2_500, 16, 32_000, 16), activity=(0, 0))
    assert one(evaluate(snap(A.FakeAmdSmi([idle]))), "gpu.pcie_link").severity is Severity.INFO


def test_lowered_power_cap_warns_with_amd_smi_remedy() -> None:
    gpu = A.FakeAmdGpu(
        power={"current_socket_power": 400, "average_socket_power": "N/A", "power_limit": 500},
        power_cap_uw=(500_000_000, 750_000_000, 750_000_000),
    )
    f = one(evaluate(snap(A.FakeAmdSmi([gpu]))), "gpu.power_limit")
    assert f.severity is Severity.WARNING and "amd-smi" in (f.remedy or "")


def test_a_metric_raising_makes_that_check_unknown_not_a_crash() -> None:
    gpu = A.FakeAmdGpu(errors={"amdsmi_get_temp_metric": A.AMDSMI_STATUS_DRM_ERROR})
    r = evaluate(snap(A.FakeAmdSmi([gpu])))
    f = one(r, "gpu.temperature")
    assert f.severity is Severity.UNKNOWN and "DRM_ERROR" in f.detail
    assert one(r, "gpu.pcie_link").severity is Severity.OK  # the rest still judged


def test_amdsmi_init_failure_is_reported_not_read_as_no_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuselect.health.rules as rules

    monkeypatch.setattr(rules, "_amdgpu_present", lambda: True)  # the kernel shows amdgpu
    r = evaluate(snap(A.FakeAmdSmi(init_error=A.AMDSMI_STATUS_INIT_ERROR)))
    f = one(r, "amdsmi.init_failed")
    assert f.severity is Severity.WARNING and "INIT_ERROR" in f.detail
    assert r.exit_code == EXIT_WARNINGS


def test_amdsmi_failing_without_an_amd_driver_is_only_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 14: amdsmi installed without ROCm on a machine with no AMD GPU warned that one may be
    there unseen, and changed the verdict."""
    import gpuselect.health.rules as rules

    monkeypatch.setattr(rules, "_amdgpu_present", lambda: False)
    r = evaluate(snap(A.FakeAmdSmi(init_error=A.AMDSMI_STATUS_INIT_ERROR)))
    f = one(r, "amdsmi.init_failed")
    assert f.severity is Severity.INFO and "unseen" not in f.title


def test_a_card_without_a_shutdown_point_reads_n_a_not_n_a_degrees() -> None:
    """QA 15: an RDNA card with only a slowdown limit read "shutdown n/a °C"."""
    gpu = A.FakeAmdGpu(temps={A.AmdSmiTemperatureType.HOTSPOT: {0: 108, 5: 110}})
    f = one(evaluate(snap(A.FakeAmdSmi([gpu]))), "gpu.temperature")
    assert "slowdown 110 °C, shutdown n/a (card's own thresholds)" in f.detail, f.detail


def test_no_gpu_names_why_amdsmi_found_none_too() -> None:
    """QA 15: on an AMD machine without amdsmi, "no GPU found" gave only NVML's reason
    (nvidia-ml-py not importable), never that amdsmi was missing."""
    s = dataclasses.replace(
        detect(nvml=F.FakeNVML(init_error=F.INIT_FAILURES["library_not_found"]), amdsmi=None, probe=False),
        torch=None,
        frameworks=[],
    )
    f = one(evaluate(s), "system.no_gpu")
    assert "NVML: " in f.detail and "amdsmi: amdsmi is not installed" in f.detail, f.detail


@pytest.mark.parametrize(
    ("build", "what"),
    [
        ({"cpu_only_build": True}, "a CPU-only build"),
        ({"built_cuda": "12.6", "cpu_only_build": False}, "a CUDA 12.6 build"),
    ],
)
def test_a_torch_that_cannot_use_amd_gpus_is_told_to_install_the_rocm_build(
    build: dict[str, object], what: str
) -> None:
    """QA 15: on an AMD machine a CPU-only or CUDA torch got only "check the torch build (ROCm vs
    CPU)"; the build is known, so the remedy says which to install, and never a CUDA wheel."""
    from gpuselect.hardware.types import FrameworkInfo

    torch = FrameworkInfo("torch", True, "2.13.0", probed=True, sees_gpu=False, **build)  # type: ignore[arg-type]
    s = dataclasses.replace(snap(A.mi250x_node()), torch=torch, frameworks=[torch])
    f = one(evaluate(s), "framework.torch.no_gpu")
    assert f.severity is Severity.CRITICAL and f.remedy is not None
    assert f"this torch is {what}, which cannot use AMD GPUs" in f.remedy, f.remedy
    assert "/whl/rocm" in f.remedy and "cu1" not in f.remedy, f.remedy
