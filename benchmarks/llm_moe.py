"""Mixture-of-experts fine-tuning as the model sees it: what an MoE step costs against a dense
model that runs the same active weights, and where the time goes.

    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/llm_moe.py \
        > docs/validation/llm-2026-11-24/moe.txt

Four public configs (the model cards' Hugging Face ``config.json`` values, written below as data),
read by the same code as ``gpuselect estimate --config``: Mixtral 8x7B, Qwen1.5-MoE-A2.7B,
Qwen3-30B-A3B and OLMoE-1B-7B. Each runs full, LoRA and QLoRA at micro-batch 1 x 2,048 tokens on
one GPU, beside its "dense twin": the same model with one expert of top-k x the expert width, so the
same FLOPs per token, without the expert loop. The step is split as the estimate splits it; the
host line counts the eager dispatches and the expert loop's syncs (Hugging Face's eager MoE block:
one ``torch.where`` per expert per layer and pass). No MoE training step is in ../shared/data or
our records: this is the model's physics, not a validation (MoE rows take the widest band).
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate.perf import step_time
from gpuselect.workloads.traces import transformer_trace
from gpuselect.workloads.transformer import TransformerShape, shape_from_hf_config, transformer_workload

CONFIGS: dict[str, dict[str, object]] = {
    "Mixtral-8x7B": {
        "model_type": "mixtral", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "num_local_experts": 8,
        "num_experts_per_tok": 2, "rms_norm_eps": 1e-5, "rope_theta": 1e6, "tie_word_embeddings": False,
        "vocab_size": 32000, "max_position_embeddings": 32768,
    },
    "Qwen1.5-MoE-A2.7B": {
        "model_type": "qwen2_moe", "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5632,
        "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_attention_heads": 16,
        "num_key_value_heads": 16, "num_hidden_layers": 24, "num_experts": 60, "num_experts_per_tok": 4,
        "decoder_sparse_step": 1, "mlp_only_layers": [], "rms_norm_eps": 1e-6, "rope_theta": 1e6,
        "tie_word_embeddings": False, "vocab_size": 151936, "max_position_embeddings": 8192,
    },
    "Qwen3-30B-A3B": {
        "model_type": "qwen3_moe", "hidden_act": "silu", "hidden_size": 2048, "head_dim": 128,
        "intermediate_size": 6144, "moe_intermediate_size": 768, "num_attention_heads": 32,
        "num_key_value_heads": 4, "num_hidden_layers": 48, "num_experts": 128, "num_experts_per_tok": 8,
        "rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": False, "vocab_size": 151936,
        "max_position_embeddings": 40960,
    },
    "OLMoE-1B-7B": {
        "model_type": "olmoe", "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 1024,
        "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 16, "num_experts": 64,
        "num_experts_per_tok": 8, "rms_norm_eps": 1e-5, "rope_theta": 1e4, "tie_word_embeddings": False,
        "vocab_size": 50304, "max_position_embeddings": 4096,
    },
}  # fmt: skip
#: Read for their parameter counts only (the table that opens the output).
COUNT_ONLY: dict[str, dict[str, object]] = {
    "gpt-oss-20b": {
        "model_type": "gpt_oss", "hidden_act": "silu", "hidden_size": 2880, "head_dim": 64, "intermediate_size": 2880,
        "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 24, "num_local_experts": 32,
        "num_experts_per_tok": 4, "rms_norm_eps": 1e-5, "rope_theta": 150000, "tie_word_embeddings": False,
        "vocab_size": 201088, "max_position_embeddings": 131072,
    },
    "Gemma-7B": {
        "model_type": "gemma", "hidden_act": "gelu", "hidden_size": 3072, "head_dim": 256, "intermediate_size": 24576,
        "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 28, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "vocab_size": 256000, "max_position_embeddings": 8192,
    },
    "Qwen3-0.6B": {
        "model_type": "qwen3", "hidden_act": "silu", "hidden_size": 1024, "head_dim": 128, "intermediate_size": 3072,
        "num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 28, "rms_norm_eps": 1e-6,
        "rope_theta": 1e6, "tie_word_embeddings": True, "vocab_size": 151936, "max_position_embeddings": 40960,
    },
}  # fmt: skip
GPUS = ("nvidia-h100-sxm5-80gb", "nvidia-a100-sxm4-80gb", "nvidia-rtx-4090")
TOKENS = 2048


def main() -> int:
    catalog = load_catalog()
    lines = [
        "# Mixture-of-experts fine-tuning in the model (benchmarks/llm_moe.py): unvalidated physics",
        f"micro-batch 1 x {TOKENS:,} tokens, one GPU, bf16 (mixed for full, 16-bit frozen base for LoRA, NF4 for "
        "QLoRA), no checkpointing; s = seconds per step; twin = one dense expert of top-k x the expert width",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:

        def read(name: str, cfg: dict[str, object]) -> TransformerShape:
            path = Path(tmp) / name / "config.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(cfg))
            return shape_from_hf_config(path, seq_len=TOKENS)

        lines += [
            "## Parameters, and how session 7's reader counted them (experts and head_dim ignored: one dense FFN of "
            "intermediate_size, heads of hidden / heads)",
            f"{'config':18s} {'total B':>8s} {'active B':>8s} {'session 7 B':>11s}",
        ]
        for name, cfg in {**CONFIGS, **COUNT_ONLY}.items():
            shape = read(name, cfg)
            before = replace(
                shape,
                experts=0,
                experts_per_token=0,
                shared_ffn=0,
                head_dim=None,
                ffn=int(str(cfg["intermediate_size"])),
            )
            lines.append(
                f"{name:18s} {shape.params() / 1e9:8.2f} {shape.active_params() / 1e9:8.2f} {before.params() / 1e9:11.2f}"
            )
        lines.append("")
        for name, cfg in CONFIGS.items():
            shape = read(name, cfg)
            twin = replace(shape, experts=0, experts_per_token=0, shared_ffn=0, ffn=shape.ffn * shape.experts_per_token)
            lines.append(
                f"## {name}: {shape.params() / 1e9:.1f} B parameters, {shape.active_params() / 1e9:.2f} B active per "
                f"token; {shape.experts} experts, {shape.experts_per_token} per token"
                + (f", a shared expert of {shape.shared_ffn}" if shape.shared_ffn else "")
            )
            lines.append(
                f"{'mode':6s} {'GPU':16s} {'model':6s} {'tokens/s':>9s} {'step s':>7s} {'device':>7s} {'host':>7s} "
                f"{'dispatches':>10s} {'syncs':>6s} {'bound':8s} {'MoE/twin':>8s}"
            )
            for mode in ("full", "lora", "qlora"):
                prec = "bf16" if mode == "full" else "bf16-true"
                for gpu_id in GPUS:
                    d = A.device_for(catalog.get(gpu_id))
                    steps = {}
                    for label, s in (("MoE", shape), ("twin", twin)):
                        t = transformer_trace(s, mode=mode)
                        st = step_time(t, d, 1, prec, optimizer="adamw", full_params=mode == "full")
                        steps[label] = (t, st)
                    for label, (t, st) in steps.items():
                        ratio = steps["MoE"][1].seconds / steps["twin"][1].seconds
                        lines.append(
                            f"{mode:6s} {gpu_id[7:23]:16s} {label:6s} {TOKENS / st.seconds:9,.0f} {st.seconds:7.3f} "
                            f"{st.device_s:7.3f} {st.host_s:7.3f} {t.dispatches_per_step():10,d} "
                            f"{t.syncs_per_step:6d} {st.bound:8s} " + (f"{ratio:8.2f}" if label == "MoE" else "")
                        )
            # What fits where, as `gpuselect estimate --config` decides it (memory with every expert stored).
            for mode in ("lora", "qlora"):
                w = transformer_workload(
                    f"config:{name}", name, shape, mode=mode, description=name, dataset_size=1, epochs=1,
                    batch_size=1, source="benchmarks/llm_moe.py",
                )  # fmt: skip
                res = A.estimate(w, A.Assumptions(batch_size=1, counts=(1,)), catalog, gpu_ids=list(GPUS), local=[])
                fits = ", ".join(
                    f"{r.gpu_id[7:]} {'fits' if r.fits else 'does not fit'} ({r.peak_memory_gb} GB)" for r in res.rows
                )
                lines.append(f"{mode} at batch 1, the estimate's memory plan: {fits}")
            lines.append("")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
