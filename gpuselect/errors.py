"""Exceptions that carry a message meant for the user.

A ``GpuselectError``'s message is one clear sentence naming what is wrong; the CLI prints it to
stderr without a traceback, the GUI shows it in the window.
"""

from __future__ import annotations


class GpuselectError(Exception):
    """A problem the user can understand and fix (bad input, unreadable file, ...)."""

    exit_code = 2


class UsageError(GpuselectError):
    """Bad command-line usage or nonsense input values (exit status 2)."""

    exit_code = 2


class DataError(GpuselectError):
    """A data file (catalog, settings, workload config) is missing, corrupt or invalid."""

    exit_code = 2


class OutputError(GpuselectError):
    """An output file could not be written (unwritable path, full disk)."""

    exit_code = 1
