"""Safe file writing: a reader never sees a half-written file, an old file survives errors, and
a target that is not a regular file (``/dev/stdout``, ``/dev/null``, a FIFO, a link to a terminal)
is written in place, never replaced by a new file."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from gpuselect.errors import OutputError

#: How much of an existing file's start ``written_by_gpuselect`` reads (JSON and Markdown name
#: gpuselect there; a PDF is read whole up to ``_PDF_SNIFF_BYTES``: its creator may be mid-file).
_SNIFF_BYTES = 16 * 1024
_PDF_SNIFF_BYTES = 32 * 1024 * 1024


def written_by_gpuselect(path: Path) -> bool:
    """Whether an existing regular file is one of gpuselect's reports by its signature, not by a
    mention (a user's notes that name gpuselect are not ours): JSON that starts with our
    ``schema_version`` and a report's ``kind``, Markdown that starts with a report's title and stamp
    line, a PDF whose creator is gpuselect. An empty file holds nothing to lose."""
    try:
        size = path.stat().st_size
        if size == 0:
            return True
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
            if head.startswith(b"%PDF"):
                # the document information (its creator) may sit anywhere in the file: read it whole,
                # up to a bound far above our reports' size (tens to hundreds of KB)
                if size > _PDF_SNIFF_BYTES:
                    return False
                return re.search(rb"/Creator \(gpuselect[ )]", head + fh.read()) is not None
    except OSError:
        return False
    if re.match(rb'\{\s*"schema_version": \d+,\s*"kind": "(report|fleet)"', head):
        return True  # a report's, not a saved benchmark's or estimate's (those are the user's data)
    # a report's title, then its stamp line: "<time> · gpuselect <version> · ..."
    return (
        re.match(
            rb"# gpuselect (hardware|fleet) report\n\n\d{4}-\d\d-\d\dT[^\n]* \xc2\xb7 gpuselect \S+ \xc2\xb7 ", head
        )
        is not None
    )


def _saved_record_kind(path: Path) -> str | None:
    """ "benchmark record" or "estimate" for a file that starts like gpuselect's JSON of one: the
    user's data (a record ``--bench`` reads), so replacing it still needs ``--force``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return None
    m = re.match(rb'\{\s*"schema_version": \d+,\s*"kind": "(bench|estimate)"', head)
    return None if m is None else {b"bench": "benchmark record", b"estimate": "estimate"}[m.group(1)]


def _read_only(target: Path, st: os.stat_result) -> bool:
    """No write permission, or none in its mode bits: root may write a 0444 file, but its owner
    marked it read-only, and a report must not replace it."""
    return not os.access(target, os.W_OK) or not st.st_mode & 0o222


def check_output(
    path: str | os.PathLike[str], *, inputs: tuple[str | os.PathLike[str] | None, ...] = (), force: bool = False
) -> None:
    """Refuse, before any work, to write where something would be lost: an empty path, a folder
    that does not exist, one of the command's own input files, a read-only file, or (without
    ``force``) an existing file gpuselect did not write."""
    if not str(path).strip():
        raise OutputError("the output file name is empty; give a file name to write to")
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    _check_names_a_file(path, folder)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        return  # a folder is refused when written; a device or pipe is written in place
    for given in inputs:
        if given is None:
            continue
        with contextlib.suppress(OSError):
            if os.path.samefile(given, target):
                raise OutputError(f"{target} is also an input of this command; write the output to another file")
    if _read_only(target, st):
        raise OutputError(f"{target} is read-only; choose another file or make it writable")
    if not force and not written_by_gpuselect(target):
        kind = _saved_record_kind(target)
        what = f"is a saved gpuselect {kind} (kept unless asked)" if kind else "was not written by gpuselect"
        raise OutputError(f"{target} exists and {what}; choose another file, or pass --force to replace it")


def _check_names_a_file(path: str | os.PathLike[str], folder: Path) -> None:
    """A name ending in "/" means a folder: Path drops the slash, and `-o out/` wrote a file named
    "out". A parent that is a file was "the folder ... does not exist"."""
    text = os.fspath(path)
    if text.endswith(("/", os.sep)) and not os.path.isdir(text):
        raise OutputError(f"{text} ends in {text[-1]}, a folder's name; give a file name to write to")
    if not folder.is_dir():
        what = f"{folder} is a file, not a folder" if folder.exists() else f"the folder {folder} does not exist"
        raise OutputError(f"cannot write {Path(path)}: {what}")


def atomic_write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    make_parents: bool = False,
    on_wait: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``data`` to ``path``: a regular file (or a new one) through a temporary file in the
    same folder and a rename; a device, pipe or socket in place; a folder is refused, and so is a
    folder that does not exist unless ``make_parents`` (a typo must not create a tree).
    ``on_wait``: called with the path before waiting for a named pipe that has no reader yet (the
    write blocks until one opens it; a face says so rather than hang in silence)."""
    if not str(path).strip():
        raise OutputError("the output file name is empty; give a file name to write to")
    target = given = Path(path)
    try:
        st = os.stat(target)  # follows links: /dev/stdout -> /proc/self/fd/1 -> the terminal/pipe
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{target} is a folder; give a file name to write to")
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(target, data, on_wait if stat.S_ISFIFO(st.st_mode) else None)
        return target
    if os.path.islink(target):
        # A link to a regular file: replace the file it points to, keep the link.
        target = Path(os.path.realpath(target))
    folder = target.parent if str(target.parent) else Path(".")
    if st is not None and _read_only(target, st):
        raise OutputError(f"{target} is read-only; choose another file or make it writable")
    if not make_parents:
        _check_names_a_file(path if target == given else target, folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (or the old file's).
        try:
            mode = target.stat().st_mode & 0o777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp_name, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
    except BaseException as exc:
        # Ctrl-C during the write or fsync left ".r.pdf.x1y2.tmp" beside the report
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
        raise
    return given


def _write_in_place(target: Path, data: bytes, on_wait: Callable[[Path], None] | None = None) -> None:
    """A device or pipe: open it for writing (no truncation needed) and write the data. A pipe
    (``on_wait`` given) is first opened without blocking: with no reader yet that fails (ENXIO),
    ``on_wait`` is told, and the blocking open waits for one (/dev/stdout, process substitution
    and a pipe someone reads open at once)."""
    try:
        fd = None
        if on_wait is not None:
            try:
                fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
                os.set_blocking(fd, True)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                on_wait(target)
        with os.fdopen(fd, "wb") if fd is not None else open(target, "wb") as fh:
            fh.write(data)
            fh.flush()
    except BrokenPipeError as exc:
        if _is_stdout(target):
            raise  # `report -o - | head`: the reader left, as any command's output into head (exit 0)
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc


def _is_stdout(target: Path) -> bool:
    """Whether ``target`` is this process's standard output (/dev/stdout, /proc/self/fd/1)."""
    try:
        a, b = os.stat(target), os.fstat(1)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def atomic_write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    make_parents: bool = False,
    on_wait: Callable[[Path], None] | None = None,
) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), make_parents=make_parents, on_wait=on_wait)
