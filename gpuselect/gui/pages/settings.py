"""Settings page: electricity price, grid intensity, currency, default deadline and budget, report
redaction — saved to the domain settings file (gpuselect/settings.py), atomically."""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gpuselect.app.money import MoneyFormat
from gpuselect.gui.money import MAX_RATE, budget_box, electricity_box, over_limit
from gpuselect.settings import Settings, load, save, settings_path

# The spin boxes hold your currency, the file US dollars: a box's range is the file's limit at the
# highest rate, and ``save`` checks the limit at the rate entered (a range of 100 in your currency
# capped a price in won, ~1,350 per US$, and an unchanged save wrote the capped value back).


class SettingsPage(QWidget):
    changed = Signal(object)  # Settings
    #: The load problems a successful save has made moot (the file now holds valid settings).
    problems_fixed = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.electricity = electricity_box()  # as the Estimate page's: same format, same limit
        self.grid = QDoubleSpinBox(minimum=0, maximum=5, decimals=3, suffix=" kg CO₂/kWh")
        self.grid.setToolTip("Carbon intensity of your electricity; IEA's world average is about 0.45 kg/kWh")
        self.symbol = QLineEdit()
        self.symbol.setMaxLength(5)
        self.rate = QDoubleSpinBox(
            minimum=0.0001, maximum=MAX_RATE, decimals=4
        )  # 0.000001 showed as 0: a division by 0
        self.rate.setToolTip(
            "Catalog prices are in US dollars; costs are shown multiplied by this rate.\n"
            "The electricity price and the budget above are in your currency."
        )
        self.deadline = QDoubleSpinBox(minimum=0.01, maximum=1e6, decimals=2, suffix=" h")
        self.budget = budget_box()
        self.redact = QCheckBox("Leave the host name, GPU serial numbers and UUIDs out of reports")
        form = QFormLayout()
        for label, w in (
            ("E&lectricity price:", self.electricity),
            ("&Grid carbon intensity:", self.grid),
            ("Currenc&y symbol:", self.symbol),
            ("US$ → currency &rate:", self.rate),
            ("Default &deadline:", self.deadline),
            ("Default b&udget:", self.budget),
            ("Re&ports:", self.redact),
        ):
            lab = QLabel(label)
            lab.setBuddy(w)
            w.setAccessibleName(label.replace("&", "").rstrip(":"))
            form.addRow(lab, w)
        self.save_button = QPushButton("Save se&ttings")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Settings status")
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.save_button)
        lay.addWidget(self.status)
        lay.addStretch(1)
        self.save_button.clicked.connect(self.save)
        self.symbol.textChanged.connect(self._prefixes)
        self.rate.valueChanged.connect(self._rate_changed)
        self._shown: dict[QDoubleSpinBox, float] = {}  # what _show put in each box
        self.settings, problems = load()
        self.problems = problems
        self._show(self.settings)
        self.status.setText("\n".join(problems) if problems else f"Settings file: {settings_path()}")

    @Slot()
    def _prefixes(self) -> None:
        # Prices are entered in your currency; the file keeps US dollars (the catalog's unit).
        sym = self.symbol.text().strip() or "$"
        self.electricity.setPrefix(sym)
        self.budget.setPrefix(sym)

    def _show(self, s: Settings) -> None:
        self.symbol.setText(s.currency_symbol)
        self.rate.setValue(s.usd_to_currency)
        self.electricity.setValue(s.electricity_usd_per_kwh * s.usd_to_currency)
        self.grid.setValue(s.grid_kg_co2_per_kwh)
        self.deadline.setValue(s.default_deadline_hours)
        self.budget.setValue((s.default_budget_usd or 0) * s.usd_to_currency)
        self._prefixes()
        self.redact.setChecked(s.redact_reports)
        self.settings = s
        self._shown = {w: w.value() for w in (self.electricity, self.grid, self.rate, self.deadline, self.budget)}

    @Slot(float)
    def _rate_changed(self, rate: float) -> None:
        """A price or budget not typed here keeps its worth at a new rate: shown re-expressed, and
        saved as the US dollars it was (left as it was, ₩0.150 at ₩1,350/US$ saved as $0.00011)."""
        s = self.settings
        for box, usd in ((self.electricity, s.electricity_usd_per_kwh), (self.budget, s.default_budget_usd or 0.0)):
            if self._untouched(box):
                box.blockSignals(True)
                box.setValue(usd * rate)
                box.blockSignals(False)
                self._shown[box] = box.value()

    def _untouched(self, *boxes: QDoubleSpinBox) -> bool:
        """Whether these boxes still show what the settings put there: their stored values are then
        kept, not the boxes' rounded ones (3 decimals in your currency, 4 for the rate)."""
        return all(self._shown.get(w) == w.value() for w in boxes)

    def current(self) -> Settings:
        s, keep_rate = self.settings, self._untouched(self.rate)
        rate = s.usd_to_currency if keep_rate else self.rate.value()
        # A money box not typed in keeps its US dollars whatever the rate (it shows them re-expressed).
        return Settings(
            electricity_usd_per_kwh=s.electricity_usd_per_kwh
            if self._untouched(self.electricity)
            else self.electricity.value() / rate,
            grid_kg_co2_per_kwh=s.grid_kg_co2_per_kwh if self._untouched(self.grid) else self.grid.value(),
            currency_symbol=self.symbol.text().strip() or "$",
            usd_to_currency=rate,
            default_deadline_hours=s.default_deadline_hours
            if self._untouched(self.deadline)
            else self.deadline.value(),
            default_budget_usd=s.default_budget_usd
            if self._untouched(self.budget)
            else (self.budget.value() / rate) or None,
            redact_reports=self.redact.isChecked(),
        )

    def problem(self, s: Settings) -> str | None:
        """What keeps ``s`` from being saved, in one sentence (None if nothing): a price beyond the
        file's limit, said in your currency and in US dollars; an emptied symbol beside a rate that
        is not the US dollar's (it saved "$" at 0.92, and every cost then read as US dollars)."""
        if not self.symbol.text().strip() and s.usd_to_currency != 1:
            return (
                f"The currency symbol is empty but the rate is {s.usd_to_currency:g} per US dollar: enter the "
                "symbol of that currency (or set the rate to 1 for US dollars); nothing was saved."
            )
        why = over_limit(
            s.electricity_usd_per_kwh, s.default_budget_usd, MoneyFormat.from_settings(s), "default budget"
        )
        return f"{why[:1].upper()}{why[1:]}; nothing was saved." if why else None

    @Slot()
    def save(self) -> None:
        s = self.current()
        problem = self.problem(s)
        if problem:
            self.status.setText(problem)
            return
        try:
            path = save(s)
        except Exception as exc:  # noqa: BLE001 - shown in the window
            self.status.setText(f"Could not save the settings: {exc}")
            return
        self._show(s)  # its values become the untouched ones
        self.status.setText(f"Saved to {path}")
        fixed, self.problems = self.problems, []
        if fixed:
            self.problems_fixed.emit(fixed)
        self.changed.emit(s)
