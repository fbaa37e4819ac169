"""Closing the window while a worker runs: every worker is cancelled or allowed to finish and
waited for; the process exits cleanly (a QThread destroyed while running aborts with 134)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

pytest.importorskip("PySide6")


def _run(tmp_path, *args: str) -> dict[str, object]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.gui.close_during_work", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=180,
    )
    assert done.returncode == 0, f"rc {done.returncode}:\n{done.stderr[-3000:]}"
    assert "Destroyed while thread" not in done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_close_during_export_waits_for_the_report(tmp_path) -> None:
    out = tmp_path / "closing.pdf"
    result = _run(tmp_path, "export", str(out))
    assert result["export_running_at_close"] is True  # the export was still running when the window closed
    assert result["live_after_close"] == 0
    assert result["report_written"] is True and out.read_bytes().startswith(b"%PDF")


@pytest.mark.slow
def test_close_during_benchmark_cancels_it(tmp_path) -> None:
    result = _run(tmp_path, "bench")
    assert result["live_at_close"] >= 1 and result["live_after_close"] == 0, result
    assert result["close_s"] < 30  # cancelled, not run to the end (the full CPU run takes about a minute)
    assert result.get("asked") == "A benchmark is running — quit anyway?", result  # answered Yes


def test_registry_tracks_workers_in_process(qtbot) -> None:
    import threading

    from gpuselect.gui.workers import GeneratorWorker, live_workers, shutdown_all

    release = threading.Event()

    def make(cancel: threading.Event):
        while not cancel.is_set() and not release.is_set():
            cancel.wait(0.01)
            yield None
        return "stopped"

    a, b = GeneratorWorker(make), GeneratorWorker(make)
    a.start()
    b.start()
    assert set(live_workers()) >= {a, b}
    assert shutdown_all(10_000)
    assert a not in live_workers() and b not in live_workers()


def test_no_worker_starts_after_the_window_closed(qtbot) -> None:
    import threading

    from gpuselect.gui.app import MainWindow
    from gpuselect.gui.workers import GeneratorWorker, live_workers

    w = MainWindow()
    qtbot.addWidget(w)
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=30_000)

    def make(cancel: threading.Event):
        yield None
        return "late"

    late = GeneratorWorker(make, w.estimate)  # what a slot running after close would start
    late.start()
    assert late.done and late not in live_workers()
