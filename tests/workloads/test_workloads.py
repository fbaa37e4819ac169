"""Workload presets: FLOPs checked against torch's FLOP counter; HF configs read as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuselect.cli import main
from gpuselect.errors import DataError, UsageError
from gpuselect.types import Mode
from gpuselect.workloads.model import public_id
from gpuselect.workloads.presets import PRESETS, custom_workload, get_preset
from gpuselect.workloads.transformer import TransformerShape, shape_from_hf_config, workload_from_hf_config
from tests.hf_configs import GPT2_SMALL

REQUIRED_IDS = {
    "mnist-mlp",
    "simple-cnn",
    "vgg16",
    "lstm-lm",
    "resnet50",
    "ssd",
    "bert_base_squad",
    "bert_large_squad",
    "transformerxlbase",
    "transformerxllarge",
    "gnmt",
    "ncf",
    "tacotron2",
    "waveglow",
    "maskrcnn",
    "vit-b16",
    "gpt2-124m",
    *(f"llama-{s}-{m}" for s in ("1b", "8b", "70b") for m in ("full", "lora", "qlora")),
}


def test_every_required_preset_exists_with_sane_figures() -> None:
    assert set(PRESETS) >= REQUIRED_IDS
    for w in PRESETS.values():
        assert w.params > 0 and 0 < w.trainable_params <= w.params, w.id
        assert w.forward_flops_per_sample > 0 and w.activation_bytes_per_sample > 0, w.id
        assert w.default_dataset_size > 0 and w.default_epochs > 0 and w.default_batch_size > 0, w.id
        assert w.source, w.id
    assert 130e6 < PRESETS["vgg16"].params < 140e6  # "~138 M parameters"


def test_llama_sizes_match_their_names() -> None:
    assert 1.1e9 < PRESETS["llama-1b-full"].params < 1.4e9
    assert 7.8e9 < PRESETS["llama-8b-full"].params < 8.2e9
    assert 69e9 < PRESETS["llama-70b-full"].params < 72e9
    assert PRESETS["llama-8b-lora"].trainable_params < PRESETS["llama-8b-full"].params / 100
    assert PRESETS["llama-8b-qlora"].training_flops_per_sample < PRESETS["llama-8b-full"].training_flops_per_sample


@pytest.mark.parametrize("preset_id", sorted(w.id for w in PRESETS.values() if w.profiler_checked))
def test_profiler_checked_presets_match_torch_flop_counter(preset_id: str) -> None:
    from gpuselect.workloads.profile import profile_factory
    from gpuselect.workloads.reference_models import REFERENCE

    factory, shape, dtype = REFERENCE[preset_id]
    measured = profile_factory(factory, shape, dtype)
    preset = PRESETS[preset_id]
    assert preset.forward_flops_per_sample == pytest.approx(measured.forward_flops_per_sample, rel=0.01)
    assert preset.params == pytest.approx(measured.params, rel=0.01)


def test_profiling_a_user_model_file(tmp_path: Path) -> None:
    from gpuselect.workloads.profile import profile_user_model

    f = tmp_path / "mymodel.py"
    f.write_text(
        "import torch\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(100, 50), torch.nn.ReLU(), torch.nn.Linear(50, 10))\n"
    )
    prof = profile_user_model(f, "build", (100,))
    assert prof.forward_flops_per_sample == 2 * (100 * 50 + 50 * 10)
    assert prof.params == 100 * 50 + 50 + 50 * 10 + 10
    with pytest.raises(UsageError):
        profile_user_model(f, "missing", (100,))
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(DataError, match="boom"):
        profile_user_model(bad, "build", (100,))


def test_hf_config_read_as_data(tmp_path: Path) -> None:
    cfg = {
        "model_type": "llama",
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "intermediate_size": 8192,
        "max_position_embeddings": 131072,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
    }
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    shape = shape_from_hf_config(p, seq_len=2048)
    assert shape.params() == PRESETS["llama-1b-full"].params  # same shape as the preset
    w = workload_from_hf_config(p, seq_len=2048)
    assert w.forward_flops_per_sample == pytest.approx(PRESETS["llama-1b-full"].forward_flops_per_sample)


def test_gpt2_style_config_keys(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text(
        json.dumps(
            {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}
        )
    )
    shape = shape_from_hf_config(p)
    # Hugging Face's GPT-2 defaults: dropout 0.1, one fused q/k/v matrix (c_attn)
    assert shape == TransformerShape(
        layers=12,
        hidden=768,
        heads=12,
        vocab=50257,
        seq_len=1024,
        ffn=3072,
        kv_heads=12,
        dropout=True,
        fused_qkv=True,
        table_rows=1024,  # the learned position table
    )
    assert shape.forward_flops_per_sequence() == pytest.approx(PRESETS["gpt2-124m"].forward_flops_per_sample)


@pytest.mark.parametrize(
    ("cfg", "exact"),
    # transformers' own counts (sum of p.numel()) of these architectures; the arithmetic leaves out
    # only the linear layers' biases and the LayerNorms' (under 0.1 %)
    [
        (
            GPT2_SMALL,
            124_439_808,
        ),
        # a small GPT-2 with a long context: its position table is a sixth of the model
        (
            {"model_type": "gpt2", "n_embd": 128, "n_layer": 2, "n_head": 4, "vocab_size": 8000, "n_positions": 2048},
            1_682_944,
        ),
        # OPT's position table has two rows more than its positions (the padding offset)
        (
            {
                "model_type": "opt",
                "hidden_size": 768,
                "ffn_dim": 3072,
                "num_hidden_layers": 12,
                "num_attention_heads": 12,
                "vocab_size": 50272,
                "max_position_embeddings": 2048,
            },
            125_239_296,
        ),
        # DistilBertModel (no token types)
        (
            {
                "model_type": "distilbert",
                "dim": 768,
                "n_layers": 6,
                "n_heads": 12,
                "vocab_size": 30522,
                "max_position_embeddings": 512,
            },
            66_362_880,
        ),
    ],
    ids=["gpt2", "tiny-gpt2-long-context", "opt-125m", "distilbert"],
)
def test_learned_position_tables_are_counted(tmp_path: Path, cfg: dict[str, Any], exact: int) -> None:
    """A config with learned positions left its position table (and BERT's token types) out of the
    parameters: 16 % short for the small GPT-2, 1.5 % for DistilBERT, so too little weight,
    gradient and optimizer memory."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    shape = shape_from_hf_config(p, seq_len=128)
    assert shape.params() == pytest.approx(exact, rel=0.002)


def test_a_config_without_positions_takes_its_class_default(tmp_path: Path) -> None:
    """transformers' GPT-2 and DistilBERT classes give 1,024 and 512 positions where the file says
    none; read as 2,048 they trained sequences four times DistilBERT's table."""
    distil = _read(
        tmp_path, {"model_type": "distilbert", "dim": 768, "n_layers": 6, "n_heads": 12, "vocab_size": 30522}
    )
    assert distil.seq_len == 512 and distil.shape.table_rows == 512
    gpt2 = _read(tmp_path, {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257})
    assert gpt2.seq_len == 1024 and gpt2.shape.table_rows == 1024


def test_qlora_keeps_a_position_table_in_16_bits(tmp_path: Path) -> None:
    """bitsandbytes quantises the linear layers only: a learned position table stays 16-bit."""
    from gpuselect.estimate.memory import weight_storage_bytes

    keys = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257}
    short = _read(tmp_path, {**keys, "n_positions": 1024}, mode=Mode.QLORA, seq_len=512)
    long = _read(tmp_path, {**keys, "n_positions": 2048}, mode=Mode.QLORA, seq_len=512)
    assert weight_storage_bytes(long) - weight_storage_bytes(short) == pytest.approx(1024 * 768 * 2)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"hidden_size": 768, "num_attention_heads": 12, "vocab_size": 100}', "num_hidden_layers"),
        ('{"hidden_size": -1, "num_hidden_layers": 2, "num_attention_heads": 1, "vocab_size": 10}', "hidden_size"),
        ('{"hidden_size": 100, "num_hidden_layers": 2, "num_attention_heads": 3, "vocab_size": 10}', "multiple"),
        (
            '{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "max_position_embeddings": 128}',
            None,
        ),
    ],
)
def test_bad_configs_are_rejected_with_a_reason(tmp_path: Path, content: str, words: str | None) -> None:
    p = tmp_path / "config.json"
    p.write_text(content)
    if words is None:
        assert shape_from_hf_config(p).seq_len == 128
        with pytest.raises(DataError, match="sequence length"):
            shape_from_hf_config(p, seq_len=4096)
        return
    with pytest.raises(DataError, match=words):
        shape_from_hf_config(p)


_MIXTRAL = {
    "model_type": "mixtral",
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "rms_norm_eps": 1e-5,
    "rope_theta": 1e6,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
}
_QWEN15_MOE = {
    "model_type": "qwen2_moe",
    "hidden_act": "silu",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "num_hidden_layers": 24,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "rms_norm_eps": 1e-6,
    "rope_theta": 1e6,
    "tie_word_embeddings": False,
    "vocab_size": 151936,
    "max_position_embeddings": 8192,
}
_QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "hidden_act": "silu",
    "hidden_size": 2048,
    "head_dim": 128,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "num_hidden_layers": 48,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1e6,
    "tie_word_embeddings": False,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
}
_GEMMA_7B = {
    "model_type": "gemma",
    "hidden_act": "gelu",
    "hidden_size": 3072,
    "head_dim": 256,
    "intermediate_size": 24576,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "num_hidden_layers": 28,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "vocab_size": 256000,
    "max_position_embeddings": 8192,
}


_FALCON_7B = {  # one key/value head, said only by multi_query
    "model_type": "falcon",
    "hidden_size": 4544,
    "num_attention_heads": 71,
    "num_hidden_layers": 32,
    "vocab_size": 65024,
    "multi_query": True,
    "parallel_attn": True,
    "bias": False,
}
_FALCON_40B = {  # eight key/value heads, under Falcon's own key
    "model_type": "falcon",
    "hidden_size": 8192,
    "num_attention_heads": 128,
    "num_hidden_layers": 60,
    "num_kv_heads": 8,
    "vocab_size": 65024,
    "new_decoder_architecture": True,
    "parallel_attn": True,
    "bias": False,
}
_GEMMA3_4B = {  # a gated FFN named by its model type; its activation under hidden_activation
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "intermediate_size": 10240,
    "num_attention_heads": 8,
    "num_hidden_layers": 34,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "vocab_size": 262208,
    "max_position_embeddings": 131072,
    "hidden_activation": "gelu_pytorch_tanh",
    "rms_norm_eps": 1e-6,
}


@pytest.mark.parametrize(
    ("cfg", "total_b", "active_b"),
    # the model cards' totals: Mixtral 8x7B 46.7 B (12.9 B active), Qwen1.5-MoE-A2.7B 14.3 B (2.7 B),
    # Qwen3-30B-A3B 30.5 B (3.3 B), Gemma 7B 8.54 B (its 16 heads of 256 are wider than hidden 3072),
    # Falcon-7B 6.92 B (the card), Falcon-40B 41.3 B (the config's arithmetic: 60 x (q, o 2 x 8192^2
    # + k, v 2 x 8192 x 512 + FFN 2 x 8192 x 32768) + the tied table; 47-49 B with all 128 heads'
    # keys and values, as they were read before), Gemma 3 4B's text model 3.88 B (the card)
    [
        (_MIXTRAL, 46.7, 12.9),
        (_QWEN15_MOE, 14.3, 2.7),
        (_QWEN3_MOE, 30.5, 3.3),
        (_GEMMA_7B, 8.54, 8.54),
        (_FALCON_7B, 6.92, 6.92),
        (_FALCON_40B, 41.3, 41.3),
        (_GEMMA3_4B, 3.88, 3.88),
    ],
    ids=["mixtral-8x7b", "qwen1.5-moe-a2.7b", "qwen3-30b-a3b", "gemma-7b", "falcon-7b", "falcon-40b", "gemma3-4b"],
)
def test_moe_and_head_dim_configs_count_what_the_model_cards_say(
    tmp_path: Path, cfg: dict[str, object], total_b: float, active_b: float
) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    shape = shape_from_hf_config(p, seq_len=2048)
    assert shape.params() / 1e9 == pytest.approx(total_b, rel=0.01)
    assert shape.active_params() / 1e9 == pytest.approx(active_b, rel=0.03)
    w = workload_from_hf_config(p, seq_len=2048)
    # a token's forward: 2 FLOPs per active weight (the embedding lookup none, a tied table once, as
    # the head), and attention's QK^T and AV at the queries' width (not hidden: Gemma's and Qwen3's differ)
    lookup = 0 if shape.tied_embeddings else shape.vocab * shape.hidden
    per_token = 2 * (shape.active_params() - lookup) + 4 * 2048 * shape.q_dim * shape.layers
    assert w.forward_flops_per_sample / 2048 == pytest.approx(per_token, rel=1e-3)


def test_a_resaved_falcon_7b_config_keeps_its_one_key_value_head(tmp_path: Path) -> None:
    # transformers' FalconConfig writes num_kv_heads = num_attention_heads into every saved config,
    # multi-query ones too: multi_query decides where the new decoder architecture is off.
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**_FALCON_7B, "num_kv_heads": 71, "new_decoder_architecture": False}))
    assert shape_from_hf_config(p).kv_heads == 1
    p.write_text(json.dumps({**_FALCON_40B}))
    assert shape_from_hf_config(p).kv_heads == 8


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"kv_lora_rank": 512, "q_lora_rank": 1536}, "multi-head latent attention"),
        ({"first_k_dense_replace": 1}, "mixes dense and mixture-of-experts layers"),
        ({"mlp_only_layers": [0, 5]}, "mixes dense"),
        ({"decoder_sparse_step": 2}, "mixes dense"),
        ({"num_experts_per_tok": 9}, "more than the 8 experts"),
        ({"num_experts_per_tok": None}, "num_experts_per_tok"),
        ({"hidden_act": "gelu", "model_type": "switch"}, "gated"),
        ({"ffn_config": {"moe_num_experts": 16}}, "DBRX"),
        ({"num_local_experts": 0}, "names a mixture-of-experts model but gives no expert count"),
        ({"num_local_experts": None}, "no expert count"),
        ({"num_experts": 16}, r"expert counts disagree \(num_local_experts = 8, num_experts = 16\)"),
    ],
)
def test_moe_configs_the_trace_cannot_build_are_refused(tmp_path: Path, extra: dict[str, object], words: str) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**_MIXTRAL, **extra}))
    with pytest.raises(DataError, match=words):
        shape_from_hf_config(p)


def test_a_config_with_one_expert_is_dense(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**_MIXTRAL, "num_local_experts": 1, "num_experts_per_tok": 1}))
    assert not shape_from_hf_config(p).is_moe


@pytest.mark.parametrize(
    ("params", "flops"), [(0, 1e9), (-5, 1e9), (float("nan"), 1e9), (1e6, float("inf")), (1e30, 1e9), (1e6, 0)]
)
def test_custom_workload_rejects_nonsense(params: float, flops: float) -> None:
    with pytest.raises(UsageError):
        custom_workload(params, flops)


def test_a_sentence_opens_with_the_custom_workload_capitalised_and_user_names_as_typed() -> None:
    from gpuselect.workloads.model import sentence_start

    w = custom_workload(1e9, 6e12)
    assert w.name == "custom workload"  # the name itself is unchanged: mid-sentence it stays lower case
    assert sentence_start(w.name) == "Custom workload"
    for name in ("build_model from net.py", "llama8b (from llama8b.json)", PRESETS["resnet50"].name):
        assert sentence_start(name) == name


def test_unknown_preset() -> None:
    with pytest.raises(UsageError, match="gpuselect workloads"):
        get_preset("llama-9000b-full")


def test_workloads_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workloads", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "workloads" and {w["id"] for w in doc["workloads"]} >= {public_id(i) for i in REQUIRED_IDS}
    assert main(["workloads"]) == 0
    assert "llama-70b-qlora" in capsys.readouterr().out


def test_workloads_show_the_memory_models_activations(capsys: pytest.CaptureFixture[str]) -> None:
    # The listing's activation figure is the one the fit decision uses (fused attention, no score
    # matrix): the Llama 3.1 8B preset's stored 30.6 GB per 2,048-token sample assumed the s x s
    # scores were kept; the trace's saved tensors come to about half of that.
    from gpuselect.estimate.memory import MemoryOptions, activation_bytes_per_sample

    assert main(["workloads", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_id = {w["id"]: w for w in doc["workloads"]}
    w = get_preset("llama-8b-full")
    assert by_id["llama-8b-full"]["activation_bytes_per_sample"] == pytest.approx(
        activation_bytes_per_sample(w, MemoryOptions())
    )
    assert by_id["llama-8b-full"]["activation_bytes_per_sample"] < 0.7 * w.activation_bytes_per_sample
    assert main(["workloads"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("llama-8b-full "))
    assert f"{by_id['llama-8b-full']['activation_bytes_per_sample'] / 1e6:.1f}" in line


LLAMA_8B = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}


@pytest.mark.parametrize(
    "keys",
    [
        {"architectures": ["LlamaForCausalLM"]},  # no model_type: the architecture names it
        {"model_type": "llama"},  # transformers' LlamaConfig: tie_word_embeddings defaults to False
        {"model_type": "llama", "tie_word_embeddings": False},
    ],
)
def test_a_llama_config_is_read_as_llama_with_its_own_defaults(tmp_path: Path, keys: dict[str, object]) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**LLAMA_8B, **keys}))
    shape = shape_from_hf_config(p, seq_len=2048)
    # before: 5.63 B (read as GPT-2 style) and 7.50 B (tied embeddings) instead of the model card's 8.03 B
    assert shape.params() == PRESETS["llama-8b-full"].params
    assert shape.gated_ffn and shape.norm == "rmsnorm" and shape.rotary and not shape.tied_embeddings
    assert "gated (SwiGLU) FFN, RMSNorm, rotary positions, untied embeddings" in workload_from_hf_config(p).description


def test_a_bad_value_is_named_by_the_key_the_file_gave(tmp_path: Path) -> None:
    """Qwen-MoE's num_experts = 128.0 was reported as "num_local_experts must be a whole number",
    a key the file does not have."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**LLAMA_8B, "model_type": "qwen3_moe", "num_experts": 128.0, "num_experts_per_tok": 8}))
    with pytest.raises(DataError, match=r": num_experts must be a whole number between 1 and 4,096, not 128\.0$"):
        shape_from_hf_config(p)
    p.write_text(json.dumps({**LLAMA_8B, "model_type": "llama", "n_layer": 2.5, "num_hidden_layers": None}))
    with pytest.raises(DataError, match=r": n_layer must be a whole number"):
        shape_from_hf_config(p)


def test_tie_word_embeddings_must_be_a_boolean(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**LLAMA_8B, "model_type": "llama", "tie_word_embeddings": "yes"}))
    with pytest.raises(DataError, match="tie_word_embeddings must be true or false"):
        shape_from_hf_config(p)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--workload", "resnet50", "--seq-len", "8192"], "--seq-len applies to --config and the Llama and GPT-2"),
        (["--workload", "gpt2-124m", "--seq-len", "4096"], "beyond gpt2-124m's 1,024 positions"),
        (["--params", "1e6", "--flops-per-sample", "1e6", "--seq-len", "8"], "--seq-len applies to --config"),
        (["--workload", "resnet50", "--flops-per-sample", "5"], "--flops-per-sample goes with --params"),
        (["--workload", "resnet50", "--factory", "build"], "--factory and --input-shape go with --model"),
        (["--workload", "llama-8b-lora", "--lora-rank", "65536"], "too large for this model"),
        # up to the hidden size (2,048) was taken: 1,443 M adapter weights on a 1,236 M model
        (["--workload", "llama-1b-lora", "--lora-rank", "2048"], "(at most rank 1,381)"),
        (["--workload", "resnet50", "--gpus", " , "], "--gpus names no GPU"),
    ],
)
def test_an_option_the_workload_cannot_use_is_refused(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", *argv, "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_language_model_preset_takes_another_sequence_length() -> None:
    from gpuselect.workloads.build import build_workload

    base = PRESETS["llama-8b-lora"]
    long = build_workload(workload="llama-8b-lora", seq_len=8192)
    assert long.seq_len == 8192 and long.params == base.params and long.mode == "lora"
    # 4x the tokens, and attention grows with the square of the length: more than 4x the FLOPs
    assert long.forward_flops_per_sample > 4 * base.forward_flops_per_sample
    assert long.name == "Llama 3.1 8B LoRA fine-tuning (seq 8,192)"
    # the mode first (the full preset's QLoRA sibling), then the length
    q = build_workload(workload="llama-8b-full", seq_len=4096, mode="qlora")
    assert q.name == "Llama 3.1 8B QLoRA fine-tuning (seq 4,096)" and q.mode == "qlora" and q.seq_len == 4096
    assert build_workload(workload="llama-8b-lora", seq_len=2048) is base  # its own length: the preset itself


@pytest.mark.parametrize(
    ("cfg", "words"),
    [
        # T5-small was read as a 6-layer decoder-only model at an invented 2,048 tokens (35 M of its 60 M)
        (
            {"model_type": "t5", "d_model": 512, "num_layers": 6, "num_heads": 8, "d_ff": 2048, "vocab_size": 32128},
            "t5 is an encoder-decoder model",
        ),
        (
            {
                "architectures": ["BartForConditionalGeneration"],
                "is_encoder_decoder": True,
                "d_model": 768,
                "encoder_layers": 6,
                "num_hidden_layers": 6,
                "encoder_attention_heads": 12,
                "vocab_size": 50265,
            },
            "is an encoder-decoder model",
        ),
        (
            {"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 4096}, "vocab_size": 32064},
            "multimodal model's vision or audio tower is not modelled",
        ),
        (
            {"model_type": "some_vl", "text_config": {"model_type": "llama", "hidden_size": 4096}, "vocab_size": 1},
            "nested under text_config",
        ),
        # read with the usual keys these came out as ordinary transformers, confidently wrong
        ({**LLAMA_8B, "model_type": "jamba", "expert_layer_period": 2}, "mix state-space"),
        ({**LLAMA_8B, "model_type": "albert", "embedding_size": 128}, "ALBERT shares one layer's weights"),
        ({**LLAMA_8B, "model_type": "qwen2_vl", "vision_config": {}}, "vision or audio tower"),
        ({**LLAMA_8B, "model_type": "mamba"}, "state-space or recurrent"),
        ({**LLAMA_8B, "model_type": "llama4_text", "max_position_embeddings": 10485760}, "Llama 4's interleaved"),
        ({**LLAMA_8B, "model_type": "deberta-v2"}, "disentangled attention"),
        # without a model_type the architecture names them: read as ordinary decoders, Jamba was
        # 91.8 B (its card: 52 B) and Llama 4 Scout 100.7 B with 10.1 B active (109 B, 17 B)
        (
            {**LLAMA_8B, "architectures": ["JambaForCausalLM"], "num_experts": 16, "num_experts_per_tok": 2},
            "jamba models are not supported: they mix state-space",
        ),
        (
            {**LLAMA_8B, "architectures": ["Llama4ForCausalLM"], "num_local_experts": 16, "num_experts_per_tok": 1},
            "Llama 4's interleaved",
        ),
        ({**LLAMA_8B, "architectures": ["Mamba2ForCausalLM"]}, "mamba2 models are not supported"),
        ({**LLAMA_8B, "architectures": ["T5ForConditionalGeneration"]}, "t5 is an encoder-decoder model"),
        # hybrids of attention and linear attention or convolutions, read before as plain decoders
        ({**LLAMA_8B, "model_type": "qwen3_next", "num_experts": 512}, "mix linear-attention and softmax"),
        ({**LLAMA_8B, "model_type": "lfm2"}, "short-convolution"),
        (
            {**LLAMA_8B, "model_type": "newhybrid", "layer_types": ["linear_attention", "full_attention"]},
            "layer_types include 'linear_attention' layers, which are not modelled",
        ),
        # read as a causal GPT-style decoder: 13 % under ModernBERT-base's 149 M
        ({**LLAMA_8B, "model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"]}, "ModernBERT's"),
    ],
)
def test_configs_of_models_the_builder_cannot_build_are_refused(
    tmp_path: Path, cfg: dict[str, object], words: str
) -> None:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    with pytest.raises(DataError, match=words):
        shape_from_hf_config(p)


def test_an_architecture_alone_still_reads_text_models_that_share_a_refused_stem(tmp_path: Path) -> None:
    """Gemma3ForCausalLM is Gemma 3's text-only class: its stem is the multimodal gemma3's, which
    the architecture fallback must not refuse."""
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**LLAMA_8B, "architectures": ["Gemma3ForCausalLM"], "hidden_act": "silu"}))
    assert shape_from_hf_config(p).params() > 0


GPT_OSS_20B = {
    "model_type": "gpt_oss",
    "vocab_size": 201088,
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_hidden_layers": 24,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "hidden_act": "silu",
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "tie_word_embeddings": False,
}


def test_a_sliding_window_shorter_than_the_sequence_is_said_to_be_counted_as_full_attention(tmp_path: Path) -> None:
    """The arithmetic and the trace attend over every token on every layer; gpt-oss-20b's 128-token
    windows on half its layers made 131,072-token steps ~1.8x their FLOPs, and nothing said so."""
    said = "counted here as attention over all"
    oss = _read(tmp_path, GPT_OSS_20B, seq_len=8192)
    assert round(oss.params / 1e9, 2) == 20.91  # the model card's 20.91 B
    # its card's 3.6 B active leaves the embedding table out, which this figure counts: said so
    assert "4.2 B of the 20.9 B parameters active per token (the embedding table included)" in oss.description
    assert "12 of its 24 layers attend only the last 128 tokens (sliding window), " + said + " 8,192" in (
        oss.description
    )
    # Gemma 3 without layer_types: every sixth layer is global (26 layers: 22 windowed)
    gemma = _read(
        tmp_path,
        {
            "model_type": "gemma3_text",
            "hidden_size": 1152,
            "intermediate_size": 6912,
            "num_hidden_layers": 26,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "vocab_size": 262144,
            "max_position_embeddings": 32768,
            "sliding_window": 512,
        },
        seq_len=4096,
    )
    assert "22 of its 26 layers attend only the last 512 tokens" in gemma.description
    # no note where the window holds the whole sequence, or where it is switched off (Qwen's default)
    assert said not in _read(tmp_path, GPT_OSS_20B, seq_len=128).description
    qwen = {**LLAMA_8B, "model_type": "qwen2", "sliding_window": 1024}
    assert said not in _read(tmp_path, qwen, seq_len=4096).description
    assert said in _read(tmp_path, {**qwen, "use_sliding_window": True}, seq_len=4096).description
    assert said not in _read(tmp_path, {**LLAMA_8B, "model_type": "mistral", "sliding_window": None}).description


def test_a_vision_config_of_an_unchecked_type_says_how_it_is_read(tmp_path: Path) -> None:
    """SigLIP's and CLIP's vision towers (no class token, no classifier) were read as a ViT with a
    1,000-class head and said nothing of it, while an unchecked language model's type is named."""
    vision = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "patch_size": 16}
    siglip = _read(tmp_path, {**vision, "model_type": "siglip_vision_model"})
    assert "model type 'siglip_vision_model' is not one gpuselect has checked: read as a ViT image classifier" in (
        siglip.description
    )
    assert "no model type given: read as a ViT" in _read(tmp_path, vision).description
    assert "not one gpuselect has checked" not in _read(tmp_path, {**vision, "model_type": "vit"}).description


def _read(tmp_path: Path, cfg: dict[str, object], **kw: object) -> Any:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return workload_from_hf_config(p, **kw)  # type: ignore[arg-type]


def test_a_nested_text_config_takes_its_config_class_defaults(tmp_path: Path) -> None:
    """A multimodal config's text_config gives only what differs from transformers' class defaults:
    LLaVA-1.5's is Llama 2 7B with 64 more tokens, Gemma 3 12B's leaves out its vocabulary and the
    256-wide heads (the advice to save text_config as a config failed on both)."""
    llava = _read(tmp_path, {"model_type": "llama", "vocab_size": 32064, "max_position_embeddings": 4096})
    assert llava.params == 6_738_415_616 + 2 * 64 * 4096  # Llama 2 7B's count with 32,064 tokens
    gemma = _read(
        tmp_path,
        {
            "model_type": "gemma3_text",
            "hidden_size": 3840,
            "intermediate_size": 15360,
            "num_attention_heads": 16,
            "num_hidden_layers": 48,
            "num_key_value_heads": 8,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        },
    )
    assert gemma.shape.vocab == 262_208 and gemma.shape.head_dim == 256
    assert 11.6e9 < gemma.params < 11.9e9  # Gemma 3 12B: 12.2 B with its 0.4 B vision tower
    assert gemma.seq_len == 4096  # 131,072 positions (already the extended figure: not x 8)


def test_encoders_beyond_bert_and_roberta_have_no_language_model_head(tmp_path: Path) -> None:
    """XLM-R is RoBERTa with a larger vocabulary: it was read as a causal language model with a
    vocabulary projection on every token, 3x the FLOPs and twice the memory of the same network."""
    keys = {
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "max_position_embeddings": 514,
        "vocab_size": 250002,
    }
    xlmr = _read(tmp_path, {**keys, "model_type": "xlm-roberta"})
    roberta = _read(tmp_path, {**keys, "model_type": "roberta"})
    assert not xlmr.shape.lm_head and xlmr.forward_flops_per_sample == roberta.forward_flops_per_sample
    assert xlmr.seq_len == roberta.seq_len == 512  # positions 514 include RoBERTa's padding offset
    assert (
        abs(xlmr.params / 278.0e6 - 1) < 0.01
    )  # xlm-roberta-base: 278 M (with a pooler, which SQuAD-style heads lack)
    distil = _read(
        tmp_path, {"model_type": "distilbert", "dim": 768, "n_layers": 6, "n_heads": 12, "vocab_size": 30522}
    )
    assert not distil.shape.lm_head and 65e6 < distil.params < 67e6  # distilbert-base: 66 M


def test_a_yarn_block_extends_the_positions_it_names(tmp_path: Path) -> None:
    """Qwen2.5's model card adds YaRN (factor 4 over 32,768) for long contexts: --seq-len 65,536 was
    refused at the 32,768 positions; beyond 4x it still is."""
    cfg = {
        **LLAMA_8B,
        "model_type": "qwen2",
        "max_position_embeddings": 32768,
        "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
    }
    assert _read(tmp_path, cfg, seq_len=65536).seq_len == 65536
    with pytest.raises(DataError, match="the model's 131,072 positions"):
        _read(tmp_path, cfg, seq_len=200_000)


@pytest.mark.parametrize(
    "cfg",
    [
        {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_layer": 28, "vocab_size": 50400, "rotary_dim": 64},
        {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32},
    ],
)
def test_rotary_models_are_not_described_with_learned_positions(tmp_path: Path, cfg: dict[str, object]) -> None:
    w = _read(tmp_path, {"vocab_size": 65024, **cfg})
    assert w.shape.rotary and "rotary positions" in w.description


def test_an_unchecked_model_type_is_said_in_the_description(tmp_path: Path) -> None:
    w = _read(tmp_path, {**LLAMA_8B, "model_type": "starcoder2"})
    assert "model type 'starcoder2' is not one gpuselect has checked: read as a GPT/Llama-style decoder" in (
        w.description
    )
    assert "not one gpuselect has checked" not in _read(tmp_path, {**LLAMA_8B, "model_type": "llama"}).description


def test_class_defaults_never_override_what_the_file_gives_under_another_name(tmp_path: Path) -> None:
    """A llama config with dim/n_layers/n_heads read as a 6.74 B model (the defaults' hidden_size
    won over "dim"), and null key/value heads became Mistral's 8 (transformers: as many as heads)."""
    small = _read(
        tmp_path,
        {"model_type": "llama", "dim": 2048, "n_layers": 16, "n_heads": 32, "vocab_size": 128256, "max_seq_len": 8192},
    )
    assert small.shape.hidden == 2048 and small.shape.layers == 16 and small.seq_len == 4096
    mistral = _read(tmp_path, {**LLAMA_8B, "model_type": "mistral", "num_key_value_heads": None})
    assert mistral.shape.kv_heads in (None, 32)  # null: every head its own key/value head
    qwen = {**LLAMA_8B, "model_type": "qwen2", "num_attention_heads": 12, "hidden_size": 1536}
    qwen["num_key_value_heads"] = None  # was "12 attention heads cannot be grouped into 32" (the class default)
    assert _read(tmp_path, qwen).shape.heads == 12


def test_an_xlm_r_config_without_a_model_type_is_an_encoder(tmp_path: Path) -> None:
    keys = {"hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12, "vocab_size": 250002}
    w = _read(tmp_path, {**keys, "architectures": ["XLMRobertaForQuestionAnswering"], "max_position_embeddings": 514})
    assert not w.shape.lm_head and not w.shape.is_causal and w.seq_len == 512
    # pre-training it (MaskedLM) projects every token onto the 250k vocabulary: ~3x the FLOPs
    mlm = _read(tmp_path, {**keys, "architectures": ["XLMRobertaForMaskedLM"], "max_position_embeddings": 514})
    assert mlm.shape.lm_head and not mlm.shape.is_causal and "masked-LM head" in mlm.description
    assert mlm.forward_flops_per_sample > 2 * w.forward_flops_per_sample
    mpnet = _read(tmp_path, {**keys, "model_type": "mpnet", "max_position_embeddings": 514, "vocab_size": 30527})
    assert mpnet.seq_len == 512


def test_a_config_says_which_shape_settings_it_left_to_its_class_defaults(tmp_path: Path) -> None:
    """QA 14: {"model_type": "llama"} alone was estimated as Llama 2 7B without a word."""
    from gpuselect.workloads.transformer import workload_from_hf_config

    bare = tmp_path / "bare.json"
    bare.write_text('{"model_type": "llama"}')
    d = workload_from_hf_config(bare).description
    assert "taken from llama's defaults" in d and "hidden_size 4,096" in d and "num_hidden_layers 32" in d
    full = tmp_path / "full.json"
    full.write_text(
        '{"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8, '
        '"vocab_size": 1000, "intermediate_size": 1024, "max_position_embeddings": 512}'
    )
    assert "defaults" not in workload_from_hf_config(full).description


def test_a_config_s_quantization_is_said_not_to_be_applied(tmp_path: Path) -> None:
    from gpuselect.workloads.transformer import workload_from_hf_config

    q = tmp_path / "q.json"
    q.write_text(
        '{"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8, '
        '"vocab_size": 1000, "quantization_config": {"load_in_4bit": true, "bnb_4bit_quant_type": "nf4"}}'
    )
    assert "quantization_config (4-bit weights) is not applied" in workload_from_hf_config(q).description


def test_a_decoder_classifier_has_a_task_head_not_the_vocabulary_projection(tmp_path: Path) -> None:
    """LlamaForSequenceClassification scores each token with a (hidden x labels) head: read as a
    language model it counted the 525 M-parameter vocabulary projection (7 % of Llama 3.1 8B), its
    FLOPs and a 4 GB logits buffer per 4,096-token sample."""
    from gpuselect.estimate.memory import MemoryOptions, logits_bytes_per_sample
    from gpuselect.workloads.traces import transformer_trace
    from tests.hf_configs import LLAMA_31_8B

    llama = LLAMA_31_8B
    lm = _read(tmp_path, {**llama, "architectures": ["LlamaForCausalLM"]}, seq_len=4096)
    cls = _read(tmp_path, {**llama, "architectures": ["LlamaForSequenceClassification"], "num_labels": 3}, seq_len=4096)
    assert lm.params - cls.params == 128256 * 4096  # no lm_head (the score head's 12 k weights aside)
    assert cls.shape.is_causal and not cls.shape.lm_head and cls.shape.head_outputs == 3
    assert lm.forward_flops_per_sample - cls.forward_flops_per_sample == pytest.approx(2 * 4096 * 128256 * 4096)
    o = MemoryOptions(precision="bf16")
    assert logits_bytes_per_sample(cls, o) == 0 < logits_bytes_per_sample(lm, o)
    assert "task head of 3 outputs" in cls.description
    # still a causal decoder: no BERT token-type embedding; the head reads the final norm's output
    names = {op.name for op in transformer_trace(cls.shape).ops}
    assert "embed_token_types" not in names and "final_norm.fp32" in names and "task_head" in names


def test_a_sequence_beyond_the_positions_is_refused_in_the_cli_s_numbers(tmp_path: Path) -> None:
    """The preset's refusal says "1,024 positions"; a config's said "131072 positions"."""
    keys = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    with pytest.raises(DataError, match=r"sequence length 200,000 must be between 1 and the model's 131,072 positions"):
        _read(tmp_path, {**keys, "vocab_size": 100, "max_position_embeddings": 131072}, seq_len=200_000)


def test_a_model_folder_means_its_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A downloaded model is a folder: --config Llama-3.1-8B/ was refused as "a folder, not a file"."""
    folder = tmp_path / "Tiny-Llama"
    folder.mkdir()
    keys = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    (folder / "config.json").write_text(json.dumps({**keys, "vocab_size": 100, "max_position_embeddings": 128}))
    w = workload_from_hf_config(folder)
    assert w.name == "Tiny-Llama (from config.json)" and str(folder / "config.json") in w.description
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["estimate", "--config", str(empty)]) == 2
    assert "is a folder without a config.json" in capsys.readouterr().err
