#!/usr/bin/env bash
# The package, as its users take it: builds the project in tests/consumer/
# (main.c + widedeep_impl.c, the one file with WIDEDEEP_IMPLEMENTATION) each
# way and runs it (it writes records, trains two steps, predicts, checks that
# the GEMM engine compiled in is the package's, and links the CUDA backend
# where there is one). Usage: tests/consumer.sh BUILD_DIR WORKDIR
#   consumer_install           make install DESTDIR=... PREFIX=...: every file, under DESTDIR only
#   consumer_pkg_config        cc ... $(pkg-config --cflags --libs widedeep) (and widedeep-cuda)
#   consumer_find_package      find_package(widedeep) on that install: widedeep::widedeep (and ::cuda)
#   consumer_add_subdirectory  add_subdirectory(<this repository>), the engine found by CMake
#   consumer_fetchcontent      FetchContent from an archive of this working tree's files
#                              (git ls-files: what a clone holds), WIDEDEEP_GEMM forced
#   consumer_uninstall         make uninstall leaves no file behind
# Each CMake way compiles with -Wsign-conversion -Werror (the include directory
# must be SYSTEM: the implementation is not sign-conversion clean); with CUDA
# it also links the implementation from a static library compiled without
# WD_HAVE_CUDA (the backend is found at link time).
# Prints one PASS/FAIL/SKIP line each and "# consumer: N passed, N failed, N
# skipped" (tests/run.sh counts them: CONSUMER_TESTS there). Where nvcc
# exists, the installed ways link the CUDA library `make install` built and
# add_subdirectory builds widedeep::cuda from source (about 25 s on 2 cores;
# WD_CONSUMER_CUDA=OFF skips that); FetchContent runs with WIDEDEEP_CUDA=OFF.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${1:-build}" && pwd) || { echo "FAIL consumer: no build directory ${1:-build}"; exit 1; }
W=${2:-$B/consumer}
mkdir -p "$W" && W=$(cd "$W" && pwd)
SRC=$ROOT/tests/consumer
CC=${CC:-cc}
. "$ROOT/tests/testlib.sh"   # PASS/FAIL/SKIP and the summary
# the end of a log, on one line
tailof() { tail -n "${2:-6}" "$1" 2>/dev/null | tr '\n' '|' | cut -c1-1500; }

# The engine the build used (its stamp): the install and the checks use it.
gemm=$(ls "$B"/engine-*.stamp 2>/dev/null | head -1 | sed 's/.*engine-\(.*\)\.stamp$/\1/')
# ok BIN LOG [cuda]: runs BIN; its last line ($out) must be "consumer ok: ...",
# name the engine $want_gemm and, with cuda, show the CUDA backend linked in
# (cuda=linked or cuda=trained), without, none (cuda=absent)
ok() {
    out=
    "$1" "$(dirname "$1")" > "$2" 2>&1 || return 1
    out=$(tail -1 "$2")
    case $out in "consumer ok: "*) ;; *) return 1 ;; esac
    if [ -n "$3" ]; then case $out in *" cuda=linked"* | *" cuda=trained"*) ;; *) echo "the CUDA backend linked in was not found" >> "$2"; return 1 ;; esac
    else case $out in *" cuda=absent"*) ;; *) echo "a CUDA backend where none was linked" >> "$2"; return 1 ;; esac; fi
    if [ -n "$want_gemm" ]; then case $out in *"gemm=$want_gemm "*) ;; *) echo "engine is not gemm=$want_gemm" >> "$2"; return 1 ;; esac; fi
}
have_cmake=$(command -v cmake)

# ---- install, staged with DESTDIR, then moved to where PREFIX says
P=$W/prefix
rm -rf "$W/stage" "$P"
t0=$SECONDS
make -C "$ROOT" --no-print-directory B="$B" ${gemm:+GEMM=$gemm} DESTDIR="$W/stage" PREFIX="$P" install > "$W/install.log" 2>&1; rc=$?
want="include/widedeep.h share/widedeep/widedeep_cuda.cu bin/wd lib/pkgconfig/widedeep.pc
      lib/cmake/widedeep/widedeepConfig.cmake lib/cmake/widedeep/widedeepConfigVersion.cmake lib/cmake/widedeep/widedeepDeps.cmake"
cuda=
if command -v nvcc >/dev/null || [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
    cuda=1; want="$want lib/libwidedeep_cuda.a bin/wd-cuda lib/pkgconfig/widedeep-cuda.pc"
fi
missing=
for f in $want; do [ -s "$W/stage$P/$f" ] || missing="$missing $f"; done
installed=0
if [ $rc != 0 ]; then fail consumer_install "make install exited $rc: $(tailof "$W/install.log")"
elif [ -e "$P" ]; then fail consumer_install "wrote $P itself, not under DESTDIR=$W/stage"
elif [ -n "$missing" ]; then fail consumer_install "missing under DESTDIR:$missing"
elif ! grep -qx "prefix=$P" "$W/stage$P/lib/pkgconfig/widedeep.pc"; then fail consumer_install "widedeep.pc's prefix is not $P"
else
    mv "$W/stage$P" "$P" && installed=1
    if "$P/bin/wd" help > "$W/wd-help.log" 2>&1; then
        pass "consumer_install: $(echo $want | wc -w) files under DESTDIR, gemm=$gemm${cuda:+, CUDA library}, in $((SECONDS - t0)) s"
    else installed=0; fail consumer_install "the installed wd does not run: $(tailof "$W/wd-help.log" 3)"; fi
fi

# ---- pkg-config
t0=$SECONDS
if ! command -v pkg-config >/dev/null; then skip consumer_pkg_config "pkg-config not installed"
elif [ $installed = 0 ]; then fail consumer_pkg_config "no install to use"
else
    rm -rf "$W/pc"; mkdir -p "$W/pc"
    pc() { PKG_CONFIG_LIBDIR=$P/lib/pkgconfig pkg-config --print-errors "$@"; }
    want_gemm=$gemm
    why=
    if ! flags=$(pc --cflags --libs widedeep 2> "$W/pc/pc.err"); then why="pkg-config widedeep: $(tailof "$W/pc/pc.err" 3)"
    elif ! $CC -std=c11 -Wall -Wextra -DWD_EXPECT_GEMM="\"$(pc --variable=gemm widedeep)\"" -o "$W/pc/consumer" \
            "$SRC/main.c" "$SRC/widedeep_impl.c" $flags > "$W/pc/build.log" 2>&1; then why="build: $(tailof "$W/pc/build.log")"
    elif ! ok "$W/pc/consumer" "$W/pc/run.log"; then why="run: $(tailof "$W/pc/run.log" 3)"
    fi
    line=$out
    if [ -z "$why" ] && [ -n "$cuda" ]; then
        mkdir -p "$W/pc/cuda"
        if ! flags=$(pc --cflags --libs widedeep-cuda 2> "$W/pc/pc.err"); then why="pkg-config widedeep-cuda: $(tailof "$W/pc/pc.err" 3)"
        elif ! $CC -std=c11 -Wall -Wextra -DWD_EXPECT_GEMM="\"$gemm\"" -o "$W/pc/cuda/consumer_cuda" \
                "$SRC/main.c" "$SRC/widedeep_impl.c" $flags > "$W/pc/build-cuda.log" 2>&1; then why="build with widedeep-cuda: $(tailof "$W/pc/build-cuda.log")"
        elif ! ok "$W/pc/cuda/consumer_cuda" "$W/pc/run-cuda.log" cuda; then why="run with widedeep-cuda: $(tailof "$W/pc/run-cuda.log" 3)"
        else line="$line; with widedeep-cuda:${out##*\"}"; fi
        # the implementation in a static library, neither file compiled with
        # WD_HAVE_CUDA: the backend comes from libwidedeep_cuda.a through its -u flag
        if [ -z "$why" ]; then
            if ! $CC -std=c11 -Wall -Wextra $(pc --cflags widedeep) -c -o "$W/pc/cuda/impl.o" "$SRC/widedeep_impl.c" > "$W/pc/build-split.log" 2>&1 ||
               ! ar rcs "$W/pc/cuda/libapp.a" "$W/pc/cuda/impl.o" >> "$W/pc/build-split.log" 2>&1 ||
               ! $CC -std=c11 -Wall -Wextra -DWD_EXPECT_GEMM="\"$gemm\"" $(pc --cflags widedeep) -o "$W/pc/cuda/consumer_split" "$SRC/main.c" \
                   "$W/pc/cuda/libapp.a" $(pc --libs widedeep-cuda) >> "$W/pc/build-split.log" 2>&1; then why="build with the implementation in libapp.a: $(tailof "$W/pc/build-split.log")"
            elif ! ok "$W/pc/cuda/consumer_split" "$W/pc/run-split.log" cuda; then why="run with the implementation in libapp.a: $(tailof "$W/pc/run-split.log" 3)"
            else line="$line; implementation in a static library: ${out##*\"}"; fi
        fi
    fi
    if [ -z "$why" ]; then pass "consumer_pkg_config: $line, in $((SECONDS - t0)) s"; else fail consumer_pkg_config "$why"; fi
fi

# cmake_way NAME DIR WANT_GEMM CUDA_WANTED CACHE_LINE ARGS...: configures tests/consumer
# with ARGS, builds it, runs consumer (and consumer_cuda when CUDA_WANTED);
# CACHE_LINE, if given, must be in its CMakeCache.txt. WANT_GEMM empty: the
# engine CMake chose (WIDEDEEP_GEMM_ENGINE) must be the one compiled in.
cmake_way() {
    local name=$1 dir=$2 cuda_wanted=$4 cache_line=$5 why= line; want_gemm=$3; shift 5
    t0=$SECONDS
    rm -rf "$dir"
    if [ -z "$have_cmake" ]; then skip "$name" "cmake not installed"; return; fi
    if ! cmake -S "$SRC" -B "$dir" "$@" > "$dir.log" 2>&1; then why="configure: $(tailof "$dir.log" 8)"
    elif [ -n "$cache_line" ] && ! grep -qxF "$cache_line" "$dir/CMakeCache.txt"; then why="not $cache_line: $(grep "^${cache_line%%:*}" "$dir/CMakeCache.txt")"
    elif ! cmake --build "$dir" -j 2 >> "$dir.log" 2>&1; then why="build: $(tailof "$dir.log" 8)"
    else
        [ -n "$want_gemm" ] || want_gemm=$(sed -n 's/^-- consumer: GEMM engine \([a-z]*\)$/\1/p' "$dir.log")
        if [ -z "$want_gemm" ]; then why="CMake set no WIDEDEEP_GEMM_ENGINE"
        elif ! ok "$dir/consumer" "$dir/run.log"; then why="run: $(tailof "$dir/run.log" 3)"
        fi
    fi
    line=$out
    if [ -z "$why" ] && [ -n "$cuda_wanted" ]; then
        if [ ! -x "$dir/consumer_cuda" ]; then why="no widedeep::cuda (consumer_cuda not built): $(grep -i 'widedeep' "$dir.log" | tail -3 | tr '\n' '|')"
        elif ! ok "$dir/consumer_cuda" "$dir/run-cuda.log" cuda; then why="run consumer_cuda: $(tailof "$dir/run-cuda.log" 3)"
        elif ! ok "$dir/consumer_cuda_split" "$dir/run-cuda-split.log" cuda; then why="run consumer_cuda_split (the implementation in a static library): $(tailof "$dir/run-cuda-split.log" 3)"
        else line="$line; with widedeep::cuda:${out##*\"}"; fi
    fi
    if [ -z "$why" ]; then pass "$name: $line, in $((SECONDS - t0)) s"; else fail "$name" "$why"; fi
}

# ---- find_package on the install (and no other widedeep)
if [ $installed = 0 ]; then fail consumer_find_package "no install to use"
else cmake_way consumer_find_package "$W/find_package" "$gemm" "$cuda" "widedeep_DIR:PATH=$P/lib/cmake/widedeep" \
        -DWAY=package -DCMAKE_PREFIX_PATH="$P"; fi

# ---- add_subdirectory of this repository: CMake's own engine detection and,
# where nvcc exists, widedeep::cuda built from widedeep_cuda.cu (WD_CONSUMER_CUDA=OFF: not)
cm_cuda=OFF
[ -n "$cuda" ] && [ "${WD_CONSUMER_CUDA:-ON}" != OFF ] && cm_cuda=ON
cmake_way consumer_add_subdirectory "$W/add_subdirectory" "" "$([ $cm_cuda = ON ] && echo 1)" "" \
    -DWAY=subdirectory -DWIDEDEEP_SOURCE_DIR="$ROOT" -DWIDEDEEP_CUDA=$cm_cuda

# ---- FetchContent of an archive of the files a clone holds (tracked, or new
# and not ignored), with the engine forced to the build's
rm -f "$W/widedeep-src.tar.gz"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read \
        --transform 's,^,widedeep/,' -czf "$W/widedeep-src.tar.gz") 2> "$W/tar.log"
    fetch=(-DWIDEDEEP_URL="file://$W/widedeep-src.tar.gz")
else fetch=(-DWIDEDEEP_URL="$ROOT"); fi   # not a git checkout: the directory itself
cmake_way consumer_fetchcontent "$W/fetchcontent" "$gemm" "" "" \
    -DWAY=fetchcontent "${fetch[@]}" ${gemm:+-DWIDEDEEP_GEMM=$gemm} -DWIDEDEEP_CUDA=OFF

# ---- uninstall
if [ $installed = 0 ]; then fail consumer_uninstall "no install to remove"
elif ! make -C "$ROOT" --no-print-directory B="$B" PREFIX="$P" uninstall > "$W/uninstall.log" 2>&1; then
    fail consumer_uninstall "make uninstall: $(tailof "$W/uninstall.log")"
else
    left=$(cd "$P" && find . -type f | sed 's,^\./,,' | tr '\n' ' ')
    if [ -z "$left" ]; then pass consumer_uninstall; else fail consumer_uninstall "left behind: $left"; fi
fi

tl_summary consumer
