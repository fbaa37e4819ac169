"""The money boxes the Settings and Estimate pages share: an electricity price and a budget in
your currency, with the same format (thousands separators), the same range and the same refusal.

The file and the estimator keep US dollars and limit them (settings.RANGES); a box holds your
currency, so its range is that limit at the highest rate the settings allow, and a figure past
the limit at the rate in force is refused in one sentence (QA 14c: the Estimate page's box stopped
typing at ₩99,999 while the Settings page took up to US$100/kWh and said why past it)."""

from __future__ import annotations

from PySide6.QtWidgets import QDoubleSpinBox

from gpuselect.app.money import MoneyFormat
from gpuselect.settings import RANGES

MAX_RATE = RANGES["usd_to_currency"][1]
ELECTRICITY_MAX_USD = RANGES["electricity_usd_per_kwh"][1]  # per kWh
BUDGET_MAX_USD = RANGES["default_budget_usd"][1]
BUDGET_MIN_USD = RANGES["default_budget_usd"][0]  # the estimator's floor: a budget below it fails every estimate


def electricity_box() -> QDoubleSpinBox:
    box = QDoubleSpinBox(minimum=0, maximum=ELECTRICITY_MAX_USD * MAX_RATE, decimals=3, prefix="$", suffix=" /kWh")
    box.setGroupSeparatorShown(True)
    return box


def budget_box() -> QDoubleSpinBox:
    box = QDoubleSpinBox(minimum=0, maximum=BUDGET_MAX_USD * MAX_RATE, decimals=0, prefix="$")
    box.setSpecialValueText("no budget")  # the stubs lack the keyword form
    box.setGroupSeparatorShown(True)
    return box


def over_limit(
    electricity_usd: float, budget_usd: float | None, money: MoneyFormat, budget: str = "budget"
) -> str | None:
    """Why these figures (US dollars) cannot be used, in one sentence without its full stop, in your
    currency as the app writes money ("₩200,000", not "₩200,000.000"); None when they can."""
    for what, usd, hi, unit in (
        ("electricity price", electricity_usd, ELECTRICITY_MAX_USD, "/kWh"),
        (budget, budget_usd or 0.0, BUDGET_MAX_USD, ""),
    ):
        if usd > hi:
            at_rate = "" if money.is_usd else f" ({money(hi)}{unit} at the rate {money.rate:g})"
            return f"the {what} {money(usd)}{unit} is more than US${hi:,.0f}{unit}{at_rate}"
    if budget_usd and budget_usd < BUDGET_MIN_USD:
        # ₩1 at 1,350 per dollar was saved as US$0.00074, which the next start refused
        return f"the {budget} {money(budget_usd)} is less than US${BUDGET_MIN_USD:g}: set 0 for no {budget}"
    return None
