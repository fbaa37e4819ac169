"""Match the names NVML, torch, amdsmi and benchmark tables use to catalog entries.

"NVIDIA GeForce RTX 3090", "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
"AMD Instinct MI300X", "RTX 2080 Max-Q (laptop)" ... are normalised to tokens; the entry whose
name or alias normalises the same way wins, and the memory size picks among variants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuselect.catalog.schema import GpuEntry

_VENDOR_WORDS = {
    "nvidia",
    "amd",
    "ati",
    "geforce",
    "tesla",
    "radeon",
    "instinct",
    "graphics",
    "gpu",
    "(r)",
    "(tm)",
    "edition",
}
_SYNONYMS = {"pcie": "pcie", "sxm": "sxm", "laptop": "laptop", "mobile": "laptop", "notebook": "laptop", "maxq": "maxq"}


def normalise(name: str) -> tuple[str, ...]:
    n = name.lower()
    n = n.replace("with max-q design", "maxq").replace("max-q", "maxq").replace("max q", "maxq")
    n = re.sub(r"\(laptop\)|laptop gpu", " laptop ", n)
    n = re.sub(r"\(1 gcd[^)]*\)", " ", n)
    n = re.sub(r"(\d+)\s*gb\b", r"\1gb", n)
    n = re.sub(r"[^a-z0-9.]+", " ", n)
    tokens = []
    for tok in n.split():
        if tok in _VENDOR_WORDS:
            continue
        tokens.append(_SYNONYMS.get(tok, tok))
    return tuple(tokens)


def _memory_tokens(tokens: tuple[str, ...]) -> tuple[tuple[str, ...], int | None]:
    """Split "80gb" style tokens off: they choose among variants instead of naming the card."""
    mem = [int(t[:-2]) for t in tokens if re.fullmatch(r"\d+gb", t)]
    rest = tuple(t for t in tokens if not re.fullmatch(r"\d+gb", t) and t not in {"hbm3", "hbm2", "hbm2e", "hbm3e"})
    return rest, (mem[0] if mem else None)


@dataclass(frozen=True)
class MatchResult:
    entry: GpuEntry
    reason: str  # how it was matched


class NameIndex:
    def __init__(self, entries: list[GpuEntry]) -> None:
        self._by_key: dict[tuple[str, ...], list[GpuEntry]] = {}
        for e in entries:
            for name in (e.name, e.id.split("-", 1)[1].replace("-", " "), *e.aliases):
                key, _ = _memory_tokens(normalise(name))
                bucket = self._by_key.setdefault(tuple(sorted(key)), [])
                if e not in bucket:
                    bucket.append(e)

    def match(self, name: str, memory_bytes: int | None = None) -> MatchResult | None:
        key, mem_in_name = _memory_tokens(normalise(name))
        candidates = self._by_key.get(tuple(sorted(key)), [])
        if not candidates:
            return None
        if len(candidates) == 1:
            return MatchResult(candidates[0], "name")
        mem_gb = mem_in_name if mem_in_name is not None else (memory_bytes / 1024**3 if memory_bytes else None)
        if mem_gb is None:
            # No size to go by: the first-listed (usually the original) variant.
            return MatchResult(candidates[0], "name; memory size unknown, first variant taken")
        # Reported memory is a little below the marketing size (reserved memory, GiB vs GB).
        best = min(candidates, key=lambda e: abs(e.vram_gb - mem_gb * (1.0 if mem_in_name else 1.07)))
        return MatchResult(best, f"name and memory size ({mem_gb:.0f} GB)")
