"""The fleet run for real: torchrun launches 2-4 ranks with Gloo over loopback on this machine.

Two torchrun agents on one host with --nnodes 2 stand in for two nodes (torchrun's node rank
names them), so the inter-node path runs too. Sizes are capped small to keep the suite fast."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuselect.fleet.model import OPS, sizes
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow
MAX = 4096


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _check_positive_everywhere(rep: dict, scope: str, group: str, ranks: int) -> None:
    pts = [p for p in rep["bandwidth"] if p["scope"] == scope and p["group"] == group]
    for op in OPS:
        got = sorted(p["bytes"] for p in pts if p["op"] == op)
        # Every size of the sweep that splits `ranks` ways (all-gather and reduce-scatter need 4n bytes).
        want = [b for b in sizes(MAX) if op == "all_reduce" or b // 4 // ranks >= 1]
        want = [(b // 4 // ranks) * 4 * ranks if op != "all_reduce" else b for b in want]
        assert got == want, (op, got)
        for p in pts:
            assert p["ranks"] == ranks and p["algbw_gbs"] > 0 and p["busbw_gbs"] > 0 and p["time_us"] > 0


def test_two_ranks_one_node(tmp_path: Path) -> None:
    """Also: rank 1 is slow (but making progress) for twice --timeout-s, and the run still completes."""
    out = tmp_path / "fleet.json"
    proc = subprocess.run(
        _torchrun(
            "--nproc-per-node",
            "2",
            "--master-port",
            str(_free_port()),
            "-m",
            "gpuselect",
            "fleet",
            "--max-bytes",
            str(MAX),
            "--repeats",
            "3",
            "--timeout-s",
            "4",
            "--output",
            str(out),
        ),
        cwd=tmp_path,
        env=_env(GPUSELECT_FLEET_TEST_FAIL="1:slow"),
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "slow for 8 s" in proc.stderr
    doc = json.loads(out.read_text())
    rep = doc["report"]
    assert doc["kind"] == "fleet" and rep["complete"] and rep["backend"] == "gloo"
    assert sorted(r["rank"] for r in rep["ranks"]) == [0, 1]
    assert [n["name"] for n in rep["nodes"]] == ["node0"]
    assert all(r["health_worst"] in ("ok", "info", "unknown", "warning", "critical") for r in rep["ranks"])
    _check_positive_everywhere(rep, "intra-node", "node0", 2)
    assert not [p for p in rep["bandwidth"] if p["scope"] != "intra-node"]
    assert any("one node" in n for n in rep["notes"])


def test_two_nodes_of_two_ranks(tmp_path: Path) -> None:
    port = str(_free_port())
    out = tmp_path / "fleet.json"
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", port]
    tail = ["-m", "gpuselect", "fleet", "--max-bytes", str(MAX), "--repeats", "3"]
    node1 = subprocess.Popen(
        _torchrun(*common, "--node-rank", "1", *tail),
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        proc = subprocess.run(
            _torchrun(*common, "--node-rank", "0", *tail, "--output", str(out)),
            cwd=tmp_path,
            env=_env(),
            check=False,
            capture_output=True,
            text=True,
            timeout=240,
        )
        node1.wait(timeout=60)
    finally:
        node1.kill()
    assert proc.returncode == 0 and node1.returncode == 0, proc.stderr[-3000:]
    rep = json.loads(out.read_text())["report"]
    assert sorted(r["rank"] for r in rep["ranks"]) == [0, 1, 2, 3]
    assert {n["name"]: n["ranks"] for n in rep["nodes"]} == {"node0": [0, 1], "node1": [2, 3]}
    for node in ("node0", "node1"):
        _check_positive_everywhere(rep, "intra-node", node, 2)
    _check_positive_everywhere(rep, "inter-node", "nodes", 2)
    _check_positive_everywhere(rep, "all-ranks", "all", 4)


def _failing_run(tmp_path: Path, mode: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], float, Path]:
    out = tmp_path / "fleet.json"
    t0 = time.monotonic()
    proc = subprocess.run(
        _torchrun(
            "--nproc-per-node",
            "2",
            "--master-port",
            str(_free_port()),
            "-m",
            "gpuselect",
            "fleet",
            "--max-bytes",
            "64",
            "--output",
            str(out),
            *extra,
        ),
        cwd=tmp_path,
        env=_env(GPUSELECT_FLEET_TEST_FAIL=f"1:{mode}"),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, time.monotonic() - t0, out


def test_a_rank_that_dies_ends_the_run_with_its_rank_named(tmp_path: Path) -> None:
    proc, took, out = _failing_run(tmp_path, "exit")
    assert proc.returncode != 0
    assert took < 90  # three torch imports on a loaded 2-core VM take most of it
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("gpuselect fleet: rank 0: FAILED")]
    assert ours and "rank 1" in ours[0] and "exited" in ours[0], proc.stderr[-3000:]
    rep = json.loads(out.read_text())["report"]  # rank 0 wrote what it had
    assert rep["complete"] is False and "rank 1" in rep["errors"][0]
    # Rank 0's own record, unless the launcher stopped it before its own detect had finished.
    assert [r["rank"] for r in rep["ranks"]] in ([0], [])


def test_a_hung_rank_is_named_after_the_timeout(tmp_path: Path) -> None:
    proc, took, _ = _failing_run(tmp_path, "hang", "--timeout-s", "4")
    assert proc.returncode != 0
    assert took < 90
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("gpuselect fleet: rank 0: FAILED")]
    assert ours and "rank 1" in ours[0] and "still in 'detect and health'" in ours[0], proc.stderr[-3000:]
