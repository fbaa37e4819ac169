"""Issue #15, inputs and files: every user file is read bounded and checked, and a report never
replaces something that is not a regular file. One test per failure the issue lists."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpuselect import notices
from gpuselect.cli import main
from gpuselect.errors import DataError, OutputError
from gpuselect.fsutil import atomic_write_text
from gpuselect.safe_io import read_json, read_text
from gpuselect.settings import Settings, load
from tests.conftest import REPO_ROOT
from tests.hf_configs import GPT2_SMALL

DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_TOML = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"


@pytest.fixture(autouse=True)
def _fresh_notices() -> None:
    notices.reset()
    yield
    notices.reset()


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _utf16(text: str) -> bytes:
    return b"\xff\xfe" + text.encode("utf-16-le")


def _no_hang(fn, *args, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    """Run fn in a thread; a read that blocks (a FIFO) fails the test instead of hanging it."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "the read blocked"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


# --- the bounded reader ---------------------------------------------------------------------


def test_reader_refuses_devices_fifos_folders_and_large_files(tmp_path: Path) -> None:
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(DataError, match="not a regular file"):
        read_json(zero, what="settings file")
    with pytest.raises(DataError, match="not a regular file"):
        _no_hang(read_text, _fifo(tmp_path / "pipe"))
    with pytest.raises(DataError, match="is a folder"):
        read_text(tmp_path)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(DataError, match="limit"):
        read_text(big, max_bytes=1024)
    with pytest.raises(DataError, match="does not exist"):
        read_text(tmp_path / "missing.json")


def test_reader_accepts_utf16_and_utf8_bom_and_refuses_other_bytes(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_bytes(_utf16('{"a": 1}'))
    assert read_json(f) == {"a": 1}
    f.write_bytes(b"\xfe\xff" + '{"a": 2}'.encode("utf-16-be"))
    assert read_json(f) == {"a": 2}
    f.write_bytes(b"\xef\xbb\xbf" + b'{"a": 3}')
    assert read_json(f) == {"a": 3}
    f.write_bytes('{"a": 1}'.encode("utf-16-le"))  # no BOM: not guessed
    with pytest.raises(DataError, match="UTF-8"):
        read_json(f)


def test_reader_refuses_deep_nesting_and_nan(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text(DEEP_JSON)
    with pytest.raises(DataError, match="nests"):
        read_json(f)
    f.write_text("[" * 70 + "]" * 70)  # parses, but deeper than MAX_DEPTH
    with pytest.raises(DataError, match="deeper than 64"):
        read_json(f)
    f.write_text('{"fp32": NaN}')
    with pytest.raises(DataError, match="NaN"):
        read_json(f)


def test_an_empty_or_cut_off_json_file_is_said_plainly(tmp_path: Path) -> None:
    # `gpuselect bench --format json > b.json` interrupted leaves an empty file: it read "is not
    # valid JSON (Expecting value at line 1)"; a cut-off one "(Unterminated string starting at at line 2)".
    f = tmp_path / "b.json"
    f.write_text("")
    with pytest.raises(DataError, match=r"b\.json is empty \(a run interrupted"):
        read_json(f, what="benchmark result")
    with pytest.raises(DataError, match=r"b\.json is empty$"):  # a config nobody's run wrote: no such hint
        read_json(f, what="model config")
    f.write_text('{\n "kind": "ben')
    with pytest.raises(DataError, match=r"not valid JSON \(Unterminated string starting at line 2, column 10\)$"):
        read_json(f, what="benchmark result")


@pytest.mark.parametrize(
    ("content", "said", "unsaid"),
    [
        # json's own message ends in "at"; the sentence said "starting at at line 1"
        ('{"a": "x', "Unterminated string starting at line 1, column 7", "at at"),
        ('{"a": 1,}', "at line 1, column 9", None),
        # Python's digit limit: its advice (sys.set_int_max_str_digits) is not the user's to follow
        ('{"a": ' + "9" * 5000 + "}", "a number longer than 4,300 digits", "sys."),
    ],
)
def test_a_broken_json_file_is_one_plain_sentence(tmp_path: Path, content: str, said: str, unsaid: str | None) -> None:
    f = tmp_path / "x.json"
    f.write_text(content)
    with pytest.raises(DataError) as e:
        read_json(f)
    assert said in str(e.value) and (unsaid is None or unsaid not in str(e.value)), str(e.value)


def test_a_config_that_gives_one_setting_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """json keeps the last of two keys silently: a hand-written config with hidden_size 4096 and
    later 8192 was estimated as an 18.7 B model without a word."""
    f = tmp_path / "config.json"
    keys = '"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100'
    f.write_text('{"hidden_size": 64, ' + keys + ', "hidden_size": 128}')
    assert main(["estimate", "--config", str(f)]) == 2
    err = capsys.readouterr().err
    assert "gives 'hidden_size' twice, with different values" in err and len(err.strip().splitlines()) == 1
    f.write_text('{"hidden_size": 64, ' + keys + ', "hidden_size": 64}')  # the same value twice is harmless
    assert main(["estimate", "--config", str(f), "--format", "json"]) == 0
    # other files keep json's reading (a catalog overlay or settings file is not refused for it)
    f.write_text('{"a": 1, "a": 2}')
    assert read_json(f) == {"a": 2}


# --- settings.json --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["deep", "dev-zero", "fifo", "huge", "utf16-garbage"])
def test_broken_settings_file_means_defaults_and_one_warning(tmp_path: Path, kind: str) -> None:
    p = tmp_path / "settings.json"
    if kind == "deep":
        p.write_text(DEEP_JSON)
    elif kind == "dev-zero":
        p.symlink_to("/dev/zero")
    elif kind == "fifo":
        _fifo(p)
    elif kind == "huge":
        p.write_bytes(b" " * (300 * 1024) + b"{}")
    else:
        p.write_bytes(b"\xff\xfe\x00")
    settings, problems = _no_hang(load, p)
    assert settings == Settings() and len(problems) == 1 and str(p) in problems[0]
    load(p)  # a second load: the warning is not repeated
    assert notices.drain() == problems


def test_settings_in_utf16_are_read(tmp_path: Path) -> None:
    p = tmp_path / "settings.json"
    p.write_bytes(_utf16(json.dumps({"currency_symbol": "€"})))
    assert load(p) == (Settings(currency_symbol="€"), [])


def test_cli_starts_with_a_deeply_nested_settings_and_overlay(tmp_path: Path) -> None:
    cfg = Path(os.environ["GPUSELECT_CONFIG_DIR"])
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "settings.json").write_text(DEEP_JSON)
    (cfg / "catalog_overlay.toml").write_text(DEEP_TOML)
    out = _gpuselect("estimate", "--workload", "gpt2-124m", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["kind"] == "estimate"
    warnings = [ln for ln in out.stderr.splitlines() if ln.startswith("gpuselect: warning:")]
    # Each file is named once; the settings file only where the command reads settings.
    assert sum("catalog_overlay.toml nests too deeply" in w for w in warnings) == 1, warnings
    assert sum("settings.json" in w for w in warnings) <= 1 and len(warnings) == len(set(warnings)) <= 2, warnings
    assert sum("settings.json" in ln for ln in out.stderr.splitlines()) == 1, out.stderr  # once, not also as "note:"


# --- the catalog overlay ------------------------------------------------------------------


BROKEN_OVERLAYS = {
    "not-toml": b"[[gpu]\nid = ",
    "deep": DEEP_TOML.encode(),
    "bad-value": b'[[gpu]]\nid = "nvidia-rtx-3090"\nstreet_price_usd = -5\n',
    "unknown-id": b'[[gpu]]\nid = "no-such-card"\ncloud_usd_per_hour = 1.0\n',
    "not-utf8": b"\xff\xfe\x00",
}


@pytest.mark.parametrize("kind", [*BROKEN_OVERLAYS, "dev-zero", "fifo"])
def test_broken_overlay_is_warned_about_once_by_estimate_and_report(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuselect.catalog import _cached_default

    overlay = Path(os.environ["GPUSELECT_CONFIG_DIR"]) / "catalog_overlay.toml"
    overlay.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dev-zero":
        overlay.symlink_to("/dev/zero")
    elif kind == "fifo":
        _fifo(overlay)
    else:
        overlay.write_bytes(BROKEN_OVERLAYS[kind])
    _cached_default.cache_clear()
    try:
        assert _no_hang(main, ["estimate", "--workload", "gpt2-124m", "--format", "json"]) == 0
        assert main(["report", "-o", str(tmp_path / "r.md"), "--workload", "gpt2-124m"]) == 0
    finally:
        _cached_default.cache_clear()
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if ln.startswith("gpuselect: warning:")]
    assert len([w for w in warnings if "catalog_overlay.toml" in w]) == 1, err


def test_valid_utf16_overlay_applies(tmp_path: Path) -> None:
    from gpuselect.catalog import load_catalog

    overlay = tmp_path / "o.toml"
    overlay.write_bytes(_utf16('[[gpu]]\nid = "nvidia-rtx-3090"\nstreet_price_usd = 777\n'))
    cat = load_catalog(overlay=overlay)
    assert cat.get("nvidia-rtx-3090").street_price_usd == 777 and cat.problems == []  # type: ignore[union-attr]


# --- --bench and --config -------------------------------------------------------------------


def _bench_doc(fp32: object) -> str:
    device = '{"device": "cpu", "name": "x", "kind": "cpu", "matmul_tflops": {"fp32": ' + str(fp32) + "}}"
    return '{"schema_version": 1, "kind": "bench", "report": {"quick": true}, "devices": [' + device + "]}"


# 1e-300: taken, and this CPU's time printed with 300 digits of years
@pytest.mark.parametrize("fp32", ["-1", "NaN", "0", "1e400", '"fast"', "1e-300"])
def test_bench_file_figures_are_checked(tmp_path: Path, fp32: str, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text(_bench_doc(fp32))
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(bench)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuselect: error:") and str(bench) in err and len(err.strip().splitlines()) == 1
    assert ("fp32" in err) or ("NaN" in err), err


def test_bench_file_in_utf16_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench.json"
    bench.write_bytes(_utf16(_bench_doc("0.5")))
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(bench), "--format", "json"]) == 0
    local = json.loads(capsys.readouterr().out)["local"]
    assert local[0]["device"] == "cpu" and local[0]["total_time_h"] > 0


_STEP = {"model": "simple_cnn", "batch_size": 16, "samples_per_s": 160.0, "step_ms": 100.0}
_TIMING = {"value": 1.0, "low": 0.9, "high": 1.1, "repeats": 3}


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        # a step or a timing without a key the bench always writes was "TrainStep.__init__() missing
        # 1 required positional argument", without the file's name
        ({"train_steps": [_STEP]}, "includes_host_to_device_copy"),
        ({"matmul_detail": {"fp32": _TIMING}}, "size"),
        # the wrong type: an internal error ("'list' object has no attribute 'items'") in `report`,
        # or a step printed as "training step {'a': 1}"
        ({"skipped": ["fp8"]}, "skipped"),
        ({"train_steps": [{**_STEP, "model": {"a": 1}, "includes_host_to_device_copy": False}]}, "model"),
        # an escape sequence in a reason the report prints (device names were already refused)
        ({"skipped": {"fp8": "\u001b[2Jgone"}}, "control character"),
        # a step rate all but zero passed (its time check's slack grew with 1/rate) and printed a
        # 400-digit CPU time (review 16)
        (
            {
                "train_steps": [
                    {**_STEP, "samples_per_s": 1e-300, "step_ms": 1.0, "includes_host_to_device_copy": False}
                ]
            },
            "samples_per_s",
        ),
    ],
)
@pytest.mark.parametrize("command", ["estimate", "report"])
def test_bench_file_of_the_wrong_form_is_one_sentence_naming_it(
    tmp_path: Path, extra: dict[str, object], named: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "bench.json"
    doc = json.loads(_bench_doc("0.5"))
    doc["devices"][0].update(extra)
    bench.write_text(json.dumps(doc))
    out = ["-o", str(tmp_path / "r.md")] if command == "report" else []
    assert main([command, "--workload", "simple-cnn", "--bench", str(bench), *out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuselect: error:") and len(err.strip().splitlines()) == 1, err
    assert str(bench) in err and named in err and "__init__" not in err, err
    assert not (tmp_path / "r.md").exists()


@pytest.mark.parametrize("option", ["--bench", "--config"])
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "deep"])
def test_bench_and_config_refuse_devices_fifos_and_deep_files(
    tmp_path: Path, option: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "input.json"
    if kind == "dev-zero":
        f.symlink_to("/dev/zero")
    elif kind == "fifo":
        _fifo(f)
    else:
        f.write_text(DEEP_JSON)
    args = (
        ["estimate", "--workload", "simple-cnn", "--bench", str(f)]
        if option == "--bench"
        else ["estimate", "--config", str(f)]
    )
    assert _no_hang(main, args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuselect: error:") and len(err.strip().splitlines()) == 1


def test_config_in_utf16_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_bytes(_utf16(json.dumps(GPT2_SMALL)))
    assert main(["estimate", "--config", str(cfg), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["params"] > 1e8


# --- report targets -------------------------------------------------------------------------


def test_report_to_a_regular_file_and_through_a_link_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert main(["report", "-o", str(link)]) == 1  # not a report of ours: kept without --force
    assert real.read_text() == "old"
    assert main(["report", "-o", str(link), "--force"]) == 0
    assert link.is_symlink() and real.read_text().startswith("# ")
    assert main(["report", "-o", str(link)]) == 0  # our own report: replaced


def test_a_report_never_replaces_an_input_a_read_only_file_or_a_foreign_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `report --config self.json -o self.json` replaced the model's config with the report; a
    # text file became a PDF; a read-only file was replaced; a typo'd folder was created.
    cfg = tmp_path / "self.json"
    text = json.dumps({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 2, "vocab_size": 100})
    cfg.write_text(text)
    for force in ([], ["--force"]):
        assert main(["report", "--config", str(cfg), "-o", str(cfg), *force]) == 1
        assert "is also an input of this command" in capsys.readouterr().err
        assert cfg.read_text() == text
    precious = tmp_path / "precious.md"
    precious.write_text("precious data")
    assert main(["report", "-o", str(precious)]) == 1
    assert "was not written by gpuselect" in capsys.readouterr().err and precious.read_text() == "precious data"
    # a file that mentions gpuselect is not one of its reports (it was replaced by its mention alone)
    for name, text in (
        ("thesis.md", "# My notes\n\nI used gpuselect to pick a GPU.\n"),
        ("d.json", '{"tool": "gpuselect"}'),
    ):
        mine = tmp_path / name
        mine.write_text(text)
        assert main(["report", "-o", str(mine)]) == 1 and mine.read_text() == text
        capsys.readouterr()
    ours = tmp_path / "r.pdf"
    assert main(["report", "-o", str(ours)]) == 0
    ours.chmod(0o444)
    before = ours.read_bytes()
    # root may write a 0444 file (os.access says yes), but its owner marked it read-only: kept
    assert main(["report", "-o", str(ours)]) == 1
    assert "is read-only" in capsys.readouterr().err and ours.read_bytes() == before


def test_a_report_named_for_another_format_is_asked_about(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.txt"
    assert main(["report", "-o", str(out)]) == 2
    assert "name it .pdf, .json or .md, or give --format" in capsys.readouterr().err and not out.exists()
    assert main(["report", "-o", str(out), "--format", "md"]) == 0 and out.read_text().startswith("# ")


def test_a_report_into_a_missing_folder_or_to_an_empty_name_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "-o", str(tmp_path / "typo" / "deeper" / "r.pdf")]) == 1
    assert "does not exist" in capsys.readouterr().err and not (tmp_path / "typo").exists()
    assert main(["report", "-o", ""]) == 1
    assert "output file name is empty" in capsys.readouterr().err


def test_an_output_named_as_a_folder_or_under_a_file_is_refused_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o out/` wrote a file named "out"; `-o notes.txt/r.md` said the folder notes.txt does not exist."""
    assert main(["report", "--no-bench", "-o", f"{tmp_path / 'out'}/"]) == 1
    assert "ends in /, a folder's name" in capsys.readouterr().err and not (tmp_path / "out").exists()
    with pytest.raises(OutputError, match="ends in /"):
        atomic_write_text(f"{tmp_path / 'out'}/", "x")
    (tmp_path / "notes.txt").write_text("mine\n")
    assert main(["report", "--no-bench", "-o", str(tmp_path / "notes.txt" / "r.md")]) == 1
    assert "notes.txt is a file, not a folder" in capsys.readouterr().err


def test_ctrl_c_during_a_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted in the write or its fsync, the temporary file stayed beside the old report."""
    out = tmp_path / "r.md"
    out.write_text("old\n")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(out, "new\n")
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"] and out.read_text() == "old\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["estimate", "--workload", "resnet50", "--bench", "-"],
        ["estimate", "--config", "-"],
        ["estimate", "--workload", "resnet50", "--interconnect", "-"],
        ["catalog", "--validate", "-"],
    ],
)
def test_a_dash_as_an_input_says_stdin_is_not_read(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--bench -` said "the benchmark result - does not exist", as if gpuselect had a bug."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert "would be standard input, which gpuselect does not read" in capsys.readouterr().err


def test_report_to_a_dash_prints_markdown(tmp_path: Path) -> None:
    # `-o -` wrote a file named "-".
    out = _gpuselect("report", "-o", "-", "--no-bench", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("# gpuselect hardware report") and not (tmp_path / "-").exists()
    assert "wrote the report (md) to standard output" in out.stderr  # not "wrote /dev/stdout (md)"


def test_report_to_dev_stdout_prints_it(tmp_path: Path) -> None:
    # A link of our own like /dev/stdout (-> /proc/self/fd/1): a regression replaces this one,
    # not the system's.
    stdout_link = tmp_path / "stdout"
    stdout_link.symlink_to("/proc/self/fd/1")
    out = subprocess.run(
        [sys.executable, "-m", "gpuselect", "report", "-o", str(stdout_link), "--format", "md"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("# ") and "## " in out.stdout
    assert stdout_link.is_symlink()  # still the link to fd 1, not a regular file


def test_report_to_a_link_to_dev_null_keeps_the_device(tmp_path: Path) -> None:
    link = tmp_path / "null.md"
    link.symlink_to("/dev/null")
    assert main(["report", "-o", str(link)]) == 0
    assert link.is_symlink() and stat.S_ISCHR(os.stat(link).st_mode)


def test_report_to_a_fifo_writes_into_it(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "pipe.md")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["report", "-o", str(fifo)]) == 0
    reader.join(20)
    assert not reader.is_alive() and got[0].startswith(b"# ")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_report_to_a_folder_is_refused_in_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "-o", str(tmp_path), "--format", "md"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"gpuselect: error: {tmp_path} is a folder; give a file name to write to"
    with pytest.raises(OutputError, match="is a folder"):
        atomic_write_text(tmp_path, "x")


def test_notices_are_kept_for_a_face_or_handed_to_its_handler() -> None:
    notices.warn("first")
    notices.warn("first")  # once
    got: list[str] = []
    notices.set_handler(got.append)  # the CLI's handler gets what was waiting, then new ones
    notices.warn("second")
    assert got == ["first", "second"] and notices.drain() == []
    notices.set_handler(None)
    notices.warn("third")
    assert notices.drain() == ["third"] and notices.drain() == []


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_saving_settings_over_a_device_or_fifo_keeps_it_aside_and_writes_a_file(tmp_path: Path, kind: str) -> None:
    from gpuselect.settings import save

    p = tmp_path / "settings.json"
    if kind == "dev-zero":
        p.symlink_to("/dev/zero")
    else:
        _fifo(p)
    _no_hang(save, Settings(currency_symbol="£"), p)
    assert p.is_file() and not p.is_symlink() and load(p)[0].currency_symbol == "£"
    assert len(list(tmp_path.glob("settings.json.corrupt-*"))) == 1


def test_a_report_replaces_its_own_earlier_multi_page_pdf(tmp_path: Path) -> None:
    # The PDF's creator sits mid-file in a report of a few pages: the first check read only its
    # ends and refused to replace docs/sample-report.pdf with a new one.
    out = tmp_path / "r.pdf"
    argv = ["report", "-o", str(out), "--workload", "llama-8b-qlora", "--no-bench"]
    assert main(argv) == 0 and out.stat().st_size > 64 * 1024
    assert main(argv) == 0


def _gpuselect(*args: str, cwd: Path = REPO_ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: its own process, this source tree, two minutes at most."""
    return subprocess.run(
        [sys.executable, "-m", "gpuselect", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env},
    )


def test_a_stdout_that_cannot_encode_gets_escapes_not_an_internal_error() -> None:
    """PYTHONIOENCODING=ascii (or LC_ALL=C) made every "°" and "✗" an internal error (exit 70)."""
    done = _gpuselect("workloads", "--format", "json", PYTHONIOENCODING="ascii")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == "workloads"
    text = _gpuselect("catalog", "nvidia-h100-sxm5-80gb", PYTHONIOENCODING="ascii")
    assert text.returncode == 0 and "internal error" not in text.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="Linux's /dev/full")
def test_a_full_output_is_one_sentence_not_an_internal_error() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "gpuselect", "catalog"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            timeout=120,
            check=False,
        )
    assert done.returncode == 1 and "cannot write the output: No space left on device" in done.stderr
    assert "internal error" not in done.stderr


@pytest.mark.skipif(os.name != "posix", reason="a closed descriptor")
def test_a_closed_stdout_is_one_sentence() -> None:
    """`gpuselect catalog >&-`: Python has no sys.stdout then, and the flush was an internal error."""
    done = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m gpuselect catalog >&-'],
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
    assert done.returncode == 1 and "cannot write the output" in done.stderr and "internal error" not in done.stderr


@pytest.mark.skipif(os.name != "posix", reason="a pipe whose reader is gone")
def test_a_stderr_nobody_reads_does_not_stop_the_work(tmp_path: Path) -> None:
    """`... 2>&1 | head -1`: the note after the first line hit the closed pipe and ended the command,
    the file unwritten, with exit status 0 (a benchmark's progress line ended `bench -o` alike)."""
    out = tmp_path / "r.md"
    argv = ["report", "-o", str(out), "--no-bench", "--workload", "resnet50", "--count", "3"]  # a note first
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpuselect", *argv],
            stdout=subprocess.DEVNULL,
            stderr=write_end,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0 and out.read_text(encoding="utf-8").startswith("# gpuselect hardware report")


@pytest.mark.skipif(os.name != "posix", reason="a pipe whose reader is gone")
def test_a_report_on_stdout_into_a_closed_pipe_ends_as_any_output_does() -> None:
    """`report -o - --format json | head -c 10` said "cannot write /dev/stdout: Broken pipe" and
    exited 1, where every other command's output into `head` ends quietly with 0."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpuselect", "report", "-o", "-", "--format", "json", "--no-bench"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0 and "error" not in done.stderr, done.stderr


@pytest.mark.skipif(os.name != "posix", reason="a closed descriptor")
def test_a_closed_stderr_keeps_notes_out_of_the_json() -> None:
    """`2>&-`: Python has no sys.stderr, and print(file=None) wrote the notes into stdout's JSON."""
    done = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m gpuselect estimate --workload resnet50 --count 3 --format json 2>&-'],
        stdout=subprocess.PIPE,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["kind"] == "estimate"


def test_bench_file_with_a_vanishing_bandwidth_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench.json"
    doc = json.loads(_bench_doc("0.5"))
    doc["devices"][0]["memory_bandwidth_gbs"] = 1e-300
    bench.write_text(json.dumps(doc))
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(bench)]) == 2
    err = capsys.readouterr().err
    assert "memory_bandwidth_gbs" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("model_type", ["x" * 100_000, "t5\u001b[2J"])
def test_config_model_type_that_is_no_name_is_one_sentence(
    tmp_path: Path, model_type: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # An unknown model type is echoed in the description: 100,000 characters of it made a
    # 100,000-character line (and JSON field, and report paragraph).
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**GPT2_SMALL, "model_type": model_type}))
    assert main(["estimate", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuselect: error:") and "model_type" in err and len(err) < 300, err


def test_a_time_beyond_any_estimate_reads_in_words_not_digits() -> None:
    from gpuselect.estimate.recommend import fmt_hours, fmt_hours_range

    assert fmt_hours(1e300) == "over a million years" and fmt_hours(24 * 365.25 * 5e5).endswith("500,000 years")
    assert fmt_hours_range(1e299, 1e300) == "over a million years"
    assert len(fmt_hours_range(24 * 365.25 * 1e3, 1e300)) < 40


def test_a_long_failure_reason_the_bench_wrote_is_cut_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 16: the bench kept an exception's whole text as a skipped reason; past 2,000
    characters the reader called its own record damaged."""
    from gpuselect.bench.engine import failure

    long = "CUDA error: out of memory " + "x" * 3000 + "\nsecond line"
    assert len(failure(RuntimeError(long))) <= 300 and "second line" not in failure(RuntimeError(long))
    bench = tmp_path / "bench.json"
    doc = json.loads(_bench_doc("0.5"))
    doc["devices"][0]["skipped"] = {"train simple_cnn": "failed: RuntimeError: " + long}
    bench.write_text(json.dumps(doc))
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(bench)]) == 0
    doc["devices"][0]["skipped"] = {"k" * 2500: "x"}  # a label that long is still damage
    bench.write_text(json.dumps(doc))
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(bench)]) == 2
    assert "2,500 characters" in capsys.readouterr().err
