"""amdsmi is optional and fails softly: without ROCm its import raises KeyError and prints."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuselect.hardware.amd import detect_amd


def test_broken_amdsmi_import_keeps_stdout_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "amdsmi.py").write_text(
        "print('ROCm libraries not found, amdsmi disabled')\nraise KeyError('ROCM_PATH')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    status, gpus = detect_amd()
    out = capfd.readouterr().out
    assert out == ""
    assert not status.available and "KeyError" in (status.error or "") and gpus == []


def test_missing_amdsmi_is_a_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import raises ModuleNotFoundError
    status, gpus = detect_amd()
    assert not status.available and "not installed" in (status.error or "") and gpus == []


def test_fake_amdsmi_gpu_and_a_failing_field() -> None:
    def asic(h):
        return {"market_name": "AMD Instinct MI300X"}

    def bdf(h):
        return "0000:0c:00.0"

    def broken(h):
        raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")

    fake = SimpleNamespace(
        amdsmi_init=lambda: None,
        amdsmi_shut_down=lambda: None,
        amdsmi_get_processor_handles=lambda: ["h0"],
        amdsmi_get_gpu_asic_info=asic,
        amdsmi_get_gpu_device_bdf=bdf,
        amdsmi_get_gpu_device_uuid=broken,
        amdsmi_get_gpu_vram_usage=lambda h: {"vram_total": 196_592, "vram_used": 283},
        amdsmi_get_power_info=broken,
    )
    status, (g,) = detect_amd(fake)
    assert status.available and g.name == "AMD Instinct MI300X" and g.vendor == "AMD"
    assert g.memory_total_bytes == 196_592 * 1024 * 1024
    assert g.uuid is None and "NOT_SUPPORTED" in g.unavailable["uuid"]


@pytest.mark.parametrize(
    ("power", "draw", "limit"),
    [
        # amdsmi 6.4-7.1: the limit in watts; MI300's average_socket_power is "N/A"
        ({"average_socket_power": "N/A", "current_socket_power": 312, "power_limit": 750}, 312.0, 750.0),
        ({"average_socket_power": 280, "current_socket_power": 300, "power_limit": 750_000_000}, 280.0, 750.0),
    ],
)
def test_amd_power_in_watts_or_microwatts_and_na_average(power: dict[str, object], draw: float, limit: float) -> None:
    """A limit in watts was dropped (kept only above 10,000, as microwatts), and "N/A" beat a number."""
    fake = SimpleNamespace(
        amdsmi_init=lambda: None,
        amdsmi_shut_down=lambda: None,
        amdsmi_get_processor_handles=lambda: ["h0"],
        amdsmi_get_gpu_asic_info=lambda h: {"market_name": "AMD Instinct MI300X"},
        amdsmi_get_power_info=lambda h: power,
    )
    _status, (g,) = detect_amd(fake)
    assert g.power_draw_w == draw and g.power_limit_w == limit
    from gpuselect.hardware.text import gpu_lines

    assert "Genn/a" not in "\n".join(gpu_lines(g))


# --- the fake amdsmi module (tests/fakes/fake_amdsmi.py): the real mapping code runs ---------

from tests.fakes import fake_amdsmi as A  # noqa: E402 - the tests above need only SimpleNamespace


def test_normal_mi300x_every_reading() -> None:
    fake = A.FakeAmdSmi()
    status, (g,) = detect_amd(fake)
    assert status.available and status.error is None
    assert g.name == "AMD Instinct MI300X" and g.serial == "692315000123"
    # hotspot, as MI300 has no edge sensor; limits from CRITICAL / EMERGENCY
    assert (g.temperature_c, g.temperature_sensor) == (45, "hotspot")
    th = g.temperature_thresholds
    assert (th.slowdown_c, th.shutdown_c, th.memory_max_c) == (110, 115, 95)
    assert g.memory_temperature_c == 38
    assert g.power_draw_w == 312.0 and g.power_limit_w == 750.0
    assert g.power_default_limit_w == 750.0 and g.power_max_limit_w == 750.0  # from microwatts
    assert (g.clocks.sm_mhz, g.clocks.sm_max_mhz, g.clocks.memory_mhz) == (2100, 2100, 1300)
    assert (g.pcie.generation, g.pcie.width, g.pcie.max_generation, g.pcie.max_width) == (5, 16, 5, 16)
    assert g.utilization.gpu_percent == 0
    assert g.ecc.enabled is True and g.ecc.uncorrected_volatile == 0 and g.ecc.corrected_volatile == 0
    assert g.ecc.retired_pages_double_bit == 0 and g.ecc.retired_pages_threshold is None  # "N/A" without root
    assert g.memory_used_bytes == 283 * 1024 * 1024 and g.processes == []
    for field in ("temperature_c", "pcie.generation", "ecc.enabled", "power_limit_w", "clocks.sm_mhz"):
        assert field not in g.unavailable, g.unavailable[field]
    assert fake.initialised == 0, "amdsmi must be shut down after detection"


def test_a_raising_metric_leaves_only_that_metric_unknown_and_says_why_once() -> None:
    gpu = A.FakeAmdGpu(errors={"amdsmi_get_temp_metric": A.AMDSMI_STATUS_DRM_ERROR})
    status, (g,) = detect_amd(A.FakeAmdSmi([gpu]))
    assert status.available
    assert g.temperature_c is None and g.memory_temperature_c is None
    # hotspot, edge, VRAM and the limits each failed: the error is said once, where it matters
    said = "\n".join(g.unavailable.values())
    assert said.count("DRM_ERROR") == 1 and "DRM_ERROR" in g.unavailable["temperature_c"]
    assert g.unavailable["memory_temperature_c"] == "the same error as temperature_c"
    # everything else still read
    assert g.pcie.generation == 5 and g.power_draw_w == 312.0 and g.ecc.uncorrected_volatile == 0


def test_a_metric_raising_a_non_amdsmi_exception_is_contained() -> None:
    gpu = A.FakeAmdGpu(crashes={"amdsmi_get_pcie_info": KeyError, "amdsmi_get_gpu_total_ecc_count": ValueError})
    status, (g,) = detect_amd(A.FakeAmdSmi([gpu]))
    assert status.available and g.temperature_c == 45
    assert g.pcie.generation is None and "amdsmi_get_pcie_info failed" in g.unavailable["pcie.generation"]
    assert g.ecc.uncorrected_volatile is None and "ValueError" not in g.unavailable.get("ecc.enabled", "")


def test_amdsmi_init_failure_is_a_state() -> None:
    status, gpus = detect_amd(A.FakeAmdSmi(init_error=A.AMDSMI_STATUS_INIT_ERROR))
    assert not status.available and gpus == []
    assert "amdsmi_init failed" in (status.error or "") and "INIT_ERROR" in (status.error or "")


def test_degraded_pcie_link_and_activity_are_read() -> None:
    gpu = A.FakeAmdGpu(pcie=(8_000, 8, 32_000, 16), activity=(97, 40))
    _status, (g,) = detect_amd(A.FakeAmdSmi([gpu]))
    assert (g.pcie.generation, g.pcie.width, g.pcie.max_generation, g.pcie.max_width) == (3, 8, 5, 16)
    assert (g.utilization.gpu_percent, g.utilization.memory_percent) == (97, 40)


def test_mi250x_gcds_sharing_a_board_serial_are_labelled_per_card() -> None:
    from gpuselect.hardware.text import gpu_lines

    _status, gpus = detect_amd(A.mi250x_node())
    assert [g.card_label for g in gpus] == ["GCD 0 of card 0", "GCD 1 of card 0", "GCD 0 of card 1", "GCD 1 of card 1"]
    assert [g.physical_card for g in gpus] == [0, 0, 1, 1]
    assert gpu_lines(gpus[1])[0].endswith("— GCD 1 of card 0")
    # edge and hotspot both there: hotspot wins, it is the one the firmware throttles on
    assert gpus[0].temperature_sensor == "hotspot"


@pytest.mark.parametrize("serials", [["N/A"] * 4, ["", "", "", ""], ["a", "b", "c", "d"]])
def test_no_grouping_without_a_shared_serial(serials: list[str]) -> None:
    _status, gpus = detect_amd(A.mi250x_node(serials))
    assert [g.card_label for g in gpus] == [None] * 4 and all(g.physical_card is None for g in gpus)


def test_amdsmi_messages_are_one_line() -> None:
    """QA 15: amdsmi's library text carries raw newlines and tabs into the finding's detail."""

    class Multiline(A.FakeAmdSmi):  # type: ignore[misc]
        def amdsmi_init(self, *args: object) -> None:
            raise RuntimeError("Error code:\n\t34\nAMDSMI_STATUS_DRIVER_NOT_LOADED\n")

    status, _ = detect_amd(Multiline([]))
    assert status.error == "amdsmi_init failed: Error code: 34 AMDSMI_STATUS_DRIVER_NOT_LOADED"


def test_an_amd_card_is_described_in_amds_words() -> None:
    """QA 15: `gpuselect detect` showed an MI300X's "SM" clock and "compute capability n/a" (CUDA's
    words); amdsmi reads the GFX clock and the card has no compute capability."""
    from gpuselect.hardware.text import gpu_lines
    from gpuselect.hardware.types import GpuInfo

    _, (g,) = detect_amd(A.FakeAmdSmi())
    text = "\n".join(gpu_lines(g))
    assert "clocks: GFX 2100/2100 MHz" in text and "SM " not in text and "compute capability" not in text, text
    nvidia = GpuInfo(index=0, vendor="NVIDIA", name="H100", source="nvml", compute_capability="9.0")
    assert "compute capability 9.0" in "\n".join(gpu_lines(nvidia))
