"""The reference benchmark counts some models in tokens, mel frames or audio samples per second;
the estimator must turn those into the preset's samples before using or scaling them."""

from __future__ import annotations

import csv

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.estimate.perf import DATA, default_model
from gpuselect.workloads.presets import PRESETS

PER_SAMPLE_UNITS = {"images/s", "sequences/s", "samples/s"}


def _units() -> dict[str, str]:
    with DATA.open(newline="", encoding="utf-8") as fh:
        return {r["model"]: r["unit"] for r in csv.DictReader(fh)}


def test_every_reference_model_says_how_many_units_a_sample_is() -> None:
    units = _units()
    assert units  # the data is there
    for model, unit in units.items():
        w = PRESETS[model]
        if unit in PER_SAMPLE_UNITS:
            assert w.throughput_units_per_sample == 1.0, model
        elif unit == "tokens/s":
            # Transformer-XL counts target tokens; GNMT (DLE's Tok/s) source + target tokens.
            assert w.seq_len and w.throughput_units_per_sample in (w.seq_len, 2 * w.seq_len), model
        elif unit == "audio_samples/s":
            assert w.throughput_units_per_sample == w.input_shape[0], model
        elif unit == "mel_frames/s":
            assert w.throughput_units_per_sample > 100, model  # frames per utterance
        else:
            pytest.fail(f"unknown benchmark unit {unit!r} for {model}")


def test_predict_returns_samples_not_benchmark_units() -> None:
    perf = default_model()
    e = load_catalog(use_overlay=False).get("nvidia-a100-sxm4-80gb")
    assert e is not None
    for model in ("tacotron2", "transformerxlbase", "resnet50"):
        w = PRESETS[model]
        units = perf.predict_reference(model, "fp16", e, batch=32)
        assert units is not None
        assert perf.predict(w, "fp16", e, batch=32) == pytest.approx(units / w.throughput_units_per_sample)
