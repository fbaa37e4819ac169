"""Load and validate the GPU catalog: built-in TOML files plus the user's overlay.

Every problem names file, entry and field. A broken built-in file is skipped (its problems are
reported, the other files still load); a broken overlay is reported and ignored; the overlay is
never written by the app.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuselect import notices
from gpuselect.catalog.schema import ARCHITECTURES, FAMILIES, FORM_FACTORS, GpuEntry
from gpuselect.errors import DataError
from gpuselect.safe_io import read_toml
from gpuselect.types import Family, FormFactor

#: A catalog file holds a few dozen cards (a few tens of kB); the overlay is the user's.
MAX_FILE_BYTES = 2 * 1024 * 1024

OVERLAY_NAME = "catalog_overlay.toml"
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")

#: (min, max) of each numeric field: beyond these a figure is a typo or a wrong unit.
RANGES: dict[str, tuple[float, float]] = {
    "vram_gb": (0.5, 1024),
    "visible_vram_gb": (0.5, 1024),
    "dies": (1, 8),
    "memory_bus_bits": (32, 16384),
    "memory_data_rate_gbps": (0.5, 40),
    "memory_bandwidth_gbs": (10, 20_000),
    "shader_cores": (64, 50_000),
    "sm_count": (1, 1_000),
    "tensor_cores": (0, 5_000),
    "boost_clock_mhz": (300, 4_000),
    "l2_cache_mb": (0.1, 1_024),
    "fp32_tflops": (0.05, 500),
    "tf32_tflops": (1, 5_000),
    "fp16_tflops": (1, 10_000),
    "bf16_tflops": (1, 10_000),
    "fp8_tflops": (1, 20_000),
    "tdp_w": (5, 3_000),
    "pcie_gen": (1, 7),
    "gpu_link_gbs": (1, 10_000),
    "launch_price_usd": (10, 200_000),
    "street_price_usd": (10, 200_000),
    "cloud_usd_per_hour": (0.01, 500),
    "cloud_node_usd_per_hour": (0.01, 500),
    "cloud_gpus": (1, 64),
    "cloud_node_gpus": (1, 64),
    "fp32_flops_per_core_clock": (1, 8),
}
#: Cross-check tolerances: spec sheets round and boost clocks vary by board.
FP32_TOLERANCE = 0.12
BANDWIDTH_TOLERANCE = 0.08

_FIELDS = {f.name: f for f in dataclasses.fields(GpuEntry)}
_REQUIRED = [
    f.name
    for f in dataclasses.fields(GpuEntry)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
]
_INT_FIELDS = {
    "memory_bus_bits",
    "shader_cores",
    "sm_count",
    "tensor_cores",
    "pcie_gen",
    "fp32_flops_per_core_clock",
    "dies",
    "cloud_gpus",
    "cloud_node_gpus",
}
_FLOAT_FIELDS = set(RANGES) - _INT_FIELDS
_STR_FIELDS = {
    "id",
    "name",
    "vendor",
    "family",
    "architecture",
    "release_date",
    "form_factor",
    "memory_type",
    "compute_capability",
    "interconnect",
    "launch_price_date",
    "street_price_date",
    "cloud_provider",
    "cloud_node_provider",
    "cloud_price_date",
    "notes",
    "fp32_check",
}


@dataclass
class Problem:
    file: str
    entry: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.entry:
            where += f", entry {self.entry!r}"
        if self.field:
            where += f", field {self.field!r}"
        return f"{where}: {self.message}"


@dataclass
class LoadResult:
    entries: list[GpuEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    sources: dict[str, dict[str, str]] = field(default_factory=dict)
    overlay_problems: list[Problem] = field(default_factory=list)  # those of ``problems`` in the user's overlay


def _check_value(name: str, value: Any) -> str | None:
    if name in _INT_FIELDS:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be a whole number, not {value!r}"
    elif name in _FLOAT_FIELDS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a number, not {value!r}"
        if not math.isfinite(float(value)):
            return "must be a finite number"
    elif name in _STR_FIELDS:
        if not isinstance(value, str) or not value.strip():
            return f"must be non-empty text, not {value!r}"
    elif name == "aliases":
        if not isinstance(value, list) or not all(isinstance(a, str) and a.strip() for a in value):
            return "must be a list of names"
    elif name == "sources" and (
        not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    ):
        return "must be a table of field or group -> source"
    if name in RANGES and isinstance(value, (int, float)):
        lo, hi = RANGES[name]
        if not lo <= float(value) <= hi:
            return f"{value} is outside the plausible range {lo:g}..{hi:g}"
    return None


def validate_entry(raw: dict[str, Any], file: str, *, partial: bool = False) -> tuple[dict[str, Any], list[Problem]]:
    """Check one raw table; returns the cleaned values and the problems found."""
    entry_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    problems: list[Problem] = []

    def bad(fieldname: str | None, msg: str) -> None:
        problems.append(Problem(file, entry_id, fieldname, msg))

    clean: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _FIELDS:
            bad(key, "unknown field (see docs/catalog.md for the field list)")
            continue
        msg = _check_value(key, value)
        if msg:
            bad(key, msg)
            continue
        clean[key] = float(value) if key in _FLOAT_FIELDS else value
    if not partial:
        for key in _REQUIRED:
            if key not in raw:
                bad(key, "is required")
    if "id" in clean and not _ID_RE.match(clean["id"]):
        bad("id", "must be lower-case letters, digits, '.' and '-'")
    if "family" in clean and clean["family"] not in FAMILIES:
        bad("family", f"must be one of {', '.join(FAMILIES)}")
    if "architecture" in clean:
        vendor = clean.get("vendor")
        known = ARCHITECTURES.get(vendor, ()) if vendor else tuple(a for v in ARCHITECTURES.values() for a in v)
        canon = {a.lower(): a for a in known}.get(clean["architecture"].strip().lower())
        if canon is None:
            # the estimator's efficiencies and precisions are per architecture: an unknown name
            # would silently run the card at another architecture's rates, or in fp32
            del clean["architecture"]
            bad("architecture", f"is not one the estimator knows; one of: {', '.join(known) or 'none for this vendor'}")
        else:
            clean["architecture"] = canon
    if "form_factor" in clean and clean["form_factor"] not in FORM_FACTORS:
        bad("form_factor", f"must be one of {', '.join(FORM_FACTORS)}")
    for key in ("release_date", "launch_price_date", "street_price_date", "cloud_price_date"):
        if key in clean and not _DATE_RE.match(clean[key]):
            bad(key, "must be a date as YYYY-MM or YYYY-MM-DD")
    if clean.get("visible_vram_gb", 0) > clean.get("vram_gb", math.inf):
        bad("visible_vram_gb", "is the total the driver reports, at most vram_gb")
    if ("cloud_node_usd_per_hour" in clean) != ("cloud_node_provider" in clean):
        bad("cloud_node_provider", "a node's rate and its provider go together")
    if problems or partial:
        return clean, problems
    # Cross-checks: the figures of one card must agree with each other.
    cores, clock = clean["shader_cores"], clean["boost_clock_mhz"]
    per = clean.get("fp32_flops_per_core_clock", 2)
    expected = cores * clock * per / 1e6
    if "fp32_check" not in clean and abs(clean["fp32_tflops"] / expected - 1) > FP32_TOLERANCE:
        bad(
            "fp32_tflops",
            f"{clean['fp32_tflops']:g} TFLOPS disagrees with shader_cores x boost_clock x {per} = {expected:.2f} "
            f"(more than {FP32_TOLERANCE:.0%} apart; set fp32_check with a reason if the vendor figure is right)",
        )
    rate = clean.get("memory_data_rate_gbps")
    if rate is not None:
        expected_bw = clean["memory_bus_bits"] * rate / 8
        if abs(clean["memory_bandwidth_gbs"] / expected_bw - 1) > BANDWIDTH_TOLERANCE:
            bad(
                "memory_bandwidth_gbs",
                f"{clean['memory_bandwidth_gbs']:g} GB/s disagrees with memory_bus_bits x memory_data_rate_gbps / 8 = {expected_bw:.0f}",
            )
    fp16, fp32 = clean.get("fp16_tflops"), clean["fp32_tflops"]
    if fp16 is not None and fp16 > 40 * fp32:
        bad("fp16_tflops", f"{fp16:g} is over 40x the FP32 rate: is it a sparse (2:4) figure? Store dense")
    for low, high in (("fp16_tflops", "fp8_tflops"), ("tf32_tflops", "fp16_tflops")):
        if clean.get(low) is not None and clean.get(high) is not None and clean[high] < clean[low] * 0.99:
            bad(high, f"is below {low}: tensor rates grow as precision shrinks")
    return clean, problems


def _to_entry(clean: dict[str, Any]) -> GpuEntry:
    values = dict(clean)
    values["aliases"] = tuple(values.get("aliases", ()))
    values["family"] = Family(values["family"])  # validated: the strings become the typed values here
    values["form_factor"] = FormFactor(values["form_factor"])
    return GpuEntry(**values)


def parse_file(
    path: Path, *, partial: bool = False, what: str = "catalog file"
) -> tuple[list[dict[str, Any]], list[Problem], dict[str, dict[str, str]]]:
    """Raw validated tables of one TOML file (``partial``: overlay tables may override fields
    only; ``what`` names the file in messages)."""
    name = path.name
    try:
        data = read_toml(path, what=what, max_bytes=MAX_FILE_BYTES)
    except DataError as exc:
        return [], [Problem(name, None, None, str(exc))], {}
    sources = data.pop("sources", {}) if isinstance(data.get("sources"), dict) else {}
    gpus = data.get("gpu", [])
    problems: list[Problem] = []
    if not isinstance(gpus, list):
        return [], [Problem(name, None, "gpu", "must be an array of [[gpu]] tables")], sources
    for key in data:
        if key not in ("gpu", "sources"):
            problems.append(Problem(name, None, key, "unknown top-level key (expected [[gpu]] tables)"))
    tables: list[dict[str, Any]] = []
    first: dict[str, int] = {}  # id -> its table's number
    for i, raw in enumerate(gpus):
        if not isinstance(raw, dict):
            problems.append(Problem(name, f"#{i + 1}", None, "is not a table"))
            continue
        is_partial = partial and raw.get("id") is not None and set(raw) - {"id"} and "name" not in raw
        clean, entry_problems = validate_entry(raw, name, partial=bool(is_partial))
        if not raw.get("id"):
            entry_problems.append(Problem(name, f"#{i + 1}", "id", "is required"))
        if entry_problems:
            problems.extend(entry_problems)
            continue
        if clean["id"] in first:
            # an overlay's second table of one id silently replaced the first ("valid" said --validate)
            problems.append(
                Problem(
                    name, clean["id"], "id", f"is given twice (tables #{first[clean['id']]} and #{i + 1}); keep one"
                )
            )
            continue
        first[clean["id"]] = i + 1
        tables.append(clean)
    return tables, problems, sources


def load_builtin(folder: Path) -> LoadResult:
    result = LoadResult()
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.toml")):
        if path.name == "sources.toml":
            data = read_toml(path, what="catalog file", max_bytes=MAX_FILE_BYTES)
            result.sources.update(data.get("sources", {}))
            continue
        tables, problems, sources = parse_file(path)
        result.sources.update(sources)
        result.problems.extend(problems)
        for t in tables:
            if t["id"] in seen:
                result.problems.append(Problem(path.name, t["id"], "id", f"duplicate id (also in {seen[t['id']]})"))
                continue
            seen[t["id"]] = path.name
            result.entries.append(_to_entry(t))
    for e in result.entries:
        for group, key in e.sources.items():
            known = key.split(":", 1)[0].strip()
            if not key.startswith("derived") and known not in result.sources:
                result.problems.append(Problem("sources", e.id, f"sources.{group}", f"cites unknown source {known!r}"))
    return result


def apply_overlay(base: LoadResult, path: Path) -> None:
    """Merge the user's overlay: tables with a known id override fields; new ids add entries.

    Whatever is wrong with it is added to ``base.problems`` and, once per process, told to the
    user through :func:`gpuselect.notices.warn`: a dropped overlay must not go unnoticed.
    """
    if not os.path.lexists(path):
        return
    before = len(base.problems)
    _merge_overlay(base, path)
    overlay_problems = base.problems[before:]
    base.overlay_problems = list(overlay_problems)
    if len(overlay_problems) == 1 and overlay_problems[0].entry is None and overlay_problems[0].field is None:
        # The whole file is unusable (unreadable, not TOML, too large, ...): the message names it.
        notices.warn(f"{overlay_problems[0].message}; using the built-in catalog without your overlay")
    elif overlay_problems:
        n = len(overlay_problems)
        notices.warn(
            f"your catalog overlay {path} has {n} problem{'s' if n != 1 else ''}, and the entries concerned are "
            f"ignored (first: {overlay_problems[0]}); `gpuselect catalog --validate {path}` lists them all"
        )


#: Fields that describe one thing together: an overlay that sets any of them replaces them all (a
#: new cloud rate kept the built-in offer's "one GPU" size, and 4x L40S lost their rental price).
_TOGETHER = {
    "cloud": ("cloud_usd_per_hour", "cloud_provider", "cloud_price_date", "cloud_gpus"),
    "cloud node": ("cloud_node_usd_per_hour", "cloud_node_provider", "cloud_node_gpus"),
}


def _merge_overlay(base: LoadResult, path: Path, *, what: str = "catalog overlay") -> None:
    tables, problems, sources = parse_file(path, partial=True, what=what)
    base.problems.extend(problems)
    base.sources.update(sources)
    by_id = {e.id: i for i, e in enumerate(base.entries)}
    for t in tables:
        if t["id"] in by_id:
            i = by_id[t["id"]]
            current = {k: v for k, v in dataclasses.asdict(base.entries[i]).items() if v is not None}
            current["aliases"] = list(current.get("aliases", ()))
            for keys in _TOGETHER.values():
                if any(k in t for k in keys):  # a new offer: the built-in one's size or date is not its own
                    for k in keys:
                        current.pop(k, None)
            merged = {**current, **t}
            merged_sources = {**base.entries[i].sources, **t.get("sources", {})}
            for key in t:
                if key not in ("id", "sources"):
                    merged_sources[key] = t.get("sources", {}).get(key, f"user overlay ({path.name})")
            merged["sources"] = merged_sources
            clean, errs = validate_entry(merged, path.name)
            if errs:
                base.problems.extend(errs)
                continue
            base.entries[i] = _to_entry(clean)
        elif "name" not in t:
            base.problems.append(
                Problem(path.name, t["id"], "id", "no built-in entry has this id; a new card needs all required fields")
            )
        else:
            clean, errs = validate_entry(t, path.name)
            if errs:
                base.problems.extend(errs)
                continue
            entry = _to_entry(clean)
            base.entries.append(
                dataclasses.replace(entry, sources=entry.sources or {"all": f"user overlay ({path.name})"})
            )
            by_id[entry.id] = len(base.entries) - 1


def validate_file(path: Path) -> list[Problem]:
    """Problems of one catalog or overlay file (``gpuselect catalog --validate``)."""
    if not path.exists():
        if str(path) == "-":
            raise DataError("- would be standard input, which gpuselect does not read; give a catalog file")
        raise DataError(f"{path} does not exist")
    entries, problems, _ = parse_file(path, partial=True)
    if not entries and not problems:  # an empty file is not a catalog that passed
        problems = [Problem(path.name, None, None, "holds no [[gpu]] entries")]
    if problems:
        return problems
    # Checked as loading merges it: a correction to a built-in card is checked with the card's other
    # figures ("visible_vram_gb = 90" on an 80 GB card said "valid" here, then was dropped on load).
    from gpuselect.paths import catalog_dir

    base = load_builtin(catalog_dir())
    before = len(base.problems)
    _merge_overlay(base, path, what="catalog file")
    return base.problems[before:]
