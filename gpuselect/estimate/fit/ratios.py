"""Throughput *ratios* between GPUs for the same workload: measured against predicted (scripts only).

    PYTHONPATH=. python benchmarks/gpu_ratios.py [--out docs/validation/ratios-2026-11-24]
    (the same as python -m gpuselect.estimate.fit.ratios)

What a user comparing cards needs is the ratio, not the absolute figure: "how much faster is card
A than card B on my model". Within each source and group of measurements that differ only in the
GPU (Lambda: model, precision and benchmark generation; DeepLearningExamples: model, precision,
GPU count; NeuSight: model, sequence, batch; llm-foundry: model, sequence, micro-batch,
precision, GPU count, checkpointing), every GPU's measured throughput is divided by the group's
reference GPU's (``REFERENCE``: the first of that list present in the group, else the GPU with
most rows in the source) and compared with the predicted ratio, as ``gpuselect estimate`` answers
with the shipped parameters: fp32 rows are asked as ``--precision tf32`` (falling back to fp32 on
Volta/Turing/Pascal), except NeuSight's, which ran FP32 with TF32 off. A second view uses every
unordered pair of GPUs in a group (oriented faster/slower as measured).

Error = predicted ratio / measured ratio - 1. Baseline: per workload a power law
throughput = a x peak^b x bandwidth^c (peak at the precision the card trains in), fitted by
least squares on the same workload's other GPUs with one intercept per group, leaving the GPU
(both GPUs of a pair) out; where fewer than three other GPUs remain it has no answer (n/a).

Lambda rows of the reference models without an operator trace (SSD, NCF, Mask R-CNN) are left
out: their per-model calibration was fitted on Lambda itself.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from gpuselect.catalog import Catalog, load_catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.estimate import roofline as R  # noqa: N812 - namespace alias as in throughput.py
from gpuselect.estimate.fit import throughput as T  # noqa: N812 - namespace alias
from gpuselect.workloads.presets import PRESETS

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "docs" / "validation" / "ratios-2026-11-24"
REFERENCE = (
    "nvidia-a100-sxm4-80gb",
    "nvidia-a100-sxm4-40gb",
    "nvidia-h100-pcie-80gb",
    "nvidia-v100-pcie-32gb",
)


@dataclass(frozen=True)
class Row:
    source: str
    group: str  # rows of one group differ only in the GPU
    family_key: str  # the power-law baseline's "workload": groups sharing one (b, c)
    tf32_view: bool  # asked as --precision tf32 (fp32 training)
    gpu: str
    measured: float
    predicted: float
    peak: float  # TFLOPS at the precision the card trains in
    bandwidth: float


def family(e: GpuEntry) -> str:
    if e.vendor == "AMD":
        return "AMD"
    if e.form_factor == "laptop":
        return "laptop"
    return {"geforce": "GeForce", "workstation": "workstation", "datacenter": "datacenter"}.get(
        str(e.family), str(e.family)
    )


def _row(source: str, group: str, fam: str, tf32: bool, e: GpuEntry, measured: float, pred: float, used: str) -> Row:
    # The baseline's compute axis: the data-sheet peak at the precision the card trains in (the
    # model's peak without its sustained-clock factor; CDNA's FP32 on its matrix cores).
    peak = R.catalog_device(e).peak_tflops.get(used, e.fp32_tflops) / R.clock_factor(e)
    return Row(source, group, fam, tf32, e.id, measured, pred, peak, e.memory_bandwidth_gbs)


def lambda_rows(catalog: Catalog, only: set[str] | None = None) -> list[Row]:
    out = []
    traced = {m: T._traced(w) for m, w in PRESETS.items()}
    with (T.DATA / "reference_throughput.csv").open(newline="") as fh:
        for r in csv.DictReader(fh):
            e = T.gpu(catalog, r["gpu"])
            w = PRESETS.get(T.LAMBDA_MODELS.get(r["model"], ""))
            if e is None or w is None or not traced.get(w.id, False) or (only is not None and e.id not in only):
                continue
            batch = int(float(r["batch_size_per_gpu"]))
            ask = "tf32" if r["precision"] == "fp32" else "fp16"
            thr, _b, used = T.predict(w, e, batch, ask)
            key = f"{w.id}/{r['precision']}/{r['bench_version']}"
            out.append(
                _row(
                    "lambda",
                    key,
                    f"lambda/{w.id}/{r['precision']}",
                    ask == "tf32",
                    e,
                    float(r["throughput_per_gpu_median"]),
                    thr * w.throughput_units_per_sample,
                    used,
                )
            )
    return out


def other_rows(catalog: Catalog) -> list[Row]:
    out = []
    for c in T.other_cases(catalog):
        if c.spec is None or c.measured <= 0 or c.predicted <= 0:
            continue
        w, e, batch, prec, _kw, _units = c.spec
        used = R.resolve_precision(e, prec)
        if c.source == "dle":
            # DLE's "tf32" rows (A100) and "fp32" rows (V100, no TF32) are the same request: FP32
            # training as `--precision tf32` answers it (falling back to fp32 on Volta).
            fp32 = prec in ("tf32", "fp32")
            key = f"{c.workload}/{'fp32' if fp32 else prec}/x{c.count}"
            fam = f"dle/{c.workload}/{'fp32' if fp32 else prec}"
            out.append(_row("dle", key, fam, fp32, e, c.measured, c.predicted, used))
        else:  # NeuSight: FP32 with TF32 off, forward + backward
            key = f"{c.workload}/seq{w.seq_len}/b{batch}"
            out.append(_row("neusight", key, f"neusight/{c.workload}", False, e, c.measured, c.predicted, used))
    return out


def foundry_rows(catalog: Catalog) -> list[Row]:
    out = []
    for c in T.foundry_cases(catalog):
        if c.spec is None:
            continue
        _w, e, mb, prec, _kw, _seq = c.spec
        key = f"{c.workload}/{c.note}/mb{mb}/{prec}/x{c.count}"
        out.append(
            _row(
                "llm-foundry",
                key,
                f"llm-foundry/{prec}",
                False,
                e,
                c.measured,
                c.predicted,
                R.resolve_precision(e, prec),
            )
        )
    return out


@dataclass(frozen=True)
class Ratio:
    source: str
    group: str
    gpu: str  # numerator
    other: str  # denominator
    tf32_view: bool
    measured: float
    predicted: float
    baseline: float | None

    @property
    def err(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def base_err(self) -> float | None:
        return None if self.baseline is None else self.baseline / self.measured - 1


def powerlaw(rows: list[Row], leave: set[str]) -> tuple[float, float] | None:
    """(b, c) of log thr = a_group + b log peak + c log bw on ``rows`` without the GPUs ``leave``."""
    fit = [r for r in rows if r.gpu not in leave]
    if len({r.gpu for r in fit}) < 3:
        return None
    groups = sorted({r.group for r in fit})
    gi = {g: i for i, g in enumerate(groups)}
    x = np.zeros((len(fit), 2 + len(groups)))
    y = np.zeros(len(fit))
    for i, r in enumerate(fit):
        x[i, 0] = math.log(r.peak)
        x[i, 1] = math.log(r.bandwidth)
        x[i, 2 + gi[r.group]] = 1.0
        y[i] = math.log(r.measured)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return float(coef[0]), float(coef[1])


def _one_per_gpu(g: list[Row]) -> dict[str, Row]:
    """A GPU measured more than once in a group (DLE's SSD: two batch sizes) counts once, at the
    geometric mean of its measured and of its predicted throughputs."""
    by: dict[str, list[Row]] = defaultdict(list)
    for r in g:
        by[r.gpu].append(r)
    out = {}
    for gpu, rs in by.items():
        gm = math.exp(statistics.fmean(math.log(r.measured) for r in rs))
        gp = math.exp(statistics.fmean(math.log(r.predicted) for r in rs))
        out[gpu] = replace(rs[0], measured=gm, predicted=gp)
    return out


def references(rows: list[Row]) -> dict[tuple[str, str], str]:
    """Each (source, group)'s reference GPU: the first of ``REFERENCE`` present, else the GPU with
    most rows in the source."""
    by_group: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in rows:
        by_group[(r.source, r.group)].add(r.gpu)
    most = {
        s: [g for g, _n in Counter(r.gpu for r in rows if r.source == s).most_common()]
        for s in {r.source for r in rows}
    }
    return {
        (src, grp): next((x for x in REFERENCE if x in gpus), None) or next(x for x in most[src] if x in gpus)
        for (src, grp), gpus in by_group.items()
    }


def reference_as_shipped(held: list[Row], rows: list[Row]) -> list[Row]:
    """``held`` (rows predicted with their card's kernel rows left out) with each group's reference
    GPU predicted as shipped (``rows``): an unseen card against a reference the shared data hold,
    as a user compares a new card with one they know."""
    refs = references(rows)
    return [r for r in held if refs.get((r.source, r.group)) != r.gpu] + [
        r for r in rows if refs.get((r.source, r.group)) == r.gpu
    ]


def ratios(rows: list[Row], refs: dict[tuple[str, str], str] | None = None) -> tuple[list[Ratio], list[Ratio]]:
    """(against each group's reference GPU, every unordered pair)."""
    by_group: dict[tuple[str, str], list[Row]] = defaultdict(list)
    by_family: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_group[(r.source, r.group)].append(r)
        by_family[r.family_key].append(r)
    refs = refs or references(rows)
    cache: dict[tuple[str, frozenset[str]], tuple[float, float] | None] = {}

    def base(a: Row, b: Row, leave: frozenset[str]) -> float | None:
        k = (a.family_key, leave)
        if k not in cache:
            cache[k] = powerlaw(by_family[a.family_key], set(leave))
        bc = cache[k]
        if bc is None:
            return None
        return math.exp(bc[0] * math.log(a.peak / b.peak) + bc[1] * math.log(a.bandwidth / b.bandwidth))

    ref_view: list[Ratio] = []
    pair_view: list[Ratio] = []
    for (src, grp), g in sorted(by_group.items()):
        gpus = _one_per_gpu(g)
        if len(gpus) < 2:
            continue
        ref = refs[(src, grp)]
        rr = gpus[ref]
        for x, r in sorted(gpus.items()):
            if x == ref:
                continue
            ref_view.append(
                Ratio(
                    src,
                    grp,
                    x,
                    ref,
                    r.tf32_view,
                    r.measured / rr.measured,
                    r.predicted / rr.predicted,
                    base(r, rr, frozenset({x})),
                )
            )
        names = sorted(gpus)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                ra, rb = gpus[a], gpus[b]
                if ra.measured < rb.measured:
                    ra, rb = rb, ra
                pair_view.append(
                    Ratio(
                        src,
                        grp,
                        ra.gpu,
                        rb.gpu,
                        ra.tf32_view,
                        ra.measured / rb.measured,
                        ra.predicted / rb.predicted,
                        base(ra, rb, frozenset({a, b})),
                    )
                )
    return ref_view, pair_view


def q(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(p * len(s)) - 1))]


def table(rs: list[Ratio], key: Callable[[Ratio], str | tuple[str, str]], title: str) -> list[str]:
    """Median / p90 of |error| and the median signed error (bias) per group; the baseline on the
    ratios where it has an answer. A key returning two groups counts the ratio for both (the
    second, the denominator, sees the inverse ratio)."""
    groups: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
    for r in rs:
        keys = key(r)
        for i, k in enumerate(keys if isinstance(keys, tuple) else (keys,)):
            e, b = r.err, r.base_err
            if i == 1:  # the denominator's view: its own ratio is the inverse
                e = 1 / (1 + e) - 1
                b = None if b is None else 1 / (1 + b) - 1
            groups[k].append((e, b))
    lines = [
        f"\n## {title}",
        f"{'group':40s} {'n':>4s} {'median':>7s} {'p90':>7s} {'bias':>7s} | {'n(pl)':>5s} {'model':>7s} {'p90':>7s} | {'power law':>9s} {'p90':>7s}",
    ]
    for k in sorted(groups):
        g = groups[k]
        ab = [abs(e) for e, _b in g]
        bias = math.exp(statistics.median(math.log(1 + e) for e, _b in g)) - 1
        with_b = [(e, b) for e, b in g if b is not None]
        pl = ""
        if with_b:
            me = [abs(e) for e, _b in with_b]
            be = [abs(b) for _e, b in with_b if b is not None]
            pl = (
                f"{len(with_b):5d} {100 * statistics.median(me):6.1f}% {100 * q(me, 0.9):6.1f}% | "
                f"{100 * statistics.median(be):8.1f}% {100 * q(be, 0.9):6.1f}%"
            )
        else:
            pl = f"{0:5d} {'':>7s} {'':>7s} | {'n/a':>9s} {'':>7s}"
        lines.append(
            f"{k:40s} {len(g):4d} {100 * statistics.median(ab):6.1f}% {100 * q(ab, 0.9):6.1f}% {100 * bias:+6.1f}% | {pl}"
        )
    return lines


def absolute_by_generation(rows: list[Row]) -> list[str]:
    """Absolute predicted/measured per Lambda GPU and benchmark generation: the validation's
    per-GPU table takes each GPU's newest generation, which mixes software stacks (v0 rows run
    ~20 % slower than v1 on the same card), so a card measured only in v0 looks too fast there."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r.source == "lambda":
            by[(r.gpu, r.group.rsplit("/", 1)[1])].append(math.log(r.predicted / r.measured))
    out = [
        "\n## Absolute throughput, Lambda, per GPU and benchmark generation (traced workloads, fp32 and fp16; "
        "step factors as shipped)",
        f"{'gpu':32s} {'gen':>4s} {'n':>4s} {'bias':>7s} {'median |err|':>13s}",
    ]
    for (g, v), logs in sorted(by.items()):
        med = statistics.median(abs(math.exp(x) - 1) for x in logs)
        out.append(
            f"{g:32s} {v:>4s} {len(logs):4d} {100 * (math.exp(statistics.median(logs)) - 1):+6.0f}% {100 * med:12.0f}%"
        )
    return out


def all_rows(catalog: Catalog, only: set[str] | None = None) -> list[Row]:
    """Every source's rows with a prediction (``only``: just these cards' rows)."""
    rows = lambda_rows(catalog, only) + other_rows(catalog) + foundry_rows(catalog)
    return [r for r in rows if r.measured > 0 and r.predicted > 0 and (only is None or r.gpu in only)]


def held_out_rows(catalog: Catalog, rows: list[Row], key: Callable[[GpuEntry], str]) -> list[Row]:
    """``rows`` predicted again, each card's with the kernel parameters refitted without the kernel
    rows (GEMM, convolution, attention, FluidX3D) of every catalog card sharing ``key`` with it:
    ``e.id`` leaves the card out (its own measured bandwidth efficiency and GEMM rows gone: its
    architecture's median, fitted on the others), ``vendor/architecture`` the whole architecture
    (its efficiencies borrowed from the nearest one, as for a new architecture). The step factors
    stay as shipped (fitted on throughput, leaving each source out)."""
    from gpuselect.estimate.fit import kernels as K  # noqa: N812 - namespace alias

    base = R.params().doc
    cards: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        e = catalog.get(r.gpu)
        if e is not None:
            cards[key(e)].add(r.gpu)
    out: list[Row] = []
    try:
        for k, gpus in sorted(cards.items()):
            T.set_params(K.held_out(catalog, base, {e.id for e in catalog.entries if key(e) == k}))
            out += all_rows(catalog, gpus)
    finally:
        T.set_params(base)
    return out


def arch_key(e: GpuEntry) -> str:
    return f"{e.vendor}/{e.architecture}"


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument(
        "--params",
        help="predict with this steptime.json instead of the shipped one (e.g. an older commit's, "
        "git show COMMIT:gpuselect/estimate/data/steptime.json > old.json, for a before/after)",
    )
    args = ap.parse_args()
    if args.params:
        R._PARAMS = R.Params.load(Path(args.params))
    catalog = load_catalog()
    rows = all_rows(catalog)
    fam = {r.gpu: family(e) for r in rows if (e := catalog.get(r.gpu)) is not None}
    ref_view, pair_view = ratios(rows)
    logo_rows = held_out_rows(catalog, rows, lambda e: e.id)
    loao_rows = held_out_rows(catalog, rows, arch_key)
    refs = references(rows)
    held = {
        "logo": ratios(logo_rows, refs),
        "loao": ratios(loao_rows, refs),
        # The same with each group's reference as shipped: an unseen card against a known one.
        "logo-ref": ratios(reference_as_shipped(logo_rows, rows), refs),
        "loao-ref": ratios(reference_as_shipped(loao_rows, rows), refs),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "ratios.csv").open("w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(
            [
                "view",
                "source",
                "group",
                "gpu",
                "other",
                "tf32_view",
                "measured_ratio",
                "predicted_ratio",
                "err",
                "powerlaw_ratio",
                "powerlaw_err",
            ]
        )
        views = [("reference", ref_view), ("pairs", pair_view)]
        for name, (hr, _hp) in held.items():  # the held-out pair views: summary.txt only (size)
            views.append((f"reference/{name}", hr))
        for view, rs in views:
            for r in rs:
                wr.writerow(
                    [
                        view,
                        r.source,
                        r.group,
                        r.gpu,
                        r.other,
                        int(r.tf32_view),
                        f"{r.measured:.5g}",
                        f"{r.predicted:.5g}",
                        f"{r.err:+.4f}",
                        "" if r.baseline is None else f"{r.baseline:.5g}",
                        "" if r.base_err is None else f"{r.base_err:+.4f}",
                    ]
                )
    lines = [
        "# GPU throughput ratios: measured vs predicted (gpuselect/estimate/fit/ratios.py)",
        "error = predicted ratio / measured ratio - 1; median and p90 of |error|; bias = median signed error "
        "(log-median). 'model'/'power law' columns: the same ratios where the leave-GPU-out power law has an answer.",
        f"rows: {len(rows)}; ratios against the group's reference GPU: {len(ref_view)}; unordered pairs: {len(pair_view)}",
    ]
    tf = [r for r in ref_view if r.tf32_view]
    tfp = [r for r in pair_view if r.tf32_view]
    lines += table(
        tf,
        lambda _r: "tf32 asked (fp32 training)",
        "Headline: fp32 training asked as --precision tf32, against the reference GPU",
    )
    lines += table(tfp, lambda _r: "tf32 asked (fp32 training)", "Headline: the same, every unordered pair")
    # Cards below 1.1 TB/s (GDDR GeForce/workstation/laptop parts, V100, T4/L4-class): the kind of
    # card an unseen-GPU comparison is mostly about, without the HBM flagships.
    mid = {r.gpu for r in rows if r.bandwidth < 1100}
    lines += table(
        [r for r in tfp if r.gpu in mid and r.other in mid],
        lambda _r: "tf32 asked, both cards < 1.1 TB/s",
        "The same, every pair of cards below 1.1 TB/s (no HBM flagship)",
    )
    lines += table(ref_view, lambda r: r.source, "By source, against the reference GPU (all precisions)")
    lines += table(pair_view, lambda r: r.source, "By source, every unordered pair (all precisions)")
    lines += table(
        ref_view,
        lambda r: f"{r.source}/{r.group.split('/')[1] if r.source in ('lambda', 'dle') else '*'}",
        "By source and precision, against the reference GPU",
    )
    lines += table(
        pair_view,
        lambda r: (fam.get(r.gpu, "?"), fam.get(r.other, "?")),
        "By GPU family (every pair, counted for both its GPUs, each as the numerator)",
    )
    lines += table(
        pair_view, lambda r: (r.gpu, r.other), "By GPU (every pair, counted for both its GPUs, each as the numerator)"
    )
    lines += table(ref_view, lambda r: r.gpu, "By GPU against its group's reference GPU")
    lines += table(
        [r for r in ref_view if r.source == "lambda"],
        lambda r: f"{r.gpu}/{r.group.split('/')[1]}",
        "Lambda, by GPU and precision, against the reference GPU (fp32 rows asked as tf32)",
    )
    titles = {
        "logo": "Leave one GPU out: each card predicted with the kernel fit (GEMM, conv, attention, FluidX3D rows) "
        "refitted without its own rows",
        "loao": "Leave one architecture out: each card predicted with the kernel fit refitted without every card "
        "of its architecture (efficiencies borrowed from the nearest architecture)",
        "logo-ref": "Leave one GPU out, the reference as shipped: each card predicted without its own kernel rows, "
        "against its group's reference predicted with them (an unseen card against a known one; the pair views "
        "mix held-out and shipped cards)",
        "loao-ref": "Leave one architecture out, the reference as shipped (its architecture's kernel rows kept for the "
        "reference only)",
    }
    for name, (hr, hp) in held.items():
        lines.append(f"\n# {titles[name]}")
        lines += table(
            [r for r in hr if r.tf32_view],
            lambda _r: "tf32 asked (fp32 training)",
            f"{name}: headline, against the reference GPU",
        )
        if not name.endswith("-ref"):  # pairs of two held-out cards; the -ref views are about the reference
            lines += table(
                [r for r in hp if r.tf32_view],
                lambda _r: "tf32 asked (fp32 training)",
                f"{name}: headline, every unordered pair",
            )
        lines += table(hr, lambda r: r.source, f"{name}: by source, against the reference GPU (all precisions)")
        if not name.endswith("-ref"):
            lines += table(hp, lambda r: r.source, f"{name}: by source, every unordered pair (all precisions)")
        lines += table(hr, lambda r: r.gpu, f"{name}: by GPU against its group's reference GPU")
    lines += absolute_by_generation(rows)
    text = "\n".join(lines) + "\n"
    (out / "summary.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
