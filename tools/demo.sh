#!/usr/bin/env bash
# The demo: synthetic Criteo-shaped data -> .wdr, its TSV -> .wdr through
# `wd convert`, then inspect and verify both. Usage: tools/demo.sh WD OUTDIR
set -e
WD=${1:-build/wd}; OUT=${2:-build/demo}
mkdir -p "$OUT"
echo "== wd gen: 200000 synthetic Criteo-shaped rows (planted model), with its TSV"
"$WD" gen -o "$OUT/train.wdr" --rows 200000 --seed 1 --tsv "$OUT/train.tsv" --max-card 100000 --threads 2
echo "== wd convert: the TSV through the Criteo parser, same bucket counts"
"$WD" convert --format criteo --schema-from "$OUT/train.wdr" --threads 2 -o "$OUT/converted.wdr" "$OUT/train.tsv"
echo "== wd inspect --verify"
"$WD" inspect --verify "$OUT/train.wdr" | grep -E '^(schema|blocks|samples|bytes|labels|verify)'
"$WD" inspect --verify "$OUT/converted.wdr" | grep -E '^(samples|bytes|verify)'
echo "== sizes: TSV $(stat -c %s "$OUT/train.tsv") bytes, .wdr $(stat -c %s "$OUT/converted.wdr") bytes"
echo "demo OK"
