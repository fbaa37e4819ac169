"""Hardware page: CPU, RAM, every GPU, health findings with remedies, and a live GPU monitor."""

from __future__ import annotations

import collections
import time
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal, Slot
from PySide6.QtWidgets import QHeaderView, QLabel, QPlainTextEdit, QSplitter, QTableView, QVBoxLayout, QWidget

from gpuselect.gui.models import FindingsModel
from gpuselect.gui.plots import themed_plot

HISTORY_S = 300
MONITOR_INTERVAL_MS = 2000


class _Signals(QObject):
    done = Signal(object, object)  # snapshot, health report
    failed = Signal(str)
    telemetry = Signal(object)


class DetectJob(QRunnable):
    def __init__(self) -> None:
        super().__init__()
        self.signals = _Signals()

    @Slot()
    def run(self) -> None:
        try:
            from gpuselect.hardware.snapshot import detect
            from gpuselect.health.rules import evaluate

            snap = detect(probe=False)
            self.signals.done.emit(snap, evaluate(snap))
        except Exception as exc:  # noqa: BLE001 - shown in the window
            self.signals.failed.emit(f"Detection failed: {type(exc).__name__}: {exc}")


class TelemetryJob(QRunnable):
    def __init__(self, signals: _Signals) -> None:
        super().__init__()
        self.signals = signals

    @Slot()
    def run(self) -> None:
        from gpuselect.hardware.nvidia import read_telemetry

        self.signals.telemetry.emit(read_telemetry())


class HardwarePage(QWidget):
    detected = Signal(object)  # the snapshot, for other pages

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.status = QLabel("Detecting hardware…")
        self.status.setAccessibleName("Detection status")
        self.summary = QPlainTextEdit(readOnly=True)
        self.summary.setAccessibleName("Detected hardware")
        self.summary.setToolTip(
            "VRAM: the GPU's own memory, which bounds model and batch size.\n"
            "PCIe GenN xW: the link to the CPU — generation (speed per lane) and width (lanes); links slow down at idle.\n"
            "Throttle reasons: why the driver is holding the clocks down right now."
        )
        self.findings = FindingsModel(self)
        self.table = QTableView()
        self.table.setModel(self.findings)
        self.table.setAccessibleName("Health findings")
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.plot = themed_plot(title="GPU utilisation (%) and temperature (°C), last 5 minutes", bottom="seconds ago")
        self.plot.setToolTip("Live readings from the NVIDIA driver every 2 s while the window is open")
        self.plot2 = themed_plot(title="GPU power (W) and SM clock (MHz / 10), last 5 minutes", bottom="seconds ago")
        self.plot2.setToolTip("Power falling with the clock under load points at a power cap; see the throttle findings")
        self._curves: dict[str, Any] = {}
        self._history: dict[str, collections.deque[tuple[float, float | None, float | None, float | None, float | None]]] = {}
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.summary)
        split.addWidget(self.table)
        split.addWidget(self.plot)
        split.addWidget(self.plot2)
        lay = QVBoxLayout(self)
        lay.addWidget(self.status)
        lay.addWidget(split, 1)
        self._pool = QThreadPool.globalInstance()
        self._tsig = _Signals()
        self._tsig.telemetry.connect(self._on_telemetry)
        self._timer = QTimer(self)
        self._timer.setInterval(MONITOR_INTERVAL_MS)
        self._timer.timeout.connect(self._sample)
        self._busy = False
        self._polling = False
        self.telemetry_updates = 0  # readings drawn so far (the soak test counts them)

    def set_monitor_interval(self, msecs: int) -> None:
        """How often the live monitor samples (2 s by default; the soak test runs it faster)."""
        self._timer.setInterval(msecs)

    @Slot()
    def refresh(self) -> None:
        if self._busy:
            return
        self._busy = True
        self.status.setText("Detecting hardware…")
        job = DetectJob()
        job.signals.done.connect(self._on_done)
        job.signals.failed.connect(self._on_failed)
        self._pool.start(job)

    @Slot(object, object)
    def _on_done(self, snap: Any, report: Any) -> None:
        from gpuselect.hardware.text import format_snapshot

        self._busy = False
        self.summary.setPlainText(format_snapshot(snap))
        self.findings.set_rows(report.findings)
        c = report.counts
        self.status.setText(f"{len(snap.gpus)} GPU(s). Health: {c.get('critical', 0)} critical, {c.get('warning', 0)} warning(s), "
                            f"{c.get('info', 0)} info, {c.get('ok', 0)} passed.")
        self.detected.emit(snap)
        has_gpu = any(g.source == "nvml" for g in snap.gpus)
        self.plot.setVisible(has_gpu)  # nothing to monitor: no empty charts
        self.plot2.setVisible(has_gpu)
        if has_gpu:
            self._timer.start()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._busy = False
        self.status.setText(message)

    @Slot()
    def _sample(self) -> None:
        if not self._polling:
            self._polling = True
            self._pool.start(TelemetryJob(self._tsig))

    @Slot(object)
    def _on_telemetry(self, readings: dict[str, dict[str, Any]]) -> None:
        self._polling = False
        self.telemetry_updates += 1
        now = time.monotonic()
        for uuid, r in readings.items():
            hist = self._history.setdefault(uuid, collections.deque(maxlen=HISTORY_S // 2 + 1))
            clock = r.get("sm_clock_mhz")
            hist.append((now, r.get("utilization_percent"), r.get("temperature_c"), r.get("power_draw_w"),
                         clock / 10.0 if clock is not None else None))
            xs = [v[0] - now for v in hist]
            for i, label, plot in ((1, "util %", self.plot), (2, "temp °C", self.plot), (3, "power W", self.plot2), (4, "SM MHz/10", self.plot2)):
                ys = [v[i] if v[i] is not None else float("nan") for v in hist]
                key = f"{uuid}-{label}"
                if key not in self._curves:
                    self._curves[key] = plot.plot(pen=(i, 5), name=f"gpu{r.get('index')} {label}")
                self._curves[key].setData(xs, ys)

    def stop(self) -> None:
        self._timer.stop()
