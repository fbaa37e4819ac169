"""The QLoRA dequantisation fit (gpuselect.estimate.fit.dequant) on synthetic pairs."""

from __future__ import annotations

import pytest

from gpuselect.estimate.fit import dequant as DQ


def pair(bytes_per_weight: float, weights: float, bw: float, gpu: str = "a", noise: float = 1.0) -> DQ.Pair:
    return DQ.Pair("m", gpu, weights, 100, bw, weights * bytes_per_weight / bw * noise)


def test_fit_recovers_the_bytes_per_weight_the_pairs_were_made_with() -> None:
    pairs = [pair(8.0, w, bw) for w, bw in ((2e9, 1.3e12), (13e9, 4.6e11), (25e9, 1.3e12))]
    assert DQ.fit(pairs) == 8.0
    assert DQ.loss(pairs, 8.0) == pytest.approx(0.0, abs=1e-12)
    assert all(p.implied() == pytest.approx(8.0) for p in pairs)


def test_fit_is_the_median_like_choice_under_an_outlier() -> None:
    """Mean |log error|: one pair three times slower moves the fit by at most one grid step."""
    pairs = [pair(6.0, 1e10, 1e12) for _ in range(4)] + [pair(6.0, 1e10, 1e12, noise=3.0)]
    assert DQ.fit(pairs) == 6.0


def test_fit_refuses_pairs_without_a_positive_difference() -> None:
    with pytest.raises(ValueError, match="positive"):
        DQ.fit([pair(8.0, 1e10, 1e12, noise=-1.0)])


def test_the_two_term_fit_finds_a_per_call_cost_where_the_pairs_have_one() -> None:
    """Pairs made with 6 bytes per weight + 50 µs per call: the bytes-only fit must absorb the calls
    (worse loss), the two-term fit recovers both."""
    pairs = [
        DQ.Pair("m", "a", w, calls, bw, w * 6.0 / bw + calls * 50e-6)
        for w, calls, bw in ((2e9, 400, 1.3e12), (13e9, 300, 4.6e11), (1e9, 600, 4.6e11), (25e9, 500, 1.3e12))
    ]
    b, call, l2 = DQ.fit_with_call(pairs)
    assert (b, call) == (6.0, pytest.approx(50e-6))
    assert l2 == pytest.approx(0.0, abs=1e-9)
    assert DQ.loss(pairs, DQ.fit(pairs)) > 0.05
