"""Every health threshold in one place, each with where it comes from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Threshold:
    warning: float
    critical: float
    unit: str
    source: str


#: Temperature margins below the card's own slowdown threshold (from NVML). The card's
#: thresholds are the authority; the margin only gives early warning.
TEMP_WARN_MARGIN_BELOW_SLOWDOWN_C = 10.0
TEMP_SOURCE = (
    "the card's own slowdown/shutdown thresholds reported by NVML (nvmlDeviceGetTemperatureThreshold / field values)"
)
#: When the card reports no thresholds: typical GPU maximum operating temperatures (NVIDIA
#: GeForce spec pages list 83-93 °C maximum GPU temperature for recent desktop cards).
TEMP_FALLBACK = Threshold(
    warning=83.0,
    critical=93.0,
    unit="°C",
    source="generic: NVIDIA GeForce spec pages list 83-93 °C maximum GPU temperature",
)

#: Retired pages (double-bit + multiple single-bit): DCGM's limits.
RETIRED_PAGES = Threshold(
    warning=15,
    critical=63,
    unit="pages",
    source="NVIDIA DCGM diagnostics: retired pages warn at 15 and fail at 63",
)
#: Uncorrectable ECC errors since the driver loaded: any is serious.
ECC_UNCORRECTED_VOLATILE = Threshold(
    warning=1,
    critical=1,
    unit="errors",
    source="NVIDIA DCGM / GPU memory error management: uncorrectable (double-bit) errors kill the running job",
)

#: Enforced power limit below the default limit by more than this fraction -> warning.
POWER_LIMIT_LOWERED_FRACTION = 0.05
POWER_SOURCE = "NVML default power limit (nvmlDeviceGetPowerManagementDefaultLimit) as the reference"

#: PCIe links down-train at idle to save power: judge width/generation only under load.
PCIE_LOAD_UTILIZATION_PERCENT = 50
PCIE_SOURCE = "NVIDIA DCGM: PCIe link speed and width drop when idle, so they are judged only under load"

#: Memory on a GPU held by other processes, as a fraction of its VRAM.
FOREIGN_MEMORY = Threshold(
    warning=0.10,
    critical=0.50,
    unit="fraction of VRAM",
    source="gpuselect: >10 % of VRAM held by others shrinks the batch you can train; >50 % halves it "
    "(both a warning about availability: the card is busy, not faulty)",
)
#: Memory in use with no process visible (other containers, MPS, permission) — informational.
UNATTRIBUTED_MEMORY_FRACTION = 0.10

#: System RAM relative to total GPU memory.
RAM_TO_VRAM = Threshold(
    warning=1.0,
    critical=0.0,
    unit="× total VRAM",
    source=(
        "common practice (e.g. Tim Dettmers' GPU guide): at least as much RAM as GPU memory, "
        "better twice, for data loading, pinned buffers and checkpoints"
    ),
)
RAM_TO_VRAM_COMFORTABLE = 2.0

#: Clock-event (throttle) reasons and how bad each is when active. NVML's documentation:
#: nvmlClocksEventReasons; DCGM treats thermal and power-brake slowdowns as failures.
CLOCK_EVENT_SEVERITY: dict[str, tuple[str, str, str]] = {
    # reason: (severity, title, remedy)
    "hw_thermal_slowdown": (
        "critical",
        "hardware thermal slowdown: clocks cut hard because the GPU is too hot",
        "improve cooling: check fans, airflow, dust and ambient temperature",
    ),
    "hw_power_brake_slowdown": (
        "critical",
        "hardware power brake: the board's external power brake is asserted",
        "check the power supply and cables (the PSU or chassis asserted the brake)",
    ),
    "hw_slowdown": (
        "warning",
        "hardware slowdown: clocks reduced by ≥2× (temperature or power)",
        "check cooling and power delivery; see the thermal and power findings",
    ),
    "sw_thermal_slowdown": (
        "warning",
        "software thermal slowdown: the driver lowers clocks to stay under its temperature target",
        "improve cooling so the GPU stays below its target temperature",
    ),
    "sw_power_cap": (
        "warning",
        "software power cap: clocks limited to stay within the power limit",
        "expected under heavy load; if the limit was lowered, raise it (nvidia-smi -pl) or accept slower training",
    ),
}
CLOCK_EVENT_SOURCE = "NVML nvmlClocksEventReasons; severities follow NVIDIA DCGM's thermal/power policy"

#: NVIDIA CUDA minor-version compatibility: a toolkit of the same major version runs on an older
#: driver of that major (since CUDA 11), with limits; a newer major needs a newer driver.
CUDA_COMPAT_SOURCE = "NVIDIA CUDA Compatibility guide (minor version compatibility since CUDA 11)"

# --- AMD (amdsmi) --------------------------------------------------------------------------

#: AMD cards report their own limits through hwmon (read with amdsmi_get_temp_metric): temp*_crit
#: is the throttling limit, temp*_emergency the shutdown (ASIC shutdown) limit (Linux kernel docs,
#: Documentation/gpu/amdgpu/thermal.rst, "HWMON Interfaces"). Those limits are the authority; the
#: warning margin below them is the same as NVIDIA's.
AMD_TEMP_SOURCE = (
    "the card's own critical (throttle) and emergency (shutdown) limits, hwmon temp*_crit / temp*_emergency "
    "read through amdsmi_get_temp_metric (Linux kernel amdgpu docs, HWMON interfaces)"
)
#: When an AMD card reports no limits: AMD throttles at a hotspot (junction) temperature of
#: 110 °C and calls up to 110 °C junction "expected and within spec" (AMD community blog on
#: Radeon RX 5700 thermals, August 2019; Radeon VII and later use the junction sensor). The
#: warning sits 10 °C below, as for cards that report their thresholds.
AMD_TEMP_FALLBACK = Threshold(
    warning=100.0,
    critical=110.0,
    unit="°C",
    source="AMD: junction (hotspot) throttling at 110 °C, 'expected and within spec' up to it (AMD blog, 2019)",
)
AMD_POWER_SOURCE = "amdsmi default power cap (amdsmi_get_power_cap_info default_power_cap) as the reference"
AMD_PCIE_SOURCE = (
    "AMD GPUs switch PCIe link speed with their power state (amdgpu pp_dpm_pcie), so it is judged only under load"
)
AMD_ECC_SOURCE = (
    "amdgpu RAS: uncorrectable errors since the driver loaded corrupt or kill the running job "
    "(docs.kernel.org/gpu/amdgpu/ras.html)"
)
#: Past the driver's bad-page threshold the GPU is marked bad and should be replaced.
AMD_BAD_PAGE_SOURCE = (
    "the amdgpu driver's bad_page_threshold: past it the driver marks the GPU bad (Linux kernel amdgpu module "
    "parameters); below it, DCGM's 15-page warning"
)
