"""Plain-text view of a hardware snapshot, shared by the CLI and the GUI. (The health report's
text lives in gpuselect.health.text; ``format_health`` is re-exported here for old imports.)"""

from __future__ import annotations

from gpuselect.hardware.types import GpuInfo, Snapshot
from gpuselect.health.text import format_health

__all__ = ["format_health", "format_snapshot", "gpu_lines"]

GIB = 1024**3


def _na(value: object, unit: str = "", fmt: str = "{}") -> str:
    return "n/a" if value is None else fmt.format(value) + unit


def gpu_lines(g: GpuInfo) -> list[str]:
    head = f"GPU {g.index}: {g.name or 'unknown'} [{g.vendor}, via {g.source}]" + (
        f" — {g.card_label}" if g.card_label else ""
    )
    if g.state != "ok":
        return [head, f"  state: {g.state.upper()} — {g.unavailable.get('device') or g.unavailable.get('name', '')}"]
    mem = (
        f"{g.memory_used_bytes / GIB:.1f} / {g.memory_total_bytes / GIB:.1f} GiB used"
        if g.memory_total_bytes is not None and g.memory_used_bytes is not None
        else _na(g.memory_total_bytes and round(g.memory_total_bytes / GIB, 1), " GiB")
    )
    th = g.temperature_thresholds
    c, p = g.clocks, g.pcie
    # AMD words on an AMD card: amdsmi reads the GFX (shader) clock; compute capability is CUDA's
    amd = g.vendor == "AMD"
    lines = [
        head,
        f"  memory: {mem}" + ("" if amd else f"; compute capability {_na(g.compute_capability)}"),
        f"  temperature: {_na(g.temperature_c, ' °C')}{' ' + g.temperature_sensor if g.temperature_sensor else ''} "
        f"(slowdown {_na(th.slowdown_c, ' °C')}, shutdown {_na(th.shutdown_c, ' °C')})"
        + (
            f"; memory {g.memory_temperature_c} °C (limit {_na(th.memory_max_c, ' °C')})"
            if g.memory_temperature_c is not None
            else ""
        ),
        f"  power: {_na(g.power_draw_w, ' W', '{:.0f}')} of {_na(g.power_limit_w, ' W', '{:.0f}')} limit (default {_na(g.power_default_limit_w, ' W', '{:.0f}')})",
        f"  clocks: {'GFX' if amd else 'SM'} {_na(c.sm_mhz)}/{_na(c.sm_max_mhz, ' MHz')}, memory {_na(c.memory_mhz)}/{_na(c.memory_max_mhz, ' MHz')}",
        "  PCIe: "
        + (
            f"Gen{_na(p.generation)} x{_na(p.width)} (max Gen{_na(p.max_generation)} x{_na(p.max_width)})"
            if any(v is not None for v in (p.generation, p.width, p.max_generation, p.max_width))
            else "n/a"  # "Genn/a xn/a"
        ),
        f"  utilisation: {_na(g.utilization.gpu_percent, ' %')}; throttle reasons: "
        + (", ".join(g.clock_event_reasons) or "none" if g.clock_event_reasons is not None else "n/a"),
        f"  uuid: {_na(g.uuid)}  bus: {_na(g.pci_bus_id)}  torch index: {_na(g.torch_index)}",
    ]
    if g.processes:
        lines.append("  processes: " + ", ".join(f"{q.name or '?'}[{q.pid}]" for q in g.processes))
    return lines


def format_snapshot(s: Snapshot) -> str:
    cpu, mem = s.cpu, s.memory
    lines = [
        f"Host: {s.host} — {s.os}, Python {s.python}",
        f"CPU: {cpu.model or 'unknown'} ({cpu.architecture}), {_na(cpu.physical_cores)} cores / {_na(cpu.logical_cores)} threads, "
        f"max {_na(cpu.max_mhz, ' MHz', '{:.0f}')}",
        f"  ISA for deep learning: {', '.join(cpu.features) or 'none found'}",
        f"RAM: {mem.total_bytes / GIB:.1f} GiB total, {mem.available_bytes / GIB:.1f} GiB available",
    ]
    if s.nvml.available:
        lines.append(f"NVIDIA driver {s.nvml.driver_version} (CUDA {s.nvml.cuda_driver_version})")
    else:
        lines.append(f"NVML: not available — {s.nvml.error}")
    if s.amd.available or (s.amd.error and "not installed" not in s.amd.error):
        lines.append(f"amdsmi: {'available' if s.amd.available else s.amd.error}")
    for fw in s.frameworks:
        if not fw.installed:
            lines.append(f"{fw.name}: not installed")
            continue
        built = (
            "CPU-only build"
            if fw.cpu_only_build
            else f"built for CUDA {fw.built_cuda}"
            if fw.built_cuda
            else f"built for ROCm {fw.built_rocm}"
            if fw.built_rocm
            else "build unknown"
        )
        seen = ""
        if fw.probed:
            seen = (
                f"; probe error: {fw.probe_error}"
                if fw.probe_error
                else f"; sees GPU: {'yes' if fw.sees_gpu else 'no'}"
            )
        lines.append(f"{fw.name} {fw.version}: {built}{seen}")
    if not s.gpus:
        lines.append("GPUs: none found")
    for g in s.gpus:
        lines.extend(gpu_lines(g))
    return "\n".join(lines)
