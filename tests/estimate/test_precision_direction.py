"""Precision goes the right direction, or the row says why not: an fp8 row that trains slower than
the same card would in bf16 (its casts cost more than its GEMMs save) says so and names bf16."""

from __future__ import annotations

import pytest

from gpuselect.catalog import Catalog, load_catalog
from gpuselect.cli import main
from gpuselect.estimate.api import Assumptions, EstimateRow, estimate
from gpuselect.estimate.roofline import supports
from gpuselect.types import Precision
from gpuselect.workloads.presets import PRESETS

CARDS = ["nvidia-l40s", "nvidia-rtx-4090", "nvidia-h100-sxm5-80gb", "nvidia-a100-sxm4-80gb", "nvidia-b200"]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(use_overlay=False)


@pytest.mark.parametrize("workload", ["vit-b16", "bert_base_squad", "gpt2-124m", "llama-1b-full"])
def test_fp8_slower_than_bf16_is_said(catalog: Catalog, workload: str) -> None:
    w = PRESETS[workload]

    def rows(p: Precision) -> dict[tuple[str, int], EstimateRow]:
        res = estimate(w, Assumptions(precision=p, counts=(1, 4)), catalog, gpu_ids=CARDS, local=[])
        return {(r.gpu_id, r.count): r for r in res.rows}

    fp8, bf16 = rows(Precision.FP8), rows(Precision.BF16)
    said = 0
    for key, r in fp8.items():
        b = bf16[key]
        if not (r.fits and b.fits and r.throughput_samples_per_s and b.throughput_samples_per_s):
            continue
        slower = b.throughput_samples_per_s > 1.01 * r.throughput_samples_per_s
        if r.precision_used != Precision.FP8:
            assert r.faster_precision is None  # fell back: nothing to compare
            continue
        card = catalog.get(key[0])
        assert card is not None and supports(card, "fp8")
        assert (r.faster_precision == Precision.BF16) == slower, key
        if slower:
            said += 1
            assert r.note and "fp8 is " in r.note and "slower here than bf16" in r.note
    if workload == "vit-b16":  # the case found: ViT-B/16 on an L40S, +19 % in fp8
        assert said and fp8[("nvidia-l40s", 1)].faster_precision == Precision.BF16


def test_bf16_request_is_never_marked(catalog: Catalog) -> None:
    res = estimate(PRESETS["vit-b16"], Assumptions(precision=Precision.BF16), catalog, gpu_ids=CARDS, local=[])
    assert all(r.faster_precision is None for r in res.rows)


def test_cli_marks_and_explains_it(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "--workload", "vit-b16", "--precision", "fp8", "--gpus", "nvidia-l40s,nvidia-a100-sxm4-80gb"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    l40s = next(ln for ln in out.splitlines() if ln.startswith("1x L40S"))
    a100 = next(ln for ln in out.splitlines() if ln.startswith("1x A100 SXM4"))
    assert " fp8† " in l40s and "†" not in a100  # the A100 has no fp8: it runs bf16, unmarked
    assert "\n† fp8 trains slower here than bf16 would" in out
