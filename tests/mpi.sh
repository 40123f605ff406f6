#!/usr/bin/env bash
# Training on several processes under mpirun (widedeep.h section 14's MPI
# communicator, tools/wd.c built as build/wd-mpi). Usage: tests/mpi.sh BUILD_DIR TMPDIR
# Prints one PASS/FAIL/SKIP line per test and ends with "# mpi: N passed, N
# failed, N skipped"; tests/run.sh checks the number of tests (MPI_TESTS there).
#
# The same samples make every step in each layout: blocks of 100 samples, a
# global batch of 600, no shuffling, so that 1, 2 and 3 processes (and 1 to 4
# workers) each see blocks 6k..6k+5 in step k. Models are compared by their
# predictions on held-out data (within float rounding: the sums run in
# another order) and by cmp (run to run, the same layout: bit-identical).
B=$1; T=$2
WD=$B/wd-mpi; WD1=$B/wd-mpi
mkdir -p "$T"
TL_CTX="tail -c 400"
. "$(dirname "$0")/testlib.sh"   # PASS/FAIL/SKIP and the summary; begin, ck, end, run, have, near, wait_file, wait_lines ...
# mp N ARGS...: wd-mpi on N processes (as root in CI and containers)
mp() { local n=$1; shift; timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np "$n" "$WD" "$@"; }
# maxdiff A B: the largest |a - b| of two prediction files (line by line)
maxdiff() { paste "$1" "$2" | awk 'NF != 2 { bad = 1 } { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { if (bad || NR == 0) print "mismatch"; else printf "%.3g\n", m }'; }
pred() { "$WD1" predict --model "$1" -o "$2" "$T/v.wdr" >/dev/null 2>&1; }
auc() { "$WD1" eval --model "$1" "$T/v.wdr" 2>/dev/null | sed -n 's/^auc=\([0-9.]*\) .*/\1/p'; }
close() { local d; d=$(maxdiff "$1" "$2"); [ "$d" != mismatch ] && near "$d" 0 1e-5; }
# gone PID...: none of them is running (exited, or a zombie waiting for init), within 10 s
gone() { local i p left; for i in $(seq 100); do left=
             for p; do [ -e /proc/$p ] && [ "$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)" != Z ] && left="$left $p"; done
             [ -z "$left" ] && return 0; sleep 0.1; done; echo "left running:$left" >> "$T/err"; return 1; }
# ended_together: the job ended after every rank met in wd-mpi's end reduction: after an abort (MPI_Finalize is
# then erroneous) rank 0 alone ended it with MPI_Abort, saying so, the others silent; never a rank's MPI_Abort
# before the others came (what could kill rank 0 mid-save)
ended_together() { ! grep -q "failed (exit status [0-9]*): ending the job\|did not reach the end within" "$T/err" &&
    [ "$(grep -c "ending the job" "$T/err")" = 1 ] && grep -q "^wd: rank 0 of [0-9]*: a rank's communicator aborted, \
so MPI must not be finalized: ending the job (exit status 1)\$" "$T/err"; }
# rank_pid PID R: the child of mpirun PID that is rank R (its OMPI_COMM_WORLD_RANK)
rank_pid() { local p r; for p in $(pgrep -P "$1"); do r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'); [ "$r" = "$2" ] && echo "$p"; done; }

if ! command -v mpirun >/dev/null || [ ! -x "$WD" ]; then
    skip mpi "mpirun or $WD missing (tools/install-deps.sh installs Open MPI; make builds wd-mpi where mpicc exists)"
    tl_summary mpi; exit 0
fi

# the header with WD_USE_MPI compiles warning-free as C11 and C++17 (alone, after libc headers)
begin compile_mpi_header
printf '#define WIDEDEEP_IMPLEMENTATION\n#include "widedeep.h"\n' > "$T/alone.c"
printf '#include <stdio.h>\n#include <time.h>\n#define WIDEDEEP_IMPLEMENTATION\n#include "widedeep.h"\n' > "$T/libc_first.c"
for src in "$T/alone.c" "$T/libc_first.c"; do
    ck "mpicc $(basename "$src"): $(mpicc -std=c11 -Wall -Wextra -Werror -DWD_USE_MPI -I. -c "$src" -o "$T/c.o" 2>&1 | head -c 600)" \
        mpicc -std=c11 -Wall -Wextra -Werror -DWD_USE_MPI -I. -c "$src" -o "$T/c.o"
done
ck "mpicxx: $(mpicxx -std=c++17 -x c++ -Wall -Wextra -Werror -DWD_USE_MPI -I. -c "$T/alone.c" -o "$T/c.o" 2>&1 | head -c 600)" \
    mpicxx -std=c++17 -x c++ -Wall -Wextra -Werror -DWD_USE_MPI -I. -c "$T/alone.c" -o "$T/c.o"
end

"$WD1" gen -o "$T/t.wdr" --rows 7200 --seed 1 --max-card 200 --block 100 >/dev/null 2>&1
"$WD1" gen -o "$T/v.wdr" --rows 2000 --seed 1 --first-row 7200 --max-card 200 --block 100 >/dev/null 2>&1
C="--train $T/t.wdr --batch 600 --no-shuffle --hidden 32,16 --seed 3"

# N processes x 1 thread against 1 process x N threads; the comparison can
# fail: half the batch (another model) is far outside the tolerance
"$WD1" train $C --threads 2 --save "$T/p12.wdm" >/dev/null 2>&1; pred "$T/p12.wdm" "$T/p12.txt"
"$WD1" train --train "$T/t.wdr" --batch 300 --no-shuffle --hidden 32,16 --seed 3 --threads 1 --save "$T/h.wdm" >/dev/null 2>&1; pred "$T/h.wdm" "$T/h.txt"
for L in "2 1 2" "3 1 3" "2 2 4"; do
    set -- $L; np=$1; th=$2; one=$3
    begin "mpi_np${np}x${th}_matches_1x${one}"
    [ -s "$T/p1$one.wdm" ] || { "$WD1" train $C --threads "$one" --save "$T/p1$one.wdm" >/dev/null 2>&1; pred "$T/p1$one.wdm" "$T/p1$one.txt"; }
    run mp "$np" train $C --threads "$th" --save "$T/m$np$th.wdm"
    ck "mpirun -np $np: exit $rc" [ "$rc" = 0 ]
    ck "one report, by rank 0" [ "$(grep -c '^trained steps=12 samples=7200 ' "$T/out")" = 1 ]
    ck "the engine names $np processes of $th threads" grep -q "engine=cpu threads=$th processes=$np " "$T/out"
    pred "$T/m$np$th.wdm" "$T/m$np$th.txt"
    ck "predictions" have "$T/m$np$th.txt" "$T/p1$one.txt" "$T/h.txt"
    d=$(maxdiff "$T/m$np$th.txt" "$T/p1$one.txt"); dh=$(maxdiff "$T/h.txt" "$T/p1$one.txt")
    ck "largest prediction difference $d against 1 process x $one threads (tolerance 1e-5)" close "$T/m$np$th.txt" "$T/p1$one.txt"
    ck "the control (batch 300) differs by only $dh" eval '[ "$dh" != mismatch ] && ! near "$dh" 0 1e-3'
    end "(largest difference $d; batch 300: $dh)"
done

begin mpi_bit_identical_run_to_run
for L in "2 1" "3 1" "2 2"; do
    set -- $L
    run mp "$1" train $C --threads "$2" --save "$T/again$1$2.wdm"
    ck "-np $1 --threads $2: exit $rc" [ "$rc" = 0 ]
    ck "-np $1 --threads $2: the checkpoint differs from the first run's" cmp -s "$T/m$1$2.wdm" "$T/again$1$2.wdm"
done
end

# a checkpoint of 3 processes (step 6 of 24) resumes on 3, 1 and 2 processes:
# the same model, the same evaluation
begin mpi_resume_3_on_1_and_2
run mp 3 train $C --threads 1 --epochs 2 --max-steps 6 --save "$T/c3.wdm"
ck "3 processes, 6 steps: exit $rc" [ "$rc" = 0 ]
ck "c3.wdm" have "$T/c3.wdm"
run mp 3 train --train "$T/t.wdr" --no-shuffle --threads 1 --epochs 2 --resume "$T/c3.wdm" --save "$T/r3.wdm"
ck "resumed on 3: exit $rc" [ "$rc" = 0 ]
ck "resumed on 3: 18 more steps" grep -q '^trained steps=18 ' "$T/out"
run "$WD1" train --train "$T/t.wdr" --no-shuffle --threads 3 --epochs 2 --resume "$T/c3.wdm" --save "$T/r1.wdm"
ck "resumed on 1 process: exit $rc" [ "$rc" = 0 ]
run mp 2 train --train "$T/t.wdr" --no-shuffle --threads 1 --epochs 2 --resume "$T/c3.wdm" --save "$T/r2.wdm"
ck "resumed on 2: exit $rc" [ "$rc" = 0 ]
ck "resumed on 2: 18 more steps" grep -q '^trained steps=18 ' "$T/out"
for n in 3 1 2; do pred "$T/r$n.wdm" "$T/r$n.txt"; done
a3=$(auc "$T/r3.wdm"); a1=$(auc "$T/r1.wdm"); a2=$(auc "$T/r2.wdm")
ck "AUCs of the resumed models: '$a3' '$a1' '$a2'" eval '[ -n "$a3" ] && [ "$a3" = "$a1" ] && [ "$a3" = "$a2" ]'
ck "1 process against 3: difference $(maxdiff "$T/r1.txt" "$T/r3.txt")" close "$T/r1.txt" "$T/r3.txt"
ck "2 processes against 3: difference $(maxdiff "$T/r2.txt" "$T/r3.txt")" close "$T/r2.txt" "$T/r3.txt"
end "(auc $a3 on 3, $a1 on 1, $a2 on 2)"

# every rank scores its share of the validation blocks and the scores are
# gathered (the AUC is exact over all 2000 samples: wd eval's on one process);
# rank 0 alone writes the log, the checkpoint and the report
begin mpi_validation_exact_rank0_logs_saves
run mp 3 train $C --threads 1 --valid "$T/v.wdr" --log "$T/l.csv" --save "$T/val.wdm"
ck "exit $rc" [ "$rc" = 0 ]
ck "one report" [ "$(grep -c '^trained ' "$T/out")" = 1 ]
va=$(sed -n 's/.* valid_auc=\([0-9.]*\) .*/\1/p' "$T/out")
lva=$(tail -1 "$T/l.csv" | cut -d, -f6)
ea=$("$WD1" eval --model "$T/val.wdm" "$T/v.wdr" 2>/dev/null | sed -n 's/^auc=\([0-9.]*\) .*/\1/p')
ck "the validation AUC '$va' is not wd eval's '$ea' over all 2000 samples" near "$va" "$ea" 0.000006
ck "the log's validation AUC '$lva' (6 decimals, as wd eval's) is not '$ea'" [ -n "$ea" ] && [ "$lva" = "$ea" ]
ck "the log: a header and 12 steps, the validation on step 12's row (one writer), got $(grep -c '' "$T/l.csv") lines" [ "$(grep -c '' "$T/l.csv")" = 13 ]
end "(valid auc $va)"

# the validation blocks are split: block j is scored by rank j % 3, so a
# corrupt block 1 fails rank 1 (named), and the others learn it in the
# validation's gather (its vote): every rank ends, the job too
begin mpi_validation_split_rank1_scores_block1
"$WD1" gen -o "$T/v3.wdr" --rows 300 --seed 1 --first-row 7200 --max-card 200 --block 100 >/dev/null 2>&1
cp "$T/v3.wdr" "$T/vbad.wdr"
printf '\377' | dd of="$T/vbad.wdr" bs=1 seek=$(($(stat -c %s "$T/v3.wdr") / 2)) conv=notrunc 2>/dev/null   # in block 1 of 3
run mp 3 train $C --threads 1 --valid "$T/vbad.wdr" --max-steps 2 --eval-every 2
ck "mpirun exit $rc, wanted non-zero" [ "$rc" != 0 ]
ck "the error names block 1" grep -q 'vbad.wdr: block 1: payload checksum mismatch' "$T/err"
ck "rank 1 failed (it scores block 1)" grep -q 'rank 1 of 3 failed\|rank 1 failed (corrupt data): ' "$T/err"
ck "ranks 0 and 2 name rank 1 and its reason (the gather's vote): $(grep -c 'aborted: rank 1 failed (corrupt data): validation: .*vbad.wdr: block 1: ' "$T/err")" \
    [ "$(grep -c '^wd: error: aborted: rank 1 failed (corrupt data): validation: .*vbad.wdr: block 1: ' "$T/err")" = 2 ]
end

# early stop: every rank judges the same gathered AUC and stops at the same
# step; the job ends with status 0 (before, the other ranks waited for rank 0)
begin mpi_early_stop_every_rank
run mp 3 train $C --threads 1 --valid "$T/v.wdr" --eval-every 1 --early-stop 1 --epochs 20 --log "$T/es.jsonl" --save "$T/es.wdm"
ck "exit $rc" [ "$rc" = 0 ]
ck "one report, stopped early" [ "$(grep -c '^trained .* early_stop=1 ' "$T/out")" = 1 ]
sv=$(sed -n 's/^trained steps=\([0-9]*\) .*/\1/p' "$T/out")
ck "the log has a validation row per step ($sv)" [ -n "$sv" ] && [ "$(grep -c '"kind": "valid"' "$T/es.jsonl")" = "$sv" ]
ck "the checkpoint holds step $sv" eval '"$WD1" train --train "$T/t.wdr" --no-shuffle --threads 1 --epochs 20 --resume "$T/es.wdm" --max-steps $((sv + 1)) 2>/dev/null | grep -q "^trained steps=1 "'
end "(stopped after $sv steps)"

# a rank that fails mid-run (a corrupt block of its shard) ends the job: the
# other ranks hear why, mpirun exits non-zero
begin mpi_rank_failure_ends_job
"$WD1" gen -o "$T/b0.wdr" --rows 200 --seed 1 --max-card 200 --block 100 >/dev/null 2>&1
cp "$T/b0.wdr" "$T/bad.wdr"
printf '\377' | dd of="$T/bad.wdr" bs=1 seek=$(($(stat -c %s "$T/b0.wdr") * 7 / 10)) conv=notrunc 2>/dev/null   # in block 1: rank 1's
t0=$SECONDS
run mp 2 train --train "$T/bad.wdr,$T/t.wdr" --batch 200 --no-shuffle --hidden 32,16 --threads 1 --save "$T/e.wdm"
ck "mpirun exit $rc, wanted non-zero" [ "$rc" != 0 ]
ck "took $((SECONDS - t0)) s" [ $((SECONDS - t0)) -lt 30 ]
ck "rank 1 names the block" grep -q 'bad.wdr: block 1: payload checksum mismatch' "$T/err"
ck "the job is ended naming rank 1" grep -q 'rank 1 of 2 failed\|rank 1 failed (corrupt data): ' "$T/err"
end

# kill -9 one rank mid-run: every rank and mpirun end within 30 s, mpirun
# names the lost rank, the last checkpoint loads
# job3 M.wdm: 3 ranks training long in the background, saving M.wdm every 20
# steps; once it is saved: $mpid (the timeout's), $mpirun_pid, $ranks and
# $victim (rank 1's process)
job3() {
    rm -f "$1"
    (exec timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 3 \
        "$WD" train $C --threads 1 --epochs 2000 --save "$1" --checkpoint-every 20) > "$T/out" 2> "$T/err" &
    mpid=$!
    ck "no checkpoint within 30 s" wait_file "$1"
    sleep 0.3
    mpirun_pid=$(pgrep -P $mpid | head -1)
    victim=$(rank_pid "$mpirun_pid" 1)
    ranks=$(pgrep -P "$mpirun_pid")
    ck "rank 1's process not found among mpirun's ($mpirun_pid) children" [ -n "$victim" ]
}
begin mpi_kill9_one_rank
job3 "$T/k.wdm"
t0=$SECONDS
[ -n "$victim" ] && kill -9 "$victim"
wait $mpid; rc=$?
ck "mpirun exit $rc, wanted non-zero (not a timeout)" eval '[ "$rc" != 0 ] && [ "$rc" != 124 ]'
ck "took $((SECONDS - t0)) s" [ $((SECONDS - t0)) -lt 30 ]
ck "the message names rank 1 and its signal" grep -q 'process rank 1 .*signal 9' "$T/out" "$T/err"
ck "ranks left running" gone $ranks
ck "the last checkpoint does not load" eval '"$WD1" eval --model "$T/k.wdm" "$T/v.wdr" 2>/dev/null | grep -q "^auc=0\.[0-9]"'
end

# SIGINT to mpirun (Ctrl-C): it sends SIGTERM to every rank, all stop at the
# same step, rank 0 saves it; the checkpoint resumes from that step. (Open
# MPI 4.1 waits odls_base_sigkill_timeout seconds, 1 by default, before the
# SIGTERM and as long again before a SIGKILL: 5 s here, so that a loaded
# machine's save is not killed; README says so.)
begin mpi_sigint_stops_and_saves
rm -f "$T/s.wdm" "$T/sl.csv"
(trap - INT; exec timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe --mca odls_base_sigkill_timeout 5 -np 3 "$WD" train $C --threads 1 --epochs 2000 --save "$T/s.wdm" --log "$T/sl.csv") > "$T/out" 2> "$T/err" &
mpid=$!
ck "no progress within 30 s" wait_lines "$T/sl.csv" 30
mpirun_pid=$(pgrep -P $mpid | head -1)
ranks=$(pgrep -P "$mpirun_pid")
kill -INT "$mpirun_pid"
wait $mpid; rc=$?
ck "mpirun exit $rc, wanted non-zero (not a timeout)" eval '[ "$rc" != 0 ] && [ "$rc" != 124 ]'
steps=$(sed -n 's/.*training stopped at step \([0-9]*\) .*/\1/p' "$T/err" | sort -u)
ck "every rank stops at one step: got $(sed -n 's/.*training stopped at step \([0-9]*\) .*/\1/p' "$T/err" | tr '\n' ' ')" \
    eval '[ "$(grep -c "training stopped at step" "$T/err")" = 3 ] && [ "$(echo "$steps" | wc -l)" = 1 ] && [ -n "$steps" ]'
ck "rank 0 saved" grep -q "checkpoint saved to $T/s.wdm" "$T/err"
ck "ranks left running" gone $ranks
ck "temporary files left" eval '[ -z "$(find "$T" -name "*.tmp-*" | head -1)" ]'
run "$WD1" train --train "$T/t.wdr" --no-shuffle --threads 1 --epochs 2000 --resume "$T/s.wdm" --max-steps $((steps + 1))
ck "the checkpoint holds step $steps (one more step: exit $rc)" grep -q '^trained steps=1 ' "$T/out"
end "(stopped at step $steps)"

# the CUDA build's bootstrap (NCCL's id by MPI_Bcast): built with nvcc; one
# rank trains on a GPU, or says there is none
if command -v nvcc >/dev/null; then
    begin mpi_cuda_bootstrap
    ck "$B/wd-mpi-cuda did not build" [ -x "$B/wd-mpi-cuda" ]
    WD=$B/wd-mpi-cuda run mp 1 train $C --device cuda --max-steps 1
    ck "neither trained nor reported a missing GPU (exit $rc)" eval 'grep -q "^trained steps=1 " "$T/out" || grep -q "no CUDA device" "$T/err"'
    end
else skip mpi_cuda_bootstrap "nvcc not installed"; fi

# Fail fast: a rank's failure between steps aborts the communicator; every
# rank ends at once with an error naming the failed rank and its reason (in
# its own words), within seconds. (a) rank 2's third block is corrupt
# (blocks 2, 5, 8 of a 9-block file: its loader fails at step 2); rank 0
# saves the model of its last finished step, and the job resumed from it
# on the repaired file ends bit-identical to a run that never failed; (b)
# the validation after step 2: block 8 of the validation file is rank 2's
# share (8 % 3), and ranks 0 and 1 end in the validation's gather
begin mpi_fail_fast
F="--batch 300 --no-shuffle --hidden 32,16 --threads 1"
"$WD1" gen -o "$T/v9.wdr" --rows 900 --seed 1 --max-card 200 --block 100 >/dev/null 2>&1
ck "no byte of block 8 found to flip" flip_in_block "$WD1" "$T/v9.wdr" "$T/bad9.wdr" 8 90 91 92 93 94
for c in train valid; do
    t0=$SECONDS
    if [ $c = train ]; then failed=2; run mp 3 train --train "$T/bad9.wdr,$T/t.wdr" $F --save "$T/ff.wdm"
    else failed=2; run mp 3 train $C --threads 1 --valid "$T/bad9.wdr" --eval-every 2; fi
    ck "$c: mpirun exit $rc, wanted non-zero (not a timeout)" eval '[ "$rc" != 0 ] && [ "$rc" != 124 ]'
    ck "$c: took $((SECONDS - t0)) s" [ $((SECONDS - t0)) -lt 30 ]
    ck "$c: rank $failed names the block" grep -q "^wd: error: corrupt data: .*bad9.wdr: block 8: " "$T/err"
    ck "$c: the other two ranks name rank $failed and its reason: $(grep -c "rank $failed failed (corrupt data): .*bad9.wdr: block 8: " "$T/err")" \
        [ "$(grep -c "^wd: error: aborted: rank $failed failed (corrupt data): .*bad9.wdr: block 8: " "$T/err")" = 2 ]
    [ $c = train ] && ck "train: rank 0 saved step 2" grep -q "ff.wdm holds the state before the error (step 2" "$T/err"
done
run mp 3 train --train "$T/v9.wdr,$T/t.wdr" $F --save "$T/ffref.wdm"
ck "uninterrupted: exit $rc" [ "$rc" = 0 ]
run mp 3 train --train "$T/v9.wdr,$T/t.wdr" --no-shuffle --threads 1 --resume "$T/ff.wdm" --save "$T/ffres.wdm"
ck "resumed from step 2: exit $rc" [ "$rc" = 0 ]
ck "the resumed run's checkpoint differs from the uninterrupted one's" cmp -s "$T/ffres.wdm" "$T/ffref.wdm"
end

# Early stop decided at a validation (every 2 steps) lands in the next step,
# a checkpoint step (--checkpoint-every 1), which rank 0 alone writes: every
# rank waits for its steps at checkpoint steps too, so all three end at that
# step (rank 0 alone used to: the others waited in the next step's
# collectives for the communicator's timeout, here mpirun's 120 s)
begin mpi_early_stop_at_checkpoint
t0=$SECONDS
run mp 3 train $C --threads 1 --valid "$T/v.wdr" --eval-every 2 --early-stop 1 --checkpoint-every 1 --epochs 20 --save "$T/esc.wdm"
ck "mpirun exit $rc, wanted 0" [ "$rc" = 0 ]
ck "took $((SECONDS - t0)) s" [ $((SECONDS - t0)) -lt 60 ]
ck "one report, early_stop=1" [ "$(grep -c '^trained steps=[0-9]* .* early_stop=1 ' "$T/out")" = 1 ]
ck "no rank failed" eval '! grep -q "error\|failed" "$T/err"'
ck "a model saved" have "$T/esc.wdm"
end "($((SECONDS - t0)) s)"

# A failure every rank learns (rank 2's corrupt block 8): every rank writes
# its message, rank 0 its save after the error, and the job ends once they
# all met in wd-mpi's end reduction (it used to wait 3 s at most, then abort,
# which could kill rank 0 mid-save): rank 0 ends the job with MPI_Abort (an
# abort may leave a collective pending, ranks 0 and 1 in the step's sum, or
# notices unreceived: MPI_Finalize would be erroneous) (ended_together)
begin mpi_shared_failure_ends_together
"$WD1" gen -o "$T/f9.wdr" --rows 900 --seed 1 --max-card 200 --block 100 >/dev/null 2>&1
ck "no byte of block 8 found to flip" flip_in_block "$WD1" "$T/f9.wdr" "$T/fbad.wdr" 8 90 91 92 93 94
t0=$SECONDS
run mp 3 train --train "$T/fbad.wdr,$T/t.wdr" --batch 300 --no-shuffle --hidden 32,16 --threads 1 --save "$T/fbad.wdm"
ck "mpirun exit $rc, wanted non-zero (not a timeout)" eval '[ "$rc" != 0 ] && [ "$rc" != 124 ]'
ck "took $((SECONDS - t0)) s" [ $((SECONDS - t0)) -lt 30 ]
ck "3 error messages: $(grep -c '^wd: error: ' "$T/err")" [ "$(grep -c '^wd: error: ' "$T/err")" = 3 ]
ck "rank 0 saved the model before the error" grep -q "fbad.wdm holds the state before the error" "$T/err"
ck "the job did not end together: $(grep -m1 'ending the job' "$T/err")" ended_together
end

# WD_MPI_CHUNK_BYTES=300 (a test hook; the default is 1 GiB): every MPI call
# moves at most 300 bytes per rank, so the dense gradient's sum, the sparse
# rows and the validation's scores go in many chunks, the last of each
# partial, and the ranks' shares differ (validation blocks of 100 and 50
# samples on 3 ranks: 100, 50 and 0 samples). tests/mpi_chunks.c trains on
# wd_comm_mpi_create's communicator without, then with the chunks, and
# compares bit for bit: the parameters and optimizer state, every
# validation's AUC and log loss; the communicator's call counters show the
# default's one MPI_Iallgatherv per gather and 300 bytes' rounds; then
# gathers with a rank of 0 bytes and lengths at multiples of the chunk. A
# value out of range, or unequal on the ranks, is refused on every rank
# (wd-mpi: the variable reaches the ranks).
begin mpi_chunked_bit_identical
"$WD1" gen -o "$T/v150.wdr" --rows 150 --seed 1 --first-row 7200 --max-card 200 --block 100 >/dev/null 2>&1
run mpicc -std=c11 -O1 -Wall -Wextra -DWD_USE_MPI -I. tests/mpi_chunks.c -o "$T/mpi_chunks" -lzstd -lz -lpthread -lm
ck "mpicc tests/mpi_chunks.c: exit $rc: $(head -c 300 "$T/err")" eval '[ "$rc" = 0 ] && [ ! -s "$T/err" ]'
run timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 3 "$T/mpi_chunks" "$T/t.wdr" "$T/v150.wdr"
ck "mpi_chunks: exit $rc" [ "$rc" = 0 ]
ck "3 ranks passed: $(grep -c '^PASS test_chunked_bit_identical' "$T/out")" [ "$(grep -c '^PASS test_chunked_bit_identical' "$T/out")" = 3 ]
ck "3 ranks passed the edges: $(grep -c '^PASS test_allgather_edges' "$T/out")" [ "$(grep -c '^PASS test_allgather_edges' "$T/out")" = 3 ]
note=$(grep -m1 '^  4 validations' "$T/out")
export WD_MPI_CHUNK_BYTES=7
run mp 2 train $C --threads 1 --max-steps 1
unset WD_MPI_CHUNK_BYTES
ck "chunk 7 accepted (exit $rc), or the variable did not reach the ranks" eval '[ "$rc" != 0 ] && [ "$(grep -c "rank 0'"'"'s WD_MPI_CHUNK_BYTES is not a number of bytes from 8" "$T/err")" = 2 ]'
run timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$WD" train $C --threads 1 --max-steps 1 : -np 1 env WD_MPI_CHUNK_BYTES=300 "$WD" train $C --threads 1 --max-steps 1
ck "unequal chunks: exit $rc, wanted non-zero" [ "$rc" != 0 ]
ck "unequal chunks: both ranks name them" [ "$(grep -c 'WD_MPI_CHUNK_BYTES is 300 on rank 1, 1073741824 on rank 0: it must be equal on every rank' "$T/err")" = 2 ]
end "($note)"

# A rank that fails before its first step (its shard: the second training
# file, truncated; then rank 0's --log, in wd-mpi before wd_train) aborts
# the communicator (fail fast): the other ranks end at once naming it and
# its reason, and all meet in wd-mpi's end reduction (ended_together)
begin mpi_setup_failure_fails_fast
head -c 3000 "$T/b0.wdr" > "$T/trunc.wdr"
t0=$SECONDS
run timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$WD" train --train "$T/t.wdr,$T/b0.wdr" --batch 200 --threads 1 --hidden 32,16 : \
    -np 1 "$WD" train --train "$T/t.wdr,$T/trunc.wdr" --batch 200 --threads 1 --hidden 32,16
ck "mpirun exit $rc, wanted non-zero (not a timeout)" eval '[ "$rc" != 0 ] && [ "$rc" != 124 ]'
ck "took $((SECONDS - t0)) s" [ $((SECONDS - t0)) -lt 10 ]
ck "rank 1 names its file" grep -q '^wd: error: .*trunc.wdr' "$T/err"
ck "rank 0 names rank 1 and its reason" grep -q '^wd: error: aborted: rank 1 failed (.*): .*trunc.wdr' "$T/err"
ck "the job did not end together: $(grep -m1 'ending the job' "$T/err")" ended_together
t1=$SECONDS   # wd-mpi's own set-up after MPI started: rank 0's --log (it aborts the communicator)
run mp 3 train $C --threads 1 --log /nonexistent-dir/l.csv
ck "--log: mpirun exit $rc, wanted non-zero (not a timeout)" eval '[ "$rc" != 0 ] && [ "$rc" != 124 ]'
ck "--log: took $((SECONDS - t1)) s" [ $((SECONDS - t1)) -lt 10 ]
ck "--log: ranks 1 and 2 name rank 0 and its reason" [ "$(grep -c '^wd: error: aborted: rank 0 failed (I/O error): /nonexistent-dir/l.csv: cannot create the log' "$T/err")" = 2 ]
end "($((t1 - t0)) s, $((SECONDS - t1)) s)"

# A setting the ranks must share, unequal (rank 2's --max-steps): every
# rank refuses at start-up, naming the rank and the setting (each aborts the
# communicator: rank 0 ends the job, ended_together)
begin mpi_setting_mismatch_refused
t0=$SECONDS
run timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$WD" train $C --threads 1 : -np 1 "$WD" train $C --threads 1 --max-steps 3
ck "mpirun exit $rc, wanted non-zero (not a timeout)" eval '[ "$rc" != 0 ] && [ "$rc" != 124 ]'
ck "took $((SECONDS - t0)) s" [ $((SECONDS - t0)) -lt 10 ]
ck "3 ranks name rank 2 and the setting: $(grep -c "rank 2's max_steps is 3, rank 0's 0: it must be equal on every rank" "$T/err")" \
    [ "$(grep -c "^wd: error: invalid argument: start-up: rank 2's max_steps is 3, rank 0's 0: it must be equal on every rank" "$T/err")" = 3 ]
ck "the job did not end together: $(grep -m1 'ending the job' "$T/err")" ended_together
end "($((SECONDS - t0)) s)"

# What may differ between the ranks is accepted: worker threads, the same
# training data under another path, the log (rank 0 alone writes it), and
# the CUDA device's settings on the CPU device (which reads none of them)
begin mpi_rank_differences_accepted
ln -sf "$T/t.wdr" "$T/t-other-path.wdr"
A="--batch 600 --no-shuffle --hidden 32,16 --seed 3 --max-steps 2"
run timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$WD" train --train "$T/t.wdr" $A --threads 1 --log "$T/diff0.csv" : \
    -np 1 env WD_EXCHANGE_CAP=4096 WD_EXCHANGE_FULL=1 WD_CHECK_TABLES=1 WD_CUDA_SPARSE=fused "$WD" train --train "$T/t-other-path.wdr" $A --threads 2 --log "$T/diff1.csv"
ck "mpirun exit $rc: $(grep -m1 'error' "$T/err")" [ "$rc" = 0 ]
ck "2 steps logged" [ "$(tail -n1 "$T/diff0.csv" | cut -d, -f1)" = 2 ]
end

# Rank 0 alone writes --save and --tensorboard: given to another rank and
# not to rank 0 (or another name), every rank refuses it at once, naming the
# rank (it used to be ignored: exit 0, no file)
begin mpi_outputs_of_rank0_only
for o in "--save $T/r1only.wdm" "--tensorboard $T/r1only.tb"; do
    t0=$SECONDS
    run timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$WD" train $C --threads 1 --max-steps 1 : \
        -np 1 "$WD" train $C --threads 1 --max-steps 1 $o
    ck "${o%% *} on rank 1 alone: exit $rc, wanted non-zero (not a timeout), $((SECONDS - t0)) s" \
        eval '[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ $((SECONDS - t0)) -lt 20 ]'
    # (every rank says it; mpirun may end one before its words reach it: the first to exit got them out)
    ck "${o%% *}: named (got $(grep -c "rank 1's ${o%% *} '$T/r1only" "$T/err"))" \
        [ "$(grep -c "rank 1's ${o%% *} '$T/r1only.* is not rank 0's (none): rank 0 alone writes" "$T/err")" -ge 1 ]
    ck "${o%% *}: nothing trained" \
        eval '! grep -q "^trained" "$T/out" && [ ! -e "$T/r1only.wdm" ] && [ ! -e "$T/r1only.tb" ]'
done
# whole names compared: two --save names alike in their first 1023 bytes (they used to pass as one)
L=$T; for i in 1 2 3 4 5; do L=$L/$(printf 'l%.0s' {1..250}); done   # 1255 bytes past $T
mkdir -p "$L"
run timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 1 "$WD" train $C --threads 1 --max-steps 1 \
    --save "$L/long_a.wdm" : -np 1 "$WD" train $C --threads 1 --max-steps 1 --save "$L/long_b.wdm"
ck "names of $((${#L} + 11)) bytes differing after 1023: exit $rc, wanted non-zero (not a timeout), named" \
    eval '[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "rank 1'"'"'s --save .* is not rank 0'"'"'s" "$T/err"'
ck "long names: nothing trained" eval '! grep -q "^trained" "$T/out" && [ -z "$(ls "$L")" ]'
rm -rf "$T/llll"*
end

# A stopped rank (SIGSTOP) is found: the ranks that waited WD_COMM_TIMEOUT
# (10 s: the start-up and checkpoints of 3 ranks on 2 loaded cores stay well
# inside it; the stop comes after the first checkpoint) name it (a roll call
# it does not answer), and the survivors say which checkpoint is on disk
# before wd-mpi's end reduction (60 s: rank 0 may be saving); once they have,
# the stopped rank is continued: it learns the abort and comes to the end
# reduction too (ended_together: rank 0 alone ends the job with MPI_Abort,
# the others silent; Open MPI 4.1's mpirun hung or crashed at times when
# ranks finalized beside another's MPI_Abort)
begin mpi_stopped_rank_ends_job
WD_COMM_TIMEOUT=10 job3 "$T/st.wdm"
t0=$SECONDS
[ -n "$victim" ] && kill -STOP "$victim"
said() { grep -q "^wd: $T/st.wdm holds the state before the error (step [1-9]" "$T/err" &&
         grep -q "^wd: rank 0's $T/st.wdm holds the checkpoint of step [1-9][0-9]*0 " "$T/err"; }
for i in $(seq 600); do said && break; kill -0 $mpid 2>/dev/null || break; sleep 0.1; done
t1=$((SECONDS - t0))
[ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
wait $mpid; rc=$?
ck "mpirun exit $rc, wanted 1" [ "$rc" = 1 ]
ck "the stopped rank is named" grep -q "rank 1 did not answer within 2 s (stopped, hung, or busy longer" "$T/err"
ck "the job did not end together: $(grep -m1 'ending the job' "$T/err")" ended_together
ck "a rank said it stops (mpirun's SIGTERM after the abort)" eval '! grep -q "stopping\|interrupted" "$T/err"'
ck "the survivors say what st.wdm holds: $(grep -c 'st.wdm holds ' "$T/err")" said
ck "they said it $t1 s after the stop, wanted under 40" [ "$t1" -lt 40 ]
ck "ranks left running" gone $ranks
ck "the checkpoint does not load" \
    eval '"$WD1" eval --model "$T/st.wdm" "$T/v.wdr" 2>/dev/null | grep -q "^auc=0\.[0-9]"'
end "($t1 s)"

# The chunked collectives through wd-mpi itself (beside tests/mpi_chunks.c):
# 300-byte chunks train and validate to the same checkpoint, bit for bit,
# and the same validation AUC as one call per collective
begin mpi_chunked_wd_mpi_same_checkpoint
run mp 2 train $C --threads 1 --max-steps 4 --valid "$T/v150.wdr" --eval-every 2 --save "$T/ch1.wdm"
ck "unchunked: exit $rc" [ "$rc" = 0 ]
a1=$(sed -n 's/.* valid_auc=\([0-9.]*\) .*/\1/p' "$T/out")
export WD_MPI_CHUNK_BYTES=300
run mp 2 train $C --threads 1 --max-steps 4 --valid "$T/v150.wdr" --eval-every 2 --save "$T/ch2.wdm"
unset WD_MPI_CHUNK_BYTES
a2=$(sed -n 's/.* valid_auc=\([0-9.]*\) .*/\1/p' "$T/out")
ck "300-byte chunks: exit $rc" [ "$rc" = 0 ]
ck "the checkpoints differ" eval 'have "$T/ch1.wdm" && cmp -s "$T/ch1.wdm" "$T/ch2.wdm"'
ck "the validation AUCs differ: '$a1' '$a2'" eval '[ -n "$a1" ] && [ "$a1" = "$a2" ]'
end "(auc $a1)"

# After an abort (tests/mpi_end.c, under ASan: its header comment): a
# collective left pending writes only the communicator's own memory, never
# the caller's freed buffer, and wd_comm_mpi_destroy never frees an aborted
# communicator, whose notices MPI may still read (heap-use-after-free writes
# and reads at 27fd887), and says that MPI must not be finalized (the
# program then ends the job with MPI_Abort, errorcode 3). Over TCP on the
# loopback with an eager limit of 128 bytes: the 400-byte notice goes by
# the rendezvous protocol, read from its buffer when it is received
begin mpi_end_after_abort
run mpicc -std=c11 -O1 -g -fsanitize=address -fno-omit-frame-pointer -Wall -Wextra -DWD_USE_MPI -I. tests/mpi_end.c \
    -o "$T/mpi_end" -lzstd -lz -lpthread -lm
ck "mpicc -fsanitize=address tests/mpi_end.c: exit $rc: $(head -c 300 "$T/err")" \
    eval '[ "$rc" = 0 ] && [ ! -s "$T/err" ]'
t0=$SECONDS
ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 \
    run timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp \
    --mca btl_tcp_if_include lo --mca btl_tcp_eager_limit 128 --mca btl_tcp_rndv_eager_limit 128 "$T/mpi_end"
ck "ended by rank 0's MPI_Abort (errorcode 3): exit $rc" [ "$rc" = 3 ]
ck "ASan: $(grep -m1 -A3 'ERROR: AddressSanitizer' "$T/err" "$T/out" | head -c 600)" \
    eval '! grep -q AddressSanitizer "$T/err" "$T/out"'
for t in test_late_rank_finishes_pending_collective test_notices_received_before_free \
    test_pending_collective_refuses_finalize; do
    ck "2 ranks passed $t: $(grep -c "^PASS $t" "$T/out")" [ "$(grep -c "^PASS $t" "$T/out")" = 2 ]
done
end "($((SECONDS - t0)) s)"

tl_summary mpi
