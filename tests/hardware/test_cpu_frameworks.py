from __future__ import annotations

from gpuselect.hardware.cpu import detect_cpu, dl_features, parse_proc_cpuinfo
from gpuselect.hardware.frameworks import _assigned_string, apply_probe, torch_info
from gpuselect.hardware.snapshot import detect, merge_torch_devices
from gpuselect.hardware.types import FrameworkInfo, GpuInfo
from tests.fakes import fake_nvml as F

X86 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8
"""
ARM = """processor\t: 0
BogoMIPS\t: 2000.00
Features\t: fp asimd evtstrm aes asimdhp asimddp sve sve2 bf16 i8mm
CPU implementer\t: 0x41
"""


def test_x86_cpuinfo() -> None:
    model, vendor, feats = parse_proc_cpuinfo(X86)
    assert model == "Intel(R) Xeon(R) Platinum 8480+" and vendor == "GenuineIntel"
    for f in ("avx2", "avx512f", "avx512_bf16", "amx", "amx_bf16", "avx512_fp16"):
        assert f in feats
    assert "sse4_2" not in feats  # not deep-learning relevant


def test_arm_cpuinfo() -> None:
    model, vendor, feats = parse_proc_cpuinfo(ARM)
    assert model is None and vendor == "0x41"
    assert {"neon", "sve", "sve2", "arm_bf16", "arm_i8mm", "neon_dotprod"} <= set(feats)


def test_dl_features_is_sorted_and_unique() -> None:
    assert dl_features(["asimd", "neon", "avx2"]) == ["avx2", "neon"]


def test_cpu_without_max_frequency_says_why(tmp_path) -> None:
    p = tmp_path / "cpuinfo"
    p.write_text(X86)
    freq = type("F", (), {"current": 2600.0, "max": 0.0})
    cpu = detect_cpu(cpuinfo_path=str(p), cpu_freq=lambda: freq)
    assert cpu.current_mhz == 2600.0
    if cpu.max_mhz is None:  # sysfs may still know it on some hosts
        assert "maximum" in cpu.unavailable["max_mhz"]
    assert cpu.logical_cores and cpu.logical_cores >= 1


def test_version_file_parsing() -> None:
    src = "__version__ = '2.5.0'\ncuda: Optional[str] = '12.4'\nhip: Optional[str] = None\n"
    assert _assigned_string(src, "cuda") == "12.4"
    assert _assigned_string(src, "hip") is None
    assert _assigned_string('cuda = "11.8"', "cuda") == "11.8"


def test_installed_torch_is_read_without_import() -> None:
    import sys

    had = "torch" in sys.modules
    info = torch_info()
    assert info is not None and info.version
    assert ("torch" in sys.modules) == had
    # What torch itself says (in a child process, so this one stays torch-free); the old
    # assertion restated the implementation's own formula and could not fail.
    import subprocess

    code = "import torch; print(torch.version.cuda); print(getattr(torch.version, 'hip', None))"
    cuda, hip = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert info.built_cuda == (None if cuda == "None" else cuda)
    assert info.built_rocm == (None if hip == "None" else hip)
    assert info.cpu_only_build is (cuda == "None" and hip == "None")


def test_probe_results_applied() -> None:
    fw = FrameworkInfo("torch", True, "2.5")
    apply_probe(fw, {"sees_gpu": True, "devices": [{"name": "H100"}], "backends": {"cuda": True}, "cudnn": "90100"})
    assert fw.probed and fw.sees_gpu and fw.devices == ["H100"] and fw.cudnn == "90100"
    bad = FrameworkInfo("tensorflow", True, "2.17")
    apply_probe(bad, {"error": "importing tensorflow failed"})
    assert bad.probe_error and bad.sees_gpu is None


def test_torch_devices_matched_by_uuid_then_bus_not_index() -> None:
    a = GpuInfo(0, "NVIDIA", "A", "nvml", uuid="GPU-aaaa", pci_bus_id="0000:3b:00.0")
    b = GpuInfo(1, "NVIDIA", "B", "nvml", uuid="GPU-bbbb", pci_bus_id="0000:5e:00.0")
    # CUDA_VISIBLE_DEVICES=1,0: torch's index 0 is NVML's index 1.
    merged = merge_torch_devices(
        [a, b],
        [
            {"index": 0, "name": "B", "uuid": "bbbb"},
            {"index": 1, "name": "A", "pci_bus_id": "0000:3B:00.0"},
            {"index": 0, "name": "Apple MPS", "kind": "mps"},
        ],
    )
    assert (a.torch_index, b.torch_index) == (1, 0)
    assert len(merged) == 3 and merged[2].vendor == "Apple" and merged[2].source == "torch"


def test_detect_with_fake_nvml_and_fake_prober(monkeypatch) -> None:
    # This machine's own frameworks must not matter: pretend only torch is installed.
    monkeypatch.setattr(
        "gpuselect.hardware.snapshot.static_frameworks",
        lambda: (t := FrameworkInfo("torch", True, "2.5.0"), [t, FrameworkInfo("jax", False)]),
    )
    calls = []

    def prober(name: str) -> dict:
        calls.append(name)
        return {
            "sees_gpu": True,
            "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "11111111-2222-3333-4444-555555555555"}],
        }

    snap = detect(nvml=F.healthy(), prober=prober)
    assert calls == ["torch"]  # only installed frameworks are probed; a GPU was found
    assert snap.gpus[0].torch_index == 0 and len(snap.gpus) == 1
    assert snap.torch is not None and snap.torch.sees_gpu is True


def test_no_gpu_means_no_probe_by_default() -> None:
    calls = []
    snap = detect(nvml=F.FakeNVML([]), prober=lambda n: calls.append(n) or {})
    assert snap.gpus == [] and calls == []
