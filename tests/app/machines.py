"""Simulated machines for the advice tests, from the fake NVML scenarios (tests/fakes/fake_nvml.py)."""

from __future__ import annotations

from tests.fakes import fake_nvml as F

rtx3090 = F.rtx3090


def a100x2(ecc_on_gpu1: bool = True) -> F.FakeNVML:
    """The "a100x2_ecc" scenario, or the same two cards both healthy."""
    return F.a100x2_ecc() if ecc_on_gpu1 else F.FakeNVML([F._a100(0), F._a100(1)], driver="550.54.15", cuda=12040)
