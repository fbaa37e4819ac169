"""Fit the performance model to measured training throughputs (used by scripts, not at runtime).

Model, for a reference model ``m`` at precision class ``pc`` (``fp32`` rows: TF32 tensor cores
where the card has them; ``fp16``: mixed precision), on GPU ``g`` measured in benchmark
generation ``v``::

    time per sample = s[m,pc,v] * ( 1 / (e[arch(g),pc] * C[g,pc]) + r[m,pc] / BW[g] + o[m,pc]
                                    + q[m,pc] / batch )

- ``C``: the card's peak for that precision (TFLOP/s), ``BW``: memory bandwidth (TB/s);
- ``r`` weighs memory traffic against compute, ``o`` a per-sample cost no GPU speeds up
  (data loading); ``q`` a per-step cost (kernel launches, optimizer step) shared by the batch
  (Lambda's batch grows with VRAM, so small cards pay more of it); all three per model;
- ``e``: one efficiency factor per GPU architecture and precision class, shared by all models
  (how well that tensor-core generation reaches its peak), pulled towards 1;
- ``s``: one scale per model, precision and benchmark generation (software moves throughput;
  GPUs are only compared within one generation).

Fitted by coordinate descent on squared log errors: for fixed ``e``, ``r``, ``o`` and ``q`` by
grid search with ``s`` in closed form; then each ``e`` by grid search. Needs numpy (scripts
only: ``benchmarks/estimator_accuracy.py`` writes ``data/calibration.json``, which the app reads).
This model form and fit were designed on the `estimate` branch by a teammate and adopted here
because it validated better (docs/accuracy.md) than the earlier log-linear mix.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpuselect.catalog.schema import GpuEntry

DATA_DIR = Path(__file__).resolve().parent / "data"
REFERENCE_CSV = DATA_DIR / "reference_throughput.csv"

#: Lambda labels whose hardware differs from the label (see data/README.md).
NAME_FIXES = {"H200 SXM 141GB": "H200 NVL"}

_R_GRID = [0.0] + [10 ** (-3.5 + 0.125 * i) for i in range(37)]  # 3e-4 .. 1e1
_O_GRID = [0.0] + [10 ** (-5.0 + 0.25 * i) for i in range(21)]  # 1e-5 .. 1e0
_Q_GRID = [0.0] + [10 ** (-4.0 + 0.25 * i) for i in range(25)]  # 1e-4 .. 1e2
_E_GRID = [10 ** (-0.7 + 0.025 * i) for i in range(57)]  # 0.2 .. 5
E_PRIOR_WEIGHT = 0.5  # penalty (per unit of log e squared) pulling e towards 1


def arch_key(entry: GpuEntry) -> str:
    """Group cards whose tensor cores behave alike: vendor + architecture."""
    arch = entry.architecture.lower().replace("lovelace", "").strip()
    return f"{entry.vendor.lower()}:{arch}"


def compute_tflops(entry: GpuEntry, precision: str) -> float:
    """The peak a training run at ``precision`` uses; falls back to the vector FP32 rate."""
    if precision == "fp32":
        if entry.vendor == "AMD" and entry.architecture in ("CDNA 1", "CDNA 2") and entry.tf32_tflops:
            # rocBLAS runs FP32 GEMMs on the matrix cores, at twice the vector rate; the
            # catalog keeps that FP32 matrix rate in the tf32 field for these chips.
            return max(entry.fp32_tflops, entry.tf32_tflops)
        return entry.fp32_tflops
    if precision == "tf32":
        return entry.tf32_tflops or entry.fp32_tflops
    if precision == "bf16":
        return entry.bf16_tflops or entry.fp16_tflops or entry.fp32_tflops
    if precision == "fp16":
        return entry.fp16_tflops or entry.fp32_tflops
    raise ValueError(precision)


def precision_class(precision: str) -> str:
    return "fp16" if precision in ("fp16", "bf16") else "fp32"


def reference_precision(row_precision: str, entry: GpuEntry) -> str:
    """What a Lambda row's precision ran as: 'fp32' rows used TF32 where the card has it."""
    if row_precision == "fp16":
        return "fp16"
    return "tf32" if entry.tf32_tflops else "fp32"


@dataclass(frozen=True)
class Obs:
    gpu: str  # reference label
    model: str
    pc: str
    version: str
    throughput: float
    compute: float  # TFLOP/s
    bandwidth: float  # TB/s
    arch: str
    batch: int  # samples per step on this GPU


@dataclass
class Fit:
    r: dict[tuple[str, str], float] = field(default_factory=dict)
    o: dict[tuple[str, str], float] = field(default_factory=dict)
    q: dict[tuple[str, str], float] = field(default_factory=dict)
    log_k: dict[tuple[str, str, str], float] = field(default_factory=dict)  # -log s
    e: dict[tuple[str, str], float] = field(default_factory=dict)

    def eff(self, arch: str, pc: str) -> float:
        return self.e.get((arch, pc), 1.0)

    def log_pred(self, ob: Obs, version: str | None = None) -> float | None:
        key = (ob.model, ob.pc)
        kv = self.log_k.get((ob.model, ob.pc, version or ob.version))
        if kv is None or key not in self.r:
            return None
        return kv - math.log(1.0 / (self.eff(ob.arch, ob.pc) * ob.compute) + self.r[key] / ob.bandwidth + self.o[key] + self.q[key] / ob.batch)


def read_reference_rows(path: Path = REFERENCE_CSV) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def build_observations(rows: Iterable[dict[str, str]], spec_for: Callable[[str], GpuEntry | None]) -> tuple[list[Obs], list[str]]:
    """Observations for rows whose GPU has specs; also the labels that had none."""
    out: list[Obs] = []
    missing: set[str] = set()
    for row in rows:
        label = row["gpu"]
        try:
            thr = float(row["throughput_per_gpu_median"])
            batch = int(float(row.get("batch_size_per_gpu") or 0))
        except ValueError:
            continue
        if not (thr > 0 and math.isfinite(thr)) or batch <= 0:
            continue  # e.g. a batch size of 0 marks a failed run
        entry = spec_for(NAME_FIXES.get(label, label))
        if entry is None:
            missing.add(label)
            continue
        prec = reference_precision(row["precision"], entry)
        out.append(Obs(label, row["model"], precision_class(row["precision"]), row["bench_version"], thr,
                       compute_tflops(entry, prec), entry.memory_bandwidth_gbs / 1000.0, arch_key(entry), batch))
    return out, sorted(missing)


def _fit_group(obs: list[Obs], fit: Fit) -> tuple[float, float, float, dict[str, float], float]:
    """Best (r, o, q, log_k per version, sse) for one (model, pc) with ``e`` fixed (grid search)."""
    import numpy as np  # scripts only; the runtime reads the fitted JSON

    y = np.array([math.log(ob.throughput) for ob in obs])
    inv_c = np.array([1.0 / (fit.eff(ob.arch, ob.pc) * ob.compute) for ob in obs])
    inv_b = np.array([1.0 / ob.bandwidth for ob in obs])
    inv_n = np.array([1.0 / ob.batch for ob in obs])
    versions = sorted({ob.version for ob in obs})
    onehot = np.array([[1.0 if ob.version == v else 0.0 for v in versions] for ob in obs])  # (n, V)
    counts = onehot.sum(axis=0)
    r, o, q = np.meshgrid(np.array(_R_GRID), np.array(_O_GRID), np.array(_Q_GRID), indexing="ij")
    r, o, q = r.ravel()[:, None], o.ravel()[:, None], q.ravel()[:, None]
    z = y[None, :] + np.log(inv_c[None, :] + r * inv_b[None, :] + o + q * inv_n[None, :])  # (G, n)
    means = (z @ onehot) / counts  # (G, V)
    resid = z - means @ onehot.T
    sse = (resid**2).sum(axis=1)
    i = int(np.argmin(sse))
    return float(r[i, 0]), float(o[i, 0]), float(q[i, 0]), dict(zip(versions, map(float, means[i]))), float(sse[i])


def fit(obs: list[Obs], iterations: int = 4) -> Fit:
    f = Fit()
    groups: dict[tuple[str, str], list[Obs]] = defaultdict(list)
    for ob in obs:
        groups[(ob.model, ob.pc)].append(ob)
    by_arch: dict[tuple[str, str], list[Obs]] = defaultdict(list)
    for ob in obs:
        by_arch[(ob.arch, ob.pc)].append(ob)
    for _ in range(iterations):
        for key, g in groups.items():
            r, o, q, ks, _ = _fit_group(g, f)
            f.r[key], f.o[key], f.q[key] = r, o, q
            for v, k in ks.items():
                f.log_k[(key[0], key[1], v)] = k
        for akey, g in by_arch.items():
            # An architecture seen on a single card cannot be told apart from that card's
            # own noise: leave it at 1.
            if len({ob.gpu for ob in g}) < 2:
                f.e[akey] = 1.0
                continue
            best_e, best_loss = 1.0, math.inf
            for e in _E_GRID:
                f.e[akey] = e
                loss = E_PRIOR_WEIGHT * math.log(e) ** 2 * len(g) / 10.0
                for ob in g:
                    lp = f.log_pred(ob)
                    if lp is not None:
                        loss += (math.log(ob.throughput) - lp) ** 2
                if loss < best_loss:
                    best_e, best_loss = e, loss
            f.e[akey] = best_e
    return f
