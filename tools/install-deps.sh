#!/usr/bin/env bash
# Installs what the build needs when it is missing: libzstd-dev and
# zlib1g-dev (headers and libraries: .wdr blocks, gzip input) and the fast GEMM engine, oneDNN (libdnnl-dev; without it the
# Makefile falls back to OpenBLAS, then to the header's portable loops); for
# the package tests (tests/consumer.sh), cmake and pkg-config; Open MPI
# (openmpi-bin, libopenmpi-dev: build/wd-mpi and tests/mpi.sh); and for
# tests/ecosystem.sh, Python's onnx, onnxruntime, numpy and tensorboard.
# Run by `make deps`, which `make demo` and `make test` call first; plain
# `make` runs it with --check (below).
set -e
have_zstd() { printf '#include <zstd.h>\n#include <zlib.h>\nint main(void){return ZSTD_versionNumber()==0 || !zlibVersion();}\n' | ${CC:-cc} -x c - -o /dev/null -lzstd -lz >/dev/null 2>&1; }
have_dnnl() { printf '#include <oneapi/dnnl/dnnl.h>\nint main(void){return dnnl_get_effective_cpu_isa()==0;}\n' | ${CC:-cc} -x c - -o /dev/null -ldnnl >/dev/null 2>&1; }
have_tools() { command -v cmake >/dev/null && command -v pkg-config >/dev/null; }
have_mpi() { command -v mpirun >/dev/null && printf '#include <mpi.h>\nint main(void){return MPI_Init(0,0);}\n' | mpicc -x c - -o /dev/null >/dev/null 2>&1; }
# The Python packages tests/ecosystem.sh checks ONNX export and TensorBoard
# files with (ONNX Runtime, onnx's checker, TensorBoard's reader), from PyPI.
# Installed when missing; a failure is reported and the build goes on (those
# tests then skip, and fail under CI=true).
# pyarrow, duckdb and polars: the Arrow producers tests/test_python.py feeds the Python package.
PY_PKGS="onnx onnxruntime numpy tensorboard pyarrow duckdb polars"
have_py() { command -v python3 >/dev/null && python3 -c 'import onnx, onnxruntime, numpy, tensorboard, pyarrow, duckdb, polars' >/dev/null 2>&1; }
install_py() {
    have_py && return 0
    echo "widedeep: installing the Python packages the ONNX and TensorBoard tests use ($PY_PKGS)" >&2
    if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
        if command -v apt-get >/dev/null; then
            $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3 python3-pip python3-dev >/dev/null || true
        fi
    fi
    python3 -m pip install -q $PY_PKGS >&2 || python3 -m pip install -q --break-system-packages $PY_PKGS >&2 || true
    have_py || echo "widedeep: could not install $PY_PKGS (pip); the ONNX, TensorBoard and Python package tests will skip (and fail under CI=true)" >&2
}
# --check (plain `make`): installs nothing; names what the header needs
# (zstd and zlib, headers and libraries) and fails when it is missing.
if [ "${1:-}" = --check ]; then
    have_zstd && exit 0
    echo "widedeep: the build needs zstd.h and zlib.h with their libraries (Debian: libzstd-dev zlib1g-dev;" \
         "Fedora: libzstd-devel zlib-devel; Alpine: zstd-dev zlib-dev), not found by ${CC:-cc}:" \
         "run 'make deps' to install them" >&2
    exit 1
fi
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
if have_zstd && have_dnnl && have_tools && have_mpi; then install_py; exit 0; fi
echo "widedeep: installing build dependencies (libzstd-dev; libdnnl-dev for fast CPU training; cmake, pkg-config for the package tests; Open MPI for training on several processes)" >&2
if command -v apt-get >/dev/null; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libzstd-dev zlib1g-dev >/dev/null
    # oneDNN: the MLP's GEMMs, dispatched on the CPU's instruction set (BF16 too)
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libdnnl-dev >/dev/null || echo "widedeep: libdnnl-dev not installed; the build falls back to OpenBLAS or the portable GEMM" >&2
    have_tools || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cmake pkg-config >/dev/null || echo "widedeep: cmake/pkg-config not installed; the package tests skip" >&2
    # Open MPI: mpirun launches build/wd-mpi on several processes (tests/mpi.sh)
    have_mpi || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null || echo "widedeep: Open MPI not installed; build/wd-mpi is not built and the MPI tests skip" >&2
elif command -v dnf >/dev/null; then $SUDO dnf install -y libzstd-devel zlib-devel; $SUDO dnf install -y onednn-devel || true; $SUDO dnf install -y cmake pkgconf-pkg-config || true; $SUDO dnf install -y openmpi-devel || true
elif command -v apk >/dev/null; then $SUDO apk add zstd-dev zlib-dev; $SUDO apk add cmake pkgconf || true
else echo "widedeep: please install the zstd and zlib development packages (zstd.h, zlib.h)" >&2; exit 1
fi
have_zstd || { echo "widedeep: zstd or zlib still not usable after install" >&2; exit 1; }
install_py

