"""Light and dark palettes for the whole application (View -> Theme, the screenshots).

"system" leaves the platform's palette alone. Changing the palette sends every window an
ApplicationPaletteChange event; MainWindow re-themes the charts on it (gui/plots.apply_theme).
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

THEMES = ("system", "light", "dark")
_system_palette: QPalette | None = None


def _palette(dark: bool) -> QPalette:
    R = QPalette.ColorRole  # noqa: N806 - short alias of the enum class, as for a module
    p = QPalette()
    if dark:
        window, base, alt, text, button, mid = "#2b2b2b", "#1e1e1e", "#262626", "#e6e6e6", "#353535", "#4a4a4a"
        highlight, link, disabled = "#3d7ebf", "#7fb4ff", "#7a7a7a"
    else:
        window, base, alt, text, button, mid = "#efefef", "#ffffff", "#f5f5f5", "#1a1a1a", "#e6e6e6", "#b5b5b5"
        highlight, link, disabled = "#2f6db5", "#1a55a0", "#8c8c8c"
    for role, colour in (
        (R.Window, window),
        (R.WindowText, text),
        (R.Base, base),
        (R.AlternateBase, alt),
        (R.Text, text),
        (R.Button, button),
        (R.ButtonText, text),
        (R.ToolTipBase, base),
        (R.ToolTipText, text),
        (R.Highlight, highlight),
        (R.HighlightedText, "#ffffff"),
        (R.Link, link),
        (R.Mid, mid),
        (R.PlaceholderText, disabled),
        (R.BrightText, "#ff5555"),
    ):
        p.setColor(role, QColor(colour))
    for role in (R.WindowText, R.Text, R.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(disabled))
    return p


def apply_theme_name(name: str, app: QApplication | None = None) -> None:
    """Switch the application to "light", "dark" or back to "system"."""
    global _system_palette
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; use one of {', '.join(THEMES)}")
    app = app or QApplication.instance()  # type: ignore[assignment]
    if app is None:
        return
    if _system_palette is None:
        _system_palette = QPalette(app.palette())
    if name != "system":
        app.setStyle("Fusion")  # the platform style may ignore a custom palette
    app.setPalette(_system_palette if name == "system" else _palette(name == "dark"))
