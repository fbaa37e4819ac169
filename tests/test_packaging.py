"""The wheel: it carries the catalog and finds it (not the source tree), and the core and the
command line run from it in a fresh environment with neither PySide6 nor torch installed."""

from __future__ import annotations

import email
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import REPO_ROOT

HEAVY = {"torch", "pyside6", "pyside6-essentials", "pyqtgraph", "shiboken6"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(REPO_ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (whl,) = out.glob("gpuselect-*.whl")
    return whl


def _core_requirements(whl: Path) -> list[Requirement]:
    with zipfile.ZipFile(whl) as z:
        (meta_name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        msg = email.message_from_bytes(z.read(meta_name))
    reqs = [Requirement(r) for r in msg.get_all("Requires-Dist") or []]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def _closure(reqs: list[Requirement]) -> set[str]:
    """Installed distributions needed by ``reqs`` (recursively, extras left out)."""
    seen: set[str] = set()
    todo = list(reqs)
    while todo:
        req = todo.pop()
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(r) for r in metadata.distribution(req.name).requires or []]
    return seen


def test_core_dependencies_leave_out_qt_and_torch(wheel: Path) -> None:
    names = {re.sub(r"[-_.]+", "-", r.name).lower() for r in _core_requirements(wheel)}
    assert names and not names & HEAVY, names
    with zipfile.ZipFile(wheel) as z:
        files = z.namelist()
    assert "gpuselect/_data/gpu_catalog/sources.toml" in files and any(n.endswith("/LICENSE") for n in files)


@pytest.mark.slow
def test_wheel_runs_detect_estimate_and_report_without_qt_or_torch(wheel: Path, tmp_path: Path) -> None:
    # A fresh venv (no pip: 1 s) with the wheel and only its core dependencies, copied from this
    # environment's installed files (works offline; no index needed).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = _closure(_core_requirements(wheel))
    assert not deps & HEAVY
    for name in deps:
        dist = metadata.distribution(name)
        for f in dist.files or []:
            src = Path(str(dist.locate_file(f)))
            if src.is_file() and ".." not in f.parts:
                dst = site / f
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    inst = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert inst.returncode == 0, inst.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["GPUSELECT_CONFIG_DIR"] = str(tmp_path / "config")
    env["GPUSELECT_CACHE_DIR"] = str(tmp_path / "cache")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv / "bin" / "gpuselect"), *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
        )

    absent = subprocess.run(
        [
            str(py),
            "-c",
            "import importlib.util as u; print([m for m in ('torch', 'PySide6', 'pyqtgraph') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
    )
    assert absent.stdout.strip() == "[]"
    where = subprocess.run(
        [str(py), "-c", "import gpuselect.paths as p; print(p.catalog_dir())"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
    )
    assert where.stdout.strip() == str(site / "gpuselect" / "_data" / "gpu_catalog")

    detect = run("detect", "--format", "json")
    assert detect.returncode == 0, detect.stderr
    assert json.loads(detect.stdout)["kind"] == "detect"
    est = run("estimate", "--workload", "gpt2-124m", "--format", "json")
    assert est.returncode == 0, est.stderr
    assert len(json.loads(est.stdout)["rows"]) > 100
    for name in ("r.md", "r.json", "r.pdf"):
        rep = run("report", "-o", name, "--workload", "gpt2-124m")
        assert rep.returncode == 0, rep.stderr
        assert (tmp_path / name).stat().st_size > 1000
    assert json.loads((tmp_path / "r.json").read_text())["kind"] == "report"
    assert (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")
    # What needs an extra says which, in one sentence.
    bench = run("bench", "--quick")
    assert bench.returncode == 2 and "gpuselect[bench]" in bench.stderr, bench.stderr
    env["QT_QPA_PLATFORM"] = "offscreen"  # past the display check, to the missing Qt
    gui = run("gui")
    assert gui.returncode == 2 and "gpuselect[gui]" in gui.stderr, gui.stderr
