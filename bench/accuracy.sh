#!/usr/bin/env bash
# Issue 3 accuracy: the Criteo sample (train on train, evaluate on dev+test,
# 800 rows) with defaults and tuned settings over 3 seeds; and wd gen data
# against the oracle AUC. Usage: bench/accuracy.sh [WORKDIR]
set -e
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
W=${1:-/tmp/wd-acc}; DATA=${DATA:-../shared/data}; WD=build/wd
mkdir -p "$W"
echo "machine: $(nproc) cores; $(date -u +%F)"
$WD convert --format criteo -o "$W/train.wdr" "$DATA/criteo_kaggle_head8000_train.tsv" >/dev/null
$WD convert --format criteo --schema-from "$W/train.wdr" -o "$W/eval.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv" "$DATA/criteo_kaggle_head8000_test.tsv" >/dev/null
run() {  # label, options
    local label=$1; shift; local sum=0 line=""
    for seed in 0 1 2; do
        a=$($WD train --train "$W/train.wdr" --valid "$W/eval.wdr" --seed $seed "$@" 2>/dev/null | sed -n 's/.*valid_auc=\([0-9.]*\).*/\1/p')
        line="$line $a"; sum=$(awk -v s=$sum -v a=$a 'BEGIN{print s+a}')
    done
    printf "%-58s seeds 0,1,2:%s  mean %.4f\n" "$label ($*)" "$line" "$(awk -v s=$sum 'BEGIN{print s/3}')"
}
echo "== Criteo sample: valid AUC on dev+test (800 rows)"
run "defaults"
run "logistic regression (wide only)" --no-deep
run "tuned" --embed-dim 8 --hidden 256,128
run "tuned" --embed-dim 8 --hidden 256,128 --batch 32
echo "== wd gen (2M training rows, 200k held-out, --max-card 100), 2 epochs, crosses on the planted pairs"
$WD gen -o "$W/g-tr.wdr" --rows 2000000 --seed 1 --max-card 100 --threads 2 >/dev/null
$WD gen -o "$W/g-te.wdr" --rows 200000 --first-row 2000000 --seed 1 --max-card 100 --threads 2
X=C1xC2,C3xC4,C5xC10,C6xC11,C7xC13,C8xC14,C15xC16,C17xC24
$WD train --train "$W/g-tr.wdr" --valid "$W/g-te.wdr" --hidden 256,128,64 --batch 1024 --epochs 2 --cross $X 2>/dev/null | grep trained
$WD train --train "$W/g-tr.wdr" --valid "$W/g-te.wdr" --hidden 256,128,64 --batch 1024 --epochs 2 2>/dev/null | grep trained
