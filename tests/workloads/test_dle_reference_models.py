"""The DeepLearningExamples reference models behind the speech, translation, Transformer-XL and
ViT presets: sizes against the published counts, and the FLOP counter's coverage of LSTMs."""

from __future__ import annotations

import pytest
import torch

from gpuselect.workloads.presets import PRESETS

# Published parameter counts (DLE READMEs / papers) the re-implementations must reproduce.
PUBLISHED_PARAMS = {
    "tacotron2": 28.2e6,  # DLE Tacotron2 model, 28.2 M
    "gnmt": 160e6,  # GNMT v2 as in DLE, ~160 M (the figure the preset carried before)
    "vit-b16": 86e6,  # Dosovitskiy et al. 2020, table 1
}


@pytest.mark.parametrize("preset_id", sorted(PUBLISHED_PARAMS))
def test_reference_models_match_published_sizes(preset_id: str) -> None:
    from gpuselect.workloads.reference_models import REFERENCE

    factory = REFERENCE[preset_id][0]
    with torch.device("meta"):
        n = sum(p.numel() for p in factory().parameters())
    assert n == pytest.approx(PUBLISHED_PARAMS[preset_id], rel=0.02)
    assert PRESETS[preset_id].params == n


def test_dle_presets_are_profiled_not_typed_in() -> None:
    for pid in ("tacotron2", "waveglow", "gnmt", "transformerxlbase", "transformerxllarge", "vit-b16"):
        w = PRESETS[pid]
        assert w.profiler_checked and "not profiler-checked" not in w.source, pid


def _count(fn) -> int:  # type: ignore[no-untyped-def]
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        fn()
    return counter.get_total_flops()


def test_flop_counter_sees_lstm_and_lstmcell_on_meta() -> None:
    """nn.LSTM / nn.LSTMCell decompose into addmm on the meta device; if a torch release stops
    counting them, the GNMT and Tacotron 2 figures would silently drop their recurrent FLOPs."""
    b, s, i, h = 2, 7, 48, 32
    with torch.device("meta"):
        lstm = torch.nn.LSTM(i, h, batch_first=True, bidirectional=True)
        cell = torch.nn.LSTMCell(i, h)
        x = torch.empty(b, s, i)
    assert _count(lambda: lstm(x)) == 2 * b * s * 2 * 4 * h * (i + h)
    assert _count(lambda: cell(x[:, 0])) == b * 2 * 4 * h * (i + h)


def test_tacotron2_cost_per_mel_frame_is_the_decoder_step() -> None:
    """One more mel frame costs one decoder step plus one postnet column, in closed form."""
    from gpuselect.workloads.profile import profile_factory
    from gpuselect.workloads.reference_models import Tacotron2

    t_in = 20
    a = profile_factory(lambda: Tacotron2(mel_frames=10), (t_in,), torch.long).forward_flops_per_sample
    b = profile_factory(lambda: Tacotron2(mel_frames=11), (t_in,), torch.long).forward_flops_per_sample
    prenet = 80 * 256 + 256 * 256
    lstms = 4 * 1024 * (256 + 512 + 1024) + 4 * 1024 * (1024 + 512 + 1024)
    attention = 1024 * 128 + t_in * (2 * 31 * 32 + 32 * 128 + 128 + 512)
    out = (1024 + 512) * (80 + 1)
    postnet = 5 * (80 * 512 + 3 * 512 * 512 + 512 * 80)
    assert b - a == pytest.approx(2 * (prenet + lstms + attention + out + postnet), rel=1e-9)


def test_waveglow_cost_is_the_wn_convolutions() -> None:
    """Closed form: per group of 8 samples, 12 WN stacks of 8 dilated + cond + res/skip convs, at
    the 512 WN channels and 8,000-sample segments DLE's train.py and Lambda's benchmark ran."""
    w = PRESETS["waveglow"]
    c = 512
    groups = 8_000 // 8
    halves = [4] * 4 + [3] * 4 + [2] * 4
    wn = sum(2 * (h * c + 8 * (3 * c * 2 * c + 640 * 2 * c) + 7 * c * 2 * c + c * c + c * 2 * h) for h in halves)
    inv = sum(2 * (2 * h) ** 2 for h in halves)
    upsample = 2 * 80 * 80 * 1024 * (8_000 // 256 + 1)
    assert w.forward_flops_per_sample == pytest.approx(groups * (wn + inv) + upsample, rel=0.01)
    # parameters: convs with biases, a weight-norm gain per output channel, the 1x1 invertible convs
    per_wn = sum(
        (h * c + c + c)
        + (c * 2 * h + 2 * h)
        + 8 * (640 * 2 * c + 2 * c + 2 * c)
        + 8 * (3 * c * 2 * c + 2 * c + 2 * c)
        + 7 * (c * 2 * c + 2 * c + 2 * c)
        + (c * c + c + c)
        for h in halves
    )
    convinv = sum((2 * h) ** 2 for h in halves)
    assert w.params == per_wn + convinv + 80 * 80 * 1024 + 80


def test_zipf_shares_cover_the_vocabulary() -> None:
    from gpuselect.workloads.reference_models import zipf_cluster_shares

    shares = zipf_cluster_shares()
    assert sum(shares) == pytest.approx(1.0, abs=1e-6)
    assert shares[0] > 0.75 and all(0 < s < 0.2 for s in shares[1:])


def test_tacotron2_runs_the_padded_length_and_counts_real_frames() -> None:
    """DLE pads a batch to its longest utterance and the decoder steps through all of it, while the
    benchmark counts real mel frames: the preset's trace runs the padded length of its default
    batch, its unit stays the mean utterance's 567 frames."""
    from gpuselect.workloads import reference_models as rm

    w = PRESETS["tacotron2"]
    assert w.throughput_units_per_sample == rm.LJSPEECH_MEAN_MEL_FRAMES == 567
    assert rm.padded_mel_frames(1) == 567  # one utterance: no padding
    assert rm.padded_mel_frames(2) < rm.padded_mel_frames(16) < rm.padded_mel_frames(640) <= rm.LJSPEECH_MAX_MEL_FRAMES
    assert rm.TACOTRON2_MEL_FRAMES == rm.padded_mel_frames(w.default_batch_size) == 865
    with torch.device("meta"):
        assert rm.Tacotron2().mel_frames == rm.TACOTRON2_MEL_FRAMES
    assert w.input_shape == (rm.TACOTRON2_TEXT_CHARS,)


def test_waveglow_and_transformer_xl_large_are_what_the_benchmark_ran() -> None:
    """Lambda's configs (and DLE's training scripts): WaveGlow with the 512-channel WN on 8,000
    samples, Transformer-XL large at target/memory length 256."""
    from gpuselect.workloads import reference_models as rm

    assert rm.WAVEGLOW_WN_CHANNELS == 512 and rm.WAVEGLOW_SEGMENT == 8_000
    assert PRESETS["waveglow"].input_shape == (8_000,) and PRESETS["waveglow"].throughput_units_per_sample == 8_000
    xl = PRESETS["transformerxllarge"]
    assert xl.seq_len == rm.XL_LARGE_TGT == 256 and xl.throughput_units_per_sample == 256
