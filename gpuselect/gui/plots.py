"""pyqtgraph helpers that follow the window's light or dark palette.

``apply_theme`` re-colours everything a chart draws from the palette — background, axes and their
labels, the title, the legend and text labels still in the previous theme's colour — so switching
light/dark at run time leaves no dark text on a dark background.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

#: One colour per GPU: Okabe-Ito's colour-blind-safe set (its black swapped for grey so it shows
#: on a dark background too). GPUs 8+ repeat the colours with a dashed line.
GPU_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")


def gpu_pen(index: int, width: float = 2.0) -> QPen:
    """Colour per GPU, and a dash from the ninth on, so eight or more curves stay distinguishable."""
    style = Qt.PenStyle.SolidLine if index < len(GPU_COLOURS) else Qt.PenStyle.DashLine
    pen: QPen = pg.mkPen(GPU_COLOURS[index % len(GPU_COLOURS)], width=width, style=style)
    return pen


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def tick_text(value: float) -> str:
    """1, 20, 500, 5,000, then 10⁴-style (a cost axis of "100,000" pushed the chart's title off)."""
    if value >= 1e4:
        k = round(math.log10(value))
        if abs(value - 10.0**k) < 1e-6 * value:
            return "10" + str(k).translate(_SUPERSCRIPT)
        return f"{value:.0e}".replace("e+0", "e").replace("e+", "e")
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _linear_text(value: float, step: float) -> str:
    """A value of a linear run of ticks ``step`` apart, with the digits that tell them apart."""
    if value >= 1e4:
        exp = math.floor(math.log10(value))
        digits = max(0, exp - math.floor(math.log10(step) + 1e-9))
        return f"{value / 10.0**exp:.{digits}f}e{exp}"
    return f"{value:,.{max(0, -math.floor(math.log10(step) + 1e-9))}f}"


def log_ticks(
    lo: float, hi: float, pixels: float, extent: Callable[[str], float], preferred: Sequence[float] = ()
) -> tuple[list[tuple[float, str]], list[float]]:
    """Labelled and unlabelled ticks for a log axis from 10**lo to 10**hi, ``pixels`` long, whose
    labels take ``extent(text)`` pixels along it: the most useful set whose labels do not touch and
    lie wholly on the axis. pyqtgraph labelled every 2-9 ("0.50.60.70.8"), and ``decade_ticks``
    set fixed ticks that did not cover an empty chart's range or one decade.

    In order: decades with 2 and 5 between them (under three decades), every 1st/2nd/3rd/5th/...
    decade; where these give fewer than two labels (about a decade or less), every 1-9, then round
    linear steps. ``preferred`` (log10 values, e.g. the batch sizes measured) replaces the round
    values: all of them, or every 2nd, 3rd, ... where they would touch."""
    lo, hi = min(lo, hi), max(lo, hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo < 1e-12 or pixels <= 0:
        return [], []
    per = pixels / (hi - lo)

    def fits(labels: list[tuple[float, str]]) -> list[tuple[float, str]] | None:
        """The labels, or None where two touch; labels running off either end left out."""
        kept = []
        for v, text in labels:
            half = extent(text) / 2
            at = (v - lo) * per
            if at - half >= -1 and at + half <= pixels + 1:
                kept.append((at, half, v, text))
        gap = max(6.0, extent("0") / 2)
        for (a, ha, _, _), (b, hb, _, _) in itertools.pairwise(kept):
            if b - a < ha + hb + gap:
                return None
        return [(v, text) for _, _, v, text in kept]

    def decades(mantissas: Sequence[int], step: int = 1) -> list[tuple[float, str]]:
        out = []
        for k in range(math.floor(lo) - 1, math.ceil(hi) + 1):
            if k % step == 0:
                for m in mantissas:
                    v = k + math.log10(m)
                    if lo - 1e-9 <= v <= hi + 1e-9:
                        out.append((v, tick_text(m * 10.0**k)))
        return out

    def linear(step: float) -> list[tuple[float, str]]:
        a, b = 10.0**lo, 10.0**hi
        if (b - a) / step > 200:  # hundreds of labels never fit: not worth measuring
            return []
        return [
            (math.log10(x), _linear_text(x, step))
            for i in range(math.ceil(a / step - 1e-9), math.floor(b / step + 1e-9) + 1)
            if (x := i * step) > 0
        ]

    candidates: list[list[tuple[float, str]]] = []
    if preferred:
        pts = sorted(v for v in preferred if lo - 1e-9 <= v <= hi + 1e-9)
        candidates = [[(v, tick_text(10.0**v)) for v in pts[::k]] for k in range(1, len(pts) + 1)]
    else:
        if hi - lo < 3:
            candidates.append(decades((1, 2, 5)))
        candidates += [decades((1,), step) for step in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500)]
        candidates.append(decades(range(1, 10)))
        unit = 10.0 ** math.floor(hi - 1)  # linear steps from a tenth of the top value down
        candidates += [linear(unit * f) for f in (1e-2, 2e-2, 5e-2, 0.1, 0.2, 0.5, 1, 2, 5)][::-1]
    best: list[tuple[float, str]] = []
    for labels in candidates:
        kept = fits(labels)
        if kept is None:
            continue
        if len(kept) >= 2:
            best = kept
            break
        if len(kept) > len(best):
            best = kept  # one label, kept unless a later set has two
    majors = {round(v, 9) for v, _ in best}
    minors: list[float] = []
    if (hi - lo) * 9 <= pixels / 4:  # the 2-9 of each decade, unlabelled, where they stay 4 px apart
        minors = [v for v, _ in decades(range(1, 10)) if round(v, 9) not in majors]
    elif (hi - lo) <= pixels / 4:
        minors = [v for v, _ in decades((1,)) if round(v, 9) not in majors]
    return best, minors


class LogAxis(pg.AxisItem):  # type: ignore[misc]  # pyqtgraph is untyped
    """An axis whose log mode labels only what fits (:func:`log_ticks`), at any range and size —
    an empty chart's default range, a one-decade one, after a zoom — and never adds an SI-prefix
    factor ("cost (x1e+09)") to labels that already show the whole value."""

    def __init__(self, orientation: str, **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self.preferred: list[float] = []
        self._texts: dict[float, str] = {}

    def set_preferred(self, values: Sequence[float]) -> None:
        """Label these log10 values (thinned where they would touch) instead of round ones."""
        self.preferred = list(values)
        self.picture = None
        self.update()

    def _extent(self, text: str) -> float:
        metrics = QFontMetricsF(self.style.get("tickFont") or self.font())
        if self.orientation in ("left", "right"):
            return float(metrics.height())
        return float(metrics.horizontalAdvance(text))

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, list[float]]]:  # noqa: N803 - pyqtgraph's names
        if not self.logMode:
            return super().tickValues(minVal, maxVal, size)  # type: ignore[no-any-return]
        labels, minors = log_ticks(minVal, maxVal, size, self._extent, self.preferred)
        self._texts = {round(v, 9): text for v, text in labels}
        return [(1.0, [v for v, _ in labels]), (0.1, minors)]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        if not self.logMode:
            return super().tickStrings(values, scale, spacing)  # type: ignore[no-any-return]
        return [self._texts.get(round(v, 9), "") for v in values]

    def updateAutoSIPrefix(self) -> None:
        if not self.logMode:
            super().updateAutoSIPrefix()
            return
        self.autoSIPrefixScale = 1.0
        self.labelUnitPrefix = ""
        self._updateLabel()


class _SideLegend(pg.LegendItem):  # type: ignore[misc]  # pyqtgraph is untyped
    def mouseDragEvent(self, ev: Any) -> None:
        ev.ignore()  # it sits in the chart's layout: dragged, it would land on the data again


def side_legend(w: pg.PlotWidget) -> pg.LegendItem:
    """A legend beside the plot area, right of it, instead of inside: inside it covered data points
    (the benchmark chart's lstm and transformer points at the largest batch). Curves plotted with a
    ``name`` join it as with ``addLegend``."""
    item = w.getPlotItem()
    legend = _SideLegend(offset=None)
    legend.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)  # its rows, not the plot's height
    item.layout.addItem(legend, 2, 3)  # row 2 holds the left axis, the view box and the right axis
    item.layout.setAlignment(legend, Qt.AlignmentFlag.AlignTop)
    item.legend = legend
    apply_theme(w)
    return legend


def themed_plot(parent: QWidget | None = None, *, title: str = "", left: str = "", bottom: str = "") -> pg.PlotWidget:
    # Log-aware axes on every chart: any of them may be switched to log mode.
    w = pg.PlotWidget(parent, axisItems={"left": LogAxis("left"), "bottom": LogAxis("bottom")})
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
