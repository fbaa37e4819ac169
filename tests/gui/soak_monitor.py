"""Run the real window's live monitor against simulated GPUs for a while, then close it.

Run in a subprocess by tests/gui/test_soak.py, so that a fatal abort inside Qt (PySide6 6.12.0's
"none_dealloc" in pyqtgraph's setData from the telemetry slot) is a failed test, not a dead pytest:

    python -m tests.gui.soak_monitor --seconds 60 --interval-ms 50 --scenario h100x8

Prints one JSON line at the end: the monitor updates drawn, the samples per GPU held, the curves.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from tests.fakes import fake_nvml as F


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--interval-ms", type=int, default=50)
    ap.add_argument("--scenario", default="h100x8")
    args = ap.parse_args(argv)

    factory = F.SCENARIOS[args.scenario]
    fake = factory(animate=True) if args.scenario == "h100x8" else factory()  # moving readings: new data each time

    import gpuselect.hardware.nvidia as nvidia

    nvidia.import_pynvml = lambda: fake  # the binding boundary, as in the unit tests
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gpuselect.gui.app import MainWindow

    app = QApplication(sys.argv[:1])
    w = MainWindow()
    w.tabs.setCurrentWidget(w.hardware)
    w.hardware.set_monitor_interval(args.interval_ms)
    w.show()
    w.hardware.refresh()
    start = time.monotonic()
    QTimer.singleShot(int(args.seconds * 1000), w.close)
    rc = int(app.exec())
    page = w.hardware
    print(
        json.dumps(
            {
                "rc": rc,
                "wall_s": round(time.monotonic() - start, 1),
                "updates": page.telemetry_updates,
                "gpus": len(page._history),
                "curves": len(page._curves),
            }
        ),
        flush=True,
    )
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
