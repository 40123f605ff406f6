#!/usr/bin/env bash
# Issue 20 (Build 3): ids that grow with the data. The Criteo sample's
# training file (criteo_kaggle_head8000_train.tsv, 7,200 rows) split into 4
# "days" of 1,800 rows in file order; held out: dev + test (800 rows).
#   frozen   day 1 converted with tables sized from the data (every slot of
#            a day holds <= 4096 values: a vocabulary each); days 2-4
#            converted --schema-from day1.wdr (the README's old pattern:
#            every new value takes the out-of-vocabulary id)
#   growing  day 1 converted --vocab-capacity CAP; day N converted
#            --schema-from day(N-1).wdr --extend-vocab (new values get the
#            next ids, old ids kept, up to CAP values per slot)
# Each: wd train day 1 (--seed S), then wd train --init-from the previous
# day's model on each next day (1 epoch each, wd train's defaults); the
# held-out rows converted --schema-from the last day's file and evaluated
# with the day-4 model. Printed: each day's out-of-vocabulary share (wd
# convert's "oov" line: the share of categorical values with the
# out-of-vocabulary id, and the worst slot), the held-out file's, and the
# held-out AUC / log loss per seed and their means.
# Usage: bench/daily_bench.sh [WORKDIR]   (default /tmp/wd-daily)
# Environment: SEEDS="0 1 2 3 4" CAP=8192 EXTEND_MIN_COUNT= DATA=../shared/data
#   MODEL_OPTS= (wd train options of the day-1 model, e.g. "--embed-dim 8 --hidden 64,32";
#   later days take them from the checkpoint)
set -e -o pipefail
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
W=${1:-/tmp/wd-daily}; mkdir -p "$W"
cp build/wd "$W/wd"; WD=$W/wd
DATA=${DATA:-../shared/data}; SEEDS=${SEEDS:-0 1 2 3 4}; CAP=${CAP:-8192}
EXT=${EXTEND_MIN_COUNT:+--min-count $EXTEND_MIN_COUNT}
echo "date: $(date -u '+%F %T UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "model: ${MODEL_OPTS:-wd train defaults}; cap $CAP; seeds $SEEDS"
echo "source: $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(git diff --quiet HEAD -- widedeep.h tools/wd.c 2>/dev/null || echo ' + uncommitted changes')"
split -l 1800 -d -a 1 "$DATA/criteo_kaggle_head8000_train.tsv" "$W/day"
HELD="$DATA/criteo_kaggle_head8000_dev.tsv $DATA/criteo_kaggle_head8000_test.tsv"
oov() { sed -n 's/^oov converted .* share=\([0-9.]*\) worst=\([^,]*\).*/\1 (worst \2)/p'; }
for mode in frozen growing; do
    p=$W/$mode
    if [ $mode = frozen ]; then
        $WD convert --format criteo -o "$p-1.wdr" "$W/day0" >/dev/null
        for d in 2 3 4; do echo "$mode day $d oov: $($WD convert --format criteo --schema-from "$p-1.wdr" -o "$p-$d.wdr" "$W/day$((d - 1))" | oov)"; done
    else
        $WD convert --format criteo --vocab-capacity "$CAP" -o "$p-1.wdr" "$W/day0" >/dev/null
        for d in 2 3 4; do
            echo "$mode day $d oov: $($WD convert --format criteo --schema-from "$p-$((d - 1)).wdr" --extend-vocab $EXT -o "$p-$d.wdr" "$W/day$((d - 1))" 2>/dev/null | oov)"
        done
    fi
    # shellcheck disable=SC2086
    echo "$mode held-out oov: $($WD convert --format criteo --schema-from "$p-4.wdr" -o "$p-held.wdr" $HELD | oov)"
    aucs=""; lls=""
    for s in $SEEDS; do
        # shellcheck disable=SC2086
        $WD train --train "$p-1.wdr" --seed "$s" --save "$p-m1.wdm" ${MODEL_OPTS:-} >/dev/null
        for d in 2 3 4; do $WD train --train "$p-$d.wdr" --init-from "$p-m$((d - 1)).wdm" --save "$p-m$d.wdm" >/dev/null; done
        r=$($WD eval --model "$p-m4.wdm" "$p-held.wdr" | tail -1)
        aucs="$aucs $(echo "$r" | sed -n 's/^auc=\([0-9.]*\) .*/\1/p')"; lls="$lls $(echo "$r" | sed -n 's/.* logloss=\([0-9.]*\) .*/\1/p')"
    done
    echo "$mode held-out auc per seed:$aucs; mean auc $(echo $aucs | awk '{for(i=1;i<=NF;i++)s+=$i; printf "%.4f", s/NF}') logloss $(echo $lls | awk '{for(i=1;i<=NF;i++)s+=$i; printf "%.4f", s/NF}')"
done
