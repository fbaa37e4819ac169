"""Memory fit, throughput, scaling, cost and the four stages — at their edges."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuselect.catalog import load_catalog
from gpuselect.cli import build_parser, main
from gpuselect.errors import UsageError
from gpuselect.estimate import api as A
from gpuselect.estimate.api import (
    Assumptions,
    EstimateRow,
    LocalEstimate,
    _row,
    estimate,
    recommend,
)
from gpuselect.estimate.perf import default_model, load_reference_rows
from gpuselect.estimate.recommend import BORROWED_BAND_NOTE
from gpuselect.estimate.roofline import params as roofline_params
from gpuselect.workloads.presets import PRESETS
from tests.builders import option_row

GIB = 1024**3


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(use_overlay=False)


@pytest.fixture(scope="module")
def perf(catalog):
    return default_model(catalog)


def test_perf_model_fits_and_predicts_reference_cards(catalog, perf) -> None:
    rows = load_reference_rows(catalog)
    assert len(rows) > 500
    for r in rows[:50]:
        e = catalog.get(r.gpu_id)
        p = perf.predict_reference(r.model, "fp16" if r.precision == "fp16" else "fp32", e, r.generation)
        assert p is not None and 0.2 < p / r.throughput < 5, r


def test_more_compute_and_bandwidth_is_never_slower(catalog, perf) -> None:
    from gpuselect.estimate.api import predict_step
    from gpuselect.estimate.roofline import catalog_device, resolve_precision

    w = PRESETS["bert_base_squad"]
    for e in catalog.entries[:60]:
        prec = resolve_precision(e, "auto")
        base = predict_step(w, catalog_device(e), e, 8, prec)[0].seconds
        faster = dataclasses.replace(
            e,
            fp16_tflops=(e.fp16_tflops or 0) * 1.5 or None,
            bf16_tflops=(e.bf16_tflops or 0) * 1.5 or None,
            tf32_tflops=(e.tf32_tflops or 0) * 1.5 or None,
            memory_bandwidth_gbs=e.memory_bandwidth_gbs * 1.5,
            fp32_tflops=e.fp32_tflops * 1.5,
        )
        assert predict_step(w, catalog_device(faster), faster, 8, prec)[0].seconds <= base * 1.001, e.id


def test_unsupported_precision_falls_back(catalog, perf) -> None:
    t4 = catalog.get("nvidia-t4")
    row = _row(PRESETS["resnet50"], t4, 1, Assumptions(precision="bf16"), perf, 0.3)
    assert row.fits and row.precision_used == "fp16" and "not supported" in (row.note or "")


def test_multi_gpu_scaling_pays_for_the_all_reduce(catalog, perf) -> None:
    a = Assumptions(precision="bf16", max_gpus=8)
    w = PRESETS["gpt2-124m"]
    h100 = catalog.get("nvidia-h100-sxm5-80gb")
    one, eight = _row(w, h100, 1, a, perf, 0.3), _row(w, h100, 8, a, perf, 0.3)
    assert 1 < eight.throughput_samples_per_s / one.throughput_samples_per_s <= 8
    pcie = catalog.get("nvidia-rtx-4090")
    slow = a
    nv, pc = _row(w, h100, 8, slow, perf, 0.3), _row(w, pcie, 8, slow, perf, 0.3)
    assert (
        nv.throughput_samples_per_s / _row(w, h100, 1, slow, perf, 0.3).throughput_samples_per_s
        > pc.throughput_samples_per_s / _row(w, pcie, 1, slow, perf, 0.3).throughput_samples_per_s
    )  # NVLink scales better


def test_cost_energy_and_break_even(catalog, perf) -> None:
    a = Assumptions(precision="bf16", electricity_usd_per_kwh=0.20)
    e = catalog.get("nvidia-rtx-5090")
    r = _row(PRESETS["resnet50"], e, 1, a, perf, 0.3)
    hours = r.total_time_h
    assert r.energy_kwh == pytest.approx(e.tdp_w * a.utilisation * hours / 1000)
    assert r.buy_cost_usd == pytest.approx(e.launch_price_usd + r.energy_kwh * 0.20)
    assert r.cloud_cost_usd == pytest.approx(e.cloud_usd_per_hour * hours)
    hourly_energy = e.tdp_w * a.utilisation / 1000 * 0.20
    assert r.break_even_hours == pytest.approx(e.launch_price_usd / (e.cloud_usd_per_hour - hourly_energy))
    assert r.co2_kg == pytest.approx(r.energy_kwh * a.grid_kg_co2_per_kwh)


def test_break_even_counts_the_gpus_the_rental_pays_for(catalog, perf) -> None:
    """12 GPUs of 8-GPU offers rent 16: the cloud cost pays for 16 an hour, and so must the
    break-even (it priced 12 an hour: 8,614 h for 12x H100 where buying pays off after 6,424)."""
    a = Assumptions(electricity_usd_per_kwh=0.20)
    e = catalog.get("nvidia-h100-sxm5-80gb")
    r = _row(PRESETS["llama-8b-full"], e, 12, a, perf, 0.3)
    assert r.fits and r.cloud_cost_usd is not None and "16 GPUs paid for" in (r.note or "")
    rent_per_hour = r.cloud_cost_usd / r.total_time_h
    own_per_hour = r.energy_kwh / r.total_time_h * 0.20
    hardware = r.buy_cost_usd - r.energy_kwh * 0.20
    assert r.break_even_hours == pytest.approx(hardware / (rent_per_hour - own_per_hour))


def _r(gpu: str, family: str, count: int, hours: float, cost: float | None, deadline: float = 72.0) -> EstimateRow:
    return option_row(gpu, hours, family=family, count=count, buy=cost, deadline=deadline)


W = PRESETS["resnet50"]


def test_stage_1_when_the_cpu_is_fast_enough() -> None:
    cpu = LocalEstimate("cpu", "CPU", 10.0, 5.0, "measured matmul rate", 0.5)
    rec = recommend([_r("g", "geforce", 1, 1.0, 100)], [cpu], Assumptions(deadline_hours=10), W)
    assert rec.stage == 1 and rec.per_stage["1"]["meets_deadline"]


@pytest.mark.parametrize(("cpu_hours", "stage"), [(71.9, 1), (72.1, 2)])
def test_stage_1_edge_at_the_deadline(cpu_hours: float, stage: int) -> None:
    # the workload's own measured step: the advice takes it without its band
    cpu = LocalEstimate("cpu", "CPU", 1.0, cpu_hours, "measured: this CPU trained it", 0.5, measured_step=True)
    rec = recommend([_r("g", "geforce", 1, 3.0, 100)], [cpu], Assumptions(deadline_hours=72), W)
    assert rec.stage == stage


def test_unmeasured_cpu_must_meet_the_deadline_with_its_error_band() -> None:
    cpu = LocalEstimate("cpu", "CPU", 1.0, 50.0, "unmeasured: rough peak", 1.0)  # 50 h ± 100 % may be 100 h
    rec = recommend([_r("g", "geforce", 1, 3.0, 100)], [cpu], Assumptions(deadline_hours=72), W)
    assert rec.stage == 2


def test_stage_2_3_4_by_what_meets_deadline_and_budget() -> None:
    slow_cpu = [LocalEstimate("cpu", "CPU", 1.0, 1e6, "measured", 0.5)]

    def rows(deadline: float) -> list[EstimateRow]:
        return [
            _r("consumer", "geforce", 1, 100.0, 2000, deadline),
            _r("dc", "datacenter", 1, 40.0, 300, deadline),
            _r("dc8", "datacenter", 8, 6.0, 900, deadline),
            _r("dc16", "datacenter", 16, 3.0, 1200, deadline),
        ]

    def stage(deadline: float, budget: float | None = None) -> int:
        return recommend(rows(deadline), slow_cpu, Assumptions(deadline_hours=deadline, budget_usd=budget), W).stage

    assert stage(72) == 3
    assert stage(120) == 2  # the consumer card makes it
    assert stage(5) == 4  # only more than one box (16 GPUs) is fast enough
    rec = recommend(rows(1), slow_cpu, Assumptions(deadline_hours=1), W)  # nothing meets it
    assert not rec.deadline_met and "fastest" in rec.rationale
    assert stage(120, budget=1000) == 3  # the consumer card costs 2000: over budget; the 300 datacenter option fits
    assert recommend(rows(72), slow_cpu, Assumptions(deadline_hours=72, budget_usd=200), W).deadline_met is False


@settings(max_examples=50, deadline=None)
@given(
    deadline=st.floats(min_value=0.01, max_value=1e5, allow_nan=False),
    gpu_hours=st.floats(min_value=0.01, max_value=1e5, allow_nan=False),
)
def test_stage_rules_are_consistent(deadline: float, gpu_hours: float) -> None:
    cpu = [LocalEstimate("cpu", "CPU", 1.0, 1e7, "measured", 0.5)]
    rec = recommend([_r("g", "geforce", 1, gpu_hours, 100.0, deadline)], cpu, Assumptions(deadline_hours=deadline), W)
    assert rec.stage == 2
    assert rec.deadline_met == (gpu_hours <= deadline)


@pytest.mark.parametrize(
    "changes",
    [
        {"precision": "fp64"},
        {"batch_size": 0},
        {"epochs": -1},
        {"deadline_hours": float("nan")},
        {"budget_usd": float("inf")},
        {"dataset_size": 10**15},
        {"optimizer": "lion"},
        {"electricity_usd_per_kwh": -1},
    ],
)
def test_nonsense_assumptions_are_rejected(changes: dict, catalog, perf) -> None:
    with pytest.raises(UsageError):
        estimate(W, Assumptions(**changes), catalog, perf)


def test_every_catalog_gpu_has_a_count_1_row_and_no_nan(catalog, perf) -> None:
    result = estimate(PRESETS["bert_large_squad"], Assumptions(max_gpus=4), catalog, perf)
    ones = {r.gpu_id for r in result.rows if r.count == 1}
    assert ones == {e.id for e in catalog.entries}
    assert {r.count for r in result.rows} <= {1, 2, 4, 16, 32, 64, 128, 256, 512, 1024}
    assert {1, 2, 4} <= {r.count for r in result.rows}
    for r in result.rows:
        for v in dataclasses.asdict(r).values():
            assert not (isinstance(v, float) and not math.isfinite(v))


def test_estimate_cli_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--workload", "resnet50", "--epochs", "1", "--format", "json", "--max-gpus", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "estimate"
    for key in ("workload", "assumptions", "rows", "local", "recommendation"):
        assert key in doc
    row = doc["rows"][0]
    for key in (
        "gpu_id",
        "name",
        "family",
        "count",
        "fits",
        "batch_size",
        "throughput_samples_per_s",
        "epoch_time_s",
        "total_time_h",
        "buy_cost_usd",
        "cloud_cost_usd",
        "energy_kwh",
        "error_band",
    ):
        assert key in row
    assert {"stage", "choice", "per_stage", "rationale"} <= set(doc["recommendation"])
    assert doc["local"][0]["device"] == "cpu"


@pytest.mark.parametrize(
    "argv",
    [
        ["--workload", "nope"],
        ["--params", "0", "--flops-per-sample", "1e9"],
        ["--params", "1e6"],
        ["--workload", "resnet50", "--epochs", "nan"],
        ["--workload", "resnet50", "--batch-size", "-3"],
        ["--workload", "resnet50", "--gpus", "no-such-gpu"],
        ["--workload", "resnet50", "--deadline-hours", "inf"],
        ["--params", "1e30", "--flops-per-sample", "1e9"],
        ["--workload", "resnet50", "--network-gbs", "0"],
        ["--workload", "resnet50", "--network-gbs", "fast"],
    ],
)
def test_estimate_cli_rejects_nonsense_with_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["estimate", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        (["--params", "1e5", "--flops-per-sample", "1e6"], "Custom workload is small enough that the CPU"),
        (["--params", "1e12", "--flops-per-sample", "1e12", "--max-gpus", "1"], "Custom workload does not fit any GPU"),
    ],
)
def test_sentences_about_a_custom_workload_open_in_capitals(
    argv: list[str], sentence: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", *argv]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Custom workload: ") and sentence in out
    assert not re.search(r"(^|[.!?]\s)custom workload", out, re.MULTILINE)


def test_local_gpu_from_its_benchmark_record(catalog, perf) -> None:
    import ast

    from gpuselect.estimate.api import local_gpu_estimate

    a = Assumptions(precision="bf16")
    w = PRESETS["resnet50"]
    args = {"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 80 * GIB, "device": "gpu0"}
    rec = json.loads(
        (Path(__file__).resolve().parents[2] / "docs/validation/h100-2026-11-22/bench-full.json").read_text()
    )["devices"][0]
    plain = local_gpu_estimate(w, a, catalog, perf, **args)
    # Without training steps the measured rates carry the estimate: a quarter of them, slower.
    rates = {k: v for k, v in rec.items() if k != "train_steps"}
    measured = local_gpu_estimate(w, a, catalog, perf, bench=rates, **args)
    slow = local_gpu_estimate(
        w,
        a,
        catalog,
        perf,
        bench={
            **rates,
            "matmul_tflops": {k: v / 4 for k, v in rec["matmul_tflops"].items()},
            "memory_bandwidth_gbs": rec["memory_bandwidth_gbs"] / 4,
        },
        **args,
    )
    assert "benchmark" in measured.basis and plain.total_time_h and measured.total_time_h
    assert slow.total_time_h > 1.5 * measured.total_time_h
    # With its training steps the device is fitted on them: steps four times as long (the same
    # rates) make a workload the bench did not run slower too.
    steps = ast.literal_eval(rec["train_steps"]) if isinstance(rec["train_steps"], str) else rec["train_steps"]
    fitted = local_gpu_estimate(w, a, catalog, perf, bench=rec, **args)
    slow_steps = local_gpu_estimate(
        w,
        a,
        catalog,
        perf,
        bench={
            **rec,
            "train_steps": [{**s, "step_ms": 4 * s["step_ms"], "samples_per_s": s["samples_per_s"] / 4} for s in steps],
        },
        **args,
    )
    assert fitted.total_time_h and slow_steps.total_time_h
    assert slow_steps.total_time_h > 1.5 * fitted.total_time_h
    assert (
        local_gpu_estimate(
            w, a, catalog, perf, name="Mystery GPU", memory_bytes=None, device="gpu1"
        ).throughput_samples_per_s
        is None
    )
    cnn = local_gpu_estimate(PRESETS["simple-cnn"], Assumptions(batch_size=128), catalog, perf, bench=rec, **args)
    raw = rec["train_steps"]
    steps = {
        s["batch_size"]: s["samples_per_s"]
        for s in (ast.literal_eval(raw) if isinstance(raw, str) else raw)
        if s["model"] == "simple_cnn"
    }
    assert cnn.basis.startswith("measured") and cnn.throughput_samples_per_s == steps[128]


def test_cpu_estimate_from_a_measured_benchmark() -> None:
    from gpuselect.estimate.api import local_cpu_estimate

    w = PRESETS["mnist-mlp"]
    est = local_cpu_estimate(w, Assumptions(), cores=2, mhz=2600, features=["avx2"], measured_tflops=0.2)
    fast = local_cpu_estimate(w, Assumptions(), cores=2, mhz=2600, features=["avx2"], measured_tflops=0.8)
    assert "measured matmul" in est.basis and est.total_time_h and fast.total_time_h
    assert fast.total_time_h < est.total_time_h
    unmeasured = local_cpu_estimate(w, Assumptions(), cores=2, mhz=2600, features=["avx2"])
    assert unmeasured.basis.startswith("unmeasured")
    # Its band is the validated one of unmeasured CPUs (our records predicted leaving their machine
    # out), not a constant.
    assert unmeasured.error_band == A.regime_band("cpu_spec", "NVIDIA") and unmeasured.error_band > 0


def test_unmeasured_cpu_band_covers_80_percent_of_its_cases() -> None:
    """The committed cases of the unmeasured-CPU regime (our CPU records predicted from what detect
    sees, each machine's rates fitted on the other) lie within the app's band for 80 % of them."""
    import csv as _csv

    cases = Path(__file__).resolve().parents[2] / "docs" / "validation" / "steptime-2026-11-23" / "cases.csv"
    with cases.open() as fh:
        errs = [float(r["rel_err"]) for r in _csv.DictReader(fh) if r["regime"] == "cpu_spec"]
    assert len(errs) >= 10
    band = A.regime_band("cpu_spec", "NVIDIA")
    inside = sum(1 for e in errs if 1 / (1 + band) <= 1 + e <= 1 + band + 1e-9)
    assert inside >= 0.8 * len(errs)


def test_estimate_cli_lists_clusters_apart_and_names_the_network(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--workload", "llama-70b-full", "--gpus", "nvidia-h100-sxm5-80gb,amd-mi300x"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "each card's reference node" in out
    box, clusters = out.split("Clusters (nodes of 8):", 1)
    assert "8x Instinct MI300X" in box and "x H100 SXM5 80GB" in clusters.split("\n\n")[0]
    assert main([*argv, "--network-gbs", "25", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    big = [r for r in doc["rows"] if r["count"] > 8 and r["fits"]]
    assert big and all("25 GB/s per node" in r["link_basis"] for r in big)


def test_estimate_cli_reads_a_bench_file(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text(
        json.dumps(
            {"schema_version": 1, "kind": "bench", "devices": [{"device": "cpu", "matmul_tflops": {"fp32": 0.15}}]}
        )
    )
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(bench), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "measured matmul" in doc["local"][0]["basis"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(bad)]) == 2


def test_shipped_calibration_matches_a_fresh_fit(catalog) -> None:
    """If the catalog or the reference data change, the shipped calibration must be refitted."""
    import json as _json

    from gpuselect.estimate.perf import CALIBRATION, fit_model

    fresh = _json.loads(_json.dumps(fit_model(catalog).to_json(), sort_keys=True))
    shipped = _json.loads(CALIBRATION.read_text())
    assert fresh.keys() == shipped.keys()
    for model, per in shipped["models"].items():
        for pc, vals in per.items():
            for k in ("r", "o", "q", "u"):
                assert fresh["models"][model][pc][k] == pytest.approx(vals[k], rel=1e-9, abs=1e-12), (model, pc, k)
    for pc, archs in shipped["arch_eff"].items():
        for arch, e in archs.items():
            assert fresh["arch_eff"][pc][arch] == pytest.approx(e), (pc, arch)


def test_token_measured_models_predict_samples_not_tokens(catalog, perf) -> None:
    # Transformer-XL base is measured in tokens/s; one sample is a 192-token segment, so the
    # app's samples/s must be the measured unit divided by 192 (an epoch-time bug otherwise).
    e = catalog.get("nvidia-a100-sxm4-80gb")
    tokens = perf.predict_reference("transformerxlbase", "tf32", e, batch=32)
    samples = perf.predict(PRESETS["transformerxlbase"], "tf32", e, batch=32)
    assert samples == pytest.approx(tokens / 192)


def test_rows_carry_their_regime_band(catalog, perf) -> None:
    from gpuselect.estimate.api import regime_band

    res = estimate(
        PRESETS["bert_large_squad"],
        Assumptions(max_gpus=2),
        catalog,
        perf,
        gpu_ids=["nvidia-a100-sxm4-80gb", "amd-mi210"],
    )
    band = {(r.gpu_id, r.count): r.error_band for r in res.rows}
    assert (
        band[("amd-mi210", 1)] >= band[("nvidia-a100-sxm4-80gb", 1)]
    )  # AMD compounds amd_extra (0 where AMD cases need no more)
    r = next(r for r in res.rows if r.gpu_id == "nvidia-a100-sxm4-80gb" and r.count == 1)
    assert r.error_band == regime_band("transformer" if r.bound != "overhead" else "overhead", "NVIDIA")


def test_a_multi_gpu_verdict_names_the_global_batch_and_a_cluster_its_restarts() -> None:
    from gpuselect.estimate.recommend import _parallel_caveats
    from gpuselect.types import Stage

    box = {"count": 8, "batch_size": 4, "kind": "rent"}
    (dp,) = _parallel_caveats(box, Stage.WORKSTATION_OR_RENTED)
    assert "4 samples on each GPU (32 in all)" in dp and "averages the 8 gradients" in dp
    cluster = _parallel_caveats({**box, "count": 64}, Stage.CLUSTER)
    assert len(cluster) == 2 and "256 in all" in cluster[0] and "stops all 64" in cluster[1]
    assert _parallel_caveats({**box, "count": 1}, Stage.ONE_GPU) == []
    (one,) = _parallel_caveats({**box, "batch_size": 1}, Stage.WORKSTATION_OR_RENTED)
    assert "1 sample on each GPU (8 in all)" in one


def test_a_gpu_of_a_two_die_board_is_estimated_as_one_die() -> None:
    # PyTorch and amdsmi list each MI250X GCD as a 64 GB GPU: its estimate is half the board's
    # compute, memory and power, not the whole board (which made a GCD look twice as fast).
    from gpuselect.catalog import load_catalog
    from gpuselect.estimate import api as A
    from gpuselect.estimate.recommend import OwnedGpu, own_option

    cat = load_catalog()
    board = cat.get("amd-mi250x")
    assert board.dies == 2
    die = board.one_die()
    assert die.vram_gb == board.vram_gb / 2 and die.fp16_tflops == board.fp16_tflops / 2
    assert die.shader_cores == board.shader_cores // 2 and die.tdp_w == board.tdp_w / 2
    assert die.id == board.id and cat.get("nvidia-h100-sxm5-80gb").one_die() is cat.get("nvidia-h100-sxm5-80gb")
    w, a = PRESETS["resnet50"], A.Assumptions()
    local = A.local_gpu_estimate(w, a, cat, None, name="AMD Instinct MI250X", memory_bytes=64 * 2**30, device="gpu0")
    whole = A.estimate(w, A.Assumptions(counts=(1,)), cat, gpu_ids=["amd-mi250x"], local=[]).rows[0]
    assert local.total_time_h is not None and whole.total_time_h is not None
    assert 1.6 < local.total_time_h / whole.total_time_h < 2.1  # one die: about half the board's rate
    made: list[tuple[float, int]] = []

    def make_row(e, n):  # type: ignore[no-untyped-def]
        made.append((e.vram_gb, n))
        return A.estimate(w, A.Assumptions(counts=(n,)), cat, gpu_ids=[e.id], local=[]).rows[0]

    owned = [OwnedGpu(f"gpu{i}", "AMD Instinct MI250X", "amd-mi250x") for i in range(2)]
    own_option(owned, {board.id: board}, make_row, a)
    assert made == [(board.vram_gb / 2, 2)]  # two dies, each a 64 GB GPU


def test_the_cpu_must_hold_the_training_state_in_its_ram(catalog) -> None:  # type: ignore[no-untyped-def]
    # It was "fits: yes" for every workload, a 70B full fine-tune on a 23 GB machine included.
    w, a = PRESETS["simple-cnn"], A.Assumptions(deadline_hours=1e6)
    ample = A.local_cpu_estimate(w, a, cores=16, mhz=3000, features=[], ram_gb=64)
    tiny = A.local_cpu_estimate(w, a, cores=16, mhz=3000, features=[], ram_gb=0.01)
    assert ample.fits and ample.peak_memory_gb is not None and ample.peak_memory_gb < 64
    # (simple-cnn's state is a few MB: no GPU context counts in a CPU's RAM since session 14)
    assert not tiny.fits and tiny.peak_memory_gb is not None and tiny.peak_memory_gb > 0
    ids = ["nvidia-rtx-4090"]
    assert A.estimate(w, a, catalog, gpu_ids=ids, local=[ample]).recommendation.action == "cpu"
    rec = A.estimate(w, a, catalog, gpu_ids=ids, local=[tiny]).recommendation
    assert rec.action != "cpu" and rec.per_stage["1"]["fits"] is False  # type: ignore[index]
    big = A.local_cpu_estimate(PRESETS["llama-70b-full"], A.Assumptions(), cores=16, mhz=3000, features=[], ram_gb=23.5)
    assert not big.fits and big.peak_memory_gb is not None and big.peak_memory_gb > 1000


def test_a_renter_is_not_steered_to_a_slower_dearer_consumer_card(catalog) -> None:  # type: ignore[no-untyped-def]
    # Llama 8B QLoRA: one RTX 5090 is enough (stage 2), but a rented datacenter card was faster and
    # cheaper to rent, while the verdict said "Rent 1x RTX 5090".
    w = PRESETS["llama-8b-qlora"]
    rec = A.estimate(w, A.Assumptions(), catalog, local=[]).recommendation
    assert rec.stage == 2 and rec.action == "buy" and rec.option is not None and rec.better_rental is not None
    alt, pick = rec.better_rental, rec.option
    assert alt["total_time_h"] <= pick["total_time_h"]  # type: ignore[operator]
    assert rec.choice.startswith("Buy ") and f"or rent {alt['count']}x {alt['name']}" in rec.choice
    # The card to buy is the cheapest purchase in time: an RTX 5090 was named "the smallest card that
    # is enough" (ranked by its $39 rental) where an RTX 4090 for less met the deadline.
    from gpuselect.estimate.recommend import Stage, stage_of

    rows = A.estimate(w, A.Assumptions(), catalog, local=[]).rows
    one = [r for r in rows if stage_of(r, A.Assumptions()) == Stage.ONE_GPU]
    enough = [r for r in one if r.fits and r.meets_deadline and r.buy_cost_usd is not None and r.supported]
    safe = [r for r in enough if r.total_time_h * (1 + r.error_band) <= 72.0]  # its whole range in time
    cheapest = min(safe or enough, key=lambda r: r.buy_cost_usd)  # type: ignore[arg-type,return-value]
    assert pick["gpu_id"] == cheapest.gpu_id and pick["cost_usd"] == cheapest.buy_cost_usd
    assert alt["total_time_h"] <= cheapest.total_time_h  # "faster and costs less" is true of the card named
    # With a budget that buying the card exceeds, the cheaper rental is the answer.
    tight = A.estimate(w, A.Assumptions(budget_usd=100), catalog, local=[]).recommendation
    assert tight.action == "rent" and tight.option is not None and tight.option["gpu_id"] == alt["gpu_id"]
    assert tight.better_rental is None


def test_nothing_fits_names_the_closest_option_and_what_would_make_it_fit(
    catalog, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    # 70B QLoRA on two 24 GB cards: the verdict said "raise the GPU limit or use LoRA/QLoRA" to a
    # user already on QLoRA, and the CLI's "Does not fit" list showed single GPUs only.
    w = PRESETS["llama-70b-qlora"]
    ids = ["nvidia-rtx-4090", "nvidia-rtx-3090"]
    res = A.estimate(w, A.Assumptions(counts=(2,)), catalog, gpu_ids=ids, local=[])
    rec = res.recommendation
    assert rec.action == "none" and not any(r.fits for r in res.rows)
    # JSON said "stage": 4 (a cluster) where every face says "No stage"
    from gpuselect.output import to_jsonable

    doc = to_jsonable(rec)
    assert doc["stage"] is None and doc["stage_name"] == "No stage"
    closest = min(res.rows, key=lambda r: (r.peak_memory_gb or 0) / r.vram_gb)
    assert f"The closest, 2x {closest.name}, needs {closest.peak_memory_gb:,.1f} GB per GPU" in rec.rationale
    # four such consumer cards hold it (QA 16: more GPUs are suggested to several too); offload stays a tip
    assert "sharding the model state over 4 such GPUs" in rec.rationale and "LoRA/QLoRA" not in rec.rationale
    assert any("offloading the parameters to CPU memory" in t for t in closest.suggestions)
    # Where no lever fits (one 65k-token sample's activations exceed an H100), it named more GPUs
    # and offload anyway, and "checkpoint activations" with checkpointing on.
    from gpuselect.workloads.build import build_workload

    long = build_workload(workload="llama-8b-qlora", seq_len=65536)
    res = A.estimate(long, A.Assumptions(counts=(1,)), catalog, gpu_ids=["nvidia-h100-sxm5-80gb"], local=[])
    hint = res.recommendation.fit_hint
    assert res.recommendation.action == "none" and not res.rows[0].suggestions
    assert "which no sharding or offload divides" in hint and "a shorter sequence (--seq-len)" in hint
    assert "--max-gpus" not in hint and "checkpoint activations" not in hint
    # A full fine-tune with no suggestion left still hears of adapters.
    from gpuselect.estimate.recommend import _fit_hint

    assert "LoRA/QLoRA" in _fit_hint([], PRESETS["llama-8b-full"])
    assert "LoRA/QLoRA" not in _fit_hint([], w) and "--offload" in _fit_hint([], w)
    assert main(["estimate", "--workload", "llama-70b-qlora", "--gpus", ",".join(ids), "--count", "2"]) == 0
    out = capsys.readouterr().out
    assert "Does not fit:\n2x GeForce RTX" in out and "0 of 2 options fit." in out


def test_parameter_offload_over_several_gpus_is_sharded(catalog) -> None:  # type: ignore[no-untyped-def]
    # FSDP's CPUOffload and ZeRO-3's offload_param exist only sharded: the row said "ddp" and left
    # out the gathers of the other ranks' shards.
    w, ids = PRESETS["llama-70b-qlora"], ["nvidia-rtx-4090"]
    plain = A.estimate(w, A.Assumptions(counts=(2,), offload="params"), catalog, gpu_ids=ids, local=[]).rows[0]
    fsdp = A.estimate(w, A.Assumptions(counts=(2,), offload="params", sharding="fsdp"), catalog, gpu_ids=ids, local=[])
    r2 = fsdp.rows[0]
    assert plain.fits and plain.parallelism == "fsdp" and plain.sharded
    assert plain.time_breakdown_s["communication"] == pytest.approx(r2.time_breakdown_s["communication"])
    assert plain.tokens_per_s == pytest.approx(r2.tokens_per_s)


@pytest.mark.parametrize(
    ("lo", "hi", "text"),
    [
        (69 / 60, 1.7, "1.1–1.7 h"),  # was "69 min to 1.7 h"
        (0.5, 1.2, "30–72 min"),
        (30.0, 53.4, "30.0–53.4 h"),
        (186.0, 272.0, "186–272 h"),
        (253 * 24, 634 * 24, "253–634 days"),
        (753 * 24, 1634 * 24, "2.1–4.5 years"),  # past two years, in years
        (3 * 8766.0, 40 * 8766.0, "3–40 years"),
        (400.0, 1200.0, "17–50 days"),
        (10 / 3600, 1.2, "10 s to 72 min"),  # the smaller would read "0 min": each in its own unit
        (5 / 3600, 30 / 3600, "5–30 s"),
        (0.5 / 3600, 30 / 3600, "under 1 s to 30 s"),
        (0.2 / 3600, 0.6 / 3600, "under 1 s"),  # was "under 1 s to under 1 s"
    ],
)
def test_a_time_range_is_written_in_one_unit(lo: float, hi: float, text: str) -> None:
    from gpuselect.estimate.recommend import fmt_hours_range

    assert fmt_hours_range(lo, hi) == text


@pytest.mark.parametrize(
    ("h", "text"),
    [(700 * 24, "700 days"), (3 * 8766.0, "3 years"), (4.47 * 8766.0, "4.5 years"), (5_718_159 * 24, "15,655 years")],
)
def test_a_very_long_time_reads_in_years(h: float, text: str) -> None:
    """QA 15: "5,718,159 days" for a CPU that would never finish."""
    from gpuselect.estimate.recommend import fmt_deadline, fmt_hours

    assert fmt_hours(h) == text
    assert fmt_deadline(3 * 8766.0) == "3-year"


def test_a_dataset_smaller_than_the_global_batch_still_takes_a_whole_step(catalog) -> None:  # type: ignore[no-untyped-def]
    # One sample on 8 H100s at batch 2 came out at 0.03 s, a sixteenth of the row's own step: an
    # epoch is one whole step, at the batch the dataset gives each GPU (QA 15: 100 images on a
    # batch-256 card paid batch 256's step, 2.3x their time).
    w, ids = PRESETS["llama-8b-lora"], ["nvidia-h100-sxm5-80gb"]
    one = A.estimate(w, A.Assumptions(counts=(8,), batch_size=1), catalog, gpu_ids=ids, local=[]).rows[0]
    step_at_1 = one.count / one.throughput_samples_per_s
    for n in (1, 7):
        r = A.estimate(w, A.Assumptions(counts=(8,), dataset_size=n, epochs=3), catalog, gpu_ids=ids, local=[]).rows[0]
        assert r.batch_size == 2
        step = r.count * r.batch_size / r.throughput_samples_per_s
        assert r.epoch_time_s == pytest.approx(step_at_1) and r.total_time_h == pytest.approx(3 * step_at_1 / 3600)
        assert r.epoch_time_s < step and "an epoch is one step of 1 per GPU" in r.note
    big = A.estimate(w, A.Assumptions(counts=(8,), dataset_size=10_000), catalog, gpu_ids=ids, local=[]).rows[0]
    assert big.epoch_time_s == pytest.approx(10_000 / big.throughput_samples_per_s)


def test_a_dataset_smaller_than_the_batch_is_timed_at_its_own_size(catalog) -> None:  # type: ignore[no-untyped-def]
    """QA 15: ResNet-50 on 100 images x 1,000 epochs took as long as on 256 (the batch-256 step
    each epoch), while the CPU's time grew with the samples."""
    w, ids = PRESETS["resnet50"], ["nvidia-rtx-4090"]

    def row(**kw: int) -> EstimateRow:
        return A.estimate(w, A.Assumptions(epochs=1000, **kw), catalog, gpu_ids=ids, local=[]).rows[0]

    small, full, at100 = row(dataset_size=100), row(dataset_size=256), row(dataset_size=100, batch_size=100)
    assert small.batch_size == full.batch_size == 256
    assert small.total_time_h == pytest.approx(at100.total_time_h)  # one step of 100 each epoch
    assert small.total_time_h < 0.5 * full.total_time_h
    assert "is smaller than one step's 256" in small.note and "smaller than one step" not in (full.note or "")


def test_the_checkpointing_suggestion_states_its_cost_for_the_mode() -> None:
    # The recompute is one forward: +1/3 over forward + backward, +1/2 where no weight gradients exist.
    from gpuselect.estimate.memory import MemoryOptions, suggestions

    o = MemoryOptions(precision="bf16", optimizer="adamw", gpus=1)
    lora = suggestions(PRESETS["llama-8b-lora"], 80.0, o, 16)
    full = suggestions(PRESETS["llama-1b-full"], 80.0, o, 16)
    assert any("full activation checkpointing (about half more compute)" in t for t in lora)
    assert any("full activation checkpointing (about a third more compute)" in t for t in full)


def test_the_cpu_leaves_the_system_a_tenth_of_its_ram() -> None:
    # "fits: yes" at 23.49 of 23.54 GB: nothing left for the system.
    w = PRESETS["resnet50"]
    # the batch and checkpointing fixed: no way out by a smaller batch or recompute
    a = A.Assumptions(deadline_hours=1e6, checkpointing="none", batch_size=w.default_batch_size)
    ample = A.local_cpu_estimate(w, a, cores=16, mhz=3000, features=[], ram_gb=256)
    need = ample.peak_memory_gb
    assert need is not None and ample.fits and ample.max_batch is not None
    tight = A.local_cpu_estimate(w, a, cores=16, mhz=3000, features=[], ram_gb=need * 1.02)
    room = A.local_cpu_estimate(w, a, cores=16, mhz=3000, features=[], ram_gb=need / 0.85 + 0.1)
    assert not tight.fits and room.fits and room.peak_memory_gb == need
    assert A.usable_ram_gb(8.0) == pytest.approx(7.0) and A.usable_ram_gb(64.0) == pytest.approx(57.6)


def test_rows_no_measured_step_validates_say_so(catalog, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    # Every LoRA/QLoRA, offload and PCIe-only row printed its regime's band as if validated.
    ids = ["nvidia-rtx-4090", "nvidia-h100-sxm5-80gb"]
    rows = A.estimate(PRESETS["llama-8b-lora"], A.Assumptions(counts=(1, 4)), catalog, gpu_ids=ids, local=[]).rows
    by = {(r.gpu_id, r.count): r for r in rows}
    assert by[("nvidia-h100-sxm5-80gb", 1)].band_note is None  # LoRA on one GPU: our H100 steps
    assert by[("nvidia-h100-sxm5-80gb", 4)].band_note is None  # NVLink
    assert by[("nvidia-rtx-4090", 4)].band_note == "not validated by a measured step: PCIe-only multi-GPU"
    q = A.estimate(
        PRESETS["llama-70b-qlora"], A.Assumptions(counts=(2,), offload="params"), catalog, gpu_ids=ids[:1], local=[]
    ).rows[0]
    assert q.band_note is not None and all(
        p in q.band_note for p in ("parameter offload", "PCIe-only multi-GPU", "QLoRA's tokens per step")
    )
    assert main(["estimate", "--workload", "llama-8b-lora", "--gpus", ",".join(ids), "--count", "1,4"]) == 0
    out = capsys.readouterr().out
    assert "21%*" in out and "* no measured step validates PCIe-only multi-GPU" in out
    assert f"multi-GPU: {BORROWED_BAND_NOTE} (docs/accuracy.md)" in out  # the report's and the app's words


def test_cluster_and_deepspeed_rows_no_measured_step_validates_say_so(catalog) -> None:  # type: ignore[no-untyped-def]
    # DDP past 8 GPUs, any step past 512 GPUs and DeepSpeed ZeRO-1/2 carried their regime's band
    # unmarked, though no measured step ran them (the DDP rows at 1,024 GPUs move by -33 to +23 %
    # between two latency models: nccl-latency/ddp.txt).
    h100 = ["nvidia-h100-sxm5-80gb"]
    rows = A.estimate(PRESETS["resnet50"], A.Assumptions(counts=(8, 16, 1024)), catalog, gpu_ids=h100, local=[]).rows
    by = {r.count: r for r in rows}
    assert all(r.parallelism == "ddp" for r in rows)
    assert by[8].band_note is None  # the shared data's DDP rows run 2-8 GPUs
    assert by[16].band_note == "not validated by a measured step: data parallel past 8 GPUs"
    assert by[1024].band_note is not None and "more than 512 GPUs" in by[1024].band_note
    fsdp = A.estimate(PRESETS["llama-8b-full"], A.Assumptions(counts=(64, 1024)), catalog, gpu_ids=h100, local=[]).rows
    by = {r.count: r for r in fsdp}
    assert by[64].parallelism == "fsdp" and by[64].band_note is None  # llm-foundry's FSDP rows: 8-512 GPUs
    assert by[1024].band_note == "not validated by a measured step: more than 512 GPUs"
    z = A.estimate(
        PRESETS["llama-8b-full"], A.Assumptions(counts=(8,), sharding="zero2"), catalog, gpu_ids=h100, local=[]
    )
    assert z.rows[0].band_note == "not validated by a measured step: DeepSpeed ZeRO-1/2"


def test_options_this_workload_does_not_use_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    # Selective checkpointing on a CNN became full, --loss on a CNN and --max-gpus beside --count
    # did nothing, and nothing said so.
    argv = ["estimate", "--workload", "resnet50", "--gpus", "nvidia-h100-sxm5-80gb", "--format", "json"]
    assert main([*argv, "--checkpointing", "selective", "--loss", "plain", "--count", "2", "--max-gpus", "1"]) == 0
    err = capsys.readouterr().err
    assert "selective checkpointing is for transformers" in err and "--loss applies to language models" in err
    assert "--max-gpus is not used" in err
    assert main([*argv, "--sharding", "fsdp", "--count", "1"]) == 0
    assert "one GPU holds all of it" in capsys.readouterr().err
    assert main(argv) == 0 and "note:" not in capsys.readouterr().err  # defaults say nothing
    assert main(["estimate", "--workload", "llama-1b-lora", "--loss", "plain", "--gpus", "nvidia-rtx-4090"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_left_to_choose_a_bigger_card_box_is_never_slower_for_want_of_sharding(catalog) -> None:  # type: ignore[no-untyped-def]
    # 4x/8x A100 80GB (DDP, batch 2) trained Llama 3.2 3B slower than 4x/8x A100 40GB, which had to
    # shard (FSDP, batch 2): the default sharded only what did not fit.
    w = PRESETS["llama-3b-full"]
    ids = ["nvidia-a100-sxm4-80gb", "nvidia-a100-sxm4-40gb"]
    rows = A.estimate(w, A.Assumptions(counts=(4, 8)), catalog, gpu_ids=ids, local=[]).rows
    by = {(r.gpu_id, r.count): r for r in rows}
    for n in (4, 8):
        big, small = by[(ids[0], n)], by[(ids[1], n)]
        assert big.throughput_samples_per_s >= small.throughput_samples_per_s  # type: ignore[operator]
        assert big.parallelism == "fsdp" and big.batch_size > small.batch_size  # type: ignore[operator]
    # Told not to shard, it does not.
    ddp = A.estimate(w, A.Assumptions(counts=(4,), sharding="none"), catalog, gpu_ids=ids[:1], local=[]).rows[0]
    assert ddp.parallelism == "ddp" and ddp.throughput_samples_per_s < by[(ids[0], 4)].throughput_samples_per_s  # type: ignore[operator]


def test_a_weaker_sharding_is_labelled_as_it_runs_and_fsdp_is_suggested(catalog) -> None:  # type: ignore[no-untyped-def]
    # --sharding zero2 that did not fit was labelled "fsdp" and advised 8-bit Adam, though
    # --sharding fsdp fits the same two H100s; a parameter-offload row's note said "sharded (none)".
    w, ids = PRESETS["llama-8b-full"], ["nvidia-h100-sxm5-80gb"]
    for sharding in ("none", "zero1", "zero2"):
        r = A.estimate(w, A.Assumptions(counts=(2,), sharding=sharding), catalog, gpu_ids=ids, local=[]).rows[0]
        assert not r.fits and r.parallelism == "ddp"
        assert r.suggestions[0].startswith("sharding everything over the 2 GPUs (--sharding fsdp")
    fsdp = A.estimate(w, A.Assumptions(counts=(2,), sharding="fsdp"), catalog, gpu_ids=ids, local=[]).rows[0]
    assert fsdp.fits and fsdp.parallelism == "fsdp"
    q = _qlora_70b_offloaded_on_two_4090s(catalog)
    assert (
        q.note is not None and "sharded (fsdp, parameters offloaded to the host)" in q.note and "(none)" not in q.note
    )


def test_an_input_shape_without_a_model_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # `--workload resnet50 --input-shape banana` ran and ignored it, while --factory was refused.
    assert main(["estimate", "--workload", "resnet50", "--input-shape", "banana"]) == 2
    assert "go with --model" in capsys.readouterr().err
    assert (
        main(
            [
                "estimate",
                "--workload",
                "resnet50",
                "--gpus",
                "nvidia-h100-sxm5-80gb",
                "--count",
                "2",
                "--network-gbs",
                "100",
            ]
        )
        == 0
    )
    assert "none of these counts spans nodes" in capsys.readouterr().err


def test_count_notes_count_a_multi_die_cards_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """QA 16: 8 MI250X are 16 GCDs, two nodes, listed under "Clusters" at the network given; the
    note said --network-gbs joined nothing ("none of these counts spans nodes")."""
    args = ["estimate", "--workload", "llama-8b-full", "--gpus", "amd-mi250x", "--network-gbs", "10"]
    assert main([*args, "--count", "4,8"]) == 0
    out, err = capsys.readouterr()
    assert "Clusters (nodes of 8)" in out and "spans nodes" not in err
    assert main([*args, "--count", "4"]) == 0  # 8 GCDs: one node
    assert "none of these counts spans nodes" in capsys.readouterr().err
    # one MI250X is two GCDs, which --sharding splits the state over
    assert main([*args[:5], "--count", "1", "--sharding", "fsdp"]) == 0
    out, err = capsys.readouterr()
    assert "per GCD" in out and "one GPU holds all of it" not in err


def _fleet(path: Path, *, across: bool) -> str:
    points = [{"op": "all_reduce", "scope": "intra-node", "bytes": 1 << 28, "busbw_gbs": 150.0, "ranks": 8}]
    if across:
        points.append({"op": "all_reduce", "scope": "all-ranks", "bytes": 1 << 28, "busbw_gbs": 20.0, "ranks": 16})
    doc = {"kind": "fleet", "report": {"complete": True, "backend": "nccl", "nodes": [{}, {}], "bandwidth": points}}
    path.write_text(json.dumps(doc))
    return str(path)


def test_measured_links_say_what_joins_the_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA 16: a fleet run within one node leaves the cluster rows on the spec network, which the
    CLI's line did not say (only the measurement); the report said "joined by each card's
    reference node network" whatever was measured, and never named the measurement."""
    base = ["--workload", "llama-8b-full", "--gpus", "nvidia-h100-sxm5-80gb", "--count", "8,16"]
    intra = _fleet(tmp_path / "intra.json", across=False)
    assert main(["estimate", *base, "--interconnect", intra, "--network-gbs", "5"]) == 0
    out = capsys.readouterr().out
    assert "intra-node 150.00 GB/s (8 ranks); between nodes (not measured) 5 GB/s per node" in out
    md = tmp_path / "r.md"
    assert main(["report", "-o", str(md), "--no-bench", *base, "--interconnect", intra, "--network-gbs", "5"]) == 0
    text = md.read_text()
    assert "links as measured by `gpuselect fleet`: intra-node 150.00 GB/s" in text
    assert "clusters over nodes of 8 joined by 5 GB/s per node." in text
    across = _fleet(tmp_path / "across.json", across=True)
    assert main(["report", "-o", str(md), "--force", "--no-bench", *base, "--interconnect", across]) == 0
    text = md.read_text()
    assert "all ranks 20.00 GB/s (16 ranks)" in text and "clusters over nodes of 8 joined as measured." in text
    line = next(x for x in text.splitlines() if x.startswith("Precision auto"))
    assert "reference node network" not in line


def test_a_cluster_is_no_faster_than_the_node_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QA 17: a fleet run within one node (150 GB/s all-reduce busbw over 8 H100s) left every
    cluster row on the spec NVLink (360 GB/s) capped by the network (400 x 0.8 = 320): 64 GPUs
    got a ring twice as fast as the box the measurement came from, whose links that ring crosses.
    The ring is the slower of the measured node and the network between nodes."""
    intra = _fleet(tmp_path / "intra.json", across=False)
    base = ["estimate", "--workload", "llama-70b-full", "--gpus", "nvidia-h100-sxm5-80gb", "--count", "8,64"]

    def rows(*extra: str) -> dict[int, dict[str, Any]]:
        assert main([*base, "--interconnect", intra, "--format", "json", *extra]) == 0
        return {r["count"]: r for r in json.loads(capsys.readouterr().out)["rows"]}

    measured = rows()
    assert measured[64]["link_gbs"] == pytest.approx(150.0)
    assert measured[64]["link_basis"] == f"measured intra-node 150.00 GB/s ({intra})"
    # FSDP's two gathers and one reduce-scatter of the 16-bit model at the measured ring, less the
    # share fitted to hide behind compute
    bd = measured[64]["time_breakdown_s"]
    moved = 63 / 64 * 3 * 2 * PRESETS["llama-70b-full"].params / 150e9
    device = bd["compute"] + bd["memory"] + bd["kernel_floor"] + bd["optimizer"]
    hidden = roofline_params().doc["comm"]["fsdp_overlap"] * device
    assert bd["communication"] == pytest.approx(moved - hidden, rel=0.01)
    # a network slower than the node still bounds it, as without a measurement
    slow = rows("--network-gbs", "100")
    assert slow[64]["link_gbs"] == pytest.approx(80.0)
    assert slow[64]["link_basis"] == "spec: network 100 GB/s per node"


def test_a_mesh_measured_on_more_gpus_is_scaled_to_the_links_a_smaller_ring_crosses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 17: two MI300X ring over the one Infinity Fabric link between them (the spec link is
    scaled so since session 17), but a node measured on 8 ranks gave them its seven links' 150 GB/s.
    A switched board (H100) keeps the measured figure at any count within the node."""
    fleet = _fleet(tmp_path / "intra.json", across=False)  # 150 GB/s over 8 ranks

    def rows(gpu: str) -> dict[int, dict[str, Any]]:
        argv = ["estimate", "--workload", "llama-8b-full", "--gpus", gpu, "--count", "2,4,8", "--format", "json"]
        assert main([*argv, "--interconnect", fleet]) == 0
        return {r["count"]: r for r in json.loads(capsys.readouterr().out)["rows"]}

    mi = rows("amd-mi300x")
    assert [mi[n]["link_gbs"] for n in (2, 4, 8)] == pytest.approx([150 / 7, 150 * 3 / 7, 150], abs=1e-3)
    assert mi[2]["link_basis"].endswith("scaled to 1 of its 7 mesh links") and "scaled" not in mi[8]["link_basis"]
    h100 = rows("nvidia-h100-sxm5-80gb")
    assert [h100[n]["link_gbs"] for n in (2, 4, 8)] == pytest.approx([150.0] * 3)


def test_offload_says_how_much_the_host_must_hold(catalog) -> None:  # type: ignore[no-untyped-def]
    # "Offload the parameters" to two 24 GB cards for a 70B full fine-tune needs ~1.1 TB of host RAM,
    # and nothing said so.
    full = A.estimate(
        PRESETS["llama-70b-full"], A.Assumptions(counts=(2,)), catalog, gpu_ids=["nvidia-rtx-4090"], local=[]
    )
    tip = next(t for t in full.rows[0].suggestions if "offloading the parameters to CPU memory" in t)
    gb = float(tip.split("holds about ")[1].split(" GB")[0].replace(",", ""))
    assert 1000 < gb < 1300  # 70.6 B parameters x 16 bytes of weights, gradients and AdamW state
    q = _qlora_70b_offloaded_on_two_4090s(catalog)
    assert q.note is not None and "the host holds about" in q.note


def _qlora_70b_offloaded_on_two_4090s(catalog) -> A.EstimateRow:  # type: ignore[no-untyped-def]
    return A.estimate(
        PRESETS["llama-70b-qlora"],
        A.Assumptions(counts=(2,), offload="params"),
        catalog,
        gpu_ids=["nvidia-rtx-4090"],
        local=[],
    ).rows[0]


def test_more_options_that_change_nothing_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--workload", "resnet50", "--gpus", "nvidia-rtx-4090", "--format", "json"]
    assert main([*argv, "--max-gpus", "3", "--optimizer", "sgd", "--offload", "optimizer"]) == 0
    err = capsys.readouterr().err
    assert "--max-gpus 3 considers boxes of 1, 2, 4" in err and "2 is the largest" in err
    assert "plain SGD keeps no optimizer state" in err
    assert main([*argv, "--max-gpus", "4"]) == 0 and "note:" not in capsys.readouterr().err


def test_an_unknown_option_is_named_by_its_commands_parser(capsys: pytest.CaptureFixture[str]) -> None:
    # `bench --bogus` pointed to `gpuselect --help`, and `estimate --bogus` said a workload was missing.
    with pytest.raises(SystemExit) as exc:
        main(["estimate", "--workload", "resnet50", "--bogus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bogus" in err and "`gpuselect estimate --help`" in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        # An abbreviation is refused (allow_abbrev=False), but argparse's missing-option check ran
        # first: "one of the arguments --workload --config --params --model is required".
        (
            ["estimate", "--work", "resnet50"],
            "unrecognized arguments: --work (option names are given in full: did you mean --workload?)",
        ),
        (
            ["report", "--out", "r.md", "--no-bench"],
            "unrecognized arguments: --out (option names are given in full: did you mean --output?)",
        ),
        (
            ["estimate", "--workload", "resnet50", "--to", "3"],
            "unrecognized arguments: --to 3 (option names are given in full: did you mean --top?)",
        ),
        # a bare "--" abbreviates no option: it listed all 34 (review 16)
        (["estimate", "--workload", "resnet50", "--", "foo"], "unrecognized arguments: -- foo (`"),
    ],
)
def test_an_abbreviated_option_is_named_not_a_missing_one(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and said in err and "required" not in err
    # A missing option with nothing unknown keeps argparse's own sentence; a negative number is a
    # value, not an unknown option.
    with pytest.raises(SystemExit):
        main(["estimate", "--top", "3"])
    assert "one of the arguments --workload --config --params --model is required" in capsys.readouterr().err
    sub = build_parser().parse_known_args(["estimate", "--workload", "resnet50"])[0]._parser
    assert sub.unknown_options(["--seq-len", "-5", "--top=3", "--tpo=3", "-", "--", "--x"]) == ["--tpo=3"]


def test_options_that_fit_without_a_price_are_named_not_called_unfit() -> None:
    # 8x B300 fits and finishes in time, but the catalog prices no B300: the verdict said "does not
    # fit any GPU" and Stage 4.
    slow_cpu = [LocalEstimate("cpu", "CPU", 1.0, 1e6, "measured", 0.5)]
    rows = [_r("b300", "datacenter", 8, 5.6, None), _r("b300", "datacenter", 4, 9.0, None)]
    rows[1] = dataclasses.replace(rows[1], fits=False)
    rec = recommend(rows, slow_cpu, Assumptions(deadline_hours=72), W)
    assert rec.action == "miss" and rec.missed == "price" and rec.stage == 3
    assert rec.option is not None and rec.option["count"] == 8
    assert "does not fit" not in rec.rationale and "no price" in rec.rationale and "inside your 72 h" in rec.rationale
    assert rec.per_stage["3"] == rec.option  # the chart's bar is the option named
    # Nothing at all fits: that is still said.
    unfit = [dataclasses.replace(r, fits=False) for r in rows]
    assert recommend(unfit, slow_cpu, Assumptions(deadline_hours=72), W).action == "none"
    # A priced option misses the deadline while an unpriced one meets it: both are named.
    mixed = [_r("slow", "datacenter", 1, 100.0, 300), _r("b300", "datacenter", 8, 5.6, None)]
    rec = recommend(mixed, slow_cpu, Assumptions(deadline_hours=72), W)
    assert rec.missed == "deadline" and rec.unpriced is not None and rec.unpriced["gpu_id"] == "b300"
    assert "8x b300 would meet the deadline" in rec.rationale


def test_a_missed_deadline_states_the_cost_and_a_much_cheaper_near_option() -> None:
    slow_cpu = [LocalEstimate("cpu", "CPU", 1.0, 1e6, "measured", 0.5)]
    # 7.5 h is outside the fastest's range (5.4 h ±30 % reaches 7.0 h): the fastest stays the answer
    rows = [_r("big", "datacenter", 1024, 5.4, 37_000, 1), _r("box", "datacenter", 8, 7.5, 330, 1)]
    rec = recommend(rows, slow_cpu, Assumptions(deadline_hours=1), W)
    assert rec.missed == "deadline" and rec.option is not None and rec.option["count"] == 1024
    assert "$37,000 to buy and run" in rec.rationale  # the fastest's cost is stated, and of what kind
    assert rec.value_alt is not None and rec.value_alt["count"] == 8
    assert "about $330 to buy and run, a fraction of the cost" in rec.rationale
    assert rec.per_stage["4"] == rec.option and rec.tied_faster is None
    # Not much cheaper (more than half the cost), or much slower (over 1.5x): no alternative named.
    close = [_r("big", "datacenter", 8, 5.4, 600, 1), _r("box", "datacenter", 8, 7.5, 330, 1)]
    assert recommend(close, slow_cpu, Assumptions(deadline_hours=1), W).value_alt is None
    slow = [_r("big", "datacenter", 1024, 5.4, 37_000, 1), _r("box", "datacenter", 8, 9.0, 330, 1)]
    assert recommend(slow, slow_cpu, Assumptions(deadline_hours=1), W).value_alt is None


def test_a_missed_budget_puts_the_named_option_on_the_stage_chart() -> None:
    # The headline took the cheapest option in time while the chart's stage bar showed the fastest.
    slow_cpu = [LocalEstimate("cpu", "CPU", 1.0, 1e6, "measured", 0.5)]
    rows = [_r("one", "datacenter", 1, 10.0, 23), _r("eight", "datacenter", 8, 0.6, 31)]
    rec = recommend(rows, slow_cpu, Assumptions(deadline_hours=72, budget_usd=1), W)
    assert rec.missed == "budget" and rec.option is not None and rec.option["gpu_id"] == "one"
    assert rec.per_stage["3"] == rec.option


def test_a_budget_that_rules_out_buying_keeps_saying_one_consumer_card_is_enough(catalog) -> None:  # type: ignore[no-untyped-def]
    w = PRESETS["llama-8b-qlora"]
    rec = A.estimate(w, A.Assumptions(budget_usd=100), catalog, local=[]).recommendation
    assert rec.stage == 3 and rec.action == "rent" and rec.consumer_alt is not None
    assert "One consumer card is also enough" in rec.rationale and "over your budget" in rec.rationale
    assert rec.per_stage["3"] == rec.option


def test_count_leaves_out_counts_nobody_builds(catalog, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    w = PRESETS["gpt2-124m"]
    rows = A.estimate(w, A.Assumptions(counts=(16,)), catalog, local=[]).rows
    assert rows and all(r.family in ("datacenter", "instinct") for r in rows)
    assert not any("Laptop" in r.name for r in rows)
    with pytest.raises(UsageError, match="not built in counts of 16"):
        A.estimate(w, A.Assumptions(counts=(16,)), catalog, gpu_ids=["nvidia-rtx-4090"], local=[])
    assert main(["estimate", "--workload", "gpt2-124m", "--count", "1,16", "--gpus", "nvidia-rtx-4090"]) == 0
    err = capsys.readouterr().err
    assert "--count leaves out 16x GeForce RTX 4090" in err
    assert main(["estimate", "--workload", "gpt2-124m", "--count", "1,2", "--gpus", "nvidia-h100-sxm5-80gb"]) == 0
    assert "--count leaves out" not in capsys.readouterr().err  # nothing left out: no note
    # everything left out: the error alone says why (QA 15: the note said it too, word for word)
    assert main(["estimate", "--workload", "gpt2-124m", "--count", "8", "--gpus", "nvidia-rtx-4090"]) == 2
    err = capsys.readouterr().err
    assert "not built in counts of 8" in err and "--count leaves out" not in err


def test_fit_suggestions_never_shard_over_more_cards_than_anyone_builds(catalog) -> None:  # type: ignore[no-untyped-def]
    w = PRESETS["llama-70b-full"]
    rows = A.estimate(w, A.Assumptions(), catalog, gpu_ids=["nvidia-rtx-5090", "nvidia-h100-sxm5-80gb"], local=[]).rows
    one_5090 = next(r for r in rows if r.gpu_id == "nvidia-rtx-5090" and r.count == 1)
    assert not any("over 64 such" in s or "over 16 such" in s for s in one_5090.suggestions)
    one_h100 = next(r for r in rows if r.gpu_id == "nvidia-h100-sxm5-80gb" and r.count == 1)
    assert any("such GPUs" in s for s in one_h100.suggestions)  # a datacenter card may shard over many


def test_ecc_on_gddr_datacenter_cards_leaves_fifteen_sixteenths(catalog) -> None:  # type: ignore[no-untyped-def]
    # An L40S "fitted" Llama 8B QLoRA at 47.2 of 48 GB; with ECC on (the default) it exposes 45 GB.
    l40s, a100, a6000 = (catalog.get(g) for g in ("nvidia-l40s", "nvidia-a100-sxm4-80gb", "nvidia-rtx-a6000"))
    assert l40s.usable_vram_gb == pytest.approx(45.0) and a100.usable_vram_gb == a100.vram_gb  # HBM: no loss
    # An H100 SXM5 "80GB" shows 81,559 MiB (our detect.json): 79.8 of "80" fitted above what it has.
    h100 = catalog.get("nvidia-h100-sxm5-80gb")
    assert h100.usable_vram_gb == pytest.approx(79.65)
    (r,) = A.estimate(PRESETS["llama-8b-lora"], A.Assumptions(counts=(1,)), catalog, gpu_ids=[h100.id], local=[]).rows
    assert r.vram_gb == pytest.approx(79.65) and "the driver shows 79.65 of its 80 GB" in (r.note or "")
    assert "ECC" not in (r.note or "") and (not r.fits or r.peak_memory_gb <= 79.65)
    assert a6000.usable_vram_gb == a6000.vram_gb  # workstation cards ship with ECC off
    w = dataclasses.replace(PRESETS["llama-8b-qlora"])
    (r,) = A.estimate(w, A.Assumptions(counts=(1,)), catalog, gpu_ids=["nvidia-l40s"], local=[]).rows
    assert r.fits and r.vram_gb == pytest.approx(45.0) and r.peak_memory_gb <= 45.0
    assert "45 of its 48 GB usable" in (r.note or "")


def test_rdna2_and_vega20_train_in_fp16_and_no_card_is_told_to_use_a_precision_it_lacks(catalog) -> None:  # type: ignore[no-untyped-def]
    from gpuselect.estimate.roofline import resolve_precision

    for gid in ("amd-rx-6900-xt", "amd-mi50", "amd-radeon-vii"):
        e = catalog.get(gid)
        assert resolve_precision(e, "auto") == "fp16" and e.fp16_tflops == pytest.approx(2 * e.fp32_tflops, rel=0.01)
    assert resolve_precision(catalog.get("nvidia-p100-sxm2"), "auto") == "fp32"
    # "try pure bf16 training" to a card without bf16 (its bf16-true runs fp16 mixed, which does not fit)
    rows = A.estimate(
        PRESETS["llama-1b-full"],
        A.Assumptions(counts=(1,)),
        catalog,
        gpu_ids=["amd-mi50", "nvidia-p100-sxm2"],
        local=[],
    ).rows
    for r in rows:
        assert not r.fits and not any("bf16" in s or "mixed precision" in s for s in r.suggestions), (
            r.name,
            r.suggestions,
        )


def test_a_host_bound_step_reads_overhead_on_every_card_and_offloaded_rows_take_the_widest_band(catalog) -> None:  # type: ignore[no-untyped-def]
    # gpt2-124m at batch 1: the same host-bound rate read "compute" on an RTX 4090 and "overhead" on
    # an A100 (the label picks the band, so their ± differed too).
    w = PRESETS["gpt2-124m"]
    rows = A.estimate(
        w,
        A.Assumptions(counts=(1,), batch_size=1, checkpointing=True),
        catalog,
        gpu_ids=["nvidia-rtx-4090", "nvidia-a100-sxm4-80gb"],
        local=[],
    ).rows
    for r in rows:
        host = r.time_breakdown_s.get("host", 0)
        if host > 0:  # the host outlasts the device (host holds only its excess in the breakdown)
            assert r.bound == "overhead", (r.name, r.bound, r.time_breakdown_s)
    assert len({r.error_band for r in rows if r.bound == "overhead"}) <= 1
    off = A.estimate(
        PRESETS["llama-8b-full"],
        A.Assumptions(counts=(1,), offload="optimizer"),
        catalog,
        gpu_ids=["nvidia-h100-sxm5-80gb", "nvidia-h100-pcie-80gb"],
        local=[],
    ).rows
    widest = A.regime_band("moe", "NVIDIA")
    assert all(r.fits and r.error_band == widest for r in off)


def test_a_paged_optimizer_pays_for_what_it_pages(catalog) -> None:  # type: ignore[no-untyped-def]
    # 1x MI300X showed 203.2 of 192 GB "fitting" at batch 6 with no time for the paging, faster
    # than plain 8-bit Adam at the batch that fits.
    w = PRESETS["llama-8b-full"]

    def row(opt: str, batch: int | None) -> A.EstimateRow:
        a = A.Assumptions(counts=(1,), optimizer=opt, batch_size=batch, checkpointing="none")
        (r,) = A.estimate(w, a, catalog, gpu_ids=["amd-mi300x"], local=[]).rows
        return r

    plain, paged = row("adam8bit", None), row("paged-adamw8bit", None)
    # paging never wins by allowing a batch over memory (it may win by the headroom plain Adam keeps:
    # a paged state that runs short pages out instead of running out of memory)
    assert paged.tokens_per_s <= plain.tokens_per_s * 1.001 or (
        paged.peak_memory_gb is not None
        and paged.peak_memory_gb <= paged.vram_gb
        and "paging" not in paged.time_breakdown_s
    )
    assert plain.max_batch is not None
    over = row("paged-adamw8bit", plain.max_batch + 1)  # beyond what plain 8-bit Adam fits at all
    assert over.fits and over.peak_memory_gb > over.vram_gb
    assert over.time_breakdown_s["paging"] > 0 and "paged in and out every step" in (over.note or "")


def test_an_mi250x_trains_as_its_two_gcds(catalog) -> None:  # type: ignore[no-untyped-def]
    # "1x MI250X, batch 4, 108.4/128 GB, single" was recommended to buy: PyTorch sees two 64 GB GPUs.
    rows = A.estimate(PRESETS["llama-8b-lora"], A.Assumptions(), catalog, gpu_ids=["amd-mi250x"], local=[]).rows
    one = next(r for r in rows if r.count == 1)
    assert one.dies == 2 and one.vram_gb == 64 and one.parallelism in ("ddp", "fsdp")
    assert one.peak_memory_gb is not None and one.peak_memory_gb <= 64 and "2 GCDs" in one.name
    assert one.buy_cost_usd == pytest.approx(14500, rel=0.01)  # the card's price, once
    from gpuselect.estimate.recommend import Stage, stage_of

    assert max(r.count for r in rows) == 4  # a box of eight GPUs holds four of them
    assert stage_of(next(r for r in rows if r.count == 4), A.Assumptions()) == Stage.WORKSTATION_OR_RENTED
    (eight,) = A.estimate(
        PRESETS["llama-8b-lora"], A.Assumptions(counts=(8,)), catalog, gpu_ids=["amd-mi250x"], local=[]
    ).rows
    assert stage_of(eight, A.Assumptions()) == Stage.CLUSTER  # 16 GPUs: two nodes of 8


def test_a_rate_from_a_larger_cloud_offer_is_said(catalog) -> None:  # type: ignore[no-untyped-def]
    # "1x B200 ... $27" priced one GPU of Lambda's 8-GPU instance as if one could be rented alone.
    b200 = catalog.get("nvidia-b200")
    assert b200.cloud_offer_gpus == 8 and catalog.get("nvidia-gh200-96gb").cloud_offer_gpus == 1
    rows = A.estimate(PRESETS["gpt2-124m"], A.Assumptions(), catalog, gpu_ids=["nvidia-b200"], local=[]).rows
    one, eight = (next(r for r in rows if r.count == n) for n in (1, 8))
    assert one.cloud_offer_gpus == 8 and "8-GPU offer" in (one.note or "")
    assert eight.cloud_offer_gpus is None and "GPU offer" not in (eight.note or "")
    rec = A.estimate(
        PRESETS["gpt2-124m"], A.Assumptions(budget_usd=100), catalog, gpu_ids=["nvidia-rtx-5090"], local=[]
    ).recommendation
    assert rec.action == "rent" and "per GPU of a 2-GPU offer" in rec.rationale


def test_several_gpus_are_priced_by_an_offer_that_rents_them_linked(catalog) -> None:  # type: ignore[no-untyped-def]
    """8x GH200 were priced from Lambda's single-GPU instance with one box's 900 GB/s link, and 8x
    MI300X from RunPod's 4-GPU one: the price data rents neither linked, so they have no rental
    price; 8x H100 take the 8-GPU offer's rate, not the single GPU's."""
    w = PRESETS["gpt2-124m"]
    ids = ["nvidia-gh200-96gb", "nvidia-h100-sxm5-80gb", "amd-mi300x"]
    rows = A.estimate(w, A.Assumptions(counts=(1, 4, 8, 16)), catalog, gpu_ids=ids, local=[]).rows
    row = {(r.gpu_id, r.count): r for r in rows}
    gh8 = row["nvidia-gh200-96gb", 8]
    assert gh8.cloud_cost_usd is None and gh8.cloud_unlinked and gh8.cloud_offer_gpus == 1
    assert "no rental price: the price data rents it only as a 1-GPU offer (lambda:gpu_1x_gh200" in (gh8.note or "")
    assert row["nvidia-gh200-96gb", 1].cloud_cost_usd is not None
    h100 = catalog.get("nvidia-h100-sxm5-80gb")
    for n, rate in (
        (1, h100.cloud_usd_per_hour),
        (8, h100.cloud_node_usd_per_hour),
        (16, h100.cloud_node_usd_per_hour),
    ):
        r = row["nvidia-h100-sxm5-80gb", n]
        assert r.cloud_cost_usd == pytest.approx(rate * n * r.total_time_h), n  # 16: two whole 8-GPU nodes
    assert h100.cloud_node_usd_per_hour > h100.cloud_usd_per_hour
    assert row["amd-mi300x", 4].cloud_cost_usd is not None and row["amd-mi300x", 8].cloud_cost_usd is None
    # twelve H100s: whole 8-GPU nodes over the network, at the node offer's rate, two nodes paid for
    assert A.cloud_rate(h100, 12)[:2] == (h100.cloud_node_usd_per_hour, h100.cloud_node_provider)
    (twelve,) = A.estimate(w, A.Assumptions(counts=(12,)), catalog, gpu_ids=[h100.id], local=[]).rows
    assert twelve.cloud_cost_usd == pytest.approx(h100.cloud_node_usd_per_hour * 16 * twelve.total_time_h)
    assert "rented as 2 whole 8-GPU offers" in (twelve.note or "")
    # an offer of unknown size (a user's overlay) prices any count, as before
    plain = replace(catalog.get("nvidia-l40s"), cloud_gpus=None, cloud_provider="myco:l40s")
    assert A.cloud_rate(plain, 8) == (plain.cloud_usd_per_hour, "myco:l40s", None, True)


def test_owning_an_mi250x_counts_cards_not_gcds(catalog) -> None:  # type: ignore[no-untyped-def]
    # Owning one MI250X (two GPUs to the driver) made the "2x" row say "you own 2: nothing to buy".
    from gpuselect.estimate.recommend import OwnedGpu

    owned = [OwnedGpu(f"gpu{i}", "AMD Instinct MI250X", "amd-mi250x") for i in range(2)]  # one card's two GCDs
    res = A.estimate(PRESETS["llama-8b-lora"], A.Assumptions(), catalog, gpu_ids=["amd-mi250x"], local=[], owned=owned)
    two = next(r for r in res.rows if r.count == 2)
    assert "you own 1: buy 1 more" in (two.note or "")
    assert two.buy_cost_usd is not None and two.buy_cost_usd > 14_000  # one more card to buy
    # four cards (eight GCDs) are "your 4x", as the table counts them (the headline said 8x)
    eight = [OwnedGpu(f"gpu{i}", "AMD Instinct MI250X", "amd-mi250x") for i in range(8)]
    res = A.estimate(PRESETS["llama-8b-full"], A.Assumptions(), catalog, gpu_ids=["amd-mi250x"], local=[], owned=eight)
    own = res.recommendation.own
    assert own is not None and own["count"] == 4 and own["owned"] == 4 and own["ranks"] == 8
    if res.recommendation.action == "have":
        assert "your 4x Instinct MI250X" in res.recommendation.choice
    # some of a card's GCDs visible: counted as GCDs, never "your 0x"
    for n in (1, 3):
        some = [OwnedGpu(f"gpu{i}", "AMD Instinct MI250X", "amd-mi250x") for i in range(n)]
        r = A.estimate(PRESETS["gpt2-124m"], A.Assumptions(), catalog, gpu_ids=["amd-mi250x"], local=[], owned=some)
        own = r.recommendation.own
        assert own is not None and own["count"] == n and own["ranks"] == n and "GCD" in str(own["name"])
    capped = A.estimate(PRESETS["llama-8b-lora"], A.Assumptions(max_gpus=1, cluster_max_gpus=1), catalog, local=[])
    assert not any(r.gpu_id == "amd-mi250x" for r in capped.rows)  # one card is two GPUs: over a cap of 1


def test_a_local_gpu_is_fitted_in_the_memory_it_reports(catalog) -> None:  # type: ignore[no-untyped-def]
    """A Radeon PRO W7800 48GB matched the catalog's 32 GB W7800 and was judged against 32 GB."""
    w = PRESETS["llama-8b-lora"]
    loc = A.local_gpu_estimate(
        w, A.Assumptions(), catalog, None, name="AMD Radeon Pro W7800 48GB", memory_bytes=48 * 2**30, device="gpu0"
    )
    assert loc.vram_gb == pytest.approx(48.0) and loc.fits
    # a T4 with ECC off reports all 16 GB: that, not the 15/16 the catalog assumes (ECC on)
    t4 = A.local_gpu_estimate(
        w, A.Assumptions(), catalog, None, name="Tesla T4", memory_bytes=16 * 2**30, device="gpu0"
    )
    assert t4.vram_gb == pytest.approx(16.0)


def test_a_sharded_option_is_described_as_sharded(catalog) -> None:  # type: ignore[no-untyped-def]
    """FSDP options were described as plain data parallel ("averages the 8 gradients")."""
    rec = A.estimate(PRESETS["llama-70b-full"], A.Assumptions(), catalog, local=[]).recommendation
    assert rec.option is not None and rec.option["parallelism"] == "fsdp"
    assert "Sharded data parallel (FSDP / ZeRO-3)" in rec.rationale and "averages the" not in rec.rationale


def test_a_laptop_gpu_says_it_is_estimated_at_the_top_of_its_power_range(catalog) -> None:  # type: ignore[no-untyped-def]
    """A 35 W RTX 4060 Laptop got the 115 W figures with nothing said."""
    w = PRESETS["simple-cnn"]
    kw = {"name": "NVIDIA GeForce RTX 4060 Laptop GPU", "memory_bytes": 8 * 2**30, "device": "gpu0"}
    low = A.local_gpu_estimate(w, A.Assumptions(), catalog, None, power_limit_w=35.0, **kw)
    assert "top of its power range" in low.basis and "limited to 35 W, so expect it slower" in low.basis
    full = A.local_gpu_estimate(w, A.Assumptions(), catalog, None, power_limit_w=115.0, **kw)
    assert "top of its power range" in full.basis and "limited to" not in full.basis


def test_a_local_gpu_the_catalog_lacks_still_says_whether_the_workload_fits(catalog) -> None:  # type: ignore[no-untyped-def]
    """An RTX 3050 Laptop (not in the catalog) said "no estimate" and nothing of its 4 GB."""
    kw = {"name": "NVIDIA GeForce RTX 3050 Laptop GPU", "memory_bytes": 4 * 2**30, "device": "gpu0"}
    small = A.local_gpu_estimate(PRESETS["simple-cnn"], A.Assumptions(), catalog, None, **kw)
    big = A.local_gpu_estimate(PRESETS["llama-8b-lora"], A.Assumptions(), catalog, None, **kw)
    assert small.fits and big.fits is False and small.vram_gb == 4.0
    assert big.peak_memory_gb is not None and big.peak_memory_gb > 4.0
    assert small.total_time_h is None and "no time estimate" in small.basis
    # review 17: its need just past its memory is rounded away from it, as a catalog card's row
    # (rounded to the nearest, 0.0002 GB over its memory read as exactly its memory, "does not fit")
    w, a = PRESETS["llama-1b-lora"], A.Assumptions(batch_size=1, checkpointing="none")
    fp16 = A.MemoryOptions(precision="fp16", optimizer=a.optimizer, offload=a.offload, loss=a.loss)
    need = A.plan(w, 64.0, fp16, checkpointing=a.checkpointing, sharding=None, batch_size=1).peak_gb
    kw = {**kw, "memory_bytes": round((need - 0.0002) * 2**30)}
    tight = A.local_gpu_estimate(w, a, catalog, None, **kw)
    assert tight.fits is False and tight.vram_gb is not None and tight.peak_memory_gb is not None
    assert tight.peak_memory_gb > tight.vram_gb


def test_one_die_of_a_multi_die_card_counts_offers_and_reported_memory_per_die(catalog) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace as dc_replace

    card = dc_replace(
        catalog.get("amd-mi250x"), cloud_usd_per_hour=4.0, cloud_provider="cloudco:2x_MI250X", visible_vram_gb=120.0
    )
    die = card.one_die()
    assert card.cloud_offer_gpus == 2 and die.cloud_offer_gpus == 4  # two cards are four GCD ranks
    assert die.visible_vram_gb == 60.0 and die.usable_vram_gb == 60.0
    assert A.cloud_rate(die, 4)[3] and not A.cloud_rate(die, 8)[3]  # 4 GCDs rent linked, 8 do not


def test_renting_a_consumer_card_also_names_the_cheapest_one_to_buy(catalog) -> None:  # type: ignore[no-untyped-def]
    """Renting an RTX 5090 quoted its $1,999 purchase where a $300 RTX 5060 was enough; its rental,
    quoted beside a purchase, is per GPU of a 2-GPU offer."""
    ids = ["nvidia-rtx-5090", "nvidia-rtx-5060"]
    rec = A.estimate(PRESETS["llama-1b-lora"], A.Assumptions(), catalog, gpu_ids=ids, local=[]).recommendation
    assert rec.action == "rent" and rec.option is not None and rec.option["gpu_id"] == "nvidia-rtx-5090"
    assert rec.cheaper_buy is not None and rec.cheaper_buy["gpu_id"] == "nvidia-rtx-5060"
    assert "To buy, 1x GeForce RTX 5060 is the cheapest card that is enough: about" in rec.rationale
    tight = A.estimate(PRESETS["llama-8b-lora"], A.Assumptions(budget_usd=500), catalog, local=[]).recommendation
    assert "rented (per GPU of a 2-GPU offer)" in tight.rationale


def test_the_text_table_says_when_a_rental_has_no_offer_or_a_larger_one(capsys: pytest.CaptureFixture[str]) -> None:
    """A row without a rental offer of its size read "—", as if no price data existed at all."""
    argv = ["estimate", "--workload", "gpt2-124m", "--gpus", "nvidia-gh200-96gb,nvidia-b200", "--count", "1,2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    gh2 = next(line for line in out.splitlines() if line.lstrip("→ ").startswith("2x GH200"))
    b1 = next(line for line in out.splitlines() if line.lstrip("→ ").startswith("1x B200"))
    assert "no offer" in gh2 and "‡" in b1
    assert "no offer: the price data rents this card only in smaller instances" in out and "\n‡ the hourly rate" in out


def test_a_batch_the_dataset_cannot_fill_is_judged_at_each_gpu_s_share(catalog) -> None:  # type: ignore[no-untyped-def]
    """QA 15: batch 100,000 of simple-cnn's 60,000 images said the RTX 4060 "needs 12.7 of 8 GB"
    for a step that can only ever hold 60,000 images."""
    w = PRESETS["simple-cnn"]
    n = w.default_dataset_size
    rows = A.estimate(
        w, A.Assumptions(batch_size=100_000, counts=(1, 2)), catalog, gpu_ids=["nvidia-h100-pcie-80gb"], local=[]
    ).rows
    one, two = sorted(rows, key=lambda r: r.count)
    assert one.fits and one.batch_size == n and "smaller than the batch asked for" in (one.note or "")
    assert two.batch_size == -(-n // 2)
    at = A.estimate(w, A.Assumptions(batch_size=n, counts=(1,)), catalog, gpu_ids=["nvidia-h100-pcie-80gb"], local=[])
    assert one.peak_memory_gb == at.rows[0].peak_memory_gb  # the same step as asking for the dataset's size
    assert one.total_time_h == pytest.approx(at.rows[0].total_time_h)


def test_the_cpu_is_clamped_to_the_dataset_as_the_gpu_rows_are() -> None:
    """Review 15: batch 200,000 of simple-cnn's 60,000 images "did not fit" the CPU's RAM (the GPU
    rows were clamped to 60,000), which moved the advice from stage 1 to stage 2."""
    w = PRESETS["simple-cnn"]
    n = w.default_dataset_size

    def cpu(batch: int) -> Any:
        return A.local_cpu_estimate(w, A.Assumptions(batch_size=batch), cores=2, mhz=2000.0, features=[], ram_gb=23.5)

    big, exact = cpu(200_000), cpu(n)
    assert big.batch_size == n and big.fits == exact.fits and big.peak_memory_gb == exact.peak_memory_gb
    assert big.total_time_h == pytest.approx(exact.total_time_h) and "smaller than the batch asked for" in big.basis


def test_a_clamped_row_that_does_not_fit_is_advised_for_its_step(catalog) -> None:  # type: ignore[no-untyped-def]
    """Review 15: a row clamped to the dataset's share but not fitting was told to shrink its batch
    to the unclamped request's limit and had no word of the clamp."""
    w = PRESETS["simple-cnn"]
    n = w.default_dataset_size
    a = A.Assumptions(counts=(1,), checkpointing="none")
    ids = ["nvidia-rtx-4060-laptop"]
    big = A.estimate(w, replace(a, batch_size=100_000), catalog, gpu_ids=ids, local=[]).rows[0]
    exact = A.estimate(w, replace(a, batch_size=n), catalog, gpu_ids=ids, local=[]).rows[0]
    assert not big.fits and big.suggestions == exact.suggestions
    assert "smaller than the batch asked for" in (big.note or "")


def test_a_cpu_whose_ram_needs_recompute_is_timed_with_it() -> None:
    """Review 15: the RAM fit switched checkpointing on (the row said "full") but the CPU's step was
    timed without the recompute, a third too fast."""
    w = PRESETS["simple-cnn"]

    def cpu(ck: str | None) -> Any:
        a = A.Assumptions(batch_size=100_000, dataset_size=200_000, checkpointing=ck)
        return A.local_cpu_estimate(w, a, cores=2, mhz=2000.0, features=[], ram_gb=23.5)

    auto, full = cpu(None), cpu("full")
    assert auto.checkpointing == "full" and auto.fits  # the data this rests on: only recompute fits
    assert auto.total_time_h == pytest.approx(full.total_time_h)
    assert cpu("none").total_time_h < auto.total_time_h


def test_where_only_unsupported_cards_fit_the_advice_says_so_not_that_nothing_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # ResNet-50 on a GT 740M: the table said "1 of 1 options fit", the advice "does not fit any GPU
    # considered" and told the user to save memory, with LoRA/QLoRA (which --mode refuses for a CNN).
    assert main(["estimate", "--workload", "resnet50", "--gpus", "nvidia-gt-740m", "--max-gpus", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 of 1 options fit." in out and "does not fit any GPU considered with these settings" not in out
    assert "fits only on GPUs today's frameworks no longer run (1x GeForce GT 740M)" in out
    assert "--offload" not in out and "LoRA" not in out


def test_the_fit_hint_offers_only_levers_the_cli_takes() -> None:
    from gpuselect.estimate.recommend import _fit_hint
    from gpuselect.workloads.build import build_workload

    # --mode lora and --seq-len are refused for these: the hint offered them
    for wid in ("resnet50", "vit-b16", "bert-large-squad"):
        w = build_workload(workload=wid)
        misfit = replace(
            option_row("nvidia-rtx-4090", 1.0), fits=False, batch_size=1, peak_memory_gb=90.0, vram_gb=24.0
        )
        assert ("LoRA" in _fit_hint([], w)) == (wid == "bert-large-squad"), wid  # its --mode lora runs
        assert "--seq-len" not in _fit_hint([misfit], w), wid
    llama = build_workload(workload="llama-8b-full")
    misfit = replace(option_row("nvidia-rtx-4090", 1.0), fits=False, batch_size=1, peak_memory_gb=90.0, vram_gb=24.0)
    assert "LoRA/QLoRA" in _fit_hint([], llama) and "--seq-len" in _fit_hint([misfit], llama)


def test_a_benchmarked_gpu_asked_to_checkpoint_pays_the_recompute(catalog, perf) -> None:  # type: ignore[no-untyped-def]
    """Review 16: a workload the GPU's benchmark trained was quoted at its measured step with
    --checkpointing full, although that step recomputes nothing (the CPU's was fixed before)."""
    from gpuselect.estimate.api import local_gpu_estimate

    args = {"name": "NVIDIA H100 80GB HBM3", "memory_bytes": 80 * GIB, "device": "gpu0"}
    rec = json.loads(
        (Path(__file__).resolve().parents[2] / "docs/validation/h100-2026-11-22/bench-full.json").read_text()
    )["devices"][0]
    w = PRESETS["simple-cnn"]

    def est(ck: str | None) -> Any:
        return local_gpu_estimate(w, Assumptions(batch_size=128, checkpointing=ck), catalog, perf, bench=rec, **args)

    plain, full = est(None), est("full")
    assert plain.basis.startswith("measured") and plain.checkpointing == "none"
    assert full.checkpointing == "full" and "slowed by the recompute" in full.basis
    assert full.throughput_samples_per_s < plain.throughput_samples_per_s


def test_a_calibrated_reference_model_pays_the_recompute(catalog, perf) -> None:  # type: ignore[no-untyped-def]
    """QA 17b: Mask R-CNN (timed by its per-model calibration, no traced operators) halved its
    memory with --checkpointing full at the same step time: the recompute was free, so the GPU rows
    read 10.2 h either way while the CPU's (traced) time grew by a third."""
    w, e = PRESETS["maskrcnn"], catalog.get("nvidia-a100-sxm4-80gb")

    def row(ck: bool) -> Any:
        return A._card_row(w, e, 1, Assumptions(batch_size=4, checkpointing=ck), perf)

    plain, full = row(False), row(True)
    assert "per_model_calibration" in plain.time_breakdown_s and full.checkpointing == "full"
    assert full.peak_memory_gb < plain.peak_memory_gb
    # the recompute costs what the traced step says it costs on this card: a fifth or more
    assert full.throughput_samples_per_s < plain.throughput_samples_per_s / 1.2
    # the recompute is the forward's, whatever the optimizer: 8-bit Adam's smaller update made it
    # dearer when the ratio counted the update (an RTX 4090 at batch 1: 10.60 against 10.67)
    e = catalog.get("nvidia-rtx-4090")
    adamw, adam8 = (
        A._card_row(w, e, 1, Assumptions(batch_size=1, checkpointing=True, optimizer=o), perf)
        for o in ("adamw", "adam8bit")
    )
    assert adam8.throughput_samples_per_s >= adamw.throughput_samples_per_s


def test_a_row_says_where_selective_checkpointing_trains_faster(catalog, perf) -> None:  # type: ignore[no-untyped-def]
    """QA 17b: left to choose, checkpointing is full or none; BERT-large on an RTX 3080 trained 20 %
    faster with --checkpointing selective (a larger batch at little recompute), and nothing said so.
    The automatic row keeps its time and says it; a row asked for full does not."""
    w, e = PRESETS["bert_large_squad"], catalog.get("nvidia-rtx-3080")
    one = {"gpu_ids": [e.id], "local": []}
    auto = A.estimate(w, Assumptions(max_gpus=1), catalog, perf, **one).rows[0]  # the advice's option
    sel = A._card_row(w, e, 1, Assumptions(checkpointing="selective"), perf)
    assert sel.throughput_samples_per_s > 1.05 * auto.throughput_samples_per_s  # the data this rests on
    gain = round(100 * (sel.throughput_samples_per_s / auto.throughput_samples_per_s - 1))
    assert f"--checkpointing selective trains {gain} % faster here (batch {sel.batch_size} per GPU" in auto.note
    asked = A.estimate(w, Assumptions(max_gpus=1, checkpointing="full"), catalog, perf, **one).rows[0]
    assert "--checkpointing selective" not in (asked.note or "")
    cnn = A.estimate(PRESETS["resnet50"], Assumptions(max_gpus=1), catalog, perf, gpu_ids=["nvidia-rtx-3060"], local=[])
    assert "selective" not in (cnn.rows[0].note or "")  # a transformer's only
    # only the rows the advice names: a second row per catalog row doubled the estimate's time
    two = A.estimate(w, Assumptions(max_gpus=1), catalog, perf, gpu_ids=[e.id, "nvidia-rtx-3080-ti"], local=[])
    noted = [r.gpu_id for r in two.rows if "--checkpointing selective" in (r.note or "")]
    from gpuselect.estimate.recommend import named_options

    named = {o["gpu_id"] for o in named_options(two.recommendation)}
    assert noted and set(noted) <= named and len(named) < len(two.rows)
    # this machine's GPU says it in its basis, which every face prints (review 17: it went into the
    # row's note, which the local estimate drops)
    mine = A.local_gpu_estimate(
        w, Assumptions(), catalog, perf, name="NVIDIA GeForce RTX 3080", memory_bytes=10 * 2**30, device="gpu0"
    )
    assert f"; --checkpointing selective trains {gain} % faster here (batch {sel.batch_size} per GPU" in mine.basis


def test_gpus_the_dataset_cannot_fill_are_never_recommended(catalog) -> None:  # type: ignore[no-untyped-def]
    """QA 16c: stage 4's bar was 1,024 MI250X (2,048 dies) at batch 25 of the 32 asked for: the
    dataset (50,000) filled one step per epoch, three optimizer steps in the whole run. Several GPUs
    whose batches the dataset cannot fill are shown, flagged, and never recommended."""
    from gpuselect.estimate.recommend import named_options

    a = Assumptions(batch_size=64, dataset_size=1000, epochs=3, counts=(1, 2, 4, 8, 16, 32))
    res = estimate(PRESETS["resnet50"], a, catalog, local=[])
    bound = {(r.gpu_id, r.count) for r in res.rows if r.dataset_bound}
    assert bound and all(r.count * r.dies * 64 > 1000 for r in res.rows if r.dataset_bound)  # ranks: dies
    assert all(r.dataset_bound for r in res.rows if r.count * r.dies * 64 > 1000)
    rec = res.recommendation
    picked = [o for o in [*named_options(rec), *rec.per_stage.values()] if o and o.get("gpu_id")]
    assert picked and not any((o["gpu_id"], o["count"]) in bound for o in picked)
