"""Test the estimator on measurements it was NOT fitted on: other software, other models, AMD cards.

Rerun:  PYTHONPATH=. python benchmarks/estimator_external.py
(writes docs/accuracy-external.md and gpuselect/estimate/data/external_band.json, which the app
reads: AMD rows and multi-GPU rows carry these validated errors on top of the workload's band)

Data: gpuselect/estimate/data/other_throughput.csv (see the README there):
1. NeuSight's measured FP32 (no TF32) transformer training steps (fwd+bwd, no optimizer step) of
   BERT-large, GPT-2 large, OPT-1.3B, GPT-3 XL and GPT-3 2.7B on P4, P100, T4, V100, L4, A100 and
   AMD MI100/MI210/MI250. None of these models is a reference model: the app predicts them the way
   it predicts any user workload (transformer arithmetic, anchored on BERT-large) — and no AMD
   card is in the calibration data. Compared as ratios to the V100 PCIe 32GB at the same model,
   sequence and batch (one software stack), like the leave-one-GPU-out test.
2. NVIDIA DeepLearningExamples README tables: A100 against V100 on the reference models, measured
   with NVIDIA's own containers and data loaders (not Lambda's), single GPU; and the multi-GPU
   rows, which test the data-parallel scaling model (per-GPU throughput at N GPUs / at 1).

The app's shipped calibration (data/calibration.json) is used as is; nothing here is fitted.
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from gpuselect.catalog import load_catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.estimate import api
from gpuselect.estimate.perf import default_model
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.transformer import TransformerShape, transformer_workload

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "gpuselect" / "estimate" / "data" / "other_throughput.csv"
OUT = ROOT / "docs" / "accuracy-external.md"
BANDS = (
    ROOT / "gpuselect" / "estimate" / "data" / "external_band.json"
)  # the retired per-model estimator's bands; the app now takes the step-time regime bands (steptime_bands.json)
REFERENCE_GPU = "V100 PCIe 32GB"

# Shapes from the models' published configs (Hugging Face model cards / the GPT-3 paper, table 2.1).
# switchxl4 (a mixture-of-experts model) is left out: the app has no MoE arithmetic.
SHAPES = {
    "bert_large": {"layers": 24, "hidden": 1024, "heads": 16, "vocab": 30522, "ffn": 4096, "lm_head": False},
    "gpt2_large": {"layers": 36, "hidden": 1280, "heads": 20, "vocab": 50257, "ffn": 5120},
    "opt_13": {"layers": 24, "hidden": 2048, "heads": 32, "vocab": 50272, "ffn": 8192},
    "gpt3_xl": {"layers": 24, "hidden": 2048, "heads": 16, "vocab": 50257, "ffn": 8192},
    "gpt3_27": {"layers": 32, "hidden": 2560, "heads": 32, "vocab": 50257, "ffn": 10240},
}
# DeepLearningExamples model names -> the app's reference presets, and precisions -> the app's.
DLE_MODELS = {
    "resnet50_v1.5": "resnet50",
    "ssd300": "ssd",
    "bert_large_squad_finetune_seq384": "bert_large_squad",
    "transformerxl_base": "transformerxlbase",
    "gnmt": "gnmt",
}
DLE_PRECISION = {"tf32": "tf32", "fp32": "fp32", "amp_fp16": "fp16"}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def spec(catalog, label: str) -> GpuEntry:
    m = catalog.match(label)
    if m is None:
        sys.exit(f"no catalog entry matches {label!r}")
    return m.entry.one_die() if "1 GCD" in label else m.entry


def neusight(rows: list[dict], catalog, perf) -> tuple[list[str], dict[str, list[float]]]:
    lines = []
    groups: dict[tuple, dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r["source_dataset"] != "neusight_asplos25_label" or r["mode"] != "train" or r["model"] not in SHAPES:
            continue
        groups[(r["model"], int(r["seq_len"]), int(r["batch_size_per_gpu"]))][r["gpu"]] = float(r["throughput_per_gpu"])
    errors: dict[str, list[float]] = defaultdict(list)  # gpu label -> signed ratio errors
    absolute: list[float] = []
    lines.append(
        "| model | seq | batch | GPU | measured seq/s | predicted | measured ratio to V100 | predicted ratio | error |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for (model, seq, batch), by_gpu in sorted(groups.items()):
        w = transformer_workload(
            model,
            model,
            TransformerShape(seq_len=seq, **SHAPES[model]),
            description="",
            dataset_size=1,
            epochs=1,
            batch_size=batch,
            source="",
        )
        pred = {g: perf.predict(w, "fp32", spec(catalog, g), batch=batch) for g in by_gpu}
        for g, v in by_gpu.items():
            if pred[g]:
                absolute.append(pred[g] / v - 1)
        if REFERENCE_GPU not in by_gpu:
            continue
        for g, v in sorted(by_gpu.items()):
            if g == REFERENCE_GPU or not pred[g]:
                continue
            meas_ratio = v / by_gpu[REFERENCE_GPU]
            pred_ratio = pred[g] / pred[REFERENCE_GPU]
            err = pred_ratio / meas_ratio - 1
            errors[g].append(err)
            lines.append(
                f"| {model} | {seq} | {batch} | {g} | {v:.3g} | {pred[g]:.3g} | {meas_ratio:.2f} | {pred_ratio:.2f} | {100 * err:+.0f} % |"
            )
    errors["_absolute"] = absolute
    return lines, errors


def dle(rows: list[dict], catalog, perf) -> tuple[list[str], list[float], list[str], list[float]]:
    single: dict[tuple, dict[str, tuple[float, int, str]]] = defaultdict(dict)
    multi: list[tuple] = []
    for r in rows:
        if r["source_dataset"] != "nvidia_dle_readme" or r["model"] not in DLE_MODELS or r["mode"] != "train":
            continue
        pc = "fp16" if r["precision"] == "amp_fp16" else "fp32"
        n = int(r["num_gpus"])
        key = (DLE_MODELS[r["model"]], pc)
        if n == 1:
            single[key][r["gpu"]] = (
                float(r["throughput_per_gpu"]),
                int(float(r["batch_size_per_gpu"])),
                r["precision"],
            )
        multi.append(
            (key, r["gpu"], n, float(r["throughput_per_gpu"]), int(float(r["batch_size_per_gpu"])), r["precision"])
        )
    lines = [
        "| model | precision | A100 | V100 | measured A100/V100 | predicted | error |",
        "|---|---|---|---|---|---|---|",
    ]
    errs: list[float] = []
    for (model, _pc), by_gpu in sorted(single.items()):
        a100 = [g for g in by_gpu if g.startswith("A100")]
        v100 = [g for g in by_gpu if g.startswith("V100")]
        if not a100 or not v100:
            continue
        ga, gv = a100[0], v100[0]
        (ta, ba, pa), (tv, bv, pv) = by_gpu[ga], by_gpu[gv]
        pred_a = perf.predict_reference(model, DLE_PRECISION[pa], spec(catalog, ga), batch=ba)
        pred_v = perf.predict_reference(model, DLE_PRECISION[pv], spec(catalog, gv), batch=bv)
        if not pred_a or not pred_v:
            continue
        err = (pred_a / pred_v) / (ta / tv) - 1
        errs.append(err)
        lines.append(
            f"| {model} | {pa} vs {pv} | {ga} | {gv} | {ta / tv:.2f} | {pred_a / pred_v:.2f} | {100 * err:+.0f} % |"
        )
    # Multi-GPU: per-GPU throughput at N GPUs over that at 1, measured vs the app's model.
    ones = {(key, g, p): (t, b) for key, g, n, t, b, p in multi if n == 1}
    mlines = [
        "| model | precision | GPU | GPUs | measured per-GPU scaling | predicted | error |",
        "|---|---|---|---|---|---|---|",
    ]
    merrs: list[float] = []
    for key, g, n, t, b, p in sorted(multi):
        if n == 1 or (key, g, p) not in ones:
            continue
        t1, _b1 = ones[(key, g, p)]
        model = key[0]
        a = api.Assumptions(precision=DLE_PRECISION[p], batch_size=b, max_gpus=n)
        e = spec(catalog, g)
        rows_ = [api._row(PRESETS[model], e, c, a, perf, 0.0) for c in (1, n)]
        if not all(r.throughput_samples_per_s for r in rows_):
            continue
        pred = rows_[1].throughput_samples_per_s / n / rows_[0].throughput_samples_per_s
        meas = t / t1
        err = pred / meas - 1
        merrs.append(err)
        mlines.append(f"| {model} | {p} | {g} | {n} | {meas:.3f} | {pred:.3f} | {100 * err:+.1f} % |")
    return lines, errs, mlines, merrs


def summary(errs: list[float]) -> str:
    a = [abs(x) for x in errs]
    return f"median {100 * pct(a, 0.5):.0f} %, 90th percentile {100 * pct(a, 0.9):.0f} % (n = {len(a)})"


def main() -> None:
    catalog = load_catalog()
    perf = default_model()
    with DATA.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    ns_lines, ns_err = neusight(rows, catalog, perf)
    dle_lines, dle_err, m_lines, m_err = dle(rows, catalog, perf)
    absolute = ns_err.pop("_absolute")
    amd = [x for g, es in ns_err.items() if g.startswith("AMD") for x in es]
    nvidia = [x for g, es in ns_err.items() if not g.startswith("AMD") for x in es]
    out = [
        "# Estimator accuracy on data it was not fitted on",
        "",
        f"Generated by `benchmarks/estimator_external.py` on {time.strftime('%Y-%m-%d')} — rerun with "
        "`PYTHONPATH=. python benchmarks/estimator_external.py`. Uses the shipped calibration unchanged; "
        "the data (`gpuselect/estimate/data/other_throughput.csv`) played no part in fitting it. "
        "Error = predicted ratio / measured ratio − 1.",
        "",
        "## Unseen transformer models, FP32 without TF32, incl. AMD cards (NeuSight measurements)",
        "",
        f"- NVIDIA cards: **{summary(nvidia)}**",
        f"- AMD cards (no AMD card in the calibration data): **{summary(amd)}**",
        f"- Absolute throughput (not a ratio; other software and no optimizer step in these runs): {summary(absolute)}",
        "",
        "Per GPU (signed median error of its ratio to the V100):",
        "",
    ]
    for g, es in sorted(ns_err.items()):
        out.append(f"- {g}: {100 * statistics.median(es):+.0f} % (n = {len(es)})")
    out += [
        "",
        *ns_lines,
        "",
        "## Reference models under NVIDIA's own software (DeepLearningExamples READMEs)",
        "",
        f"A100 over V100, single GPU: **{summary(dle_err)}**",
        "",
        *dle_lines,
        "",
        "## Data-parallel scaling (DeepLearningExamples multi-GPU rows)",
        "",
        f"Per-GPU throughput at N GPUs relative to one GPU, same batch per GPU: **{summary(m_err)}**",
        "",
        *m_lines,
        "",
    ]
    OUT.write_text("\n".join(out) + "\n", encoding="utf-8")
    bands = {
        "p90_amd": round(pct([abs(x) for x in amd], 0.9), 3),
        "n_amd": len(amd),
        "p90_scaling": round(pct([abs(x) for x in m_err], 0.9), 3),
        "n_scaling": len(m_err),
        "generated_by": "benchmarks/estimator_external.py",
        "date": time.strftime("%Y-%m-%d"),
    }
    BANDS.write_text(json.dumps(bands, indent=2) + "\n", encoding="utf-8")
    print("\n".join(out[:14]))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
