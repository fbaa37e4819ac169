"""Safe file writing: a reader never sees a half-written file, an old file survives errors, and
a target that is not a regular file (``/dev/stdout``, ``/dev/null``, a FIFO, a link to a terminal)
is written in place, never replaced by a new file."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from gpuselect.errors import OutputError


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path``: a regular file (or a new one) through a temporary file in the
    same folder and a rename; a device, pipe or socket in place; a folder is refused."""
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
        _write_in_place(target, data)
        return target
    if os.path.islink(target):
        # A link to a regular file: replace the file it points to, keep the link.
        target = Path(os.path.realpath(target))
    folder = target.parent if str(target.parent) else Path(".")
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
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return given


def _write_in_place(target: Path, data: bytes) -> None:
    """A device or pipe: open it for writing (no truncation needed) and write the data."""
    try:
        with open(target, "wb") as fh:
            fh.write(data)
            fh.flush()
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))
