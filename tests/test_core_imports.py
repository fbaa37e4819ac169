"""The layers hold: the core imports neither Qt nor torch, only gpuselect.gui imports Qt, and no
face imports another. The static rules are import-linter contracts in pyproject.toml (run by
scripts/check and here); this file also imports every core module for real, found by walking
the package (no hand-kept list), and checks that the contracts name every top-level module."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import tomllib

import gpuselect
from tests.conftest import REPO_ROOT

#: torch code by definition (FLOP profiling of reference architectures): outside the rule.
TORCH_ONLY = {"gpuselect.workloads.reference_models"}
#: Build-time tracing of the presets and the `--model` subprocess (python -m gpuselect.workloads.trace_build).
TORCH_ONLY_PACKAGES = ("gpuselect.workloads.trace_build",)
HEAVY = {"torch", "PySide6", "pyqtgraph", "shiboken6"}


def _core_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(gpuselect.__path__, "gpuselect.")]
    return sorted(
        n
        for n in names
        if not n.startswith(("gpuselect.gui", *TORCH_ONLY_PACKAGES))
        and n != "gpuselect.__main__"
        and n not in TORCH_ONLY
    )


def _loaded_after(code: str) -> set[str]:
    script = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _heavy(mods: set[str]) -> set[str]:
    return {m for m in mods if m.split(".")[0] in HEAVY}


def test_every_core_module_imports_without_qt_or_torch() -> None:
    modules = _core_modules()
    assert len(modules) > 40 and "gpuselect.estimate.api" in modules and "gpuselect.commands.estimate" in modules
    loaded = _loaded_after("\n".join(f"import {m}" for m in modules))
    assert set(modules) <= loaded
    assert _heavy(loaded) == set()


def test_cli_parser_build_imports_without_qt_or_torch() -> None:
    mods = _loaded_after("from gpuselect.cli import build_parser\nbuild_parser()")
    assert _heavy(mods) == set()


def test_contracts_name_every_top_level_module() -> None:
    """A new top-level module must be placed in the layer contracts (or this test fails)."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contracts = {c["id"]: c for c in config["contracts"]}
    top = {f"gpuselect.{m.name}" for m in pkgutil.iter_modules(gpuselect.__path__)} - {"gpuselect.__main__"}
    assert set(contracts["core-no-qt"]["source_modules"]) == top - {"gpuselect.gui"}
    assert set(contracts["core-torch-lazy"]["source_modules"]) == top
    faces = {"gpuselect.cli", "gpuselect.commands", "gpuselect.gui", "gpuselect.report"}
    app_layer = {"gpuselect.app", "gpuselect.fleet"}  # workflows the faces share: they may use the report
    assert set(contracts["core-no-face"]["source_modules"]) == top - faces - app_layer
    assert set(contracts["app-layer"]["source_modules"]) == app_layer


def test_layer_contracts_hold() -> None:
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    out = subprocess.run(
        [sys.executable, "-c", code, "--no-cache"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


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
