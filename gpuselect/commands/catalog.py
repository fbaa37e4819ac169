"""``gpuselect catalog``: browse the GPU catalog, or validate a catalog/overlay file."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gpuselect.commands import add_format_option, enum_type
from gpuselect.types import Family, values

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gpuselect.catalog import Catalog
    from gpuselect.catalog.schema import GpuEntry

HELP = "list the GPU catalog or show one GPU (every figure with its source), or validate a catalog or overlay file"


def configure(parser: argparse.ArgumentParser) -> None:
    add_format_option(parser, ("text", "json", "csv"))
    parser.add_argument("--family", choices=values(Family), type=enum_type(Family), help="only this family")
    parser.add_argument("--validate", metavar="FILE", help="check one catalog or overlay file and report every problem")
    parser.add_argument("--no-overlay", action="store_true", help="ignore the user overlay file")
    parser.add_argument(
        "gpu", nargs="?", metavar="GPU", help="show one GPU: every figure and its source (a catalog id or name)"
    )


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from gpuselect.catalog import load_catalog, user_overlay
    from gpuselect.catalog.loader import validate_file
    from gpuselect.output import json_document

    if args.validate and (args.gpu or args.family):
        from gpuselect.errors import UsageError

        # it checks a file and lists nothing: a GPU or family beside it was silently dropped
        raise UsageError(
            f"--validate checks one file and lists nothing: {'a GPU' if args.gpu else '--family'} cannot go with it"
        )
    if args.validate:
        if args.format == "csv":
            from gpuselect.errors import UsageError

            raise UsageError("--validate lists problems as text or JSON: give --format text or json, not csv")
        problems = validate_file(Path(args.validate))
        if args.format == "json":  # scripts read the problems, not a line of text on stdout
            doc = {"file": args.validate, "valid": not problems, "problems": problems}
            print(json_document(doc, kind="catalog_validation"))
        else:
            for p in problems:
                print(p, file=sys.stderr)
        if problems:
            print(
                f"gpuselect: error: {args.validate} has {len(problems)} problem{'' if len(problems) == 1 else 's'}",
                file=sys.stderr,
            )
            return 2
        if args.format != "json":
            print(f"{args.validate}: valid")
        return 0
    catalog = load_catalog(use_overlay=not args.no_overlay)
    for problem in catalog.problems:
        print(f"gpuselect: warning: {problem} (skipped)", file=sys.stderr)
    entries = catalog.by_family(args.family) if args.family else catalog.entries
    if args.gpu:
        return _show_one(catalog, args.gpu, args.format)
    if args.format == "json":
        print(
            json_document(
                {"count": len(entries), "overlay": user_overlay(), "entries": entries, "sources": catalog.sources},
                kind="catalog",
            )
        )
    elif args.format == "csv":
        print(_csv(entries), end="")
    else:

        def n(v: float | None, fmt: str = "{:.0f}") -> str:
            return "—" if v is None else fmt.format(v)

        print(
            f"{'id':32s} {'name':28s} {'family':11s} {'VRAM':>5s} {'GB/s':>6s} {'FP32':>6s} {'FP16':>7s} {'BF16':>7s} {'W':>5s} {'$/h':>6s}\n"
            f"{'':32s} {'':28s} {'':11s} {'GB':>5s} {'':>6s} {'TFLOPS':>6s} {'TFLOPS':>7s} {'TFLOPS':>7s} {'':>5s} {'cloud':>6s}"
        )
        for e in entries:
            print(
                f"{e.id:32s} {e.name[:28]:28s} {e.family:11s} {e.vram_gb:5.0f} {e.memory_bandwidth_gbs:6.0f} "
                f"{e.fp32_tflops:6.1f} {n(e.fp16_tflops, '{:.1f}'):>7s} {n(e.bf16_tflops, '{:.1f}'):>7s} {e.tdp_w:5.0f} "
                f"{n(e.cloud_usd_per_hour, '{:.2f}'):>6s}"
            )
        print(
            f"{len(entries)} GPU{'s' if len(entries) != 1 else ''}. TFLOPS are dense; FP16/BF16 are tensor rates with FP32 accumulate. "
            f"`--format json` shows every figure's source. Your overlay: {user_overlay() or 'none (no config folder)'}"
        )
    return 0


def _csv(entries: Sequence[GpuEntry]) -> str:
    """Entries as CSV, one per row: the list's, and one GPU's (which printed its text form)."""
    import csv
    import dataclasses
    import io

    fields = [f.name for f in dataclasses.fields(entries[0])] if entries else []
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields)
    writer.writeheader()
    for e in entries:
        row = dataclasses.asdict(e)
        row["aliases"] = "; ".join(e.aliases)
        row["sources"] = "; ".join(f"{k}={v}" for k, v in e.sources.items())
        writer.writerow(row)
    return buf.getvalue()


def _show_one(catalog: Catalog, query: str, fmt: str) -> int:
    """One GPU's every figure with its source: what `catalog --format json` holds for it."""
    import dataclasses

    from gpuselect.errors import UsageError
    from gpuselect.output import json_document

    found = catalog.lookup(query)
    if len(found) > 1:
        listed = ", ".join(f"{x.id} ({x.name})" for x in found[:12])
        raise UsageError(f"{len(found)} GPUs match {query!r}: {listed}{' ...' if len(found) > 12 else ''}; name one")
    if not found:
        near = catalog.near(query)
        hint = f"; did you mean {', '.join(near)}?" if near else "; `gpuselect catalog` lists them"
        raise UsageError(f"no GPU in the catalog matches {query!r}{hint}")
    (e,) = found
    if fmt == "json":
        print(json_document({"entry": e}, kind="catalog_entry"))
        return 0
    if fmt == "csv":
        print(_csv([e]), end="")
        return 0
    print(f"{e.name} ({e.id})")
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if f.name in ("id", "name", "sources") or v in (None, [], {}, "", ()):
            continue
        print(f"  {f.name:26s} {', '.join(v) if isinstance(v, (list, tuple)) else v}")
    print("Sources:")
    for key, src in e.sources.items():
        print(f"  {key}: {catalog.source_text(src)}")
    return 0
