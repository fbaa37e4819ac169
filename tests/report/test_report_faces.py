"""The report's JSON and Markdown faces: raw numbers, the benchmark's steps, how the estimates
table chose its rows, and what only the PDF draws (QA round 14a)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuselect.cli import main

ARGS = ["--workload", "simple-cnn", "--gpus", "nvidia-rtx-4090,nvidia-h100-sxm5-80gb,nvidia-rtx-5060"]


def test_report_json_embeds_the_estimate_as_estimate_json_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", *ARGS, "--format", "json"]) == 0
    est = json.loads(capsys.readouterr().out)
    out = tmp_path / "r.json"
    assert main(["report", "-o", str(out), *ARGS]) == 0
    doc = json.loads(out.read_text())["report"]
    embedded = doc["estimate"]
    assert set(embedded) == {"workload", "assumptions", "rows", "local", "recommendation"}
    for key in embedded:
        assert embedded[key] == est[key], key
    row = embedded["rows"][0]
    assert isinstance(row["total_time_h"], float) and isinstance(row["batch_size"], int)
    # the display table stays, for readers of the earlier form
    assert any(s["title"] == "Estimates" and s["table"] for s in doc["sections"])


def test_a_redacted_report_json_keeps_no_folder_of_a_config(tmp_path: Path) -> None:
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
    out = tmp_path / "r.json"
    assert main(["report", "-o", str(out), "--redact", "--config", str(cfg), "--gpus", "nvidia-rtx-4090"]) == 0
    body = out.read_text()
    assert "secret-project" not in body and "secret-llama" not in body
    assert json.loads(body)["report"]["estimate"]["workload"]["id"] == "config"
