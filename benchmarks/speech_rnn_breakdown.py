"""Where the traced speech / RNN / Transformer-XL steps' time goes, and what the measurements
themselves say about them (issue 12, the workloads still far off).

    PYTHONPATH=. python benchmarks/speech_rnn_breakdown.py [--out docs/validation/steptime-2026-11-23]

Writes speech-rnn.txt:
1. per preset trace: ops, kernels launched, ops the host dispatches, GFLOP per sample;
2. per workload, a few GPUs: measured and predicted throughput (the shipped step factors), the
   predicted step's device / host time and its largest parts;
3. figures read straight from the shared data that no per-GPU physics can reconcile: DLE's own
   Transformer-XL and BERT rows against Lambda's and DLE's other rows on the same GPU; WaveGlow's
   fp16 over fp32 throughput per GPU; Tacotron 2's measured step time per GPU and the host time
   per dispatched op it implies (host-bound: the step barely moves with the batch).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import roofline as R
from gpuselect.estimate.fit import throughput as T
from gpuselect.estimate.perf import workload_trace
from gpuselect.workloads.presets import PRESETS

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("tacotron2", "waveglow", "gnmt", "transformerxlbase", "transformerxllarge")
GPUS = ("nvidia-a100-sxm4-80gb", "nvidia-h100-pcie-80gb", "nvidia-v100-sxm2-16gb", "nvidia-rtx-3090", "nvidia-b200")


def traces() -> list[str]:
    out = ["## Traces (one training step per sample; host = ops the framework dispatches one by one)"]
    out.append(f"{'preset':20s} {'ops':>5s} {'kernels':>8s} {'host ops':>9s} {'GFLOP/sample':>13s}  units/sample")
    for wid in WORKLOADS:
        w = T._as_run(PRESETS[wid])
        t = workload_trace(w, checkpointing=False)
        out.append(
            f"{wid:20s} {len(t.ops):5d} {t.launches_per_step():8d} {t.dispatches_per_step():9d} "
            f"{t.flops_per_sample() / 1e9:13.1f}  {w.throughput_units_per_sample:g} ({w.sample_unit})"
        )
    return out


def predictions(catalog) -> list[str]:  # type: ignore[no-untyped-def]
    out = ["", "## Measured and predicted (shipped step factors; ms per step; parts above 10 % of the device time)"]
    cases = [c for c in T.lambda_cases(catalog) + T.other_cases(catalog) if c.workload in WORKLOADS]
    for c in sorted(cases, key=lambda c: (c.workload, c.source, c.gpu, c.precision, c.count)):
        if c.gpu not in GPUS or c.count != 1 or c.spec is None:
            continue
        w, e, batch, prec, kw, _units = c.spec
        used = R.resolve_precision(e, prec)
        st, _ = A.predict_step(w, A.device_for(e), e, batch, used, **{k: v for k, v in kw.items() if k == "count"})
        parts = ", ".join(
            f"{k} {v * 1e3:.0f}" for k, v in st.breakdown.items() if v > 0.1 * st.device_s and k != "host"
        )
        out.append(
            f"{c.source:7s} {c.workload:19s} {c.gpu:23s} {used:5s} b{batch:<5d} measured {c.measured:9.0f} "
            f"predicted {c.predicted:9.0f} ({c.predicted / c.measured - 1:+.0%})  step {st.seconds * 1e3:7.0f}: "
            f"device {st.device_s * 1e3:.0f}, host {st.host_s * 1e3:.0f} ({parts})"
        )
    return out


def _rows(name: str) -> list[dict[str, str]]:
    with (T.DATA / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def data_facts() -> list[str]:
    out = ["", "## What the measurements say on their own"]
    lam: dict[tuple[str, str, str], dict[str, str]] = {}
    order = {"v2": 0, "v1": 1, "v0": 2}
    for r in _rows("reference_throughput.csv"):
        key = (r["gpu"], r["model"], r["precision"])
        if key not in lam or order[r["bench_version"]] < order[lam[key]["bench_version"]]:
            lam[key] = r
    dle = [
        r for r in _rows("other_throughput.csv") if r["source_dataset"] == "nvidia_dle_readme" and r["num_gpus"] == "1"
    ]

    out.append("")
    out.append("Transformer-XL base, one A100, tokens/s: DLE's README against Lambda's runs of the same DLE model")
    for r in dle:
        if r["model"] != "transformerxl_base" or not r["gpu"].startswith("A100"):
            continue
        lp = "fp32" if r["precision"] == "tf32" else "fp16"
        for label in ("A100 SXM4 40GB", "A100 PCIe 40GB"):
            lr = lam.get((label, "transformerxlbase", lp))
            if lr:
                ratio = float(r["throughput_per_gpu"]) / float(lr["throughput_per_gpu_median"])
                out.append(
                    f"  {r['precision']:8s} DLE {r['gpu']} b{r['batch_size_per_gpu']}: {float(r['throughput_per_gpu']):8.0f}"
                    f"   Lambda {label} b{lr['batch_size_per_gpu']} ({lr['bench_version']}): "
                    f"{float(lr['throughput_per_gpu_median']):8.0f}   DLE / Lambda {ratio:.2f}"
                )

    out.append("")
    out.append("BERT-large on one A100 80GB (DLE README): achieved TFLOP/s at 6 x 335 M FLOPs per token + attention")
    for r in dle:
        if not r["model"].startswith("bert_large") or r["gpu"] != "A100 SXM4 80GB":
            continue
        seq = 384 if "seq384" in r["model"] else int(r["model"].rsplit("seq", 1)[1])
        flops = 6 * 335e6 * seq + 12 * 24 * 1024 * seq * seq
        tf = float(r["throughput_per_gpu"]) * flops / 1e12
        peak = 156.0 if r["precision"] == "tf32" else 312.0
        out.append(
            f"  {r['model']:34s} {r['precision']:8s} b{r['batch_size_per_gpu']:>4s} {float(r['throughput_per_gpu']):6.0f} "
            f"seq/s = {tf:5.0f} TFLOP/s ({tf / peak:.0%} of the dense {peak:.0f})"
        )

    out.append("")
    out.append("WaveGlow (Lambda): fp16 over fp32 throughput per GPU (newest generation of each)")
    for (gpu, model, prec), r in sorted(lam.items()):
        if model != "waveglow" or prec != "fp16":
            continue
        r32 = lam.get((gpu, model, "fp32"))
        if r32 and float(r32["throughput_per_gpu_median"]) > 0:
            out.append(
                f"  {gpu:32s} {r['arch']:10s} {r['bench_version']}/{r32['bench_version']}  fp16 b{r['batch_size_per_gpu']:>4s}"
                f" / fp32 b{r32['batch_size_per_gpu']:>4s}: "
                f"{float(r['throughput_per_gpu_median']) / float(r32['throughput_per_gpu_median']):.2f}"
            )

    out.append("")
    t = workload_trace(PRESETS["tacotron2"], checkpointing=False)
    n = t.dispatches_per_step()
    out.append(
        f"Tacotron 2 (Lambda): measured seconds per step (batch x 567 real frames / frames per s) and the host time "
        f"per dispatched op if the step were all host ({n} ops per step at 865 padded frames)"
    )
    by_gpu: dict[str, list[str]] = defaultdict(list)
    for (gpu, model, prec), r in sorted(lam.items()):
        if model != "tacotron2":
            continue
        b = float(r["batch_size_per_gpu"])
        thr = float(r["throughput_per_gpu_median"])
        if b <= 0 or thr <= 0:
            continue
        step = b * 567 / thr
        by_gpu[gpu].append(f"{prec} b{int(b)} {step:5.2f} s ({step / n * 1e6:4.0f} us/op)")
    for gpu, items in by_gpu.items():
        out.append(f"  {gpu:32s} " + "; ".join(items))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "steptime-2026-11-23"))
    args = ap.parse_args()
    catalog = load_catalog()
    lines = ["# Speech / RNN / Transformer-XL steps (benchmarks/speech_rnn_breakdown.py)", ""]
    lines += traces() + predictions(catalog) + data_facts()
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "speech-rnn.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
