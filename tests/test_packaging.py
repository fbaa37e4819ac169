"""The installed wheel carries the catalog and resources, and finds them (not the source tree)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytest.importorskip("hatchling")


@pytest.mark.slow
def test_wheel_ships_and_finds_data(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(REPO_ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("gpuselect-*.whl")
    target = tmp_path / "site"
    inst = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert inst.returncode == 0, inst.stderr[-3000:]
    code = (
        "import gpuselect, gpuselect.paths as p\n"
        "print(gpuselect.__file__)\nprint(p.catalog_dir())\nprint(p.resources_dir())\n"
        "print(sorted(x.name for x in p.catalog_dir().iterdir()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    module_file, catalog, resources, files = run.stdout.strip().splitlines()
    assert module_file.startswith(str(target))
    assert catalog == str(target / "gpuselect" / "_data" / "gpu_catalog")
    assert resources == str(target / "gpuselect" / "_data" / "resources")
    shipped = {p.name for p in (REPO_ROOT / "gpu_catalog").iterdir() if p.is_file()}
    assert shipped and set(eval_list(files)) >= shipped


def eval_list(text: str) -> list[str]:
    import ast

    return list(ast.literal_eval(text))  # a printed list of names: literal_eval is safe
