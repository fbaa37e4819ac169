"""Tables for docs/accuracy.md that summary.txt does not print, recomputed from cases.csv.

Reads docs/validation/steptime-2026-11-23/cases.csv (written by
benchmarks/estimator_validation.py --fit) and prints, with the same statistics as
gpuselect/estimate/fit/throughput.py (median and p90 of |predicted/measured - 1|, the log-symmetric
band covering 80 %, bias = median on the log scale):
- llm-foundry per-GPU tokens/s out of sample ("llm-foundry (LOSO)" rows): this model against the
  constant-MFU rule (6 N FLOPs per token at 40 % of peak, the mfu_rule column), all rows, by
  micro-batch and precision, fp8 as one group with its signed range;
- the one-GPU LLM regime with and without AMD rows (the app's band leaves AMD out);
- from docs/validation/cpu-vm-2026-11-24/bench-fit.txt (benchmarks/bench_fit_validation.py): per
  bench record, median and largest |error| and how many steps are within 35 % and within 2x, in
  sample and leaving one bench model out, and the same over this VM's quiet runs 1 and 5.

Rerun: PYTHONPATH=. python benchmarks/accuracy_tables.py
Output: docs/validation/steptime-2026-11-23/accuracy-tables.txt
"""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIR = ROOT / "docs" / "validation" / "steptime-2026-11-23"


def stats(pairs: list[tuple[float, float]]) -> str:
    """pairs of (measured, predicted) -> 'n median p90 band bias' as throughput.stats/table do."""
    rel = sorted(abs(p / m - 1) for m, p in pairs)
    logs = sorted(abs(math.log(p / m)) for m, p in pairs)

    def q(xs: list[float], f: float) -> float:
        return xs[min(len(xs) - 1, math.ceil(f * len(xs)) - 1)]

    bias = math.exp(statistics.median(math.log(p / m) for m, p in pairs)) - 1
    return (
        f"{len(pairs):4d} {100 * statistics.median(rel):7.1f}% {100 * q(rel, 0.9):7.1f}% "
        f"{100 * (math.exp(q(logs, 0.8)) - 1):7.1f}% {100 * bias:+7.1f}%"
    )


def signed_range(pairs: list[tuple[float, float]]) -> str:
    errs = [100 * (p / m - 1) for m, p in pairs]
    return f"{min(errs):+.0f} to {max(errs):+.0f} %"


def bench_fit_lines() -> list[str]:
    """Per-record summaries of bench-fit.txt's step tables (columns: model batch measured
    unfitted LOMO in-sample, errors as signed percentages)."""
    path = ROOT / "docs" / "validation" / "cpu-vm-2026-11-24" / "bench-fit.txt"
    recs: dict[str, dict[str, list[float]]] = {}
    name = ""
    for line in path.read_text().splitlines():
        if line.startswith("## ") and not line.startswith("## Summary"):
            name = line[3:].split(" (")[0]
            recs[name] = {"unfitted": [], "LOMO": [], "in-sample": []}
            continue
        parts = line.split()
        if name and len(parts) >= 5 and parts[0] in ("simple_cnn", "transformer") and parts[1].isdigit():
            cols = parts[3:]
            # A record with one bench model has no LOMO column for it: 2 error columns.
            keys = ["unfitted", "LOMO", "in-sample"] if len(cols) == 3 else ["unfitted", "in-sample"]
            for k, v in zip(keys, cols, strict=True):
                recs[name][k].append(float(v.rstrip("%")))

    def summ(errs: list[float]) -> str:
        if not errs:
            return "n    0"
        a = [abs(e) for e in errs]
        within2 = sum(1 for e in errs if 0.5 <= 1 + e / 100 <= 2.0)
        return (
            f"n {len(a):4d} median {statistics.median(a):6.1f} %  max {max(a):7.1f} %  "
            f"within 35 %: {sum(1 for x in a if x <= 35)}/{len(a)}  within 2x: {within2}/{len(a)}"
        )

    lines = ["", "## Bench records fitted on their own steps (from cpu-vm-2026-11-24/bench-fit.txt)"]
    for rec, errs_by in recs.items():
        for k in ("in-sample", "LOMO", "unfitted"):
            lines.append(f"{rec:48s} {k:9s} {summ(errs_by[k])}")
    quiet = [r for r in recs if r.endswith(("bench-cpu-1.json", "bench-cpu-5.json"))]
    for k in ("in-sample", "LOMO", "unfitted"):
        errs = [e for r in quiet for e in recs[r][k]]
        lines.append(f"{'this VM, quiet runs 1 and 5':48s} {k:9s} {summ(errs)}")
    return lines


def main() -> None:
    with (DIR / "cases.csv").open() as f:
        rows = list(csv.DictReader(f))
    lf = [r for r in rows if r["source"] == "llm-foundry (LOSO)"]
    head = f"{'group':38s} {'n':>4s} {'median':>8s} {'p90':>8s} {'80%band':>8s} {'bias':>8s}"
    lines = [
        "# Tables for docs/accuracy.md recomputed from cases.csv (benchmarks/accuracy_tables.py)",
        "",
        "## llm-foundry per-GPU tokens/s, out of sample: this model | constant-MFU rule",
    ]

    def groups() -> list[tuple[str, list[dict[str, str]]]]:
        out: list[tuple[str, list[dict[str, str]]]] = [("all rows", lf)]
        for mb in ("<=2", ">2"):
            for prec in ("bf16", "bf16-true"):
                g = [r for r in lf if r["precision"] == prec and (int(r["batch"]) <= 2) == (mb == "<=2")]
                out.append((f"micro-batch {mb} / {prec}", g))
        out.append(("fp8 (all micro-batches)", [r for r in lf if r["precision"] == "fp8"]))
        return out

    for who, col in (("this model", "predicted"), ("constant-MFU rule", "mfu_rule")):
        lines += ["", f"### {who}", head]
        for name, g in groups():
            pairs = [(float(r["measured"]), float(r[col])) for r in g]
            extra = f"  signed {signed_range(pairs)}" if name.startswith("fp8") else ""
            lines.append(f"{name:38s} {stats(pairs)}{extra}")
    lines += ["", "## One-GPU LLM regime (out of sample), with and without AMD rows", head]
    llm = [r for r in rows if r["regime"] == "llm" and r["source"].endswith("(LOSO)")]
    for name, g in (
        ("all", llm),
        ("NVIDIA (the app's band)", [r for r in llm if not r["gpu"].startswith("amd-")]),
        ("AMD", [r for r in llm if r["gpu"].startswith("amd-")]),
    ):
        lines.append(f"{name:38s} {stats([(float(r['measured']), float(r['predicted'])) for r in g])}")
    lines += bench_fit_lines()
    text = "\n".join(lines) + "\n"
    (DIR / "accuracy-tables.txt").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
