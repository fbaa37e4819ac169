"""The worked examples session 16's notes quote, printed from whichever tree is on the path.

Rerun (this tree, and session 15's in a worktree for the "before" column):
    GPUSELECT_SHARED_DATA=../shared/data python benchmarks/session16_examples.py > docs/validation/llm-2026-11-24/session16-after.txt
    git worktree add /tmp/s15 1f5538b && GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=/tmp/s15 \
        python benchmarks/session16_examples.py --no-insert > docs/validation/llm-2026-11-24/session16-before.txt
(``--no-insert`` leaves sys.path alone, so PYTHONPATH picks the tree.)
1. DeepSpeed ZeRO-1/2 and ZeRO-Offload rows (no autocast weight casts since session 16).
2. A CPU's measured step asked to checkpoint (the benchmark record of this VM's Xeon).
3. Tacotron 2 in one hour: the recommended option (several GPUs the dataset cannot fill).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "--no-insert" not in sys.argv:
    sys.path.insert(0, str(ROOT))

# ruff: noqa: E402 - a standalone script: the imports below need the tree on sys.path, set above
import gpuselect
from gpuselect.catalog import load_catalog
from gpuselect.estimate.api import Assumptions, estimate, local_cpu_estimate
from gpuselect.workloads.presets import PRESETS


def main() -> None:
    tree = Path(gpuselect.__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"# gpuselect at commit {commit or '?'}")
    cat = load_catalog(use_overlay=False)
    w = PRESETS["llama-8b-full"]
    for sharding, offload in (("zero1", "none"), ("zero2", "none"), ("zero2", "optimizer")):
        a = Assumptions(sharding=sharding, offload=offload, counts=(8,))
        (r,) = [x for x in estimate(w, a, cat, local=[], gpu_ids=["nvidia-h100-sxm5-80gb"]).rows if x.count == 8]
        tok = f"{r.tokens_per_s:,.0f} tokens/s" if r.tokens_per_s else "no time (does not fit)"
        print(f"llama-8b-full, 8x H100 SXM5, --sharding {sharding} --offload {offload}: batch {r.batch_size}, {tok}")
    import json

    rec = json.loads((ROOT / "docs/validation/cpu-xeon-2026-11-25/bench-cpu.json").read_text())["devices"][0]
    for ck in (None, "full"):
        loc = local_cpu_estimate(
            PRESETS["simple-cnn"],
            Assumptions(batch_size=64, checkpointing=ck),
            cores=2,
            mhz=None,
            features=[],
            bench=rec,
        )
        print(
            f"simple-cnn on this VM's CPU record, batch 64, checkpointing {ck}: {loc.throughput_samples_per_s:,.0f} samples/s"
        )
    r2 = estimate(PRESETS["tacotron2"], Assumptions(deadline_hours=1.0), cat, local=[]).recommendation
    o = r2.option or {}
    print(
        f"tacotron2, 1 h deadline: stage {r2.stage_or_none}, {o.get('count')}x {o.get('name')}, batch {o.get('batch_size')}"
    )


if __name__ == "__main__":
    main()
