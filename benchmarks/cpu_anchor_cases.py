"""The `cpu_anchored` band's cases (a benchmarked workload past its measured batches, as
``api.local_cpu_estimate`` scales it), on the quiet CPU records it is fitted from and on the loaded
records it is not used for (a busy or unmeasured record keeps `cpu_unsteady`).

    PYTHONPATH=. python benchmarks/cpu_anchor_cases.py > docs/validation/cpu-xeon-2026-11-25/anchor-cases.txt
"""

from __future__ import annotations

import math

from gpuselect.estimate.fit import steps as S
from gpuselect.estimate.fit.throughput import _anchor_cases
from gpuselect.estimate.perf import cpu_device


def main() -> None:
    for which, title in (
        ("fit", "quiet records (the band's cases)"),
        ("quiet-validate", "quiet record that only validates (the band's cases)"),
        ("validate", "loaded records (not in the band: such a record keeps cpu_unsteady)"),
    ):
        print(f"## {title}")
        errs = []
        for rec, cores, label in S.cpu_records(which):
            for c in _anchor_cases(cpu_device(rec, cores=cores, fit_steps=False), rec, label):
                e = c.predicted / c.measured - 1
                errs.append(abs(math.log(c.predicted / c.measured)))
                print(
                    f"{label:28s} {c.workload:12s} batch {c.batch:4d}: measured {c.measured:9.1f} "
                    f"predicted {c.predicted:9.1f} samples/s ({100 * e:+.0f} %) {c.note}"
                )
        if errs:
            errs.sort()
            p80 = math.exp(errs[math.ceil(0.8 * len(errs)) - 1]) - 1
            print(f"{len(errs)} cases: 80 % of them within ±{100 * p80:.1f} %\n")


if __name__ == "__main__":
    main()
