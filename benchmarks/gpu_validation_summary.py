"""The figures docs/validation/h100-2026-11-24/README.md states, computed from the files a GPU run
left there (no GPU needed):

    PYTHONPATH=. python benchmarks/gpu_validation_summary.py docs/validation/h100-2026-11-24 \
        [--older docs/validation/h100-2026-11-22] > docs/validation/h100-2026-11-24/summary.txt

1. The memory model's overhead: the CUDA context (NVML used - torch reserved, less what NVML shows
   on the idle card) and the allocator's slack (peak reserved / peak allocated - 1).
2. The benchmark's simple-CNN curve against `estimate` on the card's catalog row (SGD, fp32, as the
   benchmark trains it), and against an older record of the same card.
3. Run to run: the steps measured on two machine starts, GPU-bound Llama apart from the presets.
4. Where a profiled step's GPU time goes (gpu_step_profile.py) beside the model's time per op kind.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import roofline as R
from gpuselect.workloads.presets import PRESETS

GIB = 2**30
GPU = "nvidia-h100-sxm5-80gb"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _bench_curve(path: Path, model: str = "simple_cnn") -> dict[int, float]:
    doc = json.loads(path.read_text())
    dev = next(d for d in doc["devices"] if d["kind"] != "cpu")
    return {s["batch_size"]: s["samples_per_s"] for s in dev["train_steps"] if s["model"] == model}


def overhead(root: Path) -> list[str]:
    mem = json.loads((root / "run1" / "memory-gpu.json").read_text())
    det = json.loads((root / "run1" / "detect.json").read_text())
    snap = det.get("snapshot") or det
    idle = snap["gpus"][0]["memory_used_bytes"] / GIB
    used_less_reserved = [(r["nvml_used"] - r["reserved"]) / GIB for r in mem if r["nvml_used"]]
    med = statistics.median(used_less_reserved)
    out = [
        "## 1. Overhead (run1/memory-gpu.json, run1/detect.json, steptime/run-c.jsonl)",
        f"NVML used - torch reserved over {len(used_less_reserved)} runs: median {med:.3f} GiB "
        f"(min {min(used_less_reserved):.3f}, max {max(used_less_reserved):.3f}); idle card {idle:.3f} GiB; "
        f"context {med - idle:.2f} GiB",
    ]
    slack = {"decoder (memory-gpu)": [r["reserved"] / r["allocated"] - 1 for r in mem if r["allocated"]]}
    for r in _jsonl(root / "steptime" / "run-c.jsonl"):
        if r.get("peak_alloc_gib"):
            slack.setdefault(r["part"], []).append(r["peak_reserved_gib"] / r["peak_alloc_gib"] - 1)
    for k, v in slack.items():
        out.append(f"allocator slack, {k}: median {100 * statistics.median(v):.1f} % over {len(v)} steps")
    return out


def small_curve(root: Path, older: Path | None) -> list[str]:
    cat = load_catalog()
    now = _bench_curve(root / "run1" / "bench-full.json")
    old = _bench_curve(older / "bench-full.json") if older else {}
    out = [
        "",
        "## 2. Simple CNN, benchmark record vs `estimate --precision fp32 --optimizer sgd` on the catalog row",
        f"{'batch':>5s} {'predicted':>10s} {'measured':>10s} {'err':>6s} {'older':>10s} {'err':>6s} {'now/older':>9s}",
    ]
    errs = []
    for b, m in sorted(now.items()):
        a = A.Assumptions(precision="fp32", batch_size=b, counts=(1,), optimizer="sgd")
        p = A.estimate(PRESETS["simple-cnn"], a, cat, gpu_ids=[GPU], local=[]).rows[0].throughput_samples_per_s or 0.0
        errs.append(abs(p / m - 1))
        o = old.get(b)
        out.append(
            f"{b:5d} {p:10,.0f} {m:10,.0f} {100 * (p / m - 1):+5.0f}% "
            + (f"{o:10,.0f} {100 * (p / o - 1):+5.0f}% {m / o:9.2f}" if o else "")
        )
    out.append(f"median |err| against this record: {100 * statistics.median(errs):.1f} %")
    return out


def repeat(root: Path) -> list[str]:
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["workload"], r["precision"], r["batch"], r.get("ckpt", False))

    def rate(r: dict[str, Any]) -> float | None:
        return r.get("tokens_per_s") or r.get("samples_per_s")

    st = root / "steptime"
    a = {key(r): r for r in _jsonl(st / "run-a.jsonl") if r["part"] != "meta"}
    b = {key(r): r for f in ("run-b-llm.jsonl", "run-b-presets.jsonl") for r in _jsonl(st / f) if r["part"] != "meta"}
    by: dict[str, list[float]] = defaultdict(list)
    for k, ra in a.items():
        rb = b.get(k)
        if rb and rate(ra) and rate(rb):
            by[ra["part"]].append(abs(rate(rb) / rate(ra) - 1))  # type: ignore[operator]
    out = ["", "## 3. Run to run (run-b / run-a - 1)"]
    for part, v in sorted(by.items()):
        v.sort()
        out.append(
            f"{part:7s} n={len(v):3d}  |diff| median {100 * statistics.median(v):.1f} %  worst {100 * v[-1]:.1f} %"
        )
    return out


def profile(root: Path) -> list[str]:
    cat = load_catalog()
    d = A.device_for(cat.get(GPU))
    out = ["", "## 4. Profiled step (steptime/profile.json) vs the model's time per op kind, seconds per step"]
    out.append(
        "measured 'other' includes the optimizer's profiler range (Optimizer.step#...), a CPU range counted with the kernels"
    )
    for p in json.loads((root / "steptime" / "profile.json").read_text()):
        w = PRESETS[p["workload"]]
        a = A.Assumptions(precision="bf16-true", batch_size=p["batch"], counts=(1,), checkpointing="none")
        row = A.estimate(w, a, cat, gpu_ids=[GPU], local=[]).rows[0]
        by: dict[str, float] = defaultdict(float)
        for o in A.trace_cached(w, False).ops:
            by[o.kind.value] += R.op_time(d, o, p["batch"], row.precision_used)[0]
        ann = sum(k["s_per_step"] for k in p["top_kernels"] if k["name"].startswith("Optimizer.step"))
        m = p["kernel_s_by_class"]
        bd = row.time_breakdown_s
        rest = (
            by.get("elementwise", 0.0)
            + by.get("embedding", 0.0)
            + bd.get("optimizer", 0.0)
            + bd.get("kernel_floor", 0.0)
        )
        out += [
            f"{p['workload']} micro-batch {p['batch']} (wall {p['wall_step_s']:.3f} s under the profiler; kernels {p['kernel_s_total']:.3f} s)",
            f"  GEMM       measured {m['gemm']:.3f}  model {by.get('gemm', 0.0):.3f}  model/measured {by.get('gemm', 0.0) / m['gemm']:.2f}",
            f"  attention  measured {m['attention']:.3f}  model {by.get('attention', 0.0):.3f}  model/measured "
            f"{by.get('attention', 0.0) / m['attention']:.2f}",
            f"  the rest   measured {m['other'] - ann:.3f} (+{ann:.3f} optimizer range)  model {rest:.3f} "
            "(elementwise, embedding, optimizer, kernel floors)",
        ]
        fp32 = sum(k["s_per_step"] for k in p["top_kernels"] if "f32f32" in k["name"] and k["class"] == "gemm")
        if fp32:
            out.append(f"  fp32 FFMA GEMMs (peft's fp32 adapters, no tensor cores) among the top kernels: {fp32:.3f}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("root", type=Path)
    ap.add_argument("--older", type=Path, default=None, help="an older validation folder of the same card")
    args = ap.parse_args()
    lines = [f"# {args.root} (benchmarks/gpu_validation_summary.py)", ""]
    lines += overhead(args.root) + small_curve(args.root, args.older) + repeat(args.root) + profile(args.root)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
