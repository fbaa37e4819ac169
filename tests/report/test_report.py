"""The report: structure of the PDF (text extracted back out), redaction, atomic writing, errors."""

from __future__ import annotations

import itertools
import json
import re
import socket
from pathlib import Path

import pypdf
import pytest

from gpuselect.cli import main
from gpuselect.errors import OutputError
from gpuselect.hardware.snapshot import detect
from gpuselect.health.rules import evaluate
from gpuselect.report.model import build_report
from gpuselect.report.writers import default_paper, to_pdf_bytes, write
from tests.fakes import fake_nvml as F


def _text(path: Path) -> tuple[str, int]:
    reader = pypdf.PdfReader(str(path))
    return "\n".join(p.extract_text() for p in reader.pages), len(reader.pages)


def test_full_report_structure_and_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = F.thermal_throttling()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    out = tmp_path / "report.pdf"
    assert main(["report", "-o", str(out), "--workload", "resnet50", "--epochs", "1"]) == 0
    text, pages = _text(out)
    assert 2 <= pages <= 12
    order = [
        "gpuselect hardware report",
        "This machine",
        "Health",
        "Workload and assumptions",
        "Estimates",
        "Method and sources",
    ]
    positions = [text.index(h) for h in order]
    assert positions == sorted(positions), "sections out of order"
    assert "Stage " in text and "NVIDIA H100 80GB HBM3" in text and "CRITICAL" in text
    assert "Best option per stage" in text and "Time vs cost" in text  # the charts (vector drawings with text)
    assert "Page 1" in text and "Epoch AI" in text and "wide enough to cover 80 %" in text
    assert "your cpu" in text  # the local machine has its own row
    assert socket.gethostname() in text
    raw = out.read_bytes()
    assert b"/FontFile2" in raw  # TrueType fonts embedded


def test_hardware_only_report_has_no_estimate(tmp_path: Path) -> None:
    out = tmp_path / "hw.pdf"
    assert main(["report", "-o", str(out)]) == 0
    text, _ = _text(out)
    assert "Health" in text and "Method and sources" in text
    assert "\nEstimates\n" not in text and "Workload and assumptions" not in text and "Stage " not in text
    assert "No problems found" in text or "All checks passed" in text


def test_benchmark_section_from_a_saved_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.measurement_budget_s", lambda self: 0.03)
    # a generous time box: this checks what is written, not how fast a shared machine is
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.device_time_box_s", lambda self: 600.0)
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.train_batch_sizes", lambda self: (1, 4))
    assert main(["bench", "--device", "cpu", "--quick", "--format", "json"]) == 0
    bench = tmp_path / "bench.json"
    bench.write_text(capsys.readouterr().out)
    out = tmp_path / "b.pdf"
    assert main(["report", "-o", str(out), "--bench", str(bench)]) == 0
    text, _ = _text(out)
    assert "Benchmark" in text and "matmul fp32" in text
    # the chart when training steps were measured; a sentence when a loaded machine's budget ran out first
    assert "Training samples/s by batch size" in text or "No training step was measured" in text


def test_redaction_removes_host_and_serials(tmp_path: Path) -> None:
    snap = detect(nvml=F.healthy(), probe=False)
    assert snap.gpus[0].serial and snap.gpus[0].uuid
    report = build_report(snap, evaluate(snap), redact=True)
    pdf = to_pdf_bytes(report, compress=False)  # uncompressed: a byte search really sees every string
    for secret in (snap.host, snap.gpus[0].serial, snap.gpus[0].uuid):
        assert secret.encode() not in pdf
    path = tmp_path / "r.pdf"
    path.write_bytes(pdf)
    text, _ = _text(path)
    assert "[redacted]" in text and snap.host not in text
    md = tmp_path / "r.md"
    write(report, md, "md")
    js = tmp_path / "r.json"
    write(report, js, "json")
    for f in (md, js):
        body = f.read_text()
        assert snap.host not in body and snap.gpus[0].serial not in body and snap.gpus[0].uuid not in body


def test_json_and_markdown_carry_the_same_content(tmp_path: Path) -> None:
    assert main(["report", "-o", str(tmp_path / "r.json"), "--workload", "simple-cnn"]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["kind"] == "report"
    titles = [s["title"] for s in doc["report"]["sections"]]
    assert titles == [
        "This machine",
        "Health",
        "Workload and assumptions",
        "Estimates",
        "Memory per GPU",
        "Method and sources",
    ]
    assert main(["report", "-o", str(tmp_path / "r.md"), "--workload", "simple-cnn"]) == 0
    md = (tmp_path / "r.md").read_text()
    for t in titles:
        assert f"## {t}" in md
    assert doc["report"]["verdict"] in md


def test_atomic_write_keeps_the_old_report_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "keep.pdf"
    out.write_bytes(b"%PDF old report")

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("gpuselect.fsutil.os.fsync", fail)
    snap = detect(probe=False)
    with pytest.raises(OutputError, match="No space left"):
        write(build_report(snap, evaluate(snap)), out, "pdf")
    assert out.read_bytes() == b"%PDF old report"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.pdf"]  # no temp file left behind


def test_unwritable_path_is_one_sentence_and_nonzero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["report", "-o", str(blocker / "sub" / "r.pdf")])
    err = capsys.readouterr().err
    assert code != 0 and "cannot write" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("env", "paper"),
    [({"LC_PAPER": "en_US.UTF-8"}, "letter"), ({"LC_PAPER": "de_DE.UTF-8"}, "a4"), ({"LANG": "en_CA.UTF-8"}, "letter")],
)
def test_paper_size_follows_the_locale(env: dict, paper: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LC_PAPER", "LC_ALL", "LANG"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert default_paper() == paper


def test_identical_local_gpus_are_one_chart_mark() -> None:
    from types import SimpleNamespace as Ns

    from gpuselect.report.model import local_marks

    same = [Ns(device=f"gpu{i}", name="NVIDIA H100 80GB HBM3", total_time_h=2.5) for i in range(8)]
    other = Ns(device="gpu8", name="NVIDIA GeForce RTX 4090", total_time_h=7.0)
    cpu = Ns(device="cpu", name="this CPU", total_time_h=900.0)
    gone = Ns(device="gpu9", name="NVIDIA GeForce RTX 4090", total_time_h=7.0)
    marks = local_marks([*same, other, cpu, gone], {"gpu9"})
    assert marks == [(2.5, "8\u00d7 H100 80GB HBM3 (each alone)"), (7.0, "gpu8"), (900.0, "cpu")]
    # a CPU that cannot hold the training state is no mark (it was drawn at "6,637 days")
    full = Ns(device="cpu", name="this CPU", total_time_h=159_288.0, fits=False)
    assert local_marks([other, full]) == [(7.0, "gpu8")]
    # the memory line's label says "each alone" as the time's mark does: beside the 8-GPU row's need
    from gpuselect.report.model import local_gpu_groups

    for g in (*same, other):
        g.peak_memory_gb = 68.9 if g in same else 20.0
    labels = [who for who, _locs in local_gpu_groups([*same, other, cpu])]
    assert labels == ["8\u00d7 H100 80GB HBM3 (each alone)", "gpu8 GeForce RTX 4090"]


def test_memory_section_draws_a_stacked_bar_per_gpu_that_adds_up_to_the_peak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #13: 'needs X of your Y GB' with the breakdown as a stacked bar, for this machine's GPUs
    (eight identical H100s: one bar) and every option the estimate table shows."""
    from gpuselect.report.writers import _fonts, _memory_charts

    fake = F.h100x8()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    out = tmp_path / "r.json"
    assert main(["report", "-o", str(out), "--workload", "llama-8b-lora", "--batch-size", "4"]) == 0
    doc = json.loads(out.read_text())["report"]
    mem = next(s for s in doc["sections"] if s["title"] == "Memory per GPU")
    est = next(s for s in doc["sections"] if s["title"] == "Estimates")
    bars = mem["chart"]["bars"]
    labels = [b["label"] for b in bars]
    assert labels[0].startswith("your 8\u00d7 ") and "H100" in labels[0]
    assert sum(label.startswith("your ") for label in labels) == 1  # identical cards: one bar
    marks = re.compile(r" \((recommended|named in the advice|best of stage \d|misses deadline)\)")
    options = [marks.sub("", r[0]) for r in est["table"][1:] if r[0][0].isdigit()]
    assert options and all(o in labels for o in options)  # every option shown has its bar
    assert mem["lines"][1].startswith(labels[0] + ": needs ")
    assert any("of your 80 GB" in ln for ln in mem["lines"])
    assert len(mem["table"]) == len(bars) + 1  # Markdown/JSON table: the same numbers
    for b, row in zip(bars, mem["table"][1:], strict=True):
        assert abs(sum(b["parts_gb"].values()) - b["peak_gb"]) <= 0.02
        assert float(row[1]) == pytest.approx(b["peak_gb"], abs=0.006)
    font, _ = _fonts()
    drawings = _memory_charts(mem["chart"], 480.0, font, per_drawing=10)
    drawn = [bar for d in drawings for bar in d._bars]
    assert [label for label, *_ in drawn] == labels
    for (_, segs, peak_w), b in zip(drawn, bars, strict=True):
        assert peak_w <= drawings[0]._axis  # nothing here is cut (see the next test)
        assert {name for name, *_ in segs} <= set(mem["chart"]["parts"]) and len(segs) >= 3
        assert sum(w for *_, w in segs) == pytest.approx(peak_w, rel=1e-3)  # the segments add up to the peak
        for (_, x, w), (_, x2, _) in itertools.pairwise(segs):
            assert x2 == pytest.approx(x + w)  # stacked, side by side
        for name, _, w in segs:  # each segment in proportion to its part of the peak
            assert w / peak_w == pytest.approx(b["parts_gb"][name] / b["peak_gb"], abs=2e-3)
    pdf = tmp_path / "r.pdf"
    assert main(["report", "-o", str(pdf), "--workload", "llama-8b-lora", "--batch-size", "4"]) == 0
    text, _ = _text(pdf)
    assert "Memory per GPU" in text and "the card's memory (GB)" in text and "of 80 GB" in text


def test_a_far_too_big_peak_is_cut_at_the_end_of_the_memory_scale() -> None:
    from gpuselect.report.writers import _fonts, _memory_charts

    parts = ["weights", "gradients", "optimizer", "activations", "logits", "overhead"]

    def bar(label: str, peak: float, vram: float) -> dict:  # type: ignore[type-arg]
        shares = dict(zip(parts, (0.1, 0.2, 0.6, 0.05, 0.02, 0.03), strict=True))
        return {
            "label": label,
            "peak_gb": peak,
            "vram_gb": vram,
            "fits": peak <= vram,
            "parts_gb": {p: peak * f for p, f in shares.items()},
        }

    chart = {"parts": parts, "bars": [bar("your gpu0 RTX 3090", 1247.5, 24), bar("64x L40S", 44.5, 48)]}
    (d,) = _memory_charts(chart, 480.0, _fonts()[0])
    (_, big, big_w), (_, small, small_w) = d._bars
    assert big_w > d._axis and sum(w for *_, w in big) == pytest.approx(d._axis)  # shortened to the scale
    assert [w / d._axis for *_, w in big] == pytest.approx([0.1, 0.2, 0.6, 0.05, 0.02, 0.03])  # in proportion
    assert sum(w for *_, w in small) == pytest.approx(small_w) and small_w > 0.4 * d._axis  # not flattened


def test_the_assumptions_name_checkpointing_loss_sharding_and_offload(tmp_path: Path) -> None:
    # They change the memory figures and the times: a report that leaves them out cannot be rerun.
    out = tmp_path / "r.md"
    argv = ["report", "-o", str(out), "--workload", "llama-8b-lora", "--gpus", "nvidia-rtx-4090"]
    assert main([*argv, "--checkpointing", "selective", "--loss", "plain", "--offload", "optimizer"]) == 0
    text = out.read_text()
    assert "checkpointing selective, plain loss, sharding auto, offload optimizer" in text
    assert main([*argv, "--sharding", "zero2"]) == 0
    assert "checkpointing auto, chunked loss, sharding zero2, offload none" in out.read_text()


def test_rows_no_measured_step_validates_are_marked_in_the_report(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    argv = ["report", "-o", str(out), "--workload", "llama-8b-lora", "--gpus", "nvidia-rtx-4090", "--count", "1,4"]
    assert main(argv) == 0
    text = out.read_text()
    assert "(*) No measured step validates PCIe-only multi-GPU" in text
    # whose band it borrows in the CLI's and the desktop app's words (one text in the core)
    from gpuselect.estimate.recommend import BORROWED_BAND_NOTE

    assert f"multi-GPU: {BORROWED_BAND_NOTE}." in text
    marked = [ln for ln in text.splitlines() if ln.startswith("| 4x GeForce RTX 4090")]
    assert marked and marked[0].rstrip(" |").endswith("(*)")
    assert not any(ln.startswith("| 1x GeForce RTX 4090") and "(*)" in ln for ln in text.splitlines())


def test_the_assumptions_say_which_counts_were_evaluated(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    argv = ["report", "-o", str(out), "--workload", "llama-8b-lora", "--gpus", "nvidia-rtx-4090", "--count", "2,4"]
    assert main(argv) == 0
    text = out.read_text()
    assert "counts 2, 4 GPUs" in text and "up to 8 GPUs in a box" not in text  # only 2 and 4 were evaluated


@pytest.mark.parametrize(
    ("options", "said"),
    [(["--max-gpus", "1"], "up to 1 GPU in a box;"), (["--count", "1"], "counts 1 GPU;")],
)
def test_the_assumptions_count_one_gpu_in_the_singular(tmp_path: Path, options: list[str], said: str) -> None:
    """ "up to 1 GPUs in a box": the same line in Markdown, PDF and JSON (all from the report model)."""
    out = tmp_path / "r.json"
    argv = ["report", "-o", str(out), "--no-bench", "--workload", "resnet50", "--gpus", "nvidia-rtx-4090", *options]
    assert main(argv) == 0
    lines = [ln for s in json.loads(out.read_text())["report"]["sections"] for ln in s["lines"]]
    assert any(said in ln for ln in lines) and not any(" 1 GPUs" in ln for ln in lines)


def test_the_workload_line_gives_the_forward_flops_once(tmp_path: Path) -> None:
    """Own figures' description now ends "..., 0.00100 GFLOP per sample forward" (QA 17f), and the
    report's workload line then added the same figure again after the parameters."""
    out = tmp_path / "r.md"
    assert main(["report", "-o", str(out), "--no-bench", "--params", "1e5", "--flops-per-sample", "1e6"]) == 0
    line = next(ln for ln in out.read_text().splitlines() if ln.startswith("Custom workload: "))
    assert line.count("GFLOP per sample forward") == 1 and "100,000 parameters (100,000 trained). Figures" in line
    preset = tmp_path / "p.md"
    assert main(["report", "-o", str(preset), "--no-bench", "--workload", "resnet50", "--gpus", "nvidia-rtx-4090"]) == 0
    line = next(ln for ln in preset.read_text().splitlines() if ln.startswith("ResNet-50 v1.5 (ImageNet): "))
    assert line.count("GFLOP per sample forward") == 1  # a preset's description has none: the line gives it


def test_the_report_opens_sentences_about_a_custom_workload_in_capitals(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    assert main(["report", "-o", str(out), "--no-bench", "--params", "1e5", "--flops-per-sample", "1e6"]) == 0
    text = out.read_text()
    assert (
        "\nCustom workload: your own figures, 0.00100 GFLOP per sample forward" in text
        and "\ncustom workload" not in text
    )
    assert "Custom workload is small enough" in text and "for custom workload:" in text  # mid-sentence as named


def test_a_file_that_appears_during_the_run_is_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The existing-file check ran only before the run: notes saved at the path meanwhile were replaced."""
    from gpuselect.app import workflows
    from gpuselect.cli import main

    out = tmp_path / "race.md"
    real = workflows.build_machine_report

    def slow(*args: object, **kw: object) -> object:
        out.write_text("my notes, saved while the report ran")
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(workflows, "build_machine_report", slow)
    assert main(["report", "-o", str(out), "--no-bench"]) == 1
    assert out.read_text() == "my notes, saved while the report ran"


def test_the_memory_chart_reads_a_card_s_memory_as_the_table_under_it() -> None:
    """QA 15d: the PDF's bar read "158.4 of 179 GB" above a table row of 179.06 (and 80 for an
    H100's 79.65)."""
    from gpuselect.report.writers import _memory_figures

    assert _memory_figures({"peak_gb": 158.43, "vram_gb": 179.06, "fits": True}) == "158.4 of 179.06 GB"
    assert _memory_figures({"peak_gb": 81.0, "vram_gb": 79.65, "fits": False}) == "81.0 of 79.65 GB \u2014 too big"
    assert _memory_figures({"peak_gb": 12.2, "vram_gb": 80.0, "fits": True}) == "12.2 of 80 GB"


def test_an_amd_machine_reads_in_amds_words() -> None:
    """QA 15: an AMD machine's report said torch's ROCm build was "build unknown" (detect says
    "built for ROCm 6.4"), left amdsmi out and headed the GFX clock "SM clock"."""
    import dataclasses

    from gpuselect.hardware.types import FrameworkInfo
    from tests.fakes import fake_amdsmi as A

    snap = detect(nvml=F.FakeNVML(init_error=F.INIT_FAILURES["library_not_found"]), amdsmi=A.mi250x_node(), probe=False)
    torch = FrameworkInfo("torch", True, "2.7.0+rocm6.4", built_rocm="6.4", cpu_only_build=False)
    snap = dataclasses.replace(snap, frameworks=[torch])
    machine = build_report(snap, evaluate(snap)).sections[0]
    lines = "\n".join(machine.lines)
    assert "torch 2.7.0+rocm6.4: built for ROCm 6.4." in lines and "build unknown" not in lines, lines
    assert "amdsmi: available." in lines, lines
    assert machine.table is not None and machine.table[0][4] == "GFX clock / max", machine.table[0]


def test_pdf_memory_heading_stays_with_its_bars(tmp_path: Path) -> None:
    """QA 16: llama-8b-lora --count 1,2,4 (Letter) left "Memory per GPU" and its two paragraphs at the foot of
    page 3 and the bars on page 4."""
    pdf = tmp_path / "r.pdf"
    argv = [
        "report",
        "-o",
        str(pdf),
        "--paper",
        "letter",
        "--no-bench",
        "--workload",
        "llama-8b-lora",
        "--count",
        "1,2,4",
    ]
    assert main(argv) == 0
    pages = [p.extract_text() for p in pypdf.PdfReader(str(pdf)).pages]
    heading = [i for i, t in enumerate(pages) if "Memory per GPU" in t]
    legend = [i for i, t in enumerate(pages) if "the card's memory (GB)" in t]
    assert heading and heading == legend[:1], (heading, legend)
