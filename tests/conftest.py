"""Test-wide settings: offscreen Qt, isolated config/cache folders, no real GPU assumed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read or write the real user's config or cache."""
    base = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("GPUSELECT_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("GPUSELECT_CACHE_DIR", str(base / "cache"))
