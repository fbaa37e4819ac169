"""The benchmark engine on the CPU: events, cancellation, OOM back-off, schema, spec ratios."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import torch

from gpuselect.bench.engine import run_benchmark, run_to_completion
from gpuselect.bench.findings import bench_findings, spec_ratios
from gpuselect.bench.model import BenchConfig, BenchReport, DeviceResult
from gpuselect.catalog.schema import GpuEntry
from gpuselect.cli import main
from gpuselect.health.model import Severity

# A generous time box: these tests check what is measured, not how fast a shared machine is
# (the box has its own tests below, which count work instead of timing it).
TINY = BenchConfig(
    quick=True, devices=("cpu",), budget_s=0.04, batch_sizes=(1, 4), models=("simple_cnn",), time_box_s=600
)


def test_events_progress_monotonically_to_done() -> None:
    events = []
    report = run_to_completion(TINY, on_event=events.append)
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and events[-1].step == "done"
    assert all(0.0 <= f <= 1.0 for f in fractions)
    assert not report.cancelled
    (cpu,) = report.devices
    assert cpu.device == "cpu" and cpu.matmul_tflops["fp32"] and cpu.matmul_tflops["fp32"] > 0
    assert cpu.logical_cores == os.cpu_count()  # with the name, what matches a saved result to this machine
    assert report.other_cpu_share is None or 0 <= report.other_cpu_share <= 1
    assert cpu.matmul_tflops["tf32"] is None and "tf32" in " ".join(cpu.skipped)
    assert cpu.memory_bandwidth_gbs and cpu.memory_bandwidth_gbs > 0
    assert cpu.launch_overhead_us and cpu.launch_overhead_us > 0
    assert [(s.model, s.batch_size) for s in cpu.train_steps] == [("simple_cnn", 1), ("simple_cnn", 4)]
    assert all(s.samples_per_s > 0 for s in cpu.train_steps)
    spread = cpu.matmul_detail["fp32"]
    assert spread.low <= spread.value <= spread.high and spread.repeats >= 3


def test_cancel_takes_effect_at_the_next_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted, not timed: after Cancel no further measurement runs (no matrix product).
    cancel = threading.Event()
    gen = run_benchmark(BenchConfig(quick=False, devices=("cpu",)), cancel)
    next(gen)  # the first step has been announced; now the user presses Cancel
    cancel.set()
    products = []
    real_mm = torch.mm
    monkeypatch.setattr(torch, "mm", lambda a, b: products.append(1) or real_mm(a, b))
    events_after = 0
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            report: BenchReport = stop.value
            break
        events_after += 1
    assert report.cancelled
    assert products == [] and events_after <= 1


def test_out_of_memory_backs_off_and_continues(monkeypatch: pytest.MonkeyPatch) -> None:
    real_ones = torch.ones
    limit = 40 * 1024**2 // 4  # "device" holds arrays of at most 40 MiB

    def ones(*size, **kw):
        n = size[0] if size and isinstance(size[0], int) else 0
        if n > limit:
            raise RuntimeError("CUDA out of memory. Tried to allocate 128.00 MiB")
        return real_ones(*size, **kw)

    monkeypatch.setattr(torch, "ones", ones)
    report = run_to_completion(BenchConfig(quick=True, devices=("cpu",), budget_s=0.03, batch_sizes=(1,), models=()))
    cpu = report.devices[0]
    assert any("bandwidth: out of memory" in b for b in cpu.backoffs), cpu.backoffs
    assert cpu.memory_bandwidth_gbs and cpu.memory_bandwidth_gbs > 0
    assert "32 MiB per array" in cpu.bandwidth_detail["copy"].size


def test_unrelated_errors_are_reported_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*a, **k):
        raise RuntimeError("illegal memory access")

    monkeypatch.setattr("gpuselect.bench.engine.measure_launch", broken)
    monkeypatch.setattr("gpuselect.bench.engine._plan", _plan_with_launch_only)
    cpu = run_to_completion(TINY).devices[0]
    assert "illegal memory access" in cpu.skipped["launch overhead"]


def _plan_with_launch_only(dev, cfg):
    from gpuselect.bench import engine

    return [("launch overhead", lambda r, res: engine.measure_launch(r, res))]


def _entry(**kw) -> GpuEntry:
    base = {
        "id": "nvidia-h100-sxm5-80gb",
        "name": "H100 SXM5 80GB",
        "vendor": "NVIDIA",
        "family": "datacenter",
        "architecture": "Hopper",
        "release_date": "2023-03-21",
        "form_factor": "sxm",
        "vram_gb": 80,
        "memory_type": "HBM3",
        "memory_bus_bits": 5120,
        "memory_bandwidth_gbs": 3350,
        "shader_cores": 16896,
        "boost_clock_mhz": 1980,
        "fp32_tflops": 66.9,
        "tdp_w": 700,
        "tf32_tflops": 494.7,
        "fp16_tflops": 989.4,
        "bf16_tflops": 989.4,
        "fp8_tflops": 1978.9,
    }
    base.update(kw)
    return GpuEntry(**base)  # type: ignore[arg-type]


def test_spec_ratios_and_findings() -> None:
    res = DeviceResult(
        "cuda:0",
        "NVIDIA H100 80GB HBM3",
        "cuda",
        matmul_tflops={"bf16": 790.0, "fp16": 400.0, "fp32": 50.0},
        memory_bandwidth_gbs=3000.0,
    )
    res.spec_ratio = spec_ratios(res, _entry())
    res.spec_name = "H100 SXM5 80GB"
    assert res.spec_ratio["matmul_bf16"] == pytest.approx(790 / 989.4, abs=1e-3)
    assert res.spec_ratio["memory_bandwidth"] == pytest.approx(3000 / 3350, abs=1e-3)
    findings = {f.id: f for f in bench_findings(BenchReport([res], quick=False, torch_version="x"))}
    assert findings["bench.spec_ratio.matmul_bf16"].severity is Severity.OK
    low = findings["bench.spec_ratio.matmul_fp16"]
    assert low.severity is Severity.WARNING and "40 % of its FP16 spec" in low.title and "cooling" in (low.remedy or "")
    assert "bench.spec_ratio.matmul_fp32" not in findings


def test_cli_json_schema(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.measurement_budget_s", lambda self: 0.04)
    # a generous time box: this checks what is written, not how fast a shared machine is
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.device_time_box_s", lambda self: 600.0)
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.train_batch_sizes", lambda self: (2,))
    assert main(["bench", "--device", "cpu", "--quick", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "bench" and doc["schema_version"] == 1
    (dev,) = doc["devices"]
    for key in (
        "device",
        "name",
        "matmul_tflops",
        "memory_bandwidth_gbs",
        "host_to_device_gbs",
        "device_to_host_gbs",
        "launch_overhead_us",
        "train_steps",
        "spec_ratio",
        "duration_s",
    ):
        assert key in dev, key
    assert dev["host_to_device_gbs"] is None and dev["device_to_host_gbs"] is None
    assert {"model", "batch_size", "samples_per_s"} <= set(dev["train_steps"][0])
    assert set(dev["matmul_tflops"]) >= {"fp32", "tf32", "fp16", "bf16"}


def test_cli_unknown_device_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--device", "cuda:7"]) == 2
    err = capsys.readouterr().err
    assert "no device 'cuda:7'" in err and "Traceback" not in err


def test_spec_ratios_attached_from_the_catalog() -> None:
    from gpuselect.bench.engine import attach_spec_ratios

    gpu = DeviceResult(
        "cuda:0",
        "NVIDIA H100 80GB HBM3",
        "cuda",
        matmul_tflops={"bf16": 700.0},
        memory_bandwidth_gbs=2950.0,
        memory_total_bytes=85_520_809_984,
    )
    unknown = DeviceResult("cuda:1", "NVIDIA Imaginary 1", "cuda", matmul_tflops={"bf16": 1.0})
    report = BenchReport([gpu, unknown], quick=True, torch_version="x")
    attach_spec_ratios(report)
    assert gpu.spec_name == "H100 SXM5 80GB"
    assert gpu.spec_ratio == {
        "matmul_bf16": pytest.approx(700 / 989.4, abs=1e-3),
        "memory_bandwidth": pytest.approx(2950 / 3350, abs=1e-3),
    }
    assert unknown.spec_ratio is None and "not in the GPU catalog" in unknown.skipped["% of spec"]


def test_time_box_skips_remaining_training_batches_and_says_so() -> None:
    # A time box already used up by the matmuls: training batches are skipped with a reason,
    # the figures measured so far are kept, and the run still completes with every event.
    cfg = BenchConfig(
        quick=True, devices=("cpu",), budget_s=0.02, batch_sizes=(1, 4), models=("simple_cnn",), time_box_s=0.0
    )
    events: list = []
    report = run_to_completion(cfg, on_event=events.append)
    cpu = report.devices[0]
    assert cpu.matmul_tflops["fp32"] and cpu.matmul_tflops["fp32"] > 0
    assert cpu.train_steps == []
    assert "time box" in cpu.skipped["train simple_cnn batches >= 1"]
    assert events[-1].step == "done" and events[-1].fraction == 1.0


def test_time_box_bounds_the_run_even_when_every_step_is_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    import time as _time

    real_mm = torch.mm

    def slow_mm(a, b):  # a throttled machine: every product takes 20 ms
        _time.sleep(0.02)
        return real_mm(a, b)

    calls: list[int] = []

    def counted_mm(a, b):
        calls.append(1)
        return slow_mm(a, b)

    monkeypatch.setattr(torch, "mm", counted_mm)
    cfg = BenchConfig(quick=True, devices=("cpu",), budget_s=0.5, batch_sizes=(1,), models=(), time_box_s=0.3)
    report = run_to_completion(cfg)
    # Counted, not timed: without the box this run makes 45 products (measured on the 2-core
    # dev VM, time_box_s=1000); with it 12. Each takes >= 20 ms, so the box caps the count.
    assert len(calls) <= 25, len(calls)
    assert report.devices[0].matmul_tflops["fp32"] is not None


def test_sgd_momentum_matches_torch_optim() -> None:
    # The engine's written-out optimizer must do the same update as torch.optim.SGD.
    from gpuselect.bench.engine import _SgdMomentum

    torch.manual_seed(0)
    a = torch.nn.Linear(8, 3)
    b = torch.nn.Linear(8, 3)
    b.load_state_dict(a.state_dict())
    ref = torch.optim.SGD(a.parameters(), lr=0.05, momentum=0.9)
    ours = _SgdMomentum(torch, b.parameters(), lr=0.05, momentum=0.9)
    for _ in range(4):
        x = torch.randn(5, 8)
        for model, opt in ((a, ref), (b, ours)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.allclose(pa, pb, atol=1e-6)


def test_a_training_batch_predicted_to_overrun_the_box_is_skipped_before_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time as _time

    from gpuselect.bench import engine

    class Sleepy(torch.nn.Module):  # a step that costs 40 ms per sample
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x):
            _time.sleep(0.04 * x.shape[0])
            return self.lin(x)

    monkeypatch.setattr(
        engine,
        "_make_model",
        lambda t, name: (Sleepy(), lambda bs: (t.randn(bs, 4), t.randint(0, 2, (bs,))), t.nn.CrossEntropyLoss()),
    )
    cfg = BenchConfig(quick=True, devices=("cpu",), budget_s=0.05)
    (dev,) = engine.select_devices(engine.list_devices(torch), ("cpu",))
    runner = engine._Runner(torch, dev, cfg, threading.Event())
    runner.deadline = _time.perf_counter() + 0.8
    res = DeviceResult("cpu", "cpu", "cpu")
    list(engine.measure_train(runner, res, "sleepy", (1, 16)))
    # Batch 1 fits (about 0.2 s); batch 16 would need ~0.64 s per step, twice that is past the box.
    assert [s.batch_size for s in res.train_steps] == [1]
    assert "would take" in res.skipped["train sleepy batches >= 16"]


def test_a_tiny_rate_keeps_its_digits_in_json_and_text() -> None:
    # A CPU's fp16 matmul runs at ~0.001 TFLOP/s: rounding to 3 decimals or printing "0.00"
    # would tell the user it did not run at all.
    from gpuselect.bench.engine import _sig
    from gpuselect.bench.text import format_bench

    assert _sig(0.0012346) == 0.001235 and _sig(676.42) == 676.4
    res = DeviceResult("cpu", "CPU", "cpu", matmul_tflops={"fp32": 0.1234, "fp16": 0.001238})
    text = format_bench(BenchReport([res], quick=True, torch_version="x"))
    assert "0.00124 TFLOP/s" in text and "0.123 TFLOP/s" in text


def test_a_benchmark_on_a_busy_machine_says_so() -> None:
    # Two `yes` loops on a 2-core VM halved the bandwidth and the training steps, and nothing said so.
    import os

    from gpuselect.bench.engine import _cpu_seconds, other_cpu_share
    from gpuselect.bench.findings import BUSY_SHARE_WARN, bench_findings
    from gpuselect.bench.model import BenchReport

    n = os.cpu_count() or 1
    assert other_cpu_share((100.0, 10.0), (100.0 + 10 * n, 10.0), 10.0) == 1.0  # others had every CPU
    assert other_cpu_share((100.0, 10.0), (100.0 + 10 * n, 10.0 + 10 * n), 10.0) == 0.0  # it was all ours
    assert other_cpu_share(None, (1.0, 1.0), 10.0) is None
    if os.path.exists("/proc/stat"):
        snap = _cpu_seconds()
        assert snap is not None and snap[0] > 0
    busy = BenchReport(devices=[], quick=True, torch_version=None, other_cpu_share=0.6)
    quiet = BenchReport(devices=[], quick=True, torch_version=None, other_cpu_share=0.05)
    found = [f for f in bench_findings(busy) if f.id == "bench.busy_machine"]
    assert found and found[0].value == 0.6 and found[0].threshold == BUSY_SHARE_WARN
    assert not [f for f in bench_findings(quiet) if f.id == "bench.busy_machine"]


def test_progress_names_only_steps_it_measures_and_its_eta_stays_inside_the_time_box(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CPU listed "matmul tf32" (then reported as not measured), and the first ETA extrapolated
    the slow first step to 3x the real run."""
    import gpuselect.bench.engine as engine

    real = engine.measure_matmul

    def slow_first(r, res, precision):  # type: ignore[no-untyped-def]
        if precision == "fp32":
            import time

            time.sleep(1.0)  # a slow first step (torch's import, a settling matmul)
        real(r, res, precision)

    monkeypatch.setattr(engine, "measure_matmul", slow_first)
    cfg = BenchConfig(
        quick=True, devices=("cpu",), budget_s=0.02, batch_sizes=(1,), models=("simple_cnn",), time_box_s=1.5
    )
    events: list = []
    report = run_to_completion(cfg, on_event=events.append)
    assert not any("tf32" in e.step for e in events)
    assert "matmul tf32" in report.devices[0].skipped  # still recorded, with its reason
    # at most what the box leaves (1.5 s from the start), never the 1 s step extrapolated over the plan
    assert all(e.eta_s is None or e.eta_s <= max(0.0, 1.5 - e.elapsed_s) + 0.05 for e in events)


def test_the_next_batch_is_predicted_from_the_median_step_not_one_stalled_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On a busy machine the first timed step stalled (0.3 s) and every other took ~1 ms: batch 16
    # was predicted from the stall (~4.8 s a step) and skipped, while the batch-1 rate printed
    # beside it said 1 ms a step.
    import time as _time

    from gpuselect.bench import engine

    calls = {"n": 0}

    class Stalls(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x):
            calls["n"] += 1
            _time.sleep(0.3 if calls["n"] == 2 else 0.001)  # call 1 is the warm-up, 2 the first timed step
            return self.lin(x)

    monkeypatch.setattr(
        engine,
        "_make_model",
        lambda t, name: (Stalls(), lambda bs: (t.randn(bs, 4), t.randint(0, 2, (bs,))), t.nn.CrossEntropyLoss()),
    )
    cfg = BenchConfig(quick=True, devices=("cpu",), budget_s=0.1)
    (dev,) = engine.select_devices(engine.list_devices(torch), ("cpu",))
    runner = engine._Runner(torch, dev, cfg, threading.Event())
    runner.deadline = _time.perf_counter() + 3.0
    res = DeviceResult("cpu", "cpu", "cpu")
    list(engine.measure_train(runner, res, "stalls", (1, 16)))
    assert [s.batch_size for s in res.train_steps] == [1, 16], res.skipped


def _tiny_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.measurement_budget_s", lambda self: 0.03)
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.device_time_box_s", lambda self: 600.0)
    monkeypatch.setattr("gpuselect.bench.model.BenchConfig.train_batch_sizes", lambda self: (2,))


def test_bench_output_saves_a_stamped_record_that_estimate_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tiny_bench(monkeypatch)
    out = tmp_path / "bench.json"
    assert main(["bench", "--device", "cpu", "--quick", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.err and "matmul" in captured.out  # the summary still on screen
    doc = json.loads(out.read_text())
    import datetime as dt

    from gpuselect import __version__

    assert doc["report"]["app_version"] == __version__
    assert dt.datetime.fromisoformat(doc["report"]["taken_at"]).tzinfo is not None
    from gpuselect.app.machine import load_bench

    assert load_bench(out).taken_at == doc["report"]["taken_at"]
    # a saved record is the user's: replaced only when asked, refused before any measuring
    monkeypatch.setattr("gpuselect.bench.engine.run_to_completion", lambda *a, **k: pytest.fail("measured"))
    assert main(["bench", "--device", "cpu", "--quick", "-o", str(out)]) == 1
    assert "is a saved gpuselect benchmark record (kept unless asked)" in capsys.readouterr().err
    assert json.loads(out.read_text()) == doc


def test_bench_output_dash_is_refused_not_a_file_named_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("gpuselect.bench.engine.run_to_completion", lambda *a, **k: pytest.fail("measured"))
    assert main(["bench", "--device", "cpu", "--quick", "-o", "-"]) == 2
    assert "use --format json" in capsys.readouterr().err and not (tmp_path / "-").exists()


def test_bench_output_is_not_written_when_the_run_is_cancelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("gpuselect.bench.engine.run_to_completion", interrupted)
    out = tmp_path / "bench.json"
    assert main(["bench", "--device", "cpu", "--quick", "-o", str(out)]) == 130
    assert not out.exists() and f"{out} was not written" in capsys.readouterr().err


def test_a_saved_record_names_its_age_and_another_version() -> None:
    import datetime as dt

    from gpuselect import __version__
    from gpuselect.app.machine import _age_notes

    res = DeviceResult("cpu", "Some CPU", "cpu")
    now = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
    fresh = BenchReport(
        [res], quick=True, torch_version="x", taken_at="2026-11-20T10:00:00+00:00", app_version=__version__
    )
    assert _age_notes(fresh, now) == []
    old = BenchReport([res], quick=True, torch_version="x", taken_at="2026-05-01T10:00:00+00:00", app_version="0.0.1")
    (note,) = _age_notes(old, now)
    assert "208 days old (taken 2026-05-01)" in note and "gpuselect 0.0.1" in note and "gpuselect bench" in note
    unstamped = BenchReport([res], quick=True, torch_version="x")  # written before records were stamped
    assert _age_notes(unstamped, now) == []


@pytest.mark.parametrize(
    ("value", "said"),
    [("yesterday", "not an ISO 8601"), ("2026-11-25T10:00:00", "without its time zone"), (5, "plain text")],
)
def test_a_bad_stamp_is_refused_in_one_sentence(value: object, said: str) -> None:
    from gpuselect.bench.io import validate_bench_doc
    from gpuselect.errors import DataError

    doc = {"kind": "bench", "devices": [{"device": "cpu"}], "report": {"taken_at": value}}
    with pytest.raises(DataError, match=said):
        validate_bench_doc(doc, source="b.json")


def test_every_field_of_the_bench_json_is_documented() -> None:
    """docs/benchmarks.md names each key of `bench --format json` (the record `estimate --bench`
    reads): none was documented, nor the units of the detail timings."""
    import dataclasses

    from gpuselect.bench.model import Timing, TrainStep
    from tests.conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    keys = [f.name for c in (BenchReport, DeviceResult, Timing, TrainStep) for f in dataclasses.fields(c)]
    assert sorted(k for k in keys if f"`{k}`" not in text) == []


def test_progress_on_a_narrow_terminal_stays_on_one_row(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """COLUMNS=40: the 78-column progress line wrapped, and each "\r" redrew only its last row."""
    import sys

    from gpuselect.bench.model import ProgressEvent
    from gpuselect.commands.bench import _progress

    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    _progress(ProgressEvent("cuda:0: training step transformer batch 128", 0.5, 3.0, 12.0))
    err = capsys.readouterr().err
    assert err.startswith("\r[ 50%] cuda:0: training step") and len(err) <= 40
