"""pyqtgraph helpers that follow the window's light or dark palette."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QWidget


def themed_plot(parent: QWidget | None = None, *, title: str = "", left: str = "", bottom: str = "") -> pg.PlotWidget:
    w = pg.PlotWidget(parent)
    apply_theme(w)
    w.setTitle(title)
    if left:
        w.setLabel("left", left)
    if bottom:
        w.setLabel("bottom", bottom)
    w.showGrid(x=True, y=True, alpha=0.2)
    w.setAccessibleName(title or "plot")
    return w


def apply_theme(w: pg.PlotWidget) -> None:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    pal = app.palette() if app is not None else w.palette()  # type: ignore[attr-defined]
    w.setBackground(pal.color(QPalette.ColorRole.Base))
    fg = pal.color(QPalette.ColorRole.Text)
    for axis in ("left", "bottom"):
        ax = w.getAxis(axis)
        ax.setPen(fg)
        ax.setTextPen(fg)
