"""Where an LLM step's time goes, and what the step factors absorb (issue 12, LLM part).

    PYTHONPATH=. python benchmarks/llm_breakdown.py [--out docs/validation/llm-2026-11-24] [--no-ablation]

1. For llm-foundry rows (MPT-7B on 8x H100 / A100, short and long sequences) the predicted time of
   each op class, its FLOPs and rate, the rate the kernel data gives the same shapes in isolation
   (GEMM: E x wave quantisation x k/(k+k0); attention: the FlashAttention factor), and the GEMM
   factor the measurement implies when every other class is as modelled.
2. Ablation: the step factors fitted with and without llm-foundry (leave-one-source-out) and
   llm-foundry's out-of-sample error, with the LLM physics of this change switched on and off
   (eager attention for the older sources' BERT/Hugging Face runs; the optimizer step sharded
   under FSDP).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import perf
from gpuselect.estimate import roofline as R
from gpuselect.estimate.fit import throughput as T
from gpuselect.estimate.trace import OpKind

ROOT = Path(__file__).resolve().parents[1]
ROWS = (  # (gpu, model, seq, micro-batch): a short-sequence and a long-sequence row per GPU
    ("nvidia-h100-sxm5-80gb", "mpt-7b", 2048, 6),
    ("nvidia-h100-sxm5-80gb", "mpt-7b", 65536, 1),
    ("nvidia-a100-sxm4-80gb", "mpt-7b", 2048, 6),
    ("nvidia-a100-sxm4-80gb", "mpt-7b", 65536, 1),
    ("nvidia-h100-sxm5-80gb", "mpt-70b", 2048, 8),
)


def breakdown(case: T.Case) -> list[str]:
    if case.spec is None:
        return []
    w, e, mb, prec, kw, _units = case.spec
    d = A.device_for(e)
    used = R.resolve_precision(e, prec)
    pc = R.precision_class(used)
    trace = A.trace_cached(w, kw.get("ckpt", False))
    gf = R.params().doc["step"]["gemm_factor"]
    cls: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # seconds, FLOPs, isolated seconds
    for op in trace.ops:
        t, _tc, _tm = R.op_time(d, op, mb, used)
        key = f"{op.kind.value}/{op.phase.value}"
        flops = op.flops_per_sample * mb * op.count
        c = cls[key]
        c[0] += t
        c[1] += flops
        if op.kind is OpKind.GEMM and flops:
            eff = d.gemm_efficiency(pc, op.m_per_sample * mb, op.n, op.k)
            c[2] += flops / (d.peak_tflops[used] * 1e12 * eff)
    st, _par = A.predict_step(
        w,
        d,
        e,
        mb,
        used,
        count=kw["count"],
        checkpointing=kw.get("ckpt", False),
        sharding="fsdp",
        a=A.Assumptions(network_gbs=kw["network_gbs"]),
    )
    seq = int(case.note.split()[1])
    measured_s = mb * seq / case.measured
    out = [
        f"\n### {case.workload} on {case.count}x {e.name}, seq {seq}, micro-batch {mb}, {used}"
        f"{' (checkpointing)' if kw.get('ckpt') else ''}",
        f"measured {case.measured:,.0f} tokens/s/GPU (step {measured_s:.3f} s); predicted {mb * seq / st.seconds:,.0f} "
        f"(step {st.seconds:.3f} s, {100 * (measured_s / st.seconds - 1):+.1f} % time)",
        f"{'op class':24s} {'seconds':>8s} {'share':>6s} {'TFLOP/s':>8s} {'isolated':>9s}",
    ]
    for key, (t, flops, iso) in sorted(cls.items(), key=lambda kv: -kv[1][0]):
        rate = flops / t / 1e12 if t and flops else 0.0
        iso_rate = f"{flops / iso / 1e12:9.0f}" if iso else f"{'':9s}"
        out.append(f"{key:24s} {t:8.3f} {100 * t / st.seconds:5.1f}% {rate:8.0f} {iso_rate}")
    for k in ("optimizer", "communication", "host", "copy"):
        if st.breakdown.get(k):
            out.append(f"{k:24s} {st.breakdown[k]:8.3f} {100 * st.breakdown[k] / st.seconds:5.1f}%")
    gemm_t = sum(v[0] for k, v in cls.items() if k.startswith("gemm/"))
    rest = st.seconds - gemm_t
    if measured_s > rest:
        implied = gf * gemm_t / (measured_s - rest)
        out.append(
            f"GEMM factor in the model {gf:.2f}; the measurement implies {implied:.2f} if every other class is as modelled"
        )
    else:
        out.append(f"GEMM factor in the model {gf:.2f}; the other classes alone exceed the measured step")
    att_t = sum(v[0] for k, v in cls.items() if k.startswith("attention/"))
    att_f = sum(v[1] for k, v in cls.items() if k.startswith("attention/"))
    if att_t and measured_s > st.seconds - att_t:
        implied_att = att_f / (measured_s - (st.seconds - att_t)) / 1e12
        out.append(
            f"attention runs at {att_f / att_t / 1e12:.0f} TFLOP/s in the model (causal FLOPs, FlashAttention-2 "
            f"charts); the measurement implies {implied_att:.0f} if every other class is as modelled"
        )
    return out


def loso(base: dict[str, Any], fit: list[T.Case]) -> tuple[dict[str, Any], dict[str, Any], list[T.Case]]:
    without = T.fit_step(base, [c for c in fit if c.source != "llm-foundry"])
    fd = [T.redo(c) for c in fit if c.source == "llm-foundry"]
    with_all = T.fit_step(base, fit)
    return without, with_all, fd


def describe(name: str, without: dict[str, Any], with_all: dict[str, Any], fd: list[T.Case]) -> list[str]:
    med, p90, _ = T.stats(fd)
    bias = math.exp(statistics.median(c.log_err for c in fd)) - 1
    short = [c for c in fd if int(c.note.split()[1]) <= 8192]
    longs = [c for c in fd if int(c.note.split()[1]) > 8192]

    def b(cs: list[T.Case]) -> str:
        return f"{100 * (math.exp(statistics.median(c.log_err for c in cs)) - 1):+.1f} %" if cs else "-"

    return [
        f"\n{name}",
        f"  without llm-foundry: step {without['step']} comm {without['comm']}",
        f"  all sources:         step {with_all['step']} comm {with_all['comm']}",
        f"  llm-foundry out of sample: median {100 * med:.1f} % p90 {100 * p90:.1f} % bias {100 * bias:+.1f} % "
        f"(seq <= 8k: bias {b(short)}, n={len(short)}; seq > 8k: bias {b(longs)}, n={len(longs)})",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "llm-2026-11-24"))
    ap.add_argument("--no-ablation", action="store_true", help="only the per-op breakdown (seconds, not minutes)")
    args = ap.parse_args()
    catalog = load_catalog()
    lines = [
        "# LLM step breakdown and step-factor ablation (benchmarks/llm_breakdown.py)",
        f"parameters: {R.PARAMS_FILE.name} step {R.params().doc['step']} comm {R.params().doc['comm']}",
        "'isolated': the GEMM rate the kernel fit (kernels/gemm.csv) gives the same shapes outside a training step.",
    ]
    foundry = T.foundry_cases(catalog)
    for gpu_id, model, seq, mb in ROWS:
        hit = [
            c
            for c in foundry
            if c.gpu == gpu_id and c.workload == model and c.batch == mb and c.note.split()[1] == str(seq)
        ]
        if hit:
            lines += breakdown(min(hit, key=lambda c: c.count))
    if not args.no_ablation:
        base = json.loads(R.PARAMS_FILE.read_text())
        lines.append("\n## Step factors with and without llm-foundry, by which physics is on")
        real_step_time = A.step_time

        def unsharded(*a: Any, **kw: Any) -> perf.StepTime:
            kw["optimizer_shards"] = 1
            return real_step_time(*a, **kw)

        for name, eager, sharded in (
            ("before: fused attention everywhere, optimizer step not sharded", False, False),
            ("eager attention for DLE BERT / NeuSight only", True, False),
            ("optimizer step sharded under FSDP only", False, True),
            ("both (this change)", True, True),
        ):
            T.EAGER_OLD_SOFTWARE = eager
            A.step_time = real_step_time if sharded else unsharded  # type: ignore[assignment]
            cases = T.lambda_cases(catalog) + T.other_cases(catalog) + T.foundry_cases(catalog)
            fit = [
                c
                for c in cases
                if c.measured > 0
                and c.predicted > 0
                and c.spec is not None
                and c.traced
                and c.source in ("lambda", "dle", "neusight", "llm-foundry")
            ]
            lines += describe(name, *loso(base, fit))
            T.set_params(base)
        A.step_time = real_step_time  # type: ignore[assignment]
        T.EAGER_OLD_SOFTWARE = True
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / ("breakdown.txt" if not args.no_ablation else "breakdown-only.txt")).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
