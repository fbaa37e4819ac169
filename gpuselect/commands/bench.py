"""``gpuselect bench``: a few honest seconds that say what this machine can really do."""

from __future__ import annotations

import argparse
import sys

from gpuselect.commands import add_format_option

HELP = "microbenchmark the CPU and every GPU: matmul per precision, bandwidth, transfers, training steps"


def configure(parser: argparse.ArgumentParser) -> None:
    add_format_option(parser)
    parser.add_argument(
        "--device",
        default="all",
        metavar="DEV",
        help="cpu, cuda:N, mps, or all (default: all devices torch sees); comma-separated for several",
    )
    parser.add_argument(
        "--quick", action="store_true", help="about 10 s on a small machine (default run: about a minute)"
    )
    parser.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="also save the record (the JSON that `estimate --bench FILE` reads) here, written atomically "
        "and only when the run completes (`> FILE` leaves an empty file when interrupted)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an existing FILE (a saved record is yours: kept unless asked)"
    )


def _progress(ev: object) -> None:
    step, frac, eta = ev.step, ev.fraction, ev.eta_s  # type: ignore[attr-defined]
    left = f", ~{eta:.0f} s left" if eta is not None else ""
    line = f"[{100 * frac:3.0f}%] {step}{left}"
    if sys.stderr.isatty():
        import shutil

        # within the terminal's width: a 78-column line wrapped on a narrower one, and each "\r"
        # then returned to its last row only, leaving a trail of half lines
        width = max(20, min(78, shutil.get_terminal_size().columns - 1))
        print("\r" + line[:width].ljust(width), end="", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    import threading

    from gpuselect.bench.engine import run_to_completion
    from gpuselect.bench.model import BenchConfig
    from gpuselect.bench.text import format_bench
    from gpuselect.output import json_document

    # once each, in the order given ("cpu,cpu" benchmarked the CPU twice and recorded it twice)
    devices = tuple(dict.fromkeys(d.strip().lower() for d in args.device.split(",") if d.strip()))
    if not devices:  # '' or ',' benchmarked every device, which nobody asked for
        from gpuselect.errors import UsageError

        raise UsageError("--device names no device: give cpu, cuda:N, mps or all")
    if args.output == "-":  # report -o - means standard output; here --format json is that
        from gpuselect.errors import UsageError

        raise UsageError("-o - would write a file named '-': for the record on standard output use --format json")
    if args.output:
        from gpuselect.fsutil import check_output

        check_output(args.output, force=args.force)  # before a minute of measuring, not after
    cancel = threading.Event()
    cfg = BenchConfig(quick=args.quick, devices=devices)
    try:
        report = run_to_completion(cfg, cancel, on_event=_progress)
    except KeyboardInterrupt:
        cancel.set()
        kept = f": {args.output} was not written" if args.output else ""
        print(f"\ngpuselect: benchmark cancelled{kept}", file=sys.stderr)
        return 130
    if sys.stderr.isatty():
        print(file=sys.stderr)
    from gpuselect.bench.findings import bench_findings

    findings = bench_findings(report)
    doc = json_document({"report": report, "devices": report.devices, "findings": findings}, kind="bench")
    if args.output:
        from gpuselect.fsutil import atomic_write_text, check_output

        if report.cancelled:
            print(f"gpuselect: the benchmark was cancelled: {args.output} was not written", file=sys.stderr)
        else:
            check_output(args.output, force=args.force)  # again: a file that appeared during the run
            print(f"wrote {atomic_write_text(args.output, doc + chr(10))} (benchmark record)", file=sys.stderr)
    if args.format == "json":
        print(doc)
    else:
        print(format_bench(report))
        for f in findings:
            if f.severity.value != "ok":
                print(f"[{f.severity.symbol} {f.severity.value.upper()}] {f.device}: {f.title} — {f.remedy}")
    return 130 if report.cancelled else 0
