"""Validate the step-time estimator (and, with --fit, fit its step factors first).

    PYTHONPATH=. python benchmarks/estimator_validation.py --fit

The code lives in gpuselect/estimate/fit/throughput.py with the other fitting scripts; this is the
measurement's entry point. Output: docs/validation/steptime-2026-11-23/ and
gpuselect/estimate/data/steptime_bands.json (see that folder's README).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.estimate.fit.throughput import main

if __name__ == "__main__":
    raise SystemExit(main())
