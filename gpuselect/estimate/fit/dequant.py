"""QLoRA's 4-bit dequantisation cost, fitted on measured LoRA/QLoRA step pairs.

A pair is the same model, GPU, data and micro-batch trained with LoRA (16-bit base weights) and with
QLoRA (bitsandbytes NF4 base weights). The QLoRA step adds, per base linear layer and pass, one
dequantisation of its weight to 16 bits before the same GEMMs. So the measured difference of the two
steps is the dequantisations' time, with no tokens per step in it. The model charges each
dequantised weight ``bytes_per_weight`` at the card's streaming bandwidth (data sheet x measured
memory efficiency); the fit picks the value that minimises the mean |log error| of that difference.
It does not depend on the rest of the step model, so it is fitted before the step factors.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: The grid searched, bytes per weight: from the traffic the kernel moves (2.5625) to 10x it.
GRID: tuple[float, ...] = tuple(round(2.5 + 0.25 * i, 2) for i in range(95))


@dataclass(frozen=True)
class Pair:
    """One measured LoRA/QLoRA pair, reduced to what the dequantisation fit needs."""

    label: str
    gpu: str
    weights: float  # weights dequantised per QLoRA step (every call: forward, backward, recompute)
    calls: int  # dequantisation calls per step
    stream_bytes_per_s: float  # the card's data-sheet bandwidth x measured memory efficiency
    extra_s: float  # measured QLoRA step - LoRA step (same micro-batch, same data)

    def implied(self) -> float:
        """The bytes per weight that would explain this pair alone."""
        return self.extra_s * self.stream_bytes_per_s / self.weights

    def predicted_extra_s(self, bytes_per_weight: float) -> float:
        return self.weights * bytes_per_weight / self.stream_bytes_per_s


def loss(pairs: Sequence[Pair], bytes_per_weight: float) -> float:
    """Mean |log(predicted extra / measured extra)|."""
    return statistics.fmean(abs(math.log(p.predicted_extra_s(bytes_per_weight) / p.extra_s)) for p in pairs)


def _usable(pairs: Sequence[Pair]) -> list[Pair]:
    usable = [p for p in pairs if p.extra_s > 0 and p.weights > 0 and p.stream_bytes_per_s > 0]
    if not usable:
        raise ValueError("no LoRA/QLoRA pair with a positive measured difference to fit on")
    return usable


def fit(pairs: Sequence[Pair]) -> float:
    """The grid value with the least loss (ties: the smaller value)."""
    usable = _usable(pairs)
    return min(GRID, key=lambda b: (round(loss(usable, b), 12), b))


#: Per-call costs tried beside the bytes (seconds): 0 to 200 µs in steps of 5.
CALL_GRID: tuple[float, ...] = tuple(i * 5e-6 for i in range(41))


def loss_with_call(pairs: Sequence[Pair], bytes_per_weight: float, call_s: float) -> float:
    """Mean |log error| when each call also costs ``call_s`` (a launch- or host-like fixed part)."""
    return statistics.fmean(
        abs(math.log((p.predicted_extra_s(bytes_per_weight) + p.calls * call_s) / p.extra_s)) for p in pairs
    )


def fit_with_call(pairs: Sequence[Pair]) -> tuple[float, float, float]:
    """(bytes per weight, seconds per call, loss): the two-term alternative, to test whether a fixed
    per-call part explains the pairs better than the bytes alone."""
    usable = _usable(pairs)
    best = min(
        ((b, c) for b in GRID for c in CALL_GRID),
        key=lambda bc: (round(loss_with_call(usable, bc[0], bc[1]), 12), bc[1], bc[0]),
    )
    return best[0], best[1], loss_with_call(usable, *best)
