"""QLoRA's cost over LoRA: the step model against LitGPT's measured training times.

    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/qlora_litgpt.py \
        > docs/validation/llm-2026-11-24/qlora-litgpt.txt

Data: ../shared/data/llm_memory_litgpt.csv. Beside each peak memory LitGPT's tables print the
run's training time, for LoRA and for QLoRA (bnb.nf4) on the same model, GPU and dataset. Their
ratio is QLoRA's slowdown as measured. The other errors of the step model largely cancel in it:
same card, same software, same data.

The rows give the longest training example as the sequence length, not the tokens of an average
step. LitGPT pads a batch to its longest sample only, so a micro-batch-1 step trains one sample of
its own length, and Alpaca's samples are much shorter than their longest. The model's slowdown falls
with the tokens per step: dequantisation costs per weight, and the GEMMs per token. So this script
fits nothing. Per pair it prints the model's slowdown at the table's sequence length (the least the
model can say), and the tokens per sample at which the model would match the measurement (found by
bisection). The second is then judged against what the datasets hold. Adapters: rank and targets as
memory_litgpt.py reads them. Where LitGPT adapts only query and value, the trace's other adapters
are dropped. This matters because steps this small are bound by the host's per-op cost, and every
adapter adds ops. Checkpointing is as the row states, and the optimizer is AdamW in bf16-true.
"""

from __future__ import annotations

import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
import memory_litgpt as ML

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate.perf import step_time
from gpuselect.estimate.trace import DEQUANT_BYTES, OpKind
from gpuselect.workloads.traces import transformer_trace

GPUS = {"A100-SXM4-40GB": "nvidia-a100-sxm4-40gb", "NVIDIA A10G 24GB": "nvidia-a10g"}


def minutes(quote: str) -> float | None:
    m = re.search(r"\|\s*([\d.]+)\s*min\s*\|", quote)
    return float(m.group(1)) if m else None


def epochs(c: ML.Case) -> int | None:
    """The config-hub table's epochs column (the tutorial's runs all train one fixed count)."""
    cells = [x.strip() for x in c.row["quote"].strip().strip("|").split("|")]
    return int(cells[2]) if c.table == "config-hub" and cells[2].isdigit() else None


def seconds(c: ML.Case, d: Any, tokens: int) -> float:
    """One step's seconds per sample at ``tokens`` per sample (this case's mode, batch, checkpointing)."""
    tr = _trace(c, tokens)
    return step_time(tr, d, c.batch, "bf16-true", optimizer="adamw", full_params=False).seconds / c.batch


def _trace(c: ML.Case, tokens: int) -> Any:
    shape = replace(c.shape, seq_len=tokens)
    targets, rank = ("qv", 8) if c.table == "tutorial" else ML.LORA[c.workload.id]
    tr = transformer_trace(shape, mode=c.workload.mode, lora_rank=rank, checkpointing=c.opts.checkpointing)
    if targets == "qv":  # LitGPT's lora_query / lora_value only: the other linears carry no adapter
        keep = ("layers.attn.q.", "layers.attn.v.", "layers.attn.qkv.q.", "layers.attn.qkv.v.")
        tr = replace(tr, ops=tuple(o for o in tr.ops if ".lora" not in o.name or o.name.startswith(keep)))
    return tr


def missing(q: ML.Case, lo: ML.Case, d: Any, measured: float) -> tuple[float, float]:
    """The time per step the model lacks at the table's sequence length, per dequantisation call
    (µs) and per dequantised weight (bytes at the card's data-sheet bandwidth)."""
    seq = q.shape.seq_len
    extra = (measured * seconds(lo, d, seq) - seconds(q, d, seq)) * q.batch
    deq = [o for o in _trace(q, seq).ops if o.kind is OpKind.DEQUANT]
    calls = sum(o.count for o in deq)
    weights = sum(o.count * o.elems_fixed for o in deq)
    return extra / calls * 1e6, extra * d.bandwidth_gbs * 1e9 / weights


def main() -> int:
    catalog = load_catalog()
    cases = [c for c in ML.cases() if not c.multi and c.workload.mode in ("lora", "qlora") and c.opts.quant == "nf4"]
    lora = [c for c in cases if c.workload.mode == "lora"]
    qlora = [c for c in cases if c.workload.mode == "qlora"]
    print("# QLoRA (bnb.nf4) against LoRA: LitGPT's measured training times vs the step model")
    print("slowdown = QLoRA time / LoRA time for the same model, GPU and data; model at the table's sequence")
    print("length; 'matches at': the tokens per sample at which the model's slowdown equals the measured one\n")
    print(
        f"{'model':24s} {'GPU':16s} {'mb L/Q':>6s} {'seq':>5s} {'measured':>8s} {'model':>7s} {'matches at':>10s} "
        f"{'lacks/call':>10s} {'B/weight':>8s}  note"
    )
    per_call: list[float] = []
    per_weight: list[float] = []
    implied: list[float] = []
    at_seq: list[float] = []
    measured_all: list[float] = []
    model_all: list[float] = []
    short16 = 0
    for q in qlora:
        pair = [
            c for c in lora if c.workload.id == q.workload.id and c.row["gpu"] == q.row["gpu"] and c.table == q.table
        ]
        same = [c for c in pair if c.batch == q.batch]
        if not pair:
            continue
        lo = (same or pair)[0]
        tq, tl = minutes(q.row["quote"]), minutes(lo.row["quote"])
        if tq is None or tl is None or epochs(q) != epochs(lo):
            continue
        e = catalog.get(GPUS[q.row["gpu"]])
        if e is None:
            raise RuntimeError(f"{GPUS[q.row['gpu']]} is not in the catalog")
        d = A.device_for(e)
        measured = tq / tl
        seq = q.shape.seq_len

        def ratio(tokens: int, q: ML.Case = q, lo: ML.Case = lo, d: object = d) -> float:
            return seconds(q, d, tokens) / seconds(lo, d, tokens)

        model = ratio(seq)
        at_seq.append(model / measured - 1)
        measured_all.append(measured)
        model_all.append(model)
        note = "" if lo.batch == q.batch else "different micro-batches: times of the same data"
        if model >= measured:
            found = f">= {seq}"
        elif ratio(16) < measured:
            found = "< 16"
            short16 += 1
        else:
            a, b = 16, seq  # ratio(a) >= measured > ratio(b): the slowdown falls with the tokens
            while b - a > 1:
                m = (a + b) // 2
                a, b = (m, b) if ratio(m) >= measured else (a, m)
            implied.append(float(b))
            found = str(b)
        us, nb = missing(q, lo, d, measured)
        if us > 0:
            per_call.append(us)
            per_weight.append(nb)
        print(
            f"{q.workload.id:24s} {q.row['gpu'][:16]:16s} {lo.batch:>3d}/{q.batch:<2d} {seq:5d} "
            f"{measured:8.2f} {model:7.2f} {found:>10s} {us:8.0f}us {nb:8.1f}  {note}"
        )
    print(
        f"\nMeasured slowdown x{min(measured_all):.2f} to x{max(measured_all):.2f} (median "
        f"x{statistics.median(measured_all):.2f}); the model's at the tables' sequence lengths "
        f"x{min(model_all):.2f} to x{max(model_all):.2f}."
    )
    print(
        f"{len(at_seq)} pairs. At the tables' sequence lengths the model's slowdown is a median "
        f"{100 * statistics.median(at_seq):+.0f} % against the measured one (range {100 * min(at_seq):+.0f} to "
        f"{100 * max(at_seq):+.0f} %)."
    )
    print(
        f"Where the model is short ({len(per_call)} pairs), the time it lacks at the tables' sequence lengths: "
        f"{min(per_call):.0f}-{max(per_call):.0f} us per dequantisation call (median {statistics.median(per_call):.0f}), "
        f"{min(per_weight):.1f}-{max(per_weight):.1f} bytes per dequantised weight at the data-sheet bandwidth "
        f"(median {statistics.median(per_weight):.1f}; the model charges {DEQUANT_BYTES:.2f} at the card's "
        "measured streaming efficiency)."
    )
    print(f"{short16} of the {len(at_seq)} pairs stay below the measured slowdown even at 16 tokens per sample.")
    mid = statistics.median(per_weight)
    near = sum(1 for x in per_weight if mid / 1.5 <= x <= mid * 1.5)
    print(f"{near} of those {len(per_weight)} lie within 1.5x of that median per weight.")
    if implied:
        print(
            f"Tokens per sample at which the model matches: median {statistics.median(implied):.0f} "
            f"(range {min(implied):.0f} to {max(implied):.0f})."
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
