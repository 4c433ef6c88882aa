"""One pytest-xdist worker per accelerator: before a worker's JAX starts, it sees only its own device
(``CUDA_VISIBLE_DEVICES``, ``HIP_VISIBLE_DEVICES`` or ``TPU_VISIBLE_CHIPS``), so workers measure concurrently on
different devices, and the timing lock (:mod:`..lock`, keyed by the visible devices) is per device. On a CPU
nothing is pinned and every worker shares the host-wide lock. No JAX: the devices are counted from the driver's
files, never by starting a backend. Pure but for :func:`list_accelerators`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Accelerators", "list_accelerators", "pin_worker", "Pinning", "CPU_WORKERS_ENV", "cpu_workers",
           "cpu_workers_line"]

CPU_WORKERS_ENV = "PYTEST_ROOFLINE_CPU_WORKERS"


@dataclass(frozen=True)
class Accelerators:
    """The devices of a host that workers can be spread over: the variable that selects them, and their ids."""

    variable: str  # CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, TPU_VISIBLE_CHIPS
    ids: tuple[str, ...]
    source: str  # where the list came from


@dataclass(frozen=True)
class Pinning:
    """A worker's device: the variable to set and why (``variable`` empty: nothing pinned, ``why`` says why)."""

    variable: str = ""
    value: str = ""
    why: str = ""


def _listed(env: Mapping[str, str], variable: str) -> tuple[str, ...] | None:
    raw = env.get(variable)
    if raw is None:
        return None
    return tuple(v.strip() for v in raw.split(",") if v.strip())


def list_accelerators(env: Mapping[str, str] | None = None, root: str = "/") -> Accelerators | None:
    """The accelerators of this host, from the variable the user set or the driver's files: NVIDIA
    (``/proc/driver/nvidia/gpus``), AMD (``/dev/kfd`` with ``/sys/class/kfd/kfd/topology/nodes``), TPU
    (``/dev/accel*``, ``/dev/vfio``); None where there are none (a CPU host)."""
    env = os.environ if env is None else env
    for variable in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS"):
        ids = _listed(env, variable)
        if ids is not None:
            return Accelerators(variable, ids, f"{variable}={env[variable]}")
    base = Path(root)
    nvidia = sorted((base / "proc/driver/nvidia/gpus").glob("*"))
    if nvidia:
        return Accelerators("CUDA_VISIBLE_DEVICES", tuple(str(i) for i in range(len(nvidia))),
                            f"{len(nvidia)} GPUs in /proc/driver/nvidia/gpus")
    nodes = [n for n in sorted((base / "sys/class/kfd/kfd/topology/nodes").glob("*"))
             if (n / "gpu_id").exists() and (n / "gpu_id").read_text().strip() not in ("", "0")]
    if nodes and (base / "dev/kfd").exists():
        return Accelerators("HIP_VISIBLE_DEVICES", tuple(str(i) for i in range(len(nodes))),
                            f"{len(nodes)} GPUs in the kfd topology")
    chips = sorted(p for p in (base / "dev").glob("accel*") if re.fullmatch(r"accel\d+", p.name))
    if chips:
        return Accelerators("TPU_VISIBLE_CHIPS", tuple(str(i) for i in range(len(chips))),
                            f"{len(chips)} TPU chips in /dev/accel*")
    return None


def pin_worker(worker: str | None, env: Mapping[str, str],
               accelerators: Callable[[], Accelerators | None] = list_accelerators) -> Pinning:
    """The device of xdist worker ``worker`` ("gw3": the fourth), round robin over the host's accelerators;
    nothing for the controller, a run without xdist, or a host with fewer than two accelerators."""
    match = re.fullmatch(r"gw(\d+)", worker or "")
    if match is None:
        return Pinning(why="not an xdist worker")
    if env.get("PYTEST_ROOFLINE_PIN_WORKERS", "1").strip().lower() in ("0", "false", "no", "off"):
        return Pinning(why="PYTEST_ROOFLINE_PIN_WORKERS is off")
    found = accelerators()
    if found is None:
        return Pinning(why="no accelerators: the CPU is shared, with one host-wide timing lock")
    if len(found.ids) < 2:
        return Pinning(why=f"one accelerator ({found.source})")
    index = int(match.group(1)) % len(found.ids)
    return Pinning(found.variable, found.ids[index],
                   f"worker {worker} on device {found.ids[index]} of {len(found.ids)} ({found.source})")


def cpu_workers(env: Mapping[str, str], accelerators: Callable[[], Accelerators | None] = list_accelerators) -> str:
    """How xdist workers share a CPU host (no accelerators): ``"alone"`` (the default: while a kernel is timed no
    other worker's test runs, and the others wait), or ``"shared"`` (``PYTEST_ROOFLINE_CPU_WORKERS=shared``: only
    two timings never overlap; other tests run beside a measurement). "" on a host with accelerators."""
    if accelerators() is not None:
        return ""
    mode = env.get(CPU_WORKERS_ENV, "alone").strip().lower() or "alone"
    if mode not in ("alone", "shared"):
        raise ValueError(f"{CPU_WORKERS_ENV}={env.get(CPU_WORKERS_ENV)!r}: must be 'alone' or 'shared'")
    return mode


def cpu_workers_line(workers: int, cores: int, mode: str) -> str:
    """The line a run with xdist workers on a CPU prints once at start: which way they share its cores."""
    if mode == "alone":
        how = ("each kernel is measured alone: while one is timed, no other worker's test runs (they wait); "
               f"{CPU_WORKERS_ENV}=shared lets them run beside it")
    else:
        how = (f"{CPU_WORKERS_ENV}=shared: two kernels are never timed at once, but other workers' tests run beside "
               "a measurement and slow it")
    return f"roofline: {workers} xdist workers share this CPU's {cores} cores: {how}"
