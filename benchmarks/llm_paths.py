"""The LLM paths a constant-MFU rule gets wrong, as the model sees them: per-step breakdowns.

    PYTHONPATH=. python benchmarks/llm_paths.py [--out docs/validation/llm-2026-11-24] [--name paths.txt]

Five parts (the model's physics; ../shared/data holds no measurement of any of these runs, so
nothing here is a validation):
1. LoRA / QLoRA on one GPU: where the step goes by op group (base GEMMs, adapter GEMMs, adapter
   eager kernels, dequantisation, other memory-bound kernels, attention), kernel launches, the
   host's dispatch and the kernel floors, at micro-batch 1 x 512 tokens and 2 x 2,048 tokens;
2. fp8 against bf16 (full fine-tuning): tokens/s of each, their ratio, and what the fp8 step adds
   (the amax/cast kernels' seconds) and saves (the linear layers' GEMM seconds);
3. offload: the bytes each step moves over PCIe, the link rate used, the CPU optimizer's seconds;
4. PCIe-only multi-GPU: DDP of LoRA gradients and FSDP of full models on GeForce (no P2P),
   NVLink-bridged pairs and P2P PCIe cards: link figure, traffic, exposed communication;
5. small micro-batches: tokens/s and the bound from micro-batch 1 x 256 tokens up.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import parallel as P
from gpuselect.estimate import roofline as R
from gpuselect.estimate.memory import weight_storage_bytes
from gpuselect.estimate.recommend import plausible_count
from gpuselect.estimate.trace import OpKind
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.transformer import transformer_workload

ROOT = Path(__file__).resolve().parents[1]


def _group(name: str, kind: OpKind) -> str:
    if kind is OpKind.DEQUANT:
        return "dequant"
    if ".lora_" in name:
        return "adapter-gemm" if kind is OpKind.GEMM else "adapter-eager"
    if kind is OpKind.ATTENTION:
        return "attention"
    if kind is OpKind.GEMM:
        return "lm_head" if name.startswith("lm_head") else "base-gemm"
    return "other-memory"


GROUPS = ("base-gemm", "lm_head", "attention", "adapter-gemm", "adapter-eager", "dequant", "other-memory")


def _seq(w, seq: int):  # type: ignore[no-untyped-def]
    """The preset at another sequence length (same model)."""
    if w.shape.seq_len == seq:
        return w
    shape = replace(w.shape, seq_len=seq)
    return transformer_workload(
        w.id + f"@{seq}",
        w.name,
        shape,
        description=w.description,
        mode=w.mode,
        dataset_size=w.default_dataset_size,
        epochs=w.default_epochs,
        batch_size=w.default_batch_size,
        source=w.source,
        lora_rank=w.lora_rank,
    )


def part_lora(catalog, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    lines += [
        "## 1. LoRA / QLoRA, Llama 3.1 8B, one GPU, bf16 (checkpointing as the estimate picks it)",
        "seconds per step by op group (each op at its own roofline/floor; the step is their sum, or the "
        "host's dispatch where that is longer)",
        f"{'workload':14s} {'mb x seq':9s} {'GPU':14s} {'tok/s':>7s} {'bound':8s} {'ck':3s} "
        + " ".join(f"{g[:9]:>9s}" for g in GROUPS)
        + f" {'launch':>6s} {'host':>6s} {'device':>6s}",
    ]
    for wid in ("llama-8b-lora", "llama-8b-qlora"):
        for mb, seq in ((1, 512), (2, 2048)):
            w = _seq(PRESETS[wid], seq)
            res = A.estimate(
                w,
                A.Assumptions(batch_size=mb, counts=(1,)),
                catalog,
                gpu_ids=["nvidia-h100-sxm5-80gb", "nvidia-rtx-a6000", "nvidia-rtx-4090"],
                local=[],
            )
            for r in res.rows:
                if not r.fits:
                    lines.append(f"{wid:14s} {mb}x{seq:<7d} {r.gpu_id[7:21]:14s} does not fit")
                    continue
                ck = r.checkpointing if r.checkpointing not in (None, "none") else False
                d = A.device_for(catalog.get(r.gpu_id))
                tr = A.trace_cached(w, ck)
                g = dict.fromkeys(GROUPS, 0.0)
                for o in tr.ops:
                    g[_group(o.name, o.kind)] += R.op_time(d, o, mb, r.precision_used)[0]
                st, _ = A.predict_step(w, d, catalog.get(r.gpu_id), mb, r.precision_used, checkpointing=ck)
                lines.append(
                    f"{wid:14s} {mb}x{seq:<7d} {r.gpu_id[7:21]:14s} {r.tokens_per_s or 0:7,.0f} {r.bound or '':8s} "
                    f"{'y' if ck else 'n':3s} "
                    + " ".join(f"{g[k]:9.4f}" for k in GROUPS)
                    + f" {st.launches:6d} {st.host_s:6.3f} {st.device_s:6.3f}"
                )
    lines.append("")


def part_fp8(catalog, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    lines += [
        "## 2. fp8 against bf16, full fine-tuning, 2,048 tokens per sample (per-GPU tokens/s)",
        "gemm: the linear layers' GEMM seconds (bf16 / fp8); cast: the fp8 amax+cast kernels' seconds; "
        "other: everything else on the device (same in both)",
        f"{'workload':14s} {'GPU':16s} {'n':>2s} {'mb':>3s} {'bf16 tok/s':>10s} {'fp8 tok/s':>10s} {'ratio':>6s} "
        f"{'gemm16':>7s} {'gemm8':>7s} {'cast':>7s} {'lm_head':>7s}",
    ]
    cases: tuple[tuple[str, int, int | None], ...] = (
        ("llama-1b-full", 1, None),  # the largest micro-batch that fits
        ("llama-1b-full", 4, None),  # RTX 4090: fits only sharded (FSDP over 4, no peer-to-peer)
        ("llama-8b-full", 8, 2),
        ("llama-70b-full", 64, 1),
    )
    gpus = ("nvidia-h100-sxm5-80gb", "nvidia-l40s", "nvidia-rtx-4090", "amd-mi300x")
    for wid, n, mb in cases:
        w = PRESETS[wid]
        for gid in gpus:
            e = catalog.get(gid)
            if not plausible_count(e, n):  # the estimator builds no such option (16x RTX 4090)
                lines.append(f"{wid:14s} {gid[:16]:16s} {n:2d} {mb or 0:3d} not built in that count")
                continue
            row: dict[str, object] = {}
            for prec in ("bf16", "fp8"):
                a = A.Assumptions(batch_size=mb, counts=(n,), precision=prec, checkpointing="full")
                res = A.estimate(w, a, catalog, gpu_ids=[gid], local=[])
                r = res.rows[0]
                row[prec] = r
            r16, r8 = row["bf16"], row["fp8"]
            if not r16.fits or not r8.fits:  # type: ignore[attr-defined]
                lines.append(f"{wid:14s} {gid[:16]:16s} {n:2d} {mb or 0:3d} does not fit")
                continue
            d = A.device_for(e)
            tr = A.trace_cached(w, True)
            b = r8.batch_size  # type: ignore[attr-defined]
            gemm16 = gemm8 = cast = head = 0.0
            for o in tr.ops:
                if o.kind is not OpKind.GEMM:
                    continue
                t16 = R.op_time(d, o, b, "bf16")[0]
                t8 = R.op_time(d, o, b, r8.precision_used)[0]  # type: ignore[attr-defined]
                c = R.fp8_cast_seconds(d, o, b, r8.precision_used)  # type: ignore[attr-defined]
                if o.name.startswith("lm_head"):
                    head += t8
                    continue
                gemm16 += t16
                gemm8 += t8 - c
                cast += c
            tok16 = (r16.tokens_per_s or 0) / n  # type: ignore[attr-defined]
            tok8 = (r8.tokens_per_s or 0) / n  # type: ignore[attr-defined]
            lines.append(
                f"{wid:14s} {gid[:16]:16s} {n:2d} {b:3d} {tok16:10,.0f} {tok8:10,.0f} {tok8 / tok16:6.2f} "
                f"{gemm16:7.3f} {gemm8:7.3f} {cast:7.3f} {head:7.3f}"
                + ("" if r8.precision_used == "fp8" else f"  (runs {r8.precision_used})")  # type: ignore[attr-defined]
            )
    lines.append("")


def part_offload(catalog, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    lines += [
        "## 3. Offload: PCIe traffic and the CPU optimizer step per GPU",
        f"{'workload':15s} {'GPU':12s} {'n':>2s} {'shard':5s} {'offload':9s} {'mb':>3s} {'tok/s/GPU':>9s} "
        f"{'bound':14s} {'step s':>7s} {'offload s':>9s} {'comm s':>7s}",
    ]
    cases = (
        ("llama-1b-full", "nvidia-rtx-4090", 1, "none", "optimizer", 1),
        ("llama-8b-full", "nvidia-rtx-a6000", 1, "none", "optimizer", 1),
        ("llama-8b-full", "nvidia-rtx-4090", 2, "fsdp", "params", 1),
        ("llama-70b-qlora", "nvidia-rtx-4090", 2, "fsdp", "params", None),
        ("llama-70b-qlora", "nvidia-rtx-3090", 2, "fsdp", "params", None),
        ("llama-70b-lora", "nvidia-h100-sxm5-80gb", 8, "fsdp", "optimizer", None),
    )
    for wid, gid, n, shard, off, mb in cases:
        a = A.Assumptions(batch_size=mb, counts=(n,), sharding=shard, offload=off)
        r = A.estimate(PRESETS[wid], a, catalog, gpu_ids=[gid], local=[]).rows[0]
        if not r.fits:
            lines.append(f"{wid:15s} {gid[7:19]:12s} {n:2d} {shard:5s} {off:9s} does not fit ({r.peak_memory_gb} GB)")
            continue
        bd = r.time_breakdown_s or {}
        step = r.batch_size * n * PRESETS[wid].seq_len / (r.tokens_per_s or 1)
        lines.append(
            f"{wid:15s} {gid[7:19]:12s} {n:2d} {shard:5s} {off:9s} {r.batch_size:3d} {(r.tokens_per_s or 0) / n:9,.0f} "
            f"{(r.bound or '') + '/' + (r.parallelism or ''):14s} {step:7.2f} {bd.get('offload', 0):9.3f} "
            f"{bd.get('communication', 0):7.3f}"
        )
        w = PRESETS[wid]
        e = catalog.get(gid)
        d = A.device_for(e)
        pcie = P.PCIE_PER_DIRECTION_GBS.get(e.pcie_gen or 3, 16.0)
        link = pcie * A.PINNED_FRACTION_OF_PCIE
        rate = A.offload_copy_bytes_per_s(d, pcie, n) / 1e9  # the link, or the rank's share of host memory
        moved = w.trainable_params * 4.0 / n + (2 * weight_storage_bytes(w) / n if off == "params" else 0.0)
        pcie_s, cpu_s = A.offload_seconds(w, d, off, "adamw", shards=n, gpus_on_host=n, pcie_gbs=pcie)
        lines.append(
            f"    per GPU: {moved / 1e9:.2f} GB over PCIe {e.pcie_gen}.0 pinned at {link:.1f} GB/s"
            f"{f' (its 1/{n} of host memory: {rate:.1f})' if rate < link else ''} = {pcie_s:.3f} s; "
            f"CPU AdamW over {n} shard(s) of {w.trainable_params / n / 1e6:,.0f} M trainable at "
            f"{A.HOST_OPTIMIZER_GBS:g} GB/s = {cpu_s:.3f} s; GPU link for the collectives: {r.link_basis or '-'}"
        )
    lines.append("")


def part_pcie(catalog, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    lines += [
        "## 4. PCIe-only multi-GPU: link figure and exposed communication (per GPU)",
        f"{'workload':15s} {'GPU':22s} {'n':>2s} {'par':5s} {'mb':>3s} {'tok/s/GPU':>9s} {'x1 tok/s':>9s} "
        f"{'scale':>5s} {'comm s':>7s} {'link GB/s':>9s}  basis",
    ]
    gpus = ("nvidia-rtx-4090", "nvidia-rtx-3090", "nvidia-rtx-a6000", "nvidia-l40s", "nvidia-h100-pcie-80gb")
    for wid, mb, counts in (("llama-8b-lora", 2, (2, 4)), ("llama-1b-full", 4, (2, 4, 8))):
        for gid in gpus:
            one = A.estimate(PRESETS[wid], A.Assumptions(batch_size=mb, counts=(1,)), catalog, gpu_ids=[gid], local=[])
            base = one.rows[0].tokens_per_s if one.rows[0].fits else None
            res = A.estimate(
                PRESETS[wid], A.Assumptions(batch_size=mb, counts=counts), catalog, gpu_ids=[gid], local=[]
            )
            for r in res.rows:
                if not r.fits:
                    lines.append(f"{wid:15s} {gid[7:29]:22s} {r.count:2d} does not fit")
                    continue
                per = (r.tokens_per_s or 0) / r.count
                bd = r.time_breakdown_s or {}
                lines.append(
                    f"{wid:15s} {gid[7:29]:22s} {r.count:2d} {r.parallelism or '':5s} {r.batch_size:3d} {per:9,.0f} "
                    f"{base or 0:9,.0f} {per / base if base else 0:5.2f} {bd.get('communication', 0):7.3f} "
                    f"{r.link_gbs or 0:9.1f}  {r.link_basis or ''}"
                )
    lines.append("")


def part_small(catalog, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    lines += [
        "## 5. Small micro-batches: Llama 3.2 1B LoRA and Llama 3.1 8B LoRA, one GPU, bf16, no checkpointing",
        f"{'workload':14s} {'GPU':14s} {'mb x seq':9s} {'tok/s':>8s} {'bound':8s} {'launch':>6s} {'host s':>7s} "
        f"{'device s':>8s} {'floor s':>7s} {'MFU':>5s}",
    ]
    for wid in ("llama-1b-lora", "llama-8b-lora"):
        for gid in ("nvidia-h100-sxm5-80gb", "nvidia-rtx-4090"):
            e = catalog.get(gid)
            d = A.device_for(e)
            for mb, seq in ((1, 256), (1, 512), (2, 512), (4, 512), (1, 2048), (4, 2048)):
                w = _seq(PRESETS[wid], seq)
                st, _ = A.predict_step(w, d, e, mb, "bf16", checkpointing=False)
                tok = mb * seq / st.seconds
                six_n = 6.0 * w.params if w.mode == "full" else 4.0 * w.params  # LoRA: no weight-gradient GEMMs
                mfu = tok * six_n / (e.tflops("bf16") * 1e12)
                lines.append(
                    f"{wid:14s} {gid[7:21]:14s} {mb}x{seq:<7d} {tok:8,.0f} {st.bound:8s} {st.launches:6d} "
                    f"{st.host_s:7.4f} {st.device_s:8.4f} {st.breakdown.get('kernel_floor', 0):7.4f} {mfu:5.2f}"
                )
    lines.append("")


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "llm-2026-11-24"))
    ap.add_argument("--name", default="paths.txt")
    args = ap.parse_args()
    catalog = load_catalog()
    p = R.params().doc
    lines = [
        "# LLM paths where a constant-MFU rule fails: the model's per-step breakdowns (benchmarks/llm_paths.py)",
        f"step factors: {p['step']}; host dispatch {p['host']['dispatch_us']} us x dispatch_factor per op; "
        f"kernel floor {p['device']['kernel_floor_us']} us",
        "No measurement of these runs is in ../shared/data: the model's physics, unvalidated.",
        "",
    ]
    part_lora(catalog, lines)
    part_fp8(catalog, lines)
    part_offload(catalog, lines)
    part_pcie(catalog, lines)
    part_small(catalog, lines)
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / args.name).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
