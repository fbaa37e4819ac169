"""NVIDIA GPUs through NVML. One broken GPU never hides the others; every field that cannot be
read is ``None`` with a reason in ``GpuInfo.unavailable``."""

from __future__ import annotations

import os
from typing import Any

from gpuselect.hardware.nvml_access import (
    ERROR_GPU_IS_LOST,
    NvmlSession,
    Unavailable,
    import_pynvml,
    text,
)
from gpuselect.hardware.types import (
    Clocks,
    EccInfo,
    GpuInfo,
    GpuProcess,
    NvmlStatus,
    PcieLink,
    TemperatureThresholds,
    Utilization,
)

# nvml.h constants used below (stable across NVML versions).
TEMPERATURE_GPU = 0
THRESHOLD_SHUTDOWN, THRESHOLD_SLOWDOWN, THRESHOLD_MEM_MAX, THRESHOLD_GPU_MAX = 0, 1, 2, 3
FI_TEMPERATURE_SHUTDOWN_TLIMIT, FI_TEMPERATURE_SLOWDOWN_TLIMIT = 193, 194
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2
MEMORY_ERROR_TYPE_CORRECTED, MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1
VOLATILE_ECC, AGGREGATE_ECC = 0, 1
RETIRE_CAUSE_MULTIPLE_SBE, RETIRE_CAUSE_DBE = 0, 1

#: nvmlClocksEventReason* bits -> stable names (see health rules for what each means).
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_clock_event_reasons(mask: int) -> list[str]:
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_REASONS)
    if unknown:
        names.append(f"other_0x{unknown:x}")
    return names


def _field_value(entry: Any) -> int | float | None:
    """The number inside an nvmlFieldValue_t, or None if its own return code is an error."""
    if getattr(entry, "nvmlReturn", 0) != 0:
        return None
    value, kind = entry.value, getattr(entry, "valueType", 1)
    attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(kind, "uiVal")
    return getattr(value, attr, None)


class _GpuReader:
    """Fills one GpuInfo; records reasons; flips the state to "lost" on GPU_IS_LOST."""

    def __init__(self, session: NvmlSession, gpu: GpuInfo, handle: Any) -> None:
        self.s, self.gpu, self.h = session, gpu, handle

    def get(self, field: str, fn: str, *args: Any) -> Any:
        return self.take(field, self.s.call(fn, self.h, *args))

    def take(self, field: str, result: Any) -> Any:
        if isinstance(result, Unavailable):
            if result.code == ERROR_GPU_IS_LOST:
                self.gpu.state = "lost"
            self.gpu.unavailable.setdefault(field, result.reason)
            return None
        return result

    def read(self) -> None:
        g = self.gpu
        name = self.get("name", "nvmlDeviceGetName")
        g.name = text(name) if name is not None else None
        if g.state == "lost":
            return
        uuid = self.get("uuid", "nvmlDeviceGetUUID")
        g.uuid = text(uuid) if uuid is not None else None
        pci = self.get("pci_bus_id", "nvmlDeviceGetPciInfo")
        if pci is not None:
            g.pci_bus_id = normalise_bus_id(text(getattr(pci, "busId", "")))
        serial = self.s.call("nvmlDeviceGetSerial", self.h)  # absent on GeForce: not worth a reason
        g.serial = None if isinstance(serial, Unavailable) else text(serial)

        mem = self.get("memory_total_bytes", "nvmlDeviceGetMemoryInfo")
        if mem is not None:
            g.memory_total_bytes, g.memory_used_bytes = int(mem.total), int(mem.used)
        else:
            g.unavailable.setdefault("memory_used_bytes", g.unavailable["memory_total_bytes"])
        cc = self.get("compute_capability", "nvmlDeviceGetCudaComputeCapability")
        if cc is not None:
            g.compute_capability = f"{cc[0]}.{cc[1]}"

        g.temperature_c = self.get("temperature_c", "nvmlDeviceGetTemperature", TEMPERATURE_GPU)
        g.temperature_thresholds = self._thresholds()
        power = self.get("power_draw_w", "nvmlDeviceGetPowerUsage")
        g.power_draw_w = power / 1000.0 if power is not None else None
        limit = self.take(
            "power_limit_w",
            self.s.first(
                ("nvmlDeviceGetEnforcedPowerLimit", (self.h,)), ("nvmlDeviceGetPowerManagementLimit", (self.h,))
            ),
        )
        g.power_limit_w = limit / 1000.0 if limit is not None else None
        default = self.get("power_default_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit")
        g.power_default_limit_w = default / 1000.0 if default is not None else None
        constraints = self.get("power_max_limit_w", "nvmlDeviceGetPowerManagementLimitConstraints")
        g.power_max_limit_w = constraints[1] / 1000.0 if constraints is not None else None
        g.performance_state = self.get("performance_state", "nvmlDeviceGetPerformanceState")
        g.fan_percent = self.get("fan_percent", "nvmlDeviceGetFanSpeed")

        g.clocks = Clocks(
            sm_mhz=self.get("clocks.sm_mhz", "nvmlDeviceGetClockInfo", CLOCK_SM),
            sm_max_mhz=self.get("clocks.sm_max_mhz", "nvmlDeviceGetMaxClockInfo", CLOCK_SM),
            memory_mhz=self.get("clocks.memory_mhz", "nvmlDeviceGetClockInfo", CLOCK_MEM),
            memory_max_mhz=self.get("clocks.memory_max_mhz", "nvmlDeviceGetMaxClockInfo", CLOCK_MEM),
            graphics_mhz=self.get("clocks.graphics_mhz", "nvmlDeviceGetClockInfo", CLOCK_GRAPHICS),
            graphics_max_mhz=self.get("clocks.graphics_max_mhz", "nvmlDeviceGetMaxClockInfo", CLOCK_GRAPHICS),
        )
        g.pcie = PcieLink(
            generation=self.get("pcie.generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
            max_generation=self.get("pcie.max_generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
            gpu_max_generation=self.get("pcie.gpu_max_generation", "nvmlDeviceGetGpuMaxPcieLinkGeneration"),
            width=self.get("pcie.width", "nvmlDeviceGetCurrPcieLinkWidth"),
            max_width=self.get("pcie.max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
            replay_counter=self.get("pcie.replay_counter", "nvmlDeviceGetPcieReplayCounter"),
        )
        util = self.get("utilization", "nvmlDeviceGetUtilizationRates")
        g.utilization = Utilization(int(util.gpu), int(util.memory)) if util is not None else Utilization()
        mask = self.take(
            "clock_event_reasons",
            self.s.first(
                ("nvmlDeviceGetCurrentClocksEventReasons", (self.h,)),
                ("nvmlDeviceGetCurrentClocksThrottleReasons", (self.h,)),
            ),
        )
        g.clock_event_reasons = decode_clock_event_reasons(int(mask)) if mask is not None else None
        g.ecc = self._ecc()
        g.processes = self._processes()

    def _thresholds(self) -> TemperatureThresholds:
        """Field values first (NVIDIA's current API on Ada and newer: relative T.Limit margins),
        then the older absolute call. Where the absolute call is gone but the limit itself is
        known, absolute = limit - margin (exact by definition, checked on an H100)."""
        out = TemperatureThresholds()
        values = self.s.call(
            "nvmlDeviceGetFieldValues", self.h, [FI_TEMPERATURE_SHUTDOWN_TLIMIT, FI_TEMPERATURE_SLOWDOWN_TLIMIT]
        )
        if not isinstance(values, Unavailable):
            shutdown, slowdown = (_field_value(v) for v in list(values)[:2])
            out.shutdown_tlimit_c = int(shutdown) if shutdown is not None else None
            out.slowdown_tlimit_c = int(slowdown) if slowdown is not None else None
        for attr, which in (
            ("shutdown_c", THRESHOLD_SHUTDOWN),
            ("slowdown_c", THRESHOLD_SLOWDOWN),
            ("memory_max_c", THRESHOLD_MEM_MAX),
            ("gpu_max_c", THRESHOLD_GPU_MAX),
        ):
            value = self.get(f"temperature_thresholds.{attr}", "nvmlDeviceGetTemperatureThreshold", which)
            setattr(out, attr, int(value) if value is not None else None)
        if out.gpu_max_c is not None:
            for attr, margin in (("slowdown_c", out.slowdown_tlimit_c), ("shutdown_c", out.shutdown_tlimit_c)):
                if getattr(out, attr) is None and margin is not None:
                    setattr(out, attr, out.gpu_max_c - margin)
                    self.gpu.unavailable.pop(f"temperature_thresholds.{attr}", None)
        margin_now = self.s.call("nvmlDeviceGetMarginTemperature", self.h)
        if isinstance(margin_now, Unavailable):
            self.gpu.unavailable.setdefault("temperature_margin_c", margin_now.reason)
        else:
            self.gpu.temperature_margin_c = int(margin_now)
        return out

    def _ecc(self) -> EccInfo:
        e = EccInfo()
        mode = self.get("ecc.enabled", "nvmlDeviceGetEccMode")
        if mode is not None:
            e.enabled, e.pending_enabled = bool(mode[0]), bool(mode[1])
        if e.enabled is False:
            self.gpu.unavailable["ecc.counters"] = "ECC is disabled on this GPU"
        elif e.enabled or "not supported" not in self.gpu.unavailable.get("ecc.enabled", "not supported"):
            # enabled, or the mode query failed: the counters may still read (4 uncorrectable errors
            # went unreported when nvmlDeviceGetEccMode failed)
            e.uncorrected_volatile = self.get(
                "ecc.uncorrected_volatile", "nvmlDeviceGetTotalEccErrors", MEMORY_ERROR_TYPE_UNCORRECTED, VOLATILE_ECC
            )
            e.uncorrected_aggregate = self.get(
                "ecc.uncorrected_aggregate", "nvmlDeviceGetTotalEccErrors", MEMORY_ERROR_TYPE_UNCORRECTED, AGGREGATE_ECC
            )
            e.corrected_volatile = self.get(
                "ecc.corrected_volatile", "nvmlDeviceGetTotalEccErrors", MEMORY_ERROR_TYPE_CORRECTED, VOLATILE_ECC
            )
        sbe = self.get("ecc.retired_pages_single_bit", "nvmlDeviceGetRetiredPages", RETIRE_CAUSE_MULTIPLE_SBE)
        dbe = self.get("ecc.retired_pages_double_bit", "nvmlDeviceGetRetiredPages", RETIRE_CAUSE_DBE)
        e.retired_pages_single_bit = len(sbe) if sbe is not None else None
        e.retired_pages_double_bit = len(dbe) if dbe is not None else None
        pending = self.get("ecc.retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus")
        e.retired_pages_pending = bool(pending) if pending is not None else None
        rows = self.get("ecc.remapped_rows", "nvmlDeviceGetRemappedRows")  # Ampere and newer
        if rows is not None:
            corr, unc, is_pending, failed = rows
            e.remapped_rows_correctable, e.remapped_rows_uncorrectable = int(corr), int(unc)
            e.remapped_rows_pending, e.remapped_rows_failure = bool(is_pending), bool(failed)
        return e

    def _processes(self) -> list[GpuProcess] | None:
        seen: dict[int, GpuProcess] = {}
        any_ok = False
        for kind, fn in (
            ("compute", "nvmlDeviceGetComputeRunningProcesses"),
            ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
        ):
            procs = self.get(f"processes.{kind}", fn)
            if procs is None:
                continue
            any_ok = True
            for p in procs:
                pid = int(p.pid)
                used = getattr(p, "usedGpuMemory", None)
                # NVML reports "not available" (e.g. under WDDM or without permission) as a huge sentinel.
                used_bytes = int(used) if isinstance(used, int) and used < (1 << 62) else None
                if pid not in seen:
                    seen[pid] = GpuProcess(
                        pid=pid,
                        name=_process_name(self.s, pid),
                        used_memory_bytes=used_bytes,
                        kind=kind,
                        is_self=pid == os.getpid(),
                    )
        if not any_ok:
            return None
        self.gpu.unavailable.pop("processes.compute", None)
        self.gpu.unavailable.pop("processes.graphics", None)
        return sorted(seen.values(), key=lambda p: p.pid)


def _process_name(session: NvmlSession, pid: int) -> str | None:
    try:
        import psutil

        name: str = psutil.Process(pid).name()
        return name
    except Exception:  # noqa: BLE001 - another container's pid, or gone already
        name = session.call("nvmlSystemGetProcessName", pid)
        return None if isinstance(name, Unavailable) else os.path.basename(text(name))


def normalise_bus_id(bus_id: str) -> str:
    """NVML gives "00000000:3B:00.0", torch "0000:3b:00.0": compare as domain:bus:device.fn, lower-case, 4-digit domain."""
    bus_id = bus_id.strip().lower()
    domain, sep, rest = bus_id.partition(":")
    if not sep or rest.count(":") != 1:
        return bus_id
    return f"{int(domain, 16):04x}:{rest}" if domain else bus_id


def _cuda_version(raw: Any) -> str | None:
    if not isinstance(raw, int) or raw <= 0:
        return None
    return f"{raw // 1000}.{(raw % 1000) // 10}"


def detect_nvidia(nvml: Any | None = None) -> tuple[NvmlStatus, list[GpuInfo]]:
    """NVML status and every NVIDIA GPU it lists. ``nvml`` defaults to the real ``pynvml``."""
    if nvml is None:
        imported = import_pynvml()
        if isinstance(imported, Unavailable):
            return NvmlStatus(available=False, error=imported.reason), []
        nvml = imported
    s = NvmlSession(nvml)
    init = s.call("nvmlInit")
    if isinstance(init, Unavailable):
        return NvmlStatus(available=False, error=init.reason, error_code=init.code), []
    try:
        status = NvmlStatus(available=True)
        driver = s.call("nvmlSystemGetDriverVersion")
        status.driver_version = None if isinstance(driver, Unavailable) else text(driver)
        cuda = s.first(("nvmlSystemGetCudaDriverVersion_v2", ()), ("nvmlSystemGetCudaDriverVersion", ()))
        status.cuda_driver_version = None if isinstance(cuda, Unavailable) else _cuda_version(cuda)
        version = s.call("nvmlSystemGetNVMLVersion")
        status.nvml_version = None if isinstance(version, Unavailable) else text(version)
        count = s.call("nvmlDeviceGetCount")
        if isinstance(count, Unavailable):
            status.error = f"cannot count GPUs: {count.reason}"
            return status, []
        gpus: list[GpuInfo] = []
        for index in range(int(count)):
            gpu = GpuInfo(index=index, vendor="NVIDIA", name=None, source="nvml")
            handle = s.call("nvmlDeviceGetHandleByIndex", index)
            if isinstance(handle, Unavailable):
                gpu.state = "lost" if handle.gpu_lost else "error"
                gpu.unavailable["device"] = handle.reason
            else:
                _GpuReader(s, gpu, handle).read()
            gpus.append(gpu)
        return status, gpus
    finally:
        s.call("nvmlShutdown")


class TelemetrySession:
    """One NVML session for a live monitor: initialise once, read many times, shut down once.

    ``read()`` returns fast dynamic readings per GPU UUID. Keys: index, temperature_c,
    power_draw_w, power_limit_w, sm_clock_mhz, memory_clock_mhz, clock_event_reasons,
    utilization_percent, memory_used_bytes, memory_total_bytes, pcie_generation, pcie_width,
    processes. Values may be None; ``{}`` without NVML; never raises. Calls are not concurrent:
    one reader at a time (the monitor samples from one worker).
    """

    def __init__(self, nvml: Any | None = None) -> None:
        self._nvml = nvml
        self._s: NvmlSession | None = None
        self._handles: list[tuple[int, Any, str]] = []  # (index, handle, uuid)
        self.error: str | None = None  # why the session is not open

    @property
    def is_open(self) -> bool:
        return self._s is not None

    def open(self) -> bool:
        if self._s is not None:
            return True
        nvml = self._nvml
        if nvml is None:
            imported = import_pynvml()
            if isinstance(imported, Unavailable):
                self.error = imported.reason
                return False
            nvml = imported
        s = NvmlSession(nvml)
        init = s.call("nvmlInit")
        if isinstance(init, Unavailable):
            self.error = init.reason
            return False
        self._s, self.error = s, None
        self._handles = []
        count = s.call("nvmlDeviceGetCount")
        for index in range(0 if isinstance(count, Unavailable) else int(count)):
            h = s.call("nvmlDeviceGetHandleByIndex", index)
            uuid = None if isinstance(h, Unavailable) else s.call("nvmlDeviceGetUUID", h)
            if uuid is not None and not isinstance(uuid, Unavailable):
                self._handles.append((index, h, text(uuid)))
        return True

    def close(self) -> None:
        if self._s is not None:
            self._s.call("nvmlShutdown")
        self._s, self._handles = None, []

    def __enter__(self) -> TelemetrySession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self) -> dict[str, dict[str, Any]]:
        s = self._s
        if s is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for index, h, uuid in self._handles:

            def val(fn: str, *args: Any, h: Any = h) -> Any:
                r = s.call(fn, h, *args)
                return None if isinstance(r, Unavailable) else r

            power = val("nvmlDeviceGetPowerUsage")
            limit = val("nvmlDeviceGetEnforcedPowerLimit")
            mask = s.first(
                ("nvmlDeviceGetCurrentClocksEventReasons", (h,)), ("nvmlDeviceGetCurrentClocksThrottleReasons", (h,))
            )
            util = val("nvmlDeviceGetUtilizationRates")
            mem = val("nvmlDeviceGetMemoryInfo")
            procs = val("nvmlDeviceGetComputeRunningProcesses")
            out[uuid] = {
                "index": index,
                "temperature_c": val("nvmlDeviceGetTemperature", TEMPERATURE_GPU),
                "power_draw_w": power / 1000.0 if power is not None else None,
                "power_limit_w": limit / 1000.0 if limit is not None else None,
                "sm_clock_mhz": val("nvmlDeviceGetClockInfo", CLOCK_SM),
                "memory_clock_mhz": val("nvmlDeviceGetClockInfo", CLOCK_MEM),
                "clock_event_reasons": None if isinstance(mask, Unavailable) else decode_clock_event_reasons(int(mask)),
                "utilization_percent": int(util.gpu) if util is not None else None,
                "memory_used_bytes": int(mem.used) if mem is not None else None,
                "memory_total_bytes": int(mem.total) if mem is not None else None,
                "pcie_generation": val("nvmlDeviceGetCurrPcieLinkGeneration"),
                "pcie_width": val("nvmlDeviceGetCurrPcieLinkWidth"),
                "processes": len(procs) if procs is not None else None,
            }
        return out


def read_telemetry(nvml: Any | None = None) -> dict[str, dict[str, Any]]:
    """One reading in a session of its own (before/after a benchmark); see :class:`TelemetrySession`."""
    with TelemetrySession(nvml) as session:
        return session.read()
