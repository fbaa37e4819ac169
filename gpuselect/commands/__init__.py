"""One module per CLI subcommand. Import only the standard library at module level."""

from __future__ import annotations

import argparse

FORMATS_TEXT_JSON = ("text", "json")


def add_format_option(parser: argparse.ArgumentParser, choices: tuple[str, ...] = FORMATS_TEXT_JSON) -> None:
    parser.add_argument(
        "--format",
        choices=choices,
        default="text",
        help="output format: text for people, json for scripts (default: text)",
    )
