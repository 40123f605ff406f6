// Ceilings of the GPU the training bench runs on: device-to-device copy
// bandwidth (a large cudaMemcpy) and TF32 / FP32 GEMM FLOP rates (cuBLASLt,
// 8192^3). Usage: ceilings
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>

#define CK(x) do { if ((x) != 0) { printf("failed: %s at line %d\n", #x, __LINE__); return 1; } } while (0)

static int gemm_rate(cublasLtHandle_t lt, cublasComputeType_t ct, int n, const float *a, const float *b, float *c, void *ws, double *tflops) {
    cublasLtMatmulDesc_t d;
    cublasLtMatrixLayout_t l;
    CK(cublasLtMatmulDescCreate(&d, ct, CUDA_R_32F));
    CK(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, n, n, n));
    float one = 1, zero = 0;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int w = 0; w < 3; w++) CK(cublasLtMatmul(lt, d, &one, a, l, b, l, &zero, c, l, c, l, NULL, ws, 64 << 20, 0));
    cudaEventRecord(e0);
    int reps = 20;
    for (int r = 0; r < reps; r++) CK(cublasLtMatmul(lt, d, &one, a, l, b, l, &zero, c, l, c, l, NULL, ws, 64 << 20, 0));
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    *tflops = 2.0 * n * (double)n * n * reps / (ms * 1e-3) / 1e12;
    return 0;
}

int main(void) {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device: %s, %d SMs, %.1f GiB\n", p.name, p.multiProcessorCount, p.totalGlobalMem / 1073741824.0);
    size_t bytes = (size_t)4 << 30;
    char *a, *b;
    CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
    cudaMemset(a, 1, bytes);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    cudaEventRecord(e0);
    for (int r = 0; r < 10; r++) CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    printf("d2d copy: %.0f GB/s (read + write, 4 GiB x 10)\n", 2.0 * bytes * 10 / (ms * 1e-3) / 1e9);
    cudaFree(a); cudaFree(b);
    int n = 8192;
    float *x, *y, *z;
    void *ws;
    CK(cudaMalloc(&x, 4ull * n * n)); CK(cudaMalloc(&y, 4ull * n * n)); CK(cudaMalloc(&z, 4ull * n * n)); CK(cudaMalloc(&ws, 64 << 20));
    cudaMemset(x, 0, 4ull * n * n); cudaMemset(y, 0, 4ull * n * n);
    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt));
    double tf32, fp32;
    if (gemm_rate(lt, CUBLAS_COMPUTE_32F_FAST_TF32, n, x, y, z, ws, &tf32)) return 1;
    if (gemm_rate(lt, CUBLAS_COMPUTE_32F, n, x, y, z, ws, &fp32)) return 1;
    printf("gemm 8192^3: TF32 %.1f TFLOP/s, FP32 %.1f TFLOP/s\n", tf32, fp32);
    return 0;
}
