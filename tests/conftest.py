"""Test-wide settings: offscreen Qt, isolated config/cache folders, no real GPU driver, and no
test may leave a thread running."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO_ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "real_gpu_driver: the test may load the real NVML/amdsmi bindings (default: they are unavailable)"
    )


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read or write the real user's config or cache."""
    base = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("GPUSELECT_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("GPUSELECT_CACHE_DIR", str(base / "cache"))


@pytest.fixture(autouse=True)
def _no_real_gpu_driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test sees no GPU unless it brings a fake (tests/fakes) or is marked ``real_gpu_driver``:
    results must not depend on the machine the tests run on. ``sys.modules[name] = None`` makes
    ``import name`` raise ModuleNotFoundError, which gpuselect treats as "not installed"."""
    if request.node.get_closest_marker("real_gpu_driver"):
        return
    for name in ("pynvml", "amdsmi"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture(autouse=True)
def _no_leftover_threads() -> Iterator[None]:
    """Fail a test that leaves a thread running (a worker not joined, a timer not stopped)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5.0  # a thread finishing its last step is not a leak
    while True:
        left = [t for t in threading.enumerate() if t not in before and t.is_alive() and not _exempt(t)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert not left, f"the test left threads running: {', '.join(t.name for t in left)}"


def _exempt(t: threading.Thread) -> bool:
    # Qt's global thread pool keeps idle workers alive for 30 s by design (QThreadPool expiry);
    # they are Python dummy threads, not ours.
    return isinstance(t, threading._DummyThread)
