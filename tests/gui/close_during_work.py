"""Start work in the real window, close the window while it runs, let the process exit.

Run in a subprocess by tests/gui/test_close_during_work.py: a QThread destroyed while running
aborts the process (exit 134), which only a separate process can observe.

    python -m tests.gui.close_during_work export OUT.pdf   # close while the report is written
    python -m tests.gui.close_during_work bench            # close while the benchmark runs

Prints one JSON line: the workers still running after close, and whether the report exists.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    mode = argv[0]
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gpuselect.bench.model import BenchConfig
    from gpuselect.gui import workers
    from gpuselect.gui.app import MainWindow

    app = QApplication(sys.argv[:1])
    w = MainWindow()
    w.show()
    state: dict[str, object] = {}

    def answer_quit_prompt() -> None:
        """Yes on "A benchmark is running — quit anyway?" (the window asks during a benchmark)."""
        from PySide6.QtWidgets import QMessageBox

        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            state["asked"] = box.text()
            box.button(QMessageBox.StandardButton.Yes).click()

    def close_when_busy() -> None:
        if "live_at_close" in state:
            return  # two progress events can queue two calls before the first runs: close once
        state["live_at_close"] = len(workers.live_workers())
        state["bench_step_at_close"] = w.bench.step.text()  # says why, if the run already ended
        export = w._export_worker
        state["export_running_at_close"] = export is not None and export._thread.isRunning()
        t0 = time.monotonic()
        QTimer.singleShot(0, answer_quit_prompt)  # the box runs its own loop: answered from there
        w.close()
        state["close_s"] = round(time.monotonic() - t0, 2)
        state["live_after_close"] = len(workers.live_workers())

    if mode == "export":
        import gpuselect.report.writers as writers

        real_write = writers.write

        def slow_write(*args: object, **kwargs: object) -> object:
            time.sleep(1.5)  # a large report on a slow disk: still writing when the window closes
            return real_write(*args, **kwargs)

        writers.write = slow_write
        out = Path(argv[1])
        w.export_to(str(out))
        QTimer.singleShot(300, close_when_busy)
    else:
        w.bench.config = BenchConfig(quick=False, devices=("cpu",))
        w.tabs.setCurrentWidget(w.bench)
        w.bench.start()
        # Close at the first progress event (torch loaded, the benchmark measuring).
        w.bench.worker.progress.connect(
            lambda _ev: "live_at_close" not in state and QTimer.singleShot(0, close_when_busy)
        )
    rc = int(app.exec())
    if mode == "export":
        state["report_written"] = Path(argv[1]).exists()
    else:
        state["bench_cancelled"] = w.bench.report is not None and bool(w.bench.report.cancelled)
    print(json.dumps({"rc": rc, **state}), flush=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
