"""Catalog page: browse and filter every GPU, see each figure's source, find the user overlay."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gpuselect.app.money import MoneyFormat
from gpuselect.estimate.memory import vram_text
from gpuselect.gui.models import SORT_ROLE, Column, RowsModel, num
from gpuselect.settings import Settings
from gpuselect.types import Family, values


class _Filter(QSortFilterProxyModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.family = ""
        self.text = ""
        self.setSortRole(SORT_ROLE)

    def filterAcceptsRow(self, source_row: int, source_parent: Any) -> bool:  # noqa: ARG002 - Qt's override signature
        e = self.sourceModel().rows[source_row]  # type: ignore[attr-defined]
        if self.family and e.family != self.family:
            return False
        return not self.text or self.text in e.name.lower() or self.text in e.id


class CatalogPage(QWidget):
    def _problem_text(self) -> str:
        """Whose the problems are: the user's overlay file, named (it said "The catalog has 13
        problems", and the built-in catalog had none), and any of the built-in catalog's."""

        def count(n: int) -> str:
            return f"{n} problem{'s' if n != 1 else ''}"

        mine = self.catalog.overlay_problems
        builtin = self.catalog.problems[: len(self.catalog.problems) - len(mine)]  # the overlay's come last
        parts = []
        if mine:
            parts.append(
                f"Your catalog overlay {self.overlay} has {count(len(mine))}; the entries concerned are ignored "
                "and the built-in catalog is used without them:\n" + "\n".join(mine)
            )
        if builtin:
            parts.append(
                f"The built-in catalog has {count(len(builtin))}; the entries concerned are ignored:\n"
                + "\n".join(builtin)
            )
        return "\n".join(parts)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from gpuselect.catalog import load_catalog, user_overlay

        self.catalog = load_catalog()
        self.overlay = user_overlay()  # None: no config folder (HOME unset), no overlay to open
        self.money = MoneyFormat()
        self.search = QLineEdit(placeholderText="Search GPUs…")
        self.search.setAccessibleName("Search GPUs")
        self.family = QComboBox()
        self.family.addItems(["all families", *values(Family)])
        self.family.setAccessibleName("Family filter")
        self.open_overlay = QPushButton("Open &overlay folder")
        self.open_overlay.setToolTip(
            f"Your own prices and cards: {self.overlay} (gpuselect reads it, never writes it)"
            if self.overlay is not None
            else "No config folder (HOME is not set): there is no overlay to open"
        )
        self.open_overlay.setEnabled(self.overlay is not None)
        self.model = RowsModel(
            [
                Column("GPU", lambda e: e.name),
                Column("Family", lambda e: e.family),
                Column(
                    "VRAM",
                    lambda e: e.vram_gb,
                    fmt=num(0, " GB"),
                    numeric=True,
                    tooltip="GPU memory (VRAM): bounds the model and the batch",
                ),
                # Each "TFLOPS" under its precision, on a line of its own: on one line the four
                # headers pushed the cloud price past a 1024-wide window's edge (QA 17f).
                Column("GB/s", lambda e: e.memory_bandwidth_gbs, fmt=num(0), numeric=True),
                Column(
                    "FP32\nTFLOPS", lambda e: e.fp32_tflops, fmt=num(1), numeric=True, tooltip="TFLOP/s, non-tensor"
                ),
                Column(
                    "TF32\nTFLOPS",
                    lambda e: e.tf32_tflops,
                    fmt=num(0),
                    numeric=True,
                    tooltip="dense tensor TFLOP/s (TF32: 19-bit tensor format for FP32 math)",
                ),
                Column(
                    "FP16\nTFLOPS",
                    lambda e: e.fp16_tflops,
                    fmt=num(0),
                    numeric=True,
                    tooltip="dense tensor TFLOP/s with FP32 accumulate",
                ),
                Column(
                    "BF16\nTFLOPS", lambda e: e.bf16_tflops, fmt=num(0), numeric=True, tooltip="dense tensor TFLOP/s"
                ),
                Column("W", lambda e: e.tdp_w, fmt=num(0), numeric=True),
                # In the Settings page's currency, as the Estimate page's costs (the catalog keeps
                # US dollars; a user in euros saw "$" here beside "€" there).
                Column(
                    "Price",
                    # the price the estimate buys at (an overlay's street price showed its launch price)
                    lambda e: e.price_usd,
                    fmt=lambda v: "—" if v is None else self.money(v),
                    numeric=True,
                    tooltip="the street price your overlay sets, else the launch price (what the estimates buy "
                    "at), in your currency (Settings)",
                ),
                Column(
                    "Cloud /h",
                    lambda e: e.cloud_usd_per_hour,
                    fmt=lambda v: "—" if v is None else f"{self.money.symbol}{self.money.value(v):,.2f}",
                    numeric=True,
                    tooltip="cheapest on-demand price per GPU-hour, in your currency (Settings)",
                ),
            ],
            self,
        )
        self.model.set_rows(self.catalog.entries)
        self.proxy = _Filter(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)  # A to Z until the user picks a column
        self.table.setAccessibleName("GPU catalog")
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setVisible(False)
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setAccessibleName("Sources of the selected GPU's figures")
        self.details.setPlainText("Select a GPU to see every figure's source.")
        # The catalog's problems (a user overlay's, mostly) in a box of their own: in the details
        # pane they were replaced by the first filter or selection and not seen again.
        self.problems = QPlainTextEdit(readOnly=True)
        self.problems.setAccessibleName("Catalog problems")
        self.problems.setPlainText(self._problem_text())
        self.problems.setMaximumHeight(6 * self.problems.fontMetrics().lineSpacing() + 12)
        self.problems.setVisible(bool(self.catalog.problems))
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.family)
        top.addWidget(self.open_overlay)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)  # the table is what one scans; the sources need a few lines
        split.setStretchFactor(1, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.problems)
        lay.addWidget(split, 1)
        self.search.textChanged.connect(self._refilter)
        self.family.currentIndexChanged.connect(self._refilter)
        self.table.selectionModel().currentRowChanged.connect(self._show)
        self.open_overlay.clicked.connect(self._open_overlay)

    def apply_settings(self, settings: Settings) -> None:
        """Prices in the user's currency, re-formatted when the Settings page changes it."""
        self.money = MoneyFormat.from_settings(settings)
        self.model.reformat()

    @Slot()
    def _refilter(self) -> None:
        fam = self.family.currentText()
        self.proxy.family = "" if fam.startswith("all") else fam
        self.proxy.text = self.search.text().strip().lower()
        self.proxy.invalidate()
        if not self.table.selectionModel().currentIndex().isValid():
            # the filter hid the selected card: its sources stayed on show under other cards
            self.details.setPlainText("Select a GPU to see every figure's source.")

    @Slot(object, object)
    def _show(self, current: Any, _previous: Any) -> None:
        if not current.isValid():
            return
        e = self.model.rows[self.proxy.mapToSource(current).row()]
        lines = [f"{e.name} ({e.id}) — {e.architecture}, released {e.release_date}, {e.form_factor}"]
        if e.usable_vram_gb < e.vram_gb:
            # The table's VRAM is the spec sheet's ("180 GB"); the estimates fit against what training
            # can allocate ("179.06 GB"), and the catalog said nothing of it.
            why = "what the driver shows" if e.visible_vram_gb else "ECC on, the default, keeps 1/16 for its check bits"
            lines.append(
                f"Memory: {vram_text(e.vram_gb)} GB; the estimates count {vram_text(e.usable_vram_gb)} GB usable ({why})"
            )
        if e.notes:
            lines.append(f"Note: {e.notes}")
        for group, key in e.sources.items():
            lines.append(f"{group}: {self.catalog.source_text(key)}")
        self.details.setPlainText("\n".join(lines))

    @Slot()
    def _open_overlay(self) -> None:
        if self.overlay is None:
            return  # the button is disabled
        folder = self.overlay.parent
        folder.mkdir(parents=True, exist_ok=True)  # the folder only; the overlay file stays the user's
        opened = QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
        # No file manager (a server, a minimal desktop): the path, where it can be copied; the
        # button did nothing visible.
        self.details.setPlainText(
            f"Your overlay file: {self.overlay}"
            + ("" if opened else "\n(no file manager could open the folder: open it yourself)")
            + "\nIt adds or corrects cards and prices; `gpuselect catalog --validate FILE` checks it."
        )
