#!/usr/bin/env python3
"""The same Wide&Deep model in PyTorch, as the peer in widedeep's benchmarks.

Reads the raw arrays `wd dump DATA.wdr DIR` writes (so both train on the very
same samples), builds: per slot an nn.EmbeddingBag(buckets, E, mode='sum',
sparse=True) for the deep part and one of width 1 for the wide part, a
Linear(D, 1) for the wide dense features, an MLP of ReLU layers and one
output; BCE-with-logits on wide + deep. Optimizer: Adagrad (PyTorch's, which
takes sparse gradients) for everything. widedeep uses FTRL for the wide part;
Adagrad costs the same per touched row, so the timing comparison holds.
Data sit in memory as tensors (no loader cost for the peer).

Usage: peer_torch.py --data DIR [--device cpu|cuda] [--threads T] [--batch B]
                     [--hidden 1024,512,256] [--embed-dim 16] [--steps N]
                     [--compile [--compile-mode MODE]] [--amp]
--amp: bf16 autocast (CUDA or CPU; on the CPU the Linear layers run in bf16
through oneDNN, weights and optimizer state stay fp32).
Prints samples/s over the timed steps (after warm-up steps).
"""
import argparse, os, sys, time
import numpy as np
import torch
import torch.nn as nn


class WideDeep(nn.Module):
    def __init__(self, buckets, ndense, E, hidden):
        super().__init__()
        self.deep_emb = nn.ModuleList([nn.EmbeddingBag(b, E, mode="sum", sparse=True) for b in buckets])
        self.wide_emb = nn.ModuleList([nn.EmbeddingBag(b, 1, mode="sum", sparse=True) for b in buckets])
        self.wide_dense = nn.Linear(ndense, 1)
        layers, width = [], ndense + E * len(buckets)
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)
        for e in self.deep_emb:
            nn.init.uniform_(e.weight, -0.05, 0.05)
        for e in self.wide_emb:
            nn.init.zeros_(e.weight)

    def forward(self, dense, ids):
        # ids: (B, S) one id per slot -> bags of one
        cols = [emb(ids[:, k : k + 1]) for k, emb in enumerate(self.deep_emb)]
        x = torch.cat([dense] + cols, dim=1)
        wide = self.wide_dense(dense)
        for k, emb in enumerate(self.wide_emb):
            wide = wide + emb(ids[:, k : k + 1])
        return (self.mlp(x) + wide).squeeze(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--hidden", default="1024,512,256")
    ap.add_argument("--embed-dim", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--compile-mode", default=None, help="torch.compile mode (default, max-autotune, ...)")
    ap.add_argument("--amp", action="store_true", help="bf16 autocast (cuda or cpu)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    with open(os.path.join(a.data, "meta.txt")) as f:
        n, D, S = map(int, f.readline().split())
        buckets = list(map(int, f.readline().split()))
    dev = torch.device(a.device)
    labels = torch.from_numpy(np.fromfile(os.path.join(a.data, "labels.f32"), dtype=np.float32)).to(dev)
    dense = torch.from_numpy(np.fromfile(os.path.join(a.data, "dense.f32"), dtype=np.float32).reshape(n, D)).to(dev)
    ids = torch.from_numpy(np.fromfile(os.path.join(a.data, "ids.u32"), dtype=np.uint32).astype(np.int64).reshape(n, S)).to(dev)
    model = WideDeep(buckets, D, a.embed_dim, [int(h) for h in a.hidden.split(",") if h]).to(dev)
    sparse = [p for m in list(model.deep_emb) + list(model.wide_emb) for p in m.parameters()]
    dense_p = list(model.wide_dense.parameters()) + list(model.mlp.parameters())
    opt_sparse = torch.optim.Adagrad(sparse, lr=a.lr)
    opt_dense = torch.optim.Adagrad(dense_p, lr=a.lr)
    lossf = nn.BCEWithLogitsLoss()
    fwd = torch.compile(model, mode=a.compile_mode) if a.compile else model

    def step(i):
        lo = (i * a.batch) % max(1, n - a.batch)
        d, x, y = dense[lo : lo + a.batch], ids[lo : lo + a.batch], labels[lo : lo + a.batch]
        opt_sparse.zero_grad(set_to_none=True)
        opt_dense.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=a.amp):
            loss = lossf(fwd(d, x).float(), y)
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        return loss

    for i in range(a.warmup):
        step(i)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(a.warmup + i)
    loss = float(loss)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"peer_torch device={a.device} threads={torch.get_num_threads()} compile={int(a.compile)}"
          f"{'' if not a.compile_mode else ':' + a.compile_mode} amp={int(a.amp)} batch={a.batch} "
          f"steps={a.steps} seconds={dt:.3f} samples/s={a.steps * a.batch / dt:.0f} loss={loss:.4f} torch={torch.__version__}")


if __name__ == "__main__":
    sys.exit(main())
