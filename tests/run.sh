#!/usr/bin/env bash
# The whole test suite: compile checks, unit tests (ASan+UBSan), the C++
# build, CLI end-to-end tests. Ends with "N passed, N failed, N skipped".
# Usage: tests/run.sh BUILD_DIR DATA_DIR
B=${1:-build}; DATA=${2:-../shared/data}
T=$(mktemp -d "${TMPDIR:-/tmp}/wdtest.XXXXXX")
trap 'rm -rf "$T"' EXIT
log=$B/test.log
: > "$log"
# A binary that exits non-zero counts as a failure even if it printed no FAIL
# line (a crash or a sanitizer abort).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}   # LeakSanitizer: a leak fails the binary
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run() {
    "$@" > "$T/run.out" 2>&1; local rc=$?
    cat "$T/run.out" | tee -a "$log"
    if [ $rc != 0 ] && ! grep -q '^FAIL' "$T/run.out"; then echo "FAIL $(basename "$1"): exited with status $rc" | tee -a "$log"; fi
}

# The header alone compiles warning-free as C11 and C++17 with gcc and clang.
for cc in "gcc -std=c11 -x c" "clang -std=c11 -x c" "g++ -std=c++17 -x c++" "clang++ -std=c++17 -x c++"; do
    name="compile_$(echo "$cc" | cut -d' ' -f1 | tr + p)"
    if ! command -v "${cc%% *}" >/dev/null; then echo "SKIP $name: ${cc%% *} not installed" | tee -a "$log"; continue; fi
    if printf '#define WIDEDEEP_IMPLEMENTATION\n#include "widedeep.h"\n' | $cc -Wall -Wextra -Werror -I. -c - -o "$T/c.o" 2>"$T/cc.err"; then
        echo "PASS $name" | tee -a "$log"
    else echo "FAIL $name: $(head -c 2000 "$T/cc.err")" | tee -a "$log"; fi
done
# the CUDA backend compiles (nvcc present) and its tests skip without a GPU
if [ -f "$B/widedeep_cuda.o" ] && [ -x "$B/test_gpu" ]; then
    echo "PASS compile_cuda: widedeep_cuda.cu, tests/test_gpu.cu and wd-cuda built with nvcc" | tee -a "$log"
    run "$B/test_gpu" "$T"
    if "$B/wd-cuda" train --train /dev/null --device cuda >/dev/null 2>&1; then echo "FAIL wd_cuda_no_gpu: succeeded without data" | tee -a "$log"; else echo "PASS wd_cuda_reports_error" | tee -a "$log"; fi
elif command -v nvcc >/dev/null; then echo "FAIL compile_cuda: nvcc present but the CUDA build is missing" | tee -a "$log"
else echo "SKIP compile_cuda: nvcc not installed" | tee -a "$log"; fi
run "$B/test_wd" "$T" "$DATA"
run "$B/test_cpp" "$T"
run "$B/test_loader" "$T"
run "$B/test_train" "$T"
run "$B/test_faults" "$T"
echo "# under ThreadSanitizer:" | tee -a "$log"
run "$B/test_loader_tsan" "$T"
run "$B/test_train_tsan" "$T"
run bash tests/cli.sh "$B/wd" "$T/cli" "$DATA"

# the examples: train from C on the Criteo sample, then serve from C++
if [ -f "$DATA/criteo_kaggle_head8000_train.tsv" ]; then
    mkdir -p "$T/ex"
    if "$B/train_criteo" "$DATA/criteo_kaggle_head8000_train.tsv" "$DATA/criteo_kaggle_head8000_test.tsv" "$T/ex" > "$T/ex.out" 2>&1 && grep -q 'test AUC 0\.[6-9]' "$T/ex.out"; then
        echo "PASS example_train_criteo: $(tail -1 "$T/ex.out")" | tee -a "$log"
    else echo "FAIL example_train_criteo: $(tail -3 "$T/ex.out")" | tee -a "$log"; fi
    if "$B/predict_cpp" "$T/ex/criteo.wdm" "$T/ex/test.wdr" > "$T/ex2.out" 2>&1 && grep -q 'hand-built sample: p = 0' "$T/ex2.out"; then
        echo "PASS example_predict_cpp" | tee -a "$log"
    else echo "FAIL example_predict_cpp: $(tail -3 "$T/ex2.out")" | tee -a "$log"; fi
else echo "SKIP examples: no data in $DATA" | tee -a "$log"; fi

# a short fuzzing pass of every harness (clang's libFuzzer; skipped without it)
FUZZ_SECONDS=${FUZZ_SECONDS:-8}
for f in wdr criteo libsvm csv wdm; do
    if [ ! -x "$B/fuzz_$f" ]; then echo "SKIP fuzz_$f: clang with libFuzzer not available" | tee -a "$log"; continue; fi
    mkdir -p "$T/fuzz-$f"
    if "$B/fuzz_$f" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -artifact_prefix="$T/fuzz-$f-" "$T/fuzz-$f" tests/fuzz/corpus/$f > "$T/fuzz.log" 2>&1; then
        echo "PASS fuzz_$f: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$T/fuzz.log" | sed -E 's/[[:space:]]+rss.*//; s/[[:space:]]+/ /g') in ${FUZZ_SECONDS}s" | tee -a "$log"
    else
        echo "FAIL fuzz_$f: $(grep -E 'ERROR|SUMMARY' "$T/fuzz.log" | head -3)" | tee -a "$log"
        mkdir -p "$B/fuzz-crashes"; cp "$T"/fuzz-$f-crash-* "$B/fuzz-crashes/" 2>/dev/null
    fi
done

p=$(grep -c '^PASS' "$log"); f=$(grep -c '^FAIL' "$log"); s=$(grep -c '^SKIP' "$log")
echo
grep '^FAIL' "$log"
echo "$p passed, $f failed, $s skipped"
[ "$f" = 0 ] && [ "$p" -gt 0 ]
