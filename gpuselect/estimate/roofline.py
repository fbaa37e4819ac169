"""Time of one operator on one device: a roofline with fitted, physically meaningful efficiencies.

    t(op) = max( FLOPs / (peak[precision] x eff(kind, shape, arch)),
                 bytes / (bandwidth x mem_eff[arch]),
                 kernel floor )

GEMM efficiency (fitted in ``fit/kernels.py`` on ``../shared/data/kernels/gemm.csv``)::

    eff(m, n, k) = E[arch, precision class] x waves(m, n) x k / (k + k0) x (align if misaligned)

- ``E``: what the architecture reaches on large GEMMs at that precision (MAMF / DeepBench);
- ``waves``: wave quantisation of the output tiles over the SMs (a GEMM with fewer tiles than
  SMs leaves SMs idle; 1.1 waves wastes most of the second). The library picks the tile edge
  (128, 64 or 32) that finishes soonest: each halving of the edge runs at ``small_tile_eff`` of
  the rate (less reuse per loaded operand), fitted with E in ``fit/kernels.py``; 0 means one
  128x128 tile only (``wave_fill``);
- ``k0``: the per-tile prologue/epilogue cost in units of the reduction length;
- ``align``: the penalty for a dimension that is not a multiple of 8 (tensor-core paths pad).

Convolutions run as implicit GEMMs at ``conv`` x the GEMM efficiency; fused attention at
``attention`` x E with its own sequence-length saturation. Memory-bound kernels reach
``mem_eff[arch]`` of the data-sheet bandwidth (FluidX3D rows). An architecture with no data
borrows the nearest one of its vendor, times ``borrow_penalty`` (stated in ``DeviceModel.notes``).
Parameters live in ``data/steptime.json`` (written by ``fit/``); this module only reads them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gpuselect.catalog.schema import ARCHITECTURES, GpuEntry
from gpuselect.errors import DataError
from gpuselect.estimate.trace import DEQUANT_BYTES, Op, OpKind

if TYPE_CHECKING:
    from gpuselect.estimate.perf import BenchFit

PARAMS_FILE = Path(__file__).resolve().parent / "data" / "steptime.json"

#: Tensor-core precision classes (``precision_class``).
TENSOR_CLASSES = ("tf32", "16", "fp8")
TF32_ARCHS = frozenset({"Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 3", "CDNA 4"})
#: CDNA 1/2 run FP32 GEMMs on their matrix cores (the catalog's tf32 field holds that FP32-matrix rate).
FP32_MATRIX_ARCHS = frozenset({"CDNA 1", "CDNA 2"})
BF16_ARCHS = frozenset(
    {
        "Ampere",
        "Ada Lovelace",
        "Hopper",
        "Blackwell",
        "Blackwell Ultra",
        "CDNA 1",  # MI100: bf16 matrix cores at half its fp16 rate, so auto keeps fp16 there
        "CDNA 2",
        "CDNA 3",
        "CDNA 4",
        "RDNA 3",
        "RDNA 4",
    }
)
FP16_ARCHS = frozenset({"Volta", "Turing", "CDNA 1", "RDNA 2", "GCN 5.1 (Vega 20)"}) | BF16_ARCHS
#: Architectures without matrix units whose fp16 is packed math on the vector units (per vendor).
PACKED_FP16_ARCHS: dict[str, frozenset[str]] = {"AMD": frozenset({"RDNA 2", "GCN 5.1 (Vega 20)"})}
FP8_ARCHS = frozenset({"Ada Lovelace", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 3", "CDNA 4"})

#: The precision each card trains well in (``auto``), and what an explicit request falls back to.
FALLBACK: dict[str, tuple[str, ...]] = {
    "fp8": ("fp8", "bf16", "fp16", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "bf16-true": ("bf16-true", "fp16", "fp32"),
    "fp16": ("fp16", "fp32"),
    "tf32": ("tf32", "fp32"),
    "fp32": ("fp32",),
}


def precision_class(precision: str) -> str:
    """The GEMM efficiency class: ``fp32`` (vector units), ``tf32``, ``16`` (fp16/bf16 tensor), ``fp8``."""
    return {"fp16": "16", "bf16": "16", "bf16-true": "16"}.get(precision, precision)


def supports(e: GpuEntry, precision: str) -> bool:
    """Whether a card runs a training precision in hardware (tensor/matrix units for the 16-bit ones)."""
    if precision == "fp32":
        return True
    if precision == "tf32":
        return e.architecture in TF32_ARCHS and bool(e.tf32_tflops)
    if precision in ("bf16", "bf16-true"):
        return e.architecture in BF16_ARCHS and bool(e.bf16_tflops)
    if precision == "fp16":
        return e.architecture in FP16_ARCHS and bool(e.fp16_tflops)
    if precision == "fp8":
        return e.architecture in FP8_ARCHS and bool(e.fp8_tflops)
    return False


def resolve_precision(e: GpuEntry, requested: str) -> str:
    """``auto``: bf16 on Ampere and newer (CDNA 2+), fp16 mixed on Volta/Turing (and the MI100,
    whose bf16 is half its fp16 rate), else fp32.
    An explicit request the card cannot run falls back along ``FALLBACK``; fp32 always runs."""
    chain = ("bf16", "fp16", "fp32") if requested == "auto" else FALLBACK[requested]
    if requested == "auto" and supports(e, "fp16") and (e.bf16_tflops or 0) < 0.99 * (e.fp16_tflops or 0):
        chain = ("fp16", "fp32")  # a card whose bf16 runs slower than its fp16 (MI100) trains fastest in fp16
    return next(p for p in chain if supports(e, p))


def element_bytes(precision: str) -> float:
    """Bytes per activation element: 16-bit under mixed precision (fp8 training keeps 16-bit
    activations between its fp8 GEMMs), 4 otherwise."""
    return 2.0 if precision in ("fp16", "bf16", "bf16-true", "fp8") else 4.0


@dataclass(frozen=True)
class Params:
    """The fitted parameters (``data/steptime.json``)."""

    doc: dict[str, Any]

    @classmethod
    def load(cls, path: Path = PARAMS_FILE) -> Params:
        try:
            return cls(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise DataError(
                f"the step-time model's parameters {path.name} are missing or corrupt ({exc}); "
                "rerun python -m gpuselect.estimate.fit"
            ) from exc

    def __getitem__(self, key: str) -> Any:
        return self.doc[key]


_PARAMS: Params | None = None


def params() -> Params:
    global _PARAMS
    if _PARAMS is None:
        _PARAMS = Params.load()
    return _PARAMS


def dequant_bytes(p: Params) -> float:
    """Bytes per weight one 4-bit dequantisation is charged at the card's streaming bandwidth: the
    time bitsandbytes' NF4 kernel took inside LitGPT's training steps (``dequant.bytes_per_weight``,
    fitted by benchmarks/qlora_litgpt.py --fit), else the bytes it moves (``trace.DEQUANT_BYTES``)."""
    value = p.doc.get("dequant", {}).get("bytes_per_weight", DEQUANT_BYTES)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e3:
        raise DataError(
            f"the step-time model's parameters {PARAMS_FILE.name} hold a dequant.bytes_per_weight of {value!r}, "
            "not a positive number of bytes; rerun benchmarks/qlora_litgpt.py --fit"
        )
    return float(value)


@dataclass(frozen=True)
class DeviceModel:
    """Everything the step-time model needs about one device (a catalog GPU, or a benchmarked
    CPU/GPU whose measurements replace the defaults)."""

    name: str
    kind: str  # "gpu" or "cpu"
    vendor: str
    arch: str
    peak_tflops: dict[str, float]  # training precision -> dense GEMM peak
    vector_tflops: float  # FP32 on the vector units (elementwise FLOPs)
    bandwidth_gbs: float
    units: int  # SMs / compute units / CPU cores: how many tiles run at once
    gemm_eff: dict[str, float]  # precision class -> E
    mem_eff: float
    kernel_floor_s: float
    dispatch_s: float  # host time per eager op (Python + dispatcher + autograd + launch)
    h2d_gbs: float | None  # batch copy host -> device (None: the CPU itself, no copy)
    h2d_latency_s: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    conv_factor: float | None = (
        None  # convolutions' rate against GEMMs where a benchmark fitted it (else the global one)
    )
    bench_fit: BenchFit | None = None  # the fit on the benchmark's own training steps, where there was one
    # One GPU of several training together: the collectives' kernels run beside the GEMMs on the
    # same SMs and memory, so a step's tensor-core GEMMs reach the multi-GPU step factor instead.
    multi_gpu: bool = False
    # Fused attention's rate against the GEMMs where it is not the architecture's fitted one (a
    # validation source that ran an older kernel: FlashAttention-2 on Hopper).
    attention_factor: float | None = None
    # Host time per step whatever the op count (the training loop's Python, optimizer.step and
    # zero_grad's own overhead, the backward call): a catalog row's, fitted with the per-op cost on
    # two models of different op counts; 0 where a benchmark fitted its own per-op cost alone.
    step_fixed_s: float = 0.0

    def gemm_efficiency(self, pc: str, m: float, n: int, k: int) -> float:
        p = params()["gemm"]
        e = self.gemm_eff.get(pc, self.gemm_eff.get("fp32", 0.5))
        if m <= 0 or n <= 0 or k <= 0:
            return e
        if self.kind == "cpu":
            fill = wave_fill(m, n, self.units, int(p["tile_cpu"]), 0.0)
        else:
            fill = wave_fill(m, n, self.units, int(p["tile"]), float(p.get("small_tile_eff", 0.0)))
        eff = e * fill * k / (k + _k0(self, p))
        if pc != "fp32" and (k % 64 or n % 8):
            eff *= p["align_penalty"]
        result: float = max(eff, 1e-4)
        return result


def wave_fill(m: float, n: float, units: int, tile: int, small: float) -> float:
    """The share of the SMs' rate a GEMM's output grid keeps: per tile edge (``tile``, then halved
    twice where ``small`` > 0) tiles / (waves x units) x ``small`` per halving, best of them (the
    kernel the library picks finishes soonest). A smaller tile can win only where the larger one's
    fill is below ``small``^halvings, so large grids cost one evaluation."""
    best, t, pen = 0.0, tile, 1.0
    for _ in range(3 if small > 0.0 else 1):
        if best >= pen:  # no smaller tile can beat it
            break
        tiles = math.ceil(m / t) * math.ceil(n / t)
        if tiles and units:
            f = pen * tiles / (math.ceil(tiles / units) * units)
            if f > best:
                best = f
        t, pen = max(1, t // 2), pen * small
    return best


def clock_factor(e: GpuEntry, p: Params | None = None) -> float:
    """Sustained over boost clock on long compute-bound work, from the board's power budget.

    The power a chip draws at clock f is modelled as ``cores x k[arch] x f^n`` (dynamic power,
    voltage rising with clock; FP32 cores, not SMs, because SMs differ in width between chips of
    one architecture: GP100/GP102, GA100/GA102): ``k`` per architecture is the lowest power per core
    of its desktop half-rate GeForce cards, which all sustain their boost clock (their measured GEMMs
    reach the spec peak: 3090 Ti, 4090, 2060, 1080 Ti); ``n`` is fitted on DeepBench's T4 against its V100 (fit/kernels.py). A chip with no
    desktop GeForce card (GA100, GH100, CDNA 2/3) takes its SXM/OAM module as the reference, keyed
    by architecture and compute capability. A board whose TDP is below what its SMs need at boost
    (T4, L4, RTX 6000 Ada, A100 PCIe 40GB, H100 PCIe) runs at ``(TDP / need)^(1/n)`` of it."""
    pw = (p or params()).doc.get("power")
    if not pw or not e.shader_cores or not e.tdp_w or not e.boost_clock_mhz:
        return 1.0
    k = pw["w_per_core"].get(chip_key(e)) or pw["w_per_core"].get(f"{e.vendor}/{e.architecture}")
    if not k:
        return 1.0
    n = float(pw["exponent"])
    need = e.shader_cores * k * (e.boost_clock_mhz / 1000.0) ** n
    return float(min(1.0, e.tdp_w / need) ** (1.0 / n))


def gddr_ecc(e: GpuEntry) -> bool:
    """A datacenter board with GDDR memory (T4, A10, A10G, A40, L4, L40S): shipped with ECC on, which
    GDDR carries in band, so it reaches less of its data-sheet bandwidth than a GeForce or
    workstation board of the same chip (HBM carries ECC in its own bits)."""
    return e.family == "datacenter" and "GDDR" in (e.memory_type or "").upper()


def chip_key(e: GpuEntry) -> str:
    """A chip design: architecture and compute capability (GA100 8.0 vs GA102 8.6); AMD parts by
    architecture."""
    return f"{e.vendor}/{e.architecture}" + (f"/{e.compute_capability}" if e.compute_capability else "")


def half_rate_tensor(e: GpuEntry, p: Params | None = None) -> bool:
    """A GeForce card whose tensor cores run FP16 with FP32 accumulate at half rate: its ratio of
    16-bit tensor to FP32 vector FLOPs is below its chip's full one (``gemm.tensor_ratio``, the
    highest in the catalog: RTX A6000 4 against the RTX 3090's 2). The Titan V and Titan RTX
    run at the full rate of the V100 and Quadro RTX 8000, and are power-limited like them."""
    if e.family != "geforce":
        return False
    full = (p or params())["gemm"].get("tensor_ratio", {}).get(chip_key(e))
    if not full or not e.fp16_tflops or not e.fp32_tflops:
        return True
    return e.fp16_tflops / e.fp32_tflops < 0.75 * float(full)


def _k0(d: DeviceModel, g: dict[str, Any]) -> float:
    """A GPU GEMM's per-tile prologue/epilogue in units of the reduction length; CPU GEMMs have
    none worth modelling (their rate is the benchmark's matmul at its size, x the fitted factor)."""
    return 0.0 if d.kind == "cpu" else float(g["k0"])


def _nearest(vendor: str, arch: str, available: dict[str, Any]) -> tuple[str | None, int]:
    """The nearest architecture of the same vendor with data, and how many generations away."""
    order = ARCHITECTURES.get(vendor, ())  # oldest first: "nearest" for borrowing efficiencies
    key = f"{vendor}/{arch}"
    if key in available:
        return key, 0
    if arch not in order:
        cands = [a for a in available if a.startswith(vendor + "/")]
        return (cands[-1], 99) if cands else (None, 99)
    i = order.index(arch)
    for d in range(1, len(order)):
        for j in (i + d, i - d):  # prefer the newer neighbour on ties: its software is what users run
            if 0 <= j < len(order) and f"{vendor}/{order[j]}" in available:
                return f"{vendor}/{order[j]}", d
    return None, 99


def catalog_device(e: GpuEntry, host: dict[str, float] | None = None) -> DeviceModel:
    """A catalog GPU with the fitted efficiencies of its architecture (or the nearest one's).
    ``host``: the host side (``dispatch_s``, ``h2d_gbs``) where a benchmark measured it."""
    p = params()
    notes: list[str] = []
    eff_table: dict[str, dict[str, float]] = p["gemm"]["eff"]
    gemm_eff: dict[str, float] = {}
    for pc in ("fp32", "tf32", "16", "fp8"):
        if pc in TENSOR_CLASSES and half_rate_tensor(e, p) and p["gemm"].get("geforce_tensor_eff"):
            # GeForce tensor paths run at the half-rate FP32-accumulate peak the catalog lists, with
            # power headroom and clocks above spec boost: one efficiency for all (fit/kernels.py).
            gemm_eff[pc] = p["gemm"]["geforce_tensor_eff"]
            continue
        have = {a: v for a, v in eff_table.items() if pc in v}
        key, dist = _nearest(e.vendor, e.architecture, have)
        if key is None:
            gemm_eff[pc] = p["gemm"]["default_eff"][pc] * p["borrow_penalty"]
            notes.append(f"{pc}: no GEMM data for {e.vendor}; default efficiency x{p['borrow_penalty']}")
        elif dist == 0:
            gemm_eff[pc] = have[key][pc]
        else:
            gemm_eff[pc] = have[key][pc] * p["borrow_penalty"]
            notes.append(f"{pc} GEMM efficiency borrowed from {key.split('/', 1)[1]} x{p['borrow_penalty']}")
    if PACKED_FP16_ARCHS.get(e.vendor, frozenset()) & {e.architecture} and "fp32" in gemm_eff:
        # No matrix units: its fp16 runs on the vector units it runs fp32 on, packed two to a lane
        # (the catalog's fp16 figure is that rate), so the vector efficiency holds; a borrowed
        # tensor-core efficiency made fp16 no faster than fp32 there.
        gemm_eff["16"] = gemm_eff["fp32"]
        notes[:] = [n for n in notes if not n.startswith("16 ")]
    mem_table: dict[str, float] = p["memory"]["eff"]
    if gddr_ecc(e) and p["memory"].get("eff_gddr_ecc"):
        mem_table = p["memory"]["eff_gddr_ecc"]  # the medians over boards of its kind (fit/kernels.py)
    mkey, mdist = _nearest(e.vendor, e.architecture, mem_table)
    mem_eff = mem_table[mkey] if mkey is not None else p["memory"]["default_eff"]
    own_mem = p["memory"].get("by_gpu", {}).get(e.id)
    if own_mem:  # this card's own bandwidth-bound kernel (FluidX3D), not its architecture's median
        mem_eff, mdist = own_mem, 0
    if mdist:
        notes.append(f"memory efficiency borrowed from {mkey.split('/', 1)[1] if mkey else 'the default'}")
    clock = clock_factor(e, p)
    if clock < 0.995:
        notes.append(f"power-limited: ~{clock:.0%} of boost clock on compute-bound work ({e.tdp_w:.0f} W)")
    peaks = {"fp32": e.fp32_tflops * clock}
    if e.architecture in FP32_MATRIX_ARCHS and e.tf32_tflops:
        peaks["fp32"] = e.tf32_tflops * clock
    for prec in ("tf32", "fp16", "bf16", "fp8"):
        v = e.tflops(prec)
        if v and supports(e, prec):
            peaks[prec] = v * clock
    if "bf16" in peaks:
        peaks["bf16-true"] = peaks["bf16"]
    units = e.sm_count or max(1, e.shader_cores // (64 if e.vendor == "AMD" else 128))
    host = host or {}
    gen = e.pcie_gen or 3
    pcie = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}.get(gen, 16.0)
    h2d = host.get("h2d_gbs") or pcie * p["host"]["h2d_fraction_of_pcie"]
    host_factor = p.doc.get("step", {}).get("dispatch_factor", 1.0)  # a rig's host against our H100 machine's
    return DeviceModel(
        name=e.name,
        kind="gpu",
        vendor=e.vendor,
        arch=e.architecture,
        peak_tflops=peaks,
        vector_tflops=e.fp32_tflops * clock,
        bandwidth_gbs=e.memory_bandwidth_gbs,
        units=units,
        gemm_eff=gemm_eff,
        mem_eff=mem_eff,
        kernel_floor_s=p["device"]["kernel_floor_us"] * 1e-6,
        # A catalog row's host: the H100 machine's per-op and per-step costs x the factor fitted on the throughput
        # tables' benchmark rigs (step.dispatch_factor); a benchmarked machine uses its own.
        dispatch_s=host.get("dispatch_s") or p["host"]["dispatch_us"] * 1e-6 * host_factor,
        step_fixed_s=0.0 if host.get("dispatch_s") else p["host"]["step_fixed_us"] * 1e-6 * host_factor,
        h2d_gbs=h2d,
        h2d_latency_s=p["host"]["h2d_latency_us"] * 1e-6,
        notes=tuple(notes),
    )


def _conv_factor(d: DeviceModel, pc: str = "fp32") -> float:
    """Convolutions' rate against the GEMM model of their implicit-GEMM shape. On a GPU it depends
    on the path: FP32 on the vector units may run 3x3 filters as Winograd/FFT (fewer FLOPs than the
    direct convolution counts: above 1 on Volta/Turing), fitted per architecture on DeepBench's
    FP32 conv rows (``fit/kernels.py``); tensor-core paths keep the factor over all rows."""
    if d.conv_factor is not None:
        return d.conv_factor
    p = params()
    if d.kind == "cpu":
        return float(p["cpu"]["conv_factor"])
    if pc != "fp32":
        # Tensor-core convolutions keep the all-rows factor: DeepBench's fp16 rows (0.65 of the
        # GEMM model on Volta/Turing) ran NCHW, which cuDNN transposes for its tensor cores, while
        # mixed-precision training runs channels-last (DLE's ResNet-50 AMP: NHWC).
        return float(p["conv"]["factor"])
    by: dict[str, float] = p["conv"].get("by_class", {})
    # FP32 convolutions: the architecture's own, else the nearest measured one's (Winograd on the
    # vector units is in every cuDNN since Maxwell; DeepBench: Volta/Turing 1.43, Pascal 0.93).
    archs = {k.split("|")[0]: v for k, v in by.items() if k.endswith("|fp32")}
    key, _dist = _nearest(d.vendor, d.arch, archs)
    return float(archs[key]) if key is not None else float(by.get("fp32", p["conv"]["factor"]))


def _conv_scale(d: DeviceModel, precision: str, peak: float) -> float:
    """Convolutions' rate against the GEMM model at ``precision`` (``peak``: the GEMM peak used,
    FLOP/s). Under TF32 the framework's algorithm search (cudnn.benchmark) may also pick FP32
    kernels on the vector units, Winograd included: where those are faster (GeForce Ampere/Ada,
    whose TF32 tensor rate equals their FP32 rate) the convolution runs at their rate."""
    pc = precision_class(precision)
    conv = _conv_factor(d, pc)
    if precision != "tf32" or d.kind == "cpu" or d.conv_factor is not None:
        return conv
    e_pc = d.gemm_eff.get(pc, d.gemm_eff.get("fp32", 0.5))
    vector = d.peak_tflops["fp32"] * 1e12 * d.gemm_eff.get("fp32", e_pc) * _conv_factor(d, "fp32")
    return max(conv, vector / (peak * e_pc))


def conv_precision(d: DeviceModel, precision: str) -> str:
    """The precision a convolution runs in. PyTorch's default fp32 training lets cuDNN run
    convolutions in TF32 (``torch.backends.cudnn.allow_tf32`` is True by default; only matmuls
    default to full FP32), so on a GPU with TF32 tensor cores an fp32 convolution takes the TF32
    path (itself the faster of the tensor and the FP32 path, ``_conv_scale``)."""
    if precision == "fp32" and d.kind != "cpu" and d.vendor == "NVIDIA" and d.peak_tflops.get("tf32"):
        return "tf32"
    return precision


def step_factors(d: DeviceModel) -> dict[str, float]:
    """The step factors that apply to ``d``: a CPU's GEMM factor from its own section; a GPU's
    from ``step``, with ``gemm_factor_multi`` as its GEMM factor when it is one of several."""
    p = params()
    if d.kind == "cpu":
        return {"gemm_factor": p.doc.get("cpu", {}).get("gemm_factor", 1.0)}
    step: dict[str, float] = dict(p.doc.get("step", {}))
    if d.multi_gpu:
        step["gemm_factor"] = step.get("gemm_factor_multi", step.get("gemm_factor", 1.0))
    return step


def attention_factor(d: DeviceModel) -> float:
    """Fused attention's efficiency relative to the device's 16-bit GEMM efficiency."""
    if d.attention_factor is not None:
        return d.attention_factor
    att = params()["attention"]
    return float(att.get("factor_by_arch", {}).get(f"{d.vendor}/{d.arch}", att["factor"]))


def multi_gpu_device(d: DeviceModel) -> DeviceModel:
    """``d`` as one GPU of several."""
    return d if d.kind == "cpu" or d.multi_gpu else device_variant(d, multi_gpu=True)


def device_variant(d: DeviceModel, **changes: Any) -> DeviceModel:
    """``d`` with ``changes``, cached per device and changes, so the compiled-op cache (keyed on the
    device object) keeps hitting."""
    key = (id(d), tuple(sorted(changes.items())))
    hit = _VARIANTS.get(key)
    if hit is None or hit[0] is not d:
        if len(_VARIANTS) > 4096:
            _VARIANTS.clear()
        hit = _VARIANTS[key] = (d, replace(d, **changes))
    return hit[1]


_VARIANTS: dict[tuple[int, tuple[tuple[str, Any], ...]], tuple[DeviceModel, DeviceModel]] = {}


def op_time(d: DeviceModel, op: Op, batch: int, precision: str) -> tuple[float, float, float]:
    """(seconds for all ``op.count`` instances at this batch, compute part, memory part)."""
    p = params()
    step = step_factors(d)
    elem = 4.0 if op.fp32_only else element_bytes(precision)
    casts = fp8_cast_kernels(op, precision)
    if precision == "fp8" and op.kind is OpKind.GEMM and not fp8_gemm(op):
        precision = "bf16"  # the output layer and LoRA adapters stay 16-bit in fp8 training
    if op.kind is OpKind.DEQUANT:
        nbytes = (op.elems_fixed + op.elems_per_sample * batch) * dequant_bytes(p)  # effective, fitted
    else:
        nbytes = (op.elems_per_sample * batch + op.elems_fixed) * elem
    flops = op.flops_per_sample * batch
    if op.kind is OpKind.CONV:
        precision = conv_precision(d, precision)  # storage stays 4-byte: ``elem`` above
    if op.kind in (OpKind.GEMM, OpKind.CONV, OpKind.ATTENTION) and not op.fp32_only:
        pc = precision_class(precision)
        peak = (
            d.peak_tflops.get(precision, d.peak_tflops["fp32"])
            * 1e12
            * (step.get("gemm_factor", 1.0) if pc != "fp32" or d.kind == "cpu" else 1.0)
        )
        m = op.m_per_sample * batch
        if op.kind is OpKind.ATTENTION and d.kind != "cpu":
            att = p["attention"]
            if precision == "fp8":  # fp8 training quantises the linear layers; attention stays bf16
                pc = "16"
                peak = d.peak_tflops.get("bf16", d.peak_tflops["fp32"]) * 1e12 * step.get("gemm_factor", 1.0)
            e = d.gemm_eff.get(pc, d.gemm_eff["fp32"]) * attention_factor(d)
            e *= attention_shape_factor(att, op)
            e *= min(1.0, m / (d.units * p["attention"]["rows_per_unit"]))
        else:
            e = d.gemm_efficiency(pc, m, op.n, op.k)
            if op.kind is OpKind.CONV:
                e *= _conv_scale(d, precision, peak)
        t_c = flops / (peak * e) if flops else 0.0
    else:
        t_c = flops / (d.vector_tflops * 1e12 * p["device"]["vector_eff"]) if flops else 0.0
    stream = op.kind in (OpKind.DEQUANT, OpKind.GEMM, OpKind.CONV, OpKind.ATTENTION)
    t_m = (
        nbytes / (d.bandwidth_gbs * 1e9 * d.mem_eff * (1.0 if stream else step.get("mem_factor", 1.0)))
        if nbytes
        else 0.0
    )
    one = max(t_c, t_m, d.kernel_floor_s)
    for ps, fix in casts:  # the operands' amax and cast kernels before the GEMM: additive
        one += max((ps * batch + fix) / (d.bandwidth_gbs * 1e9 * d.mem_eff), d.kernel_floor_s)
    return one * op.count, t_c * op.count, t_m * op.count


#: fp8 training with tensorwise dynamic ("current") scaling, Transformer Engine / torchao style:
#: each operand an fp8 GEMM quantises costs an amax reduction (reads its 2-byte elements) and then a
#: cast(+transpose) kernel (reads them again, writes the 1-byte fp8 copy and the 1-byte transposed
#: copy the other GEMM of the pair needs): two kernels, 2 + 4 bytes per element.
FP8_AMAX_BYTES_PER_ELEM = 2.0
FP8_CAST_ONLY_BYTES_PER_ELEM = 4.0
FP8_CAST_BYTES_PER_ELEM = FP8_AMAX_BYTES_PER_ELEM + FP8_CAST_ONLY_BYTES_PER_ELEM
#: GEMMs fp8 recipes leave in 16 bits: the output layer (its logits feed the loss: Transformer
#: Engine and torchao users keep it bf16), LoRA adapters, and attention's own matmuls (the fused
#: kernel, or the eager score/context GEMMs).
FP8_EXCLUDED = ("lm_head", "head", "task_head", "layers.attn.scores", "layers.attn.context")


def fp8_gemm(op: Op) -> bool:
    """Whether fp8 training runs this GEMM in fp8 (the transformer's linear layers)."""
    return (
        op.kind is OpKind.GEMM
        and not op.fp32_only
        and ".lora_" not in op.name
        and not any(op.name == x or op.name.startswith(x + ".") for x in FP8_EXCLUDED)
    )


def fp8_operands(op: Op, precision: str) -> tuple[tuple[float, float], ...]:
    """(elements per sample, elements per step) of each operand quantised before this GEMM under
    fp8 training. The forward (and its recompute) quantises its input (m x k) and the weight
    (n x k: once per use, so again after each FSDP gather and in the recompute); the input-gradient
    GEMM only the output gradient (m x k): the weight's transposed fp8 copy came from the forward's
    cast; the weight-gradient GEMM nothing (it reuses the transposed copies of input and gradient)."""
    if precision != "fp8" or not fp8_gemm(op) or op.k <= 0 or op.name.endswith(".dW"):
        return ()
    if op.phase.value == "backward":
        return ((op.m_per_sample * op.k, 0.0),)
    return ((op.m_per_sample * op.k, 0.0), (0.0, float(op.n) * op.k))


def fp8_cast_kernels(op: Op, precision: str) -> tuple[tuple[float, float], ...]:
    """(bytes per sample, bytes per step) of each amax and cast kernel this GEMM adds under fp8."""
    out: list[tuple[float, float]] = []
    for ps, fix in fp8_operands(op, precision):
        out.append((FP8_AMAX_BYTES_PER_ELEM * ps, FP8_AMAX_BYTES_PER_ELEM * fix))
        out.append((FP8_CAST_ONLY_BYTES_PER_ELEM * ps, FP8_CAST_ONLY_BYTES_PER_ELEM * fix))
    return tuple(out)


def fp8_cast_seconds(d: DeviceModel, op: Op, batch: int, precision: str) -> float:
    """Seconds of this GEMM's fp8 amax and cast kernels (all ``op.count`` instances)."""
    bw = d.bandwidth_gbs * 1e9 * d.mem_eff
    return op.count * sum(max((ps * batch + fix) / bw, d.kernel_floor_s) for ps, fix in fp8_cast_kernels(op, precision))


def attention_shape_factor(att: dict[str, Any], op: Op) -> float:
    """How a fused attention kernel's rate depends on its shape (fitted on the FlashAttention-2
    charts, ``fit/kernels.py``): short sequences do not fill it (``s / (s + s0)``); the softmax's
    exponentials and the rescaling are per score element, the tile's MACs per head-dimension
    element, so a small head dimension runs slower (``d / (d + d0)``); a causal mask counts the lower
    triangle's FLOPs while the kernel computes the diagonal blocks in full and its rows carry
    unequal work (``s / (s + s_causal)``). Parameters a fit did not write leave their term at 1."""
    s = float(op.n)
    f = s / (s + float(att["s0"]))
    d0 = float(att.get("d0", 0.0))
    if d0 and op.k > 0:
        f *= op.k / (op.k + d0)
    sc = float(att.get("s_causal", 0.0))
    if op.causal and sc:
        f *= s / (s + sc)
    return f


def fp8_cast_bytes(op: Op, batch: float, precision: str) -> float:
    """Bytes the fp8 quantisation of this GEMM's operands moves (0 unless an fp8 GEMM, see
    ``fp8_operands``)."""
    return FP8_CAST_BYTES_PER_ELEM * sum(ps * batch + fix for ps, fix in fp8_operands(op, precision))


# Compiled form of op_time for the estimate loop (134 GPUs x several counts x ~100 ops must take
# milliseconds): per (trace, precision) the constants of every op (the merged template), per
# device its rates and bandwidths, so that each batch size costs only arithmetic. Same formulas
# as op_time (tests check they agree).
class Compiled(NamedTuple):
    """One trace at one precision on one device: the merged template (shared by every device)
    and the device's rates per template class, its bandwidths and attention's saturation rows."""

    template: list[tuple[Any, ...]]
    rates: tuple[float, float, float, float, float]
    bw_stream: float  # GEMM/conv/attention/dequant operands, and fp32-only GEMMs
    bw_elem: float  # eager elementwise/norm/embedding kernels
    aux_att: float


_COMPILED: dict[tuple[int, int, int, str], tuple[object, object, object, Compiled]] = {}


_TEMPLATES: dict[tuple[int, int, str, bool], tuple[object, object, list[tuple[Any, ...]]]] = {}


def _template(ops: tuple[Op, ...], precision: str, cpu: bool) -> list[tuple[Any, ...]]:
    """The device-independent part of ``compile_ops`` per (trace, precision, CPU or GPU), built
    once: per op (class 0 memory-bound / 1 GEMM / 2 attention / 3 convolution, count, FLOPs and
    bytes per sample, bytes per step, rows per sample, output columns n, the shape's share of
    the class's rate, backward?, streaming?)."""
    p = params()
    key = (id(ops), id(p), precision, cpu)
    hit = _TEMPLATES.get(key)
    if hit is not None and hit[0] is ops and hit[1] is p:
        return hit[2]
    pc = precision_class(precision)
    g = p["gemm"]
    k0 = 0.0 if cpu else float(g["k0"])
    att = p["attention"]
    elem16 = element_bytes(precision)
    out: list[tuple[Any, ...]] = []
    deq = dequant_bytes(p)
    for op in ops:
        elem = 4.0 if op.fp32_only else elem16
        if op.kind is OpKind.DEQUANT:
            b_ps, b_fix = op.elems_per_sample * deq, op.elems_fixed * deq
        else:
            b_ps, b_fix = op.elems_per_sample * elem, op.elems_fixed * elem
        backward = 1.0 if op.phase.value == "backward" else 0.0
        if op.kind in (OpKind.GEMM, OpKind.CONV, OpKind.ATTENTION) and not op.fp32_only:
            # A CPU runs attention as batched GEMMs (SDPA's math path): the GEMM model below; the
            # GPU's fused-kernel saturation (fitted on FlashAttention) does not apply.
            if op.kind is OpKind.ATTENTION and not cpu:
                out.append(
                    (
                        2,
                        op.count,
                        op.flops_per_sample,
                        b_ps,
                        b_fix,
                        op.m_per_sample,
                        0.0,
                        attention_shape_factor(att, op),
                        backward,
                        True,
                    )
                )
                continue
            e = op.k / (op.k + k0) if op.k > 0 else 1.0
            if pc != "fp32" and (op.k % 64 or op.n % 8):
                e *= g["align_penalty"]
            ntiles = float(op.n) if op.n > 0 else 0.0  # output columns: device_time tiles them
            cls = 3 if op.kind is OpKind.CONV else 1
            if precision == "fp8" and op.kind is OpKind.GEMM and not fp8_gemm(op):
                cls = 4  # a 16-bit GEMM inside an fp8 step (output layer, adapters)
            for cast_ps, cast_fix in fp8_cast_kernels(op, precision):  # amax, cast: memory-bound kernels first
                out.append((0, op.count, 0.0, cast_ps, cast_fix, 0.0, 0.0, 1.0, backward, True))
            out.append((cls, op.count, op.flops_per_sample, b_ps, b_fix, op.m_per_sample, ntiles, e, backward, True))
        else:
            # fp32-only GEMMs stay streaming
            stream = op.kind in (OpKind.DEQUANT, OpKind.GEMM, OpKind.CONV, OpKind.ATTENTION)
            out.append((0, op.count, op.flops_per_sample, b_ps, b_fix, 0.0, 0.0, 1.0, backward, stream))
    if len(_TEMPLATES) > 1024:
        _TEMPLATES.clear()
    _TEMPLATES[key] = (ops, p, out)
    return out


_MERGED: dict[tuple[int, int, str, str, bool], tuple[object, object, list[tuple[Any, ...]]]] = {}


def _merged_template(ops: tuple[Op, ...], precision: str, cprec: str, cpu: bool) -> list[tuple[Any, ...]]:
    """``_template`` with the convolutions at their own precision ``cprec`` and identical entries
    merged into one with the summed count: a trace repeats the same op per layer (ResNet-50's
    245 ops are 112 distinct ones, Llama QLoRA's 163 are 71), and ``compile_ops`` and
    ``device_time`` run per entry for every GPU on a first call. Each entry's time is count x
    its one instance's, so the merge changes no figure beyond float rounding."""
    p = params()
    key = (id(ops), id(p), precision, cprec, cpu)
    hit = _MERGED.get(key)
    if hit is not None and hit[0] is ops and hit[1] is p:
        return hit[2]
    tmpl = _template(ops, precision, cpu)
    if cprec != precision:  # the convolutions' shape shares (alignment penalty) at their own precision
        conv_t = _template(ops, cprec, cpu)
        tmpl = [c if c[0] == 3 else t for t, c in zip(tmpl, conv_t, strict=True)]
    merged: dict[tuple[Any, ...], float] = {}
    for t in tmpl:
        rest = (t[0], *t[2:])
        merged[rest] = merged.get(rest, 0.0) + t[1]
    out = [(rest[0], count, *rest[1:]) for rest, count in merged.items()]
    if len(_MERGED) > 1024:
        _MERGED.clear()
    _MERGED[key] = (ops, p, out)
    return out


def compile_ops(d: DeviceModel, ops: tuple[Op, ...], precision: str) -> Compiled:
    p = params()
    key = (id(ops), id(d), id(p), precision)
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is ops and hit[1] is d and hit[2] is p:  # ids of dead objects can be reused
        return hit[3]
    pc = precision_class(precision)
    # In a training step kernels reach less than in isolation (sustained clocks, caches shared
    # with the step's other kernels): the step factors, fitted on measured training throughput.
    step = step_factors(d)
    bw_stream = d.bandwidth_gbs * 1e9 * d.mem_eff  # GEMM/conv/attention/dequant operands: streaming kernels
    bw = bw_stream * step.get("mem_factor", 1.0)  # eager elementwise/norm/embedding kernels reach less
    vec = d.vector_tflops * 1e12 * p["device"]["vector_eff"]
    e_pc = d.gemm_eff.get(pc, d.gemm_eff.get("fp32", 0.5))
    # Tensor-core GEMMs run at the power limit in a long step (clocks drop); vector FP32 does not.
    peak = (
        d.peak_tflops.get(precision, d.peak_tflops["fp32"])
        * 1e12
        * (step.get("gemm_factor", 1.0) if pc != "fp32" or d.kind == "cpu" else 1.0)
    )
    conv = _conv_scale(d, precision, peak)
    att = p["attention"]
    att_f = attention_factor(d)
    rate = peak * e_pc
    conv_rate = rate * conv
    cprec = conv_precision(d, precision)
    if cprec != precision:  # fp32 training: convolutions in TF32 (PyTorch's default)
        cpeak = d.peak_tflops[cprec] * 1e12 * step.get("gemm_factor", 1.0)
        conv_rate = cpeak * d.gemm_eff.get(precision_class(cprec), e_pc) * _conv_scale(d, cprec, cpeak)
    att_rate = rate * att_f
    if precision == "fp8":  # fp8 training quantises the linear layers only: attention runs its bf16 kernel
        att_rate = (
            d.peak_tflops.get("bf16", d.peak_tflops["fp32"])
            * 1e12
            * step.get("gemm_factor", 1.0)
            * d.gemm_eff.get("16", e_pc)
            * att_f
        )
    rate16 = rate
    if precision == "fp8":  # GEMMs fp8 recipes keep in bf16 (output layer, adapters)
        rate16 = (
            d.peak_tflops.get("bf16", d.peak_tflops["fp32"])
            * 1e12
            * step.get("gemm_factor", 1.0)
            * d.gemm_eff.get("16", e_pc)
        )
    # per template class: vector FP32 (memory-bound kernels), GEMM, attention, conv, 16-bit GEMM
    rates = (vec, rate, att_rate, conv_rate, rate16)
    tmpl = _merged_template(ops, precision, cprec, d.kind == "cpu")
    # The merged template is shared by every GPU; per GPU only these constants differ, so a first
    # call over the catalog builds no per-op list per GPU (and a checkpointed trace, whose ops are
    # the same shapes with other counts, costs no more to compile than its plain one).
    out = Compiled(tmpl, rates, bw_stream, bw, float(d.units * att["rows_per_unit"]))
    if len(_COMPILED) > 4096:
        _COMPILED.clear()
    _COMPILED[key] = (ops, d, p, out)
    return out


def device_time(d: DeviceModel, compiled: Compiled, batch: int) -> tuple[float, float, float, float, float]:
    """(total, compute-bound, memory-bound, floor-bound, backward) seconds of the compiled ops at ``batch``."""
    floor = d.kernel_floor_s
    units = d.units
    g = params()["gemm"]
    tile = g["tile_cpu" if d.kind == "cpu" else "tile"]
    small = 0.0 if d.kind == "cpu" else float(g.get("small_tile_eff", 0.0))
    tile2, tile4, small2 = max(1, tile // 2), max(1, tile // 4), small * small
    rates, bw_stream, bw_elem, aux_att = compiled.rates, compiled.bw_stream, compiled.bw_elem, compiled.aux_att
    tot = comp = mem = flo = bwd = 0.0
    ceil = math.ceil  # local names and plain comparisons: this loop runs ops x GPUs on a first call
    for cls, count, f_ps, b_ps, b_fix, m_ps, ntiles, g_op, backward, stream in compiled.template:
        flops = f_ps * batch
        if not flops:
            t_c = 0.0
        elif cls == 0:
            t_c = flops / rates[0]
        elif cls == 2:  # attention: m saturates at units x rows_per_unit
            sat = m_ps * batch / aux_att
            t_c = flops / (rates[2] * g_op * (sat if sat < 1.0 else 1.0))
        elif ntiles > 0 and m_ps > 0:
            # wave_fill inlined (ntiles: the output columns n)
            m = m_ps * batch
            tiles = ceil(m / tile) * ceil(ntiles / tile)
            fill = tiles / (ceil(tiles / units) * units)
            if fill < small:  # a 64 tile may finish sooner
                tiles = ceil(m / tile2) * ceil(ntiles / tile2)
                f = small * tiles / (ceil(tiles / units) * units)
                if f > fill:
                    fill = f
                if fill < small2:
                    tiles = ceil(m / tile4) * ceil(ntiles / tile4)
                    f = small2 * tiles / (ceil(tiles / units) * units)
                    if f > fill:
                        fill = f
            t_c = flops / (rates[cls] * g_op * (fill if fill > 1e-4 else 1e-4))
        else:
            t_c = flops / (rates[cls] * g_op)
        nbytes = b_ps * batch + b_fix
        t_m = nbytes / (bw_elem if cls == 0 and not stream else bw_stream) if nbytes else 0.0
        if t_c >= t_m:
            if t_c >= floor:
                one = t_c * count
                comp += one
            else:
                one = floor * count
                flo += one
        elif t_m >= floor:
            one = t_m * count
            mem += one
        else:
            one = floor * count
            flo += one
        tot += one
        if backward:
            bwd += one
    return tot, comp, mem, flo, bwd
