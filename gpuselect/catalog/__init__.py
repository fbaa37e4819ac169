"""The GPU catalog: sourced specs for every card a buyer considers.

``load_catalog()`` reads the built-in ``gpu_catalog/*.toml`` and the user's overlay
(``<config dir>/catalog_overlay.toml``), validating both; problems are collected, not raised,
so the app always starts on the built-in data.
"""

from __future__ import annotations

import functools
from pathlib import Path

from gpuselect.catalog.loader import OVERLAY_NAME, LoadResult, Problem, apply_overlay, load_builtin
from gpuselect.catalog.match import MatchResult, NameIndex, normalise
from gpuselect.catalog.schema import FAMILIES, GpuEntry
from gpuselect.types import Family

__all__ = ["Catalog", "GpuEntry", "MatchResult", "Problem", "load_catalog", "overlay_path"]

_FAMILY_ORDER = {f: i for i, f in enumerate(FAMILIES)}


class Catalog:
    def __init__(self, result: LoadResult) -> None:
        self.entries: list[GpuEntry] = sorted(
            result.entries, key=lambda e: (_FAMILY_ORDER.get(e.family, 99), e.vendor, e.release_date, e.name)
        )
        self.problems: list[str] = [str(p) for p in result.problems]
        self.overlay_problems: list[str] = [str(p) for p in result.overlay_problems]  # the user's file's
        self.sources: dict[str, dict[str, str]] = result.sources
        self._by_id = {e.id: e for e in self.entries}
        self._index = NameIndex(self.entries)

    def get(self, gpu_id: str) -> GpuEntry | None:
        return self._by_id.get(gpu_id)

    def by_family(self, family: Family) -> list[GpuEntry]:
        return [e for e in self.entries if e.family == family]

    def match(self, name: str, memory_bytes: int | None = None) -> MatchResult | None:
        return self._index.match(name, memory_bytes)

    def lookup(self, query: str) -> list[GpuEntry]:
        """The cards a person means by ``query``: its id or name exactly; else every card whose name
        holds all its words ("H100" is three cards, not the first of them), the one without a brand
        word left over where there is one ("RTX 4090", not also its laptop namesake); else every
        card whose name or id contains it, spaces and dashes aside ("mi300", "rtx4090")."""
        q = query.strip().lower()
        exact = self.get(q) or next((e for e in self.entries if e.name.lower() == q), None)
        if exact is not None:
            return [exact]
        words = set(normalise(query))
        cands = [e for e in self.entries if words and words <= set(normalise(e.name)) | set(normalise(e.id))]
        plain = [e for e in cands if set(normalise(e.name)) - _BRANDS == words - _BRANDS]
        if len(plain) == 1:
            return plain
        if cands:
            return cands
        part = _compact(query)
        return [e for e in self.entries if part and (part in _compact(e.name) or part in _compact(e.id))]

    def near(self, query: str, n: int = 3) -> list[str]:
        """Names and ids close to a ``query`` that matched nothing (a typo's "did you mean")."""
        import difflib

        names = [e.name.lower() for e in self.entries] + [e.id for e in self.entries]
        return difflib.get_close_matches(query.strip().lower(), names, n=n, cutoff=0.5)

    def source_text(self, key: str) -> str:
        """A source key resolved to its title and address, for people."""
        src = self.sources.get(key.split(":", 1)[0].strip())
        if not src:
            return key
        return f"{src.get('title', key)} <{src.get('url', '')}>"


_BRANDS = frozenset({"nvidia", "geforce", "amd", "radeon", "instinct", "tesla", "quadro"})


def _compact(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def overlay_path() -> Path:
    from gpuselect.paths import config_dir

    return config_dir() / OVERLAY_NAME


def user_overlay() -> Path | None:
    """The overlay's path, or None where there is no config folder (said once, as a warning)."""
    from gpuselect import notices
    from gpuselect.paths import NoConfigFolderError

    try:
        return overlay_path()
    except NoConfigFolderError as exc:
        notices.warn(exc.fallback())
        return None


def load_catalog(*, folder: Path | None = None, overlay: Path | None = None, use_overlay: bool = True) -> Catalog:
    if folder is None and overlay is None and use_overlay:
        default = user_overlay()
        return _cached_default(str(default) if default else "")
    from gpuselect.paths import catalog_dir

    result = load_builtin(folder or catalog_dir())
    path = (overlay or user_overlay()) if use_overlay else None
    if path is not None:
        apply_overlay(result, path)
    return Catalog(result)


@functools.lru_cache(maxsize=4)
def _cached_default(overlay: str) -> Catalog:
    """The built-in catalog with the overlay at ``overlay`` ("": none, there is no config folder)."""
    from gpuselect.paths import catalog_dir

    result = load_builtin(catalog_dir())
    if overlay:
        apply_overlay(result, Path(overlay))
    return Catalog(result)
