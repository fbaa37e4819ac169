"""One builder for the hand-made estimate rows the advice tests rank (one copy, not one per file)."""

from __future__ import annotations

from typing import Any

from gpuselect.estimate.api import EstimateRow


def option_row(
    gpu: str,
    hours: float,
    *,
    family: str = "geforce",
    count: int = 1,
    buy: float | None = None,
    rent: float | None = None,
    band: float = 0.3,
    deadline: float = 72.0,
    **figures: Any,
) -> EstimateRow:
    """A fitting option of ``count`` x ``gpu`` taking ``hours``, at the given prices and band;
    ``figures`` override the step figures the ranking does not read (batch, rates, energy)."""
    step: dict[str, Any] = {
        "batch_size": 32,
        "throughput_samples_per_s": 100.0,
        "epoch_time_s": 10.0,
        "energy_kwh": 1.0,
        "co2_kg": 0.4,
        **figures,
    }
    return EstimateRow(
        gpu_id=gpu,
        name=gpu,
        family=family,  # type: ignore[arg-type]
        count=count,
        fits=True,
        total_time_h=hours,
        buy_cost_usd=buy,
        cloud_cost_usd=rent,
        error_band=band,
        meets_deadline=hours <= deadline,
        **step,
    )
