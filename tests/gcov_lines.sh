#!/usr/bin/env bash
# Line coverage of one source file from gcov: the file's executable lines run
# and not run, in all and per function (those not wholly run; their lines not
# run listed). Usage: tests/gcov_lines.sh SOURCE OBJECT (an object compiled
# --coverage whose programs ran: its .gcno and .gcda beside it).
src=$1; obj=$2
out=$(mktemp "${TMPDIR:-/tmp}/gcov.XXXXXX")
trap 'rm -f "$out"' EXIT
# (-t: the annotated sources on stdout, every file the object's code came from; run where it was compiled)
gcov -t -b -m -o "$obj" "$src" > "$out" 2> "$out.err" || { cat "$out.err"; rm -f "$out.err"; exit 1; }
rm -f "$out.err"
awk -v src="$src" '
    / 0:Source:/ { sub(/.* 0:Source:/, ""); this = $0 == src; next }
    !this { next }
    /^function / { fn = $2; for (i = 3; $i != "called"; i++) fn = fn " " $i; next }
    /^ *[-0-9#=]+[*]?: *[0-9]+:/ {
        split($0, f, ":"); c = f[1]; gsub(/ /, "", c); ln = f[2] + 0
        if (c == "-" || ln == 0 || (ln in done)) next   # (the lines of another template instance: counted once)
        done[ln] = 1
        tot++; ft[fn]++
        if (c ~ /^[#=]/) { miss[fn] = miss[fn] (miss[fn] == "" ? "" : ",") ln } else { run++; fr[fn]++ }
        if (!(fn in seen)) { seen[fn] = 1; order[++n] = fn }
    }
    END {
        printf "%s: %d of %d lines run (%.1f%%)\n", src, run, tot, tot ? 100 * run / tot : 0
        for (i = 1; i <= n; i++) { k = order[i]; if (fr[k] < ft[k])
            printf "  %-40s %4d of %4d lines; not run: %s\n", k, fr[k], ft[k], miss[k] }
    }' "$out"
