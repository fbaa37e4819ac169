"""Hardware page: one row per GPU (nvidia-smi style, with a health badge), the health findings
grouped by severity, the machine in text, and a live monitor of every GPU.

The monitor keeps one NVML session open while it runs (``TelemetrySession``) and samples it from a
one-thread pool, so NVML is initialised once, read serially, and shut down when the page stops.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import (
    QObject,
    QRect,
    QRunnable,
    Qt,
    QThreadPool,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QPainter, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QGridLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
    QTableView,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gpuselect.gui.models import _SEVERITY_ICON, Column, Index, RowsModel
from gpuselect.gui.plots import GPU_COLOURS, gpu_pen, themed_plot
from gpuselect.gui.wording import in_the_app

HISTORY_S = 300
MONITOR_INTERVAL_MS = 2000
GIB = 1024**3

#: (reading key, chart title, axis unit) — one unit per chart.
MONITOR_FIGURES = (
    ("utilization_percent", "Utilisation", "%"),
    ("temperature_c", "Temperature", "°C"),
    ("power_draw_w", "Power", "W"),
    ("sm_clock_mhz", "SM clock", "MHz"),
)
SEVERITY_ORDER = ("critical", "warning", "unknown", "info", "ok")
SEVERITY_WORD = {"critical": "Critical", "warning": "Warning", "unknown": "Not checked", "info": "Info", "ok": "Passed"}


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
    """One reading from the page's open session (opened here on first use: NVML init can be slow)."""

    def __init__(self, session: Any, signals: _Signals) -> None:
        super().__init__()
        self.session, self.signals = session, signals

    @Slot()
    def run(self) -> None:
        self.session.open()
        self.signals.telemetry.emit(self.session.read())


# --- the GPU table -------------------------------------------------------------------------------


def _gib(b: int | None) -> str:
    return "—" if b is None else f"{b / GIB:.1f}"


def _ecc_text(g: Any) -> str:
    e = g.ecc
    if e.enabled is None:
        return "n/a"
    if e.enabled is False:
        return "off"
    vol = e.uncorrected_volatile
    return "on" if not vol else f"on, {vol} uncorrectable"


def gpu_row(g: Any, worst: str, problems: list[str], live: dict[str, Any] | None) -> dict[str, Any]:
    """One table row: the snapshot's static facts, overlaid with the latest live reading."""
    live = live or {}

    def pick(key: str, snap_value: Any) -> Any:
        v = live.get(key)
        return snap_value if v is None else v

    procs = g.processes
    return {
        "index": g.index,
        "name": g.name or "unknown GPU",
        "worst": worst,
        "problems": problems,
        "state": g.state,
        "used": pick("memory_used_bytes", g.memory_used_bytes),
        "total": pick("memory_total_bytes", g.memory_total_bytes),
        "util": pick("utilization_percent", g.utilization.gpu_percent),
        "temp": pick("temperature_c", g.temperature_c),
        "power": pick("power_draw_w", g.power_draw_w),
        "cap": pick("power_limit_w", g.power_limit_w),
        "sm": pick("sm_clock_mhz", g.clocks.sm_mhz),
        "mem_clock": pick("memory_clock_mhz", g.clocks.memory_mhz),
        "sm_max": g.clocks.sm_max_mhz,
        "pcie": (
            pick("pcie_generation", g.pcie.generation),
            pick("pcie_width", g.pcie.width),
            g.pcie.max_generation,
            g.pcie.max_width,
        ),
        "ecc": _ecc_text(g),
        "procs": pick("processes", None if procs is None else len([p for p in procs if p.kind == "compute"])),
        "proc_names": []
        if procs is None
        else [f"{p.name or '?'} (pid {p.pid}, {_gib(p.used_memory_bytes)} GiB)" for p in procs],
    }


def _pcie_text(p: tuple[Any, Any, Any, Any]) -> str:
    gen, width, max_gen, max_width = p
    if gen is None:
        return "—"
    now = f"Gen{gen} x{width}" if width else f"Gen{gen}"
    return now if (gen, width) == (max_gen, max_width) or max_gen is None else f"{now} (max Gen{max_gen} x{max_width})"


def _opt(v: Any, fmt: str) -> str:
    return "—" if v is None else fmt.format(v)


GPU_COLUMNS = [
    Column(
        "Health",
        lambda r: r["worst"].upper() if r["worst"] != "ok" else "OK",
        tooltip="the worst health finding for this GPU (see Findings below)",
    ),
    Column("GPU", lambda r: f"{r['index']}: {r['name']}"),
    Column(
        "Memory used / total", lambda r: r["used"], fmt=lambda _v: "—", tooltip="VRAM in use, of the card's total (GiB)"
    ),
    Column("Util", lambda r: r["util"], fmt=lambda v: _opt(v, "{:.0f} %"), numeric=True, tooltip="GPU utilisation now"),
    Column("Temp", lambda r: r["temp"], fmt=lambda v: _opt(v, "{:.0f} °C"), numeric=True),
    Column(
        "Power / cap",
        lambda r: (r["power"], r["cap"]),
        fmt=lambda v: "—" if v[0] is None else f"{v[0]:.0f} / {_opt(v[1], '{:.0f}')} W",
        tooltip="power draw now and the enforced limit",
    ),
    Column(
        "Clocks SM / mem",
        lambda r: (r["sm"], r["mem_clock"]),
        fmt=lambda v: "—" if v[0] is None else f"{v[0]} / {_opt(v[1], '{}')} MHz",
    ),
    Column(
        "PCIe link",
        lambda r: r["pcie"],
        fmt=_pcie_text,
        tooltip="generation and lanes now (and the link's maximum when lower); links slow down at idle",
    ),
    Column(
        "ECC",
        lambda r: r["ecc"],
        tooltip="error-correcting memory: on/off, uncorrectable errors since the driver loaded; n/a: the card has none",
    ),
    Column(
        "Processes",
        lambda r: r["procs"],
        fmt=lambda v: _opt(v, "{}"),
        numeric=True,
        tooltip="compute processes on the GPU",
    ),
]
MEMORY_COLUMN = 2


class GpuTableModel(RowsModel):
    """One row per GPU; the health badge is an icon *and* a word (never colour alone)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(GPU_COLUMNS, parent)

    def update_live(self, readings: dict[int, dict[str, Any]], rows: list[dict[str, Any]]) -> None:  # noqa: ARG002 - callers pass both; the rows carry the readings
        """Replace the rows' values in place (keeps selection and scroll)."""
        if len(rows) != len(self.rows):
            self.set_rows(rows)
            return
        self.rows = rows
        if rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(self.columns) - 1))

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        r = self.rows[index.row()]
        if index.column() == 0 and role == Qt.ItemDataRole.DecorationRole:
            app = QApplication.instance()
            return app.style().standardIcon(_SEVERITY_ICON[r["worst"]]) if app is not None else None  # type: ignore[attr-defined]
        if index.column() == 0 and role == Qt.ItemDataRole.ToolTipRole:
            return "\n".join(r["problems"]) or "all checks passed"
        if index.column() == MEMORY_COLUMN:
            if role == Qt.ItemDataRole.UserRole:
                return None if not r["total"] or r["used"] is None else r["used"] / r["total"]
            if role == Qt.ItemDataRole.DisplayRole:
                return f"{_gib(r['used'])} / {_gib(r['total'])} GiB"
        if index.column() == len(self.columns) - 1 and role == Qt.ItemDataRole.ToolTipRole:
            return "\n".join(r["proc_names"]) or "no process"
        return super().data(index, role)


class MemoryBarDelegate(QStyledItemDelegate):
    """VRAM used/total drawn as a bar with its figures on it (nvitop style)."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        frac = index.data(Qt.ItemDataRole.UserRole)
        if frac is None:
            super().paint(painter, option, index)
            return
        bar = QStyleOptionProgressBar()
        bar.rect = QRect(option.rect.adjusted(2, 3, -2, -3))
        bar.minimum, bar.maximum = 0, 1000
        bar.progress = round(1000 * max(0.0, min(1.0, float(frac))))
        bar.text = str(index.data())
        bar.textVisible = True
        bar.textAlignment = Qt.AlignmentFlag.AlignCenter
        bar.state = option.state | QStyle.StateFlag.State_Horizontal
        bar.palette = option.palette
        style = option.widget.style() if option.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter, option.widget)

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> Any:
        hint = super().sizeHint(option, index)
        hint.setWidth(max(hint.width() + 24, 170))
        return hint


class WrapDelegate(QStyledItemDelegate):
    """Rows as tall as their word-wrapped text at the column's current width (QTreeView alone
    keeps one line and elides), so a remedy is read in full."""

    def __init__(self, view: QTreeWidget) -> None:
        super().__init__(view)
        self._view = view

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> Any:
        hint = super().sizeHint(option, index)
        text = str(index.data() or "")
        width = self._view.columnWidth(index.column()) - 8
        if index.column() == 0:
            width -= self._view.indentation() * (2 if index.parent().isValid() else 1) + 20  # branch + icon
        if not text or width <= 20:
            return hint
        rect = option.fontMetrics.boundingRect(QRect(0, 0, width, 100_000), int(Qt.TextFlag.TextWordWrap), text)
        hint.setHeight(max(hint.height(), rect.height() + 6))
        return hint


# --- the page ---------------------------------------------------------------------------------


class HardwarePage(QWidget):
    detected = Signal(object)  # the snapshot, for other pages

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from gpuselect.hardware.nvidia import TelemetrySession

        self.status = QLabel("Detecting hardware…")
        self.status.setAccessibleName("Detection status")
        self.status.setWordWrap(True)

        self.gpus = GpuTableModel(self)
        self.gpu_table = QTableView()
        self.gpu_table.setModel(self.gpus)
        self.gpu_table.setAccessibleName("GPUs")
        self.gpu_table.setItemDelegateForColumn(MEMORY_COLUMN, MemoryBarDelegate(self.gpu_table))
        self.gpu_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.gpu_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.gpu_table.verticalHeader().setVisible(False)
        self.gpu_table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)

        self.findings_tree = QTreeWidget()
        self.findings_tree.setAccessibleName("Health findings")
        self.findings_tree.setColumnCount(4)
        self.findings_tree.setHeaderLabels(["Finding", "Device", "Measured (threshold)", "What to do"])
        self.findings_tree.setWordWrap(True)  # remedies are read in full, not cut with "…"
        self.findings_tree.setUniformRowHeights(False)
        self.findings_tree.setTextElideMode(Qt.TextElideMode.ElideNone)
        header = self.findings_tree.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.sectionResized.connect(lambda *_: self.findings_tree.doItemsLayout())  # re-wrap on resize
        self.findings_tree.setItemDelegate(WrapDelegate(self.findings_tree))

        self.summary = QPlainTextEdit(readOnly=True)
        self.summary.setAccessibleName("Detected hardware")
        self.summary.setToolTip(
            "VRAM: the GPU's own memory, which bounds model and batch size.\n"
            "PCIe GenN xW: the link to the CPU — generation (speed per lane) and width (lanes); links slow down at idle.\n"
            "Throttle reasons: why the driver is holding the clocks down right now."
        )
        self.details = QTabWidget()
        self.details.addTab(self.findings_tree, "Health findings")
        self.details.addTab(self.summary, "Machine (text)")

        # Monitor: one chart per figure (one unit per axis), one colour per GPU, one shared legend.
        self.monitor = QWidget()
        self.legend = QLabel()
        self.legend.setAccessibleName("Monitor legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        self.plots: dict[str, pg.PlotWidget] = {}
        for i, (key, title, unit) in enumerate(MONITOR_FIGURES):
            plot = themed_plot(title=f"{title} ({unit})", left=unit, bottom="time (s, 0 = now)")
            plot.setMouseEnabled(x=False, y=False)
            plot.setXRange(-HISTORY_S, 0, padding=0.02)  # always the last 5 minutes, newest at the right
            plot.enableAutoRange(x=False, y=False)  # y: from 0 to the top reading (_on_telemetry)
            plot.setYRange(0, 100, padding=0.05)
            plot.setMinimumHeight(120)
            plot.setToolTip(f"{title} of each GPU over the last 5 minutes, read from the driver every 2 s")
            self.plots[key] = plot
            grid.addWidget(plot, i // 2, i % 2)
        mon = QVBoxLayout(self.monitor)
        mon.setContentsMargins(0, 0, 0, 0)
        mon.addWidget(self.legend)
        mon.addLayout(grid, 1)
        # Kept for callers that name the first two charts.
        self.plot, self.plot2 = self.plots["utilization_percent"], self.plots["power_draw_w"]

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.gpu_table)
        split.addWidget(self.details)
        split.addWidget(self.monitor)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 4)
        self.splitter = split
        lay = QVBoxLayout(self)
        lay.addWidget(self.status)
        lay.addWidget(split, 1)

        self._pool = QThreadPool.globalInstance()
        self._telemetry_pool = QThreadPool(self)
        self._telemetry_pool.setMaxThreadCount(1)  # NVML read serially by one thread
        self.session = TelemetrySession()
        self._tsig = _Signals()
        self._tsig.telemetry.connect(self._on_telemetry)
        self._timer = QTimer(self)
        self._timer.setInterval(MONITOR_INTERVAL_MS)
        self._timer.timeout.connect(self._sample)
        self._busy = False
        self._polling = False
        self.telemetry_updates = 0  # readings drawn so far (the soak test counts them)
        self._curves: dict[str, Any] = {}
        self._history: dict[str, collections.deque[tuple[float, dict[str, Any]]]] = {}
        self._snapshot: Any = None
        self._report: Any = None
        self._bench: Any = None  # the app's last benchmark (set_bench)
        self._live: dict[int, dict[str, Any]] = {}  # the monitor's last readings, by GPU index
        self._rows_by_uuid: dict[str, int] = {}
        self._fit_pending = False
        self.gpu_table.setVisible(False)
        self.monitor.setVisible(False)

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

    # --- detection ------------------------------------------------------------------------
    @Slot(object, object)
    def _on_done(self, snap: Any, report: Any) -> None:
        from gpuselect.hardware.text import format_snapshot

        self._busy = False
        self._snapshot, self._report = snap, self._with_bench(snap, report)
        self._live = {}  # a new detection: the last readings may be of other GPUs
        self.summary.setPlainText(format_snapshot(snap))
        self._show_health()
        n = len(snap.gpus)
        self.gpu_table.setVisible(n > 0)
        has_nvml = any(g.source == "nvml" for g in snap.gpus)
        self.monitor.setVisible(has_nvml)  # nothing to monitor: no empty charts
        self._fit_table_height()  # with the monitor shown: sized while hidden, it then took the most
        self.detected.emit(snap)
        self._set_legend(snap)
        # A refresh may have changed the GPUs: start a new session on the next sample.
        self._stop_monitor()
        if has_nvml:
            self._timer.start()

    def set_bench(self, bench: Any) -> None:
        """The benchmark the app ran last: its findings (a busy machine) join this machine's health,
        as the report counts them (the page's count left them out)."""
        self._bench = bench
        if self._snapshot is not None:
            self._report = self._with_bench(self._snapshot)
            self._show_health(switch=False)  # the user's view stays where it is

    def _with_bench(self, snap: Any, report: Any = None) -> Any:
        """The machine's health with the last benchmark's findings (``report``: detection's own,
        without them; judged here where absent)."""
        if self._bench is not None:
            from gpuselect.app.machine import this_machine

            return this_machine(snapshot=snap, bench=self._bench).health  # the report's own rule
        if report is not None:
            return report
        from gpuselect.health.rules import evaluate

        return evaluate(snap)

    def _show_health(self, *, switch: bool = True) -> None:
        from gpuselect.health.text import counts_line

        snap, report = self._snapshot, self._report
        self._fill_findings(report.findings)
        c = report.counts
        n = len(snap.gpus)
        gpus = "no GPU" if n == 0 else f"{n} GPU" + ("s" if n > 1 else "")
        health = f"Health: {counts_line(c)}."
        if n == 0:
            cpu = snap.cpu.model or "the CPU"
            cores = f", {snap.cpu.logical_cores} threads" if snap.cpu.logical_cores else ""
            self.status.setText(
                f"No GPU found: training runs on {cpu}{cores}, {snap.memory.total_bytes / GIB:.1f} GiB RAM. {health}"
            )
        else:
            self.status.setText(f"{gpus}. {health}")
        # Nothing wrong and no GPU: the machine's description is the useful view.
        quiet = n == 0 and not c.get("critical") and not c.get("warning")
        if switch:
            self.details.setCurrentWidget(self.summary if quiet else self.findings_tree)
        self._rows_by_uuid = {g.uuid: i for i, g in enumerate(snap.gpus) if g.uuid}
        self.gpus.set_rows(self._table_rows(self._live))

    def _table_rows(self, live_by_index: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
        snap, report = self._snapshot, self._report
        if snap is None:
            return []
        rows = []
        for g in snap.gpus:
            mine = [
                f
                for f in report.findings
                if f.device and (f.device == f"gpu{g.index}" or f.device.startswith(f"gpu{g.index} "))
            ]
            worst = max((f.severity for f in mine), key=lambda s: s.rank, default=None)
            word = "ok" if worst is None or worst.value in ("ok", "info") else worst.value
            problems = [
                f"{f.severity.value.upper()}: {f.title}"
                for f in mine
                if f.severity.value in ("critical", "warning", "unknown")
            ]
            rows.append(gpu_row(g, word, problems, live_by_index.get(g.index)))
        return rows

    def _fit_table_height(self) -> None:
        """Show every GPU row (eight fit) without a scrollbar when there is room."""
        rows = self.gpus.rowCount()
        # Not laid out yet (detection ended before the window showed, or on another tab): sized at
        # the first show, where the splitter's defaults left 1.5 of 8 GPU rows on view (QA 17f).
        self._fit_pending = not self.isVisible()
        if self._fit_pending:
            return
        h = self.gpu_table.horizontalHeader().height() + sum(self.gpu_table.rowHeight(i) for i in range(rows)) + 6
        sizes = self.splitter.sizes()
        total = sum(sizes)
        if rows and total > 0:
            # On a 1024x640 window the charts took 60 % of the height, 1.5 of 8 GPU rows left on
            # view and one finding cut in two (QA 17f): the table takes its rows up to 2/5.
            top = min(h, total * 2 // 5)
            rest = total - top
            monitor = rest - rest * 2 // 5 if self.monitor.isVisibleTo(self) else 0
            self.splitter.setSizes([top, rest - monitor, monitor])

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._fit_pending:
            QTimer.singleShot(0, self._fit_table_height)  # once the layout has sized the splitter

    def _fill_findings(self, findings: list[Any]) -> None:
        tree = self.findings_tree
        tree.clear()
        app = QApplication.instance()
        by_sev: dict[str, list[Any]] = {s: [] for s in SEVERITY_ORDER}
        for f in findings:
            by_sev.setdefault(f.severity.value, []).append(f)
        for sev in SEVERITY_ORDER:
            group = by_sev.get(sev) or []
            if not group:
                continue
            top = QTreeWidgetItem([f"{SEVERITY_WORD[sev]} ({len(group)})"])
            if app is not None:
                top.setIcon(0, app.style().standardIcon(_SEVERITY_ICON[sev]))  # type: ignore[attr-defined]
            font = top.font(0)
            font.setBold(True)
            top.setFont(0, font)
            top.setFirstColumnSpanned(False)
            top.setData(0, Qt.ItemDataRole.UserRole, sev)
            tree.addTopLevelItem(top)
            for f in group:
                measured = "" if f.value is None else f"{f.value}{' ' + f.unit if f.unit else ''}"
                if f.threshold is not None and measured:
                    measured += f" (threshold {f.threshold})"  # "0 GPUs (1)" read as a count
                remedy = in_the_app(f.remedy or "")
                child = QTreeWidgetItem([f.title, f.device or "", measured, remedy])
                child.setToolTip(0, f.detail + (f"\nSource: {f.source}" if f.source else ""))
                child.setToolTip(3, remedy)
                top.addChild(child)
            top.setExpanded(sev != "ok")  # the passed checks are folded away
        tree.setColumnWidth(0, 360)
        tree.setColumnWidth(1, 190)
        tree.setColumnWidth(2, 150)

    def findings_groups(self) -> dict[str, tuple[int, bool]]:
        """severity -> (findings, expanded) as shown (for tests and accessibility checks)."""
        out = {}
        for i in range(self.findings_tree.topLevelItemCount()):
            it = self.findings_tree.topLevelItem(i)
            if it is not None:
                out[str(it.data(0, Qt.ItemDataRole.UserRole))] = (it.childCount(), it.isExpanded())
        return out

    def _set_legend(self, snap: Any) -> None:
        parts = []
        for g in snap.gpus:
            if g.source != "nvml":
                continue
            colour = GPU_COLOURS[g.index % len(GPU_COLOURS)]
            dash = "╍╍" if g.index >= len(GPU_COLOURS) else "━━"
            parts.append(f"<span style='color:{colour}; font-weight:bold'>{dash}</span>&nbsp;gpu{g.index}")
        names = sorted({g.name for g in snap.gpus if g.name})
        self.legend.setText("GPUs: " + "&nbsp;&nbsp; ".join(parts) + (f" &nbsp;({', '.join(names)})" if names else ""))

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._busy = False
        self.status.setText(message)

    # --- live monitor --------------------------------------------------------------------
    @Slot()
    def _sample(self) -> None:
        if not self._polling:
            self._polling = True
            self._telemetry_pool.start(TelemetryJob(self.session, self._tsig))

    @Slot(object)
    def _on_telemetry(self, readings: dict[str, dict[str, Any]]) -> None:
        self._polling = False
        if not self._timer.isActive():
            return  # stopped meanwhile
        self.telemetry_updates += 1
        if not readings and self.session.error:
            self.legend.setText(f"Live monitor unavailable: {self.session.error}")  # said, not a crash
            return
        now = time.monotonic()
        tops = {key: 0.0 for key, _t, _u in MONITOR_FIGURES}
        for uuid, r in readings.items():
            hist = self._history.setdefault(uuid, collections.deque(maxlen=HISTORY_S * 1000 // MONITOR_INTERVAL_MS + 1))
            hist.append((now, r))
            xs = np.fromiter((t - now for t, _ in hist), float, len(hist))
            index = int(r.get("index") or 0)
            for key, _title, _unit in MONITOR_FIGURES:
                ys = np.fromiter((np.nan if v.get(key) is None else float(v[key]) for _, v in hist), float, len(hist))
                ck = f"{uuid}-{key}"
                if ck not in self._curves:
                    self._curves[ck] = self.plots[key].plot(pen=gpu_pen(index), name=f"gpu{index}")
                self._curves[ck].setData(xs, ys, connect="finite")
                if np.isfinite(ys).any():
                    tops[key] = max(tops[key], float(np.nanmax(ys)))
        for key, _title, unit in MONITOR_FIGURES:
            # From zero, so a flat line reads as a level, not as noise magnified.
            self.plots[key].setYRange(0, 100 if unit == "%" else max(tops[key] * 1.15, 1.0), padding=0.02)
        by_index = {int(r.get("index") or 0): r for r in readings.values()}
        self._live = by_index  # kept for a health refresh between readings (set_bench)
        self.gpus.update_live(by_index, self._table_rows(by_index))

    def _stop_monitor(self) -> None:
        self._timer.stop()
        self._telemetry_pool.waitForDone()  # no read in flight when the session closes
        self._polling = False
        self.session.close()

    def stop(self) -> None:
        self._stop_monitor()
