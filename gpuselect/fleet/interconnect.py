"""The interconnect a fleet run measured, in the terms the estimator's communication model uses.

The estimator times a ring all-reduce of the gradients as 2(n-1)/n * bytes / link, which is
nccl-tests' bus bandwidth definition turned around: the measured all-reduce busbw *is* that
link figure. Intra-node: the median over nodes of each node's all-reduce busbw at the largest
buffer measured. Inter-node: the all-reduce busbw of one rank per node at the largest buffer,
the per-node network rate that replaces the spec assumption (``Assumptions.network_gbs``).
Pure: no torch."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuselect.errors import DataError


@dataclass(frozen=True)
class MeasuredInterconnect:
    source: str  # the fleet report it came from
    backend: str  # nccl or gloo
    intra_node_gbs: float | None  # all-reduce busbw within a node (GB/s, per direction)
    intra_node_ranks: int | None  # ranks per node in that measurement
    inter_node_gbs: float | None  # all-reduce busbw across nodes, one rank per node
    nodes: int
    at_bytes: int  # the buffer size the figures were taken at

    def describe(self) -> str:
        parts = []
        if self.intra_node_gbs is not None:
            parts.append(f"intra-node {self.intra_node_gbs:,.2f} GB/s ({self.intra_node_ranks} ranks)")
        if self.inter_node_gbs is not None:
            parts.append(f"inter-node {self.inter_node_gbs:,.2f} GB/s ({self.nodes} nodes)")
        return (f"measured all-reduce bus bandwidth from {self.source} ({self.backend}, {self.at_bytes:,} B buffers): "
                + (", ".join(parts) or "nothing")
                + ("; buffers this small understate what large gradient all-reduces get" if self.at_bytes < 64 << 20 else ""))


def from_fleet_doc(doc: Any, source: str) -> MeasuredInterconnect:
    if not isinstance(doc, dict) or doc.get("kind") != "fleet" or not isinstance(doc.get("report"), dict):
        raise DataError(f"{source} is not a `gpuselect fleet --output FILE.json` report")
    rep = doc["report"]
    points = [p for p in rep.get("bandwidth") or [] if isinstance(p, dict) and p.get("op") == "all_reduce"]
    ok = [p for p in points if isinstance(p.get("busbw_gbs"), (int, float)) and p["busbw_gbs"] > 0 and isinstance(p.get("bytes"), int)]
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
        return float(statistics.median(p["busbw_gbs"] for p in top)), int(top[0].get("ranks") or 0), largest

    intra, intra_ranks, b1 = at_largest("intra-node")
    inter, _, b2 = at_largest("inter-node")
    return MeasuredInterconnect(source=source, backend=str(rep.get("backend")), intra_node_gbs=intra, intra_node_ranks=intra_ranks,
                                inter_node_gbs=inter, nodes=len(rep.get("nodes") or []), at_bytes=max(b1, b2))


def load_interconnect(path: str) -> MeasuredInterconnect:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not JSON (fleet reports for --interconnect are the .json ones): {exc}") from exc
    return from_fleet_doc(doc, path)


def measured_link_gbs(m: MeasuredInterconnect | None, count: int, gpus_per_node: int) -> tuple[float, str] | None:
    """The link bandwidth (GB/s) for ``count`` GPUs from the measurement, and its basis in words;
    None where nothing measured applies (the caller uses the spec figure).

    Within a node the measured busbw is the link; across nodes it replaces the network rate in
    the estimator's spec formula (network / GPUs per node * 2), so both stay comparable."""
    if m is None or count <= 1:
        return None
    if count > gpus_per_node:
        if m.inter_node_gbs is None:
            return None
        return m.inter_node_gbs / gpus_per_node * 2, f"measured inter-node {m.inter_node_gbs:,.2f} GB/s per node ({m.source})"
    if m.intra_node_gbs is None:
        return None
    return m.intra_node_gbs, f"measured intra-node {m.intra_node_gbs:,.2f} GB/s ({m.source})"
