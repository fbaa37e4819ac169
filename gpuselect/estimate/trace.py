"""The operator trace of one training step: the contract between the workload side (which
builds traces) and the step-time and memory models (which read them).

A trace lists the step's operators with their FLOPs and memory traffic *per sample* (what
scales with the batch) and *per step* (what does not: weights read once a step), so one trace
serves every batch size. Identical operators (the same linear in each of 32 layers) are folded
into one ``Op`` with ``count``. Traffic is counted in *elements*, not bytes, so one trace serves
every precision: the step-time model multiplies by the element size of the precision it runs.

Conventions (kept by every builder; the readers rely on them):
- GEMM: C(m x n) = A(m x k) B(k x n), FLOPs = 2 m n k; ``m_per_sample`` rows per sample (tokens,
  output pixels), so at batch b the kernel is (b * m_per_sample) x n x k. Batched matmuls whose
  batch dimension scales with the batch (attention without fusion) put it into ``m_per_sample``.
  A weight gradient dW = X^T dY is stored as (tokens x out x in), the forward's shape: the same
  FLOPs, the reduction running over the batch's tokens.
- CONV: the implicit GEMM of a convolution: m = output pixels per sample, n = output channels,
  k = input channels x filter area.
- ATTENTION: a fused SDPA / FlashAttention kernel (no score matrix in memory). ``m_per_sample`` =
  query tokens x heads per sample, ``n`` = key tokens, ``k`` = head dimension; ``causal``: FLOPs
  counted for the lower triangle only (the kernel still computes the diagonal blocks in full).
- ELEMENTWISE, EMBEDDING, DEQUANT: memory-bound kernels; FLOPs may be 0.
- DEQUANT: ``elems_fixed`` counts the weights dequantised, whatever the training precision
  (bitsandbytes' NF4 kernel reads the 4-bit codes and one fp32 absmax per block of 64, and writes
  the 16-bit weight the GEMM then reads again: ``DEQUANT_BYTES``); the step model charges each
  weight the fitted ``roofline.dequant_bytes`` instead.
- ``count`` > 1 on an op that is not per layer means several small kernels of eager code (an
  RMSNorm is ~5 launches); its FLOPs and elements are per launch.
- ``host_dispatch`` False: kernels a library launches by itself inside one dispatched call (cuDNN's
  RNN: one call per layer and pass, then a GEMM and a pointwise kernel per time step); the host's
  eager per-op cost counts ``dispatches_per_step()``, the device every launch.
- The optimizer's update and communication are *not* in the trace: the step-time model adds
  them from ``trainable_params`` and the options (optimizer, sharding, GPU count).
- ``saved_elems_per_sample``: what autograd keeps between forward and backward without
  checkpointing; ``saved_elems_per_sample_ckpt`` with full activation checkpointing (block inputs
  plus the largest block's working set). The memory model multiplies by the element size.
  Tensors that stay fp32 whatever the precision (the loss's log-probabilities over the
  vocabulary, norm statistics, RMSNorm's fp32 copy, attention's logsumexp) are counted apart in
  ``saved_fp32_elems_per_sample[_ckpt]`` (4 bytes each), and byte-sized ones (dropout masks,
  int64 token ids) in ``saved_bytes_per_sample[_ckpt]``; neither is in ``saved_elems_*``.
- ``saved_*_sel``: the same under *selective* activation checkpointing (transformers only; 0 where
  not offered): each block keeps its input and the outputs of its linear layers, and recomputes
  the attention core and the elementwise ops (norms, rotary, activation functions, dropout, the
  adapters' low-rank products) in the backward; plus one block's full saved set while it runs.
- ``logits_elems_per_sample``: vocabulary x tokens of the output layer (0 where there is none),
  for the memory model's logits/loss buffers (the log-probabilities are also in saved_fp32).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gpuselect.types import Checkpointing, values

#: Activation checkpointing: none; selective (keep the linear layers' outputs, recompute the
#: attention core and the elementwise ops; transformers); full (keep each block's input only).
CHECKPOINTING_MODES: tuple[str, ...] = tuple(values(Checkpointing))  # none, selective, full


def checkpointing_mode(value: object) -> str:
    """``none``, ``selective`` or ``full`` from a mode name or a flag (False/None: none, True: full)."""
    if value is None or value is False or value == "none":
        return "none"
    if value is True or value == "full":
        return "full"
    if value == "selective":
        return "selective"
    raise ValueError(f"checkpointing must be one of {', '.join(CHECKPOINTING_MODES)}, not {value!r}")


#: Bytes one NF4 dequantisation moves per weight: 0.5 (4-bit code) + 4/64 (fp32 absmax per block of
#: 64, bitsandbytes' default) read, 2 (the 16-bit weight) written. The GEMM's read of the 16-bit
#: weight is the GEMM's own traffic. The step model charges the fitted ``dequant.bytes_per_weight``
#: of steptime.json instead (``roofline.dequant_bytes``): bitsandbytes' kernel, timed inside
#: training steps, takes several times what this traffic would at the card's streaming bandwidth.
NF4_BLOCK = 64  # weights per absmax (bitsandbytes' 4-bit default)
DEQUANT_BYTES = 0.5 + 4 / NF4_BLOCK + 2.0


class OpKind(StrEnum):
    GEMM = "gemm"
    CONV = "conv"
    ATTENTION = "attention"
    ELEMENTWISE = "elementwise"  # pointwise, norms, softmax, dropout, reductions, losses
    EMBEDDING = "embedding"  # gathers and scatter-adds
    DEQUANT = "dequant"  # 4-bit -> 16-bit weight dequantisation (QLoRA)


class Phase(StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"
    RECOMPUTE = "recompute"  # the forward again, under activation checkpointing


@dataclass(frozen=True, slots=True)
class Op:
    kind: OpKind
    phase: Phase
    name: str  # where it comes from ("layers.mlp.up_proj", "aten.convolution", ...)
    flops_per_sample: float = 0.0  # per instance
    elems_per_sample: float = 0.0  # elements read + written per instance that scale with the batch
    elems_fixed: float = 0.0  # elements read + written per instance once a step (weights)
    m_per_sample: float = 0.0  # GEMM/CONV/ATTENTION shape, see the module docstring
    n: int = 0
    k: int = 0
    count: int = 1  # identical instances per step (layers); each is one kernel launch
    fp32_only: bool = False  # runs in FP32 whatever the training precision (losses, norms' stats)
    flops_fixed: float = 0.0  # per instance, once a step whatever the batch (rare: position tables)
    causal: bool = False  # ATTENTION: a causal mask (FLOPs counted for the lower triangle only)
    # False: a kernel a library launches from C++ inside one call the framework dispatched (cuDNN's
    # RNN runs each time step's GEMM and pointwise kernel itself): it costs device time and a
    # launch, but no eager dispatch of its own on the host.
    host_dispatch: bool = True


@dataclass(frozen=True)
class StepTrace:
    """One training step of a workload, per sample and per step."""

    ops: tuple[Op, ...]
    params: int
    trainable_params: int
    input_bytes_per_sample: float  # what the host copies to the device per sample (inputs + labels)
    saved_elems_per_sample: float
    saved_elems_per_sample_ckpt: float
    checkpointing: bool = False  # whether RECOMPUTE ops are included
    saved_fp32_elems_per_sample: float = 0.0  # kept in fp32 whatever the precision (see the docstring)
    saved_fp32_elems_per_sample_ckpt: float = 0.0
    saved_bytes_per_sample: float = 0.0  # dropout masks (1 byte), token ids (8 bytes)
    saved_bytes_per_sample_ckpt: float = 0.0
    logits_elems_per_sample: float = 0.0
    saved_elems_per_sample_sel: float = 0.0  # under selective checkpointing (see the docstring)
    saved_fp32_elems_per_sample_sel: float = 0.0
    saved_bytes_per_sample_sel: float = 0.0
    source: str = ""  # how it was built (meta-device trace of ..., analytic from config ...)
    notes: tuple[str, ...] = field(default_factory=tuple)
    # Times per step the host waits for the device to drain (an MoE expert loop's torch.where): after
    # each, the device idles while the host dispatches the next kernel.
    syncs_per_step: int = 0

    def flops_per_sample(self) -> float:
        return sum(op.flops_per_sample * op.count for op in self.ops)

    def launches_per_step(self) -> int:
        return sum(op.count for op in self.ops)

    def dispatches_per_step(self) -> int:
        """Ops the framework dispatches from Python (the host's per-op cost applies to these);
        kernels a library launches inside one of them (``host_dispatch`` False) are not counted."""
        return sum(op.count for op in self.ops if op.host_dispatch)
