"""``gpuselect workloads``: the preset training workloads and their figures."""

from __future__ import annotations

import argparse

from gpuselect.commands import add_format_option

HELP = "list the preset training workloads with parameters, FLOPs and activation memory per sample"


def configure(parser: argparse.ArgumentParser) -> None:
    add_format_option(parser)


def run(args: argparse.Namespace) -> int:
    from gpuselect.estimate.memory import MemoryOptions, activation_bytes_per_sample
    from gpuselect.output import ACTIVATION_BASIS, json_document, workload_json
    from gpuselect.workloads.presets import PRESETS

    # Activations as the memory model counts them (bf16, no checkpointing: the operator trace's
    # saved tensors, fused attention), not the preset's older stored figure (which, for the LLM
    # presets, assumed a stored attention score matrix).
    acts = {k: activation_bytes_per_sample(w, MemoryOptions()) for k, w in PRESETS.items()}
    # Both forms show each preset's public id (the one --workload takes; JSON writes
    # Workload.public_id in the id field), never the calibration data's internal key.
    if args.format == "json":
        entries = []
        for w in PRESETS.values():
            entry = workload_json(w)
            del entry["activation_basis"]  # said once for the list
            entries.append(entry)
        doc = {"count": len(PRESETS), "activation_basis": ACTIVATION_BASIS, "workloads": entries}
        print(json_document(doc, kind="workloads"))
        return 0
    print(
        f"{'id':20s} {'params':>9s} {'trainable':>10s} {'fwd GFLOP':>11s} {'act. MB':>9s} "
        f"{'samples x epochs':>20s}  sample / name"
    )
    for k, w in PRESETS.items():
        mark = "" if w.profiler_checked else " (approx.)"
        print(
            f"{w.public_id:20s} {w.params / 1e6:8.1f}M {w.trainable_params / 1e6:9.2f}M {_small(w.forward_flops_per_sample / 1e9, 3):>11s} "
            f"{_small(acts[k] / 1e6, 1):>9s} {f'{w.default_dataset_size:,} x {w.default_epochs:,}':>20s}  "
            f"{w.sample_unit}: {w.name}{mark}"
        )
    print(
        f"FLOPs: one forward pass of one sample (training costs about 3x). Activation memory: {ACTIVATION_BASIS}. "
        "Samples x epochs: the training an estimate times unless --dataset-size and --epochs say otherwise. "
        "'(approx.)': derived from papers, not measured with torch's FLOP counter."
    )
    return 0


def _small(v: float, decimals: int) -> str:
    """A figure with ``decimals`` places, or its first three significant digits where those would
    read 0 (the MNIST MLP's 0.0002 GFLOP showed as 0.000)."""
    if v == 0 or abs(v) >= 10 ** (-decimals):
        return f"{v:.{decimals}f}"
    return f"{v:.3g}"
