"""Typed values for the strings that repeat across the code: GPU families, form factors,
precisions, optimizers, sharding, offload, training modes and the four stages. The one source:
the catalog's validation, the command-line choices, the desktop app's lists and the estimator's
checks all take their values from here.

They are ``StrEnum``/``IntEnum`` so that JSON, CSV, command-line choices and comparisons with
plain strings keep working (``Precision.BF16 == "bf16"``, ``json.dumps(Precision.BF16)`` is
``"bf16"``, ``f"{Stage.CLUSTER}"`` is ``"4"``). A string from outside (a command line, a
settings or catalog file, a caller of the Python API) becomes a member once, at the boundary,
with ``parse``; the core passes members from there on.
"""

from __future__ import annotations

from enum import Enum, IntEnum, StrEnum
from typing import TypeVar

from gpuselect.errors import UsageError

E = TypeVar("E", bound=Enum)


def values(kind: type[Enum]) -> list[str]:
    """The members' values as plain strings, in definition order (command-line choices, lists)."""
    return [str(m.value) for m in kind]


def parse(kind: type[E], value: object, what: str) -> E:
    """The member ``value`` names (a member, or its value): the one conversion a boundary makes.
    Anything else is a UsageError in one sentence that lists the accepted values."""
    try:
        return kind(value)
    except (ValueError, TypeError):
        raise UsageError(f"{what} must be one of {', '.join(values(kind))}, not {value!r}") from None


class Family(StrEnum):
    """Catalog families, in the order the catalog lists them."""

    GEFORCE = "geforce"
    WORKSTATION = "workstation"
    DATACENTER = "datacenter"
    RADEON = "radeon"
    INSTINCT = "instinct"


#: Consumer cards: at most a few in one box, never across machines (recommend.plausible_count);
#: one of them alone is stage 2.
CONSUMER_FAMILIES: tuple[Family, ...] = (Family.GEFORCE, Family.RADEON)
#: Server cards: the only ones a cluster (stage 4) is built from.
SERVER_FAMILIES: tuple[Family, ...] = (Family.DATACENTER, Family.INSTINCT)


class FormFactor(StrEnum):
    DESKTOP = "desktop"
    LAPTOP = "laptop"
    PCIE = "pcie"
    SXM = "sxm"
    OAM = "oam"


#: The form factors multi-GPU servers are built from.
SERVER_FORM_FACTORS: tuple[FormFactor, ...] = (FormFactor.PCIE, FormFactor.SXM, FormFactor.OAM)


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


#: Mixed precision: 16-bit (or 8-bit) compute over fp32 master weights.
MIXED_PRECISIONS: tuple[Precision, ...] = (Precision.FP16, Precision.BF16, Precision.FP8)
#: How a language model's loss is computed (chunked, as LitGPT; plain, one fp32-upcast cross-entropy
#: as Hugging Face's models): it sets the memory peak of checkpointed runs.
LOSSES: tuple[str, ...] = ("chunked", "plain")
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


class Checkpointing(StrEnum):
    """Activation checkpointing: none, selective (recompute the attention core and cheap ops, keep
    the linear layers' outputs; transformers only) or full (recompute each layer)."""

    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"


class Stage(IntEnum):
    """The four recommendation stages."""

    NO_GPU = 1
    ONE_GPU = 2
    WORKSTATION_OR_RENTED = 3
    CLUSTER = 4

    @property
    def label(self) -> str:
        """The stage's name in a sentence ("one reasonable GPU")."""
        return _STAGE_LABELS[self]

    @property
    def short(self) -> str:
        """The stage's short name, the same in the CLI, the GUI and the report."""
        return _STAGE_SHORT[self]


_STAGE_LABELS: dict[Stage, str] = {
    Stage.NO_GPU: "no GPU needed",
    Stage.ONE_GPU: "one reasonable GPU",
    Stage.WORKSTATION_OR_RENTED: "a deep-learning workstation or rented datacenter GPUs",
    Stage.CLUSTER: "a GPU cluster",
}
_STAGE_SHORT: dict[Stage, str] = {
    Stage.NO_GPU: "no GPU (this CPU)",
    Stage.ONE_GPU: "one consumer GPU",
    Stage.WORKSTATION_OR_RENTED: "workstation / rented GPUs",
    Stage.CLUSTER: "cluster (several machines)",
}
