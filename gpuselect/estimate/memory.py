"""Peak GPU memory of one training step, per GPU, and what fits.

The peak is the sum of what lives through the step plus what the backward pass keeps
(docs/memory.md explains each term and where its constants come from):

- model state per parameter (as in the ZeRO paper, Rajbhandari et al. 2020, section 3.1): weights
  in their storage dtype (fp32, 16-bit, int8, NF4 with its quantisation constants), gradients of
  what trains, optimizer state (SGD none, momentum one value, Adam two; 8-bit variants one byte
  each) and, in mixed precision, the fp32 master copy of what trains (counted with the optimizer,
  as ZeRO does). Mixed precision is torch.autocast's: fp32 parameters (the master copy) with fp32
  gradients, and 16-bit copies of the weights that the backward keeps (2 + 4 + 4 + 8 = 18 bytes
  per parameter with AdamW; ZeRO's 16 has 16-bit gradients). Pure 16-bit training
  (``bf16-true``) keeps neither master weights nor fp32 states: 8 bytes with AdamW;
- activations: what autograd keeps between forward and backward (fused attention keeps no score
  matrix), times the batch; with full checkpointing only the block inputs plus one block; with
  selective checkpointing (transformers) the block inputs and linear layers' outputs plus one block;
- logits and loss buffers of language models: vocabulary x tokens, with the fp32 log-probabilities
  the loss keeps and the logits' gradient when backward starts;
- overhead: the CUDA context and libraries' workspaces, what the driver holds of the card, plus the
  caching allocator's slack over what is allocated (nvidia-smi shows the reserved memory, not the
  allocated). A workload fits a card when its peak is at most the card's size.

Sharding divides model state by the GPU count (ZeRO-1 the optimizer, ZeRO-2 also the gradients,
FSDP/ZeRO-3 everything, plus the gathered working set of two layers and the root unit); plain DDP
adds its gradient buckets (a copy of the gradients), ZeRO-1/2 DeepSpeed's bounded reduce bucket;
offload moves the optimizer and the fp32 gradients (and with ``params`` the weights) to host memory.

All sizes are bytes; the ``*_gb`` figures are binary gigabytes (2**30 bytes), the unit GPU memory
is sold in ("24 GB" = 24 GiB; nvidia-smi counts MiB).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuselect.errors import GpuselectError, UsageError
from gpuselect.estimate.trace import CHECKPOINTING_MODES, NF4_BLOCK, checkpointing_mode
from gpuselect.types import LOSSES, MIXED_PRECISIONS, Mode, Offload, Optimizer, Sharding
from gpuselect.workloads.model import Workload
from gpuselect.workloads.transformer import TransformerShape

GB = float(2**30)
_FIT_FILE = Path(__file__).resolve().parent / "fit" / "memory_constants.json"

# The choices are gpuselect.types' enums (the one source); these names stay for callers.
OPTIMIZERS: tuple[Optimizer, ...] = tuple(Optimizer)
SHARDINGS: tuple[Sharding, ...] = tuple(Sharding)
OFFLOADS: tuple[Offload, ...] = tuple(Offload)
QUANTS = ("nf4", "nf4-dq", "int8")
CHECKPOINTINGS = CHECKPOINTING_MODES  # none, selective, full


def as_checkpointing(value: object) -> bool | str:
    """The stored form of a checkpointing choice: False (none), True (full) or "selective" — so a
    plain truth test still says whether anything is recomputed. A bad value is a UsageError."""
    try:
        mode = checkpointing_mode(value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return {"none": False, "full": True}.get(mode, mode)


#: Bytes per base weight when the frozen base is quantised (QLoRA). NF4: 4 bits plus one fp32
#: absmax per block of 64 (bitsandbytes' default); with double quantisation the absmax values are
#: themselves 8-bit with an fp32 constant per 256 of them; int8 (LLM.int8): one fp32 scale per row,
#: negligible next to the byte per weight.
QUANT_BYTES = {
    "nf4": 0.5 + 4 / NF4_BLOCK,  # 4-bit codes and an fp32 absmax per block
    "nf4-dq": 0.5 + 1 / NF4_BLOCK + 4 / (NF4_BLOCK * 256),  # the absmax in 8 bits, an fp32 constant per 256 of them
    "int8": 1.0,
}


def _load_constants() -> dict[str, float]:
    """Fitted constants (benchmarks/memory_calibrate.py writes them); stated defaults otherwise."""
    defaults = {"activation_factor": 1.35, "context_gb": 0.5, "allocator_slack": 0.05, "driver_reserved_gb": 0.47}
    try:
        doc = json.loads(_FIT_FILE.read_text(encoding="utf-8"))
        return {k: float(doc.get(k, v)) for k, v in defaults.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return defaults


_C = _load_constants()
#: Eager frameworks keep more than the saved tensors a transformer layer strictly needs (copies
#: for rotary embeddings and reshapes, fp32 upcasts in norms) and the backward of the layer being
#: differentiated holds its gradients next to the saved tensors: one factor on the analytic count,
#: fitted on LitGPT's measured peaks (benchmarks/memory_litgpt.py).
ACTIVATION_FACTOR = _C["activation_factor"]
#: CUDA context, cuBLAS/cuDNN handles and workspaces of a PyTorch process: 0.28 GiB measured on an
#: H100 (NVML used - reserved - the idle card's share; docs/validation/h100-2026-11-24).
CONTEXT_BYTES = _C["context_gb"] * GB
#: The caching allocator reserves more than it hands out (rounding, fragmentation): reserved =
#: allocated x (1 + slack). Measured on an H100: median 1.7 % (Llama steps) to 7.8 % (a small
#: decoder); 5 % is kept, inside that range (docs/validation/h100-2026-11-24).
ALLOCATOR_SLACK = _C["allocator_slack"]
#: What the driver keeps of a card's memory before any process runs: NVML reported 506,724,352
#: bytes used on an idle H100 80GB (docs/validation/h100-2026-11-22/bench-full.json).
DRIVER_RESERVED_BYTES = _C["driver_reserved_gb"] * GB
#: Counted in every peak's overhead, so that a card fits what its size holds: peak <= size.
FIXED_OVERHEAD_BYTES = CONTEXT_BYTES + DRIVER_RESERVED_BYTES


def mixed(precision: str) -> bool:
    """Mixed precision: 16-bit compute over fp32 master weights (fp8 trains that way too)."""
    return precision in MIXED_PRECISIONS


def activation_elem_bytes(precision: str) -> int:
    return 4 if precision in ("fp32", "tf32") else 2


@dataclass(frozen=True)
class MemoryOptions:
    precision: str = "bf16"
    optimizer: str = "adamw"
    checkpointing: bool | str = False  # False/"none", True/"full", "selective" (stored as False/True/"selective")
    sharding: str = "none"  # over ``gpus`` data-parallel ranks
    offload: str = "none"
    gpus: int = 1
    quant: str = "nf4-dq"  # base weights of QLoRA: NF4 with double quantisation (as QLoRA recipes set it)
    lora_targets: str = "all"  # "all" linear layers (the presets' adapters) or "qv" (query and value only)
    lora_dropout: bool = True
    # A language model's loss: "chunked" (the logits' loss taken in pieces, as LitGPT does) or "plain"
    # (one cross-entropy over logits upcast to fp32, as Hugging Face's models compute it).
    loss: str = "chunked"
    host: bool = False  # the CPU's RAM: no CUDA context or driver share (QA 14: a CPU "needed" 0.75 GB of it)

    def __post_init__(self) -> None:
        object.__setattr__(self, "checkpointing", as_checkpointing(self.checkpointing))
        if self.loss not in LOSSES:
            raise UsageError(f"the loss must be one of {', '.join(LOSSES)}, not {self.loss!r}")

    @property
    def recompute(self) -> str:
        """none, selective or full."""
        return checkpointing_mode(self.checkpointing)

    def shards(self) -> int:
        return self.gpus if self.sharding != "none" else 1

    @property
    def split(self) -> str:
        """How the state is split over several GPUs as it runs: parameter offload is FSDP's or
        ZeRO-3's (neither exists unsharded), else the sharding asked for."""
        return "fsdp" if self.offload == "params" else self.sharding


@dataclass(frozen=True)
class MemoryBreakdown:
    """Peak memory of one GPU, by what holds it (bytes)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    overhead: float
    evictable: float = 0.0  # paged optimizer state the driver can move to host memory under pressure
    fixed: float = FIXED_OVERHEAD_BYTES  # of ``overhead``, what does not grow with the batch (0 on a CPU)
    # Of ``gradients``, buffers allocated before the backward (DDP's buckets, DeepSpeed's reduce
    # bucket): held through the loss's backward too, before any gradient exists.
    buffers: float = 0.0

    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.logits + self.overhead

    def as_gb(self) -> dict[str, float]:
        return {
            k: round(getattr(self, k) / GB, 3)
            for k in ("weights", "gradients", "optimizer", "activations", "logits", "overhead")
        }


# --- model state -----------------------------------------------------------------------------------


def _embedding_params(w: Workload, shape: TransformerShape | None) -> int:
    """Parameters outside the linear layers (embeddings, untied head, norms): kept 16-bit by QLoRA."""
    if shape is None:
        return 0
    emb = (shape.vocab + shape.table_rows) * shape.hidden  # with a learned position table
    head = 0 if shape.tied_embeddings or not shape.lm_head else shape.vocab * shape.hidden
    return min(w.params, emb + head + shape.layers * 4 * shape.hidden)


def _trained_params(w: Workload) -> float:
    return float(w.trainable_params if w.mode != "full" else w.params)


def host_state_gb(w: Workload, o: MemoryOptions) -> float:
    """GB of model state the host holds under offload: the optimizer state (and master weights) and
    the gradients, and with ``params`` the weights too (the whole model's, on the node's host; in
    mixed precision the offloaded fp32 parameter is the master copy, so the trained weights' 16-bit
    copy is not held there)."""
    weights, grads, opt, _ = _state_bytes(w, o, shape_of(w))
    if o.offload == "params":
        if mixed(o.precision):
            weights -= _trained_params(w) * 2
        return (weights + grads + opt) / GB
    # ZeRO-Offload accumulates the (fp32) gradients on the host too, where the CPU's update reads them.
    return (opt + grads) / GB if o.offload == "optimizer" else 0.0


def host_state_text(whole_gb: float, gpus: int, per_node: int, *, then: bool = False) -> str:
    """Where ``whole_gb`` of offloaded model state lives: sharded over the ranks, each node's host
    holds its own ranks' shards (the fullest node's), as the step model shares each host's memory
    among its ranks: 16 GPUs of 8 per node put half of Llama 70B's 1,051 GB on each host, not all."""
    verb = "then holds" if then else "holds"
    nodes = -(-max(1, gpus) // max(1, per_node))

    def gb(x: float) -> str:  # two digits under 1 GB: ResNet-50's 0.4 GB read "about 0 GB"
        return f"{x:,.0f}" if x >= 1 else f"{x:.2g}"

    if nodes <= 1:
        return f"the host {verb} about {gb(whole_gb)} GB of {'' if then else 'offloaded '}model state"
    node_gb = whole_gb * min(gpus, per_node) / gpus
    return f"each of the {nodes} nodes' hosts {verb} about {gb(node_gb)} GB of the {gb(whole_gb)} GB of offloaded model state"


def _state_bytes(w: Workload, o: MemoryOptions, shape: TransformerShape | None) -> tuple[float, float, float, float]:
    """(weights, gradients, optimizer incl. master weights, of which evictable) for the whole model."""
    p = o.precision
    true16 = p == "bf16-true"
    e16 = 4 if p in ("fp32", "tf32") else 2  # storage of weights and gradients
    trainable = w.trainable_params if w.mode != "full" else w.params
    frozen = w.params - trainable if w.mode != "full" else 0
    if w.mode == "qlora":
        other = _embedding_params(w, shape)
        base = (frozen - other) * QUANT_BYTES[o.quant] + other * e16
    else:
        base = frozen * e16
    weights = base + trainable * e16
    grads = trainable * (4 if mixed(p) else e16)  # autocast: gradients of the fp32 parameters
    state_e = 2 if true16 else 4  # Adam/momentum values: fp32, or 16-bit in pure 16-bit training
    per = {
        "sgd": 0.0,
        "sgd-momentum": state_e,
        "adam": 2 * state_e,
        "adamw": 2 * state_e,
        "adam8bit": 2.0,
        "paged-adamw8bit": 2.0,
    }[o.optimizer]
    master = 4.0 if mixed(p) else 0.0
    opt = trainable * (per + master)
    evictable = trainable * per if o.optimizer == "paged-adamw8bit" else 0.0
    return weights, grads, opt, evictable


def weight_storage_bytes(w: Workload, precision: str = "bf16", quant: str = "nf4-dq") -> float:
    """The whole model's weights as stored on the device (what FSDP gathers and parameter offload
    copies up): 16-bit (4 bytes in fp32 training); under QLoRA the quantised base (4-bit codes and
    their constants) with the embeddings, head, norms and adapters in 16 bits."""
    return _state_bytes(w, MemoryOptions(precision=precision, quant=quant), shape_of(w))[0]


def dequant_transient_bytes(w: Workload, shape: TransformerShape | None = None) -> float:
    """QLoRA: the 16-bit copy bitsandbytes dequantises one linear's weight into before its GEMM
    (forward, recompute and input-gradient alike), alive while that GEMM runs: the largest
    quantised matrix of a layer, 2 bytes per weight. 0 for other modes."""
    shape = shape or shape_of(w)
    if w.mode != "qlora" or shape is None:
        return 0.0
    from gpuselect.workloads.transformer import adapted_matrices

    return 2.0 * max(i * o for _, i, o in adapted_matrices(shape))


#: DeepSpeed ZeRO's gradient reduce bucket, in elements: ``reduce_bucket_size``, 5e8 by default
#: (deepspeed/runtime/zero/config.py).
ZERO_REDUCE_BUCKET_ELEMS = 5e8


def _largest_trained_param(w: Workload, shape: TransformerShape | None) -> float:
    """Elements of the largest single trained parameter: a fully trained transformer's embedding
    (or untied head) or largest linear; 0 otherwise (adapters are far below a reduce bucket)."""
    if shape is None or w.mode != "full":
        return 0.0
    from gpuselect.workloads.transformer import adapted_matrices

    return float(max([shape.vocab * shape.hidden, *(i * o for _, i, o in adapted_matrices(shape))]))


def zero_bucket_bytes(w: Workload, o: MemoryOptions, shape: TransformerShape | None, *, oversized: bool) -> float:
    """What DeepSpeed ZeRO holds on the GPU to reduce the gradients, besides any gradient store:
    one flat buffer of ``reduce_bucket_size`` elements in the model's 16-bit dtype (fp32 when it
    trains in fp32) that each gradient is copied into as the backward produces it, reduced (and,
    under ZeRO-Offload, copied to the host) when full — contiguous_gradients is on by default, and
    a second buffer comes only with overlap_comm, off by default for stages 1 and 2 (stage 3 keeps
    one too): stage_1_and_2.py ``backward``, ``reduce_independent_p_g_buckets_and_remove_grads``.
    A bounded bucket, not a copy of all the gradients as torch DDP's. DeepSpeed sizes it 5e8
    whatever the model; the integrations most runs go through size it to the model (Transformers'
    "auto": hidden x hidden; Lightning 2e8), so it is capped at the trained parameters here.
    ``oversized``: a parameter larger than the bucket keeps its own gradient until it is reduced
    (``extra_large_param_to_reduce``: a 128k vocabulary's embedding or head)."""
    bucket = min(_trained_params(w), ZERO_REDUCE_BUCKET_ELEMS)
    big = _largest_trained_param(w, shape) if oversized else 0.0
    return (bucket + (big if big > ZERO_REDUCE_BUCKET_ELEMS else 0.0)) * activation_elem_bytes(o.precision)


def _layer_and_edge(
    w: Workload, o: MemoryOptions, shape: TransformerShape | None, weights: float
) -> tuple[float, float]:
    """(one layer's weight bytes, the root unit's: the embedding and an untied head) of ``weights``
    (the root 0 without a transformer shape)."""
    layers = max(1, w.layers)
    if shape is None:
        return weights / layers, 0.0
    e = 4 if o.precision in ("fp32", "tf32") else 2
    other = _embedding_params(w, shape) * e
    # Wrapped block by block (LitGPT's {Block}, Transformers' transformer_layer_cls_to_wrap), the
    # root unit holds the input embedding and, untied, the output projection too: both are gathered
    # through the step (FSDP does not reshard the root after the forward), and both matrices'
    # gradients whole until the root reduce-scatters at the end of the backward.
    root = shape.vocab * shape.hidden * (1 if shape.tied_embeddings or not shape.lm_head else 2)
    return max(0.0, weights - other) / layers, min(other, root * e)


def _unit_bytes(w: Workload, o: MemoryOptions, shape: TransformerShape | None, weights: float) -> float:
    """FSDP gathers one wrapped unit (a layer) at a time and prefetches the next: two layers' weights
    are whole on every GPU while they compute, beside the root unit, gathered through the step."""
    layer, edge = _layer_and_edge(w, o, shape, weights)
    return 2 * layer + edge


def _unit_grad_bytes(w: Workload, o: MemoryOptions, shape: TransformerShape | None, weights: float) -> float:
    """The gradients of the one unit whose backward runs, whole before FSDP reduce-scatters them
    (or, offloaded, copies them to the host): a layer's, or the root unit's where bigger (they stay
    whole until the root reduce-scatters at the end of the backward)."""
    return max(_layer_and_edge(w, o, shape, weights))


# --- activations -----------------------------------------------------------------------------------


def shape_of(w: Workload) -> TransformerShape | None:
    s = getattr(w, "shape", None)
    return s if isinstance(s, TransformerShape) else None


def layer_saved_elems_per_token(shape: TransformerShape, mode: str, o: MemoryOptions, *, norms: int = 2) -> float:
    """Elements autograd keeps per token in one pre-norm decoder layer with fused attention, counted
    from which operand each backward formula needs (PyTorch saves an operand only when the other
    side's gradient needs it: a frozen linear keeps no input; tests/estimate/test_memory.py checks
    the rules on CPU):

    - each norm keeps its input, and (RMSNorm) its normalised output when its weight trains;
    - trainable linears keep their inputs (the attention output is the output projection's input,
      already kept by the kernel); bitsandbytes' 4-bit matmul keeps them too, even when frozen;
    - fused attention keeps q, k, v and its output (plus a log-sum-exp per head and token);
    - the MLP keeps its activation function's input, and for gated MLPs both operands of the gate;
    - residual dropout (GPT-2, BERT) keeps a 1-byte mask after the attention and after the MLP;
    - LoRA adapters keep their (dropped-out) inputs and the dropout mask (1 byte)."""
    h, f, q, kv = shape.hidden, shape.ffn, shape.q_dim, shape.kv_dim
    trains_base = mode == "full"
    keeps_inputs = trains_base or mode == "qlora"
    # LayerNorm's fused kernel keeps its input and two statistics (its weight's gradient comes from
    # them); an eager RMSNorm's ``weight * normed`` also keeps the normed tensor for the weight.
    total: float = norms * (h + (h if trains_base and shape.norm == "rmsnorm" else 0))
    if shape.is_moe:
        return total + _moe_layer_saved(shape, mode, o, keeps_inputs)
    if keeps_inputs:
        total += h + h + f  # qkv input, MLP input, down-projection input
    total += q + 2 * kv + q  # q, k, v, attention output
    total += 3 * f if shape.gated_ffn else f
    if getattr(shape, "dropout", False):
        total += h  # two residual dropout masks of 1 byte (attention-probability dropout runs inside the fused kernel)
    if mode in ("lora", "qlora"):
        if o.lora_targets == "qv":
            inputs: float = h  # one dropout over the attention input feeds the query and value adapters
        else:  # PEFT-style: a dropout per adapted linear (q, k, v, o, the MLP's inputs and its down projection)
            inputs = 3 * h + q + (2 if shape.gated_ffn else 1) * h + f
        total += inputs * (1.5 if o.lora_dropout else (0.0 if keeps_inputs else 1.0))
    return float(total)


def _moe_layer_saved(shape: TransformerShape, mode: str, o: MemoryOptions, keeps_inputs: bool) -> float:
    """A mixture-of-experts layer past its norms, per token (the trace's ``_moe_block``): attention as
    in a dense layer; each of the token's top-k experts keeps its gathered input (where its weights
    train or are 4-bit), both gate operands and its down projection's input, and its output for the
    routing weight's gradient; the router keeps its fp32 probabilities (two 16-bit elements each)."""
    h, f, k, n, g = shape.hidden, shape.ffn, shape.experts_per_token, shape.experts, shape.shared_ffn
    q, kv = shape.q_dim, shape.kv_dim
    total: float = q + 2 * kv + q + 2 * n  # q, k, v, attention output; router probabilities
    if keeps_inputs:
        total += 2 * h + k * (h + f)  # qkv and router input, each routed copy's input and down-projection input
        total += g  # the shared expert's down-projection input
    total += k * (3 * f + h) + (3 * g + h if g else 0)
    if mode in ("lora", "qlora"):
        if o.lora_targets == "qv":
            inputs: float = h
        else:  # a dropout per adapted linear: q, k, v, o, and each expert's gate, up and down
            inputs = 3 * h + q + k * (2 * h + f) + ((2 * h + g) if g else 0)
        total += inputs * (1.5 if o.lora_dropout else (0.0 if keeps_inputs else 1.0))
    return total


def activation_bytes_per_sample(w: Workload, o: MemoryOptions, shape: TransformerShape | None = None) -> float:
    """What the backward pass needs kept per sample (one sequence, one image), checkpointing included.
    Selective checkpointing is a transformer's (its linear layers' outputs are kept); other
    workloads take full checkpointing for it (docs/memory.md)."""
    e = activation_elem_bytes(o.precision)
    shape = shape or shape_of(w)
    if shape is not None:
        tokens = shape.seq_len
        layer = layer_saved_elems_per_token(shape, w.mode, o) * e * ACTIVATION_FACTOR
        if o.recompute in ("full", "selective"):
            # Kept through the step: block inputs (full), or block inputs and linear outputs
            # (selective: the operator trace's count, exact tensors, no eager copies). Transient:
            # one layer rebuilt at a time in the backward. It comes after the loss's backward has
            # freed the logits' gradients, so the step peaks at the larger of the two, not their sum
            # (torch's allocations on CPU: benchmarks/memory_cpu_activations.py, part 3); the logits
            # term counts its own buffers, this one only what the rebuilt layer needs beyond them.
            kept_b, rebuilt_b = _checkpointed_parts(w, o, shape)
            return kept_b + max(0.0, rebuilt_b - logits_bytes_per_sample(w, o, shape))
        return tokens * (shape.layers * layer + 2 * shape.hidden * e)
    traced = _trace_saved_bytes(w, bool(o.checkpointing), e)
    if traced is not None:
        return traced
    per = w.activation_bytes_per_sample * e / 2  # the workload's figure is for 16-bit activations
    if o.checkpointing:  # selective is full here: no linear/elementwise split in the workload's figure
        # Block inputs (~6 % of a block's activations, Korthikanti et al. 2022) and one block at a time.
        per *= 0.06 + 1.0 / max(1, w.layers)
    return per


def _checkpointed_parts(w: Workload, o: MemoryOptions, shape: TransformerShape) -> tuple[float, float]:
    """A checkpointed transformer, per sample: what is kept through the step (block inputs, and
    with selective checkpointing the linear layers' outputs) and the one layer rebuilt at a time."""
    e = activation_elem_bytes(o.precision)
    if o.recompute == "full":
        kept = float(shape.hidden)
    else:
        from gpuselect.workloads.traces import selective_kept_elems_per_token

        kept = selective_kept_elems_per_token(shape, w.mode)
    layer = layer_saved_elems_per_token(shape, w.mode, o) * e * ACTIVATION_FACTOR
    return shape.seq_len * shape.layers * kept * e, shape.seq_len * layer


def _trace_saved_bytes(w: Workload, checkpointing: bool, e: int) -> float | None:
    """Saved bytes per sample from the workload's operator trace, where one is available: 16-bit
    (or fp32) elements at ``e`` bytes, tensors that stay fp32 at 4, byte-sized ones (masks) at 1."""
    try:
        from gpuselect.workloads.traces import trace_for

        t: Any = trace_for(w, checkpointing=checkpointing)
    except (GpuselectError, ImportError, ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError):
        return None  # no trace for this workload: fall back to its stated activation figure
    sfx = "_ckpt" if checkpointing else ""
    elems = float(getattr(t, "saved_elems_per_sample" + sfx, 0.0) or 0.0)
    fp32 = float(getattr(t, "saved_fp32_elems_per_sample" + sfx, 0.0) or 0.0)
    raw = float(getattr(t, "saved_bytes_per_sample" + sfx, 0.0) or 0.0)
    total = elems * e + fp32 * 4 + raw
    return total if total > 0 else None


def plain_loss_bytes_per_sample(w: Workload, o: MemoryOptions, shape: TransformerShape | None = None) -> float:
    """What one cross-entropy over the whole logits holds while its backward runs (``loss`` "plain",
    as Hugging Face's models compute it): the 16-bit logits the model's output keeps, the fp32
    log-probabilities saved after the upcast, the fp32 gradient from the loss and the one it
    produces: vocabulary x tokens x (2 + 4 + 4 + 4) bytes in 16-bit training, (4 + 4 + 4 + 4) in fp32
    (docs/validation/h100-2026-11-24: Llama 3.1 8B LoRA steps on an H100)."""
    shape = shape or shape_of(w)
    if shape is None or not shape.lm_head:
        return 0.0
    return float(shape.vocab) * shape.seq_len * (activation_elem_bytes(o.precision) + 12)


@dataclass(frozen=True)
class _LossPhase:
    """A language model's step peaks in one of two phases, per sample: the loss's backward
    (``loss``: the plain loss's full fp32 buffers, or a chunked loss's logits), before any weight
    gradient is allocated (zero_grad(set_to_none=True), torch's default), or later with the
    gradients and, under checkpointing, one layer rebuilt (``rebuilt``); ``kept`` lives through
    both. Their larger is not linear in the batch. (A chunked loss's logits counted on top of the
    gradients made it need more memory than the plain loss it exists to shrink.)"""

    kept: float
    rebuilt: float
    loss: float


def _loss_phase(w: Workload, o: MemoryOptions, shape: TransformerShape | None) -> _LossPhase | None:
    shape = shape or shape_of(w)
    if shape is None or not shape.lm_head:
        return None
    loss = plain_loss_bytes_per_sample(w, o, shape) if o.loss == "plain" else logits_bytes_per_sample(w, o, shape)
    if o.recompute in ("full", "selective"):
        kept, rebuilt = _checkpointed_parts(w, o, shape)
        return _LossPhase(kept, rebuilt, loss)
    return _LossPhase(activation_bytes_per_sample(w, o, shape), 0.0, loss)


def _phase_parts(ph: _LossPhase, grads: float, batch: int) -> tuple[float, float]:
    """(activations, logits) of the breakdown at ``batch``: the activations are what is kept and the
    rebuilt layer; the logits what the loss's backward holds beyond the gradients and that layer
    (0 when the gradient phase is the larger), so that the parts add up to the peak. ``grads``: the
    gradients the backward allocates (not the buffers held in both phases)."""
    act = batch * (ph.kept + ph.rebuilt)
    peak = max(batch * ph.loss, grads + batch * ph.rebuilt)
    return act, max(0.0, peak - grads - batch * ph.rebuilt)  # max: float rounding when the gradients win


def logits_bytes_per_sample(w: Workload, o: MemoryOptions, shape: TransformerShape | None = None) -> float:
    """A language model's logits (16-bit in mixed precision), the fp32 log-probabilities the loss
    keeps for backward, and the logits' gradient when backward starts: vocabulary x tokens x
    (2 + 4 + 2) bytes in 16-bit training, (4 + 4 + 4) in fp32. For 128k-token vocabularies this
    is often the largest single buffer of a step."""
    shape = shape or shape_of(w)
    if shape is None or not shape.lm_head:
        return 0.0
    e = activation_elem_bytes(o.precision)
    return float(shape.vocab) * shape.seq_len * (e + 4 + e)


# --- the peak ------------------------------------------------------------------------------------


def peak_memory(w: Workload, batch: int, o: MemoryOptions, shape: TransformerShape | None = None) -> MemoryBreakdown:
    """Peak memory of one GPU training ``w`` at a per-GPU ``batch`` with options ``o``."""
    shape = shape or shape_of(w)
    weights, grads, opt, evictable = _state_bytes(w, o, shape)
    n = max(1, o.shards())
    working = buffers = 0.0
    if o.sharding == "none" and o.offload == "none" and o.gpus > 1:
        # torch DDP: with gradient_as_bucket_view=False (its default) the reducer keeps flat bucket
        # buffers as large as all the gradients, in their dtype, beside each parameter's .grad: the
        # gradients twice (autocast: 4 more bytes per trained parameter), the buckets from the start.
        buffers = grads
        grads *= 2
    if o.sharding in ("zero1", "zero2", "fsdp"):
        opt, evictable = opt / n, evictable / n
    if o.sharding in ("zero2", "fsdp"):
        grads /= n
    if o.sharding in ("zero1", "zero2") and o.offload == "none" and o.gpus > 1:
        # DeepSpeed's reduce bucket (not DDP's full copy); ZeRO-1 keeps every gradient anyway, so a
        # parameter larger than the bucket adds nothing there.
        buffers = zero_bucket_bytes(w, o, shape, oversized=False)
        grads += zero_bucket_bytes(w, o, shape, oversized=o.sharding == "zero2")
    whole = weights  # the whole model's weights in their compute dtype (what a unit gathers)
    if o.sharding == "fsdp" and n > 1:
        working = _unit_bytes(w, o, shape, weights)
        if w.mode == "full":  # the unit's gradients are whole until reduce-scattered
            working += _unit_grad_bytes(w, o, shape, weights)
        # In mixed precision FSDP's sharded fp32 parameter is the master copy (counted with the
        # optimizer) and the trained weights' 16-bit copy exists only gathered, in ``working``:
        # 4 + 4 + 8 = 16 bytes per trained parameter over the GPUs, not autocast's 18 (ZeRO-3
        # likewise holds 16: 16-bit weights and gradients, fp32 master and Adam).
        if mixed(o.precision):
            weights -= _trained_params(w) * 2
        weights /= n
    if o.offload in ("optimizer", "params"):
        opt, evictable = 0.0, 0.0
    if o.offload == "optimizer":
        # Optimizer offload is ZeRO-Offload (DeepSpeed's offload_optimizer: FSDP offloads the
        # parameters or nothing). Its fp32 gradients are accumulated in host memory beside the fp32
        # master weights and Adam's states, where the CPU runs the update; the GPU keeps the 16-bit
        # weights and, of the gradients, only the 16-bit ones its reduction holds (the bucket, which
        # is copied down when full). Autocast's fp32 gradients never exist on the GPU: counted, they
        # made Llama 8B need 48.9 GB on one card where it runs in about 20. The step model copies
        # the same 16-bit gradients down (api.offload_bytes).
        buffers = zero_bucket_bytes(w, o, shape, oversized=False)  # allocated as the backward starts
        if o.sharding == "zero1":  # stage 1 reduces after the backward: every 16-bit gradient first
            grads = _trained_params(w) * activation_elem_bytes(o.precision) + buffers
        elif o.sharding == "fsdp" and n > 1:  # ZeRO-3: the working set holds the unit's gradients
            grads = buffers
            if mixed(o.precision):  # its 16-bit shard stays here; the fp32 master moved to the host
                weights += _trained_params(w) * 2 / n
        else:  # ZeRO-2-Offload, the ZeRO-Offload paper's setting (also for --sharding none)
            grads = zero_bucket_bytes(w, o, shape, oversized=True)
    if o.offload == "params":
        # Weights and gradients live on the host; the GPU holds the gathered unit it computes with
        # and that unit's gradients.
        unit = _unit_bytes(w, o, shape, whole)
        weights, grads, working = unit, (_unit_grad_bytes(w, o, shape, whole) if w.mode == "full" else 0.0), 0.0
    weights += working + dequant_transient_bytes(w, shape)
    ph = _loss_phase(w, o, shape)
    if ph is not None:
        act, logits = _phase_parts(ph, grads - buffers, batch)
    else:
        act = batch * activation_bytes_per_sample(w, o, shape)
        logits = batch * logits_bytes_per_sample(w, o, shape)
    allocated = weights + grads + opt + act + logits
    fixed = 0.0 if o.host else FIXED_OVERHEAD_BYTES
    overhead = fixed + ALLOCATOR_SLACK * allocated
    return MemoryBreakdown(weights, grads, opt, act, logits, overhead, evictable, fixed, buffers)


def capacity_bytes(vram_gb: float) -> float:
    """A card sold as ``vram_gb`` GB (binary); the driver's share is in every peak's overhead."""
    return vram_gb * GB


def _needed(b: MemoryBreakdown) -> float:
    return b.total() - b.evictable * (1 + ALLOCATOR_SLACK)


def needed_gb(b: MemoryBreakdown) -> float:
    """GB the card must hold: the peak less what a paged optimizer may move to the host."""
    return _needed(b) / GB


def _at(zero: MemoryBreakdown, act: float, logits: float, batch: int, ph: _LossPhase | None = None) -> MemoryBreakdown:
    """The peak at ``batch`` from the one at batch 0 and the per-sample terms (linear in the batch,
    except for a plain loss's two phases, ``ph``)."""
    a, lg = _phase_parts(ph, zero.gradients - zero.buffers, batch) if ph is not None else (batch * act, batch * logits)
    allocated = zero.weights + zero.gradients + zero.optimizer + a + lg
    return MemoryBreakdown(
        zero.weights,
        zero.gradients,
        zero.optimizer,
        a,
        lg,
        zero.fixed + ALLOCATOR_SLACK * allocated,
        zero.evictable,
        zero.fixed,
        zero.buffers,
    )


_BATCH_LIMIT = 1 << 24  # the largest batch any search considers


def _needed_at(zero: MemoryBreakdown, act: float, logits: float, batch: int, ph: _LossPhase | None = None) -> float:
    """``_needed(_at(...))`` without building the breakdown (the same sums in the same order, so the
    same float): the batch searches call it tens of thousands of times per catalog estimate."""
    a, lg = _phase_parts(ph, zero.gradients - zero.buffers, batch) if ph is not None else (batch * act, batch * logits)
    allocated = zero.weights + zero.gradients + zero.optimizer + a + lg
    return allocated + (zero.fixed + ALLOCATOR_SLACK * allocated) - zero.evictable * (1 + ALLOCATOR_SLACK)


@functools.lru_cache(maxsize=4096)
def _parts(
    w: Workload, o: MemoryOptions, shape: TransformerShape | None
) -> tuple[MemoryBreakdown, float, float, _LossPhase | None]:
    """(the peak at batch 0, activations and logits per sample, a plain loss's two phases): what
    every card shares (cached: an estimate asks for the same settings on 134 cards)."""
    zero = peak_memory(w, 0, o, shape)
    one = peak_memory(w, 1, o, shape)
    return zero, one.activations, one.logits, _loss_phase(w, o, shape)


def _max_batch(
    zero: MemoryBreakdown, act: float, logits: float, cap: float, limit: int, ph: _LossPhase | None = None
) -> int:
    if _needed_at(zero, act, logits, 1, ph) > cap:
        return 0
    if ph is not None:  # two phases: monotone in the batch, not linear; bisect
        lo, hi = 1, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _needed_at(zero, act, logits, mid, ph) <= cap else (lo, mid - 1)
        return lo
    per = act + logits
    if per <= 0:
        return limit
    b = min(
        limit,
        int(
            (
                (cap - zero.fixed) / (1 + ALLOCATOR_SLACK)
                - (zero.weights + zero.gradients + zero.optimizer)
                + zero.evictable
            )
            // per
        )
        + 1,
    )
    while b > 1 and _needed_at(zero, act, logits, b) > cap:  # the float edge
        b -= 1
    return b


def max_batch_size(
    w: Workload, vram_gb: float, o: MemoryOptions, shape: TransformerShape | None = None, limit: int = _BATCH_LIMIT
) -> int:
    """The largest per-GPU batch whose peak fits (0: not even one sample)."""
    zero, act, logits, ph = _parts(w, o, shape)
    return _max_batch(zero, act, logits, capacity_bytes(vram_gb), limit, ph)


@dataclass
class Fit:
    fits: bool
    max_batch: int  # largest per-GPU batch that fits (0: not even one sample)
    batch_size: int  # the batch used (the requested one, or the default capped at max_batch)
    state_gb: float  # weights + gradients + optimizer
    activation_gb_per_sample: float  # activations + logits of one sample
    usable_gb: float  # what the card offers a process
    peak_gb: float = 0.0  # at batch_size
    breakdown: MemoryBreakdown | None = None
    options: MemoryOptions = field(default_factory=MemoryOptions)
    suggestions: list[str] = field(default_factory=list)

    @property
    def breakdown_gb(self) -> dict[str, float]:
        return self.breakdown.as_gb() if self.breakdown else {}


#: The share of a card's memory a batch chosen for the user fills at most (where batch 1 fits in
#: it): the memory model's error on LitGPT's single-GPU peaks is a median 5.9 %, 12 % on the rows
#: it was not fitted on (docs/validation/memory-2026-11-24/litgpt.txt). A fit above it is tight.
HEADROOM = 0.95


def fit_with(
    w: Workload,
    vram_gb: float,
    o: MemoryOptions,
    *,
    batch_size: int | None = None,
    shape: TransformerShape | None = None,
) -> Fit:
    # Plain DDP holds the same per GPU at 2, 4 or 8 GPUs (a replica and its gradient buckets): one
    # search serves every count, as one did before each count was fitted on its own (the catalog's
    # first call stays within its 100 ms).
    fit = _fit_cached(w, vram_gb, _fit_key(o), batch_size, shape)
    return replace(fit, options=o)  # a row's own copy, with its own options


def _fit_key(o: MemoryOptions) -> MemoryOptions:
    return replace(o, gpus=2) if o.sharding == "none" and o.offload == "none" and o.gpus > 2 else o


def _fits(
    w: Workload, vram_gb: float, o: MemoryOptions, batch_size: int | None, shape: TransformerShape | None
) -> bool:
    """``fit_with(...).fits``, without the batch searches or the row's copy (the suggestions ask it
    hundreds of times per catalog estimate): the peak never falls as the batch grows, so the batch
    asked for fits where its own peak does, and the default batch, capped at what fits, where batch 1
    does (tests/estimate/test_memory.py checks the two agree)."""
    zero, act, logits, ph = _parts(w, _fit_key(o), shape)
    used = max(1, batch_size) if batch_size is not None else 1
    return used <= _BATCH_LIMIT and _needed_at(zero, act, logits, used, ph) <= capacity_bytes(vram_gb)


@functools.lru_cache(maxsize=8192)
def _fit_cached(
    w: Workload, vram_gb: float, o: MemoryOptions, batch_size: int | None, shape: TransformerShape | None
) -> Fit:
    zero, act, logits, ph = _parts(w, o, shape)
    cap = capacity_bytes(vram_gb)
    mb = _max_batch(zero, act, logits, cap, _BATCH_LIMIT, ph)
    wanted = batch_size if batch_size is not None else w.default_batch_size
    if batch_size is None and mb > 0:
        # A batch capped by memory leaves the card HEADROOM's room where it can: filled to 99.9 %,
        # any error of this model, a longer sample or another library's workspace runs out of it.
        room = _max_batch(zero, act, logits, cap * HEADROOM, _BATCH_LIMIT, ph)
        used = max(1, min(wanted, room if room > 0 else mb))
    else:
        used = max(1, wanted if batch_size is not None else min(wanted, mb))
    b = _at(zero, act, logits, used, ph)
    return Fit(
        fits=mb >= used and _needed(b) <= cap,
        max_batch=mb,
        batch_size=used,
        state_gb=(zero.weights + zero.gradients + zero.optimizer) / GB,
        activation_gb_per_sample=(act + logits) / GB,
        usable_gb=cap / GB,
        peak_gb=b.total() / GB,
        breakdown=b,
        options=o,
    )


def fit_on_gpu(
    w: Workload,
    vram_gb: float,
    precision: str,
    *,
    optimizer: str = "adamw",
    checkpointing: bool | str = False,
    batch_size: int | None = None,
    shards: int = 1,
    sharding: str | None = None,
    offload: str = "none",
    shape: TransformerShape | None = None,
) -> Fit:
    """Shorthand: ``shards`` > 1 without a ``sharding`` means FSDP over that many GPUs."""
    o = MemoryOptions(
        precision=precision,
        optimizer=optimizer,
        checkpointing=checkpointing,
        sharding=sharding or ("fsdp" if shards > 1 else "none"),
        offload=offload,
        gpus=max(1, shards),
    )
    return fit_with(w, vram_gb, o, batch_size=batch_size, shape=shape)


def plan(
    w: Workload,
    vram_gb: float,
    o: MemoryOptions,
    *,
    checkpointing: bool | str | None,
    sharding: str | None,
    batch_size: int | None,
    shape: TransformerShape | None = None,
) -> Fit:
    """The fit an estimate row shows: ``checkpointing`` None turns (full) checkpointing on only where
    the model does not fit otherwise, a mode (none, selective, full or a flag) is used as given; ``sharding`` None shards (FSDP) only where several GPUs need it to fit. Cached:
    many catalog cards share a memory size (treat the result as read-only)."""
    ckpt = None if checkpointing is None else as_checkpointing(checkpointing)
    return _plan(w, vram_gb, o, ckpt, sharding, batch_size, shape)


@functools.lru_cache(maxsize=4096)
def _plan(
    w: Workload,
    vram_gb: float,
    o: MemoryOptions,
    checkpointing: bool | str | None,
    sharding: str | None,
    batch_size: int | None,
    shape: TransformerShape | None,
) -> Fit:
    o = replace(o, checkpointing=checkpointing or False, sharding=sharding or "none")
    fit = fit_with(w, vram_gb, o, batch_size=batch_size, shape=shape)
    if not fit.fits and checkpointing is None:
        o = replace(o, checkpointing=True)
        fit = fit_with(w, vram_gb, o, batch_size=batch_size, shape=shape)
    if not fit.fits and sharding is None and o.gpus > 1:
        o2 = replace(o, sharding="fsdp", checkpointing=checkpointing or False)
        fit2 = fit_with(w, vram_gb, o2, batch_size=batch_size, shape=shape)
        if not fit2.fits and checkpointing is None:
            fit2 = fit_with(w, vram_gb, replace(o2, checkpointing=True), batch_size=batch_size, shape=shape)
        if fit2.fits or fit2.peak_gb < fit.peak_gb:  # fits sharded, or at least needs less: report that
            fit = fit2
    return fit


# --- what would make it fit ---------------------------------------------------------------------------


def suggestions(
    w: Workload,
    vram_gb: float,
    o: MemoryOptions,
    batch_size: int | None,
    shape: TransformerShape | None = None,
    *,
    max_gpus: int = 256,
    precisions: frozenset[str] | None = None,
    sharding_given: bool = False,
    per_node: int = 8,
) -> list[str]:
    """Changes that make the workload fit this card, cheapest first; each one is checked to fit
    (with the other settings as given) before it is offered. ``max_gpus``: the most such cards
    anyone builds into one job (a laptop GPU 1, consumer cards 4): no sharding over more.
    ``precisions``: those the card runs (None: any), so no precision it lacks is offered.
    ``sharding_given``: the user chose a sharding other than FSDP, which parameter offload needs:
    its tip then says to choose FSDP too (it is refused without). ``per_node``: GPUs per node, whose
    host holds their share of an offloaded state."""
    return list(_suggestions(w, vram_gb, o, batch_size, shape, max_gpus, precisions, sharding_given, per_node))


@functools.lru_cache(maxsize=1024)
def _suggestions(
    w: Workload,
    vram_gb: float,
    o: MemoryOptions,
    batch_size: int | None,
    shape: TransformerShape | None,
    max_gpus: int = 256,
    precisions: frozenset[str] | None = None,
    sharding_given: bool = False,
    per_node: int = 8,
) -> tuple[str, ...]:
    tips: list[str] = []
    shape = shape or shape_of(w)

    def ok(w2: Workload = w, b: int | None = batch_size, **kw: Any) -> bool:
        return _fits(w2, vram_gb, replace(o, **kw), b, shape)

    if o.offload == "optimizer" and o.sharding == "zero1" and ok(sharding="zero2"):
        # ZeRO-1-Offload holds every 16-bit gradient until the backward ends; stage 2 only its
        # reduce bucket, for the same step (api.predict_step times both alike).
        tips.append("ZeRO-2 (--sharding zero2: the gradients are reduced and offloaded in buckets, same step time)")
    if o.gpus > 1 and o.sharding != "fsdp" and o.offload != "params":
        # Several GPUs held to a weaker split: sharding everything is the first thing to try.
        if ok(sharding="fsdp"):
            tips.append(f"sharding everything over the {o.gpus} GPUs (--sharding fsdp, FSDP / ZeRO-3)")
        elif ok(sharding="fsdp", checkpointing=True):
            tips.append(f"sharding everything over the {o.gpus} GPUs (--sharding fsdp) with activation checkpointing")

    if batch_size is not None and batch_size > 1:
        mb = max_batch_size(w, vram_gb, o, shape)
        if mb >= 1:
            tips.append(f"a smaller batch (at most {mb} per GPU; accumulate gradients to keep the effective batch)")
    if o.loss == "plain" and ok(loss="chunked"):
        tips.append("a chunked loss (the cross-entropy over the logits in pieces, as LitGPT computes it)")
    if not o.checkpointing and shape is not None and ok(checkpointing="selective"):
        tips.append(
            "selective activation checkpointing (keeps the linear layers' outputs; recomputes only the "
            "attention core and elementwise ops)"
        )
    if o.recompute != "full":
        # The recompute is one more forward: a third more than forward + backward, half more where
        # frozen weights need no weight gradients (LoRA/QLoRA: the backward is one forward's work).
        more = "about a third" if w.mode == "full" else "about half"
        if ok(checkpointing=True):
            tips.append(f"full activation checkpointing ({more} more compute)")
        elif batch_size is not None and batch_size > 1:
            mb = max_batch_size(w, vram_gb, replace(o, checkpointing=True), shape)
            if mb >= 1:
                tips.append(f"full activation checkpointing and a batch of at most {mb} per GPU (accumulate gradients)")

    def runs(*precs: str) -> bool:
        return precisions is None or any(p in precisions for p in precs)

    if o.precision in ("fp32", "tf32") and runs("bf16", "fp16") and ok(precision="bf16"):
        tips.append("mixed precision (bf16, or fp16 on cards without bf16)")
    if o.optimizer in ("adam", "adamw") and ok(optimizer="adam8bit"):
        tips.append("an 8-bit Adam optimizer (bitsandbytes)")
    if o.precision in ("bf16", "fp16", "fp8") and runs("bf16-true") and ok(precision="bf16-true"):
        tips.append("pure bf16 training (bf16-true: no fp32 master weights or optimizer states)")
    if o.offload == "none" and ok(offload="optimizer"):
        tips.append("offloading the optimizer state to CPU memory (slower steps)")
    if w.kind == "transformer" and w.mode in ("full", "lora"):
        labels = {Mode.LORA: "LoRA fine-tuning (16-bit frozen base)", Mode.QLORA: "QLoRA (4-bit frozen base)"}
        ck = replace(o, checkpointing=True)
        for cand in _adapted(w, shape):
            if _fits(cand, vram_gb, ck, batch_size or 1, shape):
                tips.append(labels[cand.mode] + " with activation checkpointing")
                break
    if o.offload != "params":
        # more GPUs than the row's: 16 H100 short of Llama 70B's state were told to try 8-bit Adam
        # and QLoRA, not the 32 that hold it as it is (QA 16)
        for n in (n for n in (2, 4, 8, 16, 32, 64, 128, 256) if o.gpus < n <= max_gpus):
            if ok(b=batch_size or 1, sharding="fsdp", gpus=n, checkpointing=True):
                tips.append(f"sharding the model state over {n} such GPUs (FSDP / ZeRO-3) with checkpointing")
                break
    po = replace(o, offload="params", checkpointing=True)  # as a row with --offload params runs it
    if o.offload != "params" and ok(b=1, offload="params", checkpointing=True):
        # The host then holds the whole model state: say how much, it may be more than the machine has.
        host_gb = host_state_gb(w, po)
        mb = max(1, max_batch_size(w, vram_gb, po, shape))
        where = "one GPU" if o.gpus <= 1 else f"FSDP over the {o.gpus} GPUs"
        tips.append(
            f"offloading the parameters to CPU memory (--offload params{' --sharding fsdp' if sharding_given else ''}: "
            f"{where}, checkpointing, batch up to {mb}; "
            f"much slower; {host_state_text(host_gb, o.gpus, per_node, then=True)})"
        )
    return tuple(tips)


@functools.lru_cache(maxsize=256)
def _adapted(w: Workload, shape: TransformerShape | None) -> tuple[Workload, ...]:
    """The adapter fine-tunings a transformer's suggestions try, cheapest change first: a full
    fine-tuning's LoRA and QLoRA (rank-16 adapters on every linear layer), a LoRA's QLoRA (cached:
    the same for every card)."""
    if w.mode == "lora":
        return (replace(w, mode=Mode.QLORA),)
    lora = _as_adapter(w, Mode.LORA, shape)
    return (lora, replace(lora, mode=Mode.QLORA))


def _as_adapter(w: Workload, mode: Mode, shape: TransformerShape | None, rank: int = 16) -> Workload:
    """The same model fine-tuned with rank-``rank`` adapters on every linear layer."""
    if shape is not None:
        from gpuselect.workloads.transformer import lora_params

        trainable = lora_params(shape, rank)
    else:
        trainable = max(1, w.params // 200)
    return replace(w, mode=mode, trainable_params=min(w.params, trainable))


def vram_text(gb: float) -> str:
    """A card's memory as every face prints it: whole GB as "80", else to two places at most
    ("79.65", "179.06"): "179.1" in one face beside "179.06" in another read as two cards."""
    return f"{gb:,.0f}" if abs(gb - round(gb)) < 0.005 else f"{gb:,.2f}".rstrip("0").rstrip(".")


def need_gb(peak_gb: float, vram_gb: float) -> float:
    """A memory need to two places, rounded away from the memory it is judged against where the
    nearest would land on its other side (16.0003 GB that does not fit 16 GB read 16.0)."""
    near = round(peak_gb, 2)
    if (near > vram_gb) == (peak_gb > vram_gb):
        return near
    return (math.ceil if peak_gb > vram_gb else math.floor)(round(peak_gb * 100, 6)) / 100


def need_text(peak_gb: float, vram_gb: float) -> str:
    """A memory need as the faces print it beside the memory it is judged against: one place, or
    two where one would read on the wrong side of it (VGG16's 10.03 GB read "needs 10.0 of 10 GB"
    beside "does not fit")."""
    if (round(peak_gb, 1) > vram_gb) == (peak_gb > vram_gb):
        return f"{peak_gb:,.1f}"
    return f"{need_gb(peak_gb, vram_gb):,.2f}"


def needs_text(fit: Fit, vram_gb: float) -> str:
    """ "needs X of Y GB" as the faces print it."""
    return f"needs {need_text(need_gb(fit.peak_gb, vram_gb), vram_gb)} of {vram_text(vram_gb)} GB"


def round_gb(x: float) -> float:
    return round(x, 2) if math.isfinite(x) else x
