"""What the CLI's text, JSON and CSV faces of ``estimate`` and ``workloads`` say (QA round 14a)."""

from __future__ import annotations

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
