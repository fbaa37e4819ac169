"""A small Llama-style decoder written as Hugging Face's eager code runs it (RMSNorm with the
fp32 upcast, rotate_half rotary embeddings, grouped-query attention through repeat_kv, SwiGLU FFN, fused
attention, untied LM head), with
optional LoRA adapters on q, k, v, o, gate, up and down (PEFT's y = W x + B(A(x)) * scale, base
weights, embeddings, norms and the head frozen), an optional per-head width apart from hidden / heads
(Gemma, Qwen3) and an optional mixture-of-experts FFN (Mixtral's eager block). Used to check the
analytic builder's Llama path, full and LoRA, against the meta-device tracer (tests and
benchmarks/trace_analytic_vs_meta.py).
"""

from __future__ import annotations

import torch
from torch import nn

from gpuselect.workloads.trace_build.meta import fused_attention


class _RMSNorm(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)
        return self.weight * x32.to(dtype)


class _Linear(nn.Module):
    def __init__(self, n_in: int, n_out: int, rank: int) -> None:
        super().__init__()
        self.base = nn.Linear(n_in, n_out, bias=False)
        self.rank = rank
        if rank:
            self.base.weight.requires_grad_(False)
            self.lora_A, self.lora_B = nn.Linear(n_in, rank, bias=False), nn.Linear(rank, n_out, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.base(x)
        return y + self.lora_B(self.lora_A(x)) * 2.0 if self.rank else y


class _Experts(nn.Module):
    """Hugging Face's eager MoE block (Mixtral): router, fp32 softmax, top-k, renormalised weights;
    each expert in turn on its tokens, times its routing weight, ``index_add_`` into the output. The
    routing is balanced and fixed: a meta-device trace cannot run ``torch.where``'s data-dependent
    shapes, so expert e takes rows e*t .. (e+1)*t - 1 of the tokens' top-k copies."""

    def __init__(self, h: int, ffn: int, experts: int, top_k: int, rank: int) -> None:
        super().__init__()
        self.router = nn.Linear(h, experts, bias=False)
        if rank:
            self.router.weight.requires_grad_(False)
        self.k = top_k
        # a ModuleDict: the meta tracer takes the longest ModuleList of alike blocks as the layers
        self.experts = nn.ModuleDict(
            {
                f"{e}_{n}": _Linear(i, o, rank)
                for e in range(experts)
                for n, i, o in (("gate", h, ffn), ("up", h, ffn), ("down", ffn, h))
            }
        )
        self.n = experts

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        b, s, h = y.shape
        x = y.reshape(-1, h)
        probs = torch.nn.functional.softmax(self.router(x), dim=1, dtype=torch.float)
        w, _ = torch.topk(probs, self.k, dim=-1)
        w = (w / w.sum(dim=-1, keepdim=True)).to(x.dtype).reshape(-1)
        out = torch.zeros_like(x)
        t = x.shape[0] * self.k // self.n
        for e in range(self.n):
            gate, up, down = (self.experts[f"{e}_{n}"] for n in ("gate", "up", "down"))
            rows = torch.arange(e * t, (e + 1) * t, device=x.device)
            tokens = rows // self.k
            cur = x[tokens]
            o = down(torch.nn.functional.silu(gate(cur)) * up(cur)) * w[rows, None]
            out.index_add_(0, tokens, o.to(x.dtype))
        return out.view(b, s, h)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


class _Block(nn.Module):
    def __init__(
        self, h: int, heads: int, ffn: int, rank: int, kv_heads: int, d: int, experts: int = 0, top_k: int = 0
    ) -> None:
        super().__init__()
        self.n1, self.n2 = _RMSNorm(h), _RMSNorm(h)
        kv = d * kv_heads
        self.q, self.k, self.v, self.o = (
            _Linear(h, d * heads, rank),
            _Linear(h, kv, rank),
            _Linear(h, kv, rank),
            _Linear(d * heads, h, rank),
        )
        self.kv_heads, self.d = kv_heads, d
        self.moe = _Experts(h, ffn, experts, top_k, rank) if experts else None
        if not experts:
            self.gate, self.up, self.down = _Linear(h, ffn, rank), _Linear(h, ffn, rank), _Linear(ffn, h, rank)
        self.heads = heads
        if rank:
            for n in (self.n1, self.n2):
                n.weight.requires_grad_(False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        d = self.d
        y = self.n1(x)
        q = self.q(y).view(b, s, self.heads, d).transpose(1, 2)
        k, v = (t.view(b, s, self.kv_heads, d).transpose(1, 2) for t in (self.k(y), self.v(y)))
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if self.kv_heads != self.heads:  # Hugging Face's repeat_kv: expand the groups, copy
            g = self.heads // self.kv_heads
            k, v = (t[:, :, None].expand(b, self.kv_heads, g, s, d).reshape(b, self.heads, s, d) for t in (k, v))
        a = fused_attention(q, k, v, causal=True).transpose(1, 2).reshape(b, s, self.heads * d)
        x = x + self.o(a)
        y = self.n2(x)
        if self.moe is not None:
            moe: torch.Tensor = x + self.moe(y)
            return moe
        out: torch.Tensor = x + self.down(torch.nn.functional.silu(self.gate(y)) * self.up(y))
        return out


class TinyLlama(nn.Module):
    def __init__(
        self,
        vocab: int,
        h: int,
        layers: int,
        heads: int,
        ffn: int,
        rank: int = 0,
        kv_heads: int | None = None,
        head_dim: int | None = None,
        experts: int = 0,
        top_k: int = 0,
    ) -> None:
        super().__init__()
        self.d = head_dim or h // heads
        self.embed = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList(
            _Block(h, heads, ffn, rank, kv_heads or heads, self.d, experts, top_k) for _ in range(layers)
        )
        self.norm = _RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        if rank:
            for p in (self.embed.weight, self.norm.weight, self.lm_head.weight):
                p.requires_grad_(False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        s = ids.shape[1]
        inv = 1.0 / (10000 ** (torch.arange(0, self.d, 2, device=ids.device, dtype=torch.float32) / self.d))
        freqs = torch.outer(torch.arange(s, device=ids.device, dtype=torch.float32), inv)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits: torch.Tensor = self.lm_head(self.norm(x)).float()
        return logits
