"""Time from a fresh interpreter to a shown, usable main window (offscreen), and whether torch
was imported on the way (it must not be: only a benchmark or model profiling needs it).

Rerun:  PYTHONPATH=. python benchmarks/gui_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = (
    "import time, sys\nt0 = time.perf_counter()\n"
    "from PySide6.QtWidgets import QApplication\nfrom gpuselect.gui.app import MainWindow\n"
    "app = QApplication([])\nw = MainWindow()\nw.show()\napp.processEvents()\n"
    "print(time.perf_counter() - t0, 'torch' in sys.modules)\n"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ns = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    walls, inner = [], []
    for _ in range(ns.repeats):
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CODE], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        walls.append(time.perf_counter() - start)
        inner.append(float(out[0]))
        torch_loaded = out[1]
    print(
        f"window shown after {statistics.median(inner):.2f} s of imports and construction (median of {ns.repeats}); "
        f"whole process including start and exit {statistics.median(walls):.2f} s; torch imported: {torch_loaded}"
    )


if __name__ == "__main__":
    main()
