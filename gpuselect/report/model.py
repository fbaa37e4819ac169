"""The report as a value: built once from a snapshot, health, an optional benchmark and an
optional estimate; written as JSON, Markdown or PDF by the writers. No Qt, no torch."""

from __future__ import annotations

import dataclasses
import datetime as dt
import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuselect import __version__
from gpuselect.app.money import MoneyFormat
from gpuselect.estimate.memory import need_text, vram_text
from gpuselect.estimate.recommend import (
    BORROWED_BAND_NOTE,
    BUY_COST_NOTE,
    CLOUD_COST_NOTE,
    NO_OFFER_NOTE,
    PARTIAL_OFFER_NOTE,
    STAGE_SHORT,
    explain,
    fmt_hours,
    local_time,
    memory_need,
    named_options,
    option_name,
    owned_note,
    slower_precision_note,
    stage_heading,
    verdict_line,
)
from gpuselect.health.text import with_unit
from gpuselect.output import millions, plural, three_digits
from gpuselect.workloads.model import sentence_start

REDACTED = "[redacted]"

_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[~.]?[/\\])?(?:[^\s/\\:,;()'\"]+[/\\])+([^\s/\\:,;()'\"]+)")


def scrub_paths(text: str) -> str:
    """Folders out of any file path in ``text`` (a redacted report keeps only file names)."""
    return _PATH.sub(lambda m: m.group(1), text)


METHOD_TEXT = (
    "Detection reads the CPU through the operating system and psutil, NVIDIA GPUs through NVML "
    "(every call through one choke point that records why a value is unavailable) and AMD GPUs "
    "through amdsmi. Health rules compare each reading with the card's own thresholds or the "
    "documented limits in gpuselect/health/thresholds.py (DCGM's limits for retired pages and row "
    "remapping). The benchmark reports medians of synchronised repeats after warm-up. Estimates "
    "come from a step-time model: the workload's operator trace of one training step (forward, "
    "backward, recompute; FLOPs and memory traffic per operator) is timed on each card as a "
    "roofline with efficiencies by operator kind, shape and architecture (fitted on published "
    "kernel measurements), plus the host's dispatch cost per kernel, the batch's copy to the "
    "device, the optimizer's memory traffic and, for several GPUs, all-reduce or FSDP "
    "communication. Each row's error band is the validated error of its regime (docs/accuracy.md). "
    "Peak memory per GPU counts weights, gradients, optimizer state, master weights, activations "
    "(from the trace), logits and framework overhead, divided by sharding where it applies."
)


@dataclass
class Section:
    title: str
    lines: list[str] = field(default_factory=list)  # paragraphs
    table: list[list[str]] | None = None  # first row = header
    chart: dict[str, Any] | None = None  # data for the writers' charts


@dataclass
class Report:
    title: str
    generated_at: str
    app_version: str
    host: str
    os: str
    verdict: str
    redacted: bool
    sections: list[Section]
    summary: str = ""  # page 1: the verdict, the machine's health, the recommended option with time, cost and range
    accuracy: dict[str, Any] | None = None
    sources: list[str] = field(default_factory=list)
    # The estimate as `estimate --format json` writes it (raw numbers, US dollars), beside the
    # sections' display strings; None without a workload. Only the JSON form writes it.
    estimate: dict[str, Any] | None = None


#: The regimes of the step-time bands (steptime_bands.json), as the report names them.
REGIME_LABELS = {
    "overhead": "small overhead-bound models",
    "cnn": "CNNs",
    "transformer": "transformers",
    "llm": "LLMs on one GPU",
    "llm_multi": "LLMs on several GPUs",
    "other": "other workloads",
    "reference": "calibrated reference models",
    "approximate": "workloads given as parameters and FLOPs",
    "cpu": "a benchmarked CPU",
    "cpu_anchored": "a benchmarked CPU past its measured batches of the workload",
    "cpu_unsteady": "a benchmarked CPU whose own steps its fit misses (a busy machine)",
    "cpu_spec": "an unmeasured CPU",
}


def _fmt(v: Any, unit: str = "", digits: int = 1) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.{digits}f}{unit}"
    return f"{v}{unit}"


def _machine_section(snap: Any, redact: bool) -> Section:
    cpu, mem = snap.cpu, snap.memory
    s = Section("This machine")
    s.lines.append(
        f"CPU: {cpu.model or 'unknown'} ({cpu.architecture}), {cpu.physical_cores} cores / {cpu.logical_cores} threads, "
        f"ISA: {', '.join(cpu.features) or 'none found'}."
    )
    s.lines.append(f"RAM: {mem.total_bytes / 1024**3:.1f} GiB. Python {snap.python}.")
    if snap.nvml.available:
        s.lines.append(f"NVIDIA driver {snap.nvml.driver_version}, CUDA {snap.nvml.cuda_driver_version}.")
    else:
        s.lines.append(f"NVIDIA driver: not available ({snap.nvml.error}).")
    if snap.amd.available or (snap.amd.error and "not installed" not in snap.amd.error):  # as `detect` says it
        s.lines.append(f"amdsmi: {'available' if snap.amd.available else snap.amd.error}.")
    for fw in snap.frameworks:
        if fw.installed:
            built = (
                "CPU-only build"
                if fw.cpu_only_build
                else f"built for CUDA {fw.built_cuda}"
                if fw.built_cuda
                else f"built for ROCm {fw.built_rocm}"
                if fw.built_rocm
                else "build unknown"
            )
            s.lines.append(f"{fw.name} {fw.version}: {built}.")
    # amdsmi reads the GFX clock, NVML the SM clock: each in its vendor's word
    vendors = {g.vendor for g in snap.gpus}
    clock = "GFX clock / max" if vendors == {"AMD"} else "Clock / max" if "AMD" in vendors else "SM clock / max"
    rows = [["GPU", "VRAM", "Temp", "Power / limit", clock, "PCIe", "UUID" if not redact else "State"]]
    for g in snap.gpus:
        rows.append(
            [
                f"{g.index}: {g.name or 'unknown'}",
                _fmt(g.memory_total_bytes / 1024**3 if g.memory_total_bytes else None, " GiB"),
                _fmt(g.temperature_c, " °C"),
                f"{_fmt(g.power_draw_w, ' W', 0)} / {_fmt(g.power_limit_w, ' W', 0)}",
                f"{_fmt(g.clocks.sm_mhz)} / {_fmt(g.clocks.sm_max_mhz, ' MHz')}",
                f"Gen{_fmt(g.pcie.generation)} x{_fmt(g.pcie.width)} (max Gen{_fmt(g.pcie.max_generation)} x{_fmt(g.pcie.max_width)})",
                g.state if redact else (g.uuid or "n/a"),
            ]
        )
    if len(rows) == 1:
        s.lines.append("No GPU found.")
    else:
        s.table = rows
    return s


def _health_section(health: Any) -> Section:
    s = Section("Health")
    worst = health.worst.value
    if worst in ("ok", "info", "unknown"):
        s.lines.append(
            "All checks passed: no warning and no critical finding."
            if health.counts.get("ok")
            else "No problems found (no check reported a warning or a critical finding)."
        )
    c = health.counts
    s.lines.append(
        f"{c.get('critical', 0)} critical, {plural(c.get('warning', 0), 'warning')}, {c.get('info', 0)} informational, "
        f"{c.get('unknown', 0)} not checkable, {c.get('ok', 0)} passed."
    )
    rows = [["Severity", "Device", "Finding", "Measured", "Threshold", "What to do"]]
    for f in health.findings:
        rows.append(
            [
                f.severity.value.upper(),
                f.device or "",
                f.title,
                "" if f.value is None else with_unit(f"{f.value}", f.value, f.unit),
                "" if f.threshold is None else with_unit(f"{f.threshold}", f.threshold, f.unit),
                f.remedy or "",
            ]
        )
    s.table = rows
    return s


def _bench_section(bench: Any, notes: list[str]) -> Section:
    """``notes``: what of a loaded result is not this machine's (app.machine), said in the report
    too: it printed "No training step was measured" over an empty table for another machine's run."""
    s = Section("Benchmark")
    s.lines += [n[:1].upper() + n[1:] + "." for n in notes]
    if not bench.devices:
        return s
    s.lines.append(
        f"{'Quick' if bench.quick else 'Full'} run with torch {bench.torch_version}, {bench.duration_s:.1f} s"
        + (" (cancelled: partial)" if bench.cancelled else "")
        + ". "
        + bench.method[:1].upper()
        + bench.method[1:]
        + "."
    )
    rows = [["Device", "Figure", "Measured", "% of spec"]]
    chart: dict[str, list[tuple[int, float]]] = {}
    for d in bench.devices:
        ratio = d.spec_ratio or {}
        for p, v in d.matmul_tflops.items():
            if v is not None:
                rows.append([d.device, f"matmul {p} (TFLOP/s)", three_digits(v), _pct(ratio.get(f"matmul_{p}"))])
        rows.append(
            [d.device, "memory bandwidth (GB/s)", _fmt(d.memory_bandwidth_gbs), _pct(ratio.get("memory_bandwidth"))]
        )
        if d.kind != "cpu":
            rows.append([d.device, "host to device, pinned (GB/s)", _fmt(d.host_to_device_gbs, "", 2), ""])
        rows.append([d.device, "launch overhead (us)", _fmt(d.launch_overhead_us, "", 2), ""])
        # the steps a CPU estimate is fitted on, as figures in every form (the PDF also draws them)
        for st in d.train_steps:
            chart.setdefault(f"{d.device} {st.model}", []).append((st.batch_size, st.samples_per_s))
            rows.append(
                [d.device, f"training step {st.model}, batch {st.batch_size} (samples/s)", _fmt(st.samples_per_s), ""]
            )
    s.table = rows
    if not chart:  # a chart with nothing to show is left out; say why instead
        why = "; ".join(f"{d.device}: {v}" for d in bench.devices for k, v in d.skipped.items() if "train" in k.lower())
        s.lines.append("No training step was measured in this run" + (f" ({why})." if why else "."))
    skipped = [f"{d.device}: {k} ({v})" for d in bench.devices for k, v in d.skipped.items()]
    if skipped:
        s.lines.append("Not measured: " + "; ".join(skipped) + ".")
    s.chart = {"kind": "batch", "title": "Training samples/s by batch size, per device", "series": chart}
    return s


def _pct(v: float | None) -> str:
    return "" if v is None else f"{100 * v:.0f} %"


def _ckpt(c: bool | str | None) -> str:
    """The assumed checkpointing as the CLI spells it (None: the estimate's own choice)."""
    if c is None:
        return "auto"
    return "full" if c is True else "none" if c is False else str(c)


def _workload_section(result: Any, money: MoneyFormat, redact: bool) -> Section:
    w, a = result.workload, result.assumptions
    s = Section("Workload and assumptions")
    flops = f"{three_digits(w.forward_flops_per_sample / 1e9)} GFLOP per sample forward"
    # once: own figures' and a model file's description already end with it (QA 17f)
    flops = "" if flops in w.description else f", {flops}"
    text = (
        f"{sentence_start(w.name)}: {w.description}. {millions(w.params)} parameters "
        f"({millions(w.trainable_params, 2)} trained){flops}. Figures: {w.source}."
    )
    s.lines.append(scrub_paths(text) if redact else text)
    dataset = a.dataset_size or w.default_dataset_size
    epochs = a.epochs or w.default_epochs
    s.lines.append(
        f"Precision {a.precision}, optimizer {a.optimizer}, batch {a.batch_size or 'auto'}, {plural(dataset, 'sample')} x {plural(epochs, 'epoch')}, "
        f"deadline {fmt_hours(a.deadline_hours)}, budget {money(a.budget_usd) if a.budget_usd else 'none'}, "
        f"electricity {money.per_kwh(a.electricity_usd_per_kwh)} (the GPUs' power, TDP x {a.utilisation:g}, not the host's), "
        f"grid {a.grid_kg_co2_per_kwh} kg CO2/kWh, "
        f"checkpointing {_ckpt(a.checkpointing)}, {a.loss} loss, sharding {a.sharding or 'auto'}, offload {a.offload}, "
        + (
            f"counts {', '.join(str(c) for c in a.counts)} GPU{'s' if max(a.counts) > 1 else ''}; "
            if a.counts
            else f"up to {a.max_gpus} GPU{'s' if a.max_gpus > 1 else ''} in a box; "
        )
        + (
            f"several-GPU links as measured by `gpuselect fleet`: {a.interconnect.figures()}; "
            if a.interconnect is not None
            else ""
        )
        + (
            # the measurement replaces the network where it measured across nodes (parallel.link_bandwidth)
            f"clusters over nodes of {a.gpus_per_node} joined as measured."
            if a.interconnect is not None and a.interconnect.across_nodes
            else f"clusters over nodes of {a.gpus_per_node} joined by {a.network_gbs:g} GB/s per node."
            if a.network_gbs is not None
            else f"clusters over nodes of {a.gpus_per_node} joined by each card's reference node network."
        )
    )
    s.lines.append(
        "Prices: launch prices from vendors and Epoch AI; cloud prices are the cheapest on-demand offers in SkyPilot's "
        f"public catalog, late-2025 snapshot (dated 2025-11 in the catalog); {CLOUD_COST_NOTE}; {BUY_COST_NOTE}."
        + (
            ""
            if money.is_usd
            else f" Costs are shown in {money.symbol} at {money.rate:g} per US dollar (your settings)."
        )
    )
    return s


def _option_row(
    label: str,
    fits: bool,
    batch: Any,
    hours: float | None,
    buy: str,
    cloud: str,
    kwh: float | None,
    band: float,
    precision: object = None,
) -> list[str]:
    return [
        label,
        "yes" if fits else "no",
        "" if batch is None else str(batch),
        "" if precision is None else str(precision),
        fmt_hours(hours),
        buy,
        cloud,
        _fmt(kwh),
        f"+/- {100 * band:.0f} %",
    ]


def shown_options(result: Any, top: int) -> tuple[list[Any], list[Any]]:
    """The options the estimate table shows, fastest first: (one GPU, several GPUs); the
    recommended option, each stage's best (the chart's bars) and every option the advice names are
    always among them."""
    ok = sorted((r for r in result.rows if r.fits and r.total_time_h is not None), key=lambda r: r.total_time_h)
    singles = [r for r in ok if r.count == 1][:top]
    multis = [r for r in ok if r.count > 1][: max(3, top // 3)]
    rec = result.recommendation
    named = [
        rec.option or {},
        *(o for o in rec.per_stage.values() if o),
        *named_options(rec),  # every option the advice's words name, as the CLI marks them
    ]
    for opt in named:
        if opt.get("gpu_id") and opt.get("kind") not in ("have", "cpu"):
            chosen = next((r for r in ok if r.gpu_id == opt["gpu_id"] and r.count == opt.get("count")), None)
            if chosen is not None and chosen not in singles + multis:
                (singles if chosen.count == 1 else multis).append(chosen)
    singles.sort(key=lambda r: r.total_time_h)
    multis.sort(key=lambda r: r.total_time_h)
    return singles, multis


def _estimate_section(result: Any, top: int, money: MoneyFormat) -> Section:
    rec = result.recommendation
    s = Section("Estimates")
    choice, why = explain(rec, money)
    s.lines.append(f"{stage_heading(rec)}: {choice}. {why}")
    for loc in result.local:
        cpu = loc.device == "cpu" and loc.peak_memory_gb is not None and loc.vram_gb
        need = f"; {memory_need(loc, verdict=False)}" if cpu else ""  # local_time says whether it fits
        s.lines.append(f"Your machine, {loc.device} ({loc.name}): {local_time(loc, '+/- ')}{need}.")
    ok = sorted((r for r in result.rows if r.fits and r.total_time_h is not None), key=lambda r: r.total_time_h)
    singles, multis = shown_options(result, top)
    s.lines.append(_selection_note(ok, singles, multis, top))
    opt = rec.option or {}
    sym = money.symbol
    # the precision each row trains in, as the CLI's prec column: with --precision fp8 the A100s'
    # rows are bf16, which the report's "Precision fp8" alone hid
    rows = [
        ["Option", "Fits", "Batch", "Precision", "Time", f"Buy ({sym})", f"Cloud ({sym})", "Energy (kWh)", "Error band"]
    ]
    left_out = {x.split(" ", 1)[0] for x in rec.excluded}
    for loc in result.local:  # this machine first: the row every other option is compared with
        note = " - left out: critical health finding" if loc.device in left_out else ""
        rows.append(
            _option_row(
                f"your {loc.device} ({loc.name}){note}",
                loc.fits,
                None,
                loc.total_time_h,
                "owned",
                "",
                None,
                loc.error_band,
                loc.precision_used,
            )
        )
    if rec.own:
        o = rec.own
        n, have = int(o["count"]), int(o.get("owned") or o["count"])
        # --max-gpus/--count may leave some out: "all healthy cards together" said of 2 of 4
        label = option_name(o) + (
            f" ({n} of your {have} healthy cards)"
            if n < have
            else " (all healthy cards together)"
            if n > 1
            else " (healthy)"
        )
        rows.append(
            _option_row(
                label + (" (recommended)" if rec.action == "have" else ""),
                True,
                None,
                o["total_time_h"],
                f"owned ({money(o['cost_usd'])} power)",
                "",
                None,
                float(o["error_band"]),
                o.get("precision_used"),
            )
        )
    also = {(o.get("gpu_id"), o.get("count")) for o in named_options(rec)}
    stage_of = {(o.get("gpu_id"), o.get("count")): k for k, o in rec.per_stage.items() if o and o.get("gpu_id")}
    marks: dict[str, str] = {}  # the Buy and Cloud columns' marks used -> what they mean
    owned_most = 0  # the most of the user's own cards a listed row's buy cost leaves out
    slower: set[str] = set()  # the precisions that train marked rows faster
    for r in singles + multis:
        mark = (
            " (recommended)"
            if opt.get("gpu_id") == r.gpu_id and opt.get("count") == r.count and rec.action in ("buy", "rent", "miss")
            else (" (named in the advice)" if (r.gpu_id, r.count) in also else "")
        )
        if not mark and (r.gpu_id, r.count) in stage_of:  # why a slower row is here: the stage chart's bar
            mark = f" (best of stage {stage_of[(r.gpu_id, r.count)]})"
        if not r.meets_deadline:
            mark += " (misses deadline)"  # as the CLI's table says it
        if r.faster_precision is not None:
            mark += " †"  # the CLI's fp8† (bf16 trains this option faster) or bf16† (fp32 does)
            slower.add(str(r.faster_precision))
        # the CLI table's marks: "$28" for 1x B200 read as a one-GPU rental of an 8-GPU rate
        cloud = money(r.cloud_cost_usd)
        if r.cloud_unlinked:
            cloud, marks["no offer"] = "no offer", NO_OFFER_NOTE
        elif r.cloud_offer_gpus and r.cloud_cost_usd is not None:
            cloud, marks["‡"] = cloud + " ‡", PARTIAL_OFFER_NOTE
        buy = money(r.buy_cost_usd)
        if r.owned and r.buy_cost_usd is not None:  # the user's own cards are not in it (the CLI's §)
            owned_most = max(owned_most, r.owned)
            buy, marks["§"] = buy + " §", owned_note(owned_most)
        rows.append(
            _option_row(
                f"{r.count}x {r.name}{mark}",
                r.fits,
                r.batch_size,
                r.total_time_h,
                buy,
                cloud,
                r.energy_kwh,
                r.error_band,
                r.precision_used,
            )
        )
        if r.band_note:
            rows[-1][-1] += " (*)"
    from gpuselect.estimate.api import borrowed_band_paths

    paths = borrowed_band_paths(singles + multis)
    if paths:
        s.lines.append(f"(*) No measured step validates {', '.join(paths)}: {BORROWED_BAND_NOTE}.")
    offer = " (this report's JSON names each row's offer)"
    s.lines += [f"{m}: {why}{'' if m == '§' else offer}." for m, why in sorted(marks.items())]
    for faster in sorted(slower):
        s.lines.append(f"†: {slower_precision_note(faster)}; each row's note in this report's JSON says by how much.")
    s.table = rows
    per_stage = {k: _in_currency(v, money) for k, v in rec.per_stage.items() if v}
    points = []
    for r in ok:
        if r.buy_cost_usd is not None:
            points.append((r.total_time_h, money.value(r.buy_cost_usd), f"{r.count}x {r.name}", "buy"))
        if r.cloud_cost_usd is not None:
            points.append((r.total_time_h, money.value(r.cloud_cost_usd), f"{r.count}x {r.name}", "rent"))
    local = local_marks(result.local, left_out)
    s.chart = {
        "kind": "estimate",
        "per_stage": per_stage,
        "points": points,
        "deadline_h": result.assumptions.deadline_hours,
        "budget": money.value(result.assumptions.budget_usd) if result.assumptions.budget_usd else None,
        "local": local,
        "stage": rec.stage_or_none,  # None where nothing fits: no bar is the chosen one
        "currency": sym,
        "stage_names": {str(k): f"{k}  {v}" for k, v in STAGE_SHORT.items()},
    }
    return s


def _selection_note(ok: list[Any], singles: list[Any], multis: list[Any], top: int) -> str:
    """How the table chose its rows, and how many faster ones it leaves out: an option the advice
    names can be far down the list (a stage's best, the cheapest card that is enough)."""
    n1, n2 = min(top, sum(r.count == 1 for r in ok)), min(max(3, top // 3), sum(r.count > 1 for r in ok))
    groups = [f"the {n1} fastest single GPU{'s' if n1 != 1 else ''}"] if n1 else []
    # none of several GPUs (--max-gpus 1, --count 1): "the 0 fastest options of several GPUs" said nothing
    groups += [f"the {n2} fastest option{'s' if n2 != 1 else ''} of several GPUs"] if n2 else []
    text = (
        f"The table lists this machine, then of the {len(ok):,} options that fit {' and '.join(groups) or 'none'}, "
        "and every option the advice names or the stage chart shows, marked, each group fastest first."
    )
    left = 0
    for group, rows in ((singles, [r for r in ok if r.count == 1]), (multis, [r for r in ok if r.count > 1])):
        if group:
            slowest = max(r.total_time_h for r in group)
            left += sum(1 for r in rows if r not in group and r.total_time_h < slowest)
    if left:
        text += (
            f" {left:,} option{'s' if left != 1 else ''} faster than a marked one "
            f"{'are' if left != 1 else 'is'} left out to keep the table short; this report's JSON "
            "(`report.estimate.rows`) and `gpuselect estimate` list every option."
        )
    return text


MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "logits", "overhead")


def short_gpu_name(name: str) -> str:
    """A GPU's name without the vendor word ("NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3")."""
    return re.sub(r"^(NVIDIA|AMD)\s+", "", name.strip()) or name


def local_marks(local: Any, left_out: set[str] | frozenset[str] = frozenset()) -> list[tuple[float, str]]:
    """This machine's devices as chart marks, (hours, label after "your "): identical GPUs (same
    name, same estimate) share one mark ("8× H100 80GB HBM3 (each alone)"), so eight H100s draw one
    label, not eight stacked ones. The time is each device's own (one GPU training alone): the
    machine's GPUs together are an option of the estimate, with its own time. Devices without a
    time, that cannot hold the training state, or left out (critical finding) are skipped (a CPU
    that cannot hold a 70B model was drawn at "6,637 days")."""
    return [(hours, label) for hours, label, _ in local_mark_groups(local, left_out)]


def local_mark_groups(
    local: Any, left_out: set[str] | frozenset[str] = frozenset()
) -> list[tuple[float, str, list[Any]]]:
    """``local_marks`` with the devices each mark stands for (a face that says more of them)."""
    groups: dict[tuple[str, float], list[Any]] = {}
    for loc in local:
        if not loc.total_time_h or loc.device in left_out or not getattr(loc, "fits", True):
            continue
        key = ("cpu" if loc.device == "cpu" else loc.name, round(float(loc.total_time_h), 9))
        groups.setdefault(key, []).append(loc)
    marks = []
    for (_, hours), locs in groups.items():
        marks.append((hours, locs[0].device if len(locs) == 1 else _each_alone(locs), locs))
    return marks


def local_gpu_groups(local: Any) -> list[tuple[str, list[Any]]]:
    """This machine's GPUs for "needs X of your Y GB": identical cards (same name, same peak per GPU)
    once, as (label after "your ", e.g. "8× H100 80GB HBM3 (each alone)" or "gpu0 RTX 3090", the cards).
    "Each alone" as the time's mark says: "your 8× H100: needs 68.9 of your 80 GB" stood above the
    8-GPU row's "8x H100 SXM5 80GB: needs 69.1 of 79.65 GB" without saying which was which (QA 17f)."""
    groups: dict[tuple[str, float | None], list[Any]] = {}
    for loc in local:
        if loc.device != "cpu":
            groups.setdefault((loc.name, loc.peak_memory_gb), []).append(loc)
    out = []
    for (name, _), locs in groups.items():
        out.append((f"{locs[0].device} {short_gpu_name(name)}" if len(locs) == 1 else _each_alone(locs), locs))
    return out


def _each_alone(locs: Sequence[Any]) -> str:
    """Identical local GPUs' one label ("8× H100 80GB HBM3 (each alone)"): each card's own estimate,
    not the option of all of them together (the time's mark and the memory line say it alike)."""
    return f"{len(locs)}\u00d7 {short_gpu_name(locs[0].name)} (each alone)"


def _memory_section(result: Any, top: int) -> Section | None:
    """'Needs X of your Y GB' per GPU with its breakdown, as a table and a stacked bar each: this
    machine's GPUs first (identical cards once), then every option the estimate table shows, or,
    when no option fits, the cards that come closest (the peak is per GPU)."""
    sep = " \u00b7 "
    head = [
        "Option",
        "Needs (GB per GPU)",
        "VRAM (GB)",
        "Fits",
        *(p.capitalize() for p in MEMORY_PARTS),
        "Checkpointing",
    ]
    rows = [head]
    bars: list[dict[str, Any]] = []
    lines: list[str] = []

    def add(
        label: str,
        peak: float | None,
        vram: float | None,
        fits: bool,
        parts: dict[str, float],
        yours: bool,
        ckpt: str | None,
    ) -> None:
        if peak is None or not parts:
            return
        # the memory the fit was judged against, as the CLI prints it (79.65, not 80, for an H100
        # whose driver shows 79.65: "79.70 of 80, no" read as a contradiction)
        cap = vram_text(vram) if isinstance(vram, float) else _fmt(vram)
        need = need_text(peak, vram) if isinstance(vram, float) else _fmt(peak)  # 10.03 of 10, not 10.0
        of = f"{need} of {'your ' if yours else ''}{cap} GB"
        rows.append(
            [
                label,
                _fmt(peak, digits=2),
                cap,
                "yes" if fits else "no",
                *(_fmt(parts.get(p), digits=2) for p in MEMORY_PARTS),
                ckpt or "",
            ]
        )
        if yours:  # the question "will it fit my card?" in words; the table and bars carry every option
            lines.append(
                f"{label}: needs {of}"
                + ("" if fits else " (does not fit)")
                + " = "
                + " + ".join(f"{p} {parts.get(p, 0.0):,.1f}" for p in MEMORY_PARTS)
            )
        bars.append(
            {
                "label": label,
                "peak_gb": float(peak),
                "vram_gb": float(vram or 0.0),
                "fits": bool(fits),
                "parts_gb": {p: float(parts.get(p, 0.0)) for p in MEMORY_PARTS},
            }
        )

    for who, locs in local_gpu_groups(result.local):
        loc = locs[0]
        add(
            f"your {who}",
            loc.peak_memory_gb,
            loc.vram_gb,
            loc.fits,
            loc.memory_breakdown_gb,
            True,
            getattr(loc, "checkpointing", None),
        )
    singles, multis = shown_options(result, top)
    shown = singles + multis
    if not shown:  # nothing fits: the cards that come closest, so the reader sees how far off
        best: dict[str, Any] = {}
        for r in result.rows:
            if r.count == 1 and r.peak_memory_gb is not None and r.gpu_id not in best:
                best[r.gpu_id] = r
        shown = sorted(best.values(), key=lambda r: (r.peak_memory_gb or 0) - (r.vram_gb or 0))[:top]
    for r in shown:
        add(f"{r.count}x {r.name}", r.peak_memory_gb, r.vram_gb, r.fits, r.memory_breakdown_gb, False, r.checkpointing)
    if len(rows) == 1:
        return None
    s = Section(
        "Memory per GPU",
        [
            "What training needs on each GPU against its memory, in GB (what the caching allocator "
            "reserves, as nvidia-smi shows it), and what it is made of: " + sep.join(MEMORY_PARTS) + ".",
            *lines,
        ],
    )
    s.table = rows
    s.chart = {
        "kind": "memory",
        "parts": list(MEMORY_PARTS),
        "bars": bars,
        # said only where the bars are drawn (the PDF): Markdown has the table, no bars
        "caption": "The bars stack the parts to the peak; the black tick is the card's memory; a bar ending in "
        "a zigzag is shortened to fit (not to scale).",
    }
    return s


def _in_currency(v: dict[str, Any], money: MoneyFormat) -> dict[str, Any]:
    out = dict(v)
    for k in ("cost_usd", "buy_cost_usd", "cloud_cost_usd"):
        if out.get(k) is not None:
            out[k] = money.value(float(out[k]))
    return out


def summary_text(health: Any, n_gpus: int, result: Any, money: MoneyFormat) -> str:
    """Page 1's paragraph: the verdict, the machine's health, the recommended option."""
    c = health.counts
    worst = health.worst.value
    gpus = f"{n_gpus} GPU{'s' if n_gpus != 1 else ''}" if n_gpus else "no GPU"
    if worst == "critical":
        crit = [f.title for f in health.findings if f.severity.value == "critical"][:2]
        machine = f"This machine ({gpus}) has {plural(c.get('critical', 0), 'critical finding')}: {'; '.join(crit)}."
    elif worst == "warning":
        machine = f"This machine ({gpus}) has {plural(c.get('warning', 0), 'warning')} and no critical finding."
    elif not c.get("ok", 0):  # nothing checked passed (no GPU, no readings): not "passed its checks"
        unknown = c.get("unknown", 0)
        machine = f"This machine ({gpus}) has no warning and no critical finding" + (
            f"; {plural(unknown, 'check')} could not be made here." if unknown else "."
        )
    else:
        machine = f"This machine ({gpus}) passed its health checks: no warning and no critical finding."
    if result is None:
        return machine
    rec = result.recommendation
    choice, why = explain(rec, money)
    return f"{stage_heading(rec)} — for {result.workload.name}: {choice}. {machine} {why}"


def _estimate_json(result: Any, redact: bool) -> dict[str, Any]:
    """The estimate's JSON structure; redacted, the fields where a file's folders can appear keep
    only file names (as the report's text does), and a config's id no longer names its folder."""
    from gpuselect.output import estimate_payload

    doc = estimate_payload(result)
    if not redact:
        return doc

    def scrub(d: Any) -> Any:
        return {k: scrub_paths(v) if isinstance(v, str) else v for k, v in d.items()} if isinstance(d, dict) else d

    doc["workload"] = scrub(doc["workload"])
    if str(doc["workload"].get("id", "")).startswith("config:"):
        doc["workload"]["id"] = "config"
    doc["assumptions"]["interconnect"] = scrub(doc["assumptions"].get("interconnect"))
    for r in doc["rows"]:
        r["link_basis"] = scrub_paths(r["link_basis"]) if r.get("link_basis") else r.get("link_basis")
    return doc


def build_report(
    snapshot: Any,
    health: Any,
    *,
    bench: Any = None,
    bench_notes: list[str] | None = None,
    estimate: Any = None,
    redact: bool = False,
    catalog: Any = None,
    top: int = 12,
    money: MoneyFormat | None = None,
) -> Report:
    """A report without a workload is a hardware health report (machine, health, benchmark, method).
    Money in ``money``'s currency (the settings'); US dollars when None."""
    money = money or MoneyFormat()
    host = REDACTED if redact else snapshot.host
    snap = snapshot
    if redact:
        gpus = [dataclasses.replace(g, serial=None, uuid=None) for g in snapshot.gpus]
        snap = dataclasses.replace(snapshot, host=REDACTED, gpus=gpus)
    if estimate is not None:
        verdict = verdict_line(estimate.recommendation, money)
    else:
        verdict = f"Hardware health: {health.worst.value.upper()} ({plural(len(snapshot.gpus), 'GPU') if snapshot.gpus else 'no GPU'})"
    sections = [_machine_section(snap, redact), _health_section(health)]
    if bench is not None:
        sections.append(_bench_section(bench, bench_notes or []))
    if estimate is not None:
        sections += [_workload_section(estimate, money, redact), _estimate_section(estimate, top, money)]
        memory = _memory_section(estimate, top)
        if memory is not None:
            sections.append(memory)
    method = Section("Method and sources", [METHOD_TEXT])
    accuracy = None
    if estimate is not None:
        import json

        from gpuselect.estimate.api import BAND_FILE

        try:
            accuracy = json.loads(BAND_FILE.read_text())
            bands, cases = accuracy["regimes"], accuracy.get("cases", {})
            shown = ", ".join(
                f"{label} ±{100 * float(bands[k]):.0f} % ({cases.get(k, 0)} cases)"
                for k, label in REGIME_LABELS.items()
                if k in bands
            )
            method.lines.append(
                "Accuracy (docs/accuracy.md): each estimate's ± is the band of its regime, wide enough to cover "
                f"80 % of that regime's validation cases (measured training throughput, predicted without "
                f"fitting on its own source): {shown}."
            )
        except (OSError, ValueError, KeyError, TypeError):
            method.lines.append(
                "Accuracy: the error-band file is missing or corrupt; rerun benchmarks/estimator_validation.py --fit."
            )
    sources = []
    if catalog is not None:
        sources = [f"{v.get('title', k)} <{v.get('url', '')}>" for k, v in sorted(catalog.sources.items())]
        method.lines.append(
            "GPU figures come from the gpuselect catalog (docs/catalog.md); each field names its source. "
            "Launch prices and some datacenter tensor figures: Epoch AI, 'Machine Learning Hardware' (CC BY 4.0)."
        )
    sections.append(method)
    report = Report(
        title="gpuselect hardware report",
        generated_at=dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        app_version=__version__,
        host=host,
        os=f"{snapshot.os} ({platform.machine()})",
        verdict=verdict,
        redacted=redact,
        sections=sections,
        accuracy=accuracy,
        sources=sources,
        summary=summary_text(health, len(snapshot.gpus), estimate, money),
        estimate=_estimate_json(estimate, redact) if estimate is not None else None,
    )
    if redact and estimate is not None and str(estimate.workload.id).startswith("config:"):
        # A config's workload is named after its folder or file ("secretproject (from config.json)"):
        # a redacted report names neither, wherever the name went into a sentence or a table.
        name = str(estimate.workload.name)
        report = _replace_text(report, name, "a model from a config file")
    return report


def _replace_text(obj: Any, old: str, new: str) -> Any:
    """``obj`` (the report's dataclasses, lists, dicts and strings) with ``old`` replaced in every string."""
    if isinstance(obj, str):
        return obj.replace(old, new)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(
            obj, **{f.name: _replace_text(getattr(obj, f.name), old, new) for f in dataclasses.fields(obj) if f.init}
        )
    if isinstance(obj, list):
        return [_replace_text(x, old, new) for x in obj]
    if isinstance(obj, tuple):
        return tuple(_replace_text(x, old, new) for x in obj)
    if isinstance(obj, dict):
        return {k: _replace_text(v, old, new) for k, v in obj.items()}
    return obj
