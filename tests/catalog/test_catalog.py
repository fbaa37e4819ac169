"""The catalog: shipped data, validation failures, overlay merging, name matching, CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from gpuselect.catalog import load_catalog
from gpuselect.catalog.loader import load_builtin, validate_file
from gpuselect.cli import main
from gpuselect.paths import catalog_dir

HERE = Path(__file__).parent
GIB = 1024**3

VALID = """
[[gpu]]
id = "test-card"
name = "Test Card 9000"
vendor = "NVIDIA"
family = "geforce"
architecture = "Ada Lovelace"
release_date = "2024-01-01"
form_factor = "desktop"
vram_gb = 16
memory_type = "GDDR6X"
memory_bus_bits = 256
memory_data_rate_gbps = 21.0
memory_bandwidth_gbs = 672.0
shader_cores = 8448
boost_clock_mhz = 2610
fp32_tflops = 44.1
fp16_tflops = 88.2
tdp_w = 285
sources = { core = "nvidia-geforce-specs" }
"""


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(use_overlay=False)


def test_shipped_catalog_is_large_valid_and_sourced(catalog) -> None:
    assert catalog.problems == []
    assert len(catalog.entries) >= 130
    families = {e.family for e in catalog.entries}
    assert families == {"geforce", "workstation", "datacenter", "radeon", "instinct"}
    ids = [e.id for e in catalog.entries]
    assert len(ids) == len(set(ids))
    for e in catalog.entries:
        assert e.sources.get("core"), e.id
        for key in e.sources.values():
            assert key.startswith("derived") or catalog.source_text(key) != key, (e.id, key)
        if any(e.tflops(p) for p in ("tf32", "fp16", "bf16", "fp8")):
            assert "tensor" in e.sources, e.id


def test_dense_not_sparse_spot_checks(catalog) -> None:
    # Vendor datasheets, dense figures (sparse ones are twice these).
    h100 = catalog.get("nvidia-h100-sxm5-80gb")
    assert (h100.bf16_tflops, h100.fp8_tflops, h100.tf32_tflops, h100.memory_bandwidth_gbs) == (
        989.4,
        1978.9,
        494.7,
        3350.0,
    )
    a100 = catalog.get("nvidia-a100-sxm4-80gb")
    assert (a100.bf16_tflops, a100.tf32_tflops, a100.memory_bandwidth_gbs) == (312.0, 156.0, 2039.0)
    assert catalog.get("nvidia-rtx-4090").fp16_tflops == pytest.approx(165.2, abs=0.2)  # FP32 accumulate, half of 330
    assert catalog.get("nvidia-rtx-3090").fp16_tflops == pytest.approx(71.2, abs=0.2)
    assert catalog.get("nvidia-v100-sxm2-16gb").fp16_tflops == pytest.approx(125, abs=0.5)
    assert catalog.get("nvidia-t4").fp16_tflops == pytest.approx(65, abs=0.5)
    assert catalog.get("amd-mi300x").fp16_tflops == 1307.4
    assert catalog.get("nvidia-gtx-1080").fp16_tflops is None  # no tensor cores: None, not 0
    for e in catalog.entries:
        if e.fp16_tflops:
            assert e.fp16_tflops <= 40 * e.fp32_tflops, e.id


def test_every_reference_gpu_matches(catalog) -> None:
    names = [
        ln.strip()
        for ln in (HERE / "reference_gpu_names.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert len(names) > 25
    missing = [n for n in names if catalog.match(n) is None]
    assert missing == []


@pytest.mark.parametrize(
    ("name", "memory_gib", "expected"),
    [
        ("NVIDIA GeForce RTX 3090", 24, "nvidia-rtx-3090"),
        ("Tesla V100-SXM2-32GB", 32, "nvidia-v100-sxm2-32gb"),
        ("Tesla V100-SXM2-16GB", 16, "nvidia-v100-sxm2-16gb"),
        ("NVIDIA A100-SXM4-80GB", 80, "nvidia-a100-sxm4-80gb"),
        ("NVIDIA A100-SXM4-40GB", 40, "nvidia-a100-sxm4-40gb"),
        ("NVIDIA H100 80GB HBM3", 79.6, "nvidia-h100-sxm5-80gb"),
        ("NVIDIA H100 PCIe", 79.6, "nvidia-h100-pcie-80gb"),
        ("NVIDIA H100 NVL", 93, "nvidia-h100-nvl-94gb"),
        ("AMD Instinct MI300X", 192, "amd-mi300x"),
        ("GeForce GT 740M", 2, "nvidia-gt-740m"),
        ("GeForce GTX 1080", 8, "nvidia-gtx-1080"),
        ("NVIDIA GeForce GTX 1080", None, "nvidia-gtx-1080"),
        ("NVIDIA GeForce RTX 3080", 9.8, "nvidia-rtx-3080"),
        ("NVIDIA GeForce RTX 3080", 11.8, "nvidia-rtx-3080-12gb"),
        ("NVIDIA GeForce RTX 4060 Ti", 15.6, "nvidia-rtx-4060-ti-16gb"),
        ("NVIDIA GeForce RTX 4060 Ti", 7.6, "nvidia-rtx-4060-ti-8gb"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", 16, "nvidia-rtx-4090-laptop"),
        ("NVIDIA GeForce RTX 4090", 24, "nvidia-rtx-4090"),
        ("NVIDIA GeForce RTX 2080 with Max-Q Design", 8, "nvidia-rtx-2080-max-q"),
        ("Tesla T4", 15, "nvidia-t4"),
        ("NVIDIA A10G", 22, "nvidia-a10g"),
        ("AMD Radeon RX 7900 XTX", 24, "amd-rx-7900-xtx"),
        ("Radeon RX 7900 XTX", None, "amd-rx-7900-xtx"),
        ("NVIDIA RTX 6000 Ada Generation", 48, "nvidia-rtx-6000-ada"),
        ("Quadro RTX 6000", 24, "nvidia-quadro-rtx-6000"),
        # what amdsmi's market_name says (libdrm amdgpu.ids): an owned MI250X server read "not in the catalog"
        ("AMD Instinct MI250X / MI250", 64, "amd-mi250x"),
        ("AMD Radeon PRO W7900 Dual Slot", 48, "amd-radeon-pro-w7900"),
    ],
)
def test_name_matching(catalog, name: str, memory_gib: float | None, expected: str) -> None:
    result = catalog.match(name, int(memory_gib * GIB) if memory_gib else None)
    assert result is not None and result.entry.id == expected, (name, result)


def test_unknown_cards_say_so(catalog) -> None:
    assert catalog.match("NVIDIA GeForce RTX 9990 Hyper") is None
    assert catalog.match("Matrox Millennium") is None


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (("vram_gb = 16", 'vram_gb = "sixteen"'), "vram_gb", "must be a number"),
        (("vram_gb = 16", "vram_gb = -4"), "vram_gb", "outside the plausible range"),
        (("tdp_w = 285", "tdp_w = 285000"), "tdp_w", "outside the plausible range"),
        (('family = "geforce"', 'family = "gaming"'), "family", "must be one of"),
        (("memory_bus_bits = 256", "memory_bus_bits = 256.5"), "memory_bus_bits", "whole number"),
        (("fp32_tflops = 44.1", "fp32_tflops = 88.2"), "fp32_tflops", "disagrees with shader_cores"),
        (
            ("memory_bandwidth_gbs = 672.0", "memory_bandwidth_gbs = 1000.0"),
            "memory_bandwidth_gbs",
            "disagrees with memory_bus_bits",
        ),
        (("fp16_tflops = 88.2", "fp16_tflops = 1800.0"), "fp16_tflops", "sparse"),
        (('release_date = "2024-01-01"', 'release_date = "last year"'), "release_date", "YYYY-MM"),
        (('name = "Test Card 9000"\n', 'name = "Test Card 9000"\ncolour = "green"\n'), "colour", "unknown field"),
        (('architecture = "Ada Lovelace"', 'architecture = "Zork"'), "architecture", "not one the estimator knows"),
        (
            ('name = "Test Card 9000"\n', 'name = "Test Card 9000"\ncloud_node_usd_per_hour = 3.5\n'),
            "cloud_node_provider",
            "go together",
        ),
        (('name = "Test Card 9000"\n', 'name = "Test Card 9000"\ncloud_gpus = 0\n'), "cloud_gpus", "plausible range"),
    ],
)
def test_validation_failures_name_file_entry_field(
    tmp_path: Path, change: tuple[str, str], field: str, words: str
) -> None:
    assert validate_file(_write(tmp_path, "ok.toml", VALID)) == []
    path = _write(tmp_path, "bad.toml", VALID.replace(*change))
    folder = tmp_path / "cat"
    folder.mkdir()
    (folder / "bad.toml").write_text(path.read_text())
    result = load_builtin(folder)
    assert result.entries == []
    (problem,) = [p for p in result.problems if p.field == field]
    assert problem.file == "bad.toml" and problem.entry == "test-card" and words in problem.message
    assert "bad.toml" in str(problem) and "'test-card'" in str(problem) and f"'{field}'" in str(problem)


def test_missing_field_duplicate_id_and_malformed_toml(tmp_path: Path) -> None:
    folder = tmp_path / "cat"
    folder.mkdir()
    (folder / "a.toml").write_text(VALID)
    (folder / "b.toml").write_text(VALID)  # same id again
    (folder / "c.toml").write_text(VALID.replace("tdp_w = 285\n", "").replace("test-card", "other-card"))
    (folder / "d.toml").write_text("[[gpu]\nid = ")
    result = load_builtin(folder)
    assert [e.id for e in result.entries] == ["test-card"]  # one good file still loads
    msgs = [str(p) for p in result.problems]
    assert any("b.toml" in m and "duplicate id" in m for m in msgs)
    assert any("c.toml" in m and "'tdp_w'" in m and "required" in m for m in msgs)
    assert any("d.toml" in m and "not valid TOML" in m for m in msgs)


def test_overlay_overrides_adds_and_never_rewrites(tmp_path: Path) -> None:
    overlay = _write(
        tmp_path,
        "catalog_overlay.toml",
        """
[[gpu]]
id = "nvidia-rtx-4090"
street_price_usd = 1750.0
street_price_date = "2026-11"
"""
        + VALID,
    )
    before = overlay.read_bytes()
    cat = load_catalog(overlay=overlay)
    assert cat.problems == []
    e = cat.get("nvidia-rtx-4090")
    assert e.street_price_usd == 1750.0 and e.fp16_tflops == pytest.approx(165.2, abs=0.2)
    assert "overlay" in e.sources["street_price_usd"]
    assert cat.get("test-card") is not None and cat.match("Test Card 9000").entry.id == "test-card"
    assert overlay.read_bytes() == before


def test_bad_overlay_is_reported_and_builtin_still_loads(tmp_path: Path) -> None:
    overlay = _write(
        tmp_path,
        "catalog_overlay.toml",
        '[[gpu]]\nid = "nvidia-rtx-4090"\nvram_gb = "lots"\n\n[[gpu]]\nid = "no-such-card"\ntdp_w = 100\n',
    )
    cat = load_catalog(overlay=overlay)
    assert len(cat.entries) >= 130
    assert cat.get("nvidia-rtx-4090").vram_gb == 24
    assert any("catalog_overlay.toml" in p and "vram_gb" in p for p in cat.problems)
    assert any("no-such-card" in p for p in cat.problems)
    broken = _write(tmp_path, "broken.toml", "this is = = not toml")
    assert len(load_catalog(overlay=broken).entries) >= 130


def test_overlay_that_breaks_a_cross_check_is_refused(tmp_path: Path) -> None:
    overlay = _write(tmp_path, "o.toml", '[[gpu]]\nid = "nvidia-rtx-4090"\nfp32_tflops = 10.0\n')
    cat = load_catalog(overlay=overlay)
    assert cat.get("nvidia-rtx-4090").fp32_tflops == pytest.approx(82.6, abs=0.1)
    assert any("fp32_tflops" in p for p in cat.problems)


def test_cli_json_csv_text_family(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--format", "json", "--no-overlay"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "catalog" and doc["count"] >= 130
    first = doc["entries"][0]
    for key in (
        "id",
        "name",
        "vendor",
        "family",
        "architecture",
        "vram_gb",
        "memory_bandwidth_gbs",
        "fp32_tflops",
        "tf32_tflops",
        "fp16_tflops",
        "bf16_tflops",
        "fp8_tflops",
        "tdp_w",
        "sources",
        "launch_price_usd",
    ):
        assert key in first
    assert main(["catalog", "--family", "instinct", "--format", "csv", "--no-overlay"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and {r["family"] for r in rows} == {"instinct"}
    assert main(["catalog", "--family", "datacenter", "--no-overlay"]) == 0
    out = capsys.readouterr().out
    assert "H100 SXM5 80GB" in out and "RTX 4090" not in out


def test_a_listing_of_one_card_says_1_gpu(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A family of one card (an overlay's) was counted "1 GPUs."."""
    import gpuselect.catalog as C

    one = load_catalog(use_overlay=False)
    one.entries = one.by_family("instinct")[:1]
    monkeypatch.setattr(C, "load_catalog", lambda **_: one)
    assert main(["catalog", "--no-overlay"]) == 0
    assert "\n1 GPU. TFLOPS are dense" in capsys.readouterr().out


def test_cli_validate_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--validate", str(_write(tmp_path, "ok.toml", VALID))]) == 0
    assert (
        main(["catalog", "--validate", str(_write(tmp_path, "bad.toml", VALID.replace("vram_gb = 16", "vram_gb = 0")))])
        == 2
    )
    err = capsys.readouterr().err
    assert "bad.toml" in err and "vram_gb" in err
    assert main(["catalog", "--validate", str(tmp_path / "missing.toml")]) == 2


def test_cli_validate_as_json_is_one_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--validate FILE --format json` printed "FILE: valid" (text) on stdout, the problems as text."""
    bad = _write(tmp_path, "bad.toml", VALID.replace("vram_gb = 16", "vram_gb = 0"))
    assert main(["catalog", "--validate", str(bad), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["kind"] == "catalog_validation" and doc["valid"] is False
    assert [p["field"] for p in doc["problems"]] == ["vram_gb"] and "1 problem" in err
    assert main(["catalog", "--validate", str(_write(tmp_path, "ok.toml", VALID)), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) | {"file": ""} == {
        "schema_version": 1,
        "kind": "catalog_validation",
        "file": "",
        "valid": True,
        "problems": [],
    }
    assert main(["catalog", "--validate", str(bad), "--format", "csv"]) == 2
    assert "not csv" in capsys.readouterr().err


def test_one_gpu_as_csv_is_csv(capsys: pytest.CaptureFixture[str]) -> None:
    """`catalog "RTX 4090" --format csv` printed the text listing."""
    assert main(["catalog", "nvidia-rtx-4090", "--no-overlay", "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert row["id"] == "nvidia-rtx-4090" and float(row["vram_gb"]) == 24


def test_builtin_files_each_parse_alone() -> None:
    for path in catalog_dir().glob("*.toml"):
        if path.name != "sources.toml":
            assert validate_file(path) == [], path.name


def test_overlay_architecture_is_one_the_estimator_knows(tmp_path: Path) -> None:
    # An unknown name ran the card in fp32 at another architecture's rates, without a word.
    zork = _write(tmp_path, "z.toml", '[[gpu]]\nid = "nvidia-h100-sxm5-80gb"\narchitecture = "Zork"\n')
    cat = load_catalog(overlay=zork)
    assert cat.get("nvidia-h100-sxm5-80gb").architecture == "Hopper"
    assert any("architecture" in p and "not one the estimator knows" in p for p in cat.problems)
    lower = _write(tmp_path, "h.toml", '[[gpu]]\nid = "nvidia-h100-sxm5-80gb"\narchitecture = "hopper"\n')
    cat = load_catalog(overlay=lower)
    assert cat.problems == [] and cat.get("nvidia-h100-sxm5-80gb").architecture == "Hopper"


def test_an_empty_catalog_file_is_not_valid(tmp_path: Path) -> None:
    assert [p.message for p in validate_file(_write(tmp_path, "empty.toml", ""))] == ["holds no [[gpu]] entries"]
    assert [p.message for p in validate_file(_write(tmp_path, "c.toml", "# only a comment\n"))] == [
        "holds no [[gpu]] entries"
    ]
    assert validate_file(_write(tmp_path, "ok.toml", VALID)) == []


def test_catalog_shows_one_gpu_with_its_sources(capsys: pytest.CaptureFixture[str]) -> None:
    # `catalog --show X` was "unrecognized arguments": there was no way to see one card.
    from gpuselect.cli import main

    assert main(["catalog", "nvidia-rtx-4090", "--no-overlay"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GeForce RTX 4090 (nvidia-rtx-4090)") and "memory_bandwidth_gbs       1008.0" in out
    assert "Sources:\n  core: " in out and "tensor: NVIDIA Ada GPU Architecture whitepaper" in out
    assert main(["catalog", "GeForce RTX 4090", "--format", "json", "--no-overlay"]) == 0
    assert json.loads(capsys.readouterr().out)["entry"]["id"] == "nvidia-rtx-4090"
    assert main(["catalog", "no such card"]) == 2
    assert "no GPU in the catalog matches" in capsys.readouterr().err
    # "H100" silently showed the SXM5 card; an ambiguous name lists its matches, a near miss gets a guess
    assert main(["catalog", "H100", "--no-overlay"]) == 2
    err = capsys.readouterr().err
    assert "3 GPUs match 'H100'" in err and "nvidia-h100-pcie-80gb" in err and "nvidia-h100-nvl-94gb" in err
    assert main(["catalog", "RTX 4090", "--no-overlay"]) == 0  # the desktop card, not also the laptop namesake
    assert capsys.readouterr().out.startswith("GeForce RTX 4090 (nvidia-rtx-4090)")
    assert main(["catalog", "rtx a6001"]) == 2 and "did you mean rtx a6000" in capsys.readouterr().err
    assert main(["catalog", "mi300", "--no-overlay"]) == 0  # a part of one card's name
    assert capsys.readouterr().out.startswith("Instinct MI300X (amd-mi300x)")
    assert main(["catalog", "--no-overlay"]) == 0
    head = capsys.readouterr().out.splitlines()[:2]
    assert "VRAM" in head[0] and "GB" in head[1] and "TFLOPS" in head[1]  # the units under the columns


def test_an_overlay_s_own_cloud_offer_drops_the_built_in_offer_s_size(tmp_path: Path) -> None:
    """An overlay that set only its own provider and rate kept the built-in "1-GPU offer", and its
    4x L40S lost their rental price."""
    from gpuselect.estimate import api as A

    overlay = _write(
        tmp_path,
        "catalog_overlay.toml",
        '[[gpu]]\nid = "nvidia-l40s"\ncloud_provider = "mycloud"\ncloud_usd_per_hour = 0.70\n',
    )
    cat = load_catalog(overlay=overlay)
    assert cat.problems == []
    e = cat.get("nvidia-l40s")
    assert e.cloud_gpus is None and e.cloud_offer_gpus is None and e.cloud_price_date is None
    assert A.cloud_rate(e, 4) == (0.70, "mycloud", None, True)


def test_validate_checks_an_overlay_as_loading_merges_it(tmp_path: Path) -> None:
    # Both said "valid" under `catalog --validate`; loading then dropped the first (visible above
    # the card's 80 GB) or let the second table of one id silently replace the first.
    over = _write(tmp_path, "o.toml", '[[gpu]]\nid = "nvidia-h100-sxm5-80gb"\nvisible_vram_gb = 90.0\n')
    assert [p.field for p in validate_file(over)] == ["visible_vram_gb"]
    assert any("visible_vram_gb" in p for p in load_catalog(overlay=over).problems)
    price = '[[gpu]]\nid = "nvidia-h100-sxm5-80gb"\ncloud_usd_per_hour = {}\ncloud_provider = "me"\ncloud_price_date = "2026-01"\n'
    twice = _write(tmp_path, "t.toml", price.format(1.0) + "\n" + price.format(9.0))
    problems = validate_file(twice)
    assert len(problems) == 1 and "twice" in problems[0].message and "#1 and #2" in problems[0].message
    cat = load_catalog(overlay=twice)
    assert cat.get("nvidia-h100-sxm5-80gb").cloud_usd_per_hour == 1.0  # type: ignore[union-attr]
    assert any("twice" in p for p in cat.problems)
