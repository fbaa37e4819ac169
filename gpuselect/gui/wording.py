"""The core's words for the command line, as this window names the same things: the advice names
options ("--max-gpus"), health remedies name commands ("run `gpuselect estimate`")."""

from __future__ import annotations

#: Command-line wording and what the window calls it. The longer of two that overlap comes first
#: ("--offload params" before "--offload"). A value reads "set to": the advice puts a colon after
#: it ("--offload params: one GPU"), and "Offload: params: one GPU" read badly.
_IN_THE_APP = (
    # Options, as the Estimate page's controls that set them.
    ("--offload params", "Offload set to params"),
    ("--sharding fsdp", "Sharding set to fsdp"),
    ("--checkpointing selective", "Checkpointing set to selective"),  # a row's hint (session 17)
    ("--max-gpus", "Max GPUs"),
    ("--offload", "Offload"),
    ("--seq-len", "Sequence"),
    ("--checkpointing", "Checkpointing"),
    ("--precision", "Precision"),
    ("--batch-size", "Batch size"),
    # Commands, as the places in this window that do the same.
    ("run `gpuselect estimate`", "use the Estimate tab"),
    ("run `gpuselect bench`", "use the Benchmark tab"),
    ("`gpuselect bench` measures", "the Benchmark tab measures"),
    ("run `gpuselect health` during a benchmark", "refresh this page while the Benchmark tab runs"),
)


def in_the_app(text: str) -> str:
    """``text`` with each command-line option and command named as this window offers it ("raise the
    GPU limit (Max GPUs)", not "(--max-gpus)"; "use the Estimate tab", not "run `gpuselect estimate`")."""
    for cli, app in _IN_THE_APP:
        text = text.replace(cli, app)
    return text
