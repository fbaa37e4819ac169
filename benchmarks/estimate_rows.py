"""Every preset's rows over the whole catalog, as JSON: to check that a change meant to be a pure
refactor or speed-up changes no figure.

Rerun (at each commit, e.g. in two git worktrees), then compare the two files:
    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/estimate_rows.py /tmp/rows-A.json
    ... at the other commit: ... /tmp/rows-B.json
    cmp /tmp/rows-A.json /tmp/rows-B.json && echo identical
It prints how many rows it wrote. Each row: GPU id, count, samples/s and total hours, with
``estimate()``'s default assumptions and no local machine; floats written by ``repr`` (every bit).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
from gpuselect.catalog import load_catalog
from gpuselect.estimate.api import Assumptions, estimate
from gpuselect.workloads.presets import PRESETS


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("rows.json")
    catalog = load_catalog(use_overlay=False)
    doc = {
        wid: [
            [r.gpu_id, r.count, r.throughput_samples_per_s, r.total_time_h]
            for r in estimate(PRESETS[wid], Assumptions(), catalog, local=[]).rows
        ]
        for wid in sorted(PRESETS)
    }
    out.write_text(json.dumps(doc))
    print(f"{sum(len(v) for v in doc.values())} rows of {len(doc)} presets -> {out}")


if __name__ == "__main__":
    main()
