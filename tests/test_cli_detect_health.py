"""The CLI contract for detect and health, on this machine and on every fake NVML scenario."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpuselect.cli import main
from tests.conftest import REPO_ROOT
from tests.fakes import fake_nvml as F

GPU_KEYS = {
    "index",
    "vendor",
    "name",
    "uuid",
    "pci_bus_id",
    "memory_total_bytes",
    "memory_used_bytes",
    "compute_capability",
    "temperature_c",
    "power_draw_w",
    "power_limit_w",
    "clocks",
    "pcie",
    "utilization",
    "ecc",
    "processes",
    "unavailable",
}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


def _check_detect_doc(doc: dict) -> None:
    assert doc["schema_version"] == 1 and doc["kind"] == "detect"
    for key in ("model", "logical_cores", "physical_cores", "max_mhz", "features"):
        assert key in doc["cpu"]
    assert doc["memory"]["total_bytes"] > 0 and doc["memory"]["available_bytes"] > 0
    for key in ("os", "python", "torch", "frameworks", "gpus"):
        assert key in doc
    for key in ("available", "driver_version", "cuda_driver_version", "error"):
        assert key in doc["nvml"]
    for gpu in doc["gpus"]:
        assert set(gpu) >= GPU_KEYS, GPU_KEYS - set(gpu)
        for k in ("sm_mhz", "sm_max_mhz", "memory_mhz", "memory_max_mhz"):
            assert k in gpu["clocks"]
        for k in ("generation", "max_generation", "width", "max_width"):
            assert k in gpu["pcie"]
        # null values carry a reason
        for k in ("name", "temperature_c", "power_draw_w", "compute_capability"):
            if gpu[k] is None and gpu["state"] == "ok":
                assert k in gpu["unavailable"], k


def test_detect_json_on_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, ["detect", "--format", "json", "--no-probe"])
    assert code == 0
    _check_detect_doc(doc)


@pytest.mark.parametrize("scenario", sorted(F.SCENARIOS))
def test_detect_and_health_json_on_every_scenario(
    scenario: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = F.SCENARIOS[scenario]()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    code, doc = _json(capsys, ["detect", "--format", "json", "--no-probe"])
    assert code == 0
    _check_detect_doc(doc)
    assert len(doc["gpus"]) == len(fake.gpus)
    code, health = _json(capsys, ["health", "--format", "json", "--no-probe"])
    assert health["kind"] == "health" and health["exit_code"] == code
    assert code in (0, 1, 3)
    for f in health["findings"]:
        assert {"id", "severity", "device", "value", "threshold", "title", "detail", "remedy"} <= set(f)


@pytest.mark.parametrize("name", sorted(F.INIT_FAILURES))
def test_init_failures_through_the_cli(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = F.FakeNVML(init_error=F.INIT_FAILURES[name])
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    code, doc = _json(capsys, ["detect", "--format", "json"])
    assert code == 0 and doc["nvml"]["available"] is False and doc["nvml"]["error"]
    assert doc["gpus"] == []


def test_health_exit_codes(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    codes = {}
    for scenario in ("thermal_throttling", "power_capped"):
        fake = F.SCENARIOS[scenario]()
        monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda fake=fake: fake)
        codes[scenario] = main(["health", "--no-probe"])
    capsys.readouterr()
    assert codes == {"thermal_throttling": 3, "power_capped": 1}


def test_text_output_names_severity_in_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = F.thermal_throttling()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    main(["health", "--no-probe"])
    out = capsys.readouterr().out
    assert "CRITICAL" in out and "what to do:" in out and "measured: 90 °C" in out


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["detect", "--format", "xml"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def _run(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "gpuselect", *args], capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=120
    )


def test_real_process_detect_json_stdout_is_one_document() -> None:
    done = _run("detect", "--format", "json")
    assert done.returncode == 0, done.stderr
    _check_detect_doc(json.loads(done.stdout))


def test_help_does_not_import_torch_or_qt() -> None:
    code = (
        "import sys, runpy\n"
        "sys.argv=['gpuselect','--help']\n"
        "try:\n    runpy.run_module('gpuselect', run_name='__main__')\n"
        "except SystemExit: pass\n"
        "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in {'torch','PySide6','pyqtgraph'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert "HEAVY []" in done.stdout, done.stdout[-500:]


def test_torch_probe_subprocess_reports_this_machine() -> None:
    from gpuselect.hardware.frameworks import probe_framework

    result = probe_framework("torch")
    assert "error" not in result, result
    # Against torch itself (the old `in (True, False)` could not fail for any probe result).
    truth = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert result["backends"]["cuda"] is (truth == "True")
    assert probe_framework("nosuchframework").get("error")


def test_gui_without_a_display_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    if not sys.platform.startswith("linux"):
        pytest.skip("display detection is Linux-specific")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "no display found" in err and "Traceback" not in err


def test_gui_without_qts_x11_libraries_names_them_and_the_packages(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # On a minimal Debian 12 Qt's xcb plugin aborted the process (SIGABRT) for want of libxcb-icccm4.
    import ctypes.util

    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    real = ctypes.util.find_library
    monkeypatch.setattr(ctypes.util, "find_library", lambda n: None if n == "xcb-icccm" else real(n) or f"lib{n}.so")
    if not sys.platform.startswith("linux"):
        pytest.skip("X11 libraries are looked up on Linux")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "xcb-icccm" in err and "sudo apt install libxcb-icccm4" in err
    # Where the lookup sees no X11 library at all it cannot tell: it leaves Qt to try.
    monkeypatch.setattr(ctypes.util, "find_library", lambda n: None)
    from gpuselect.commands.gui import _missing_xcb_libraries

    assert _missing_xcb_libraries() == []


def test_every_key_of_the_health_json_is_documented(capsys: pytest.CaptureFixture[str]) -> None:
    """The README names each key of `health --format json`: a dashboard reads them (none was said)."""
    _, doc = _json(capsys, ["health", "--format", "json", "--no-probe"])
    keys = {*doc, *(k for f in doc["findings"] for k in f), *doc["counts"]}
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert sorted(k for k in keys if f"`{k}`" not in text) == []
