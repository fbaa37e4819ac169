"""pyqtgraph helpers that follow the window's light or dark palette.

``apply_theme`` re-colours everything a chart draws from the palette — background, axes and their
labels, the title, the legend and text labels still in the previous theme's colour — so switching
light/dark at run time leaves no dark text on a dark background.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette, QPen
from PySide6.QtWidgets import QWidget

#: One colour per GPU: Okabe-Ito's colour-blind-safe set (its black swapped for grey so it shows
#: on a dark background too). GPUs 8+ repeat the colours with a dashed line.
GPU_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")


def gpu_pen(index: int, width: float = 2.0) -> QPen:
    """Colour per GPU, and a dash from the ninth on, so eight or more curves stay distinguishable."""
    style = Qt.PenStyle.SolidLine if index < len(GPU_COLOURS) else Qt.PenStyle.DashLine
    pen: QPen = pg.mkPen(GPU_COLOURS[index % len(GPU_COLOURS)], width=width, style=style)
    return pen


def themed_plot(parent: QWidget | None = None, *, title: str = "", left: str = "", bottom: str = "") -> pg.PlotWidget:
    w = pg.PlotWidget(parent)
    w.setProperty("gs_title", title)
    apply_theme(w)
    if left:
        w.setLabel("left", left)
    if bottom:
        w.setLabel("bottom", bottom)
    w.showGrid(x=True, y=True, alpha=0.2)
    w.setAccessibleName(title or "plot")
    return w


def set_title(w: pg.PlotWidget, title: str) -> None:
    """Set a chart's title in the theme's text colour (and remember it for re-theming)."""
    w.setProperty("gs_title", title)
    w.setTitle(title, color=theme_colours()[1].name())


def theme_colours() -> tuple[QColor, QColor]:
    """(background, foreground) of the application's palette."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    pal = app.palette() if app is not None else QPalette()  # type: ignore[attr-defined]
    return pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text)


def apply_theme(w: pg.PlotWidget) -> None:
    bg, fg = theme_colours()
    old_fg = w.property("gs_fg")
    w.setProperty("gs_fg", fg.name())
    w.setBackground(bg)
    for axis in ("left", "bottom", "right", "top"):
        ax = w.getAxis(axis)
        ax.setPen(fg)
        ax.setTextPen(fg)  # tick labels and the axis label
    title = w.property("gs_title")
    if title:
        w.setTitle(title, color=fg.name())
    item = w.getPlotItem()
    legend = item.legend
    if legend is not None:
        legend.setBrush(QColor(bg.red(), bg.green(), bg.blue(), 200))
        legend.setPen(QColor(fg.red(), fg.green(), fg.blue(), 90))
        legend.setLabelTextColor(fg)
        for _sample, label in legend.items:  # setLabelTextColor does not re-render existing labels
            label.setText(label.text, color=fg)
    # Text labels drawn in the previous theme's foreground follow the new one; coloured ones
    # (a highlighted "recommended") keep their colour.
    for child in item.items:
        if isinstance(child, pg.TextItem) and old_fg is not None and child.color.name() == old_fg:
            child.setColor(fg)
