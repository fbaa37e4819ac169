"""A fleet report as text (stdout), JSON, Markdown or PDF (reportlab, no Qt); files are written
atomically. The PDF carries a chart of bus bandwidth by buffer size, one line per collective and
scope."""

from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Any

from gpuselect.bench.text import measured
from gpuselect.fleet.model import SCOPES, BandwidthPoint, FleetReport, peak_busbw
from gpuselect.fsutil import atomic_write_bytes, atomic_write_text
from gpuselect.output import json_document

FORMATS = ("json", "md", "pdf")
DASHES: dict[str, list[float] | None] = {"intra-node": None, "inter-node": [4, 2], "all-ranks": [1, 2]}


def fmt_bytes(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            v = n / div
            return f"{v:g} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def verdict(rep: FleetReport) -> str:
    head = (
        f"{rep.world_size} ranks on {len(rep.nodes)} node(s), {rep.backend}"
        if rep.world_size > 1
        else "one process (no torchrun): no bandwidth measured"
    )
    if not rep.complete:
        return f"INCOMPLETE: the run failed ({head}); see the errors"
    worst = max(
        (n.health_worst for n in rep.nodes), key=["ok", "info", "unknown", "warning", "critical"].index, default="ok"
    )
    parts = [head, f"worst health: {worst}"]
    intra = peak_busbw(rep.bandwidth, "intra-node")
    inter = peak_busbw(rep.bandwidth, "inter-node")
    world = peak_busbw(rep.bandwidth, "all-ranks")
    if intra is not None:
        parts.append(f"intra-node all-reduce busbw {intra:,.2f} GB/s")
    if inter is not None:
        parts.append(f"inter-node {inter:,.2f} GB/s")
    if world is not None:
        parts.append(f"all ranks {world:,.2f} GB/s")
    parts.append(f"{len(rep.stragglers)} straggler(s)" if rep.stragglers else "no stragglers")
    return "; ".join(parts)


def _gbs(v: float) -> str:
    """Three significant digits: a latency-bound 8 B transfer still shows a non-zero rate."""
    return f"{v:,.2f}" if v >= 100 else f"{v:.3g}"


def bandwidth_table(points: list[BandwidthPoint]) -> list[list[str]]:
    rows = [["scope", "group", "op", "ranks", "size", "time µs", "algbw GB/s", "busbw GB/s"]]
    for p in points:
        rows.append(
            [
                p.scope,
                p.group,
                p.op,
                str(p.ranks),
                fmt_bytes(p.bytes),
                f"{p.time_us:,.1f}",
                _gbs(p.algbw_gbs),
                _gbs(p.busbw_gbs),
            ]
        )
    return rows


def _judged(f: dict[str, Any]) -> str:
    """What was measured, the threshold and what to do, as `health` says them (a report saved
    before they were kept has none)."""
    from gpuselect.health.text import with_unit

    def shown(v: Any) -> str:
        return with_unit(measured(v) if isinstance(v, float) else str(v), v, f.get("unit"))

    out = ""
    if f.get("value") is not None or f.get("threshold") is not None:
        out += f" (measured {shown(f.get('value'))}; threshold {shown(f.get('threshold'))})"
    if f.get("remedy"):
        out += f"; what to do: {f['remedy']}"
    return out


def _sections(rep: FleetReport) -> list[tuple[str, list[str], list[list[str]] | None]]:
    """(title, lines, table) shared by Markdown, PDF and text."""
    out: list[tuple[str, list[str], list[list[str]] | None]] = []
    if rep.errors:
        out.append(("Errors", list(rep.errors), None))
    nodes = [["node", "host", "ranks", "GPUs", "health", "findings", "intra-node all-reduce busbw GB/s"]]
    for n in rep.nodes:
        counts = ", ".join(f"{v} {k}" for k, v in n.health_counts.items() if v and k != "ok")
        bw = peak_busbw(rep.bandwidth, "intra-node", n.name)
        nodes.append(
            [
                n.name,
                n.host,
                ",".join(map(str, n.ranks)),
                str(n.gpus),
                n.health_worst,
                counts or "—",
                "—" if bw is None else _gbs(bw),
            ]
        )
    out.append(("Nodes and health", ["Every rank ran detect and health; a node shows its worst rank's result."], nodes))
    gpus = [
        ["rank", "node", "device", "model", "memory GiB", "temp °C", "power W / limit", "SM MHz / max", "PCIe", "bench"]
    ]
    for r in rep.ranks:
        g = r.gpu
        b = r.bench or {}
        mm = b.get("matmul_tflops") or {}
        # As `bench` prints rates: an H100's fp8 rate is "1,221", not "1.22e+03".
        bench = ", ".join(f"{k} {measured(v)} TFLOP/s" for k, v in mm.items() if isinstance(v, (int, float)))
        if isinstance(b.get("memory_bandwidth_gbs"), (int, float)):
            bench += f"; mem {measured(b['memory_bandwidth_gbs'])} GB/s"
        gpus.append(
            [
                str(r.rank),
                r.node,
                r.device,
                (g.name if g else None) or (r.cpu_model or "CPU"),
                f"{g.memory_total_bytes / 2**30:.0f}" if g and g.memory_total_bytes else "—",
                str(g.temperature_c) if g and g.temperature_c is not None else "—",
                f"{g.power_draw_w:.0f} / {g.power_limit_w:.0f}"
                if g and g.power_draw_w is not None and g.power_limit_w
                else "—",
                f"{g.sm_mhz} / {g.sm_max_mhz}" if g and g.sm_mhz is not None else "—",
                (g.pcie if g else None) or "—",
                bench or "—",
            ]
        )
    out.append(("Ranks and their devices", [], gpus))
    findings = sorted(
        {
            (f["severity"], r.node, f.get("device") or "", f["title"], _judged(f))
            for r in rep.ranks
            for f in r.findings
            if f["severity"] in ("warning", "critical")
        },
        key=lambda t: (t[0] != "critical", t[1]),
    )
    if findings:
        out.append(
            (
                "Health findings (warnings and critical)",
                [f"[{s}] {n} {d}: {t}{j}" for s, n, d, t, j in findings],
                None,
            )
        )
    lines = [rep.method]
    if rep.bandwidth:
        out.append(("Collective bandwidth", lines, bandwidth_table(rep.bandwidth)))
    else:
        out.append(("Collective bandwidth", [*lines, "Nothing measured."], None))
    if rep.stragglers:
        st = [["who", "figure", "value", "median", "below median"]]
        st += [
            [s.what, s.metric, f"{s.value:,.3f}", f"{s.median:,.3f}", f"{100 * s.below_median:.0f} %"]
            for s in rep.stragglers
        ]
        out.append(("Stragglers (more than 10 % below the median)", [], st))
    else:
        out.append(("Stragglers (more than 10 % below the median)", ["None found."], None))
    if rep.notes:
        out.append(("Notes", list(rep.notes), None))
    return out


def to_text(rep: FleetReport) -> str:
    out = [f"gpuselect fleet — {verdict(rep)}"]
    for title, lines, table in _sections(rep):
        out += ["", f"{title}:"]
        out += [f"  {ln}" for ln in lines if ln is not rep.method]
        if table:
            widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
            out += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in table]
    return "\n".join(out)


def to_json(rep: FleetReport) -> str:
    return json_document({"report": rep}, kind="fleet")


def to_markdown(rep: FleetReport) -> str:
    stamp = f"{rep.generated_at} · gpuselect {rep.app_version} · torch {rep.torch_version} · {rep.duration_s:g} s"
    out = ["# gpuselect fleet report", "", stamp, "", f"**{verdict(rep)}**", ""]
    for title, lines, table in _sections(rep):
        out += [f"## {title}", ""] + [ln + "\n" for ln in lines]
        if table:
            head, *rows = table
            out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            out += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
            out.append("")
    return "\n".join(out)


def write(rep: FleetReport, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    fmt = fmt or format_of(path)
    if fmt == "json":
        return atomic_write_text(path, to_json(rep) + "\n")
    if fmt == "md":
        return atomic_write_text(path, to_markdown(rep))
    return atomic_write_bytes(path, to_pdf_bytes(rep))


def format_of(path: str | os.PathLike[str]) -> str:
    from gpuselect.errors import UsageError

    suffix = Path(path).suffix.lower().lstrip(".")
    suffix = "md" if suffix == "markdown" else suffix
    if suffix not in FORMATS:
        raise UsageError(f"--output must end in .json, .md or .pdf, not {Path(path).name!r}")
    return suffix


# --- PDF --------------------------------------------------------------------------------------


def _fonts() -> tuple[str, str]:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if "Vera" not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont("Vera", "Vera.ttf"))  # ships with reportlab; embedded in the PDF
        pdfmetrics.registerFont(TTFont("VeraBd", "VeraBd.ttf"))
    return "Vera", "VeraBd"


def bandwidth_chart(points: list[BandwidthPoint], width: float, font: str) -> Any:
    """Bus bandwidth against buffer size, log-log; solid: intra-node, dashed: inter-node, dotted: all ranks."""
    from reportlab.graphics.charts.legends import Legend
    from reportlab.graphics.charts.lineplots import LinePlot
    from reportlab.graphics.shapes import Drawing, String
    from reportlab.lib import colors

    series: dict[str, list[tuple[float, float]]] = {}
    for scope in SCOPES:
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            by_size: dict[int, list[float]] = {}
            for p in points:
                if p.scope == scope and p.op == op and p.busbw_gbs > 0:
                    by_size.setdefault(p.bytes, []).append(p.busbw_gbs)
            if by_size:  # several nodes: their median per size
                import statistics

                series[f"{op} {scope}"] = [
                    (math.log10(b), math.log10(statistics.median(v))) for b, v in sorted(by_size.items())
                ]
    d = Drawing(width, 250)
    if not series:
        return d
    lp = LinePlot()
    lp.x, lp.y, lp.width, lp.height = 50, 40, width - 210, 175
    names = list(series)
    lp.data = [series[n] for n in names]
    palette = {"all_reduce": "#1f77b4", "all_gather": "#ff7f0e", "reduce_scatter": "#2ca02c"}
    for i, n in enumerate(names):
        lp.lines[i].strokeColor = colors.HexColor(palette[n.split()[0]])
        lp.lines[i].strokeWidth = 1.5
        lp.lines[i].strokeDashArray = DASHES[n.split()[1]]
    xs = [x for pts in lp.data for x, _ in pts]
    ys = [y for pts in lp.data for _, y in pts]
    # x: buffer sizes are powers of two; tick every 16x (8 B, 128 B, 2 KiB, ... 1 GiB).
    e_lo, e_hi = math.floor(min(xs) / math.log10(2) + 1e-9), math.ceil(max(xs) / math.log10(2) - 1e-9)
    lp.xValueAxis.valueMin, lp.xValueAxis.valueMax = e_lo * math.log10(2), max(e_hi, e_lo + 1) * math.log10(2)
    lp.xValueAxis.valueSteps = [e * math.log10(2) for e in range(e_lo, e_hi + 1) if (e - e_lo) % 4 == 0 or e == e_hi]
    lo, hi = math.floor(min(ys)), math.ceil(max(ys))
    lp.yValueAxis.valueMin, lp.yValueAxis.valueMax = lo, hi if hi > lo else lo + 1
    lp.yValueAxis.valueSteps = [float(k) for k in range(int(lp.yValueAxis.valueMin), int(lp.yValueAxis.valueMax) + 1)]
    for axis in (lp.xValueAxis, lp.yValueAxis):
        axis.labels.fontName, axis.labels.fontSize = font, 7
    lp.xValueAxis.labelTextFormat = lambda v: fmt_bytes(round(10**v))
    lp.yValueAxis.labelTextFormat = lambda v: f"{10**v:g}"
    d.add(lp)
    legend = Legend()
    legend.x, legend.y = lp.x + lp.width + 18, 215
    legend.alignment = "right"  # swatch, then the name
    legend.columnMaximum = len(names)
    legend.deltay = 10
    legend.fontName, legend.fontSize = font, 7
    kinds = {"intra-node": "", "inter-node": " (dashed)", "all-ranks": " (dotted)"}
    legend.colorNamePairs = [(colors.HexColor(palette[n.split()[0]]), n + kinds[n.split()[1]]) for n in names]
    d.add(legend)
    d.add(String(50, 235, "Bus bandwidth by buffer size (log-log)", fontName=font, fontSize=9))
    d.add(String(50 + (width - 210) / 2 - 30, 10, "buffer size (log)", fontName=font, fontSize=7))
    d.add(String(0, 222, "busbw GB/s (log)", fontName=font, fontSize=7))
    return d


def to_pdf_bytes(rep: FleetReport) -> bytes:
    from xml.sax.saxutils import escape

    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, landscape
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import (
        Paragraph,
        SimpleDocTemplate,
        Spacer,
        Table,
        TableStyle,
    )

    font, bold = _fonts()
    size = landscape(A4)  # the tables are wide
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf,
        pagesize=size,
        leftMargin=14 * mm,
        rightMargin=14 * mm,
        topMargin=14 * mm,
        bottomMargin=16 * mm,
        title="gpuselect fleet report",
        author="gpuselect",
        subject=verdict(rep),
        creator=f"gpuselect {rep.app_version}",
    )
    body = ParagraphStyle("body", fontName=font, fontSize=9, leading=12)
    small = ParagraphStyle("small", fontName=font, fontSize=7, leading=9)
    h1 = ParagraphStyle("h1", fontName=bold, fontSize=18, leading=22, spaceAfter=6)
    h2 = ParagraphStyle("h2", fontName=bold, fontSize=13, leading=16, spaceBefore=10, spaceAfter=4)
    strong = ParagraphStyle("verdict", fontName=bold, fontSize=11, leading=14, spaceBefore=6, spaceAfter=6)
    width = size[0] - 28 * mm
    story: list[Any] = [
        Paragraph("gpuselect fleet report", h1),
        Paragraph(
            escape(
                f"{rep.generated_at} · gpuselect {rep.app_version} · torch {rep.torch_version} · {rep.duration_s:g} s"
            ),
            body,
        ),
        Paragraph(escape(verdict(rep)), strong),
    ]
    for title, lines, table in _sections(rep):
        story.append(Paragraph(escape(title), h2))
        for ln in lines:
            story.append(Paragraph(escape(ln), body))
            story.append(Spacer(1, 3))
        if title == "Collective bandwidth" and rep.bandwidth:
            story.append(bandwidth_chart(rep.bandwidth, width, font))
        if table:
            ncol = len(table[0])
            t = Table(
                # a cell is at most a few lines: a 1,000-character CPU name made a row taller than a page
                [[Paragraph(escape(c if len(c) <= 160 else c[:159] + "…"), small) for c in row] for row in table],
                repeatRows=1,
                colWidths=[width / ncol] * ncol,
                splitByRow=1,
            )
            t.setStyle(
                TableStyle(
                    [
                        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e2e8f0")),
                        ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#a0aec0")),
                        ("VALIGN", (0, 0), (-1, -1), "TOP"),
                    ]
                )
            )
            story.append(t)

    def footer(canvas: Any, doc_: Any) -> None:
        canvas.saveState()
        canvas.setFont(font, 7)
        canvas.drawString(14 * mm, 9 * mm, f"gpuselect {rep.app_version} fleet · {verdict(rep)[:110]}")
        canvas.drawRightString(size[0] - 14 * mm, 9 * mm, f"Page {doc_.page}")
        canvas.restoreState()

    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return buf.getvalue()
