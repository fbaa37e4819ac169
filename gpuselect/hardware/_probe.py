"""Run as ``python -m gpuselect.hardware._probe NAME``: import one framework and print one JSON
line saying what accelerators it sees. Separate process: a broken install cannot take the app down."""

from __future__ import annotations

import json
import sys
from typing import Any


def _torch() -> dict[str, Any]:
    import torch

    devices: list[dict[str, Any]] = []
    cuda_ok = bool(torch.cuda.is_available())
    if cuda_ok:
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            dev: dict[str, Any] = {"index": i, "name": p.name, "total_memory": int(p.total_memory)}
            uuid = getattr(p, "uuid", None)
            if uuid is not None:
                dev["uuid"] = str(uuid)
            if hasattr(p, "pci_bus_id"):
                dev["pci_bus_id"] = (
                    f"{getattr(p, 'pci_domain_id', 0):04x}:{p.pci_bus_id:02x}:{getattr(p, 'pci_device_id', 0):02x}.0"
                )
            dev["capability"] = f"{p.major}.{p.minor}"
            devices.append(dev)
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    xpu = bool(hasattr(torch, "xpu") and torch.xpu.is_available())
    if mps:
        devices.append({"index": 0, "name": "Apple MPS", "kind": "mps"})
    if xpu:
        for i in range(torch.xpu.device_count()):
            devices.append({"index": i, "name": torch.xpu.get_device_name(i), "kind": "xpu"})
    cudnn = torch.backends.cudnn.version() if cuda_ok else None  # type: ignore[no-untyped-call]  # unannotated in torch
    hip = getattr(torch.version, "hip", None)
    return {
        "sees_gpu": cuda_ok or mps or xpu,
        "backends": {"cuda": cuda_ok and not hip, "rocm": cuda_ok and bool(hip), "mps": mps, "xpu": xpu},
        "devices": devices,
        "cudnn": str(cudnn) if cudnn else None,
    }


def _tensorflow() -> dict[str, Any]:
    import tensorflow as tf  # type: ignore[import-not-found, import-untyped, unused-ignore]  # absent, or present without stubs

    gpus = tf.config.list_physical_devices("GPU")
    return {"sees_gpu": bool(gpus), "backends": {"gpu": bool(gpus)}, "devices": [{"name": g.name} for g in gpus]}


def _jax() -> dict[str, Any]:
    import jax  # type: ignore[import-not-found]

    devs = [d for d in jax.devices() if d.platform != "cpu"]
    return {
        "sees_gpu": bool(devs),
        "backends": {d.platform: True for d in devs},
        "devices": [{"name": getattr(d, "device_kind", str(d))} for d in devs],
    }


def main(name: str) -> int:
    probes = {"torch": _torch, "tensorflow": _tensorflow, "jax": _jax}
    if name not in probes:
        print(json.dumps({"error": f"unknown framework {name!r}"}))
        return 2
    print(json.dumps(probes[name]()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
