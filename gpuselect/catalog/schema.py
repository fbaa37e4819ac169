"""The catalog's data model: one ``GpuEntry`` per card, every figure with its source.

Units are in the field names (``_gb``, ``_gbs`` = GB/s, ``_mhz``, ``_tflops``, ``_w``,
``_usd``). Tensor figures are *dense* (never the 2:4 sparse figure). ``fp16_tflops`` is the
dense FP16 tensor rate **with FP32 accumulate** — what mixed-precision training uses; GeForce
cards run it at half their FP16-accumulate rate.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuselect.types import SPEC_PRECISIONS, Family, FormFactor, Precision

# One source for these values: the enums in gpuselect.types (members are str, so they compare,
# join and serialise as the plain names).
FAMILIES: tuple[Family, ...] = tuple(Family)
FORM_FACTORS: tuple[FormFactor, ...] = tuple(FormFactor)
PRECISIONS: tuple[Precision, ...] = SPEC_PRECISIONS


#: Per vendor, the architectures the estimator knows, oldest first (its efficiencies, precisions
#: and "nearest architecture" fallbacks are per architecture): a catalog entry names one of these.
ARCHITECTURES: dict[str, tuple[str, ...]] = {
    "NVIDIA": (
        "Kepler",
        "Maxwell",
        "Pascal",
        "Volta",
        "Turing",
        "Ampere",
        "Ada Lovelace",
        "Hopper",
        "Blackwell",
        "Blackwell Ultra",
    ),
    "AMD": (
        "GCN 5.0 (Vega 10)",
        "GCN 5.1 (Vega 20)",
        "CDNA 1",
        "RDNA 2",
        "CDNA 2",
        "RDNA 3",
        "CDNA 3",
        "RDNA 4",
        "CDNA 4",
    ),
    "Intel": ("Xe-HPG", "Xe-HPC", "Gaudi"),
}


def offer_gpus(provider: str) -> int | None:
    """GPUs of a cloud offer as its name says ("lambda:gpu_8x_b200", "runpod:4x_MI300X_SECURE",
    "shadeform:excesssupply_H200x8"); None where it does not."""
    m = re.search(r"(?:^|[_:])(\d+)x_", provider) or re.search(r"x(\d+)$", provider)
    return int(m.group(1)) if m and 0 < int(m.group(1)) <= 64 else None


@dataclass(frozen=True)
class GpuEntry:
    id: str  # stable, lower-case: "nvidia-rtx-4090", "nvidia-a100-sxm4-80gb", "amd-mi300x"
    name: str  # marketing name: "GeForce RTX 4090"
    vendor: Literal["NVIDIA", "AMD", "Intel"]
    family: Family
    architecture: str
    release_date: str  # ISO date (YYYY-MM-DD or YYYY-MM)
    form_factor: FormFactor
    vram_gb: float
    memory_type: str
    memory_bus_bits: int
    memory_bandwidth_gbs: float
    shader_cores: int  # CUDA cores / stream processors
    boost_clock_mhz: float
    fp32_tflops: float  # non-tensor (vector) FP32
    tdp_w: float
    compute_capability: str | None = None  # NVIDIA only, e.g. "8.9"
    memory_data_rate_gbps: float | None = None  # effective per-pin rate; bus_bits * rate / 8 = bandwidth
    fp32_flops_per_core_clock: int = 2  # 2 = one FMA; 4 on RDNA 3/4 dual-issue and CDNA 3 packed FP32
    fp32_check: str | None = None  # why fp32_tflops is a vendor figure that the cores*clock check may not match
    sm_count: int | None = None  # SMs (NVIDIA) or compute units (AMD)
    tensor_cores: int | None = None  # NVIDIA tensor cores / AMD matrix cores
    l2_cache_mb: float | None = None  # last-level on-chip cache (L2, or Infinity Cache on AMD)
    tf32_tflops: float | None = None  # dense tensor TF32 (or AMD XF32/FP32 matrix)
    fp16_tflops: float | None = None  # dense tensor FP16 with FP32 accumulate
    bf16_tflops: float | None = None  # dense tensor BF16 with FP32 accumulate
    fp8_tflops: float | None = None  # dense tensor FP8
    interconnect: str | None = None  # human text: "PCIe 4.0 x16; NVLink 600 GB/s"
    pcie_gen: int | None = None
    gpu_link_gbs: float | None = None  # GPU-to-GPU link per GPU (NVLink / Infinity Fabric), GB/s total
    launch_price_usd: float | None = None
    launch_price_date: str | None = None
    street_price_usd: float | None = None
    street_price_date: str | None = None
    cloud_usd_per_hour: float | None = None  # cheapest on-demand $/GPU-hour seen
    cloud_provider: str | None = None
    cloud_price_date: str | None = None
    # The total the driver reports where it is below ``vram_gb`` (an H100 SXM5 "80GB" shows 81,559
    # MiB, 79.65 GiB): what training can allocate at most.
    visible_vram_gb: float | None = None
    cloud_gpus: int | None = None  # GPUs in that rate's offer where the provider's name does not say
    # The cheapest offer of a whole node (8 GPUs linked as the catalog's box), where it is not the
    # cheapest rate above: several GPUs are priced by the offer that rents them linked.
    cloud_node_usd_per_hour: float | None = None  # $/GPU-hour
    cloud_node_provider: str | None = None
    cloud_node_gpus: int | None = None
    dies: int = 1  # dies the driver shows as separate GPUs (MI250/MI250X: two GCDs); figures are the board's
    aliases: tuple[str, ...] = ()  # extra names NVML/torch/amdsmi report
    notes: str | None = None
    # field name (or group name such as "memory", "tensor", "price") -> where it came from
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def cloud_offer_gpus(self) -> int | None:
        """GPUs in the cloud offer the hourly rate comes from, as its name says ("lambda:gpu_8x_b200",
        "runpod:4x_MI300X_SECURE", "shadeform:excesssupply_H200x8"); None where it does not say."""
        if not self.cloud_provider:
            return None
        return self.cloud_gpus or offer_gpus(self.cloud_provider)  # a stated size first (one die's: k x dies)

    @property
    def price_usd(self) -> float | None:
        """What a card costs to buy, as the estimate prices it: the street price an overlay sets,
        else the launch price."""
        return self.street_price_usd or self.launch_price_usd

    @property
    def usable_vram_gb(self) -> float:
        """What training can allocate of ``vram_gb``: NVIDIA's datacenter cards with GDDR memory run
        with ECC on by default, which stores its check bits in that memory and leaves 15/16 of it
        ("On GPUs with GDDR memory with ECC enabled the available DRAM is reduced by 6.25 %", CUDA
        C++ Best Practices Guide; a T4 shows 15 of its 16 GB in nvidia-smi). HBM keeps them apart;
        workstation cards ship with ECC off."""
        if self.visible_vram_gb:  # what the driver reports: with ECC on, its check bits are already out
            return min(self.vram_gb, self.visible_vram_gb)
        if self.vendor == "NVIDIA" and self.family == "datacenter" and self.memory_type.upper().startswith("GDDR"):
            return self.vram_gb * 15 / 16
        return self.vram_gb

    def as_reported(self, memory_gb: float) -> GpuEntry:
        """This card with the memory its driver reports (GiB) as what training can allocate: a
        detected GPU is fitted in that (a W7800 48GB matched the 32 GB entry; a T4 with ECC on
        reports its 15 GB)."""
        return dataclasses.replace(self, vram_gb=max(self.vram_gb, memory_gb), visible_vram_gb=memory_gb)

    def one_die(self) -> GpuEntry:
        """One die of a multi-die board as PyTorch sees it (an MI250/MI250X shows each of its two
        GCDs as a GPU): every per-board resource divided by ``dies``, so the host's per-step cost
        stays whole where halving the board's throughput would halve it too; the board's Infinity
        Fabric (``gpu_link_gbs``: all its links, both directions) is shared by its dies too. Itself
        for one die."""
        dies = self.dies
        if dies <= 1:
            return self
        split = (
            "vram_gb", "visible_vram_gb", "memory_bandwidth_gbs", "fp32_tflops", "tf32_tflops", "fp16_tflops",
            "bf16_tflops", "fp8_tflops", "tdp_w", "l2_cache_mb", "gpu_link_gbs",
        )  # fmt: skip
        counts = ("shader_cores", "sm_count", "tensor_cores", "memory_bus_bits")
        kw: dict[str, Any] = {f: getattr(self, f) / dies for f in split if getattr(self, f)}
        kw |= {f: getattr(self, f) // dies for f in counts if getattr(self, f)}
        # an offer of k cards rents k x dies of these GPUs (the rows count ranks)
        offer, node = self.cloud_offer_gpus, self.cloud_node_gpus
        kw |= {"cloud_gpus": offer * dies if offer else None, "cloud_node_gpus": node * dies if node else None}
        return dataclasses.replace(self, **kw)

    def tflops(self, precision: str) -> float | None:
        """Dense peak for a spec precision (``fp32`` = non-tensor FP32); KeyError for another."""
        rates: dict[str, float | None] = {  # (members hash as their strings: "bf16" finds Precision.BF16)
            Precision.FP32: self.fp32_tflops,
            Precision.TF32: self.tf32_tflops,
            Precision.FP16: self.fp16_tflops,
            Precision.BF16: self.bf16_tflops,
            Precision.FP8: self.fp8_tflops,
        }
        return rates[precision]
