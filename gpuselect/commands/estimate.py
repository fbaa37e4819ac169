"""``gpuselect estimate``: time, memory fit and cost of a workload on every catalog GPU."""

from __future__ import annotations

import argparse
import math

from gpuselect.commands import add_format_option

HELP = "estimate training time, memory fit and cost on every catalog GPU, and recommend one of four stages"


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
            raise argparse.ArgumentTypeError(f"{what} {text} is outside {lo:g}..{hi:g}")
        return value

    return parse


def configure(parser: argparse.ArgumentParser) -> None:
    add_estimate_options(parser, workload_required=True)
    parser.add_argument("--top", type=_number(int, 1, 100_000, "--top"), default=15, help="text output: rows to show")
    add_format_option(parser, ("text", "json", "csv"))


def add_estimate_options(parser: argparse.ArgumentParser, *, workload_required: bool) -> None:
    """The workload and assumption options, shared by ``estimate`` and ``report``."""
    src = parser.add_mutually_exclusive_group(required=workload_required)
    src.add_argument("--workload", metavar="ID", help="a preset (see `gpuselect workloads`)")
    src.add_argument("--config", metavar="FILE", help="a Hugging Face style config.json (read as data, no code runs)")
    src.add_argument("--params", type=_number(float, 1, 1e13, "the parameter count"), metavar="N", help="your own model: parameter count (with --flops-per-sample)")
    src.add_argument("--model", metavar="FILE.py", help="profile a PyTorch model file (RUNS ITS CODE) with --factory and --input-shape")
    parser.add_argument("--flops-per-sample", type=_number(float, 1, 1e18, "FLOPs per sample"), metavar="F", help="forward FLOPs per sample (with --params)")
    parser.add_argument("--factory", metavar="NAME", help="with --model: the function that builds the model")
    parser.add_argument("--input-shape", metavar="D,D,...", help="with --model: one sample's shape, e.g. 3,224,224")
    parser.add_argument("--seq-len", type=_number(int, 1, 1_048_576, "the sequence length"), help="with --config: tokens per sample")
    parser.add_argument("--precision", choices=("fp32", "tf32", "fp16", "bf16"), default="bf16", help="fp16/bf16 mean mixed precision (default bf16)")
    parser.add_argument("--batch-size", default="auto", help="per-GPU batch, or auto: the workload's default capped by memory")
    parser.add_argument("--dataset-size", type=_number(int, 1, 1e13, "the dataset size"), metavar="N", help="samples per epoch")
    parser.add_argument("--epochs", type=_number(int, 1, 100_000, "the number of epochs"))
    parser.add_argument("--deadline-hours", type=_number(float, 1e-3, 1e6, "the deadline"), default=72.0, metavar="H")
    parser.add_argument("--budget-usd", type=_number(float, 1e-3, 1e10, "the budget"), metavar="B")
    parser.add_argument("--electricity-usd-per-kwh", type=_number(float, 0, 100, "the electricity price"), default=0.15, metavar="X")
    parser.add_argument("--optimizer", choices=("sgd", "sgd-momentum", "adam", "adamw", "adam8bit"), default="adamw")
    parser.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=None,
                        help="gradient checkpointing (less memory, ~4/3 the compute); default: only where the model does not fit otherwise")
    parser.add_argument("--gpus", default="all", help="all, or comma-separated catalog ids")
    parser.add_argument("--max-gpus", type=_number(int, 1, 4096, "--max-gpus"), default=8, metavar="N")
    bench = parser.add_mutually_exclusive_group()
    bench.add_argument("--bench", metavar="FILE", help="anchor this machine's estimates on a saved `gpuselect bench --format json` result")
    bench.add_argument("--bench-quick", action="store_true", help="run `gpuselect bench --quick` first (about 10 s) and anchor on it")


def _workload(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from gpuselect.errors import UsageError
    from gpuselect.workloads.presets import custom_workload, get_preset
    from gpuselect.workloads.transformer import workload_from_hf_config

    if args.workload:
        return get_preset(args.workload)
    if args.config:
        return workload_from_hf_config(args.config, seq_len=args.seq_len)
    if args.model:
        if not args.factory or not args.input_shape:
            raise UsageError("--model needs --factory NAME and --input-shape D,D,...")
        try:
            shape = tuple(int(d) for d in args.input_shape.split(","))
        except ValueError:
            raise UsageError(f"--input-shape must be whole numbers separated by commas, not {args.input_shape!r}") from None
        from gpuselect.workloads.profile import profile_user_model

        prof = profile_user_model(args.model, args.factory, shape)
        w = custom_workload(prof.params, prof.forward_flops_per_sample, name=f"{args.factory} from {args.model}")
        from dataclasses import replace

        return replace(w, activation_bytes_per_sample=prof.activation_bytes_per_sample, memory_traffic_bytes_per_sample=2 * prof.activation_bytes_per_sample,
                       input_shape=shape, source=f"profiled with torch's FLOP counter on the meta device from {args.model}")
    if args.flops_per_sample is None:
        raise UsageError("--params needs --flops-per-sample")
    return custom_workload(args.params, args.flops_per_sample)


def _load_bench(args: argparse.Namespace) -> dict | None:  # type: ignore[type-arg]
    import sys

    from gpuselect.bench.io import load_bench_file, quick_bench_doc

    if args.bench_quick:
        print("running gpuselect bench --quick ...", file=sys.stderr)
        return quick_bench_doc()
    return load_bench_file(args.bench) if args.bench else None


def _local(w, a, catalog, perf, bench):  # type: ignore[no-untyped-def]
    from gpuselect.estimate.api import local_cpu_estimate, local_gpu_estimate
    from gpuselect.hardware.snapshot import detect

    snap = detect(probe=False)
    cpu = snap.cpu
    measured = {d.get("device"): d for d in (bench or {}).get("devices", []) if isinstance(d, dict)}
    cpu_bench = measured.get("cpu") or {}
    cpu_tflops = (cpu_bench.get("matmul_tflops") or {}).get("fp32")
    out = [local_cpu_estimate(w, a, cores=cpu.physical_cores or cpu.logical_cores, mhz=cpu.max_mhz or cpu.current_mhz,
                              features=cpu.features, measured_tflops=cpu_tflops, name=cpu.model or "this CPU")]
    for g in snap.gpus:
        dev = measured.get(f"cuda:{g.torch_index}") if g.torch_index is not None else None
        out.append(local_gpu_estimate(w, a, catalog, perf, name=g.name, memory_bytes=g.memory_total_bytes,
                                      device=f"gpu{g.index}", spec_ratio=(dev or {}).get("spec_ratio")))
    return out


def compute(args: argparse.Namespace, bench: dict | None):  # type: ignore[no-untyped-def, type-arg]
    """The estimate the options describe (used by ``estimate`` and ``report``)."""
    from gpuselect.catalog import load_catalog
    from gpuselect.errors import UsageError
    from gpuselect.estimate.api import Assumptions, estimate
    from gpuselect.estimate.perf import default_model

    if args.batch_size == "auto":
        batch = None
    else:
        try:
            batch = int(args.batch_size)
        except ValueError:
            raise UsageError(f"--batch-size must be a whole number or auto, not {args.batch_size!r}") from None
        if not 1 <= batch <= 1_000_000:
            raise UsageError(f"--batch-size {batch} is outside 1..1000000")
    w = _workload(args)
    a = Assumptions(precision=args.precision, batch_size=batch, dataset_size=args.dataset_size, epochs=args.epochs,
                    deadline_hours=args.deadline_hours, budget_usd=args.budget_usd,
                    electricity_usd_per_kwh=args.electricity_usd_per_kwh, optimizer=args.optimizer,
                    checkpointing=args.checkpointing, max_gpus=args.max_gpus)
    catalog = load_catalog()
    perf = default_model(catalog)
    gpu_ids = None if args.gpus == "all" else [g.strip() for g in args.gpus.split(",") if g.strip()]
    local = _local(w, a, catalog, perf, bench)
    return estimate(w, a, catalog, perf, gpu_ids=gpu_ids, local=local)


def run(args: argparse.Namespace) -> int:
    import csv
    import dataclasses
    import io

    from gpuselect.output import json_document

    result = compute(args, _load_bench(args))
    w, a = result.workload, result.assumptions
    if args.format == "json":
        print(json_document({"workload": result.workload, "assumptions": result.assumptions, "rows": result.rows,
                             "local": result.local, "recommendation": result.recommendation}, kind="estimate"))
        return 0
    if args.format == "csv":
        fields = [f.name for f in dataclasses.fields(result.rows[0])]
        buf = io.StringIO()
        wr = csv.DictWriter(buf, fieldnames=fields)
        wr.writeheader()
        for r in result.rows:
            row = dataclasses.asdict(r)
            row["suggestions"] = "; ".join(r.suggestions)
            wr.writerow(row)
        print(buf.getvalue(), end="")
        return 0
    rec = result.recommendation
    print(f"{w.name}: {w.params / 1e6:,.1f} M parameters, {w.training_flops_per_sample / 1e9:,.2f} GFLOP per sample to train; "
          f"{a.precision}, {a.optimizer}, deadline {a.deadline_hours:g} h" + (f", budget ${a.budget_usd:,.0f}" if a.budget_usd else ""))
    print(f"\nStage {rec.stage} — {rec.stage_name}: {rec.choice}\n{rec.rationale}\n")
    for l in result.local:
        t = f"~{l.total_time_h:,.1f} h" if l.total_time_h is not None else "n/a"
        print(f"Your machine, {l.device} ({l.name}): {t} (±{100 * l.error_band:.0f} %; {l.basis})")
    ok = sorted((r for r in result.rows if r.fits and r.total_time_h is not None), key=lambda r: r.total_time_h)  # type: ignore[arg-type, return-value]

    def money(v: float | None) -> str:
        return "—" if v is None else f"{v:,.0f}"

    for title, rows in (("Single GPUs, fastest first", [r for r in ok if r.count == 1]), ("Several GPUs", [r for r in ok if r.count > 1])):
        if not rows:
            continue
        print(f"\n{title}:\n{'option':34s} {'batch':>6s} {'samples/s':>10s} {'time':>9s} {'±':>5s} {'buy $':>9s} {'cloud $':>9s} {'kWh':>8s}")
        for r in rows[: args.top if title.startswith("Single") else max(3, args.top // 3)]:
            print(f"{r.count}x {r.name[:30]:31s} {r.batch_size or 0:6d} {r.throughput_samples_per_s or 0:10,.1f} "
                  f"{r.total_time_h or 0:8,.1f}h {100 * r.error_band:4.0f}% {money(r.buy_cost_usd):>9s} {money(r.cloud_cost_usd):>9s} {r.energy_kwh or 0:8,.1f}"
                  + ("" if r.meets_deadline else "  (misses deadline)"))
    nofit = sum(1 for r in result.rows if r.count == 1 and not r.fits)
    print(f"\n{len(ok)} of {len(result.rows)} options fit; {nofit} single GPUs do not. ± is each row's validated "
          "90th-percentile error (docs/accuracy.md; AMD cards and several GPUs: docs/accuracy-external.md). "
          "`--format json` has every row, with what would make a GPU fit.")
    return 0
