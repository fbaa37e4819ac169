#!/usr/bin/env bash
# Soak the live monitor (8 simulated H100, 50 ms interval) and log the result per PySide6 build.
# Usage: scripts/soak_monitor.sh SECONDS [python] [extra PYTHONPATH with another PySide6]
# Output: docs/validation/gui_soak.txt is written from this script's stdout by the caller, e.g.
#   scripts/soak_monitor.sh 300 > docs/validation/gui_soak.txt
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"; py="${2:-.venv/bin/python}"; extra="${3:-}"
version=$(PYTHONPATH="${extra:+$extra:}$PWD" "$py" -c "import PySide6; print(PySide6.__version__)")
echo "# scripts/soak_monitor.sh $secs: python -m tests.gui.soak_monitor --seconds $secs --interval-ms 50 --scenario h100x8"
echo "# PySide6 $version, QT_QPA_PLATFORM=offscreen, $(nproc) CPU cores, $(date -u +%F)"
PYTHONPATH="${extra:+$extra:}$PWD" QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$(mktemp -d)" \
  "$py" -m tests.gui.soak_monitor --seconds "$secs" --interval-ms 50 --scenario h100x8 2>&1 | grep -v propagateSizeHints | head -6
echo "exit status: ${PIPESTATUS[0]}"
