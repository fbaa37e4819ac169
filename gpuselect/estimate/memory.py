"""Does a workload fit a GPU's memory, with what batch, and what would make it fit?

Model state per parameter (ZeRO paper, Rajbhandari et al. 2020, section 3.1): FP32 training keeps
weights, gradients and optimizer state in 4-byte floats; mixed precision keeps 16-bit weights and
gradients plus an FP32 master copy. Activations per sample come from the workload (16-bit; twice
that in FP32), shrunk by gradient checkpointing to the block boundaries plus one block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuselect.workloads.model import Workload

GB = 1e9
#: CUDA context, cuBLAS/cuDNN workspaces and the caching allocator's slack.
FRAMEWORK_OVERHEAD_BYTES = 1.0 * GB
USABLE_FRACTION = 0.95  # fragmentation: the last few percent of VRAM is rarely allocatable

OPTIMIZER_STATE_BYTES = {"sgd": 0, "sgd-momentum": 4, "adam": 8, "adamw": 8, "adam8bit": 2}
OPTIMIZERS = tuple(OPTIMIZER_STATE_BYTES)


def mixed(precision: str) -> bool:
    return precision in ("fp16", "bf16")


def state_bytes(w: Workload, precision: str, optimizer: str) -> float:
    """Weights + gradients + optimizer state (+ master weights in mixed precision)."""
    opt = OPTIMIZER_STATE_BYTES[optimizer]
    trainable = w.trainable_params
    if w.mode == "full":
        per = (2 + 2 + 4 + opt) if mixed(precision) else (4 + 4 + opt)
        return w.params * per
    # LoRA / QLoRA: frozen base weights, trainable adapters with full mixed-precision state.
    base = w.params * (0.53 if w.mode == "qlora" else 2.0)  # 4-bit NF4 + quantisation constants, or 16-bit
    return base + trainable * (2 + 2 + 4 + opt)


def activation_bytes(w: Workload, precision: str, checkpointing: bool) -> float:
    per_sample = w.activation_bytes_per_sample * (1.0 if mixed(precision) else 2.0)
    if checkpointing:
        # Keep block inputs (~6 % of a transformer block's activations, Korthikanti et al. 2022)
        # and recompute one block at a time.
        per_sample *= 0.06 + 1.0 / max(1, w.layers)
    return per_sample


@dataclass
class Fit:
    fits: bool
    max_batch: int  # largest per-GPU batch that fits (0: not even one sample)
    batch_size: int  # the batch used (the requested one, or the default capped at max_batch)
    state_gb: float
    activation_gb_per_sample: float
    usable_gb: float
    suggestions: list[str] = field(default_factory=list)


def fit_on_gpu(
    w: Workload, vram_gb: float, precision: str, *, optimizer: str = "adamw", checkpointing: bool = False,
    batch_size: int | None = None, shards: int = 1,
) -> Fit:
    usable = vram_gb * GB * USABLE_FRACTION
    state = state_bytes(w, precision, optimizer) / shards
    act = activation_bytes(w, precision, checkpointing)
    free = usable - state - FRAMEWORK_OVERHEAD_BYTES
    max_batch = max(0, int(free // act)) if act > 0 else 0
    wanted = batch_size if batch_size is not None else w.default_batch_size
    used = wanted if batch_size is not None else min(wanted, max_batch)
    fits = max_batch >= max(1, used)
    return Fit(fits, max_batch, max(1, used), state / GB, act / GB, usable / GB)


def suggestions(w: Workload, vram_gb: float, precision: str, optimizer: str, checkpointing: bool, batch_size: int | None) -> list[str]:
    """What would make it fit one GPU of this size, cheapest change first."""
    tips: list[str] = []

    def ok(**kw: object) -> bool:
        args = dict(precision=precision, optimizer=optimizer, checkpointing=checkpointing, batch_size=batch_size)
        args.update(kw)
        return fit_on_gpu(w, vram_gb, **args).fits  # type: ignore[arg-type]

    if not mixed(precision) and ok(precision="bf16"):
        tips.append("mixed precision (bf16/fp16)")
    if not checkpointing and ok(checkpointing=True):
        tips.append("gradient checkpointing")
    if batch_size is not None and batch_size > 1 and ok(batch_size=None):
        tips.append(f"a smaller batch (at most {fit_on_gpu(w, vram_gb, precision, optimizer=optimizer, checkpointing=checkpointing).max_batch})")
    if optimizer in ("adam", "adamw") and ok(optimizer="adam8bit"):
        tips.append("an 8-bit Adam optimizer")
    if w.kind == "transformer" and w.mode == "full":
        from dataclasses import replace

        lora = replace(w, mode="lora", trainable_params=max(1, w.params // 200))
        if fit_on_gpu(lora, vram_gb, "bf16", optimizer=optimizer, checkpointing=True).fits:
            tips.append("LoRA fine-tuning")
        elif fit_on_gpu(replace(lora, mode="qlora"), vram_gb, "bf16", optimizer=optimizer, checkpointing=True).fits:
            tips.append("QLoRA (4-bit base weights)")
    for n in (2, 4, 8, 16, 32, 64, 128, 256):
        if fit_on_gpu(w, vram_gb, precision, optimizer=optimizer, checkpointing=True, batch_size=1, shards=n).fits:
            tips.append(f"sharding the model state over {n} GPUs (FSDP / ZeRO-3) with checkpointing")
            break
    return tips
