#!/usr/bin/env bash
# The model and its training meet other tools: ONNX export checked by ONNX
# Runtime and onnx.checker (tests/onnx_check.py), TensorBoard event files read
# back by TensorBoard's own reader (tests/tb_check.py), the warning before a
# second epoch without validation.
# Usage: tests/ecosystem.sh WD ONNX_FEED TMPDIR DATADIR
# One PASS/FAIL/SKIP line per test, then "# ecosystem: N passed, N failed, N
# skipped"; tests/run.sh checks the count (ECOSYSTEM_TESTS there). The Python
# packages (onnx, onnxruntime, numpy, tensorboard) come from
# tools/install-deps.sh (make deps); without them the tests that need them
# skip, and under CI=true tests/run.sh turns every skip into a failure.
WD=$1; FEED=$2; T=$3; DATA=$4
mkdir -p "$T"
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/testlib.sh"   # PASS/FAIL/SKIP and the summary; begin, ck, end, run, out_has, err_has ...
PY=${PYTHON:-python3}
py_why=
if ! command -v "$PY" >/dev/null; then py_why="$PY not installed (tools/install-deps.sh installs python3 and the packages)"
elif ! "$PY" -c 'import onnx, onnxruntime, numpy, tensorboard' 2>"$T/py.err"; then
    py_why="python packages missing ($(tail -1 "$T/py.err")): run tools/install-deps.sh (make deps)"
fi
have_data=; [ -f "$DATA/criteo_kaggle_head8000_train.tsv" ] && [ -f "$DATA/avazu_kaggle_head9000_train.csv" ] && have_data=1

# onnx_case NAME MODEL.wdm DATA.wdr [RAW.tsv TEXT...]: export, the feed, wd
# predict, ONNX Runtime (with RAW.tsv, DATA.wdr's text: the graph maps the raw
# strings of the slots with a vocabulary, whose values it reads from TEXT...)
onnx_case() {
    local name=$1 model=$2 data=$3 raw=${4:-} vals=
    [ -n "$raw" ] && { shift 4; vals=$(IFS=,; echo "$*"); }
    run "$WD" export --onnx ${vals:+--values-from "$vals"} "$model" "$T/$name.onnx"
    ck "export: exit $rc" [ "$rc" = 0 ]
    ck "export prints its inputs" out_has "output: probability[N]"
    rm -rf "$T/$name.feed"; mkdir -p "$T/$name.feed"
    run "$FEED" "$model" "$data" "$T/$name.feed"
    ck "onnx_feed: exit $rc" [ "$rc" = 0 ]
    run "$WD" predict --model "$model" -o "$T/$name.pred" --no-ids "$data"
    ck "wd predict: exit $rc" [ "$rc" = 0 ]
    run "$PY" "$HERE/onnx_check.py" "$T/$name.onnx" "$T/$name.feed" "$T/$name.pred" ${raw:+"$raw"}
    ck "ONNX Runtime vs wd_predict: $(grep -E '^(ok|fail)' "$T/out" | head -1)" [ "$rc" = 0 ]
    end "($(sed -n 's/^ok: //p' "$T/out" | sed 's/; checker passed.*//'))"
}
train() { run "$WD" train --threads 2 --seed 3 "$@"; ck "train: exit $rc" [ "$rc" = 0 ]; }

# ---- ONNX export ---------------------------------------------------------------------------------
# Criteo (13 dense, 26 one-hot slots), Avazu (no dense, derived slots, three
# crosses, Adam), a multi-hot LibSVM file (sum and mean pooling, samples with
# no ids), and each part alone: ONNX Runtime's probabilities equal wd_predict's
# within 1e-6 on every sample, onnx.checker passes, opset 17.
ONNX_DATA="onnx_criteo onnx_criteo_raw_strings onnx_avazu_crosses onnx_avazu_raw_strings onnx_raw_strings_refused"
if [ -n "$py_why" ]; then for t in $ONNX_DATA; do skip "$t" "$py_why"; done
elif [ -z "$have_data" ]; then for t in $ONNX_DATA; do skip "$t" "no data in $DATA"; done
else
    begin onnx_criteo
    run "$WD" convert --format criteo -o "$T/cr.wdr" "$DATA/criteo_kaggle_head8000_train.tsv"
    ck "convert: exit $rc" [ "$rc" = 0 ]
    run "$WD" convert --format criteo --schema-from "$T/cr.wdr" -o "$T/cr_te.wdr" "$DATA/criteo_kaggle_head8000_test.tsv"
    ck "convert test: exit $rc" [ "$rc" = 0 ]
    train --train "$T/cr.wdr" --hidden 64,32 --batch 256 --max-steps 25 --save "$T/cr.wdm"
    onnx_case cr "$T/cr.wdm" "$T/cr_te.wdr"
    # raw strings for the 25 slots with a vocabulary (C3 hashes: ids), their
    # values read back from the training text; the test text holds values the
    # vocabulary lacks (id 0); crosses computed in the graph: C1xC2 of two
    # vocabularies, C3xC4 of a hashed slot and a vocabulary
    begin onnx_criteo_raw_strings
    train --train "$T/cr.wdr" --hidden 16 --batch 256 --max-steps 25 --cross C1xC2,C3xC4 --cross-buckets 5000 \
          --save "$T/crx.wdm"
    onnx_case cr_raw "$T/crx.wdm" "$T/cr_te.wdr" "$DATA/criteo_kaggle_head8000_test.tsv" \
        "$DATA/criteo_kaggle_head8000_train.tsv"
    begin onnx_avazu_crosses
    run "$WD" convert --format csv --preset avazu -o "$T/av.wdr" "$DATA/avazu_kaggle_head9000_train.csv"
    ck "convert: exit $rc" [ "$rc" = 0 ]
    run "$WD" convert --format csv --preset avazu --schema-from "$T/av.wdr" -o "$T/av_te.wdr" "$DATA/avazu_kaggle_head9000_test.csv"
    ck "convert test: exit $rc" [ "$rc" = 0 ]
    train --train "$T/av.wdr" --hidden 32,16 --batch 256 --max-steps 25 --optimizer adam --cross-buckets 5000 \
          --cross site_idxapp_id,hour_of_dayxdevice_type,C14xdevice_model --save "$T/av.wdm"
    onnx_case av "$T/av.wdm" "$T/av_te.wdr"
    # the same model from the CSV's raw strings: 22 slots with a vocabulary (device_ip hashes), the
    # derived hour_of_day and day_of_week among them, its three crosses in the graph
    begin onnx_avazu_raw_strings
    onnx_case av_raw "$T/av.wdm" "$T/av_te.wdr" "$DATA/avazu_kaggle_head9000_test.csv" \
        "$DATA/avazu_kaggle_head9000_train.csv"
    # raw strings refused where the graph could not give wd_predict's ids, nothing written
    begin onnx_raw_strings_refused
    fails_with "values missing from the text (the test file alone)" 1 "are in none of the 1 text file given" \
        "$WD" export --onnx --values-from "$DATA/criteo_kaggle_head8000_test.tsv" "$T/cr.wdm" "$T/x.onnx"
    ck "values missing: names the slot and the count" \
        eval 'grep -qE "slot C[0-9]+: [0-9]+ of its [0-9]+ vocabulary values" "$T/err"'
    head -500 "$DATA/criteo_kaggle_head8000_train.tsv" > "$T/h500.tsv"
    "$WD" convert --format criteo --buckets 100 -o "$T/h500.wdr" "$T/h500.tsv" > /dev/null 2>&1
    "$WD" train --train "$T/h500.wdr" --hidden 4 --max-steps 2 --threads 1 --save "$T/h500.wdm" > /dev/null 2>&1
    fails_with "a model whose slots all hash" 1 "no slot of the model has a vocabulary" \
        "$WD" export --onnx --values-from "$T/h500.tsv" "$T/h500.wdm" "$T/x.onnx"
    fails_with "a text file that is missing" 1 "no-such.tsv: cannot open" \
        "$WD" export --onnx --values-from "$DATA/criteo_kaggle_head8000_train.tsv,$T/no-such.tsv" \
        "$T/cr.wdm" "$T/x.onnx"
    ck "no x.onnx and no temporary file left" \
        eval '[ ! -e "$T/x.onnx" ] && [ -z "$(find "$T" -name "*.tmp-*" | head -1)" ]'
    end
fi
# multi-hot LibSVM: user 0-4 ids (0 for some samples, the last one included), item 1-6, 2 dense
awk 'BEGIN { srand(11); for (i = 0; i < 3000; i++) { y = rand() < 0.3; line = y "";
        nu = (i == 2999) ? 0 : int(rand() * 5); for (j = 0; j < nu; j++) line = line " " int(rand() * 50) ":1";
        ni = 1 + int(rand() * 6); for (j = 0; j < ni; j++) line = line " " (50 + int(rand() * 200)) ":1";
        printf "%s 300:%.3f 301:%d\n", line, rand(), int(rand() * 6) } }' > "$T/mh.svm"
"$WD" convert --format libsvm --slots user=0-49,item=50-249 --dense-range 300-301 -o "$T/mh.wdr" "$T/mh.svm" > "$T/conv.out" 2>&1
ONNX_MH="onnx_libsvm_sum onnx_libsvm_mean onnx_wide_only onnx_deep_only"
if [ -n "$py_why" ]; then for t in $ONNX_MH; do skip "$t" "$py_why"; done
else
    for pool in sum mean; do
        begin onnx_libsvm_$pool
        ck "convert mh.svm" grep -q '^converted rows=3000 bad_rows=0 ' "$T/conv.out"
        train --train "$T/mh.wdr" --hidden 16,8 --batch 128 --max-steps 30 --pooling $pool --save "$T/mh_$pool.wdm"
        if [ $pool = sum ]; then   # from the serving model (wd export M.wdm OUT.wdm: no optimizer state)
            run "$WD" export "$T/mh_sum.wdm" "$T/mh_serve.wdm"   # (the same order as export --onnx M.wdm OUT.onnx)
            ck "export M.wdm OUT.wdm: exit $rc" [ "$rc" = 0 ]
            onnx_case mh_sum "$T/mh_serve.wdm" "$T/mh.wdr"
        else onnx_case mh_$pool "$T/mh_$pool.wdm" "$T/mh.wdr"; fi
    done
    begin onnx_wide_only
    train --train "$T/mh.wdr" --no-deep --batch 128 --max-steps 30 --pooling mean --save "$T/mh_wide.wdm"
    onnx_case mh_wide "$T/mh_wide.wdm" "$T/mh.wdr"
    begin onnx_deep_only
    train --train "$T/mh.wdr" --no-wide --hidden 8 --batch 128 --max-steps 30 --save "$T/mh_deep.wdm"
    onnx_case mh_deep "$T/mh_deep.wdm" "$T/mh.wdr"
fi

# bad paths and settings: clear errors, exit 1 (failure) or 2 (usage), nothing left behind
begin onnx_errors
"$WD" convert --format libsvm --slots user=0-49,item=50-249 --dense-range 300-301 -o "$T/mh2.wdr" "$T/mh.svm" > /dev/null 2>&1
"$WD" train --train "$T/mh2.wdr" --hidden 4 --max-steps 2 --threads 1 --save "$T/e.wdm" > /dev/null 2>&1
ck "setup: e.wdm" [ -s "$T/e.wdm" ]
run "$WD" export --help
ck "export --help: exit $rc" [ "$rc" = 0 ]
ck "export --help: its usage and inputs" \
    eval 'out_has "export [--onnx [--values-from TEXT,...]] M.wdm OUT" && out_has "offsets.<slot>" &&
          out_has "values.<slot>"'
fails_with "no output" 2 "export [--onnx] M.wdm OUT: the output is required" "$WD" export --onnx "$T/e.wdm"
fails_with "the order of before (OUT.onnx M.wdm)" 2 "the model comes first and the output second" \
    "$WD" export --onnx "$T/x.onnx" "$T/e.wdm"
fails_with "a missing model" 1 "missing.wdm" "$WD" export --onnx "$T/missing.wdm" "$T/x.onnx"
fails_with "not a model" 1 "mh.svm" "$WD" export --onnx "$T/mh.svm" "$T/x.onnx"
fails_with "an output in a missing directory" 1 "no/such/dir/x.onnx" \
    "$WD" export --onnx "$T/e.wdm" "$T/no/such/dir/x.onnx"
fails_with "a directory as output" 2 "is a directory" "$WD" export --onnx "$T/e.wdm" "$T"
fails_with "onto its own model" 2 "an output may not replace an input" "$WD" export --onnx "$T/e.wdm" "$T/e.wdm"
fails_with "two models" 2 "export: one model at a time" "$WD" export --onnx "$T/e.wdm" "$T/e.wdm" "$T/x.onnx"
fails_with "--values-from without --onnx" 2 "give --onnx too" \
    "$WD" export --values-from "$T/mh.svm" "$T/e.wdm" "$T/x.wdm"
fails_with "--values-from on a LibSVM model" 1 "LibSVM (feature indexes, no values to map)" \
    "$WD" export --onnx --values-from "$T/mh.svm" "$T/e.wdm" "$T/x.onnx"
ck "no x.onnx and no temporary file left" eval '[ ! -e "$T/x.onnx" ] && [ -z "$(find "$T" -name "*.tmp-*" | head -1)" ]'
end

# ---- TensorBoard scalars and the JSONL log ----------------------------------------------------------
# Criteo, 2 epochs with validation: TensorBoard's event_accumulator reads back
# every scalar --log FILE.jsonl wrote (21 tags: loss, AUC, log loss, samples/s,
# learning rates, ms per step of each stage, data wait share, per-epoch rows)
begin tensorboard_scalars
if [ -n "$py_why" ]; then skip tensorboard_scalars "$py_why"
elif [ -z "$have_data" ]; then skip tensorboard_scalars "no data in $DATA"
else
    rm -rf "$T/tb"
    train --train "$T/cr.wdr" --valid "$T/cr_te.wdr" --hidden 32,16 --batch 512 --epochs 2 --log "$T/log.jsonl" --tensorboard "$T/tb/run1" --save "$T/tb.wdm"
    ck "one event file" [ "$(ls "$T/tb/run1" 2>/dev/null | grep -c '^events\.out\.tfevents\.')" = 1 ]
    steps=$(sed -n 's/^trained steps=\([0-9]*\) .*/\1/p' "$T/out")
    ck "a step row per step ($steps)" [ -n "$steps" ] && [ "$(grep -c '"kind": "step"' "$T/log.jsonl")" = "$steps" ]
    ck "an epoch row per epoch, with its loss and validation" [ "$(grep -cE '"kind": "epoch", .*"epoch/loss": [0-9.]+, "epoch/valid_auc": 0\.[0-9]+' "$T/log.jsonl")" = 2 ]
    ck "3 validation rows (each epoch's end, a tenth into the second)" [ "$(grep -c '"kind": "valid"' "$T/log.jsonl")" = 3 ]
    ck "the summary names the best epoch" grep -qE '^trained .* best_auc=0\.[0-9]+ best_step=[0-9]+ best_epoch=[0-9.]+ ' "$T/out"
    run "$PY" "$HERE/tb_check.py" "$T/log.jsonl" "$T/tb/run1"
    ck "TensorBoard reads every scalar: $(head -1 "$T/out")" [ "$rc" = 0 ]
    ck "21 tags" out_has "under 21 tags"
    end
fi
begin tensorboard_errors
: > "$T/tbfile"
fails_with "a file as --tensorboard" 2 "tbfile" "$WD" train --train "$T/mh.wdr" --hidden 4 --max-steps 2 --threads 1 --tensorboard "$T/tbfile" --save "$T/tbe.wdm"
ck "before training" eval '! grep -q "^trained" "$T/out"'
# a write that fails mid-run (a 16 KiB file size limit) stops training, saying where and why
rm -rf "$T/tbf"
(ulimit -f 16; trap '' XFSZ; exec "$WD" train --train "$T/mh.wdr" --hidden 4 --batch 32 --epochs 2 --threads 1 --tensorboard "$T/tbf") > "$T/out" 2> "$T/err"; rc=$?
ck "a failed event write: exit $rc, wanted 1" [ "$rc" = 1 ]
ck "a failed event write: named, and where training stopped" eval 'err_has "--tensorboard: $T/tbf/events.out.tfevents." && err_has "write failed: File too large; training stopped at step"'
end

# ---- the one-epoch phenomenon ------------------------------------------------------------------------
begin overfit_warning
run "$WD" train --train "$T/mh.wdr" --hidden 4 --epochs 2 --threads 1 --save "$T/ow.wdm"
ck "--epochs 2 without --valid: exit $rc" [ "$rc" = 0 ]
ck "warns, naming the effect and the remedy" eval 'err_has "one-epoch phenomenon" && err_has "--valid" && err_has "--early-stop"'
run "$WD" train --train "$T/mh.wdr" --valid "$T/mh2.wdr" --hidden 4 --epochs 2 --threads 1 --save "$T/ow.wdm"
ck "with --valid: exit $rc" [ "$rc" = 0 ]
ck "with --valid: no warning" eval '! err_has "one-epoch phenomenon"'
ck "with --valid: the best epoch" grep -qE '^trained .* best_epoch=[0-9]+\.[0-9]+ ' "$T/out"
run "$WD" train --train "$T/mh.wdr" --hidden 4 --epochs 1 --threads 1 --save "$T/ow.wdm"
ck "one epoch: no warning" eval '! err_has "one-epoch phenomenon"'
end

tl_summary ecosystem
