#!/usr/bin/env bash
# How tests/golden/v2_vocab.wdr and v2_vocab.wdm were written (once, at commit
# 468ff16, the last build whose .wdr files carry no input format (.wdr v2) and
# whose .wdm checkpoints carry neither vocabulary nor input format (.wdm v2)).
# DO NOT REGENERATE them: they are what "a file of those versions still loads"
# means (tests/test_contract.c). To see how they were made:
#   git worktree add /tmp/old 468ff16 && cc -std=c11 -O1 -o /tmp/wd-old /tmp/old/tools/wd.c -lzstd -lz -lpthread -lm
#   bash tests/golden/make_v2.sh /tmp/wd-old OUTDIR
# The input is 96 synthetic Criteo lines (awk, seed 7; sha256 bbefe23c...8d63),
# so every slot gets a vocabulary (25 + 1 slots of a few values each).
set -e
WD=$1; OUT=$2
mkdir -p "$OUT"
awk 'BEGIN{srand(7); for(i=0;i<96;i++){ l=(rand()<0.3)?1:0; s=l; for(j=1;j<=13;j++){ s=s "\t" ((rand()<0.2)?"":int(rand()*20)) } for(j=1;j<=26;j++){ s=s "\t" ((rand()<0.1)?"":sprintf("%08x", int(rand()*(3+j))*2654435761 % 4294967296)) } print s }}' > "$OUT/g.tsv"
"$WD" convert --format criteo -o "$OUT/v2_vocab.wdr" "$OUT/g.tsv"
"$WD" train --train "$OUT/v2_vocab.wdr" --hidden 4 --embed-dim 2 --epochs 2 --batch 32 --save "$OUT/v2_vocab.wdm" --threads 1
