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


def test_no_config_folder_starts_the_app_on_the_defaults(qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Review 17b: HOME unset in a container under an arbitrary user id ran the CLI on the defaults
    (QA 17c), but the desktop app ended at start: the window state's file and the Catalog page's
    overlay asked for the config folder there is none of."""
    import pwd

    from gpuselect import notices

    for var in ("GPUSELECT_CONFIG_DIR", "XDG_CONFIG_HOME", "HOME"):
        monkeypatch.delenv(var, raising=False)

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    notices.reset()
    try:
        w = MainWindow()
        qtbot.addWidget(w)
        assert w.settings.fileName() == ""  # kept in memory, written nowhere
        assert not w.catalog.open_overlay.isEnabled()
        assert "HOME is not set" in w.catalog.open_overlay.toolTip()
        w.show_notices()
        assert w.banner.text().lower().count("no config folder: home is not set") == 1  # said once
        w.close()
        qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)
    finally:
        notices.reset()
