"""Which attention the bench transformer runs on a CPU, and what the CPU trace holds of it.

Rerun:  PYTHONPATH=. python benchmarks/cpu_attention_path.py \
            --fit docs/validation/cpu-xeon-2026-11-25/bench-fit-attention-math.txt
Output: docs/validation/cpu-xeon-2026-11-25/attention-path.txt; --fit FILE: bench_fit_validation.py's
        whole output with the math-path trace as the CPU's bench transformer (the shipped trace's:
        docs/validation/cpu-vm-2026-11-24/bench-fit.txt)

Session 12 left a hypothesis for the H100 server's 16-core Xeon (its transformer predicted 2x too
fast): on a CPU, F.scaled_dot_product_attention with dropout runs the math path, whose own dropout
mask (batch x heads x seq x seq) the shipped trace, taken with the fused kernel, does not hold.
1. torch.profiler over one real training step (batch 2, train mode): the SDPA kernel torch's CPU
   picks with the attention's dropout at 0.1 (as gpuselect bench trains it) and at 0.0.
2. The ops dispatched below autograd (the level the meta-device tracer records, with its
   recorder) in one real CPU step at batch 2 and 4, per sample, against the meta trace taken with
   the fused kernel (attention="gpu": the shipped bench-transformer.json) and with torch's CPU
   choice (attention="cpu"): op counts, mask elements, elementwise traffic, FLOPs.
3. The pre-registered rule (Session 16): adopt the math-path trace only if the quiet CPU records'
   in-sample and leave-one-model-out medians each get no worse than +1.0 point and the 16-core
   Xeon's transformer errors shrink (bench_fit_validation.py's records and fits, both traces).
No timings: counts of ops and elements only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
import bench_fit_validation as bfv

from gpuselect.bench.engine import _make_model
from gpuselect.estimate import perf
from gpuselect.estimate.trace import OpKind, Phase, StepTrace
from gpuselect.workloads import reference_models as rm
from gpuselect.workloads.trace_build import meta
from gpuselect.workloads.traces import shipped_trace

OUT = ROOT / "docs" / "validation" / "cpu-xeon-2026-11-25" / "attention-path.txt"
HEADS, SEQ = 4, 64  # the bench transformer: nn.TransformerEncoderLayer(256, 4 heads) on 64 vectors


def _model(p_attn: float) -> tuple[nn.Module, Any, Any]:
    torch.manual_seed(0)
    model, batch, loss_fn = _make_model(torch, "transformer")
    for m in model.modules():
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = p_attn
    model.train()
    return model, batch, loss_fn


def sdpa_kernels(p_attn: float) -> list[str]:
    """The attention kernels torch.profiler sees in one real training step at batch 2."""
    model, batch, loss_fn = _model(p_attn)
    x, y = batch(2)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss_fn(model(x), y).backward()
    names = {e.name for e in prof.events()}
    return sorted(n for n in names if "scaled_dot_product" in n or "flash_attention" in n)


def safe_softmax_children() -> list[str]:
    """What aten::_safe_softmax runs inside (below the dispatch level the traces record)."""
    model, batch, loss_fn = _model(0.1)
    x, y = batch(2)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss_fn(model(x), y).backward()
    for e in prof.events():
        if e.name == "aten::_safe_softmax":
            return [c.name for c in e.cpu_children]
    return []


def real_step(batch_size: int) -> list[Any]:
    """The ops one real CPU training step dispatches below autograd, recorded as the meta tracer
    records them (its _Recorder: views and allocations left out)."""
    model, batch, loss_fn = _model(0.1)
    x, y = batch(batch_size)
    rec = meta._Recorder()
    with rec:
        loss = loss_fn(model(x), y)
        rec.phase = Phase.BACKWARD
        loss.backward()
    return rec.recs


def _op(name: str) -> str:
    return name.rsplit(":", 1)[-1]


def real_per_sample() -> dict[tuple[str, str], tuple[int, float, float]]:
    """(phase, op) -> (count, elements per sample, FLOPs per sample) of the real step."""
    r2, r4 = real_step(2), real_step(4)
    if [r.func for r in r2] != [r.func for r in r4]:
        raise RuntimeError("the real step runs different ops at batch 2 and 4")
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for a, b in zip(r2, r4, strict=True):
        v = out[(a.phase.value, _op(a.name))]
        v[0] += 1
        v[1] += (b.elems - a.elems) / 2
        v[2] += (b.flops - a.flops) / 2
    return {k: (int(v[0]), v[1], v[2]) for k, v in out.items()}


def trace_per_sample(t: StepTrace) -> dict[tuple[str, str], tuple[int, float, float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for o in t.ops:
        v = out[(o.phase.value, _op(o.name))]
        v[0] += o.count
        v[1] += o.elems_per_sample * o.count
        v[2] += o.flops_per_sample * o.count
    return {k: (int(v[0]), v[1], v[2]) for k, v in out.items()}


def mask_elems(t: StepTrace, scope: str = "") -> float:
    """Dropout mask elements per sample in the forward (half a bernoulli_'s counted elements: the
    tensor in and the same tensor out), as perf._cpu_rng_seconds counts them."""
    return sum(
        o.elems_per_sample / 2 * o.count
        for o in t.ops
        if o.phase is Phase.FORWARD and "bernoulli" in o.name and o.name.startswith(scope)
    )


def traced(attention: str) -> StepTrace:
    plain, _ = meta.trace_module(rm.bench_transformer, (64, 256), torch.float32, loss="ce", attention=attention)
    return plain


def _fit_summary(trace: StepTrace) -> tuple[float, float, list[float]]:
    """(quiet in-sample median, quiet LOMO median, the 16-core Xeon's transformer in-sample errors)
    as bench_fit_validation.py computes them, with ``trace`` as the CPU's bench transformer."""
    perf._BENCH_TRACE_CACHE["transformer/cpu"] = trace
    catalog = bfv.load_catalog(use_overlay=False)
    ins: list[float] = []
    lomo: list[float] = []
    xeon: list[float] = []
    for label, rec, _note, kind in bfv.records():
        steps = bfv.bench_step_list(rec)
        if kind != "cpu quiet" or not steps:
            continue
        d0, h2d = bfv.base_device(rec, catalog)
        f_all = bfv.fit_bench_steps(d0, steps, h2d_gbs=h2d)
        for model, batch, seconds in steps:
            other = [s for s in steps if s[0] != model]
            f_out = bfv.fit_bench_steps(d0, other, h2d_gbs=h2d) if other else None
            e_in = seconds / bfv.predict(bfv.apply_bench_fit(d0, f_all), h2d, model, batch) - 1
            ins.append(abs(e_in))
            if f_out is not None:
                lomo.append(abs(seconds / bfv.predict(bfv.apply_bench_fit(d0, f_out), h2d, model, batch) - 1))
            if label.endswith("bench-quick.json:cpu") and model == "transformer" and batch > 1:
                xeon.append(e_in)
    perf._BENCH_TRACE_CACHE.pop("transformer/cpu", None)
    return statistics.median(ins), statistics.median(lomo), xeon


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--fit", default="", help="also write bench_fit_validation.py's output on the math-path trace")
    args = ap.parse_args()
    lines = [
        "# The bench transformer's attention on a CPU (benchmarks/cpu_attention_path.py)",
        f"torch {torch.__version__}, {torch.get_num_threads()} threads",
        "",
        "## 1. The SDPA kernel torch's CPU runs in one training step (torch.profiler, batch 2)",
    ]
    for p in (0.1, 0.0):
        lines.append(f"attention dropout {p:.1f}: {', '.join(sdpa_kernels(p))}")
    lines.append(f"aten::_safe_softmax (math path) runs inside: {', '.join(safe_softmax_children())}")

    real = real_per_sample()
    gpu_t, cpu_t = traced("gpu"), traced("cpu")
    shipped = shipped_trace("bench-transformer")
    assert shipped is not None
    same = shipped.ops == gpu_t.ops
    lines += [
        "",
        "## 2. Ops dispatched below autograd, one step, per sample (batch 4 minus batch 2)",
        "real = a real CPU step (dropout 0.1 everywhere); fused = meta trace with the fused kernel "
        f"(attention='gpu'; the shipped bench-transformer.json: {'identical' if same else 'DIFFERS'}); "
        "cpu = meta trace with torch's CPU choice (attention='cpu')",
        f"{'phase':8s} {'op':34s} {'count real/fused/cpu':>20s} {'elements per sample real/fused/cpu':>40s}",
    ]
    fused_ps, cpu_ps = trace_per_sample(gpu_t), trace_per_sample(cpu_t)
    keys = list(dict.fromkeys([*real, *fused_ps, *cpu_ps]))
    for key in keys:
        counts = [str(d.get(key, (0, 0.0, 0.0))[0]) for d in (real, fused_ps, cpu_ps)]
        elems = [f"{d.get(key, (0, 0.0, 0.0))[1]:.0f}" for d in (real, fused_ps, cpu_ps)]
        mark = "" if counts[0] == counts[2] and elems[0] == elems[2] else "   <- real != cpu trace"
        lines.append(f"{key[0]:8s} {key[1]:34s} {'/'.join(counts):>20s} {'/'.join(elems):>40s}{mark}")

    def tot(d: dict[tuple[str, str], tuple[int, float, float]], what: int, pred: Any = None) -> float:
        return sum(v[what] for k, v in d.items() if pred is None or pred(k))

    def is_ew(t: StepTrace) -> Any:
        ew = {(o.phase.value, _op(o.name)) for o in t.ops if o.kind is OpKind.ELEMENTWISE}
        return lambda k: k in ew

    real_mask = sum(v[1] / 2 for k, v in real.items() if k == ("forward", "aten.bernoulli_"))
    lines += [
        "",
        "Totals per sample                          real        fused          cpu",
        f"dispatched ops (count)             {tot(real, 0):10.0f} {tot(fused_ps, 0):12.0f} {tot(cpu_ps, 0):12.0f}",
        f"FLOPs (GEMM + attention)           {tot(real, 2):10.3e} {tot(fused_ps, 2):12.3e} {tot(cpu_ps, 2):12.3e}",
        f"elementwise elements read+written  {tot(real, 1, is_ew(cpu_t)):10.0f} "
        f"{tot(fused_ps, 1, is_ew(gpu_t)):12.0f} {tot(cpu_ps, 1, is_ew(cpu_t)):12.0f}",
        f"dropout mask elements (forward)    {real_mask:10.0f} {mask_elems(gpu_t):12.0f} {mask_elems(cpu_t):12.0f}",
        f"  of which the attention's         {'':10s} {mask_elems(gpu_t, 'layer.self_attn'):12.0f} "
        f"{mask_elems(cpu_t, 'layer.self_attn'):12.0f}   (heads x seq x seq = {HEADS * SEQ * SEQ})",
        f"mask draw at {perf.CPU_RNG_S_PER_ELEM * 1e9:.1f} ns/elem, ms per sample "
        f"{real_mask * perf.CPU_RNG_S_PER_ELEM * 1e3:7.3f} {mask_elems(gpu_t) * perf.CPU_RNG_S_PER_ELEM * 1e3:12.3f} "
        f"{mask_elems(cpu_t) * perf.CPU_RNG_S_PER_ELEM * 1e3:12.3f}",
        f"saved activations, M elements      {'':10s} {gpu_t.saved_elems_per_sample / 1e6:12.3f} "
        f"{cpu_t.saved_elems_per_sample / 1e6:12.3f}",
    ]

    b_in, b_lomo, b_x = _fit_summary(gpu_t)
    a_in, a_lomo, a_x = _fit_summary(cpu_t)
    ok = a_in <= b_in + 0.01 and a_lomo <= b_lomo + 0.01 and all(abs(a) < abs(b) for a, b in zip(a_x, b_x, strict=True))
    lines += [
        "",
        "## 3. The pre-registered rule over the quiet CPU records (bench_fit_validation.py's fits)",
        f"{'':28s} {'fused (shipped)':>16s} {'cpu (math path)':>16s}",
        f"{'in-sample median |err|':28s} {100 * b_in:15.2f}% {100 * a_in:15.2f}%   (allowed: +1.00 point)",
        f"{'LOMO median |err|':28s} {100 * b_lomo:15.2f}% {100 * a_lomo:15.2f}%   (allowed: +1.00 point)",
        f"{'16-core Xeon transformer':28s} {' / '.join(f'{100 * e:+.0f}%' for e in b_x):>16s} "
        f"{' / '.join(f'{100 * e:+.0f}%' for e in a_x):>16s}   (batch 16 / 128, in sample; must shrink)",
        f"rule: {'met: adopt' if ok else 'not met: the math-path trace stays off'}",
    ]
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    if args.fit:
        perf._BENCH_TRACE_CACHE["transformer/cpu"] = cpu_t
        sys.argv = ["bench_fit_validation.py", "--out", args.fit]
        with contextlib.redirect_stdout(io.StringIO()):
            bfv.main()
        perf._BENCH_TRACE_CACHE.pop("transformer/cpu", None)
        fit = Path(args.fit)
        head = (
            "# NOT SHIPPED: the CPU's bench transformer traced with attention='cpu' (the math path and its "
            "dropout mask; benchmarks/cpu_attention_path.py --fit)\n"
        )
        fit.write_text(head + fit.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
