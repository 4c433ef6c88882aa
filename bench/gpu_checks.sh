#!/usr/bin/env bash
# The checks of docs/gpu.md that a one-GPU host can run, one after the other, each output in DIR:
#
#     bash bench/gpu_checks.sh DIR [CHECK ...]      (no CHECK: all of them, in this order)
#
# Assumes pytest-roofline is importable (pip install -e .) and `pytest-roofline` is on the PATH. Each check's
# output starts with the command and the time; a failing check does not stop the others; each has a time limit.
# Checks and their outputs:
#   suite      DIR/suite.txt: the example suite with --roofline-report/--roofline-html/--roofline-trace-all
#              (its warnings summary shows whether a line names pytest_roofline); DIR/gpu.json, DIR/gpu.html
#   analyze    DIR/suite.txt: `pytest-roofline analyze` on one trace the suite saved (needs `suite` first)
#   idle       DIR/suite.txt: the row-by-row softmax with --runxfail (its failure's `idle` and `census` lines)
#   pallas     DIR/suite.txt: tests/measurement/test_pallas.py
#   cache      DIR/suite.txt: the donated kernels with --roofline-cache=cold and =warm
#   timing     DIR/timing.txt: bench/independent_timing.py --repeats 200 (the profiled loop's split)
#   live       DIR/live.txt: bench/gpu_live_check.py (datasheet, calibrated and live ceilings)
#   cost       DIR/cost.txt: bench/measure_cost.py (where a suite's wall time goes)
#   ab         DIR/ab.txt: bench/ab_demo.py --rounds 6 (a regression explained op by op)
#   longlived  DIR/ab.txt: `pytest-roofline ab --base HEAD --long-lived --rounds 12` on two example kernels, in a
#              git copy of this tree (identical code on both sides)
#   frameworks DIR/frameworks.txt: tests/frameworks and bench/frameworks_table.py (flax, optax, equinox, diffrax,
#              tokamax importable: pip install -e '.[frameworks]', or a folder of them on PYTHONPATH)
#   prgate     DIR/prgate.txt: bench/pr_gate.py --rounds 6 (ab's programs pass: nothing changed, one kernel
#              changed: a loop, or a scaled sum; its rounds)
#   sidebyside DIR/sidebyside.txt: two pytest runs of two example kernels at once on the one GPU, into one history
#              directory (both runs kept; the second waits for the device lock and says who holds it)
#   quick      DIR/quick.txt: the quick loop (pytest tests -m "not slow") on this machine's JAX
#   floor      DIR/cost.txt: bench/measure_cost.py --repeats 2 (the example suite's wall time against its floor)
#   big        DIR/big.txt: bench/big_programs.py (mctx's MuZero search and a NUTS step: measure() against its
#              timed runs and compile; mctx and numpyro importable)
#   control    DIR/control.txt: loops and conditionals counted from a GPU trace and integer work (the control-flow
#              tests, diffrax, lineax/optimistix, numpyro, mctx; importable where installed, else skipped)
#   corpus     DIR/corpus.txt and DIR/corpus.tgz: bench/record_corpus.py (the recorded programs the CPU tests replay;
#              unpack the archive into tests/data/corpus and add the folder's row to its README)
#   kept       DIR/kept.txt: bench/kept_memory.py (what a long-lived ab side holds on the device over 20 tests)
#   survey     DIR/survey.txt and DIR/survey.json: the example suite with --roofline-survey (every program its
#              fixtures measure found in a GPU profile, with its counts), then bench/survey_gate_demo.py, then the
#              sampling of a long test (tests/measurement/test_survey_sampling.py on the GPU)
set -u
out=${1:?usage: gpu_checks.sh DIR [CHECK ...]}
shift
checks=${*:-suite analyze idle pallas cache timing live cost ab longlived}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
export PATH="$("$py" -c "import os, sys; print(os.path.dirname(sys.executable))"):$PATH"  # its pytest-roofline
root=$(pwd)
run() {  # run LOG SECONDS CMD...: append the command and its output to LOG, stopped after SECONDS
    local log=$1 limit=$2; shift 2
    { echo; echo "\$ $*"; echo "[$(date -u '+%Y-%m-%d %H:%M:%S') UTC, limit ${limit} s]"; } >>"$log"
    timeout "$limit" "$@" >>"$log" 2>&1
    echo "[exit $? at $(date -u '+%H:%M:%S')]" >>"$log"
}
header() { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
           "$py" -c 'import jax; print(jax.__version__, jax.devices())'; }
for check in $checks; do
    case $check in
        suite) header >"$out/suite.txt" 2>&1
               run "$out/suite.txt" 240 "$py" -m pytest example_suite -v -p no:cacheprovider \
                   --roofline-report="$out/gpu.json" --roofline-html="$out/gpu.html" --roofline-trace-all \
                   --roofline-trace-dir=/tmp/traces ;;
        analyze) first=$(ls -d /tmp/traces/*/ 2>/dev/null | grep -m1 donated)
                 [ -n "$first" ] && run "$out/suite.txt" 60 pytest-roofline analyze "$first" ;;
        idle) run "$out/suite.txt" 90 "$py" -m pytest example_suite -k row_by_row --runxfail -p no:cacheprovider ;;
        pallas) run "$out/suite.txt" 60 "$py" -m pytest tests/measurement/test_pallas.py -v -p no:cacheprovider ;;
        cache) for state in cold warm; do
                   run "$out/suite.txt" 60 "$py" -m pytest example_suite -k donat -v -p no:cacheprovider \
                       --roofline-cache=$state
               done ;;
        timing) header >>"$out/timing.txt" 2>&1
                run "$out/timing.txt" 90 "$py" bench/independent_timing.py --repeats 200 ;;
        live) run "$out/live.txt" 180 "$py" bench/gpu_live_check.py --save "$out/live" ;;
        cost) header >>"$out/cost.txt" 2>&1
              run "$out/cost.txt" 150 "$py" bench/measure_cost.py ;;
        ab) header >>"$out/ab.txt" 2>&1
            run "$out/ab.txt" 240 "$py" bench/ab_demo.py --rounds 6 ;;
        prgate) header >>"$out/prgate.txt" 2>&1
                run "$out/prgate.txt" 300 "$py" bench/pr_gate.py --rounds 6 --skip-time-all
                run "$out/prgate.txt" 300 "$py" bench/pr_gate.py --rounds 6 --skip-time-all --change scaled ;;
        longlived) copy=$(mktemp -d)/repo
                   cp -r "$root" "$copy" && rm -rf "$copy/.git" && cd "$copy" && git init -q \
                       && git add -A >/dev/null && git -c user.name=check -c user.email=check@localhost commit -qm tree
                   run "$out/ab.txt" 180 pytest-roofline ab --base HEAD --long-lived --rounds 12 \
                       --json "$out/longlived.json" -- example_suite -q -k "rms_norm or matmul"
                   cd "$root" ;;
        frameworks) header >>"$out/frameworks.txt" 2>&1
                    run "$out/frameworks.txt" 300 "$py" -m pytest tests/frameworks -v -p no:cacheprovider
                    run "$out/frameworks.txt" 200 "$py" bench/frameworks_table.py ;;
        sidebyside) header >>"$out/sidebyside.txt" 2>&1
                    hist=$(mktemp -d)/history
                    for i in 1 2; do
                        timeout 120 "$py" -m pytest example_suite -q -p no:cacheprovider -k "rms_norm or batched" \
                            --roofline-history="$hist" >"$out/sidebyside-$i.txt" 2>&1 &
                    done
                    wait
                    { echo "\$ two runs at once into $hist"; cat "$out/sidebyside-1.txt" "$out/sidebyside-2.txt"
                      echo "history: $(ls "$hist" | wc -l) runs: $(ls "$hist" | tr '\n' ' ')"; } >>"$out/sidebyside.txt" ;;
        quick) header >>"$out/quick.txt" 2>&1
               run "$out/quick.txt" 240 "$py" -m pytest tests -m "not slow" -q -p no:cacheprovider ;;
        floor) header >>"$out/cost.txt" 2>&1
               run "$out/cost.txt" 240 "$py" bench/measure_cost.py --repeats 2 ;;
        big) header >>"$out/big.txt" 2>&1
             run "$out/big.txt" 240 "$py" bench/big_programs.py ;;
        corpus) header >>"$out/corpus.txt" 2>&1
                rm -rf /tmp/corpus && run "$out/corpus.txt" 300 "$py" bench/record_corpus.py /tmp/corpus \
                    --variants default nocb && tar czf "$out/corpus.tgz" -C /tmp/corpus . ;;
        kept) header >>"$out/kept.txt" 2>&1
              run "$out/kept.txt" 120 "$py" bench/kept_memory.py ;;
        survey) header >>"$out/survey.txt" 2>&1
                run "$out/survey.txt" 300 "$py" -m pytest example_suite -p no:cacheprovider --roofline-survey \
                    --roofline-warn-only --roofline-report="$out/survey.json"
                run "$out/survey.txt" 300 "$py" bench/survey_gate_demo.py /tmp/survey-gate
                run "$out/survey.txt" 120 "$py" -m pytest -v -p no:cacheprovider tests/measurement/test_survey_sampling.py ;;
        control) header >>"$out/control.txt" 2>&1
                 run "$out/control.txt" 300 "$py" -m pytest -v -p no:cacheprovider tests/measurement/test_control_flow.py \
                     tests/measurement/test_trace_plan_runs.py tests/frameworks/test_diffrax.py \
                     tests/frameworks/test_lineax_optimistix.py tests/frameworks/test_numpyro.py \
                     tests/frameworks/test_mctx.py ;;
        *) echo "unknown check: $check (see the top of $0)" >&2; exit 2 ;;
    esac
done
