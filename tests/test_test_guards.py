"""The guards in tests/conftest.py work: a test that leaves a thread running fails, and a test
cannot reach the real NVML/amdsmi bindings unless it is marked ``real_gpu_driver``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

INNER = """
import sys, threading, time
import pytest

def test_leaks_a_thread():
    stop = threading.Event()
    threading.Thread(target=stop.wait, args=(30,), name="leaky", daemon=True).start()

def test_joins_its_thread():
    t = threading.Thread(target=time.sleep, args=(0.01,))
    t.start()
    t.join()

def test_no_driver():
    with pytest.raises(ImportError):
        import pynvml  # noqa: F401
    with pytest.raises(ImportError):
        import amdsmi  # noqa: F401

@pytest.mark.real_gpu_driver
def test_opted_in():
    assert sys.modules.get("pynvml", "absent") is not None
"""


def test_conftest_guards(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    (inner / "tests").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "tests" / "conftest.py", inner / "tests" / "conftest.py")
    (inner / "tests" / "__init__.py").write_text("")
    (inner / "tests" / "test_inner.py").write_text(INNER)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "tests"],
        cwd=inner,
        capture_output=True,
        text=True,
        timeout=120,
    )
    text = out.stdout
    assert "ERROR tests/test_inner.py::test_leaks_a_thread" in text and "leaky" in text, text[-3000:]
    for name in ("test_joins_its_thread", "test_no_driver", "test_opted_in"):
        assert f"PASSED tests/test_inner.py::{name}" in text, text[-3000:]
