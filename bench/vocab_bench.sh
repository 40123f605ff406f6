#!/usr/bin/env bash
# Issue 13: table sizes and vocabularies. For the Criteo and Avazu samples of
# ../shared/data, each way of giving categorical values their table rows:
#   2^20      every slot hashed into 1,048,576 buckets (the old default:
#             wd convert --buckets 1048576)
#   auto      the default: each slot's table sized from the data (16 x its
#             distinct values, HyperLogLog, at most 2^20)
#   vocab K   a vocabulary: values seen K times or more in the training file
#             get ids of their own, the others one out-of-vocabulary id
#             (--min-count K)
# is converted (the held-out files with --schema-from the training file, so
# they share its buckets or vocabulary), trained with wd train's defaults for
# 1 epoch on the training split and evaluated on the held-out split, once
# per seed. Printed per configuration: the table rows (sum over slots), the
# training .wdr bytes, the saved model (.wdm) bytes, held-out AUC per seed
# and the means of AUC and log loss, and training samples/s (wd's
# samples/s: training time only, model creation and saving excluded; mean
# over seeds; the machine may be shared).
# Splits: Criteo: train = criteo_kaggle_head8000_train.tsv (7,200 rows),
# held out = dev + test (800 rows). Avazu: train =
# avazu_kaggle_head9000_train.csv (8,087 rows), held out = dev + test (912
# rows; no header line: --columns from the training file's header). Avazu
# runs with --preset avazu (21 categorical columns + the derived
# hour_of_day and day_of_week slots) and without the derived slots (the 21
# columns alone). Logistic-regression rows (--no-deep, auto tables; 1 epoch
# and LR_EPOCHS epochs) are the reference for Avazu's target (0.718, a
# logistic-regression baseline). LR_EPOCHS=10 was chosen by looking at these
# same held-out rows (5, 10, 20 tried): not an independent selection.
#
# Usage: bench/vocab_bench.sh [WORKDIR]     (default /tmp/wd-vocab)
# Environment: SEEDS="0 1 2" MIN_COUNTS="1 2 3 5 10" LR_EPOCHS=10 DATA=../shared/data
#   SETS="criteo avazu avazu-noderive" THREADS=(wd's default: the cores)
#   TRAIN_OPTS= (more wd train options for every run)
set -e -o pipefail
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
W=${1:-/tmp/wd-vocab}; mkdir -p "$W"
cp build/wd "$W/wd"; WD=$W/wd   # a copy: the same binary throughout even if build/wd is rebuilt meanwhile
DATA=${DATA:-../shared/data}
SEEDS=${SEEDS:-0 1 2}; LR_EPOCHS=${LR_EPOCHS:-10}; MIN_COUNTS=${MIN_COUNTS:-1 2 3 5 10}; SETS=${SETS:-criteo avazu avazu-noderive}
TOPTS=${TRAIN_OPTS:-}; [ -n "${THREADS:-}" ] && TOPTS="$TOPTS --threads $THREADS"
T0=$(date +%s)
echo "date: $(date -u '+%F %T UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "source: $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(git diff --quiet HEAD -- widedeep.h tools/wd.c 2>/dev/null || echo ' + uncommitted changes to widedeep.h/tools/wd.c')"
echo "seeds: $SEEDS; wd train defaults (1 epoch, batch auto-sized, E=16, MLP 1024-512-256)${TOPTS:+; extra:$TOPTS}"

AV_HDR=$(head -1 "$DATA/avazu_kaggle_head9000_train.csv")
AV_CAT=C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,app_category,device_id,device_ip,device_model,device_type,device_conn_type,C14,C15,C16,C17,C18,C19,C20,C21
convert() {   # set, out-prefix, table options...: writes PREFIX.tr.wdr and PREFIX.ev.wdr
    local set=$1 p=$2; shift 2
    case $set in
    criteo)
        $WD convert --format criteo "$@" -o "$p.tr.wdr" "$DATA/criteo_kaggle_head8000_train.tsv" >/dev/null
        $WD convert --format criteo --schema-from "$p.tr.wdr" -o "$p.ev.wdr" "$DATA/criteo_kaggle_head8000_dev.tsv" "$DATA/criteo_kaggle_head8000_test.tsv" >/dev/null ;;
    avazu)
        $WD convert --format csv --preset avazu "$@" -o "$p.tr.wdr" "$DATA/avazu_kaggle_head9000_train.csv" >/dev/null
        $WD convert --format csv --preset avazu --columns "$AV_HDR" --schema-from "$p.tr.wdr" -o "$p.ev.wdr" \
            "$DATA/avazu_kaggle_head9000_dev.csv" "$DATA/avazu_kaggle_head9000_test.csv" >/dev/null ;;
    avazu-noderive)
        $WD convert --format csv --label click --cat "$AV_CAT" "$@" -o "$p.tr.wdr" "$DATA/avazu_kaggle_head9000_train.csv" >/dev/null
        $WD convert --format csv --label click --cat "$AV_CAT" --columns "$AV_HDR" --schema-from "$p.tr.wdr" -o "$p.ev.wdr" \
            "$DATA/avazu_kaggle_head9000_dev.csv" "$DATA/avazu_kaggle_head9000_test.csv" >/dev/null ;;
    esac
}
row() {   # set, label, train options (';'-free), table options...
    local set=$1 label=$2 topts=$3; shift 3
    local p="$W/$set"
    convert "$set" "$p" "$@"
    local slots rows wdr aucs="" sum_auc=0 sum_ll=0 sum_sps=0 n=0 wdm=-
    slots=$($WD inspect "$p.tr.wdr" | awk '$1=="slot"' | wc -l)
    rows=$($WD inspect "$p.tr.wdr" | awk '$1=="slot" {s += $4} END {print s}')
    wdr=$(stat -c %s "$p.tr.wdr")
    for seed in $SEEDS; do
        local save=()
        [ $n = 0 ] && save=(--save "$p.wdm")   # the model's size does not depend on the seed
        # shellcheck disable=SC2086
        out=$($WD train --train "$p.tr.wdr" --valid "$p.ev.wdr" --seed "$seed" $topts $TOPTS "${save[@]}" 2>/dev/null | grep '^trained')
        auc=$(sed -n 's/.*valid_auc=\([0-9.]*\).*/\1/p' <<<"$out"); ll=$(sed -n 's/.*valid_logloss=\([0-9.]*\).*/\1/p' <<<"$out")
        sps=$(sed -n 's/.*samples\/s=\([0-9.]*\).*/\1/p' <<<"$out")
        [ -n "$auc" ] || { echo "wd train failed: $set $label seed $seed" >&2; exit 1; }
        if [ $n = 0 ]; then wdm=$(stat -c %s "$p.wdm"); rm -f "$p.wdm"; fi
        aucs="$aucs${aucs:+ / }$auc"
        sum_auc=$(awk -v a="$sum_auc" -v b="$auc" 'BEGIN{print a+b}'); sum_ll=$(awk -v a="$sum_ll" -v b="$ll" 'BEGIN{print a+b}')
        sum_sps=$(awk -v a="$sum_sps" -v b="$sps" 'BEGIN{print a+b}'); n=$((n + 1))
    done
    awk -v s="$set" -v l="$label" -v sl="$slots" -v r="$rows" -v w="$wdr" -v m="$wdm" -v a="$aucs" -v sa="$sum_auc" -v sll="$sum_ll" -v ss="$sum_sps" -v n=$n \
        'BEGIN{printf "| %s | %s | %s | %s | %s | %s | %s | **%.4f** | %.4f | %.0f |\n", s, l, sl, r, w, m, a, sa/n, sll/n, ss/n}'
    rm -f "$p.tr.wdr" "$p.ev.wdr"
}
echo
echo "| data | tables | slots | table rows | train .wdr bytes | model .wdm bytes | held-out AUC per seed | mean AUC | mean log loss | samples/s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for set in $SETS; do
    row "$set" "2^20 hashed (--buckets 1048576)" "" --buckets 1048576
    row "$set" "auto (default)" ""
    for k in $MIN_COUNTS; do row "$set" "vocab --min-count $k" "" --min-count "$k"; done
    row "$set" "auto, logistic regression (--no-deep)" "--no-deep"
    row "$set" "auto, logistic regression, $LR_EPOCHS epochs" "--no-deep --epochs $LR_EPOCHS"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); total $(( $(date +%s) - T0 )) s"
