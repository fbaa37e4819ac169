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
from gpuselect.types import Mode
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
    # What the trace builder needs beyond the arithmetic (defaults: a GPT-style decoder without dropout).
    causal: bool | None = None  # causal attention; None: decoders (lm_head) are causal, encoders not
    dropout: bool = False  # dropout after the embedding, attention output and FFN (GPT-2, BERT)
    norm: str = "layernorm"  # layernorm | rmsnorm
    rotary: bool = False  # rotary position embeddings on q and k (Llama, Mistral, Qwen, NeoX)
    fused_qkv: bool = False  # one GEMM for q, k, v (GPT-2 c_attn, NeoX query_key_value)
    head_outputs: int = 2  # encoders (no LM head): outputs of the per-token task head (SQuAD: start/end)
    bias: bool | None = None  # biases on the linear layers; None: where the norm is a LayerNorm (GPT-2, BERT)
    # Grouped-query attention: k/v copied to every query head before the attention kernel (Hugging
    # Face with an attention mask, LitGPT); False: the kernel reads the groups (flash-attn's GQA).
    repeat_kv: bool = True
    # Vision transformers (ViT): images cut into patch x patch squares (0: a token model). Then
    # ``seq_len`` = patches + 1 (class token) and ``vocab`` = classes of the head on the class token.
    patch: int = 0
    channels: int = 3
    # "fused": FlashAttention/SDPA (no score matrix; what frameworks run today); "eager": the
    # score matrix materialised (matmul, scale, mask, softmax, dropout, matmul), as BERT in
    # NVIDIA's DeepLearningExamples and Hugging Face's "eager" implementation run it.
    attention: str = "fused"

    @property
    def has_bias(self) -> bool:
        return self.norm != "rmsnorm" if self.bias is None else self.bias

    @property
    def is_causal(self) -> bool:
        return self.lm_head if self.causal is None else self.causal

    @property
    def kv_dim(self) -> int:
        return self.hidden * (self.kv_heads or self.heads) // self.heads

    def params(self) -> int:
        h, kv = self.hidden, (self.kv_heads or self.heads)
        kv_dim = h * kv // self.heads
        attn = h * h * 2 + h * kv_dim * 2  # q, o and k, v
        ffn = h * self.ffn * (3 if self.gated_ffn else 2)
        per_layer = attn + ffn + 4 * h  # + norms
        if self.norm == "rmsnorm":  # two weight-only norms per layer and a final one (Llama: exact counts)
            per_layer -= 2 * h
        if self.patch:
            biases = 4 * h + self.ffn + h  # q, k, v, o, fc1, fc2
            stem = self.channels * self.patch**2 * h + h + h + self.seq_len * h  # patch conv, class token, positions
            return self.layers * (per_layer + biases) + stem + 2 * h + h * self.vocab + self.vocab
        emb = self.vocab * h
        head = 0 if self.tied_embeddings or not self.lm_head else self.vocab * h
        final_norm = h if self.norm == "rmsnorm" else 0
        return self.layers * per_layer + emb + head + final_norm

    def forward_flops_per_sequence(self) -> float:
        h, s, kv = self.hidden, self.seq_len, (self.kv_heads or self.heads)
        kv_dim = h * kv // self.heads
        dense = self.layers * (h * h * 2 + h * kv_dim * 2 + h * self.ffn * (3 if self.gated_ffn else 2))
        attention = self.layers * 2 * s * h  # QK^T and AV, per token
        if self.patch:  # patch embedding on the patches, classifier on the class token
            stem = 2.0 * (s - 1) * self.channels * self.patch**2 * h
            return 2.0 * s * (dense + attention) + stem + 2.0 * h * self.vocab
        head = self.vocab * h if self.lm_head else 0
        return 2.0 * s * (dense + attention + head)

    def activation_bytes_per_sequence(self) -> float:
        """Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
        Models"): s*h*(34 + 5*a*s/h) bytes per layer with 16-bit activations, no recomputation."""
        s, h, a = self.seq_len, self.hidden, self.heads
        return self.layers * s * h * (34 + 5 * a * s / h)


#: The matrices LoRA/QLoRA put adapters on (every layer): attention q, k, v, o and the FFN's.
LORA_TARGETS = "q, k, v, o and the FFN matrices (gate, up, down / fc1, fc2) of every layer"


def adapted_matrices(shape: TransformerShape) -> list[tuple[str, int, int]]:
    """(name, in features, out features) of each adapted matrix of one layer."""
    h, kv, f = shape.hidden, shape.kv_dim, shape.ffn
    mats = [("q", h, h), ("k", h, kv), ("v", h, kv), ("o", h, h)]
    mats += [("gate", h, f), ("up", h, f), ("down", f, h)] if shape.gated_ffn else [("fc1", h, f), ("fc2", f, h)]
    return mats


def lora_params(shape: TransformerShape, rank: int) -> int:
    """Adapter parameters: A (in x r) and B (r x out) per adapted matrix and layer."""
    return shape.layers * sum(rank * (i + o) for _, i, o in adapted_matrices(shape))


def _input_shape(shape: TransformerShape) -> tuple[int, ...]:
    if shape.patch:
        side = round((shape.seq_len - 1) ** 0.5) * shape.patch
        return (shape.channels, side, side)
    return (shape.seq_len,)


def transformer_workload(
    id: str,
    name: str,
    shape: TransformerShape,
    *,
    description: str,
    mode: Mode = Mode.FULL,
    kind: str = "transformer",
    dataset_size: int,
    epochs: int,
    batch_size: int,
    source: str,
    lora_rank: int = 16,
    profiler_checked: bool = False,
    sample_unit: str = "sequence",
) -> Workload:
    params = shape.params()
    trainable = params if mode == Mode.FULL else lora_params(shape, lora_rank)
    act = shape.activation_bytes_per_sequence()
    return Workload(
        id=id,
        name=name,
        description=description,
        kind=kind,
        params=params,
        trainable_params=trainable,
        forward_flops_per_sample=shape.forward_flops_per_sequence(),
        memory_traffic_bytes_per_sample=2 * act,
        activation_bytes_per_sample=act,
        input_shape=_input_shape(shape),
        sample_unit=sample_unit,
        layers=shape.layers,
        seq_len=shape.seq_len,
        default_dataset_size=dataset_size,
        default_epochs=epochs,
        default_batch_size=batch_size,
        mode=mode,
        source=source,
        profiler_checked=profiler_checked,
        shape=shape,
        lora_rank=lora_rank,
    )


def _first(cfg: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    return None


def _positive_int(
    cfg: dict[str, Any], path: str, keys: tuple[str, ...], *, default: int | None = None, limit: int = 10**7
) -> int:
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
    model_type = str(cfg.get("model_type", "")).lower()
    if model_type in ("vit", "deit") or "patch_size" in cfg:
        return _vit_shape(cfg, str(p))
    hidden = _positive_int(cfg, str(p), ("hidden_size", "n_embd", "d_model", "dim"), limit=1 << 17)
    layers = _positive_int(cfg, str(p), ("num_hidden_layers", "n_layer", "num_layers", "n_layers"), limit=1000)
    heads = _positive_int(cfg, str(p), ("num_attention_heads", "n_head", "num_heads", "n_heads"), limit=4096)
    vocab = _positive_int(cfg, str(p), ("vocab_size",), limit=10**7)
    positions = _positive_int(
        cfg, str(p), ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_seq_len"), default=2048
    )
    ffn = _positive_int(
        cfg, str(p), ("intermediate_size", "n_inner", "ffn_dim", "d_ff"), default=4 * hidden, limit=1 << 20
    )
    kv = _positive_int(cfg, str(p), ("num_key_value_heads", "n_kv_heads"), default=heads, limit=4096)
    if hidden % heads:
        raise DataError(f"{p}: hidden size {hidden} is not a multiple of the {heads} attention heads")
    if heads % kv:
        raise DataError(f"{p}: {heads} attention heads cannot be grouped into {kv} key/value heads")
    act = str(_first(cfg, "hidden_act", "activation_function") or "").lower()
    gated = act in ("silu", "swiglu", "swish") or model_type in ("llama", "mistral", "qwen2", "gemma", "mixtral")
    rms = "rms_norm_eps" in cfg or model_type in ("llama", "mistral", "qwen2", "gemma", "mixtral")
    rotary = any(k in cfg for k in ("rope_theta", "rotary_pct", "rotary_emb_base", "rope_scaling")) or model_type in (
        "llama",
        "mistral",
        "qwen2",
        "gemma",
        "mixtral",
        "gpt_neox",
    )
    drop = _first(cfg, "resid_pdrop", "hidden_dropout_prob", "hidden_dropout", "dropout")
    if drop is None and model_type in ("gpt2", "bert", "roberta"):
        drop = 0.1  # the Hugging Face default of these configs
    dropout = isinstance(drop, (int, float)) and not isinstance(drop, bool) and drop > 0
    seq = seq_len if seq_len is not None else min(positions, 4096)
    if not 0 < seq <= positions:
        raise DataError(f"{p}: sequence length {seq} must be between 1 and the model's {positions} positions")
    return TransformerShape(
        layers=layers,
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        seq_len=seq,
        ffn=ffn,
        kv_heads=kv,
        gated_ffn=gated,
        tied_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        lm_head=model_type not in ("bert", "roberta"),
        dropout=dropout,
        norm="rmsnorm" if rms else "layernorm",
        rotary=rotary,
        fused_qkv=model_type in ("gpt2", "gpt_neox", "gpt_neo", "falcon", "phi3"),
    )


def _vit_shape(cfg: dict[str, Any], p: str) -> TransformerShape:
    """A Hugging Face ViT config (image_size, patch_size, num_channels, id2label / num_labels)."""
    hidden = _positive_int(cfg, p, ("hidden_size",), limit=1 << 17)
    layers = _positive_int(cfg, p, ("num_hidden_layers",), limit=1000)
    heads = _positive_int(cfg, p, ("num_attention_heads",), limit=4096)
    ffn = _positive_int(cfg, p, ("intermediate_size",), default=4 * hidden, limit=1 << 20)
    image = _positive_int(cfg, p, ("image_size",), default=224, limit=1 << 16)
    patch = _positive_int(cfg, p, ("patch_size",), limit=1 << 12)
    channels = _positive_int(cfg, p, ("num_channels",), default=3, limit=1024)
    labels = cfg.get("id2label")
    classes = (
        len(labels) if isinstance(labels, dict) and labels else _positive_int(cfg, p, ("num_labels",), default=1000)
    )
    if hidden % heads:
        raise DataError(f"{p}: hidden size {hidden} is not a multiple of the {heads} attention heads")
    if image % patch:
        raise DataError(f"{p}: image size {image} is not a multiple of the patch size {patch}")
    drop = _first(cfg, "hidden_dropout_prob")
    return TransformerShape(
        layers=layers,
        hidden=hidden,
        heads=heads,
        vocab=classes,
        seq_len=(image // patch) ** 2 + 1,
        ffn=ffn,
        lm_head=False,
        causal=False,
        dropout=isinstance(drop, (int, float)) and not isinstance(drop, bool) and drop > 0,
        patch=patch,
        channels=channels,
    )


def workload_from_hf_config(
    path: str | Path, *, seq_len: int | None = None, mode: Mode = Mode.FULL, lora_rank: int = 16
) -> Workload:
    shape = shape_from_hf_config(path, seq_len=seq_len)
    name = Path(path).parent.name or Path(path).stem
    if shape.patch:
        side = round((shape.seq_len - 1) ** 0.5) * shape.patch
        return transformer_workload(
            f"config:{name}",
            f"{name} (from config.json)",
            shape,
            mode=mode,
            lora_rank=lora_rank,
            sample_unit="image",
            description=f"vision transformer read from {path}: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} "
            f"heads, {side}x{side} images in {shape.patch}x{shape.patch} patches, {shape.vocab} classes",
            dataset_size=1_281_167,
            epochs=1,
            batch_size=64,
            source=f"computed from {path} (transformer arithmetic)",
        )
    return transformer_workload(
        f"config:{name}",
        f"{name} (from config.json)",
        shape,
        mode=mode,
        lora_rank=lora_rank,
        description=f"transformer read from {path}: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads, "
        f"vocabulary {shape.vocab}, sequence {shape.seq_len}",
        dataset_size=100_000,
        epochs=1,
        batch_size=8,
        source=f"computed from {path} (transformer arithmetic)",
    )
