#!/usr/bin/env bash
# Issue 7 measurement: each libFuzzer harness for RUNS executions (default
# 10M), two at a time; prints executions, edges covered, corpus size, result.
# Usage: bench/fuzz_long.sh [RUNS [HARNESS...]]   (default: all seven)
cd "$(dirname "$0")/.."
RUNS=${1:-10000000}; shift
ALL=${*:-wdr criteo libsvm csv wdm api arrow}
make -s $(printf 'build/fuzz_%s ' $ALL) >/dev/null
mkdir -p build/fuzz-long
run() {
    f=$1; mkdir -p build/fuzz-long/corpus-$f
    start=$(date +%s)
    build/fuzz_$f -runs=$RUNS -max_len=65536 -artifact_prefix=build/fuzz-long/$f- -print_final_stats=1 \
        build/fuzz-long/corpus-$f tests/fuzz/corpus/$f > build/fuzz-long/$f.log 2>&1
    rc=$?
    echo "fuzz_$f: exit $rc in $(( $(date +%s) - start )) s; $(grep -E '^#[0-9]+[[:space:]]+DONE' build/fuzz-long/$f.log | sed -E 's/[[:space:]]+rss.*//; s/[[:space:]]+/ /g'); crashes: $(ls build/fuzz-long/$f-crash-* 2>/dev/null | wc -l)"
}
echo "machine: $(nproc) cores; $(date -u +%F); $RUNS runs each"
set -- $ALL   # two at a time: odd and even positions
(i=0; for f in "$@"; do [ $((i++ % 2)) = 0 ] && run $f; done) &
(i=0; for f in "$@"; do [ $((i++ % 2)) = 1 ] && run $f; done) &
wait
