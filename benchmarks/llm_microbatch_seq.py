"""Small micro-batches or long sequences: which one makes llm-foundry's rows come out too fast?

    PYTHONPATH=. python benchmarks/llm_microbatch_seq.py [--out docs/validation/llm-2026-11-24]

llm-foundry's tables shrink the micro-batch as the sequence grows (the activations must fit), so
"micro-batch <= 2" and "sequence > 8k" are nearly the same rows. This script separates them:
the out-of-sample error (``cases.csv``, leave-one-source-out, written by
``benchmarks/estimator_validation.py --fit``) by micro-batch x sequence length x head dimension,
and per row the predicted share of the step spent in fused attention, in exposed FSDP
communication and in memory-bound kernels (the committed parameters), so that an error that
follows one of them shows. Then, for the rows above 8k tokens, the attention rate the measurement
implies when every other op class is as modelled.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import roofline as R
from gpuselect.estimate.fit import throughput as T
from gpuselect.estimate.trace import OpKind

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "docs" / "validation" / "steptime-2026-11-23" / "cases.csv"


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _overlap_sensitivity(rows: list[dict]) -> list[str]:  # type: ignore[type-arg]
    """What ``comm.fsdp_overlap`` does: the rows whose FSDP traffic the committed value exposes,
    predicted again with other values (everything else as committed; in sample, as the parameter is
    only fitted on this source)."""
    exposed = [r for r in rows if r["comm"] > 0.005]
    if not exposed:
        return []
    doc = json.loads(json.dumps(R.params().doc))
    out = [
        "",
        "## FSDP overlap: the rows with exposed communication, predicted with other fsdp_overlap values",
        f"(in sample; {len(exposed)} rows; exposed = max(0, FSDP traffic time - fsdp_overlap x compute))",
        f"{'fsdp_overlap':>12s} {'median':>8s} {'bias':>7s} {'max':>7s}",
    ]
    committed = doc["comm"]["fsdp_overlap"]
    try:
        for v in (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0):
            doc["comm"]["fsdp_overlap"] = v
            T.set_params(doc)
            errs = [T.redo(r["case"]).predicted / r["case"].measured - 1 for r in exposed]
            out.append(
                f"{v:12.1f} {100 * statistics.median(abs(e) for e in errs):7.1f}% "
                f"{100 * statistics.median(errs):+6.1f}% {100 * max(errs, key=abs):+6.1f}%"
            )
    finally:
        doc["comm"]["fsdp_overlap"] = committed
        T.set_params(doc)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "llm-2026-11-24"))
    args = ap.parse_args()
    loso: dict[tuple[str, str, int, str, int, str], float] = {}
    with CASES.open(newline="") as fh:
        for r in csv.DictReader(fh):
            if r["source"] == "llm-foundry":
                key = (r["workload"], r["gpu"], int(r["count"]), r["precision"], int(r["batch"]), r["note"])
                loso[key] = float(r["rel_err"])
    catalog = load_catalog()
    rows = []
    for c in T.foundry_cases(catalog):
        if c.spec is None:
            continue
        w, e, mb, prec, kw, _units = c.spec
        key = (c.workload, c.gpu, c.count, c.precision, c.batch, c.note)
        if key not in loso:
            continue
        used = R.resolve_precision(e, prec)
        st, _par = A.predict_step(
            w,
            A.device_for(e),
            e,
            mb,
            used,
            count=kw["count"],
            checkpointing=kw["ckpt"],
            sharding="fsdp",
            a=A.Assumptions(network_gbs=kw["network_gbs"]),
        )
        d = A.device_for(e)
        trace = A.trace_cached(w, kw["ckpt"])
        att = sum(R.op_time(d, op, mb, used)[0] for op in trace.ops if op.kind is OpKind.ATTENTION)
        att_flops = sum(op.flops_per_sample * mb * op.count for op in trace.ops if op.kind is OpKind.ATTENTION)
        assert w.shape is not None
        seq = w.shape.seq_len
        rows.append(
            {
                "case": c,
                "err": loso[key],
                "seq": seq,
                "mb": mb,
                "hd": w.shape.hidden // w.shape.heads,
                "att": att / st.seconds,
                "comm": st.breakdown.get("communication", 0.0) / st.seconds,
                "mem": st.breakdown.get("memory", 0.0) / st.seconds,
                "step": st.seconds,
                "att_s": att,
                "att_flops": att_flops,
                "measured_step": mb * seq / c.measured,
            }
        )
    out: list[str] = [
        "# llm-foundry: small micro-batches against long sequences (benchmarks/llm_microbatch_seq.py)",
        f"parameters: step {R.params().doc['step']} comm {R.params().doc.get('comm')} "
        f"attention {{s0: {R.params()['attention']['s0']}, d0: {R.params()['attention'].get('d0')}, "
        f"s_causal: {R.params()['attention'].get('s_causal')}}}",
        "errors: out of sample (cases.csv, leave-one-source-out); shares: predicted, of the step",
        "",
        "## Out-of-sample error by micro-batch and sequence length",
        f"{'group':34s} {'n':>4s} {'median':>8s} {'p90':>7s} {'bias':>7s} {'attention':>10s} {'comm':>6s} {'memory':>7s}",
    ]

    def group(name: str, sel: list[dict]) -> None:  # type: ignore[type-arg]
        if not sel:
            return
        errs = [r["err"] for r in sel]
        a = [abs(x) for x in errs]
        out.append(
            f"{name:34s} {len(sel):4d} {100 * statistics.median(a):7.1f}% {100 * _pct(a, 0.9):6.1f}% "
            f"{100 * statistics.median(errs):+6.1f}% {100 * statistics.median(r['att'] for r in sel):9.1f}% "
            f"{100 * statistics.median(r['comm'] for r in sel):5.1f}% {100 * statistics.median(r['mem'] for r in sel):6.1f}%"
        )

    for mb_small in (True, False):
        for long in (False, True):
            sel = [r for r in rows if (r["mb"] <= 2) == mb_small and (r["seq"] > 8192) == long]
            group(f"micro-batch {'<=2' if mb_small else '>2 '}, seq {'> 8k' if long else '<= 8k'}", sel)
    out.append("")
    for hd in sorted({r["hd"] for r in rows}):
        for long in (False, True):
            group(
                f"head dim {hd}, seq {'> 8k' if long else '<= 8k'}",
                [r for r in rows if r["hd"] == hd and (r["seq"] > 8192) == long],
            )
    out.append("")
    for lo, hi in ((0, 0.05), (0.05, 0.15), (0.15, 0.3), (0.3, 0.5), (0.5, 1.0)):
        group(f"attention share {100 * lo:.0f}-{100 * hi:.0f} %", [r for r in rows if lo <= r["att"] < hi])
    out += [
        "",
        "## Rows above 8k tokens: the attention rate the measurement implies",
        "(measured step minus every other predicted class, attention FLOPs counted causal-half as the model does)",
        f"{'row':58s} {'err':>7s} {'att share':>9s} {'model TFLOP/s':>13s} {'implied':>8s}",
    ]
    ratio: dict[str, list[float]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["case"].gpu, r["case"].workload, r["seq"])):
        if r["seq"] <= 8192:
            continue
        c = r["case"]
        rest = r["step"] - r["att_s"]
        left = r["measured_step"] - rest
        implied = r["att_flops"] / left / 1e12 if left > 0 else float("nan")
        model = r["att_flops"] / r["att_s"] / 1e12
        ratio[c.gpu.split("-")[1]].append(implied / model)
        out.append(
            f"{c.workload + ' ' + c.gpu[7:] + f' x{c.count} {c.precision} mb {c.batch} {c.note}':58s} "
            f"{100 * r['err']:+6.1f}% {100 * r['att']:8.1f}% {model:13.0f} {implied:8.0f}"
        )
    for g, xs in sorted(ratio.items()):
        out.append(f"{g}: implied / modelled attention rate, median {statistics.median(xs):.2f} over {len(xs)} rows")
    out += _overlap_sensitivity(rows)
    text = "\n".join(out) + "\n"
    print(text, end="")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "microbatch-seq.txt").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
