"""Estimate a workload on every catalog GPU: fit, batch, throughput, time, cost, energy — and the
four-stage recommendation. Pure functions over typed values; the CLI, GUI and report call them."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from gpuselect.catalog import Catalog
from gpuselect.catalog.schema import GpuEntry, offer_gpus
from gpuselect.errors import UsageError
from gpuselect.estimate import parallel
from gpuselect.estimate.memory import (
    CHECKPOINTINGS,
    HEADROOM,
    Fit,
    MemoryOptions,
    as_checkpointing,
    need_gb,
    need_text,
    needed_gb,
    plan,
    suggestions,
    vram_text,
    weight_storage_bytes,
)
from gpuselect.estimate.perf import PerfModel, StepTime, step_time, workload_trace
from gpuselect.estimate.roofline import (
    DeviceModel,
    catalog_device,
    multi_gpu_device,
    resolve_precision,
    supports,
)
from gpuselect.estimate.roofline import params as roofline_params
from gpuselect.fleet.interconnect import MeasuredInterconnect, measured_link_gbs
from gpuselect.safe_io import finite_number
from gpuselect.types import (
    LOSSES,
    MIXED_PRECISIONS,
    SERVER_FAMILIES,
    SERVER_FORM_FACTORS,
    TRAINING_PRECISIONS,
    Family,
    Mode,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    parse,
)
from gpuselect.workloads.model import Workload

#: ``auto``: what each card trains well in (bf16 on Ampere+/CDNA 2+, fp16 mixed on Volta/Turing,
#: else fp32; fp32 where the host bounds the step and it trains faster, ``_row``); an explicit precision a card cannot run falls back (roofline.FALLBACK).
PRECISIONS: tuple[Precision, ...] = TRAINING_PRECISIONS
BAND_FILE = Path(__file__).resolve().parent / "data" / "steptime_bands.json"
CLUSTER_COUNTS = (16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Assumptions:
    """What the user assumes. The enum fields accept their plain strings too ("bf16"): they are
    converted once, here, and a string that names no member is a UsageError."""

    precision: Precision = Precision.AUTO
    batch_size: int | None = None  # None: the workload's default, capped by memory ("auto")
    dataset_size: int | None = None  # samples per epoch; None: the workload's default
    epochs: int | None = None
    deadline_hours: float = 72.0
    budget_usd: float | None = None
    electricity_usd_per_kwh: float = 0.15  # a mid-range retail price (US average ~0.17, EU higher)
    grid_kg_co2_per_kwh: float = 0.45  # IEA: world average carbon intensity of electricity, ~0.45 kg/kWh (2023)
    utilisation: float = 0.85  # fraction of TDP drawn while training
    optimizer: Optimizer = Optimizer.ADAMW
    # none, selective, full (or a flag); None: full where the model does not fit otherwise, or where
    # memory caps the batch and checkpointing's larger batch trains faster (_row). Selective keeps
    # the linear layers' outputs: transformers only, full elsewhere.
    checkpointing: bool | str | None = None
    sharding: Sharding | None = None  # None: FSDP where several GPUs need it to fit, or where it trains faster
    offload: Offload = Offload.NONE  # optimizer, or also params, in CPU memory
    # A language model's loss: "chunked" (in pieces, as LitGPT computes it) or "plain" (one
    # cross-entropy over fp32-upcast logits, as Hugging Face's models do): sets the memory peak.
    loss: str = "chunked"
    max_gpus: int = 8  # the largest single box considered first
    counts: tuple[int, ...] | None = None  # evaluate exactly these GPU counts (--count)
    cluster_max_gpus: int = 1024  # stage 4: when no box meets the deadline or holds the model, up to this many
    gpus_per_node: int = 8
    network_gbs: float | None = None  # between nodes, GB/s per node; None: the card's reference node (parallel.py)
    # unused since the step-time model (parallel.py overlaps per bucket); kept for callers, and out of
    # the JSON, where a script read "comm_overlap": 0.5 as the overlap the estimate used (QA 17d)
    comm_overlap: float = field(default=0.5, metadata={"json": False})
    amortisation_years: float | None = None  # spread a purchase over its useful life (None: whole price)
    interconnect: MeasuredInterconnect | None = None  # measured by `gpuselect fleet`; replaces spec links

    def __post_init__(self) -> None:
        # The one conversion of the choices (strings from a command line, the desktop app, a caller
        # of the Python API) to their typed values; frozen, hence object.__setattr__.
        object.__setattr__(self, "precision", parse(Precision, self.precision, "precision"))
        object.__setattr__(self, "optimizer", parse(Optimizer, self.optimizer, "optimizer"))
        if self.sharding is not None:
            object.__setattr__(self, "sharding", parse(Sharding, self.sharding, "sharding"))
        object.__setattr__(self, "offload", parse(Offload, self.offload, "offload"))

    def validate(self) -> None:
        """Every field checked once, here at the API boundary: a bad value is a UsageError naming
        it, never a ZeroDivisionError or TypeError from deep inside the estimator (the choices
        were converted, or refused, when the assumptions were made)."""
        if self.counts is not None and (not isinstance(self.counts, (tuple, list)) or not self.counts):
            raise UsageError(f"the GPU counts must be a non-empty list of whole numbers, not {self.counts!r}")
        if self.interconnect is not None and not isinstance(self.interconnect, MeasuredInterconnect):
            raise UsageError(f"the interconnect must be a measured `gpuselect fleet` result, not {self.interconnect!r}")
        for n in self.counts or ():
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4096:
                raise UsageError(f"a GPU count must be a whole number in 1..4096, not {n!r}")
        if self.loss not in LOSSES:
            raise UsageError(f"the loss must be one of {', '.join(LOSSES)}, not {self.loss!r}")
        if self.offload == Offload.PARAMS and self.sharding in (Sharding.NONE, Sharding.ZERO1, Sharding.ZERO2):
            # FSDP's CPUOffload and ZeRO-3's offload_param shard what they offload: it was run as
            # FSDP without a word (QA 14)
            raise UsageError(
                f"offloading the parameters needs them sharded (FSDP / ZeRO-3): choose sharding fsdp or leave "
                f"it automatic, not {self.sharding.value}"
            )
        if self.checkpointing is not None and not (
            isinstance(self.checkpointing, bool) or self.checkpointing in CHECKPOINTINGS
        ):
            raise UsageError(
                f"checkpointing must be one of {', '.join(CHECKPOINTINGS)} (or unset: automatic), "
                f"not {self.checkpointing!r}"
            )
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
            ("cluster size", self.cluster_max_gpus, 1, 4096, True, False),
            ("GPUs per node", self.gpus_per_node, 1, 1024, True, False),
            ("network bandwidth", self.network_gbs, 0.01, 1e5, False, True),
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
            if not isinstance(value, (int, float)):  # narrowed by the checks above
                raise UsageError(f"the {label} must be a number, not {value!r}")
            if not lo <= value <= hi:
                raise UsageError(f"the {label} {value:g} is outside {lo:g}..{hi:g}")


@dataclass(kw_only=True)  # 30-odd fields: built by keyword only
class EstimateRow:
    gpu_id: str
    name: str
    family: Family
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
    checkpointing: str = "none"  # activation checkpointing used: none, selective or full
    meets_deadline: bool = False
    break_even_hours: float | None = None  # buying beats renting after this much use
    price_note: str | None = None
    note: str | None = None
    suggestions: list[str] = field(default_factory=list)
    peak_memory_gb: float | None = None  # per GPU, what nvidia-smi would show (GiB, as cards are sized)
    memory_breakdown_gb: dict[str, float] = field(default_factory=dict)  # weights ... overhead; adds up to the peak
    max_batch: int | None = None  # the largest per-GPU batch that fits with these settings
    tokens_per_s: float | None = None  # the whole option, for token workloads (samples/s x tokens per sample)
    precision_used: Precision | None = None  # after auto / fallback
    parallelism: str = "single"  # single | ddp | fsdp
    bound: str | None = None  # compute | memory | overhead | communication
    time_breakdown_s: dict[str, float] = field(default_factory=dict)  # one step, per GPU
    link_gbs: float | None = None  # several GPUs: the all-reduce link bandwidth used
    link_basis: str | None = None  # "spec ..." or "measured ... (FILE)"
    # Whether today's frameworks run the card (Kepler: not since CUDA 12); a row that is not is
    # shown with the reason but never recommended.
    supported: bool = True
    #: Where no measured step of this path validates the row (offload, PCIe-only multi-GPU, QLoRA's
    #: tokens per step, mixture of experts), what: its band is borrowed from the validated regime.
    band_note: str | None = None
    #: GPUs in the cloud offer the hourly rate is from, where it is more than this option rents (a
    #: B200's rate is per GPU of an 8-GPU instance): fewer may not rent at that rate; or, with
    #: ``cloud_unlinked``, fewer than it rents: no offer in the price data rents them linked, so the
    #: option has no rental price.
    cloud_offer_gpus: int | None = None
    cloud_unlinked: bool = False
    #: GPUs the framework sees per card (an MI250X's two GCDs): ``count`` cards train as count x dies
    #: data-parallel ranks; batch, memory and breakdown are per rank.
    dies: int = 1
    #: A precision that trains this option faster than the one asked for (fp8 whose casts cost more
    #: than its GEMMs save: bf16), said in ``note``; None where the one asked for is the fastest.
    faster_precision: Precision | None = None
    #: The dataset cannot fill the option's batches: each epoch is one step of what each GPU gets
    #: (a batch asked for cut to the dataset's share, or one step per epoch). Several such GPUs are
    #: never recommended: 2,048 MI250X dies ran three optimizer steps in the whole run (QA 16c).
    dataset_bound: bool = False
    #: Cards of this option the user already owns (healthy ones of this model): its buy cost leaves
    #: their price out, counting only the cards they lack, plus electricity (the faces mark it).
    owned: int = 0


@dataclass
class LocalEstimate:
    device: str  # "cpu" or a GPU name
    name: str
    throughput_samples_per_s: float | None
    total_time_h: float | None
    basis: str  # how it was estimated
    error_band: float
    fits: bool = True
    # Local GPUs: "needs X of your Y GB" and its breakdown, as the catalog rows carry them.
    peak_memory_gb: float | None = None
    memory_breakdown_gb: dict[str, float] = field(default_factory=dict)
    vram_gb: float | None = None
    max_batch: int | None = None
    checkpointing: str | None = None  # none, selective, full: what the memory figure assumed
    #: The figure is this workload's own step, measured by this machine's benchmark at this batch
    #: (or between two measured batches): the advice may trust it without its band.
    measured_step: bool = False
    # The figures a catalog row carries, under its keys (a script compares the CPU with the GPUs
    # without reading ``basis``); None or empty where unknown: a CPU has no power figure (energy),
    # a measured step no modelled breakdown.
    batch_size: int | None = None
    precision_used: Precision | None = None
    epoch_time_s: float | None = None
    tokens_per_s: float | None = None
    bound: str | None = None
    time_breakdown_s: dict[str, float] = field(default_factory=dict)  # one step, as the rows' (see EstimateRow)
    energy_kwh: float | None = None
    meets_deadline: bool | None = None


def _with_row_figures(loc: LocalEstimate, w: Workload, a: Assumptions) -> LocalEstimate:
    """The per-epoch, token and deadline figures a row has, from the local estimate's own rate."""
    thr = loc.throughput_samples_per_s
    if thr:
        loc.epoch_time_s = (a.dataset_size or w.default_dataset_size) / thr
        loc.tokens_per_s = thr * w.tokens_per_sample if w.tokens_per_sample else None
    if loc.total_time_h is not None:
        loc.meets_deadline = loc.fits and loc.total_time_h <= a.deadline_hours
    return loc


@dataclass
class EstimateResult:
    workload: Workload
    assumptions: Assumptions
    rows: list[EstimateRow]
    local: list[LocalEstimate]
    recommendation: Recommendation


def _price(e: GpuEntry) -> tuple[float | None, str | None]:
    """``e.price_usd`` and which price it is."""
    if not e.price_usd:
        return None, None
    if e.street_price_usd:
        return e.price_usd, f"street price {e.street_price_date or ''}".strip()
    return e.price_usd, f"launch price {e.launch_price_date or ''}".strip()


#: Architectures today's training stacks no longer run, and why: their rows stay (a user may own
#: one), but the advice never picks them.
UNSUPPORTED_ARCHS: dict[tuple[str, str], str] = {
    (
        "NVIDIA",
        "Kepler",
    ): "Kepler: CUDA 12 and the PyTorch builds made with it no longer run this card; not recommended",
}


def regime(w: Workload, count: int, bound: str | None, *, traced: bool = True, offload: bool = False) -> str:
    """The validation regime a row belongs to (its error band comes from that regime's cases)."""
    if w.shape is not None and w.shape.is_moe:
        return "moe"  # no measured mixture-of-experts step: regime_band gives it the widest GPU band
    if offload:
        return "offload"  # nor an offloaded one (the host's Adam and PCIe copies dominate): the widest too
    if bound == "overhead":
        return "overhead"
    if not traced:
        # A synthetic trace from the workload's totals: reference models use their per-model
        # calibration instead ("reference"), the rest the approximation.
        from gpuselect.estimate.perf import default_model

        return "reference" if w.id in default_model().models else "approximate"
    llm = w.kind == "transformer" and w.params >= 5e8
    if llm:
        return "llm_multi" if count > 1 else "llm"
    if w.kind in ("cnn", "detection"):
        return "cnn"
    if w.kind == "transformer":
        return "transformer"
    return "other"


_BANDS: dict[str, object] = {}


def _bands() -> dict:  # type: ignore[type-arg]
    if "doc" not in _BANDS:
        try:
            _BANDS["doc"] = json.loads(BAND_FILE.read_text())
        except (OSError, ValueError):
            _BANDS["doc"] = {}
    return _BANDS["doc"]  # type: ignore[return-value]


#: Left to choose, several GPUs shard (FSDP) only when it trains at least this much faster.
FSDP_MIN_GAIN = 1.05


def regime_band(reg: str, vendor: str) -> float:
    """The regime's validated error (p90 widened to cover >= 80 % of its cases,
    benchmarks/estimator_validation.py), compounded with the AMD band for AMD cards."""
    try:
        doc = _bands()
        if reg in ("moe", "offload"):  # unvalidated: the widest band of any GPU regime, not one it never earned
            band = max(float(v) for k, v in doc["regimes"].items() if not k.startswith("cpu"))
        else:
            band = float(doc["regimes"].get(reg, doc["regimes"]["all"]))
        if vendor != "NVIDIA":
            band = (1 + band) * (1 + float(doc.get("amd_extra", 1.0))) - 1
        return round(band, 4)
    except (OSError, KeyError, ValueError, TypeError):
        return 1.0


_DEVICES: dict[int, tuple[GpuEntry, DeviceModel]] = {}


def device_for(e: GpuEntry) -> DeviceModel:
    """The card's device model, cached per entry object (an overlay may change a card's figures
    under the same id)."""
    hit = _DEVICES.get(id(e))
    if hit is None or hit[0] is not e:
        if len(_DEVICES) > 4096:
            _DEVICES.clear()
        hit = _DEVICES[id(e)] = (e, catalog_device(e))
    return hit[1]


_TRACES: dict[tuple[int, bool | str], object] = {}


def trace_cached(w: Workload, checkpointing: bool | str) -> object:
    key = (id(w), checkpointing)
    t = _TRACES.get(key)
    if t is None or len(_TRACES) > 256:
        if len(_TRACES) > 256:
            _TRACES.clear()
        t = _TRACES[key] = (w, workload_trace(w, checkpointing=checkpointing))
    return t[1]  # type: ignore[index]


def predict_step(
    w: Workload,
    d: DeviceModel,
    e: GpuEntry | None,
    batch: int,
    precision: str,
    *,
    count: int = 1,
    checkpointing: bool | str = False,
    sharding: str = "none",
    optimizer: str = "adamw",
    offload: str = "none",
    a: Assumptions | None = None,
    calibrated: bool = True,
) -> tuple[StepTime, str]:
    """One training step of ``w`` per GPU of a ``count``-GPU option, and its parallelism."""
    a = a or Assumptions()
    trace = trace_cached(w, checkpointing)
    if count > 1:
        d = multi_gpu_device(d)
    opt = "adam8bit" if optimizer == "paged-adamw8bit" else optimizer
    mixed_p = precision in MIXED_PRECISIONS
    # Parameters offloaded to the host are sharded over the ranks (FSDP's CPUOffload, ZeRO-3's
    # offload_param: neither exists without sharding), so each GPU gathers the rest from its peers.
    par = "single" if count == 1 else ("fsdp" if sharding == "fsdp" or offload == "params" else "ddp")
    comm = None
    if count > 1 and e is not None:
        from gpuselect.estimate.roofline import params

        cp = parallel.CommParams(**params().doc.get("comm", {}))
        measured = measured_link(e, count, a, cp)  # `gpuselect fleet` figures replace spec links
        # DeepSpeed (ZeRO-1/2, ZeRO-Offload) holds the module in 16 bits: its gradients are 16-bit and
        # it communicates them so (communication_data_type: the model's dtype), as FSDP reduces in bf16;
        # torch DDP under autocast all-reduces the fp32 .grad.
        deepspeed = par != "fsdp" and (sharding in ("zero1", "zero2") or offload == "optimizer")
        sixteen = precision == "bf16-true" or (mixed_p and (par == "fsdp" or deepspeed))
        grad_bytes = w.trainable_params * (2.0 if sixteen else 4.0)
        if par == "fsdp":
            # what each gather moves: the weights as stored (QLoRA: the 4-bit base and its constants,
            # embeddings and head in 16 bits)
            param_bytes = weight_storage_bytes(w, "bf16" if mixed_p or precision == "bf16-true" else "fp32")

            def comm(compute_s: float, _backward_s: float) -> parallel.CommTime:
                return parallel.fsdp_traffic(
                    param_bytes,
                    grad_bytes,
                    compute_s,
                    e,
                    count,
                    a.gpus_per_node,
                    a.network_gbs,
                    cp,
                    measured=measured,
                    layers=w.layers,
                )
        else:
            # ZeRO-1/2 (DeepSpeed, as the memory model counts them; optimizer offload is its
            # ZeRO-Offload and shards the same way): each rank updates its shard of the fp32 master
            # weights, then all ranks gather the updated 16-bit weights (stage_1_and_2.py gathers
            # bit16_groups_flat), fp32 where training runs in fp32/tf32.
            gather = (
                w.trainable_params * (2.0 if mixed_p or precision == "bf16-true" else 4.0)
                if sharding in ("zero1", "zero2") or offload == "optimizer"
                else 0.0
            )

            def comm(_compute_s: float, backward_s: float) -> parallel.CommTime:  # type: ignore[misc]
                return parallel.ddp_allreduce(
                    grad_bytes,
                    backward_s,
                    e,
                    count,
                    a.gpus_per_node,
                    a.network_gbs,
                    cp,
                    measured=measured,
                    gather_bytes=gather,
                    reduce_scatter=deepspeed,
                )

    # Optimizer offload is ZeRO-Offload, which partitions the optimizer over the ranks whatever
    # --sharding says (the memory model's assumption too): one row, not one per sharding.
    sharded_opt = sharding in ("zero1", "zero2", "fsdp") or par == "fsdp" or offload == "optimizer"
    shards = count if count > 1 and sharded_opt else 1

    def timed(tr: object) -> StepTime:
        return step_time(
            tr,
            d,
            batch,
            precision,
            optimizer=opt,
            full_params=w.mode == "full",
            comm=comm,
            optimizer_shards=shards,
            # FSDP gathers 16-bit weights; DeepSpeed (ZeRO-1/2, ZeRO-Offload) holds the module in 16
            # bits (engine.bfloat16()/half(), no autocast): no per-use weight casts under either
            # (parameter offload is FSDP's or ZeRO-3's, one GPU too)
            sharded_weights=par == "fsdp" or (count > 1 and sharded_opt) or offload != "none",
        )

    st = timed(trace)
    legacy = _per_model_seconds(w, trace, d, e, batch, precision) if e is not None and calibrated else None
    if legacy is not None and checkpointing:
        # The calibration's measured steps recompute nothing: a checkpointed step is slowed at the
        # traced step's ratio for this device (Mask R-CNN's memory halved at no cost in time); the
        # optimizer's update, which nothing recomputes, left out of both (else 8-bit Adam's smaller
        # one made the same recompute dearer)
        plain = timed(trace_cached(w, False))
        legacy *= (st.device_s - st.breakdown["optimizer"]) / (plain.device_s - plain.breakdown["optimizer"])
    if legacy is not None:
        # A reference model whose operators are not traced (a synthetic trace from its totals is
        # far worse: docs/accuracy.md): its per-model calibration on measured throughput gives the
        # GPU's compute time; communication and the host side stay the step model's.
        bd = {"per_model_calibration": legacy, "host": max(0.0, st.host_s - legacy)}
        seconds = max(legacy, st.host_s) if d.kind != "cpu" else legacy
        if comm is not None:
            c = comm(legacy, legacy * 2 / 3)
            bd["communication"] = c.exposed_s
            seconds += c.exposed_s
        bound = (
            "communication"
            if bd.get("communication", 0) > max(legacy, st.host_s)  # the host too: it may be the step
            else ("overhead" if st.host_s > legacy else "compute")
        )
        st = StepTime(seconds, bd, bound, legacy, st.host_s, st.launches, legacy * 2 / 3)
    if offload != "none" and d.h2d_gbs:
        # ZeRO-Offload partitions the offloaded state over the data-parallel ranks whatever the sharding.
        pcie = parallel.PCIE_PER_DIRECTION_GBS.get(e.pcie_gen or 3, 16.0) if e is not None else None
        # Over a PCIe-only box the collectives run on the same link as the gradients' copies down:
        # those then get no share of the backward to hide behind.
        shared = (
            count > 1
            and e is not None
            and parallel.link_bandwidth(e, min(count, a.gpus_per_node), a.gpus_per_node, None, parallel.CommParams())[
                1
            ].startswith("PCIe")
        )
        st = _with_offload(st, w, d, offload, opt, shards=count, count=count, a=a, pcie_gbs=pcie, link_shared=shared)
    return st, par


def measured_link(e: GpuEntry, count: int, a: Assumptions, cp: parallel.CommParams) -> tuple[float, str] | None:
    """The `gpuselect fleet` figure that replaces the spec link of a ``count``-GPU option, if any.
    A cluster measured within one node only: its ring crosses each node's own links and the
    network between nodes, so it gets the slower of the measured intra-node figure and the
    network (spec, or --network-gbs); it used the spec GPU link instead of the measured one,
    faster than the box the measurement came from. On a full-mesh platform (MI300X) fewer GPUs
    than the node measured cross fewer links: the measured figure scaled to them (two MI300X
    took an 8-GPU node's seven links, as the spec link did before session 17)."""
    m = a.interconnect
    measured = measured_link_gbs(m, count, a.gpus_per_node)
    if measured is not None and count <= a.gpus_per_node and m is not None and m.intra_node_ranks:
        used = parallel.mesh_links(e, count, a.gpus_per_node)
        had = parallel.mesh_links(e, m.intra_node_ranks, m.intra_node_ranks)
        if used is not None and had is not None and used < had:
            return measured[0] * used / had, f"{measured[1]}, scaled to {used} of its {had} mesh links"
    if measured is not None or count <= a.gpus_per_node:
        return measured
    intra = measured_link_gbs(m, a.gpus_per_node, a.gpus_per_node)
    if intra is None:
        return None
    net, name = parallel.network_bandwidth(e, a.network_gbs, cp)
    return intra if intra[0] <= net else (net, f"spec: {name}")


#: Pinned host<->device copies (offload frameworks pin their buffers) reach this share of the PCIe
#: link's per-direction rate: 54.0 GB/s host->device and 53.9 device->host of PCIe 5.0 x16's 64 on
#: our H100 machine (docs/validation/h100-2026-11-22/bench-full.json, transfer_detail, 256 MiB).
PINNED_FRACTION_OF_PCIE = 0.84
#: The host's memory streaming rate under offload: a vectorised Adam over fp32 state is bound by
#: the host's memory; 80 GB/s is about half of an 8-channel DDR4-3200 socket's 205 GB/s (an
#: assumption: no CPU optimizer step was measured here; a desktop's two channels give far less).
#: The GPUs' pinned copies land in the same memory, so a node's copies share it too.
HOST_OPTIMIZER_GBS = 80.0


def offload_bytes(w: Workload, offload: str, *, shards: int = 1) -> tuple[float, float]:
    """(bytes down, bytes up) each GPU moves over PCIe per step when state lives in host memory:
    its shard of the 16-bit gradients down; its shard of the updated 16-bit weights up, and with
    ``params`` the weights as stored (``memory.weight_storage_bytes``: QLoRA's 4-bit base) up again
    for the forward and for the backward."""
    n = max(1, shards)
    down = w.trainable_params * 2.0 / n
    up = w.trainable_params * 2.0 / n
    if offload == "params":
        up += 2 * weight_storage_bytes(w) / n
    return down, up


def offload_seconds(
    w: Workload,
    d: DeviceModel,
    offload: str,
    optimizer: str,
    *,
    shards: int = 1,
    gpus_on_host: int = 1,
    pcie_gbs: float | None = None,
) -> tuple[float, float]:
    """(PCIe seconds, CPU optimizer seconds) one step adds per GPU when state lives in host memory.

    The offloaded state is partitioned over the ``shards`` data-parallel ranks (ZeRO-Offload, FSDP's
    CPU offload), ``gpus_on_host`` of which share one node's host. Per rank and step:

    - copies: ``optimizer`` moves its shard of the 16-bit gradients device->host and its shard of
      the updated 16-bit weights host->device (ZeRO-Offload's 2 + 2 bytes per parameter / ranks);
      ``params`` also the weights as stored (16-bit; QLoRA's 4-bit base with its constants) up for
      the forward and again for the backward. Each rank copies over its own PCIe link, pinned at
      ``PINNED_FRACTION_OF_PCIE`` of it (``pcie_gbs`` per direction; without it the device's own
      host-to-device figure), but every copy of the node reads or writes the host's memory, so a
      rank gets at most 1/``gpus_on_host`` of ``HOST_OPTIMIZER_GBS`` (8 ranks of 8B: 32 GB through
      host memory, 0.4 s, where each link alone would take 0.15 s).
    - the update: each rank's process runs the CPU optimizer (DeepSpeedCPUAdam, torch's Adam under
      FSDP) over its ``N_params / shards`` parameters, streaming the fp32 state the optimizer needs
      (AdamW: master weight, gradient, two moments read and written back, 28 bytes) plus the 16-bit
      copy it writes for the copy up; the ranks of a node run at once on its one memory, so the
      step waits for the node's ``N_params / shards * gpus_on_host`` parameters at that rate."""
    from gpuselect.estimate.perf import OPTIMIZER_BYTES

    n = max(1, shards)
    down, up = offload_bytes(w, offload, shards=n)
    rate = offload_copy_bytes_per_s(d, pcie_gbs, gpus_on_host)
    cpu = (
        w.trainable_params
        / n
        * gpus_on_host
        * (OPTIMIZER_BYTES.get(optimizer, 28.0) + 2.0)
        / (HOST_OPTIMIZER_GBS * 1e9)
    )
    return (down + up) / rate, cpu


def pinned_link_bytes_per_s(d: DeviceModel, pcie_gbs: float | None) -> float:
    """Pinned host<->device copies: ``PINNED_FRACTION_OF_PCIE`` of the card's link per direction
    (``pcie_gbs``), or the device's own host-to-device figure where the link is unknown."""
    return (pcie_gbs * PINNED_FRACTION_OF_PCIE if pcie_gbs else (d.h2d_gbs or 1.0)) * 1e9


def offload_copy_bytes_per_s(d: DeviceModel, pcie_gbs: float | None, gpus_on_host: int = 1) -> float:
    """One rank's offload copy rate: its pinned PCIe link, or its share of the host's memory where
    the node's ranks copy at once (``offload_seconds``)."""
    return min(pinned_link_bytes_per_s(d, pcie_gbs), HOST_OPTIMIZER_GBS * 1e9 / max(1, gpus_on_host))


def _with_offload(
    st: StepTime,
    w: Workload,
    d: DeviceModel,
    offload: str,
    optimizer: str,
    *,
    shards: int,
    count: int,
    a: Assumptions,
    pcie_gbs: float | None = None,
    link_shared: bool = False,
) -> StepTime:
    """The step with offload: the PCIe traffic and the CPU's optimizer step replace the GPU's update.
    The gradients go down as the backward produces them (ZeRO-Offload's and FSDP's copies after each
    bucket or unit): only what exceeds the backward is exposed. The CPU's update waits for the last
    gradient, and the updated (and, with ``params``, the gathered) weights come up before the forward
    needs them: those are not overlapped here. ``link_shared``: the GPUs' collectives use the same
    PCIe link (a PCIe-only box), so nothing of the copies down hides. The breakdown's ``optimizer``
    (the GPU's update, which no longer runs) becomes 0 and ``offload`` holds the copies exposed and
    the CPU's update."""
    gpus_on_host = min(max(1, count), a.gpus_per_node)
    pcie, cpu = offload_seconds(w, d, offload, optimizer, shards=shards, gpus_on_host=gpus_on_host, pcie_gbs=pcie_gbs)
    down = offload_bytes(w, offload, shards=shards)[0] / offload_copy_bytes_per_s(d, pcie_gbs, gpus_on_host)
    hidden = 0.0 if link_shared else min(down, st.backward_s)
    exposed = pcie - hidden
    # The GPU's update leaves the device's work; it shortened nothing where the host's dispatch
    # bound the step (max(device, host)), and the host's share grows by what it no longer hides.
    gpu_update = st.breakdown.get("optimizer", 0.0)
    saved = max(st.device_s, st.host_s) - max(st.device_s - gpu_update, st.host_s)
    bd = dict(st.breakdown)
    if "host" in bd and gpu_update:
        bd["host"] += max(0.0, st.host_s - st.device_s + gpu_update) - max(0.0, st.host_s - st.device_s)
    if "optimizer" in bd:
        bd["optimizer"] = 0.0
    bd["offload"] = exposed + cpu
    seconds = st.seconds - saved + exposed + cpu
    bound = st.bound if exposed + cpu <= 0.5 * seconds else ("communication" if exposed >= cpu else "overhead")
    return StepTime(seconds, bd, bound, st.device_s - gpu_update, st.host_s, st.launches, st.backward_s)


def default_model_ids() -> set[str]:
    """The reference models the per-model calibration covers."""
    from gpuselect.estimate.perf import default_model

    return set(default_model().models)


def is_traced(trace: object) -> bool:
    return not str(getattr(trace, "source", "")).startswith("APPROXIMATION")


def _per_model_seconds(
    w: Workload, trace: object, d: DeviceModel, e: GpuEntry, batch: int, precision: str
) -> float | None:
    """Seconds of the GPU's part of one step from the per-model calibration (``perf.PerfModel``),
    for the reference models that have no traced operators; None otherwise."""
    if is_traced(trace) or d.kind == "cpu" or "measured by gpuselect bench" in d.notes:
        return None
    from gpuselect.estimate.perf import default_model

    pm = default_model()
    if w.id not in pm.models:
        return None
    prec = {"fp8": "bf16", "bf16-true": "bf16"}.get(precision, precision)
    try:
        thr = pm.predict(w, prec, e, batch=batch)
    except (KeyError, ValueError):
        return None
    if not thr:
        return None
    return batch / thr


def _say_selective(
    w: Workload,
    a: Assumptions,
    r: EstimateRow,
    selective: Callable[[Assumptions], EstimateRow],
) -> str | None:
    """Where an automatic row that checkpoints (or runs below the workload's batch) would train
    faster with selective checkpointing, the words that say so (a row's note, this machine's GPU's
    basis); ``selective`` gives the same option under other assumptions.
    Left to choose, checkpointing is full or none (docs/memory.md); selective keeps the linear
    layers' outputs and recomputes little, so where memory caps the batch it may train faster:
    Llama 3.1 8B QLoRA on an RTX 4090 +8 %, BERT-large on an RTX 3080 +20 % (QA 17b). Said, not
    taken: the default stays what Hugging Face's gradient checkpointing runs. Only for the rows the
    advice names and this machine's GPU: a second row per catalog row doubled the estimate's time."""
    if (
        a.checkpointing is not None
        or a.batch_size is not None
        or w.shape is None  # selective is a transformer's
        or not r.fits
        or not (r.checkpointing == "full" or (r.batch_size or 0) < w.default_batch_size)
    ):
        return None
    prec = a.precision if a.precision != Precision.AUTO or r.precision_used is None else r.precision_used
    sel = selective(replace(a, checkpointing="selective", precision=prec))
    gain = _gain(r, sel, SELECTIVE_FASTER_MARGIN)
    if gain is None:
        return None
    return (
        f"--checkpointing selective trains {100 * gain:.0f} % faster here (batch {sel.batch_size} per GPU: "
        "keeps the linear layers' outputs, recomputes the rest)"
    )


#: How much faster selective checkpointing must train than the automatic choice before a row says
#: so: a few per cent is inside any band, and the switch is a code change (FSDP's margin).
SELECTIVE_FASTER_MARGIN = 1.05


def _row(
    w: Workload,
    e: GpuEntry,
    count: int,
    a: Assumptions,
    perf: PerfModel | None,
    band: float | None,
    device: DeviceModel | None = None,
) -> EstimateRow:
    """``count`` GPUs ``e`` training ``w``. ``auto`` takes the card's mixed precision, unless the
    host's dispatch bounds the step and fp32 trains faster: autocast's casts are extra ops, so a
    tiny model at a small batch runs slower in bf16 (an H100 then ranked below a GTX 1080)."""
    r = _row_at(w, e, count, a, perf, band, device)
    if not r.fits or r.precision_used is None:
        return r
    p = r.precision_used
    casts = ", and mixed precision adds casts" if p != Precision.BF16_TRUE else ""
    if a.precision == Precision.FP8 and p == Precision.FP8:
        # fp8 quantises each linear layer's operands (an amax and a cast kernel each) and keeps
        # attention and the output layer in bf16: on a card whose memory is slow for its fp8 rate,
        # or a model with small layers, the casts cost more than the faster GEMMs save (ViT-B/16 on
        # an L40S: +19 %). The time stays what was asked for; the row says so.
        why = "its operands' amax and cast kernels cost more memory traffic than its faster GEMMs save on this card and model"
        return _say_faster(r, _row_at(w, e, count, replace(a, precision=Precision.BF16), perf, band, device), why)
    sixteen = (Precision.FP16, Precision.BF16, Precision.BF16_TRUE)
    if r.bound != "overhead" or p == Precision.FP32 or a.precision not in (*sixteen, Precision.AUTO):
        return r
    fp32 = _row_at(w, e, count, replace(a, precision=Precision.FP32), perf, band, device)  # its own memory fit
    if a.precision in sixteen:
        # asked for 16-bit where the host bounds the step: said where fp32 trains faster
        return _say_faster(r, fp32, f"the host bounds the step{casts}", also=" (or auto)")
    if _gain(r, fp32) is None:  # auto: by the same 1 % as said elsewhere, not noise (QA 16)
        return r
    # auto takes fp32 where the host's dispatch bounds the step and fp32 trains faster: autocast's
    # casts are extra ops, so a tiny model at a small batch runs slower in bf16
    why = f"auto: fp32, faster here than {p} (in {p} the host bounds the step{casts})"
    fp32.note = f"{why}; {fp32.note}" if fp32.note else why
    return fp32


#: How much faster another precision must train than the one asked for before the row says so
#: (1 %: not noise).
FP8_SLOWER_MARGIN = 1.01
#: How much faster each GPU of a sharded box must train than one alone before the row says why
#: (it was said at +0.05 %).
SHARDED_FASTER_MARGIN = 1.01


def _gain(r: EstimateRow, alt: EstimateRow, margin: float = FP8_SLOWER_MARGIN) -> float | None:
    """How much faster ``alt`` (the same option in another precision) trains than ``r``, where it
    fits and beats ``margin``; else None."""
    fast, slow = alt.throughput_samples_per_s, r.throughput_samples_per_s
    return fast / slow - 1 if alt.fits and fast and slow and fast > margin * slow else None


def _say_faster(r: EstimateRow, alt: EstimateRow, why: str, also: str = "") -> EstimateRow:
    """A row asked for in a precision that ``alt``'s trains faster says so, by how much and why
    (``faster_precision``); its time stays what was asked for."""
    gain = _gain(r, alt)
    if gain is not None and alt.precision_used is not None:
        said = (
            f"{r.precision_used} is {100 * gain:.0f} % slower here than {alt.precision_used} ({why}): "
            f"--precision {alt.precision_used}{also} trains faster"
        )
        r.note = f"{said}; {r.note}" if r.note else said
        r.faster_precision = alt.precision_used
    return r


def _clamp_note(n: int, count: int, asked: int, held: int) -> str:
    """A row whose batch the dataset cannot fill, in words (fitting or not)."""
    return (
        f"the dataset ({n:,} sample{'s' if n != 1 else ''}) is smaller than the batch asked for "
        f"({count * asked:,} over {count} GPU{'s' if count != 1 else ''}): each GPU's step holds "
        f"{held:,}, and that is what must fit"
    )


def _row_at(
    w: Workload,
    e: GpuEntry,
    count: int,
    a: Assumptions,
    perf: PerfModel | None,  # noqa: ARG001 - kept in the signature for callers; the device model carries the rates
    band: float | None,
    device: DeviceModel | None = None,
) -> EstimateRow:
    base = EstimateRow(
        gpu_id=e.id,
        name=e.name,
        family=e.family,
        count=count,
        fits=False,
        batch_size=None,
        throughput_samples_per_s=None,
        epoch_time_s=None,
        total_time_h=None,
        buy_cost_usd=None,
        cloud_cost_usd=None,
        energy_kwh=None,
        co2_kg=None,
        error_band=band if band is not None else 1.0,
        vram_gb=e.usable_vram_gb,
    )
    cap = e.usable_vram_gb  # what the memory fit compares against (ECC on GDDR datacenter cards: 15/16)
    prec = Precision(resolve_precision(e, a.precision))
    base.precision_used = prec
    mem_prec = "bf16" if prec == "fp8" else prec  # fp8 training keeps bf16 weights and activations
    mo = MemoryOptions(
        precision=mem_prec,
        optimizer=a.optimizer,
        sharding=a.sharding or Sharding.NONE,
        offload=a.offload,
        gpus=count,
        loss=a.loss,
    )
    # A batch asked for that the dataset cannot fill: each GPU's step holds its share of the
    # samples, and that is what must fit (batch 100,000 of a 60,000-image dataset was judged at
    # 100,000: "needs 12.7 of 8 GB" for a step that holds 60,000).
    n_samples = a.dataset_size or w.default_dataset_size
    batch = a.batch_size
    clamped = batch is not None and n_samples < count * batch
    if clamped:
        batch = -(-n_samples // count)
    # Each count fits on its own: DDP's gradient buckets make a replica need more than one GPU alone.
    fit = plan(w, cap, mo, checkpointing=a.checkpointing, sharding=a.sharding, batch_size=batch)
    ckpt = fit.options.checkpointing
    if ckpt == "selective" and w.shape is None:
        ckpt = True  # selective is a transformer's; other workloads checkpoint fully (docs/memory.md)

    def show(f: Fit, ck: bool | str) -> bool:
        """Put fit ``f``'s memory figures on the row; whether its state is sharded."""
        base.checkpointing = "full" if ck is True else f.options.recompute
        base.batch_size = f.batch_size
        # Optimizer offload is ZeRO-Offload, which partitions the state over the ranks whatever
        # --sharding says (its memory and step are zero2's): flagged as the note says, though the
        # choice of FSDP below still weighs it as unsharded.
        base.sharded = (f.options.split != "none" or f.options.offload == "optimizer") and count > 1
        base.peak_memory_gb = need_gb(f.peak_gb, cap)
        base.memory_breakdown_gb = f.breakdown_gb
        base.max_batch = f.max_batch
        return f.options.split != "none" and count > 1

    sharded = show(fit, ckpt)
    notes = [f"{a.precision} is not supported here: runs {prec}"] if a.precision not in (Precision.AUTO, prec) else []
    if e.visible_vram_gb and e.visible_vram_gb < e.vram_gb:
        notes.append(f"the driver shows {vram_text(e.visible_vram_gb)} of its {vram_text(e.vram_gb)} GB")
    if cap < min(e.vram_gb, e.visible_vram_gb or e.vram_gb):
        notes.append(f"ECC on (the default): {vram_text(cap)} of its {vram_text(e.vram_gb)} GB usable")
    unsupported = UNSUPPORTED_ARCHS.get((e.vendor, e.architecture))
    if unsupported:
        base.supported = False
        notes.append(unsupported)
    if not fit.fits:
        # What the option would run as, had it fit: a two-GPU row is never "single".
        base.parallelism = "single" if count == 1 else ("fsdp" if fit.options.split == "fsdp" else "ddp")
        base.suggestions = suggestions(
            w,
            cap,
            fit.options,
            batch,  # the step's batch: the dataset's share where the one asked for exceeds it
            max_gpus=plausible_max(e, a.gpus_per_node, a.cluster_max_gpus),
            precisions=frozenset(p for p in ("fp16", "bf16", "bf16-true") if supports(e, p)),
            sharding_given=a.sharding not in (None, Sharding.FSDP),
            per_node=a.gpus_per_node,
        )
        base.note = "; ".join(
            [
                *notes,
                # the row's rounded figure, so the note and the advice quoting it never differ by 0.1
                f"needs {need_text(need_gb(fit.peak_gb, cap), cap)} of {vram_text(cap)} GB"
                + (
                    f" at batch {fit.batch_size}; at most batch {fit.max_batch} fits"
                    if fit.max_batch
                    else "; not even batch 1 fits"
                ),
                *([_clamp_note(n_samples, count, a.batch_size or 0, fit.batch_size)] if clamped else []),
            ]
        )
        return base
    base.fits = True
    dev = device or device_for(e)

    def step(f: Fit, ck: bool | str) -> tuple[StepTime, str]:
        st, par = predict_step(
            w,
            dev,
            e,
            f.batch_size,
            prec,
            count=count,
            checkpointing=ck,
            sharding=f.options.sharding if count > 1 else "none",
            optimizer=a.optimizer,
            offload=a.offload,
            a=a,
        )
        return _with_paging(st, f, cap, e), par

    st, par = step(fit, ckpt)
    if a.optimizer == "paged-adamw8bit" and a.batch_size is None and "paging" in st.breakdown:
        # Paging the state each step may cost more than the larger batch it allows: the largest
        # batch that pages nothing (the same state held whole) competes.
        whole = plan(
            w,
            cap,
            replace(mo, optimizer="adam8bit"),
            checkpointing=a.checkpointing,
            sharding=a.sharding,
            batch_size=None,
        )
        if whole.fits:
            ck1 = whole.options.checkpointing
            st1, par1 = step(whole, ck1)
            if whole.batch_size / st1.seconds >= fit.batch_size / st.seconds:
                fit, ckpt, st, par = whole, ck1, st1, par1
                sharded = show(fit, ckpt)
    if a.checkpointing is None and a.batch_size is None and not ckpt and fit.batch_size < w.default_batch_size:
        # Left to choose, a user whose batch memory caps below the workload's own checkpoints if
        # that trains faster: a larger batch fills the GPU better and, sharded, spreads the step's
        # fixed gathers and reduces over more samples, against about a third more compute.
        alt = plan(w, cap, mo, checkpointing=True, sharding=a.sharding, batch_size=None)
        if alt.fits and alt.batch_size > fit.batch_size:
            st2, par2 = step(alt, True)
            if alt.batch_size / st2.seconds > fit.batch_size / st.seconds:
                fit, ckpt, st, par = alt, True, st2, par2
                sharded = show(fit, ckpt)
    if (
        a.sharding is None
        and a.batch_size is None
        and count > 1
        and not sharded
        and w.shape is not None  # transformers, where FSDP is how frameworks train; CNNs stay DDP
        and (fit.batch_size < w.default_batch_size or ckpt)  # replicas cap the batch, or need recompute to fit it
    ):
        # Left to choose, several GPUs whose replicated state caps the batch are sharded if that
        # trains faster (FSDP: a larger batch fits, each GPU updates only its shard), as the
        # checkpointing above: an A100 80GB box trained a 3B model slower than an A100 40GB one,
        # which had to shard.
        alt = plan(w, cap, mo, checkpointing=a.checkpointing, sharding=Sharding.FSDP, batch_size=None)
        ck2: bool | str = alt.options.checkpointing  # a transformer's: selective stays selective
        if alt.fits:  # a larger batch, or the same without checkpointing: whichever trains faster
            st2, par2 = step(alt, ck2)
            if a.checkpointing is None and not ck2 and alt.batch_size < w.default_batch_size:
                # Sharded, the state may fit without recompute only at a small batch: checkpointing's
                # larger batch competes, as it does unsharded above (16 H100 took Qwen3-30B-A3B's
                # LoRA at batch 1 unchecked, 3,323 tokens/s, over batch 8 checkpointed, 18,225)
                ck_alt = plan(w, cap, mo, checkpointing=True, sharding=Sharding.FSDP, batch_size=None)
                if ck_alt.fits and ck_alt.batch_size > alt.batch_size:
                    st3, par3 = step(ck_alt, True)
                    if ck_alt.batch_size / st3.seconds > alt.batch_size / st2.seconds:
                        alt, ck2, st2, par2 = ck_alt, True, st3, par3
            # by a margin: FSDP is more to set up than DDP, and a LoRA model that fits one card
            # took it for 0.02 % at the same batch (QA 14)
            if alt.batch_size / st2.seconds > FSDP_MIN_GAIN * fit.batch_size / st.seconds:
                fit, ckpt, st, par = alt, ck2, st2, par2
                sharded = show(fit, ckpt)
    base.parallelism = par
    if count > 1:
        cp = parallel.CommParams(**roofline_params().doc.get("comm", {}))
        measured = measured_link(e, count, a, cp)
        link, basis = parallel.link_bandwidth(e, count, a.gpus_per_node, a.network_gbs, cp, measured=measured)
        base.link_gbs = round(link, 3)
        base.link_basis = basis if measured is not None else f"spec: {basis}"
    base.bound = st.bound
    base.time_breakdown_s = {k: round(v, 6) for k, v in st.breakdown.items() if v > 0}
    if band is None:
        traced = is_traced(trace_cached(w, ckpt))
        reg = regime(w, count, st.bound, traced=traced, offload=fit.options.offload != "none")
        base.error_band = regime_band(reg, e.vendor)
    if ckpt == "selective":
        notes.append("with selective activation checkpointing")
    elif ckpt:
        notes.append(
            "with activation checkpointing"
            + (" (full: selective is offered for transformers only)" if a.checkpointing == "selective" else "")
        )
    if base.sharded:
        offloaded = {
            "params": ", parameters offloaded to the host",
            "optimizer": ", optimizer offloaded to the host: ZeRO-Offload",
        }.get(fit.options.offload, "")
        split = "zero2" if fit.options.split == "none" else fit.options.split  # ZeRO-Offload's own stage
        notes.append(f"model state sharded ({split}{offloaded})")
    if w.shape is not None and w.shape.is_moe:
        notes.append("mixture of experts: no measured MoE step validates this (widest band)")
    if "paging" in st.breakdown:
        notes.append(
            f"{fit.peak_gb - cap:,.1f} GB of the paged optimizer's state lives in host memory, paged in and out "
            "every step (counted in the step)"
        )
    if fit.options.offload != "none":
        from gpuselect.estimate.memory import host_state_gb, host_state_text

        notes.append(host_state_text(host_state_gb(w, fit.options), count, a.gpus_per_node))
    held = needed_gb(fit.breakdown) if fit.breakdown else fit.peak_gb  # a paged optimizer's state may page out
    if held > HEADROOM * cap:
        notes.append(
            f"a tight fit: {held:,.1f} of {vram_text(cap)} GB, within the memory estimate's error; a longer "
            "sample, another library's workspace or fragmentation may run out of memory (a smaller batch or "
            "checkpointing leaves room)"
        )
    base.note = "; ".join(notes) or None
    base.band_note = unvalidated_paths(w, a, count, base.link_basis, base.parallelism) or None
    thr = count * fit.batch_size / st.seconds
    if w.tokens_per_sample:
        base.tokens_per_s = thr * w.tokens_per_sample
    base.throughput_samples_per_s = thr
    # An epoch is at least one step: a dataset smaller than the global batch still pays a whole one,
    # at the batch it has: 100 images on a batch-256 RTX 4090 paid batch 256's step, 2.3x their
    # time, where a CPU's time (and a larger dataset's) grows with the samples.
    n = a.dataset_size or w.default_dataset_size
    one_step = st.seconds
    base.dataset_bound = clamped or n < count * fit.batch_size
    if clamped:
        said = _clamp_note(n, count, a.batch_size or 0, fit.batch_size)
        base.note = f"{base.note}; {said}" if base.note else said
    elif n < count * fit.batch_size:
        per_gpu = -(-n // count)
        one_step = step(replace(fit, batch_size=per_gpu), ckpt)[0].seconds
        said = (
            f"the dataset ({n:,} sample{'s' if n != 1 else ''}) is smaller than one step's "
            f"{count * fit.batch_size:,}: an epoch is one step of {per_gpu:,} per GPU"
        )
        base.note = f"{base.note}; {said}" if base.note else said
    base.epoch_time_s = max(n / thr, one_step)
    hours = base.epoch_time_s * (a.epochs or w.default_epochs) / 3600
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
    cloud = cloud_rate(e, count, a.gpus_per_node)
    if cloud is not None and not cloud[3]:
        # Only smaller instances are priced (8x GH200 from single-GPU ones, with one box's NVLink):
        # no rental price, said, so no advice rests on a box the price data does not rent.
        rate, provider, offer, _ = cloud
        base.cloud_offer_gpus, base.cloud_unlinked = offer, True
        said = (
            f"no rental price: the price data rents it only as {offer_phrase(offer or 1)} ({provider}, "
            f"${rate:g} per GPU-hour), not {count} GPUs linked as this estimate assumes"
        )
        base.note = "; ".join(x for x in (base.note, said) if x)
    elif cloud is not None:
        rate, provider, offer, _ = cloud
        # beyond one offer, whole offers are rented: 12 GPUs of 8-GPU nodes pay for 16
        rented = count if offer is None or count <= offer else -(-count // offer) * offer
        base.cloud_cost_usd = rate * rented * hours
        if rented > count:
            said = f"rented as {rented // (offer or 1)} whole {offer}-GPU offers ({provider}): {rented} GPUs paid for"
            base.note = "; ".join(x for x in (base.note, said) if x)
        if offer is not None and offer > count:
            base.cloud_offer_gpus = offer
            said = f"the hourly rate is per GPU of {offer_phrase(offer)} ({provider}): fewer may not rent at it"
            base.note = "; ".join(x for x in (base.note, said) if x)
        hourly_energy = e.tdp_w * a.utilisation * count / 1000 * a.electricity_usd_per_kwh
        # renting pays for the whole offers (the cloud cost's ``rented``), buying for ``count`` cards
        if price is not None and rate * rented > hourly_energy:
            base.break_even_hours = price * count / (rate * rented - hourly_energy)
    return base


def cloud_rate(e: GpuEntry, count: int, per_node: int = 8) -> tuple[float, str | None, int | None, bool] | None:
    """($/GPU-hour, provider, GPUs of its offer, linked) renting ``count`` of ``e``: the cheapest offer
    that rents them linked (an offer of at least ``count`` GPUs, or of whole nodes for a cluster);
    else the largest offer's, not linked (8x GH200 were priced from single-GPU instances, with the
    NVLink of one box). An offer whose size is unknown counts as linked."""
    offers = [(e.cloud_usd_per_hour, e.cloud_provider, e.cloud_offer_gpus)]
    if e.cloud_node_usd_per_hour:
        node = e.cloud_node_gpus or offer_gpus(e.cloud_node_provider or "") or per_node
        offers.append((e.cloud_node_usd_per_hour, e.cloud_node_provider, node))
    priced = [(r, p, k) for r, p, k in offers if r]
    if not priced:
        return None
    # an offer of whole nodes rents any larger count over the network, as the cluster rows assume
    linked = [(r, p, k) for r, p, k in priced if k is None or count <= k or k >= per_node]
    if linked:
        r, p, k = min(linked, key=lambda o: o[0])
        return r, p, k, True
    r, p, k = max(priced, key=lambda o: o[2] or 0)  # the largest offer, which the row names
    return r, p, k, False


def _with_paging(st: StepTime, f: Fit, cap_gb: float, e: GpuEntry) -> StepTime:
    """A paged optimizer's state beyond the card's memory moves to host memory and back every step
    (the update reads and writes all of it): that traffic over the card's PCIe link is added
    ("paging"). Without it a paged optimizer let a batch above the card's memory train faster than
    plain 8-bit Adam at the batch that fits."""
    from gpuselect.estimate.memory import GB

    over = (f.peak_gb - cap_gb) * GB
    if over <= 0:
        return st
    link = parallel.PCIE_PER_DIRECTION_GBS.get(e.pcie_gen or 3, 16.0) * 1e9 * parallel.CommParams().pcie_p2p_efficiency
    t = 2 * over / link
    bd = dict(st.breakdown)
    bd["paging"] = t
    seconds = st.seconds + t
    bound = st.bound if t <= 0.5 * seconds else "communication"
    return StepTime(seconds, bd, bound, st.device_s, st.host_s, st.launches, st.backward_s)


#: Benchmark models (gpuselect bench's train_steps) that are presets: their measured steps are
#: reported as measured for that workload.
BENCH_MODELS = {"simple-cnn": "simple_cnn"}


def _measured_rates(w: Workload, rec: dict | None) -> dict[int, float]:  # type: ignore[type-arg]
    """batch -> samples/s of this workload's steps in the benchmark record (none for a workload
    the benchmark does not train)."""
    from gpuselect.estimate.perf import _bench_steps

    name = BENCH_MODELS.get(w.id)
    if not rec or not name:
        return {}
    rates: dict[int, float] = {}
    for s in _bench_steps(rec):
        b, v = s.get("batch_size"), s.get("samples_per_s")
        ok = isinstance(b, int) and b > 0 and isinstance(v, int | float) and finite_number(v) and v > 0
        if s.get("model") == name and ok:
            rates[int(b)] = float(v)  # type: ignore[arg-type]  # checked just above
    return rates


def _measured(w: Workload, rec: dict | None, batch: int) -> tuple[float, str] | None:  # type: ignore[type-arg]
    """(samples/s, how) the benchmark measured for this workload at this batch, or between the two
    measured batches around it (log-log: a step's time is a power of its batch between two
    neighbours); None outside the measured batches. (Taking the nearest batch within 2x made the
    curve jump: batch 8 read batch 16's rate, 35 % above the 8 both full runs measured.)"""
    rates = _measured_rates(w, rec)
    if batch in rates:
        return rates[batch], f"at batch {batch}"
    lo = max((b for b in rates if b < batch), default=None)
    hi = min((b for b in rates if b > batch), default=None)
    if lo is None or hi is None:
        return None
    k = math.log(rates[hi] / rates[lo]) / math.log(hi / lo)
    return rates[lo] * (batch / lo) ** k, f"between batches {lo} and {hi} (interpolated)"


def _measured_edge(w: Workload, rec: dict | None, batch: int) -> tuple[int, float] | None:  # type: ignore[type-arg]
    """(batch, samples/s) of the benchmark's measured step nearest ``batch`` where ``batch`` lies
    outside the measured batches of this workload; None inside them or without any."""
    rates = _measured_rates(w, rec)
    if not rates or min(rates) <= batch <= max(rates):
        return None
    edge = max(rates) if batch > max(rates) else min(rates)
    return edge, rates[edge]


def local_cpu_estimate(
    w: Workload,
    a: Assumptions,
    *,
    cores: int | None,
    mhz: float | None,
    features: list[str],
    measured_tflops: float | None = None,
    name: str = "this CPU",
    bench: dict[str, Any] | None = None,
    ram_gb: float | None = None,
) -> LocalEstimate:
    """The CPU as a device: the step-time model with the CPU's measured matmul rate, bandwidth and
    per-op cost (``bench``: its `gpuselect bench` record), or rough figures when unmeasured
    (stated). A workload the benchmark trained itself is reported as measured. ``ram_gb``: the
    machine's memory, which the training state and activations must fit in (unchecked without it)."""
    fit = None
    ram_ok = ram_gb is not None and finite_number(ram_gb) and ram_gb > 0
    n_samples = a.dataset_size or w.default_dataset_size
    # (a bad value is refused, with its sentence, where the assumptions are checked below)
    clamped = isinstance(a.batch_size, int) and isinstance(n_samples, int) and a.batch_size > n_samples
    if clamped:
        # a batch the dataset cannot fill: the step holds the dataset, as a GPU row's does (batch
        # 200,000 of 60,000 images "did not fit" this RAM and moved the advice off the CPU)
        a = replace(a, batch_size=n_samples)
    # memory in the precision the time assumes: fp32 for auto (as the CPU's benchmark trains), a
    # 16-bit request in 16 bits (fp8 keeps bf16 activations, as on a GPU)
    prec = "fp32" if a.precision in (Precision.AUTO, Precision.FP32, Precision.TF32) else str(a.precision)
    mo = MemoryOptions(precision="bf16" if prec == "fp8" else prec, optimizer=a.optimizer, loss=a.loss, host=True)
    ckpt = as_checkpointing(a.checkpointing) if a.checkpointing is not None else None

    def ram_fit(batch: int | None, checkpointing: bool | str | None) -> Fit:
        # batch None: the workload's own, or the largest that fits the RAM
        return plan(
            w, usable_ram_gb(float(ram_gb or 0.0)), mo, checkpointing=checkpointing, sharding=None, batch_size=batch
        )

    if ram_ok:
        fit = ram_fit(a.batch_size, ckpt)
    timed = a
    on_measured = a.batch_size is None and _measured(w, bench, w.default_batch_size) is not None
    if fit is not None and on_measured:
        # The benchmark trained the workload at its own batch, where the row is then timed and
        # labelled: its memory, fit and max batch are that step's too, without recompute where none
        # was asked for (the benchmark's step recomputes nothing). Before, they were the auto fit's,
        # which the RAM's headroom may cap below it (review 15, finding 8).
        if fit.batch_size != w.default_batch_size or (ckpt is None and fit.options.checkpointing):
            fit = ram_fit(w.default_batch_size, ckpt if ckpt is not None else False)
    elif fit is not None and a.batch_size is None and fit.fits and fit.batch_size != w.default_batch_size:
        # auto: timed at the batch the RAM holds, as the memory figure is (ResNet-50 said batch 256
        # while its 20.1 GB were batch 234's; 256 needed more than the usable RAM)
        timed = replace(a, batch_size=fit.batch_size)
    if fit is not None and not on_measured and a.checkpointing is None and fit.options.recompute != "none":
        # the RAM holds this batch only with recompute: time the step that recomputes, as a GPU
        # row is (it was timed without and quoted the checkpointed memory; review 15)
        timed = replace(timed, checkpointing=fit.options.recompute)
    loc = _local_cpu_time(
        w, timed, cores=cores, mhz=mhz, features=features, measured_tflops=measured_tflops, name=name, bench=bench
    )
    if loc.throughput_samples_per_s is not None:  # timed in fp32 at this batch, measured or modelled
        loc.batch_size, loc.precision_used = timed.batch_size or w.default_batch_size, Precision.FP32
    if clamped:
        loc.basis += f"; the dataset ({n_samples:,} samples) is smaller than the batch asked for: one step holds it"
    if fit is None:
        return _with_row_figures(loc, w, a)  # not checked: fits stays True, and no memory figure is shown
    loc.fits = fit.fits
    # rounded away from the usable RAM it was judged against, as a GPU row's need is
    loc.peak_memory_gb = need_gb(fit.peak_gb, usable_ram_gb(float(ram_gb or 0.0)))
    loc.memory_breakdown_gb = fit.breakdown_gb
    loc.vram_gb = float(ram_gb or 0.0)  # a fit was made: the RAM was given
    loc.max_batch = fit.max_batch
    loc.checkpointing = fit.options.recompute
    return _with_row_figures(loc, w, a)


#: The most GPUs a measured data-parallel (unsharded) step of the shared data ran on, and the most
#: any measured step ran on (llm-foundry's FSDP rows): past them the collectives' latency is the
#: model's alone (NCCL's own latency model moves DDP rows at 1,024 GPUs by -33 to +23 %:
#: docs/validation/steptime-2026-11-23/nccl-latency/ddp.txt).
VALIDATED_DDP_GPUS = 8
VALIDATED_GPUS = 512


def unvalidated_paths(w: Workload, a: Assumptions, count: int, link_basis: str | None, parallelism: str) -> str:
    """The parts of a row's step no measured step validates (docs/accuracy.md, "What validates each
    path"), in words; empty where the row's regime band is its own."""
    out = []
    if a.offload != Offload.NONE:
        out.append("parameter offload" if a.offload == Offload.PARAMS else "optimizer offload")
    if count > 1 and link_basis is not None and "PCIe" in link_basis and "network" not in link_basis:
        out.append("PCIe-only multi-GPU")
    if count > 1 and a.sharding in (Sharding.ZERO1, Sharding.ZERO2):
        out.append("DeepSpeed ZeRO-1/2")
    elif parallelism == "ddp" and count > VALIDATED_DDP_GPUS:
        out.append(f"data parallel past {VALIDATED_DDP_GPUS} GPUs")
    if count > VALIDATED_GPUS:
        out.append(f"more than {VALIDATED_GPUS} GPUs")
    if w.mode == Mode.QLORA:
        out.append("QLoRA's tokens per step")
    if w.shape is not None and w.shape.is_moe:
        out.append("mixture of experts")
    return (_UNVALIDATED + ", ".join(out)) if out else ""


_UNVALIDATED = "not validated by a measured step: "


def borrowed_band_paths(rows: Sequence[EstimateRow]) -> list[str]:
    """The paths no measured step validates among ``rows``' band notes, once each, sorted (what a
    face's footnote names for the rows it shows)."""
    return sorted({p for r in rows if r.band_note for p in r.band_note.removeprefix(_UNVALIDATED).split(", ")})


def usable_ram_gb(ram_gb: float) -> float:
    """What training may take of a machine's RAM: the operating system, the data loader and the
    page cache keep the rest (a tenth, at least 1 GB), or the machine swaps."""
    return max(0.0, ram_gb - max(1.0, 0.1 * ram_gb))


def _local_cpu_time(
    w: Workload,
    a: Assumptions,
    *,
    cores: int | None,
    mhz: float | None,
    features: list[str],
    measured_tflops: float | None,
    name: str,
    bench: dict[str, Any] | None,
) -> LocalEstimate:
    from gpuselect.estimate.perf import cpu_device

    a.validate()
    if measured_tflops is not None and not (finite_number(measured_tflops) and measured_tflops > 0):
        raise UsageError(f"the measured CPU rate must be a positive number of TFLOPS, not {measured_tflops!r}")
    samples = (a.dataset_size or w.default_dataset_size) * (a.epochs or w.default_epochs)
    rec = dict(bench or {})
    if measured_tflops and not (rec.get("matmul_tflops") or {}).get("fp32"):
        rec["matmul_tflops"] = {**(rec.get("matmul_tflops") or {}), "fp32": measured_tflops}
    if not rec and not (cores and mhz):
        return LocalEstimate("cpu", name, None, None, "no CPU figures available", 1.0)
    batch = a.batch_size or w.default_batch_size
    busy = bool(rec.get("busy"))  # the benchmark flagged other processes' CPU use while it ran
    sixteen = a.precision in (Precision.FP16, Precision.BF16, Precision.BF16_TRUE, Precision.FP8)
    # the time only: local_cpu_estimate counts the memory in the 16 bits asked for (QA 17b: the row
    # said fp32 beside bf16's 11.4 GB, where fp32 at that batch needs 20)
    in32 = (
        "; timed in fp32: a CPU's 16-bit training steps are not measured, only its matmuls (its memory is "
        "counted in 16 bits, as asked)"
        if sixteen
        else ""
    )
    hit = _measured(w, rec, batch)
    ck = as_checkpointing(a.checkpointing) if a.checkpointing is not None else False
    if hit is not None and ck:
        thr, how = hit
        d = cpu_device(rec or None, cores=cores, name=name, mhz=mhz, features=features)
        ratio, said = _with_recompute(w, d, None, batch, "fp32", ck, a)
        thr /= ratio
        busy_said = ", on a busy machine (likely far too slow)" if busy else ""
        return LocalEstimate(
            "cpu",
            name,
            thr,
            samples / thr / 3600,
            f"this CPU's benchmark trained {w.name} {how}{busy_said}{said}{in32}",
            regime_band("cpu_unsteady" if busy else "cpu", "NVIDIA"),
        )
    if hit is not None:
        thr, how = hit
        # A quiet record's own steps take the CPU regime's band; a busy one's the band of such
        # records (docs/validation/cpu-vm-2026-11-23: two runs 4-10x apart under load).
        return LocalEstimate(
            "cpu",
            name,
            thr,
            samples / thr / 3600,
            f"measured: this CPU trained {w.name} {how} in its benchmark"
            + (", on a busy machine (likely far too slow)" if busy else "")
            + in32,
            regime_band("cpu_unsteady" if busy else "cpu", "NVIDIA"),
            measured_step=True,
        )
    d = cpu_device(rec or None, cores=cores, name=name, mhz=mhz, features=features)
    # A CPU is timed in fp32, the precision its benchmark trains in, whatever was asked: AMX's bf16
    # matmuls measure 3-6x fp32's, which the step model took for whole training steps (a CNN read
    # several times its own measured step), and no 16-bit CPU step is measured to say what share
    # of it a step keeps. A 16-bit request is said to be timed so.
    prec = "fp32"
    st, _ = predict_step(
        w, d, None, batch, prec, optimizer=a.optimizer, checkpointing=as_checkpointing(a.checkpointing), a=a
    )
    thr = batch / st.seconds
    anchor = _measured_edge(w, rec, batch)
    if anchor is not None:
        # Past the benchmark's measured batches its nearest measured step anchors the model's curve
        # (the model alone jumped 36 % above the last measured batch, against its trend).
        b_edge, thr_edge = anchor
        st_edge, _ = predict_step(
            w, d, None, b_edge, prec, optimizer=a.optimizer, checkpointing=as_checkpointing(a.checkpointing), a=a
        )
        thr *= thr_edge / (b_edge / st_edge.seconds)
    measured = bool((rec.get("matmul_tflops") or {}).get("fp32"))
    fit = d.bench_fit
    basis = (
        (
            f"step-time model with this CPU's benchmark, {fit.describe()}, {prec}, batch {batch}"
            if fit is not None
            else f"step-time model with this CPU's measured matmul ({d.peak_tflops['fp32'] * 1e3:.0f} GFLOP/s fp32), "
            f"bandwidth and per-op cost, {prec}, batch {batch}"
        )
        if measured
        else "unmeasured: " + "; ".join(d.notes) + " (run `gpuselect bench` for a measured figure)"
    )
    # Only a device fitted on steps it explains takes the cpu band; one whose steps its fit misses
    # (a busy machine), or that has too few to fit, takes the band of such records.
    unsteady = fit is None or fit.unsteady or busy
    basis += in32
    if anchor is not None:
        basis += f"; scaled to its measured step at batch {anchor[0]}"
    if busy and measured:
        basis += "; benchmarked on a busy machine (likely far too slow)"
    # Unmeasured: the band of our CPU records predicted from what detect sees (regime cpu_spec).
    # Past a quiet record's measured batches of this workload, the band of such estimates
    # (cpu_anchored: each quiet record's edge steps predicted from their neighbours): the
    # measured step carries the estimate, not the fit, however well the fit explains the others.
    regime = ("cpu_unsteady" if unsteady else "cpu") if measured else "cpu_spec"
    if anchor is not None and rec.get("quiet") and not busy:
        # only where the benchmark measured itself quiet (``quiet``: its own measure of other
        # processes' CPU use): a loaded record's anchors are themselves off (-80 to +2,692 %)
        regime = "cpu_anchored"
    band = regime_band(regime, "NVIDIA")
    loc = LocalEstimate("cpu", name, thr, samples / thr / 3600, basis, band)
    # the model's step, scaled as its rate was where a measured step anchors it
    scale = (batch / thr) / st.seconds
    loc.bound, loc.time_breakdown_s = st.bound, {k: round(v * scale, 6) for k, v in st.breakdown.items() if v > 0}
    return loc


def _with_recompute(
    w: Workload, d: DeviceModel, e: GpuEntry | None, batch: int, prec: str, ck: bool | str, a: Assumptions
) -> tuple[float, str]:
    """(how many times longer the step is, in words) where a step the benchmark measured must also
    recompute: its steps recompute nothing, so a checkpointed step is the measured one slowed at the
    step-time model's ratio for this device (it was quoted as measured, the recompute left out)."""
    plain, _ = predict_step(w, d, e, batch, prec, checkpointing=False, optimizer=a.optimizer, a=a)
    again, _ = predict_step(w, d, e, batch, prec, checkpointing=ck, optimizer=a.optimizer, a=a)
    ratio = again.seconds / plain.seconds
    return ratio, (
        ", without activation checkpointing: slowed by the recompute at the step-time model's ratio "
        f"({ratio:.2f}x the step)"
    )


def local_gpu_estimate(
    w: Workload,
    a: Assumptions,
    catalog: Catalog,
    perf: PerfModel | None,
    *,
    name: str | None,
    memory_bytes: int | None,
    device: str,
    spec_ratio: dict[str, float] | None = None,  # noqa: ARG001 - kept for callers; ``bench`` carries the measured rates
    bench: dict[str, Any] | None = None,
    power_limit_w: float | None = None,
) -> LocalEstimate:
    """This machine's GPU: its catalog entry's row, with the benchmark's measured matmul rates,
    bandwidth, dispatch cost and copy rate replacing the defaults where ``bench`` (its record) is
    given; a workload the benchmark trained is reported as measured."""
    from gpuselect.estimate.perf import benchmarked_gpu_device

    a.validate()
    match = catalog.match(name or "", memory_bytes) if name else None
    if match is None:
        loc = LocalEstimate(
            device, name or "unknown GPU", None, None, "not in the catalog: no estimate", 1.0, fits=False
        )
        if memory_bytes and memory_bytes > 0:
            # Its speed is unknown, but whether the workload fits needs only its memory (an RTX 3050
            # Laptop's row said nothing of its 4 GB): in 16-bit mixed precision, as most cards run.
            cap = memory_bytes / 2**30
            prec = "fp32" if a.precision in (Precision.FP32, Precision.TF32) else "fp16"
            mo = MemoryOptions(precision=prec, optimizer=a.optimizer, offload=a.offload, loss=a.loss)
            mem = plan(w, cap, mo, checkpointing=a.checkpointing, sharding=None, batch_size=a.batch_size)
            loc.fits, loc.basis = mem.fits, f"not in the catalog: no time estimate; memory fitted in {prec}"
            loc.peak_memory_gb, loc.vram_gb = need_gb(mem.peak_gb, cap), cap  # as a catalog card's row
            loc.memory_breakdown_gb, loc.max_batch = mem.breakdown_gb, mem.max_batch
            loc.checkpointing = mem.options.recompute
        return loc
    e = match.entry.one_die()  # the driver's GPU is one die of a multi-die board
    if memory_bytes and memory_bytes > 0:
        # Fitted in what this card reports: a Radeon PRO W7800 48GB matched the catalog's 32 GB
        # W7800 and was judged against 32 GB; a T4 with ECC on reports its 15 GB.
        e = e.as_reported(memory_bytes / 2**30)
    d = benchmarked_gpu_device(e, bench) if bench else None
    r = _row(w, e, 1, a, perf, None, device=d)
    fit = d.bench_fit if d is not None else None
    basis = f"catalog entry {e.id}; " + (
        (
            f"step-time model with this card's benchmark, {fit.describe()}"
            if fit is not None
            else "step-time model with this card's benchmark (matmul, bandwidth, launch overhead)"
        )
        if bench
        else "unmeasured (`gpuselect bench` measures it)"
    )
    if e.form_factor == "laptop" and not bench:
        # A laptop GPU's catalog figures are the top of its power range (its note says which); one
        # set lower trains slower, by how much the catalog cannot say: said, not guessed.
        lower = power_limit_w is not None and 0 < power_limit_w < 0.9 * e.tdp_w
        basis += f"; a laptop GPU, estimated at the top of its power range ({e.notes or f'{e.tdp_w:g} W'})" + (
            f": this one is limited to {power_limit_w:.0f} W, so expect it slower (`gpuselect bench` measures it)"
            if lower
            else ""
        )
    thr, hours = r.throughput_samples_per_s, r.total_time_h
    if bench and r.batch_size:
        hit = _measured(w, bench, r.batch_size)
        if hit is not None:
            thr = hit[0]
            basis = f"measured: this card trained {w.name} {hit[1]} in its benchmark"
            if r.checkpointing not in (None, "none"):  # asked for, or needed to fit (review 16)
                ck = as_checkpointing(r.checkpointing)
                prec = str(r.precision_used or "fp32")
                ratio, said = _with_recompute(w, d or device_for(e), e, r.batch_size, prec, ck, a)
                thr /= ratio
                basis += said
            hours = (a.dataset_size or w.default_dataset_size) * (a.epochs or w.default_epochs) / thr / 3600
            loc = _with_memory(
                LocalEstimate(device, name or e.name, thr, hours, basis, regime_band("overhead", e.vendor), r.fits), r
            )
            # a measured step has no modelled breakdown; the energy scales with the measured time
            loc.bound, loc.time_breakdown_s = None, {}
            if r.energy_kwh is not None and r.total_time_h:
                loc.energy_kwh = r.energy_kwh * hours / r.total_time_h
            return _with_row_figures(loc, w, a)
    # A modelled step (not the benchmark's measured one): where selective checkpointing trains
    # faster, said in the basis, which every face prints; a LocalEstimate has no note (the hint was
    # put in the row's, which this drops: computed, then never shown).
    selective = _say_selective(w, a, r, lambda b: _row(w, e, 1, b, perf, None, device=d))
    if selective:
        basis += f"; {selective}"
    return _with_row_figures(
        _with_memory(LocalEstimate(device, name or e.name, thr, hours, basis, r.error_band, r.fits), r), w, a
    )


def _with_memory(loc: LocalEstimate, r: EstimateRow) -> LocalEstimate:
    """A local GPU carries its row's "needs X of your Y GB" and breakdown (the faces show them)."""
    loc.peak_memory_gb = r.peak_memory_gb
    loc.memory_breakdown_gb = dict(r.memory_breakdown_gb)
    loc.vram_gb = r.vram_gb
    loc.max_batch = r.max_batch
    loc.checkpointing = r.checkpointing
    loc.batch_size, loc.precision_used, loc.energy_kwh = r.batch_size, r.precision_used, r.energy_kwh
    loc.bound, loc.time_breakdown_s = r.bound, dict(r.time_breakdown_s)
    return loc


def option_counts(a: Assumptions) -> list[int]:
    """The GPU counts of a box: 1, 2, 4 ... up to ``max_gpus`` (or exactly ``counts``)."""
    if a.counts:
        return sorted(set(a.counts))
    counts = [1]
    while counts[-1] * 2 <= a.max_gpus:
        counts.append(counts[-1] * 2)
    return counts


def estimate(
    w: Workload,
    a: Assumptions,
    catalog: Catalog,
    perf: PerfModel | None = None,
    *,
    gpu_ids: list[str] | None = None,
    local: list[LocalEstimate] | None = None,
    owned: Sequence[OwnedGpu] = (),
) -> EstimateResult:
    """Every plausible catalog option (``recommend.plausible_count``), this machine's CPU and GPUs
    (``local``), and the recommendation. ``owned``: the user's GPUs, which form one option together
    and reduce what a purchase of the same card costs."""
    a.validate()
    entries = catalog.entries
    if gpu_ids:
        gpu_ids = known_gpu_ids(catalog, gpu_ids)
        entries = [e for e in entries if e.id in gpu_ids]
    rows = []
    for e in entries:
        card_rows = []
        for n in option_counts(a):
            if not plausible_count(e, n, a.gpus_per_node):
                continue  # nobody builds it, whether --count asked for it or not (count_notes says so)
            if not a.counts and n * e.dies > a.max_gpus:
                continue  # a box holds max_gpus GPUs: four MI250X (eight GCDs), not eight; none at --max-gpus 1
            card_rows.append(_card_row(w, e, n, a, perf))
        _say_what_sharding_frees(card_rows)
        rows += card_rows
    if not rows and a.counts:
        names = ", ".join(e.name for e in entries[:3]) + (" …" if len(entries) > 3 else "")
        raise UsageError(
            f"{names} {'is' if len(entries) == 1 else 'are'} not built in counts of "
            f"{', '.join(str(n) for n in option_counts(a))}: {PLAUSIBLE_RULE}"
        )
    if not a.counts:
        # Stage 4: datacenter cards over nodes of gpus_per_node (16, 32, ...) -- every one when no
        # box of any card meets the deadline, else each card none of whose boxes holds the model
        # (so "how many H100s for 70B?" has an answer beside another card's box that holds it; a
        # card that fits but is slow is not blown up into a cluster of old boards). The
        # recommendation still takes the lowest stage that works.
        bigger = [n for n in CLUSTER_COUNTS if option_counts(a)[-1] < n <= a.cluster_max_gpus]
        some_box_in_time = any(r.fits and r.meets_deadline for r in rows)
        holds = {r.gpu_id for r in rows if r.fits}
        for e in entries:
            if e.family not in SERVER_FAMILIES or e.form_factor not in SERVER_FORM_FACTORS:
                continue
            if (e.vendor, e.architecture) in UNSUPPORTED_ARCHS:
                continue  # a card today's frameworks do not run is never the advice: no cluster of K80s
            if some_box_in_time and e.id in holds:
                continue
            for n in bigger:
                r = _card_row(w, e, n, a, perf)
                rows.append(r)
                if r.fits and r.meets_deadline:
                    break  # more GPUs of this kind only cost more
    _note_slower_than_one(rows)
    by_id = {e.id: e for e in catalog.entries}
    owned = _paced_by_local(owned, local or [], by_id, lambda e: _row(w, e, 1, a, perf, None))
    own = own_option(owned, by_id, lambda e, n: _row(w, e, n, a, perf, None), a)
    # whole cards, as the rows count them (an MI250X is two GPUs; one GCD of it is no card): all the
    # healthy ones the user has of that model, though the option may use fewer (--max-gpus)
    owned_n = (
        sum(1 for g in owned if g.problem is None and g.catalog_id == own.gpu_id) // by_id[own.gpu_id].dies
        if own is not None
        else 0
    )
    if own is not None:
        # the owned cards' pace against the catalog's (their own estimates'): more of them run at the slowest's
        pace = min((g.scale for g in owned if g.catalog_id == own.gpu_id and g.problem is None), default=1.0)
        rows = account_for_owned(rows, own.gpu_id, owned_n, _price(by_id[own.gpu_id])[0], a, pace)
    excluded = [f"{g.device} ({g.name}): {g.problem}" for g in owned if g.problem]
    local = local or []
    unknown = [f"{g.device} ({g.name})" for g in owned if g.problem is None and g.catalog_id not in by_id]
    rec = recommend(rows, local, a, w, own=own, owned_n=owned_n, excluded=excluded, unknown_owned=unknown)
    from gpuselect.estimate.recommend import named_options

    named = {(o.get("gpu_id"), o.get("count")) for o in named_options(rec)}
    for r in rows:
        if (r.gpu_id, r.count) in named and r.gpu_id in by_id:
            named.discard((r.gpu_id, r.count))  # once: a row the advice names twice
            said = _say_selective(w, a, r, partial(_card_row, w, by_id[r.gpu_id], r.count, perf=perf))
            if said:
                r.note = f"{r.note}; {said}" if r.note else said
    _larger_batch(w, a, perf, rows, rec, by_id, own.gpu_id if own is not None else None)
    return EstimateResult(w, a, rows, local, rec)


def _paced_by_local(
    owned: Sequence[OwnedGpu],
    local: Sequence[LocalEstimate],
    by_id: dict[str, GpuEntry],
    one_card: Callable[[GpuEntry], EstimateRow],
) -> list[OwnedGpu]:
    """Each owned card's speed as its own estimate (``local``, with its benchmark where one was
    run) has it against the catalog's row of that card: "your GeForce RTX 3090 would need ~77.8 h"
    (the matmul ratio alone) stood above "gpu0 (NVIDIA GeForce RTX 3090): 75.7 h". A card without
    its own estimate keeps the scale it came with."""
    times = {x.device: x.total_time_h for x in local if x.total_time_h}
    base: dict[tuple[str, float | None], float | None] = {}
    out = []
    for g in owned:
        mine = times.get(g.device)
        if mine is None or g.catalog_id not in by_id or g.problem is not None:
            out.append(g)
            continue
        key = (g.catalog_id, g.memory_gb)
        if key not in base:
            e = by_id[g.catalog_id].one_die()  # as local_gpu_estimate fits it
            base[key] = one_card(e.as_reported(g.memory_gb) if g.memory_gb else e).total_time_h
        t1 = base[key]
        out.append(replace(g, scale=t1 / mine) if t1 else g)
    return out


def _larger_batch(
    w: Workload,
    a: Assumptions,
    perf: PerfModel | None,
    rows: list[EstimateRow],
    rec: Recommendation,
    by_id: dict[str, GpuEntry],
    owned_id: str | None,
) -> None:
    """Where the auto batch leaves the advice's GPUs waiting on the host (overhead-bound) and the
    advice goes past one GPU, say whether one GPU at a larger batch would do (2x RTX 3090 rented
    for $50 where one at batch 1,024 took a fifth of the time for $4.57): a few cards, one batch
    each, so the estimate stays as fast."""
    from gpuselect.estimate.recommend import (
        describe,
        explain,
        larger_batch_candidates,
        larger_batch_size,
        pick_larger_batch,
        usd,
    )

    tried = []
    for r in larger_batch_candidates(rec, rows, a):
        b = larger_batch_size(r)
        if b is None or r.gpu_id == owned_id or r.gpu_id not in by_id:
            continue  # the user's own cards are their own option, priced apart
        e = by_id[r.gpu_id]
        alt = _card_row(w, e, 1, replace(a, batch_size=b), perf)
        if alt.fits and b >= 2 and (alt.peak_memory_gb or 0) > HEADROOM * e.usable_vram_gb:
            # not a batch that fills the card: the room an automatic batch leaves (review 14)
            alt = _card_row(w, e, 1, replace(a, batch_size=b // 2), perf)
        if alt.fits and alt.total_time_h is not None:
            tried.append(alt)
    pick = pick_larger_batch(rec, tried, a)
    if pick is not None:
        rec.larger_batch = describe(pick)
        rec.choice, rec.rationale = explain(rec, usd)


def _say_what_sharding_frees(card_rows: list[EstimateRow]) -> None:
    """A sharded row whose GPUs each train faster than the card alone says why (QA 14: 8x B200 at
    +21 % per GPU with nothing said): the memory sharding frees allows a larger batch per GPU, or
    no recompute, and each GPU updates only its shard."""
    one = next((r for r in card_rows if r.count == 1 and r.fits and r.parallelism == "single"), None)
    if one is None or not one.throughput_samples_per_s:
        return
    for r in card_rows:
        if r.count < 2 or not r.fits or r.parallelism != "fsdp" or not r.throughput_samples_per_s:
            continue
        if r.throughput_samples_per_s / r.count <= SHARDED_FASTER_MARGIN * one.throughput_samples_per_s:
            continue  # within 1 %: not a difference worth a reason (it was said at +0.05 %)
        why = []  # what sharding's freed memory allows, then the update no GPU does whole any more
        if r.batch_size and one.batch_size and r.batch_size > one.batch_size:
            why.append(f"batch {r.batch_size} per GPU where one GPU fits {one.batch_size}")
        if one.checkpointing != "none" and r.checkpointing == "none":
            why.append("no recompute where one GPU needs checkpointing")
        # Under offload no GPU updates (the breakdown's optimizer is 0): the CPU runs each rank's shard.
        offloaded = "offload" in (r.time_breakdown_s or {})
        why.append(
            "each GPU's process updates only its shard of the model, on the host's CPU"
            if offloaded
            else "each GPU updates only its shard of the model"
        )
        r.note = "; ".join(x for x in (r.note, "each GPU trains faster than one alone: " + ", ".join(why)) if x)


def known_gpu_ids(catalog: Catalog, gpu_ids: Sequence[str]) -> list[str]:
    """The catalog ids meant, in any case (NVIDIA-B200); an unknown one is refused in one sentence
    with the ids it may mean (those containing it, else the closest), not just "unknown"."""
    import difflib

    lower = {e.id.lower(): e.id for e in catalog.entries}
    out, unknown = [], []
    for g in gpu_ids:
        hit = catalog.get(g) or catalog.get(lower.get(g.strip().lower(), ""))
        if hit is not None:
            out.append(hit.id)
            continue
        key = g.strip().lower()
        near = [i for k, i in lower.items() if key and key in k] or [
            lower[k] for k in difflib.get_close_matches(key, list(lower), n=3, cutoff=0.6)
        ]
        more = f" … ({len(near)} ids contain it)" if len(near) > 4 else ""
        unknown.append(f"{g} (did you mean {', '.join(near[:4])}{more}?)" if near else g)
    if unknown:
        what = "unknown GPU id" + ("s" if len(unknown) > 1 else "")
        raise UsageError(f"{what} {'; '.join(unknown)}: `gpuselect catalog` lists them")
    return out


def _card_row(w: Workload, e: GpuEntry, n: int, a: Assumptions, perf: PerfModel | None) -> EstimateRow:
    """``n`` cards of ``e``; a multi-die card (MI250/MI250X: two GCDs, each its own GPU to PyTorch
    with half the board) as ``n x dies`` ranks of one die, each with its share of the price: one
    MI250X "fitted" 108 of 128 GB as one device, which no process can use as one."""
    if e.dies <= 1:
        return _row(w, e, n, a, perf, None)
    die = replace(
        e.one_die(),
        launch_price_usd=e.launch_price_usd / e.dies if e.launch_price_usd else None,
        street_price_usd=e.street_price_usd / e.dies if e.street_price_usd else None,
        cloud_usd_per_hour=e.cloud_usd_per_hour / e.dies if e.cloud_usd_per_hour else None,
        cloud_node_usd_per_hour=e.cloud_node_usd_per_hour / e.dies if e.cloud_node_usd_per_hour else None,
    )
    r = _row(w, die, n * e.dies, a, perf, None)
    note = r.note.replace(" GB;", " GB per GCD;", 1) if r.note and not r.fits else r.note
    return replace(r, count=n, dies=e.dies, name=f"{e.name} ({e.dies} GCDs each)", note=note)


def _note_slower_than_one(rows: list[EstimateRow]) -> None:
    """A box of several cards that trains slower than one of them says why, so the row does not
    read as a mistake: each step's gradient exchange (or sharded gathers) outweighs the split batch."""
    one = {r.gpu_id: r.throughput_samples_per_s for r in rows if r.count == 1 and r.fits and r.throughput_samples_per_s}
    for r in rows:
        single, thr = one.get(r.gpu_id), r.throughput_samples_per_s
        if r.count > 1 and r.fits and single and thr is not None and thr < single:
            cost = "communication outweighs" if r.bound == "communication" else "overheads outweigh"
            why = f"slower than one of these GPUs: the step's {cost} splitting the batch"
            r.note = f"{r.note}; {why}" if r.note else why


# The recommendation lives in recommend.py; these names stay importable from here.
from gpuselect.estimate.recommend import (  # noqa: E402
    PLAUSIBLE_RULE,
    STAGE_NAMES,
    OwnedGpu,
    Recommendation,
    account_for_owned,
    offer_phrase,
    own_option,
    plausible_count,
    plausible_max,
    recommend,
)

__all__ = [
    "STAGE_NAMES",
    "Assumptions",
    "EstimateResult",
    "EstimateRow",
    "LocalEstimate",
    "OwnedGpu",
    "Recommendation",
    "estimate",
    "recommend",
]
