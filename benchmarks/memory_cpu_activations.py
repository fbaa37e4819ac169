"""Predicted activation memory vs what torch really keeps, on small models trained on this CPU.

Rerun:  PYTHONPATH=. python benchmarks/memory_cpu_activations.py
(writes docs/validation/memory-2026-11-23/cpu-activations.txt; about 10 s on 2 cores)

For each model one real fp32 training step runs on the CPU (forward, backward, AdamW step). While
the forward runs, torch.autograd.graph.saved_tensors_hooks sees every tensor autograd keeps for
the backward; the script sums the bytes of their distinct storages, leaving out parameters (those
are weights, not activations). That sum is torch's own account of the activation memory, which
the memory model predicts:

- mnist-mlp, simple-cnn: what the memory model reads for them, the saved bytes of their operator
  trace (gpuselect.workloads.traces.trace_for: the meta-device trace shipped with the package,
  which records saved tensors on the meta device; before it shipped, the presets' leaf-output
  figure, which over-stated these two by 24 % and 32 %), at fp32;
- a tiny decoder with fused attention (F.scaled_dot_product_attention), RMSNorm, rotary-free,
  gated MLP, trained fully and with LoRA adapters (query/value, dropout) on a frozen base: the
  per-layer count of gpuselect.estimate.memory.layer_saved_elems_per_token (without the calibrated
  ACTIVATION_FACTOR, which also covers the backward's working set and eager copies that a
  saved-tensor count cannot see) plus the output layer's saved tensors (final norm, head input,
  the loss's log-probabilities).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ruff: noqa: E402 - a standalone script: the imports below need the repository root on sys.path, set above
from gpuselect.estimate import memory as M
from gpuselect.workloads import reference_models as R
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.traces import transformer_trace
from gpuselect.workloads.transformer import TransformerShape

OUT = ROOT / "docs" / "validation" / "memory-2026-11-23" / "cpu-activations.txt"


def saved_bytes(model: nn.Module, run) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(bytes of distinct non-parameter storages autograd saved during ``run()``, tensor count)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}
    count = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal count
        count += 1
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = run()
    loss.backward()
    return sum(seen.values()), count


class RMSNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * self.weight


class LoRA(nn.Module):
    """A frozen linear plus a trainable low-rank update on dropped-out inputs."""

    def __init__(self, base: nn.Linear, r: int = 8) -> None:
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.b = nn.Parameter(torch.zeros(base.out_features, r))

    def forward(self, x: torch.Tensor, dropped: torch.Tensor) -> torch.Tensor:
        return self.base(x) + F.linear(F.linear(dropped, self.a), self.b)


class Block(nn.Module):
    def __init__(self, h: int, heads: int, f: int) -> None:
        super().__init__()
        self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
        self.q, self.k, self.v, self.o = (nn.Linear(h, h, bias=False) for _ in range(4))
        self.gate, self.up, self.down = (
            nn.Linear(h, f, bias=False),
            nn.Linear(h, f, bias=False),
            nn.Linear(f, h, bias=False),
        )
        self.heads = heads
        self.lora_q: LoRA | None = None
        self.lora_v: LoRA | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        y = self.n1(x)
        if self.lora_q is not None and self.lora_v is not None:
            d = F.dropout(y, 0.05, self.training)  # one dropout feeds both adapters
            q, v = self.lora_q(y, d), self.lora_v(y, d)
        else:
            q, v = self.q(y), self.v(y)
        k = self.k(y)

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, h // self.heads).transpose(1, 2)

        att = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
        x = x + self.o(att.transpose(1, 2).reshape(b, s, h))
        z = self.n2(x)
        return x + self.down(F.silu(self.gate(z)) * self.up(z))


class TinyDecoder(nn.Module):
    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.emb = nn.Embedding(shape.vocab, shape.hidden)
        self.blocks = nn.ModuleList(Block(shape.hidden, shape.heads, shape.ffn) for _ in range(shape.layers))
        self.norm = RMSNorm(shape.hidden)
        self.head = nn.Linear(shape.hidden, shape.vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))

    def to_lora(self) -> None:
        for p in self.parameters():
            p.requires_grad_(False)
        for blk in self.blocks:
            blk.lora_q, blk.lora_v = LoRA(blk.q), LoRA(blk.v)  # type: ignore[assignment]


def step(model: nn.Module, make_loss) -> tuple[int, int, float]:  # type: ignore[no-untyped-def]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    t0 = time.perf_counter()
    sb, n = saved_bytes(model, make_loss)
    opt.step()
    return sb, n, time.perf_counter() - t0


def main() -> int:
    torch.manual_seed(0)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    lines = [
        "Activation memory: predicted vs torch's saved tensors, one fp32 training step on this CPU",
        "Rerun: PYTHONPATH=. python benchmarks/memory_cpu_activations.py",
        f"torch {torch.__version__}",
        "",
        f"{'model':34s} {'batch':>5s} {'measured MB':>12s} {'predicted MB':>13s} {'error':>7s} {'saved tensors':>13s} {'step s':>7s}",
    ]
    errors: list[float] = []
    trace_rows: list[str] = []
    fp32 = M.MemoryOptions(precision="fp32")

    for wid in ("mnist-mlp", "simple-cnn"):
        factory, shape, _dtype = R.REFERENCE[wid]
        for batch in (32, 128):
            model = factory()
            x = torch.randn(batch, *shape)
            y = torch.randint(0, 10, (batch,))
            sb, n, dt = step(model, lambda m=model, x=x, y=y: F.cross_entropy(m(x), y))
            pred = batch * M.activation_bytes_per_sample(PRESETS[wid], fp32)
            errors.append(pred / sb - 1)
            lines.append(
                f"{wid:34s} {batch:5d} {sb / 1e6:12.3f} {pred / 1e6:13.3f} {100 * (pred / sb - 1):+6.1f}% {n:13d} {dt:7.3f}"
            )

    shape = TransformerShape(
        layers=4,
        hidden=256,
        heads=4,
        vocab=2000,
        seq_len=128,
        ffn=688,
        kv_heads=4,
        gated_ffn=True,
        tied_embeddings=False,
    )
    for mode in ("full", "lora"):
        for batch in (2, 8):
            model = TinyDecoder(shape)
            if mode == "lora":
                model.to_lora()
            model.train()
            ids = torch.randint(0, shape.vocab, (batch, shape.seq_len))

            def loss(m: nn.Module = model, ids: torch.Tensor = ids) -> torch.Tensor:
                logits = m(ids)
                return F.cross_entropy(logits.view(-1, shape.vocab), ids.view(-1))

            sb, n, dt = step(model, loss)
            o = replace(fp32, lora_targets="qv", lora_dropout=True)
            layer = M.layer_saved_elems_per_token(shape, mode, o)
            # output layer: the final norm keeps its input (and output where its weight trains), the
            # head keeps its input where it trains, the loss keeps its log-probabilities
            out = shape.hidden * (1 + (2 if mode == "full" else 0)) + shape.vocab
            pred = batch * shape.seq_len * (shape.layers * layer + out) * 4
            errors.append(pred / sb - 1)
            lines.append(
                f"{'tiny decoder (4x256, SDPA) ' + mode:34s} {batch:5d} {sb / 1e6:12.3f} {pred / 1e6:13.3f} "
                f"{100 * (pred / sb - 1):+6.1f}% {n:13d} {dt:7.3f}"
            )
            if mode == "full":  # the step trace's own saved counts (gpuselect.workloads.traces), for comparison
                t = transformer_trace(replace(shape, norm="rmsnorm"), mode="full")
                tb = batch * ((t.saved_elems_per_sample + t.saved_fp32_elems_per_sample) * 4 + t.saved_bytes_per_sample)
                trace_rows.append(
                    f"{'  step trace (analytic), full':34s} {batch:5d} {sb / 1e6:12.3f} {tb / 1e6:13.3f} "
                    f"{100 * (tb / sb - 1):+6.1f}%"
                )
    med = sorted(abs(e) for e in errors)[len(errors) // 2]
    lines += [
        "",
        "For comparison, not used for the transformer activations: the operator trace's saved counts",
        *trace_rows,
    ]
    lines += [
        "",
        f"median |error| {100 * med:.1f} %, worst {100 * max(abs(e) for e in errors):.1f} % over {len(errors)} cases",
        "The transformer rows check the per-layer count the LLM predictions build on; the app multiplies it by",
        f"ACTIVATION_FACTOR = {M.ACTIVATION_FACTOR:.2f} (fitted on LitGPT's GPU peaks: eager copies and the backward's working set).",
        "Note: on CPU a dropout mask is a float tensor (4 bytes here); on CUDA it is 1 byte, which the count assumes.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    return 0 if math.isfinite(med) else 1


if __name__ == "__main__":
    raise SystemExit(main())
