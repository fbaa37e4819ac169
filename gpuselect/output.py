"""Serialisation shared by every face: dataclasses -> JSON-safe values, one JSON document."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from pathlib import PurePath
from typing import Any

#: Bumped when a JSON document's keys change incompatibly. Every ``--format json`` output
#: carries it, so scripts can check what they read.
SCHEMA_VERSION = 1


def plural(n: int, word: str) -> str:
    """ "1 warning", "0 warnings": never "warning(s)" (every face's counts)."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def millions(n: int, digits: int = 1) -> str:
    """A parameter count as the faces write it: "8,030.3 M", but a small model's own count ("75,338"
    rather than "0.1 M"; a 20-weight model was "0.0 M parameters")."""
    return f"{n / 1e6:,.{digits}f} M" if n >= 1e6 else f"{n:,}"


def three_digits(v: float) -> str:
    """Three significant digits without scientific notation: 32,900 and 0.0123, not 3.29e+04."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    decimals = max(0, 2 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}" if decimals else f"{float(f'{v:.3g}'):,.0f}"


def to_jsonable(value: Any) -> Any:
    """Turn dataclasses, enums, paths, tuples and sets into JSON-safe values.

    Non-finite floats become ``None``: a NaN or infinity never reaches a JSON document. A field
    whose metadata names ``json_via`` is written as that attribute's value (a workload's public id
    in place of its internal key); ``"json": False`` leaves a field out.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.metadata.get("json_via", f.name)))
            for f in dataclasses.fields(value)
            if f.metadata.get("json", True)
        }
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(to_jsonable(v) for v in value)
    if isinstance(value, PurePath):
        return str(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def json_document(payload: dict[str, Any], *, kind: str) -> str:
    """One JSON document with ``schema_version`` and ``kind`` first; NaN is refused."""
    doc = {"schema_version": SCHEMA_VERSION, "kind": kind, **to_jsonable(payload)}
    return json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False)


ACTIVATION_BASIS = (
    "kept for the backward pass per sample in bf16 without checkpointing, as the memory model counts it "
    "(the operator trace's saved tensors, fused attention)"
)


def workload_json(w: Any) -> dict[str, Any]:
    """A workload as JSON with its activations as the memory model counts them (``ACTIVATION_BASIS``),
    the figure `workloads` lists: the dataclass's own field is an older 16-bit figure the traces
    scale from, and `estimate` showed it (30.6 GB per sample for Llama 8B, 1.4-2.5x too big)."""
    from gpuselect.estimate.memory import MemoryOptions, activation_bytes_per_sample

    entry: dict[str, Any] = to_jsonable(w)
    entry["activation_bytes_per_sample"] = activation_bytes_per_sample(w, MemoryOptions())
    entry["activation_basis"] = ACTIVATION_BASIS
    shape = getattr(w, "shape", None)
    if shape is not None and shape.experts:  # the text's "12.9 B of the 46.7 B active"
        entry["active_params_per_token"] = shape.active_params()
    return entry


def estimate_payload(result: Any) -> dict[str, Any]:
    """An estimate as ``estimate --format json`` writes it, in US dollars as the core returns them;
    the report's JSON embeds the same, so a script reads one structure in both."""
    doc: dict[str, Any] = round_money(
        to_jsonable(
            {
                "workload": workload_json(result.workload),
                "assumptions": result.assumptions,
                "rows": result.rows,
                "local": result.local,
                "recommendation": result.recommendation,
            }
        )
    )
    return doc


def _is_money(key: str) -> bool:
    return key.endswith("cost_usd") or key == "budget_usd"


def round_money(value: Any) -> Any:
    """Costs (``*cost_usd``, ``budget_usd``) of a JSON-safe value to the cent, or to three
    significant digits below a dollar (0.0039, not 0.0): a purchase plus a few micro-dollars of
    electricity read 1499.00009279792. The JSON face only; the core keeps its floats."""
    if isinstance(value, dict):
        return {k: _cents(v) if _is_money(k) and isinstance(v, float) else round_money(v) for k, v in value.items()}
    if isinstance(value, list):
        return [round_money(v) for v in value]
    return value


def _cents(v: float) -> float:
    return round(v, 2) if abs(v) >= 1 else float(f"{v:.3g}")
