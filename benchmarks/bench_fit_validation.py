"""The local device estimate against its own benchmark: fit on its measured training steps,
validated leaving one model out.

Rerun:  PYTHONPATH=. python benchmarks/bench_fit_validation.py [--out FILE]

For every `gpuselect bench` record we have (the H100 machine's GPU and CPU, this 2-core VM's CPU
runs under varying load), the device's two effective parameters (per-op host cost, factor on
the measured rates: ``perf.fit_bench_steps``) are fitted
- on the simple CNN's steps only, and the transformer's steps predicted (out of sample);
- on the transformer's steps only, and the CNN's predicted (out of sample);
- on all steps (in sample: what the app uses).
It also prints the prediction without the fit (the measured rates and launch overhead with the
global CPU/host parameters), and, per record, the load average when it ran where known.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
from gpuselect.catalog import load_catalog
from gpuselect.estimate.fit import steps as S
from gpuselect.estimate.perf import (
    apply_bench_fit,
    bench_step_list,
    bench_trace,
    benchmarked_gpu_device,
    cpu_device,
    fit_bench_steps,
    step_time,
)

VAL = ROOT / "docs" / "validation"
H100_CORES = 16  # docs/validation/h100-2026-11-22/detect.json: 16-core Xeon


def records() -> list[tuple[str, dict[str, Any], str, str]]:
    """(label, device record, load note, group: gpu / cpu quiet / cpu loaded)."""
    out: list[tuple[str, dict[str, Any], str, str]] = []
    h = VAL / "h100-2026-11-22"
    for name in ("bench-full.json", "bench-quick.json"):
        for d in json.loads((h / name).read_text())["devices"]:
            group = "cpu quiet" if d["device"] == "cpu" else "gpu"
            out.append((f"h100-2026-11-22/{name}:{d['device']}", d, "H100 machine (16-core Xeon)", group))
    for path in sorted((VAL / "cpu-vm-2026-11-23").glob("bench-cpu-steptime-*.json")):
        for d in json.loads(path.read_text())["devices"]:
            out.append((f"cpu-vm-2026-11-23/{path.name}", d, "2-core VM, load 2.3-8.9 (README)", "cpu loaded"))
    for path in sorted((VAL / "cpu-vm-2026-11-24").glob("bench-cpu-*.json")):
        load = path.with_suffix(".load.txt")
        note = " / ".join(
            line.split("load average:")[1].strip()
            for line in (load.read_text().splitlines() if load.exists() else [])
            if "load average:" in line
        )
        group = "cpu quiet" if S.quiet(path) else "cpu loaded"
        for d in json.loads(path.read_text())["devices"]:
            out.append((f"cpu-vm-2026-11-24/{path.name}", d, f"2-core VM, load average before / after: {note}", group))
    x = VAL / "cpu-xeon-2026-11-25"  # this session's VM: a 2-core Xeon with AMX, quiet (its own measure)
    for path in sorted(x.glob("bench-cpu*.json")):
        doc = json.loads(path.read_text())
        share = (doc.get("report") or {}).get("other_cpu_share")
        group = "cpu quiet" if share is not None and share < 0.05 else "cpu loaded"
        for d in doc["devices"]:
            out.append((f"cpu-xeon-2026-11-25/{path.name}", d, f"2-core Xeon VM, others' CPU share {share}", group))
    return out


def base_device(rec: dict[str, Any], catalog: Any) -> tuple[Any, float | None]:
    """The device without the step fit, and the copy rate its steps used."""
    if rec["device"] == "cpu":
        # the record's own count where it has one (this session's 2-core VM is a Xeon too)
        cores = rec.get("logical_cores") or (H100_CORES if "Xeon" in rec.get("name", "") else 2)
        return cpu_device(rec, cores=cores, fit_steps=False), None
    e = catalog.get("nvidia-h100-sxm5-80gb")
    pinned = rec.get("host_to_device_gbs")
    return benchmarked_gpu_device(e, rec, fit_steps=False), float(pinned) if pinned else None


def predict(d: Any, h2d: float | None, model: str, batch: int) -> float:
    from dataclasses import replace

    if h2d:
        d = replace(d, h2d_gbs=h2d)
    return step_time(bench_trace(model, cpu=d.kind == "cpu"), d, batch, "fp32", optimizer="sgd-momentum").seconds


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(VAL / "cpu-vm-2026-11-24" / "bench-fit.txt"))
    args = ap.parse_args()
    catalog = load_catalog(use_overlay=False)
    lines = ["# Local device estimate against its own benchmark (benchmarks/bench_fit_validation.py)", ""]
    lines.append("err = predicted / measured samples/s - 1. LOMO = fitted on the other bench model's steps only.")
    groups = ("cpu quiet", "cpu loaded", "gpu")
    lomo: dict[str, list[float]] = {g: [] for g in groups}
    insample: dict[str, list[float]] = {g: [] for g in groups}
    unfitted: dict[str, list[float]] = {g: [] for g in groups}
    for label, rec, note, kind in records():
        steps = bench_step_list(rec)
        if not steps:
            continue
        d0, h2d = base_device(rec, catalog)
        fits = {"all": fit_bench_steps(d0, steps, h2d_gbs=h2d)}
        for m in ("simple_cnn", "transformer"):
            other = [s for s in steps if s[0] != m]
            fits[f"without {m}"] = fit_bench_steps(d0, other, h2d_gbs=h2d) if other else None
        lines.append(f"\n## {label} ({note}; {kind})")
        mm = (rec.get("matmul_tflops") or {}).get("fp32")
        lines.append(
            f"measured: fp32 matmul {mm} TFLOP/s, copy {rec.get('memory_bandwidth_gbs')} GB/s, "
            f"launch {rec.get('launch_overhead_us')} us"
        )
        for k, f in fits.items():
            if f is not None:
                lines.append(
                    f"fit {k:22s}: {f.dispatch_s * 1e6:8.1f} us per op, kernels at {1 / f.device_scale:6.3f}x the "
                    f"measured rates{'' if f.conv_scale == 1.0 else f', convolutions {1 / f.conv_scale:.3f}x that'} "
                    f"({f.steps} steps, rms log err {f.rms_log_err:.3f})"
                )
        lines.append(f"{'model':12s} {'batch':>5s} {'measured':>10s} {'unfitted':>8s} {'LOMO':>8s} {'in-sample':>9s}")
        for model, batch, seconds in steps:
            f_all, f_out = fits["all"], fits[f"without {model}"]
            e0 = seconds / predict(d0, h2d, model, batch) - 1
            ein = seconds / predict(apply_bench_fit(d0, f_all), h2d, model, batch) - 1 if f_all else math.nan
            eout = seconds / predict(apply_bench_fit(d0, f_out), h2d, model, batch) - 1 if f_out else math.nan
            unfitted[kind].append(e0)
            insample[kind].append(ein)
            if f_out is not None:
                lomo[kind].append(eout)
            lines.append(
                f"{model:12s} {batch:5d} {batch / seconds:10.1f} {100 * e0:+7.0f}% "
                f"{'' if f_out is None else f'{100 * eout:+7.0f}%':>8s} {100 * ein:+8.0f}%"
            )
    lines.append("\n## Summary (|err|: median / p90 / max; band = +-band covering 80 % on the log scale)")
    for kind in groups:
        for name, errs in (("unfitted", unfitted[kind]), ("LOMO", lomo[kind]), ("in-sample", insample[kind])):
            if not errs:
                continue
            a = sorted(abs(x) for x in errs)
            logs = sorted(abs(math.log(1 + x)) for x in errs)
            p90 = a[min(len(a) - 1, math.ceil(0.9 * len(a)) - 1)]
            band = math.exp(logs[min(len(logs) - 1, math.ceil(0.8 * len(logs)) - 1)]) - 1
            within = sum(1 for x in errs if abs(x) <= 0.35)
            lines.append(
                f"{kind:10s} {name:9s}: n {len(a):3d}  median {100 * statistics.median(a):6.1f} %  p90 {100 * p90:6.1f} %  "
                f"max {100 * a[-1]:7.1f} %  80% band +-{100 * band:.0f} %  within 35 %: {within}/{len(a)}"
            )
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
