"""Data-parallel communication (rev15 findings 1, 5, 6, 8): NCCL's latency per collective, ZeRO-1/2's
post-step parameter gather, FSDP's sharded gradient cast, and an MI250X die's share of its board's
Infinity Fabric. Expected values are hand arithmetic from NCCL's tuning constants (parallel.py)."""

from __future__ import annotations

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.estimate import api as A
from gpuselect.estimate import parallel as P
from gpuselect.workloads.presets import PRESETS


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog()


def test_fsdp_casts_only_its_gradient_shard(catalog) -> None:  # type: ignore[no-untyped-def]
    """Under FSDP mixed precision the gathered weights are already bf16 (autocast's casts are no-ops)
    and each rank casts its 1/n shard of the gradients to fp32: 6 B/param / n of traffic, no cast
    launches. DDP on the same 8 GPUs still casts every weight use and the whole gradient."""
    e = catalog.get("nvidia-h100-sxm5-80gb")
    d = A.multi_gpu_device(A.device_for(e))
    w = PRESETS["llama-8b-full"]
    ddp = A.predict_step(w, A.device_for(e), e, 1, "bf16", count=8, sharding="none")[0]
    fsdp = A.predict_step(w, A.device_for(e), e, 1, "bf16", count=8, sharding="fsdp")[0]
    rate = d.bandwidth_gbs * 1e9 * d.mem_eff
    assert ddp.breakdown["memory"] - fsdp.breakdown["memory"] == pytest.approx(
        w.trainable_params * 6.0 * (1 - 1 / 8) / rate, rel=1e-6
    )
    assert ddp.launches > fsdp.launches
    assert ddp.breakdown["kernel_floor"] > fsdp.breakdown["kernel_floor"]


def test_mi250x_die_gets_half_the_boards_infinity_fabric(catalog) -> None:  # type: ignore[no-untyped-def]
    """The catalog's 800 GB/s is the MI250X package's 8 links x 100 GB/s (both directions); each of
    its two GCDs, one rank, gets half: 400 GB/s, 200 per direction, 160 after efficiency."""
    board = catalog.get("amd-mi250x")
    die = board.one_die()
    assert board.gpu_link_gbs == 800 and die.gpu_link_gbs == 400
    cp = P.CommParams()
    bw, basis = P.link_bandwidth(die, 8, 8, None, cp)
    assert bw == pytest.approx(400 / 2 * cp.efficiency) and "400" in basis
