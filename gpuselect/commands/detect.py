"""``gpuselect detect``: CPU, RAM, GPUs, drivers and frameworks."""

from __future__ import annotations

import argparse

from gpuselect.commands import add_format_option

HELP = "detect the CPU, RAM, every GPU, the driver and the deep-learning frameworks"


def add_probe_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--probe",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=(
            "import each installed framework in a subprocess and ask whether it sees the GPU "
            "(default: only when a GPU was found; takes seconds)"
        ),
    )


def configure(parser: argparse.ArgumentParser) -> None:
    add_format_option(parser)
    add_probe_option(parser)


def run(args: argparse.Namespace) -> int:
    from gpuselect.hardware.snapshot import detect
    from gpuselect.hardware.text import format_snapshot
    from gpuselect.output import json_document, to_jsonable

    snapshot = detect(probe=args.probe)
    if args.format == "json":
        print(json_document(to_jsonable(snapshot), kind="detect"))
    else:
        print(format_snapshot(snapshot))
    return 0
