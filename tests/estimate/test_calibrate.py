"""The performance model's fit (calibrate.py) and its per-step memory term in the runtime predictor."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.estimate import calibrate as C
from gpuselect.estimate.perf import CALIBRATION, PerfModel


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(use_overlay=False)


def _model(u: float | None) -> PerfModel:
    m = {"r": 0.02, "o": 0.001, "q": 0.0, "log_k": {"v2": 5.0}}
    if u is not None:
        m["u"] = u
    return PerfModel({"resnet50": {"fp16": m}}, {"fp16": {}}, {"resnet50": 64})


def test_per_step_memory_term_is_amortised_over_the_batch_and_costs_slow_memory_more(catalog) -> None:
    fast = catalog.get("nvidia-a100-sxm4-80gb")
    slow = dataclasses.replace(fast, memory_bandwidth_gbs=fast.memory_bandwidth_gbs / 4)  # same compute
    pm = _model(u=2.0)

    def thr(e, batch):
        return pm.predict_reference("resnet50", "fp16", e, batch=batch)

    for e in (slow, fast):
        assert thr(e, 8) < thr(e, 64) < thr(e, 512)  # the step's weight and optimizer traffic is shared by more samples
    assert thr(slow, 512) / thr(slow, 8) > thr(fast, 512) / thr(fast, 8)  # bandwidth-bound: slow memory pays more
    no_u = _model(u=0.0)
    assert no_u.predict_reference("resnet50", "fp16", slow, batch=8) == pytest.approx(
        no_u.predict_reference("resnet50", "fp16", slow, batch=512)
    )
    # The formula itself: u / (batch * bandwidth) added to the time per sample.
    bw = slow.memory_bandwidth_gbs / 1000.0
    eff = pm.arch_eff.get("fp16", {}).get(C.arch_key(slow), 1.0)
    inner = 1 / (eff * slow.fp16_tflops) + 0.02 / bw + 0.001 + 2.0 / (8 * bw)
    assert thr(slow, 8) == pytest.approx(math.exp(5.0) / inner)


def test_a_calibration_without_u_loads_with_u_zero(tmp_path, catalog) -> None:
    doc = _model(u=None).to_json()
    assert "u" not in doc["models"]["resnet50"]["fp16"]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc))
    old = PerfModel.from_json(path)
    e = catalog.get("nvidia-a100-sxm4-80gb")
    assert old.predict_reference("resnet50", "fp16", e, batch=16) == pytest.approx(
        _model(u=0.0).predict_reference("resnet50", "fp16", e, batch=16)
    )
    assert old.predict_reference("resnet50", "fp16", e, batch=16) > _model(u=1.0).predict_reference(
        "resnet50", "fp16", e, batch=16
    )


def test_shipped_calibration_has_u_and_no_parameter_at_the_top_of_its_grid() -> None:
    doc = json.loads(CALIBRATION.read_text())
    tops = {"r": C._R_GRID[-1], "o": C._O_GRID[-1], "q": C._Q_GRID[-1], "u": C._U_GRID[-1]}
    for model, per in doc["models"].items():
        for pc, vals in per.items():
            for k, top in tops.items():
                assert vals[k] < top, (model, pc, k)  # at the top, the grid would be cutting the fit short


# Synthetic cards: (peak TFLOP/s, bandwidth TB/s, batch), spread so that r, o, q and u can be told apart.
_CARDS = [
    (10, 0.3, 16),
    (15, 0.45, 32),
    (20, 0.9, 24),
    (30, 0.6, 64),
    (40, 1.0, 48),
    (60, 0.9, 96),
    (80, 1.6, 64),
    (120, 1.5, 128),
    (150, 2.0, 192),
    (200, 2.0, 128),
    (300, 3.3, 256),
    (400, 3.0, 384),
    (600, 4.8, 512),
    (900, 8.0, 512),
]


def _synthetic(r: float, o: float, q: float, u: float, log_k: float = 5.0, outlier: int | None = None) -> list[C.Obs]:
    obs = []
    for i, (c, bw, n) in enumerate(_CARDS):
        thr = math.exp(log_k) / (1 / c + r / bw + o + q / n + u / (n * bw))
        if i == outlier:
            thr *= 2.0  # one run that went wrong
        obs.append(C.Obs(f"gpu{i}", "m", "fp16", "v1", thr, c, bw, "nvidia:x", n))
    return obs


def test_fit_recovers_a_per_step_memory_term() -> None:
    r, o, q, u = C._R_GRID[16], C._O_GRID[8], C._Q_GRID[10], C._U_GRID[14]
    obs = _synthetic(r, o, q, u)
    got = C._fit_group(obs, C.Fit())
    assert got[:4] == pytest.approx((r, o, q, u))
    assert got[4]["v1"] == pytest.approx(5.0)
    assert got[5] == pytest.approx(0.0, abs=1e-12)
    assert C._fit_group(obs, C.Fit(), exhaustive=True)[:4] == pytest.approx(got[:4])


def test_huber_loss_keeps_one_odd_run_from_dragging_the_fit(monkeypatch) -> None:
    r, o, q, u = C._R_GRID[16], C._O_GRID[8], C._Q_GRID[10], 0.0
    obs = _synthetic(r, o, q, u, outlier=5)
    clean = [ob for i, ob in enumerate(obs) if i != 5]

    def worst_clean_error() -> float:
        f = C.fit(obs, iterations=1)
        return max(abs(math.exp(f.log_pred(ob)) / ob.throughput - 1) for ob in clean)

    assert C.HUBER_DELTA == 0.10
    robust = worst_clean_error()
    monkeypatch.setattr(C, "HUBER_DELTA", None)  # plain squared error
    squared = worst_clean_error()
    assert robust < 0.03  # the other runs are still predicted within a few per cent
    assert squared > 0.1 and squared > 4 * robust


def test_huber_loss_is_squared_within_the_threshold_and_linear_beyond() -> None:
    assert C.huber(0.05) == pytest.approx(0.0025)
    assert C.huber(-0.1) == pytest.approx(0.01)
    assert C.huber(0.3) - C.huber(0.2) == pytest.approx(C.huber(1.3) - C.huber(1.2))  # slope 2 * 0.1
    assert C.huber(0.3) < 0.3**2
