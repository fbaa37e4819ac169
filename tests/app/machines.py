"""Simulated machines for the advice tests, from the fake NVML scenarios (tests/fakes/fake_nvml.py)."""

from __future__ import annotations

import dataclasses

from tests.fakes import fake_nvml as F

rtx3090 = F.rtx3090


def a100x2(ecc_on_gpu1: bool = True) -> F.FakeNVML:
    """The "a100x2_ecc" scenario, or the same two cards both healthy."""
    return F.a100x2_ecc() if ecc_on_gpu1 else F.FakeNVML([F._a100(0), F._a100(1)], driver="550.54.15", cuda=12040)


def _geforce(name: str, memory_gib: int, i: int, limit_w: int, cc: tuple[int, int] = (8, 6)) -> F.FakeGpu:
    """An idle GeForce card like the RTX 3090 scenario's, as the i-th GPU of its machine."""
    (base,) = F.rtx3090().gpus
    return dataclasses.replace(
        base,
        name=name,
        uuid=f"GPU-{i:08x}-0000-4000-8000-0000000000{i:02d}",
        bus_id=f"00000000:{i + 1:02X}:00.0",
        serial=str(i),
        cc=cc,
        memory_total=memory_gib * F.GIB,
        enforced_limit_mw=limit_w * 1000,
        default_limit_mw=limit_w * 1000,
        constraints_mw=(100_000, limit_w * 1000 + 50_000),
    )


def rtx3090_and_two_3060() -> F.FakeNVML:
    """A mixed box: an RTX 3090 and two RTX 3060 12GB (the larger group is the slower)."""
    cards = [
        _geforce("NVIDIA GeForce RTX 3090", 24, 0, 350),
        _geforce("NVIDIA GeForce RTX 3060", 12, 1, 170),
        _geforce("NVIDIA GeForce RTX 3060", 12, 2, 170),
    ]
    return F.FakeNVML(cards, driver="550.54.15", cuda=12040)


def rtx4090x2() -> F.FakeNVML:
    """Two idle GeForce RTX 4090 (24 GB each)."""
    cards = [_geforce("NVIDIA GeForce RTX 4090", 24, i, 450, cc=(8, 9)) for i in range(2)]
    return F.FakeNVML(cards, driver="550.54.15", cuda=12040)


def unknown_card() -> F.FakeNVML:
    """One healthy GPU whose name no catalog entry matches."""
    return F.FakeNVML([_geforce("NVIDIA Quadro Frobnitz 9000", 32, 0, 300, cc=(8, 9))], driver="550.54.15", cuda=12040)
