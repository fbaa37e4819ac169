#!/usr/bin/env bash
# Screenshot of the desktop app in a real X window (Xvfb), for docs/screenshots/.
# Needs Debian's xvfb, imagemagick and Qt's X11 libraries (libxcb-cursor0, libxkbcommon-x11-0 ...).
# Usage: scripts/screenshot_main_window.sh [python] [out.png]
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:-.venv/bin/python}"
out="${2:-docs/screenshots/main-window.png}"
display=":97"
Xvfb "$display" -screen 0 1000x720x24 >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY="$display" QT_QPA_PLATFORM=xcb PYTHONPATH=. "$py" -m gpuselect gui --quit-after 6 &
app=$!
sleep 4
DISPLAY="$display" import -window root "$out"
wait $app
echo "wrote $out"
