"""The worked examples session 17's notes and CHANGELOG quote, from whichever tree is on the path.

Rerun (this tree, and session 16's in a worktree for the "before" column):
    GPUSELECT_SHARED_DATA=../shared/data python benchmarks/session17_examples.py > docs/validation/llm-2026-11-24/session17-after.txt
    git worktree add /tmp/s16 d448a19 && GPUSELECT_SHARED_DATA=../shared/data \
        python benchmarks/session17_examples.py --tree /tmp/s16 > docs/validation/llm-2026-11-24/session17-before.txt
Each example runs `gpuselect estimate ... --format json` from the tree given (this one by default):
1. Qwen3-30B-A3B LoRA (its config.json's public shape) on 16 H100, bf16: the sharded alternative
   weighing checkpointing's larger batch.
2. Llama 3.2 1B full on 8 L40S with ZeRO-2 at batch 1: DeepSpeed's 16-bit reduce-scatter.
3. Llama 3.1 8B full on 2 MI300X: the ring over the one link between them.
4. Mask R-CNN on one B200, checkpointing full and none: the recompute of a calibrated model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: Qwen3-30B-A3B's config.json as published (the keys the builder reads).
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "norm_topk_prob": True,
}


def rows(tree: Path, *args: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-m", "gpuselect", "estimate", *args, "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        check=True,
    ).stdout
    return list(json.loads(out)["rows"])


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--tree", default=str(ROOT), help="the gpuselect checkout to run (default: this one)")
    tree = Path(ap.parse_args().tree).resolve()
    commit = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"# gpuselect at commit {commit or '?'}")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "qwen3-30b-a3b.json"
        cfg.write_text(json.dumps(QWEN3_30B_A3B))
        (r,) = rows(tree, "--config", str(cfg), "--mode", "lora", "--gpus", "nvidia-h100-sxm5-80gb",
                    "--count", "16", "--precision", "bf16")  # fmt: skip
        print(
            f"qwen3-30b-a3b lora, 16x H100 SXM5, bf16: batch {r['batch_size']}, checkpointing "
            f"{r['checkpointing']}, {r['parallelism']}, {r['tokens_per_s']:,.0f} tokens/s"
        )
    (r,) = rows(tree, "--workload", "llama-1b-full", "--gpus", "nvidia-l40s", "--count", "8",
                "--sharding", "zero2", "--batch-size", "1")  # fmt: skip
    t = r["time_breakdown_s"]
    step = r["batch_size"] * r["count"] / r["throughput_samples_per_s"]
    print(
        f"llama-1b-full, 8x L40S, --sharding zero2, batch 1: {step:.2f} s a step, communication "
        f"{t.get('communication', 0.0):.3f} s, {r['throughput_samples_per_s']:.1f} samples/s"
    )
    (r,) = rows(tree, "--workload", "llama-8b-full", "--gpus", "amd-mi300x", "--count", "2")
    print(
        f"llama-8b-full, 2x MI300X: link {r['link_gbs']:.1f} GB/s ({r['link_basis']}), communication "
        f"{r['time_breakdown_s'].get('communication', 0.0):.3f} s, {r['throughput_samples_per_s']:.2f} samples/s"
    )
    for ck in ("full", "none"):
        (r,) = rows(tree, "--workload", "maskrcnn", "--gpus", "nvidia-b200", "--max-gpus", "1", "--checkpointing", ck)
        print(
            f"maskrcnn, 1x B200, --checkpointing {ck}: {r['peak_memory_gb']:.1f} GB, {r['total_time_h']:.1f} h "
            f"(batch {r['batch_size']})"
        )


if __name__ == "__main__":
    main()
