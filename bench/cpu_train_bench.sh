#!/usr/bin/env bash
# Issue 12 "Measure": CPU training speed of wd train (fp32 and --precision bf16)
# beside the PyTorch peer (bench/peer_torch.py: eager, torch.compile, bf16
# autocast eager and compiled) on the same samples, at 1 and 2 threads, and
# the MLP's achieved GEMM GFLOP/s against the GEMM engine's own peak on the
# same shapes (bench/gemm_peak.c: oneDNN's matmul called directly, 1 thread).
#
# Workload: `wd gen --rows 200000 --seed 3 --max-card 1000000` (13 dense + 26
# one-hot slots, Criteo cardinalities capped at 1M: 6.3M table rows), E=16,
# MLP 1024-512-256, batch 4096, no shuffling. wd: Adagrad (deep) + FTRL
# (wide). Peer: the same model, Adagrad everywhere (PyTorch has no FTRL;
# Adagrad costs the same per touched row), data as in-memory tensors from
# `wd dump` (no loader cost), loss.mean (as wd).
# Timing excludes warm-up: wd's --log lines are time-stamped as they arrive
# and samples/s is taken between the line of step WD_WARM and the last-but-one
# line (each line is flushed when written); the peer times its own steps
# after PEER_WARM warm-up steps. Each configuration runs REPEAT times; the
# best is reported. The machine may be shared: every run prints the CPU the
# other processes used meanwhile ([others N cores]; near 0 for a clean
# figure), and QUIET_WAIT makes each run wait for a quiet moment first.
#
# Usage: bench/cpu_train_bench.sh [WORKDIR]      (default /tmp/wd-cpu-bench)
# Environment: THREADS="1 2" REPEAT=1 WD_WARM=3 WD_STEPS=24 PEER_WARM=3
#   PEER_STEPS=20 ROWS=200000 PEER=1 (0: wd only) QUIET_WAIT=0 (seconds to
#   wait before each run for the other processes to quiet down: the machine
#   may be shared; every run prints the cores others used meanwhile as
#   [others N cores]) TORCH_ENV=file to source
#   (default: the LD_LIBRARY_PATH of bench/setup_torch.sh when torch does not
#   import as it is).
# Needs: libdnnl-dev for gemm_peak (skipped without it); PyTorch for the peer
#   (eval "$(bash bench/setup_torch.sh)"; the peer is skipped without it).
set -e -o pipefail
cd "$(dirname "$0")/.."
make -s build/wd >/dev/null
W=${1:-/tmp/wd-cpu-bench}; mkdir -p "$W/dump"
cp build/wd "$W/wd"; WD=$W/wd   # a copy: the same binary throughout even if build/wd is rebuilt meanwhile
THREADS=${THREADS:-1 2}; REPEAT=${REPEAT:-1}
WD_WARM=${WD_WARM:-3}; WD_STEPS=${WD_STEPS:-24}; PEER_WARM=${PEER_WARM:-3}; PEER_STEPS=${PEER_STEPS:-20}
ROWS=${ROWS:-200000}; PEER=${PEER:-1}; BATCH=4096
T0=$(date +%s)

# ---- the machine
cpuinfo() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'; }
flags=" $(cpuinfo flags) "
have() { case "$flags" in *" $1 "*) echo yes;; *) echo no;; esac; }
echo "date: $(date -u '+%F %T UTC')"
echo "cpu: $(cpuinfo 'model name') ($(cpuinfo vendor_id), family $(cpuinfo 'cpu family') model $(cpuinfo model) stepping $(cpuinfo stepping)), $(nproc) cores online, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
line="cpu flags:"
for f in avx2 fma avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_int8; do line="$line $f=$(have $f)"; done
echo "$line"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "source: $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(git diff --quiet HEAD -- widedeep.h tools/wd.c 2>/dev/null || echo ' + uncommitted changes to widedeep.h/tools/wd.c')"
echo "compiler: $(cc --version | head -1); oneDNN package: $(dpkg-query -W -f '${Version}' libdnnl-dev 2>/dev/null || echo none)"

# ---- data
[ -f "$W/data.wdr" ] || $WD gen -o "$W/data.wdr" --rows "$ROWS" --seed 3 --max-card 1000000 --threads 2 >/dev/null
[ -f "$W/dump/meta.txt" ] || $WD dump "$W/data.wdr" "$W/dump" >/dev/null
EPOCHS=$(( (WD_WARM + WD_STEPS + 2) * BATCH / ROWS + 1 ))

# What else ran meanwhile: CPU time of the whole machine (/proc/stat: user,
# nice, system, irq, softirq, steal) less this script's children's, over the
# wall time, in cores. Printed after every run as [others N cores].
HZ=$(getconf CLK_TCK)
mark() {
    times > "$W/times.txt"
    M_CHILD=$(awk 'NR==2 { split($1, a, /[ms]/); split($2, b, /[ms]/); print a[1]*60 + a[2] + b[1]*60 + b[2] }' "$W/times.txt")
    M_BUSY=$(awk -v hz="$HZ" '/^cpu / { print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat)
    M_WALL=$(date +%s.%N)
}
quiet() {   # QUIET_WAIT > 0: wait up to that many seconds for 3 s in which others use < 0.25 cores
    [ "${QUIET_WAIT:-0}" -gt 0 ] || return 0
    local end=$(( $(date +%s) + QUIET_WAIT )) b0 b1
    while :; do
        b0=$(awk -v hz="$HZ" '/^cpu / { print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat); sleep 3
        b1=$(awk -v hz="$HZ" '/^cpu / { print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat)
        awk -v a="$b0" -v b="$b1" 'BEGIN { exit !((b - a) / 3 < 0.25) }' && return 0
        [ "$(date +%s)" -lt "$end" ] || { echo "    (others still busy after waiting ${QUIET_WAIT} s)"; return 0; }
    done
}
others() {   # since the last mark, into $OTHERS (not in a subshell: times must see this shell's children)
    local c=$M_CHILD b=$M_BUSY w=$M_WALL
    mark
    OTHERS=$(awk -v c0="$c" -v c1="$M_CHILD" -v b0="$b" -v b1="$M_BUSY" -v w0="$w" -v w1="$M_WALL" \
        'BEGIN { o = ((b1 - b0) - (c1 - c0)) / (w1 - w0); printf "[others %.2f cores]", o < 0 ? 0 : o }')
}
# ---- the GEMM engine's peak on the MLP's shapes (1 thread)
MFLOP=""; declare -A PEAK
if cc -O2 -I. -o "$W/gemm_peak" bench/gemm_peak.c -lzstd -lz -lpthread -lm -ldnnl -lgomp 2>"$W/gemm_peak.err"; then
    echo "== GEMM engine peak (bench/gemm_peak.c: oneDNN matmul, widedeep's layouts, 1 thread, M = rows per worker)"
    quiet; mark
    "$W/gemm_peak" $BATCH 20 | tee "$W/peak1.txt"
    for t in $THREADS; do
        m=$((BATCH / t)); [ "$t" = 1 ] && f="$W/peak1.txt" || { f="$W/peak$t.txt"; "$W/gemm_peak" $m 20 > "$f"; grep -E "total" "$f" | sed "s/^/M=$m: /"; }
        for p in fp32 bf16; do PEAK[$t,$p]=$(awk -v p=$p -v t=$t '$1=="PEAK" && $2==p {split($4,a,"="); print a[2]*t}' "$f"); done
    done
    others; echo "gemm_peak runs: $OTHERS"
    MFLOP=$(awk '$1=="PEAK"{split($5,a,"="); print a[2]; exit}' "$W/peak1.txt")
else
    echo "== GEMM engine peak: skipped (bench/gemm_peak.c does not build: $(head -1 "$W/gemm_peak.err"))"
fi

# ---- PyTorch
if [ "$PEER" = 1 ] && ! python3 -c "import torch" >/dev/null 2>&1; then
    if [ -n "${TORCH_ENV:-}" ]; then . "$TORCH_ENV"   # shellcheck disable=SC1090
    else D=/tmp/wd-torch-libs   # bench/setup_torch.sh's default DIR and the path it prints
        export LD_LIBRARY_PATH=$D/nvidia/nccl/lib:$D/nvidia/cusparselt/lib:$D/nvidia/cu13/lib:$D/nvidia/nvshmem/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
    python3 -c "import torch" >/dev/null 2>&1 || { echo "PyTorch does not import: the peer is skipped (eval \"\$(bash bench/setup_torch.sh)\" first)"; PEER=0; }
fi
[ "$PEER" = 1 ] && echo "peer: $(python3 -c '
import re, torch
c = torch.__config__.show()
mkl = re.search(r"Math Kernel Library Version (\S+)", c); dnn = re.search(r"MKL-DNN (v\S+)", c)
print("PyTorch", torch.__version__, "| fp32 GEMM: MKL", mkl.group(1) if mkl else "?", "| bf16 GEMM: oneDNN", dnn.group(1) if dnn else "?",
      "| ATen CPU capability", torch.backends.cpu.get_cpu_capability())' 2>/dev/null)"
# PyTorch's own GEMMs on the same nine products (1 thread): what its fp32 (MKL)
# and bf16 (oneDNN) matmuls reach here, beside gemm_peak's figures
if [ "$PEER" = 1 ]; then
    quiet; mark
    python3 - $BATCH <<'PY' 2>/dev/null | tee "$W/ptpeak.txt" || echo "PyTorch GEMM peak: failed"
import sys, time, torch
torch.set_num_threads(1)
M = int(sys.argv[1]); widths = [429, 1024, 512, 256]
for dt, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
    tot, flops = 0.0, 0.0
    for i, o in zip(widths, widths[1:]):
        x, w, b, dz = torch.randn(M, i, dtype=dt), torch.randn(o, i, dtype=dt), torch.randn(o, dtype=dt), torch.randn(M, o, dtype=dt)
        for f in (lambda: torch.relu(torch.nn.functional.linear(x, w, b)), lambda: dz.t().mm(x), lambda: dz.mm(w)):
            for _ in range(3): f()
            ts = []
            for _ in range(10):
                t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
            tot += min(ts); flops += 2.0 * M * i * o
    print("PyTorch GEMM peak %s M=%d (torch.nn.functional.linear + relu, dz^T x, dz W; best of 10, 1 thread): %.2f ms = %.1f GFLOP/s" % (name, M, 1e3 * tot, flops / tot * 1e-9))
PY
    others; echo "PyTorch GEMM runs: $OTHERS"
fi

# ---- one wd run: samples/s after warm-up, from the time-stamped --log lines
wd_rate() {   # threads precision -> "samples/s steps seconds" in $W/rate.txt, the summary in $W/wd.out
    local fifo="$W/log.fifo"
    rm -f "$fifo"; mkfifo "$fifo"
    python3 -u -c '
import sys, time
warm, rows = int(sys.argv[2]), []
with open(sys.argv[1]) as f:
    for line in f:
        t = time.perf_counter()
        p = line.split(",")
        if p[0].isdigit(): rows.append((int(p[0]), int(p[1]), t))
sel = [r for r in rows if r[0] >= warm][:-1]   # the last line is written at the end: left out
if len(sel) < 2: print("0 0 0"); sys.exit()
a, b = sel[0], sel[-1]
print("%.0f %d %.3f" % ((b[1] - a[1]) / (b[2] - a[2]), b[0] - a[0], b[2] - a[2]))' "$fifo" "$WD_WARM" > "$W/rate.txt" &
    local pid=$!
    $WD train --train "$W/data.wdr" --batch $BATCH --threads "$1" --precision "$2" --epochs $EPOCHS \
        --max-steps $((WD_WARM + WD_STEPS + 2)) --no-shuffle --log "$fifo" > "$W/wd.out" 2>"$W/wd.err" || { cat "$W/wd.err" >&2; kill $pid 2>/dev/null; return 1; }
    wait $pid
    rm -f "$fifo"
}
best_of() { sort -g | tail -1; }
declare -A R
for t in $THREADS; do
    echo "== threads $t"
    for p in fp32 bf16; do
        v=""
        for r in $(seq "$REPEAT"); do
            quiet; mark
            if wd_rate "$t" $p; then
                read -r rate steps secs < "$W/rate.txt"; others
                echo "wd train $p: $rate samples/s ($steps steps after $WD_WARM warm-up, $secs s; wd's own figure with the warm-up: $(sed -n 's/^trained.* samples\/s=\([0-9]*\).*/\1/p' "$W/wd.out")) $OTHERS"
                echo "    $(grep -o 'engine=.*' "$W/wd.out" | head -1)"
                grep -E "^time per step" "$W/wd.out" | sed 's/^/    /'
                v="$v $rate"
            else
                echo "wd train $p: failed: $(tail -1 "$W/wd.err")"
            fi
        done
        R[$t,wd_$p]=$(printf '%s\n' $v | best_of)
    done
    [ "$PEER" = 1 ] || continue
    for cfg in eager compile amp amp_compile; do
        case $cfg in eager) o="";; compile) o="--compile";; amp) o="--amp";; amp_compile) o="--amp --compile";; esac
        v=""
        for r in $(seq "$REPEAT"); do
            quiet; mark
            if python3 bench/peer_torch.py --data "$W/dump" --threads "$t" --steps "$PEER_STEPS" --warmup "$PEER_WARM" $o > "$W/peer.out" 2>&1; then
                others; l=$(grep '^peer_torch' "$W/peer.out"); echo "torch $cfg: $l $OTHERS"
                v="$v $(sed -n 's/.*samples\/s=\([0-9]*\).*/\1/p' <<<"$l")"
            else
                echo "torch $cfg: failed: $(tail -2 "$W/peer.out" | tr '\n' ' ')"
            fi
        done
        R[$t,$cfg]=$(printf '%s\n' $v | best_of)
    done
done

# ---- summary
num() { [ -n "$1" ] && echo "$1" || echo 0; }
ratio() { awk -v a="$(num "$1")" -v b="$(num "$2")" 'BEGIN{ if (a > 0 && b > 0) printf "%.2fx", a/b; else printf "-" }'; }
maxof() { printf '%s\n' "$(num "$1")" "$(num "$2")" | sort -g | tail -1; }
gf() { awk -v r="$(num "$1")" -v m="$(num "$MFLOP")" -v p="$(num "$2")" 'BEGIN{ if (r > 0 && m > 0) { g = r*m/1000; if (p > 0) printf "%.0f (%.0f%%)", g, 100*g/p; else printf "%.0f", g } else printf "-" }'; }
echo
echo "== summary: samples/s (best of $REPEAT; wd $WD_STEPS steps after $WD_WARM warm-up, peer $PEER_STEPS after $PEER_WARM)"
printf "%-7s | %9s %9s %9s %9s | %9s %9s %9s %9s\n" threads "wd fp32" "pt eager" "pt comp" "wd/best" "wd bf16" "pt amp" "pt amp+c" "wd/best"
for t in $THREADS; do
    b32=$(maxof "${R[$t,eager]}" "${R[$t,compile]}"); b16=$(maxof "${R[$t,amp]}" "${R[$t,amp_compile]}")
    printf "%-7s | %9s %9s %9s %9s | %9s %9s %9s %9s\n" "$t" "$(num "${R[$t,wd_fp32]}")" "$(num "${R[$t,eager]}")" "$(num "${R[$t,compile]}")" "$(ratio "${R[$t,wd_fp32]}" "$b32")" \
        "$(num "${R[$t,wd_bf16]}")" "$(num "${R[$t,amp]}")" "$(num "${R[$t,amp_compile]}")" "$(ratio "${R[$t,wd_bf16]}" "$b16")"
done
if [ -n "$MFLOP" ]; then
    echo
    echo "== MLP GEMM GFLOP/s achieved ($MFLOP MFLOP per sample, forward + backward, x samples/s) and % of the engine's peak"
    echo "   (peak: gemm_peak's sum over the nine products at M = batch / threads, x threads)"
    printf "%-7s | %-12s %-12s | %-14s %-14s %-14s %-14s %-14s %-14s\n" threads "peak fp32" "peak bf16" "wd fp32" "wd bf16" "pt eager" "pt compile" "pt amp" "pt amp+c"
    for t in $THREADS; do
        p32=${PEAK[$t,fp32]}; p16=${PEAK[$t,bf16]}
        printf "%-7s | %-12s %-12s | %-14s %-14s %-14s %-14s %-14s %-14s\n" "$t" "$p32" "$p16" "$(gf "${R[$t,wd_fp32]}" "$p32")" "$(gf "${R[$t,wd_bf16]}" "$p16")" \
            "$(gf "${R[$t,eager]}" "$p32")" "$(gf "${R[$t,compile]}" "$p32")" "$(gf "${R[$t,amp]}" "$p16")" "$(gf "${R[$t,amp_compile]}" "$p16")"
    done
fi
if [ -n "$MFLOP" ] && [ "$PEER" = 1 ] && [ -s "$W/ptpeak.txt" ]; then
    pt32=$(sed -n 's/^PyTorch GEMM peak fp32.* = \([0-9.]*\) GFLOP\/s/\1/p' "$W/ptpeak.txt"); pt16=$(sed -n 's/^PyTorch GEMM peak bf16.* = \([0-9.]*\) GFLOP\/s/\1/p' "$W/ptpeak.txt")
    echo "   PyTorch against its own GEMMs' figure on these products ($pt32 fp32, $pt16 bf16 GFLOP/s per thread, x threads):"
    for t in $THREADS; do
        p32=$(awk -v a="$pt32" -v t="$t" 'BEGIN{print a*t}'); p16=$(awk -v a="$pt16" -v t="$t" 'BEGIN{print a*t}')
        echo "   threads $t: eager $(gf "${R[$t,eager]}" "$p32"), compile $(gf "${R[$t,compile]}" "$p32"), amp $(gf "${R[$t,amp]}" "$p16"), amp+compile $(gf "${R[$t,amp_compile]}" "$p16")"
    done
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); total $(( $(date +%s) - T0 )) s"
