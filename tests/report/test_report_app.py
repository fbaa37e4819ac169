"""The report from the application layer: page 1's summary, the recommended option in the table,
chart marks on their axes, currency and redaction from the settings."""

from __future__ import annotations

import json
import math
import os
import re
import socket
from pathlib import Path

import pytest

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("reportlab")

# ruff: noqa: E402 - the imports below need pypdf and reportlab, skipped above when missing
from reportlab.graphics.shapes import Line, String

from gpuselect.app.machine import this_machine
from gpuselect.app.workflows import (
    assumptions,
    build_machine_report,
    estimate_for_machine,
)
from gpuselect.cli import main
from gpuselect.report.model import scrub_paths
from gpuselect.report.writers import (
    LogAxis,
    _scatter_chart,
    _stage_chart,
    place_labels,
    to_pdf_bytes,
)
from gpuselect.settings import Settings
from gpuselect.workloads.presets import get_preset
from tests.app.machines import a100x2


def _pages(pdf: bytes, tmp_path: Path) -> list[str]:
    p = tmp_path / "x.pdf"
    p.write_bytes(pdf)
    return [page.extract_text() for page in pypdf.PdfReader(str(p)).pages]


def _settings_file(values: dict) -> None:  # type: ignore[type-arg]
    folder = Path(os.environ["GPUSELECT_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(values))


def test_log_axis_is_one_transform() -> None:
    ax = LogAxis(0, 2, 100.0, 200.0)  # 1 h .. 100 h over 200 pt
    assert ax.pos(1) == 100 and ax.pos(100) == 300 and ax.pos(10) == pytest.approx(200)
    assert ax.pos(72) == pytest.approx(100 + 200 * math.log10(72) / 2)
    assert LogAxis.covering([0.3, 72], 0, 1).lo == -1 and LogAxis.covering([0.3, 72], 0, 1).hi == 2


def _chart(deadline: float = 72.0) -> dict:  # type: ignore[type-arg]
    per = {
        "1": {
            "kind": "cpu",
            "name": "CPU",
            "total_time_h": 900.0,
            "time_low_h": 450.0,
            "time_high_h": 1800.0,
            "cost_usd": 0.0,
        },
        "2": {
            "kind": "buy",
            "name": "RTX",
            "count": 1,
            "total_time_h": 30.0,
            "time_low_h": 20.0,
            "time_high_h": 45.0,
            "cost_usd": 1500.0,
        },
    }
    pts = [
        (30.0, 1500.0, "1x RTX", "buy"),
        (5.0, 300.0, "8x H100", "rent"),
        (100.0, 200.0, "1x T4", "rent"),
        (12.0, 9000.0, "2x A6000", "buy"),
    ]
    return {
        "per_stage": per,
        "points": pts,
        "deadline_h": deadline,
        "budget": None,
        "local": [(900.0, "cpu")],
        "stage": 2,
        "currency": "€",
    }


def _strings(d) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {c.text: c.x for c in d.contents if isinstance(c, String)}


@pytest.mark.parametrize("make", [_stage_chart, _scatter_chart])
def test_the_deadline_line_sits_at_72_h_between_the_10_h_and_100_h_ticks(make) -> None:  # type: ignore[no-untyped-def]
    d = make(_chart(72.0), 480.0, "Helvetica")
    ticks = _strings(d)
    x10, x100 = ticks["10 h"], ticks["100 h"]  # tick labels are centred on their tick
    red = [c for c in d.contents if isinstance(c, Line) and c.strokeDashArray == [3, 2]]
    assert len(red) == 1 and red[0].x1 == red[0].x2
    assert red[0].x1 == pytest.approx(x10 + (x100 - x10) * math.log10(7.2), abs=0.01)


def test_scatter_marks_sit_on_their_axes() -> None:
    d = _scatter_chart(_chart(), 480.0, "Helvetica")
    ax, ay = d._axes
    ticks = _strings(d)
    assert ticks["1 h"] == pytest.approx(ax.pos(1.0)) and ticks["100 h"] == pytest.approx(ax.pos(100.0))
    # the Pareto front's vertices are the points themselves
    from reportlab.graphics.shapes import PolyLine

    front = next(c for c in d.contents if isinstance(c, PolyLine))
    assert front.points[:2] == pytest.approx([ax.pos(5.0), ay.pos(300.0)])
    assert "rent (cloud, on demand)" in ticks and "buy (price + electricity)" in ticks and "€1k" in ticks


def test_labels_never_overlap() -> None:
    anchors = [
        (100.0, 100.0, "fastest: 8x H100 (rent)"),
        (101.0, 100.5, "cheapest: 1x T4 (rent)"),
        (102.0, 99.0, "your cpu"),
    ]
    placed = place_labels(anchors, "Helvetica", 6.5, (0, 0, 400, 300))
    from gpuselect.report.writers import _label_box, _overlaps

    boxes = [_label_box(x, y, t, "Helvetica", 6.5) for x, y, t in placed]
    assert len(placed) == 3
    assert not any(_overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_summary_on_page_1_and_the_recommended_option_in_the_table(tmp_path: Path) -> None:
    m = this_machine(nvml=a100x2())
    s = Settings(currency_symbol="€", usd_to_currency=0.9)
    result = estimate_for_machine(get_preset("llama-8b-qlora"), assumptions(s), m)
    report = build_machine_report(m, result, settings=s)
    rec = result.recommendation
    assert report.summary.startswith(f"Stage {rec.stage}") and "critical" in report.summary and "gpu1" in report.summary
    pages = _pages(to_pdf_bytes(report), tmp_path)
    first = " ".join(pages[0].split())
    assert "Left out of the plan: gpu1" in first and "€" in first
    est = next(sec for sec in report.sections if sec.title == "Estimates")
    assert sum("(recommended)" in row[0] for row in est.table) == 1  # type: ignore[union-attr]
    assert est.table[0][5] == "Buy (€)"  # type: ignore[index]
    text = "\n".join(pages)
    assert "$" not in "".join(report.summary + "".join(est.lines))
    assert "one consumer GPU" in text and "workstation / rented GPUs" in text  # the CLI's stage names


def test_the_recommended_option_is_in_the_table_even_when_slow(tmp_path: Path) -> None:
    from gpuselect.report.model import build_report

    m = this_machine(nvml=a100x2())
    result = estimate_for_machine(
        get_preset("resnet50"), assumptions(Settings(), deadline_hours=2000, max_gpus=1), None
    )
    report = build_report(m.snapshot, m.health, estimate=result, top=1)
    est = next(sec for sec in report.sections if sec.title == "Estimates")
    rec = result.recommendation
    assert rec.option is not None and any(
        r[0].startswith(f"{rec.option['count']}x {rec.option['name']} (recommended)") for r in est.table
    )  # type: ignore[union-attr]


def test_settings_redaction_applies_to_the_cli_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A host name that cannot occur by chance in a report (this VM's own is "vm", two letters).
    monkeypatch.setattr(socket, "gethostname", lambda: "host-0f3a9c-secret")
    _settings_file({"redact_reports": True})
    cfg = tmp_path / "secret-project" / "secret-llama" / "config.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 512,
                "num_hidden_layers": 4,
                "num_attention_heads": 8,
                "intermediate_size": 1024,
                "vocab_size": 1000,
            }
        )
    )
    out = tmp_path / "r.md"
    assert main(["report", "-o", str(out), "--config", str(cfg)]) == 0
    body = out.read_text()
    assert socket.gethostname() not in body and "[redacted]" in body
    assert "secret-project" not in body and "config.json" in body
    # the workload is named after the config's folder: a redacted report names it neutrally
    assert "secret-llama" not in body and "a model from a config file" in body
    assert main(["report", "-o", str(out), "--no-redact", "--config", str(cfg)]) == 0  # the flag overrides the setting
    body = out.read_text()
    assert socket.gethostname() in body and "secret-llama (from config.json)" in body


def test_scrub_paths() -> None:
    assert scrub_paths("computed from /home/u/p/config.json (x)") == "computed from config.json (x)"
    assert scrub_paths("read from C:\\Users\\u\\m.py: 3 layers") == "read from m.py: 3 layers"
    assert scrub_paths("no path here, 3 layers") == "no path here, 3 layers"


def test_cli_report_money_in_the_settings_currency(tmp_path: Path) -> None:
    _settings_file({"currency_symbol": "CHF", "usd_to_currency": 0.8})
    out = tmp_path / "r.json"
    assert main(["report", "-o", str(out), "--workload", "resnet50"]) == 0
    doc = json.loads(out.read_text())["report"]
    est = next(s for s in doc["sections"] if s["title"] == "Estimates")
    assert est["table"][0][5] == "Buy (CHF)" and "$" not in " ".join(est["lines"])
    assert est["chart"]["currency"] == "CHF"


@pytest.mark.parametrize(("symbol", "code"), [("₩", "KRW"), ("₹", "INR")])
def test_the_pdf_writes_a_currency_sign_its_font_lacks_as_its_code(symbol: str, code: str, tmp_path: Path) -> None:
    # QA 14c: "for about □421,543 rented": the bundled font has no ₩, so the PDF drew a missing-glyph box.
    m = this_machine(nvml=a100x2())
    s = Settings(currency_symbol=symbol, usd_to_currency=1350.0)
    report = build_machine_report(m, estimate_for_machine(get_preset("resnet50"), assumptions(s), m), settings=s)
    text = "\n".join(_pages(to_pdf_bytes(report), tmp_path))
    assert symbol not in text and f"({code}, log)" in text  # the chart's axis title too
    assert re.search(rf"\b{code} \d[\d,]*", text), text[:2000]  # "KRW 24,780": the code, a space, the figure


def test_a_currency_sign_the_font_draws_is_kept() -> None:
    from reportlab.pdfbase import pdfmetrics

    from gpuselect.report.writers import _fonts, drawable_text

    chars = set(pdfmetrics.getFont(_fonts()[0]).face.charToGlyph)
    assert drawable_text("about €1,200 (€)", chars) == "about €1,200 (€)"
    assert drawable_text("about ₩1,200 (₩)", chars) == "about KRW 1,200 (KRW)"
    # coverage is read from the font, not a list: a font with ₩ keeps it
    assert drawable_text("₩5", {ord("₩"), ord("5")}) == "₩5"


def test_report_says_what_memory_each_gpu_needs(tmp_path: Path) -> None:
    """Issue #13: the report shows 'needs X of Y GB' per GPU with its breakdown, adding up to the peak."""
    out = tmp_path / "mem.md"
    assert (
        main(
            ["report", "-o", str(out), "--workload", "llama-8b-lora", "--gpus", "nvidia-rtx-4090,nvidia-h100-sxm5-80gb"]
        )
        == 0
    )
    body = out.read_text()
    assert "## Memory per GPU" in body
    memory = body[body.index("## Memory per GPU") :]
    row = next(line for line in memory.splitlines() if line.startswith("| 1x GeForce RTX 4090"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    peak, vram, fits, parts = float(cells[1]), float(cells[2]), cells[3], [float(c) for c in cells[4:10]]
    assert cells[10] in ("none", "selective", "full")  # what the figure assumed
    assert vram == 24.0 and peak > 0 and fits in ("yes", "no")
    assert abs(sum(parts) - peak) <= 0.1 * len(parts)  # the breakdown adds up to the peak (each part rounded)


def _all_text(d) -> list[str]:  # type: ignore[no-untyped-def]
    out = []
    for c in d.contents:
        if isinstance(c, String):
            out.append(c.text)
        elif hasattr(c, "contents"):
            out += _all_text(c)
    return out


@pytest.mark.parametrize(
    ("deadline", "label"),
    [
        (200.0, "cheapest in time: 1x T4 (rent)"),  # both meet it: the cheaper one in time
        (72.0, None),  # only the fastest meets it: it is also the cheapest in time, one label
        (1.0, "cheapest: 1x T4 (rent)"),  # none meets it: the cheapest overall
    ],
)
def test_the_scatter_labels_the_cheapest_option_that_meets_the_deadline(deadline: float, label: str | None) -> None:
    # "cheapest: 32x GH200" labelled an option 3 h past a 1 h deadline, while the recommended
    # option in time went unlabelled.
    texts = _all_text(_scatter_chart(_chart(deadline), 480.0, "Helvetica"))
    assert "fastest: 8x H100 (rent)" in texts
    cheap = [t for t in texts if t.startswith("cheapest")]
    assert cheap == ([label] if label else [])


def test_the_pdf_footer_cuts_a_long_verdict_at_a_word_and_marks_it(tmp_path: Path) -> None:
    from gpuselect.report.writers import write

    m = this_machine(nvml=a100x2())
    result = estimate_for_machine(get_preset("gpt2-124m"), assumptions(Settings()), m)
    report = build_machine_report(m, result, settings=Settings())
    report.verdict = (
        "Stage 2 — one consumer GPU: Buy 1x GeForce RTX 5090 (~24.7 h), " + "or rent 1x GH200 96GB (~8.5 h, $19) " * 3
    )
    out = write(report, str(tmp_path / "r.pdf"), "pdf")
    first = pypdf.PdfReader(str(out)).pages[0].extract_text()
    line = next(x for x in first.splitlines() if x.startswith("gpuselect ") and "Stage 2" in x)
    assert line.rstrip().endswith("…") or "… Page" in line
    kept = line.split("…")[0].rstrip()
    assert not kept.endswith(("(~8", "(~8.", "(~8.5")) and not kept[-1].isdigit()  # never cut inside a figure


def test_the_report_table_marks_missed_deadlines_and_the_options_the_advice_names() -> None:
    from gpuselect.report.model import build_report

    m = this_machine(nvml=a100x2())
    result = estimate_for_machine(get_preset("llama-70b-full"), assumptions(Settings(), deadline_hours=0.01), None)
    rec = result.recommendation
    report = build_report(m.snapshot, m.health, estimate=result)
    est = next(sec for sec in report.sections if sec.title == "Estimates")
    labels = [r[0] for r in est.table]  # type: ignore[union-attr]
    assert rec.missed == "deadline" and any("(recommended) (misses deadline)" in x for x in labels)
    if rec.value_alt is not None:
        assert any("(named in the advice)" in x for x in labels)
    assert not any("  (" in x for x in labels)


def test_a_benchmark_of_another_machine_is_named_in_the_report_and_adds_no_finding() -> None:
    # `report --bench FILE` with another machine's record: the note went to stderr only; the
    # report showed "No training step was measured in this run" over an empty table, and its
    # busy-machine warning stood in this machine's health.
    import dataclasses

    from gpuselect.bench.model import BenchReport, DeviceResult, TrainStep

    m = this_machine(nvml=a100x2())
    cpu = DeviceResult(
        "cpu", "AMD EPYC 9654 96-Core Processor", "cpu", logical_cores=(m.snapshot.cpu.logical_cores or 2) + 190
    )
    cpu = dataclasses.replace(cpu, train_steps=[TrainStep("simple_cnn", 16, 4000.0, 4.0, False)])
    bench = BenchReport(devices=[cpu], quick=True, torch_version="2.5", other_cpu_share=0.4)
    foreign = this_machine(snapshot=m.snapshot, bench=bench)
    assert foreign.bench.devices == [] and foreign.bench_notes
    assert not any(f.id.startswith("bench.") for f in foreign.health.findings)
    report = build_machine_report(foreign, None, settings=Settings())
    sec = next(s for s in report.sections if s.title == "Benchmark")
    assert any("AMD EPYC 9654" in line and "not used here" in line for line in sec.lines)
    assert not any("No training step was measured" in line for line in sec.lines) and sec.table is None


def test_the_report_s_own_gpu_row_says_its_precision() -> None:
    """Review 16: the table's Precision column was empty on the row of the user's own cards, where
    an fp8 request runs bf16 on A100s."""
    s = Settings()
    m = this_machine(nvml=a100x2(ecc_on_gpu1=False))
    a = assumptions(s, precision="fp8")
    report = build_machine_report(m, estimate_for_machine(get_preset("resnet50"), a, m), settings=s)
    est = next(x for x in report.sections if x.title == "Estimates")
    assert est.table is not None
    head, *table = est.table
    own = next(line for line in table if "(all healthy cards together)" in line[0])
    assert own[head.index("Precision")] == "bf16", own
