"""Dropout's mask on a CPU: torch's bernoulli_ against mul, div_ and a clone, at 1 and 2 threads.

    PYTHONPATH=. python benchmarks/cpu_rng.py > docs/validation/cpu-xeon-2026-11-25/rng.txt

Whether bernoulli_ (float p) spreads over threads as the other elementwise ops do
(perf.CPU_RNG_S_PER_ELEM is its per-element time on one thread), and what a fresh large output
costs against a cache-sized one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch


def seconds(f: Callable[[], object], reps: int = 10) -> float:
    f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def main() -> int:
    for th in (1, 2):
        torch.set_num_threads(th)
        for n in (2_097_152, 8_388_608):
            m, x, y = torch.empty(n), torch.randn(n), torch.randn(n)
            b = seconds(lambda m=m: m.bernoulli_(0.9))
            mu = seconds(lambda x=x, y=y: x * y)
            dv = seconds(lambda m=m: m.div_(0.9))
            cp = seconds(lambda x=x: x.clone())
            print(
                f"threads {th} n {n}: bernoulli_ {b * 1e3:.2f} ms ({b / n * 1e9:.2f} ns/elem)  "
                f"mul {mu * 1e3:.2f} ms ({3 * 4 * n / mu / 1e9:.1f} GB/s)  div_ {dv * 1e3:.2f}  "
                f"clone {cp * 1e3:.2f} ({8 * n / cp / 1e9:.1f} GB/s)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
