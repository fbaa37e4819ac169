"""Reading a saved benchmark result (``gpuselect bench --format json``) for ``--bench FILE``.

The file is the user's: it is read with the bounded reader (regular file, size limit, UTF-8 or
UTF-16 with a byte-order mark) and every figure the estimator or the report uses is checked
against a range, so a hand-edited ``"fp32": -1`` or ``NaN`` is refused with one sentence
instead of turning into "about -0.0 h" or "~nan h".
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from typing import Any

from gpuselect.errors import DataError
from gpuselect.safe_io import finite_number, read_json

#: A full run on an 8-GPU machine is ~100 kB; 16 MiB leaves room and still bounds the read.
MAX_BYTES = 16 * 1024 * 1024

#: Open ranges (lo, hi]: above these a rate is a typo or a unit slip, and a rate at or below the
#: floor (1 MB/s, 1 MFLOP/s: a thousandth of any device the bench runs on) is a damaged record: a
#: "matmul_tflops": 1e-300 was taken and the CPU's time printed with 300 digits of years.
_DEVICE_RANGES: dict[str, tuple[float, float]] = {
    "memory_bandwidth_gbs": (1e-3, 100_000.0),
    "host_to_device_gbs": (1e-3, 10_000.0),
    "device_to_host_gbs": (1e-3, 10_000.0),
    "small_transfer_latency_us": (0.0, 1e7),
    "launch_overhead_us": (0.0, 1e7),
}
_TFLOPS_RANGE = (1e-6, 100_000.0)
_SPEC_RATIO_RANGE = (0.0, 100.0)
# a thousandth of a sample per second at least: 1e-300 passed "above 0" (and the step-time check's
# slack below, which grows as the rate falls) and printed a 400-digit CPU time
_STEP_RANGES: dict[str, tuple[float, float]] = {"samples_per_s": (1e-3, 1e9), "step_ms": (0.0, 1e9)}


#: The device kinds ``gpuselect bench`` measures (``bench.model.DeviceResult.kind``).
BENCH_KINDS = ("cpu", "cuda", "rocm", "mps", "xpu")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class _Checker:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, what: str) -> DataError:
        return DataError(f"the benchmark result {self.source}: {where} {what}")

    def number(self, where: str, value: Any, lo: float, hi: float, *, optional: bool = True) -> None:
        if value is None and optional:
            return
        if not finite_number(value):
            raise self.fail(where, f"must be a finite number, not {value!r}")
        if not lo < float(value) <= hi:
            raise self.fail(where, f"is {value!r}, outside the plausible range above {lo:g} up to {hi:g}")

    def whole(self, where: str, value: Any, lo: int, hi: int, *, optional: bool = True) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise self.fail(where, f"must be a whole number in {lo}..{hi}, not {value!r}")

    def table(self, where: str, value: Any, *, optional: bool = True) -> Mapping[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise self.fail(where, "must be a JSON object")
        return value


def validate_bench_doc(doc: Any, *, source: str) -> dict[str, Any]:
    """``doc`` if it is a benchmark result with plausible figures; otherwise a DataError."""
    if not isinstance(doc, dict) or doc.get("kind") != "bench" or not isinstance(doc.get("devices"), list):
        raise DataError(f"{source} is not a `gpuselect bench --format json` result")
    c = _Checker(source)
    if doc.get("schema_version", 1) != 1:
        raise c.fail("its schema_version", f"is {str(doc.get('schema_version'))[:20]}; this gpuselect reads 1")
    if not doc["devices"]:
        raise c.fail("its device list", "is empty: nothing was measured")
    if "report" in doc and not isinstance(doc["report"], dict):
        raise c.fail("its report entry", "must be a JSON object")
    meta = doc.get("report", {})
    for key in ("taken_at", "app_version"):
        text = meta.get(key)
        if text is not None and (not isinstance(text, str) or len(text) > 40 or _CONTROL.search(text)):
            raise c.fail(f"its report.{key}", "must be plain text of at most 40 characters")
    if meta.get("taken_at") is not None:
        try:
            when = dt.datetime.fromisoformat(meta["taken_at"])
        except ValueError:
            raise c.fail("its report.taken_at", f"is {meta['taken_at']!r}, not an ISO 8601 date and time") from None
        if when.tzinfo is None:
            raise c.fail(
                "its report.taken_at", f"is {meta['taken_at']!r}, without its time zone (the bench writes UTC)"
            )
    named: set[str] = set()
    for i, dev in enumerate(doc["devices"]):
        if not isinstance(dev, dict):
            raise c.fail(f"device #{i + 1}", "must be a JSON object")
        name = dev.get("device")
        if not isinstance(name, str) or not name:
            raise c.fail(f"device #{i + 1}", "has no device name")
        for key in ("device", "name", "kind"):
            text = dev.get(key)
            if text is not None and (not isinstance(text, str) or len(text) > 200 or _CONTROL.search(text)):
                # printed to terminals: an escape sequence there could clear or rewrite the screen
                raise c.fail(f"device #{i + 1} {key}", "must be plain text (no control characters, at most 200)")
        kind = dev.get("kind", str(name).split(":")[0])
        if kind not in BENCH_KINDS:
            raise c.fail(
                f"{name}",
                f"is of kind {str(kind)[:20]!r}, which gpuselect does not benchmark ({', '.join(BENCH_KINDS)})",
            )
        for prec, value in c.table(f"{name} matmul_tflops", dev.get("matmul_tflops")).items():
            c.number(f"{name} matmul_tflops.{prec}", value, *_TFLOPS_RANGE)
        for key, (lo, hi) in _DEVICE_RANGES.items():
            c.number(f"{name} {key}", dev.get(key), lo, hi)
        for key, value in c.table(f"{name} spec_ratio", dev.get("spec_ratio")).items():
            c.number(f"{name} spec_ratio.{key}", value, *_SPEC_RATIO_RANGE)
        c.whole(f"{name} memory_total_bytes", dev.get("memory_total_bytes"), 0, 1 << 50)
        c.whole(f"{name} logical_cores", dev.get("logical_cores"), 1, 1 << 20)
        c.number(f"{name} duration_s", dev.get("duration_s"), -1e-9, 1e7)
        steps = dev.get("train_steps") or []
        if not isinstance(steps, list):
            raise c.fail(f"{name} train_steps", "must be a list")
        for j, step in enumerate(steps):
            where = f"{name} train_steps #{j + 1}"
            step_table = c.table(where, step, optional=False)
            c.whole(f"{where} batch_size", step_table.get("batch_size"), 1, 10_000_000, optional=False)
            for key, (lo, hi) in _STEP_RANGES.items():
                c.number(f"{where} {key}", step_table.get(key), lo, hi, optional=False)
            # the two figures say the same thing (the bench writes both from one timing): a step
            # whose time and rate disagree was edited or corrupted, and the estimate reads the rate
            implied = step_table["batch_size"] / step_table["samples_per_s"] * 1e3 if step_table["samples_per_s"] else 0
            # 5 %, and what rounding the rate to two decimals allows at very low rates
            slack = 0.05 + min(0.5, 0.01 / step_table["samples_per_s"] if step_table["samples_per_s"] else 0.0)
            if implied and abs(step_table["step_ms"] / implied - 1) > slack:
                raise c.fail(
                    where,
                    f"says {step_table['step_ms']:g} ms a step but {step_table['samples_per_s']:g} samples/s at batch "
                    f"{step_table['batch_size']} ({implied:.4g} ms): the record was edited or is corrupt",
                )
        if name in named:
            raise c.fail(f"{name}", "appears twice in the device list: one result per device")
        named.add(name)
        for group in ("matmul_detail", "bandwidth_detail", "transfer_detail"):
            for key, timing in c.table(f"{name} {group}", dev.get(group)).items():
                t = c.table(f"{name} {group}.{key}", timing, optional=False)
                for part in ("value", "low", "high"):
                    c.number(f"{name} {group}.{key}.{part}", t.get(part), -1e-9, 1e12, optional=False)
                c.whole(f"{name} {group}.{key}.repeats", t.get("repeats"), 0, 10_000_000, optional=False)
    return doc


def load_bench_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A saved ``gpuselect bench --format json`` result, read safely and checked."""
    doc = read_json(path, what="benchmark result", max_bytes=MAX_BYTES)
    return validate_bench_doc(doc, source=str(path))


def quick_bench_doc() -> dict[str, Any]:
    """Run ``gpuselect bench --quick`` now (about 10 s) and return its result in the file form."""
    from gpuselect.bench.engine import run_to_completion
    from gpuselect.bench.model import BenchConfig
    from gpuselect.output import to_jsonable

    rep = run_to_completion(BenchConfig(quick=True))
    return {"kind": "bench", "report": to_jsonable(rep), "devices": to_jsonable(rep.devices)}
