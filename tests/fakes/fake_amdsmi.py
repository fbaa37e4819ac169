"""A scenario-driven fake of the ``amdsmi`` module (ROCm's AMD SMI Python library).

Function names, argument enums, return dictionaries and units follow the ROCm 6.x Python API
reference (ROCm/amdsmi docs/reference/amdsmi-py-api.md): temperatures in °C (the C library
divides hwmon's millidegrees by 1000), VRAM in MB, socket power and power limit in W, power caps
in µW, PCIe speeds in MT/s, "N/A" for a value the card does not report. Errors are raised as an
``AmdSmiLibraryException`` carrying a status code and the library's message, like the real one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

AMDSMI_STATUS_NOT_SUPPORTED = 2
AMDSMI_STATUS_DRM_ERROR = 9
AMDSMI_STATUS_INIT_ERROR = 32
_MESSAGES = {
    AMDSMI_STATUS_NOT_SUPPORTED: "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported",
    AMDSMI_STATUS_DRM_ERROR: "AMDSMI_STATUS_DRM_ERROR - Error when calling libdrm",
    AMDSMI_STATUS_INIT_ERROR: "AMDSMI_STATUS_INIT_ERROR - An error occurred during initialization",
}


class AmdSmiException(Exception):  # noqa: N818 - the real library's name
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int) -> None:
        self.err_code = err_code
        self.err_info = _MESSAGES.get(err_code, f"AMDSMI_STATUS {err_code}")
        super().__init__(f"Error code:\n\t{err_code} | {self.err_info}")

    def get_error_code(self) -> int:
        return self.err_code


class AmdSmiTemperatureType(IntEnum):
    EDGE = 0
    HOTSPOT = 1
    JUNCTION = 1
    VRAM = 2
    HBM_0 = 3


class AmdSmiTemperatureMetric(IntEnum):
    CURRENT = 0
    MAX = 1
    MIN = 2
    CRITICAL = 5
    EMERGENCY = 7


class AmdSmiClkType(IntEnum):
    SYS = 0
    GFX = 0
    DF = 1
    SOC = 3
    MEM = 4


@dataclass
class FakeAmdGpu:
    name: str = "AMD Instinct MI300X"
    bdf: str = "0000:0c:00.0"
    uuid: str = "5fff74a1-0000-1000-80fb-6ad7a8f2f3c4"
    product_serial: str = "692315000123"
    vram_total_mb: int = 196_592
    vram_used_mb: int = 283
    # sensor -> {metric: °C}; a missing sensor or metric raises NOT_SUPPORTED (MI300 has no edge)
    temps: dict[int, dict[int, int]] = field(
        default_factory=lambda: {
            AmdSmiTemperatureType.HOTSPOT: {0: 45, 5: 110, 7: 115},
            AmdSmiTemperatureType.VRAM: {0: 38, 5: 95, 7: 105},
        }
    )
    power: dict[str, Any] = field(
        default_factory=lambda: {
            "socket_power": 312,
            "current_socket_power": 312,
            "average_socket_power": "N/A",
            "gfx_voltage": "N/A",
            "power_limit": 750,
        }
    )
    power_cap_uw: tuple[int, int, int] = (750_000_000, 750_000_000, 750_000_000)  # cap, default, max
    clocks: dict[int, tuple[int, int]] = field(
        default_factory=lambda: {AmdSmiClkType.GFX: (2100, 2100), AmdSmiClkType.MEM: (1300, 1300)}
    )
    pcie: tuple[int, int, int, int] = (32_000, 16, 32_000, 16)  # speed MT/s, width, max speed, max width
    activity: tuple[Any, Any] = (0, 0)  # gfx %, umc %
    ecc_mask: int = 0x3FFF
    ecc: tuple[int, int] = (0, 0)  # correctable, uncorrectable
    bad_pages: list[dict[str, Any]] = field(default_factory=list)
    bad_page_threshold: int | str = "N/A"  # needs root: "N/A" otherwise
    processes: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)  # function name -> status it raises
    crashes: dict[str, type[Exception]] = field(default_factory=dict)  # function name -> raises this


class FakeAmdSmi:
    """Stands in for the ``amdsmi`` module."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiTemperatureType = AmdSmiTemperatureType
    AmdSmiTemperatureMetric = AmdSmiTemperatureMetric
    AmdSmiClkType = AmdSmiClkType

    def __init__(self, gpus: list[FakeAmdGpu] | None = None, *, init_error: int | None = None) -> None:
        self.gpus = [copy.deepcopy(g) for g in (gpus if gpus is not None else [FakeAmdGpu()])]
        self.init_error = init_error
        self.initialised = 0
        self.calls: list[str] = []

    def _q(self, name: str, h: FakeAmdGpu) -> None:
        self.calls.append(name)
        if name in h.crashes:
            raise h.crashes[name](f"{name} crashed")
        if name in h.errors:
            raise AmdSmiLibraryException(h.errors[name])

    # --- library --------------------------------------------------------------------------
    def amdsmi_init(self, flags: int = 0) -> None:
        if self.init_error is not None:
            raise AmdSmiLibraryException(self.init_error)
        self.initialised += 1

    def amdsmi_shut_down(self) -> None:
        self.initialised -= 1

    def amdsmi_get_processor_handles(self) -> list[FakeAmdGpu]:
        return list(self.gpus)

    # --- identity ---------------------------------------------------------------------------
    def amdsmi_get_gpu_asic_info(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_gpu_asic_info", h)
        return {"market_name": h.name, "vendor_id": "0x1002", "asic_serial": "0xA1B2C3D4", "oam_id": "N/A"}

    def amdsmi_get_gpu_device_bdf(self, h: FakeAmdGpu) -> str:
        self._q("amdsmi_get_gpu_device_bdf", h)
        return h.bdf

    def amdsmi_get_gpu_device_uuid(self, h: FakeAmdGpu) -> str:
        self._q("amdsmi_get_gpu_device_uuid", h)
        return h.uuid

    def amdsmi_get_gpu_board_info(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_gpu_board_info", h)
        return {
            "model_number": "102-G30211-00",
            "product_serial": h.product_serial,
            "fru_id": "N/A",
            "product_name": h.name,
            "manufacturer_name": "AMD",
        }

    # --- readings ---------------------------------------------------------------------------
    def amdsmi_get_gpu_vram_usage(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_gpu_vram_usage", h)
        return {"vram_total": h.vram_total_mb, "vram_used": h.vram_used_mb}

    def amdsmi_get_temp_metric(
        self, h: FakeAmdGpu, sensor: AmdSmiTemperatureType, metric: AmdSmiTemperatureMetric
    ) -> int:
        self._q("amdsmi_get_temp_metric", h)
        value = h.temps.get(int(sensor), {}).get(int(metric))
        if value is None:
            raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED)
        return value

    def amdsmi_get_power_info(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_power_info", h)
        return dict(h.power)

    def amdsmi_get_power_cap_info(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_power_cap_info", h)
        cap, default, most = h.power_cap_uw
        return {"power_cap": cap, "default_power_cap": default, "max_power_cap": most, "min_power_cap": 0}

    def amdsmi_get_clock_info(self, h: FakeAmdGpu, clk: AmdSmiClkType) -> dict[str, Any]:
        self._q("amdsmi_get_clock_info", h)
        now, most = h.clocks[int(clk)]
        return {"clk": now, "min_clk": 500, "max_clk": most, "clk_locked": "N/A", "clk_deep_sleep": False}

    def amdsmi_get_pcie_info(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_pcie_info", h)
        speed, width, max_speed, max_width = h.pcie
        return {
            "pcie_static": {
                "max_pcie_width": max_width,
                "max_pcie_speed": max_speed,
                "pcie_interface_version": 5,
                "slot_type": "OAM",
            },
            "pcie_metric": {
                "pcie_width": width,
                "pcie_speed": speed,
                "pcie_bandwidth": "N/A",
                "pcie_replay_count": 0,
            },
        }

    def amdsmi_get_gpu_activity(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_gpu_activity", h)
        return {"gfx_activity": h.activity[0], "umc_activity": h.activity[1], "mm_activity": "N/A"}

    def amdsmi_get_gpu_ecc_enabled(self, h: FakeAmdGpu) -> int:
        self._q("amdsmi_get_gpu_ecc_enabled", h)
        return h.ecc_mask

    def amdsmi_get_gpu_total_ecc_count(self, h: FakeAmdGpu) -> dict[str, Any]:
        self._q("amdsmi_get_gpu_total_ecc_count", h)
        return {"correctable_count": h.ecc[0], "uncorrectable_count": h.ecc[1], "deferred_count": 0}

    def amdsmi_get_gpu_bad_page_info(self, h: FakeAmdGpu) -> list[dict[str, Any]]:
        self._q("amdsmi_get_gpu_bad_page_info", h)
        return list(h.bad_pages)

    def amdsmi_get_gpu_bad_page_threshold(self, h: FakeAmdGpu) -> int | str:
        self._q("amdsmi_get_gpu_bad_page_threshold", h)
        return h.bad_page_threshold

    def amdsmi_get_gpu_process_list(self, h: FakeAmdGpu) -> list[dict[str, Any]]:
        self._q("amdsmi_get_gpu_process_list", h)
        return [copy.deepcopy(p) for p in h.processes]


def mi250x_node(serials: list[str] | None = None) -> FakeAmdSmi:
    """Two MI250X cards, each two GCDs (four amdsmi devices); ``serials`` per device."""
    if serials is None:
        serials = ["PCB046982-0071", "PCB046982-0071", "PCB046982-0085", "PCB046982-0085"]
    buses = ["0000:c1:00.0", "0000:c6:00.0", "0000:c9:00.0", "0000:ce:00.0"]
    return FakeAmdSmi(
        [
            FakeAmdGpu(
                name="AMD Instinct MI250X",
                bdf=bus,
                uuid=f"uuid-{i}",
                product_serial=serial,
                vram_total_mb=65_520,
                temps={AmdSmiTemperatureType.EDGE: {0: 40, 5: 100}, AmdSmiTemperatureType.HOTSPOT: {0: 44, 5: 110}},
                pcie=(16_000, 16, 16_000, 16),
            )
            for i, (bus, serial) in enumerate(zip(buses, serials, strict=True))
        ]
    )
