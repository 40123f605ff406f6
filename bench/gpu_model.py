#!/usr/bin/env python3
"""Predicts one CUDA training step of the reference workload, kernel by kernel.

Issue 22 asks for predictions written down before the GPU run measures them:
for every kernel that widedeep_cuda.cu launches in a step (graph on, one rank),
the floating-point work and the fewest bytes it must move, the time each takes
at the GPU's ceilings, and the launches; then the same for each change the
issue proposes, applied one after another, and for each run of
bench/gpu_run.sh phase 3 with the switches it runs with: the prediction of
that run's engine-line device_ms, and of each device_ms comparison phase 3
prints, so a GPU run can check each prediction (bench/GPU_MODEL.md explains
the counts and records the numbers).

Time of a kernel = max(FLOPs / GEMM rate, bytes / copy bandwidth) plus a
latency term where the kernel is a chain of dependent loads, plus one launch
gap per kernel (inside a CUDA graph). Bytes count each input read once and
each output written once; a scattered 4-byte access costs a 32-byte sector.

Usage: bench/gpu_model.py [--gpu h100|h200] [--bw TB/s] [--tf32 TFLOP/s]
       [--bf16 TFLOP/s] [--gemm-eff F] [--unique U] [--gap US] [--batch B]
       [--detail | --runs | --run NAME]
Ceilings default to what this workplace measured (device/KINDS.md): H100 copy
3.0 TB/s, bf16 8192^3 798 TFLOP/s; H200 copy 4.3 TB/s, bf16 788. TF32 is half
the bf16 rate on Hopper's tensor cores. Pass the figures bench/ceilings.cu
measured in the same run to re-predict.
"""
import argparse
import math

GPUS = {"h100": dict(bw=3.0, bf16=798.0), "h200": dict(bw=4.3, bf16=788.0)}


def workload(B, unique):
    """The reference workload: 13 dense + 26 one-hot slots, E = 16, 1024-512-256.

    The runs of equal (slot, id) keys in a batch of 16384, measured on the run
    script's data (wd gen --rows 65536 --seed 1 --max-card 10131227 --buckets
    10131227, wd dump, numpy; four batches, within 1% of each other): 62.6K runs,
    45.7K of them single; 375 longer than WDC_HOT = 128 rows hold 60.3% of the
    425,984 occurrences and make 496 chunks of at most WDC_HOT_CHUNK = 1024; the
    short runs take 63.2K rounds of 32 occurrences (one warp each)."""
    D, S, E = 13, 26, 16
    IN = D + S * E
    INp = (IN + 15) // 16 * 16          # the backend pads x to 16 columns
    widths = [INp, 1024, 512, 256, 1]
    P_mlp = sum(widths[i] * widths[i + 1] + widths[i + 1] for i in range(4))
    Pd = P_mlp + D + 1                  # + wide dense weights and bias
    rows = B * S                        # sparse occurrences (no crosses)
    wide_rows = 59764871                # sum of the generated tables' buckets (wd gen --max-card 10131227)
    key_bits = max(1, math.ceil(math.log2(wide_rows + 1)))
    scale = rows / 425984.0             # the run counts measured at batch 16384, scaled with the batch
    return dict(B=B, D=D, S=S, E=E, IN=IN, INp=INp, widths=widths, P_mlp=P_mlp, Pd=Pd,
                rows=rows, U=unique, R=E + 1, key_bits=key_bits, seg=32,
                hot_share=0.603, hot_runs=375 * scale, chunks=496 * scale, short_rounds=63200 * unique / 62600.0)


def kernels(w, v):
    """(stage, name, flops, bytes, latency_us) for every launch of one step under variant v."""
    B, D, S, E, INp, R, U, rows = w["B"], w["D"], w["S"], w["E"], w["INp"], w["R"], w["U"], w["rows"]
    widths, Pd = w["widths"], w["Pd"]
    act = 2 if v["bf16"] else 4         # bytes per activation / gradient element
    k = []
    add = lambda stage, name, flops, nbytes, lat=0.0: k.append((stage, name, flops, nbytes, lat))
    add("embed", "memset grads", 0, 4 * (Pd + 4))
    # the gather writes the MLP input x: fp32, or at bf16 only its rounded copy (wdc_x_put: 2 bytes
    # an element, no fp32 x and no rounding pass)
    if v["fused_wide"]:
        # WD_CUDA_OVERLAP=1: one warp a sample writes x (float4 reads, 32 consecutive columns a
        # store) and reads the wide weights (a sector a slot) beside the embedding rows; one float
        # a sample out
        add("embed", "gather + wide logit", 0, 4 * B * D + 4 * B * S + 4 * B * S * E + act * B * INp + 32 * B * S + 4 * B)
    else:
        add("embed", "gather", 0, 4 * B * D + 4 * B * S + 4 * B * S * E + act * B * INp)
    L = len(widths) - 1
    # at bf16 a hidden output (an activation; with DRELU_BGRAD a ReLU'd gradient) is written by the
    # product in fp32 and rounded by wdc_to_bf16_k (4 bytes read, 2 written: the default, "+r" in
    # mlp=); with WD_CUDA_BF16_DIRECT=1 (direct) the product writes the bf16 itself
    rounded = v["bf16"] and not v.get("direct")
    for l in range(L):
        i, o = widths[l], widths[l + 1]
        aux = B * o / 8 if (v["epilogue"] and l < L - 1) else 0   # RELU_AUX_BIAS: a bit mask per activation
        out = 4 if (l == L - 1 or rounded) else act   # the deep logit is fp32
        add("mlp_fwd", f"fwd gemm {i}x{o}", 2 * B * i * o, act * B * i + act * i * o + out * B * o + aux)
        if rounded and l < L - 1:
            add("mlp_fwd", f"round {o} (to_bf16)", 0, 6 * B * o)
    if v["fused_wide"]:
        # the wide logit computed in the gather kernel: the loss kernel streams deep and wide
        # logits, labels and weights in, probabilities and dlogit out
        add("wide", "loss (wide logit read)", 0, 4 * 6 * B)
    else:
        add("wide", "loss", 0, 4 * 3 * B + 4 * B * D + 4 * B * S + 32 * B * S + 8 * B)
    add("wide", "loss_final", 0, 0, 2.0)     # one thread sums the blocks' partials
    add("wide", "colsum (wide dense)", 0, 4 * B * D + 4 * B)
    add("wide", "colsum final", 0, 0)
    # the top layer's bias gradient (the sum of dlogit, one block) and at bf16 dlogit's bf16 copy
    add("mlp_bwd", "top", 0, 4 * B + (2 * B if v["bf16"] else 0), 3.0)
    for l in range(L - 1, -1, -1):
        i, o = widths[l], widths[l + 1]
        add("mlp_bwd", f"dW gemm {i}x{o}", 2 * B * i * o, act * B * o + act * B * i + 4 * i * o)
        # dX: layer 0's is fp32 (the embeddings' gradient); above it, fused (DRELU_BGRAD), the next
        # dz: bf16 (direct) or fp32 then rounded (the default at bf16); unfused, fp32 that relu_grad
        # masks (and at bf16 rounds) and the column sums read
        fused = l and v["epilogue"]
        out = act if (fused and not rounded) else 4
        add("mlp_bwd", f"dX gemm {o}x{i}", 2 * B * i * o, act * B * o + act * i * o + out * B * i + (B * i / 8 if fused else 0))
        if fused and rounded:
            add("mlp_bwd", f"round {i} (to_bf16)", 0, 6 * B * i)
        if l and not v["epilogue"]:
            # read a, write the zeros (about half of d); at bf16 also read d and write its bf16 copy
            add("mlp_bwd", "relu_grad", 0, B * i * (act * 2.5 if not v["bf16"] else 2 + 4 + 2 + 2))
            add("mlp_bwd", "colsum (bias grad)", 0, 4 * B * i)
            add("mlp_bwd", "colsum final", 0, 0)
    # the sparse path
    p = math.ceil(w["key_bits"] / 8)
    sparse = "sort"
    add(sparse, "keys", 0, 4 * B * S + 12 * rows)
    add(sparse, "radix histogram", 0, 8 * rows)
    for q in range(p):
        add(sparse, f"radix pass {q}", 0, 24 * rows)
    add(sparse, "memset run_cnt", 0, 4 * rows)
    add(sparse, "rle init", 0, 0)
    add(sparse, "rle", 0, 8 * rows + 12 * U)
    add(sparse, "scan init", 0, 0)
    add(sparse, "scan run_cnt", 0, 8 * rows)
    # the rows stage (WD_CUDA_TIMING's "sparse rows"): the checks, then every run's merged row
    add("rows", "step_begin", 0, 0, 2.0)
    add("rows", "dense_check", 0, 4 * Pd)
    # the per-occurrence reads: the sorted occurrence, then its dx piece (fp32 at bf16 too: layer
    # 0's dX is the embeddings' gradient) and dlogit (scattered: a 32-byte sector each); a warp's
    # occurrences are a dependent chain
    chain_us = 0.8                      # two dependent loads from L2/HBM per round
    per_occ = 4 + 4 * E + 32
    if v["fused_sparse"]:
        # WD_CUDA_SPARSE=fused: one warp per run of <= 128 rows, 32 occurrences a round
        # (63 registers: 32 warps per SM resident); a hot run in chunks of 1024 rows,
        # one block (8 warps, 4 rounds each) per chunk, then its chunks in order
        warps = 132 * 32
        hot_occ, short_occ = rows * w["hot_share"], rows * (1 - w["hot_share"])
        nhot, chunks, U_short = w["hot_runs"], w["chunks"], U - w["hot_runs"]
        add("rows", "memset hot counters", 0, 0)
        add("rows", "fused_rows", 0, short_occ * per_occ + 16 * U + 4 * R * U_short, w["short_rounds"] / warps * chain_us)
        add("rows", "hot_chunk", 0, hot_occ * per_occ + 4 * R * chunks, math.ceil(chunks / (132 * 4)) * 4 * chain_us)
        add("rows", "hot_merge", 0, 4 * R * chunks + 4 * R * nhot)
    else:
        nsegs = U + rows / w["seg"]
        add("rows", "seg_count", 0, 8 * rows + 8 * U)
        add("rows", "scan init", 0, 0)
        add("rows", "scan seg_cnt", 0, 8 * rows)
        add("rows", "seg_fill", 0, 8 * rows + 4 * (U + rows / w["seg"]))
        conc = 132 * 64                 # resident warps: 132 SMs x 64
        add("rows", "seg_sum_occ", 0, rows * per_occ + 4 * R * nsegs, rows / conc * chain_us)
        add("rows", "run_merge", 0, 4 * R * nsegs + 4 * R * U + 8 * U)
    # the updates (the "optimizer" stage): the same kernels on both paths
    add("optimizer", "dense_update", 0, 4 * Pd * 5 + (2 * w["P_mlp"] if v["bf16"] else 0))   # at bf16 also the weights' bf16 copy
    add("optimizer", "sparse_apply", 0, 4 * R * U + 8 * U + 2 * (64 + 64) * U + 2 * 3 * 32 * U)
    add("optimizer", "step_end", 0, 0, 2.0)
    add("optimizer", "result copy", 0, 0, 2.0)
    return k


# kernels whose bytes are scattered rows or sectors (gathers, table updates):
# they reach a smaller share of the copy bandwidth than streaming ones
SCATTERED = ("gather", "gather + wide logit", "loss", "seg_sum_occ", "sparse_apply", "fused_rows", "hot_chunk")


def predict(w, v, c, ideal=False):
    rate = (c["bf16"] if v["bf16"] else c["bf16"] / 2) * (1.0 if ideal else c["eff"]) * 1e12
    stages, rows = {}, []
    for stage, name, flops, nbytes, lat in kernels(w, v):
        me = 1.0 if ideal else c["mem_eff"] * (0.5 if name in SCATTERED else 1.0)
        t = max(flops / rate, nbytes / (c["bw"] * 1e12 * me)) + (0 if ideal else lat * 1e-6) + v.get("gap", c["gap"]) * 1e-6
        rows.append((stage, name, flops, nbytes, t))
        s = stages.setdefault(stage, [0.0, 0.0, 0, 0.0])
        s[0] += flops; s[1] += nbytes; s[2] += 1; s[3] += t
    if v["overlap"]:
        # keys, sort and RLE on a forked branch of the graph, concurrent with the MLP:
        # hidden when shorter than forward + backward (they share bandwidth: count half)
        hide = min(stages["sort"][3] * 0.5, stages["mlp_fwd"][3] + stages["mlp_bwd"][3])
        stages["sort"][3] -= hide
    return stages, rows


OFF = dict(bf16=0, direct=0, epilogue=0, fused_sparse=0, overlap=0, fused_wide=0)
V = lambda **k: dict(OFF, **k)
# issue 22's changes one after another, as built (bf16: outputs rounded after the product, the default)
VARIANTS = [
    ("today (TF32, graph)", V()),
    # beside the chain: the epilogues alone (TF32 models with WD_CUDA_EPILOGUE=1, the default)
    ("TF32 + cuBLASLt epilogues only", V(epilogue=1)),
    ("+ bf16 GEMMs and activations (outputs rounded after)", V(bf16=1)),
    ("+ cuBLASLt epilogues (RELU_AUX_BIAS, DRELU_BGRAD)", V(bf16=1, epilogue=1)),
    ("+ fused embedding backward (WD_CUDA_SPARSE=fused)", V(bf16=1, epilogue=1, fused_sparse=1)),
    ("+ sort overlapped with the MLP, wide logit in the gather", V(bf16=1, epilogue=1, fused_sparse=1, overlap=1, fused_wide=1)),
]
# beside the chain: one switch on a step of it (each timed side by side in one GPU run)
ALONE = [
    ("all four with WD_CUDA_BF16_DIRECT=1 (bf16 outputs written by cuBLASLt)", V(bf16=1, direct=1, epilogue=1, fused_sparse=1, overlap=1, fused_wide=1)),
    ("today + WD_CUDA_OVERLAP=1 alone (sort beside the MLP, wide logit in the gather)", V(overlap=1, fused_wide=1)),
]
# bench/gpu_run.sh phase 3's runs of the reference workload, with the switches each runs with: the
# prediction for each is its engine line's device_ms (each step's device time, the first 4 left
# out). The defaults: TF32 for an fp32 model, WD_CUDA_EPILOGUE=1 (assumed fused on every layer:
# mlp=aux/-,aux/fused,aux/fused,fused/fused; a layer the engine line shows as kernel costs what
# train-noepi predicts for it), WD_CUDA_OVERLAP=1, WD_CUDA_SPARSE=segmented, the CUDA graph.
# WD_CUDA_TIMING=1 runs without the graph and the overlap (gap: microseconds a launch then).
DEFAULTS = V(epilogue=1, overlap=1, fused_wide=1)
RUNS = [
    ("train-short", "the defaults (train-long: the same)", DEFAULTS),
    ("train-short-fused", "WD_CUDA_SPARSE=fused (train-long-fused: the same)", dict(DEFAULTS, fused_sparse=1)),
    ("train-timed", "WD_CUDA_TIMING=1: no graph, no overlap", dict(DEFAULTS, overlap=0, fused_wide=0, gap=4.0)),
    ("train-timed-fused", "WD_CUDA_TIMING=1 WD_CUDA_SPARSE=fused", dict(DEFAULTS, overlap=0, fused_wide=0, fused_sparse=1, gap=4.0)),
    ("train-serial", "WD_CUDA_OVERLAP=0", dict(DEFAULTS, overlap=0, fused_wide=0)),
    ("train-noepi", "WD_CUDA_EPILOGUE=0", dict(DEFAULTS, epilogue=0)),
    ("train-bf16", "--precision bf16 (outputs rounded after: mlp=aux+r/-,aux+r/fused+r,...)", dict(DEFAULTS, bf16=1)),
    ("train-bf16-direct", "--precision bf16 WD_CUDA_BF16_DIRECT=1 (if cuBLASLt takes it: no +r)", dict(DEFAULTS, bf16=1, direct=1)),
]
# phase 3's comparisons by device_ms (its devcmp lines: the first run's less the second's)
COMPARE = [
    ("train-short", "train-serial", "overlap on vs off (WD_CUDA_OVERLAP)"),
    ("train-bf16", "train-short", "train-bf16 against train-short"),
    ("train-noepi", "train-short", "train-noepi against train-short"),
    ("train-bf16-direct", "train-bf16", "bf16 outputs written by cuBLASLt vs rounded after"),
    ("train-short-fused", "train-short", "the fused sparse path against the segmented"),
]


def step_time(w, v, c, ideal=False):
    stages = predict(w, v, c, ideal)[0]
    return sum(s[3] for s in stages.values()), stages


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h100", choices=sorted(GPUS))
    ap.add_argument("--bw", type=float, help="device-to-device copy, TB/s (read + write)")
    ap.add_argument("--bf16", type=float, help="bf16 GEMM rate at 8192^3, TFLOP/s (TF32 is half)")
    ap.add_argument("--tf32", type=float, help="TF32 GEMM rate at 8192^3, TFLOP/s (sets bf16 = 2x)")
    ap.add_argument("--gemm-eff", type=float, default=0.7, help="fraction of the 8192^3 rate our shapes reach (default 0.7)")
    ap.add_argument("--mem-eff", type=float, default=0.85, help="fraction of the copy bandwidth a streaming kernel reaches (scattered ones: half that)")
    ap.add_argument("--unique", type=int, default=62600, help="distinct (slot, id) keys per batch (measured: 62.6K of 426K)")
    ap.add_argument("--gap", type=float, default=1.5, help="microseconds between kernels inside a CUDA graph")
    ap.add_argument("--batch", type=int, default=16384)
    ap.add_argument("--detail", action="store_true", help="every kernel of the first variant")
    ap.add_argument("--runs", action="store_true", help="only bench/gpu_run.sh phase 3's runs (device_ms each) and its comparisons")
    ap.add_argument("--run", choices=[r[0] for r in RUNS], help="one phase 3 run: its stages and every kernel")
    a = ap.parse_args()
    c = dict(GPUS[a.gpu])
    if a.bw: c["bw"] = a.bw
    if a.bf16: c["bf16"] = a.bf16
    if a.tf32: c["bf16"] = 2 * a.tf32
    c["eff"], c["gap"], c["mem_eff"] = a.gemm_eff, a.gap, a.mem_eff
    w = workload(a.batch, a.unique)
    fl = sum(2 * a.batch * w["widths"][i] * w["widths"][i + 1] for i in range(4)) * 3
    print(f"# gpu_model: {a.gpu} copy {c['bw']:.2f} TB/s, bf16 {c['bf16']:.0f} / tf32 {c['bf16'] / 2:.0f} TFLOP/s at 8192^3, "
          f"x{c['eff']:.2f} at our shapes, streaming kernels x{c['mem_eff']:.2f} of the copy rate (scattered half that), gap {c['gap']} us, batch {a.batch}, {w['U']} distinct keys of {w['rows']}, "
          f"{w['key_bits']}-bit keys; MLP {fl / 1e9:.1f} GFLOP/step ({fl / a.batch / 1e6:.2f} MFLOP/sample)")
    order = ["embed", "mlp_fwd", "wide", "mlp_bwd", "sort", "rows", "optimizer"]

    def table(name, v, detail):
        stages, rows = predict(w, v, c)
        tot = sum(s[3] for s in stages.values())
        floor = step_time(w, v, c, ideal=True)[0]
        print(f"\n## {name}: {tot * 1e3:.3f} ms/step, {a.batch / tot / 1e6:.1f}M samples/s "
              f"(floor at the ceilings {floor * 1e3:.3f} ms, {a.batch / floor / 1e6:.1f}M/s), "
              f"{sum(s[2] for s in stages.values())} launches, {sum(s[1] for s in stages.values()) / 1e6:.0f} MB moved")
        print(f"{'stage':<10} {'GFLOP':>7} {'MB':>7} {'launches':>8} {'ms':>7}")
        for st in order:
            s = stages[st]
            print(f"{st:<10} {s[0] / 1e9:7.2f} {s[1] / 1e6:7.1f} {s[2]:8d} {s[3] * 1e3:7.3f}")
        if detail:
            print(f"\n{'stage':<10} {'kernel':<28} {'GFLOP':>7} {'MB':>7} {'us':>7}")
            for st, kn, f, b, t in rows:
                print(f"{st:<10} {kn:<28} {f / 1e9:7.2f} {b / 1e6:7.2f} {t * 1e6:7.1f}")

    if a.run:
        name, what, v = next(r for r in RUNS if r[0] == a.run)
        table(f"{name} ({what})", v, True)
        return
    if not a.runs:
        for name, v in VARIANTS + ALONE:
            table(name, v, a.detail and name == VARIANTS[0][0])
    # phase 3's runs: "run NAME: X ms" is the prediction of that run's engine-line device_ms
    print("\n## bench/gpu_run.sh phase 3: each run's device_ms (its engine line) and each comparison")
    dev = {}
    for name, what, v in RUNS:
        tot, stages = step_time(w, v, c)
        dev[name] = tot
        print(f"run {name}: {tot * 1e3:.3f} ms device_ms, {a.batch / tot / 1e6:.1f}M samples/s; sort {stages['sort'][3] * 1e3:.3f} "
              f"rows {stages['rows'][3] * 1e3:.3f} optimizer {stages['optimizer'][3] * 1e3:.3f} ms; "
              f"{sum(s[2] for s in stages.values())} launches, {sum(s[1] for s in stages.values()) / 1e6:.0f} MB ({what})")
    for x, y, what in COMPARE:
        print(f"compare {x} {y}: {(dev[x] - dev[y]) * 1e3:+.3f} ms a step, x{dev[y] / dev[x]:.3f} ({what})")


if __name__ == "__main__":
    main()
