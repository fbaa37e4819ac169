"""Estimate a workload on every catalog GPU: fit, batch, throughput, time, cost, energy — and the
four-stage recommendation. Pure functions over typed values; the CLI, GUI and report call them."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from gpuselect.catalog import Catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.errors import UsageError
from gpuselect.safe_io import finite_number
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
        """Every field checked once, here at the API boundary: a bad value is a UsageError naming
        it, never a ZeroDivisionError or TypeError from deep inside the estimator."""
        if not isinstance(self.precision, str) or self.precision not in PRECISIONS:
            raise UsageError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if not isinstance(self.optimizer, str) or self.optimizer not in OPTIMIZERS:
            raise UsageError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {self.optimizer!r}")
        if self.checkpointing is not None and not isinstance(self.checkpointing, bool):
            raise UsageError(f"checkpointing must be true, false or None (automatic), not {self.checkpointing!r}")
        # (label, value, lo, hi, whole number, may be None)
        checks: list[tuple[str, object, float, float, bool, bool]] = [
            ("batch size", self.batch_size, 1, 1_000_000, True, True),
            ("dataset size", self.dataset_size, 1, 1e13, True, True),
            ("epochs", self.epochs, 1, 100_000, True, True),
            ("deadline", self.deadline_hours, 1e-3, 1e6, False, False),
            ("budget", self.budget_usd, 1e-3, 1e10, False, True),
            ("electricity price", self.electricity_usd_per_kwh, 0, 100, False, False),
            ("grid carbon intensity", self.grid_kg_co2_per_kwh, 0, 5, False, False),
            ("utilisation", self.utilisation, 0.01, 1, False, False),
            ("max GPUs", self.max_gpus, 1, 4096, True, False),
            ("GPUs per node", self.gpus_per_node, 1, 1024, True, False),
            ("network bandwidth", self.network_gbs, 0.01, 1e5, False, False),
            ("communication overlap", self.comm_overlap, 0, 1, False, False),
            ("amortisation period", self.amortisation_years, 0.01, 100, False, True),
        ]
        for label, value, lo, hi, whole, optional in checks:
            if value is None:
                if optional:
                    continue
                raise UsageError(f"the {label} is required")
            if whole:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise UsageError(f"the {label} must be a whole number, not {value!r}")
            elif not finite_number(value):
                raise UsageError(f"the {label} must be a finite number, not {value!r}")
            assert isinstance(value, (int, float))  # narrowed by the checks above
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
class Recommendation:
    stage: int  # 1 no GPU, 2 one reasonable GPU, 3 workstation / rented datacenter GPUs, 4 cluster
    stage_name: str
    choice: str  # the recommended option, in words
    per_stage: dict[str, dict[str, object] | None]
    rationale: str
    deadline_met: bool


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


def _cost(r: EstimateRow) -> float | None:
    costs = [c for c in (r.buy_cost_usd, r.cloud_cost_usd) if c is not None]
    return min(costs) if costs else None


STAGE_NAMES = {
    1: "no GPU needed",
    2: "one reasonable GPU",
    3: "a deep-learning workstation or rented datacenter GPUs",
    4: "a GPU cluster",
}


def _stage_of(r: EstimateRow, a: Assumptions) -> int:
    if r.count > a.gpus_per_node:
        return 4
    if r.count == 1 and r.family in ("geforce", "radeon"):
        return 2
    return 3


def _best(rows: list[EstimateRow], a: Assumptions) -> EstimateRow | None:
    ok = [r for r in rows if r.fits and r.total_time_h is not None]
    within = [r for r in ok if r.meets_deadline and (a.budget_usd is None or (_cost(r) or math.inf) <= a.budget_usd)]
    if within:  # cheapest that meets deadline and budget; ties -> faster
        return min(within, key=lambda r: ((_cost(r) if _cost(r) is not None else math.inf), r.total_time_h))
    return min(ok, key=lambda r: r.total_time_h) if ok else None  # type: ignore[arg-type, return-value]


def _describe(r: EstimateRow | None) -> dict[str, object] | None:
    if r is None:
        return None
    return {"gpu_id": r.gpu_id, "name": r.name, "count": r.count, "total_time_h": r.total_time_h,
            "cost_usd": _cost(r), "meets_deadline": r.meets_deadline}


def recommend(rows: list[EstimateRow], local: list[LocalEstimate], a: Assumptions, w: Workload) -> Recommendation:
    cpu = next((l for l in local if l.device == "cpu"), None)
    by_stage: dict[int, list[EstimateRow]] = {2: [], 3: [], 4: []}
    for r in rows:
        by_stage[_stage_of(r, a)].append(r)
    best = {s: _best(rs, a) for s, rs in by_stage.items()}
    per_stage: dict[str, dict[str, object] | None] = {
        "1": ({"device": "cpu", "name": cpu.name, "total_time_h": cpu.total_time_h, "cost_usd": 0.0,
               "meets_deadline": bool(cpu.total_time_h is not None and cpu.total_time_h <= a.deadline_hours)} if cpu else None),
        **{str(s): _describe(b) for s, b in best.items()},
    }

    def good(r: EstimateRow | None) -> bool:
        return bool(r and r.meets_deadline and (a.budget_usd is None or (_cost(r) or math.inf) <= a.budget_usd))

    deadline = f"{a.deadline_hours:g} h"
    if cpu and cpu.total_time_h is not None and cpu.total_time_h <= a.deadline_hours and (
        cpu.total_time_h * (1 + cpu.error_band) <= a.deadline_hours or cpu.basis.startswith("measured")
    ):
        stage, choice = 1, f"train on this machine's CPU (~{cpu.total_time_h:.1f} h)"
        why = (f"{w.name} is small enough that the CPU finishes in about {cpu.total_time_h:.1f} h, inside your {deadline} deadline. "
               "A GPU would be faster, but you do not need one.")
    else:
        stage = next((s for s in (2, 3, 4) if good(best[s])), 0)
        if stage == 0:
            fastest = min((b for b in best.values() if b and b.total_time_h is not None), key=lambda r: r.total_time_h, default=None)  # type: ignore[arg-type, return-value]
            stage = _stage_of(fastest, a) if fastest else 4
            if fastest is None:
                choice = "no option in the catalog fits this workload"
                why = f"{w.name} does not fit any catalog GPU with these settings, even sharded over {a.max_gpus} GPUs; raise --max-gpus or use LoRA/QLoRA."
            else:
                choice = f"{fastest.count}x {fastest.name} (~{fastest.total_time_h:.1f} h)"
                why = (f"No option meets both the {deadline} deadline" + (f" and the ${a.budget_usd:,.0f} budget" if a.budget_usd else "") +
                       f". The fastest option is {choice}. Relax the deadline or budget, or shrink the workload.")
            return Recommendation(stage, STAGE_NAMES[stage], choice, per_stage, why, False)
        r = best[stage]
        assert r is not None
        parts = []
        if r.cloud_cost_usd is not None:
            parts.append(f"about ${r.cloud_cost_usd:,.0f} rented")
        if r.buy_cost_usd is not None:
            parts.append(f"about ${r.buy_cost_usd:,.0f} to buy and run")
        cost_txt = (" (" + ", or ".join(parts) + ")") if parts else ""
        choice = f"{r.count}x {r.name}" + (" (sharded)" if r.sharded else "")
        cpu_txt = f"the CPU would need ~{cpu.total_time_h:,.0f} h" if cpu and cpu.total_time_h else "the CPU is too slow"
        why = {
            2: f"{cpu_txt}, beyond your {deadline} deadline, but one {r.name} fits {w.name} and finishes in ~{r.total_time_h:.1f} h{cost_txt}.",
            3: f"{cpu_txt} and no single consumer GPU meets the {deadline} deadline within budget; {choice} does it in ~{r.total_time_h:.1f} h{cost_txt} — a workstation with these cards or rented datacenter GPUs.",
            4: f"{w.name} needs more than one box: {choice} finishes in ~{r.total_time_h:.1f} h{cost_txt}; fewer GPUs either do not fit the model or miss the {deadline} deadline.",
        }[stage]
    return Recommendation(stage, STAGE_NAMES[stage], choice, per_stage, why[:1].upper() + why[1:], True)


def local_cpu_estimate(w: Workload, a: Assumptions, *, cores: int | None, mhz: float | None, features: list[str],
                       measured_tflops: float | None = None, name: str = "this CPU") -> LocalEstimate:
    """The CPU's own estimate: from its benchmark when given, else a rough peak (stated)."""
    a.validate()
    if measured_tflops is not None and not (finite_number(measured_tflops) and measured_tflops > 0):
        raise UsageError(f"the measured CPU rate must be a positive number of TFLOPS, not {measured_tflops!r}")
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
    a.validate()
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
    local: list[LocalEstimate] | None = None,
) -> EstimateResult:
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
            rows.append(_row(w, e, n, a, perf, combined_band(band, e, n, external)))
    local = local or []
    return EstimateResult(w, a, rows, local, recommend(rows, local, a, w))
