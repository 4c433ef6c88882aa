"""One measurement of a program that spans processes: its topology, the stopping decision taken together, and
every process's device times gathered and matched run by run (the slowest device of all decides each run).
The pure parts are :mod:`pytest_roofline.analysis.runs.hosts` and :mod:`pytest_roofline.analysis.runs.across_processes`;
the messages go through
:mod:`.peers`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...analysis.runs.across_processes import MatchError, Processes, ProcessTimes, match_runs, per_device_medians
from ...analysis.runs.hosts import HostTraffic, Topology
from ..compiled import input_shardings
from ..timing import Agree, Timed
from .peers import PeerError, Peers

__all__ = ["agree_with", "gather", "start_together", "topology_of"]


def topology_of(compiled: Any) -> Topology | None:
    """The process of each device of the compiled program, in the order of its device assignment (the indices
    its collectives' replica groups use); None where the program does not say."""
    shardings = input_shardings(compiled)
    try:
        devices = list(shardings[0]._device_assignment)
    except (AttributeError, IndexError, TypeError):
        return None
    return Topology(tuple(int(d.process_index) for d in devices)) if devices else None


def start_together(peers: Peers) -> None:
    """Wait until every process is ready to time this kernel (compiled, calibrated), and check that they all
    measure the same kernel: a process that runs other tests would deadlock in the kernel's collectives."""
    peers.status(f"ready to time kernel {peers.label!r}")
    labels = peers.exchange("ready", peers.label)
    if len(set(labels)) > 1:
        listed = ", ".join(f"process {i}: {name!r}" for i, name in enumerate(labels))
        raise PeerError(f"roofline: the processes measure different kernels at measurement {peers.measurement} "
                        f"({listed}): every process must run the same tests in the same order")
    peers.status(f"timing kernel {peers.label!r}")


def agree_with(peers: Peers) -> Agree:
    """The stopping decision of all processes: stop once every one is done, or as soon as one is out of budget."""

    def agree(vote: str) -> bool:
        votes = peers.exchange("vote", vote)
        return "out" in votes or "more" not in votes

    return agree


def gather(peers: Peers, timed: Timed, topology: Topology | None, hosts: HostTraffic | None, flops: float,
           bytes_accessed: float) -> tuple[Timed, Processes]:
    """Every process's device times, matched run by run: the returned timing's runs are the slowest device's of
    all processes; the live ceilings' reference runs are process 0's, so that every process judges alike."""
    events = timed.events
    mine = dict(events.per_device_s) if events is not None and events.per_device_s else \
        {"all devices": timed.timing.per_run_s}
    payload = {"per_device_s": {d: list(t) for d, t in mine.items()}, "reference_s": list(timed.reference_s),
               "reference_faults": list(timed.reference_faults)}
    everyone = peers.exchange_json("times", payload)
    times = [ProcessTimes.from_dict({"process": i, "per_device_s": p["per_device_s"]}) for i, p in enumerate(everyone)]
    try:
        matched = match_runs(times)
    except MatchError as exc:
        raise PeerError(f"roofline: kernel {peers.label!r}: {exc}") from None
    peers.status(f"measured kernel {peers.label!r}")
    first = everyone[0]
    combined = replace(timed, timing=replace(timed.timing, per_run_s=matched.per_run_s),
                       reference_s=tuple(float(x) for x in first["reference_s"]),
                       reference_faults=tuple(int(x) for x in first["reference_faults"]))
    devices = topology.devices if topology is not None else sum(len(t.per_device_s) for t in times)
    info = Processes(peers.count, peers.index, topology.describe() if topology else f"{peers.count} processes",
                     matched.per_process_median_s, per_device_medians(times), matched.decided_by,
                     decided_share=matched.decided_share, global_flops=flops * devices,
                     global_bytes=bytes_accessed * devices, hosts=hosts)
    return combined, info
