#!/usr/bin/env bash
# Issue 24 "Measure": the cost of crossing processes. samples/s of wd train
# at 1 process x 1 thread, 1 process x 2 threads and 2 processes x 1 thread
# (mpirun, build/wd-mpi) on the same samples, the configurations alternating
# REPEAT times; each line prints the load average before it (the machine may
# be shared: compare runs of similar load, and the spread).
#
# Workload: bench/cpu_train_bench.sh's (`wd gen --rows 200000 --seed 3
# --max-card 1000000`: 13 dense + 26 one-hot slots, 6.3M table rows), E=16,
# MLP 1024-512-256, fp32, global batch 4096, no shuffling, STEPS steps;
# samples/s is wd train's report (the step loop, first step included).
# Usage: bench/mpi_bench.sh [WORKDIR]    Environment: REPEAT=3 STEPS=12
set -e -o pipefail
cd "$(dirname "$0")/.."
make -s build/wd-mpi >/dev/null
W=${1:-/tmp/wd-mpi-bench}; mkdir -p "$W"
cp build/wd-mpi "$W/wd-mpi"; WD=$W/wd-mpi
REPEAT=${REPEAT:-3}; STEPS=${STEPS:-12}
echo "date: $(date -u '+%F %T UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "source: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- widedeep.h tools/wd.c || echo ' + uncommitted changes')"
[ -f "$W/data.wdr" ] || "$WD" gen -o "$W/data.wdr" --rows 200000 --seed 3 --max-card 1000000 --threads 2 >/dev/null
C="--train $W/data.wdr --batch 4096 --no-shuffle --max-steps $STEPS"
one() {   # one LABEL CMD...: a run; prints its samples/s and comm ms a step
    local load; load=$(cut -d' ' -f1 /proc/loadavg)
    "$@" > "$W/out" 2> "$W/err" || { cat "$W/err" >&2; return 1; }
    local sps comm
    sps=$(sed -n 's/^trained .* samples\/s=\([0-9]*\) .*/\1/p' "$W/out")
    comm=$(sed -n 's/^time per step .* comm \([0-9.]*\) .*/\1/p' "$W/out")
    printf '%-26s load %5s  %7s samples/s  comm %7s ms/step\n' "$LABEL" "$load" "$sps" "$comm"
    echo "$LABEL $sps" >> "$W/all.txt"
}
: > "$W/all.txt"
for r in $(seq "$REPEAT"); do
    LABEL="1 process x 1 thread" one "$WD" train $C --threads 1
    LABEL="1 process x 2 threads" one "$WD" train $C --threads 2
    LABEL="2 processes x 1 thread" one mpirun --allow-run-as-root --oversubscribe -np 2 "$WD" train $C --threads 1
done
echo "summary (min / median / max samples/s over $REPEAT runs):"
for L in "1 process x 1 thread" "1 process x 2 threads" "2 processes x 1 thread"; do
    grep "^$L [0-9]" "$W/all.txt" | awk '{print $NF}' | sort -n | awk -v l="$L" '{v[NR]=$1} END {printf "  %-26s %7d / %7d / %7d\n", l, v[1], v[int((NR+1)/2)], v[NR]}'
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
