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

p=$(grep -c '^PASS' "$log"); f=$(grep -c '^FAIL' "$log"); s=$(grep -c '^SKIP' "$log")
echo
grep '^FAIL' "$log"
echo "$p passed, $f failed, $s skipped"
[ "$f" = 0 ] && [ "$p" -gt 0 ]
