# The shell tests' harness, sourced by tests/cli.sh, tests/ecosystem.sh,
# tests/mpi.sh and tests/consumer.sh: one PASS/FAIL/SKIP line per test, then
# tl_summary NAME's "# NAME: N passed, N failed, N skipped" (what
# tests/run.sh counts). The helpers below work in $T, the script's
# temporary folder (the script makes it); TL_CTX says how much of a failed
# test's $T/out and $T/err its FAIL line quotes (default: head -c 400).
npass=0; nfail=0; nskip=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); }
# tl_summary NAME: the summary line; fails if a test failed
tl_summary() { echo "# $1: $npass passed, $nfail failed, $nskip skipped"; [ "$nfail" = 0 ]; }

# A test: begin NAME, then checks (ck WHAT CMD...: CMD must succeed; the
# first failed WHAT is reported), then end [NOTE]. run CMD... runs a command
# with stdout in $T/out, stderr in $T/err and its exit status in $rc.
begin() { tname=$1; tfail=; }
ck() { local what=$1; shift; if [ -z "$tfail" ] && ! "$@"; then tfail=$what; fi; return 0; }
ctx() { printf '%s' "$(${TL_CTX:-head -c 400} "$1" 2>/dev/null | tr '\n' '|')"; }
end() { if [ -z "$tfail" ]; then pass "$tname${1:+ $1}"; else fail "$tname" "$tfail [stdout: $(ctx "$T/out")] [stderr: $(ctx "$T/err")]"; fi; }
run() { "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# fails_with WHAT CODE TEXT CMD...: run CMD; it must exit CODE ("WHAT: exit N,
# wanted CODE") with TEXT in its stderr ("WHAT: says TEXT")
fails_with() { local what=$1 want=$2 text=$3; shift 3; run "$@"; ck "$what: exit $rc, wanted $want" [ "$rc" = "$want" ]; ck "$what: says '$text'" err_has "$text"; }
# have FILE...: every file exists and is non-empty (a setup product)
have() { local f; for f; do [ -s "$f" ] || return 1; done; }
# out_has / err_has TEXT: fixed text in the last command's stdout / stderr
out_has() { grep -qF -- "$1" "$T/out"; }
err_has() { grep -qF -- "$1" "$T/err"; }
# near A B TOL: |A - B| <= TOL, both numbers
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { exit !(a != "" && b != "" && a - b <= t && b - a <= t) }'; }
# lines FILE: its line count (0 if absent)
lines() { if [ -f "$1" ]; then grep -c '' "$1"; else echo 0; fi; }
# wait_lines FILE N: until FILE has N lines (30 s at most)
wait_lines() { local i; for i in $(seq 300); do [ "$(lines "$1")" -ge "$2" ] && return 0; sleep 0.1; done; return 1; }
# wait_file FILE: until FILE exists (30 s at most)
wait_file() { local i; for i in $(seq 300); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }
# flip_in_block WD SRC DST BLOCK PCT...: DST is SRC with one byte flipped at
# the first of the offsets (PCT percent into SRC) that `WD inspect --verify`
# finds in block BLOCK; fails when none does
flip_in_block() { local wd=$1 src=$2 dst=$3 blk=$4 k; shift 4
    for k; do
        cp "$src" "$dst"
        printf '\377' | dd of="$dst" bs=1 seek=$(($(stat -c %s "$src") * k / 100)) conv=notrunc 2>/dev/null
        "$wd" inspect --verify "$dst" 2>&1 | grep -q "FAILED at block $blk\$" && return 0
    done
    return 1; }
