"""Where llama-70b-full lands, and why: the memory of 70B full fine-tuning on one box of 8 GPUs.

    PYTHONPATH=. python benchmarks/llm_stage4.py [--out docs/validation/llm-2026-11-24]

Prints the per-GPU memory breakdown of the 8-GPU options (the estimator's memory model), the
bytes per parameter it counts against the textbook minimum, the recommendation at the default
72 h deadline and at deadlines no box of 8 meets.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate.memory import GB
from gpuselect.workloads.presets import PRESETS

ROOT = Path(__file__).resolve().parents[1]
CARDS = ("amd-mi300x", "amd-mi325x", "amd-mi355x", "nvidia-b200", "nvidia-h200-sxm-141gb", "nvidia-h100-sxm5-80gb")


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "llm-2026-11-24"))
    args = ap.parse_args()
    catalog = load_catalog()
    w = PRESETS["llama-70b-full"]
    tokens = w.default_dataset_size * w.default_epochs * (w.seq_len or 1)
    lines = [
        "# llama-70b-full: one box or a cluster? (benchmarks/llm_stage4.py)",
        f"workload: {w.name}; {w.params / 1e9:.2f} B parameters, {w.default_dataset_size:,} sequences of "
        f"{w.seq_len} tokens x {w.default_epochs} epochs = {tokens / 1e6:.0f} M tokens; AdamW, mixed precision",
        "textbook minimum of the sharded state (ZeRO-3/FSDP: fp32 master 4 + fp32 gradient 4 + two fp32 moments 8 "
        f"= 16 B/parameter) over 8 GPUs: {16 * w.params / 8 / GB:.1f} GiB per GPU",
    ]
    res = A.estimate(w, A.Assumptions(), catalog, local=[])
    lines.append("\n## 8-GPU options at the default 72 h (per GPU, GiB)")
    for gid in CARDS:
        r = next((r for r in res.rows if r.gpu_id == gid and r.count == 8), None)
        if r is None:
            continue
        state = sum(r.memory_breakdown_gb.get(k, 0.0) for k in ("weights", "gradients", "optimizer"))
        parts = ", ".join(f"{k} {v:.1f}" for k, v in r.memory_breakdown_gb.items())
        lines.append(
            f"{r.name:22s} {r.vram_gb:5.0f} GB: {'fits' if r.fits else 'does not fit'} at batch {r.batch_size}, "
            f"peak {r.peak_memory_gb or 0:.1f} ({parts}); model state {state * GB / w.params * 8:.1f} B/param/8"
            + (
                f"; {r.total_time_h:.1f} h, {r.tokens_per_s or 0:,.0f} tokens/s, {r.bound}"
                if r.fits and r.total_time_h
                else ""
            )
        )
    lines.append(
        "\n## Cluster options at the default 72 h (cards none of whose boxes of 8 holds it; each card's "
        "reference node network)"
    )
    for r in sorted(
        (r for r in res.rows if r.count > 8 and r.fits and r.total_time_h), key=lambda r: r.total_time_h or 0
    ):
        lines.append(
            f"{r.count:4d}x {r.name:22s} batch {r.batch_size}, {r.total_time_h:.1f} h, {r.tokens_per_s or 0:,.0f} "
            f"tokens/s, {r.bound}; {r.link_basis}"
        )
    rec = res.recommendation
    lines.append(f"\nrecommendation at 72 h: stage {rec.stage}: {rec.choice}")
    best_box = min(r.total_time_h for r in res.rows if r.fits and r.count <= 8 and r.total_time_h)
    for hours in (best_box * 0.5, best_box * 0.25):
        t = A.estimate(w, A.Assumptions(deadline_hours=hours), catalog, local=[])
        lines.append(f"recommendation at {hours:.1f} h: stage {t.recommendation.stage}: {t.recommendation.choice}")
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "stage4.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
