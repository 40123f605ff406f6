#!/usr/bin/env bash
# Issue 32: the served Criteo-sample model's memory against its weights, and
# request latency on 1 thread while training runs beside it (build/serve_bench,
# bench/serve_bench.c). The model: the Criteo sample's training file converted
# (tables sized from the data) and trained 1 epoch with wd train's defaults
# (E 16, MLP 1024-512-256, Adagrad), saved (checkpoint) and exported.
# Usage: bench/serve_bench.sh [WORKDIR (/tmp/wd-serve)] [SECONDS (10)]
set -e -o pipefail
cd "$(dirname "$0")/.."
make -s build/wd build/serve_bench >/dev/null
W=${1:-/tmp/wd-serve}; SECS=${2:-10}; DATA=${DATA:-../shared/data}
mkdir -p "$W"
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, git $(git rev-parse --short HEAD)"
build/wd convert --format criteo -o "$W/train.wdr" "$DATA/criteo_kaggle_head8000_train.tsv" >/dev/null
build/wd train --train "$W/train.wdr" --save "$W/ck.wdm" >/dev/null
build/wd export "$W/ck.wdm" "$W/ex.wdm" >/dev/null
echo "# files: checkpoint $(stat -c %s "$W/ck.wdm") bytes, export $(stat -c %s "$W/ex.wdm") bytes"
build/serve_bench rss load "$W/ck.wdm"
build/serve_bench rss weights "$W/ck.wdm"
build/serve_bench rss load "$W/ex.wdm"
for t in none 1 0; do build/serve_bench colo "$W/ck.wdm" "$W/train.wdr" "$SECS" $t; done
