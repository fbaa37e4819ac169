"""Prometheus: DCGM-exporter's names and labels for GPU readings (through the fake NVML),
gpuselect_* for health and benchmarks, parsed back with prometheus_client's own parser; the
exporter scraped over loopback, with a time bound and stale data served when collection hangs."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpuselect.cli import main
from gpuselect.hardware.snapshot import detect
from gpuselect.health.rules import evaluate
from gpuselect.metrics.exporter import CachedCollector, machine_collector, serve
from gpuselect.metrics.families import Family, bench_families, machine_families, render
from tests.fakes import fake_nvml as F


def _parse(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        out.setdefault(fam.name, []).extend(fam.samples)
    return out


def test_gpu_readings_under_dcgm_names_and_labels() -> None:
    fake = F.FakeNVML(
        [F.FakeGpu(), F.FakeGpu(uuid="GPU-2", bus_id="00000000:3C:00.0", temperature=55, memory_used=3 * F.GIB)]
    )
    snap = detect(probe=False, nvml=fake)
    m = _parse(render(machine_families(snap, evaluate(snap))))
    temps = m["DCGM_FI_DEV_GPU_TEMP"]
    assert sorted(s.value for s in temps) == [40, 55]
    labels = temps[0].labels
    assert {"gpu", "UUID", "device", "modelName", "Hostname"} <= set(labels)
    assert labels["modelName"] == "NVIDIA H100 80GB HBM3" and labels["device"] == "nvidia0"
    assert {s.labels["UUID"]: s.value for s in m["DCGM_FI_DEV_FB_USED"]} == {
        "GPU-11111111-2222-3333-4444-555555555555": 1024,
        "GPU-2": 3072,
    }
    assert m["DCGM_FI_DEV_POWER_USAGE"][0].value == pytest.approx(70.0)
    assert m["DCGM_FI_DEV_SM_CLOCK"][0].value == 1980
    assert m["DCGM_FI_DEV_COUNT"][0].value == 2
    assert sum(s.value for s in m["gpuselect_health_findings"]) == len(evaluate(snap).findings)


def test_health_format_prometheus_reports_findings_by_severity(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = F.thermal_throttling()
    monkeypatch.setattr("gpuselect.hardware.nvidia.import_pynvml", lambda: fake)
    code = main(["health", "--format", "prometheus", "--no-probe"])
    m = _parse(capsys.readouterr().out)
    assert code == 3
    by_sev = {s.labels["severity"]: s.value for s in m["gpuselect_health_findings"]}
    assert by_sev["critical"] >= 1
    assert m["gpuselect_health_worst_severity"][0].value == 4
    crit = [s for s in m["gpuselect_health_finding"] if s.labels["severity"] == "critical"]
    assert crit and crit[0].labels["rule"].startswith("gpu.")
    # a reading in a label (the title's "92 °C") made each degree a new series and a new alert
    assert all(set(s.labels) == {"rule", "device", "severity", "Hostname"} for s in m["gpuselect_health_finding"])


def test_bench_results_and_spec_ratio() -> None:
    devices = [
        {
            "device": "cuda:0",
            "name": "NVIDIA H100 80GB HBM3",
            "matmul_tflops": {"bf16": 600.5, "fp8": None},
            "memory_bandwidth_gbs": 2900.0,
            "spec_ratio": {"matmul_bf16": 0.61},
            "spec_name": "H100 SXM",
        }
    ]
    m = _parse(render(bench_families(devices, "h")))
    assert [(s.labels["precision"], s.value) for s in m["gpuselect_bench_matmul_tflops"]] == [("bf16", 600.5)]
    assert m["gpuselect_bench_spec_ratio"][0].labels["figure"] == "matmul_bf16"


def _get(port: int) -> tuple[str, float]:
    t0 = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return resp.read().decode(), time.monotonic() - t0


def test_exporter_answers_head_404s_other_paths_and_drops_idle_connections(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """HEAD (health probes) got 405, every path answered with the metrics, and a half-sent request
    held its thread forever."""
    import socket

    from gpuselect.metrics import exporter as X

    monkeypatch.setattr(X, "IDLE_TIMEOUT_S", 1.0)
    source = CachedCollector(machine_collector(nvml=F.healthy()), max_age_s=60, scrape_timeout_s=10)
    server = serve(source, 0)
    port = server.server_address[1]
    try:
        head = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", method="HEAD")
        with urllib.request.urlopen(head, timeout=10) as resp:  # noqa: S310 - http to loopback, built here
            assert resp.status == 200 and resp.read() == b""
            assert int(resp.headers["Content-Length"]) > 1000  # a GET's length, as HEAD should say
        for path in ("/nope", "/../../etc/passwd"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10)
            assert err.value.code == 404
        assert "DCGM_FI_DEV_GPU_TEMP" in _get(port)[0]
        sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        sock.sendall(b"GET /metr")  # half a request, then nothing
        t0 = time.monotonic()
        assert sock.recv(1024) == b""  # closed by the server once idle for its timeout
        assert time.monotonic() - t0 < 10
        sock.close()
        time.sleep(0.2)
        assert "Traceback" not in capfd.readouterr().err  # an idle client is no error to print
    finally:
        server.shutdown()


def test_exporter_scraped_over_loopback() -> None:
    source = CachedCollector(machine_collector(nvml=F.healthy()), max_age_s=60, scrape_timeout_s=10)
    server = serve(source, 0)
    try:
        assert server.server_address[0] == "127.0.0.1"  # loopback unless told otherwise
        text, _ = _get(server.server_address[1])
        m = _parse(text)
        assert m["DCGM_FI_DEV_GPU_TEMP"][0].value == 40
        assert m["gpuselect_exporter_collect_success"][0].value == 1
        assert "gpuselect_health_worst_severity" in m
    finally:
        server.shutdown()


def test_a_hung_collection_gets_last_good_data_within_the_time_bound() -> None:
    release = threading.Event()
    calls = {"n": 0}

    def collect() -> list[Family]:
        calls["n"] += 1
        if calls["n"] > 1:
            release.wait(30)  # NVML stuck on a sick GPU
        fam = Family("DCGM_FI_DEV_GPU_TEMP", "gauge", "t")
        fam.add({"gpu": "0"}, 40 + calls["n"])
        return [fam]

    source = CachedCollector(collect, max_age_s=0.0, scrape_timeout_s=0.3)
    server = serve(source, 0)
    try:
        first = _parse(_get(server.server_address[1])[0])
        assert first["DCGM_FI_DEV_GPU_TEMP"][0].value == 41
        time.sleep(0.05)
        text, took = _get(server.server_address[1])
        m = _parse(text)
        assert took < 3.0
        assert m["DCGM_FI_DEV_GPU_TEMP"][0].value == 41  # the last good data
        assert m["gpuselect_exporter_collect_success"][0].value == 0
        assert m["gpuselect_exporter_data_age_seconds"][0].value > 0
        assert m["gpuselect_exporter_scrape_timeouts"][0].value == 1
        # A third scrape does not start a second stuck collection.
        _get(server.server_address[1])
        assert calls["n"] == 2
    finally:
        release.set()
        server.shutdown()


def test_a_failing_collection_is_a_metric_not_an_error() -> None:
    def collect() -> list[Family]:
        raise RuntimeError("NVML exploded")

    m = _parse(render(CachedCollector(collect, scrape_timeout_s=2).families()))
    assert m["gpuselect_exporter_collect_success"][0].value == 0
    assert m["gpuselect_exporter_collect_failures"][0].value == 1
    assert "DCGM_FI_DEV_GPU_TEMP" not in m


def test_exporter_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["exporter", "--port", "70000"])
    assert exc.value.code == 2
    bad = tmp_path / "b.json"
    bad.write_text('{"kind": "estimate"}')
    assert main(["exporter", "--bench", str(bad)]) == 2
    assert "not a `gpuselect bench" in capsys.readouterr().err
    # The bounded, checked reader: these hung, filled memory or were internal errors.
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    binary = tmp_path / "bin.json"
    binary.write_bytes(os.urandom(2048))
    for path in (str(fifo), "/dev/zero", str(binary)):
        assert main(["exporter", "--bench", path, "--port", "0"]) == 2
        assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("devices", "report", "words"),
    [
        ([], None, "is empty: nothing was measured"),
        ([{"device": "tpu:0", "kind": "tpu"}], None, "which gpuselect does not benchmark"),
        ([{"device": "cpu", "name": "evil\u001b[2J"}], None, "must be plain text"),
        ([{"device": "cpu"}], "x", "its report entry must be a JSON object"),
        ([{"device": "cpu"}], {"schema_version": 99}, "this gpuselect reads 1"),
    ],
)
def test_a_bench_file_that_measured_nothing_usable_is_refused(
    tmp_path, capsys: pytest.CaptureFixture[str], devices: list[object], report: object, words: str
) -> None:  # type: ignore[no-untyped-def]
    doc: dict[str, object] = {"schema_version": 1, "kind": "bench", "devices": devices}
    if isinstance(report, dict) and "schema_version" in report:
        doc["schema_version"] = report["schema_version"]
    elif report is not None:
        doc["report"] = report
    p = tmp_path / "bench.json"
    p.write_text(json.dumps(doc))
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(p)]) == 2
    err = capsys.readouterr().err
    assert words in err and "internal error" not in err


def test_a_newer_bench_files_extra_keys_are_left_out(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    # "TypeError: TrainStep.__init__() got an unexpected keyword argument 'extra'", without the file's name.
    p = tmp_path / "bench.json"
    step = {"model": "simple_cnn", "batch_size": 16, "samples_per_s": 900.0, "step_ms": 17.8}
    step |= {"includes_host_to_device_copy": False, "extra": 1}
    dev = {
        "device": "cpu",
        "name": "this CPU",
        "kind": "cpu",
        "matmul_tflops": {"fp32": 0.5},
        "train_steps": [step],
        "extra": 2,
    }
    p.write_text(json.dumps({"schema_version": 1, "kind": "bench", "devices": [dev]}))
    assert main(["estimate", "--workload", "simple-cnn", "--bench", str(p), "--gpus", "nvidia-rtx-4090"]) == 0
    assert "not in the expected form" not in capsys.readouterr().err


def _info(collect) -> dict[str, dict[str, str]]:  # type: ignore[no-untyped-def]
    """gpuselect_gpu_info samples of one collection, by their gpu label (UUID where gpu repeats)."""
    m = _parse(render(collect()))
    return {f"{s.labels['gpu']}/{s.labels['UUID']}": s.labels for s in m["gpuselect_gpu_info"]}


@pytest.mark.parametrize(
    "lose",
    [
        pytest.param(lambda g: setattr(g, "lost", True), id="every-query-says-lost"),
        pytest.param(lambda g: setattr(g, "handle_error", F.GPU_IS_LOST), id="handle-says-lost"),
    ],
)
def test_a_lost_gpu_keeps_its_identity_labels_and_says_lost(lose) -> None:  # type: ignore[no-untyped-def]
    fake = F.FakeNVML([F.FakeGpu(), F.FakeGpu(uuid="GPU-2", bus_id="00000000:5E:00.0")])
    collect = machine_collector(nvml=fake)
    before = _info(collect)
    assert before["1/GPU-2"]["state"] == "ok"
    lose(fake.gpus[1])
    after = _info(collect)
    assert set(after) == set(before), "the lost GPU's series changed labels (a new series)"
    lost = after["1/GPU-2"]
    assert lost["state"] == "lost"
    assert {k: lost[k] for k in ("UUID", "modelName", "pci_bus_id", "device")} == {
        k: before["1/GPU-2"][k] for k in ("UUID", "modelName", "pci_bus_id", "device")
    }
    assert after["0/GPU-11111111-2222-3333-4444-555555555555"]["state"] == "ok"


def test_without_the_exporters_memory_a_lost_gpu_has_no_identity() -> None:
    """One-shot output (`gpuselect health --format prometheus`) has nothing to remember: as before."""
    snap = detect(probe=False, nvml=F.two_gpus_one_lost())
    m = _parse(render(machine_families(snap, evaluate(snap))))
    lost = [s.labels for s in m["gpuselect_gpu_info"] if s.labels["state"] == "lost"]
    assert len(lost) == 1 and lost[0]["UUID"] == "" and lost[0]["modelName"] == ""


def test_a_gpu_that_drops_out_of_nvml_stays_reported_as_lost_and_renumbering_does_not_relabel() -> None:
    """Three GPUs; the middle one falls off the bus and NVML lists two, the third now at index 1."""
    fake = F.FakeNVML(
        [
            F.FakeGpu(uuid="GPU-A", bus_id="00000000:3B:00.0"),
            F.FakeGpu(uuid="GPU-B", bus_id="00000000:5E:00.0"),
            F.FakeGpu(uuid="GPU-C", bus_id="00000000:86:00.0"),
        ]
    )
    collect = machine_collector(nvml=fake)
    assert {k: v["state"] for k, v in _info(collect).items()} == {"0/GPU-A": "ok", "1/GPU-B": "ok", "2/GPU-C": "ok"}
    del fake.gpus[1]
    after = _info(collect)
    assert {k: v["state"] for k, v in after.items()} == {"0/GPU-A": "ok", "1/GPU-C": "ok", "1/GPU-B": "lost"}
    assert after["1/GPU-B"]["pci_bus_id"] == "0000:5e:00.0" and after["1/GPU-C"]["pci_bus_id"] == "0000:86:00.0"
    # and the next GPU lost at index 1 (C) is C, not the remembered B
    fake.gpus[1].lost = True
    again = _info(collect)
    assert again["1/GPU-C"]["state"] == "lost" and again["1/GPU-B"]["state"] == "lost"


def test_exporter_serves_only_this_machines_devices_of_a_saved_benchmark(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    # Another machine's record (an H100 server's) was served under this host's name, as if
    # measured here; `estimate --bench` already left it out with a sentence.
    from gpuselect.commands.exporter import _load_bench
    from gpuselect.hardware.cpu import detect_cpu

    here = detect_cpu()
    cpu = {"device": "cpu", "name": here.model or "cpu", "kind": "cpu", "matmul_tflops": {"fp32": 0.1}}
    h100 = {"device": "cuda:0", "name": "NVIDIA H100 80GB HBM3", "kind": "cuda", "matmul_tflops": {"bf16": 700.0}}
    p = tmp_path / "bench.json"
    p.write_text(json.dumps({"schema_version": 1, "kind": "bench", "devices": [cpu, h100]}))
    served = _load_bench(str(p), nvml=F.rtx3090())
    assert [d["device"] for d in served] == ["cpu"]
    err = capsys.readouterr().err
    assert "NVIDIA H100 80GB HBM3 (cuda:0)" in err and "not used here" in err
    assert [d["device"] for d in _load_bench(str(p), nvml=F.h100x8())] == ["cpu", "cuda:0"]


def test_every_gpuselect_metric_is_documented() -> None:
    """docs/fleet.md lists the gpuselect_* families a dashboard queries (gpuselect_gpu_memory_total_bytes
    was served but named nowhere)."""
    from tests.conftest import REPO_ROOT

    snap = detect(probe=False, nvml=F.FakeNVML([F.FakeGpu()]))
    names = set(_parse(render(machine_families(snap, evaluate(snap)))))
    text = (REPO_ROOT / "docs" / "fleet.md").read_text(encoding="utf-8")
    assert sorted(n for n in names if n.startswith("gpuselect_") and f"`{n}" not in text) == []
