#!/usr/bin/env bash
# wd-cuda on the emulated device (build/wd-cuda-emu: tools/wd.c and widedeep_cuda.cu on tests/cudacpu,
# ASan + UBSan): the Criteo sample (DATA's criteo_kaggle_head8000 train; valid: dev + test) trained on
# the device (TF32 products) and on the CPU backend with the same settings: their validation AUCs
# within 0.002. Usage: tests/emu_criteo.sh BUILD_DIR DATA_DIR TMPDIR [wd train options]; the options
# (tests/run.sh: --hidden 64,32 --batch 256, for time; make test-gpu-emu-criteo: none, the CLI's
# defaults) apply to both runs. One PASS/FAIL/SKIP line, then "# emu_criteo: ..." (tests/testlib.sh).
B=$1; DATA=$2; T=$3; shift 3
WD=$B/wd-cuda-emu
. "$(dirname "$0")/testlib.sh"
mkdir -p "$T"
name=gpu_emu_criteo_auc
for f in train dev test; do [ -f "$DATA/criteo_kaggle_head8000_$f.tsv" ] || miss=1; done
if [ -n "${miss:-}" ]; then skip $name "no Criteo sample (train, dev, test) in $DATA"
elif [ ! -x "$WD" ]; then fail $name "$WD is missing (it did not build)"
elif ! "$WD" convert --format criteo -o "$T/tr.wdr" "$DATA/criteo_kaggle_head8000_train.tsv" > "$T/conv" 2>&1 ||
     ! "$WD" convert --format criteo --schema-from "$T/tr.wdr" -o "$T/ev.wdr" \
         "$DATA/criteo_kaggle_head8000_dev.tsv" "$DATA/criteo_kaggle_head8000_test.tsv" >> "$T/conv" 2>&1; then
    fail $name "converting the sample: $(tail -1 "$T/conv")"
else
    auc=() t=()
    for d in cpu cuda; do
        t0=$SECONDS
        "$WD" train --train "$T/tr.wdr" --valid "$T/ev.wdr" --device $d "$@" > "$T/$d.out" 2>&1; rc=$?
        t+=($((SECONDS - t0)))
        # the run's last line: one epoch (7200 samples), its validation AUC, on the engine asked for
        auc+=("$(sed -n "s/^trained .* samples=7200 .* valid_auc=\([0-9.]*\) .* engine=$d .*/\1/p" "$T/$d.out")")
        if [ $rc != 0 ] || [ -z "${auc[-1]}" ]; then
            fail $name "--device $d: exit $rc, no epoch with a valid_auc on engine=$d: \
$(tail -2 "$T/$d.out" | tr '\n' ' ')"
            break
        fi
    done
    if [ "${#t[@]}" = 2 ] && [ -n "${auc[1]}" ]; then
        grep -h '^trained' "$T/cpu.out" "$T/cuda.out"
        if near "${auc[0]}" "${auc[1]}" 0.002; then
            pass "$name: valid AUC cpu ${auc[0]} (${t[0]} s), emulated cuda ${auc[1]} (${t[1]} s): within 0.002"
        else fail $name "valid AUC cpu ${auc[0]}, emulated cuda ${auc[1]}: not within 0.002"; fi
    fi
fi
tl_summary emu_criteo
