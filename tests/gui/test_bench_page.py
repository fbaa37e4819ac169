"""Benchmark page: a GPU torch cannot use is said plainly; charts with nothing to show are hidden."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")

from gpuselect.bench.model import BenchConfig
from gpuselect.gui.app import MainWindow
from gpuselect.gui.pages.bench import BenchPage, torch_gpu_notice
from gpuselect.hardware.snapshot import detect
from tests.fakes import fake_nvml as F


def _endless(_cfg: BenchConfig, cancel: threading.Event):  # type: ignore[no-untyped-def]
    """A benchmark that runs until it is cancelled."""
    from gpuselect.bench.model import BenchReport, ProgressEvent

    yield ProgressEvent(step="cpu: matmul fp32", fraction=0.1, elapsed_s=0.1, eta_s=30.0)
    while not cancel.wait(0.02):
        pass
    return BenchReport(devices=[], quick=False, torch_version="x", cancelled=True)


def test_notice_when_torch_cannot_use_the_gpu() -> None:
    snap = detect(nvml=F.rtx3090(), probe=False)
    snap.torch.cpu_only_build, snap.torch.version = True, "2.13.0+cpu"
    text = torch_gpu_notice(snap)
    assert text and "GeForce RTX 3090" in text and "CPU-only build" in text and "CPU only" in text
    snap.torch.cpu_only_build, snap.torch.built_cuda = False, "12.8"
    assert torch_gpu_notice(snap) is None  # a CUDA build: nothing to say before a run
    snap.torch.installed = False
    assert "not installed" in (torch_gpu_notice(snap) or "")
    none = detect(nvml=F.FakeNVML(init_error=F.INIT_FAILURES["library_not_found"]), probe=False)
    assert torch_gpu_notice(none) is None  # no GPU: the CPU benchmark is all there is


def test_window_shows_the_notice_for_a_detected_gpu(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: F.rtx3090())
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.hardware.refresh()
    qtbot.waitUntil(lambda: w.bench.snapshot is not None, timeout=15_000)
    if w.bench.snapshot.torch is not None and w.bench.snapshot.torch.cpu_only_build:  # the CPU-only dev venv
        assert not w.bench.notice.isHidden() and "RTX 3090" in w.bench.notice.text()
    assert w.bench.plots.isHidden()  # no run yet: no empty charts
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=20_000)


def test_charts_without_data_stay_hidden_after_a_cpu_run(qtbot) -> None:
    tiny = BenchConfig(quick=True, devices=("cpu",), budget_s=0.03, batch_sizes=(1, 4), models=("simple_cnn",))
    page = BenchPage(config=tiny)
    qtbot.addWidget(page)
    page.show()
    page.start()
    qtbot.waitUntil(lambda: page.report is not None, timeout=60_000)
    has_spec = any(d.spec_ratio for d in page.report.devices)
    assert page.spec_plot.isHidden() is (not has_spec)  # the CPU has no catalogue spec: no empty bar chart
    has_steps = any(d.train_steps for d in page.report.devices)
    assert page.batch_plot.isHidden() is (not has_steps)
    assert page.plots.isHidden() is (not (has_spec or has_steps))


def test_a_cancelled_run_does_not_replace_the_last_complete_one_for_the_estimates(qtbot) -> None:
    """A cancel re-anchored the estimates on the partial run (the CPU's range went from 153-618 to
    32-14,601 days)."""
    import dataclasses

    tiny = BenchConfig(quick=True, devices=("cpu",), budget_s=0.03, batch_sizes=(1,), models=("simple_cnn",))
    page = BenchPage(config=tiny)
    qtbot.addWidget(page)
    page.start()
    qtbot.waitUntil(lambda: page.report is not None and page.worker is None, timeout=60_000)
    complete = page.report
    assert not complete.cancelled
    got: list[object] = []
    page.report_ready.connect(got.append)
    page._on_finished(dataclasses.replace(complete, cancelled=True))  # what a cancelled run delivers
    assert page.report is complete and got == [complete]
    assert "the estimates keep the last complete run" in page.step.text()


def test_the_batch_chart_s_legend_covers_no_data(qtbot) -> None:
    """QA: the legend sat in the plot's bottom right and hid the points at the largest batch."""
    from types import SimpleNamespace as Ns

    page = BenchPage()
    qtbot.addWidget(page)
    rates = {"lstm": (132, 432, 380), "simple_cnn": (965, 4112, 4869), "transformer": (260, 36, 400)}
    steps = [
        Ns(model=m, batch_size=b, samples_per_s=v)
        for m, vals in rates.items()
        for b, v in zip((1, 16, 128), vals, strict=True)
    ]
    page.resize(1000, 700)
    page.show()
    page._plot(Ns(devices=[Ns(device="cpu", kind="cpu", spec_ratio={}, train_steps=steps)]))
    qtbot.wait(50)
    item = page.batch_plot.getPlotItem()
    assert [label.text for _s, label in item.legend.items] == ["cpu lstm", "cpu simple_cnn", "cpu transformer"]
    legend = item.legend.sceneBoundingRect()
    data = item.getViewBox().sceneBoundingRect()
    assert legend.width() > 50 and legend.left() >= data.right() - 1  # beside the plot area, not on it
    assert page.batch_plot.rect().contains(legend.toRect())  # and on show, not pushed off the widget


def test_each_figure_shows_in_the_table_as_it_is_measured(qtbot) -> None:
    """QA 14c: the table stayed empty for the whole run; every row arrived at 100 %."""
    tiny = BenchConfig(quick=True, devices=("cpu",), budget_s=0.03, batch_sizes=(1, 4), models=("simple_cnn",))
    page = BenchPage(config=tiny)
    qtbot.addWidget(page)
    page.start()
    during: list[list[tuple[str, str]]] = []  # the table's (device, figure) at each event before the end
    page.worker.progress.connect(
        lambda _ev: page.report is None and during.append([(r[0], r[1]) for r in page.model.rows])
    )
    qtbot.waitUntil(lambda: page.report is not None and page.worker is None, timeout=60_000)
    counts = [len(t) for t in during]
    assert counts and counts[0] == 0 and max(counts) > 0, counts  # rows came in during the run
    assert counts == sorted(counts)  # one by one, none taken back
    final = [(r[0], r[1]) for r in page.model.rows]
    assert all(set(t) <= set(final) for t in during)  # rows of the finished table, none made up


def _answer_quit_prompt(qtbot, answer, seen: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Click ``answer`` on the quit prompt once it is up (it runs its own event loop); Enter
    first shows the default, so record it."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    tries = [250]  # 5 s, then give up: no prompt came

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            tries[0] -= 1
            if tries[0] > 0:
                QTimer.singleShot(20, click)
            return
        seen.append(f"{box.text()} [default {box.standardButton(box.defaultButton()).name}]")
        box.button(answer).click()

    QTimer.singleShot(0, click)


def _window_benchmarking(qtbot, monkeypatch: pytest.MonkeyPatch, real_quit_prompt, run=_endless) -> MainWindow:  # type: ignore[no-untyped-def]
    """The main window, shown, with a benchmark running (``run``: one that never ends) and the real
    quit prompt."""
    monkeypatch.setattr("gpuselect.bench.engine.run_benchmark", run)
    monkeypatch.setattr(MainWindow, "_ask_quit", real_quit_prompt)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.bench.start()
    return w


def test_quitting_during_a_benchmark_asks_first_and_no_keeps_it_running(
    qtbot, monkeypatch: pytest.MonkeyPatch, real_quit_prompt
) -> None:
    """QA 14c: Ctrl+Q during a run closed the app and dropped the run without a word."""
    import time

    from PySide6.QtWidgets import QMessageBox

    w = _window_benchmarking(qtbot, monkeypatch, real_quit_prompt)
    seen: list[str] = []
    _answer_quit_prompt(qtbot, QMessageBox.StandardButton.No, seen)
    w.close()  # Ctrl+Q's action calls this
    assert seen == ["A benchmark is running — quit anyway? [default No]"]
    assert w.isVisible() and w.bench.worker is not None  # still open, still measuring
    time.sleep(0.1)
    assert w.bench.worker._thread.isRunning()
    _answer_quit_prompt(qtbot, QMessageBox.StandardButton.Yes, seen)
    w.close()
    assert len(seen) == 2 and not w.isVisible()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=20_000)  # cancelled and awaited


def test_ctrl_c_while_the_quit_prompt_is_open_quits(qtbot, monkeypatch: pytest.MonkeyPatch, real_quit_prompt) -> None:
    """Review 14: Qt ignores a close inside a close, so Ctrl+C (or --quit-after) with the quit
    prompt open did nothing, and the benchmark went on."""

    from PySide6.QtCore import QTimer

    w = _window_benchmarking(qtbot, monkeypatch, real_quit_prompt)
    QTimer.singleShot(200, w.close_without_asking)  # fires inside the prompt's own loop
    w.close()
    assert not w.isVisible()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=20_000)


def test_a_new_run_does_not_show_the_last_run_s_busy_machine_warning(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    """QA 15d: "other processes used 42 % of the CPUs while the benchmark ran: its figures ... are
    likely low" stayed on show at 0 % of the next run, as if said of it."""
    monkeypatch.setattr("gpuselect.bench.engine.run_benchmark", _endless)
    page = BenchPage(config=BenchConfig(quick=True, devices=("cpu",)))
    qtbot.addWidget(page)
    page._show_notice("other processes used 42 % of the CPUs while the benchmark ran")  # as _on_finished shows it
    page.start()
    qtbot.waitUntil(lambda: page.progress.value() > 0, timeout=10_000)
    assert page.notice.isHidden() and "other processes" not in page.notice.text()
    page.cancel()
    qtbot.waitUntil(lambda: page.worker is None, timeout=10_000)


def test_the_quit_prompt_says_so_when_the_benchmark_ends_under_it(
    qtbot, monkeypatch: pytest.MonkeyPatch, real_quit_prompt
) -> None:
    """QA 16c: Ctrl+Q during a quick run asked "A benchmark is running — quit anyway? ... what it
    measured so far is not kept", and kept asking it under "Done in 7.3 s" after the run ended."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    release = threading.Event()

    def _until_released(_cfg: BenchConfig, cancel: threading.Event):  # type: ignore[no-untyped-def]
        from gpuselect.bench.model import BenchReport, ProgressEvent

        yield ProgressEvent(step="cpu: matmul fp32", fraction=0.1, elapsed_s=0.1, eta_s=1.0)
        while not (release.wait(0.02) or cancel.is_set()):
            pass
        return BenchReport(devices=[], quick=True, torch_version="x", cancelled=cancel.is_set())

    w = _window_benchmarking(qtbot, monkeypatch, real_quit_prompt, run=_until_released)
    texts: list[tuple[str, str]] = []
    tries = [500]  # 10 s at most

    def watch() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            if not texts:
                texts.append((box.text(), box.informativeText()))
                release.set()  # the run ends while the prompt is up
            elif w.bench.worker is None and "finished" in box.text():
                texts.append((box.text(), box.informativeText()))
                box.button(QMessageBox.StandardButton.No).click()
                return
        tries[0] -= 1
        if tries[0] > 0:
            QTimer.singleShot(20, watch)
        elif isinstance(box, QMessageBox):
            texts.append((box.text(), box.informativeText()))
            box.button(QMessageBox.StandardButton.No).click()

    QTimer.singleShot(0, watch)
    w.close()
    assert texts[0][0] == "A benchmark is running — quit anyway?"
    assert texts[-1][0] == "The benchmark has finished — quit now?", texts
    assert "not kept" in texts[-1][1] and "Nothing is running" in texts[-1][1]
    assert w.isVisible() and w.bench.worker is None  # No keeps the window and the finished run
