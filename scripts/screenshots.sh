#!/usr/bin/env bash
# Screenshots of every page in a real X window, for no GPU, one GPU (RTX 3090) and eight GPUs
# (H100), simulated by the tests' fake NVML, in light and dark, at 1280x800, into docs/screenshots/
# as PAGE-MACHINE-THEME.png (the 1gpu-light set is also copied to PAGE.png for the README).
# Needs Debian's xvfb and Qt's X11 libraries (libxcb-cursor0, libxkbcommon-x11-0, libxcb-icccm4,
# libxcb-keysyms1). Usage: scripts/screenshots.sh [python] [machines] [themes]
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:-.venv/bin/python}"
machines="${2:-nogpu 1gpu 8gpu}"
themes="${3:-light dark}"
out=docs/screenshots
mkdir -p "$out"
cfg=$(mktemp -d)  # never the user's own settings
# A free display number chosen by Xvfb itself (-displayfd), so a second X server (another user's
# screenshots, a desktop) is never reused or disturbed.
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$cfg/display" >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true; rm -rf "$cfg"' EXIT
trap 'exit 1' INT TERM  # through the EXIT trap: the X server never outlives the script
for _ in $(seq 50); do [ -s "$cfg/display" ] && break; sleep 0.1; done
display=":$(head -n1 "$cfg/display")"
echo "Xvfb on $display"
for m in $machines; do
  for t in $themes; do
    DISPLAY=$display QT_QPA_PLATFORM=xcb XDG_CONFIG_HOME="$cfg" PYTHONPATH=. "$py" scripts/screenshots.py "$out" "$m" "$t"
  done
done
for page in hardware benchmark estimate catalog settings; do
  if [ -f "$out/$page-1gpu-light.png" ]; then cp "$out/$page-1gpu-light.png" "$out/$page.png"; fi
done
