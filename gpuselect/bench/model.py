"""Typed, JSON-serialisable benchmark results and progress events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BenchConfig:
    quick: bool = False
    devices: tuple[str, ...] = ("all",)  # "cpu", "cuda:0", "mps", or "all"
    #: Seconds spent timing one measurement (split across its repeats).
    budget_s: float | None = None
    #: Batch sizes of the training-step measurements.
    batch_sizes: tuple[int, ...] | None = None
    models: tuple[str, ...] = ("simple_cnn", "lstm", "transformer")
    #: Seconds one device may take in all: past it, measurements keep only what they have and
    #: the remaining training batches are skipped (recorded). Keeps a throttled or slow machine
    #: inside the promised time (quick: 10 s in all on a 2-core CPU-only machine). The first
    #: device's box starts with the run, so it includes importing torch (~2 s on that VM).
    time_box_s: float | None = None

    def measurement_budget_s(self) -> float:
        return self.budget_s if self.budget_s is not None else (0.25 if self.quick else 1.2)

    def device_time_box_s(self) -> float:
        return self.time_box_s if self.time_box_s is not None else (8.0 if self.quick else 50.0)

    def train_batch_sizes(self) -> tuple[int, ...]:
        if self.batch_sizes is not None:
            return self.batch_sizes
        return (1, 16, 128) if self.quick else (1, 8, 32, 128, 512)


@dataclass(frozen=True)
class ProgressEvent:
    step: str  # "cuda:0 matmul bf16"
    fraction: float  # 0..1 of the whole run
    elapsed_s: float
    eta_s: float | None  # estimated seconds left
    #: The figures measured so far, copied (the run goes on changing its own): a face shows each
    #: as it comes, not all at 100 %.
    devices: tuple[DeviceResult, ...] = ()


@dataclass
class Timing:
    """A timed measurement: the median of repeats and its spread (min..max of the repeats)."""

    value: float  # in the unit of the figure it belongs to
    low: float
    high: float
    repeats: int
    size: str  # what was measured: "8192x8192x8192", "1.0 GiB"
    note: str | None = None


@dataclass
class TrainStep:
    model: str
    batch_size: int
    samples_per_s: float
    step_ms: float
    includes_host_to_device_copy: bool


@dataclass
class DeviceResult:
    device: str  # "cpu", "cuda:0", "mps"
    name: str
    kind: str  # cpu, cuda, rocm, mps, xpu
    matmul_tflops: dict[str, float | None] = field(default_factory=dict)
    matmul_detail: dict[str, Timing] = field(default_factory=dict)
    memory_bandwidth_gbs: float | None = None  # device copy, bytes read + written
    bandwidth_detail: dict[str, Timing] = field(default_factory=dict)  # copy, triad
    host_to_device_gbs: float | None = None  # pinned
    device_to_host_gbs: float | None = None  # pinned
    transfer_detail: dict[str, Timing] = field(default_factory=dict)  # h2d/d2h pinned/pageable, small latency
    small_transfer_latency_us: float | None = None
    launch_overhead_us: float | None = None
    train_steps: list[TrainStep] = field(default_factory=list)
    spec_ratio: dict[str, float] | None = None  # measured / catalog spec, per figure
    spec_name: str | None = None  # the catalog entry compared against
    skipped: dict[str, str] = field(default_factory=dict)  # what was not measured, and why
    backoffs: list[str] = field(default_factory=list)  # out-of-memory back-offs taken
    telemetry_before: dict[str, Any] | None = None
    telemetry_after: dict[str, Any] | None = None
    memory_total_bytes: int | None = None
    duration_s: float = 0.0
    #: A CPU's logical cores when it was measured: with the name, what tells this machine's result
    #: from another's (VMs share names such as "Intel(R) Xeon(R) Processor").
    logical_cores: int | None = None


@dataclass
class BenchReport:
    devices: list[DeviceResult]
    quick: bool
    torch_version: str | None
    cancelled: bool = False
    duration_s: float = 0.0
    #: Share of the machine's CPU time other processes used while it ran (Linux; None elsewhere):
    #: a busy machine's figures are low, and they feed this machine's estimates.
    other_cpu_share: float | None = None
    #: When and by which gpuselect the record was taken (UTC, ISO 8601): a saved record is matched to
    #: a machine by its devices alone, so the estimate names its date and a reader can tell its age.
    taken_at: str | None = None
    app_version: str | None = None
    method: str = (
        "median of repeated, synchronised runs after warm-up; matmul TFLOP/s = 2*M*N*K/time; "
        "bandwidth counts bytes read + written; training steps include forward, backward, "
        "optimizer step and (on accelerators) the host-to-device copy of each batch"
    )
