"""File -> Export through the menu route: the QAction and its Ctrl+E shortcut, with the save dialog
answered by a stub (the action's ``checked`` flag once arrived as the path)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from gpuselect.gui.app import MainWindow


def _answer_dialog(monkeypatch: pytest.MonkeyPatch, path: str, asked: list[str]) -> None:
    def fake(*args: object, **kwargs: object) -> str:
        asked.append(path)
        return path

    monkeypatch.setattr("gpuselect.gui.dialogs.save_file_name", fake)


def _close(qtbot, w: MainWindow) -> None:
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=20_000)


def test_export_action_opens_the_dialog_and_writes(qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "menu.md"
    asked: list[str] = []
    _answer_dialog(monkeypatch, str(out), asked)
    w = MainWindow()
    qtbot.addWidget(w)
    w.export_action.trigger()  # what File -> Export does: triggered(checked=False)
    assert asked == [str(out)]
    qtbot.waitUntil(out.exists, timeout=30_000)
    assert "## Health" in out.read_text()
    qtbot.waitUntil(lambda: "Report written" in w.statusBar().currentMessage(), timeout=10_000)
    _close(qtbot, w)


def test_ctrl_e_shortcut_exports(qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "shortcut.md"
    asked: list[str] = []
    _answer_dialog(monkeypatch, str(out), asked)
    w = MainWindow()
    qtbot.addWidget(w)
    with qtbot.waitActive(w):  # shortcuts go to the active window
        w.show()
        w.activateWindow()
    qtbot.keyClick(w, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert asked == [str(out)]
    qtbot.waitUntil(out.exists, timeout=30_000)
    _close(qtbot, w)


def test_cancelled_dialog_writes_nothing(qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    _answer_dialog(monkeypatch, "", asked)
    w = MainWindow()
    qtbot.addWidget(w)
    w.export_action.trigger()
    assert asked == [""] and w._export_worker is None and list(tmp_path.iterdir()) == []
    _close(qtbot, w)


def test_the_file_dialogs_icons_never_open_a_file(qtbot) -> None:
    """Typing /proc/ in the export dialog froze the window: Qt's default icon provider sniffed
    /proc/kmsg's contents, a read that blocks forever. Ours answers from the file's kind alone."""
    import threading

    from PySide6.QtCore import QFileInfo

    from gpuselect.gui.dialogs import KindOnlyIcons

    provider = KindOnlyIcons()
    answers: list[str] = []

    def ask() -> None:
        for name in ("/proc/kmsg", "/dev/zero", "/proc"):
            info = QFileInfo(name)
            provider.icon(info)
            answers.append(provider.type(info))

    t = threading.Thread(target=ask, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive() and answers == ["File", "File", "Folder"]
