"""Workload and estimate page: a preset, a config.json (full/LoRA/QLoRA), a model file or your own
figures; the assumptions; the advice that starts from this machine (gpuselect.app, the same
workflow as the CLI); the best option per stage with its error range and cost; time against cost
(buying and renting apart); memory needed against VRAM; every option in a sortable table.
Every estimate runs in a worker thread, never on the GUI thread."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSortFilterProxyModel, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QPainter, QPalette, QValidator
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QStyle,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gpuselect.app.money import MoneyFormat
from gpuselect.estimate.memory import need_text, vram_text
from gpuselect.estimate.recommend import (
    BORROWED_BAND_NOTE,
    SLOWER_16BIT_NOTE,
    SLOWER_FP8_NOTE,
    explain,
    fmt_hours,
    fmt_hours_range,
    option_name,
    owned_note,
    stage_heading,
)
from gpuselect.gui.models import SORT_ROLE, Column, RowsModel, num
from gpuselect.gui.money import budget_box, electricity_box, over_limit
from gpuselect.gui.plots import themed_plot
from gpuselect.gui.wording import in_the_app
from gpuselect.gui.workers import CLOSING_PROPERTY, GeneratorWorker, call_in_generator
from gpuselect.report.model import local_gpu_groups, local_mark_groups, local_marks
from gpuselect.types import LOSSES, TRAINING_PRECISIONS, Family, Mode, Offload, Precision, Sharding, Stage, values
from gpuselect.workloads.model import Workload, sentence_start

SOURCES = ("Preset", "config.json", "Model file (.py)", "Parameters and FLOPs")
BUY_COLOUR, RENT_COLOUR, CHOSEN, OTHER = (43, 108, 176), (221, 107, 32), (43, 108, 176), (160, 174, 192)
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "logits", "overhead")
MEMORY_COLOURS = ("#2b6cb0", "#805ad5", "#d69e2e", "#38a169", "#dd6b20", "#718096")


class SpecialSpinBox(QSpinBox):
    """A spin box whose special-value text ("auto", "workload default") can be typed as well as
    reached by stepping down to 0: typing "auto" over 512 left 512."""

    def validate(self, text: str, pos: int) -> tuple[QValidator.State, str, int]:
        special, typed = self.specialValueText().lower(), text.strip().lower()
        if special and typed and special.startswith(typed):
            state = QValidator.State.Acceptable if typed == special else QValidator.State.Intermediate
            return (state, text, pos)
        return super().validate(text, pos)

    def valueFromText(self, text: str) -> int:
        if self.specialValueText() and text.strip().lower() == self.specialValueText().lower():
            return self.minimum()
        return super().valueFromText(text)


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


def memory_breakdown(row: Any) -> dict[str, float] | None:
    """The row's memory breakdown (GB per part) where the estimator gives one."""
    parts = getattr(row, "memory_breakdown_gb", None)  # the memory model's field; absent before it lands
    return dict(parts) if isinstance(parts, dict) and parts else None


class MemoryBar(QWidget):
    """Memory needed against the card's VRAM: a stacked bar of the breakdown, the VRAM marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.parts: dict[str, float] = {}
        self.vram: float = 0.0
        self.setMinimumHeight(22)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Memory needed against VRAM")

    def set_parts(self, parts: dict[str, float], vram: float) -> None:
        self.parts, self.vram = parts, vram
        self.setToolTip("\n".join(f"{k}: {v:,.1f} GB" for k, v in parts.items()) + f"\nVRAM: {vram_text(vram)} GB")
        self.update()

    def paintEvent(self, _event: Any) -> None:
        total = sum(self.parts.values())
        if total <= 0 or self.vram <= 0:
            return
        p = QPainter(self)
        scale = (self.width() - 2) / max(total, self.vram)
        x = 1.0
        for name, colour in zip(MEMORY_PARTS, MEMORY_COLOURS, strict=True):
            w = self.parts.get(name, 0.0) * scale
            if w > 0:
                p.fillRect(int(x), 3, max(1, int(w)), self.height() - 6, QColor(colour))
                x += w
        pen = p.pen()
        pen.setColor(self.palette().color(QPalette.ColorRole.Text))
        pen.setWidth(2)
        p.setPen(pen)
        xv = int(1 + self.vram * scale)
        p.drawLine(xv, 0, xv, self.height())
        p.end()


class RowFilter(QSortFilterProxyModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.family = ""
        self.fits_only = True
        self.setSortRole(SORT_ROLE)

    def filterAcceptsRow(self, source_row: int, source_parent: Any) -> bool:  # noqa: ARG002 - Qt's override signature
        r = self.sourceModel().rows[source_row]  # type: ignore[attr-defined]
        if self.family and r.family != self.family:
            return False
        return not (self.fits_only and not r.fits)


def _number(value: object) -> float | None:
    """A finite number from a stored value (QSettings gives an int, a float or text), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        v = float(value)
    except (ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def _choice(items: list[str], tooltip: str) -> QComboBox:
    """A drop-down of the estimate's options, the first item selected."""
    box = QComboBox()
    box.addItems(items)
    box.setToolTip(tooltip)
    return box


def _local_band(loc: Any) -> str:
    """' (±N %; basis)' of a local device, as the CLI's "Your machine" line and the report give it:
    a CPU benchmarked on a busy machine read "577 days" here with a 27-12,285 days bar and no word
    of why (QA 16c)."""
    basis = f"; {in_the_app(loc.basis)}" if loc.basis else ""
    return f" (±{100 * loc.error_band:.0f} %{basis})"


def band_borrowed(note: str) -> str:
    """A row's band note with what the CLI's footnote adds: whose band the row takes instead."""
    return f"{note}: {BORROWED_BAND_NOTE} (docs/accuracy.md)"


class EstimatePage(QWidget):
    computed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from gpuselect.workloads.presets import PRESETS

        self.money = MoneyFormat()
        self.grid = 0.45
        # --- the workload ----------------------------------------------------------------------
        self.source = QComboBox()
        self.source.addItems(SOURCES)
        self.source.setAccessibleName("Workload source")
        self.search = QLineEdit(placeholderText="Search workloads…")
        self.search.setAccessibleName("Search workloads")
        self.presets = QListWidget()
        self.presets.setAccessibleName("Workload presets")
        # a long name ends in "…" (its tooltip has it whole) rather than a sideways scroll bar
        self.presets.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.presets.setTextElideMode(Qt.TextElideMode.ElideRight)
        for w in PRESETS.values():
            item = QListWidgetItem(f"{w.name}")
            item.setData(Qt.ItemDataRole.UserRole, w.public_id)
            item.setToolTip(f"{w.name}\n{w.description}\n{w.params / 1e6:,.1f} M parameters; {w.source}")
            self.presets.addItem(item)
        self.presets.setCurrentRow(list(PRESETS).index("resnet50"))
        # Five rows at least, and any room the inputs leave: sized to its whole length, the list
        # pushed the inputs below the fold of a 1024x640 window.
        rows = self.presets.sizeHintForRow(0) * 5 + 2 * self.presets.frameWidth()
        self.presets.setMinimumHeight(rows)
        self.presets.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        preset_box = QWidget()
        pl = QVBoxLayout(preset_box)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.search)
        pl.addWidget(self.presets, 1)
        # config.json: read as data, with full / LoRA / QLoRA
        self.config_path = QLineEdit(placeholderText="path to a Hugging Face config.json")
        self.config_path.setAccessibleName("config.json path")
        self.config_browse = QPushButton("Browse…")
        self.mode = QComboBox()
        self.mode.addItems(values(Mode))
        self.mode.setToolTip("full fine-tuning, LoRA adapters, or QLoRA (LoRA on a 4-bit base)")
        self.mode.setAccessibleName("Training mode")
        self.seq_len = SpecialSpinBox(minimum=0, maximum=1_048_576)
        self.seq_len.setSpecialValueText("from the config")  # the stubs lack the keyword form
        self.seq_len.setAccessibleName("Sequence length")
        config_box = QWidget()
        cf = QFormLayout(config_box)
        cf.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(self.config_path, 1)
        row.addWidget(self.config_browse)
        cf.addRow("File:", row)
        cf.addRow("Mode:", self.mode)
        cf.addRow("Sequence:", self.seq_len)
        # model file: its code runs (in the profiler), so the user picks it knowingly
        self.model_path = QLineEdit(placeholderText="your_model.py")
        self.model_path.setToolTip("The Python file that defines your model (its code runs to measure it)")
        self.model_path.setAccessibleName("Model file path")
        self.model_browse = QPushButton("Browse…")
        self.factory = QLineEdit(placeholderText="e.g. build_model")
        self.factory.setToolTip("The function in the file that returns the torch.nn.Module, called with no arguments")
        self.factory.setAccessibleName("Factory function")
        self.input_shape = QLineEdit(placeholderText="e.g. 3,224,224")
        self.input_shape.setToolTip("One sample's shape, without the batch dimension")
        self.input_shape.setAccessibleName("Input shape")
        model_box = QWidget()
        mf = QFormLayout(model_box)
        mf.setContentsMargins(0, 0, 0, 0)
        row2 = QHBoxLayout()
        row2.addWidget(self.model_path, 1)
        row2.addWidget(self.model_browse)
        mf.addRow("File:", row2)
        mf.addRow("Factory:", self.factory)
        mf.addRow("Input shape:", self.input_shape)
        warn = QLabel("The file's code runs to measure the model: open only files you trust.")
        warn.setWordWrap(True)
        mf.addRow(warn)
        # own figures
        self.custom_params = QDoubleSpinBox(minimum=0, maximum=1e7, decimals=3, value=100.0, suffix=" M parameters")
        self.custom_params.setAccessibleName("Parameters")
        self.custom_flops = QDoubleSpinBox(minimum=0, maximum=1e9, decimals=3, value=10.0, suffix=" GFLOP / sample")
        self.custom_flops.setToolTip("Forward-pass FLOPs of one sample (training costs about three times that)")
        self.custom_flops.setAccessibleName("FLOPs per sample")
        figures_box = QWidget()
        ff = QFormLayout(figures_box)
        ff.setContentsMargins(0, 0, 0, 0)
        ff.addRow("Size:", self.custom_params)
        ff.addRow("FLOPs:", self.custom_flops)
        self.source_stack = QStackedWidget()
        for box in (preset_box, config_box, model_box, figures_box):
            self.source_stack.addWidget(box)
        # --- the assumptions -------------------------------------------------------------------
        self.precision = QComboBox()
        self.precision.addItems([p.value for p in TRAINING_PRECISIONS])  # what the estimator accepts, auto first
        self.precision.setCurrentText(Precision.AUTO)
        self.precision.setToolTip(
            "bf16/fp16: mixed precision on tensor cores; TF32: NVIDIA's 19-bit tensor format for FP32 math (Ampere+)"
        )
        self.batch = SpecialSpinBox(minimum=0, maximum=1_000_000)
        self.batch.setSpecialValueText("auto")  # the stubs lack the keyword form
        self.batch.setToolTip("Per-GPU batch; auto = the workload's default, capped by the GPU's memory (VRAM)")
        self.dataset = SpecialSpinBox(minimum=0, maximum=2_000_000_000)
        self.dataset.setSpecialValueText("workload default")  # the stubs lack the keyword form
        self.dataset.setGroupSeparatorShown(True)
        self.dataset.setToolTip("Samples per epoch; starts at the workload's own figure")
        self.epochs = SpecialSpinBox(minimum=0, maximum=100_000)
        self.epochs.setSpecialValueText("workload default")  # the stubs lack the keyword form
        self.deadline = QDoubleSpinBox(minimum=0.01, maximum=1e6, value=72.0, suffix=" h", decimals=2)
        self.budget = budget_box()  # as the Settings page's: same format, same limit
        self.electricity = electricity_box()
        self.electricity.setValue(0.15)
        self.max_gpus = QComboBox()
        # As the CLI's --max-gpus: auto is boxes up to 8 and, where none meets the deadline or holds
        # the model, clusters up to 1,024; a number is the most GPUs of any option (it was the box
        # size only, so "1" still showed 32-GPU clusters).
        self.max_gpus.addItems(["auto", *(str(1 << i) for i in range(11))])
        self.max_gpus.setToolTip(
            "auto: boxes of up to 8 GPUs, and clusters of datacenter cards up to 1,024 where no box meets the "
            "deadline or holds the model. A number is the most GPUs an option may have; more than 8 is several "
            "machines: stage 4, a cluster"
        )
        # two decimals, as --network-gbs takes them: a 100 Gb/s NIC is 12.5 GB/s, 1 GbE 0.125 (0.13)
        self.network = QDoubleSpinBox(minimum=0, maximum=1e5, value=0, decimals=2, suffix=" GB/s per node")
        self.network.setSpecialValueText("card's reference node")  # 0: the default, as the CLI's --network-gbs
        self.network.setGroupSeparatorShown(True)
        from gpuselect.estimate.parallel import describe_reference_networks

        self.network.setToolTip(
            f"Network between nodes for clusters (> 8 GPUs). Default: {describe_reference_networks()}"
        )
        from gpuselect.estimate.memory import CHECKPOINTINGS

        self.checkpointing = _choice(
            ["auto", *CHECKPOINTINGS],  # auto: as the estimate's default
            "Activation checkpointing: auto = full where the model does not fit otherwise, or where it trains faster\n"
            "at the larger batch it allows;\n"
            "selective keeps the linear layers' outputs and recomputes attention and elementwise ops (transformers;\n"
            "other models checkpoint fully); full keeps each block's input (~4/3 the compute, ~3/2 for LoRA/QLoRA)",
        )
        self.loss = _choice(
            list(LOSSES),
            "How a language model's loss is computed, which sets the memory peak of checkpointed runs:\n"
            "chunked = in pieces (as LitGPT does); plain = one cross-entropy over fp32-upcast logits\n"
            "(as Hugging Face's models and Trainer do: about 14 bytes per logit at its backward)",
        )
        # Several GPUs: how the state is split, and what lives in host memory (as --sharding / --offload)
        self.sharding = _choice(
            ["auto", *values(Sharding)],
            "How several GPUs split the training state: auto = FSDP where the model does not fit otherwise, or where\n"
            "a transformer's replicated state caps the batch and sharding trains faster;\n"
            "zero1 splits the optimizer state, zero2 also the gradients, fsdp everything (weights gathered per layer)",
        )
        self.offload = _choice(
            values(Offload),
            "Keep the optimizer state (optimizer) or also the weights and gradients (params) in CPU memory:\n"
            "less GPU memory, slower steps (copies over PCIe, the optimizer step on the CPU)",
        )
        form = QFormLayout()
        widget: QWidget
        for label, widget in (
            ("&Precision:", self.precision),
            ("Batch si&ze:", self.batch),
            ("Dataset (sa&mples):", self.dataset),
            ("Ep&ochs:", self.epochs),
            ("&Deadline:", self.deadline),
            ("B&udget:", self.budget),
            ("Electr&icity:", self.electricity),
            ("Ma&x GPUs:", self.max_gpus),
            ("Chec&kpointing:", self.checkpointing),
            ("&Loss:", self.loss),
            ("Shardin&g:", self.sharding),
            ("Offload (hos&t):", self.offload),
            ("&Network:", self.network),
        ):
            lab = QLabel(label)
            lab.setBuddy(widget)
            widget.setAccessibleName(label.replace("&", "").rstrip(":"))
            form.addRow(lab, widget)
        src_label = QLabel("&Workload:")
        src_label.setBuddy(self.source)
        left = QVBoxLayout()
        head = QHBoxLayout()
        head.addWidget(src_label)
        head.addWidget(self.source, 1)
        left.addLayout(head)
        left.addWidget(self.source_stack, 1)
        # what the workload was read as, with its caveats (an unchecked model type, keys taken from
        # defaults, sliding windows, MoE's active share): the CLI's "Model:" line and the report
        # said them; the window showed a config's or model file's estimate without them
        self.workload_info = QLabel("")
        self.workload_info.setWordWrap(True)
        self.workload_info.setTextFormat(Qt.TextFormat.PlainText)  # a path may hold "<"
        self.workload_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.workload_info.setAccessibleName("Workload read as")
        left.addWidget(self.workload_info)
        left.addLayout(form)
        left.addStretch(0)  # the room below the inputs where a short source page leaves some
        self._inputs_column = left
        self._show_source_page(0)
        # --- the answer ------------------------------------------------------------------------
        self.recommendation = QLabel("…")
        self.recommendation.setWordWrap(True)
        self.recommendation.setTextFormat(Qt.TextFormat.RichText)
        self.recommendation.setAccessibleName("Recommendation")
        self.recommendation.setToolTip(
            "Stages: 1 no GPU, 2 one consumer GPU, 3 a workstation or rented datacenter GPUs, 4 a cluster"
        )
        self.error = QLabel("")
        self.error.setWordWrap(True)
        self.error.setAccessibleName("Input problem")
        self.memory_text = QLabel("")
        self.memory_text.setAccessibleName("Memory needed")
        self.memory_bar = MemoryBar()
        # this machine's GPUs (identical cards once): "needs X of your Y GB"
        self.local_memory_text = QLabel("")
        self.local_memory_text.setAccessibleName("Memory needed on your GPU")
        self.local_memory_bar = MemoryBar()
        self.local_memory_bar.setAccessibleName("Memory needed against your GPU's VRAM")
        self.memory_legend = QLabel(
            " ".join(f"<span style='color:{c}'>■</span> {n}" for n, c in zip(MEMORY_PARTS, MEMORY_COLOURS, strict=True))
        )
        self.memory_legend.setTextFormat(Qt.TextFormat.RichText)
        for part in (
            self.memory_text,
            self.memory_bar,
            self.memory_legend,
            self.local_memory_text,
            self.local_memory_bar,
        ):
            part.setVisible(False)
        self.family = QComboBox()
        self.family.addItems(["all families", *values(Family)])
        self.fits_only = QCheckBox("Fitting options onl&y")
        self.fits_only.setChecked(True)
        self.model = RowsModel(
            [
                Column(
                    "GPU",
                    lambda r: f"{r.count}x {r.name}" + ("  ★ recommended" if self._is_chosen(r) else ""),
                    key=lambda r: f"{r.name}\t{r.count:06d}",  # by card, then count: "1024x" sorted before "16x"
                ),
                Column("Family", lambda r: r.family),
                Column(
                    "VRAM",
                    lambda r: r.vram_gb,
                    # as the CLI, the report and the memory line print it: "179.06", not "179"
                    fmt=lambda v: "—" if v is None else f"{vram_text(float(v))} GB",
                    numeric=True,
                    tooltip="memory per GPU (VRAM): bounds the model and the batch",
                ),
                Column(
                    "Fits",
                    lambda r: "yes" if r.fits else "no",
                    tooltip="model + optimizer state + activations fit the GPU's memory (VRAM)",
                ),
                Column("Batch", lambda r: r.batch_size, numeric=True),
                # What each row trains in, as the CLI's "prec": auto is bf16 on one card, fp16 or fp32
                # on another, and a card without the precision asked for falls back.
                Column(
                    "Precision",
                    lambda r: f"{r.precision_used}{'†' if r.faster_precision else ''}" if r.precision_used else "",
                    # † marks two cases (EstimateRow.faster_precision): fp8 that bf16 beats, and a
                    # 16-bit request that fp32 beats; the row's Note says which and by how much
                    tooltip="the precision this option trains in (auto: what the card trains well in; a card\n"
                    f"without the one asked for falls back).\nfp8†: {in_the_app(SLOWER_FP8_NOTE)}"
                    f"\nfp16†, bf16†: {in_the_app(SLOWER_16BIT_NOTE)}\n(the row's Note says by how much)",
                ),
                Column(
                    "Time",
                    lambda r: r.total_time_h,
                    fmt=lambda v: "—" if v is None else fmt_hours(v),
                    numeric=True,
                    tooltip="± the error band in the next column",
                ),
                Column(
                    "Deadline",
                    lambda r: ("meets" if r.meets_deadline else "misses") if r.fits and r.total_time_h else "",
                    tooltip="whether this option finishes inside your deadline",
                ),
                Column(
                    "±",
                    # a band of no time: "100 %" stood beside the "—" of every option that does not fit
                    lambda r: (100 * r.error_band, bool(r.band_note)) if r.fits and r.total_time_h else None,
                    # "*" where no measured step validates the row, as the CLI's "34%*" and the
                    # report's "(*)": the table showed such a band as if it were measured (QA 17f)
                    fmt=lambda v: "—" if v is None else f"{v[0]:,.0f} %" + ("*" if v[1] else ""),
                    numeric=True,
                    key=lambda r: 100 * r.error_band if r.fits and r.total_time_h else float("inf"),
                    cell_tip=lambda r: (
                        f"±{100 * r.error_band:.0f} %* — {band_borrowed(r.band_note)}"
                        if r.band_note and r.fits and r.total_time_h
                        else None
                    ),
                    tooltip="error band of this row's regime (small overhead-bound models, CNNs, transformers, LLMs on one\n"
                    "or several GPUs): wide enough to cover 80 % of that regime's validation cases (docs/accuracy.md).\n"
                    "*: no measured step validates this row (hover it for why): its band is borrowed",
                ),
                Column(
                    "Buy",
                    lambda r: (r.buy_cost_usd, bool(r.owned)) if r.buy_cost_usd is not None else None,
                    # "§" where the user's own cards are left out of it, as the CLI's and the report's
                    # tables mark it: "$1.76" to buy an RTX 3090 they own read as its price
                    fmt=lambda v: "—" if v is None else self.money(v[0]) + (" §" if v[1] else ""),
                    numeric=True,
                    key=lambda r: float("inf") if r.buy_cost_usd is None else r.buy_cost_usd,
                    cell_tip=lambda r: f"§ {owned_note(r.owned)}" if r.owned and r.buy_cost_usd is not None else None,
                    tooltip="price (street or launch) + electricity; for a card you own (§), only the cards you lack",
                ),
                Column(
                    "Rent",
                    lambda r: r.cloud_cost_usd,
                    fmt=lambda v: self.money(v),
                    numeric=True,
                    tooltip="cheapest on-demand price, late 2025",
                ),
                Column(
                    "Energy",
                    lambda r: r.energy_kwh,
                    fmt=num(1, " kWh"),
                    tooltip="the GPUs' power (TDP x 0.85) over the run, not the host's; running costs use it",
                    numeric=True,
                ),
                Column(
                    "Break-even",
                    lambda r: r.break_even_hours,
                    fmt=num(0, " h"),
                    numeric=True,
                    tooltip="hours of use after which buying costs less than renting",
                ),
                Column("Note", lambda r: in_the_app(r.note or ("; ".join(r.suggestions) if r.suggestions else ""))),
            ],
            self,
        )
        self.proxy = RowFilter(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(
            next(i for i, c in enumerate(self.model.columns) if c.header == "Time"), Qt.SortOrder.AscendingOrder
        )
        self.table.setAccessibleName("Estimates for every GPU")
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.stage_plot = themed_plot(title="Best per stage (★ chosen)", bottom="training time (h)")
        self.stage_plot.setLogMode(x=True, y=False)
        self.stage_plot.setToolTip(
            "Bars: the best option of each stage; whiskers: its error range; dotted line: your deadline.\n"
            "1 no GPU (this CPU) · 2 one consumer GPU · 3 a workstation or rented datacenter GPUs · 4 a cluster"
        )
        self.stage_plot.getAxis("left").setTicks(
            [[(4 - i, f"{i + 1} {name}") for i, name in enumerate(("CPU", "one GPU", "box/cloud", "cluster"))]]
        )
        self.stage_plot.setMouseEnabled(x=False, y=False)
        self.scatter_plot = themed_plot(title="Time vs cost", left="cost", bottom="training time (h)")
        self.scatter_plot.setLogMode(x=True, y=True)
        self._fitting_title = False
        self.scatter_plot.installEventFilter(self)  # resized: _fit_scatter_title
        self.scatter_plot.setToolTip(
            "Each option: circles to buy, triangles to rent; the line joins the Pareto front.\n"
            "Hover or click a point for its figures."
        )
        self.hover = QLabel("")
        self.hover.setWordWrap(True)
        self.hover.setAccessibleName("Point details")
        filters = QHBoxLayout()
        filters.addWidget(self.family)
        filters.addWidget(self.fits_only)
        filters.addStretch(1)
        table_box = QWidget()
        tl = QVBoxLayout(table_box)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addLayout(filters)
        tl.addWidget(self.table, 1)
        plots = QSplitter(Qt.Orientation.Horizontal)
        plots.addWidget(self.stage_plot)
        plots.addWidget(self.scatter_plot)
        plots.setChildrenCollapsible(False)
        for plot in (
            self.stage_plot,
            self.scatter_plot,
        ):  # no minimum from the title's length: the panes share the width
            plot.setMinimumSize(200, 180)
            plot.getPlotItem().titleLabel.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        plots.setSizes([1000, 1000])
        chart_box = QWidget()
        cl = QVBoxLayout(chart_box)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(plots, 1)
        cl.addWidget(self.hover)
        self.views = QTabWidget()
        self.views.addTab(chart_box, "Cha&rts")
        self.views.addTab(table_box, "&All options")
        right = QVBoxLayout()
        right.addWidget(self.recommendation)
        right.addWidget(self.error)
        mem_local = QHBoxLayout()
        mem_local.addWidget(self.local_memory_text)
        mem_local.addWidget(self.local_memory_bar, 1)
        right.addLayout(mem_local)
        mem = QHBoxLayout()
        mem.addWidget(self.memory_text)
        mem.addWidget(self.memory_bar, 1)
        right.addLayout(mem)
        right.addWidget(self.memory_legend)
        right.addWidget(self.views, 1)
        lay = QHBoxLayout(self)
        lw = QWidget()
        lw.setLayout(left)
        # The inputs scroll: on a 1024x640 screen a config's long "read as" line squeezed every
        # input below it to half its height, the text cut (QA 17f).
        self.inputs_scroll = QScrollArea()
        self.inputs_scroll.setWidget(lw)
        self.inputs_scroll.setWidgetResizable(True)
        self.inputs_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.inputs_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        bar = self.inputs_scroll.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        # as wide as the inputs and the scroll bar beside them: narrower, the bar hid their right edge
        self.inputs_scroll.setMinimumWidth(min(lw.minimumSizeHint().width(), 330) + bar)
        self.inputs_scroll.setMaximumWidth(330 + bar)
        lay.addWidget(self.inputs_scroll)
        app = QApplication.instance()
        if isinstance(app, QApplication):  # a mnemonic (Alt+N) focused an input scrolled out of view
            app.focusChanged.connect(self._keep_input_in_view)
        rw = QWidget()
        rw.setLayout(right)
        lay.addWidget(rw, 1)
        # --- behaviour -------------------------------------------------------------------------
        self._debounce = QTimer(self, singleShot=True, interval=250)
        self._debounce.timeout.connect(self.recompute)
        for sig in (
            self.source.currentIndexChanged,
            self.custom_params.valueChanged,
            self.custom_flops.valueChanged,
            self.config_path.editingFinished,
            self.mode.currentIndexChanged,
            self.seq_len.valueChanged,
            self.model_path.editingFinished,
            self.factory.editingFinished,
            self.input_shape.editingFinished,
            self.precision.currentIndexChanged,
            self.batch.valueChanged,
            self.dataset.valueChanged,
            self.epochs.valueChanged,
            self.deadline.valueChanged,
            self.budget.valueChanged,
            self.electricity.valueChanged,
            self.max_gpus.currentIndexChanged,
            self.checkpointing.currentIndexChanged,
            self.loss.currentIndexChanged,
            self.sharding.currentIndexChanged,
            self.offload.currentIndexChanged,
            self.network.valueChanged,
        ):
            sig.connect(self._schedule)
        self.source.currentIndexChanged.connect(self._show_source_page)
        self.source.currentIndexChanged.connect(self._workload_changed)
        self.presets.currentRowChanged.connect(self._workload_changed)
        self.presets.currentRowChanged.connect(self._schedule)
        # After the layout settles: the "read as" line the new choice writes may grow and shrink the
        # list under the row Qt has just scrolled to. The page's own timer dies with the page.
        self._reveal = QTimer(self, singleShot=True, interval=0)
        self.presets.currentRowChanged.connect(self._reveal.start)
        self._presets_view = self.presets.viewport()
        self._presets_view.installEventFilter(self)  # resized (that line, the window): the choice stays in view
        self._reveal.timeout.connect(self._show_chosen_preset)
        self.config_path.editingFinished.connect(self._workload_changed)
        self.model_path.editingFinished.connect(self._workload_changed)
        self.config_browse.clicked.connect(
            lambda: self._browse(self.config_path, "config.json (*.json);;All files (*)")
        )
        self.model_browse.clicked.connect(lambda: self._browse(self.model_path, "Python (*.py)"))
        self.search.textChanged.connect(self._filter_presets)
        self.family.currentIndexChanged.connect(self._refilter)
        self.fits_only.toggled.connect(self._refilter)
        self.table.selectionModel().currentRowChanged.connect(self._on_row_selected)
        self.worker: GeneratorWorker | None = None
        self._dirty = False
        self.result: Any = None
        self._stale_now = False  # the answer shown is the last valid input's, not the input's
        self.local_snapshot: Any = None  # set by the window when the Hardware page has detected the machine
        self.local_bench: Any = None  # a benchmark report that anchors this machine's estimates
        self.bench_source: Any = None  # or a callable the window sets: the Benchmark page's last report
        # or a callable the window sets: whether a benchmark runs now (an estimate then waits: its
        # CPU time made the benchmark's figures low, and those figures then fed this page)
        self.bench_running: Any = None
        # What the settings last put in the deadline, budget and electricity boxes: a box showing
        # anything else holds the user's own figure.
        self._defaults: dict[QDoubleSpinBox, float] = {}
        self._workload_changed()

    # --- settings and inputs -----------------------------------------------------------------------

    def apply_settings(self, settings: Any) -> None:
        """Defaults from the settings page; every cost, input and axis in the user's currency.

        A deadline, budget or electricity price the user typed here stays (a price or budget is
        re-expressed in the new currency); only a box still showing the last defaults takes the
        new ones. Saving any setting reset all three."""
        old_rate = self.money.rate
        self.money = MoneyFormat.from_settings(settings)
        rate = self.money.rate
        self.grid = settings.grid_kg_co2_per_kwh
        sym = self.money.symbol
        self.electricity.setPrefix(sym)
        self.budget.setPrefix(sym)
        for box, default, money in (
            (self.electricity, settings.electricity_usd_per_kwh * rate, True),
            (self.budget, (settings.default_budget_usd or 0) * rate, True),
            (self.deadline, settings.default_deadline_hours, False),
        ):
            # read before the box changes (a per-rate maximum once cut ₩195 first, read as typed)
            typed = box.value() if box in self._defaults and self._defaults[box] != box.value() else None
            box.blockSignals(True)  # the estimate is scheduled below, once
            box.setValue(default)
            self._defaults[box] = box.value()  # as the box shows it (rounded to its decimals)
            if typed is not None:
                box.setValue(typed / old_rate * rate if money else typed)
            box.blockSignals(False)
        self.model.set_rows(self.model.rows)  # re-format the cost columns
        if self.result is not None:
            self._show(self.result)
        self._schedule()

    # --- the inputs kept between runs (the window's window.ini) ---------------------------------------

    def _spins(self) -> dict[str, QSpinBox | QDoubleSpinBox]:
        return {
            "seq_len": self.seq_len,
            "params_m": self.custom_params,
            "gflops": self.custom_flops,
            "batch": self.batch,
            "dataset": self.dataset,
            "epochs": self.epochs,
            "network_gbs": self.network,
        }

    def _combos(self) -> dict[str, QComboBox]:
        return {
            "mode": self.mode,
            "precision": self.precision,
            "max_gpus": self.max_gpus,
            "checkpointing": self.checkpointing,
            "loss": self.loss,
            "sharding": self.sharding,
            "offload": self.offload,
        }

    def _texts(self) -> dict[str, QLineEdit]:
        return {
            "config": self.config_path,
            "model": self.model_path,
            "factory": self.factory,
            "shape": self.input_shape,
        }

    def _money_boxes(self) -> dict[str, tuple[QDoubleSpinBox, float]]:
        """The boxes the settings fill, by key, with the factor from the stored figure to the box's
        (the price and budget are stored in US dollars, so a currency change does not misread them)."""
        return {
            "deadline_hours": (self.deadline, 1.0),
            "budget_usd": (self.budget, self.money.rate),
            "electricity_usd_per_kwh": (self.electricity, self.money.rate),
        }

    @Slot(QWidget, QWidget)
    def _keep_input_in_view(self, _old: QWidget | None, new: QWidget | None) -> None:
        inputs = self.inputs_scroll.widget()
        if new is not None and inputs is not None and inputs.isAncestorOf(new):
            self.inputs_scroll.ensureWidgetVisible(new)

    @Slot(int)
    def _show_source_page(self, index: int) -> None:
        """The stack sized to the page shown: sized to its tallest (the preset list), a config's three
        rows stood over a blank as high as the list, and the inputs scrolled on a small screen."""
        stack = self.source_stack
        for i in range(stack.count()):
            policy = QSizePolicy.Policy.Preferred if i == index else QSizePolicy.Policy.Ignored
            page = stack.widget(i)
            if page is not None:
                page.setSizePolicy(policy, policy)
        stack.setCurrentIndex(index)
        stack.updateGeometry()
        # The preset list grows into the room left; a config's or own figures' rows stay together
        # above the inputs, the room below them.
        column = self._inputs_column
        column.setStretch(column.indexOf(stack), 1 if index == 0 else 0)
        column.setStretch(column.count() - 1, 0 if index == 0 else 1)

    def inputs(self) -> dict[str, object]:
        """The inputs to keep for the next start. A deadline, budget or price is kept only where the
        user typed it: one still showing the settings' default follows the settings then too."""
        item = self.presets.currentItem()
        values: dict[str, object] = {"source": self.source.currentIndex()}
        if item is not None:
            values["preset"] = str(item.data(Qt.ItemDataRole.UserRole))
        values |= {key: box.value() for key, box in self._spins().items()}
        values |= {key: box.currentText() for key, box in self._combos().items()}
        values |= {key: edit.text() for key, edit in self._texts().items()}
        for key, (box, factor) in self._money_boxes().items():
            if box in self._defaults and self._defaults[box] != box.value():
                values[key] = box.value() / factor
        return values

    def restore_inputs(self, values: dict[str, object]) -> None:
        """Set the inputs kept by ``inputs``; a value that is missing, of the wrong type or out of
        range is skipped, alone (a damaged window.ini must not stop the app or the other values)."""
        preset = values.get("preset")
        for row in range(self.presets.count()):
            if isinstance(preset, str) and self.presets.item(row).data(Qt.ItemDataRole.UserRole) == preset:
                self.presets.setCurrentRow(row)  # resets batch, dataset and epochs: before them
        for key, edit in self._texts().items():
            text = values.get(key)
            if isinstance(text, str) and len(text) <= 4096:
                edit.setText(text)
        source = _number(values.get("source"))
        # Not the model file: its code runs to measure it, and a restart must not run it unasked
        # (the file may have changed since). Its fields are back; choosing the source runs it.
        if source in (0, 1, 3):
            self.source.setCurrentIndex(int(source))
        for key, combo in self._combos().items():
            text = values.get(key)
            found = combo.findText(text) if isinstance(text, str) else -1
            if found >= 0:
                combo.setCurrentIndex(found)
        # The batch, dataset and epochs belong to the workload they were kept with: where that was
        # the model file, which is not restored, the preset shown keeps its own (QA 14: Llama 70B got
        # the model file's 100,000 x 10 and a stage-4 answer).
        tied = ("batch", "dataset", "epochs") if source == 2 else ()
        for key, spin in self._spins().items():
            v = _number(values.get(key))
            if key in tied:
                continue
            if v is not None and spin.minimum() <= v <= spin.maximum():
                if isinstance(spin, QDoubleSpinBox):
                    spin.setValue(v)
                elif v == int(v):
                    spin.setValue(int(v))
        for key, (money_box, factor) in self._money_boxes().items():
            v = _number(values.get(key))
            if v is not None and money_box.minimum() <= v * factor <= money_box.maximum():
                money_box.setValue(v * factor)

    def electricity_usd(self) -> float:
        return self.electricity.value() / self.money.rate

    def budget_usd(self) -> float | None:
        return self.budget.value() / self.money.rate if self.budget.value() else None

    def _browse(self, edit: QLineEdit, filt: str) -> None:
        from gpuselect.gui.dialogs import open_file_name

        path = open_file_name(self, "Open", edit.text(), filt)
        if path:
            edit.setText(path)
            edit.editingFinished.emit()

    @Slot()
    def _workload_changed(self) -> None:
        """A new workload: dataset and epochs show its own figures (a preset's at once, others' once read),
        and the batch goes back to auto (a CNN's 512 would not fit a 70B model, and said nothing)."""
        for spin in (self.dataset, self.epochs, self.batch):
            spin.blockSignals(True)
            spin.setValue(0)
            spin.blockSignals(False)
        if self.source.currentIndex() == 0:
            item = self.presets.currentItem()
            if item is not None:
                from gpuselect.workloads.presets import get_preset

                self._show_defaults(get_preset(str(item.data(Qt.ItemDataRole.UserRole))))

    def _show_defaults(self, w: Any) -> None:
        for spin, value in ((self.dataset, w.default_dataset_size), (self.epochs, w.default_epochs)):
            if spin.value() == 0:
                spin.blockSignals(True)
                spin.setValue(min(int(value), spin.maximum()))
                spin.blockSignals(False)

    @Slot()
    def _show_chosen_preset(self) -> None:
        """The chosen workload in the list's view: Llama 3.1 8B QLoRA, chosen, sat just below the
        list's last row once its longer "read as" line had shrunk the list under it."""
        if (item := self.presets.currentItem()) is not None:
            self.presets.scrollToItem(item)

    @Slot(str)
    def _filter_presets(self, text: str) -> None:
        t = text.lower()
        for i in range(self.presets.count()):
            item = self.presets.item(i)
            item.setHidden(
                bool(t) and t not in item.text().lower() and t not in str(item.data(Qt.ItemDataRole.UserRole))
            )
        # The workload estimated is one the list shows: "70b full" left only Llama 70B in the list and
        # ResNet-50, hidden, selected and estimated (QA 17f); the first match is chosen instead.
        current = self.presets.currentItem()
        if current is None or current.isHidden():
            shown = [self.presets.item(i) for i in range(self.presets.count()) if not self.presets.item(i).isHidden()]
            if shown:
                self.presets.setCurrentItem(shown[0])
        current = self.presets.currentItem()
        if current is not None and not current.isHidden():  # the filter cleared: the list showed its top
            self.presets.scrollToItem(current)

    @Slot()
    def _refilter(self) -> None:
        fam = self.family.currentText()
        self.proxy.family = "" if fam.startswith("all") else fam
        self.proxy.fits_only = self.fits_only.isChecked()
        self.proxy.invalidate()

    @Slot()
    def _schedule(self) -> None:
        self._debounce.start()

    def workload_spec(self) -> Any:
        from gpuselect.app.workflows import WorkloadSpec, parse_shape

        i = self.source.currentIndex()
        if i == 0:
            item = self.presets.currentItem()
            return WorkloadSpec(preset=str(item.data(Qt.ItemDataRole.UserRole))) if item is not None else WorkloadSpec()
        if i == 1:
            return WorkloadSpec(
                config=self.config_path.text().strip() or None,
                mode=Mode(self.mode.currentText()),
                seq_len=self.seq_len.value() or None,
            )
        if i == 2:
            shape = self.input_shape.text().strip()
            return WorkloadSpec(
                model=self.model_path.text().strip() or None,
                factory=self.factory.text().strip() or None,
                input_shape=parse_shape(shape) if shape else None,
            )
        return WorkloadSpec(params=self.custom_params.value() * 1e6, flops_per_sample=self.custom_flops.value() * 1e9)

    def assumptions(self) -> Any:
        from gpuselect.estimate.api import Assumptions

        a = Assumptions(
            precision=Precision(self.precision.currentText()),
            batch_size=self.batch.value() or None,
            dataset_size=self.dataset.value() or None,
            epochs=self.epochs.value() or None,
            deadline_hours=self.deadline.value(),
            budget_usd=self.budget_usd(),
            electricity_usd_per_kwh=self.electricity_usd(),
            grid_kg_co2_per_kwh=self.grid,
            checkpointing=None if self.checkpointing.currentText() == "auto" else self.checkpointing.currentText(),
            loss=self.loss.currentText(),
            sharding=None if self.sharding.currentText() == "auto" else Sharding(self.sharding.currentText()),
            offload=Offload(self.offload.currentText()),
            network_gbs=self.network.value() or None,
        )
        cap = self.max_gpus.currentText()
        return a if cap == "auto" else replace(a, max_gpus=int(cap), cluster_max_gpus=int(cap))

    # --- the estimate, in a worker -------------------------------------------------------------------

    @Slot()
    def recompute(self) -> None:
        if self.worker is not None:
            self._dirty = True
            return
        if self.bench_running is not None and self.bench_running():
            self._dirty = True  # the window re-runs it when the benchmark ends
            self._stale("Waiting for the benchmark to finish…")  # the answer shown is the last input's: greyed
            return
        try:
            spec = self.workload_spec()
        except Exception as exc:  # noqa: BLE001 - a UsageError from a bad shape: said in the window
            self._stale(f"<b>Cannot estimate:</b> {exc}")
            return
        if not spec.given:
            self._stale(
                {1: "Choose a config.json to estimate.", 2: "Choose a model file, its factory and input shape."}.get(
                    self.source.currentIndex(), ""
                )
            )
            return
        if self.source.currentIndex() == 2 and (spec.factory is None or spec.input_shape is None):
            # the file alone: wait for the rest rather than fail (the message stayed up while it ran)
            self._stale("Give the model's factory function and one sample's input shape.")
            return
        too_much = over_limit(self.electricity_usd(), self.budget_usd(), self.money)
        if too_much:  # in your currency, as the Settings page says it (the estimator's words are in US$)
            self._stale(f"<b>Cannot estimate:</b> {too_much}.")
            return
        a = self.assumptions()
        snap = self.local_snapshot
        bench = self.bench_source() if self.bench_source is not None else self.local_bench

        def work() -> Any:
            from gpuselect.app.machine import this_machine
            from gpuselect.app.workflows import estimate_for_machine, load_workload

            machine = this_machine(snapshot=snap, bench=bench) if snap is not None else None
            return estimate_for_machine(load_workload(spec), a, machine)

        self.worker = GeneratorWorker(call_in_generator(work), self)
        self.worker.finished.connect(self._on_result)
        self.worker.failed.connect(self._on_failed)
        self.worker.start()
        if self.source.currentIndex() == 2:
            from gpuselect.workloads.profile import TRACE_TIMEOUT_S

            self.error.setText(
                f"Measuring the model: its code runs in a separate process (at most {TRACE_TIMEOUT_S:.0f} s)…"
            )

    @Slot(object)
    def _on_result(self, result: Any) -> None:
        self.worker = None
        self.result = result
        self.error.setText("")
        self._set_stale(False)
        self._show_defaults(result.workload)
        self._show_workload(result.workload)
        self.model.set_rows(result.rows)
        self._show(result)
        self.computed.emit(result)
        if self._dirty:
            self._dirty = False
            self.recompute()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.worker = None
        self._stale(f"<b>Cannot estimate:</b> {message}")
        if self._dirty:
            self._dirty = False
            self.recompute()

    def _stale(self, message: str) -> None:
        """The input is not one that can be estimated: say why, and grey out the answer shown, which
        is the last valid input's (it was left looking current)."""
        self.error.setText(message)
        self._set_stale(self.result is not None)
        if self.result is None:  # no answer yet: the placeholder "…" stood over the refusal at start
            self.recommendation.setText("")

    def busy_reason(self) -> str | None:
        """Why a report now would be the wrong one, in one sentence, where waiting is the cure: a
        benchmark running (the report carries its figures) or the model file being measured; None
        otherwise. The refusal said "fix the input" then."""
        if self.bench_running is not None and self.bench_running():
            return "a benchmark is running; wait for it to finish, then export"
        if self.worker is not None and self.source.currentIndex() == 2:
            return "the model file is being measured; wait for the measurement to finish, then export"
        return None

    def stale_reason(self) -> str | None:
        """Why the answer shown is not the input's (an input it cannot estimate), in one sentence;
        None when it is current. An export then would write the last valid input's report."""
        if not self._stale_now:
            return None
        from html import unescape

        why = unescape(re.sub(r"<[^>]+>", "", self.error.text())).strip()
        return f"the estimate shown is for the last valid input, not this one ({why})"

    def _set_stale(self, stale: bool) -> None:
        self._stale_now = stale
        for w in self._answer_widgets():
            w.setEnabled(not stale)
        # A disabled chart is drawn as before: faded, so an old answer's charts do not look current
        # beside the greyed text (QA 14).
        for plot in (self.stage_plot, self.scatter_plot):
            if stale:
                fade = QGraphicsOpacityEffect(plot)
                fade.setOpacity(0.35)
                plot.setGraphicsEffect(fade)
            else:
                plot.setGraphicsEffect(None)
        self.recommendation.setToolTip(
            "This answer is for the last valid input; fix the input above to update it."
            if stale
            else "Stages: 1 no GPU, 2 one consumer GPU, 3 a workstation or rented datacenter GPUs, 4 a cluster"
        )

    def _show_workload(self, w: Workload) -> None:
        from gpuselect.output import millions

        trained = "" if w.trainable_params == w.params else f" ({millions(w.trainable_params, 2)} trained)"
        self.workload_info.setText(f"{millions(w.params)} parameters{trained}: {w.description}")

    def _answer_widgets(self) -> list[QWidget]:
        return [
            self.workload_info,
            self.recommendation,
            self.memory_text,
            self.memory_bar,
            self.local_memory_text,
            self.local_memory_bar,
            self.memory_legend,
            self.views,
        ]

    def _show(self, result: Any) -> None:
        from html import escape

        rec = result.recommendation
        choice, why = explain(rec, self.money)
        left_out = {x.split(" ", 1)[0] for x in rec.excluded}
        # identical GPUs once ("your 8× H100 80GB HBM3 (each alone): 2.2 h"), as in the time-vs-cost chart
        parts = [
            f"your {who}: {fmt_hours(hours)}{_local_band(locs[0])}"
            for hours, who, locs in local_mark_groups(result.local, left_out)
        ]
        parts += [
            f"your {loc.device}: "
            + (
                "left out (critical finding)"
                if loc.device in left_out
                else ("does not fit" if not loc.fits else fmt_hours(loc.total_time_h))
            )
            for loc in result.local
            if loc.device in left_out or not loc.total_time_h or not loc.fits
        ]
        local = "; ".join(parts)
        self.recommendation.setText(
            f"<b>{escape(stage_heading(rec))}: {escape(choice)}</b><br>{escape(in_the_app(why))}"
            + (f"<br><i>{escape(local)}</i>" if local else "")
        )
        self.hover.setText("Hover over or click a point in the time-vs-cost chart for its figures.")
        self._plot_stages(result)
        self._plot_scatter(result)
        self._show_memory(self._chosen_row(result))
        self._show_local_memory(result)

    def _is_chosen(self, r: Any) -> bool:
        o = self.result.recommendation.option if self.result is not None else None
        if not o:
            return False
        return bool(r.gpu_id == o.get("gpu_id") and r.count == o.get("count") and o.get("kind") != "have")

    def _chosen_row(self, result: Any) -> Any:
        o = result.recommendation.option or result.recommendation.own
        if not o:
            return None
        return next((r for r in result.rows if r.gpu_id == o.get("gpu_id") and r.count == o.get("count")), None)

    @Slot(object, object)
    def _on_row_selected(self, current: Any, _previous: Any) -> None:
        # Only the user's pick: a model reset (a theme or currency change re-sets the rows) also moves
        # the current row, and the bar switched to another option than the headline's.
        if current.isValid() and self.table.hasFocus():
            self._show_memory(self.model.rows[self.proxy.mapToSource(current).row()])

    def _show_local_memory(self, result: Any) -> None:
        """This machine's GPU(s): one bar, identical cards counted once (the peak is per GPU, the
        grouping the report's); where the cards differ, the first group's, the others in the tooltip."""
        groups = [(who, locs) for who, locs in local_gpu_groups(result.local) if memory_breakdown(locs[0]) is not None]
        for w in (self.local_memory_text, self.local_memory_bar):
            w.setVisible(bool(groups))
        if not groups:
            return

        def needs(who: str, g: Any) -> str:
            return (
                f"your {who}: needs {need_text(float(g.peak_memory_gb or 0), float(g.vram_gb or 0))} of your "
                f"{vram_text(float(g.vram_gb or 0))} GB"
            )

        who, locs = groups[0]
        first = locs[0]
        self.local_memory_text.setText(needs(who, first) + ("" if first.fits else " (does not fit)"))
        self.local_memory_bar.set_parts(memory_breakdown(first) or {}, float(first.vram_gb or 0))
        self.local_memory_text.setToolTip("\n".join(needs(w, locs[0]) for w, locs in groups[1:]))

    def _show_memory(self, row: Any) -> None:
        parts = memory_breakdown(row) if row is not None else None
        for w in (self.memory_text, self.memory_bar, self.memory_legend):
            w.setVisible(parts is not None)
        if parts is None:
            return
        need = float(getattr(row, "peak_memory_gb", None) or sum(parts.values()))
        vram = float(row.vram_gb or 0)
        # the memory the fit was judged against (an H100's 79.65, not 80 beside a "does not fit" at 79.7)
        self.memory_text.setText(
            f"{row.count}x {row.name}: needs {need_text(need, vram)} of {vram_text(vram)} GB per GPU"
        )
        self.memory_bar.set_parts(parts, vram)

    # --- charts ----------------------------------------------------------------------------------

    def _text_colour(self) -> QColor:
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance()
        return (app.palette() if app is not None else self.palette()).color(QPalette.ColorRole.Text)  # type: ignore[attr-defined]

    def _plot_stages(self, result: Any) -> None:
        """One bar per stage: the best option's time (log), its error range, time and cost written
        on it, the recommended one highlighted; the deadline as a dotted line."""
        p = self.stage_plot
        p.clear()
        rec = result.recommendation
        deadline = result.assumptions.deadline_hours
        spans = [deadline]
        for v in rec.per_stage.values():
            if v and v.get("total_time_h") and v.get("fits", True):
                spans += [float(v[k]) for k in ("total_time_h", "time_low_h", "time_high_h") if v.get(k)]
        left = 10 ** math.floor(math.log10(min(spans)) - 0.3)
        fg = self._text_colour()
        # The error whiskers cross the grey bars: white text colour (dark theme) vanished on them.
        whisker = QColor("#f6e05e") if fg.lightness() > 128 else fg
        for i, key in enumerate(str(s.value) for s in Stage):
            v = rec.per_stage.get(key)
            y = 4 - i
            if not v or not v.get("total_time_h") or not v.get("fits", True):
                # a CPU that cannot hold the training state was drawn at its time ("6,637 days")
                text = "does not fit" if v and v.get("fits") is False else "no option"
                label = pg.TextItem(text, anchor=(0, 0.5), color=fg)
                label.setPos(math.log10(left), y)
                p.addItem(label)
                continue
            t = float(v["total_time_h"])
            chosen = int(key) == rec.stage
            brush = pg.mkBrush(*CHOSEN) if chosen else pg.mkBrush(*OTHER)
            p.addItem(
                pg.BarGraphItem(
                    x0=[math.log10(left)], x1=[math.log10(t)], y=[y], height=0.34, brush=brush, pen=pg.mkPen(None)
                )
            )
            lo, hi = v.get("time_low_h"), v.get("time_high_h")
            if lo and hi:
                import numpy as np

                p.addItem(
                    pg.ErrorBarItem(
                        x=np.array([math.log10(t)]),
                        y=np.array([float(y)]),
                        left=np.array([math.log10(t) - math.log10(float(lo))]),
                        right=np.array([math.log10(float(hi)) - math.log10(t)]),
                        beam=0.15,
                        pen=pg.mkPen(whisker, width=1.5),
                    )
                )
            cost = v.get("cost_usd")
            how = {"have": "power", "rent": "to rent", "buy": "to buy"}.get(str(v.get("kind")), "")
            money = f" · {self.money(float(cost))} {how}" if isinstance(cost, (int, float)) and how else ""
            rng = fmt_hours_range(float(lo), float(hi), unit_of=t) if lo and hi else ""  # in the time's unit
            # the CPU's model name (up to 48 characters) pushed the label out of a 1024-wide window;
            # the row is already "1 CPU" and the advice above names the model
            who = "this CPU" if v.get("kind") == "cpu" else option_name(v)
            who = who if len(who) <= 26 else who[:25] + "…"
            label = pg.TextItem(
                ("★ " if chosen else "") + f"{who}: {fmt_hours(t)}\n{rng}{money}",
                anchor=(0, 1),
                color=fg,
                fill=pg.mkBrush(self.palette().color(QPalette.ColorRole.Window)),  # the deadline line crossed it
            )
            label.setZValue(20)  # above the deadline line, added later
            label.setPos(math.log10(left), y + 0.2)
            p.addItem(label)
        p.addItem(
            pg.InfiniteLine(
                pos=math.log10(deadline),
                angle=90,
                pen=pg.mkPen((197, 48, 48), width=2, style=Qt.PenStyle.DotLine),
                label=f"deadline {fmt_hours(deadline)}",
                labelOpts={"position": 0.04, "color": (197, 48, 48)},
            )
        )
        p.setXRange(math.log10(left), math.log10(max(spans)) + 0.15, padding=0)  # ticks: plots.LogAxis
        p.setYRange(0.5, 4.75, padding=0)

    def _plot_scatter(self, result: Any) -> None:
        p = self.scatter_plot
        p.clear()
        p.setLabel("left", f"cost ({self.money.symbol})")
        self._fit_scatter_title()
        buy: list[dict[str, Any]] = []
        rent: list[dict[str, Any]] = []
        for r in result.rows:
            if not (r.fits and r.total_time_h):
                continue
            if r.buy_cost_usd:
                buy.append(
                    {
                        "pos": (math.log10(r.total_time_h), math.log10(self.money.value(r.buy_cost_usd))),
                        "data": (r, "buy"),
                    }
                )
            if r.cloud_cost_usd:
                rent.append(
                    {
                        "pos": (math.log10(r.total_time_h), math.log10(self.money.value(r.cloud_cost_usd))),
                        "data": (r, "rent"),
                    }
                )
        for pts, name, symbol, colour in ((buy, "buy", "o", BUY_COLOUR), (rent, "rent", "t1", RENT_COLOUR)):
            if not pts:
                continue
            item = pg.ScatterPlotItem(
                size=7, symbol=symbol, brush=pg.mkBrush(*colour, 150), pen=pg.mkPen(None), hoverable=True, name=name
            )
            item.setToolTip(None)
            item.addPoints(pts)
            item.sigHovered.connect(self._on_hover)
            item.sigClicked.connect(self._on_hover)
            p.addItem(item)
        allpts = [(10 ** d["pos"][0], 10 ** d["pos"][1], d["data"]) for d in buy + rent]
        if allpts:
            front = pareto(allpts)
            # PlotDataItem applies the log mode itself: linear values here (the scatter items take log10 positions)
            p.plot([x for x, _, _ in front], [y for _, y, _ in front], pen=pg.mkPen(self._text_colour(), width=1.5))
        deadline = result.assumptions.deadline_hours
        p.addItem(
            pg.InfiniteLine(
                pos=math.log10(deadline),
                angle=90,
                pen=pg.mkPen((197, 48, 48), width=2, style=Qt.PenStyle.DotLine),
                label="deadline",
                labelOpts={"position": 0.95, "color": (197, 48, 48)},
            )
        )
        left_out = {x.split(" ", 1)[0] for x in result.recommendation.excluded}
        # identical local GPUs share one mark ("your 8× H100 80GB HBM3 (each alone)"), not eight stacked labels
        for i, (hours, who) in enumerate(local_marks(result.local, left_out)):
            p.addItem(
                pg.InfiniteLine(
                    pos=math.log10(hours),
                    angle=90,
                    pen=pg.mkPen((47, 133, 90), style=Qt.PenStyle.DashLine),
                    label=f"your {who}",
                    labelOpts={"position": 0.08 + 0.07 * (i % 4), "color": (47, 133, 90)},
                )
            )
        if result.assumptions.budget_usd:
            p.addItem(
                pg.InfiniteLine(
                    pos=math.log10(self.money.value(result.assumptions.budget_usd)),
                    angle=0,
                    pen=pg.mkPen((197, 48, 48), style=Qt.PenStyle.DashLine),
                    label="budget",
                    # Left-aligned (centred on the line's end, the axis cut it to "ɔudget"); under the
                    # line in the chart's upper half, over it in the lower half: a budget below
                    # every cost put it under the plot's bottom edge, cut in half.
                    labelOpts={"position": 0.02, "color": (197, 48, 48), "anchors": [(0, 0), (0, 1)]},
                )
            )

    def eventFilter(self, watched: Any, event: Any) -> bool:
        from PySide6.QtCore import QEvent

        if watched is self.scatter_plot and event.type() == QEvent.Type.Resize:
            self._fit_scatter_title()
        elif watched is getattr(self, "_presets_view", None) and event.type() == QEvent.Type.Resize:
            self._reveal.start()
        return super().eventFilter(watched, event)

    @Slot()
    def _fit_scatter_title(self) -> None:
        """The longest title that fits the chart's width. The legend sits in the title (inside the
        plot it would cover points somewhere). A title wider than the pane widened the chart past
        the pane's edge, which cut it ("Pareto fron") and the plot's right side: at 9pt it had 11
        px to spare in a 1024 px window, none with a narrower pane, axis or wider font."""
        if self._fitting_title:
            return
        self._fitting_title = True
        try:
            fg = self._text_colour().name()
            marks = (
                f"<span style='color:rgb{BUY_COLOUR}'>● buy</span> <span style='color:rgb{RENT_COLOUR}'>▲ rent</span>"
            )
            variants = (
                f"Time vs cost &nbsp;{marks} <span style='color:{fg}'>— Pareto front</span>",
                f"{marks} <span style='color:{fg}'>— Pareto front</span>",
                f"{marks} <span style='color:{fg}'>— front</span>",
                marks,
            )
            label = self.scatter_plot.getPlotItem().titleLabel
            # The title's cell starts right of the cost axis and may end at the widget's edge.
            room = self.scatter_plot.width() - label.sceneBoundingRect().left() - 4
            for html in variants:
                self.scatter_plot.setTitle(html, size="9pt")
                if label.item.boundingRect().width() <= room:
                    break
        finally:
            self._fitting_title = False

    @Slot(object, object)
    def _on_hover(self, _item: Any, points: Any, *_: Any) -> None:
        if points is None or len(points) == 0:
            return
        r, kind = points[0].data()
        if self.result is None or r not in self.result.rows:
            return  # a point of an earlier workload
        cost = r.buy_cost_usd if kind == "buy" else r.cloud_cost_usd
        self.hover.setText(
            f"{sentence_start(self.result.workload.name)} on {r.count}x {r.name}: {fmt_hours(r.total_time_h)} "
            f"(±{100 * r.error_band:.0f} %), {self.money(cost)} to {kind}; batch {r.batch_size} per GPU"
            + (f"; band borrowed: {r.band_note}" if r.band_note else "")
        )

    def changeEvent(self, event: Any) -> None:
        # Light/dark switched at run time: redraw the charts so labels, whiskers and the front take the new colours.
        from PySide6.QtCore import QEvent

        if (
            event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
            and self.result is not None
        ):
            QTimer.singleShot(0, lambda: self._show(self.result) if self.result is not None else None)
        super().changeEvent(event)

    def shutdown(self) -> None:
        # Closing: no debounced or "once more" recompute may start a worker after this.
        self.setProperty(CLOSING_PROPERTY, True)
        self._debounce.stop()
        from gpuselect.workloads.profile import stop_user_traces

        stop_user_traces()  # a model file being traced: stopped now, not after its time limit
        if self.worker is not None:
            self.worker.shutdown()
