"""How fast this CPU multiplies the matrices a small model's training step multiplies, against the
large square the benchmark times (gpuselect bench: `matmul_tflops.fp32`).

    PYTHONPATH=. python benchmarks/cpu_gemm_shapes.py [--out OUT.txt] [--threads N]

Every GEMM of the bench transformer's step (one nn.TransformerEncoderLayer(256, 4 heads, FFN 1024)
on 64 tokens, batch 1 / 16 / 128: forward, the input gradient and the weight gradient, as
torch.nn.functional.linear runs them) and a sweep of the reduction length K at M = 8,192 rows, each
timed for ~0.3 s after a warm-up, in fp32 with torch's own thread count. Prints GFLOP/s and the
share of the large square's rate, with the M, N, K the step model sees (rows, output columns,
reduction), so a shape dependence (small K, few rows) can be read off and fitted.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch


def rate(m: int, n: int, k: int, *, trans_a: bool = False, trans_b: bool = False, seconds: float = 0.3) -> float:
    """GFLOP/s of C[m, n] = A[m, k] @ B[k, n], A or B stored transposed as autograd hands them."""
    a = torch.randn(k, m).t() if trans_a else torch.randn(m, k)
    b = torch.randn(n, k).t() if trans_b else torch.randn(k, n)
    for _ in range(3):
        a @ b
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or reps < 3:
        a @ b
        reps += 1
    dt = (time.perf_counter() - t0) / reps
    return 2.0 * m * n * k / dt / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    lines = [
        "# CPU fp32 GEMM rate by shape (benchmarks/cpu_gemm_shapes.py)",
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, load before {os.getloadavg()[0]:.2f}",
    ]
    ref = max(rate(2048, 2048, 2048) for _ in range(2))
    lines.append(f"large square 2048^3: {ref:.1f} GFLOP/s (the reference: share = rate / this)")
    lines.append(f"{'what':<34} {'M':>7} {'N':>6} {'K':>6} {'GFLOP/s':>9} {'share':>6}")

    def row(what: str, m: int, n: int, k: int, **kw: bool) -> None:
        g = rate(m, n, k, **kw)
        lines.append(f"{what:<34} {m:>7} {n:>6} {k:>6} {g:9.1f} {g / ref:6.2f}")

    layers = (("in_proj", 256, 768), ("out_proj", 256, 256), ("linear1", 256, 1024), ("linear2", 1024, 256))
    for batch in (1, 16, 128):
        tokens = 64 * batch
        for name, fan_in, fan_out in layers:
            row(f"b{batch} {name} forward", tokens, fan_out, fan_in, trans_b=True)
            row(f"b{batch} {name} input grad", tokens, fan_in, fan_out)
            row(f"b{batch} {name} weight grad", fan_out, fan_in, tokens, trans_a=True)
    for k in (16, 32, 64, 128, 256, 512, 1024, 2048):
        row("K sweep (M 8192, N 1024)", 8192, 1024, k)
    for m in (64, 256, 1024, 4096, 16384):
        row("M sweep (N 1024, K 1024)", m, 1024, 1024)
    lines.append(f"load after {os.getloadavg()[0]:.2f}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
