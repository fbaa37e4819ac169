"""Estimate a workload on every catalog GPU: fit, batch, throughput, time, cost, energy — and the
four-stage recommendation. Pure functions over typed values; the CLI, GUI and report call them."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuselect.catalog import Catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.errors import UsageError
from gpuselect.estimate.memory import OPTIMIZERS, fit_on_gpu, mixed, suggestions
from gpuselect.estimate.perf import PerfModel, compute_peak
from gpuselect.workloads.model import Workload

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
ERROR_BAND_FILE = Path(__file__).resolve().parent / "data" / "error_band.json"
EXTERNAL_BAND_FILE = Path(__file__).resolve().parent / "data" / "external_band.json"


@dataclass(frozen=True)
class Assumptions:
    precision: str = "bf16"
    batch_size: int | None = None  # None: the workload's default, capped by memory ("auto")
    dataset_size: int | None = None  # samples per epoch; None: the workload's default
    epochs: int | None = None
    deadline_hours: float = 72.0
    budget_usd: float | None = None
    electricity_usd_per_kwh: float = 0.15  # a mid-range retail price (US average ~0.17, EU higher)
    grid_kg_co2_per_kwh: float = 0.45  # IEA: world average carbon intensity of electricity, ~0.45 kg/kWh (2023)
    utilisation: float = 0.85  # fraction of TDP drawn while training
    optimizer: str = "adamw"
    checkpointing: bool | None = None  # None: only where the model does not fit otherwise (common practice)
    max_gpus: int = 8
    gpus_per_node: int = 8
    network_gbs: float = 25.0  # between nodes: 200 Gb/s InfiniBand per node
    comm_overlap: float = 0.5  # share of the all-reduce hidden behind the backward pass (DDP buckets)
    amortisation_years: float | None = None  # spread a purchase over its useful life (None: whole price)

    def validate(self) -> None:
        if self.precision not in PRECISIONS:
            raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.optimizer not in OPTIMIZERS:
            raise UsageError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {self.optimizer!r}")
        checks = [
            ("batch size", self.batch_size, 1, 1_000_000),
            ("dataset size", self.dataset_size, 1, 1e13),
            ("epochs", self.epochs, 1, 100_000),
            ("deadline", self.deadline_hours, 1e-3, 1e6),
            ("budget", self.budget_usd, 1e-3, 1e10),
            ("electricity price", self.electricity_usd_per_kwh, 0, 100),
            ("grid carbon intensity", self.grid_kg_co2_per_kwh, 0, 5),
            ("utilisation", self.utilisation, 0.01, 1),
            ("max GPUs", self.max_gpus, 1, 4096),
        ]
        for label, value, lo, hi in checks:
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise UsageError(f"the {label} must be a number, not {value!r}")
            if not lo <= value <= hi:
                raise UsageError(f"the {label} {value:g} is outside {lo:g}..{hi:g}")


@dataclass
class EstimateRow:
    gpu_id: str
    name: str
    family: str
    count: int
    fits: bool
    batch_size: int | None  # per GPU
    throughput_samples_per_s: float | None
    epoch_time_s: float | None
    total_time_h: float | None
    buy_cost_usd: float | None
    cloud_cost_usd: float | None
    energy_kwh: float | None
    co2_kg: float | None
    error_band: float  # ± fraction, from the validated accuracy
    vram_gb: float | None = None  # per GPU
    sharded: bool = False
    meets_deadline: bool = False
    break_even_hours: float | None = None  # buying beats renting after this much use
    price_note: str | None = None
    note: str | None = None
    suggestions: list[str] = field(default_factory=list)


@dataclass
class LocalEstimate:
    device: str  # "cpu" or a GPU name
    name: str
    throughput_samples_per_s: float | None
    total_time_h: float | None
    basis: str  # how it was estimated
    error_band: float
    fits: bool = True


@dataclass
class EstimateResult:
    workload: Workload
    assumptions: Assumptions
    rows: list[EstimateRow]
    local: list[LocalEstimate]
    recommendation: Recommendation


def error_band(precision: str, *, anchored_kind: str | None = None, model: str | None = None) -> float:
    """The validated p90 relative error (benchmarks/estimator_accuracy.py): for a measured
    reference ``model``, its own p90 at that precision where it had enough rows, else the
    precision's; for any other workload the anchored band of its kind, or the overall anchored
    band where its kind was not tested."""
    try:
        bands = json.loads(ERROR_BAND_FILE.read_text())
        if anchored_kind is not None:
            by_kind = bands.get("p90_anchored_by_kind") or {}
            return float(by_kind.get(anchored_kind, bands["p90_anchored"]))
        pc = "fp32" if precision in ("fp32", "tf32") else "fp16"
        own = (bands.get("p90_by_model") or {}).get(model or "", {}).get(pc)
        if own is not None:
            return float(own)
        return float(bands["p90_by_precision"].get(pc, bands["p90"]))
    except (OSError, KeyError, ValueError, TypeError):
        return 1.0


def external_bands() -> dict[str, float]:
    """p90 errors measured on data the model was not fitted on (benchmarks/estimator_external.py):
    ``p90_amd`` (AMD cards against a V100) and ``p90_scaling`` (data-parallel scaling)."""
    try:
        doc = json.loads(EXTERNAL_BAND_FILE.read_text())
        return {k: float(doc[k]) for k in ("p90_amd", "p90_scaling")}
    except (OSError, KeyError, ValueError, TypeError):
        return {}


def combined_band(band: float, e: GpuEntry, count: int, external: dict[str, float]) -> float:
    """A row's band: the workload's, compounded with the validated error of each extrapolation the
    row adds (a vendor absent from the calibration data, more than one GPU). Compounding
    ((1+a)(1+b)-1) is conservative: it assumes the errors can add up in the same direction."""
    factor = 1.0 + band
    if e.vendor != "NVIDIA":
        factor *= 1.0 + external.get("p90_amd", 1.0)  # not validated at all without that file: +100 %
    if count > 1:
        factor *= 1.0 + external.get("p90_scaling", 1.0)
    return round(factor - 1.0, 4)  # a p90 known to ~3 digits; no 0.11200000000000001 in the JSON


def _price(e: GpuEntry) -> tuple[float | None, str | None]:
    if e.street_price_usd:
        return e.street_price_usd, f"street price {e.street_price_date or ''}".strip()
    if e.launch_price_usd:
        return e.launch_price_usd, f"launch price {e.launch_price_date or ''}".strip()
    return None, None


def _link_gbs(e: GpuEntry, count: int, a: Assumptions) -> float:
    """Per-direction bandwidth each GPU gets for the all-reduce."""
    if count > a.gpus_per_node:
        return a.network_gbs / a.gpus_per_node * 2  # ring across nodes, hierarchical: node link shared
    if e.gpu_link_gbs:
        return e.gpu_link_gbs / 2
    per_direction = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}.get(e.pcie_gen or 3, 16.0)
    return per_direction * 0.7  # PCIe protocol and peer-to-peer efficiency


def _row(w: Workload, e: GpuEntry, count: int, a: Assumptions, perf: PerfModel, band: float) -> EstimateRow:
    base = EstimateRow(e.id, e.name, e.family, count, False, None, None, None, None, None, None, None, None, band, vram_gb=e.vram_gb)
    if compute_peak(e, a.precision) is None:
        base.note = f"{a.precision} is not supported on this GPU"
        return base
    ckpt = bool(a.checkpointing)
    fit = fit_on_gpu(w, e.vram_gb, a.precision, optimizer=a.optimizer, checkpointing=ckpt, batch_size=a.batch_size)
    if not fit.fits and a.checkpointing is None:
        ckpt = True
        fit = fit_on_gpu(w, e.vram_gb, a.precision, optimizer=a.optimizer, checkpointing=True, batch_size=a.batch_size)
    sharded = False
    if not fit.fits and count > 1:
        fit = fit_on_gpu(w, e.vram_gb, a.precision, optimizer=a.optimizer, checkpointing=True, batch_size=a.batch_size, shards=count)
        sharded = fit.fits
    base.batch_size = fit.batch_size
    base.sharded = sharded
    if not fit.fits:
        base.suggestions = suggestions(w, e.vram_gb, a.precision, a.optimizer, ckpt, a.batch_size) if count == 1 else []
        base.note = f"needs {fit.state_gb + 1.0:.1f} GB before activations; {fit.usable_gb:.1f} GB usable" if fit.max_batch == 0 else \
            f"at most batch {fit.max_batch} fits"
        return base
    base.fits = True
    one = perf.predict(w, a.precision, e, batch=fit.batch_size)
    if one is None:
        base.note = "no throughput model for this GPU and precision"
        return base
    if ckpt or sharded:
        one *= 0.75  # recomputing the forward pass: ~4/3 of the work
        base.note = "with gradient checkpointing" + (" and the model state sharded (FSDP/ZeRO-3)" if sharded else "")
    # Mixed precision (torch.autocast) keeps FP32 parameters, so DDP all-reduces FP32 gradients;
    # sharded training (FSDP mixed precision) typically reduces in 16 bits.
    grad_bytes = w.trainable_params * (2 if sharded and mixed(a.precision) else 4)
    step_compute = fit.batch_size / one
    comm = 0.0
    if count > 1:
        comm = 2 * (count - 1) / count * grad_bytes / (_link_gbs(e, count, a) * 1e9)
        if sharded:
            comm *= 1.5  # FSDP: all-gather weights twice and reduce-scatter gradients
    step = step_compute + max(0.0, comm - a.comm_overlap * step_compute)
    thr = count * fit.batch_size / step
    samples = (a.dataset_size or w.default_dataset_size) * (a.epochs or w.default_epochs)
    base.throughput_samples_per_s = thr
    base.epoch_time_s = (a.dataset_size or w.default_dataset_size) / thr
    hours = samples / thr / 3600
    base.total_time_h = hours
    base.meets_deadline = hours <= a.deadline_hours
    kwh = e.tdp_w * a.utilisation * count * hours / 1000
    base.energy_kwh = kwh
    base.co2_kg = kwh * a.grid_kg_co2_per_kwh
    price, note = _price(e)
    energy_cost = kwh * a.electricity_usd_per_kwh
    if price is not None:
        hardware = price * count
        if a.amortisation_years:
            hardware *= min(1.0, hours / (a.amortisation_years * 365 * 24))
        base.buy_cost_usd = hardware + energy_cost
        base.price_note = note
    if e.cloud_usd_per_hour:
        base.cloud_cost_usd = e.cloud_usd_per_hour * count * hours
        hourly_energy = e.tdp_w * a.utilisation * count / 1000 * a.electricity_usd_per_kwh
        if price is not None and e.cloud_usd_per_hour * count > hourly_energy:
            base.break_even_hours = price * count / (e.cloud_usd_per_hour * count - hourly_energy)
    return base


def local_cpu_estimate(w: Workload, a: Assumptions, *, cores: int | None, mhz: float | None, features: list[str],
                       measured_tflops: float | None = None, name: str = "this CPU") -> LocalEstimate:
    """The CPU's own estimate: from its benchmark when given, else a rough peak (stated)."""
    samples = (a.dataset_size or w.default_dataset_size) * (a.epochs or w.default_epochs)
    if measured_tflops:
        eff, basis, band = measured_tflops * 0.5, "measured matmul rate x 0.5 (training is not all matmul)", 0.5
    elif cores and mhz:
        per_cycle = 32 if "avx512f" in features else 16 if "avx2" in features else 8
        eff = cores * mhz * 1e6 * per_cycle / 1e12 * 0.25
        basis = f"unmeasured: {cores} cores x {mhz:.0f} MHz x {per_cycle} FP32 FLOP/cycle x 25 % efficiency (run `gpuselect bench` for a measured figure)"
        band = 1.0
    else:
        return LocalEstimate("cpu", name, None, None, "no CPU figures available", 1.0)
    thr = eff * 1e12 / w.training_flops_per_sample
    return LocalEstimate("cpu", name, thr, samples / thr / 3600, basis, band)


#: A healthy H100 SXM5 sustained 69-70 % of its dense BF16/FP16 spec in gpuselect's benchmark
#: (docs/validation/h100-2026-11-22) - the one card measured so far; the estimator's predictions
#: describe cards in that state. A measured ratio below it scales the local card's estimate down.
HEALTHY_MATMUL_SPEC_RATIO = 0.69


def local_gpu_estimate(
    w: Workload, a: Assumptions, catalog: Catalog, perf: PerfModel, *, name: str | None, memory_bytes: int | None,
    device: str, spec_ratio: dict[str, float] | None = None,
) -> LocalEstimate:
    """This machine's GPU: its catalog prediction, scaled down when its own benchmark shows it
    falling short of what a healthy card of its kind reaches."""
    match = catalog.match(name or "", memory_bytes) if name else None
    if match is None:
        return LocalEstimate(device, name or "unknown GPU", None, None, "not in the catalog: no estimate", 1.0, fits=False)
    r = _row(w, match.entry, 1, a, perf, error_band(a.precision, anchored_kind=None if w.id in perf.models else w.kind, model=w.id))
    basis = f"catalog entry {match.entry.id}; unmeasured (`gpuselect bench` measures it)"
    thr, hours = r.throughput_samples_per_s, r.total_time_h
    key = "matmul_" + ("fp16" if a.precision == "fp16" else "bf16" if a.precision == "bf16" else "tf32" if a.precision == "tf32" else "fp32")
    if spec_ratio and key in spec_ratio and thr:
        measured = spec_ratio[key]
        scale = min(1.0, measured / HEALTHY_MATMUL_SPEC_RATIO)
        thr, hours = thr * scale, (hours / scale if hours else hours)
        basis = (f"catalog entry {match.entry.id}, anchored on this card's benchmark: {100 * measured:.0f} % of its "
                 f"{key.split('_')[1].upper()} spec" + (f", so times are scaled by 1/{scale:.2f}" if scale < 1 else " (healthy)"))
    return LocalEstimate(device, name or match.entry.name, thr, hours, basis, r.error_band, r.fits)


def estimate(
    w: Workload, a: Assumptions, catalog: Catalog, perf: PerfModel, *, gpu_ids: list[str] | None = None,
    local: list[LocalEstimate] | None = None, owned: Sequence[OwnedGpu] = (),
) -> EstimateResult:
    """Every plausible catalog option (``recommend.plausible_count``), this machine's CPU and GPUs
    (``local``), and the recommendation. ``owned``: the user's GPUs, which form one option together
    and reduce what a purchase of the same card costs."""
    a.validate()
    entries = catalog.entries
    if gpu_ids:
        unknown = [g for g in gpu_ids if catalog.get(g) is None]
        if unknown:
            raise UsageError(f"unknown GPU id(s): {', '.join(unknown)}; `gpuselect catalog` lists them")
        entries = [e for e in entries if e.id in gpu_ids]
    band = error_band(a.precision, anchored_kind=None if w.id in perf.models else w.kind, model=w.id)
    counts = [1]
    while counts[-1] * 2 <= a.max_gpus:
        counts.append(counts[-1] * 2)
    rows = []
    external = external_bands()
    for e in entries:
        for n in counts:
            if plausible_count(e, n, a.gpus_per_node):
                rows.append(_row(w, e, n, a, perf, combined_band(band, e, n, external)))
    by_id = {e.id: e for e in catalog.entries}
    own = own_option(owned, by_id, lambda e, n: _row(w, e, n, a, perf, combined_band(band, e, n, external)), a)
    owned_n = own.count if own is not None else 0
    if own is not None:
        rows = account_for_owned(rows, own.gpu_id, owned_n, _price(by_id[own.gpu_id])[0])
    excluded = [f"{g.device} ({g.name}): {g.problem}" for g in owned if g.problem]
    local = local or []
    return EstimateResult(w, a, rows, local, recommend(rows, local, a, w, own=own, owned_n=owned_n, excluded=excluded))


# The recommendation lives in recommend.py; these names stay importable from here.
from gpuselect.estimate.recommend import (  # noqa: E402
    STAGE_NAMES,
    OwnedGpu,
    Recommendation,
    account_for_owned,
    own_option,
    plausible_count,
    recommend,
)

__all__ = ["STAGE_NAMES", "Assumptions", "EstimateResult", "EstimateRow", "LocalEstimate", "OwnedGpu", "Recommendation",
           "estimate", "recommend"]
