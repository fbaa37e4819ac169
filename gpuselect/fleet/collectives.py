"""Collective benchmarks over a torch.distributed process group (NCCL on GPUs, Gloo on CPUs).

Every member of a group must call :func:`measure_group` with the same arguments: the number and
order of collectives is fixed by the sizes and ops alone, never by a rank's own timings, so no
rank can fall out of step with the others (which would hang the group)."""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from gpuselect.fleet.model import OPS, BandwidthPoint, elements_for, point


def iterations_for(nbytes: int) -> int:
    """Back-to-back collectives per timed repeat: many for latency-bound sizes, few for big ones."""
    if nbytes <= 1 << 20:
        return 20
    if nbytes <= 64 << 20:
        return 5
    return 2


def _collective(dist: Any, op: str) -> Callable[..., Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "all_reduce":
            return dist.all_reduce  # type: ignore[no-any-return]
        if op == "all_gather":
            fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        else:
            fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return fn  # type: ignore[no-any-return]


def measure_group(
    torch: Any,
    dist: Any,
    group: Any,
    ranks: int,
    device: str,
    *,
    scope: str,
    label: str,
    byte_sizes: list[int],
    ops: tuple[str, ...] = OPS,
    warmup: int = 2,
    repeats: int = 5,
    on_step: Callable[[str], None] | None = None,
) -> list[BandwidthPoint]:
    """Time every op at every size in ``group``; return the group-wide figures (same on every rank)."""
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    token = torch.zeros(1, device=dev)

    def sync() -> None:
        # A tiny all-reduce lines the ranks up; on a GPU, wait for the device as well.
        dist.all_reduce(token, group=group)
        if cuda:
            torch.cuda.synchronize(dev)

    plan: list[tuple[str, int, int]] = []  # op, bytes actually moved, elements per rank
    for op in ops:
        for nbytes in byte_sizes:
            n_el = elements_for(op, nbytes, ranks)
            if n_el is None:
                continue
            moved = n_el * 4 * (1 if op == "all_reduce" else ranks)
            plan.append((op, moved, n_el))
    medians: list[float] = []
    lows: list[float] = []
    highs: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notes for the *_tensor spellings
        for op, moved, n_el in plan:
            if on_step is not None:
                on_step(f"{scope} {label} {op} {moved} B")
            fn = _collective(dist, op)
            bufs: tuple[Any, ...]
            if op == "all_reduce":
                bufs = (torch.ones(n_el, dtype=torch.float32, device=dev),)
            elif op == "all_gather":  # (output, input)
                bufs = (
                    torch.empty(n_el * ranks, dtype=torch.float32, device=dev),
                    torch.ones(n_el, dtype=torch.float32, device=dev),
                )
            else:
                bufs = (
                    torch.empty(n_el, dtype=torch.float32, device=dev),
                    torch.ones(n_el * ranks, dtype=torch.float32, device=dev),
                )

            def call(fn: Callable[..., Any] = fn, bufs: tuple[Any, ...] = bufs) -> None:
                fn(*bufs, group=group)

            iters = iterations_for(moved)
            for _ in range(warmup):
                call()
            sync()
            samples = []
            for _ in range(repeats):
                sync()
                t0 = time.perf_counter()
                for _ in range(iters):
                    call()
                if cuda:
                    torch.cuda.synchronize(dev)
                samples.append((time.perf_counter() - t0) / iters)
            medians.append(statistics.median(samples))
            lows.append(min(samples))
            highs.append(max(samples))
            del bufs, call
        # One all-reduce carries every rank's timings: the group's mean (nccl-tests' default).
        times = torch.tensor(medians + lows + highs, dtype=torch.float64, device=dev)
        dist.all_reduce(times, group=group)
    vals = [float(v) / ranks for v in times.cpu().tolist()]
    k = len(plan)
    return [
        point(scope, label, op, ranks, moved, vals[i], vals[k + i], vals[2 * k + i], repeats, iterations_for(moved))
        for i, (op, moved, _) in enumerate(plan)
    ]
