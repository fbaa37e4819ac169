"""Fit the per-kernel parameters of ``roofline.py`` on ../shared/data/kernels (scripts only).

- GEMM: ``E[arch, precision class]``, ``k0``, the misalignment penalty and the per-kernel floor,
  on gemm.csv (MAMF, DeepBench, mli, single points): least median absolute log error of the
  predicted kernel time over a small grid of (k0, align, floor); E per architecture is the
  median of observed/shape-predicted efficiency for that grid point.
- Memory efficiency per architecture: the median of FluidX3D's stated share of the data-sheet
  bandwidth (a bandwidth-bound kernel on ~190 GPUs).
- Convolution: the median ratio of achieved conv efficiency to the GEMM model's on the same GPU
  and precision (DeepBench conv rows, forward and both backward passes).
- Fused attention: factor, sequence-length saturation s0, head-dimension term d0 and causal-block
  term s_causal on the FlashAttention-2 fwd+bwd rows (A100, H100), relative to E for 16-bit.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuselect.catalog import Catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.estimate.fit import shared_data

KERNELS = shared_data() / "kernels"

#: kernels/ labels -> catalog ids where the catalog's matcher needs help (DeepBench's V100 ran in
#: a DGX-1: SXM2 16 GB; "A100 SXM" in MAMF is the 80 GB part; GH200/B200/B300 by their ids).
NAME_MAP = {
    "NVIDIA Tesla V100 (Volta)": "nvidia-v100-sxm2-16gb",
    "NVIDIA T4 (Turing)": "nvidia-t4",
    "NVIDIA Tesla P100 (Pascal)": "nvidia-p100-sxm2",
    "NVIDIA A100 SXM": "nvidia-a100-sxm4-80gb",
    "NVIDIA A100 PCIe": "nvidia-a100-pcie-80gb",
    "NVIDIA H100 SXM": "nvidia-h100-sxm5-80gb",
    "NVIDIA H100 (variant not stated)": "nvidia-h100-sxm5-80gb",
    "NVIDIA GH200 SXM": "nvidia-gh200-96gb",
    "NVIDIA B200 SXM": "nvidia-b200",
    "NVIDIA B300 SXM": "nvidia-b300",
    "NVIDIA H200 SXM": "nvidia-h200-sxm-141gb",
    "NVIDIA A100 (80GB per README spec row)": "nvidia-a100-sxm4-80gb",
    "NVIDIA V100 (32GB per README spec row)": "nvidia-v100-sxm2-32gb",
    "NVIDIA Tesla P100 16GB": "nvidia-p100-pcie-16gb",
    "NVIDIA H100 80GB SXM5": "nvidia-h100-sxm5-80gb",
    "NVIDIA A100 80GB SXM4": "nvidia-a100-sxm4-80gb",
    "AMD MI250X": "amd-mi250x",
}


#: Cards whose kernel rows the fit must not see (``held_out``): the ratio script's leave-one-GPU-out
#: and leave-one-architecture-out views refit without them. Empty for the shipped fit.
EXCLUDED: set[str] = set()


def lookup(catalog: Catalog, label: str) -> GpuEntry | None:
    if label in NAME_MAP:
        e = catalog.get(NAME_MAP[label])
    else:
        m = catalog.match(label) or catalog.match(re.sub(r"\s*\(.*?\)", "", label))
        e = None if m is None else m.entry
    return None if e is None or e.id in EXCLUDED else e


def gemm_precision(label: str, e: GpuEntry) -> str | None:
    """The training precision a gemm.csv row ran at (None: not one we model)."""
    s = label.lower()
    if "pseudo" in s:
        return None
    if "fp8" in s:
        return "fp8"
    if s.startswith("bf16"):
        return "bf16"
    if "fp16" in s:
        return "fp16"
    if "tf32" in s and e.architecture in ("Ampere", "Ada Lovelace", "Hopper", "Blackwell"):
        return "tf32"  # mli's "fp32 torch default": TF32 was on (A100 116 > 19.5)
    if "sgemm" in s or s.startswith("fp32"):
        return "fp32"
    return None


@dataclass
class GemmObs:
    arch: str  # "vendor/arch"
    pc: str
    peak: float  # TFLOPS
    m: int
    n: int
    k: int
    tflops: float
    units: int
    gpu: str
    geforce: bool = False  # a half-rate GeForce card (tensor FP32 accumulate at half rate, clocks above spec boost)


def pclass(p: str) -> str:
    return {"fp16": "16", "bf16": "16"}.get(p, p)


def _down(k: float) -> float:
    """Rounded down to 7 digits: the reference board itself must not come out a hair below boost."""
    return math.floor(k * 1e7) / 1e7


def power_reference(catalog: Catalog, n: float) -> dict[str, float]:
    """k[arch] of ``roofline.clock_factor``: the lowest over the architecture's desktop half-rate
    GeForce cards of TDP / (FP32 cores x boost GHz^n). Every such card sustains its boost clock
    (their measured GEMMs reach the spec peak: 3090 Ti, 4090), so the chip needs at most the
    leanest card's power per core; a median would put half of them below boost (the RTX 4090 at
    0.90). Full-rate Titans (Titan V, Titan RTX) are left out: their tensor cores draw more."""
    by: dict[str, list[float]] = defaultdict(list)
    modules: dict[str, list[float]] = defaultdict(list)
    geforce_chips: set[str] = set()
    for e in catalog.entries:
        if not (e.shader_cores and e.tdp_w and e.boost_clock_mhz):
            continue
        k = e.tdp_w / (e.shader_cores * (e.boost_clock_mhz / 1000.0) ** n)
        if e.family == "geforce" and e.form_factor == "desktop" and _half_rate(catalog, e):
            by[f"{e.vendor}/{e.architecture}"].append(k)
            geforce_chips.add(chip_key(e))
        elif e.form_factor in ("sxm", "oam"):
            modules[chip_key(e)].append(k)
    out = {a: _down(min(v)) for a, v in sorted(by.items())}
    # A chip sold on no desktop GeForce card (GA100, GH100, GB100, GP100, CDNA): the SXM/OAM module,
    # built to feed it, as the board that sustains its boost clock; its lowest power per core
    # (GH200's 1000 W feeds a CPU too). PCIe boards of the chip (H100 PCIe 350 W, A100 PCIe
    # 250-300 W) then run below it.
    out.update({c: _down(min(v)) for c, v in sorted(modules.items()) if c not in geforce_chips and c not in out})
    return out


def chip_key(e: GpuEntry) -> str:
    from gpuselect.estimate.roofline import chip_key as ck

    return ck(e)


def tensor_ratio(catalog: Catalog) -> dict[str, float]:
    """Per chip the highest ratio of 16-bit tensor (FP32 accumulate) to FP32 vector FLOPs in the
    catalog: the full-rate tensor path (``roofline.half_rate_tensor``). Data-sheet figures."""
    out: dict[str, float] = {}
    for e in catalog.entries:
        if e.fp16_tflops and e.fp32_tflops:
            k = chip_key(e)
            out[k] = max(out.get(k, 0.0), round(e.fp16_tflops / e.fp32_tflops, 2))
    return dict(sorted(out.items()))


_RATIOS: dict[int, tuple[Catalog, dict[str, float]]] = {}


def _half_rate(catalog: Catalog, e: GpuEntry) -> bool:
    from gpuselect.estimate.roofline import Params, half_rate_tensor

    hit = _RATIOS.get(id(catalog))
    if hit is None or hit[0] is not catalog:
        hit = _RATIOS[id(catalog)] = (catalog, tensor_ratio(catalog))
    return half_rate_tensor(e, Params({"gemm": {"tensor_ratio": hit[1]}}))


def _clock(e: GpuEntry, power: dict[str, Any] | None) -> float:
    from gpuselect.estimate.roofline import Params, clock_factor

    return clock_factor(e, Params({"power": power})) if power else 1.0


#: Same generation, same harness (DeepBench's 2019 re-run, CUDA 10.1, cuDNN 7.6): the T4 (70 W)
#: against the V100 (300 W) pins down how a power-starved board's clock falls.
POWER_PAIR = ("NVIDIA T4 (Turing)", "NVIDIA Tesla V100 (Volta)")


def fit_power(catalog: Catalog, k0: float = 96.0) -> tuple[dict[str, Any], str]:
    """The exponent n of ``clock_factor`` such that the T4's clock factor equals its DeepBench
    GEMM efficiency relative to the V100's (geometric mean over fp32 and tensor fp16 of the ratio
    of median shape-corrected efficiencies, as ``fit_gemm`` measures them), and the
    per-architecture references for that n."""
    obs, _skipped = read_gemm(catalog, None)
    eff: dict[tuple[str, str], list[float]] = defaultdict(list)
    ids = {lookup(catalog, g).id: g for g in POWER_PAIR if lookup(catalog, g) is not None}  # type: ignore[union-attr]
    align = align_penalty()
    for o in obs:
        if o.gpu not in ids or not (o.m and o.n and o.k):
            continue
        if 2.0 * o.m * o.n * o.k / (o.tflops * 1e12) < 15e-6:
            continue  # floor-dominated, as in fit_gemm
        eff[(ids[o.gpu], o.pc)].append(o.tflops / o.peak / shape_factor(o, k0, align))
    ratios = [
        statistics.median(eff[(POWER_PAIR[0], pc)]) / statistics.median(eff[(POWER_PAIR[1], pc)])
        for pc in ("fp32", "16")
        if eff[(POWER_PAIR[0], pc)] and eff[(POWER_PAIR[1], pc)]
    ]
    target = math.exp(statistics.fmean(math.log(x) for x in ratios))
    t4 = lookup(catalog, POWER_PAIR[0])
    v100 = lookup(catalog, POWER_PAIR[1])
    if t4 is None or v100 is None:
        raise RuntimeError("internal error: T4/V100 not in the catalog")
    best: tuple[float, float, dict[str, float]] | None = None
    for n in [1.0 + 0.1 * i for i in range(31)]:
        ref = power_reference(catalog, n)
        pw = {"exponent": round(n, 2), "w_per_core": ref}
        err = abs(math.log(_clock(t4, pw) / _clock(v100, pw) / target))
        if best is None or err < best[0]:
            best = (err, round(n, 2), ref)
    if best is None:
        raise RuntimeError("internal error: best is unset")
    refs: dict[str, float] = dict(best[2])
    pw = {"exponent": best[1], "w_per_core": refs}
    line = (
        f"power: T4/V100 DeepBench GEMM efficiency ratio {target:.3f} (fp32, tensor fp16: "
        f"{', '.join(f'{x:.3f}' for x in ratios)}) -> exponent n = {best[1]} (T4 clock factor "
        f"{_clock(t4, pw):.3f}, V100 {_clock(v100, pw):.3f})"
    )
    pairs = chip_pairs(catalog, obs, best[1], k0, align)
    for chip, (k, low, top, r) in pairs.items():
        refs[chip] = k
        line += (
            f"\n  {chip}: {low} reaches {r:.3f} of {top}'s GEMM efficiency -> k = {k} "
            f"({low} {_clock(lookup(catalog, low.split('/')[0]) or t4, pw):.3f} of boost, {top} "
            f"{_clock(lookup(catalog, top) or t4, pw):.3f})"
        )
    return pw, line


def chip_pairs(
    catalog: Catalog, obs: list[GemmObs], n: float, k0: float, align: float
) -> dict[str, tuple[float, str, str, float]]:
    """Chips whose reference is their SXM/OAM module (``power_reference``) and whose GEMMs were
    measured on two boards of different power per core (MAMF: A100 PCIe 80GB at 300 W against the
    SXM at 400 W): the measured efficiency ratio pins the power the chip needs at boost, so
    k = TDP / (cores x GHz^n x ratio^n) of the lower-powered board (its clock factor = the ratio)
    instead of assuming the module is exactly at its limit. {chip: (k, low board, top board, ratio)}."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for o in obs:
        if o.m and o.n and o.k and 2.0 * o.m * o.n * o.k / (o.tflops * 1e12) >= 15e-6:
            by[(o.gpu, o.pc)].append(o.tflops / o.peak / shape_factor(o, k0, align))
    ref = power_reference(catalog, n)
    boards: dict[str, list[GpuEntry]] = defaultdict(list)
    for g in {gpu for gpu, _pc in by}:
        e = catalog.get(g)
        if e is not None and e.shader_cores and e.tdp_w and e.boost_clock_mhz and chip_key(e) in ref:
            boards[chip_key(e)].append(e)
    out: dict[str, tuple[float, str, str, float]] = {}
    for chip, es in sorted(boards.items()):
        if len(es) < 2:
            continue

        def per_core(e: GpuEntry) -> float:
            return float(e.tdp_w) / float(e.shader_cores * (e.boost_clock_mhz / 1000.0) ** n)

        es = sorted(es, key=lambda e: (per_core(e), e.id))
        top, low = es[-1], es[0]
        # Boards at the same power per core (H100 SXM and H200 SXM, both 700 W) count together.
        lows = [e for e in es if per_core(e) <= per_core(low) * 1.01]
        logs = [
            math.log(statistics.median(by[(b.id, pc)]) / statistics.median(by[(top.id, pc)]))
            for b in lows
            for pc in ("fp32", "tf32", "16", "fp8")
            if by.get((top.id, pc)) and by.get((b.id, pc))
        ]
        if not logs or per_core(low) >= per_core(top):
            continue
        r = min(1.0, math.exp(statistics.fmean(logs)))
        out[chip] = (_down(per_core(low) / r**n), "/".join(b.id for b in lows), top.id, round(r, 4))
    return out


def read_gemm(catalog: Catalog, power: dict[str, Any] | None = None) -> tuple[list[GemmObs], list[str]]:
    """GEMM rows with the card's peak at its sustained clock (``power``: ``roofline.clock_factor``)."""
    obs, skipped = [], []
    with (KERNELS / "gemm.csv").open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            e = lookup(catalog, r["gpu"])
            if e is None:
                skipped.append(f"{r['gpu']}: not in the catalog")
                continue
            p = gemm_precision(r["precision"], e)
            if p is None:
                continue
            peak = e.tflops(p)
            if not peak:
                skipped.append(f"{r['gpu']} {p}: no catalog peak")
                continue
            t = float(r["tflops"])
            # GeForce cards boost above their spec boost clock (3090 Ti, 4090, 1080 Ti reach 1.04-1.07 x
            # the catalog peak): only a figure far above it is a sparse/dense or label mix-up.
            if t > (1.3 if e.family == "geforce" else 1.05) * peak:
                skipped.append(f"{r['gpu']} {p}: {t} TFLOPS above the catalog's dense peak {peak}")
                continue
            if r["gpu"] == "NVIDIA H100 (variant not stated)" and p == "fp16":
                continue  # the SwiGLU d_ff search (variant unknown, no L2 flush): used for the alignment penalty only
            m, n, k = (int(float(r[x])) if r[x] else 0 for x in ("m", "n", "k"))
            units = e.sm_count or max(1, e.shader_cores // (64 if e.vendor == "AMD" else 128))
            obs.append(
                GemmObs(
                    f"{e.vendor}/{e.architecture}",
                    pclass(p),
                    peak * _clock(e, power),
                    m,
                    n,
                    k,
                    t,
                    units,
                    e.id,
                    _half_rate(catalog, e),
                )
            )
    obs += own_h100(catalog)
    return obs, sorted(set(skipped))


H100_BENCH = Path(__file__).resolve().parents[3] / "docs" / "validation" / "h100-2026-11-22" / "bench-full.json"


def own_h100(catalog: Catalog) -> list[GemmObs]:
    """Our own H100 SXM5 record (gpuselect bench, 8192^3 torch.matmul per precision)."""
    import json

    e = catalog.get("nvidia-h100-sxm5-80gb")
    if e is None or e.id in EXCLUDED or not H100_BENCH.exists():
        return []
    dev = json.loads(H100_BENCH.read_text())["devices"][0]
    out = []
    for p, t in dev["matmul_tflops"].items():
        peak = e.tflops(p)
        if t and peak:
            out.append(
                GemmObs(
                    "NVIDIA/Hopper",
                    pclass(p),
                    peak,
                    8192,
                    8192,
                    8192,
                    float(t),
                    e.sm_count or 132,
                    e.id + " (own bench)",
                )
            )
    return out


def align_penalty() -> float:
    """Unaligned against aligned reduction length, same shapes (ml-engineering's SwiGLU d_ff search on H100)."""
    aligned: list[float] = []
    odd: list[float] = []
    with (KERNELS / "gemm.csv").open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["gpu"] == "NVIDIA H100 (variant not stated)" and "fp16" in r["precision"] and r["k"]:
                (odd if int(float(r["k"])) % 64 else aligned).append(float(r["tflops"]))
    return round(statistics.median(odd) / statistics.median(aligned), 4) if aligned and odd else 1.0


def shape_factor(o: GemmObs, k0: float, align: float, tile: int = 128, small: float = 0.0) -> float:
    """``roofline.DeviceModel.gemm_efficiency`` / E: the wave fill of the best tile (``small``: the
    rate per halving of the tile edge, 0 = one 128 tile), k/(k+k0), the misalignment penalty."""
    from gpuselect.estimate.roofline import wave_fill

    if not (o.m and o.n and o.k):
        return 1.0
    f = wave_fill(o.m, o.n, o.units, tile, small) * o.k / (o.k + k0)
    if o.pc != "fp32" and (o.k % 64 or o.n % 8):
        f *= align
    return f


#: The smaller tiles' rate per halving of the edge searched by ``fit_gemm`` (0: one 128x128 tile).
SMALL_TILE_GRID: tuple[float, ...] = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)

#: How the shipped parameters' GEMM fit runs, by ``GPUSELECT_FIT_GEMM`` (scripts/refit passes the
#: environment on): (memory roofline in the prediction, tile rates searched, criterion).
#: "" (shipped): compute and floor only, one 128x128 tile, median |log error|.
#: "roofline": the memory roofline in the prediction (memory-bound rows out of E), mean |log error|.
#: "tiles": as "roofline", and the tile choice (SMALL_TILE_GRID) fitted with E, k0 and the floor.
#: Measured whole-chain with each (docs/validation/ratios-2026-11-24/tiles/): the tile choice
#: improves the unseen-card ratio medians but makes llm-foundry out of sample and DLE absolute
#: materially worse, so the shipped fit keeps one 128 tile (docs/accuracy.md, "Unseen GPUs").
GEMM_FIT_MODES: dict[str, tuple[bool, tuple[float, ...], str]] = {
    "": (False, (0.0,), "median"),
    "roofline": (True, (0.0,), "mean"),
    "tiles": (True, SMALL_TILE_GRID, "mean"),
}


def gemm_fit_mode() -> str:
    import os

    mode = os.environ.get("GPUSELECT_FIT_GEMM", "")
    if mode not in GEMM_FIT_MODES:
        raise ValueError(f"GPUSELECT_FIT_GEMM must be one of {sorted(GEMM_FIT_MODES)}, not {mode!r}")
    return mode


def fit_gemm_as_shipped(catalog: Catalog, obs: list[GemmObs], mode: str | None = None) -> dict[str, Any]:
    """``fit_gemm`` as ``python -m gpuselect.estimate.fit`` runs it (``GEMM_FIT_MODES``)."""
    roof, smalls, criterion = GEMM_FIT_MODES[gemm_fit_mode() if mode is None else mode]
    bw = None
    if roof:
        kinds, _n, by_gpu = fit_memory_kinds(catalog)
        bw = gemm_bandwidth(catalog, kinds, by_gpu)
    return fit_gemm(obs, bw, smalls, criterion)


def gemm_bytes(o: GemmObs) -> float:
    """Bytes a GEMM moves at least once (A, B read, C written): fp8 reads 1-byte operands and
    writes 16-bit, 16-bit classes 2 bytes, fp32/TF32 4 (as the step model counts them)."""
    a = {"fp32": 4.0, "tf32": 4.0, "16": 2.0, "fp8": 1.0}.get(o.pc, 2.0)
    c = 2.0 if o.pc == "fp8" else a
    return a * (o.m * o.k + o.k * o.n) + c * o.m * o.n


def gemm_bandwidth(catalog: Catalog, kinds: dict[str, dict[str, float]], by_gpu: dict[str, float]) -> dict[str, float]:
    """Per catalog card the sustained bandwidth (bytes/s) ``roofline.catalog_device`` gives it with
    these memory efficiencies (its own FluidX3D figure, else its architecture's median over boards
    of its kind): the memory roofline of ``fit_gemm``'s prediction."""
    from gpuselect.estimate.roofline import _nearest, gddr_ecc

    out: dict[str, float] = {}
    for e in catalog.entries:
        table = kinds["gddr_ecc"] if gddr_ecc(e) and kinds.get("gddr_ecc") else kinds["other"]
        key, _d = _nearest(e.vendor, e.architecture, table)
        eff = by_gpu.get(e.id) or (table[key] if key is not None else 0.7)
        out[e.id] = e.memory_bandwidth_gbs * 1e9 * eff
    return out


TENSOR_CLASSES = ("tf32", "16", "fp8")


def _geforce_tensor(o: GemmObs) -> bool:
    return o.geforce and o.pc in TENSOR_CLASSES


def fit_gemm(
    obs: list[GemmObs],
    bandwidth: dict[str, float] | None = None,
    smalls: tuple[float, ...] = (0.0,),
    criterion: str = "median",
) -> dict[str, Any]:
    """E per (architecture, precision class) on the pro and datacenter parts' rows (fp32: every
    card's), and one efficiency for GeForce tensor paths: a GeForce card's catalog tensor peak is
    already the half-rate FP32-accumulate figure, its tensor cores idle half the time and leave
    power headroom, and its clocks run above the spec boost, so it reaches its peak where a
    power-limited pro part of the same architecture (A100, A6000, T4) reaches 0.6-0.85 of it.
    Pro E of an architecture with GeForce rows only: see ``derived`` below.

    Searched on a grid with E: k0, the per-kernel floor and the smaller tiles' rate per halving
    (``smalls``; 0 = one 128x128 tile). ``bandwidth`` (bytes/s per card id, ``gemm_bandwidth``)
    puts the memory roofline in the prediction, as the step model has it, and leaves rows that
    are memory-bound (measured time below 1.5x the memory time) out of E, as floor-dominated rows
    are. ``criterion`` over every row's |log error| of the kernel time: "median" or "mean". k0, the
    floor and the tile rate each govern a minority of the rows (short k, tiny kernels, small
    grids), to which a median over all rows is blind by construction; the mean of |log| (L1,
    robust against a few far-off rows unlike a squared error) sees them."""
    best: tuple[float, dict[str, Any]] | None = None
    align = align_penalty()
    shaped = [o for o in obs if o.m and o.n and o.k]
    t_mem = {
        id(o): gemm_bytes(o) / bandwidth[o.gpu.split(" ")[0]]
        for o in shaped
        if bandwidth and o.gpu.split(" ")[0] in bandwidth
    }
    for small in smalls:
        fills = {id(o): shape_factor(o, 0.0, align, 128, small) for o in shaped}
        for k0 in (0, 16, 32, 64, 96, 128, 192, 256, 384, 512):
            shape = {id(o): fills[id(o)] * o.k / (o.k + k0) for o in shaped}
            for floor_us in (2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0):
                eff: dict[tuple[str, str], float] = {}
                groups: dict[tuple[str, str], list[float]] = defaultdict(list)
                gf_logs: list[float] = []
                gf_groups: dict[tuple[str, str], list[float]] = defaultdict(list)
                for o in obs:
                    flops = 2.0 * o.m * o.n * o.k
                    t_obs = flops / (o.tflops * 1e12) if flops else None
                    if t_obs is not None and t_obs < 1.5 * floor_us * 1e-6:
                        continue  # floor-dominated: says nothing about E
                    if t_obs is not None and t_obs < 1.5 * t_mem.get(id(o), 0.0):
                        continue  # memory-bound: says nothing about E
                    x = math.log(o.tflops / o.peak / shape.get(id(o), 1.0))
                    if _geforce_tensor(o):
                        gf_logs.append(x)
                        gf_groups[(o.arch, o.pc)].append(x)
                    else:
                        groups[(o.arch, o.pc)].append(x)
                for key, logs in groups.items():
                    eff[key] = min(1.1, math.exp(statistics.median(logs)))
                gf = min(1.1, math.exp(statistics.median(gf_logs))) if gf_logs else None
                errs = []
                for o in shaped:
                    e = gf if _geforce_tensor(o) else eff.get((o.arch, o.pc))
                    if e is None:
                        continue
                    flops = 2.0 * o.m * o.n * o.k
                    t_pred = max(flops / (o.peak * 1e12 * e * shape[id(o)]), floor_us * 1e-6, t_mem.get(id(o), 0.0))
                    t_obs = flops / (o.tflops * 1e12)
                    errs.append(abs(math.log(t_pred / t_obs)))
                score = statistics.fmean(errs) if criterion == "mean" else statistics.median(errs)
                # An architecture whose tensor paths were measured on GeForce cards only (Ada: the
                # 4090): its pro parts' E = that GeForce figure x the pro/GeForce ratio of the
                # architectures measured on both (full-rate tensor work at the pro boards' clocks).
                both = [eff[k] / math.exp(statistics.median(v)) for k, v in gf_groups.items() if k in eff]
                pro_over_gf = statistics.median(both) if both else None
                derived = {
                    k: min(0.95, math.exp(statistics.median(v)) * pro_over_gf)
                    for k, v in gf_groups.items()
                    if k not in eff and pro_over_gf
                }
                if best is None or score < best[0] - 1e-12:
                    best = (
                        score,
                        {
                            "k0": k0,
                            "align_penalty": align,
                            "kernel_floor_us": floor_us,
                            "small_tile_eff": small,
                            "criterion": criterion,
                            "memory_roofline": bool(t_mem),
                            "eff": {f"{a}|{pc}": round(v, 4) for (a, pc), v in sorted({**eff, **derived}.items())},
                            "derived_from_geforce": {
                                f"{a}|{pc}": round(v, 4) for (a, pc), v in sorted(derived.items())
                            },
                            "pro_over_geforce": None if pro_over_gf is None else round(pro_over_gf, 4),
                            "geforce_tensor_eff": None if gf is None else round(gf, 4),
                            "geforce_rows": len(gf_logs),
                            "median_abs_log_err": round(statistics.median(errs), 4),
                            "mean_abs_log_err": round(statistics.fmean(errs), 4),
                            "p90_abs_log_err": round(sorted(errs)[int(0.9 * (len(errs) - 1))], 4),
                            "n": len(errs),
                        },
                    )
    if best is None:
        raise RuntimeError("internal error: best is unset")
    return best[1]


def fit_memory(catalog: Catalog) -> tuple[dict[str, float], int, dict[str, float]]:
    """(median per architecture, rows matched, per catalog card). A card FluidX3D measured keeps
    its own share of the data-sheet bandwidth (HBM parts reach 0.53-0.85, GDDR6/6X parts up to
    0.92: memory controllers, refresh and clocks differ between boards of one architecture);
    others use their architecture's median, over the boards of its kind: datacenter GDDR boards
    (T4, A10, A40, L4, L40S: ECC on by default) apart from the rest (``fit_memory_kinds``)."""
    kinds, n, by_gpu = fit_memory_kinds(catalog)
    return kinds["other"], n, by_gpu


def fit_memory_kinds(catalog: Catalog) -> tuple[dict[str, dict[str, float]], int, dict[str, float]]:
    """({"other": median per architecture, "gddr_ecc": the same over datacenter GDDR boards},
    rows matched, per catalog card). Datacenter GDDR boards reach less of their data-sheet
    bandwidth than the GeForce/workstation boards of the same chip (FluidX3D: A10 0.75, A40 0.74,
    L40S 0.67, T4 0.65 against 0.85-0.89 for GeForce Ampere/Ada): they ship with ECC on, which
    GDDR carries in band. Leaving each measured card out, the architecture median of its own kind
    predicts its efficiency better than the architecture median over all boards (p90 |log error|
    0.14 against 0.20, benchmarks/ratio_hypotheses.py). An architecture with boards of one kind only
    gives that kind's median to both."""
    from gpuselect.estimate.roofline import gddr_ecc

    by_kind: dict[str, dict[str, list[float]]] = {"other": defaultdict(list), "gddr_ecc": defaultdict(list)}
    by_gpu: dict[str, list[float]] = defaultdict(list)
    with (KERNELS / "other_kernels.csv").open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if "FluidX3D" not in r["source"]:
                continue
            e = lookup(catalog, r["gpu"])
            if e is None:
                continue
            # "MI250 (1 GCD)": one of the two dies, where the catalog lists the whole board's
            # bandwidth (its K80 and A16 entries are per GPU already, like FluidX3D's "(1 GPU)").
            dies = e.dies if "(1 GCD)" in r["gpu"] else 1
            # Measured GB/s against *our* catalog bandwidth (the source's own % uses its data sheet).
            x = float(r["tflops_or_gbs"]) * dies / e.memory_bandwidth_gbs
            by_kind["gddr_ecc" if gddr_ecc(e) else "other"][f"{e.vendor}/{e.architecture}"].append(x)
            if "passive" not in r["gpu"].lower():  # a passively cooled variant is not the catalog's board
                by_gpu[e.id].append(x)
    n = sum(len(v) for kind in by_kind.values() for v in kind.values())
    archs = set(by_kind["other"]) | set(by_kind["gddr_ecc"])
    out: dict[str, dict[str, float]] = {"other": {}, "gddr_ecc": {}}
    for a in sorted(archs):
        for kind, other in (("other", "gddr_ecc"), ("gddr_ecc", "other")):
            v = by_kind[kind].get(a) or by_kind[other][a]
            out[kind][a] = round(min(0.95, statistics.median(v)), 4)
    return (
        out,
        n,
        {g: round(min(0.95, statistics.median(v)), 4) for g, v in sorted(by_gpu.items())},
    )


_CONV = re.compile(r"N=(\d+) C=(\d+) H=(\d+) W=(\d+) K=(\d+) filter RxS\(h x w\)=(\d+)x(\d+)")


def fit_conv(
    catalog: Catalog, gemm: dict[str, Any], power: dict[str, Any] | None = None
) -> tuple[float, int, float, dict[str, float]]:
    """Median of achieved conv efficiency / the GEMM model's for the implicit GEMM shape: over all
    rows, and per path (``fp32``: the vector units, where cuDNN runs 3x3 filters as Winograd or
    FFT and beats the direct convolution's FLOP count; ``tensor``: tensor-core implicit GEMMs), and
    per "vendor/architecture|path" where DeepBench measured it."""
    ratios = []
    by_class: dict[str, list[float]] = defaultdict(list)
    by_arch: dict[str, list[float]] = defaultdict(list)
    with (KERNELS / "other_kernels.csv").open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if not r["kernel"].startswith("conv2d"):
                continue
            e = lookup(catalog, r["gpu"])
            mt = _CONV.search(r["shape"])
            if e is None or mt is None or not r["time_us"]:
                continue
            p = "fp16" if "tensor-core" in r["precision"] else "fp32" if r["precision"] == "fp32" else None
            if p is None or not e.tflops(p):
                continue
            key = f"{e.vendor}/{e.architecture}|{pclass(p)}"
            gf = _half_rate(catalog, e) and pclass(p) in TENSOR_CLASSES and gemm.get("geforce_tensor_eff")
            if key not in gemm["eff"] and not gf:
                continue
            N, C, _H, _W, K, R, S = (int(x) for x in mt.groups())  # noqa: N806 - conventional symbols (tensor dims, batch, layers, op kinds) as in the formulas
            tflops = float(r["tflops_or_gbs"])
            t = float(r["time_us"]) * 1e-6
            if t < 3 * gemm["kernel_floor_us"] * 1e-6:
                continue
            flops = tflops * 1e12 * t
            pq = flops / (2.0 * N * K * C * R * S)
            units = e.sm_count or 1
            o = GemmObs(
                key.split("|")[0],
                pclass(p),
                (e.tflops(p) or 1.0) * _clock(e, power),
                int(N * pq),
                K,
                C * R * S,
                tflops,
                units,
                e.id,
            )
            model_eff = (gf or gemm["eff"][key]) * shape_factor(
                o, gemm["k0"], gemm["align_penalty"], 128, float(gemm.get("small_tile_eff", 0.0))
            )
            ratios.append(tflops / o.peak / model_eff)
            path = "fp32" if p == "fp32" else "tensor"
            by_class[path].append(ratios[-1])
            by_arch[f"{e.vendor}/{e.architecture}|{path}"].append(ratios[-1])
    logs = sorted(math.log(x) for x in ratios)
    med = math.exp(statistics.median(logs))
    spread = statistics.median(abs(x - math.log(med)) for x in logs)
    per = {c: round(statistics.median(v), 4) for c, v in sorted(by_class.items())}
    # Per architecture and path: cuDNN's FP32 Winograd kernels beat the GEMM model by ~1.4x on
    # Volta/Turing (DeepBench's 2019 re-run) but not on Pascal (its 2017 runs, older cuDNN).
    per.update({k: round(statistics.median(v), 4) for k, v in sorted(by_arch.items())})
    return round(med, 4), len(ratios), round(spread, 4), per


_ATT = re.compile(r"batch=(\d+) seqlen=(\d+) nheads=(\d+) headdim=(\d+) causal=(True|False)")


def fit_attention(catalog: Catalog, gemm: dict[str, Any]) -> dict[str, Any]:
    """Fused attention's rate against the architecture's large-GEMM rate, on the FlashAttention-2
    fwd+bwd charts (A100, H100; head dims 64 and 128; causal and not): per architecture a factor,
    times the shape terms of ``roofline.attention_shape_factor`` (sequence fill ``s0``, head
    dimension ``d0``, causal blocks ``s_causal``), searched on a grid for the least mean |log error|."""
    rows = []
    with (KERNELS / "other_kernels.csv").open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["kernel"] != "attention fwd+bwd (FlashAttention-2)":
                continue
            e = lookup(catalog, r["gpu"])
            mt = _ATT.search(r["shape"])
            if e is None or mt is None or not e.bf16_tflops:
                continue
            key = f"{e.vendor}/{e.architecture}|16"
            if key not in gemm["eff"]:
                continue
            s, d, causal = int(mt.group(2)), int(mt.group(4)), mt.group(5) == "True"
            rows.append(
                (
                    s,
                    d,
                    causal,
                    float(r["tflops_or_gbs"]) / e.bf16_tflops / gemm["eff"][key],
                    f"{e.vendor}/{e.architecture}",
                )
            )

    def shape(s: int, d: int, causal: bool, s0: float, d0: float, sc: float) -> float:
        return s / (s + s0) * d / (d + d0) * (s / (s + sc) if causal else 1.0)

    archs = sorted({r[4] for r in rows})
    best = None
    for s0 in (0, 64, 128, 256, 384, 512, 768, 1024):
        for d0 in (0, 8, 16, 24, 32, 48, 64, 96):
            for sc in (0, 64, 128, 192, 256, 384, 512, 768):
                f = {
                    a: math.exp(
                        statistics.median(
                            math.log(x / shape(s, d, c, s0, d0, sc)) for s, d, c, x, aa in rows if aa == a
                        )
                    )
                    for a in archs
                }
                # mean, not median: with three shape terms a median fit leaves the short sequences'
                # rows (a third of them) 30 % off and still scores well
                err = statistics.fmean(abs(math.log(f[a] * shape(s, d, c, s0, d0, sc) / x)) for s, d, c, x, a in rows)
                if best is None or err < best[0] - 1e-9:
                    best = (err, f, s0, d0, sc)
    if best is None:
        raise RuntimeError("internal error: best is unset")
    err, f, s0, d0, sc = best

    def errors(f: dict[str, float], s0: float, d0: float, sc: float) -> list[float]:
        return [abs(math.log(f[a] * shape(s, d, c, s0, d0, sc) / x)) for s, d, c, x, a in rows]

    # For the record: the sequence-fill term alone (one saturation for every head dim and mask)
    plain = min(
        (
            statistics.fmean(errors(g, q, 0.0, 0.0)),
            q,
            g,
        )
        for q in (0, 64, 128, 256, 384, 512, 768, 1024)
        for g in [
            {
                a: math.exp(
                    statistics.median(math.log(x / shape(s, d, c, q, 0.0, 0.0)) for s, d, c, x, aa in rows if aa == a)
                )
                for a in archs
            }
        ]
    )
    # Per architecture (FlashAttention-2 reaches a larger share of Ampere's peak than of Hopper's);
    # others use the median of those measured.
    return {
        "factor_by_arch": {a: round(v, 4) for a, v in f.items()},
        "factor": round(statistics.median(f.values()), 4),
        "s0": s0,
        "d0": d0,
        "s_causal": sc,
        "rows_per_unit": 128,
        "n": len(rows),
        "mean_abs_log_err": round(err, 4),
        "median_abs_log_err": round(statistics.median(errors(f, s0, d0, sc)), 4),
        "s0_only": {
            "s0": plain[1],
            "mean_abs_log_err": round(plain[0], 4),
            "median_abs_log_err": round(statistics.median(errors(plain[2], plain[1], 0.0, 0.0)), 4),
        },
    }


def held_out(catalog: Catalog, doc: dict[str, Any], exclude: set[str]) -> dict[str, Any]:
    """``doc`` (a steptime.json) with its kernel sections (GEMM efficiencies, memory efficiency,
    convolution and attention factors) refitted without the kernel rows of the cards ``exclude``,
    as ``__main__`` fits them; the power law's exponent, the host and the step factors are kept
    (the exponent rests on one T4/V100 pair, which a held-out V100 would leave without data)."""
    import json

    EXCLUDED.clear()
    EXCLUDED.update(exclude)
    try:
        out: dict[str, Any] = json.loads(json.dumps(doc))
        power = out["power"]
        obs, _skipped = read_gemm(catalog, power)
        kinds, _n, mem_gpu = fit_memory_kinds(catalog)
        g = fit_gemm_as_shipped(catalog, obs)
        out["gemm"].update(
            {
                "k0": g["k0"],
                "small_tile_eff": g["small_tile_eff"],
                "align_penalty": g["align_penalty"],
                "eff": gemm_eff_table(g),
                "geforce_tensor_eff": g["geforce_tensor_eff"],
            }
        )
        out["device"]["kernel_floor_us"] = g["kernel_floor_us"]
        out["memory"].update({"eff": kinds["other"], "eff_gddr_ecc": kinds["gddr_ecc"], "by_gpu": mem_gpu})
        conv, _n, _spread, conv_by = fit_conv(catalog, g, power)
        out["conv"].update({"factor": conv, "by_class": conv_by})
        out["attention"] = fit_attention(catalog, g)
        return out
    finally:
        EXCLUDED.clear()


def gemm_eff_table(g: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``fit_gemm``'s E per "vendor/arch|class" as steptime.json's {arch: {class: E}}; GeForce's
    above-1 figures (clocks above spec boost) are not carried to the pro parts (capped at 0.95)."""
    eff: dict[str, dict[str, float]] = {}
    for key, v in g["eff"].items():
        arch, pc = key.split("|")
        eff.setdefault(arch, {})[pc] = min(0.95, v)
    return eff
