"""The worked examples docs/accuracy.md's "Session 15" quotes (the physics review's memory and
communication fixes), as `gpuselect estimate` computes them on the code PYTHONPATH points at:
run it on this tree and on session 14's (3beb844) to see each figure before and after.

    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/review15_examples.py
    git worktree add /tmp/s14 3beb844 && PYTHONPATH=/tmp/s14 python benchmarks/review15_examples.py
"""

from __future__ import annotations

import json
import subprocess
import sys

from gpuselect.catalog import load_catalog
from gpuselect.estimate import parallel
from gpuselect.estimate.api import Assumptions, estimate
from gpuselect.workloads.presets import PRESETS


def row(wid: str, gpu: str, count: int, **kw: object) -> object:
    rows = estimate(PRESETS[wid], Assumptions(counts=(count,), **kw), CATALOG, gpu_ids=[gpu], local=[]).rows  # type: ignore[arg-type]
    return rows[0]


def show(label: str, r: object) -> None:
    thr = getattr(r, "throughput_samples_per_s", None)
    batch, count = getattr(r, "batch_size", None), getattr(r, "count", 1)
    step = f"{batch * count / thr:.2f} s a step" if thr and batch else "no step (does not fit)"
    print(
        f"{label}: peak {getattr(r, 'peak_memory_gb', None)} GiB per GPU, fits {getattr(r, 'fits', None)}, "
        f"batch {batch}, {step}"
    )


CATALOG = load_catalog(use_overlay=False)
ROOT = parallel.__file__.rsplit("/gpuselect/", 1)[0]  # the tree whose code runs
head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
print(f"# gpuselect at commit {head.stdout.strip() or '?'}")
for gpu in ("nvidia-l40s", "nvidia-a100-pcie-40gb"):
    for ck in ("full", "none"):
        show(
            f"llama-8b-full, 1x {gpu}, --offload optimizer, batch 1, checkpointing {ck}",
            row("llama-8b-full", gpu, 1, offload="optimizer", batch_size=1, checkpointing=ck),
        )
show(
    "llama-3b-full, 8x H100 SXM5, --sharding none, batch 2, no checkpointing",
    row("llama-3b-full", "nvidia-h100-sxm5-80gb", 8, sharding="none", batch_size=2, checkpointing="none"),
)
for sharding in ("none", "zero1"):
    show(
        f"llama-1b-full, 8x A100 PCIe 80GB, --sharding {sharding}, batch 4, no checkpointing",
        row("llama-1b-full", "nvidia-a100-pcie-80gb", 8, sharding=sharding, batch_size=4, checkpointing="none"),
    )
show(
    "llama-8b-full, 8x A100 PCIe 40GB, --offload optimizer --sharding none, batch 4",
    row("llama-8b-full", "nvidia-a100-pcie-40gb", 8, offload="optimizer", sharding="none", batch_size=4),
)
mi = CATALOG.get("amd-mi250x")
die = mi.one_die() if hasattr(mi, "one_die") else mi  # what the estimator trains on: one GCD
bw, name = parallel.link_bandwidth(die, 8, 8, None, parallel.CommParams())
print(f"MI250X die (GCD), 8 ranks in a box: {bw:.0f} GB/s per direction after efficiency over {name}")
ARGS = ["--batch-size", "8", "--gpus", "nvidia-h100-sxm5-80gb", "--count", "1", "--format", "json"]
for mode in ("full", "lora"):
    # as a user asks it (the CLI applies --mode), on the same code
    out = subprocess.run(
        [sys.executable, "-m", "gpuselect", "estimate", "--workload", "gpt2-124m", "--mode", mode, *ARGS],
        capture_output=True,
        text=True,
        check=False,
    )
    rows = json.loads(out.stdout)["rows"] if out.returncode == 0 else []
    print(
        f"gpt2-124m --mode {mode}, 1x H100 SXM5, batch 8: "
        + (f"{rows[0]['tokens_per_s']:,.0f} tokens/s" if rows else "n/a")
    )
