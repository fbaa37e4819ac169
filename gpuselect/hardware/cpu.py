"""CPU and system memory through psutil and the OS's own files (fast: no py-cpuinfo on Linux)."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil

from gpuselect.hardware.types import CpuInfo, MemoryInfo

# ISA extensions that matter for deep learning on the CPU, as Linux names them in
# /proc/cpuinfo (x86 "flags", Arm "Features"). Arm's "asimd" is NEON.
_DL_FEATURES: dict[str, str] = {
    "avx": "avx",
    "avx2": "avx2",
    "fma": "fma",
    "f16c": "f16c",
    "avx512f": "avx512f",
    "avx512bw": "avx512bw",
    "avx512vl": "avx512vl",
    "avx512_vnni": "avx512_vnni",
    "avx512_bf16": "avx512_bf16",
    "avx512_fp16": "avx512_fp16",
    "avx_vnni": "avx_vnni",
    "amx_tile": "amx",
    "amx_bf16": "amx_bf16",
    "amx_int8": "amx_int8",
    "amx_fp16": "amx_fp16",
    "asimd": "neon",
    "neon": "neon",
    "asimdhp": "neon_fp16",
    "asimddp": "neon_dotprod",
    "bf16": "arm_bf16",
    "i8mm": "arm_i8mm",
    "sve": "sve",
    "sve2": "sve2",
    "sme": "sme",
}

# macOS sysctl hw.optional.* names -> our feature names (Apple silicon and Intel Macs).
_MAC_FEATURES: dict[str, str] = {
    "hw.optional.neon": "neon",
    "hw.optional.arm.FEAT_FP16": "neon_fp16",
    "hw.optional.arm.FEAT_DotProd": "neon_dotprod",
    "hw.optional.arm.FEAT_BF16": "arm_bf16",
    "hw.optional.arm.FEAT_I8MM": "arm_i8mm",
    "hw.optional.arm.FEAT_SME": "sme",
    "hw.optional.avx2_0": "avx2",
    "hw.optional.avx512f": "avx512f",
}


def dl_features(flags: Iterable[str]) -> list[str]:
    """The deep-learning relevant subset of an ISA flag list, in our naming, sorted."""
    found = {_DL_FEATURES[f] for f in flags if f in _DL_FEATURES}
    if "amx" in found or any(f.startswith("amx_") for f in found):
        found.add("amx")
    return sorted(found)


def parse_proc_cpuinfo(text: str) -> tuple[str | None, str | None, list[str]]:
    """(model, vendor, DL features) from the text of /proc/cpuinfo (x86 and Arm layouts)."""
    model = vendor = None
    flags: list[str] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "model name" and model is None:
            model = value
        elif key in {"vendor_id", "cpu implementer"} and vendor is None:
            vendor = value
        elif key in {"flags", "features"} and not flags:
            flags = value.split()
        elif key in {"hardware", "cpu model"} and model is None:
            model = value
    return model, vendor, dl_features(flags)


def _sysfs_max_mhz() -> float | None:
    path = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    try:
        return int(path.read_text().strip()) / 1000.0
    except (OSError, ValueError):
        return None


def _mac_sysctl(names: list[str]) -> dict[str, str]:
    try:
        out = subprocess.run(["sysctl", *names], capture_output=True, text=True, timeout=2, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    values: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        values[key.strip()] = value.strip()
    return values


def detect_cpu(
    *,
    cpuinfo_path: str = "/proc/cpuinfo",
    cpu_freq: Callable[[], object | None] = psutil.cpu_freq,
) -> CpuInfo:
    unavailable: dict[str, str] = {}
    model = vendor = None
    features: list[str] = []
    if sys.platform.startswith("linux"):
        try:
            model, vendor, features = parse_proc_cpuinfo(Path(cpuinfo_path).read_text(errors="replace"))
        except OSError as exc:
            unavailable["model"] = f"cannot read {cpuinfo_path}: {exc.strerror}"
    elif sys.platform == "darwin":
        values = _mac_sysctl(["machdep.cpu.brand_string", *_MAC_FEATURES])
        model = values.get("machdep.cpu.brand_string") or None
        features = sorted({ours for key, ours in _MAC_FEATURES.items() if values.get(key) == "1"})
    else:
        model = platform.processor() or None
        unavailable["features"] = f"ISA flags are not read on {sys.platform} (install the 'cpuinfo' extra)"
        try:  # optional, slow (~1 s): only on platforms without a cheap source
            import cpuinfo  # type: ignore[import-not-found]

            info = cpuinfo.get_cpu_info()
            model = info.get("brand_raw") or model
            features = dl_features(info.get("flags", []))
            unavailable.pop("features", None)
        except Exception:  # noqa: BLE001, S110 - optional backend, fails softly; its absence is recorded in `unavailable`
            pass
    if model is None:
        unavailable.setdefault("model", "the OS does not report a CPU model name")

    logical = psutil.cpu_count(logical=True)
    physical = psutil.cpu_count(logical=False)
    if physical is None:
        unavailable["physical_cores"] = "the OS does not report physical cores"

    max_mhz = current_mhz = None
    try:
        freq = cpu_freq()
    except Exception as exc:  # noqa: BLE001 - psutil raises various errors on odd systems
        freq = None
        unavailable["current_mhz"] = f"psutil.cpu_freq failed: {exc}"
    if freq is not None:
        current_mhz = float(getattr(freq, "current", 0.0)) or None
        max_mhz = float(getattr(freq, "max", 0.0)) or None
    if max_mhz is None:
        max_mhz = _sysfs_max_mhz()
    if max_mhz is None:
        unavailable["max_mhz"] = "the OS reports no maximum CPU frequency (common in virtual machines and containers)"
    if current_mhz is None:
        unavailable.setdefault("current_mhz", "the OS reports no current CPU frequency")

    return CpuInfo(
        model=model,
        vendor=vendor,
        architecture=platform.machine() or "unknown",
        logical_cores=logical,
        physical_cores=physical,
        max_mhz=max_mhz,
        current_mhz=current_mhz,
        features=features,
        unavailable=unavailable,
    )


def detect_memory() -> MemoryInfo:
    vm = psutil.virtual_memory()
    try:
        swap: int | None = int(psutil.swap_memory().total)
    except Exception:  # noqa: BLE001
        swap = None
    return MemoryInfo(total_bytes=int(vm.total), available_bytes=int(vm.available), swap_total_bytes=swap)
