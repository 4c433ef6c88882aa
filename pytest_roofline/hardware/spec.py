"""What a device can do: :class:`HardwareSpec` holds, for every ceiling, its value and where it came from
(:class:`Ceiling`). Pure data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ..base.kinds import Platform
from . import sizing
from .ceiling import Ceiling

__all__ = ["Ceiling", "HardwareSpec", "HardwareError", "UnknownDeviceError", "PEAK_KEYS", "CONTENDED_SOURCE"]

# How a ceiling's source says it was calibrated beside other work (hardware/calibration_cache.py writes it).
CONTENDED_SOURCE = "while other processes used"

PEAK_KEYS = ("bf16", "f16", "f32", "tf32", "fp8", "int8", "f64", "vector")


class HardwareError(ValueError):
    """A hardware table or override file that cannot be used; the message names the file and key."""


class UnknownDeviceError(HardwareError):
    """The device in use has no entry in the table."""


@dataclass(frozen=True)
class HardwareSpec:
    name: str
    platform: Platform
    peaks: Mapping[str, Ceiling]  # FLOP/s by key of PEAK_KEYS
    memory_bandwidth: Ceiling  # bytes/s
    interconnect_bandwidth: Ceiling | None = None  # bytes/s
    device_kinds: tuple[str, ...] = ()
    _: KW_ONLY  # fields from the seventh on are given by keyword
    theoretical: Mapping[str, Ceiling] = field(default_factory=dict)  # shown beside measured ceilings
    notes: tuple[str, ...] = ()
    # Transcendentals (exp, tanh, log, rsqrt ...) per second; None where no source gives one (then they add
    # no time to the roofline, and the result says so).
    transcendental: Ceiling | None = None
    # Rates of the reference kernels at calibration, by reference key (empty for datasheet figures): live
    # ceilings divide the rate a reference reaches beside a kernel by these.
    reference_rates: Mapping[str, float] = field(default_factory=dict)
    # What a profile's device plane says of a GPU (its compute capability, e.g. "9.0", "9.4" for AMD gfx942):
    # how a device is found from a profile recorded elsewhere (with the memory capacity).
    compute_capability: tuple[str, ...] = ()
    # The memory one device holds, in bytes (HBM of an accelerator; a CPU's RAM or its cgroup limit): what
    # max_memory= fractions are of. None where no source gives it.
    memory_capacity: Ceiling | None = None
    # A CPU's first touch of fresh pages, in bytes per second, and the bytes one page fault maps (calibrated;
    # None on accelerators and where no cost was measurable): see analysis/model/first_touch.py.
    first_touch: Ceiling | None = None
    bytes_per_fault: float | None = None
    # The bandwidth a stream reaches in the last-level cache (calibrated on a CPU), and that cache's size as the
    # system reports it: a working set that fits it is held to it (analysis/model/work_shares.py: memory_ceiling).
    cache_bandwidth: Ceiling | None = None
    cache_bytes: int | None = None
    # The link between hosts, in bytes/s leaving one host (DCN for a TPU slice, the network of a GPU node): what
    # collective bytes that cross hosts meet. None where no source gives it (then they add no time, and the
    # interconnect term is a stated lower bound).
    host_link_bandwidth: Ceiling | None = None
    # Elementwise integer and boolean ops per second (RNG bit mixing, index arithmetic): calibrated on a CPU; None
    # where no source gives one (then they add no time to the roofline, and the result says so).
    integer: Ceiling | None = None

    @property
    def low_ceilings(self) -> str:
        """Why these ceilings are known to be low ("" where they are not): a CPU calibrated while other processes
        held its cores (its source says "measured now while other processes used N% of the CPUs")."""
        source = self.memory_bandwidth.source
        at = source.find(CONTENDED_SOURCE)
        if at < 0:
            return ""
        busy = source[at + len(CONTENDED_SOURCE):].split(";")[0].strip()
        kept = "provisional" if "provisional" in source else "this run only"
        return (f"its ceilings were calibrated while other processes used {busy}, so they are low ({kept}; "
                f"a quiet run calibrates again)")

    # Sizing a test from the roofline (hardware/sizing.py, which reads a spec through its figures alone).
    def peak_flops(self, dtype: Any) -> float:
        """FLOP/s a matmul in ``dtype`` meets (f32 runs as TF32 on a GPU, as a bf16 pass on a TPU)."""
        return sizing.peak_for_dtype(self, dtype).value

    def critical_intensity(self, dtype: Any) -> float:
        """FLOP per byte of main memory at the ridge point of a matmul in ``dtype``: below it memory-bound."""
        return sizing.critical_intensity(self, dtype)

    def compute_bound_batch(self, d: int, f: int, dtype: Any, margin: float = 2.0, multiple: int = 1) -> int:
        """The smallest batch B (a multiple of ``multiple``) at which ``x[B, d] @ w[d, f]`` has ``margin`` times the
        critical intensity here; a ValueError where no batch does."""
        return sizing.compute_bound_batch(self, d, f, dtype, margin, multiple)

    def compute_bound_size(self, dtype: Any, margin: float = 2.0, multiple: int = 1) -> int:
        """The smallest n (a multiple of ``multiple``) at which ``n x n @ n x n`` has ``margin`` times the critical
        intensity here."""
        return sizing.compute_bound_size(self, dtype, margin, multiple)

    @property
    def memory_capacity_gb(self) -> float | None:
        return self.memory_capacity.value / 1e9 if self.memory_capacity is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "platform": self.platform,
            "peaks_flops_per_s": {k: c.to_dict() for k, c in self.peaks.items()},
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth.to_dict(),
            "interconnect_bandwidth_bytes_per_s": (
                self.interconnect_bandwidth.to_dict() if self.interconnect_bandwidth else None
            ),
            "transcendentals_per_s": self.transcendental.to_dict() if self.transcendental else None,
            "memory_capacity_bytes": self.memory_capacity.to_dict() if self.memory_capacity else None,
            "first_touch_bytes_per_s": self.first_touch.to_dict() if self.first_touch else None,
            "bytes_per_fault": self.bytes_per_fault,
            "cache_bandwidth_bytes_per_s": self.cache_bandwidth.to_dict() if self.cache_bandwidth else None,
            "cache_bytes": self.cache_bytes,
            "host_link_bytes_per_s": self.host_link_bandwidth.to_dict() if self.host_link_bandwidth else None,
            "integer_ops_per_s": self.integer.to_dict() if self.integer else None,
            "theoretical": {k: c.to_dict() for k, c in self.theoretical.items()},
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HardwareSpec:
        """Read :meth:`to_dict`'s form back (a report's hardware); what it leaves out (device kinds, reference
        rates, compute capabilities) is empty."""
        def ceilings(key: str) -> dict[str, Ceiling]:
            return {str(k): Ceiling.from_dict(c) for k, c in (data.get(key) or {}).items()}

        fault = data.get("bytes_per_fault")
        cache = data.get("cache_bytes")
        return cls(
            name=str(data["name"]), platform=data["platform"], peaks=ceilings("peaks_flops_per_s"),
            memory_bandwidth=Ceiling.from_dict(data["memory_bandwidth_bytes_per_s"]),
            interconnect_bandwidth=Ceiling.maybe(data.get("interconnect_bandwidth_bytes_per_s")),
            theoretical=ceilings("theoretical"), notes=tuple(str(n) for n in data.get("notes") or ()),
            transcendental=Ceiling.maybe(data.get("transcendentals_per_s")),
            memory_capacity=Ceiling.maybe(data.get("memory_capacity_bytes")),
            first_touch=Ceiling.maybe(data.get("first_touch_bytes_per_s")),
            bytes_per_fault=float(fault) if fault is not None else None,
            host_link_bandwidth=Ceiling.maybe(data.get("host_link_bytes_per_s")),
            cache_bandwidth=Ceiling.maybe(data.get("cache_bandwidth_bytes_per_s")),
            cache_bytes=int(cache) if cache is not None else None,
            integer=Ceiling.maybe(data.get("integer_ops_per_s")))
