"""Write a Report as JSON, Markdown or PDF. Files are written atomically (temp file + rename):
an existing report is never left half-written. The PDF uses reportlab (pure Python, no Qt):
real text with embedded fonts, vector charts, page numbers, tables that split across pages."""

from __future__ import annotations

import io
import locale
import math
import os
from pathlib import Path
from typing import Any

from gpuselect.fsutil import atomic_write_bytes, atomic_write_text
from gpuselect.output import json_document
from gpuselect.report.model import Report

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
    return json_document({"report": report}, kind="report")


def to_markdown(report: Report) -> str:
    out = [f"# {report.title}", "", f"{report.generated_at} · gpuselect {report.app_version} · host {report.host} · {report.os}", "",
           f"**{report.verdict}**", ""]
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


def write(report: Report, path: str | os.PathLike[str], fmt: str, *, paper: str | None = None, compress: bool = True) -> Path:
    if fmt == "json":
        return atomic_write_text(path, to_json(report) + "\n")
    if fmt == "md":
        return atomic_write_text(path, to_markdown(report))
    return atomic_write_bytes(path, to_pdf_bytes(report, paper=paper or default_paper(), compress=compress))


# --- PDF --------------------------------------------------------------------------------------


def _fonts() -> tuple[str, str]:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if "Vera" not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont("Vera", "Vera.ttf"))  # ships with reportlab; embedded in the PDF
        pdfmetrics.registerFont(TTFont("VeraBd", "VeraBd.ttf"))
    return "Vera", "VeraBd"


def _log_ticks(lo: float, hi: float) -> list[float]:
    return [float(k) for k in range(math.floor(lo), math.ceil(hi) + 1)]


def _batch_chart(chart: dict[str, Any], width: float, font: str) -> Any:
    from reportlab.graphics.charts.legends import Legend
    from reportlab.graphics.charts.lineplots import LinePlot
    from reportlab.graphics.shapes import Drawing, String
    from reportlab.lib import colors

    series = [(name, [(math.log10(b), math.log10(v)) for b, v in pts if b > 0 and v > 0]) for name, pts in chart["series"].items()]
    series = [(n, pts) for n, pts in series if pts]
    d = Drawing(width, 230)
    if not series:
        return d
    lp = LinePlot()
    lp.x, lp.y, lp.width, lp.height = 45, 40, width - 200, 160
    lp.data = [pts for _, pts in series]
    palette = [colors.HexColor(c) for c in ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")]
    for i, (name, _) in enumerate(series):
        lp.lines[i].strokeColor = palette[i % len(palette)]
        lp.lines[i].strokeWidth = 1.5
        lp.lines[i].strokeDashArray = None if name.startswith("cpu") else [4, 2]
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    for axis, vals in ((lp.xValueAxis, xs), (lp.yValueAxis, ys)):
        axis.valueMin, axis.valueMax = math.floor(min(vals)), math.ceil(max(vals)) if max(vals) > min(vals) else math.floor(min(vals)) + 1
        axis.valueSteps = _log_ticks(axis.valueMin, axis.valueMax)
        axis.labelTextFormat = lambda v: f"{10 ** v:g}"
        axis.labels.fontName = font
        axis.labels.fontSize = 7
    d.add(lp)
    legend = Legend()
    legend.x, legend.y = width - 145, 190
    legend.fontName, legend.fontSize = font, 7
    legend.colorNamePairs = [(palette[i % len(palette)], name + ("" if name.startswith("cpu") else " (dashed)")) for i, (name, _) in enumerate(series)]
    d.add(legend)
    d.add(String(45, 215, chart["title"], fontName=font, fontSize=9))
    d.add(String(45 + (width - 200) / 2, 12, "batch size (log)", fontName=font, fontSize=7))
    d.add(String(2, 205, "samples/s (log)", fontName=font, fontSize=7))
    return d


def _estimate_charts(chart: dict[str, Any], width: float, font: str) -> list[Any]:
    from reportlab.graphics.charts.lineplots import ScatterPlot
    from reportlab.graphics.shapes import Drawing, Line, Rect, String
    from reportlab.lib import colors

    drawings = []
    # 1. The four stages: best option per stage as a bar of log time, the deadline drawn in.
    per = chart["per_stage"]
    names = {"1": "1  no GPU (this CPU)", "2": "2  one consumer GPU", "3": "3  workstation / rented datacenter", "4": "4  cluster (> 8 GPUs)"}
    times = [v["total_time_h"] for v in per.values() if v and v.get("total_time_h")]
    d = Drawing(width, 170)
    d.add(String(0, 155, "The four stages: best option in each, time (log scale) against your deadline", fontName=font, fontSize=9))
    if times:
        lo = math.floor(math.log10(min(times + [chart["deadline_h"]])))
        hi = math.ceil(math.log10(max(times + [chart["deadline_h"]])))
        hi = hi if hi > lo else lo + 1
        x0, span = 190, width - 200

        def xpos(h: float) -> float:
            return x0 + span * (math.log10(h) - lo) / (hi - lo)

        for i, key in enumerate(("1", "2", "3", "4")):
            y = 120 - i * 28
            chosen = int(key) == chart["stage"]
            d.add(String(0, y + 4, names[key], fontName=font, fontSize=8))
            v = per.get(key)
            if v and v.get("total_time_h"):
                t = v["total_time_h"]
                fill = colors.HexColor("#2b6cb0") if chosen else colors.HexColor("#a0aec0")
                d.add(Rect(x0, y, max(2.0, xpos(t) - x0), 14, fillColor=fill, strokeColor=None))
                cost = v.get("cost_usd")
                who = v.get("name") if v.get("device") == "cpu" else f"{v.get('count', 1)}x {v.get('name')}"
                label = f"{who}: {t:,.1f} h" + (f", ${cost:,.0f}" if cost is not None else "") + ("   <= recommended" if chosen else "")
                d.add(String(x0 + 4, y - 9, label, fontName=font, fontSize=7))
            else:
                d.add(String(x0 + 4, y + 4, "no option", fontName=font, fontSize=7))
        xd = xpos(chart["deadline_h"])
        d.add(Line(xd, 8, xd, 140, strokeColor=colors.red, strokeDashArray=[3, 2]))
        d.add(String(xd + 2, 2, f"deadline {chart['deadline_h']:g} h", fontName=font, fontSize=7, fillColor=colors.red))
        for k in range(lo, hi + 1):
            d.add(String(xpos(10**k) - 6, 140, f"{10 ** k:g} h", fontName=font, fontSize=6))
    drawings.append(d)
    # 2. Time versus cost of every fitting option, with the Pareto front.
    pts = [(t, c, n) for t, c, n in chart["points"] if t > 0 and c > 0]
    d2 = Drawing(width, 250)
    d2.add(String(0, 235, "Time vs cost of every option (log-log); the Pareto front is joined; dashed: deadline", fontName=font, fontSize=9))
    if pts:
        front, best = [], math.inf
        for t, c, n in sorted(pts):
            if c < best:
                front.append((t, c, n))
                best = c
        sp = ScatterPlot()
        sp.x, sp.y, sp.width, sp.height = 50, 35, width - 70, 185
        sp.data = [[(math.log10(t), math.log10(c)) for t, c, _ in pts], [(math.log10(t), math.log10(c)) for t, c, _ in front]]
        sp.lines[0].symbol.kind = "Circle"
        sp.lines[0].symbol.size = 3
        sp.lines[0].strokeColor = None
        sp.lines[1].strokeColor = colors.HexColor("#2b6cb0")
        sp.lines[1].strokeWidth = 1.5
        sp.lineLabelFormat = None
        sp.joinedLines = 0
        sp.lines[1].symbol = None
        xs = [math.log10(t) for t, _, _ in pts] + [math.log10(chart["deadline_h"])]
        ys = [math.log10(c) for _, c, _ in pts]
        for axis, vals in ((sp.xValueAxis, xs), (sp.yValueAxis, ys)):
            axis.valueMin, axis.valueMax = math.floor(min(vals)), max(math.ceil(max(vals)), math.floor(min(vals)) + 1)
            axis.valueSteps = _log_ticks(axis.valueMin, axis.valueMax)
            axis.labels.fontName, axis.labels.fontSize = font, 7
        sp.xValueAxis.labelTextFormat = lambda v: f"{10 ** v:g} h"
        sp.yValueAxis.labelTextFormat = lambda v: f"${10 ** v:,.0f}" if v >= 0 else f"${10 ** v:g}"
        sp.xLabel = ""
        sp.yLabel = ""
        d2.add(sp)
        # The front, joined (drawn by hand: ScatterPlot joins all series or none).
        def to_xy(t: float, c: float) -> tuple[float, float]:
            ax, ay = sp.xValueAxis, sp.yValueAxis
            return (sp.x + sp.width * (math.log10(t) - ax.valueMin) / (ax.valueMax - ax.valueMin),
                    sp.y + sp.height * (math.log10(c) - ay.valueMin) / (ay.valueMax - ay.valueMin))

        for (t1, c1, _), (t2, c2, _) in zip(front, front[1:]):
            (xa, ya), (xb, yb) = to_xy(t1, c1), to_xy(t2, c2)
            d2.add(Line(xa, ya, xb, yb, strokeColor=colors.HexColor("#2b6cb0"), strokeWidth=1.5))
        # Name the two ends of the front (fastest, cheapest); the middle points sit too close to label.
        ends = [(front[0], "fastest: ", 12)] + ([(front[-1], "cheapest: ", -10)] if len(front) > 1 else [])
        for (t, c, n), prefix, dy in ends:
            x, y = to_xy(t, c)
            d2.add(String(x + 3, y + dy, prefix + n, fontName=font, fontSize=6))
        xd, _ = to_xy(chart["deadline_h"], 10 ** sp.yValueAxis.valueMin)
        d2.add(Line(xd, sp.y, xd, sp.y + sp.height, strokeColor=colors.red, strokeDashArray=[3, 2]))
        for t, dev in chart["local"]:
            if 10 ** sp.xValueAxis.valueMin <= t <= 10 ** sp.xValueAxis.valueMax:
                xl, _ = to_xy(t, 10 ** sp.yValueAxis.valueMin)
                d2.add(Line(xl, sp.y, xl, sp.y + sp.height, strokeColor=colors.green, strokeDashArray=[1, 2]))
                d2.add(String(xl + 2, sp.y + sp.height - 8, f"your {dev}", fontName=font, fontSize=6, fillColor=colors.green))
    drawings.append(d2)
    return drawings


def to_pdf_bytes(report: Report, *, paper: str = "a4", compress: bool = True) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, LETTER
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle
    from xml.sax.saxutils import escape

    font, bold = _fonts()
    size = LETTER if paper == "letter" else A4
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=size, leftMargin=16 * mm, rightMargin=16 * mm, topMargin=16 * mm, bottomMargin=18 * mm,
                            title=report.title, author="gpuselect", subject=report.verdict, creator=f"gpuselect {report.app_version}",
                            pageCompression=1 if compress else 0)
    body = ParagraphStyle("body", fontName=font, fontSize=9, leading=12)
    small = ParagraphStyle("small", fontName=font, fontSize=7, leading=9)
    h1 = ParagraphStyle("h1", fontName=bold, fontSize=18, leading=22, spaceAfter=6)
    h2 = ParagraphStyle("h2", fontName=bold, fontSize=13, leading=16, spaceBefore=10, spaceAfter=4)
    verdict = ParagraphStyle("verdict", fontName=bold, fontSize=11, leading=14, spaceBefore=6, spaceAfter=6)
    width = size[0] - 32 * mm
    story: list[Any] = [
        Paragraph(escape(report.title), h1),
        Paragraph(escape(f"{report.generated_at} · gpuselect {report.app_version}"), body),
        Paragraph(escape(f"Host: {report.host} · {report.os}"), body),
        Paragraph(escape(report.verdict), verdict),
    ]
    for s in report.sections:
        story.append(Paragraph(escape(s.title), h2))
        for line in s.lines:
            story.append(Paragraph(escape(line), body))
            story.append(Spacer(1, 3))
        if s.table:
            ncol = len(s.table[0])
            data = [[Paragraph(escape(c), small) for c in row] for row in s.table]
            t = Table(data, repeatRows=1, colWidths=[width / ncol] * ncol, splitByRow=1)
            t.setStyle(TableStyle([
                ("FONTNAME", (0, 0), (-1, -1), font),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e2e8f0")),
                ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#a0aec0")),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]))
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
        canvas.saveState()
        canvas.setFont(font, 7)
        canvas.drawString(16 * mm, 10 * mm, f"gpuselect {report.app_version} · {report.verdict[:90]}")
        canvas.drawRightString(size[0] - 16 * mm, 10 * mm, f"Page {doc_.page}")
        canvas.restoreState()

    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return buf.getvalue()
