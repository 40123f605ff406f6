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
TL_CTX="head -c 300"
. "$(dirname "$0")/testlib.sh"   # PASS/FAIL/SKIP and the summary; begin, ck, end, run, have, out_has, near, wait_file ...
# expect NAME RC CMD...: begins test NAME, runs CMD and checks its exit status
expect() { begin "$1"; local want=$2; shift 2; run "$@"; ck "exit $rc, wanted $want" [ "$rc" = "$want" ]; }
# same_after OFFSET A B: both files are longer than OFFSET bytes and equal after it
same_after() { [ "$(stat -c %s "$2" 2>/dev/null || echo 0)" -gt "$1" ] && [ "$(stat -c %s "$3" 2>/dev/null || echo 0)" -gt "$1" ] &&
               cmp -s <(tail -c +$(($1 + 1)) "$2") <(tail -c +$(($1 + 1)) "$3"); }
# same_blocks HA A HB B TAIL: A after its first HA bytes equals B after its
# first HB bytes, the last TAIL bytes of each left out (both hold more)
same_blocks() { [ "$(stat -c %s "$2" 2>/dev/null || echo 0)" -gt $(($1 + $5)) ] &&
                [ "$(stat -c %s "$4" 2>/dev/null || echo 0)" -gt $(($3 + $5)) ] &&
                cmp -s <(head -c -$5 "$2" | tail -c +$(($1 + 1))) <(head -c -$5 "$4" | tail -c +$(($3 + 1))); }
# samples FILE: the sample count `wd inspect` reports, empty if it fails
samples() { "$WD" inspect "$1" 2>/dev/null | sed -n 's/^samples: *\([0-9]*\)$/\1/p'; }
# no_temps: no temporary file ("NAME.tmp-PID", as the library and wd write) left in $T or below
no_temps() { [ -z "$(find "$T" -name '*.tmp-*' 2>/dev/null | head -1)" ]; }
# wait_pid PID SECONDS: waits for PID (a child) to exit and sets $rc; kills it
# and sets rc=timeout after SECONDS
wait_pid() { local i; for i in $(seq $(($2 * 20))); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
             if kill -0 "$1" 2>/dev/null; then kill -9 "$1"; wait "$1" 2>/dev/null; rc=timeout; return 1; fi; wait "$1"; rc=$?; }
# wait_pipe_write PID: until PID sleeps in a write to a full pipe (its
# /proc/PID/wchan; 10 s at most; 2 s where the kernel does not tell)
wait_pipe_write() { local i w; for i in $(seq 100); do w=$(cat /proc/$1/wchan 2>/dev/null)
                    case $w in *pipe_write*) return 0 ;; "" | 0) sleep 2; return 0 ;; esac; sleep 0.1; done; return 1; }
# bg CMD...: starts CMD in the background with SIGINT at its default (a
# non-interactive shell starts background jobs with SIGINT ignored, and wd
# keeps an ignored SIGINT ignored), stdout in $T/out, stderr in $T/err; $pid
bg() { (trap - INT; exec "$@") > "$T/out" 2> "$T/err" & pid=$!; }
# empty_wdr SRC.wdr: on stdout, a valid .wdr with SRC's header and no blocks
# (what wd_writer writes when it gets no samples)
empty_wdr() { perl -e '
    sub crc { my $c = 0xFFFFFFFF; for my $b (unpack "C*", $_[0]) { $c ^= $b; $c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8; } return $c ^ 0xFFFFFFFF; }
    open(my $f, "<:raw", $ARGV[0]) or die "$ARGV[0]: $!"; local $/; my $d = <$f>;
    my $hb = unpack("V", substr($d, 12, 4));
    my $ft = pack("VVQ<Q<", 0x54464457, 0, 0, 0); $ft .= pack("VV", crc($ft), 0);
    my $tr = pack("Q<Q<", $hb, length $ft); $tr .= pack("VV", crc($tr), 0x444E4457);
    binmode STDOUT; print substr($d, 0, $hb), $ft, $tr;' "$1"; }
SRC=$(cd "$(dirname "$0")/.." && pwd)

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
# both headers hold the input format (Criteo: 4 + 48 bytes; wd gen records
# it too), and differ in their free text: what follows must be the same bytes
ck "blocks and footer differ" same_after $((hdr + 4 + 48)) "$T/g.wdr" "$T/gc.wdr"
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
DATA_TESTS="cli_avazu_setup cli_avazu_preset_slots cli_schema_mismatch cli_criteo_convert cli_criteo_smaller_than_gzip cli_crlf_no_final_newline cli_avazu_csv cli_avazu_rows"
if [ -f "$DATA/criteo_kaggle_head8000_train.tsv" ] && [ -f "$DATA/avazu_kaggle_head9000_train.csv" ]; then
    rm -f "$T/av.wdr" "$T/criteo.wdr" "$T/lf.wdr" "$T/crlf.wdr" "$T/av2.wdr"
    expect cli_avazu_setup 0 "$WD" convert --format csv --preset avazu -o "$T/av.wdr" "$DATA/avazu_kaggle_head9000_train.csv"
    ck "av.wdr written" have "$T/av.wdr"
    ck "summary rows=8087 bad_rows=0" grep -q '^converted rows=8087 bad_rows=0 ' "$T/out"
    end
    # the preset keeps the hour of day and the day of the week of `hour` (YYMMDDHH)
    expect cli_avazu_preset_slots 0 "$WD" inspect "$T/av.wdr"
    ck "23 slots" out_has "schema:   0 dense, 23 slots"
    ck "hour_of_day: 24 hours" grep -qE '^  slot 21 +hour_of_day +[0-9]+ buckets' "$T/out"
    ck "day_of_week" grep -qE '^  slot 22 +day_of_week +[0-9]+ buckets' "$T/out"
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
    # the records against gzip: the file less its vocabulary (a dictionary of
    # the small slots' values, 8 bytes a value, that does not grow with rows)
    begin cli_criteo_smaller_than_gzip
    w=$(stat -c %s "$T/criteo.wdr" 2>/dev/null || echo 0); g=$(gzip -6 -c "$DATA/criteo_kaggle_head8000_train.tsv" | wc -c)
    ck "setup: criteo.wdr" have "$T/criteo.wdr"
    run "$WD" inspect "$T/criteo.wdr"
    v=$(sed -n 's/^vocabulary: .*(\([0-9]*\) bytes of the header)$/\1/p' "$T/out")
    ck "inspect names the vocabulary's bytes" [ -n "$v" ]
    w=$((w - ${v:-0}))
    ck "$w > $g bytes" [ "$w" -le "$g" ]
    end "($w <= $g bytes, vocabulary ${v:-?} bytes apart)"
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
ck "one log row per step: 1..48, each once" [ "$(tail -n +2 "$T/log.csv" 2>/dev/null | cut -d, -f1 | tr '\n' ' ')" = "$(seq -s ' ' 1 48) " ]
ck "elapsed_s in ms" eval '[ "$(tail -n +2 "$T/log.csv" | cut -d, -f5 | grep -cE "^[0-9]+\.[0-9]{3}$")" = 48 ]'
ck "the three validations on their steps' rows (24: epoch 0; 26, a tenth into epoch 1; 48)" eval '[ "$(grep -E ",0\.[0-9]+,[0-9.]+$" "$T/log.csv" | cut -d, -f1,3 | tr "\n" " ")" = "24,0 26,1 48,1 " ]'
ck "last log row: step 48, 12000 samples, valid AUC" grep -qE '^48,12000,1,[0-9.]+,[0-9.]+,0\.[0-9]+,[0-9.]+$' "$T/log.csv"
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

# ---- option parsing: every command's --help, --version, numbers, zeros ------------------------------
begin cli_command_help
for c in convert inspect gen train eval predict dump; do
    for h in --help -h; do
        run "$WD" $c $h
        ck "$c $h: exit $rc" [ "$rc" = 0 ]
        ck "$c $h: its usage on stdout" grep -q "^usage: wd $c " "$T/out"
        ck "$c $h: nothing on stderr" [ ! -s "$T/err" ]
    done
done
run "$WD" help predict
ck "wd help predict: exit $rc" [ "$rc" = 0 ]
ck "wd help predict: predict's usage" grep -q '^usage: wd predict ' "$T/out"
end
begin cli_version
for v in --version version; do
    run "$WD" $v
    ck "wd $v: exit $rc" [ "$rc" = 0 ]
    ck "wd $v prints 'wd <version>'" grep -qE '^wd [0-9]+\.[0-9]+\.[0-9]+' "$T/out"
done
end
# every numeric option of every command (from its table, --list-options): a
# word is "not a number", and 0 is a usage error naming the option wherever
# the table's range leaves it out (the library would read it as "default")
begin cli_not_a_number
n=0
for c in convert gen train eval predict; do
    while IFS=$'\t' read -r name kind meta range example sets group; do
        case $kind in int|size|float) ;; *) continue ;; esac
        n=$((n + 1))
        run "$WD" $c "$name" two
        ck "$c $name two: exit $rc" [ "$rc" = 2 ]
        ck "$c $name two: says 'two' is not a number" err_has "$name: 'two' is not a number"
    done < <("$WD" $c --list-options 2>/dev/null)
done
ck "numeric options listed ($n)" [ "$n" -ge 40 ]
run "$WD" train --train "$T/tr.wdr" --epochs two
ck "--epochs two: exit $rc" [ "$rc" = 2 ]
ck "--epochs two: not 'out of range'" eval '! err_has "out of range"'
end "($n options)"
begin cli_zero_refused
refused=
for c in convert gen train eval predict; do
    while IFS=$'\t' read -r name kind meta range example sets group; do
        case $kind in int|size|float) ;; *) continue ;; esac
        run "$WD" $c "$name" 0
        case $range in
            "0.."* | ">= 0"*) ck "$c $name 0 is in its range ($range), yet: $(head -1 "$T/err")" eval '! err_has "out of range"' ;;
            *) refused="$refused $c$name"
               ck "$c $name 0: exit $rc" [ "$rc" = 2 ]
               ck "$c $name 0: names the option" err_has "$name: '0' is out of range" ;;
        esac
    done < <("$WD" $c --list-options 2>/dev/null)
done
for o in --lr-deep --lr-wide --batch --epochs --embed-dim --gpus --threads --max-steps --checkpoint-every --early-stop; do
    ck "train $o refuses 0" eval 'case "$refused " in *" train$o "*) ;; *) false ;; esac'
done
run "$WD" train --train "$T/tr.wdr" --hidden 8,0
ck "--hidden 8,0: exit $rc" [ "$rc" = 2 ]
ck "--hidden 8,0: names the width" err_has "--hidden: '0' is not a width"
end "($(echo $refused | wc -w) options)"
# train's options are one table: --help shows each of them
begin cli_train_options_table
"$WD" train --help > "$T/help.txt" 2>&1
n=0
while IFS=$'\t' read -r name kind meta range example sets group; do
    n=$((n + 1))
    ck "train --help shows $name" grep -qE -- "^ +$name( |\$)" "$T/help.txt"
    ck "$name has a kind ($kind) and says what it sets ($sets)" eval '[ -n "$kind" ] && [ "$sets" != - ]'
done < <("$WD" train --list-options)
ck "the table lists $n options, at least 40" [ "$n" -ge 40 ]
end "($n options)"
# the error paths of --cross and --hidden name what is wrong (they read freed memory before)
expect cli_cross_unknown_slot 2 "$WD" train --train "$T/tr.wdr" --cross C1xC2,C1xC99
ck "names the slot and its pair" err_has "--cross: unknown slot 'C99' in 'C1xC99'"
end
expect cli_hidden_bad_width 2 "$WD" train --train "$T/tr.wdr" --hidden 8,x9
ck "names the width" err_has "--hidden: 'x9' is not a number"
end
rm -rf "$T/dumpdir"
expect cli_dump_creates_dir 0 "$WD" dump "$T/te.wdr" "$T/dumpdir/a/b"
ck "the four files" have "$T/dumpdir/a/b/labels.f32" "$T/dumpdir/a/b/dense.f32" "$T/dumpdir/a/b/ids.u32" "$T/dumpdir/a/b/meta.txt"
ck "labels.f32: 1500 floats" [ "$(stat -c %s "$T/dumpdir/a/b/labels.f32" 2>/dev/null)" = 6000 ]
ck "dense.f32: 1500 x 13 floats" [ "$(stat -c %s "$T/dumpdir/a/b/dense.f32" 2>/dev/null)" = 78000 ]
ck "ids.u32: 1500 x 26 ids" [ "$(stat -c %s "$T/dumpdir/a/b/ids.u32" 2>/dev/null)" = 156000 ]
ck "meta.txt: 1500 13 26" [ "$(head -1 "$T/dumpdir/a/b/meta.txt" 2>/dev/null)" = "1500 13 26" ]
ck "no temporary file" no_temps
end

# ---- lists and limits ---------------------------------------------------------------------------------
pairs=$(printf 'C1xC2,%.0s' $(seq 33)); pairs=${pairs%,}
expect cli_cross_33_pairs 2 "$WD" train --train "$T/tr.wdr" --cross "$pairs"
ck "says at most 32" err_has "--cross: 33 pairs, at most 32"
end
expect cli_train_empty_list 2 "$WD" train --train , --hidden 8
ck "',' has an empty file name" err_has "--train: ',' has an empty file name"
run "$WD" train --train "" --hidden 8
ck "--train '': exit $rc" [ "$rc" = 2 ]
ck "--train '' has an empty file name" err_has "--train: '' has an empty file name"
run "$WD" train --train "$T/tr.wdr" --valid "$T/te.wdr,,$T/te.wdr" --hidden 8
ck "--valid a,,b: exit $rc" [ "$rc" = 2 ]
end
# no input is ignored: the 1025th of 1025 files (missing) is read
begin cli_many_inputs
files=(); for i in $(seq 1024); do files+=("$T/te.wdr"); done
run "$WD" eval --model "$T/m.wdm" "${files[@]}" "$T/missing-1025th.wdr"
ck "eval of 1025 files, the last missing: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "eval names the 1025th file" err_has "missing-1025th.wdr"
list=$(printf "$T/tr.wdr,%.0s" $(seq 1024))"$T/missing-1025th.wdr"
run "$WD" train --train "$list" --hidden 8 --max-steps 1
ck "train --train of 1025 files, the last missing: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "train names the 1025th file" err_has "missing-1025th.wdr"
end

# ---- outputs never replace inputs; every write is checked --------------------------------------------
begin cli_convert_output_is_input
head -100 "$T/g.tsv" > "$T/in.tsv" 2>/dev/null; sum=$(cksum < "$T/in.tsv")
ck "setup: in.tsv" have "$T/in.tsv"
run "$WD" convert --format criteo -o "$T/in.tsv" "$T/in.tsv"
ck "convert -o in.tsv in.tsv: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "says it is the input" err_has "is the input"
mkdir -p "$T/sub"; ln -f "$T/in.tsv" "$T/sub/hard.tsv"
run "$WD" convert --format criteo -o "$T/sub/../in.tsv" "$T/sub/hard.tsv"
ck "a hard link, spelt another way: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "in.tsv intact" [ "$(cksum < "$T/in.tsv")" = "$sum" ]
end
begin cli_train_output_is_input
sums=$(cksum "$T/tr.wdr" "$T/te.wdr" "$T/m.wdm")
run "$WD" train --train "$T/tr.wdr" --hidden 8 --save "$T/tr.wdr"
ck "--save onto the training file: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "says it is the training file" err_has "is the training file"
run "$WD" train --train "$T/tr.wdr" --valid "$T/te.wdr" --hidden 8 --log "$T/./te.wdr"
ck "--log onto the validation file: exit $rc, wanted 2" [ "$rc" = 2 ]
run "$WD" train --train "$T/tr.wdr" --resume "$T/m.wdm" --epochs 3 --log "$T/m.wdm"
ck "--log onto the --resume checkpoint: exit $rc, wanted 2" [ "$rc" = 2 ]
run "$WD" train --train "$T/te.wdr" --init-from "$T/m.wdm" --save "$T/sub/../m.wdm"
ck "--save onto the --init-from model: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "tr.wdr, te.wdr and m.wdm intact" [ "$(cksum "$T/tr.wdr" "$T/te.wdr" "$T/m.wdm")" = "$sums" ]
end
begin cli_predict_output_is_input
sums=$(cksum "$T/te.wdr" "$T/m.wdm")
run "$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/m.wdm"
ck "-o onto the model: exit $rc, wanted 2" [ "$rc" = 2 ]
run "$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/te.wdr"
ck "-o onto the data: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "says it is the data file" err_has "is the data file"
ck "te.wdr and m.wdm intact" [ "$(cksum "$T/te.wdr" "$T/m.wdm")" = "$sums" ]
end
rm -f "$T/gx.wdr"
expect cli_gen_outputs_clash 2 "$WD" gen -o "$T/gx.wdr" --rows 10 --tsv "$T/gx.wdr"
ck "names both options" err_has "-o and --tsv are both"
run "$WD" gen -o "$T/gx.wdr" --rows 10 --prob "$T/sub/../gx.wdr"
ck "-o and --prob: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "no gx.wdr" [ ! -e "$T/gx.wdr" ]
end
begin cli_dump_write_error
rm -rf "$T/dfull"
(ulimit -f 8; exec "$WD" dump "$T/tr.wdr" "$T/dfull") > "$T/out" 2> "$T/err"; rc=$?
ck "a dump past an 8 KiB file size limit: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "names labels.f32" err_has "labels.f32: write failed"
ck "no 'dumped'" eval '! out_has dumped'
ck "no file left" [ -z "$(ls -A "$T/dfull" 2>/dev/null)" ]
end
# past a file size limit (ulimit -f: SIGXFSZ, which wd ignores) every
# command that writes fails with the write error, naming the file, and leaves
# no temporary file
begin cli_file_size_limit
for c in "gen -o $T/ul.wdr --rows 20000" "convert --format criteo --buckets 100 -o $T/ulc.wdr $T/g.tsv" \
         "train --train $T/tr.wdr --hidden 64 --threads 2 --save $T/ulm.wdm" "dump $T/tr.wdr $T/uld"; do
    rm -rf "$T/uld"
    (ulimit -f 64; exec $WD $c) > "$T/out" 2> "$T/err"; rc=$?
    ck "wd ${c%% *} past 64 KiB: exit $rc, wanted 1" [ "$rc" = 1 ]
    ck "wd ${c%% *}: says File too large" err_has "write failed: File too large"
    ck "wd ${c%% *}: no temporary file left" no_temps
done
ck "no output" eval '[ ! -e "$T/ul.wdr" ] && [ ! -e "$T/ulc.wdr" ] && [ ! -e "$T/ulm.wdm" ] && [ -z "$(ls -A "$T/uld" 2>/dev/null)" ]'
end
# a block found corrupt late in a training file: the model after the last
# finished step (16: block 1 starts at sample 4096, batches of 256) is saved
# and marked, and the run still fails
begin cli_error_keeps_progress
cp "$T/tr.wdr" "$T/trbad.wdr"
perl -e 'open(F, "+<:raw", $ARGV[0]) or die; my $o = (-s F) - 300; seek(F, $o, 0); read(F, $b, 1); seek(F, $o, 0); print F chr(ord($b) ^ 0x5A); close F' "$T/trbad.wdr"
rm -f "$T/me.wdm"
run "$WD" train --train "$T/trbad.wdr" --hidden 8 --batch 256 --no-shuffle --threads 2 --save "$T/me.wdm"
ck "exit $rc, wanted 1" [ "$rc" = 1 ]
ck "names the block" err_has "trbad.wdr: block 1: payload checksum mismatch"
ck "says what was saved" err_has "the model after step 16 (epoch 0, batch 16), the last step finished before this error, is saved to $T/me.wdm"
ck "says how to go on" err_has "$T/me.wdm holds the state before the error (step 16); continue with --resume"
ck "me.wdm written" have "$T/me.wdm"
run "$WD" eval --model "$T/me.wdm" "$T/te.wdr"
ck "eval of me.wdm: exit $rc" [ "$rc" = 0 ]
ck "eval says it was saved after an error" err_has "me.wdm was saved after an error stopped training: it holds the model after step 16"
run "$WD" train --train "$T/tr.wdr" --resume "$T/me.wdm" --save "$T/me2.wdm"
ck "resumed on the good file: exit $rc, the rest of the epoch" eval '[ "$rc" = 0 ] && out_has "trained steps=8 "'
run "$WD" eval --model "$T/me2.wdm" "$T/te.wdr"
ck "the resumed model is not marked" eval '[ "$rc" = 0 ] && ! err_has "saved after an error"'
end
# a closed pipe (SIGPIPE ignored): --log on standard output read by head -1
# ends training as SIGTERM does, with the write error and the checkpoint
begin cli_train_sigpipe
rm -f "$T/mp.wdm"
"$WD" train --train "$T/tr.wdr" --hidden 8 --epochs 20 --threads 2 --save "$T/mp.wdm" --log /dev/stdout 2> "$T/err" | head -1 > "$T/out"; rc=${PIPESTATUS[0]}
ck "exit $rc, wanted 1" [ "$rc" = 1 ]
ck "head got the log header" out_has "step,samples,epoch,loss"
ck "says the write failed" err_has "/dev/stdout: write failed: Broken pipe; training stopped at step"
ck "says the checkpoint is saved" err_has "checkpoint saved to $T/mp.wdm"
run "$WD" eval --model "$T/mp.wdm" "$T/te.wdr"
ck "mp.wdm loads: exit $rc" [ "$rc" = 0 ]
end
# --log naming a FIFO with no reader: wd says it waits, and the first SIGTERM ends it
begin cli_log_fifo_no_reader
rm -f "$T/fifo" "$T/mf.wdm"; mkfifo "$T/fifo"
bg "$WD" train --train "$T/tr.wdr" --hidden 8 --save "$T/mf.wdm" --log "$T/fifo"
for i in $(seq 100); do err_has "waiting for a reader" && break; sleep 0.1; done
ck "says it waits for a reader" err_has "--log $T/fifo is a FIFO that no process reads: waiting for a reader"
kill -TERM "$pid"
wait_pid "$pid" 10
ck "one SIGTERM ends it: exit $rc, wanted 143" [ "$rc" = 143 ]
ck "says so" err_has "interrupted by SIGTERM before training started"
ck "no model, no temporary file" eval '[ ! -e "$T/mf.wdm" ] && no_temps'
rm -f "$T/fifo"
end
expect cli_log_dev_full 1 "$WD" train --train "$T/tr.wdr" --hidden 8 --log /dev/full
ck "names /dev/full" err_has "/dev/full: write failed"
ck "before training: no 'trained' line" eval '! out_has trained'
end
rm -f "$T/unw.csv"
expect cli_save_unwritable 1 "$WD" train --train "$T/tr.wdr" --hidden 8 --epochs 3 --save "$T/nodir/m.wdm" --log "$T/unw.csv"
ck "names the path" err_has "$T/nodir/m.wdm: cannot write there"
ck "before training: no step logged" [ "$(lines "$T/unw.csv")" -le 1 ]
end
begin cli_predict_write_error
printf 'old\n' > "$T/pw.txt"
(ulimit -f 4; trap '' XFSZ; exec "$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/pw.txt") > "$T/out" 2> "$T/err"; rc=$?
ck "predict past a 4 KiB file size limit: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "names pw.txt" err_has "pw.txt: write failed"
ck "the previous pw.txt intact" [ "$(cat "$T/pw.txt")" = old ]
ck "no temporary file" no_temps
end
begin cli_stdout_write_error
"$WD" eval --model "$T/m.wdm" "$T/te.wdr" > /dev/full 2> "$T/err"; rc=$?
ck "eval > /dev/full: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "says standard output failed" err_has "standard output: write failed"
"$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o - > /dev/full 2> "$T/err"; rc=$?
ck "predict -o - > /dev/full: exit $rc, wanted 1" [ "$rc" = 1 ]
end
begin cli_eval_zero_samples
empty_wdr "$T/te.wdr" > "$T/zero.wdr" 2>/dev/null
ck "setup: zero.wdr verifies with 0 samples" eval '"$WD" inspect --verify "$T/zero.wdr" >/dev/null 2>&1 && [ "$(samples "$T/zero.wdr")" = 0 ]'
run "$WD" eval --model "$T/m.wdm" "$T/zero.wdr"
ck "eval of 0 samples: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "names zero.wdr" err_has "zero.wdr"
ck "no auc=nan" eval '! out_has "auc=nan"'
end
# a validation set of one class: the AUC is undefined, the log loss is not
begin cli_single_class_valid
awk 'BEGIN { srand(5); for (i = 0; i < 3000; i++) printf "%d %d:1 %d:1 100:%.3f\n", rand() < 0.3, int(rand() * 10), 10 + int(rand() * 10), rand() }' > "$T/mix.svm"
awk 'BEGIN { srand(6); for (i = 0; i < 300; i++) printf "1 %d:1 %d:1 100:%.3f\n", int(rand() * 10), 10 + int(rand() * 10), rand() }' > "$T/ones.svm"
run "$WD" convert --format libsvm --slots u=0-9,i=10-19 --dense-range 100-100 -o "$T/mix.wdr" "$T/mix.svm"
ck "convert mix.svm: exit $rc" [ "$rc" = 0 ]
run "$WD" convert --format libsvm --slots u=0-9,i=10-19 --dense-range 100-100 -o "$T/ones.wdr" "$T/ones.svm"
ck "convert ones.svm: exit $rc" [ "$rc" = 0 ]
run "$WD" train --train "$T/mix.wdr" --valid "$T/ones.wdr" --hidden 4 --epochs 2 --threads 2 --log "$T/one.csv" --save "$T/one.wdm"
ck "train: exit $rc" [ "$rc" = 0 ]
ck "the summary keeps valid_logloss" grep -qE '^trained .* valid_auc=nan valid_logloss=[0-9]' "$T/out"
# validated after each epoch and a tenth into the second (the one-epoch phenomenon)
ck "3 validation rows in the log with a log loss and no AUC" [ "$(grep -cE '^[0-9]+,[0-9]+,[0-9]+,[0-9.]+,[0-9.]+,,[0-9.]+$' "$T/one.csv" 2>/dev/null)" = 3 ]
end

# ---- the CUDA build accepts every option the CPU build does -------------------------------------------
# Each train option of the table (each value of a choice) on wd-cuda --device
# cuda must get as far as the device: without a GPU, exit 1 and "no CUDA
# device"; with one, training. Never a usage error or "unsupported".
WDC=$(dirname "$WD")/wd-cuda
begin cli_cuda_accepts_every_option
if [ -x "$WDC" ]; then
    n=0; bad=
    while IFS=$'\t' read -r name kind meta range example sets group; do
        [ "$name" = --device ] && continue
        case $kind in flag) values=- ;; choice) values=${meta//|/ } ;; *) values=$example ;; esac
        for v in $values; do
            v=${v//\{data\}/$T/tr.wdr}; v=${v//\{model\}/$T/m.wdm}; v=${v//\{out\}/$T/cu}
            args=("$name"); [ "$v" != - ] && args+=("$v")
            run "$WDC" train --device cuda --train "$T/tr.wdr" --valid "$T/te.wdr" --save "$T/cu.wdm" --max-steps 1 "${args[@]}"
            n=$((n + 1))
            if [ "$name" = --plan ]; then { [ "$rc" = 0 ] && out_has "device plan:"; } || bad="$bad | ${args[*]}: exit $rc $(head -c 200 "$T/err")"; continue; fi
            if [ "$rc" = 0 ] && grep -q '^trained steps=' "$T/out"; then continue; fi   # a machine with a GPU
            if [ "$rc" != 1 ] || ! err_has "no CUDA device"; then bad="$bad | ${args[*]}: exit $rc $(head -c 200 "$T/err" | tr '\n' ' ')"; fi
        done
    done < <("$WDC" train --list-options)
    ck "every option reaches the CUDA device:$bad" [ -z "$bad" ]
    ck "$n option values run, at least 43" [ "$n" -ge 43 ]
    end "($n option values)"
else skip cli_cuda_accepts_every_option "no $WDC (nvcc not installed)"; fi

# ---- interrupts -------------------------------------------------------------------------------------------
# SIGINT / SIGTERM during train: it stops at the next step, saves --save, exits 128+N
for sig in INT TERM; do
    begin cli_sig${sig,,}_train
    rm -f "$T/sig.wdm" "$T/sig.csv"
    bg "$WD" train --train "$T/tr.wdr" --hidden 8 --batch 32 --epochs 100000 --threads 1 --save "$T/sig.wdm" --log "$T/sig.csv"
    ck "setup: training logs 20 steps" wait_lines "$T/sig.csv" 20
    kill -$sig $pid 2>/dev/null; wait_pid $pid 60
    want=$([ $sig = INT ] && echo 130 || echo 143)
    ck "exit $rc after SIG$sig, wanted $want" [ "$rc" = "$want" ]
    ck "says it was interrupted by SIG$sig" err_has "interrupted by SIG$sig"
    ck "says the checkpoint is saved" err_has "checkpoint saved to $T/sig.wdm"
    ck "sig.wdm written" have "$T/sig.wdm"
    ck "the log's last line is whole" eval '[ "$(tail -c 1 "$T/sig.csv" | od -An -tx1 | tr -d " ")" = 0a ] && tail -1 "$T/sig.csv" | grep -qE "^[0-9]+,[0-9]+,[0-9]+,[0-9.]+,[0-9.]+,[0-9.]*,[0-9.]*\$"'
    ck "no temporary file" no_temps
    run "$WD" eval --model "$T/sig.wdm" "$T/te.wdr"
    ck "eval of the checkpoint: exit $rc" [ "$rc" = 0 ]
    ck "eval of the checkpoint: its auc line" eval 'tail -1 "$T/out" | grep -Eq "^auc=0\.[0-9]+ logloss=[0-9.]+ samples=1500$"'
    end
done
# a second SIGINT exits at once: here wd is blocked writing its log to a full pipe
begin cli_double_sigint_train
rm -f "$T/fifo.csv" "$T/dbl.wdm"; mkfifo "$T/fifo.csv"
exec 7<>"$T/fifo.csv"
timeout 1 cat /dev/zero >&7 2>/dev/null   # fills the pipe: wd's first log write blocks
bg "$WD" train --train "$T/tr.wdr" --hidden 8 --epochs 100000 --save "$T/dbl.wdm" --log "$T/fifo.csv"
ck "setup: wd blocks writing its log" wait_pipe_write $pid
kill -INT $pid 2>/dev/null; sleep 0.5
ck "still running after the first SIGINT (it waits for a step boundary)" eval 'kill -0 $pid 2>/dev/null'
ck "says it stops before training starts (the log's header blocks)" \
    err_has "stopping before training starts (nothing is written)"
t0=$(date +%s%N)
kill -INT $pid 2>/dev/null; wait_pid $pid 20
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ck "exit $rc after the second SIGINT, wanted 130" [ "$rc" = 130 ]
ck "exited at once ($ms ms)" [ "$ms" -lt 3000 ]
ck "no checkpoint and no temporary file" eval '[ ! -e "$T/dbl.wdm" ] && no_temps'
exec 7>&-; rm -f "$T/fifo.csv"
end "($ms ms)"
# SIGINT during convert: it stops at its next chunk, writes nothing, exits 130.
# The input is a pipe the test feeds, so the signal lands mid-conversion.
begin cli_sigint_convert
rm -f "$T/ci.wdr" "$T/cin.tsv"; mkfifo "$T/cin.tsv"
exec 8<>"$T/cin.tsv"
bg "$WD" convert --format criteo --buckets 1000 -o "$T/ci.wdr" "$T/cin.tsv"
timeout 10 head -6000 "$T/g.tsv" >&8   # (the test holds both ends: a write blocks, never fails, once wd is gone)
ck "setup: the conversion started (ci.wdr.tmp-$pid)" wait_file "$T/ci.wdr.tmp-$pid"
sleep 0.5
kill -INT $pid 2>/dev/null; sleep 0.3
for i in 1 2 3 4 5; do kill -0 $pid 2>/dev/null && timeout 3 head -6000 "$T/g.tsv" >&8; sleep 0.3; done
exec 8>&-
wait_pid $pid 30
ck "exit $rc after SIGINT, wanted 130" [ "$rc" = 130 ]
ck "says nothing was written" err_has "ci.wdr was not written"
ck "no output and no temporary file" eval '[ ! -e "$T/ci.wdr" ] && no_temps'
rm -f "$T/cin.tsv"
end
# a second SIGINT exits at once, removing the output's temporary file; here
# wd waits for more input (tests/sigint_convert.sh)
. "$(dirname "$0")/sigint_convert.sh"
begin cli_double_sigint_convert
ck "setup: g.tsv" have "$T/g.tsv"
double_sigint_convert "$WD" "$T" "$T/g.tsv"
end

# ---- training options ---------------------------------------------------------------------------------------
rm -f "$T/init.wdm"
expect cli_init_from 0 "$WD" train --train "$T/te.wdr" --init-from "$T/m.wdm" --batch 100 --save "$T/init.wdm"
ck "summary steps=15 samples=1500 (a new run on te.wdr)" grep -q '^trained steps=15 samples=1500 ' "$T/out"
ck "init.wdm written, not m.wdm" eval 'have "$T/init.wdm" && ! cmp -s "$T/m.wdm" "$T/init.wdm"'
run "$WD" train --train "$T/te.wdr" --init-from "$T/m.wdm" --embed-dim 4
ck "with a model option: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "says --init-from takes the model settings" err_has "--init-from takes the model settings from the checkpoint; drop --embed-dim"
end
expect cli_resume_other_files 1 "$WD" train --train "$T/te.wdr" --resume "$T/m.wdm" --epochs 3
ck "points to --init-from" err_has "--init-from"
end
begin cli_needs_valid
for o in --early-stop=2 --keep-best --eval-every=5; do
    run "$WD" train --train "$T/tr.wdr" --save "$T/nv.wdm" $o
    ck "$o without --valid: exit $rc, wanted 2" [ "$rc" = 2 ]
    ck "$o: says it needs --valid" err_has "needs --valid"
done
run "$WD" train --train "$T/tr.wdr" --valid "$T/te.wdr" --keep-best
ck "--keep-best without --save: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "--keep-best: says it needs --save" err_has "--keep-best needs --save"
ck "no nv.wdm" [ ! -e "$T/nv.wdm" ]
end
rm -f "$T/es.wdm"
expect cli_early_stop_keep_best 0 "$WD" train --train "$T/tr.wdr" --valid "$T/te.wdr" --hidden 16 --batch 256 --epochs 300 --eval-every 4 --early-stop 2 --keep-best --threads 2 --save "$T/es.wdm"
ck "stopped early" grep -q '^trained .* early_stop=1' "$T/out"
steps=$(sed -n 's/^trained steps=\([0-9]*\) .*/\1/p' "$T/out"); best=$(sed -n 's/^trained .* best_auc=\([0-9.]*\) .*/\1/p' "$T/out")
ck "before the 300 epochs' 7200 steps ($steps)" eval '[ -n "$steps" ] && [ "$steps" -lt 7200 ]'
ck "says so on stderr" err_has "early stop:"
run "$WD" eval --model "$T/es.wdm" "$T/te.wdr"
auc=$(tail -1 "$T/out" | sed -n 's/^auc=\([0-9.]*\) .*/\1/p')
ck "es.wdm is the best model: eval auc $auc = best_auc $best" near "$auc" "$best" 0.00002
end
expect cli_progress_lines 0 "$WD" train --train "$T/tr.wdr" --hidden 8 --batch 32 --epochs 30 --threads 1 --progress-every 0.01 --save "$T/pl.wdm"
ck "progress lines on a stderr that is no terminal" [ "$(grep -cE '^wd: step [0-9]+ epoch [0-9]+ loss [0-9.]+, [0-9]+ samples/s' "$T/err")" -ge 2 ]
ck "no carriage returns" eval '! grep -q $'"'"'\r'"'"' "$T/err"'
end
begin cli_no_save_warning
run "$WD" train --train "$T/tr.wdr" --hidden 8 --max-steps 2
ck "without --save: exit $rc" [ "$rc" = 0 ]
ck "warns that the model is thrown away" err_has "warning: no --save"
run "$WD" train --train "$T/tr.wdr" --hidden 8 --max-steps 2 --save "$T/ns.wdm"
ck "with --save: no warning" eval '! err_has "no --save"'
end
begin cli_train_engine
ck "setup: ns.wdm" have "$T/ns.wdm"
engine=$(sed -n 's/^trained .* engine=\(.*\)$/\1/p' "$T/out")
ck "the trained line names the engine ($engine)" eval 'echo "$engine" | grep -qE "^cpu threads=[0-9]+ gemm=[a-z]+ .*precision=fp32"'
slow=; case "$engine" in *gemm=portable* | *core=Prescott* | *core=Core2* | *core=Nehalem* | *core=Atom*) slow=1 ;; esac
if [ -n "$slow" ]; then ck "warns about the slow engine" err_has "warning: "; else ck "no engine warning" eval '! grep -q "GEMM\|OpenBLAS\|oneDNN" "$T/err"'; fi
end "($engine)"
# the portable GEMM loops warn (a copy of wd built without a GEMM library)
begin cli_portable_engine_warning
libs=$(sed -n 's/^LDLIBS *:= *//p' "$SRC/Makefile" 2>/dev/null)
if ${CC:-cc} -std=c11 -O0 -w -o "$T/wd-portable" "$SRC/tools/wd.c" ${libs:--lzstd -lz -lpthread -lm} > "$T/cc.err" 2>&1; then
    run "$T/wd-portable" train --train "$T/tr.wdr" --hidden 8 --max-steps 2 --save "$T/port.wdm"
    ck "train: exit $rc" [ "$rc" = 0 ]
    ck "engine gemm=portable" grep -q '^trained .* engine=cpu .*gemm=portable' "$T/out"
    ck "warns about it" err_has "warning: the MLP runs on the portable GEMM loops (slow)"
    end
else skip cli_portable_engine_warning "cannot build a portable wd: $(head -c 200 "$T/cc.err")"; fi

# ---- inputs: compressed text, standard input, CSV options, vocabularies, ids ------------------------------
# a CSV with an id column, an hour column to derive from, a rare value (z, once)
awk 'BEGIN { srand(3); print "id,click,hour,site,app,price"; split("a a a a a b b b c", v, " ")
             for (i = 0; i < 3000; i++) printf "id%05d,%d,1410%02d%02d,s%d,%s,%d\n", i, rand() < 0.3, 21 + int(rand() * 2), int(rand() * 24), int(rand() * 50), i == 7 ? "z" : v[1 + int(rand() * 9)], int(rand() * 100) }' > "$T/s.csv"
csv_args=(--format csv --label click --dense price --cat site,app)
derive='hour_of_day=hour[6:8],day_of_week=weekday(hour[0:6])'
begin cli_convert_compressed
gzip -c "$T/g.tsv" > "$T/g.tsv.gz" 2>/dev/null
run "$WD" convert --format criteo --schema-from "$T/g.wdr" -o "$T/gz.wdr" "$T/g.tsv.gz"
ck "gzip: exit $rc" [ "$rc" = 0 ]
ck "gzip: bytes_in is the text's" out_has "bytes_in=$(stat -c %s "$T/g.tsv" 2>/dev/null) "
ck "gzip: the blocks of the plain text" same_after $hdr "$T/gz.wdr" "$T/gc.wdr"
gzip -c "$T/s.csv" > "$T/s.csv.gz" 2>/dev/null
run "$WD" convert "${csv_args[@]}" -o "$T/sgz.wdr" "$T/s.csv.gz"
ck "gzip csv without --columns: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "gzip csv without --columns: asks for --columns" err_has "give --columns"
run "$WD" convert "${csv_args[@]}" --columns id,click,hour,site,app,price -o "$T/sgz.wdr" "$T/s.csv.gz"
ck "gzip csv with --columns: exit $rc" [ "$rc" = 0 ]
run "$WD" convert "${csv_args[@]}" -o "$T/splain.wdr" "$T/s.csv"
ck "gzip csv with --columns: the records of the plain file" eval 'have "$T/sgz.wdr" && cmp -s "$T/sgz.wdr" "$T/splain.wdr"'
kinds=gzip
if command -v zstd >/dev/null; then
    kinds="gzip, zstd"
    zstd -q -f "$T/g.tsv" -o "$T/g.tsv.zst"
    run "$WD" convert --format criteo --schema-from "$T/g.wdr" -o "$T/zs.wdr" "$T/g.tsv.zst"
    ck "zstd: exit $rc" [ "$rc" = 0 ]
    ck "zstd: the blocks of the plain text" same_after $hdr "$T/zs.wdr" "$T/gc.wdr"
fi
end "($kinds)"
begin cli_convert_stdin
"$WD" convert --format criteo --schema-from "$T/g.wdr" -o "$T/st.wdr" - < "$T/g.tsv" > "$T/out" 2> "$T/err"; rc=$?
ck "'-' < g.tsv: exit $rc" [ "$rc" = 0 ]
ck "'-': the blocks of the file" same_after $hdr "$T/st.wdr" "$T/gc.wdr"
gzip -c "$T/g.tsv" | "$WD" convert --format criteo --buckets 1000 -o "$T/st2.wdr" - > "$T/out" 2> "$T/err"; rc=$?
ck "gzip | convert -: exit $rc" [ "$rc" = 0 ]
ck "gzip | convert -: 20000 samples" [ "$(samples "$T/st2.wdr")" = 20000 ]
"$WD" convert --format criteo -o "$T/st3.wdr" - < "$T/g.tsv" > "$T/out" 2> "$T/err"; rc=$?
ck "'-' with tables sized from the data: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "'-' with tables sized from the data: asks for --buckets" err_has "give --buckets N"
run "$WD" convert --format criteo -o "$T/st3.wdr" <(cat "$T/g.tsv")
ck "a pipe with tables sized from the data: exit $rc, wanted 2" [ "$rc" = 2 ]
run "$WD" convert --format csv --label click --buckets 100 -o "$T/st3.wdr" <(cat "$T/s.csv")
ck "csv from a pipe without --columns: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "csv from a pipe without --columns: asks for --columns" err_has "give --columns"
ck "no st3.wdr" [ ! -e "$T/st3.wdr" ]
end
begin cli_buckets_auto
run "$WD" convert --format criteo -o "$T/auto.wdr" "$T/g.tsv"
ck "convert without --buckets: exit $rc" [ "$rc" = 0 ]
"$WD" inspect "$T/auto.wdr" > "$T/out" 2>&1
ck "slots sized from the data (some under 1048576 buckets)" [ "$(grep -cE '^  slot .* 1048576 buckets' "$T/out")" -lt 26 ]
ck "26 slots" [ "$(grep -c '^  slot ' "$T/out")" = 26 ]
run "$WD" convert --format criteo --buckets 1000 -o "$T/b1000.wdr" "$T/g.tsv"
"$WD" inspect "$T/b1000.wdr" > "$T/out" 2>&1
ck "--buckets 1000 forces 1000 in every slot" [ "$(grep -cE '^  slot .* 1000 buckets' "$T/out")" = 26 ]
end
begin cli_csv_delimiter
tr , ';' < "$T/s.csv" > "$T/s_semi.csv"; tr , '\t' < "$T/s.csv" > "$T/s_tab.csv"
run "$WD" convert "${csv_args[@]}" -o "$T/s_comma.wdr" "$T/s.csv"
ck "comma: exit $rc" [ "$rc" = 0 ]
run "$WD" convert "${csv_args[@]}" --delimiter ';' -o "$T/s_semi.wdr" "$T/s_semi.csv"
ck "--delimiter ';': exit $rc" [ "$rc" = 0 ]
run "$WD" convert "${csv_args[@]}" --delimiter tab -o "$T/s_tab.wdr" "$T/s_tab.csv"
ck "--delimiter tab: exit $rc" [ "$rc" = 0 ]
# the same records: the headers differ only in the input format they store (the delimiter)
shb=$(od -An -tu4 -j12 -N4 "$T/s_comma.wdr" 2>/dev/null | tr -d ' ')
ck "the same records" eval 'have "$T/s_comma.wdr" && [ -n "$shb" ] && same_after $shb "$T/s_comma.wdr" "$T/s_semi.wdr" && same_after $shb "$T/s_comma.wdr" "$T/s_tab.wdr"'
ck "the delimiter stored" eval '! cmp -s "$T/s_comma.wdr" "$T/s_semi.wdr"'
run "$WD" convert "${csv_args[@]}" --delimiter ';;' -o "$T/x.wdr" "$T/s_semi.csv"
ck "--delimiter ';;': exit $rc, wanted 2" [ "$rc" = 2 ]
end
begin cli_convert_derive_min_count
run "$WD" convert "${csv_args[@]}" --derive "$derive" --min-count 2 -o "$T/s.wdr" "$T/s.csv"
ck "convert: exit $rc" [ "$rc" = 0 ]
"$WD" inspect "$T/s.wdr" > "$T/out" 2>&1
ck "vocabulary ids" out_has "(vocabulary ids)"
ck "app: a, b, c and out-of-vocabulary (z, seen once, is not kept)" grep -qE '^  slot 1 +app +4 buckets' "$T/out"
ck "hour_of_day: 24 hours + 1" grep -qE '^  slot 2 +hour_of_day +25 buckets' "$T/out"
ck "day_of_week: Tuesday, Wednesday + 1" grep -qE '^  slot 3 +day_of_week +3 buckets' "$T/out"
run "$WD" convert "${csv_args[@]}" --min-count 1 -o "$T/s1.wdr" "$T/s.csv"
"$WD" inspect "$T/s1.wdr" > "$T/out" 2>&1
ck "--min-count 1 keeps z" grep -qE '^  slot 1 +app +5 buckets' "$T/out"
end
begin cli_schema_from_vocab
run "$WD" convert "${csv_args[@]}" --derive "$derive" --schema-from "$T/s.wdr" -o "$T/sv.wdr" "$T/s.csv"
ck "convert --schema-from s.wdr: exit $rc" [ "$rc" = 0 ]
ck "its vocabulary: the same records" eval 'have "$T/sv.wdr" && cmp -s "$T/s.wdr" "$T/sv.wdr"'
end
begin cli_convert_id_column
rm -f "$T/s.wdr.ids"
run "$WD" convert "${csv_args[@]}" --derive "$derive" --min-count 2 --id-column id -o "$T/s.wdr" "$T/s.csv"
ck "convert --id-column id: exit $rc" [ "$rc" = 0 ]
ck "names s.wdr.ids" out_has "ids -> $T/s.wdr.ids"
ck "s.wdr.ids: the id column, a line per row, then the binding line" \
    eval 'tail -n +2 "$T/s.csv" | cut -d, -f1 | cmp -s - <(head -n -1 "$T/s.wdr.ids") &&
          tail -1 "$T/s.wdr.ids" | grep -qE "^#wd-ids rows=3000 data=[0-9a-f]{16} ids=[0-9a-f]{16}\$"'
cp "$T/s.wdr.ids" "$T/keep.ids" 2>/dev/null
run "$WD" convert "${csv_args[@]}" -o "$T/s.wdr" "$T/s.csv"
ck "reconverting without --id-column removes the stale s.wdr.ids" eval '[ "$rc" = 0 ] && [ ! -e "$T/s.wdr.ids" ] && err_has "removed $T/s.wdr.ids"'
run "$WD" convert "${csv_args[@]}" --derive "$derive" --min-count 2 --id-column id -o "$T/s.wdr" "$T/s.csv"
ck "setup: s.wdr.ids again" have "$T/s.wdr.ids"
end
begin cli_predict_ids
run "$WD" train --train "$T/s.wdr" --hidden 4 --epochs 1 --threads 2 --save "$T/s.wdm"
ck "train on s.wdr: exit $rc" [ "$rc" = 0 ]
run "$WD" predict --model "$T/s.wdm" "$T/s.wdr" -o "$T/sp.txt"
ck "predict: exit $rc" [ "$rc" = 0 ]
ck "3000 lines of id<TAB>probability" [ "$(grep -cE '^id[0-9]{5}	[0-9.e-]+$' "$T/sp.txt" 2>/dev/null)" = 3000 ]
ck "the ids in input order" eval 'cut -f1 "$T/sp.txt" | cmp -s - <(head -n -1 "$T/s.wdr.ids")'
run "$WD" predict --model "$T/s.wdm" "$T/s.wdr" --no-ids -o "$T/sp2.txt"
ck "--no-ids: probabilities only" eval '[ "$rc" = 0 ] && [ "$(grep -cE "^[0-9.e-]+\$" "$T/sp2.txt")" = 3000 ] && cut -f2 "$T/sp.txt" | cmp -s - "$T/sp2.txt"'
cp "$T/s.wdr" "$T/t.wdr"; rm -f "$T/t.wdr.ids"
run "$WD" predict --model "$T/s.wdm" "$T/t.wdr" --ids "$T/keep.ids" -o "$T/sp3.txt"
ck "--ids FILE: exit $rc" [ "$rc" = 0 ]
ck "--ids FILE: the same lines" eval 'cmp -s "$T/sp.txt" "$T/sp3.txt"'
run "$WD" predict --model "$T/s.wdm" "$T/s.wdr" "$T/t.wdr" -o "$T/sp4.txt"
ck "ids for one file of two: exit $rc, wanted 2" [ "$rc" = 2 ]
{ head -5 "$T/keep.ids"; tail -1 "$T/keep.ids"; } > "$T/short.ids" 2>/dev/null
run "$WD" predict --model "$T/s.wdm" "$T/t.wdr" --ids "$T/short.ids" -o "$T/sp5.txt"
ck "5 ids for 3000 samples: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "names short.ids" err_has "short.ids: 5 ids (its binding line says 3000) for the 3000 rows"
ck "no sp5.txt" [ ! -e "$T/sp5.txt" ]
end

# settings read strictly: WD_MEMORY_LIMIT takes the size suffixes or is
# refused by name; --slot-buckets with --schema-from is refused as --buckets
# is; a float option's bounds hold for the 32-bit float the library gets;
# an output name near NAME_MAX still gets a temporary name
begin cli_settings_read_strictly
run env WD_MEMORY_LIMIT=8X "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1
ck "WD_MEMORY_LIMIT=8X: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "names the variable and its value" err_has "WD_MEMORY_LIMIT '8X' is not a size"
run env WD_MEMORY_LIMIT=8G "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1
ck "WD_MEMORY_LIMIT=8G (8 GiB, not 8 bytes): exit $rc" [ "$rc" = 0 ]
run env WD_MEMORY_LIMIT=1k "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1
ck "WD_MEMORY_LIMIT=1k: the loader's budget is too small: exit $rc" eval '[ "$rc" = 1 ] && err_has "RAM budget 256 bytes"'
run "$WD" convert --format criteo --schema-from "$T/g.wdr" --slot-buckets C3=10 -o "$T/x.wdr" "$T/g.tsv"
ck "--slot-buckets with --schema-from: exit $rc, wanted 2" [ "$rc" = 2 ]
ck "names both" err_has "--slot-buckets and --schema-from both set the bucket counts"
run "$WD" train --train "$T/tr.wdr" --optimizer adam --adam-beta1 0.99999999
ck "--adam-beta1 0.99999999 (1.0f): exit $rc, wanted 2" [ "$rc" = 2 ]
ck "says it is 1 as a float" err_has "--adam-beta1: '0.99999999' is out of range (> 0 and < 1) as a 32-bit float (1)"
run "$WD" train --train "$T/tr.wdr" --lr-deep 1e-50
ck "--lr-deep 1e-50 (0.0f): exit $rc, wanted 2" [ "$rc" = 2 ]
run "$WD" train --train "$T/tr.wdr" --optimizer adam --adam-beta1 0.9999999 --hidden 4 --max-steps 1
ck "--adam-beta1 0.9999999 (below 1.0f): exit $rc" [ "$rc" = 0 ]
long=$(printf 'n%.0s' $(seq 251))
run "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1 --save "$T/$long.wdm"
ck "--save with a 255-byte name: exit $rc" [ "$rc" = 0 ]
ck "written, no temporary file" eval 'have "$T/$long.wdm" && no_temps'
run "$WD" predict --model "$T/$long.wdm" "$T/te.wdr" -o "$T/$long.txt"
ck "predict -o with a 255-byte name: exit $rc" eval '[ "$rc" = 0 ] && have "$T/$long.txt"'
rm -f "$T/$long.wdm" "$T/$long.txt"
end
# --early-stop with a validation file of one class: AUC is undefined; train
# says so once and does not stop ("best nan at step -1")
begin cli_early_stop_one_class
{ echo y,d,c; for i in $(seq 400); do echo "$((i % 2)),$i,v$((i % 7))"; done; } > "$T/oc.csv"
{ echo y,d,c; for i in $(seq 100); do echo "0,$i,v$((i % 7))"; done; } > "$T/oc0.csv"
run "$WD" convert --format csv --label y --dense d --cat c -o "$T/oc.wdr" "$T/oc.csv"
ck "setup oc.wdr: exit $rc" [ "$rc" = 0 ]
run "$WD" convert --format csv --label y --dense d --cat c --schema-from "$T/oc.wdr" -o "$T/oc0.wdr" "$T/oc0.csv"
ck "setup oc0.wdr: exit $rc" [ "$rc" = 0 ]
run "$WD" train --train "$T/oc.wdr" --valid "$T/oc0.wdr" --early-stop 1 --eval-every 2 --hidden 4 --batch 32 --epochs 2 --threads 2
ck "exit $rc" [ "$rc" = 0 ]
ck "all 26 steps, no early stop" eval 'out_has "trained steps=26 " && ! out_has early_stop && ! err_has "early stop"'
ck "warns once that AUC is undefined" [ "$(grep -c 'the validation AUC is undefined: the validation files hold labels of one class; --early-stop cannot judge the model' "$T/err")" = 1 ]
end
# --dense-raw with unscaled values: train warns, naming the columns
begin cli_dense_raw_scale_warning
{ echo y,d,e,c; for i in $(seq 400); do echo "$((i % 2)),$((i * 2500)).5,-$((i % 9)),v$((i % 7))"; done; } > "$T/raw.csv"
run "$WD" convert --format csv --label y --dense d,e --cat c --dense-raw -o "$T/raw.wdr" "$T/raw.csv"
ck "setup raw.wdr: exit $rc" [ "$rc" = 0 ]
run "$WD" train --train "$T/raw.wdr" --hidden 4 --max-steps 1
ck "exit $rc" [ "$rc" = 0 ]
ck "names column 0 and its scale, not column 1" eval 'err_has "raw.wdr: dense column 0 (|x| up to 1e+06): values this large saturate the first layer" && ! err_has "column 1"'
run "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1
ck "no warning for log1p counts" eval '[ "$rc" = 0 ] && ! err_has saturate'
end

# the parser at its documented edges, from each command's table: every
# range's ends are accepted and one step past each is refused; every size
# suffix of --loader-ram means x 1024^n (the budget it sets is named in the
# loader's error); an option where a value belongs is refused by name
begin cli_option_bounds_inclusive
n=0
out_of_range() { grep -qF -- "$1: '$2' is out of range" "$T/err"; }
for c in convert gen train eval predict; do
    while IFS=$'\t' read -r name kind meta range example sets group; do
        r=${range% or *}
        case $kind in
            int|size)
                if [[ $r =~ ^([0-9]+)\.\.([0-9]+)$ ]]; then lo=${BASH_REMATCH[1]}; hi=${BASH_REMATCH[2]}
                elif [[ $r =~ ^\>=\ ([0-9]+)$ ]]; then lo=${BASH_REMATCH[1]}; hi=
                else ck "$c $name: range '$range' understood" false; continue; fi
                run "$WD" $c "$name" "$lo"; ck "$c $name $lo (its low end) accepted" eval '! out_of_range "$name" "$lo"'
                run "$WD" $c "$name" "$((lo - 1))"; ck "$c $name $((lo - 1)) refused" out_of_range "$name" "$((lo - 1))"
                if [ -n "$hi" ]; then
                    run "$WD" $c "$name" "$hi"; ck "$c $name $hi (its high end) accepted" eval '! out_of_range "$name" "$hi"'
                    run "$WD" $c "$name" "$((hi + 1))"; ck "$c $name $((hi + 1)) refused" out_of_range "$name" "$((hi + 1))"
                fi
                n=$((n + 1)) ;;
            float)
                if [[ $r =~ ^(\>|\>=)\ ([^ ]+)\ and\ (\<|\<=)\ ([^ ]+)$ ]]; then
                    lop=${BASH_REMATCH[1]}; lo=${BASH_REMATCH[2]}; hip=${BASH_REMATCH[3]}; hi=${BASH_REMATCH[4]}
                else ck "$c $name: range '$range' understood" false; continue; fi
                run "$WD" $c "$name" "$lo"
                if [ "$lop" = ">" ]; then ck "$c $name $lo (open low end) refused" out_of_range "$name" "$lo"
                else ck "$c $name $lo (closed low end) accepted" eval '! out_of_range "$name" "$lo"'; fi
                run "$WD" $c "$name" "$hi"
                if [ "$hip" = "<" ]; then ck "$c $name $hi (open high end) refused" out_of_range "$name" "$hi"
                else ck "$c $name $hi (closed high end) accepted" eval '! out_of_range "$name" "$hi"'; fi
                above=$(awk -v h="$hi" 'BEGIN { printf "%.17g", h * 1.0000001 }')
                run "$WD" $c "$name" "$above"; ck "$c $name $above (past the high end) refused" out_of_range "$name" "$above"
                n=$((n + 1)) ;;
        esac
    done < <("$WD" $c --list-options 2>/dev/null)
done
ck "ranges checked ($n)" [ "$n" -ge 40 ]
for v in 1K 1k 1KB 1kb 1024; do
    run "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1 --loader-ram "$v"
    ck "--loader-ram $v is 1024 bytes" err_has "RAM budget 1024 bytes"
done
for v in 3M 3m 3MB 3145728; do
    run "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1 --batch 16777216 --loader-ram "$v"
    ck "--loader-ram $v is 3145728 bytes" err_has "RAM budget 3145728 bytes"
done
run "$WD" train --train "$T/tr.wdr" --hidden 4 --max-steps 1 --batch 16777216 --loader-ram 1G
ck "--loader-ram 1G is 1073741824 bytes" err_has "RAM budget 1073741824 bytes"
run "$WD" train --loader-ram 8388607T
ck "--loader-ram 8388607T (2^63 - 2^40) parses" eval '[ "$rc" = 2 ] && err_has "--train" && ! err_has "loader-ram"'
for v in 8388608T 1P 1KiB "1 K" K 1.5M 0x10 -1 1KBB; do
    run "$WD" train --train "$T/tr.wdr" --loader-ram "$v"
    ck "--loader-ram '$v' refused: exit $rc" eval '[ "$rc" = 2 ] && err_has "--loader-ram: '"'$v'"' is"'
done
m=0
for c in convert gen train eval predict dump; do
    other=
    while IFS=$'\t' read -r name kind rest; do
        [ "$kind" = flag ] && continue
        [ -z "$other" ] && { other=$name; continue; }
        run "$WD" $c "$name" "$other"
        ck "$c $name $other: exit $rc, wanted 2" [ "$rc" = 2 ]
        ck "$c $name $other: the option named where a value belongs" err_has "$name needs a value (got the option '$other')"
        m=$((m + 1))
    done < <("$WD" $c --list-options 2>/dev/null)
done
ck "options given an option ($m)" [ "$m" -ge 50 ]
end "($n ranges, $m options)"

# vocabulary fingerprints (issue 21): a day converted on its own numbers its
# values by its own counts: ids permuted, bucket counts equal. Slot c: x is
# the training day's frequent value, y the other day's; the label follows x.
{ echo "click,c,d"; for i in $(seq 0 199); do x=$((i % 5 < 3)); [ $x = 1 ] && v=x || v=y; echo "$x,$v,p$((i % 2))"; done; } > "$T/fa.csv"
{ echo "click,c,d"; for i in $(seq 0 199); do x=$((i % 5 >= 3)); [ $x = 1 ] && v=x || v=y; echo "$x,$v,p$((i % 2))"; done; } > "$T/fb.csv"
fp_args=(--format csv --label click --cat c,d)
begin cli_fingerprint_refused
run "$WD" convert "${fp_args[@]}" -o "$T/fa.wdr" "$T/fa.csv"; ck "convert fa: exit $rc" [ "$rc" = 0 ]
run "$WD" convert "${fp_args[@]}" -o "$T/fb_alone.wdr" "$T/fb.csv"; ck "convert fb alone: exit $rc" [ "$rc" = 0 ]
run "$WD" convert "${fp_args[@]}" --schema-from "$T/fa.wdr" -o "$T/fb.wdr" "$T/fb.csv"; ck "convert fb --schema-from fa: exit $rc" [ "$rc" = 0 ]
fpa=$("$WD" inspect "$T/fa.wdr" | sed -n 's/^  slot 0 .*vocabulary \([0-9a-f]*\)$/\1/p')
fpb=$("$WD" inspect "$T/fb.wdr" | sed -n 's/^  slot 0 .*vocabulary \([0-9a-f]*\)$/\1/p')
fpc=$("$WD" inspect "$T/fb_alone.wdr" | sed -n 's/^  slot 0 .*vocabulary \([0-9a-f]*\)$/\1/p')
ck "inspect prints slot c's fingerprint, equal after --schema-from ($fpa $fpb), another alone ($fpc)" eval '[ -n "$fpa" ] && [ "$fpa" = "$fpb" ] && [ -n "$fpc" ] && [ "$fpa" != "$fpc" ]'
ck "inspect names the input format" eval '"$WD" inspect "$T/fa.wdr" | grep -q "^input: *csv"'
run "$WD" train --train "$T/fa.wdr" --hidden 4 --embed-dim 2 --epochs 3 --threads 2 --save "$T/fa.wdm"; ck "train fa: exit $rc" [ "$rc" = 0 ]
run "$WD" eval --model "$T/fa.wdm" "$T/fb.wdr"; ck "eval fb (--schema-from): exit $rc" [ "$rc" = 0 ]
run "$WD" eval --model "$T/fa.wdm" "$T/fb_alone.wdr"
ck "eval fb alone: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "eval names the file and slot" eval 'err_has "fb_alone.wdr: slot 0 (c)" && err_has "--schema-from"'
run "$WD" predict --model "$T/fa.wdm" "$T/fb_alone.wdr" -o "$T/fbp.txt"
ck "predict fb alone: exit $rc, wanted 1, no output" eval '[ "$rc" = 1 ] && err_has "slot 0 (c)" && [ ! -e "$T/fbp.txt" ]'
run "$WD" train --train "$T/fa.wdr,$T/fb_alone.wdr" --hidden 4 --max-steps 1 --threads 2
ck "train on fa and fb alone: exit $rc, wanted 1, names fb_alone" eval '[ "$rc" = 1 ] && err_has "fb_alone.wdr: slot 0 (c)"'
run "$WD" train --train "$T/fa.wdr" --valid "$T/fb_alone.wdr" --hidden 4 --max-steps 1 --threads 2
ck "--valid fb alone: exit $rc, wanted 1" eval '[ "$rc" = 1 ] && err_has "fb_alone.wdr: slot 0 (c)"'
run "$WD" train --init-from "$T/fa.wdm" --train "$T/fb_alone.wdr" --max-steps 100 --threads 2 --save "$T/fb.wdm"
ck "--init-from fa.wdm on fb alone: exit $rc, wanted 1, no model" eval '[ "$rc" = 1 ] && err_has "the model" && [ ! -e "$T/fb.wdm" ]'
run "$WD" convert --format criteo --schema-from "$T/fa.wdr" -o "$T/fx.wdr" "$T/fb.csv"
ck "convert --format criteo --schema-from a csv file: exit $rc, wanted 1" \
    eval '[ "$rc" = 1 ] && err_has "the input format: this spec Criteo TSV, the other CSV"'
end

# vocabularies that grow (issue 20): day 1 with room, day 2 extended from it;
# the oov lines of convert, train and eval; a full table warned about
begin cli_vocab_grows
{ echo "click,c,d"; for i in $(seq 0 199); do echo "$((i % 2)),a$((i % 10)),d$((i % 3))"; done; } > "$T/va.csv"
{ echo "click,c,d"; for i in $(seq 0 199); do echo "$((i % 2)),b$((i % 20)),d$((i % 3))"; done; } > "$T/vb.csv"
va=(--format csv --label click --cat c,d)
run "$WD" convert "${va[@]}" --vocab-capacity 15 -o "$T/va.wdr" "$T/va.csv"
ck "day 1 with room: exit $rc, oov line" eval '[ "$rc" = 0 ] && grep -q "^oov converted values=400 oov=0 share=0.0000 worst=-$" "$T/out"'
run "$WD" convert "${va[@]}" --schema-from "$T/va.wdr" -o "$T/vb-frozen.wdr" "$T/vb.csv"
ck "day 2 frozen: every c out of vocabulary" eval '[ "$rc" = 0 ] && grep -q "^oov converted values=400 oov=200 share=0.5000 worst=c:1.0000$" "$T/out"'
run "$WD" convert "${va[@]}" --schema-from "$T/va.wdr" --extend-vocab -o "$T/vb.wdr" "$T/vb.csv"
ck "day 2 extended: 5 new ids, 15 without room, named" eval '[ "$rc" = 0 ] && out_has "vocabulary extended new_ids=5 slots=1 no_room=15" && grep -q "^oov converted values=400 oov=150 share=0.3750 worst=c:0.7500$" "$T/out" && err_has "slot c: its table is full (15 values in 16 rows): 15 new values"'
"$WD" train --train "$T/va.wdr" --hidden 4 --threads 2 --save "$T/va.wdm" > /dev/null 2>&1
run "$WD" train --train "$T/vb.wdr" --init-from "$T/va.wdm" --threads 2 --save "$T/vb.wdm"
ck "--init-from on the extended day: exit $rc, oov line" eval '[ "$rc" = 0 ] && grep -q "^oov trained values=400 oov=150 share=0.3750 worst=c:0.7500$" "$T/out"'
run "$WD" eval --model "$T/va.wdm" "$T/vb.wdr"
ck "eval of the extended day by day 1's model: exit $rc, wanted 1" eval '[ "$rc" = 1 ] && err_has "slot 0 (c)" && err_has "extends the model'"'"'s"'
run "$WD" eval --model "$T/vb.wdm" "$T/va.wdr"
ck "eval of day 1 by day 2's model: exit $rc, oov line before auc" eval '[ "$rc" = 0 ] && grep -q "^oov evaluated values=400 oov=0 share=0.0000 worst=-$" "$T/out" && tail -1 "$T/out" | grep -q "^auc="'
run "$WD" convert "${va[@]}" --extend-vocab -o "$T/vx.wdr" "$T/vb.csv"
ck "--extend-vocab without --schema-from: exit $rc, wanted 2" eval '[ "$rc" = 2 ] && err_has "--schema-from"'
run "$WD" convert "${va[@]}" --schema-from "$T/va.wdr" --vocab-capacity 100 -o "$T/vx.wdr" "$T/vb.csv"
ck "--vocab-capacity with --schema-from: exit $rc, wanted 2" [ "$rc" = 2 ]
end

# the serving export: smaller, the same predictions, cannot train
begin cli_export
ck "setup: fa.wdm" have "$T/fa.wdm"
run "$WD" export "$T/fa.wdm" "$T/fa-serve.wdm"
ck "export: exit $rc" [ "$rc" = 0 ]
ck "export reports the sizes" out_has "exported $T/fa.wdm -> $T/fa-serve.wdm"
ck "smaller than the checkpoint" eval '[ "$(stat -c %s "$T/fa-serve.wdm" 2>/dev/null || echo 0)" -gt 0 ] && [ "$(stat -c %s "$T/fa-serve.wdm")" -lt "$(stat -c %s "$T/fa.wdm")" ]'
"$WD" predict --model "$T/fa.wdm" "$T/fb.wdr" -o "$T/fe1.txt" > /dev/null 2>&1
run "$WD" predict --model "$T/fa-serve.wdm" "$T/fb.wdr" -o "$T/fe2.txt"
ck "predict with the export: exit $rc, the checkpoint's predictions" eval '[ "$rc" = 0 ] && have "$T/fe1.txt" && cmp -s "$T/fe1.txt" "$T/fe2.txt"'
run "$WD" train --init-from "$T/fa-serve.wdm" --train "$T/fb.wdr" --max-steps 100 --threads 2
ck "train from the export: exit $rc, wanted 1" eval '[ "$rc" = 1 ] && err_has "exported for serving"'
run "$WD" export "$T/fa-serve.wdm" "$T/fa-serve.wdm"
ck "export onto its input: exit $rc, wanted 2" [ "$rc" = 2 ]
end

# a model inspected (issue 32): its input format, position, training files'
# fingerprint, each slot's vocabulary (size, rows left, the fingerprint its
# training file has) and its bytes by part
begin cli_inspect_model
ck "setup: va.wdr, vb.wdm, fa-serve.wdm" have "$T/va.wdr" "$T/vb.wdm" "$T/fa-serve.wdm"
run "$WD" train --train "$T/va.wdr" --hidden 4 --batch 32 --max-steps 3 --threads 2 --save "$T/im.wdm"
ck "train im.wdm: exit $rc" [ "$rc" = 0 ]
run "$WD" inspect "$T/im.wdm"
ck "inspect im.wdm: exit $rc" [ "$rc" = 0 ]
ck "a checkpoint of csv input" eval 'out_has "model:    a checkpoint (weights and optimizer state)" &&
                                   grep -q "^input: *csv" "$T/out"'
ck "layers" out_has "layers:   0 dense, 2 slots, embed dim 16, hidden 4, wide, optimizer adagrad, pooling sum, \
precision fp32"
ck "position: 3 steps of 32" out_has "position: step 3, epoch 0, batch 3 of it, batch size 32"
ck "training files' fingerprint" grep -qE '^training files: fingerprint [0-9a-f]{16} ' "$T/out"
ck "slot c: 10 values in 16 rows, 5 left" \
    grep -qE '^  slot 0 +c +16 rows  one-hot  vocabulary 10 values, 5 rows left, fingerprint [0-9a-f]{16}$' "$T/out"
fpm=$(sed -n 's/^  slot 0 .*fingerprint \([0-9a-f]*\)$/\1/p' "$T/out")
ck "slot c's fingerprint is va.wdr's ($fpm)" \
    eval '[ -n "$fpm" ] && "$WD" inspect "$T/va.wdr" | grep -q "^  slot 0 .*vocabulary $fpm$"'
# wide: 16 + 16 rows + bias; embeddings 32 x 16; MLP 32 x 4 + 4, 4 + 1; state: FTRL z, n and Adagrad's accumulators
ck "bytes by part" out_has "bytes:    wide 132, embeddings 2048, MLP 548, optimizer state 3408; total 6136"
run "$WD" inspect "$T/vb.wdm"
ck "vb.wdm (day 2, extended): slot c full" \
    grep -qE '^  slot 0 +c +16 rows  one-hot  vocabulary 15 values, 0 rows left, ' "$T/out"
run "$WD" inspect --verify "$T/fa-serve.wdm"
ck "the export: weights only, no optimizer state, verified" \
    eval '[ "$rc" = 0 ] && out_has "model:    exported for serving (weights only" &&
          out_has ", optimizer state 0 (none in an export); total " && out_has "verify:   OK"'
head -c 300 "$T/im.wdm" > "$T/im-cut.wdm"
fails_with "a cut model" 1 "im-cut.wdm" "$WD" inspect "$T/im-cut.wdm"
end

# one argument order for wd export, with or without --onnx: the model, then the output; the reverse refused saying so
begin cli_export_argument_order
ck "setup: im.wdm" have "$T/im.wdm"
cp "$T/im.wdm" "$T/im-before.wdm"
run "$WD" export --onnx "$T/im.wdm" "$T/im.onnx"
ck "export --onnx M.wdm OUT.onnx: exit $rc" \
    eval '[ "$rc" = 0 ] && have "$T/im.onnx" && out_has "exported $T/im.wdm to $T/im.onnx: ONNX opset 17"'
rm -f "$T/im.onnx"
fails_with "export --onnx OUT.onnx M.wdm (the order of before)" 2 "the model comes first and the output second" \
    "$WD" export --onnx "$T/im.onnx" "$T/im.wdm"
ck "the model untouched, no output" eval 'cmp -s "$T/im.wdm" "$T/im-before.wdm" && [ ! -e "$T/im.onnx" ]'
fails_with "export --onnx M.wdm (no output)" 2 "export [--onnx] M.wdm OUT: the output is required" \
    "$WD" export --onnx "$T/im.wdm"
ck "export --help gives the one order" \
    eval '"$WD" export --help | grep -qF "export [--onnx [--values-from TEXT,...]] M.wdm OUT"'
end

# ---- lost output, hangs, misleading errors (issue 30, items 7-13) and second checks -------------------------
# A closed standard stream is opened on /dev/null: the output's file cannot
# take its number (convert's progress lines used to land in the .wdr, predict's
# summary in PRED.txt)
begin cli_closed_std_streams
ck "setup: g.tsv, m.wdm, te.wdr" have "$T/g.tsv" "$T/m.wdm" "$T/te.wdr"
rm -f "$T/cs1.wdr" "$T/cs2.wdr"
cs=(convert --format criteo --buckets 1000 --block 500 --progress-every 0.0001)
"$WD" "${cs[@]}" -o "$T/cs1.wdr" "$T/g.tsv" > /dev/null 2>&1
"$WD" "${cs[@]}" -o "$T/cs2.wdr" "$T/g.tsv" > /dev/null 2>&-; rc=$?
ck "convert 2>&-: exit $rc" [ "$rc" = 0 ]
ck "convert 2>&-: the output verifies" \
    eval '"$WD" inspect --verify "$T/cs2.wdr" 2>&1 | grep -q "^verify:   OK, 40 blocks"'
ck "convert 2>&-: its blocks are those of convert 2>/dev/null" same_blocks 0 "$T/cs1.wdr" 0 "$T/cs2.wdr" 800
"$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/cs1.txt" > /dev/null 2>&1
"$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/cs2.txt" >&- 2>&-; rc=$?
ck "predict >&- 2>&-: exit $rc, the same 1500 lines" \
    eval '[ "$rc" = 0 ] && have "$T/cs1.txt" && cmp -s "$T/cs1.txt" "$T/cs2.txt"'
end

# Signal handlers come before any temporary file (check_output's probe of
# the output's directory included): an LD_PRELOAD shim fails wd (exit 99) when
# it creates a "NAME.tmp-PID" file while SIGTERM still has no handler, the
# window where a signal killed wd and left the file
begin cli_handlers_before_temporaries
cat > "$T/shim.c" <<'SHIM'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
int open(const char *p, int fl, ...) {
    va_list ap; va_start(ap, fl); int mode = (fl & O_CREAT) ? va_arg(ap, int) : 0; va_end(ap);
    struct sigaction sa;
    if (strstr(p, ".tmp-") && sigaction(SIGTERM, NULL, &sa) == 0
        && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)) {
        static const char m[] = "shim: a temporary file before the signal handlers\n";
        if (write(2, m, sizeof m - 1)) {}
        _exit(99);
    }
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    return real(p, fl, mode);
}
SHIM
if ${CC:-cc} -shared -fPIC -O1 -o "$T/shim.so" "$T/shim.c" -ldl > "$T/cc.err" 2>&1; then
    bad=
    hs() { local name=$1; shift; LD_PRELOAD="$T/shim.so" "$@" > "$T/out" 2> "$T/err"; rc=$?
           { [ "$rc" = 0 ] && ! err_has "shim:"; } || bad="$bad | $name: exit $rc $(head -c 120 "$T/err")"; }
    hs convert "$WD" convert --format criteo --buckets 100 -o "$T/hs.wdr" "$T/g.tsv"
    hs train "$WD" train --train "$T/te.wdr" --hidden 4 --max-steps 1 --threads 1 --save "$T/hs.wdm"
    hs gen "$WD" gen -o "$T/hs-g.wdr" --rows 10
    hs predict "$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/hs.txt"
    hs export "$WD" export "$T/m.wdm" "$T/hs-e.wdm"
    hs export-onnx "$WD" export --onnx "$T/m.wdm" "$T/hs.onnx"
    hs dump "$WD" dump "$T/te.wdr" "$T/hs-dump"
    ck "handlers before the first temporary file:$bad" [ -z "$bad" ]
    LD_PRELOAD="$T/shim.so" bash -c ': > "$1"' - "$T/ctl.tmp-1" 2> /dev/null; rc=$?
    ck "control: the shim stops a shell creating NAME.tmp-1 (exit $rc, wanted 99)" [ "$rc" = 99 ]
    end
else skip cli_handlers_before_temporaries "cannot build the shim: $(head -c 200 "$T/cc.err")"; fi

# Every output's name is checked as it will be written, before any work: a
# last component over NAME_MAX (255 bytes) used to pass (the probe tried a
# shortened temporary name) and fail after training, losing the model
begin cli_output_names_checked
long=$(printf 'n%.0s' $(seq 252))
rm -f "$T/onc.csv"
fails_with "--save of 256 bytes" 1 "--save $T/$long.wdm: cannot be written: File name too long" \
    "$WD" train --train "$T/te.wdr" --hidden 4 --max-steps 3 --threads 1 --save "$T/$long.wdm" --log "$T/onc.csv"
ck "--save of 256 bytes: refused before training (no log)" [ ! -e "$T/onc.csv" ]
fails_with "convert -o of 256 bytes" 1 "-o $T/$long.wdr: cannot be written: File name too long" \
    "$WD" convert --format criteo --buckets 100 -o "$T/$long.wdr" "$T/g.tsv"
fails_with "--id-column's OUT.wdr.ids of 256 bytes" 1 "$T/${long}a.ids: cannot be written: File name too long" \
    "$WD" convert --format csv --label click --cat c --id-column c -o "$T/${long}a" "$T/va.csv"
fails_with "--log of 256 bytes" 1 "--log $T/$long.csv: cannot be written: File name too long" \
    "$WD" train --train "$T/te.wdr" --hidden 4 --max-steps 3 --threads 1 --log "$T/$long.csv"
fails_with "--tensorboard of 256 bytes" 1 "--tensorboard $T/$long.tbd: cannot be written: File name too long" \
    "$WD" train --train "$T/te.wdr" --hidden 4 --max-steps 3 --threads 1 --tensorboard "$T/$long.tbd"
fails_with "--tensorboard naming a file" 2 "is not a directory" \
    "$WD" train --train "$T/te.wdr" --hidden 4 --max-steps 3 --tensorboard "$T/g.tsv"
fails_with "predict -o of 256 bytes" 1 "-o $T/$long.txt: cannot be written" \
    "$WD" predict --model "$T/m.wdm" "$T/te.wdr" -o "$T/$long.txt"
ck "nothing written, no temporary file" eval '[ -z "$(find "$T" -name "nnnn*" | head -1)" ] && no_temps'
end

# Misleading errors: a bad setting is named as such; a write error names the
# file as given, never its temporary name; CSV says what is wrong with a line
begin cli_errors_say_what
WD_MEMORY_LIMIT=garbage run "$WD" inspect --verify "$T/g.wdr"
ck "WD_MEMORY_LIMIT=garbage: exit $rc, the setting named" \
    eval '[ "$rc" = 1 ] && err_has "WD_MEMORY_LIMIT '"'"'garbage'"'"' is not a size" && ! err_has "is bad"'
WD_MEMORY_LIMIT=garbage run "$WD" inspect --help
ck "WD_MEMORY_LIMIT=garbage inspect --help: exit $rc, the help" eval '[ "$rc" = 0 ] && out_has "wd inspect"'
WD_MEMORY_LIMIT=garbage run "$WD" bogus-command
ck "WD_MEMORY_LIMIT=garbage bogus-command: exit $rc, its usage error" err_has "unknown command 'bogus-command'"
(ulimit -f 64; trap '' XFSZ; exec \
    "$WD" convert --format criteo --buckets 1000 -o "$T/fsz.wdr" "$T/g.tsv") > "$T/out" 2> "$T/err"; rc=$?
ck "convert past a 64 KiB file size limit: exit $rc, names fsz.wdr, not its temporary name" \
    eval '[ "$rc" = 1 ] && err_has "$T/fsz.wdr: " && ! err_has ".tmp-" && no_temps'
printf 'y,a,b\n1,x,"y\n0,z,w\n' > "$T/q.csv"
fails_with "an unterminated quote" 1 "q.csv:2: an unterminated quote" \
    "$WD" convert --format csv --label y --cat a,b -o "$T/q.wdr" "$T/q.csv"
printf 'y,a,b,a\n1,x,y,z\n0,p,q,r\n' > "$T/dup.csv"
fails_with "a column named twice" 1 "columns 2 and 4 of the header are both named 'a'" \
    "$WD" convert --format csv --label y --cat a,b -o "$T/dup.wdr" "$T/dup.csv"
ck "no output" eval '[ ! -e "$T/q.wdr" ] && [ ! -e "$T/dup.wdr" ]'
run "$WD" convert --format csv --label y --cat b --buckets 10 -o "$T/dup.wdr" "$T/dup.csv"
ck "a repeated name no option gives (an unused column): exit $rc, 2 samples" \
    eval '[ "$rc" = 0 ] && [ "$(samples "$T/dup.wdr")" = 2 ]'
D=$T; for i in $(seq 11); do D=$D/$(printf 'm%.0s' {1..250}); done   # a name of 2700+ bytes
mkdir -p "$D" && printf '1\t2\n' > "$D/in.tsv"
fails_with "an output named as its input, 2 x 2700+ bytes: said whole" 2 "an input of the same command" \
    "$WD" convert --format criteo --buckets 10 -o "$D/in.tsv" "$D/in.tsv"
rm -rf "$T/mmmm"*
end

# --vocab-capacity is honoured or refused, never ignored: with --buckets (no
# vocabulary) and for a slot of more than 4096 values (it hashes: no room)
begin cli_vocab_capacity_never_ignored
fails_with "with --buckets" 1 "vocab_capacity sizes a new vocabulary" \
    "$WD" convert --format csv --label click --cat c,d --buckets 100 --vocab-capacity 50 -o "$T/vc.wdr" "$T/va.csv"
fails_with "a slot of more than 4096 values" 1 "has more than 4096 distinct values" \
    "$WD" convert --format criteo --vocab-capacity 100 -o "$T/vc.wdr" "$T/g.tsv"
run "$WD" convert --format csv --label click --cat c,d --buckets 100 --min-count 1 --vocab-capacity 50 \
    -o "$T/vc.wdr" "$T/va.csv"
ck "with --min-count (a vocabulary): exit $rc, tables of 51 rows" \
    eval '[ "$rc" = 0 ] && "$WD" inspect "$T/vc.wdr" | grep -q "^  slot 0   c  *51 buckets"'
end

# Resuming a run that has finished trains nothing and says so (it printed
# "trained steps=0 ... last_loss=0.00000")
begin cli_resume_finished_run
"$WD" train --train "$T/te.wdr" --hidden 4 --batch 100 --threads 1 --save "$T/fin.wdm" > /dev/null 2>&1
run "$WD" train --train "$T/te.wdr" --resume "$T/fin.wdm" --threads 1 --save "$T/fin.wdm"
ck "exit $rc, wanted 0" [ "$rc" = 0 ]
want="nothing to train: the model is at epoch 1, step 15, where this run ends (--epochs 1)"
ck "says there is nothing to train, and why" grep -q "^trained steps=0 samples=0 .*$want" "$T/out"
ck "no loss of a step that never ran" eval '! out_has "last_loss"'
end

# wd dump leaves no directory it made when it fails (a corrupt block)
begin cli_dump_failure_leaves_nothing
rm -rf "$T/dd"
run "$WD" dump "$T/flip.wdr" "$T/dd/sub"
ck "dump of a corrupt file: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "no directory left" [ ! -e "$T/dd" ]
mkdir -p "$T/dd2"
run "$WD" dump "$T/flip.wdr" "$T/dd2"
ck "a directory that existed stays" [ -d "$T/dd2" ]
end

# Second checks of areas one test alone caught (tests/ecosystem.sh needs
# Python's onnx and onnxruntime and skips without them):
# the ONNX export: its graph names every input the help lists and the output,
# an overwrite of its model is refused, a failure leaves no file
begin cli_export_onnx
rm -f "$T/x.onnx"
run "$WD" export --onnx "$T/m.wdm" "$T/x.onnx"
ck "export --onnx: exit $rc" [ "$rc" = 0 ]
ck "reports opset 17 and the inputs (13 dense, 26 slots, the cross)" eval 'out_has "ONNX opset 17" \
    && out_has "dense[N,13]" && out_has "ids.C1[N]" && out_has "ids.C26[N]" && out_has "cross0[N]" \
    && out_has "output: probability[N]"'
ck "the file holds those names and the opset's domain" eval 'have "$T/x.onnx" \
    && for n in dense ids.C1 ids.C26 cross0 probability; do grep -aq "$n" "$T/x.onnx" || exit 1; done'
ck "the reported size is the file's" out_has "$(stat -c %s "$T/x.onnx" 2>/dev/null) bytes"
fails_with "onto its model" 2 "an output may not replace an input" "$WD" export --onnx "$T/m.wdm" "$T/m.wdm"
fails_with "from a file that is no model" 1 "te.wdr" "$WD" export --onnx "$T/te.wdr" "$T/y.onnx"
ck "no output, no temporary file" eval '[ ! -e "$T/y.onnx" ] && no_temps'
end
# the one-epoch warning: several epochs without validation, and not with it
begin cli_overfit_warning
run "$WD" train --train "$T/te.wdr" --hidden 4 --batch 100 --epochs 3 --threads 1
ck "--epochs 3 without --valid: exit $rc, warns naming the epochs and the remedy" \
    eval '[ "$rc" = 0 ] && err_has "--epochs 3 without --valid" \
        && err_has "one-epoch phenomenon" && err_has "--early-stop 1"'
run "$WD" train --train "$T/te.wdr" --valid "$T/te.wdr" --hidden 4 --batch 100 --epochs 3 --threads 1
ck "with --valid: exit $rc, no warning" eval '[ "$rc" = 0 ] && ! err_has "one-epoch phenomenon"'
end
# each signal path: SIGHUP stops training as SIGINT does (129, saved); SIGTERM
# stops a conversion (143, nothing written); a command that stops at once
# (gen) removes its temporary files; a SIGINT ignored at start stays ignored
begin cli_signal_paths
bg "$WD" train --train "$T/tr.wdr" --hidden 8 --batch 32 --epochs 100000 --threads 1 --save "$T/hup.wdm"
ck "setup: train catches SIGHUP" caught $pid 1 "$(readlink -f "$WD")"
sleep 0.3; kill -HUP $pid 2>/dev/null; wait_pid $pid 60
ck "train, SIGHUP: exit $rc, wanted 129, saved" \
    eval '[ "$rc" = 129 ] && err_has "interrupted by SIGHUP" && have "$T/hup.wdm"'
rm -f "$T/ct.wdr" "$T/ctin.tsv"; mkfifo "$T/ctin.tsv"; exec 8<>"$T/ctin.tsv"
bg "$WD" convert --format criteo --buckets 1000 -o "$T/ct.wdr" "$T/ctin.tsv"
ck "setup: convert catches SIGTERM" caught $pid 15 "$(readlink -f "$WD")"
timeout 10 head -5000 "$T/g.tsv" >&8
kill -TERM $pid 2>/dev/null   # it stops at its next chunk (progress is called at most every 0.1 s): fed until it does
for i in 1 2 3 4 5; do sleep 0.3; kill -0 $pid 2>/dev/null && timeout 3 head -5000 "$T/g.tsv" >&8; done
exec 8>&-; wait_pid $pid 30
ck "convert, SIGTERM: exit $rc, wanted 143, nothing written" \
    eval '[ "$rc" = 143 ] && err_has "ct.wdr was not written" && [ ! -e "$T/ct.wdr" ] && no_temps'
rm -f "$T/ctin.tsv"
bg "$WD" gen -o "$T/sg.wdr" --rows 100000000 --threads 1
ck "setup: gen catches SIGTERM" caught $pid 15 "$(readlink -f "$WD")"
sleep 0.3; kill -TERM $pid 2>/dev/null; wait_pid $pid 30
ck "gen, SIGTERM: exit $rc, wanted 143, no output, no temporary file" \
    eval '[ "$rc" = 143 ] && [ ! -e "$T/sg.wdr" ] && no_temps'
(trap '' INT; exec "$WD" train --train "$T/tr.wdr" --hidden 8 --batch 32 --epochs 100000 --threads 1) \
    > "$T/out" 2> "$T/err" & pid=$!
ck "setup: train catches SIGTERM" caught $pid 15 "$(readlink -f "$WD")"
kill -INT $pid 2>/dev/null; sleep 0.5
ck "an ignored SIGINT stays ignored" kill -0 $pid
kill -TERM $pid 2>/dev/null; wait_pid $pid 60
ck "then SIGTERM: exit $rc, wanted 143" [ "$rc" = 143 ]
end

# issue 30: the whole input contract wherever a file meets a model. Dense
# columns swapped or another dense rule through --schema-from a file or a
# model (.wdm), a --dense-raw file evaluated by a count model, a slot
# derived from the label, and ids files bound to their data file
begin cli_contract_schema_from
{ echo "y,d1,d2,c"; for i in $(seq 300); do echo "$((i % 2)),$((i % 17)),$((i % 5)),v$((i % 7))"; done; } > "$T/dd.csv"
run "$WD" convert --format csv --label y --dense d1,d2 --cat c -o "$T/dd.wdr" "$T/dd.csv"
ck "convert dd.csv: exit $rc" [ "$rc" = 0 ]
run "$WD" train --train "$T/dd.wdr" --hidden 4 --max-steps 5 --threads 2 --save "$T/dd.wdm"
ck "train dd.wdr: exit $rc" eval '[ "$rc" = 0 ] && have "$T/dd.wdm"'
for f in dd.wdr dd.wdm; do
    rm -f "$T/dx.wdr"
    run "$WD" convert --format csv --label y --dense d2,d1 --cat c --schema-from "$T/$f" -o "$T/dx.wdr" "$T/dd.csv"
    ck "--dense d2,d1 --schema-from $f: exit $rc, wanted 1, names dense column 1, no output" \
        eval '[ "$rc" = 1 ] && err_has "$f: dense column 1: this spec column '"'d2'"', the other column '"'d1'"'" &&
              [ ! -e "$T/dx.wdr" ]'
    run "$WD" convert --format csv --label y --dense d1,d2 --dense-raw --cat c --schema-from "$T/$f" -o "$T/dx.wdr" \
        "$T/dd.csv"
    ck "--dense-raw --schema-from $f: exit $rc, wanted 1, names the dense rule" \
        eval '[ "$rc" = 1 ] && err_has "the dense rule: this spec values as they are"'
done
run "$WD" convert --format csv --label y --dense d1,d2 --cat c --schema-from "$T/dd.wdm" -o "$T/dm.wdr" "$T/dd.csv"
ck "--schema-from the model: exit $rc" [ "$rc" = 0 ]
run "$WD" convert --format csv --label y --dense d1,d2 --cat c --schema-from "$T/dd.wdr" -o "$T/df.wdr" "$T/dd.csv"
ck "--schema-from the model and from its training file: the same file" \
    eval '[ "$rc" = 0 ] && have "$T/dm.wdr" && cmp -s "$T/dm.wdr" "$T/df.wdr"'
end
begin cli_contract_dense_raw_eval
run "$WD" convert --format csv --label y --dense d1,d2 --dense-raw --cat c -o "$T/ddr.wdr" "$T/dd.csv"
ck "convert --dense-raw: exit $rc" [ "$rc" = 0 ]
run "$WD" eval --model "$T/dd.wdm" "$T/ddr.wdr"
ck "eval of a --dense-raw file by a count model: exit $rc, wanted 1" \
    eval '[ "$rc" = 1 ] && err_has "ddr.wdr: the dense rule: this evaluation file values as they are (--dense-raw)," &&
          err_has "the model counts through log1p"'
run "$WD" predict --model "$T/dd.wdm" "$T/ddr.wdr" -o "$T/ddr.txt"
ck "predict: exit $rc, wanted 1, no output" eval '[ "$rc" = 1 ] && [ ! -e "$T/ddr.txt" ]'
end
expect cli_contract_derive_label 1 "$WD" convert --format csv --label y --cat c --derive 'leak=y[0:1]' \
    -o "$T/leak.wdr" "$T/dd.csv"
ck "names the label" err_has "derived slot 'leak': column 'y' is the label"
ck "no output" [ ! -e "$T/leak.wdr" ]
end
begin cli_contract_ids_bound
ck "setup: s.wdr, s.wdr.ids, s.wdm" have "$T/s.wdr" "$T/s.wdr.ids" "$T/s.wdm"
{ sed -n 50p "$T/s.wdr.ids"; sed -n 2,49p "$T/s.wdr.ids"; sed -n 1p "$T/s.wdr.ids"; tail -n +51 "$T/s.wdr.ids"
} > "$T/swapped.ids"
run "$WD" predict --model "$T/s.wdm" "$T/s.wdr" --ids "$T/swapped.ids" -o "$T/sw.txt"
ck "ids 1 and 50 swapped: exit $rc, wanted 1, no output" \
    eval '[ "$rc" = 1 ] && err_has "swapped.ids: 3000 ids" && err_has "in another order" && [ ! -e "$T/sw.txt" ]'
run "$WD" convert "${csv_args[@]}" --id-column id -o "$T/o.wdr" "$T/s.csv"
run "$WD" predict --model "$T/s.wdm" "$T/s.wdr" --ids "$T/o.wdr.ids" -o "$T/sw.txt"
ck "another conversion's ids: exit $rc, wanted 1" \
    eval '[ "$rc" = 1 ] && err_has "o.wdr.ids: these are the ids of another data file"'
head -n -1 "$T/s.wdr.ids" > "$T/unbound.ids"
run "$WD" predict --model "$T/s.wdm" "$T/s.wdr" --ids "$T/unbound.ids" -o "$T/sw.txt"
ck "ids without the binding line: exit $rc, wanted 1" \
    eval '[ "$rc" = 1 ] && err_has "unbound.ids: no line binding it to its data file"'
end

tl_summary cli
