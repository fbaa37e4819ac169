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
    import os
    import sys

    from gpuselect.errors import UsageError

    # Qt aborts the process when it cannot reach a display; say so in one sentence instead.
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM")
    ):
        raise UsageError(
            "no display found (DISPLAY and WAYLAND_DISPLAY are unset): the desktop app needs one; "
            "the command-line tools (gpuselect --help) work without"
        )
    try:
        from gpuselect.gui.app import run_app
    except ImportError as exc:
        raise UsageError(f"the desktop app needs PySide6 and pyqtgraph ({exc}): pip install 'gpuselect[gui]'") from exc

    return run_app(quit_after_s=getattr(args, "quit_after", None))
