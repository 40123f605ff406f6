#!/usr/bin/env bash
# The demo: synthetic Criteo-shaped data from a planted model, a TSV round
# trip through `wd convert`, training, evaluation on held-out rows beside the
# oracle AUC (the AUC of the true click probabilities), and prediction.
# Usage: tools/demo.sh WD OUTDIR
set -e
WD=${1:-build/wd}; OUT=${2:-build/demo}
mkdir -p "$OUT"
t0=$(date +%s)
# the slot pairs the planted model's interactions use, as wide crosses
CROSS=C1xC2,C3xC4,C5xC10,C6xC11,C7xC13,C8xC14,C15xC16,C17xC24
echo "== wd gen: 2,000,000 training rows and 200,000 held-out rows of one planted model"
"$WD" gen -o "$OUT/train.wdr" --rows 2000000 --seed 1 --max-card 100 --threads 2
"$WD" gen -o "$OUT/test.wdr" --rows 200000 --first-row 2000000 --seed 1 --max-card 100 --threads 2 | tee "$OUT/gen-test.txt"
oracle=$(sed -n 's/.*oracle_auc=\([0-9.]*\).*/\1/p' "$OUT/gen-test.txt")
echo "== wd convert: 50,000 rows as Criteo TSV back into records, then inspect --verify"
"$WD" gen -o "$OUT/small.wdr" --rows 50000 --seed 1 --max-card 100 --tsv "$OUT/small.tsv" >/dev/null
"$WD" convert --format criteo --schema-from "$OUT/small.wdr" --threads 2 -o "$OUT/converted.wdr" "$OUT/small.tsv"
"$WD" inspect --verify "$OUT/converted.wdr" | grep -E '^(schema|blocks|samples|bytes|labels|verify)'
echo "== wd train: Wide&Deep, 2 epochs, MLP 256-128-64, crosses $CROSS"
"$WD" train --train "$OUT/train.wdr" --hidden 256,128,64 --batch 1024 --epochs 2 --cross "$CROSS" \
    --save "$OUT/model.wdm" --log "$OUT/metrics.csv"
echo "== wd eval on the held-out rows"
"$WD" eval --model "$OUT/model.wdm" "$OUT/test.wdr" | tee "$OUT/eval.txt"
auc=$(sed -n 's/^auc=\([0-9.]*\).*/\1/p' "$OUT/eval.txt")
"$WD" predict --model "$OUT/model.wdm" "$OUT/test.wdr" -o "$OUT/pred.txt"
echo "first predictions: $(head -3 "$OUT/pred.txt" | tr '\n' ' ') (true p: $(head -3 "$OUT/test.wdr.prob" | tr '\n' ' '))"
echo
awk -v a="$auc" -v o="$oracle" 'BEGIN { printf "test AUC %.4f   oracle AUC %.4f   gap %.4f\n", a, o, o - a }'
echo "demo OK in $(( $(date +%s) - t0 )) s"
