"""An independent reference for the GPU benchmark: plain torch, no gpuselect code.

Rerun on a CUDA machine:  python3 benchmarks/plain_torch_gpu_reference.py
Prints bf16/fp16 8192^3 matmul TFLOP/s (mean of 10 products after 3 warm-ups, and a sustained
5 s run) and a 1 GiB device copy in GB/s (bytes read + written), to set beside `gpuselect bench`.
"""

from __future__ import annotations

import time

import torch


def matmul(dtype: torch.dtype, n: int = 8192) -> tuple[float, float]:
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    short = 10 * 2 * n**3 / (time.perf_counter() - t0) / 1e12
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 5.0:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()
        count += 20
    sustained = count * 2 * n**3 / (time.perf_counter() - t0) / 1e12
    return short, sustained


def copy_gbs(nbytes: int = 1 << 30) -> float:
    x = torch.ones(nbytes // 4, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        y.copy_(x)
    torch.cuda.synchronize()
    return 20 * 2 * nbytes / (time.perf_counter() - t0) / 1e9


if __name__ == "__main__":
    print(torch.__version__, torch.cuda.get_device_name(0))
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        short, sustained = matmul(dt)
        print(f"{name} 8192^3: {short:.1f} TFLOP/s (10 after 3 warm-ups), {sustained:.1f} TFLOP/s sustained 5 s")
    print(f"device copy 1 GiB: {copy_gbs():.1f} GB/s (read + written)")
