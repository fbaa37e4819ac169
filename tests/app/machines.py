"""Simulated machines for the advice tests: one RTX 3090; two A100, one with uncorrectable ECC
errors. The same cards as the fake NVML scenarios "rtx3090" and "a100x2_ecc" (gui branch); kept
here so these tests do not wait for that branch."""

from __future__ import annotations

from tests.fakes.fake_nvml import GIB, FakeGpu, FakeNVML

_A100 = {"name": "NVIDIA A100-SXM4-80GB", "cc": (8, 0), "enforced_limit_mw": 400_000, "default_limit_mw": 400_000,
             "constraints_mw": (100_000, 400_000), "clocks": {0: 1410, 1: 1410, 2: 1593}, "max_clocks": {0: 1410, 1: 1410, 2: 1593},
             "pcie_gen": 4, "pcie_max_gen": 4, "gpu_max_gen": 4}


def rtx3090() -> FakeNVML:
    return FakeNVML([FakeGpu(name="NVIDIA GeForce RTX 3090", memory_total=24 * GIB, cc=(8, 6), ecc_mode=None, retired=None,
                             remapped=None, enforced_limit_mw=350_000, default_limit_mw=350_000, constraints_mw=(100_000, 350_000),
                             clocks={0: 1695, 1: 1695, 2: 9751}, max_clocks={0: 2100, 1: 2100, 2: 9751}, pcie_gen=4, pcie_max_gen=4,
                             gpu_max_gen=4, fan=30)])


def a100x2(ecc_on_gpu1: bool = True) -> FakeNVML:
    return FakeNVML([
        FakeGpu(uuid="GPU-a100-0", bus_id="00000000:3B:00.0", **_A100),
        FakeGpu(uuid="GPU-a100-1", bus_id="00000000:5E:00.0", ecc_counts={(1, 0): 5} if ecc_on_gpu1 else {}, **_A100),
    ])
