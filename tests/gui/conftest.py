from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_qsettings(tmp_path, monkeypatch):
    """Window geometry and inputs go to a temporary folder, never the real user's config."""
    from PySide6.QtCore import QSettings

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "qsettings"))


@pytest.fixture(autouse=True)
def _no_worker_left_running(qtbot):
    """Every GUI test ends with no GeneratorWorker thread still running (the registry in
    gpuselect/gui/workers.py); a test that leaves one behind fails here."""
    yield
    from gpuselect.gui.workers import live_workers

    qtbot.waitUntil(lambda: not live_workers(), timeout=30_000)
    # The workers turn automatic collection off (collect_garbage_on_gui_thread); collect here, on
    # the GUI thread, and give the tests after this one the normal collector back.
    import gc

    gc.collect()
    gc.enable()


@pytest.fixture(autouse=True)
def real_quit_prompt(qtbot, monkeypatch):
    """Closing the window while a benchmark runs or a model file is measured asks first (a modal
    box that would wait forever in a test): answered Yes here, the questions kept on the window
    as ``quit_questions``. Yields the real prompt for a test that shows it (setattr it back).
    It asks for ``qtbot`` so that its teardown runs before qtbot closes the test's windows: a test
    that failed with the real prompt patched in would otherwise leave a modal box no one answers
    (review 14: CI hung)."""
    try:
        from gpuselect.gui.app import MainWindow
    except ImportError:  # no PySide6: the Qt tests skip themselves
        yield None
        return
    real = getattr(MainWindow, "_ask_quit", None)

    def yes(self, question: str) -> bool:  # type: ignore[no-untyped-def]
        self.quit_questions = [*getattr(self, "quit_questions", []), question]
        return True

    monkeypatch.setattr(MainWindow, "_ask_quit", yes, raising=False)
    yield real
    MainWindow._ask_quit = yes  # type: ignore[method-assign]  # for qtbot's closes; monkeypatch restores the real one last
