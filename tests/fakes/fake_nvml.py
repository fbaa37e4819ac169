"""A scenario-driven fake of the ``pynvml`` module (the binding boundary).

It exposes the same function names as nvidia-ml-py and raises the binding's *real* exception
classes (``pynvml.NVMLError(code)`` maps codes to subclasses), so gpuselect's real mapping code
runs unchanged. Constants come from the real module.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml as _real

GIB = 1024**3
NOT_SUPPORTED = _real.NVML_ERROR_NOT_SUPPORTED
GPU_IS_LOST = _real.NVML_ERROR_GPU_IS_LOST
FUNCTION_NOT_FOUND = _real.NVML_ERROR_FUNCTION_NOT_FOUND


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-11111111-2222-3333-4444-555555555555"
    bus_id: str = "00000000:3B:00.0"
    serial: str = "1650123456789"
    memory_total: int = 80 * GIB
    memory_used: int = 1 * GIB
    cc: tuple[int, int] = (9, 0)
    temperature: int = 40
    thresholds: dict[int, int] = field(default_factory=lambda: {0: 92, 1: 89, 2: 95, 3: 87})
    # NVML_FI_DEV_TEMPERATURE_*_TLIMIT field values: T.Limit margins (relative), as an H100 with
    # driver 580 reported them (shutdown -8, slowdown -2). None: the field call is unsupported.
    field_thresholds: dict[int, int] | None = field(default_factory=lambda: {193: -8, 194: -2})
    margin: int | None = None  # T.Limit margin now; None: derived from the GPU-max threshold
    power_mw: int = 70_000
    enforced_limit_mw: int = 700_000
    default_limit_mw: int = 700_000
    constraints_mw: tuple[int, int] = (200_000, 700_000)
    pstate: int = 0
    fan: int | None = None  # None: not supported (datacenter cards have no fan)
    clocks: dict[int, int] = field(default_factory=lambda: {0: 1980, 1: 1980, 2: 2619})
    max_clocks: dict[int, int] = field(default_factory=lambda: {0: 1980, 1: 1980, 2: 2619})
    pcie_gen: int = 5
    pcie_max_gen: int = 5
    gpu_max_gen: int = 5
    pcie_width: int = 16
    pcie_max_width: int = 16
    replay: int = 0
    util: tuple[int, int] = (0, 0)
    event_reasons: int = 0x1  # gpu_idle
    ecc_mode: tuple[int, int] | None = (1, 1)
    ecc_counts: dict[tuple[int, int], int] = field(default_factory=dict)  # (error type, counter type) -> count
    retired: dict[int, list[int]] | None = field(default_factory=lambda: {0: [], 1: []})
    retired_pending: int = 0
    remapped: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    processes: list[tuple[int, int]] = field(default_factory=list)  # (pid, bytes)
    lost: bool = False  # the handle opens, every query then says GPU_IS_LOST
    handle_error: int | None = None  # nvmlDeviceGetHandleByIndex fails with this code
    errors: dict[str, int] = field(default_factory=dict)  # function name -> NVML error code
    missing: set[str] = field(default_factory=set)  # functions the binding lacks (old nvidia-ml-py)


def _raise(code: int) -> None:
    raise _real.NVMLError(code)


class FakeNVML:
    """Stands in for the ``pynvml`` module."""

    NVMLError = _real.NVMLError

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        init_error: int | None = None,
        driver: str = "550.54.15",
        cuda: int = 12040,
        everything_unsupported: bool = False,
        animate: bool = False,
    ) -> None:
        self.gpus = [copy.deepcopy(g) for g in (gpus if gpus is not None else [FakeGpu()])]
        self.init_error = init_error
        self.driver = driver
        self.cuda = cuda
        self.everything_unsupported = everything_unsupported
        # animate: utilisation, temperature, power and SM clock drift with wall time (a live
        # monitor has moving curves); off by default so detection stays deterministic in tests.
        self.animate = animate
        self._t0 = time.monotonic()
        self.initialised = 0
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("nvml"):
            raise AttributeError(name)  # a function this fake (binding) does not provide
        return getattr(_real, name)

    # --- system -------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            _raise(self.init_error)
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.cuda

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def nvmlSystemGetNVMLVersion(self) -> str:
        return "12." + self.driver

    def nvmlSystemGetProcessName(self, pid: int) -> bytes:
        return f"/usr/bin/proc{pid}".encode()

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        gpu = self.gpus[index]
        if gpu.handle_error is not None:
            _raise(gpu.handle_error)
        return gpu

    def _wave(self, h: FakeGpu, base: float, amplitude: float, period_s: float = 120.0) -> float:
        """``base`` when not animated, else ``base`` plus a slow per-GPU-phased sine."""
        if not self.animate:
            return base
        index = next(i for i, g in enumerate(self.gpus) if g is h)
        phase = 2 * math.pi * ((time.monotonic() - self._t0) / period_s + index / max(len(self.gpus), 1))
        return base + amplitude * math.sin(phase)

    # --- per device: each goes through _q, which applies the scenario's failures ---------
    def _q(self, name: str, gpu: FakeGpu) -> None:
        self.calls.append(name)
        if name in gpu.missing:
            raise AttributeError(name)
        if gpu.lost:
            _raise(GPU_IS_LOST)
        if self.everything_unsupported:
            _raise(NOT_SUPPORTED)
        if name in gpu.errors:
            _raise(gpu.errors[name])

    def nvmlDeviceGetName(self, h: FakeGpu) -> str:
        self._q("nvmlDeviceGetName", h)
        return h.name

    def nvmlDeviceGetUUID(self, h: FakeGpu) -> str:
        self._q("nvmlDeviceGetUUID", h)
        return h.uuid

    def nvmlDeviceGetSerial(self, h: FakeGpu) -> str:
        self._q("nvmlDeviceGetSerial", h)
        return h.serial

    def nvmlDeviceGetPciInfo(self, h: FakeGpu) -> SimpleNamespace:
        self._q("nvmlDeviceGetPciInfo", h)
        return SimpleNamespace(busId=h.bus_id.encode())  # older bindings return bytes

    def nvmlDeviceGetMemoryInfo(self, h: FakeGpu) -> SimpleNamespace:
        self._q("nvmlDeviceGetMemoryInfo", h)
        return SimpleNamespace(total=h.memory_total, used=h.memory_used, free=h.memory_total - h.memory_used)

    def nvmlDeviceGetCudaComputeCapability(self, h: FakeGpu) -> tuple[int, int]:
        self._q("nvmlDeviceGetCudaComputeCapability", h)
        return h.cc

    def nvmlDeviceGetTemperature(self, h: FakeGpu, sensor: int) -> int:
        self._q("nvmlDeviceGetTemperature", h)
        return round(self._wave(h, h.temperature, 6.0))

    def nvmlDeviceGetTemperatureThreshold(self, h: FakeGpu, which: int) -> int:
        self._q("nvmlDeviceGetTemperatureThreshold", h)
        if which not in h.thresholds:
            _raise(NOT_SUPPORTED)
        return h.thresholds[which]

    def nvmlDeviceGetFieldValues(self, h: FakeGpu, ids: list[int]) -> list[SimpleNamespace]:
        self._q("nvmlDeviceGetFieldValues", h)
        if h.field_thresholds is None:
            _raise(NOT_SUPPORTED)
        out = []
        for fid in ids:
            if fid in h.field_thresholds:
                out.append(
                    SimpleNamespace(nvmlReturn=0, valueType=5, value=SimpleNamespace(siVal=h.field_thresholds[fid]))
                )
            else:
                out.append(SimpleNamespace(nvmlReturn=NOT_SUPPORTED, valueType=5, value=SimpleNamespace(siVal=0)))
        return out

    def nvmlDeviceGetMarginTemperature(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetMarginTemperature", h)
        if h.margin is not None:
            return h.margin
        if 3 not in h.thresholds:
            _raise(NOT_SUPPORTED)
        return h.thresholds[3] - h.temperature

    def nvmlDeviceGetPowerUsage(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetPowerUsage", h)
        return round(min(self._wave(h, h.power_mw, 0.08 * h.enforced_limit_mw), h.enforced_limit_mw))

    def nvmlDeviceGetEnforcedPowerLimit(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetEnforcedPowerLimit", h)
        return h.enforced_limit_mw

    def nvmlDeviceGetPowerManagementLimit(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetPowerManagementLimit", h)
        return h.enforced_limit_mw

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetPowerManagementDefaultLimit", h)
        return h.default_limit_mw

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: FakeGpu) -> tuple[int, int]:
        self._q("nvmlDeviceGetPowerManagementLimitConstraints", h)
        return h.constraints_mw

    def nvmlDeviceGetPerformanceState(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetPerformanceState", h)
        return h.pstate

    def nvmlDeviceGetFanSpeed(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetFanSpeed", h)
        if h.fan is None:
            _raise(NOT_SUPPORTED)
        return h.fan

    def nvmlDeviceGetClockInfo(self, h: FakeGpu, kind: int) -> int:
        self._q("nvmlDeviceGetClockInfo", h)
        if kind == 1:  # CLOCK_SM
            return round(min(self._wave(h, h.clocks[kind], 0.05 * h.max_clocks[kind]), h.max_clocks[kind]))
        return h.clocks[kind]

    def nvmlDeviceGetMaxClockInfo(self, h: FakeGpu, kind: int) -> int:
        self._q("nvmlDeviceGetMaxClockInfo", h)
        return h.max_clocks[kind]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetCurrPcieLinkGeneration", h)
        return h.pcie_gen

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetMaxPcieLinkGeneration", h)
        return h.pcie_max_gen

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetGpuMaxPcieLinkGeneration", h)
        return h.gpu_max_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetCurrPcieLinkWidth", h)
        return h.pcie_width

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetMaxPcieLinkWidth", h)
        return h.pcie_max_width

    def nvmlDeviceGetPcieReplayCounter(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetPcieReplayCounter", h)
        return h.replay

    def nvmlDeviceGetUtilizationRates(self, h: FakeGpu) -> SimpleNamespace:
        self._q("nvmlDeviceGetUtilizationRates", h)
        gpu = round(min(max(self._wave(h, h.util[0], 8.0 if h.util[0] else 0.0), 0), 100))
        return SimpleNamespace(gpu=gpu, memory=h.util[1])

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetCurrentClocksEventReasons", h)
        return h.event_reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        return h.event_reasons

    def nvmlDeviceGetEccMode(self, h: FakeGpu) -> tuple[int, int]:
        self._q("nvmlDeviceGetEccMode", h)
        if h.ecc_mode is None:
            _raise(NOT_SUPPORTED)
        return h.ecc_mode

    def nvmlDeviceGetTotalEccErrors(self, h: FakeGpu, error_type: int, counter: int) -> int:
        self._q("nvmlDeviceGetTotalEccErrors", h)
        return h.ecc_counts.get((error_type, counter), 0)

    def nvmlDeviceGetRetiredPages(self, h: FakeGpu, cause: int) -> list[int]:
        self._q("nvmlDeviceGetRetiredPages", h)
        if h.retired is None:
            _raise(NOT_SUPPORTED)
        return list(h.retired.get(cause, []))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: FakeGpu) -> int:
        self._q("nvmlDeviceGetRetiredPagesPendingStatus", h)
        if h.retired is None:
            _raise(NOT_SUPPORTED)
        return h.retired_pending

    def nvmlDeviceGetRemappedRows(self, h: FakeGpu) -> tuple[int, int, int, int]:
        self._q("nvmlDeviceGetRemappedRows", h)
        if h.remapped is None:
            _raise(NOT_SUPPORTED)
        return h.remapped

    def nvmlDeviceGetComputeRunningProcesses(self, h: FakeGpu) -> list[SimpleNamespace]:
        self._q("nvmlDeviceGetComputeRunningProcesses", h)
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in h.processes]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: FakeGpu) -> list[SimpleNamespace]:
        self._q("nvmlDeviceGetGraphicsRunningProcesses", h)
        return []


# --- scenarios ----------------------------------------------------------------------------


def healthy() -> FakeNVML:
    return FakeNVML([FakeGpu()])


def two_gpus_one_lost() -> FakeNVML:
    return FakeNVML(
        [
            FakeGpu(),
            FakeGpu(
                name="NVIDIA H100 80GB HBM3",
                uuid="GPU-99999999-2222-3333-4444-555555555555",
                bus_id="00000000:5E:00.0",
                lost=True,
            ),
        ]
    )


def thermal_throttling() -> FakeNVML:
    return FakeNVML(
        [FakeGpu(temperature=90, util=(100, 60), event_reasons=0x40 | 0x20, clocks={0: 1200, 1: 1200, 2: 2619})]
    )


def degraded_pcie_under_load() -> FakeNVML:
    return FakeNVML([FakeGpu(pcie_gen=3, pcie_width=8, util=(97, 40))])


def idle_pcie_downtrained() -> FakeNVML:
    return FakeNVML([FakeGpu(pcie_gen=1, pcie_width=16, util=(0, 0))])


def power_capped() -> FakeNVML:
    return FakeNVML([FakeGpu(enforced_limit_mw=450_000, util=(99, 50), event_reasons=0x4)])


def ecc_and_retired_pages() -> FakeNVML:
    return FakeNVML(
        [
            FakeGpu(
                name="Tesla V100-SXM2-32GB",
                cc=(7, 0),
                memory_total=32 * GIB,
                ecc_counts={(1, 0): 2, (1, 1): 5},
                retired={0: list(range(40)), 1: list(range(30))},
                retired_pending=1,
                remapped=None,
            )
        ]
    )


def remap_failure() -> FakeNVML:
    return FakeNVML([FakeGpu(name="NVIDIA A100-SXM4-80GB", cc=(8, 0), retired=None, remapped=(3, 2, 1, 1))])


def relative_thresholds_only() -> FakeNVML:
    """A newer GPU/driver whose absolute threshold call is gone: only T.Limit margins remain."""
    return FakeNVML([FakeGpu(name="NVIDIA B200", cc=(10, 0), thresholds={}, margin=5, temperature=80)])


def everything_unsupported() -> FakeNVML:
    return FakeNVML([FakeGpu()], everything_unsupported=True)


def old_driver() -> FakeNVML:
    """An older driver: no ClocksEventReasons entry point, no field values, old thresholds call works."""
    g = FakeGpu(
        name="Tesla T4",
        cc=(7, 5),
        memory_total=16 * GIB,
        event_reasons=0x4 | 0x1,
        errors={"nvmlDeviceGetCurrentClocksEventReasons": FUNCTION_NOT_FOUND},
    )
    return FakeNVML([g], driver="470.82.01", cuda=11040)


def memory_held_by_others() -> FakeNVML:
    return FakeNVML([FakeGpu(memory_used=30 * GIB, processes=[(4242, 20 * GIB), (4343, 9 * GIB)])])


def rtx3090() -> FakeNVML:
    """One idle GeForce RTX 3090: 24 GiB, a fan, no ECC and no row remapping (GeForce has neither)."""
    return FakeNVML(
        [
            FakeGpu(
                name="NVIDIA GeForce RTX 3090",
                uuid="GPU-3090aaaa-0000-4000-8000-000000000001",
                bus_id="00000000:01:00.0",
                serial="0",
                cc=(8, 6),
                memory_total=24 * GIB,
                memory_used=GIB // 2,
                temperature=38,
                thresholds={0: 98, 1: 95, 3: 93},
                field_thresholds=None,
                power_mw=28_000,
                enforced_limit_mw=350_000,
                default_limit_mw=350_000,
                constraints_mw=(100_000, 400_000),
                pstate=8,
                fan=30,
                clocks={0: 210, 1: 210, 2: 405},
                max_clocks={0: 2100, 1: 2100, 2: 9751},
                pcie_gen=4,
                pcie_max_gen=4,
                gpu_max_gen=4,
                ecc_mode=None,
                retired=None,
                remapped=None,
            )
        ],
        driver="550.54.15",
        cuda=12040,
    )


def _a100(i: int, **kw: Any) -> FakeGpu:
    return FakeGpu(
        name="NVIDIA A100-SXM4-80GB",
        uuid=f"GPU-a100aaaa-0000-4000-8000-00000000000{i}",
        bus_id=f"00000000:{0x07 + 0x40 * i:02X}:00.0",
        serial=f"132032000{i}",
        cc=(8, 0),
        memory_total=80 * GIB,
        memory_used=GIB // 2,
        temperature=34,
        thresholds={0: 92, 1: 89, 2: 95, 3: 87},
        field_thresholds=None,
        power_mw=60_000,
        enforced_limit_mw=400_000,
        default_limit_mw=400_000,
        constraints_mw=(100_000, 400_000),
        clocks={0: 210, 1: 210, 2: 1593},
        max_clocks={0: 1410, 1: 1410, 2: 1593},
        pcie_gen=4,
        pcie_max_gen=4,
        gpu_max_gen=4,
        retired=None,
        **kw,
    )


def a100x2_ecc() -> FakeNVML:
    """Two A100 80GB; gpu1 reports uncorrectable ECC errors since the driver loaded (critical) and
    a pending row remap."""
    return FakeNVML(
        [
            _a100(0),
            _a100(1, ecc_counts={(1, 0): 3, (1, 1): 3}, remapped=(0, 3, 1, 0)),
        ],
        driver="550.54.15",
        cuda=12040,
    )


def h100x8(animate: bool = False) -> FakeNVML:
    """An 8x H100 node under a training job: six busy, one idle, one with 74 % of its VRAM held by
    another user's process. ``animate`` lets the monitor's readings move with time."""
    gpus = []
    for i in range(8):
        busy = i not in (3, 7)
        gpus.append(
            FakeGpu(
                uuid=f"GPU-h100aaaa-0000-4000-8000-00000000000{i}",
                bus_id=f"00000000:{(0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)[i]:02X}:00.0",
                serial=f"165012345678{i}",
                memory_used=(71 * GIB if busy else GIB // 2),
                temperature=(62 + 2 * (i % 4) if busy else 33),
                power_mw=(640_000 + 8_000 * i if busy else 72_000),
                util=((97, 55) if busy else (0, 0)),
                event_reasons=(0 if busy else 0x1),
                clocks=({0: 1980, 1: 1980, 2: 2619} if busy else {0: 345, 1: 345, 2: 2619}),
                processes=([(3100 + i, 70 * GIB)] if busy else []),
            )
        )
    gpus[3].memory_used = 60 * GIB  # another user's job holds 74 % of gpu3
    gpus[3].processes = [(7777, int(59.2 * GIB))]
    return FakeNVML(gpus, driver="570.86.15", cuda=12080, animate=animate)


SCENARIOS = {
    "healthy": healthy,
    "two_gpus_one_lost": two_gpus_one_lost,
    "thermal_throttling": thermal_throttling,
    "degraded_pcie_under_load": degraded_pcie_under_load,
    "idle_pcie_downtrained": idle_pcie_downtrained,
    "power_capped": power_capped,
    "ecc_and_retired_pages": ecc_and_retired_pages,
    "remap_failure": remap_failure,
    "everything_unsupported": everything_unsupported,
    "relative_thresholds_only": relative_thresholds_only,
    "old_driver": old_driver,
    "memory_held_by_others": memory_held_by_others,
    "rtx3090": rtx3090,
    "a100x2_ecc": a100x2_ecc,
    "h100x8": h100x8,
}

INIT_FAILURES = {
    "library_not_found": _real.NVML_ERROR_LIBRARY_NOT_FOUND,
    "driver_not_loaded": _real.NVML_ERROR_DRIVER_NOT_LOADED,
    "no_permission": _real.NVML_ERROR_NO_PERMISSION,
    "lib_rm_version_mismatch": _real.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    "unknown": _real.NVML_ERROR_UNKNOWN,
}
