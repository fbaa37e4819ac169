"""Fit the performance model to measured training throughputs (used by scripts, not at runtime).

Model, for a reference model ``m`` at precision class ``pc`` (``fp32`` rows: TF32 tensor cores
where the card has them; ``fp16``: mixed precision), on GPU ``g`` measured in benchmark
generation ``v``::

    time per sample = s[m,pc,v] * ( 1 / (e[arch(g),pc] * C[g,pc]) + r[m,pc] / BW[g] + o[m,pc]
                                    + q[m,pc] / batch + u[m,pc] / (batch * BW[g]) )

- ``C``: the card's peak for that precision (TFLOP/s), ``BW``: memory bandwidth (TB/s);
- ``r`` weighs memory traffic against compute, ``o`` a per-sample cost no GPU speeds up
  (data loading); ``q`` a per-step cost (kernel launches) shared by the batch (Lambda's batch
  grows with VRAM, so small cards pay more of it); ``u`` per-step memory traffic (weights,
  gradients and optimizer state read and written once a step), shared by the batch and paid at
  the card's bandwidth; all four per model;
- ``e``: one efficiency factor per GPU architecture and precision class, shared by all models
  (how well that tensor-core generation reaches its peak), pulled towards 1;
- ``s``: one scale per model, precision and benchmark generation (software moves throughput;
  GPUs are only compared within one generation).

Fitted by coordinate descent on a Huber loss of the log errors (squared within 10 %, linear
beyond, so a few odd benchmark runs cannot drag a model's parameters): for fixed ``e``, ``r``,
``o``, ``q`` and ``u`` by grid search (coarse, then refined around the best coarse points) with
``log s`` per generation at its Huber location (a few reweighting steps from the mean); then each
``e`` by grid search. Needs numpy (scripts only: ``benchmarks/estimator_accuracy.py`` writes
``data/calibration.json``, which the app reads).
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
from typing import Any

from gpuselect.catalog.schema import GpuEntry

DATA_DIR = Path(__file__).resolve().parent / "data"
REFERENCE_CSV = DATA_DIR / "reference_throughput.csv"

#: Lambda labels whose hardware differs from the label (see data/README.md).
NAME_FIXES = {"H200 SXM 141GB": "H200 NVL"}

_R_GRID = [0.0] + [10 ** (-3.5 + 0.125 * i) for i in range(37)]  # 3e-4 .. 1e1
_O_GRID = [0.0] + [10 ** (-5.0 + 0.25 * i) for i in range(21)]  # 1e-5 .. 1e0
_Q_GRID = [0.0] + [10 ** (-4.0 + 0.25 * i) for i in range(25)]  # 1e-4 .. 1e2
# u is ~3e3 for NCF (batches of millions of samples; a 1e3 ceiling cut its fit short).
_U_GRID = [0.0] + [10 ** (-3.0 + 0.25 * i) for i in range(33)]  # 1e-3 .. 1e5
_REFINE_TOP = 32  # coarse grid points whose neighbourhoods are searched at full resolution
_COARSE_DTYPE = "float32"  # the coarse pass only ranks candidates; the refinement is float64
HUBER_DELTA: float | None = 0.10  # log residual beyond which the loss grows linearly (None: squares)
HUBER_LOCATION_STEPS = 3  # reweighting steps from the mean towards each version's Huber location
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
    u: dict[tuple[str, str], float] = field(default_factory=dict)
    log_k: dict[tuple[str, str, str], float] = field(default_factory=dict)  # -log s
    e: dict[tuple[str, str], float] = field(default_factory=dict)

    def eff(self, arch: str, pc: str) -> float:
        return self.e.get((arch, pc), 1.0)

    def log_pred(self, ob: Obs, version: str | None = None) -> float | None:
        key = (ob.model, ob.pc)
        kv = self.log_k.get((ob.model, ob.pc, version or ob.version))
        if kv is None or key not in self.r:
            return None
        u = self.u.get(key, 0.0)
        return kv - math.log(
            1.0 / (self.eff(ob.arch, ob.pc) * ob.compute)
            + self.r[key] / ob.bandwidth
            + self.o[key]
            + self.q[key] / ob.batch
            + u / (ob.batch * ob.bandwidth)
        )


def read_reference_rows(path: Path = REFERENCE_CSV) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def build_observations(
    rows: Iterable[dict[str, str]], spec_for: Callable[[str], GpuEntry | None]
) -> tuple[list[Obs], list[str]]:
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
        out.append(
            Obs(
                label,
                row["model"],
                precision_class(row["precision"]),
                row["bench_version"],
                thr,
                compute_tflops(entry, prec),
                entry.memory_bandwidth_gbs / 1000.0,
                arch_key(entry),
                batch,
            )
        )
    return out, sorted(missing)


def _huber_np(x: Any, delta: float | None) -> Any:  # elementwise; works on numpy arrays and plain floats
    import numpy as np

    if delta is None:
        return x * x
    a = np.abs(x)
    m = np.minimum(a, delta)
    return m * (2.0 * a - m)  # a*a within delta, 2*delta*a - delta**2 beyond


def huber(x: float) -> float:
    """Huber loss of one log residual, equal to ``x**2`` within ``HUBER_DELTA`` and linear beyond
    it, so a few odd rows (a benchmark run that went wrong) cannot drag a model's parameters."""
    return float(_huber_np(x, HUBER_DELTA))


def _offsets_and_loss(z: Any, onehot: Any, counts: Any, delta: float | None, steps: int) -> tuple[Any, Any]:
    """Per-version offsets (log_k) and the summed loss, for each row of ``z`` (grid points x obs).
    The offset is the mean, then ``steps`` iteratively reweighted steps towards the Huber location."""
    import numpy as np

    loc = (z @ onehot) / counts
    if delta is not None:
        for _ in range(steps):
            a = np.abs(z - loc @ onehot.T)
            w = np.minimum(1.0, delta / np.maximum(a, 1e-12))
            loc = ((w * z) @ onehot) / (w @ onehot)
    return loc, _huber_np(z - loc @ onehot.T, delta).sum(axis=1)


def _fit_group(
    obs: list[Obs], fit: Fit, exhaustive: bool = False
) -> tuple[float, float, float, float, dict[str, float], float]:
    """Best (r, o, q, u, log_k per version, loss) for one (model, pc) with ``e`` fixed.

    Grid search: every other grid point in each dimension first, then the full-resolution
    neighbourhood (two grid steps each way) of the best ``_REFINE_TOP`` coarse points
    (``exhaustive=True`` searches the full grid; tests compare the two)."""
    import itertools

    import numpy as np  # scripts only; the runtime reads the fitted JSON

    y = np.array([math.log(ob.throughput) for ob in obs])
    inv_c = np.array([1.0 / (fit.eff(ob.arch, ob.pc) * ob.compute) for ob in obs])
    inv_b = np.array([1.0 / ob.bandwidth for ob in obs])
    inv_n = np.array([1.0 / ob.batch for ob in obs])
    versions = sorted({ob.version for ob in obs})
    onehot = np.array([[1.0 if ob.version == v else 0.0 for v in versions] for ob in obs])  # (n, V)
    counts = onehot.sum(axis=0)
    grids = [np.array(g) for g in (_R_GRID, _O_GRID, _Q_GRID, _U_GRID)]
    terms = [inv_b, np.ones_like(inv_b), inv_n, inv_n * inv_b]  # what r, o, q and u multiply

    def z_of(idx: Any) -> Any:  # idx: (G, 4) grid indices -> log throughput + log inner, (G, n)
        inner = inv_c + sum(grids[d][idx[:, d]][:, None] * terms[d] for d in range(4))
        return y + np.log(inner)

    def z_product(
        axes: list[Any], dtype: Any = np.float64
    ) -> tuple[Any, Any]:  # the same for every combination of the given indices, by broadcasting
        shape = [len(a) for a in axes]
        inner = inv_c.astype(dtype).reshape([1] * 4 + [-1])
        for d, a in enumerate(axes):
            inner = inner + (grids[d][a][:, None] * terms[d]).astype(dtype).reshape(
                [shape[d] if k == d else 1 for k in range(4)] + [-1]
            )
        idx = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
        return idx, (y.astype(dtype) + np.log(inner)).reshape(-1, len(y))

    if exhaustive:
        idx, z = z_product([np.arange(len(g)) for g in grids])
    else:
        # Coarse: every other grid point (and the last) in each dimension.
        idx, z = z_product([np.array(sorted(set(range(0, len(g), 2)) | {len(g) - 1})) for g in grids], _COARSE_DTYPE)
        _, loss = _offsets_and_loss(
            z, onehot.astype(z.dtype), counts.astype(z.dtype), HUBER_DELTA, HUBER_LOCATION_STEPS
        )
        near: set[tuple[int, ...]] = set()
        for b in idx[np.argsort(loss, kind="stable")[:_REFINE_TOP]]:
            near.update(itertools.product(*[range(max(0, b[d] - 2), min(len(grids[d]), b[d] + 3)) for d in range(4)]))
        idx = np.array(sorted(near), dtype=np.intp)
        z = z_of(idx)
    loc, loss = _offsets_and_loss(z, onehot, counts, HUBER_DELTA, HUBER_LOCATION_STEPS)
    i = int(np.argmin(loss))
    r, o, q, u = (float(grids[d][idx[i, d]]) for d in range(4))
    return r, o, q, u, dict(zip(versions, map(float, loc[i]), strict=True)), float(loss[i])


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
            r, o, q, u, ks, _ = _fit_group(g, f)
            f.r[key], f.o[key], f.q[key], f.u[key] = r, o, q, u
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
                        loss += huber(math.log(ob.throughput) - lp)
                if loss < best_loss:
                    best_e, best_loss = e, loss
            f.e[akey] = best_e
    return f
