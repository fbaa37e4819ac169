"""NVML detection against the scenario-driven fake binding: the real mapping code runs."""

from __future__ import annotations

import pytest

from gpuselect.hardware.nvidia import decode_clock_event_reasons, detect_nvidia, normalise_bus_id, read_telemetry
from tests.fakes import fake_nvml as F

GIB = 1024**3


def test_healthy_card_fields() -> None:
    fake = F.healthy()
    status, gpus = detect_nvidia(fake)
    assert status.available and status.driver_version == "550.54.15"
    assert status.cuda_driver_version == "12.4"
    (g,) = gpus
    assert g.state == "ok" and g.name == "NVIDIA H100 80GB HBM3"
    assert g.uuid == "GPU-11111111-2222-3333-4444-555555555555"
    assert g.pci_bus_id == "0000:3b:00.0"  # normalised from NVML's 8-digit domain, bytes
    assert g.memory_total_bytes == 80 * GIB and g.memory_used_bytes == 1 * GIB
    assert g.compute_capability == "9.0"
    assert g.temperature_c == 40
    assert (g.temperature_thresholds.slowdown_c, g.temperature_thresholds.shutdown_c) == (89, 92)
    assert g.power_draw_w == 70.0 and g.power_limit_w == 700.0 and g.power_default_limit_w == 700.0
    assert g.clocks.sm_mhz == 1980 and g.clocks.memory_max_mhz == 2619
    assert (g.pcie.generation, g.pcie.width, g.pcie.max_generation, g.pcie.max_width) == (5, 16, 5, 16)
    assert g.clock_event_reasons == ["gpu_idle"]
    assert g.ecc.enabled is True and g.ecc.uncorrected_volatile == 0
    assert g.ecc.remapped_rows_failure is False
    assert g.processes == []
    # A fan the card does not have is unavailable with a reason, not zero.
    assert g.fan_percent is None and "not supported" in g.unavailable["fan_percent"]
    assert fake.initialised == 0, "NVML must be shut down after detection"


def test_threshold_field_values_are_relative_margins() -> None:
    _, (g,) = detect_nvidia(F.healthy())
    th = g.temperature_thresholds
    assert (th.shutdown_tlimit_c, th.slowdown_tlimit_c) == (-8, -2)
    assert (th.shutdown_c, th.slowdown_c, th.gpu_max_c) == (92, 89, 87)  # absolute call wins
    assert g.temperature_margin_c == 47  # 87 °C limit - 40 °C now


def test_absolute_thresholds_derived_from_limit_and_margins() -> None:
    # Old call answers only the GPU-max limit: absolute = limit - margin (as seen on an H100).
    fake = F.FakeNVML([F.FakeGpu(thresholds={3: 87})])
    _, (g,) = detect_nvidia(fake)
    assert (g.temperature_thresholds.slowdown_c, g.temperature_thresholds.shutdown_c) == (89, 95)
    assert "temperature_thresholds.slowdown_c" not in g.unavailable


def test_relative_only_gpu_keeps_margins() -> None:
    _, (g,) = detect_nvidia(F.relative_thresholds_only())
    assert g.temperature_thresholds.slowdown_c is None and g.temperature_thresholds.slowdown_tlimit_c == -2
    assert g.temperature_margin_c == 5


def test_two_gpus_one_lost_the_other_still_shows() -> None:
    _, gpus = detect_nvidia(F.two_gpus_one_lost())
    assert [g.state for g in gpus] == ["ok", "lost"]
    assert gpus[0].name == "NVIDIA H100 80GB HBM3" and gpus[0].temperature_c == 40
    assert "lost" in gpus[1].unavailable["name"]


def test_handle_failure_marks_only_that_gpu() -> None:
    fake = F.FakeNVML([F.FakeGpu(handle_error=F.GPU_IS_LOST), F.FakeGpu(uuid="GPU-b")])
    _, gpus = detect_nvidia(fake)
    assert gpus[0].state == "lost" and gpus[1].state == "ok"


def test_everything_unsupported_gives_nulls_with_reasons_never_a_crash() -> None:
    _, (g,) = detect_nvidia(F.everything_unsupported())
    assert g.state == "ok"
    for attr in ("name", "uuid", "memory_total_bytes", "temperature_c", "power_draw_w", "compute_capability"):
        assert getattr(g, attr) is None
        assert "not supported" in g.unavailable[attr]
    assert g.clocks.sm_mhz is None and "clocks.sm_mhz" in g.unavailable
    assert g.pcie.generation is None and g.clock_event_reasons is None and g.processes is None


def test_old_driver_falls_back_to_throttle_reasons() -> None:
    fake = F.old_driver()
    _, (g,) = detect_nvidia(fake)
    assert g.clock_event_reasons == ["gpu_idle", "sw_power_cap"]
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in fake.calls
    assert "clock_event_reasons" not in g.unavailable


def test_binding_missing_a_function_is_reported_not_raised() -> None:
    fake = F.FakeNVML([F.FakeGpu(missing={"nvmlDeviceGetRemappedRows"})])
    _, (g,) = detect_nvidia(fake)
    assert g.ecc.remapped_rows_failure is None
    assert "nvmlDeviceGetRemappedRows" in g.unavailable["ecc.remapped_rows"]


def test_ecc_and_retired_pages_are_read() -> None:
    _, (g,) = detect_nvidia(F.ecc_and_retired_pages())
    assert g.ecc.uncorrected_volatile == 2 and g.ecc.uncorrected_aggregate == 5
    assert g.ecc.retired_pages_single_bit == 40 and g.ecc.retired_pages_double_bit == 30
    assert g.ecc.retired_pages_pending is True


def test_processes_and_names() -> None:
    _, (g,) = detect_nvidia(F.memory_held_by_others())
    assert [(p.pid, p.used_memory_bytes) for p in g.processes or []] == [(4242, 20 * GIB), (4343, 9 * GIB)]
    assert all(p.name for p in g.processes or [])


@pytest.mark.parametrize(("name", "code"), sorted(F.INIT_FAILURES.items()))
def test_init_failures_map_to_reasons(name: str, code: int) -> None:
    status, gpus = detect_nvidia(F.FakeNVML(init_error=code))
    assert not status.available and gpus == []
    assert status.error_code == code
    assert status.error and "NVML error code" not in status.error


def test_init_failure_wording() -> None:
    status, _ = detect_nvidia(F.FakeNVML(init_error=F.INIT_FAILURES["lib_rm_version_mismatch"]))
    assert "different versions" in (status.error or "")
    status, _ = detect_nvidia(F.FakeNVML(init_error=F.INIT_FAILURES["library_not_found"]))
    assert "no NVIDIA driver installed" in (status.error or "")


@pytest.mark.real_gpu_driver
def test_real_binding_without_driver_is_a_state_not_an_error() -> None:
    # On CI and here there is no libnvidia-ml: the real pynvml must yield "unavailable".
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        status, gpus = detect_nvidia()
        assert not status.available and gpus == [] and status.error
    else:  # a machine with a driver: detection must work for real
        pynvml.nvmlShutdown()
        status, gpus = detect_nvidia()
        assert status.available


def test_telemetry_by_uuid() -> None:
    tel = read_telemetry(F.two_gpus_one_lost())
    assert list(tel) == ["GPU-11111111-2222-3333-4444-555555555555"]
    assert tel["GPU-11111111-2222-3333-4444-555555555555"]["power_draw_w"] == 70.0
    assert read_telemetry(F.FakeNVML(init_error=F.INIT_FAILURES["driver_not_loaded"])) == {}


def test_decode_clock_event_reasons() -> None:
    assert decode_clock_event_reasons(0) == []
    assert decode_clock_event_reasons(0x44) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_clock_event_reasons(0x800) == ["other_0x800"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("00000000:3B:00.0", "0000:3b:00.0"), ("0000:3b:00.0", "0000:3b:00.0"), ("00000001:AF:00.0", "0001:af:00.0")],
)
def test_bus_id_normalisation(raw: str, expected: str) -> None:
    assert normalise_bus_id(raw) == expected


def test_telemetry_session_initialises_nvml_once_for_many_reads() -> None:
    from gpuselect.hardware.nvidia import TelemetrySession

    fake = F.h100x8()
    with TelemetrySession(fake) as session:
        readings = [session.read() for _ in range(5)]
        assert fake.initialised == 1
    assert fake.calls.count("nvmlInit") == 1 and fake.initialised == 0  # shut down once, at close
    assert all(len(r) == 8 for r in readings)
    gpu3 = readings[-1]["GPU-h100aaaa-0000-4000-8000-000000000003"]
    assert gpu3["index"] == 3 and gpu3["memory_used_bytes"] == 60 * F.GIB and gpu3["processes"] == 1
    assert gpu3["power_limit_w"] == 700.0 and gpu3["pcie_generation"] == 5 and gpu3["pcie_width"] == 16
    assert session.read() == {}  # closed: no readings, no exception


def test_telemetry_session_without_a_driver_says_why() -> None:
    from gpuselect.hardware.nvidia import TelemetrySession

    session = TelemetrySession(F.FakeNVML(init_error=F.INIT_FAILURES["driver_not_loaded"]))
    assert not session.open() and "not loaded" in (session.error or "")
    assert session.read() == {}
    session.close()
