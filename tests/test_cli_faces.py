"""What the CLI's text, JSON and CSV faces of ``estimate`` and ``workloads`` say (QA round 14a)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from gpuselect.cli import main
from tests.fakes import fake_nvml as F  # imported before the fixture hides the real pynvml


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
        (["--workload", "simple-cnn", "--epochs", "1", "--dataset-size", "1"], "1 sample × 1 epoch (as given)"),
        # a small model's own count, not "0.0 M parameters"
        (["--params", "20000", "--flops-per-sample", "1e6"], "Custom workload: 20,000 parameters, "),
    ],
)
def test_estimate_header_says_what_data_its_times_cover(
    argv: list[str], scope: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    header = _out(["estimate", *argv, "--top", "1"], capsys).splitlines()[0]
    assert scope in header
    # the report says the same, in its own words ("x" for "×")
    md = tmp_path / "r.md"
    assert main(["report", "-o", str(md), "--no-bench", *argv]) == 0
    assert scope.split(" (")[0].replace("×", "x").removeprefix("Custom workload: ").rstrip(", ") in md.read_text(
        encoding="utf-8"
    )


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


def _cpu_bench(tmp_path: Path) -> Path:
    """A CPU benchmark record that trained the simple CNN at batches 1, 16 and 128."""
    steps = [
        {
            "model": "simple_cnn",
            "batch_size": b,
            "samples_per_s": s,
            "step_ms": 1000 * b / s,
            "includes_host_to_device_copy": False,
        }
        for b, s in ((1, 1000.0), (16, 4000.0), (128, 4700.0))
    ]
    dev = {
        "device": "cpu",
        "kind": "cpu",
        "matmul_tflops": {"fp32": 0.38},
        "memory_bandwidth_gbs": 26.8,
        "launch_overhead_us": 1.8,
        "train_steps": steps,
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"schema_version": 1, "kind": "bench", "devices": [dev]}))
    return path


ROW_KEYS = (
    "batch_size",
    "precision_used",
    "tokens_per_s",
    "epoch_time_s",
    "bound",
    "time_breakdown_s",
    "energy_kwh",
    "meets_deadline",
)


@pytest.mark.parametrize(
    ("argv", "modelled"),
    [
        (["--workload", "gpt2-124m"], True),  # unmeasured: the step-time model with rough CPU figures
        (["--workload", "simple-cnn", "--bench", "{bench}", "--batch-size", "128"], False),  # its measured step
        (["--workload", "simple-cnn", "--bench", "{bench}", "--batch-size", "512"], True),  # anchored on batch 128
    ],
)
def test_local_cpu_entry_has_the_row_keys(
    argv: list[str], modelled: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(bench=_cpu_bench(tmp_path)) for a in argv]
    doc = json.loads(_out(["estimate", *argv, "--format", "json"], capsys))
    cpu, a = doc["local"][0], doc["assumptions"]
    w = doc["workload"]
    assert cpu["device"] == "cpu" and all(k in cpu for k in ROW_KEYS)
    thr = cpu["throughput_samples_per_s"]
    if "--batch-size" in argv:
        assert cpu["batch_size"] == int(argv[-1])
    else:  # auto: the workload's own, or the batch the RAM holds, which its memory figure is for
        assert cpu["batch_size"] <= w["default_batch_size"] and cpu["batch_size"] <= cpu["max_batch"]
    assert cpu["precision_used"] == "fp32"  # a CPU is timed in fp32
    assert cpu["energy_kwh"] is None  # no CPU power figure: unknown, not 0
    epochs = a["epochs"] or w["default_epochs"]
    assert cpu["epoch_time_s"] * epochs / 3600 == pytest.approx(cpu["total_time_h"], rel=1e-9)
    assert cpu["tokens_per_s"] == (pytest.approx(thr * w["seq_len"]) if w["seq_len"] else None)
    assert cpu["meets_deadline"] == (cpu["fits"] and cpu["total_time_h"] <= a["deadline_hours"])
    if modelled:  # the model's step, which sums to the time the rate says
        assert cpu["bound"] in ("compute", "memory", "overhead")
        assert sum(cpu["time_breakdown_s"].values()) == pytest.approx(cpu["batch_size"] / thr, rel=1e-4)
    else:  # a measured step has no modelled breakdown
        assert cpu["bound"] is None and cpu["time_breakdown_s"] == {}
    capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(_out(["estimate", *argv, "--format", "csv"], capsys))))
    local = rows[0]
    assert local["gpu_id"] == "local:cpu" and local["batch_size"] == str(cpu["batch_size"])
    assert float(local["epoch_time_s"]) == pytest.approx(cpu["epoch_time_s"])


def test_local_gpu_entry_carries_its_row_figures() -> None:
    from gpuselect.catalog import load_catalog
    from gpuselect.estimate.api import Assumptions, estimate, local_gpu_estimate
    from gpuselect.estimate.perf import default_model
    from gpuselect.workloads.presets import PRESETS

    cat = load_catalog(use_overlay=False)
    perf = default_model(cat)
    w, a = PRESETS["gpt2-124m"], Assumptions()
    loc = local_gpu_estimate(w, a, cat, perf, name="NVIDIA GeForce RTX 4090", memory_bytes=24 * 2**30, device="gpu0")
    row = next(r for r in estimate(w, a, cat, perf, gpu_ids=["nvidia-rtx-4090"]).rows if r.count == 1)
    for key in ("batch_size", "precision_used", "tokens_per_s", "epoch_time_s", "bound", "time_breakdown_s"):
        mine, theirs = getattr(loc, key), getattr(row, key)
        assert mine == (pytest.approx(theirs) if isinstance(theirs, (float, dict)) else theirs), key
    assert loc.energy_kwh == pytest.approx(row.energy_kwh) and loc.meets_deadline == row.meets_deadline


def test_a_report_into_a_pipe_nobody_reads_says_it_waits(tmp_path: Path) -> None:
    """A named pipe without a reader blocked the finished report forever, silently."""
    import os
    import select
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuselect", "report", "-o", str(fifo)],
        cwd=REPO_ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 60)  # the line comes before the wait
        assert ready and proc.stderr is not None
        assert proc.stderr.readline() == f"gpuselect: waiting for a reader on {fifo}…\n"
        assert proc.poll() is None  # still waiting: nothing was written anywhere else
        assert fifo.read_bytes().startswith(b"# gpuselect hardware report")  # a reader lets it finish
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_deadline_in_days_reads_as_one(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(["estimate", "--workload", "vit-b16", "--deadline-hours", "1000", "--top", "1"], capsys)
    assert "42-day deadline" in out and "days deadline" not in out


def test_a_time_under_a_second_has_no_range_that_repeats_it(capsys: pytest.CaptureFixture[str]) -> None:
    out = _out(["estimate", "--workload", "simple-cnn", "--dataset-size", "1", "--top", "1"], capsys)
    assert "in under 1 s" in out and "(range under 1 s)" not in out


def test_the_memory_column_rounds_every_card_alike(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--workload", "resnet50", "--gpus", "nvidia-h100-sxm5-80gb,nvidia-rtx-4090"]
    lines = _out(argv, capsys).splitlines()
    h100 = next(ln for ln in lines if ln.lstrip("→ ").startswith("1x H100 SXM5"))
    # the capacity the fit was judged on, written as every face writes it (memory.vram_text): the
    # table's "/79.7" beside the note's "of 79.65 GB" (and the report's 179.1 beside the CLI's
    # 179.06 for a B200) read as two cards
    assert "/79.65 " in h100 and "/79.7 " not in h100
    rtx = next(ln for ln in lines if ln.lstrip("→ ").startswith("1x GeForce RTX 4090"))
    assert "/24 " in rtx  # whole GB stay whole
    from gpuselect.estimate.memory import vram_text

    assert [vram_text(v) for v in (80.0, 79.65, 179.06, 23.99, 1024.0)] == ["80", "79.65", "179.06", "23.99", "1,024"]


def test_a_need_just_past_the_card_never_reads_as_its_memory(capsys: pytest.CaptureFixture[str]) -> None:
    """QA 17b: VGG16 at batch 256 needs 10.03 GB of an RTX 3080's 10: "needs 10.0 of 10 GB" beside
    "does not fit" (and Llama 3B LoRA's 16.0003 of a P100's 16, whose JSON said 16.0 of 16 and no)."""
    from gpuselect.estimate.memory import need_gb, need_text

    argv = ["estimate", "--workload", "vgg16", "--batch-size", "256", "--gpus", "nvidia-rtx-3080", "--max-gpus", "1"]
    out = _out(argv, capsys)
    assert "needs 10.03 of 10 GB" in out and "needs 10.03 GB per GPU of its 10 GB" in out
    assert "needs 10.0 " not in out
    assert need_gb(16.0003, 16.0) == 16.01 and need_text(16.0003, 16.0) == "16.01"
    # a need that fits reads below the memory, one that does not above it; the rest keep one place
    assert need_gb(79.6499, 79.65) == 79.65 and need_text(79.65, 79.65) == "79.65"
    assert need_text(12.34, 24.0) == "12.3" and need_text(24.04, 24.0) == "24.04"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["estimate", "--workload", "resnet50", "--batch-size", "0"],
            "argument --batch-size: 0 is outside 1..1,000,000",
        ),
        (["estimate", "--workload", "resnet50", "--batch-size", "x"], "argument --batch-size: the batch size must be"),
        (["report", "-o", "{out}", "--workload", "resnet50", "--batch-size", "2.5"], "argument --batch-size:"),
        (["estimate", "--workload", "resnet50", "--gpus", "h100"], "did you mean nvidia-h100-"),
        (["estimate", "--workload", "resnet50", "--gpus", "nvidia-b20"], "did you mean nvidia-b200?"),
        (["bench", "--device", ""], "--device names no device"),
        (["bench", "--device", " , "], "--device names no device"),
    ],
)
def test_bad_values_get_one_sentence_with_a_hint(
    argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(out=tmp_path / "r.md") for a in argv]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.count("\n") == 1, err
    if "--batch-size" in argv:  # the prefix and hint of every other bad option
        assert err.startswith(f"gpuselect {argv[0]}: error: argument --batch-size: ") and "--help` lists" in err


def test_batch_auto_and_gpu_ids_in_any_case(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--workload", "resnet50", "--format", "json", "--gpus", "NVIDIA-B200,Nvidia-RTX-4090"]
    doc = json.loads(_out([*argv, "--batch-size", "AUTO"], capsys))
    assert {r["gpu_id"] for r in doc["rows"]} == {"nvidia-b200", "nvidia-rtx-4090"}
    assert doc["assumptions"]["batch_size"] is None
    assert "comm_overlap" not in doc["assumptions"]  # unused by the step model: read as the overlap used


def _money(doc: object, key: str = "") -> list[float]:
    if isinstance(doc, dict):
        return [x for k, v in doc.items() for x in _money(v, k)]
    if isinstance(doc, list):
        return [x for v in doc for x in _money(v, key)]
    return [doc] if isinstance(doc, float) and (key.endswith("cost_usd") or key == "budget_usd") else []


def test_json_costs_are_cents_without_float_noise(capsys: pytest.CaptureFixture[str]) -> None:
    from gpuselect.app.workflows import estimate_for_machine
    from gpuselect.estimate.api import Assumptions
    from gpuselect.output import to_jsonable
    from gpuselect.workloads.presets import get_preset

    argv = ["--workload", "bert-base-squad", "--max-gpus", "2"]
    core = to_jsonable(estimate_for_machine(get_preset("bert-base-squad"), Assumptions(max_gpus=2), None))
    assert any(v >= 1 and v != round(v, 2) for v in _money(core))  # the core keeps its floats (noise)
    doc = json.loads(_out(["estimate", *argv, "--format", "json"], capsys))
    money = _money(doc)
    assert money and all(v == round(v, 2) if abs(v) >= 1 else v == float(f"{v:.3g}") for v in money)
    assert any(0 < v < 1 for v in money)  # a cost under a dollar keeps its digits, not 0.0
    # CSV's cells as JSON's figures (they were the core's: 389.77231575252597 beside JSON's 389.77)
    rows = csv.DictReader(io.StringIO(_out(["estimate", *argv, "--format", "csv"], capsys)))
    cells = [float(r[k]) for r in rows for k in ("buy_cost_usd", "cloud_cost_usd") if r[k]]
    assert sorted(cells) == sorted(_money(doc["rows"]))


def test_bound_follows_the_documented_shares(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/estimator.md: `bound`'s memory share is memory + optimizer, overhead is kernel_floor +
    host + copy (a consumer recomputing it from the breakdown's largest entry got contradictions)."""
    doc = json.loads(_out(["estimate", "--workload", "bert-base-squad", "--max-gpus", "1", "--format", "json"], capsys))
    checked = 0
    for r in doc["rows"]:
        b = r["time_breakdown_s"]
        if not r["fits"] or r["bound"] == "overhead" or not b:
            continue  # overhead also names a step the host outlasts, whatever the device's split
        share = {
            "compute": b.get("compute", 0.0),
            "memory": b.get("memory", 0.0) + b.get("optimizer", 0.0),
            "overhead": b.get("kernel_floor", 0.0) + b.get("host", 0.0) + b.get("copy", 0.0),
        }
        assert r["bound"] == max(share, key=lambda k: share[k]), r["gpu_id"]
        checked += 1
    assert checked > 10
    text = " ".join((Path(__file__).parents[1] / "docs" / "estimator.md").read_text().split())
    assert "its memory share counts the optimizer's traffic" in text


def test_energy_is_said_to_count_the_gpus_only(capsys: pytest.CaptureFixture[str]) -> None:
    """QA 14: kWh and 'buy and run' costs are the GPUs' power alone; nothing said so."""
    assert main(["estimate", "--workload", "resnet50", "--top", "1"]) == 0
    assert "count the GPUs' power (TDP x 0.85), not the host's" in capsys.readouterr().out


def test_the_links_line_only_where_a_row_uses_several_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """QA 15: `--count 1,1` printed "Several GPUs: spec link bandwidths ..." over one-GPU rows."""
    one = _out(["estimate", "--workload", "resnet50", "--gpus", "nvidia-rtx-4090", "--count", "1,1"], capsys)
    assert "Several GPUs:" not in one
    two = _out(["estimate", "--workload", "resnet50", "--gpus", "nvidia-rtx-4090", "--count", "1,2"], capsys)
    assert "Several GPUs: spec link bandwidths" in two
    dies = _out(["estimate", "--workload", "resnet50", "--gpus", "amd-mi250x", "--count", "1"], capsys)
    assert "Several GPUs: spec link bandwidths" in dies  # one MI250X trains data-parallel over its 2 dies
    # QA 15: each vendor's link named, not NVLink for AMD's Infinity Fabric
    assert "spec link bandwidths (Infinity Fabric, PCIe)" in dies
    assert "spec link bandwidths (NVLink, PCIe)" in two
    both = _out(
        ["estimate", "--workload", "resnet50", "--gpus", "nvidia-h100-sxm5-80gb,amd-mi300x", "--count", "2"], capsys
    )
    assert "spec link bandwidths (NVLink, Infinity Fabric, PCIe)" in both


def test_an_moe_workload_states_its_active_parameters_in_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """QA 15: the text said "12.9 B of the 46.7 B parameters active per token"; the JSON had no such figure."""
    import json

    cfg = tmp_path / "mixtral.json"
    from tests.hf_configs import MIXTRAL_8X7B

    cfg.write_text(json.dumps(MIXTRAL_8X7B))
    w = json.loads(_out(["estimate", "--config", str(cfg), "--format", "json", "--top", "1"], capsys))["workload"]
    assert w["active_params_per_token"] == pytest.approx(12.9e9, rel=0.01) and w["params"] > 46e9
    dense = json.loads(_out(["estimate", "--workload", "gpt2-124m", "--format", "json", "--top", "1"], capsys))
    assert "active_params_per_token" not in dense["workload"]


def test_a_cpu_that_cannot_hold_the_batch_says_which_batch_it_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """QA 15: "needs 22.3 GB, does not fit" and nothing more, where the CPU held batch 483 of 512."""
    from gpuselect.estimate.api import Assumptions, local_cpu_estimate
    from gpuselect.estimate.recommend import memory_need
    from gpuselect.workloads.presets import PRESETS

    w = PRESETS["bert_base_squad"]
    loc = local_cpu_estimate(w, Assumptions(batch_size=512), cores=2, mhz=2000.0, features=[], ram_gb=23.5)
    assert not loc.fits and loc.max_batch is not None and 1 <= loc.max_batch < 512
    assert memory_need(loc).endswith(f"(at most batch {loc.max_batch:,} fits)")
    ok = local_cpu_estimate(w, Assumptions(batch_size=8), cores=2, mhz=2000.0, features=[], ram_gb=23.5)
    assert ok.fits and "at most batch" not in memory_need(ok)


def test_this_machine_s_gpu_memory_reads_as_every_face_writes_it() -> None:
    """Review 15: the CLI's "Your machine" line said "of your 79.6475 GB" (81,559 MiB as the driver
    reports it) where the app and the report say 79.65."""
    from types import SimpleNamespace

    from gpuselect.estimate.recommend import memory_need

    loc = SimpleNamespace(device="gpu0", vram_gb=79.6475, fits=True, peak_memory_gb=12.2)
    assert memory_need(loc) == "needs 12.2 of your 79.65 GB"


def test_an_option_name_too_long_for_its_column_is_elided_not_cut(capsys: pytest.CaptureFixture[str]) -> None:
    """QA 16c: "1024x Instinct MI250X (2 GCDs each" lost its ")" and read as complete; a name longer
    than the column ends in "…"."""
    out = _out(
        ["estimate", "--workload", "llama-1b-full", "--precision", "fp8", "--batch-size", "32", "--top", "1"],
        capsys,
    )
    rows = [line for line in out.splitlines() if line[:1].isdigit() or line.startswith("→ ")]
    long = [line for line in rows if "GCDs" in line]
    assert long, out  # the 1024x MI250X cluster rows
    for line in rows:
        name = line[:34].rstrip()
        assert name.endswith(("…", ")")) or "(" not in name, line
    assert any(line[:34].rstrip().endswith("…") for line in long)


def test_json_names_the_stage_as_the_text_heads_it(capsys: pytest.CaptureFixture[str]) -> None:
    """JSON's stage_name read "one reasonable GPU" where the CLI, the GUI and the report say
    "Stage 2 — one consumer GPU" (docs/advice.md: the names are the same everywhere)."""
    argv = ["estimate", "--workload", "gpt2-124m", "--gpus", "nvidia-rtx-4090,nvidia-h100-sxm5-80gb"]
    doc = json.loads(_out([*argv, "--format", "json"], capsys))
    rec = doc["recommendation"]
    assert f"\nStage {rec['stage']} — {rec['stage_name']}: " in _out(argv, capsys)


def test_every_key_a_script_reads_is_in_the_docs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/estimator.md names every key of the JSON's rows, local entries, recommendation and its
    options (error_band's meaning, the GiB behind `_gb`, break_even_hours were said nowhere)."""
    doc = json.loads(_out(["estimate", "--workload", "gpt2-124m", "--format", "json"], capsys))
    rec = doc["recommendation"]
    options = [o for o in (rec["option"], *rec["per_stage"].values()) if o]
    keys = {*doc, *doc["rows"][0], *doc["local"][0], *rec, *(k for o in options for k in o)}
    keys |= {*doc["workload"], *doc["assumptions"]}
    text = (Path(__file__).resolve().parents[1] / "docs" / "estimator.md").read_text(encoding="utf-8")
    assert sorted(k for k in keys if f"`{k}`" not in text) == []


def test_a_local_gpu_that_does_not_fit_has_no_band_on_no_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of 8 H100s short of Llama 8B's full state read "n/a (±100 %; ...)": a range of nothing."""
    fake = F.SCENARIOS["h100x8"]()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    argv = ["--workload", "llama-8b-full", "--top", "1"]
    text = _out(["estimate", *argv], capsys)
    out = tmp_path / "r.md"
    assert main(["report", "--no-bench", "-o", str(out), *argv[:2]]) == 0
    for face in (text, out.read_text(encoding="utf-8")):
        assert "gpu0 (NVIDIA H100 80GB HBM3): no time: it does not fit (" in face
        assert "n/a (" not in face
        # review 17b: "...: no time: it does not fit (...); needs 143.1 of your 80 GB, does not fit",
        # and a CPU short of RAM had a time and band beside its "does not fit"
        for line in (ln for ln in face.splitlines() if ln.startswith("Your machine, ")):
            if "does not fit" in line:
                assert line.count("does not fit") == 1 and ": no time: it does not fit (" in line, line
                assert "±" not in line and "+/-" not in line, line


def test_the_training_flops_read_without_scientific_notation(capsys: pytest.CaptureFixture[str]) -> None:
    """Review 17b: the CLI's own GFLOP rule printed "3e-06 GFLOP per sample to train" for a small
    model of own figures, beside a description that says "0.00000100 GFLOP per sample forward"."""
    text = _out(["estimate", "--params", "100", "--flops-per-sample", "1000", "--gpus", "nvidia-rtx-4090"], capsys)
    head = text.splitlines()[0]
    assert "100 parameters, 0.00000300 GFLOP per sample to train" in head and "e-0" not in head


def test_estimate_help_gives_top_and_gpus_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    # The README promises every option's default in --help; --top (15) and --gpus (all) gave none.
    with pytest.raises(SystemExit):
        main(["estimate", "--help"])
    text = " ".join(capsys.readouterr().out.split()).split("options:", 1)[1]
    assert "default 15" in text.split("--top TOP", 1)[1][:200]
    assert "all (default)" in text.split("--gpus GPUS", 1)[1][:100]
