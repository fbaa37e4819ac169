"""Run the core's long work off the GUI thread.

``GeneratorWorker`` drives a plain generator (the benchmark engine, an estimate) in a QThread:
each yielded event becomes a ``progress`` signal, the generator's return value a ``finished``
signal, an exception a ``failed`` signal with one sentence. Cancelling sets a thread-safe
``threading.Event`` that the generator checks itself — a queued "cancel" slot would never run
while the worker is busy. Threads are stopped with quit() + wait(), never terminate().

Every worker registers itself while its thread runs (``live_workers``), so the window can cancel
and wait for all of them on close (``shutdown_all``) — a QThread destroyed while running aborts
the process.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Generator
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from gpuselect.errors import GpuselectError


class _Runner(QObject):
    progress = Signal(object)
    finished = Signal(object)
    failed = Signal(str)

    def __init__(self, make: Callable[[threading.Event], Generator[Any, None, Any]], cancel: threading.Event) -> None:
        super().__init__()
        self._make = make
        self._cancel = cancel

    @Slot()
    def run(self) -> None:
        try:
            gen = self._make(self._cancel)
            while True:
                try:
                    event = next(gen)
                except StopIteration as stop:
                    self.finished.emit(stop.value)
                    return
                self.progress.emit(event)
        except GpuselectError as exc:
            self.failed.emit(str(exc))
        except Exception as exc:  # noqa: BLE001 - shown in the window, never a crash
            traceback.print_exc()
            self.failed.emit(f"{type(exc).__name__}: {exc}")


_LIVE: list[GeneratorWorker] = []  # started and not yet seen finished; touched on the GUI thread only


def live_workers() -> list[GeneratorWorker]:
    """The workers whose thread is still running (pruning the finished ones)."""
    _LIVE[:] = [w for w in _LIVE if w._thread.isRunning()]
    return list(_LIVE)


def shutdown_all(timeout_ms: int = 60_000) -> bool:
    """Cancel every live worker, then wait for each thread (window closing). Work that cannot be
    cancelled mid-way (writing a report) is allowed to finish. False if one is still running."""
    workers = live_workers()
    for w in workers:
        w.cancel_flag.set()
    ok = True
    for w in workers:
        if not w.shutdown(timeout_ms):
            print(f"gpuselect: a worker thread did not stop within {timeout_ms / 1000:.0f} s", file=sys.stderr)
            ok = False
    live_workers()
    return ok


_GC: object | None = None


def collect_garbage_on_gui_thread() -> None:
    """Python's cyclic garbage collector runs in whichever thread allocates when a threshold is
    reached; if that is a worker and the garbage holds Qt wrappers, their destructors run off the
    GUI thread and both threads stall (seen: the estimate worker and the GUI thread idle forever).
    pyqtgraph's GarbageCollector turns automatic collection off and collects on a GUI-thread timer."""
    global _GC
    import gc

    if _GC is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        _GC = GarbageCollector(interval=1.0)
    gc.disable()


CLOSING_PROPERTY = "gpuselect_closing"  # set on a window whose closeEvent has shut its workers down


def _owner_closing(obj: QObject) -> bool:
    o: QObject | None = obj.parent()
    while o is not None:
        if o.property(CLOSING_PROPERTY):
            return True
        o = o.parent()
    return False


class GeneratorWorker(QObject):
    """One run of a generator in its own thread. Create a new worker for each run."""

    progress = Signal(object)
    finished = Signal(object)
    failed = Signal(str)

    def __init__(
        self, make: Callable[[threading.Event], Generator[Any, None, Any]], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.cancel_flag = threading.Event()
        self._thread = QThread()
        self._runner = _Runner(make, self.cancel_flag)
        self._runner.moveToThread(self._thread)
        self._thread.started.connect(self._runner.run)
        # Signals cross threads queued: the slots below run on the GUI thread.
        self._runner.progress.connect(self.progress)
        self._runner.finished.connect(self._on_finished)
        self._runner.failed.connect(self._on_failed)
        self.done = False

    def start(self) -> None:
        collect_garbage_on_gui_thread()
        if _owner_closing(self):
            # Work queued by a slot that ran after the window closed (a debounce, "recompute
            # once more"): never start a thread nobody will wait for.
            self.done = True
            return
        live_workers()  # prune finished ones
        _LIVE.append(self)  # the registry also keeps the Python objects (and the QThread) alive
        self._thread.start()

    def cancel(self) -> None:
        self.cancel_flag.set()

    @Slot(object)
    def _on_finished(self, value: object) -> None:
        self._stop()
        self.finished.emit(value)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._stop()
        self.failed.emit(message)

    def _stop(self) -> None:
        self.done = True
        self._thread.quit()
        self._thread.wait()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel and wait for the thread (window closing)."""
        self.cancel_flag.set()
        self._thread.quit()
        return bool(self._thread.wait(timeout_ms))


def call_in_generator(fn: Callable[[], Any]) -> Callable[[threading.Event], Generator[Any, None, Any]]:
    """Wrap a plain function as a one-step generator for ``GeneratorWorker``."""

    def make(_cancel: threading.Event) -> Generator[Any, None, Any]:
        result = fn()
        yield from ()  # makes this a generator that yields nothing
        return result

    return make
