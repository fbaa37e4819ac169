"""Transformer arithmetic: parameters, FLOPs and activation memory from a model's shape.

Used for the transformer presets and for Hugging Face ``config.json`` files (read as data; no
code is executed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuselect.errors import DataError
from gpuselect.safe_io import read_json
from gpuselect.workloads.model import Workload


@dataclass(frozen=True)
class TransformerShape:
    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    ffn: int  # intermediate size
    kv_heads: int | None = None  # grouped-query attention
    gated_ffn: bool = False  # SwiGLU-style: three FFN matrices instead of two
    tied_embeddings: bool = True
    lm_head: bool = True  # a vocabulary projection on every token (language models)

    def params(self) -> int:
        h, kv = self.hidden, (self.kv_heads or self.heads)
        kv_dim = h * kv // self.heads
        attn = h * h * 2 + h * kv_dim * 2  # q, o and k, v
        ffn = h * self.ffn * (3 if self.gated_ffn else 2)
        per_layer = attn + ffn + 4 * h  # + norms
        emb = self.vocab * h
        head = 0 if self.tied_embeddings or not self.lm_head else self.vocab * h
        return self.layers * per_layer + emb + head

    def forward_flops_per_sequence(self) -> float:
        h, s, kv = self.hidden, self.seq_len, (self.kv_heads or self.heads)
        kv_dim = h * kv // self.heads
        dense = self.layers * (h * h * 2 + h * kv_dim * 2 + h * self.ffn * (3 if self.gated_ffn else 2))
        attention = self.layers * 2 * s * h  # QK^T and AV, per token
        head = self.vocab * h if self.lm_head else 0
        return 2.0 * s * (dense + attention + head)

    def activation_bytes_per_sequence(self) -> float:
        """Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
        Models"): s*h*(34 + 5*a*s/h) bytes per layer with 16-bit activations, no recomputation."""
        s, h, a = self.seq_len, self.hidden, self.heads
        return self.layers * s * h * (34 + 5 * a * s / h)


def transformer_workload(
    id: str, name: str, shape: TransformerShape, *, description: str, mode: str = "full", kind: str = "transformer",
    dataset_size: int, epochs: int, batch_size: int, source: str, lora_rank: int = 16, profiler_checked: bool = False,
    sample_unit: str = "sequence",
) -> Workload:
    params = shape.params()
    trainable = params
    if mode in ("lora", "qlora"):
        # Adapters of rank r on the four attention projections and the FFN matrices of every layer.
        h, f = shape.hidden, shape.ffn
        per_layer = lora_rank * (4 * 2 * h + (3 if shape.gated_ffn else 2) * (h + f))
        trainable = shape.layers * per_layer
    act = shape.activation_bytes_per_sequence()
    return Workload(
        id=id, name=name, description=description, kind=kind, params=params, trainable_params=trainable,
        forward_flops_per_sample=shape.forward_flops_per_sequence(),
        memory_traffic_bytes_per_sample=2 * act, activation_bytes_per_sample=act,
        input_shape=(shape.seq_len,), sample_unit=sample_unit, layers=shape.layers, seq_len=shape.seq_len,
        default_dataset_size=dataset_size, default_epochs=epochs, default_batch_size=batch_size, mode=mode,
        source=source, profiler_checked=profiler_checked,
    )


def _first(cfg: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    return None


def _positive_int(cfg: dict[str, Any], path: str, keys: tuple[str, ...], *, default: int | None = None, limit: int = 10**7) -> int:
    value = _first(cfg, *keys)
    if value is None:
        if default is not None:
            return default
        raise DataError(f"{path}: the config has none of {', '.join(keys)}")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= limit:
        raise DataError(f"{path}: {keys[0]} must be a whole number between 1 and {limit}, not {value!r}")
    return value


def shape_from_hf_config(path: str | Path, *, seq_len: int | None = None) -> TransformerShape:
    """Read a Hugging Face style ``config.json`` as data (GPT-2, BERT, Llama, Mistral ... keys)."""
    p = Path(path)
    cfg = read_json(p, what="model config", max_bytes=4 * 1024 * 1024)  # bounded; UTF-8 or UTF-16 with a BOM
    if not isinstance(cfg, dict):
        raise DataError(f"{p}: expected a JSON object of model settings")
    hidden = _positive_int(cfg, str(p), ("hidden_size", "n_embd", "d_model", "dim"), limit=1 << 17)
    layers = _positive_int(cfg, str(p), ("num_hidden_layers", "n_layer", "num_layers", "n_layers"), limit=1000)
    heads = _positive_int(cfg, str(p), ("num_attention_heads", "n_head", "num_heads", "n_heads"), limit=4096)
    vocab = _positive_int(cfg, str(p), ("vocab_size",), limit=10**7)
    positions = _positive_int(cfg, str(p), ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_seq_len"), default=2048)
    ffn = _positive_int(cfg, str(p), ("intermediate_size", "n_inner", "ffn_dim", "d_ff"), default=4 * hidden, limit=1 << 20)
    kv = _positive_int(cfg, str(p), ("num_key_value_heads", "n_kv_heads"), default=heads, limit=4096)
    if hidden % heads:
        raise DataError(f"{p}: hidden size {hidden} is not a multiple of the {heads} attention heads")
    if heads % kv:
        raise DataError(f"{p}: {heads} attention heads cannot be grouped into {kv} key/value heads")
    act = str(_first(cfg, "hidden_act", "activation_function") or "").lower()
    model_type = str(cfg.get("model_type", "")).lower()
    gated = act in ("silu", "swiglu", "swish") or model_type in ("llama", "mistral", "qwen2", "gemma", "mixtral")
    seq = seq_len if seq_len is not None else min(positions, 4096)
    if not 0 < seq <= positions:
        raise DataError(f"{p}: sequence length {seq} must be between 1 and the model's {positions} positions")
    return TransformerShape(
        layers=layers, hidden=hidden, heads=heads, vocab=vocab, seq_len=seq, ffn=ffn, kv_heads=kv, gated_ffn=gated,
        tied_embeddings=bool(cfg.get("tie_word_embeddings", True)), lm_head=model_type not in ("bert", "roberta"),
    )


def workload_from_hf_config(path: str | Path, *, seq_len: int | None = None, mode: str = "full") -> Workload:
    shape = shape_from_hf_config(path, seq_len=seq_len)
    name = Path(path).parent.name or Path(path).stem
    return transformer_workload(
        f"config:{name}", f"{name} (from config.json)", shape, mode=mode,
        description=f"transformer read from {path}: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads, "
                    f"vocabulary {shape.vocab}, sequence {shape.seq_len}",
        dataset_size=100_000, epochs=1, batch_size=8, source=f"computed from {path} (transformer arithmetic)",
    )
