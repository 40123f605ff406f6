#!/usr/bin/env python3
"""Serving latency of the same Wide&Deep model in ONNX Runtime (CPU), beside
bench/predict_bench.c: it loads DIR/model.onnx (`wd export --onnx` of the
model predict_bench saved) and the requests predict_bench wrote, checks that
its probabilities are widedeep's (max difference printed; it fails above
1e-5), then times one request (batch 1 or 256) from 1 and 4 caller threads
sharing one InferenceSession (Run is thread-safe; it releases the GIL while
it computes), with ONNX Runtime's intra-op threads 1 and all cores
(inter-op 1, sequential execution, all graph optimizations). Each request's
inputs are prepared before it is timed (contiguous slices, no copies): the
time is session.run's, Python's call overhead included.
Usage: peer_onnx.py DIR [SECONDS_PER_ROW] [BATCH,CALLERS]
(the last: only that request size and caller count's rows)
"""
import os, sys
import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_latency import timed_row  # noqa: E402


def load(d):
    meta = dict(l.split(None, 1) for l in open(os.path.join(d, "meta.txt")).read().splitlines())
    D, S, n = int(meta["D"]), int(meta["S"]), int(meta["nreq"])
    dense = np.fromfile(os.path.join(d, "dense.f32"), dtype=np.float32).reshape(n, D)
    ids = np.ascontiguousarray(np.fromfile(os.path.join(d, "ids.u32"), dtype=np.uint32).reshape(n, S).T.astype(np.int64))
    want = np.fromfile(os.path.join(d, "probs.f32"), dtype=np.float32)
    return dense, ids, want


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def feeds(sess, dense, ids, at, batch):
    f = {}
    for inp in sess.get_inputs():
        if inp.name == "dense":
            f["dense"] = dense[at:at + batch]
        elif inp.name.startswith("ids.C"):
            f[inp.name] = ids[int(inp.name[5:]) - 1, at:at + batch]
        else:
            raise SystemExit(f"peer_onnx: unexpected input {inp.name} (a one-hot Criteo model has dense and ids.C1..C26)")
    return f


def row(name, sess, dense, ids, batch, callers, seconds):
    n = dense.shape[0]
    reqs = [feeds(sess, dense, ids, (r * batch) % (n - batch), batch) for r in range(max(1, n // batch))]
    def warm():
        for w in range(20):
            sess.run(["probability"], reqs[w % len(reqs)])

    timed_row("onnxrt", name, batch, callers, seconds, warm, lambda r: sess.run(["probability"], reqs[r % len(reqs)]), first=1)

def main():
    d = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    only = tuple(int(x) for x in sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    path = os.path.join(d, "model.onnx")
    dense, ids, want = load(d)
    cores = os.cpu_count()
    sess = {t: session(path, t) for t in (1, cores)}
    got = np.concatenate([sess[1].run(["probability"], feeds(sess[1], dense, ids, at, 256))[0] for at in range(0, len(want), 256)])
    diff = float(np.max(np.abs(got - want)))
    print(f"# onnxruntime {ort.__version__}: {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.1f} MB, `wd export --onnx`),"
          f" max |p - widedeep's p| over {len(want)} samples: {diff:.2e}; {cores} cores", flush=True)
    if not diff < 1e-5:
        print("peer_onnx: ONNX Runtime's probabilities are not widedeep's", file=sys.stderr)
        return 1
    for batch in (1, 256):
        for callers in (1, 4):
            if only and (batch, callers) != only:
                continue
            for threads in (1, cores):
                row(f"session intra_op={threads}", sess[threads], dense, ids, batch, callers, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
