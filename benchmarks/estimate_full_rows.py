"""Every field of every row (notes and "what would make it fit" tips included) for each preset
under 11 sets of assumptions, as JSON: to check that a change meant to be a pure speed-up changes
nothing a user sees (``estimate_rows.py`` compares the figures only).

Rerun at two commits (each tree on PYTHONPATH; ``--no-insert`` leaves sys.path to it) and compare:
    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=/tmp/A python benchmarks/estimate_full_rows.py --no-insert /tmp/A.json
    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=/tmp/B python benchmarks/estimate_full_rows.py --no-insert /tmp/B.json
    cmp /tmp/A.json /tmp/B.json && echo identical
Session 16's suggestions speed-up (1f5538b against 50691f7): identical, 319 runs, 151,268 rows and their recommendations
(`docs/validation/steptime-2026-11-23/full-rows-session16.txt`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

if "--no-insert" not in sys.argv:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate.api import Assumptions, estimate
from gpuselect.workloads.presets import PRESETS

GRID: list[dict[str, object]] = [
    {},
    {"batch_size": 64},
    {"batch_size": 4},
    {"precision": "fp32"},
    {"optimizer": "adam"},
    {"sharding": "zero1", "offload": "optimizer"},
    {"sharding": "zero2"},
    {"sharding": "none", "batch_size": 8},
    {"loss": "plain", "batch_size": 16},
    {"checkpointing": "none", "batch_size": 32},
    {"offload": "params", "sharding": "fsdp"},
]


def main(out: Path) -> None:
    cat = load_catalog(use_overlay=False)
    doc: dict[str, object] = {}
    for wid in sorted(PRESETS):
        for i, g in enumerate(GRID):
            try:
                res = estimate(PRESETS[wid], Assumptions(**g), cat, local=[])  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - a refused combination is part of what is compared
                doc[f"{wid}/{i}"] = repr(exc)
                continue
            doc[f"{wid}/{i}"] = [*(repr(dataclasses.asdict(r)) for r in res.rows), repr(res.recommendation)]
    out.write_text(json.dumps(doc))
    rows = sum(len(v) - 1 for v in doc.values() if isinstance(v, list))
    print(f"{len(doc)} runs, {rows} rows and each run's recommendation -> {out}")


if __name__ == "__main__":
    main(Path(next(a for a in sys.argv[1:] if a != "--no-insert")))
