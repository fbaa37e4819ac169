"""`gpuselect fleet` without a launcher, its usage errors, and `estimate --interconnect`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuselect.cli import main
from gpuselect.fleet import writers
from tests.conftest import REPO_ROOT
from tests.fakes import fake_nvml as F  # at import: the autouse fixture hides pynvml inside a test
from tests.fleet.test_model import _points, _report

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")


def test_one_process_checks_this_machine(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    out = tmp_path / "fleet.md"
    code = main(["fleet", "--format", "json", "--no-probe", "--output", str(out)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["kind"] == "fleet"
    rep = doc["report"]
    assert rep["world_size"] == 1 and len(rep["ranks"]) == 1 and rep["bandwidth"] == []
    assert any("torchrun" in n for n in rep["notes"])
    assert "# gpuselect fleet report" in out.read_text()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["fleet", "--output", "fleet.txt"], "must end in .json, .md or .pdf"),
        (["fleet", "--max-bytes", "3Q"], "--max-bytes must be a size"),
        (["fleet", "--timeout-s", "0"], "--timeout-s must be above 0"),
    ],
)
def test_fleet_usage_errors(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    assert words in capsys.readouterr().err


def test_core_fleet_and_metrics_import_without_torch() -> None:
    mods = [
        "gpuselect.fleet.model",
        "gpuselect.fleet.run",
        "gpuselect.fleet.collectives",
        "gpuselect.fleet.writers",
        "gpuselect.fleet.interconnect",
        "gpuselect.metrics.families",
        "gpuselect.metrics.exporter",
        "gpuselect.commands.fleet",
        "gpuselect.commands.exporter",
    ]
    code = (
        "\n".join(f"import {m}" for m in mods)
        + "\nimport sys\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'PySide6', 'prometheus_client'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_estimate_interconnect_says_what_it_used(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    path = tmp_path / "fleet.json"
    writers.write(_report(_points({"node0": 150.0, "node1": 150.0})), path)
    code = main(
        [
            "estimate",
            "--workload",
            "vgg16",
            "--interconnect",
            str(path),
            "--gpus",
            "nvidia-a100-sxm4-80gb",
            "--format",
            "json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["assumptions"]["interconnect"]["intra_node_gbs"] == pytest.approx(150.0)
    multi = [r for r in doc["rows"] if r["count"] > 1 and r["fits"]]
    assert multi and all(
        r["link_basis"].startswith("measured") and r["link_gbs"] == pytest.approx(150.0) for r in multi
    )
    main(["estimate", "--workload", "vgg16", "--interconnect", str(path), "--gpus", "nvidia-a100-sxm4-80gb"])
    assert "measured all-reduce bus bandwidth from" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert main(["estimate", "--workload", "vgg16", "--interconnect", str(bad)]) == 2
    assert "is not a `gpuselect fleet" in capsys.readouterr().err


def test_redraw_a_saved_report(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    saved = tmp_path / "fleet.json"
    writers.write(_report(_points({"node0": 150.0, "node1": 100.0})), saved)
    pdf = tmp_path / "fleet.pdf"
    assert main(["fleet", "--from", str(saved), "--output", str(pdf)]) == 0
    assert pdf.read_bytes().startswith(b"%PDF")
    out = capsys.readouterr().out
    assert "1 straggler(s)" in out and "node1  intra-node all-reduce busbw" in out  # 100 against a median of 125
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "fleet", "report": {"nope": 1}}')
    assert main(["fleet", "--from", str(bad)]) == 2
    assert "another version or damaged" in capsys.readouterr().err
    # The saved report is the input: redrawing it over itself would lose the measurements.
    before = saved.read_bytes()
    assert main(["fleet", "--from", str(saved), "--output", str(saved)]) == 1
    assert "is also an input" in capsys.readouterr().err and saved.read_bytes() == before
    notes = tmp_path / "notes.md"
    notes.write_text("my notes")
    assert main(["fleet", "--from", str(saved), "--output", str(notes)]) == 1
    assert notes.read_text() == "my notes" and "--force" in capsys.readouterr().err


def test_a_long_name_in_a_saved_report_still_lays_out_in_the_pdf(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A 1,000-character CPU name made a table row taller than a page: LayoutError, exit 70."""
    saved = tmp_path / "fleet.json"
    writers.write(_report(_points({"node0": 150.0, "node1": 100.0})), saved)
    doc = json.loads(saved.read_text())
    doc["report"]["ranks"][0]["cpu_model"] = "Xeon " * 200
    saved.write_text(json.dumps(doc))
    pdf = tmp_path / "fleet.pdf"
    assert main(["fleet", "--from", str(saved), "--output", str(pdf)]) == 0 and pdf.stat().st_size > 1000


def _edited(tmp_path: Path, good: dict, change) -> Path:  # type: ignore[type-arg,no-untyped-def]
    """A copy of the saved report ``good`` with ``change`` applied to its report, as a file."""
    doc = json.loads(json.dumps(good))
    change(doc["report"])
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(doc))
    return p


def test_a_damaged_saved_report_is_one_sentence(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Each of these was an internal error (exit 70), /dev/zero filled memory and a FIFO hung.
    import os

    saved = tmp_path / "fleet.json"
    writers.write(_report(_points({"node0": 150.0, "node1": 100.0})), saved)
    good = json.loads(saved.read_text())

    def edited(change) -> Path:  # type: ignore[no-untyped-def]
        return _edited(tmp_path, good, change)

    cases = [
        lambda r: r["bandwidth"][0].__setitem__("busbw_gbs", "fast"),
        lambda r: r["bandwidth"][0].__setitem__("bytes", "8"),
        lambda r: r["bandwidth"][0].__setitem__("busbw_gbs", -5.0),
        lambda r: r.__setitem__("notes", 5),
        lambda r: r["ranks"].__setitem__(0, 5),
        lambda r: r.__setitem__("complete", "no"),
        lambda r: r["nodes"][0].__setitem__("health_worst", "bad"),
        lambda r: r["notes"].append("\u001b[2J\u001b]0;pwn\u0007"),  # reached the terminal raw
        lambda r: r.__setitem__("world_size", -5),  # was accepted
        lambda r: r["ranks"][0].__setitem__("host", "h" * 3000),  # broke the PDF's layout (exit 70)
    ]
    for change in cases:
        assert main(["fleet", "--from", str(edited(change))]) == 2
        err = capsys.readouterr().err
        assert "error:" in err and "internal error" not in err
    nan = tmp_path / "nan.json"
    nan.write_text(saved.read_text().replace('"busbw_gbs": 150.0', '"busbw_gbs": NaN', 1))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    binary = tmp_path / "bin.json"
    binary.write_bytes(os.urandom(4096))
    v99 = tmp_path / "v99.json"
    v99.write_text(json.dumps({**good, "schema_version": 99}))
    for path in (nan, fifo, binary, v99, Path("/dev/zero")):
        assert main(["fleet", "--from", str(path)]) == 2
        assert "internal error" not in capsys.readouterr().err


def test_an_inconsistent_saved_report_names_what_is_wrong(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Accepted before: more ranks than the world, -3 GPUs, a finding of severity "bogus" (which then
    vanished from the report); an unknown field read "RankInfo.__init__() got an unexpected keyword"."""
    saved = tmp_path / "fleet.json"
    writers.write(_report(_points({"node0": 150.0, "node1": 100.0})), saved)
    good = json.loads(saved.read_text())
    assert good["report"]["ranks"], "the fixture has ranks to edit"

    def edited(change) -> Path:  # type: ignore[no-untyped-def]
        return _edited(tmp_path, good, change)

    rank0 = good["report"]["ranks"][0]
    cases = [
        (lambda r: r.__setitem__("world_size", len(r["ranks"]) - 1 or 1), "ranks but holds ranks"),
        (lambda r: r["ranks"].append(dict(rank0)), "ranks but holds ranks"),
        (lambda r: r["ranks"][0].__setitem__("gpus_on_node", -3), "says -3 GPUs on its node"),
        (
            lambda r: r["ranks"][0].__setitem__("findings", [{"severity": "bogus", "title": "t"}]),
            "severity 'bogus'",
        ),
        (lambda r: r["ranks"][0].__setitem__("colour", "red"), "RankInfo entry: unknown field 'colour'"),
    ]
    for change, words in cases:
        assert main(["fleet", "--from", str(edited(change))]) == 2
        err = capsys.readouterr().err
        assert words in err and "__init__" not in err, err
    # an interrupted run's report (fewer ranks than its world) still redraws
    assert main(["fleet", "--from", str(edited(lambda r: r.__setitem__("world_size", len(r["ranks"]) + 1)))]) == 0


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--max-bytes=1e308"], "must be at most 16G, not '1e308'"),  # was a 309-digit number
        (["--repeats=1.5"], "--repeats must be a whole number"),  # "must be a number"
    ],
)
def test_fleet_numbers_are_refused_in_plain_words(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["fleet", *argv])
    err = capsys.readouterr().err
    assert words in err and len(err) < 300


def test_the_fleet_report_says_what_each_finding_measured_its_threshold_and_what_to_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    # The fleet report kept only each finding's title and remedy: "3 uncorrectable ECC errors"
    # with no threshold, "row remap pending" with nothing measured.
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    fake = F.a100x2_ecc()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    out = tmp_path / "fleet.md"
    assert main(["fleet", "--format", "json", "--no-probe", "--output", str(out)]) == 0
    (rank,) = json.loads(capsys.readouterr().out)["report"]["ranks"]
    ecc = next(f for f in rank["findings"] if f["id"] == "gpu.ecc")
    assert (ecc["value"], ecc["threshold"], ecc["unit"]) == (3, 1, "errors") and ecc["remedy"] and ecc["detail"]
    assert "(measured 3 errors; threshold 1 error); what to do: drain the GPU" in out.read_text()


def test_fail_on_gives_health_s_exit_status(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    """QA 15: a critical node still exited 0; a script had to parse the JSON to notice."""
    saved = tmp_path / "fleet.json"
    writers.write(_report(_points({"node0": 150.0, "node1": 100.0})), saved)
    good = json.loads(saved.read_text())

    def with_worst(*worst: str) -> Path:
        doc = json.loads(json.dumps(good))
        for r, w in zip(doc["report"]["ranks"], worst, strict=False):
            r["health_worst"] = w
        p = tmp_path / "edited.json"
        p.write_text(json.dumps(doc))
        return p

    n = len(good["report"]["ranks"])
    assert n >= 1
    warn = with_worst("warning", *["ok"] * (n - 1))
    assert main(["fleet", "--from", str(warn)]) == 0  # the default: the report was written
    assert main(["fleet", "--from", str(warn), "--fail-on", "warning"]) == 1
    assert main(["fleet", "--from", str(warn), "--fail-on", "critical"]) == 0
    crit = with_worst("critical", *["warning"] * (n - 1))
    assert main(["fleet", "--from", str(crit), "--fail-on", "critical"]) == 3
    assert main(["fleet", "--from", str(crit), "--fail-on", "warning"]) == 3
    ok = with_worst(*["ok"] * n)
    assert main(["fleet", "--from", str(ok), "--fail-on", "warning"]) == 0
    # a redrawn failed run (INCOMPLETE): its missing ranks' health is unknown, as the run's exit 4 said
    doc = json.loads(ok.read_text())
    doc["report"]["complete"] = False
    ok.write_text(json.dumps(doc))
    assert main(["fleet", "--from", str(ok), "--fail-on", "critical"]) == 4
    assert main(["fleet", "--from", str(ok)]) == 0
    capsys.readouterr()


def test_fleet_help_gives_the_backend_default(capsys: pytest.CaptureFixture[str]) -> None:
    # `COMMAND --help` lists every option's default (README); --backend's "auto" was not called one.
    with pytest.raises(SystemExit):
        main(["fleet", "--help"])
    text = " ".join(capsys.readouterr().out.split()).split("options:", 1)[1]
    assert "auto (default)" in text.split("--backend {auto,nccl,gloo}", 1)[1][:80]
