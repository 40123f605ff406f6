#!/usr/bin/env bash
# Issue 4 ladder: 12M Criteo-shaped rows (about 2 GB decoded, 3.2 GB of TSV),
# the six stages of bench/loader_ladder.c, then the scaling of stage 6.
# Usage: bench/loader_ladder.sh [WORKDIR] [THREADS] [SCALING]
set -e
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
gcc -std=c11 -O2 -g -Wall -Wextra -o build/loader_ladder bench/loader_ladder.c -lzstd -lz -lpthread -lm
W=${1:-/tmp/wd-ladder}; T=${2:-$(nproc)}; SC=${3:-1,2,4,8,16}
mkdir -p "$W"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $(date -u +%F)"
[ -f "$W/data.wdr" ] || build/wd gen -o "$W/data.wdr" --rows 12000000 --seed 9 --tsv "$W/data.tsv" --threads "$T"
ls -l "$W/data.tsv" "$W/data.wdr" | awk '{print $5, $9}'
build/loader_ladder "$W/data.tsv" "$W/data.wdr" "$W" --threads "$T" --seconds 20 --scaling "$SC"
