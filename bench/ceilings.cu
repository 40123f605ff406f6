// Ceilings of the GPU the training bench runs on: device-to-device copy
// bandwidth (a large cudaMemcpy), TF32 / FP32 GEMM FLOP rates (cuBLASLt,
// 8192^3), and the floor the reference MLP's own GEMMs put under one training
// step: the 12 products of forward and backward (per layer: forward, dW,
// dX) at batch B with layers IN -> H1 -> ... -> 1, each timed alone with the
// heuristic's algorithm (no transposes: same shapes, roughly the same speed).
// Every operand holds random values in [-1, 1) (products of zeros run faster
// than real ones: a ceiling measured on them would flatter every ratio).
// Usage: ceilings [B [IN,H1,H2,...]]   (default 16384 432,1024,512,256,1:
// 13 dense + 26 slots x E=16 = 429 inputs, padded to 432 as the backend does)
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { if ((x) != 0) { printf("failed: %s at line %d\n", #x, __LINE__); return 1; } } while (0)
#define WS_BYTES (64 << 20)

// p[i] = a uniform value in [-1, 1) from a hash of (seed, i).
__global__ void fill_k(float *p, size_t n, unsigned seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull + seed;
        x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 27; x *= 0x94d049bb133111ebull; x ^= x >> 31;
        p[i] = (float)(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
    }
}
static int fill(float *p, size_t n, unsigned seed) {
    fill_k<<<1024, 256>>>(p, n, seed);
    return cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess;
}

// Milliseconds per C (m x n) = A (m x k) B (k x n), column-major, over reps calls after warm-up.
static int gemm_ms(cublasLtHandle_t lt, cublasComputeType_t ct, int m, int n, int k, const float *a, const float *b, float *c, void *ws, int reps,
                   double *ms_out) {
    cublasLtMatmulDesc_t d;
    cublasLtMatrixLayout_t la, lb, lc;
    CK(cublasLtMatmulDescCreate(&d, ct, CUDA_R_32F));
    CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m));
    CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
    CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
    float one = 1, zero = 0;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int w = 0; w < 3; w++) CK(cublasLtMatmul(lt, d, &one, a, la, b, lb, &zero, c, lc, c, lc, NULL, ws, WS_BYTES, 0));
    CK(cudaEventRecord(e0));
    for (int r = 0; r < reps; r++) CK(cublasLtMatmul(lt, d, &one, a, la, b, lb, &zero, c, lc, c, lc, NULL, ws, WS_BYTES, 0));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    *ms_out = ms / reps;
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(d);
    return 0;
}

int main(int argc, char **argv) {
    int B = argc > 1 ? atoi(argv[1]) : 16384;
    int w[16], L = 0;
    {
        char spec[256];
        snprintf(spec, sizeof spec, "%s", argc > 2 ? argv[2] : "432,1024,512,256,1");
        for (char *t = strtok(spec, ","); t && L < 16; t = strtok(NULL, ",")) w[L++] = atoi(t);
        L--;   // layers: w[0] -> w[1] -> ... -> w[L]
    }
    if (B < 1 || L < 1) { fprintf(stderr, "usage: ceilings [B [IN,H1,...,OUT]]\n"); return 2; }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device: %s, %d SMs, %.1f GiB\n", p.name, p.multiProcessorCount, p.totalGlobalMem / 1073741824.0);
    size_t bytes = (size_t)4 << 30;
    char *a, *b;
    CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 1, bytes));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e0));
    for (int r = 0; r < 10; r++) CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("d2d copy: %.0f GB/s (read + write, 4 GiB x 10)\n", 2.0 * bytes * 10 / (ms * 1e-3) / 1e9);
    CK(cudaFree(a)); CK(cudaFree(b));
    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt));
    void *ws;
    CK(cudaMalloc(&ws, WS_BYTES));
    // square GEMMs
    {
        int n = 8192;
        float *x, *y, *z;
        CK(cudaMalloc(&x, 4ull * n * n)); CK(cudaMalloc(&y, 4ull * n * n)); CK(cudaMalloc(&z, 4ull * n * n));
        CK(fill(x, (size_t)n * n, 1)); CK(fill(y, (size_t)n * n, 2));
        double t_tf32, t_fp32;
        if (gemm_ms(lt, CUBLAS_COMPUTE_32F_FAST_TF32, n, n, n, x, y, z, ws, 20, &t_tf32)) return 1;
        if (gemm_ms(lt, CUBLAS_COMPUTE_32F, n, n, n, x, y, z, ws, 5, &t_fp32)) return 1;
        double flop = 2.0 * n * (double)n * n;
        printf("gemm 8192^3 (random operands): TF32 %.1f TFLOP/s, FP32 %.1f TFLOP/s\n", flop / (t_tf32 * 1e-3) / 1e12, flop / (t_fp32 * 1e-3) / 1e12);
        cudaFree(x); cudaFree(y); cudaFree(z);
    }
    // the MLP's products at batch B
    {
        size_t most = 0;
        for (int l = 0; l < L; l++) {
            size_t s[3] = {(size_t)B * w[l], (size_t)B * w[l + 1], (size_t)w[l] * w[l + 1]};
            for (int i = 0; i < 3; i++) most = s[i] > most ? s[i] : most;
        }
        float *x, *y, *z;
        CK(cudaMalloc(&x, 4 * most)); CK(cudaMalloc(&y, 4 * most)); CK(cudaMalloc(&z, 4 * most));
        CK(fill(x, most, 3)); CK(fill(y, most, 4));
        const cublasComputeType_t ct[2] = {CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F};
        const char *name[2] = {"TF32", "FP32"};
        double flop = 0;
        for (int l = 0; l < L; l++) flop += 6.0 * B * (double)w[l] * w[l + 1];
        for (int c = 0; c < 2; c++) {
            double total = 0, t;
            printf("mlp gemms at batch %d, %s (ms): ", B, name[c]);
            for (int l = 0; l < L; l++) {
                double layer = 0;
                if (gemm_ms(lt, ct[c], B, w[l + 1], w[l], x, y, z, ws, 20, &t)) return 1;   // forward (B, out)
                layer += t;
                if (gemm_ms(lt, ct[c], w[l + 1], w[l], B, x, y, z, ws, 20, &t)) return 1;   // dW (out, in)
                layer += t;
                if (gemm_ms(lt, ct[c], B, w[l], w[l + 1], x, y, z, ws, 20, &t)) return 1;   // dX (B, in)
                layer += t;
                printf("%s%d->%d %.3f", l ? ", " : "", w[l], w[l + 1], layer);
                total += layer;
            }
            printf("; step %.3f ms = %.1f TFLOP/s: at most %.1fM samples/s from the GEMMs alone\n", total, flop / (total * 1e-3) / 1e12,
                   B / (total * 1e-3) / 1e6);
        }
        cudaFree(x); cudaFree(y); cudaFree(z);
    }
    cudaFree(ws);
    cublasLtDestroy(lt);
    return 0;
}
