"""Does a freshly allocated array copy slower than one held for a while? (CPU, this VM.)

Rerun:  PYTHONPATH=. python benchmarks/cpu_copy_age.py [--pairs 24] [--mib 128] [--wait 0]

Why: `bench --quick` copies over arrays it has just allocated, while the long run of
`bench_vs_long_run.py` holds its arrays for its whole round, and the quick copy figure came out
below the long one more often than above. This holds one pair of arrays for the whole run and,
alternately, half a second on it and half a second on a brand-new pair (allocated, touched,
copied once, then timed), so the machine's drift hits both alike. With ``--wait S`` the fresh
pair waits S seconds after its first copy before it is timed (does a little age close the gap?),
and the held pair is timed again just before it. Plain torch, no engine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def window(x: torch.Tensor, y: torch.Tensor, nbytes: int, seconds: float) -> float:
    rates = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        y.copy_(x)
        rates.append(2 * nbytes / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--wait", type=float, default=0.0, help="seconds the fresh pair waits before it is timed")
    ns = ap.parse_args()
    nbytes = ns.mib * 1024**2
    held = (torch.ones(nbytes // 4), torch.zeros(nbytes // 4))
    window(*held, nbytes, 5.0)  # the held pair starts with some age
    old, new = [], []
    for _ in range(ns.pairs):
        fresh = (torch.ones(nbytes // 4), torch.zeros(nbytes // 4))
        window(*fresh, nbytes, 0.05)
        if ns.wait:
            time.sleep(ns.wait)
        old.append(window(*held, nbytes, 0.5))
        new.append(window(*fresh, nbytes, 0.45))
        del fresh
    diffs = [n / o - 1 for o, n in zip(old, new, strict=True)]
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {ns.mib} MiB per array, {ns.pairs} pairs, "
        f"fresh pair waits {ns.wait:g} s before timing"
    )
    print(f"held pair:  median {statistics.median(old):.1f} GB/s (range {min(old):.1f}..{max(old):.1f})")
    print(f"fresh pair: median {statistics.median(new):.1f} GB/s (range {min(new):.1f}..{max(new):.1f})")
    print(
        f"fresh / held - 1, paired: median {100 * statistics.median(diffs):+.1f} %, "
        f"fresh slower in {sum(d < 0 for d in diffs)} of {len(diffs)} pairs"
    )


if __name__ == "__main__":
    main()
