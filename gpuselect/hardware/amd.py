"""AMD GPUs through ROCm's ``amdsmi`` (optional extra). Without ROCm, importing amdsmi raises
(often ``KeyError``) and prints to stdout; both are contained here so stdout stays clean."""

from __future__ import annotations

import contextlib
import io
from typing import Any

from gpuselect.hardware.types import BackendStatus, GpuInfo


def _import_amdsmi() -> Any:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        import amdsmi  # type: ignore[import-not-found]
    return amdsmi


def detect_amd(amdsmi: Any | None = None) -> tuple[BackendStatus, list[GpuInfo]]:
    if amdsmi is None:
        try:
            amdsmi = _import_amdsmi()
        except ModuleNotFoundError:
            return BackendStatus("amdsmi", False, error="amdsmi is not installed (optional extra 'amd')"), []
        except Exception as exc:  # noqa: BLE001 - KeyError without ROCm, OSError for the library
            return BackendStatus("amdsmi", False, error=f"amdsmi cannot load ROCm ({type(exc).__name__}: {exc})"), []
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            amdsmi.amdsmi_init()
    except Exception as exc:  # noqa: BLE001
        return BackendStatus("amdsmi", False, error=f"amdsmi_init failed: {exc}"), []
    status = BackendStatus("amdsmi", True)
    gpus: list[GpuInfo] = []
    try:
        handles = amdsmi.amdsmi_get_processor_handles()
        for index, h in enumerate(handles):
            gpu = GpuInfo(index=index, vendor="AMD", name=None, source="amdsmi")

            def get(field: str, fn: str, *args: Any, h: Any = h, gpu: GpuInfo = gpu) -> Any:
                try:
                    with contextlib.redirect_stdout(sink):
                        return getattr(amdsmi, fn)(h, *args)
                except Exception as exc:  # noqa: BLE001 - one field failing never hides the GPU
                    gpu.unavailable[field] = f"{fn} failed: {exc}"
                    return None

            asic = get("name", "amdsmi_get_gpu_asic_info")
            if isinstance(asic, dict):
                gpu.name = asic.get("market_name") or None
            gpu.pci_bus_id = get("pci_bus_id", "amdsmi_get_gpu_device_bdf")
            gpu.uuid = get("uuid", "amdsmi_get_gpu_device_uuid")
            vram = get("memory_total_bytes", "amdsmi_get_gpu_vram_usage")
            if isinstance(vram, dict):  # MB in current amdsmi
                total, used = vram.get("vram_total"), vram.get("vram_used")
                gpu.memory_total_bytes = int(total) * 1024 * 1024 if isinstance(total, int) else None
                gpu.memory_used_bytes = int(used) * 1024 * 1024 if isinstance(used, int) else None
            power = get("power_draw_w", "amdsmi_get_power_info")
            if isinstance(power, dict):
                # average_socket_power is "N/A" on MI300 (it is Navi's and MI200's): the first number
                draw = next(
                    (
                        v
                        for v in (power.get("average_socket_power"), power.get("current_socket_power"))
                        if isinstance(v, (int, float)) and not isinstance(v, bool)
                    ),
                    None,
                )
                gpu.power_draw_w = float(draw) if draw is not None else None
                cap = power.get("power_limit")
                if isinstance(cap, (int, float)) and not isinstance(cap, bool) and cap > 0:
                    # watts in amdsmi 6.4-7.1 ("in W"); older releases gave microwatts
                    gpu.power_limit_w = float(cap) / 1e6 if cap > 10_000 else float(cap)
            for field in ("temperature_c", "power_limit_w", "clocks", "pcie", "ecc", "processes"):
                if getattr(gpu, field, None) is None:
                    gpu.unavailable.setdefault(field, "not read through amdsmi yet")
            gpus.append(gpu)
    except Exception as exc:  # noqa: BLE001
        status.error = f"amdsmi failed while listing GPUs: {exc}"
    finally:
        with contextlib.suppress(Exception), contextlib.redirect_stdout(sink):
            amdsmi.amdsmi_shut_down()
    return status, gpus
