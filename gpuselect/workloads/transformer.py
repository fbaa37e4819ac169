"""Transformer arithmetic: parameters, FLOPs and activation memory from a model's shape.

Used for the transformer presets and for Hugging Face ``config.json`` files (read as data; no
code is executed).
"""

from __future__ import annotations

import re
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
    # Mixture of experts (Mixtral, Qwen-MoE, OLMoE, gpt-oss): every layer's FFN is ``experts`` routed
    # experts of intermediate size ``ffn`` each, ``experts_per_token`` of them per token, plus
    # always-on shared experts of ``shared_ffn`` intermediate size in all (Qwen2-MoE). 0: dense.
    experts: int = 0
    experts_per_token: int = 0
    shared_ffn: int = 0
    # Per-head width where a config sets it apart from hidden / heads (Gemma, Qwen3: the attention's
    # q, k, v are then wider or narrower than the residual stream). None: hidden / heads.
    head_dim: int | None = None
    # Rows of the embedding tables beyond the vocabulary: a learned position table (GPT-2, OPT,
    # BERT) and BERT's token types, each row ``hidden`` weights; a lookup costs no FLOPs. Read from
    # configs (GPT-2 small was 0.6 %, DistilBERT 1.5 %, a 2-layer GPT-2 16 % short without them);
    # the presets leave it 0, as their validated figures were computed.
    table_rows: int = 0

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def ffn_matrices(self) -> int:
        return 3 if self.gated_ffn else 2

    def ffn_weights(self) -> tuple[int, int]:
        """(stored, used per token) FFN weights of one layer: all experts are stored, the router's
        top-k of them (and the shared experts and the router) run on each token."""
        h, m = self.hidden, self.ffn_matrices
        if not self.is_moe:
            return h * self.ffn * m, h * self.ffn * m
        # Qwen2-MoE's shared expert has a sigmoid gate of its own (h weights)
        shared = h * self.shared_ffn * m + (h if self.shared_ffn else 0)
        router = h * self.experts
        one = h * self.ffn * m
        return self.experts * one + shared + router, self.experts_per_token * one + shared + router

    def active_params(self) -> int:
        """Parameters a token runs through: all of a dense model's, only the routed experts' share of an MoE's."""
        stored, used = self.ffn_weights()
        return self.params() - self.layers * (stored - used)

    @property
    def has_bias(self) -> bool:
        return self.norm != "rmsnorm" if self.bias is None else self.bias

    @property
    def is_causal(self) -> bool:
        return self.lm_head if self.causal is None else self.causal

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        """Width of the queries and of the attention output (the output projection's input)."""
        return self.heads * self.d_head

    @property
    def kv_dim(self) -> int:
        return (self.kv_heads or self.heads) * self.d_head

    def params(self) -> int:
        h, kv_dim = self.hidden, self.kv_dim
        attn = h * self.q_dim * 2 + h * kv_dim * 2  # q, o and k, v
        ffn = self.ffn_weights()[0]
        per_layer = attn + ffn + 4 * h  # + norms
        if self.norm == "rmsnorm":  # two weight-only norms per layer and a final one (Llama: exact counts)
            per_layer -= 2 * h
        if self.patch:
            biases = 4 * h + self.ffn + h  # q, k, v, o, fc1, fc2
            stem = self.channels * self.patch**2 * h + h + h + self.seq_len * h  # patch conv, class token, positions
            return self.layers * (per_layer + biases) + stem + 2 * h + h * self.vocab + self.vocab
        emb = (self.vocab + self.table_rows) * h
        head = 0 if self.tied_embeddings or not self.lm_head else self.vocab * h
        final_norm = h if self.norm == "rmsnorm" else 0
        return self.layers * per_layer + emb + head + final_norm

    def forward_flops_per_sequence(self) -> float:
        h, s, q, kv_dim = self.hidden, self.seq_len, self.q_dim, self.kv_dim
        dense = self.layers * (h * q * 2 + h * kv_dim * 2 + self.ffn_weights()[1])
        attention = self.layers * 2 * s * q  # QK^T and AV, per token
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
    h, kv, f, q = shape.hidden, shape.kv_dim, shape.ffn, shape.q_dim
    mats = [("q", h, q), ("k", h, kv), ("v", h, kv), ("o", q, h)]
    ffn = [("gate", h, f), ("up", h, f), ("down", f, h)] if shape.gated_ffn else [("fc1", h, f), ("fc2", f, h)]
    if not shape.is_moe:
        return mats + ffn
    # PEFT's "all-linear" on an MoE model adapts every expert's matrices (the router stays as it is)
    mats += [(f"experts.{n}", i, o) for n, i, o in ffn] * shape.experts
    if shape.shared_ffn:
        g = shape.shared_ffn
        mats += [("shared.gate", h, g), ("shared.up", h, g), ("shared.down", g, h)]
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
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."  # a 400-digit number stays one line
        # the key the file gave (num_experts = 128.0 was reported as num_local_experts, a key it lacked)
        key = next(k for k in keys if cfg.get(k) is not None)
        raise DataError(f"{path}: {key} must be a whole number between 1 and {limit:,}, not {shown}")
    return value


def config_file(path: str | Path) -> Path:
    """The config a path names: a Hugging Face model folder (what a download leaves) means its
    config.json; anything else is read as given."""
    p = Path(path)
    if p.is_dir():
        if (p / "config.json").is_file():
            return p / "config.json"
        raise DataError(f"the model config {p} is a folder without a config.json; give the model's config.json")
    return p


def shape_from_hf_config(path: str | Path, *, seq_len: int | None = None) -> TransformerShape:
    """Read a Hugging Face style ``config.json`` as data (GPT-2, BERT, Llama, Mistral ... keys)."""
    return _shape_and_type(path, seq_len=seq_len)[0]


#: The settings whose value the shape rests on: where the file leaves one to its class's default,
#: the estimate says so (a config of only {"model_type": "llama"} was silently Llama 2 7B).
_SHAPE_KEYS = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "max_position_embeddings",
)


def _shape_and_type(path: str | Path, *, seq_len: int | None = None) -> tuple[TransformerShape, str, list[str]]:
    """The config's shape, its model type, and notes on what the file left to defaults or asks that
    is not applied."""
    notes: list[str] = []
    p = config_file(path)
    # bounded; UTF-8 or UTF-16 with a BOM; a key given twice is refused (json would keep the last)
    cfg = read_json(p, what="model config", max_bytes=4 * 1024 * 1024, unique_keys=True)
    if not isinstance(cfg, dict):
        raise DataError(f"{p}: expected a JSON object of model settings")
    model_type = _model_type(cfg)
    if len(model_type) > 64 or not model_type.isprintable():
        # echoed in the description ("model type ... is not one gpuselect has checked"): a
        # 100,000-character one made a 100,000-character line in every face
        said = repr(model_type[:40]) + ("..." if len(model_type) > 40 else "")
        raise DataError(f"{p}: model_type must be a short name such as llama or gpt2, not {said}")
    quant = cfg.get("quantization_config")
    if isinstance(quant, dict) and quant:
        bits = "4-bit" if quant.get("load_in_4bit") or quant.get("bits") == 4 else "quantised"
        notes.append(
            f"the file's quantization_config ({bits} weights) is not applied: the mode (full, lora or qlora) decides "
            "how the weights are stored"
        )
    if model_type in _NOT_MODELLED:
        raise DataError(
            f"{p}: {model_type} models are not supported: {_NOT_MODELLED[model_type]}; the estimate would be wrong, "
            "so it is not made"
        )
    if model_type in _CLASS_DEFAULTS:
        # What transformers' config class fills in for a key the file leaves out (a multimodal
        # model's text_config often gives only what differs from them): only where the file gives
        # none of the key's names ("dim" is hidden_size too), and a null stays the file's own (null
        # key/value heads mean as many as the attention heads, as transformers reads it).
        given = {k for k, v in cfg.items() if v is not None or k in _NULL_MEANS_DEFAULT}
        filled = {k: v for k, v in _CLASS_DEFAULTS[model_type].items() if not given & _ALIASES.get(k, {k})}
        cfg = {**filled, **cfg}
        shown = [f"{k} {v:,}" for k, v in filled.items() if k in _SHAPE_KEYS]
        if shown:
            notes.append(
                f"not in the file, taken from {model_type}'s defaults as transformers does: {', '.join(shown)}"
            )
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list):
        other = next((k for k in kinds if k not in _ATTENTION_LAYERS), None)
        if other is not None:  # Qwen3-Next's "linear_attention", LFM2's "conv": read as attention, wrong
            said = repr(other)[:40]
            raise DataError(
                f"{p}: its layer_types include {said} layers, which are not modelled (only attention layers are); "
                "the estimate would be wrong, so it is not made"
            )
    if cfg.get("is_encoder_decoder") is True or model_type in _ENCODER_DECODER:
        raise DataError(
            f"{p}: {model_type or 'this model'} is an encoder-decoder model, which gpuselect does not build from a "
            "config (decoder-only GPT/Llama-style and encoder-only BERT/ViT-style models only)"
        )
    if isinstance(cfg.get("text_config"), dict) and not any(
        k in cfg for k in ("hidden_size", "n_embd", "d_model", "dim")
    ):
        raise DataError(
            f"{p}: the language model's settings are nested under text_config (a multimodal config such as "
            "LLaVA's), which gpuselect does not read; save that part as its own config.json"
        )
    if model_type in ("vit", "deit") or "patch_size" in cfg:
        if seq_len is not None:  # as the ViT preset says it: a silent no-op read as accepted
            raise DataError(
                f"{p}: a vision transformer trains fixed-size images (its tokens are the image's patches): "
                "--seq-len does not apply; change image_size in the config instead"
            )
        return _vit_shape(cfg, str(p)), model_type, notes
    hidden = _positive_int(cfg, str(p), ("hidden_size", "n_embd", "d_model", "dim"), limit=1 << 17)
    layers = _positive_int(cfg, str(p), _LAYER_KEYS, limit=1000)
    heads = _positive_int(cfg, str(p), ("num_attention_heads", "n_head", "num_heads", "n_heads"), limit=4096)
    vocab = _positive_int(cfg, str(p), ("vocab_size",), limit=10**7)
    positions = _positive_int(
        cfg,
        str(p),
        ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_seq_len"),
        default=_DEFAULT_POSITIONS.get(model_type, 2048),
        limit=1 << 27,  # Llama 4 Scout gives 10,485,760
    )
    table_rows = _table_rows(cfg, str(p), model_type, positions)
    if model_type in _PADDING_OFFSET:
        positions = max(1, positions - 2)  # RoBERTa's positions start after the padding index: 514 is 512 tokens
    positions = _rope_extended(cfg, positions)
    ffn = _positive_int(
        cfg, str(p), ("intermediate_size", "n_inner", "ffn_dim", "d_ff"), default=4 * hidden, limit=1 << 20
    )
    # Falcon names them num_kv_heads (40B) or n_head_kv (older files), or sets multi_query (7B: one).
    kv_default = 1 if cfg.get("multi_query") is True else heads
    kv = _positive_int(
        cfg, str(p), ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "n_head_kv"), default=kv_default, limit=4096
    )
    if cfg.get("multi_query") is True and not cfg.get("new_decoder_architecture"):
        kv = 1  # transformers' FalconConfig saves num_kv_heads = heads even then; multi_query decides
    head_dim = _positive_int(cfg, str(p), ("head_dim",), default=0, limit=1 << 14) or None
    if head_dim == hidden // heads and not hidden % heads:
        head_dim = None  # the usual width: stated only for clarity
    if hidden % heads and head_dim is None:
        raise DataError(f"{p}: hidden size {hidden} is not a multiple of the {heads} attention heads")
    if heads % kv:
        raise DataError(f"{p}: {heads} attention heads cannot be grouped into {kv} key/value heads")
    act = str(_first(cfg, "hidden_act", "hidden_activation", "activation_function") or "").lower()
    gated = act in ("silu", "swiglu", "swish") or model_type in _LLAMA_LIKE
    rms = "rms_norm_eps" in cfg or model_type in _LLAMA_LIKE
    rotary = (
        any(k in cfg for k in ("rope_theta", "rotary_pct", "rotary_emb_base", "rope_scaling", "rotary_dim"))
        or model_type in (*_LLAMA_LIKE, "gpt_neox", "gptj")
        or (model_type == "falcon" and not cfg.get("alibi"))  # Falcon is rotary unless it says alibi
    )
    tied = cfg.get("tie_word_embeddings", model_type not in _UNTIED_BY_DEFAULT)
    if not isinstance(tied, bool):
        raise DataError(f"{p}: tie_word_embeddings must be true or false, not {str(tied)[:40]!r}")
    drop = _first(cfg, "resid_pdrop", "hidden_dropout_prob", "hidden_dropout", "dropout")
    if drop is None and model_type in ("gpt2", *_ENCODERS):
        drop = 0.1  # the Hugging Face default of these configs
    dropout = isinstance(drop, (int, float)) and not isinstance(drop, bool) and drop > 0
    seq = seq_len if seq_len is not None else min(positions, 4096)
    if not 0 < seq <= positions:
        raise DataError(f"{p}: sequence length {seq:,} must be between 1 and the model's {positions:,} positions")
    experts, top_k, shared = _experts(cfg, str(p), gated)
    window = _sliding_window(cfg, model_type, seq)
    if window:
        notes.append(window)
    # a decoder fine-tuned as a classifier (LlamaForSequenceClassification) has a small score head,
    # not the vocabulary projection: read as a language model it had 7 % more parameters (Llama
    # 3.1 8B) and a logits buffer of 4 GB per 4,096-token sample
    task_head = model_type not in _ENCODERS and _task_head(cfg)
    if experts:
        ffn = _positive_int(cfg, str(p), ("moe_intermediate_size", "intermediate_size"), limit=1 << 20)
    shape = TransformerShape(
        layers=layers,
        hidden=hidden,
        heads=heads,
        vocab=vocab,
        seq_len=seq,
        ffn=ffn,
        kv_heads=kv,
        gated_ffn=gated,
        tied_embeddings=tied,
        # an encoder trains with a task head; pre-training one (its architectures say *ForMaskedLM)
        # projects every token onto the vocabulary, without a causal mask
        lm_head=(model_type not in _ENCODERS or _masked_lm(cfg)) and not task_head,
        causal=False if model_type in _ENCODERS else (True if task_head else None),
        head_outputs=_task_outputs(cfg, str(p)) if task_head else 2,
        dropout=dropout,
        norm="rmsnorm" if rms else "layernorm",
        rotary=rotary,
        fused_qkv=model_type in ("gpt2", "gpt_neox", "gpt_neo", "falcon", "phi3"),
        experts=experts,
        experts_per_token=top_k,
        shared_ffn=shared,
        head_dim=head_dim,
        table_rows=table_rows,
    )
    return shape, model_type, notes


def _sliding_window(cfg: dict[str, Any], model_type: str, seq: int) -> str | None:
    """A note where the config's sliding-window attention is shorter than the sequence: the
    arithmetic and the trace count every layer's attention over all the tokens, as SDPA runs a
    masked window; FlashAttention-2 or flex attention skip the rest, and their FLOPs and time are
    then overstated (gpt-oss-20b at 131,072 tokens: ~1.8x the step's FLOPs)."""
    window = cfg.get("sliding_window")
    if isinstance(window, bool) or not isinstance(window, int) or not 0 < window < seq:
        return None
    # Qwen's configs carry a window that is off unless use_sliding_window says so (their default)
    if cfg.get("use_sliding_window") is False or (model_type.startswith("qwen") and not cfg.get("use_sliding_window")):
        return None
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and kinds:
        sliding = kinds.count("sliding_attention")
        if not sliding:
            return None
        which = f"{sliding} of its {len(kinds)} layers attend"
    elif (
        isinstance(pattern := cfg.get("sliding_window_pattern"), int) and not isinstance(pattern, bool) and pattern > 0
    ):
        # Gemma 3: every pattern-th layer attends globally, the others in the window
        layers = _first(cfg, *_LAYER_KEYS)
        if not isinstance(layers, int) or pattern == 1:
            which = "some or all of its layers attend"
        else:
            which = f"{layers - layers // pattern} of its {layers} layers attend"
    else:
        which = "some or all of its layers attend"
    return (
        f"{which} only the last {window:,} tokens (sliding window), counted here as attention over all "
        f"{seq:,}, as PyTorch's SDPA runs a masked window; with FlashAttention-2 or flex attention, "
        "which skip the rest, the attention's FLOPs and time are overstated"
    )


def _table_rows(cfg: dict[str, Any], p: str, model_type: str, positions: int) -> int:
    """Rows of the learned position and token-type tables (``TransformerShape.table_rows``)."""
    if model_type not in _LEARNED_POSITIONS or cfg.get("position_embedding_type", "absolute") != "absolute":
        return 0
    rows = positions + (2 if model_type == "opt" else 0)
    if "type_vocab_size" in cfg and cfg["type_vocab_size"] == 0:
        return rows  # no token types (a zero is not a size _positive_int takes)
    types = _positive_int(
        cfg, p, ("type_vocab_size",), default=2 if model_type in _TOKEN_TYPES_BY_DEFAULT else 0, limit=1 << 20
    )
    return rows + types


#: Hugging Face model types whose layers are Llama's: a gated (SwiGLU) FFN, RMSNorm, rotary positions.
_LLAMA_LIKE = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "olmo",
    "olmo2",
    "olmoe",
    "granite",
    "phi3",
)
#: Model types whose transformers config class defaults ``tie_word_embeddings`` to False (the
#: library's base default, and GPT-2's, BERT's, Gemma's and Falcon's, is True).
_UNTIED_BY_DEFAULT = (*(t for t in _LLAMA_LIKE if not t.startswith("gemma")), "gpt_neox")
#: Encoder-decoder model types (their ``is_encoder_decoder`` is often left to the class default):
#: read with the decoder-only keys they would lose a whole stack.
_ENCODER_DECODER = frozenset(
    [
        "t5",
        "mt5",
        "umt5",
        "longt5",
        "switch_transformers",
        "bart",
        "mbart",
        "pegasus",
        "pegasus_x",
        "marian",
        "whisper",
        "fsmt",
        "prophetnet",
        "led",
        "blenderbot",
        "blenderbot-small",
        "m2m_100",
        "nllb_moe",
        "seamless_m4t",
        "plbart",
        "bigbird_pegasus",
    ]
)
#: Encoder-only model types (BERT's layers, a task head, no vocabulary projection per token).
_ENCODERS = ("bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra", "mpnet")
#: Model types with a learned position table (its rows: the config's positions; OPT's has two more,
#: its padding offset) and, where the class gives them by default, BERT's token types.
_LEARNED_POSITIONS = ("gpt2", "gpt_neo", "opt", *_ENCODERS)
_TOKEN_TYPES_BY_DEFAULT = ("bert", "electra")
#: The positions transformers' config classes give where a file leaves them out (a position table's
#: size: a DistilBERT config without them was read with 2,048 positions, four times its table).
_DEFAULT_POSITIONS = {
    "gpt2": 1024,
    **dict.fromkeys(("bert", "distilbert", "electra", "roberta", "xlm-roberta", "camembert"), 512),
    "mpnet": 514,
}
#: RoBERTa-style embeddings whose positions start after the padding index (two fewer tokens).
_PADDING_OFFSET = ("roberta", "xlm-roberta", "camembert", "mpnet")
_KNOWN_TYPES = (*_LLAMA_LIKE, "gpt2", "gpt_neox", "gpt_neo", "falcon", *_ENCODERS, "vit", "deit")
#: Model types whose configs were read against their published parameter counts (within 1.2 %).
_CHECKED_TYPES = frozenset((*_KNOWN_TYPES, "phi", "gptj", "mpt", "phimoe", "gpt_oss", "qwen2_moe"))
#: Model types whose layers the trace does not build, each with why: read with the usual keys they
#: came out as ordinary transformers, confidently wrong (ALBERT 9x its parameters, Jamba +77 %).
_NOT_MODELLED = {
    **dict.fromkeys(
        ("mamba", "mamba2", "falcon_mamba", "rwkv", "recurrent_gemma", "xlstm"),
        "their state-space or recurrent layers are not modelled",
    ),
    **dict.fromkeys(
        ("jamba", "zamba", "zamba2", "bamba", "falcon_h1", "nemotron_h", "granitemoehybrid"),
        "they mix state-space (Mamba) and attention layers, which is not modelled",
    ),
    **dict.fromkeys(
        ("qwen3_next", "minimax"),
        "they mix linear-attention and softmax-attention layers, which is not modelled",
    ),
    "lfm2": "LFM2 mixes short-convolution and attention layers, which is not modelled",
    # read as a GPT-style causal decoder it came out 13 % (base) and 19 % (large) under its card
    "modernbert": "ModernBERT's gated FFN and alternating local and global attention are not modelled",
    "albert": "ALBERT shares one layer's weights across its layers and factorises its embedding, which is not modelled",
    **dict.fromkeys(("deberta", "deberta-v2"), "DeBERTa's disentangled attention is not modelled"),
    **dict.fromkeys(
        ("llama4", "llama4_text"),
        "Llama 4's interleaved dense and expert layers with a shared expert are not modelled",
    ),
    **dict.fromkeys(
        (
            "qwen2_vl",
            "qwen2_5_vl",
            "qwen2_5_omni",
            "qwen2_audio",
            "llava",
            "llava_next",
            "llava_onevision",
            "mllama",
            "gemma3",
            "gemma3n",
            "paligemma",
            "idefics",
            "idefics2",
            "idefics3",
            "chameleon",
            "clip",
            "siglip",
            "blip",
            "blip-2",
            "pixtral",
            "mistral3",
        ),
        "a multimodal model's vision or audio tower is not modelled (to estimate its language model alone, save "
        "its text_config as its own config.json)",
    ),
}
#: The refused types an ``architectures`` entry may name where a config gives no model_type (not the
#: multimodal ones: Gemma3ForCausalLM is Gemma 3's text-only model, and a multimodal config nests a
#: text_config, refused on its own).
_REFUSED_BY_NAME = (
    *(t for t, why in _NOT_MODELLED.items() if "multimodal" not in why),
    *sorted(_ENCODER_DECODER),
)
_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
#: Kinds of layer a config's ``layer_types`` may list: attention over all or a window of the tokens.
_ATTENTION_LAYERS = frozenset(("full_attention", "sliding_attention"))
#: transformers' config class defaults for what a file leaves out, for the types whose text_config a
#: multimodal config nests with only the keys that differ (LLaVA-1.5's Llama, Gemma 3's text model).
_CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
    },
    "mistral": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 4096 * 32,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
    },
    "qwen2": {
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
    },
    "gemma3_text": {
        "vocab_size": 262_208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 131_072,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
    },
}


#: The names a config may give each key by (``_positive_int``'s lookups below).
_ALIASES: dict[str, set[str]] = {
    k: set(names)
    for names in (
        ("hidden_size", "n_embd", "d_model", "dim"),
        ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
        ("num_attention_heads", "n_head", "num_heads", "n_heads"),
        ("max_position_embeddings", "n_positions", "n_ctx", "seq_length", "max_seq_len"),
        ("intermediate_size", "n_inner", "ffn_dim", "d_ff"),
        ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "n_head_kv"),
    )
    for k in names
}
#: Keys whose null in a file means something (transformers: key/value heads = attention heads).
_NULL_MEANS_DEFAULT = frozenset({"num_key_value_heads"})


_TASK_HEADS = ("ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering")


def _task_head(cfg: dict[str, Any]) -> bool:
    """Whether the config's architectures all name a task head (classification, QA) on the model."""
    archs = cfg.get("architectures")
    return (
        isinstance(archs, list) and bool(archs) and all(isinstance(a, str) and a.endswith(_TASK_HEADS) for a in archs)
    )


def _task_outputs(cfg: dict[str, Any], p: str) -> int:
    """A task head's outputs per token: its labels (transformers' default 2), start and end for QA."""
    archs = cfg.get("architectures") or []
    if any(str(a).endswith("ForQuestionAnswering") for a in archs):
        return 2
    labels = cfg.get("id2label")
    if isinstance(labels, dict) and labels:
        return len(labels)
    return _positive_int(cfg, p, ("num_labels",), default=2, limit=1 << 20)


def _masked_lm(cfg: dict[str, Any]) -> bool:
    """Whether the config's architectures name masked-language-model pre-training."""
    archs = cfg.get("architectures")
    return isinstance(archs, list) and any(isinstance(a, str) and a.endswith("ForMaskedLM") for a in archs)


def _rope_extended(cfg: dict[str, Any], positions: int) -> int:
    """The positions a RoPE scaling block extends the model to (YaRN, linear, dynamic NTK: factor x
    the original positions) where it names the original (Qwen2.5's YaRN block: 4 x 32,768). Without
    that key the config's own figure may already be the extended one (Gemma 3: 131,072 with a linear
    factor 8), and Llama 3.1's block leaves max_position_embeddings extended: both stay."""
    rope = cfg.get("rope_scaling")
    if not isinstance(rope, dict):
        return positions
    kind = rope.get("rope_type", rope.get("type"))
    factor = rope.get("factor")
    if kind not in ("linear", "dynamic", "yarn") or isinstance(factor, bool) or not isinstance(factor, (int, float)):
        return positions
    if not 1 <= factor <= 1024:
        return positions
    original = rope.get("original_max_position_embeddings")
    if isinstance(original, bool) or not isinstance(original, int) or not 0 < original <= positions:
        return positions
    return max(positions, int(original * factor))


def _model_type(cfg: dict[str, Any]) -> str:
    """The config's ``model_type``; where it gives none, the one its ``architectures`` name
    (``LlamaForCausalLM`` -> ``llama``, ``GPT2LMHeadModel`` -> ``gpt2``), so that a config saved
    without the key is not read as a GPT-2-style network."""
    mt = cfg.get("model_type")
    if isinstance(mt, str) and mt.strip():
        return mt.strip().lower()
    archs = cfg.get("architectures")
    if isinstance(archs, list):
        for a in archs:
            if not isinstance(a, str):
                continue
            stem = re.split(r"For[A-Z]|LMHeadModel$|Model$", a, maxsplit=1)[0].lower()
            # the refused types too: JambaForCausalLM without the key was read as a 92 B dense-style
            # MoE (its card: 52 B), Llama4ForCausalLM as 101 B with 10 B active (109 B, 17 B)
            for known in (*_KNOWN_TYPES, *_REFUSED_BY_NAME):
                if stem and stem == known.replace("_", "").replace("-", ""):
                    return known
    return ""


#: Config keys of what the trace does not build: the config is refused rather than read as a dense model.
_UNMODELLED_MOE = {
    "kv_lora_rank": "multi-head latent attention (DeepSeek-V2/V3)",
    "q_lora_rank": "multi-head latent attention (DeepSeek-V2/V3)",
    "ffn_config": "DBRX's nested expert settings",
}


#: Where configs give the routed experts per layer (Mixtral/gpt-oss, Qwen-MoE/OLMoE, DeepSeek, others).
_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


def _names_moe(cfg: dict[str, Any]) -> bool:
    """Whether the config's architecture or model type is a mixture-of-experts one by name."""
    names = [cfg.get("model_type")]
    archs = cfg.get("architectures")
    if isinstance(archs, list):
        names += archs
    return any(isinstance(n, str) and ("moe" in n.lower() or "mixtral" in n.lower()) for n in names)


def _experts(cfg: dict[str, Any], p: str, gated: bool) -> tuple[int, int, int]:
    """(routed experts, experts per token, shared experts' intermediate size) of a mixture-of-experts
    config; (0, 0, 0) for a dense model. Only models whose every layer is the same MoE block are
    read: a config that mixes dense and MoE layers, or whose attention the trace does not build,
    is refused with the reason."""
    for key, what in _UNMODELLED_MOE.items():
        if cfg.get(key) is not None:
            raise DataError(f"{p}: {what} ({key}) is not modelled; the estimate would be wrong, so it is not made")
    given = {key: cfg[key] for key in _EXPERT_KEYS if cfg.get(key) is not None}
    if len({repr(v) for v in given.values()}) > 1:
        named = ", ".join(f"{key} = {v!r}" for key, v in given.items())
        raise DataError(f"{p}: the expert counts disagree ({named}); which one the model uses is unclear")
    experts = _first(cfg, *_EXPERT_KEYS)
    if experts in (None, 0) and _names_moe(cfg):
        # Hugging Face's own defaults would build experts here (MixtralConfig: 8); reading it as
        # dense would undercount the model several times over.
        raise DataError(
            f"{p}: it names a mixture-of-experts model but gives no expert count ({', '.join(_EXPERT_KEYS)})"
        )
    if experts in (None, 0, 1) or isinstance(experts, bool):
        return 0, 0, 0
    n = _positive_int(cfg, p, _EXPERT_KEYS, limit=4096)
    k = _positive_int(cfg, p, ("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_top_k"))
    if k > n:
        raise DataError(f"{p}: {k} experts per token is more than the {n} experts")
    # each key's values that still mean "every layer is an MoE layer"
    uniform: dict[str, tuple[object, ...]] = {
        "first_k_dense_replace": (None, 0),
        "decoder_sparse_step": (None, 1),
        "moe_layer_freq": (None, 1),
        "mlp_only_layers": (None, ()),
    }
    for key, ok in uniform.items():
        value = cfg.get(key)
        if (tuple(value) if isinstance(value, list) else value) not in ok:
            raise DataError(
                f"{p}: this model mixes dense and mixture-of-experts layers ({key} = {cfg.get(key)!r}), "
                "which is not modelled; only models whose every layer has the same experts are"
            )
    if not gated:
        raise DataError(f"{p}: mixture-of-experts models are modelled with gated (SwiGLU) experts; this one is not")
    shared = _first(cfg, "shared_expert_intermediate_size")
    if shared is None and _first(cfg, "n_shared_experts"):
        per = _positive_int(cfg, p, ("moe_intermediate_size", "intermediate_size"), limit=1 << 20)
        shared = per * _positive_int(cfg, p, ("n_shared_experts",), limit=4096)
    if shared is not None and (isinstance(shared, bool) or not isinstance(shared, int) or not 0 <= shared <= 1 << 22):
        raise DataError(f"{p}: shared_expert_intermediate_size must be a whole number, not {shared!r}")
    return n, k, int(shared or 0)


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
    path = config_file(path)
    shape, model_type, notes = _shape_and_type(path, seq_len=seq_len)
    unchecked = "".join(f"; {n}" for n in notes) + (
        (f"; model type {model_type!r} is not one gpuselect has checked" if model_type else "; no model type given")
        + ": read as "
        + ("a BERT-style encoder" if not shape.is_causal else "a GPT/Llama-style decoder")
        if model_type not in _CHECKED_TYPES
        else ""
    )
    # A Hugging Face model folder's config.json is named after its folder (Llama-3.1-8B/config.json);
    # any other file after itself (llama8b.json), so the name is the file the user gave.
    file = Path(path)
    name = (file.parent.resolve().name or file.stem) if file.name == "config.json" else file.stem
    if shape.patch:
        side = round((shape.seq_len - 1) ** 0.5) * shape.patch
        return transformer_workload(
            f"config:{name}",
            f"{name} (from {file.name})",
            shape,
            mode=mode,
            lora_rank=lora_rank,
            sample_unit="image",
            description=f"vision transformer read from {path}: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} "
            f"heads, {side}x{side} images in {shape.patch}x{shape.patch} patches, {shape.vocab} classes"
            + "".join(f"; {n}" for n in notes)
            + (
                ""
                if model_type in _CHECKED_TYPES
                else (
                    f"; model type {model_type!r} is not one gpuselect has checked"
                    if model_type
                    else "; no model type given"
                )
                + ": read as a ViT image classifier (a class token and a classification head)"
            ),
            dataset_size=1_281_167,
            epochs=1,
            batch_size=64,
            source=f"computed from {path} (transformer arithmetic)",
        )
    return transformer_workload(
        f"config:{name}",
        f"{name} (from {file.name})",
        shape,
        mode=mode,
        lora_rank=lora_rank,
        description=f"transformer read from {path}: {shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads, "
        f"vocabulary {shape.vocab}, sequence {shape.seq_len}; "
        f"{'gated (SwiGLU)' if shape.gated_ffn else 'plain'} FFN, {'RMSNorm' if shape.norm == 'rmsnorm' else 'LayerNorm'}, "
        f"{'rotary' if shape.rotary else 'learned'} positions, {'tied' if shape.tied_embeddings else 'untied'} embeddings"
        + (
            ("; an encoder, with a masked-LM head on every token" if shape.lm_head else "; an encoder with a task head")
            if not shape.is_causal
            else ""
            if shape.lm_head
            else f"; a task head of {shape.head_outputs} outputs instead of the vocabulary projection"
        )
        + (
            f"; mixture of experts: {shape.experts_per_token} of {shape.experts} experts per token"
            + (" and a shared expert" if shape.shared_ffn else "")
            + f"; {shape.active_params() / 1e9:.1f} B of the {shape.params() / 1e9:.1f} B parameters active per token "
            # cards differ here: Mixtral's 12.9 B and Qwen3's 3.3 B count it, gpt-oss-20b's 3.6 B does not (4.2 B with it)
            + "(the embedding table included)"
            if shape.is_moe
            else ""
        )
        + unchecked,
        dataset_size=100_000,
        epochs=1,
        batch_size=8,
        source=f"computed from {path} (transformer arithmetic)",
    )
