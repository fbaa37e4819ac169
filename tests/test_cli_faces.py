"""What the CLI's text, JSON and CSV faces of ``estimate`` and ``workloads`` say (QA round 14a)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuselect.cli import main


def _out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "scope"),
    [
        (
            ["--params", "1e6", "--flops-per-sample", "1e9"],
            "100,000 samples × 10 epochs (the custom default; set --dataset-size/--epochs)",
        ),
        (["--workload", "resnet50"], "1,281,167 samples × 90 epochs (the workload's own; set --dataset-size/--epochs)"),
        (["--workload", "resnet50", "--epochs", "1"], "1,281,167 samples × 1 epoch (samples: the workload's own"),
        (
            ["--workload", "simple-cnn", "--epochs", "2", "--dataset-size", "1000"],
            "1,000 samples × 2 epochs (as given)",
        ),
    ],
)
def test_estimate_header_says_what_data_its_times_cover(
    argv: list[str], scope: str, capsys: pytest.CaptureFixture[str]
) -> None:
    header = _out(["estimate", *argv, "--top", "1"], capsys).splitlines()[0]
    assert scope in header


def test_dataset_and_epoch_options_give_their_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["estimate", "--help"])
    text = " ".join(capsys.readouterr().out.split()).split("options:", 1)[1]  # past the usage line
    for option in ("--dataset-size N", "--epochs N"):
        after = text.split(option, 1)[1][:200]
        assert "default: the workload's own" in after, option


def test_workloads_lists_samples_and_epochs(capsys: pytest.CaptureFixture[str]) -> None:
    from gpuselect.workloads.presets import PRESETS

    lines = _out(["workloads"], capsys).splitlines()
    assert "samples x epochs" in lines[0]
    w = PRESETS["resnet50"]
    row = next(ln for ln in lines if ln.startswith("resnet50 "))
    assert f"{w.default_dataset_size:,} x {w.default_epochs:,}" in row


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["report", "-o", "{out}", "--no-bench", "--bench", "{bench}"],
            "--bench: not allowed with argument --no-bench",
        ),
        (
            ["report", "-o", "{out}", "--bench", "{bench}", "--no-bench"],
            "--no-bench: not allowed with argument --bench",
        ),
        (
            ["report", "-o", "{out}", "--bench-quick", "--no-bench"],
            "--no-bench: not allowed with argument --bench-quick",
        ),
        (["estimate", "--workload", "simple-cnn", "--bench", "{bench}", "--bench-quick"], "not allowed with"),
        (["fleet", "--from", "{bench}", "--bench-quick"], "--from redraws a saved report and measures nothing"),
        (["catalog", "--validate", "{bench}", "nvidia-b200"], "--validate checks one file and lists nothing"),
    ],
)
def test_contradicting_options_are_refused_in_one_sentence(
    argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, bench = tmp_path / "r.md", tmp_path / "bench.json"
    bench.write_text("{}")  # never read: the options are refused first
    argv = [a.format(out=out, bench=bench) for a in argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing written
