#!/usr/bin/env bash
# Issue 3 speed: CPU training samples/s on the Criteo-shaped workload (13 dense
# + 26 slots with Criteo's cardinalities capped at 1M, E=16, MLP 1024-512-256,
# batch 4096) at 1 and 2 threads, with the stage breakdown, beside the PyTorch
# peer (bench/peer_torch.py: eager and torch.compile) on the same samples.
# Usage: bench/cpu_train_bench.sh [WORKDIR]   (PyTorch must import; see RESULTS.md)
set -e
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
W=${1:-/tmp/wd-cpu-bench}; mkdir -p "$W/dump"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $(date -u +%F); BLAS: $(make -s -p -n 2>/dev/null | sed -n 's/^BLAS *?= *//p' | head -1)"
[ -f "$W/data.wdr" ] || build/wd gen -o "$W/data.wdr" --rows 200000 --seed 3 --max-card 1000000 --threads 2 >/dev/null
build/wd dump "$W/data.wdr" "$W/dump" >/dev/null
for t in 1 2; do
    echo "== threads $t"
    build/wd train --train "$W/data.wdr" --batch 4096 --threads $t --max-steps 22 --no-shuffle 2>/dev/null | grep -E "trained|time"
    python3 bench/peer_torch.py --data "$W/dump" --threads $t --steps 20 2>&1 | tail -1
    python3 bench/peer_torch.py --data "$W/dump" --threads $t --steps 20 --compile 2>&1 | tail -1
done
