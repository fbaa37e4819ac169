"""``gpuselect health``: thermals, throttling, power, PCIe, ECC, memory held by others, drivers."""

from __future__ import annotations

import argparse

from gpuselect.commands import add_format_option
from gpuselect.commands.detect import add_probe_option

HELP = "check the machine's health: thermals, throttling, power cap, PCIe link, ECC, drivers"

EPILOG = """exit status:
  0  all fine (only passed, informational or not-checkable findings)
  1  at least one warning
  3  at least one critical finding
  2  bad usage
  70 an internal error (a bug: please report it; GPUSELECT_DEBUG=1 shows the traceback)
  130 interrupted (Ctrl-C)"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_format_option(parser, ("text", "json", "prometheus"))
    add_probe_option(parser)
    parser.add_argument("--verbose", "-v", action="store_true", help="also list the checks that passed")


def run(args: argparse.Namespace) -> int:
    from gpuselect.hardware.snapshot import detect
    from gpuselect.health.rules import evaluate
    from gpuselect.health.text import format_health
    from gpuselect.output import json_document

    snapshot = detect(probe=args.probe)
    report = evaluate(snapshot)
    if args.format == "prometheus":
        from gpuselect.metrics.families import machine_families, render

        print(render(machine_families(snapshot, report)), end="")
    elif args.format == "json":
        payload = {
            "worst": report.worst,
            "exit_code": report.exit_code,
            "counts": report.counts,
            "findings": report.findings,
            "host": snapshot.host,
            "taken_at": snapshot.taken_at,
        }
        print(json_document(payload, kind="health"))
    else:
        print(format_health(report, verbose=args.verbose))
    return report.exit_code
