"""How flat is the step-factor fit without llm-foundry, and how much does llm-foundry's
out-of-sample error depend on where on that flat the grid search lands?

    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/step_fit_flatness.py \
        > docs/validation/steptime-2026-11-23/flatness.txt

For each (GEMM factor, elementwise factor) on the grid around the fit's optimum (host factor 0.8,
FSDP overlap 0.9, as that fit chose them): the training loss the fit minimises (the mean over the
other sources of each source's mean |log error|) and llm-foundry's median / p90 |error| at those
factors. Reads the shared data; writes nothing but stdout.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
from gpuselect.catalog import load_catalog
from gpuselect.estimate import roofline as R
from gpuselect.estimate.fit import throughput as T

OTHERS = ("lambda", "dle", "neusight", "h100-catalog-row")


def main() -> int:
    catalog = load_catalog()
    cases = T.lambda_cases(catalog) + T.other_cases(catalog) + T.foundry_cases(catalog) + T.small_cases(catalog)
    cases = [c for c in cases if c.measured > 0 and c.predicted > 0 and c.spec is not None and c.traced]
    train = [c for c in cases if c.source in OTHERS]
    foundry = [c for c in cases if c.source == "llm-foundry"]
    base = json.loads(R.PARAMS_FILE.read_text())
    print("# Step-factor fit without llm-foundry: the loss around its optimum (benchmarks/step_fit_flatness.py)")
    print(
        "host factor 0.8, FSDP overlap 0.9 (what that fit chose); loss = mean over the other sources of mean |log err|"
    )
    print(f"{'GEMM':>5s} {'elementwise':>11s} {'train loss':>10s} {'llm-foundry median':>18s} {'p90':>6s}")
    rows = []
    for g in (0.55, 0.6, 0.65, 0.7, 0.75):
        for m in (0.6, 0.7, 0.8, 0.9):
            doc = json.loads(json.dumps(base))
            doc["step"].update(gemm_factor=g, mem_factor=m, dispatch_factor=0.8)
            doc["comm"]["fsdp_overlap"] = 0.9
            T.set_params(doc)
            loss = T.loss(train)
            errs = sorted(abs(T.redo(c).predicted / c.measured - 1) for c in foundry)
            p90 = errs[int(0.9 * (len(errs) - 1))]
            rows.append((loss, g, m, statistics.median(errs), p90))
            print(f"{g:5.2f} {m:11.2f} {loss:10.5f} {statistics.median(errs):17.1%} {p90:6.1%}")
    T.set_params(base)
    best = sorted(rows)[:3]
    print(
        "\nlowest three losses: " + "; ".join(f"({g}, {m}) {lo:.5f}: llm-foundry {md:.1%}" for lo, g, m, md, _ in best)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
