"""The interconnect a fleet run measured, in the terms the estimator's communication model uses.

A ring all-reduce of B bytes over n ranks takes 2(n-1)/n * B / bw, where bw is the bandwidth
each rank's share of the ring gets; that is nccl-tests' bus-bandwidth definition turned round,
so a measured all-reduce busbw *is* that per-GPU ring bandwidth, efficiency included.

- Within a node: the median over nodes of each node's all-reduce busbw at the largest buffer.
- Across nodes: the all-reduce busbw of every rank of every node (``all-ranks``) where it was
  measured; otherwise the ring is limited by the slower of the node's GPU links and its network,
  min(intra-node, inter-node busbw with one rank per node). One rank per node may use only one
  of a node's NICs, so that fallback can understate a multi-rail network.
Pure: no torch."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from gpuselect.errors import DataError
from gpuselect.safe_io import check_plain_text, finite_number, read_json

#: The bus bandwidths a measurement may report (GB/s): `--network-gbs`'s range. Outside it a
#: figure is a corrupt or hand-edited report, not a network.
BUSBW_RANGE_GBS = (0.01, 100_000.0)
#: A fleet report of a thousand ranks is well under this.
MAX_REPORT_BYTES = 32 * 1024 * 1024
#: The longest text a fleet report holds (host names, CPU and GPU names, versions, messages): a
#: longer one is damage, and broke the PDF table's layout.
MAX_TEXT_CHARS = 2000


@dataclass(frozen=True)
class MeasuredInterconnect:
    source: str  # the fleet report it came from
    backend: str  # nccl or gloo
    intra_node_gbs: float | None  # all-reduce busbw within a node (GB/s, per direction)
    intra_node_ranks: int | None  # ranks per node in that measurement
    inter_node_gbs: float | None  # all-reduce busbw across nodes, one rank per node
    nodes: int
    at_bytes: int  # the buffer size the figures were taken at
    all_ranks_gbs: float | None = None  # all-reduce busbw over every rank of every node
    all_ranks: int | None = None

    @property
    def across_nodes(self) -> bool:
        """Whether it measured between nodes: else rows over several nodes use the spec network."""
        return self.inter_node_gbs is not None or self.all_ranks_gbs is not None

    def figures(self) -> str:
        """The measured bus bandwidths in words, without the file they came from."""
        parts = []
        if self.intra_node_gbs is not None:
            parts.append(f"intra-node {self.intra_node_gbs:,.2f} GB/s ({self.intra_node_ranks} ranks)")
        if self.inter_node_gbs is not None:
            parts.append(f"inter-node {self.inter_node_gbs:,.2f} GB/s ({self.nodes} nodes, one rank each)")
        if self.all_ranks_gbs is not None:
            parts.append(f"all ranks {self.all_ranks_gbs:,.2f} GB/s ({self.all_ranks} ranks)")
        return ", ".join(parts) or "nothing"

    def describe(self) -> str:
        return (
            f"measured all-reduce bus bandwidth from {self.source} ({self.backend}, {self.at_bytes:,} B buffers): "
            + self.figures()
            + (
                "; buffers this small understate what large gradient all-reduces get"
                if self.at_bytes < 64 << 20
                else ""
            )
            + (
                "; Gloo moves host memory between processes: it measures the host's links, not NVLink or "
                "PCIe between GPUs (NCCL on the GPUs does)"
                if self.backend == "gloo"
                else ""
            )
        )


def from_fleet_doc(doc: Any, source: str) -> MeasuredInterconnect:
    if not isinstance(doc, dict) or doc.get("kind") != "fleet" or not isinstance(doc.get("report"), dict):
        raise DataError(f"{source} is not a `gpuselect fleet --output FILE.json` report")
    rep = doc["report"]
    bandwidth = rep.get("bandwidth") or []
    if not isinstance(bandwidth, list):
        raise DataError(f"{source}: its bandwidth entry is not a list of measurements")
    points = [p for p in bandwidth if isinstance(p, dict) and p.get("op") == "all_reduce"]
    lo, hi = BUSBW_RANGE_GBS
    for p in points:
        # Every point must be a measurement at all (small buffers run far below the range the
        # estimate uses: 8 B all-reduces are latency, ~1e-4 GB/s, on any link).
        bw = p.get("busbw_gbs")
        if bw is None:
            continue
        if not finite_number(bw) or not 0 <= bw <= hi:
            raise DataError(
                f"{source} reports an all-reduce bus bandwidth of {str(bw)[:40]} GB/s, outside 0 to {hi:,.0f}: "
                "the report is corrupt or was edited; measure again"
            )
    ok = [
        p
        for p in points
        if isinstance(p.get("busbw_gbs"), (int, float))
        and isinstance(p.get("bytes"), int)
        and not isinstance(p.get("bytes"), bool)
        and p["bytes"] > 0
    ]
    if not ok:
        raise DataError(f"{source} has no all-reduce bandwidth: run fleet under torchrun with at least two ranks")
    if rep.get("complete") is False:
        raise DataError(f"{source} is an incomplete fleet report (the run failed); measure again")

    def at_largest(scope: str) -> tuple[float | None, int | None, int]:
        pts = [p for p in ok if p.get("scope") == scope]
        if not pts:
            return None, None, 0
        largest = max(p["bytes"] for p in pts)
        top = [p for p in pts if p["bytes"] == largest]
        ranks = top[0].get("ranks")
        n = ranks if isinstance(ranks, int) and not isinstance(ranks, bool) and 0 < ranks < 1 << 20 else 0
        return float(statistics.median(p["busbw_gbs"] for p in top)), n, largest

    intra, intra_ranks, b1 = at_largest("intra-node")
    inter, _, b2 = at_largest("inter-node")
    world, world_ranks, b3 = at_largest("all-ranks")
    for name, bw, at in (("intra-node", intra, b1), ("inter-node", inter, b2), ("all-ranks", world, b3)):
        if bw is not None and not lo <= bw:  # the figure the estimate uses: --network-gbs's range
            raise DataError(
                f"{source}: its {name} all-reduce reaches {bw:.3g} GB/s at its largest buffer ({at:,} B), below "
                f"{lo:g} GB/s: measure with larger buffers (fleet --max-bytes) or check the link"
            )
    return MeasuredInterconnect(
        source=source,
        backend=str(rep.get("backend")),
        intra_node_gbs=intra,
        intra_node_ranks=intra_ranks,
        inter_node_gbs=inter,
        nodes=len(rep.get("nodes") or []),
        at_bytes=max(b1, b2, b3),
        all_ranks_gbs=world,
        all_ranks=world_ranks,
    )


def load_interconnect(path: str) -> MeasuredInterconnect:
    # The bounded reader: a regular file under the size limit, UTF-8, JSON nested sanely; anything
    # else (a device, a pipe, a folder, a huge or binary file) is one sentence, not a hang or a crash.
    doc = read_json(path, what="fleet report", max_bytes=MAX_REPORT_BYTES)
    # as `fleet --from` reads it: its backend is printed, and "\u001b[2J" there cleared the terminal
    check_plain_text(doc, path, max_len=MAX_TEXT_CHARS)
    return from_fleet_doc(doc, path)


def measured_link_gbs(m: MeasuredInterconnect | None, count: int, gpus_per_node: int) -> tuple[float, str] | None:
    """The per-GPU ring bandwidth (GB/s) for ``count`` GPUs from the measurement, and its basis
    in words; None where nothing measured applies (the caller uses its spec figure)."""
    if m is None or count <= 1:
        return None
    if count <= gpus_per_node:
        if m.intra_node_gbs is None:
            return None
        return m.intra_node_gbs, f"measured intra-node {m.intra_node_gbs:,.2f} GB/s ({m.source})"
    if m.all_ranks_gbs is not None:
        return (
            m.all_ranks_gbs,
            f"measured across nodes, all {m.all_ranks} ranks: {m.all_ranks_gbs:,.2f} GB/s ({m.source})",
        )
    if m.inter_node_gbs is None:
        return None
    ring = min(m.inter_node_gbs, m.intra_node_gbs) if m.intra_node_gbs is not None else m.inter_node_gbs
    return (
        ring,
        f"measured across nodes: min(intra-node, inter-node {m.inter_node_gbs:,.2f} GB/s) = {ring:,.2f} GB/s ({m.source})",
    )
