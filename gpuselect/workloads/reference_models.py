"""Plain-torch reference implementations of preset architectures, used to *measure* their FLOPs,
parameters and activation sizes with torch's FLOP counter on the meta device (no memory, no
weights, no downloads). Imported only by ``profile.py`` and the tests; torch is required.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


def mnist_mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def simple_cnn() -> nn.Module:
    # The background material's simple CNN (same as the benchmark's).
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
    )


def vgg16() -> nn.Module:
    cfg: list[Any] = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    layers: list[nn.Module] = []
    c = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU()]
            c = v
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000))


class _Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


def resnet50() -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(_Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000))


class _LstmLayer(nn.Module):
    """An LSTM layer written with explicit matrix products, so the FLOP counter sees every one."""

    def __init__(self, cin: int, hidden: int) -> None:
        super().__init__()
        self.ih = nn.Linear(cin, 4 * hidden)
        self.hh = nn.Linear(hidden, 4 * hidden)
        self.hidden = hidden

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        h = x.new_zeros(b, self.hidden)
        c = x.new_zeros(b, self.hidden)
        xs = self.ih(x)
        outs = []
        for t in range(s):
            i, f, g, o = (xs[:, t] + self.hh(h)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=1)


class LstmLM(nn.Module):
    """Zaremba et al.'s medium PTB language model: 2 x 650 LSTM, 10k vocabulary, 35 steps."""

    def __init__(self, vocab: int = 10_000, hidden: int = 650, layers: int = 2) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(_LstmLayer(hidden, hidden) for _ in range(layers))
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x)
        for layer in self.layers:
            h = layer(h)
        return self.out(h)


class _Block(nn.Module):
    def __init__(self, h: int, heads: int, ffn: int, causal: bool) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(h, h) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(h, ffn), nn.Linear(ffn, h)
        self.n1, self.n2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.heads, self.causal = heads, causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        d = h // self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, d).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        if self.causal:
            scores = scores + torch.full((s, s), float("-inf"), device=x.device).triu(1)
        attn = torch.matmul(scores.softmax(-1), v).transpose(1, 2).reshape(b, s, h)
        x = self.n1(x + self.o(attn))
        return self.n2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


class TinyTransformer(nn.Module):
    """BERT-style encoder (lm_head=False) or GPT-2-style decoder with a tied LM head."""

    def __init__(self, vocab: int, h: int, layers: int, heads: int, ffn: int, seq: int, causal: bool, lm_head: bool) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, h)
        self.pos = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(_Block(h, heads, ffn, causal) for _ in range(layers))
        self.lm_head = lm_head
        self.qa = nn.Linear(h, 2)  # BERT-SQuAD's start/end head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(x.shape[1], device=x.device)
        h = self.tok(x) + self.pos(pos)
        for blk in self.blocks:
            h = blk(h)
        return torch.matmul(h, self.tok.weight.t()) if self.lm_head else self.qa(h)


def bert_base(seq: int = 384) -> nn.Module:
    return TinyTransformer(30522, 768, 12, 12, 3072, seq, causal=False, lm_head=False)


def bert_large(seq: int = 384) -> nn.Module:
    return TinyTransformer(30522, 1024, 24, 16, 4096, seq, causal=False, lm_head=False)


def gpt2_124m(seq: int = 1024) -> nn.Module:
    return TinyTransformer(50257, 768, 12, 12, 3072, seq, causal=True, lm_head=True)


REFERENCE: dict[str, tuple[Any, tuple[int, ...], torch.dtype]] = {
    # preset id: (factory, one sample's input shape, input dtype)
    "mnist-mlp": (mnist_mlp, (1, 28, 28), torch.float32),
    "simple-cnn": (simple_cnn, (1, 28, 28), torch.float32),
    "vgg16": (vgg16, (3, 224, 224), torch.float32),
    "resnet50": (resnet50, (3, 224, 224), torch.float32),
    "lstm-lm": (LstmLM, (35,), torch.long),
    "bert_base_squad": (bert_base, (384,), torch.long),
    "bert_large_squad": (bert_large, (384,), torch.long),
    "gpt2-124m": (gpt2_124m, (1024,), torch.long),
}
