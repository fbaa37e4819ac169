"""Fit the step factors on measured training throughput and validate the step-time estimator on
absolute throughput (issue 12's proof). Scripts only.

    PYTHONPATH=. python benchmarks/estimator_validation.py --fit [--out docs/validation/steptime-2026-11-23]
    (the same as python -m gpuselect.estimate.fit.throughput)

Every case is predicted from first principles: the workload's operator trace, the card's data
sheet, and the few kernel/host parameters fitted on kernels/ and our own bench records
(``python -m gpuselect.estimate.fit``). No throughput table below is used in any fit, so each
source's table *is* its leave-one-source-out result, and each workload's rows its
leave-one-workload-out result. Leave-one-GPU-out additionally refits the kernel efficiencies
without that GPU's kernel rows (``--logo``).

Sources: Lambda (reference_throughput.csv, newest generation per GPU/model/precision), NVIDIA
DeepLearningExamples and NeuSight (other_throughput.csv), llm-foundry (per-GPU tokens/s, FSDP,
8-512 GPUs), our H100 simple-CNN record and CPU records. Writes cases.csv, summary.txt and the
regime bands the app reads (gpuselect/estimate/data/steptime_bands.json).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from gpuselect.catalog import Catalog, load_catalog
from gpuselect.catalog.schema import GpuEntry
from gpuselect.estimate import api as A  # noqa: N812 - short module alias, used as a namespace as in the formulas
from gpuselect.estimate import roofline as R  # noqa: N812 - short module alias, used as a namespace as in the formulas
from gpuselect.estimate.fit import shared_data
from gpuselect.estimate.perf import (
    apply_bench_fit,
    bench_step_list,
    bench_trace,
    benchmarked_gpu_device,
    cpu_device,
    fit_bench_steps,
    step_time,
)
from gpuselect.workloads.model import Workload
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.transformer import TransformerShape, transformer_workload

ROOT = Path(__file__).resolve().parents[3]

DATA = shared_data()
BANDS = ROOT / "gpuselect" / "estimate" / "data" / "steptime_bands.json"
LAMBDA_MODELS = {
    m: m
    for m in (
        "resnet50",
        "ssd",
        "bert_base_squad",
        "bert_large_squad",
        "gnmt",
        "ncf",
        "transformerxlbase",
        "transformerxllarge",
        "tacotron2",
        "waveglow",
        "maskrcnn",
    )
}
DLE_MODELS = {
    "resnet50_v1.5": "resnet50",
    "ssd300": "ssd",
    "transformerxl_base": "transformerxlbase",
    "gnmt": "gnmt",
    "bert_large_squad_finetune_seq384": "bert_large_squad",
}
NAME_FIXES = {
    "H200 SXM 141GB": "nvidia-h200-nvl-141gb",
    "AMD MI250 (1 GCD as seen by PyTorch)": "amd-mi250",
    "A100 40GB": "nvidia-a100-sxm4-40gb",
    "A100 80GB": "nvidia-a100-sxm4-80gb",
    "H100 80GB": "nvidia-h100-sxm5-80gb",
}
#: MPT configs (llm-foundry's scripts/train/yamls/pretrain/mpt-*.yaml): d_model, n_heads, n_layers;
#: expansion ratio 4, vocabulary 50368, no biases, ALiBi (no rotary), LayerNorm.
MPT = {
    "125m": (768, 12, 12),
    "350m": (1024, 16, 24),
    "760m": (1536, 12, 24),
    "1b": (2048, 16, 24),
    "3b": (2560, 20, 32),
    "7b": (4096, 32, 32),
    "13b": (5120, 40, 40),
    "30b": (7168, 64, 48),
    "70b": (8192, 64, 80),
}
#: HF models NeuSight traced: hidden, heads, layers, ffn, vocab, decoder?
NEUSIGHT = {
    "bert_large": (1024, 16, 24, 4096, 30522, False),
    "gpt2_large": (1280, 20, 36, 5120, 50257, True),
    "opt_13": (2048, 32, 24, 8192, 50272, True),
    "gpt3_xl": (2048, 16, 24, 8192, 50257, True),
    "gpt3_27": (2560, 32, 32, 10240, 50257, True),
}
#: Between nodes (llm-foundry): A100 rows state 1600 Gbps RoCE per node; H100 rows state none:
#: 3200 Gbps per node assumed (the usual 8 x 400 Gb/s of H100 clusters).
NETWORK_GBS = {"a100": 200.0, "h100": 400.0}


@dataclass
class Case:
    source: str
    workload: str
    gpu: str
    vendor: str
    count: int
    precision: str
    batch: int
    measured: float
    predicted: float
    regime: str
    bound: str
    note: str = ""
    mfu_rule: float | None = None  # llm-foundry: the constant-MFU rule's prediction
    spec: tuple[Any, ...] | None = (
        None  # (workload, entry, batch, requested precision, kwargs, units): to predict again
    )
    traced: bool = True  # False: the workload's trace is the synthetic approximation

    @property
    def log_err(self) -> float:
        return math.log(self.predicted / self.measured)


def gpu(catalog: Catalog, label: str) -> GpuEntry | None:
    for k, v in NAME_FIXES.items():
        if label.startswith(k):
            return catalog.get(v)
    m = catalog.match(label)
    return None if m is None else m.entry


def predict(
    w: Workload,
    e: GpuEntry,
    batch: int,
    precision: str,
    *,
    count: int = 1,
    ckpt: bool = False,
    sharding: str = "none",
    optimizer: str = "adamw",
    network_gbs: float = 25.0,
    calibrated: bool = True,
    fa2: bool = False,
) -> tuple[float, str, str]:
    """(samples/s per GPU, bound, precision used). ``fa2``: the source ran FlashAttention-2, so a
    Hopper card's attention runs at the FA2 chart's rate, not the cuDNN kernels' of today's PyTorch."""
    prec = R.resolve_precision(e, precision)
    a = A.Assumptions(network_gbs=network_gbs)
    d = A.device_for(e)
    if fa2 and "hopper_fa2_chart" in R.params()["attention"] and d.arch == "Hopper":
        d = R.device_variant(d, attention_factor=float(R.params()["attention"]["hopper_fa2_chart"]))
    st, _ = A.predict_step(
        w,
        d,
        e,
        batch,
        prec,
        count=count,
        checkpointing=ckpt,
        sharding=sharding,
        optimizer=optimizer,
        a=a,
        calibrated=calibrated,
    )
    return batch / st.seconds, st.bound, prec


def redo(c: Case) -> Case:
    """The case predicted again with the current parameters."""
    if c.spec is None:
        raise RuntimeError("internal error: c.spec is unset")
    w, e, batch, prec, kw, units = c.spec
    thr, bound, _used = predict(w, e, batch, prec, **kw)
    if c.regime == "approximate" and not c.traced and w.id in A.default_model_ids():
        return replace(c, predicted=thr * units, bound=bound)  # the synthetic-trace twin keeps its regime
    return replace(c, predicted=thr * units, bound=bound, regime=A.regime(w, c.count, bound, traced=c.traced))


def _traced(w: Workload) -> bool:
    from gpuselect.estimate.perf import workload_trace

    return not workload_trace(w, checkpointing=False).source.startswith("APPROXIMATION")


def lambda_cases(catalog) -> list[Case]:  # type: ignore[no-untyped-def]
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    order = {"v2": 0, "v1": 1, "v0": 2}
    with (DATA / "reference_throughput.csv").open(newline="") as fh:
        for r in csv.DictReader(fh):
            key = (r["gpu"], r["model"], r["precision"])
            if key not in rows or order[r["bench_version"]] < order[rows[key]["bench_version"]]:
                rows[key] = r
    out = []
    for (label, model, prec), r in rows.items():
        e = gpu(catalog, label)
        w = _as_run(PRESETS.get(LAMBDA_MODELS.get(model, "")))
        if e is None or w is None:
            continue
        batch = int(float(r["batch_size_per_gpu"]))
        thr, bound, used = predict(w, e, batch, "tf32" if prec == "fp32" else "fp16")
        out.append(
            Case(
                "lambda",
                w.id,
                e.id,
                e.vendor,
                1,
                used,
                batch,
                float(r["throughput_per_gpu_median"]),
                thr * w.throughput_units_per_sample,
                A.regime(w, 1, bound, traced=_traced(w)),
                bound,
                r["bench_version"],
                spec=(w, e, batch, "tf32" if prec == "fp32" else "fp16", {}, w.throughput_units_per_sample),
                traced=_traced(w),
            )
        )
    return out


W = TypeVar("W", Workload, Workload | None)

#: Whether the validation runs the older sources' transformers with eager attention as their code
#: did (benchmarks/llm_breakdown.py switches it off to show what it changes).
EAGER_OLD_SOFTWARE = True


def _attention() -> str:
    return "eager" if EAGER_OLD_SOFTWARE else "fused"


def _as_run(w: W) -> W:
    """A transformer preset as the benchmark's code ran it: DeepLearningExamples' BERT (Lambda's
    and the DLE README's runs) materialises the attention scores (matmul, softmax, dropout,
    matmul) instead of calling a fused kernel."""
    if w is None or w.shape is None or w.shape.attention == _attention():
        return w
    return replace(w, shape=replace(w.shape, attention=_attention()))


def _bert_large(seq: int) -> Workload:
    shape = TransformerShape(
        layers=24,
        hidden=1024,
        heads=16,
        vocab=30522,
        seq_len=seq,
        ffn=4096,
        lm_head=False,
        dropout=True,
        attention=_attention(),
    )
    return transformer_workload(
        f"bert-large-seq{seq}",
        f"BERT-large seq {seq}",
        shape,
        description="",
        dataset_size=1,
        epochs=1,
        batch_size=8,
        source="validation",
    )


def other_cases(catalog) -> list[Case]:  # type: ignore[no-untyped-def]
    out = []
    with (DATA / "other_throughput.csv").open(newline="") as fh:
        for r in csv.DictReader(fh):
            e = gpu(catalog, r["gpu"])
            if e is None:
                continue
            batch = int(float(r["batch_size_per_gpu"]))
            n = int(r["num_gpus"])
            if r["source_dataset"] == "nvidia_dle_readme":
                model = r["model"]
                if model.startswith("bert_large_pretrain_seq"):
                    w = _bert_large(int(model.rsplit("seq", 1)[1]))
                    units = 1.0
                elif model in DLE_MODELS:
                    w = _as_run(PRESETS[DLE_MODELS[model]])
                    units = w.throughput_units_per_sample
                else:
                    continue
                prec = {"tf32": "tf32", "fp32": "fp32", "amp_fp16": "fp16"}[r["precision"]]
                thr, bound, used = predict(w, e, batch, prec, count=n)
                out.append(
                    Case(
                        "dle",
                        w.id,
                        e.id,
                        e.vendor,
                        n,
                        used,
                        batch,
                        float(r["throughput_per_gpu"]),
                        thr * units,
                        A.regime(w, n, bound, traced=_traced(w)),
                        bound,
                        spec=(w, e, batch, prec, {"count": n}, units),
                        traced=_traced(w),
                    )
                )
            elif r["mode"] == "train" and r["model"] in NEUSIGHT:
                h, heads, layers, ffn, vocab, dec = NEUSIGHT[r["model"]]
                shape = TransformerShape(
                    layers=layers,
                    hidden=h,
                    heads=heads,
                    vocab=vocab,
                    seq_len=int(r["seq_len"]),
                    ffn=ffn,
                    lm_head=dec,
                    dropout=True,
                    attention=_attention(),  # Hugging Face's eager attention (NeuSight traces its bmm/softmax ops)
                )
                w = transformer_workload(
                    r["model"],
                    r["model"],
                    shape,
                    description="",
                    dataset_size=1,
                    epochs=1,
                    batch_size=batch,
                    source="validation",
                )
                # NeuSight timed forward + backward without the optimizer step; FP32 without TF32.
                # "MI250 (1 GCD as seen by PyTorch)": one die of the catalog's two-die board (half its
                # compute, memory and power; the host's per-op cost whole).
                e = e.one_die() if "1 GCD" in r["gpu"] else e
                thr, bound, used = predict(w, e, batch, "fp32", optimizer="none")
                out.append(
                    Case(
                        "neusight",
                        w.id,
                        e.id,
                        e.vendor,
                        1,
                        used,
                        batch,
                        float(r["throughput_per_gpu"]),
                        thr,
                        A.regime(w, 1, bound),
                        bound,
                        spec=(w, e, batch, "fp32", {"optimizer": "none"}, 1.0),
                    )
                )
    return out


def foundry_cases(catalog) -> list[Case]:  # type: ignore[no-untyped-def]
    out = []
    with (DATA / "llm_throughput_llm_foundry.csv").open(newline="") as fh:
        for r in csv.DictReader(fh):
            e = gpu(catalog, r["gpu"])
            size = r["model"].split("-", 1)[1].lower()
            if e is None or size not in MPT:
                continue
            d, heads, layers = MPT[size]
            seq = int(r["seq_len"])
            shape = TransformerShape(
                layers=layers, hidden=d, heads=heads, vocab=50368, seq_len=seq, ffn=4 * d, lm_head=True
            )
            w = transformer_workload(
                f"mpt-{size}",
                f"MPT-{size}",
                shape,
                description="",
                dataset_size=1,
                epochs=1,
                batch_size=1,
                source="validation",
            )
            ckpt = "activation checkpointing=True" in r["notes"]
            n = int(r["num_gpus"])
            mb = int(r["micro_batch"])
            prec = "fp8" if "fp8" in r["precision"] else "bf16-true" if "PURE" in r["precision"] else "bf16"
            net = NETWORK_GBS["h100" if e.id.startswith("nvidia-h100") else "a100"]
            # llm-foundry's MPT runs are "FlashAttention-based" (its notes), tables of 2023: before
            # FlashAttention-3 and cuDNN's sm90 kernels, so its H100 rows ran the FA2-class kernel.
            kw = {"count": n, "ckpt": ckpt, "sharding": "fsdp", "network_gbs": net, "fa2": True}
            thr, bound, used = predict(w, e, mb, prec, **kw)  # type: ignore[arg-type]
            peak = (e.fp8_tflops if used == "fp8" else e.bf16_tflops) or e.fp32_tflops
            rule = 0.4 * peak * 1e12 / (6 * w.params)
            out.append(
                Case(
                    "llm-foundry",
                    w.id,
                    e.id,
                    e.vendor,
                    n,
                    used,
                    mb,
                    float(r["tokens_per_s_per_gpu"]),
                    thr * seq,
                    A.regime(w, n, bound),
                    bound,
                    f"seq {seq}{' ckpt' if ckpt else ''}",
                    mfu_rule=rule,
                    spec=(w, e, mb, prec, kw, float(seq)),
                )
            )
    return out


#: Our own training steps on a lent H100 (benchmarks/gpu_steptime.py measure, run c): plain
#: PyTorch, torch 2.11, one GPU. Llama 3.2 1B/3B and 3.1 8B via Hugging Face transformers + peft
#: (tokens/s), and every preset's reference model in tf32 and bf16 (samples/s).
H100_STEPTIME = ROOT / "docs" / "validation" / "h100-2026-11-24" / "steptime" / "run-c.jsonl"
#: The two halves are separate sources: different code (Hugging Face's Llama vs our reference
#: models) and different limits (long GEMM-bound steps vs many short, host-bound ones).
H100_SOURCES = ("h100-llm", "h100-presets")


def h100_steptime_cases(catalog) -> list[Case]:  # type: ignore[no-untyped-def]
    from gpuselect.workloads.presets import get_preset

    e = catalog.get("nvidia-h100-sxm5-80gb")
    out = []
    for line in H100_STEPTIME.read_text().splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("part") not in ("llm", "preset") or "error" in r:
            continue  # the meta line, and configurations that ran out of memory
        w = get_preset(r["workload"])
        ckpt = bool(r.get("ckpt", False))
        llm = r["part"] == "llm"
        units = float(r["seq"]) if llm else 1.0
        measured = r["tokens_per_s"] if llm else r["samples_per_s"]
        thr, bound, used = predict(w, e, r["batch"], r["precision"], ckpt=ckpt)
        out.append(
            Case(
                H100_SOURCES[0] if llm else H100_SOURCES[1],
                w.id,
                e.id,
                "NVIDIA",
                1,
                used,
                r["batch"],
                float(measured),
                thr * units,
                A.regime(w, 1, bound, traced=_traced(w)),
                bound,
                f"{r['precision']}{' ckpt' if ckpt else ''}",
                spec=(w, e, r["batch"], r["precision"], {"ckpt": ckpt}, units),
                traced=_traced(w),
            )
        )
    return out


def small_cases(catalog) -> list[Case]:  # type: ignore[no-untyped-def]
    from gpuselect.estimate.fit import steps as S  # noqa: N812 - short module alias, used as a namespace as in the formulas

    out = []
    e = catalog.get("nvidia-h100-sxm5-80gb")
    trace = S.simple_cnn_trace()
    # The H100 machine as a benchmarked device: its own host (dispatch fitted on this record) and
    # pinned copy rate, not a catalog row's typical host.
    d = replace(A.device_for(e), h2d_gbs=S.h100_h2d_gbs(), dispatch_s=R.params()["host"]["dispatch_us"] * 1e-6)
    for b, t in S.h100_steps():
        st = step_time(trace, d, b, "fp32", optimizer="sgd-momentum")
        out.append(
            Case(
                "h100-simple-cnn",
                "simple-cnn",
                e.id,
                "NVIDIA",
                1,
                "fp32",
                b,
                b / t,
                b / st.seconds,
                "overhead",
                st.bound,
                "in-sample: fits host.dispatch_us and host.step_fixed_us",
            )
        )
    # The bench's transformer curve on the same H100 machine: with the simple CNN's, it fits the
    # host's per-op and per-step costs (fit.steps.fit_dispatch), so it is in sample for them.
    tt = S.bench_transformer_trace()
    for b, t in S.h100_steps("transformer"):
        st = step_time(tt, d, b, "fp32", optimizer="sgd-momentum")
        out.append(
            Case(
                "h100-bench-transformer",
                "bench-transformer",
                e.id,
                "NVIDIA",
                1,
                "fp32",
                b,
                b / t,
                b / st.seconds,
                "overhead" if st.bound == "overhead" else "transformer",
                st.bound,
                "in-sample: fits host.dispatch_us and host.step_fixed_us",
            )
        )
    # The same H100 as a catalog row (what `gpuselect estimate --workload simple-cnn --precision
    # fp32 --batch-size B --gpus nvidia-h100-sxm5-80gb` shows: the typical host, default optimizer).
    w = PRESETS["simple-cnn"]
    for b, t in S.h100_steps():
        thr, bound, _used = predict(w, e, b, "fp32")
        out.append(
            Case(
                "h100-catalog-row",
                "simple-cnn",
                e.id,
                "NVIDIA",
                1,
                "fp32",
                b,
                b / t,
                thr,
                A.regime(w, 1, bound),
                bound,
                "host: this record's per-op and per-step costs x step.dispatch_factor (fitted on the tables)",
                spec=(w, e, b, "fp32", {}, 1.0),
            )
        )
    # The H100 record given as --bench: the device fitted on its own steps of the other bench
    # model (leave one model out), the way the app fits a record.
    rec = S.h100_record()
    out += _lomo_cases(
        "h100-bench-lomo", benchmarked_gpu_device(e, rec, fit_steps=False), rec, e.id, "NVIDIA", S.h100_h2d_gbs()
    )
    for which in ("fit", "validate"):
        for rec, cores, label in S.cpu_records(which):
            src = "cpu-fit" if which == "fit" else "cpu-vm"
            out += _lomo_cases(src, cpu_device(rec, cores=cores, fit_steps=False), rec, label, "cpu", None)
            if which == "fit":  # quiet records: what the CPU does, not what a busy machine left it
                out += _spec_cpu_cases(rec, label)
                out += _anchor_cases(cpu_device(rec, cores=cores, fit_steps=False), rec, label)
    for rec, cores, label in S.cpu_records("quiet-validate"):
        out += _anchor_cases(cpu_device(rec, cores=cores, fit_steps=False), rec, f"cpu-xeon-2026-11-25/{label}")
    return out


def _anchor_cases(d0: Any, rec: dict[str, Any], label: str) -> list[Case]:
    """A benchmarked workload past its measured batches, as the app estimates it
    (``api.local_cpu_estimate``): the model's step at the batch, scaled by measured/model at the
    nearest measured batch. Each model's smallest and largest measured step is left out and
    predicted so from its neighbour, by the device fitted on the record's other steps; their
    errors are the band of such estimates (regime ``cpu_anchored``: quiet records only, a busy
    machine's rows keep ``cpu_unsteady``)."""
    out = []
    steps = bench_step_list(rec)
    for m in sorted({s[0] for s in steps}):
        mine = sorted((b, t) for model, b, t in steps if model == m)
        if len(mine) < 2:
            continue
        for (b, t), (b_edge, t_edge) in ((mine[0], mine[1]), (mine[-1], mine[-2])):
            rest = [s for s in steps if (s[0], s[1]) != (m, b)]
            f = fit_bench_steps(d0, rest)
            d = apply_bench_fit(d0, f) if f is not None else d0
            trace = bench_trace(m, cpu=True)
            st = step_time(trace, d, b, "fp32", optimizer="sgd-momentum").seconds
            st_edge = step_time(trace, d, b_edge, "fp32", optimizer="sgd-momentum").seconds
            pred = b / st * (b_edge / t_edge) / (b_edge / st_edge)
            out.append(
                Case(
                    "cpu-anchor",
                    m.replace("_", "-"),
                    label,
                    "cpu",
                    1,
                    "fp32",
                    b,
                    b / t,
                    pred,
                    "cpu_anchored",
                    "anchored",
                    f"the model's curve from the measured step at batch {b_edge} (fitted on the other steps)",
                )
            )
    return out


def _spec_cpu_cases(rec: dict[str, Any], label: str) -> list[Case]:
    """The same measured steps predicted as the app does with no benchmark: the CPU from what
    `detect` sees of it (cores x clock x FMA FLOP/cycle at the share fitted on the other machines,
    ``perf.cpu_device``);
    their errors are the band of an unmeasured CPU (regime ``cpu_spec``)."""
    from gpuselect.estimate.fit import steps as S  # noqa: N812 - as in small_cases

    cores, mhz, features = S.cpu_facts(label)
    # Leave this machine out: its share of the FMA peak and bandwidth per core from the others'.
    others = [r for r in S.cpu_records("fit") if S.cpu_facts(r[2])[:2] != (cores, mhz)]
    d = cpu_device(None, cores=cores, mhz=mhz, features=features, spec=S.fit_cpu_spec(others)["params"] or None)
    out = []
    for model, b, t in bench_step_list(rec):
        st = step_time(bench_trace(model, cpu=d.kind == "cpu"), d, b, "fp32", optimizer="sgd-momentum")
        out.append(
            Case(
                "cpu-spec",
                model.replace("_", "-"),
                label,
                "cpu",
                1,
                "fp32",
                b,
                b / t,
                b / st.seconds,
                "cpu_spec",
                st.bound,
                f"unmeasured CPU: {cores} cores, {mhz} MHz, from detect; rates fitted on the other machine(s)",
            )
        )
    return out


def _lomo_cases(source: str, d0: Any, rec: dict[str, Any], label: str, vendor: str, h2d: float | None) -> list[Case]:
    """Each bench model's steps predicted by the device fitted on the record's other model's steps
    (``perf.fit_bench_steps``); a record with one model only: the unfitted device."""
    out = []
    steps = bench_step_list(rec)
    # A CPU record whose own fit misses its steps (a busy machine) has its own band, as in the app.
    whole = fit_bench_steps(d0, steps, h2d_gbs=h2d)
    cpu_regime = "cpu_unsteady" if whole is None or whole.unsteady else "cpu"
    for m in sorted({s[0] for s in steps}):
        f = fit_bench_steps(d0, [s for s in steps if s[0] != m], h2d_gbs=h2d)
        d = apply_bench_fit(d0, f) if f is not None else d0
        if h2d:
            d = replace(d, h2d_gbs=h2d)
        for model, b, t in steps:
            if model != m:
                continue
            st = step_time(bench_trace(model, cpu=d.kind == "cpu"), d, b, "fp32", optimizer="sgd-momentum")
            out.append(
                Case(
                    source,
                    model.replace("_", "-"),
                    label,
                    vendor,
                    1,
                    "fp32",
                    b,
                    b / t,
                    b / st.seconds,
                    cpu_regime
                    if d0.kind == "cpu"
                    else "overhead"
                    if st.bound == "overhead"
                    else "transformer"
                    if model == "transformer"
                    else "cnn",
                    st.bound,
                    "leave-one-model-out fit" if f is not None else "unfitted (one model in the record)",
                )
            )
    return out


FACTORS = {
    "gemm_factor": [0.5 + 0.05 * i for i in range(11)],
    "gemm_factor_multi": [0.5 + 0.05 * i for i in range(11)],
    "mem_factor": [0.2 + 0.1 * i for i in range(9)],
    "dispatch_factor": [0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.25],
    "fsdp_overlap": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
}


def set_params(doc: dict) -> None:  # type: ignore[type-arg]
    R._PARAMS = R.Params(doc)
    R._COMPILED.clear()
    A._DEVICES.clear()


def loss(cases: list[Case]) -> float:
    """Mean |log error| per source, averaged over the sources: each source (a software stack on
    its own machines) weighs the same, so Lambda's 442 rows do not alone decide a factor such as
    the host's, which our own H100 record measures too."""
    by: dict[str, list[float]] = {}
    for c in cases:
        by.setdefault(c.source, []).append(abs(redo(c).log_err))
    return statistics.fmean(statistics.fmean(v) for v in by.values())


#: Where every fit starts, so that its result does not depend on the committed parameters.
START = {"gemm_factor": 1.0, "gemm_factor_multi": 1.0, "mem_factor": 1.0, "dispatch_factor": 1.0, "fsdp_overlap": 0.9}
#: Fitted on the multi-GPU cases alone: they change nothing else.
MULTI_ONLY = ("gemm_factor_multi", "fsdp_overlap")
#: Searched together: a slower GEMM and a slower elementwise kernel both lengthen a step, so one
#: at a time the search stops on the ridge between them wherever it started.
JOINT = ("gemm_factor", "mem_factor")


def fit_step(doc: dict, train: list[Case], rounds: int = 2) -> dict:  # type: ignore[type-arg]
    """Coordinate descent over the step factors on ``train`` (mean |log error|), the GEMM and
    elementwise factors on their joint grid, from the fixed ``START``."""
    doc = json.loads(json.dumps(doc))
    doc.setdefault("step", {})
    doc.setdefault("comm", {})
    for name, v in START.items():
        doc["comm" if name == "fsdp_overlap" else "step"][name] = v
    multi = [c for c in train if c.count > 1] or train
    for _ in range(rounds):
        best_pair = None
        for g in FACTORS[JOINT[0]]:
            for m in FACTORS[JOINT[1]]:
                doc["step"][JOINT[0]], doc["step"][JOINT[1]] = round(g, 4), round(m, 4)
                set_params(doc)
                l_ = loss(train)
                if best_pair is None or l_ < best_pair[0]:
                    best_pair = (l_, g, m)
        if best_pair is None:
            raise RuntimeError("internal error: best_pair is unset")
        doc["step"][JOINT[0]], doc["step"][JOINT[1]] = round(best_pair[1], 4), round(best_pair[2], 4)
        for name, grid in FACTORS.items():
            if name in JOINT:
                continue
            sect = "comm" if name == "fsdp_overlap" else "step"
            sub = multi if name in MULTI_ONLY else train
            best = None
            # START first, kept on ties: a factor the training cases do not constrain (the host
            # factor, fitted without Lambda's host-bound rows) stays at its physical default (1:
            # the H100 machine's own per-op cost) instead of the grid's first value.
            for v in sorted(grid, key=lambda x: x != START[name]):
                doc[sect][name] = round(v, 4)
                set_params(doc)
                l_ = loss(sub)
                if best is None or l_ < best[0] - 1e-6:
                    best = (l_, v)
            if best is None:
                raise RuntimeError("internal error: best is unset")
            doc[sect][name] = round(best[1], 4)
    set_params(doc)
    return doc


def crossover(catalog) -> list[str]:  # type: ignore[no-untyped-def]
    """Where a GPU starts to beat the CPU on the simple CNN: measured (the H100 record against each
    CPU record) and predicted, as the app does it: each CPU record's device fitted on its own
    steps, against the H100 fitted on its own record (``--bench``) and against the H100's catalog
    row (no benchmark: the typical host)."""
    from gpuselect.estimate.fit import steps as S  # noqa: N812 - short module alias, used as a namespace as in the formulas

    out = ["\n## GPU/CPU crossover (simple CNN, samples/s; the first batch of 1, 2, 4 ... 512 where the GPU is faster)"]
    e = catalog.get("nvidia-h100-sxm5-80gb")
    trace = bench_trace("simple_cnn")
    rec = S.h100_record()
    gpus = {
        "H100 record (--bench)": replace(benchmarked_gpu_device(e, rec), h2d_gbs=S.h100_h2d_gbs()),
        "H100 catalog row": A.device_for(e),
    }
    gpu_meas = {b: b / t for b, t in S.h100_steps()}
    batches = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

    def thr(d: Any, b: int) -> float:
        return b / step_time(trace, d, b, "fp32", optimizer="sgd-momentum").seconds

    for which in ("fit", "validate"):
        for crec, cores, label in S.cpu_records(which):
            cpu = cpu_device(crec, cores=cores)
            meas = {s["batch_size"]: s["samples_per_s"] for s in crec["train_steps"] if s["model"] == "simple_cnn"}
            both = sorted(set(meas) & set(gpu_meas))
            meas_cross = next((b for b in both if gpu_meas[b] > meas[b]), None)
            preds = "; ".join(
                f"{name}: batch {next((b for b in batches if thr(g, b) > thr(cpu, b)), None)} "
                f"(batch 1: GPU {thr(g, 1):.0f}, CPU {thr(cpu, 1):.0f})"
                for name, g in gpus.items()
            )
            out.append(
                f"{label} ({cores} cores, {'quiet' if which == 'fit' else 'loaded'}): measured at batches {both}: "
                f"the GPU is faster from batch {meas_cross} (batch 1: GPU {gpu_meas.get(1, float('nan')):.0f}, "
                f"CPU {meas.get(1, float('nan')):.0f}); predicted: {preds}"
            )
    return out


def stats(cases: list[Case]) -> tuple[float, float, float]:
    """(median, p90 of |relative error|, band covering 80 % on the log scale)."""
    rel = sorted(abs(c.predicted / c.measured - 1) for c in cases)
    logs = sorted(abs(c.log_err) for c in cases)

    def q(xs: list[float], p: float) -> float:
        return xs[min(len(xs) - 1, math.ceil(p * len(xs)) - 1)]

    return statistics.median(rel), q(rel, 0.9), math.exp(q(logs, 0.8)) - 1


def table(cases: list[Case], key, title: str) -> list[str]:  # type: ignore[no-untyped-def]
    groups: dict[str, list[Case]] = {}
    for c in cases:
        groups.setdefault(key(c), []).append(c)
    lines = [f"\n## {title}", f"{'group':42s} {'n':>4s} {'median':>8s} {'p90':>8s} {'80%band':>8s} {'bias':>8s}"]
    for k in sorted(groups):
        g = groups[k]
        med, p90, band = stats(g)
        bias = math.exp(statistics.median(c.log_err for c in g)) - 1
        lines.append(f"{k:42s} {len(g):4d} {100 * med:7.1f}% {100 * p90:7.1f}% {100 * band:7.1f}% {100 * bias:+7.1f}%")
    return lines


#: The sources the step factors are fitted on, each left out in turn.
FIT_SOURCES = ("lambda", "dle", "neusight", "llm-foundry", "h100-catalog-row", *H100_SOURCES)


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "steptime-2026-11-23"))
    ap.add_argument("--no-bands", action="store_true", help="do not rewrite the app's band file")
    ap.add_argument(
        "--fit", action="store_true", help="refit the step factors (and write them to data/steptime.json) first"
    )
    args = ap.parse_args()
    catalog = load_catalog()
    cases = (
        lambda_cases(catalog)
        + other_cases(catalog)
        + foundry_cases(catalog)
        + small_cases(catalog)
        + h100_steptime_cases(catalog)
    )
    # The synthetic-trace approximation, validated on the reference models (whose rows use the
    # per-model calibration instead): the "approximate" regime's cases.
    twins = []
    for c in cases:
        if c.regime == "reference" and c.spec is not None:
            w, e, batch, prec, kw, units = c.spec
            thr, bound, _u = predict(w, e, batch, prec, calibrated=False, **kw)
            twins.append(
                replace(
                    c,
                    source=c.source + "-synthetic",
                    predicted=thr * units,
                    bound=bound,
                    regime="approximate",
                    spec=(w, e, batch, prec, {**kw, "calibrated": False}, units),
                )
            )
    cases += twins
    bad = [c for c in cases if not (c.measured > 0 and c.predicted > 0)]
    for c in bad:
        print(
            f"skipped (no measurement or prediction): {c.source} {c.workload} {c.gpu} batch {c.batch}", file=sys.stderr
        )
    cases = [c for c in cases if c.measured > 0 and c.predicted > 0]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fit_lines: list[str] = []
    base = json.loads(R.PARAMS_FILE.read_text())
    fittable = [c for c in cases if c.spec is not None and c.traced and c.source in FIT_SOURCES]
    if args.fit:
        # Leave one source out: fit the step factors on the other sources, predict this one.
        loso: list[Case] = []
        for src in FIT_SOURCES:
            doc = fit_step(base, [c for c in fittable if c.source != src])
            fit_lines.append(f"without {src}: step {doc['step']} comm {doc['comm']}")
            loso += [
                replace(redo(c), source=c.source + " (LOSO)")
                for c in cases
                if c.source.removesuffix("-synthetic") == src and c.spec is not None
            ]
        doc = fit_step(base, fittable)
        fit_lines.append(f"all sources ({len(fittable)} traced cases): step {doc['step']} comm {doc['comm']}")
        R.PARAMS_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        cases = [redo(c) if c.spec is not None else c for c in cases] + loso
        print("\n".join(fit_lines))
    # Out-of-sample view: the LOSO predictions where they exist, the rest as they are.
    oos = [c for c in cases if "(LOSO)" in c.source] or [c for c in cases if c.spec is not None]
    # The catalog-row cases belong to no throughput source: the factors fitted on all of them.
    oos = [replace(c, source=c.source.replace(" (LOSO)", "")) for c in oos] + [c for c in cases if c.spec is None]
    # Lambda rows of reference models without a traced step are predicted by the per-model
    # calibration fitted on Lambda itself: in-sample, so not in the out-of-sample view.
    oos = [c for c in oos if not (c.source == "lambda" and c.regime == "reference")]
    with (out / "cases.csv").open("w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(
            [
                "source",
                "workload",
                "gpu",
                "count",
                "precision",
                "batch",
                "measured",
                "predicted",
                "rel_err",
                "regime",
                "bound",
                "mfu_rule",
                "note",
            ]
        )
        for c in cases:
            wr.writerow(
                [
                    c.source,
                    c.workload,
                    c.gpu,
                    c.count,
                    c.precision,
                    c.batch,
                    f"{c.measured:.7g}",
                    f"{c.predicted:.7g}",
                    f"{c.predicted / c.measured - 1:+.3f}",
                    c.regime,
                    c.bound,
                    "" if c.mfu_rule is None else f"{c.mfu_rule:.4g}",
                    c.note,
                ]
            )
    lines = [
        "# Step-time estimator validation (benchmarks/estimator_validation.py)",
        *fit_lines,
        (
            "relative error = predicted/measured - 1; '80%band' = the +-band (log-symmetric) covering 80 % of the group; "
            "bias = median predicted/measured - 1"
        ),
    ]
    lines += table(cases, lambda c: c.source, "By source (leave-one-source-out: no throughput source is fitted)")
    lines.append(
        "\nBelow: out-of-sample predictions (each source's rows predicted with the step factors fitted on the "
        "other sources, when --fit ran). Lambda rows of the 'reference' regime (untraced reference models, "
        "predicted by the per-model calibration fitted on Lambda) are left out as in-sample; their "
        "leave-one-GPU-out figures are in docs/accuracy-per-model.md (benchmarks/estimator_accuracy.py)."
    )
    lines += table(
        [c for c in oos if c.source in ("lambda", "dle", "neusight")],
        lambda c: f"{c.source}/{c.workload}",
        "By workload (leave-one-workload-out: no per-workload parameter exists)",
    )
    lines += table(
        [c for c in oos if c.source in ("lambda", "dle", "neusight", "llm-foundry")],
        lambda c: c.gpu,
        "By GPU (leave-one-GPU-out: no per-GPU parameter is fitted on throughput; kernel efficiencies are per architecture)",
    )
    lines += table(
        [c for c in oos if c.traced and c.source in ("lambda", "dle", "neusight", "llm-foundry")],
        lambda c: c.gpu,
        "By GPU, traced workloads only (the physics without the synthetic-trace approximation)",
    )
    lines += table(oos, lambda c: c.regime, "By regime (the app's bands)")
    lines += table([c for c in oos if c.source != "cpu-fit"], lambda c: c.vendor, "By vendor")
    fd = [c for c in oos if c.source == "llm-foundry"]
    if fd:
        rule = [replace(c, predicted=c.mfu_rule or c.predicted) for c in fd]
        lines += table(
            fd, lambda c: f"micro-batch {'<=2' if c.batch <= 2 else '>2'} / {c.precision}", "llm-foundry: this model"
        )
        lines += table(
            rule,
            lambda c: f"micro-batch {'<=2' if c.batch <= 2 else '>2'} / {c.precision}",
            "llm-foundry: constant-MFU rule (6N FLOPs/token at 40 % of peak)",
        )
        m1, p1, _ = stats(fd)
        m2, p2, _ = stats(rule)
        lines.append(
            f"\nllm-foundry per-GPU tokens/s: model median {100 * m1:.1f} % p90 {100 * p1:.1f} %; "
            f"constant-MFU rule median {100 * m2:.1f} % p90 {100 * p2:.1f} % ({len(fd)} rows)"
        )
    small = [
        c
        for c in cases
        if c.source
        in (
            "h100-simple-cnn",
            "h100-catalog-row",
            "h100-bench-transformer",
            "h100-bench-lomo",
            "cpu-vm",
            "cpu-fit",
            "cpu-anchor",
        )
    ]
    lines.append("\n## Small-model curves (the bench's simple CNN and transformer)")
    for c in small:
        lines.append(
            f"{c.source:22s} {c.workload:17s} {c.gpu[:22]:22s} batch {c.batch:4d}: measured {c.measured:10.1f} predicted {c.predicted:10.1f} "
            f"samples/s ({100 * (c.predicted / c.measured - 1):+.0f} %, {c.bound}) {c.note}"
        )
    lines += crossover(catalog)
    text = "\n".join(lines) + "\n"
    (out / "summary.txt").write_text(text)
    print(text)
    if not args.no_bands:
        cases = oos  # bands from out-of-sample errors
        regimes: dict[str, float] = {}
        for reg in sorted({c.regime for c in cases}):
            regimes[reg] = round(
                stats(
                    [c for c in cases if c.regime == reg and c.vendor != "AMD"] or [c for c in cases if c.regime == reg]
                )[2],
                4,
            )
        nv = [c for c in cases if c.vendor == "NVIDIA" and c.source not in ("cpu-fit",)]
        regimes["all"] = round(stats(nv)[2], 4)
        amd = [c for c in cases if c.vendor == "AMD"]
        amd_extra = 1.0
        if amd:
            # The AMD band, compounded on top of the regime's: the extra needed to cover 80 % of AMD cases.
            amd_all = stats(amd)[2]
            amd_extra = round(max(0.0, (1 + amd_all) / (1 + regimes["all"]) - 1), 4)
        BANDS.write_text(
            json.dumps(
                {
                    "_source": "benchmarks/estimator_validation.py: +-band covering 80 % of each regime's "
                    "validation cases (log-symmetric); AMD cards compound amd_extra",
                    "regimes": regimes,
                    "amd_extra": amd_extra,
                    "cases": {r: sum(1 for c in cases if c.regime == r) for r in regimes},
                },
                indent=1,
            )
            + "\n"
        )
        print(f"wrote {BANDS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
