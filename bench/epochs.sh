#!/usr/bin/env bash
# Issue 23: the one-epoch phenomenon on the Criteo and Avazu samples. Trains
# on the train file with the dev file as validation, epoch by epoch (one
# run, continued with --resume: bit-exact), and evaluates the test file after
# each epoch; the validation a tenth into epoch 2 comes from --log .jsonl.
# Then the remedy wd's warning names: --epochs 4 --valid dev --early-stop 1
# --keep-best, judged on the test file. Defaults (Adagrad) and Adam, seeds
# 0, 1, 2. Prints markdown tables.
# Usage: bench/epochs.sh [WORKDIR]   (default /tmp/wd-epochs)
set -e -o pipefail
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
W=${1:-/tmp/wd-epochs}; DATA=${DATA:-../shared/data}
EPOCHS=${EPOCHS:-4}
mkdir -p "$W"
cp build/wd "$W/wd"; WD=$W/wd
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(date -u '+%F %T UTC')"
echo "source: $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(git diff --quiet HEAD -- widedeep.h tools/wd.c 2>/dev/null || echo ' + uncommitted changes to widedeep.h/tools/wd.c')"
$WD convert --format criteo -o "$W/criteo-tr.wdr" "$DATA/criteo_kaggle_head8000_train.tsv" >/dev/null
$WD convert --format criteo --schema-from "$W/criteo-tr.wdr" -o "$W/criteo-dev.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv" >/dev/null
$WD convert --format criteo --schema-from "$W/criteo-tr.wdr" -o "$W/criteo-te.wdr" "$DATA/criteo_kaggle_head8000_test.tsv" >/dev/null
$WD convert --format csv --preset avazu -o "$W/avazu-tr.wdr" "$DATA/avazu_kaggle_head9000_train.csv" >/dev/null
$WD convert --format csv --preset avazu --schema-from "$W/avazu-tr.wdr" -o "$W/avazu-dev.wdr" "$DATA/avazu_kaggle_head9000_dev.csv" >/dev/null
$WD convert --format csv --preset avazu --schema-from "$W/avazu-tr.wdr" -o "$W/avazu-te.wdr" "$DATA/avazu_kaggle_head9000_test.csv" >/dev/null
field() { sed -n "s/\(^\|.* \)$1=\([-0-9.nan]*\).*/\2/p"; }
for data in criteo avazu; do
    for opt in adagrad adam; do
        echo
        echo "### $data, $opt (train on train, validate on dev, test on test; seeds 0,1,2)"
        echo
        hdr="| seed |"; sep="|---|"
        for e in $(seq 1 "$EPOCHS"); do hdr="$hdr epoch $e dev / test AUC (test log loss) |"; sep="$sep---|"; [ "$e" = 1 ] && { hdr="$hdr dev AUC a tenth into epoch 2 |"; sep="$sep---|"; }; done
        hdr="$hdr --early-stop 1 --keep-best: best epoch, test AUC (log loss) |"; sep="$sep---|"
        echo "$hdr"; echo "$sep"
        for seed in 0 1 2; do
            row="| $seed |"; prev=
            for e in $(seq 1 "$EPOCHS"); do
                from=(); [ -n "$prev" ] && from=(--resume "$prev")
                [ -n "$prev" ] || set -- --seed "$seed" --optimizer "$opt"
                [ -n "$prev" ] && set --
                out=$($WD train --train "$W/$data-tr.wdr" --valid "$W/$data-dev.wdr" --epochs "$e" "${from[@]}" "$@" --save "$W/m$e.wdm" --log "$W/log$e.jsonl" 2>/dev/null)
                dev=$(echo "$out" | field valid_auc)
                te=$($WD eval --model "$W/m$e.wdm" "$W/$data-te.wdr" 2>/dev/null | tail -1)
                row="$row $dev / $(echo "$te" | field auc) ($(echo "$te" | field logloss)) |"
                if [ "$e" = 2 ]; then   # the probe: the second validation row of epoch 2's run
                    probe=$(grep '"kind": "valid"' "$W/log2.jsonl" | head -1 | sed -n 's/.*"valid\/auc": \([0-9.]*\).*/\1/p')
                    row=$(echo "$row" | sed "s/PROBE/$probe/")
                fi
                [ "$e" = 1 ] && row="$row PROBE |"
                prev=$W/m$e.wdm
            done
            out=$($WD train --train "$W/$data-tr.wdr" --valid "$W/$data-dev.wdr" --epochs "$EPOCHS" --seed "$seed" --optimizer "$opt" --early-stop 1 --keep-best --save "$W/best.wdm" 2>/dev/null)
            te=$($WD eval --model "$W/best.wdm" "$W/$data-te.wdr" 2>/dev/null | tail -1)
            echo "$row $(echo "$out" | field best_epoch), $(echo "$te" | field auc) ($(echo "$te" | field logloss)) |"
        done
    done
done
