#!/usr/bin/env bash
# Serving latency, widedeep beside PyTorch, in one run on this machine:
# build/predict_bench (bench/predict_bench.c: wd_predictor and wd_predict, p50
# and p99 of batch 1 and 256 from 1 and 4 caller threads, the GEMM engine's
# thread setting named, mallocs per call), which also writes its model and
# requests, then bench/peer_predict.py (the same model, the same weights and
# requests, in PyTorch, eager and TorchScript) and bench/peer_onnx.py (the
# model exported by `wd export --onnx`, in ONNX Runtime). Installs PyTorch
# from PyPI when missing (bench/setup_torch.sh); onnxruntime comes from
# tools/install-deps.sh. The machine's load (uptime) is printed before,
# between the engines and after: measure when it is quiet.
# Usage: bench/predict_bench.sh [SECONDS_PER_ROW (2)] [BUCKETS (100000)]
set -e
cd "$(dirname "$0")/.."
SECS=${1:-2}; BUCKETS=${2:-100000}
W=${WD_BENCH_DIR:-/tmp/wd-predict-bench}
mkdir -p "$W"
make --no-print-directory build/predict_bench build/wd >&2
eval "$(bash bench/setup_torch.sh "${WD_TORCH_DIR:-/tmp/wd-torch-libs}")"
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); build/predict_bench $W $BUCKETS $SECS; python3 bench/peer_predict.py $W $SECS; build/wd export --onnx $W/model.onnx $W/model.wdm; python3 bench/peer_onnx.py $W $SECS"
build/predict_bench "$W" "$BUCKETS" "$SECS"
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -W ignore bench/peer_predict.py "$W" "$SECS"
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
build/wd export --onnx "$W/model.onnx" "$W/model.wdm" >&2
python3 -W ignore bench/peer_onnx.py "$W" "$SECS"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
