"""LitGPT's multi-GPU FSDP rows against the step model: what their times can and cannot check.

    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/litgpt_fsdp.py \
        > docs/validation/llm-2026-11-24/litgpt-fsdp.txt

Data: ../shared/data/llm_memory_litgpt.csv, the config hub's full fine-tuning rows on 4x A10G
(PCIe only, FSDP, activation checkpointing on each Block). Their time is the whole run: 1,900
Alpaca2k samples x epochs, split over the 4 GPUs, plus LitGPT's evaluations. Per micro-batch and GPU
the script prints that time next to the model's training step (bf16-true, AdamW, FSDP over the
card's PCIe link), at the tokens per sample where the model's LoRA step of the same model on one
A10G takes its measured time (benchmarks/qlora_litgpt.py), and at 128 and 512 tokens.

Neither the evaluations nor the run's length can be taken from the table. By the config files as
stored (config_hub/finetune/<model>/full.yaml at Lightning-AI/litgpt 0fe99f8 and 0f9f670, which may
postdate the table), evaluation comes every 25 optimizer steps and runs up to 100 validation
forwards and 100 generated tokens, every token a sharded forward that gathers the whole model over
PCIe; and two of the runs stop early (max_steps: gemma-2b 50 optimizer steps of 16 samples,
phi-2 100 of 8), which would make their time per micro-batch 2-4x what this script prints. So
the measured column is the time per micro-batch *if* the run covered its epoch, evaluations
included: it bounds nothing about the training step, and the script draws no conclusion from it.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
import memory_litgpt as ML
import qlora_litgpt as QL

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A


def main() -> int:
    catalog = load_catalog()
    e = catalog.get("nvidia-a10g")
    if e is None:
        raise RuntimeError("nvidia-a10g is not in the catalog")
    d = A.device_for(e)
    rows, _ = QL.measured_pairs()
    tokens = {m.q.workload.id: QL.tokens_for(m) for m in rows if m.q.row["gpu"].startswith("NVIDIA A10G")}
    print("# LitGPT's 4x A10G FSDP full fine-tuning (PCIe only): measured time per micro-batch vs the model's step")
    print(
        "measured: the run's time (evaluations included) / the micro-batches per GPU of one whole epoch; model: one training step\n"
    )
    print(
        f"{'model':24s} {'mb':>3s} {'GPUs':>4s} {'steps':>5s} {'measured s':>10s} {'tokens':>6s} {'model s':>8s} {'x':>5s}  bound"
    )
    ratios: list[float] = []
    for c in ML.cases():
        if not (c.multi and c.table == "config-hub"):
            continue
        n = int(c.row["gpu"].rsplit("x", 1)[1])
        ep, t_min = QL.epochs(c), QL.minutes(c.row["quote"])
        if ep is None or t_min is None:
            continue
        steps = ep * math.ceil(QL.ALPACA2K_TRAIN / (c.batch * n))  # the whole epoch, no max_steps
        measured = t_min * 60 / steps
        inferred = tokens.get(c.workload.id, (0, "no LoRA pair"))
        for t, label in ((inferred[0], "LoRA pair"), (128, "128"), (512, "512")):
            if not t:
                continue
            w = replace(c.workload, shape=replace(c.shape, seq_len=t), seq_len=t, input_shape=(t,))
            st, par = A.predict_step(
                w, d, e, c.batch, "bf16-true", count=n, checkpointing=True, sharding="fsdp", optimizer="adamw"
            )
            ratios.append(measured / st.seconds)
            print(
                f"{c.workload.id:24s} {c.batch:3d} {n:4d} {steps:5d} {measured:10.2f} {t:6d} {st.seconds:8.2f} "
                f"{measured / st.seconds:5.1f}  {st.bound} ({par}; tokens: {label})"
            )
    lo, hi = min(ratios), max(ratios)
    print(
        f"\nMeasured (if the runs covered their epochs) / model: x{lo:.1f} to x{hi:.1f}. Evaluation and early stops,"
        "\nneither of which the table gives, can each account for factors like these: the rows check nothing about"
        "\nthe step, and PCIe-only multi-GPU training stays unvalidated."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
