"""The performance model: training throughput of a workload on any catalog GPU.

For each reference model and precision, measured throughputs (``data/reference_throughput.csv``)
are fitted as

    log(samples/s) = a[generation, model, precision] + α·log(tensor peak) + β·log(bandwidth) + γ·log(FP32 peak)

(ridge-regularised least squares; α, β, γ per model and precision), which predicts GPUs with no
measurement from their catalog figures. Another workload is anchored on the reference model of
its kind (transformer → BERT-large, CNN → ResNet-50 ...): its throughput on a GPU is the anchor's
predicted throughput times the ratio of their training FLOPs per sample, so each GPU's measured
efficiency on similar work carries over. Leave-one-GPU-out accuracy: docs/accuracy.md.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from gpuselect.catalog import Catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.workloads.model import Workload

DATA = Path(__file__).resolve().parent / "data" / "reference_throughput.csv"
TENSOR_ARCHS_TF32 = {"Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 2", "CDNA 3", "CDNA 4"}
GENERATION_ORDER = ("v2", "v1", "v0")  # newest software first
RIDGE = 0.1

#: Which measured reference model stands in for a workload of each kind.
ANCHORS: dict[str, str] = {
    "transformer": "bert_large_squad", "cnn": "resnet50", "mlp": "resnet50", "custom": "resnet50",
    "rnn": "gnmt", "detection": "maskrcnn", "recsys": "ncf", "speech": "tacotron2",
}


def data_precision(precision: str) -> str:
    """The reference data has fp32 (TF32 on Ampere+) and fp16 (mixed precision) rows."""
    return "fp32" if precision in ("fp32", "tf32") else "fp16"


def compute_peak(e: GpuEntry, precision: str) -> float | None:
    """The peak the estimator uses for a training precision; None if the card cannot run it."""
    if precision == "tf32":
        return e.tf32_tflops if e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops else None
    if precision == "fp32-tf32-default":
        return e.tf32_tflops if e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops else e.fp32_tflops
    if precision == "fp32":
        return e.fp32_tflops
    if precision == "bf16":
        return e.bf16_tflops
    if precision == "fp16":
        return e.fp16_tflops or e.fp32_tflops  # no tensor cores: mixed precision runs at FP32-ish rates
    raise ValueError(precision)


def reference_precision(e: GpuEntry, data_prec: str) -> str:
    """The training precision a reference row ran at on this card: its "fp32" rows used TF32
    wherever the card has it."""
    if data_prec == "fp16":
        return "fp16"
    return "tf32" if e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops else "fp32"


def _features(e: GpuEntry, peak: float) -> list[float]:
    return [math.log(peak), math.log(e.memory_bandwidth_gbs), math.log(e.fp32_tflops)]


@dataclass
class RefRow:
    generation: str
    model: str
    precision: str  # fp32 | fp16 (data precisions)
    gpu_id: str
    throughput: float
    unit: str
    batch_size: int


def load_reference_rows(catalog: Catalog, path: Path = DATA) -> list[RefRow]:
    rows: list[RefRow] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            match = catalog.match(r["gpu"])
            if match is None:
                continue
            rows.append(RefRow(r["bench_version"], r["model"], r["precision"], match.entry.id,
                               float(r["throughput_per_gpu_median"]), r["unit"], int(float(r["batch_size_per_gpu"] or 0))))
    return rows


def _solve(xs: list[list[float]], ys: list[float], n_free: int) -> list[float]:
    """Ridge least squares (no numpy at import time: plain normal equations, Gauss-Jordan)."""
    n = len(xs[0])
    a = [[0.0] * n for _ in range(n)]
    b = [0.0] * n
    for x, y in zip(xs, ys):
        for i in range(n):
            if x[i] == 0.0:
                continue
            b[i] += x[i] * y
            for j in range(n):
                a[i][j] += x[i] * x[j]
    for i in range(n):
        a[i][i] += (RIDGE if i >= n_free else 0.0) + 1e-9
    # Gauss-Jordan elimination with partial pivoting.
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        p = m[col][col]
        for j in range(col, n + 1):
            m[col][j] /= p
        for r in range(n):
            if r != col and m[r][col] != 0.0:
                f = m[r][col]
                for j in range(col, n + 1):
                    m[r][j] -= f * m[col][j]
    return [m[i][n] for i in range(n)]


@dataclass
class PerfModel:
    """Fitted per (model, data precision): intercepts per generation and slopes."""

    intercepts: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (generation, model, precision)
    slopes: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (model, precision) -> [α, β, γ]
    units: dict[str, str] = field(default_factory=dict)
    measured: dict[tuple[str, str, str, str], float] = field(default_factory=dict)  # (gen, model, prec, gpu) -> thr

    @classmethod
    def fit(cls, rows: list[RefRow], catalog: Catalog) -> "PerfModel":
        pm = cls()
        for model, prec in sorted({(r.model, r.precision) for r in rows}):
            sub = [r for r in rows if r.model == model and r.precision == prec]
            gens = sorted({r.generation for r in sub})
            xs, ys = [], []
            for r in sub:
                e = catalog.get(r.gpu_id)
                peak = compute_peak(e, "fp32-tf32-default" if prec == "fp32" else "fp16") if e else None
                if e is None or not peak:
                    continue
                onehot = [1.0 if g == r.generation else 0.0 for g in gens]
                xs.append(onehot + _features(e, peak))
                ys.append(math.log(r.throughput))
                pm.units[model] = r.unit
                pm.measured[(r.generation, model, prec, r.gpu_id)] = r.throughput
            if len(xs) < 4:
                continue
            w = _solve(xs, ys, len(gens))
            for g, a in zip(gens, w[: len(gens)]):
                pm.intercepts[(g, model, prec)] = a
            pm.slopes[(model, prec)] = w[len(gens):]
        return pm

    def predict_reference(self, model: str, precision: str, e: GpuEntry, generation: str | None = None) -> float | None:
        """Samples/s of a reference model on a GPU, in the newest benchmark generation fitted
        (or the one asked for)."""
        prec = data_precision(precision)
        slopes = self.slopes.get((model, prec))
        # The "fp32" reference rows ran TF32 wherever the card has it: predict that, then scale a
        # strict-FP32 request down by the card's FP32 / TF32 peak ratio.
        peak = compute_peak(e, "fp32-tf32-default" if precision == "fp32" else precision)
        if slopes is None or not peak:
            return None
        for gen in (generation,) if generation else GENERATION_ORDER:
            a = self.intercepts.get((gen, model, prec))
            if a is not None:
                value = math.exp(a + sum(s * f for s, f in zip(slopes, _features(e, peak))))
                if precision == "fp32" and e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops:
                    value *= min(1.0, (e.fp32_tflops / e.tf32_tflops) ** slopes[0])
                return value
        return None

    def predict(self, w: Workload, precision: str, e: GpuEntry) -> float | None:
        """Training samples/s of workload ``w`` on one GPU at its best batch, or None."""
        if compute_peak(e, precision) is None:
            return None
        if w.id in {m for m, _ in self.slopes}:
            return self.predict_reference(w.id, precision, e)
        anchor = ANCHORS.get(w.kind, "resnet50")
        from gpuselect.workloads.presets import PRESETS

        ref = PRESETS[anchor]
        base = self.predict_reference(anchor, precision, e)
        if base is None:
            return None
        return base * ref.training_flops_per_sample / w.training_flops_per_sample


_DEFAULT: PerfModel | None = None


def default_model(catalog: Catalog) -> PerfModel:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PerfModel.fit(load_reference_rows(catalog), catalog)
    return _DEFAULT
