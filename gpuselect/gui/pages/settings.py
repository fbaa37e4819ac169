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

from gpuselect.settings import Settings, load, save, settings_path


class SettingsPage(QWidget):
    changed = Signal(object)  # Settings
    #: The load problems a successful save has made moot (the file now holds valid settings).
    problems_fixed = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.electricity = QDoubleSpinBox(minimum=0, maximum=100, decimals=3, prefix="$", suffix=" /kWh")
        self.grid = QDoubleSpinBox(minimum=0, maximum=5, decimals=3, suffix=" kg CO₂/kWh")
        self.grid.setToolTip("Carbon intensity of your electricity; IEA's world average is about 0.45 kg/kWh")
        self.symbol = QLineEdit()
        self.symbol.setMaxLength(5)
        self.rate = QDoubleSpinBox(minimum=0.000001, maximum=1e6, decimals=4)
        self.rate.setToolTip(
            "Catalog prices are in US dollars; costs are shown multiplied by this rate.\n"
            "The electricity price and the budget above are in your currency."
        )
        self.deadline = QDoubleSpinBox(minimum=0.01, maximum=1e6, decimals=2, suffix=" h")
        self.budget = QDoubleSpinBox(minimum=0, maximum=1e10, decimals=0, prefix="$")
        self.budget.setSpecialValueText("no budget")  # the stubs lack the keyword form
        self.redact = QCheckBox("Leave the host name, GPU serial numbers and UUIDs out of reports")
        form = QFormLayout()
        for label, w in (
            ("&Electricity price:", self.electricity),
            ("&Grid carbon intensity:", self.grid),
            ("Currency &symbol:", self.symbol),
            ("US$ → currency &rate:", self.rate),
            ("Default &deadline:", self.deadline),
            ("Default &budget:", self.budget),
            ("Re&ports:", self.redact),
        ):
            lab = QLabel(label)
            lab.setBuddy(w)
            w.setAccessibleName(label.replace("&", "").rstrip(":"))
            form.addRow(lab, w)
        self.save_button = QPushButton("&Save settings")
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

    def current(self) -> Settings:
        rate = self.rate.value()
        return Settings(
            electricity_usd_per_kwh=self.electricity.value() / rate,
            grid_kg_co2_per_kwh=self.grid.value(),
            currency_symbol=self.symbol.text().strip() or "$",
            usd_to_currency=rate,
            default_deadline_hours=self.deadline.value(),
            default_budget_usd=(self.budget.value() / rate) or None,
            redact_reports=self.redact.isChecked(),
        )

    @Slot()
    def save(self) -> None:
        s = self.current()
        try:
            path = save(s)
        except Exception as exc:  # noqa: BLE001 - shown in the window
            self.status.setText(f"Could not save the settings: {exc}")
            return
        self.settings = s
        self.status.setText(f"Saved to {path}")
        fixed, self.problems = self.problems, []
        if fixed:
            self.problems_fixed.emit(fixed)
        self.changed.emit(s)
