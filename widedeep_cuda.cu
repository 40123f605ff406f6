// widedeep_cuda.cu - the CUDA backend of widedeep.h: the same Wide&Deep model
// on NVIDIA GPUs, behind the header's wd_backend_ops. wd_train's one loop
// (widedeep.h, section 15) drives it: this file holds arithmetic only. MIT licence.
//
// Build: nvcc -O3 -arch=sm_90 -DWD_HAVE_CUDA -c widedeep_cuda.cu, then link the
// host program against widedeep_cuda.o (its implementation finds wd_backend_cuda
// at link time; -DWD_HAVE_CUDA declares the CUDA-only calls)
// -lcublasLt -lcudart -ldl. This file includes widedeep.h for the
// declarations only; the host program holds the implementation. NCCL (nccl.h
// at compile time) is loaded when a communicator is first made: dlopen of
// libnccl.so.2 (the loader's path: LD_LIBRARY_PATH, the program's RUNPATH),
// or of WD_NCCL_LIB when set. Without it every single-GPU path works and the
// NCCL calls fail with WD_ERR_UNSUPPORTED saying what is missing.
//
// Contents
//   1. Checks        every CUDA / cuBLASLt / NCCL call -> wd_status with call, file, line, message
//   2. Kernels       one small launcher each, in step order; the update rules and hashes are
//                    the header's (wd_opt_*, wd_cross_hash), compiled for the device
//   3. GEMMs         cuBLASLt: descriptors, layouts and an algorithm made once per shape
//   4. Device rank   the plan's buffers (wd_plan_find), upload and download of the model
//   5. Step          forward, backward, exchange, checks, updates; a CUDA graph on one rank
//   6. Backend       submit / complete / predict / download for wd_train's loop
//   7. Communicators NCCL (loaded lazily; nonblocking communicators polled with a shared abort
//                    flag per process and the timeout), and several ranks on one GPU
//
// A step, in order: gather embeddings into x -> MLP forward (cuBLASLt, bias and
// ReLU epilogues, the ReLU mask with RELU_AUX_BIAS) -> wide logit, loss, dlogit
// (per-block partials, summed in a fixed order) -> MLP backward (GEMMs; ReLU'
// and the bias gradients in DRELU_BGRAD epilogues, else relu_grad and
// two-level column sums) -> sparse rows: one key per id occurrence, radix sort, runs of equal
// keys, each run's gradient row summed from dlogit and dx (cuda.sparse:
// segmented, runs cut into segments of at most WDC_SEG rows summed by a warp
// each, then each run's segments in order; or fused, one warp per run of at
// most WDC_HOT rows and one block per chunk of WDC_HOT_CHUNK rows of a hot
// run, no segment lists; the keys, sort and runs run on a branch forked at
// the step's start, beside the MLP, and joined before the sums:
// wdc_step_enqueue; the gather computes the wide logit too) -> with several
// ranks: the dense gradient (and its tail: loss, weight, samples, stops) is
// allreduced and every rank's merged rows allgathered in blocks of a fixed cap (a step whose rows
// do not fit is done again with the whole capacity) and merged again (rank
// order, in segments) -> checks (loss finite, every gradient finite and
// below WD__GRAD_MAX's 1e15; the stop) -> updates ->
// results into pinned memory.
// Every sum has a fixed order, so a step is deterministic (cuBLASLt's products
// and DRELU_BGRAD's bias gradients: on GPUs of one architecture and number of
// multiprocessors, cuBLAS's guarantee).
//
// Precision: the MLP's GEMMs take fp32 inputs and run on TF32 tensor cores
// (cuda.fp32: full fp32); everything else is fp32. A model of precision
// bf16 (wd_model_desc.precision) rounds what the CPU's bf16 path rounds, by
// its rule (wd_bf16_bits): the MLP input x, the weights (a bf16 copy that the
// dense update keeps current), the hidden activations, every dz the products
// read (dlogit's copy, then each layer's ReLU'd gradient); products
// accumulate in fp32 and their hidden outputs are rounded after the epilogue
// (section 3; cuda.bf16_direct: by cuBLASLt, writing bf16); the biases,
// bias gradients, dW, the first layer's dx (the embeddings' gradient), the
// deep logit, parameters and optimizer state stay fp32. Where it differs from
// the CPU: the order of the fp32 accumulation (cuBLASLt's, not oneDNN's), so
// a value within rounding noise of a bf16 rounding boundary may round the
// other way; with cuda.bf16_direct cuBLASLt rounds a bf16 product output
// to nearest even but keeps a subnormal (the CPU flushes it to 0: a positive
// activation below 1.2e-38); and with
// the epilogues the ReLU mask is taken from the fp32 pre-activation (> 0),
// the CPU's from the bf16 activation (> 0), which differ only for the same
// subnormals. tests/test_gpu.cu's gradients_bf16 bounds the effect.
//
// Settings: wd_cuda_desc (widedeep.h, section 15: each field, its default and
// its environment override, for benchmarks and tests, in one table), given to
// wdc_create in wd_backend_desc.cuda as wd_cuda_desc_resolve left them; the
// default sparse path is segmented, the path reviewed longest (fused is the
// faster design on paper and becomes the default once a GPU run has passed
// test_gpu with it and timed both, bench/gpu_run.sh phase 3). WD_NCCL_LIB,
// WD_COMM_TIMEOUT (wd_comm_timeout: the communicators', section 14) and WD_CUDA_TEST_FAIL=R:S
// (test builds only: -DWD_TESTING) rank R's S-th step fails right after its
// collectives, R:S:pre right before them, and WD_CUDA_TEST_READ_UNSAFE (test
// builds only: a download reads an unsafe replica) are read where they act.
#ifndef WD_HAVE_CUDA
#define WD_HAVE_CUDA
#endif
#define WIDEDEEP_INTERNAL   // the device contract: widedeep.h's tier 3 (section 17)
#include "widedeep.h"

#include <cublasLt.h>
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <nccl.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// The three things of CUDA a C++ header cannot provide, written through hooks so
// that tests/cudacpu/ (CUDA on the CPU for tests: an emulated device) compiles
// this very file with g++; under nvcc each is exactly the CUDA it stands for:
//   WDC_GO(k, grid, block, stream)(args)  launches k: k<<<grid, block, 0, stream>>>(args)
//   WDC_SHARED(T, name, [dims])           a __shared__ array: __shared__ T name[dims]
//   wdc_globaltimer()                     the %globaltimer register (ns)
#ifdef CUDACPU
#define WDC_GO(k, grid, block, stream) CUDACPU_GO(k, grid, block, stream)
#define WDC_SHARED(T, name, dims) CUDACPU_SHARED(T, name, dims)
#define wdc_globaltimer cudacpu_globaltimer
#else
#define WDC_GO(k, grid, block, stream) k<<<grid, block, 0, stream>>>
#define WDC_SHARED(T, name, dims) __shared__ T name dims
__device__ __forceinline__ unsigned long long wdc_globaltimer(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif
#if defined(CUDACPU) && defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// The emulated device (tests only; its memory is the host's): the slab's bytes that no buffer of the plan
// holds (WD_PLAN_REDZONE's gaps) poisoned, so that ASan reports a kernel, copy or library call running off
// one buffer into the next where it happens (tests/cudacpu/redzone.cu: a seeded overrun caught)
extern "C" void wdc_plan_poison(const wd_plan *p, char *slab) {
    for (int i = 0; i < p->n; i++) {
        int64_t end = p->e[i].offset + p->e[i].bytes, next = i + 1 < p->n ? p->e[i + 1].offset : p->total;
        if (next > end) ASAN_POISON_MEMORY_REGION(slab + end, (size_t)(next - end));
    }
}
#endif

// ---- 1. Checks --------------------------------------------------------------------------------
static wd_status wdc_fail(wd_status st, const char *fmt, ...) {
    char tmp[1024];   // arguments may point into wd_last_error()'s buffer
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    wd_set_last_error(tmp);
    return st;
}
#define WDC_CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) \
    return wdc_fail(WD_ERR_DEVICE, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                    cudaGetErrorString(e_)); } while (0)
#define WDC_LT(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) \
    return wdc_fail(WD_ERR_DEVICE, "%s failed at %s:%d: cuBLAS status %d", #call, __FILE__, __LINE__, \
                    (int)s_); } while (0)
// NCCL through dlopen (section 7 loads it): wdc_nc.X is ncclX.
struct wdc_nccl_api {
    ncclResult_t (*GetVersion)(int *);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
    ncclResult_t (*CommFinalize)(ncclComm_t);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*CommAbort)(ncclComm_t);
    const char *(*GetErrorString)(ncclResult_t);
};
static wdc_nccl_api wdc_nc;
// A call on a nonblocking communicator may answer ncclInProgress: not a failure (section 7 waits for it).
#define WDC_NCCL(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess && r_ != ncclInProgress) \
    return wdc_fail(WD_ERR_DEVICE, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                    wdc_nc.GetErrorString(r_)); } while (0)
#define WDC_TRY(expr) do { wd_status t_ = (expr); if (t_ != WD_OK) return t_; } while (0)
#define WDC_LAUNCH(name) do { cudaError_t e_ = cudaGetLastError(); if (e_ != cudaSuccess) \
    return wdc_fail(WD_ERR_DEVICE, "kernel %s failed to launch at %s:%d: %s", name, __FILE__, __LINE__, \
                    cudaGetErrorString(e_)); } while (0)

static double wdc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
// Whether a stream's work ended within `limit` seconds (a stream in error has ended).
static int wdc_drained(cudaStream_t st, double limit) {
    double t0 = wdc_now();
    for (;;) {
        if (cudaStreamQuery(st) != cudaErrorNotReady) return 1;
        if (wdc_now() - t0 > limit) return 0;
        usleep(100);
    }
}

// ---- 2. Kernels ---------------------------------------------------------------------------------
#define WDC_THREADS 256             // threads per block of every kernel over elements;
                                    // reductions size their shared arrays by it
#define WDC_WARPS (WDC_THREADS / 32)
#define WDC_SEG 32                  // most rows of one run a warp sums (hot ids: many warps, then their segments)
#define WDC_CHUNK 256               // rows per block of a column sum's first level
#define WDC_GRAD_MAX 1e15f          // the header's WD__GRAD_MAX: a larger gradient refuses the step
// Blocks of `per` for n items: at least one, so that an empty range (a model
// without slots or crosses has no sparse occurrences) is a valid launch; every
// kernel guards its range.
static unsigned wdc_blocks(int64_t n, int per) { return n > 0 ? (unsigned)((n + per - 1) / per) : 1u; }

// Step flags (wdc_state.flags, wdc_result.flags).
// WDC_REDO: a rank had more merged rows than the exchange's cap: nothing changes, the step is done
// again at once with every rank's whole capacity (wdc_settle). WDC_BAD_KEY: a sparse key outside the
// tables reached the update. WDC_APPLIED: failures raised after the step's updates ran (the replica
// holds the failed step: wdc_complete marks it unsafe).
enum { WDC_STOP = 1, WDC_BAD_LOSS = 2, WDC_BAD_GRAD = 4, WDC_BAD_PARAM = 8, WDC_TABLES_DIFFER = 16, WDC_BAD_KEY = 32,
       WDC_REDO = 64 };
#define WDC_FAILED (WDC_BAD_LOSS | WDC_BAD_GRAD | WDC_BAD_PARAM | WDC_TABLES_DIFFER | WDC_BAD_KEY)
#define WDC_APPLIED (WDC_BAD_PARAM | WDC_TABLES_DIFFER | WDC_BAD_KEY)

// What one finished step reports to the host (copied to pinned memory).
struct wdc_result {
    float tail[WD_STEP_TAIL];       // loss sum, weight sum, samples, stops (over all ranks)
    int flags, halted;              // this step's flags; failures of this or an earlier step
    long long step;                 // steps applied after it
    unsigned long long checksum;    // cuda.check_tables: this replica's checksum
};
// A device batch: pointers into one input buffer (same carve as a host wd_batch).
struct wdc_batch {
    const float *label, *weight, *dense;
    const uint32_t *ids[WD_MAX_SLOTS];
    const uint32_t *offs[WD_MAX_SLOTS];   // multi-hot: (B + 1) CSR offsets
};
// Shapes and settings every kernel reads, by value.
struct wdc_dims {
    int B, D, S, E, IN, INp, R;
    int T1, n1;                     // occurrences per sample in the one-hot region: n1 one-hot slots + crosses
    int onehot[WD_MAX_SLOTS];       // slot of one-hot position t < n1
    int nmh, mh[WD_MAX_SLOTS];      // multi-hot slots
    int MH;                         // ids per sample reserved per multi-hot slot
    int ncross, cross_a[WD_MAX_CROSSES], cross_b[WD_MAX_CROSSES];
    uint32_t cross_buckets;
    int kind[WD_MAX_SLOTS];
    int mean, wide, deep;
    long long emb_rows, wide_rows, P_mlp, Pd;
    long long rows;                 // sparse occurrences of one rank's step (N1max)
    unsigned long long sentinel;    // key of unused occurrences: above every real key
};

// Device-side state of a rank (WD_BUF_STATE).
struct wdc_state {
    long long step;                 // steps applied: Adam's t
    int halted;                     // failure flags of an earlier step: nothing changes any more
    int flags;                      // this step's
    float inv_w;                    // 1 / weight sum of this step (0: nothing to apply)
    float c1, c2;                   // Adam's bias corrections for this step
    int nruns, nsegs;               // runs and segments of the current sort
    int nhot, nchunks;              // sparse fused: hot runs and their chunks (zeroed together before wdc_fused_rows_k)
    float stop[2];                  // the host's stop (1: stop), per input buffer
    unsigned long long checksum, checksums[256];   // cuda.check_tables: this replica's, every rank's
    int post_bad;                   // the updates left a parameter non-finite (1: WDC_BAD_PARAM at the step's end)
                                    // or met a key outside the tables (2: WDC_BAD_KEY)
    int xover;                      // this step's exchange: some rank had more merged rows than the cap
    int xres[2][3];                 // per input buffer: most merged rows of a
                                    // rank, xover, the tail's flags (for the host)
    wdc_result res[2];              // per input buffer
    long long table_off[WD_MAX_SLOTS + WD_MAX_CROSSES + 1];
    wdc_dims d;                     // the kernels' shapes and batches, read through pointers (about 6 KB:
    wdc_batch b[2];                 // by value they would near the 4 KB a launch's parameters may take)
};

static_assert(sizeof(wdc_state) <= 16384,
              "wdc_state outgrew its plan entry (WD_BUF_STATE in widedeep.h's wd_plan_make)");

// A sample's ids in slot k.
__device__ __forceinline__ const uint32_t *wdc_ids(const wdc_batch &b, const wdc_dims &d, int k, int i, int *count) {
    if (d.kind[k] == WD_MULTI_HOT) { uint32_t a = b.offs[k][i]; *count = (int)(b.offs[k][i + 1] - a);
        return b.ids[k] + a; }
    *count = 1;
    return b.ids[k] + i;
}

// Column c of sample i's MLP input x = [dense | pooled embedding of every slot | zero padding].
__device__ __forceinline__ float wdc_x_at(const wdc_batch &b, const wdc_dims &d, const float *emb,
                                          const long long *table_off, int i, int c) {
    float v = 0.0f;
    if (c < d.D) v = b.dense[(size_t)i * d.D + c];
    else if (c < d.IN) {
        int k = (c - d.D) / d.E, e = (c - d.D) % d.E, cnt;
        const uint32_t *ids = wdc_ids(b, d, k, i, &cnt);
        for (int j = 0; j < cnt; j++) v += emb[(table_off[k] + ids[j]) * d.E + e];
        if (d.mean && cnt > 1) v /= (float)cnt;
    }
    return v;
}
// bf16 <-> fp32 (wd_bf16_bits: the CPU's rounding rule).
__device__ __forceinline__ uint16_t wdc_bf16(float v) { return wd_bf16_bits(__float_as_uint(v)); }
// Column c of row i of the MLP input: into x, or at precision bf16 rounded into x16 (the
// first product's input, as the CPU rounds it; the fp32 x is then not written).
__device__ __forceinline__ void wdc_x_put(float *x, uint16_t *x16, size_t at, float v) {
    if (x16) x16[at] = wdc_bf16(v);
    else x[at] = v;
}
// x (n, INp) or x16, one block per sample (cuda.no_overlap; wdc_gather_wide_k otherwise).
__global__ void wdc_gather_k(float *x, uint16_t *x16, const wdc_batch *__restrict__ bp, const float *emb,
                             const long long *table_off, const wdc_dims *__restrict__ dp, int n) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    int i = blockIdx.x;
    if (i >= n) return;
    for (int c = threadIdx.x; c < d.INp; c += blockDim.x)
        wdc_x_put(x, x16, (size_t)i * d.INp + c, wdc_x_at(b, d, emb, table_off, i, c));
}
static wd_status wdc_gather(cudaStream_t st, float *x, uint16_t *x16, const wdc_batch *b, const float *emb,
                            const long long *toff, const wdc_dims *d, int n) {
    WDC_GO(wdc_gather_k, n, 128, st)(x, x16, b, emb, toff, d, n);
    WDC_LAUNCH("gather");
    return WD_OK;
}

// Spins for ns nanoseconds (cuda.overlap_delay_us, tests only: first on
// the side branch, so that a reader of the sort's buffers not ordered behind
// the join reads them before the branch writes them, every time).
__global__ void wdc_spin_k(long long ns) {
    unsigned long long t0, t;
    t0 = wdc_globaltimer();
    do {
        __nanosleep(1000);
        t = wdc_globaltimer();
    } while ((long long)(t - t0) < ns);
}
// The wide logit of sample i (section 13's wide part; multi-hot mean-pooled
// like the deep part), in one fixed order of correctly rounded operations
// (__fadd_rn, __fmul_rn: never contracted into an FMA), so that
// wdc_gather_wide_k, which loads the terms on a warp's lanes and adds them in
// this order, gives the same float bit for bit: bias, dense products, slots,
// crosses.
__device__ __forceinline__ float wdc_slot_wide(int i, int k, const wdc_batch &b, const wdc_dims &d, const float *wide,
                                               const long long *table_off) {
    int cnt;
    const uint32_t *ids = wdc_ids(b, d, k, i, &cnt);
    float s = 0.0f;
    for (int j = 0; j < cnt; j++) s = __fadd_rn(s, wide[table_off[k] + ids[j]]);
    return (d.mean && cnt > 1) ? __fdiv_rn(s, (float)cnt) : s;
}
__device__ __forceinline__ float wdc_cross_wide(int i, int c, const wdc_batch &b, const wdc_dims &d, const float *wide,
                                                const long long *table_off) {
    return wide[table_off[d.S + c] + wd_cross_hash(b.ids[d.cross_a[c]][i], b.ids[d.cross_b[c]][i], c, d.cross_buckets)];
}
__device__ __forceinline__ float wdc_wide_logit(int i, const wdc_batch &b, const wdc_dims &d, const float *wide,
                                                const float *wdense, const long long *table_off) {
    float z = wdense[d.D];
    for (int j = 0; j < d.D; j++) z = __fadd_rn(z, __fmul_rn(wdense[j], b.dense[(size_t)i * d.D + j]));
    for (int k = 0; k < d.S; k++) z = __fadd_rn(z, wdc_slot_wide(i, k, b, d, wide, table_off));
    for (int c = 0; c < d.ncross; c++) z = __fadd_rn(z, wdc_cross_wide(i, c, b, d, wide, table_off));
    return z;
}
// z + (term u of the 32 held one per lane, for u < count), every lane adding in lane order.
__device__ __forceinline__ float wdc_warp_add_in_order(float z, float term, int count) {
    for (int u = 0; u < 32 && u < count; u++) z = __fadd_rn(z, __shfl_sync(0xffffffffu, term, u));
    return z;
}
// overlap on: the gather and the wide logit in one kernel, one warp
// per sample. x (n, INp) when x or x16 is given (wdc_x_put): the dense columns and the zero
// padding a column a lane; the pooled embeddings, when E is a multiple of 4,
// a quad of one slot's row a lane (the row read as float4: 16-byte aligned),
// the warp's 32 quads (128 consecutive columns of x, D + 4t..) then passed
// between lanes so that each store instruction writes 32 consecutive floats
// (coalesced whatever D is); else a column a lane. Every column's sum is
// wdc_x_at's, in its order (x is the same bit for bit). wlogit (n) when given:
// wdc_wide_logit of every sample, its terms loaded on the lanes (dense
// products, a slot each, a cross each) and added in its order by every lane.
// The loss kernel then reads one float a sample instead of every id again.
__global__ void wdc_gather_wide_k(float *x, uint16_t *x16, float *wlogit, const wdc_batch *__restrict__ bp,
                                  const wdc_dims *__restrict__ dp, const float *emb, const float *wide,
                                  const float *wdense, const long long *table_off, int n) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    int i = blockIdx.x * WDC_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (i >= n) return;   // the whole warp: the shuffles below have every lane
    if (x || x16) {
        size_t row = (size_t)i * d.INp;
        for (int c = lane; c < d.D; c += 32) wdc_x_put(x, x16, row + c, b.dense[(size_t)i * d.D + c]);
        for (int c = d.IN + lane; c < d.INp; c += 32) wdc_x_put(x, x16, row + c, 0.0f);
        if (d.E % 4 == 0) {
            int per = d.E / 4, quads = d.S * per;   // warp-uniform
            for (int t0 = 0; t0 < quads; t0 += 32) {
                int t = t0 + lane;
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (t < quads) {
                    int k = t / per, e0 = 4 * (t % per), cnt;
                    const uint32_t *ids = wdc_ids(b, d, k, i, &cnt);
                    for (int j = 0; j < cnt; j++) {
                        float4 u = *(const float4 *)(emb + (table_off[k] + ids[j]) * d.E + e0);
                        v.x += u.x; v.y += u.y; v.z += u.z; v.w += u.w;
                    }
                    if (d.mean && cnt > 1) { v.x /= (float)cnt; v.y /= (float)cnt; v.z /= (float)cnt;
                        v.w /= (float)cnt; }
                }
                // store s: column D + 4 t0 + 32 s + lane, component lane % 4 of lane 8 s + lane / 4's quad
                for (int s = 0; s < 4; s++) {
                    int from = 8 * s + lane / 4, col = 4 * t0 + 32 * s + lane;
                    float vx = __shfl_sync(0xffffffffu, v.x, from), vy = __shfl_sync(0xffffffffu, v.y, from);
                    float vz = __shfl_sync(0xffffffffu, v.z, from), vw = __shfl_sync(0xffffffffu, v.w, from);
                    if (col < 4 * quads)
                        wdc_x_put(x, x16, row + d.D + col,
                                  lane % 4 == 0 ? vx : lane % 4 == 1 ? vy : lane % 4 == 2 ? vz : vw);
                }
            }
        } else
            for (int c = d.D + lane; c < d.IN; c += 32)
                wdc_x_put(x, x16, row + c, wdc_x_at(b, d, emb, table_off, i, c));
    }
    if (!wlogit) return;
    float z = wdense[d.D];
    for (int j0 = 0; j0 < d.D; j0 += 32) {
        int j = j0 + lane;
        z = wdc_warp_add_in_order(z, j < d.D ? __fmul_rn(wdense[j], b.dense[(size_t)i * d.D + j]) : 0.0f, d.D - j0);
    }
    for (int k0 = 0; k0 < d.S; k0 += 32) {
        int k = k0 + lane;
        z = wdc_warp_add_in_order(z, k < d.S ? wdc_slot_wide(i, k, b, d, wide, table_off) : 0.0f, d.S - k0);
    }
    for (int c0 = 0; c0 < d.ncross; c0 += 32) {
        int c = c0 + lane;
        z = wdc_warp_add_in_order(z, c < d.ncross ? wdc_cross_wide(i, c, b, d, wide, table_off) : 0.0f, d.ncross - c0);
    }
    if (lane == 0) wlogit[i] = z;
}
static wd_status wdc_gather_wide(cudaStream_t st, float *x, uint16_t *x16, float *wlogit, const wdc_batch *b,
                                 const wdc_dims *d, const float *emb, const float *wide, const float *wdense,
                                 const long long *toff, int n) {
    if (!x && !x16 && !wlogit) return WD_OK;
    WDC_GO(wdc_gather_wide_k, wdc_blocks(n, WDC_WARPS), WDC_THREADS, st)(x, x16, wlogit, b, d, emb, wide,
                                                                         wdense, toff, n);
    WDC_LAUNCH("gather_wide");
    return WD_OK;
}
// The wide logit of sample i: wdc_gather_wide_k's when it ran (wlogit), else computed here.
__device__ __forceinline__ float wdc_wide_of(int i, const float *wlogit, const wdc_batch &b, const wdc_dims &d,
                                             const float *wide, const float *wdense, const long long *table_off) {
    return wlogit ? wlogit[i] : wdc_wide_logit(i, b, d, wide, wdense, table_off);
}
// Per sample: probability, dlogit = w (p - y); per block: partial sums of
// loss, weight, samples (w != 0) and dlogit, summed by wdc_loss_final.
__global__ void wdc_loss_k(float *prob, float *dlogit, float *part, const float *deep_out, const float *wlogit,
                           const wdc_batch *__restrict__ bp, const wdc_dims *__restrict__ dp, const float *wide,
                           const float *wdense, const long long *table_off, int n) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    WDC_SHARED(float, sh, [4][WDC_THREADS]);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float l = 0.0f, w = 0.0f, cnt = 0.0f, dl = 0.0f;
    if (i < n) {
        float z = deep_out ? deep_out[i] : 0.0f;
        if (d.wide) z += wdc_wide_of(i, wlogit, b, d, wide, wdense, table_off);
        float y = b.label[i];
        w = b.weight[i];
        float p = 1.0f / (1.0f + expf(-z));
        prob[i] = p;
        dl = w * (p - y);
        dlogit[i] = dl;
        l = w * (fmaxf(z, 0.0f) - z * y + log1pf(expf(-fabsf(z))));
        cnt = w != 0.0f ? 1.0f : 0.0f;
    }
    sh[0][threadIdx.x] = l; sh[1][threadIdx.x] = w; sh[2][threadIdx.x] = cnt; sh[3][threadIdx.x] = dl;
    __syncthreads();
    for (int s = WDC_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) for (int q = 0; q < 4; q++) sh[q][threadIdx.x] += sh[q][threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x < 4) part[(size_t)blockIdx.x * 4 + threadIdx.x] = sh[threadIdx.x][0];
}
// tail[0..2] = loss, weight, samples; tail[3] = this rank's stop;
// the wide bias gradient (sum of dlogit) into *gbias. One thread, fixed order.
__global__ void wdc_loss_final_k(float *tail, float *gbias, const float *part, int nblocks,
                                 const wdc_state *s, int slot) {
    float acc[4] = {0, 0, 0, 0};
    for (int q = 0; q < nblocks; q++) for (int j = 0; j < 4; j++) acc[j] += part[(size_t)q * 4 + j];
    tail[0] = acc[0]; tail[1] = acc[1]; tail[2] = acc[2];
    tail[3] = s->stop[slot];
    if (gbias) *gbias = acc[3];
}
static wd_status wdc_loss(cudaStream_t st, float *prob, float *dlogit, float *part, float *tail, float *gbias,
                          const float *deep_out, const float *wlogit, const wdc_batch *b, const wdc_dims *d,
                          const float *wide, const float *wdense, const long long *toff, const wdc_state *s,
                          int slot, int n) {
    unsigned nb = wdc_blocks(n, WDC_THREADS);
    WDC_GO(wdc_loss_k, nb, WDC_THREADS, st)(prob, dlogit, part, deep_out, wlogit, b, d, wide, wdense, toff, n);
    WDC_LAUNCH("loss");
    WDC_GO(wdc_loss_final_k, 1, 1, st)(tail, gbias, part, (int)nb, s, slot);
    WDC_LAUNCH("loss_final");
    return WD_OK;
}
// Probabilities only (evaluation and prediction).
__global__ void wdc_predict_k(float *prob, const float *deep_out, const float *wlogit, const wdc_batch *__restrict__ bp,
                              const wdc_dims *__restrict__ dp, const float *wide, const float *wdense,
                              const long long *table_off, int n) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float z = deep_out ? deep_out[i] : 0.0f;
    if (d.wide) z += wdc_wide_of(i, wlogit, b, d, wide, wdense, table_off);
    prob[i] = 1.0f / (1.0f + expf(-z));
}
static wd_status wdc_predict_logits(cudaStream_t st, float *prob, const float *deep_out, const float *wlogit,
                                    const wdc_batch *b, const wdc_dims *d, const float *wide, const float *wdense,
                                    const long long *toff, int n) {
    WDC_GO(wdc_predict_k, wdc_blocks(n, WDC_THREADS), WDC_THREADS, st)(prob, deep_out, wlogit, b, d, wide,
                                                                       wdense, toff, n);
    WDC_LAUNCH("predict");
    return WD_OK;
}

// Column sums of a (n, m) row-major matrix (scaled per row by s when given),
// in two levels with a fixed order: partial[chunk][j] over WDC_CHUNK rows
// (32 columns x 8 row lanes per block), then out[j] = sum of the chunks.
__global__ void wdc_colsum_part_k(float *partial, const float *a, int lda, int n, int m, const float *s) {
    WDC_SHARED(float, sh, [8][33]);
    int j = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * WDC_CHUNK;
    float acc = 0.0f;
    if (j < m)
        for (int r = r0 + threadIdx.y; r < min(n, r0 + WDC_CHUNK); r += 8)
            acc += a[(size_t)r * lda + j] * (s ? s[r] : 1.0f);
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < m) {
        float t = 0.0f;
        for (int q = 0; q < 8; q++) t += sh[q][threadIdx.x];
        partial[(size_t)blockIdx.y * m + j] = t;
    }
}
__global__ void wdc_colsum_final_k(float *out, const float *partial, int chunks, int m) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    float t = 0.0f;
    for (int c = 0; c < chunks; c++) t += partial[(size_t)c * m + j];
    out[j] = t;
}
static wd_status wdc_colsum(cudaStream_t st, float *out, float *partial, const float *a, int lda, int n, int m,
                            const float *s) {
    int chunks = (n + WDC_CHUNK - 1) / WDC_CHUNK;
    WDC_GO(wdc_colsum_part_k, dim3(wdc_blocks(m, 32), chunks), dim3(32, 8), st)(partial, a, lda, n, m, s);
    WDC_LAUNCH("colsum_part");
    WDC_GO(wdc_colsum_final_k, wdc_blocks(m, WDC_THREADS), WDC_THREADS, st)(out, partial, chunks, m);
    WDC_LAUNCH("colsum_final");
    return WD_OK;
}
__device__ __forceinline__ float wdc_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
// d[q] = a[q] > 0 ? d[q] : 0 (the ReLU's derivative; the activations a are
// fp32, or bf16 in a16 at precision bf16); with d16, the result rounded to
// bf16 there too (the next products' operand).
__global__ void wdc_relu_grad_k(float *dd, const float *a, const uint16_t *a16, uint16_t *d16, size_t count) {
    size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    int on = (a ? a[q] : wdc_f32(a16[q])) > 0.0f;
    if (!on) dd[q] = 0.0f;
    if (d16) d16[q] = wdc_bf16(on ? dd[q] : 0.0f);
}
static wd_status wdc_relu_grad(cudaStream_t st, float *dd, const float *a, const uint16_t *a16, uint16_t *d16,
                               size_t count) {
    WDC_GO(wdc_relu_grad_k, wdc_blocks((int64_t)count, WDC_THREADS), WDC_THREADS, st)(dd, a, a16, d16, count);
    WDC_LAUNCH("relu_grad");
    return WD_OK;
}
// d = bf16(s), n values (the MLP input, the weights at precision bf16).
__global__ void wdc_to_bf16_k(uint16_t *d, const float *s, size_t n) {
    size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q < n) d[q] = wdc_bf16(s[q]);
}
static wd_status wdc_to_bf16(cudaStream_t st, uint16_t *d, const float *s, size_t n) {
    WDC_GO(wdc_to_bf16_k, wdc_blocks((int64_t)n, WDC_THREADS), WDC_THREADS, st)(d, s, n);
    WDC_LAUNCH("to_bf16");
    return WD_OK;
}
// The top layer's bias gradient, the sum of dlogit (one block, a fixed
// order), and at precision bf16 dlogit rounded to bf16 into dz16: the top
// layer's dz, as the CPU rounds it.
#define WDC_TOP_THREADS 1024
__global__ void wdc_top_k(float *gb, uint16_t *dz16, const float *dlogit, int n) {
    WDC_SHARED(float, sh, [WDC_TOP_THREADS]);
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += WDC_TOP_THREADS) {
        float v = dlogit[i];
        acc += v;
        if (dz16) dz16[i] = wdc_bf16(v);
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = WDC_TOP_THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *gb = sh[0];
}

// Sparse occurrences. The one-hot region holds B x T1 (q = i T1 + t: one-hot
// slots, then crosses); then each multi-hot slot j owns B x MH positions, of
// which its batch uses offs[B]. Unused positions get the sentinel key.
__device__ __forceinline__ int wdc_find_sample(const uint32_t *offs, int n, uint32_t p) {   // largest i with
                                                                                            // offs[i] <= p
    int lo = 0, hi = n - 1;
    while (lo < hi) { int mid = (lo + hi + 1) / 2; if (offs[mid] <= p) lo = mid; else hi = mid - 1; }
    return lo;
}
// Where occurrence q comes from: sample, slot table (or cross), and the pooling scale.
struct wdc_occ { int i, table, valid; float scale; };
__device__ __forceinline__ wdc_occ wdc_occ_at(long long q, const wdc_batch &b, const wdc_dims &d) {
    wdc_occ o;
    o.valid = 1; o.scale = 1.0f;
    long long one = (long long)d.B * d.T1;
    if (q < one) {
        o.i = (int)(q / d.T1);
        int t = (int)(q % d.T1);
        o.table = t < d.n1 ? d.onehot[t] : d.S + (t - d.n1);
        return o;
    }
    long long per = (long long)d.B * d.MH;
    int j = (int)((q - one) / per);
    uint32_t p = (uint32_t)((q - one) % per);
    int k = d.mh[j];
    const uint32_t *offs = b.offs[k];
    if (p >= offs[d.B]) { o.valid = 0; o.i = 0; o.table = k; return o; }
    o.i = wdc_find_sample(offs, d.B, p);
    o.table = k;
    int cnt = (int)(offs[o.i + 1] - offs[o.i]);
    if (d.mean && cnt > 1) o.scale = 1.0f / (float)cnt;
    return o;
}
__global__ void wdc_keys_k(unsigned long long *key, uint32_t *occ, const wdc_batch *__restrict__ bp,
                           const wdc_dims *__restrict__ dp, const long long *table_off) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= d.rows) return;
    wdc_occ o = wdc_occ_at(q, b, d);
    unsigned long long k = d.sentinel;
    if (o.valid) {
        long long one = (long long)d.B * d.T1;
        uint32_t id;
        if (q >= one) id = b.ids[o.table][(q - one) % ((long long)d.B * d.MH)];
        else if (o.table < d.S) id = b.ids[o.table][o.i];
        else { int c = o.table - d.S; id = wd_cross_hash(b.ids[d.cross_a[c]][o.i], b.ids[d.cross_b[c]][o.i], c,
                                                         d.cross_buckets); }
        k = (unsigned long long)(table_off[o.table] + id);
    }
    key[q] = k;
    occ[q] = (uint32_t)q;
}
static wd_status wdc_keys(cudaStream_t st, unsigned long long *key, uint32_t *occ, const wdc_batch *b,
                          const wdc_dims *d, long long rows, const long long *toff) {
    WDC_GO(wdc_keys_k, wdc_blocks(rows, WDC_THREADS), WDC_THREADS, st)(key, occ, b, d, toff);
    WDC_LAUNCH("keys");
    return WD_OK;
}
// Runs cut into segments of at most WDC_SEG rows: counts per run, then the
// run of every segment (scan in between); nsegs into the state.
__global__ void wdc_seg_count_k(int *seg_cnt, const int *run_cnt, const unsigned long long *ukey, const wdc_state *s,
                                int n, unsigned long long sentinel) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    seg_cnt[r] = (r < s->nruns && ukey[r] != sentinel) ? (run_cnt[r] + WDC_SEG - 1) / WDC_SEG : 0;
}
__global__ void wdc_seg_fill_k(int *seg_run, const int *seg_cnt, const int *seg_first, wdc_state *s, int n) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    for (int j = 0; j < seg_cnt[r]; j++) seg_run[seg_first[r] + j] = r;
    if (r == n - 1) s->nsegs = seg_first[r] + seg_cnt[r];
}
// One warp per segment: the sum of its occurrences' gradient rows (R floats:
// wide, then E deep) in sorted (= occurrence) order, from dlogit and dx.
__global__ void wdc_seg_sum_occ_k(float *seg_rows, const int *seg_run, const int *seg_first, const int *run_off,
                                  const int *run_cnt, const uint32_t *occ_s, const wdc_state *s,
                                  const wdc_batch *__restrict__ bp, const wdc_dims *__restrict__ dp,
                                  const float *dlogit, const float *dx) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    int seg = blockIdx.x * WDC_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (seg >= s->nsegs) return;
    int r = seg_run[seg], j0 = run_off[r] + (seg - seg_first[r]) * WDC_SEG,
        j1 = min(j0 + WDC_SEG, run_off[r] + run_cnt[r]);
    for (int col = lane; col < d.R; col += 32) {
        float acc = 0.0f;
        for (int j = j0; j < j1; j++) {
            wdc_occ o = wdc_occ_at(occ_s[j], b, d);
            if (col == 0) acc += d.wide ? dlogit[o.i] * o.scale : 0.0f;
            else if (o.table < d.S) acc += dx[(size_t)o.i * d.INp + d.D + o.table * d.E + (col - 1)] * o.scale;
        }
        seg_rows[(size_t)seg * d.R + col] = acc;
    }
}
// The same from rows gathered from every rank: occurrence q is row q of `in`.
__global__ void wdc_seg_sum_rows_k(float *seg_rows, const int *seg_run, const int *seg_first, const int *run_off,
                                   const int *run_cnt, const uint32_t *occ_s, const wdc_state *s,
                                   const float *in, int R) {
    int seg = blockIdx.x * WDC_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (seg >= s->nsegs) return;
    int r = seg_run[seg], j0 = run_off[r] + (seg - seg_first[r]) * WDC_SEG,
        j1 = min(j0 + WDC_SEG, run_off[r] + run_cnt[r]);
    for (int col = lane; col < R; col += 32) {
        float acc = 0.0f;
        for (int j = j0; j < j1; j++) acc += in[(size_t)occ_s[j] * R + col];
        seg_rows[(size_t)seg * R + col] = acc;
    }
}
// A merged row's value as the updates read it: with check, scaled by the
// batch's 1 / weight sum and checked as wdc_dense_check_k does (a bad value
// flags the step unless it is already flagged: a stop stays a clean
// stop; nothing is checked without weight); without, the plain sum (the
// exchange sends it, and the receiver scales and checks).
__device__ __forceinline__ float wdc_row_value(float acc, wdc_state *s, int check) {
    if (check) {
        acc *= s->inv_w;
        if (!s->flags && s->inv_w != 0.0f && !(fabsf(acc) <= WDC_GRAD_MAX)) atomicOr(&s->flags, WDC_BAD_GRAD);
    }
    return acc;
}
// One warp per run: its segments summed in order into rows[r] (wdc_row_value).
__global__ void wdc_run_merge_k(float *rows, const float *seg_rows, const int *seg_first, const int *seg_cnt,
                                const unsigned long long *ukey, wdc_state *s, int R, unsigned long long sentinel,
                                int check) {
    int r = blockIdx.x * WDC_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= s->nruns || ukey[r] == sentinel) return;
    for (int col = lane; col < R; col += 32) {
        float acc = 0.0f;
        for (int q = seg_first[r]; q < seg_first[r] + seg_cnt[r]; q++) acc += seg_rows[(size_t)q * R + col];
        rows[(size_t)r * R + col] = wdc_row_value(acc, s, check);
    }
}

// The fused embedding backward (cuda.sparse fused): every run's merged
// row straight from dlogit and dx, no segments. A run of at most WDC_HOT
// occurrences is summed by one warp (wdc_fused_rows_k); a longer (hot) one is
// cut into chunks of WDC_HOT_CHUNK occurrences, each summed by one block whose
// warps take equal contiguous shares (wdc_hot_chunk_k), and the chunks are
// summed in order (wdc_hot_merge_k). Every sum runs in occurrence order with
// a fixed split, so the rows are the same bits every run (the atomics below
// only choose where a hot run's chunks are stored, never what they hold).
// The updates stay a kernel of their own (wdc_sparse_apply_k): a step is
// applied whole or not at all, so every row's check must be done before the
// first update, a grid-wide barrier; a kernel boundary is the cheapest one
// (the merged rows, U x R floats, cross it).
#define WDC_HOT 128                 // the longest run one warp sums (4 rounds of 32 occurrences)
#define WDC_HOT_CHUNK 1024          // occurrences of a hot run per block (128 per warp)
// Lane l's column c0 + l of the sum of sorted occurrences [j0, j1), in
// order: 32 occurrences a round, each found once (lane t finds the t-th and
// passes it on), their 32 loads issued before the adds; a shorter round (a
// run's last; most runs are one occurrence) passes on only the nb it has, 4
// loads at a time. Each term is rounded before it is added (__fmul_rn: never
// an FMA), so both kinds of round give the same bits. Every lane of the warp
// must call it (shuffles; nb is the same on every lane).
__device__ __forceinline__ float wdc_occ_term(int t, int mi, int mt, float ms, int col, const wdc_dims &d,
                                              const float *dlogit, const float *dx) {
    int it = __shfl_sync(0xffffffffu, mi, t), tt = __shfl_sync(0xffffffffu, mt, t);
    float st = __shfl_sync(0xffffffffu, ms, t);
    if (col >= d.R) return 0.0f;
    if (col == 0) return d.wide ? __fmul_rn(dlogit[it], st) : 0.0f;
    return tt < d.S ? __fmul_rn(dx[(size_t)it * d.INp + d.D + tt * d.E + (col - 1)], st) : 0.0f;
}
__device__ float wdc_occ_sum(int j0, int j1, int c0, const uint32_t *occ_s, const wdc_batch &b, const wdc_dims &d,
                             const float *dlogit, const float *dx) {
    int lane = threadIdx.x % 32, col = c0 + lane;
    float acc = 0.0f;
    for (int base = j0; base < j1; base += 32) {
        int nb = min(32, j1 - base), mi = 0, mt = 0;
        float ms = 0.0f;
        if (lane < nb) {
            wdc_occ o = wdc_occ_at(occ_s[base + lane], b, d);
            mi = o.i; mt = o.table; ms = o.valid ? o.scale : 0.0f;
        }
        if (nb == 32) {
            float x[32];
#pragma unroll
            for (int t = 0; t < 32; t++) x[t] = wdc_occ_term(t, mi, mt, ms, col, d, dlogit, dx);
#pragma unroll
            for (int t = 0; t < 32; t++) acc += x[t];
        } else
            for (int t0 = 0; t0 < nb; t0 += 4) {
                float x[4];
#pragma unroll
                for (int u = 0; u < 4; u++)
                    x[u] = t0 + u < nb ? wdc_occ_term(t0 + u, mi, mt, ms, col, d, dlogit, dx) : 0.0f;
#pragma unroll
                for (int u = 0; u < 4; u++) if (t0 + u < nb) acc += x[u];
            }
    }
    return acc;
}
// One warp per run (grid-stride): a short run's row into rows[r]
// (wdc_row_value); a hot run is listed (hot: run, first chunk, chunks) and
// its chunks (run, index) reserved for wdc_hot_chunk_k. s->nhot and
// s->nchunks are 0 before the launch.
__global__ void wdc_fused_rows_k(float *rows, int4 *hot, int2 *chunks, const unsigned long long *ukey,
                                 const int *run_off, const int *run_cnt, const uint32_t *occ_s, wdc_state *s,
                                 const wdc_batch *__restrict__ bp, const wdc_dims *__restrict__ dp, const float *dlogit,
                                 const float *dx, int check) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    int lane = threadIdx.x % 32, nruns = s->nruns, nw = gridDim.x * WDC_WARPS;
    for (int r = blockIdx.x * WDC_WARPS + threadIdx.x / 32; r < nruns; r += nw) {   // r, and so every branch below,
                                                                                    // is the same on all lanes
        if (ukey[r] == d.sentinel) continue;
        int j0 = run_off[r], cnt = run_cnt[r];
        if (cnt > WDC_HOT) {
            int nc = (cnt + WDC_HOT_CHUNK - 1) / WDC_HOT_CHUNK, first = 0, h = 0;
            if (lane == 0) { first = atomicAdd(&s->nchunks, nc); h = atomicAdd(&s->nhot, 1); }
            first = __shfl_sync(0xffffffffu, first, 0);
            h = __shfl_sync(0xffffffffu, h, 0);
            if (lane == 0) hot[h] = make_int4(r, first, nc, 0);
            for (int c = lane; c < nc; c += 32) chunks[first + c] = make_int2(r, c);
            continue;
        }
        for (int c0 = 0; c0 < d.R; c0 += 32) {
            float acc = wdc_occ_sum(j0, j0 + cnt, c0, occ_s, b, d, dlogit, dx);
            if (c0 + lane < d.R) rows[(size_t)r * d.R + c0 + lane] = wdc_row_value(acc, s, check);
        }
    }
}
// One block per chunk of a hot run (grid-stride): warp w sums the w-th of
// WDC_WARPS equal contiguous shares, then warp 0 adds the shares in warp
// order into part[e] (R floats; e: the chunk's place in the list).
__global__ void wdc_hot_chunk_k(float *part, const int2 *chunks, const int *run_off, const int *run_cnt,
                                const uint32_t *occ_s, const wdc_state *s, const wdc_batch *__restrict__ bp,
                                const wdc_dims *__restrict__ dp, const float *dlogit, const float *dx) {
    const wdc_batch &b = *bp;
    const wdc_dims &d = *dp;
    WDC_SHARED(float, sh, [WDC_WARPS][32]);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, n = s->nchunks;
    for (int e = blockIdx.x; e < n; e += gridDim.x) {   // e is the same in the whole block: the
                                                        // barriers below are reached by all
        int2 ch = chunks[e];
        int end = run_off[ch.x] + run_cnt[ch.x], a = run_off[ch.x] + ch.y * WDC_HOT_CHUNK,
            len = min(WDC_HOT_CHUNK, end - a);
        int w0 = a + len * w / WDC_WARPS, w1 = a + len * (w + 1) / WDC_WARPS;
        for (int c0 = 0; c0 < d.R; c0 += 32) {
            sh[w][lane] = wdc_occ_sum(w0, w1, c0, occ_s, b, d, dlogit, dx);
            __syncthreads();
            if (w == 0 && c0 + lane < d.R) {
                float t = 0.0f;
                for (int q = 0; q < WDC_WARPS; q++) t += sh[q][lane];
                part[(size_t)e * d.R + c0 + lane] = t;
            }
            __syncthreads();
        }
    }
}
// One warp per hot run (grid-stride): its chunks' sums in chunk order into
// rows[run] (wdc_row_value).
__global__ void wdc_hot_merge_k(float *rows, const int4 *hot, const float *part, wdc_state *s, int R, int check) {
    int lane = threadIdx.x % 32, n = s->nhot, nw = gridDim.x * WDC_WARPS;
    for (int h = blockIdx.x * WDC_WARPS + threadIdx.x / 32; h < n; h += nw) {
        int4 e = hot[h];
        for (int col = lane; col < R; col += 32) {
            float acc = 0.0f;
            for (int c = 0; c < e.z; c++) acc += part[(size_t)(e.y + c) * R + col];
            rows[(size_t)e.x * R + col] = wdc_row_value(acc, s, check);
        }
    }
}
// One warp per run: FTRL on the wide weight (col 0), the deep rule on the
// embedding row (cols 1..E). Nothing when the step is flagged or halted
// (flags set by earlier kernels only: every update of a step is applied
// whole, or none is). A non-finite result marks post_bad, which no update
// reads, so the step is applied in full and deterministically, as on the
// CPU, and reported at its end (WDC_BAD_PARAM: the model is unusable).
__global__ void wdc_sparse_apply_k(const float *rows, const unsigned long long *ukey, wdc_state *s,
                                   const wdc_dims *__restrict__ dp, wd_opt o, float *wide, float *wz, float *wn,
                                   float *emb, float *es1, float *es2) {
    const wdc_dims &d = *dp;
    int r = blockIdx.x * WDC_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= s->nruns || ukey[r] == d.sentinel || s->flags || s->halted || s->inv_w == 0.0f) return;
    long long key = (long long)ukey[r];
    // a key outside the tables: only an exchange cut off by the communicator's failure sends one
    // (its rank's wait then fails, and the replica is unsafe): never an access outside them
    if (key < 0 || key >= d.wide_rows) { atomicOr(&s->post_bad, 2); return; }
    o.c1 = s->c1; o.c2 = s->c2;
    for (int col = lane; col < d.R; col += 32) {
        float g = rows[(size_t)r * d.R + col], *w;
        if (col == 0) {
            if (!d.wide) continue;
            w = &wide[key];
            wd_opt_ftrl(w, &wz[key], &wn[key], g, &o);
        } else {
            if (key >= d.emb_rows) continue;
            size_t at = (size_t)key * d.E + (col - 1);
            w = &emb[at];
            wd_opt_deep(&o, w, &es1[at], es2 ? &es2[at] : NULL, g);
        }
        if (!isfinite(*w)) atomicOr(&s->post_bad, 1);
    }
}

// Before the checks: 1 / weight sum, the stop, a finite loss, Adam's corrections.
// What a step's allreduced tail says, the same on every rank: a stop, else a
// non-finite loss (0: none). wdc_step_begin_k's flags and the host's reading
// of them (wdc_settle: no such step is done again) come from this one function.
__device__ __forceinline__ int wdc_tail_flags(const float *tail) {
    if (tail[3] > 0.0f) return WDC_STOP;
    if (!isfinite(tail[0])) return WDC_BAD_LOSS;
    return 0;
}
__global__ void wdc_step_begin_k(wdc_state *s, const float *tail, float b1, float b2) {
    int f = wdc_tail_flags(tail);
    if (!f && s->xover) f = WDC_REDO;   // rows are missing: the step is done again (a stop or a bad loss needs no rows)
    s->flags = f;
    s->post_bad = 0;
    s->inv_w = tail[1] > 0.0f ? 1.0f / tail[1] : 0.0f;
    wd_opt o;
    o.b1 = b1; o.b2 = b2;
    wd_opt_at_step(&o, s->step);
    s->c1 = o.c1; s->c2 = o.c2;
}
// Every dense gradient value of the step, scaled, finite and below the limit.
__global__ void wdc_dense_check_k(wdc_state *s, const float *g, long long P) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P || s->flags || s->inv_w == 0.0f) return;
    if (!(fabsf(g[i] * s->inv_w) <= WDC_GRAD_MAX)) atomicOr(&s->flags, WDC_BAD_GRAD);
}
// The dense update over the flat device buffer: the deep rule for the MLP,
// FTRL for the wide dense weights and bias (flags and post_bad: as above);
// at precision bf16 the MLP weights' bf16 copy lp follows them.
__global__ void wdc_dense_update_k(float *w, float *s1, float *s2, const float *g, wdc_state *s, long long P_mlp,
                                   long long P, int wide, wd_opt o, uint16_t *lp) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P || s->flags || s->halted || s->inv_w == 0.0f) return;
    float gi = g[i] * s->inv_w;
    o.c1 = s->c1; o.c2 = s->c2;
    if (i < P_mlp) {
        wd_opt_deep(&o, &w[i], &s1[i], &s2[i], gi);
        if (lp) lp[i] = wdc_bf16(w[i]);
    } else if (wide) wd_opt_ftrl(&w[i], &s1[i], &s2[i], gi, &o);
    else return;
    if (!isfinite(w[i])) atomicOr(&s->post_bad, 1);
}
// After the updates: the step counts unless it was a stop or failed; a
// failure halts every later step; the results for the host.
__global__ void wdc_step_end_k(wdc_state *s, const float *tail, int slot) {
    if (s->post_bad & 1) s->flags |= WDC_BAD_PARAM;
    if (s->post_bad & 2) s->flags |= WDC_BAD_KEY;
    int was = s->halted;
    if (s->flags & WDC_FAILED) s->halted |= s->flags & WDC_FAILED;
    if (!(s->flags & (WDC_STOP | WDC_FAILED | WDC_REDO)) && !was) s->step++;
    wdc_result *r = &s->res[slot];
    for (int q = 0; q < WD_STEP_TAIL; q++) r->tail[q] = tail[q];
    r->flags = s->flags; r->halted = s->halted; r->step = s->step; r->checksum = s->checksum;
}
// Several ranks: this rank's merged rows into its send block of `cap` rows
// (a 16-byte header: its count of merged rows, which may exceed the cap, R,
// cap; then keys, rows; unused keys the sentinel), and the gathered blocks
// back into one key list (occurrence q = rank * cap + j: in key order, the
// occurrences of a key stay in rank order whatever the cap, so the sums are
// the same bit for bit). A received block starts at a multiple of 4 bytes
// only (its size is 16 + (8 + 4 R) cap), so keys are read as two 32-bit halves.
__global__ void wdc_pack_k(char *send, const float *rows, const unsigned long long *ukey, const wdc_state *s,
                           long long cap, int R, unsigned long long sentinel) {
    long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int n = s->nruns;   // the sentinel sorts last: its run (unused occurrences) is no row
    if (n > 0 && ukey[n - 1] == sentinel) n--;
    if (j == 0) { uint32_t *h = (uint32_t *)send; h[0] = (uint32_t)n; h[1] = (uint32_t)R;
        h[2] = (uint32_t)cap; h[3] = 0; }   // also when cap is 0
    if (j >= cap) return;
    unsigned long long *keys = (unsigned long long *)(send + 16);   // send: 256-byte aligned
    float *out = (float *)(send + 16 + 8 * cap);
    int valid = j < n;
    keys[j] = valid ? ukey[j] : sentinel;
    for (int c = 0; c < R; c++) out[(size_t)j * R + c] = valid ? rows[(size_t)j * R + c] : 0.0f;
}
// Every rank's count of merged rows (the blocks' headers) against the cap:
// the most, and whether some rank's did not fit (the step is then done
// again); and the allreduced tail's flags (wdc_tail_flags), for the host.
__global__ void wdc_exchange_check_k(wdc_state *s, const char *recv, const float *tail, long long cap, int ranks,
                                     int R, int slot) {
    size_t block = 16 + (8 + 4 * (size_t)R) * (size_t)cap;
    unsigned most = 0;
    for (int q = 0; q < ranks; q++) most = max(most, *(const uint32_t *)(recv + (size_t)q * block));
    s->xover = (long long)most > cap;
    s->xres[slot][0] = (int)most; s->xres[slot][1] = s->xover; s->xres[slot][2] = wdc_tail_flags(tail);
}
__global__ void wdc_unpack_k(unsigned long long *key, uint32_t *occ, float *rows_out, const char *recv, long long cap,
                             int ranks, int R) {
    long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= cap * ranks) return;
    long long r = q / cap, j = q % cap;
    size_t block = 16 + (8 + 4 * (size_t)R) * (size_t)cap;
    const char *blk = recv + (size_t)r * block;
    const uint32_t *half = (const uint32_t *)(blk + 16) + 2 * j;   // little-endian: low word first
    key[q] = (unsigned long long)half[0] | (unsigned long long)half[1] << 32;
    occ[q] = (uint32_t)q;
    const float *in = (const float *)(blk + 16 + 8 * cap);
    for (int c = 0; c < R; c++) rows_out[(size_t)q * R + c] = in[(size_t)j * R + c];
}
// cuda.check_tables: an order-independent checksum (integer sums of the bit
// patterns times a position hash), so identical replicas give equal sums.
__global__ void wdc_checksum_k(unsigned long long *acc, const float *x, long long n, unsigned long long salt) {
    unsigned long long s = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        uint32_t u = __float_as_uint(x[i]);
        s += (unsigned long long)u * (wd_mix64((unsigned long long)i ^ salt) | 1ull);
    }
    atomicAdd(acc, s);
}
// Gathered checksums (ranks of them) all equal? Flags the step otherwise.
__global__ void wdc_checksum_cmp_k(wdc_state *s, const unsigned long long *all, int ranks) {
    for (int q = 1; q < ranks; q++)
        if (all[q] != all[0]) s->flags |= WDC_TABLES_DIFFER;
}
// Sums chunk [a, e) of every rank's buffer in rank order into out (same-GPU ranks).
struct wdc_ptrs { const float *p[256]; };
__global__ void wdc_sum_ranks_k(float *out, wdc_ptrs in, int n, size_t a, size_t e) {
    size_t q = a + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= e) return;
    float t = 0.0f;
    for (int r = 0; r < n; r++) t += in.p[r][q];
    out[q] = t;
}

// ---- 3. GEMMs -----------------------------------------------------------------------------------
// Row-major C (M, N) = op(A) (M, K) * op(B) (K, N) [epilogue], as the
// column-major C^T = op(B)^T op(A)^T that cuBLASLt computes: its D has N
// rows (our columns), so a bias or a bias gradient holds one value per column
// of C, and a ReLU mask N bits per row of C (cuBLASLt's leading dimension in
// bits: a multiple of 128, the plan's WD_BUF_RELU_MASK). Made once per shape
// and buffers: descriptors, layouts and the heuristic's best algorithm for the
// workspace we have and the alignment the buffers really have (cuBLASLt's
// heuristic assumes 256-byte aligned matrices unless told; the device layout
// puts layer l > 0's weights and biases at any multiple of 4 bytes). A plan
// is offered epilogues in order and takes the first the heuristic has an
// algorithm for (one with a bias or bias gradient only when that vector is
// 16-byte aligned); the last offer is none, and then small kernels do the same
// arithmetic after the product (wdc_bias_act_k here; ReLU' and the column
// sums in wdc_step_enqueue). The epilogues:
//   BIAS, RELU_BIAS   forward: the product + bias (fp32), then ReLU
//   RELU_AUX_BIAS     forward, epilogues on: the same, and the ReLU mask into aux (bit = pre-activation > 0:
//                     assumed, cuBLASLt says "ReLu bit-mask"; > 0 and >= 0 differ only at exactly 0)
//   DRELU_BGRAD       backward, epilogues on, layer l > 0's da = dz W, when layer l - 1's forward wrote
//                     its mask: zeroes da where the mask bit is 0 (ReLU'), and writes the column sums of the
//                     result, layer l - 1's bias gradient (fp32), to the bias pointer
// Precision bf16: A and B are bf16, the products accumulate in fp32
// (CUBLAS_COMPUTE_32F); the bias and the bias gradient stay fp32, as the
// CPU's oneDNN path adds and sums them. A hidden layer's bf16 output (the
// activation, the ReLU'd gradient) is by default written in fp32 by the
// epilogue, into an fp32 buffer, and rounded by wdc_to_bf16_k (the rule of
// wd_bf16_bits) into the bf16 one: cuBLASLt documents an fp32 bias (and bias
// gradient) with an fp32 output only; for a bf16 output its bias type is
// bf16. cuda.bf16_direct offers first the epilogue writing the bf16
// output itself with the fp32 bias (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE):
// 6 bytes less an element, but a combination the documentation does not list
// (cuBLASLt may refuse it: then the fp32 offers follow; or ignore the bias
// type; and whether DRELU_BGRAD sums the ReLU'd gradient before or after its
// rounding is not documented): tests/test_gpu.cu's gradients_bf16 runs both
// and the report's mlp= says which each layer got (bench/GPU_RUN.md).
enum { WDC_EPI_NONE, WDC_EPI_BIAS, WDC_EPI_RELU_BIAS, WDC_EPI_RELU_AUX_BIAS, WDC_EPI_DRELU_BGRAD };
struct wdc_mm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    int M, N, K, epi;               // epi: the epilogue that runs (WDC_EPI_*)
    const void *A, *B;              // the buffers every run of the plan uses
    void *C;
    const float *bias_after;        // bias added by wdc_bias_act_k after the product (NULL: none or fused)
    int relu_after;
    uint16_t *out16;                // precision bf16, C an fp32 scratch: the result
                                    // rounded into out16 (with bias_after by
                                    // wdc_bias_act_k, else after a fused epilogue by wdc_to_bf16_k)
};
// What a product is (row-major operands as above; bias: the bias, or for
// DRELU_BGRAD the bias gradient written; aux: the ReLU mask, aux_ld bits a row of C).
struct wdc_mm_args {
    cublasComputeType_t compute;
    cudaDataType_t in_t;            // A's and B's type
    int ta, tb, M, N, K;
    const void *A, *B;
    const float *bias;
    const void *aux;
    int64_t aux_ld;
};
// One offer: an epilogue and the output it writes (buffer and type).
struct wdc_mm_offer { int epi; void *C; cudaDataType_t ct; };
static void wdc_mm_free(wdc_mm *p) {
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}
// The largest power of two (at most 256) that divides the address.
static uint32_t wdc_align(const void *ptr) {
    uintptr_t a = (uintptr_t)ptr;
    uint32_t al = 1;
    while (al < 256 && a % (2 * (uintptr_t)al) == 0) al *= 2;
    return al;
}
// Descriptors and layouts of one offer.
static wd_status wdc_mm_desc(wdc_mm *p, const wdc_mm_args *a, const wdc_mm_offer *o) {
    cublasOperation_t opA = a->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opB = a->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    WDC_LT(cublasLtMatmulDescCreate(&p->desc, a->compute, CUDA_R_32F));
    WDC_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
    WDC_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
    if (o->epi != WDC_EPI_NONE) {
        static const cublasLtEpilogue_t lt[5] = {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS,
                                                 CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_RELU_AUX_BIAS,
                                                 CUBLASLT_EPILOGUE_DRELU_BGRAD};
        cublasLtEpilogue_t epi = lt[o->epi];
        const void *bias = a->bias;
        WDC_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        WDC_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        if (o->ct != CUDA_R_32F) {   // by default the bias (gradient) has C's type; ours is fp32
            int32_t bt = CUDA_R_32F;
            WDC_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        }
        if (o->epi == WDC_EPI_RELU_AUX_BIAS || o->epi == WDC_EPI_DRELU_BGRAD) {
            const void *aux = a->aux;
            int64_t ld = a->aux_ld;
            WDC_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                                  sizeof aux));
            WDC_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
        }
    }
    int M = a->M, N = a->N, K = a->K;
    WDC_LT(cublasLtMatrixLayoutCreate(&p->la, a->in_t, a->tb ? K : N, a->tb ? N : K, a->tb ? K : N));
    WDC_LT(cublasLtMatrixLayoutCreate(&p->lb, a->in_t, a->ta ? M : K, a->ta ? K : M, a->ta ? M : K));
    WDC_LT(cublasLtMatrixLayoutCreate(&p->lc, o->ct, N, M, N));
    return WD_OK;
}
// The plan of the first offer the heuristic has an algorithm for (the last
// offer should be WDC_EPI_NONE).
static wd_status wdc_mm_make(wdc_mm *p, cublasLtHandle_t lt, const wdc_mm_args *a, const wdc_mm_offer *offers,
                             int noffers, size_t ws_bytes) {
    uint64_t ws = ws_bytes;
    cublasStatus_t s2 = CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < noffers; i++) {
        const wdc_mm_offer *o = &offers[i];
        if (o->epi != WDC_EPI_NONE && (!a->bias || wdc_align(a->bias) < 16)) continue;
        if ((o->epi == WDC_EPI_RELU_AUX_BIAS || o->epi == WDC_EPI_DRELU_BGRAD)
            && (!a->aux || a->aux_ld % 128 != 0 || a->aux_ld < a->N)) continue;
        // cuBLASLt's A is our B, its B our A; C and D are both our C
        uint32_t al[4] = {wdc_align(a->B), wdc_align(a->A), wdc_align(o->C), wdc_align(o->C)};
        static const cublasLtMatmulPreferenceAttributes_t which[4] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
        memset(p, 0, sizeof *p);
        p->M = a->M; p->N = a->N; p->K = a->K; p->epi = o->epi; p->A = a->A; p->B = a->B; p->C = o->C;
        wd_status ds = wdc_mm_desc(p, a, o);
        if (ds != WD_OK) {   // an attribute this cuBLASLt refuses (an epilogue offer: the next one)
            wdc_mm_free(p);
            if (o->epi == WDC_EPI_NONE) return ds;
            continue;
        }
        cublasLtMatmulPreference_t pref;
        WDC_LT(cublasLtMatmulPreferenceCreate(&pref));
        s2 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
        for (int q = 0; q < 4 && s2 == CUBLAS_STATUS_SUCCESS; q++)
            s2 = cublasLtMatmulPreferenceSetAttribute(pref, which[q], &al[q], sizeof al[q]);
        cublasLtMatmulHeuristicResult_t res;
        int found = 0;
        if (s2 == CUBLAS_STATUS_SUCCESS)
            s2 = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &found);
        cublasLtMatmulPreferenceDestroy(pref);
        if (s2 == CUBLAS_STATUS_SUCCESS && found >= 1) { p->algo = res.algo; return WD_OK; }
        wdc_mm_free(p);   // no algorithm with this epilogue: the next offer
    }
    return wdc_fail(WD_ERR_DEVICE,
                    "cuBLASLt has no algorithm for a %dx%dx%d GEMM (%s inputs, alignment %u/%u bytes, status %d)", a->M,
                    a->N, a->K, a->in_t == CUDA_R_16BF ? "bf16" : "fp32", wdc_align(a->B), wdc_align(a->A), (int)s2);
}
// c[q] = c[q] + bias[q % n] (then ReLU), or at precision bf16 that rounded
// into out16[q]: the epilogue, when cuBLASLt cannot fuse it.
__global__ void wdc_bias_act_k(float *c, uint16_t *out16, const float *bias, size_t count, int n, int relu) {
    size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    float v = c[q] + bias[q % (size_t)n];
    if (relu) v = fmaxf(v, 0.0f);
    if (out16) out16[q] = wdc_bf16(v);
    else c[q] = v;
}
static wd_status wdc_mm_run(const wdc_mm *p, cublasLtHandle_t lt, void *ws, size_t ws_bytes, cudaStream_t st) {
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = cublasLtMatmul(lt, p->desc, &one, p->B, p->la, p->A, p->lb, &zero, p->C, p->lc, p->C, p->lc,
                                      &p->algo, ws, ws_bytes, st);
    if (s != CUBLAS_STATUS_SUCCESS)
        return wdc_fail(WD_ERR_DEVICE, "cublasLtMatmul (%dx%dx%d, epilogue %d) failed: status %d%s", p->M, p->N, p->K,
                        p->epi, (int)s, p->epi == WDC_EPI_RELU_AUX_BIAS || p->epi == WDC_EPI_DRELU_BGRAD
                            ? " (cuda.no_epilogue runs without the ReLU-mask epilogues)" : "");
    size_t count = (size_t)p->M * (size_t)p->N;
    if (p->bias_after) {
        WDC_GO(wdc_bias_act_k, wdc_blocks((int64_t)count, WDC_THREADS), WDC_THREADS, st)((float *)p->C, p->out16,
                p->bias_after, count, p->N, p->relu_after);
        WDC_LAUNCH("bias_act");
    } else if (p->out16) WDC_TRY(wdc_to_bf16(st, p->out16, (const float *)p->C, count));
    return WD_OK;
}

// ---- 4. Device rank -----------------------------------------------------------------------------
// Stage boundaries of a timed step (cuda.timing): 0 start, 1 gathered, 2 forward, 3 loss,
// 4 backward, 5 sorted (keys, sort, runs), 6 rows merged (one rank: checked too; several: packed),
// 7 exchanged (several ranks: collectives, the second sort and merge, the checks), 8 updated, 9 end.
#define WDC_MARKS 10
struct wdc_rank {
    int rank, ranks, device, B;
    wd_model *model;
    wd_model_view v;
    wd_opt opt;                     // the model's rates and constants (c1, c2 come from the device)
    wdc_dims d;
    int key_bits;
    // dense layout on the device: layer 0's rows padded to INp (the rest shifted by pad)
    long long pad, lw[WD_MAX_LAYERS + 1], lb[WD_MAX_LAYERS + 1];
    wd_plan plan;
    char *slab;
    float *dense, *s1, *s2, *wide, *wz, *wn, *emb, *es1, *es2;
    char *batch[2];
    size_t bytes_batch, off_label, off_weight, off_dense, off_ids[WD_MAX_SLOTS], off_offs[WD_MAX_SLOTS];
    float *x, *grad[2], *logits, *g, *partial;
    void *act[WD_MAX_LAYERS + 1];   // (B, H_l) fp32; at precision bf16 the hidden
                                    // layers' bf16 (the last, the deep logit, fp32)
    uint32_t *mask[WD_MAX_LAYERS + 1];   // hidden layers: the ReLU masks (B rows of mask_ld bits; the epilogues)
    int64_t mask_ld[WD_MAX_LAYERS + 1];
    uint16_t *wlp, *x16, *lpg[2];   // precision bf16: the MLP weights (Pd's MLP part), the MLP input, the dz ping-pong
    // (wlp mirrors the fp32 layout: layer l's W at 2 lw[l] bytes, 16-byte aligned when every width is a
    // multiple of 8, as 1024-512-256; otherwise the plans tell the heuristic the real alignment, and
    // that W's row pitch and the activations' are as misaligned, so padding the offsets alone would not
    // make those products vectorised: mlp22 review F6)
    float *wide_logit;              // (B) wide logits from wdc_gather_wide_k (logits row 2; overlap on)
    float *loss_part;               // (B / 256 + 1, 4) the loss kernel's per-block sums (logits rows 3-4, or partial)
    unsigned long long *keys, *keys_alt, *ukeys;
    uint32_t *occ, *occ_alt;
    int *run_cnt, *run_off, *seg_cnt, *seg_first, *seg_run;
    float *seg_rows, *rows;
    // sparse fused keeps its lists in the segment buffers (each step uses one kind or
    // the other for its first merge; the second merge of an exchange comes after it):
    int4 *hot;                      // (N / (WDC_HOT + 1)) in seg_cnt: hot run, its first chunk, its chunks
    int2 *chunks;                   // (N / WDC_HOT_CHUNK + N / (WDC_HOT + 1) + 1) in seg_run: run, chunk index
    float *chunk_rows;              // (chunks, R) in seg_rows: each chunk's sum
    int sparse_fused;               // cuda.sparse: 1 fused, 0 segmented
    unsigned fused_grid[3];         // sparse fused: the most blocks of wdc_fused_rows_k, wdc_hot_chunk_k and
                                    // wdc_hot_merge_k resident at once on the device (their grid-stride grids)
    unsigned fused_cap;             // cuda.fused_grid N (tests only; 0: unset): those grids at most N blocks, so
                                    // every grid-stride loop takes several passes (the sums are the same bits)
    char *exchange;
    void *scratch, *gemm_ws;
    size_t scratch_bytes, gemm_ws_bytes;
    wdc_state *state;
    long long *table_off;           // inside state
    cublasLtHandle_t lt;
    wdc_mm fwd[WD_MAX_LAYERS + 1], bw[WD_MAX_LAYERS + 1], ba[WD_MAX_LAYERS + 1];
    cudaStream_t compute, copy, side;   // side: the sort's branch of a step (overlap on)
    cudaEvent_t copied[2], done[2], mark[2][WDC_MARKS];   // mark: stage boundaries per input buffer (cuda.timing)
    cudaEvent_t began[2], ended[2]; // every step's device time: from when the compute stream starts it to its end
    double device_s;                // the device time of steps after the first WDC_WARM_STEPS (the engine's device_ms)
    long long device_steps;
    cudaEvent_t fork, join;         // the side branch leaves the compute stream and rejoins it
    cudaGraphExec_t graph[2];
    // the settings (wd_cuda_desc: cuda.fp32, no_graph, ...) as this rank runs them
    int use_graph, timing, fp32;    // fp32: full-fp32 GEMMs, else TF32
    int overlap;                    // default 1, off when timing: side branch, gather with the wide logit
    int side_prio;                  // the side stream at the device's greatest priority (default 0)
    long long side_delay_ns;        // tests only: the side branch first waits this long (wdc_spin_k)
    int lp, epilogue;               // lp: precision bf16; epilogue (default 1): the ReLU-mask epilogues offered
    int bf16_direct;                // at bf16 the epilogues are offered a bf16 output first (section 3)
    int64_t check_every;
    wd_comm *comm;
    wd_xcap xcap;                   // the exchange (several ranks): merged rows
                                    // per rank and step (the header's wd_xcap)
    int xfull;                      // cuda.exchange_full: every exchange at the whole capacity (as before the cap)
    long long xredone;              // steps done again with the whole capacity (a rank's rows did not fit)
    int xpend[2];                   // per input buffer: the exchange's outcome (and the tail's flags) not read yet
    int xcapped[2];                 // per input buffer: its exchange had a cap (an overflow is done again)
    int (*x_host)[3];               // pinned (2): the most merged rows of a rank, overflow, the tail's flags
    cudaEvent_t xdone[2];
    // Failures (section 6, fail fast): an error returns; wd_train aborts the communicator.
    int unsafe;                     // the replica may hold part of a step (an update enqueued, then a failure,
                                    // or a step in flight cut off by the communicator's failure): no download
    int enq_stage;                  // how far the step being enqueued got (WDC_ENQ_*)
    int fork_open;                  // the side branch forked and not joined yet (an error joins it)
#ifdef WD_TESTING
    int fail_rank;                  // WD_CUDA_TEST_FAIL=R:S[:pre] (test builds only): rank R's S-th step fails
    long long fail_step;            // right after its collectives were enqueued, or before them (0: off)
    int fail_pre;
    int fail_create;                // WD_CUDA_TEST_FAIL=R:create and this is rank R: wdc_create fails
#endif
    // steps numbered by their collectives (WD_CHECK_TABLES's steps, WD_CUDA_TEST_FAIL); a step
    // done again keeps its own
    long long coll_steps, slot_no[2];
    wdc_result *res_host;           // pinned (2)
    float *stop_host;               // pinned (2)
    char *staging;                  // pinned, for uploads and downloads
    size_t staging_bytes;
    int64_t submitted, completed;
    double stage[WD_STAGE_COUNT];
#define WDC_WARM_STEPS 4            // steps left out of device_ms: each input buffer's first two (first launches)
};

static void *wdc_pinned_alloc(size_t n, void *u) {
    (void)u; void *p = NULL; return cudaHostAlloc(&p, n, cudaHostAllocPortable) == cudaSuccess ? p : NULL; }
static void wdc_pinned_free(void *p, void *u) { (void)u; cudaFreeHost(p); }
static const wd_allocator wdc_pinned = {wdc_pinned_alloc, wdc_pinned_free, NULL};

// Teardown waits for the last step, bounded: with a communicator its poll
// runs meanwhile (a failed group or the timeout aborts it, and NCCL's
// kernels then end); a stream still busy 10 s after that leaves the rank's
// device memory allocated (cudaFree would wait for the kernel) rather than hang.
// The side stream (overlap on) is waited for last: its work waits on the
// compute stream through the fork event, behind the previous step's
// collectives, so it can end only after them; once the compute stream has
// drained, every fork recorded on it has completed and what is left on the
// side stream is sort kernels, which end.
static int wdc_rank_drain(wdc_rank *r) {
    if (!r->comm) cudaStreamSynchronize(r->compute);   // one rank's own kernels always end
    else for (double t0 = wdc_now(), failed = -1; !wdc_drained(r->compute, 0.01);) {
        double now = wdc_now();
        if (failed < 0 && r->comm->ops->poll(r->comm, now - t0) != WD_OK) failed = now;
        if (failed >= 0 && now - failed > 10) return 0;
    }
    if (r->side) cudaStreamSynchronize(r->side);
    return 1;
}
static void wdc_rank_free(wdc_rank *r) {
    if (!r) return;
    cudaSetDevice(r->device);
    wd_error_hold(1);   // the drain's poll fails in an aborted group: the caller's error stays the last one
    int drained = !r->compute || wdc_rank_drain(r);
    wd_error_hold(0);
    if (!drained) { wd_free(r); return; }
    for (int i = 0; i < 2; i++) if (r->graph[i]) cudaGraphExecDestroy(r->graph[i]);
    for (int l = 0; l <= WD_MAX_LAYERS; l++) { wdc_mm_free(&r->fwd[l]); wdc_mm_free(&r->bw[l]);
        wdc_mm_free(&r->ba[l]); }
    if (r->lt) cublasLtDestroy(r->lt);
    if (r->slab) cudaFree(r->slab);
    if (r->compute) cudaStreamDestroy(r->compute);
    if (r->copy) cudaStreamDestroy(r->copy);
    if (r->side) cudaStreamDestroy(r->side);
    if (r->fork) cudaEventDestroy(r->fork);
    if (r->join) cudaEventDestroy(r->join);
    for (int i = 0; i < 2; i++) {
        if (r->copied[i]) cudaEventDestroy(r->copied[i]);
        if (r->done[i]) cudaEventDestroy(r->done[i]);
        if (r->began[i]) cudaEventDestroy(r->began[i]);
        if (r->ended[i]) cudaEventDestroy(r->ended[i]);
    }
    for (int j = 0; j < 2; j++) for (int i = 0; i < WDC_MARKS; i++) if (r->mark[j][i]) cudaEventDestroy(r->mark[j][i]);
    if (r->res_host) cudaFreeHost(r->res_host);
    if (r->stop_host) cudaFreeHost(r->stop_host);
    if (r->x_host) cudaFreeHost(r->x_host);
    for (int i = 0; i < 2; i++) if (r->xdone[i]) cudaEventDestroy(r->xdone[i]);
    if (r->staging) cudaFreeHost(r->staging);
    wd_free(r);
}

// Host <-> device copies of large arrays through the pinned staging buffer,
// ordered on the compute stream. rows x width bytes, with pitches (1 row: a
// plain copy of any size).
static wd_status wdc_h2d(wdc_rank *r, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t rows) {
    size_t per = rows == 1 ? r->staging_bytes : r->staging_bytes / width;
    if (per == 0) return wdc_fail(WD_ERR_INTERNAL, "upload rows of %zu bytes exceed the staging buffer", width);
    for (size_t done = 0; done < (rows == 1 ? width : rows);) {
        size_t n = rows == 1 ? (width - done < per ? width - done : per) : (rows - done < per ? rows - done : per);
        WDC_CUDA(cudaStreamSynchronize(r->compute));   // the staging buffer is free again
        if (rows == 1) {
            memcpy(r->staging, (const char *)src + done, n);
            WDC_CUDA(cudaMemcpyAsync((char *)dst + done, r->staging, n, cudaMemcpyHostToDevice, r->compute));
        } else {
            for (size_t q = 0; q < n; q++)
                memcpy(r->staging + q * width, (const char *)src + (done + q) * spitch, width);
            WDC_CUDA(cudaMemcpy2DAsync((char *)dst + done * dpitch, dpitch, r->staging, width, width, n,
                                       cudaMemcpyHostToDevice, r->compute));
        }
        done += n;
    }
    WDC_CUDA(cudaStreamSynchronize(r->compute));
    return WD_OK;
}
static wd_status wdc_d2h(wdc_rank *r, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t rows) {
    size_t per = rows == 1 ? r->staging_bytes : r->staging_bytes / width;
    if (per == 0) return wdc_fail(WD_ERR_INTERNAL, "download rows of %zu bytes exceed the staging buffer", width);
    for (size_t done = 0; done < (rows == 1 ? width : rows);) {
        size_t n = rows == 1 ? (width - done < per ? width - done : per) : (rows - done < per ? rows - done : per);
        if (rows == 1)
            WDC_CUDA(cudaMemcpyAsync(r->staging, (const char *)src + done, n, cudaMemcpyDeviceToHost, r->compute));
        else WDC_CUDA(cudaMemcpy2DAsync(r->staging, width, (const char *)src + done * spitch, spitch, width, n,
                                        cudaMemcpyDeviceToHost, r->compute));
        WDC_CUDA(cudaStreamSynchronize(r->compute));
        if (rows == 1) memcpy((char *)dst + done, r->staging, n);
        else for (size_t q = 0; q < n; q++) memcpy((char *)dst + (done + q) * dpitch, r->staging + q * width, width);
        done += n;
    }
    return WD_OK;
}
// A dense array (P floats, host layout) to and from the device layout (Pd).
static wd_status wdc_dense_up(wdc_rank *r, float *dev, const float *host) {
    const wd_model_view *v = &r->v;
    if (!v->nlayers || r->pad == 0) return wdc_h2d(r, dev, 0, host, 0, 4 * (size_t)v->P, 1);
    size_t H0 = (size_t)v->layer_out[0], IN = (size_t)v->IN, INp = (size_t)r->d.INp;
    WDC_CUDA(cudaMemsetAsync(dev, 0, 4 * H0 * INp, r->compute));
    WDC_TRY(wdc_h2d(r, dev, 4 * INp, host, 4 * IN, 4 * IN, H0));
    return wdc_h2d(r, dev + H0 * INp, 0, host + H0 * IN, 0, 4 * ((size_t)v->P - H0 * IN), 1);
}
static wd_status wdc_dense_down(wdc_rank *r, float *host, const float *dev) {
    const wd_model_view *v = &r->v;
    if (!v->nlayers || r->pad == 0) return wdc_d2h(r, host, 0, dev, 0, 4 * (size_t)v->P, 1);
    size_t H0 = (size_t)v->layer_out[0], IN = (size_t)v->IN, INp = (size_t)r->d.INp;
    WDC_TRY(wdc_d2h(r, host, 4 * IN, dev, 4 * INp, 4 * IN, H0));
    return wdc_d2h(r, host + H0 * IN, 0, dev + H0 * INp, 0, 4 * ((size_t)v->P - H0 * IN), 1);
}
static wd_status wdc_upload(wdc_rank *r) {
    const wd_model_view *v = &r->v;
    size_t ne = v->emb ? 4 * (size_t)v->emb_rows * (size_t)v->E : 0, nw = 4 * (size_t)v->wide_rows;
    int opt = v->dense_s1 != NULL;   // a weights-only model (wd_model_load_weights): no optimizer state, evaluates
    WDC_TRY(wdc_dense_up(r, r->dense, v->dense));
    if (opt) WDC_TRY(wdc_dense_up(r, r->s1, v->dense_s1));
    if (opt) WDC_TRY(wdc_dense_up(r, r->s2, v->dense_s2));
    WDC_TRY(wdc_h2d(r, r->wide, 0, v->wide, 0, nw, 1));
    if (opt) WDC_TRY(wdc_h2d(r, r->wz, 0, v->wide_z, 0, nw, 1));
    if (opt) WDC_TRY(wdc_h2d(r, r->wn, 0, v->wide_n, 0, nw, 1));
    if (ne) {
        WDC_TRY(wdc_h2d(r, r->emb, 0, v->emb, 0, ne, 1));
        if (opt) WDC_TRY(wdc_h2d(r, r->es1, 0, v->emb_s1, 0, ne, 1));
        if (opt && r->es2) WDC_TRY(wdc_h2d(r, r->es2, 0, v->emb_s2, 0, ne, 1));
    }
    return WD_OK;
}
static wd_status wdc_download_all(wdc_rank *r) {
    const wd_model_view *v = &r->v;
    size_t ne = v->emb ? 4 * (size_t)v->emb_rows * (size_t)v->E : 0, nw = 4 * (size_t)v->wide_rows;
    WDC_CUDA(cudaSetDevice(r->device));
    WDC_CUDA(cudaStreamSynchronize(r->compute));
    WDC_TRY(wdc_dense_down(r, v->dense, r->dense));
    WDC_TRY(wdc_dense_down(r, v->dense_s1, r->s1));
    WDC_TRY(wdc_dense_down(r, v->dense_s2, r->s2));
    WDC_TRY(wdc_d2h(r, v->wide, 0, r->wide, 0, nw, 1));
    WDC_TRY(wdc_d2h(r, v->wide_z, 0, r->wz, 0, nw, 1));
    WDC_TRY(wdc_d2h(r, v->wide_n, 0, r->wn, 0, nw, 1));
    if (ne) {
        WDC_TRY(wdc_d2h(r, v->emb, 0, r->emb, 0, ne, 1));
        WDC_TRY(wdc_d2h(r, v->emb_s1, 0, r->es1, 0, ne, 1));
        if (r->es2) WDC_TRY(wdc_d2h(r, v->emb_s2, 0, r->es2, 0, ne, 1));
    }
    return WD_OK;
}

// Carves the plan's buffers (every lookup checked: a missing one is an error).
static wd_status wdc_carve(wdc_rank *r) {
    char *base = r->slab;
#define WDC_AT(ptr, T, buf, idx) do { int64_t o_; WDC_TRY(wd_plan_find(&r->plan, buf, idx, &o_, NULL)); \
    ptr = (T)(base + o_); } while (0)
    WDC_AT(r->dense, float *, WD_BUF_DENSE, 0); WDC_AT(r->s1, float *, WD_BUF_DENSE_S1, 0);
    WDC_AT(r->s2, float *, WD_BUF_DENSE_S2, 0);
    WDC_AT(r->wide, float *, WD_BUF_WIDE, 0); WDC_AT(r->wz, float *, WD_BUF_WIDE_Z, 0);
    WDC_AT(r->wn, float *, WD_BUF_WIDE_N, 0);
    WDC_AT(r->emb, float *, WD_BUF_EMB, 0); WDC_AT(r->es1, float *, WD_BUF_EMB_S1, 0);
    WDC_AT(r->es2, float *, WD_BUF_EMB_S2, 0);
    if (!r->v.emb_s2) r->es2 = NULL;
    WDC_AT(r->batch[0], char *, WD_BUF_BATCH, 0); WDC_AT(r->batch[1], char *, WD_BUF_BATCH, 1);
    WDC_AT(r->x, float *, WD_BUF_X, 0);
    for (int l = 0; l < r->v.nlayers; l++) WDC_AT(r->act[l], void *, WD_BUF_ACT, l);
    for (int l = 0; l + 1 < r->v.nlayers; l++) {
        WDC_AT(r->mask[l], uint32_t *, WD_BUF_RELU_MASK, l);
        r->mask_ld[l] = ((int64_t)r->v.layer_out[l] + 127) / 128 * 128;
    }
    if (r->lp) {   // precision bf16 (planned for it only)
        WDC_AT(r->wlp, uint16_t *, WD_BUF_DENSE_LP, 0); WDC_AT(r->x16, uint16_t *, WD_BUF_X_LP, 0);
        WDC_AT(r->lpg[0], uint16_t *, WD_BUF_GRAD_LP, 0); WDC_AT(r->lpg[1], uint16_t *, WD_BUF_GRAD_LP, 1);
    }
    WDC_AT(r->grad[0], float *, WD_BUF_GRAD, 0); WDC_AT(r->grad[1], float *, WD_BUF_GRAD, 1);
    WDC_AT(r->logits, float *, WD_BUF_LOGITS, 0); WDC_AT(r->g, float *, WD_BUF_DENSE_GRAD, 0);
    WDC_AT(r->partial, float *, WD_BUF_PARTIAL, 0);
    WDC_AT(r->keys, unsigned long long *, WD_BUF_KEYS, 0);
    WDC_AT(r->keys_alt, unsigned long long *, WD_BUF_KEYS_ALT, 0);
    WDC_AT(r->occ, uint32_t *, WD_BUF_OCC, 0); WDC_AT(r->occ_alt, uint32_t *, WD_BUF_OCC_ALT, 0);
    WDC_AT(r->ukeys, unsigned long long *, WD_BUF_UKEYS, 0); WDC_AT(r->run_cnt, int *, WD_BUF_RUN_COUNT, 0);
    WDC_AT(r->run_off, int *, WD_BUF_RUN_OFF, 0);
    WDC_AT(r->seg_cnt, int *, WD_BUF_SEG_COUNT, 0); WDC_AT(r->seg_first, int *, WD_BUF_SEG_FIRST, 0);
    WDC_AT(r->seg_run, int *, WD_BUF_SEG_RUN, 0);
    WDC_AT(r->seg_rows, float *, WD_BUF_SEG_ROWS, 0); WDC_AT(r->rows, float *, WD_BUF_ROWS, 0);
    WDC_AT(r->exchange, char *, WD_BUF_EXCHANGE, 0);
    WDC_AT(r->scratch, void *, WD_BUF_SORT_SCRATCH, 0); WDC_AT(r->gemm_ws, void *, WD_BUF_GEMM_WS, 0);
    WDC_AT(r->state, wdc_state *, WD_BUF_STATE, 0);
#undef WDC_AT
    int64_t b1, b2;
    WDC_TRY(wd_plan_find(&r->plan, WD_BUF_SORT_SCRATCH, 0, NULL, &b1));
    WDC_TRY(wd_plan_find(&r->plan, WD_BUF_GEMM_WS, 0, NULL, &b2));
    r->scratch_bytes = (size_t)b1; r->gemm_ws_bytes = (size_t)b2;
    int64_t sb;
    WDC_TRY(wd_plan_find(&r->plan, WD_BUF_STATE, 0, NULL, &sb));
    if ((int64_t)sizeof(wdc_state) > sb)
        return wdc_fail(WD_ERR_INTERNAL, "device state of %zu bytes exceeds its plan entry (%lld)", sizeof(wdc_state),
                        (long long)sb);
    r->table_off = r->state->table_off;
    // the fused path's lists in the segment buffers: room for the most a step of d.rows occurrences can make
    r->hot = (int4 *)r->seg_cnt; r->chunks = (int2 *)r->seg_run; r->chunk_rows = r->seg_rows;
    int64_t n = r->d.rows, hot_max = n / (WDC_HOT + 1), chunk_max = n / WDC_HOT_CHUNK + hot_max + 1, have[3];
    WDC_TRY(wd_plan_find(&r->plan, WD_BUF_SEG_COUNT, 0, NULL, &have[0]));
    WDC_TRY(wd_plan_find(&r->plan, WD_BUF_SEG_RUN, 0, NULL, &have[1]));
    WDC_TRY(wd_plan_find(&r->plan, WD_BUF_SEG_ROWS, 0, NULL, &have[2]));
    if (16 * hot_max > have[0] || 8 * chunk_max > have[1] || 4 * chunk_max * r->d.R > have[2])
        return wdc_fail(WD_ERR_INTERNAL,
                        "the fused sparse path's lists (%lld hot runs, %lld chunks of %d floats) exceed the segment buffers",
                        (long long)hot_max, (long long)chunk_max, r->d.R);
    return WD_OK;
}

// The device batch layout: the carve of a host wd_batch of B samples with
// MH ids per multi-hot slot and sample (found through the public API).
static wd_status wdc_batch_layout(wdc_rank *r) {
    wd_batch b;
    WDC_TRY(wd_batch_init(&b, r->v.schema, r->B, (int64_t)r->B * r->d.MH));
    const char *m0 = (const char *)b.mem;
    r->off_label = (size_t)((const char *)b.label - m0);
    r->off_weight = (size_t)((const char *)b.weight - m0);
    r->off_dense = (size_t)((const char *)b.dense - m0);
    for (int k = 0; k < r->v.S; k++) {
        r->off_ids[k] = (size_t)((const char *)b.ids[k] - m0);
        r->off_offs[k] = b.offs[k] ? (size_t)((const char *)b.offs[k] - m0) : 0;
    }
    r->bytes_batch = b.mem_bytes;
    wd_batch_free(&b);
    int64_t planned;
    WDC_TRY(wd_plan_find(&r->plan, WD_BUF_BATCH, 0, NULL, &planned));
    if ((int64_t)r->bytes_batch > planned)
        return wdc_fail(WD_ERR_INTERNAL, "a batch of %zu bytes exceeds its plan entry (%lld)", r->bytes_batch,
                        (long long)planned);
    return WD_OK;
}
static wdc_batch wdc_batch_at(const wdc_rank *r, int slot) {
    wdc_batch b;
    memset(&b, 0, sizeof b);
    const char *base = r->batch[slot];
    b.label = (const float *)(base + r->off_label);
    b.weight = (const float *)(base + r->off_weight);
    b.dense = (const float *)(base + r->off_dense);
    for (int k = 0; k < r->v.S; k++) {
        b.ids[k] = (const uint32_t *)(base + r->off_ids[k]);
        b.offs[k] = r->v.schema->slot[k].kind == WD_MULTI_HOT ? (const uint32_t *)(base + r->off_offs[k]) : NULL;
    }
    return b;
}
// Copies a host batch into input buffer `slot` on the copy stream: one copy
// when its layout is the device's, else array by array (multi-hot batches
// whose id capacity grew); refuses ids past the plan's reserve.
static wd_status wdc_batch_copy(wdc_rank *r, const wd_batch *b, int slot) {
    const wd_schema *s = r->v.schema;
    char *dst = r->batch[slot];
    cudaStream_t st = r->copy;
    // every slot's id count before the first copy: an error return leaves nothing queued that reads the caller's batch
    for (int k = 0; k < s->nslots; k++) {
        if (s->slot[k].kind != WD_MULTI_HOT) continue;
        size_t nnz = b->offs[k][b->n];
        if (nnz > (size_t)r->B * (size_t)r->d.MH)
            return wdc_fail(WD_ERR_LIMIT,
                            "slot %s: a batch of %d samples holds %zu ids; the device reserves %d per sample (WD_PLAN_MULTI_HOT_IDS)",
                            s->slot[k].name, b->n, nnz, r->d.MH);
    }
    int same = b->cap == r->B && b->mem_bytes >= r->bytes_batch;
    for (int k = 0; k < s->nslots && same; k++)
        same = s->slot[k].kind != WD_MULTI_HOT || b->nnz_cap == (int64_t)r->B * r->d.MH;
    if (same && (size_t)((const char *)b->label - (const char *)b->mem) == r->off_label) {
        WDC_CUDA(cudaMemcpyAsync(dst, b->mem, r->bytes_batch, cudaMemcpyHostToDevice, st));
        return WD_OK;
    }
    size_t n = (size_t)b->n;
    WDC_CUDA(cudaMemcpyAsync(dst + r->off_label, b->label, 4 * n, cudaMemcpyHostToDevice, st));
    WDC_CUDA(cudaMemcpyAsync(dst + r->off_weight, b->weight, 4 * n, cudaMemcpyHostToDevice, st));
    WDC_CUDA(cudaMemcpyAsync(dst + r->off_dense, b->dense, 4 * n * (size_t)r->v.D, cudaMemcpyHostToDevice, st));
    for (int k = 0; k < s->nslots; k++) {
        if (s->slot[k].kind == WD_MULTI_HOT) {
            size_t nnz = b->offs[k][n];   // checked above
            WDC_CUDA(cudaMemcpyAsync(dst + r->off_offs[k], b->offs[k], 4 * (n + 1), cudaMemcpyHostToDevice, st));
            WDC_CUDA(cudaMemcpyAsync(dst + r->off_ids[k], b->ids[k], 4 * nnz, cudaMemcpyHostToDevice, st));
        } else WDC_CUDA(cudaMemcpyAsync(dst + r->off_ids[k], b->ids[k], 4 * n, cudaMemcpyHostToDevice, st));
    }
    return WD_OK;
}

// The plan, the buffers, the GEMM plans, the CUB check and the upload.
static wd_status wdc_rank_init(wdc_rank *r, const wd_backend_desc *bd) {
    r->rank = bd->rank; r->ranks = bd->ranks; r->device = bd->device; r->B = bd->batch;
    r->model = bd->model; r->comm = bd->comm;
    wd_model_view_get(r->model, &r->v);
    const wd_model_view *v = &r->v;
    const wd_model_desc *md = v->desc;
    const wd_cuda_desc *cfg = &bd->cuda;   // the settings (as wd_cuda_desc_resolve gave them: wd_train, wd_evaluate)
    r->lp = md->precision == WD_PRECISION_BF16 && v->nlayers;
    WDC_CUDA(cudaSetDevice(r->device));
    // shapes
    wdc_dims *d = &r->d;
    memset(d, 0, sizeof *d);
    d->B = r->B; d->D = v->D; d->S = v->S; d->E = v->E; d->IN = v->IN; d->INp = (v->IN + 15) / 16 * 16; d->R = v->R;
    d->MH = WD_PLAN_MULTI_HOT_IDS;
    for (int k = 0; k < v->S; k++) {
        d->kind[k] = v->schema->slot[k].kind;
        if (d->kind[k] == WD_MULTI_HOT) d->mh[d->nmh++] = k;
        else d->onehot[d->n1++] = k;
    }
    d->ncross = md->ncross;
    for (int c = 0; c < md->ncross; c++) { d->cross_a[c] = md->cross[c][0]; d->cross_b[c] = md->cross[c][1]; }
    d->T1 = d->n1 + d->ncross;
    d->cross_buckets = md->cross_buckets;
    d->mean = md->pooling == WD_POOL_MEAN; d->wide = !md->no_wide; d->deep = !md->no_deep;
    d->emb_rows = v->emb_rows;
    d->wide_rows = v->wide_rows;
    r->pad = v->nlayers ? (long long)(d->INp - d->IN) * v->layer_out[0] : 0;
    d->P_mlp = v->P_mlp + r->pad; d->Pd = v->P + r->pad;
    for (int l = 0; l < v->nlayers; l++) { r->lw[l] = v->layer_w[l] + (l ? r->pad : 0);
        r->lb[l] = v->layer_b[l] + r->pad; }
    d->rows = (long long)d->B * d->T1 + (long long)d->nmh * d->B * d->MH;
    {   // the sort, runs and segments index occurrences of every rank with int (occ: uint32)
        long long N = d->rows * (r->ranks > 1 ? r->ranks : 1), NS = N + N / WDC_SEG + 1;
        if (NS > INT_MAX)
            return wdc_fail(WD_ERR_LIMIT,
                            "batch %d: %lld sparse occurrences per rank x %d ranks = %lld keys, up to %lld segments; the CUDA "
                            "backend indexes them with 32-bit ints (at most %d): use a smaller batch or fewer ranks",
                            d->B, d->rows, r->ranks > 1 ? r->ranks : 1, N, NS, INT_MAX);
    }
    r->key_bits = 1;
    while (r->key_bits < 63 && ((unsigned long long)1 << r->key_bits) <= (unsigned long long)v->wide_rows)
        r->key_bits++;
    d->sentinel = ((unsigned long long)1 << r->key_bits) - 1;
    r->opt.optimizer = md->optimizer; r->opt.lr_deep = md->lr_deep; r->opt.lr_wide = md->lr_wide;
    r->opt.beta = md->ftrl_beta; r->opt.l1 = md->ftrl_l1; r->opt.l2 = md->ftrl_l2;
    r->opt.b1 = md->adam_beta1; r->opt.b2 = md->adam_beta2; r->opt.eps = md->adam_eps;
    // memory
    // a 1-rank communicator (tests of the exchange) is planned as 2 ranks, so that the exchange buffer exists
    WDC_TRY(wd_plan_make(r->model, r->B, r->comm && r->ranks == 1 ? 2 : r->ranks, &r->plan));
    size_t free_b = 0, total_b = 0;
    WDC_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (cfg->max_bytes > 0 && (uint64_t)cfg->max_bytes < (uint64_t)free_b) free_b = (size_t)cfg->max_bytes;
    if ((size_t)r->plan.total > free_b)
        return wdc_fail(WD_ERR_NOMEM, "GPU %d has %.2f GiB free, the plan needs %.2f GiB (see wd train --plan)",
                        r->device, free_b / 1073741824.0, r->plan.total / 1073741824.0);
    WDC_CUDA(cudaMalloc((void **)&r->slab, (size_t)r->plan.total));
#if defined(CUDACPU) && defined(__SANITIZE_ADDRESS__)
    wdc_plan_poison(&r->plan, r->slab);
#endif
    WDC_TRY(wdc_carve(r));
    WDC_TRY(wdc_batch_layout(r));
    {   // the logits (5 B floats): probabilities, dlogit, wide logits, then the loss kernel's block sums when
        // they fit, else the column-sum partials take those (a no-deep model with D <= 2 has a tiny one)
        int64_t nb = wdc_blocks(r->B, WDC_THREADS), pbytes = 0;
        WDC_TRY(wd_plan_find(&r->plan, WD_BUF_PARTIAL, 0, NULL, &pbytes));
        r->wide_logit = r->logits + 2 * (size_t)r->B;
        if (4 * nb <= 2 * (int64_t)r->B) r->loss_part = r->logits + 3 * (size_t)r->B;
        else if (16 * nb <= pbytes) r->loss_part = r->partial;
        else return wdc_fail(WD_ERR_INTERNAL, "no room for the loss kernel's %lld block sums", (long long)nb);
    }
    WDC_CUDA(cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking));
    WDC_CUDA(cudaStreamCreateWithFlags(&r->copy, cudaStreamNonBlocking));
    // the side branch's kernels are short and latency-bound (keys, radix-sort passes, run-length
    // encoding, scan); side_priority schedules its blocks ahead of queued GEMM tiles
    // (overlap22 review #7), to be timed against the default before it becomes one
    r->side_prio = cfg->side_priority;
    if (r->side_prio) {
        int least = 0, greatest = 0;
        WDC_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        WDC_CUDA(cudaStreamCreateWithPriority(&r->side, cudaStreamNonBlocking, greatest));
    } else WDC_CUDA(cudaStreamCreateWithFlags(&r->side, cudaStreamNonBlocking));
    WDC_CUDA(cudaEventCreateWithFlags(&r->fork, cudaEventDisableTiming));
    WDC_CUDA(cudaEventCreateWithFlags(&r->join, cudaEventDisableTiming));
    for (int i = 0; i < 2; i++) {
        WDC_CUDA(cudaEventCreateWithFlags(&r->copied[i], cudaEventDisableTiming));
        WDC_CUDA(cudaEventCreateWithFlags(&r->done[i], cudaEventDisableTiming));
        WDC_CUDA(cudaEventCreateWithFlags(&r->xdone[i], cudaEventDisableTiming));
        WDC_CUDA(cudaEventCreate(&r->began[i]));
        WDC_CUDA(cudaEventCreate(&r->ended[i]));
    }
    r->timing = cfg->timing;
    r->sparse_fused = cfg->sparse == WD_CUDA_SPARSE_FUSED;   // default segmented: see the header comment
    if (r->sparse_fused) {   // a grid-stride kernel's blocks beyond those resident
                             // at once would only wait for a second wave
        int sms = 0, per[3] = {0, 0, 0};
        WDC_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, r->device));
        WDC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per[0], wdc_fused_rows_k, WDC_THREADS, 0));
        WDC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per[1], wdc_hot_chunk_k, WDC_THREADS, 0));
        WDC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per[2], wdc_hot_merge_k, WDC_THREADS, 0));
        for (int i = 0; i < 3; i++)
            r->fused_grid[i] = (unsigned)(sms > 0 ? sms : 1) * (unsigned)(per[i] > 0 ? per[i] : 1);
        r->fused_cap = (unsigned)cfg->fused_grid;   // tests only (bench/GPU_RUN.md): the grids capped
        for (int i = 0; r->fused_cap && i < 3; i++) r->fused_grid[i] = min(r->fused_grid[i], r->fused_cap);
    }
    for (int j = 0; r->timing && j < 2; j++)
        for (int i = 0; i < WDC_MARKS; i++) WDC_CUDA(cudaEventCreate(&r->mark[j][i]));
    r->check_every = cfg->check_tables;
    r->use_graph = !r->comm && !r->timing && !cfg->no_graph;
    r->overlap = !r->timing && !cfg->no_overlap;   // timed stages run one after another
    r->side_delay_ns = (long long)(1e3 * cfg->overlap_delay_us);
#ifdef WD_TESTING
    {   // WD_CUDA_TEST_FAIL=R:S[:pre] (test builds only): rank R's S-th
        // step fails right after its collectives (pre: before them);
        // R:create: rank R's backend fails at the end of its creation (wdc_create), after everything else was made
        int create = 0;
        wd_status tst = wd_test_fail_parse("WD_CUDA_TEST_FAIL", 1, &r->fail_rank, &r->fail_step, &r->fail_pre, &create);
        if (tst) return tst;   // its message names the variable
        r->fail_create = create && r->fail_rank == r->rank;
        if (create) r->fail_rank = -1;
    }
#endif
    WDC_CUDA(cudaHostAlloc((void **)&r->res_host, 2 * sizeof(wdc_result), cudaHostAllocPortable));
    WDC_CUDA(cudaHostAlloc((void **)&r->stop_host, 2 * sizeof *r->stop_host, cudaHostAllocPortable));
    WDC_CUDA(cudaHostAlloc((void **)&r->x_host, 2 * sizeof *r->x_host, cudaHostAllocPortable));
    wd_xcap_init(&r->xcap, d->rows, cfg->exchange_cap);
    r->xfull = cfg->exchange_full;
    r->staging_bytes = 16 << 20;
    WDC_CUDA(cudaHostAlloc((void **)&r->staging, r->staging_bytes, cudaHostAllocPortable));
    // GEMM plans: forward with bias (+ReLU), dW = dz^T a, da = dz W; the
    // buffers wdc_forward and wdc_step_enqueue run them with
    WDC_LT(cublasLtCreate(&r->lt));
    r->fp32 = cfg->fp32;
    r->epilogue = !cfg->no_epilogue;
    r->bf16_direct = r->lp && cfg->bf16_direct;
    cublasComputeType_t compute = r->lp || r->fp32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    cudaDataType_t in_t = r->lp ? CUDA_R_16BF : CUDA_R_32F;
    // layer l's forward plan; aux: RELU_AUX_BIAS may be offered
    auto fwd_make = [&](int l, int aux) -> wd_status {
        int K = l ? v->layer_in[l] : d->INp, out = v->layer_out[l], last = l + 1 == v->nlayers;
        const void *in = l ? r->act[l - 1] : r->lp ? (const void *)r->x16 : (const void *)r->x;
        const void *W = r->lp ? (const void *)(r->wlp + r->lw[l]) : (const void *)(r->dense + r->lw[l]);
        const float *bias = r->dense + r->lb[l];
        // a bf16 hidden output is the next product's input; it goes in fp32 to a scratch
        // (grad[0], idle in the forward pass), then the epilogue's result is rounded
        // (wdc_to_bf16_k) or, unfused, bias_act adds the bias and rounds; cuda.bf16_direct
        // offers the epilogues' own bf16 output first (section 3)
        int lp_out = r->lp && !last;
        void *fc = lp_out ? (void *)r->grad[0] : r->act[l];
        wdc_mm_args fa = {compute, in_t, 0, 1, r->B, out, K, in, W, bias, last ? NULL : r->mask[l],
                          last ? 0 : r->mask_ld[l]};
        wdc_mm_offer fo[5];
        int nf = 0;
        if (last) fo[nf++] = {WDC_EPI_BIAS, r->act[l], CUDA_R_32F};
        else {
            if (lp_out && r->bf16_direct) {
                if (aux) fo[nf++] = {WDC_EPI_RELU_AUX_BIAS, r->act[l], CUDA_R_16BF};
                fo[nf++] = {WDC_EPI_RELU_BIAS, r->act[l], CUDA_R_16BF};
            }
            if (aux) fo[nf++] = {WDC_EPI_RELU_AUX_BIAS, fc, CUDA_R_32F};
            fo[nf++] = {WDC_EPI_RELU_BIAS, fc, CUDA_R_32F};
        }
        fo[nf++] = {WDC_EPI_NONE, fc, CUDA_R_32F};
        WDC_TRY(wdc_mm_make(&r->fwd[l], r->lt, &fa, fo, nf, r->gemm_ws_bytes));
        if (r->fwd[l].epi == WDC_EPI_NONE) { r->fwd[l].bias_after = bias; r->fwd[l].relu_after = !last; }
        if (lp_out && r->fwd[l].C == fc) r->fwd[l].out16 = (uint16_t *)r->act[l];
        return WD_OK;
    };
    for (int l = 0; l < v->nlayers; l++) {
        int K = l ? v->layer_in[l] : d->INp, out = v->layer_out[l], last = l + 1 == v->nlayers;
        const void *in = l ? r->act[l - 1] : r->lp ? (const void *)r->x16 : (const void *)r->x;
        const void *W = r->lp ? (const void *)(r->wlp + r->lw[l]) : (const void *)(r->dense + r->lw[l]);
        WDC_TRY(fwd_make(l, r->epilogue));
        // dz: dlogit (fp32) or the layer above's gradient; at precision bf16 every dz is a bf16
        // copy (wdc_top_k's of dlogit, then the ping-pong): layer l reads lpg[(l + 1) % 2]
        const void *dz = r->lp ? (const void *)r->lpg[(l + 1) % 2] : last ? (const void *)(r->logits + r->B)
            : (const void *)r->grad[(l + 1) % 2];
        wdc_mm_args wa = {compute, in_t, 1, 0, out, K, r->B, dz, in, NULL, NULL, 0};
        wdc_mm_offer wo = {WDC_EPI_NONE, r->g + r->lw[l], CUDA_R_32F};
        WDC_TRY(wdc_mm_make(&r->bw[l], r->lt, &wa, &wo, 1, r->gemm_ws_bytes));
        // da = dz W into grad[l % 2] (fp32: layer 0's is the embeddings' gradient); through layer
        // l - 1's ReLU with DRELU_BGRAD when that layer wrote its mask, at bf16 then rounded into
        // lpg[l % 2] (cuda.bf16_direct: offered straight into lpg[l % 2] first)
        wdc_mm_args aa = {compute, in_t, 0, 0, r->B, K, out, dz, W, l ? r->g + r->lb[l - 1] : NULL,
                          l ? r->mask[l - 1] : NULL, l ? r->mask_ld[l - 1] : 0};
        wdc_mm_offer ao[3];
        int na = 0;
        if (l && r->epilogue && r->fwd[l - 1].epi == WDC_EPI_RELU_AUX_BIAS) {
            if (r->lp && r->bf16_direct) ao[na++] = {WDC_EPI_DRELU_BGRAD, r->lpg[l % 2], CUDA_R_16BF};
            ao[na++] = {WDC_EPI_DRELU_BGRAD, r->grad[l % 2], CUDA_R_32F};
        }
        ao[na++] = {WDC_EPI_NONE, r->grad[l % 2], CUDA_R_32F};
        WDC_TRY(wdc_mm_make(&r->ba[l], r->lt, &aa, ao, na, r->gemm_ws_bytes));
        if (r->lp && r->ba[l].epi == WDC_EPI_DRELU_BGRAD && r->ba[l].C == (void *)r->grad[l % 2])
            r->ba[l].out16 = r->lpg[l % 2];
    }
    // a mask no product reads (layer l's da fell back to relu_grad and the column sums): layer
    // l - 1's forward again without writing it
    for (int l = 1; l < v->nlayers; l++)
        if (r->fwd[l - 1].epi == WDC_EPI_RELU_AUX_BIAS && r->ba[l].epi != WDC_EPI_DRELU_BGRAD) {
            wdc_mm_free(&r->fwd[l - 1]);
            WDC_TRY(fwd_make(l - 1, 0));
        }
    // CUB's scratch for the largest sort, run-length encode and scans we run
    {
        int N = (int)(d->rows * (r->ranks > 1 ? r->ranks : 1));
        size_t need[3] = {0, 0, 0};
        cub::DoubleBuffer<unsigned long long> kb(r->keys, r->keys_alt);
        cub::DoubleBuffer<uint32_t> vb(r->occ, r->occ_alt);
        WDC_CUDA(cub::DeviceRadixSort::SortPairs(NULL, need[0], kb, vb, N, 0, r->key_bits, r->compute));
        WDC_CUDA(cub::DeviceRunLengthEncode::Encode(NULL, need[1], r->keys, r->ukeys, r->run_cnt, &r->state->nruns, N,
                                                    r->compute));
        WDC_CUDA(cub::DeviceScan::ExclusiveSum(NULL, need[2], r->run_cnt, r->run_off, N, r->compute));
        for (int i = 0; i < 3; i++)
            if (need[i] > r->scratch_bytes)
                return wdc_fail(WD_ERR_INTERNAL, "CUB needs %zu bytes of scratch for %d keys, the plan has %zu",
                                need[i], N, r->scratch_bytes);
    }
    // state and parameters
    wdc_state init;
    memset(&init, 0, sizeof init);
    init.step = *v->step;
    for (int t = 0; t <= v->ntables; t++) init.table_off[t] = v->table_off[t];
    init.d = r->d;
    for (int i = 0; i < 2; i++) init.b[i] = wdc_batch_at(r, i);
    WDC_CUDA(cudaMemcpyAsync(r->state, &init, sizeof init, cudaMemcpyHostToDevice, r->compute));
    WDC_CUDA(cudaStreamSynchronize(r->compute));
    WDC_CUDA(cudaMemsetAsync(r->x, 0, 4 * (size_t)r->B * d->INp, r->compute));   // the padding columns stay 0
    for (int l = 0; l + 1 < v->nlayers; l++)
        WDC_CUDA(cudaMemsetAsync(r->mask[l], 0, (size_t)r->mask_ld[l] / 8 * (size_t)r->B, r->compute));
    if (r->lp) {   // rows past a short prediction batch are read, never used: initialised once
        WDC_CUDA(cudaMemsetAsync(r->x16, 0, 2 * (size_t)r->B * d->INp, r->compute));
        WDC_TRY(wdc_upload(r));
        return wdc_to_bf16(r->compute, r->wlp, r->dense, (size_t)d->P_mlp);   // the weights' bf16 copy
                                                                              // (then wdc_dense_update_k's)
    }
    return wdc_upload(r);
}

// ---- 5. Step ------------------------------------------------------------------------------------
// Sorts n keys (with their occurrences; CUB's radix sort is stable, so a
// run's occurrences stay in occurrence order) and finds the runs of equal
// keys: ukeys, run_cnt, run_off (run_cnt is zeroed first: the run-length
// encoding writes only nruns counts and the scan reads n). Returns the
// buffer holding the sorted occurrences.
static wd_status wdc_sort_runs(wdc_rank *r, cudaStream_t st, int n, const uint32_t **occ_s) {
    cub::DoubleBuffer<unsigned long long> kb(r->keys, r->keys_alt);
    cub::DoubleBuffer<uint32_t> vb(r->occ, r->occ_alt);
    size_t bytes = r->scratch_bytes;
    WDC_CUDA(cub::DeviceRadixSort::SortPairs(r->scratch, bytes, kb, vb, n, 0, r->key_bits, st));
    WDC_CUDA(cudaMemsetAsync(r->run_cnt, 0, 4 * (size_t)(n + 1), st));
    bytes = r->scratch_bytes;
    WDC_CUDA(cub::DeviceRunLengthEncode::Encode(r->scratch, bytes, kb.Current(), r->ukeys, r->run_cnt,
                                                &r->state->nruns, n, st));
    bytes = r->scratch_bytes;
    WDC_CUDA(cub::DeviceScan::ExclusiveSum(r->scratch, bytes, r->run_cnt, r->run_off, n, st));
    *occ_s = vb.Current();
    return WD_OK;
}
// The runs of the last sort over n keys cut into segments of at most WDC_SEG
// rows (seg_cnt, seg_first, seg_run; nsegs into the state).
static wd_status wdc_segments(wdc_rank *r, cudaStream_t st, int n) {
    WDC_GO(wdc_seg_count_k, wdc_blocks(n, WDC_THREADS), WDC_THREADS, st)(r->seg_cnt, r->run_cnt, r->ukeys, r->state, n,
                                                                         r->d.sentinel);
    WDC_LAUNCH("seg_count");
    size_t bytes = r->scratch_bytes;
    WDC_CUDA(cub::DeviceScan::ExclusiveSum(r->scratch, bytes, r->seg_cnt, r->seg_first, n, st));
    WDC_GO(wdc_seg_fill_k, wdc_blocks(n, WDC_THREADS), WDC_THREADS, st)(r->seg_run, r->seg_cnt, r->seg_first,
                                                                        r->state, n);
    WDC_LAUNCH("seg_fill");
    return WD_OK;
}
// Every run's merged gradient row (R floats: wide, then E deep) into rows,
// from this rank's occurrences (d.rows of them, sorted by wdc_sort_runs):
// with check, scaled and checked (wdc_row_value). Segmented: segments of at
// most WDC_SEG rows summed by a warp each, then each run's segments in order;
// fused: wdc_fused_rows_k and, for hot runs, wdc_hot_chunk_k and wdc_hot_merge_k.
static wd_status wdc_sparse_rows(wdc_rank *r, cudaStream_t st, const uint32_t *occ_s, const wdc_batch *db,
                                 const float *dlogit, const float *dx, int check) {
    const wdc_dims &d = r->d;
    const wdc_dims *dd = &r->state->d;
    int64_t n = d.rows;
    if (!r->sparse_fused) {
        WDC_TRY(wdc_segments(r, st, (int)n));
        WDC_GO(wdc_seg_sum_occ_k, wdc_blocks(n + n / WDC_SEG + 1, WDC_WARPS), WDC_THREADS, st)(r->seg_rows, r->seg_run,
                r->seg_first, r->run_off, r->run_cnt, occ_s, r->state, db, dd, dlogit, dx);
        WDC_LAUNCH("seg_sum_occ");
        WDC_GO(wdc_run_merge_k, wdc_blocks(n, WDC_WARPS), WDC_THREADS, st)(r->rows, r->seg_rows, r->seg_first,
                                                                           r->seg_cnt, r->ukeys, r->state, d.R,
                                                                           d.sentinel, check);
        WDC_LAUNCH("run_merge");
        return WD_OK;
    }
    // grid-stride kernels: the blocks resident at once (r->fused_grid), fewer when there cannot be that much work
    int64_t hot_max = n / (WDC_HOT + 1), chunk_max = n / WDC_HOT_CHUNK + hot_max + 1;
    static_assert(offsetof(wdc_state, nchunks) == offsetof(wdc_state, nhot) + sizeof(int),
                  "one memset zeroes nhot and nchunks");
    WDC_CUDA(cudaMemsetAsync(&r->state->nhot, 0, 2 * sizeof(int), st));   // nhot and nchunks
    WDC_GO(wdc_fused_rows_k, min(r->fused_grid[0], wdc_blocks(n, WDC_WARPS)), WDC_THREADS, st)(r->rows, r->hot,
            r->chunks, r->ukeys, r->run_off, r->run_cnt, occ_s, r->state, db, dd, dlogit, dx, check);
    WDC_LAUNCH("fused_rows");
    WDC_GO(wdc_hot_chunk_k, min(r->fused_grid[1], wdc_blocks(chunk_max, 1)), WDC_THREADS, st)(r->chunk_rows, r->chunks,
            r->run_off, r->run_cnt, occ_s, r->state, db, dd, dlogit, dx);
    WDC_LAUNCH("hot_chunk");
    WDC_GO(wdc_hot_merge_k, min(r->fused_grid[2], wdc_blocks(hot_max, WDC_WARPS)), WDC_THREADS, st)(r->rows, r->hot,
            r->chunk_rows, r->state, d.R, check);
    WDC_LAUNCH("hot_merge");
    return WD_OK;
}
// Stage boundary i of the step in input buffer `slot` (slot -1: not timed).
static wd_status wdc_mark(wdc_rank *r, int slot, int i) {
    if (r->timing && slot >= 0) WDC_CUDA(cudaEventRecord(r->mark[slot][i], r->compute));
    return WD_OK;
}
// The sparse occurrences of batch b: keys, sorted, runs (wdc_sort_runs), on stream st.
static wd_status wdc_sort_batch(wdc_rank *r, cudaStream_t st, const wdc_batch *b, const uint32_t **occ_s) {
    WDC_TRY(wdc_keys(st, r->keys, r->occ, b, &r->state->d, r->d.rows, r->table_off));
    return wdc_sort_runs(r, st, (int)r->d.rows, occ_s);
}
// The forward pass on batch b (n samples); the deep logit in the last
// activation and, with r->overlap, the wide logits in r->wide_logit (read by the
// loss and predict kernels instead of computing them there).
// b: the batch's pointers on the device (wdc_state.b).
static wd_status wdc_forward(wdc_rank *r, const wdc_batch *b, int n, int slot) {
    cudaStream_t st = r->compute;
    const wdc_dims *dd = &r->state->d;
    // the MLP input: fp32 x, or at precision bf16 only its rounded copy x16 (the first product's input)
    float *x = r->v.nlayers && !r->lp ? r->x : NULL;
    uint16_t *x16 = r->lp ? r->x16 : NULL;
    if (r->overlap)
        WDC_TRY(wdc_gather_wide(st, x, x16, r->d.wide ? r->wide_logit : NULL, b, dd, r->emb, r->wide,
                                r->dense + r->d.P_mlp, r->table_off, n));
    else if (r->v.nlayers) WDC_TRY(wdc_gather(st, x, x16, b, r->emb, r->table_off, dd, n));
    WDC_TRY(wdc_mark(r, slot, 1));
    for (int l = 0; l < r->v.nlayers; l++) WDC_TRY(wdc_mm_run(&r->fwd[l], r->lt, r->gemm_ws, r->gemm_ws_bytes, st));
    return WD_OK;
}
// Enqueues a whole training step on the batch in input buffer `slot`.
//
// With r->overlap (overlap on, the default) the step forks: keys,
// radix sort and run-length encoding (wdc_sort_batch) run on the side
// stream, beside the gather, MLP forward, loss and backward on the compute
// stream, and join it before their first reader (wdc_sparse_rows: segments
// or the fused rows; in timed steps, mark 5). Captured into the CUDA
// graph, the event record and wait become the graph's fork and join edges
// (the side stream joins the capture through the fork event and must
// rejoin the origin stream before cudaStreamEndCapture); without a graph
// they order the two streams the same way. Why this is race-free:
//  - the side branch writes only the sort's buffers (keys, occ and their
//    second buffers, the CUB scratch, ukeys, run_cnt, run_off,
//    state->nruns) and reads the batch, the shapes and the table offsets;
//    the compute stream touches none of those between fork and join (keep
//    it so: a kernel that does must go after the join);
//  - the fork follows everything earlier on the compute stream: the wait
//    for this batch's copy (wdc_submit) and the previous step, whose sort
//    readers (rows, exchange, updates) all follow its join;
//  - the next copy into this input buffer waits for done[slot], recorded
//    on the compute stream after the join (wdc_submit), so the branch never
//    reads a batch being overwritten.
// Without overlap the same kernels run in this order on the compute stream
// (and the gather and wide logit as two kernels): the model is the same
// bit for bit (tests/test_gpu.cu, test_overlap_matches_serial).
// With several ranks the exchange sends xcap rows per rank, or (slow, and
// with cuda.exchange_full) every occurrence's (the whole capacity: a step
// done again, wdc_settle).
// How far a step's enqueue got (wdc_rank.enq_stage), for an error part way
// (wdc_step_enqueue): an update enqueued leaves the replica unsafe.
enum { WDC_ENQ_STARTED = 0, WDC_ENQ_UPDATES };
// After the exchange's collectives: every rank's count of merged rows and the
// tail's flags to the host (x_host, xdone), which reads them (wdc_settle)
// before it enqueues anything more.
static wd_status wdc_exchange_read(wdc_rank *r, int slot, long long cap, int full) {
    size_t block = 16 + (8 + 4 * (size_t)r->d.R) * (size_t)cap;
    WDC_GO(wdc_exchange_check_k, 1, 1, r->compute)(r->state, r->exchange + block, r->g + r->d.Pd, cap, r->ranks,
                                                   r->d.R, slot);
    WDC_LAUNCH("exchange_check");
    WDC_CUDA(cudaMemcpyAsync(r->x_host[slot], r->state->xres[slot], sizeof r->x_host[slot], cudaMemcpyDeviceToHost,
                             r->compute));
    WDC_CUDA(cudaEventRecord(r->xdone[slot], r->compute));
    r->xpend[slot] = 1;
    r->xcapped[slot] = !full;
    return WD_OK;
}
static wd_status wdc_step_kernels(wdc_rank *r, int slot, int slow) {
    const wd_model_view *v = &r->v;
    const wdc_dims &d = r->d;
    cudaStream_t st = r->compute;
    int n = r->B, L = v->nlayers;
    wdc_batch b = wdc_batch_at(r, slot);   // its pointers on the host; the kernels read db and dd
    const wdc_batch *db = &r->state->b[slot];
    const wdc_dims *dd = &r->state->d;
    float *prob = r->logits, *dlogit = r->logits + n, *tail = r->g + d.Pd;
    const uint32_t *occ_s = NULL;
    WDC_TRY(wdc_mark(r, slot, 0));
    if (r->overlap) {   // fork
        WDC_CUDA(cudaEventRecord(r->fork, st));
        WDC_CUDA(cudaStreamWaitEvent(r->side, r->fork, 0));
        r->fork_open = 1;
        if (r->side_delay_ns > 0) { WDC_GO(wdc_spin_k, 1, 1, r->side)(r->side_delay_ns); WDC_LAUNCH("spin"); }
        WDC_TRY(wdc_sort_batch(r, r->side, db, &occ_s));
        WDC_CUDA(cudaEventRecord(r->join, r->side));
    }
    WDC_CUDA(cudaMemsetAsync(r->g, 0, 4 * (size_t)(d.Pd + WD_STEP_TAIL), st));
    WDC_TRY(wdc_forward(r, db, n, slot));
    WDC_TRY(wdc_mark(r, slot, 2));
    const float *deep_out = L ? (const float *)r->act[L - 1] : NULL;
    float *wdense = r->dense + d.P_mlp;
    WDC_TRY(wdc_loss(st, prob, dlogit, r->loss_part, tail, d.wide ? r->g + d.P_mlp + d.D : NULL, deep_out,
                     r->overlap ? r->wide_logit : NULL, db, dd, r->wide, wdense, r->table_off, r->state, slot, n));
    if (d.wide && d.D) WDC_TRY(wdc_colsum(st, r->g + d.P_mlp, r->partial, b.dense, d.D, n, d.D, dlogit));
    WDC_TRY(wdc_mark(r, slot, 3));
    // MLP backward: layer l's dz (n, out_l) is dlogit, then the grad[] ping-pong (layer l
    // writes grad[l % 2]; at precision bf16 every dz is a bf16 copy, lpg[(l + 1) % 2]);
    // layer l - 1's ReLU' and bias gradient come with layer l's da (the plans' epilogues,
    // or relu_grad and the column sums)
    if (L) {
        WDC_GO(wdc_top_k, 1, WDC_TOP_THREADS, st)(r->g + r->lb[L - 1], r->lp ? r->lpg[L % 2] : NULL, dlogit, n);
        WDC_LAUNCH("top");
    }
    for (int l = L - 1; l >= 0; l--) {
        WDC_TRY(wdc_mm_run(&r->bw[l], r->lt, r->gemm_ws, r->gemm_ws_bytes, st));   // dW = dz^T a
        WDC_TRY(wdc_mm_run(&r->ba[l], r->lt, r->gemm_ws, r->gemm_ws_bytes, st));   // da = dz W
        if (l && r->ba[l].epi != WDC_EPI_DRELU_BGRAD) {
            int K = v->layer_in[l];
            float *dn = r->grad[l % 2];
            WDC_TRY(wdc_relu_grad(st, dn, r->lp ? NULL : (const float *)r->act[l - 1],
                                  r->lp ? (const uint16_t *)r->act[l - 1] : NULL, r->lp ? r->lpg[l % 2] : NULL,
                                  (size_t)n * (size_t)K));
            WDC_TRY(wdc_colsum(st, r->g + r->lb[l - 1], r->partial, dn, K, n, K, NULL));
        }
    }
    float *dx = L ? r->grad[0] : NULL;   // layer 0's da: the embeddings' gradient
    WDC_TRY(wdc_mark(r, slot, 4));
    // sparse rows: keys, sort, runs (joined from the side branch,
    // or here); then every run's merged row (wdc_sparse_rows)
    if (r->overlap) { WDC_CUDA(cudaStreamWaitEvent(st, r->join, 0)); r->fork_open = 0; }   // join
    else WDC_TRY(wdc_sort_batch(r, st, db, &occ_s));
    WDC_TRY(wdc_mark(r, slot, 5));
    wd_comm *c = r->comm;
    int full = slow || r->xfull;
    long long cap = full ? d.rows : r->xcap.cap, M = c ? cap * r->ranks : 0;   // M: the rows every rank's blocks hold
    long long no = slow ? r->slot_no[slot] : r->coll_steps + 1;   // this step's number (a step
                                                                  // done again keeps its own)
    r->slot_no[slot] = no;
    int checks = r->check_every > 0 && c && c->size > 1 && no % r->check_every == 0;
    // WD_CUDA_TEST_FAIL, once; used up here even without a communicator, where it never fires
    // (its failures are between ranks: tests give it several)
#ifdef WD_TESTING
    int fails = r->fail_step > 0 && !slow && r->rank == r->fail_rank && no == r->fail_step;
    if (fails) r->fail_step = 0;
#define WDC_INJECT(when) \
    if (fails && (when)) \
        return wdc_fail(WD_ERR_DEVICE, \
                        "rank %d, step %lld: a failure injected %s the step's collectives (WD_CUDA_TEST_FAIL)", \
                                         r->rank, no, r->fail_pre ? "before" : "after")
#else
#define WDC_INJECT(when)
#endif
    unsigned runblocks = wdc_blocks(d.rows > M ? d.rows : M, WDC_WARPS);
    if (c) {   // a 1-rank communicator too (tests: the exchange must give the 1-rank path's model bit for bit)
        // this rank's merged rows, unscaled; then every rank's dense gradient summed
        // and merged rows gathered (on the compute stream: no host wait inside the step)
        WDC_TRY(wdc_sparse_rows(r, st, occ_s, db, dlogit, dx, 0));
        size_t block = 16 + (8 + 4 * (size_t)d.R) * (size_t)cap;
        WDC_GO(wdc_pack_k, wdc_blocks(cap, WDC_THREADS), WDC_THREADS, st)(r->exchange, r->rows, r->ukeys, r->state, cap,
                                                                          d.R, d.sentinel);
        WDC_LAUNCH("pack");
        WDC_TRY(wdc_mark(r, slot, 6));
        WDC_INJECT(r->fail_pre);
        WDC_TRY(c->ops->stream_allreduce_sum(c, r->g, (size_t)(d.Pd + WD_STEP_TAIL), (void *)st));
        WDC_TRY(c->ops->stream_allgather(c, r->exchange, r->exchange + block, block, (void *)st));
        WDC_INJECT(1);
        WDC_TRY(wdc_exchange_read(r, slot, cap, full));
        WDC_GO(wdc_unpack_k, wdc_blocks(M, WDC_THREADS), WDC_THREADS, st)(r->keys, r->occ, r->rows, r->exchange + block,
                                                                          cap, r->ranks, d.R);
        WDC_LAUNCH("unpack");
        WDC_TRY(wdc_sort_runs(r, st, (int)M, &occ_s));
        WDC_TRY(wdc_segments(r, st, (int)M));
        WDC_GO(wdc_seg_sum_rows_k, wdc_blocks(M + M / WDC_SEG + 1, WDC_WARPS), WDC_THREADS, st)(r->seg_rows, r->seg_run,
                r->seg_first, r->run_off, r->run_cnt, occ_s, r->state, r->rows, d.R);
        WDC_LAUNCH("seg_sum_rows");
    }
    // checks before any update (the sparse rows' in their merge), then the updates
    WDC_GO(wdc_step_begin_k, 1, 1, st)(r->state, tail, r->opt.b1, r->opt.b2);
    WDC_LAUNCH("step_begin");
    WDC_GO(wdc_dense_check_k, wdc_blocks(d.Pd, WDC_THREADS), WDC_THREADS, st)(r->state, r->g, d.Pd);
    WDC_LAUNCH("dense_check");
    if (c) {
        WDC_GO(wdc_run_merge_k, runblocks, WDC_THREADS, st)(r->rows, r->seg_rows, r->seg_first, r->seg_cnt, r->ukeys,
                                                            r->state, d.R, d.sentinel, 1);
        WDC_LAUNCH("run_merge");
        WDC_TRY(wdc_mark(r, slot, 7));
    } else {
        WDC_TRY(wdc_sparse_rows(r, st, occ_s, db, dlogit, dx, 1));
        WDC_TRY(wdc_mark(r, slot, 6));
        WDC_TRY(wdc_mark(r, slot, 7));
    }
    r->enq_stage = WDC_ENQ_UPDATES;
    WDC_GO(wdc_dense_update_k, wdc_blocks(d.Pd, WDC_THREADS), WDC_THREADS, st)(r->dense, r->s1, r->s2, r->g, r->state,
                                                                               d.P_mlp, d.Pd, d.wide, r->opt, r->wlp);
    WDC_LAUNCH("dense_update");
    WDC_GO(wdc_sparse_apply_k, runblocks, WDC_THREADS, st)(r->rows, r->ukeys, r->state, dd, r->opt, r->wide, r->wz,
                                                           r->wn, r->emb, r->es1, r->es2);
    WDC_LAUNCH("sparse_apply");
    WDC_TRY(wdc_mark(r, slot, 8));
    if (checks) {
        unsigned long long *sum = &r->state->checksum, *all = r->state->checksums;
        WDC_CUDA(cudaMemsetAsync(sum, 0, sizeof *sum, st));
        const float *parts[3] = {r->dense, r->wide, r->emb};
        long long lens[3] = {d.Pd, v->wide_rows, v->emb ? v->emb_rows * v->E : 0};
        for (int i = 0; i < 3; i++)
            if (lens[i]) { WDC_GO(wdc_checksum_k, 256, WDC_THREADS, st)(sum, parts[i], lens[i], 0x51ED + i);
                WDC_LAUNCH("checksum"); }
        WDC_TRY(c->ops->stream_allgather(c, sum, all, sizeof *sum, (void *)st));
        WDC_GO(wdc_checksum_cmp_k, 1, 1, st)(r->state, all, r->ranks);
        WDC_LAUNCH("checksum_cmp");
    }
    WDC_GO(wdc_step_end_k, 1, 1, st)(r->state, tail, slot);
    WDC_LAUNCH("step_end");
    WDC_TRY(wdc_mark(r, slot, 9));
    WDC_CUDA(cudaMemcpyAsync(&r->res_host[slot], &r->state->res[slot], sizeof(wdc_result), cudaMemcpyDeviceToHost, st));
    return WD_OK;
}

// Enqueues a whole training step (wdc_step_kernels). An error part way
// leaves the streams joined (a capture then ends joined, and the next step's
// side branch cannot overtake this one's); after an update was enqueued the
// replica may hold part of a step and is no longer downloaded (unsafe).
// With several ranks the others may wait for this step's collectives:
// wd_train aborts the communicator (fail fast).
static wd_status wdc_step_enqueue(wdc_rank *r, int slot, int slow) {
    r->enq_stage = WDC_ENQ_STARTED;
    wd_status st = wdc_step_kernels(r, slot, slow);
    if (st == WD_OK) return WD_OK;
    char err[1024];
    snprintf(err, sizeof err, "%s", wd_last_error());
    if (r->fork_open) {   // join (overlap22 review #6)
        if (cudaEventRecord(r->join, r->side) == cudaSuccess) (void)cudaStreamWaitEvent(r->compute, r->join, 0);
        r->fork_open = 0;
    }
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (r->enq_stage >= WDC_ENQ_UPDATES && cudaStreamIsCapturing(r->compute, &cs) == cudaSuccess
        && cs == cudaStreamCaptureStatusNone) r->unsafe = 1;
    (void)cudaGetLastError();   // a launch error above is this step's, not the next launch's
    return wdc_fail(st, "%s", err);
}

// ---- 6. Backend ---------------------------------------------------------------------------------
static wd_status wdc_create(const wd_backend_desc *bd, wd_backend **out) {
    *out = NULL;
    if (!bd->model) return wdc_fail(WD_ERR_INVALID_ARG, "cuda backend: no model");
    if (bd->batch <= 0) return wdc_fail(WD_ERR_INVALID_ARG, "cuda backend: batch %d", bd->batch);
    if ((bd->ranks > 1 || bd->comm)
        && (!bd->comm || !bd->comm->ops->stream_allreduce_sum || !bd->comm->ops->stream_allgather
            || !bd->comm->ops->poll))
        return wdc_fail(WD_ERR_INVALID_ARG,
                        "cuda backend: %d ranks need a device communicator (wd_comm_nccl_* or wd_comm_cuda_local_create)", bd->ranks);
    int ndev = 0;
    WDC_TRY(wd_cuda_device_count(&ndev));
    if (bd->device < 0 || bd->device >= ndev)
        return wdc_fail(WD_ERR_INVALID_ARG, "GPU %d does not exist (%d present)", bd->device, ndev);
    wdc_rank *r = (wdc_rank *)wd_alloc(sizeof(wdc_rank));
    if (!r) return wdc_fail(WD_ERR_NOMEM, "out of memory");
    memset(r, 0, sizeof *r);
    r->device = bd->device;
    wd_status st = wdc_rank_init(r, bd);
#ifdef WD_TESTING
    if (!st && r->fail_create)
        st = wdc_fail(WD_ERR_DEVICE,
                      "rank %d: a failure injected at the end of the backend's creation (WD_CUDA_TEST_FAIL)", r->rank);
#endif
    if (st) {
        wdc_rank_free(r);
        return wdc_fail(st, "GPU %d: %s", bd->device, wd_last_error());
    }
    *out = (wd_backend *)r;
    return WD_OK;
}
static void wdc_destroy(wd_backend *be) { wdc_rank_free((wdc_rank *)be); }

// Waits for an event, polling the communicator so that a failed or vanished
// rank ends this one's wait with an error instead of a hang; polled once more
// when the event is done: a collective can end with its communicator in error
// (NCCL's remote error: no data moved), which must not pass for a result.
static wd_status wdc_wait(wdc_rank *r, cudaEvent_t ev, const char *what) {
    double t0 = wdc_now();
    for (;;) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess) return r->comm ? r->comm->ops->poll(r->comm, 0) : WD_OK;
        if (e != cudaErrorNotReady)
            return wdc_fail(WD_ERR_DEVICE, "rank %d: waiting for %s: %s", r->rank, what, cudaGetErrorString(e));
        if (r->comm) WDC_TRY(r->comm->ops->poll(r->comm, wdc_now() - t0));
        usleep(20);
    }
}
// The exchange of the step in input buffer `slot` read back: every rank
// reads the same counts and tail at the same point of its sequence of
// collectives (after that step's, before anything of the next step), so
// every rank makes the same choice: a rank had more merged rows than the cap:
// the step changed nothing (WDC_REDO) and is enqueued again at once with
// every rank's whole capacity (the pre-cap exchange, bit for bit the same
// sums); not a step whose tail stops or fails it (the device flags it so,
// not WDC_REDO: it changes nothing either way). The cap follows the counts
// (wd_xcap_step).
static wd_status wdc_settle(wdc_rank *r, int slot) {
    if (!r->xpend[slot]) return WD_OK;
    WDC_TRY(wdc_wait(r, r->xdone[slot], "a step's exchange"));
    r->xpend[slot] = 0;
    int tf = r->x_host[slot][2];   // wdc_tail_flags
    if (!r->xcapped[slot]) return WD_OK;
    int over = wd_xcap_step(&r->xcap, r->x_host[slot][0]);
    if (over != r->x_host[slot][1])
        return wdc_fail(WD_ERR_INTERNAL,
                        "rank %d: the exchange's overflow flag (%d) disagrees with its count (%d rows, cap %lld)",
                        r->rank, r->x_host[slot][1], r->x_host[slot][0], (long long)r->xcap.cap);
    if (!over || tf) return WD_OK;
    r->xredone++;
    wd_status st = wdc_step_enqueue(r, slot, 1);
    if (cudaEventRecord(r->done[slot], r->compute) != cudaSuccess && !st)
        st = wdc_fail(WD_ERR_DEVICE, "rank %d: recording a step's end failed", r->rank);
    if (st) r->unsafe = 1;   // done again part way: its first run changed nothing, this one may have
    return st;
}
// A step on batch b. An error leaves nothing of it to complete (wd_train
// ends; with an update enqueued the replica is unsafe).
static wd_status wdc_submit_step(wdc_rank *r, const wd_batch *b, int stop) {
    if (r->submitted - r->completed >= 2)
        return wdc_fail(WD_ERR_INTERNAL, "cuda backend: a third step submitted before one completed");
    if (b->n != r->B)
        return wdc_fail(WD_ERR_INVALID_ARG, "cuda backend: a training batch of %d samples; the rank was made for %d",
                        b->n, r->B);
    WDC_CUDA(cudaSetDevice(r->device));
    int slot = (int)(r->submitted % 2);
    double t0 = wdc_now();
    r->stop_host[slot] = stop ? 1.0f : 0.0f;
    // a guard, not the mechanism: the step that last read this input buffer (its side branch
    // joined before done) is over, since a third step in flight is refused above and the host
    // completed that one (wdc_wait on done[slot]); predict runs with no step in flight
    WDC_CUDA(cudaStreamWaitEvent(r->copy, r->done[slot], 0));
    WDC_TRY(wdc_batch_copy(r, b, slot));
    WDC_CUDA(cudaMemcpyAsync(&r->state->stop[slot], &r->stop_host[slot], sizeof r->stop_host[slot],
                             cudaMemcpyHostToDevice, r->copy));
    WDC_CUDA(cudaEventRecord(r->copied[slot], r->copy));
    if (r->submitted > r->completed) {   // the step before: done again first if it must be
        wd_status st = wdc_settle(r, (slot + 1) % 2);
        if (st) { cudaEventSynchronize(r->copied[slot]); return st; }   // the caller's batch is its own again
    }
    WDC_CUDA(cudaStreamWaitEvent(r->compute, r->copied[slot], 0));
    // the device time of the step alone: began completes when the stream reaches it, after the
    // previous step and this batch's copy (idle time waiting for the loader falls before it)
    WDC_CUDA(cudaEventRecord(r->began[slot], r->compute));
    wd_status st = WD_OK;
    if (r->use_graph) {   // one rank, no communicator: a graph is launched whole or not at all
        if (!r->graph[slot]) {   // captured once per input buffer, replayed every step
            cudaGraph_t g;
            WDC_CUDA(cudaStreamBeginCapture(r->compute, cudaStreamCaptureModeThreadLocal));
            st = wdc_step_enqueue(r, slot, 0);
            cudaError_t e = cudaStreamEndCapture(r->compute, &g);
            if (!st && e != cudaSuccess)
                st = wdc_fail(WD_ERR_DEVICE, "cudaStreamEndCapture failed: %s", cudaGetErrorString(e));
            else if (e == cudaSuccess) {
                if (!st) {   // the side stream's priority, copied into its kernel nodes by the capture, counts
                             // only with this flag (else the graph runs at the launch stream's priority)
                    e = cudaGraphInstantiateWithFlags(&r->graph[slot], g,
                                                      r->side_prio ? cudaGraphInstantiateFlagUseNodePriority : 0);
                    if (e != cudaSuccess)
                        st = wdc_fail(WD_ERR_DEVICE, "cudaGraphInstantiateWithFlags failed: %s", cudaGetErrorString(e));
                }
                cudaGraphDestroy(g);
            }
        }
        if (!st) {
            cudaError_t e = cudaGraphLaunch(r->graph[slot], r->compute);
            if (e != cudaSuccess) st = wdc_fail(WD_ERR_DEVICE, "cudaGraphLaunch failed: %s", cudaGetErrorString(e));
        }
    } else st = wdc_step_enqueue(r, slot, 0);
    if (st) { cudaEventSynchronize(r->copied[slot]); return st; }   // the caller's batch is its own again
    r->coll_steps++;
    WDC_CUDA(cudaEventRecord(r->ended[slot], r->compute));
    WDC_CUDA(cudaEventRecord(r->done[slot], r->compute));
    // the host batch (and this slot's pinned stop) free again once on the device
    WDC_CUDA(cudaEventSynchronize(r->copied[slot]));
    r->stage[WD_STAGE_H2D] += wdc_now() - t0;
    r->submitted++;
    return WD_OK;
}
static wd_status wdc_submit(wd_backend *be, const wd_batch *b, int stop) {
    return wdc_submit_step((wdc_rank *)be, b, stop);
}
static wd_status wdc_complete(wd_backend *be, wd_step_result *out) {
    wdc_rank *r = (wdc_rank *)be;
    memset(out, 0, sizeof *out);
    WDC_CUDA(cudaSetDevice(r->device));
    if (r->completed == r->submitted) return wdc_fail(WD_ERR_INTERNAL, "cuda backend: no step in flight");
    int slot = (int)(r->completed % 2);
    double t0 = wdc_now();
    wd_status st = wdc_settle(r, slot);
    if (!st) st = wdc_wait(r, r->done[slot], "a training step");
    r->completed++;
    // cut off by the communicator's failure (an abort, a timeout): the step's
    // later kernels may have run on partial sums
    if (st && r->comm) r->unsafe = 1;
    if (st) return st;
    if (r->completed > WDC_WARM_STEPS) {
        float ms = 0;
        WDC_CUDA(cudaEventElapsedTime(&ms, r->began[slot], r->ended[slot]));
        r->device_s += ms * 1e-3;
        r->device_steps++;
    }
    if (r->timing) {   // the stage between each pair of events of this step
        static const int stage_of[WDC_MARKS - 1] = {WD_STAGE_EMBED, WD_STAGE_MLP_FWD, WD_STAGE_WIDE, WD_STAGE_MLP_BWD,
                                                    WD_STAGE_SORT, WD_STAGE_ROWS, WD_STAGE_COMM, WD_STAGE_OPTIMIZER,
                                                    WD_STAGE_OPTIMIZER};
        for (int i = 0; i < WDC_MARKS - 1; i++) {
            float ms = 0;
            WDC_CUDA(cudaEventElapsedTime(&ms, r->mark[slot][i], r->mark[slot][i + 1]));
            r->stage[stage_of[i]] += ms * 1e-3;
        }
    } else r->stage[WD_STAGE_OTHER] += wdc_now() - t0;   // waiting for the device
    const wdc_result *res = &r->res_host[slot];
    out->loss = res->tail[0]; out->weight = res->tail[1]; out->samples = res->tail[2];
    out->stopped = (res->flags & WDC_STOP) != 0;
    if (res->flags & WDC_REDO)
        return wdc_fail(WD_ERR_INTERNAL,
                        "cuda backend: a step to be done again was completed");   // wdc_settle redid it
    int bad = res->flags & WDC_FAILED;
    if (bad & WDC_APPLIED) r->unsafe = 1;   // the updates ran: the replica holds a step no position counts
    // every rank reads the same flags: a failure ends every rank alike (numeric halting)
    if (!bad && (res->halted & WDC_FAILED))
        return wdc_fail(WD_ERR_NUMERIC, "an earlier step failed; nothing more was applied");
    if (bad & WDC_BAD_KEY)
        return wdc_fail(WD_ERR_INTERNAL, "rank %d, step %lld: a sparse key outside the tables reached the update "
                        "(a cut-off exchange?); the model is no longer usable", r->rank, res->step + 1);
    if (bad & WDC_TABLES_DIFFER)
        return wdc_fail(WD_ERR_INTERNAL, "step %lld: the replicas' tables differ between ranks (cuda.check_tables)",
                        res->step + 1);
    if (bad & WDC_BAD_LOSS)
        return wdc_fail(WD_ERR_NUMERIC, "step %lld: the loss is not finite (diverged?); the update was not applied",
                        res->step + 1);
    if (bad & WDC_BAD_GRAD)
        return wdc_fail(WD_ERR_NUMERIC,
                        "step %lld: gradient values are not finite or exceed %g in magnitude (dense inputs too large?); the update was not applied",
                        res->step + 1, (double)WDC_GRAD_MAX);
    if (bad & WDC_BAD_PARAM)
        return wdc_fail(WD_ERR_NUMERIC,
                        "step %lld: the update left parameters non-finite; the model is no longer usable",
                        res->step + 1);
    return WD_OK;
}
// A step that failed part way after an update was enqueued (wdc_step_enqueue),
// or was cut off by the communicator's failure (wdc_complete), may have left
// part of it applied; one whose updates ran and then failed their checks
// (WDC_APPLIED, wdc_complete) was applied: the replica is no finished step's.
static wd_status wdc_unsafe(const wdc_rank *r, const char *what) {
    return wdc_fail(WD_ERR_DEVICE, "rank %d: %s refused: a step failed part way (after its updates were enqueued "
                    "or ran, or cut off by the communicator's failure), so the GPU's model may hold part of it",
                    r->rank, what);
}
static wd_status wdc_predict(wd_backend *be, const wd_batch *b, float *probs) {
    wdc_rank *r = (wdc_rank *)be;
    if (r->completed != r->submitted) return wdc_fail(WD_ERR_INTERNAL, "cuda backend: predict with a step in flight");
    if (r->unsafe) return wdc_unsafe(r, "predict");
    if (b->n > r->B)
        return wdc_fail(WD_ERR_INVALID_ARG, "cuda backend: a batch of %d samples; the rank was made for %d",
                        b->n, r->B);
    if (b->n <= 0) return WD_OK;   // nothing to copy or launch
    WDC_CUDA(cudaSetDevice(r->device));
    WDC_TRY(wdc_batch_copy(r, b, 0));
    WDC_CUDA(cudaEventRecord(r->copied[0], r->copy));
    WDC_CUDA(cudaStreamWaitEvent(r->compute, r->copied[0], 0));
    const wdc_batch *db = &r->state->b[0];
    WDC_TRY(wdc_forward(r, db, b->n, -1));
    const float *deep_out = r->v.nlayers ? (const float *)r->act[r->v.nlayers - 1] : NULL;
    WDC_TRY(wdc_predict_logits(r->compute, r->logits, deep_out, r->overlap ? r->wide_logit : NULL, db, &r->state->d,
                               r->wide, r->dense + r->d.P_mlp, r->table_off, b->n));
    WDC_CUDA(cudaMemcpyAsync(probs, r->logits, 4 * (size_t)b->n, cudaMemcpyDeviceToHost, r->compute));
    WDC_CUDA(cudaStreamSynchronize(r->compute));
    return WD_OK;
}
static wd_status wdc_download(wd_backend *be) {
    wdc_rank *r = (wdc_rank *)be;
    if (r->completed != r->submitted) return wdc_fail(WD_ERR_INTERNAL, "cuda backend: download with a step in flight");
#ifdef WD_TESTING
    if (r->unsafe && getenv("WD_CUDA_TEST_READ_UNSAFE")) return wdc_download_all(r);   // tests read it anyway
#endif
    if (r->unsafe) return wdc_unsafe(r, "download");
    return wdc_download_all(r);
}
static void wdc_times(const wd_backend *be, double *s) {
    const wdc_rank *r = (const wdc_rank *)be;
    for (int i = 0; i < WD_STAGE_COUNT; i++) s[i] += r->stage[i];
}
static void wdc_describe(const wd_backend *be, char *buf, size_t n) {
    const wdc_rank *r = (const wdc_rank *)be;
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, r->device) != cudaSuccess) p.name[0] = 0, p.major = p.minor = 0;
    // mlp=F/B per layer: F the forward product's epilogue (aux: RELU_AUX_BIAS, fused: RELU_BIAS
    // or BIAS, kernel: wdc_bias_act_k after it), B the da product's (fused: DRELU_BGRAD, kernel:
    // relu_grad and the column sums after it, -: layer 0 has no ReLU below); at precision bf16
    // "+r": the epilogue wrote fp32 and wdc_to_bf16_k rounded it (without: cuBLASLt wrote the
    // bf16 output itself, cuda.bf16_direct)
    char mlp[16 * (WD_MAX_LAYERS + 1)] = "";
    size_t o = 0;
    for (int l = 0; l < r->v.nlayers && o < sizeof mlp; l++) {
        const wdc_mm *f = &r->fwd[l], *b = &r->ba[l];
        o += (size_t)snprintf(mlp + o, sizeof mlp - o, "%s%s%s/%s%s", l ? "," : "",
                              f->epi == WDC_EPI_RELU_AUX_BIAS ? "aux" : f->epi == WDC_EPI_NONE ? "kernel" : "fused",
                              f->out16 && !f->bias_after ? "+r" : "",
                              l == 0 ? "-" : b->epi == WDC_EPI_DRELU_BGRAD ? "fused" : "kernel",
                              l && b->out16 ? "+r" : "");
    }
    char fg[48] = "";   // cuda.fused_grid (tests only): the grids it left
    if (r->sparse_fused && r->fused_cap)
        snprintf(fg, sizeof fg, " fused_grid=%u,%u,%u", r->fused_grid[0], r->fused_grid[1], r->fused_grid[2]);
    char xch[64] = "";   // early in the line: reports keep its first 127 bytes
    if (r->comm) snprintf(xch, sizeof xch, " exchange=%lld redone=%lld", r->xfull ? r->d.rows : (long long)r->xcap.cap,
                          r->xredone);
    // device_ms: the device time of a step (its first event to its last on the compute stream,
    // without the wait for its batch), the mean over the steps after the first WDC_WARM_STEPS
    char dev[40] = "";
    if (r->device_steps > 0) snprintf(dev, sizeof dev, " device_ms=%.4f", 1e3 * r->device_s / (double)r->device_steps);
    snprintf(buf, n,
             "cuda %s sm_%d%d ranks=%d%s gemm=cublaslt precision=%s graph=%s epilogue=%s mlp=%s sparse=%s%s overlap=%s%s%s",
             p.name, p.major, p.minor, r->ranks, xch,
             r->v.desc->precision == WD_PRECISION_BF16 ? "bf16" : r->fp32 ? "fp32" : "tf32",
             r->use_graph ? "on" : "off", r->epilogue ? "on" : "off", r->v.nlayers ? mlp : "none",
             r->sparse_fused ? "fused" : "segmented", fg, r->overlap ? "on" : "off",
             r->overlap && r->side_prio ? " side=high" : "", dev);
}
// Every failure says "no CUDA device" first, then why in words: on a machine
// without an NVIDIA driver cudaGetDeviceCount answers "CUDA driver version is
// insufficient for CUDA runtime version" (cudaErrorInsufficientDriver), which
// reads like an old driver; the driver's version (0: none) tells them apart.
extern "C" wd_status wd_cuda_device_count(int *n) {
    *n = 0;
    cudaError_t e = cudaGetDeviceCount(n);
    if (e == cudaSuccess && *n > 0) return WD_OK;
    *n = 0;
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    if (e == cudaSuccess || e == cudaErrorNoDevice)
        return wdc_fail(WD_ERR_UNSUPPORTED, "no CUDA device: the NVIDIA driver sees no GPU");
    if (e == cudaErrorInsufficientDriver && drv == 0)
        return wdc_fail(WD_ERR_UNSUPPORTED, "no CUDA device: no NVIDIA driver is loaded (no GPU, or none installed)");
    if (e == cudaErrorInsufficientDriver)
        return wdc_fail(WD_ERR_UNSUPPORTED, "no CUDA device: the NVIDIA driver supports CUDA %d.%d, this program was "
                        "built "
                        "with CUDA %d.%d: update the driver", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    return wdc_fail(WD_ERR_UNSUPPORTED, "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
}
static wd_status wdc_comm_create(int nranks, const int *devices, wd_comm **ranks);
static void wdc_comm_destroy(wd_comm **ranks, int nranks);
static const wd_backend_ops wdc_ops = {
    .name = "cuda", .batch_alloc = &wdc_pinned, .create = wdc_create, .destroy = wdc_destroy, .submit = wdc_submit,
    .complete = wdc_complete, .predict = wdc_predict, .download = wdc_download, .times = wdc_times,
    .describe = wdc_describe};
static const wd_device_ops wdc_devices = {
    .count = wd_cuda_device_count, .comm_create = wdc_comm_create, .comm_destroy = wdc_comm_destroy};
extern "C" const wd_device_ops *wd_devices_cuda(void) { return &wdc_devices; }
extern "C" const wd_backend_ops *wd_backend_cuda(void) { return &wdc_ops; }

// ---- 7. Communicators ------------------------------------------------------------------------------
// Ranks of one process share a group: an abort anywhere is seen by every
// rank's next poll (NCCL's own abort reaches only one communicator).
struct wdc_group {
    pthread_mutex_t mu;
    int aborted, users;
    char why[400];
};
static void wdc_group_abort(wdc_group *g, int rank, wd_status st, const char *why) {
    pthread_mutex_lock(&g->mu);
    if (!g->aborted) {   // why first: a reader that sees aborted reads it without the lock
        wd_rank_failure(g->why, sizeof g->why, rank, st, why);
        __atomic_store_n(&g->aborted, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g->mu);
}
static wdc_group *wdc_group_new(int users) {
    wdc_group *g = (wdc_group *)wd_alloc(sizeof(wdc_group));
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    g->users = users;
    return g;
}
static void wdc_group_release(wdc_group *g) {
    pthread_mutex_lock(&g->mu);
    int left = --g->users;
    pthread_mutex_unlock(&g->mu);
    if (left == 0) { pthread_mutex_destroy(&g->mu); wd_free(g); }
}

static int wdc_group_aborted(wdc_group *g) { return __atomic_load_n(&g->aborted, __ATOMIC_ACQUIRE); }

// NCCL, loaded on first use (dlopen: a program without NCCL runs every
// single-GPU path). Communicators are nonblocking (config.blocking = 0): the
// set-up, a collective's enqueue (NCCL >= 2.22 connects inside the first one)
// and the finalize may answer ncclInProgress, and are then polled here with
// the group's abort flag and the timeout, so that no NCCL call holds the host
// where the timeout cannot reach it. Making a communicator ends with a
// warm-up collective (every connection made, every rank present) under the
// same poll. Collectives are enqueued on the caller's stream; the host-side
// ops wait on their own stream with the same poll.
static pthread_once_t wdc_nccl_once = PTHREAD_ONCE_INIT;
static char wdc_nccl_why[700];      // why NCCL cannot be used (empty: loaded)
static void wdc_nccl_load_once(void) {
    const char *name = getenv("WD_NCCL_LIB");
    if (!name || !*name) name = "libnccl.so.2";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(wdc_nccl_why, sizeof wdc_nccl_why,
                 "NCCL is not available: %.300s (install NCCL 2.14 or newer, put the folder holding "
                 "libnccl.so.2 on LD_LIBRARY_PATH, e.g. python3's site-packages/nvidia/nccl/lib, or set WD_NCCL_LIB to the library's path)", dlerror());
        return;
    }
    struct { void **fn; const char *sym; } want[] = {
        {(void **)&wdc_nc.GetVersion, "ncclGetVersion"}, {(void **)&wdc_nc.GetUniqueId, "ncclGetUniqueId"},
        {(void **)&wdc_nc.CommInitRankConfig, "ncclCommInitRankConfig"},
        {(void **)&wdc_nc.GroupStart, "ncclGroupStart"},
        {(void **)&wdc_nc.GroupEnd, "ncclGroupEnd"}, {(void **)&wdc_nc.AllReduce, "ncclAllReduce"},
        {(void **)&wdc_nc.AllGather, "ncclAllGather"},
        {(void **)&wdc_nc.CommGetAsyncError, "ncclCommGetAsyncError"},
        {(void **)&wdc_nc.CommFinalize, "ncclCommFinalize"},
        {(void **)&wdc_nc.CommDestroy, "ncclCommDestroy"}, {(void **)&wdc_nc.CommAbort, "ncclCommAbort"},
        {(void **)&wdc_nc.GetErrorString, "ncclGetErrorString"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!(*want[i].fn = dlsym(h, want[i].sym))) {
            snprintf(wdc_nccl_why, sizeof wdc_nccl_why,
                     "NCCL is not usable: %.300s has no %s (NCCL 2.14 or newer is needed)", name, want[i].sym);
            return;
        }
    int v = 0;
    if (wdc_nc.GetVersion(&v) != ncclSuccess || v < 21400)
        snprintf(wdc_nccl_why, sizeof wdc_nccl_why,
                 "NCCL is not usable: %.300s is version %d; nonblocking communicators need 2.14 or newer", name, v);
}
static wd_status wdc_nccl_load(void) {
    pthread_once(&wdc_nccl_once, wdc_nccl_load_once);
    return wdc_nccl_why[0] ? wdc_fail(WD_ERR_UNSUPPORTED, "%s", wdc_nccl_why) : WD_OK;
}
// Waits while communicator comm's last operation (set-up, finalize) is in
// progress: WD_OK once done; its failure, the group's abort or the timeout
// as an error (the caller then aborts the communicator).
static wd_status wdc_nccl_settle(ncclComm_t comm, wdc_group *g, int rank, double timeout, const char *what) {
    double t0 = wdc_now();
    for (;;) {
        ncclResult_t st = ncclInProgress, q = wdc_nc.CommGetAsyncError(comm, &st);
        if (q != ncclSuccess) st = q;
        if (st == ncclSuccess) return WD_OK;
        if (st != ncclInProgress)
            return wdc_fail(WD_ERR_DEVICE, "rank %d: %s: %s", rank, what, wdc_nc.GetErrorString(st));
        if (g && wdc_group_aborted(g))
            return wdc_fail(WD_ERR_ABORTED, "rank %d: %s: stopped because %s", rank, what, g->why);
        if (wdc_now() - t0 > timeout)
            return wdc_fail(WD_ERR_ABORTED, "rank %d: %s: not done after %.0f s (WD_COMM_TIMEOUT)", rank,
                            what, timeout);
        usleep(100);
    }
}
static ncclConfig_t wdc_nccl_config(void) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    return cfg;
}

struct wdc_nccl {
    ncclComm_t comm;
    cudaStream_t st;
    int device, aborted;            // aborted: ncclCommAbort was called (never destroy it then)
    double timeout;
    wdc_group *group;
    uint64_t *cnt;                  // (1 + size) device: a size to gather, and the gathered sizes
    char *sendpad, *gbuf, *hbuf;    // the host allgather's device send and receive buffers, and its host views
    size_t sendpad_cap, gbuf_cap, hbuf_cap;
    float *zero;                    // one float, 0: what the barrier and the warm-up allreduce
};
static void wdc_nccl_kill(wdc_nccl *n) {
    if (n->aborted) return;
    n->aborted = 1;
    wdc_nc.CommAbort(n->comm);
}
static wd_status wdc_nccl_poll(wd_comm *c, double waited) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    if (n->aborted)
        return wdc_fail(WD_ERR_ABORTED, "rank %d: the communicator was aborted: %s", c->rank, n->group->why);
    if (wdc_group_aborted(n->group)) {
        wdc_nccl_kill(n);
        return wdc_fail(WD_ERR_ABORTED, "rank %d: stopped because %s", c->rank, n->group->why);
    }
    ncclResult_t ar = ncclSuccess, q = wdc_nc.CommGetAsyncError(n->comm, &ar);
    if (q != ncclSuccess) ar = q;
    if (ar != ncclSuccess && ar != ncclInProgress) {
        wdc_group_abort(n->group, c->rank, WD_ERR_DEVICE, wdc_nc.GetErrorString(ar));
        wdc_nccl_kill(n);
        return wdc_fail(WD_ERR_ABORTED, "rank %d: a collective failed in NCCL: %s (communicator aborted)", c->rank,
                        wdc_nc.GetErrorString(ar));
    }
    if (waited > n->timeout) {
        wdc_group_abort(n->group, c->rank, WD_ERR_ABORTED, "timeout");
        wdc_nccl_kill(n);
        return wdc_fail(WD_ERR_ABORTED,
                        "rank %d: waited %.0f s for the other ranks (WD_COMM_TIMEOUT): one failed or stopped (communicator aborted)",
                        c->rank, waited);
    }
    return WD_OK;
}
// After an NCCL call on the communicator: an error aborts the group; an
// enqueue still in progress is waited for (no other NCCL call may come
// before it ends) with the poll.
static wd_status wdc_nccl_enqueued(wd_comm *c, ncclResult_t r, const char *what) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    if (r == ncclSuccess) return WD_OK;
    if (r != ncclInProgress) {
        char why[300];
        snprintf(why, sizeof why, "%s: %s", what, wdc_nc.GetErrorString(r));
        wdc_group_abort(n->group, c->rank, WD_ERR_DEVICE, why);
        wdc_nccl_kill(n);
        return wdc_fail(WD_ERR_DEVICE, "rank %d: %s (communicator aborted)", c->rank, why);
    }
    double t0 = wdc_now();
    for (;;) {
        ncclResult_t st = ncclInProgress;
        if (wdc_nc.CommGetAsyncError(n->comm, &st) == ncclSuccess && st == ncclSuccess) return WD_OK;
        WDC_TRY(wdc_nccl_poll(c, wdc_now() - t0));
        usleep(50);
    }
}
static wd_status wdc_nccl_wait(wd_comm *c) {   // the stream drained and, as wdc_wait, no error since
    wdc_nccl *n = (wdc_nccl *)c->impl;
    double t0 = wdc_now();
    for (;;) {
        cudaError_t e = cudaStreamQuery(n->st);
        if (e == cudaSuccess) return wdc_nccl_poll(c, 0);
        if (e != cudaErrorNotReady)
            return wdc_fail(WD_ERR_DEVICE, "rank %d: a collective failed: %s", c->rank, cudaGetErrorString(e));
        WDC_TRY(wdc_nccl_poll(c, wdc_now() - t0));
        usleep(20);
    }
}
static wd_status wdc_nccl_stream_allreduce(wd_comm *c, float *buf, size_t count, void *stream) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    WDC_TRY(wdc_nccl_poll(c, 0));
    return wdc_nccl_enqueued(c, wdc_nc.AllReduce(buf, buf, count, ncclFloat, ncclSum, n->comm, (cudaStream_t)stream),
                             "ncclAllReduce");
}
static wd_status wdc_nccl_stream_allgather(wd_comm *c, const void *send, void *recv, size_t bytes, void *stream) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    WDC_TRY(wdc_nccl_poll(c, 0));
    return wdc_nccl_enqueued(c, wdc_nc.AllGather(send, recv, bytes, ncclUint8, n->comm, (cudaStream_t)stream),
                             "ncclAllGather");
}
static wd_status wdc_nccl_allreduce(wd_comm *c, float *buf, size_t count) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    WDC_CUDA(cudaSetDevice(n->device));
    WDC_TRY(wdc_nccl_stream_allreduce(c, buf, count, (void *)n->st));
    return wdc_nccl_wait(c);
}
// A device buffer of at least `want` bytes (grown, never shrunk).
static wd_status wdc_grow(char **p, size_t *cap, size_t want) {
    if (want <= *cap) return WD_OK;
    cudaFree(*p);
    *p = NULL; *cap = 0;
    WDC_CUDA(cudaMalloc((void **)p, want));
    *cap = want;
    return WD_OK;
}
// The host-side allgather, with the CPU communicator's contract: `mine` is
// host memory (device memory works too), sizes may differ per rank, and the
// views are host memory, valid until this rank's next collective.
static wd_status wdc_nccl_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    WDC_CUDA(cudaSetDevice(n->device));
    uint64_t b = bytes, got[256];
    if (c->size > 256)
        return wdc_fail(WD_ERR_LIMIT, "rank %d: the NCCL allgather takes at most 256 ranks, not %d", c->rank, c->size);
    WDC_CUDA(cudaMemcpyAsync(n->cnt, &b, 8, cudaMemcpyHostToDevice, n->st));
    WDC_TRY(wdc_nccl_stream_allgather(c, n->cnt, n->cnt + 1, 8, (void *)n->st));
    // A copy to pageable memory (got, hbuf) blocks the host until the stream's
    // work before it ends: wait for the allgather first with wdc_nccl_wait,
    // which polls the group's abort and WD_COMM_TIMEOUT (a failed peer).
    WDC_TRY(wdc_nccl_wait(c));
    WDC_CUDA(cudaMemcpyAsync(got, n->cnt + 1, 8 * (size_t)c->size, cudaMemcpyDeviceToHost, n->st));
    WDC_TRY(wdc_nccl_wait(c));
    size_t most = 1;
    for (int q = 0; q < c->size; q++) most = got[q] > most ? got[q] : most;
    WDC_TRY(wdc_grow(&n->sendpad, &n->sendpad_cap, most));
    WDC_TRY(wdc_grow(&n->gbuf, &n->gbuf_cap, most * c->size));
    if (most * c->size > n->hbuf_cap) {
        wd_free(n->hbuf);
        n->hbuf_cap = 0;
        if (!(n->hbuf = (char *)wd_alloc(most * c->size))) return wdc_fail(WD_ERR_NOMEM, "out of memory");
        n->hbuf_cap = most * c->size;
    }
    WDC_CUDA(cudaMemsetAsync(n->sendpad, 0, most, n->st));   // the padding past `bytes` is sent too
    if (bytes) WDC_CUDA(cudaMemcpyAsync(n->sendpad, mine, bytes, cudaMemcpyDefault, n->st));
    WDC_TRY(wdc_nccl_stream_allgather(c, n->sendpad, n->gbuf, most, (void *)n->st));
    WDC_TRY(wdc_nccl_wait(c));   // before the copy to pageable memory, as above
    WDC_CUDA(cudaMemcpyAsync(n->hbuf, n->gbuf, most * c->size, cudaMemcpyDeviceToHost, n->st));
    WDC_TRY(wdc_nccl_wait(c));
    for (int q = 0; q < c->size; q++) { all[q] = n->hbuf + most * q; if (sizes) sizes[q] = got[q]; }
    return WD_OK;
}
static wd_status wdc_nccl_barrier(wd_comm *c) { return wdc_nccl_allreduce(c, ((wdc_nccl *)c->impl)->zero, 1); }
static void wdc_nccl_abort(wd_comm *c, wd_status st, const char *why) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    wdc_group_abort(n->group, c->rank, st, why);
    wdc_nccl_kill(n);
}
static const wd_comm_ops wdc_nccl_ops = {wdc_nccl_allreduce, wdc_nccl_allgather, wdc_nccl_barrier, wdc_nccl_abort,
                                         wdc_nccl_stream_allreduce, wdc_nccl_stream_allgather, wdc_nccl_poll};

// Wraps a set-up communicator (on failure the caller still owns comm and g).
static wd_status wdc_nccl_wrap(ncclComm_t comm, int rank, int size, int device, wdc_group *g, wd_comm **out) {
    *out = NULL;
    wd_comm *c = (wd_comm *)wd_alloc(sizeof(wd_comm));
    wdc_nccl *n = (wdc_nccl *)wd_alloc(sizeof(wdc_nccl));
    if (!c || !n) { wd_free(c); wd_free(n); return wdc_fail(WD_ERR_NOMEM, "out of memory"); }
    memset(c, 0, sizeof *c);
    memset(n, 0, sizeof *n);
    n->comm = comm; n->device = device; n->group = g;
    n->timeout = wd_comm_timeout();
    c->ops = &wdc_nccl_ops; c->rank = rank; c->size = size; c->impl = n;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&n->st, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc((void **)&n->cnt, 8 * (size_t)(1 + size));
    if (e == cudaSuccess) e = cudaMalloc((void **)&n->zero, sizeof(float));
    if (e == cudaSuccess) e = cudaMemset(n->zero, 0, sizeof(float));
    if (e != cudaSuccess) {
        if (n->st) cudaStreamDestroy(n->st);
        cudaFree(n->cnt); cudaFree(n->zero);
        wd_free(n); wd_free(c);
        return wdc_fail(WD_ERR_DEVICE, "NCCL communicator set-up on GPU %d: %s", device, cudaGetErrorString(e));
    }
    *out = c;
    return WD_OK;
}
// Teardown, every wait bounded: a communicator that ended cleanly (every
// rank's collectives met) is
// finalized, polled with the group's abort flag for at most WDC_FINALIZE_S
// (or WD_COMM_TIMEOUT if shorter), then destroyed. nccl.h (2.28): finalize
// "flushes all issued communications" and the state turns ncclSuccess "when
// the communicator is globally quiescent", after which ncclCommDestroy frees
// the rest "without blocking"; the NCCL 2.14 preview's description
// (NVIDIA/nccl pull request 715) adds that it waits for "communication from other ranks but using the local
// rank as an intermediate step", which an abort would cut off; NCCL's source
// (src/init.cc, commDestroySync) finalizes locally: it synchronizes the
// communicator's own streams and stops its proxy, without waiting for other
// ranks to finalize, so one thread may finalize its ranks one after another
// (wd_comm_nccl_create_all's), and ncclCommDestroy frees shared resources
// when the process's last rank calls it (commReclaim). A nonblocking
// communicator's calls may answer ncclInProgress and are then polled with
// ncclCommGetAsyncError until ncclSuccess before any other NCCL call (NCCL's
// nccl4py docs, get_async_error). A communicator of an aborted group, or one
// whose finalize fails or does not end in time (a vanished peer), is aborted
// (never destroyed after an abort: an abort frees it).
#define WDC_FINALIZE_S 30.0
extern "C" void wd_comm_nccl_destroy(wd_comm *c) {
    if (!c) return;
    wdc_nccl *n = (wdc_nccl *)c->impl;
    wd_error_hold(1);   // a failed finalize is aborted: the caller's error stays the last one
    cudaSetDevice(n->device);
    if (wdc_group_aborted(n->group)) wdc_nccl_kill(n);
    if (!n->aborted) {
        ncclResult_t r = wdc_nc.CommFinalize(n->comm);
        if ((r == ncclSuccess || r == ncclInProgress) && wdc_nccl_settle(n->comm, n->group, c->rank,
                                                                         fmin(n->timeout, WDC_FINALIZE_S),
                                                                         "NCCL finalize") == WD_OK)
            wdc_nc.CommDestroy(n->comm);
        else wdc_nccl_kill(n);
    }
    if (wdc_drained(n->st, 10)) {   // the communicator is gone: nothing of NCCL's left running on it
        cudaFree(n->cnt); cudaFree(n->zero); cudaFree(n->sendpad); cudaFree(n->gbuf);
        cudaStreamDestroy(n->st);
    }   // else its device memory stays allocated: cudaFree would wait for the kernel that hangs
    wd_free(n->hbuf);
    wdc_group_release(n->group);
    wd_free(n); wd_free(c);
    wd_error_hold(0);
}
// The warm-up: one allreduce of every rank (called for every rank of this
// process inside one NCCL group when one thread drives them all), waited for
// with the poll. An error leaves the communicators to the caller.
static wd_status wdc_nccl_warm_up(wd_comm **ranks, int n) {
    WDC_NCCL(wdc_nc.GroupStart());
    ncclResult_t first = ncclSuccess;
    for (int i = 0; i < n; i++) {
        wdc_nccl *x = (wdc_nccl *)ranks[i]->impl;
        WDC_CUDA(cudaSetDevice(x->device));
        ncclResult_t r = wdc_nc.AllReduce(x->zero, x->zero, 1, ncclFloat, ncclSum, x->comm, x->st);
        if (first == ncclSuccess && r != ncclSuccess && r != ncclInProgress) first = r;
    }
    ncclResult_t r = wdc_nc.GroupEnd();
    if (first != ncclSuccess) r = first;
    for (int i = 0; i < n; i++) WDC_TRY(wdc_nccl_enqueued(ranks[i], r, "the warm-up allreduce"));
    for (int i = 0; i < n; i++) WDC_TRY(wdc_nccl_wait(ranks[i]));
    return WD_OK;
}
extern "C" wd_status wd_comm_nccl_create_all(int ndev, const int *devices, wd_comm **ranks) {
    if (ndev < 1 || ndev > 256 || !ranks)
        return wdc_fail(WD_ERR_INVALID_ARG, "wd_comm_nccl_create_all: 1..256 devices");
    WDC_TRY(wdc_nccl_load());
    ncclComm_t comms[256];
    int devs[256];
    memset(comms, 0, sizeof comms);
    for (int i = 0; i < ndev; i++) { devs[i] = devices ? devices[i] : i; ranks[i] = NULL; }
    ncclUniqueId uid;
    WDC_NCCL(wdc_nc.GetUniqueId(&uid));
    wdc_group *g = wdc_group_new(ndev);
    if (!g) return wdc_fail(WD_ERR_NOMEM, "out of memory");
    double timeout = wd_comm_timeout();
    wd_status st = WD_OK;
    ncclResult_t r = wdc_nc.GroupStart();
    for (int i = 0; r == ncclSuccess && i < ndev; i++) {
        ncclConfig_t cfg = wdc_nccl_config();
        if (cudaSetDevice(devs[i]) != cudaSuccess) {
            st = wdc_fail(WD_ERR_INVALID_ARG, "GPU %d: %s", devs[i], cudaGetErrorString(cudaGetLastError())); break; }
        ncclResult_t q = wdc_nc.CommInitRankConfig(&comms[i], ndev, uid, i, &cfg);
        if (q != ncclSuccess && q != ncclInProgress) r = q;
    }
    ncclResult_t e = wdc_nc.GroupEnd();
    if (r == ncclSuccess && e != ncclInProgress) r = e;
    if (!st && r != ncclSuccess)
        st = wdc_fail(WD_ERR_DEVICE, "NCCL set-up of %d GPUs: %s", ndev, wdc_nc.GetErrorString(r));
    for (int i = 0; !st && i < ndev; i++) st = wdc_nccl_settle(comms[i], g, i, timeout, "NCCL set-up");
    for (int i = 0; !st && i < ndev; i++) st = wdc_nccl_wrap(comms[i], i, ndev, devs[i], g, &ranks[i]);
    if (!st) st = wdc_nccl_warm_up(ranks, ndev);
    if (st) {
        wdc_group_abort(g, 0, st, wd_last_error());   // the wrapped ones abort in their teardown
        for (int i = 0; i < ndev; i++) {
            if (ranks[i]) { wd_comm_nccl_destroy(ranks[i]); ranks[i] = NULL; }
            else { if (comms[i]) wdc_nc.CommAbort(comms[i]); wdc_group_release(g); }
        }
        return st;
    }
    return WD_OK;
}
extern "C" wd_status wd_comm_nccl_unique_id(void *id, size_t bytes) {
    if (!id || bytes < sizeof(ncclUniqueId))
        return wdc_fail(WD_ERR_INVALID_ARG, "unique id buffer of %zu bytes, NCCL needs %zu", bytes,
                        sizeof(ncclUniqueId));
    WDC_TRY(wdc_nccl_load());
    WDC_NCCL(wdc_nc.GetUniqueId((ncclUniqueId *)id));
    return WD_OK;
}
extern "C" wd_status wd_comm_nccl_init_rank(const void *id, int rank, int nranks, int device, wd_comm **out) {
    if (!id || !out || nranks < 1 || rank < 0 || rank >= nranks)
        return wdc_fail(WD_ERR_INVALID_ARG, "wd_comm_nccl_init_rank: rank %d of %d", rank, nranks);
    *out = NULL;
    WDC_TRY(wdc_nccl_load());
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    WDC_CUDA(cudaSetDevice(device));
    wdc_group *g = wdc_group_new(1);
    if (!g) return wdc_fail(WD_ERR_NOMEM, "out of memory");
    ncclComm_t comm = NULL;
    ncclConfig_t cfg = wdc_nccl_config();
    ncclResult_t r = wdc_nc.CommInitRankConfig(&comm, nranks, uid, rank, &cfg);
    wd_status st = r == ncclSuccess || r == ncclInProgress ? WD_OK
                 : wdc_fail(WD_ERR_DEVICE, "rank %d of %d: ncclCommInitRankConfig: %s", rank, nranks,
                            wdc_nc.GetErrorString(r));
    if (!st) st = wdc_nccl_settle(comm, g, rank, wd_comm_timeout(), "NCCL set-up (waiting for every rank)");
    if (st) {
        if (comm) wdc_nc.CommAbort(comm);
        wdc_group_release(g);
        return st;
    }
    if ((st = wdc_nccl_wrap(comm, rank, nranks, device, g, out)) != WD_OK) {
        wdc_nc.CommAbort(comm);
        wdc_group_release(g);
        return st;
    }
    st = wdc_nccl_warm_up(out, 1);
    if (st) {
        wdc_group_abort(g, rank, st, wd_last_error());
        wd_comm_nccl_destroy(*out);
        *out = NULL;
        return st;
    }
    return WD_OK;
}

// Several ranks on one GPU (tests of the multi-GPU logic on one device): the
// host-side ordering (barrier, abort, timeout) is the in-process CPU
// communicator's; device collectives run as kernels in rank order, waiting on
// the host (this communicator is for tests, not for speed).
struct wdc_hub {
    int n, device;
    wd_comm *cpu[256];              // wd_comm_local_create: barrier, abort, timeout
    const float *bufs[256];
    const void *g[256];
    size_t gs[256];
    cudaStream_t st[256];
    wdc_group *group;
};
static wd_status wdc_hub_barrier(wd_comm *c) {
    wdc_hub *h = (wdc_hub *)c->impl;
    wd_comm *cpu = h->cpu[c->rank];
    wd_status st = cpu->ops->barrier(cpu);
    if (st) { char err[1024]; snprintf(err, sizeof err, "%s", wd_last_error());
        wdc_group_abort(h->group, c->rank, st, err); return wdc_fail(st, "%s", err); }
    return WD_OK;
}
static wd_status wdc_hub_stream_allreduce(wd_comm *c, float *buf, size_t count, void *stream) {
    wdc_hub *h = (wdc_hub *)c->impl;
    int r = c->rank, n = h->n;
    cudaStream_t st = (cudaStream_t)stream;
    WDC_CUDA(cudaStreamSynchronize(st));   // this rank's buffer is final
    h->bufs[r] = buf;
    WDC_TRY(wdc_hub_barrier(c));
    size_t a = count * (size_t)r / (size_t)n, e = count * (size_t)(r + 1) / (size_t)n;
    wdc_ptrs in;
    for (int q = 0; q < n; q++) in.p[q] = h->bufs[q];
    if (e > a) { WDC_GO(wdc_sum_ranks_k, wdc_blocks((int64_t)(e - a), WDC_THREADS), WDC_THREADS, st)(buf, in, n, a, e);
        WDC_LAUNCH("sum_ranks"); }
    WDC_CUDA(cudaStreamSynchronize(st));
    WDC_TRY(wdc_hub_barrier(c));
    for (int q = 0; q < n; q++) {
        if (q == r) continue;
        size_t qa = count * (size_t)q / (size_t)n, qe = count * (size_t)(q + 1) / (size_t)n;
        if (qe > qa) WDC_CUDA(cudaMemcpyAsync(buf + qa, h->bufs[q] + qa, 4 * (qe - qa), cudaMemcpyDeviceToDevice, st));
    }
    WDC_CUDA(cudaStreamSynchronize(st));
    return wdc_hub_barrier(c);
}
static wd_status wdc_hub_stream_allgather(wd_comm *c, const void *send, void *recv, size_t bytes, void *stream) {
    wdc_hub *h = (wdc_hub *)c->impl;
    cudaStream_t st = (cudaStream_t)stream;
    WDC_CUDA(cudaStreamSynchronize(st));
    h->g[c->rank] = send;
    WDC_TRY(wdc_hub_barrier(c));
    for (int q = 0; q < h->n; q++)
        if (bytes)
            WDC_CUDA(cudaMemcpyAsync((char *)recv + bytes * (size_t)q, h->g[q], bytes, cudaMemcpyDeviceToDevice, st));
    WDC_CUDA(cudaStreamSynchronize(st));
    return wdc_hub_barrier(c);
}
static wd_status wdc_hub_allreduce(wd_comm *c, float *buf, size_t count) {
    wdc_hub *h = (wdc_hub *)c->impl;
    WDC_CUDA(cudaSetDevice(h->device));
    return wdc_hub_stream_allreduce(c, buf, count, (void *)h->st[c->rank]);
}
// Views of every rank's `mine` (host memory, as the CPU communicator's); the
// trailing barrier: no rank's next collective overwrites g and gs before
// every rank has read them.
static wd_status wdc_hub_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    wdc_hub *h = (wdc_hub *)c->impl;
    h->g[c->rank] = mine;
    h->gs[c->rank] = bytes;
    WDC_TRY(wdc_hub_barrier(c));
    for (int q = 0; q < h->n; q++) { all[q] = h->g[q]; if (sizes) sizes[q] = h->gs[q]; }
    return wdc_hub_barrier(c);
}
static wd_status wdc_hub_poll(wd_comm *c, double waited) {
    (void)waited;   // the hub's collectives wait on the host (with the CPU communicator's timeout)
    wdc_hub *h = (wdc_hub *)c->impl;
    if (wdc_group_aborted(h->group))
        return wdc_fail(WD_ERR_ABORTED, "rank %d: stopped because %s", c->rank, h->group->why);
    return WD_OK;
}
static void wdc_hub_abort(wd_comm *c, wd_status st, const char *why) {
    wdc_hub *h = (wdc_hub *)c->impl;
    wdc_group_abort(h->group, c->rank, st, why);
    h->cpu[c->rank]->ops->abort(h->cpu[c->rank], st, why);
}
static const wd_comm_ops wdc_hub_ops = {wdc_hub_allreduce, wdc_hub_allgather, wdc_hub_barrier, wdc_hub_abort,
                                        wdc_hub_stream_allreduce, wdc_hub_stream_allgather, wdc_hub_poll};

extern "C" void wd_comm_cuda_local_destroy(wd_comm **ranks, int nranks) {
    if (!ranks || !ranks[0]) return;
    wdc_hub *h = (wdc_hub *)ranks[0]->impl;
    cudaSetDevice(h->device);
    for (int r = 0; r < nranks; r++) if (h->st[r]) cudaStreamDestroy(h->st[r]);
    if (h->cpu[0]) wd_comm_local_destroy(h->cpu, nranks);
    if (h->group) wdc_group_release(h->group);
    wd_free(ranks[0]);
    wd_free(h);
    for (int r = 0; r < nranks; r++) ranks[r] = NULL;
}
extern "C" wd_status wd_comm_cuda_local_create(int nranks, int device, wd_comm **ranks) {
    if (nranks < 1 || nranks > 256 || !ranks)
        return wdc_fail(WD_ERR_INVALID_ARG, "wd_comm_cuda_local_create: 1..256 ranks");
    wdc_hub *h = (wdc_hub *)wd_alloc(sizeof(wdc_hub));
    wd_comm *cs = (wd_comm *)wd_alloc(sizeof(wd_comm) * (size_t)nranks);
    if (!h || !cs) { wd_free(h); wd_free(cs); return wdc_fail(WD_ERR_NOMEM, "out of memory"); }
    memset(h, 0, sizeof *h);
    memset(cs, 0, sizeof(wd_comm) * (size_t)nranks);
    h->n = nranks; h->device = device;
    for (int r = 0; r < nranks; r++) { cs[r].ops = &wdc_hub_ops; cs[r].rank = r; cs[r].size = nranks; cs[r].impl = h;
        ranks[r] = &cs[r]; }
    h->group = wdc_group_new(1);
    wd_status st = h->group ? WD_OK : wdc_fail(WD_ERR_NOMEM, "out of memory");
    if (!st) st = wd_comm_local_create(nranks, wd_comm_timeout(), h->cpu);
    cudaError_t e = cudaSuccess;
    if (!st) e = cudaSetDevice(device);
    for (int r = 0; !st && e == cudaSuccess && r < nranks; r++)
        e = cudaStreamCreateWithFlags(&h->st[r], cudaStreamNonBlocking);
    if (!st && e != cudaSuccess)
        st = wdc_fail(WD_ERR_DEVICE, "same-GPU communicator on GPU %d: %s", device, cudaGetErrorString(e));
    if (st) { wd_comm_cuda_local_destroy(ranks, nranks); return st; }
    return WD_OK;
}

// The ranks of wd_train on this process's GPUs: NCCL across distinct GPUs,
// the same-GPU communicator when every rank shares one (tests).
static wd_status wdc_comm_create(int nranks, const int *devices, wd_comm **ranks) {
    int same = 1, distinct = 1;
    for (int a = 0; a < nranks; a++)
        for (int b = 0; b < a; b++) { same &= devices[a] == devices[b]; distinct &= devices[a] != devices[b]; }
    if (same) return wd_comm_cuda_local_create(nranks, devices[0], ranks);
    if (distinct) return wd_comm_nccl_create_all(nranks, devices, ranks);
    return wdc_fail(WD_ERR_INVALID_ARG, "device_ids: every rank on its own GPU, or all on one (simulation); not a mix");
}
static void wdc_comm_destroy(wd_comm **ranks, int nranks) {
    if (!ranks || !ranks[0]) return;
    if (ranks[0]->ops == &wdc_hub_ops) wd_comm_cuda_local_destroy(ranks, nranks);
    else for (int r = 0; r < nranks; r++) { wd_comm_nccl_destroy(ranks[r]); ranks[r] = NULL; }
}
