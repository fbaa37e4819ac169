"""The minimal main window: titled "gpuselect", detection off the GUI thread, errors shown."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")

from gpuselect.gui.app import MainWindow  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402
from tests.fakes import fake_nvml as F  # noqa: E402


def test_window_shows_detected_hardware(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = F.thermal_throttling()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    assert w.windowTitle() == "gpuselect"
    w.refresh()
    assert not w.refresh_button.isEnabled()  # busy while the worker runs
    qtbot.waitUntil(lambda: w.refresh_button.isEnabled(), timeout=10_000)
    text = w.hardware_view.toPlainText()
    assert "NVIDIA H100 80GB HBM3" in text and "CRITICAL" in text
    assert w.status_label.text() == "Hardware detected."
    w.wait_for_workers()


def test_detection_error_shows_in_window(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**_: object) -> None:
        raise RuntimeError("psutil exploded")

    monkeypatch.setattr("gpuselect.hardware.snapshot.detect", broken)
    w = MainWindow()
    qtbot.addWidget(w)
    w.refresh()
    qtbot.waitUntil(lambda: w.refresh_button.isEnabled(), timeout=10_000)
    assert "Detection failed" in w.status_label.text() and "psutil exploded" in w.status_label.text()
    w.wait_for_workers()


def test_entry_point_launches_and_closes() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, "-m", "gpuselect", "gui", "--quit-after", "1.5"],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
