"""Programs that span processes (hosts): which devices a collective's groups join, which of its ring's hops
cross from one host to another, and the time its bytes take on each kind of link. Pure.

A multi-controller JAX program runs one process per host; every device belongs to one process. A collective's
``replica_groups`` name the devices it joins, as indices into the program's device assignment (explicit
``{{0,1},{2,3}}``, the iota form ``[2,2]<=[4]`` / ``[2,2]<=[2,2]T(1,0)``, or ``{}`` for all devices). In the ring
model (:mod:`..program.collectives`) each device of a group sends the group's per-device bytes to the next one, the
group ordered by process: a hop between devices of one process uses the local interconnect (ICI, NVLink), a hop from
one process to the next the link between hosts (DCN on TPU slices, the network on GPU nodes). The ring moves at
the pace of its slowest hop, so a collective takes the longer of: its per-device bytes over the local
interconnect (where any hop is local) and the busiest host's outgoing bytes over its host link.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..program.collectives import collective_bytes
from ..program.hlo_reader import HloModule
from ..program.walk import executed

__all__ = [
    "CollectiveSplit",
    "GroupsError",
    "HostTraffic",
    "Topology",
    "collective_time",
    "expand_groups",
    "host_traffic",
    "permute_pairs",
    "split_collective",
]


class GroupsError(ValueError):
    """A replica_groups attribute this reader does not understand."""


@dataclass(frozen=True)
class Topology:
    """The process (host) of each device of a program, in the order of its device assignment."""

    process_of: tuple[int, ...]

    @property
    def devices(self) -> int:
        return len(self.process_of)

    @property
    def processes(self) -> int:
        return len(set(self.process_of))

    def devices_of(self, process: int) -> tuple[int, ...]:
        return tuple(i for i, p in enumerate(self.process_of) if p == process)

    def describe(self) -> str:
        """E.g. "2 processes x 2 devices (4 devices)"."""
        per = sorted({len(self.devices_of(p)) for p in set(self.process_of)})
        each = f"{per[0]}" if len(per) == 1 else "/".join(str(n) for n in per)
        return f"{self.processes} processes x {each} devices ({self.devices} devices)"


_IOTA = re.compile(r"^\[([\d,\s]+)\]<=\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?$")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _iota_groups(match: re.Match[str]) -> list[tuple[int, ...]]:
    """[G,S]<=[dims]T(perm): iota over prod(dims), shaped dims, axes permuted, read as G groups of S."""
    shape, dims = _ints(match.group(1)), _ints(match.group(2))
    perm = _ints(match.group(3)) if match.group(3) else list(range(len(dims)))
    total = 1
    for d in dims:
        total *= d
    if sorted(perm) != list(range(len(dims))) or len(shape) != 2 or shape[0] * shape[1] != total:
        raise GroupsError(f"replica_groups {match.group(0)!r}: shape and permutation do not fit")
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1):
        strides[k] = strides[k + 1] * dims[k + 1]
    tdims = [dims[p] for p in perm]
    flat = []
    for n in range(total):  # the n-th element of the transposed array, in row-major order
        index, rest = [0] * len(tdims), n
        for k in range(len(tdims) - 1, -1, -1):
            index[k], rest = rest % tdims[k], rest // tdims[k]
        flat.append(sum(index[k] * strides[perm[k]] for k in range(len(perm))))
    size = shape[1]
    return [tuple(flat[g * size:(g + 1) * size]) for g in range(shape[0])]


def expand_groups(attr: str, devices: int) -> list[tuple[int, ...]]:
    """The device groups a ``replica_groups`` attribute names (``devices``: all of them for ``{}``)."""
    raw = attr.strip()
    if not raw or raw == "{}":
        return [tuple(range(devices))]
    match = _IOTA.match(raw.replace(" ", ""))
    if match:
        return _iota_groups(match)
    if not (raw.startswith("{") and raw.endswith("}")):
        raise GroupsError(f"replica_groups {raw!r}: neither {{{{...}}}} nor the iota form")
    inner = raw[1:-1].strip()
    groups = re.findall(r"\{([^{}]*)\}", inner)
    if not groups:
        raise GroupsError(f"replica_groups {raw!r}: no group found")
    return [tuple(_ints(g)) for g in groups]


@dataclass(frozen=True)
class CollectiveSplit:
    """A collective's bytes by link: ``local_bytes`` the most one device sends over the local interconnect,
    ``host_bytes`` the most one host sends to other hosts (0 where no group spans hosts)."""

    local_bytes: float
    host_bytes: float

    @property
    def crosses_hosts(self) -> bool:
        return self.host_bytes > 0


def split_collective(per_device_bytes: float, groups: Sequence[Sequence[int]], topology: Topology,
                     permute_pairs: Sequence[tuple[int, int]] = ()) -> CollectiveSplit:
    """Split one collective's per-device ring bytes into local and host-link traffic on ``topology``.
    ``permute_pairs``: a collective-permute's (source, target) pairs, used instead of rings."""
    local: dict[int, float] = {}
    host: dict[int, float] = {}
    hops: list[tuple[int, int]] = list(permute_pairs)
    if not hops:
        for group in groups:
            if len(group) < 2:
                continue
            ring = sorted(group, key=lambda d: (_process(topology, d), d))
            hops.extend(zip(ring, ring[1:] + ring[:1], strict=True))
    for src, dst in hops:
        p_src, p_dst = _process(topology, src), _process(topology, dst)
        if p_src == p_dst:
            local[src] = local.get(src, 0.0) + per_device_bytes
        else:
            host[p_src] = host.get(p_src, 0.0) + per_device_bytes
    return CollectiveSplit(max(local.values(), default=0.0), max(host.values(), default=0.0))


def _process(topology: Topology, device: int) -> int:
    if not 0 <= device < topology.devices:
        raise GroupsError(f"device {device} of a replica group is outside the program's {topology.devices} devices")
    return topology.process_of[device]


def collective_time(split: CollectiveSplit, local_bw: float | None, host_bw: float | None) -> tuple[float, bool]:
    """The time of one collective on its slowest kind of link, and whether it is a lower bound (a link it uses
    has no known bandwidth, so that link's bytes add no time)."""
    times, unknown = [0.0], False
    for amount, bandwidth in ((split.local_bytes, local_bw), (split.host_bytes, host_bw)):
        if amount <= 0:
            continue
        if bandwidth:
            times.append(amount / bandwidth)
        else:
            unknown = True
    return max(times), unknown


def permute_pairs(attr: str) -> list[tuple[int, int]]:
    """A collective-permute's ``source_target_pairs={{0,1},{1,0}}``."""
    return [(int(a), int(b)) for a, b in re.findall(r"\{\s*(\d+)\s*,\s*(\d+)\s*\}", attr)]



@dataclass(frozen=True)
class HostTraffic:
    """A program's collectives on a topology of several processes: bytes over the local interconnect (the most
    one device sends) and over the host links (the most one host sends), the time they take on their slower link,
    summed over collectives, and whether that time is a lower bound (a link without a known bandwidth)."""

    local_bytes: float
    host_bytes: float
    time_s: float
    lower_bound: bool
    crossing: tuple[str, ...]  # the collectives whose groups span hosts
    unread: tuple[str, ...] = ()  # collectives whose groups could not be read (counted as local)

    def to_dict(self) -> dict[str, object]:
        return {"local_bytes": self.local_bytes, "host_bytes": self.host_bytes, "time_s": self.time_s,
                "lower_bound": self.lower_bound, "crossing": list(self.crossing), "unread": list(self.unread)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostTraffic:
        return cls(float(data["local_bytes"]), float(data["host_bytes"]), float(data["time_s"]),
                   bool(data["lower_bound"]), tuple(data.get("crossing") or ()), tuple(data.get("unread") or ()))


def host_traffic(module: HloModule, topology: Topology, local_bw: float | None,
                 host_bw: float | None) -> HostTraffic:
    """Split every executed collective of ``module`` (one device's program) on ``topology``."""
    local = host = seconds = 0.0
    lower, crossing, unread = False, [], []
    for comp, inst, times in executed(module):
        amount = collective_bytes(comp, inst, topology.devices)
        if not amount:
            continue
        try:
            if inst.opcode.removesuffix("-start") == "collective-permute":
                split = split_collective(amount, [], topology, permute_pairs(inst.attrs.get("source_target_pairs", "")))
            else:
                split = split_collective(amount, expand_groups(inst.attrs.get("replica_groups", ""), topology.devices),
                                         topology)
        except GroupsError as exc:
            unread.append(f"{inst.name}: {exc}")
            split = CollectiveSplit(amount, 0.0)
        took, unknown = collective_time(split, local_bw, host_bw)
        local += split.local_bytes * times
        host += split.host_bytes * times
        seconds += took * times
        lower = lower or unknown
        if split.crosses_hosts:
            crossing.append(inst.name)
    return HostTraffic(local, host, seconds, lower, tuple(crossing), tuple(unread))
