"""Plain-text view of a health report, shared by the CLI and the GUI."""

from __future__ import annotations

from gpuselect.bench.text import measured
from gpuselect.health.model import Severity
from gpuselect.health.rules import HealthReport
from gpuselect.output import plural


def counts_line(counts: dict[str, int]) -> str:
    """The findings counted by severity, as the CLI and the desktop app both say them."""
    c = counts
    return (
        f"{c.get('critical', 0)} critical, {plural(c.get('warning', 0), 'warning')}, {c.get('info', 0)} info, "
        f"{c.get('unknown', 0)} not checked, {c.get('ok', 0)} passed"
    )


def _num(v: object) -> str:
    """A reading or threshold as `bench` writes figures: 79 °C, not 79.0 °C; 1.58, not 1.5800000001."""
    return measured(v) if isinstance(v, float) else str(v)


def with_unit(text: str, value: object, unit: str | None) -> str:
    """``text`` (the value as shown) with its unit, singular for one: "1 GPU", "2 GPUs"."""
    if not unit:
        return text
    if value == 1 and unit.endswith("s") and unit[:-1].isalpha():
        unit = unit[:-1]
    return f"{text} {unit}"


def format_health(report: HealthReport, *, verbose: bool = False) -> str:
    lines = []
    for f in report.findings:
        if f.severity is Severity.OK and not verbose:
            continue
        lines.append(f"[{f.severity.symbol} {f.severity.value.upper()}] {f.device or ''}: {f.title}")
        lines.append(f"    {f.detail}")
        if f.value is not None or f.threshold is not None:
            lines.append(
                f"    measured: {with_unit(_num(f.value), f.value, f.unit)}; threshold: {with_unit(_num(f.threshold), f.threshold, f.unit)}"
            )
        if f.remedy:
            lines.append(f"    what to do: {f.remedy}")
    c = report.counts
    ok = c.get("ok", 0)
    summary = counts_line(c)
    if report.worst.rank < Severity.WARNING.rank:
        summary = ("All checks passed: " if ok else "No problems found: ") + summary
    lines.append(summary + ("" if verbose or not ok else " (--verbose lists the passed checks)"))
    return "\n".join(lines)
