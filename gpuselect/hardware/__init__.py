"""Hardware detection: CPU and RAM (psutil), NVIDIA (NVML), AMD (amdsmi), torch-visible devices.

Entry point: :func:`gpuselect.hardware.snapshot.detect`.
"""
