"""AMD GPUs through ROCm's ``amdsmi`` (optional extra). Without ROCm, importing amdsmi raises
(often ``KeyError``) and prints to stdout; both are contained here so stdout stays clean.

Every amdsmi call is guarded on its own: a call that raises leaves its readings ``None`` with the
error said once in ``GpuInfo.unavailable`` (under the first field it feeds), never hides the GPU
or the other readings. Dictionary values amdsmi cannot read come back as the string "N/A" (or a
UINT_MAX sentinel): both read as unknown. Units follow the ROCm 6.x Python API reference
(docs/reference/amdsmi-py-api.md in ROCm/amdsmi); where releases differ, both are accepted.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

from gpuselect.hardware.types import (
    BackendStatus,
    Clocks,
    EccInfo,
    GpuInfo,
    GpuProcess,
    PcieLink,
    TemperatureThresholds,
    Utilization,
)

MIB = 1024 * 1024
#: amdsmi's "not available" sentinels in integer fields (UINT16/32/64_MAX).
_SENTINELS = {0xFFFF, 0xFFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF}
#: PCIe transfer rate per lane (GT/s) -> generation.
_PCIE_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def _import_amdsmi() -> Any:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        import amdsmi  # type: ignore[import-not-found]
    return amdsmi


def _num(value: Any) -> float | None:
    """A number from an amdsmi reading; "N/A", bools, sentinels and negatives are unknown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value < 0 or value in _SENTINELS:
        return None
    return float(value)


def _int(value: Any) -> int | None:
    n = _num(value)
    return None if n is None else round(n)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _reason(fn: str, exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if "NOT_SUPPORTED" in text.upper() or "not supported" in text.lower():
        return f"not supported on this GPU or driver ({fn}: {text})"
    return f"{fn} failed: {text}"


def _celsius(value: Any) -> int | None:
    """amdsmi_get_temp_metric returns °C (the C library divides hwmon's millidegrees by 1000,
    though the Python reference still says millidegrees): a value above 1000 is taken as m°C."""
    n = _num(value)
    if n is None:
        return None
    return round(n / 1000) if n > 1000 else round(n)


def _watts(value: Any) -> float | None:
    """Watts in amdsmi 6.4-7.1 ("in W"); older releases (and the power-cap call) give microwatts."""
    n = _num(value)
    if n is None or n == 0:
        return None
    return n / 1e6 if n > 10_000 else n


def _pcie_gen(rate: Any) -> int | None:
    """PCIe generation from a lane rate: MT/s in amdsmi 6.x (16000 = 16 GT/s), GT/s in some fakes."""
    n = _num(rate)
    if n is None or n == 0:
        return None
    gts = n / 1000 if n >= 1000 else n
    return next((gen for r, gen in _PCIE_GEN_BY_GTS.items() if abs(gts - r) < 0.3), None)


class _AmdReader:
    """Fills one GpuInfo from one amdsmi processor handle."""

    def __init__(self, amdsmi: Any, gpu: GpuInfo, handle: Any, sink: io.StringIO) -> None:
        self.a, self.gpu, self.h, self.sink = amdsmi, gpu, handle, sink
        self.said: dict[str, str] = {}  # reason -> the field it was first recorded under

    def note(self, field: str, reason: str) -> None:
        """Record why ``field`` is unknown; an error already said points at where it was said."""
        if field in self.gpu.unavailable:
            return
        first = self.said.setdefault(reason, field)
        self.gpu.unavailable[field] = reason if first == field else f"the same error as {first}"

    def call(self, field: str | None, fn: str, *args: Any) -> Any:
        """``amdsmi.fn(handle, *args)``, or None with the reason kept under ``field`` (None: the
        caller says it, see :meth:`last`)."""
        self.last = None
        func = getattr(self.a, fn, None)
        if not callable(func):
            self.last = f"this amdsmi has no {fn}"
        else:
            try:
                with contextlib.redirect_stdout(self.sink):
                    return func(self.h, *args)
            except Exception as exc:  # noqa: BLE001 - one metric failing never hides the GPU
                self.last = _reason(fn, exc)
        if field is not None:
            self.note(field, self.last)
        return None

    last: str | None = None  # why the latest call failed

    def enum(self, field: str, cls: str, member: str) -> Any:
        value = getattr(getattr(self.a, cls, None), member, None)
        if value is None:
            self.note(field, f"this amdsmi has no {cls}.{member}")
        return value

    def read(self) -> None:
        g = self.gpu
        asic = self.call("name", "amdsmi_get_gpu_asic_info")
        if isinstance(asic, dict):
            g.name = asic.get("market_name") or None
        g.pci_bus_id = self.call("pci_bus_id", "amdsmi_get_gpu_device_bdf")
        g.uuid = self.call("uuid", "amdsmi_get_gpu_device_uuid")
        board = self.call("serial", "amdsmi_get_gpu_board_info")
        if isinstance(board, dict):
            serial = board.get("product_serial")
            g.serial = serial.strip() if isinstance(serial, str) and serial.strip() not in ("", "N/A") else None
        vram = self.call("memory_total_bytes", "amdsmi_get_gpu_vram_usage")
        if isinstance(vram, dict):  # MB in current amdsmi
            total, used = _int(vram.get("vram_total")), _int(vram.get("vram_used"))
            g.memory_total_bytes = total * MIB if total is not None else None
            g.memory_used_bytes = used * MIB if used is not None else None
        self._power()
        self._temperatures()
        self._clocks()
        self._pcie()
        activity = self.call("utilization", "amdsmi_get_gpu_activity")
        if isinstance(activity, dict):
            g.utilization = Utilization(_int(activity.get("gfx_activity")), _int(activity.get("umc_activity")))
        g.ecc = self._ecc()
        g.processes = self._processes()
        # amdsmi has no clock-event bitmask like NVML's; its violation status differs by release
        g.unavailable.setdefault("clock_event_reasons", "not read through amdsmi (no throttle-reason bitmask)")

    def _power(self) -> None:
        g = self.gpu
        power = self.call("power_draw_w", "amdsmi_get_power_info")
        if isinstance(power, dict):
            # average_socket_power is "N/A" on MI300 (it is Navi's and MI200's): the first number
            draw = next(
                (
                    w
                    for w in (
                        _num(power.get("average_socket_power")),
                        _num(power.get("current_socket_power")),
                        _num(power.get("socket_power")),
                    )
                    if w is not None
                ),
                None,
            )
            g.power_draw_w = draw
            g.power_limit_w = _watts(power.get("power_limit"))
        self.last = None
        cap = self._power_cap()
        why = self.last or "amdsmi reported no power cap"
        if isinstance(cap, dict):
            # microwatts ("uW" in the ROCm 6.x reference)
            if g.power_limit_w is None:
                g.power_limit_w = _watts(cap.get("power_cap"))
            g.power_default_limit_w = _watts(cap.get("default_power_cap"))
            g.power_max_limit_w = _watts(cap.get("max_power_cap"))
        for field in ("power_limit_w", "power_default_limit_w"):
            if getattr(g, field) is None:
                self.note(field, why)

    def _power_cap(self) -> Any:
        """``amdsmi_get_power_cap_info(handle)`` in ROCm 6.x; later releases take a PPT sensor index."""
        func = getattr(self.a, "amdsmi_get_power_cap_info", None)
        if not callable(func):
            self.last = "this amdsmi has no amdsmi_get_power_cap_info"
            return None
        try:
            with contextlib.redirect_stdout(self.sink):
                try:
                    return func(self.h)
                except TypeError:
                    return func(self.h, 0)
        except Exception as exc:  # noqa: BLE001
            self.last = _reason("amdsmi_get_power_cap_info", exc)
            return None

    def _temperatures(self) -> None:
        """Hotspot (junction) first: it is what AMD's firmware throttles on, and MI200/MI300 report
        no edge temperature. Limits: hwmon's temp*_crit is where the card throttles, temp*_emergency
        where it shuts down (Linux kernel amdgpu docs, "HWMON Interfaces"), read through
        amdsmi_get_temp_metric's CRITICAL and EMERGENCY metrics."""
        g = self.gpu
        kind = "AmdSmiTemperatureType"
        metric = "AmdSmiTemperatureMetric"
        current = self.enum("temperature_c", metric, "CURRENT")
        if current is None:
            return
        failures: list[str] = []
        for sensor in ("HOTSPOT", "EDGE"):
            which = self.enum("temperature_c", kind, sensor)
            if which is None:
                continue
            t = _celsius(self.call(None, "amdsmi_get_temp_metric", which, current))
            if self.last and self.last not in failures:
                failures.append(self.last)
            if t is None or t == 0:  # 0 °C: an unpopulated sensor
                continue
            g.temperature_c, g.temperature_sensor = t, sensor.lower()
            th = TemperatureThresholds()
            crit, emergency = (
                self.enum("temperature_thresholds", metric, "CRITICAL"),
                self.enum("temperature_thresholds", metric, "EMERGENCY"),
            )
            if crit is not None:
                th.slowdown_c = _celsius(
                    self.call("temperature_thresholds.slowdown_c", "amdsmi_get_temp_metric", which, crit)
                )
            if emergency is not None:
                th.shutdown_c = _celsius(
                    self.call("temperature_thresholds.shutdown_c", "amdsmi_get_temp_metric", which, emergency)
                )
            g.temperature_thresholds = th
            g.unavailable.pop("temperature_c", None)
            break
        if g.temperature_c is None:
            self.note("temperature_c", "; ".join(failures) or "no hotspot or edge temperature reported")
        vram = self.enum("memory_temperature_c", kind, "VRAM")
        if vram is not None:
            g.memory_temperature_c = _celsius(
                self.call("memory_temperature_c", "amdsmi_get_temp_metric", vram, current)
            )
            crit = getattr(getattr(self.a, metric, None), "CRITICAL", None)
            if g.memory_temperature_c and crit is not None:
                g.temperature_thresholds.memory_max_c = _celsius(
                    self.call("temperature_thresholds.memory_max_c", "amdsmi_get_temp_metric", vram, crit)
                )

    def _clocks(self) -> None:
        g = self.gpu
        gfx = self.enum("clocks", "AmdSmiClkType", "GFX")
        mem = self.enum("clocks", "AmdSmiClkType", "MEM")
        c = Clocks()
        for which, now_attr, max_attr in ((gfx, "sm_mhz", "sm_max_mhz"), (mem, "memory_mhz", "memory_max_mhz")):
            if which is None:
                continue
            now, best = self._clock(f"clocks.{now_attr}", which)
            setattr(c, now_attr, now)
            setattr(c, max_attr, best)
        c.graphics_mhz, c.graphics_max_mhz = c.sm_mhz, c.sm_max_mhz
        g.clocks = c

    def _clock(self, field: str, which: Any) -> tuple[int | None, int | None]:
        """(now, max) MHz: amdsmi_get_clock_info ("clk", "cur_clk" before ROCm 6.1), else the DPM
        levels of amdsmi_get_clk_freq (Hz) and the current level's index."""
        info = self.call(field, "amdsmi_get_clock_info", which)
        if isinstance(info, dict):
            now = _int(info.get("clk", info.get("cur_clk")))
            if now is not None:
                self.gpu.unavailable.pop(field, None)
                return now, _int(info.get("max_clk"))
        freq = self.call(field, "amdsmi_get_clk_freq", which)
        if isinstance(freq, dict) and isinstance(freq.get("frequency"), list):
            levels = [f for f in (_num(v) for v in freq["frequency"]) if f]
            mhz = [round(f / 1e6) if f > 100_000 else round(f) for f in levels]
            index = _int(freq.get("current"))
            if mhz:
                self.gpu.unavailable.pop(field, None)
                return (mhz[index] if index is not None and index < len(mhz) else None), max(mhz)
        return None, None

    def _pcie(self) -> None:
        g = self.gpu
        info = self.call("pcie.generation", "amdsmi_get_pcie_info")
        if not isinstance(info, dict):
            return  # said once, under pcie.generation (the health rule reads any pcie.* reason)
        static, metric = _dict(info.get("pcie_static")), _dict(info.get("pcie_metric"))
        max_gen = _pcie_gen(static.get("max_pcie_speed")) or _int(static.get("max_pcie_interface_version"))
        g.pcie = PcieLink(
            generation=_pcie_gen(metric.get("pcie_speed")),
            max_generation=max_gen,
            width=_int(metric.get("pcie_width")),
            max_width=_int(static.get("max_pcie_width")),
            replay_counter=_int(metric.get("pcie_replay_count")),
        )
        for attr in ("generation", "width", "max_generation", "max_width"):
            if getattr(g.pcie, attr) is None:
                self.note(f"pcie.{attr}", "amdsmi_get_pcie_info reported it as N/A")

    def _ecc(self) -> EccInfo:
        """RAS counters (amdsmi_get_gpu_total_ecc_count: the amdgpu driver's error counts, see
        docs.kernel.org/gpu/amdgpu/ras.html) and the pages retired after uncorrectable errors
        (amdsmi_get_gpu_bad_page_info, kept in the card's EEPROM)."""
        e = EccInfo()
        mask = self.call("ecc.enabled", "amdsmi_get_gpu_ecc_enabled")
        if mask is not None and _int(mask) is not None:
            e.enabled = bool(mask)
        if e.enabled is False:
            self.gpu.unavailable["ecc.counters"] = "ECC is disabled on this GPU"
            return e
        counts = self.call("ecc.uncorrected_volatile", "amdsmi_get_gpu_total_ecc_count")
        if isinstance(counts, dict):
            e.uncorrected_volatile = _int(counts.get("uncorrectable_count"))
            e.corrected_volatile = _int(counts.get("correctable_count"))
            if e.enabled is None and e.uncorrected_volatile is not None:
                # counters that read are RAS at work; the bitmask call fails on some releases
                self.gpu.unavailable.pop("ecc.enabled", None)
        pages = self.call("ecc.retired_pages", "amdsmi_get_gpu_bad_page_info")
        if isinstance(pages, list):
            statuses = [str(p.get("status", "")).upper() if isinstance(p, dict) else "" for p in pages]
            e.retired_pages_double_bit = len(pages)
            e.retired_pages_pending = any("PENDING" in s for s in statuses)
            threshold = _int(self.call("ecc.retired_pages_threshold", "amdsmi_get_gpu_bad_page_threshold"))
            e.retired_pages_threshold = threshold or None
        return e

    def _processes(self) -> list[GpuProcess] | None:
        """ROCm 6.1+ returns a dict per process (pid, name, mem, memory_usage.vram_mem); older
        releases return opaque handles, left unread."""
        import os

        procs = self.call("processes.compute", "amdsmi_get_gpu_process_list")
        if not isinstance(procs, list):
            return None
        out: list[GpuProcess] = []
        for p in procs:
            if not isinstance(p, dict) or _int(p.get("pid")) is None:
                self.note("processes.compute", "this amdsmi lists processes as handles only")
                return None
            pid = _int(p.get("pid")) or 0
            usage = _dict(p.get("memory_usage"))
            vram = _int(usage.get("vram_mem"))
            name = p.get("name")
            out.append(
                GpuProcess(
                    pid=pid,
                    name=name if isinstance(name, str) and name not in ("", "N/A") else None,
                    used_memory_bytes=vram if vram is not None else _int(p.get("mem")),
                    kind="compute",
                    is_self=pid == os.getpid(),
                )
            )
        return sorted(out, key=lambda q: q.pid)


def label_physical_cards(gpus: list[GpuInfo]) -> None:
    """Several amdsmi devices with one board serial are one physical card: the two GCDs of an
    MI250/MI250X (each its own PCI device), or the partitions of a partitioned MI300. Without a
    serial nothing is grouped: a guess would be worse than two unrelated-looking GPUs."""
    cards: dict[str, list[GpuInfo]] = {}
    order: list[str] = []
    for g in gpus:
        key = g.serial or f"\0{g.index}"  # no serial: a card of its own, never grouped
        if key not in cards:
            cards[key] = []
            order.append(key)
        cards[key].append(g)
    for number, key in enumerate(order):
        members = cards[key]
        if len(members) < 2:
            continue
        part = "GCD" if any("MI250" in (g.name or "") for g in members) else "partition"
        for i, g in enumerate(sorted(members, key=lambda m: m.pci_bus_id or "")):
            g.physical_card = number
            g.card_label = f"{part} {i} of card {number}"


def _one_line(exc: BaseException) -> str:
    """amdsmi's messages carry raw newlines and tabs (its library's multi-line text): one line in a
    finding, a table cell or a log, and bounded."""
    return " ".join(str(exc).split())[:300]


def detect_amd(amdsmi: Any | None = None) -> tuple[BackendStatus, list[GpuInfo]]:
    if amdsmi is None:
        try:
            amdsmi = _import_amdsmi()
        except ModuleNotFoundError:
            return BackendStatus("amdsmi", False, error="amdsmi is not installed (optional extra 'amd')"), []
        except Exception as exc:  # noqa: BLE001 - KeyError without ROCm, OSError for the library
            return BackendStatus(
                "amdsmi", False, error=f"amdsmi cannot load ROCm ({type(exc).__name__}: {_one_line(exc)})"
            ), []
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            amdsmi.amdsmi_init()
    except Exception as exc:  # noqa: BLE001
        return BackendStatus("amdsmi", False, error=f"amdsmi_init failed: {_one_line(exc)}"), []
    status = BackendStatus("amdsmi", True)
    gpus: list[GpuInfo] = []
    shut_down: Callable[[], Any] = getattr(amdsmi, "amdsmi_shut_down", lambda: None)
    try:
        handles = amdsmi.amdsmi_get_processor_handles()
        for index, h in enumerate(handles):
            gpu = GpuInfo(index=index, vendor="AMD", name=None, source="amdsmi")
            _AmdReader(amdsmi, gpu, h, sink).read()
            gpus.append(gpu)
        label_physical_cards(gpus)
    except Exception as exc:  # noqa: BLE001
        status.error = f"amdsmi failed while listing GPUs: {exc}"
    finally:
        with contextlib.suppress(Exception), contextlib.redirect_stdout(sink):
            shut_down()
    return status, gpus
