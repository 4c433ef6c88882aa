"""xdist workers on a CPU, measured: the example suite with ``-n 0``, then ``-n 2`` with each kernel measured
alone (the default), ``-n 2`` with other tests running beside a measurement (``PYTEST_ROOFLINE_CPU_WORKERS=shared``),
and the other way to share a CPU, each worker on its own cores: two pytest processes pinned with ``taskset``, one
core each, half of the suite each (their ceilings calibrated on one core, quietly, before they start). Per kernel:
device time and utilization side by side; then each way's wall time.

    python bench/workers_table.py [--suite example_suite] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALIBRATE = ("import jax, jax.numpy as jnp\n"
             "from pytest_roofline.measurement.machine.calibration_kernels import cpu_spec\n"
             "cpu_spec(jax.devices()[0].device_kind)\n")


def pytest(args: list[str], report: Path, env: dict[str, str], pin: str | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "pytest", *args, "-q", "-p", "no:cacheprovider", f"--roofline-report={report}"]
    if pin is not None:
        command = ["taskset", "-c", pin, *command]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(*procs: subprocess.Popen[str]) -> float:
    start = time.perf_counter()
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode not in (0, 1):
            print(out[-3000:], file=sys.stderr)
            raise SystemExit(f"pytest exited {proc.returncode}")
    return time.perf_counter() - start


def kernels(*reports: Path) -> dict[str, dict[str, float | str]]:
    out: dict[str, dict[str, float | str]] = {}
    for path in reports:
        for rec in json.loads(path.read_text())["results"]:
            name = f"{rec['nodeid'].split('::')[-1]} [{rec['label']}]"
            out[name] = {"device": rec["result"]["device_time_s"], "util": rec["result"]["utilization"],
                         "verdict": rec["verdict"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="example_suite")
    parser.add_argument("--keep", type=Path, help="a folder to keep the reports in")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="workers-table-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ROOFLINE_CPU_WORKERS"}
    ids = [line for line in subprocess.run([sys.executable, "-m", "pytest", args.suite, "--co", "-q",
                                            "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True,
                                           text=True).stdout.splitlines() if "::" in line]
    subprocess.run(["taskset", "-c", "0", sys.executable, "-c", CALIBRATE], env=env, check=True)  # one core, quiet
    ways: dict[str, tuple[dict[str, dict[str, float | str]], float]] = {}
    start = time.perf_counter()
    finished(pytest([args.suite], work / "n0.json", env))
    ways["-n 0"] = (kernels(work / "n0.json"), time.perf_counter() - start)
    for mode in ("alone", "shared"):
        start = time.perf_counter()
        finished(pytest([args.suite, "-n", "2"], work / f"{mode}.json", {**env, "PYTEST_ROOFLINE_CPU_WORKERS": mode}))
        ways[f"-n 2 {mode}"] = (kernels(work / f"{mode}.json"), time.perf_counter() - start)
    start = time.perf_counter()
    halves = [pytest(ids[i::2], work / f"core{i}.json", env, pin=str(i)) for i in (0, 1)]
    finished(*halves)
    ways["a core each"] = (kernels(work / "core0.json", work / "core1.json"), time.perf_counter() - start)
    names = sorted(ways["-n 0"][0], key=lambda n: -float(ways["-n 0"][0][n]["device"]))
    header = "| kernel | " + " | ".join(f"{w}: device, util" for w in ways) + " |"
    print(header)
    print("|---" * (len(ways) + 1) + "|")
    for name in names:
        cells = []
        for found, _ in ways.values():
            k = found.get(name)
            cells.append("-" if k is None else f"{float(k['device']) * 1e3:.3g} ms, {float(k['util']):.1%} "
                                               f"({k['verdict']})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| wall time | " + " | ".join(f"{seconds:.1f} s" for _, seconds in ways.values()) + " |")
    print(f"reports in {work}")


if __name__ == "__main__":
    main()
