"""Does page size explain the CPU copy rate's swings? Copy rate of fresh arrays, 4 KiB vs huge pages.

Rerun:  PYTHONPATH=. python benchmarks/cpu_bandwidth_pages.py [--allocations 30] [--mib 128]
For each page policy, allocates a fresh pair of arrays (anonymous mmap, madvise before the first
touch), copies one into the other for 0.5 s and records the median rate; prints the spread over
allocations. Plain Python + torch, independent of the engine. Linux only (madvise).
"""

from __future__ import annotations

import argparse
import mmap
import statistics

import torch
from cpu_copy_age import window  # same directory: run as a script, as the docstring says


def fresh_pair_rate(nbytes: int, advice: int, seconds: float) -> float:
    maps = [mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) for _ in range(2)]
    for m in maps:
        m.madvise(advice)
    x, y = (torch.frombuffer(m, dtype=torch.float32) for m in maps)
    x.fill_(1.0)
    y.fill_(0.0)
    return window(x, y, nbytes, seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--allocations", type=int, default=30)
    ap.add_argument("--mib", type=int, default=128)
    ns = ap.parse_args()
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as fh:
        thp = fh.read().strip()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, THP: {thp}, {ns.mib} MiB per array")
    print("| pages | allocations | min GB/s | median | max | max/min |")
    print("|---|---|---|---|---|---|")
    # Interleave the two policies so a drift of the machine over time hits both alike.
    rates: dict[str, list[float]] = {"4 KiB": [], "huge": []}
    for _ in range(ns.allocations):
        rates["4 KiB"].append(fresh_pair_rate(ns.mib * 1024**2, mmap.MADV_NOHUGEPAGE, 0.5))
        rates["huge"].append(fresh_pair_rate(ns.mib * 1024**2, mmap.MADV_HUGEPAGE, 0.5))
    for label, rs in rates.items():
        print(
            f"| {label} | {len(rs)} | {min(rs):.1f} | {statistics.median(rs):.1f} | {max(rs):.1f} | {max(rs) / min(rs):.2f} |"
        )


if __name__ == "__main__":
    main()
