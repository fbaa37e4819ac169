"""Wall time and peak memory of `gpuselect --help`, `detect` and `health` in fresh processes.

Rerun:  PYTHONPATH=. python benchmarks/cli_startup.py [--repeats 7]
Prints a Markdown table (median / min / max wall time, peak RSS of the child process).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [["--help"], ["detect"], ["detect", "--format", "json"], ["health"], ["health", "--format", "json"]]

# A wrapper process runs one command and reports its child's peak RSS (ru_maxrss, KiB on Linux).
WRAPPER = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def measure(args: list[str], repeats: int) -> tuple[list[float], int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times, peak = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", WRAPPER, sys.executable, "-m", "gpuselect", *args],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        times.append(time.perf_counter() - start)
        peak = max(peak, int(out.stdout.strip()))
    return times, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    ns = parser.parse_args()
    print(f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print("(wall time includes the measuring wrapper's own start-up, about one bare Python start)\n")
    print("| command | median s | min s | max s | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for args in COMMANDS:
        times, peak_kib = measure(args, ns.repeats)
        print(
            f"| gpuselect {' '.join(args)} | {statistics.median(times):.3f} | {min(times):.3f} | "
            f"{max(times):.3f} | {peak_kib / 1024:.1f} |"
        )


if __name__ == "__main__":
    main()
