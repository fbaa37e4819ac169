"""LLM fine-tuning on one GPU, as users run it most: what bounds the step, and where its time goes.

    PYTHONPATH=. python benchmarks/llm_one_gpu.py [--out docs/validation/llm-2026-11-24]

The same estimate as `gpuselect estimate --workload W --batch-size B --gpus ... --count 1` for
Llama 3.1 8B LoRA / QLoRA and Llama 3.2 1B / 3B full fine-tuning at micro-batch 1, 2 and 4 (2,048
tokens each) on five GPUs, with the step split into GEMMs and attention (compute), memory-bound
kernels, the optimizer, the host and the kernel floors, plus the QLoRA dequantisation's share and
the PCIe-only multi-GPU and offload options of a 1B full fine-tuning on RTX 4090s. No measurement
of these runs is in ../shared/data: this is the model's physics, not a validation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import roofline as R
from gpuselect.estimate.trace import OpKind
from gpuselect.workloads.presets import PRESETS

ROOT = Path(__file__).resolve().parents[1]
GPUS = (
    "nvidia-h100-sxm5-80gb",
    "nvidia-a100-sxm4-80gb",
    "nvidia-l40s",
    "nvidia-rtx-a6000",
    "nvidia-rtx-4090",
)
WORKLOADS = ("llama-8b-lora", "llama-8b-qlora", "llama-1b-full", "llama-3b-full")


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "llm-2026-11-24"))
    args = ap.parse_args()
    catalog = load_catalog()
    p = R.params().doc
    lines = [
        "# LLM fine-tuning on one GPU (benchmarks/llm_one_gpu.py)",
        f"step factors: {p['step']}; attention {{d0: {p['attention'].get('d0')}, s_causal: "
        f"{p['attention'].get('s_causal')}}}",
        "checkpointing as the estimate picks it (full where the model does not fit otherwise, or where it trains "
        "faster at the larger batch it allows); "
        "s = seconds per step",
        "",
        f"{'workload':15s} {'mb':>2s} {'GPU':16s} {'tokens/s':>8s} {'bound':8s} {'ckpt':4s} {'compute':>8s} "
        f"{'memory':>7s} {'dequant':>7s} {'optim':>6s} {'host':>6s} {'floor':>6s}",
    ]
    for wid in WORKLOADS:
        w = PRESETS[wid]
        for mb in (1, 2, 4):
            res = A.estimate(w, A.Assumptions(batch_size=mb, counts=(1,)), catalog, gpu_ids=list(GPUS), local=[])
            for r in sorted(res.rows, key=lambda r: GPUS.index(r.gpu_id)):
                if not r.fits:
                    lines.append(f"{wid:15s} {mb:2d} {r.gpu_id[7:23]:16s} does not fit ({r.peak_memory_gb} GB)")
                    continue
                bd = r.time_breakdown_s
                ckpt = r.checkpointing not in (None, "none")
                d = A.device_for(catalog.get(r.gpu_id))
                trace = A.trace_cached(w, r.checkpointing if ckpt else False)
                deq = sum(R.op_time(d, o, mb, r.precision_used)[0] for o in trace.ops if o.kind is OpKind.DEQUANT)
                lines.append(
                    f"{wid:15s} {mb:2d} {r.gpu_id[7:23]:16s} {r.tokens_per_s or 0:8,.0f} {r.bound or '':8s} "
                    f"{'yes' if ckpt else 'no':4s} {bd.get('compute', 0):8.3f} {bd.get('memory', 0):7.3f} "
                    f"{deq:7.3f} {bd.get('optimizer', 0):6.3f} {bd.get('host', 0):6.3f} {bd.get('kernel_floor', 0):6.3f}"
                )
        lines.append("")
    lines += [
        "## PCIe-only multi-GPU and offload: Llama 3.2 1B full fine-tuning, micro-batch 1, RTX 4090 / RTX A6000",
        f"{'option':42s} {'GPU':10s} {'n':>2s} {'tokens/s/GPU':>12s} {'bound':13s} {'comm':>6s} {'offload':>7s}  link",
    ]
    w = PRESETS["llama-1b-full"]
    for sharding, offload in (("none", "none"), ("fsdp", "none"), ("none", "optimizer"), ("fsdp", "optimizer")):
        a = A.Assumptions(batch_size=1, counts=(1, 2, 4), sharding=sharding, offload=offload)
        res = A.estimate(w, a, catalog, gpu_ids=["nvidia-rtx-4090", "nvidia-rtx-a6000"], local=[])
        for r in res.rows:
            name = f"sharding {sharding}, offload {offload}"
            if not r.fits:
                lines.append(f"{name:42s} {r.gpu_id[7:17]:10s} {r.count:2d} does not fit ({r.peak_memory_gb} GB)")
                continue
            bd = r.time_breakdown_s
            lines.append(
                f"{name:42s} {r.gpu_id[7:17]:10s} {r.count:2d} {(r.tokens_per_s or 0) / r.count:12,.0f} "
                f"{(r.bound or '') + '/' + (r.parallelism or ''):13s} {bd.get('communication', 0):6.3f} "
                f"{bd.get('offload', 0):7.3f}  {r.link_basis or ''}"
            )
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "one-gpu.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
