"""Host-side parameters of the step-time model from our own training-step records (scripts only).

- ``host.dispatch_us``: the host's eager cost per op (Python, dispatcher, autograd, launch) on the
  H100 machine: fitted so the simple-CNN steps at batch 1..512 (docs/validation/h100-2026-11-22)
  match - one parameter for five points that are all host-bound (2.1-2.3 ms whatever the batch).
  ``host.dispatch_per_launch_overhead``: the same divided by that machine's measured bare-op
  launch overhead, so a benchmarked device's dispatch cost is that ratio x its own measurement.
- CPU: ``cpu.conv_factor`` (oneDNN convolutions against the measured fp32 matmul rate) and
  ``cpu.dispatch_per_launch_overhead`` from this VM's own benchmark (docs/validation/cpu-vm-*).

The simple CNN's eager trace is written out by hand here (the kernels torch launches), so the
fit does not depend on the trace builders; tests check it against the FLOP counts.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from pathlib import Path
from typing import Any

from gpuselect.estimate.perf import cpu_fma_flops_per_cycle
from gpuselect.estimate.perf import simple_cnn_trace as hand_simple_cnn_trace
from gpuselect.estimate.trace import StepTrace

ROOT = Path(__file__).resolve().parents[3]
H100_BENCH = ROOT / "docs" / "validation" / "h100-2026-11-22" / "bench-full.json"
CPU_BENCHES = sorted((ROOT / "docs" / "validation" / "cpu-vm-2026-11-23").glob("bench-cpu-steptime-*.json"))


def simple_cnn_trace() -> StepTrace:
    """The simple CNN's step as the app sees it: the shipped meta-device trace where there is one,
    else the hand-written eager trace."""
    try:
        from gpuselect.workloads.traces import shipped_trace

        t = shipped_trace("simple-cnn")
    except ImportError:
        t = None
    return t if t is not None else hand_simple_cnn_trace()


def h100_steps(model: str = "simple_cnn") -> list[tuple[int, float]]:
    dev = json.loads(H100_BENCH.read_text())["devices"][0]
    steps = dev["train_steps"]
    if isinstance(steps, str):  # this record stored the list as its repr
        import ast

        steps = ast.literal_eval(steps)
    return [(s["batch_size"], s["step_ms"] / 1e3) for s in steps if s["model"] == model]


def h100_record() -> dict[str, Any]:
    """The H100 record (bench-full.json's GPU device)."""
    rec: dict[str, Any] = json.loads(H100_BENCH.read_text())["devices"][0]
    return rec


def h100_h2d_gbs() -> float:
    """The record's pinned host-to-device rate (the bench's training steps copy from pinned memory)."""
    return float(json.loads(H100_BENCH.read_text())["devices"][0]["host_to_device_gbs"])


def bench_transformer_trace() -> StepTrace:
    """gpuselect bench's "transformer" model (perf.bench_transformer_trace)."""
    from gpuselect.estimate.perf import bench_transformer_trace as t

    result: StepTrace = t()
    return result


def launch_us() -> float:
    return h100_launch_us()


def h100_launch_us() -> float:
    return float(json.loads(H100_BENCH.read_text())["devices"][0]["launch_overhead_us"])


H100_HOST_BENCH = ROOT / "docs" / "validation" / "h100-2026-11-22" / "bench-quick.json"
H100_HOST_CORES = 16  # detect.json: 16-core Xeon with AMX
#: What `gpuselect detect` saw of each machine's CPU (cores, clock, ISA): what the app's
#: unmeasured CPU estimate starts from.
H100_HOST_DETECT = ROOT / "docs" / "validation" / "h100-2026-11-22" / "detect.json"
VM_DETECT = ROOT / "docs" / "validation" / "cpu-vm-2026-11-24" / "detect-cpu.json"


def cpu_facts(label: str) -> tuple[int, float | None, list[str]]:
    """(cores, MHz, ISA features) of the machine a CPU record (``cpu_records``' label) ran on."""
    cpu = _detected_cpu(H100_HOST_DETECT if label == H100_HOST_BENCH.name else VM_DETECT)
    mhz = cpu.get("max_mhz") or cpu.get("current_mhz")
    return int(cpu.get("physical_cores") or cpu.get("logical_cores") or 1), mhz, list(cpu.get("features") or [])


@functools.lru_cache(maxsize=4)
def _detected_cpu(path: Path) -> dict[str, Any]:
    cpu: dict[str, Any] = json.loads(path.read_text())["cpu"]
    return cpu


def fit_cpu_spec(recs: list[tuple[dict[str, Any], int, str]]) -> dict[str, Any]:
    """An unmeasured CPU (no `gpuselect bench`): its fp32 GEMM rate as a share of its FMA peak
    (cores x clock x FLOP/cycle of its widest FMA, ``perf.cpu_fma_flops_per_cycle``) and its memory
    bandwidth per core, each the geometric mean over the machines of the quiet records (their
    measured matmul and copy rates against what `detect` saw of them); leave one machine out
    printed."""
    from collections import defaultdict

    share: dict[str, list[float]] = defaultdict(list)
    per_core: dict[str, list[float]] = defaultdict(list)
    for rec, _cores, label in recs:
        cores, mhz, features = cpu_facts(label)
        mm = (rec.get("matmul_tflops") or {}).get("fp32")
        machine = f"{cores} cores {mhz} MHz"
        if mm and mhz:
            share[machine].append(mm * 1e12 / (cores * mhz * 1e6 * cpu_fma_flops_per_cycle(features)))
        if rec.get("memory_bandwidth_gbs"):
            per_core[machine].append(float(rec["memory_bandwidth_gbs"]) / cores)

    def gmean(xs: list[float]) -> float:
        return math.exp(sum(math.log(x) for x in xs) / len(xs))

    per_machine = {m: gmean(v) for m, v in share.items()}
    bw_machine = {m: gmean(v) for m, v in per_core.items()}
    if not per_machine or not bw_machine:
        return {"params": {}, "lines": ["cpu spec: no records"]}
    g, b = gmean(list(per_machine.values())), gmean(list(bw_machine.values()))
    lines = [
        f"cpu spec (no benchmark): fp32 GEMM at {g:.3f} of the FMA peak, {b:.2f} GB/s memory bandwidth per core "
        f"(geometric means over {len(per_machine)} machines: "
        + ", ".join(f"{m}: {per_machine[m]:.3f}, {bw_machine.get(m, math.nan):.2f} GB/s/core" for m in per_machine)
        + ")"
    ]
    for m in per_machine:  # leave one machine out: its rates predicted from the others'
        rest = [v for k, v in per_machine.items() if k != m]
        rest_bw = [v for k, v in bw_machine.items() if k != m]
        if rest and rest_bw and m in bw_machine:
            lines.append(
                f"  leaving out {m}: GEMM {gmean(rest) / per_machine[m] - 1:+.0%}, "
                f"bandwidth {gmean(rest_bw) / bw_machine[m] - 1:+.0%} against its measured rates"
            )
    return {"params": {"spec_gemm_share": round(g, 4), "spec_gbs_per_core": round(b, 3)}, "lines": lines}


#: This VM's own runs of `gpuselect bench --device cpu`, each with the load average before and
#: after it (``.load.txt`` beside it).
CPU_RUNS = sorted((ROOT / "docs" / "validation" / "cpu-vm-2026-11-24").glob("bench-cpu-*.json"))
#: A run counts as quiet when the 1-minute load average stayed below this before and after it (the
#: bench itself adds ~1 on this 2-core VM).
QUIET_LOAD = 1.5


def run_load(path: Path) -> list[float]:
    """The 1-minute load averages recorded beside a run (before, after)."""
    load = path.with_suffix(".load.txt")
    if not load.exists():
        return []
    return [
        float(line.split("load average:")[1].split(",")[0])
        for line in load.read_text().splitlines()
        if "load average:" in line
    ]


def quiet(path: Path) -> bool:
    loads = run_load(path)
    return bool(loads) and max(loads) < QUIET_LOAD


CPU_QUIET_BENCHES = [p for p in CPU_RUNS if quiet(p)]
CPU_LOADED_BENCHES = [p for p in CPU_RUNS if not quiet(p)]


#: A quiet record used to validate only (the band of a benchmarked workload past its measured
#: batches), not to fit: session 12's 2-core Xeon VM (its own measure of others' CPU share 0.2 %).
CPU_VALIDATE_ONLY_QUIET = ROOT / "docs" / "validation" / "cpu-xeon-2026-11-25" / "bench-cpu.json"


def cpu_records(which: str = "fit") -> list[tuple[dict[str, Any], int, str]]:
    """(record, cores, label). ``fit``: the quiet records, which fit the CPU's global conv factor
    (the H100 machine's 16-core Xeon, bench-quick.json, and this VM's runs at low load,
    cpu-vm-2026-11-24); ``validate``: this 2-core VM's runs while other sessions loaded it
    (cpu-vm-2026-11-23, and the cpu-vm-2026-11-24 runs above ``QUIET_LOAD``; never used in the fit);
    ``quiet-validate``: a quiet record that validates without fitting (``CPU_VALIDATE_ONLY_QUIET``)."""
    out = []
    paths = (
        [(H100_HOST_BENCH, H100_HOST_CORES)] + [(p, 2) for p in CPU_QUIET_BENCHES]
        if which == "fit"
        else [(CPU_VALIDATE_ONLY_QUIET, 2)]
        if which == "quiet-validate"
        else [(p, 2) for p in CPU_BENCHES + CPU_LOADED_BENCHES]
    )
    for path, cores in paths:
        for d in json.loads(path.read_text())["devices"]:
            if d.get("device") == "cpu":
                out.append((d, cores, path.name))
    return out


def fit_dispatch(predict_step: Any) -> tuple[float, float, float]:
    """The host cost of a step on the H100 machine, per eager op (µs) and per step whatever its op
    count (µs), that best matches its simple-CNN and bench-transformer steps together (30 and 62
    dispatches: the two op counts separate the two costs), and the median absolute log error.
    ``predict_step(model, dispatch_us, fixed_us, batch) -> seconds``."""
    obs = [(m, b, t) for m in ("simple_cnn", "transformer") for b, t in h100_steps(m)]
    best = None
    for i in range(200):
        us = 5.0 * 1.03**i
        for fixed in range(0, 2001, 50):
            err = statistics.median(abs(math.log(predict_step(m, us, float(fixed), b) / t)) for m, b, t in obs)
            if best is None or err < best[2]:
                best = (us, float(fixed), err)
    if best is None:
        raise RuntimeError("internal error: best is unset")
    return best


#: benchmarks/gpu_step_profile.py on the lent H100 (2026-11-24, torch 2.11): per step, the GPU
#: time of GEMM, attention and other kernels, and the top kernels by name.
H100_PROFILE = ROOT / "docs" / "validation" / "h100-2026-11-24" / "steptime" / "profile.json"


def hopper_attention_in_step(catalog: Any) -> tuple[float, list[str]]:
    """How much faster than the FA2-chart model the profiled steps' fused attention ran,
    relative to the same steps' tensor-core GEMMs (a ratio of ratios, so the step factors and
    clocks cancel): the geometric mean over the profiled steps, under the parameters in force
    (``roofline.params()``). peft's fp32 adapter GEMMs (FFMA kernels, no tensor cores) are left out
    on both sides."""
    from gpuselect.estimate import roofline as R  # noqa: N812 - short module alias, as in __main__
    from gpuselect.estimate.perf import workload_trace
    from gpuselect.estimate.trace import OpKind
    from gpuselect.workloads.presets import PRESETS

    d = R.catalog_device(catalog.get("nvidia-h100-sxm5-80gb"))
    logs: list[float] = []
    lines = [f"Hopper attention in a training step ({H100_PROFILE.relative_to(ROOT)}):"]
    for p in json.loads(H100_PROFILE.read_text()):
        w = PRESETS[p["workload"]]
        gemm = att = 0.0
        for o in workload_trace(w, checkpointing=False).ops:
            t = R.op_time(d, o, p["batch"], "bf16-true")[0]
            if o.kind is OpKind.ATTENTION:
                att += t
            elif o.kind is OpKind.GEMM and "lora" not in o.name:
                gemm += t
        m = p["kernel_s_by_class"]
        ffma = sum(k["s_per_step"] for k in p["top_kernels"] if "f32f32" in k["name"] and k["class"] == "gemm")
        r_gemm = gemm / (m["gemm"] - ffma)
        r_att = att / m["attention"]
        logs.append(math.log(r_att / r_gemm))
        lines.append(
            f"  {p['workload']} micro-batch {p['batch']}: model/measured GEMM {r_gemm:.2f} (fp32 adapter kernels "
            f"{ffma:.3f} s left out), attention {r_att:.2f}: attention {r_att / r_gemm:.2f}x the FA2-chart rate"
        )
    return math.exp(sum(logs) / len(logs)), lines


def calibrate_hopper_attention(att: dict[str, Any], in_step: float) -> None:
    """Set the Hopper attention factor to the FA2 chart's (kept as ``hopper_fa2_chart``, which the
    validation uses for sources that ran FlashAttention-2) times ``in_step``
    (``hopper_attention_in_step``)."""
    key = "NVIDIA/Hopper"
    fa2 = float(att.get("factor_by_arch", {}).get(key, att["factor"]))
    att.setdefault("factor_by_arch", {})[key] = round(fa2 * in_step, 4)
    att["hopper_fa2_chart"] = fa2
