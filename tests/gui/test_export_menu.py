"""File -> Export through the menu route: the QAction and its Ctrl+E shortcut, with the save dialog
answered by a stub (the action's ``checked`` flag once arrived as the path)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from gpuselect.gui.app import MainWindow


def _answer_dialog(monkeypatch: pytest.MonkeyPatch, path: str, asked: list[str], kind: str = "") -> None:
    def fake(*args: object, chosen: list[str] | None = None, **kwargs: object) -> str:
        asked.append(path)
        if chosen is not None and kind:
            chosen.append(kind)
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


def test_the_chosen_file_type_decides_the_format_and_adds_its_suffix(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Markdown chosen and "r3" typed wrote a PDF named r3."""
    asked: list[str] = []
    _answer_dialog(monkeypatch, str(tmp_path / "r3"), asked, kind="Markdown (*.md)")
    w = MainWindow()
    qtbot.addWidget(w)
    w.export_action.trigger()
    out = tmp_path / "r3.md"
    qtbot.waitUntil(out.exists, timeout=30_000)
    assert out.read_text().startswith("# gpuselect hardware report") and not (tmp_path / "r3").exists()
    _close(qtbot, w)


def test_a_name_ending_in_a_dot_takes_the_suffix_once(qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "r12." with Markdown chosen was written as r12..md."""
    asked: list[str] = []
    _answer_dialog(monkeypatch, str(tmp_path / "r12."), asked, kind="Markdown (*.md)")
    w = MainWindow()
    qtbot.addWidget(w)
    w.export_action.trigger()
    out = tmp_path / "r12.md"
    qtbot.waitUntil(out.exists, timeout=30_000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r12.md"]
    _close(qtbot, w)


def test_export_path_adds_the_chosen_suffix_only_where_the_name_lacks_one() -> None:
    from gpuselect.gui.app import export_path

    assert export_path("/d/r12.", "Markdown (*.md)") == "/d/r12.md"
    assert export_path("/d/r12...", "JSON (*.json)") == "/d/r12.json"
    assert export_path("/d/r12", "") == "/d/r12.pdf"
    assert export_path("/d/r12.PDF", "Markdown (*.md)") == "/d/r12.PDF"  # a report suffix is kept
    assert export_path("/d/v1.2", "Markdown (*.md)") == "/d/v1.2.md"
    assert export_path("/d/..", "PDF (*.pdf)") == "/d/...pdf"  # dots alone: not stripped to the folder


def test_export_keeps_a_file_gpuselect_did_not_write_and_refuses_a_stale_answer(qtbot, tmp_path) -> None:
    """The GUI replaced a user's notes.pdf after Qt's generic prompt (the CLI refuses), and exported
    the last valid input's report while the page said it could not estimate the input."""
    notes = tmp_path / "notes.pdf"
    notes.write_text("my precious notes")
    w = MainWindow()
    qtbot.addWidget(w)
    w.export_to(str(notes))
    qtbot.waitUntil(lambda: "not written by gpuselect" in w.statusBar().currentMessage(), timeout=30_000)
    assert notes.read_text() == "my precious notes"
    page = w.estimate
    page.recompute()
    qtbot.waitUntil(lambda: page.result is not None and page.worker is None, timeout=30_000)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    page.source.setCurrentIndex(1)
    page.config_path.setText(str(bad))
    page.recompute()
    qtbot.waitUntil(lambda: page.stale_reason() is not None, timeout=30_000)
    out = tmp_path / "stale.md"
    w.export_to(str(out))
    assert "the estimate shown is for the last valid input" in w.statusBar().currentMessage()
    assert not out.exists()
    _close(qtbot, w)


def _stale_after_a_result(qtbot, w: MainWindow) -> None:
    page = w.estimate
    page.recompute()
    qtbot.waitUntil(lambda: page.result is not None and page.worker is None, timeout=30_000)


def test_export_while_a_benchmark_runs_says_to_wait_before_asking_for_a_file(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "fix the input", and only after the file dialog and the replace prompt."""
    asked: list[str] = []
    _answer_dialog(monkeypatch, str(tmp_path / "r.md"), asked)
    w = MainWindow()
    qtbot.addWidget(w)
    _stale_after_a_result(qtbot, w)
    w.estimate.bench_running = lambda: True
    w.estimate.recompute()  # "Waiting for the benchmark to finish…"
    w.export_action.trigger()
    message = w.statusBar().currentMessage()
    assert asked == [] and not (tmp_path / "r.md").exists()
    assert "a benchmark is running; wait for it to finish, then export" in message and "fix the input" not in message
    w.estimate.bench_running = lambda: False
    # the benchmark over, its "is running" leaves the status bar (it stayed 30 s under "Done in 9.8 s")
    qtbot.waitUntil(lambda: "is running" not in w.statusBar().currentMessage(), timeout=2_000)
    assert "File > Export report" in w.statusBar().currentMessage()
    _close(qtbot, w)


def test_export_while_the_model_file_is_measured_says_to_wait(qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    _answer_dialog(monkeypatch, str(tmp_path / "r.md"), asked)
    model = tmp_path / "loop.py"
    model.write_text("def make():\n    while True:\n        pass\n")
    w = MainWindow()
    qtbot.addWidget(w)
    _stale_after_a_result(qtbot, w)
    page = w.estimate
    page.source.setCurrentIndex(2)
    page.model_path.setText(str(model))
    page.recompute()  # the factory is missing: the preset's answer is greyed
    page.factory.setText("make")
    page.input_shape.setText("1,28,28")
    page.recompute()
    assert page.worker is not None and page.error.text().startswith("Measuring the model")
    w.export_action.trigger()
    message = w.statusBar().currentMessage()
    assert asked == [] and "the model file is being measured; wait for the measurement to finish" in message
    assert "fix the input" not in message
    from gpuselect.workloads import profile

    qtbot.waitUntil(lambda: len(profile._LIVE) == 1, timeout=20_000)  # closing stops a trace once started
    _close(qtbot, w)


def _answer_prompt_with_enter(qtbot, seen: list[object]) -> None:
    """Press Enter on the replace prompt once it is up (it runs its own event loop)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, answer)
            return
        seen.append(box.standardButton(box.defaultButton()))
        qtbot.keyClick(box, Qt.Key.Key_Return)

    QTimer.singleShot(0, answer)


def test_enter_on_the_replace_prompt_keeps_a_file_gpuselect_did_not_write(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt for a user's own file defaulted to Yes; for gpuselect's own report Yes stays the default."""
    from PySide6.QtWidgets import QMessageBox

    notes, ours = tmp_path / "notes.md", tmp_path / "ours.md"
    notes.write_text("my precious notes")
    w = MainWindow()
    qtbot.addWidget(w)
    w.export_to(str(ours))
    qtbot.waitUntil(lambda: ours.exists() and "Report written" in w.statusBar().currentMessage(), timeout=30_000)
    ours.write_text(ours.read_text().replace("## Health", "## Health (old)"))
    seen: list[object] = []
    _answer_dialog(monkeypatch, str(notes), [])
    _answer_prompt_with_enter(qtbot, seen)
    first = w._export_worker
    w.export_action.trigger()
    assert seen == [QMessageBox.StandardButton.No] and w._export_worker is first  # no export started
    assert notes.read_text() == "my precious notes"
    _answer_dialog(monkeypatch, str(ours), [])
    _answer_prompt_with_enter(qtbot, seen)
    w.statusBar().clearMessage()
    w.export_action.trigger()
    assert seen[1:] == [QMessageBox.StandardButton.Yes]
    qtbot.waitUntil(lambda: "Report written" in w.statusBar().currentMessage(), timeout=30_000)
    assert "## Health (old)" not in ours.read_text()
    _close(qtbot, w)


def test_quitting_while_the_model_file_is_measured_asks_first(qtbot, tmp_path, real_quit_prompt, monkeypatch) -> None:
    """QA 14c: the app closed during the measurement without a prompt. Enter keeps it open (No is
    the default); Yes closes it and stops the measuring process."""
    from PySide6.QtWidgets import QMessageBox

    model = tmp_path / "loop.py"
    model.write_text("def make():\n    while True:\n        pass\n")
    monkeypatch.setattr(MainWindow, "_ask_quit", real_quit_prompt)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    _stale_after_a_result(qtbot, w)
    page = w.estimate
    page.source.setCurrentIndex(2)
    page.model_path.setText(str(model))
    page.factory.setText("make")
    page.input_shape.setText("1,28,28")
    page.recompute()
    assert page.worker is not None
    seen: list[object] = []
    _answer_prompt_with_enter(qtbot, seen)
    w.close()
    assert seen == [QMessageBox.StandardButton.No] and w.isVisible() and page.worker is not None
    assert w.quit_question() == "The model file is being measured — quit anyway?"
    from gpuselect.workloads import profile

    qtbot.waitUntil(lambda: len(profile._LIVE) == 1, timeout=20_000)  # still measuring
    monkeypatch.setattr(MainWindow, "_ask_quit", lambda _self, q: seen.append(q) or True)
    _close(qtbot, w)
    assert seen[1:] == ["The model file is being measured — quit anyway?"] and not w.isVisible()
    qtbot.waitUntil(lambda: not profile._LIVE, timeout=20_000)
