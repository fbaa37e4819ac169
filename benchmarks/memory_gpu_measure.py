"""Measure what the memory model cannot calibrate on a CPU: the CUDA context and the caching
allocator's slack, plus the peak itself, on a real GPU.


constants are assumptions until it is. Rerun on a machine with an NVIDIA GPU:

    PYTHONPATH=. python benchmarks/memory_gpu_measure.py [OUT_DIR]

(writes OUT_DIR/memory-gpu.txt and memory-gpu.json; default docs/validation/memory-gpu/)

For a decoder of 12 layers x 1024 hidden (the tiny decoder of memory_cpu_activations.py, scaled
up: fused SDPA attention, RMSNorm, gated MLP, 32k vocabulary, 1,024 tokens), in bf16-true and in
mixed bf16 (autocast over fp32 weights), full training and LoRA, at batches 1/2/4/8, with and
without checkpointing, one process per configuration would be cleanest; here each configuration
resets the peak counters and frees everything before the next. Per run it records
torch.cuda.max_memory_allocated(), max_memory_reserved() and NVML's used memory, and prints them
next to the model's prediction (allocated = the peak less overhead; reserved + context = the peak).
It then states context = NVML used - reserved (median over runs) and slack = reserved / allocated - 1.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
from memory_cpu_activations import TinyDecoder

from gpuselect.estimate import memory as M
from gpuselect.workloads.transformer import TransformerShape, transformer_workload


def nvml_used_bytes() -> int | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return int(out.split()[0]) * 2**20
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def run(
    shape: TransformerShape, mode: str, precision: str, batch: int, ckpt: bool
) -> dict[str, float | int | str | None]:
    dev = torch.device("cuda")
    dtype = torch.bfloat16 if precision == "bf16-true" else torch.float32
    model = TinyDecoder(shape).to(dev, dtype)
    if mode == "lora":
        model.to_lora()
        model.to(dev, dtype)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ids = torch.randint(0, shape.vocab, (batch, shape.seq_len), device=dev)
    torch.cuda.reset_peak_memory_stats()
    for _ in range(2):  # the second step has the optimizer state from the first
        with torch.autocast("cuda", torch.bfloat16, enabled=precision == "bf16"):
            x = model.emb(ids)
            for blk in model.blocks:
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False) if ckpt else blk(x)
            logits = model.head(model.norm(x))
            loss = F.cross_entropy(logits.float().view(-1, shape.vocab), ids.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, logits, loss
    torch.cuda.synchronize()
    rec: dict[str, float | int | str | None] = {
        "mode": mode,
        "precision": precision,
        "batch": batch,
        "checkpointing": ckpt,
        "allocated": torch.cuda.max_memory_allocated(),
        "reserved": torch.cuda.max_memory_reserved(),
        "nvml_used": nvml_used_bytes(),
    }
    predict(rec, shape)
    del model, opt, ids
    gc.collect()
    torch.cuda.empty_cache()
    return rec


def predict(rec: dict[str, float | int | str | None], shape: TransformerShape) -> None:
    """The memory model's prediction for a measured configuration, written into ``rec``."""
    mode, batch = str(rec["mode"]), int(rec["batch"] or 0)
    w = transformer_workload(
        "m", "m", shape, description="", mode=mode, dataset_size=1, epochs=1, batch_size=batch, source="", lora_rank=8
    )
    o = M.MemoryOptions(
        precision=str(rec["precision"]), checkpointing=bool(rec["checkpointing"]), lora_targets="qv", lora_dropout=True
    )
    b = M.peak_memory(w, batch, o, shape)
    rec["predicted_peak"] = b.total()
    rec["predicted_allocated"] = b.total() - b.overhead


def main() -> int:
    # --repredict FILE.json [OUT_DIR]: no GPU; the saved measurements against today's memory model.
    repredict = len(sys.argv) > 2 and sys.argv[1] == "--repredict"
    if not repredict and not torch.cuda.is_available():
        print("no CUDA GPU: nothing measured")
        return 1
    args = sys.argv[3:] if repredict else sys.argv[1:]
    out = Path(args[0]) if args else ROOT / "docs" / "validation" / "memory-gpu"
    shape = TransformerShape(
        layers=12,
        hidden=1024,
        heads=16,
        vocab=32000,
        seq_len=1024,
        ffn=2816,
        kv_heads=16,
        gated_ffn=True,
        tied_embeddings=False,
    )
    recs = []
    if repredict:
        recs = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
        for r in recs:
            predict(r, shape)
        head = f"measured: {sys.argv[2]} (saved); predicted: today's memory model (--repredict)"
    else:
        for precision in ("bf16-true", "bf16"):
            for mode in ("full", "lora"):
                for ckpt in (False, True):
                    for batch in (1, 2, 4, 8):
                        recs.append(run(replace(shape), mode, precision, batch, ckpt))
        head = f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    lines = [
        head,
        "",
        (
            f"{'precision':10s} {'mode':5s} {'ckpt':5s} {'b':>2s} {'alloc GiB':>10s} {'pred alloc':>10s} {'err':>7s} "
            f"{'reserved':>9s} {'nvml used':>10s} {'pred peak':>10s} {'err':>7s}"
        ),
    ]
    gib = 2**30
    for r in recs:
        alloc, pa = float(r["allocated"] or 0), float(r["predicted_allocated"] or 0)
        used, pp = r["nvml_used"], float(r["predicted_peak"] or 0)
        lines.append(
            f"{r['precision']!s:10s} {r['mode']!s:5s} {r['checkpointing']!s:5s} {r['batch']!s:>2s} {alloc / gib:10.2f} "
            f"{pa / gib:10.2f} {100 * (pa / alloc - 1):+6.1f}% {float(r['reserved'] or 0) / gib:9.2f} "
            + (f"{float(used) / gib:10.2f} {pp / gib:10.2f} {100 * (pp / float(used) - 1):+6.1f}%" if used else "n/a")
        )
    slack = statistics.median(float(r["reserved"] or 0) / float(r["allocated"] or 1) - 1 for r in recs)
    ctx = [float(r["nvml_used"]) - float(r["reserved"] or 0) for r in recs if r["nvml_used"]]  # type: ignore[arg-type]
    lines += [
        "",
        f"allocator slack (median reserved/allocated - 1): {100 * slack:.1f} %",
        f"context (median NVML used - reserved): {statistics.median(ctx) / gib:.2f} GiB"
        if ctx
        else "context: NVML not readable",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory-gpu.txt").write_text(text, encoding="utf-8")
    (out / "memory-gpu.json").write_text(json.dumps(recs, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
