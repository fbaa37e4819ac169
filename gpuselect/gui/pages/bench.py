"""Benchmark page: start, watch progress with time left, cancel; results against the spec and the
CPU-vs-GPU samples/s by batch size chart."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gpuselect.bench.model import BenchConfig
from gpuselect.bench.text import measured
from gpuselect.gui.models import Column, RowsModel
from gpuselect.gui.plots import GPU_COLOURS, side_legend, themed_plot
from gpuselect.gui.workers import GeneratorWorker


def torch_gpu_notice(snapshot: Any, report: Any = None) -> str | None:
    """A plain sentence when the machine has a GPU that torch cannot use (the benchmark then
    measures the CPU only); None when there is nothing to say."""
    if snapshot is None:
        return None
    gpus = [g for g in snapshot.gpus if g.vendor in ("NVIDIA", "AMD") and g.state == "ok"]
    if not gpus:
        return None
    names = ", ".join(sorted({g.name or "GPU" for g in gpus}))
    have = f"This machine has {len(gpus)} GPU{'s' if len(gpus) > 1 else ''} ({names})"
    t = snapshot.torch
    if t is None or not t.installed:
        return f"{have}, but torch is not installed, so nothing can be benchmarked on it. Install a CUDA or ROCm build of torch."
    if t.cpu_only_build:
        return (
            f"{have}, but the installed torch {t.version} is a CPU-only build: it cannot use the GPU, so the benchmark "
            "measures the CPU only. Install a CUDA (or ROCm) build of torch to benchmark the GPU."
        )
    if report is not None and not any(d.kind != "cpu" for d in report.devices):
        return (
            f"{have}, but torch {t.version} could not use it in this run, so only the CPU was measured "
            "(check the driver and CUDA version on the Hardware page)."
        )
    if t.probed and t.sees_gpu is False:
        return f"{have}, but torch {t.version} does not see it: check the driver and CUDA version on the Hardware page."
    return None


def result_rows(report: Any) -> list[tuple[str, str, float | None, str, float | None, str]]:
    """(device, figure, value, unit, % of spec, note) for the results table; what was skipped or
    backed off is listed with its reason, so a missing figure is never silent."""
    rows: list[tuple[Any, ...]] = []
    for d in report.devices:
        ratio = d.spec_ratio or {}
        for p, v in d.matmul_tflops.items():
            if v is not None:
                rows.append((d.device, f"matmul {p}", v, "TFLOP/s", ratio.get(f"matmul_{p}")))
        rows.append(
            (d.device, "memory bandwidth (copy)", d.memory_bandwidth_gbs, "GB/s", ratio.get("memory_bandwidth"))
        )
        if d.kind != "cpu":
            rows.append((d.device, "host→device (pinned)", d.host_to_device_gbs, "GB/s", None))
            rows.append((d.device, "device→host (pinned)", d.device_to_host_gbs, "GB/s", None))
        rows.append((d.device, "launch overhead", d.launch_overhead_us, "µs", None))
        for s in d.train_steps:
            rows.append((d.device, f"train {s.model} batch {s.batch_size}", s.samples_per_s, "samples/s", None))
        for what, why in d.skipped.items():
            rows.append((d.device, what, None, "", None, f"not measured: {why}"))
        for note in d.backoffs:
            rows.append((d.device, "back-off", None, "", None, note))
    return [r if len(r) == 6 else (*r, "") for r in rows]


def partial_rows(devices: Any) -> list[tuple[str, str, float | None, str, float | None, str]]:
    """The table during a run: the figures measured so far; one not measured yet is left out, not
    shown as "—" (which the finished table uses for a figure that could not be measured)."""
    return [r for r in result_rows(SimpleNamespace(devices=devices)) if r[2] is not None or r[5]]


class BenchPage(QWidget):
    #: A run ended (finished or cancelled with partial results): the Estimate page re-reads it.
    report_ready = Signal(object)

    def __init__(self, parent: QWidget | None = None, config: BenchConfig | None = None) -> None:
        super().__init__(parent)
        self.config = config
        self.quick = QCheckBox("&Quick (about 10 s)")
        self.quick.setChecked(True)
        self.quick.setToolTip("A short run; the full run takes about a minute and measures larger batches")
        self.start_button = QPushButton("S&tart benchmark")
        self.start_button.setAccessibleName("Start benchmark")
        self.cancel_button = QPushButton("C&ancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setAccessibleName("Benchmark progress")
        self.step = QLabel("Measures matmul per precision, memory bandwidth, transfers and real training steps.")
        self.step.setAccessibleName("Current benchmark step")
        self.notice = QLabel()
        self.notice.setAccessibleName("Benchmark notice")
        self.notice.setWordWrap(True)
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice.setVisible(False)
        self.snapshot: Any = None
        self.model = RowsModel(
            [
                Column("Device", lambda r: r[0]),
                Column("Figure", lambda r: r[1], tooltip="TF32: NVIDIA's 19-bit tensor-core format for FP32 matmuls"),
                Column("Measured", lambda r: r[2], fmt=lambda v: "—" if v is None else measured(v), numeric=True),
                Column("Unit", lambda r: r[3]),
                Column(
                    "% of spec",
                    lambda r: r[4],
                    fmt=lambda v: "—" if v is None else f"{100 * v:.0f} %",
                    numeric=True,
                    tooltip="measured / the catalog's dense spec for this card",
                ),
                Column("Note", lambda r: r[5]),
            ],
            self,
        )
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setAccessibleName("Benchmark results")
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.spec_plot = themed_plot(title="% of spec", left="%")
        self.batch_plot = themed_plot(
            title="Training samples/s by batch size, per device", left="samples/s", bottom="batch size"
        )
        self.batch_plot.setLogMode(x=True, y=True)
        side_legend(self.batch_plot)
        top = QHBoxLayout()
        for w in (self.quick, self.start_button, self.cancel_button):
            top.addWidget(w)
        top.addStretch(1)
        plots = QSplitter(Qt.Orientation.Horizontal)
        plots.addWidget(self.spec_plot)
        plots.addWidget(self.batch_plot)
        self.plots = plots
        plots.setVisible(False)  # nothing to show before a run
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(plots)
        self.split = split
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.progress)
        lay.addWidget(self.step)
        lay.addWidget(self.notice)
        lay.addWidget(split, 1)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.worker: GeneratorWorker | None = None
        self.report: Any = None

    def set_snapshot(self, snapshot: Any) -> None:
        """The detected machine: say plainly when it has a GPU that torch cannot use."""
        self.snapshot = snapshot
        self._show_notice(torch_gpu_notice(snapshot, self.report))

    def _show_notice(self, text: str | None) -> None:
        self.notice.setText(f"⚠ {text}" if text else "")
        self.notice.setVisible(bool(text))

    @Slot()
    def start(self) -> None:
        if self.worker is not None:
            return
        from gpuselect.bench.engine import run_benchmark

        cfg = self.config or BenchConfig(quick=self.quick.isChecked())

        def make(cancel: threading.Event) -> Any:
            return run_benchmark(cfg, cancel)

        self.worker = GeneratorWorker(make, self)
        self.worker.progress.connect(self._on_progress)
        self.worker.finished.connect(self._on_finished)
        self.worker.failed.connect(self._on_failed)
        self.start_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        self.step.setText("Starting (loading torch)…")
        # The last run's busy-machine warning said this run's figures were low before it had any.
        self._show_notice(torch_gpu_notice(self.snapshot, self.report))
        self.worker.start()

    @Slot()
    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.step.setText("Cancelling…")

    @Slot(object)
    def _on_progress(self, ev: Any) -> None:
        self.progress.setValue(int(1000 * ev.fraction))
        left = f" — about {ev.eta_s:.0f} s left" if ev.eta_s is not None else ""
        self.step.setText(f"{ev.step}{left}")
        rows = partial_rows(ev.devices)
        if rows != self.model.rows:  # each figure as it is measured (the table stayed empty until 100 %)
            self.model.set_rows(rows)

    @Slot(object)
    def _on_finished(self, report: Any) -> None:
        self.worker = None
        # A cancelled run's partial figures are shown, but the last complete run stays the one the
        # estimates read (a cancel re-anchored this CPU's range from 153-618 to 32-14,601 days).
        keep = report.cancelled and self.report is not None and not self.report.cancelled
        if not keep:
            self.report = report
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.model.set_rows(result_rows(report))
        self.step.setText(
            ("Cancelled: partial results" + ("; the estimates keep the last complete run" if keep else ""))
            if report.cancelled
            else f"Done in {report.duration_s:.1f} s"
        )
        self._plot(report)
        from gpuselect.bench.findings import bench_findings

        busy = [f"{f.title}: {f.detail}; {f.remedy}" for f in bench_findings(report) if f.id == "bench.busy_machine"]
        self._show_notice(" ".join(x for x in (torch_gpu_notice(self.snapshot, report), *busy) if x) or None)
        self.report_ready.emit(self.report)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.worker = None
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.step.setText(f"Benchmark failed: {message}")
        self.report_ready.emit(self.report)  # the last good result stands: the Estimate page may go on

    def _plot(self, report: Any) -> None:
        self.spec_plot.clear()
        bars = [
            (f"{d.device} {k.replace('matmul_', '')}", v)
            for d in report.devices
            for k, v in (d.spec_ratio or {}).items()
        ]
        if bars:
            self.spec_plot.addItem(
                pg.BarGraphItem(x=list(range(len(bars))), height=[100 * v for _, v in bars], width=0.6)
            )
            self.spec_plot.getAxis("bottom").setTicks([[(i, label) for i, (label, _) in enumerate(bars)]])
        self.spec_plot.setVisible(bool(bars))  # no catalogued device measured: no empty chart
        self.batch_plot.clear()
        has_steps = any(d.train_steps for d in report.devices)
        self.batch_plot.setVisible(has_steps)
        show = bool(bars) or has_steps
        if show and self.plots.isHidden():
            # A pane hidden at start has no height in the splitter: give the charts room.
            total = max(sum(self.split.sizes()), 400)
            self.split.setSizes([total * 11 // 20, total - total * 11 // 20])
        self.plots.setVisible(show)
        for d in report.devices:
            for j, model in enumerate(sorted({s.model for s in d.train_steps})):
                pts = [(s.batch_size, s.samples_per_s) for s in d.train_steps if s.model == model]
                style = Qt.PenStyle.SolidLine if d.kind == "cpu" else Qt.PenStyle.DashLine
                colour = GPU_COLOURS[(j + 4 * (d.kind != "cpu")) % len(GPU_COLOURS)]  # one colour per series
                self.batch_plot.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    pen=pg.mkPen(colour, width=2, style=style),
                    symbol="o" if d.kind == "cpu" else "s",
                    symbolBrush=colour,
                    symbolPen=colour,
                    name=f"{d.device} {model}",
                )
        self._log_ticks(report)

    def _log_ticks(self, report: Any) -> None:
        """The batch sizes measured label the batch axis (thinned where they would touch); the
        samples/s axis takes plots.LogAxis's own round values."""
        import math

        sizes = sorted({s.batch_size for d in report.devices for s in d.train_steps if s.batch_size > 0})
        self.batch_plot.getAxis("bottom").set_preferred([math.log10(b) for b in sizes])

    def shutdown(self) -> None:
        if self.worker is not None:
            self.worker.shutdown()
