"""``PYTHONPATH=. python -m gpuselect.estimate.fit``: fit the step-time model's parameters and
write gpuselect/estimate/data/steptime.json, with a log in docs/validation/steptime-2026-11-23/fit.txt."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from gpuselect.catalog import load_catalog
from gpuselect.estimate.fit import kernels as K  # noqa: N812 - short module alias, used as a namespace as in the formulas
from gpuselect.estimate.fit import steps as S  # noqa: N812 - short module alias, used as a namespace as in the formulas

OUT = Path(__file__).resolve().parents[1] / "data" / "steptime.json"
LOG = Path(__file__).resolve().parents[3] / "docs" / "validation" / "steptime-2026-11-23" / "fit.txt"

#: Assumed, not fitted (no data here pins them down); each says why.
ASSUMED = {
    "tile": 128,  # cuBLAS/CUTLASS tensor-core output tile edge
    "tile_cpu": 64,  # oneDNN's register-blocked tile order of magnitude
    "borrow_penalty": 0.9,  # an architecture borrowing its neighbour's efficiency: software less tuned
    "vector_eff": 0.5,  # elementwise FLOPs on the vector units (rarely the bound)
    "h2d_fraction_of_pcie": 0.2,  # pageable host memory (DataLoader default without pin_memory): the H100 record's 7.2 of 54 GB/s pinned was 0.11 of PCIe 5; older links fare relatively better
    "h2d_latency_us": 15.25,  # the H100 record's small-transfer latency
}


def main() -> int:
    catalog = load_catalog()
    lines: list[str] = []
    # The step factors and FSDP overlap are fitted on training throughput by
    # benchmarks/estimator_validation.py --fit (after this script); keep them.
    old = json.loads(OUT.read_text()) if OUT.exists() else {}
    power, power_line = K.fit_power(catalog)
    lines.append(power_line)
    lines.append(
        "  k[arch] (W per FP32 core at 1 GHz^n, desktop GeForce lowest; chips without GeForce: their SXM/OAM module): "
        + ", ".join(f"{a} {v}" for a, v in power["w_per_core"].items())
    )
    obs, skipped = K.read_gemm(catalog, power)
    mem_kinds, n_mem, mem_gpu = K.fit_memory_kinds(catalog)
    mode = K.gemm_fit_mode()  # GPUSELECT_FIT_GEMM: "" as shipped; "roofline", "tiles" (kernels.GEMM_FIT_MODES)
    g = K.fit_gemm_as_shipped(catalog, obs, mode)
    lines.append(
        f"GEMM: {g['n']} rows with shapes (of {len(obs)} usable); k0={g['k0']} align={g['align_penalty']} "
        f"floor={g['kernel_floor_us']} us; smaller tiles {g['small_tile_eff']} per halving of the 128 edge "
        f"(0 = one 128 tile); fit mode {mode or 'shipped'!r}: {g['criterion']} |log err|"
        f"{' with the memory roofline' if g['memory_roofline'] else ', compute and floor only'}; median "
        f"{g['median_abs_log_err']}, mean {g['mean_abs_log_err']}, p90 {g['p90_abs_log_err']}"
    )
    lines += [f"  skipped: {s}" for s in skipped]
    eff = K.gemm_eff_table(g)
    lines += [f"  E[{key.replace('|', ', ')}] = {v}" for key, v in g["eff"].items()]
    lines.append(
        f"  GeForce tensor paths (tf32/16/fp8): E = {g['geforce_tensor_eff']} of the catalog's half-rate "
        f"FP32-accumulate peak, any architecture ({g['geforce_rows']} rows)"
    )
    lines.append(
        f"  pro parts of architectures measured on GeForce only: E = the GeForce rows' x {g['pro_over_geforce']} "
        f"(median pro/GeForce ratio where both were measured): {g['derived_from_geforce']}"
    )
    mem = mem_kinds["other"]
    lines.append(f"memory efficiency: {n_mem} FluidX3D rows matched to the catalog")
    lines += [f"  {a}: {v}" for a, v in mem.items()]
    lines.append(
        "  datacenter GDDR boards (ECC on by default), per architecture: "
        + ", ".join(f"{a} {v}" for a, v in mem_kinds["gddr_ecc"].items())
    )
    lines.append(
        f"  per card ({len(mem_gpu)} catalog cards measured): " + ", ".join(f"{k} {v}" for k, v in mem_gpu.items())
    )
    doc: dict[str, Any] = {
        "_source": "written by python -m gpuselect.estimate.fit from ../shared/data/kernels and docs/validation records",
        "gemm": {
            "k0": g["k0"],
            "align_penalty": g["align_penalty"],
            "tile": ASSUMED["tile"],
            "tile_cpu": ASSUMED["tile_cpu"],
            "small_tile_eff": g["small_tile_eff"],
            "eff": eff,
            "geforce_tensor_eff": g["geforce_tensor_eff"],
            "tensor_ratio": K.tensor_ratio(catalog),
            "default_eff": {"fp32": 0.7, "tf32": 0.7, "16": 0.6, "fp8": 0.6},
        },
        "memory": {"eff": mem, "eff_gddr_ecc": mem_kinds["gddr_ecc"], "by_gpu": mem_gpu, "default_eff": 0.7},
        "power": power,
        "borrow_penalty": ASSUMED["borrow_penalty"],
        "device": {"kernel_floor_us": g["kernel_floor_us"], "vector_eff": ASSUMED["vector_eff"]},
        "host": {
            "dispatch_us": 50.0,
            "dispatch_per_launch_overhead": 4.4,
            "step_fixed_us": 0.0,
            "h2d_fraction_of_pcie": ASSUMED["h2d_fraction_of_pcie"],
            "h2d_latency_us": ASSUMED["h2d_latency_us"],
        },
        "cpu": {"dispatch_per_launch_overhead": 4.4},
    }
    # So is QLoRA's dequantisation cost (benchmarks/qlora_litgpt.py --fit).
    for keep in ("step", "comm", "dequant"):
        if keep in old:
            doc[keep] = old[keep]
    conv, n_conv, spread, conv_by = K.fit_conv(catalog, g, power)
    doc["conv"] = {"factor": conv, "factor_cpu": conv, "by_class": conv_by}
    lines.append(
        f"conv: factor {conv} over {n_conv} DeepBench rows (median |log| spread {spread}); by path: "
        + ", ".join(f"{c} {v}" for c, v in conv_by.items())
    )
    att = K.fit_attention(catalog, g)
    doc["attention"] = att
    lines.append(f"attention (FlashAttention-2 fwd+bwd): {att}")
    # Hopper: PyTorch's SDPA runs cuDNN's sm90 flash kernels there, not FlashAttention-2 (our H100
    # profile names them); their rate relative to the same step's GEMMs replaces the FA2 chart's.
    from gpuselect.estimate import roofline as R  # noqa: N812 - short module alias, used as a namespace as in the formulas

    R._PARAMS = R.Params(doc)  # the kernel parameters so far, FA2's Hopper factor among them
    hopper, hopper_lines = S.hopper_attention_in_step(catalog)
    S.calibrate_hopper_attention(att, hopper)
    lines += hopper_lines
    lines.append(
        f"  NVIDIA/Hopper attention factor: {att['hopper_fa2_chart']} (FA2 chart) x {hopper:.3f} (in-step cuDNN vs "
        f"GEMM) = {att['factor_by_arch']['NVIDIA/Hopper']}"
    )
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    # Host side, with the kernel parameters in place (step_time reads the file).
    from gpuselect.estimate.perf import step_time

    R._PARAMS = None
    e = catalog.get("nvidia-h100-sxm5-80gb")
    if e is None:
        raise RuntimeError("internal error: e is unset")
    traces = {"simple_cnn": S.simple_cnn_trace(), "transformer": S.bench_transformer_trace()}
    base = R.catalog_device(e)

    def predict(model: str, us: float, fixed: float, b: int) -> float:
        from dataclasses import replace

        d = replace(
            base, dispatch_s=us * 1e-6, step_fixed_s=fixed * 1e-6, h2d_gbs=S.h100_h2d_gbs()
        )  # the bench copies from pinned memory: the record's own rate
        return step_time(traces[model], d, b, "fp32", optimizer="sgd-momentum").seconds

    us, fixed, err = S.fit_dispatch(predict)
    ratio = us / S.h100_launch_us()
    doc["host"]["dispatch_us"] = round(us, 2)
    doc["host"]["step_fixed_us"] = fixed
    doc["host"]["dispatch_per_launch_overhead"] = round(ratio, 3)
    lines.append(
        f"host: {us:.1f} us per eager op and {fixed:.0f} us per step on the H100 machine ({ratio:.2f} x its "
        f"{S.h100_launch_us()} us bare-op launch overhead per op); simple-CNN and bench-transformer steps "
        f"median |log err| {err:.3f}"
    )
    cpu_fit = fit_cpu(doc)
    doc["cpu"].update(cpu_fit["params"])
    lines += cpu_fit["lines"]
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    LOG.parent.mkdir(parents=True, exist_ok=True)
    LOG.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {OUT}")
    return 0


def fit_cpu(doc: dict) -> dict:  # type: ignore[type-arg]
    """The CPU's global factors, with each benchmarked CPU's own (per-op cost, device factor)
    fitted on its own steps (``perf.fit_bench_steps``): GEMMs at the measured matmul rate
    (``gemm_factor`` 1: the per-record device factor carries the level), and the convolutions'
    rate against it (``conv_factor``) chosen so that each record's CNN steps predict its
    transformer steps and back (leave one model out) as well as they can, over the quiet CPU
    records (the H100 machine's Xeon, this VM's runs at low load: steps.cpu_records("fit")).
    ``dispatch_per_launch_overhead`` (for a record without training steps): the host's ratio
    (``host.dispatch_per_launch_overhead``)."""
    import math
    import statistics

    from gpuselect.estimate import roofline as R  # noqa: N812 - short module alias, used as a namespace as in the formulas
    from gpuselect.estimate.perf import (
        apply_bench_fit,
        bench_step_list,
        bench_trace,
        cpu_device,
        fit_bench_steps,
        step_time,
    )

    recs = S.cpu_records()
    if not recs:
        return {"params": {}, "lines": ["cpu: no records"]}

    def lomo(conv: float) -> tuple[float, int]:
        doc["cpu"] = {**doc["cpu"], "conv_factor": conv, "gemm_factor": 1.0}
        R._PARAMS = R.Params(doc)
        R._COMPILED.clear()
        errs = []
        for rec, cores, _label in recs:
            d0 = cpu_device(rec, cores=cores, fit_steps=False)
            steps = bench_step_list(rec)
            for m in ("simple_cnn", "transformer"):
                f = fit_bench_steps(d0, [s for s in steps if s[0] != m])
                if f is None:
                    continue
                d = apply_bench_fit(d0, f)
                for model, b, t in steps:
                    if model == m:
                        p = step_time(bench_trace(model, cpu=True), d, b, "fp32", optimizer="sgd-momentum").seconds
                        errs.append(abs(math.log(p / t)))
        return statistics.fmean(errs), len(errs)

    best = None
    for conv in [0.05 * 1.1**i for i in range(50)]:
        m, n = lomo(conv)
        if best is None or m < best[0]:
            best = (m, conv, n)
    if best is None:
        raise RuntimeError("internal error: best is unset")
    R._PARAMS = None
    R._COMPILED.clear()
    # A record without training steps: the eager per-op cost over a bare op's launch measured on the
    # H100 machine's host (the records' own fits put a 2-core CPU's batch-1 cost into the device
    # part, so their ratios are no estimate of it). A CPU device has no per-step host share of its
    # own, so the per-step share goes in at the simple CNN's op count, as one per-op figure.
    cnn_ops = S.simple_cnn_trace().dispatches_per_step()
    per_op_us = float(doc["host"]["dispatch_us"]) + float(doc["host"]["step_fixed_us"]) / cnn_ops
    ratio = per_op_us / S.h100_launch_us()
    spec = S.fit_cpu_spec(recs)
    return {
        "params": {
            "conv_factor": round(best[1], 4),
            "dispatch_per_launch_overhead": round(ratio, 3),
            "gemm_factor": 1.0,
            **spec["params"],
        },
        "lines": spec["lines"]
        + [
            (
                f"cpu: conv factor {best[1]:.3f} of the GEMM rate (GEMMs at the measured matmul rate x each record's "
                f"fitted device factor); leave-one-model-out over {best[2]} steps of {len(recs)} quiet CPU records "
                f"({', '.join(lab for _r, _c, lab in recs)}), mean |log err| {best[0]:.3f}; per-op cost "
                f"{ratio:.2f} x launch overhead where a record has no training steps (the H100 machine's host, its per-step share spread over the simple CNN's ops)"
            )
        ],
    }


if __name__ == "__main__":
    sys.exit(main())
