"""Throughput ratios between GPUs for the same workload, measured against predicted (issue 12).

    PYTHONPATH=. python benchmarks/gpu_ratios.py

The code lives in gpuselect/estimate/fit/ratios.py; output: docs/validation/ratios-2026-11-24/
(summary.txt, ratios.csv).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.estimate.fit.ratios import main

if __name__ == "__main__":
    raise SystemExit(main())
