"""Every preset's rows over the whole catalog, as JSON: to check that a change meant to be a pure
refactor or speed-up changes no figure.

Rerun (at each commit, e.g. in two git worktrees), then compare the two files:
    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/estimate_rows.py /tmp/rows-A.json
    ... at the other commit: ... /tmp/rows-B.json
    cmp /tmp/rows-A.json /tmp/rows-B.json && echo identical
or, where a change is meant to move some rows, how many moved and which way:
    PYTHONPATH=. python benchmarks/estimate_rows.py --compare /tmp/rows-A.json /tmp/rows-B.json
It prints how many rows it wrote. Each row: GPU id, count, samples/s, total hours and the cloud
cost (None: no rental price), with ``estimate()``'s default assumptions and no local machine;
floats written by ``repr`` (every bit). A file of four-field rows (before the cloud cost) compares
on the time alone.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
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
    priced = {"hourly rate moved": 0, "rental price dropped": 0, "rental price added": 0}
    # which cards moved, by rows: faster/slower by card; rental prices by card and count
    cards: dict[str, Counter[str]] = {k: Counter() for k in ("faster", "slower", *priced)}
    moves: list[tuple[float, str, str, int]] = []  # (samples/s after / before - 1, preset, card, count)
    for wid in sorted(set(a) | set(b)):
        ra, rb = {(r[0], r[1]): r for r in a.get(wid, [])}, {(r[0], r[1]): r for r in b.get(wid, [])}
        counts = dict.fromkeys(totals, 0)
        for key in set(ra) | set(rb):
            counts["rows"] += 1
            x, y = ra.get(key), rb.get(key)
            if x is not None and y is not None and len(x) > 4 and len(y) > 4:
                # the hourly rate of the option (cost / hours): a faster row is cheaper at the same rate
                rx, ry = (r[4] / r[3] if r[4] is not None and r[3] else r[4] for r in (x, y))
                moved = None
                if (rx is None) != (ry is None):
                    moved = "rental price dropped" if ry is None else "rental price added"
                elif rx is not None and ry is not None and abs(ry / rx - 1) > 1e-9:
                    moved = "hourly rate moved"
                if moved:
                    priced[moved] += 1
                    cards[moved][f"{key[0]} x{key[1]}"] += 1
            x, y = (None if r is None else r[:4] for r in (x, y))
            if x == y:
                counts["identical"] += 1
            elif x is None or y is None or x[2] is None or y[2] is None:
                counts["other"] += 1
            elif abs(y[2] / x[2] - 1) <= 1e-7:
                counts["last bits"] += 1
            else:
                way = "faster" if y[2] > x[2] else "slower"
                counts[way] += 1
                moves.append((y[2] / x[2] - 1, wid, key[0], key[1]))
                cards[way][key[0]] += 1
        for k in totals:
            totals[k] += counts[k]
        if counts["identical"] != counts["rows"]:
            print(f"{wid:22s} " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("all presets            " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    print("cloud cost             " + ", ".join(f"{k} {v}" for k, v in priced.items()))
    if moves:
        moves.sort()
        q = [m[0] for m in moves]
        at = lambda f: 100 * q[min(len(q) - 1, int(f * len(q)))]  # noqa: E731 - a percentile of the sorted moves
        lo, hi = moves[0], moves[-1]
        print(
            f"samples/s of the {len(q)} rows that moved: median {100 * statistics.median(q):+.1f} %, p10 {at(0.1):+.1f} %, "
            f"p90 {at(0.9):+.1f} %; least {100 * lo[0]:+.1f} % ({lo[1]} {lo[3]}x {lo[2]}), "
            f"most {100 * hi[0]:+.1f} % ({hi[1]} {hi[3]}x {hi[2]})"
        )
    for what, counter in cards.items():
        if counter:
            print(f"  {what}: " + ", ".join(f"{k} {v}" for k, v in counter.most_common()))


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("rows.json")
    catalog = load_catalog(use_overlay=False)
    doc = {
        wid: [
            [r.gpu_id, r.count, r.throughput_samples_per_s, r.total_time_h, r.cloud_cost_usd]
            for r in estimate(PRESETS[wid], Assumptions(), catalog, local=[]).rows
        ]
        for wid in sorted(PRESETS)
    }
    out.write_text(json.dumps(doc))
    print(f"{sum(len(v) for v in doc.values())} rows of {len(doc)} presets -> {out}")


if __name__ == "__main__":
    main()
