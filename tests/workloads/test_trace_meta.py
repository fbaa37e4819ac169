"""The meta-device tracer: shipped traces are reproducible, and the analytic transformer builder
agrees with a traced tiny GPT-2 / BERT (FLOPs within 2 %, saved activations within 10 %)."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

torch = pytest.importorskip("torch")

# ruff: noqa: E402 - the imports below need torch, skipped above when missing
from torch import nn

from gpuselect.estimate.trace import OpKind, Phase, StepTrace
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.reference_models import TinyTransformer
from gpuselect.workloads.trace_build.__main__ import OUT, build
from gpuselect.workloads.trace_build.meta import trace_module
from gpuselect.workloads.traces import (
    shipped_trace,
    trace_for,
    trace_from_dict,
    transformer_trace,
)
from gpuselect.workloads.transformer import TransformerShape


def _dense(t: StepTrace, phase: Phase | None = None) -> float:
    return sum(
        o.flops_per_sample * o.count
        for o in t.ops
        if o.kind in (OpKind.GEMM, OpKind.CONV, OpKind.ATTENTION) and (phase is None or o.phase is phase)
    )


@pytest.mark.parametrize("preset_id", ["mnist-mlp", "simple-cnn", "bench-transformer"])
def test_shipped_trace_is_reproduced(preset_id: str) -> None:
    shipped = json.loads((OUT / f"{preset_id}.json").read_text())
    fresh = build(preset_id)
    for which in ("plain", "ckpt"):
        a, b = shipped[which], fresh[which]
        assert a["ops"] == b["ops"]
        assert {k: v for k, v in a.items() if k not in ("ops", "source")} == {
            k: v for k, v in b.items() if k not in ("ops", "source")
        }


def test_every_reference_preset_ships_a_trace_that_matches_its_flops() -> None:
    from gpuselect.workloads.reference_models import REFERENCE

    for pid in REFERENCE:
        t = shipped_trace(pid)
        assert t is not None, pid
        w = PRESETS[pid]
        # the forward's dense FLOPs are the preset's profiled forward FLOPs (causal attention halved)
        fwd = _dense(t, Phase.FORWARD)
        assert fwd == pytest.approx(w.forward_flops_per_sample, rel=0.25), pid
        assert t.trainable_params == w.params or pid.startswith(("bert", "gpt2")), pid
        ck = shipped_trace(pid, True)
        assert ck is not None and ck.checkpointing and ck.saved_elems_per_sample_ckpt <= t.saved_elems_per_sample
    # presets without a shape use the shipped trace
    assert trace_for(PRESETS["resnet50"], checkpointing=False).source.startswith("meta-device trace")


@pytest.mark.parametrize("causal", [True, False], ids=["gpt2-like", "bert-like"])
def test_analytic_builder_matches_the_meta_tracer(causal: bool) -> None:
    V, h, L, heads, ffn, s = 2000, 128, 3, 4, 512, 64
    factory = functools.partial(TinyTransformer, V, h, L, heads, ffn, s, causal, causal, True)
    meta, meta_ck = trace_module(factory, (s,), torch.long, loss="ce", labels_per_sample=s)
    shape = TransformerShape(layers=L, hidden=h, heads=heads, vocab=V, seq_len=s, ffn=ffn, lm_head=causal)
    ana = transformer_trace(shape)
    ana_ck = transformer_trace(shape, checkpointing=True)
    for phase in (Phase.FORWARD, Phase.BACKWARD):
        assert _dense(ana, phase) == pytest.approx(_dense(meta, phase), rel=0.02)
    # the meta trace runs in fp32: its saved set is the analytic 16-bit + fp32 tensors together
    assert ana.saved_elems_per_sample + ana.saved_fp32_elems_per_sample == pytest.approx(
        meta.saved_elems_per_sample, rel=0.10
    )
    assert ana_ck.saved_elems_per_sample_ckpt + ana_ck.saved_fp32_elems_per_sample_ckpt == pytest.approx(
        meta_ck.saved_elems_per_sample_ckpt, rel=0.10
    )
    assert _dense(ana_ck, Phase.RECOMPUTE) == pytest.approx(_dense(meta_ck, Phase.RECOMPUTE), rel=0.02)


def test_meta_trace_separates_per_sample_from_per_step() -> None:
    t = trace_from_dict(build("mnist-mlp")["plain"])
    fc1 = [o for o in t.ops if o.kind is OpKind.GEMM and o.phase is Phase.FORWARD and o.k == 784]
    assert len(fc1) == 1 and fc1[0].m_per_sample == 1 and fc1[0].n == 256
    assert fc1[0].elems_fixed == 784 * 256 + 256  # weight + bias, once a step
    assert fc1[0].flops_per_sample == 2 * 784 * 256
    # backward: dX of fc2 and dW of both; fc1's input needs no gradient
    assert sum(o.count for o in t.ops if o.kind is OpKind.GEMM and o.phase is Phase.BACKWARD) == 3
    # the input (for fc1.dW), relu's output (kept by relu and fc2: one storage), the log-probabilities
    assert t.saved_elems_per_sample == 784 + 256 + 10


def test_analytic_vit_matches_the_meta_tracer() -> None:
    from gpuselect.workloads.reference_models import ViT

    meta, meta_ck = trace_module(functools.partial(ViT, 64, 16, 128, 3, 4, 512, 10, True), (3, 64, 64), loss="ce")
    shape = TransformerShape(
        layers=3,
        hidden=128,
        heads=4,
        vocab=10,
        seq_len=17,
        ffn=512,
        lm_head=False,
        causal=False,
        fused_qkv=True,
        patch=16,
    )
    ana, ana_ck = transformer_trace(shape), transformer_trace(shape, checkpointing=True)
    assert ana.params == meta.params
    for phase in (Phase.FORWARD, Phase.BACKWARD):
        assert _dense(ana, phase) == pytest.approx(_dense(meta, phase), rel=0.02)
    assert shape.forward_flops_per_sequence() == pytest.approx(_dense(meta, Phase.FORWARD), rel=0.02)
    assert ana.saved_elems_per_sample + ana.saved_fp32_elems_per_sample == pytest.approx(
        meta.saved_elems_per_sample, rel=0.10
    )
    assert ana_ck.saved_elems_per_sample_ckpt + ana_ck.saved_fp32_elems_per_sample_ckpt == pytest.approx(
        meta_ck.saved_elems_per_sample_ckpt, rel=0.10
    )


@pytest.mark.parametrize(
    ("rank", "kv_heads", "head_dim", "experts", "top_k"),
    [
        *((0, 4, 0, 0, 0), (8, 4, 0, 0, 0), (0, 2, 0, 0, 0), (8, 1, 0, 0, 0)),
        *((0, 2, 48, 0, 0), (8, 2, 48, 0, 0), (0, 2, 0, 4, 2), (8, 2, 0, 4, 2), (0, 2, 48, 8, 1)),
    ],
    ids=[
        "full",
        "lora",
        "full-gqa",
        "lora-mqa",
        "full-head-dim",
        "lora-head-dim",
        "full-moe",
        "lora-moe",
        "moe-head-dim",
    ],
)
def test_analytic_llama_matches_the_meta_tracer(
    rank: int, kv_heads: int, head_dim: int, experts: int, top_k: int
) -> None:
    """Hugging Face-style eager Llama (RMSNorm upcast, rotate_half, repeat_kv, SwiGLU), full and LoRA;
    with a per-head width apart from hidden / heads (Gemma, Qwen3) and with Mixtral's eager MoE
    block (router, top-k, each expert on its share of the tokens, index_add_)."""
    from gpuselect.workloads.trace_build.llama_ref import TinyLlama

    V, h, L, heads, ffn, s = 2000, 128, 3, 4, 352, 64
    meta, meta_ck = trace_module(
        functools.partial(TinyLlama, V, h, L, heads, ffn, rank, kv_heads, head_dim or None, experts, top_k),
        (s,),
        torch.long,
        loss="ce",
        labels_per_sample=s,
    )
    shape = TransformerShape(
        layers=L,
        hidden=h,
        heads=heads,
        kv_heads=kv_heads,
        vocab=V,
        seq_len=s,
        ffn=ffn,
        gated_ffn=True,
        tied_embeddings=False,
        norm="rmsnorm",
        rotary=True,
        head_dim=head_dim or None,
        experts=experts,
        experts_per_token=top_k,
    )
    mode = "lora" if rank else "full"
    # llama_ref's adapters have no dropout: the analytic trace built the same way
    ana = transformer_trace(shape, mode=mode, lora_rank=max(rank, 1), lora_dropout=False)
    ana_ck = transformer_trace(shape, mode=mode, lora_rank=max(rank, 1), checkpointing=True, lora_dropout=False)
    assert ana.params == meta.params - (meta.trainable_params if rank else 0)  # the analytic count leaves out adapters
    assert ana.trainable_params == meta.trainable_params
    for phase in (Phase.FORWARD, Phase.BACKWARD):
        assert _dense(ana, phase) == pytest.approx(_dense(meta, phase), rel=0.02)
    assert _dense(ana_ck, Phase.RECOMPUTE) == pytest.approx(_dense(meta_ck, Phase.RECOMPUTE), rel=0.02)
    assert ana.saved_elems_per_sample + ana.saved_fp32_elems_per_sample == pytest.approx(
        meta.saved_elems_per_sample, rel=0.10
    )
    assert ana_ck.saved_elems_per_sample_ckpt + ana_ck.saved_fp32_elems_per_sample_ckpt == pytest.approx(
        meta_ck.saved_elems_per_sample_ckpt, rel=0.10
    )
    # one expert loop per layer and pass: a host sync per expert and one for the hit list
    assert ana.syncs_per_step == L * (experts + 1 if experts else 0)
    assert ana_ck.syncs_per_step == 2 * ana.syncs_per_step


class _SdpaBlock(nn.Module):
    """A user's attention written with F.scaled_dot_product_attention (what --model files do)."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.out(y.transpose(1, 2).reshape(b, t, d))


@pytest.mark.parametrize("kind", ["functional", "multihead"])
def test_user_sdpa_is_traced_as_the_fused_kernel_without_a_score_matrix(kind: str) -> None:
    # On the meta device torch would take SDPA's math path and keep t x t scores per head; a GPU
    # runs the fused kernel, which keeps none. 512 tokens x 4 heads: the scores alone would be
    # 1 M elements per layer per sample, far above the layer's own activations.
    tokens, d = 512, 64

    def factory() -> nn.Module:
        if kind == "functional":
            return nn.Sequential(_SdpaBlock(d), _SdpaBlock(d))
        layer = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True, dropout=0.0)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    plain, _ = trace_module(factory, (tokens, d))
    kinds = [o.kind for o in plain.ops]
    assert OpKind.ATTENTION in kinds
    # the two layers' scores would be 2 x 4 x t^2 = 2 M elements; allow half that for everything
    assert plain.saved_elems_per_sample < 4 * tokens * tokens
    # and SDPA is itself again once tracing is over
    assert torch.nn.functional.scaled_dot_product_attention.__name__ == "scaled_dot_product_attention"


def _real_cpu_ops(factory: Any, shape: tuple[int, ...]) -> dict[tuple[Phase, str], int]:
    """(phase, op) -> count of the ops one real CPU training step dispatches below autograd,
    recorded by the tracer's own recorder."""
    from gpuselect.workloads.trace_build.meta import _Recorder

    torch.manual_seed(0)
    model = factory()
    model.train()
    x, y = torch.randn(2, *shape), torch.zeros(2, dtype=torch.long)
    rec = _Recorder()
    with rec:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        rec.phase = Phase.BACKWARD
        loss.backward()
    counts: dict[tuple[Phase, str], int] = {}
    for r in rec.recs:
        key = (r.phase, r.name.rsplit(":", 1)[-1])
        counts[key] = counts.get(key, 0) + 1
    return counts


def _traced_ops(t: StepTrace) -> dict[tuple[Phase, str], int]:
    counts: dict[tuple[Phase, str], int] = {}
    for o in t.ops:
        key = (o.phase, o.name.rsplit(":", 1)[-1])
        counts[key] = counts.get(key, 0) + o.count
    return counts


def test_cpu_attention_route_traces_the_math_path_and_its_dropout_mask() -> None:
    # torch's CPU runs SDPA with dropout on the math path (its fused CPU kernel takes no dropout):
    # the step draws a mask over batch x heads x seq x seq, which the fused-kernel trace lacks.
    from gpuselect.workloads.reference_models import bench_transformer

    heads, seq = 4, 64
    cpu, _ = trace_module(bench_transformer, (seq, 256), attention="cpu")
    gpu, _ = trace_module(bench_transformer, (seq, 256), attention="gpu")
    attn_mask = [o for o in cpu.ops if o.name == "layer.self_attn:aten.bernoulli_" and o.phase is Phase.FORWARD]
    assert len(attn_mask) == 1 and attn_mask[0].elems_per_sample / 2 == heads * seq * seq  # in and out
    assert not any(o.kind is OpKind.ATTENTION for o in cpu.ops)
    assert not any(o.name == "layer.self_attn:aten.bernoulli_" for o in gpu.ops)
    assert any(o.kind is OpKind.ATTENTION for o in gpu.ops)
    # the CPU route is op for op what a real CPU step dispatches; the fused one is not
    real = _real_cpu_ops(bench_transformer, (seq, 256))
    assert _traced_ops(cpu) == real
    assert _traced_ops(gpu) != real


def test_cpu_attention_route_without_dropout_is_the_fused_kernel() -> None:
    # without dropout torch's CPU runs its fused kernel (no score matrix, no mask): so does the trace
    def factory() -> nn.Module:
        return nn.Sequential(nn.TransformerEncoderLayer(32, 2, 64, batch_first=True, dropout=0.0), nn.Flatten())

    cpu, _ = trace_module(factory, (8, 32), attention="cpu")
    assert any(o.kind is OpKind.ATTENTION for o in cpu.ops)
    assert not any("bernoulli" in o.name or "softmax" in o.name for o in cpu.ops if "self_attn" in o.name)


class _Cells(torch.nn.Module):
    """Three steps of an LSTMCell on a 16-wide input, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = torch.nn.LSTMCell(16, 32)
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = c = None
        for t in range(3):
            h, c = self.cell(x[:, t], None if h is None else (h, c))
        return self.head(h)


def test_rnn_cells_are_traced_as_the_fused_kernels_a_gpu_launches() -> None:
    """The meta device decomposes an LSTM cell into ~10 pointwise ops forward and ~14 backward;
    a GPU runs one fused kernel each way (_thnn_fused_lstm_cell): one op per cell step each way."""
    plain, _ = trace_module(_Cells, (3, 16), torch.float32, loss="ce")
    fwd = sum(o.count for o in plain.ops if o.name.endswith("fused_rnn_cell"))
    bwd = sum(o.count for o in plain.ops if o.name.endswith("fused_rnn_cell_backward"))
    assert fwd == 3
    assert bwd == 3
    assert not any("sigmoid" in o.name for o in plain.ops)
    # The cell's GEMMs stay as they are: two per step forward.
    assert (
        sum(o.count for o in plain.ops if o.kind is OpKind.GEMM and o.phase is Phase.FORWARD and "cell" in o.name) == 6
    )


class _Seq(torch.nn.Module):
    """A user's model: an nn.LSTM or nn.GRU (12 steps, batch-first or time-major, one or two layers
    and directions) and a linear head."""

    def __init__(self, cell: str, bidirectional: bool, batch_first: bool = True, layers: int = 1) -> None:
        super().__init__()
        rnn = torch.nn.LSTM if cell == "lstm" else torch.nn.GRU
        self.rnn = rnn(16, 32, num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
        self.head = torch.nn.Linear(64 if bidirectional else 32, 4)
        self.batch_first = batch_first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(x if self.batch_first else x.transpose(0, 1))
        return self.head(y if self.batch_first else y.transpose(0, 1))


@pytest.mark.parametrize(
    ("cell", "bidirectional", "batch_first", "layers"),
    [("lstm", False, True, 1), ("lstm", True, True, 1), ("lstm", True, False, 2), ("gru", True, True, 2)],
)
def test_nn_lstm_and_gru_are_traced_as_cudnn_runs_them(
    cell: str, bidirectional: bool, batch_first: bool, layers: int
) -> None:
    """nn.LSTM / nn.GRU on a GPU is one cudnn_rnn call per layer and pass: the host dispatches it
    once, cuDNN itself launches a recurrent GEMM and a pointwise kernel per time step; the input
    projections and the weight gradients are one GEMM over every step. FLOPs are torch's."""
    steps, dirs, gates = 12, 2 if bidirectional else 1, 4 if cell == "lstm" else 3
    plain, _ = trace_module(
        functools.partial(_Seq, cell, bidirectional, batch_first, layers), (steps, 16), torch.float32, loss="ce"
    )
    lib = [o for o in plain.ops if not o.host_dispatch]
    calls = dirs * layers
    assert sum(o.count for o in lib if o.kind is OpKind.GEMM and o.phase is Phase.FORWARD) == calls * steps
    assert sum(o.count for o in lib if o.kind is OpKind.GEMM and o.phase is Phase.BACKWARD) == calls * (steps + 1)
    # what the host dispatches does not grow with the sequence
    assert plain.dispatches_per_step() < 20 * layers and plain.launches_per_step() > 4 * calls * steps
    proj = [o for o in plain.ops if o.kind is OpKind.GEMM and o.phase is Phase.FORWARD and o.n == gates * 32]
    assert sum(o.count for o in proj if o.host_dispatch and o.m_per_sample == steps) == calls
    fwd = sum(o.flops_per_sample * o.count for o in plain.ops if o.kind is OpKind.GEMM and o.phase is Phase.FORWARD)
    head = 2 * (64 if bidirectional else 32) * 4 * steps
    per_layer_in = [16] + [32 * dirs] * (layers - 1)
    assert fwd - head == pytest.approx(sum(dirs * 2 * steps * gates * 32 * (i + 32) for i in per_layer_in))
    bwd = sum(o.flops_per_sample * o.count for o in plain.ops if o.kind is OpKind.GEMM and o.phase is Phase.BACKWARD)
    assert bwd == pytest.approx(2 * (fwd - head) + 2 * head, rel=0.05)
    # and torch's own forward is back once tracing is over
    assert torch.nn.LSTM.forward.__name__ == "forward" and torch.nn.GRU.forward.__name__ == "forward"
