"""The desktop app: every page's main flow, workers (progress, cancel, error), table models,
settings persistence, and a smoke test of the real entry point."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from PySide6.QtCore import Qt

from gpuselect.bench.model import BenchConfig
from gpuselect.gui.app import MainWindow
from gpuselect.gui.models import FindingsModel, RowsModel
from gpuselect.gui.pages.bench import BenchPage
from gpuselect.gui.pages.estimate import EstimatePage, pareto
from gpuselect.gui.workers import GeneratorWorker, call_in_generator
from tests.conftest import REPO_ROOT
from tests.fakes import fake_nvml as F


def _close(qtbot, w) -> None:
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


def test_hardware_page_shows_gpus_and_findings(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = F.thermal_throttling()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    assert w.windowTitle() == "gpuselect"
    w.hardware.refresh()
    qtbot.waitUntil(lambda: w.hardware.gpus.rowCount() > 0, timeout=10_000)
    assert "NVIDIA H100 80GB HBM3" in w.hardware.summary.toPlainText()
    badge = w.hardware.gpus.index(0, 0)
    assert badge.data() == "CRITICAL"  # the GPU's worst finding, in words
    assert badge.data(Qt.ItemDataRole.DecorationRole) is not None  # and an icon, not colour alone
    tree = w.hardware.findings_tree
    first = tree.topLevelItem(0)
    assert first.text(0).startswith("Critical (") and first.isExpanded()  # worst group first
    assert not first.icon(0).isNull()
    assert "critical" in w.hardware.status.text()
    _close(qtbot, w)


def test_detection_error_shows_in_window(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**_: object) -> None:
        raise RuntimeError("psutil exploded")

    monkeypatch.setattr("gpuselect.hardware.snapshot.detect", broken)
    w = MainWindow()
    qtbot.addWidget(w)
    w.hardware.refresh()
    qtbot.waitUntil(lambda: "Detection failed" in w.hardware.status.text(), timeout=10_000)
    assert "psutil exploded" in w.hardware.status.text()
    _close(qtbot, w)


def test_worker_reports_progress_and_result(qtbot) -> None:
    def make(cancel: threading.Event):
        yield from range(3)
        return "done"

    worker = GeneratorWorker(make)
    seen: list[object] = []
    worker.progress.connect(seen.append)
    with qtbot.waitSignal(worker.finished, timeout=5_000) as blocker:
        worker.start()
    assert blocker.args == ["done"] and seen == [0, 1, 2] and worker.done


def test_worker_cancel_is_a_thread_safe_flag(qtbot) -> None:
    def make(cancel: threading.Event):
        n = 0
        while not cancel.is_set():
            n += 1
            time.sleep(0.01)
            yield n
        return "cancelled"

    worker = GeneratorWorker(make)
    worker.progress.connect(lambda n: worker.cancel() if n == 5 else None)
    with qtbot.waitSignal(worker.finished, timeout=5_000) as blocker:
        worker.start()
    assert blocker.args == ["cancelled"]


def test_worker_error_becomes_a_message(qtbot) -> None:
    def boom():
        raise ValueError("bad input")

    worker = GeneratorWorker(call_in_generator(boom))
    with qtbot.waitSignal(worker.failed, timeout=5_000) as blocker:
        worker.start()
    assert "bad input" in blocker.args[0]


def test_table_models_pass_qt_model_tester(qtmodeltester, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuselect.hardware.snapshot import detect
    from gpuselect.health.rules import evaluate

    findings = FindingsModel()
    findings.set_rows(evaluate(detect(nvml=F.thermal_throttling(), probe=False)).findings)
    qtmodeltester.check(findings)
    from gpuselect.gui.models import Column

    rows = RowsModel([Column("a", lambda r: r[0], numeric=True), Column("b", lambda r: r[1])])
    rows.set_rows([(1, "x"), (None, "y")])
    qtmodeltester.check(rows)


def test_bench_page_runs_and_cancels(qtbot) -> None:
    tiny = BenchConfig(quick=True, devices=("cpu",), budget_s=0.03, batch_sizes=(1, 4), models=("simple_cnn",))
    page = BenchPage(config=tiny)
    qtbot.addWidget(page)
    page.start()
    assert not page.start_button.isEnabled() and page.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: page.report is not None, timeout=60_000)
    assert page.model.rowCount() > 3 and page.progress.value() == 1000 and page.start_button.isEnabled()
    assert "Done" in page.step.text()
    # What was not measured is listed with its reason (the CPU has no TF32).
    notes = {page.model.index(i, 1).data(): page.model.index(i, 5).data() for i in range(page.model.rowCount())}
    assert notes["matmul tf32"].startswith("not measured: TF32")
    page.report = None
    page.config = BenchConfig(quick=False, devices=("cpu",))
    page.start()
    qtbot.waitUntil(lambda: page.progress.value() > 0 or "cpu" in page.step.text(), timeout=60_000)
    page.cancel()
    qtbot.waitUntil(lambda: page.report is not None, timeout=10_000)
    assert page.report.cancelled and "Cancelled" in page.step.text()


def test_estimate_page_updates_and_filters(qtbot) -> None:
    page = EstimatePage()
    qtbot.addWidget(page)
    page.recompute()
    qtbot.waitUntil(lambda: page.result is not None, timeout=20_000)
    assert page.proxy.rowCount() > 50 and "Stage" in page.recommendation.text()
    page.family.setCurrentText("instinct")
    fam = {page.proxy.index(i, 1).data() for i in range(page.proxy.rowCount())}
    assert fam == {"instinct"}
    first = page.result
    page.deadline.setValue(1.0)  # a change schedules a recompute off the GUI thread
    qtbot.waitUntil(lambda: page.result is not first, timeout=20_000)
    assert page.result.assumptions.deadline_hours == 1.0
    page.search.setText("llama")
    visible = [page.presets.item(i) for i in range(page.presets.count()) if not page.presets.item(i).isHidden()]
    assert visible and all("Llama" in it.text() for it in visible)
    page.shutdown()


def test_pareto_front() -> None:
    pts = [(1.0, 100.0, "a"), (2.0, 50.0, "b"), (3.0, 60.0, "c"), (4.0, 10.0, "d")]
    assert [p[2] for p in pareto(pts)] == ["a", "b", "d"]


def test_settings_persist_between_runs(qtbot) -> None:
    w = MainWindow()
    qtbot.addWidget(w)
    w.settings_page.deadline.setValue(12.5)
    w.settings_page.symbol.setText("€")
    w.settings_page.rate.setValue(0.5)
    w.settings_page.save()  # domain settings: a file under the config folder
    assert w.estimate.deadline.value() == 12.5
    w.estimate.precision.setCurrentText("fp16")
    w.tabs.setCurrentIndex(2)  # window state: QSettings
    _close(qtbot, w)
    again = MainWindow()
    qtbot.addWidget(again)
    assert again.estimate.deadline.value() == 12.5
    assert again.settings_page.symbol.text() == "€"
    assert again.estimate.precision.currentText() == "fp16"
    assert again.tabs.currentIndex() == 2
    assert again.estimate.money(100.0) == "€50"
    _close(qtbot, again)


def test_corrupt_settings_file_shows_a_message(qtbot) -> None:
    from gpuselect.settings import settings_path

    p = settings_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("{ broken")
    w = MainWindow()
    qtbot.addWidget(w)
    assert "not valid JSON" in w.settings_page.status.text()
    assert p.read_text() == "{ broken"
    _close(qtbot, w)


def _catalog_page_with_overlay(qtbot, text: str):  # type: ignore[no-untyped-def]
    """A Catalog page over the built-in catalog and a user overlay of ``text``."""
    from gpuselect.catalog import _cached_default, overlay_path
    from gpuselect.gui.pages.catalog import CatalogPage

    overlay = overlay_path()
    overlay.parent.mkdir(parents=True, exist_ok=True)
    overlay.write_text(text)
    _cached_default.cache_clear()
    try:
        page = CatalogPage()
    finally:
        _cached_default.cache_clear()  # the next test's catalog is the built-in one again
    qtbot.addWidget(page)
    return page


def test_catalog_page_filters_and_shows_sources(qtbot) -> None:
    w = MainWindow()
    qtbot.addWidget(w)
    page = w.catalog
    assert page.proxy.rowCount() >= 130
    page.family.setCurrentText("datacenter")
    page.search.setText("h100")
    names = {page.proxy.index(i, 0).data() for i in range(page.proxy.rowCount())}
    assert names and all("H100" in n for n in names)
    page.table.setCurrentIndex(page.proxy.index(0, 0))
    assert "core:" in page.details.toPlainText() and "http" in page.details.toPlainText()
    page.search.setText("radeon")  # hides the selected H100: its sources stayed on show
    assert "H100" not in page.details.toPlainText()
    page.open_overlay.click()  # no file manager here: the path is shown, not nothing
    assert str(page.overlay) in page.details.toPlainText()
    _close(qtbot, w)


def test_catalog_prices_follow_the_currency_and_keep_the_selection(qtbot) -> None:
    """QA 16c: the Catalog page showed US$ ("Launch $") beside the Estimate page's euros."""
    from gpuselect.settings import Settings, save

    save(Settings(currency_symbol="€", usd_to_currency=0.5))
    w = MainWindow()
    qtbot.addWidget(w)
    page = w.catalog
    page.search.setText("h100 sxm5")
    cols = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())]
    price, cloud = cols.index("Price"), cols.index("Cloud /h")
    e = page.model.rows[page.proxy.mapToSource(page.proxy.index(0, 0)).row()]
    assert e.price_usd and e.cloud_usd_per_hour
    assert page.proxy.index(0, price).data() == f"€{0.5 * e.price_usd:,.0f}"
    assert page.proxy.index(0, cloud).data() == f"€{0.5 * e.cloud_usd_per_hour:,.2f}"
    page.table.setCurrentIndex(page.proxy.index(0, 0))
    page.apply_settings(Settings(currency_symbol="£", usd_to_currency=2.0))
    assert page.proxy.index(0, cloud).data() == f"£{2.0 * e.cloud_usd_per_hour:,.2f}"
    assert page.table.selectionModel().currentIndex().isValid()  # a reset dropped the selection
    _close(qtbot, w)


def test_catalog_price_is_the_one_the_estimates_buy_at(qtbot) -> None:
    """Review 17: the Price column said "launch price, or the street price your overlay sets" and
    showed the launch price beside an overlay's street price, which the estimates buy at."""
    from gpuselect.settings import Settings

    page = _catalog_page_with_overlay(
        qtbot, '[[gpu]]\nid = "nvidia-rtx-3090"\nstreet_price_usd = 700\nstreet_price_date = "2026-11"\n'
    )
    page.apply_settings(Settings(currency_symbol="€", usd_to_currency=0.5))
    page.search.setText("nvidia-rtx-3090")
    cols = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())]
    shown = {
        page.model.rows[page.proxy.mapToSource(page.proxy.index(i, 0)).row()].id: page.proxy.index(
            i, cols.index("Price")
        ).data()
        for i in range(page.proxy.rowCount())
    }
    e = page.catalog.get("nvidia-rtx-3090")
    assert e is not None and e.launch_price_usd and e.launch_price_usd != 700
    assert shown["nvidia-rtx-3090"] == "€350"


def test_catalog_overlay_problems_stay_on_show_while_filtering(qtbot) -> None:
    """QA: the overlay's problems were in the details pane, and the first filter or selection
    replaced them for good."""
    from PySide6.QtWidgets import QLabel, QPlainTextEdit

    from gpuselect.catalog import overlay_path

    page = _catalog_page_with_overlay(qtbot, '[[gpu]]\nid = "rtx-3090"\nvram_gb = "lots"\n')
    overlay = overlay_path()
    page.show()

    def on_show() -> str:
        boxes = [*page.findChildren(QPlainTextEdit), *page.findChildren(QLabel)]
        return "\n".join(b.toPlainText() if isinstance(b, QPlainTextEdit) else b.text() for b in boxes if b.isVisible())

    assert "'vram_gb': must be a number" in on_show()
    page.search.setText("rtx")
    page.table.setCurrentIndex(page.proxy.index(0, 0))
    page.family.setCurrentText("datacenter")
    assert "'vram_gb': must be a number" in on_show() and str(overlay) in on_show()
    # QA 14c: it began "The catalog has 1 problem", and the built-in catalog had none
    first = page.problems.toPlainText().splitlines()[0]
    assert first.startswith(f"Your catalog overlay {overlay} has 1 problem;"), first
    assert "built-in catalog has" not in page.problems.toPlainText()


def test_custom_workload_and_bad_input_message(qtbot) -> None:
    page = EstimatePage()
    qtbot.addWidget(page)
    page.source.setCurrentIndex(3)  # parameters and FLOPs
    page.custom_params.setValue(350.0)
    page.custom_flops.setValue(120.0)
    page.recompute()
    qtbot.waitUntil(lambda: page.result is not None and page.result.workload.id == "custom", timeout=20_000)
    assert page.result.workload.params == 350_000_000
    page.custom_flops.setValue(0.0)  # nonsense: zero FLOPs
    qtbot.waitUntil(lambda: "Cannot estimate" in page.error.text(), timeout=20_000)
    assert "FLOPs per sample" in page.error.text()
    page.shutdown()


def test_entry_point_launches_and_closes(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "gpuselect", "gui", "--quit-after", "2"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_window_construction_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom PySide6.QtWidgets import QApplication\nfrom gpuselect.gui.app import MainWindow\n"
        "app = QApplication([])\nw = MainWindow()\nw.show()\napp.processEvents()\nprint('torch' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr[-1000:]


def test_export_report_from_the_window(qtbot, tmp_path) -> None:
    w = MainWindow()
    qtbot.addWidget(w)
    w.estimate.recompute()
    qtbot.waitUntil(lambda: w.estimate.result is not None, timeout=20_000)
    out = tmp_path / "from-gui.md"
    w.export_to(str(out))
    qtbot.waitUntil(lambda: out.exists(), timeout=20_000)
    text = out.read_text()
    assert "## Estimates" in text and "## Health" in text
    _close(qtbot, w)


def test_plots_follow_a_palette_change(qtbot) -> None:
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QApplication

    w = MainWindow()
    qtbot.addWidget(w)
    app = QApplication.instance()
    old = app.palette()
    dark = QPalette(old)
    dark.setColor(QPalette.ColorRole.Base, QColor(20, 20, 20))
    try:
        app.setPalette(dark)
        qtbot.waitUntil(lambda: w.bench.batch_plot.backgroundBrush().color() == QColor(20, 20, 20), timeout=5_000)
    finally:
        app.setPalette(old)
    _close(qtbot, w)


def test_stage_plot_shows_the_four_stages(qtbot) -> None:
    import pyqtgraph as pg

    page = EstimatePage()
    qtbot.addWidget(page)
    page.recompute()
    qtbot.waitUntil(lambda: page.result is not None, timeout=20_000)
    items = page.stage_plot.getPlotItem().items
    bars = [i for i in items if isinstance(i, pg.BarGraphItem)]
    labels = [i.toPlainText() for i in items if isinstance(i, pg.TextItem)]
    expected = sum(1 for v in page.result.recommendation.per_stage.values() if v and v.get("total_time_h"))
    assert len(bars) == expected >= 2
    assert sum(t.startswith("★") for t in labels) == 1  # the recommended stage
    page.shutdown()


def test_live_monitor_plots_utilisation_temperature_power_and_clocks(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = F.thermal_throttling()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.hardware.refresh()
    qtbot.waitUntil(lambda: w.hardware._timer.isActive(), timeout=10_000)
    w.hardware._sample()
    qtbot.waitUntil(lambda: len(w.hardware._curves) == 4, timeout=10_000)
    figures = sorted(k.rsplit("-", 1)[1] for k in w.hardware._curves)
    assert figures == sorted(["utilization_percent", "temperature_c", "power_draw_w", "sm_clock_mhz"])
    assert not w.hardware.monitor.isHidden()
    # One unit per chart, on its axis.
    assert [
        w.hardware.plots[k].getAxis("left").labelText
        for k in ("utilization_percent", "temperature_c", "power_draw_w", "sm_clock_mhz")
    ] == ["%", "°C", "W", "MHz"]
    _close(qtbot, w)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_in_the_terminal_closes_the_app_with_130(tmp_path) -> None:
    """Ctrl+C printed a KeyboardInterrupt traceback from pyqtgraph's timer and the app went on."""
    import signal
    import time

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "GPUSELECT_CONFIG_DIR": str(tmp_path),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuselect"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(6)  # the window is up (an interrupt before the loop runs is the CLI's own 130)
    proc.send_signal(signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=40)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]


def test_a_corrupt_settings_file_is_said_above_every_page_and_on_stderr(qtbot, capsys) -> None:
    """Only the Settings tab said so; a user on the Estimate tab saw costs revert silently."""
    from gpuselect import notices
    from gpuselect.settings import settings_path

    notices.reset()
    p = settings_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text('{"currency_symbol": "€", "redact_ho')  # truncated
    w = MainWindow()
    qtbot.addWidget(w)
    w.tabs.setCurrentWidget(w.estimate)
    assert not w.banner.isHidden() and "settings" in w.banner.text().lower()
    assert "gpuselect: warning:" in capsys.readouterr().err
    _close(qtbot, w)


def test_the_warnings_banner_clears_when_the_settings_are_saved_and_can_be_dismissed(qtbot) -> None:
    """QA: the banner stayed after the settings were fixed and saved, and had no close button."""
    import json

    from gpuselect import notices
    from gpuselect.settings import settings_path

    notices.reset()
    p = settings_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"grid_kg_co2_per_kwh": -1, "currency_symbol": "€"}))
    w = MainWindow()
    qtbot.addWidget(w)
    assert not w.banner.isHidden() and "grid_kg_co2_per_kwh" in w.banner.text()
    notices.warn("your catalog overlay x.toml has 1 problem")  # not the settings': it stays
    w.show_notices()
    w.settings_page.save()
    assert not w.banner.isHidden() and "grid_kg" not in w.banner.text() and "overlay" in w.banner.text()
    assert json.loads(p.read_text())["grid_kg_co2_per_kwh"] >= 0  # really fixed on disk
    qtbot.mouseClick(w.banner.close_button, Qt.MouseButton.LeftButton)
    assert w.banner.isHidden()
    notices.warn("a later problem")  # a new warning shows again, alone
    w.show_notices()
    assert not w.banner.isHidden() and w.banner.text() == "Warning: A later problem"
    _close(qtbot, w)


def test_the_warnings_banner_counts_the_warnings_it_does_not_show(qtbot) -> None:
    """QA: it showed the last five warnings and said nothing of the others."""
    from gpuselect import notices

    notices.reset()
    w = MainWindow()
    qtbot.addWidget(w)
    for i in range(8):
        notices.warn(f"problem {i}")
    w.show_notices()
    text = w.banner.text()
    assert "Problem 7" in text and "Problem 2" not in text and "and 3 more warnings" in text
    assert "Problem 0" in w.banner.label.toolTip()  # every one on hover
    assert w.banner.more.isVisibleTo(w.banner) and w.banner.more.text() == "Show all 8"
    qtbot.mouseClick(w.banner.more, Qt.MouseButton.LeftButton)
    assert all(f"Problem {i}" in w.banner.text() for i in range(8)) and "more" not in w.banner.text()
    _close(qtbot, w)


def test_the_collapsed_banner_shows_the_warnings_that_change_results_first(qtbot) -> None:
    """QA 14c: the latest five were "unknown setting ignored" while the price that fell back to its
    default and the overlay's problems were behind "and 4 more"."""
    import json

    from gpuselect import notices
    from gpuselect.settings import settings_path

    notices.reset()
    p = settings_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    values = {"electricity_usd_per_kwh": "cheap", "grid_kg_co2_per_kwh": 99} | {f"foo{i}": 1 for i in range(6)}
    p.write_text(json.dumps(values))
    w = MainWindow()
    qtbot.addWidget(w)
    notices.warn("your catalog overlay x.toml has 13 problems")  # after the minor ones
    w.show_notices()
    lines = w.banner.text().splitlines()
    assert "electricity_usd_per_kwh" in lines[0] and "grid_kg_co2_per_kwh" in lines[1] and "overlay" in lines[2]
    assert sum("unknown setting" in line for line in lines) == 2  # the latest two minor ones fill the five
    assert "foo5" in lines[4] and lines[5] == "… and 4 more warnings (Show all)"
    assert w.banner.more.text() == "Show all 9"
    qtbot.mouseClick(w.banner.more, Qt.MouseButton.LeftButton)  # all nine, in the order they came
    assert [("foo" in line) for line in w.banner.text().splitlines()] == [False, False] + [True] * 6 + [False]
    _close(qtbot, w)


@pytest.mark.parametrize("line", ["tab=abc", "tab=99999999999999999999", "geometry=garbage"])
def test_a_damaged_window_ini_is_ignored(qtbot, line: str) -> None:
    """Each of these stopped the app from starting (exit 70)."""
    from gpuselect.paths import config_dir

    ini = config_dir() / "window.ini"
    ini.parent.mkdir(parents=True, exist_ok=True)
    ini.write_text(f"[window]\n{line}\n")
    w = MainWindow()
    qtbot.addWidget(w)
    assert w.tabs.currentIndex() == 0
    _close(qtbot, w)


def test_catalog_details_say_how_much_memory_the_estimates_count(qtbot) -> None:
    """QA 15d: the Catalog's B200 read "180 GB" and the Estimate table's "179.06 GB" with nothing on
    the Catalog page to join them (the CLI's `catalog nvidia-b200` lists visible_vram_gb)."""
    w = MainWindow()
    qtbot.addWidget(w)
    page = w.catalog

    def details(name: str) -> str:
        page.search.setText(name)
        row = next(i for i in range(page.proxy.rowCount()) if page.proxy.index(i, 0).data() == name)
        page.table.setCurrentIndex(page.proxy.index(row, 0))
        return page.details.toPlainText()

    assert "Memory: 180 GB; the estimates count 179.06 GB usable (what the driver shows)" in details("B200")
    assert "the estimates count 22.5 GB usable (ECC on" in details("A10")
    assert "the estimates count" not in details("B300")  # nothing held back: no line
    _close(qtbot, w)
