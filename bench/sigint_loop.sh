#!/usr/bin/env bash
# The double-SIGINT test of wd convert (tests/sigint_convert.sh, as
# tests/cli.sh runs it) N times in a row under load: a CPU burner and a
# fork/exec loop beside it, so that the signals land at every point of wd's
# start. Prints each failure and "sigint_loop: P passed, F failed of N".
# Usage: bench/sigint_loop.sh [WD] [N]   (default build/wd, 1000)
WD=${1:-build/wd}; N=${2:-1000}
T=$(mktemp -d "${TMPDIR:-/tmp}/sigloop.XXXXXX")
. "$(dirname "$0")/../tests/testlib.sh"
. "$(dirname "$0")/../tests/sigint_convert.sh"
"$WD" gen -o "$T/g.wdr" --rows 200 --seed 3 --tsv "$T/g.tsv" > /dev/null || exit 1
(while :; do :; done) & burner=$!                       # a core kept busy
(while :; do /bin/true; done) > /dev/null 2>&1 & forker=$!   # processes made and run without pause
trap 'kill $burner $forker 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq "$N"); do
    begin "run $i"
    double_sigint_convert "$WD" "$T" "$T/g.tsv"
    end > "$T/result"
    grep -q '^FAIL' "$T/result" && cat "$T/result"
done
echo "sigint_loop: $npass passed, $nfail failed of $N (load: a busy loop and a fork/exec loop)"
