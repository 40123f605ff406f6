"""The latency loop bench/peer_predict.py and bench/peer_onnx.py share: `callers`
threads each warm up, meet at a barrier, then time one request per call until
`seconds` pass; one line of p50 / p99 / requests/s / samples/s."""
import contextlib
import threading
import time

import numpy as np


def timed_row(tag, name, batch, callers, seconds, warm, call, first=0, ctx=contextlib.nullcontext):
    """warm(): a caller's 20 warm-up requests; call(r): request r, caller c's first r = first * c;
    ctx(): entered by each caller thread."""
    lat = [[] for _ in range(callers)]
    go = threading.Barrier(callers + 1)
    deadline = [float("inf")]

    def caller(c):
        with ctx():
            warm()
            go.wait()
            r = first * c
            while True:
                t0 = time.perf_counter()
                call(r)
                lat[c].append(time.perf_counter() - t0)
                r += 1
                if time.perf_counter() >= deadline[0]:
                    break

    th = [threading.Thread(target=caller, args=(c,)) for c in range(callers)]
    for t in th:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    for t in th:
        t.join()
    wall = time.perf_counter() - t0
    allv = np.sort(np.concatenate([np.array(l) for l in lat]))
    k = len(allv)
    print(f"{tag:<9s} {name:<26s} batch {batch:3d}  callers {callers}  p50 {1e3 * allv[k // 2]:8.3f} ms  p99 {1e3 * allv[int(0.99 * (k - 1))]:8.3f} ms"
          f"  {k / wall:8.0f} req/s  {k / wall * batch:9.0f} samples/s  ({k} calls)", flush=True)
