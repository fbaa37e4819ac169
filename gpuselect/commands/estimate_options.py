"""The workload and assumption options ``estimate`` and ``report`` share, and the request they
describe (a WorkloadSpec and the assumptions, the settings filling what is left open). No face
logic here: both commands call gpuselect.app with what this returns."""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpuselect.commands import enum_type
from gpuselect.types import LOSSES, Mode, Offload, Optimizer, Precision, Sharding, values


def _plain(x: float) -> str:
    """A range bound as people write it: 1,048,576 and 10,000,000,000,000, not 1.04858e+06."""
    return f"{x:,.0f}" if x == int(x) else f"{x:g}"


def _number(kind: type, lo: float, hi: float, what: str):  # type: ignore[no-untyped-def]
    def parse(text: str) -> float:
        try:
            value = kind(float(text)) if kind is int and float(text).is_integer() else kind(text)
        except (ValueError, OverflowError):
            whole = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{what} must be {whole}, not {text!r}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{what} must be a finite number, not {text!r}")
        if not lo <= value <= hi:
            # argparse already names the option: the message gives the value and the plain range
            raise argparse.ArgumentTypeError(f"{text} is outside {_plain(lo)}..{_plain(hi)}")
        return value

    return parse


def _counts(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or not 1 <= int(part) <= 4096:
            raise argparse.ArgumentTypeError(
                f"--count takes whole numbers in 1..4096 separated by commas, not {text!r}"
            )
        out.append(int(part))
    return tuple(out)


def add_estimate_options(
    parser: argparse.ArgumentParser, *, workload_required: bool, no_bench_help: str | None = None
) -> None:
    """The workload and assumption options, shared by ``estimate`` and ``report``; ``no_bench_help``:
    also ``--no-bench``, exclusive with the benchmark options (given with one, it silently dropped it)."""
    src = parser.add_mutually_exclusive_group(required=workload_required)
    src.add_argument("--workload", metavar="ID", help="a preset (see `gpuselect workloads`)")
    src.add_argument("--config", metavar="FILE", help="a Hugging Face style config.json (read as data, no code runs)")
    src.add_argument(
        "--params",
        type=_number(float, 1, 1e13, "the parameter count"),
        metavar="N",
        help="your own model: parameter count (with --flops-per-sample)",
    )
    src.add_argument(
        "--model",
        metavar="FILE.py",
        help="trace a PyTorch model file with --factory and --input-shape: this RUNS THE FILE'S CODE (in a "
        "separate process, 60 s at most); only use files you trust",
    )
    parser.add_argument(
        "--flops-per-sample",
        type=_number(float, 1, 1e18, "FLOPs per sample"),
        metavar="F",
        help="forward FLOPs per sample (with --params)",
    )
    parser.add_argument("--factory", metavar="NAME", help="with --model: the function that builds the model")
    parser.add_argument("--input-shape", metavar="D,D,...", help="with --model: one sample's shape, e.g. 3,224,224")
    parser.add_argument(
        "--mode",
        choices=values(Mode),
        type=enum_type(Mode),
        help="train every weight (full), LoRA adapters on frozen 16-bit weights, or QLoRA on 4-bit weights "
        "(transformer presets and --config; default: the preset's own)",
    )
    parser.add_argument(
        "--lora-rank",
        type=_number(int, 1, 65_536, "--lora-rank"),
        metavar="R",
        help="LoRA/QLoRA adapter rank (default 16)",
    )
    parser.add_argument(
        "--seq-len",
        type=_number(int, 1, 1_048_576, "the sequence length"),
        help="tokens per sample, with --config or a Llama or GPT-2 preset (default: the config's positions up to 4,096; "
        "the preset's 2,048 or 1,024)",
    )
    parser.add_argument(
        "--precision",
        choices=values(Precision),
        type=enum_type(Precision),
        default=Precision.AUTO,
        help="auto (default): what each card trains well in (bf16 on Ampere and newer, fp16 mixed on Volta/Turing, "
        "fp32 before; fp32 where the host bounds the step and it is faster); fp16/bf16 mean mixed precision (fp32 master weights); bf16-true is pure bf16 (no master "
        "copy); fp8 on Ada, Hopper, Blackwell and CDNA 3/4. A card that cannot run the request falls back "
        "(fp8->bf16->fp16->fp32, tf32->fp32) and its row says which precision it used",
    )
    parser.add_argument(
        "--batch-size",
        type=_batch,
        default=None,  # auto
        metavar="{N,auto}",
        help="per-GPU batch, or auto (default): the workload's default capped by memory",
    )
    parser.add_argument(
        "--dataset-size",
        type=_number(int, 1, 1e13, "the dataset size"),
        metavar="N",
        help="samples per epoch (default: the workload's own, as `gpuselect workloads` lists it; 100,000 for "
        "--config, --params and --model, 1,281,167 for a vision transformer's config)",
    )
    parser.add_argument(
        "--epochs",
        type=_number(int, 1, 100_000, "the number of epochs"),
        metavar="N",
        help="passes over the dataset (default: the workload's own, as `gpuselect workloads` lists it; 1 for "
        "--config, 10 for --params and --model)",
    )
    parser.add_argument(
        "--deadline-hours",
        type=_number(float, 1e-3, 1e6, "the deadline"),
        default=None,
        metavar="H",
        help="default: the settings' default deadline (72 h unless you changed it)",
    )
    parser.add_argument(
        "--budget-usd",
        type=_number(float, 1e-3, 1e10, "the budget"),
        metavar="B",
        help="default: the settings' default budget (none unless you set one)",
    )
    parser.add_argument(
        "--electricity-usd-per-kwh",
        type=_number(float, 0, 100, "the electricity price"),
        default=None,
        metavar="X",
        help="default: the settings' price (0.15 unless you changed it); shown in the settings' currency",
    )
    parser.add_argument(
        "--optimizer",
        choices=values(Optimizer),
        type=enum_type(Optimizer),
        default=Optimizer.ADAMW,
        help="sets the optimizer state held per trainable parameter (default adamw: two fp32 values)",
    )
    ckpt = parser.add_mutually_exclusive_group()  # both at once: the last one silently won
    ckpt.add_argument(
        "--checkpointing",
        nargs="?",
        const="full",
        choices=("full", "selective", "none"),
        default=None,
        metavar="{full,selective,none}",
        help="activation checkpointing: full (alone: keeps each block's input, ~4/3 the compute, ~3/2 for LoRA/QLoRA), selective "
        "(transformers: keeps the linear layers' outputs, recomputes attention and elementwise ops) or none; "
        "default: full where the model does not fit otherwise, or where it trains faster at the larger batch it allows",
    )
    ckpt.add_argument(
        "--no-checkpointing",
        dest="checkpointing",
        action="store_const",
        const="none",
        help="same as --checkpointing none",
    )
    parser.add_argument(
        "--loss",
        choices=LOSSES,
        default=None,  # chunked (Assumptions'); None tells a given choice from the default
        help="how a language model's loss is computed, which sets the memory peak of checkpointed runs: "
        "chunked (default; in pieces, as LitGPT does) or plain (one cross-entropy over fp32-upcast logits, as "
        "Hugging Face's models and Trainer do: ~14 bytes per logit at its backward)",
    )
    parser.add_argument(
        "--sharding",
        choices=values(Sharding),
        type=enum_type(Sharding),
        default=None,
        help="split optimizer state (zero1), also gradients (zero2), or everything (fsdp) over the GPUs of an "
        "option; default: FSDP where several GPUs need it to fit, or where a transformer's replicas cap the "
        "batch and sharding trains faster",
    )
    parser.add_argument(
        "--offload",
        choices=values(Offload),
        type=enum_type(Offload),
        default=Offload.NONE,
        help="keep the optimizer state (optimizer) or also weights and gradients (params) in CPU memory",
    )
    parser.add_argument("--gpus", default="all", help="all (default), or comma-separated catalog ids")
    parser.add_argument(
        "--max-gpus",
        type=_number(int, 1, 4096, "--max-gpus"),
        default=None,  # 8 (Assumptions'); None tells a given limit from the default
        metavar="N",
        help="the most GPUs an option may have (counts 1, 2, 4 ... up to N; --count gives others). Not given: "
        "boxes up to 8, and where none meets the deadline or holds the model, datacenter cards over nodes up to "
        "1,024 GPUs",
    )
    parser.add_argument(
        "--count", type=_counts, metavar="N[,N...]", help="evaluate exactly these GPU counts (e.g. 1,8,64)"
    )
    parser.add_argument(
        "--network-gbs",
        type=_number(float, 0.01, 1e5, "--network-gbs"),
        default=None,
        metavar="GB/S",
        help="network bandwidth between nodes, GB/s per node (default: the card's reference node, "
        "as `estimate` prints it)",
    )
    parser.add_argument(
        "--interconnect",
        metavar="FILE",
        help="a `gpuselect fleet` JSON report: use its measured all-reduce bandwidths for several GPUs instead of spec figures",
    )
    bench = parser.add_mutually_exclusive_group()
    bench.add_argument(
        "--bench",
        metavar="FILE",
        help="anchor this machine's estimates on a saved `gpuselect bench --format json` result",
    )
    bench.add_argument(
        "--bench-quick", action="store_true", help="run `gpuselect bench --quick` first (about 10 s) and anchor on it"
    )
    if no_bench_help:
        bench.add_argument("--no-bench", action="store_true", help=no_bench_help)


def workload_spec(args: argparse.Namespace) -> Any:
    from gpuselect.app.workflows import WorkloadSpec, parse_shape

    if (args.input_shape or args.factory) and not args.model:
        from gpuselect.errors import UsageError

        raise UsageError("--factory and --input-shape go with --model")  # a preset's input shape is its own
    if args.model and (not args.factory or not args.input_shape):
        from gpuselect.errors import UsageError

        raise UsageError("--model needs --factory NAME and --input-shape D,D,...")
    if args.params is not None and args.flops_per_sample is None:
        from gpuselect.errors import UsageError

        raise UsageError("--params needs --flops-per-sample")
    return WorkloadSpec(
        preset=args.workload,
        config=args.config,
        seq_len=args.seq_len,
        mode=args.mode,
        lora_rank=args.lora_rank,
        params=args.params,
        flops_per_sample=args.flops_per_sample,
        model=args.model,
        factory=args.factory,
        input_shape=parse_shape(args.input_shape) if args.model else None,
    )


def _batch(text: str) -> int | None:
    """``--batch-size``: a whole number in range, or auto in any case (None); argparse names the
    option in its errors, as it does for every other number."""
    if text.strip().lower() == "auto":
        return None
    try:
        value = float(text)  # 1e3 as the other whole-number options take it
        if not value.is_integer():
            raise ValueError(text)
        batch = int(value)
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"the batch size must be a whole number or auto, not {text!r}") from None
    if not 1 <= batch <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{text} is outside 1..1,000,000")
    return batch


def batch_size(args: argparse.Namespace) -> int | None:
    return args.batch_size  # type: ignore[no-any-return]  # parsed by _batch: an int or None (auto)


def assumptions(args: argparse.Namespace, settings: Any) -> Any:
    from gpuselect.app.workflows import assumptions as build

    return build(
        settings,
        precision=args.precision,
        batch_size=batch_size(args),
        dataset_size=args.dataset_size,
        epochs=args.epochs,
        deadline_hours=args.deadline_hours,
        budget_usd=args.budget_usd,
        electricity_usd_per_kwh=args.electricity_usd_per_kwh,
        optimizer=args.optimizer,
        checkpointing=args.checkpointing,
        loss=getattr(args, "loss", None),
        max_gpus=args.max_gpus,
        # a given --max-gpus is the most GPUs at all: "--max-gpus 1" led to a 16-GPU cluster
        cluster_max_gpus=args.max_gpus,
        counts=args.count,
        sharding=args.sharding,
        offload=args.offload,
        network_gbs=getattr(args, "network_gbs", None),
        interconnect=interconnect(args),
    )


def option_notes(args: argparse.Namespace, w: Any, a: Any) -> list[str]:
    """Options given that this workload or these counts do not use, in words (printed on stderr,
    so a user who asked for them is not left to guess why nothing changed)."""
    notes = []
    if a.checkpointing == "selective" and w.shape is None:
        notes.append(f"selective checkpointing is for transformers: {w.name} checkpoints fully where it checkpoints")
    if getattr(args, "loss", None) is not None and not w.seq_len:
        notes.append(f"--loss applies to language models: {w.name} has no token loss, so it changes nothing")
    if a.offload == "optimizer" and a.optimizer == "sgd":
        notes.append("plain SGD keeps no optimizer state: --offload optimizer moves nothing")
    if args.max_gpus is not None and not args.count and args.max_gpus & (args.max_gpus - 1):
        notes.append(
            f"--max-gpus {args.max_gpus} considers boxes of 1, 2, 4 … up to it: "
            f"{1 << (args.max_gpus.bit_length() - 1)} is the largest; --count gives any count"
        )
    if args.count and max(args.count) > 1:
        from gpuselect.catalog import load_catalog
        from gpuselect.estimate.recommend import PLAUSIBLE_RULE, implausible_counts

        cat = load_catalog()
        ids = gpu_ids(args)
        entries = [e for e in cat.entries if not ids or e.id in ids]
        out = implausible_counts(entries, sorted(set(args.count)))
        # only where it left something out, and what; where it leaves out everything, the error says it
        if out and len(out) < len(entries) * len(set(args.count)):
            more = f" and {len(out) - 3} more" if len(out) > 3 else ""
            notes.append(f"--count leaves out {', '.join(out[:3])}{more}: {PLAUSIBLE_RULE}")
    if args.count and args.max_gpus is not None:
        notes.append("--count evaluates exactly its counts: --max-gpus is not used")
    # the most GPUs as the framework sees them: one MI250X is two GCDs, 8 of them two nodes
    ranks = max(args.count) * _most_dies(args) if args.count else 0
    if getattr(args, "network_gbs", None) is not None and args.count and ranks <= a.gpus_per_node:
        notes.append(f"--network-gbs joins nodes of {a.gpus_per_node} GPUs: none of these counts spans nodes")
    if args.sharding not in (None, "none") and args.count and ranks == 1:
        notes.append(f"--sharding {args.sharding} splits state over several GPUs: one GPU holds all of it")
    return notes


def _most_dies(args: argparse.Namespace) -> int:
    """The most GPUs one card of those asked for shows the framework (an MI250X: two GCDs)."""
    from gpuselect.catalog import load_catalog

    ids = gpu_ids(args)
    return max((e.dies for e in load_catalog().entries if not ids or e.id in ids), default=1)


def interconnect(args: argparse.Namespace) -> Any:
    """The measured interconnect of a `gpuselect fleet` report (--interconnect), or None."""
    if not getattr(args, "interconnect", None):
        return None
    from gpuselect.fleet.interconnect import load_interconnect

    return load_interconnect(args.interconnect)


def gpu_ids(args: argparse.Namespace) -> list[str] | None:
    if args.gpus == "all":
        return None
    ids = [g.strip() for g in args.gpus.split(",") if g.strip()]
    if not ids:  # an empty list would read as every GPU
        from gpuselect.errors import UsageError

        raise UsageError("--gpus names no GPU: give catalog ids separated by commas, or all")
    return ids


def load_bench(args: argparse.Namespace) -> Any:
    """The benchmark the options ask for, as a BenchReport (``--bench-quick`` runs it here)."""
    import sys

    from gpuselect.app.machine import load_bench as load
    from gpuselect.app.machine import run_quick_bench

    if getattr(args, "bench_quick", False):
        print("running gpuselect bench --quick ...", file=sys.stderr)
        return run_quick_bench()
    return load(args.bench) if getattr(args, "bench", None) else None


def user_settings() -> Any:
    """The settings file; its problems reach stderr once, through ``notices`` (``settings.load``
    records each; printing them here too said every one twice)."""
    from gpuselect.settings import load

    s, _problems = load()
    return s
