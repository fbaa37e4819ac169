"""The window on a small laptop screen (QA 17f, 1024x640 and 1366x768): nothing squeezed below
its size, the first window no larger than the screen, the catalog's prices in view."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from gpuselect.estimate.recommend import BORROWED_BAND_NOTE
from gpuselect.gui.pages.estimate import EstimatePage

#: a "read as" line as long as a config with an unchecked type and a sliding window gives
LONG_READ_AS = (
    "6,956.8 M parameters (35.65 M trained): transformer read from /tmp/cfg/custom.json: 32 layers, "
    "hidden 4096, 32 heads, vocabulary 128256, sequence 8192; plain FFN, LayerNorm, rotary positions, "
    "untied embeddings; some or all of its layers attend only the last 4,096 tokens (sliding window), "
    "counted here as attention over all 8,192, as PyTorch's SDPA runs a masked window; with "
    "FlashAttention-2 or flex attention, which skip the rest, the attention's FLOPs and time are "
    "overstated; model type 'my_custom_architecture_v2_with_a_long_name' is not one gpuselect has "
    "checked: read as a GPT/Llama-style decoder"
)


def test_long_read_as_line_squeezes_no_input(qtbot) -> None:
    """At 1024x640 a config's long "read as" line squeezed every input below it to half its
    height, their text cut (screenshots 12, 14): the inputs scroll instead, each at its own height."""
    host = QWidget()
    qtbot.addWidget(host)
    page = EstimatePage(host)
    page.setGeometry(0, 0, 1000, 540)  # what the Estimate tab gets of a 1024x640 window
    page.source.setCurrentIndex(1)  # config.json: its File, Mode and Sequence rows above the line
    page.workload_info.setText(LONG_READ_AS)
    host.show()
    qtbot.waitExposed(host)
    qtbot.wait(50)
    fields = [page.precision, page.batch, page.dataset, page.epochs, page.deadline, page.budget, page.network]
    squeezed = [f.accessibleName() for f in fields if f.height() < f.minimumSizeHint().height()]
    assert not squeezed, f"squeezed below their height: {squeezed}"
    page.shutdown()


def test_an_input_focused_by_its_mnemonic_scrolls_into_view(qtbot) -> None:
    """Alt+N focused the Network box below the scrolled inputs' edge, out of sight (screenshot 32)."""
    host = QWidget()
    qtbot.addWidget(host)
    page = EstimatePage(host)
    page.setGeometry(0, 0, 1000, 400)
    page.source.setCurrentIndex(1)
    page.workload_info.setText(LONG_READ_AS)
    host.show()
    qtbot.waitExposed(host)
    host.activateWindow()
    qtbot.waitActive(host)
    qtbot.wait(50)
    assert page.network.visibleRegion().isEmpty()  # below the fold to begin with
    page.network.setFocus(Qt.FocusReason.ShortcutFocusReason)
    qtbot.waitUntil(lambda: not page.network.visibleRegion().isEmpty(), timeout=2000)
    page.shutdown()


def test_the_first_window_fits_the_screen(qtbot) -> None:
    """No saved geometry: the window opened 1200x800, taller than a 1366x768 laptop's screen, its
    bottom rows off it (screenshot 01). It fits the available area, frame included."""
    from gpuselect.gui.app import FRAME_ALLOWANCE, MainWindow, default_size

    w = MainWindow()
    qtbot.addWidget(w)
    room = w.screen().availableGeometry().size() - FRAME_ALLOWANCE
    assert w.width() <= room.width() and w.height() <= room.height()
    from PySide6.QtCore import QSize

    assert default_size(QSize(1366, 768)) == QSize(1200, 720)
    assert default_size(QSize(1920, 1080)) == QSize(1200, 800)  # a large screen keeps the default
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


def test_a_borrowed_band_is_marked_in_the_table_as_in_the_cli(qtbot) -> None:
    """The CLI prints "34%*" and the report "(*)" where no measured step validates a row; the
    All options table showed "34 %" as if it were measured, the note only in a chart's hover."""
    from gpuselect.workloads.presets import PRESETS

    page = EstimatePage()
    qtbot.addWidget(page)
    page.presets.setCurrentRow(list(PRESETS).index("llama-1b-full"))
    before = page.result
    page.recompute()
    qtbot.waitUntil(lambda: page.result is not before and page.worker is None, timeout=60_000)
    band = next(i for i, c in enumerate(page.model.columns) if c.header == "±")
    shown = [(r, page.model.index(i, band)) for i, r in enumerate(page.model.rows) if r.fits and r.total_time_h]
    borrowed = [(r, ix) for r, ix in shown if r.band_note]
    measured = [(r, ix) for r, ix in shown if not r.band_note]
    assert borrowed and measured  # PCIe-only boxes borrow theirs; one card is measured
    for r, ix in borrowed:
        assert ix.data() == f"{100 * r.error_band:.0f} %*"
        tip = " ".join(ix.data(Qt.ItemDataRole.ToolTipRole).split())
        assert r.band_note in tip and BORROWED_BAND_NOTE in tip  # the CLI's and the report's words
    for r, ix in measured:
        assert ix.data() == f"{100 * r.error_band:.0f} %"
    # sorted by the band's number, as before: the mark does not make it text
    page.table.sortByColumn(band, Qt.SortOrder.AscendingOrder)
    bands = [
        page.model.rows[page.proxy.mapToSource(page.proxy.index(i, 0)).row()] for i in range(page.proxy.rowCount())
    ]
    values = [r.error_band for r in bands if r.fits and r.total_time_h]
    assert values == sorted(values)
    page.shutdown()


def test_catalog_prices_in_view_at_1024(qtbot) -> None:
    """At 1024x640 the Catalog's "Cloud /h" column, the price in your currency, was past the right
    edge behind a sideways scroll (screenshots 16, 19): four "... TFLOPS" headers took its room."""
    from gpuselect.gui.pages.catalog import CatalogPage
    from gpuselect.settings import Settings

    host = QWidget()
    qtbot.addWidget(host)
    page = CatalogPage(host)
    page.apply_settings(Settings(currency_symbol="€", usd_to_currency=0.92))
    page.setGeometry(0, 0, 1000, 540)  # what the Catalog tab gets of a 1024x640 window
    host.show()
    qtbot.waitExposed(host)
    qtbot.wait(50)
    header = page.table.horizontalHeader()
    room = page.table.viewport().width()
    cut = [
        page.model.columns[c].header
        for c in range(len(page.model.columns))
        if header.sectionViewportPosition(c) + header.sectionSize(c) > room
    ]
    assert not cut, f"past the right edge: {cut}"
    tflops = [c.header for c in page.model.columns if "TFLOPS" in c.header]
    assert len(tflops) == 4  # the unit is still said in each header


@pytest.mark.parametrize("source", [1, 3])  # config.json, parameters and FLOPs
def test_a_short_source_page_stands_over_no_blank(qtbot, source: int) -> None:
    """The source pages' stack was as tall as its tallest page (the preset list): a config's three
    rows, or the two of own figures, stood over a blank of ~150 px before the inputs (screenshot 38)."""
    host = QWidget()
    qtbot.addWidget(host)
    page = EstimatePage(host)
    page.setGeometry(0, 0, 1000, 700)
    page.source.setCurrentIndex(source)
    host.show()
    qtbot.waitExposed(host)
    qtbot.wait(50)
    last = page.seq_len if source == 1 else page.custom_flops
    gap = (
        page.precision.mapTo(page, page.precision.rect().topLeft()).y() - last.mapTo(page, last.rect().bottomLeft()).y()
    )
    assert gap < 3 * page.fontMetrics().lineSpacing(), gap
    # the preset list still takes the room there is, beyond its five rows
    page.source.setCurrentIndex(0)
    qtbot.wait(50)
    assert page.presets.height() > page.presets.sizeHintForRow(0) * 8
    page.shutdown()


def test_a_first_input_that_cannot_be_estimated_leaves_no_placeholder(qtbot, tmp_path) -> None:
    """Opened on a saved config that is gone, the page showed "…" above "Cannot estimate: ..." until
    another input was chosen (screenshot 28)."""
    page = EstimatePage()
    qtbot.addWidget(page)
    page.source.setCurrentIndex(1)
    page.config_path.setText(str(tmp_path / "gone.json"))
    page.recompute()
    qtbot.waitUntil(lambda: "Cannot estimate" in page.error.text(), timeout=10_000)
    assert page.recommendation.text() == ""
    page.shutdown()


def test_a_search_that_hides_the_workload_chooses_the_match(qtbot) -> None:
    """Typing "70b full" left one workload in the list, Llama 70B, while ResNet-50, hidden, stayed
    selected and estimated (screenshots 46, 47): the answer shown was for a workload not on view."""
    from gpuselect.workloads.presets import PRESETS

    host = QWidget()
    qtbot.addWidget(host)
    page = EstimatePage(host)
    page.setGeometry(0, 0, 1000, 540)
    host.show()
    qtbot.waitExposed(host)
    page.presets.setCurrentRow(list(PRESETS).index("resnet50"))
    page.search.setText("70b full")
    item = page.presets.currentItem()
    assert item is not None and not item.isHidden()
    assert page.workload_spec().preset == "llama-70b-full"
    page.search.setText("resnet")  # a match that holds the one selected keeps it
    page.presets.setCurrentRow(list(PRESETS).index("resnet50"))
    page.search.setText("res")
    assert page.workload_spec().preset == "resnet50"
    # the filter cleared, the workload chosen through it is in view, not scrolled off the list's top
    page.search.setText("70b full")
    page.search.setText("")
    qtbot.wait(50)
    item = page.presets.currentItem()
    assert item is not None and page.presets.visualItemRect(item).intersects(page.presets.viewport().rect())
    page.shutdown()


def test_the_chosen_workload_stays_in_view_when_the_list_shrinks(qtbot) -> None:
    """Llama 3.1 8B QLoRA, chosen, sat just below the list's last row (docs/screenshots, session
    17): Qt scrolled to it, then its longer "read as" line shrank the list under it."""
    from gpuselect.workloads.presets import PRESETS

    host = QWidget()
    qtbot.addWidget(host)
    page = EstimatePage(host)
    page.setGeometry(0, 0, 1000, 800)
    host.resize(1000, 800)
    host.show()
    qtbot.waitExposed(host)
    page.presets.setCurrentRow(list(PRESETS).index("llama-8b-qlora"))
    qtbot.wait(50)
    page.setGeometry(0, 0, 1000, 560)  # the list loses rows, as under a longer "read as" line
    qtbot.wait(50)
    item = page.presets.currentItem()
    assert item is not None
    assert page.presets.viewport().rect().contains(page.presets.visualItemRect(item))
    page.shutdown()
