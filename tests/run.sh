#!/usr/bin/env bash
# The whole test suite: compile checks, unit tests (ASan+UBSan), the same
# threaded tests under TSan, the C++ build, CLI end-to-end tests, the
# examples, fuzz regression replay and a short fuzzing pass, two at a time
# (WD_TEST_JOBS=1: one after another; see job() below). Ends with
# "N passed, N failed, N skipped"; exits non-zero on any failure.
# Usage: tests/run.sh BUILD_DIR DATA_DIR
#
# What counts as a failure, besides a FAIL line:
# - a test binary that prints fewer (or more) results than it has tests, or no
#   summary line: the count is the number of RUN( calls in main() of its source
#   (tests/cli.sh: CLI_TESTS below; tests/consumer.sh: CONSUMER_TESTS;
#   tests/mpi.sh: MPI_TESTS; tests/ecosystem.sh: ECOSYSTEM_TESTS), so a
#   test that silently disappears or a binary that dies half-way fails;
# - a binary that exits non-zero, or runs past TEST_TIMEOUT seconds (300;
#   WD_TEST_TIMEOUT=N to change);
# - a binary missing from BUILD_DIR (one that did not build, or whose source is
#   not there yet), and a failed build (WD_BUILD_RC, set by `make test`);
# - with CI=true, any SKIP except the GPU tests': CI must have the sample data,
#   clang's libFuzzer, nvcc and every compiler of the compile_* checks.
B=${1:-build}; DATA=${2:-../shared/data}
CLI_TESTS=125                      # the tests in tests/cli.sh
CONSUMER_TESTS=6                    # the tests in tests/consumer.sh
MPI_TESTS=24                        # the tests in tests/mpi.sh
ECOSYSTEM_TESTS=13                  # the tests in tests/ecosystem.sh
PYTHON_TESTS=8                      # the tests in tests/test_python.py
TEST_TIMEOUT=${WD_TEST_TIMEOUT:-300}   # seconds per binary
FUZZ_SECONDS=${FUZZ_SECONDS:-8}
FUZZERS="wdr criteo libsvm csv wdm api arrow"
T=$(mktemp -d "${TMPDIR:-/tmp}/wdtest.XXXXXX")
trap 'rm -rf "$T"' EXIT
log=$B/test.log
: > "$log"
start=$SECONDS

# Sanitizer settings the suite depends on come last, after whatever the caller
# exported (later settings win), so an inherited ASAN_OPTIONS/LSAN_OPTIONS/
# UBSAN_OPTIONS/TSAN_OPTIONS cannot turn leak checks, halting or the failing
# exit status off, nor suppress reports.
# intercept_tls_get_addr=0: LeakSanitizer's tracer died at exit once in seven CI runs ("Tracer caught
# signal 11", no leak found, test_gpu_emu[0/4] after every test had passed); the known runtime bug that fits:
# up to GCC 13 and LLVM 16 the __tls_get_addr interceptor can take a dynamic TLS block (a dlopen'ed
# library's __thread: libnccl_cpu.so through WD_NCCL_LIB) for a pre-2.25 glibc header by the coincidence of
# its address. Dynamic TLS is then not scanned for pointers: no test keeps its only one there.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:leak_check_at_exit=1:halt_on_error=1:abort_on_error=0:exitcode=1:intercept_tls_get_addr=0:suppressions="
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}detect_leaks=1:exitcode=1:intercept_tls_get_addr=0:suppressions="
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1:exitcode=1:suppressions="
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_bugs=1:exitcode=66:suppressions="

# In CI a skip is a failure, except where allowed (the GPU tests: CI has no GPU).
ci_policy() {  # ci_policy POLICY [NAME]: filters result lines (of program NAME) from stdin to stdout
    if [ "${CI:-}" = true ] && [ "$1" != allow-skip ]; then
        # NAME as sed's replacement text: its / & \ escaped (test_gpu_emu[3/4] once broke the expression,
        # and sed then printed nothing: every result of that program lost, its failures too)
        local where
        where=$(printf '%s' "${2:+in $2: }" | sed 's/[\/&\\]/\\&/g')
        sed -E "s/^SKIP ([^:]*)(.*)\$/FAIL \\1\\2 [${where}skipped, and a skip fails under CI=true: CI must have what this test needs]/"
    else cat; fi
}
say() { printf '%s\n' "$*" | ci_policy "" | tee -a "$log"; }

# timed NAME CMD...: runs CMD under the time limit with its output in $T/run.out,
# shows the output (with the CI policy) and sets $rc; 1 if it timed out.
timed() {
    local name=$1 policy=$2 t0=$SECONDS; shift 2
    timeout -k 10 "$TEST_TIMEOUT" "$@" > "$T/run.out" 2>&1; rc=$?
    ci_policy "$policy" "$name" < "$T/run.out" | tee -a "$log"
    echo "# $name: exit $rc after $((SECONDS - t0)) s" >> "$log"
    if [ $rc = 124 ] || [ $rc = 137 ]; then say "FAIL $name: timed out after $EMU_TIMEOUT s"; return 1; fi
}

# check NAME WANT SUMMARY POLICY CMD...: runs a test program that prints one
# PASS/FAIL/SKIP line per test; it must print exactly WANT of them and end
# with "# SUMMARY: P passed, F failed, S skipped" agreeing with them; a
# non-zero exit with no FAIL line (a crash, a sanitizer report, a leak at
# exit) fails too. POLICY allow-skip (test_gpu) also accepts a single
# "SKIP NAME: why" for the whole program.
check() {
    local name=$1 want=$2 summary=$3 policy=$4; shift 4
    timed "$name" "$policy" "$@" || return
    local out=$T/run.out
    local p f s n
    p=$(grep -c '^PASS ' "$out"); f=$(grep -c '^FAIL ' "$out"); s=$(grep -c '^SKIP ' "$out"); n=$((p + f + s))
    if [ "$policy" = allow-skip ] && [ $n = 1 ] && [ $s = 1 ] && grep -q "^SKIP $name:" "$out"; then want=1; fi
    if ! grep -qx "# $summary: $p passed, $f failed, $s skipped" "$out"; then
        if grep -q "^# $summary: " "$out"; then say "FAIL $name: its summary line disagrees with its $p PASS, $f FAIL, $s SKIP lines"
        else say "FAIL $name: no '# $summary: ...' summary line: it ended (exit $rc) before its last test"; fi
    elif [ $n != "$want" ]; then say "FAIL $name: $n test results, expected $want (a test did not run or did not report)"
    fi
    if [ $rc != 0 ] && [ $f = 0 ]; then say "FAIL $name: exited with status $rc"; fi
}

built() {  # built NAME BIN: BIN exists, or a FAIL line for NAME
    [ -x "$2" ] || { say "FAIL $1: $2 is missing (it did not build, or its source does not exist)"; return 1; }
}

# unit BIN SRC [ALLOW_SKIP] ARGS...: a test binary built from SRC with
# tests/testlib.h; it runs one test per RUN( call in main() of SRC.
runs_in_main() {
    awk '/^[a-z ]*int[[:space:]]+main[[:space:]]*\(/ { m = 1 }
         m { sub(/\/\/.*/, ""); n += gsub(/(^|[^A-Za-z0-9_])RUN\(/, "&") }
         END { print n + 0 }' "$1"
}
unit() {
    local bin=$1 src=$2 policy=; shift 2
    [ "$1" = allow-skip ] && { policy=$1; shift; }
    local name src_name want
    name=$(basename "$bin"); src_name=$(basename "${src%.*}")
    if [ ! -f "$src" ]; then say "FAIL $name: its source $src does not exist"; return; fi
    want=$(runs_in_main "$src")
    if [ "$want" = 0 ]; then say "FAIL $name: no RUN( calls in main() of $src"; return; fi
    built "$name" "$bin" || return
    check "$name" "$want" "$src_name" "$policy" "$bin" "$@"
}

# The blocks below run as jobs, two at a time (WD_TEST_JOBS=N: N at a time;
# 1: one after another), each in its own scratch folder ($T/jobN) with its own
# output and log; what a job printed and logged comes out whole, in the order
# the jobs are listed here, whichever ends first. A job started `alone` runs
# with no other beside it (test_train under TSan: its runs over deaf
# communicators must end well inside their 10 s timeout, and under TSan
# beside another job on 2 cores one took 8.3 s, over the 8 s it allows).
PAR=${WD_TEST_JOBS:-2}
njobs=0; nshown=0
show() {  # prints (and logs) the jobs that ended, in order, up to the first still running
    local d                 # (show all: every job has ended; one that did not finish is a FAIL)
    while [ $nshown -lt $njobs ] && { [ -e "$T/job$nshown/done" ] || [ "${1:-}" = all ]; }; do
        d=$T/job$nshown
        cat "$d/out"; cat "$d/err" >&2; cat "$d/log" >> "$log"
        [ -e "$d/done" ] || say "FAIL job $nshown ($(cat "$d/what")): it ended before it finished (killed?)"
        nshown=$((nshown + 1))
    done
}
drain() { wait; show all; }
job() {  # job [alone] FUNCTION ARGS...
    local alone= d
    [ "$1" = alone ] && { alone=1; shift; drain; }
    while [ "$(jobs -rp | wc -l)" -ge "$PAR" ]; do wait -n; show; done
    d=$T/job$njobs; mkdir -p "$d"; echo "$*" > "$d/what"
    # an argument that is $T itself (the scratch folder of a unit test) becomes the job's folder
    ( trap - EXIT; local a args=(); for a in "$@"; do [ "$a" = "$T" ] && a=$d; args+=("$a"); done
      T=$d; log=$d/log; : > "$log"; "${args[@]}"; touch "$d/done" ) > "$d/out" 2> "$d/err" &
    njobs=$((njobs + 1))
    [ -n "$alone" ] && drain
    show
}
note() { echo "$*" | tee -a "$log"; }

if [ -n "${WD_BUILD_RC:-}" ] && [ "$WD_BUILD_RC" != 0 ]; then
    say "FAIL build: make exited with status $WD_BUILD_RC: a test binary did not build (the errors are above)"
fi

# The header compiles warning-free as C11 and C++17 with gcc and clang: alone,
# after libc headers (the feature macros then come too late for it), included
# for its declarations and again at the file's end with WIDEDEEP_IMPLEMENTATION
# (tools/wd.c's pattern: tier 3 declared then), the
# README's "Using the header" example as it stands, its declarations under
# -Wsign-conversion -Wconversion, and with WD_STATIC in two libraries linked
# into one program. (One job per compiler.)
compile_check() {
    local cc=$1 name err src lib
    name="compile_$(echo "$cc" | cut -d' ' -f1 | tr + p)"
    if ! command -v "${cc%% *}" >/dev/null; then say "SKIP $name: ${cc%% *} not installed"; return; fi
    awk '/^## Using the header/{s=1;next} /^## /{s=0} s&&/^```c$/{c=1;next} c&&/^```$/{c=0} c' README.md > "$T/readme_api.c"
    printf '#include <stdio.h>\n#include <string.h>\n#include <time.h>\n#define WIDEDEEP_IMPLEMENTATION\n#include "widedeep.h"\n' > "$T/libc_first.c"
    # the stb pattern (tools/wd.c's): the declarations alone, the file's code, then the implementation at its end
    printf '%s\n' '#include "widedeep.h"' 'int bucket(void);' \
        'int bucket(void) { return (int)wd_hash_bucket("a", 1, 0, 7); }' \
        '#define WIDEDEEP_IMPLEMENTATION' '#include "widedeep.h"' > "$T/twice.c"
    err=
    for src in alone "$T/libc_first.c" "$T/twice.c" "$T/readme_api.c"; do
        if [ $src = alone ]; then printf '#define WIDEDEEP_IMPLEMENTATION\n#include "widedeep.h"\n' > "$T/alone.c"; src=$T/alone.c; fi
        if ! grep -q . "$src"; then err="$err | $(basename "$src"): empty (the README block was not found)"; continue; fi
        timeout "$TEST_TIMEOUT" $cc -Wall -Wextra -Werror -I. -c "$src" -o "$T/c.o" 2>"$T/cc.err" || err="$err | $(basename "$src"): $(head -c 1500 "$T/cc.err")"
    done
    # WD_STATIC defined only before the second include would leave the declarations extern: refused, named
    printf '%s\n' '#include "widedeep.h"' '#define WD_STATIC' '#define WIDEDEEP_IMPLEMENTATION' \
        '#include "widedeep.h"' > "$T/late_static.c"
    if timeout "$TEST_TIMEOUT" $cc -I. -c "$T/late_static.c" -o "$T/c.o" 2>"$T/cc.err" ||
        ! grep -q "WD_STATIC must be defined (or not) before the first include" "$T/cc.err"; then
        err="$err | WD_STATIC after the first include: not refused by name"
    fi
    # a file that includes the header for its declarations only (tests/public_tu.c): clean under
    # -Wsign-conversion -Wconversion too, and blind to tier 3 (internal); then tier 3 under the same flags
    for src in "" -DWIDEDEEP_INTERNAL; do
        timeout "$TEST_TIMEOUT" $cc -Wall -Wextra -Wsign-conversion -Wconversion -Werror -DWD_HAVE_CUDA -DWD_TESTING \
            $src -I. -c tests/public_tu.c -o "$T/c.o" 2>"$T/cc.err" ||
            err="$err | declarations ${src:-alone (tier 3 must stay hidden)}, -Wconversion: $(head -c 1500 "$T/cc.err")"
    done
    # WD_STATIC: two libraries of one program each embed the implementation (no clash, no unused-function warning)
    for lib in a b; do
        printf '#define WD_STATIC\n#define WIDEDEEP_IMPLEMENTATION\n#include "widedeep.h"\n#ifdef __cplusplus\nextern "C"\n#endif\nint lib%s_bucket(void);\nint lib%s_bucket(void) { return (int)wd_hash_bucket("a", 1, 0, 1000) + (wd_last_error()[0] != 0); }\n' $lib $lib > "$T/lib$lib.c"
        rm -f "$T/lib$lib.a"
        { timeout "$TEST_TIMEOUT" $cc -Wall -Wextra -Werror -I. -c "$T/lib$lib.c" -o "$T/lib$lib.o" && ar rcs "$T/lib$lib.a" "$T/lib$lib.o"; } 2>"$T/cc.err" || err="$err | WD_STATIC lib$lib: $(head -c 1500 "$T/cc.err")"
    done
    printf 'int liba_bucket(void);\nint libb_bucket(void);\nint main(void) { return liba_bucket() == libb_bucket() && liba_bucket() > 0 ? 0 : 1; }\n' > "$T/two.c"
    if [ -f "$T/liba.a" ] && [ -f "$T/libb.a" ]; then
        gcc -o "$T/two" "$T/two.c" "$T/liba.a" "$T/libb.a" -lzstd -lz -lpthread -lm -lstdc++ 2>"$T/cc.err" && "$T/two" || err="$err | WD_STATIC: two libraries embedding the implementation do not link and run together: $(head -c 1500 "$T/cc.err")"
    fi
    if [ -z "$err" ]; then say "PASS $name: alone, after libc headers, included twice (stb), the README example,"\
" declarations under -Wconversion, two WD_STATIC copies in one program, a late WD_STATIC refused"
    else say "FAIL $name:$err"; fi
}
for cc in "gcc -std=c11 -x c" "clang -std=c11 -x c" "g++ -std=c++17 -x c++" "clang++ -std=c++17 -x c++"; do job compile_check "$cc"; done
# plain `make` builds the wd tool (the default goal is `all`, not the Makefile's first rule)
default_goal() {
if make -n --no-print-directory B="$T/goal" > "$T/goal.out" 2>&1 && grep -qF -- "-o $T/goal/wd tools/wd.c" "$T/goal.out"; then
    say "PASS make_default_goal: plain make builds $T/goal/wd"
else say "FAIL make_default_goal: plain make does not build the wd tool: $(grep -v '^#' "$T/goal.out" | head -3 | tr '\n' ' ')"; fi
# ... and the CUDA build only where a GPU is (nvidia-smi lists one) or with GPU=1; `make cuda` on any
# machine with nvcc; a missing zstd.h is named with the packages and `make deps` (issue 32)
local why= g
for g in 0 auto; do
    [ $g = auto ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && continue   # (a GPU here: auto builds CUDA)
    if ! make -n --no-print-directory B="$T/g$g" $([ $g = 0 ] && echo GPU=0) > "$T/g$g.out" 2>&1; then
        why="$why | make -n ($g) failed"
    elif grep -qE 'nvcc|gpu-pack|wd-cuda' "$T/g$g.out"; then
        why="$why | GPU=$g builds CUDA: $(grep -m1 -E 'nvcc|gpu-pack|wd-cuda' "$T/g$g.out" | cut -c1-150)"
    fi
done
if command -v nvcc >/dev/null; then
    make -n --no-print-directory B="$T/g1" GPU=1 > "$T/g1.out" 2>&1
    grep -q -- "-o $T/g1/widedeep_cuda.o widedeep_cuda.cu" "$T/g1.out" && grep -q -- "-o $T/g1/wd-cuda " "$T/g1.out" ||
        why="$why | GPU=1 does not build wd-cuda"
    make -n --no-print-directory B="$T/g2" GPU=0 cuda > "$T/g2.out" 2>&1
    grep -q -- "-o $T/g2/widedeep_cuda.o widedeep_cuda.cu" "$T/g2.out" ||
        why="$why | make cuda GPU=0 does not build widedeep_cuda.o"
fi
if command -v cmake >/dev/null && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then   # CMake's default: the same rule
    cmake -S . -B "$T/cm" > "$T/cm.out" 2>&1 || why="$why | cmake: $(tail -2 "$T/cm.out" | tr '\n' ' ')"
    grep -q 'no widedeep::cuda: no GPU found' "$T/cm.out" && grep -qx 'WIDEDEEP_CUDA:BOOL=OFF' "$T/cm/CMakeCache.txt" ||
        why="$why | CMake: WIDEDEEP_CUDA not OFF without a GPU"
fi
CC=false bash tools/install-deps.sh --check > /dev/null 2> "$T/deps.err" && why="$why | --check passed with CC=false"
grep -q 'libzstd-dev zlib1g-dev' "$T/deps.err" && grep -q "run 'make deps'" "$T/deps.err" ||
    why="$why | --check: $(head -c 200 "$T/deps.err")"
if [ -z "$why" ]; then
    say "PASS make_cuda_only_with_gpu: GPU=0, no GPU: no CUDA target (CMake's too); GPU=1, make cuda: built; zstd named"
else say "FAIL make_cuda_only_with_gpu:$why"; fi
}
job default_goal
# the CUDA backend compiles (nvcc present); its tests skip without a GPU
cuda_tests() {
if [ -f "$B/widedeep_cuda.o" ] && [ -x "$B/test_gpu" ] && [ -x "$B/wd-cuda" ]; then
    say "PASS compile_cuda: widedeep_cuda.cu, tests/test_gpu.cu and wd-cuda built with nvcc"
    unit "$B/test_gpu" tests/test_gpu.cu allow-skip "$T"
    # wd-cuda trains a step on a GPU, and without one fails saying so
    if "$B/wd" gen -o "$T/cuda.wdr" --rows 2000 --seed 1 --max-card 100 >/dev/null 2>&1 &&
       timeout "$TEST_TIMEOUT" "$B/wd-cuda" train --train "$T/cuda.wdr" --device cuda --hidden 8 --max-steps 1 > "$T/cuda.out" 2>&1; then
        if grep -q '^trained steps=1 ' "$T/cuda.out"; then say "PASS wd_cuda_trains"; else say "FAIL wd_cuda_trains: $(tail -2 "$T/cuda.out")"; fi
    elif grep -q 'no CUDA device' "$T/cuda.out" 2>/dev/null; then say "PASS wd_cuda_reports_no_device"
    else say "FAIL wd_cuda: neither trained nor reported a missing GPU: $(tail -2 "$T/cuda.out" 2>/dev/null)"; fi
    # the backend is found at link time: a program whose files never saw WD_HAVE_CUDA, linked with widedeep_cuda.o
    if [ ! -x "$B/consumer_cuda_o" ]; then say "FAIL cuda_link_time: $B/consumer_cuda_o is missing (it did not build)"
    else
        mkdir -p "$T/cuda-link"
        timeout "$TEST_TIMEOUT" "$B/consumer_cuda_o" "$T/cuda-link" > "$T/cuda-link.out" 2>&1
        if tail -1 "$T/cuda-link.out" | grep -qE '^consumer ok: .* cuda=(linked|trained)'; then say "PASS cuda_link_time: $(tail -1 "$T/cuda-link.out" | grep -oE 'cuda=.*')"
        else say "FAIL cuda_link_time: the backend linked in was not found: $(tail -2 "$T/cuda-link.out" | tr '\n' ' ')"; fi
    fi
elif command -v nvcc >/dev/null; then say "FAIL compile_cuda: nvcc present but the CUDA build is missing"
else say "SKIP compile_cuda: nvcc not installed"; fi
}
job cuda_tests
# the GPU pack (make gpu-pack, bench/GPU_RUN.md): the linkage check refuses a
# binary the GPU host could not load (the plain build needs libzstd, libcudart
# and the GEMM engine's libraries), then the dry run of bench/gpu_run.sh: the
# pack's size and linkage, its binaries starting without a GPU or NCCL, the
# MPI bootstrap's binary as a singleton on the pack's own Open MPI, the
# data of phases 0 and 3 (phase 3's at 100k rows), the peer's dump, the
# loader ladder, the script's logic, the predicted times
gpu_pack_tests() {
    if [ -x "$B/test_gpu" ] && ! bash bench/gpu_run.sh --check-elf "$B/test_gpu" > "$T/elf.out" 2>&1 && grep -q 'needs libzstd.so.1, which the GPU host does not have' "$T/elf.out"; then
        say "PASS gpu_pack_check_refuses: $B/test_gpu: $(grep -c 'which the GPU host does not have' "$T/elf.out") libraries the GPU host lacks"
    else say "FAIL gpu_pack_check_refuses: bench/gpu_run.sh --check-elf $B/test_gpu did not refuse it: $(tail -2 "$T/elf.out" 2>/dev/null)"; fi
    if [ ! -f "$DATA/criteo_kaggle_head8000_train.tsv" ] || [ ! -f "$DATA/criteo_kaggle_head8000_dev.tsv" ] || [ ! -f "$DATA/criteo_kaggle_head8000_test.tsv" ]; then
        say "SKIP gpu_run_dry: no Criteo sample (train, dev, test) in $DATA: the pack lacks criteo-*.wdr, which --dry refuses"
    elif built gpu_run_dry "$B/gpu-pack/test_gpu" && timed gpu_run_dry "" env PACK="$B/gpu-pack" WORK="$T/gpu-work" bash bench/gpu_run.sh --dry "$T/gpu-dry"; then
        s=$T/gpu-dry/summary.txt
        if [ $rc = 0 ] && grep -q '^  pack: .* binaries and libraries: glibc 2.36 or older' "$s" && grep -q '^    multi_gpu without NCCL: .*NCCL is not available' "$s" &&
           grep -q '^    wd-mpi-cuda as an MPI singleton on the pack.s Open MPI' "$s" && grep -q '^    wd-mpi-cuda without a GPU: .*rank 0: .*no CUDA device' "$s" &&
           grep -q '^  mpi_bootstrap: DRY' "$s" && grep -q '^  test_gpu: DRY' "$s" && grep -q '^predicted on the GPU host' "$s" && [ -s "$T/gpu-dry/logs.tar.gz" ] &&
           grep -q '^  criteo-fp32-0: DRY (would run under [0-9]*s: env WD_CUDA_FP32=1 .*--precision fp32' "$s" && grep -q '^  criteo-bf16-2: DRY (would run under [0-9]*s: [^ ]*/wd-cuda .*--precision bf16' "$s"; then
            say "PASS gpu_run_dry: $(grep '^  pack: ' "$s" | sed 's/^  pack: //'); $(grep -c ': DRY (' "$s") GPU commands listed"
        else say "FAIL gpu_run_dry: exit $rc: $(grep -E 'FAIL|MISSING|did not' "$s" | head -3 | tr '\n' ' ')"; fi
    fi
}
command -v nvcc >/dev/null && job gpu_pack_tests

# tests/test_gpu.cu on the CPU backend, two of its tests chosen by name
# (WD_GPU_TESTS: every other RUN( of the file prints SKIP); the whole harness
# on the CPU takes about 90-150 s more (build/test_gpu_on_cpu DIR: 16 passed, 7 skipped in 164 s under load, with oneDNN on AMX)
gpu_on_cpu_selected() {
if built test_gpu_on_cpu_selected "$B/test_gpu_on_cpu"; then
    gpu_runs=$(grep -c '^ *RUN(' tests/test_gpu.cu)
    WD_GPU_TESTS=non_finite_update_whole,test_failed_steps_change_nothing timeout "$TEST_TIMEOUT" "$B/test_gpu_on_cpu" "$T" > "$T/sel.out" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -qx "# test_gpu: 2 passed, 0 failed, $((gpu_runs - 2)) skipped" "$T/sel.out" && grep -qx 'PASS test_non_finite_update_whole' "$T/sel.out" &&
       grep -qx 'SKIP test_gradients_fp32: not in WD_GPU_TESTS' "$T/sel.out"; then say "PASS test_gpu_on_cpu_selected: WD_GPU_TESTS ran the 2 tests named"
    else say "FAIL test_gpu_on_cpu_selected: exit $rc: $(grep '^# test_gpu' "$T/sel.out")"; fi
fi
}
job gpu_on_cpu_selected
# tests/test_gpu.cu and widedeep_cuda.cu, unchanged, on an emulated device
# (tests/cudacpu, README.md there): every test, at the quick shapes (make
# test-gpu-emu-full: the full ones), with the GPU tolerances, in EMU_PARTS
# jobs (test i in part i mod EMU_PARTS: each part under the time limit),
# each under its own policies (EMU_POLICY: part 1's streams run only when the
# host waits, part 2's threads and stream operations in seeded random orders);
# the NCCL tests through build/libnccl_cpu.so (ranks as threads,
# WD_NCCL_LIB) on 2 emulated devices where it was built, else they SKIP.
# Then the emulator's own tests. Without the toolkit's headers (found as
# the Makefile finds them) both SKIP.
EMU_PARTS=4
EMU_TIMEOUT=$((TEST_TIMEOUT * 3))   # a part: 1-1.5 min of CPU (RESULTS.md); a machine loaded 3x more must not fail it
EMU_POLICY=("" "CUDACPU_STREAMS=lazy" "CUDACPU_SCHED=random CUDACPU_STREAMS=random CUDACPU_SEED=1" "")
EMU_NCCL_TESTS="test_nccl_one_rank test_nccl_two_gpus test_nccl_fail_fast"
emu_cuda() { echo "${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")}"; }
gpu_emu_part() {  # gpu_emu_part K: part K of test_gpu.cu's tests on the emulated device
    local k=$1 name="test_gpu_emu[$1/$EMU_PARTS${EMU_POLICY[$1]:+ ${EMU_POLICY[$1]}}]" t i=0 sel= skip= n=0 p f s out=$T/emu.out
    if [ ! -f "$(emu_cuda)/include/cuda_runtime.h" ]; then
        say "SKIP $name: no CUDA headers in $(emu_cuda)/include: the emulated device compiles against them"; return; fi
    built "$name" "$B/test_gpu_emu" || return
    for t in $(sed -n '/^int main/,$ s/^ *RUN(\(test_[a-z0-9_]*\)).*/\1/p' tests/test_gpu.cu); do
        if [ $((i % EMU_PARTS)) = "$k" ]; then
            case " $EMU_NCCL_TESTS " in
                *" $t "*) [ -f "$B/libnccl_cpu.so" ] || { skip="$skip $t"; i=$((i + 1)); continue; } ;;
            esac
            sel=$sel${sel:+,}$t; n=$((n + 1))
        fi
        i=$((i + 1))
    done
    for t in $skip; do say "SKIP $t (emulated): no $B/libnccl_cpu.so (the NCCL of threads) to run it on"; done
    [ -n "$sel" ] || return
    local t0=$SECONDS
    # (WD_COMM_TIMEOUT 150: the failure tests' "promptly" is 100 s, two thirds of it, at the emulator's pace)
    # shellcheck disable=SC2086   # EMU_POLICY's words are NAME=VALUE settings
    env ${EMU_POLICY[$k]} WD_GPU_TEST_QUICK=1 WD_GPU_TESTS="$sel" WD_COMM_TIMEOUT=150 CUDACPU_DEVICES=2 WD_NCCL_LIB="$PWD/$B/libnccl_cpu.so" \
        timeout -k 10 "$EMU_TIMEOUT" "$B/test_gpu_emu" "$T" > "$out" 2>&1; rc=$?
    # the tests of the other parts say "SKIP ...: not in WD_GPU_TESTS": not results of this part
    grep -v '^SKIP test_[a-z0-9_]*: not in WD_GPU_TESTS$' "$out" | sed -E 's/^(PASS|FAIL|SKIP) (test_[a-z0-9_]*)/\1 \2 (emulated)/' |
        ci_policy "" "$name" | tee -a "$log"
    echo "# $name: exit $rc after $((SECONDS - t0)) s" >> "$log"
    p=$(grep -c '^PASS ' "$out"); f=$(grep -c '^FAIL ' "$out"); s=$(grep -c '^SKIP ' "$out")
    if [ $rc = 124 ] || [ $rc = 137 ]; then say "FAIL $name: timed out after $EMU_TIMEOUT s"
    elif ! grep -qx "# test_gpu: $p passed, $f failed, $s skipped" "$out"; then say "FAIL $name: no summary agreeing with its results (exit $rc)"
    elif [ $((p + f + s - $(grep -c ': not in WD_GPU_TESTS$' "$out"))) != $n ]; then say "FAIL $name: not $n results for the $n tests it ran"
    elif [ $rc != 0 ] && [ $f = 0 ]; then say "FAIL $name: exited with status $rc"; fi
}
gpu_emu_selftest() {
    if [ ! -f "$(emu_cuda)/include/cuda_runtime.h" ]; then say "SKIP cudacpu_selftest: no CUDA headers in $(emu_cuda)/include"; return; fi
    built cudacpu_selftest "$B/cudacpu_selftest" &&
        check cudacpu_selftest "$(grep '^    {"[a-z_]*", ' tests/cudacpu/selftest.cu | grep -vc '_tsan"')" cudacpu_selftest "" "$B/cudacpu_selftest"
}
for k in $(seq 0 $((EMU_PARTS - 1))); do job gpu_emu_part "$k"; done
job gpu_emu_selftest
# build/libnccl_cpu.so (NCCL with ranks as threads; tests/cudacpu/README.md,
# "NCCL"): the library against NCCL's rules and its injected faults, the
# backend against those faults, examples/multi_gpu.c; on 2 emulated devices.
nccl_emu_tests() {
    if [ ! -f "$(emu_cuda)/include/cuda_runtime.h" ] || [ ! -f "${NCCL_HOME:-$(emu_cuda)}/include/nccl.h" ]; then
        say "SKIP test_nccl_cpu: no CUDA headers or no nccl.h (as the Makefile looks for them): the library compiles against them"
        return
    fi
    CUDACPU_DEVICES=2 WD_NCCL_LIB="$PWD/$B/libnccl_cpu.so" unit "$B/test_nccl_cpu" tests/cudacpu/test_nccl_cpu.c "$T"
}
job nccl_emu_tests
# the device plan's red zones (WD_PLAN_REDZONE in the emulated build) against a seeded overrun
# (tests/cudacpu/redzone.cu)
gpu_emu_redzone() {
    if [ ! -f "$(emu_cuda)/include/cuda_runtime.h" ]; then
        say "SKIP cudacpu_redzone: no CUDA headers in $(emu_cuda)/include"; return; fi
    built cudacpu_redzone "$B/cudacpu_redzone" && check cudacpu_redzone 3 cudacpu_redzone "" "$B/cudacpu_redzone"
}
job gpu_emu_redzone
# wd-cuda on the emulated device: the Criteo sample's AUC on the device and on the CPU backend (tests/emu_criteo.sh)
gpu_emu_criteo() {
    if [ ! -f "$(emu_cuda)/include/cuda_runtime.h" ]; then say "SKIP gpu_emu_criteo_auc: no CUDA headers in $(emu_cuda)/include"; return; fi
    check gpu_emu_criteo 1 emu_criteo "" bash tests/emu_criteo.sh "$B" "$DATA" "$T/criteo" --hidden 64,32 --batch 256
}
job gpu_emu_criteo
job unit "$B/test_wd" tests/test_wd.c "$T" "$DATA"
job unit "$B/test_convert" tests/test_convert.c "$T"
job unit "$B/test_arrow" tests/test_arrow.c "$T"   # Arrow C streams: hand-built arrays, each refusal, random streams and lists
job unit "$B/test_contract" tests/test_contract.c "$T" tests/golden "$DATA"   # the model is the contract: raw strings, fingerprints, old formats
job unit "$B/test_spec" tests/test_spec.c "$T"   # the one comparison of input contracts: each field refused by name; ids bound; sized requests
job unit "$B/test_cpp" tests/test_cpp.cpp "$T"
job unit "$B/test_loader" tests/test_loader.c "$T"
job unit "$B/test_train" tests/test_train.c "$T"
job unit "$B/test_stream" tests/test_stream.c "$T"   # training from the application's data, online learning
job unit "$B/test_online" tests/test_online.c allow-skip "$T"   # one training per model, bad pushes, skipped steps
job unit "$B/test_loop" tests/test_loop.c "$T"
job unit "$B/test_ref" tests/test_ref.c "$T"
job unit "$B/test_golden" tests/test_golden.c "$T"   # fixtures: tests/golden
job unit "$B/test_faults" tests/test_faults.c "$T"
job unit "$B/test_errors" tests/test_errors.c "$T"   # the first error survives clean-up; signals skip our threads
job unit "$B/test_edges" tests/test_edges.c "$T"   # edges found by the mutation pass (tests/mutate.sh)
job unit "$B/test_hardening" tests/test_hardening.c "$T"   # hostile arguments, batches, checkpoints; memory asked for
job unit "$B/test_export" tests/test_export.c "$T"   # protobuf encoder, ONNX export's refusals, TensorBoard framing
job unit "$B/test_service" tests/test_service.c "$T" "$DATA"   # a served model: hot swaps under 4 predicting threads, its memory
# the GEMM engine the build links: concurrent predict, multi-worker determinism,
# GEMM vs a plain loop, bf16 vs fp32 (skips, with the library's message, on a
# CPU without AVX512-BF16/AMX: the one skip CI accepts here), memory cap
job unit "$B/test_engine" tests/test_engine.c allow-skip "$T"
job note "# with the portable GEMM loops (the fallback engine):"
job unit "$B/test_ref_portable" tests/test_ref.c "$T"
job unit "$B/test_golden_portable" tests/test_golden.c "$T"
job unit "$B/test_train_portable" tests/test_train.c "$T"
job unit "$B/test_engine_portable" tests/test_engine.c allow-skip "$T"   # bf16 skips: portable loops
job note "# under ThreadSanitizer:"
job unit "$B/test_loader_tsan" tests/test_loader.c "$T"
job alone unit "$B/test_train_tsan" tests/test_train.c "$T"
job unit "$B/test_stream_tsan" tests/test_stream.c "$T"   # 4 threads predicting while 2 train
job unit "$B/test_online_tsan" tests/test_online.c allow-skip "$T"   # predictions beside a trainer, a second TSan check
job unit "$B/test_engine_tsan" tests/test_engine.c allow-skip "$T"
job unit "$B/test_contract_tsan" tests/test_contract.c "$T" tests/golden "$DATA"   # raw requests scored from 8 threads
job unit "$B/test_service_tsan" tests/test_service.c "$T" "$DATA"   # 100 swaps under 4 predicting threads
job unit "$B/test_arrow_tsan" tests/test_arrow.c "$T"   # the stream read ahead on 1 and 3 loader threads
cli_tests() { built cli "$B/wd" && check cli "$CLI_TESTS" cli "" bash tests/cli.sh "$B/wd" "$T/cli" "$DATA"; }
job cli_tests
# several processes under mpirun (build/wd-mpi); skips (a failure in CI) without Open MPI
mpi_tests() { check mpi "$MPI_TESTS" mpi "" bash tests/mpi.sh "$B" "$T/mpi"; }
job mpi_tests
# ONNX Runtime and TensorBoard's reader on what wd writes (Python packages from
# tools/install-deps.sh; missing, these tests skip, and CI fails them)
ecosystem_tests() { built ecosystem "$B/onnx_feed" && check ecosystem "$ECOSYSTEM_TESTS" ecosystem "" bash tests/ecosystem.sh "$B/wd" "$B/onnx_feed" "$T/eco" "$DATA"; }
job ecosystem_tests
# the Python package (python/; its extension built against this header as $B/python) over
# real Arrow producers: pyarrow, DuckDB, Polars (from tools/install-deps.sh; missing, the
# tests skip, and CI fails them)
python_tests() {
    local hdr='import os, sysconfig; exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))'
    if [ ! -x "$B/python/widedeep/_wd.so" ] && ! python3 -c "$hdr" 2>/dev/null; then
        say "SKIP python: python3 or its headers (python3-dev) are missing: the package's extension was not built"
        return
    fi
    built python "$B/python/widedeep/_wd.so" &&
        check python "$PYTHON_TESTS" python "" python3 tests/test_python.py "$B/wd" "$B/python" "$T/py" "$DATA"
}
job python_tests
# the package: make install (DESTDIR), then tests/consumer/ built through
# pkg-config, find_package, add_subdirectory and FetchContent, make uninstall
consumer_tests() { check consumer "$CONSUMER_TESTS" consumer "" bash tests/consumer.sh "$B" "$T/consumer"; }
job consumer_tests

# the build lines the examples and benchmarks give link what the header needs
# (the Makefile builds them with $(LDLIBS); a line a user copies must too)
example_build_lines() {
local bad= nlines=0 l lib
while IFS= read -r l; do
    nlines=$((nlines + 1))
    for lib in -lzstd -lz -lpthread -lm; do case " $l " in *" $lib "*) ;; *) bad="$bad | ${l:0:160}: no $lib" ;; esac; done
done < <(grep -hoE '(cc|c\+\+|gcc|g\+\+|clang) .*(examples|bench)/[a-z_]+\.(c|cpp) .*' examples/*.c examples/*.cpp bench/*.c bench/*.sh 2>/dev/null | grep -E ' -l')
if [ "$nlines" = 0 ]; then say "FAIL example_build_lines: no build line found in examples/ and bench/"
elif [ -z "$bad" ]; then say "PASS example_build_lines: $nlines build lines link -lzstd -lz -lpthread -lm"
else say "FAIL example_build_lines:$bad"; fi
}
job example_build_lines

# the examples: train from C on the Criteo sample, then serve from C++
examples() {
if [ -f "$DATA/criteo_kaggle_head8000_train.tsv" ]; then
    mkdir -p "$T/ex"
    if timeout "$TEST_TIMEOUT" "$B/train_criteo" "$DATA/criteo_kaggle_head8000_train.tsv" "$DATA/criteo_kaggle_head8000_test.tsv" "$T/ex" > "$T/ex.out" 2>&1 && grep -q 'test AUC 0\.[6-9]' "$T/ex.out"; then
        say "PASS example_train_criteo: $(tail -1 "$T/ex.out")"
    else say "FAIL example_train_criteo: $(tail -3 "$T/ex.out")"; fi
    if timeout "$TEST_TIMEOUT" "$B/predict_cpp" "$T/ex/criteo.wdm" "$T/ex/test.wdr" > "$T/ex2.out" 2>&1 && grep -q 'hand-built sample: p = 0' "$T/ex2.out"; then
        say "PASS example_predict_cpp"
    else say "FAIL example_predict_cpp: $(tail -3 "$T/ex2.out")"; fi
else say "SKIP examples: no data in $DATA"; fi
}
job examples

# the README's serving blocks, run (build/readme_serve: its serve() on a model
# trained from the Criteo sample, and serve_lines() on the same request as an
# unlabeled line, given twice): the probabilities they print must equal, to
# the last bit (%.9g), what `wd predict` gives the same request as a Criteo
# line converted --schema-from the training file
readme_serving() {
if [ -f "$DATA/criteo_kaggle_head8000_train.tsv" ] && built readme_serving "$B/readme_serve"; then
    R=$T/readme; mkdir -p "$R"
    req=$(printf '0\t5'; for i in $(seq 12); do printf '\t'; done; printf '\t68fd1e64\t80e26c9b'; for i in $(seq 24); do printf '\t'; done)
    printf '%s\n' "$req" > "$R/req.tsv"
    if head -3000 "$DATA/criteo_kaggle_head8000_train.tsv" > "$R/day1.tsv" &&
       "$B/wd" convert --format criteo -o "$R/day1.wdr" "$R/day1.tsv" > "$R/out" 2>&1 &&
       "$B/wd" convert --format criteo --schema-from "$R/day1.wdr" -o "$R/req.wdr" "$R/req.tsv" >> "$R/out" 2>&1 &&
       "$B/wd" train --train "$R/day1.wdr" --hidden 32,16 --embed-dim 8 --threads 2 --save "$R/ctr.wdm" >> "$R/out" 2>&1 &&
       "$B/wd" predict --model "$R/ctr.wdm" -o "$R/want.txt" "$R/req.wdr" >> "$R/out" 2>&1 &&
       timeout "$TEST_TIMEOUT" "$B/readme_serve" "$R/ctr.wdm" > "$R/got.txt" 2>> "$R/out"; then
        want=$(cat "$R/want.txt"); got=$(sed -n 's/^p(click) //p' "$R/got.txt")
        # serve_lines(): the same request as a line without its label, a predictor, wd_parse_unlabeled
        printf '%s\n%s\n' "${req#0$'\t'}" "${req#0$'\t'}" | timeout "$TEST_TIMEOUT" "$B/readme_serve" "$R/ctr.wdm" --lines > "$R/lines.txt" 2>> "$R/out"
        lines=$(tr '\n' ' ' < "$R/lines.txt")
        if [ -n "$got" ] && [ "$got" = "$want" ] && [ "$lines" = "$want $want " ]; then say "PASS readme_serving: serve() printed p(click) $got, serve_lines() $lines(twice), wd predict $want"
        else say "FAIL readme_serving: serve() printed '$(head -c 200 "$R/got.txt")', serve_lines() '$(head -c 200 "$R/lines.txt")', wd predict '$want'"; fi
    else say "FAIL readme_serving: $(tail -3 "$R/out" | tr '\n' ' ')"; fi
elif [ ! -f "$DATA/criteo_kaggle_head8000_train.tsv" ]; then say "SKIP readme_serving: no data in $DATA"; fi
}
job readme_serving

# every regression input (tests/fuzz/regress/<name>/) and seed replayed through
# its harness, built with gcc + ASan + UBSan (build/replay_<name>): no libFuzzer needed
replay() {
    local f=$1 name=fuzz_replay_$1 nreg nseed
    if [ ! -x "$B/replay_$f" ]; then say "FAIL $name: $B/replay_$f is missing (it did not build)"; return; fi
    nreg=$(find "tests/fuzz/regress/$f" -type f ! -name '.*' 2>/dev/null | wc -l)
    nseed=$(find "tests/fuzz/corpus/$f" -type f ! -name '.*' 2>/dev/null | wc -l)
    timeout "$TEST_TIMEOUT" "$B/replay_$f" "tests/fuzz/regress/$f" "tests/fuzz/corpus/$f" > "$T/replay.out" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -qx "replayed $((nreg + nseed)) inputs, 0 unreadable" "$T/replay.out"; then
        say "PASS $name: $nreg regression inputs, $nseed seeds"
    else
        say "FAIL $name: exit $rc; last input: $(grep '^replaying ' "$T/replay.out" | tail -1 | cut -d' ' -f2); $(grep -E 'ERROR|SUMMARY|runtime error' "$T/replay.out" | head -3 | tr '\n' ' ')"
        sed 's/^/    /' "$T/replay.out" >> "$log"
    fi
}
for f in $FUZZERS; do job replay "$f"; done

# a short fuzzing pass of every harness (clang's libFuzzer); an input that
# crashes is saved in $B/fuzz-crashes/ for the regression folder (two at a
# time: each has a core for its FUZZ_SECONDS)
fuzz() {
    local f=$1 saved
    if [ ! -x "$B/fuzz_$f" ]; then say "SKIP fuzz_$f: clang with libFuzzer not available"; return; fi
    mkdir -p "$T/fuzz-$f" "$B/fuzz-crashes"
    timeout "$TEST_TIMEOUT" "$B/fuzz_$f" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -timeout=25 -artifact_prefix="$B/fuzz-crashes/$f-" \
        "$T/fuzz-$f" "tests/fuzz/corpus/$f" "tests/fuzz/regress/$f" > "$T/fuzz.log" 2>&1; rc=$?
    if [ $rc = 0 ]; then
        say "PASS fuzz_$f: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$T/fuzz.log" | sed -E 's/[[:space:]]+rss.*//; s/[[:space:]]+/ /g') in ${FUZZ_SECONDS}s"
    else
        saved=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$T/fuzz.log" | head -1)
        if [ $rc = 124 ] || [ $rc = 137 ]; then say "FAIL fuzz_$f: timed out after $TEST_TIMEOUT s"
        else say "FAIL fuzz_$f: exit $rc: $(grep -E 'ERROR|SUMMARY' "$T/fuzz.log" | head -3 | tr '\n' ' ')"; fi
        if [ -n "$saved" ]; then
            say "  the input is saved as $saved; reproduce: $B/replay_$f $saved"
            say "  once fixed, add it to the regression inputs: cp $saved tests/fuzz/regress/$f/ (and commit it; every make test replays it)"
        else say "  no input was saved (see $B/test.log)"; fi
        sed 's/^/    /' "$T/fuzz.log" >> "$log"
    fi
}
for f in $FUZZERS; do job fuzz "$f"; done
drain

p=$(grep -c '^PASS' "$log"); f=$(grep -c '^FAIL' "$log"); s=$(grep -c '^SKIP' "$log")
echo
grep '^FAIL' "$log"
echo "# tests/run.sh took $((SECONDS - start)) s"
echo "$p passed, $f failed, $s skipped"
[ "$f" = 0 ] && [ "$p" -gt 0 ]
