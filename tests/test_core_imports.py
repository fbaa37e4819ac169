"""The domain core imports without Qt or torch, and --help stays light."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT

CORE_MODULES = [
    "gpuselect",
    "gpuselect.cli",
    "gpuselect.output",
    "gpuselect.hardware",
    "gpuselect.hardware.snapshot",
    "gpuselect.health",
    "gpuselect.health.rules",
    "gpuselect.bench",
    "gpuselect.bench.engine",
    "gpuselect.bench.findings",
    "gpuselect.commands.bench",
    "gpuselect.catalog",
    "gpuselect.commands.catalog",
    "gpuselect.workloads.presets",
    "gpuselect.workloads.transformer",
    "gpuselect.commands.workloads",
    "gpuselect.estimate.api",
    "gpuselect.estimate.perf",
    "gpuselect.commands.estimate",
]


def _loaded_after(code: str) -> set[str]:
    script = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _heavy(mods: set[str]) -> set[str]:
    return {m for m in mods if m.split(".")[0] in {"torch", "PySide6", "pyqtgraph", "shiboken6"}}


def test_core_imports_without_qt_or_torch() -> None:
    imports = "\n".join(f"import {m}" for m in CORE_MODULES)
    assert _heavy(_loaded_after(imports)) == set()


def test_cli_parser_build_imports_without_qt_or_torch() -> None:
    mods = _loaded_after("from gpuselect.cli import build_parser\nbuild_parser()")
    assert _heavy(mods) == set()


def test_paths_work_without_platformdirs(tmp_path, monkeypatch) -> None:
    import builtins

    from gpuselect import paths

    real_import = builtins.__import__

    def no_platformdirs(name, *a, **k):
        if name == "platformdirs":
            raise ImportError("not installed")
        return real_import(name, *a, **k)

    monkeypatch.delenv("GPUSELECT_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(builtins, "__import__", no_platformdirs)
    assert paths.config_dir() == tmp_path / "gpuselect"
