"""Typed records of what detection found. Every optional figure is ``None`` when unavailable,
and the record's ``unavailable`` map says why (field path -> reason). Nothing is made up."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CpuInfo:
    model: str | None
    vendor: str | None
    architecture: str  # platform.machine(): x86_64, aarch64, arm64 ...
    logical_cores: int | None
    physical_cores: int | None
    max_mhz: float | None
    current_mhz: float | None
    features: list[str]  # deep-learning relevant ISA extensions found (avx2, avx512f, amx, neon, sve ...)
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass
class MemoryInfo:
    total_bytes: int
    available_bytes: int
    swap_total_bytes: int | None = None


@dataclass
class Clocks:
    sm_mhz: int | None = None
    sm_max_mhz: int | None = None
    memory_mhz: int | None = None
    memory_max_mhz: int | None = None
    graphics_mhz: int | None = None
    graphics_max_mhz: int | None = None


@dataclass
class PcieLink:
    generation: int | None = None  # current link generation (drops at idle)
    max_generation: int | None = None  # max of this link (the lower of GPU and slot)
    gpu_max_generation: int | None = None  # what the GPU itself supports
    width: int | None = None  # current lanes
    max_width: int | None = None
    replay_counter: int | None = None


@dataclass
class Utilization:
    gpu_percent: int | None = None
    memory_percent: int | None = None


@dataclass
class EccInfo:
    enabled: bool | None = None
    pending_enabled: bool | None = None
    uncorrected_volatile: int | None = None
    uncorrected_aggregate: int | None = None
    corrected_volatile: int | None = None
    retired_pages_single_bit: int | None = None
    retired_pages_double_bit: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    # AMD: the driver's bad-page threshold (amdgpu.bad_page_threshold); past it the GPU is marked bad
    retired_pages_threshold: int | None = None


@dataclass
class TemperatureThresholds:
    """Absolute thresholds in °C, plus the same thresholds as T.Limit margins.

    NVML's field values (NVML_FI_DEV_TEMPERATURE_*_TLIMIT, the API NVIDIA asks for on Ada and
    newer) are *relative*: degrees below the GPU's thermal limit at which each threshold trips
    (negative: above it). Seen on an H100: slowdown field -2 with absolute slowdown 89 °C and
    gpu_max 87 °C. ``temperature_margin_c`` on the GPU is the current distance to that limit.
    """

    slowdown_c: int | None = None
    shutdown_c: int | None = None
    gpu_max_c: int | None = None  # max operating temperature (the T.Limit)
    memory_max_c: int | None = None
    slowdown_tlimit_c: int | None = None
    shutdown_tlimit_c: int | None = None


@dataclass
class GpuProcess:
    pid: int
    name: str | None
    used_memory_bytes: int | None
    kind: str  # "compute" or "graphics"
    is_self: bool = False


@dataclass
class GpuInfo:
    index: int
    vendor: str  # NVIDIA, AMD, Apple, Intel
    name: str | None
    source: str  # which backend reported it: nvml, amdsmi, torch
    state: str = "ok"  # ok | lost | error
    uuid: str | None = None
    pci_bus_id: str | None = None
    serial: str | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    compute_capability: str | None = None
    architecture: str | None = None
    temperature_c: int | None = None
    temperature_sensor: str | None = None  # AMD: "hotspot" (junction) or "edge"; None: the GPU core (NVML)
    memory_temperature_c: int | None = None  # AMD: VRAM/HBM temperature
    temperature_thresholds: TemperatureThresholds = field(default_factory=TemperatureThresholds)
    temperature_margin_c: int | None = None  # °C below the thermal limit now (T.Limit margin)
    power_draw_w: float | None = None
    power_limit_w: float | None = None  # enforced limit
    power_default_limit_w: float | None = None
    power_max_limit_w: float | None = None
    performance_state: int | None = None
    fan_percent: int | None = None
    clocks: Clocks = field(default_factory=Clocks)
    pcie: PcieLink = field(default_factory=PcieLink)
    utilization: Utilization = field(default_factory=Utilization)
    clock_event_reasons: list[str] | None = None
    ecc: EccInfo = field(default_factory=EccInfo)
    processes: list[GpuProcess] | None = None
    torch_index: int | None = None  # the torch device index, matched by UUID / PCI bus id
    # Several devices on one physical card (MI250X GCDs, MI300 partitions), grouped by board serial
    physical_card: int | None = None
    card_label: str | None = None  # "GCD 0 of card 1"
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass
class NvmlStatus:
    available: bool
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # the newest CUDA the driver supports, "12.4"
    nvml_version: str | None = None
    error: str | None = None  # why NVML is not available
    error_code: int | None = None  # the NVML return code behind ``error``


@dataclass
class BackendStatus:
    """A vendor backend other than NVML (amdsmi)."""

    name: str
    available: bool
    version: str | None = None
    error: str | None = None


@dataclass
class FrameworkInfo:
    name: str  # torch, tensorflow, jax
    installed: bool
    version: str | None = None
    built_cuda: str | None = None  # CUDA version the build targets (None: CPU-only or unknown)
    built_rocm: str | None = None
    cudnn: str | None = None
    cpu_only_build: bool | None = None
    # Filled only when probed (in a subprocess, on request):
    probed: bool = False
    sees_gpu: bool | None = None
    devices: list[str] = field(default_factory=list)
    backends: dict[str, bool] = field(default_factory=dict)  # cuda, rocm, mps, xpu
    probe_error: str | None = None


@dataclass
class Snapshot:
    taken_at: str  # ISO 8601, UTC
    host: str
    os: str
    python: str
    cpu: CpuInfo
    memory: MemoryInfo
    nvml: NvmlStatus
    amd: BackendStatus
    torch: FrameworkInfo | None  # None when torch is not installed
    frameworks: list[FrameworkInfo]
    gpus: list[GpuInfo]
    detection_s: float = 0.0
