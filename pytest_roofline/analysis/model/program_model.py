"""The roofline of a program before (or without) running it: its work, the ceilings each share meets, the
program-level estimate and the per-op rows. Shared by ``measure()`` and ``pytest-roofline analyze``. Pure."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from ...hardware.peaks import peak_for_class
from ...hardware.spec import HardwareSpec
from ..program.counts import Counts, Work, work_of
from ..program.hlo_reader import HloModule
from ..runs.hosts import HostTraffic, Topology, host_traffic
from .loop_reuse import Reuse, loop_reuse, rows_with_reuse, with_reuse
from .per_op import OpRow, op_rows
from .roofline import RooflineEstimate, estimate
from .work_shares import CeilingUse, MemoryLevel, compute_ceilings, dot_precision, memory_level

__all__ = ["ProgramModel", "program_model"]


@dataclass(frozen=True)
class ProgramModel:
    """The roofline of the program before it runs: its work, the ceilings it meets, the estimate, op rows."""

    work: Work
    uses: list[CeilingUse]
    estimate: RooflineEstimate
    rows: list[OpRow]
    memory: MemoryLevel  # the bandwidth its bytes meet (last-level cache or main memory)
    hosts: HostTraffic | None = None  # its collectives split between local and host links (several processes)
    _: KW_ONLY
    reuse: Reuse = Reuse()  # the bytes its loops re-read from the cache


def program_model(spec: HardwareSpec, counts: Counts, module: HloModule, devices: int,
                  flops: float | None = None, bytes_accessed: float | None = None,
                  *, transcendentals: float | None = None, working_set: float | None = None,
                  cold_written: float | None = None, topology: Topology | None = None) -> ProgramModel:
    """The model of ``module`` on ``spec``; analytic counts given by the user replace the compiler's.
    ``working_set``: the bytes of the program's buffers, which decide whether its bytes meet the last-level
    cache's bandwidth or main memory's (:func:`~.work_shares.memory_level`); ``cold_written``: the runs start with
    an evicted cache, and write this many bytes (:func:`~.work_shares.cold_level`). ``topology``: the program spans
    several processes (hosts): its collectives' bytes are split between the local interconnect and the host
    link (:mod:`..runs.hosts`)."""
    precision = dot_precision(counts)
    interconnect = spec.interconnect_bandwidth.value if spec.interconnect_bandwidth else None
    total = bytes_accessed if bytes_accessed is not None else counts.bytes_accessed
    # the per-op rows meet the same bandwidth as the whole program (but for what loops re-read from the cache)
    level = memory_level(spec, working_set, (total, cold_written) if cold_written is not None else None)
    rows = op_rows(module, lambda cls: peak_for_class(spec, cls, precision)[1].value,
                   peak_for_class(spec, "vector")[1].value, level.ceiling.value, interconnect,
                   devices=devices)
    reuse = loop_reuse(module, spec) if bytes_accessed is None else Reuse()
    rows = rows_with_reuse(rows, reuse, level.ceiling.value, spec) if not level.in_cache else rows
    level = with_reuse(level, reuse, total, spec)
    collective = sum(r.collective_bytes for r in rows)
    work = work_of(counts, flops, bytes_accessed, transcendentals, collective)
    uses = compute_ceilings(spec, counts, work.flops, flops is not None)
    trans, integer = spec.transcendental, spec.integer
    hosts = None
    if topology is not None and topology.processes > 1:
        link = spec.host_link_bandwidth
        hosts = host_traffic(module, topology, interconnect, link.value if link else None)
    roof = estimate({u.work: (u.amount, u.ceiling.value) for u in uses}, work.bytes_accessed,
                    level.ceiling.value, collective, interconnect, work.transcendentals,
                    transcendental_rate=trans.value if trans else None,
                    comms_time_s=hosts.time_s if hosts is not None else None,
                    integer_time_s=work.int_ops / integer.value if integer is not None else 0.0)
    if work.transcendentals and trans is not None:
        uses.append(CeilingUse("transcendentals", work.transcendentals, "transcendental", trans))
    if work.int_ops and integer is not None:
        uses.append(CeilingUse("integer ops", work.int_ops, "integer", integer))
    uses.append(CeilingUse("bytes", work.bytes_accessed, "cache" if level.in_cache else "memory", level.ceiling,
                           level.note))
    if hosts is not None:
        uses.extend(_host_uses(spec, hosts))
    elif collective and spec.interconnect_bandwidth is not None:
        uses.append(CeilingUse("collective bytes", collective, "interconnect", spec.interconnect_bandwidth))
    return ProgramModel(work, uses, roof, rows, level, hosts, reuse=reuse)


def _host_uses(spec: HardwareSpec, hosts: HostTraffic) -> list[CeilingUse]:
    """The ceilings a multi-process program's collectives meet (those without a known bandwidth are in the
    result's notes: the interconnect term is then a lower bound)."""
    uses = []
    if hosts.local_bytes and spec.interconnect_bandwidth is not None:
        uses.append(CeilingUse("collective bytes within a host", hosts.local_bytes, "interconnect",
                               spec.interconnect_bandwidth))
    if hosts.host_bytes and spec.host_link_bandwidth is not None:
        uses.append(CeilingUse("collective bytes across hosts", hosts.host_bytes, "host link",
                               spec.host_link_bandwidth))
    return uses
