"""Health rules at their thresholds, over snapshots built from the fake NVML scenarios."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuselect.hardware.snapshot import detect
from gpuselect.hardware.types import BackendStatus, FrameworkInfo, Snapshot
from gpuselect.health import thresholds as T
from gpuselect.health.model import Severity
from gpuselect.health.rules import EXIT_CRITICAL, EXIT_FINE, EXIT_WARNINGS, evaluate
from tests.fakes import fake_nvml as F

GIB = 1024**3


def snap(fake: F.FakeNVML, **changes: object) -> Snapshot:
    """A snapshot of the fake GPUs; this machine's own frameworks are left out (tests add them)."""
    s = dataclasses.replace(detect(nvml=fake, probe=False), torch=None, frameworks=[])
    return dataclasses.replace(s, **changes) if changes else s


def by_id(report, rule_id: str):
    return [f for f in report.findings if f.id == rule_id]


def one(report, rule_id: str):
    found = by_id(report, rule_id)
    assert len(found) == 1, f"{rule_id}: {report.findings}"
    return found[0]


def test_healthy_card_all_fine() -> None:
    s = snap(F.healthy())
    s.memory.total_bytes = 256 * GIB  # this test machine's own RAM must not decide the result
    r = evaluate(s)
    assert r.exit_code == EXIT_FINE
    assert one(r, "gpu.temperature").severity is Severity.OK
    assert one(r, "gpu.clock_events").severity is Severity.OK
    for f in r.findings:
        assert f.severity in (Severity.OK, Severity.INFO), f


def _partly_failing() -> list[F.FakeNVML]:
    """NVML up but failing part-way: the GPU count, one GPU's handle (a permission a job's cgroup
    denies, an unknown error), a framework that fails to import."""
    count = F.healthy()
    count.nvmlDeviceGetCount = lambda: F._raise(999)  # type: ignore[method-assign]
    denied, broken = F.a100x2_ecc(), F.a100x2_ecc()
    denied.gpus[0].handle_error = F._real.NVML_ERROR_NO_PERMISSION
    broken.gpus[0].handle_error = F._real.NVML_ERROR_UNKNOWN
    return [count, denied, broken]


def test_every_finding_has_the_required_fields() -> None:
    # A warning or critical finding without what was measured, the threshold and what to do
    # ("NVML works only partly", "GPU could not be opened", a framework failing to start) left a
    # user with a bare title (review of session 15).
    failing_fw = FrameworkInfo("torch", True, "2.5.0", probed=True, probe_error="ImportError: libcudart")
    snaps = [snap(make()) for make in F.SCENARIOS.values()]
    snaps += [snap(fake) for fake in _partly_failing()]
    snaps.append(snap(F.healthy(), frameworks=[failing_fw]))
    snaps.append(snap(F.healthy(), amd=BackendStatus("amdsmi", True, error="cannot list GPUs: DRM error")))
    for s in snaps:
        for f in evaluate(s).findings:
            assert f.id and f.title and f.detail is not None and f.device
            if f.severity in (Severity.WARNING, Severity.CRITICAL):
                assert f.remedy, f"{f.id} has no remedy"
                assert f.value is not None and f.threshold is not None, f.id


def test_thermal_throttling_is_critical() -> None:
    r = evaluate(snap(F.thermal_throttling()))
    assert one(r, "gpu.temperature").severity is Severity.CRITICAL  # 90 >= slowdown 89
    assert one(r, "gpu.clock_events.hw_thermal_slowdown").severity is Severity.CRITICAL
    assert one(r, "gpu.clock_events.sw_thermal_slowdown").severity is Severity.WARNING
    assert r.exit_code == EXIT_CRITICAL


@settings(max_examples=60, deadline=None)
@given(temp=st.integers(min_value=20, max_value=110))
def test_temperature_bands_follow_the_cards_thresholds(temp: int) -> None:
    fake = F.FakeNVML([F.FakeGpu(temperature=temp)])  # slowdown 89 °C
    f = one(evaluate(snap(fake)), "gpu.temperature")
    slowdown = 89
    if temp >= slowdown:
        assert f.severity is Severity.CRITICAL
    elif temp >= slowdown - T.TEMP_WARN_MARGIN_BELOW_SLOWDOWN_C:
        assert f.severity is Severity.WARNING
    else:
        assert f.severity is Severity.OK
    assert f.value == temp


@pytest.mark.parametrize(
    ("margin", "expected"), [(-2, Severity.CRITICAL), (-1, Severity.WARNING), (8, Severity.WARNING), (9, Severity.OK)]
)
def test_temperature_judged_by_margins_when_only_relative_readings(margin: int, expected: Severity) -> None:
    # slowdown trips at margin -2: headroom = margin - (-2); critical at 0, warning within 10 °C
    fake = F.FakeNVML([F.FakeGpu(thresholds={}, margin=margin)])
    f = one(evaluate(snap(fake)), "gpu.temperature")
    assert f.severity is expected and f.value == margin + 2


def test_temperature_without_card_thresholds_uses_generic_limits() -> None:
    fake = F.FakeNVML([F.FakeGpu(temperature=84, thresholds={}, field_thresholds=None)])
    f = one(evaluate(snap(fake)), "gpu.temperature")
    assert f.severity is Severity.WARNING and f.threshold == T.TEMP_FALLBACK.warning
    assert "generic" in (f.source or "")


def test_pcie_judged_only_under_load() -> None:
    loaded = one(evaluate(snap(F.degraded_pcie_under_load())), "gpu.pcie_link")
    assert loaded.severity is Severity.WARNING and loaded.value == "Gen3 x8" and loaded.threshold == "Gen5 x16"
    idle = one(evaluate(snap(F.idle_pcie_downtrained())), "gpu.pcie_link")
    assert idle.severity is Severity.INFO


@pytest.mark.parametrize(
    ("util", "expected"),
    [(T.PCIE_LOAD_UTILIZATION_PERCENT - 1, Severity.INFO), (T.PCIE_LOAD_UTILIZATION_PERCENT, Severity.WARNING)],
)
def test_pcie_load_edge(util: int, expected: Severity) -> None:
    fake = F.FakeNVML([F.FakeGpu(pcie_gen=4, util=(util, 0))])
    assert one(evaluate(snap(fake)), "gpu.pcie_link").severity is expected


def test_slot_limits_gpu_generation() -> None:
    fake = F.FakeNVML([F.FakeGpu(pcie_gen=4, pcie_max_gen=4, gpu_max_gen=5)])
    assert one(evaluate(snap(fake)), "gpu.pcie_slot").severity is Severity.INFO


def test_power_capped() -> None:
    r = evaluate(snap(F.power_capped()))
    f = one(r, "gpu.power_limit")
    assert f.severity is Severity.WARNING and f.value == 450.0
    assert one(r, "gpu.clock_events.sw_power_cap").severity is Severity.WARNING  # under load
    assert r.exit_code == EXIT_WARNINGS


@pytest.mark.parametrize(("limit_w", "expected"), [(665, Severity.OK), (664, Severity.WARNING)])
def test_power_limit_edge(limit_w: int, expected: Severity) -> None:
    # default 700 W; 5 % below is 665 W
    fake = F.FakeNVML([F.FakeGpu(enforced_limit_mw=limit_w * 1000)])
    assert one(evaluate(snap(fake)), "gpu.power_limit").severity is expected


def test_power_cap_at_idle_is_only_info() -> None:
    fake = F.FakeNVML([F.FakeGpu(event_reasons=0x4, util=(3, 0))])
    assert one(evaluate(snap(fake)), "gpu.clock_events.sw_power_cap").severity is Severity.INFO


def test_ecc_and_retired_pages() -> None:
    r = evaluate(snap(F.ecc_and_retired_pages()))
    assert one(r, "gpu.ecc").severity is Severity.CRITICAL
    pages = one(r, "gpu.retired_pages")
    assert pages.severity is Severity.CRITICAL and pages.value == 70
    assert one(r, "gpu.retired_pages_pending").severity is Severity.WARNING


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=0, max_value=100))
def test_retired_pages_bands(n: int) -> None:
    fake = F.FakeNVML([F.FakeGpu(retired={0: list(range(n)), 1: []}, remapped=None)])
    f = one(evaluate(snap(fake)), "gpu.retired_pages")
    expected = Severity.CRITICAL if n >= 63 else Severity.WARNING if n >= 15 else Severity.OK
    assert f.severity is expected


def test_lifetime_only_uncorrectable_errors_warn() -> None:
    fake = F.FakeNVML([F.FakeGpu(ecc_counts={(1, 1): 3})])
    assert one(evaluate(snap(fake)), "gpu.ecc").severity is Severity.WARNING


def test_remap_failure_and_pending() -> None:
    assert one(evaluate(snap(F.remap_failure())), "gpu.row_remap").severity is Severity.CRITICAL
    pending = F.FakeNVML([F.FakeGpu(remapped=(0, 1, 1, 0))])
    assert one(evaluate(snap(pending)), "gpu.row_remap").severity is Severity.WARNING


def test_memory_held_by_others() -> None:
    f = one(evaluate(snap(F.memory_held_by_others())), "gpu.memory_held_by_others")
    assert f.severity is Severity.WARNING  # 29 of 80 GiB
    assert "4242" in f.detail


def test_a_gpu_mostly_held_by_another_job_is_a_warning_about_availability() -> None:
    report = evaluate(snap(F.h100x8()))
    gpu3 = [f for f in report.findings if f.id == "gpu.memory_held_by_others" and f.device.startswith("gpu3")]
    assert len(gpu3) == 1
    f = gpu3[0]
    assert f.severity is Severity.WARNING and f.value == 0.74  # 59.2 of 80 GiB: busy, not broken
    assert "another job" in f.title and "not faulty" in f.detail
    assert not [f for f in report.findings if f.id == "gpu.memory_held_by_others" and f.severity is Severity.CRITICAL]


@pytest.mark.parametrize(
    ("held_gib", "severity", "title", "detail", "value"),
    [
        (
            29,
            Severity.WARNING,
            "in use by another job: 29.0 GiB of VRAM (36 %) held by other processes",
            "held by: proc4242 (pid 4242, 29.0 GiB). The GPU is busy, not faulty.",
            0.362,
        ),
        (2, Severity.INFO, "1 other process(es) use this GPU", "held by: proc4242 (pid 4242, 2.0 GiB)", 0.025),
        (0, Severity.OK, "no other process holds GPU memory", "the GPU is free", 0.0),
    ],
)
def test_memory_held_by_others_keeps_one_shape_at_every_severity(
    held_gib: int, severity: Severity, title: str, detail: str, value: float
) -> None:
    """The warning, the note and the all-clear are one finding judged against one threshold (its
    shape is written once since; every field as before)."""
    processes = [(4242, held_gib * GIB)] if held_gib else []
    f = one(
        evaluate(snap(F.FakeNVML([F.FakeGpu(memory_used=(held_gib + 1) * GIB, processes=processes)]))),
        "gpu.memory_held_by_others",
    )
    assert (f.severity, f.device, f.title, f.detail, f.value) == (
        severity,
        "gpu0 (NVIDIA H100 80GB HBM3)",
        title,
        detail,
        value,
    )
    assert (f.threshold, f.unit, f.source) == (T.FOREIGN_MEMORY.warning, "fraction of VRAM", T.FOREIGN_MEMORY.source)
    assert (f.remedy is not None) is (severity is Severity.WARNING)


def test_own_process_does_not_count_as_others() -> None:
    import os

    fake = F.FakeNVML([F.FakeGpu(processes=[(os.getpid(), 60 * GIB)])])
    assert one(evaluate(snap(fake)), "gpu.memory_held_by_others").severity is Severity.OK


def test_lost_gpu_is_critical_and_the_other_is_checked() -> None:
    r = evaluate(snap(F.two_gpus_one_lost()))
    assert one(r, "gpu.lost").severity is Severity.CRITICAL
    assert one(r, "gpu.temperature").device.startswith("gpu0")


def test_everything_unsupported_is_unknown_not_fine_or_crash() -> None:
    r = evaluate(snap(F.everything_unsupported()))
    assert one(r, "gpu.temperature").severity is Severity.UNKNOWN
    assert r.exit_code == EXIT_FINE


def test_no_gpu_is_info() -> None:
    r = evaluate(snap(F.FakeNVML(init_error=F.INIT_FAILURES["library_not_found"])))
    f = one(r, "system.no_gpu")
    assert f.severity is Severity.INFO and r.exit_code == EXIT_FINE


def test_driver_mismatch_is_critical() -> None:
    r = evaluate(snap(F.FakeNVML(init_error=F.INIT_FAILURES["lib_rm_version_mismatch"])))
    assert one(r, "nvml.driver_mismatch").severity is Severity.CRITICAL
    assert r.exit_code == EXIT_CRITICAL


@pytest.mark.parametrize(
    ("ratio", "expected"), [(0.9, Severity.WARNING), (1.0, Severity.INFO), (1.99, Severity.INFO), (2.0, Severity.OK)]
)
def test_ram_versus_vram(ratio: float, expected: Severity) -> None:
    s = snap(F.healthy())
    s.memory.total_bytes = int(80 * GIB * ratio)
    assert one(evaluate(s), "system.ram_vs_vram").severity is expected


def _with_torch(fake: F.FakeNVML, **fw: object) -> Snapshot:
    s = snap(fake)
    torch = FrameworkInfo(name="torch", installed=True, version="2.5.0", **fw)  # type: ignore[arg-type]
    return dataclasses.replace(s, torch=torch, frameworks=[torch])


def test_framework_built_for_newer_cuda_major_than_driver() -> None:
    s = _with_torch(F.old_driver(), built_cuda="12.4", cpu_only_build=False)  # driver: CUDA 11.4
    f = one(evaluate(s), "framework.torch.cuda_too_new")
    assert f.severity is Severity.CRITICAL and f.value == "12.4" and f.threshold == "11.4"


def test_framework_newer_minor_is_info() -> None:
    s = _with_torch(F.healthy(), built_cuda="12.6", cpu_only_build=False)  # driver: CUDA 12.4
    assert one(evaluate(s), "framework.torch.cuda_minor_newer").severity is Severity.INFO


def test_cpu_only_framework_on_gpu_machine() -> None:
    s = _with_torch(F.healthy(), cpu_only_build=True)
    assert one(evaluate(s), "framework.torch.cpu_only").severity is Severity.WARNING


def test_gpu_present_but_framework_blind() -> None:
    s = _with_torch(F.healthy(), built_cuda="12.4", cpu_only_build=False, probed=True, sees_gpu=False)
    assert one(evaluate(s), "framework.torch.no_gpu").severity is Severity.CRITICAL


def test_findings_sorted_worst_first() -> None:
    r = evaluate(snap(F.thermal_throttling()))
    ranks = [f.severity.rank for f in r.findings]
    assert ranks == sorted(ranks, reverse=True)


def test_text_writes_readings_and_thresholds_as_people_do() -> None:
    # Seen on a lent H100: "measured: 41 °C; threshold: 79.0 °C".
    from gpuselect.health.model import Finding
    from gpuselect.health.rules import HealthReport
    from gpuselect.health.text import format_health

    f = Finding("gpu.temperature", Severity.OK, "gpu0", "temperature", "detail", value=41, threshold=79.0, unit="°C")
    text = format_health(HealthReport([f]), verbose=True)
    assert "measured: 41 °C; threshold: 79 °C" in text


@pytest.mark.parametrize(
    "code",
    [
        F._real.NVML_ERROR_GPU_IS_LOST,
        F._real.NVML_ERROR_UNKNOWN,
        F._real.NVML_ERROR_RESET_REQUIRED,
        F._real.NVML_ERROR_TIMEOUT,
        F._real.NVML_ERROR_INSUFFICIENT_POWER,
    ],
)
def test_nvml_failing_to_start_for_a_gpu_in_trouble_is_critical_not_no_gpu(code: int) -> None:
    """A GPU fallen off the bus read "no GPU found", "No problems found", exit 0."""
    r = evaluate(snap(F.FakeNVML(init_error=code)))
    f = one(r, "nvml.init_failed")
    assert f.severity is Severity.CRITICAL and f.remedy and r.exit_code == EXIT_CRITICAL
    assert not by_id(r, "system.no_gpu")


def test_a_cpu_only_torch_is_one_warning_not_also_critical() -> None:
    """The same cause twice, once critical: every healthy node with a CPU-only torch exited 3."""
    s = _with_torch(F.healthy(), cpu_only_build=True, probed=True, sees_gpu=False)
    s.memory.total_bytes = 256 * GIB
    r = evaluate(s)
    assert one(r, "framework.torch.cpu_only").severity is Severity.WARNING
    assert not by_id(r, "framework.torch.no_gpu") and r.exit_code == EXIT_WARNINGS


@pytest.mark.parametrize(
    "gpu",
    [
        F.FakeGpu(processes=[], memory_used=60 * GIB),  # a container lists no other job
        F.FakeGpu(processes=[(1, None), (2, None)], memory_used=40 * GIB),  # per-process memory unknown
        F.FakeGpu(memory_used=41 * GIB, errors={"nvmlDeviceGetComputeRunningProcesses": F._real.NVML_ERROR_UNKNOWN}),
        F.FakeGpu(processes=[(7, 1 * GIB)], memory_used=60 * GIB),  # one visible job hid the other 59 GiB
    ],
)
def test_vram_in_use_that_no_listed_process_accounts_for_is_a_warning(gpu: F.FakeGpu) -> None:
    """ "the GPU is free" with 60 of 80 GiB in use, when NVML could not list the other jobs."""
    r = evaluate(snap(F.FakeNVML([gpu])))
    f = one(r, "gpu.memory_in_use")
    assert f.severity is Severity.WARNING and "not listed" in f.title and f.remedy
    assert not [x for x in by_id(r, "gpu.memory_held_by_others") if x.severity is Severity.OK]


def test_a_failed_ecc_mode_query_still_reports_the_errors_it_can_read() -> None:
    gpu = F.FakeGpu(ecc_counts={(1, 0): 4, (1, 1): 4}, errors={"nvmlDeviceGetEccMode": F._real.NVML_ERROR_UNKNOWN})
    assert one(evaluate(snap(F.FakeNVML([gpu]))), "gpu.ecc").severity is Severity.CRITICAL
    unread = F.FakeGpu(
        errors={
            "nvmlDeviceGetEccMode": F._real.NVML_ERROR_UNKNOWN,
            "nvmlDeviceGetTotalEccErrors": F._real.NVML_ERROR_UNKNOWN,
        }
    )
    assert one(evaluate(snap(F.FakeNVML([unread]))), "gpu.ecc").severity is Severity.UNKNOWN


def test_temperature_past_shutdown_and_with_only_a_shutdown_point_say_so() -> None:
    """94 °C past a 92 °C shutdown read "at or above the slowdown point (89 °C)"; a card with only
    a shutdown point was said to report no thresholds."""
    hot = one(evaluate(snap(F.FakeNVML([F.FakeGpu(temperature=94, field_thresholds=None)]))), "gpu.temperature")
    assert hot.severity is Severity.CRITICAL and "shutdown point (92 °C)" in hot.title
    only = F.FakeGpu(temperature=88, thresholds={0: 92}, field_thresholds=None)
    f = one(evaluate(snap(F.FakeNVML([only]))), "gpu.temperature")
    assert "only its shutdown point (92 °C)" in f.detail and "no thresholds" not in f.detail


def test_a_gpu_this_user_may_not_open_is_a_warning_with_a_permission_remedy() -> None:
    # Under a Slurm job's cgroup NVML lists every GPU of the node but denies the ones not
    # allocated: that was "critical: GPU could not be opened — check the kernel log for Xid errors".
    denied, broken = _partly_failing()[1:]
    f = one(evaluate(snap(denied)), "gpu.no_permission")
    assert f.severity is Severity.WARNING and "Slurm" in (f.remedy or "") and f.device.startswith("gpu0")
    assert not by_id(evaluate(snap(denied)), "gpu.error")
    assert one(evaluate(snap(broken)), "gpu.error").severity is Severity.CRITICAL


@pytest.mark.parametrize(
    ("driver_cuda", "cc", "said", "unsaid"),
    [
        ("11.4", "8.0", "whl/cu118", "cu130"),  # QA 15: the old driver was told to install cu128, which will not start
        ("12.4", "8.0", "whl/cu126", "cu130"),
        ("13.0", "9.0", "whl/cu130", "cu126"),
        ("13.0", "6.0", "whl/cu126", "whl/cu130"),  # a Pascal card: CUDA 13 builds dropped it
        ("12.8", "12.0", "driver to one for CUDA 13", "whl/cu126`,"),  # an RTX 5090: cu126 has no Blackwell kernels
        ("12.2", "3.7", "no current torch build runs", "whl/"),  # a K80
    ],
)
def test_the_cpu_only_torch_remedy_names_a_wheel_this_driver_and_gpu_can_run(
    driver_cuda: str, cc: str, said: str, unsaid: str
) -> None:
    s = _with_torch(F.healthy(), cpu_only_build=True)
    s = dataclasses.replace(
        s,
        nvml=dataclasses.replace(s.nvml, cuda_driver_version=driver_cuda),
        gpus=[dataclasses.replace(g, compute_capability=cc) for g in s.gpus],
    )
    remedy = one(evaluate(s), "framework.torch.cpu_only").remedy or ""
    assert said in remedy and unsaid not in remedy and "cu128" not in remedy, remedy


def test_the_ram_ratio_reads_the_same_in_the_detail_and_the_value() -> None:
    s = snap(F.healthy())
    s.memory.total_bytes = int(80 * GIB * 0.15)
    f = one(evaluate(s), "system.ram_vs_vram")
    assert f.value == 0.15 and "(0.15×)" in (f.detail or ""), f.detail
