"""Advice that starts from the user's machine, on simulated one- and two-GPU machines (fake NVML
at the binding boundary, so detection and health run for real)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from gpuselect.app.machine import Machine, critical_problems, this_machine
from gpuselect.app.money import MoneyFormat
from gpuselect.app.workflows import (
    WorkloadSpec,
    assumptions,
    estimate_for_machine,
    load_workload,
)
from gpuselect.catalog import load_catalog
from gpuselect.cli import main
from gpuselect.estimate.api import Assumptions, EstimateRow, LocalEstimate
from gpuselect.estimate.recommend import explain, plausible_count, recommend, time_range
from gpuselect.health.model import Finding, Severity
from gpuselect.health.rules import HealthReport
from gpuselect.settings import Settings
from gpuselect.workloads.presets import PRESETS, get_preset
from tests.app.machines import a100x2, rtx3090, rtx3090_and_two_3060, rtx4090x2, unknown_card
from tests.builders import option_row

S = Settings()


def _estimate(machine: Machine, workload: str, deadline: float, settings: Settings = S):  # type: ignore[no-untyped-def]
    return estimate_for_machine(get_preset(workload), assumptions(settings, deadline_hours=deadline), machine)


def test_an_rtx3090_owner_who_has_enough_is_told_so() -> None:
    rec = _estimate(this_machine(nvml=rtx3090()), "resnet50", 72).recommendation
    assert rec.action == "have" and rec.deadline_met and rec.stage == 2
    assert rec.own is not None and rec.own["count"] == 1 and "3090" in str(rec.own["name"])
    _choice, why = explain(rec)
    assert why.startswith("You already have what you need: your GeForce RTX 3090")
    assert "to buy" not in why and "rented" not in why  # nothing to purchase


def test_an_rtx3090_owner_who_lacks_speed_gets_a_purchase_not_their_own_card() -> None:
    rec = _estimate(this_machine(nvml=rtx3090()), "llama-8b-qlora", 72).recommendation
    assert rec.action in ("buy", "rent") and rec.option is not None
    assert not (rec.option["gpu_id"] == rec.own["gpu_id"] and rec.option["count"] == 1)  # type: ignore[index]
    _, why = explain(rec)
    assert why.startswith("Your GeForce RTX 3090 would need")


def test_two_a100_form_one_option() -> None:
    result = _estimate(this_machine(nvml=a100x2(ecc_on_gpu1=False)), "resnet50", 72)
    rec = result.recommendation
    assert rec.action == "have" and rec.own is not None and rec.own["count"] == 2 and not rec.excluded
    one = next(r for r in result.rows if r.gpu_id == rec.own["gpu_id"] and r.count == 1)
    assert float(rec.own["total_time_h"]) < one.total_time_h  # two cards are faster than one
    assert "your 2x A100" in explain(rec)[1]


def test_a_critical_ecc_fault_keeps_the_card_out_and_is_said() -> None:
    m = this_machine(nvml=a100x2(ecc_on_gpu1=True))
    assert critical_problems(m) == {"gpu1": "3 uncorrectable ECC error(s) since the driver loaded"}
    rec = _estimate(m, "resnet50", 72).recommendation
    assert rec.own is not None and rec.own["count"] == 1
    assert rec.excluded and rec.excluded[0].startswith("gpu1 (NVIDIA A100-SXM4-80GB)")
    assert "Left out of the plan: gpu1" in explain(rec)[1] and "ECC" in explain(rec)[1]


def test_a_busy_gpu_is_not_left_out() -> None:
    snap = this_machine(nvml=rtx3090()).snapshot
    busy = Finding(
        "gpu.memory_held_by_others", Severity.CRITICAL, "gpu0 (NVIDIA GeForce RTX 3090)", "74 % held", "held"
    )
    broken = Finding("gpu.ecc", Severity.CRITICAL, "gpu3 (X)", "ECC errors", "x")
    m = Machine(snap, HealthReport([busy, broken]))
    assert critical_problems(m) == {"gpu3": "ECC errors"}


def test_purchases_count_only_the_cards_the_user_lacks() -> None:
    result = _estimate(this_machine(nvml=rtx3090()), "resnet50", 72)
    price = load_catalog().get("nvidia-rtx-3090")
    assert price is not None
    row2 = next(r for r in result.rows if r.gpu_id == "nvidia-rtx-3090" and r.count == 2)
    unit = price.street_price_usd or price.launch_price_usd
    energy = row2.energy_kwh * 0.15
    assert row2.buy_cost_usd == pytest.approx(unit + energy)  # one more card, not two
    assert "buy 1 more" in (row2.note or "")


def test_implausible_options_are_not_offered() -> None:
    result = estimate_for_machine(get_preset("resnet50"), assumptions(S, max_gpus=64), None)
    cat = load_catalog()
    for r in result.rows:
        e = cat.get(r.gpu_id)
        assert plausible_count(e, r.count)
        if e.form_factor == "laptop":
            assert r.count == 1
        if e.family in ("geforce", "radeon"):
            assert r.count <= 4
    assert any(r.count == 64 and r.family == "datacenter" for r in result.rows)


def _row(
    gpu: str, hours: float, buy: float | None, cloud: float | None, band: float = 0.2, deadline: float = 72
) -> EstimateRow:
    return option_row(
        gpu,
        hours,
        buy=buy,
        rent=cloud,
        band=band,
        deadline=deadline,
        batch_size=8,
        throughput_samples_per_s=1.0,
        epoch_time_s=1.0,
        co2_kg=0.5,
    )


SLOW_CPU = [LocalEstimate("cpu", "CPU", 1.0, 1e6, "measured", 0.5)]


def test_options_without_a_price_are_not_recommended() -> None:
    rows = [_row("unpriced", 1.0, None, None), _row("priced", 50.0, 900.0, None)]
    rec = recommend(rows, SLOW_CPU, Assumptions(), PRESETS["resnet50"])
    assert rec.option is not None and rec.option["gpu_id"] == "priced" and rec.action == "buy"


def test_the_verdict_says_when_the_range_crosses_the_deadline() -> None:
    rec = recommend(
        [_row("g", 60.0, 900.0, None, band=0.5)], SLOW_CPU, Assumptions(deadline_hours=72), PRESETS["resnet50"]
    )
    assert rec.deadline_met and rec.crosses_deadline
    assert time_range(60.0, 0.5) == (40.0, 90.0)
    assert "reaches past your 72 h deadline (up to 90 h)" in explain(rec)[1]
    safe = recommend(
        [_row("g", 10.0, 900.0, None, band=0.5)], SLOW_CPU, Assumptions(deadline_hours=72), PRESETS["resnet50"]
    )
    assert not safe.crosses_deadline and "reaches past" not in safe.rationale


def test_money_is_formatted_by_the_face() -> None:
    rec = recommend([_row("g", 10.0, 1000.0, 50.0)], SLOW_CPU, Assumptions(), PRESETS["resnet50"])
    choice, why = explain(rec, MoneyFormat("€", 0.5))
    assert "€25 rented" in why and "€500 to buy" in why and "$" not in choice + why
    assert "$50 rented" in rec.rationale  # the JSON keeps US dollars


def test_small_jobs_read_in_minutes_or_seconds() -> None:
    rec = recommend([_row("g", 0.01, 1000.0, None)], SLOW_CPU, Assumptions(), PRESETS["resnet50"])
    assert "36 s" in rec.choice and "0.0 h" not in rec.rationale


def test_settings_fill_what_the_face_left_open() -> None:
    s = Settings(electricity_usd_per_kwh=0.4, default_deadline_hours=10, default_budget_usd=500)
    a = assumptions(s)
    assert (a.electricity_usd_per_kwh, a.deadline_hours, a.budget_usd) == (0.4, 10, 500)
    a = assumptions(s, deadline_hours=20, budget_usd=0)
    assert a.deadline_hours == 20 and a.budget_usd is None


def test_a_config_with_lora_mode(tmp_path: Path) -> None:
    cfg = tmp_path / "m" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 2048,
                "num_hidden_layers": 16,
                "num_attention_heads": 32,
                "intermediate_size": 8192,
                "vocab_size": 32000,
                "max_position_embeddings": 2048,
            }
        )
    )
    full = load_workload(WorkloadSpec(config=str(cfg)))
    lora = load_workload(WorkloadSpec(config=str(cfg), mode="lora"))
    assert lora.trainable_params < full.trainable_params / 10


def test_cli_estimate_follows_the_settings(capsys: pytest.CaptureFixture[str]) -> None:
    folder = Path(os.environ["GPUSELECT_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(
        json.dumps(
            {
                "currency_symbol": "€",
                "usd_to_currency": 0.9,
                "electricity_usd_per_kwh": 0.3,
                "default_deadline_hours": 24,
            }
        )
    )
    assert main(["estimate", "--workload", "resnet50", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "€0.270/kWh" in out and "deadline 24 h" in out and "buy €" in out
    verdict = out.split("\n\n")[1]
    assert "$" not in verdict


def test_eight_busy_h100_stay_in_the_plan() -> None:
    from tests.fakes import fake_nvml as F

    m = this_machine(nvml=F.h100x8())
    assert critical_problems(m) == {}  # busy is an availability warning, not a fault
    rec = _estimate(m, "resnet50", 72).recommendation
    assert rec.own is not None and rec.own["count"] == 8 and rec.action == "have" and rec.stage == 3


def test_cli_estimate_on_a_two_a100_machine(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fakes import fake_nvml as F

    fake = F.a100x2_ecc()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    assert main(["estimate", "--workload", "resnet50", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "You already have what you need: your A100 SXM4 80GB" in out
    assert "Left out of the plan: gpu1" in out and "gpu1 (NVIDIA A100-SXM4-80GB): left out of the plan" in out


def test_cli_estimate_on_eight_h100(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes import fake_nvml as F

    fake = F.h100x8()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    assert main(["estimate", "--workload", "resnet50", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "Your 8x H100" in out and "together:" in out and "your 8x H100" in out


H100_BENCH = (
    Path(__file__).resolve().parents[2] / "docs" / "validation" / "h100-2026-11-24" / "run1" / "bench-quick.json"
)


def test_a_benchmark_of_another_machine_does_not_stand_for_this_one() -> None:
    """Seen with the H100 run's file on the 2-core VM: its 16-core Xeon's matmul rate became this
    CPU's estimate. Devices this machine lacks are dropped, and a sentence says so."""
    from gpuselect.app.machine import load_bench
    from gpuselect.hardware.snapshot import detect
    from tests.fakes import fake_nvml as F

    bench = load_bench(H100_BENCH)
    assert {d.name for d in bench.devices} == {"Intel(R) Xeon(R) Processor", "NVIDIA H100 80GB HBM3"}
    # This machine's CPU as another model: the host running the tests may well be a VM whose CPU
    # reads "Intel(R) Xeon(R) Processor" too (then the name cannot tell the two apart).
    snap = detect(probe=False, nvml=rtx3090())
    snap = dataclasses.replace(snap, cpu=dataclasses.replace(snap.cpu, model="AMD EPYC 7B13 64-Core Processor"))
    m = this_machine(snapshot=snap, bench=bench)
    assert m.bench.devices == [] and len(m.bench_notes) == 1
    assert (
        "Intel(R) Xeon(R) Processor (cpu)" in m.bench_notes[0] and "NVIDIA H100 80GB HBM3 (cuda:0)" in m.bench_notes[0]
    )
    local = _estimate(m, "simple-cnn", 72).local
    assert all("measured" not in x.basis or "unmeasured" in x.basis for x in local)
    # On an H100 machine the GPU's result is its own; only the other CPU is dropped.
    snap8 = detect(probe=False, nvml=F.h100x8())
    m8 = this_machine(snapshot=dataclasses.replace(snap8, cpu=snap.cpu), bench=bench)
    assert [d.name for d in m8.bench.devices] == ["NVIDIA H100 80GB HBM3"]
    assert "Intel(R) Xeon(R) Processor (cpu)" in m8.bench_notes[0] and "H100" not in m8.bench_notes[0]
    # A benchmark of this machine passes untouched.
    own = dataclasses.replace(bench, devices=[dataclasses.replace(bench.devices[0], name=m.snapshot.cpu.model)])
    mine = this_machine(snapshot=snap, bench=own)
    assert mine.bench_notes == [] and len(mine.bench.devices) == 1
    # Apple's MPS is not among the detected GPUs: its result is not judged foreign.
    mps = dataclasses.replace(bench.devices[1], device="mps", kind="mps", name="Apple MPS")
    assert this_machine(snapshot=snap, bench=dataclasses.replace(own, devices=[mps])).bench_notes == []


def test_cli_estimate_names_a_foreign_benchmark(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: rtx3090())
    from gpuselect.hardware import cpu as cpu_mod

    real = cpu_mod.detect_cpu()  # as another model: a VM's CPU may read "Intel(R) Xeon(R) Processor" too
    other = dataclasses.replace(real, model="AMD EPYC 7B13 64-Core Processor")
    monkeypatch.setattr("gpuselect.hardware.snapshot.detect_cpu", lambda *a, **k: other)
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(H100_BENCH), "--format", "json"]) == 0
    cap = capsys.readouterr()
    assert "not this machine's CPU or GPUs as detected" in cap.err
    doc = json.loads(cap.out)  # stdout stays one JSON document
    assert all("this CPU's measured" not in x["basis"] for x in doc["local"])


def test_a_missed_deadline_names_only_the_limits_the_user_set() -> None:
    late = [_row("g", 500.0, 900.0, 50.0)]
    rec = recommend(late, SLOW_CPU, Assumptions(deadline_hours=72), PRESETS["resnet50"])
    assert not rec.deadline_met
    assert "No option meets the 72 h deadline. " in explain(rec)[1]
    capped = recommend(late, SLOW_CPU, Assumptions(deadline_hours=72, budget_usd=10), PRESETS["resnet50"])
    assert "No option meets both the 72 h deadline and the $10 budget." in explain(capped)[1]


def test_a_card_todays_frameworks_do_not_run_is_shown_but_never_recommended(capsys: pytest.CaptureFixture[str]) -> None:
    cheap_old = dataclasses.replace(_row("old", 1.0, None, 1.0), supported=False)
    rec = recommend([cheap_old, _row("current", 50.0, None, 90.0)], SLOW_CPU, Assumptions(), PRESETS["resnet50"])
    assert rec.option is not None and rec.option["gpu_id"] == "current"
    # The K80 (Kepler, CUDA 12 dropped it) has a cloud price: its rows say why it is left out.
    assert main(["estimate", "--workload", "resnet50", "--gpus", "nvidia-k80,nvidia-t4", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    k80 = [r for r in doc["rows"] if r["gpu_id"] == "nvidia-k80"]
    assert k80 and all(not r["supported"] and "Kepler: CUDA 12" in r["note"] for r in k80)
    assert all(r["supported"] for r in doc["rows"] if r["gpu_id"] == "nvidia-t4")
    assert "K80" not in doc["recommendation"]["choice"]


def test_a_benchmark_of_a_cpu_named_like_this_one_but_with_other_cores_is_not_this_ones() -> None:
    # VMs share CPU names ("Intel(R) Xeon(R) Processor"): the 16-core H100 server's result stood for
    # a 2-core VM's CPU. A result that records its cores is matched by both.
    from gpuselect.app.machine import load_bench
    from gpuselect.hardware.snapshot import detect

    snap = detect(probe=False, nvml=rtx3090())
    here = snap.cpu.logical_cores or 2
    bench = load_bench(H100_BENCH)
    cpu = dataclasses.replace(bench.devices[0], name=snap.cpu.model)
    other = this_machine(
        snapshot=snap, bench=dataclasses.replace(bench, devices=[dataclasses.replace(cpu, logical_cores=here + 14)])
    )
    assert other.bench.devices == [] and "not this machine's CPU" in other.bench_notes[0]
    same = this_machine(
        snapshot=snap, bench=dataclasses.replace(bench, devices=[dataclasses.replace(cpu, logical_cores=here)])
    )
    assert len(same.bench.devices) == 1 and same.bench_notes == []
    old = this_machine(snapshot=snap, bench=dataclasses.replace(bench, devices=[cpu]))  # a file without the count
    assert len(old.bench.devices) == 1


def test_a_busy_benchmark_is_said_and_its_cpu_estimate_takes_the_wide_band() -> None:
    # A record flagged busy (other processes used 55 % of the CPUs) stood as "measured, ±47 %",
    # 70x slower than the quiet record of the same machine; a foreign CPU's record names its cores.
    from gpuselect.app.machine import load_bench
    from gpuselect.estimate.api import regime_band
    from gpuselect.hardware.snapshot import detect

    bench = load_bench(H100_BENCH)
    snap = detect(probe=False, nvml=rtx3090())
    cpu_dev = dataclasses.replace(bench.devices[0], name=snap.cpu.model or "cpu", logical_cores=None)
    quiet = dataclasses.replace(bench, devices=[cpu_dev], other_cpu_share=0.02)
    busy = dataclasses.replace(quiet, other_cpu_share=0.55)
    mq, mb = this_machine(snapshot=snap, bench=quiet), this_machine(snapshot=snap, bench=busy)
    assert mq.bench_notes == [] and any("55 % of the CPUs" in n for n in mb.bench_notes)
    (cq,) = [x for x in _estimate(mq, "simple-cnn", 72).local if x.device == "cpu"]
    (cb,) = [x for x in _estimate(mb, "simple-cnn", 72).local if x.device == "cpu"]
    assert "busy" not in cq.basis and cq.error_band <= cb.error_band
    assert cb.error_band == regime_band("cpu_unsteady", "NVIDIA") and "busy machine" in cb.basis
    other = dataclasses.replace(cpu_dev, logical_cores=(snap.cpu.logical_cores or 2) * 8)
    note = this_machine(snapshot=snap, bench=dataclasses.replace(quiet, devices=[other])).bench_notes[0]
    assert f"{(snap.cpu.logical_cores or 2) * 8} logical cores; this machine has {snap.cpu.logical_cores}" in note


def test_a_given_max_gpus_caps_clusters_too(capsys: pytest.CaptureFixture[str]) -> None:
    # "--max-gpus 1" with a tight deadline recommended 16 T4s over two nodes.
    args = ["estimate", "--workload", "llama-70b-full", "--deadline-hours", "1", "--format", "json"]
    assert main([*args, "--max-gpus", "1"]) == 0
    capped = json.loads(capsys.readouterr().out)
    assert max(r["count"] for r in capped["rows"]) == 1
    assert main(args) == 0
    open_ = json.loads(capsys.readouterr().out)
    assert max(r["count"] for r in open_["rows"]) > 8  # not given: clusters are tried


def test_bench_records_whose_steps_contradict_themselves_or_repeat_a_device_are_refused(tmp_path: Path) -> None:
    from gpuselect.bench.io import load_bench_file
    from gpuselect.errors import DataError

    doc = json.loads(Path(H100_BENCH).read_text())
    step = next(s for d in doc["devices"] for s in d.get("train_steps") or [])
    step["step_ms"] = step["step_ms"] / 1000  # 1,000x faster than its own rate says
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="the record was edited or is corrupt"):
        load_bench_file(bad)
    doc = json.loads(Path(H100_BENCH).read_text())
    doc["devices"].append(doc["devices"][0])
    bad.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="appears twice in the device list"):
        load_bench_file(bad)


def test_a_cpu_fitted_on_its_benchmark_s_other_steps_is_checked_against_its_band() -> None:
    """QA 14: a CPU estimate from a model fitted on the benchmark's steps read as "measured" (its
    basis has the word), so a ±2,028 % range reaching 730 h gave "no GPU needed" at 72 h."""
    rows = [_row("g", 0.05, 900.0, None, band=0.3)]
    a, w = Assumptions(deadline_hours=72), PRESETS["resnet50"]
    fitted = LocalEstimate("cpu", "CPU", 1.0, 34.3, "step-time model, fitted on its 4 measured training steps", 20.28)
    assert recommend(rows, [fitted], a, w).action != "cpu"
    own = LocalEstimate("cpu", "CPU", 1.0, 34.3, "measured: this CPU trained it", 20.28, measured_step=True)
    assert recommend(rows, [own], a, w).action == "cpu"


def test_a_quiet_benchmark_anchors_the_cpu_estimate_past_its_batches_and_an_unmeasured_load_does_not() -> None:
    """The anchored band (±45 %) is the quiet records': a benchmark that measured itself quiet
    takes it past its measured batches, one without a measure of its load keeps the wide band."""
    from gpuselect.app.machine import load_bench
    from gpuselect.estimate.api import regime_band
    from gpuselect.hardware.snapshot import detect

    bench = load_bench(Path(__file__).resolve().parents[2] / "docs/validation/cpu-xeon-2026-11-25/bench-cpu.json")
    snap = detect(probe=False, nvml=rtx3090())
    cpu_dev = dataclasses.replace(bench.devices[0], name=snap.cpu.model or "cpu", logical_cores=None)
    steps = [s.batch_size for s in cpu_dev.train_steps if s.model == "simple_cnn"]
    past = 4 * max(steps)

    def band(share: float | None) -> float:
        m = this_machine(snapshot=snap, bench=dataclasses.replace(bench, devices=[cpu_dev], other_cpu_share=share))
        a = Assumptions(deadline_hours=72, batch_size=past)
        (c,) = [x for x in estimate_for_machine(PRESETS["simple-cnn"], a, m).local if x.device == "cpu"]
        assert "scaled to its measured step" in c.basis
        return c.error_band

    assert band(0.02) == regime_band("cpu_anchored", "NVIDIA")
    assert band(None) != regime_band("cpu_anchored", "NVIDIA")


def test_a_mixed_box_offers_its_fastest_group_not_its_largest() -> None:
    # QA 17e: an RTX 3090 beside two RTX 3060: the two 3060s (the larger group, 51 h) were "your
    # GPUs", beyond a 45 h deadline, and a $1,000 card to buy was the advice; the 3090 alone: 39.5 h.
    m = this_machine(nvml=rtx3090_and_two_3060())
    rec = _estimate(m, "resnet50", 45).recommendation
    assert rec.own is not None and rec.own["gpu_id"] == "nvidia-rtx-3090" and rec.own["count"] == 1
    assert rec.action == "have" and "your GeForce RTX 3090" in explain(rec)[1]
    (gpu0,) = [x for x in _estimate(m, "resnet50", 45).local if x.device == "gpu0"]
    assert rec.own["total_time_h"] == pytest.approx(gpu0.total_time_h)


def test_the_gpu_named_beside_the_cpu_is_one_to_buy_never_the_users_own() -> None:
    # QA 17e: "A GPU would be faster (1x GeForce RTX 3090, about 21 s, under $0.01 to buy), but you
    # do not need one. Your GeForce RTX 3090 would take about 21 s." -- its price was its electricity.
    rec = _estimate(this_machine(nvml=rtx3090()), "simple-cnn", 72).recommendation
    assert rec.action == "cpu" and rec.faster_gpu is not None
    assert rec.faster_gpu["gpu_id"] != "nvidia-rtx-3090"
    assert float(rec.faster_gpu["buy_cost_usd"]) > 100  # type: ignore[arg-type]  # a card's price
    why = explain(rec)[1]
    assert "under $0.01 to buy" not in why and "Your GeForce RTX 3090 would take" in why


def test_owned_cards_short_of_time_are_told_how_many_more_to_add() -> None:
    # QA 17e: one RTX 3090 at 98 h for a 72 h deadline: the advice named an RTX 5090 ($2,002) and a
    # rental, never that one more 3090 (2 in all, 52 h) does it for the price of that one card.
    rec = _estimate(this_machine(nvml=rtx3090()), "llama-8b-lora", 72).recommendation
    assert rec.action in ("buy", "rent") and rec.own is not None and not rec.own["meets_deadline"]
    add = rec.add_owned
    assert add is not None and add["gpu_id"] == "nvidia-rtx-3090" and (add["count"], add["owned"]) == (2, 1)
    assert add["meets_deadline"]
    unit = load_catalog().get("nvidia-rtx-3090")
    assert unit is not None and unit.launch_price_usd is not None
    assert unit.launch_price_usd < float(add["buy_cost_usd"]) < 1.05 * unit.launch_price_usd  # type: ignore[arg-type]
    choice, why = explain(rec)
    assert "or add 1 more GeForce RTX 3090" in choice
    assert "Adding to yours: 1 more GeForce RTX 3090 (2 in all) would finish in about" in why
    assert "inside your 72 h deadline, for about $1,50" in why and "(the card you add, and electricity)" in why


def test_owned_cards_that_cannot_hold_the_workload_are_named_and_what_to_add_is_said() -> None:
    # QA 17e: two RTX 4090 and Llama 70B QLoRA: the advice began "The CPU cannot hold the training
    # state" and never said the user's GPUs cannot either, nor that four of them would.
    m = this_machine(nvml=rtx4090x2())
    rec = _estimate(m, "llama-70b-qlora", 72).recommendation
    assert rec.own is None and rec.own_misfit.startswith("your 2x GeForce RTX 4090 cannot hold it (needs ")
    assert rec.own_misfit.endswith(" of 24 GB per GPU)")
    why = explain(rec)[1]
    assert why.startswith("Your 2x GeForce RTX 4090 cannot hold it") and "The CPU cannot" not in why
    late = _estimate(m, "llama-70b-qlora", 200).recommendation
    assert late.add_owned is not None and (late.add_owned["count"], late.add_owned["owned"]) == (4, 2)
    assert "Adding to yours: 2 more GeForce RTX 4090 (4 in all)" in explain(late)[1]


def test_a_buy_cost_that_leaves_out_the_users_own_cards_is_marked_in_every_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # QA 17e: "1x GeForce RTX 3090 ... buy $1.76" under a footer saying buy costs are the cards'
    # price: the user's own card's electricity read as its price, unmarked in the CLI and the report.
    from gpuselect.estimate.recommend import owned_note

    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: rtx3090())
    assert main(["estimate", "--workload", "llama-8b-lora", "--gpus", "nvidia-rtx-3090,nvidia-rtx-4090"]) == 0
    text = capsys.readouterr().out
    lines = {ln.split("  ")[0].removeprefix("→ "): ln for ln in text.splitlines() if "x GeForce RTX" in ln}
    assert "§" in lines["1x GeForce RTX 3090"] and "§" in lines["2x GeForce RTX 3090"]
    assert "§" not in lines["1x GeForce RTX 4090"]
    assert f"§ {owned_note(1)}" in text
    assert main(["estimate", "--workload", "llama-8b-lora", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["count"]: r["owned"] for r in rows if r["gpu_id"] == "nvidia-rtx-3090"} == {1: 1, 2: 1, 4: 1}
    assert all(r["owned"] == 0 for r in rows if r["gpu_id"] != "nvidia-rtx-3090")
    out = tmp_path / "r.json"
    assert main(["report", "-o", str(out), "--no-bench", "--workload", "llama-8b-lora"]) == 0
    est = next(s for s in json.loads(out.read_text())["report"]["sections"] if s["title"] == "Estimates")
    head, *table = est["table"]
    (two,) = [ln for ln in table if ln[0].startswith("2x GeForce RTX 3090")]  # named: add 1 more
    assert two[head.index("Buy ($)")].endswith(" §")
    assert f"§: {owned_note(1)}." in est["lines"]


def test_an_amortised_purchase_of_more_of_the_users_card_is_never_negative() -> None:
    # QA 17e: with amortisation the whole price of the card owned was taken off the row's amortised
    # share: "buy" -$1,495 for one RTX 3090 the user owns, and for two.
    a = Assumptions(amortisation_years=3)
    result = estimate_for_machine(get_preset("resnet50"), a, this_machine(nvml=rtx3090()))
    rows = {r.count: r for r in result.rows if r.gpu_id == "nvidia-rtx-3090"}
    energy = {n: (r.energy_kwh or 0) * a.electricity_usd_per_kwh for n, r in rows.items()}
    assert rows[1].buy_cost_usd == pytest.approx(energy[1])  # nothing to buy: its electricity
    unit = load_catalog().get("nvidia-rtx-3090")
    assert unit is not None and unit.launch_price_usd is not None
    share = unit.launch_price_usd * (rows[2].total_time_h or 0) / (3 * 365 * 24)  # one card's share
    assert rows[2].buy_cost_usd == pytest.approx(energy[2] + share)
    assert all((r.buy_cost_usd or 0) >= 0 for r in result.rows)


def test_break_even_counts_only_the_cards_the_user_lacks() -> None:
    # QA 17e: every RTX 3090 row broke even after 3,292 h, the hours the rows' whole purchase takes
    # to repay, one owned card included; one more card repays in proportion, none has nothing to repay.
    result = _estimate(this_machine(nvml=rtx3090()), "resnet50", 72)
    full = estimate_for_machine(get_preset("resnet50"), assumptions(S, deadline_hours=72), None)
    mine = {r.count: r.break_even_hours for r in result.rows if r.gpu_id == "nvidia-rtx-3090"}
    whole = {r.count: r.break_even_hours for r in full.rows if r.gpu_id == "nvidia-rtx-3090"}
    assert whole[2] is not None and whole[4] is not None
    assert mine[1] is None
    assert mine[2] == pytest.approx(whole[2] / 2) and mine[4] == pytest.approx(whole[4] * 3 / 4)


def test_an_owned_card_the_catalog_does_not_know_is_said_not_weighed() -> None:
    # QA 17e: the advice named cards to buy or rent and never the user's own card, which the
    # catalog does not know: only the machine lines below it said "not in the catalog".
    rec = _estimate(this_machine(nvml=unknown_card()), "resnet50", 72).recommendation
    assert rec.own is None and rec.unknown_owned == ["gpu0 (NVIDIA Quadro Frobnitz 9000)"]
    why = explain(rec)[1]
    assert "Not weighed: gpu0 (NVIDIA Quadro Frobnitz 9000) is not in the catalog" in why
    assert "catalog_overlay.toml" in why
    assert _estimate(this_machine(nvml=rtx3090()), "resnet50", 72).recommendation.unknown_owned == []


def _slow_rtx3090_bench(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A benchmark record of this machine's RTX 3090 measuring about half a healthy card's matmul
    rate (built from the H100 record's layout; its training steps left out)."""
    from gpuselect.app.machine import load_bench

    doc = json.loads(H100_BENCH.read_text())
    gpu = next(d for d in doc["devices"] if d["kind"] == "cuda")
    gpu.update(name="NVIDIA GeForce RTX 3090", spec_name="GeForce RTX 3090", train_steps=[])
    gpu.update(telemetry_before=None, telemetry_after=None, memory_total_bytes=24 * 2**30)
    gpu["matmul_tflops"] = {"fp32": 20.0, "tf32": 35.0, "fp16": 25.0, "bf16": 25.0}
    gpu["matmul_detail"] = {
        k: {**gpu["matmul_detail"][k], "value": v, "low": 0.95 * v, "high": 1.02 * v}
        for k, v in gpu["matmul_tflops"].items()
    }
    gpu["spec_ratio"] = {"matmul_fp32": 0.56, "matmul_tf32": 0.49, "matmul_fp16": 0.35, "matmul_bf16": 0.35}
    gpu["memory_bandwidth_gbs"] = 750.0
    for t in gpu["bandwidth_detail"].values():
        t.update(value=750.0, low=700.0, high=760.0)
    doc["devices"] = doc["report"]["devices"] = [gpu]
    doc["findings"] = []
    path = tmp_path / "bench-3090.json"
    path.write_text(json.dumps(doc))
    return load_bench(path)


def test_a_benchmarked_own_card_reads_the_same_in_the_advice_and_in_its_own_line(tmp_path: Path) -> None:
    # QA 17e: "Your GeForce RTX 3090 would need ~77.8 h" (its matmul ratio alone) above "gpu0 (NVIDIA
    # GeForce RTX 3090): 75.7 h" (its benchmark's step-time model); and one more card "would finish
    # in about 20.4 h", the catalog's two, where the benchmarked card paces both.
    m = this_machine(nvml=rtx3090(), bench=_slow_rtx3090_bench(tmp_path))
    result = _estimate(m, "resnet50", 72)
    rec = result.recommendation
    (gpu0,) = [x for x in result.local if x.device == "gpu0"]
    assert "benchmark" in gpu0.basis and rec.own is not None
    assert float(rec.own["total_time_h"]) == pytest.approx(gpu0.total_time_h)  # type: ignore[arg-type]
    # the catalog's rows of the card: the same card unbenchmarked runs at the catalog's pace
    catalog = _estimate(this_machine(nvml=rtx3090()), "resnet50", 72).rows
    row1, row2 = (next(r for r in catalog if r.gpu_id == "nvidia-rtx-3090" and r.count == n) for n in (1, 2))
    assert gpu0.total_time_h is not None and row1.total_time_h is not None and row2.total_time_h is not None
    assert gpu0.total_time_h > 1.5 * row1.total_time_h  # the data this test rests on: a slow card
    add = rec.add_owned
    assert add is not None and add["count"] == 2
    paced = row2.total_time_h * gpu0.total_time_h / row1.total_time_h
    assert float(add["total_time_h"]) == pytest.approx(paced)  # type: ignore[arg-type]


def test_the_table_row_of_adding_to_a_benchmarked_card_reads_as_the_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # QA 17g: "add 1 more GeForce RTX 3090 (~39.1 h) ... $1,502" beside the table's marked "→ 2x
    # GeForce RTX 3090 ... 20.4 h ... $1,501§": its buy cost had the slow owned card in the pair,
    # its time two healthy cards. Renting a pair stays at the catalog's pace (no slow card in it).
    m = this_machine(nvml=rtx3090(), bench=_slow_rtx3090_bench(tmp_path))
    result = _estimate(m, "resnet50", 72)
    add = result.recommendation.add_owned
    assert add is not None and add["count"] == 2
    (mine,) = [r for r in result.rows if r.gpu_id == "nvidia-rtx-3090" and r.count == 2]
    assert mine.owned == 1 and mine.total_time_h == pytest.approx(float(add["total_time_h"]))  # type: ignore[arg-type]
    assert mine.buy_cost_usd == pytest.approx(float(add["buy_cost_usd"]))  # type: ignore[arg-type]
    assert mine.meets_deadline
    (healthy,) = [
        r
        for r in _estimate(this_machine(nvml=rtx3090()), "resnet50", 72).rows
        if r.gpu_id == "nvidia-rtx-3090" and r.count == 2
    ]
    assert healthy.total_time_h is not None and mine.total_time_h > 1.5 * healthy.total_time_h
    assert mine.cloud_cost_usd == pytest.approx(healthy.cloud_cost_usd)
    # the one card they own: its row is their own line's time
    (gpu0,) = [x for x in result.local if x.device == "gpu0"]
    (one,) = [r for r in result.rows if r.gpu_id == "nvidia-rtx-3090" and r.count == 1]
    assert one.total_time_h == pytest.approx(gpu0.total_time_h)


def test_the_users_own_gpus_keep_to_the_gpus_an_option_may_have(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # QA 17e: "--max-gpus 1" on a two-RTX 4090 machine was answered "use your 2x GeForce RTX 4090",
    # data parallel; a purchase of four still counts both cards owned.
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", rtx4090x2)
    for limit in (["--max-gpus", "1"], ["--count", "1,4"]):
        assert main(["estimate", "--workload", "resnet50", *limit, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        rec = doc["recommendation"]
        assert rec["action"] == "have" and rec["own"]["count"] == 1, limit
        assert "your GeForce RTX 4090 finishes" in rec["rationale"] and "2x" not in rec["choice"]
    four = next(r for r in doc["rows"] if r["gpu_id"] == "nvidia-rtx-4090" and r["count"] == 4)
    assert four["owned"] == 2 and "you own 2: buy 2 more" in four["note"]
    assert main(["estimate", "--workload", "resnet50", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["recommendation"]["own"]["count"] == 2  # no limit: both


def test_buying_more_of_the_users_card_counts_every_card_they_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # QA 17e: at --count 1,4 the own option is one of the two RTX 4090: "Buy 3 more GeForce RTX
    # 4090 (4 in all)" beside a price of two.
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", rtx4090x2)
    args = ["--workload", "resnet50", "--count", "1,4", "--deadline-hours", "10", "--gpus", "nvidia-rtx-4090"]
    assert main(["estimate", *args, "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)["recommendation"]
    assert rec["action"] == "buy" and rec["option"]["count"] == 4 and rec["own"]["owned"] == 2
    assert rec["choice"].startswith("Buy 2 more GeForce RTX 4090 (4 in all)")


def test_buying_more_of_cards_that_cannot_hold_it_alone_says_how_many_more() -> None:
    # Review 17b: two RTX 4090 too small for Llama 70B QLoRA form no own option, and the advice read
    # "Buy 4x GeForce RTX 4090 (~180 h) ... for about $3,239": the price of the two they lack.
    a = assumptions(S, deadline_hours=200)
    m = this_machine(nvml=rtx4090x2())
    result = estimate_for_machine(get_preset("llama-70b-qlora"), a, m, gpu_ids=["nvidia-rtx-4090"])
    rec = result.recommendation
    assert rec.own is None and rec.own_misfit and rec.action == "buy" and rec.option is not None
    assert (rec.option["count"], rec.option["owned"]) == (4, 2)  # JSON: how many of them you have
    (four,) = [r for r in result.rows if r.gpu_id == "nvidia-rtx-4090" and r.count == 4]
    assert four.owned == 2 and rec.option["buy_cost_usd"] == four.buy_cost_usd
    assert explain(rec)[0].startswith("Buy 2 more GeForce RTX 4090 (4 in all)")


def test_own_cards_whose_range_crosses_the_deadline_are_told_what_to_add_to_stay_inside() -> None:
    # QA 17e: "Its error range reaches past your 45 h deadline (up to 52.1 h): leave room, or pick a
    # faster option" named none to a manager whose own RTX 3090 is the answer.
    rec = _estimate(this_machine(nvml=rtx3090()), "resnet50", 45).recommendation
    assert rec.action == "have" and rec.crosses_deadline
    add = rec.add_owned
    assert add is not None and (add["count"], add["owned"]) == (2, 1)
    assert float(add["time_high_h"]) <= 45  # type: ignore[arg-type]
    why = explain(rec)[1]
    assert "leave room, or add 1 more GeForce RTX 3090: 2 in all stay inside it, about " in why
    assert "Adding to yours" not in why and "pick a faster option" not in why
    assert _estimate(this_machine(nvml=rtx3090()), "resnet50", 72).recommendation.add_owned is None  # inside


def test_what_to_add_to_the_users_cards_stays_in_one_box() -> None:
    # QA 17e: four A100 40GB and Llama 70B full: "Adding to yours: 60 more A100 PCIe 40GB (64 in
    # all)", eight nodes of them, for a manager with one four-GPU box.
    from tests.fakes import fake_nvml as F

    gpus = [dataclasses.replace(F._a100(i), name="NVIDIA A100-PCIE-40GB", memory_total=40 * F.GIB) for i in range(4)]
    m = this_machine(nvml=F.FakeNVML(gpus, driver="550.54.15", cuda=12040))
    result = _estimate(m, "llama-70b-full", 72)
    rec = result.recommendation
    assert rec.own_misfit.startswith("your 4x A100 PCIe 40GB cannot hold it")
    # the data this test rests on: a cluster of that card holds it in time
    assert any(r.gpu_id == "nvidia-a100-pcie-40gb" and r.count > 8 and r.fits and r.meets_deadline for r in result.rows)
    assert rec.add_owned is None and "Adding to yours" not in explain(rec)[1]
    late = _estimate(m, "llama-70b-qlora", 72).recommendation  # 8 of them in one box do
    assert late.add_owned is not None and late.add_owned["count"] == 8


def test_the_report_says_when_the_own_option_uses_some_of_the_users_cards(tmp_path: Path) -> None:
    # QA 17e: at --max-gpus 1 the report's row of one of two RTX 4090 read "(all healthy cards
    # together)" had it been two of four; it names how many of theirs it uses.
    from gpuselect.app.workflows import build_machine_report

    m = this_machine(nvml=rtx4090x2())
    capped = estimate_for_machine(get_preset("resnet50"), assumptions(S, max_gpus=1, cluster_max_gpus=1), m)
    both = estimate_for_machine(get_preset("resnet50"), assumptions(S), m)

    def label(result) -> str:  # type: ignore[no-untyped-def]
        rep = build_machine_report(m, result, settings=S, redact=False)
        est = next(s for s in rep.sections if s.title == "Estimates")
        return next(str(row[0]) for row in est.table[1:] if str(row[0]).startswith(("your GeForce", "your 2x GeForce")))

    assert label(capped).startswith("your GeForce RTX 4090 (1 of your 2 healthy cards)")
    assert label(both).startswith("your 2x GeForce RTX 4090 (all healthy cards together)")
