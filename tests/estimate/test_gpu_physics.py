"""Per-GPU physics of the step-time model (issue 12, GPUs it has never seen): sustained clocks
under the board's power limit, GeForce tensor paths, per-card memory efficiency, and the
throughput-ratio measurement (fit/ratios.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.estimate import roofline as R
from gpuselect.estimate.fit import ratios as Q


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog()


def test_power_starved_boards_run_below_boost_and_others_do_not(catalog) -> None:  # type: ignore[no-untyped-def]
    c = {
        i: R.clock_factor(catalog.get(i))
        for i in ("nvidia-t4", "nvidia-l4", "nvidia-v100-sxm2-16gb", "nvidia-rtx-3070", "nvidia-h100-sxm5-80gb")
    }
    assert c["nvidia-t4"] < 0.8 and c["nvidia-l4"] < 0.8  # 70-72 W for 2,560-7,424 cores
    assert c["nvidia-v100-sxm2-16gb"] == 1.0 and c["nvidia-rtx-3070"] > 0.97
    assert c["nvidia-h100-sxm5-80gb"] == 1.0  # no desktop GeForce Hopper: its SXM module is the reference


def test_a_chip_without_geforce_cards_takes_its_sxm_module_as_the_reference(catalog) -> None:  # type: ignore[no-untyped-def]
    c = {e.id: R.clock_factor(e) for e in catalog.entries if e.architecture in ("Ampere", "Hopper")}
    assert c["nvidia-h100-sxm5-80gb"] == c["nvidia-h200-sxm-141gb"] == c["nvidia-gh200-96gb"] == 1.0
    assert 0.8 < c["nvidia-h100-pcie-80gb"] < 0.95  # 350 W for 114 SMs at 1.755 GHz
    # GA100: MAMF measured the A100 PCIe 80GB (300 W) at 0.95 of the SXM (400 W): that pins the chip's need.
    assert c["nvidia-a100-pcie-80gb"] == pytest.approx(0.95, abs=0.02)
    assert c["nvidia-a100-sxm4-40gb"] == c["nvidia-a100-sxm4-80gb"] == 1.0
    assert c["nvidia-a100-pcie-40gb"] < c["nvidia-a100-pcie-80gb"] < 1.0  # 250 W < 300 W < 400 W
    # GA102 boards keep the GeForce reference of their chip (8.6), not GA100's module.
    ga102 = catalog.get("nvidia-a40")
    n = R.params()["power"]["exponent"]
    k = R.params()["power"]["w_per_core"]["NVIDIA/Ampere"]
    need = ga102.shader_cores * k * (ga102.boost_clock_mhz / 1000) ** n
    assert math.isclose(c["nvidia-a40"], min(1.0, ga102.tdp_w / need) ** (1 / n), rel_tol=1e-9)


def _conv(d: R.DeviceModel, prec: str) -> float:
    from gpuselect.estimate.trace import Op, OpKind, Phase

    op = Op(
        OpKind.CONV,
        Phase.FORWARD,
        "conv3x3",
        flops_per_sample=2.0 * 56 * 56 * 256 * 2304,
        elems_per_sample=2 * 56 * 56 * 256,
        elems_fixed=256 * 2304,
        m_per_sample=56 * 56,
        n=256,
        k=2304,
    )
    return R.op_time(d, op, 64, prec)[1]


def test_convolutions_run_per_path_and_tf32_takes_the_faster(catalog) -> None:  # type: ignore[no-untyped-def]
    by = R.params()["conv"]["by_class"]
    # DeepBench: FP32 convolutions (Winograd on the vector units) beat the GEMM model on Volta/Turing,
    # tensor-core implicit GEMMs fall below it.
    assert by["NVIDIA/Volta|fp32"] > 1.0 > by["NVIDIA/Volta|tensor"]
    v100 = R.catalog_device(catalog.get("nvidia-v100-sxm2-16gb"))
    assert R._conv_factor(v100, "fp32") == by["NVIDIA/Volta|fp32"]
    ampere = R.catalog_device(catalog.get("nvidia-a100-sxm4-80gb"))
    assert R._conv_factor(ampere, "fp32") == by["NVIDIA/Turing|fp32"]  # the nearest measured architecture
    # Tensor-core convolutions keep the all-rows factor (DeepBench's NCHW fp16 rows are not what AMP runs).
    assert R._conv_factor(ampere, "tf32") == R._conv_factor(v100, "fp16") == R.params()["conv"]["factor"]
    assert R.params()["conv"]["factor"] > by["NVIDIA/Volta|tensor"]
    # A GeForce Ampere card's TF32 tensor rate equals its FP32 rate: the FP32 (Winograd) path wins
    # and the convolution runs at its rate; on the A100 the tensor path (8x the FP32 peak) wins.
    gf = R.catalog_device(catalog.get("nvidia-rtx-3090"))
    strict = replace(ampere, peak_tflops={k: v for k, v in ampere.peak_tflops.items() if k != "tf32"})
    assert _conv(gf, "tf32") == pytest.approx(_conv(strict_of(gf), "fp32"), rel=1e-2)
    assert _conv(ampere, "tf32") < _conv(strict, "fp32") / 2
    s = R.params()["step"]["gemm_factor"]
    assert R._conv_scale(ampere, "tf32", ampere.peak_tflops["tf32"] * 1e12 * s) == R._conv_factor(ampere, "tf32")


def strict_of(d: R.DeviceModel) -> R.DeviceModel:
    """The device without a TF32 rate: its convolutions take the strict FP32 path under fp32."""
    return replace(d, peak_tflops={k: v for k, v in d.peak_tflops.items() if k != "tf32"})


def test_fp32_training_runs_convolutions_in_tf32_as_pytorch_does(catalog) -> None:  # type: ignore[no-untyped-def]
    """PyTorch's default fp32: cudnn.allow_tf32 is True, matmul's allow_tf32 False. On an A100 an
    fp32 convolution takes the TF32 tensor path, an fp32 GEMM the FP32 vector units; a V100 (no
    TF32), a CPU and an AMD card keep fp32."""
    a100 = R.catalog_device(catalog.get("nvidia-a100-sxm4-80gb"))
    assert R.conv_precision(a100, "fp32") == "tf32" and R.conv_precision(a100, "bf16") == "bf16"
    for g in ("nvidia-v100-sxm2-16gb", "amd-mi250"):
        assert R.conv_precision(R.catalog_device(catalog.get(g)), "fp32") == "fp32"
    assert _conv(a100, "fp32") == pytest.approx(_conv(a100, "tf32"), rel=1e-6)
    assert _conv(a100, "fp32") < _conv(strict_of(a100), "fp32") / 2


def _shared_data_or_skip() -> None:
    """These refit on ../shared/data (the kernel and throughput tables), which is not part of the
    repository: a checkout without it skips them, naming why."""
    from gpuselect.estimate.fit import shared_data

    if not (shared_data() / "kernels" / "gemm.csv").is_file():
        pytest.skip(f"needs the shared data at {shared_data()} (set GPUSELECT_SHARED_DATA)")


def test_held_out_refit_drops_the_cards_kernel_rows(catalog) -> None:  # type: ignore[no-untyped-def]
    from gpuselect.estimate.fit import kernels as K

    _shared_data_or_skip()
    doc = R.params().doc
    one = K.held_out(catalog, doc, {"nvidia-rtx-3090"})
    assert "nvidia-rtx-3090" not in one["memory"]["by_gpu"] and "nvidia-rtx-3090" in doc["memory"]["by_gpu"]
    assert not K.EXCLUDED  # the shipped fit sees every row again
    volta = {e.id for e in catalog.entries if e.architecture == "Volta"}
    arch = K.held_out(catalog, doc, volta)
    assert "NVIDIA/Volta" not in arch["gemm"]["eff"] and "NVIDIA/Volta" not in arch["memory"]["eff"]
    assert not any(k.startswith("NVIDIA/Volta|") for k in arch["conv"]["by_class"])
    assert arch["power"] == doc["power"] and arch["step"] == doc["step"]  # kept as shipped


def test_clock_factor_follows_the_power_budget(catalog) -> None:  # type: ignore[no-untyped-def]
    t4 = catalog.get("nvidia-t4")
    lower = [R.clock_factor(replace(t4, tdp_w=w)) for w in (35.0, 70.0, 140.0, 400.0)]
    assert lower == sorted(lower) and lower[-1] == 1.0 and lower[0] < lower[1]
    # At the exponent n, halving the power budget of a starved board costs 2^(-1/n) of its clock.
    n = R.params()["power"]["exponent"]
    assert math.isclose(lower[0] / lower[1], 0.5 ** (1 / n), rel_tol=1e-9)
    d = R.catalog_device(t4)
    assert math.isclose(d.peak_tflops["fp32"], t4.fp32_tflops * R.clock_factor(t4), rel_tol=1e-9)
    assert any("power-limited" in note for note in d.notes)


def test_geforce_tensor_paths_use_their_own_efficiency(catalog) -> None:  # type: ignore[no-untyped-def]
    gf = R.catalog_device(catalog.get("nvidia-rtx-3090"))
    pro = R.catalog_device(catalog.get("nvidia-rtx-a6000"))
    g = R.params()["gemm"]
    assert gf.gemm_eff["16"] == g["geforce_tensor_eff"] and gf.gemm_eff["tf32"] == g["geforce_tensor_eff"]
    assert pro.gemm_eff["16"] == g["eff"]["NVIDIA/Ampere"]["16"]
    assert gf.gemm_eff["fp32"] == pro.gemm_eff["fp32"]  # the vector path is the architecture's
    # Ada was measured on a GeForce card only: its pro parts get a derived E below the GeForce one.
    ada = R.catalog_device(catalog.get("nvidia-rtx-6000-ada"))
    assert ada.gemm_eff["16"] == g["eff"]["NVIDIA/Ada Lovelace"]["16"] < g["geforce_tensor_eff"]


def test_memory_efficiency_is_the_cards_own_where_measured(catalog) -> None:  # type: ignore[no-untyped-def]
    mem = R.params()["memory"]
    a100 = R.catalog_device(catalog.get("nvidia-a100-sxm4-80gb"))
    assert a100.mem_eff == mem["by_gpu"]["nvidia-a100-sxm4-80gb"]
    unmeasured = next(
        e
        for e in catalog.entries
        if e.vendor == "NVIDIA"
        and e.id not in mem["by_gpu"]
        and f"NVIDIA/{e.architecture}" in mem["eff"]
        and not R.gddr_ecc(e)
    )
    assert R.catalog_device(unmeasured).mem_eff == mem["eff"][f"NVIDIA/{unmeasured.architecture}"]


def test_an_unmeasured_datacenter_gddr_board_takes_its_kinds_median(catalog) -> None:  # type: ignore[no-untyped-def]
    mem = R.params()["memory"]
    a10g = catalog.get("nvidia-a10g")
    assert a10g is not None and R.gddr_ecc(a10g) and a10g.id not in mem["by_gpu"]
    assert not R.gddr_ecc(catalog.get("nvidia-rtx-3090")) and not R.gddr_ecc(catalog.get("nvidia-a100-sxm4-80gb"))
    got = R.catalog_device(a10g).mem_eff
    assert got == mem["eff_gddr_ecc"]["NVIDIA/Ampere"]
    # FluidX3D: the measured Ampere datacenter GDDR boards (A10, A40, ...) sit below the others' median
    assert got < mem["eff"]["NVIDIA/Ampere"]


def _row(group: str, gpu: str, measured: float, predicted: float, peak: float, bw: float) -> Q.Row:
    return Q.Row("src", group, "fam", True, gpu, measured, predicted, peak, bw)


def test_ratio_errors_and_reference_gpu() -> None:
    rows = [
        _row("g", "nvidia-a100-sxm4-80gb", 100.0, 100.0, 100.0, 2000.0),
        _row("g", "x", 50.0, 60.0, 40.0, 900.0),
        _row("g", "y", 20.0, 10.0, 10.0, 300.0),
    ]
    ref, pairs = Q.ratios(rows)
    got = {r.gpu: r for r in ref}
    assert set(got) == {"x", "y"} and all(r.other == "nvidia-a100-sxm4-80gb" for r in ref)
    assert math.isclose(got["x"].err, 0.6 / 0.5 - 1) and math.isclose(got["y"].err, 0.1 / 0.2 - 1)
    assert len(pairs) == 3 and all(p.measured >= 1.0 for p in pairs)  # oriented faster / slower
    xy = next(p for p in pairs if {p.gpu, p.other} == {"x", "y"})
    assert math.isclose(xy.err, (60 / 10) / (50 / 20) - 1)
    assert all(r.baseline is None for r in ref)  # three GPUs: nothing left to fit the power law on


def test_reference_as_shipped_keeps_the_reference_and_holds_out_the_others() -> None:
    shipped = [
        _row("g", "nvidia-a100-sxm4-80gb", 100.0, 100.0, 100.0, 2000.0),
        _row("g", "x", 50.0, 60.0, 40.0, 900.0),
    ]
    held = [
        _row("g", "nvidia-a100-sxm4-80gb", 100.0, 130.0, 100.0, 2000.0),
        _row("g", "x", 50.0, 45.0, 40.0, 900.0),
    ]
    mixed = Q.reference_as_shipped(held, shipped)
    ref, _pairs = Q.ratios(mixed)
    assert len(ref) == 1 and ref[0].other == "nvidia-a100-sxm4-80gb"
    assert math.isclose(ref[0].predicted, 45.0 / 100.0)  # held-out numerator over the shipped reference


def test_power_law_baseline_recovers_its_exponents_leaving_the_gpu_out() -> None:
    rows = []
    for i, (peak, bw) in enumerate([(10, 300), (20, 900), (40, 700), (80, 2000), (160, 1500), (30, 450)]):
        for grp, a in (("g1", 1.0), ("g2", 3.0)):
            thr = a * peak**0.6 * bw**0.3
            rows.append(_row(grp, f"gpu{i}", thr, thr, float(peak), float(bw)))
    bc = Q.powerlaw(rows, {"gpu0", "gpu3"})
    assert bc is not None and math.isclose(bc[0], 0.6, abs_tol=1e-9) and math.isclose(bc[1], 0.3, abs_tol=1e-9)
    ref, _pairs = Q.ratios(rows)
    assert all(r.baseline is not None and abs(r.base_err) < 1e-9 for r in ref)  # type: ignore[operator]


@pytest.mark.parametrize("gpu", ["nvidia-rtx-3090", "nvidia-t4", "nvidia-v100-sxm2-16gb"])
def test_ratio_script_predicts_what_estimate_answers_for_tf32(catalog, gpu: str) -> None:  # type: ignore[no-untyped-def]
    """The ratio measurement must test the app's own answer to `--precision tf32` (with fallback)."""
    from gpuselect.estimate import api as A
    from gpuselect.estimate.fit import throughput as T
    from gpuselect.workloads.presets import PRESETS

    w = PRESETS["bert_base_squad"]
    thr, _bound, used = T.predict(w, catalog.get(gpu), 32, "tf32")
    res = A.estimate(w, A.Assumptions(precision="tf32", batch_size=32, counts=(1,)), catalog, gpu_ids=[gpu])
    row = next(r for r in res.rows if r.count == 1)
    assert row.precision_used == used == R.resolve_precision(catalog.get(gpu), "tf32")
    assert math.isclose(row.throughput_samples_per_s, thr, rel_tol=1e-6)


def test_full_rate_titans_are_not_half_rate_geforce(catalog) -> None:  # type: ignore[no-untyped-def]
    """The Titan RTX runs FP16 with FP32 accumulate at the Quadro RTX 8000's full rate (8x its FP32
    rate, the 2080 Ti 4x): it takes its architecture's E and power limit, not the GeForce one."""
    titan, quadro, gf = (catalog.get(i) for i in ("nvidia-titan-rtx", "nvidia-quadro-rtx-8000", "nvidia-rtx-2080-ti"))
    assert not R.half_rate_tensor(titan) and R.half_rate_tensor(gf) and not R.half_rate_tensor(quadro)
    assert R.catalog_device(titan).gemm_eff["16"] == R.catalog_device(quadro).gemm_eff["16"]
    assert R.catalog_device(gf).gemm_eff["16"] == R.params()["gemm"]["geforce_tensor_eff"]
    assert all(R.half_rate_tensor(catalog.get(i)) for i in ("nvidia-rtx-4090", "nvidia-rtx-3080", "nvidia-rtx-5090"))


def test_leave_one_gpu_out_rows_refit_without_the_card_and_restore_the_shipped_fit(catalog) -> None:  # type: ignore[no-untyped-def]
    _shared_data_or_skip()
    base = R.params()
    rows = Q.all_rows(catalog, {"nvidia-rtx-3090"})
    held = Q.held_out_rows(catalog, rows, lambda e: e.id)
    assert R.params().doc == base.doc  # the shipped parameters are back
    key = {(r.source, r.group, r.gpu): r for r in rows}
    assert rows and {(r.source, r.group, r.gpu) for r in held} == set(key)
    # Its own FluidX3D efficiency (0.89) gives way to Ampere's median: every prediction moves, none is measured anew.
    assert all(h.measured == key[(h.source, h.group, h.gpu)].measured for h in held)
    assert sum(h.predicted != key[(h.source, h.group, h.gpu)].predicted for h in held) > len(held) / 2
