"""tokens/s counts text tokens: a vision transformer's table shows images (samples/s) like any
vision model, and a sentence pair counts both sides as its benchmark does (GNMT)."""

from __future__ import annotations

import json

import pytest

from gpuselect.cli import main
from gpuselect.workloads.presets import PRESETS


@pytest.mark.parametrize(
    ("workload", "tokens"),
    [("vit-b16", None), ("gnmt", 100.0), ("gpt2-124m", 1024.0), ("lstm-lm", 35.0), ("resnet50", None)],
)
def test_tokens_per_sample(workload: str, tokens: float | None) -> None:
    key = {w.public_id: k for k, w in PRESETS.items()}[workload]
    assert PRESETS[key].tokens_per_sample == tokens


@pytest.mark.parametrize(("workload", "column"), [("vit-b16", "samples/s"), ("gnmt", "tokens/s")])
def test_rows_and_table_use_it(workload: str, column: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--workload", workload, "--gpus", "nvidia-h100-sxm5-80gb"]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    tokens = {"vit-b16": None, "gnmt": 100.0}[workload]
    for r in [*doc["rows"], *doc["local"]]:
        if tokens is None:
            assert r["tokens_per_s"] is None
        else:
            assert r["tokens_per_s"] == pytest.approx(r["throughput_samples_per_s"] * tokens)
    assert main(argv) == 0
    text = capsys.readouterr().out
    head = next(ln for ln in text.splitlines() if ln.startswith("option "))
    assert column in head
    row = next(r for r in doc["rows"] if r["count"] == 1)
    line = next(ln for ln in text.splitlines() if ln.lstrip("→ ").startswith("1x H100 SXM5") and "single" in ln)
    shown = row["tokens_per_s"] if tokens else row["throughput_samples_per_s"]
    assert f"{shown:,.0f}" in line
