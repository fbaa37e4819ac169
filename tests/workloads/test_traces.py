"""The step traces: analytic transformer builder, modes, checkpointing, synthetic traces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuselect.errors import UsageError
from gpuselect.estimate.trace import OpKind, Phase, StepTrace
from gpuselect.workloads.presets import PRESETS, custom_workload
from gpuselect.workloads.traces import (
    trace_for,
    trace_from_dict,
    trace_to_dict,
    transformer_trace,
    with_mode,
)
from gpuselect.workloads.transformer import (
    TransformerShape,
    lora_params,
    workload_from_hf_config,
)

LLAMA_8B = PRESETS["llama-8b-full"].shape
assert LLAMA_8B is not None


def _flops(t: StepTrace, kind: OpKind | None = None, phase: Phase | None = None, name: str = "") -> float:
    return sum(
        o.flops_per_sample * o.count
        for o in t.ops
        if (kind is None or o.kind is kind) and (phase is None or o.phase is phase) and name in o.name
    )


def test_every_preset_has_a_trace_quickly() -> None:
    import time

    trace_for.cache_clear()
    start = time.perf_counter()
    for w in PRESETS.values():
        for ckpt in (False, True):
            t = trace_for(w, checkpointing=ckpt)
            assert t.ops and t.flops_per_sample() > 0 and t.saved_elems_per_sample > 0, w.id
            assert t.checkpointing is ckpt
            recomputes = any(o.phase is Phase.RECOMPUTE for o in t.ops)
            # a model without repeated blocks (Tacotron 2's decoder loop) has nothing to checkpoint
            assert recomputes is ckpt or (ckpt and t.saved_elems_per_sample_ckpt == t.saved_elems_per_sample), w.id
            assert t.saved_elems_per_sample_ckpt <= t.saved_elems_per_sample, w.id
            assert t.source, w.id
    assert time.perf_counter() - start < 1.0
    assert trace_for(PRESETS["gpt2-124m"], checkpointing=False) is trace_for(PRESETS["gpt2-124m"], checkpointing=False)


def test_llama_gemm_shapes_and_flops() -> None:
    t = transformer_trace(LLAMA_8B)
    q = next(o for o in t.ops if o.name == "layers.attn.q" and o.phase is Phase.FORWARD)
    k = next(o for o in t.ops if o.name == "layers.attn.k" and o.phase is Phase.FORWARD)
    down = next(o for o in t.ops if o.name == "layers.mlp.down" and o.phase is Phase.FORWARD)
    head = next(o for o in t.ops if o.name == "lm_head" and o.phase is Phase.FORWARD)
    assert (q.m_per_sample, q.n, q.k, q.count) == (2048, 4096, 4096, 32)
    assert (k.n, k.k) == (1024, 4096)  # 8 KV heads of 128
    assert (down.n, down.k) == (4096, 14_336)
    assert (head.n, head.k, head.count) == (128_256, 4096, 1)
    assert q.elems_fixed == 4096 * 4096  # the weight, read once a step
    # dense forward FLOPs: 2 x tokens x (non-embedding params + LM head)
    s = 2048
    dense = _flops(t, OpKind.GEMM, Phase.FORWARD)
    non_emb = LLAMA_8B.params() - 2 * LLAMA_8B.vocab * 4096 - 32 * 2 * 4096 - 4096
    assert dense == pytest.approx(2 * s * (non_emb + LLAMA_8B.vocab * 4096), rel=1e-3)
    # fused causal attention: 4 s^2 h per layer, half of it masked
    att = _flops(t, OpKind.ATTENTION, Phase.FORWARD)
    assert att == pytest.approx(32 * 4 * s * s * 4096 / 2)
    assert _flops(t, OpKind.ATTENTION, Phase.BACKWARD) == pytest.approx(2.5 * att)
    # full training: every forward GEMM has a dX and a dW of the same FLOPs
    assert _flops(t, OpKind.GEMM, Phase.BACKWARD) == pytest.approx(2 * dense)


def test_lora_and_qlora_change_the_trace() -> None:
    full, lora, qlora = (transformer_trace(LLAMA_8B, mode=m) for m in ("full", "lora", "qlora"))
    assert not any(o.name.endswith(".dW") and "lora" not in o.name for o in lora.ops)  # frozen base: no dW
    assert any(o.name == "layers.attn.q.dX" for o in lora.ops)  # ... but dX still
    adapters_fwd = _flops(lora, OpKind.GEMM, Phase.FORWARD, "lora_")
    assert adapters_fwd == pytest.approx(2 * 2048 * lora_params(LLAMA_8B, 16) / 32 * 32)
    assert _flops(lora, OpKind.GEMM, Phase.BACKWARD) < 0.55 * _flops(full, OpKind.GEMM, Phase.BACKWARD)
    assert lora.trainable_params == lora_params(LLAMA_8B, 16) < full.trainable_params / 100
    assert not any(o.kind is OpKind.DEQUANT for o in lora.ops)
    deq = [o for o in qlora.ops if o.kind is OpKind.DEQUANT]
    per_layer = sum(
        i * o
        for i, o in (
            (4096, 4096),
            (4096, 1024),
            (4096, 1024),
            (4096, 4096),
            (4096, 14_336),
            (4096, 14_336),
            (14_336, 4096),
        )
    )
    assert sum(o.elems_fixed * o.count for o in deq if o.phase is Phase.FORWARD) == 32 * per_layer
    # backward: every matrix again for its dX, except the first layer's q, k, v (its input needs no gradient)
    assert sum(o.elems_fixed * o.count for o in deq if o.phase is Phase.BACKWARD) == 32 * per_layer - 4096 * (
        4096 + 2 * 1024
    )
    ck = transformer_trace(LLAMA_8B, mode="qlora", checkpointing=True)
    assert (
        sum(o.elems_fixed * o.count for o in ck.ops if o.kind is OpKind.DEQUANT and o.phase is Phase.BACKWARD)
        == 32 * per_layer
    )
    assert (
        sum(o.elems_fixed * o.count for o in ck.ops if o.kind is OpKind.DEQUANT and o.phase is Phase.RECOMPUTE)
        == 32 * per_layer
    )
    r64 = transformer_trace(LLAMA_8B, mode="lora", lora_rank=64)
    assert _flops(r64, OpKind.GEMM, name="lora_") == pytest.approx(4 * _flops(lora, OpKind.GEMM, name="lora_"))


def test_checkpointing_recomputes_the_layers_and_keeps_less() -> None:
    plain, ck = transformer_trace(LLAMA_8B), transformer_trace(LLAMA_8B, checkpointing=True)
    layer_fwd = sum(
        o.flops_per_sample * o.count for o in plain.ops if o.phase is Phase.FORWARD and o.name.startswith("layers.")
    )
    assert _flops(ck, phase=Phase.RECOMPUTE) == pytest.approx(layer_fwd)
    assert ck.saved_elems_per_sample_ckpt < plain.saved_elems_per_sample / 8
    # the per-layer saved set is derived per op: block inputs + one layer's working set remain
    s, h = 2048, 4096
    assert ck.saved_elems_per_sample_ckpt > 32 * s * h


def test_saved_activations_use_fused_attention() -> None:
    t = transformer_trace(LLAMA_8B)
    s, h, f, L = 2048, 4096, 14_336, 32
    # no s x s score matrix: far below Korthikanti's 5 a s^2 term
    # per layer: RMSNorm outputs (2 x 2), q, k and v expanded to all heads, the attention output, 4 FFN tensors
    assert t.saved_elems_per_sample < L * s * (8 * h + 4 * f) * 1.05
    assert t.saved_elems_per_sample > L * s * (8 * h + 4 * f) * 0.95
    from dataclasses import replace as _replace

    grouped = transformer_trace(_replace(LLAMA_8B, repeat_kv=False))  # a kernel that reads the KV groups itself
    assert t.saved_elems_per_sample - grouped.saved_elems_per_sample == pytest.approx(L * s * 2 * (h - 1024))
    assert not any("repeat_kv" in o.name for o in grouped.ops)
    assert t.logits_elems_per_sample == s * 128_256
    assert t.saved_fp32_elems_per_sample >= s * 128_256  # the loss's fp32 log-probabilities
    gpt2 = trace_for(PRESETS["gpt2-124m"], checkpointing=False)
    assert gpt2.saved_bytes_per_sample >= 12 * 2 * 1024 * 768  # two dropout masks per layer, 1 byte each


def test_encoder_has_no_lm_head_and_full_attention() -> None:
    bert = trace_for(PRESETS["bert_base_squad"], checkpointing=False)
    assert not any(o.name == "lm_head" for o in bert.ops)
    s, h = 384, 768
    assert _flops(bert, OpKind.ATTENTION, Phase.FORWARD) == pytest.approx(12 * 4 * s * s * h)  # not causal


def test_with_mode_for_presets_and_configs(tmp_path: Path) -> None:
    w = with_mode(PRESETS["llama-8b-full"], "qlora", 8)
    assert (w.mode, w.lora_rank, w.trainable_params) == ("qlora", 8, lora_params(LLAMA_8B, 8))
    assert any(o.kind is OpKind.DEQUANT for o in trace_for(w, checkpointing=False).ops)
    # the existing preset ids give the same trace as the mode applied to the full preset
    assert (
        trace_for(PRESETS["llama-8b-lora"], checkpointing=True).ops
        == trace_for(with_mode(PRESETS["llama-8b-full"], "lora", 16), checkpointing=True).ops
    )
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "model_type": "mistral",
                "hidden_size": 1024,
                "num_hidden_layers": 4,
                "num_attention_heads": 8,
                "num_key_value_heads": 2,
                "vocab_size": 32000,
                "intermediate_size": 3584,
                "max_position_embeddings": 4096,
                "rms_norm_eps": 1e-5,
                "tie_word_embeddings": False,
            }
        )
    )
    c = workload_from_hf_config(cfg, seq_len=512, mode="lora", lora_rank=4)
    t = trace_for(c, checkpointing=False)
    assert c.shape is not None and c.shape.norm == "rmsnorm" and c.shape.rotary and c.shape.gated_ffn
    assert t.trainable_params == lora_params(c.shape, 4)
    with pytest.raises(UsageError, match="transformer"):
        with_mode(PRESETS["resnet50"], "lora")
    assert with_mode(PRESETS["resnet50"], "full") is PRESETS["resnet50"]
    with pytest.raises(UsageError, match="mode"):
        with_mode(PRESETS["gpt2-124m"], "half")
    with pytest.raises(UsageError, match="rank"):
        with_mode(PRESETS["gpt2-124m"], "lora", 0)


def test_synthetic_trace_matches_the_given_figures() -> None:
    w = custom_workload(1e9, 6e12)
    t = trace_for(w, checkpointing=False)
    assert "APPROXIMATION" in t.source
    assert _flops(t, phase=Phase.FORWARD) == pytest.approx(6e12, rel=0.02)
    assert _flops(t, OpKind.GEMM, Phase.FORWARD) > 0.95 * _flops(t, phase=Phase.FORWARD)
    assert sum(
        o.elems_fixed * o.count for o in t.ops if o.kind is OpKind.GEMM and o.phase is Phase.FORWARD
    ) == pytest.approx(1e9, rel=0.02)  # every parameter read once in the forward
    small = trace_for(custom_workload(3e7, 4e5), checkpointing=False)  # embedding-heavy: F < 2N
    assert _flops(small, phase=Phase.FORWARD) == pytest.approx(4e5, rel=0.05)


def test_trace_round_trips_through_json() -> None:
    t = trace_for(PRESETS["llama-1b-qlora"], checkpointing=True)
    assert trace_from_dict(json.loads(json.dumps(trace_to_dict(t)))) == t


def test_no_torch_import() -> None:
    code = (
        "import sys; from gpuselect.workloads.presets import PRESETS; from gpuselect.workloads.traces import trace_for; "
        "[trace_for(w, checkpointing=c) for w in PRESETS.values() for c in (False, True)]; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_shape_defaults_keep_gpt_arithmetic() -> None:
    s = TransformerShape(layers=2, hidden=64, heads=4, vocab=100, seq_len=16, ffn=256)
    assert s.is_causal and s.kv_dim == 64
    assert not TransformerShape(layers=2, hidden=64, heads=4, vocab=100, seq_len=16, ffn=256, lm_head=False).is_causal


def test_vit_config_builds_a_vision_trace(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "model_type": "vit",
                "hidden_size": 768,
                "num_hidden_layers": 12,
                "num_attention_heads": 12,
                "intermediate_size": 3072,
                "image_size": 224,
                "patch_size": 16,
                "num_channels": 3,
                "hidden_dropout_prob": 0.0,
            }
        )
    )
    w = workload_from_hf_config(cfg)
    assert w.input_shape == (3, 224, 224) and w.shape is not None and w.shape.seq_len == 197
    # ViT-B/16's 86.6 M parameters and profiled forward FLOPs (the vit-b16 preset, measured on its reference model)
    assert w.params == PRESETS["vit-b16"].params
    assert w.forward_flops_per_sample == pytest.approx(PRESETS["vit-b16"].forward_flops_per_sample, rel=0.01)
    t = trace_for(with_mode(w, "lora", 8), checkpointing=False)
    conv = [o for o in t.ops if o.kind is OpKind.CONV]
    assert [o.phase for o in conv] == [Phase.FORWARD]  # frozen patch embedding: no weight gradient
    assert not any(o.name == "lm_head" for o in t.ops)
    assert t.logits_elems_per_sample == 1000


def test_llama_parameter_counts_are_exact() -> None:
    # The released checkpoints' parameter counts (Hugging Face safetensors metadata of Llama 3.2 1B,
    # Llama 3.1 8B and 70B): RMSNorm has a weight only, and there is a final norm.
    assert PRESETS["llama-1b-full"].params == 1_235_814_400
    assert PRESETS["llama-8b-full"].params == 8_030_261_248
    assert PRESETS["llama-70b-full"].params == 70_553_706_496


@pytest.mark.parametrize("mode", ["full", "lora", "qlora"])
def test_selective_checkpointing_recomputes_attention_and_elementwise_but_not_the_linears(mode: str) -> None:
    plain = transformer_trace(LLAMA_8B, mode=mode)
    sel = transformer_trace(LLAMA_8B, mode=mode, checkpointing="selective")
    full = transformer_trace(LLAMA_8B, mode=mode, checkpointing="full")
    assert sel.checkpointing and "selective activation checkpointing" in sel.source
    again = [o for o in sel.ops if o.phase is Phase.RECOMPUTE]
    names = {o.name for o in again}
    assert "layers.attn.sdpa" in names and "layers.mlp.silu" in names  # the attention core and elementwise ops
    base = {"layers.attn.q", "layers.attn.k", "layers.attn.v", "layers.attn.o", "layers.mlp.gate", "layers.mlp.up"}
    assert not names & (base | {n + ".dequant" for n in base} | {"layers.mlp.down"})  # linear outputs are kept
    if mode != "full":
        assert any(".lora_A" in n for n in names)  # the low-rank adapters are cheap: recomputed
    extra = sel.flops_per_sample() - plain.flops_per_sample()
    assert 0 < extra < 0.1 * (full.flops_per_sample() - plain.flops_per_sample())
    # keeps less than no checkpointing, more than full: each layer's input and its linear outputs
    s, h, kv, f, L = 2048, 4096, 1024, 14_336, 32
    kept = s * (h + h + 2 * kv + h + 2 * f + h)
    assert sel.saved_elems_per_sample_sel == pytest.approx(full.saved_elems_per_sample_ckpt - L * s * h + L * kept)
    assert full.saved_elems_per_sample_ckpt < sel.saved_elems_per_sample_sel < plain.saved_elems_per_sample
    assert plain.saved_elems_per_sample_sel == sel.saved_elems_per_sample_sel  # every trace states it


def test_selective_checkpointing_of_a_workload_without_a_shape_is_full() -> None:
    w = PRESETS["resnet50"]
    assert trace_for(w, checkpointing="selective").ops == trace_for(w, checkpointing=True).ops
    with pytest.raises(UsageError):
        trace_for(w, checkpointing="sometimes")
