#!/usr/bin/env python3
"""Serving latency of the same Wide&Deep model in PyTorch (CPU), beside
bench/predict_bench.c: it loads the weights and requests predict_bench wrote
(raw arrays in DIR), builds peer_torch.py's WideDeep with them, checks that
its probabilities are widedeep's (max difference printed; it fails above
1e-4), then times one request (batch 1 or 256) from 1 and 4 caller threads,
eager and TorchScript (traced, frozen), with torch's intra-op threads 1 and
all cores, under torch.inference_mode(). Python callers hold the GIL between
torch's operators, as a Python server's would.
Usage: peer_predict.py DIR [SECONDS_PER_ROW] [BATCH,CALLERS]
(the last: only that request size and caller count's rows)
"""
import os, sys
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_torch import WideDeep  # noqa: E402
from peer_latency import timed_row  # noqa: E402


def load(d):
    meta = dict(l.split(None, 1) for l in open(os.path.join(d, "meta.txt")).read().splitlines())
    D, S, E, buckets, n = int(meta["D"]), int(meta["S"]), int(meta["E"]), int(meta["buckets"]), int(meta["nreq"])
    hidden = [int(h) for h in meta["hidden"].split(",")]
    f32 = lambda name: np.fromfile(os.path.join(d, name), dtype=np.float32)
    m = WideDeep([buckets] * S, D, E, hidden)
    with torch.no_grad():
        widths = [D + S * E] + hidden + [1]
        linears = [l for l in m.mlp if isinstance(l, torch.nn.Linear)]
        for l, lin in enumerate(linears):
            lin.weight.copy_(torch.from_numpy(f32(f"w{l}.f32").reshape(widths[l + 1], widths[l])))
            lin.bias.copy_(torch.from_numpy(f32(f"b{l}.f32")))
        wdn = f32("wide_dense.f32")
        m.wide_dense.weight.copy_(torch.from_numpy(wdn[:D].reshape(1, D)))
        m.wide_dense.bias.copy_(torch.from_numpy(wdn[D:D + 1]))
        emb = f32("emb.f32").reshape(S, buckets, E)
        wide = f32("wide.f32").reshape(S, buckets, 1)
        for k in range(S):
            m.deep_emb[k].weight.copy_(torch.from_numpy(emb[k]))
            m.wide_emb[k].weight.copy_(torch.from_numpy(wide[k]))
    dense = torch.from_numpy(f32("dense.f32").reshape(n, D))
    ids = torch.from_numpy(np.fromfile(os.path.join(d, "ids.u32"), dtype=np.uint32).reshape(n, S).astype(np.int64))
    return m.eval(), dense, ids, f32("probs.f32")


def row(name, model, dense, ids, batch, callers, seconds):
    n = dense.shape[0]
    def warm():
        for w in range(20):
            model(dense[:batch], ids[:batch])

    def call(r):
        at = (r * batch) % (n - batch)
        torch.sigmoid(model(dense[at:at + batch], ids[at:at + batch]))

    timed_row("pytorch", name, batch, callers, seconds, warm, call, ctx=torch.inference_mode)

def main():
    d = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    only = tuple(int(x) for x in sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    model, dense, ids, want = load(d)
    cores = os.cpu_count()
    with torch.inference_mode():
        p = torch.sigmoid(model(dense, ids)).numpy()
        traced = torch.jit.freeze(torch.jit.trace(model, (dense[:256], ids[:256])))
        pt = torch.sigmoid(traced(dense, ids)).numpy()
    diff, difft = float(np.max(np.abs(p - want))), float(np.max(np.abs(pt - want)))
    print(f"# pytorch {torch.__version__}: the same model, max |p - widedeep's p| over {len(want)} samples: eager {diff:.2e}, torchscript {difft:.2e};"
          f" mkldnn {torch.backends.mkldnn.is_available()}; {cores} cores", flush=True)
    if not (diff < 1e-4 and difft < 1e-4):
        print("peer_predict: PyTorch's model is not widedeep's (probabilities differ)", file=sys.stderr)
        return 1
    for batch in (1, 256):
        for callers in (1, 4):
            if only and (batch, callers) != only:
                continue
            for threads in (1, cores):
                torch.set_num_threads(threads)
                row(f"eager threads={threads}", model, dense, ids, batch, callers, seconds)
                row(f"torchscript threads={threads}", traced, dense, ids, batch, callers, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
