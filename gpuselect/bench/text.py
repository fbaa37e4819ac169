"""Plain-text view of a benchmark report (CLI; the GUI shows the same figures as tables)."""

from __future__ import annotations

from gpuselect.bench.model import BenchReport


def _f(v: float | None, unit: str, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f} {unit}"


def measured(v: float) -> str:
    """A measured rate for people: three significant digits below 100 (a CPU's fp16 rate is
    0.00121, not "0.00"), whole numbers above. The GUI's tables use the same rule."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def format_bench(report: BenchReport) -> str:
    lines = [
        f"torch {report.torch_version}; {'quick' if report.quick else 'full'} run, {report.duration_s:.1f} s"
        + (" — CANCELLED, partial results" if report.cancelled else "")
    ]
    for d in report.devices:
        ratio = d.spec_ratio or {}

        def pct(key: str, ratio: dict[str, float] = ratio) -> str:
            return f" ({100 * ratio[key]:.0f} % of spec)" if key in ratio else ""

        lines.append(f"\n{d.device}: {d.name}")
        for p, v in d.matmul_tflops.items():
            if v is not None:
                lines.append(f"  matmul {p:5s} {measured(v)} TFLOP/s{pct('matmul_' + p)}")
        lines.append(
            f"  memory bandwidth {_f(d.memory_bandwidth_gbs, 'GB/s')}{pct('memory_bandwidth')} (copy, read+write)"
        )
        if d.kind != "cpu":
            lines.append(
                f"  host→device {_f(d.host_to_device_gbs, 'GB/s', 2)}, device→host {_f(d.device_to_host_gbs, 'GB/s', 2)} (pinned); "
                f"4 KiB transfer {_f(d.small_transfer_latency_us, 'µs')}"
            )
        lines.append(f"  launch overhead {_f(d.launch_overhead_us, 'µs', 2)}")
        for s in d.train_steps:
            lines.append(f"  train {s.model:12s} batch {s.batch_size:4d}: {s.samples_per_s:>10,.0f} samples/s")
        for what, why in d.skipped.items():
            lines.append(f"  not measured — {what}: {why}")
        for b in d.backoffs:
            lines.append(f"  back-off: {b}")
        if d.telemetry_before and d.telemetry_after:
            tb, ta = d.telemetry_before, d.telemetry_after
            lines.append(
                f"  telemetry before→after: {tb.get('temperature_c')}→{ta.get('temperature_c')} °C, "
                f"SM {tb.get('sm_clock_mhz')}→{ta.get('sm_clock_mhz')} MHz, "
                f"throttle {tb.get('clock_event_reasons')}→{ta.get('clock_event_reasons')}"
            )
    return "\n".join(lines)
