"""Data-parallel communication (rev15 findings 1, 5, 6, 8): NCCL's latency per collective, ZeRO-1/2's
post-step parameter gather, FSDP's sharded gradient cast, and an MI250X die's share of its board's
Infinity Fabric. Expected values are hand arithmetic from NCCL's tuning constants (parallel.py)."""

from __future__ import annotations

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.estimate import parallel as P


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog()


def test_mi250x_die_gets_half_the_boards_infinity_fabric(catalog) -> None:  # type: ignore[no-untyped-def]
    """The catalog's 800 GB/s is the MI250X package's 8 links x 100 GB/s (both directions); each of
    its two GCDs, one rank, gets half: 400 GB/s, 200 per direction, 160 after efficiency."""
    board = catalog.get("amd-mi250x")
    die = board.one_die()
    assert board.gpu_link_gbs == 800 and die.gpu_link_gbs == 400
    cp = P.CommParams()
    bw, basis = P.link_bandwidth(die, 8, 8, None, cp)
    assert bw == pytest.approx(400 / 2 * cp.efficiency) and "400" in basis
