"""The desktop app: Hardware, Benchmark and Estimate pages in one window.

Everything slow runs in workers (detection in the thread pool, benchmark and estimates in
GeneratorWorker threads); window geometry, the open page and the estimate inputs persist in
QSettings. The pages compute nothing the CLI cannot: they call the same core functions.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QSettings, QThreadPool, QTimer, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QFileDialog, QMainWindow, QMessageBox, QTabWidget

from gpuselect.gui.pages.bench import BenchPage
from gpuselect.gui.pages.estimate import EstimatePage
from gpuselect.gui.pages.hardware import HardwarePage

ORG, APP = "gpuselect", "gpuselect"


class MainWindow(QMainWindow):
    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("gpuselect")
        self.resize(1200, 800)
        self.tabs = QTabWidget()
        self.hardware = HardwarePage()
        self.bench = BenchPage()
        self.estimate = EstimatePage()
        self.tabs.addTab(self.hardware, "&Hardware")
        self.tabs.addTab(self.bench, "&Benchmark")
        self.tabs.addTab(self.estimate, "&Estimate")
        self.setCentralWidget(self.tabs)
        self.hardware.detected.connect(self._on_detected)
        refresh = QAction("&Refresh hardware", self, shortcut=QKeySequence.StandardKey.Refresh, triggered=self.hardware.refresh)
        quit_ = QAction("&Quit", self, shortcut=QKeySequence.StandardKey.Quit, triggered=self.close)
        self.export_action = QAction("&Export PDF report…", self, shortcut=QKeySequence("Ctrl+E"), triggered=self.export_report)
        menu = self.menuBar().addMenu("&File")
        menu.addAction(refresh)
        menu.addAction(self.export_action)
        menu.addSeparator()
        menu.addAction(quit_)
        self.settings = QSettings(ORG, APP)
        self._restore()
        self.snapshot: object = None
        self._export_worker: object = None

    @Slot()
    def export_report(self, path: str | None = None) -> None:
        """Build the report from what the pages hold (hardware, last benchmark, current estimate)
        and write it in a worker; the same builder as `gpuselect report`."""
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export report", "gpuselect-report.pdf", "PDF (*.pdf);;Markdown (*.md);;JSON (*.json)")
            if not path:
                return
        from gpuselect.gui.workers import GeneratorWorker, call_in_generator

        snapshot, bench, result = self.snapshot, self.bench.report, self.estimate.result
        redact = bool(self.settings.value("report/redact", False, type=bool))

        def work() -> str:
            from gpuselect.catalog import load_catalog
            from gpuselect.hardware.snapshot import detect
            from gpuselect.health.rules import evaluate
            from gpuselect.report.model import build_report
            from gpuselect.report.writers import write

            snap = snapshot if snapshot is not None else detect(probe=False)
            extra = []
            if bench is not None:
                from gpuselect.bench.findings import bench_findings

                extra = bench_findings(bench)
            from pathlib import Path

            fmt = {".md": "md", ".json": "json"}.get(Path(path).suffix.lower(), "pdf")
            report = build_report(snap, evaluate(snap, extra), bench=bench, estimate=result, redact=redact, catalog=load_catalog())
            return str(write(report, path, fmt))

        worker = GeneratorWorker(call_in_generator(work), self)
        worker.finished.connect(lambda p: self.statusBar().showMessage(f"Report written to {p}", 10_000))
        worker.failed.connect(lambda m: QMessageBox.warning(self, "Export failed", f"The report could not be written: {m}"))
        self._export_worker = worker
        self.statusBar().showMessage("Writing the report…")
        worker.start()

    # The hardware page's detected machine also anchors "your machine" in the estimates.
    @Slot(object)
    def _on_detected(self, snapshot: object) -> None:
        self.snapshot = snapshot
        self.estimate.local_snapshot = snapshot
        self.estimate.recompute()

    def _restore(self) -> None:
        s = self.settings
        geometry = s.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        self.tabs.setCurrentIndex(int(s.value("window/tab", 0) or 0))
        e = self.estimate
        e.precision.setCurrentText(str(s.value("estimate/precision", "bf16")))
        e.deadline.setValue(float(s.value("estimate/deadline_hours", 72.0)))
        e.budget.setValue(float(s.value("estimate/budget_usd", 0.0)))
        e.electricity.setValue(float(s.value("estimate/electricity_usd_per_kwh", 0.15)))

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/tab", self.tabs.currentIndex())
        e = self.estimate
        s.setValue("estimate/precision", e.precision.currentText())
        s.setValue("estimate/deadline_hours", e.deadline.value())
        s.setValue("estimate/budget_usd", e.budget.value())
        s.setValue("estimate/electricity_usd_per_kwh", e.electricity.value())
        s.sync()

    def wait_for_workers(self, msecs: int = 10_000) -> bool:
        return QThreadPool.globalInstance().waitForDone(msecs)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt naming
        self.save_settings()
        self.hardware.stop()
        self.bench.shutdown()
        self.estimate.shutdown()
        self.wait_for_workers()
        super().closeEvent(event)


def run_app(quit_after_s: float | None = None) -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    window = MainWindow()
    window.show()
    QTimer.singleShot(0, window.hardware.refresh)
    QTimer.singleShot(0, window.estimate.recompute)
    if quit_after_s is not None:
        QTimer.singleShot(int(quit_after_s * 1000), window.close)
    return int(app.exec())
