"""How long does loading and validating the whole GPU catalog take?

Rerun:  PYTHONPATH=. python benchmarks/catalog_load.py [--repeats 10]
Each repeat runs in a fresh interpreter (cold: no cache, files read and every entry validated)
and times `load_catalog()` alone, after its imports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = (
    "import time\nfrom gpuselect.catalog import load_catalog\n"
    "t = time.perf_counter(); c = load_catalog(use_overlay=False); dt = time.perf_counter() - t\n"
    "print(dt, len(c.entries), len(c.problems))\n"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=10)
    ns = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(ns.repeats):
        out = subprocess.run(
            [sys.executable, "-c", CODE], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        times.append(float(out[0]) * 1000)
        entries, problems = out[1], out[2]
    print(
        f"{entries} entries, {problems} problems; cold load + validation: median {statistics.median(times):.1f} ms, "
        f"min {min(times):.1f} ms, max {max(times):.1f} ms over {ns.repeats} fresh interpreters"
    )


if __name__ == "__main__":
    main()
