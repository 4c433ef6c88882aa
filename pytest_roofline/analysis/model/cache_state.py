"""The cache state a kernel is measured in: which one (:func:`plan_cache`, from the setting, the platform and
the working set), how much is written between runs to evict the last-level cache, and whether the eviction took
(:class:`CacheState`, with the medians of the cold runs and of a few warm runs after them). Pure.

Why "auto" is cold where the working set fits the last-level cache: a kernel in a real program rarely finds its
inputs in the cache its own previous call left them in, and a warm loop over the same few megabytes measures the
cache, not the memory the roofline holds the bytes to (a memory-bound kernel timed warm on a GPU's L2 reads well
above its DRAM roofline; a 512x512 f32 matmul on a CPU read 108-113% of its calibrated peak warm). GPU benchmark
harnesses flush L2 by default for the same reason. Where the working set is larger than the cache, each run
evicts its own data: warm and cold are the same measurement and eviction would only cost time, so "auto" runs
warm. A TPU has no hardware-managed cache between its HBM and its cores that a run could leave warm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

from ...base.kinds import CACHE_STATES, CacheMode, choose
from ...base.kinds import CacheState as StateName
from ...base.units import format_quantity, format_seconds
from .work_shares import CACHE_SIDE_MAX

__all__ = ["CacheState", "plan_cache", "GPU_CACHE_ASSUMED", "WARM_CHECK_RUNS"]

# Where a GPU's L2 size cannot be read: at least as large as any current GPU's L2 (H100: 50 MiB).
GPU_CACHE_ASSUMED = 128 * 2**20
# Warm runs after the cold ones, to check that the eviction took (only where the working set fits the cache).
WARM_CHECK_RUNS = 5


@dataclass(frozen=True)
class CacheState:
    """The cache state of a measurement: ``state``, why it was chosen, the cache it is about, the bytes written
    before each timed run to evict it (0: none), and where checked, the median device times of the cold runs
    and of :data:`WARM_CHECK_RUNS` warm runs after them."""

    state: StateName
    why: str
    cache_bytes: int | None = None
    cache_source: str = ""
    evicted_bytes: int = 0
    cold_s: float | None = None
    _: KW_ONLY  # fields from the seventh on are given by keyword
    warm_s: float | None = None

    @property
    def checked(self) -> bool:
        return self.cold_s is not None and self.warm_s is not None

    @property
    def took(self) -> bool | None:
        """Whether the cold runs were slower than the warm ones (None: not checked)."""
        if self.cold_s is None or self.warm_s is None:
            return None
        return self.cold_s > self.warm_s

    def with_check(self, cold_s: float, warm_s: float) -> CacheState:
        return replace(self, cold_s=cold_s, warm_s=warm_s)

    def text(self) -> str:
        """One line for the failure message and the HTML."""
        cache = (f"the {format_quantity(self.cache_bytes, 'B')} last-level cache ({self.cache_source})"
                 if self.cache_bytes else "the last-level cache")
        if self.state == "cold" and self.evicted_bytes:
            line = (f"cold: {cache} evicted before every timed run ({format_quantity(self.evicted_bytes, 'B')} "
                    f"written, outside the timing); {self.why}")
        elif self.state == "cold":
            line = f"cold: nothing evicted; {self.why}"
        else:
            line = f"warm: runs back to back, nothing evicted; {self.why}"
        if self.cold_s is not None and self.warm_s is not None:
            ratio = self.cold_s / self.warm_s
            line += f"; cold runs {format_seconds(self.cold_s)} vs warm {format_seconds(self.warm_s)} ({ratio:.2f}x)"
            if not self.took:
                line += (": NOT SLOWER COLD, so the eviction did not take or this kernel's time does not depend on "
                         "the cache")
        return line

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "why": self.why, "cache_bytes": self.cache_bytes,
                "cache_source": self.cache_source, "evicted_bytes": self.evicted_bytes, "cold_s": self.cold_s,
                "warm_s": self.warm_s, "took": self.took, "text": self.text()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CacheState:
        def maybe(key: str) -> float | None:
            value = data.get(key)
            return float(value) if value is not None else None

        cache = data.get("cache_bytes")
        return cls(choose(data["state"], CACHE_STATES, f"cache state {data['state']!r}"), str(data.get("why") or ""),
                   int(cache) if cache is not None else None, str(data.get("cache_source") or ""),
                   int(data.get("evicted_bytes") or 0), maybe("cold_s"), warm_s=maybe("warm_s"))


def _fits(platform: str, working_set: float | None, cache_bytes: int | None) -> bool | None:
    """Whether the working set fits the cache (on a CPU, at most :data:`CACHE_SIDE_MAX` of a VM's reported cache
    is its own); None where either is unknown."""
    if working_set is None or cache_bytes is None:
        return None
    usable = min(cache_bytes, CACHE_SIDE_MAX) if platform == "cpu" else cache_bytes
    return working_set <= usable


def _evict_bytes(platform: str, cache_bytes: int | None) -> int:
    """Twice the cache (on a CPU, twice the VM's share of it): enough to leave none of the kernel's lines."""
    if platform == "cpu":
        return 2 * min(cache_bytes or CACHE_SIDE_MAX, CACHE_SIDE_MAX)
    return 2 * (cache_bytes or GPU_CACHE_ASSUMED)


def plan_cache(mode: CacheMode, platform: str, working_set: float | None, cache_bytes: int | None,
               cache_source: str) -> tuple[CacheState, bool]:
    """The cache state to measure in, and whether to check the eviction with warm runs after the cold ones
    (cold, and a working set that fits the cache, where cold should be slower)."""
    size = format_quantity(working_set, "B") if working_set is not None else "unknown"
    fits = _fits(platform, working_set, cache_bytes)
    if platform == "tpu":
        why = "a TPU has no hardware-managed cache between its HBM and its cores for a run to leave warm"
        state: StateName = "cold" if mode == "cold" else "warm"
        return CacheState(state, f"{why} (cache={mode!r})" if mode != "auto" else why), False
    if mode == "auto":
        if fits:
            state, why = "cold", f"auto: the working set {size} fits the cache, where warm and cold differ"
        elif fits is None:
            state, why = "warm", f"auto: working set {size} or cache size unknown"
        else:
            state, why = (
                "warm",
                f"auto: the working set {size} is larger than the cache, so each run evicts its own data",
            )
    else:
        state, why = mode, f"cache={mode!r} asked for (working set {size})"
    evicted = _evict_bytes(platform, cache_bytes) if state == "cold" else 0
    plan = CacheState(state, why, cache_bytes if cache_bytes else None, cache_source, evicted)
    return plan, state == "cold" and fits is True
