"""Does `gpuselect bench --quick` tell the truth? Compare its CPU fp32 matmul and memory
bandwidth with an independent long run of plain torch (about 30 s), written without the engine.

Rerun:  PYTHONPATH=. python benchmarks/bench_vs_long_run.py [--rounds 3] [--long-s 30]
Each round runs the quick benchmark (CPU only), then the long run; prints both and the
difference. The claim in docs/benchmarks.md is: quick lands within 10 % of the long run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from gpuselect.bench.engine import run_to_completion
from gpuselect.bench.model import BenchConfig


def long_matmul_tflops(n: int, seconds: float) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        torch.mm(a, b)
    rates = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        torch.mm(a, b)
        rates.append(2 * n**3 / (time.perf_counter() - t0) / 1e12)
    return statistics.median(rates)


def long_copy_gbs(nbytes: int, seconds: float, chunks: int = 3) -> float:
    """Median over a few allocations, each copied for a while: page placement moves one
    allocation's rate by a third on a VM, and allocating afresh every few copies (an earlier
    version of this script) made the reference itself drift downwards over a run."""
    rates = []
    for _ in range(chunks):
        x = torch.ones(nbytes // 4)
        y = torch.empty_like(x)
        for _ in range(5):
            y.copy_(x)
        end = time.perf_counter() + seconds / chunks
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            y.copy_(x)
            rates.append(2 * nbytes / (time.perf_counter() - t0) / 1e9)
        del x, y
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--long-s", type=float, default=30.0, help="seconds of the long run (split over both figures)")
    ns = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| round | quick fp32 TFLOP/s | long fp32 TFLOP/s | diff | quick copy GB/s | long copy GB/s | diff | quick wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for rnd in range(1, ns.rounds + 1):
        t0 = time.perf_counter()
        rep = run_to_completion(BenchConfig(quick=True, devices=("cpu",)))
        wall = time.perf_counter() - t0
        cpu = rep.devices[0]
        q_mm = cpu.matmul_tflops["fp32"] or float("nan")
        size = int(cpu.matmul_detail["fp32"].size.split("x")[0])
        q_bw = cpu.memory_bandwidth_gbs or float("nan")
        nbytes = int(float(cpu.bandwidth_detail["copy"].size.split()[0]) * 1024**2)  # "128 MiB per array, ..."
        l_mm = long_matmul_tflops(size, ns.long_s / 2)
        l_bw = long_copy_gbs(nbytes, ns.long_s / 2)
        print(f"| {rnd} | {q_mm:.4f} | {l_mm:.4f} | {100 * (q_mm / l_mm - 1):+.1f} % | {q_bw:.1f} | {l_bw:.1f} | "
              f"{100 * (q_bw / l_bw - 1):+.1f} % | {wall:.1f} |")


if __name__ == "__main__":
    main()
