#!/usr/bin/env bash
# Issue 2 measurements: convert throughput, bytes per sample, decode speed.
# Usage: bench/io_bench.sh [WORKDIR]   (needs ../shared/data for the Criteo part)
set -e
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
gcc -std=c11 -O2 -g -Wall -Wextra -o build/decode_bench bench/decode_bench.c -lzstd -lz -lpthread -lm
W=${1:-/tmp/wd-io-bench}; DATA=${DATA:-../shared/data}
mkdir -p "$W"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
SRC=$DATA/criteo_kaggle_head8000_train.tsv
if [ -f "$SRC" ]; then
    echo "== Criteo sample replicated to >= 200 MB"
    rm -f "$W/criteo200.tsv"; for i in $(seq 116); do cat "$SRC"; done > "$W/criteo200.tsv"
    ls -l "$W/criteo200.tsv" | awk '{print "input bytes:", $5}'
    for t in 1 2; do
        echo "-- convert --threads $t (best of 3)"
        for r in 1 2 3; do build/wd convert --format criteo --threads $t -o "$W/c200.wdr" "$W/criteo200.tsv"; done
    done
    echo "== bytes per sample, Criteo sample ($(wc -l < "$SRC") rows)"
    rows=$(wc -l < "$SRC")
    echo "TSV:          $(awk -v b=$(stat -c %s "$SRC") -v r=$rows 'BEGIN{printf "%.1f", b/r}')"
    echo "TSV gzip -6:  $(awk -v b=$(gzip -6 -c "$SRC" | wc -c) -v r=$rows 'BEGIN{printf "%.1f", b/r}')"
    for m in 4096 256 1024 16384; do
        build/wd convert --format criteo --block $m -o "$W/cm.wdr" "$SRC" >/dev/null
        echo ".wdr m=$m:   $(awk -v b=$(stat -c %s "$W/cm.wdr") -v r=$rows 'BEGIN{printf "%.1f", b/r}')"
    done
    echo "== decode, Criteo replicated"
    build/decode_bench --seconds 4 "$W/c200.wdr"
fi
echo "== wd gen data: 2,000,000 rows"
build/wd gen -o "$W/g.wdr" --rows 2000000 --seed 7 --tsv "$W/g.tsv" --threads 2
ls -l "$W/g.tsv" | awk '{print "TSV bytes:", $5}'
for t in 1 2; do
    echo "-- convert --threads $t"
    build/wd convert --format criteo --schema-from "$W/g.wdr" --threads $t -o "$W/gc.wdr" "$W/g.tsv"
done
rows=2000000
echo "TSV:          $(awk -v b=$(stat -c %s "$W/g.tsv") -v r=$rows 'BEGIN{printf "%.1f", b/r}')"
echo "TSV gzip -6:  $(awk -v b=$(gzip -6 -c "$W/g.tsv" | wc -c) -v r=$rows 'BEGIN{printf "%.1f", b/r}')"
for m in 4096 256 1024 16384; do
    build/wd convert --format criteo --schema-from "$W/g.wdr" --threads 2 --block $m -o "$W/gm.wdr" "$W/g.tsv" >/dev/null
    echo ".wdr m=$m:   $(awk -v b=$(stat -c %s "$W/gm.wdr") -v r=$rows 'BEGIN{printf "%.1f", b/r}')"
done
echo "== decode, gen data"
build/decode_bench --seconds 4 "$W/g.wdr"
