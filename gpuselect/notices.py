"""Warnings the core raises while it carries on (a broken overlay or settings file ignored).

The core does not print: it records each distinct warning once per process. A face shows them:
the CLI installs a handler that prints each to stderr as it arrives; the desktop app calls
:func:`drain` and shows what it got in a banner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_lock = threading.Lock()
_seen: set[str] = set()
_pending: list[str] = []
_minor: set[str] = set()
_handler: Callable[[str], None] | None = None


def warn(message: str, *, minor: bool = False) -> None:
    """Record ``message`` (one sentence for the user); a repeat of the same text is dropped.
    ``minor``: it changes no value the app uses (an unknown setting ignored), so a face that shows
    only a few warnings shows it after those that do (a price that fell back to its default)."""
    with _lock:
        if message in _seen:
            return
        _seen.add(message)
        if minor:
            _minor.add(message)
        handler = _handler
        if handler is None:
            _pending.append(message)
    if handler is not None:
        handler(message)


def set_handler(handler: Callable[[str], None] | None) -> None:
    """Deliver warnings to ``handler`` as they arrive (and the ones already pending now)."""
    global _handler
    with _lock:
        _handler = handler
        waiting = list(_pending) if handler is not None else []
        if handler is not None:
            _pending.clear()
    if handler is not None:
        for message in waiting:
            handler(message)


def is_minor(message: str) -> bool:
    """Whether ``message`` was recorded as minor (see :func:`warn`)."""
    with _lock:
        return message in _minor


def drain() -> list[str]:
    """The warnings not delivered yet; they are not returned again."""
    with _lock:
        out = list(_pending)
        _pending.clear()
    return out


def reset() -> None:
    """Forget every warning (tests; a face that reloads its data after the user fixed a file)."""
    global _handler
    with _lock:
        _seen.clear()
        _minor.clear()
        _pending.clear()
        _handler = None
