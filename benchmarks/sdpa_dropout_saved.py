"""Does CPU attention with dropout store the score matrix? (docs/memory.md, part 2)

gpuselect bench's transformer (one nn.TransformerEncoderLayer(256, 4 heads), batch 32 x 64 tokens)
trained one step on this CPU in train mode, with its default dropout 0.1 and with every dropout
set to 0.0: the bytes autograd saves (distinct non-parameter storages, saved-tensor hooks) and the
saved tensors shaped (..., seq, seq), i.e. attention scores. Plus the grad_fn of one direct
F.scaled_dot_product_attention call with dropout_p 0.1 and 0.0 (which kernel ran).

Rerun: PYTHONPATH=. python benchmarks/sdpa_dropout_saved.py
Output: docs/validation/memory-2026-11-24/sdpa-dropout.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuselect.bench.engine import _make_model  # noqa: E402

OUT = ROOT / "docs" / "validation" / "memory-2026-11-24" / "sdpa-dropout.txt"
SEQ = 64


def one_step(p: float, p_attn: float) -> tuple[int, list[tuple[int, ...]]]:
    """(saved bytes, shapes of saved (batch x heads, SEQ, SEQ) score tensors) of one training step
    with the layer's dropouts at p and the attention's at p_attn. (The 4-D q, k, v are
    (32, 4, 64, 64) here, head size = sequence, so only the math path's 3-D scores are counted.)"""
    torch.manual_seed(0)
    model, batch, loss_fn = _make_model(torch, "transformer")
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = p_attn
    model.train()
    params = {q.untyped_storage().data_ptr() for q in model.parameters()}
    seen: dict[int, int] = {}
    scores: list[tuple[int, ...]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        if t.dim() == 3 and tuple(t.shape[-2:]) == (SEQ, SEQ):
            scores.append(tuple(t.shape))
        return t

    x, y = batch(32)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn(model(x), y)
    loss.backward()
    return sum(seen.values()), scores


def sdpa_grad_fn(p: float) -> str:
    q, k, v = (torch.randn(32, 4, SEQ, 64, requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
    return type(out.grad_fn).__name__


def main() -> None:
    lines = [
        "SDPA with and without dropout in training on this CPU (benchmarks/sdpa_dropout_saved.py)",
        f"torch {torch.__version__}",
        "",
        "gpuselect bench's transformer, batch 32 x 64 tokens, train mode, one step",
    ]
    for p, pa in ((0.1, 0.1), (0.1, 0.0), (0.0, 0.0)):
        sb, scores = one_step(p, pa)
        lines.append(
            f"dropout {p:.1f}, attention dropout {pa:.1f}: saved {sb / 1e6:8.3f} MB; "
            f"saved score tensors (batch x heads, {SEQ}, {SEQ}): {len(scores)}"
        )
    lines.append("")
    lines.append("direct F.scaled_dot_product_attention(q, k, v) on (32, 4, 64, 64), requires_grad")
    for p in (0.1, 0.0):
        lines.append(f"dropout_p {p:.1f}: grad_fn {sdpa_grad_fn(p)}")
    text = "\n".join(lines) + "\n"
    OUT.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
