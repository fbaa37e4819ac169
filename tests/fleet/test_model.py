"""The fleet's arithmetic (nccl-tests' bandwidth), stragglers, writers and the measured
interconnect the estimator uses — without torch or a launcher."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

from gpuselect.errors import DataError, UsageError
from gpuselect.fleet import writers
from gpuselect.fleet.interconnect import from_fleet_doc, measured_link_gbs
from gpuselect.fleet.model import (
    GIB,
    FleetReport,
    GpuFigures,
    RankInfo,
    bus_factor,
    elements_for,
    find_stragglers,
    point,
    sizes,
    summarise_nodes,
)
from gpuselect.output import to_jsonable


def test_bus_factors_are_nccl_tests() -> None:
    assert bus_factor("all_reduce", 2) == 1.0
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 4) == pytest.approx(0.75)
    assert bus_factor("reduce_scatter", 8) == pytest.approx(0.875)
    assert bus_factor("all_reduce", 1) == 0.0
    with pytest.raises(ValueError, match="unknown collective"):
        bus_factor("broadcast", 2)


def test_sizes_from_8_bytes_to_1_gib() -> None:
    full = sizes(GIB)
    assert full[0] == 8 and full[-1] == GIB and len(full) == 28
    assert all(b == 2 * a for a, b in pairwise(full))
    assert sizes(64) == [8, 16, 32, 64]
    assert sizes(100, factor=4) == [8, 32]
    with pytest.raises(ValueError, match="bad size range"):
        sizes(4)


def test_elements_split_n_ways() -> None:
    assert elements_for("all_reduce", 8, 4) == 2
    assert elements_for("all_gather", 8, 4) is None  # 2 floats cannot be split 4 ways
    assert elements_for("reduce_scatter", 64, 4) == 4
    assert elements_for("all_gather", 1 << 20, 3) == (1 << 20) // 4 // 3


def test_point_algbw_and_busbw() -> None:
    p = point("intra-node", "node0", "all_reduce", 4, 1_000_000_000, 0.01, 0.009, 0.02, 5, 2)
    assert p.algbw_gbs == pytest.approx(100.0)
    assert p.busbw_gbs == pytest.approx(150.0)  # 2 * 3 / 4
    assert p.time_us == pytest.approx(10_000.0)


def _rank(
    rank: int, node: str, *, worst: str = "ok", tflops: float | None = None, gpu: str = "NVIDIA H100 80GB HBM3"
) -> RankInfo:
    figs = GpuFigures(gpu, f"GPU-{rank}", None, 80 * GIB, 40, 100.0, 700.0, 1980, 1980, "gen5 x16 (max gen5 x16)")
    bench = None if tflops is None else {"matmul_tflops": {"bf16": tflops}, "memory_bandwidth_gbs": 3000.0}
    return RankInfo(
        rank,
        rank % 2,
        node,
        f"host-{node}",
        f"cuda:{rank % 2}",
        "2.13",
        "CPU",
        figs,
        2,
        worst,
        {"ok": 3, worst: 1} if worst != "ok" else {"ok": 4},
        [],
        bench,
    )


def _points(values: dict[str, float]) -> list:
    pts = []
    for node, busbw in values.items():
        for nbytes in (1 << 20, 1 << 26):
            scale = 1.0 if nbytes == 1 << 26 else 0.5
            t = nbytes / (busbw * scale * 1e9)  # 2 ranks: busbw == algbw for all-reduce
            pts.append(point("intra-node", node, "all_reduce", 2, nbytes, t, t, t, 5, 2))
    return pts


def test_a_node_more_than_10_percent_below_the_median_is_named() -> None:
    ranks = [_rank(i, f"node{i // 2}") for i in range(6)]
    nodes = summarise_nodes(ranks)
    found = find_stragglers(nodes, ranks, _points({"node0": 100.0, "node1": 95.0, "node2": 80.0}))
    assert [(s.what, round(s.below_median, 2)) for s in found] == [("node2", 0.16)]
    assert "busbw" in found[0].metric
    assert find_stragglers(nodes, ranks, _points({"node0": 100.0, "node1": 95.0, "node2": 91.0})) == []


def test_slow_gpu_and_slow_node_from_the_quick_benchmark() -> None:
    ranks = [_rank(i, f"node{i // 2}", tflops=t) for i, t in enumerate([700, 710, 690, 705, 500, 520])]
    found = find_stragglers(summarise_nodes(ranks), ranks, [])
    whats = {s.what for s in found if "bf16" in s.metric}
    assert whats == {"node2", "rank 4 (node2, cuda:0)", "rank 5 (node2, cuda:1)"}
    # Different GPU models are not compared with each other.
    mixed = [
        _rank(0, "node0", tflops=700),
        _rank(1, "node0", tflops=700),
        _rank(2, "node1", tflops=150, gpu="NVIDIA L4"),
    ]
    assert not [s for s in find_stragglers(summarise_nodes(mixed), mixed, []) if s.what.startswith("rank")]


def test_node_summary_keeps_the_worst_health() -> None:
    nodes = summarise_nodes(
        [_rank(0, "node0"), _rank(1, "node0", worst="critical"), _rank(2, "node1", worst="warning")]
    )
    assert [(n.name, n.ranks, n.health_worst) for n in nodes] == [
        ("node0", [0, 1], "critical"),
        ("node1", [2], "warning"),
    ]


def _report(points: list, complete: bool = True) -> FleetReport:
    ranks = [_rank(i, f"node{i // 2}", tflops=700.0) for i in range(4)]
    nodes = summarise_nodes(ranks)
    inter = [
        point("inter-node", "nodes", op, 2, n, n / 20e9, n / 21e9, n / 19e9, 5, 2)
        for op in ("all_reduce", "all_gather", "reduce_scatter")
        for n in (1 << 20, 1 << 26)
    ]
    pts = points + inter
    return FleetReport(
        "2026-11-23T00:00:00+00:00",
        "0.1",
        "nccl",
        4,
        "2.13",
        {"max_bytes": 1 << 26},
        nodes,
        ranks,
        pts,
        find_stragglers(nodes, ranks, pts),
        ["a note"],
        [] if complete else ["rank 0 failed during 'gather'"],
        complete,
        12.5,
    )


def test_writers_markdown_json_pdf(tmp_path) -> None:
    rep = _report(_points({"node0": 180.0, "node1": 120.0}))
    md = writers.to_markdown(rep)
    assert "| scope | group | op |" in md and "node1" in md and "Stragglers" in md
    assert "intra-node all-reduce busbw" in writers.verdict(rep)
    doc = json.loads(writers.to_json(rep))
    assert doc["kind"] == "fleet" and len(doc["report"]["ranks"]) == 4
    pdf = writers.write(rep, tmp_path / "fleet.pdf")
    from pypdf import PdfReader

    text = "".join(page.extract_text() for page in PdfReader(pdf).pages)
    assert "Bus bandwidth by buffer size" in text and "node1" in text
    assert "INCOMPLETE" in writers.verdict(_report([], complete=False))
    with pytest.raises(UsageError, match="must end in"):
        writers.format_of("fleet.txt")


def test_interconnect_from_a_fleet_report() -> None:
    rep = _report(_points({"node0": 180.0, "node1": 120.0}))
    m = from_fleet_doc(json.loads(writers.to_json(rep)), "fleet.json")
    assert m.intra_node_gbs == pytest.approx(150.0)  # median of the two nodes at the largest size
    assert m.inter_node_gbs == pytest.approx(20.0)
    assert m.at_bytes == 1 << 26 and m.nodes == 2
    assert measured_link_gbs(m, 1, 8) is None
    link, basis = measured_link_gbs(m, 4, 8)  # type: ignore[misc]
    assert link == pytest.approx(150.0) and "measured intra-node" in basis and "fleet.json" in basis
    link, basis = measured_link_gbs(m, 16, 8)  # type: ignore[misc]
    assert link == pytest.approx(20.0) and "inter-node" in basis  # min(150, 20): the network limits the ring
    with pytest.raises(DataError, match="not a `gpuselect fleet"):
        from_fleet_doc({"kind": "bench"}, "x.json")
    with pytest.raises(DataError, match="incomplete"):
        from_fleet_doc(json.loads(writers.to_json(_report(_points({"node0": 1.0}), complete=False))), "x.json")
    single = _report([])
    single.bandwidth = []
    with pytest.raises(DataError, match="no all-reduce"):
        from_fleet_doc({"kind": "fleet", "report": to_jsonable(single)}, "x.json")


def test_estimate_uses_the_measured_links_and_says_so() -> None:
    from gpuselect.catalog import load_catalog
    from gpuselect.estimate.api import Assumptions, estimate
    from gpuselect.estimate.perf import default_model
    from gpuselect.workloads.presets import PRESETS

    catalog = load_catalog(use_overlay=False)
    perf = default_model(catalog)
    w = PRESETS["vgg16"]
    slow = from_fleet_doc(json.loads(writers.to_json(_report(_points({"node0": 2.0, "node1": 2.0})))), "slow.json")
    ids = ["nvidia-a100-sxm4-80gb", "nvidia-h100-pcie-80gb"]  # one NVLink card, one PCIe card
    base = estimate(w, Assumptions(max_gpus=16), catalog, perf, gpu_ids=ids)
    meas = estimate(w, Assumptions(max_gpus=16, interconnect=slow), catalog, perf, gpu_ids=ids)
    b = {(r.gpu_id, r.count): r for r in base.rows if r.fits}
    m = {(r.gpu_id, r.count): r for r in meas.rows if r.fits}
    multi = [k for k in b if k[1] > 1 and k in m]
    assert multi and any(k[1] > 8 for k in multi)
    assert all(("inter-node" in (m[k].link_basis or "")) == (k[1] > 8) for k in multi)
    for k in multi:
        assert b[k].link_basis and b[k].link_basis.startswith("spec")
        assert m[k].link_basis and m[k].link_basis.startswith("measured")
        assert m[k].throughput_samples_per_s <= b[k].throughput_samples_per_s  # 2 GB/s is slower than any spec link
    singles = [k for k in b if k[1] == 1 and k in m]
    assert singles and all(
        b[k].throughput_samples_per_s == m[k].throughput_samples_per_s and m[k].link_basis is None for k in singles
    )


def test_a_saved_report_reads_back() -> None:
    from gpuselect.fleet.model import report_from_dict

    rep = _report(_points({"node0": 180.0, "node1": 120.0}))
    back = report_from_dict(json.loads(writers.to_json(rep))["report"])
    assert back == rep


def test_across_nodes_the_all_ranks_measurement_wins() -> None:
    rep = _report(_points({"node0": 180.0, "node1": 120.0}))
    rep.bandwidth += [point("all-ranks", "all", "all_reduce", 4, 1 << 26, (1 << 26) / 9e9 * 1.5, 0.1, 0.1, 5, 2)]
    m = from_fleet_doc(json.loads(writers.to_json(rep)), "fleet.json")
    assert m.all_ranks_gbs == pytest.approx(9.0) and m.all_ranks == 4
    link, basis = measured_link_gbs(m, 16, 8)  # type: ignore[misc]
    assert link == pytest.approx(9.0) and "all 4 ranks" in basis
    assert measured_link_gbs(m, 8, 8)[0] == pytest.approx(150.0)  # type: ignore[index]
    assert "all ranks 9.00 GB/s" in writers.verdict(rep)


def test_ranks_table_writes_rates_without_scientific_notation() -> None:
    # Seen on a lent H100: its fp8 rate printed as "1.22e+03 TFLOP/s".
    rep = _report(_points({"node0": 180.0, "node1": 120.0}))
    rep.ranks[0].bench = {"matmul_tflops": {"fp8": 1221.4, "fp32": 51.46}, "memory_bandwidth_gbs": 2947.7}
    md = writers.to_markdown(rep)
    assert "fp8 1,221 TFLOP/s, fp32 51.5 TFLOP/s; mem 2,948 GB/s" in md
    assert "e+0" not in md


@pytest.mark.parametrize("bad", [1e308, True, "fast", -5.0, float("nan")])
def test_a_bandwidth_no_network_has_is_refused(bad: object) -> None:
    doc = json.loads(writers.to_json(_report(_points({"node0": 180.0, "node1": 120.0}))))
    doc["report"]["bandwidth"][0]["busbw_gbs"] = bad
    with pytest.raises(DataError, match=r"bus bandwidth of .* outside 0 to 100,000"):
        from_fleet_doc(doc, "fleet.json")


@pytest.mark.parametrize("tiny", [1e-300, 0.0])
def test_a_used_figure_below_the_network_range_is_refused(tiny: float) -> None:
    # 1e-300 GB/s once gave a 300-digit time; only the largest buffer's figure is used, so only it is held to the range.
    doc = json.loads(writers.to_json(_report(_points({"node0": 180.0, "node1": 120.0}))))
    for p in doc["report"]["bandwidth"]:
        p["busbw_gbs"] = tiny
    with pytest.raises(DataError, match=r"at its largest buffer .* below 0\.01 GB/s"):
        from_fleet_doc(doc, "fleet.json")


def test_a_real_fleet_report_with_latency_bound_small_buffers_is_read() -> None:
    # Every real report was refused: its 8 B all-reduce runs at ~1e-4 GB/s, below the range.
    from pathlib import Path

    from gpuselect.fleet.interconnect import load_interconnect

    rec = Path(__file__).resolve().parents[2] / "docs/validation/cpu-vm-2026-11-23/fleet/gloo-2ranks-1node.json"
    doc = json.loads(rec.read_text())
    small = min(p["busbw_gbs"] for p in doc["report"]["bandwidth"] if p["op"] == "all_reduce")
    assert small < 0.01
    m = load_interconnect(str(rec))
    assert m.intra_node_gbs == pytest.approx(1.23692) and m.at_bytes == 16 << 20


def test_interconnect_files_are_read_bounded(tmp_path) -> None:
    from gpuselect.fleet.interconnect import load_interconnect

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage\xff")
    ok = tmp_path / "fleet.json"
    ok.write_text(writers.to_json(_report(_points({"node0": 180.0, "node1": 120.0}))))
    for path, why in ((deep, "nests too deeply"), (binary, "not text in UTF-8"), (tmp_path, "is a folder")):
        with pytest.raises(DataError, match=why):
            load_interconnect(str(path))
    with pytest.raises(DataError, match="not a regular file"):
        load_interconnect("/dev/zero")  # read unbounded, this filled the machine's memory
    assert load_interconnect(str(ok)).intra_node_gbs == pytest.approx(150.0)


def test_interconnect_file_with_an_escape_sequence_is_refused(tmp_path) -> None:
    # `estimate --interconnect` printed the report's backend as it was: "\u001b[2J" cleared the
    # terminal (`fleet --from` refused it already).
    from gpuselect.fleet.interconnect import load_interconnect

    doc = json.loads(writers.to_json(_report(_points({"node0": 180.0, "node1": 120.0}))))
    doc["report"]["backend"] = "\u001b[2Jnccl"
    bad = tmp_path / "fleet.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="control character"):
        load_interconnect(str(bad))


def test_too_few_gpus_for_the_ranks_names_one_gpu_in_the_singular() -> None:
    """ "torch sees 1 GPUs" where a node runs two ranks on one GPU."""
    pytest.importorskip("torch.distributed")
    from types import SimpleNamespace

    from gpuselect.fleet.run import FleetConfig, LaunchEnv, _run_distributed, _State

    one = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True, device_count=lambda: 1))
    with pytest.raises(UsageError, match=r"runs 2 ranks but torch sees 1 GPU: use --nproc-per-node"):
        _run_distributed(FleetConfig(backend="nccl"), LaunchEnv(1, 2, 1, 2, None, True), one, _State())
