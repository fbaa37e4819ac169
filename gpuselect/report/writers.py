"""Write a Report as JSON, Markdown or PDF. Files are written atomically (temp file + rename):
an existing report is never left half-written. The PDF uses reportlab (pure Python, no Qt):
real text with embedded fonts, vector charts, page numbers, tables that split across pages."""

from __future__ import annotations

import dataclasses
import io
import locale
import math
import os
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuselect.estimate.memory import vram_text
from gpuselect.estimate.recommend import YEAR_H, fmt_hours, fmt_hours_range, money_text
from gpuselect.fsutil import atomic_write_bytes, atomic_write_text
from gpuselect.output import json_document, round_money, to_jsonable
from gpuselect.report.model import Report
from gpuselect.types import Stage

LETTER_REGIONS = {"US", "CA", "MX", "PH", "CL", "CO", "VE", "CR", "GT", "PR"}


def default_paper() -> str:
    """Letter in North America and a few other Letter countries, A4 elsewhere (LC_PAPER, LANG)."""
    for var in ("LC_PAPER", "LC_ALL", "LANG"):
        value = os.environ.get(var, "")
        if "_" in value:
            return "letter" if value.split("_", 1)[1][:2].upper() in LETTER_REGIONS else "a4"
    loc = locale.getlocale()[0] or ""
    return "letter" if "_" in loc and loc.split("_", 1)[1][:2].upper() in LETTER_REGIONS else "a4"


def to_json(report: Report) -> str:
    return json_document(round_money(to_jsonable({"report": report})), kind="report")


def to_markdown(report: Report) -> str:
    out = [
        f"# {report.title}",
        "",
        f"{report.generated_at} · gpuselect {report.app_version} · host {report.host} · {report.os}",
        "",
        f"**{report.verdict}**",
        "",
    ] + ([report.summary, ""] if report.summary else [])
    for s in report.sections:
        out += [f"## {s.title}", ""]
        out += [ln + "\n" for ln in s.lines]
        if s.table:
            head, *rows = s.table
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            out += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
            out.append("")
    if report.sources:
        out += ["### Catalog sources", ""] + [f"- {s}" for s in report.sources] + [""]
    return "\n".join(out)


def write(
    report: Report,
    path: str | os.PathLike[str],
    fmt: str,
    *,
    paper: str | None = None,
    compress: bool = True,
    on_wait: Callable[[Path], None] | None = None,
) -> Path:
    """``on_wait``: told before the write waits for a reader of a named pipe (fsutil)."""
    if fmt == "json":
        return atomic_write_text(path, to_json(report) + "\n", on_wait=on_wait)
    if fmt == "md":
        return atomic_write_text(path, to_markdown(report), on_wait=on_wait)
    pdf = to_pdf_bytes(report, paper=paper or default_paper(), compress=compress)
    return atomic_write_bytes(path, pdf, on_wait=on_wait)


# --- PDF --------------------------------------------------------------------------------------


def _fonts() -> tuple[str, str]:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if "Vera" not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont("Vera", "Vera.ttf"))  # ships with reportlab; embedded in the PDF
        pdfmetrics.registerFont(TTFont("VeraBd", "VeraBd.ttf"))
    return "Vera", "VeraBd"


# ISO 4217 codes for currency signs the PDF's font may lack (Vera has $ € £ ¥ but not ₩ or ₹).
CURRENCY_CODES = {
    "₩": "KRW", "₹": "INR", "₽": "RUB", "₪": "ILS", "₺": "TRY", "₫": "VND", "฿": "THB", "₱": "PHP",
    "₴": "UAH", "₦": "NGN", "₸": "KZT", "₡": "CRC", "₲": "PYG", "₵": "GHS", "₮": "MNT", "₭": "LAK",
    "₼": "AZN", "₾": "GEL", "৳": "BDT", "៛": "KHR", "₨": "Rs", "₿": "BTC", "€": "EUR", "£": "GBP",
    "¥": "JPY", "₣": "FRF", "₤": "ITL",
}  # fmt: skip


def _font_chars(*fonts: str) -> set[int]:
    """The code points every one of ``fonts`` can draw (their cmaps), read from the font files."""
    from reportlab.pdfbase import pdfmetrics

    maps = [set(pdfmetrics.getFont(f).face.charToGlyph) for f in fonts]
    return set.intersection(*maps)


def drawable_text(text: str, chars: set[int]) -> str:
    """``text`` with each currency sign the font cannot draw written as its code ("KRW 421,543"),
    not as a missing-glyph box. Other characters are left as they are."""
    if all(ord(c) in chars for c in text):
        return text
    out: list[str] = []
    for i, c in enumerate(text):
        if ord(c) in chars or unicodedata.category(c) != "Sc":
            out.append(c)
            continue
        code = CURRENCY_CODES.get(c) or unicodedata.name(c, "currency").removesuffix(" SIGN").title()
        nxt = text[i + 1 : i + 2]
        out.append(code + (" " if nxt.isdigit() or nxt in ("-", "−") else ""))
    return "".join(out)


def _drawable_report(report: Report, chars: set[int]) -> Report:
    """The report with every string passed through ``drawable_text``; a chart's currency becomes
    a prefix ("KRW ") that the charts put before their figures."""

    def fix(v: Any) -> Any:
        if isinstance(v, str):
            return drawable_text(v, chars)
        if isinstance(v, list | tuple):
            return type(v)(fix(x) for x in v)
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        return v

    def chart(c: dict[str, Any] | None) -> dict[str, Any] | None:
        if c is None:
            return None
        out: dict[str, Any] = fix(c)
        if "currency" in c:
            sym = str(c["currency"])
            out["currency"] = sym if drawable_text(sym, chars) == sym else drawable_text(sym + "0", chars)[:-1]
        return out

    sections = [
        dataclasses.replace(s, title=fix(s.title), lines=fix(s.lines), table=fix(s.table), chart=chart(s.chart))
        for s in report.sections
    ]
    return dataclasses.replace(
        report,
        title=fix(report.title),
        host=fix(report.host),
        os=fix(report.os),
        verdict=fix(report.verdict),
        summary=fix(report.summary),
        sections=sections,
        sources=fix(report.sources),
    )


def _log_ticks(lo: float, hi: float) -> list[float]:
    return [float(k) for k in range(math.floor(lo), math.ceil(hi) + 1)]


def _batch_chart(chart: dict[str, Any], width: float, font: str) -> Any:
    from reportlab.graphics.charts.legends import Legend
    from reportlab.graphics.charts.lineplots import LinePlot
    from reportlab.graphics.shapes import Drawing, String
    from reportlab.graphics.widgets.markers import makeMarker
    from reportlab.lib import colors

    series = [
        (name, [(math.log10(b), math.log10(v)) for b, v in pts if b > 0 and v > 0])
        for name, pts in chart["series"].items()
    ]
    series = [(n, pts) for n, pts in series if pts]
    d = Drawing(width, 230)
    if not series:
        return d
    lp = LinePlot()
    lp.x, lp.y, lp.width, lp.height = 45, 40, width - 200, 160
    lp.data = [pts for _, pts in series]
    palette = [
        colors.HexColor(c)
        for c in ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
    ]
    for i, (name, _) in enumerate(series):
        lp.lines[i].strokeColor = palette[i % len(palette)]
        lp.lines[i].strokeWidth = 1.5
        lp.lines[i].strokeDashArray = None if name.startswith("cpu") else [4, 2]
        # a series of one batch size is a point, not a line: a larger mark, so it reads as a series
        lp.lines[i].symbol = makeMarker("FilledCircle", size=5 if len(series[i][1]) == 1 else 3)
        lp.lines[i].symbol.fillColor = palette[i % len(palette)]
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    for axis, vals in ((lp.xValueAxis, xs), (lp.yValueAxis, ys)):
        lo, hi = math.floor(min(vals)), math.ceil(max(vals)) if max(vals) > min(vals) else math.floor(min(vals)) + 1
        axis.valueSteps = _log_ticks(lo, hi)
        # a tenth of a decade inside each end: a point at batch 1 (log 0) sat on the y axis itself,
        # and a series of one point there was invisible
        axis.valueMin, axis.valueMax = min(lo, min(vals) - 0.1), max(hi, max(vals) + 0.1)
        axis.labelTextFormat = lambda v: f"{10**v:,.0f}" if v >= 0 else f"{10**v:g}"  # 1,000,000, not 1e+06
        axis.labels.fontName = font
        axis.labels.fontSize = 7
    d.add(lp)
    legend = Legend()
    legend.x, legend.y = width - 145, 190
    legend.fontName, legend.fontSize = font, 7
    legend.colorNamePairs = [
        (palette[i % len(palette)], name + ("" if name.startswith("cpu") else " (dashed)"))
        for i, (name, _) in enumerate(series)
    ]
    d.add(legend)
    d.add(String(45, 215, chart["title"], fontName=font, fontSize=9))
    d.add(String(45 + (width - 200) / 2, 12, "batch size (log)", fontName=font, fontSize=7))
    d.add(String(2, 205, "samples/s (log)", fontName=font, fontSize=7))
    return d


class LogAxis:
    """A log10 axis from decade ``lo`` to decade ``hi`` drawn from ``p0`` over ``length`` points.
    Every mark (points, bars, the deadline, the ticks) goes through ``pos``: they cannot disagree."""

    def __init__(self, lo: int, hi: int, p0: float, length: float) -> None:
        self.lo, self.hi = lo, hi if hi > lo else lo + 1
        self.p0, self.length = p0, length

    @classmethod
    def covering(cls, values: list[float], p0: float, length: float) -> LogAxis:
        vals = [v for v in values if v > 0 and math.isfinite(v)] or [1.0]
        return cls(math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals))), p0, length)

    def pos(self, v: float) -> float:
        return self.p0 + self.length * (math.log10(v) - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[float]:
        """Decades; with 2 and 5 between them when the axis spans two decades or fewer."""
        out: list[float] = []
        for k in range(self.lo, self.hi + 1):
            out.append(10.0**k)
            if self.hi - self.lo <= 2 and k < self.hi:
                out += [2 * 10.0**k, 5 * 10.0**k]
        return out


def hours_tick(h: float) -> str:
    if h < 1 / 60:
        return f"{h * 3600:g} s"
    if h < 1:
        return f"{h * 60:g} min"
    return f"{h:,.0f} h"  # one unit along the axis: 10,000 h, not 1e4 h


def _label_box(x: float, y: float, text: str, font: str, size: float) -> tuple[float, float, float, float]:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    return (x, y - 1, x + stringWidth(text, font, size), y + size)


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(
    anchors: list[tuple[float, float, str]],
    font: str,
    size: float,
    area: tuple[float, float, float, float],
    taken: list[tuple[float, float, float, float]] | None = None,
) -> list[tuple[float, float, str]]:
    """Each label beside its point where it overlaps no other label and stays inside ``area``
    (x0, y0, x1, y1); a label with no free place is left out (the table names every option)."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    placed: list[tuple[float, float, str]] = []
    boxes = list(taken or [])
    for x, y, text in anchors:
        w = stringWidth(text, font, size)
        for dx, dy in ((4, 3), (4, -size - 2), (-w - 4, 3), (-w - 4, -size - 2), (4, size + 4), (4, -2 * size - 4)):
            box = _label_box(x + dx, y + dy, text, font, size)
            inside = box[0] >= area[0] and box[2] <= area[2] and box[1] >= area[1] and box[3] <= area[3]
            if inside and not any(_overlaps(box, b) for b in boxes):
                boxes.append(box)
                placed.append((x + dx, y + dy, text))
                break
    return placed


STAGE_NAMES_PDF = {str(s.value): f"{s.value}  {s.short}" for s in Stage}  # a chart that names none
BLUE, GREY, ORANGE, RED, GREEN = "#2b6cb0", "#a0aec0", "#dd6b20", "#c53030", "#2f855a"


def _stage_chart(chart: dict[str, Any], width: float, font: str) -> Any:
    """One bar per stage: its best option's time (log scale), its error range as a whisker, its
    time and cost written beside it, the recommended one highlighted, the deadline drawn in."""
    from reportlab.graphics.shapes import Drawing, Line, Rect, String
    from reportlab.lib import colors
    from reportlab.pdfbase.pdfmetrics import stringWidth

    per = chart["per_stage"]
    names = chart.get("stage_names") or STAGE_NAMES_PDF
    sym = chart.get("currency", "$")
    deadline = chart["deadline_h"]
    height = 190
    d = Drawing(width, height)
    d.add(
        String(
            0,
            height - 12,
            "Best option per stage: training time (log scale), error range and cost",
            fontName=font,
            fontSize=9,
        )
    )
    x0 = 140
    vals = [deadline]
    for v in per.values():
        if v and v.get("fits", True):
            vals += [float(v[k]) for k in ("total_time_h", "time_low_h", "time_high_h") if v.get(k)]
    ax = LogAxis.covering(vals, x0, width - x0 - 10)
    base = 28
    row_h = 34
    top = base + 4 * row_h
    last = -math.inf
    for t in ax.ticks():  # grid and tick labels at the bottom, a label only where it has room
        x = ax.pos(t)
        d.add(Line(x, base, x, top, strokeColor=colors.HexColor("#e2e8f0"), strokeWidth=0.5))
        w = stringWidth(hours_tick(t), font, 6.5)
        if x - w / 2 > last + 3:
            d.add(String(x, base - 10, hours_tick(t), fontName=font, fontSize=6.5, textAnchor="middle"))
            last = x + w / 2
    d.add(String(x0 + (width - x0) / 2, 2, "training time (log scale)", fontName=font, fontSize=7, textAnchor="middle"))
    labels: list[tuple[float, float, str]] = []
    for i, key in enumerate(str(s.value) for s in Stage):
        y = top - (i + 1) * row_h + 8
        chosen = int(key) == chart["stage"]
        d.add(String(0, y + 4, names.get(key, key), fontName=font, fontSize=8))
        v = per.get(key)
        if not v or not v.get("total_time_h") or not v.get("fits", True):
            text = "does not fit" if v and v.get("fits") is False else "no option"
            d.add(String(x0 + 4, y + 4, text, fontName=font, fontSize=7, fillColor=colors.HexColor("#718096")))
            continue
        t = float(v["total_time_h"])
        fill = colors.HexColor(BLUE) if chosen else colors.HexColor(GREY)
        d.add(Rect(x0, y, max(2.0, ax.pos(t) - x0), 12, fillColor=fill, strokeColor=None))
        lo, hi = v.get("time_low_h"), v.get("time_high_h")
        if lo and hi:
            xl, xh = ax.pos(float(lo)), ax.pos(float(hi))
            d.add(Line(xl, y + 6, xh, y + 6, strokeColor=colors.black, strokeWidth=0.8))
            d.add(Line(xl, y + 2, xl, y + 10, strokeColor=colors.black, strokeWidth=0.8))
            d.add(Line(xh, y + 2, xh, y + 10, strokeColor=colors.black, strokeWidth=0.8))
        kind = v.get("kind")
        who = (
            v.get("name")
            if kind == "cpu"
            else (
                f"your {v.get('count', 1)}x {v.get('name')}"
                if kind == "have"
                else f"{v.get('count', 1)}x {v.get('name')}"
            )
        )
        cost = v.get("cost_usd")
        how = {"cpu": "owned", "have": "owned, power", "rent": "rented", "buy": "to buy"}.get(str(kind), "")
        # the tables' formatter: "$0.11 rented", not "$0 rented"
        money = "" if cost is None or kind == "cpu" else f", {money_text(float(cost), sym)} {how}".rstrip()
        # the advice's own formatter, as the GUI's bars: "3 min (2.6–4 min)" beside a 3 min deadline
        # read as met where the text says "3.2 min (range 2.6–3.8 min)", missed
        rng = f" ({fmt_hours_range(float(lo), float(hi), unit_of=t)})" if lo and hi else ""
        label = f"{who}: {fmt_hours(t)}{rng}{money}" + ("  — recommended" if chosen else "")
        labels.append((x0 + 2, y - 8, label))
    xd = ax.pos(deadline)
    d.add(Line(xd, base, xd, top + 4, strokeColor=colors.HexColor(RED), strokeDashArray=[3, 2], strokeWidth=1.2))
    for lx, ly, label in labels:  # after the deadline line, which crossed their digits
        _grounded_label(d, lx, ly, label, font)
    d.add(
        String(
            min(xd + 2, width - 60),
            top + 6,
            f"deadline {hours_tick_short(deadline)}",
            fontName=font,
            fontSize=7,
            fillColor=colors.HexColor(RED),
        )
    )
    d._axis = ax  # for tests: the transform the marks used
    return d


def _grounded_label(d: Any, x: float, y: float, text: str, font: str, colour: Any = None) -> None:
    """A 6.5-point chart label on a white ground, so no line or mark drawn before it crosses it."""
    from reportlab.graphics.shapes import Rect, String
    from reportlab.lib import colors
    from reportlab.pdfbase.pdfmetrics import stringWidth

    d.add(Rect(x - 1, y - 2, stringWidth(text, font, 6.5) + 2, 8.5, fillColor=colors.white, strokeColor=None))
    d.add(String(x, y, text, fontName=font, fontSize=6.5, fillColor=colour or colors.black))


def hours_tick_short(h: float) -> str:
    """A time for a chart label: 45 s, 12 min, 3.4 h, 120 h, 40 d, 2.1 years (past two years, as
    the text and the desktop app write it: the stage chart read "783 d" beside "~2.1 years")."""
    if h * 3600 < 90:
        return f"{h * 3600:.0f} s"
    if h < 1.5:
        return f"{h * 60:.0f} min"
    if h < 100:
        return f"{h:.1f} h" if abs(h - round(h)) > 1e-9 else f"{h:.0f} h"
    if h < 1000:
        return f"{h:.0f} h"
    if h < 2 * YEAR_H:
        return f"{h / 24:,.0f} d"
    return _years(h / YEAR_H)


def _years(y: float) -> str:
    return (f"{y:.1f}".removesuffix(".0") if y < 10 else f"{y:,.0f}") + " years"


def money_tick(v: float, sym: str) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{sym}{v / div:g}{suffix}"
    return f"{sym}{v:g}"


def _scatter_chart(chart: dict[str, Any], width: float, font: str) -> Any:
    """Time against cost of every option (log-log): buying and renting as different marks, the
    Pareto front joined, the deadline and budget drawn in, labels placed without overlap."""
    from reportlab.graphics.shapes import (
        Circle,
        Drawing,
        Line,
        Polygon,
        PolyLine,
        Rect,
        String,
    )
    from reportlab.lib import colors
    from reportlab.pdfbase.pdfmetrics import stringWidth

    pts = [(t, c, n, k) for t, c, n, k in chart["points"] if t > 0 and c > 0]
    sym = chart.get("currency", "$")
    height = 270
    d = Drawing(width, height)
    d.add(
        String(
            0,
            height - 12,
            "Time vs cost of every option (log-log); line: the Pareto front; dashed: deadline",
            fontName=font,
            fontSize=9,
        )
    )
    if not pts:
        d.add(String(0, height - 30, "No option with a known price fits.", fontName=font, fontSize=8))
        return d
    px0, py0, pw, ph = 52, 34, width - 62, height - 80
    # this machine's times too, as the GUI's chart draws them: its legend entry had no mark off the axis
    local_h = [t for t, _ in chart["local"] if t and t > 0 and math.isfinite(t)]
    ax = LogAxis.covering([t for t, *_ in pts] + [chart["deadline_h"], *local_h], px0, pw)
    ay = LogAxis.covering([c for _, c, *_ in pts] + ([chart["budget"]] if chart.get("budget") else []), py0, ph)
    d.add(Rect(px0, py0, pw, ph, fillColor=None, strokeColor=colors.HexColor("#718096"), strokeWidth=0.6))
    last = -math.inf
    for t in ax.ticks():
        x = ax.pos(t)
        d.add(Line(x, py0, x, py0 + ph, strokeColor=colors.HexColor("#e2e8f0"), strokeWidth=0.5))
        w = stringWidth(hours_tick(t), font, 6.5)
        if x - w / 2 > last + 3:
            d.add(String(x, py0 - 10, hours_tick(t), fontName=font, fontSize=6.5, textAnchor="middle"))
            last = x + w / 2
    for c in ay.ticks():
        y = ay.pos(c)
        d.add(Line(px0, y, px0 + pw, y, strokeColor=colors.HexColor("#e2e8f0"), strokeWidth=0.5))
        d.add(String(px0 - 3, y - 2, money_tick(c, sym), fontName=font, fontSize=6.5, textAnchor="end"))
    d.add(String(px0 + pw / 2, 6, "training time (log scale)", fontName=font, fontSize=7, textAnchor="middle"))
    d.add(String(0, py0 + ph + 6, f"cost ({sym.strip()}, log)", fontName=font, fontSize=7))
    for t, c, _, k in pts:
        x, y = ax.pos(t), ay.pos(c)
        if k == "rent":
            d.add(
                Polygon(
                    [x - 2.6, y - 2, x + 2.6, y - 2, x, y + 2.6],
                    fillColor=None,
                    strokeColor=colors.HexColor(ORANGE),
                    strokeWidth=0.7,
                )
            )
        else:
            d.add(Circle(x, y, 1.8, fillColor=colors.HexColor(BLUE), strokeColor=None))
    front, best = [], math.inf
    for t, c, n, k in sorted(pts):
        if c < best:
            front.append((t, c, n, k))
            best = c
    if len(front) > 1:
        flat: list[float] = []
        for t, c, *_ in front:
            flat += [ax.pos(t), ay.pos(c)]
        d.add(PolyLine(flat, strokeColor=colors.HexColor("#2d3748"), strokeWidth=1))
    xd = ax.pos(chart["deadline_h"])
    d.add(Line(xd, py0, xd, py0 + ph, strokeColor=colors.HexColor(RED), strokeDashArray=[3, 2], strokeWidth=1.2))
    taken = [_label_box(xd + 2, py0 + ph - 9, f"deadline {hours_tick_short(chart['deadline_h'])}", font, 6.5)]
    d.add(
        String(
            xd + 2,
            py0 + ph - 9,
            f"deadline {hours_tick_short(chart['deadline_h'])}",
            fontName=font,
            fontSize=6.5,
            fillColor=colors.HexColor(RED),
        )
    )
    if chart.get("budget"):
        yb = ay.pos(chart["budget"])
        d.add(Line(px0, yb, px0 + pw, yb, strokeColor=colors.HexColor(RED), strokeDashArray=[1, 2]))
        d.add(String(px0 + 3, yb + 2, "budget", fontName=font, fontSize=6.5, fillColor=colors.HexColor(RED)))
        taken.append(_label_box(px0 + 3, yb + 2, "budget", font, 6.5))
    for t, _dev in chart["local"]:
        if 10**ax.lo <= t <= 10**ax.hi:
            xl = ax.pos(t)
            d.add(Line(xl, py0, xl, py0 + ph, strokeColor=colors.HexColor(GREEN), strokeDashArray=[1, 2]))
    anchors = [(ax.pos(front[0][0]), ay.pos(front[0][1]), f"fastest: {front[0][2]} ({front[0][3]})")]
    # The cheapest that meets the deadline is the one a reader weighs (the cheapest overall may be
    # far past it); the cheapest overall only where nothing meets it.
    in_time = [p for p in front if p[0] <= chart["deadline_h"]]
    cheap, what = (in_time[-1], "cheapest in time") if in_time else (front[-1], "cheapest")
    if cheap is not front[0]:
        anchors.append((ax.pos(cheap[0]), ay.pos(cheap[1]), f"{what}: {cheap[2]} ({cheap[3]})"))
    anchors += [(ax.pos(t), py0 + 4, f"your {who}") for t, who in chart["local"] if 10**ax.lo <= t <= 10**ax.hi]
    for x, y, text in place_labels(anchors, font, 6.5, (px0 + 1, py0 + 1, px0 + pw - 1, py0 + ph - 1), taken):
        # grounded: the labels sat over the points and the front's line
        _grounded_label(d, x, y, text, font, colors.HexColor(GREEN) if text.startswith("your ") else colors.black)
    ly = height - 28  # legend
    d.add(Circle(px0 + 4, ly + 2, 1.8, fillColor=colors.HexColor(BLUE), strokeColor=None))
    d.add(String(px0 + 10, ly, "buy (price + electricity)", fontName=font, fontSize=7))
    lx = px0 + 120
    d.add(
        Polygon(
            [lx - 2.6, ly, lx + 2.6, ly, lx, ly + 4.6],
            fillColor=None,
            strokeColor=colors.HexColor(ORANGE),
            strokeWidth=0.7,
        )
    )
    d.add(String(lx + 6, ly, "rent (cloud, on demand)", fontName=font, fontSize=7))
    d.add(Line(lx + 110, ly + 2, lx + 124, ly + 2, strokeColor=colors.HexColor(GREEN), strokeDashArray=[1, 2]))
    d.add(String(lx + 127, ly, "your machine", fontName=font, fontSize=7))
    d._axes = (ax, ay)  # for tests
    return d


MEMORY_COLOURS = {
    "weights": "#2b6cb0",
    "gradients": "#805ad5",
    "optimizer": "#d69e2e",
    "activations": "#38a169",
    "logits": "#dd6b20",
    "overhead": "#718096",
}  # the GUI's memory bar uses the same colours


def _memory_figures(b: dict[str, Any]) -> str:
    # the card's memory as the table under the chart and every other face print it ("179.06", not "179")
    return f"{b['peak_gb']:,.1f} of {vram_text(b['vram_gb'])} GB" + ("" if b["fits"] else " \u2014 too big")


def _memory_charts(chart: dict[str, Any], width: float, font: str, per_drawing: int = 24) -> list[Any]:
    """'Needs X of Y GB' as one stacked bar per GPU: the parts of the peak side by side on a
    common GB scale, the card's memory as a pale track ending in a black tick, the figures after
    the bar; a drawing per ``per_drawing`` bars so that none outgrows a page. The scale ends at
    1.5x the largest card: a peak beyond it (a model far too big) is drawn shortened to the scale,
    its parts in proportion, with a zigzag (not to scale), so that one huge bar does not flatten
    the others; its figures say the whole."""
    from reportlab.graphics.shapes import Drawing, Line, PolyLine, Rect, String
    from reportlab.lib import colors
    from reportlab.pdfbase.pdfmetrics import stringWidth

    bars = chart.get("bars") or []
    parts = chart.get("parts") or list(MEMORY_COLOURS)
    if not bars:
        return []
    vram_top = max(b["vram_gb"] for b in bars)
    peak_top = max(b["peak_gb"] for b in bars)
    top = max(vram_top, min(peak_top, 1.5 * vram_top) if vram_top > 0 else peak_top) or 1.0
    label_w = min(0.34 * width, max(stringWidth(b["label"], font, 6.5) for b in bars) + 6)
    x0 = label_w
    right = max(stringWidth(_memory_figures(b), font, 6.5) for b in bars) + 8
    axis = width - x0 - right  # points for ``top`` GB
    scale = axis / top
    step, bar_h = 13.0, 8.0
    drawings = []
    for start in range(0, len(bars), per_drawing):
        chunk = bars[start : start + per_drawing]
        height = 26 + step * len(chunk)
        d = Drawing(width, height)
        # for tests: the axis length, and per bar its label, segments (part, x, width), the peak's width
        d._axis = axis
        d._bars = []
        if start == 0:  # the legend
            lx = 0.0
            for name in parts:
                d.add(Rect(lx, height - 9, 7, 7, fillColor=colors.HexColor(MEMORY_COLOURS[name]), strokeColor=None))
                d.add(String(lx + 9, height - 8, name, fontName=font, fontSize=7))
                lx += 14 + stringWidth(name, font, 7)
            d.add(Line(lx + 4, height - 10, lx + 4, height - 1, strokeColor=colors.black, strokeWidth=1.2))
            d.add(String(lx + 8, height - 8, "the card's memory (GB)", fontName=font, fontSize=7))
        for i, b in enumerate(chunk):
            y = height - 24 - step * i
            text = b["label"]
            while stringWidth(text, font, 6.5) > label_w - 4 and len(text) > 4:
                text = text[:-2] + "\u2026"
            d.add(String(0, y + 1.5, text, fontName=font, fontSize=6.5))
            d.add(Rect(x0, y, b["vram_gb"] * scale, bar_h, fillColor=colors.HexColor("#edf2f7"), strokeColor=None))
            x = x0
            segs = []
            # a peak beyond the scale is drawn shortened to it, its parts in proportion (zigzag: not to scale)
            shrink = min(1.0, axis / (b["peak_gb"] * scale)) if b["peak_gb"] > 0 else 1.0
            for name in parts:
                w = b["parts_gb"].get(name, 0.0) * scale * shrink
                if w > 0:
                    d.add(Rect(x, y, w, bar_h, fillColor=colors.HexColor(MEMORY_COLOURS[name]), strokeColor=None))
                    segs.append((name, x, w))
                    x += w
            if b["peak_gb"] * scale > axis + 0.5:  # cut: a white zigzag across the bar's end
                zx = x0 + axis - 4
                d.add(
                    PolyLine(
                        [zx, y - 1, zx + 2, y + 2, zx - 1, y + 4, zx + 2, y + 6, zx, y + bar_h + 1],
                        strokeColor=colors.white,
                        strokeWidth=1.5,
                    )
                )
            xv = x0 + b["vram_gb"] * scale
            d.add(Line(xv, y - 2, xv, y + bar_h + 2, strokeColor=colors.black, strokeWidth=1.2))
            d.add(
                String(
                    max(x, xv) + 4,
                    y + 1.5,
                    _memory_figures(b),
                    fontName=font,
                    fontSize=6.5,
                    fillColor=colors.black if b["fits"] else colors.HexColor(RED),
                )
            )
            d._bars.append((b["label"], segs, b["peak_gb"] * scale))
        drawings.append(d)
    return drawings


def _estimate_charts(chart: dict[str, Any], width: float, font: str) -> list[Any]:
    return [_stage_chart(chart, width, font), _scatter_chart(chart, width, font)]


def _word_widths(table: list[list[str]], width: float, font: str, size: float = 7.0, pad: float = 14.0) -> list[float]:
    """Column widths that fit each column's longest word (so a header wraps between words, never
    inside one; ``pad``: the table's 6 pt padding each side and a little), the rest of the width
    shared in proportion to what each column's longest cell needs beyond that."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    ncol = len(table[0])
    least = [
        max(stringWidth(w, font, size) for row in table for w in (row[i].split() or [""])) + pad for i in range(ncol)
    ]
    want = [max(stringWidth(row[i], font, size) for row in table) + pad for i in range(ncol)]
    spare = width - sum(least)
    if spare <= 0:
        return [width * v / sum(least) for v in least]
    extra = [max(0.0, w - v) for w, v in zip(want, least, strict=True)]
    total = sum(extra) or 1.0
    return [v + spare * e / total for v, e in zip(least, extra, strict=True)]


def to_pdf_bytes(report: Report, *, paper: str = "a4", compress: bool = True) -> bytes:
    from xml.sax.saxutils import escape

    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, LETTER
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import (
        KeepTogether,
        Paragraph,
        SimpleDocTemplate,
        Spacer,
        Table,
        TableStyle,
    )

    font, bold = _fonts()
    report = _drawable_report(report, _font_chars(font, bold))
    size = LETTER if paper == "letter" else A4
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf,
        pagesize=size,
        leftMargin=16 * mm,
        rightMargin=16 * mm,
        topMargin=16 * mm,
        bottomMargin=18 * mm,
        title=report.title,
        author="gpuselect",
        subject=report.verdict,
        creator=f"gpuselect {report.app_version}",
        pageCompression=1 if compress else 0,
    )
    body = ParagraphStyle("body", fontName=font, fontSize=9, leading=12)
    small = ParagraphStyle("small", fontName=font, fontSize=7, leading=9)
    h1 = ParagraphStyle("h1", fontName=bold, fontSize=18, leading=22, spaceAfter=6)
    h2 = ParagraphStyle("h2", fontName=bold, fontSize=13, leading=16, spaceBefore=10, spaceAfter=4, keepWithNext=1)
    verdict = ParagraphStyle("verdict", fontName=bold, fontSize=11, leading=14, spaceBefore=6, spaceAfter=6)
    width = size[0] - 32 * mm
    story: list[Any] = [
        Paragraph(escape(report.title), h1),
        Paragraph(escape(f"{report.generated_at} · gpuselect {report.app_version}"), body),
        Paragraph(escape(f"Host: {report.host} · {report.os}"), body),
        Paragraph(escape(report.verdict), verdict),
    ]
    if report.summary:
        story += [Paragraph(escape(report.summary), body), Spacer(1, 4)]
    for s in report.sections:
        start = len(story)
        story.append(Paragraph(escape(s.title), h2))
        for line in s.lines:
            story.append(Paragraph(escape(line), body))
            story.append(Spacer(1, 3))
        if s.chart and s.chart.get("kind") == "memory":  # the bars before the table of their figures
            if s.chart.get("caption"):
                story += [Paragraph(escape(s.chart["caption"]), body), Spacer(1, 3)]
            for i, drawing in enumerate(_memory_charts(s.chart, width, font)):
                story.append(drawing)
                story.append(Spacer(1, 6))
                if i == 0:  # the heading and its words on the page of their bars, not alone at a page's foot
                    story[start:] = [KeepTogether(story[start:])]
        if s.table:
            ncol = len(s.table[0])
            data = [[Paragraph(escape(c if len(c) <= 400 else c[:399] + "…"), small) for c in row] for row in s.table]
            # The options table's first column names the option (and marks the recommended one): give it room.
            first = min(0.3, 2.0 / (ncol + 1)) * width if s.title == "Estimates" else width / ncol
            widths = [first] + [(width - first) / (ncol - 1)] * (ncol - 1) if ncol > 1 else [width]
            if s.chart and s.chart.get("kind") == "memory":
                widths = _word_widths(s.table, width, font)  # eleven columns: no header split mid-word
            t = Table(data, repeatRows=1, colWidths=widths, splitByRow=1)
            t.setStyle(
                TableStyle(
                    [
                        ("FONTNAME", (0, 0), (-1, -1), font),
                        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e2e8f0")),
                        ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#a0aec0")),
                        ("VALIGN", (0, 0), (-1, -1), "TOP"),
                    ]
                )
            )
            story.append(t)
        if s.chart and s.chart.get("kind") == "batch" and s.chart["series"]:
            story.append(Spacer(1, 6))
            story.append(_batch_chart(s.chart, width, font))
        if s.chart and s.chart.get("kind") == "estimate":
            for drawing in _estimate_charts(s.chart, width, font):
                story.append(Spacer(1, 6))
                story.append(drawing)
    if report.sources:
        story.append(Paragraph("Catalog sources", h2))
        for src in report.sources:
            story.append(Paragraph(escape(src), small))

    def footer(canvas: Any, doc_: Any) -> None:
        from reportlab.pdfbase.pdfmetrics import stringWidth

        canvas.saveState()
        canvas.setFont(font, 7)
        text = f"gpuselect {report.app_version} · {report.verdict}"
        room = size[0] - 32 * mm - 40  # the page number's room on the right
        if stringWidth(text, font, 7) > room:  # cut at a word, marked: never mid-number
            words = text.split(" ")
            while len(words) > 1 and stringWidth(" ".join(words) + " …", font, 7) > room:
                words.pop()
            text = " ".join(words).rstrip(",;:(") + " …"
        canvas.drawString(16 * mm, 10 * mm, text)
        canvas.drawRightString(size[0] - 16 * mm, 10 * mm, f"Page {doc_.page}")
        canvas.restoreState()

    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return buf.getvalue()
