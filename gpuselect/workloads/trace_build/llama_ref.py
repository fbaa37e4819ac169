"""A small Llama-style decoder written as Hugging Face's eager code runs it (RMSNorm with the
fp32 upcast, rotate_half rotary embeddings, grouped-query attention through repeat_kv, SwiGLU FFN, fused
attention, untied LM head), with
optional LoRA adapters on q, k, v, o, gate, up and down (PEFT's y = W x + B(A(x)) * scale, base
weights, embeddings, norms and the head frozen). Used to check the analytic builder's Llama
path, full and LoRA, against the meta-device tracer (tests and benchmarks/trace_analytic_vs_meta.py).
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


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


class _Block(nn.Module):
    def __init__(self, h: int, heads: int, ffn: int, rank: int, kv_heads: int) -> None:
        super().__init__()
        self.n1, self.n2 = _RMSNorm(h), _RMSNorm(h)
        kv = h // heads * kv_heads
        self.q, self.k, self.v, self.o = (
            _Linear(h, h, rank),
            _Linear(h, kv, rank),
            _Linear(h, kv, rank),
            _Linear(h, h, rank),
        )
        self.kv_heads = kv_heads
        self.gate, self.up, self.down = _Linear(h, ffn, rank), _Linear(h, ffn, rank), _Linear(ffn, h, rank)
        self.heads = heads
        if rank:
            for n in (self.n1, self.n2):
                n.weight.requires_grad_(False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        d = h // self.heads
        y = self.n1(x)
        q = self.q(y).view(b, s, self.heads, d).transpose(1, 2)
        k, v = (t.view(b, s, self.kv_heads, d).transpose(1, 2) for t in (self.k(y), self.v(y)))
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if self.kv_heads != self.heads:  # Hugging Face's repeat_kv: expand the groups, copy
            g = self.heads // self.kv_heads
            k, v = (t[:, :, None].expand(b, self.kv_heads, g, s, d).reshape(b, self.heads, s, d) for t in (k, v))
        a = fused_attention(q, k, v, causal=True).transpose(1, 2).reshape(b, s, h)
        x = x + self.o(a)
        y = self.n2(x)
        out: torch.Tensor = x + self.down(torch.nn.functional.silu(self.gate(y)) * self.up(y))
        return out


class TinyLlama(nn.Module):
    def __init__(
        self, vocab: int, h: int, layers: int, heads: int, ffn: int, rank: int = 0, kv_heads: int | None = None
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList(_Block(h, heads, ffn, rank, kv_heads or heads) for _ in range(layers))
        self.norm = _RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        self.d = h // heads
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
