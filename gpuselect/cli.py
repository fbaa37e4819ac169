"""The command-line face: ``gpuselect [gui|detect|health|...]``.

Each subcommand lives in ``gpuselect/commands/<name>.py`` and defines ``HELP``,
``configure(parser)`` and ``run(args) -> int``. Those modules import only the standard library
at the top, so ``--help`` stays fast: torch and Qt are imported inside ``run`` when needed.

Conventions every subcommand follows:
- ``--format json`` prints one JSON document on stdout with ``schema_version``;
- errors go to stderr as one sentence, exit status 2 for bad usage or input;
- text output is for people.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import errno
import importlib
import os
import re
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn, TextIO, cast

from gpuselect import __version__, notices
from gpuselect.errors import GpuselectError

#: Subcommands in the order ``--help`` lists them; each is ``gpuselect.commands.<name>``.
COMMANDS: tuple[str, ...] = (
    "gui",
    "detect",
    "health",
    "bench",
    "catalog",
    "workloads",
    "estimate",
    "report",
    "fleet",
    "exporter",
)

EXIT_INTERNAL = 70  # EX_SOFTWARE: distinct from usage (2) and health's codes


def _command_module(name: str) -> ModuleType:
    return importlib.import_module(f"gpuselect.commands.{name}")


class _Parser(argparse.ArgumentParser):
    """One sentence for a bad option, like every other input error (not the whole usage block
    before it, which buried the sentence under twenty lines)."""

    _given: tuple[str, ...] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # Kept for error(): argparse reports a missing required option before an unknown one, so
        # `estimate --work resnet50` read "one of the arguments --workload ... is required".
        self._given = tuple(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def unknown_options(self, tokens: Sequence[str]) -> list[str]:
        """The option-like tokens this parser does not know (a negative number is a value)."""
        unknown = []
        for tok in tokens:
            if tok == "--":
                break
            option = tok.split("=", 1)[0]
            if (
                tok.startswith("-")
                and tok != "-"
                and not _NUMBER.match(tok)
                and option not in self._option_string_actions
            ):
                unknown.append(tok)
        return unknown

    def unrecognized(self, extra: Sequence[str]) -> str:
        """ "unrecognized arguments: ..." and, for an abbreviation, the option it abbreviates."""
        message = f"unrecognized arguments: {' '.join(extra)}"
        meant = sorted(
            {
                o
                for tok in extra
                if tok.startswith("--") and tok.split("=", 1)[0] != "--"  # a bare "--" abbreviates every option
                for o in self._option_string_actions
                if o.startswith(tok.split("=", 1)[0])
            }
        )
        if meant:
            message += f" (option names are given in full: did you mean {' or '.join(meant)}?)"
        return message

    def error(self, message: str) -> NoReturn:
        unknown = self.unknown_options(self._given)
        if unknown and " required" in message:  # the unknown option is the mistake, not the missing one
            message = self.unrecognized(unknown)
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def build_parser() -> _Parser:
    # allow_abbrev=False everywhere: an abbreviation must never pick an option (``--mode`` was
    # once read as ``--model``, which runs a file's code).
    parser = _Parser(
        prog="gpuselect",
        allow_abbrev=False,
        description=(
            "What hardware do I need to train this, how long will it take, and what will it "
            "cost? Without a subcommand, opens the desktop app."
        ),
    )
    parser.add_argument("--version", action="version", version=f"gpuselect {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = _command_module(name)
        sp = sub.add_parser(name, help=module.HELP, description=module.HELP, allow_abbrev=False)
        module.configure(sp)
        sp.set_defaults(_module=module, _parser=sp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the command's own parser, which points to its own --help
        named_by: _Parser = getattr(args, "_parser", parser)
        named_by.error(named_by.unrecognized(extra))
    module: ModuleType = getattr(args, "_module", None) or _command_module("gui")
    if module.__name__ != "gpuselect.commands.gui":  # the desktop app shows them in a banner
        notices.set_handler(_print_warning)
    _escape_what_stdout_cannot_encode()
    stderr = sys.stderr
    sys.stderr = _diagnostics(stderr)
    try:
        return _run(module, args)
    finally:
        sys.stderr = stderr


def _run(module: ModuleType, args: argparse.Namespace) -> int:
    try:
        rc = int(module.run(args))
        if sys.stdout is None:  # started with stdout closed (`>&-`): Python has none
            raise OSError(errno.EBADF, "the output is closed")
        sys.stdout.flush()  # a full disk or closed output fails here, inside the handlers below
        return rc
    except GpuselectError as exc:
        print(f"gpuselect: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("gpuselect: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` and closed early: not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            return _internal(exc)
        # /dev/full, a closed or failing output: one sentence, not "internal error, please report"
        if sys.stdout is not None:  # else there is nothing to flush at exit
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"gpuselect: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, the traceback on request
        return _internal(exc)


class _Diagnostics:
    """stderr for notes, warnings and progress, which never stop the work: a reader that went away
    (`bench -o rec.json 2>&1 | head -1`) ended the benchmark at its next progress line, unsaved,
    with exit status 0; the lines after it are dropped and the command finishes."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        try:
            return self._inner.write(text)
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        # what is still buffered goes to /dev/null at the next flush, not to the closed pipe
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._inner.fileno())

    def __getattr__(self, name: str) -> object:  # isatty, fileno, encoding ...: the stream's own
        return getattr(self._inner, name)


def _diagnostics(stderr: TextIO | None) -> TextIO:
    """The stream diagnostics go to. Started with stderr closed (`2>&-`) Python has none, and
    print(file=None) writes to stdout: a note landed inside `--format json`'s document."""
    if stderr is None:
        return open(os.devnull, "w", encoding="utf-8")
    return cast(TextIO, _Diagnostics(stderr))


#: Write errors of the output itself (a full disk, a closed descriptor, an I/O error).
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT, errno.EFBIG})


def _escape_what_stdout_cannot_encode() -> None:
    """Where stdout is not UTF-8 (LC_ALL=C, PYTHONIOENCODING=ascii), a character it cannot encode
    ("°", "✗") is written as a \\uXXXX escape, which keeps JSON valid and text readable; it was an
    internal error (UnicodeEncodeError)."""
    enc = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if not enc or enc.startswith("utf") or not hasattr(sys.stdout, "reconfigure"):
        return
    try:
        codecs.lookup_error(_ESCAPE)
    except LookupError:
        codecs.register_error(_ESCAPE, _json_escape)
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stdout.reconfigure(errors=_ESCAPE)


_ESCAPE = "gpuselect-escape"


def _json_escape(err: UnicodeError) -> tuple[str, int]:
    """The characters stdout cannot encode as JSON's \\uXXXX escapes (UTF-16 units)."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    units = err.object[err.start : err.end].encode("utf-16-be")
    codes = (int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2))
    escaped = "".join(f"\\u{c:04x}" for c in codes)
    return escaped, err.end


def _internal(exc: BaseException) -> int:
    if os.environ.get("GPUSELECT_DEBUG"):
        raise exc
    print(
        f"gpuselect: internal error: {type(exc).__name__}: {exc} "
        "(set GPUSELECT_DEBUG=1 for the traceback, and please report it)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _print_warning(message: str) -> None:
    print(f"gpuselect: warning: {message}", file=sys.stderr)


def gui_main() -> int:
    """Entry point of the ``gpuselect-gui`` GUI script."""
    return main(["gui", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
