"""``gpuselect report``: a hardware report (PDF, JSON or Markdown) a buyer or an admin can hand on."""

from __future__ import annotations

import argparse

HELP = "write a hardware report (PDF, JSON or Markdown): machine, health, benchmark, estimates and recommendation"


def configure(parser: argparse.ArgumentParser) -> None:
    from gpuselect.commands.estimate import add_estimate_options

    parser.add_argument("--output", "-o", required=True, metavar="FILE", help="where to write the report (written atomically)")
    parser.add_argument("--format", choices=("pdf", "json", "md"), default=None, help="default: from the file name, else pdf")
    parser.add_argument("--redact", action="store_true", help="leave out the host name, GPU serial numbers and UUIDs")
    parser.add_argument("--paper", choices=("a4", "letter"), default=None, help="default: from the locale (Letter in North America)")
    parser.add_argument("--no-bench", action="store_true", help="no benchmark section (the default unless --bench-quick or --bench FILE)")
    add_estimate_options(parser, workload_required=False)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from gpuselect.catalog import load_catalog
    from gpuselect.commands.estimate import _load_bench, compute
    from gpuselect.hardware.snapshot import detect
    from gpuselect.health.rules import evaluate
    from gpuselect.report.model import build_report
    from gpuselect.report.writers import write

    fmt = args.format or {".json": "json", ".md": "md"}.get(Path(args.output).suffix.lower(), "pdf")
    bench_doc = None if args.no_bench else _load_bench(args)
    bench_report = None
    if bench_doc is not None:
        bench_report = _bench_from_doc(bench_doc)
    snapshot = detect(probe=False)
    extra = []
    if bench_report is not None:
        from gpuselect.bench.findings import bench_findings

        extra = bench_findings(bench_report)
    health = evaluate(snapshot, extra)
    has_workload = any(getattr(args, k, None) for k in ("workload", "config", "params", "model"))
    result = compute(args, bench_doc) if has_workload else None
    report = build_report(snapshot, health, bench=bench_report, estimate=result, redact=args.redact, catalog=load_catalog())
    path = write(report, args.output, fmt, paper=args.paper)
    print(f"wrote {path} ({fmt})", file=sys.stderr)
    return 0


def _bench_from_doc(doc: dict) -> object:  # type: ignore[type-arg]
    """Rebuild a BenchReport from its JSON (a saved file or a fresh quick run)."""
    from gpuselect.bench.model import BenchReport, DeviceResult, Timing, TrainStep
    from gpuselect.errors import DataError

    try:
        devices = []
        for d in doc["devices"]:
            d = dict(d)
            d["train_steps"] = [TrainStep(**s) for s in d.get("train_steps", [])]
            for k in ("matmul_detail", "bandwidth_detail", "transfer_detail"):
                d[k] = {n: Timing(**t) for n, t in (d.get(k) or {}).items()}
            devices.append(DeviceResult(**d))
        meta = doc.get("report", {})
        return BenchReport(devices, bool(meta.get("quick", True)), meta.get("torch_version"), bool(meta.get("cancelled", False)),
                           float(meta.get("duration_s", 0.0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"the benchmark result is not in the expected form ({type(exc).__name__}: {exc})") from exc
