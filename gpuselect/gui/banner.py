"""The warnings banner above every page: the core's warnings (a corrupt settings file, a broken
catalog overlay), a few at once (those that change results first, then the latest), the rest
behind "Show all", each removable.

QA found it stayed after the settings were fixed and saved, could not be closed, and showed the
last five warnings with no word of the others; then that those five were "unknown setting
ignored" while a price that fell back to its default was behind "and 4 more".
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from gpuselect import notices


def _line(message: str) -> str:
    return f"Warning: {message[:1].upper()}{message[1:]}"


class NoticeBanner(QFrame):
    #: Warnings shown at once; the rest are counted ("and 2 more") until "Show all".
    SHOWN = 5

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("noticeBanner")
        self.setStyleSheet(
            "#noticeBanner { background: #fff3cd; } #noticeBanner QLabel, #noticeBanner QToolButton { color: #664d03; }"
        )
        self.setAccessibleName("warnings")
        self.messages: list[str] = []
        self.expanded = False
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)  # paths to copy
        self.label.setAccessibleName("Warnings")
        self.more = QToolButton()
        self.more.setAccessibleName("Show all warnings")
        self.more.clicked.connect(self.toggle_all)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setToolTip("Dismiss these warnings (they were also written to stderr)")
        self.close_button.setAccessibleName("Dismiss warnings")
        self.close_button.setAutoRaise(True)
        self.close_button.clicked.connect(self.dismiss)
        buttons = QVBoxLayout()
        buttons.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignRight)
        buttons.addWidget(self.more)
        buttons.addStretch(1)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 4, 4, 4)
        lay.addWidget(self.label, 1)
        lay.addLayout(buttons)
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def add(self, messages: Iterable[str]) -> None:
        new = [m for m in messages if m not in self.messages]
        if not new:
            return
        self.messages += new
        self._render()

    def resolve(self, messages: Iterable[str]) -> None:
        """Remove warnings whose cause is gone (the settings file was saved valid)."""
        gone = set(messages)
        if gone & set(self.messages):
            self.messages = [m for m in self.messages if m not in gone]
            self._render()

    @Slot()
    def dismiss(self) -> None:
        self.messages = []
        self.expanded = False
        self._render()

    @Slot()
    def toggle_all(self) -> None:
        self.expanded = not self.expanded
        self._render()

    def _first(self) -> list[str]:
        """The collapsed view: warnings that change results (not minor) before minor ones, the
        latest of each kind first chosen; shown that way, in the order they came within a kind."""
        order = sorted(range(len(self.messages)), key=lambda i: (notices.is_minor(self.messages[i]), -i))
        chosen = sorted(order[: self.SHOWN], key=lambda i: (notices.is_minor(self.messages[i]), i))
        return [self.messages[i] for i in chosen]

    def _render(self) -> None:
        if not self.messages:
            self.label.clear()
            self.label.setToolTip("")
            self.hide()
            return
        rest = max(0, len(self.messages) - self.SHOWN)
        shown = self.messages if self.expanded else self._first()
        lines = [_line(m) for m in shown]
        if rest and not self.expanded:
            lines.append(f"… and {rest} more warning{'s' if rest != 1 else ''} (Show all)")
        self.label.setText("\n".join(lines))
        # All of them on hover too, so a glance need not change the layout.
        self.label.setToolTip("\n".join(_line(m) for m in self.messages) if rest else "")
        self.more.setVisible(rest > 0)
        self.more.setText("Show fewer" if self.expanded else f"Show all {len(self.messages)}")
        self.show()
