"""The estimate for this machine and the report, written once for the CLI, the GUI and the report.

A face describes *what* (a ``WorkloadSpec``, the user's choices) and gets typed values back; the
user's settings fill what the face left open (electricity price, deadline, budget, grid
intensity) and decide redaction and currency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuselect.app.machine import Machine, local_estimates, owned_gpus
from gpuselect.app.money import MoneyFormat
from gpuselect.errors import UsageError
from gpuselect.settings import Settings
from gpuselect.types import Mode


@dataclass(frozen=True)
class WorkloadSpec:
    """One of: a preset; a config.json (read as data); a parameter count with FLOPs; a model file
    (its code runs, in a subprocess where the profiler supports it)."""

    preset: str | None = None
    config: str | None = None
    seq_len: int | None = None
    mode: Mode | None = None  # None: the preset's own, else full
    lora_rank: int | None = None
    params: float | None = None
    flops_per_sample: float | None = None
    model: str | None = None
    factory: str | None = None
    input_shape: tuple[int, ...] | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.preset, self.config, self.params, self.model))


def load_workload(spec: WorkloadSpec) -> Any:
    """The workload a spec describes (gpuselect.workloads.build: presets, configs and model files,
    in full, LoRA or QLoRA)."""
    from gpuselect.workloads.build import build_workload

    shape = ",".join(str(d) for d in spec.input_shape) if spec.input_shape else None
    return build_workload(
        workload=spec.preset,
        config=spec.config,
        params=spec.params,
        flops_per_sample=spec.flops_per_sample,
        model=spec.model,
        factory=spec.factory,
        input_shape=shape,
        seq_len=spec.seq_len,
        mode=spec.mode,
        lora_rank=spec.lora_rank,
    )


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise UsageError(f"the input shape must be whole numbers separated by commas, not {text!r}") from None
    if not shape or any(d <= 0 for d in shape):
        raise UsageError(f"the input shape must be positive whole numbers, not {text!r}")
    return shape


def assumptions(settings: Settings, **given: Any) -> Any:
    """Assumptions from what the face was given; the settings fill electricity, grid, deadline
    and budget where the face left them None."""
    from gpuselect.estimate.api import Assumptions

    defaults = {
        "electricity_usd_per_kwh": settings.electricity_usd_per_kwh,
        "grid_kg_co2_per_kwh": settings.grid_kg_co2_per_kwh,
        "deadline_hours": settings.default_deadline_hours,
        "budget_usd": settings.default_budget_usd,
    }
    values = {k: v for k, v in given.items() if v is not None}
    for k, v in defaults.items():
        values.setdefault(k, v)
    if given.get("budget_usd") == 0:
        values["budget_usd"] = None  # an explicit 0: no budget
    a = Assumptions(**values)
    a.validate()
    return a


def estimate_for_machine(
    w: Any, a: Any, machine: Machine | None, *, gpu_ids: list[str] | None = None, catalog: Any = None, perf: Any = None
) -> Any:
    """Every catalog option, this machine's CPU and GPUs, and the advice that starts from them.
    ``machine`` None: no local figures (a catalog-only estimate)."""
    from gpuselect.catalog import load_catalog
    from gpuselect.estimate.api import estimate
    from gpuselect.estimate.perf import default_model

    catalog = catalog or load_catalog()
    perf = perf or default_model(catalog)
    local = local_estimates(w, a, machine, catalog, perf) if machine is not None else []
    owned = owned_gpus(machine, catalog) if machine is not None else []
    return estimate(w, a, catalog, perf, gpu_ids=gpu_ids, local=local, owned=owned)


def build_machine_report(
    machine: Machine, result: Any = None, *, settings: Settings, redact: bool | None = None, catalog: Any = None
) -> Any:
    """The report: ``redact`` None follows the settings (``redact_reports``); money in the settings' currency."""
    from gpuselect.catalog import load_catalog
    from gpuselect.report.model import build_report

    redact = settings.redact_reports if redact is None else redact
    return build_report(
        machine.snapshot,
        machine.health,
        bench=machine.bench,
        bench_notes=machine.bench_notes,
        estimate=result,
        redact=redact,
        catalog=catalog or load_catalog(),
        money=MoneyFormat.from_settings(settings),
    )
