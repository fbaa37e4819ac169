"""Money in the user's currency. The core computes in US dollars; every face formats through one
``MoneyFormat`` built from the settings, so the verdict, the tables, the axes and the report agree."""

from __future__ import annotations

from dataclasses import dataclass

from gpuselect.estimate.recommend import money_text  # the one rule, which the core's usd() uses too
from gpuselect.settings import Settings


@dataclass(frozen=True)
class MoneyFormat:
    symbol: str = "$"
    rate: float = 1.0  # currency units per US dollar

    @classmethod
    def from_settings(cls, s: Settings) -> MoneyFormat:
        return cls(s.currency_symbol, s.usd_to_currency)

    @property
    def is_usd(self) -> bool:
        return self.symbol == "$" and self.rate == 1.0

    def value(self, usd: float) -> float:
        return usd * self.rate

    def __call__(self, usd: float | None) -> str:
        """A cost: whole units from 10 up, cents below (an electricity bill of 0.42)."""
        if usd is None:
            return "—"
        return money_text(usd * self.rate, self.symbol)

    def axis(self, usd: float) -> str:
        """A tick label: short (1k, 2.5M)."""
        v = usd * self.rate
        for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(v) >= div:
                return f"{self.symbol}{v / div:g}{suffix}"
        return f"{self.symbol}{v:g}"

    def per_kwh(self, usd: float) -> str:
        return f"{self.symbol}{usd * self.rate:.3f}/kWh"
