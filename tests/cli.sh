#!/usr/bin/env bash
# End-to-end tests of the wd tool. Usage: tests/cli.sh WD TMPDIR DATADIR
# Prints one PASS/FAIL/SKIP line per test and ends with "# cli: N passed, N
# failed, N skipped"; tests/run.sh checks the number of tests (CLI_TESTS
# there), so a test added or removed here must change that count too.
#
# Every test checks what the command produced (its output, summary values,
# files), not only its exit code, and every file a later test uses is checked
# to exist and be non-empty before it is compared: a wd that does nothing
# (a stub that exits 0 or 1) fails nearly every test.
WD=$1; T=$2; DATA=$3
mkdir -p "$T"
npass=0; nfail=0; nskip=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); }

# A test: begin NAME, then checks (ck WHAT CMD...: CMD must succeed; the
# first failed WHAT is reported), then end. run CMD... runs a command with
# stdout in $T/out, stderr in $T/err and its exit status in $rc.
begin() { tname=$1; tfail=; }
ck() { local what=$1; shift; if [ -z "$tfail" ] && ! "$@"; then tfail=$what; fi; return 0; }
ctx() { printf '%s' "$(head -c 300 "$1" 2>/dev/null | tr '\n' '|')"; }
end() { if [ -z "$tfail" ]; then pass "$tname${1:+ $1}"; else fail "$tname" "$tfail [stdout: $(ctx "$T/out")] [stderr: $(ctx "$T/err")]"; fi; }
run() { "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# expect NAME RC CMD...: begins test NAME, runs CMD and checks its exit status
expect() { begin "$1"; local want=$2; shift 2; run "$@"; ck "exit $rc, wanted $want" [ "$rc" = "$want" ]; }
# have FILE...: every file exists and is non-empty (a setup product)
have() { local f; for f; do [ -s "$f" ] || return 1; done; }
# same_after OFFSET A B: both files are longer than OFFSET bytes and equal after it
same_after() { [ "$(stat -c %s "$2" 2>/dev/null || echo 0)" -gt "$1" ] && [ "$(stat -c %s "$3" 2>/dev/null || echo 0)" -gt "$1" ] &&
               cmp -s <(tail -c +$(($1 + 1)) "$2") <(tail -c +$(($1 + 1)) "$3"); }
# out_has / err_has TEXT: fixed text in the last command's stdout / stderr
out_has() { grep -qF -- "$1" "$T/out"; }
err_has() { grep -qF -- "$1" "$T/err"; }
# samples FILE: the sample count `wd inspect` reports, empty if it fails
samples() { "$WD" inspect "$1" 2>/dev/null | sed -n 's/^samples: *\([0-9]*\)$/\1/p'; }
# near A B TOL: |A - B| <= TOL, both numbers
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { exit !(a != "" && b != "" && a - b <= t && b - a <= t) }'; }

# usage errors: exit 2 with a message naming the problem, and no output file
rm -f "$T/x.wdr"
expect cli_no_args 2 "$WD"
ck "usage on stderr" err_has "usage: wd COMMAND"
end
expect cli_help 0 "$WD" help
for c in convert inspect gen train eval predict dump; do ck "help lists '$c'" grep -q "^  wd $c " "$T/out"; done
ck "help lists --schema-from" out_has "--schema-from"
end
expect cli_unknown_command 2 "$WD" frobnicate
ck "names the command" err_has "unknown command 'frobnicate'"
end
expect cli_unknown_option 2 "$WD" convert --format criteo --nope -o "$T/x.wdr" /dev/null
ck "names the option" err_has "unknown option '--nope'"
ck "no output file" [ ! -e "$T/x.wdr" ]
end
expect cli_missing_value 2 "$WD" convert --format
ck "names the option" err_has "--format needs a value"
end
expect cli_bad_format 2 "$WD" convert --format xml -o "$T/x.wdr" /dev/null
ck "names the value" err_has "'xml'"
ck "no output file" [ ! -e "$T/x.wdr" ]
end
expect cli_bad_threads 2 "$WD" convert --format criteo --threads 0 -o "$T/x.wdr" /dev/null
ck "names the option" err_has "--threads: '0'"
ck "no output file" [ ! -e "$T/x.wdr" ]
end

# gen -> inspect --verify; convert of its TSV matches by content
expect cli_gen 0 "$WD" gen -o "$T/g.wdr" --rows 20000 --seed 3 --tsv "$T/g.tsv" --max-card 50000 --threads 2
ck "g.wdr, g.tsv, g.wdr.prob written" have "$T/g.wdr" "$T/g.tsv" "$T/g.wdr.prob"
ck "summary: rows=20000, oracle_auc 0.5-0.99" grep -q '^generated rows=20000 .*oracle_auc=0\.[5-9]' "$T/out"
ck "20000 probabilities in [0,1]" [ "$(awk '$1 >= 0 && $1 <= 1' "$T/g.wdr.prob" 2>/dev/null | wc -l)" = 20000 ]
ck "20000 TSV rows of 40 fields" [ "$(awk -F'\t' 'NF == 40' "$T/g.tsv" 2>/dev/null | wc -l)" = 20000 ]
end
expect cli_inspect_verify 0 "$WD" inspect --verify "$T/g.wdr"
ck "verify line" grep -q '^verify:   OK, 5 blocks, 20000 samples' "$T/out"
end
begin cli_inspect_counts
ck "samples: 20000" grep -q '^samples:  20000$' "$T/out"
ck "schema: 13 dense, 26 slots" grep -q '^schema:   13 dense, 26 slots$' "$T/out"
ck "26 one-hot slots" [ "$(grep -c '^  slot .* buckets  one-hot$' "$T/out")" = 26 ]
end
hdr=$(( 96 + 48 * 26 + 4 ))
rm -f "$T/gc.wdr"
expect cli_convert_summary 0 "$WD" convert --format criteo --schema-from "$T/g.wdr" --threads 2 -o "$T/gc.wdr" "$T/g.tsv"
ck "gc.wdr written" have "$T/gc.wdr"
ck "summary rows=20000 bad_rows=0 blocks=5" grep -q '^converted rows=20000 bad_rows=0 blocks=5 ' "$T/out"
end
begin cli_gen_equals_convert
ck "setup: g.wdr and gc.wdr" have "$T/g.wdr" "$T/gc.wdr"
ck "blocks differ" same_after $hdr "$T/g.wdr" "$T/gc.wdr"
end

# bad lines: error mode names file:line and leaves no output; skip mode counts
begin cli_bad_line_setup
ck "setup: g.tsv" have "$T/g.tsv"
rm -f "$T/bad.tsv"
if have "$T/g.tsv"; then { head -5 "$T/g.tsv"; printf '1\t2\t3\n'; head -20 "$T/g.tsv" | tail -10; printf '0\tabc'; printf '\t%.0s' $(seq 38); printf '\n'; } > "$T/bad.tsv"; fi
ck "bad.tsv has 17 lines" [ "$(cat "$T/bad.tsv" 2>/dev/null | wc -l)" = 17 ]
end
rm -f "$T/bad.wdr"
expect cli_bad_line_error 1 "$WD" convert --format criteo -o "$T/bad.wdr" "$T/bad.tsv"
ck "message names bad.tsv" err_has "bad.tsv:"
end
begin cli_bad_line_message
ck "names bad.tsv:6 and its field count" err_has "bad.tsv:6: 3 fields"
ck "no output file" [ ! -e "$T/bad.wdr" ]
ck "no temporary file" eval '! ls "$T"/bad.wdr.tmp-* >/dev/null 2>&1'
end
expect cli_bad_line_skip 0 "$WD" convert --format criteo --bad-lines skip -o "$T/bad.wdr" "$T/bad.tsv"
ck "bad.wdr written" have "$T/bad.wdr"
ck "15 samples in bad.wdr" [ "$(samples "$T/bad.wdr")" = 15 ]
end
begin cli_bad_line_skip_report
ck "summary rows=15 bad_rows=2" grep -q '^converted rows=15 bad_rows=2 ' "$T/out"
ck "reports bad.tsv:6" err_has "bad.tsv:6: 3 fields"
ck "reports bad.tsv:17" err_has "bad.tsv:17: I1: 'abc'"
end

# a corrupted block: verify fails naming it
begin cli_corrupt_setup
ck "setup: g.wdr" have "$T/g.wdr"
cp "$T/g.wdr" "$T/flip.wdr" 2>/dev/null
printf '\xff' | dd of="$T/flip.wdr" bs=1 seek=$((hdr + 32 * 3 + 5000)) conv=notrunc 2>/dev/null
ck "flip.wdr differs from g.wdr in one byte" [ "$(cmp -l "$T/g.wdr" "$T/flip.wdr" 2>/dev/null | wc -l)" = 1 ]
end
expect cli_verify_corrupt 1 "$WD" inspect --verify "$T/flip.wdr"
ck "verify line names block 0" grep -q '^verify:   FAILED at block 0$' "$T/out"
end
begin cli_verify_names_block
ck "stderr names flip.wdr block 0 of 5" err_has "flip.wdr: block 0 of 5 is bad"
ck "stderr names the checksum" err_has "checksum"
end
: > "$T/empty.wdr"
expect cli_inspect_empty 1 "$WD" inspect "$T/empty.wdr"
ck "names empty.wdr as empty" err_has "empty.wdr: empty file"
end

# real data: a schema mismatch, size against gzip, CRLF, headerless Avazu CSV
DATA_TESTS="cli_avazu_setup cli_schema_mismatch cli_criteo_convert cli_criteo_smaller_than_gzip cli_crlf_no_final_newline cli_avazu_csv cli_avazu_rows"
if [ -f "$DATA/criteo_kaggle_head8000_train.tsv" ] && [ -f "$DATA/avazu_kaggle_head9000_train.csv" ]; then
    rm -f "$T/av.wdr" "$T/criteo.wdr" "$T/lf.wdr" "$T/crlf.wdr" "$T/av2.wdr"
    expect cli_avazu_setup 0 "$WD" convert --format csv --preset avazu -o "$T/av.wdr" "$DATA/avazu_kaggle_head9000_train.csv"
    ck "av.wdr written" have "$T/av.wdr"
    ck "summary rows=8087 bad_rows=0" grep -q '^converted rows=8087 bad_rows=0 ' "$T/out"
    end
    # avazu schema for a criteo file
    expect cli_schema_mismatch 1 "$WD" convert --format criteo --schema-from "$T/av.wdr" -o "$T/x.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv"
    ck "setup: av.wdr" have "$T/av.wdr"
    ck "message names the mismatch" grep -qi 'schema\|slots' "$T/err"
    ck "no output file" [ ! -e "$T/x.wdr" ]
    end
    # the .wdr of the Criteo sample is no larger than the gzip -6 TSV
    expect cli_criteo_convert 0 "$WD" convert --format criteo -o "$T/criteo.wdr" "$DATA/criteo_kaggle_head8000_train.tsv"
    ck "criteo.wdr written" have "$T/criteo.wdr"
    ck "summary rows=7200 bad_rows=0" grep -q '^converted rows=7200 bad_rows=0 ' "$T/out"
    ck "7200 samples in criteo.wdr" [ "$(samples "$T/criteo.wdr")" = 7200 ]
    end
    begin cli_criteo_smaller_than_gzip
    w=$(stat -c %s "$T/criteo.wdr" 2>/dev/null || echo 0); g=$(gzip -6 -c "$DATA/criteo_kaggle_head8000_train.tsv" | wc -c)
    ck "setup: criteo.wdr" have "$T/criteo.wdr"
    ck "$w > $g bytes" [ "$w" -le "$g" ]
    end "($w <= $g bytes)"
    # CRLF and no trailing newline convert to the same samples
    begin cli_crlf_no_final_newline
    sed 's/$/\r/' "$DATA/criteo_kaggle_head8000_dev.tsv" | head -c -2 > "$T/crlf.tsv"
    run "$WD" convert --format criteo -o "$T/lf.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv"
    ck "LF convert: exit $rc" [ "$rc" = 0 ]
    ck "LF convert: rows=409" grep -q '^converted rows=409 bad_rows=0 ' "$T/out"
    run "$WD" convert --format criteo -o "$T/crlf.wdr" "$T/crlf.tsv"
    ck "CRLF convert: exit $rc" [ "$rc" = 0 ]
    ck "CRLF convert: rows=409" grep -q '^converted rows=409 bad_rows=0 ' "$T/out"
    ck "setup: lf.wdr and crlf.wdr" have "$T/lf.wdr" "$T/crlf.wdr"
    ck "outputs differ" same_after 99 "$T/lf.wdr" "$T/crlf.wdr"
    end
    # Avazu: headerless dev file next to the train file with a header
    expect cli_avazu_csv 0 "$WD" convert --format csv --preset avazu -o "$T/av2.wdr" "$DATA/avazu_kaggle_head9000_train.csv" "$DATA/avazu_kaggle_head9000_dev.csv"
    ck "av2.wdr written" have "$T/av2.wdr"
    end
    begin cli_avazu_rows
    ck "summary rows=8567 bad_rows=0" grep -q '^converted rows=8567 bad_rows=0 ' "$T/out"
    ck "8567 samples in av2.wdr" [ "$(samples "$T/av2.wdr")" = 8567 ]
    end
else
    for t in $DATA_TESTS; do skip "$t" "no data in $DATA"; done
fi

# libsvm
printf '1 0:1 5:1 12:1 100:0.5\n0 3:1 101:2\n-1 7:1\n' > "$T/a.svm"
rm -f "$T/a.wdr"
expect cli_libsvm 0 "$WD" convert --format libsvm --slots user=0-9,item=10-19 --dense-range 100-101 -o "$T/a.wdr" "$T/a.svm"
ck "a.wdr written" have "$T/a.wdr"
ck "summary rows=3 bad_rows=0" grep -q '^converted rows=3 bad_rows=0 ' "$T/out"
end
expect cli_libsvm_inspect 0 "$WD" inspect "$T/a.wdr"
ck "schema: 2 dense, 2 slots" grep -q '^schema:   2 dense, 2 slots$' "$T/out"
ck "user and item are multi-hot" [ "$(grep -cE '^  slot [01] +(user|item) +10 buckets  multi-hot$' "$T/out")" = 2 ]
ck "samples: 3" grep -q '^samples:  3$' "$T/out"
ck "label mean 1/3" grep -q '^labels:   mean 0\.3333' "$T/out"
end

# train / eval / predict
rm -f "$T/tr.wdr" "$T/te.wdr" "$T/m.wdm" "$T/log.csv" "$T/pred.txt" "$T/m3.wdm"
begin cli_train_setup
run "$WD" gen -o "$T/tr.wdr" --rows 6000 --seed 2 --max-card 300
ck "gen tr.wdr: exit $rc" [ "$rc" = 0 ]
run "$WD" gen -o "$T/te.wdr" --rows 1500 --first-row 6000 --seed 2 --max-card 300
ck "gen te.wdr: exit $rc" [ "$rc" = 0 ]
ck "tr.wdr and te.wdr written" have "$T/tr.wdr" "$T/te.wdr"
ck "6000 and 1500 samples" [ "$(samples "$T/tr.wdr") $(samples "$T/te.wdr")" = "6000 1500" ]
end
expect cli_train 0 "$WD" train --train "$T/tr.wdr" --valid "$T/te.wdr" --hidden 32,16 --batch 256 --epochs 2 --threads 2 --cross C1xC2 --save "$T/m.wdm" --log "$T/log.csv" --checkpoint-every 10
ck "m.wdm and log.csv written" have "$T/m.wdm" "$T/log.csv"
end
valid_auc=$(sed -n 's/^trained .* valid_auc=\([0-9.]*\) .*/\1/p' "$T/out")
begin cli_train_output
ck "summary steps=48 samples=12000" grep -q '^trained steps=48 samples=12000 ' "$T/out"
ck "valid_auc 0.6-0.99" grep -q 'valid_auc=0\.[6-9]' "$T/out"
ck "log header" [ "$(head -1 "$T/log.csv" 2>/dev/null)" = "step,samples,epoch,loss,elapsed_s,valid_auc,valid_logloss" ]
ck "a log row per step" [ "$(grep -c . "$T/log.csv" 2>/dev/null)" -ge 49 ]
ck "last log row: step 48, 12000 samples, valid AUC" grep -qE '^48,12000,2,[0-9.]+,[0-9.]+,0\.[0-9]+,[0-9.]+$' "$T/log.csv"
end
expect cli_eval 0 "$WD" eval --model "$T/m.wdm" "$T/te.wdr"
ck "last line auc= logloss= samples=1500" eval 'tail -1 "$T/out" | grep -Eq "^auc=0\.[0-9]+ logloss=[0-9.]+ samples=1500$"'
end
auc=$(tail -1 "$T/out" | sed -n 's/^auc=\([0-9.]*\) .*/\1/p'); mean_pred=$(sed -n 's/^mean_pred=\([0-9.]*\) .*/\1/p' "$T/out")
begin cli_eval_line
ck "eval auc '$auc' equals train's valid_auc '$valid_auc'" near "$auc" "$valid_auc" 0.00002
end
expect cli_predict 0 "$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/pred.txt"
ck "pred.txt written" have "$T/pred.txt"
ck "reports 1500 samples" out_has "predicted 1500 samples"
end
begin cli_predict_lines
ck "1500 lines" [ "$(cat "$T/pred.txt" 2>/dev/null | wc -l)" = 1500 ]
ck "probabilities in [0,1]" awk '!($1 >= 0 && $1 <= 1) { bad = 1 } END { exit bad }' "$T/pred.txt" 2>/dev/null
ck "not all equal" [ "$(sort -u "$T/pred.txt" 2>/dev/null | wc -l)" -gt 100 ]
pmean=$(awk '{ s += $1 } END { if (NR) printf "%.6f", s / NR }' "$T/pred.txt" 2>/dev/null)
ck "mean prediction $pmean equals eval's mean_pred '$mean_pred'" near "$pmean" "$mean_pred" 0.00002
end
expect cli_resume 0 "$WD" train --train "$T/tr.wdr" --resume "$T/m.wdm" --epochs 3 --save "$T/m3.wdm"
ck "m3.wdm written" have "$T/m3.wdm"
ck "m3.wdm differs from m.wdm" eval '! cmp -s "$T/m.wdm" "$T/m3.wdm"'
end
begin cli_resume_continues
ck "summary steps=24 samples=6000 (the third epoch only)" grep -q '^trained steps=24 samples=6000 ' "$T/out"
end
expect cli_resume_with_model_flags 2 "$WD" train --train "$T/tr.wdr" --resume "$T/m.wdm" --hidden 8
ck "says --resume takes the model settings" err_has "--resume"
end
expect cli_train_needs_data 2 "$WD" train --hidden 8
ck "says --train is required" err_has "--train"
end
expect cli_eval_missing_model 1 "$WD" eval --model "$T/nope.wdm" "$T/te.wdr"
ck "names nope.wdm" err_has "nope.wdm"
end
begin cli_truncated_setup
ck "setup: m.wdm" have "$T/m.wdm"
head -c 1000 "$T/m.wdm" > "$T/trunc.wdm" 2>/dev/null
ck "trunc.wdm is 1000 bytes" [ "$(stat -c %s "$T/trunc.wdm" 2>/dev/null)" = 1000 ]
end
expect cli_eval_truncated_model 1 "$WD" eval --model "$T/trunc.wdm" "$T/te.wdr"
ck "names trunc.wdm" err_has "trunc.wdm"
end
begin cli_truncated_model_named
ck "says truncated" grep -qi 'truncated' "$T/err"
end
expect cli_eval_schema_mismatch 1 "$WD" eval --model "$T/m.wdm" "$T/a.wdr"
ck "setup: m.wdm, a.wdr" have "$T/m.wdm" "$T/a.wdr"
ck "names a.wdr" err_has "a.wdr"
end
begin cli_schema_mismatch_message
ck "says schema" grep -qi 'schema' "$T/err"
end
expect cli_device_cuda_without_gpu_build 1 "$WD" train --train "$T/tr.wdr" --device cuda --hidden 8 --max-steps 1
ck "says CUDA" err_has "CUDA"
end

# a process killed at random points of `wd convert` never leaves a half-written
# file under the final name: after each kill the name is absent or verifies.
# The input (8 x g.tsv, 160000 rows, 42 MB) converts in ~0.2 s on 2 cores;
# reference runs measure it here and each kill lands at 5-105% of that time, so
# most land mid-convert (the writer's NAME.tmp-PID exists, the name does not)
# and a few around the final rename.
begin cli_kill_during_convert
rm -f "$T/k.tsv" "$T/kref.wdr"
if have "$T/g.tsv"; then for i in 1 2 3 4 5 6 7 8; do cat "$T/g.tsv"; done > "$T/k.tsv"; fi
ck "setup: k.tsv from g.tsv" have "$T/k.tsv"
ms=
for i in 1 2; do   # the faster of two reference runs sets the kill window
    t0=$(date +%s%N)
    run "$WD" convert --format criteo --threads 2 -o "$T/kref.wdr" "$T/k.tsv"
    t=$(( ($(date +%s%N) - t0) / 1000000 )); [ -z "$ms" ] || [ "$t" -lt "$ms" ] && ms=$t
done
ck "reference convert: exit $rc" [ "$rc" = 0 ]
ck "reference convert: rows=160000" grep -q '^converted rows=160000 bad_rows=0 ' "$T/out"
ck "reference convert: kref.wdr" have "$T/kref.wdr"
trials=20; clean=0; mid=0; finished=0; early=0
if [ -z "$tfail" ]; then
    for i in $(seq $trials); do
        rm -f "$T/killed.wdr"
        "$WD" convert --format criteo --threads 2 -o "$T/killed.wdr" "$T/k.tsv" >/dev/null 2>&1 &
        pid=$!
        d=$(( ms * (5 + RANDOM % 100) / 100 ))
        sleep "$(printf '%d.%03d' $((d / 1000)) $((d % 1000)))"
        kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
        if [ ! -e "$T/killed.wdr" ]; then
            clean=$((clean + 1))
            if [ -e "$T/killed.wdr.tmp-$pid" ]; then mid=$((mid + 1)); else early=$((early + 1)); fi
        elif "$WD" inspect --verify "$T/killed.wdr" >/dev/null 2>&1 && [ "$(samples "$T/killed.wdr")" = 160000 ]; then
            clean=$((clean + 1)); finished=$((finished + 1))
        fi
        rm -f "$T"/killed.wdr.tmp-*
    done
fi
ck "$clean of $trials kills left no file or a complete one under the final name" [ "$clean" = "$trials" ]
ck "no kill landed mid-convert ($mid with NAME.tmp-PID left)" [ "$mid" -ge 1 ]
end "($trials kills at 5-105% of a ${ms} ms convert: $mid mid-convert, $finished had finished, $early before the output was opened)"

# files larger than memory stream: verify 1M samples (164 MB decoded, 70 MB on
# disk) in a process whose whole address space is capped at 60 MB
rm -f "$T/big.wdr"
expect cli_stream_setup 0 "$WD" gen -o "$T/big.wdr" --rows 1000000 --seed 8 --max-card 1000 --threads 2
ck "big.wdr written" have "$T/big.wdr"
ck "big.wdr over 60 MB" [ "$(stat -c %s "$T/big.wdr" 2>/dev/null || echo 0)" -gt 60000000 ]
end
begin cli_stream_under_memory_limit
(ulimit -v 60000; "$WD" inspect --verify "$T/big.wdr") > "$T/out" 2>"$T/err"; rc=$?
ck "exit $rc under a 60 MB cap" [ "$rc" = 0 ]
ck "verify line: 1000000 samples" grep -q 'verify:   OK, .* 1000000 samples' "$T/out"
end
expect cli_train_plan 0 "$WD" train --train "$T/tr.wdr" --plan --gpus 2 --batch 8192
ck "plan header" out_has "device plan: 2 rank(s), batch 4096 per rank"
end
begin cli_train_plan_output
ck "embeddings line" grep -qE '^  embeddings +[1-9][0-9]* bytes' "$T/out"
ck "total line" grep -qE '^  total +[1-9][0-9]* bytes .* per GPU$' "$T/out"
total=$(sed -n 's/^  total *\([0-9]*\) bytes.*/\1/p' "$T/out")
sum=$(awk '/^  / && !/^  total/ { s += $(NF - 3) } END { printf "%d", s }' "$T/out")
ck "total line has a byte count" [ -n "$total" ]
ck "total $total is the sum $sum of the buffers" [ "$total" = "$sum" ]
end

echo "# cli: $npass passed, $nfail failed, $nskip skipped"
[ "$nfail" = 0 ]
