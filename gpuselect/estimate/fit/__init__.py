"""Calibration of the step-time model (scripts only: never imported by the app).

1. ``python -m gpuselect.estimate.fit`` (``__main__.py``, ``kernels.py``, ``steps.py``): the kernel
   and host parameters from the shared data's kernels/ (``shared_data()``) and our own bench records.
2. ``python benchmarks/estimator_validation.py --fit`` (``throughput.py``): the step factors on
   measured training throughput, leave-one-source-out validation and the app's error bands.
Both write ``gpuselect/estimate/data/`` (read by the app) and logs under docs/validation/."""

import os
from pathlib import Path


def shared_data() -> Path:
    """The project's shared data folder: ``GPUSELECT_SHARED_DATA``, else ``shared/data`` beside the
    repository (where the development machines and CI keep it)."""
    env = os.environ.get("GPUSELECT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[3].parent / "shared" / "data"
