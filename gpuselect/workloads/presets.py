"""Preset workloads. Figures marked ``profiler_checked`` were measured with torch's FLOP counter
on the reference implementation in ``reference_models.py`` (tests re-measure them); the others
are derived from the cited papers and model cards and say so in ``source``.
"""

from __future__ import annotations

import re
from dataclasses import replace

from gpuselect.errors import UsageError
from gpuselect.output import three_digits
from gpuselect.types import Mode
from gpuselect.workloads.model import CUSTOM_NAME, PUBLIC_IDS, Workload, public_id
from gpuselect.workloads.transformer import TransformerShape, transformer_workload

_PROFILED = "measured with torch.utils.flop_counter on gpuselect/workloads/reference_models.py (meta device); re-checked by tests"


def _w(**kw: object) -> Workload:
    return Workload(**kw)  # type: ignore[arg-type]


_PRESETS: list[Workload] = [
    _w(
        id="mnist-mlp",
        name="MNIST MLP (784-256-10)",
        kind="mlp",
        description="a tiny multi-layer perceptron on 28x28 MNIST digits: one hidden layer of 256",
        params=203_530,
        trainable_params=203_530,
        forward_flops_per_sample=406_528.0,
        memory_traffic_bytes_per_sample=2 * 2_612.0,
        activation_bytes_per_sample=2_612.0,
        input_shape=(1, 28, 28),
        sample_unit="image",
        layers=2,
        default_dataset_size=60_000,
        default_epochs=10,
        default_batch_size=128,
        source=_PROFILED,
        profiler_checked=True,
    ),
    _w(
        id="simple-cnn",
        name="Simple CNN (2 conv + pool, 2 linear)",
        kind="cnn",
        description="the background material's example: two 3x3 conv + max-pool layers (32, 64 channels), two linear layers, 28x28 inputs",
        params=421_642,
        trainable_params=421_642,
        forward_flops_per_sample=8_482_304.0,
        memory_traffic_bytes_per_sample=2 * 176_128.0,
        activation_bytes_per_sample=176_128.0,
        input_shape=(1, 28, 28),
        sample_unit="image",
        layers=4,
        default_dataset_size=60_000,
        default_epochs=10,
        default_batch_size=64,
        source=_PROFILED,
        profiler_checked=True,
    ),
    _w(
        id="vgg16",
        name="VGG16 (ImageNet, 224x224)",
        kind="cnn",
        description="Simonyan & Zisserman 2014, 13 conv + 3 FC layers, ~138 M parameters, on ImageNet-1k",
        params=138_357_544,
        trainable_params=138_357_544,
        forward_flops_per_sample=30.94e9,
        memory_traffic_bytes_per_sample=2 * 57.34e6,
        activation_bytes_per_sample=57.34e6,
        input_shape=(3, 224, 224),
        sample_unit="image",
        layers=16,
        default_dataset_size=1_281_167,
        default_epochs=74,
        default_batch_size=64,
        source=_PROFILED,
        profiler_checked=True,
    ),
    _w(
        id="lstm-lm",
        name="LSTM language model (2x650, PTB)",
        kind="rnn",
        description="Zaremba et al. 2014 medium model: 2-layer LSTM, 650 units, 10k vocabulary, 35-step sequences on Penn Treebank",
        params=19_780_400,
        trainable_params=19_780_400,
        forward_flops_per_sample=928.2e6,
        memory_traffic_bytes_per_sample=2 * 0.796e6,
        activation_bytes_per_sample=0.796e6,
        input_shape=(35,),
        sample_unit="sequence of 35 tokens",
        layers=2,
        seq_len=35,
        default_dataset_size=26_563,
        default_epochs=39,
        default_batch_size=20,
        source=_PROFILED + "; nn.LSTM as PyTorch's word-language-model example uses it (cuDNN on a GPU)",
        profiler_checked=True,
    ),
    _w(
        id="resnet50",
        name="ResNet-50 v1.5 (ImageNet)",
        kind="cnn",
        description="He et al. 2016 ResNet-50 v1.5 as in NVIDIA's DeepLearningExamples, 224x224 ImageNet-1k (reference benchmark model)",
        params=25_557_032,
        trainable_params=25_557_032,
        forward_flops_per_sample=8.178e9,
        memory_traffic_bytes_per_sample=2 * 53.05e6,
        activation_bytes_per_sample=53.05e6,
        input_shape=(3, 224, 224),
        sample_unit="image",
        layers=16,
        default_dataset_size=1_281_167,
        default_epochs=90,
        default_batch_size=256,
        source=_PROFILED,
        profiler_checked=True,
    ),
    _w(
        id="ssd",
        name="SSD300 (ResNet-50 backbone, COCO)",
        kind="detection",
        description="NVIDIA DeepLearningExamples SSD300 v1.1 with a ResNet-50 backbone on COCO 2017 (reference benchmark model)",
        params=22_900_000,
        trainable_params=22_900_000,
        forward_flops_per_sample=2 * 17.5e9,
        memory_traffic_bytes_per_sample=2 * 110e6,
        activation_bytes_per_sample=110e6,
        input_shape=(3, 300, 300),
        sample_unit="image",
        layers=20,
        default_dataset_size=118_287,
        default_epochs=65,
        default_batch_size=64,
        source="approximate: ResNet-50 trunk to conv4 at 300x300 plus SSD heads (~17.5 G multiply-adds); params from the DLE model; not profiler-checked",
    ),
    _w(
        id="maskrcnn",
        name="Mask R-CNN (ResNet-50-FPN, COCO)",
        kind="detection",
        description="Mask R-CNN with a ResNet-50-FPN backbone at ~800x1333 on COCO 2017 (reference benchmark model)",
        params=44_400_000,
        trainable_params=44_400_000,
        forward_flops_per_sample=2 * 260e9,
        memory_traffic_bytes_per_sample=2 * 1.2e9,
        activation_bytes_per_sample=1.2e9,
        input_shape=(3, 800, 1333),
        sample_unit="image",
        layers=50,
        default_dataset_size=118_287,
        default_epochs=13,
        default_batch_size=4,
        source="approximate: ~260 G multiply-adds at 800x1333 as commonly reported for R50-FPN Mask R-CNN (e.g. the Swin Transformer paper's COCO table); not profiler-checked",
    ),
    _w(
        id="gnmt",
        name="GNMT v2 (WMT16 en-de)",
        kind="rnn",
        description="NVIDIA DeepLearningExamples GNMT v2: 4-layer LSTM encoder/decoder, 1024 units, attention, 32k BPE vocabulary (reference benchmark model)",
        params=160_671_297,
        trainable_params=160_671_297,
        forward_flops_per_sample=12.752e9,
        memory_traffic_bytes_per_sample=2 * 40e6,
        activation_bytes_per_sample=40e6,
        input_shape=(50,),
        sample_unit="sentence pair (50 tokens each side)",
        layers=8,
        seq_len=50,
        default_dataset_size=4_500_000,
        default_epochs=6,
        default_batch_size=128,
        source=_PROFILED
        + "; model: DLE PyTorch/Translation/GNMT defaults (shared 1024-d embedding, 32,320-token vocabulary, "
        "bidirectional + 3 encoder LSTMs, attention LSTM + normalised Bahdanau attention + 3 decoder LSTMs); 50 source "
        "+ 50 target tokens (DLE's --max-length-train 50; real pairs are shorter, so the attention share is an upper "
        "bound); the LSTMs as cuDNN runs them (one dispatched call per layer and pass, its per-step kernels "
        "launched by cuDNN); activation memory approximate (LSTM gate buffers are not module outputs)",
        profiler_checked=True,
        throughput_units_per_sample=100.0,
    ),
    _w(
        id="ncf",
        name="NCF / NeuMF (MovieLens-20M)",
        kind="recsys",
        description="neural collaborative filtering (He et al. 2017) on MovieLens-20M, as in NVIDIA DeepLearningExamples (reference benchmark model)",
        params=31_800_000,
        trainable_params=31_800_000,
        forward_flops_per_sample=2 * 0.2e6,
        memory_traffic_bytes_per_sample=2 * 2_000.0,
        activation_bytes_per_sample=2_000.0,
        input_shape=(2,),
        sample_unit="(user, item) rating",
        layers=4,
        default_dataset_size=19_861_770,
        default_epochs=30,
        default_batch_size=1_048_576,
        source="approximate: embedding lookups plus a 256-128-64 MLP (~0.2 M multiply-adds per rating); memory-bound; not profiler-checked",
    ),
    _w(
        id="tacotron2",
        name="Tacotron 2 (LJSpeech)",
        kind="speech",
        description="Tacotron 2 text-to-mel model on LJSpeech, as in NVIDIA DeepLearningExamples (reference benchmark model)",
        params=28_193_153,
        trainable_params=28_193_153,
        forward_flops_per_sample=42.424e9,
        memory_traffic_bytes_per_sample=2 * 60.8e6,
        activation_bytes_per_sample=60.8e6,
        input_shape=(153,),
        sample_unit="utterance (~567 mel frames, ~100 characters; padded to its batch's longest)",
        layers=10,
        default_dataset_size=13_100,
        default_epochs=1500,
        default_batch_size=104,
        source=_PROFILED
        + "; model: DLE PyTorch/SpeechSynthesis/Tacotron2 defaults (28.2 M parameters per DLE), teacher-forced "
        "over LJSpeech's mean utterance of 6.57 s (LJSpeech README: 13,100 clips, 23:55:17) = 567 mel frames at "
        "22,050 Hz, hop 256, ~100 characters (1,308,678 / 13,100), as padded in a batch of 104: DLE's collate pads "
        "every utterance to its batch's longest (expected 865 frames for clips spread evenly up to the longest, "
        "10.10 s; text in proportion, 153 characters) while the benchmark counts real frames (567 per utterance); "
        "the encoder LSTM as cuDNN runs it; activation memory approximate (LSTM gate buffers are not module outputs)",
        profiler_checked=True,
        throughput_units_per_sample=567.0,
    ),
    _w(
        id="waveglow",
        name="WaveGlow (LJSpeech)",
        kind="speech",
        description="WaveGlow flow-based vocoder on LJSpeech, as in NVIDIA DeepLearningExamples (reference benchmark model)",
        params=268_294_760,
        trainable_params=268_294_760,
        forward_flops_per_sample=522.72e9,
        memory_traffic_bytes_per_sample=2 * 591.5e6,
        activation_bytes_per_sample=591.5e6,
        input_shape=(8_000,),
        sample_unit="audio segment (8,000 samples)",
        layers=12,
        default_dataset_size=13_100,
        default_epochs=1000,
        default_batch_size=10,
        source=_PROFILED
        + "; model: DLE WaveGlow as its train.py runs it (12 flows, groups of 8, 2 channels out every 4 flows, WN 8 "
        "layers x 512 channels -- waveglow/arg_parser.py's default, which DLE's and Lambda's training commands keep; "
        "kernel 3; 268.3 M parameters) on --segment-length 8000 (DLE platform/DGXA100_waveglow_*_train.sh, Lambda's "
        "configs); NVIDIA's published 256-channel checkpoint (87.9 M) is the inference model",
        profiler_checked=True,
        throughput_units_per_sample=8_000.0,
    ),
]


def _t(id: str, name: str, shape: TransformerShape, **kw: object) -> Workload:
    return transformer_workload(id, name, shape, **kw)  # type: ignore[arg-type]


_PRESETS += [
    _t(
        "bert_base_squad",
        "BERT-base fine-tuning (SQuAD v1.1, seq 384)",
        TransformerShape(
            layers=12, hidden=768, heads=12, vocab=30522, seq_len=384, ffn=3072, lm_head=False, dropout=True
        ),
        description="Devlin et al. 2018 BERT-base (110 M) fine-tuned on SQuAD v1.1 at sequence length 384 (reference benchmark model)",
        dataset_size=88_641,
        epochs=2,
        batch_size=32,
        profiler_checked=True,
        source="transformer arithmetic (gpuselect/workloads/transformer.py); FLOPs re-checked by tests against the profiled reference model",
    ),
    _t(
        "bert_large_squad",
        "BERT-large fine-tuning (SQuAD v1.1, seq 384)",
        TransformerShape(
            layers=24, hidden=1024, heads=16, vocab=30522, seq_len=384, ffn=4096, lm_head=False, dropout=True
        ),
        description="BERT-large (340 M) fine-tuned on SQuAD v1.1 at sequence length 384 (reference benchmark model)",
        dataset_size=88_641,
        epochs=2,
        batch_size=24,
        profiler_checked=True,
        source="transformer arithmetic; FLOPs re-checked by tests against the profiled reference model",
    ),
    _t(
        "gpt2-124m",
        "GPT-2 124M pre-training (seq 1024)",
        TransformerShape(
            layers=12,
            hidden=768,
            heads=12,
            vocab=50257,
            seq_len=1024,
            ffn=3072,
            lm_head=True,
            dropout=True,
            fused_qkv=True,
        ),
        description="Radford et al. 2019 GPT-2 small pre-trained from scratch on 1024-token sequences (e.g. OpenWebText, ~9 B tokens)",
        dataset_size=9_000_000_000 // 1024,
        epochs=1,
        batch_size=16,
        profiler_checked=True,
        source="transformer arithmetic; FLOPs re-checked by tests against the profiled reference model",
    ),
]


def _xl_activation(layers: int, hidden: int, heads: int, q_len: int, k_len: int) -> float:
    """Korthikanti et al. 2022's per-layer activation count (see transformer.py) with attention
    scores over the memory as well: s*h*34 + 5*a*s*k bytes per layer, 16-bit."""
    return layers * (q_len * hidden * 34 + 5 * heads * q_len * k_len)


_XL_SOURCE = (
    _PROFILED + "; model: DLE PyTorch/LanguageModeling/Transformer-XL {cfg} (relative attention over {mem} cached "
    "+ {tgt} new positions, post-norm, ReLU FFN, adaptive input and softmax over WikiText-103's 267,735 words, "
    "cutoffs 20k/40k/200k, div_val {div}, tied weights); the tail clusters of the softmax are charged for the "
    "tokens Zipf's law puts in them (an assumption); {params}; activation memory from Korthikanti et al. "
    "2022 with scores over the memory"
)
_PRESETS += [
    _w(
        id="transformerxlbase",
        name="Transformer-XL base (WikiText-103)",
        kind="transformer",
        description="Dai et al. 2019 Transformer-XL base as modified in NVIDIA DeepLearningExamples (16 layers, 512 hidden) on "
        "WikiText-103, target length 192, memory 192 (reference benchmark model); adaptive softmax",
        params=191_950_298,
        trainable_params=191_950_298,
        forward_flops_per_sample=37.694e9,
        memory_traffic_bytes_per_sample=2 * _xl_activation(16, 512, 8, 192, 384),
        activation_bytes_per_sample=_xl_activation(16, 512, 8, 192, 384),
        input_shape=(192,),
        sample_unit="segment of 192 tokens",
        layers=16,
        seq_len=192,
        default_dataset_size=103_000_000 // 192,
        default_epochs=1,
        default_batch_size=32,
        source=_XL_SOURCE.format(
            cfg="wt103_base.yaml",
            mem=192,
            tgt=192,
            div=1,
            params="192 M parameters: DLE widened the paper's 151 M base (410 hidden, 10 heads, "
            "2100 FFN) to 512/8/2048",
        ),
        profiler_checked=True,
        throughput_units_per_sample=192.0,
    ),
    _w(
        id="transformerxllarge",
        name="Transformer-XL large (WikiText-103)",
        kind="transformer",
        description="Transformer-XL large (18 layers, 1024 hidden) on WikiText-103, target length 256, memory 256, as in NVIDIA "
        "DeepLearningExamples (reference benchmark model); adaptive input and softmax",
        params=285_170_506,
        trainable_params=285_170_506,
        forward_flops_per_sample=181.39e9,
        memory_traffic_bytes_per_sample=2 * _xl_activation(18, 1024, 16, 256, 512),
        activation_bytes_per_sample=_xl_activation(18, 1024, 16, 256, 512),
        input_shape=(256,),
        sample_unit="segment of 256 tokens",
        layers=18,
        seq_len=256,
        default_dataset_size=103_000_000 // 256,
        default_epochs=1,
        default_batch_size=16,
        source=_XL_SOURCE.format(
            cfg="large (as Lambda's benchmark ran it: --tgt_len 256 --mem_len 256 --dropout 0.2 --dropatt 0.2, pytorch/scripts/config_v0..v2)",
            mem=256,
            tgt=256,
            div=4,
            params="285 M parameters counted on this shape, where the paper states 257 M",
        ),
        profiler_checked=True,
        throughput_units_per_sample=256.0,
    ),
    _w(
        id="vit-b16",
        name="ViT-B/16 (ImageNet, 224x224)",
        kind="transformer",
        description="Dosovitskiy et al. 2020 ViT-Base with 16x16 patches: 196 patches + class token, 12 blocks, 1000-class head",
        params=86_567_656,
        trainable_params=86_567_656,
        forward_flops_per_sample=35.128e9,
        memory_traffic_bytes_per_sample=2 * TransformerShape(12, 768, 12, 1, 197, 3072).activation_bytes_per_sequence(),
        activation_bytes_per_sample=TransformerShape(12, 768, 12, 1, 197, 3072).activation_bytes_per_sequence(),
        input_shape=(3, 224, 224),
        sample_unit="image",
        layers=12,
        seq_len=197,
        default_dataset_size=1_281_167,
        default_epochs=300,
        default_batch_size=256,
        source=_PROFILED
        + "; model: patch-embedding conv, class token, 12 pre-norm blocks (768, 12 heads, MLP 3072), head "
        "(86.6 M parameters, as the paper's 86 M); activation memory from Korthikanti et al. 2022 at 197 tokens",
        profiler_checked=True,
    ),
]


def _llama(layers: int, hidden: int, heads: int, ffn: int, *, tied: bool) -> TransformerShape:
    """A Llama 3.x shape: what the sizes share (grouped-query attention over 8 KV heads, the
    128,256-token vocabulary, gated FFN, RMSNorm, rotary) written once; 2048-token sequences."""
    return TransformerShape(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=8,
        vocab=128_256,
        seq_len=2048,
        ffn=ffn,
        gated_ffn=True,
        tied_embeddings=tied,
        norm="rmsnorm",
        rotary=True,
    )


# Meta Llama 3.2 1B and 3B, Llama 3.1 8B and 70B shapes (model cards / config.json).
_LLAMA = {
    "1b": ("Llama 3.2 1B", _llama(16, 2048, 32, 8192, tied=True)),
    "3b": ("Llama 3.2 3B", _llama(28, 3072, 24, 8192, tied=True)),
    "8b": ("Llama 3.1 8B", _llama(32, 4096, 32, 14_336, tied=False)),
    "70b": ("Llama 3.1 70B", _llama(80, 8192, 64, 28_672, tied=False)),
}
for size, (label, shape) in _LLAMA.items():
    for mode, what in (
        (Mode.FULL, "full fine-tuning (all weights, AdamW)"),
        (Mode.LORA, "LoRA rank 16 on 16-bit base weights"),
        (Mode.QLORA, "QLoRA: LoRA rank 16 on a 4-bit quantised base"),
    ):
        _PRESETS.append(
            _t(
                f"llama-{size}-{mode}",
                f"{label} { {'full': 'full', 'lora': 'LoRA', 'qlora': 'QLoRA'}[mode] } fine-tuning",
                shape,
                mode=mode,
                description=f"{label}, {what}, 2048-token sequences (e.g. 50k instruction examples)",
                dataset_size=50_000,
                epochs=3,
                batch_size=8 if size != "70b" else 4,
                source="transformer arithmetic on the model card's shape (layers, hidden, heads, KV heads, FFN, vocabulary); not profiler-checked",
            )
        )

PRESETS: dict[str, Workload] = {w.id: w for w in _PRESETS}


#: Hyphenated ids (the style of every other preset) for the presets whose id is the key the
#: calibration data uses (``Workload.id`` stays that key; ``Workload.public_id`` is the one shown).
#: Both spellings are accepted.
CANONICAL_IDS: dict[str, str] = PUBLIC_IDS
_BY_CANONICAL: dict[str, str] = {v: k for k, v in CANONICAL_IDS.items()}
#: The id to show users: hyphenated, lower-case.
canonical_id = public_id


#: Presets whose sequence length ``--seq-len`` may change, and their models' positions.
SEQ_LEN_PRESETS = {"llama-": 131_072, "gpt2-": 1024}


def takes_seq_len(w: Workload) -> bool:
    """Whether ``--seq-len`` applies to ``w``: a language model from --config, or a Llama or GPT-2
    preset (a vision transformer's tokens are its image's patches; other presets train fixed samples)."""
    if w.shape is None or w.shape.patch:
        return False
    return w.id.startswith("config:") or any(w.id.startswith(prefix) for prefix in SEQ_LEN_PRESETS)


def with_seq_len(w: Workload, seq_len: int) -> Workload:
    """A language-model preset trained on ``seq_len``-token samples (the same number of samples):
    its step is the transformer arithmetic of the new shape, as for ``--config``."""
    limit = next((n for prefix, n in SEQ_LEN_PRESETS.items() if w.id.startswith(prefix)), None)
    if w.shape is None or limit is None:
        raise UsageError(
            f"--seq-len applies to --config and the Llama and GPT-2 presets; {w.public_id} trains fixed-size samples"
        )
    if not 1 <= seq_len <= limit:
        raise UsageError(f"--seq-len {seq_len:,} is beyond {w.public_id}'s {limit:,} positions")
    if seq_len == w.shape.seq_len:
        return w
    base = re.sub(r" \(seq [\d,]+\)$", "", w.name)
    return transformer_workload(
        f"{w.id}@seq{seq_len}",
        f"{base} (seq {seq_len:,})",
        replace(w.shape, seq_len=seq_len),
        description=re.sub(r"\d[\d,]*-token sequences", f"{seq_len:,}-token sequences", w.description),
        mode=w.mode,
        kind=w.kind,
        dataset_size=w.default_dataset_size,
        epochs=w.default_epochs,
        batch_size=w.default_batch_size,
        source=w.source,
        lora_rank=w.lora_rank,
        sample_unit=w.sample_unit,
    )


def get_preset(workload_id: str) -> Workload:
    """A preset by its id (``bert-base-squad``) or its older spelling (``bert_base_squad``);
    an unknown id is answered with the closest known ones."""
    import difflib

    key = _BY_CANONICAL.get(workload_id, workload_id)
    if key in PRESETS:
        return PRESETS[key]
    known = [canonical_id(k) for k in PRESETS]
    close = difflib.get_close_matches(workload_id.lower().replace("_", "-"), known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise UsageError(f"unknown workload {workload_id!r}; {hint}`gpuselect workloads` lists the presets")


def custom_workload(params: float, flops_per_sample: float, *, name: str = CUSTOM_NAME) -> Workload:
    """A workload from a parameter count and forward FLOPs per sample (the user's own figures)."""
    import math

    for label, v, hi in (("parameter count", params, 1e13), ("FLOPs per sample", flops_per_sample, 1e18)):
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise UsageError(f"the {label} must be a positive number, not {v!r}")
        if v > hi:
            raise UsageError(f"the {label} {v:g} is beyond anything trainable (limit {hi:g})")
    # Without a model to measure: activations assumed comparable to a CNN's per FLOP (documented, rough).
    act = flops_per_sample / 150.0
    return Workload(
        id="custom",
        name=name,
        # the numbers as the faces write them: "39370 parameters, 3.87279e+09 forward FLOPs per
        # sample" stood in the report and the desktop app beside "39,370 parameters" (QA 17f)
        description=f"your own figures, {three_digits(flops_per_sample / 1e9)} GFLOP per sample forward",
        kind="custom",
        params=int(params),
        trainable_params=int(params),
        forward_flops_per_sample=float(flops_per_sample),
        memory_traffic_bytes_per_sample=2 * act,
        activation_bytes_per_sample=act,
        input_shape=(),
        sample_unit="sample",
        layers=max(1, int(math.log2(params))),
        default_dataset_size=100_000,
        default_epochs=10,
        default_batch_size=32,
        source="given by the user; activation memory assumed at 1 byte per 150 forward FLOPs (rough, CNN-like)",
    )
