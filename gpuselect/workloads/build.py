"""One workload from the user's choice of source (preset, config.json, model file, own figures)
and training mode: the workflow the CLI, the report and the GUI share."""

from __future__ import annotations

from dataclasses import replace

from gpuselect.errors import UsageError
from gpuselect.output import three_digits
from gpuselect.types import Mode, parse
from gpuselect.workloads.model import Workload
from gpuselect.workloads.traces import with_mode


def parse_input_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise UsageError(f"--input-shape must be whole numbers separated by commas, not {text!r}") from None
    if not shape or any(d <= 0 for d in shape):
        raise UsageError(f"--input-shape must be positive sizes, not {text!r}")
    return shape


def build_workload(
    *,
    workload: str | None = None,
    config: str | None = None,
    params: float | None = None,
    flops_per_sample: float | None = None,
    model: str | None = None,
    factory: str | None = None,
    input_shape: str | None = None,
    seq_len: int | None = None,
    mode: Mode | str | None = None,
    lora_rank: int | None = None,
) -> Workload:
    """The workload the options describe, in ``mode`` (default: the preset's own, else full)."""
    from gpuselect.workloads.presets import custom_workload, get_preset, with_seq_len
    from gpuselect.workloads.transformer import workload_from_hf_config

    if mode is not None:
        mode = parse(Mode, mode, "--mode")
    # An option the chosen source does not read is refused, not silently dropped.
    if seq_len is not None and not (workload or config):
        raise UsageError("--seq-len applies to --config and the Llama and GPT-2 presets")
    if flops_per_sample is not None and (params is None or workload or config or model):
        raise UsageError("--flops-per-sample goes with --params")
    if (factory or input_shape) and (not model or workload or config):
        raise UsageError("--factory and --input-shape go with --model")
    if workload:
        w = get_preset(workload)
    elif config:
        w = workload_from_hf_config(config, seq_len=seq_len)
    elif model:
        if not factory or not input_shape:
            raise UsageError("--model needs --factory NAME and --input-shape D,D,...")
        from gpuselect.workloads.profile import trace_user_model

        shape = parse_input_shape(input_shape)
        plain, ckpt = trace_user_model(model, factory, shape)
        fwd = sum(o.flops_per_sample * o.count for o in plain.ops if o.phase.value == "forward")
        w = custom_workload(max(1, plain.params), max(1.0, fwd), name=f"{factory} from {model}")
        w = replace(
            w,
            trainable_params=plain.trainable_params,
            activation_bytes_per_sample=2 * plain.saved_elems_per_sample,
            memory_traffic_bytes_per_sample=4 * plain.saved_elems_per_sample,
            input_shape=shape,
            description=f"a traced model taking samples of shape ({', '.join(map(str, shape))}), "
            f"{three_digits(fwd / 1e9)} GFLOP per sample forward",
            source=plain.source,
            profiler_checked=True,
            trace=plain,
            trace_ckpt=ckpt,
        )
    elif params is not None:
        if flops_per_sample is None:
            raise UsageError("--params needs --flops-per-sample")
        w = custom_workload(params, flops_per_sample)
    else:
        raise UsageError("choose a workload: --workload, --config, --model or --params")
    if mode is not None or lora_rank is not None:
        target = mode or w.mode
        if lora_rank is not None and target == Mode.FULL:
            raise UsageError("--lora-rank needs --mode lora or qlora (or a LoRA/QLoRA preset)")
        w = with_mode(w, target, lora_rank)
    # A preset's sequence length last: the mode first swaps to its sibling preset (full -> QLoRA)
    return with_seq_len(w, seq_len) if workload and seq_len is not None else w
