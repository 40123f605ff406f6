#!/usr/bin/env bash
# Mutation pass over widedeep.h: do the tests fail when the code is wrong?
#
# Applies each mutation of a list (tests/mutations.txt) on its own to a COPY
# of widedeep.h or tools/wd.c (the real files are never touched), rebuilds the test
# binaries the mutation names against that copy, runs them, and reports for
# each mutation whether the suite caught it. Caught means any of: a FAIL
# line, a non-zero exit, a crash, a sanitizer report, a missing summary line,
# or a run past the time limit. Ends with "N of M caught".
#
# Usage: tests/mutate.sh [options] [ID...]      (no ID: every mutation)
#   -l FILE        the mutation list (default tests/mutations.txt)
#   -r FILE        also write one tab-separated line per mutation to FILE:
#                  id, section, what, result (caught/MISSED), caught by, seconds
#   --check        only check the list: every pattern must match exactly one
#                  line of the header (and the replacement must change it)
#   --list         print the ids, sections and what each changes
#   --all          run every binary a mutation names, even after one caught it
#   --no-baseline  skip the run of the named binaries on the unmutated copy
#   --keep         keep the work directory (printed at the end)
# Environment: GEMM=onednn|openblas|portable (default: what the Makefile
#   picks), MUTATE_TIMEOUT=S seconds per binary (default 180), DATA=DIR (the
#   sample data for test_wd, test_contract and tests/cli.sh, default ../shared/data), CC, CXX.
#
# The list: stanzas of "key: value" lines separated by blank lines ('#' starts
# a comment line):
#   id: short-name            unique
#   section: 7. Records       the header section (for the report)
#   what: ...                 what the mutation changes, in words
#   file: tools/wd.c          optional: the source to mutate, widedeep.h (the
#                             default) or tools/wd.c (the CLI; run: cli only)
#   find: TEXT                a fixed string (not a regex) that must occur on
#                             exactly one line of that file
#   replace: TEXT             replaces that occurrence of TEXT on the line
#   run: test_wd test_ref     what to run, first the most likely to catch it:
#                             test_X (tests/test_X.c, ASan+UBSan, the build's
#                             GEMM engine), test_X_portable (the same without
#                             the GEMM engine: the portable loops), test_cpp,
#                             cli (tests/cli.sh against a wd built from the copy)
# Values are taken verbatim after "key: ". Patterns are checked against the
# header as it is when the pass starts (a snapshot), so they survive line
# moves; a pattern that matches zero or several lines stops the pass (exit 2).
#
# Exit status: 0 every mutation caught, 1 some missed, 2 a list error, a
# mutation that does not compile, or a baseline failure.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIST=$ROOT/tests/mutations.txt
REPORT=
MODE=run
RUN_ALL=0
BASELINE=1
KEEP=0
TIMEOUT=${MUTATE_TIMEOUT:-180}
DATA=${DATA:-$ROOT/../shared/data}
CC=${CC:-cc}
CXX=${CXX:-c++}
want=()
while [ $# -gt 0 ]; do
    case $1 in
        -l) LIST=$2; shift 2 ;;
        -r) REPORT=$2; shift 2 ;;
        --check) MODE=check; shift ;;
        --list) MODE=list; shift ;;
        --all) RUN_ALL=1; shift ;;
        --no-baseline) BASELINE=0; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "mutate.sh: unknown option $1" >&2; exit 2 ;;
        *) want+=("$1"); shift ;;
    esac
done
[ -f "$LIST" ] || { echo "mutate.sh: no mutation list $LIST" >&2; exit 2; }

# ---- the list ------------------------------------------------------------------
IDS=(); SEC=(); WHAT=(); FIND=(); REPL=(); RUNS=(); LINE=(); SRC=()
errors=0
err() { echo "mutate.sh: $LIST: $*" >&2; errors=$((errors + 1)); }
declare -A cur=()
flush() {
    [ ${#cur[@]} -eq 0 ] && return
    local k
    for k in id section what find replace run; do
        [ -n "${cur[$k]:-}" ] || { err "stanza at line ${cur[at]}: no '$k:'"; cur=(); return; }
    done
    IDS+=("${cur[id]}"); SEC+=("${cur[section]}"); WHAT+=("${cur[what]}"); SRC+=("${cur[file]:-widedeep.h}")
    FIND+=("${cur[find]}"); REPL+=("${cur[replace]}"); RUNS+=("${cur[run]}"); LINE+=("${cur[at]}")
    cur=()
}
n=0
while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    case $line in '#'*) continue ;; esac
    if [[ $line =~ ^[[:space:]]*$ ]]; then flush; continue; fi
    if [[ $line =~ ^(id|section|what|file|find|replace|run):\ (.*)$ ]]; then
        [ ${#cur[@]} -eq 0 ] && cur[at]=$n
        [ -n "${cur[${BASH_REMATCH[1]}]:-}" ] && err "line $n: '${BASH_REMATCH[1]}:' given twice in one stanza"
        cur[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
    else err "line $n: not 'key: value' (keys: id section what file find replace run): $line"; fi
done < "$LIST"
flush
declare -A IDX=()
for i in "${!IDS[@]}"; do
    [ -n "${IDX[${IDS[$i]}]:-}" ] && err "id '${IDS[$i]}' used twice (lines ${LINE[${IDX[${IDS[$i]}]}]} and ${LINE[$i]})"
    IDX[${IDS[$i]}]=$i
    [ "${FIND[$i]}" = "${REPL[$i]}" ] && err "${IDS[$i]}: the replacement equals the pattern"
    case ${SRC[$i]} in
        widedeep.h) ;;
        tools/wd.c) [ "${RUNS[$i]}" = cli ] || err "${IDS[$i]}: a mutation of tools/wd.c runs cli only (run: ${RUNS[$i]})" ;;
        *) err "${IDS[$i]}: file '${SRC[$i]}': widedeep.h or tools/wd.c" ;;
    esac
    for b in ${RUNS[$i]}; do
        case $b in
            cli) ;;
            test_cpp) ;;
            test_*_portable) [ -f "$ROOT/tests/${b%_portable}.c" ] || err "${IDS[$i]}: run '$b': no tests/${b%_portable}.c" ;;
            test_*) [ -f "$ROOT/tests/$b.c" ] || err "${IDS[$i]}: run '$b': no tests/$b.c" ;;
            *) err "${IDS[$i]}: run '$b': not test_X, test_X_portable, test_cpp or cli" ;;
        esac
    done
done
sel=()
if [ ${#want[@]} -eq 0 ]; then sel=("${!IDS[@]}")
else for w in "${want[@]}"; do
    if [ -n "${IDX[$w]:-}" ]; then sel+=("${IDX[$w]}"); else err "no mutation with id '$w'"; fi
done; fi
if [ "$MODE" = list ]; then
    for i in "${sel[@]}"; do printf '%-22s %-24s %s\n' "${IDS[$i]}" "${SEC[$i]}" "${WHAT[$i]}"; done
    exit $((errors ? 2 : 0))
fi

# ---- a snapshot of the sources; every pattern matches one line of it -------------
W=$(mktemp -d "${TMPDIR:-/tmp}/wdmutate.XXXXXX")
cleanup() { [ "$KEEP" = 1 ] && echo "# work directory kept: $W" || rm -rf "$W"; }
trap cleanup EXIT
TREE=$W/tree
mkdir -p "$TREE/tests" "$TREE/tools" "$W/bin" "$W/run"
cp "$ROOT/widedeep.h" "$W/pristine.h"
cp "$ROOT/tools/wd.c" "$W/pristine-wd.c"
cp "$ROOT/tools/wd.c" "$TREE/tools/"
cp "$ROOT"/tests/*.c "$ROOT"/tests/*.h "$ROOT"/tests/*.cpp "$ROOT/tests/cli.sh" "$TREE/tests/" 2>/dev/null
cp -r "$ROOT/tests/golden" "$TREE/tests/"
cp "$W/pristine.h" "$TREE/widedeep.h"

# pristine I: the snapshot of mutation I's source
pristine() { if [ "${SRC[$1]}" = tools/wd.c ]; then echo "$W/pristine-wd.c"; else echo "$W/pristine.h"; fi; }
# mutate I OUT: the source with mutation I applied, into OUT; the line number
# of the match on stdout; fails (message on stderr) unless exactly one line matches
mutate() {
    FIND_S=${FIND[$1]} REPL_S=${REPL[$1]} awk -v out="$2" '
        BEGIN { f = ENVIRON["FIND_S"]; r = ENVIRON["REPL_S"]; hits = 0 }
        { lines[NR] = $0; if (index($0, f) > 0) { hits++; at = NR } }
        END {
            if (hits != 1) { print hits; exit 1 }
            for (i = 1; i <= NR; i++) {
                s = lines[i]
                if (i == at) { p = index(s, f); s = substr(s, 1, p - 1) r substr(s, p + length(f)) }
                print s > out
            }
            print at
        }' "$(pristine "$1")"
}
for i in "${sel[@]}"; do
    if ! at=$(mutate "$i" "$W/check.h"); then
        err "${IDS[$i]} (list line ${LINE[$i]}): the pattern matches $at lines of ${SRC[$i]}, not exactly 1: ${FIND[$i]}"
        [ "$at" != 0 ] && grep -nF -- "${FIND[$i]}" "$(pristine "$i")" | head -5 | sed "s|^|    ${SRC[$i]}:|" >&2
    fi
done
if [ $errors -gt 0 ]; then echo "mutate.sh: $errors error(s) in the list; nothing run" >&2; exit 2; fi
if [ "$MODE" = check ]; then echo "# ${#sel[@]} mutations, every pattern matches exactly one line of its file"; exit 0; fi

# ---- builds ---------------------------------------------------------------------------
if [ -z "${GEMM:-}" ]; then
    if printf '#include <oneapi/dnnl/dnnl.h>\nint main(void){return dnnl_get_effective_cpu_isa()==0;}\n' | $CC -x c - -o /dev/null -ldnnl >/dev/null 2>&1; then GEMM=onednn
    elif printf '#include <cblas.h>\nint main(void){openblas_set_num_threads(1);return 0;}\n' | $CC -I/usr/include/x86_64-linux-gnu/openblas-serial -x c - -o /dev/null -L/usr/lib/x86_64-linux-gnu/openblas-serial -lopenblas >/dev/null 2>&1; then GEMM=openblas
    else GEMM=portable; fi
fi
case $GEMM in
    onednn) GEMMF="-DWD_USE_ONEDNN"; GEMML="-ldnnl -lgomp" ;;
    openblas) GEMMF="-DWD_USE_CBLAS -DWD_USE_OPENBLAS -I/usr/include/x86_64-linux-gnu/openblas-serial"
              GEMML="-L/usr/lib/x86_64-linux-gnu/openblas-serial -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-serial -lopenblas" ;;
    portable) GEMMF=; GEMML= ;;
    *) echo "mutate.sh: GEMM=$GEMM: choose onednn, openblas or portable" >&2; exit 2 ;;
esac
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
# the libraries the Makefile links (LDLIBS), so the pass follows it
LDLIBS=$(sed -n 's/^LDLIBS[[:space:]]*:=[[:space:]]*//p' "$ROOT/Makefile" | head -1)
LDLIBS=${LDLIBS:--lzstd -lpthread -lm}
# the sanitizer settings of tests/run.sh
export ASAN_OPTIONS="detect_leaks=1:leak_check_at_exit=1:halt_on_error=1:abort_on_error=0:exitcode=1"
export LSAN_OPTIONS="detect_leaks=1:exitcode=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=1"

# impl TEST: tests/impl.c where tests/TEST.c uses the header's declarations only
impl() { grep -q '^#define WIDEDEEP_IMPLEMENTATION' "$TREE/tests/$1.c" || echo "$TREE/tests/impl.c"; }
# build_cmd NAME OUTDIR: the compile command of a binary (wd for cli)
build_cmd() {
    local b=$1 o=$2 t=$TREE/tests
    case $b in
        cli) echo "$CC -std=c11 -O1 $GEMMF -o $o/wd $TREE/tools/wd.c $LDLIBS $GEMML" ;;
        test_cpp) echo "$CXX -std=c++17 -O1 -g $SAN $GEMMF -o $o/test_cpp $t/test_cpp.cpp $LDLIBS $GEMML" ;;
        *_portable) echo "$CC -std=c11 -O1 -g $SAN -o $o/$b $t/${b%_portable}.c $(impl "${b%_portable}") $LDLIBS" ;;
        *) echo "$CC -std=c11 -O1 -g $SAN $GEMMF -o $o/$b $t/$b.c $(impl "$b") $LDLIBS $GEMML" ;;
    esac
}
declare -A BPID=()
# start_build NAME OUTDIR: compiles in the background (its own process group, via timeout)
start_build() {
    mkdir -p "$2"
    # shellcheck disable=SC2046
    timeout -k 5 900 $(build_cmd "$1" "$2") > "$2/$1.build.log" 2>&1 &
    BPID[$1]=$!
}
# wait_build NAME OUTDIR: 0 when the binary built
wait_build() {
    local rc=0
    if [ -n "${BPID[$1]:-}" ]; then wait "${BPID[$1]}" || rc=$?; unset "BPID[$1]"; fi
    [ $rc = 0 ] && [ -x "$2/$( [ "$1" = cli ] && echo wd || echo "$1")" ]
}
# stop_builds: ends the background builds this script started (by pid; timeout
# passes the signal to the compiler's whole process group)
stop_builds() {
    local b
    for b in "${!BPID[@]}"; do kill "${BPID[$b]}" 2>/dev/null; wait "${BPID[$b]}" 2>/dev/null; unset "BPID[$b]"; done
}

# run_bin NAME OUTDIR LOG: runs one binary from the tree; sets VERDICT to why
# it counts as caught ("" when it passed)
run_bin() {
    local b=$1 o=$2 log=$3 T rc=0 src
    T=$W/run/$b.$$.$RANDOM
    mkdir -p "$T"
    case $b in
        cli) (cd "$TREE" && timeout -k 10 "$TIMEOUT" bash tests/cli.sh "$o/wd" "$T/cli" "$DATA") > "$log" 2>&1 || rc=$? ;;
        test_wd) (cd "$TREE" && timeout -k 10 "$TIMEOUT" "$o/$b" "$T" "$DATA") > "$log" 2>&1 || rc=$? ;;
        test_contract|test_contract_portable) (cd "$TREE" && timeout -k 10 "$TIMEOUT" "$o/$b" "$T" "$TREE/tests/golden" "$DATA") > "$log" 2>&1 || rc=$? ;;
        test_golden|test_golden_portable) (cd "$TREE" && timeout -k 10 "$TIMEOUT" "$o/$b" "$T" "$TREE/tests/golden") > "$log" 2>&1 || rc=$? ;;
        *) (cd "$TREE" && timeout -k 10 "$TIMEOUT" "$o/$b" "$T") > "$log" 2>&1 || rc=$? ;;
    esac
    rm -rf "$T"
    src=${b%_portable}
    local fails
    fails=$(sed -n 's/^FAIL \([^ :]*\).*/\1/p' "$log" | tr '\n' ' ' | sed 's/ $//')
    if [ $rc = 124 ] || [ $rc = 137 ]; then VERDICT="$b: $(running_test "$src" "$log") timed out after $TIMEOUT s"
    elif [ -n "$fails" ]; then VERDICT="$b: $fails"
    elif grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
        VERDICT="$b: $(running_test "$src" "$log") (sanitizer: $(grep -m1 -oE '(ERROR: (AddressSanitizer|LeakSanitizer): [A-Za-z-]+|runtime error: .{0,60})' "$log"))"
    elif [ $rc != 0 ]; then VERDICT="$b: $(running_test "$src" "$log") (exit status $rc)"
    elif [ "$b" != cli ] && ! grep -q "^# $src: [0-9]* passed, 0 failed" "$log"; then VERDICT="$b: no summary line"
    else VERDICT=""; fi
}
# running_test SRC LOG: the test that was running when a binary died: the
# RUN( in main() of tests/SRC.c after the last one that reported
running_test() {
    local f=$TREE/tests/$1.c last
    [ -f "$f" ] || { [ "$1" = test_cpp ] && f=$TREE/tests/test_cpp.cpp; }
    [ -f "$f" ] || { echo "?"; return; }
    last=$(grep -oE '^(PASS|FAIL|SKIP) [A-Za-z0-9_]+' "$2" | tail -1 | cut -d' ' -f2)
    awk -v last="$last" '/^[a-z ]*int[[:space:]]+main[[:space:]]*\(/ { m = 1 }
        m && match($0, /RUN\([A-Za-z0-9_]+\)/) { t = substr($0, RSTART + 4, RLENGTH - 5)
            if (take || last == "") { print t; exit } if (t == last) take = 1 }' "$f"
}

# run_set DIR NAME...: builds (the next one in the background while one runs)
# and runs the binaries in order; stops at the first that catches unless
# --all. Sets CAUGHT (the verdicts, "; "-joined) and BUILD_ERR.
run_set() {
    local dir=$1; shift
    local list=("$@") k v
    CAUGHT=; BUILD_ERR=
    start_build "${list[0]}" "$dir"
    for k in "${!list[@]}"; do
        if ! wait_build "${list[$k]}" "$dir"; then
            BUILD_ERR="${list[$k]} did not build: $(grep -m3 -E 'error|Error' "$dir/${list[$k]}.build.log" | tr '\n' ' ' | cut -c1-400)"
            stop_builds; return
        fi
        [ $((k + 1)) -lt ${#list[@]} ] && start_build "${list[$((k + 1))]}" "$dir"
        run_bin "${list[$k]}" "$dir" "$dir/${list[$k]}.log"
        v=$VERDICT
        if [ -n "$v" ]; then
            CAUGHT=${CAUGHT:+$CAUGHT; }$v
            [ $RUN_ALL = 1 ] || { stop_builds; return; }
        fi
    done
}

echo "# mutation pass: ${#sel[@]} mutations of $LIST; GEMM engine $GEMM; $(nproc) cores; time limit $TIMEOUT s per binary"
start=$SECONDS
# ---- baseline: every named binary passes on the unmutated copy --------------------
if [ $BASELINE = 1 ]; then
    declare -A seen=(); base=()
    for i in "${sel[@]}"; do for b in ${RUNS[$i]}; do [ -n "${seen[$b]:-}" ] || { seen[$b]=1; base+=("$b"); }; done; done
    t0=$SECONDS
    keep_all=$RUN_ALL; RUN_ALL=1
    run_set "$W/bin/baseline" "${base[@]}"
    RUN_ALL=$keep_all
    if [ -n "$BUILD_ERR" ] || [ -n "$CAUGHT" ]; then
        [ -n "$BUILD_ERR" ] && echo "BASELINE: $BUILD_ERR"
        if [ -n "$CAUGHT" ]; then
            echo "BASELINE FAILS (the unmutated header must pass): $CAUGHT"
            for b in "${base[@]}"; do
                case "; $CAUGHT" in *"; $b: "*) echo "  $b:"; tail -15 "$W/bin/baseline/$b.log" | sed 's/^/    /' ;; esac
            done
        fi
        echo "mutate.sh: the baseline fails; no mutation run" >&2; exit 2
    fi
    echo "# baseline: ${base[*]} pass on the unmutated header ($((SECONDS - t0)) s)"
    rm -rf "$W/bin/baseline"
fi

# ---- the mutations ----------------------------------------------------------------------
ncaught=0; nmissed=0; nbroken=0; missed=()
[ -n "$REPORT" ] && : > "$REPORT"
for i in "${sel[@]}"; do
    id=${IDS[$i]}; t0=$SECONDS
    at=$(mutate "$i" "$TREE/${SRC[$i]}")
    # shellcheck disable=SC2086
    run_set "$W/bin/$id" ${RUNS[$i]}
    dt=$((SECONDS - t0))
    if [ -n "$BUILD_ERR" ]; then
        result=BROKEN; by=$BUILD_ERR; nbroken=$((nbroken + 1))
        printf 'BROKEN  %-22s %s:%-5s %s (%d s)\n' "$id" "${SRC[$i]}" "$at" "$BUILD_ERR" "$dt"
    elif [ -n "$CAUGHT" ]; then
        result=caught; by=$CAUGHT; ncaught=$((ncaught + 1))
        printf 'caught  %-22s %s:%-5s [%s] by %s (%d s)\n' "$id" "${SRC[$i]}" "$at" "${SEC[$i]}" "$CAUGHT" "$dt"
    else
        result=MISSED; by="-"; nmissed=$((nmissed + 1)); missed+=("$id")
        printf 'MISSED  %-22s %s:%-5s [%s] %s; ran %s (%d s)\n' "$id" "${SRC[$i]}" "$at" "${SEC[$i]}" "${WHAT[$i]}" "${RUNS[$i]}" "$dt"
    fi
    [ -n "$REPORT" ] && printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "${SEC[$i]}" "${WHAT[$i]}" "$result" "$by" "$dt" >> "$REPORT"
    rm -rf "$W/bin/$id"
    cp "$W/pristine.h" "$TREE/widedeep.h"
    cp "$W/pristine-wd.c" "$TREE/tools/wd.c"
done
total=${#sel[@]}
echo "# mutate.sh took $((SECONDS - start)) s"
[ $nmissed -gt 0 ] && echo "# missed: ${missed[*]}"
[ $nbroken -gt 0 ] && echo "# $nbroken mutation(s) did not compile: fix the list"
echo "$ncaught of $total caught"
[ $nbroken -gt 0 ] && exit 2
[ $nmissed -gt 0 ] && exit 1
exit 0
