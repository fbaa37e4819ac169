"""A benchmarked device fitted on its own measured training steps (perf.fit_bench_steps)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.estimate.perf import (
    apply_bench_fit,
    bench_step_list,
    bench_trace,
    benchmarked_gpu_device,
    cpu_device,
    fit_bench_steps,
    step_time,
)

VAL = Path(__file__).resolve().parents[2] / "docs" / "validation"


def _cpu_record(fp32: float = 0.1) -> dict:  # type: ignore[type-arg]
    return {"device": "cpu", "matmul_tflops": {"fp32": fp32}, "memory_bandwidth_gbs": 15.0, "launch_overhead_us": 3.0}


@pytest.mark.parametrize(("dispatch_us", "scale"), [(5.0, 1.0), (40.0, 2.5), (200.0, 0.5)])
def test_cpu_fit_recovers_the_parameters_that_made_the_steps(dispatch_us: float, scale: float) -> None:
    base = cpu_device(_cpu_record(), cores=2, fit_steps=False)
    truth = replace(
        base,
        dispatch_s=dispatch_us * 1e-6,
        peak_tflops={k: v / scale for k, v in base.peak_tflops.items()},
        vector_tflops=base.vector_tflops / scale,
        bandwidth_gbs=base.bandwidth_gbs / scale,
    )
    steps = [
        (m, b, step_time(bench_trace(m, cpu=True), truth, b, "fp32", optimizer="sgd-momentum").seconds)
        for m in ("simple_cnn", "transformer")
        for b in (1, 8, 32, 128)
    ]
    f = fit_bench_steps(base, steps)
    assert f is not None
    assert f.dispatch_s == pytest.approx(dispatch_us * 1e-6, rel=0.05)
    assert f.device_scale == pytest.approx(scale, rel=0.05)
    assert f.conv_scale == pytest.approx(1.0, rel=0.05)
    assert f.rms_log_err < 0.01


def test_gpu_fit_recovers_the_host_cost_of_host_bound_steps() -> None:
    catalog = load_catalog(use_overlay=False)
    e = catalog.get("nvidia-h100-sxm5-80gb")
    assert e is not None
    base = benchmarked_gpu_device(e, {"matmul_tflops": {"fp32": 50.0}, "memory_bandwidth_gbs": 2900.0}, fit_steps=False)
    truth = replace(base, dispatch_s=30e-6, step_fixed_s=0.0)  # the fit's own model: a per-op cost alone
    steps = [
        (m, b, step_time(bench_trace(m), truth, b, "fp32", optimizer="sgd-momentum").seconds)
        for m in ("simple_cnn", "transformer")
        for b in (1, 8, 32)
    ]
    f = fit_bench_steps(base, steps)
    assert f is not None
    assert f.dispatch_s == pytest.approx(30e-6, rel=0.05)
    assert f.rms_log_err < 0.02


def test_too_few_steps_leave_the_device_unfitted() -> None:
    rec = {**_cpu_record(), "train_steps": [{"model": "simple_cnn", "batch_size": 8, "step_ms": 5.0}]}
    plain = cpu_device(rec, cores=2, fit_steps=False)
    assert cpu_device(rec, cores=2) == plain
    assert fit_bench_steps(plain, bench_step_list(rec)) is None
    # Models without a trace (the bench's LSTM) are ignored, not guessed.
    assert bench_step_list({"train_steps": [{"model": "lstm", "batch_size": 8, "step_ms": 5.0}]}) == []


@pytest.mark.parametrize("name", ["bench-cpu-1.json", "bench-cpu-5.json"])
def test_the_quiet_vm_records_are_within_35_percent_of_their_own_steps(name: str) -> None:
    """The issue's target on this VM's quiet runs (docs/validation/cpu-vm-2026-11-24): the CPU
    fitted on its steps predicts them with a median error within 35 % (and none off by 50 %:
    the records' own steps scatter, e.g. run 1's batch 128 is slower than its batch 32)."""
    import statistics

    rec = json.loads((VAL / "cpu-vm-2026-11-24" / name).read_text())["devices"][0]
    d = cpu_device(rec, cores=2)
    assert any("fitted on its" in n for n in d.notes)
    errs = [
        abs(math.log(step_time(bench_trace(m, cpu=True), d, b, "fp32", optimizer="sgd-momentum").seconds / t))
        for m, b, t in bench_step_list(rec)
    ]
    assert statistics.median(errs) < math.log(1.35)
    assert max(errs) < math.log(1.5)


def test_a_fit_that_disagrees_with_its_steps_says_so() -> None:
    rec = _cpu_record()
    # Steps that no per-op cost and rate explain: longer at batch 1 than at batch 128.
    rec["train_steps"] = [
        {"model": "simple_cnn", "batch_size": 1, "step_ms": 100.0},
        {"model": "simple_cnn", "batch_size": 128, "step_ms": 1.0},
        {"model": "transformer", "batch_size": 1, "step_ms": 200.0},
        {"model": "transformer", "batch_size": 32, "step_ms": 2.0},
    ]
    base = cpu_device(rec, cores=2, fit_steps=False)
    f = fit_bench_steps(base, bench_step_list(rec))
    assert f is not None and f.rms_log_err > 0.35
    assert any("disagree" in n for n in apply_bench_fit(base, f).notes)


def test_the_local_cpu_band_follows_the_record_s_own_consistency() -> None:
    from gpuselect.estimate.api import Assumptions, local_cpu_estimate, regime_band
    from gpuselect.workloads.presets import PRESETS

    def band(name: str) -> float:
        rec = json.loads((VAL / "cpu-vm-2026-11-24" / name).read_text())["devices"][0]
        est = local_cpu_estimate(PRESETS["gpt2-124m"], Assumptions(), cores=2, mhz=None, features=[], bench=rec)
        assert est.throughput_samples_per_s
        return est.error_band

    assert band("bench-cpu-1.json") == regime_band("cpu", "NVIDIA")  # quiet: its fit explains its steps
    assert band("bench-cpu-2.json") == regime_band("cpu_unsteady", "NVIDIA")  # a burst hit it
    assert regime_band("cpu", "NVIDIA") < regime_band("cpu_unsteady", "NVIDIA")


def _amx_record() -> dict:  # type: ignore[type-arg]
    # A 2-core Xeon with AMX, quiet (gpuselect bench --quick): bf16 matmuls 6x its fp32 ones
    steps = [(1, 964.66), (16, 4156.86), (128, 4644.76)]
    return {
        "device": "cpu",
        "matmul_tflops": {"fp32": 0.374, "fp16": 0.3467, "bf16": 2.34},
        "memory_bandwidth_gbs": 27.7,
        "launch_overhead_us": 1.79,
        "train_steps": [
            {"model": "simple_cnn", "batch_size": b, "samples_per_s": v, "step_ms": b / v * 1e3} for b, v in steps
        ],
    }


def test_auto_trains_a_cpu_in_fp32_as_its_benchmark_did() -> None:
    # auto took the bf16 matmul rate for whole steps: a CNN at batch 128 read 12,118 samples/s
    # against the 4,645 its own benchmark trained.
    from gpuselect.estimate.api import Assumptions, local_cpu_estimate
    from gpuselect.workloads.presets import PRESETS

    w = PRESETS["gpt2-124m"]
    auto = local_cpu_estimate(w, Assumptions(batch_size=4), cores=2, mhz=None, features=[], bench=_amx_record())
    fp32 = local_cpu_estimate(
        w, Assumptions(batch_size=4, precision="fp32"), cores=2, mhz=None, features=[], bench=_amx_record()
    )
    bf16 = local_cpu_estimate(
        w, Assumptions(batch_size=4, precision="bf16"), cores=2, mhz=None, features=[], bench=_amx_record()
    )
    assert auto.throughput_samples_per_s == fp32.throughput_samples_per_s
    assert ", fp32," in auto.basis
    # asked for, 16 bits are timed as fp32 too (no 16-bit CPU step is measured), and it is said
    assert bf16.throughput_samples_per_s == fp32.throughput_samples_per_s
    assert "16-bit training steps are not measured" in bf16.basis
    # QA 17b: its memory is bf16's (precision_used says fp32 for the time): said, and so counted
    assert "memory is counted in 16 bits" in bf16.basis and "memory" not in fp32.basis
    ram = {"cores": 2, "mhz": None, "features": [], "bench": _amx_record(), "ram_gb": 64.0}
    mem = {p: local_cpu_estimate(w, Assumptions(batch_size=4, precision=p), **ram) for p in ("fp32", "bf16")}
    assert mem["bf16"].precision_used == "fp32" and mem["bf16"].peak_memory_gb < mem["fp32"].peak_memory_gb
    cnn = local_cpu_estimate(
        PRESETS["simple-cnn"],
        Assumptions(batch_size=16, precision="bf16"),
        cores=2,
        mhz=None,
        features=[],
        bench=_amx_record(),
    )
    assert cnn.basis.startswith("measured") and "in fp32" in cnn.basis  # its measured step, said to be fp32


@pytest.mark.parametrize(("batch", "expect"), [(16, 4156.86), (1, 964.66), (128, 4644.76), (8, None), (64, None)])
def test_a_benchmarked_workload_is_measured_at_its_batches_and_interpolated_between_them(batch, expect) -> None:  # type: ignore[no-untyped-def]
    from gpuselect.estimate.api import Assumptions, local_cpu_estimate
    from gpuselect.workloads.presets import PRESETS

    est = local_cpu_estimate(
        PRESETS["simple-cnn"], Assumptions(batch_size=batch), cores=2, mhz=None, features=[], bench=_amx_record()
    )
    thr = est.throughput_samples_per_s
    if expect is not None:
        assert thr == pytest.approx(expect) and f"at batch {batch}" in est.basis
    else:  # between two measured batches: a power law through both, never one of them copied
        lo, hi = (1, 16) if batch < 16 else (16, 128)
        rate = {1: 964.66, 16: 4156.86, 128: 4644.76}
        k = math.log(rate[hi] / rate[lo]) / math.log(hi / lo)
        assert thr == pytest.approx(rate[lo] * (batch / lo) ** k)
        assert "interpolated" in est.basis and min(rate[lo], rate[hi]) < thr < max(rate[lo], rate[hi])
    beyond = local_cpu_estimate(
        PRESETS["simple-cnn"], Assumptions(batch_size=512), cores=2, mhz=None, features=[], bench=_amx_record()
    )
    # past the last measured batch: the step model, anchored to the last measured step (the model
    # alone jumped above it)
    assert beyond.basis.startswith("step-time model") and "scaled to its measured step at batch 128" in beyond.basis
    assert beyond.throughput_samples_per_s < 1.5 * 4644.76


@pytest.mark.parametrize("mode", ["full", "selective"])
def test_a_measured_step_asked_to_checkpoint_pays_the_recompute(mode: str) -> None:
    """The benchmark's steps recompute nothing: a CPU asked to checkpoint is its measured step slowed
    by the model's recompute ratio, and says so (it was the measured step as is)."""
    from gpuselect.estimate.api import Assumptions, local_cpu_estimate
    from gpuselect.workloads.presets import PRESETS

    def est(ck: str | None) -> Any:
        return local_cpu_estimate(
            PRESETS["simple-cnn"],
            Assumptions(batch_size=16, checkpointing=ck),
            cores=2,
            mhz=None,
            features=[],
            bench=_amx_record(),
        )

    plain, none, ck = est(None), est("none"), est(mode)
    assert plain.throughput_samples_per_s == none.throughput_samples_per_s == pytest.approx(4156.86)
    assert plain.measured_step and not ck.measured_step
    assert 0.6 * 4156.86 < ck.throughput_samples_per_s < 0.95 * 4156.86  # a CNN's recompute: about a third more
    assert "without activation checkpointing" in ck.basis and "recompute" in ck.basis


def test_a_benchmarked_workload_past_its_measured_batches_takes_the_anchored_band() -> None:
    """QA 14: past the measured batches the estimate is scaled to the workload's own measured
    step, so a fit that misses the record's other steps (±2,028 %) is not its band."""
    from gpuselect.estimate.api import Assumptions, local_cpu_estimate, regime_band
    from gpuselect.workloads.presets import PRESETS

    rec = json.loads((VAL / "cpu-vm-2026-11-24" / "bench-cpu-2.json").read_text())["devices"][0]

    def est(workload: str, batch: int, r: dict) -> tuple[float, str]:  # type: ignore[type-arg]
        e = local_cpu_estimate(
            PRESETS[workload], Assumptions(batch_size=batch), cores=2, mhz=None, features=[], bench=r
        )
        return e.error_band, e.basis

    quiet = {**rec, "quiet": True}  # as the app marks a record whose own load measure found it quiet
    band, basis = est("simple-cnn", 1024, quiet)
    assert "scaled to its measured step at batch 512" in basis
    assert band == regime_band("cpu_anchored", "NVIDIA") < regime_band("cpu_unsteady", "NVIDIA")
    assert est("gpt2-124m", 8, quiet)[0] == regime_band("cpu_unsteady", "NVIDIA")  # no step of its own
    # a record of unknown load (no measure of its own) or a busy one: its anchors are off too
    assert est("simple-cnn", 1024, rec)[0] == regime_band("cpu_unsteady", "NVIDIA")
    assert est("simple-cnn", 1024, {**rec, "busy": True})[0] == regime_band("cpu_unsteady", "NVIDIA")
