"""Health rules over a :class:`Snapshot`. Each rule returns findings with the measured value,
the threshold it was judged against (``thresholds.py``) and what to do."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gpuselect.hardware.nvml_access import (
    ERROR_CORRUPTED_INFOROM,
    ERROR_DRIVER_NOT_LOADED,
    ERROR_GPU_IS_LOST,
    ERROR_INSUFFICIENT_POWER,
    ERROR_LIB_RM_VERSION_MISMATCH,
    ERROR_NO_PERMISSION,
    ERROR_RESET_REQUIRED,
    ERROR_TIMEOUT,
    ERROR_UNKNOWN,
    reason_for_code,
)
from gpuselect.hardware.types import FrameworkInfo, GpuInfo, Snapshot
from gpuselect.health import thresholds as T  # noqa: N812 - short module alias, used as a namespace as in the formulas
from gpuselect.health.model import Finding, Severity

GIB = 1024**3

#: NVML start-up failures that mean a GPU is there and in trouble (not "no NVIDIA library"): each
#: with what to do. They read "no GPU found" and "no problems", exit 0, on a node whose GPU fell
#: off the bus.
_NVML_INIT_FAILURES = {
    ERROR_GPU_IS_LOST: "check dmesg for NVIDIA Xid errors (79: fallen off the bus), reseat or replace the GPU, reboot",
    ERROR_RESET_REQUIRED: "reset the GPU (nvidia-smi -r, with nothing running on it) or reboot",
    ERROR_INSUFFICIENT_POWER: "check the GPU's auxiliary power cables and the power supply",
    ERROR_TIMEOUT: "check dmesg for NVIDIA Xid errors; a reboot may be needed",
    ERROR_CORRUPTED_INFOROM: "the GPU's InfoROM is corrupt: contact the vendor (RMA)",
    ERROR_UNKNOWN: "check dmesg for NVIDIA Xid errors and `nvidia-smi`; reinstall the driver or reboot",
}

#: Exit statuses of ``gpuselect health`` (2 stays "bad usage").
EXIT_FINE, EXIT_WARNINGS, EXIT_CRITICAL = 0, 1, 3


def _dev(g: GpuInfo) -> str:
    return f"gpu{g.index} ({g.name or 'unknown GPU'})"


def _amd(g: GpuInfo) -> bool:
    return g.vendor == "AMD" and g.source == "amdsmi"


def _sensor(g: GpuInfo) -> str:
    return {"hotspot": "junction (hotspot)", "edge": "edge"}.get(g.temperature_sensor or "", "GPU core")


def _unknown(rule: str, g: GpuInfo, what: str, reason: str | None) -> Finding:
    return Finding(rule, Severity.UNKNOWN, _dev(g), f"{what}: not checked", reason or "no reading available")


# --- per-GPU rules ---------------------------------------------------------------------------


def rule_state(g: GpuInfo) -> Iterable[Finding]:
    if g.state == "lost":
        yield Finding(
            "gpu.lost",
            Severity.CRITICAL,
            _dev(g),
            "GPU is lost: it stopped answering the driver",
            g.unavailable.get("device") or g.unavailable.get("name") or "NVML reports the GPU as lost",
            remedy="save your work, then reset the GPU (nvidia-smi -r) or reboot; if it recurs, check seating, power and the kernel log for Xid 79",
            value="lost",
            threshold="responding",
        )
    elif g.state == "error":
        why = g.unavailable.get("device", "NVML could not open the device")
        if why == reason_for_code(ERROR_NO_PERMISSION):
            # A GPU this user or job may not open (a Slurm job's cgroup, a container's device list)
            # is not a failing GPU: it was critical, with the remedy of a broken driver.
            yield Finding(
                "gpu.no_permission",
                Severity.WARNING,
                _dev(g),
                "GPU not accessible to this user or job",
                why,
                remedy="if you should have this GPU: add your user to the group owning /dev/nvidia* (often "
                "'video'), or check the job's GPU allocation (Slurm cgroups) or the container's device list",
                value="no permission",
                threshold="opens",
            )
            return
        yield Finding(
            "gpu.error",
            Severity.CRITICAL,
            _dev(g),
            "GPU could not be opened",
            why,
            remedy="check the driver installation and the kernel log (dmesg) for NVIDIA Xid errors",
            value="cannot open",
            threshold="opens",
        )


def rule_temperature(g: GpuInfo) -> Iterable[Finding]:
    rule = "gpu.temperature"
    th = g.temperature_thresholds
    remedy = "improve cooling: fans, airflow, dust filters, ambient temperature; check the fan curve"
    if g.temperature_c is None and (g.temperature_margin_c is None or th.slowdown_tlimit_c is None):
        yield _unknown(rule, g, "temperature", g.unavailable.get("temperature_c"))
        return
    if g.temperature_c is None or (
        th.slowdown_c is None
        and th.shutdown_c is None
        and th.slowdown_tlimit_c is not None
        and g.temperature_margin_c is not None
    ):
        # Only relative readings (newer GPUs): headroom = margin now - margin at slowdown.
        if g.temperature_margin_c is None or th.slowdown_tlimit_c is None:  # excluded by the check above
            raise RuntimeError("internal error: no temperature margin or slowdown limit")
        headroom = g.temperature_margin_c - th.slowdown_tlimit_c
        value, unit = headroom, "°C headroom"
        crit, warn = 0.0, T.TEMP_WARN_MARGIN_BELOW_SLOWDOWN_C
        sev = Severity.CRITICAL if headroom <= crit else Severity.WARNING if headroom <= warn else Severity.OK
        yield Finding(
            rule,
            sev,
            _dev(g),
            f"{headroom} °C below the slowdown point",
            f"T.Limit margin {g.temperature_margin_c} °C; slowdown trips at margin {th.slowdown_tlimit_c} °C (card's own thresholds)",
            remedy=None if sev is Severity.OK else remedy,
            value=value,
            threshold=crit if sev is Severity.CRITICAL else warn,
            unit=unit,
            source=T.TEMP_SOURCE,
        )
        return
    t = g.temperature_c
    # AMD's 110 °C is the junction's limit: an edge sensor reads well below the junction, so it is
    # judged against the generic limits (review 14)
    fallback = T.AMD_TEMP_FALLBACK if _amd(g) and g.temperature_sensor != "edge" else T.TEMP_FALLBACK
    if th.slowdown_c is not None or th.shutdown_c is not None:
        slowdown = th.slowdown_c if th.slowdown_c is not None else float(th.shutdown_c or 0) - 5
        warn = slowdown - T.TEMP_WARN_MARGIN_BELOW_SLOWDOWN_C
        crit, source = slowdown, T.AMD_TEMP_SOURCE if _amd(g) else T.TEMP_SOURCE
    else:
        warn, crit, source = fallback.warning, fallback.critical, fallback.source
    if th.shutdown_c is not None and t >= th.shutdown_c:
        sev, title = Severity.CRITICAL, f"temperature {t} °C is at or above the shutdown point ({th.shutdown_c} °C)"
    elif t >= crit:
        sev, title = Severity.CRITICAL, f"temperature {t} °C is at or above the slowdown point ({crit:.0f} °C)"
    elif t >= warn:
        sev, title = Severity.WARNING, f"temperature {t} °C is within {crit - t:.0f} °C of slowdown ({crit:.0f} °C)"
    else:
        sev, title = Severity.OK, f"temperature {t} °C ({crit - t:.0f} °C below slowdown)"
    where = _sensor(g)
    shutdown = "n/a" if th.shutdown_c is None else f"{th.shutdown_c} °C"  # not "n/a °C"
    detail = (
        f"{where} at {t} °C; slowdown {th.slowdown_c} °C, shutdown {shutdown} (card's own thresholds)"
        if th.slowdown_c is not None
        else f"{where} at {t} °C; the card reports only its shutdown point ({th.shutdown_c} °C): slowdown taken "
        f"5 °C below it"
        if th.shutdown_c is not None
        else f"{where} at {t} °C; the card reports no thresholds, "
        + ("AMD's junction limit used" if fallback is T.AMD_TEMP_FALLBACK else "generic limits used")
    )
    yield Finding(
        rule,
        sev,
        _dev(g),
        title,
        detail,
        remedy=None if sev is Severity.OK else remedy,
        value=t,
        threshold=crit if sev is Severity.CRITICAL else warn,
        unit="°C",
        source=source,
    )
    yield from _memory_temperature(g)


def _na(v: object) -> str:
    return "n/a" if v is None else str(v)


def _memory_temperature(g: GpuInfo) -> Iterable[Finding]:
    """VRAM/HBM against the card's own memory limit (AMD reports both; NVML gives no reading)."""
    t, limit = g.memory_temperature_c, g.temperature_thresholds.memory_max_c
    if t is None or limit is None:
        return
    warn = limit - T.TEMP_WARN_MARGIN_BELOW_SLOWDOWN_C
    if t >= limit:
        sev, title = Severity.CRITICAL, f"memory temperature {t} °C is at or above its limit ({limit} °C)"
    elif t >= warn:
        sev, title = Severity.WARNING, f"memory temperature {t} °C is within {limit - t} °C of its limit ({limit} °C)"
    else:
        sev, title = Severity.OK, f"memory temperature {t} °C ({limit - t} °C below its limit)"
    yield Finding(
        "gpu.memory_temperature",
        sev,
        _dev(g),
        title,
        f"VRAM at {t} °C; the card's memory limit is {limit} °C",
        remedy=None if sev is Severity.OK else "improve cooling: airflow over the card, ambient temperature, fans",
        value=t,
        threshold=limit if sev is Severity.CRITICAL else warn,
        unit="°C",
        source=T.AMD_TEMP_SOURCE if _amd(g) else T.TEMP_SOURCE,
    )


def rule_clock_events(g: GpuInfo) -> Iterable[Finding]:
    rule = "gpu.clock_events"
    if g.clock_event_reasons is None:
        yield _unknown(rule, g, "throttle reasons", g.unavailable.get("clock_event_reasons"))
        return
    bad = [r for r in g.clock_event_reasons if r in T.CLOCK_EVENT_SEVERITY]
    if not bad:
        active = ", ".join(g.clock_event_reasons) or "none"
        yield Finding(
            rule,
            Severity.OK,
            _dev(g),
            "no throttling",
            f"active clock-event reasons: {active}",
            value=active,
            threshold="no thermal or power slowdown",
            source=T.CLOCK_EVENT_SOURCE,
        )
        return
    busy = (g.utilization.gpu_percent or 0) >= T.PCIE_LOAD_UTILIZATION_PERCENT
    for reason in bad:
        sev_name, title, remedy = T.CLOCK_EVENT_SEVERITY[reason]
        sev = Severity(sev_name)
        if reason == "sw_power_cap" and not busy:
            sev = Severity.INFO  # a power cap at low load is harmless
        yield Finding(
            f"{rule}.{reason}",
            sev,
            _dev(g),
            title,
            f"NVML reports the active clock-event reason '{reason}' (SM clock {g.clocks.sm_mhz} of max {g.clocks.sm_max_mhz} MHz)",
            remedy=remedy,
            value=reason,
            threshold="not active",
            source=T.CLOCK_EVENT_SOURCE,
        )


def rule_power_limit(g: GpuInfo) -> Iterable[Finding]:
    rule = "gpu.power_limit"
    if g.power_limit_w is None or g.power_default_limit_w is None:
        reason = g.unavailable.get("power_limit_w") or g.unavailable.get("power_default_limit_w")
        yield _unknown(rule, g, "power limit", reason)
        return
    floor = g.power_default_limit_w * (1 - T.POWER_LIMIT_LOWERED_FRACTION)
    if g.power_limit_w < floor:
        pct = 100 * g.power_limit_w / g.power_default_limit_w
        yield Finding(
            rule,
            Severity.WARNING,
            _dev(g),
            f"power limit lowered to {g.power_limit_w:.0f} W ({pct:.0f} % of the default {g.power_default_limit_w:.0f} W)",
            "a lower power cap makes the GPU clock down under sustained load, so training runs slower",
            remedy="raise it back with "
            + ("`sudo amd-smi set --power-cap <watts>`" if _amd(g) else "`sudo nvidia-smi -pl <watts>`")
            + " if cooling and the power supply allow",
            value=round(g.power_limit_w, 1),
            threshold=round(floor, 1),
            unit="W",
            source=T.AMD_POWER_SOURCE if _amd(g) else T.POWER_SOURCE,
        )
    else:
        yield Finding(
            rule,
            Severity.OK,
            _dev(g),
            f"power limit {g.power_limit_w:.0f} W (default {g.power_default_limit_w:.0f} W)",
            "the enforced limit is at its default",
            value=round(g.power_limit_w, 1),
            threshold=round(floor, 1),
            unit="W",
            source=T.AMD_POWER_SOURCE if _amd(g) else T.POWER_SOURCE,
        )


def rule_pcie(g: GpuInfo) -> Iterable[Finding]:
    rule = "gpu.pcie_link"
    p = g.pcie
    if p.generation is None or p.width is None or p.max_generation is None or p.max_width is None:
        reason = next(
            (
                g.unavailable[k]
                for k in ("pcie.generation", "pcie.width", "pcie.max_generation", "pcie.max_width")
                if k in g.unavailable
            ),
            None,
        )
        yield _unknown(rule, g, "PCIe link", reason)
        return
    now, best = f"Gen{p.generation} x{p.width}", f"Gen{p.max_generation} x{p.max_width}"
    degraded = p.generation < p.max_generation or p.width < p.max_width
    util = g.utilization.gpu_percent
    under_load = util is not None and util >= T.PCIE_LOAD_UTILIZATION_PERCENT
    if degraded and under_load:
        yield Finding(
            rule,
            Severity.WARNING,
            _dev(g),
            f"PCIe link runs at {now} under load, below its maximum {best}",
            f"at {util} % utilisation the link should run at full speed; host↔device copies are slower",
            remedy="reseat the card, use a full x16 slot wired to the CPU, check BIOS PCIe settings and riser cables",
            value=now,
            threshold=best,
            source=T.AMD_PCIE_SOURCE if _amd(g) else T.PCIE_SOURCE,
        )
    elif degraded:
        yield Finding(
            rule,
            Severity.INFO,
            _dev(g),
            f"PCIe link at {now} (max {best}) while idle",
            "links train down at idle to save power; judged only under load (run `gpuselect health` during a benchmark)",
            value=now,
            threshold=best,
            source=T.AMD_PCIE_SOURCE if _amd(g) else T.PCIE_SOURCE,
        )
    else:
        yield Finding(
            rule,
            Severity.OK,
            _dev(g),
            f"PCIe link {now}",
            "running at its maximum",
            value=now,
            threshold=best,
            source=T.AMD_PCIE_SOURCE if _amd(g) else T.PCIE_SOURCE,
        )
    if p.gpu_max_generation is not None and p.gpu_max_generation > p.max_generation:
        yield Finding(
            "gpu.pcie_slot",
            Severity.INFO,
            _dev(g),
            f"the GPU supports PCIe Gen{p.gpu_max_generation} but this system's link tops out at Gen{p.max_generation}",
            "the slot or platform limits host↔device bandwidth",
            value=f"Gen{p.max_generation}",
            threshold=f"Gen{p.gpu_max_generation}",
            source="NVML max PCIe generation of GPU vs link",
        )


def rule_ecc(g: GpuInfo) -> Iterable[Finding]:
    e = g.ecc
    if e.enabled is None and e.uncorrected_volatile is None and e.uncorrected_aggregate is None:
        why = g.unavailable.get("ecc.enabled")
        if why and "not supported" not in why:  # the query failed: say so, do not drop the check
            yield _unknown("gpu.ecc", g, "ECC mode", why)
        return  # GeForce and many workstation cards have no ECC: nothing to judge
    if e.enabled is False:
        yield Finding(
            "gpu.ecc",
            Severity.INFO,
            _dev(g),
            "ECC is disabled",
            "memory errors would go undetected",
            remedy="enable RAS with the amdgpu.ras_enable=1 kernel parameter and reboot, if you need error detection"
            if _amd(g)
            else "enable it with `sudo nvidia-smi -e 1` and reboot, if you need error detection",
            value="disabled",
            threshold="enabled",
        )
        return
    vol, agg = e.uncorrected_volatile, e.uncorrected_aggregate
    if vol is None and agg is None:
        yield _unknown("gpu.ecc", g, "ECC error counters", g.unavailable.get("ecc.uncorrected_volatile"))
    elif vol:
        yield Finding(
            "gpu.ecc",
            Severity.CRITICAL,
            _dev(g),
            f"{vol} uncorrectable ECC error(s) since the driver loaded",
            "uncorrectable memory errors corrupt or kill the running job",
            remedy="drain the GPU, reset it, run the vendor's memory diagnostics ("
            + ("ROCm Validation Suite, rvs" if _amd(g) else "dcgmi diag -r 3")
            + "); RMA if errors recur",
            value=vol,
            threshold=T.ECC_UNCORRECTED_VOLATILE.critical,
            unit="errors",
            source=T.AMD_ECC_SOURCE if _amd(g) else T.ECC_UNCORRECTED_VOLATILE.source,
        )
    elif agg:
        yield Finding(
            "gpu.ecc",
            Severity.WARNING,
            _dev(g),
            f"{agg} uncorrectable ECC error(s) over the GPU's lifetime",
            "none since the driver loaded; the history is worth watching",
            remedy="watch the counter; check retired pages / remapped rows",
            value=agg,
            threshold=1,
            unit="errors",
            source=T.ECC_UNCORRECTED_VOLATILE.source,
        )
    else:
        yield Finding(
            "gpu.ecc",
            Severity.OK,
            _dev(g),
            "no uncorrectable ECC errors",
            "ECC enabled, counters at zero",
            value=0,
            threshold=1,
            unit="errors",
        )


def rule_retired_pages(g: GpuInfo) -> Iterable[Finding]:
    e = g.ecc
    if e.retired_pages_single_bit is None and e.retired_pages_double_bit is None:
        return  # Ampere and newer remap rows instead (see rule_row_remap); GeForce has neither
    total = (e.retired_pages_single_bit or 0) + (e.retired_pages_double_bit or 0)
    th = T.RETIRED_PAGES
    if _amd(g) and e.retired_pages_threshold:
        th = T.Threshold(
            min(th.warning, e.retired_pages_threshold), e.retired_pages_threshold, "pages", T.AMD_BAD_PAGE_SOURCE
        )
    sev = Severity.CRITICAL if total >= th.critical else Severity.WARNING if total >= th.warning else Severity.OK
    remedy = (
        None
        if sev is Severity.OK
        else "plan a replacement (RMA) — the memory is wearing out; retired pages reduce usable VRAM"
    )
    yield Finding(
        "gpu.retired_pages",
        sev,
        _dev(g),
        f"{total} retired memory page(s)",
        f"{total} page(s) retired after uncorrectable errors (the driver's bad-page list)"
        + (f"; the driver marks the GPU bad at {e.retired_pages_threshold}" if e.retired_pages_threshold else "")
        if _amd(g)
        else f"{e.retired_pages_double_bit or 0} from double-bit errors, {e.retired_pages_single_bit or 0} from repeated single-bit errors",
        remedy=remedy,
        value=total,
        threshold=th.critical if sev is Severity.CRITICAL else th.warning,
        unit="pages",
        source=th.source,
    )
    if e.retired_pages_pending:
        yield Finding(
            "gpu.retired_pages_pending",
            Severity.WARNING,
            _dev(g),
            "page retirement pending",
            "pages are marked for retirement at the next driver reload",
            remedy="reset the GPU or reboot to retire them",
            value="pending",
            threshold="none pending",
            source=th.source,
        )


def rule_row_remap(g: GpuInfo) -> Iterable[Finding]:
    e = g.ecc
    if e.remapped_rows_failure is None:
        return
    source = "NVIDIA DCGM: any row-remap failure fails; pending remaps need a GPU reset"
    if e.remapped_rows_failure:
        yield Finding(
            "gpu.row_remap",
            Severity.CRITICAL,
            _dev(g),
            "row remapping failed",
            "the GPU ran out of spare memory rows to replace failing ones",
            remedy="take the GPU out of service and RMA it",
            value="failure",
            threshold="no failure",
            source=source,
        )
    elif e.remapped_rows_pending:
        yield Finding(
            "gpu.row_remap",
            Severity.WARNING,
            _dev(g),
            "row remap pending",
            f"{e.remapped_rows_uncorrectable or 0} row(s) remapped after uncorrectable errors; the remap applies at the next reset",
            remedy="reset the GPU (nvidia-smi -r) when idle",
            value="pending",
            threshold="none pending",
            source=source,
        )
    else:
        yield Finding(
            "gpu.row_remap",
            Severity.OK,
            _dev(g),
            "no row-remap failure or pending remap",
            f"rows remapped so far: {e.remapped_rows_correctable or 0} correctable, {e.remapped_rows_uncorrectable or 0} uncorrectable",
            value=(e.remapped_rows_correctable or 0) + (e.remapped_rows_uncorrectable or 0),
            threshold="no failure",
            source=source,
        )


def rule_foreign_memory(g: GpuInfo) -> Iterable[Finding]:
    if not g.memory_total_bytes:
        return
    th = T.FOREIGN_MEMORY
    used = g.memory_used_bytes or 0
    listed = sum(p.used_memory_bytes or 0 for p in g.processes or [])
    unattributed = (used - listed) / g.memory_total_bytes
    others = [p for p in g.processes or [] if not p.is_self]
    if unattributed >= T.UNATTRIBUTED_MEMORY_FRACTION:
        # Memory in use that no listed process accounts for: the list is unavailable, or a
        # container, MIG or permissions hide other jobs' processes ("the GPU is free" with 60 of
        # 80 GiB in use), whatever else is listed. A warning, as another job's memory is.
        why = (
            "the process list is unavailable (" + g.unavailable.get("processes.compute", "not read on this GPU") + ")"
            if g.processes is None
            else "no listed process accounts for it (processes in other containers, or that you may not see, "
            "are not listed)"
        )
        yield Finding(
            "gpu.memory_in_use",
            Severity.WARNING,
            _dev(g),
            f"{(used - listed) / GIB:.1f} GiB of VRAM in use by something not listed",
            f"{why}. The GPU may be busy with another job.",
            remedy=f"check `{'amd-smi process' if _amd(g) else 'nvidia-smi'}` on the host (outside the container), "
            "or pick another GPU",
            value=round(unattributed, 3),
            threshold=T.UNATTRIBUTED_MEMORY_FRACTION,
            unit="fraction of VRAM",
        )
    if g.processes is None:
        return
    held = sum(p.used_memory_bytes or 0 for p in others)
    frac = held / g.memory_total_bytes

    def amount(p: Any) -> str:
        return "? GiB" if p.used_memory_bytes is None else f"{p.used_memory_bytes / GIB:.1f} GiB"

    who = ", ".join(f"{p.name or '?'} (pid {p.pid}, {amount(p)})" for p in others[:5])

    def held_by_others(severity: Severity, title: str, detail: str, value: float, remedy: str | None = None) -> Finding:
        # One rule id, judged against one threshold, whatever the severity.
        return Finding(
            "gpu.memory_held_by_others",
            severity,
            _dev(g),
            title,
            detail,
            remedy=remedy,
            value=value,
            threshold=th.warning,
            unit="fraction of VRAM",
            source=th.source,
        )

    if frac >= th.warning:
        # Another job using the card is about availability, not a fault: a warning however much
        # it holds (the card itself is fine; it is just not free).
        most = " — most of the card is taken" if frac >= th.critical else ""
        yield held_by_others(
            Severity.WARNING,
            f"in use by another job: {held / GIB:.1f} GiB of VRAM ({100 * frac:.0f} %) held by other processes{most}",
            f"held by: {who}. The GPU is busy, not faulty.",
            round(frac, 3),
            remedy="wait for that job, ask its owner, or pick another GPU; otherwise your batch size must shrink",
        )
    elif others:
        yield held_by_others(
            Severity.INFO, f"{len(others)} other process(es) use this GPU", f"held by: {who}", round(frac, 3)
        )
    elif unattributed < T.UNATTRIBUTED_MEMORY_FRACTION:  # else "the GPU is free" beside the warning above
        yield held_by_others(Severity.OK, "no other process holds GPU memory", "the GPU is free", 0.0)


GPU_RULES: tuple[Callable[[GpuInfo], Iterable[Finding]], ...] = (
    rule_temperature,
    rule_clock_events,
    rule_power_limit,
    rule_pcie,
    rule_ecc,
    rule_retired_pages,
    rule_row_remap,
    rule_foreign_memory,
)


# --- system rules ----------------------------------------------------------------------------


def rule_no_gpu(s: Snapshot) -> Iterable[Finding]:
    if s.gpus or s.nvml.error_code in _NVML_INIT_FAILURES:  # a failing GPU is not "no GPU" (rule_nvml)
        return
    # both backends' reasons: an AMD machine without amdsmi read only "nvidia-ml-py is not importable"
    reasons = (("NVML", s.nvml.error), ("amdsmi", s.amd.error))
    why = "; ".join(f"{name}: {err}" for name, err in reasons if err) or "no GPU backend found a device"
    yield Finding(
        "system.no_gpu",
        Severity.INFO,
        "system",
        "no GPU found: training runs on the CPU",
        f"{why}. Small networks with small batches train fine on a fast CPU; large models and "
        "batches need a GPU (typically 10-30× faster).",
        remedy="run `gpuselect estimate` to see whether your workload needs a GPU at all",
        value=0,
        threshold=1,
        unit="GPUs",
    )


def rule_nvml(s: Snapshot) -> Iterable[Finding]:
    code = s.nvml.error_code
    if code == ERROR_LIB_RM_VERSION_MISMATCH:
        yield Finding(
            "nvml.driver_mismatch",
            Severity.CRITICAL,
            "system",
            "NVIDIA driver/library version mismatch",
            s.nvml.error or "",
            remedy="reboot (the driver was updated but the old kernel module is still loaded), or reinstall one driver version",
            value="mismatch",
            threshold="matching versions",
            source="NVML_ERROR_LIB_RM_VERSION_MISMATCH",
        )
    elif code == ERROR_DRIVER_NOT_LOADED:
        yield Finding(
            "nvml.driver_not_loaded",
            Severity.WARNING,
            "system",
            "NVIDIA driver installed but not loaded",
            s.nvml.error or "",
            remedy="load it (sudo modprobe nvidia) or check Secure Boot / dmesg for why it failed",
            value="not loaded",
            threshold="loaded",
        )
    elif code == ERROR_NO_PERMISSION:
        yield Finding(
            "nvml.no_permission",
            Severity.WARNING,
            "system",
            "no permission to query the NVIDIA driver",
            s.nvml.error or "",
            remedy="add your user to the group owning /dev/nvidia* (often 'video') or check container device mounts",
            value="denied",
            threshold="allowed",
        )
    elif code in _NVML_INIT_FAILURES and not s.gpus:
        yield Finding(
            "nvml.init_failed",
            Severity.CRITICAL,
            "system",
            "the NVIDIA driver did not start: a GPU may be there and failing",
            s.nvml.error or "",
            remedy=_NVML_INIT_FAILURES[code],
            value=f"NVML error {code}",
            threshold="NVML starts",
        )
    elif s.nvml.available and s.nvml.error:
        yield Finding(
            "nvml.error",
            Severity.WARNING,
            "system",
            "NVML works only partly",
            s.nvml.error,
            remedy="run `nvidia-smi` to see whether the driver answers; check the kernel log (dmesg) for NVIDIA "
            "Xid errors, and reboot or reinstall the driver if it keeps failing",
            value="partial",
            threshold="every query answers",
        )


def _amdgpu_present() -> bool:
    """Whether the kernel shows the amdgpu driver or AMD's compute device (/dev/kfd)."""
    import os

    return os.path.exists("/dev/kfd") or os.path.isdir("/sys/module/amdgpu")


def rule_amdsmi(s: Snapshot) -> Iterable[Finding]:
    """amdsmi installed but failing: an AMD GPU may be there unseen (the driver not loaded, no
    access to /dev/kfd), which otherwise reads as "no GPU found"."""
    amd = s.amd
    if amd.available:
        if amd.error:
            yield Finding(
                "amdsmi.error",
                Severity.WARNING,
                "system",
                "amdsmi works only partly",
                amd.error,
                remedy="run `amd-smi list` to see whether the driver answers; check the kernel log (dmesg) for "
                "amdgpu errors and that the amdsmi package matches the installed ROCm",
                value="partial",
                threshold="every query answers",
            )
        return
    if not amd.error or "not installed" in amd.error:
        return
    # A warning only where the kernel shows an AMD GPU driver: amdsmi installed without ROCm on a
    # machine with no AMD GPU (a laptop, a CI image with every extra) is no sign of one (review 14).
    unseen = not s.gpus and _amdgpu_present()
    yield Finding(
        "amdsmi.init_failed",
        Severity.WARNING if unseen else Severity.INFO,
        "system",
        "amdsmi is installed but cannot read AMD GPUs" + (": an AMD GPU may be there unseen" if unseen else ""),
        amd.error,
        remedy="check that the amdgpu driver is loaded (lsmod | grep amdgpu), that the amdsmi package matches the "
        "installed ROCm, and that you may open /dev/kfd and /dev/dri (groups 'video' and 'render')",
        value="failed",
        threshold="amdsmi starts",
    )


def _version_tuple(v: str | None) -> tuple[int, ...] | None:
    if not v:
        return None
    parts: list[int] = []
    for piece in v.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


#: PyTorch's CUDA wheels as of torch 2.13 (2026): cu130 (stable; Turing and newer, a driver for CUDA
#: 13) and cu126 (legacy; Maxwell to Hopper, drivers for CUDA 12.x by minor-version compatibility);
#: cu128/cu129 are gone since 2.12 and cu118 since 2.8 (pytorch/pytorch#147383, release notes of
#: 2.8 and 2.12). A wheel for a newer CUDA than the driver's will not start.
_WHL = "https://download.pytorch.org/whl"


def torch_cuda_wheel(s: Snapshot, nvidia: list[GpuInfo]) -> str:
    """What to install for a CUDA build of torch this driver and these GPUs can run (a remedy)."""
    driver = _version_tuple(s.nvml.cuda_driver_version)
    ccs = [cc for g in nvidia if (cc := _version_tuple(g.compute_capability)) is not None]
    if any(cc < (5, 0) for cc in ccs):
        return (
            "no current torch build runs on a GPU older than Maxwell (compute capability 5.0): "
            "train on the CPU, or on a newer GPU"
        )
    pre_turing = any(cc < (7, 5) for cc in ccs)
    blackwell = any(cc >= (10, 0) for cc in ccs)
    if pre_turing and blackwell:
        return (
            "no one torch build runs on both this machine's pre-Turing and Blackwell GPUs: install cu130 "
            f"(`pip install torch --index-url {_WHL}/cu130`) for the Blackwell ones"
        )
    if driver is None or driver >= (13,):
        if pre_turing:
            return (
                f"reinstall torch with CUDA support: `pip install torch --index-url {_WHL}/cu126` "
                "(CUDA 13 builds do not run on GPUs older than Turing)"
            )
        return f"reinstall torch with CUDA support: `pip install torch --index-url {_WHL}/cu130`" + (
            "" if driver else ", or cu126 if your driver is older than CUDA 13"
        )
    if blackwell:
        return (
            f"update the driver to one for CUDA 13, then `pip install torch --index-url {_WHL}/cu130`: the cu126 "
            f"build your CUDA {s.nvml.cuda_driver_version} driver could run has no Blackwell kernels"
        )
    if driver >= (12,):
        return (
            f"reinstall torch with CUDA support: `pip install torch --index-url {_WHL}/cu126`, the build your "
            f"CUDA {s.nvml.cuda_driver_version} driver runs"
        )
    return (
        f"your driver supports only CUDA {s.nvml.cuda_driver_version}, older than any current torch build: update "
        f"the NVIDIA driver, or install the last build for CUDA 11: `pip install 'torch<2.8' --index-url {_WHL}/cu118`"
    )


def _framework_rules(s: Snapshot, fw: FrameworkInfo) -> Iterable[Finding]:
    if not fw.installed:
        return
    nvidia = [g for g in s.gpus if g.vendor == "NVIDIA" and g.source == "nvml"]
    dev = f"{fw.name} {fw.version or ''}".strip()
    if nvidia and fw.cpu_only_build:
        yield Finding(
            f"framework.{fw.name}.cpu_only",
            Severity.WARNING,
            dev,
            f"{fw.name} is a CPU-only build on a machine with an NVIDIA GPU",
            f"{fw.name} {fw.version} was built without CUDA, so it will never use the GPU",
            remedy=torch_cuda_wheel(s, nvidia)
            if fw.name == "torch"
            else f"reinstall {fw.name} with CUDA support (its CUDA build for your driver)",
            value="cpu-only",
            threshold="CUDA build",
        )
    built, driver = _version_tuple(fw.built_cuda), _version_tuple(s.nvml.cuda_driver_version)
    if nvidia and built and driver:
        if built[0] > driver[0]:
            yield Finding(
                f"framework.{fw.name}.cuda_too_new",
                Severity.CRITICAL,
                dev,
                f"{fw.name} needs CUDA {fw.built_cuda} but the driver supports only CUDA {s.nvml.cuda_driver_version}",
                f"a CUDA {built[0]}.x build cannot run on a driver for CUDA {driver[0]}.x: {fw.name} will not see the GPU",
                remedy=f"update the NVIDIA driver, or install a {fw.name} build for CUDA {s.nvml.cuda_driver_version} or older"
                if fw.name != "torch"
                else torch_cuda_wheel(s, nvidia),
                value=fw.built_cuda,
                threshold=s.nvml.cuda_driver_version,
                source=T.CUDA_COMPAT_SOURCE,
            )
        elif built[:2] > driver[:2]:
            yield Finding(
                f"framework.{fw.name}.cuda_minor_newer",
                Severity.INFO,
                dev,
                f"{fw.name} was built for CUDA {fw.built_cuda}, newer than the driver's {s.nvml.cuda_driver_version}",
                "minor-version compatibility lets it run, but some features (PTX JIT of newer code) may fail",
                remedy="update the driver when convenient",
                value=fw.built_cuda,
                threshold=s.nvml.cuda_driver_version,
                source=T.CUDA_COMPAT_SOURCE,
            )
    if fw.probed and s.gpus:
        if fw.probe_error:
            yield Finding(
                f"framework.{fw.name}.probe_failed",
                Severity.WARNING,
                dev,
                f"{fw.name} failed to start",
                fw.probe_error,
                remedy=f"reinstall {fw.name}; run `python -c 'import {fw.name}'` to see the full error",
                value="failed",
                threshold="imports",
            )
        elif fw.sees_gpu is False and not (nvidia and fw.cpu_only_build):  # the CPU-only warning says why
            amd = all(g.vendor == "AMD" for g in s.gpus)
            build, visible = ("ROCm", "HIP_VISIBLE_DEVICES") if amd else ("CUDA", "CUDA_VISIBLE_DEVICES")
            remedy = f"check the {fw.name} build ({build} vs CPU), the driver version, and {visible}"
            if amd and (fw.cpu_only_build or fw.built_cuda):
                # the build is known not to run on AMD: say which to install, never a CUDA wheel
                what = "a CPU-only build" if fw.cpu_only_build else f"a CUDA {fw.built_cuda} build"
                remedy = (
                    f"this {fw.name} is {what}, which cannot use AMD GPUs: install its ROCm build for your ROCm "
                    + (
                        f"(`pip install torch --index-url {_WHL}/rocm<version>`, a ROCm version pytorch.org lists for this torch)"
                        if fw.name == "torch"
                        else "(its ROCm build for your ROCm)"
                    )
                )
            yield Finding(
                f"framework.{fw.name}.no_gpu",
                Severity.CRITICAL,
                dev,
                f"the GPU is there but {fw.name} does not see it",
                f"{len(s.gpus)} GPU(s) detected by the driver; {fw.name} reports none",
                remedy=remedy,
                value=0,
                threshold=len(s.gpus),
                unit="GPUs",
            )
        elif fw.sees_gpu:
            yield Finding(
                f"framework.{fw.name}.sees_gpu",
                Severity.OK,
                dev,
                f"{fw.name} sees the GPU",
                "devices: " + ", ".join(fw.devices),
                value=len(fw.devices),
                threshold=1,
                unit="GPUs",
            )


def rule_frameworks(s: Snapshot) -> Iterable[Finding]:
    for fw in s.frameworks:
        yield from _framework_rules(s, fw)


def rule_ram(s: Snapshot) -> Iterable[Finding]:
    vram = sum(g.memory_total_bytes or 0 for g in s.gpus)
    if not vram:
        return
    ratio = s.memory.total_bytes / vram
    th = T.RAM_TO_VRAM
    if ratio < th.warning:
        sev, title = Severity.WARNING, "system RAM is smaller than the GPUs' memory"
    elif ratio < T.RAM_TO_VRAM_COMFORTABLE:
        sev, title = Severity.INFO, "system RAM is less than twice the GPUs' memory"
    else:
        sev, title = Severity.OK, "system RAM is ample for the GPUs' memory"
    yield Finding(
        "system.ram_vs_vram",
        sev,
        "system",
        title,
        # the ratio as the value states it (2 decimals): "0.1x" beside "measured: 0.15 x" read as two figures
        f"{s.memory.total_bytes / GIB:.0f} GiB RAM for {vram / GIB:.0f} GiB of VRAM ({ratio:.2f}×)",
        remedy=None if sev is Severity.OK else "add RAM: data loading, pinned buffers and checkpoints need host memory",
        value=round(ratio, 2),
        threshold=th.warning if sev is Severity.WARNING else T.RAM_TO_VRAM_COMFORTABLE,
        unit="× total VRAM",
        source=th.source,
    )


SYSTEM_RULES: tuple[Callable[[Snapshot], Iterable[Finding]], ...] = (
    rule_no_gpu,
    rule_nvml,
    rule_amdsmi,
    rule_frameworks,
    rule_ram,
)


@dataclass
class HealthReport:
    findings: list[Finding]
    counts: dict[str, int] = field(default_factory=dict)
    worst: Severity = Severity.OK
    exit_code: int = EXIT_FINE


def evaluate(snapshot: Snapshot, extra: Iterable[Finding] = ()) -> HealthReport:
    """All findings for a snapshot (plus ``extra`` ones, e.g. from a benchmark), worst first."""
    findings: list[Finding] = []
    for rule in SYSTEM_RULES:
        findings.extend(rule(snapshot))
    for g in snapshot.gpus:
        findings.extend(rule_state(g))
        if g.state != "ok":
            continue  # a lost GPU's other readings are meaningless
        if g.source == "torch":
            continue  # no driver-level readings to judge
        for gpu_rule in GPU_RULES:
            findings.extend(gpu_rule(g))
    findings.extend(extra)
    findings.sort(key=lambda f: -f.severity.rank)
    counts = {sev.value: sum(1 for f in findings if f.severity is sev) for sev in Severity}
    worst = max((f.severity for f in findings), key=lambda s: s.rank, default=Severity.OK)
    if worst is Severity.CRITICAL:
        code = EXIT_CRITICAL
    elif worst is Severity.WARNING:
        code = EXIT_WARNINGS
    else:
        code = EXIT_FINE
    return HealthReport(findings=findings, counts=counts, worst=worst, exit_code=code)
