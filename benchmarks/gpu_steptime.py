"""Train the presets and Llama shapes on a CUDA GPU as a user would in plain PyTorch, and set the
measured step rate and peak memory beside what `gpuselect estimate` predicts for that card.

measure (needs CUDA; on the device machine, from the source tree; transformers + peft for --part llm):

    PYTHONPATH=. python3 benchmarks/gpu_steptime.py measure --out DIR [--part presets|llm|all]

compare (no GPU needed; the estimator in process):

    PYTHONPATH=. python benchmarks/gpu_steptime.py compare DIR/steptime-gpu.jsonl \
        --gpu nvidia-h100-sxm5-80gb > DIR/compare.txt

What one step is: the batch copied host->device from pinned memory, forward, loss, backward,
optimizer step, zero_grad, exactly as `bench`'s training steps and the estimator's step count it.
Presets: the reference models the traces come from (gpuselect/workloads/reference_models.py and
trace_build/approx_models.py), AdamW (the estimator's default optimizer), eager mode, cudnn.benchmark
off (torch's default), at batch 1, 32 and the preset's default, in tf32 (fp32 weights, TF32 matmuls)
and bf16 (autocast over fp32 weights). Llama: Hugging Face transformers' LlamaForCausalLM built from
the preset's shape with random weights (SDPA attention, labels = input ids, 2,048 tokens), fused AdamW;
LoRA through peft (rank 16, alpha 32, dropout 0.05 on q/k/v/o/gate/up/down, as the presets assume).
Each configuration: 3 warm-up steps, then as many steps as fill --budget-s (at least 5) timed with
one synchronisation at the end. A configuration that runs out of memory is recorded as such.
Records are appended to DIR/steptime-gpu.jsonl as they finish, so a run cut short keeps what it did.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Llama configurations: (size, mode, precision, micro-batches, checkpointing).
LLM_RUNS: tuple[tuple[str, str, str, tuple[int, ...], bool], ...] = (
    ("1b", "full", "bf16-true", (1, 2, 4, 8), False),
    ("1b", "full", "bf16", (1, 4), False),
    ("1b", "lora", "bf16-true", (1, 4), False),
    ("3b", "full", "bf16-true", (1, 2, 4), False),
    ("3b", "full", "bf16-true", (4,), True),
    ("8b", "lora", "bf16-true", (1, 2, 4), False),
    ("8b", "lora", "bf16-true", (4, 8), True),
    ("8b", "full", "bf16-true", (1,), True),
)
PRESET_PRECISIONS = ("tf32", "bf16")
# --smoke: a few tiny configurations on the CPU, to check the script itself before a GPU run.
SMOKE = False
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


# ---------------------------------------------------------------------------------------------- measure
def _dev() -> str:
    return "cpu" if SMOKE else "cuda"


def _sync() -> None:
    import torch

    if not SMOKE:
        torch.cuda.synchronize()


def _pinned(t: Any) -> Any:
    return t if SMOKE else t.pin_memory()


def _peaks() -> dict[str, float]:
    import torch

    if SMOKE:
        return {"peak_alloc_gib": 0.0, "peak_reserved_gib": 0.0}
    return {
        "peak_alloc_gib": torch.cuda.max_memory_allocated() / 2**30,
        "peak_reserved_gib": torch.cuda.max_memory_reserved() / 2**30,
    }


def _time(step: Any, budget_s: float) -> tuple[float, int]:
    for _ in range(3):
        step()
    _sync()
    t0 = time.perf_counter()
    step()
    _sync()
    one = max(time.perf_counter() - t0, 1e-6)
    n = int(min(max(budget_s / one, 5), 5000))
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    _sync()
    return (time.perf_counter() - t0) / n, n


def _measure(step: Any, budget_s: float, batch: int, seq: int | None = None) -> dict[str, Any]:
    """A configuration's record: seconds per step, steps timed, rates and peak memory."""
    step_s, n = _time(step, budget_s)
    rec: dict[str, Any] = {"step_s": step_s, "steps_timed": n, "samples_per_s": batch / step_s}
    if seq is not None:
        rec["tokens_per_s"] = batch * seq / step_s
    return {**rec, **_peaks()}


def _is_oom(e: BaseException) -> bool:
    return "out of memory" in str(e).lower() or type(e).__name__ == "OutOfMemoryError"


def _free() -> None:
    import torch

    gc.collect()
    if not SMOKE:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _emit(fh: Any, rec: dict[str, Any]) -> None:
    fh.write(json.dumps(rec) + "\n")
    fh.flush()
    print(json.dumps(rec), flush=True)


def measure_presets(fh: Any, budget_s: float, only: list[str]) -> None:
    import torch
    import torch.nn.functional as F

    from gpuselect.workloads import reference_models as rm
    from gpuselect.workloads.presets import get_preset
    from gpuselect.workloads.trace_build.__main__ import _FUSED, _LOSS
    from gpuselect.workloads.trace_build.approx_models import APPROX

    dev = torch.device(_dev())
    cases: dict[str, tuple[Any, tuple[int, ...], Any, str]] = {}
    for pid, (factory, shape, dtype) in rm.REFERENCE.items():
        f = functools.partial(factory, fused=True) if pid in _FUSED else factory
        cases[pid] = (f, shape, dtype, _LOSS.get(pid, ("ce", 1))[0])
    for pid, (cls, shape, dtype, loss, _labels, _what) in APPROX.items():
        cases[pid] = (cls, shape, dtype, loss)
    for pid, (factory, shape, dtype, loss) in cases.items():
        if only and pid not in only:
            continue
        default = get_preset(pid).default_batch_size
        for prec in PRESET_PRECISIONS:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            for batch in (1, 2) if SMOKE else sorted({1, 32, default}):
                rec: dict[str, Any] = {"part": "preset", "workload": pid, "precision": prec, "batch": batch}
                # The last configuration's step closure holds its model and optimizer: drop it before
                # the peak counters are reset, or its memory is counted in this configuration's peak.
                step = None
                model = opt = None
                try:
                    _free()
                    torch.manual_seed(0)
                    with torch.device(dev):
                        model = factory()
                    model.train()
                    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
                    if dtype.is_floating_point:
                        x_host = _pinned(torch.randn((batch, *shape), dtype=dtype))
                    else:
                        x_host = _pinned(torch.zeros((batch, *shape), dtype=dtype))
                    target: list[Any] = []

                    def step(
                        model: Any = model,
                        opt: Any = opt,
                        x_host: Any = x_host,
                        target: list[Any] = target,
                        prec: str = prec,
                        loss: str = loss,
                    ) -> None:
                        x = x_host.to(dev, non_blocking=True)
                        with torch.autocast(_dev(), torch.bfloat16, enabled=prec == "bf16"):
                            out = model(x)
                            if isinstance(out, (tuple, list)):
                                out = out[0]
                            if loss == "ce":
                                logits = out.reshape(-1, out.shape[-1])
                                if not target:
                                    target.append(torch.zeros(logits.shape[0], dtype=torch.long, device=dev))
                                value = F.cross_entropy(logits, target[0])
                            elif loss == "bce":
                                value = F.binary_cross_entropy_with_logits(out, torch.zeros_like(out))
                            elif loss == "mse":
                                value = F.mse_loss(out, torch.zeros_like(out))
                            else:
                                value = out.sum() if out.dim() else out
                        value.backward()
                        opt.step()
                        opt.zero_grad(set_to_none=True)

                    rec.update(_measure(step, budget_s, batch))
                except Exception as e:  # noqa: BLE001 - one bad configuration must not end the run
                    rec.update(oom=_is_oom(e), error=f"{type(e).__name__}: {str(e)[:300]}")
                del model, opt
                _emit(fh, rec)


def _llama(size: str, mode: str, precision: str, ckpt: bool, lora_dropout: float) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from gpuselect.workloads.presets import PRESETS

    s = PRESETS[f"llama-{size}-full"].shape
    assert s is not None
    if SMOKE:
        from dataclasses import replace

        s = replace(s, layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=512, seq_len=32)
    cfg = LlamaConfig(
        vocab_size=s.vocab,
        hidden_size=s.hidden,
        intermediate_size=s.ffn,
        num_hidden_layers=s.layers,
        num_attention_heads=s.heads,
        num_key_value_heads=s.kv_heads,
        max_position_embeddings=max(s.seq_len, 8192),
        tie_word_embeddings=s.tied_embeddings,
        rope_theta=500_000.0,
        attn_implementation="sdpa",
        use_cache=False,
    )
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32 if precision == "bf16" else torch.bfloat16)
    try:
        with torch.device(_dev()):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if mode == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(
                r=16, lora_alpha=32, lora_dropout=lora_dropout, target_modules=LORA_TARGETS, task_type="CAUSAL_LM"
            ),
        )
    model.train()
    return model, s.seq_len, s.vocab


def measure_llm(fh: Any, budget_s: float, only: list[str], lora_dropout: float) -> None:
    import torch

    for size, mode, precision, mbs, ckpt in LLM_RUNS:
        if only and f"{size}-{mode}" not in only:
            continue
        step = None  # the last run's closure holds its model: free it before this one is built
        model = opt = None
        try:
            _free()
            torch.manual_seed(0)
            t0 = time.perf_counter()
            model, seq, vocab = _llama(size, mode, precision, ckpt, lora_dropout)
            build_s = time.perf_counter() - t0
            trainable = [p for p in model.parameters() if p.requires_grad]
            opt = torch.optim.AdamW(trainable, lr=1e-5, fused=not SMOKE)
        except Exception as e:  # noqa: BLE001
            for mb in mbs:
                _emit(
                    fh,
                    {
                        "part": "llm",
                        "workload": f"llama-{size}-{mode}",
                        "precision": precision,
                        "batch": mb,
                        "ckpt": ckpt,
                        "oom": _is_oom(e),
                        "error": f"build: {type(e).__name__}: {str(e)[:300]}",
                    },
                )
            del model, opt
            continue
        for mb in mbs[:1] if SMOKE else mbs:
            rec: dict[str, Any] = {
                "part": "llm",
                "workload": f"llama-{size}-{mode}",
                "precision": precision,
                "batch": mb,
                "ckpt": ckpt,
                "seq": seq,
                "build_s": round(build_s, 1),
                "trainable": sum(p.numel() for p in trainable),
            }
            if mode == "lora":
                rec["lora_dropout"] = lora_dropout
            try:
                opt.zero_grad(set_to_none=True)
                _free()
                if not SMOKE:  # weights (+ optimizer state after the first configuration) before the step
                    rec["alloc_before_gib"] = torch.cuda.memory_allocated() / 2**30
                ids_host = _pinned(torch.randint(0, vocab, (mb, seq)))

                def step(
                    model: Any = model, opt: Any = opt, ids_host: Any = ids_host, precision: str = precision
                ) -> None:
                    ids = ids_host.to(_dev(), non_blocking=True)
                    with torch.autocast(_dev(), torch.bfloat16, enabled=precision == "bf16"):
                        out = model(input_ids=ids, labels=ids)
                    out.loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)

                rec.update(_measure(step, budget_s, mb, seq))
            except Exception as e:  # noqa: BLE001
                rec.update(oom=_is_oom(e), error=f"{type(e).__name__}: {str(e)[:300]}")
            _emit(fh, rec)
        step = None
        del model, opt, trainable


def cmd_measure(args: argparse.Namespace) -> int:
    import torch

    global SMOKE
    SMOKE = args.smoke
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not SMOKE and not torch.cuda.is_available():
        print("no CUDA device: measure needs one", file=sys.stderr)
        return 2
    with open(out / "steptime-gpu.jsonl", "a") as fh:
        _emit(
            fh,
            {
                "part": "meta",
                "gpu": "cpu (smoke)" if SMOKE else torch.cuda.get_device_name(0),
                "torch": torch.__version__,
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "budget_s": args.budget_s,
            },
        )
        if args.part in ("presets", "all"):
            measure_presets(fh, args.budget_s, args.only)
        if args.part in ("llm", "all"):
            measure_llm(fh, args.budget_s, args.llm_only, args.lora_dropout)
    return 0


# ---------------------------------------------------------------------------------------------- compare
def _pct(pred: float, meas: float) -> float:
    return 100.0 * (pred / meas - 1.0)


def cmd_compare(args: argparse.Namespace) -> int:
    from gpuselect.catalog import load_catalog
    from gpuselect.errors import UsageError
    from gpuselect.estimate import api as A
    from gpuselect.workloads.presets import get_preset

    catalog = load_catalog()
    recs = [json.loads(line) for line in Path(args.jsonl).read_text().splitlines() if line.strip()]
    meta = next((r for r in recs if r["part"] == "meta"), {})
    print(
        f"# Measured on {meta.get('gpu')} (torch {meta.get('torch')}, {meta.get('date')}) vs "
        f"`gpuselect estimate --gpus {args.gpu} --count 1 --loss {args.loss}` (benchmarks/gpu_steptime.py)"
    )
    print(
        "err = predicted / measured - 1; mem: the estimate's peak (what nvidia-smi shows) vs torch's peak "
        "reserved + the CUDA context (0.75 GiB measured by memory_gpu_measure.py)\n"
    )
    errs: dict[str, list[float]] = {}
    mem_errs: dict[str, list[float]] = {}
    inband: dict[str, list[bool]] = {}
    print(
        f"{'workload':20s} {'prec':9s} {'b':>3s} {'ck':2s} {'measured/s':>11s} {'predicted/s':>11s} {'err':>7s} "
        f"{'bound':9s} {'band':>9s} {'meas GiB':>8s} {'pred GiB':>8s} {'err':>6s}  note"
    )
    for r in recs:
        if r["part"] == "meta":
            continue
        w = get_preset(r["workload"])
        ckpt = r.get("ckpt", False)
        a = A.Assumptions(
            precision=r["precision"],
            batch_size=r["batch"],
            counts=(1,),
            optimizer="adamw",
            checkpointing="full" if ckpt else "none",
            loss=args.loss,
        )
        try:
            res = A.estimate(w, a, catalog, gpu_ids=[args.gpu], local=[])
            row = res.rows[0] if res.rows else None
        except UsageError as e:  # e.g. NCF's default batch of 2^20 is past --batch-size's range
            print(f"{w.public_id:20s} {r['precision']:9s} {r['batch']:3d}  the estimate refuses it: {e}")
            continue
        unit = "tok" if r["part"] == "llm" else "smp"
        meas = r.get("tokens_per_s") if unit == "tok" else r.get("samples_per_s")
        pred = None
        if row is not None and row.fits:
            pred = row.tokens_per_s if unit == "tok" else row.throughput_samples_per_s
        pred_mem = row.peak_memory_gb if row is not None else None
        meas_mem = r["peak_reserved_gib"] + 0.75 if "peak_reserved_gib" in r else None
        note = ""
        if "error" in r:
            note = "OOM measured" if r.get("oom") else r["error"][:60]
            if row is not None:
                note += "; predicted " + ("fits" if row.fits else "does not fit")
        e = _pct(pred, meas) if pred and meas else None
        me = _pct(pred_mem, meas_mem) if pred_mem and meas_mem else None
        group = "llm" if r["part"] == "llm" else ("preset b1" if r["batch"] == 1 else "preset b>1")
        band = ""
        if e is not None and row is not None:
            errs.setdefault(group, []).append(e)
            # The row's band is log-symmetric (fit/throughput.py stats): it covers the measurement
            # when |log(predicted / measured)| <= log(1 + band).
            ok = abs(math.log(pred / meas)) <= math.log1p(row.error_band)  # type: ignore[operator]
            inband.setdefault(group, []).append(ok)
            band = f"±{100 * row.error_band:.0f}% {'in' if ok else 'OUT'}"
        if me is not None:
            mem_errs.setdefault("llm" if r["part"] == "llm" else "preset", []).append(me)
        print(
            f"{w.public_id:20s} {r['precision']:9s} {r['batch']:3d} {'y' if ckpt else '-':2s} "
            f"{(f'{meas:,.0f} {unit}') if meas else '—':>11s} {(f'{pred:,.0f} {unit}') if pred else '—':>11s} "
            f"{(f'{e:+.0f}%') if e is not None else '':>7s} {(row.bound or '') if row else '':9s} {band:>9s} "
            f"{(f'{meas_mem:.2f}') if meas_mem else '—':>8s} {(f'{pred_mem:.2f}') if pred_mem else '—':>8s} "
            f"{(f'{me:+.0f}%') if me is not None else '':>6s}  {note}"
        )
    print("\n## Summary: |err| median / p90 / worst, and how many within 2x")
    for name, d in (("throughput", errs), ("peak memory", mem_errs)):
        for g, v in sorted(d.items()):
            a = sorted(abs(x) for x in v)
            p90 = a[min(len(a) - 1, int(0.9 * len(a)))]
            within2 = sum(1 for x in v if 0.5 <= 1 + x / 100 <= 2.0)
            print(
                f"{name:11s} {g:11s} n={len(v):3d}  median {statistics.median(a):5.1f} %  p90 {p90:6.1f} %  "
                f"worst {a[-1]:6.1f} %  within 2x {within2}/{len(v)}  signed median {statistics.median(v):+.1f} %"
                + (f"  in the row's band {sum(inband[g])}/{len(inband[g])}" if name == "throughput" else "")
            )
    return 0


def cmd_repeat(args: argparse.Namespace) -> int:
    """The same configurations measured in two runs (each on a freshly started machine): how far
    apart they land, the noise any accuracy figure from one run carries."""

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["workload"], r["precision"], r["batch"], r.get("ckpt", False))  # (give runs of one lora_dropout)

    def rate(r: dict[str, Any]) -> float | None:
        return r.get("tokens_per_s") or r.get("samples_per_s")

    a = {key(r): r for r in map(json.loads, Path(args.a).read_text().splitlines()) if r["part"] != "meta"}
    b = {key(r): r for f in args.b for r in map(json.loads, Path(f).read_text().splitlines()) if r["part"] != "meta"}
    names = " + ".join(Path(f).name for f in args.b)
    print(f"# Run to run: {names} / {Path(args.a).name} - 1 (benchmarks/gpu_steptime.py repeat)")
    diffs: list[float] = []
    for k, ra in a.items():
        rb = b.get(k)
        if rb is None or not rate(ra) or not rate(rb):
            continue
        d = 100.0 * (rate(rb) / rate(ra) - 1.0)
        diffs.append(d)
        print(
            f"{k[0]:20s} {k[1]:9s} {k[2]:3d} {'y' if k[3] else '-'}  {rate(ra):12,.1f} {rate(rb):12,.1f}  {d:+6.1f} %"
        )
    if diffs:
        ad = sorted(abs(x) for x in diffs)
        print(
            f"\nn={len(diffs)}  |diff| median {statistics.median(ad):.1f} %  p90 {ad[min(len(ad) - 1, int(0.9 * len(ad)))]:.1f} %"
            f"  worst {ad[-1]:.1f} %"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", allow_abbrev=False)
    m.add_argument("--out", required=True)
    m.add_argument("--part", choices=("presets", "llm", "all"), default="all")
    m.add_argument("--budget-s", type=float, default=1.0, help="seconds of timed steps per configuration")
    m.add_argument("--only", nargs="*", default=[], help="preset ids (default: every preset with a model)")
    m.add_argument("--llm-only", nargs="*", default=[], help="Llama runs by size-mode, e.g. 8b-lora (default: all)")
    m.add_argument("--lora-dropout", type=float, default=0.05, help="peft's lora_dropout (default 0.05)")
    m.add_argument("--smoke", action="store_true", help="tiny configurations on the CPU: checks the script only")
    c = sub.add_parser("compare", allow_abbrev=False)
    c.add_argument("jsonl")
    c.add_argument("--gpu", default="nvidia-h100-sxm5-80gb")
    c.add_argument(
        "--loss",
        choices=("chunked", "plain"),
        default="chunked",
        help="the estimate's --loss (these runs compute a plain cross-entropy, as Hugging Face's models do)",
    )
    r = sub.add_parser("repeat", allow_abbrev=False, help="run-to-run spread of two measure runs")
    r.add_argument("a")
    r.add_argument("b", nargs="+", help="the second run (one or more files)")
    args = ap.parse_args()
    return {"measure": cmd_measure, "compare": cmd_compare, "repeat": cmd_repeat}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
