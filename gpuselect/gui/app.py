"""The desktop app's entry: a main window titled "gpuselect" showing the detected hardware.

Detection runs in a worker thread (QThreadPool) so the window is usable at once; the result
arrives through a queued signal. The full GUI (benchmark, estimate, recommendation) is built on
the same core APIs as the CLI.
"""

from __future__ import annotations

import sys
import traceback

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal, Slot
from PySide6.QtGui import QFont, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class _DetectSignals(QObject):
    done = Signal(str, str)  # snapshot text, health text
    failed = Signal(str)


class DetectJob(QRunnable):
    """Detection + health off the GUI thread (py-cpuinfo / NVML / probes may take seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.signals = _DetectSignals()

    @Slot()
    def run(self) -> None:
        try:
            from gpuselect.hardware.snapshot import detect
            from gpuselect.hardware.text import format_health, format_snapshot
            from gpuselect.health.rules import evaluate

            snapshot = detect(probe=False)
            self.signals.done.emit(format_snapshot(snapshot), format_health(evaluate(snapshot)))
        except Exception as exc:  # noqa: BLE001 - errors show in the window, never crash it
            traceback.print_exc()
            self.signals.failed.emit(f"Detection failed: {type(exc).__name__}: {exc}")


class MainWindow(QMainWindow):
    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("gpuselect")
        self.resize(900, 640)
        central = QWidget(self)
        layout = QVBoxLayout(central)
        self.status_label = QLabel("Detecting hardware…", central)
        self.status_label.setAccessibleName("Detection status")
        self.hardware_view = QPlainTextEdit(central)
        self.hardware_view.setReadOnly(True)
        self.hardware_view.setAccessibleName("Detected hardware and health findings")
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.hardware_view.setFont(mono)
        self.refresh_button = QPushButton("&Refresh", central)
        self.refresh_button.setShortcut(QKeySequence.StandardKey.Refresh)
        self.refresh_button.setAccessibleName("Refresh hardware detection")
        self.refresh_button.clicked.connect(self.refresh)
        layout.addWidget(self.status_label)
        layout.addWidget(self.hardware_view, 1)
        layout.addWidget(self.refresh_button, 0, Qt.AlignmentFlag.AlignRight)
        self.setCentralWidget(central)
        self._pool = QThreadPool.globalInstance()
        self._job: DetectJob | None = None

    @Slot()
    def refresh(self) -> None:
        if self._job is not None:
            return
        self.status_label.setText("Detecting hardware…")
        self.refresh_button.setEnabled(False)
        job = DetectJob()
        job.signals.done.connect(self._on_done)
        job.signals.failed.connect(self._on_failed)
        self._job = job
        self._pool.start(job)

    @Slot(str, str)
    def _on_done(self, hardware: str, health: str) -> None:
        self.hardware_view.setPlainText(hardware + "\n\nHealth\n" + health)
        self.status_label.setText("Hardware detected.")
        self._finish()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.status_label.setText(message)
        self._finish()

    def _finish(self) -> None:
        self._job = None
        self.refresh_button.setEnabled(True)

    def wait_for_workers(self, msecs: int = 10_000) -> bool:
        return self._pool.waitForDone(msecs)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt naming
        self.wait_for_workers()
        super().closeEvent(event)


def run_app(quit_after_s: float | None = None) -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("gpuselect")
    window = MainWindow()
    window.show()
    QTimer.singleShot(0, window.refresh)
    if quit_after_s is not None:
        QTimer.singleShot(int(quit_after_s * 1000), window.close)
    return int(app.exec())
