// widedeep_cuda.cu - the CUDA backend of widedeep.h: the same Wide&Deep model
// trained on NVIDIA GPUs (cuBLASLt GEMMs, CUB sort-and-merge of sparse rows,
// fused optimizers), one host thread and one loader per GPU, gradients
// combined through wd_comm (NCCL across GPUs). MIT licence.
//
// Build: nvcc -O3 -arch=sm_90 -DWD_HAVE_CUDA -c widedeep_cuda.cu, then link the
// host program (built with -DWD_HAVE_CUDA) against widedeep_cuda.o
// -lcublasLt -lcublas -lnccl -lcudart. This file includes widedeep.h for the
// declarations only; the host program holds the implementation.
//
// Contents
//   1. Checks        every CUDA / cuBLASLt / NCCL call -> wd_status with call, file, line
//   2. Kernels       gather+pool, wide logit, loss, bias/ReLU grads, sparse merge+update, dense update
//   3. GEMMs         cuBLASLt row-major wrappers (bias and bias+ReLU epilogues), TF32
//   4. Device model  one allocation carved by wd_plan_make(), upload, download
//   5. Step          forward, backward, exchange, update
//   6. Communicators NCCL (wd_comm), and several ranks on one GPU (tests)
//   7. wd_cuda_train the trainer: a host thread and a loader per rank
//
// Scope of this version: one-hot slots (Criteo, Avazu); multi-hot schemas get
// WD_ERR_UNSUPPORTED. FP32 storage, TF32 GEMMs (WD_CUDA_FP32=1: FP32). Not built
// yet: BF16 compute with loss scaling, CUDA graphs, evaluation on the device
// (wd_evaluate runs on the CPU after training).
// Environment: WD_CUDA_FP32=1 full-FP32 GEMMs; WD_CUDA_MAX_BYTES caps the device
// memory the plan may use; WD_COMM_TIMEOUT seconds before a stuck NCCL
// collective aborts (default 600); WD_CHECK_TABLES=K compares the replicas'
// table checksums across ranks every K steps; WD_CUDA_TIMING=1 times stages.
#ifndef WD_HAVE_CUDA
#define WD_HAVE_CUDA
#endif
#include "widedeep.h"

#include <cublasLt.h>
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <nccl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// ---- 1. Checks --------------------------------------------------------------------------------
// Messages go to the host implementation's per-thread wd_last_error().
static thread_local char wdc_err[512];
static wd_status wdc_fail(wd_status st, const char *fmt, ...) {
    char tmp[512];   // arguments may point into wd_last_error()'s buffer
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(wdc_err, tmp, sizeof tmp);
    wd_set_last_error(wdc_err);
    return st;
}
#define WDC_CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) \
    return wdc_fail(WD_ERR_DEVICE, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, cudaGetErrorString(e_)); } while (0)
#define WDC_LT(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) \
    return wdc_fail(WD_ERR_DEVICE, "%s failed at %s:%d: cuBLAS status %d", #call, __FILE__, __LINE__, (int)s_); } while (0)
#define WDC_NCCL(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) \
    return wdc_fail(WD_ERR_DEVICE, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, ncclGetErrorString(r_)); } while (0)
#define WDC_TRY(expr) do { wd_status t_ = (expr); if (t_ != WD_OK) return t_; } while (0)
#define WDC_LAUNCH() WDC_CUDA(cudaGetLastError())

static double wdc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---- 2. Kernels ---------------------------------------------------------------------------------
// Slot id arrays of a device batch, passed by value.
struct wdc_ids { const uint32_t *ids[WD_MAX_SLOTS]; };
struct wdc_cross { int a[WD_MAX_CROSSES], b[WD_MAX_CROSSES]; };

// The same mix as the CPU's wd__mix64 / wd_cross_bucket (tested against it).
__device__ __forceinline__ uint64_t wdc_mix64(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}
__device__ __forceinline__ uint32_t wdc_cross_bucket(uint32_t a, uint32_t b, int c, uint32_t buckets) {
    return (uint32_t)(wdc_mix64(((uint64_t)a << 32 | b) ^ ((uint64_t)(c + 1) * 0x9E3779B97F4A7C15ull)) % buckets);
}

// x (n, IN) = [dense | emb rows of every slot], all slots in one launch:
// grid.x over samples, threads over the IN columns.
__global__ void wdc_gather_pool(float *x, const float *dense, wdc_ids ids, const float *emb, const int64_t *table_off,
                                int n, int D, int S, int E) {
    int i = blockIdx.x;
    if (i >= n) return;
    int IN = D + S * E;
    for (int c = threadIdx.x; c < IN; c += blockDim.x) {
        float v;
        if (c < D) v = dense[(size_t)i * D + c];
        else {
            int k = (c - D) / E, e = (c - D) % E;
            v = emb[(table_off[k] + ids.ids[k][i]) * E + e];
        }
        x[(size_t)i * IN + c] = v;
    }
}

// wide logit, probability, loss and dlogit per sample; loss and weight sums
// are added into acc[0], acc[1] (the two floats after the dense gradient).
__global__ void wdc_wide_loss(float *prob, float *dlogit, float *acc, const float *deep_out, const float *dense,
                              const float *label, const float *weight, wdc_ids ids, const float *wide,
                              const float *wide_dense, const int64_t *table_off, wdc_cross cr, int ncross,
                              uint32_t cross_buckets, int n, int D, int S, int has_wide) {
    __shared__ float sl[256], sw[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float l = 0.0f, w = 0.0f;
    if (i < n) {
        float z = deep_out ? deep_out[i] : 0.0f;
        if (has_wide) {
            z += wide_dense[D];
            for (int j = 0; j < D; j++) z += wide_dense[j] * dense[(size_t)i * D + j];
            for (int k = 0; k < S; k++) z += wide[table_off[k] + ids.ids[k][i]];
            for (int c = 0; c < ncross; c++)
                z += wide[table_off[S + c] + wdc_cross_bucket(ids.ids[cr.a[c]][i], ids.ids[cr.b[c]][i], c, cross_buckets)];
        }
        float y = label[i];
        w = weight[i];
        float p = 1.0f / (1.0f + expf(-z));
        prob[i] = p;
        dlogit[i] = w * (p - y);
        l = w * (fmaxf(z, 0.0f) - z * y + log1pf(expf(-fabsf(z))));
    }
    sl[threadIdx.x] = l; sw[threadIdx.x] = w;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) { sl[threadIdx.x] += sl[threadIdx.x + s]; sw[threadIdx.x] += sw[threadIdx.x + s]; }
        __syncthreads();
    }
    if (threadIdx.x == 0) { atomicAdd(&acc[0], sl[0]); atomicAdd(&acc[1], sw[0]); }
}

// g[j] = sum_i dz[i][j] (bias gradient) for a (n, m) row-major dz.
__global__ void wdc_colsum(float *g, const float *dz, int n, int m) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += dz[(size_t)i * m + j];
    g[j] = s;
}
// d[q] = a[q] > 0 ? d[q] : 0
__global__ void wdc_relu_grad(float *d, const float *a, size_t count) {
    size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q < count && !(a[q] > 0.0f)) d[q] = 0.0f;
}
// wide dense gradient: gw[j] = sum_i dlogit_i x_ij, gw[D] = sum_i dlogit_i
__global__ void wdc_wide_dense_grad(float *gw, const float *dlogit, const float *dense, int n, int D) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > D) return;
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += dlogit[i] * (j < D ? dense[(size_t)i * D + j] : 1.0f);
    gw[j] = s;
}
// Sparse keys: occurrence q = i * T + t (T = S + ncross) has key table_off[t] + id.
__global__ void wdc_sparse_keys(uint64_t *key, uint32_t *occ, wdc_ids ids, const int64_t *table_off, wdc_cross cr,
                                int ncross, uint32_t cross_buckets, int n, int S) {
    int T = S + ncross;
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n * T) return;
    int i = q / T, t = q % T;
    uint32_t id = t < S ? ids.ids[t][i] : wdc_cross_bucket(ids.ids[cr.a[t - S]][i], ids.ids[cr.b[t - S]][i], t - S, cross_buckets);
    key[q] = (uint64_t)(table_off[t] + id);
    occ[q] = (uint32_t)q;
}

struct wdc_opt {
    int optimizer;                  // WD_ADAGRAD / WD_ADAM
    float lr_deep, lr_wide, beta, l1, l2, b1, b2, eps, c1, c2;
    int has_wide, has_deep;
};
__device__ __forceinline__ void wdc_ftrl(float *w, float *z, float *n, float g, const wdc_opt &o) {
    float nn = *n + g * g;
    float sigma = (sqrtf(nn) - sqrtf(*n)) / o.lr_wide;
    *z += g - sigma * *w;
    *n = nn;
    float zz = *z;
    *w = (fabsf(zz) <= o.l1 || nn == 0.0f) ? 0.0f : -(zz - copysignf(o.l1, zz)) / ((o.beta + sqrtf(nn)) / o.lr_wide + o.l2);
}
__device__ __forceinline__ void wdc_deep(float *w, float *s1, float *s2, float g, const wdc_opt &o) {
    if (o.optimizer == WD_ADAGRAD) { *s1 += g * g; *w -= o.lr_deep * g / (sqrtf(*s1) + 1e-10f); }
    else {
        *s1 = o.b1 * *s1 + (1.0f - o.b1) * g;
        *s2 = o.b2 * *s2 + (1.0f - o.b2) * g * g;
        *w -= o.lr_deep * (*s1 / o.c1) / (sqrtf(*s2 / o.c2) + o.eps);
    }
}

// One warp per run of equal keys (runs from CUB's run-length encode over the
// sorted occurrences): lane e sums embedding-gradient column e, lane 0 the wide
// gradient, in occurrence order (deterministic). With apply, the merged row is
// scaled by 1/sum(weights) and the optimizers update the touched rows; without,
// the row is written to rows (R floats) for an exchange between ranks.
// Rows come from dx/dlogit (local occurrences) or from gathered rows.
__global__ void wdc_merge_rows(float *rows, uint64_t *ukey_out, const uint64_t *ukey, const int *run_off, const int *run_cnt,
                               const int *nruns, const uint32_t *occ, int T, int S, int D, int E, int R,
                               const float *dx, const float *dlogit, const float *in_rows,
                               int apply, const float *acc, float *wide, float *wz, float *wn,
                               float *emb, float *es1, float *es2, int64_t emb_rows, wdc_opt o) {
    int run = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (run >= *nruns) return;
    uint64_t key = ukey[run];
    int a = run_off[run], c = run_cnt[run];
    for (int col = lane; col < R; col += 32) {
        float s = 0.0f;
        for (int j = 0; j < c; j++) {
            uint32_t q = occ[a + j];
            if (in_rows) s += in_rows[(size_t)q * R + col];
            else {
                int i = q / T, t = q % T;
                if (col == 0) s += o.has_wide ? dlogit[i] : 0.0f;
                else if (t < S) s += dx[(size_t)i * (D + S * E) + D + t * E + (col - 1)];
            }
        }
        if (!apply) { rows[(size_t)run * R + col] = s; if (col == 0) ukey_out[run] = key; continue; }
        float g = s / acc[1];   // the batch's weighted mean
        if (acc[1] <= 0.0f) continue;
        if (col == 0) { if (o.has_wide) wdc_ftrl(&wide[key], &wz[key], &wn[key], g, o); }
        else if ((int64_t)key < emb_rows) {
            size_t at = (size_t)key * E + (col - 1);
            wdc_deep(&emb[at], &es1[at], es2 ? &es2[at] : es1, g, o);
        }
    }
}

// The fused dense update over the flat buffer: Adagrad/Adam for the MLP,
// FTRL for the wide dense weights; g is the summed gradient, acc[1] the weight sum.
__global__ void wdc_dense_update(float *w, float *s1, float *s2, const float *g, const float *acc, int64_t P_mlp, int64_t P, wdc_opt o) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P || acc[1] <= 0.0f) return;
    float gi = g[i] / acc[1];
    if (i < P_mlp) wdc_deep(&w[i], &s1[i], &s2[i], gi, o);
    else if (o.has_wide) wdc_ftrl(&w[i], &s1[i], &s2[i], gi, o);
}
__global__ void wdc_add(float *dst, const float *src, size_t count) {
    size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q < count) dst[q] += src[q];
}
// A position-weighted sum of an array (for comparing replicas): acc[0] +=.
__global__ void wdc_checksum(double *acc, const float *x, int64_t n) {
    __shared__ double part[256];
    double s = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        s += (double)x[i] * (double)((i % 1021) + 1);
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) { if ((int)threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k]; __syncthreads(); }
    if (threadIdx.x == 0) atomicAdd(acc, part[0]);
}
__global__ void wdc_iota(uint32_t *o, int n) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q < n) o[q] = (uint32_t)q;
}

// ---- 3. GEMMs -----------------------------------------------------------------------------------
// Row-major C (m, n) = op(A) (m, k) * op(B) (k, n) [+ bias, ReLU], as the
// column-major product C^T = op(B)^T op(A)^T that cuBLASLt computes.
struct wdc_blas { cublasLtHandle_t lt; void *ws; size_t ws_bytes; cublasComputeType_t compute; };

static wd_status wdc_gemm(wdc_blas *bl, cudaStream_t st, int ta, int tb, int m, int n, int k, const float *A, const float *B,
                          float *C, const float *bias, int relu) {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    // column-major view: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m)
    cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    WDC_LT(cublasLtMatmulDescCreate(&desc, bl->compute, CUDA_R_32F));
    WDC_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
    WDC_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
    if (bias) {   // bias per row of C^T = per column of row-major C
        cublasLtEpilogue_t epi = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        WDC_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        WDC_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    // row-major B (k, n) [or (n, k) if tb] is column-major (n, k) [(k, n)]
    WDC_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, tb ? k : n, tb ? n : k, tb ? k : n));
    WDC_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, ta ? m : k, ta ? k : m, ta ? m : k));
    WDC_LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, m, n));
    float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = cublasLtMatmul(bl->lt, desc, &one, B, la, A, lb, &zero, C, lc, C, lc, NULL, bl->ws, bl->ws_bytes, st);
    cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    if (s != CUBLAS_STATUS_SUCCESS) return wdc_fail(WD_ERR_DEVICE, "cublasLtMatmul (%dx%dx%d) failed: status %d", m, n, k, (int)s);
    return WD_OK;
}

// ---- 4. Device model ----------------------------------------------------------------------------
struct wdc_rank {
    int rank, device;
    wd_model_view v;
    wd_plan plan;
    int B;                          // samples per step on this rank
    char *slab;                     // the one allocation, carved by the plan
    float *dense, *s1, *s2, *wide, *wz, *wn, *emb, *es1, *es2;
    char *batch[2];
    float *x, *act[WD_MAX_LAYERS + 1], *gp, *gq, *lg;   // lg: prob | dlogit | spare
    float *g;                       // (P + 2): dense gradient, loss sum, weight sum
    uint64_t *key, *key_s, *ukey;
    uint32_t *occ, *occ_s;
    int *run_cnt, *run_off, *nruns;
    float *rows, *grows;            // merged rows; gathered rows (several ranks)
    uint64_t *gkeys;                // gathered keys (several ranks)
    char *send;                     // this rank's packed keys + rows (several ranks)
    void *scratch;
    size_t scratch_bytes;
    int64_t *table_off;             // device copy (ntables + 1)
    wdc_blas blas;
    cudaStream_t compute, copy;
    cudaEvent_t copied[2], consumed[2];
    cudaEvent_t mark[6];            // stage boundaries (WD_CUDA_TIMING=1)
    int timing;
    wd_comm *comm;
    size_t batch_offs[WD_MAX_SLOTS + 3];   // offsets of label, weight, dense, ids[k] inside a batch
};

static wd_status wdc_rank_free(wdc_rank *r) {
    if (r->slab) cudaFree(r->slab);
    if (r->table_off) cudaFree(r->table_off);
    if (r->blas.lt) cublasLtDestroy(r->blas.lt);
    if (r->compute) cudaStreamDestroy(r->compute);
    if (r->copy) cudaStreamDestroy(r->copy);
    for (int i = 0; i < 2; i++) { if (r->copied[i]) cudaEventDestroy(r->copied[i]); if (r->consumed[i]) cudaEventDestroy(r->consumed[i]); }
    for (int i = 0; i < 6; i++) if (r->mark[i]) cudaEventDestroy(r->mark[i]);
    memset(r, 0, sizeof *r);
    return WD_OK;
}

static wd_status wdc_rank_init(wdc_rank *r, wd_model *m, int rank, int device, int B, int ranks) {
    memset(r, 0, sizeof *r);
    r->rank = rank; r->device = device; r->B = B;
    wd_model_view_get(m, &r->v);
    WDC_CUDA(cudaSetDevice(device));
    wd_status st = wd_plan_make(m, B, ranks, &r->plan);
    if (st) return wdc_fail(st, "device plan: %s", wd_last_error());
    size_t free_b = 0, total_b = 0;
    WDC_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const char *cap = getenv("WD_CUDA_MAX_BYTES");   // tests: pretend a smaller device
    if (cap && strtoull(cap, NULL, 10) < free_b) free_b = (size_t)strtoull(cap, NULL, 10);
    if ((size_t)r->plan.total > free_b)
        return wdc_fail(WD_ERR_NOMEM, "GPU %d has %.2f GiB free, the plan needs %.2f GiB (see wd train --plan)", device, free_b / 1073741824.0, r->plan.total / 1073741824.0);
    WDC_CUDA(cudaMalloc((void **)&r->slab, (size_t)r->plan.total));
#define WDC_AT(T, name) ((T)(r->slab + wd_plan_offset(&r->plan, name)))
    r->dense = WDC_AT(float *, "dense params"); r->s1 = WDC_AT(float *, "dense state 1"); r->s2 = WDC_AT(float *, "dense state 2");
    r->wide = WDC_AT(float *, "wide weights"); r->wz = WDC_AT(float *, "wide ftrl z"); r->wn = WDC_AT(float *, "wide ftrl n");
    r->emb = WDC_AT(float *, "embeddings"); r->es1 = WDC_AT(float *, "embedding state 1");
    r->es2 = r->v.emb_s2 ? WDC_AT(float *, "embedding state 2") : NULL;
    r->batch[0] = WDC_AT(char *, "input batch 0"); r->batch[1] = WDC_AT(char *, "input batch 1");
    r->x = WDC_AT(float *, "mlp input x");
    for (int l = 0; l < r->v.nlayers; l++) {
        char name[40];
        snprintf(name, sizeof name, "activations layer %d", l);
        r->act[l] = WDC_AT(float *, name);
    }
    r->gp = WDC_AT(float *, "gradient ping"); r->gq = WDC_AT(float *, "gradient pong");
    r->lg = WDC_AT(float *, "logits, probabilities"); r->g = WDC_AT(float *, "dense gradient");
    r->key = WDC_AT(uint64_t *, "sparse keys"); r->key_s = WDC_AT(uint64_t *, "sparse keys sorted");
    r->occ = WDC_AT(uint32_t *, "sparse occurrences"); r->occ_s = WDC_AT(uint32_t *, "sparse occurrences sorted");
    r->ukey = WDC_AT(uint64_t *, "sparse unique keys"); r->run_cnt = WDC_AT(int *, "sparse run counts");
    r->run_off = WDC_AT(int *, "sparse run offsets"); r->rows = WDC_AT(float *, "sparse merged rows");
    r->grows = WDC_AT(float *, "sparse gathered rows");
    r->gkeys = WDC_AT(uint64_t *, "sparse gathered keys");
    r->send = WDC_AT(char *, "sparse send");
    r->scratch = WDC_AT(void *, "sort scratch");
    r->blas.ws = WDC_AT(void *, "cublasLt workspace");
#undef WDC_AT
    for (int i = 0; i < r->plan.n; i++) if (!strcmp(r->plan.e[i].name, "sort scratch")) r->scratch_bytes = (size_t)r->plan.e[i].bytes;
    r->blas.ws_bytes = 32 << 20;
    // TF32 by default; WD_CUDA_FP32=1 for full FP32 (the comparison tests use it)
    r->blas.compute = getenv("WD_CUDA_FP32") ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    r->nruns = r->run_cnt + (size_t)B * (r->v.S + r->v.desc->ncross) * ranks;   // the run counts' extra last slot
    WDC_LT(cublasLtCreate(&r->blas.lt));
    WDC_CUDA(cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking));
    WDC_CUDA(cudaStreamCreateWithFlags(&r->copy, cudaStreamNonBlocking));
    for (int i = 0; i < 2; i++) {
        WDC_CUDA(cudaEventCreateWithFlags(&r->copied[i], cudaEventDisableTiming));
        WDC_CUDA(cudaEventCreateWithFlags(&r->consumed[i], cudaEventDisableTiming));
        WDC_CUDA(cudaEventRecord(r->consumed[i], r->compute));
    }
    r->timing = getenv("WD_CUDA_TIMING") != NULL;
    for (int i = 0; r->timing && i < 6; i++) WDC_CUDA(cudaEventCreate(&r->mark[i]));
    // the table offsets (a few hundred bytes) get an allocation of their own
    WDC_CUDA(cudaMalloc((void **)&r->table_off, sizeof(int64_t) * (size_t)(r->v.ntables + 1)));
    WDC_CUDA(cudaMemcpy(r->table_off, r->v.table_off, sizeof(int64_t) * (size_t)(r->v.ntables + 1), cudaMemcpyHostToDevice));
    // upload parameters and optimizer state
    int64_t ne = r->v.emb ? r->v.emb_rows * r->v.E : 0;
    WDC_CUDA(cudaMemcpy(r->dense, r->v.dense, 4 * (size_t)r->v.P, cudaMemcpyHostToDevice));
    WDC_CUDA(cudaMemcpy(r->s1, r->v.dense_s1, 4 * (size_t)r->v.P, cudaMemcpyHostToDevice));
    WDC_CUDA(cudaMemcpy(r->s2, r->v.dense_s2, 4 * (size_t)r->v.P, cudaMemcpyHostToDevice));
    WDC_CUDA(cudaMemcpy(r->wide, r->v.wide, 4 * (size_t)r->v.wide_rows, cudaMemcpyHostToDevice));
    WDC_CUDA(cudaMemcpy(r->wz, r->v.wide_z, 4 * (size_t)r->v.wide_rows, cudaMemcpyHostToDevice));
    WDC_CUDA(cudaMemcpy(r->wn, r->v.wide_n, 4 * (size_t)r->v.wide_rows, cudaMemcpyHostToDevice));
    if (ne) {
        WDC_CUDA(cudaMemcpy(r->emb, r->v.emb, 4 * (size_t)ne, cudaMemcpyHostToDevice));
        WDC_CUDA(cudaMemcpy(r->es1, r->v.emb_s1, 4 * (size_t)ne, cudaMemcpyHostToDevice));
        if (r->es2) WDC_CUDA(cudaMemcpy(r->es2, r->v.emb_s2, 4 * (size_t)ne, cudaMemcpyHostToDevice));
    }
    return WD_OK;
}

static wd_status wdc_download(wdc_rank *r) {
    WDC_CUDA(cudaSetDevice(r->device));
    WDC_CUDA(cudaStreamSynchronize(r->compute));
    int64_t ne = r->v.emb ? r->v.emb_rows * r->v.E : 0;
    WDC_CUDA(cudaMemcpy(r->v.dense, r->dense, 4 * (size_t)r->v.P, cudaMemcpyDeviceToHost));
    WDC_CUDA(cudaMemcpy(r->v.dense_s1, r->s1, 4 * (size_t)r->v.P, cudaMemcpyDeviceToHost));
    WDC_CUDA(cudaMemcpy(r->v.dense_s2, r->s2, 4 * (size_t)r->v.P, cudaMemcpyDeviceToHost));
    WDC_CUDA(cudaMemcpy(r->v.wide, r->wide, 4 * (size_t)r->v.wide_rows, cudaMemcpyDeviceToHost));
    WDC_CUDA(cudaMemcpy(r->v.wide_z, r->wz, 4 * (size_t)r->v.wide_rows, cudaMemcpyDeviceToHost));
    WDC_CUDA(cudaMemcpy(r->v.wide_n, r->wn, 4 * (size_t)r->v.wide_rows, cudaMemcpyDeviceToHost));
    if (ne) {
        WDC_CUDA(cudaMemcpy(r->v.emb, r->emb, 4 * (size_t)ne, cudaMemcpyDeviceToHost));
        WDC_CUDA(cudaMemcpy(r->v.emb_s1, r->es1, 4 * (size_t)ne, cudaMemcpyDeviceToHost));
        if (r->es2) WDC_CUDA(cudaMemcpy(r->v.emb_s2, r->es2, 4 * (size_t)ne, cudaMemcpyDeviceToHost));
    }
    return WD_OK;
}

// ---- 5. Step ------------------------------------------------------------------------------------
// step: this rank's count of steps done (every rank counts the same; only
// rank 0 writes it back into the model)
static wdc_opt wdc_options(const wd_model_view *v, int64_t step) {
    const wd_model_desc *d = v->desc;
    wdc_opt o;
    o.optimizer = d->optimizer; o.lr_deep = d->lr_deep; o.lr_wide = d->lr_wide;
    o.beta = d->ftrl_beta; o.l1 = d->ftrl_l1; o.l2 = d->ftrl_l2;
    o.b1 = d->adam_beta1; o.b2 = d->adam_beta2; o.eps = d->adam_eps;
    double t = (double)(step + 1);
    o.c1 = (float)(1.0 - pow(d->adam_beta1, t)); o.c2 = (float)(1.0 - pow(d->adam_beta2, t));
    o.has_wide = !d->no_wide; o.has_deep = !d->no_deep;
    return o;
}

// Device pointers of the batch now in buffer `which` (same carve as the host batch).
static void wdc_batch_ptrs(const wdc_rank *r, int which, const float **label, const float **weight, const float **dense, wdc_ids *ids) {
    const char *base = r->batch[which];
    *label = (const float *)(base + r->batch_offs[0]);
    *weight = (const float *)(base + r->batch_offs[1]);
    *dense = (const float *)(base + r->batch_offs[2]);
    for (int k = 0; k < r->v.S; k++) ids->ids[k] = (const uint32_t *)(base + r->batch_offs[3 + k]);
}

// Sorts n keys with their occurrence indexes (r->occ) into key_s/occ_s, then
// finds the runs of equal keys: ukey (one per run), run_cnt, run_off and the
// run count in *nruns. Stable, so a run lists its occurrences in order.
static wd_status wdc_runs(wdc_rank *r, const uint64_t *keys, int n, cudaStream_t st) {
    int bits = 1;
    while (bits < 63 && ((uint64_t)1 << bits) < (uint64_t)r->v.wide_rows) bits++;
    size_t need[3] = {0, 0, 0};
    WDC_CUDA(cub::DeviceRadixSort::SortPairs(NULL, need[0], keys, r->key_s, r->occ, r->occ_s, n, 0, bits, st));
    WDC_CUDA(cub::DeviceRunLengthEncode::Encode(NULL, need[1], r->key_s, r->ukey, r->run_cnt, r->nruns, n, st));
    WDC_CUDA(cub::DeviceScan::ExclusiveSum(NULL, need[2], r->run_cnt, r->run_off, n, st));
    for (int i = 0; i < 3; i++)
        if (need[i] > r->scratch_bytes) return wdc_fail(WD_ERR_INTERNAL, "CUB needs %zu bytes of scratch, the plan has %zu", need[i], r->scratch_bytes);
    WDC_CUDA(cub::DeviceRadixSort::SortPairs(r->scratch, need[0], keys, r->key_s, r->occ, r->occ_s, n, 0, bits, st));
    WDC_CUDA(cub::DeviceRunLengthEncode::Encode(r->scratch, need[1], r->key_s, r->ukey, r->run_cnt, r->nruns, n, st));
    WDC_CUDA(cub::DeviceScan::ExclusiveSum(r->scratch, need[2], r->run_cnt, r->run_off, n, st));
    return WD_OK;
}

// One training step on rank r for the n samples in device batch `which`.
static wd_status wdc_step(wdc_rank *r, int which, int n, int64_t step, double *stage_s) {
    const wd_model_view *v = &r->v;
    const wd_model_desc *d = v->desc;
    cudaStream_t st = r->compute;
    int S = v->S, D = v->D, E = v->E, T = S + d->ncross;
    const float *label, *weight, *dense;
    wdc_ids ids;
    wdc_batch_ptrs(r, which, &label, &weight, &dense, &ids);
    wdc_cross cr;
    for (int c = 0; c < d->ncross; c++) { cr.a[c] = d->cross[c][0]; cr.b[c] = d->cross[c][1]; }
    float *prob = r->lg, *dlogit = r->lg + r->B;
#define WDC_MARK(i) do { if (r->timing) WDC_CUDA(cudaEventRecord(r->mark[i], st)); } while (0)
    WDC_MARK(0);
    WDC_CUDA(cudaMemsetAsync(r->g, 0, sizeof(float) * (size_t)(v->P + 2), st));
    // forward
    const float *deep_out = NULL;
    if (v->nlayers) {
        wdc_gather_pool<<<n, 256, 0, st>>>(r->x, dense, ids, r->emb, r->table_off, n, D, S, E);
        WDC_LAUNCH();
        WDC_MARK(1);
        const float *in = r->x;
        for (int l = 0; l < v->nlayers; l++) {
            int last = l + 1 == v->nlayers;
            WDC_TRY(wdc_gemm(&r->blas, st, 0, 1, n, v->layer_out[l], v->layer_in[l], in, r->dense + v->layer_w[l], r->act[l], r->dense + v->layer_b[l], !last));
            in = r->act[l];
        }
        deep_out = r->act[v->nlayers - 1];
    } else WDC_MARK(1);
    WDC_MARK(2);
    wdc_wide_loss<<<(n + 255) / 256, 256, 0, st>>>(prob, dlogit, r->g + v->P, deep_out, dense, label, weight, ids, r->wide,
                                                    r->dense + v->P_mlp, r->table_off, cr, d->ncross, d->cross_buckets, n, D, S, !d->no_wide);
    WDC_LAUNCH();
    WDC_MARK(3);
    // backward through the MLP: dz in gp, the next in gq
    float *dz = r->gp, *dn = r->gq;
    if (v->nlayers) {
        WDC_CUDA(cudaMemcpyAsync(dz, dlogit, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, st));
        for (int l = v->nlayers - 1; l >= 0; l--) {
            int in_w = v->layer_in[l], out_w = v->layer_out[l];
            const float *a_in = l ? r->act[l - 1] : r->x;
            WDC_TRY(wdc_gemm(&r->blas, st, 1, 0, out_w, in_w, n, dz, a_in, r->g + v->layer_w[l], NULL, 0));   // dW = dz^T a
            wdc_colsum<<<(out_w + 255) / 256, 256, 0, st>>>(r->g + v->layer_b[l], dz, n, out_w);
            WDC_LAUNCH();
            WDC_TRY(wdc_gemm(&r->blas, st, 0, 0, n, in_w, out_w, dz, r->dense + v->layer_w[l], dn, NULL, 0));   // da = dz W
            if (l) {
                size_t cnt = (size_t)n * in_w;
                wdc_relu_grad<<<(unsigned)((cnt + 255) / 256), 256, 0, st>>>(dn, a_in, cnt);
                WDC_LAUNCH();
            }
            float *t = dz; dz = dn; dn = t;
        }
    }
    WDC_MARK(4);
    if (!d->no_wide) {
        wdc_wide_dense_grad<<<(D + 1 + 127) / 128, 128, 0, st>>>(r->g + v->P_mlp, dlogit, dense, n, D);
        WDC_LAUNCH();
    }
    // sparse rows: keys, sort, runs
    int N = n * T;
    wdc_sparse_keys<<<(N + 255) / 256, 256, 0, st>>>(r->key, r->occ, ids, r->table_off, cr, d->ncross, d->cross_buckets, n, S);
    WDC_LAUNCH();
    WDC_TRY(wdc_runs(r, r->key, N, st));
    const float *dx = dz;   // (n, IN) after the loop
    wdc_opt o = wdc_options(v, step);
    int warps = 8, blocks = (N + warps - 1) / warps;
    wd_comm *c = r->comm;
    if (!c || c->size == 1) {
        // one rank: merge and update in the same pass
        wdc_merge_rows<<<blocks, 32 * warps, 0, st>>>(NULL, NULL, r->ukey, r->run_off, r->run_cnt, r->nruns, r->occ_s, T, S, D, E, v->R,
                                                       dx, dlogit, NULL, 1, r->g + v->P, r->wide, r->wz, r->wn, r->emb, r->es1, r->es2, v->emb_rows, o);
        WDC_LAUNCH();
    } else {
        // several ranks: the dense gradient is summed; every rank's merged rows
        // are gathered, merged again by key (rank order) and applied on every
        // replica, so tables stay identical
        wdc_merge_rows<<<blocks, 32 * warps, 0, st>>>(r->rows, r->key, r->ukey, r->run_off, r->run_cnt, r->nruns, r->occ_s, T, S, D, E, v->R,
                                                       dx, dlogit, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, o);
        WDC_LAUNCH();
        int nr = 0;
        WDC_CUDA(cudaMemcpyAsync(&nr, r->nruns, sizeof(int), cudaMemcpyDeviceToHost, st));
        WDC_CUDA(cudaStreamSynchronize(st));
        double t0 = wdc_now();
        WDC_TRY(c->ops->allreduce_sum(c, r->g, (size_t)(v->P + 2)));
        size_t R = (size_t)v->R, bytes = (8 + 4 * R) * (size_t)nr;
        WDC_CUDA(cudaMemcpyAsync(r->send, r->key, 8 * (size_t)nr, cudaMemcpyDeviceToDevice, st));
        WDC_CUDA(cudaMemcpyAsync(r->send + 8 * (size_t)nr, r->rows, 4 * R * nr, cudaMemcpyDeviceToDevice, st));
        WDC_CUDA(cudaStreamSynchronize(st));
        const void *views[256];
        size_t sizes[256];
        WDC_TRY(c->ops->allgather(c, r->send, bytes, views, sizes));
        size_t total = 0;
        for (int q = 0; q < c->size; q++) {
            size_t cnt = sizes[q] / (8 + 4 * R);
            WDC_CUDA(cudaMemcpyAsync(r->gkeys + total, views[q], 8 * cnt, cudaMemcpyDefault, st));
            WDC_CUDA(cudaMemcpyAsync(r->grows + total * R, (const char *)views[q] + 8 * cnt, 4 * cnt * R, cudaMemcpyDefault, st));
            total += cnt;
        }
        WDC_CUDA(cudaStreamSynchronize(st));   // the views are only valid until the next collective
        stage_s[7] += wdc_now() - t0;
        int M = (int)total;
        wdc_iota<<<(M + 255) / 256, 256, 0, st>>>(r->occ, M);
        WDC_LAUNCH();
        WDC_TRY(wdc_runs(r, r->gkeys, M, st));
        wdc_merge_rows<<<(M + warps - 1) / warps, 32 * warps, 0, st>>>(NULL, NULL, r->ukey, r->run_off, r->run_cnt, r->nruns, r->occ_s, T, S, D, E, v->R,
                                                                       NULL, NULL, r->grows, 1, r->g + v->P, r->wide, r->wz, r->wn, r->emb, r->es1, r->es2, v->emb_rows, o);
        WDC_LAUNCH();
    }
    int64_t P = v->P;
    wdc_dense_update<<<(unsigned)((P + 255) / 256), 256, 0, st>>>(r->dense, r->s1, r->s2, r->g, r->g + P, v->P_mlp, P, o);
    WDC_LAUNCH();
    WDC_MARK(5);
#undef WDC_MARK
    if (r->timing) {   // stage seconds: embedding gather, MLP forward, wide+loss, MLP backward, sparse+dense update
        WDC_CUDA(cudaEventSynchronize(r->mark[5]));
        for (int i = 0; i < 5; i++) {
            float ms = 0;
            WDC_CUDA(cudaEventElapsedTime(&ms, r->mark[i], r->mark[i + 1]));
            stage_s[2 + i] += ms * 1e-3;
        }
    }
    return WD_OK;
}

// ---- 6. Communicators ------------------------------------------------------------------------------
// Waits for stream work of a collective, polling NCCL's asynchronous errors,
// and aborts the communicator after `timeout` seconds: never a silent hang.
struct wdc_nccl {
    ncclComm_t comm;
    cudaStream_t st;
    int device, aborted;
    double timeout;
    uint64_t *cnt;                  // (2 + size) device: send slot, pad, gathered sizes
    char *sendpad, *gbuf;
    size_t sendpad_cap, gbuf_cap;
    float *one;
    char why[300];
};
static wd_status wdc_nccl_wait(wd_comm *c, const char *op) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    double t0 = wdc_now();
    for (;;) {
        cudaError_t e = cudaStreamQuery(n->st);
        if (e == cudaSuccess) return WD_OK;
        if (e != cudaErrorNotReady) return wdc_fail(WD_ERR_DEVICE, "rank %d: %s: %s", c->rank, op, cudaGetErrorString(e));
        ncclResult_t ar = ncclSuccess;
        ncclCommGetAsyncError(n->comm, &ar);
        if (ar != ncclSuccess && ar != ncclInProgress) {
            ncclCommAbort(n->comm);
            n->aborted = 1;
            return wdc_fail(WD_ERR_ABORTED, "rank %d: %s failed in NCCL: %s (communicator aborted)", c->rank, op, ncclGetErrorString(ar));
        }
        if (wdc_now() - t0 > n->timeout) {
            ncclCommAbort(n->comm);
            n->aborted = 1;
            return wdc_fail(WD_ERR_ABORTED, "rank %d: %s did not finish in %.0f s: another rank failed or stopped (communicator aborted)", c->rank, op, n->timeout);
        }
        usleep(50);
    }
}
static wd_status wdc_nccl_allreduce(wd_comm *c, float *buf, size_t count) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    if (n->aborted) return wdc_fail(WD_ERR_ABORTED, "rank %d: communicator was aborted: %s", c->rank, n->why);
    WDC_CUDA(cudaSetDevice(n->device));
    WDC_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, n->comm, n->st));
    return wdc_nccl_wait(c, "allreduce");
}
static wd_status wdc_nccl_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    if (n->aborted) return wdc_fail(WD_ERR_ABORTED, "rank %d: communicator was aborted: %s", c->rank, n->why);
    WDC_CUDA(cudaSetDevice(n->device));
    uint64_t b = bytes, got[256];
    WDC_CUDA(cudaMemcpyAsync(n->cnt, &b, 8, cudaMemcpyHostToDevice, n->st));
    WDC_NCCL(ncclAllGather(n->cnt, n->cnt + 2, 1, ncclUint64, n->comm, n->st));
    WDC_TRY(wdc_nccl_wait(c, "allgather of sizes"));
    WDC_CUDA(cudaMemcpy(got, n->cnt + 2, 8 * (size_t)c->size, cudaMemcpyDeviceToHost));
    size_t most = 1;
    for (int q = 0; q < c->size; q++) most = got[q] > most ? got[q] : most;
    if (most > n->sendpad_cap) {
        cudaFree(n->sendpad);
        n->sendpad = NULL;
        WDC_CUDA(cudaMalloc((void **)&n->sendpad, most));
        n->sendpad_cap = most;
    }
    if (most * c->size > n->gbuf_cap) {
        cudaFree(n->gbuf);
        n->gbuf = NULL;
        WDC_CUDA(cudaMalloc((void **)&n->gbuf, most * c->size));
        n->gbuf_cap = most * c->size;
    }
    if (bytes) WDC_CUDA(cudaMemcpyAsync(n->sendpad, mine, bytes, cudaMemcpyDefault, n->st));
    WDC_NCCL(ncclAllGather(n->sendpad, n->gbuf, most, ncclUint8, n->comm, n->st));
    WDC_TRY(wdc_nccl_wait(c, "allgather"));
    for (int q = 0; q < c->size; q++) { all[q] = n->gbuf + most * q; if (sizes) sizes[q] = got[q]; }
    return WD_OK;
}
static wd_status wdc_nccl_barrier(wd_comm *c) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    return wdc_nccl_allreduce(c, n->one, 1);
}
static void wdc_nccl_abort(wd_comm *c, wd_status st, const char *why) {
    wdc_nccl *n = (wdc_nccl *)c->impl;
    if (n->aborted) return;
    snprintf(n->why, sizeof n->why, "rank %d: %s: %s", c->rank, wd_status_string(st), why ? why : "");
    ncclCommAbort(n->comm);
    n->aborted = 1;
}
static const wd_comm_ops wdc_nccl_ops = {wdc_nccl_allreduce, wdc_nccl_allgather, wdc_nccl_barrier, wdc_nccl_abort};

static wd_status wdc_nccl_wrap(ncclComm_t comm, int rank, int size, int device, wd_comm **out) {
    *out = NULL;
    wd_comm *c = (wd_comm *)calloc(1, sizeof(wd_comm));
    wdc_nccl *n = (wdc_nccl *)calloc(1, sizeof(wdc_nccl));
    if (!c || !n) { free(c); free(n); return wdc_fail(WD_ERR_NOMEM, "out of memory"); }
    n->comm = comm; n->device = device; n->timeout = 600;
    const char *to = getenv("WD_COMM_TIMEOUT");
    if (to && atof(to) > 0) n->timeout = atof(to);
    WDC_CUDA(cudaSetDevice(device));
    WDC_CUDA(cudaStreamCreateWithFlags(&n->st, cudaStreamNonBlocking));
    WDC_CUDA(cudaMalloc((void **)&n->cnt, 8 * (size_t)(2 + size)));
    WDC_CUDA(cudaMalloc((void **)&n->one, sizeof(float)));
    c->ops = &wdc_nccl_ops; c->rank = rank; c->size = size; c->impl = n;
    *out = c;
    return WD_OK;
}
extern "C" wd_status wd_comm_nccl_create_all(int ndev, wd_comm **ranks) {
    if (ndev < 1 || ndev > 256) return wdc_fail(WD_ERR_INVALID_ARG, "wd_comm_nccl_create_all: 1..256 devices");
    ncclComm_t comms[256];
    int devs[256] = {0};
    for (int i = 0; i < ndev; i++) devs[i] = i;
    WDC_NCCL(ncclCommInitAll(comms, ndev, devs));
    for (int i = 0; i < ndev; i++) WDC_TRY(wdc_nccl_wrap(comms[i], i, ndev, i, &ranks[i]));
    return WD_OK;
}
extern "C" wd_status wd_comm_nccl_unique_id(void *id, size_t bytes) {
    if (bytes < sizeof(ncclUniqueId)) return wdc_fail(WD_ERR_INVALID_ARG, "unique id buffer of %zu bytes, NCCL needs %zu", bytes, sizeof(ncclUniqueId));
    WDC_NCCL(ncclGetUniqueId((ncclUniqueId *)id));
    return WD_OK;
}
extern "C" wd_status wd_comm_nccl_init_rank(const void *id, int rank, int nranks, int device, wd_comm **out) {
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    WDC_CUDA(cudaSetDevice(device));
    ncclComm_t comm;
    WDC_NCCL(ncclCommInitRank(&comm, nranks, uid, rank));
    return wdc_nccl_wrap(comm, rank, nranks, device, out);
}
extern "C" void wd_comm_nccl_destroy(wd_comm *c) {
    if (!c) return;
    wdc_nccl *n = (wdc_nccl *)c->impl;
    cudaSetDevice(n->device);
    if (!n->aborted) ncclCommDestroy(n->comm);
    cudaFree(n->cnt); cudaFree(n->one); cudaFree(n->sendpad); cudaFree(n->gbuf);
    cudaStreamDestroy(n->st);
    free(n); free(c);
}

// Several ranks on one GPU (tests): device buffers of every rank are visible
// to each other; the host-side ordering (barrier, abort, timeout) is the
// in-process CPU communicator's.
struct wdc_hub {
    int n, device;
    wd_comm *cpu[256];              // wd_comm_local_create: barrier and abort
    float *bufs[256];
    const void *g[256];
    size_t gs[256];
    cudaStream_t st[256];
};
static wd_status wdc_hub_barrier(wd_comm *c) {
    wd_comm *cpu = ((wdc_hub *)c->impl)->cpu[c->rank];
    wd_status st = cpu->ops->barrier(cpu);
    return st ? wdc_fail(st, "%s", wd_last_error()) : WD_OK;
}
static wd_status wdc_hub_allreduce(wd_comm *c, float *buf, size_t count) {
    wdc_hub *h = (wdc_hub *)c->impl;
    int r = c->rank, n = h->n;
    cudaStream_t st = h->st[r];
    h->bufs[r] = buf;
    WDC_CUDA(cudaDeviceSynchronize());   // every rank's buffer is final
    WDC_TRY(wdc_hub_barrier(c));
    size_t a = count * r / n, e = count * (r + 1) / n;
    for (int q = 1; q < n && e > a; q++) {   // sum my chunk from the others, in rank order from r+1
        wdc_add<<<(unsigned)((e - a + 255) / 256), 256, 0, st>>>(buf + a, h->bufs[(r + q) % n] + a, e - a);
        WDC_LAUNCH();
    }
    WDC_CUDA(cudaStreamSynchronize(st));
    WDC_TRY(wdc_hub_barrier(c));
    for (int q = 0; q < n; q++) {
        if (q == r) continue;
        size_t qa = count * q / n, qe = count * (q + 1) / n;
        if (qe > qa) WDC_CUDA(cudaMemcpyAsync(buf + qa, h->bufs[q] + qa, 4 * (qe - qa), cudaMemcpyDeviceToDevice, st));
    }
    WDC_CUDA(cudaStreamSynchronize(st));
    return wdc_hub_barrier(c);
}
static wd_status wdc_hub_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    wdc_hub *h = (wdc_hub *)c->impl;
    h->g[c->rank] = mine;
    h->gs[c->rank] = bytes;
    WDC_TRY(wdc_hub_barrier(c));
    for (int q = 0; q < h->n; q++) { all[q] = h->g[q]; if (sizes) sizes[q] = h->gs[q]; }
    return WD_OK;
}
static void wdc_hub_abort(wd_comm *c, wd_status st, const char *why) {
    wd_comm *cpu = ((wdc_hub *)c->impl)->cpu[c->rank];
    cpu->ops->abort(cpu, st, why);
}
static const wd_comm_ops wdc_hub_ops = {wdc_hub_allreduce, wdc_hub_allgather, wdc_hub_barrier, wdc_hub_abort};

extern "C" wd_status wd_comm_cuda_local_create(int nranks, int device, wd_comm **ranks) {
    if (nranks < 1 || nranks > 256) return wdc_fail(WD_ERR_INVALID_ARG, "wd_comm_cuda_local_create: 1..256 ranks");
    wdc_hub *h = (wdc_hub *)calloc(1, sizeof(wdc_hub));
    wd_comm *cs = (wd_comm *)calloc((size_t)nranks, sizeof(wd_comm));
    if (!h || !cs) { free(h); free(cs); return wdc_fail(WD_ERR_NOMEM, "out of memory"); }
    h->n = nranks; h->device = device;
    wd_status st = wd_comm_local_create(nranks, 0, h->cpu);
    if (st) { free(h); free(cs); return wdc_fail(st, "%s", wd_last_error()); }
    WDC_CUDA(cudaSetDevice(device));
    for (int r = 0; r < nranks; r++) {
        WDC_CUDA(cudaStreamCreateWithFlags(&h->st[r], cudaStreamNonBlocking));
        cs[r].ops = &wdc_hub_ops; cs[r].rank = r; cs[r].size = nranks; cs[r].impl = h;
        ranks[r] = &cs[r];
    }
    return WD_OK;
}
extern "C" void wd_comm_cuda_local_destroy(wd_comm **ranks, int nranks) {
    if (!ranks || !ranks[0]) return;
    wdc_hub *h = (wdc_hub *)ranks[0]->impl;
    for (int r = 0; r < nranks; r++) cudaStreamDestroy(h->st[r]);
    wd_comm_local_destroy(h->cpu, nranks);
    free(ranks[0]);
    free(h);
}

// Debug mode (WD_CHECK_TABLES=K): every K steps all ranks compare checksums of
// their replicas (dense, wide and embedding tables); any difference stops
// training with an error naming the step and the ranks.
static wd_status wdc_check_tables(wdc_rank *r, int64_t step) {
    wd_comm *c = r->comm;
    if (!c || c->size < 2) return WD_OK;
    double *d;
    WDC_CUDA(cudaMalloc((void **)&d, sizeof(double) * 2));
    WDC_CUDA(cudaMemsetAsync(d, 0, sizeof(double) * 2, r->compute));
    const float *parts[3] = {r->dense, r->wide, r->emb};
    int64_t lens[3] = {r->v.P, r->v.wide_rows, r->v.emb ? r->v.emb_rows * r->v.E : 0};
    for (int i = 0; i < 3; i++) if (lens[i]) wdc_checksum<<<256, 256, 0, r->compute>>>(d, parts[i], lens[i]);
    WDC_LAUNCH();
    double mine = 0;
    WDC_CUDA(cudaMemcpyAsync(&mine, d, sizeof mine, cudaMemcpyDeviceToHost, r->compute));
    WDC_CUDA(cudaStreamSynchronize(r->compute));
    WDC_CUDA(cudaMemcpy(d, &mine, sizeof mine, cudaMemcpyHostToDevice));
    const void *views[256];
    size_t sizes[256];
    wd_status st = c->ops->allgather(c, d, sizeof(double), views, sizes);
    for (int q = 0; !st && q < c->size; q++) {
        double other = 0;
        if (cudaMemcpy(&other, views[q], sizeof other, cudaMemcpyDefault) != cudaSuccess) st = wdc_fail(WD_ERR_DEVICE, "checksum copy failed");
        else if (other != mine) st = wdc_fail(WD_ERR_INTERNAL, "step %lld: the tables of rank %d and rank %d differ (checksums %.17g vs %.17g)", (long long)step, c->rank, q, mine, other);
    }
    wd_status bst = c->ops->barrier(c);   // views may point at other ranks' buffers: free after all read
    if (!st) st = bst;
    cudaFree(d);
    return st;
}

// ---- 7. wd_cuda_train -----------------------------------------------------------------------------
static void *wdc_pinned_alloc(size_t n, void *u) { (void)u; void *p = NULL; return cudaHostAlloc(&p, n, cudaHostAllocPortable) == cudaSuccess ? p : NULL; }
static void wdc_pinned_free(void *p, void *u) { (void)u; cudaFreeHost(p); }
static const wd_allocator wdc_pinned = {wdc_pinned_alloc, wdc_pinned_free, NULL};

extern "C" wd_status wd_cuda_device_count(int *n) {
    *n = 0;
    cudaError_t e = cudaGetDeviceCount(n);
    if (e != cudaSuccess) { *n = 0; return wdc_fail(WD_ERR_UNSUPPORTED, "no CUDA device: %s", cudaGetErrorString(e)); }
    if (*n == 0) return wdc_fail(WD_ERR_UNSUPPORTED, "no CUDA device");
    return WD_OK;
}

struct wdc_trainer;
struct wdc_worker { wdc_trainer *tr; int rank, device; wdc_rank dev; wd_status st; char err[512]; double stage[8]; };
struct wdc_trainer {
    wd_model *m;
    const wd_train_desc *d;
    wd_train_report *rep;
    int ranks, B;                   // B per rank
    wd_comm *comm[256];
    int64_t start_step, epochs;
    double t0;
};

static wd_status wdc_run_rank(wdc_worker *w) {
    wdc_trainer *tr = w->tr;
    const wd_train_desc *d = tr->d;
    wdc_rank *r = &w->dev;
    WDC_TRY(wdc_rank_init(r, tr->m, w->rank, w->device, tr->B, tr->ranks));
    r->comm = tr->ranks > 1 ? tr->comm[w->rank] : NULL;
    wd_loader_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.files = d->files; ld.nfiles = d->nfiles; ld.batch_size = tr->B;
    ld.shard_index = w->rank; ld.shard_count = tr->ranks;
    ld.threads = d->loader_threads; ld.devices = tr->ranks; ld.ram_bytes = d->loader_ram;
    ld.shuffle = !d->no_shuffle; ld.seed = tr->m ? wd_model_description(tr->m)->seed : 0;
    ld.remainder = WD_REMAINDER_PAD;
    ld.batch_alloc = &wdc_pinned;
    wd_loader *l = NULL;
    wd_status st = wd_loader_open(&ld, &l);
    if (st) return wdc_fail(st, "%s", wd_last_error());
    const wd_model_view *v = &r->v;
    int64_t *epoch = v->epoch, *batch = v->batch, *step = v->step;
    int64_t my_epoch = *epoch, my_batch = *batch, my_step = *step;   // every rank counts the same steps
    int buf = 0;
    float host_acc[2] = {0, 0};
    const char *ce = getenv("WD_CHECK_TABLES");
    int64_t check_every = ce ? atoll(ce) : 0;
    while (!st && my_epoch < tr->epochs && !(d->max_steps > 0 && my_step >= d->max_steps)) {
        st = wd_loader_reset(l, my_epoch, my_batch);
        if (st) { st = wdc_fail(st, "%s", wd_last_error()); break; }
        for (;;) {
            if (d->max_steps > 0 && my_step >= d->max_steps) break;
            double t0 = wdc_now();
            const wd_batch *b = NULL;
            st = wd_loader_next(l, &b);
            if (st) { st = wdc_fail(st, "%s", wd_last_error()); break; }
            if (!b) break;
            if (r->batch_offs[1] == 0) {   // the carve of a pinned batch, once
                r->batch_offs[0] = (size_t)((const char *)b->label - (const char *)b->mem);
                r->batch_offs[1] = (size_t)((const char *)b->weight - (const char *)b->mem);
                r->batch_offs[2] = (size_t)((const char *)b->dense - (const char *)b->mem);
                for (int k = 0; k < v->S; k++) r->batch_offs[3 + k] = (size_t)((const char *)b->ids[k] - (const char *)b->mem);
            }
            // the device buffer we copy into must be free of the step two back
            if (cudaEventSynchronize(r->consumed[buf]) != cudaSuccess) { st = wdc_fail(WD_ERR_DEVICE, "event wait failed"); break; }
            w->stage[0] += wdc_now() - t0;   // data wait (loader + buffer reuse)
            double t1 = wdc_now();
            cudaError_t e = cudaMemcpyAsync(r->batch[buf], b->mem, b->mem_bytes, cudaMemcpyHostToDevice, r->copy);
            if (e == cudaSuccess) e = cudaEventRecord(r->copied[buf], r->copy);
            if (e == cudaSuccess) e = cudaStreamWaitEvent(r->compute, r->copied[buf], 0);
            // the loader reuses the pinned batch after the next wd_loader_next: wait for the copy first
            if (e == cudaSuccess) e = cudaEventSynchronize(r->copied[buf]);
            if (e != cudaSuccess) { st = wdc_fail(WD_ERR_DEVICE, "H2D copy: %s", cudaGetErrorString(e)); break; }
            w->stage[1] += wdc_now() - t1;
            st = wdc_step(r, buf, b->n, my_step, w->stage);
            if (!st && check_every > 0 && (my_step + 1) % check_every == 0) st = wdc_check_tables(r, my_step + 1);
            if (st) break;
            if (cudaEventRecord(r->consumed[buf], r->compute) != cudaSuccess) { st = wdc_fail(WD_ERR_DEVICE, "event record failed"); break; }
            buf ^= 1;
            my_step++; my_batch++;
            if (w->rank == 0) {
                *step = my_step; *batch = my_batch;
                int64_t every = d->checkpoint_every, pe = 50;
                int need_loss = d->progress && (my_step % pe == 0);
                if (need_loss || (d->checkpoint_path && every > 0 && my_step % every == 0)) {
                    if (cudaMemcpy(host_acc, r->g + v->P, sizeof host_acc, cudaMemcpyDeviceToHost) != cudaSuccess) { st = wdc_fail(WD_ERR_DEVICE, "loss copy failed"); break; }
                    if (!isfinite(host_acc[0])) { st = wdc_fail(WD_ERR_NUMERIC, "step %lld: the loss is not finite", (long long)my_step); break; }
                    tr->rep->last_loss = host_acc[1] > 0 ? host_acc[0] / host_acc[1] : 0;
                }
                tr->rep->steps++;
                tr->rep->samples += b->n;   // padding included; exact only without padding
                if (d->checkpoint_path && every > 0 && my_step % every == 0) {
                    if ((st = wdc_download(r)) != WD_OK) break;
                    if ((st = wd_model_save(tr->m, d->checkpoint_path)) != WD_OK) { st = wdc_fail(st, "%s", wd_last_error()); break; }
                }
                if (need_loss) {
                    wd_progress p;
                    memset(&p, 0, sizeof p);
                    p.step = my_step; p.samples = tr->rep->samples; p.epoch = my_epoch; p.loss = tr->rep->last_loss;
                    p.elapsed_s = wdc_now() - tr->t0; p.samples_per_s = p.elapsed_s > 0 ? p.samples / p.elapsed_s : 0;
                    p.valid_auc = p.valid_logloss = NAN;
                    d->progress(d->user, &p);
                }
            }
        }
        if (st || (d->max_steps > 0 && my_step >= d->max_steps)) break;
        my_epoch++;
        my_batch = 0;
        if (w->rank == 0) { *epoch = my_epoch; *batch = 0; }
    }
    if (!st && cudaStreamSynchronize(r->compute) != cudaSuccess) st = wdc_fail(WD_ERR_DEVICE, "final synchronize failed");
    if (!st && w->rank == 0) st = wdc_download(r);
    if (r->comm && st && st != WD_ERR_ABORTED) r->comm->ops->abort(r->comm, st, wdc_err);
    wd_loader_close(l);
    return st;
}
static void *wdc_thread(void *arg) {
    wdc_worker *w = (wdc_worker *)arg;
    w->st = wdc_run_rank(w);
    if (w->st) snprintf(w->err, sizeof w->err, "%s", wdc_err);
    wdc_rank_free(&w->dev);
    return NULL;
}

// Trains on `ranks` ranks: devices 0..ranks-1 with NCCL, or (simulate) all on
// device 0 with the in-process device communicator.
static wd_status wdc_train(wd_model *m, const wd_train_desc *d, wd_train_report *rep, int ranks, int simulate) {
    wd_train_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    rep->valid_auc = rep->valid_logloss = NAN;
    int ndev = 0;
    WDC_TRY(wd_cuda_device_count(&ndev));
    wd_comm *external = d->comm;   // one rank of a job spanning processes
    if (external) ranks = external->size;
    if (!simulate && !external && ranks > ndev) return wdc_fail(WD_ERR_INVALID_ARG, "%d GPUs asked for, %d present", ranks, ndev);
    if (external && (d->device_index < 0 || d->device_index >= ndev)) return wdc_fail(WD_ERR_INVALID_ARG, "device_index %d: %d GPUs present", d->device_index, ndev);
    const wd_schema *s = wd_model_schema(m);
    for (int k = 0; k < s->nslots; k++)
        if (s->slot[k].kind != WD_ONE_HOT) return wdc_fail(WD_ERR_UNSUPPORTED, "the CUDA backend takes one-hot slots; slot %s is multi-hot", s->slot[k].name);
    wd_model_view v;
    wd_model_view_get(m, &v);
    int64_t B = d->batch_size > 0 ? d->batch_size : (*v.batch_size > 0 ? *v.batch_size : 16384LL * ranks);
    if (B % ranks) return wdc_fail(WD_ERR_INVALID_ARG, "batch %lld does not split over %d ranks", (long long)B, ranks);
    if (*v.batch > 0 && *v.batch_size > 0 && B != *v.batch_size)
        return wdc_fail(WD_ERR_INVALID_ARG, "resuming mid-epoch needs the checkpoint's batch size %lld", (long long)*v.batch_size);
    *v.batch_size = B;
    wdc_trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.m = m; tr.d = d; tr.rep = rep; tr.ranks = ranks; tr.B = (int)(B / ranks);
    tr.epochs = d->epochs > 0 ? d->epochs : 1;
    tr.t0 = wdc_now();
    if (external) tr.comm[external->rank] = external;
    else if (ranks > 1) WDC_TRY(simulate ? wd_comm_cuda_local_create(ranks, 0, tr.comm) : wd_comm_nccl_create_all(ranks, tr.comm));
    // the ranks this process runs: all of them, or its one rank of an external job
    int first = external ? external->rank : 0, nlocal = external ? 1 : ranks;
    wdc_worker *w = (wdc_worker *)calloc((size_t)nlocal, sizeof(wdc_worker));
    pthread_t th[256];
    int started = 0;
    for (int i = 0; i < nlocal; i++) {
        int r = first + i;
        w[i].tr = &tr; w[i].rank = r; w[i].device = external ? d->device_index : simulate ? 0 : r;
        if (pthread_create(&th[i], NULL, wdc_thread, &w[i]) != 0) { w[i].st = wdc_fail(WD_ERR_NOMEM, "cannot start rank %d", r); if (ranks > 1) tr.comm[r]->ops->abort(tr.comm[r], WD_ERR_NOMEM, "thread start"); break; }
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    wd_status st = WD_OK;
    for (int i = 0; i < nlocal && !st; i++) if (w[i].st) st = wdc_fail(w[i].st, "%s", w[i].err);
    rep->seconds = wdc_now() - tr.t0;
    rep->samples_per_s = rep->seconds > 0 ? rep->samples * (double)ranks / rep->seconds : 0;
    rep->samples *= ranks;
    // worker 0's view: data wait, H2D copy, and (WD_CUDA_TIMING=1) device stages
    rep->data_s = w[0].stage[0]; rep->optimizer_s = w[0].stage[6]; rep->comm_s = w[0].stage[7];
    rep->embed_s = w[0].stage[2]; rep->mlp_fwd_s = w[0].stage[3]; rep->wide_s = w[0].stage[4]; rep->mlp_bwd_s = w[0].stage[5];
    rep->h2d_s = w[0].stage[1];
    free(w);
    if (!external && ranks > 1) { if (simulate) wd_comm_cuda_local_destroy(tr.comm, ranks); else for (int r = 0; r < ranks; r++) wd_comm_nccl_destroy(tr.comm[r]); }
    // rank 0 alone writes checkpoints (its replica was downloaded into m)
    if (!st && d->checkpoint_path && first == 0) { st = wd_model_save(m, d->checkpoint_path); if (st) st = wdc_fail(st, "%s", wd_last_error()); }
    return st;
}

extern "C" wd_status wd_cuda_train(wd_model *m, const wd_train_desc *d, wd_train_report *rep) {
    int ndev = 0;
    WDC_TRY(wd_cuda_device_count(&ndev));
    int ranks = d->devices == WD_ALL_GPUS ? ndev : (d->devices > 0 ? d->devices : 1);
    return wdc_train(m, d, rep, ranks, 0);
}
// Test entry: `ranks` simulated ranks sharing GPU 0.
extern "C" wd_status wd_cuda_train_simulated(wd_model *m, const wd_train_desc *d, wd_train_report *rep, int ranks) {
    return wdc_train(m, d, rep, ranks, 1);
}
