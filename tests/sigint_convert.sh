# The double-SIGINT test of `wd convert`, sourced by tests/cli.sh
# (cli_double_sigint_convert) and bench/sigint_loop.sh (the same test 1,000
# times under load, bench/RESULTS.md). Needs testlib.sh's ck.
#
# The test waits until wd catches SIGINT (its bit in SigCgt of
# /proc/PID/status, read once PID runs wd): from then on every signal is
# handled and every temporary file registered. (It used to wait for the
# output's temporary name, which the up-front probe of the output creates
# and removes before the handlers were installed: a SIGINT in that window
# killed wd and left the probe.)

# caught PID SIGNUM EXE: until process PID runs EXE and catches signal
# SIGNUM (10 s at most)
caught() {
    local i m
    for i in $(seq 1000); do
        if [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$3" ]; then
            m=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
            [ -n "$m" ] && (( (16#$m >> ($2 - 1)) & 1 )) && return 0
        fi
        sleep 0.01
    done
    return 1
}

# holds PID TEXT: until process PID has a file open whose name holds TEXT
# (its /proc/PID/fd; 10 s at most)
holds() {
    local i
    for i in $(seq 1000); do
        ls -l "/proc/$1/fd" 2>/dev/null | grep -qF -- "$2" && return 0
        sleep 0.01
    done
    return 1
}

# double_sigint_convert WD DIR TSV: converts a pipe fed 100 lines of TSV
# (then kept open: wd waits for more) into DIR/cd.wdr; the first SIGINT asks
# it to stop at its next chunk (it keeps waiting), the second exits at once
# (130), removing the temporary output (seen open before the SIGINTs)
double_sigint_convert() {
    local wd=$1 d=$2 tsv=$3 pid rc i
    rm -f "$d/cd.wdr" "$d/cdin.tsv"; mkfifo "$d/cdin.tsv"
    exec 8<>"$d/cdin.tsv"
    (trap - INT; exec "$wd" convert --format criteo --buckets 1000 -o "$d/cd.wdr" "$d/cdin.tsv") \
        > "$d/out" 2> "$d/err" &
    pid=$!
    ck "setup: wd catches SIGINT" caught $pid 2 "$(readlink -f "$wd")"
    timeout 10 head -100 "$tsv" >&8
    ck "setup: wd has the output's temporary file open" holds $pid "$d/cd.wdr.tmp-"
    kill -INT $pid 2>/dev/null; sleep 0.5
    ck "still running after the first SIGINT" kill -0 $pid
    kill -INT $pid 2>/dev/null
    for i in $(seq 400); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    kill -9 $pid 2>/dev/null
    wait $pid; rc=$?
    ck "exit $rc after the second SIGINT, wanted 130" [ "$rc" = 130 ]
    ck "no output and no temporary file" eval '[ ! -e "$d/cd.wdr" ] && [ -z "$(find "$d" -name "cd.wdr*" | head -1)" ]'
    exec 8>&-; rm -f "$d/cdin.tsv"
}
