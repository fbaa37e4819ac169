"""Health findings: each says how bad, what was measured, against what, and what to do."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(str, enum.Enum):  # noqa: UP042 - StrEnum changes str()/format() of members
    OK = "ok"
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"
    UNKNOWN = "unknown"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def symbol(self) -> str:
        """A shape that carries the severity without colour (text output, GUI, PDF)."""
        return _SYMBOL[self]


_RANK = {Severity.OK: 0, Severity.INFO: 1, Severity.UNKNOWN: 2, Severity.WARNING: 3, Severity.CRITICAL: 4}
_SYMBOL = {
    Severity.OK: "✓",
    Severity.INFO: "i",
    Severity.UNKNOWN: "?",
    Severity.WARNING: "!",
    Severity.CRITICAL: "✗",
}


@dataclass(frozen=True)
class Finding:
    id: str  # stable rule id, e.g. "gpu.temperature"
    severity: Severity
    device: str | None  # "gpu0 (NVIDIA H100 80GB HBM3)", "system", "cpu"
    title: str  # one line
    detail: str  # what was seen, in words
    remedy: str | None = None  # what to do about it
    value: float | int | str | None = None  # the measured value
    threshold: float | int | str | None = None  # what it was judged against
    unit: str | None = None
    source: str | None = None  # where the threshold comes from
