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


#: The libraries Qt 6's xcb platform plugin loads (its plugin aborts the process without one of
#: them, seen on a minimal Debian 12), and the Debian/Ubuntu package of each.
XCB_PACKAGES = {
    "xcb-cursor": "libxcb-cursor0",
    "xcb-icccm": "libxcb-icccm4",
    "xcb-image": "libxcb-image0",
    "xcb-keysyms": "libxcb-keysyms1",
    "xcb-randr": "libxcb-randr0",
    "xcb-render-util": "libxcb-render-util0",
    "xcb-shape": "libxcb-shape0",
    "xcb-xkb": "libxcb-xkb1",
    "xkbcommon-x11": "libxkbcommon-x11-0",
}


def _missing_xcb_libraries() -> list[str]:
    """The xcb libraries Qt would fail to load, where it will use X11 (Linux, not offscreen or
    Wayland); empty elsewhere or where the system cannot tell (no ldconfig)."""
    import ctypes.util
    import os
    import sys

    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux") or (platform and not platform.startswith("xcb")):
        return []
    if not platform and os.environ.get("WAYLAND_DISPLAY"):
        return []
    try:
        if ctypes.util.find_library("xcb") is None:
            return []  # the lookup sees no X11 library at all (no ldconfig?): it cannot tell, Qt will
        return [name for name in XCB_PACKAGES if ctypes.util.find_library(name) is None]
    except OSError:
        return []


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
    missing = _missing_xcb_libraries()
    if missing:
        raise UsageError(
            f"Qt's X11 platform needs system libraries this machine lacks ({', '.join(missing)}); on Debian or "
            f"Ubuntu: sudo apt install {' '.join(XCB_PACKAGES[m] for m in missing)}"
        )
    try:
        from gpuselect.gui.app import run_app
    except ImportError as exc:
        raise UsageError(f"the desktop app needs PySide6 and pyqtgraph ({exc}): pip install 'gpuselect[gui]'") from exc

    return run_app(quit_after_s=getattr(args, "quit_after", None))
