"""Metric families from a detection snapshot, its health report and a benchmark result, and the
Prometheus text exposition (format 0.0.4) of them. Pure: no prometheus_client needed here.

Names and labels follow NVIDIA's dcgm-exporter (etc/default-counters.csv and the labels it puts
on every GPU sample: ``gpu``, ``UUID``, ``device``, ``modelName``, ``pci_bus_id``, ``Hostname``)
so dashboards written for it work. Units are DCGM's: °C, W, %, MHz, MiB. dcgm-exporter types a
few of these as counters; we type every DCGM-named family as a gauge, because prometheus_client
appends ``_total`` to counters and that would change DCGM's names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024
SEVERITIES = ("ok", "info", "unknown", "warning", "critical")
SEVERITY_VALUE = {s: i for i, s in enumerate(SEVERITIES)}  # gpuselect_health_worst_severity's scale


@dataclass
class Family:
    name: str
    kind: str  # gauge (every family here; see the module note on counters)
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, labels: dict[str, str], value: float | None) -> None:
        if value is None:
            return
        v = float(value)
        if math.isfinite(v):
            self.samples.append((labels, v))


def _gpu_labels(g: Any, host: str) -> dict[str, str]:
    labels = {
        "gpu": str(g.index),
        "UUID": g.uuid or "",
        "device": f"nvidia{g.index}" if g.vendor == "NVIDIA" else f"gpu{g.index}",
        "modelName": g.name or "",
        "Hostname": host,
    }
    if g.pci_bus_id:
        labels["pci_bus_id"] = g.pci_bus_id
    return labels


#: (family name, help, how to read it from a GpuInfo). DCGM's own help texts, shortened.
_GPU_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temperature_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_draw_w),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "Enforced power limit (in W).", lambda g: g.power_limit_w),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.utilization.gpu_percent),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", lambda g: g.utilization.memory_percent),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        lambda g: None if g.memory_used_bytes is None else g.memory_used_bytes / MIB,
    ),
    (
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB).",
        lambda g: (
            None
            if g.memory_used_bytes is None or g.memory_total_bytes is None
            else (g.memory_total_bytes - g.memory_used_bytes) / MIB
        ),
    ),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda g: g.clocks.sm_mhz),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", lambda g: g.clocks.memory_mhz),
    ("DCGM_FI_DEV_FAN_SPEED", "Fan speed (in %).", lambda g: g.fan_percent),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", lambda g: g.pcie.replay_counter),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "PCIe link generation now.", lambda g: g.pcie.generation),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCIe link width (lanes) now.", lambda g: g.pcie.width),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "Total number of single-bit volatile ECC errors.",
        lambda g: g.ecc.corrected_volatile,
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "Total number of double-bit volatile ECC errors.",
        lambda g: g.ecc.uncorrected_volatile,
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "Total number of double-bit persistent ECC errors.",
        lambda g: g.ecc.uncorrected_aggregate,
    ),
    (
        "DCGM_FI_DEV_RETIRED_SBE",
        "Total number of retired pages due to single-bit errors.",
        lambda g: g.ecc.retired_pages_single_bit,
    ),
    (
        "DCGM_FI_DEV_RETIRED_DBE",
        "Total number of retired pages due to double-bit errors.",
        lambda g: g.ecc.retired_pages_double_bit,
    ),
    (
        "DCGM_FI_DEV_RETIRED_PENDING",
        "Total number of pages pending retirement.",
        lambda g: None if g.ecc.retired_pages_pending is None else int(g.ecc.retired_pages_pending),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors.",
        lambda g: g.ecc.remapped_rows_correctable,
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors.",
        lambda g: g.ecc.remapped_rows_uncorrectable,
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "Whether remapping of rows has failed.",
        lambda g: None if g.ecc.remapped_rows_failure is None else int(g.ecc.remapped_rows_failure),
    ),
)


#: The labels that say which GPU a series is (kept from its last good read by GpuIdentities).
IDENTITY_LABELS = ("UUID", "modelName", "pci_bus_id")


@dataclass
class _Identity:
    index: int
    labels: dict[str, str]  # gpu, UUID, device, modelName, pci_bus_id: as on its last good read
    source: str
    vendor: str


class GpuIdentities:
    """Each GPU's identity labels from its last good read, for a long-running exporter.

    A lost GPU answers nothing: NVML gives no UUID or name, so its ``gpuselect_gpu_info`` series
    lost its UUID and modelName labels and became a new series (dashboards and alerts keyed on
    UUID lost it just when it mattered). A GPU that is not "ok" at an index where a GPU was seen
    takes that GPU's labels, unless that GPU answers elsewhere now (NVML renumbers when a GPU drops
    out); a remembered GPU missing from the snapshot altogether is reported with state "lost".
    Remembered for the exporter's lifetime, keyed by UUID."""

    def __init__(self) -> None:
        self._by_uuid: dict[str, _Identity] = {}

    def learn(self, gpus: Iterable[Any], host: str) -> None:
        for g in gpus:
            if g.state == "ok" and g.uuid:
                labels = {k: v for k, v in _gpu_labels(g, host).items() if k != "Hostname"}
                old = self._by_uuid.get(g.uuid)
                if old is not None:  # a reading that failed this time keeps the earlier value
                    labels = {**old.labels, **{k: v for k, v in labels.items() if v}}
                self._by_uuid[g.uuid] = _Identity(g.index, labels, g.source, g.vendor)

    def recall(self, g: Any, answering: set[str]) -> _Identity | None:
        """The remembered GPU a not-ok GPU is: by its UUID if it still has one, else by index."""
        if g.uuid:
            return self._by_uuid.get(g.uuid)
        return next(
            (i for u, i in self._by_uuid.items() if i.index == g.index and u not in answering and i.source == g.source),
            None,
        )

    def missing(self, accounted: set[str]) -> list[_Identity]:
        return [i for u, i in self._by_uuid.items() if u not in accounted]


def gpu_families(snapshot: Any, identities: GpuIdentities | None = None) -> list[Family]:
    """Every GPU reading the snapshot has, one family per field (absent readings: no sample).
    ``identities`` (a long-running exporter's memory) keeps a lost GPU's identity labels."""
    host = snapshot.host
    fams = [Family(name, "gauge", help_) for name, help_, _ in _GPU_FIELDS]
    info = Family(
        "gpuselect_gpu_info", "gauge", "1 per GPU detected; its state (ok, lost, error) and backend as labels."
    )
    mem_total = Family("gpuselect_gpu_memory_total_bytes", "gauge", "GPU memory in total (bytes).")
    answering = {g.uuid for g in snapshot.gpus if g.state == "ok" and g.uuid}
    accounted = set(answering)
    if identities is not None:
        identities.learn(snapshot.gpus, host)
    for g in snapshot.gpus:
        labels = _gpu_labels(g, host)
        known = identities.recall(g, answering) if identities is not None and g.state != "ok" else None
        if known is not None:
            accounted.add(known.labels.get("UUID", ""))
            for key in IDENTITY_LABELS:
                if not labels.get(key) and known.labels.get(key):
                    labels[key] = known.labels[key]
        info.add({**labels, "state": g.state, "source": g.source, "vendor": g.vendor}, 1)
        mem_total.add(labels, g.memory_total_bytes)
        if g.state != "ok":
            continue  # a lost GPU's readings are stale or missing
        for fam, (_, _, read) in zip(fams, _GPU_FIELDS, strict=True):
            try:
                fam.add(labels, read(g))
            except (TypeError, AttributeError):
                continue
    for gone in identities.missing(accounted) if identities is not None else []:
        # NVML no longer lists it (fallen off the bus): still this GPU's series, now "lost"
        info.add({**gone.labels, "Hostname": host, "state": "lost", "source": gone.source, "vendor": gone.vendor}, 1)
    count = Family("DCGM_FI_DEV_COUNT", "gauge", "Number of Devices on the node.")
    count.add({"Hostname": host}, len(snapshot.gpus))
    return [count, info, mem_total, *fams]


def health_families(report: Any, host: str) -> list[Family]:
    """Findings by severity, the worst severity, and one sample per finding that is not ok."""
    counts = Family("gpuselect_health_findings", "gauge", "Health findings on this machine, by severity.")
    for sev in SEVERITIES:
        counts.add({"severity": sev, "Hostname": host}, report.counts.get(sev, 0))
    worst = Family(
        "gpuselect_health_worst_severity",
        "gauge",
        "Worst health severity: 0 ok, 1 info, 2 unknown (not checkable), 3 warning, 4 critical.",
    )
    worst.add({"Hostname": host}, SEVERITY_VALUE[report.worst.value])
    status = Family(
        "gpuselect_health_exit_code",
        "gauge",
        "What `gpuselect health` would exit with: 0 fine, 1 warnings, 3 critical.",
    )
    status.add({"Hostname": host}, report.exit_code)
    each = Family(
        "gpuselect_health_finding",
        "gauge",
        "One per finding that is not ok; the value is its severity on the worst-severity scale. Labels are "
        "stable while the condition lasts: no reading in them (a title with the temperature made a new series, "
        "and a new alert, at every degree).",
    )
    for f in report.findings:
        if f.severity.value == "ok":
            continue
        each.add(
            {
                "rule": f.id,
                "device": f.device or "",
                "severity": f.severity.value,
                "Hostname": host,
            },
            SEVERITY_VALUE[f.severity.value],
        )
    return [counts, worst, status, each]


def bench_families(devices: Iterable[dict[str, Any]], host: str) -> list[Family]:
    """A saved benchmark's figures (``gpuselect bench --format json``'s devices) and spec ratios."""
    mm = Family("gpuselect_bench_matmul_tflops", "gauge", "Measured matmul rate by precision (TFLOP/s).")
    bw = Family(
        "gpuselect_bench_memory_bandwidth_gbs", "gauge", "Measured device memory bandwidth, read + write (GB/s)."
    )
    h2d = Family("gpuselect_bench_host_to_device_gbs", "gauge", "Measured pinned host-to-device copy rate (GB/s).")
    ratio = Family(
        "gpuselect_bench_spec_ratio", "gauge", "Measured / the catalog's spec figure, by figure (1.0 = the spec)."
    )
    for d in devices:
        labels = {"device": str(d.get("device")), "name": str(d.get("name") or ""), "Hostname": host}
        for prec, v in (d.get("matmul_tflops") or {}).items():
            if isinstance(v, (int, float)):
                mm.add({**labels, "precision": str(prec)}, v)
        for fam, key in ((bw, "memory_bandwidth_gbs"), (h2d, "host_to_device_gbs")):
            if isinstance(d.get(key), (int, float)):
                fam.add(labels, d[key])
        for fig, v in (d.get("spec_ratio") or {}).items():
            if isinstance(v, (int, float)):
                ratio.add({**labels, "figure": str(fig), "spec": str(d.get("spec_name") or "")}, v)
    return [mm, bw, h2d, ratio]


_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _escape(v: str) -> str:
    return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _number(v: float) -> str:
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def render(families: Iterable[Family]) -> str:
    """The Prometheus text exposition format (version 0.0.4)."""
    out = []
    for fam in families:
        if not fam.samples:
            continue  # no reading of this kind on this machine
        out.append(f"# HELP {fam.name} {fam.help.replace(chr(92), chr(92) * 2).replace(chr(10), ' ')}")
        out.append(f"# TYPE {fam.name} {fam.kind}")
        for labels, value in fam.samples:
            if not all(_LABEL_NAME.match(k) for k in labels):
                raise ValueError(f"invalid Prometheus label name in {labels}")
            lab = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            out.append(f"{fam.name}{{{lab}}} {_number(value)}" if lab else f"{fam.name} {_number(value)}")
    return "\n".join(out) + "\n"


def machine_families(
    snapshot: Any,
    health: Any,
    bench_devices: Iterable[dict[str, Any]] = (),
    identities: GpuIdentities | None = None,
) -> list[Family]:
    return (
        gpu_families(snapshot, identities)
        + health_families(health, snapshot.host)
        + bench_families(bench_devices, snapshot.host)
    )
