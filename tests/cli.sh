#!/usr/bin/env bash
# End-to-end tests of the wd tool. Usage: tests/cli.sh WD TMPDIR DATADIR
# Prints one PASS/FAIL/SKIP line per test.
WD=$1; T=$2; DATA=$3
mkdir -p "$T"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
expect_rc() {  # name want_rc cmd...
    local name=$1 want=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"; local rc=$?
    if [ "$rc" = "$want" ]; then pass "$name"; else fail "$name" "exit $rc, wanted $want: $(head -c 300 "$T/err")"; fi
}

expect_rc cli_no_args 2 "$WD"
expect_rc cli_help 0 "$WD" help
expect_rc cli_unknown_command 2 "$WD" frobnicate
expect_rc cli_unknown_option 2 "$WD" convert --format criteo --nope -o "$T/x.wdr" /dev/null
expect_rc cli_missing_value 2 "$WD" convert --format
expect_rc cli_bad_format 2 "$WD" convert --format xml -o "$T/x.wdr" /dev/null
expect_rc cli_bad_threads 2 "$WD" convert --format criteo --threads 0 -o "$T/x.wdr" /dev/null

# gen -> inspect --verify; convert of its TSV matches by content
"$WD" gen -o "$T/g.wdr" --rows 20000 --seed 3 --tsv "$T/g.tsv" --max-card 50000 --threads 2 >"$T/gen.out" 2>&1
if grep -q 'oracle_auc=0\.[5-9]' "$T/gen.out" && [ -s "$T/g.wdr.prob" ] && [ "$(wc -l < "$T/g.wdr.prob")" = 20000 ]; then pass cli_gen; else fail cli_gen "$(cat "$T/gen.out")"; fi
expect_rc cli_inspect_verify 0 "$WD" inspect --verify "$T/g.wdr"
grep -q 'samples:  20000' "$T/out" && pass cli_inspect_counts || fail cli_inspect_counts "$(cat "$T/out")"
"$WD" convert --format criteo --schema-from "$T/g.wdr" --threads 2 -o "$T/gc.wdr" "$T/g.tsv" >"$T/out" 2>&1
hdr=$(( 96 + 48 * 26 + 4 ))
if cmp -s <(tail -c +$((hdr + 1)) "$T/g.wdr") <(tail -c +$((hdr + 1)) "$T/gc.wdr"); then pass cli_gen_equals_convert; else fail cli_gen_equals_convert "blocks differ"; fi
grep -q '^converted rows=20000 bad_rows=0' "$T/out" && pass cli_convert_summary || fail cli_convert_summary "$(cat "$T/out")"

# bad lines: error mode names file:line and leaves no output; skip mode counts
{ head -5 "$T/g.tsv"; printf '1\t2\t3\n'; head -20 "$T/g.tsv" | tail -10; printf '0\tabc'; printf '\t%.0s' $(seq 38); printf '\n'; } > "$T/bad.tsv"
rm -f "$T/bad.wdr"
expect_rc cli_bad_line_error 1 "$WD" convert --format criteo -o "$T/bad.wdr" "$T/bad.tsv"
if grep -q 'bad.tsv:6: 3 fields' "$T/err" && [ ! -e "$T/bad.wdr" ] && ! ls "$T"/bad.wdr.tmp-* >/dev/null 2>&1; then pass cli_bad_line_message; else fail cli_bad_line_message "$(cat "$T/err")"; fi
expect_rc cli_bad_line_skip 0 "$WD" convert --format criteo --bad-lines skip -o "$T/bad.wdr" "$T/bad.tsv"
if grep -q 'bad_rows=2' "$T/out" && grep -q 'bad.tsv:6:' "$T/err" && grep -q "bad.tsv:17: I1: 'abc'" "$T/err"; then pass cli_bad_line_skip_report; else fail cli_bad_line_skip_report "$(cat "$T/out" "$T/err")"; fi

# a corrupted block: verify fails naming it
cp "$T/g.wdr" "$T/flip.wdr"
printf '\xff' | dd of="$T/flip.wdr" bs=1 seek=$((hdr + 32 * 3 + 5000)) conv=notrunc 2>/dev/null
expect_rc cli_verify_corrupt 1 "$WD" inspect --verify "$T/flip.wdr"
grep -q 'block [0-9]* of' "$T/err" && pass cli_verify_names_block || fail cli_verify_names_block "$(cat "$T/err")"
: > "$T/empty.wdr"
expect_rc cli_inspect_empty 1 "$WD" inspect "$T/empty.wdr"

# schema mismatch: avazu schema for a criteo file
if [ -f "$DATA/criteo_kaggle_head8000_train.tsv" ]; then
    "$WD" convert --format csv --preset avazu -o "$T/av.wdr" "$DATA/avazu_kaggle_head9000_train.csv" >/dev/null 2>&1
    expect_rc cli_schema_mismatch 1 "$WD" convert --format criteo --schema-from "$T/av.wdr" -o "$T/x.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv"
    # the .wdr of the Criteo sample is no larger than the gzip -6 TSV
    "$WD" convert --format criteo -o "$T/criteo.wdr" "$DATA/criteo_kaggle_head8000_train.tsv" >/dev/null 2>&1
    w=$(stat -c %s "$T/criteo.wdr"); g=$(gzip -6 -c "$DATA/criteo_kaggle_head8000_train.tsv" | wc -c)
    if [ "$w" -le "$g" ]; then pass "cli_criteo_smaller_than_gzip ($w <= $g bytes)"; else fail cli_criteo_smaller_than_gzip "$w > $g"; fi
    # CRLF and no trailing newline convert to the same samples
    sed 's/$/\r/' "$DATA/criteo_kaggle_head8000_dev.tsv" | head -c -2 > "$T/crlf.tsv"
    "$WD" convert --format criteo -o "$T/lf.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv" >/dev/null 2>&1
    "$WD" convert --format criteo -o "$T/crlf.wdr" "$T/crlf.tsv" >/dev/null 2>&1
    if cmp -s <(tail -c +100 "$T/lf.wdr") <(tail -c +100 "$T/crlf.wdr"); then pass cli_crlf_no_final_newline; else fail cli_crlf_no_final_newline "outputs differ"; fi
    # Avazu: headerless dev file next to the train file with a header
    expect_rc cli_avazu_csv 0 "$WD" convert --format csv --preset avazu -o "$T/av2.wdr" "$DATA/avazu_kaggle_head9000_train.csv" "$DATA/avazu_kaggle_head9000_dev.csv"
    grep -q 'rows=8567 bad_rows=0' "$T/out" && pass cli_avazu_rows || fail cli_avazu_rows "$(cat "$T/out")"
else
    skip cli_real_data "no data in $DATA"
fi

# libsvm
printf '1 0:1 5:1 12:1 100:0.5\n0 3:1 101:2\n-1 7:1\n' > "$T/a.svm"
expect_rc cli_libsvm 0 "$WD" convert --format libsvm --slots user=0-9,item=10-19 --dense-range 100-101 -o "$T/a.wdr" "$T/a.svm"
"$WD" inspect "$T/a.wdr" > "$T/out" 2>&1
grep -q 'multi-hot' "$T/out" && grep -q 'samples:  3' "$T/out" && pass cli_libsvm_inspect || fail cli_libsvm_inspect "$(cat "$T/out")"

# train / eval / predict
"$WD" gen -o "$T/tr.wdr" --rows 6000 --seed 2 --max-card 300 >/dev/null 2>&1
"$WD" gen -o "$T/te.wdr" --rows 1500 --first-row 6000 --seed 2 --max-card 300 >/dev/null 2>&1
expect_rc cli_train 0 "$WD" train --train "$T/tr.wdr" --valid "$T/te.wdr" --hidden 32,16 --batch 256 --epochs 2 --threads 2 --cross C1xC2 --save "$T/m.wdm" --log "$T/log.csv" --checkpoint-every 10
if grep -q '^trained steps=48 samples=12000 ' "$T/out" && grep -q 'valid_auc=0\.[6-9]' "$T/out" && [ "$(head -1 "$T/log.csv")" = "step,samples,epoch,loss,elapsed_s,valid_auc,valid_logloss" ] && [ "$(grep -c . "$T/log.csv")" -ge 49 ]; then pass cli_train_output; else fail cli_train_output "$(cat "$T/out" "$T/err" | head -5)"; fi
expect_rc cli_eval 0 "$WD" eval --model "$T/m.wdm" "$T/te.wdr"
tail -1 "$T/out" | grep -Eq '^auc=0\.[0-9]+ logloss=[0-9.]+ samples=1500$' && pass cli_eval_line || fail cli_eval_line "$(tail -1 "$T/out")"
expect_rc cli_predict 0 "$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/pred.txt"
[ "$(wc -l < "$T/pred.txt")" = 1500 ] && awk '$1 < 0 || $1 > 1 { bad = 1 } END { exit bad }' "$T/pred.txt" && pass cli_predict_lines || fail cli_predict_lines "$(head -3 "$T/pred.txt")"
expect_rc cli_resume 0 "$WD" train --train "$T/tr.wdr" --resume "$T/m.wdm" --epochs 3 --save "$T/m3.wdm"
grep -q '^trained steps=24 ' "$T/out" && pass cli_resume_continues || fail cli_resume_continues "$(cat "$T/out")"
expect_rc cli_resume_with_model_flags 2 "$WD" train --train "$T/tr.wdr" --resume "$T/m.wdm" --hidden 8
expect_rc cli_train_needs_data 2 "$WD" train --hidden 8
expect_rc cli_eval_missing_model 1 "$WD" eval --model "$T/nope.wdm" "$T/te.wdr"
head -c 1000 "$T/m.wdm" > "$T/trunc.wdm"
expect_rc cli_eval_truncated_model 1 "$WD" eval --model "$T/trunc.wdm" "$T/te.wdr"
grep -q 'trunc.wdm' "$T/err" && pass cli_truncated_model_named || fail cli_truncated_model_named "$(cat "$T/err")"
"$WD" convert --format libsvm --slots user=0-9,item=10-19 --dense-range 100-101 -o "$T/other.wdr" "$T/a.svm" >/dev/null 2>&1
expect_rc cli_eval_schema_mismatch 1 "$WD" eval --model "$T/m.wdm" "$T/other.wdr"
grep -q 'schema' "$T/err" && pass cli_schema_mismatch_message || fail cli_schema_mismatch_message "$(cat "$T/err")"
expect_rc cli_device_cuda_without_gpu_build 1 "$WD" train --train "$T/tr.wdr" --device cuda --hidden 8 --max-steps 1

# a process killed at random points of `wd convert` never leaves a half-written
# file under the final name: after each kill the name is absent or verifies
"$WD" gen -o "$T/k.wdr" --rows 150000 --seed 8 --tsv "$T/k.tsv" --max-card 1000 >/dev/null 2>&1
trials=20; ok=0; finished=0
for i in $(seq $trials); do
    rm -f "$T/killed.wdr"
    "$WD" convert --format criteo --threads 2 -o "$T/killed.wdr" "$T/k.tsv" >/dev/null 2>&1 &
    pid=$!
    sleep "0.$(( (RANDOM % 25) ))"
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    if [ ! -e "$T/killed.wdr" ]; then ok=$((ok + 1))
    elif "$WD" inspect --verify "$T/killed.wdr" >/dev/null 2>&1; then ok=$((ok + 1)); finished=$((finished + 1)); fi
    rm -f "$T"/killed.wdr.tmp-*
done
[ $ok = $trials ] && pass "cli_kill_during_convert ($trials kills, $finished had finished)" || fail cli_kill_during_convert "$ok of $trials clean"

# files larger than memory stream: verify 1M samples (164 MB decoded, 70 MB on
# disk) in a process whose whole address space is capped at 60 MB
"$WD" gen -o "$T/big.wdr" --rows 1000000 --seed 8 --max-card 1000 --threads 2 >/dev/null 2>&1
if (ulimit -v 60000; "$WD" inspect --verify "$T/big.wdr") > "$T/out" 2>&1 && grep -q 'verify:   OK, .* 1000000 samples' "$T/out"; then
    pass cli_stream_under_memory_limit
else fail cli_stream_under_memory_limit "$(tail -2 "$T/out")"; fi
expect_rc cli_train_plan 0 "$WD" train --train "$T/tr.wdr" --plan --gpus 2 --batch 8192
grep -q 'device plan: 2 rank(s), batch 4096 per rank' "$T/out" && grep -q 'total' "$T/out" && pass cli_train_plan_output || fail cli_train_plan_output "$(head -3 "$T/out")"
