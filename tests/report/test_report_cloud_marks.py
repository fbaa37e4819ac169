"""The report's cost table marks a rental priced per GPU of a larger offer (‡) and a count the price
data rents only unlinked ("no offer") as the CLI's table does: "$28" for 1x B200 read as a
one-GPU rental of an 8-GPU node's rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuselect.cli import main
from gpuselect.estimate.recommend import NO_OFFER_NOTE, PARTIAL_OFFER_NOTE

ARGS = ["--workload", "resnet50", "--epochs", "1", "--gpus", "nvidia-b200,nvidia-rtx-a6000", "--count", "1,2"]


def test_report_cloud_column_marks_what_the_cli_marks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["report", "-o", str(out), "--no-bench", *ARGS]) == 0
    doc = json.loads(out.read_text())["report"]
    rows = {f"{r['count']}x {r['name']}": r for r in doc["estimate"]["rows"]}
    est = next(s for s in doc["sections"] if s["title"] == "Estimates")
    head, *table = est["table"]
    cloud = head.index("Cloud ($)")
    cells = {}
    for line in table:
        name = next((k for k in rows if line[0] == k or line[0].startswith(k + " (")), None)
        if name is not None:
            cells[name] = line[cloud]
    partial = [k for k, r in rows.items() if r["cloud_offer_gpus"] and r["cloud_cost_usd"] is not None]
    unlinked = [k for k, r in rows.items() if r["cloud_unlinked"]]
    assert "1x B200" in partial and "2x RTX A6000" in unlinked  # the data this test rests on
    for name, cell in cells.items():
        if name in partial:
            assert cell.endswith(" ‡"), (name, cell)
        elif name in unlinked:
            assert cell == "no offer", (name, cell)
        else:
            assert "‡" not in cell and cell != "no offer", (name, cell)
    assert "1x B200" in cells and "2x RTX A6000" in cells
    assert any(ln.startswith(f"‡: {PARTIAL_OFFER_NOTE}") for ln in est["lines"])
    assert any(ln.startswith(f"no offer: {NO_OFFER_NOTE}") for ln in est["lines"])
    # the CLI's table marks the same rows, with the same words
    capsys.readouterr()
    assert main(["estimate", *ARGS]) == 0
    text = capsys.readouterr().out
    assert f"‡ {PARTIAL_OFFER_NOTE}" in text and f"no offer: {NO_OFFER_NOTE}" in text
    b200 = next(ln for ln in text.splitlines() if ln.startswith("1x B200 "))
    assert "‡" in b200


def test_report_marks_an_fp8_row_that_bf16_trains_faster(tmp_path: Path) -> None:
    """Review 15: the CLI marked such rows fp8† with a footnote; the report said nothing."""
    from gpuselect.estimate.recommend import SLOWER_FP8_NOTE

    out = tmp_path / "r.json"
    args = [
        "--workload",
        "vit-b16",
        "--precision",
        "fp8",
        "--gpus",
        "nvidia-l40s,nvidia-h100-sxm5-80gb",
        "--count",
        "1",
    ]
    assert main(["report", "-o", str(out), "--no-bench", *args]) == 0
    doc = json.loads(out.read_text())["report"]
    slower = {f"{r['count']}x {r['name']}" for r in doc["estimate"]["rows"] if r["faster_precision"]}
    assert slower, "the data this test rests on: some fp8 row trains slower than bf16"
    est = next(s for s in doc["sections"] if s["title"] == "Estimates")
    _, *table = est["table"]
    for line in table:
        name = line[0].split(" (")[0].removesuffix(" †")
        assert line[0].endswith("†") == (name in slower), line[0]
    assert any(SLOWER_FP8_NOTE in x for x in est["lines"])


def test_report_marks_a_16bit_row_that_fp32_trains_faster(tmp_path: Path) -> None:
    """QA 15: the CLI marks bf16† where fp32 trains a host-bound step faster; the report says the same."""
    from gpuselect.estimate.recommend import SLOWER_16BIT_NOTE

    out = tmp_path / "r.json"
    args = ["--workload", "simple-cnn", "--precision", "bf16", "--batch-size", "16"]
    args += ["--gpus", "nvidia-rtx-4060,nvidia-gtx-1080", "--max-gpus", "1"]
    assert main(["report", "-o", str(out), "--no-bench", *args]) == 0
    doc = json.loads(out.read_text())["report"]
    est = next(s for s in doc["sections"] if s["title"] == "Estimates")
    _, *table = est["table"]
    marks = {line[0].split(" (")[0].removesuffix(" †"): line[0].endswith("†") for line in table if "x " in line[0]}
    assert marks["1x GeForce RTX 4060"] and not marks["1x GeForce GTX 1080"], marks
    assert any(SLOWER_16BIT_NOTE in x for x in est["lines"])


def test_cloud_cost_basis_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA 15: a 20 s simple-CNN job on a rented T4 reads "$0.01"; nothing said that this is the
    seconds' share of the hourly rate, not what a provider with a minimum billing period charges."""
    from gpuselect.estimate.recommend import CLOUD_COST_NOTE

    args = ["--workload", "simple-cnn", "--gpus", "nvidia-t4,nvidia-rtx-4060", "--max-gpus", "1"]
    assert main(["estimate", *args]) == 0
    text = capsys.readouterr().out
    assert f"{CLOUD_COST_NOTE[0].upper()}{CLOUD_COST_NOTE[1:]}." in text
    # a table without a rental price says nothing of rentals
    assert main(["estimate", "--workload", "simple-cnn", "--gpus", "nvidia-rtx-4060", "--max-gpus", "1"]) == 0
    assert "pro rata" not in capsys.readouterr().out
    out = tmp_path / "r.json"
    assert main(["report", "-o", str(out), "--no-bench", *args]) == 0
    doc = json.loads(out.read_text())["report"]
    lines = [ln for s in doc["sections"] for ln in s["lines"]]
    assert any(CLOUD_COST_NOTE in ln for ln in lines)


def test_the_selection_note_names_only_the_groups_it_lists(tmp_path: Path) -> None:
    """QA 15: --max-gpus 1 read "and the 0 fastest options of several GPUs"."""
    out = tmp_path / "r.md"
    args = ["--workload", "simple-cnn", "--gpus", "nvidia-rtx-4060,nvidia-t4", "--max-gpus", "1"]
    assert main(["report", "-o", str(out), "--no-bench", *args]) == 0
    text = " ".join(out.read_text().split())
    assert "fastest single GPUs" in text and "0 fastest" not in text and "of several GPUs" not in text


def test_report_table_says_the_precision_each_row_trains_in(tmp_path: Path) -> None:
    """QA 16: with --precision fp8 the CLI's A100 row read bf16 (no fp8 on Ampere); the report said
    only "Precision fp8", so its A100 row read as an fp8 estimate. Its table now has the CLI's column,
    and says what a purchase's cost counts (the card's price plus this run's electricity)."""
    from gpuselect.estimate.recommend import BUY_COST_NOTE

    out = tmp_path / "r.json"
    gpus = "nvidia-a100-sxm4-80gb,nvidia-h100-sxm5-80gb"
    args = ["--workload", "llama-8b-lora", "--precision", "fp8", "--gpus", gpus, "--count", "1"]
    assert main(["report", "-o", str(out), "--no-bench", *args]) == 0
    doc = json.loads(out.read_text())["report"]
    used = {f"{r['count']}x {r['name']}": r["precision_used"] for r in doc["estimate"]["rows"] if r["fits"]}
    assert set(used.values()) == {"bf16", "fp8"}, used  # the data this test rests on
    est = next(s for s in doc["sections"] if s["title"] == "Estimates")
    head, *table = est["table"]
    prec = head.index("Precision")
    seen = {
        line[0].split(" (")[0].removesuffix(" †"): line[prec] for line in table if line[0] != "" and "x " in line[0]
    }
    assert {k: v for k, v in seen.items() if k in used} == used, seen
    workload = next(s for s in doc["sections"] if s["title"] == "Workload and assumptions")
    assert any(BUY_COST_NOTE in x for x in workload["lines"])
