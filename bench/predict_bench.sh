#!/usr/bin/env bash
# Serving latency, widedeep beside PyTorch and ONNX Runtime, in one run on
# this machine: build/predict_bench (bench/predict_bench.c: wd_predictor and
# wd_predict, p50 and p99 of batch 1 and 256 from 1 and 4 caller threads, the
# GEMM engine's thread setting named, mallocs per call), which also writes
# its model (model.wdm) and requests; bench/peer_predict.py (the same model,
# weights and requests in PyTorch, eager and TorchScript); and
# bench/peer_onnx.py (model.wdm exported by `wd export --onnx`, in ONNX
# Runtime). The three take turns for each request size and caller count
# (1,1 then 1,4, 256,1, 256,4), so that the rows compared were measured
# within a minute of each other on a machine whose load moves. Installs
# PyTorch from PyPI when missing (bench/setup_torch.sh); onnxruntime comes
# from tools/install-deps.sh. The load average is printed before each turn
# and at the end: measure when the machine is quiet.
# Usage: bench/predict_bench.sh [SECONDS_PER_ROW (2)] [BUCKETS (100000)]
set -e
cd "$(dirname "$0")/.."
SECS=${1:-2}; BUCKETS=${2:-100000}
W=${WD_BENCH_DIR:-/tmp/wd-predict-bench}
mkdir -p "$W"
make --no-print-directory build/predict_bench build/wd >&2
eval "$(bash bench/setup_torch.sh "${WD_TORCH_DIR:-/tmp/wd-torch-libs}")"
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores"
echo "# git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); per BATCH,CALLERS in 1,1 1,4 256,1 256,4: build/predict_bench $W $BUCKETS $SECS BATCH,CALLERS;" \
     "python3 bench/peer_predict.py $W $SECS BATCH,CALLERS; python3 bench/peer_onnx.py $W $SECS BATCH,CALLERS (after build/wd export --onnx $W/model.wdm $W/model.onnx)"
first=1
for bc in 1,1 1,4 256,1 256,4; do
    echo "# $bc: load $(cut -d' ' -f1-3 /proc/loadavg)"
    # the programs' header lines (model, engine versions, the probabilities' check) once
    filter() { if [ $first = 1 ]; then cat; else grep -v '^# '; fi; }
    build/predict_bench "$W" "$BUCKETS" "$SECS" "$bc" | filter
    [ $first = 1 ] && build/wd export --onnx "$W/model.wdm" "$W/model.onnx" >&2
    python3 -W ignore bench/peer_predict.py "$W" "$SECS" "$bc" | filter
    python3 -W ignore bench/peer_onnx.py "$W" "$SECS" "$bc" | filter
    first=0
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
