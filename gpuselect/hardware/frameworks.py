"""Deep-learning frameworks: installed or not, version, and what GPU stack each was built for —
read from package metadata and build files as text, without importing the framework (fast).

Whether a framework actually *sees* the GPU is asked in a subprocess (``probe_frameworks``),
only on request: importing torch or TensorFlow costs seconds and may crash on a broken install.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gpuselect.hardware.types import FrameworkInfo

_PKG_ROOT = str(Path(__file__).resolve().parents[2])


def _version(*dists: str) -> str | None:
    for dist in dists:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return None


def _package_file(package: str, *parts: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)  # finds, does not import
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location, *parts)
        if candidate.is_file():
            return candidate
    return None


def _assigned_string(source: str, name: str) -> str | None:
    """The string literal assigned to ``name`` at top level (``cuda = '12.8'``, annotated or not)."""
    m = re.search(rf"^{name}\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", source, re.MULTILINE)
    return m.group(1) if m else None


def torch_info() -> FrameworkInfo | None:
    version = _version("torch")
    if version is None:
        return None
    info = FrameworkInfo(name="torch", installed=True, version=version)
    version_py = _package_file("torch", "version.py")
    if version_py is not None:
        src = version_py.read_text(errors="replace")
        info.built_cuda = _assigned_string(src, "cuda")
        info.built_rocm = _assigned_string(src, "hip")
        info.cpu_only_build = info.built_cuda is None and info.built_rocm is None
    return info


def tensorflow_info() -> FrameworkInfo:
    version = _version("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tensorflow-rocm")
    info = FrameworkInfo(name="tensorflow", installed=version is not None, version=version)
    build = _package_file("tensorflow", "python", "platform", "build_info.py")
    if build is not None:
        src = build.read_text(errors="replace")
        cuda = re.search(r"['\"]cuda_version['\"]\s*:\s*['\"]([^'\"]+)", src)
        cudnn = re.search(r"['\"]cudnn_version['\"]\s*:\s*['\"]([^'\"]+)", src)
        rocm = re.search(r"['\"]is_rocm_build['\"]\s*:\s*True", src)
        info.built_cuda = cuda.group(1) if cuda else None
        info.cudnn = cudnn.group(1) if cudnn else None
        info.built_rocm = "yes" if rocm else None
        info.cpu_only_build = info.built_cuda is None and info.built_rocm is None
    return info


def jax_info() -> FrameworkInfo:
    version = _version("jax")
    info = FrameworkInfo(name="jax", installed=version is not None, version=version)
    if version is None:
        return info
    for major in ("13", "12", "11"):
        if _version(f"jax-cuda{major}-plugin", f"jax_cuda{major}_plugin") is not None:
            info.built_cuda = major
            break
    for major in ("7", "6"):
        if _version(f"jax-rocm{major}-plugin") is not None:
            info.built_rocm = major
            break
    info.cpu_only_build = info.built_cuda is None and info.built_rocm is None
    return info


def static_frameworks() -> tuple[FrameworkInfo | None, list[FrameworkInfo]]:
    torch = torch_info()
    listed = [torch or FrameworkInfo(name="torch", installed=False), tensorflow_info(), jax_info()]
    return torch, listed


def probe_framework(name: str, timeout_s: float = 90.0) -> dict[str, object]:
    """Import one framework in a subprocess and ask what it sees; never raises."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PKG_ROOT, env.get("PYTHONPATH", "")) if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpuselect.hardware._probe", name],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"importing {name} took longer than {timeout_s:.0f} s"}
    except OSError as exc:
        return {"error": f"could not start a probe process: {exc}"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"importing {name} failed (exit {done.returncode}): {tail}"}
    try:
        result = json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"the {name} probe printed unreadable output"}
    return result if isinstance(result, dict) else {"error": "the probe printed unexpected output"}


def apply_probe(info: FrameworkInfo, result: dict[str, object]) -> None:
    info.probed = True
    if "error" in result:
        info.probe_error = str(result["error"])
        return
    devices = result.get("devices") or []
    info.devices = (
        [str(d.get("name") if isinstance(d, dict) else d) for d in devices] if isinstance(devices, list) else []
    )
    backends = result.get("backends")
    info.backends = {str(k): bool(v) for k, v in backends.items()} if isinstance(backends, dict) else {}
    info.sees_gpu = bool(result.get("sees_gpu"))
    if isinstance(result.get("cudnn"), str):
        info.cudnn = str(result["cudnn"])
