"""DDP's all-reduce latency: the shipped "per_step" model against NCCL's per-collective one.

    PYTHONPATH=. python benchmarks/ddp_latency_models.py > docs/validation/steptime-2026-11-23/nccl-latency/ddp.txt

Session 15 measured NCCL's latency model (``CommParams.latency_model = "nccl"``) on llm-foundry's
FSDP rows and kept it off. The shipped model charges DDP 2(N-1) ring steps of 10 us once per step,
linear in N: ~20 ms a step at 1,024 GPUs, where NCCL would run a tree across nodes. This script
asks the same question of the data-parallel (DDP) rows the shared data hold (Lambda, DLE and the
other sources' 2-8 GPU rows, every multi-GPU case that is not sharded) and shows what either
model predicts from 8 to 1,024 GPUs.

Rule, fixed before the first run (session 17): switch DDP to NCCL's latency only if on these rows
the median or p90 |error| improves by at least 0.5 points and neither worsens by more than 0.3.
A smaller difference means the rows (none past 8 GPUs) cannot tell the models apart, and the
shipped model stays: the evidence we have on latency (session 15, FSDP) argued against NCCL's.
Predictions use the shipped step factors (no refit: the switch changes only multi-GPU steps).
"""

from __future__ import annotations

import copy
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import roofline as R
from gpuselect.estimate.fit import throughput as T
from gpuselect.workloads.presets import get_preset


def _stats(errs: list[float]) -> tuple[float, float, float]:
    a = sorted(abs(e) for e in errs)
    return 100 * statistics.median(a), 100 * a[min(len(a) - 1, int(0.9 * len(a)))], 100 * statistics.median(errs)


def main() -> None:
    catalog = load_catalog()
    cases = [
        c
        for c in T.lambda_cases(catalog) + T.other_cases(catalog)
        if c.count > 1 and c.spec is not None and c.spec[4].get("sharding", "none") == "none"
    ]
    base = json.loads(R.PARAMS_FILE.read_text())
    variants = {}
    for model in ("per_step", "nccl"):
        doc = copy.deepcopy(base)
        doc.setdefault("comm", {})["latency_model"] = model
        variants[model] = doc
    print("# DDP all-reduce latency: per_step (shipped) vs NCCL's per-collective model")
    print(f"DDP rows (multi-GPU, not sharded): {len(cases)}; counts {sorted({c.count for c in cases})}")
    result = {}
    for model, doc in variants.items():
        T.set_params(doc)
        errs = [T.redo(c).predicted / c.measured - 1 for c in cases]
        result[model] = _stats(errs)
        med, p90, bias = result[model]
        print(f"{model:9s} median |err| {med:.2f}%  p90 {p90:.2f}%  signed median {bias:+.2f}%")
    (m0, p0, _), (m1, p1, _) = result["per_step"], result["nccl"]
    adopt = (m0 - m1 >= 0.5 or p0 - p1 >= 0.5) and m1 - m0 <= 0.3 and p1 - p0 <= 0.3
    print(f"rule (>=0.5 point gain in median or p90, neither worse by >0.3): {'ADOPT' if adopt else 'keep per_step'}")
    print()
    print("# per-GPU samples/s, DDP, fp16 autocast, no sharding (shipped step factors)")
    rows = [("resnet50", "nvidia-a100-sxm4-80gb", 256), ("resnet50", "nvidia-h100-sxm5-80gb", 256)]
    rows += [("bert_base_squad", "nvidia-h100-sxm5-80gb", 32)]
    counts = (8, 64, 256, 1024)
    print(f"{'workload':16s} {'gpu':24s} batch " + " ".join(f"{n:>16d}" for n in counts))
    for wid, gid, batch in rows:
        w = get_preset(wid)
        e = catalog.get(gid)
        cells = []
        for n in counts:
            got = []
            for doc in variants.values():
                T.set_params(doc)
                got.append(T.predict(w, e, batch, "fp16", count=n)[0])
            cells.append(f"{got[0]:7.0f}/{got[1]:<7.0f}({100 * (got[1] / got[0] - 1):+.1f}%)")
        print(f"{wid:16s} {gid:24s} {batch:5d} " + " ".join(f"{c:>16s}" for c in cells))
    print("cells: per_step / nccl (nccl's change)")
    T.set_params(base)


if __name__ == "__main__":
    main()
