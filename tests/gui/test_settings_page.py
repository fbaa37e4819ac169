"""The Settings page in a currency far from the US dollar, and what an unchanged save writes."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("PySide6")

from gpuselect.settings import settings_path


def _write_settings(**values: object) -> None:
    p = settings_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(values))


def test_a_price_in_won_is_neither_capped_nor_rewritten(qtbot) -> None:
    """At ₩1,350 per US$ the boxes capped the price at ₩100, and saving with nothing changed wrote
    ₩100 (US$0.074) back; an odd stored price came back rounded to the box's 3 decimals."""
    from gpuselect.gui.app import MainWindow

    _write_settings(
        currency_symbol="₩", usd_to_currency=1350.0, electricity_usd_per_kwh=0.15, default_budget_usd=9_000_000.0
    )
    w = MainWindow()
    qtbot.addWidget(w)
    page = w.settings_page
    assert page.electricity.value() == pytest.approx(202.5)
    assert w.estimate.electricity.value() == pytest.approx(202.5)
    assert page.budget.value() == pytest.approx(12_150_000_000)
    assert w.estimate.budget.value() == pytest.approx(12_150_000_000)
    page.save()
    stored = json.loads(settings_path().read_text())
    assert stored["electricity_usd_per_kwh"] == 0.15 and stored["default_budget_usd"] == 9_000_000.0
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


def test_an_unchanged_save_keeps_every_stored_value_exactly(qtbot) -> None:
    from gpuselect.gui.pages.settings import SettingsPage

    values = {
        "currency_symbol": "€",
        "usd_to_currency": 0.923456,
        "electricity_usd_per_kwh": 0.123456,
        "grid_kg_co2_per_kwh": 0.41234,
        "default_deadline_hours": 0.005,
        "default_budget_usd": 1234.5678,
    }
    _write_settings(**values)
    page = SettingsPage()
    qtbot.addWidget(page)
    page.save()
    stored = json.loads(settings_path().read_text())
    assert {k: stored[k] for k in values} == values
    # a changed box is taken as shown, in the currency
    page.electricity.setValue(0.2)
    page.save()
    stored = json.loads(settings_path().read_text())
    assert stored["electricity_usd_per_kwh"] == pytest.approx(0.2 / 0.923456)
    assert stored["usd_to_currency"] == 0.923456


def test_a_price_beyond_the_limit_is_refused_in_one_sentence(qtbot) -> None:
    from gpuselect.gui.pages.settings import SettingsPage

    _write_settings(currency_symbol="₩", usd_to_currency=1350.0)
    page = SettingsPage()
    qtbot.addWidget(page)
    before = settings_path().read_text()
    page.electricity.setValue(200_000)  # US$148/kWh
    page.save()
    # won as the app writes money, not "₩200,000.000" (QA 14c)
    assert (
        "electricity price ₩200,000/kWh is more than US$100/kWh (₩135,000/kWh at the rate 1350)" in page.status.text()
    )
    assert "nothing was saved" in page.status.text()
    assert settings_path().read_text() == before
    page.electricity.setValue(300)
    page.save()
    assert json.loads(settings_path().read_text())["electricity_usd_per_kwh"] == pytest.approx(300 / 1350)


def test_the_rate_cannot_be_zero(qtbot) -> None:
    """Its minimum, 0.000001, showed as 0.0000 and could be reached: saving then divided by zero."""
    from gpuselect.gui.pages.settings import SettingsPage

    page = SettingsPage()
    qtbot.addWidget(page)
    page.rate.setValue(0)
    assert page.rate.value() > 0
    page.save()  # the untouched price keeps its US$0.15, not a ZeroDivisionError
    stored = json.loads(settings_path().read_text())
    assert stored["usd_to_currency"] == 0.0001 and stored["electricity_usd_per_kwh"] == 0.15
    page.electricity.setValue(0.02)  # typed at the rate 0.0001: US$200/kWh, refused
    page.save()
    assert "($0.01/kWh at the rate 0.0001); nothing was saved" in page.status.text()


def test_saving_a_setting_keeps_the_estimate_inputs_typed(qtbot) -> None:
    """Saving any setting reset the Estimate page's deadline, budget and electricity to the defaults.
    Typed figures stay (a price or budget re-expressed when the currency changes); a box still
    showing the old default takes the new one."""
    from gpuselect.gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    e, page = w.estimate, w.settings_page
    e.deadline.setValue(10)
    e.budget.setValue(5000)
    page.grid.setValue(0.3)
    page.save()
    assert (e.deadline.value(), e.budget.value(), e.electricity.value()) == (10, 5000, 0.15)
    # the default electricity price was never touched here: it follows the settings
    page.electricity.setValue(0.2)
    page.deadline.setValue(24)
    page.save()
    assert (e.deadline.value(), e.budget.value(), e.electricity.value()) == (10, 5000, 0.2)
    e.electricity.setValue(0.3)
    # to won: the typed budget and price keep their worth; the deadline stays
    page.symbol.setText("₩")
    page.rate.setValue(1000)
    page.electricity.setValue(200)
    page.save()
    assert e.deadline.value() == 10
    assert e.budget.value() == pytest.approx(5_000_000) and e.electricity.value() == pytest.approx(300)
    assert e.budget_usd() == pytest.approx(5000) and e.electricity_usd() == pytest.approx(0.3)
    # typing the default back makes the box follow the settings again
    e.deadline.setValue(24)
    page.deadline.setValue(48)
    page.save()
    assert e.deadline.value() == 48
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


def test_switching_from_a_large_currency_back_keeps_the_prices_worth(qtbot) -> None:
    """Review 14: back from won to dollars the new maximum cut the box first (₩195 to 100), and the
    cut value counted as typed: the default price became $0.077 and a typed ₩260 ($0.20) too."""
    from gpuselect.gui.pages.estimate import EstimatePage
    from gpuselect.settings import Settings

    p = EstimatePage()
    qtbot.addWidget(p)
    won = Settings(currency_symbol="₩", usd_to_currency=1300.0)
    p.apply_settings(won)
    assert p.electricity.value() == pytest.approx(195.0)
    p.apply_settings(Settings())  # untyped: follows the settings
    assert p.electricity.value() == pytest.approx(0.15)
    p.apply_settings(won)
    p.electricity.setValue(260.0)  # typed: $0.20
    p.apply_settings(Settings())
    assert p.electricity.value() == pytest.approx(0.20)
    p.shutdown()


def test_changing_only_the_rate_keeps_the_price_s_worth(qtbot) -> None:
    """QA 14: at a new rate the untouched price box still held dollars read as won: ₩0.150 saved as
    US$0.00011/kWh. An untouched box shows its price re-expressed and keeps its dollars; a typed one
    is read at the new rate."""
    from gpuselect.gui.pages.settings import SettingsPage

    _write_settings(electricity_usd_per_kwh=0.15, default_budget_usd=1000.0)
    page = SettingsPage()
    qtbot.addWidget(page)
    page.symbol.setText("₩")
    page.rate.setValue(1350)
    assert page.electricity.value() == pytest.approx(202.5) and page.budget.value() == pytest.approx(1_350_000)
    s = page.current()
    assert s.electricity_usd_per_kwh == 0.15 and s.default_budget_usd == 1000.0 and s.usd_to_currency == 1350
    page.electricity.setValue(270)  # typed, in won
    assert page.current().electricity_usd_per_kwh == pytest.approx(0.2)
    page.rate.setValue(1000)  # a typed price stays as typed
    assert page.electricity.value() == pytest.approx(270)


def test_the_money_boxes_of_both_pages_share_their_format_limits_and_refusal(qtbot) -> None:
    """QA 14c: Settings showed ₩5000000 and the Estimate page ₩4,999,995; the Estimate page's price
    stopped typing at ₩99,999.999 (US$74) with no word while Settings took up to US$100/kWh."""
    from gpuselect.gui.app import MainWindow

    _write_settings(currency_symbol="₩", usd_to_currency=1350.0, default_budget_usd=3703.7)
    w = MainWindow()
    qtbot.addWidget(w)
    s, e = w.settings_page, w.estimate
    for a, b in ((s.electricity, e.electricity), (s.budget, e.budget)):
        assert (a.maximum(), a.decimals(), a.prefix(), a.suffix()) == (
            b.maximum(),
            b.decimals(),
            b.prefix(),
            b.suffix(),
        )
        assert a.isGroupSeparatorShown() and b.isGroupSeparatorShown()
        assert a.text() == b.text()
    assert s.budget.text() == "₩4,999,995"
    e.electricity.lineEdit().selectAll()
    qtbot.keyClicks(e.electricity.lineEdit(), "200000")  # US$148/kWh: typed in full, then refused
    e.electricity.interpretText()
    assert e.electricity.value() == 200_000
    e.recompute()
    assert e.error.text() == (
        "<b>Cannot estimate:</b> the electricity price ₩200,000/kWh is more than US$100/kWh "
        "(₩135,000/kWh at the rate 1350)."
    )
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


def test_a_budget_below_the_estimators_floor_is_refused_not_saved(qtbot) -> None:
    """Review 16: ₩1 at 1,350 per US$ was saved as US$0.00074, which the next start refused and
    dropped (the estimator takes no budget below US$0.001)."""
    from gpuselect.gui.pages.settings import SettingsPage

    _write_settings(currency_symbol="₩", usd_to_currency=1350.0)
    page = SettingsPage()
    qtbot.addWidget(page)
    before = settings_path().read_text()
    page.budget.setValue(1)
    page.save()
    assert "is less than US$0.001: set 0 for no default budget; nothing was saved" in page.status.text()
    assert settings_path().read_text() == before
    page.budget.setValue(0)
    page.save()
    assert json.loads(settings_path().read_text()).get("default_budget_usd") is None


def test_an_emptied_symbol_beside_a_foreign_rate_is_refused(qtbot) -> None:
    """QA 16c: clearing "€" (rate 0.92) and saving wrote "$" at 0.92: the Estimate page then read
    "$1,840 to buy" for a US$1,999 card, as if in US dollars."""
    from gpuselect.gui.pages.settings import SettingsPage

    _write_settings(currency_symbol="€", usd_to_currency=0.92)
    page = SettingsPage()
    qtbot.addWidget(page)
    before = settings_path().read_text()
    page.symbol.setText("")
    page.save()
    assert page.status.text() == (
        "The currency symbol is empty but the rate is 0.92 per US dollar: enter the symbol of that "
        "currency (or set the rate to 1 for US dollars); nothing was saved."
    )
    assert settings_path().read_text() == before
    page.rate.setValue(1)  # US dollars: the empty symbol is "$", as before
    page.save()
    stored = json.loads(settings_path().read_text())
    assert stored["currency_symbol"] == "$" and stored["usd_to_currency"] == 1
