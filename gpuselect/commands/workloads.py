"""``gpuselect workloads``: the preset training workloads and their figures."""

from __future__ import annotations

import argparse

from gpuselect.commands import add_format_option

HELP = "list the preset training workloads with parameters, FLOPs and activation memory per sample"


def configure(parser: argparse.ArgumentParser) -> None:
    add_format_option(parser)


def run(args: argparse.Namespace) -> int:
    from gpuselect.output import json_document
    from gpuselect.workloads.presets import PRESETS

    # Both forms show each preset's public id (the one --workload takes; JSON writes
    # Workload.public_id in the id field), never the calibration data's internal key.
    if args.format == "json":
        print(json_document({"count": len(PRESETS), "workloads": list(PRESETS.values())}, kind="workloads"))
        return 0
    print(f"{'id':20s} {'params':>9s} {'trainable':>10s} {'fwd GFLOP':>11s} {'act. MB':>9s}  sample / name")
    for w in PRESETS.values():
        mark = "" if w.profiler_checked else " (approx.)"
        print(
            f"{w.public_id:20s} {w.params / 1e6:8.1f}M {w.trainable_params / 1e6:9.2f}M {w.forward_flops_per_sample / 1e9:11.3f} "
            f"{w.activation_bytes_per_sample / 1e6:9.1f}  {w.sample_unit}: {w.name}{mark}"
        )
    print(
        "FLOPs: one forward pass of one sample (training costs about 3x). Activation memory: 16-bit, kept for the "
        "backward pass, per sample. '(approx.)': derived from papers, not measured with torch's FLOP counter."
    )
    return 0
