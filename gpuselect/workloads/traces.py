"""The operator trace of one training step of a workload: ``trace_for(w, checkpointing=...)``.

Where a trace comes from, in order:
1. a trace measured for this very workload (``--model``: the meta-device tracer, run on the
   user's file in a subprocess) carried on ``Workload.trace``;
2. a transformer shape (``Workload.shape``: the transformer presets and ``--config``): the
   analytic builder below, for every mode (full, LoRA, QLoRA) and rank;
3. a meta-device trace shipped as package data (``gpuselect/estimate/data/traces/<id>.json``,
   written by ``python -m gpuselect.workloads.trace_build``) for the presets with a torch model;
4. otherwise a synthetic GEMM-dominated trace from the workload's parameter count and FLOPs,
   marked as an approximation in ``source``.

No torch here: the estimator calls ``trace_for`` for every preset and GPU, so it is cached.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from gpuselect.errors import DataError, UsageError
from gpuselect.estimate.trace import NF4_BLOCK, Op, OpKind, Phase, StepTrace, checkpointing_mode
from gpuselect.types import Mode, parse
from gpuselect.workloads.model import Workload
from gpuselect.workloads.transformer import LORA_TARGETS, TransformerShape, adapted_matrices, lora_params

MODES: tuple[Mode, ...] = tuple(Mode)  # (gpuselect.types.Mode is the one source)
ATTENTION_BACKWARD_FACTOR = 2.5  # FlashAttention-2: backward ~2.5x the forward's FLOPs
#: Bytes per absmax that double quantisation's two kernels move: the 8-bit code read and the fp32
#: value written (blockwise dequantisation; its own fp32 constant per 256 is negligible), then the
#: offset add reading and writing it again.
DQ_ABSMAX_BYTES = 1.0 + 4.0 + 8.0
TRACE_DIR = "data/traces"  # inside the gpuselect.estimate package


# --------------------------------------------------------------------------------------------
# Analytic transformer builder
# --------------------------------------------------------------------------------------------


@dataclass
class _Section:
    """The ops and saved tensors of one part of the model (embedding, one layer, head). Saved
    tensors are keyed by name so a tensor two consumers keep is counted once."""

    fwd: list[Op] = field(default_factory=list)
    bwd: list[Op] = field(default_factory=list)  # in forward order; reversed when assembled
    saved: dict[str, float] = field(default_factory=dict)  # elements at the training precision
    saved_fp32: dict[str, float] = field(default_factory=dict)  # elements kept in fp32 whatever the precision
    saved_bytes: dict[str, float] = field(default_factory=dict)  # bytes: dropout masks, token ids
    # what selective checkpointing keeps of a layer: its input and its linear layers' outputs
    kept_sel: dict[str, float] = field(default_factory=dict)
    # Identical calls the ops added now stand for (an MoE layer's experts, run one after another):
    # each op counts this many launches and each saved tensor this many copies.
    repeat: int = 1
    syncs: int = 0  # host waits for the device (a data-dependent shape read back, e.g. torch.where)

    def op(
        self,
        kind: OpKind,
        phase: Phase,
        name: str,
        *,
        flops: float = 0.0,
        elems: float = 0.0,
        fixed: float = 0.0,
        m: float = 0.0,
        n: int = 0,
        k: int = 0,
        kernels: int = 1,
        fp32: bool = False,
        causal: bool = False,
        host_dispatch: bool = True,
    ) -> None:
        # `kernels` identical launches share the traffic (eager code that is several small kernels).
        o = Op(
            kind=kind,
            phase=phase,
            name=name,
            flops_per_sample=flops / kernels,
            elems_per_sample=elems / kernels,
            elems_fixed=fixed / kernels,
            m_per_sample=m,
            n=n,
            k=k,
            count=kernels * self.repeat,
            fp32_only=fp32,
            causal=causal,
            host_dispatch=host_dispatch,
        )
        (self.fwd if phase is Phase.FORWARD else self.bwd).append(o)

    def dequant(self, phase: Phase, name: str, weights: float, double_quant: bool) -> None:
        """bitsandbytes' NF4 dequantisation of one linear's weight before its GEMM. With double
        quantisation (bitsandbytes' ``compress_statistics``, as the QLoRA recipe sets it) the fp32
        absmax per 64 weights is itself stored in 8 bits: two more small kernels first, inside the
        same call (the absmax's blockwise dequantisation and its offset add; ~13 bytes per absmax)."""
        self.op(OpKind.DEQUANT, phase, name + ".dequant", fixed=weights)
        if double_quant:
            absmax = weights / NF4_BLOCK
            self.op(
                OpKind.ELEMENTWISE,
                phase,
                name + ".dequant.absmax",
                fixed=absmax * DQ_ABSMAX_BYTES / 4.0,
                kernels=2,
                fp32=True,
                host_dispatch=False,
            )

    def ew(
        self,
        name: str,
        elems: float,
        *,
        bwd: float | None = None,
        kernels: int = 1,
        bwd_kernels: int | None = None,
        fixed: float = 0.0,
        fp32: bool = False,
        flops_per_elem: float = 1.0,
    ) -> None:
        """A memory-bound op in the forward and (unless ``bwd`` is 0) its backward."""
        self.op(
            OpKind.ELEMENTWISE,
            Phase.FORWARD,
            name,
            elems=elems,
            flops=flops_per_elem * elems / 2,
            fixed=fixed,
            kernels=kernels,
            fp32=fp32,
        )
        b = elems * 1.5 if bwd is None else bwd
        if b:
            self.op(
                OpKind.ELEMENTWISE,
                Phase.BACKWARD,
                name + ".backward",
                elems=b,
                flops=flops_per_elem * b / 3,
                fixed=fixed,
                kernels=bwd_kernels or kernels,
                fp32=fp32,
            )

    def gemm(
        self,
        name: str,
        tokens: float,
        n_in: int,
        n_out: int,
        *,
        x: str,
        trainable: bool,
        quant: bool = False,
        double_quant: bool = True,
        grad_input: bool = True,
        bias: bool = False,
    ) -> None:
        """y = x W (W: n_in x n_out): forward, dX = dY W^T and, for a trainable W, dW = x^T dY
        (stored as tokens x n_out x n_in, the same FLOPs; the reduction runs over the batch's tokens)."""
        w = float(n_in * n_out)
        flops = 2.0 * tokens * n_in * n_out
        if quant:
            self.dequant(Phase.FORWARD, name, w, double_quant)
        self.op(
            OpKind.GEMM,
            Phase.FORWARD,
            name,
            flops=flops,
            elems=tokens * (n_in + n_out),
            fixed=w,
            m=tokens,
            n=n_out,
            k=n_in,
        )
        if grad_input:
            if quant:
                self.dequant(Phase.BACKWARD, name, w, double_quant)
            self.op(
                OpKind.GEMM,
                Phase.BACKWARD,
                name + ".dX",
                flops=flops,
                elems=tokens * (n_in + n_out),
                fixed=w,
                m=tokens,
                n=n_in,
                k=n_out,
            )
        if trainable:
            self.saved[x] = tokens * n_in * self.repeat  # aten.mm keeps its input for the weight gradient
            self.op(
                OpKind.GEMM,
                Phase.BACKWARD,
                name + ".dW",
                flops=flops,
                elems=tokens * (n_in + n_out),
                fixed=w,
                m=tokens,
                n=n_out,
                k=n_in,
            )
            if bias:  # the bias gradient: a reduction over the tokens (the forward's add is in the GEMM)
                self.op(
                    OpKind.ELEMENTWISE,
                    Phase.BACKWARD,
                    name + ".dBias",
                    elems=tokens * n_out,
                    flops=tokens * n_out,
                    fixed=n_out,
                )

    def adapter(
        self, name: str, tokens: float, n_in: int, n_out: int, *, x: str, rank: int, dropout: bool = True
    ) -> None:
        """LoRA on a frozen matrix as PEFT runs it in eager mode: y += B(A(dropout(x))) * scale,
        A: n_in x r, B: r x n_out. Per adapted linear and pass that is, besides the two rank-r GEMMs:
        its own dropout over the input (q, k and v each run one on the same input), a multiply by
        the scale and an add onto the base output; the backward runs the scale's and the dropout's
        backward and accumulates the adapter's input gradient into the base's. PEFT keeps adapter
        weights in fp32 (``autocast_adapter_dtype``), so under autocast each F.linear first casts
        its weight to 16 bits, and the backward casts the weight gradient back to fp32: two small
        kernels each way (a launch and a dispatch each, whatever the batch)."""
        r = rank
        if dropout:
            # native_dropout: output + 1-byte mask (half an element); backward: grad x mask / (1 - p)
            self.ew(name + ".lora_dropout", 2.5 * tokens * n_in, bwd=2.5 * tokens * n_in)
            self.saved_bytes[name + ".lora_dropout.mask"] = tokens * n_in * self.repeat
            x = name + ".dropped"  # lora_A keeps the dropped-out input for its weight gradient
        # fp32 -> 16-bit weight casts (read 4 B, write 2 B: 3 elements of 2 B), and the gradients back
        w = float(r * (n_in + n_out))
        self.op(OpKind.ELEMENTWISE, Phase.FORWARD, name + ".lora_weight_cast", fixed=3.0 * w, kernels=2)
        self.op(OpKind.ELEMENTWISE, Phase.BACKWARD, name + ".lora_grad_cast", fixed=3.0 * w, kernels=2)
        self.gemm(name + ".lora_A", tokens, n_in, r, x=x, trainable=True)
        self.gemm(name + ".lora_B", tokens, r, n_out, x=name + ".xA", trainable=True)
        # scale, then add onto the base output; backward: the scaled gradient, then dX accumulates
        self.ew(name + ".lora_scale_add", 5 * tokens * n_out, bwd=2 * tokens * n_out + 3 * tokens * n_in, kernels=2)


def _norm(sec: _Section, shape: TransformerShape, name: str, tokens: float, *, x: str, trainable: bool) -> None:
    h = shape.hidden
    if shape.norm == "rmsnorm":
        # Hugging Face / LitGPT RMSNorm in eager: to(fp32), pow, mean, add+rsqrt, mul, to(dtype), * weight
        sec.op(
            OpKind.ELEMENTWISE,
            Phase.FORWARD,
            name + ".fp32",
            elems=7 * tokens * h,
            flops=4 * tokens * h,
            kernels=5,
            fp32=True,
        )
        sec.op(
            OpKind.ELEMENTWISE,
            Phase.FORWARD,
            name + ".scale",
            elems=5 * tokens * h,
            flops=tokens * h,
            fixed=h,
            kernels=2,
        )
        sec.op(
            OpKind.ELEMENTWISE,
            Phase.BACKWARD,
            name + ".fp32.backward",
            elems=12 * tokens * h,
            flops=6 * tokens * h,
            kernels=8,
            fp32=True,
        )
        sec.op(
            OpKind.ELEMENTWISE,
            Phase.BACKWARD,
            name + ".scale.backward",
            elems=6 * tokens * h,
            flops=2 * tokens * h,
            fixed=2 * h,
            kernels=3,
        )
        sec.saved_fp32[x + ".fp32"] = tokens * h  # the fp32 copy pow/mul keep
        sec.saved_fp32[name + ".rstd"] = tokens
        if trainable:
            sec.saved[name + ".normed"] = tokens * h  # weight * x keeps x for the weight's gradient
    else:
        sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, name, elems=2 * tokens * h, flops=8 * tokens * h, fixed=2 * h)
        # native_layer_norm_backward: dx, then the gamma/beta reduction
        sec.op(
            OpKind.ELEMENTWISE,
            Phase.BACKWARD,
            name + ".backward",
            elems=3 * tokens * h,
            flops=10 * tokens * h,
            fixed=2 * h,
            kernels=2,
        )
        sec.saved[x] = tokens * h
        sec.saved_fp32[name + ".stats"] = 2 * tokens


def _dropout(sec: _Section, name: str, elems: float) -> None:
    # native_dropout: output plus a 1-byte mask (counted as half an element of traffic)
    sec.ew(name, 2.5 * elems, bwd=2.5 * elems)
    sec.saved_bytes[name + ".mask"] = elems


def _eager_attention(sec: _Section, shape: TransformerShape, s: float, h: int, kv: int, heads: int, d: int) -> None:
    """Attention with the score matrix materialised (heads x s x s per sample): two batched GEMMs
    with a reduction of only the head dimension (or s), and four memory-bound passes over the
    scores each way. Causal masking saves no FLOPs here (the full matrix is computed, then masked)."""
    a = heads * s * s  # score elements per sample
    f = 2.0 * s * s * h  # one batched GEMM's FLOPs (both are s x s x d per head)
    sec.op(
        OpKind.GEMM, Phase.FORWARD, "layers.attn.scores", flops=f, elems=s * h + s * kv + a, m=s * heads, n=int(s), k=d
    )
    sec.ew("layers.attn.scale", 2 * a, bwd=2 * a)
    sec.ew("layers.attn.mask", 2 * a, bwd=0.0)  # the mask's add (or where) passes its gradient through
    sec.ew("layers.attn.softmax", 2 * a, bwd=3 * a)
    if shape.dropout:
        _dropout(sec, "layers.attn.probs_dropout", a)
    sec.op(
        OpKind.GEMM, Phase.FORWARD, "layers.attn.context", flops=f, elems=a + s * kv + s * h, m=s * heads, n=d, k=int(s)
    )
    sec.ew("layers.attn.merge_heads", 2 * s * h, bwd=2 * s * h)  # permute + contiguous copy
    # backward: d(probs) = dC V^T, dV = P^T dC, dQ = dS K, dK = dS^T Q; each reads and writes the
    # scores-sized matrix and a q- and a k/v-sized one
    for name, n, k in (
        ("layers.attn.context.dP", int(s), d),
        ("layers.attn.context.dV", d, int(s)),
        ("layers.attn.scores.dQ", d, int(s)),
        ("layers.attn.scores.dK", d, int(s)),
    ):
        sec.op(OpKind.GEMM, Phase.BACKWARD, name, flops=f, elems=a + s * h + s * kv, m=s * heads, n=n, k=k)
    sec.saved.update({"q": s * h, "k": s * kv, "v": s * kv, "probs": a, "attn_out": s * h})
    if shape.dropout:
        sec.saved["probs_dropped"] = a


def _layer(
    shape: TransformerShape, mode: str, rank: int, lora_dropout: bool = True, double_quant: bool = True
) -> _Section:
    sec = _Section()
    s, h, kv, f, q = float(shape.seq_len), shape.hidden, shape.kv_dim, shape.ffn, shape.q_dim
    heads, d = shape.heads, shape.d_head
    full, lora, quant = mode == "full", mode != "full", mode == "qlora"

    def linear(name: str, x: str, n_in: int, n_out: int, adapters: tuple[tuple[str, int], ...] | None = None) -> None:
        sec.gemm(name, s, n_in, n_out, x=x, trainable=full, quant=quant, double_quant=double_quant, bias=shape.has_bias)
        sec.kept_sel[name] = s * n_out  # selective checkpointing keeps the (base) linear's output
        if lora:
            for sub, out in adapters if adapters is not None else ((name, n_out),):
                sec.adapter(sub, s, n_in, out, x=x, rank=rank, dropout=lora_dropout)

    sec.kept_sel["x_in"] = s * h  # the checkpointed block's input
    _norm(sec, shape, "layers.norm1", s, x="x_in", trainable=full)
    if shape.fused_qkv:
        linear(
            "layers.attn.qkv",
            "ln1",
            h,
            q + 2 * kv,
            (("layers.attn.qkv.q", q), ("layers.attn.qkv.k", kv), ("layers.attn.qkv.v", kv)),
        )
        sec.op(OpKind.ELEMENTWISE, Phase.BACKWARD, "layers.attn.qkv.split_backward", elems=2 * s * (q + 2 * kv))
    else:
        linear("layers.attn.q", "ln1", h, q)
        linear("layers.attn.k", "ln1", h, kv)
        linear("layers.attn.v", "ln1", h, kv)
    if shape.rotary:
        # rotate_half in eager: neg, cat, two muls, add, per q and per k
        sec.ew("layers.attn.rope_q", 10 * s * q, bwd=10 * s * q, kernels=5)
        sec.ew("layers.attn.rope_k", 10 * s * kv, bwd=10 * s * kv, kernels=5)
    causal = 0.5 if shape.is_causal else 1.0
    att_flops = 4.0 * s * s * q * causal
    kv_att = kv
    if kv < q and shape.repeat_kv:
        # Grouped-query attention as Hugging Face (with an attention mask) and LitGPT run it: k and v
        # expanded to every query head and copied before the SDPA kernel (which then keeps the copies);
        # the backward sums the heads' gradients back into each group.
        sec.ew("layers.attn.repeat_kv", 2 * (s * kv + s * q), bwd=2 * (s * q + s * kv), kernels=2)
        kv_att = q
    if shape.attention == "eager":
        _eager_attention(sec, shape, s, q, kv_att, heads, d)
    else:
        io = s * q + 2 * s * kv_att  # q, k, v as the kernel reads them
        sec.op(
            OpKind.ATTENTION,
            Phase.FORWARD,
            "layers.attn.sdpa",
            flops=att_flops,
            elems=io + s * q + heads * s,
            m=s * heads,
            n=int(s),
            k=d,
            causal=shape.is_causal,
        )
        sec.op(
            OpKind.ATTENTION,
            Phase.BACKWARD,
            "layers.attn.sdpa.backward",
            flops=ATTENTION_BACKWARD_FACTOR * att_flops,
            elems=2 * io + 2 * s * q + 2 * heads * s,
            m=s * heads,
            n=int(s),
            k=d,
            causal=shape.is_causal,
        )
        sec.saved.update({"q": s * q, "k": s * kv_att, "v": s * kv_att, "attn_out": s * q})
        sec.saved_fp32["attn.logsumexp"] = heads * s
    linear("layers.attn.o", "attn_out", q, h)
    if shape.dropout:
        _dropout(sec, "layers.attn.dropout", s * h)
    sec.ew("layers.residual1", 3 * s * h, bwd=3 * s * h)  # backward: the residual stream's gradients accumulate
    _norm(sec, shape, "layers.norm2", s, x="x_mid", trainable=full)
    if shape.is_moe:
        _moe_block(
            sec, shape, linear, full=full, quant=quant, double_quant=double_quant, rank=rank, lora_dropout=lora_dropout
        )
    elif shape.gated_ffn:
        _gated_mlp(sec, linear, "layers.mlp", "ln2", h, f, s, saved="", act="mlp_act")
    else:
        linear("layers.mlp.fc1", "ln2", h, f)
        sec.ew("layers.mlp.gelu", 2 * s * f, bwd=3 * s * f, flops_per_elem=8.0)
        sec.saved["fc1_out"] = s * f
        linear("layers.mlp.fc2", "mlp_act", f, h)
    if shape.dropout:
        _dropout(sec, "layers.mlp.dropout", s * h)
    sec.ew("layers.residual2", 3 * s * h, bwd=3 * s * h)
    return sec


def _gated_mlp(
    sec: _Section, linear: Any, name: str, x: str, h: int, f: int, tokens: float, *, saved: str, act: str
) -> None:
    """A SwiGLU MLP on ``tokens``: gate and up from ``x``, silu(gate) * up, down. The gate's two
    operands and silu's output are kept (times the section's repeat: one MLP per expert)."""
    linear(f"{name}.gate", x, h, f)
    linear(f"{name}.up", x, h, f)
    sec.ew(f"{name}.silu", 2 * tokens * f, bwd=3 * tokens * f)
    sec.ew(f"{name}.mul", 3 * tokens * f, bwd=6 * tokens * f, bwd_kernels=2)
    sec.saved.update({f"{saved}{k}": tokens * f * sec.repeat for k in ("gate_out", "silu_out", "up_out")})
    linear(f"{name}.down", act, f, h)


def _moe_block(
    sec: _Section,
    shape: TransformerShape,
    linear: Any,
    *,
    full: bool,
    quant: bool,
    double_quant: bool,
    rank: int,
    lora_dropout: bool,
) -> None:
    """A mixture-of-experts FFN as Hugging Face's eager MoE blocks (Mixtral, Qwen-MoE, OLMoE) run it:
    a router GEMM, fp32 softmax, top-k and one-hot mask, then a Python loop over the experts (each
    one's ``torch.where`` reads its token count back: a host sync), gathering its tokens, its gated
    MLP on them, the routing weight and an ``index_add_`` into the output. Routing is taken as
    balanced: each expert gets tokens x top-k / experts. In the backward each expert's gather
    scatters into a zeroed tensor of the whole layer's size, which autograd then adds up."""
    s, h, f, n, k = float(shape.seq_len), shape.hidden, shape.ffn, shape.experts, shape.experts_per_token
    lora = not full
    sec.gemm("layers.moe.router", s, h, n, x="ln2", trainable=full)
    # softmax (fp32), topk, sum and divide, to(dtype), one_hot and permute; backward: topk's scatter,
    # the division's and the softmax's backward
    sec.ew("layers.moe.routing", 6 * s * n + 6 * s * k, bwd=4 * s * n + 4 * s * k, kernels=7, bwd_kernels=4, fp32=True)
    sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "layers.moe.experts_hit", elems=s * k * n, kernels=3)  # sum, >0, nonzero
    sec.saved_fp32["moe.probs"] = s * n
    sec.syncs += 1 + n
    t = s * k / n  # each expert's tokens
    sec.repeat = n
    try:
        sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "layers.moe.expert.where", elems=2 * s * k, kernels=2)
        sec.ew("layers.moe.expert.gather", 2 * t * h + t, bwd=0.0)
        # backward of the gather: zeros of the layer's size, then index_put with accumulate
        sec.op(
            OpKind.ELEMENTWISE, Phase.BACKWARD, "layers.moe.expert.gather.backward", elems=s * h + 3 * t * h, kernels=2
        )
        sec.op(OpKind.ELEMENTWISE, Phase.BACKWARD, "layers.moe.expert.grad_accumulate", elems=3 * s * h)

        def expert_linear(name: str, x: str, n_in: int, n_out: int) -> None:
            sec.gemm(name, t, n_in, n_out, x=x, trainable=full, quant=quant, double_quant=double_quant)
            sec.kept_sel[name] = t * n_out * n
            if lora:
                sec.adapter(name, t, n_in, n_out, x=x, rank=rank, dropout=lora_dropout)

        _gated_mlp(
            sec, expert_linear, "layers.moe.expert", "moe.expert_in", h, f, t, saved="moe.expert_", act="moe.expert_act"
        )
        # x routing weight (an index of the weights first), then index_add_ into the output;
        # backward: the output's gradient gathered, times the weight, and the weight's gradient
        sec.ew("layers.moe.expert.weight", 3 * t * h + 2 * t, bwd=5 * t * h, kernels=2, bwd_kernels=2)
        sec.ew("layers.moe.expert.index_add", 3 * t * h, bwd=2 * t * h)
        sec.saved["moe.expert_out"] = t * h * n  # the routing weight's gradient needs the expert's output
        if quant:  # bitsandbytes' matmul keeps its input even for frozen weights
            sec.saved["moe.expert_in"] = t * h * n
            sec.saved["moe.expert_act"] = t * f * n
    finally:
        sec.repeat = 1
    sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "layers.moe.zeros", elems=s * h)
    if shape.shared_ffn:  # Qwen2-MoE: an always-on gated MLP, scaled by sigmoid(x W_g), added on
        _gated_mlp(
            sec, linear, "layers.moe.shared", "ln2", h, shape.shared_ffn, s, saved="moe.shared_", act="moe.shared_act"
        )
        sec.gemm("layers.moe.shared.scale", s, h, 1, x="ln2", trainable=full)
        sec.ew("layers.moe.shared.sigmoid_mul_add", 7 * s * h, bwd=8 * s * h, kernels=3, bwd_kernels=3)
        sec.saved["moe.shared_out"] = s * h


def _patch_embedding(shape: TransformerShape, mode: str) -> _Section:
    """ViT: the patch convolution (an implicit GEMM over the patches), class token, positions."""
    sec = _Section()
    s, h, c, p = float(shape.seq_len), shape.hidden, shape.channels, shape.patch
    patches, k = s - 1, c * p * p
    full = mode == "full"
    pixels = patches * k
    sec.op(
        OpKind.CONV,
        Phase.FORWARD,
        "patch_embed",
        flops=2 * patches * h * k,
        elems=pixels + patches * h,
        fixed=h * k + h,
        m=patches,
        n=h,
        k=k,
    )
    if full:  # the image needs no gradient: the weight's only
        sec.op(
            OpKind.CONV,
            Phase.BACKWARD,
            "patch_embed.dW",
            flops=2 * patches * h * k,
            elems=pixels + patches * h,
            fixed=h * k + h,
            m=patches,
            n=h,
            k=k,
        )
        sec.saved["image"] = pixels
    sec.ew("embed.cat_class_token", 2 * s * h, bwd=s * h)
    sec.ew(
        "embed.add_positions", 3 * s * h, bwd=s * h if full else 0.0, fixed=s * h
    )  # backward: the positions' gradient
    if shape.dropout:
        _dropout(sec, "embed.dropout", s * h)
    return sec


def _embedding(shape: TransformerShape, mode: str) -> _Section:
    if shape.patch:
        return _patch_embedding(shape, mode)
    sec = _Section()
    s, h = float(shape.seq_len), shape.hidden
    full = mode == "full"
    sec.op(OpKind.EMBEDDING, Phase.FORWARD, "embed_tokens", elems=2 * s * h + s)
    sec.saved_bytes["input_ids"] = 8 * s
    if full:
        # embedding_dense_backward: zero the table's gradient, scatter-add the tokens' rows
        sec.op(
            OpKind.EMBEDDING, Phase.BACKWARD, "embed_tokens.backward", elems=2 * s * h + s, fixed=2.0 * shape.vocab * h
        )
    if not shape.rotary:  # learned positions (GPT-2, BERT): gather once, add to every sample
        sec.op(OpKind.EMBEDDING, Phase.FORWARD, "embed_positions", fixed=2 * s * h)
        sec.ew("embed.add_positions", 3 * s * h, bwd=0.0)
        if full:
            sec.op(OpKind.EMBEDDING, Phase.BACKWARD, "embed_positions.backward", elems=s * h, fixed=s * h)
    if not shape.lm_head and not shape.is_causal:  # BERT: token types, then LayerNorm
        sec.op(OpKind.EMBEDDING, Phase.FORWARD, "embed_token_types", elems=2 * s * h + s)
        sec.ew("embed.add_token_types", 3 * s * h, bwd=0.0)
        _norm(sec, shape, "embed.norm", s, x="emb_sum", trainable=full)
    if shape.dropout:
        _dropout(sec, "embed.dropout", s * h)
    return sec


def _head(shape: TransformerShape, mode: str) -> _Section:
    sec = _Section()
    s, h, v = float(shape.seq_len), shape.hidden, shape.vocab
    full = mode == "full"
    if shape.patch:  # ViT: final norm over the tokens, classifier on the class token
        c = shape.vocab
        _norm(sec, shape, "final_norm", s, x="x_out", trainable=full)
        sec.gemm("head", 1.0, h, c, x="cls_normed", trainable=full, bias=True)
        sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "loss.cross_entropy", elems=3 * c, fp32=True, kernels=2)
        sec.op(OpKind.ELEMENTWISE, Phase.BACKWARD, "loss.cross_entropy.backward", elems=4 * c, fp32=True, kernels=2)
        sec.saved_fp32["loss.log_probs"] = c
        sec.saved_bytes["loss.labels"] = 8
    elif shape.lm_head:
        if shape.norm == "rmsnorm" or shape.is_causal:  # pre-norm decoders end with a norm
            _norm(sec, shape, "final_norm", s, x="x_out", trainable=full)
        sec.gemm("lm_head", s, h, v, x="final_normed", trainable=full)
        # logits.float(), log_softmax, nll_loss (fp32 whatever the training precision);
        # log_softmax keeps its fp32 output for the backward
        sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "loss.logits_to_fp32", elems=1.5 * s * v, fp32=True)
        sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "loss.log_softmax", elems=2 * s * v, flops=3 * s * v, fp32=True)
        sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "loss.nll", elems=2 * s, fp32=True)
        sec.op(OpKind.ELEMENTWISE, Phase.BACKWARD, "loss.nll.backward", elems=s * v, fp32=True)
        sec.op(
            OpKind.ELEMENTWISE, Phase.BACKWARD, "loss.log_softmax.backward", elems=3 * s * v, flops=3 * s * v, fp32=True
        )
        sec.op(OpKind.ELEMENTWISE, Phase.BACKWARD, "loss.logits_grad_to_dtype", elems=1.5 * s * v, fp32=True)
        sec.saved_fp32["loss.log_probs"] = s * v
        sec.saved_bytes["loss.labels"] = 8 * s  # nll_loss keeps its int64 targets
        if full and shape.tied_embeddings:
            sec.op(OpKind.ELEMENTWISE, Phase.BACKWARD, "tied_embedding.grad_accumulate", fixed=3.0 * v * h)
    else:
        o = shape.head_outputs
        x = "x_out"
        if shape.is_causal:  # a decoder's classifier (LlamaForSequenceClassification): after its final norm
            _norm(sec, shape, "final_norm", s, x="x_out", trainable=full)
            x = "final_normed"
        sec.gemm("task_head", s, h, o, x=x, trainable=full, bias=True)
        sec.op(OpKind.ELEMENTWISE, Phase.FORWARD, "loss.cross_entropy", elems=3 * s * o, fp32=True, kernels=2)
        sec.op(OpKind.ELEMENTWISE, Phase.BACKWARD, "loss.cross_entropy.backward", elems=4 * s * o, fp32=True, kernels=2)
        sec.saved_fp32["loss.log_probs"] = s * o
    return sec


def _first_layer_input_grads(bwd: list[Op]) -> dict[tuple[str, OpKind], int]:
    """Backward ops of a layer that only compute the gradient of the layer's input, with their
    launches in that layer (a multi-kernel op drops all of them)."""
    qkv = ("layers.attn.q", "layers.attn.k", "layers.attn.v", "layers.attn.qkv")
    names = (
        {f"{m}.dX" for m in qkv} | {f"{m}.lora_A.dX" for m in qkv} | {f"layers.attn.qkv.{x}.lora_A.dX" for x in "qkv"}
    )
    # the adapters' dropout backward only leads to the layer's input too
    names |= {f"{m}.lora_dropout.backward" for m in qkv} | {f"layers.attn.qkv.{x}.lora_dropout.backward" for x in "qkv"}
    names |= (
        {f"{m}.dequant" for m in qkv}
        | {f"{m}.dequant.absmax" for m in qkv}
        | {
            "layers.attn.qkv.split_backward",
            "layers.norm1.backward",
            "layers.norm1.fp32.backward",
            "layers.norm1.scale.backward",
        }
    )
    return {(o.name, o.kind): o.count for o in bwd if o.name in names}


def _base_linear(name: str) -> str:
    """The linear layer a dequantisation op belongs to (its own name otherwise)."""
    return name.removesuffix(".absmax").removesuffix(".dequant")


def _times(ops: list[Op], n: int, phase: Phase | None = None) -> list[Op]:
    return [replace(o, count=o.count * n, phase=phase or o.phase) for o in ops]


def _family(shape: TransformerShape) -> str:
    if shape.patch:
        return f"vision transformer ({shape.patch}x{shape.patch} patches, {shape.vocab} classes)"
    if shape.is_moe:
        return f"mixture-of-experts decoder ({shape.experts} experts, {shape.experts_per_token} per token)"
    if shape.gated_ffn and shape.rotary:
        return (
            "Llama-style decoder (gated FFN, RMSNorm, rotary, GQA)"
            if shape.kv_dim != shape.hidden
            else "Llama-style decoder (gated FFN, RMSNorm, rotary)"
        )
    if not shape.is_causal:
        return "BERT-style encoder"
    return "GPT-style decoder" + (" (rotary, NeoX-like)" if shape.rotary else "")


def transformer_trace(
    shape: TransformerShape,
    *,
    mode: str = "full",
    lora_rank: int = 16,
    checkpointing: bool | str = False,
    lora_dropout: bool = True,
    double_quant: bool = True,
) -> StepTrace:
    """The analytic trace of one training step of a transformer (per sequence of ``seq_len``).
    ``checkpointing``: False/"none", True/"full" (every layer's forward again in the backward) or
    "selective" (the layers' attention core, elementwise ops and adapters again; their base
    linear layers' outputs are kept). ``lora_dropout``: PEFT-style adapters with a dropout on each
    adapted linear's input (the memory model's default, ``MemoryOptions.lora_dropout``).
    ``double_quant``: QLoRA's NF4 with its absmax values quantised too (bitsandbytes' default,
    ``MemoryOptions.quant`` "nf4-dq"); False: plain NF4 ("nf4")."""
    if mode not in MODES:
        raise UsageError(f"the mode must be one of {', '.join(MODES)}, not {mode!r}")
    try:
        recompute = checkpointing_mode(checkpointing)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    checkpointing = recompute != "none"
    L, s = shape.layers, float(shape.seq_len)  # noqa: N806 - conventional symbols (tensor dims, batch, layers, op kinds) as in the formulas
    emb, layer, head = (
        _embedding(shape, mode),
        _layer(shape, mode, lora_rank, lora_dropout, double_quant),
        _head(shape, mode),
    )
    ops = emb.fwd + _times(layer.fwd, L) + head.fwd
    layer_bwd = _times(list(reversed(layer.bwd)), L)
    if mode != "full" and not checkpointing:
        # Frozen embeddings: the first layer's input needs no gradient, so autograd skips the
        # input gradients that only lead there (its q/k/v dX, their dequantisation, norm1's
        # backward). Checkpointing frameworks turn input gradients on (enable_input_require_grads).
        first = _first_layer_input_grads(layer.bwd)  # (name, kind) -> the op's launches in one layer
        layer_bwd = [
            replace(o, count=o.count - first[(o.name, o.kind)]) if (o.name, o.kind) in first else o for o in layer_bwd
        ]
        layer_bwd = [o for o in layer_bwd if o.count > 0]
    ops += list(reversed(head.bwd)) + layer_bwd + list(reversed(emb.bwd))
    if recompute == "full":  # every layer's forward once more, in the backward (Hugging Face / LitGPT per-block)
        ops += _times(layer.fwd, L, Phase.RECOMPUTE)
    elif recompute == "selective":  # all but the base linear layers (and their dequantisation): outputs kept
        again = [o for o in layer.fwd if _base_linear(o.name) not in layer.kept_sel]
        ops += _times(again, L, Phase.RECOMPUTE)

    def total(key: str, layers: float) -> float:
        result: float = sum(
            getattr(sec, key)[t] * (layers if sec is layer else 1)
            for sec in (emb, layer, head)
            for t in getattr(sec, key)
        )
        return result

    # The memory model multiplies saved_elems_* by the activation element size; fp32 tensors and
    # byte-sized masks are reported apart (saved_fp32_elems_per_sample, saved_bytes_per_sample).
    saved16 = total("saved", L)
    layer_saved = sum(layer.saved.values())
    block_input = s * shape.hidden
    # Checkpointing keeps each block's input; during one block's backward its forward's saved set
    # exists once more (the block input is part of it).
    saved16_ckpt = (
        sum(emb.saved.values())
        + sum(head.saved.values())
        + L * block_input
        + layer_saved
        - layer.saved.get("x_in", 0.0)
    )
    # Selective: each layer keeps its input and linear outputs; the layer being differentiated
    # rebuilds its saved set (counted whole, as for full checkpointing).
    saved16_sel = saved16_ckpt - L * block_input + L * sum(layer.kept_sel.values())
    fp32_ckpt = sum(emb.saved_fp32.values()) + sum(head.saved_fp32.values()) + sum(layer.saved_fp32.values())
    bytes_ckpt = sum(emb.saved_bytes.values()) + sum(head.saved_bytes.values()) + sum(layer.saved_bytes.values())
    params = shape.params()
    trainable = params if mode == "full" else lora_params(shape, lora_rank)
    what = {
        "full": "full training (every weight trainable)",
        "lora": f"LoRA rank {lora_rank} on {LORA_TARGETS}; base weights frozen (no weight-gradient GEMMs)",
        "qlora": f"QLoRA: LoRA rank {lora_rank} on {LORA_TARGETS}, 4-bit base weights (NF4"
        f"{' with double quantisation' if double_quant else ''}) dequantised in the forward, the backward and "
        "the recompute",
    }[mode]
    if shape.is_moe:
        what += (
            f"; mixture of experts: {shape.experts_per_token} of {shape.experts} experts per token, routing taken as "
            "balanced, the experts run one after another as Hugging Face's eager MoE block does (a host sync each)"
            + ("; adapters on every expert's matrices, the router frozen" if mode != "full" else "")
        )
    if shape.patch:
        input_bytes = 4.0 * shape.channels * shape.patch**2 * (s - 1) + 8.0  # fp32 image + label
    else:
        input_bytes = (16.0 if shape.lm_head else 24.0) * s + (0 if shape.lm_head else 16.0)
    return StepTrace(
        ops=tuple(ops),
        params=params,
        trainable_params=trainable,
        input_bytes_per_sample=input_bytes,
        saved_elems_per_sample=saved16,
        saved_elems_per_sample_ckpt=saved16_ckpt,
        checkpointing=checkpointing,
        saved_fp32_elems_per_sample=total("saved_fp32", L),
        saved_fp32_elems_per_sample_ckpt=fp32_ckpt,
        saved_bytes_per_sample=total("saved_bytes", L),
        saved_bytes_per_sample_ckpt=bytes_ckpt,
        saved_elems_per_sample_sel=saved16_sel,
        saved_fp32_elems_per_sample_sel=fp32_ckpt,
        saved_bytes_per_sample_sel=bytes_ckpt,
        syncs_per_step=L * layer.syncs * (2 if checkpointing else 1),  # the recompute runs the expert loop again
        logits_elems_per_sample=(
            shape.vocab if shape.patch else s * shape.vocab if shape.lm_head else s * shape.head_outputs
        ),
        source=(
            f"analytic transformer trace (gpuselect/workloads/traces.py): {_family(shape)}, {L} layers, hidden "
            f"{shape.hidden}, {shape.heads} heads ({shape.kv_heads or shape.heads} KV), FFN {shape.ffn}, vocabulary "
            f"{shape.vocab}, {shape.seq_len} tokens per sample; "
            + (
                "eager attention (score matrix materialised: batched GEMMs, scale, mask, softmax"
                + (", dropout" if shape.dropout else "")
                + "); "
                if shape.attention == "eager"
                else f"fused attention (no score matrix; {'causal FLOPs counted half; ' if shape.is_causal else ''}"
                f"backward {ATTENTION_BACKWARD_FACTOR}x forward); "
            )
            + what
            + {
                "none": "",
                "full": "; full activation checkpointing (each layer's forward again in the backward)",
                "selective": "; selective activation checkpointing (attention core, elementwise ops and adapters "
                "again in the backward; the linear layers' outputs kept)",
            }[recompute]
        ),
        notes=("autocast weight casts and the optimizer step are not in the trace (precision and optimizer options)",),
    )


# --------------------------------------------------------------------------------------------
# Traces stored as JSON (meta-device tracer output, package data)
# --------------------------------------------------------------------------------------------


def trace_to_dict(t: StepTrace) -> dict[str, Any]:
    d: dict[str, Any] = {
        k: getattr(t, k)
        for k in StepTrace.__dataclass_fields__
        if k != "ops"
        and not (k.endswith("_sel") and not getattr(t, k))  # selective: transformers only
        and not (k == "syncs_per_step" and not t.syncs_per_step)  # MoE only: shipped traces read the same
    }
    d["notes"] = list(t.notes)
    d["ops"] = [
        {
            k: (getattr(o, k).value if k in ("kind", "phase") else getattr(o, k))
            for k in Op.__dataclass_fields__
            if (k != "causal" or o.causal)  # written only where set: traces shipped before the field read the same
            and not (k == "host_dispatch" and o.host_dispatch)  # written only where False (cuDNN's RNN kernels)
        }
        for o in t.ops
    ]
    return d


def trace_from_dict(d: dict[str, Any]) -> StepTrace:
    try:
        ops = tuple(Op(**{**o, "kind": OpKind(o["kind"]), "phase": Phase(o["phase"])}) for o in d["ops"])
        rest = {k: v for k, v in d.items() if k != "ops" and k in StepTrace.__dataclass_fields__}
        rest["notes"] = tuple(rest.get("notes", ()))
        return StepTrace(ops=ops, **rest)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"a stored step trace is malformed: {exc}") from exc


@functools.cache
def shipped_trace(workload_id: str, checkpointing: bool = False) -> StepTrace | None:
    """The meta-device trace shipped for a preset (plain or checkpointed), or None."""
    try:
        text = (
            resources.files("gpuselect.estimate")
            .joinpath(f"{TRACE_DIR}/{workload_id}.json")
            .read_text(encoding="utf-8")
        )
    except (FileNotFoundError, OSError):
        return None
    doc = json.loads(text)
    return trace_from_dict(doc["ckpt" if checkpointing else "plain"])


def with_checkpointing(t: StepTrace, layers: int) -> StepTrace:  # noqa: ARG001 - kept for callers; the trace carries the layer count
    """A measured (non-checkpointed) trace under full activation checkpointing: the forward runs
    once more, and ``saved_elems_per_sample_ckpt`` (the tracer's estimate) is what stays."""
    if t.checkpointing:
        return t
    rec = tuple(replace(o, phase=Phase.RECOMPUTE) for o in t.ops if o.phase is Phase.FORWARD)
    return replace(t, ops=t.ops + rec, checkpointing=True)


# --------------------------------------------------------------------------------------------
# Synthetic trace (--params N --flops-per-sample F, and presets without a model)
# --------------------------------------------------------------------------------------------


def synthetic_trace(w: Workload, *, checkpointing: bool) -> StepTrace:
    """A GEMM-dominated approximation from the parameter count and forward FLOPs alone: ``layers``
    square-ish GEMMs holding the dense parameters, run on m = F / (2 N) rows per sample; where
    F < 2 N the surplus parameters are an embedding table (looked up, not multiplied); plus an
    elementwise op per layer carrying the activation traffic."""
    L = max(1, w.layers)  # noqa: N806 - conventional symbols (tensor dims, batch, layers, op kinds) as in the formulas
    n_params, flops = float(w.params), float(w.forward_flops_per_sample)
    m = flops / (2.0 * n_params)
    dense = n_params
    if m < 1.0:
        m, dense = 1.0, flops / 2.0
    width = max(1, round(math.sqrt(dense / L)))
    width_k = max(1, round(dense / L / width))
    act_elems = w.activation_bytes_per_sample / 2.0  # 16-bit figure of the workload
    ew_elems = act_elems / L
    trainable = w.trainable_params < w.params
    sec = _Section()
    sec.gemm("synthetic.gemm", m, width_k, width, x="x", trainable=not trainable)
    sec.ew("synthetic.elementwise", 2 * ew_elems, bwd=3 * ew_elems)
    ops = _times(sec.fwd, L)
    emb_params = n_params - dense
    if emb_params > 0:
        ops.append(
            Op(
                OpKind.EMBEDDING,
                Phase.FORWARD,
                "synthetic.embedding",
                elems_per_sample=2 * max(1.0, flops / 2 / max(1.0, dense)),
            )
        )
    ops += _times(list(reversed(sec.bwd)), L)
    if emb_params > 0 and not trainable:
        ops.append(
            Op(
                OpKind.EMBEDDING,
                Phase.BACKWARD,
                "synthetic.embedding.backward",
                elems_per_sample=4.0,
                elems_fixed=emb_params,
            )
        )
    if checkpointing:
        ops += _times(sec.fwd, L, Phase.RECOMPUTE)
    in_bytes = 4.0 * math.prod(w.input_shape) if w.input_shape else 4.0 * width_k
    return StepTrace(
        ops=tuple(ops),
        params=w.params,
        trainable_params=w.trainable_params,
        input_bytes_per_sample=in_bytes + 8.0,
        saved_elems_per_sample=act_elems,
        saved_elems_per_sample_ckpt=min(act_elems, act_elems / L + L * m * width),
        checkpointing=checkpointing,
        source=(
            f"APPROXIMATION: synthetic trace from {w.params:g} parameters and {flops:g} forward FLOPs per sample "
            f"({L} GEMMs of {m:g} x {width} x {width_k} per sample plus elementwise traffic from the workload's "
            f"activation figure); no model was traced. Workload figures: {w.source}"
        ),
    )


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def with_mode(w: Workload, mode: Mode | str, lora_rank: int | None = None) -> Workload:
    """The same workload trained in ``mode`` (full, lora, qlora) with adapters of ``lora_rank``."""
    mode = parse(Mode, mode, "--mode")
    rank = w.lora_rank if lora_rank is None else lora_rank
    if not 1 <= rank <= 65_536:
        raise UsageError(f"--lora-rank must be a whole number from 1 to 65536, not {rank}")
    if w.shape is None:
        if mode == "full" and w.mode == "full":
            return w
        raise UsageError(f"--mode {mode} needs a transformer (a transformer preset or --config); {w.id} is not one")
    shape = w.shape
    if mode != "full":
        # Adapters of rank r on an (i x o) matrix hold r x (i + o) weights: past the rank where the
        # adapted matrices' own weights are reached (a rank up to the hidden size was taken: rank
        # 2,048 on Llama 3.2 1B trained 1,443 M adapter weights, more than the 1,236 M model)
        mats = adapted_matrices(shape)
        most = sum(i * o for _, i, o in mats) // sum(i + o for _, i, o in mats)
        if rank > most:
            raise UsageError(
                f"--lora-rank {rank} is too large for this model: its adapters would hold more weights than the "
                f"layers they adapt (at most rank {most:,})"
            )
    if mode == w.mode and rank == w.lora_rank:
        return w
    m = re.fullmatch(r"(.+)-(full|lora|qlora)", w.id)
    if m and rank == 16:  # the preset of that mode (llama-8b-full -> llama-8b-lora)
        from gpuselect.workloads.presets import PRESETS

        sibling = PRESETS.get(f"{m.group(1)}-{mode}")
        if sibling is not None and sibling.shape == shape:
            return sibling
    trainable = shape.params() if mode == "full" else lora_params(shape, rank)
    label = {"full": "full", "lora": f"LoRA rank {rank}", "qlora": f"QLoRA rank {rank}"}[mode]
    base = re.sub(r" \[.*\]$", "", w.name)
    base = re.sub(r" (full|LoRA|QLoRA) fine-tuning$", "", base)
    return replace(
        w,
        mode=mode,
        lora_rank=rank,
        trainable_params=trainable,
        name=f"{base} [{label} training]",
        id=w.id if mode == "full" else f"{w.id}+{mode}-r{rank}",
    )


def selective_kept_elems_per_token(shape: TransformerShape, mode: str = "full") -> float:
    """Elements per token one layer keeps under selective checkpointing: its input and the outputs
    of its (base) linear layers (the same for every rank: the adapters are recomputed)."""
    return sum(_layer(shape, mode, 1).kept_sel.values()) / shape.seq_len


def kept_between_passes(
    shape: TransformerShape,
    *,
    mode: str = "full",
    lora_rank: int = 16,
    checkpointing: bool | str = False,
    elem: int = 2,
) -> float:
    """Bytes per sample the forward leaves for the backward, before any layer is rebuilt: the
    saved tensors outside the layers (embedding, final norm, head, loss) plus per layer its saved
    set (no checkpointing), its input and linear outputs (selective) or its input (full).
    Training-precision elements at ``elem`` bytes, fp32 ones at 4, byte-sized ones at 1
    (benchmarks/memory_cpu_activations.py measures it)."""
    mode_c = checkpointing_mode(checkpointing)
    emb, layer, head = _embedding(shape, mode), _layer(shape, mode, lora_rank), _head(shape, mode)

    def size(sec: _Section) -> float:
        return sum(sec.saved.values()) * elem + sum(sec.saved_fp32.values()) * 4 + sum(sec.saved_bytes.values())

    per_layer = {
        "none": size(layer),
        "selective": sum(layer.kept_sel.values()) * elem,
        "full": layer.kept_sel["x_in"] * elem,
    }[mode_c]
    return size(emb) + size(head) + shape.layers * per_layer


@functools.lru_cache(maxsize=1024)
def trace_for(w: Workload, *, checkpointing: bool | str) -> StepTrace:
    """The operator trace of one training step of ``w`` (see the module docstring for the order
    of sources). Cached per (workload, checkpointing). ``checkpointing``: False/"none",
    True/"full", or "selective" — offered for transformers (a shape); other workloads have no
    linear-output/elementwise split in their traces and take full checkpointing instead."""
    try:
        mode = checkpointing_mode(checkpointing)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if mode == "selective" and w.shape is not None and w.trace is None:
        return transformer_trace(w.shape, mode=w.mode, lora_rank=w.lora_rank, checkpointing="selective")
    checkpointing = mode != "none"
    if w.trace is not None:
        if checkpointing:
            return w.trace_ckpt if w.trace_ckpt is not None else with_checkpointing(w.trace, w.layers)
        return w.trace
    if w.shape is not None:
        return transformer_trace(w.shape, mode=w.mode, lora_rank=w.lora_rank, checkpointing=checkpointing)
    shipped = shipped_trace(w.id, checkpointing)
    if shipped is not None and w.mode == "full":
        return shipped
    return synthetic_trace(w, checkpointing=checkpointing)
