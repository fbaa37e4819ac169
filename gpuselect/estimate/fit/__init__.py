"""Calibration of the step-time model (scripts only: never imported by the app).

1. ``python -m gpuselect.estimate.fit`` (``__main__.py``, ``kernels.py``, ``steps.py``): the kernel
   and host parameters from /work/shared/data/kernels and our own bench records.
2. ``python benchmarks/estimator_validation.py --fit`` (``throughput.py``): the step factors on
   measured training throughput, leave-one-source-out validation and the app's error bands.
Both write ``gpuselect/estimate/data/`` (read by the app) and logs under docs/validation/."""
