"""Workload and estimate page: pick a preset, set the assumptions, and compare every catalog GPU —
with the four-stage recommendation, a time-versus-cost scatter (Pareto front highlighted, your
machine marked) and the table, sortable and filterable. Recomputed off the GUI thread."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSortFilterProxyModel, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gpuselect.gui.models import SORT_ROLE, Column, RowsModel, num
from gpuselect.gui.plots import themed_plot
from gpuselect.gui.workers import GeneratorWorker, call_in_generator


def pareto(points: list[tuple[float, float, Any]]) -> list[tuple[float, float, Any]]:
    """Points not beaten on both time and cost by another point, by increasing time."""
    front: list[tuple[float, float, Any]] = []
    best_cost = float("inf")
    for p in sorted(points, key=lambda p: (p[0], p[1])):
        if p[1] < best_cost:
            front.append(p)
            best_cost = p[1]
    return front


def row_cost(r: Any) -> float | None:
    costs = [c for c in (r.cloud_cost_usd, r.buy_cost_usd) if c is not None]
    return min(costs) if costs else None


class RowFilter(QSortFilterProxyModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.family = ""
        self.fits_only = True
        self.setSortRole(SORT_ROLE)

    def filterAcceptsRow(self, source_row: int, source_parent: Any) -> bool:  # noqa: N802 - Qt naming
        r = self.sourceModel().rows[source_row]  # type: ignore[attr-defined]
        if self.family and r.family != self.family:
            return False
        return not (self.fits_only and not r.fits)


class EstimatePage(QWidget):
    computed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from gpuselect.workloads.presets import PRESETS

        self.search = QLineEdit(placeholderText="Search workloads…")
        self.search.setAccessibleName("Search workloads")
        self.presets = QListWidget()
        self.presets.setAccessibleName("Workload presets")
        for w in PRESETS.values():
            item = QListWidgetItem(f"{w.name}")
            item.setData(Qt.ItemDataRole.UserRole, w.id)
            item.setToolTip(f"{w.description}\n{w.params / 1e6:,.1f} M parameters; {w.source}")
            self.presets.addItem(item)
        self.presets.setCurrentRow(list(PRESETS).index("resnet50"))
        self.custom = QCheckBox("&Custom workload instead:")
        self.custom.setToolTip("Your own model: parameter count and forward FLOPs per sample")
        self.custom_params = QDoubleSpinBox(minimum=0, maximum=1e7, decimals=3, value=100.0, suffix=" M parameters")
        self.custom_flops = QDoubleSpinBox(minimum=0, maximum=1e9, decimals=3, value=10.0, suffix=" GFLOP / sample")
        self.custom_flops.setToolTip("Forward-pass FLOPs of one sample (training costs about three times that)")
        self.precision = QComboBox()
        self.precision.addItems(["bf16", "fp16", "tf32", "fp32"])
        self.precision.setToolTip("bf16/fp16: mixed precision on tensor cores; TF32: NVIDIA's 19-bit tensor format for FP32 math (Ampere+)")
        self.batch = QSpinBox(minimum=0, maximum=1_000_000, specialValueText="auto")
        self.batch.setToolTip("Per-GPU batch; auto = the workload's default, capped by the GPU's memory (VRAM)")
        self.dataset = QSpinBox(minimum=0, maximum=2_000_000_000, specialValueText="preset default")
        self.epochs = QSpinBox(minimum=0, maximum=100_000, specialValueText="preset default")
        self.deadline = QDoubleSpinBox(minimum=0.01, maximum=1e6, value=72.0, suffix=" h", decimals=2)
        self.budget = QDoubleSpinBox(minimum=0, maximum=1e9, value=0, prefix="$", decimals=0, specialValueText="no budget")
        self.electricity = QDoubleSpinBox(minimum=0, maximum=10, value=0.15, decimals=3, prefix="$", suffix=" /kWh")
        self.max_gpus = QComboBox()
        self.max_gpus.addItems(["1", "2", "4", "8", "16", "32", "64"])
        self.max_gpus.setCurrentText("8")
        self.max_gpus.setToolTip("More than 8 GPUs means several machines: stage 4, a cluster")
        form = QFormLayout()
        for label, w in (("Para&meters:", self.custom_params), ("&FLOPs:", self.custom_flops), ("&Precision:", self.precision), ("&Batch size:", self.batch), ("&Dataset (samples):", self.dataset),
                         ("&Epochs:", self.epochs), ("Dead&line:", self.deadline), ("B&udget:", self.budget),
                         ("&Electricity:", self.electricity), ("&Max GPUs:", self.max_gpus)):
            lab = QLabel(label)
            lab.setBuddy(w)
            w.setAccessibleName(label.replace("&", "").rstrip(":"))
            form.addRow(lab, w)
        left = QVBoxLayout()
        left.addWidget(self.search)
        left.addWidget(self.presets, 1)
        left.addWidget(self.custom)
        left.addLayout(form)
        self.recommendation = QLabel("…")
        self.recommendation.setWordWrap(True)
        self.recommendation.setAccessibleName("Recommendation")
        self.recommendation.setToolTip("Stages: 1 no GPU, 2 one consumer GPU, 3 a workstation or rented datacenter GPUs, 4 a cluster")
        self.error = QLabel("")
        self.error.setAccessibleName("Input problem")
        self.family = QComboBox()
        self.family.addItems(["all families", "geforce", "workstation", "datacenter", "radeon", "instinct"])
        self.fits_only = QCheckBox("&Fitting options only")
        self.fits_only.setChecked(True)
        self.model = RowsModel([
            Column("GPU", lambda r: f"{r.count}x {r.name}"),
            Column("Family", lambda r: r.family),
            Column("VRAM", lambda r: r.vram_gb, fmt=num(0, " GB"), numeric=True, tooltip="memory per GPU (VRAM): bounds the model and the batch"),
            Column("Fits", lambda r: "yes" if r.fits else "no", tooltip="model + optimizer state + activations fit the GPU's memory (VRAM)"),
            Column("Batch", lambda r: r.batch_size, numeric=True),
            Column("Time", lambda r: r.total_time_h, fmt=num(1, " h"), numeric=True, tooltip="± the error band in the next column"),
            Column("±", lambda r: 100 * r.error_band, fmt=num(0, " %"), numeric=True,
                   tooltip="validated 90th-percentile error of this row's time (docs/accuracy.md); wider for workloads\n"
                           "without measurements, AMD cards and several GPUs (docs/accuracy-external.md)"),
            Column("Buy", lambda r: r.buy_cost_usd, fmt=self._money, numeric=True, tooltip="price (street or launch) + electricity"),
            Column("Cloud", lambda r: r.cloud_cost_usd, fmt=self._money, numeric=True, tooltip="cheapest on-demand price, late 2025"),
            Column("Energy", lambda r: r.energy_kwh, fmt=num(1, " kWh"), numeric=True),
            Column("Break-even", lambda r: r.break_even_hours, fmt=num(0, " h"), numeric=True,
                   tooltip="hours of use after which buying costs less than renting"),
            Column("Note", lambda r: r.note or ("; ".join(r.suggestions) if r.suggestions else "")),
        ], self)
        self.proxy = RowFilter(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(5, Qt.SortOrder.AscendingOrder)  # time
        self.table.setAccessibleName("Estimates for every GPU")
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.stage_plot = themed_plot(title="The four stages: best option in each (time, log scale); dotted: your deadline",
                                      bottom="time (h)")
        self.stage_plot.setLogMode(x=True, y=False)
        self.stage_plot.setToolTip("1 no GPU (this CPU) · 2 one consumer GPU · 3 a workstation or rented datacenter GPUs · 4 a cluster")
        self.stage_plot.getAxis("left").setTicks([[(4 - i, label) for i, label in enumerate(
            ["1 no GPU", "2 one GPU", "3 workstation/cloud", "4 cluster"])]])
        self.scatter_plot = themed_plot(title="Time vs cost (Pareto front highlighted; ★ your machine)", left="cost ($)", bottom="time (h)")
        self.scatter_plot.setLogMode(x=True, y=True)
        self.hover = QLabel("")
        self.hover.setAccessibleName("Point details")
        filters = QHBoxLayout()
        filters.addWidget(self.family)
        filters.addWidget(self.fits_only)
        filters.addStretch(1)
        right = QVBoxLayout()
        right.addWidget(self.recommendation)
        right.addWidget(self.error)
        right.addLayout(filters)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        plot_box = QWidget()
        pv = QVBoxLayout(plot_box)
        pv.setContentsMargins(0, 0, 0, 0)
        plots = QSplitter(Qt.Orientation.Horizontal)
        plots.addWidget(self.stage_plot)
        plots.addWidget(self.scatter_plot)
        pv.addWidget(plots, 1)
        pv.addWidget(self.hover)
        split.addWidget(plot_box)
        right.addWidget(split, 1)
        lay = QHBoxLayout(self)
        lw = QWidget()
        lw.setLayout(left)
        lw.setMaximumWidth(360)
        lay.addWidget(lw)
        rw = QWidget()
        rw.setLayout(right)
        lay.addWidget(rw, 1)
        self._debounce = QTimer(self, singleShot=True, interval=250)
        self._debounce.timeout.connect(self.recompute)
        for sig in (self.custom.toggled, self.custom_params.valueChanged, self.custom_flops.valueChanged,
                    self.presets.currentRowChanged, self.precision.currentIndexChanged, self.batch.valueChanged,
                    self.dataset.valueChanged, self.epochs.valueChanged, self.deadline.valueChanged, self.budget.valueChanged,
                    self.electricity.valueChanged, self.max_gpus.currentIndexChanged):
            sig.connect(self._schedule)
        self.search.textChanged.connect(self._filter_presets)
        for w in (self.custom_params, self.custom_flops):
            w.setEnabled(False)
            self.custom.toggled.connect(w.setEnabled)
        self.family.currentIndexChanged.connect(self._refilter)
        self.fits_only.toggled.connect(self._refilter)
        self.worker: GeneratorWorker | None = None
        self.symbol, self.rate, self.grid = "$", 1.0, 0.45
        self._dirty = False
        self.result: Any = None
        self.local_snapshot: Any = None

    def _money(self, usd: Any) -> str:
        return "—" if usd is None else f"{self.symbol}{usd * self.rate:,.0f}"

    def apply_settings(self, settings: Any) -> None:
        """Defaults from the settings page; costs shown in the user's currency."""
        self.symbol, self.rate, self.grid = settings.currency_symbol, settings.usd_to_currency, settings.grid_kg_co2_per_kwh
        self.electricity.setValue(settings.electricity_usd_per_kwh)
        self.deadline.setValue(settings.default_deadline_hours)
        self.budget.setValue(settings.default_budget_usd or 0)
        self.model.set_rows(self.model.rows)  # re-format the cost columns
        self._schedule()

    @Slot(str)
    def _filter_presets(self, text: str) -> None:
        t = text.lower()
        for i in range(self.presets.count()):
            item = self.presets.item(i)
            item.setHidden(bool(t) and t not in item.text().lower() and t not in str(item.data(Qt.ItemDataRole.UserRole)))

    @Slot()
    def _refilter(self) -> None:
        fam = self.family.currentText()
        self.proxy.family = "" if fam.startswith("all") else fam
        self.proxy.fits_only = self.fits_only.isChecked()
        self.proxy.invalidate()

    @Slot()
    def _schedule(self) -> None:
        self._debounce.start()

    def assumptions(self) -> Any:
        from gpuselect.estimate.api import Assumptions

        return Assumptions(
            precision=self.precision.currentText(), batch_size=self.batch.value() or None,
            dataset_size=self.dataset.value() or None, epochs=self.epochs.value() or None,
            deadline_hours=self.deadline.value(), budget_usd=self.budget.value() or None,
            electricity_usd_per_kwh=self.electricity.value(), max_gpus=int(self.max_gpus.currentText()),
            grid_kg_co2_per_kwh=self.grid,
        )

    @Slot()
    def recompute(self) -> None:
        if self.worker is not None:
            self._dirty = True
            return
        item = self.presets.currentItem()
        if item is None and not self.custom.isChecked():
            return
        wid = str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else ""
        custom = (self.custom_params.value() * 1e6, self.custom_flops.value() * 1e9) if self.custom.isChecked() else None
        a = self.assumptions()
        snap = self.local_snapshot

        def work() -> Any:
            from gpuselect.catalog import load_catalog
            from gpuselect.estimate.api import estimate, local_cpu_estimate, local_gpu_estimate
            from gpuselect.estimate.perf import default_model
            from gpuselect.workloads.presets import get_preset

            catalog = load_catalog()
            perf = default_model(catalog)
            from gpuselect.workloads.presets import custom_workload

            w = custom_workload(*custom) if custom else get_preset(wid)
            local = []
            if snap is not None:
                cpu = snap.cpu
                local.append(local_cpu_estimate(w, a, cores=cpu.physical_cores or cpu.logical_cores, mhz=cpu.max_mhz or cpu.current_mhz,
                                                features=cpu.features, name=cpu.model or "this CPU"))
                for g in snap.gpus:
                    local.append(local_gpu_estimate(w, a, catalog, perf, name=g.name, memory_bytes=g.memory_total_bytes, device=f"gpu{g.index}"))
            return estimate(w, a, catalog, perf, local=local)

        self.worker = GeneratorWorker(call_in_generator(work), self)
        self.worker.finished.connect(self._on_result)
        self.worker.failed.connect(self._on_failed)
        self.worker.start()

    @Slot(object)
    def _on_result(self, result: Any) -> None:
        self.worker = None
        self.result = result
        self.error.setText("")
        self.model.set_rows(result.rows)
        rec = result.recommendation
        local = "; ".join(f"your {l.device}: {'~%.1f h' % l.total_time_h if l.total_time_h else 'n/a'}" for l in result.local)
        self.recommendation.setText(f"<b>Stage {rec.stage} — {rec.stage_name}</b>: {rec.choice}<br>{rec.rationale}"
                                    + (f"<br><i>{local}</i>" if local else ""))
        self._plot(result)
        self.computed.emit(result)
        if self._dirty:
            self._dirty = False
            self.recompute()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.worker = None
        self.error.setText(f"<b>Cannot estimate:</b> {message}")
        if self._dirty:
            self._dirty = False
            self.recompute()

    def _plot_stages(self, result: Any) -> None:
        """Horizontal bars: the best option of each stage, the recommended one highlighted."""
        import math

        p = self.stage_plot
        p.clear()
        rec = result.recommendation
        for i, key in enumerate(("1", "2", "3", "4")):
            v = rec.per_stage.get(key)
            y = 4 - i
            if not v or not v.get("total_time_h"):
                continue
            t = float(v["total_time_h"])
            chosen = int(key) == rec.stage
            brush = pg.mkBrush(43, 108, 176) if chosen else pg.mkBrush(160, 174, 192)
            # Log x axis: bars from 0.01 h to t, drawn in log10 coordinates.
            p.addItem(pg.BarGraphItem(x0=[math.log10(0.01)], x1=[math.log10(t)], y=[y], height=0.6, brush=brush))
            name = v.get("name") if v.get("device") == "cpu" else f"{v.get('count', 1)}x {v.get('name')}"
            from PySide6.QtGui import QPalette

            label = pg.TextItem(f"{name}: {t:,.1f} h" + ("  ← recommended" if chosen else ""), anchor=(0, 0.5),
                                color=self.palette().color(QPalette.ColorRole.Text))
            label.setPos(math.log10(0.01), y + 0.45)
            p.addItem(label)
        p.addItem(pg.InfiniteLine(pos=math.log10(result.assumptions.deadline_hours), angle=90,
                                  pen=pg.mkPen(style=Qt.PenStyle.DotLine)))
        times = [float(v["total_time_h"]) for v in rec.per_stage.values() if v and v.get("total_time_h")]
        top = max(times + [result.assumptions.deadline_hours])
        p.setXRange(math.log10(0.01), math.log10(top) + 0.3, padding=0)
        p.setYRange(0.4, 4.9, padding=0)

    def _plot(self, result: Any) -> None:
        self._plot_stages(result)
        p = self.scatter_plot
        p.clear()
        pts = [(r.total_time_h, c, r) for r in result.rows if r.fits and r.total_time_h and (c := row_cost(r))]
        if not pts:
            return
        import math

        scatter = pg.ScatterPlotItem(size=7, brush=pg.mkBrush(120, 120, 120, 120), hoverable=True)
        scatter.addPoints([{"pos": (math.log10(x), math.log10(y)), "data": r} for x, y, r in pts])
        scatter.sigHovered.connect(self._on_hover)
        scatter.sigClicked.connect(self._on_hover)
        p.addItem(scatter)
        front = pareto(pts)
        p.plot([x for x, _, _ in front], [y for _, y, _ in front], pen=pg.mkPen(width=2), symbol="s", symbolSize=9)
        for l in result.local:
            if l.total_time_h:
                p.addItem(pg.InfiniteLine(pos=math.log10(l.total_time_h), angle=90, pen=pg.mkPen(style=Qt.PenStyle.DashLine),
                                          label=f"★ your {l.device}"))
        deadline = result.assumptions.deadline_hours
        p.addItem(pg.InfiniteLine(pos=math.log10(deadline), angle=90, pen=pg.mkPen(style=Qt.PenStyle.DotLine), label="deadline"))
        if result.assumptions.budget_usd:
            p.addItem(pg.InfiniteLine(pos=math.log10(result.assumptions.budget_usd), angle=0, pen=pg.mkPen(style=Qt.PenStyle.DotLine),
                                      label="budget"))

    @Slot(object, object)
    def _on_hover(self, _item: Any, points: Any, *_: Any) -> None:
        if points is None or len(points) == 0:
            return
        r = points[0].data()
        self.hover.setText(f"{r.count}x {r.name}: {r.total_time_h:,.1f} h, cost ${row_cost(r):,.0f} "
                           f"(buy {r.buy_cost_usd or 0:,.0f} / cloud {r.cloud_cost_usd or 0:,.0f}), batch {r.batch_size}")

    def shutdown(self) -> None:
        if self.worker is not None:
            self.worker.shutdown()
