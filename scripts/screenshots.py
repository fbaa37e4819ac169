"""Screenshots of every page in a real X window (run under Xvfb), for docs/screenshots/.

Usage:  scripts/screenshots.sh   (starts Xvfb and runs this once per machine and theme)
        python scripts/screenshots.py OUT_DIR MACHINE THEME   with DISPLAY set
MACHINE: nogpu | 1gpu (one RTX 3090) | 8gpu (eight H100), simulated by the fake NVML that the
tests use, injected at the binding boundary; THEME: light | dark. Files: PAGE-MACHINE-THEME.png.

Each page is shown, given time for its worker, and captured from the X server's root window
(QScreen.grabWindow(0)) — the pixels a person would see, not an offscreen render. The live
monitor runs on a simulated clock 40x faster than real time (each 50 ms sample counts as 2 s), so
the charts show their full five minutes after a few seconds; the benchmark is a real quick CPU run
with a 60 s time box instead of 8 s. Everything else is real.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")
MACHINE = sys.argv[2] if len(sys.argv) > 2 else "1gpu"
THEME = sys.argv[3] if len(sys.argv) > 3 else "light"
SPEED = 40.0


def _fake_nvml() -> object:
    from tests.fakes import fake_nvml as F

    if MACHINE == "nogpu":
        return F.FakeNVML(init_error=F.INIT_FAILURES["library_not_found"])
    if MACHINE == "1gpu":
        fake = F.rtx3090()
        fake.animate = True
        return fake
    if MACHINE == "8gpu":
        return F.h100x8(animate=True)
    raise SystemExit(f"unknown machine {MACHINE!r}: use nogpu, 1gpu or 8gpu")


def main() -> int:
    t0 = time.monotonic()
    fast = types.SimpleNamespace(monotonic=lambda: t0 + (time.monotonic() - t0) * SPEED)
    import gpuselect.gui.pages.hardware as hw
    import gpuselect.hardware.nvidia as nvidia
    import tests.fakes.fake_nvml as fake_module

    fake = _fake_nvml()
    nvidia.import_pynvml = lambda: fake  # type: ignore[assignment]
    hw.time = fast  # type: ignore[assignment]  # the monitor's clock
    fake_module.time = fast  # type: ignore[assignment]  # the simulated GPUs' clock

    from gpuselect.bench.model import BenchConfig
    from gpuselect.gui.app import MainWindow

    app = QApplication(sys.argv[:1])
    w = MainWindow()
    w.set_theme(THEME, save=False)
    w.setGeometry(0, 0, 1280, 800)
    # Quick measurements with a roomier time box, so a busy machine still reaches the training
    # steps (the chart); the figures are whatever this machine measures.
    w.bench.config = BenchConfig(quick=True, devices=("cpu",), time_box_s=60.0)
    w.hardware.set_monitor_interval(int(2000 / SPEED))
    w.tabs.setCurrentWidget(w.hardware)
    w.show()
    w.hardware.refresh()
    w.estimate.recompute()
    OUT.mkdir(parents=True, exist_ok=True)

    def shot(page: str) -> None:
        app.processEvents()
        path = OUT / f"{page}-{MACHINE}-{THEME}.png"
        app.primaryScreen().grabWindow(0).save(str(path))
        print("wrote", path, flush=True)

    steps: list[tuple[Callable[[], bool], Callable[[], None], int]] = []

    def then(ready: Callable[[], bool], act: Callable[[], None], settle_ms: int = 1500) -> None:
        steps.append((ready, act, settle_ms))

    def run_next() -> None:
        if not steps:
            w.close()
            return
        ready, act, settle = steps[0]
        if not ready():
            QTimer.singleShot(200, run_next)
            return
        steps.pop(0)
        act()
        QTimer.singleShot(settle, run_next)

    def monitor_full() -> bool:
        return w.hardware._snapshot is not None and (MACHINE == "nogpu" or w.hardware.telemetry_updates >= 150)

    then(monitor_full, lambda: None, 500)
    then(lambda: True, lambda: shot("hardware"), 300)

    def to_bench() -> None:
        # The monitor back to its real pace (2 s), so the benchmark has the CPU to itself.
        w.hardware.set_monitor_interval(2000)
        w.tabs.setCurrentWidget(w.bench)
        w.bench.start()

    then(lambda: getattr(w.estimate, "result", None) is not None, to_bench, 500)  # not racing the estimate
    then(lambda: w.bench.report is not None, lambda: None, 500)
    then(lambda: True, lambda: shot("benchmark"), 300)

    def to_estimate() -> None:
        w.tabs.setCurrentWidget(w.estimate)
        try:  # the preset list is the Estimate page's; a missing preset keeps the default workload
            ids = [w.estimate.presets.item(i).data(256) for i in range(w.estimate.presets.count())]
            w.estimate.presets.setCurrentRow(ids.index("llama-8b-qlora"))
        except (AttributeError, ValueError):
            pass

    then(lambda: True, to_estimate, 5000)
    then(lambda: True, lambda: shot("estimate"), 300)
    then(
        lambda: True,
        lambda: (
            w.tabs.setCurrentWidget(w.catalog),
            w.catalog.family.setCurrentText("datacenter"),
            w.catalog.table.setCurrentIndex(w.catalog.proxy.index(10, 0)),
        ),
    )
    then(lambda: True, lambda: shot("catalog"), 300)
    then(lambda: True, lambda: w.tabs.setCurrentWidget(w.settings_page))
    then(lambda: True, lambda: shot("settings"), 300)
    QTimer.singleShot(1000, run_next)
    QTimer.singleShot(240_000, w.close)  # never hang a script
    return int(app.exec())


if __name__ == "__main__":
    raise SystemExit(main())
