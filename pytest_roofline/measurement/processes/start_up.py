"""The start-up of the processes of one multi-controller program (``jax.distributed.initialize``): one calibration
for every process of a machine, and every process leaving start-up together.

Without this, the first process to take the device lock calibrated (tens of seconds, minutes on a slow CPU) while
the others waited for it, then went on into its first test; a cross-process step there (a ``device_put`` to a
sharding over every process's devices, which checks the value across processes) waited for processes that were
still calibrating, beyond the 30 s a gloo collective waits. Here the processes of each machine (same host, same
calibration key) choose the first of them to resolve the hardware and calibrate; it hands its figures to the
others through JAX's key-value store (a contended calibration too, which is never cached, so the others would
have calibrated again), and no process leaves until every one has its hardware."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import TypeVar

from ...hardware.calibration_cache import adopt_figures, shared_figures
from ...hardware.calibration_figures import CalibrationFigures
from .peers import Peers, peer_timeout_s, processes_started

__all__ = ["resolve_together"]

T = TypeVar("T")
_DONE: list[bool] = [False]  # this process has started with the others (once per process)


def resolve_together(platform: str, device_kind: str, resolve: Callable[[bool | str], T],
                     recalibrate: bool | str) -> T:
    """``resolve(recalibrate)`` (the hardware and its ceilings), the first time in a process of a program that spans
    processes done with the others: calibrated once per machine, and returned to every process at once. Once done,
    or in a single process, ``resolve`` alone."""
    started = processes_started()
    if started is None or _DONE[0]:
        return resolve(recalibrate)
    _DONE[0] = True
    from jax._src.distributed import global_state  # the client JAX's own multi-host utilities use

    from ..machine.calibration_kernels import machine_key

    index, count = started
    peers = Peers(index, count, global_state.client, "start-up", peer_timeout_s(), 0, watched=False)
    key = machine_key(platform, device_kind)
    machines = peers.exchange("machine", json.dumps([socket.gethostname(), key], sort_keys=True))
    first = machines.index(machines[index])
    if first == index:
        with peers.busy("detecting the hardware and calibrating for the processes of this machine"):
            found = resolve(recalibrate)
        shared = shared_figures(key)
        peers.exchange_json("calibration", [shared[0].to_dict(), shared[1]] if shared else None)  # or null
    else:
        peers.status(f"waiting for process {first} to calibrate this machine")
        posted = peers.exchange_json("calibration", None)[first]
        if posted:
            adopt_figures(key, CalibrationFigures.from_dict(posted[0]),
                          f"calibrated by process {first} of this program: {posted[1]}")
        with peers.failure_said("detecting the hardware"):
            found = resolve(False)
    peers.status("started")
    peers.exchange("started", "")  # every process leaves start-up together
    return found
