#!/usr/bin/env bash
# Installs PyTorch for the peer benchmarks on a machine without a GPU. PyPI's
# Linux torch wheel is the CUDA build and will not import without some CUDA
# libraries; this installs torch without its CUDA dependencies, unpacks the
# four libraries it cannot load without (cuFile, cuSPARSELt, NVSHMEM, NCCL)
# into DIR, and prints the LD_LIBRARY_PATH to export. The peer then runs on
# the CPU. Usage: eval "$(bench/setup_torch.sh [DIR])"
set -e
DIR=${1:-/tmp/wd-torch-libs}
mkdir -p "$DIR/whl"
LIBS=$DIR/nvidia/nccl/lib:$DIR/nvidia/cusparselt/lib:$DIR/nvidia/cu13/lib:$DIR/nvidia/nvshmem/lib:/usr/local/cuda/lib64
python3 -c "import numpy" 2>/dev/null || pip install -q numpy >&2
# installed already (by an earlier run into DIR): nothing to download
if ! LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} python3 -c "import torch" >/dev/null 2>&1; then
    pip download -q --no-deps -d "$DIR/whl" torch nvidia-cufile "nvidia-cusparselt-cu13==0.8.1" "nvidia-nvshmem-cu13==3.7.2" "nvidia-nccl-cu13==2.30.7" >&2
    pip install -q --no-deps "$DIR"/whl/torch-*.whl >&2
    pip install -q sympy networkx jinja2 fsspec filelock typing-extensions >&2
    for w in "$DIR"/whl/nvidia_*.whl; do unzip -o -q "$w" -d "$DIR"; done
fi
echo "export LD_LIBRARY_PATH=$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
