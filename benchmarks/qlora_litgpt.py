"""QLoRA's cost over LoRA: bitsandbytes' NF4 dequantisation fitted on LitGPT's measured steps.

    GPUSELECT_SHARED_DATA=../shared/data PYTHONPATH=. python benchmarks/qlora_litgpt.py [--fit] \
        > docs/validation/llm-2026-11-24/qlora-litgpt.txt

Data: ../shared/data/llm_memory_litgpt.csv. Beside each peak memory LitGPT's tables print the
run's training time, for LoRA and for QLoRA (bnb.nf4) on the same model, GPU and dataset: the
tutorial's per 1,000 iterations (A100), the config hub's for whole runs on Alpaca2k (A10G: 2,000
samples, 100 held out for validation by litgpt/data/alpaca_2k.py, so 1,900 x epochs / micro-batch
iterations). Per step, QLoRA's time minus LoRA's is what the dequantisations cost: the same GEMMs
run on the same tokens, only each base weight is first dequantised to 16 bits (forward and
backward, and again where checkpointing recomputes). That difference needs no tokens per step,
which the tables do not give (Alpaca's samples vary in length).

``--fit`` fits the bytes per dequantised weight the model charges at the card's streaming bandwidth
(gpuselect.estimate.fit.dequant) on the pairs with the same micro-batch, and writes it to
data/steptime.json (``dequant.bytes_per_weight``); without it the shipped value is checked. The
output then shows each GPU left out in turn, and the whole step end to end: the tokens per sample
at which the model's LoRA step takes the measured time (the tables do not give it), and the model's
QLoRA step at those tokens against the measured one. Adapters: rank and targets as memory_litgpt.py
reads them; where LitGPT adapts only query and value, the trace's other adapters are dropped.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
import memory_litgpt as ML

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import roofline as R
from gpuselect.estimate.fit import dequant as DQ
from gpuselect.estimate.fit import throughput as T
from gpuselect.estimate.perf import step_time
from gpuselect.estimate.trace import DEQUANT_BYTES, OpKind, Phase
from gpuselect.workloads.traces import _Section, transformer_trace

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
    tr = transformer_trace(
        shape,
        mode=c.workload.mode,
        lora_rank=rank,
        checkpointing=c.opts.checkpointing,
        double_quant=c.opts.quant == "nf4-dq",  # LitGPT's bnb.nf4 is plain NF4; bnb.nf4-dq double-quantises
    )
    if targets == "qv":  # LitGPT's lora_query / lora_value only: the other linears carry no adapter
        keep = ("layers.attn.q.", "layers.attn.v.", "layers.attn.qkv.q.", "layers.attn.qkv.v.")
        tr = replace(tr, ops=tuple(o for o in tr.ops if ".lora" not in o.name or o.name.startswith(keep)))
    if c.workload.mode == "qlora" and LITGPT_QUANTISES_HEAD:
        tr = replace(tr, ops=tr.ops + _head_dequant(c))
    return tr


#: LitGPT's bitsandbytes plugin (lightning's BitsandbytesPrecision, no ``ignore_modules`` from
#: litgpt/finetune/lora.py) converts every ``nn.Linear``, the output head included; Hugging Face's
#: loader keeps ``lm_head`` in 16 bits, as the product's trace does. So LitGPT's QLoRA steps also
#: dequantise the head (vocabulary x hidden weights) in the forward and for its input gradient.
LITGPT_QUANTISES_HEAD = True


def _head_dequant(c: ML.Case) -> tuple[Any, ...]:
    """The head's dequantisation ops of one LitGPT QLoRA step, built as the trace builds a base
    linear's (``traces._Section.dequant``)."""
    sec = _Section()
    weights = float(c.shape.vocab * c.shape.hidden)
    for phase in (Phase.FORWARD, Phase.BACKWARD):
        sec.dequant(phase, "lm_head", weights, c.opts.quant == "nf4-dq")
    return tuple(sec.fwd + sec.bwd)


#: Alpaca2k in LitGPT: 2,000 samples, of which the data module holds out ``val_split_fraction``
#: (litgpt/data/alpaca_2k.py: 0.05 by default, 100 samples; many configs set 0.03847, 77).
ALPACA2K = 2000
ALPACA2K_TRAIN = ALPACA2K - math.ceil(ALPACA2K * 0.05)  # at the default split: 1,900

#: What the config hub's runs spent on evaluation, from each model's config_hub/finetune/<model>/
#: lora.yaml as stored at the Lightning-AI/litgpt commits named (they may postdate the table's
#: commit; the QLoRA configs are taken to match): global batch, evaluation interval in optimizer
#: steps, the validation split, and whether a final validation runs. Every evaluation runs
#: min(100, validation batches) validation forwards and generates 100 tokens.
EVAL: dict[str, tuple[int, int, float, bool, str]] = {
    "falcon-7b": (8, 100, 0.05, False, "3352a7a"),
    "gemma-2b": (6, 25, 0.03847, False, "3352a7a"),
    "gemma-2-2b": (6, 25, 0.03847, True, "3fae864"),
    "llama-2-7b": (8, 100, 0.03847, False, "08bf15d"),  # that version trains on AlpacaGPT4: drifted
    "mistral-7b": (8, 100, 0.05, False, "0d20770"),
    "phi-2": (8, 100, 0.03847, False, "14db26b"),
    "phi-3-mini-4k-instruct": (8, 100, 0.03847, True, "6ec3463"),
    "stablelm-base-alpha-3b": (8, 100, 0.05, False, "3352a7a"),
    "tiny-llama": (8, 100, 0.03847, False, "089fc5c"),
}
#: A validation forward against a training step, in step time: of LoRA's and QLoRA's GEMMs (the
#: frozen weights get no weight gradients) and of QLoRA's dequantisations, the forward runs half.
VAL_FORWARD_SHARE = 0.5


@dataclass(frozen=True)
class Measured:
    q: ML.Case
    lo: ML.Case
    d: Any  # roofline.DeviceModel
    lora_s: float  # seconds per LoRA step (one micro-batch)
    qlora_s: float
    pair: DQ.Pair


def iterations(c: ML.Case) -> tuple[float, float] | None:
    """(training micro-batches, validation forwards) the row's time covers: 1,000 iterations and no
    evaluation in the tutorial's table; the whole run in the config hub's (``EVAL``)."""
    if c.table == "tutorial":
        return 1000.0, 0.0
    ep = epochs(c)
    cfg = EVAL.get(c.workload.id)
    if not ep or cfg is None:
        return None
    gbs, interval, val_fraction, final, _commit = cfg
    val = math.ceil(ALPACA2K * val_fraction)
    steps = ep * math.ceil((ALPACA2K - val) / c.batch)
    evals = int(steps * c.batch / gbs) // interval + (1 if final else 0)
    return float(steps), float(evals * min(100, math.ceil(val / c.batch)))


def step_equivalents(c: ML.Case) -> float | None:
    """The row's time in training steps: its micro-batches plus its validation forwards at
    ``VAL_FORWARD_SHARE`` of a step each (the generated tokens are left out: a few seconds a run)."""
    it = iterations(c)
    return None if it is None else it[0] + VAL_FORWARD_SHARE * it[1]


def eval_share(c: ML.Case) -> float:
    """The share of the row's step-equivalents that are validation forwards."""
    it = iterations(c)
    return 0.0 if it is None else VAL_FORWARD_SHARE * it[1] / (it[0] + VAL_FORWARD_SHARE * it[1])


def measured_pairs() -> tuple[list[Measured], list[str]]:
    """Every LoRA/QLoRA (bnb.nf4) pair of the same model, GPU and table; and notes on the rows left
    out of the fit (different micro-batches, duplicated rows)."""
    catalog = load_catalog()
    cases = [c for c in ML.cases() if not c.multi and c.workload.mode in ("lora", "qlora") and c.opts.quant == "nf4"]
    lora = [c for c in cases if c.workload.mode == "lora"]
    out: list[Measured] = []
    notes: list[str] = []
    seen: set[tuple[str, str, float, float]] = set()
    for q in (c for c in cases if c.workload.mode == "qlora"):
        pair = [
            c for c in lora if c.workload.id == q.workload.id and c.row["gpu"] == q.row["gpu"] and c.table == q.table
        ]
        if not pair:
            continue
        lo = ([c for c in pair if c.batch == q.batch] or pair)[0]
        tq, tl = minutes(q.row["quote"]), minutes(lo.row["quote"])
        label = f"{q.row['model']} on {q.row['gpu']}"
        if lo.batch != q.batch:
            notes.append(f"{label}: LoRA at micro-batch {lo.batch}, QLoRA at {q.batch}; padding differs, not fitted")
            continue
        nq, nl = step_equivalents(q), step_equivalents(lo)
        if tq is None or tl is None or epochs(q) != epochs(lo):
            continue
        if nq is None or nl is None:
            notes.append(f"{label}: its config's evaluation settings were not read (EVAL), not fitted")
            continue
        key = (q.workload.id, q.row["gpu"], tl, tq)
        if key in seen:
            notes.append(f"{label}: the same times as another row of the table ({q.workload.id}), counted once")
            continue
        seen.add(key)
        e = catalog.get(GPUS[q.row["gpu"]])
        if e is None:
            raise RuntimeError(f"{GPUS[q.row['gpu']]} is not in the catalog")
        d = A.device_for(e)
        deq = [o for o in _trace(q, q.shape.seq_len).ops if o.kind is OpKind.DEQUANT]
        lora_s, qlora_s = tl * 60 / nl, tq * 60 / nq
        p = DQ.Pair(
            label=f"{q.workload.id} mb{q.batch}",
            gpu=q.row["gpu"],
            weights=float(sum(o.count * o.elems_fixed for o in deq)),
            calls=sum(o.count for o in deq),
            stream_bytes_per_s=d.bandwidth_gbs * 1e9 * d.mem_eff,
            extra_s=qlora_s - lora_s,
        )
        out.append(Measured(q, lo, d, lora_s, qlora_s, p))
    return out, notes


def tokens_for(m: Measured) -> tuple[int, str]:
    """The tokens per sample at which the model's LoRA step takes the measured time (bisection over
    16 .. the table's length; the model's step grows with the tokens)."""
    target = m.lora_s / m.lo.batch
    a, b = 16, m.lo.shape.seq_len
    if seconds(m.lo, m.d, b) <= target:
        return b, "model's LoRA step faster than measured even at the table's length"
    if seconds(m.lo, m.d, a) >= target:
        return a, "model's LoRA step slower than measured even at 16 tokens (host-bound in the model)"
    while b - a > 1:
        mid = (a + b) // 2
        a, b = (mid, b) if seconds(m.lo, m.d, mid) < target else (a, mid)
    return b, ""


def set_bytes(value: float) -> None:
    """Make the model charge ``value`` bytes per dequantised weight (in memory, for the comparison)."""
    doc = dict(R.params().doc)
    doc["dequant"] = {**doc.get("dequant", {}), "bytes_per_weight": value}
    T.set_params(doc)


def double_quantisation() -> None:
    """bnb.nf4-dq against bnb.nf4 in the tutorial's table (same model, card and micro-batch, per 1,000
    iterations): what double quantisation adds per dequantisation call, measured and in the model
    (its absmax's two small kernels, at the kernel floor where the step is device-bound)."""
    catalog = load_catalog()
    cases = [c for c in ML.cases() if not c.multi and c.workload.mode == "qlora" and c.table == "tutorial"]
    print("\n## Double quantisation (bnb.nf4-dq) against plain NF4 (bnb.nf4), the tutorial's A100 rows")
    print(
        f"{'model':24s} {'mb':>3s} {'nf4 ms':>7s} {'nf4-dq ms':>9s} {'calls':>5s} {'measured us/call':>16s} {'model':>7s}"
    )
    for dq in (c for c in cases if c.opts.quant == "nf4-dq"):
        plain = [c for c in cases if c.opts.quant == "nf4" and c.workload.id == dq.workload.id and c.batch == dq.batch]
        t_dq, t_nf = minutes(dq.row["quote"]), (minutes(plain[0].row["quote"]) if plain else None)
        e = catalog.get(GPUS[dq.row["gpu"]])
        if t_dq is None or t_nf is None or e is None:
            continue
        d = A.device_for(e)
        seq = dq.shape.seq_len
        calls = sum(o.count for o in _trace(dq, seq).ops if o.kind is OpKind.DEQUANT)
        measured = (t_dq - t_nf) * 60 / 1000 / calls
        model = (seconds(dq, d, seq) - seconds(plain[0], d, seq)) * dq.batch / calls
        print(
            f"{dq.workload.id:24s} {dq.batch:3d} {t_nf * 60:7.1f} {t_dq * 60:9.1f} {calls:5d} {measured * 1e6:16.1f} "
            f"{model * 1e6:7.1f}"
        )
    print("(ms: per iteration; model 0 where its step is host-bound: the two kernels launch inside bitsandbytes' call)")


def pct(x: float) -> str:
    return f"{100 * x:+.0f} %"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--fit", action="store_true", help="fit dequant.bytes_per_weight and write it to steptime.json")
    args = ap.parse_args()
    rows, notes = measured_pairs()
    pairs = [m.pair for m in rows]
    shipped = R.dequant_bytes(R.params())
    fitted = DQ.fit(pairs)
    print("# QLoRA (bnb.nf4) against LoRA: LitGPT's measured steps, and bitsandbytes' dequantisation fitted on them")
    print("bytes/weight: the bytes per dequantised weight that would explain the pair's extra time at the card's")
    print(
        "streaming bandwidth (data sheet x measured memory efficiency); the kernel's own traffic is "
        f"{DEQUANT_BYTES:.4f}\n"
    )
    print(
        f"{'model':24s} {'GPU':16s} {'mb':>3s} {'LoRA ms':>8s} {'QLoRA ms':>8s} {'extra ms':>8s} {'calls':>5s} "
        f"{'Mw/call':>7s} {'bytes/weight':>12s} {'eval share':>10s}"
    )
    for m in rows:
        p = m.pair
        print(
            f"{m.q.workload.id:24s} {m.q.row['gpu'][:16]:16s} {m.q.batch:3d} {m.lora_s * 1e3:8.1f} "
            f"{m.qlora_s * 1e3:8.1f} {p.extra_s * 1e3:8.1f} {p.calls:5d} {p.weights / p.calls / 1e6:7.1f} "
            f"{p.implied():12.1f} {100 * eval_share(m.q):9.0f}%"
        )
    for n in notes:
        print(f"  not fitted: {n}")
    implied = [p.implied() for p in pairs]
    print(
        f"bytes per weight the pairs imply one by one: {min(implied):.1f}-{max(implied):.1f}, "
        f"median {statistics.median(implied):.1f}"
    )
    print(
        f"\nFit on all {len(pairs)} pairs (mean |log| of the extra time, grid step 0.25): {fitted} bytes per weight "
        f"({fitted / DEQUANT_BYTES:.1f}x the kernel's traffic), loss {DQ.loss(pairs, fitted):.3f}; "
        f"steptime.json before: {shipped}"
    )
    b2, call, l2 = DQ.fit_with_call(pairs)
    print(f"  with a fixed cost per call as well: {b2} bytes per weight + {call * 1e6:.0f} us per call, loss {l2:.3f}")
    for gpu in sorted({p.gpu for p in pairs}):
        train = [p for p in pairs if p.gpu != gpu]
        test = [p for p in pairs if p.gpu == gpu]
        b = DQ.fit(train)
        errs = [p.predicted_extra_s(b) / p.extra_s - 1 for p in test]
        print(
            f"  {gpu} left out: fitted {b} on the other card; its extra time "
            + ", ".join(f"{p.label} {pct(e)}" for p, e in zip(test, errs, strict=True))
            + f" (median |error| {100 * statistics.median(abs(e) for e in errs):.0f} %)"
        )
        tb, tc, _ = DQ.fit_with_call(train)
        errs2 = [(p.predicted_extra_s(tb) + p.calls * tc) / p.extra_s - 1 for p in test]
        print(
            f"    the same with the per-call term ({tb} bytes + {tc * 1e6:.0f} us fitted on the other card): median "
            f"|error| {100 * statistics.median(abs(e) for e in errs2):.0f} %"
        )
    if args.fit:
        doc = json.loads(R.PARAMS_FILE.read_text())
        doc["dequant"] = {
            "bytes_per_weight": fitted,
            "pairs": len(pairs),
            "source": "benchmarks/qlora_litgpt.py --fit: LitGPT's LoRA/QLoRA (bnb.nf4) step times, "
            "../shared/data/llm_memory_litgpt.csv",
        }
        R.PARAMS_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        T.set_params(doc)
        shipped = R.dequant_bytes(R.params())
        print(f"  written to {R.PARAMS_FILE.name}: dequant.bytes_per_weight = {shipped}")

    double_quantisation()
    print("\n## The whole step: the model's QLoRA step against the measured one")
    print("tokens: per sample, where the model's LoRA step takes the measured time; QLoRA error with the kernel's")
    print(f"traffic ({DEQUANT_BYTES:.2f} bytes per weight, as before) and with the shipped value ({shipped})\n")
    print(
        f"{'model':24s} {'GPU':16s} {'mb':>3s} {'tokens':>6s} {'measured Q/L':>12s} {'traffic':>8s} "
        f"{'shipped':>8s}  note"
    )
    configs = (DEQUANT_BYTES, shipped)
    errs: tuple[list[float], list[float]] = ([], [])
    clean: tuple[list[float], list[float]] = ([], [])
    for m in rows:
        t, note = tokens_for(m)
        got = []
        for i, b in enumerate(configs):
            set_bytes(b)
            got.append(seconds(m.q, m.d, t) * m.q.batch / m.qlora_s - 1)
            errs[i].append(got[i])
            if not note:
                clean[i].append(got[i])
        set_bytes(shipped)
        print(
            f"{m.q.workload.id:24s} {m.q.row['gpu'][:16]:16s} {m.q.batch:3d} {t:6d} "
            f"{m.qlora_s / m.lora_s:12.2f} {pct(got[0]):>8s} {pct(got[1]):>8s}  {note}"
        )
    for label, (a, b) in (("all pairs", errs), ("pairs whose LoRA step the model matches", clean)):
        if a:
            print(
                f"{label} ({len(a)}): QLoRA step median |error| {100 * statistics.median(abs(x) for x in a):.0f} % "
                f"(bias {pct(statistics.median(a))}) with the kernel's traffic, "
                f"{100 * statistics.median(abs(x) for x in b):.0f} % (bias {pct(statistics.median(b))}) shipped"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
