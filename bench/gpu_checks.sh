#!/usr/bin/env bash
# Every check of docs/gpu.md that a one-GPU host can run, one after the other, each output in DIR:
#
#     bash bench/gpu_checks.sh DIR
#
# Assumes pytest-roofline is importable (pip install -e .) and `pytest-roofline` is on the PATH. Each check's
# output starts with the command; a failing check does not stop the others. Outputs:
#   DIR/live.txt        bench/gpu_live_check.py (datasheet, calibrated and live ceilings; the cuBLAS gemm's counts)
#   DIR/suite.txt       the example suite with --roofline-report/--roofline-html/--roofline-trace-all, then
#                       `pytest-roofline analyze` on one saved trace, tests/test_pallas.py, the cache states
#   DIR/gpu.json        the example suite's JSON report (memory, clocks)
#   DIR/gpu.html        its HTML report
#   DIR/timing.txt      bench/independent_timing.py, then bench/ab_demo.py
set -u
out=${1:?usage: gpu_checks.sh DIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
export PATH="$("$py" -c "import os, sys; print(os.path.dirname(sys.executable))"):$PATH"  # its pytest-roofline
run() {  # run LOG CMD...: append the command and its output to LOG
    local log=$1; shift
    { echo; echo "\$ $*"; echo "[$(date -u '+%Y-%m-%d %H:%M:%S') UTC]"; } >>"$log"
    "$@" >>"$log" 2>&1
    echo "[exit $?]" >>"$log"
}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; "$py" -c 'import jax; print(jax.__version__, jax.devices())'; } >"$out/suite.txt" 2>&1
cp "$out/suite.txt" "$out/timing.txt"
run "$out/suite.txt" "$py" -m pytest example_suite -v -p no:cacheprovider --roofline-report="$out/gpu.json" \
    --roofline-html="$out/gpu.html" --roofline-trace-all --roofline-trace-dir=/tmp/traces
run "$out/suite.txt" ls /tmp/traces
first=$(ls -d /tmp/traces/*/ 2>/dev/null | head -1)
[ -n "$first" ] && run "$out/suite.txt" pytest-roofline analyze "$first"
run "$out/suite.txt" "$py" -m pytest tests/test_pallas.py -v -p no:cacheprovider
for state in cold warm; do
    run "$out/suite.txt" "$py" -m pytest example_suite -k donat -v -p no:cacheprovider --roofline-cache=$state
done
run "$out/timing.txt" "$py" bench/independent_timing.py
run "$out/live.txt" "$py" bench/gpu_live_check.py --save "$out/live"
run "$out/timing.txt" timeout 240 "$py" bench/ab_demo.py
