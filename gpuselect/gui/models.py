"""Qt table models over the core's plain records (sortable through a QSortFilterProxyModel)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QApplication, QStyle

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[Any], Any]  # raw value (used for sorting)
    fmt: Callable[[Any], str] = lambda v: "—" if v is None else str(v)
    tooltip: str = ""
    numeric: bool = False
    key: Callable[[Any], Any] | None = None  # the row's sort key where the value's text sorts wrong
    cell_tip: Callable[[Any], str | None] | None = None  # the row's own tooltip for this cell, if any


def num(digits: int = 1, suffix: str = "") -> Callable[[Any], str]:
    def f(v: Any) -> str:
        return "—" if v is None else f"{v:,.{digits}f}{suffix}"

    return f


#: A text cell longer than this gets its full text as its tooltip: a column sized to the view cuts
#: it ("a tight fit: 47.5 of 48 GB, within the memory estimate's error; ..." in the Note column).
LONG_TEXT = 24

_NO_PARENT = QModelIndex()  # the invalid index: the default parent, read only


class RowsModel(QAbstractTableModel):
    def __init__(self, columns: list[Column], parent: Any = None) -> None:
        super().__init__(parent)
        self.columns = columns
        self.rows: list[Any] = []

    def set_rows(self, rows: list[Any]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def reformat(self) -> None:
        """The same rows shown anew (a currency change): selection, sort and scroll stay, where a
        reset would drop them."""
        if self.rows and self.columns:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.rows) - 1, len(self.columns) - 1))

    def rowCount(self, parent: Index = _NO_PARENT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = _NO_PARENT) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows) or not 0 <= index.column() < len(self.columns):
            return None
        col = self.columns[index.column()]
        raw = col.value(self.rows[index.row()])
        if role == Qt.ItemDataRole.DisplayRole:
            return col.fmt(raw)
        if role == SORT_ROLE:
            if col.key is not None:
                return col.key(self.rows[index.row()])
            if raw is None:
                return float("inf") if col.numeric else ""
            return raw if col.numeric else str(raw)
        if role == Qt.ItemDataRole.TextAlignmentRole and col.numeric:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            own = col.cell_tip(self.rows[index.row()]) if col.cell_tip is not None else None
            if own:
                return "\n".join(textwrap.wrap(own, 100))
            text = "" if col.numeric else col.fmt(raw)
            if len(text) > LONG_TEXT:  # wrapped: a tooltip is one line otherwise, as wide as the screen
                return "\n".join(textwrap.wrap(text, 100))
            return col.tooltip or None
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.columns):
            if role == Qt.ItemDataRole.DisplayRole:
                return self.columns[section].header
            if role == Qt.ItemDataRole.ToolTipRole:
                return self.columns[section].tooltip or None
        return None


_SEVERITY_ICON = {
    "critical": QStyle.StandardPixmap.SP_MessageBoxCritical,
    "warning": QStyle.StandardPixmap.SP_MessageBoxWarning,
    "info": QStyle.StandardPixmap.SP_MessageBoxInformation,
    "unknown": QStyle.StandardPixmap.SP_MessageBoxQuestion,
    "ok": QStyle.StandardPixmap.SP_DialogApplyButton,
}


class FindingsModel(RowsModel):
    """Health findings: severity shown by icon *and* word, never colour alone."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(
            [
                Column(
                    "Severity", lambda f: f.severity.value.upper(), tooltip="critical, warning, info, ok or not checked"
                ),
                Column("Device", lambda f: f.device),
                Column("Finding", lambda f: f.title),
                Column("Measured", lambda f: None if f.value is None else f"{f.value}{' ' + f.unit if f.unit else ''}"),
                Column(
                    "Threshold",
                    lambda f: None if f.threshold is None else f"{f.threshold}{' ' + f.unit if f.unit else ''}",
                ),
                Column("What to do", lambda f: f.remedy),
            ],
            parent,
        )

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (
            role == Qt.ItemDataRole.DecorationRole
            and index.isValid()
            and index.column() == 0
            and index.row() < len(self.rows)
        ):
            app = QApplication.instance()
            if app is not None:
                return app.style().standardIcon(_SEVERITY_ICON[self.rows[index.row()].severity.value])  # type: ignore[attr-defined]
        if role == Qt.ItemDataRole.ToolTipRole and index.isValid() and index.row() < len(self.rows):
            f = self.rows[index.row()]
            return f"{f.detail}" + (f"\nSource: {f.source}" if f.source else "")
        if role == SORT_ROLE and index.isValid() and index.column() == 0 and index.row() < len(self.rows):
            return -self.rows[index.row()].severity.rank
        return super().data(index, role)
