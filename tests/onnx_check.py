"""tests/onnx_check.py MODEL.onnx FEEDDIR [PRED.txt [RAW]]: runs the ONNX
graph that `wd export --onnx` wrote in ONNX Runtime on the arrays tests/onnx_feed
wrote (FEEDDIR/feed.txt) and compares its probabilities with wd_predict's (the
feed's wd_predict array, and `wd predict`'s output PRED.txt when given): within
1e-6 absolute on every sample. Also: onnx.checker (full check), opset >= 17,
every graph input documented, the graph's inputs exactly the feed's, and the
cross ids recomputed in Python (the README's wd_cross_hash) equal the feed's.
A graph exported --values-from takes values.<slot> (strings) for its slots
with a vocabulary: they come from RAW, the text the feed's .wdr was converted
from (Criteo TSV, or CSV when it ends in .csv; line i: sample i, a header line
passed over), taken as the input's doc string says (field F, or bytes [a, b)
of it, or their day of the week), in place of the
feed's ids.<slot>, and the graph computes the crosses itself (the feed's
cross<c> are left out); at least one of the raw values must lie outside the
vocabulary (so id 0 is exercised).
Prints one line; exit 0 when all hold, 1 (with the reason) otherwise."""
import csv
import datetime
import os
import re
import sys

import numpy as np
import onnx
import onnxruntime as ort

import checklib   # tests/checklib.py, beside this file

TOL = 1e-6
M64 = (1 << 64) - 1


def mix64(x):   # widedeep.h section 13: splitmix64's finalizer
    x ^= x >> 30; x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27; x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def cross_hash(a, b, c, buckets):   # wd_cross_hash
    return mix64(((a << 32) | b) ^ (((c + 1) * 0x9E3779B97F4A7C15) & M64)) % buckets


def weekday(s):   # widedeep.h's wd__weekday: YYMMDD (20YY) or YYYYMMDD, 0 = Monday; "" when not a date
    if len(s) not in (6, 8) or not s.isdigit():
        return ""
    y, m, d = (2000 + int(s[:2]), int(s[2:4]), int(s[4:6])) if len(s) == 6 else (int(s[:4]), int(s[4:6]), int(s[6:]))
    try:
        return str(datetime.date(y, m, d).weekday())
    except ValueError:
        return ""


def raw_value(row, doc):   # the value the input's doc string points at in one line's fields
    m = re.search(r"bytes \[(\d+), (\d+)\) of field (\d+)", doc)
    if m:
        v = row[int(m.group(3))][int(m.group(1)):int(m.group(2))]
        return weekday(v) if "day of the week" in doc else v
    return row[int(re.search(r": field (\d+) of a training line", doc).group(1))]


def main():
    path, feed_dir = sys.argv[1], sys.argv[2]
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 17:
        return f"opset {opset} < 17"
    undocumented = [i.name for i in model.graph.input if not i.doc_string]
    if undocumented or "probability" not in model.graph.doc_string:
        return f"inputs without a doc string: {undocumented}"
    arrays = {}
    for line in open(os.path.join(feed_dir, "feed.txt")):
        name, typ, fname, *dims = line.split()
        a = np.fromfile(os.path.join(feed_dir, fname), dtype=np.float32 if typ == "f32" else np.int64)
        arrays[name] = a.reshape([int(d) for d in dims])
    want = arrays.pop("wd_predict")
    raw = [i for i in model.graph.input if i.name.startswith("values.")]
    oov = 0
    if raw:   # raw strings from the text, in place of the feed's ids
        if len(sys.argv) < 5:
            return f"the graph takes raw strings ({raw[0].name}, ...): give RAW.tsv"
        with open(sys.argv[4], newline="", encoding="utf-8") as f:
            tsv = not sys.argv[4].endswith(".csv")
            rows = [line.rstrip("\n").split("\t") for line in f] if tsv else list(csv.reader(f))
        if len(rows) == len(want) + 1:   # a header
            rows = rows[1:]
        if len(rows) != len(want):
            return f"{sys.argv[4]}: {len(rows)} lines for {len(want)} samples"
        for i in raw:
            ids = arrays.pop("ids." + i.name[len("values."):])
            arrays[i.name] = np.array([raw_value(r, i.doc_string) for r in rows], dtype=object)
            oov += int(np.sum(ids == 0))
        if not oov:
            return "no raw value outside a vocabulary: id 0 is not exercised"
        for name in [a for a in arrays if a.startswith("cross")]:
            del arrays[name]
    names = sorted(i.name for i in model.graph.input)
    if names != sorted(arrays):
        return f"graph inputs {names} != the feed's {sorted(arrays)}"
    crosses = [i for i in model.graph.input if i.name.startswith("cross")]
    for i in crosses:   # the doc names the pair: "... wd_cross_hash(id P, id Q, C, BUCKETS)"
        args = i.doc_string.split("wd_cross_hash(")[1].rstrip(")").split(", ")
        p, q, c, buckets = args[0][3:], args[1][3:], int(args[2]), int(args[3])
        mine = np.array([cross_hash(int(x), int(y), c, buckets) for x, y in zip(arrays["ids." + p], arrays["ids." + q])], dtype=np.int64)
        if not np.array_equal(mine, arrays[i.name]):
            return f"{i.name}: Python's wd_cross_hash differs from the library's"
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    got = sess.run(["probability"], arrays)[0]
    if got.shape != want.shape:
        return f"ONNX Runtime gave shape {got.shape}, wd_predict {want.shape}"
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if len(want) else 0.0
    if not diff <= TOL:
        i = int(np.argmax(np.abs(got - want)))
        return f"sample {i}: ONNX Runtime {got[i]:.9g}, wd_predict {want[i]:.9g} (max difference {diff:.3g} > {TOL})"
    extra = ""
    if len(sys.argv) > 3:   # `wd predict`'s text output: one probability per line
        text = np.loadtxt(sys.argv[3], dtype=np.float64, ndmin=1)
        if text.shape != want.shape:
            return f"{sys.argv[3]}: {text.shape[0]} lines for {want.shape[0]} samples"
        d2 = float(np.max(np.abs(got - text))) if len(want) else 0.0
        if not d2 <= TOL:
            return f"wd predict's output differs from ONNX Runtime's by {d2:.3g} > {TOL}"
        extra = f", wd predict's output within {d2:.2g}"
    if raw:
        extra += f"; {len(raw)} slots from raw strings ({oov} values out of vocabulary)"
    print(f"ok: {len(want)} samples, max |onnxruntime - wd_predict| = {diff:.2g}{extra}; checker passed, opset {opset}, "
          f"{len(names)} inputs, {len(crosses)} crosses checked in Python")
    return None


if __name__ == "__main__":
    checklib.run(main)
