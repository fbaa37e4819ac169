"""Calibration of the step-time model (scripts only: numpy allowed, never imported by the app).

``python -m gpuselect.estimate.fit`` reads /work/shared/data (kernels/, the throughput tables) and
our own benchmark records, fits the few parameters and writes ``data/steptime.json`` plus a log
under docs/validation/."""
