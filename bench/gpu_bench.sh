#!/usr/bin/env bash
# Issue 5 measurements, on a machine with an NVIDIA GPU (H100/H200):
#   ceilings (D2D copy, large GEMM), `wd-cuda train` on the Criteo-shaped
#   reference workload (13 dense + 26 slots with Criteo's cardinalities, E=16,
#   MLP 1024-512-256, batch 16384, Zipf ids) with the stage breakdown, and the
#   PyTorch peer (eager and torch.compile) on the same samples.
# Usage: bench/gpu_bench.sh [WORKDIR] [ROWS]   (CUDA_HOME/NCCL_HOME as for make)
set -e
cd "$(dirname "$0")/.."
W=${1:-/tmp/wd-gpu}; ROWS=${2:-20000000}
mkdir -p "$W/dump"
make -s build/wd build/wd-cuda
nvcc -O3 -arch=sm_90 -o build/ceilings bench/ceilings.cu -lcublasLt
build/ceilings | tee "$W/ceilings.txt"
# tables: min(16 x cardinality, 10131227) rows per slot (Criteo's largest slot)
[ -f "$W/data.wdr" ] || build/wd gen -o "$W/data.wdr" --rows "$ROWS" --seed 1 --max-card 10131227 --buckets 10131227 --threads "$(nproc)"
build/wd train --train "$W/data.wdr" --plan --batch 16384
for run in 1 2; do
    WD_CUDA_TIMING=$(( run == 2 )) build/wd-cuda train --train "$W/data.wdr" --device cuda --batch 16384 \
        --loader-threads "$(nproc)" --max-steps 600 --no-shuffle | tee "$W/train-$run.txt"
done
build/wd dump "$W/data.wdr" "$W/dump" >/dev/null
python3 bench/peer_torch.py --data "$W/dump" --device cuda --batch 16384 --steps 200 | tee "$W/peer.txt"
python3 bench/peer_torch.py --data "$W/dump" --device cuda --batch 16384 --steps 200 --compile | tee -a "$W/peer.txt"
