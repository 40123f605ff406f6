#!/usr/bin/env bash
# Accuracy on the Criteo sample and on wd gen data.
#   --issue3 (the default)  issue 3: the Criteo sample (train on train,
#       evaluate on dev+test, 800 rows) with defaults and tuned settings over
#       3 seeds; and wd gen data against the oracle AUC.
#   --bf16  issue 12: --precision bf16 against fp32, same settings and seeds
#       side by side: the Criteo sample (defaults and tuned, seeds 0,1,2;
#       target: mean AUC within 0.002 of fp32), and wd gen data (2M training
#       rows, 200k held out of the same planted model: the demo's settings over
#       seeds 0,1,2, and the default MLP once; target: the gap to the oracle
#       AUC within 0.002 of fp32's). Needs the oneDNN build and a CPU with
#       AVX512-BF16 or AMX (the section says so and is skipped otherwise).
#   --all   both.
# Usage: bench/accuracy.sh [--issue3|--bf16|--all] [WORKDIR]   (default /tmp/wd-acc)
set -e -o pipefail
cd "$(dirname "$0")/.."
MODE=issue3
case "${1:-}" in --issue3|--bf16|--all) MODE=${1#--}; shift;; -h|--help) sed -n '2,14p' "$0"; exit 0;; esac
make -s build/wd >/dev/null
W=${1:-/tmp/wd-acc}; DATA=${DATA:-../shared/data}
mkdir -p "$W"
cp build/wd "$W/wd"; WD=$W/wd   # a copy: the same binary throughout even if build/wd is rebuilt meanwhile
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(date -u '+%F %T UTC')"
echo "source: $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(git diff --quiet HEAD -- widedeep.h tools/wd.c 2>/dev/null || echo ' + uncommitted changes to widedeep.h/tools/wd.c')"
$WD convert --format criteo -o "$W/train.wdr" "$DATA/criteo_kaggle_head8000_train.tsv" >/dev/null
$WD convert --format criteo --schema-from "$W/train.wdr" -o "$W/eval.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv" "$DATA/criteo_kaggle_head8000_test.tsv" >/dev/null
X=C1xC2,C3xC4,C5xC10,C6xC11,C7xC13,C8xC14,C15xC16,C17xC24
gen_data() {   # the wd gen files once; the held-out file's oracle line kept in g-te.txt
    [ -f "$W/g-tr.wdr" ] || $WD gen -o "$W/g-tr.wdr" --rows 2000000 --seed 1 --max-card 100 --threads 2 >/dev/null
    [ -f "$W/g-te.wdr" ] && [ -s "$W/g-te.txt" ] || $WD gen -o "$W/g-te.wdr" --rows 200000 --first-row 2000000 --seed 1 --max-card 100 --threads 2 > "$W/g-te.txt"
}

issue3() {
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
gen_data
cat "$W/g-te.txt"
$WD train --train "$W/g-tr.wdr" --valid "$W/g-te.wdr" --hidden 256,128,64 --batch 1024 --epochs 2 --cross $X 2>/dev/null | grep trained
$WD train --train "$W/g-tr.wdr" --valid "$W/g-te.wdr" --hidden 256,128,64 --batch 1024 --epochs 2 2>/dev/null | grep trained
}

bf16() {
# pair TRAIN VALID ORACLE SEEDS LABEL OPTIONS...: fp32 and bf16 per seed; AUC, log loss, and the gap to ORACLE (if not -)
pair() {
    local tr=$1 va=$2 oracle=$3 seeds=$4 label=$5; shift 5
    echo "-- $label: $*"
    printf "   %-5s %-5s %9s %9s %8s\n" seed prec AUC logloss gap
    : > "$W/pair.txt"
    for seed in $seeds; do
        for p in fp32 bf16; do
            out=$($WD train --train "$tr" --valid "$va" --seed "$seed" --precision $p "$@" 2>/dev/null | grep '^trained') || { echo "   wd train --precision $p failed"; return 1; }
            a=$(sed -n 's/.*valid_auc=\([0-9.]*\).*/\1/p' <<<"$out"); l=$(sed -n 's/.*valid_logloss=\([0-9.]*\).*/\1/p' <<<"$out")
            g=$(awk -v o="$oracle" -v a="$a" 'BEGIN{ if (o == "-") print "-"; else printf "%.4f", o - a }')
            printf "   %-5s %-5s %9s %9s %8s\n" "$seed" $p "$a" "$l" "$g"
            echo "$p $a $l" >> "$W/pair.txt"
        done
    done
    awk -v o="$oracle" '{ n[$1]++; auc[$1] += $2; ll[$1] += $3 }
        END { a32 = auc["fp32"]/n["fp32"]; a16 = auc["bf16"]/n["bf16"]; d = a16 - a32
              printf "   mean over %d seed(s): fp32 AUC %.4f logloss %.4f | bf16 AUC %.4f logloss %.4f | bf16 - fp32: AUC %+.4f, logloss %+.4f", n["fp32"], a32, ll["fp32"]/n["fp32"], a16, ll["bf16"]/n["bf16"], d, ll["bf16"]/n["bf16"] - ll["fp32"]/n["fp32"]
              if (o != "-") printf " | gap to the oracle %.4f: fp32 %.4f, bf16 %.4f", o, o - a32, o - a16
              printf " | within 0.002: %s\n", (d <= 0.002 && d >= -0.002) ? "yes" : "NO" }' "$W/pair.txt"
}
echo "== issue 12: bf16 against fp32"
if ! err=$($WD train --train "$W/train.wdr" --precision bf16 --max-steps 1 2>&1 >/dev/null); then
    echo "bf16 unavailable here: $(grep -v warning <<<"$err" | tail -1)"; return 0
fi
echo "engine: $($WD train --train "$W/train.wdr" --precision bf16 --max-steps 1 2>/dev/null | grep -o 'gemm=.*' | head -1)"
echo "== Criteo sample: train on train (7,200 rows), AUC and log loss on dev+test (800 rows)"
pair "$W/train.wdr" "$W/eval.wdr" - "0 1 2" "defaults (batch auto-sized to 64, E=16, 1024-512-256)"
pair "$W/train.wdr" "$W/eval.wdr" - "0 1 2" "tuned" --embed-dim 8 --hidden 256,128 --batch 32
echo "== wd gen (2M training rows --seed 1 --max-card 100, 200k held out: --first-row 2000000)"
gen_data
cat "$W/g-te.txt"
oracle=$(sed -n 's/.*oracle_auc=\([0-9.]*\).*/\1/p' "$W/g-te.txt")
pair "$W/g-tr.wdr" "$W/g-te.wdr" "$oracle" "0 1 2" "the demo's settings (2 epochs, crosses on the planted pairs)" --hidden 256,128,64 --batch 1024 --epochs 2 --cross $X
pair "$W/g-tr.wdr" "$W/g-te.wdr" "$oracle" "0" "the default model (1 epoch, batch 4096, E=16, 1024-512-256, crosses)" --cross $X
}

case $MODE in
issue3) issue3;;
bf16) bf16;;
all) issue3; bf16;;
esac
