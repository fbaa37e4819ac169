"""The Python API validates its assumptions once, at the boundary: any value of any field gives
either a result or a UsageError (issue #15: 72 of 2,000 direct calls raised ZeroDivisionError,
OverflowError or TypeError from deep inside)."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuselect.errors import UsageError
from gpuselect.estimate.api import Assumptions, EstimateResult, estimate, local_cpu_estimate

FIELDS = [f.name for f in dataclasses.fields(Assumptions)]

ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=-3, max_value=9000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=0, max_value=2),
    st.text(max_size=6),
    st.sampled_from(["bf16", "fp16", "fp32", "tf32", "adamw", "sgd", "adam8bit", [], {}, (1,)]),
)


@functools.lru_cache(maxsize=1)
def _setup() -> tuple[Any, Any, Any]:
    from gpuselect.catalog import load_catalog
    from gpuselect.estimate.perf import default_model
    from gpuselect.workloads.presets import get_preset

    catalog = load_catalog(use_overlay=False)
    return get_preset("gpt2-124m"), catalog, default_model(catalog)


GPUS = ["nvidia-rtx-3090", "nvidia-h100-sxm5-80gb"]


def _check(result: EstimateResult) -> None:
    for r in result.rows:
        for v in (r.total_time_h, r.throughput_samples_per_s, r.energy_kwh):
            assert v is None or math.isfinite(v)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FIELDS), ANY_VALUE, max_size=4))
def test_any_assumptions_give_a_result_or_a_usage_error(values: dict[str, Any]) -> None:
    w, catalog, perf = _setup()
    try:
        a = Assumptions(**values)
        result = estimate(w, a, catalog, perf, gpu_ids=[g for g in GPUS if catalog.get(g)])
    except UsageError:
        return
    _check(result)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), ANY_VALUE, max_size=3))
def test_local_estimate_validates_too(values: dict[str, Any]) -> None:
    w, _, _ = _setup()
    try:
        est = local_cpu_estimate(
            w, Assumptions(**values), cores=4, mhz=3000.0, features=[], measured_tflops=None, name="cpu"
        )
    except UsageError:
        return
    assert est.total_time_h is not None and math.isfinite(est.total_time_h) and est.total_time_h > 0
