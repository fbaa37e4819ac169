"""Bounded reading of the user's files (settings, catalog overlay, ``--bench``, ``--config``).

Every user file goes through here so that one bad file cannot stop the program: only regular
files are read (a FIFO would block, ``/dev/zero`` never ends), at most ``max_bytes`` of them,
as UTF-8 or as UTF-8/UTF-16/UTF-32 with a byte-order mark (PowerShell's ``>`` writes UTF-16),
and parsed documents nested deeper than ``MAX_DEPTH`` are refused (the parsers recurse).
Every failure is a :class:`DataError` with one sentence naming the file and the problem.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from gpuselect.errors import DataError

#: Default size limit: the largest legitimate inputs (a bench result, an overlay with every
#: catalog card) are tens of kilobytes.
MAX_BYTES = 4 * 1024 * 1024
#: Deepest nesting of arrays/objects accepted: real inputs nest 4 levels at most.
MAX_DEPTH = 64

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: its BOM starts with UTF-16 LE's
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def read_bytes(path: str | os.PathLike[str], *, what: str = "file", max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; anything else is a DataError."""
    p = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not block; we refuse it just after.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        if str(path) == "-":  # the usual name of standard input: "- does not exist" read as a bug
            raise DataError(
                f"the {what} - would be standard input, which gpuselect does not read; give a file"
            ) from None
        raise DataError(f"the {what} {p} does not exist") from None
    except IsADirectoryError:
        raise DataError(f"the {what} {p} is a folder, not a file") from None
    except OSError as exc:
        raise DataError(f"cannot read the {what} {p}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise DataError(f"the {what} {p} is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise DataError(f"the {what} {p} is not a regular file (a device, pipe or socket); give a file")
        if st.st_size > max_bytes:
            raise DataError(f"the {what} {p} is {st.st_size:,} bytes, over the {max_bytes:,}-byte limit")
        chunks: list[bytes] = []
        total = 0
        while True:  # st_size can lie (a file still growing, /proc): read at most max_bytes + 1
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise DataError(f"the {what} {p} is over the {max_bytes:,}-byte limit")
        return b"".join(chunks)
    except OSError as exc:
        raise DataError(f"cannot read the {what} {p}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def decode_text(data: bytes, *, what: str, path: str | os.PathLike[str]) -> str:
    """UTF-8, or any UTF with a byte-order mark; the mark itself is dropped."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            body, enc = data[len(bom) :], encoding
            break
    else:
        body, enc = data, "utf-8"
        if b"\x00" in body:  # valid UTF-8 but never in a text file: UTF-16 without its mark
            raise DataError(f"the {what} {path} holds NUL bytes (UTF-16 without a byte-order mark?); save it as UTF-8")
    try:
        return body.decode(enc)
    except UnicodeDecodeError:
        raise DataError(
            f"the {what} {path} is not text in UTF-8 (or UTF-16 with a byte-order mark); save it as UTF-8"
        ) from None


def read_text(path: str | os.PathLike[str], *, what: str = "file", max_bytes: int = MAX_BYTES) -> str:
    return decode_text(read_bytes(path, what=what, max_bytes=max_bytes), what=what, path=path)


def check_depth(value: Any, *, what: str, path: str | os.PathLike[str], max_depth: int = MAX_DEPTH) -> None:
    """Refuse documents nested deeper than ``max_depth`` (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Any
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            raise DataError(f"the {what} {path} nests deeper than {max_depth} levels")
        stack.extend((c, depth + 1) for c in children)


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen and seen[k] != v:  # the same value twice is harmless
            raise _DuplicateKeyError(k)
        seen[k] = v
    return seen


def parse_json(
    text: str, *, what: str, path: str | os.PathLike[str], max_depth: int = MAX_DEPTH, unique_keys: bool = False
) -> Any:
    """JSON without NaN/Infinity (not JSON, and they poison every figure computed from them).
    ``unique_keys``: a key given twice in one object with different values is an error (json keeps
    the last silently: a hand-written config with hidden_size twice was estimated at the second)."""
    if not text.strip():
        # what `gpuselect bench --format json > FILE` leaves when it is interrupted or fails
        why = " (a run interrupted while writing to it leaves an empty file)" if what == "benchmark result" else ""
        raise DataError(f"the {what} {path} is empty{why}")
    try:
        doc = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys if unique_keys else None)
    except json.JSONDecodeError as exc:
        # json's "Unterminated string starting at" names its position itself: no "at at line 1"
        msg = exc.msg.removesuffix(" at")
        raise DataError(
            f"the {what} {path} is not valid JSON ({msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except _DuplicateKeyError as exc:
        raise DataError(
            f"the {what} {path} gives {exc.args[0][:60]!r} twice, with different values; keep the one you mean"
        ) from None
    except ValueError as exc:
        # Python's digit limit for int("999...") speaks of sys.set_int_max_str_digits(), not of the file
        why = "a number longer than 4,300 digits" if "int_max_str_digits" in str(exc) else str(exc)
        raise DataError(f"the {what} {path} is not valid JSON ({why})") from None
    except RecursionError:
        raise DataError(f"the {what} {path} nests too deeply") from None
    check_depth(doc, what=what, path=path, max_depth=max_depth)
    return doc


def read_json(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    unique_keys: bool = False,
) -> Any:
    text = read_text(path, what=what, max_bytes=max_bytes)
    return parse_json(text, what=what, path=path, max_depth=max_depth, unique_keys=unique_keys)


def read_toml(
    path: str | os.PathLike[str], *, what: str = "file", max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> dict[str, Any]:
    text = read_text(path, what=what, max_bytes=max_bytes)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"the {what} {path} is not valid TOML ({exc})") from None
    except RecursionError:
        raise DataError(f"the {what} {path} nests too deeply") from None
    check_depth(doc, what=what, path=path, max_depth=max_depth)
    return doc


def finite_number(value: Any) -> bool:
    """A real int or float (not a bool), finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int too large for a float
        return False


def check_fields(obj: Any, where: str) -> None:
    """Raise ``DataError`` unless every field of dataclass ``obj`` (and of the dataclasses, lists
    and dicts inside it) holds what its annotation says: a document read back from JSON (a saved
    fleet report) may have been edited, and a string where a number belongs would fail far later
    as an internal error. Numbers must be finite; ``Any`` is not checked."""
    import dataclasses
    import types
    import typing

    def ok(value: Any, tp: Any, at: str) -> None:
        if tp is Any:
            return
        origin = typing.get_origin(tp)
        if origin in (typing.Union, types.UnionType):
            errors = []
            for alt in typing.get_args(tp):
                try:
                    ok(value, alt, at)
                    return
                except DataError as exc:
                    errors.append(exc)
            raise errors[-1]
        if tp is type(None):
            if value is not None:
                raise DataError(f"{where}: {at} should be empty (null), not {type(value).__name__}")
            return
        if origin in (list, tuple):
            if not isinstance(value, (list, tuple)):
                raise DataError(f"{where}: {at} should be a list, not {type(value).__name__}")
            args = typing.get_args(tp)
            for i, v in enumerate(value):
                ok(v, args[0] if args else Any, f"{at}[{i}]")
            return
        if origin is dict:
            if not isinstance(value, dict):
                raise DataError(f"{where}: {at} should be an object, not {type(value).__name__}")
            args = typing.get_args(tp)
            for k, v in value.items():
                ok(v, args[1] if len(args) == 2 else Any, f"{at}.{k}")
            return
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            if not isinstance(value, tp):
                raise DataError(f"{where}: {at} should be an object, not {type(value).__name__}")
            check(value, at)
            return
        if tp is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise DataError(f"{where}: {at} should be a finite number, not {str(value)[:40]!r}")
            return
        if tp is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise DataError(f"{where}: {at} should be a whole number, not {str(value)[:40]!r}")
            return
        if isinstance(tp, type) and not isinstance(value, tp):
            raise DataError(f"{where}: {at} should be {tp.__name__}, not {type(value).__name__}")

    def check(o: Any, prefix: str) -> None:
        hints = typing.get_type_hints(type(o))
        for f in dataclasses.fields(o):
            ok(getattr(o, f.name), hints.get(f.name, Any), f"{prefix}.{f.name}" if prefix else f.name)

    check(obj, "")


_CONTROL = frozenset(chr(c) for c in (*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)))


def one_line(text: str, limit: int = 300) -> str:
    """A reason as a record keeps it: its first line, at most ``limit`` characters."""
    first = text.splitlines()[0] if text else text
    return first if len(first) <= limit else first[: limit - 1] + "…"


def check_plain_text(value: Any, where: str, *, at: str = "", max_len: int | None = None) -> None:
    """Raise ``DataError`` where a string anywhere in ``value`` (a parsed document) holds a control
    character other than tab and newline (printed to a terminal, an escape sequence in a saved
    file could clear the screen or retitle the window), or is longer than ``max_len`` (a 1,000-
    character CPU name broke the PDF's table layout)."""
    if isinstance(value, str):
        if any(ch in _CONTROL for ch in value):
            raise DataError(f"{where}: {at or 'a text'} holds a control character; the file is damaged or was edited")
        if max_len is not None and len(value) > max_len:
            raise DataError(
                f"{where}: {at or 'a text'} is {len(value):,} characters long (at most {max_len:,}); "
                "the file is damaged or was edited"
            )
    elif isinstance(value, dict):
        for k, v in value.items():
            check_plain_text(k, where, at=f"{at}.{k}" if at else str(k), max_len=max_len)
            check_plain_text(v, where, at=f"{at}.{k}" if at else str(k), max_len=max_len)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_plain_text(v, where, at=f"{at}[{i}]", max_len=max_len)
