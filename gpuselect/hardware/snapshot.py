"""One call that detects everything: ``detect()`` -> :class:`Snapshot`.

Order and isolation: CPU/RAM (psutil), NVIDIA (NVML), AMD (amdsmi), frameworks (metadata), and
— when asked, or when a GPU was found — a framework probe in a subprocess whose torch devices are
matched to NVML's by UUID or PCI bus id (never by index: CUDA_VISIBLE_DEVICES reorders them).
A failing backend becomes a status with a reason; it never hides the others.
"""

from __future__ import annotations

import datetime as dt
import platform
import socket
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gpuselect.hardware.amd import detect_amd
from gpuselect.hardware.cpu import detect_cpu, detect_memory
from gpuselect.hardware.frameworks import apply_probe, probe_framework, static_frameworks
from gpuselect.hardware.nvidia import detect_nvidia, normalise_bus_id
from gpuselect.hardware.types import GpuInfo, Snapshot

Prober = Callable[[str], dict[str, object]]


def _uuid_key(uuid: str | None) -> str | None:
    if not uuid:
        return None
    u = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if u.startswith(prefix):
            u = u[len(prefix) :]
    return u


def merge_torch_devices(gpus: list[GpuInfo], torch_devices: list[dict[str, Any]]) -> list[GpuInfo]:
    """Attach torch indices to known GPUs (UUID, else PCI bus id); add GPUs only torch sees."""
    by_uuid = {_uuid_key(g.uuid): g for g in gpus if g.uuid}
    by_bus = {normalise_bus_id(g.pci_bus_id): g for g in gpus if g.pci_bus_id}
    extra: list[GpuInfo] = []
    for dev in torch_devices:
        kind = str(dev.get("kind", "cuda"))
        match = None
        if kind == "cuda":
            match = by_uuid.get(_uuid_key(str(dev.get("uuid") or ""))) or by_bus.get(
                normalise_bus_id(str(dev.get("pci_bus_id") or ""))
            )
        if match is not None:
            match.torch_index = int(dev.get("index", 0))
            continue
        vendor = {"mps": "Apple", "xpu": "Intel"}.get(kind, "NVIDIA" if kind == "cuda" else "unknown")
        total = dev.get("total_memory")
        gpu = GpuInfo(
            index=len(gpus) + len(extra),
            vendor=vendor,
            name=str(dev.get("name")) if dev.get("name") else None,
            source="torch",
            uuid=str(dev["uuid"]) if dev.get("uuid") else None,
            pci_bus_id=str(dev["pci_bus_id"]) if dev.get("pci_bus_id") else None,
            memory_total_bytes=int(total) if isinstance(total, int) else None,
            compute_capability=str(dev["capability"]) if dev.get("capability") else None,
            torch_index=int(dev.get("index", 0)),
        )
        gpu.unavailable["telemetry"] = "seen only through torch: no driver-level readings (NVML/amdsmi)"
        extra.append(gpu)
    return gpus + extra


def detect(
    *,
    probe: bool | None = None,
    nvml: Any | None = None,
    amdsmi: Any | None = None,
    prober: Prober = probe_framework,
) -> Snapshot:
    """Detect this machine. ``probe=None`` probes frameworks only when a GPU was found (or on
    macOS, where MPS has no driver-level API); True/False force it."""
    start = time.perf_counter()
    cpu = detect_cpu()
    memory = detect_memory()
    nvml_status, gpus = detect_nvidia(nvml)
    amd_status, amd_gpus = detect_amd(amdsmi)
    for g in amd_gpus:
        g.index = len(gpus)
        gpus.append(g)
    torch, frameworks = static_frameworks()
    if probe is None:
        probe = bool(gpus) or sys.platform == "darwin"
    if probe:
        installed = [info for info in frameworks if info.installed]
        # Each probe is its own process; running them side by side costs the slowest, not the sum.
        with ThreadPoolExecutor(max_workers=max(1, len(installed))) as pool:
            results = list(pool.map(lambda info: prober(info.name), installed))
        for info, result in zip(installed, results, strict=True):
            apply_probe(info, result)
            devices = result.get("devices")
            if info.name == "torch" and isinstance(devices, list):
                gpus = merge_torch_devices(gpus, [d for d in devices if isinstance(d, dict)])
    return Snapshot(
        taken_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        host=socket.gethostname(),
        os=f"{platform.system()} {platform.release()}".strip(),
        python=platform.python_version(),
        cpu=cpu,
        memory=memory,
        nvml=nvml_status,
        amd=amd_status,
        torch=torch,
        frameworks=frameworks,
        gpus=gpus,
        detection_s=round(time.perf_counter() - start, 4),
    )
