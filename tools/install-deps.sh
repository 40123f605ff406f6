#!/usr/bin/env bash
# Installs what the build needs when it is missing: libzstd-dev (headers and
# library) and, optionally, libopenblas-serial-dev. Run by `make deps`, which
# `make demo` and `make test` call first.
set -e
have_zstd() { printf '#include <zstd.h>\nint main(void){return ZSTD_versionNumber()==0;}\n' | ${CC:-cc} -x c - -o /dev/null -lzstd >/dev/null 2>&1; }
OB=/usr/lib/x86_64-linux-gnu/openblas-serial
have_blas() { [ -d $OB ] && printf '#include <cblas.h>\nint main(void){openblas_set_num_threads(1);return 0;}\n' | ${CC:-cc} -I/usr/include/x86_64-linux-gnu/openblas-serial -x c - -o /dev/null -L$OB -lopenblas >/dev/null 2>&1; }
have_zstd && have_blas && exit 0
echo "widedeep: installing build dependencies (libzstd-dev; libopenblas-dev, optional)" >&2
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
if command -v apt-get >/dev/null; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libzstd-dev >/dev/null
    # OpenBLAS (the serial build: no thread pool) speeds up CPU training;
    # without it the header's own GEMM is used
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libopenblas-serial-dev >/dev/null || echo "widedeep: libopenblas-serial-dev not installed; using the portable GEMM" >&2
elif command -v dnf >/dev/null; then $SUDO dnf install -y libzstd-devel; $SUDO dnf install -y openblas-devel || true
elif command -v apk >/dev/null; then $SUDO apk add zstd-dev
else echo "widedeep: please install the zstd development package (zstd.h, libzstd)" >&2; exit 1
fi
have_zstd || { echo "widedeep: zstd still not usable after install" >&2; exit 1; }
