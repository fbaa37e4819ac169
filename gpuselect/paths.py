"""Where gpuselect finds its shipped data and keeps the user's files.

Shipped data (``gpu_catalog/``) sits at the repository root in a source tree or
an editable install, and under ``gpuselect/_data/`` inside an installed wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpuselect.errors import DataError

_PACKAGE_DIR = Path(__file__).resolve().parent
APP_NAME = "gpuselect"


def _shipped(name: str) -> Path:
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"gpuselect's {name}/ data folder is missing from the installation")


def catalog_dir() -> Path:
    """The built-in GPU catalog folder."""
    return _shipped("gpu_catalog")


class NoConfigFolderError(DataError):
    """No HOME, and the user database names no home (a container run under an arbitrary user id):
    there is no config folder. The CLI goes on with the defaults (it was an internal error)."""

    def fallback(self) -> str:
        """The warning where a reader goes on without the folder (one text: said once)."""
        return f"{self}; using the default settings and the built-in catalog without an overlay"


NO_CONFIG_FOLDER = (
    "no config folder: HOME is not set and the user database names no home directory "
    "(set HOME, XDG_CONFIG_HOME or GPUSELECT_CONFIG_DIR)"
)


def config_dir() -> Path:
    """The user's config folder (``GPUSELECT_CONFIG_DIR`` overrides it, e.g. in tests)."""
    override = os.environ.get("GPUSELECT_CONFIG_DIR")
    if override:
        return Path(override)
    try:
        try:
            from platformdirs import user_config_path
        except ImportError:  # a bare source tree (e.g. on a GPU server): the XDG default
            return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / APP_NAME
        return user_config_path(APP_NAME, appauthor=False)
    except RuntimeError as exc:  # Path.home() and platformdirs: "could not determine the home directory"
        raise NoConfigFolderError(NO_CONFIG_FOLDER) from exc


def cache_dir() -> Path:
    """The user's cache folder (``GPUSELECT_CACHE_DIR`` overrides it)."""
    override = os.environ.get("GPUSELECT_CACHE_DIR")
    if override:
        return Path(override)
    try:
        from platformdirs import user_cache_path
    except ImportError:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / APP_NAME
    return user_cache_path(APP_NAME, appauthor=False)
