"""Where a loop's time went on the device, from one profile of back-to-back calls: the program's own device time
(what the trace reader counts per run), every other activity the profiler recorded on the device (a kernel,
copy or memset not attributed to the program), and the device's idle time between them. It tells apart the
reasons a wall clock over many calls reads more than the trace's device time per run: the device idles between
calls (the host's share), the device does work the reader does not count, or the kernels themselves ran slower
in the loop than when measured (compare the program's time per run here with measure()'s). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .trace_events import RunTimes, TraceEvent, device_events

__all__ = ["DeviceTimeline", "device_timeline", "union_ns"]

# Lines of a device plane that summarize other events (a module's span includes its gaps): not activity.
_SUMMARY_LINES = ("XLA Modules", "Steps", "XLA TraceMe")


def union_ns(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of the union of ``(start, end)`` intervals."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


@dataclass(frozen=True)
class DeviceTimeline:
    """A profiled loop of ``runs`` calls, in seconds over the whole loop (divide by ``runs`` for per call)."""

    runs: int
    program_s: float  # the program's device time as the trace reader counts it (sum over the runs)
    busy_s: float  # the union of every activity on the device (the program's and any other)
    span_s: float  # from the first activity's start to the last one's end
    other_s: float  # busy time outside the program's events: device work the reader does not count
    own_s: float  # the union of the program's own events (its runs' time less the gaps inside them)

    @property
    def idle_s(self) -> float:
        """Device idle time outside the program's runs (a gap inside a run is part of the run's time)."""
        inside = max(self.program_s - self.own_s, 0.0)
        return max(self.span_s - self.busy_s - inside, 0.0)

    def lines(self, wall_s: float | None = None) -> list[str]:
        """The loop per call, and the gap between the wall clock and the program's device time, split."""
        ms = 1e3 / max(self.runs, 1)
        out = [f"per call over {self.runs} calls: program {self.program_s * ms:.3f} ms (the reader's device time), "
               f"other device work {self.other_s * ms:.3f} ms, device idle between runs {self.idle_s * ms:.3f} ms, "
               f"span {self.span_s * ms:.3f} ms"]
        if wall_s is not None:
            out.append(f"wall clock {wall_s * ms:.3f} ms per call: {wall_s / self.program_s - 1:+.1%} over the "
                       f"program's device time, of which other device work {self.other_s / self.program_s:+.1%}, "
                       f"device idle {self.idle_s / self.program_s:+.1%}, outside the device's span "
                       f"{(wall_s - self.span_s) / self.program_s:+.1%}")
        return out


def device_timeline(events: Sequence[TraceEvent], platform: str, runs: RunTimes) -> DeviceTimeline:
    """The timeline of the device(s) the program ``runs`` ran on, over the whole profile."""
    activity = [e for e in device_events(list(events), platform) if e.line not in _SUMMARY_LINES
                and e.end_ns > e.start_ns]
    if platform == "cpu":  # the host plane holds every thread's events: XLA's op events are the device's work
        activity = [e for e in activity if "hlo_op" in e.stats or "run_id" in e.stats]
    planes = {e.plane for e in runs.op_events}
    activity = [e for e in activity if e.plane in planes] or activity
    program = {(e.plane, e.line, e.start_ns, e.end_ns) for e in runs.op_events}
    spans = [(e.start_ns, e.end_ns) for e in activity]
    own = [(e.start_ns, e.end_ns) for e in activity if (e.plane, e.line, e.start_ns, e.end_ns) in program]
    busy, mine = union_ns(spans), union_ns(own)
    span = (max(end for _, end in spans) - min(start for start, _ in spans)) if spans else 0.0
    return DeviceTimeline(len(runs.per_run_s), sum(runs.per_run_s), busy * 1e-9, span * 1e-9,
                          max(busy - mine, 0.0) * 1e-9, mine * 1e-9)
