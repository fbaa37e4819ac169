"""The default checkpointing choice, per option: the row without checkpointing, with full
checkpointing, and what the default (``--checkpointing`` not given) shows.

    PYTHONPATH=. python benchmarks/checkpointing_choice.py > docs/validation/llm-2026-11-24/checkpointing-choice.txt

Before session 9 the default was the "none" row wherever it fitted. Now, where memory caps that
row's batch below the workload's own, the default is the faster of the two. The model's figures;
no measurement of these runs exists in ../shared/data.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.workloads.presets import PRESETS

CASES = (
    ("llama-8b-full", 8, ("nvidia-rtx-a6000", "nvidia-l40s", "nvidia-h100-sxm5-80gb")),
    ("llama-8b-full", 4, ("nvidia-rtx-a6000", "nvidia-l40s", "nvidia-h100-sxm5-80gb")),
    ("llama-70b-full", 8, ("amd-mi300x", "amd-mi325x", "amd-mi355x", "nvidia-b200")),
)


def main() -> int:
    catalog = load_catalog(use_overlay=False)
    print("# Default checkpointing: none, full, and what the default shows (benchmarks/checkpointing_choice.py)")
    print("tokens/s per GPU; batch per GPU; time for the preset's dataset and epochs; '-' does not fit")
    print()
    print(f"{'workload':15s} {'GPUs':>4s} {'card':24s} {'none':>20s} {'full':>20s} {'default':>28s}")
    for wid, n, cards in CASES:
        w = PRESETS[wid]
        for gid in cards:
            cells = []
            for ck in ("none", "full", None):
                r = A.estimate(w, A.Assumptions(counts=(n,), checkpointing=ck), catalog, gpu_ids=[gid], local=[]).rows[
                    0
                ]
                if not r.fits or r.tokens_per_s is None or r.total_time_h is None:
                    cells.append("-")
                    continue
                cell = f"b{r.batch_size} {r.tokens_per_s / n:,.0f} {r.total_time_h:.1f} h"
                cells.append(cell + (f" ({r.checkpointing})" if ck is None else ""))
            print(f"{wid:15s} {n:4d} {gid:24s} {cells[0]:>20s} {cells[1]:>20s} {cells[2]:>28s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
