"""LoRA / QLoRA / full fine-tuning of Llama 3.1 8B on one GPU: what bounds the step.

    PYTHONPATH=. python benchmarks/llm_lora.py [--out docs/validation/llm-2026-11-24]

The same estimate as `gpuselect estimate --workload llama-8b-MODE --batch-size 2 --gpus ...
--count 1`, with the step's elementwise traffic per token and layer and the GEMM/elementwise split.
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
GPUS = ("nvidia-rtx-4090", "nvidia-rtx-a6000", "nvidia-h100-sxm5-80gb")


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "llm-2026-11-24"))
    args = ap.parse_args()
    catalog = load_catalog()
    lines = [
        "# Llama 3.1 8B fine-tuning on one GPU, batch 2 x 2048 tokens (benchmarks/llm_lora.py)",
        f"step factors: {R.params().doc['step']}",
    ]
    for mode in ("lora", "qlora", "full"):
        w = PRESETS[f"llama-8b-{mode}"]
        res = A.estimate(w, A.Assumptions(batch_size=2, counts=(1,)), catalog, gpu_ids=list(GPUS), local=[])
        lines.append(f"\n## {w.name}")
        for r in res.rows:
            if not r.fits:
                lines.append(f"{r.name:22s} does not fit: {r.note}")
                continue
            trace = A.trace_cached(w, "checkpointing" in (r.note or ""))
            shape = w.shape
            layers = shape.layers if shape else 1
            tokens = (w.seq_len or 1) * (r.batch_size or 1)
            ew_bytes = sum(
                (o.elems_per_sample * (r.batch_size or 1) + o.elems_fixed) * (4.0 if o.fp32_only else 2.0) * o.count
                for o in trace.ops
                if o.kind is OpKind.ELEMENTWISE
            )
            bd = r.time_breakdown_s
            lines.append(
                f"{r.name:22s} {r.tokens_per_s or 0:7,.0f} tokens/s, bound {r.bound}; GEMM/attention (compute) "
                f"{bd.get('compute', 0):.3f} s, memory-bound kernels {bd.get('memory', 0):.3f} s, optimizer "
                f"{bd.get('optimizer', 0):.4f} s; elementwise traffic {ew_bytes / tokens / layers / 1e6:.2f} MB per "
                f"token and layer ({'with' if 'checkpointing' in (r.note or '') else 'no'} checkpointing)"
            )
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lora.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
