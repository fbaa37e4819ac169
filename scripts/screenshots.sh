#!/usr/bin/env bash
# Screenshots of each page in a real X window. Needs Debian's xvfb and imagemagick, and Qt's
# X11 libraries (libxcb-cursor0, libxkbcommon-x11-0, libxcb-icccm4, libxcb-keysyms1).
# Usage: scripts/screenshots.sh [python]
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:-.venv/bin/python}"
mkdir -p docs/screenshots
Xvfb :97 -screen 0 1280x860x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY=:97 QT_QPA_PLATFORM=xcb PYTHONPATH=. "$py" scripts/screenshots.py docs/screenshots
