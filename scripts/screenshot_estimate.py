"""Screenshots of the Estimate page in a real X window (run under Xvfb), light and dark, at
1280x800, on a simulated machine (fake NVML scenario) — for docs/screenshots/.

Usage:  Xvfb :97 -screen 0 1280x800x24 &  DISPLAY=:97 QT_QPA_PLATFORM=xcb PYTHONPATH=. \\
        python scripts/screenshot_estimate.py docs/screenshots [scenario] [preset]
The window is captured from the X server's root window (what a person would see).
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
SCENARIO = sys.argv[2] if len(sys.argv) > 2 else "a100x2_ecc"
PRESET = sys.argv[3] if len(sys.argv) > 3 else "llama-8b-qlora"


def dark_palette() -> QPalette:
    p = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, "#202124"),
        (QPalette.ColorRole.WindowText, "#e8eaed"),
        (QPalette.ColorRole.Base, "#17181a"),
        (QPalette.ColorRole.AlternateBase, "#25272a"),
        (QPalette.ColorRole.Text, "#e8eaed"),
        (QPalette.ColorRole.Button, "#2d2f33"),
        (QPalette.ColorRole.ButtonText, "#e8eaed"),
        (QPalette.ColorRole.Highlight, "#3d6fb4"),
        (QPalette.ColorRole.HighlightedText, "#ffffff"),
        (QPalette.ColorRole.ToolTipBase, "#2d2f33"),
        (QPalette.ColorRole.ToolTipText, "#e8eaed"),
        (QPalette.ColorRole.PlaceholderText, "#9aa0a6"),
    ):
        p.setColor(role, QColor(colour))
    return p


def main() -> int:
    from gpuselect.hardware import nvidia
    from tests.fakes import fake_nvml as F

    fake = F.SCENARIOS[SCENARIO]()
    nvidia.import_pynvml = lambda: fake  # the simulated machine, at the binding boundary
    app = QApplication(sys.argv[:1])
    app.setStyle("Fusion")
    light = app.palette()
    from gpuselect.gui.app import MainWindow

    w = MainWindow()
    w.setGeometry(0, 0, 1280, 800)
    w.show()
    w.tabs.setCurrentIndex(2)
    ids = [w.estimate.presets.item(i).data(256) for i in range(w.estimate.presets.count())]
    w.estimate.presets.setCurrentRow(ids.index(PRESET))
    w.hardware.refresh()

    def shot(name: str) -> None:
        app.primaryScreen().grabWindow(0).save(str(OUT / name))
        print("wrote", OUT / name)

    QTimer.singleShot(6000, lambda: shot(f"estimate-{SCENARIO}-light.png"))
    QTimer.singleShot(6500, lambda: app.setPalette(dark_palette()))
    QTimer.singleShot(7000, lambda: w.estimate.recompute())
    QTimer.singleShot(10000, lambda: shot(f"estimate-{SCENARIO}-dark.png"))
    QTimer.singleShot(10500, lambda: (app.setPalette(light), w.close()))
    return int(app.exec())


if __name__ == "__main__":
    raise SystemExit(main())
