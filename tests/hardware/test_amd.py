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
