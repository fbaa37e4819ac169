"""Two facts behind the quick CPU benchmark's design, measured (plain torch, no engine).

Rerun:  PYTHONPATH=. python benchmarks/cpu_quick_costs.py [--seconds 40]

1. Which matmul size does a CPU need? Sizes 512..2048 are timed in interleaved 0.3 s windows for
   ``--seconds`` in all, so the machine's drift hits every size alike; if their medians agree,
   the engine can stop its size ramp early and take many short repeats instead of a few long ones.
2. What does the first use of ``torch.optim`` cost? Timed in a fresh interpreter after
   ``import torch`` (it imports ``torch._dynamo``), against a fresh interpreter that only builds
   a model: the cost the engine avoids with its written-out SGD. Also ``import torch`` itself,
   which the first device's time box includes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import torch

_FIRST_OPTIM = """
import time, torch
m = torch.nn.Linear(4, 2)
t0 = time.perf_counter()
{body}
print(time.perf_counter() - t0)
"""


def first_use_s(body: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_OPTIM.format(body=body)], capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=40.0)
    ns = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    mats = {n: (torch.randn(n, n), torch.randn(n, n)) for n in (512, 768, 1024, 1536, 2048)}
    rates: dict[int, list[float]] = {n: [] for n in mats}
    end = time.perf_counter() + ns.seconds
    while time.perf_counter() < end:
        for n, (a, b) in mats.items():
            torch.mm(a, b)
            stop = time.perf_counter() + 0.3
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                torch.mm(a, b)
                rates[n].append(2 * n**3 / (time.perf_counter() - t0) / 1e12)
    print("| size | products | median TFLOP/s | p10 | p90 | one product, ms |")
    print("|---|---|---|---|---|---|")
    for n, r in rates.items():
        r.sort()
        med = statistics.median(r)
        print(
            f"| {n} | {len(r)} | {med:.3f} | {r[len(r) // 10]:.3f} | {r[9 * len(r) // 10]:.3f} | {2 * n**3 / med / 1e9:.1f} |"
        )
    meds = [statistics.median(r) for r in rates.values()]
    print(f"largest / smallest median: {max(meds) / min(meds):.3f}")
    optim = statistics.median(
        first_use_s("torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9).step()") for _ in range(3)
    )
    plain = statistics.median(first_use_s("m(torch.zeros(1, 4)).sum().backward()") for _ in range(3))
    imp = statistics.median(
        float(
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import time; t0 = time.perf_counter(); import torch; print(time.perf_counter() - t0)",
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        for _ in range(3)
    )
    print(f"import torch in a fresh interpreter: {imp:.2f} s (median of 3)")
    print(
        f"first torch.optim.SGD step in a fresh interpreter: {optim:.2f} s; a first forward+backward: {plain:.2f} s "
        "(medians of 3)"
    )


if __name__ == "__main__":
    main()
