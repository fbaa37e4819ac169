"""Benchmark figures against the catalog's spec: "% of spec", and health findings for shortfalls."""

from __future__ import annotations

from gpuselect.bench.model import BenchReport, DeviceResult
from gpuselect.catalog.schema import GpuEntry
from gpuselect.health.model import Finding, Severity
from gpuselect.types import SPEC_PRECISIONS

#: Below these fractions of the spec sheet a figure becomes a warning. A healthy H100 SXM5
#: sustained 62-71 % of its dense tensor specs (bf16 676-703 of 989 TFLOP/s; a 10-product burst
#: reaches ~79 %) and 87-88 % of its memory bandwidth (docs/validation/h100-2026-11-22).
MATMUL_WARN_RATIO = 0.55
BANDWIDTH_WARN_RATIO = 0.60
SOURCE = "gpuselect: a healthy H100 sustained 62-71 % of its dense tensor specs and 88 % of its bandwidth spec"


def spec_ratios(res: DeviceResult, entry: GpuEntry) -> dict[str, float]:
    ratios: dict[str, float] = {}
    for precision, measured in res.matmul_tflops.items():
        spec = entry.tflops(precision) if precision in SPEC_PRECISIONS else None
        if measured and spec:
            ratios[f"matmul_{precision}"] = round(measured / spec, 3)
    if res.memory_bandwidth_gbs and entry.memory_bandwidth_gbs:
        ratios["memory_bandwidth"] = round(res.memory_bandwidth_gbs / entry.memory_bandwidth_gbs, 3)
    return ratios


#: Other processes' share of the CPUs during a benchmark above which its figures are flagged.
BUSY_SHARE_WARN = 0.25
BUSY_SOURCE = (
    "gpuselect: other processes' CPU time in /proc/stat over the run; loaded runs of this benchmark on a "
    "2-core VM trained 4-10x slower than quiet ones (docs/validation/cpu-vm-2026-11-23)"
)


def bench_findings(report: BenchReport) -> list[Finding]:
    findings: list[Finding] = []
    busy = report.other_cpu_share
    if busy is not None and busy > BUSY_SHARE_WARN:
        findings.append(
            Finding(
                "bench.busy_machine",
                Severity.WARNING,
                "this machine",
                f"other processes used {100 * busy:.0f} % of the CPUs while the benchmark ran",
                "its figures (and this machine's estimates made from them) are likely low",
                remedy="close other work and run the benchmark again",
                value=busy,
                threshold=BUSY_SHARE_WARN,
                unit="of the CPUs",
                source=BUSY_SOURCE,
            )
        )
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
                findings.append(
                    Finding(
                        f"bench.spec_ratio.{key}",
                        Severity.WARNING,
                        dev,
                        f"reaches {100 * ratio:.0f} % of its {label} spec",
                        f"measured against the catalog's {res.spec_name}",
                        remedy="check cooling and the power limit (see the throttling findings), other processes on the GPU, and the PCIe/NVLink setup",
                        value=round(ratio, 3),
                        threshold=warn,
                        unit="of spec",
                        source=SOURCE,
                    )
                )
            else:
                findings.append(
                    Finding(
                        f"bench.spec_ratio.{key}",
                        Severity.OK,
                        dev,
                        f"reaches {100 * ratio:.0f} % of its {label} spec",
                        f"measured against the catalog's {res.spec_name}",
                        value=round(ratio, 3),
                        threshold=warn,
                        unit="of spec",
                        source=SOURCE,
                    )
                )
    return findings
