"""This machine: what detection found, its health (with the benchmark's findings) and its last
benchmark — and what the estimator needs from it (the CPU's and each GPU's own estimate, the
user's GPUs as owned cards, a critical finding keeping a card out of the plan)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuselect.errors import DataError

#: Findings that say a card is busy, not broken: a warning about availability, never a reason to
#: leave the card out of the plan.
AVAILABILITY_RULES = frozenset({"gpu.memory_held_by_others", "gpu.memory_in_use"})

#: A healthy H100 SXM5 sustained 69-70 % of its dense BF16/FP16 spec in gpuselect's benchmark
#: (docs/validation/h100-2026-11-22); a card measuring less is slowed in proportion.
HEALTHY_MATMUL_SPEC_RATIO = 0.69


@dataclass
class Machine:
    snapshot: Any  # hardware.types.Snapshot
    health: Any  # health.rules.HealthReport (with the benchmark's findings)
    bench: Any = None  # bench.model.BenchReport, when one was run or loaded
    # Sentences for the user: what a loaded benchmark measured that this machine does not have.
    bench_notes: list[str] = field(default_factory=list)


def this_machine(*, snapshot: Any = None, bench: Any = None, nvml: Any = None, probe: bool = False) -> Machine:
    """Detect (unless a snapshot is given) and judge this machine, the benchmark's findings included."""
    from gpuselect.health.rules import evaluate

    if snapshot is None:
        from gpuselect.hardware.snapshot import detect

        snapshot = detect(probe=probe, nvml=nvml)
    extra = []
    notes: list[str] = []
    if bench is not None:
        from gpuselect.bench.findings import bench_findings

        bench, notes = _own_devices(snapshot, bench)
        # a record none of whose devices is this machine's says nothing about it: its busy-machine
        # warning stood in this machine's health beside the note that the record is not used
        extra = bench_findings(bench) if bench.devices else []
        notes += _age_notes(bench)
        if _busy(bench) and any(d.kind == "cpu" for d in bench.devices):
            notes.append(
                f"the benchmark ran while other processes used {100 * bench.other_cpu_share:.0f} % of the CPUs: "
                "its CPU figures are likely far too low (a busy core stalls every step's threads), so this CPU's "
                "estimate takes the wide band of such records; run `gpuselect bench` again on a quiet machine"
            )
    return Machine(snapshot, evaluate(snapshot, extra), bench, notes)


#: A saved benchmark older than this is named with its age: drivers, firmware and load change.
STALE_BENCH_DAYS = 90


def _age_notes(bench: Any, now: dt.datetime | None = None) -> list[str]:
    """A sentence when a saved record is old or was taken by another gpuselect version: it is
    matched to this machine by its devices alone. Records written before the bench stamped them
    (no ``taken_at``) say nothing."""
    from gpuselect import __version__

    taken = getattr(bench, "taken_at", None)
    if not taken or not bench.devices:
        return []
    when = dt.datetime.fromisoformat(taken)
    days = ((now or dt.datetime.now(dt.UTC)) - when).total_seconds() / 86400
    version = getattr(bench, "app_version", None)
    reasons = []
    if days > STALE_BENCH_DAYS:
        reasons.append(f"is {days:.0f} days old (taken {when:%Y-%m-%d})")
    if version and version != __version__:
        reasons.append(f"was taken by gpuselect {version} (this is {__version__})")
    if not reasons:
        return []
    return [
        f"the benchmark {' and '.join(reasons)}: if the machine, its drivers or its load changed since, "
        "run `gpuselect bench` again"
    ]


def _busy(bench: Any) -> bool:
    """Whether the benchmark's own measure of other processes' CPU use flagged it (bench.findings)."""
    from gpuselect.bench.findings import BUSY_SHARE_WARN

    share = getattr(bench, "other_cpu_share", None)
    return share is not None and share > BUSY_SHARE_WARN


def _own_devices(snapshot: Any, bench: Any) -> tuple[Any, list[str]]:
    """The benchmark without the devices this machine does not have, and a sentence naming them:
    a result saved on another machine (an H100 server's, say) must not stand for this CPU or GPU."""
    cpu_name = (snapshot.cpu.model or "").strip()
    probe = Machine(snapshot, None, bench)
    matched = {id(d) for g in snapshot.gpus if (d := bench_device_for(probe, g)) is not None}
    keep: list[Any] = []
    foreign: list[Any] = []
    for d in bench.devices:
        if d.kind == "cpu":
            ok = not cpu_name or not d.name or d.name in ("cpu", "?") or d.name.strip() == cpu_name
            cores, here = getattr(d, "logical_cores", None), snapshot.cpu.logical_cores
            ok = ok and (cores is None or here is None or cores == here)  # same name, another machine
        else:  # CUDA/ROCm cards are matched to detected GPUs; MPS/XPU devices are not detected as GPUs
            ok = id(d) in matched or d.kind not in ("cuda", "rocm")
        (keep if ok else foreign).append(d)
    if not foreign:
        return bench, []
    here = snapshot.cpu.logical_cores

    def named(d: Any) -> str:
        cores = getattr(d, "logical_cores", None)
        if d.kind == "cpu" and cores is not None and here is not None and cores != here:
            return f"{d.name} ({d.device}, {cores} logical cores; this machine has {here})"  # same name, not this CPU
        return f"{d.name} ({d.device})"

    what = ", ".join(named(d) for d in foreign)
    return replace(bench, devices=keep), [
        f"the benchmark measured {what}, not this machine's CPU or GPUs as detected: not used here "
        "(`gpuselect bench` measures this machine)"
    ]


# --- the benchmark, as a value (never JSON and back inside one process) ----------------------


def run_quick_bench() -> Any:
    from gpuselect.bench.engine import run_to_completion
    from gpuselect.bench.model import BenchConfig

    return run_to_completion(BenchConfig(quick=True))


def load_bench(path: str | Path) -> Any:
    """A saved ``gpuselect bench --format json`` result as a BenchReport, read bounded and checked
    against its schema (gpuselect.bench.io); one sentence when it is not one."""
    from gpuselect.bench.io import load_bench_file

    return bench_from_doc(load_bench_file(path), source=f"the benchmark result {path}")


def _share(v: Any) -> float | None:
    """A fraction from a saved result, or None where it is missing or not one."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        return None
    return float(v)


def bench_from_doc(doc: dict[str, Any], *, source: str = "the benchmark result") -> Any:
    """Rebuild a BenchReport from its JSON document (``validate_bench_doc`` checked its figures);
    ``source`` names it in the one sentence a damaged record gets."""
    from gpuselect.bench.model import BenchReport, DeviceResult, Timing, TrainStep
    from gpuselect.safe_io import check_fields, check_plain_text, one_line

    def known(cls: Any, values: Any, at: str) -> dict[str, Any]:
        if not isinstance(values, dict):
            raise DataError(f"{source}: {at} should be an object, not {type(values).__name__}")
        # a newer gpuselect's extra keys are left out, not an error that names Python internals
        names = {f.name for f in dataclasses.fields(cls)}
        kept = {k: v for k, v in values.items() if k in names}
        # a key the bench always writes, missing: a "missing 1 required positional argument" before
        missing = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name not in kept
        ]
        if missing:
            raise DataError(f"{source}: {at} has no {', '.join(missing)}; the file is damaged or was edited")
        return kept

    # printed to terminals and into reports: an escape sequence in a skipped reason or a note could
    # rewrite the screen, as a device name could (validate_bench_doc refuses those)
    check_plain_text({k: v for k, v in doc.items() if k != "devices"}, source, max_len=2000)
    devices = []
    for i, raw in enumerate(doc["devices"]):
        at = f"device #{i + 1}"
        d = dict(raw)
        if isinstance(d.get("skipped"), dict):
            # a failure's reason, as the benchmark wrote it: an exception's whole text (before it
            # kept one line) made a record it wrote itself "damaged" at 2,000 characters; cut instead
            d["skipped"] = {k: one_line(v) if isinstance(v, str) else v for k, v in d["skipped"].items()}
        check_plain_text(d, source, at=at, max_len=2000)
        d.setdefault("name", d.get("device", "?"))
        d.setdefault("kind", str(d.get("device", "cpu")).split(":")[0])
        d = known(DeviceResult, d, at)
        steps = d.get("train_steps") or []
        d["train_steps"] = [TrainStep(**known(TrainStep, s, f"{at} train step #{j + 1}")) for j, s in enumerate(steps)]
        for k in ("matmul_detail", "bandwidth_detail", "transfer_detail"):
            d[k] = {n: Timing(**known(Timing, t, f"{at} {k}.{n}")) for n, t in (d.get(k) or {}).items()}
        devices.append(DeviceResult(**d))
    meta = doc.get("report", {})
    duration = meta.get("duration_s", 0.0)
    rep = BenchReport(
        devices,
        meta.get("quick", True),
        meta.get("torch_version"),
        meta.get("cancelled", False),
        duration,
        other_cpu_share=_share(meta.get("other_cpu_share")),
        taken_at=meta.get("taken_at"),
        app_version=meta.get("app_version"),
    )
    # every field as its annotation says: a string where a number or a table belongs failed later as
    # an internal error ("'list' object has no attribute 'items'") or was printed as "{'a': 1}"
    check_fields(rep, source)
    return rep


def bench_device_for(machine: Machine, gpu: Any) -> Any:
    """The benchmark's result for one detected GPU: by torch index, else the n-th card of that name."""
    if machine.bench is None:
        return None
    cuda = [d for d in machine.bench.devices if d.kind != "cpu"]
    if gpu.torch_index is not None:
        return next((d for d in cuda if d.device.endswith(f":{gpu.torch_index}")), None)
    same = [g for g in machine.snapshot.gpus if g.name == gpu.name]
    named = [d for d in cuda if d.name == gpu.name]
    i = same.index(gpu)
    return named[i] if i < len(named) else None


# --- what the estimator needs ------------------------------------------------------------------

_DEVICE = re.compile(r"^(gpu\d+)\b")


def critical_problems(machine: Machine) -> dict[str, str]:
    """gpuN -> the first critical finding that keeps it out of the plan (availability is not one)."""
    out: dict[str, str] = {}
    for f in machine.health.findings:
        if f.severity.value != "critical" or f.id in AVAILABILITY_RULES or not f.device:
            continue
        m = _DEVICE.match(f.device)
        if m and m.group(1) not in out:
            title = f.title[:1].lower() + f.title[1:] if f.title[1:2].islower() else f.title  # "GPU is lost" stays
            out[m.group(1)] = title
    return out


def owned_gpus(machine: Machine, catalog: Any) -> list[Any]:
    from gpuselect.estimate.recommend import OwnedGpu

    problems = critical_problems(machine)
    out = []
    for g in machine.snapshot.gpus:
        device = f"gpu{g.index}"
        match = catalog.match(g.name or "", g.memory_total_bytes) if g.name else None
        problem = problems.get(device) or (f"the GPU is {g.state}" if g.state != "ok" else None)
        scale = 1.0
        dev = bench_device_for(machine, g)
        ratio = (dev.spec_ratio or {}) if dev is not None else {}
        measured = ratio.get("matmul_bf16") or ratio.get("matmul_fp16")
        if measured:
            scale = min(1.0, measured / HEALTHY_MATMUL_SPEC_RATIO)
        memory = g.memory_total_bytes / 2**30 if g.memory_total_bytes else None
        out.append(OwnedGpu(device, g.name or "unknown GPU", match.entry.id if match else None, problem, scale, memory))
    return out


def local_estimates(w: Any, a: Any, machine: Machine, catalog: Any, perf: Any) -> list[Any]:
    """This CPU's estimate (its benchmark's matmul rate when there is one) and each GPU's own."""
    from gpuselect.estimate.api import local_cpu_estimate, local_gpu_estimate
    from gpuselect.output import to_jsonable

    cpu = machine.snapshot.cpu
    cpu_rec = None
    if machine.bench is not None:
        dev = next((d for d in machine.bench.devices if d.kind == "cpu"), None)
        cpu_rec = (
            to_jsonable(dev) if dev is not None else None
        )  # the record form the estimator reads (a value, not a file)
        if cpu_rec is not None and _busy(machine.bench):
            cpu_rec["busy"] = True  # its steps say what a busy machine did: the wide band, said so
        elif cpu_rec is not None and getattr(machine.bench, "other_cpu_share", None) is not None:
            cpu_rec["quiet"] = True  # measured quiet: its steps may anchor an estimate past them
    out = [
        local_cpu_estimate(
            w,
            a,
            cores=cpu.physical_cores or cpu.logical_cores,
            mhz=cpu.max_mhz or cpu.current_mhz,
            features=cpu.features,
            name=cpu.model or "this CPU",
            bench=cpu_rec,
            # what the OS reports as installed, in the binary GB the memory model counts in
            ram_gb=machine.snapshot.memory.total_bytes / 2**30 if machine.snapshot.memory.total_bytes else None,
        )
    ]
    for g in machine.snapshot.gpus:
        dev = bench_device_for(machine, g)
        out.append(
            local_gpu_estimate(
                w,
                a,
                catalog,
                perf,
                name=g.name,
                memory_bytes=g.memory_total_bytes,
                device=f"gpu{g.index}",
                spec_ratio=dev.spec_ratio if dev is not None else None,
                bench=to_jsonable(dev) if dev is not None else None,
                power_limit_w=g.power_limit_w,
            )
        )
    return out
