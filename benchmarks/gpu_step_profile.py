"""Where a measured training step's GPU time goes, by kernel class: GEMMs, fused attention and the
rest (elementwise, norms, casts, the loss, the optimizer), from torch.profiler's CUDA kernel times.
Set beside the estimate's time_breakdown_s (compute = GEMMs + attention, memory = the rest).

    PYTHONPATH=. python3 benchmarks/gpu_step_profile.py OUT.json   # on a CUDA machine (transformers, peft)

Runs Llama 3.2 1B full fine-tuning (bf16-true, micro-batch 4) and Llama 3.1 8B LoRA (micro-batch 2),
2,048 tokens, built as benchmarks/gpu_steptime.py builds them: 3 warm-up steps, 2 profiled.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path
import gpu_steptime as G


def kernel_class(name: str) -> str:
    n = name.lower()
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if any(k in n for k in ("gemm", "xmma", "cutlass", "nvjet", "wgmma", "matmul")):
        return "gemm"
    return "other"


def profile(size: str, mode: str, mb: int) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    model, seq, vocab = G._llama(size, mode, "bf16-true", False, 0.05)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=not G.SMOKE)
    ids = torch.randint(0, vocab, (mb, seq), device=G._dev())

    def step() -> None:
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    G._sync()
    acts = [ProfilerActivity.CPU] if G.SMOKE else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    t0 = time.perf_counter()
    with tprofile(activities=acts) as prof:
        for _ in range(2):
            step()
        G._sync()
    wall = (time.perf_counter() - t0) / 2
    by: dict[str, float] = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    kernels: dict[str, list[float]] = {}
    for e in prof.events():
        dt = getattr(e, "device_type", None)
        if G.SMOKE or (dt is not None and "CUDA" in str(dt)):
            us = float(getattr(e, "device_time", 0.0) or getattr(e, "cuda_time", 0.0) or e.cpu_time)
            if not G.SMOKE and us <= 0:
                continue
            c = kernel_class(e.name)
            by[c] += us / 2e6
            k = kernels.setdefault(e.name[:120], [0.0, 0.0])
            k[0] += us / 2e6
            k[1] += 0.5
    top = sorted(kernels.items(), key=lambda kv: -kv[1][0])[:40]
    return {
        "workload": f"llama-{size}-{mode}",
        "batch": mb,
        "seq": seq,
        "wall_step_s": wall,
        "kernel_s_by_class": by,
        "kernel_s_total": sum(by.values()),
        "top_kernels": [
            {"name": n, "s_per_step": v[0], "calls_per_step": v[1], "class": kernel_class(n)} for n, v in top
        ],
    }


def main() -> int:
    G.SMOKE = "--smoke" in sys.argv
    out = Path(next(a for a in sys.argv[1:] if not a.startswith("--")))
    res = []
    for size, mode, mb in (("1b", "full", 4), ("8b", "lora", 2)):
        r = profile(size, mode, mb)
        res.append(r)
        out.write_text(json.dumps(res, indent=1))
        print(
            f"{r['workload']} mb{mb}: step {r['wall_step_s']:.3f} s; kernels "
            + ", ".join(f"{k} {v:.3f} s" for k, v in r["kernel_s_by_class"].items()),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
