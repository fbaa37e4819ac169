"""Communication of data-parallel training: DDP's gradient all-reduce and FSDP/ZeRO-3's
all-gathers and reduce-scatter, over NVLink/NVSwitch, PCIe or the network between nodes.

Ring algorithms (NCCL/RCCL): an all-reduce of S bytes over N GPUs moves 2(N-1)/N x S per GPU, an
all-gather or reduce-scatter (N-1)/N x S, at the slowest link's bandwidth per direction.
Between nodes NCCL runs one ring per NIC (or a tree), so the node's network bandwidth carries the
whole stream: per-GPU ring bandwidth = min(intra-node link, network_gbs per node); by default the
network of the card's reference node (``reference_network_gbs``).
Latency: by default 2(N-1) (DDP) or 3(N-1) (FSDP) ring steps of ``latency_s`` once per step.
``CommParams.latency_model = "nccl"`` (steptime.json "comm") charges NCCL's own latency per
collective instead (``collective_seconds``: per 25 MB DDP bucket, tree or ring; per FSDP unit's
gather and reduce-scatter). It is measured, not adopted: on llm-foundry's 8-512-GPU FSDP rows it
left the held-out errors as they were and turned the by-count trend from +3.8 to -4.0 points
in sample (CHANGELOG, session 15); on the 2-8 GPU DDP rows it changes nothing measurable
(benchmarks/ddp_latency_models.py, session 17).
DDP buckets gradients (25 MB) and reduces them while the backward pass runs: only what does not
fit under the backward, plus the last bucket, is exposed. FSDP prefetches the next layer's
weights while the current one computes: what exceeds ``fsdp_overlap`` x compute is exposed.
ZeRO-1/2 reduce-scatter the gradients during the backward (each rank needs only its shard's) and
gather the updated parameters after the optimizer step: nothing is left to hide that behind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuselect.catalog.schema import GpuEntry

PCIE_PER_DIRECTION_GBS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}
DDP_BUCKET_BYTES = 25e6  # torch DDP's default bucket_cap_mb
#: ZeRO-1/2's post-step parameter gather, per collective: DeepSpeed's allgather_bucket_size
#: default, 5e8 (an assumption for torch's ZeroRedundancyOptimizer, which broadcasts per rank).
ZERO_GATHER_BUCKET_BYTES = 5e8


@dataclass(frozen=True)
class CommParams:
    efficiency: float = 0.8  # achieved share of the link's bandwidth (NCCL bus bandwidth on large messages)
    pcie_p2p_efficiency: float = 0.7  # PCIe protocol and peer-to-peer through the host bridge
    latency_s: float = 10e-6  # per ring step, once per step: the "per_step" latency model only
    # "per_step" (the default): 2(n-1) or 3(n-1) ring steps of ``latency_s`` for the whole step;
    # "nccl": each collective pays NCCL's own latency (collective_seconds). Not adopted (module doc).
    latency_model: str = "per_step"
    # Without peer-to-peer (GeForce cards since Ampere: the driver turns PCIe P2P off) NCCL stages
    # every chunk through pinned host memory: device -> host, then host -> device, one more copy and
    # the CPU's memory in the path. Assumed half the peer-to-peer rate (no measurement here).
    host_staged_factor: float = 0.5
    fsdp_overlap: float = 0.9  # share of FSDP's traffic that prefetching can hide behind compute

    def __post_init__(self) -> None:
        if self.latency_model not in ("per_step", "nccl"):
            raise ValueError(f'comm latency_model must be "per_step" or "nccl", not {self.latency_model!r}')


@dataclass(frozen=True)
class CommTime:
    total_s: float  # all traffic of one step at the link's rate
    exposed_s: float  # what the step waits for
    link: str  # "NVLink 900 GB/s", "PCIe 4.0", "network 25 GB/s per node"
    bandwidth_gbs: float  # per GPU per direction, after efficiency


#: NCCL's latency model for large messages (the Simple protocol, which NCCL picks for the
#: megabytes a bucket or an FSDP unit moves), in microseconds: NVIDIA/nccl src/graph/tuning.cc
#: (commit b6475625, ncclTopoTuneModel / ncclTopoGetAlgoTime). Ring: baseLat 8.4, plus per step
#: hwLat 3.4 over NVLink, 5.7 over PCIe, 14.0 over the network; on multi-node rings an intra-node
#: step costs at least 3x the 1 us network post overhead (x86). Tree (all-reduce only): baseLat 0,
#: hwLat 28 per hop, 2 x ((ranks per node - 1) intra hops + log2(nodes) network hops); its bus
#: bandwidth x 0.92 at half the algorithm bandwidth, times treeCorrectionFactor by message size. A
#: multi-node ring all-reduce's latency x 1.4 (x 1.9 before Ampere: "plateau effect of ring").
#: RCCL (AMD) has its own constants; NCCL's serve for both here.
NCCL_RING_BASE_US = 8.4
NCCL_RING_HOP_US = {"nvlink": 3.4, "pcie": 5.7, "net": 14.0}
NCCL_NET_OVERHEAD_US = 3.0
NCCL_TREE_HOP_US = 28.0
NCCL_TREE_BW = 0.92
NCCL_RING_PLATEAU = 1.4
#: treeCorrectionFactor's Simple row: message sizes 64 B x 2^i, i = 0..22 (larger: 1).
NCCL_TREE_CORRECTION = (
    0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9,
)  # fmt: skip


def _pre_ampere(e: GpuEntry) -> bool:
    try:
        return e.vendor == "NVIDIA" and float(e.compute_capability or "8.0") < 8.0
    except ValueError:
        return False


def _hop_kind(e: GpuEntry, count: int) -> str:
    """What carries a ring's steps inside a node, as ``link_bandwidth`` picks it."""
    bridged_pairs = e.form_factor in ("pcie", "desktop", "laptop")
    return "nvlink" if e.gpu_link_gbs and (not bridged_pairs or count <= 2) else "pcie"


def collective_seconds(kind: str, nbytes: float, bw_gbs: float, e: GpuEntry, count: int, gpus_per_node: int) -> float:
    """Seconds of one NCCL collective of ``nbytes`` (the full buffer: all-reduce input, all-gather
    output, reduce-scatter input) over ``count`` GPUs at per-GPU bus bandwidth ``bw_gbs``:
    NCCL's latency plus the ring's traffic; an all-reduce takes the faster of ring and tree, as
    NCCL's tuner does. ``kind``: "allreduce", "allgather" or "reducescatter"."""
    if count <= 1:
        return 0.0
    nodes = math.ceil(count / max(1, gpus_per_node))
    per_node = min(count, gpus_per_node)
    intra = NCCL_RING_HOP_US[_hop_kind(e, per_node)]
    if nodes > 1:
        intra = max(intra, NCCL_NET_OVERHEAD_US)
    inter = NCCL_RING_HOP_US["net"]
    bw = bw_gbs * 1e9
    if kind == "allreduce":
        steps, inter_steps = 2 * (count - 1), (2 * nodes if nodes > 1 else 0)
    else:
        steps, inter_steps = count - 1, nodes - 1
    ring_us = NCCL_RING_BASE_US + (steps - inter_steps) * intra + inter_steps * inter
    if kind != "allreduce":
        return ring_us * 1e-6 + (count - 1) / count * nbytes / bw
    if nodes > 1:
        ring_us *= NCCL_RING_PLATEAU if not _pre_ampere(e) else 1.9
    ring = ring_us * 1e-6 + 2 * (count - 1) / count * nbytes / bw
    tree_us = 2 * ((per_node - 1) * NCCL_TREE_HOP_US + int(math.log2(nodes)) * NCCL_TREE_HOP_US)
    size_log = int(math.log2(max(1.0, nbytes / 64)))
    correction = NCCL_TREE_CORRECTION[size_log] if size_log < len(NCCL_TREE_CORRECTION) else 1.0
    tree = tree_us * 1e-6 + 2 * nbytes / (bw * NCCL_TREE_BW * correction)
    return min(ring, tree)


#: GeForce generations whose driver disables PCIe peer-to-peer between cards (NCCL falls back to
#: copies through host memory); NVLink-bridged pairs are unaffected.
NO_P2P_GEFORCE_ARCHS = frozenset({"Ampere", "Ada Lovelace", "Blackwell"})


def peer_to_peer(e: GpuEntry) -> bool:
    """Whether two such cards exchange data directly over PCIe."""
    return not (e.vendor == "NVIDIA" and e.family == "geforce" and e.architecture in NO_P2P_GEFORCE_ARCHS)


#: Architectures whose 8-GPU platform joins the GPUs in a full mesh, one equal link to each peer
#: (AMD MI300X/MI325X/MI355X: 7 Infinity Fabric links, 64 GB/s per direction each on the MI300X;
#: the catalog's figure is their sum), not through a switch as NVLink's NVSwitch: a ring over n of
#: them crosses only the n - 1 links between its members (two MI300X: one link, 51 GB/s after
#: efficiency, not 358).
MESH_ARCHS = frozenset({"CDNA 3", "CDNA 4"})
MESH_GPUS = 8


def mesh_links(e: GpuEntry, count: int, gpus_per_node: int) -> int | None:
    """The links a ring over ``count`` GPUs of a full-mesh platform (``MESH_ARCHS``) crosses per
    GPU, of its ``MESH_GPUS`` - 1; None for a board behind a switch, whose ring gets its whole link."""
    if not (e.vendor == "AMD" and e.form_factor == "oam" and e.architecture in MESH_ARCHS):
        return None
    return max(1, min(count, gpus_per_node, MESH_GPUS) - 1)


#: The compute fabric of each board's reference 8-GPU node, GB/s per node (what rented clusters of
#: these cards are built like): DGX-1 4x EDR 100 Gb/s; DGX A100 8x HDR 200 Gb/s; DGX H100/H200 and
#: DGX B200 8x NDR 400 Gb/s; DGX B300 8x ConnectX-8 800 Gb/s; MI300X/MI325X/MI355X platforms 8x
#: 400 Gb/s; MI250X nodes (HPE Cray EX235a) 4x 200 Gb/s. Sources: the NVIDIA DGX datasheets and user
#: guides, AMD Instinct platform briefs, HPE EX235a spec (as named; not measured here).
REFERENCE_NETWORK_GBS = {
    "Pascal": 50.0,
    "Volta": 50.0,
    "Ampere": 200.0,
    "Hopper": 400.0,
    "Blackwell": 400.0,
    "Blackwell Ultra": 800.0,
    "CDNA 2": 100.0,
    "CDNA 3": 400.0,
    "CDNA 4": 400.0,
}
#: A PCIe server's network: one 200 Gb/s NIC.
PCIE_SERVER_NETWORK_GBS = 25.0


def describe_reference_networks() -> str:
    """The default between nodes in words, from the tables above (the faces show this)."""
    sxm = ", ".join(f"{arch} {gbs:g}" for arch, gbs in REFERENCE_NETWORK_GBS.items())
    return f"each card's reference node: SXM/OAM boards {sxm}; PCIe servers {PCIE_SERVER_NETWORK_GBS:g} GB/s per node"


def reference_network_gbs(e: GpuEntry) -> float:
    """Between nodes, when the user set no figure: the network of the card's reference node
    (SXM/OAM boards), else a PCIe server's single 200 Gb/s NIC."""
    if e.form_factor in ("sxm", "oam"):
        return REFERENCE_NETWORK_GBS.get(e.architecture, PCIE_SERVER_NETWORK_GBS)
    return PCIE_SERVER_NETWORK_GBS


def link_bandwidth(
    e: GpuEntry,
    count: int,
    gpus_per_node: int,
    network_gbs: float | None,
    p: CommParams,
    measured: tuple[float, str] | None = None,
) -> tuple[float, str]:
    """Per-direction bandwidth each GPU's ring gets, after efficiency, and what carries it.
    ``measured``: a bus bandwidth `gpuselect fleet` measured (efficiency included) replaces the spec."""
    if measured is not None:
        return measured
    bridged_pairs = e.form_factor in ("pcie", "desktop", "laptop")  # an NVLink bridge joins two cards, not eight
    if e.gpu_link_gbs and (not bridged_pairs or count <= 2):
        intra = e.gpu_link_gbs / 2 * p.efficiency
        name = f"GPU link {e.gpu_link_gbs:g} GB/s" + (" (a bridged pair)" if bridged_pairs else "")
        used = mesh_links(e, count, gpus_per_node)
        if used is not None and used < MESH_GPUS - 1:
            intra *= used / (MESH_GPUS - 1)
            name += f" ({used} of its {MESH_GPUS - 1} links)"
    else:
        gen = e.pcie_gen or 3
        intra = PCIE_PER_DIRECTION_GBS.get(gen, 16.0) * p.pcie_p2p_efficiency * p.efficiency
        name = f"PCIe {gen}.0"
        if not peer_to_peer(e):
            intra *= p.host_staged_factor
            name += " through host memory (no peer-to-peer)"
    if count > gpus_per_node:
        inter, net_name = network_bandwidth(e, network_gbs, p)
        if inter < intra:
            return inter, net_name
    return intra, name


def network_bandwidth(e: GpuEntry, network_gbs: float | None, p: CommParams) -> tuple[float, str]:
    """What a ring between nodes gets of the network (per GPU, per direction, after efficiency):
    ``network_gbs`` per node, or the card's reference node's, and what carries it."""
    net = reference_network_gbs(e) if network_gbs is None else network_gbs
    return net * p.efficiency, f"network {net:g} GB/s per node" + (
        " (the card's reference node)" if network_gbs is None else ""
    )


def ddp_allreduce(
    grad_bytes: float,
    backward_s: float,
    e: GpuEntry,
    count: int,
    gpus_per_node: int,
    network_gbs: float | None,
    p: CommParams = CommParams(),
    *,
    measured: tuple[float, str] | None = None,
    gather_bytes: float = 0.0,
    reduce_scatter: bool = False,
) -> CommTime:
    """DDP's gradient all-reduce, one per 25 MB bucket while the backward runs. ``gather_bytes``:
    ZeRO-1/2's all-gather of the updated parameters after the optimizer step, all of it exposed
    (the backward that could hide it is over). ``reduce_scatter``: ZeRO-1/2 (DeepSpeed's default
    ``reduce_scatter``) reduce each gradient only to the rank that owns its shard, a reduce-scatter:
    (N-1)/N of the bytes per GPU, half an all-reduce (ZeRO paper §7: 2Ψ with the gather, as DDP)."""
    if count <= 1:
        return CommTime(0.0, 0.0, "", 0.0)
    bw, name = link_bandwidth(e, count, gpus_per_node, network_gbs, p, measured)
    passes = 1 if reduce_scatter else 2  # ring passes over the buffer: reduce-scatter, then all-gather
    if p.latency_model == "per_step":
        steps = passes * (count - 1)
        total = passes * (count - 1) / count * grad_bytes / (bw * 1e9) + steps * p.latency_s
        last = passes * (count - 1) / count * min(grad_bytes, DDP_BUCKET_BYTES) / (bw * 1e9) + steps * p.latency_s
        gather = (count - 1) / count * gather_bytes / (bw * 1e9) + (count - 1) * p.latency_s if gather_bytes else 0.0
    else:
        kind = "reducescatter" if reduce_scatter else "allreduce"
        full, rest = divmod(grad_bytes, DDP_BUCKET_BYTES)
        total = full * collective_seconds(kind, DDP_BUCKET_BYTES, bw, e, count, gpus_per_node)
        if rest:
            total += collective_seconds(kind, rest, bw, e, count, gpus_per_node)
        last = collective_seconds(kind, min(grad_bytes, DDP_BUCKET_BYTES), bw, e, count, gpus_per_node)
        gather = 0.0
        if gather_bytes:
            k = math.ceil(gather_bytes / ZERO_GATHER_BUCKET_BYTES)
            gather = k * collective_seconds("allgather", gather_bytes / k, bw, e, count, gpus_per_node)
    return CommTime(total + gather, max(total - backward_s, last) + gather, name, bw)


def fsdp_traffic(
    param_bytes_16: float,
    grad_bytes: float,
    compute_s: float,
    e: GpuEntry,
    count: int,
    gpus_per_node: int,
    network_gbs: float | None,
    p: CommParams = CommParams(),
    *,
    reshard_after_forward: bool = True,
    measured: tuple[float, str] | None = None,
    layers: int = 0,
) -> CommTime:
    """ZeRO-3 / FSDP FULL_SHARD: all-gather the weights for the forward and again for the backward,
    reduce-scatter the gradients. ``layers``: the repeated blocks, each its own FSDP unit beside
    the root (embeddings, head): each unit gathers in the forward, again in the backward (the root
    stays gathered: FSDP does not reshard it after the forward), and reduce-scatters once."""
    if count <= 1:
        return CommTime(0.0, 0.0, "", 0.0)
    bw, name = link_bandwidth(e, count, gpus_per_node, network_gbs, p, measured)
    gathers = 2 if reshard_after_forward else 1
    moved = (count - 1) / count * (gathers * param_bytes_16 + grad_bytes)
    if p.latency_model == "per_step":
        total = moved / (bw * 1e9) + 3 * (count - 1) * p.latency_s
    else:
        units = layers + 1
        n_gather = units + (layers if reshard_after_forward else 0)
        # AG and RS are linear in their bytes: each collective's latency plus the traffic at the ring's rate.
        latency = collective_seconds("allgather", 0.0, bw, e, count, gpus_per_node)
        total = moved / (bw * 1e9) + (n_gather + units) * latency
    return CommTime(total, max(0.0, total - p.fsdp_overlap * compute_s), name, bw)
