"""Screenshots of every page in a real X window (run under Xvfb), for docs/screenshots/.

Usage:  scripts/screenshots.sh   (starts Xvfb and runs this with DISPLAY set)
Each page is shown, given time for its worker to finish, and captured from the X server with
ImageMagick's `import -window root` — what a person would see, not an offscreen render.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from gpuselect.bench.model import BenchConfig
from gpuselect.gui.app import MainWindow

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")


def main() -> int:
    app = QApplication(sys.argv[:1])
    w = MainWindow()
    w.setGeometry(0, 0, 1280, 860)
    w.bench.config = BenchConfig(quick=True, devices=("cpu",))
    w.show()
    w.hardware.refresh()
    w.estimate.recompute()

    def shot(name: str) -> None:
        subprocess.run(["import", "-window", "root", str(OUT / name)], check=True)
        print("wrote", OUT / name)

    def at(ms: int, fn) -> None:  # type: ignore[no-untyped-def]
        QTimer.singleShot(ms, fn)

    at(3000, lambda: (w.tabs.setCurrentIndex(0)))
    at(4000, lambda: shot("hardware.png"))
    at(4500, lambda: (w.tabs.setCurrentIndex(1), w.bench.start()))
    at(25000, lambda: shot("benchmark.png"))
    at(25500, lambda: (w.tabs.setCurrentIndex(2), w.estimate.presets.setCurrentRow(
        [w.estimate.presets.item(i).data(256) for i in range(w.estimate.presets.count())].index("llama-8b-qlora"))))
    at(29000, lambda: shot("estimate.png"))
    at(29500, lambda: (w.tabs.setCurrentIndex(3), w.catalog.family.setCurrentText("datacenter"),
                       w.catalog.table.setCurrentIndex(w.catalog.proxy.index(10, 0))))
    at(31000, lambda: shot("catalog.png"))
    at(31500, lambda: w.tabs.setCurrentIndex(4))
    at(32500, lambda: shot("settings.png"))
    at(33000, w.close)
    return int(app.exec())


if __name__ == "__main__":
    raise SystemExit(main())
