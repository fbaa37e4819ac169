"""The desktop app: Hardware, Benchmark and Estimate pages in one window.

Everything slow runs in workers (detection in the thread pool, benchmark and estimates in
GeneratorWorker threads); window geometry, the open page and the estimate inputs persist in
QSettings. The pages compute nothing the CLI cannot: they call the same core functions.
"""

from __future__ import annotations

import sys
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, QSize, Qt, QThreadPool, QTimer, Slot
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QMainWindow,
    QMessageBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gpuselect.gui.banner import NoticeBanner
from gpuselect.gui.pages.bench import BenchPage
from gpuselect.gui.pages.catalog import CatalogPage
from gpuselect.gui.pages.estimate import EstimatePage
from gpuselect.gui.pages.hardware import HardwarePage
from gpuselect.gui.pages.settings import SettingsPage
from gpuselect.paths import NoConfigFolderError, config_dir

ORG, APP = "gpuselect", "gpuselect"
EXPORT_FILTERS = "PDF (*.pdf);;Markdown (*.md);;JSON (*.json)"
EXPORT_SUFFIXES = {"PDF": ".pdf", "Markdown": ".md", "JSON": ".json"}


def export_path(path: str, chosen_filter: str) -> str:
    """``path`` as the export writes it: a name without a report suffix takes the chosen file type's
    ("r3" with Markdown chosen was written as a PDF named r3). Trailing dots go first: "r12." became
    "r12..md"."""
    from pathlib import Path

    if Path(path).suffix.lower() in EXPORT_SUFFIXES.values():
        return path
    suffix = next((sfx for name, sfx in EXPORT_SUFFIXES.items() if chosen_filter.startswith(name)), ".pdf")
    if Path(path).name.rstrip("."):  # a name of dots alone ("..") would leave only the folder
        path = path.rstrip(".")
    return path + suffix


#: room left for the window manager's title bar and borders, which the available area still holds
FRAME_ALLOWANCE = QSize(16, 48)


def default_size(available: QSize) -> QSize:
    """The first window's size: 1200x800, or the screen's available area less a frame where that is
    smaller. 800 high on a 1366x768 laptop, the window's bottom rows were off the screen."""
    return QSize(1200, 800).boundedTo(available - FRAME_ALLOWANCE)


def _window_ini() -> str:
    """The window state's file; "" (kept in memory only) where there is no config folder, as the
    CLI goes on then: with HOME unset in a container the app ended at start, an internal error."""
    try:
        return str(config_dir() / "window.ini")
    except NoConfigFolderError as exc:
        from gpuselect import notices

        notices.warn(exc.fallback())  # the banner says it, once
        return ""


class MainWindow(QMainWindow):
    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("gpuselect")
        self.resize(default_size(self.screen().availableGeometry().size()))
        self.tabs = QTabWidget()
        self.hardware = HardwarePage()
        self.bench = BenchPage()
        self.estimate = EstimatePage()
        self.tabs.addTab(self.hardware, "&Hardware")
        self.tabs.addTab(self.bench, "&Benchmark")
        self.tabs.addTab(self.estimate, "&Estimate")
        self.catalog = CatalogPage()
        self.settings_page = SettingsPage()
        self.tabs.addTab(self.catalog, "&Catalog")
        self.tabs.addTab(self.settings_page, "&Settings")
        self.settings_page.changed.connect(self.estimate.apply_settings)
        self.settings_page.changed.connect(self.catalog.apply_settings)
        self.estimate.bench_source = lambda: self.bench.report  # the last benchmark anchors this machine's figures
        self.estimate.bench_running = lambda: self.bench.worker is not None
        self.bench.report_ready.connect(lambda _r: self.estimate.recompute())  # not only at the next input change
        self.bench.report_ready.connect(self.hardware.set_bench)  # its busy warning joins the health count
        self.estimate.apply_settings(self.settings_page.settings)
        self.catalog.apply_settings(self.settings_page.settings)
        # Warnings the core carried on past (a corrupt settings file, a broken catalog overlay): a
        # banner above every page and a line on stderr. The settings page alone said so, and a
        # user on the Estimate tab exported a report that ignored their redaction choice.
        self.banner = NoticeBanner()
        self.settings_page.problems_fixed.connect(self.banner.resolve)  # saved valid: those warnings are moot
        central = QWidget()
        box = QVBoxLayout(central)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.banner)
        box.addWidget(self.tabs)
        self.setCentralWidget(central)
        self.show_notices()
        self.notice_timer = QTimer(self)  # warnings a worker's load raises later (an overlay read)
        self.notice_timer.timeout.connect(self.show_notices)
        self.notice_timer.start(2000)
        self.hardware.detected.connect(self._on_detected)
        # Shortcuts as QKeySequence and `triggered` connected explicitly: the stubs lack those keyword forms.
        refresh = QAction("&Refresh hardware", self, shortcut=QKeySequence(QKeySequence.StandardKey.Refresh))
        refresh.triggered.connect(self.hardware.refresh)
        quit_ = QAction("&Quit", self, shortcut=QKeySequence(QKeySequence.StandardKey.Quit))
        quit_.triggered.connect(self.close)
        self.export_action = QAction("&Export report (PDF, Markdown, JSON)…", self, shortcut=QKeySequence("Ctrl+E"))
        self.export_action.triggered.connect(lambda _checked=False: self.export_report())
        menu = self.menuBar().addMenu("&File")
        menu.addAction(refresh)
        menu.addAction(self.export_action)
        menu.addSeparator()
        menu.addAction(quit_)
        # On the window too, so the shortcuts work whether or not the menu bar is shown (native
        # menu bars, full screen).
        self.addActions([refresh, self.export_action, quit_])
        # A text field or spin box claims the keys its platform binds to editing (ShortcutOverride):
        # under X11's key scheme Ctrl+E is "end of line", and the export did nothing while a field
        # had focus. The focused widget's override is filtered for the window's own shortcuts only.
        self._window_keys = [k for a in (refresh, self.export_action, quit_) for k in a.shortcuts()]
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._watch_focus)
        view = self.menuBar().addMenu("&View")
        self.theme_actions: dict[str, QAction] = {}
        group = QActionGroup(self)
        for name, label in (("system", "&System colours"), ("light", "&Light"), ("dark", "&Dark")):
            act = QAction(label, self, checkable=True)
            act.triggered.connect(lambda _checked=False, n=name: self.set_theme(n))
            group.addAction(act)
            view.addAction(act)
            self.theme_actions[name] = act
        # A file under our config dir (GPUSELECT_CONFIG_DIR moves it), not Qt's own location.
        self.settings = QSettings(_window_ini(), QSettings.Format.IniFormat)
        self._restore()
        self.snapshot: object = None
        self._export_worker: object = None
        self._quit_without_asking = False
        self._quit_box: QMessageBox | None = None  # the quit prompt while it is open

    @Slot(QWidget, QWidget)
    def _watch_focus(self, _old: QWidget | None, new: QWidget | None) -> None:
        if new is not None and self.isAncestorOf(new):
            new.installEventFilter(self)  # once per widget: Qt does not add a filter twice

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and QKeySequence(event.keyCombination()) in self._window_keys
        ):
            return True  # not delivered, so not accepted: the window's shortcut runs
        return super().eventFilter(watched, event)

    @Slot()
    def show_notices(self) -> None:
        """The core's pending warnings, once each: in the banner and on stderr."""
        from gpuselect import notices

        new = notices.drain()
        if not new:
            return
        for message in new:
            print(f"gpuselect: warning: {message}", file=sys.stderr)
        self.banner.add(new)

    @Slot()
    def export_report(self) -> None:
        """File -> Export (Ctrl+E): ask where, then write. Takes no argument on purpose: QAction's
        ``triggered(bool checked)`` would otherwise arrive as the path."""
        from pathlib import Path

        from gpuselect.fsutil import written_by_gpuselect
        from gpuselect.gui import dialogs

        refusal = self._refusal()
        if refusal:  # before the file dialog and the replace prompt, not after them
            self._export_failed(refusal)
            self._watch_wait(refusal)
            return
        chosen: list[str] = []
        path = dialogs.save_file_name(self, "Export report", "gpuselect-report.pdf", EXPORT_FILTERS, chosen=chosen)
        if not path:
            return
        path = export_path(path, chosen[0] if chosen else "")
        force = False
        if Path(path).is_file():
            ours = written_by_gpuselect(Path(path))
            question = (
                f"{path} exists. Replace it?"
                if ours
                else f"{path} exists and was not written by gpuselect: replacing it loses what it holds. Replace it?"
            )
            box = self._ask_replace(question, ours)
            box.exec()
            answer = box.standardButton(box.clickedButton())
            box.deleteLater()
            if answer != QMessageBox.StandardButton.Yes:
                return
            force = not ours
        self.export_to(path, force=force)

    def _ask_replace(self, question: str, ours: bool) -> QMessageBox:
        """The replace prompt. Enter means Yes for gpuselect's own report (written again, as the
        CLI does without asking) and No for any other file: replacing that loses what it holds."""
        yes, no = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No
        box = QMessageBox(QMessageBox.Icon.Question, "Replace the file?", question, yes | no, self)
        box.setDefaultButton(yes if ours else no)
        return box

    def _refusal(self) -> str | None:
        """Why the report cannot be written now, in one sentence (None: it can): wait for work under
        way, or fix an input the page cannot estimate."""
        busy = self.estimate.busy_reason()
        if busy:
            return busy
        stale = self.estimate.stale_reason()
        if stale:  # the report would be the last valid input's, silently
            return f"{stale}; fix the input, or choose a workload that can be estimated"
        return None

    def export_to(self, path: str, *, force: bool = False) -> None:
        """Build the report from what the pages hold (hardware, last benchmark, current estimate)
        and write it in a worker; the same builder and the same guard as `gpuselect report` (a file
        gpuselect did not write is replaced only with ``force``)."""
        from gpuselect.gui.workers import GeneratorWorker, call_in_generator

        refusal = self._refusal()  # asked again: a benchmark may have started while the dialog was open
        if refusal:
            self._export_failed(refusal)
            self._watch_wait(refusal)
            return
        snapshot, bench, result = self.snapshot, self.bench.report, self.estimate.result
        settings = self.settings_page.settings

        def work() -> str:
            # The same workflow as `gpuselect report` (gpuselect.app): settings decide redaction and currency.
            from pathlib import Path

            from gpuselect.app.machine import this_machine
            from gpuselect.app.workflows import build_machine_report
            from gpuselect.fsutil import check_output
            from gpuselect.report.writers import write

            check_output(path, force=force)
            machine = this_machine(snapshot=snapshot, bench=bench)
            fmt = {".md": "md", ".json": "json"}.get(Path(path).suffix.lower(), "pdf")
            return str(write(build_machine_report(machine, result, settings=settings), path, fmt))

        worker = GeneratorWorker(call_in_generator(work), self)
        worker.finished.connect(lambda p: self.statusBar().showMessage(f"Report written to {p}", 10_000))
        worker.failed.connect(self._export_failed)
        self._export_worker = worker
        self.statusBar().showMessage("Writing the report…")
        worker.start()

    def _watch_wait(self, refusal: str) -> None:
        """A "wait for it to finish" refusal leaves the status bar once the work has ended: it stayed
        30 s, "a benchmark is running" under the page's "Done in 9.8 s" (QA 17f)."""
        if refusal != self.estimate.busy_reason():
            return  # an input to fix: true until the user fixes it
        shown = f"The report could not be written: {refusal}"
        timer = QTimer(self)
        timer.setInterval(250)

        def check() -> None:
            if self.estimate.busy_reason() is None:
                timer.stop()
                timer.deleteLater()
                if self.statusBar().currentMessage() == shown:
                    self.statusBar().showMessage("Finished: File > Export report writes it now", 10_000)

        timer.timeout.connect(check)
        timer.start()

    @Slot(str)
    def _export_failed(self, message: str) -> None:
        # Window-modal but not blocking (open(), not exec()): the event loop and the workers go on.
        text = f"The report could not be written: {message}"
        self.statusBar().showMessage(text, 30_000)
        box = QMessageBox(QMessageBox.Icon.Warning, "Export failed", text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    # The hardware page's detected machine also anchors "your machine" in the estimates.
    @Slot(object)
    def _on_detected(self, snapshot: object) -> None:
        self.snapshot = snapshot
        self.bench.set_snapshot(snapshot)
        self.estimate.local_snapshot = snapshot
        self.estimate.recompute()

    def _restore(self) -> None:
        s = self.settings
        # A damaged window.ini is ignored, value by value: "tab=abc" or "geometry=garbage" stopped
        # the app from starting (exit 70).
        geometry = s.value("window/geometry")
        if isinstance(geometry, (bytes, bytearray, QByteArray)):
            self.restoreGeometry(QByteArray(geometry))
        tab: Any = s.value("window/tab", 0)  # QSettings values are untyped: an int, or its text
        try:
            index = int(tab or 0)
        except (TypeError, ValueError, OverflowError):
            index = 0
        self.tabs.setCurrentIndex(index if 0 <= index < self.tabs.count() else 0)
        theme = str(s.value("window/theme", "system"))
        self.set_theme(theme if theme in self.theme_actions else "system", save=False)
        s.beginGroup("estimate")
        self.estimate.restore_inputs({key: s.value(key) for key in s.childKeys()})
        s.endGroup()

    def set_theme(self, name: str, save: bool = True) -> None:
        """Light, dark or the system's colours, now; the charts follow (changeEvent below)."""
        from gpuselect.gui.theme import apply_theme_name

        apply_theme_name(name)
        self.theme_actions[name].setChecked(True)
        if save:
            self.settings.setValue("window/theme", name)

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/tab", self.tabs.currentIndex())
        s.remove("estimate")  # a typed deadline set back to the default is no longer kept
        for key, value in self.estimate.inputs().items():
            s.setValue(f"estimate/{key}", value)
        s.sync()

    def changeEvent(self, event: QEvent) -> None:
        # The system switched light/dark (or the palette changed): re-theme the plots too.
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            import pyqtgraph as pg

            from gpuselect.gui.plots import apply_theme

            for plot in self.findChildren(pg.PlotWidget):
                apply_theme(plot)
        super().changeEvent(event)

    def wait_for_workers(self, msecs: int = 10_000) -> bool:
        """True when no pooled job (detection, telemetry) and no worker thread is running."""
        from gpuselect.gui.workers import live_workers

        return QThreadPool.globalInstance().waitForDone(msecs) and not live_workers()

    def quit_question(self) -> str | None:
        """What quitting now would throw away, as a question; None when nothing is under way."""
        if self.bench.worker is not None:
            return "A benchmark is running — quit anyway?"
        if self.estimate.busy_reason():  # a benchmark is asked about above: this is the model file
            return "The model file is being measured — quit anyway?"
        return None

    def _ask_quit(self, question: str) -> bool:
        """The quit prompt; No is the default (Enter, Escape): a long benchmark is not lost to a
        stray Ctrl+Q. Tests answer it by patching this method or clicking the box."""
        yes, no = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No
        box = QMessageBox(QMessageBox.Icon.Question, "Quit gpuselect?", question, yes | no, self)
        box.setInformativeText("Quitting stops it, and what it measured so far is not kept.")
        box.setDefaultButton(no)
        box.setEscapeButton(no)
        self._quit_box = box  # Ctrl+C while it is open answers it Yes (close_without_asking)
        # The work goes on under the prompt: once it ends, "is running ... not kept" is no longer
        # true (QA 16c: it stayed up under "Done in 7.3 s"), so the prompt says so.
        watch = QTimer(box)
        watch.setInterval(100)

        def work_ended() -> None:
            if self.quit_question() is None:
                watch.stop()
                what = "The benchmark" if question.startswith("A benchmark") else "The measurement"
                box.setText(f"{what} has finished — quit now?")
                box.setInformativeText(
                    "Nothing is running any more. Its results are not kept after quitting: "
                    "File > Export report keeps them."
                )

        watch.timeout.connect(work_ended)
        watch.start()
        try:
            box.exec()
        finally:
            watch.stop()
            self._quit_box = None
        clicked = box.clickedButton()
        answer = box.standardButton(clicked) if clicked is not None else None
        box.deleteLater()
        return answer == yes or self._quit_without_asking

    def close_without_asking(self) -> None:
        """Close as Quit does, without the prompt (Ctrl+C in the terminal, ``--quit-after``). With the
        quit prompt open, a second close inside the first is ignored by Qt: the prompt is answered
        Yes, and the first close goes on (review 14: Ctrl+C there did nothing)."""
        self._quit_without_asking = True
        box = self._quit_box
        if box is not None:
            box.done(int(QMessageBox.StandardButton.Yes))
            return
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        from gpuselect.gui.workers import CLOSING_PROPERTY, shutdown_all

        if not self.property(CLOSING_PROPERTY) and not self._quit_without_asking:
            question = self.quit_question()
            if question is not None and not self._ask_quit(question):
                event.ignore()  # the window stays, the work goes on
                return
        # No new work from here on: pending debounce timers stop, and a worker a late slot tries
        # to start (an estimate "once more") does not start.
        self.setProperty(CLOSING_PROPERTY, True)
        for timer in self.findChildren(QTimer):
            timer.stop()
        self.save_settings()
        self.hardware.stop()
        self.bench.shutdown()
        self.estimate.shutdown()
        # Every GeneratorWorker (the pages' and the export) registers itself: cancel and wait for
        # all of them, so no QThread is destroyed while running.
        shutdown_all()
        QThreadPool.globalInstance().waitForDone(10_000)
        super().closeEvent(event)


def run_app(quit_after_s: float | None = None) -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    window = MainWindow()
    window.show()
    QTimer.singleShot(0, window.hardware.refresh)
    QTimer.singleShot(0, window.estimate.recompute)
    if quit_after_s is not None:
        QTimer.singleShot(int(quit_after_s * 1000), window.close_without_asking)
    interrupted = _close_on_interrupt(window)
    rc = int(app.exec())
    return 130 if interrupted else rc


def _close_on_interrupt(window: MainWindow) -> list[bool]:
    """Ctrl+C in the launching terminal closes the window as its Quit does (workers awaited) and the
    app exits with 130: it raised KeyboardInterrupt inside whichever Python slot ran (a traceback
    from pyqtgraph's timer) and the app went on. A timer lets Python run its handler while Qt's
    loop waits in C++. The returned list is true once interrupted."""
    import signal
    import threading

    interrupted: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        return interrupted

    def handler(_signum: int, _frame: object) -> None:
        if not interrupted:
            interrupted.append(True)
            QTimer.singleShot(0, window.close_without_asking)

    signal.signal(signal.SIGINT, handler)
    tick = QTimer(window)
    tick.timeout.connect(lambda: None)
    tick.start(200)
    return interrupted
