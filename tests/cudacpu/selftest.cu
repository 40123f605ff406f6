// selftest.cu - the emulator's own tests (tests/run.sh: build/cudacpu_selftest).
// A check that cannot fail is a defect: each case runs a kernel copied from
// widedeep_cuda.cu (c1b6c03; the copy's name says which) or a stream pattern
// of its host code twice, each in a child process with the case's switches:
// as written (the control: must give the right result with no report) and
// with one seeded bug (must be caught, by the check named). A case passes
// only if both hold. Usage: cudacpu_selftest [CASE...]
#include "child.h"
#include "cub/cub.cuh"
#include <cublasLt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <string>
#include <vector>

#define THREADS 256
#define TOP_THREADS 1024
#define CHUNK 256
enum { OK = 0, WRONG = 3 };   // a child's exit status: the result is right, the result is wrong

// ---- kernels copied from widedeep_cuda.cu; `bug` seeds the case's bug ------------------------
// wdc_top_k (its bf16 copy left out): one block sums dlogit in a fixed tree order
__global__ void top_k(float *gb, const float *dlogit, int n, int bug) {
    CUDACPU_SHARED(float, sh, [TOP_THREADS]);
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n; i += TOP_THREADS) acc += dlogit[i];
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = bug == 2 ? TOP_THREADS : TOP_THREADS / 2; w > 0; w >>= 1) {   // 2: reads sh[t + 1024]
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        if (bug != 1) __syncthreads();   // 1: no barrier between levels
    }
    if (threadIdx.x == 0) *gb = sh[0];
}
// wdc_colsum_part_k without its scale: a 32 x 8 block's column sums of a chunk of rows
__global__ void colsum_part_k(float *partial, const float *a, int lda, int n, int m, int bug) {
    CUDACPU_SHARED(float, sh, [8][33]);
    int j = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * CHUNK;
    float acc = 0.0f;
    if (j < m)
        for (int r = r0 + threadIdx.y; r < min(n, r0 + CHUNK); r += 8) acc += a[(size_t)r * lda + j];
    if (bug == 3 && threadIdx.y == 7) return;   // 3: a thread leaves before the barrier (divergent)
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < m) {
        float t = 0.0f;
        for (int q = 0; q < 8; q++) t += sh[q][threadIdx.x];
        partial[(size_t)blockIdx.y * m + j] = t;
    }
}
// wdc_colsum_final_k
__global__ void colsum_final_k(float *out, const float *partial, int chunks, int m, int bug) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (bug == 4 ? j > m : j >= m) return;   // 4: writes out[m]
    float t = 0.0f;
    for (int c = 0; c < chunks; c++) t += partial[(size_t)c * m + j];
    out[j] = t;
}
// wdc_warp_add_in_order in a warp-per-item kernel (wdc_gather_wide_k's wide logit)
__global__ void warp_sum_k(float *out, const float *terms, int n, int count, int bug) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (i >= n || (bug == 5 && lane == 31)) return;   // 5: a lane leaves before the shuffles
    float term = lane < count ? terms[(size_t)i * count + lane] : 0.0f, z = 0.0f;
    for (int u = 0; u < 32 && u < count; u++) z = __fadd_rn(z, __shfl_sync(0xffffffffu, term, u));
    if (lane == 0) out[i] = z;
}
// wdc_hot_chunk_k with a plain sum for wdc_occ_sum: one block per chunk of rows (grid-stride), warp w
// sums the w-th of 8 shares of each 32 columns, warp 0 adds the shares; 11: no second barrier, so a
// warp may overwrite sh for the next columns while warp 0 still reads it (FIFO: the results stay right)
__global__ void hot_chunk_k(float *part, const float *a, int nrows, int R, int nchunks, int bug) {
    CUDACPU_SHARED(float, sh, [8][32]);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int e = blockIdx.x; e < nchunks; e += gridDim.x) {
        int a0 = e * CHUNK, len = min(CHUNK, nrows - a0), w0 = a0 + len * w / 8, w1 = a0 + len * (w + 1) / 8;
        for (int c0 = 0; c0 < R; c0 += 32) {
            float acc = 0.0f;
            for (int r = w0; r < w1 && c0 + lane < R; r++) acc += a[(size_t)r * R + c0 + lane];
            sh[w][lane] = acc;
            __syncthreads();
            if (w == 0 && c0 + lane < R) {
                float t = 0.0f;
                for (int q = 0; q < 8; q++) t += sh[q][lane];
                part[(size_t)e * R + c0 + lane] = t;
            }
            if (bug != 11) __syncthreads();
        }
    }
}

// ---- the cases -------------------------------------------------------------------------------
static float *dev_copy(const std::vector<float> &h) {
    float *d = NULL;
    if (cudaMalloc((void **)&d, h.size() * sizeof(float)) ||
        cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice))
        exit(WRONG);
    return d;
}
static std::vector<float> host_copy(const float *d, size_t n) {
    std::vector<float> h(n);
    if (cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost)) exit(WRONG);
    return h;
}
static std::vector<float> ramp(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = (float)((i * 37) % 101) * scale;
    return v;
}
static double sum_of(const std::vector<float> &h) {
    double t = 0;
    for (float v : h) t += v;
    return t;
}
static bool near(float a, double b) { return fabs((double)a - b) <= 1e-4 * (1.0 + fabs(b)); }
// the column sums of an n x m matrix in two levels, checked against doubles; bug as above
static int colsum(int bug, bool write_input) {
    int n = 700, m = 40, chunks = (n + CHUNK - 1) / CHUNK;
    std::vector<float> h = ramp((size_t)n * m, 0.01f);
    float *a, *part, *out;
    if (write_input) a = dev_copy(h);
    else if (cudaMalloc((void **)&a, h.size() * sizeof(float))) return WRONG;   // never written: device memory as found
    cudaMalloc((void **)&part, (size_t)chunks * m * sizeof(float));
    cudaMalloc((void **)&out, (size_t)m * sizeof(float));
    CUDACPU_GO(colsum_part_k, dim3((m + 31) / 32, chunks), dim3(32, 8), 0)(part, a, m, n, m, bug);
    CUDACPU_GO(colsum_final_k, (m + THREADS - 1) / THREADS, THREADS, 0)(out, part, chunks, m, bug);
    std::vector<float> r = host_copy(out, (size_t)m);
    for (int j = 0; j < m; j++) {
        double want = 0;
        for (int i = 0; i < n; i++) want += h[(size_t)i * m + j];
        if (!near(r[(size_t)j], want)) return WRONG;
    }
    cudaFree(a);
    cudaFree(part);
    cudaFree(out);
    return OK;
}
static int top(int bug) {
    int n = 5000;
    std::vector<float> h = ramp((size_t)n, 0.001f);
    float *d = dev_copy(h), *gb;
    cudaMalloc((void **)&gb, sizeof(float));
    CUDACPU_GO(top_k, 1, TOP_THREADS, 0)(gb, d, n, bug);
    double want = sum_of(h);
    float r = host_copy(gb, 1)[0];
    cudaFree(d);
    cudaFree(gb);
    return near(r, want) ? OK : WRONG;
}
static int warp_sum(int bug) {
    int n = 100, count = 27;
    std::vector<float> h = ramp((size_t)n * count, 0.5f);
    float *t = dev_copy(h), *out;
    cudaMalloc((void **)&out, (size_t)n * sizeof(float));
    CUDACPU_GO(warp_sum_k, (n * 32 + THREADS - 1) / THREADS, THREADS, 0)(out, t, n, count, bug);
    std::vector<float> r = host_copy(out, (size_t)n);
    for (int i = 0; i < n; i++) {
        float z = 0.0f;
        for (int u = 0; u < count; u++) z += h[(size_t)i * count + u];
        if (r[(size_t)i] != z) return WRONG;   // the same order of float additions: bit for bit
    }
    cudaFree(t);
    cudaFree(out);
    return OK;
}
// the overlap's fork and join (wdc_step_enqueue): a producer on one stream, a
// consumer on another; bug: the consumer's stream does not wait for the event
static int streams(int bug) {
    int n = 3000;
    std::vector<float> h = ramp((size_t)n, 0.002f);
    cudaStream_t side, compute;
    cudaEvent_t join;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    float *src = dev_copy(h), *mid, *gb, res = 0;
    cudaMalloc((void **)&mid, (size_t)n * sizeof(float));
    cudaMalloc((void **)&gb, sizeof(float));
    CUDACPU_GO(colsum_final_k, (n + THREADS - 1) / THREADS, THREADS, side)(mid, src, 1, n, 0);   // mid = src
    cudaEventRecord(join, side);
    if (bug != 6) cudaStreamWaitEvent(compute, join, 0);
    CUDACPU_GO(top_k, 1, TOP_THREADS, compute)(gb, mid, n, 0);
    cudaMemcpyAsync(&res, gb, sizeof res, cudaMemcpyDeviceToHost, compute);   // pageable: returns once copied
    double want = sum_of(h);
    cudaStreamSynchronize(side);
    cudaFree(src);
    cudaFree(mid);
    cudaFree(gb);
    return near(res, want) ? OK : WRONG;
}
// results into pinned memory (wdc_complete): bug: read before the stream's sync
static int host_sync(int bug) {
    int n = 3000;
    std::vector<float> h = ramp((size_t)n, 0.002f);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    float *d = dev_copy(h), *gb, *pinned;
    cudaMalloc((void **)&gb, sizeof(float));
    cudaHostAlloc((void **)&pinned, sizeof(float), cudaHostAllocPortable);
    *pinned = 0.0f;
    CUDACPU_GO(top_k, 1, TOP_THREADS, st)(gb, d, n, 0);
    cudaMemcpyAsync(pinned, gb, sizeof(float), cudaMemcpyDeviceToHost, st);
    if (bug != 7) cudaStreamSynchronize(st);
    float r;
    __atomic_load(pinned, &r, __ATOMIC_ACQUIRE);
    double want = sum_of(h);
    cudaStreamSynchronize(st);
    cudaFree(d);
    cudaFree(gb);
    cudaFreeHost(pinned);
    return near(r, want) ? OK : WRONG;
}
// the sparse path's sort (wdc_sort_runs): the result is where Current() says; bug: d_buffers[0]
static int sort(int bug) {
    int n = 1000;
    std::vector<unsigned long long> k((size_t)n);
    std::vector<unsigned> v((size_t)n);
    for (int i = 0; i < n; i++) {
        k[(size_t)i] = (unsigned long long)((i * 7919) % 1009);
        v[(size_t)i] = (unsigned)i;
    }
    unsigned long long *dk[2];
    unsigned *dv[2];
    for (int b = 0; b < 2; b++) {
        cudaMalloc((void **)&dk[b], (size_t)n * 8);
        cudaMalloc((void **)&dv[b], (size_t)n * 4);
    }
    for (int rep = 0; rep < 8; rep++) {   // each call flips the selector or not at random
        cudaMemcpy(dk[0], k.data(), (size_t)n * 8, cudaMemcpyHostToDevice);
        cudaMemcpy(dv[0], v.data(), (size_t)n * 4, cudaMemcpyHostToDevice);
        cub::DoubleBuffer<unsigned long long> kb(dk[0], dk[1]);
        cub::DoubleBuffer<unsigned> vb(dv[0], dv[1]);
        size_t need = 0;
        cub::DeviceRadixSort::SortPairs(NULL, need, kb, vb, n, 0, 11, 0);
        void *tmp;
        cudaMalloc(&tmp, need);
        if (cub::DeviceRadixSort::SortPairs(tmp, need, kb, vb, n, 0, 11, 0)) return WRONG;
        std::vector<unsigned long long> rk((size_t)n);
        cudaMemcpy(rk.data(), bug == 8 ? kb.d_buffers[0] : kb.Current(), (size_t)n * 8, cudaMemcpyDeviceToHost);
        cudaFree(tmp);
        std::vector<unsigned long long> want(k);
        std::sort(want.begin(), want.end());
        if (rk != want) return WRONG;
    }
    return OK;
}
// the GEMMs' epilogue offers (wdc_mm_make): RELU_AUX_BIAS has an algorithm unless
// CUDACPU_LT_REFUSE names it; bug 9 is that switch (the fallback must be asked for)
static int lt_offer(int bug) {
    if (bug == 9) setenv("CUDACPU_LT_REFUSE", "relu_bias,relu_aux_bias", 1);
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    cublasLtCreate(&lt);
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F);
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 64, 32, 64);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 32, 16, 32);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, 64, 16, 64);
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &found);
    return s == CUBLAS_STATUS_SUCCESS && found == 1 ? OK : WRONG;
}
// graph capture of the fork and join; bug 10: the side stream is never joined back
static int capture(int bug) {
    cudaStream_t compute, side;
    cudaEvent_t fork, join;
    cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    int n = 2000;
    std::vector<float> h = ramp((size_t)n, 0.003f);
    float *src = dev_copy(h), *mid, *gb;
    cudaMalloc((void **)&mid, (size_t)n * sizeof(float));
    cudaMalloc((void **)&gb, sizeof(float));
    cudaGraph_t g;
    cudaStreamBeginCapture(compute, cudaStreamCaptureModeThreadLocal);
    cudaEventRecord(fork, compute);
    cudaStreamWaitEvent(side, fork, 0);
    CUDACPU_GO(colsum_final_k, (n + THREADS - 1) / THREADS, THREADS, side)(mid, src, 1, n, 0);
    cudaEventRecord(join, side);
    if (bug != 10) cudaStreamWaitEvent(compute, join, 0);
    CUDACPU_GO(top_k, 1, TOP_THREADS, compute)(gb, mid, n, 0);
    if (cudaStreamEndCapture(compute, &g) != cudaSuccess) return WRONG;
    cudaGraphExec_t x;
    cudaGraphInstantiateWithFlags(&x, g, cudaGraphInstantiateFlagUseNodePriority);
    double want = sum_of(h);
    for (int rep = 0; rep < 2; rep++) {
        cudaMemset(mid, 0xff, (size_t)n * sizeof(float));
        cudaGraphLaunch(x, compute);
        cudaStreamSynchronize(compute);   // (a non-blocking stream: cudaMemcpy does not wait for it)
        if (!near(host_copy(gb, 1)[0], want)) return WRONG;
    }
    return OK;
}

#ifdef CUDACPU_TSAN_HARNESS
// the hot chunks' sums (wdc_hot_chunk_k) on one block, so that it loops over chunks and columns; the
// matrix's values are small integers: every order of the additions gives the same bits
static int hot_chunks(int bug) {
    int nrows = 700, R = 40, nchunks = (nrows + CHUNK - 1) / CHUNK;
    std::vector<float> h((size_t)nrows * R);
    for (size_t i = 0; i < h.size(); i++) h[i] = (float)((i * 37) % 11);
    float *a = dev_copy(h), *part;
    cudaMalloc((void **)&part, (size_t)nchunks * R * sizeof(float));
    CUDACPU_GO(hot_chunk_k, 1, THREADS, 0)(part, a, nrows, R, nchunks, bug);
    std::vector<float> r = host_copy(part, (size_t)nchunks * R);
    for (int e = 0; e < nchunks; e++)
        for (int c = 0; c < R; c++) {
            float want = 0.0f;
            for (int i = e * CHUNK; i < std::min(nrows, (e + 1) * CHUNK); i++) want += h[(size_t)i * R + c];
            if (r[(size_t)e * R + c] != want) return WRONG;
        }
    cudaFree(a);
    cudaFree(part);
    return OK;
}
#endif

struct tcase {
    const char *name;
    int (*fn)(int bug);
    int bug;
    const char *env;      // the case's switches, NAME=VALUE,...
    const char *caught;   // "wrong": a wrong result; else a word the report must hold
    const char *what;
};
static int colsum_bug(int bug) { return colsum(bug, true); }
static int uninit(int bug) { return colsum(0, bug == 0); }
static const tcase CASES[] = {
    {"missing_barrier", top, 1, "CUDACPU_SCHED=warp,CUDACPU_SEED=3", "wrong",
     "wdc_top_k without the barrier between tree levels"},
    {"shared_out_of_bounds", top, 2, "", "AddressSanitizer|out of bounds for type", "wdc_top_k reading sh[t + 1024]"},
    {"global_out_of_bounds", colsum_bug, 4, "", "AddressSanitizer", "wdc_colsum_final_k writing out[m]"},
    {"divergent_barrier", colsum_bug, 3, "", "synccheck", "wdc_colsum_part_k: a thread returns before __syncthreads"},
    {"lane_exit_before_shuffle", warp_sum, 5, "", "synccheck", "wdc_warp_add_in_order after lane 31 returned"},
    {"missing_event_wait", streams, 6, "CUDACPU_STREAMS=lazy", "wrong",
     "the join: no cudaStreamWaitEvent between the streams"},
    {"missing_host_sync", host_sync, 7, "CUDACPU_STREAMS=lazy", "wrong",
     "pinned results read before cudaStreamSynchronize"},
    {"uninitialised_read", uninit, 1, "", "wrong", "column sums of device memory nobody wrote (the poison)"},
    {"double_buffer_selector", sort, 8, "CUDACPU_SEED=5", "wrong",
     "SortPairs' result read from d_buffers[0], not Current()"},
    {"epilogue_refusal", lt_offer, 9, "", "wrong",
     "CUDACPU_LT_REFUSE=relu_bias,relu_aux_bias: no algorithm for RELU_AUX_BIAS"},
    {"capture_unjoined", capture, 10, "CUDACPU_SEED=2", "wrong", "a graph whose side stream never rejoins"},
#ifdef CUDACPU_TSAN_HARNESS   // the TSan kernel harness (tsan.cpp; make test-gpu-emu-tsan)
    {"missing_barrier_tsan", hot_chunks, 11, "CUDACPU_SCHED=fifo", "ThreadSanitizer: data race",
     "wdc_hot_chunk_k without its second barrier, under FIFO (whose results stay right)"},
#endif
};

// runs CASE's function in a child with its switches (and bug or not); returns its
// exit status (128 + signal when killed) and its stderr in err
static int run_case(const tcase &c, int bug, std::string &err) {
    return run_child(
        [&c, bug] {
            std::string env = c.env;
            for (size_t at = 0; at < env.size();) {
                size_t end = env.find(',', at), eq = env.find('=', at);
                if (end == std::string::npos) end = env.size();
                setenv(env.substr(at, eq - at).c_str(), env.substr(eq + 1, end - eq - 1).c_str(), 1);
                at = end + 1;
            }
            return c.fn(bug ? c.bug : 0);
        },
        err);
}

// Whether s holds one of the '|'-separated words of any.
static bool found_any(const std::string &s, const char *any) {
    std::string w(any);
    for (size_t b = 0, e; b <= w.size(); b = e + 1) {
        e = w.find('|', b);
        if (e == std::string::npos) e = w.size();
        if (e > b && s.find(w.substr(b, e - b)) != std::string::npos) return true;
    }
    return false;
}

int main(int argc, char **argv) {
    int pass = 0, failed = 0;
    for (const tcase &c : CASES) {
        bool want = argc < 2;
        for (int i = 1; i < argc; i++) want |= !strcmp(argv[i], c.name);
        if (!want) continue;
        std::string e0, e1;
        int r0 = run_case(c, 0, e0), r1 = run_case(c, 1, e1);
        bool clean = r0 == OK && e0.find("cudacpu:") == std::string::npos &&
                     e0.find("Sanitizer") == std::string::npos && e0.find("runtime error") == std::string::npos;
        bool caught = !strcmp(c.caught, "wrong") ? r1 == WRONG : r1 != OK && found_any(e1, c.caught);
        if (clean && caught) {
            pass++;
            printf("PASS %s: %s: caught (%s)\n", c.name, c.what,
                   !strcmp(c.caught, "wrong")                   ? "a wrong result"
                   : e1.find("AddressSanitizer") != std::string::npos ? first_line(e1, "AddressSanitizer").c_str()
                   : e1.find("ThreadSanitizer") != std::string::npos  ? first_line(e1, "ThreadSanitizer").c_str()
                                                                       : first_line(e1, "runtime error").c_str());
        } else {
            failed++;
            if (!clean)
                printf("FAIL %s: the control (no bug) did not run clean: exit %d: %s\n", c.name, r0,
                       first_line(e0, "").c_str());
            else
                printf("FAIL %s: %s: not caught (exit %d, want %s): %s\n", c.name, c.what, r1, c.caught,
                       first_line(e1, "").c_str());
        }
    }
    printf("# cudacpu_selftest: %d passed, %d failed, 0 skipped\n", pass, failed);
    return failed != 0;
}
