"""What the CPU is: model, vendor, clock, ISA flags and cores (from /proc/cpuinfo and cpufreq), and the
theoretical f32 peak those imply. Reads files; no JAX."""

from __future__ import annotations

import datetime as _dt
import os
import platform as _platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .spec import Ceiling

__all__ = ["cpu_info", "theoretical_cpu_peak", "last_level_cache_bytes", "parse_cache_size", "cpu_times",
           "Contention", "machine_memory", "minor_page_faults", "page_size", "process_state", "proc_stat"]


def cpu_info(cpuinfo_text: str | None = None) -> dict[str, Any]:
    """Model name, vendor, clock (MHz) and ISA flags from /proc/cpuinfo (empty fields where unknown)."""
    if cpuinfo_text is None:
        try:
            cpuinfo_text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo_text = ""
    fields: dict[str, str] = {}
    for line in cpuinfo_text.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            fields.setdefault(key.strip(), value.strip())
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        mhz = float(fields.get("cpu MHz", "0"))
    except ValueError:
        mhz = 0.0
    clock = "reported clock (/proc/cpuinfo; a VM often reports the base clock, boost runs faster)"
    try:
        max_khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text().strip()
        if cpuinfo_text and max_khz.isdigit():
            mhz, clock = int(max_khz) / 1e3, "maximum clock (cpufreq)"
    except OSError:
        pass
    return {
        "model": fields.get("model name") or _platform.processor() or _platform.machine(),
        "vendor": fields.get("vendor_id", ""),
        "mhz": mhz,
        "clock": clock,
        "flags": fields.get("flags", "").split(),
        "cores": cores,
        # Family, model and stepping tell CPUs apart that share a model name (a VM's "AMD EPYC" is a Zen 3 or a
        # Zen 4 alike)
        "generation": "/".join(fields.get(k, "") for k in ("cpu family", "model", "stepping")),
    }


def theoretical_cpu_peak(info: Mapping[str, Any]) -> tuple[float, str] | None:
    """cores x clock x f32 FLOPs per cycle per core, from the ISA flags; None where it cannot be derived."""
    flags = set(info.get("flags", []))
    mhz = float(info.get("mhz") or 0)
    if not mhz:
        return None
    if "avx512f" in flags:
        # AMD Zen 4 runs AVX-512 as two 256-bit halves: 2 FMA pipes x 8 lanes x 2 = 32; Intel: 64.
        per_cycle = 32 if info.get("vendor") == "AuthenticAMD" else 64
        isa = "AVX-512" + (" (Zen 4: two 256-bit FMA pipes)" if per_cycle == 32 else " (2 FMA units)")
    elif "avx2" in flags and "fma" in flags:
        per_cycle, isa = 32, "AVX2 + FMA (2 FMA units)"
    elif "sse2" in flags:
        per_cycle, isa = 8, "SSE2"
    else:
        return None
    cores = int(info.get("cores") or 1)
    clock = info.get("clock", "reported clock")
    how = (f"{cores} cores x {mhz / 1e3:.2f} GHz {clock} x {per_cycle} f32 FLOP/cycle "
           f"({isa}, assumed from CPU flags)")
    return cores * mhz * 1e6 * per_cycle, how




def parse_cache_size(text: str) -> int | None:
    """A sysfs cache size ("491520K", "32M", "2048") in bytes; None when unreadable."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale if digits.isdigit() else None


def last_level_cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """The size of the largest data (or unified) cache of CPU 0 as the system reports it (a VM reports the
    host's cache, which other tenants share); None where the system does not say."""
    best: tuple[int, int] | None = None
    for entry in sorted(Path(root).glob("index*")):
        try:
            kind = (entry / "type").read_text().strip()
            level = int((entry / "level").read_text().strip())
            size = parse_cache_size((entry / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        if best is None or (level, size) > best:
            best = (level, size)
    return best[1] if best else None


def cpu_times(stat_text: str | None = None) -> tuple[float, float] | None:
    """(busy, total) CPU seconds over all CPUs since boot, from the first line of /proc/stat. Busy counts user,
    nice, system, irq, softirq and steal (time the hypervisor gave to other machines); None where unreadable."""
    if stat_text is None:
        try:
            stat_text = Path("/proc/stat").read_text(encoding="utf-8")
        except OSError:
            return None
    first = stat_text.splitlines()[0].split() if stat_text else []
    if len(first) < 5 or first[0] != "cpu":
        return None
    try:
        values = [float(v) for v in first[1:9]]
    except ValueError:
        return None
    values += [0.0] * (8 - len(values))
    user, nice, system, idle, iowait, irq, softirq, steal = values
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = user + nice + system + irq + softirq + steal
    return busy / tick, (busy + idle + iowait) / tick


class Contention:
    """How much of the machine's CPU time other processes (and other VMs, through steal time) used while the
    ``with`` block ran: ``share`` in 0..1 of all CPUs, None where /proc/stat cannot be read."""

    def __enter__(self) -> Contention:
        self._start = cpu_times()
        self._own = _own_cpu_seconds()
        self.share: float | None = None
        return self

    def __exit__(self, *exc: object) -> None:
        end = cpu_times()
        if self._start is None or end is None:
            return
        busy = end[0] - self._start[0]
        total = end[1] - self._start[1]
        others = busy - (_own_cpu_seconds() - self._own)
        self.share = min(max(others / total, 0.0), 1.0) if total > 0 else None


def _own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


_NO_LIMIT = 2**60  # cgroup v1 writes "no limit" as a page-rounded 2^63 - 1


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _cgroup_limit(root: Path, proc_cgroup: str) -> tuple[int, str] | None:
    """The memory limit of this process's cgroup (v2 ``memory.max``, v1 ``memory.limit_in_bytes``)."""
    candidates: list[Path] = []
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        rel = path.lstrip("/")
        if controllers == "":  # cgroup v2
            candidates += [root / rel / "memory.max", root / "memory.max"]
        elif "memory" in controllers.split(","):  # cgroup v1
            candidates += [root / "memory" / rel / "memory.limit_in_bytes", root / "memory" / "memory.limit_in_bytes"]
    for file in candidates:
        text = _read(file)
        if text and text.isdigit() and 0 < int(text) < _NO_LIMIT:
            return int(text), str(file)
    return None


def machine_memory(meminfo_text: str | None = None, proc_cgroup: str | None = None,
                   cgroup_root: str = "/sys/fs/cgroup", date: str = "") -> Ceiling | None:
    """The memory a CPU program may use: ``MemTotal`` of /proc/meminfo, or this process's cgroup limit where
    that is lower. None where neither can be read (not Linux)."""
    if meminfo_text is None:
        meminfo_text = _read(Path("/proc/meminfo")) or ""
    if proc_cgroup is None:
        proc_cgroup = _read(Path("/proc/self/cgroup")) or ""
    date = date or _dt.date.today().isoformat()
    total = None
    for line in meminfo_text.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                total = int(fields[1]) * (1024 if fields[2:3] == ["kB"] else 1)
    limit = _cgroup_limit(Path(cgroup_root), proc_cgroup)
    if limit is not None and (total is None or limit[0] < total):
        return Ceiling(float(limit[0]), "measured", f"the cgroup memory limit of this process ({limit[1]})", date)
    if total is None:
        return None
    return Ceiling(float(total), "measured", "MemTotal in /proc/meminfo of this machine", date)


def minor_page_faults() -> int | None:
    """Minor page faults of this process so far (``getrusage``: every thread, XLA's workers included); None
    where the operating system does not count them (no ``resource`` module, as on Windows)."""
    try:
        import resource
    except ImportError:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def page_size() -> int:
    """The base page size of this machine in bytes (4096 where the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return 4096


def thread_times_ns() -> tuple[int, int] | None:
    """Nanoseconds this process's threads have spent on a CPU and waiting for one while ready to run, summed over
    its threads so far (Linux ``/proc/self/task/*/schedstat``); None where the system does not say. Waiting
    time is what other processes (or threads) took from this one: the direct measure of CPU contention."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    on_cpu = waiting = 0
    read = 0
    for tid in tasks:  # read twice per timed run: plain file descriptors, a third of a Python file object's cost
        try:
            fd = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            try:
                fields = os.read(fd, 256).split()
            finally:
                os.close(fd)
            on_cpu += int(fields[0])
            waiting += int(fields[1])
            read += 1
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile, or no schedstat
            continue
    return (on_cpu, waiting) if read else None


def process_state(pid: int) -> str:
    """``"running"``, ``"stopped"`` (SIGSTOP, Ctrl-Z, a debugger) or ``"gone"``: a process's state from /proc
    (``"running"`` where /proc does not say)."""
    try:
        state = proc_stat(pid)[0]
    except FileNotFoundError:
        return "gone"
    except (OSError, IndexError):
        return "running"
    return "stopped" if state in ("T", "t") else "gone" if state in ("Z", "X") else "running"


def proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name: the state, then the parent's pid, ..."""
    with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
        return fh.read().rsplit(")", 1)[-1].split()

