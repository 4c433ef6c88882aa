"""Which ceiling each share of a program's work meets: matrix FLOPs per compute class at that class's peak,
the rest at the vector peak, bytes at the memory bandwidth, collective bytes at the interconnect. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...base.units import format_quantity
from ...hardware.peaks import peak_for_class
from ...hardware.spec import Ceiling, HardwareSpec
from ..program.counts import Counts

__all__ = ["CeilingUse", "dot_precision", "compute_ceilings", "MemoryLevel", "memory_level", "cold_level",
           "CACHE_SIDE_MAX"]

# A last-level cache larger than this, as a VM reports it, is the host's and shared with other tenants (480 MiB
# on one Xeon VM, where a 128 MiB stream already ran at DRAM speed): only this much of it counts as the VM's.
CACHE_SIDE_MAX = 64 * 2**20


@dataclass(frozen=True)
class CeilingUse:
    """Which ceiling one share of the work met: ``work`` is "bf16 matrix FLOPs", "vector FLOPs", "bytes"."""

    work: str
    amount: float
    key: str
    ceiling: Ceiling
    note: str = ""

    @property
    def is_bytes(self) -> bool:
        return self.work.endswith("bytes")

    def to_dict(self) -> dict[str, Any]:
        return {"work": self.work, "amount": self.amount, "key": self.key, "ceiling": self.ceiling.to_dict(),
                "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CeilingUse:
        return cls(str(data["work"]), float(data["amount"]), str(data["key"]), Ceiling.from_dict(data["ceiling"]),
                   str(data.get("note") or ""))


def dot_precision(counts: Counts) -> str:
    """The precision the program's dots ask for ("default" unless one sets another)."""
    non_default = [p for p in counts.dot_precisions if p != "default"]
    return non_default[0] if non_default else "default"


def compute_ceilings(spec: HardwareSpec, counts: Counts, flops: float, user_flops: bool) -> list[CeilingUse]:
    """The compute ceilings the FLOPs meet. Analytic FLOPs (``user_flops``) cannot be split by dtype: they
    meet the peak of the program's main compute class."""
    precision = dot_precision(counts)
    uses: list[CeilingUse] = []
    if user_flops:
        main = max(counts.matrix_flops, key=lambda k: counts.matrix_flops[k], default="vector")
        key, ceiling, note = peak_for_class(spec, main, precision)
        label = f"{main} matrix FLOPs (analytic)" if main != "vector" else "vector FLOPs (analytic)"
        return [CeilingUse(label, flops, key, ceiling, note)]
    for cls, amount in sorted(counts.matrix_flops.items()):
        if amount <= 0:
            continue
        key, ceiling, note = peak_for_class(spec, cls, precision)
        uses.append(CeilingUse(f"{cls} matrix FLOPs", amount, key, ceiling, note))
    vector = counts.vector_flops
    if vector > 0 or not uses:
        key, ceiling, note = peak_for_class(spec, "vector")
        uses.append(CeilingUse("vector FLOPs", vector, key, ceiling, note))
    return uses


@dataclass(frozen=True)
class MemoryLevel:
    """Which bandwidth a program's bytes meet: the last-level cache's where its working set fits half of it
    (and at most :data:`CACHE_SIDE_MAX`), else main memory; ``note`` says which and why."""

    ceiling: Ceiling
    in_cache: bool
    note: str = ""


def cold_level(spec: HardwareSpec, total: float, written: float) -> MemoryLevel:
    """Main memory for a run that starts with an evicted cache. A write-back cache keeps what the run writes,
    up to its size, and writes it to memory after the run: those bytes meet the cache's bandwidth, the rest
    main memory's (one effective bandwidth over all ``total`` bytes). Without a measured cache bandwidth, all
    bytes meet main memory's."""
    dram, llc, cache = spec.memory_bandwidth, spec.cache_bytes, spec.cache_bandwidth
    kept = min(written, total, min(llc, CACHE_SIDE_MAX)) if llc and cache else 0.0
    if kept <= 0 or total <= 0 or cache is None:
        return MemoryLevel(dram, False)
    effective = total / ((total - kept) / dram.value + kept / cache.value)
    note = (f"cold: the {format_quantity(kept, 'B')} the run writes stay in the cache during it (written back "
            f"after), held to its bandwidth {format_quantity(cache.value, 'B/s')}; the rest to main memory's "
            f"{format_quantity(dram.value, 'B/s')}: {format_quantity(effective, 'B/s')} over all bytes")
    return MemoryLevel(Ceiling(effective, dram.origin, f"{dram.source}; {note}", dram.date), False, note)


def memory_level(spec: HardwareSpec, working_set: float | None, cold: tuple[float, float] | None = None) -> MemoryLevel:
    """The memory ceiling for a program whose buffers (arguments, outputs, temporaries) take ``working_set``
    bytes. Between half the cache and the whole cache a working set is partly cache-resident: it is held to
    main memory, and the note says the DRAM roofline may not bound it. ``cold``: (bytes accessed, bytes
    written) of a program whose runs start with an evicted cache (:func:`cold_level`)."""
    if cold is not None:
        return cold_level(spec, *cold)
    dram = spec.memory_bandwidth
    llc, cache = spec.cache_bytes, spec.cache_bandwidth
    if working_set is None or llc is None or cache is None:
        return MemoryLevel(dram, False)
    size = format_quantity(working_set, "B")
    llc_text = format_quantity(llc, "B")
    if working_set <= min(llc, CACHE_SIDE_MAX) / 2:
        return MemoryLevel(cache, True, f"working set {size} fits the {llc_text} last-level cache: bytes held to "
                                        f"its measured bandwidth {format_quantity(cache.value, 'B/s')}")
    if working_set <= llc:
        return MemoryLevel(dram, False, f"working set {size} may stay partly in the {llc_text} last-level cache: "
                                        f"the DRAM roofline may not bound it")
    return MemoryLevel(dram, False)
