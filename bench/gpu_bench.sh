#!/usr/bin/env bash
# The GPU benchmark (issues 5 and 10), on a machine with an NVIDIA GPU:
#   ceilings  this GPU's D2D copy bandwidth, 8192^3 TF32/FP32 GEMM rates, and
#             the floor the reference MLP's own GEMMs put under a step
#             (bench/ceilings.cu)
#   train     build/wd-cuda train --device cuda on the Criteo-shaped reference
#             workload (13 dense + 26 slots with Criteo's cardinalities, Zipf
#             ids, E=16, MLP 1024-512-256, batch 16384, shuffled), end to end
#             from .wdr through the loader. Two runs of different lengths give
#             the steady-state rate (their difference has no set-up, warm-up,
#             graph capture or final copy), a third with WD_CUDA_TIMING=1 the
#             per-stage breakdown (no CUDA graph there, so a little slower);
#             the achieved FLOP rate is printed against the ceiling.
#   peer      bench/peer_torch.py on the same samples and GPU: eager,
#             torch.compile, bf16 autocast, both (the best one is the peer);
#             a SKIP line when torch with CUDA does not import.
# Usage: bench/gpu_bench.sh [WORKDIR] [ROWS] [PARTS]
#   WORKDIR data and outputs (default /tmp/wd-gpu); ROWS rows of data
#   (default 20000000); PARTS any of ceilings,train,peer (default all three).
# Environment: CUDA_HOME and NCCL_HOME as for make; WD_MAKE_ARGS extra make
# arguments (bench/gpu_check.sh passes its build settings, e.g. GEMM=portable);
# SHORT_STEPS, LONG_STEPS (default 200, 800): the two timed runs.
set -eo pipefail
cd "$(dirname "$0")/.."
W=${1:-/tmp/wd-gpu}; ROWS=${2:-20000000}; PARTS=${3:-ceilings,train,peer}
B=16384
SHORT=${SHORT_STEPS:-200}; LONG=${LONG_STEPS:-800}
has() { case ",$PARTS," in *",$1,"*) return 0;; *) return 1;; esac; }
mkdir -p "$W"
echo "gpu_bench: $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?') rows=$ROWS parts=$PARTS"
command -v nvidia-smi >/dev/null && nvidia-smi -L
# shellcheck disable=SC2086
make -s $WD_MAKE_ARGS build/wd build/wd-cuda
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")}

if has ceilings; then
    echo "== ceilings"
    "$CUDA_HOME/bin/nvcc" -O3 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80 \
        -o build/ceilings bench/ceilings.cu -lcublasLt
    build/ceilings | tee "$W/ceilings.txt"
fi

if has train || has peer; then
    # tables: min(16 x cardinality, 10131227) rows per slot (Criteo's largest slot)
    if [ ! -f "$W/data.wdr" ]; then
        echo "== data: $ROWS rows"
        build/wd gen -o "$W/data.wdr.part" --rows "$ROWS" --seed 1 --max-card 10131227 --buckets 10131227 --threads "$(nproc)"
        mv "$W/data.wdr.part" "$W/data.wdr"; rm -f "$W/data.wdr.part.prob"
    fi
fi

if has train; then
    echo "== plan"
    build/wd train --train "$W/data.wdr" --plan --batch $B
    max=$(( ROWS / B - 1 ))
    [ "$LONG" -le "$max" ] || LONG=$max
    [ "$SHORT" -lt "$LONG" ] || SHORT=$(( LONG / 4 ))
    run() {  # run NAME STEPS [ENV...]: one training run, its summary line to $W/train-NAME.txt
        local name=$1 steps=$2; shift 2
        echo "== train $name: $steps steps ${*:-}"
        env "$@" build/wd-cuda train --train "$W/data.wdr" --device cuda --batch $B --embed-dim 16 --hidden 1024,512,256 \
            --loader-threads "$(nproc)" --max-steps "$steps" --progress-every 5 2>&1 | tee "$W/train-$name.txt"
    }
    run short "$SHORT"
    run long "$LONG"
    run timed "$SHORT" WD_CUDA_TIMING=1
    # steady state: (samples_long - samples_short) / (loop_long - loop_short); loop = samples / samples_per_s
    field() { sed -n "s|^trained .* $2=\([0-9.e+-]*\).*|\1|p" "$W/train-$1.txt" | tail -1; }
    s1=$(field short samples); r1=$(field short 'samples/s'); s2=$(field long samples); r2=$(field long 'samples/s')
    tf32=$(sed -n 's/^gemm 8192^3: TF32 \([0-9.]*\) TFLOP.*/\1/p' "$W/ceilings.txt" 2>/dev/null | head -1)
    awk -v s1="$s1" -v r1="$r1" -v s2="$s2" -v r2="$r2" -v tf32="${tf32:-0}" 'BEGIN {
        if (s1 == "" || s2 == "" || r1 <= 0 || r2 <= 0) { print "steady state: runs incomplete"; exit 1 }
        t1 = s1 / r1; t2 = s2 / r2
        if (t2 <= t1) { print "steady state: the long run was not longer"; exit 1 }
        v = (s2 - s1) / (t2 - t1)
        flop = 6 * (432 * 1024 + 1024 * 512 + 512 * 256 + 256)   # the MLP, forward + backward, per sample
        printf "steady state: %.2fM samples/s (%.3f ms per step of %d); end-to-end incl. warm-up: %.2fM (short) %.2fM (long)\n", v / 1e6, 16384 / v * 1e3, 16384, r1 / 1e6, r2 / 1e6
        printf "MLP arithmetic: %.1f TFLOP/s achieved", v * flop / 1e12
        if (tf32 > 0) printf " = %.0f%% of the TF32 GEMM ceiling (%.1f TFLOP/s)", 100 * v * flop / 1e12 / tf32, tf32
        printf "\n"
    }' | tee "$W/steady.txt"
    grep -h '^time per step' "$W/train-timed.txt" | tee -a "$W/steady.txt" || true
fi

if has peer; then
    echo "== peer (PyTorch)"
    if ! python3 -c 'import torch, numpy, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
        echo "SKIP peer: python3 cannot import torch with CUDA (and numpy) here: no PyTorch peer figure from this host"
    else
        [ -f "$W/dump/meta.txt" ] || build/wd dump "$W/data.wdr" "$W/dump" >/dev/null
        : > "$W/peer.txt"
        for mode in "" "--compile" "--amp" "--compile --amp"; do
            # shellcheck disable=SC2086
            python3 bench/peer_torch.py --data "$W/dump" --device cuda --batch $B --embed-dim 16 --hidden 1024,512,256 \
                --steps 200 --warmup 10 $mode 2>&1 | tail -1 | tee -a "$W/peer.txt" || echo "peer mode '${mode:-eager}' failed" | tee -a "$W/peer.txt"
        done
        awk '/samples\/s=/ { for (i = 1; i <= NF; i++) if ($i ~ /^samples\/s=/) { v = substr($i, 11) + 0; if (v > best) { best = v; line = $0 } } }
             END { if (best > 0) printf "best peer: %.2fM samples/s: %s\n", best / 1e6, line }' "$W/peer.txt" | tee -a "$W/peer.txt"
    fi
fi
