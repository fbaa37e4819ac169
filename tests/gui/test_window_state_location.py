"""The desktop app keeps its window state under the config folder that GPUSELECT_CONFIG_DIR
names, not in Qt's own location (issue #15: ~/.config/gpuselect/gpuselect.conf was written)."""

from __future__ import annotations

import os
from pathlib import Path

from gpuselect.gui.app import MainWindow


def test_window_state_goes_under_the_config_dir(qtbot, tmp_path: Path) -> None:
    w = MainWindow()
    qtbot.addWidget(w)
    w.tabs.setCurrentIndex(1)
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)
    w.settings.sync()
    config = Path(os.environ["GPUSELECT_CONFIG_DIR"])
    assert Path(w.settings.fileName()).parent == config
    assert Path(w.settings.fileName()).is_file()
    # Nothing under the places Qt would use by default (the gui conftest points them at tmp_path).
    assert not [p for p in (tmp_path / "qsettings").rglob("*") if p.is_file()]
    assert not (tmp_path / "xdg" / "gpuselect").exists()
