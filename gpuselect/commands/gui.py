"""``gpuselect gui`` (the default): the desktop app."""

from __future__ import annotations

import argparse

HELP = "open the desktop app (the default when no command is given)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quit-after",
        type=float,
        metavar="SECONDS",
        default=None,
        help=argparse.SUPPRESS,  # smoke tests: close the window after this many seconds
    )


def run(args: argparse.Namespace) -> int:
    from gpuselect.gui.app import run_app

    return run_app(quit_after_s=getattr(args, "quit_after", None))
