"""Hardware page on simulated machines: the per-GPU table with health badges, findings grouped by
severity, the live monitor (one NVML session, per-GPU colours, a legend, one unit per chart), and
light/dark switching that re-themes every chart."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

from gpuselect.gui.app import MainWindow
from tests.fakes import fake_nvml as F


def _window(qtbot, monkeypatch: pytest.MonkeyPatch, fake: F.FakeNVML) -> MainWindow:
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    w.hardware.refresh()
    qtbot.waitUntil(lambda: w.hardware._snapshot is not None, timeout=15_000)
    return w


def _close(qtbot, w: MainWindow) -> None:
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=20_000)


def _column(w: MainWindow, header: str) -> list[object]:
    m = w.hardware.gpus
    col = next(c for c in range(m.columnCount()) if m.headerData(c, Qt.Orientation.Horizontal) == header)
    return [m.index(r, col).data() for r in range(m.rowCount())]


def test_eight_gpus_table_badges_and_monitor(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = F.h100x8(animate=True)
    w = _window(qtbot, monkeypatch, fake)
    page = w.hardware
    assert page.gpus.rowCount() == 8 and not page.gpu_table.isHidden()
    badges = _column(w, "Health")
    assert badges[3] == "WARNING" and badges[7] == "OK" and "CRITICAL" not in badges  # busy, not broken
    assert page.gpus.index(3, 0).data(Qt.ItemDataRole.DecorationRole) is not None  # icon and word
    assert "another job" in page.gpus.index(3, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert page.gpus.index(3, 2).data(Qt.ItemDataRole.UserRole) == pytest.approx(0.75)  # the memory bar
    assert page.gpus.index(3, 2).data() == "60.0 / 80.0 GiB"
    assert _column(w, "PCIe link")[0] == "Gen5 x16" and _column(w, "Power / cap")[0].endswith("/ 700 W")
    # The monitor: one session for many samples, 8 curves per chart in 8 colours, a legend.
    page.set_monitor_interval(20)
    qtbot.waitUntil(lambda: page.telemetry_updates >= 5, timeout=20_000)
    assert fake.calls.count("nvmlInit") == 2  # detection's own, and the monitor's one session
    assert len(page._curves) == 32
    for key in page.plots:
        colours = {c.opts["pen"].color().name() for k, c in page._curves.items() if k.endswith(key)}
        assert len(colours) == 8, key
    assert all(f"gpu{i}" in page.legend.text() for i in range(8))
    units = [page.plots[k].getAxis("left").labelText for k in page.plots]
    assert units == ["%", "°C", "W", "MHz"]
    # The live readings reach the table.
    assert _column(w, "Util")[0] != "—"
    _close(qtbot, w)
    assert fake.initialised == 0  # the monitor's session was shut down at close


def test_findings_grouped_worst_first_with_passed_folded(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, monkeypatch, F.a100x2_ecc())
    page = w.hardware
    groups = page.findings_groups()
    assert next(iter(groups)) == "critical" and groups["critical"] == (1, True)
    assert groups["ok"][1] is False and groups["ok"][0] > 5  # passed checks folded away
    assert _column(w, "Health") == ["OK", "CRITICAL"] and _column(w, "ECC")[1] == "on, 3 uncorrectable"
    # Remedies are shown in full: the row grows to fit the wrapped text.
    tree = page.findings_tree
    warn = tree.topLevelItem(1)
    long_row = max((warn.child(i) for i in range(warn.childCount())), key=lambda it: len(it.text(3)))
    tree.setColumnWidth(3, 300)
    tree.doItemsLayout()
    line = tree.fontMetrics().height()
    assert tree.visualItemRect(long_row).height() >= 2 * line, long_row.text(3)
    _close(qtbot, w)


def test_no_gpu_hides_the_table_and_the_monitor(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    w = _window(qtbot, monkeypatch, F.FakeNVML(init_error=F.INIT_FAILURES["library_not_found"]))
    page = w.hardware
    assert page.gpu_table.isHidden() and page.monitor.isHidden()
    assert page.status.text().startswith("No GPU found")
    assert "no_gpu" in str(page.findings_groups()) or page.findings_tree.topLevelItemCount() > 0
    _close(qtbot, w)


def test_theme_switch_rethemes_every_chart_and_its_labels(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyqtgraph as pg
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    w = _window(qtbot, monkeypatch, F.rtx3090())
    page = w.hardware
    page.set_monitor_interval(20)
    qtbot.waitUntil(lambda: page.telemetry_updates >= 2, timeout=20_000)
    w.bench.batch_plot.plot([1, 2], [3, 4], name="cpu simple_cnn")  # a legend entry to re-theme
    try:
        for theme in ("dark", "light", "dark"):
            w.set_theme(theme)
            qtbot.wait(50)
            pal = QApplication.instance().palette()
            bg, fg = pal.color(QPalette.ColorRole.Base).name(), pal.color(QPalette.ColorRole.Text).name()
            assert (bg < "#808080") == (theme == "dark")
            plots = w.findChildren(pg.PlotWidget)
            assert len(plots) >= 6
            for plot in plots:
                item = plot.getPlotItem()
                assert plot.backgroundBrush().color().name() == bg
                for axis in ("left", "bottom"):
                    assert item.getAxis(axis).textPen().color().name() == fg
                    assert item.getAxis(axis).labelStyle.get("color") == fg
                if item.titleLabel.text:
                    assert (
                        item.titleLabel.opts["color"] in (fg, pg.mkColor(fg))
                        or pg.mkColor(item.titleLabel.opts["color"]).name() == fg
                    )
                if item.legend is not None:
                    for _s, label in item.legend.items:
                        assert pg.mkColor(label.opts["color"]).name() == fg
    finally:
        w.set_theme("system")
    _close(qtbot, w)


def test_monitor_failure_is_said_in_the_window(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = F.rtx3090()
    w = _window(qtbot, monkeypatch, fake)
    page = w.hardware
    page._stop_monitor()
    fake.init_error = F.INIT_FAILURES["driver_not_loaded"]  # the driver went away after detection
    page._timer.start()
    page.set_monitor_interval(20)
    qtbot.waitUntil(lambda: "unavailable" in page.legend.text(), timeout=10_000)
    assert "not loaded" in page.legend.text()
    _close(qtbot, w)


def test_a_remedy_names_the_window_s_tabs_not_commands() -> None:
    from gpuselect.gui.wording import in_the_app

    assert in_the_app("run `gpuselect estimate` to see whether your workload needs a GPU at all") == (
        "use the Estimate tab to see whether your workload needs a GPU at all"
    )


def test_the_benchmark_s_busy_warning_joins_the_health_count(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    """QA 15: the report counted the benchmark's "busy machine" warning in this machine's health,
    the Hardware page's count left it out; a new run without it takes it back out."""
    import dataclasses
    from pathlib import Path

    from gpuselect.app.machine import load_bench

    w = _window(qtbot, monkeypatch, F.h100x8(animate=True))
    page = w.hardware
    before = page._report.counts.get("warning", 0)
    bench = load_bench(Path(__file__).resolve().parents[2] / "docs/validation/cpu-xeon-2026-11-25/bench-cpu.json")
    snap = page._snapshot
    cpu = dataclasses.replace(bench.devices[0], name=snap.cpu.model or "cpu", logical_cores=snap.cpu.logical_cores)
    busy = dataclasses.replace(bench, devices=[cpu], other_cpu_share=0.55)
    page.set_monitor_interval(20)
    qtbot.waitUntil(lambda: page.telemetry_updates >= 1, timeout=20_000)
    page.set_monitor_interval(60_000)  # no reading between the two looks below
    live = [_column(w, h) for h in ("Util", "Temp", "Power / cap")]
    page.details.setCurrentWidget(page.summary)
    w.bench.report_ready.emit(busy)  # as the Benchmark page announces a finished run
    assert [_column(w, h) for h in ("Util", "Temp", "Power / cap")] == live  # not detection's older figures
    assert page.details.currentWidget() is page.summary  # the user's view stays
    assert page._report.counts.get("warning", 0) == before + 1
    assert any(f.id == "bench.busy_machine" for f in page._report.findings)
    assert f"{before + 1} warning" in page.status.text()
    w.bench.report_ready.emit(dataclasses.replace(busy, other_cpu_share=0.01))
    assert page._report.counts.get("warning", 0) == before
    _close(qtbot, w)


def test_eight_gpus_on_a_1024x640_window_leave_the_tables_room(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 1024x640 the live charts took 60 % of the page: 1.5 of the 8 GPU rows were on view and
    the first finding was cut in two (QA 17f, screenshot 59)."""
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: F.h100x8())
    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1024, 640)
    w.hardware.refresh()  # detection done before the page is first laid out (the app, a fast machine)
    qtbot.waitUntil(lambda: w.hardware._snapshot is not None, timeout=15_000)
    w.show()
    qtbot.waitExposed(w)
    qtbot.wait(100)
    page = w.hardware
    assert page.monitor.isVisible()
    row = page.gpu_table.rowHeight(0)
    assert page.gpu_table.viewport().height() >= 4 * row  # half the GPUs at least, not one and a half
    assert page.findings_tree.viewport().height() >= 3 * page.fontMetrics().lineSpacing()
    _close(qtbot, w)
