"""Typed values for the strings that repeat across the code: GPU families, form factors,
precisions, optimizers, training modes and the four stages.

They are ``StrEnum``/``IntEnum`` so that JSON, CSV, command-line choices and comparisons with
plain strings keep working (``Precision.BF16 == "bf16"``, ``json.dumps(Precision.BF16)`` is
``"bf16"``). New code takes and returns these; older modules still pass the plain strings,
which compare equal.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Family(StrEnum):
    """Catalog families, in the order the catalog lists them."""

    GEFORCE = "geforce"
    WORKSTATION = "workstation"
    DATACENTER = "datacenter"
    RADEON = "radeon"
    INSTINCT = "instinct"


class FormFactor(StrEnum):
    DESKTOP = "desktop"
    LAPTOP = "laptop"
    PCIE = "pcie"
    SXM = "sxm"
    OAM = "oam"


class Precision(StrEnum):
    """Number formats. fp16/bf16 mean mixed precision (FP32 master weights); bf16-true keeps
    the weights in BF16 too."""

    AUTO = "auto"  # a request: what each card trains well in (the row says what it used)
    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    BF16_TRUE = "bf16-true"
    FP8 = "fp8"


#: Precisions a training estimate can be asked for.
TRAINING_PRECISIONS: tuple[Precision, ...] = tuple(Precision)
#: Precisions the catalog carries a spec rate for.
SPEC_PRECISIONS: tuple[Precision, ...] = (
    Precision.FP32,
    Precision.TF32,
    Precision.FP16,
    Precision.BF16,
    Precision.FP8,
)


class Optimizer(StrEnum):
    SGD = "sgd"
    SGD_MOMENTUM = "sgd-momentum"
    ADAM = "adam"
    ADAMW = "adamw"
    ADAM8BIT = "adam8bit"
    PAGED_ADAMW8BIT = "paged-adamw8bit"


class Sharding(StrEnum):
    """How data-parallel training splits its state across GPUs."""

    NONE = "none"
    ZERO1 = "zero1"
    ZERO2 = "zero2"
    FSDP = "fsdp"


class Offload(StrEnum):
    NONE = "none"
    OPTIMIZER = "optimizer"
    PARAMS = "params"


class Mode(StrEnum):
    """What is trained: every weight, or low-rank adapters (on a 4-bit base for QLoRA)."""

    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class Stage(IntEnum):
    """The four recommendation stages."""

    NO_GPU = 1
    ONE_GPU = 2
    WORKSTATION_OR_RENTED = 3
    CLUSTER = 4

    @property
    def label(self) -> str:
        return _STAGE_LABELS[self]


_STAGE_LABELS: dict[Stage, str] = {
    Stage.NO_GPU: "no GPU needed",
    Stage.ONE_GPU: "one reasonable GPU",
    Stage.WORKSTATION_OR_RENTED: "a deep-learning workstation or rented datacenter GPUs",
    Stage.CLUSTER: "a GPU cluster",
}
