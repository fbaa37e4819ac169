"""The analytic transformer trace (gpuselect/workloads/traces.py) against the meta-device tracer
(gpuselect/workloads/trace_build/meta.py) on the same architectures: the reference models of
reference_models.py with fused attention (post-norm blocks, learned positions, tied LM head,
no dropout) and TransformerShapes describing exactly those models.

Also a Hugging Face-style eager Llama (trace_build/llama_ref.py: RMSNorm with the fp32 upcast,
rotate_half, SwiGLU, untied head), full and with LoRA adapters on frozen weights.

Per phase: dense FLOPs (GEMM + attention) and kernel launches; saved activations without and
with checkpointing (analytic 16-bit + fp32 tensors against the fp32 meta trace's total).

    PYTHONPATH=$PWD python benchmarks/trace_analytic_vs_meta.py > docs/validation/trace-2026-11-23/analytic-vs-meta.txt
"""

from __future__ import annotations

import functools

import torch

from gpuselect.estimate.trace import OpKind, Phase, StepTrace
from gpuselect.workloads.reference_models import TinyTransformer, ViT
from gpuselect.workloads.trace_build.llama_ref import TinyLlama
from gpuselect.workloads.trace_build.meta import trace_module
from gpuselect.workloads.traces import transformer_trace
from gpuselect.workloads.transformer import TransformerShape

CASES = [
    # name, vocab (classes), hidden, layers, heads, ffn, seq, causal/LM head (None: ViT)
    ("tiny GPT-2 (2k vocab, 128, 3 layers, seq 64)", 2000, 128, 3, 4, 512, 64, True),
    ("tiny BERT (2k vocab, 128, 3 layers, seq 64)", 2000, 128, 3, 4, 512, 64, False),
    ("GPT-2 124M (seq 1024)", 50257, 768, 12, 12, 3072, 1024, True),
    ("BERT-base (seq 384)", 30522, 768, 12, 12, 3072, 384, False),
    ("BERT-large (seq 384)", 30522, 1024, 24, 16, 4096, 384, False),
    ("ViT-B/16 (224x224, 1000 classes)", 1000, 768, 12, 12, 3072, 197, None),
    ("tiny Llama, full (2k vocab, 128, 3 layers, seq 64)", 2000, 128, 3, 4, 352, 64, "llama"),
    ("tiny Llama, LoRA rank 8", 2000, 128, 3, 4, 352, 64, "llama-lora"),
    (
        "Llama-style slice with GQA (16 heads, 4 KV heads), LoRA rank 16 (32k vocab, 2048, 4 layers, seq 2048)",
        32000,
        2048,
        4,
        16,
        5504,
        2048,
        "llama-lora16",
    ),
]


def dense(t: StepTrace, phase: Phase) -> float:
    return sum(
        o.flops_per_sample * o.count
        for o in t.ops
        if o.kind in (OpKind.GEMM, OpKind.ATTENTION, OpKind.CONV) and o.phase is phase
    )


def launches(t: StepTrace, phase: Phase) -> int:
    return sum(o.count for o in t.ops if o.phase is phase)


def main() -> None:
    print(f"torch {torch.__version__}; ratios are analytic / meta")
    worst = 0.0
    for name, v, h, layers, heads, ffn, s, causal in CASES:
        mode, rank = "full", 16
        if isinstance(causal, str):  # Hugging Face-style eager Llama (trace_build/llama_ref.py), full or LoRA
            rank = 0 if causal == "llama" else (16 if causal.endswith("16") else 8)
            mode = "lora" if rank else "full"
            kv_heads = 4 if rank == 16 else heads
            llama = functools.partial(TinyLlama, v, h, layers, heads, ffn, rank, kv_heads)
            meta, meta_ck = trace_module(llama, (s,), torch.long, loss="ce", labels_per_sample=s)
            shape = TransformerShape(
                layers=layers,
                hidden=h,
                heads=heads,
                kv_heads=kv_heads,
                vocab=v,
                seq_len=s,
                ffn=ffn,
                gated_ffn=True,
                tied_embeddings=False,
                norm="rmsnorm",
                rotary=True,
            )
        elif causal is None:  # ViT: the reference model, pre-norm, fused q/k/v
            vit = functools.partial(ViT, 224, 16, h, layers, heads, ffn, v, True)
            meta, meta_ck = trace_module(vit, (3, 224, 224), loss="ce")
            shape = TransformerShape(
                layers=layers,
                hidden=h,
                heads=heads,
                vocab=v,
                seq_len=s,
                ffn=ffn,
                lm_head=False,
                causal=False,
                fused_qkv=True,
                patch=16,
            )
        else:
            factory = functools.partial(TinyTransformer, v, h, layers, heads, ffn, s, causal, causal, True)
            meta, meta_ck = trace_module(factory, (s,), torch.long, loss="ce", labels_per_sample=s)
            shape = TransformerShape(layers=layers, hidden=h, heads=heads, vocab=v, seq_len=s, ffn=ffn, lm_head=causal)
        rank = max(rank, 1)
        ana = transformer_trace(shape, mode=mode, lora_rank=rank)
        ana_ck = transformer_trace(shape, mode=mode, lora_rank=rank, checkpointing=True)
        print(f"\n{name}")
        for ph in (Phase.FORWARD, Phase.BACKWARD):
            r = dense(ana, ph) / dense(meta, ph)
            worst = max(worst, abs(r - 1))
            print(
                f"  {ph.value:9s} dense GFLOP/sample  analytic {dense(ana, ph) / 1e9:10.4f}  meta {dense(meta, ph) / 1e9:10.4f}"
                f"  ratio {r:.4f}   launches analytic {launches(ana, ph):5d}  meta {launches(meta, ph):5d}"
            )
        r = dense(ana_ck, Phase.RECOMPUTE) / dense(meta_ck, Phase.RECOMPUTE)
        print(
            f"  recompute dense GFLOP/sample  analytic {dense(ana_ck, Phase.RECOMPUTE) / 1e9:10.4f}  "
            f"meta {dense(meta_ck, Phase.RECOMPUTE) / 1e9:10.4f}  ratio {r:.4f}"
        )
        a = ana.saved_elems_per_sample + ana.saved_fp32_elems_per_sample
        ac = ana_ck.saved_elems_per_sample_ckpt + ana_ck.saved_fp32_elems_per_sample_ckpt
        print(
            f"  saved M elements/sample    analytic {a / 1e6:10.3f}  meta {meta.saved_elems_per_sample / 1e6:10.3f}  "
            f"ratio {a / meta.saved_elems_per_sample:.4f}"
        )
        print(
            f"  saved, checkpointed        analytic {ac / 1e6:10.3f}  meta {meta_ck.saved_elems_per_sample_ckpt / 1e6:10.3f}  "
            f"ratio {ac / meta_ck.saved_elems_per_sample_ckpt:.4f}"
        )
    print(f"\nlargest dense-FLOP deviation: {100 * worst:.2f} %")


if __name__ == "__main__":
    main()
