"""How long does estimating a workload on the whole catalog take?

Rerun:  PYTHONPATH=. python benchmarks/estimate_speed.py
Times `estimate()` (every catalog GPU at 1, 2, 4 and 8 GPUs, plus the recommendation) for a few
presets after the catalog and the fitted calibration are loaded, and times those two steps.
"""

from __future__ import annotations

import statistics
import time

from gpuselect.catalog import load_catalog
from gpuselect.estimate.api import Assumptions, estimate
from gpuselect.estimate.perf import PerfModel
from gpuselect.workloads.presets import PRESETS


def main() -> None:
    t0 = time.perf_counter()
    catalog = load_catalog(use_overlay=False)
    t1 = time.perf_counter()
    perf = PerfModel.from_json()
    t2 = time.perf_counter()
    print(f"catalog load {1000 * (t1 - t0):.1f} ms; calibration load {1000 * (t2 - t1):.1f} ms")
    for wid in ("simple-cnn", "resnet50", "gpt2-124m", "llama-8b-qlora", "llama-70b-full"):
        times = []
        for _ in range(7):
            s = time.perf_counter()
            result = estimate(PRESETS[wid], Assumptions(), catalog, perf)
            times.append(1000 * (time.perf_counter() - s))
        print(f"{wid:16s} {len(result.rows)} rows: median {statistics.median(times):.1f} ms (min {min(times):.1f}, max {max(times):.1f})")


if __name__ == "__main__":
    main()
