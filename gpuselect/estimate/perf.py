"""The performance model: training throughput of a workload on any catalog GPU.

For each reference model ``m`` and precision class (fp32 = TF32 where the card has it; fp16 =
mixed precision), fitted on measured single-GPU throughputs (``data/reference_throughput.csv``)
by ``calibrate.py``::

    time per sample = s[m, generation] · ( 1/(e[arch] · C) + r[m]/BW + o[m] + q[m]/batch
                                           + u[m]/(batch · BW) )

with ``C`` the card's peak for the precision, ``BW`` its memory bandwidth, ``e`` one efficiency
per GPU architecture, ``o`` a per-sample cost no GPU speeds up, ``q`` a per-step cost shared
by the batch and ``u`` per-step memory traffic (weights and optimizer state, once a step) shared
by the batch (a calibration written before ``u`` existed reads as ``u = 0``). The fitted values
live in ``data/calibration.json`` (written, with the validated error bands, by
``benchmarks/estimator_accuracy.py``); the app only reads them — no numpy, no fit at start-up. The newest benchmark generation's level is used for predictions.

Another workload is anchored on the reference model of its kind (transformer → BERT-large, CNN →
ResNet-50 ...): its throughput on a GPU is the anchor's at the same batch times the ratio of their
training FLOPs per sample, so each GPU's fitted efficiency on similar work carries over.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuselect.catalog import Catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.errors import DataError
from gpuselect.estimate.calibrate import arch_key, compute_tflops, precision_class
from gpuselect.workloads.model import Workload

DATA = Path(__file__).resolve().parent / "data" / "reference_throughput.csv"
CALIBRATION = Path(__file__).resolve().parent / "data" / "calibration.json"
GENERATION_ORDER = ("v2", "v1", "v0")  # newest software first
TENSOR_ARCHS_TF32 = {"Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 2", "CDNA 3", "CDNA 4"}

#: Which measured reference model stands in for a workload of each kind.
ANCHORS: dict[str, str] = {
    "transformer": "bert_large_squad", "cnn": "resnet50", "mlp": "resnet50", "custom": "resnet50",
    "rnn": "gnmt", "detection": "maskrcnn", "recsys": "ncf", "speech": "tacotron2",
}


def data_precision(precision: str) -> str:
    return precision_class(precision)


def compute_peak(e: GpuEntry, precision: str) -> float | None:
    """The peak used for a training precision; None if the card cannot run it at all."""
    if precision == "tf32":
        return e.tf32_tflops if e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops else None
    if precision == "bf16":
        return e.bf16_tflops
    if precision in ("fp32", "fp16"):
        return compute_tflops(e, precision)
    raise ValueError(precision)


def reference_precision(e: GpuEntry, data_prec: str) -> str:
    """The training precision a reference row ran at on this card ("fp32" rows used TF32)."""
    if data_prec == "fp16":
        return "fp16"
    return "tf32" if e.architecture in TENSOR_ARCHS_TF32 and e.tf32_tflops else "fp32"


@dataclass
class RefRow:
    generation: str
    model: str
    precision: str
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


@dataclass
class PerfModel:
    models: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # model -> pc -> {r, o, q, u, log_k{gen}}
    arch_eff: dict[str, dict[str, float]] = field(default_factory=dict)  # pc -> arch -> e
    typical_batch: dict[str, int] = field(default_factory=dict)  # model -> median measured batch

    @classmethod
    def from_json(cls, path: Path = CALIBRATION) -> "PerfModel":
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            return cls(doc["models"], doc["arch_eff"], {k: int(v) for k, v in doc.get("typical_batch", {}).items()})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"the estimator's calibration {path.name} is missing or corrupt ({exc}); "
                            "rerun benchmarks/estimator_accuracy.py") from exc

    def to_json(self) -> dict[str, Any]:
        return {"models": self.models, "arch_eff": self.arch_eff, "typical_batch": self.typical_batch}

    def predict_reference(self, model: str, precision: str, e: GpuEntry, generation: str | None = None,
                          batch: int | None = None) -> float | None:
        """Throughput of a reference model on a GPU in its benchmark's unit (reference_throughput.csv:
        images, sequences, tokens, mel frames or audio samples per second; newest generation unless
        one is named). ``predict`` turns it into samples/s."""
        pc = precision_class(precision)
        m = self.models.get(model, {}).get(pc)
        peak = compute_peak(e, precision)
        if m is None or not peak:
            return None
        log_k = m["log_k"]
        gen = generation if generation else next((g for g in GENERATION_ORDER if g in log_k), None)
        if gen not in log_k:
            return None
        eff = self.arch_eff.get(pc, {}).get(arch_key(e), 1.0)
        n = max(1, batch or self.typical_batch.get(model, 32))
        bw = e.memory_bandwidth_gbs / 1000.0
        # u (per-step memory traffic) is absent from calibrations written before it existed: 0.
        inner = 1.0 / (eff * peak) + m["r"] / bw + m["o"] + m["q"] / n + m.get("u", 0.0) / (n * bw)
        return math.exp(log_k[gen]) / inner

    def predict(self, w: Workload, precision: str, e: GpuEntry, batch: int | None = None) -> float | None:
        """Training samples/s of workload ``w`` on one GPU at a per-GPU batch, or None."""
        if compute_peak(e, precision) is None:
            return None
        if w.id in self.models:
            units = self.predict_reference(w.id, precision, e, batch=batch)
            return None if units is None else units / w.throughput_units_per_sample
        anchor = ANCHORS.get(w.kind, "resnet50")
        from gpuselect.workloads.presets import PRESETS

        ref = PRESETS[anchor]
        base = self.predict_reference(anchor, precision, e, batch=batch)
        if base is None:
            return None
        # The anchor's samples/s (its benchmark may count tokens or mel frames), scaled by FLOPs.
        return base / ref.throughput_units_per_sample * ref.training_flops_per_sample / w.training_flops_per_sample


_DEFAULT: PerfModel | None = None


def default_model(catalog: Catalog | None = None) -> PerfModel:
    """The shipped calibration (the catalog argument is kept for callers; specs come per GPU)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PerfModel.from_json()
    return _DEFAULT


def fit_model(catalog: Catalog, exclude_gpu: str | None = None, iterations: int = 4) -> PerfModel:
    """Fit from the reference rows (needs numpy; scripts and tests only)."""
    import statistics

    from gpuselect.estimate import calibrate as C

    def spec_for(label: str) -> GpuEntry | None:
        m = catalog.match(label)
        return None if m is None else m.entry

    obs, _missing = C.build_observations(C.read_reference_rows(DATA), spec_for)
    if exclude_gpu is not None:
        ids = {o.gpu: getattr(spec_for(C.NAME_FIXES.get(o.gpu, o.gpu)), "id", None) for o in obs}
        obs = [o for o in obs if ids[o.gpu] != exclude_gpu]
    f = C.fit(obs, iterations=iterations)
    pm = PerfModel()
    for (model, pc), r in f.r.items():
        gens = {v: k for (mm, p, v), k in f.log_k.items() if mm == model and p == pc}
        pm.models.setdefault(model, {})[pc] = {"r": r, "o": f.o[(model, pc)], "q": f.q[(model, pc)], "u": f.u[(model, pc)],
                                             "log_k": gens}
    for (arch, pc), e in f.e.items():
        pm.arch_eff.setdefault(pc, {})[arch] = e
    for model in {o.model for o in obs}:
        pm.typical_batch[model] = int(statistics.median(o.batch for o in obs if o.model == model))
    return pm
