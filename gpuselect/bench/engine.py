"""The microbenchmark engine: one generator for CLI, GUI and tests.

``run_benchmark(config, cancel)`` yields :class:`ProgressEvent` and *returns* a
:class:`BenchReport` (``StopIteration.value``; :func:`run_to_completion` unwraps it). Torch is
imported here, lazily, when a benchmark actually runs. Cancellation is a thread-safe flag checked
between repeats; no single timed call is allowed near half a second, so a cancel takes effect
within that.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import os
import statistics
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from gpuselect.bench.model import BenchConfig, BenchReport, DeviceResult, ProgressEvent, Timing, TrainStep
from gpuselect.errors import UsageError

CancelFlag = threading.Event
GIB = 1024**3


class Cancelled(Exception):  # noqa: N818 - public name, caught by callers; a rename is an API change
    pass


def failure(exc: BaseException) -> str:
    """A failed measurement's reason as the record keeps it: the exception's first line, at most
    300 characters (a CUDA error's whole text ran to thousands, which made the record "damaged")."""
    from gpuselect.safe_io import one_line

    return one_line(f"failed: {type(exc).__name__}: {exc}")


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc).lower() or type(exc).__name__ == "OutOfMemoryError"


@dataclass
class _Device:
    spec: str  # "cpu", "cuda:0", "mps", "xpu:0"
    kind: str
    name: str
    torch_device: Any
    uuid: str | None = None
    memory_total_bytes: int | None = None


def list_devices(torch: Any) -> list[_Device]:
    import platform

    from gpuselect.hardware.cpu import detect_cpu

    cpu = detect_cpu()
    out = [_Device("cpu", "cpu", cpu.model or platform.processor() or "CPU", torch.device("cpu"))]
    if torch.cuda.is_available():
        hip = getattr(torch.version, "hip", None)
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            uuid = getattr(p, "uuid", None)
            out.append(
                _Device(
                    f"cuda:{i}",
                    "rocm" if hip else "cuda",
                    p.name,
                    torch.device(f"cuda:{i}"),
                    uuid=f"GPU-{uuid}" if uuid is not None else None,
                    memory_total_bytes=int(p.total_memory),
                )
            )
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        out.append(_Device("mps", "mps", "Apple GPU (MPS)", torch.device("mps")))
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        for i in range(xpu.device_count()):
            out.append(_Device(f"xpu:{i}", "xpu", xpu.get_device_name(i), torch.device(f"xpu:{i}")))
    return out


def select_devices(available: list[_Device], wanted: tuple[str, ...]) -> list[_Device]:
    if not wanted or "all" in wanted:
        return available
    by_spec = {d.spec: d for d in available}
    if "cuda" in by_spec or any(w == "cuda" for w in wanted):
        by_spec.setdefault("cuda", by_spec.get("cuda:0"))  # type: ignore[arg-type]
    chosen = []
    for w in wanted:
        dev = by_spec.get(w)
        if dev is None:
            names = ", ".join(d.spec for d in available)
            raise UsageError(f"there is no device {w!r} here; available: {names}")
        chosen.append(dev)
    return chosen


class _Runner:
    """Times operations on one device with warm-up, synchronisation and repeats."""

    def __init__(
        self, torch: Any, dev: _Device, cfg: BenchConfig, cancel: CancelFlag, start: float | None = None
    ) -> None:
        self.torch, self.dev, self.cfg, self.cancel = torch, dev, cfg, cancel
        self.budget = cfg.measurement_budget_s()
        self.deadline = (time.perf_counter() if start is None else start) + cfg.device_time_box_s()

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def sync(self) -> None:
        t = self.torch
        if self.dev.kind in ("cuda", "rocm"):
            t.cuda.synchronize(self.dev.torch_device)
        elif self.dev.kind == "mps":
            t.mps.synchronize()
        elif self.dev.kind == "xpu":
            t.xpu.synchronize()

    def check(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()

    def time(
        self,
        op: Callable[[], Any],
        *,
        inner: int = 1,
        warmup: int = 1,
        budget: float | None = None,
        min_repeats: int = 3,
        max_repeats: int = 200,
        settle_s: float | None = None,
    ) -> list[float]:
        """Seconds per call of ``op`` for each repeat (``inner`` calls per timed repeat).

        Warm-up runs for 40 % of the budget (first calls pay for page faults, thread start-up,
        clock ramp-up and kernel selection). With ``settle_s`` it instead runs until two
        successive timed calls agree within 3 %, at most ``settle_s`` seconds: a many-core CPU
        needs longer than a short budget to bring its threads and turbo clocks to a steady rate.
        """
        budget = self.budget if budget is None else budget
        warm_end = time.perf_counter() + (settle_s if settle_s is not None else 0.4 * budget)
        calls = 0
        last: float | None = None
        while calls < warmup or (warmup and time.perf_counter() < warm_end):
            self.check()
            start = time.perf_counter()
            for _ in range(inner):
                op()
            if settle_s is not None or calls % 4 == 3:
                self.sync()
            took = time.perf_counter() - start
            calls += 1
            if settle_s is not None and calls >= warmup and last is not None and abs(took / last - 1) < 0.03:
                break
            if calls >= 1 and self.out_of_time():
                break
            last = took
        self.sync()
        samples: list[float] = []
        deadline = time.perf_counter() + budget
        while len(samples) < max_repeats and (len(samples) < min_repeats or time.perf_counter() < deadline):
            if samples and self.out_of_time():
                break  # past the device's time box: keep what was measured (the spread shows how little)
            self.check()
            start = time.perf_counter()
            for _ in range(inner):
                op()
            self.sync()
            samples.append((time.perf_counter() - start) / inner)
        return samples

    def free_bytes(self) -> int | None:
        if self.dev.kind in ("cuda", "rocm"):
            free, _ = self.torch.cuda.mem_get_info(self.dev.torch_device)
            return int(free)
        if self.dev.kind == "cpu":
            import psutil

            return int(psutil.virtual_memory().available)
        return None

    def empty_cache(self) -> None:
        if self.dev.kind in ("cuda", "rocm"):
            self.torch.cuda.empty_cache()


def _sig(v: float, digits: int = 4) -> float:
    """Round to significant digits: a CPU's fp16 rate (0.0012 TFLOP/s) must not become 0."""
    return float(f"{v:.{digits}g}")


def _timing(samples: list[float], to_value: Callable[[float], float], size: str, note: str | None = None) -> Timing:
    """Median, min and max of per-repeat values (throughputs: faster repeats give higher values)."""
    values = sorted(to_value(s) for s in samples)
    return Timing(
        value=statistics.median(values), low=values[0], high=values[-1], repeats=len(values), size=size, note=note
    )


# --- individual measurements --------------------------------------------------------------

_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _max_matmul_size(r: _Runner) -> int:
    if r.dev.kind == "cpu":
        return 4096
    return 8192 if not r.cfg.quick else 4096


#: On a CPU a bigger product is no faster once one takes a few milliseconds (2-core VM,
#: benchmarks/cpu_quick_costs.py: medians of 512..2048 within 9-16 % in two runs, 512 the
#: fastest), so the ramp stops there: many short repeats give a median that a busy host cannot
#: swing the way three 0.15 s products at 2048 can.
_CPU_ENOUGH_OP_S = 0.01


#: Each size step multiplies the work by 8; stop climbing when the next product is predicted to
#: take longer than this, so no single call gets near the half-second cancel limit.
_MAX_PREDICTED_OP_S = 0.2


def _ramp_size(r: _Runner, dtype: Any, limit: int) -> tuple[int, Any, Any, float]:
    """Grow the square size from 256 until the product is big enough or would be too slow.

    Timing each size for real (not extrapolating from a tiny one) matters: small products are
    dominated by launch or thread start-up costs, which once made a 256-probe predict seconds
    for an 8192 product that takes 1.4 ms on an H100.
    """
    t = r.torch
    n = 256
    while True:
        r.check()
        a = t.randn(n, n, device=r.dev.torch_device, dtype=t.float32).to(dtype)
        b = t.randn(n, n, device=r.dev.torch_device, dtype=t.float32).to(dtype)
        t.mm(a, b)  # warm-up at this size
        r.sync()
        start = time.perf_counter()
        t.mm(a, b)
        r.sync()
        took = time.perf_counter() - start
        if n * 2 > limit or took * 8 > _MAX_PREDICTED_OP_S or (r.dev.kind == "cpu" and took >= _CPU_ENOUGH_OP_S):
            return n, a, b, took
        n *= 2


def measure_matmul(r: _Runner, res: DeviceResult, precision: str) -> None:
    t = r.torch
    kind = r.dev.kind
    if precision == "tf32" and kind not in ("cuda", "rocm"):
        res.skipped["matmul tf32"] = "TF32 is an NVIDIA tensor-core mode"
        res.matmul_tflops["tf32"] = None
        return
    if precision == "tf32" and kind == "cuda" and t.cuda.get_device_capability(r.dev.torch_device) < (8, 0):
        res.skipped["matmul tf32"] = "TF32 needs an Ampere or newer GPU"
        res.matmul_tflops["tf32"] = None
        return
    dtype = getattr(t, _DTYPES[precision])
    old_tf32 = t.backends.cuda.matmul.allow_tf32 if kind in ("cuda", "rocm") else None
    limit = _max_matmul_size(r)
    try:
        if kind in ("cuda", "rocm"):
            t.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        while True:
            try:
                n, a, b, once = _ramp_size(r, dtype, limit)
                # Several products per timed repeat (>= ~20 ms), so the synchronisation gap
                # after each repeat does not count as idle device time.
                inner = max(1, min(64, int(0.02 / max(once, 1e-6))))
                # Settle by rate, not by a fixed time, so a short run still measures the sustained rate.
                # The first CPU product brings threads and clocks up; later precisions find them up.
                settle = (0.15 if res.matmul_detail else 1.0) if r.dev.kind == "cpu" else None
                budget = r.budget
                if r.dev.kind == "cpu":
                    # fp32 is the CPU's headline rate (the estimator anchors on it): twice the time.
                    # A CPU's fp16/bf16 rates are ~1 % of it: a short look says enough.
                    budget = 2 * budget if precision == "fp32" else budget / 2
                samples = r.time(functools.partial(t.mm, a, b), inner=inner, warmup=2, settle_s=settle, budget=budget)
                break
            except (RuntimeError, MemoryError) as exc:
                if not (_is_oom(exc) or isinstance(exc, MemoryError)):
                    if "not implemented" in str(exc).lower() or "unsupported" in str(exc).lower():
                        res.skipped[f"matmul {precision}"] = f"not supported on this device: {str(exc).splitlines()[0]}"
                        res.matmul_tflops[precision] = None
                        return
                    raise
                r.empty_cache()
                if limit <= 256:
                    res.skipped[f"matmul {precision}"] = "out of memory at every size tried"
                    res.matmul_tflops[precision] = None
                    return
                res.backoffs.append(f"matmul {precision}: out of memory below {limit}x{limit}, trying {limit // 2}")
                limit //= 2
        flop = 2.0 * n * n * n
        note = None if n == limit else f"size limited to {n} so one product stays short on this device"
        timing = _timing(samples, lambda s: flop / s / 1e12, f"{n}x{n}x{n}", note)
        res.matmul_detail[precision] = timing
        res.matmul_tflops[precision] = _sig(timing.value)
    finally:
        if old_tf32 is not None:
            t.backends.cuda.matmul.allow_tf32 = old_tf32


def measure_fp8(r: _Runner, res: DeviceResult) -> None:
    t = r.torch
    if r.dev.kind != "cuda" or t.cuda.get_device_capability(r.dev.torch_device) < (8, 9):
        res.skipped["matmul fp8"] = "FP8 tensor cores need Ada/Hopper or newer"
        return
    if not hasattr(t, "_scaled_mm") or not hasattr(t, "float8_e4m3fn"):
        res.skipped["matmul fp8"] = "this torch has no FP8 matmul (torch._scaled_mm)"
        return
    n = 8192 if not r.cfg.quick else 4096
    try:
        a = t.randn(n, n, device=r.dev.torch_device).to(t.float8_e4m3fn)
        b = t.randn(n, n, device=r.dev.torch_device).to(t.float8_e4m3fn).t()  # column-major second operand
        one = t.tensor(1.0, device=r.dev.torch_device)

        def op() -> Any:
            return t._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=t.bfloat16)

        op()
        r.sync()
        start = time.perf_counter()
        op()
        r.sync()
        inner = max(1, min(64, int(0.02 / max(time.perf_counter() - start, 1e-6))))
        samples = r.time(op, inner=inner)
    except Cancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - a private API: any failure means "not measured"
        res.skipped["matmul fp8"] = f"torch._scaled_mm failed: {str(exc).splitlines()[0]}"
        r.empty_cache()
        return
    flop = 2.0 * n * n * n
    timing = _timing(
        samples, lambda s: flop / s / 1e12, f"{n}x{n}x{n}", note="torch._scaled_mm, e4m3 inputs, bf16 output"
    )
    res.matmul_detail["fp8"] = timing
    res.matmul_tflops["fp8"] = _sig(timing.value)


def _bandwidth_bytes(r: _Runner) -> int:
    if r.dev.kind == "cpu":
        target = 256 * 1024**2 if not r.cfg.quick else 128 * 1024**2  # well past the caches
    else:
        target = 1 * GIB if not r.cfg.quick else 512 * 1024**2
    free = r.free_bytes()
    if free is not None:
        target = min(target, max(16 * 1024**2, free // 5))  # three arrays, with room to spare
    return target


def measure_bandwidth(r: _Runner, res: DeviceResult) -> None:
    """Copy and triad bandwidth over one allocation (as a training job's long-lived tensors).
    On the 2-core VM the CPU figure swings 16-25 GB/s over seconds whatever the page size
    (benchmarks/cpu_bandwidth_pages.py: 4 KiB and huge pages within 7 % of each other, each
    spanning 1.6-2x), so fresh allocations do not steady it; a longer look does."""
    t = r.torch
    nbytes = _bandwidth_bytes(r)
    inner = 2 if r.dev.kind != "cpu" else 1
    # On a CPU the copy rate is the headline memory figure and drifts with the host
    # (docs/benchmarks.md): twice the time.
    budget = r.budget * (2 if r.dev.kind == "cpu" else 1)
    while True:
        try:
            n = nbytes // 4
            x = t.ones(n, device=r.dev.torch_device, dtype=t.float32)
            y = t.empty_like(x)
            z = t.ones_like(x)
            copy = r.time(functools.partial(y.copy_, x), inner=inner, budget=budget)
            triad = r.time(functools.partial(t.add, x, z, alpha=2.0, out=y), inner=inner, budget=budget)
            x = y = z = None
            break
        except (RuntimeError, MemoryError) as exc:
            if not (_is_oom(exc) or isinstance(exc, MemoryError)) or nbytes <= 16 * 1024**2:
                raise
            res.backoffs.append(f"bandwidth: out of memory at {nbytes / 1024**2:.0f} MiB per array, halving")
            nbytes //= 2
            x = y = z = None
            r.empty_cache()
    size = f"{nbytes / 1024**2:.0f} MiB per array"
    res.bandwidth_detail["copy"] = _timing(copy, lambda s: 2 * nbytes / s / 1e9, size, "y = x: bytes read + written")
    res.bandwidth_detail["triad"] = _timing(
        triad, lambda s: 3 * nbytes / s / 1e9, size, "y = x + 2*z: 2 reads + 1 write"
    )
    res.memory_bandwidth_gbs = round(res.bandwidth_detail["copy"].value, 1)


def measure_transfers(r: _Runner, res: DeviceResult) -> None:
    t = r.torch
    nbytes = 256 * 1024**2 if not r.cfg.quick else 64 * 1024**2
    n = nbytes // 4
    dev = r.dev.torch_device
    pin = r.dev.kind in ("cuda", "rocm")
    host_pageable = t.ones(n, dtype=t.float32)
    host_pinned = t.ones(n, dtype=t.float32).pin_memory() if pin else None
    on_dev = t.ones(n, dtype=t.float32, device=dev)
    budget = r.budget / 2
    for label, host in (("pinned", host_pinned), ("pageable", host_pageable)):
        if host is None:
            continue
        h2d = r.time(functools.partial(on_dev.copy_, host, non_blocking=True), budget=budget)
        d2h = r.time(functools.partial(host.copy_, on_dev, non_blocking=True), budget=budget)
        size = f"{nbytes / 1024**2:.0f} MiB"
        res.transfer_detail[f"host_to_device_{label}"] = _timing(h2d, lambda s: nbytes / s / 1e9, size)
        res.transfer_detail[f"device_to_host_{label}"] = _timing(d2h, lambda s: nbytes / s / 1e9, size)
    key = "pinned" if pin else "pageable"
    res.host_to_device_gbs = round(res.transfer_detail[f"host_to_device_{key}"].value, 2)
    res.device_to_host_gbs = round(res.transfer_detail[f"device_to_host_{key}"].value, 2)
    small_host = t.ones(1024, dtype=t.float32)  # 4 KiB
    small_host = small_host.pin_memory() if pin else small_host
    small_dev = t.ones(1024, dtype=t.float32, device=dev)
    lat = r.time(lambda: small_dev.copy_(small_host), budget=budget, max_repeats=2000)
    timing = _timing(lat, lambda s: s * 1e6, "4 KiB", "host to device, synchronised each time")
    res.transfer_detail["small_transfer_latency_us"] = timing
    res.small_transfer_latency_us = round(min(timing.value, timing.high), 2)


def measure_launch(r: _Runner, res: DeviceResult) -> None:
    t = r.torch
    x = t.zeros(1, device=r.dev.torch_device)
    inner = 1000 if r.dev.kind != "cpu" else 2000
    samples = r.time(lambda: x.add_(1.0), inner=inner, budget=r.budget / 2)
    timing = _timing(samples, lambda s: s * 1e6, "1 element", f"{inner} back-to-back launches per repeat")
    # Per-call time: lower is better, so the spread runs the other way.
    res.transfer_detail["launch_overhead_us"] = timing
    res.launch_overhead_us = round(timing.value, 2)


def _make_model(torch: Any, name: str) -> tuple[Any, Callable[[int], tuple[Any, Any]], Any]:
    nn = torch.nn
    if name == "simple_cnn":
        # The background material's simple CNN, the very module the simple-cnn preset's trace was
        # taken from (the estimator fits a benchmarked device on these steps with that trace).
        from gpuselect.workloads.reference_models import simple_cnn

        model = simple_cnn()

        def batch(bs: int) -> tuple[Any, Any]:
            return torch.randn(bs, 1, 28, 28), torch.randint(0, 10, (bs,))

        return model, batch, nn.CrossEntropyLoss()
    if name == "lstm":

        class LstmLM(nn.Module):  # type: ignore[misc, name-defined]  # torch is imported lazily: the base is a runtime value
            def __init__(self) -> None:
                super().__init__()
                self.emb = nn.Embedding(5_000, 256)
                self.lstm = nn.LSTM(256, 256, num_layers=2, batch_first=True)
                self.out = nn.Linear(256, 5_000)

            def forward(self, x: Any) -> Any:
                h, _ = self.lstm(self.emb(x))
                return self.out(h).reshape(-1, 5_000)

        def batch(bs: int) -> tuple[Any, Any]:
            return torch.randint(0, 5_000, (bs, 32)), torch.randint(0, 5_000, (bs * 32,))

        return LstmLM(), batch, nn.CrossEntropyLoss()
    if name == "transformer":
        # the module whose meta-device trace the estimator fits a benchmarked device on
        from gpuselect.workloads.reference_models import bench_transformer

        def batch(bs: int) -> tuple[Any, Any]:
            return torch.randn(bs, 64, 256), torch.randint(0, 10, (bs,))

        return bench_transformer(), batch, nn.CrossEntropyLoss()
    raise UsageError(f"unknown benchmark model {name!r}")


class _SgdMomentum:
    """SGD with momentum, the same update as ``torch.optim.SGD(momentum=0.9)``'s foreach path
    (buf = momentum*buf + grad; p -= lr*buf). Written out because the first use of any
    ``torch.optim`` optimizer imports ``torch._dynamo``: 1.7-2.0 s of the 10 s quick run on the
    2-core VM (benchmarks/cpu_quick_costs.py), spent on Python imports rather than on the device."""

    def __init__(self, torch: Any, params: Any, lr: float = 0.01, momentum: float = 0.9) -> None:
        self.torch, self.params, self.lr, self.momentum = torch, list(params), lr, momentum
        self.bufs: list[Any] | None = None

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        t = self.torch
        with t.no_grad():
            params = [p for p in self.params if p.grad is not None]
            grads = [p.grad for p in params]
            if self.bufs is None:
                self.bufs = [g.clone() for g in grads]  # torch.optim.SGD's first step: buf = grad
            else:
                t._foreach_mul_(self.bufs, self.momentum)
                t._foreach_add_(self.bufs, grads)
            t._foreach_add_(params, self.bufs, alpha=-self.lr)


def measure_train(r: _Runner, res: DeviceResult, model_name: str, batch_sizes: tuple[int, ...]) -> Iterator[str]:
    """Yields after each batch size so the caller can report progress."""
    t = r.torch
    on_accel = r.dev.kind != "cpu"
    model, make_batch, loss_fn = _make_model(t, model_name)
    model = model.to(r.dev.torch_device)
    opt = _SgdMomentum(t, model.parameters(), lr=0.01, momentum=0.9)
    prev: tuple[int, float] | None = None  # (batch, seconds per step) of the last batch measured
    for bs in batch_sizes:
        if r.out_of_time():
            res.skipped[f"train {model_name} batches >= {bs}"] = (
                f"the device's time box ({r.cfg.device_time_box_s():.1f} s) was used up"
            )
            break
        if prev is not None:
            # A step costs at most ~linear in the batch; the warm-up step and at least one timed
            # step must fit in what is left of the box, or this batch would overrun it.
            predicted = prev[1] * bs / prev[0]
            left = r.deadline - time.perf_counter()
            if 2 * predicted > left:
                res.skipped[f"train {model_name} batches >= {bs}"] = (
                    f"a step at batch {bs} would take ~{predicted:.2f} s (from batch {prev[0]}) and "
                    f"{max(left, 0.0):.1f} s of the device's time box ({r.cfg.device_time_box_s():.1f} s) are left"
                )
                break
        x_host, y_host = make_batch(bs)
        if on_accel and r.dev.kind in ("cuda", "rocm"):
            x_host, y_host = x_host.pin_memory(), y_host.pin_memory()

        def step(x_host: Any = x_host, y_host: Any = y_host) -> None:
            # Data starts on the host, as in real training: the copy is part of the step.
            x = x_host.to(r.dev.torch_device, non_blocking=True)
            y = y_host.to(r.dev.torch_device, non_blocking=True)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        try:
            step()  # warm-up (allocations, kernel selection)
            r.sync()
            t0 = time.perf_counter()
            step()
            r.sync()
            once = time.perf_counter() - t0
            prev = (bs, once)
            if once > 0.45:  # too slow to repeat inside the time box; larger batches only get slower
                res.train_steps.append(TrainStep(model_name, bs, round(bs / once, 2), round(once * 1e3, 3), on_accel))
                res.skipped[f"train {model_name} batches > {bs}"] = f"one step at batch {bs} took {once:.2f} s"
                yield f"{model_name} batch {bs}"
                break
            samples = r.time(step, warmup=0, budget=r.budget / 2, min_repeats=3)
        except (RuntimeError, MemoryError) as exc:
            if not (_is_oom(exc) or isinstance(exc, MemoryError)):
                raise
            res.backoffs.append(f"train {model_name}: out of memory at batch {bs}; larger batches skipped")
            r.empty_cache()
            break
        per_step = statistics.median(samples)
        # the next batch is predicted from the median, not from the one step timed first: a single
        # stalled step on a busy machine predicted ~2 s at batch 16 for a 1 ms step and skipped it
        prev = (bs, per_step)
        res.train_steps.append(TrainStep(model_name, bs, round(bs / per_step, 2), round(per_step * 1e3, 3), on_accel))
        yield f"{model_name} batch {bs}"


# --- the generator ------------------------------------------------------------------------


def _fp32_then_no_tf32(r: _Runner, res: DeviceResult) -> None:
    measure_matmul(r, res, precision="fp32")
    measure_matmul(r, res, precision="tf32")  # records why TF32 is not measured here, in no time


def _plan(dev: _Device, cfg: BenchConfig) -> list[tuple[str, Callable[..., Any]]]:  # noqa: ARG001 - the plan's signature keeps the config for per-run choices
    steps: list[tuple[str, Callable[..., Any]]] = []
    for p in ("fp32", "tf32", "fp16", "bf16"):
        if p == "tf32" and dev.kind not in ("cuda", "rocm"):
            # no tensor-core mode here: recorded as skipped at once, never shown as a step it measures
            steps[-1] = ("matmul fp32", _fp32_then_no_tf32)
            continue
        steps.append((f"matmul {p}", functools.partial(measure_matmul, precision=p)))
    if dev.kind == "cuda":
        steps.append(("matmul fp8", measure_fp8))
    steps.append(("memory bandwidth", measure_bandwidth))
    if dev.kind != "cpu":
        steps.append(("host-device transfers", measure_transfers))
    steps.append(("launch overhead", measure_launch))
    return steps


def _telemetry(dev: _Device) -> dict[str, Any] | None:
    if dev.uuid is None:
        return None
    from gpuselect.hardware.nvidia import read_telemetry

    return read_telemetry().get(dev.uuid)


def _cpu_seconds() -> tuple[float, float] | None:
    """(CPU seconds every process has used, of which this process's), from /proc/stat; None where
    there is none (not Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = fh.readline().split()
        # user nice system idle iowait irq softirq steal ...: busy = all but idle and iowait
        ticks = [int(x) for x in fields[1:9]]
        busy = sum(ticks) - ticks[3] - ticks[4]
        return busy / os.sysconf("SC_CLK_TCK"), time.process_time()
    except (OSError, ValueError, IndexError):
        return None


def other_cpu_share(
    before: tuple[float, float] | None, after: tuple[float, float] | None, wall_s: float
) -> float | None:
    """The share of all CPUs' time that other processes used between two ``_cpu_seconds``."""
    if before is None or after is None or wall_s <= 0:
        return None
    others = (after[0] - before[0]) - (after[1] - before[1])
    return round(min(1.0, max(0.0, others / (wall_s * (os.cpu_count() or 1)))), 3)


def run_benchmark(cfg: BenchConfig, cancel: CancelFlag | None = None) -> Generator[ProgressEvent, None, BenchReport]:
    cancel = cancel or threading.Event()
    start = time.perf_counter()
    cpu0 = _cpu_seconds()
    try:
        import torch  # lazily: only a real benchmark pays for it
    except ImportError:
        from gpuselect.errors import UsageError

        raise UsageError(
            "the benchmark needs PyTorch, which is not installed: pip install 'gpuselect[bench]'"
        ) from None

    devices = select_devices(list_devices(torch), cfg.devices)
    plans = [(dev, _plan(dev, cfg)) for dev in devices]
    n_batches = len(cfg.train_batch_sizes())
    total = sum(len(p) + len(cfg.models) * n_batches for _, p in plans)
    done = 0
    from gpuselect import __version__

    report = BenchReport(
        devices=[],
        quick=cfg.quick,
        torch_version=str(torch.__version__),
        taken_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        app_version=__version__,
    )

    box_end, boxes_left = start + cfg.device_time_box_s(), max(0, len(plans) - 1)

    def event(step: str) -> ProgressEvent:
        now = time.perf_counter()
        elapsed = now - start
        frac = min(1.0, done / total) if total else 1.0
        eta = elapsed / frac * (1 - frac) if frac > 0 else None
        if eta is not None:
            # at most what the devices' time boxes leave: the first steps (torch's import, a
            # settling matmul) are the slowest, and extrapolating them said 25 s of a real 8 s
            eta = min(eta, max(0.0, box_end - now) + cfg.device_time_box_s() * boxes_left)
        return ProgressEvent(
            step=step,
            fraction=frac,
            elapsed_s=round(elapsed, 3),
            eta_s=None if eta is None else round(eta, 1),
            devices=tuple(copy.deepcopy(report.devices)),  # a few small records per step
        )

    try:
        for i, (dev, plan) in enumerate(plans):
            dev_start = time.perf_counter()
            res = DeviceResult(
                device=dev.spec,
                name=dev.name,
                kind=dev.kind,
                memory_total_bytes=dev.memory_total_bytes,
                logical_cores=os.cpu_count() if dev.kind == "cpu" else None,
            )
            report.devices.append(res)
            res.telemetry_before = _telemetry(dev)
            # The user waits for torch's import too: the first device's box includes it.
            runner = _Runner(torch, dev, cfg, cancel, start=start if i == 0 else dev_start)
            box_end, boxes_left = runner.deadline, len(plans) - i - 1
            for label, fn in plan:
                yield event(f"{dev.spec}: {label}")
                try:
                    fn(runner, res)
                except Cancelled:
                    raise
                except Exception as exc:  # noqa: BLE001 - one failing figure never loses the rest
                    res.skipped[label] = failure(exc)
                    runner.empty_cache()
                done += 1
            for model_name in cfg.models:
                yield event(f"{dev.spec}: training step {model_name}")
                measured = 0
                try:
                    for label in measure_train(runner, res, model_name, cfg.train_batch_sizes()):
                        measured += 1
                        done += 1
                        yield event(f"{dev.spec}: training step {label}")
                except Cancelled:
                    raise
                except Exception as exc:  # noqa: BLE001
                    res.skipped[f"train {model_name}"] = failure(exc)
                done += n_batches - measured
            res.telemetry_after = _telemetry(dev)
            res.duration_s = round(time.perf_counter() - dev_start, 2)
            runner.empty_cache()
    except Cancelled:
        report.cancelled = True
    report.duration_s = round(time.perf_counter() - start, 2)
    report.other_cpu_share = other_cpu_share(cpu0, _cpu_seconds(), time.perf_counter() - start)
    if not report.cancelled:
        done = total
        yield event("done")
    attach_spec_ratios(report)
    return report


def run_to_completion(
    cfg: BenchConfig, cancel: CancelFlag | None = None, on_event: Callable[[ProgressEvent], None] | None = None
) -> BenchReport:
    gen = run_benchmark(cfg, cancel)
    while True:
        try:
            ev = next(gen)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if on_event is not None:
            on_event(ev)


def attach_spec_ratios(report: BenchReport) -> None:
    """Measured / catalog spec for each figure of each GPU the catalog knows; says why not otherwise."""
    gpus = [res for res in report.devices if res.kind != "cpu"]
    if not gpus:
        return
    try:
        from gpuselect.catalog import load_catalog

        catalog = load_catalog()
    except Exception as exc:  # noqa: BLE001 - no catalog: no ratios, never a failed benchmark
        from gpuselect.safe_io import one_line

        for res in gpus:
            res.skipped["% of spec"] = one_line(f"the GPU catalog could not be loaded: {type(exc).__name__}: {exc}")
        return
    from gpuselect.bench.findings import spec_ratios

    for res in gpus:
        match = catalog.match(res.name, res.memory_total_bytes)
        if match is None:
            res.skipped["% of spec"] = f"{res.name!r} is not in the GPU catalog"
            continue
        res.spec_name = match.entry.name
        res.spec_ratio = spec_ratios(res, match.entry)
