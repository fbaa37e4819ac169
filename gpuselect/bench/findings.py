"""Benchmark figures against the catalog's spec: "% of spec", and health findings for shortfalls."""

from __future__ import annotations

from gpuselect.bench.model import BenchReport, DeviceResult
from gpuselect.catalog.schema import GpuEntry
from gpuselect.health.model import Finding, Severity

#: Below these fractions of the spec sheet a figure becomes a warning. Large dense matmuls
#: reach 70-90 % of the dense tensor peak on healthy cards (the H100's bf16 ~790 of 989
#: TFLOP/s, measured in docs/validation); device copies reach ~85-90 % of the memory bandwidth.
MATMUL_WARN_RATIO = 0.55
BANDWIDTH_WARN_RATIO = 0.60
SOURCE = "gpuselect: healthy cards reach 70-90 % of dense matmul spec and 80-90 % of bandwidth spec"


def spec_ratios(res: DeviceResult, entry: GpuEntry) -> dict[str, float]:
    ratios: dict[str, float] = {}
    for precision, measured in res.matmul_tflops.items():
        spec = entry.tflops(precision) if precision in ("fp32", "tf32", "fp16", "bf16", "fp8") else None
        if measured and spec:
            ratios[f"matmul_{precision}"] = round(measured / spec, 3)
    if res.memory_bandwidth_gbs and entry.memory_bandwidth_gbs:
        ratios["memory_bandwidth"] = round(res.memory_bandwidth_gbs / entry.memory_bandwidth_gbs, 3)
    return ratios


def bench_findings(report: BenchReport) -> list[Finding]:
    findings: list[Finding] = []
    for res in report.devices:
        if not res.spec_ratio:
            continue
        dev = f"{res.device} ({res.name})"
        for key, ratio in res.spec_ratio.items():
            warn = BANDWIDTH_WARN_RATIO if key == "memory_bandwidth" else MATMUL_WARN_RATIO
            if key == "matmul_fp32":
                continue  # FP32 non-tensor peaks are rarely reached by cuBLAS; not a health signal
            label = key.replace("matmul_", "").upper() if key.startswith("matmul_") else "memory bandwidth"
            if ratio < warn:
                findings.append(Finding(
                    f"bench.spec_ratio.{key}", Severity.WARNING, dev,
                    f"reaches {100 * ratio:.0f} % of its {label} spec",
                    f"measured against the catalog's {res.spec_name}",
                    remedy="check cooling and the power limit (see the throttling findings), other processes on the GPU, and the PCIe/NVLink setup",
                    value=round(ratio, 3), threshold=warn, unit="of spec", source=SOURCE,
                ))
            else:
                findings.append(Finding(
                    f"bench.spec_ratio.{key}", Severity.OK, dev, f"reaches {100 * ratio:.0f} % of its {label} spec",
                    f"measured against the catalog's {res.spec_name}", value=round(ratio, 3), threshold=warn, unit="of spec", source=SOURCE,
                ))
    return findings
