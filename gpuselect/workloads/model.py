"""A training workload described by the figures the estimator needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuselect.types import Mode, parse

if TYPE_CHECKING:
    from gpuselect.estimate.trace import StepTrace
    from gpuselect.workloads.transformer import TransformerShape

#: The public, hyphenated id (the style of every other preset) of the presets whose
#: ``Workload.id`` is the key the calibration data, the shipped traces and the fitted bands use.
#: Users see and type the public id; the old spelling stays accepted (``presets.get_preset``).
PUBLIC_IDS: dict[str, str] = {
    "bert_base_squad": "bert-base-squad",
    "bert_large_squad": "bert-large-squad",
    "transformerxlbase": "transformer-xl-base",
    "transformerxllarge": "transformer-xl-large",
}


def public_id(workload_id: str) -> str:
    """The id to show users (``bert_base_squad`` -> ``bert-base-squad``); a derived id keeps its
    suffix (``bert_base_squad+lora-r8`` -> ``bert-base-squad+lora-r8``)."""
    base, plus, rest = workload_id.partition("+")
    return PUBLIC_IDS.get(base, base) + plus + rest


#: The name of a workload given by its figures alone (``--params``): prose, not an identifier.
CUSTOM_NAME = "custom workload"


def sentence_start(name: str) -> str:
    """A workload's ``name`` where it opens a sentence: "Custom workload does not fit ...". Only the
    prose name is capitalised: the presets' names already are, and a name from the user's file or
    function ("build_model from net.py", "llama8b (from llama8b.json)") is kept as typed."""
    return name[:1].upper() + name[1:] if name.startswith(CUSTOM_NAME) else name


@dataclass(frozen=True)
class Workload:
    # The internal key (calibration data, traces); JSON shows ``public_id`` in its place.
    id: str = field(metadata={"json_via": "public_id"})
    name: str
    description: str
    kind: str  # mlp, cnn, rnn, transformer, recsys, speech, detection, custom
    params: int  # all parameters
    trainable_params: int  # what the optimizer updates (LoRA/QLoRA: the adapters only)
    forward_flops_per_sample: float  # matmul/conv FLOPs of one forward pass of one sample
    memory_traffic_bytes_per_sample: float  # bytes a forward pass moves to and from memory, 16-bit activations
    activation_bytes_per_sample: float  # activations kept for the backward pass, 16-bit, no checkpointing
    input_shape: tuple[int, ...]  # of one sample
    sample_unit: str  # what one sample is: image, sequence, utterance, rating ...
    layers: int  # repeated blocks (gradient checkpointing keeps one boundary per block)
    default_dataset_size: int  # samples per epoch
    default_epochs: int
    default_batch_size: int
    seq_len: int | None = None
    mode: Mode = Mode.FULL
    source: str = ""  # where the figures come from / how they were derived
    profiler_checked: bool = False  # FLOPs verified against torch's FLOP counter in the tests
    # How many of the reference benchmark's throughput units one sample is, for the reference
    # models measured per token, mel frame or audio sample (reference_throughput.csv's `unit`):
    # tokens per segment, mel frames per utterance ... 1 where the unit is the sample itself.
    throughput_units_per_sample: float = 1.0
    # The architecture, where the workload is a transformer built from a shape (presets, --config):
    # ``with_mode`` and the analytic trace builder re-derive everything from it.
    shape: TransformerShape | None = None
    lora_rank: int = 16  # LoRA/QLoRA adapter rank (ignored for mode "full")
    # A step trace measured for this workload (``--model``: the meta-device tracer), without
    # checkpointing; ``trace_for`` derives the checkpointed one from it.
    # (Not in JSON output: the rows carry the figures, not every operator.)
    trace: StepTrace | None = field(default=None, repr=False, metadata={"json": False})
    trace_ckpt: StepTrace | None = field(default=None, repr=False, metadata={"json": False})  # with checkpointing

    def __post_init__(self) -> None:
        # A mode given as its string ("lora") becomes the typed value once, here.
        object.__setattr__(self, "mode", parse(Mode, self.mode, "the training mode"))

    @property
    def public_id(self) -> str:
        """The id users see and type (``gpuselect workloads``, ``--workload``, JSON output)."""
        return public_id(self.id)

    @property
    def tokens_per_sample(self) -> float | None:
        """Text tokens one sample is, for the tokens/s figures; None where a sample is not text: a
        vision transformer's patches are its sequence, but it trains images (its table read
        "tokens/s 1,156,973" beside ResNet-50's samples/s). A sentence pair counts both sides, as
        its benchmark's tokens per second do (GNMT: 50 + 50; the table counted 50)."""
        if not self.seq_len or self.sample_unit == "image":
            return None
        units = self.throughput_units_per_sample  # the reference benchmark's tokens per sample, where > 1
        return units if units > 1 else float(self.seq_len)

    @property
    def training_flops_per_sample(self) -> float:
        """Forward + backward. Backward costs about twice the forward (gradients for inputs and
        weights); with frozen base weights (LoRA/QLoRA) the weight gradients are skipped."""
        backward = 2.0 if self.mode == Mode.FULL else 1.0
        return self.forward_flops_per_sample * (1.0 + backward)
