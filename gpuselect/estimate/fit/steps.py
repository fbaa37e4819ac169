"""Host-side parameters of the step-time model from our own training-step records (scripts only).

- ``host.dispatch_us``: the host's eager cost per op (Python, dispatcher, autograd, launch) on the
  H100 machine: fitted so the simple-CNN steps at batch 1..512 (docs/validation/h100-2026-11-22)
  match - one parameter for five points that are all host-bound (2.1-2.3 ms whatever the batch).
  ``host.dispatch_per_launch_overhead``: the same divided by that machine's measured bare-op
  launch overhead, so a benchmarked device's dispatch cost is that ratio x its own measurement.
- CPU: ``cpu.conv_factor`` (oneDNN convolutions against the measured fp32 matmul rate) and
  ``cpu.dispatch_per_launch_overhead`` from this VM's own benchmark (docs/validation/cpu-vm-*).

The simple CNN's eager trace is written out by hand here (the kernels torch launches), so the
fit does not depend on the trace builders; tests check it against the FLOP counts.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from gpuselect.estimate.perf import simple_cnn_trace as hand_simple_cnn_trace
from gpuselect.estimate.trace import StepTrace

ROOT = Path(__file__).resolve().parents[3]
H100_BENCH = ROOT / "docs" / "validation" / "h100-2026-11-22" / "bench-full.json"
CPU_BENCHES = sorted((ROOT / "docs" / "validation" / "cpu-vm-2026-11-23").glob("bench-cpu-steptime-*.json"))


def simple_cnn_trace() -> StepTrace:
    """The simple CNN's step as the app sees it: the shipped meta-device trace where there is one,
    else the hand-written eager trace."""
    try:
        from gpuselect.workloads.traces import shipped_trace

        t = shipped_trace("simple-cnn")
    except ImportError:
        t = None
    return t if t is not None else hand_simple_cnn_trace()


def h100_steps(model: str = "simple_cnn") -> list[tuple[int, float]]:
    dev = json.loads(H100_BENCH.read_text())["devices"][0]
    steps = dev["train_steps"]
    if isinstance(steps, str):  # this record stored the list as its repr
        import ast

        steps = ast.literal_eval(steps)
    return [(s["batch_size"], s["step_ms"] / 1e3) for s in steps if s["model"] == model]


def h100_h2d_gbs() -> float:
    """The record's pinned host-to-device rate (the bench's training steps copy from pinned memory)."""
    return float(json.loads(H100_BENCH.read_text())["devices"][0]["host_to_device_gbs"])


def bench_transformer_trace() -> StepTrace:
    """gpuselect bench's "transformer" model: one nn.TransformerEncoderLayer(256, 4 heads, FFN 1024,
    dropout) on 64 random 256-wide vectors per sample, mean-pooled into Linear(256, 10), from the
    analytic transformer builder (no embedding lookup in the bench: the input is a float tensor)."""
    from dataclasses import replace

    from gpuselect.workloads.traces import transformer_trace
    from gpuselect.workloads.transformer import TransformerShape

    shape = TransformerShape(
        layers=1, hidden=256, heads=4, vocab=10, seq_len=64, ffn=1024, lm_head=False, dropout=True, head_outputs=10
    )
    t = transformer_trace(shape, mode="full")
    return replace(t, input_bytes_per_sample=64 * 256 * 4 + 8)


def launch_us() -> float:
    return h100_launch_us()


def h100_launch_us() -> float:
    return float(json.loads(H100_BENCH.read_text())["devices"][0]["launch_overhead_us"])


H100_HOST_BENCH = ROOT / "docs" / "validation" / "h100-2026-11-22" / "bench-quick.json"
H100_HOST_CORES = 16  # detect.json: 16-core Xeon with AMX


def cpu_records(which: str = "fit") -> list[tuple[dict[str, Any], int, str]]:
    """(record, cores, label). ``fit``: the H100 machine's 16-core Xeon (bench-quick.json);
    ``validate``: this 2-core VM's own runs (never used in the fit)."""
    out = []
    paths = [(H100_HOST_BENCH, H100_HOST_CORES)] if which == "fit" else [(p, 2) for p in CPU_BENCHES]
    for path, cores in paths:
        for d in json.loads(path.read_text())["devices"]:
            if d.get("device") == "cpu":
                out.append((d, cores, path.name))
    return out


def fit_dispatch(predict_step: Any) -> tuple[float, float]:
    """The per-op host cost (µs) that best matches the H100 simple-CNN steps, and its median
    absolute log error. ``predict_step(dispatch_us, batch) -> seconds``."""
    obs = h100_steps()
    best = None
    for i in range(200):
        us = 5.0 * 1.03**i
        err = statistics.median(abs(math.log(predict_step(us, b) / t)) for b, t in obs)
        if best is None or err < best[1]:
            best = (us, err)
    if best is None:
        raise RuntimeError("internal error: best is unset")
    return best
