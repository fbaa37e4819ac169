"""The window's shortcuts (Ctrl+E: export) while a text field or spin box has focus. Under X11's
key scheme (Linux desktops) a QLineEdit claims Ctrl+E as "end of line" through ShortcutOverride, and
the export did nothing; the offscreen platform has no such binding, so the offscreen test uses a field
that claims Ctrl+E as X11's QLineEdit does, and a second test runs the real fields under Xvfb."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QLineEdit

from gpuselect.gui.app import MainWindow
from tests.conftest import REPO_ROOT


class X11LineEdit(QLineEdit):
    """Takes Ctrl+E for itself, as QLineEdit does where the platform binds MoveToEndOfLine to it."""

    def event(self, e: QEvent) -> bool:
        if (
            e.type() == QEvent.Type.ShortcutOverride
            and isinstance(e, QKeyEvent)
            and (e.key(), e.modifiers()) == (Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
        ):
            e.accept()
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:
        if e.key() == Qt.Key.Key_E and e.modifiers() == Qt.KeyboardModifier.ControlModifier:
            self.end(False)
            return
        super().keyPressEvent(e)


def test_ctrl_e_exports_while_a_field_that_claims_it_has_focus(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    monkeypatch.setattr("gpuselect.gui.dialogs.save_file_name", lambda *a, **k: asked.append(1) or "")
    w = MainWindow()
    qtbot.addWidget(w)
    field = X11LineEdit()
    w.estimate.layout().addWidget(field)
    w.tabs.setCurrentWidget(w.estimate)
    with qtbot.waitActive(w):
        w.show()
        w.activateWindow()
    field.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is field)
    qtbot.keyClicks(field, "abc")
    qtbot.keyClick(field, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert asked == [1]
    # editing is as before: typing, select all and replace, Home
    qtbot.keyClick(field, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(field, "xy")
    qtbot.keyClick(field, Qt.Key.Key_Home)
    qtbot.keyClicks(field, "0")
    assert field.text() == "0xy"
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


_XCB_SCRIPT = """
import sys
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
app = QApplication([])
from gpuselect.gui.app import MainWindow
import gpuselect.gui.dialogs as dialogs
asked = []
dialogs.save_file_name = lambda *a, **k: asked.append(1) or ""
w = MainWindow(); w.show(); w.activateWindow(); QTest.qWaitForWindowActive(w)
bound = "Ctrl+E" in [k.toString() for k in QKeySequence.keyBindings(QKeySequence.StandardKey.MoveToEndOfLine)]
e = w.estimate
w.tabs.setCurrentWidget(e)
missed = []
for name, field in (("search", e.search), ("batch", e.batch), ("deadline", e.deadline)):
    field.setFocus(); QTest.qWait(20)
    n = len(asked)
    QTest.keyClick(w.windowHandle(), Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    QTest.qWait(20)
    if len(asked) == n:
        missed.append(name)
e.search.setFocus(); QTest.keyClicks(e.search, "resnet")
print("bound" if bound else "unbound", ",".join(missed) or "none", e.search.text())
w.close()
"""


@pytest.mark.skipif(not shutil.which("xvfb-run"), reason="needs Xvfb for the X11 key scheme")
def test_ctrl_e_exports_from_the_real_fields_under_x11(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "QT_QPA_PLATFORM": "xcb", "GPUSELECT_CONFIG_DIR": str(tmp_path)}
    done = subprocess.run(
        ["xvfb-run", "-a", sys.executable, "-c", _XCB_SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        pytest.skip(f"no X11 window here: {done.stderr[-300:]}")
    assert lines[-1] == "bound none resnet", done.stderr[-1000:]


def _mnemonic(text: str) -> str | None:
    import re

    m = re.search(r"&([^&])", text.replace("&&", ""))
    return m.group(1).lower() if m else None


def test_no_two_alt_keys_clash_on_any_page(qtbot) -> None:
    """QA 15d: on the Estimate page Alt+B went to "Batch size" instead of the Benchmark tab, Alt+E
    cycled between Epochs, Electricity and the Estimate tab, Alt+H to "Charts", Alt+F to "Fitting
    options only" instead of the File menu; Alt+S and Alt+C pressed buttons on the Benchmark page
    (Start, Cancel) that the Settings and Catalog tabs also claim. Qt gives an ambiguous Alt key to one
    of its owners per press, so the tab a label promises did not open."""
    from PySide6.QtWidgets import QAbstractButton, QLabel, QTabWidget

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    window_keys = [(_mnemonic(a.text()), f"menu {a.text()}") for a in w.menuBar().actions()]
    window_keys += [(_mnemonic(w.tabs.tabText(i)), f"tab {w.tabs.tabText(i)}") for i in range(w.tabs.count())]
    clashes: dict[str, list[str]] = {}
    states = [(i, None) for i in range(w.tabs.count())]
    states += [(w.tabs.indexOf(w.estimate), s) for s in range(w.estimate.source.count())]  # every workload panel
    for tab, source in states:
        w.tabs.setCurrentIndex(tab)
        if source is not None:
            w.estimate.source.setCurrentIndex(source)
        page = w.tabs.currentWidget()
        keys = list(window_keys)
        keys += [
            (_mnemonic(b.text()), f"button {b.text()}") for b in page.findChildren(QAbstractButton) if b.isVisibleTo(w)
        ]
        keys += [
            (_mnemonic(lab.text()), f"label {lab.text()}")
            for lab in page.findChildren(QLabel)
            if lab.buddy() is not None and lab.isVisibleTo(w)
        ]
        for tw in page.findChildren(QTabWidget):
            if tw.isVisibleTo(w):
                keys += [(_mnemonic(tw.tabText(j)), f"tab {tw.tabText(j)}") for j in range(tw.count())]
        owners: dict[str, list[str]] = {}
        for key, who in keys:
            if key:
                owners.setdefault(key, []).append(who)
        clashes.update({f"{w.tabs.tabText(tab)}/{source} Alt+{k}": v for k, v in owners.items() if len(v) > 1})
    assert clashes == {}
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)
