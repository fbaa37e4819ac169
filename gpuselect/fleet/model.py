"""Typed records of a fleet run and the pure arithmetic behind them (no torch).

Bandwidth follows nccl-tests' definitions (its doc/PERFORMANCE.md): for a buffer of S bytes
moved in time t, the algorithm bandwidth is algbw = S / t, and the bus bandwidth, comparable to
the hardware's link speed whatever the rank count n, is busbw = algbw * 2(n-1)/n for all-reduce
and algbw * (n-1)/n for all-gather and reduce-scatter. S is the whole buffer: for all-gather the
gathered output, for reduce-scatter the input that is scattered.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

OPS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter")
#: intra-node: the ranks of one node; inter-node: one rank per node; all-ranks: every rank of
#: every node (what multi-node data-parallel training runs), measured when there are several
#: nodes with several ranks each.
SCOPES: tuple[str, ...] = ("intra-node", "inter-node", "all-ranks")
MIN_BYTES = 8
GIB = 1024**3
#: A node whose figure is more than this fraction below the median of all nodes is a straggler.
STRAGGLER_FRACTION = 0.10
ELEMENT_BYTES = 4  # float32 buffers, as nccl-tests' default


def bus_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for the other two."""
    if ranks < 1:
        raise ValueError(f"a collective needs at least one rank, not {ranks}")
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in ("all_gather", "reduce_scatter"):
        return (ranks - 1) / ranks
    raise ValueError(f"unknown collective {op!r}")


def sizes(max_bytes: int, min_bytes: int = MIN_BYTES, factor: int = 2) -> list[int]:
    """Buffer sizes from ``min_bytes`` to ``max_bytes``, multiplying by ``factor`` (nccl-tests -f)."""
    if min_bytes < 1 or max_bytes < min_bytes or factor < 2:
        raise ValueError(f"bad size range {min_bytes}..{max_bytes} x{factor}")
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= factor
    return out


def elements_for(op: str, nbytes: int, ranks: int) -> int | None:
    """Elements each rank contributes for a buffer of ``nbytes`` (None: too small to split n ways).

    all-reduce: every rank holds the whole buffer; all-gather: each sends 1/n of the gathered
    output; reduce-scatter: each receives 1/n of the input."""
    total = nbytes // ELEMENT_BYTES
    if op == "all_reduce":
        return total if total >= 1 else None
    per = total // ranks
    return per if per >= 1 else None


@dataclass
class BandwidthPoint:
    scope: str  # intra-node | inter-node | all-ranks
    group: str  # "node0" for intra-node, "nodes" for inter-node, "all" for all-ranks
    op: str
    ranks: int
    bytes: int  # the whole buffer (nccl-tests' "size")
    time_us: float  # median over repeats, averaged over the group's ranks (nccl-tests' default)
    time_low_us: float  # fastest repeat (mean over ranks)
    time_high_us: float  # slowest repeat (mean over ranks)
    algbw_gbs: float
    busbw_gbs: float
    repeats: int
    iterations: int  # back-to-back collectives timed together in one repeat


def _sig(v: float, digits: int = 6) -> float:
    """Round to significant digits: an 8 B transfer's 1e-6 GB/s must not round to 0."""
    return float(f"{v:.{digits}g}")


def point(
    scope: str,
    group: str,
    op: str,
    ranks: int,
    nbytes: int,
    t_s: float,
    lo_s: float,
    hi_s: float,
    repeats: int,
    iterations: int,
) -> BandwidthPoint:
    algbw = nbytes / t_s / 1e9 if t_s > 0 else 0.0
    return BandwidthPoint(
        scope,
        group,
        op,
        ranks,
        nbytes,
        _sig(t_s * 1e6),
        _sig(lo_s * 1e6),
        _sig(hi_s * 1e6),
        _sig(algbw),
        _sig(algbw * bus_factor(op, ranks)),
        repeats,
        iterations,
    )


@dataclass
class GpuFigures:
    """The key figures of the GPU one rank drove."""

    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    memory_total_bytes: int | None
    temperature_c: int | None
    power_draw_w: float | None
    power_limit_w: float | None
    sm_mhz: int | None
    sm_max_mhz: int | None
    pcie: str | None  # "gen5 x16 (max gen5 x16)"


@dataclass
class RankInfo:
    rank: int
    local_rank: int
    node: str  # "node0"
    host: str
    device: str  # "cuda:0" or "cpu"
    torch_version: str | None
    cpu_model: str | None
    gpu: GpuFigures | None
    gpus_on_node: int
    health_worst: str
    health_counts: dict[str, int]
    findings: list[
        dict[str, Any]
    ]  # findings that are not "ok": severity, id, device, title, detail, value, threshold, unit, remedy
    bench: dict[str, Any] | None = None  # key figures of `bench --quick` on this rank's device
    stage_s: dict[str, float] = field(default_factory=dict)  # seconds per stage on this rank
    error: str | None = None


@dataclass
class NodeInfo:
    name: str
    host: str
    ranks: list[int]
    health_worst: str
    health_counts: dict[str, int]
    gpus: int


@dataclass
class Straggler:
    what: str  # "node1" or "rank 3 (node0, cuda:3)"
    metric: str
    value: float
    median: float
    below_median: float  # fraction, 0.15 = 15 % below


@dataclass
class FleetReport:
    generated_at: str
    app_version: str
    backend: str
    world_size: int
    torch_version: str | None
    settings: dict[str, Any]
    nodes: list[NodeInfo]
    ranks: list[RankInfo]
    bandwidth: list[BandwidthPoint]
    stragglers: list[Straggler]
    notes: list[str]
    errors: list[str]
    complete: bool
    duration_s: float
    method: str = (
        "nccl-tests' method: for each collective and buffer size, warm-up runs, then repeats that "
        "each time a fixed number of back-to-back collectives after a synchronising all-reduce; the "
        "median repeat per rank, averaged over the group's ranks; algbw = bytes / time, busbw = "
        "algbw * 2(n-1)/n (all-reduce) or (n-1)/n (all-gather, reduce-scatter). Intra-node: the "
        "ranks of one node (every node at once); inter-node: one rank per node; all-ranks: every "
        "rank of every node."
    )


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def peak_busbw(
    points: list[BandwidthPoint], scope: str, group: str | None = None, op: str = "all_reduce"
) -> float | None:
    """Bus bandwidth at the largest buffer measured (where large transfers settle), or None."""
    pts = [p for p in points if p.scope == scope and p.op == op and (group is None or p.group == group)]
    if not pts:
        return None
    largest = max(p.bytes for p in pts)
    return _median([p.busbw_gbs for p in pts if p.bytes == largest])


def find_stragglers(
    nodes: list[NodeInfo], ranks: list[RankInfo], points: list[BandwidthPoint], fraction: float = STRAGGLER_FRACTION
) -> list[Straggler]:
    """Nodes (and GPUs) more than ``fraction`` below the median of their peers on a figure.

    Figures: each node's intra-node all-reduce bus bandwidth at the largest size; with
    ``--bench-quick``, each node's mean and each rank's own matmul rate and memory bandwidth."""
    out: list[Straggler] = []

    def judge(items: list[tuple[str, float]], metric: str) -> None:
        vals = [v for _, v in items if v > 0]
        if len(vals) < 2:
            return
        med = _median(vals)
        for who, v in items:
            if med > 0 and v < (1 - fraction) * med:
                out.append(Straggler(who, metric, round(v, 4), round(med, 4), round(1 - v / med, 4)))

    bw = [(n.name, peak_busbw(points, "intra-node", n.name)) for n in nodes]
    judge([(name, v) for name, v in bw if v is not None], "intra-node all-reduce busbw at the largest size, GB/s")
    for key, label in (("matmul_tflops", "matmul TFLOP/s ({p})"), ("memory_bandwidth_gbs", "memory bandwidth GB/s")):
        per_rank: dict[str, list[tuple[RankInfo, float]]] = {}
        for r in ranks:
            b = r.bench or {}
            if key == "matmul_tflops":
                for p, v in (b.get(key) or {}).items():
                    if isinstance(v, (int, float)):
                        per_rank.setdefault(label.format(p=p), []).append((r, float(v)))
            elif isinstance(b.get(key), (int, float)):
                per_rank.setdefault(label, []).append((r, float(b[key])))
        for metric, items in per_rank.items():
            by_node: dict[str, list[float]] = {}
            for r, v in items:
                by_node.setdefault(r.node, []).append(v)
            judge([(n, sum(v) / len(v)) for n, v in by_node.items()], metric + ", node mean")
            # GPUs are only comparable with GPUs of the same model.
            by_model: dict[str, list[tuple[RankInfo, float]]] = {}
            for r, v in items:
                by_model.setdefault((r.gpu.name if r.gpu else None) or r.device, []).append((r, v))
            for group in by_model.values():
                judge([(f"rank {r.rank} ({r.node}, {r.device})", v) for r, v in group], metric)
    return out


def summarise_nodes(ranks: list[RankInfo]) -> list[NodeInfo]:
    """One record per node: its ranks and its worst health (every rank judged the whole node)."""
    order = ["ok", "info", "unknown", "warning", "critical"]
    nodes: dict[str, NodeInfo] = {}
    for r in sorted(ranks, key=lambda r: r.rank):
        n = nodes.get(r.node)
        if n is None:
            nodes[r.node] = NodeInfo(r.node, r.host, [r.rank], r.health_worst, dict(r.health_counts), r.gpus_on_node)
            continue
        n.ranks.append(r.rank)
        if order.index(r.health_worst) > order.index(n.health_worst):
            n.health_worst, n.health_counts = r.health_worst, dict(r.health_counts)
    return sorted(nodes.values(), key=lambda n: (len(n.name), n.name))


def report_from_dict(d: dict[str, Any]) -> FleetReport:
    """A FleetReport back from its JSON form (``to_jsonable``), e.g. to draw a saved run as PDF."""

    def rank(r: dict[str, Any]) -> RankInfo:
        g = r.get("gpu")
        return RankInfo(**{**r, "gpu": GpuFigures(**g) if isinstance(g, dict) else None})

    return FleetReport(
        **{
            **d,
            "nodes": [NodeInfo(**n) for n in d.get("nodes") or []],
            "ranks": [rank(r) for r in d.get("ranks") or []],
            "bandwidth": [BandwidthPoint(**p) for p in d.get("bandwidth") or []],
            "stragglers": [Straggler(**s) for s in d.get("stragglers") or []],
        }
    )
