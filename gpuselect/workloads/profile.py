"""Measure a PyTorch model's FLOPs, parameters and activation size with torch's FLOP counter on
the meta device: shapes only, no memory for weights, no data, no GPU.

``profile_user_model`` imports and RUNS THE USER'S OWN PYTHON FILE (its module-level code and the
factory function they name). Only point it at code you trust.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuselect.errors import DataError, UsageError

if TYPE_CHECKING:
    from gpuselect.estimate.trace import StepTrace


@dataclass(frozen=True)
class Profile:
    forward_flops_per_sample: float
    params: int
    activation_bytes_per_sample: float  # sum of every leaf module's output, at 2 bytes per value


def profile_factory(
    factory: Callable[[], Any], input_shape: tuple[int, ...], input_dtype: Any = None, batch: int = 2
) -> Profile:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = factory()
    params = sum(p.numel() for p in model.parameters())
    dtype = input_dtype or torch.float32
    if dtype in (torch.long, torch.int64, torch.int32):
        x = torch.zeros((batch, *input_shape), dtype=dtype, device="meta")
    else:
        x = torch.empty((batch, *input_shape), dtype=dtype, device="meta")
    sizes: list[int] = []

    def hook(_m: Any, _i: Any, out: Any) -> None:
        # A tensor, or (LSTM, LSTMCell) a nested tuple of them: output and hidden/cell states.
        if isinstance(out, torch.Tensor):
            sizes.append(out.numel())
        elif isinstance(out, (tuple, list)):
            for o in out:
                hook(_m, _i, o)

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    counter = FlopCounterMode(display=False)
    try:
        with counter:
            model(x)
    finally:
        for h in handles:
            h.remove()
    return Profile(counter.get_total_flops() / batch, int(params), 2.0 * sum(sizes) / batch)


def _not_a_file(p: Path) -> str:
    """Why ``p`` cannot be the model file, in one sentence (relative paths are to the working folder)."""
    if not p.exists():
        return f"the model file {p} does not exist" + (f" (looked in {Path.cwd()})" if not p.is_absolute() else "")
    return f"{p} is not a Python file" + (" but a folder" if p.is_dir() else "")


def profile_user_model(path: str | Path, factory_name: str, input_shape: tuple[int, ...]) -> Profile:
    """Import ``path``, call ``factory_name()`` on the meta device and count. Runs the user's code."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(_not_a_file(p))
    if not input_shape or any(d <= 0 for d in input_shape):
        raise UsageError(f"the input shape must be positive sizes, not {input_shape}")
    spec = importlib.util.spec_from_file_location(f"gpuselect_user_model_{p.stem}", p)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load {p} as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise DataError(f"{p} failed to import: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise UsageError(f"{p} has no function {factory_name!r}")
    try:
        return profile_factory(factory, input_shape)
    except Exception as exc:
        raise DataError(f"profiling {factory_name}() from {p} failed: {type(exc).__name__}: {exc}") from exc


#: How long the user's file may take to import and trace (seconds).
TRACE_TIMEOUT_S = 60.0
#: Trace subprocesses running now, so that a closing window stops them (``stop_user_traces``)
#: instead of waiting out the time limit.
_LIVE: set[Any] = set()
_STOPPED: set[int] = set()
_LIVE_LOCK = threading.Lock()


def stop_user_traces() -> int:
    """Kill every running trace of a user's model file (the desktop app closing); how many."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        _STOPPED.add(proc.pid)
        _kill_tree(proc)
    return len(procs)


def _kill_tree(proc: Any) -> None:
    """Kill the trace and whatever the user's code started (its own session, on POSIX): a child
    it spawned held the pipes open and kept gpuselect waiting past the time limit."""
    import os
    import signal

    with contextlib.suppress(OSError, AttributeError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()


def _wait_unreaped(proc: Any, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``proc`` to exit, leaving it a zombie on POSIX (so its process
    group cannot be reused before it is killed); whether it exited."""
    import os
    import subprocess
    import time

    if os.name != "posix" or not hasattr(os, "waitid"):
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    end = time.monotonic() + timeout_s
    while True:
        try:
            got = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True  # already reaped elsewhere
        if got is not None:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


def _trace_memory_gb() -> float:
    """What the user's file may allocate while it is traced: a quarter of this machine's RAM, 2 to
    8 GB (tracing on the meta device allocates no tensor data; torch itself takes ~0.3 GB)."""
    try:
        import psutil

        total = float(psutil.virtual_memory().total) / 1024**3
    except Exception:  # noqa: BLE001 - psutil missing or failing: a fixed cap
        total = 8.0
    return max(2.0, min(8.0, total / 4))


def _tail(path: Any, limit: int = 65536) -> str:
    """The last ``limit`` bytes of the child's stderr (a file that prints 230 MB is not kept)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def trace_user_model(
    path: str | Path, factory_name: str, input_shape: tuple[int, ...], *, timeout_s: float = TRACE_TIMEOUT_S
) -> tuple[StepTrace, StepTrace]:
    """Trace one training step of ``factory_name()`` from the user's file: (plain, checkpointed).

    RUNS THE USER'S CODE, in a subprocess with a time limit: its output is kept apart from ours
    (a print cannot corrupt ``--format json``) and a ``sys.exit`` or crash in it becomes one clear
    error here."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    from gpuselect.workloads.traces import trace_from_dict

    p = Path(path)
    if not p.is_file():
        raise UsageError(_not_a_file(p))
    if not input_shape or any(d <= 0 for d in input_shape):
        raise UsageError(f"the input shape must be positive sizes, not {input_shape}")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH", "")) if x)}
    # a process the user's code left running may hold a file in it open (Windows): no error for that
    with tempfile.TemporaryDirectory(prefix="gpuselect-trace-", ignore_cleanup_errors=True) as tmp:
        out = Path(tmp) / "trace.json"
        cmd = [
            sys.executable,
            "-m",
            "gpuselect.workloads.trace_build.user",
            str(p.resolve()),
            factory_name,
            ",".join(str(d) for d in input_shape),
            "--out",
            str(out),
            "--max-memory-gb",
            f"{_trace_memory_gb():.1f}",
        ]
        err_path = Path(tmp) / "stderr.txt"
        # No pipes: the user's prints go nowhere, its errors to a file whose tail is read, and a
        # process it starts cannot hold gpuselect waiting on a pipe past the time limit.
        with open(err_path, "wb") as err_file:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.DEVNULL,
                stderr=err_file,
                env=env,
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                start_new_session=os.name == "posix",
            )
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            if not _wait_unreaped(proc, timeout_s):
                _kill_tree(proc)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
                raise DataError(f"tracing {factory_name}() from {p} took longer than {timeout_s:g} s and was stopped")
            # Exited but not yet reaped: its process group is still its own, so what the user's
            # code left running in it goes with it (after reaping, the number could be reused).
            _kill_tree(proc)
            proc.wait()
        except BaseException:
            _kill_tree(proc)  # Ctrl+C: its own session does not get the terminal's signal
            raise
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc)
        err = _tail(err_path)
        if proc.returncode is not None and proc.returncode < 0 and proc.pid in _STOPPED:
            _STOPPED.discard(proc.pid)
            raise DataError(f"tracing {factory_name}() from {p} was stopped")
        last = next((ln.strip() for ln in reversed((err or "").splitlines()) if ln.strip()), "")
        if len(last) > 500:  # a file that writes 200 KB to stderr: one readable sentence, not all of it
            last = f"{p} failed; the last line it wrote begins {last[:80]!r}…"
        if proc.returncode == 4:
            raise UsageError(last or f"{p} has no function {factory_name!r}")
        if proc.returncode == -9 and not last:
            raise DataError(
                f"tracing {factory_name}() from {p} was killed (exit status -9): the machine ran out of memory?"
            )
        if proc.returncode != 0:
            raise DataError(last or f"tracing {factory_name}() from {p} failed (exit status {proc.returncode})")
        if not out.is_file():
            raise DataError(f"{p} ended the process (sys.exit or os._exit?) before {factory_name}() was traced")
        try:
            doc = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DataError(f"the trace of {factory_name}() from {p} could not be read back: {exc}") from exc
    return trace_from_dict(doc["plain"]), trace_from_dict(doc["ckpt"])
