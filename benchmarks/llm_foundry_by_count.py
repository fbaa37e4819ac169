"""llm-foundry's per-GPU tokens/s error by GPU count, from a validation cases.csv
(benchmarks/estimator_validation.py writes it): does the step model miss how throughput falls
with scale? Signed median of predicted/measured - 1 per count, in sample and leaving the source
out, and the trend (median at 256-512 GPUs minus at 8-16).

    PYTHONPATH=. python benchmarks/llm_foundry_by_count.py [CASES.csv]
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "docs/validation/steptime-2026-11-23/cases.csv"


def main(path: Path) -> None:
    rows = [r for r in csv.DictReader(path.open(encoding="utf-8")) if r["source"].startswith("llm-foundry")]
    shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path.name
    print(f"# llm-foundry error by GPU count ({shown})")
    for source in ("llm-foundry", "llm-foundry (LOSO)"):
        by: dict[int, list[float]] = {}
        for r in rows:
            if r["source"] == source:
                by.setdefault(int(r["count"]), []).append(float(r["rel_err"]))
        cells = "  ".join(f"{n}: {100 * statistics.median(v):+.1f}% (n={len(v)})" for n, v in sorted(by.items()))
        small = [e for n, v in by.items() if n <= 16 for e in v]
        large = [e for n, v in by.items() if n >= 256 for e in v]
        trend = 100 * (statistics.median(large) - statistics.median(small)) if small and large else float("nan")
        errs = [abs(float(r["rel_err"])) for r in rows if r["source"] == source]
        errs.sort()
        p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))]
        print(
            f"{source:20s} median |err| {100 * statistics.median(errs):.1f}%, p90 {100 * p90:.1f}%; trend {trend:+.1f} points"
        )
        print(f"  {cells}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
