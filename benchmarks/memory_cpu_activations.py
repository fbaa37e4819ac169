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
- a tiny GPT-2 (LayerNorm, fused qkv with biases, GELU, learned positions) and the benchmark's own
  transformer (gpuselect bench's `transformer`: one nn.TransformerEncoderLayer with dropout);

Part 2 — the meta-device trace (gpuselect/workloads/trace_build/meta.py, the tracer `--model` and
the shipped preset traces use) of the same modules, run on the meta device without data, against
the saved bytes measured above.

Part 3 — activation checkpointing none / selective / full (torch.utils.checkpoint, non-reentrant;
selective: create_selective_checkpoint_contexts saving the outputs of mm/addmm, recomputing the
rest) on the tiny decoder and the tiny GPT-2, measured with torch's profiler (profile_memory: every
CPU allocation and free in time order): what the forward leaves for the backward, against
gpuselect.workloads.traces.kept_between_passes; and the step's peak (also activation gradients
in flight and the logits), against the memory model's activations + logits per sample. Parameter
gradients exist before the profiled step (a first step made them), so they are not counted.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Callable
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
from gpuselect.workloads.trace_build.meta import trace_module
from gpuselect.workloads.traces import kept_between_passes, transformer_trace
from gpuselect.workloads.transformer import TransformerShape, transformer_workload

OUT = ROOT / "docs" / "validation" / "memory-2026-11-24" / "cpu-activations.txt"


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

    ckpt = "none"

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for blk in self.blocks:
            x = run_block(blk, x, self.ckpt)
        return self.head(self.norm(x))

    def to_lora(self) -> None:
        for p in self.parameters():
            p.requires_grad_(False)
        for blk in self.blocks:
            blk.lora_q, blk.lora_v = LoRA(blk.q), LoRA(blk.v)  # type: ignore[assignment]


_MM = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default}


LORA_RANK = 8  # the LoRA adapters' rank above


def _save_linear_outputs(_ctx, op, *args, **_kwargs):  # type: ignore[no-untyped-def]
    """Selective checkpointing: keep what the (base) linear layers' matmuls return, recompute the
    rest — the LoRA adapters' rank-8 products too (an input or weight of rank width)."""
    from torch.utils.checkpoint import CheckpointPolicy

    if op in _MM:
        a, b = args[-2], args[-1]  # addmm(bias, x, w) / mm(x, w)
        if LORA_RANK not in (a.shape[-1], b.shape[-1]):
            return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def run_block(blk: nn.Module, x: torch.Tensor, ckpt: str) -> torch.Tensor:
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    if ckpt == "full":
        return checkpoint(blk, x, use_reentrant=False)  # type: ignore[no-any-return]
    if ckpt == "selective":
        ctx = functools.partial(create_selective_checkpoint_contexts, _save_linear_outputs)
        return checkpoint(blk, x, use_reentrant=False, context_fn=ctx)  # type: ignore[no-any-return]
    return blk(x)  # type: ignore[no-any-return]


class GPT2Block(nn.Module):
    def __init__(self, h: int, heads: int, f: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.o = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, f), nn.Linear(f, h)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(b, s, self.heads, h // self.heads).transpose(1, 2)

        att = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
        x = x + self.o(att.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class TinyGPT2(nn.Module):
    """GPT-2's layout (pre-LayerNorm, fused qkv with biases, GELU, learned positions), no dropout."""

    ckpt = "none"

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(shape.vocab, shape.hidden), nn.Embedding(shape.seq_len, shape.hidden)
        self.blocks = nn.ModuleList(GPT2Block(shape.hidden, shape.heads, shape.ffn) for _ in range(shape.layers))
        self.ln_f = nn.LayerNorm(shape.hidden)
        self.head = nn.Linear(shape.hidden, shape.vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(ids) + self.wpe.weight[: ids.shape[1]]
        for blk in self.blocks:
            x = run_block(blk, x, self.ckpt)
        return self.head(self.ln_f(x))


def live_bytes(model: nn.Module, make_loss: Callable[[], torch.Tensor]) -> tuple[int, int]:
    """(bytes the forward leaves allocated for the backward, the step's peak) from torch's profiler:
    every CPU allocation and free of the step in time order. A first step makes the parameters'
    gradients, so the profiled one accumulates into them and counts none."""
    from torch.profiler import ProfilerActivity, profile, record_function

    make_loss().backward()
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with record_function("gpuselect.forward"):
            loss = make_loss()
        loss.backward()
    events = prof.profiler.kineto_results.events()  # type: ignore[union-attr]
    fwd_end = next(e.end_ns() for e in events if e.name() == "gpuselect.forward")
    live = after = peak = 0
    for t, n in sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]"):
        live += n
        if t <= fwd_end:
            after = live
        peak = max(peak, live)
    return after, peak


def step(model: nn.Module, make_loss) -> tuple[int, int, float]:  # type: ignore[no-untyped-def]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    t0 = time.perf_counter()
    sb, n = saved_bytes(model, make_loss)
    opt.step()
    return sb, n, time.perf_counter() - t0


DECODER = TransformerShape(
    layers=4,
    hidden=256,
    heads=4,
    vocab=2000,
    seq_len=128,
    ffn=688,
    kv_heads=4,
    gated_ffn=True,
    tied_embeddings=False,
    norm="rmsnorm",  # the model's hand-written RMSNorm keeps what the trace's does: x, 1/rms and the normed x
)
GPT2 = TransformerShape(
    layers=4,
    hidden=256,
    heads=4,
    vocab=2000,
    seq_len=128,
    ffn=1024,
    tied_embeddings=False,
    fused_qkv=True,
    dropout=False,
)


def _lm_loss(model: nn.Module, ids: torch.Tensor, vocab: int) -> torch.Tensor:
    return F.cross_entropy(model(ids).view(-1, vocab), ids.view(-1))


def _row(label: str, batch: int, measured: float, predicted: float, extra: str = "") -> str:
    return (
        f"{label:40s} {batch:5d} {measured / 1e6:12.3f} {predicted / 1e6:13.3f} "
        f"{100 * (predicted / measured - 1):+6.1f}%{extra}"
    )


def _pct(errors: list[float]) -> str:
    a = sorted(abs(e) for e in errors)
    return f"median |error| {100 * a[len(a) // 2]:.1f} %, worst {100 * a[-1]:.1f} % over {len(a)} cases"


def main() -> int:
    torch.manual_seed(0)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    head = f"{'model':40s} {'batch':>5s} {'measured MB':>12s} {'predicted MB':>13s} {'error':>7s}"
    lines = [
        "Activation memory: predicted vs torch's own accounting, fp32 training steps on this CPU",
        "Rerun: PYTHONPATH=. python benchmarks/memory_cpu_activations.py",
        f"torch {torch.__version__}",
        "",
        "Part 1: what autograd saves (saved-tensor hooks, distinct storages, parameters left out)",
        "against the memory model's count",
        head + f" {'saved tensors':>13s} {'step s':>7s}",
    ]
    errors: list[float] = []
    measured_saved: dict[str, tuple[int, float]] = {}  # label -> (batch, bytes), for part 2
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
            lines.append(_row(wid + " (shipped meta trace)", batch, sb, pred, f" {n:13d} {dt:7.3f}"))
            measured_saved[wid] = (batch, sb)

    trace_rows: list[str] = []
    for name, cls, shp in (("tiny decoder", TinyDecoder, DECODER), ("tiny GPT-2", TinyGPT2, GPT2)):
        for mode in ("full", "lora") if cls is TinyDecoder else ("full",):
            for batch in (2, 8):
                model = cls(shp)
                if mode == "lora":
                    model.to_lora()  # type: ignore[operator]
                model.train()
                ids = torch.randint(0, shp.vocab, (batch, shp.seq_len))
                sb, n, dt = step(model, lambda m=model, ids=ids, v=shp.vocab: _lm_loss(m, ids, v))
                o = replace(fp32, lora_targets="qv", lora_dropout=True)
                layer = M.layer_saved_elems_per_token(shp, mode, o)
                # output layer: the final norm keeps its input (and output where its weight trains), the
                # head keeps its input where it trains, the loss keeps its log-probabilities
                out = shp.hidden * (1 + (2 if mode == "full" else 0)) + shp.vocab
                pred = batch * shp.seq_len * (shp.layers * layer + out) * 4
                errors.append(pred / sb - 1)
                label = f"{name} (4x256, SDPA) {mode}"
                lines.append(_row(label, batch, sb, pred, f" {n:13d} {dt:7.3f}"))
                if mode == "full":
                    measured_saved[name] = (batch, sb)
                    t = transformer_trace(shp, mode="full")
                    tb = batch * (
                        (t.saved_elems_per_sample + t.saved_fp32_elems_per_sample) * 4 + t.saved_bytes_per_sample
                    )
                    trace_rows.append(_row(f"  {name}: step trace (analytic)", batch, sb, tb))
    bench_model, bench_batch, bench_loss = __import__("gpuselect.bench.engine", fromlist=["_make_model"])._make_model(
        torch, "transformer"
    )
    for batch in (8, 32):
        x, y = bench_batch(batch)
        sb, n, dt = step(bench_model, lambda x=x, y=y: bench_loss(bench_model(x), y))
        measured_saved["bench transformer"] = (batch, sb)
        lines.append(
            f"{'bench transformer (measured only, part 2)':40s} {batch:5d} {sb / 1e6:12.3f} {'':>13s} {'':>7s} {n:13d} {dt:7.3f}"
        )
    lines += [
        "",
        "For comparison, not used for the transformer activations: the operator trace's saved counts",
        *trace_rows,
        "",
        "Part 1: " + _pct(errors),
        "The transformer rows check the per-layer count the LLM predictions build on; the app multiplies it by",
        f"ACTIVATION_FACTOR = {M.ACTIVATION_FACTOR:.2f} (fitted on LitGPT's GPU peaks: eager copies and the backward's working set).",
        "Note: on CPU a dropout mask is a float tensor (4 bytes here); on CUDA it is 1 byte, which the count assumes.",
    ]

    # --- part 2: the meta-device trace of the same modules vs measured ------------------------------
    lines += [
        "",
        "Part 2: the meta-device trace (gpuselect/workloads/trace_build/meta.py; shapes only, no data) of the same",
        "modules: its saved elements x 4 bytes + saved bytes, against the measured saved bytes of part 1",
        head,
    ]
    meta_errors: list[float] = []
    bmodel = type(bench_model)
    factories: list[tuple[str, Callable[[], nn.Module], tuple[int, ...], torch.dtype]] = [
        ("mnist-mlp", R.REFERENCE["mnist-mlp"][0], R.REFERENCE["mnist-mlp"][1], torch.float32),
        ("simple-cnn", R.REFERENCE["simple-cnn"][0], R.REFERENCE["simple-cnn"][1], torch.float32),
        ("tiny decoder", lambda: TinyDecoder(DECODER), (DECODER.seq_len,), torch.long),
        ("tiny GPT-2", lambda: TinyGPT2(GPT2), (GPT2.seq_len,), torch.long),
        ("bench transformer", bmodel, (64, 256), torch.float32),
    ]
    for label, factory, in_shape, dtype in factories:
        plain, _ = trace_module(factory, in_shape, dtype, labels_per_sample=in_shape[0] if dtype == torch.long else 1)
        batch, sb = measured_saved[label]
        pred = batch * (plain.saved_elems_per_sample * 4 + plain.saved_bytes_per_sample)
        meta_errors.append(pred / sb - 1)
        lines.append(_row(label, batch, sb, pred))
    lines += ["Part 2: " + _pct(meta_errors)]

    # --- part 3: checkpointing modes, torch's profiler -------------------------------------------------
    lines += [
        "",
        "Part 3: activation checkpointing, torch's profiler (profile_memory): allocated after the forward (what it",
        "leaves for the backward) against traces.kept_between_passes, and the step's peak against the memory",
        "model's activations + logits (ACTIVATION_FACTOR included, which was fitted on GPUs in 16-bit)",
        f"{'model, checkpointing':40s} {'batch':>5s} {'kept MB':>12s} {'predicted MB':>13s} {'error':>7s}"
        f" {'peak MB':>9s} {'model MB':>9s} {'error':>7s}",
    ]
    kept_errors: list[float] = []
    peak_errors: list[float] = []
    batch = 4
    for name, cls, shp in (
        ("tiny decoder", TinyDecoder, DECODER),
        ("tiny GPT-2", TinyGPT2, GPT2),
        ("tiny decoder, 32k vocabulary", TinyDecoder, replace(DECODER, vocab=32_000)),  # logits-dominated
        ("tiny decoder, LoRA q/v", TinyDecoder, DECODER),
    ):
        lora = "LoRA" in name
        w = transformer_workload(
            "t",
            name,
            shp,
            description="",
            mode="lora" if lora else "full",
            lora_rank=LORA_RANK,
            dataset_size=1,
            epochs=1,
            batch_size=batch,
            source="this script",
        )
        # LoRA: adapters on q and v only here, on every linear in the trace — what selective and full
        # checkpointing keep does not depend on the adapters (they are recomputed); without
        # checkpointing it does, so that row is part 1's (saved-tensor hooks, the q/v count)
        for ckpt in ("selective", "full") if lora else ("none", "selective", "full"):
            torch.manual_seed(0)
            model = cls(shp)
            if lora:
                model.to_lora()  # type: ignore[operator]
            model.ckpt = ckpt
            model.train()
            ids = torch.randint(0, shp.vocab, (batch, shp.seq_len))
            kept, peak = live_bytes(model, lambda m=model, ids=ids, v=shp.vocab: _lm_loss(m, ids, v))
            pred = batch * kept_between_passes(shp, mode=w.mode, lora_rank=LORA_RANK, checkpointing=ckpt, elem=4)
            o = M.MemoryOptions(precision="fp32", checkpointing=ckpt, lora_targets="qv" if lora else "all")
            pred_peak = batch * (M.activation_bytes_per_sample(w, o, shp) + M.logits_bytes_per_sample(w, o, shp))
            kept_errors.append(pred / kept - 1)
            peak_errors.append(pred_peak / peak - 1)
            lines.append(
                _row(f"{name}, {ckpt}", batch, kept, pred)
                + f" {peak / 1e6:9.3f} {pred_peak / 1e6:9.3f} {100 * (pred_peak / peak - 1):+6.1f}%"
            )
    lines += [
        "Part 3, kept after the forward: " + _pct(kept_errors),
        "Part 3, step peak (informative: the factor is a GPU/16-bit fit): " + _pct(peak_errors),
        "",
        "Not measurable here: the CUDA context, library workspaces and the caching allocator's slack (no GPU);",
        "the memory model keeps its stated values for them (docs/memory.md).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    return 0 if all(math.isfinite(e) for e in errors + meta_errors + kept_errors) else 1


if __name__ == "__main__":
    raise SystemExit(main())
