"""Where a CPU training step of `gpuselect bench`'s models goes, by op class, against the step model.

    PYTHONPATH=. python benchmarks/cpu_step_profile.py [--batches 1,16,128] [--bench BENCH.json] [--out OUT.txt]

Trains the bench's own models (gpuselect/bench/engine.py `_make_model`: the simple CNN and the
one-layer transformer) with the bench's SGD with momentum, 2 warm-up steps then timed steps for
about 2 s per batch, then 3 steps under torch.profiler. Each aten op's self CPU time is put in a
class: GEMM (mm, addmm, bmm, linear), convolution (oneDNN/mkldnn and aten convolutions), and the
rest (elementwise, norms, reductions, dropout, copies, the loss, the optimizer).

Set beside the step model for the same device (gpuselect.estimate.perf: `cpu_device` at the
record's measured matmul and copy rates, unfitted, and the trace `bench_trace` uses): its time per
class at each batch. The ratio measured/model per class says which of the device's rates the
training step does not reach on this CPU. With ``--bench`` the record's rates are used; without,
a fresh `gpuselect bench --quick` of the CPU is run first (about 10 s).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GEMM = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear", "aten::matmul"}


def op_class(name: str) -> str:
    if name in GEMM:
        return "gemm"
    if "conv" in name or "mkldnn" in name:
        return "conv"
    return "other"


def measure(model_name: str, batches: list[int]) -> list[dict[str, Any]]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from gpuselect.bench.engine import _make_model, _SgdMomentum

    torch.manual_seed(0)
    model, make_batch, loss_fn = _make_model(torch, model_name)
    opt = _SgdMomentum(torch, model.parameters(), lr=0.01, momentum=0.9)
    out = []
    for bs in batches:
        x, y = make_batch(bs)

        def step(x: Any = x, y: Any = y) -> None:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        step()
        step()
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 2.0 or n < 3:
            step()
            n += 1
        wall = (time.perf_counter() - t0) / n
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                step()
        per: dict[str, float] = defaultdict(float)
        calls: dict[str, int] = defaultdict(int)
        top: dict[str, float] = defaultdict(float)
        for ev in prof.key_averages():
            if not ev.key.startswith("aten::"):
                continue
            cls = op_class(ev.key)
            per[cls] += ev.self_cpu_time_total / 3 / 1e6
            calls[cls] += ev.count // 3
            top[ev.key] += ev.self_cpu_time_total / 3 / 1e6
        out.append(
            {
                "model": model_name,
                "batch": bs,
                "step_s": wall,
                "profiled_s": dict(per),
                "calls": dict(calls),
                "top": sorted(top.items(), key=lambda kv: -kv[1])[:8],
            }
        )
        print(f"{model_name} batch {bs}: {wall * 1e3:.2f} ms a step", file=sys.stderr, flush=True)
    return out


def model_times(rec: dict[str, Any], model_name: str, batch: int, cores: int) -> dict[str, float]:
    from gpuselect.estimate.perf import _cpu_rng_seconds, bench_trace, cpu_device
    from gpuselect.estimate.roofline import op_time
    from gpuselect.estimate.trace import OpKind

    d = cpu_device(rec, cores=cores, fit_steps=False)
    per: dict[str, float] = defaultdict(float)
    for op in bench_trace(model_name, cpu=True).ops:
        cls = {OpKind.GEMM: "gemm", OpKind.CONV: "conv"}.get(op.kind, "other")
        per[cls] += op_time(d, op, batch, "fp32")[0] * op.count
    per["host"] = d.dispatch_s * sum(o.count for o in bench_trace(model_name, cpu=True).ops if o.host_dispatch)
    # dropout's mask draws (one thread), which the step model adds to the other ops' time
    per["other"] += _cpu_rng_seconds(bench_trace(model_name, cpu=True), batch)
    return dict(per)


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--batches", default="1,16,128")
    ap.add_argument("--bench", help="a `gpuselect bench --format json` record of this CPU")
    ap.add_argument("--out")
    a = ap.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    if a.bench:
        doc = json.loads(Path(a.bench).read_text())
    else:
        import subprocess

        got = subprocess.run(
            [sys.executable, "-m", "gpuselect", "bench", "--quick", "--device", "cpu", "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        doc = json.loads(got.stdout)
    rec = next(d for d in doc["devices"] if d.get("kind") == "cpu")
    import torch

    cores = torch.get_num_threads()
    lines = [
        "# CPU training steps by op class against the step model (benchmarks/cpu_step_profile.py)",
        f"torch {torch.__version__}, {cores} threads, load before {os.getloadavg()[0]:.2f}",
        f"record: fp32 matmul {rec['matmul_tflops']['fp32']} TFLOP/s, copy {rec['memory_bandwidth_gbs']} GB/s, "
        f"launch {rec.get('launch_overhead_us')} us",
        "ms per step; 'model' = the step model at the record's measured rates, unfitted (host = per-op cost x ops; "
        "other includes dropout's mask draws)",
        f"{'model':<12} {'batch':>5} {'step':>9} | {'gemm':>8} {'conv':>8} {'other':>8} | "
        f"{'m.gemm':>8} {'m.conv':>8} {'m.other':>8} {'m.host':>8} | x gemm  x other",
    ]
    for name in ("simple_cnn", "transformer"):
        for m in measure(name, batches):
            p, mt = m["profiled_s"], model_times(rec, name, m["batch"], cores)

            def ratio(k: str, p: dict[str, float] = p, mt: dict[str, float] = mt) -> str:
                return f"{p.get(k, 0) / mt[k]:6.1f}" if mt.get(k) else "     -"

            lines.append(
                f"{name:<12} {m['batch']:>5} {m['step_s'] * 1e3:9.2f} | "
                + " ".join(f"{p.get(k, 0) * 1e3:8.2f}" for k in ("gemm", "conv", "other"))
                + " | "
                + " ".join(f"{mt.get(k, 0) * 1e3:8.2f}" for k in ("gemm", "conv", "other", "host"))
                + f" | {ratio('gemm')} {ratio('other')}"
            )
            lines.append("    top ops: " + ", ".join(f"{k[6:]} {v * 1e3:.1f}" for k, v in m["top"]))
    lines.append(f"load after {os.getloadavg()[0]:.2f}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
