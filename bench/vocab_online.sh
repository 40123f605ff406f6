#!/usr/bin/env bash
# Issue 32: days 2-4 streamed online with vocabularies grown in memory
# (build/vocab_online: wd_trainer_push_lines, lines in file order, the day-1
# run's batch size) against the same days through files (bench/daily_bench.sh's
# growing mode: convert --schema-from the previous day --extend-vocab, wd train
# --init-from), from the same day-1 model per seed. Criteo sample's training
# file in 4 days of 1,800 rows; held out: dev + test, converted with the last
# model's vocabulary (files: --schema-from day 4; online: the grown model's spec).
# Usage: bench/vocab_online.sh [WORKDIR (/tmp/wd-vonline)]   Environment: SEEDS="0 1 2 3 4" CAP=8192
set -e -o pipefail
cd "$(dirname "$0")/.."
make -s build/wd build/vocab_online >/dev/null
W=${1:-/tmp/wd-vonline}; mkdir -p "$W"; WD=build/wd
DATA=${DATA:-../shared/data}; SEEDS=${SEEDS:-0 1 2 3 4}; CAP=${CAP:-8192}
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, git $(git rev-parse --short HEAD), load $(cut -d' ' -f1 /proc/loadavg)"
split -l 1800 -d -a 1 "$DATA/criteo_kaggle_head8000_train.tsv" "$W/day"
HELD="$DATA/criteo_kaggle_head8000_dev.tsv $DATA/criteo_kaggle_head8000_test.tsv"
$WD convert --format criteo --vocab-capacity "$CAP" -o "$W/g-1.wdr" "$W/day0" >/dev/null
for d in 2 3 4; do $WD convert --format criteo --schema-from "$W/g-$((d - 1)).wdr" --extend-vocab -o "$W/g-$d.wdr" "$W/day$((d - 1))" >/dev/null 2>&1; done
# shellcheck disable=SC2086
$WD convert --format criteo --schema-from "$W/g-4.wdr" -o "$W/g-held.wdr" $HELD >/dev/null
fa=""; oa=""
for s in $SEEDS; do
    $WD train --train "$W/g-1.wdr" --seed "$s" --save "$W/m1.wdm" >/dev/null
    for d in 2 3 4; do $WD train --train "$W/g-$d.wdr" --init-from "$W/m$((d - 1)).wdm" --save "$W/m$d.wdm" >/dev/null; done
    f=$($WD eval --model "$W/m4.wdm" "$W/g-held.wdr" | tail -1 | sed -n 's/^auc=\([0-9.]*\) .*/\1/p')
    o=$(build/vocab_online "$W/m1.wdm" 0 "${HELD// /,}" "$W/day1" "$W/day2" "$W/day3")
    echo "seed $s: files auc=$f; $o"
    fa="$fa $f"; oa="$oa $(echo "$o" | sed -n 's/^online auc=\([0-9.]*\) .*/\1/p')"
done
mean() { echo "$@" | awk '{for(i=1;i<=NF;i++)s+=$i; printf "%.4f", s/NF}'; }
echo "mean held-out auc: files $(mean $fa), online $(mean $oa) (seeds $SEEDS); load $(cut -d' ' -f1 /proc/loadavg)"
