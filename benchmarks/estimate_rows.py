"""Every preset's rows over the whole catalog, as JSON: to check that a change meant to be a pure
refactor or speed-up changes no figure.

Rerun (at each commit, e.g. in two git worktrees), then compare the two files:
    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/estimate_rows.py /tmp/rows-A.json
    ... at the other commit: ... /tmp/rows-B.json
    cmp /tmp/rows-A.json /tmp/rows-B.json && echo identical
or, where a change is meant to move some rows, how many moved and which way:
    PYTHONPATH=. python benchmarks/estimate_rows.py --compare /tmp/rows-A.json /tmp/rows-B.json
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


def compare(before: Path, after: Path) -> None:
    """How the rows of two runs differ: same, faster, slower (samples/s beyond 1e-7 relative) or
    in the last bits only, per preset where any differs."""
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    totals = {"rows": 0, "identical": 0, "last bits": 0, "faster": 0, "slower": 0, "other": 0}
    for wid in sorted(set(a) | set(b)):
        ra, rb = {(r[0], r[1]): r for r in a.get(wid, [])}, {(r[0], r[1]): r for r in b.get(wid, [])}
        counts = dict.fromkeys(totals, 0)
        for key in set(ra) | set(rb):
            counts["rows"] += 1
            x, y = ra.get(key), rb.get(key)
            if x == y:
                counts["identical"] += 1
            elif x is None or y is None or x[2] is None or y[2] is None:
                counts["other"] += 1
            elif abs(y[2] / x[2] - 1) <= 1e-7:
                counts["last bits"] += 1
            else:
                counts["faster" if y[2] > x[2] else "slower"] += 1
        for k in totals:
            totals[k] += counts[k]
        if counts["identical"] != counts["rows"]:
            print(f"{wid:22s} " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("all presets            " + ", ".join(f"{k} {v}" for k, v in totals.items()))


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare(Path(sys.argv[2]), Path(sys.argv[3]))
        return
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
