"""One module per CLI subcommand. Import only the standard library at module level."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from enum import Enum
from typing import TypeVar

E = TypeVar("E", bound=Enum)

FORMATS_TEXT_JSON = ("text", "json")


def enum_type(kind: type[E]) -> Callable[[str], E | str]:
    """An argparse ``type`` that turns a choice into its member (``choices`` from the same enum):
    a string that names none stays a string, so argparse's own "invalid choice" message, which
    lists the choices, answers it."""

    def member(text: str) -> E | str:
        try:
            return kind(text)
        except ValueError:
            return text

    member.__name__ = kind.__name__.lower()
    return member


def add_format_option(parser: argparse.ArgumentParser, choices: tuple[str, ...] = FORMATS_TEXT_JSON) -> None:
    parser.add_argument(
        "--format",
        choices=choices,
        default="text",
        help="output format: text for people, json for scripts (default: text)",
    )
