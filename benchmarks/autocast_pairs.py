"""What mixed precision's casts cost on our H100, from its own steps: each preset trained at
batch 1 in TF32 and in bf16 under torch.autocast, the same model and harness.

    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/autocast_pairs.py \
        > docs/validation/h100-2026-11-24/steptime/autocast.txt

Where the host bounds the step (the model's TF32 step is overhead-bound), the bf16 step's extra time
is the casts: autocast's weight cast before each weighted GEMM or convolution and autograd's
gradient cast back (``perf._autocast_weight_uses`` counts the dispatched instances). Per run of
``docs/validation/h100-2026-11-24/steptime`` (run-a, run-b-presets, run-c: three runs of the same
harness), the extra time per weighted GEMM against what the model charges at the H100 catalog row's
host (two ops).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import roofline as R
from gpuselect.estimate.perf import _autocast_weight_uses, step_time, workload_trace
from gpuselect.workloads.presets import get_preset

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "validation" / "h100-2026-11-24" / "steptime"


def main() -> int:
    d = R.catalog_device(load_catalog().get("nvidia-h100-sxm5-80gb"))
    charge = 2 * d.dispatch_s * 1e6
    print("# Autocast's casts on our H100 (benchmarks/autocast_pairs.py): bf16 against TF32 at batch 1")
    print(
        f"the model charges two ops per weighted GEMM instance: {charge:.1f} us at the catalog row's host "
        f"({d.dispatch_s * 1e6:.1f} us per op); us/GEMM: (bf16 step - TF32 step) / weighted GEMMs"
    )
    all_per: list[float] = []
    for run in ("run-a", "run-b-presets", "run-c"):
        steps: dict[tuple[str, str], float] = {}
        for line in (RUNS / f"{run}.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r.get("part") == "preset" and r.get("batch") == 1 and r.get("step_s") and not r.get("checkpointing"):
                steps[(r["workload"], r["precision"])] = float(r["step_s"])
        print(f"\n## {run}")
        print(f"{'preset':20s} {'TF32 ms':>8s} {'bf16 ms':>8s} {'GEMMs':>6s} {'us/GEMM':>8s}  model's TF32 step")
        per: list[float] = []
        for (wid, prec), tf32 in sorted(steps.items()):
            if prec != "tf32" or (wid, "bf16") not in steps:
                continue
            trace = workload_trace(get_preset(wid), checkpointing=False)
            n = _autocast_weight_uses(trace)
            bound = step_time(trace, d, 1, "tf32").bound
            us = (steps[(wid, "bf16")] - tf32) / max(1, n) * 1e6
            used = bound == "overhead" and n > 0
            if used:
                per.append(us)
            print(
                f"{wid:20s} {tf32 * 1e3:8.2f} {steps[(wid, 'bf16')] * 1e3:8.2f} {n:6d} {us:8.1f}  {bound}"
                + ("" if used else " (left out: not host-bound in the model)")
            )
        if per:
            print(
                f"host-bound presets: {len(per)}, us per weighted GEMM {min(per):.0f} to {max(per):.0f}, "
                f"median {statistics.median(per):.0f}"
            )
        all_per += per
    print(
        f"\nall runs: {len(all_per)} pairs, median {statistics.median(all_per):.0f} us per weighted GEMM "
        f"(model {charge:.0f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
