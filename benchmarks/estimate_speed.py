"""How long does estimating a workload on the whole catalog take?

Rerun:  PYTHONPATH=. python benchmarks/estimate_speed.py > docs/validation/steptime-2026-11-23/speed.txt
(scripts/refit runs it last)
1. In process: ``estimate()`` over every catalog GPU at 1, 2, 4 and 8 GPUs (plus the stage-4
   cluster counts of each datacenter card none of whose boxes holds the model in time) and the
   recommendation, for a few presets,
   after the catalog, the step-time parameters and the trace module are loaded, each timed on its own
   (targets: <= 100 ms).
2. As a process: ``python -m gpuselect estimate`` for a preset and for a --config file
   (targets: <= 1 s and <= 3 s), wall clock including Python start-up.
The machine's load is printed first: on a shared 2-core VM it inflates every figure.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
from gpuselect.catalog import load_catalog
from gpuselect.estimate.api import Assumptions, estimate
from gpuselect.estimate.perf import workload_trace
from gpuselect.estimate.roofline import _merged_template, params
from gpuselect.workloads.presets import PRESETS

LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    t0 = time.perf_counter()
    catalog = load_catalog(use_overlay=False)
    t1 = time.perf_counter()
    params()
    t2 = time.perf_counter()
    import gpuselect.workloads.traces  # noqa: F401 - once per process, imported by the first estimate; timed on its own

    t3 = time.perf_counter()
    print(
        f"catalog load {1000 * (t1 - t0):.1f} ms; step-time parameters {1000 * (t2 - t1):.1f} ms; "
        f"the trace module's import {1000 * (t3 - t2):.1f} ms (once per process, before the first estimate)"
    )
    for wid in ("simple-cnn", "resnet50", "gpt2-124m", "llama-8b-qlora", "llama-70b-full"):
        times = []
        for _ in range(6):
            s = time.perf_counter()
            result = estimate(PRESETS[wid], Assumptions(), catalog, local=[])
            times.append(1000 * (time.perf_counter() - s))
        warm = times[1:]  # the first call builds the workload's trace and compiles it per GPU
        # what each GPU's compile loops over: the trace's ops, merged where identical (bf16, GPU)
        ops = workload_trace(PRESETS[wid], checkpointing=False).ops
        distinct = len(_merged_template(ops, "bf16", "bf16", False))
        print(
            f"{wid:16s} {len(result.rows)} rows: first {times[0]:.0f} ms, then median {statistics.median(warm):.1f} ms "
            f"(min {min(warm):.1f}, max {max(warm):.1f}); {len(ops)} ops, {distinct} distinct"
        )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.json"
        cfg.write_text(json.dumps(LLAMA_CONFIG))
        for label, argv in (
            ("preset", ["--workload", "llama-8b-lora"]),
            ("--config", ["--config", str(cfg), "--seq-len", "2048"]),
        ):
            walls = []
            for _ in range(3):
                s = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-m", "gpuselect", "estimate", *argv, "--format", "json"],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                walls.append(time.perf_counter() - s)
                if proc.returncode != 0:
                    print(proc.stderr[-500:])
            print(
                f"process, {label:8s}: median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f})"
            )


if __name__ == "__main__":
    main()
