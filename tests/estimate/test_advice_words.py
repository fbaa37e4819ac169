"""The advice's words weigh like with like (QA round session 14): a lead inside the error band is
no lead, a purchase is compared with purchases, the GPU named beside a CPU is one a student would
get, a larger batch is offered where the steps leave the GPUs idle, and money never reads
"about under $0.01"."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.cli import main
from gpuselect.estimate import api as A
from gpuselect.estimate.api import Assumptions, EstimateRow, LocalEstimate
from gpuselect.estimate.recommend import explain, named_options, recommend
from gpuselect.workloads.presets import PRESETS
from tests.builders import option_row

W = PRESETS["resnet50"]
SLOW_CPU = [LocalEstimate("cpu", "CPU", 1.0, 1e6, "measured", 0.5)]


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog(use_overlay=False)


def _r(
    gpu: str,
    family: str,
    count: int,
    hours: float,
    buy: float | None,
    rent: float | None = None,
    deadline: float = 72.0,
    band: float = 0.3,
) -> EstimateRow:
    return option_row(gpu, hours, family=family, count=count, buy=buy, rent=rent, band=band, deadline=deadline)


def test_a_missed_deadline_prefers_the_cheaper_option_when_the_lead_is_inside_the_band() -> None:
    # 1x B200 at 21.0 s for $0.04 was the headline over 1x RTX 3090 at 21.3 s for $0.003 (±47 %),
    # a stage higher and 13x the cost; 1,024 GPUs 11 % faster than 8 at 100x the money likewise.
    rows = [_r("big", "datacenter", 1024, 5.4, 37_000, deadline=1), _r("box", "datacenter", 8, 6.1, 330, deadline=1)]
    rec = recommend(rows, SLOW_CPU, Assumptions(deadline_hours=1), W)
    assert rec.option is not None and rec.option["gpu_id"] == "box" and rec.stage == 3
    assert rec.tied_faster is not None and rec.tied_faster["gpu_id"] == "big" and rec.value_alt is None
    assert rec.per_stage["3"] == rec.option  # the chart's bar is the option named
    assert "differ by less than their error range; the cheapest of them is 8x box" in rec.rationale
    assert "1024x big is estimated a little faster" in rec.rationale and "$37,000 to buy" in rec.rationale
    # A lower stage for no more money wins a tie too, even where it is not half the cost.
    rec = recommend(
        [_r("big", "datacenter", 1024, 5.4, 600, deadline=1), _r("box", "datacenter", 8, 6.1, 330, deadline=1)],
        SLOW_CPU,
        Assumptions(deadline_hours=1),
        W,
    )
    assert rec.option is not None and rec.option["gpu_id"] == "box"
    # Same stage, not much cheaper: the fastest stays the answer, nothing tied.
    rec = recommend(
        [_r("fast", "datacenter", 8, 5.4, 400, deadline=1), _r("box", "datacenter", 8, 6.1, 330, deadline=1)],
        SLOW_CPU,
        Assumptions(deadline_hours=1),
        W,
    )
    assert rec.option is not None and rec.option["gpu_id"] == "fast" and rec.tied_faster is None


def test_a_missed_deadline_compares_a_purchase_with_a_purchase() -> None:
    # "1024x MI250X ... for about $14,848,003 [to buy]. 256x V100 takes 3.5 min for about $12 [rented],
    # a fraction of the cost": the two halves were different kinds of price.
    big = _r("big", "datacenter", 1024, 5.4, 14_800_000, deadline=1)  # a purchase only
    box = dataclasses.replace(_r("box", "datacenter", 256, 7.5, 2_944_000, deadline=1), cloud_cost_usd=12.0)
    rec = recommend([big, box], SLOW_CPU, Assumptions(deadline_hours=1), W)
    assert rec.option is not None and rec.option["kind"] == "buy"
    assert rec.value_alt is not None and rec.value_alt["kind"] == "buy"
    assert rec.value_alt["cost_usd"] == 2_944_000
    assert "$14,800,000 to buy and run" in rec.rationale
    assert "about $2,944,000 to buy and run ($12 rented), a fraction of the cost" in rec.rationale
    # A rental-only fastest compares rentals: the cheap box's rent, not its purchase.
    big_rent = dataclasses.replace(big, buy_cost_usd=None, cloud_cost_usd=400.0)
    rec = recommend([big_rent, box], SLOW_CPU, Assumptions(deadline_hours=1), W)
    assert rec.value_alt is not None and rec.value_alt["kind"] == "rent"
    assert "about $400 rented" in rec.rationale and "about $12 rented, a fraction of the cost" in rec.rationale


def test_a_missed_budget_shows_each_stages_cheapest_option_in_time() -> None:
    """QA 16: llama-8b-full with a $5 budget named 4x MI300X ($25 rented), the cheapest in time, while
    the stage-4 bar showed the stage's fastest, 128 P100s to buy for $1,203,227, beside 16 V100s
    rented for $104 in time: "best option per stage" read as a $1.2 M plan."""
    box = _r("mi300x", "datacenter", 4, 2.6, 60_000, rent=25.0)
    fast = _r("p100", "datacenter", 128, 5.4, 1_203_227)
    cheap = _r("v100", "datacenter", 16, 8.2, 184_000, rent=104.0)
    late = _r("t4", "datacenter", 16, 100.0, 30_000, rent=50.0)  # cheaper still, but past the deadline
    rec = recommend([box, fast, cheap, late], SLOW_CPU, Assumptions(budget_usd=5.0), W)
    assert rec.missed == "budget" and rec.option is not None and rec.option["gpu_id"] == "mi300x"
    four = rec.per_stage["4"]
    assert four is not None and four["gpu_id"] == "v100" and four["cost_usd"] == 104.0, four
    # nothing in time at all: each stage's bar is still its fastest
    late_fast, late_cheap = (dataclasses.replace(r, meets_deadline=False) for r in (fast, cheap))
    rec = recommend([late_fast, late_cheap], SLOW_CPU, Assumptions(budget_usd=5.0, deadline_hours=1.0), W)
    assert rec.per_stage["4"] is not None and rec.per_stage["4"]["gpu_id"] == "p100"


def test_money_under_a_cent_reads_under_not_about_under() -> None:
    # "1x GeForce RTX 3090 takes about 21 s for about under $0.01, a fraction of the cost"
    d = 0.005
    b200 = _r("b200", "datacenter", 1, 21.03 / 3600, None, rent=0.039, deadline=d, band=0.47)
    rtx = _r("rtx3090", "geforce", 1, 21.25 / 3600, 1499, rent=0.003, deadline=d, band=0.47)
    rec = recommend([b200, rtx], SLOW_CPU, Assumptions(deadline_hours=d), W)
    assert "for under $0.01 rented" in rec.rationale and "about under" not in rec.rationale
    # the value alternative's words (a lead outside the band)
    fast = _r("b200", "datacenter", 1, 19 / 3600, None, rent=0.039, deadline=d, band=0.3)
    rec = recommend(
        [fast, dataclasses.replace(rtx, total_time_h=26 / 3600)], SLOW_CPU, Assumptions(deadline_hours=d), W
    )
    assert rec.value_alt is not None and "for under $0.01 rented, a fraction of the cost" in rec.rationale
    assert "about under" not in rec.rationale
    # your own GPU's electricity
    own = _r("rtx3090", "geforce", 1, 0.001, 0.0004)
    rec = recommend([rtx], SLOW_CPU, Assumptions(), W, own=own, owned_n=1)
    assert rec.action == "have" and "electricity under $0.01" in rec.rationale
    assert "about under" not in rec.rationale


def test_a_gpu_inside_the_cpus_band_is_not_called_faster() -> None:
    # "A GPU would be faster (1x Instinct MI250X, about 4 s)" beside a CPU's 4.08 s, and the GPU a
    # $14,500 two-die datacenter card.
    cpu = [LocalEstimate("cpu", "CPU", 1.0, 4.08 / 3600, "measured", 0.47)]
    rows = [
        _r("mi250x", "datacenter", 1, 3.80 / 3600, 14_500, band=0.47),
        _r("rtx5060", "geforce", 1, 7 / 3600, 299, band=0.47),
    ]
    rec = recommend(rows, cpu, Assumptions(), W)
    assert rec.action == "cpu" and rec.faster_gpu is None
    assert "A GPU would be faster" not in rec.rationale
    assert "No GPU is clearly faster: even the fastest single GPU, 1x mi250x, takes about 4 s" in rec.rationale


def test_the_gpu_named_beside_the_cpu_is_the_cheapest_to_get_that_is_clearly_faster() -> None:
    cpu = [LocalEstimate("cpu", "CPU", 1.0, 34.0, "measured", 0.47)]
    rows = [
        _r("b200", "datacenter", 1, 0.05, None, rent=0.3),
        _r("rtx5090", "geforce", 1, 0.3, 1999),
        _r("rtx5060", "geforce", 1, 0.5, 299),
        _r("gtx1050", "geforce", 1, 30.0, 99),  # cheaper still, but inside the CPU's time
    ]
    rec = recommend(rows, cpu, Assumptions(), W)
    assert rec.action == "cpu" and rec.fastest_gpu is not None and rec.fastest_gpu["gpu_id"] == "b200"
    assert rec.faster_gpu is not None and rec.faster_gpu["gpu_id"] == "rtx5060"
    assert "A GPU would be faster (1x rtx5060, about 30 min, $299 to buy), but you do not need one." in rec.rationale
    assert [o["gpu_id"] for o in named_options(rec)] == ["rtx5060"]  # the one the table marks


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["estimate", *argv]) == 0
    return capsys.readouterr().out


def test_the_arrow_footnote_only_where_a_row_carries_the_arrow(capsys: pytest.CaptureFixture[str]) -> None:
    # Stage 1 named a GPU the table printed without →, and the footnote explained a mark no row had.
    out = _cli(capsys, "--workload", "mnist-mlp", "--gpus", "amd-mi250x,nvidia-rtx-5090")
    assert out.split("\n\n")[1].startswith("Stage 1")
    marked = [line for line in out.splitlines() if line.startswith("→ ")]
    assert len(marked) == 1 and "→ marks the options the advice names" in out
    name = marked[0][2:].split("  ")[0]  # "1x Instinct MI250X (2 GCDs each)"
    assert name in out.split("\n\n")[1]  # the advice names the GPU the arrow marks
    # No GPU with a price: the advice names none, no row is marked, no footnote.
    out = _cli(capsys, "--workload", "mnist-mlp", "--gpus", "nvidia-b300")
    assert "→" not in out


def test_overhead_bound_advice_offers_one_gpu_at_a_larger_batch(catalog) -> None:  # type: ignore[no-untyped-def]
    # simple-cnn on 1e9 samples: every GPU waits on its host at batch 64, so the advice rented two
    # RTX 3090 (50 h, $50) where one at batch 1,024 takes 9 h for $4.57, and never said so.
    w = PRESETS["simple-cnn"]
    rec = A.estimate(w, Assumptions(dataset_size=10**9), catalog, local=[]).recommendation
    assert rec.option is not None and int(rec.option["count"]) > 1  # type: ignore[call-overload]
    lb = rec.larger_batch
    assert lb is not None and lb["count"] == 1 and lb["batch_size"] == 1024 and lb["meets_deadline"]
    assert "A larger per-GPU batch (--batch-size 1024) keeps one GPU busy: 1x " in rec.rationale
    assert "inside your 72 h deadline" in rec.rationale
    # and in the headline, which is what a first-time user reads (QA 14)
    assert rec.choice.count("; or 1x ") == 1 and "at batch 1024 (~" in rec.choice
    # its figures are those of that card estimated at that batch
    again = A.estimate(
        w, Assumptions(dataset_size=10**9, batch_size=1024), catalog, gpu_ids=[str(lb["gpu_id"])], local=[]
    )
    one = next(r for r in again.rows if r.count == 1)
    assert one.total_time_h == pytest.approx(lb["total_time_h"]) and one.bound != "overhead"
    # The user's own batch is theirs: no other batch offered.
    rec = A.estimate(w, Assumptions(dataset_size=10**9, batch_size=64), catalog, local=[]).recommendation
    assert rec.larger_batch is None and "--batch-size" not in rec.rationale
    # Steps that keep a GPU busy (resnet50 is memory-bound at its batch): nothing to offer.
    rec = A.estimate(PRESETS["resnet50"], Assumptions(), catalog, local=[]).recommendation
    assert rec.larger_batch is None
    # The faces word it the same: the money of the face's currency, the GUI's control names.
    _choice, why = explain(
        A.estimate(w, Assumptions(dataset_size=10**9), catalog, local=[]).recommendation,
        lambda v: f"€{v:,.2f}",
    )
    assert "(--batch-size 1024)" in why and "€4." in why


def test_the_larger_batch_reaches_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--workload", "simple-cnn", "--dataset-size", "1000000000", "--deadline-hours", "36"]
    doc = json.loads(_cli(capsys, *argv, "--format", "json"))
    lb = doc["recommendation"]["larger_batch"]
    assert lb["batch_size"] == 1024 and lb["count"] == 1 and lb["total_time_h"] < 36
    out = _cli(capsys, *argv)
    assert "A larger per-GPU batch (--batch-size 1024) keeps one GPU busy" in out


def test_the_larger_batch_reaches_the_report(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.md"
    argv = ["--workload", "simple-cnn", "--dataset-size", "1000000000", "--deadline-hours", "36"]
    assert main(["report", "-o", str(out), "--no-bench", *argv]) == 0
    assert "A larger per-GPU batch (--batch-size 1024) keeps one GPU busy" in out.read_text(encoding="utf-8")


def test_renting_one_idle_card_names_its_larger_batch_where_that_saves_money(catalog) -> None:  # type: ignore[no-untyped-def]
    w = PRESETS["simple-cnn"]
    rec = A.estimate(w, Assumptions(dataset_size=10**8), catalog, local=[]).recommendation
    assert rec.action == "rent" and rec.option is not None and rec.option["count"] == 1
    lb = rec.larger_batch
    assert lb is not None and lb["gpu_id"] == rec.option["gpu_id"] and lb["batch_size"] == 1024
    assert float(lb["cost_usd"]) <= 0.5 * float(rec.option["cloud_cost_usd"])  # type: ignore[arg-type]
    # a rental of a few seconds: a cent saved is no reason to change the batch
    rec = A.estimate(PRESETS["mnist-mlp"], Assumptions(), catalog, local=[]).recommendation
    assert rec.action == "rent" and rec.larger_batch is None


def test_the_report_table_marks_the_gpu_named_beside_the_cpu(catalog) -> None:  # type: ignore[no-untyped-def]
    # The report marked only some of the options the advice names: not the GPU named at stage 1.
    from gpuselect.app.machine import this_machine
    from gpuselect.report.model import build_report

    cpu = LocalEstimate("cpu", "CPU", 1.0, 0.05, "measured", 0.47)
    result = A.estimate(PRESETS["simple-cnn"], Assumptions(), catalog, local=[cpu])
    rec = result.recommendation
    assert rec.action == "cpu" and rec.faster_gpu is not None
    m = this_machine()  # no GPU: the test session hides the vendor libraries
    est = next(s for s in build_report(m.snapshot, m.health, estimate=result).sections if s.title == "Estimates")
    labels = [r[0] for r in est.table]  # type: ignore[union-attr]
    named = f"{rec.faster_gpu['count']}x {rec.faster_gpu['name']} (named in the advice)"
    assert named in labels and rec.faster_gpu["name"] in est.lines[0]


def test_over_the_budget_and_past_the_deadline_never_read_as_equal_to_them() -> None:
    """QA 16: resnet50 with a $2,000 budget read "$2,000 to buy and run (over your budget)" ($2,000.36);
    llama-70b-full with a 30 min deadline "reaches past your 30 min deadline (up to 30 min)" (30.3)."""
    card = _r("rtx", "geforce", 1, 18.5, 2000.36, rent=18.0, deadline=24.0, band=0.32)
    rec = recommend([card], SLOW_CPU, Assumptions(deadline_hours=24.0, budget_usd=2000.0), W)
    assert "$2,000 to buy and run (just over your budget)" in rec.rationale, rec.rationale
    rec = recommend([card], SLOW_CPU, Assumptions(deadline_hours=24.0, budget_usd=1500.0), W)
    assert "$2,000 to buy and run (over your budget)" in rec.rationale, rec.rationale
    box = _r("b200", "datacenter", 128, 25 / 60, None, rent=360.0, deadline=0.5, band=0.21)
    rec = recommend([box], SLOW_CPU, Assumptions(deadline_hours=0.5), W)
    assert rec.crosses_deadline
    assert "past your 30 min deadline (up to just over 30 min)" in rec.rationale, rec.rationale
    # "past your 4 h deadline (up to 4.0 h)": 16x B200 at 3.3 h, +21 %
    box = _r("b200", "datacenter", 16, 3.32, None, rent=356.0, deadline=4.0, band=0.21)
    rec = recommend([box], SLOW_CPU, Assumptions(deadline_hours=4.0), W)
    assert "past your 4 h deadline (up to just over 4.0 h)" in rec.rationale, rec.rationale


def test_an_option_whose_range_crosses_the_deadline_names_one_that_stays_inside() -> None:
    """QA 16: resnet50 in 24 h rented an RTX 5090 for $18 (up to 24.5 h) and said "leave room, or pick
    a faster option" without naming one; 2x RTX 5090 rented for $19 stays inside (up to 12.6 h)."""
    one = _r("rtx", "geforce", 1, 18.5, 2000.36, rent=18.36, deadline=24.0, band=0.32)
    two = _r("rtx", "geforce", 2, 9.6, 3999.4, rent=18.94, deadline=24.0, band=0.32)
    dear = _r("h100", "datacenter", 1, 9.3, 33_601, rent=25.0, deadline=24.0, band=0.32)
    slow = _r("a6000", "workstation", 1, 20.0, 4650, rent=10.0, deadline=24.0, band=0.32)  # cheaper, crosses too
    rec = recommend([one, two, dear, slow], SLOW_CPU, Assumptions(deadline_hours=24.0, budget_usd=2000.0), W)
    assert rec.crosses_deadline and rec.option is not None and rec.option["kind"] == "rent"
    assert rec.in_range_alt is not None and (rec.in_range_alt["gpu_id"], rec.in_range_alt["count"]) == ("rtx", 2)
    assert rec.in_range_alt in named_options(rec)  # the faces mark its row
    assert "pick a faster option: 2x rtx stays inside it, about 9.6 h (up to 12.7 h) for about $19 rented." in (
        rec.rationale
    ), rec.rationale
    # nothing stays inside: the words as before
    rec = recommend([one, slow], SLOW_CPU, Assumptions(deadline_hours=24.0, budget_usd=2000.0), W)
    assert rec.in_range_alt is None and "leave room, or pick a faster option." in rec.rationale
