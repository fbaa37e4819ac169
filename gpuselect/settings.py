"""The user's domain settings (prices, defaults, redaction) in a JSON file under the platform
config folder. Read safely; a corrupt file is reported, left in place until the user saves, and
then kept beside the new one as ``settings.json.corrupt-<time>`` — nothing is silently lost."""

from __future__ import annotations

import dataclasses
import json
import os
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from gpuselect import notices
from gpuselect.errors import DataError
from gpuselect.fsutil import atomic_write_text
from gpuselect.paths import NoConfigFolderError
from gpuselect.safe_io import finite_number, read_json

FILE_NAME = "settings.json"


@dataclass(frozen=True)
class Settings:
    electricity_usd_per_kwh: float = 0.15
    grid_kg_co2_per_kwh: float = 0.45
    currency_symbol: str = "$"
    usd_to_currency: float = 1.0  # multiply US-dollar figures by this to show them in your currency
    default_deadline_hours: float = 72.0
    default_budget_usd: float | None = None
    redact_reports: bool = False


RANGES = {
    "electricity_usd_per_kwh": (0.0, 100.0),
    "grid_kg_co2_per_kwh": (0.0, 5.0),
    "usd_to_currency": (1e-6, 1e6),
    "default_deadline_hours": (1e-3, 1e6),
    "default_budget_usd": (1e-3, 1e10),  # the estimate's own range: a figure it refuses would fail every estimate
}


def settings_path() -> Path:
    from gpuselect.paths import config_dir

    return config_dir() / FILE_NAME


class Problem(NamedTuple):
    message: str
    minor: bool = False  # changes no value the app uses (an unknown key ignored): told last


def validate(values: dict[str, Any]) -> tuple[Settings, list[str]]:
    """Known, well-typed values are taken; each problem is named; the rest stay default."""
    s, problems = _validate(values)
    return s, [p.message for p in problems]


def _validate(values: dict[str, Any]) -> tuple[Settings, list[Problem]]:
    problems: list[Problem] = []
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    clean: dict[str, Any] = {}
    for key, value in values.items():
        if key not in fields:
            problems.append(Problem(f"unknown setting {key!r} ignored", minor=True))
            continue
        default = fields[key].default
        if key in RANGES:
            if value is None and default is None:
                clean[key] = None
                continue
            if key == "default_budget_usd" and value == 0 and not isinstance(value, bool):
                clean[key] = None  # 0 means no budget, as the GUI's box and --budget-usd 0 say it
                continue
            if not finite_number(value):
                problems.append(Problem(f"{key} must be a number, not {value!r}"))
                continue
            lo, hi = RANGES[key]
            if not lo <= float(value) <= hi:
                problems.append(Problem(f"{key} {value} is outside {lo:g}..{hi:g}"))
                continue
            clean[key] = float(value)
        elif key == "currency_symbol":
            if (
                not isinstance(value, str)
                or not 0 < len(value.strip()) <= 5
                or any(unicodedata.category(ch).startswith("C") for ch in value)
            ):  # printed before every cost: an escape sequence there would rewrite the terminal
                problems.append(Problem(f"currency_symbol must be 1 to 5 printable characters, not {value!r}"))
                continue
            clean[key] = value.strip()
        elif key == "redact_reports":
            if not isinstance(value, bool):
                problems.append(Problem(f"redact_reports must be true or false, not {value!r}"))
                continue
            clean[key] = value
    return Settings(**clean), problems


#: settings.json is a few hundred bytes; anything near this limit is not a settings file.
MAX_BYTES = 256 * 1024


def load(path: Path | None = None) -> tuple[Settings, list[str]]:
    """The settings and the problems found; any failure means defaults, never an exception.

    Each problem is also recorded with :func:`gpuselect.notices.warn` so every face shows it.
    """
    try:
        p = path or settings_path()
    except NoConfigFolderError as exc:
        notices.warn(exc.fallback())
        return Settings(), [exc.fallback()]
    settings, problems = _load(p)
    for problem in problems:
        notices.warn(problem.message, minor=problem.minor)
    return settings, [problem.message for problem in problems]


def _load(p: Path) -> tuple[Settings, list[Problem]]:
    if not os.path.lexists(p):
        return Settings(), []
    try:
        # a key given twice (hand-edited) was taken at its last value without a word
        data = read_json(p, what="settings file", max_bytes=MAX_BYTES, unique_keys=True)
    except DataError as exc:
        return Settings(), [Problem(f"{exc}; using the default settings, the file is kept")]
    if not isinstance(data, dict):
        return Settings(), [
            Problem(f"the settings file {p} should hold a JSON object; using the default settings, the file is kept")
        ]
    s, problems = _validate(data)
    return s, [Problem(f"{p}: {m.message}", m.minor) for m in problems]


def save(settings: Settings, path: Path | None = None) -> Path:
    p = path or settings_path()
    if os.path.lexists(p):
        try:
            read_json(p, what="settings file", max_bytes=MAX_BYTES, unique_keys=True)
        except DataError:
            p.rename(p.with_name(f"{p.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}"))  # keep what was there
    return atomic_write_text(p, json.dumps(dataclasses.asdict(settings), indent=2) + "\n", make_parents=True)
