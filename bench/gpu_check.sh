#!/usr/bin/env bash
# One script for a GPU host (issue 10). A GPU host may reach no package
# registry and be lent for half an hour; this builds offline and runs, in
# order, with every log under LOGDIR:
#   build   make NO_DEPS=1 build/wd build/wd-cuda build/test_gpu build/multi_gpu (no apt-get:
#           oneDNN absent -> GEMM=portable; zstd/zlib headers absent -> the
#           static copies in WD_DEPS_DIR; NCCL from NCCL_HOME, the CUDA
#           toolkit, the system, or PyTorch's nvidia-nccl wheel)
#   test    make test-gpu: tests/test_gpu.cu, then compute-sanitizer memcheck,
#           racecheck, initcheck and synccheck over it
#   bench   bench/gpu_bench.sh ceilings,train: the GPU's ceilings, then the
#           reference workload end to end from .wdr (steady state, stage
#           breakdown, FLOP rate against the ceiling)
#   peer    bench/gpu_bench.sh peer: bench/peer_torch.py on the same data and
#           GPU (eager, compile, bf16 autocast, both), or a SKIP line when
#           torch with CUDA does not import
#   ladder  bench/loader_ladder.sh at 1, 2, 4, 8, 16 threads (at most the cores)
# It stops early, saying what is missing, when the host lacks a GPU, nvcc,
# compute-sanitizer, NCCL, cuBLASLt, zstd/zlib or disk space; a step that runs
# and fails is recorded and the next one still runs. Log files are named
# DATE-DEVICE-STEP.log (the `nvidia-smi -L` line inside each), for
# bench/gpu-runs/; DATE-DEVICE-summary.txt lists every step's outcome and
# headline figures.
#
# Usage: bench/gpu_check.sh LOGDIR
#        bench/gpu_check.sh --pack-deps DIR   (on a machine with libzstd-dev and zlib1g-dev:
#                                              copies their headers and static libraries into
#                                              DIR/include, DIR/lib for a host without them)
# Environment: CUDA_HOME, NCCL_HOME (found when unset); WD_DEPS_DIR (default
# build/offline-deps); STEPS (default "build test bench peer ladder");
# ROWS (benchmark rows, default 20000000); WORK (scratch for data, default
# $TMPDIR/wd-gpu-check: keep it out of the repository);
# TEST_TIMEOUT, BENCH_TIMEOUT, PEER_TIMEOUT, LADDER_TIMEOUT (seconds; 1800,
# 1200, 900, 900).
# Exit status: 0 every step passed; 1 a step failed; 2 stopped early (missing).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)

if [ "${1:-}" = --pack-deps ]; then
    D=${2:?usage: bench/gpu_check.sh --pack-deps DIR}
    mkdir -p "$D/include" "$D/lib"
    for h in zstd.h zstd_errors.h zdict.h zlib.h zconf.h; do
        f=$(printf '#include <%s>\n' "$h" | ${CC:-cc} -E -H -x c - -o /dev/null 2>&1 | sed -n 's/^\. //p' | head -1)
        [ -n "$f" ] && [ -f "$f" ] && cp "$f" "$D/include/" || { [ "$h" = zdict.h ] || { echo "gpu_check: $h not found: install libzstd-dev and zlib1g-dev here first" >&2; exit 2; }; }
    done
    for l in libzstd.a libz.a; do
        f=$(${CC:-cc} -print-file-name=$l)
        [ -f "$f" ] && cp "$f" "$D/lib/" || { echo "gpu_check: $l not found: install libzstd-dev and zlib1g-dev here first" >&2; exit 2; }
    done
    echo "gpu_check: zstd and zlib headers and static libraries in $D (WD_DEPS_DIR=$D on the GPU host; $(du -sh "$D" | cut -f1))"
    exit 0
fi

[ -n "${1:-}" ] || { echo "usage: bench/gpu_check.sh LOGDIR   (or --pack-deps DIR)" >&2; exit 2; }
LOGDIR=$1
mkdir -p "$LOGDIR" || exit 2
LOGDIR=$(cd "$LOGDIR" && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/wd-gpu-check}
STEPS=${STEPS:-build test bench peer ladder}
ROWS=${ROWS:-20000000}
DAY=$(date -u +%Y%m%d)
P="$LOGDIR/$DAY-nogpu"             # log prefix until the device is known
SMI="(no GPU)"
has() { case " $STEPS " in *" $1 "*) return 0;; *) return 1;; esac; }
say() { echo "gpu_check: $*"; echo "$*" >> "$P-summary.txt"; }
die() {  # a missing piece: say what, stop
    echo "gpu_check: STOPPED: $*" >&2
    echo "STOPPED: $*" >> "$P-summary.txt"
    exit 2
}
header() {  # header FILE: what ran where, at the top of a log
    { echo "# $(date -u +%FT%TZ) $SMI"; echo "# repo $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"; } > "$1"
}

# ---- preflight: stop at the first missing piece ----
: > "$P-summary.txt"
command -v nvidia-smi >/dev/null || die "no GPU: nvidia-smi is not installed (no NVIDIA driver on this host)"
L=$(nvidia-smi -L 2>&1) || die "no GPU: nvidia-smi -L failed: $L"
echo "$L" | grep -q '^GPU 0:' || die "no GPU: nvidia-smi -L lists none: $L"
SMI=$(echo "$L" | head -1)
SLUG=$(echo "$SMI" | sed -e 's/^GPU 0: //' -e 's/ (UUID.*//' -e 's/NVIDIA //' | tr -c 'A-Za-z0-9\n' '-' | sed -e 's/--*/-/g' -e 's/-$//')
NGPU=$(echo "$L" | grep -c '^GPU ')
mv "$P-summary.txt" "$LOGDIR/$DAY-$SLUG-summary.txt"
P="$LOGDIR/$DAY-$SLUG"
say "device: $SMI ($NGPU GPU(s)); logs: $P-*"

if [ -z "${CUDA_HOME:-}" ]; then
    if command -v nvcc >/dev/null; then CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
    else for d in /usr/local/cuda /usr/local/cuda-13.0 /usr/local/cuda-12; do [ -x "$d/bin/nvcc" ] && { CUDA_HOME=$d; break; }; done; fi
fi
[ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ] || die "nvcc not found (PATH, CUDA_HOME, /usr/local/cuda): the CUDA toolkit is needed to build"
export CUDA_HOME PATH="$CUDA_HOME/bin:$PATH"
CS=$(command -v compute-sanitizer || echo "$CUDA_HOME/bin/compute-sanitizer")
[ -x "$CS" ] || ! has test || die "compute-sanitizer not found ($CUDA_HOME/bin; the toolkit's cuda-sanitizer component): make test-gpu runs memcheck, racecheck, initcheck and synccheck"
ls "$CUDA_HOME"/lib64/libcublasLt.so* >/dev/null 2>&1 || ls "$CUDA_HOME"/lib/libcublasLt.so* >/dev/null 2>&1 || \
    ldconfig -p 2>/dev/null | grep -q libcublasLt || die "cuBLASLt not found ($CUDA_HOME/lib64/libcublasLt.so)"
command -v "${CC:-cc}" >/dev/null && command -v "${CXX:-c++}" >/dev/null || die "no C/C++ compiler (${CC:-cc}, ${CXX:-c++})"
mkdir -p "$WORK" || die "cannot create $WORK"

# NCCL: NCCL_HOME, the toolkit, the system, or the nvidia-nccl wheel (a lib/libnccl.so link made for it)
nccl_ok() {
    printf '#include <nccl.h>\nint main(void){int v; return ncclGetVersion(&v);}\n' |
        "${CXX:-c++}" -x c++ - -o /dev/null -I"$1/include" -I"$CUDA_HOME/include" -L"$1/lib" -L"$1/lib64" -L"$CUDA_HOME/lib64" -lnccl -lcudart >/dev/null 2>&1
}
if [ -z "${NCCL_HOME:-}" ] || ! nccl_ok "$NCCL_HOME"; then
    NCCL_HOME=
    for d in "$CUDA_HOME" /usr /usr/local; do nccl_ok "$d" && { NCCL_HOME=$d; break; }; done
    if [ -z "$NCCL_HOME" ]; then
        w=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.dirname(n.__file__) if n.__file__ else list(n.__path__)[0])' 2>/dev/null)
        if [ -n "$w" ] && [ -f "$w/include/nccl.h" ]; then
            mkdir -p "$WORK/nccl/lib"
            ln -sfn "$w/include" "$WORK/nccl/include"
            for f in "$w"/lib/libnccl.so*; do ln -sf "$f" "$WORK/nccl/lib/"; ln -sf "$f" "$WORK/nccl/lib/libnccl.so"; break; done
            nccl_ok "$WORK/nccl" && NCCL_HOME=$WORK/nccl
        fi
    fi
    [ -n "$NCCL_HOME" ] || die "NCCL not found (NCCL_HOME, $CUDA_HOME, /usr, python's nvidia-nccl wheel): nccl.h and libnccl.so are needed to build"
fi
export NCCL_HOME

# zstd and zlib: the system's, else headers and static libraries from WD_DEPS_DIR
zstd_ok() { printf '#include <zstd.h>\n#include <zlib.h>\nint main(void){return ZSTD_versionNumber()==0 || !zlibVersion();}\n' | "${CC:-cc}" -x c - -o /dev/null -lzstd -lz >/dev/null 2>&1; }
if ! zstd_ok; then
    DEPS=${WD_DEPS_DIR:-$ROOT/build/offline-deps}
    [ -f "$DEPS/include/zstd.h" ] && [ -f "$DEPS/include/zlib.h" ] || \
        die "zstd/zlib headers or libraries missing (libzstd-dev, zlib1g-dev) and no copy in WD_DEPS_DIR=$DEPS: run 'bench/gpu_check.sh --pack-deps $DEPS' on a machine that has them and bring $DEPS here"
    export CPATH="$DEPS/include${CPATH:+:$CPATH}" LIBRARY_PATH="$DEPS/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
    zstd_ok || die "zstd/zlib from $DEPS do not link (headers and static libraries of the same versions needed)"
    say "zstd, zlib: headers and static libraries from $DEPS"
fi
if printf '#include <oneapi/dnnl/dnnl.h>\nint main(void){return dnnl_get_effective_cpu_isa()==0;}\n' | "${CC:-cc}" -x c - -o /dev/null -ldnnl >/dev/null 2>&1; then GEMM=onednn; else GEMM=portable; fi
MAKEARGS="NO_DEPS=1 GEMM=$GEMM CUDA_HOME=$CUDA_HOME NCCL_HOME=$NCCL_HOME"
free_gb=$(df -Pk "$WORK" | awk 'NR == 2 { print int($4 / 1048576) }')
if has bench || has peer || has ladder; then
    [ "${free_gb:-0}" -ge 12 ] || die "$WORK has ${free_gb} GB free; the benchmark data, its dump and the ladder's data need about 12 GB (WORK=another disk)"
fi
{
    header /dev/stdout
    echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); $(free -g | awk '/^Mem:/ {print $2 " GiB RAM"}'); ${free_gb} GB free in $WORK"
    echo "CUDA_HOME=$CUDA_HOME NCCL_HOME=$NCCL_HOME GEMM=$GEMM CPATH=${CPATH:-} LIBRARY_PATH=${LIBRARY_PATH:-}"
    nvidia-smi 2>&1
    "$CUDA_HOME/bin/nvcc" --version 2>&1 | tail -2
    [ -x "$CS" ] && "$CS" --version 2>&1 | head -2
    "${CC:-cc}" --version | head -1
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1
} > "$P-env.log" 2>&1
say "toolkit $CUDA_HOME, NCCL $NCCL_HOME, GEMM=$GEMM; environment in $P-env.log"

# ---- the steps: each logged; a failure is recorded and the next step runs ----
failed=0
step() {  # step NAME TIMEOUT CMD...: runs CMD with its output in $P-NAME.log
    local name=$1 limit=$2 t0=$SECONDS rc; shift 2
    header "$P-$name.log"
    echo "# $*" >> "$P-$name.log"
    echo "gpu_check: $name ... (log: $P-$name.log)"
    timeout -k 30 "$limit" "$@" >> "$P-$name.log" 2>&1; rc=$?
    local how="ok"
    if [ $rc = 124 ] || [ $rc = 137 ]; then how="TIMED OUT after $limit s"; failed=1
    elif [ $rc != 0 ]; then how="FAILED (exit $rc)"; failed=1; fi
    say "$name: $how in $((SECONDS - t0)) s"
    return $rc
}

if has build; then
    # objects built elsewhere (another toolkit) are rebuilt here
    rm -f build/widedeep_cuda.o build/test_gpu.o build/wd-cuda.o build/multi_gpu.o build/test_gpu build/wd-cuda build/multi_gpu
    # shellcheck disable=SC2086
    step build 1200 make -j"$(nproc)" $MAKEARGS build/wd build/wd-cuda build/test_gpu build/multi_gpu || \
        die "the build failed: see $P-build.log (nothing else can run)"
fi
if has test; then
    # shellcheck disable=SC2086
    step test-gpu "${TEST_TIMEOUT:-1800}" make $MAKEARGS test-gpu
    grep -h -E '^(# test_gpu|test-gpu|FAIL|== )|ERROR SUMMARY' "$P-test-gpu.log" | sed 's/^/  /' >> "$P-summary.txt"
fi
if has bench; then
    step bench "${BENCH_TIMEOUT:-1200}" env WD_MAKE_ARGS="$MAKEARGS" bench/gpu_bench.sh "$WORK/bench" "$ROWS" ceilings,train
    grep -h -E '^(device:|d2d|gemm|mlp gemms|steady state|MLP arithmetic|time per step|trained)' "$P-bench.log" | sed 's/^/  /' >> "$P-summary.txt"
fi
if has peer; then
    step peer "${PEER_TIMEOUT:-900}" env WD_MAKE_ARGS="$MAKEARGS" bench/gpu_bench.sh "$WORK/bench" "$ROWS" peer
    grep -h -E '^(SKIP|best peer|peer_torch)' "$P-peer.log" | sed 's/^/  /' >> "$P-summary.txt"
fi
if has ladder; then
    n=$(nproc); t=$(( n < 16 ? n : 16 )); sc=
    for k in 1 2 4 8 16; do [ $k -le $t ] && sc="$sc${sc:+,}$k"; done
    case ",$sc," in *",$t,"*) ;; *) sc="$sc,$t";; esac
    step ladder "${LADDER_TIMEOUT:-900}" bench/loader_ladder.sh "$WORK/ladder" "$t" "$sc"
    sed -n '/scaling/,$p' "$P-ladder.log" | sed 's/^/  /' >> "$P-summary.txt"
fi
say "done: $([ $failed = 0 ] && echo 'every step passed' || echo 'some step FAILED'); summary $P-summary.txt"
exit $failed
