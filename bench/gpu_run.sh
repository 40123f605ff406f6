#!/usr/bin/env bash
# The GPU run (issue 19): one command of at most 7 minutes on a GPU host with
# no package registry, most valuable evidence first. It runs from the pack
# that `make gpu-pack` builds on a CPU machine (build/gpu-pack/, carried to
# the host: bench/GPU_RUN.md gives the call), in phases:
#   0 (<= 40 s)  the device, driver and clocks; how each library resolved; a
#                4-step smoke training on 20k rows
#   1 (<= 150 s) test_gpu: every GPU result against tests/ref.h (WD_COMM_TIMEOUT=30)
#   2 (<= 150 s) compute-sanitizer memcheck, initcheck (unfiltered: it must see
#                the CUB and cuBLASLt kernels that write our buffers), synccheck
#                and racecheck (our kernels) on a tiny training (with
#                WD_CUDA_SPARSE=fused), then on the quick test subset (the
#                default sparse path); a host that refuses the device: REFUSED
#   3 (<= 150 s) ceilings (D2D copy, GEMMs on random data); bf16's AUC against
#                fp32's (WD_CUDA_FP32=1) on the pack's Criteo sample (seeds
#                0-2, in at most 30 s, before the wait for the data below,
#                which they do not need); then the reference
#                workload: Criteo-shaped, ROWS rows generated on every core in
#                the background from phase 0 on, batch 16384, end to end from
#                .wdr through the loader: steady-state samples/s, the stage
#                breakdown with the data-wait share, the MLP's FLOP/s against
#                the TF32 ceiling, and bench/GPU_MODEL.md's prediction at the
#                ceilings measured; each for WD_CUDA_SPARSE=segmented, then
#                fused (issue 22: the two embedding backward paths); then the
#                long run again with WD_CUDA_OVERLAP=0 (the step on one
#                stream) beside the default's, issue 22's MLP switches (bf16,
#                the epilogues off, bf16 written by cuBLASLt), then
#                WD_CUDA_SIDE_PRIORITY=1, each by device_ms beside
#                bench/GPU_MODEL.md's prediction, while time is left in the
#                phase (every run capped by what is left of its 150 s)
#   4 (the rest, <= 90 s) the PyTorch peer on the same data and GPU (eager,
#                bf16 autocast; torch.compile only if >= 60 s remain), multi_gpu
#                with 1 rank (NCCL: unique id, set-up, warm-up, the exchange,
#                teardown), the MPI bootstrap with 1 rank (wd-mpi-cuda:
#                wd_comm_nccl_init_mpi, NCCL's id by MPI_Bcast, on the pack's
#                own Open MPI as a singleton: the host has no MPI), the loader
#                ladder at 1, 2, 4, 8, 16 threads, host_feed (the loader at
#                batch 16384 as a GPU rank takes it)
# Each command runs under its own cap, and all of them under TOTAL; a phase
# that fails is recorded and the next one runs. OUTDIR gets two files:
# summary.txt (printed last: each phase's outcome and headline figures) and
# logs.tar.gz (every raw log); the data stay in WORK.
#
# Usage: gpu_run.sh OUTDIR
#        PHASES=1,3 gpu_run.sh OUTDIR     only these phases (0's environment
#                                         and library set-up always run)
#        gpu_run.sh --dry OUTDIR          on a machine without a GPU (CI runs
#                                         it): the pack's size, linkage and
#                                         start-up, the data of phases 0 and 3
#                                         (phase 3's scaled down to DRY_ROWS),
#                                         the peer's dump, the loader ladder,
#                                         the script's own logic; the GPU
#                                         commands are listed, not run; ends
#                                         with the time each phase should take
# Environment: PHASES (default 0,1,2,3,4), TOTAL (seconds, default 420), ROWS
# (phase 3's rows, default 3400000), DRY_ROWS (default 100000), WORK (default
# /tmp/wd-gpu-run), PACK (default: this script's folder when it holds the
# binaries, else ../build/gpu-pack).
#        gpu_run.sh --check-elf PACK|BINARY...   the linkage checks alone (CI)
# Exit status: 0 every phase run passed (REFUSED counts as neither), 1 some
# phase failed, 2 a usage or set-up error.
set -u

# --check-elf: what the GPU host can load. Every ELF binary needs nothing
# beyond glibc (libc, libm, libdl, libpthread, librt), libstdc++, libgcc_s,
# cuBLAS/cuBLASLt, NCCL and the libraries the pack carries in lib/ (Open
# MPI's, bench/pack_mpi.sh); its newest GLIBC symbol is 2.36 (Debian 12) or
# older; one that needs cuBLAS has the RUNPATH $ORIGIN/lib:/usr/local/cuda/lib64.
# A pack folder also holds every file and fits 30 MiB; its lib/ and
# lib/openmpi/ are checked the same way.
if [ "${1:-}" = --check-elf ]; then
    shift
    bad=0
    files=()
    for a in "$@"; do
        if [ -d "$a" ]; then
            for want in test_gpu wd-cuda multi_gpu ceilings loader_ladder host_feed gpu_run.sh peer_torch.py gpu_model.py wd-mpi-cuda lib/openmpi; do
                [ -e "$a/$want" ] || { echo "$a: $want is missing (wd-mpi-cuda and lib/openmpi: make gpu-pack builds them where mpicc exists)"; bad=1; }
            done
            size=$(du -sb "$a" | cut -f1)
            [ "$size" -le $((30 * 1048576)) ] || { echo "$a: $size bytes, over 30 MiB"; bad=1; }
            for x in "$a"/* "$a"/lib/* "$a"/lib/openmpi/*; do [ -f "$x" ] && [ "$(head -c 4 "$x" | tail -c 3)" = ELF ] && files+=("$x"); done
        else files+=("$a"); fi
    done
    [ ${#files[@]} -gt 0 ] || { echo "no binaries to check"; exit 1; }
    for x in "${files[@]}"; do
        [ -f "$x" ] || { echo "$x: no such file"; bad=1; continue; }
        was=$bad
        needed=$(readelf -d "$x" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
        carried=$(dirname "$x")
        case $carried in */lib/openmpi) carried=${carried%/openmpi};; */lib) ;; *) carried=$carried/lib;; esac
        for n in $needed; do
            case $n in
                libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|librt.so.1|ld-linux-x86-64.so.2|libstdc++.so.6|libgcc_s.so.1) ;;
                libcublas.so.*|libcublasLt.so.*|libnccl.so.*) ;;
                *) [ -f "$carried/$n" ] || { echo "$x: needs $n, which the GPU host does not have and the pack does not carry in $carried (link it statically)"; bad=1; };;
            esac
        done
        glibc=$(objdump -T "$x" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
        if [ "$(printf '%s\nGLIBC_2.36\n' "$glibc" | sort -V | tail -1)" != GLIBC_2.36 ]; then echo "$x: needs $glibc, newer than Debian 12's 2.36"; bad=1; fi
        runpath=$(readelf -d "$x" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
        case " $needed" in *" libcublas"*)
            [ "$runpath" = '$ORIGIN/lib:/usr/local/cuda/lib64' ] || { echo "$x: RUNPATH '$runpath', not \$ORIGIN/lib:/usr/local/cuda/lib64"; bad=1; };;
        esac
        [ "$bad" = "$was" ] && echo "ok $(basename "$x"): needs ${needed% }; newest ${glibc:-GLIBC none}; $(objdump -T "$x" | grep -o 'GLIBCXX_[0-9][0-9.]*' | sort -uV | tail -1)"
    done
    [ $bad = 0 ] && echo "${#files[@]} binaries and libraries: glibc 2.36 or older, nothing beyond glibc, libstdc++, libgcc_s, cuBLAS(Lt), NCCL and the pack's lib/$([ -d "${1:-}" ] && echo "; $(du -sh "$1" | cut -f1) of 30 MiB")"
    exit $bad
fi
DRY=0
if [ "${1:-}" = --dry ]; then DRY=1; shift; fi
[ -n "${1:-}" ] || { echo "usage: gpu_run.sh [--dry] OUTDIR" >&2; exit 2; }
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
SELF=$(cd "$(dirname "$0")" && pwd)
if [ -z "${PACK:-}" ]; then
    if [ -x "$SELF/test_gpu" ]; then PACK=$SELF; else
        PACK=$SELF/../build/gpu-pack
        # from the repository: the pack up to date first (make test built it already)
        if [ $DRY = 1 ] && [ -f "$SELF/../Makefile" ]; then make -s -C "$SELF/.." gpu-pack > /dev/null || exit 2; fi
    fi
fi
[ -d "$PACK" ] || { echo "gpu_run: no pack at $PACK (make gpu-pack)" >&2; exit 2; }
PACK=$(cd "$PACK" && pwd)
WORK=${WORK:-/tmp/wd-gpu-run}
LOGS=$WORK/logs
TOTAL=${TOTAL:-420}
PHASES=${PHASES:-0,1,2,3,4}
ROWS=${ROWS:-3400000}
[ $DRY = 1 ] && ROWS=${DRY_ROWS:-100000}
NPROC=$(nproc)
rm -rf "$LOGS" && mkdir -p "$LOGS" "$WORK" || exit 2
SUM=$OUT/summary.txt
: > "$SUM"
rm -f "$OUT/logs.tar.gz"
START=$SECONDS
FAILED=0

has() { case ",$PHASES," in *",$1,"*) return 0;; *) return 1;; esac; }
left() { echo $((TOTAL - (SECONDS - START) - 10)); }   # 10 s kept for the summary and the archive
cap() {  # cap SECONDS: SECONDS, or what is left of TOTAL if less (at least 1)
    local c=$1 l
    l=$(left)
    [ "$l" -lt "$c" ] && c=$l
    [ "$c" -lt 1 ] && c=1
    echo "$c"
}
say() { echo "$*" | tee -a "$SUM"; }
note() { [ -z "$*" ] || echo "    $*" >> "$SUM"; }   # a headline figure under the phase's line
# run NAME LIMIT CMD...: CMD with its output in $LOGS/NAME.log, under min(LIMIT,
# what is left); sets RC (124: timed out) and prints and records one line.
# gpu NAME LIMIT CMD...: the same for a command that needs the GPU (--dry: listed, not run).
run() {
    local name=$1 limit t0=$SECONDS how
    limit=$(cap "$2")
    shift 2
    echo "# $(date -u +%FT%TZ) limit ${limit}s: $*" > "$LOGS/$name.log"
    timeout -k 5 "$limit" stdbuf -oL -eL "$@" >> "$LOGS/$name.log" 2>&1
    RC=$?
    how="ok"
    if [ $RC = 124 ] || [ $RC = 137 ]; then how="TIMED OUT after ${limit}s"; RC=124
    elif [ $RC != 0 ] && [ -n "${EXPECT_FAIL:-}" ]; then how="exit $RC, as expected"
    elif [ $RC != 0 ]; then how="FAILED (exit $RC)"; fi
    echo "  $name: $how in $((SECONDS - t0)) s" | tee -a "$SUM"
    return $RC
}
gpu() {
    if [ $DRY = 1 ]; then
        local name=$1 limit=$2
        shift 2
        echo "# dry run: would run under ${limit}s: $*" > "$LOGS/$name.log"
        echo "  $name: DRY (would run under ${limit}s: $*)" | tee -a "$SUM"
        RC=0
        return 0
    fi
    run "$@"
}
failed() { FAILED=1; }
phase() { say "phase $1 (+$((SECONDS - START)) s): $2"; }

# ---- phase 0: the host, the libraries, the smoke training (the environment part always runs) ----
phase 0 "the host, the libraries$(has 0 && echo ', a 4-step smoke training')"
{
    echo "date $(date -u +%FT%TZ); $(uname -srm); $NPROC cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); $(free -g | awk '/^Mem:/ {print $2 " GiB RAM"}')"
    echo "pack $PACK: $(du -sh "$PACK" | cut -f1)"
    if command -v nvidia-smi > /dev/null; then
        nvidia-smi -L
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu --format=csv
    else echo "no nvidia-smi"; fi
    command -v nvcc > /dev/null && nvcc --version | tail -2
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1
} > "$LOGS/env.log" 2>&1
SMI=$(grep -m1 '^GPU 0:' "$LOGS/env.log" || echo "no GPU listed (nvidia-smi -L)")
say "  device: $SMI"
note "$(grep -A1 '^name, driver_version' "$LOGS/env.log" | tail -1)"
# NCCL: only as the nvidia-nccl wheel under python3's site-packages there
NCCL_DIR=$(python3 -c 'import glob, os, site
d = [os.path.dirname(x) for s in site.getsitepackages() + [site.getusersitepackages()] for x in glob.glob(s + "/nvidia/**/libnccl.so.2", recursive=True)]
print(":".join(sorted(set(d))))' 2>/dev/null)
if [ -n "$NCCL_DIR" ]; then export LD_LIBRARY_PATH="$NCCL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
export CUDA_MODULE_LOADING=LAZY NCCL_DEBUG=${NCCL_DEBUG:-WARN} PYTHONUNBUFFERED=1
# wd-mpi-cuda on the pack's Open MPI (bench/pack_mpi.sh): one rank, started
# without mpirun (the host has none) as an Open MPI singleton with no daemon;
# PMI_SIZE/PMI_RANK make wd initialise MPI as under a launcher
MPIENV=(env LD_LIBRARY_PATH="$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMPI_MCA_mca_base_component_path="$PACK/lib/openmpi"
        OMPI_MCA_ess_singleton_isolated=1 PMI_SIZE=1 PMI_RANK=0)
{
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo "NCCL wheel: ${NCCL_DIR:-none found}; $(ls "${NCCL_DIR%%:*}"/libnccl.so* 2>/dev/null | tr '\n' ' ')"
    for b in test_gpu wd-cuda multi_gpu ceilings loader_ladder host_feed; do echo "== ldd $b"; ldd "$PACK/$b" 2>&1; done
    echo "== ldd wd-mpi-cuda (LD_LIBRARY_PATH=$PACK/lib, as phase 4 runs it)"; "${MPIENV[@]}" ldd "$PACK/wd-mpi-cuda" 2>&1
} > "$LOGS/libraries.log" 2>&1
say "  libraries: $(grep -m1 'libcublasLt' "$LOGS/libraries.log" | sed 's/^[[:space:]]*//'); NCCL wheel: ${NCCL_DIR:-none (the NCCL tests will fail saying so)}"
grep -q 'not found' "$LOGS/libraries.log" && { say "  MISSING: $(grep 'not found' "$LOGS/libraries.log" | sort -u | tr -s ' \t' ' ' | tr '\n' ';')"; failed; }

# the pack's checks (--dry): size, NEEDED, glibc, RUNPATH, start-up without a GPU, NCCL absent
if [ $DRY = 1 ]; then
    if bash "$SELF/gpu_run.sh" --check-elf "$PACK" > "$LOGS/pack-check.log" 2>&1; then say "  pack: $(tail -1 "$LOGS/pack-check.log")"
    else say "  pack check FAILED: $(grep -v '^ok' "$LOGS/pack-check.log" | tr '\n' ' ')"; failed; fi
    miss=; for f in criteo-train.wdr criteo-eval.wdr; do [ -f "$PACK/$f" ] || miss="$miss $f"; done
    [ -z "$miss" ] || { say "  criteo sample: MISSING from the pack:$miss (make gpu-pack converts DATA's criteo_kaggle_head8000 train, dev and test .tsv, all three needed): phase 3 would measure no bf16 AUC against fp32 (issue 22)"; failed; }
fi

BIG=$WORK/big-$ROWS.wdr
GENPID=
[ $DRY = 1 ] && rm -rf "$BIG" "$WORK/dump-$ROWS"   # made again: the prediction needs their times
if { has 3 || has 4; } && [ ! -f "$BIG" ]; then   # in the background from now on, every core
    ( timeout 400 nice -n 5 "$PACK/wd-cuda" gen -o "$BIG.part" --rows "$ROWS" --seed 1 --max-card 10131227 --buckets 10131227 --threads "$NPROC" \
          > "$BIG.gen.log" 2>&1 && mv "$BIG.part" "$BIG" && rm -f "$BIG.part.prob" ) &
    GENPID=$!
fi
TINY=$WORK/tiny.wdr
if has 0 || has 2; then
    [ -f "$TINY" ] || run gen-tiny 20 "$PACK/wd-cuda" gen -o "$TINY" --rows 20000 --seed 1 --max-card 1000 --threads "$NPROC" || failed
fi
if has 0; then
    if gpu smoke 30 "$PACK/wd-cuda" train --train "$TINY" --device cuda --batch 1024 --embed-dim 8 --hidden 64,32 --max-steps 4 --progress-every 1; then
        note "$(grep -h '^trained' "$LOGS/smoke.log")"
    else failed; note "$(tail -2 "$LOGS/smoke.log" | tr '\n' ' ')"; fi
    if [ $DRY = 1 ]; then   # the pack's binaries start here, and say what is missing
        EXPECT_FAIL=1 run nogpu-wd 20 "$PACK/wd-cuda" train --train "$TINY" --device cuda --hidden 8 --max-steps 1
        grep -q 'no CUDA device' "$LOGS/nogpu-wd.log" && note "wd-cuda without a GPU: $(grep -m1 'no CUDA device' "$LOGS/nogpu-wd.log")" || { failed; note "wd-cuda did not report the missing GPU"; }
        run nogpu-test 30 "$PACK/test_gpu" "$WORK"
        grep -q '^SKIP test_gpu: no CUDA device' "$LOGS/nogpu-test.log" && note "test_gpu without a GPU: $(grep -m1 '^SKIP' "$LOGS/nogpu-test.log")" || { failed; note "test_gpu did not skip"; }
        EXPECT_FAIL=1 run nonccl 20 env WD_NCCL_LIB=/nonexistent/libnccl.so.2 "$PACK/multi_gpu" 0 1 "$WORK/boot" "$TINY" "$WORK/mg.wdm"
        grep -q 'NCCL is not available' "$LOGS/nonccl.log" && note "multi_gpu without NCCL: $(grep -m1 'NCCL is not available' "$LOGS/nonccl.log" | cut -c1-160)..." || { failed; note "multi_gpu did not report the missing NCCL"; }
        # the pack's Open MPI alone (the system's components and settings
        # hidden where a mount namespace can be had): one MPI rank trains 2
        # steps on the CPU, and with --device cuda reports the missing GPU
        # after MPI_Init (the message names the rank)
        HIDE=()
        if unshare -m true 2> /dev/null; then
            mkdir -p "$WORK/empty"
            HIDE=(unshare -m sh -c 'e=$1; shift; for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/share/openmpi /etc/openmpi; do
                  if [ -d "$d" ]; then mount --bind "$e" "$d" || exit 97; fi; done; exec "$@"' sh "$WORK/empty")
        fi
        if run mpi-singleton 30 "${HIDE[@]}" "${MPIENV[@]}" "$PACK/wd-mpi-cuda" train --train "$TINY" --hidden 8 --batch 1024 --max-steps 2 --threads 2 &&
           grep -q '^trained steps=2 ' "$LOGS/mpi-singleton.log"; then
            note "wd-mpi-cuda as an MPI singleton on the pack's Open MPI$([ ${#HIDE[@]} -gt 0 ] && echo ", the system's hidden"): $(grep -m1 '^trained' "$LOGS/mpi-singleton.log" | cut -c1-80)..."
        else failed; note "wd-mpi-cuda did not train as an MPI singleton: $(tail -3 "$LOGS/mpi-singleton.log" | tr '\n' ' ' | cut -c1-300)"; fi
        EXPECT_FAIL=1 run nogpu-mpi 30 "${HIDE[@]}" "${MPIENV[@]}" "$PACK/wd-mpi-cuda" train --train "$TINY" --device cuda --hidden 8 --max-steps 1
        grep -q 'rank 0: .*no CUDA device' "$LOGS/nogpu-mpi.log" && note "wd-mpi-cuda without a GPU: $(grep -m1 'no CUDA device' "$LOGS/nogpu-mpi.log")" || { failed; note "wd-mpi-cuda did not report the missing GPU after MPI_Init"; }
    fi
fi

# ---- phase 1: test_gpu ----
if has 1; then
    phase 1 "test_gpu (every GPU result against tests/ref.h)"
    mkdir -p "$WORK/t1"
    if gpu test_gpu 150 env WD_REQUIRE_GPU=1 WD_COMM_TIMEOUT=30 "$PACK/test_gpu" "$WORK/t1"; then :; else failed; fi
    note "$(grep -h '^# test_gpu' "$LOGS/test_gpu.log")"
    grep -h -E '^FAIL|exchange vs none|every rank ended in|finalized and destroyed in' "$LOGS/test_gpu.log" | head -10 | while IFS= read -r l; do note "$l"; done
fi

# ---- phase 2: compute-sanitizer ----
if has 2; then
    phase 2 "compute-sanitizer (memcheck, initcheck unfiltered, synccheck and racecheck on our kernels)"
    CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    if [ $DRY = 0 ] && [ ! -x "$CS" ]; then say "  compute-sanitizer not found (PATH, /usr/local/cuda/bin): MISSING"; failed
    else
        P2=$SECONDS
        REFUSED=
        # batch 4096 of the 20k rows: 8 runs of one id longer than a fused chunk of 1024 a batch,
        # the longest 2326 (two full chunks and a partial one), 131 hot runs (over 128)
        SAN_TINY=("$PACK/wd-cuda" train --train "$TINY" --device cuda --batch 4096 --embed-dim 4 --hidden 16,8 --max-steps 3)
        mkdir -p "$WORK/t2"
        SAN_QUICK=("$PACK/test_gpu" "$WORK/t2")   # with the settings below (no env in between: the tool follows one process)
        # the kernel filter's option: --kernel-name in current compute-sanitizers, --kernel-regex or --filter in older ones
        KF=$("$CS" --help 2>&1 | grep -o -m1 -E -- '--(kernel-name|kernel-regex|filter)' | head -1)
        [ $DRY = 1 ] && KF=--kernel-name
        [ -n "$KF" ] || say "  (this compute-sanitizer has no kernel filter: synccheck and racecheck check every kernel)"
        for what in tiny quick; do
            for tool in memcheck initcheck synccheck racecheck; do
                name=san-$tool-$what
                if [ -n "$REFUSED" ]; then say "  $name: REFUSED (as $REFUSED)"; continue; fi
                used=$((SECONDS - P2)); room=$((150 - used))
                if [ $what = tiny ]; then lim=30; else lim=$(( room / 2 > 60 ? 60 : room / 2 )); fi
                [ "$room" -ge 8 ] || { say "  $name: not run (phase 2's 150 s used)"; continue; }
                flt=()
                case $tool in synccheck|racecheck) [ -n "$KF" ] && flt=("$KF" kns=wdc_);; esac
                # the tiny training on the fused sparse path (runs of several chunks), the quick subset on the default (segmented)
                if [ $what = tiny ]; then gpu "$name" "$lim" env WD_CUDA_SPARSE=fused "$CS" --tool "$tool" "${flt[@]}" --error-exitcode 9 --print-limit 20 "${SAN_TINY[@]}"
                else WD_REQUIRE_GPU=1 WD_GPU_TEST_QUICK=1 WD_COMM_TIMEOUT=30 WD_GPU_TESTS=gradients_fp32,predict_and_evaluate,failed_steps_change_nothing \
                         gpu "$name" "$lim" "$CS" --tool "$tool" "${flt[@]}" --error-exitcode 9 --print-limit 20 "${SAN_QUICK[@]}"; fi
                [ $DRY = 1 ] && continue
                log=$LOGS/$name.log
                if [ $RC != 0 ] && grep -qiE 'not supported|unable to|failed to (initiali[sz]e|attach)|LibraryNotLoaded' "$log"; then
                    REFUSED=$tool
                    say "  $name: REFUSED by this host (neither a pass nor a failure): $(grep -m1 -iE 'not supported|unable to|failed to|LibraryNotLoaded' "$log" | cut -c1-200)"
                elif [ $RC = 0 ] && grep -q 'ERROR SUMMARY: 0 errors' "$log"; then note "$name: $(grep -m1 'ERROR SUMMARY' "$log")"
                else
                    failed
                    note "$name: $(grep -m1 'ERROR SUMMARY' "$log" || echo "exit $RC, no error summary")"
                    grep -m3 -E '^========= (Invalid|Uninitialized|Race|Barrier|Program hit|Error)' "$log" | while IFS= read -r l; do note "  $l"; done
                fi
            done
        done
    fi
fi

# ---- phase 3: ceilings and the reference workload ----
wait_big() {  # wait_big LIMIT: the background data ready within LIMIT seconds
    local t0=$SECONDS
    while [ -n "$GENPID" ] && kill -0 "$GENPID" 2> /dev/null && [ $((SECONDS - t0)) -lt "$1" ]; do sleep 1; done
    cp "$BIG.gen.log" "$LOGS/gen-big.log" 2> /dev/null
    [ -f "$BIG" ]
}
field() { sed -n "s|^trained .* $2=\([0-9.e+-]*\).*|\1|p" "$LOGS/$1.log" | tail -1; }
# waitshare RUN: the loop's share spent waiting for the loader (its "time per step" line)
waitshare() {
    sed -n 's/^time per step[^:]*: *//p' "$LOGS/$1.log" 2> /dev/null | tail -1 | sed 's/ |.*//' | awk '{ t = 0; w = -1
        for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { t += $i; if (i > 2 && $(i - 2) == "data" && $(i - 1) == "wait") w = $i }
        if (t > 0 && w >= 0) printf "%.0f%%", 100 * w / t; else printf "?" }'
}
# devcmp A B WHAT: runs A and B by device_ms (each step's device time alone, the first 4 steps
# left out: bench/GPU_RUN.md), with each one's data-wait share and bench/GPU_MODEL.md's
# prediction of the difference at this run's ceilings (gpu_model.py's "compare A B" line)
devcmp() {
    local a b p
    a=$(field "$1" device_ms); b=$(field "$2" device_ms)
    if [ -z "$a" ] || [ -z "$b" ]; then echo "$3: no device_ms in $1 or $2 (a run failed or ran 4 steps or fewer)"; return 1; fi
    p=$(sed -n "s/^compare $1 $2: \([-+0-9.]*\) ms a step.*/\1/p" "$LOGS/gpu_model.log" 2> /dev/null | head -1)
    awk -v a="$a" -v b="$b" -v w="$3" -v n1="$1" -v n2="$2" -v s1="$(waitshare "$1")" -v s2="$(waitshare "$2")" -v p="$p" 'BEGIN {
        printf "%s: %.4f ms a step on the device (%s) vs %.4f (%s): %+.4f ms, x%.3f (predicted %s); the loop waited for data %s and %s of its time\n", w, a, n1, b, n2, a - b, b / a, p == "" ? "?" : p " ms", s1, s2 }'
}
if has 3; then
    phase 3 "ceilings, the reference workload ($ROWS rows, batch 16384, MLP 1024-512-256, E=16)"
    P3=$SECONDS
    p3left() { local a b; a=$(( 150 - (SECONDS - P3) )); b=$(left); [ "$a" -lt "$b" ] && echo "$a" || echo "$b"; }
    p3cap() { local c; c=$(p3left); [ $DRY = 1 ] || [ "$c" -gt "$1" ] && c=$1; echo "$c"; }   # p3cap N: N, or what is left of the phase if less
    if gpu ceilings 30 "$PACK/ceilings"; then
        grep -h -E '^(device:|d2d copy|gemm 8192|mlp gemms)' "$LOGS/ceilings.log" | while IFS= read -r l; do note "$l"; done
        # bench/GPU_MODEL.md's prediction at the ceilings measured here
        bw=$(sed -n 's/^d2d copy: \([0-9.]*\) GB\/s.*/\1/p' "$LOGS/ceilings.log" | head -1)
        tf=$(sed -n 's/^gemm 8192^3.*: TF32 \([0-9.]*\) TFLOP.*/\1/p' "$LOGS/ceilings.log" | head -1)
        if [ -n "$bw" ] && [ -n "$tf" ] && python3 "$PACK/gpu_model.py" --bw "$(awk -v b="$bw" 'BEGIN { print b / 1000 }')" --tf32 "$tf" > "$LOGS/gpu_model.log" 2>&1; then
            # each run's predicted device_ms (the engine line's), and its sparse stages
            sed -n 's/^run \([^:]*\): \([0-9.]*\) ms device_ms, \([^;]*\); \(.* ms\);.*/predicted \1: device_ms \2 (\3; \4)/p' "$LOGS/gpu_model.log" |
                while IFS= read -r l; do note "$l"; done
        fi
    else failed; fi
    # bf16's AUC against fp32's on the Criteo sample (issue 22: within 0.002), from the pack's
    # criteo-*.wdr (make gpu-pack converts DATA's criteo_kaggle_head8000 train and dev + test;
    # build output, never the repository): the defaults, seeds 0, 1, 2, as bench/accuracy.sh --bf16
    # on the CPU; a seed's fp32 and bf16 one after the other, seed 0's pair first. Before the wait
    # for the big data, which these runs do not need (the GPU would idle while it generates), in
    # at most 30 s (each run 10 s, a pair begun only with 8 s left, fp32 leaving bf16 4 s), within
    # the phase's 150 s and TOTAL
    if [ -f "$PACK/criteo-train.wdr" ] && [ -f "$PACK/criteo-eval.wdr" ]; then
        C0=$SECONDS
        crit_left() { local a b; a=$(( 30 - (SECONDS - C0) )); b=$(( $(p3left) - 2 )); [ "$a" -lt "$b" ] && echo "$a" || echo "$b"; }
        for seed in 0 1 2; do
            if [ $DRY = 0 ] && [ "$(crit_left)" -lt 8 ]; then say "  criteo seed $seed: not run ($(crit_left) s of the sample's 30 s left)"; continue; fi
            for prec in fp32 bf16; do
                c3=$(crit_left); [ $prec = fp32 ] && c3=$(( c3 - 4 )); [ "$c3" -gt 10 ] && c3=10
                if [ $DRY = 0 ] && [ "$c3" -lt 4 ]; then say "  criteo-$prec-$seed: not run ($(crit_left) s of the sample's 30 s left)"; continue; fi
                # fp32 is full fp32 (WD_CUDA_FP32=1; without it the products are TF32 and the engine line says precision=tf32)
                fp=(); [ $prec = fp32 ] && fp=(env WD_CUDA_FP32=1)
                gpu "criteo-$prec-$seed" "$c3" "${fp[@]}" "$PACK/wd-cuda" train --train "$PACK/criteo-train.wdr" --valid "$PACK/criteo-eval.wdr" --device cuda \
                    --seed "$seed" --precision "$prec" || failed
            done
        done
        if [ $DRY = 0 ]; then
            for seed in 0 1 2; do   # the seeds with both AUCs: the pair, each run's precision= (its engine line) and the verdict
                a=$(sed -n 's/^trained .* valid_auc=\([0-9.]*\) .*/\1/p' "$LOGS/criteo-fp32-$seed.log" 2> /dev/null | tail -1)
                b=$(sed -n 's/^trained .* valid_auc=\([0-9.]*\) .*/\1/p' "$LOGS/criteo-bf16-$seed.log" 2> /dev/null | tail -1)
                pa=$(sed -n 's/^trained .* engine=.* precision=\([a-z0-9]*\).*/\1/p' "$LOGS/criteo-fp32-$seed.log" 2> /dev/null | tail -1)
                pb=$(sed -n 's/^trained .* engine=.* precision=\([a-z0-9]*\).*/\1/p' "$LOGS/criteo-bf16-$seed.log" 2> /dev/null | tail -1)
                [ -n "$a" ] && [ -n "$b" ] && echo "$seed $a $b ${pa:-none} ${pb:-none}"
            done | awk '$4 != "fp32" || $5 != "bf16" { bad = bad " " $1 ":" $4 "/" $5; next }   # a mislabeled pair does not count
                { n++; fa += $2; fb += $3; s = s " " $1 ":" $2 "/" $3 } END {
                if (bad != "") print "criteo sample: engine precision= of seed:fp32-run/bf16-run" bad ", not fp32/bf16: those seeds are left out, and the check fails"
                if (!n) { print "criteo sample: no seed trained both ways at fp32 and bf16: bf16 against fp32 not measured"; exit 1 }
                d = (fb - fa) / n
                printf "criteo sample, valid AUC (dev + test) by seed, fp32/bf16 (engine precision=fp32 and bf16):%s; mean fp32 %.4f bf16 %.4f: bf16 - fp32 %+.4f, %s 0.002 (issue 22)\n",
                    s, fa / n, fb / n, d, (d <= 0.002 && d >= -0.002) ? "within" : "NOT within"
                exit bad != "" }' > "$LOGS/criteo-auc.log" 2>&1 || failed
            while IFS= read -r l; do note "$l"; done < "$LOGS/criteo-auc.log"
        fi
    else say "  criteo sample: MISSING from the pack (make gpu-pack without DATA's criteo_kaggle_head8000 train, dev and test): no bf16 AUC against fp32"; failed; fi
    t0=$SECONDS
    if wait_big $(( 150 - (SECONDS - P3) - 60 > 5 ? 150 - (SECONDS - P3) - 60 : 5 )); then
        say "  data: $(grep -h '^generated' "$LOGS/gen-big.log") (waited $((SECONDS - t0)) s here)"
        W3=("$PACK/wd-cuda" train --train "$BIG" --device cuda --batch 16384 --embed-dim 16 --hidden 1024,512,256 --loader-threads "$NPROC" --progress-every 50)
        steps_long=$(( ROWS / 16384 < 200 ? ROWS / 16384 : 200 )); steps_short=$(( steps_long / 4 ))
        [ $steps_short -ge 1 ] || steps_short=1
        tf32=$(sed -n 's/^gemm 8192^3.*: TF32 \([0-9.]*\) TFLOP.*/\1/p' "$LOGS/ceilings.log" 2>/dev/null | head -1)
        # steady SHORT LONG WHAT: samples/s of the long run less the short one (set-up and warm-up cancel)
        steady() {
            awk -v s1="$(field "$1" samples)" -v r1="$(field "$1" 'samples/s')" -v s2="$(field "$2" samples)" \
                -v r2="$(field "$2" 'samples/s')" -v tf32="${tf32:-0}" -v what="$3" 'BEGIN {
                if (s1 == "" || s2 == "" || r1 <= 0 || r2 <= 0) { print "steady state " what ": a run did not finish"; exit 1 }
                t1 = s1 / r1; t2 = s2 / r2
                if (t2 <= t1) { print "steady state " what ": the long run was not longer"; exit 1 }
                v = (s2 - s1) / (t2 - t1)
                flop = 6 * (432 * 1024 + 1024 * 512 + 512 * 256 + 256)   # the MLP per sample, forward and backward
                printf "steady state %s: %.2fM samples/s (%.3f ms a step of 16384; the long run less the short one); end to end %.2fM (short) %.2fM (long)\n", what, v / 1e6, 16384 / v * 1e3, r1 / 1e6, r2 / 1e6
                printf "MLP arithmetic %s: %.1f TFLOP/s", what, v * flop / 1e12
                if (tf32 > 0) printf " = %.0f%% of the TF32 GEMM ceiling (%.1f TFLOP/s)", 100 * v * flop / 1e12 / tf32, tf32
                printf "\n" }'
        }
        # the sparse path side by side (WD_CUDA_SPARSE, issue 22 item 3): segmented (the default) first,
        # with the stage breakdown; then fused, as far as the phase's 150 s allow
        for sp in segmented fused; do
            sfx=; [ $sp = fused ] && sfx=-fused
            if [ $sp = fused ] && [ $DRY = 0 ] && [ "$(p3left)" -lt 40 ]; then say "  WD_CUDA_SPARSE=fused: not run ($(p3left) s of phase 3 left)"; break; fi
            gpu "train-timed$sfx" "$(p3cap 30)" env WD_CUDA_SPARSE=$sp WD_CUDA_TIMING=1 "${W3[@]}" --max-steps "$steps_short" || failed
            if [ $sp = fused ] && [ $DRY = 0 ] && [ "$(p3left)" -lt 70 ]; then say "  WD_CUDA_SPARSE=fused: steady state not run ($(p3left) s of phase 3 left)"
            else
                gpu "train-short$sfx" "$(p3cap 30)" env WD_CUDA_SPARSE=$sp "${W3[@]}" --max-steps "$steps_short" || failed
                gpu "train-long$sfx" "$(p3cap 40)" env WD_CUDA_SPARSE=$sp "${W3[@]}" --max-steps "$steps_long" || failed
            fi
            if [ $DRY = 0 ]; then
                if [ -f "$LOGS/train-long$sfx.log" ]; then steady "train-short$sfx" "train-long$sfx" "($sp)" > "$LOGS/steady$sfx.log" 2>&1 || failed
                    while IFS= read -r l; do note "$l"; done < "$LOGS/steady$sfx.log"; fi
                grep -h -E '^(trained|time per step)' "$LOGS/train-long$sfx.log" "$LOGS/train-timed$sfx.log" 2>/dev/null | while IFS= read -r l; do note "$l"; done
            fi
        done
        # WD_CUDA_OVERLAP=1 (the default: the sort forked beside the MLP) against 0: train-short
        # again on one stream, under its cap, while 30 s of the phase remain; compared by device_ms
        # (GPU_MODEL.md predicts about -0.02 ms a step), not end to end: the loader, graph capture
        # and warm-up move two runs' loop times by more than that
        if [ $DRY = 0 ] && [ "$(p3left)" -lt 30 ]; then say "  WD_CUDA_OVERLAP=0: not run ($(p3left) s of phase 3 left)"
        else
            gpu train-serial "$(p3cap 30)" env WD_CUDA_OVERLAP=0 "${W3[@]}" --max-steps "$steps_short" || failed
            if [ $DRY = 0 ]; then
                devcmp train-short train-serial "overlap on vs off (WD_CUDA_OVERLAP)" > "$LOGS/overlap.log" 2>&1 || failed
                while IFS= read -r l; do note "$l"; done < "$LOGS/overlap.log"
            fi
        fi
        # the two sparse paths by device_ms (their steady states above are end to end)
        if [ $DRY = 0 ] && [ -f "$LOGS/train-short-fused.log" ]; then
            devcmp train-short-fused train-short "fused vs segmented (WD_CUDA_SPARSE)" > "$LOGS/sparse.log" 2>&1 || failed
            while IFS= read -r l; do note "$l"; done < "$LOGS/sparse.log"
        fi
        # issue 22's MLP switches beside train-short (same steps and data): precision bf16 (epilogues on,
        # the default), then TF32 without the ReLU-mask epilogues (WD_CUDA_EPILOGUE=0); each while
        # phase 3's 150 s last
        for v in "train-bf16 --precision bf16" "train-noepi env WD_CUDA_EPILOGUE=0"; do
            read -r vname va vb <<< "$v"
            p3=$(( $(p3left) - 5 )); [ "$p3" -gt 25 ] && p3=25
            if [ "$p3" -lt 10 ]; then say "  $vname: not run (phase 3's 150 s used)"; continue; fi
            if [ "$va" = env ]; then gpu "$vname" "$p3" env "$vb" "${W3[@]}" --max-steps "$steps_short" || failed
            else gpu "$vname" "$p3" "${W3[@]}" --max-steps "$steps_short" "$va" "$vb" || failed; fi
        done
        if [ $DRY = 0 ]; then
            # the switches against train-short by device_ms (each step's device time alone)
            for v in train-bf16 train-noepi; do
                [ -f "$LOGS/$v.log" ] && [ -f "$LOGS/train-short.log" ] || continue
                devcmp "$v" train-short "$v against train-short" || failed
                grep -h '^trained' "$LOGS/$v.log" | sed 's/^trained .*engine=/  engine=/'
            done > "$LOGS/switches.log" 2>&1
            while IFS= read -r l; do note "$l"; done < "$LOGS/switches.log"
        fi
        # precision bf16's hidden outputs (bench/GPU_RUN.md, what to check): written in fp32 and
        # rounded after (the default) against written as bf16 by cuBLASLt (WD_CUDA_BF16_DIRECT=1,
        # undocumented: its engine line says whether cuBLASLt took it), by device_ms; a failure of
        # the switch's run is evidence against it, not a failure of the phase
        if [ $DRY = 0 ] && [ "$(p3left)" -lt 30 ]; then say "  WD_CUDA_BF16_DIRECT=1: not run ($(p3left) s of phase 3 left)"
        else
            [ -f "$LOGS/train-bf16.log" ] || gpu train-bf16 "$(p3cap 30)" "${W3[@]}" --max-steps "$steps_short" --precision bf16 || failed
            gpu train-bf16-direct "$(p3cap 30)" env WD_CUDA_BF16_DIRECT=1 "${W3[@]}" --max-steps "$steps_short" --precision bf16 ||
                note "train-bf16-direct failed (exit $RC): $(grep -m1 -iE 'error|not finite|failed' "$LOGS/train-bf16-direct.log" | cut -c1-160)"
            if [ $DRY = 0 ]; then
                { devcmp train-bf16-direct train-bf16 "bf16 outputs written by cuBLASLt vs rounded after (WD_CUDA_BF16_DIRECT=1 vs 0)"
                  grep -h '^trained' "$LOGS/train-bf16.log" "$LOGS/train-bf16-direct.log" | sed 's/^trained .*engine=/  engine=/'; } > "$LOGS/bf16-direct.log" 2>&1
                while IFS= read -r l; do note "$l"; done < "$LOGS/bf16-direct.log"
            fi
        fi
        # the sort's branch at the device's greatest stream priority (WD_CUDA_SIDE_PRIORITY=1, overlap22
        # review #7) against the default, by device_ms, while 30 s of the phase remain
        if [ $DRY = 0 ] && [ "$(p3left)" -lt 30 ]; then say "  WD_CUDA_SIDE_PRIORITY=1: not run ($(p3left) s of phase 3 left)"
        else
            gpu train-sideprio "$(p3cap 30)" env WD_CUDA_SIDE_PRIORITY=1 "${W3[@]}" --max-steps "$steps_short" || failed
            if [ $DRY = 0 ]; then
                { devcmp train-sideprio train-short "side branch at high priority vs default (WD_CUDA_SIDE_PRIORITY=1 vs 0)"
                  grep -h '^trained' "$LOGS/train-sideprio.log" | sed 's/^trained .*engine=/  engine=/'; } > "$LOGS/sideprio.log" 2>&1 || failed
                while IFS= read -r l; do note "$l"; done < "$LOGS/sideprio.log"
            fi
        fi
    else
        say "  data: not ready within phase 3's time ($(tail -1 "$LOGS/gen-big.log" 2>/dev/null)): the workload did not run"; failed
    fi
fi

# ---- phase 4: the peer, multi_gpu with 1 rank, the loader ladder ----
if has 4; then
    phase 4 "the PyTorch peer, multi_gpu with 1 rank (NCCL), the loader ladder"
    P4=$SECONDS
    p4left() { local a b; a=$(( 90 - (SECONDS - P4) )); b=$(left); [ "$a" -lt "$b" ] && echo "$a" || echo "$b"; }
    if wait_big "$(( $(p4left) / 3 ))"; then
        if [ $DRY = 0 ] && ! python3 -c 'import torch, numpy, sys; sys.exit(0 if torch.cuda.is_available() else 1)' > /dev/null 2>&1; then
            say "  peer: python3 cannot import torch with CUDA (and numpy) here: no peer figure"; failed
        else
            DUMP=$WORK/dump-$ROWS
            t0=$(date +%s%N)
            if [ -f "$DUMP/meta.txt" ] || { run dump 30 "$PACK/wd-cuda" dump "$BIG" "$DUMP" && DUMP_MS=$(( ($(date +%s%N) - t0) / 1000000 )); }; then
                PEER=(python3 "$PACK/peer_torch.py" --data "$DUMP" --device cuda --batch 16384 --embed-dim 16 --hidden 1024,512,256 --steps 100 --warmup 10)
                gpu peer-eager 25 "${PEER[@]}" || failed
                gpu peer-amp 25 "${PEER[@]}" --amp || failed
            else failed; fi
        fi
    else say "  peer: the data was not ready: no peer figure"; failed; fi
    if [ -f "$TINY" ] || run gen-tiny 20 "$PACK/wd-cuda" gen -o "$TINY" --rows 20000 --seed 1 --max-card 1000 --threads "$NPROC"; then
        rm -f "$WORK/boot"
        gpu multi_gpu 25 "$PACK/multi_gpu" 0 1 "$WORK/boot" "$TINY" "$WORK/mg.wdm" || failed
        note "$(grep -h '^trained' "$LOGS/multi_gpu.log")"
        # the exchange as before its cap (WD_EXCHANGE_FULL=1: every occurrence's row slot sent): the same model, bit for bit
        rm -f "$WORK/boot"
        gpu multi_gpu_full 25 env WD_EXCHANGE_FULL=1 "$PACK/multi_gpu" 0 1 "$WORK/boot" "$TINY" "$WORK/mg-full.wdm" || failed
        note "WD_EXCHANGE_FULL=1: $(grep -h '^trained' "$LOGS/multi_gpu_full.log")"
        if [ $DRY = 0 ]; then
            if cmp -s "$WORK/mg.wdm" "$WORK/mg-full.wdm"; then note "multi_gpu: the capped exchange's model is the full exchange's, bit for bit"
            else note "multi_gpu: the capped exchange's model differs from the full exchange's"; failed; fi
        fi
        # the MPI bootstrap with 1 rank: MPI_Init, NCCL's id by MPI_Bcast (wd_comm_nccl_init_mpi), 4 steps
        if gpu mpi_bootstrap 20 "${MPIENV[@]}" "$PACK/wd-mpi-cuda" train --train "$TINY" --device cuda --batch 1024 --embed-dim 8 --hidden 64,32 --max-steps 4; then
            note "$(grep -h '^trained' "$LOGS/mpi_bootstrap.log")"
        else failed; note "$(tail -3 "$LOGS/mpi_bootstrap.log" | tr '\n' ' ' | cut -c1-300)"; fi
    fi
    if [ -f "$BIG" ]; then
        sc=; for k in 1 2 4 8 16; do [ $k -le "$NPROC" ] && sc="$sc${sc:+,}$k"; done
        secs=3; [ $DRY = 1 ] && secs=0.5
        lim=$(p4left); [ "$lim" -gt 45 ] && lim=45
        run ladder "$lim" "$PACK/loader_ladder" "$BIG" "$BIG" "$WORK" --threads "$NPROC" --stages 6 --seconds "$secs" --scaling "$sc" || failed
        grep -h -E '^ +threads ' "$LOGS/ladder.log" | while IFS= read -r l; do note "ladder $l"; done
        # the loader as a GPU rank takes it (batch 16384), and the host's per-batch work (bench/GPU_MODEL.md, the host side)
        secs=1.5; [ $DRY = 1 ] && secs=0.3
        run host-feed 25 "$PACK/host_feed" "$BIG" --batch 16384 --threads "$sc" --seconds "$secs" || failed
        grep -h -E '^(decode|window|assembly|rank thread|loader)' "$LOGS/host-feed.log" | sed 's/; per batch.*//' | while IFS= read -r l; do note "host_feed $l"; done
    fi
    if [ "$(p4left)" -ge 60 ] && [ -f "${DUMP:-/nonexistent}/meta.txt" ]; then gpu peer-compile 50 "${PEER[@]}" --compile || failed
    else say "  peer-compile: not run (under 60 s left)"; fi
    for m in eager amp compile; do [ -f "$LOGS/peer-$m.log" ] && note "$(grep -h '^peer_torch' "$LOGS/peer-$m.log" | tail -1)"; done
fi

[ -n "$GENPID" ] && kill "$GENPID" 2> /dev/null
wait 2> /dev/null
say "done in $((SECONDS - START)) s: $([ $FAILED = 0 ] && echo 'every phase run passed' || echo 'something FAILED (above)'); logs: $OUT/logs.tar.gz"
if [ $DRY = 1 ]; then   # what the GPU run should take, from what ran here
    g=$(sed -n 's/^generated rows=\([0-9]*\) .* seconds=\([0-9.]*\)$/\1 \2/p' "$LOGS/gen-big.log" 2>/dev/null)
    awk -v g="$g" -v rows="${FULL_ROWS:-3400000}" -v n="$NPROC" -v d="${DUMP_MS:-0}" -v dr="$ROWS" 'BEGIN {
        split(g, a, " "); rate = a[2] > 0 ? a[1] / a[2] : 0
        printf "predicted on the GPU host (16 cores; each phase at most its cap):\n"
        printf "  phase 0: <= 40 s (environment ~2 s, 20k rows ~1 s, smoke: set-up + 4 steps)\n"
        printf "  phase 1: <= 150 s (test_gpu: GPU-bound; its CPU reference in double)\n"
        printf "  phase 2: <= 150 s (4 tools x (tiny <= 30 s, quick subset <= 60 s), shared 150 s)\n"
        if (rate > 0) printf "  phase 3: <= 150 s; its %d rows: %.0f rows/s on %d core(s) here -> about %.0f s on 16 cores (linear scaling; in the background during phases 0-2)\n", rows, rate, n, rows / rate * n / 16
        else printf "  phase 3: <= 150 s (no generation rate measured)\n"
        if (d > 0) printf "  phase 4: <= 90 s; the peer'"'"'s dump of %d rows took %.1f s here -> about %.0f s for %d rows\n", dr, d / 1e3, d / 1e3 * rows / dr, rows
        else printf "  phase 4: <= 90 s\n"
        printf "  in all: <= 7 minutes (TOTAL=420)\n" }' | tee -a "$SUM"
fi
tar -czf "$OUT/logs.tar.gz" -C "$WORK" logs
echo
echo "==== summary ($OUT/summary.txt) ===="
cat "$SUM"
exit $FAILED
