"""What each activation-checkpointing mode costs and keeps, from the operator traces (arithmetic on
the model, not a measurement: benchmarks/memory_cpu_activations.py measures the kept bytes).

Rerun:  PYTHONPATH=. python benchmarks/checkpointing_tradeoff.py
(writes docs/validation/memory-2026-11-24/checkpointing.txt; a second)

Per transformer preset and mode: FLOPs of one training step per sample (forward, backward and the
RECOMPUTE ops the step-time model times) and what the forward keeps for the backward
(traces.kept_between_passes, 16-bit), each relative to no checkpointing; and the memory model's
activations per sample (gpuselect.estimate.memory, the figure rows use).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
from gpuselect.estimate import memory as M
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.traces import kept_between_passes, trace_for

OUT = ROOT / "docs" / "validation" / "memory-2026-11-24" / "checkpointing.txt"
MODES = ("none", "selective", "full")


def main() -> int:
    lines = [
        "Activation checkpointing per transformer preset: step FLOPs and what the forward keeps, relative to none",
        "Rerun: PYTHONPATH=. python benchmarks/checkpointing_tradeoff.py",
        "",
        f"{'preset':18s} {'tokens':>6s} "
        + " ".join(f"{m + ' FLOPs':>15s}" for m in MODES)
        + " "
        + " ".join(f"{m + ' kept':>14s}" for m in MODES)
        + " "
        + " ".join(f"{m + ' act GiB':>17s}" for m in MODES),
    ]
    for wid, w in PRESETS.items():
        if w.shape is None:
            continue
        flops = {m: trace_for(w, checkpointing=m).flops_per_sample() for m in MODES}
        kept = {m: kept_between_passes(w.shape, mode=w.mode, lora_rank=w.lora_rank, checkpointing=m) for m in MODES}
        act = {m: M.activation_bytes_per_sample(w, M.MemoryOptions(checkpointing=m)) / M.GB for m in MODES}
        lines.append(
            f"{wid:18s} {w.shape.seq_len:6d} "
            + " ".join(f"{flops[m] / flops['none']:15.3f}" for m in MODES)
            + " "
            + " ".join(f"{kept[m] / kept['none']:14.3f}" for m in MODES)
            + " "
            + " ".join(f"{act[m]:17.3f}" for m in MODES)
        )
    lines += [
        "",
        "FLOPs and kept: ratios to no checkpointing (the trace's forward + backward + recompute FLOPs; the bytes the",
        "forward leaves for the backward, bf16). act GiB: the memory model's activations per sample (ACTIVATION_FACTOR",
        "on the unchecked count; checkpointed: kept + what the rebuilt layer needs beyond the logits' buffers).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
