"""Print raw NVML and torch readings beside gpuselect's, to validate detection on a real GPU.

Run on a machine with an NVIDIA GPU:  PYTHONPATH=. python3 scripts/nvml_raw_readings.py
It shows both temperature-threshold APIs (field values and the older threshold call), the raw
clock-event mask, and torch's device UUID / PCI id formats that detection matches against NVML.
"""

from __future__ import annotations

import json

import pynvml


def main() -> None:
    pynvml.nvmlInit()
    out: dict[str, object] = {
        "driver": pynvml.nvmlSystemGetDriverVersion(),
        "cuda": pynvml.nvmlSystemGetCudaDriverVersion_v2(),
    }
    gpus = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        g: dict[str, object] = {"name": pynvml.nvmlDeviceGetName(h), "uuid": pynvml.nvmlDeviceGetUUID(h)}
        g["busId_raw"] = repr(pynvml.nvmlDeviceGetPciInfo(h).busId)
        thresholds = {}
        for name, code in (("shutdown", 0), ("slowdown", 1), ("mem_max", 2), ("gpu_max", 3)):
            try:
                thresholds[name] = pynvml.nvmlDeviceGetTemperatureThreshold(h, code)
            except pynvml.NVMLError as exc:
                thresholds[name] = f"error {exc.value}"
        g["threshold_call"] = thresholds
        fields = {}
        try:
            ids = [193, 194, 195, 196]
            for fid, v in zip(ids, pynvml.nvmlDeviceGetFieldValues(h, ids), strict=True):
                fields[fid] = {"ret": v.nvmlReturn, "type": v.valueType, "si": v.value.siVal, "ui": v.value.uiVal}
        except pynvml.NVMLError as exc:
            fields = {"error": exc.value}
        g["tlimit_fields"] = fields
        for fn in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            try:
                g[fn] = hex(getattr(pynvml, fn)(h))
            except pynvml.NVMLError as exc:
                g[fn] = f"error {exc.value}"
        try:
            g["remapped_rows"] = pynvml.nvmlDeviceGetRemappedRows(h)
        except pynvml.NVMLError as exc:
            g["remapped_rows"] = f"error {exc.value}"
        gpus.append(g)
    out["gpus"] = gpus
    pynvml.nvmlShutdown()
    try:
        import torch

        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            out["torch"] = {
                "version": torch.__version__,
                "cuda": torch.version.cuda,
                "uuid_str": str(getattr(p, "uuid", None)),
                "pci": [getattr(p, a, None) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")],
            }
    except Exception as exc:  # noqa: BLE001
        out["torch"] = f"error {exc}"
    print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
