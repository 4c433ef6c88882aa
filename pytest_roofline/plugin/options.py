"""The plugin's command-line options, their ini twins and environment variables: names, flags and help, and the
marker's short line. The plugin's entry point imports this alone at start-up (no pytest, no JAX, nothing of the
plugin's machinery): a pytest run that never measures pays for these names only. How each value is parsed and
checked is :mod:`.settings`."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

__all__ = ["Option", "OPTIONS", "MARKER_LINE"]

# The marker as a run that does not list markers registers it (``pytest --markers`` shows the full signature).
MARKER_LINE = "roofline(min=None, **settings): measure this test's kernels against the roofline (pytest --markers)"


@dataclass(frozen=True)
class Option:
    """One setting: its flag, ini key and environment variable are named after it (``min``: ``--roofline-min``,
    ``roofline_min``, ``PYTEST_ROOFLINE_MIN``)."""

    name: str  # attribute of Settings
    kind: str  # "float", "bool", "path", "str"
    help: str
    _: KW_ONLY
    metavar: str | None = None

    @property
    def flag(self) -> str:
        """The command-line flag."""
        return "--roofline-" + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return "roofline_" + self.name

    @property
    def env(self) -> str:
        return "PYTEST_ROOFLINE_" + self.name.upper()


OPTIONS: tuple[Option, ...] = (
    Option("min", "float",
           "fail roofline kernels whose utilization (roofline time / measured time) is below this fraction, "
           "in (0, 1]; without a threshold anywhere kernels are measured and reported, never failed", metavar="FLOAT"),
    Option("hardware", "str",
           "measure against this hardware table entry (e.g. 'H100 SXM') instead of the detected device",
           metavar="NAME"),
    Option("config", "path",
           "YAML file with a suite threshold (min), per-test thresholds by test-id pattern (thresholds) "
           "and hardware overrides (devices)", metavar="PATH"),
    Option("calibrate", "bool",
           "re-measure the calibrated ceilings (CPU) once in this session instead of using the cache"),
    Option("report", "path",
           "write every measured kernel to this JSON file (atomically)", metavar="PATH"),
    Option("warn_only", "bool",
           "report kernels below their threshold as warnings instead of failing the test"),
    Option("ceilings", "str",
           "which ceilings to measure against: auto (live on CPU, datasheet on accelerators), datasheet, "
           "calibrated, or live (calibrated, scaled by a reference kernel run beside each timed run)", metavar="KIND"),
    Option("model", "str",
           "which roofline the threshold is checked against: program (one max() over the whole program, "
           "default) or ops (the sum of per-op roofline times, tighter for ops that run one after another)",
           metavar="MODEL"),
    Option("first_touch", "str",
           "whether the roofline includes the first touch of each kernel's fresh pages (a CPU's page faults on "
           "new output buffers, calibrated on the machine): include (default) or exclude (main memory and "
           "compute alone); both utilizations are reported", metavar="MODE"),
    Option("cache", "str",
           "the cache state kernels are measured in: cold (the last-level cache is evicted before every timed "
           "run, outside the timing), warm (runs back to back) or auto (default: cold where a kernel's working "
           "set fits the last-level cache, warm where it does not, and on a TPU)", metavar="STATE"),
    Option("counts", "str",
           "whose FLOPs kernels are judged on: compiled (the compiled program's, default) or source (the work the "
           "program as written asks for, model-FLOPs utilization: a ragged dot XLA runs dense is judged on its "
           "useful work)", metavar="WHOSE"),
    Option("trace_dir", "path",
           "where to save the trace (Perfetto, TensorBoard/XProf) and optimized HLO of failing kernels "
           "(default: .pytest_cache/d/roofline-traces, or a temporary directory)", metavar="PATH"),
    Option("history", "path",
           "add this run's JSON report to this directory (named by time and commit): the history that "
           "'pytest-roofline history' reads and --roofline-baseline can compare with",
           metavar="DIR"),
    Option("baseline", "path",
           "a report, or a history directory whose recent complete runs form the baseline: fail a kernel "
           "whose utilization dropped from it beyond a noise-aware gate", metavar="PATH"),
    Option("max_drop", "float",
           "the smallest drop from the baseline that fails, a fraction in (0, 1) (default 0.05 against a "
           "history, 0.10 against one report; the history's noise can widen it)",
           metavar="FRACTION"),
    Option("html", "path",
           "write a self-contained HTML report with roofline charts at the end of the run (needs "
           "pip install 'pytest-roofline[html]')", metavar="PATH"),
    Option("trace_all", "bool",
           "save traces of every measured kernel, not only failing ones"),
    Option("survey", "bool",
           "profile every test and report every jitted program it runs, once per compiled program, worst first by "
           "time lost; programs below --roofline-min are named (a warning), those the YAML config's 'programs' "
           "section names fail the tests that ran them below it"),
    Option("survey_strict", "bool",
           "--roofline-survey, and fail the tests that ran a program below --roofline-min"),
)
