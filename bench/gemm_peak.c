/* gemm_peak: the GEMM engine's own speed on the MLP's shapes (issue 12).

   Calls oneDNN's matmul directly, with the layouts widedeep.h's oneDNN engine
   uses (its "The GEMM engine" comment), on one thread, for each layer of the
   default MLP (inputs 13 + 26 x 16 = 429, widths 1024-512-256):
     fwd    y (M, out)  = x (M, in) W^T + b, ReLU fused   W stored (out, in)
     wgrad  gW (out, in) = dz^T a                         dz stored (M, out)
     dgrad  da (M, in)  = dz W
   fp32, and bf16 inputs with fp32 outputs (precision bf16). The output layer
   (256 -> 1) is left out: 0.05% of the FLOPs.
   Prints, per product and precision, the best and median time of REPS runs
   (after warm-up) and GFLOP/s, then the sum over the nine products: the
   engine's peak for one sample of forward + backward on these shapes, as
   GFLOP/s and as an MLP-only bound on samples/s.

   Build: cc -O2 -I. -o gemm_peak bench/gemm_peak.c -lzstd -lz -lpthread -lm -ldnnl -lgomp
   Usage: gemm_peak [M [REPS [IN,W1,W2,...]]]   (default 4096 20 429,1024,512,256)
   M is the rows of one worker's share of a batch: the batch at 1 thread,
   batch / T at T threads. The clock, the bf16 rounding and the ISA names
   are widedeep.h's own. */
#define WIDEDEEP_IMPLEMENTATION
#define WD_USE_ONEDNN
#include "widedeep.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


enum { FWD, WGRAD, DGRAD };
static const char *kind_name[] = {"fwd", "wgrad", "dgrad"};

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
#define CK(call)                                                                        \
    do {                                                                                \
        dnnl_status_t s_ = (call);                                                      \
        if (s_ != dnnl_success) { fprintf(stderr, "gemm_peak: %s failed (%d)\n", #call, (int)s_); exit(1); } \
    } while (0)

static void *buffer(size_t n, int bf16) {
    size_t bytes = n * (bf16 ? 2 : 4);
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) { fprintf(stderr, "gemm_peak: out of memory\n"); exit(1); }
    for (size_t i = 0; i < n; i++) {
        float v = (float)((double)rand() / RAND_MAX - 0.5);
        if (bf16) wd__to_bf16_sw((uint16_t *)p + i, &v, 1);
        else ((float *)p)[i] = v;
    }
    return p;
}

/* C (M, N) = A (M, K) B (K, N), strides as widedeep.h's wd__prim_get; times
   REPS executions; returns the best time, *median the median. */
static double run(dnnl_engine_t eng, dnnl_stream_t st, int kind, int64_t M, int64_t N, int64_t K, int bf16, int reps, double *median) {
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N}, biasd = {1, N};
    dnnl_dims_t as, bs, cs = {N, 1}, biass = {N, 1};
    if (kind == FWD) { as[0] = K; as[1] = 1; bs[0] = 1; bs[1] = K; }
    else if (kind == WGRAD) { as[0] = 1; as[1] = M; bs[0] = N; bs[1] = 1; }
    else { as[0] = K; as[1] = 1; bs[0] = N; bs[1] = 1; }
    dnnl_data_type_t in_t = bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a, b, c, bi;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CK(dnnl_memory_desc_init_by_strides(&a, 2, ad, in_t, as));
    CK(dnnl_memory_desc_init_by_strides(&b, 2, bd, in_t, bs));
    CK(dnnl_memory_desc_init_by_strides(&c, 2, cd, dnnl_f32, cs));
    CK(dnnl_memory_desc_init_by_strides(&bi, 2, biasd, dnnl_f32, biass));
    int fused = kind == FWD;   // bias + ReLU on the forward product, as widedeep's hidden layers
    CK(dnnl_matmul_desc_init(&md, &a, &b, fused ? &bi : NULL, &c));
    CK(dnnl_primitive_attr_create(&attr));
    if (fused) {
        CK(dnnl_post_ops_create(&po));
        CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
        CK(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    CK(dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL));
    CK(dnnl_primitive_create(&p, pd));
    void *A = buffer((size_t)(M * K), bf16), *B = buffer((size_t)(K * N), bf16);
    float *C = buffer((size_t)(M * N), 0), *bias = buffer((size_t)N, 0);
    dnnl_memory_t ma, mb, mc, mbias;
    CK(dnnl_memory_create(&ma, &a, eng, A));
    CK(dnnl_memory_create(&mb, &b, eng, B));
    CK(dnnl_memory_create(&mc, &c, eng, C));
    CK(dnnl_memory_create(&mbias, &bi, eng, bias));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_BIAS, mbias}};
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = -3; r < reps; r++) {   // 3 warm-up runs
        double t0 = wd__now();
        CK(dnnl_primitive_execute(p, st, fused ? 4 : 3, args));
        CK(dnnl_stream_wait(st));
        if (r >= 0) t[r] = wd__now() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_d);
    double best = t[0];
    *median = t[reps / 2];
    free(t);
    dnnl_memory_destroy(ma); dnnl_memory_destroy(mb); dnnl_memory_destroy(mc); dnnl_memory_destroy(mbias);
    dnnl_primitive_destroy(p);
    dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    free(A); free(B); free(C); free(bias);
    return best;
}

int main(int argc, char **argv) {
    int64_t M = argc > 1 ? atoll(argv[1]) : 4096;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    int64_t w[16];
    int nw = 0;
    const char *widths = argc > 3 ? argv[3] : "429,1024,512,256";
    for (const char *s = widths; *s && nw < 16;) {
        w[nw++] = atoll(s);
        s = strchr(s, ',');
        if (!s) break;
        s++;
    }
    if (M < 1 || reps < 1 || nw < 2) { fprintf(stderr, "usage: gemm_peak [M [REPS [IN,W1,W2,...]]]\n"); return 2; }
    omp_set_num_threads(1);
    srand(1);
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    printf("gemm_peak: oneDNN %d.%d.%d, isa=%s, 1 thread, M=%lld, %d timed runs each (3 warm-up)\n",
           v->major, v->minor, v->patch, wd__isa_name((int)dnnl_get_effective_cpu_isa()), (long long)M, reps);
    printf("%-6s %-5s %-18s %9s %9s %9s %9s\n", "prec", "kind", "M x N x K", "best ms", "med ms", "GF/s best", "GF/s med");
    for (int bf16 = 0; bf16 < 2; bf16++) {
        double tb = 0, tm = 0, flops = 0;
        for (int l = 0; l + 1 < nw; l++) {
            int64_t in = w[l], out = w[l + 1];
            for (int kind = FWD; kind <= DGRAD; kind++) {
                int64_t mm = kind == FWD ? M : kind == WGRAD ? out : M;
                int64_t nn = kind == FWD ? out : in;
                int64_t kk = kind == FWD ? in : kind == WGRAD ? M : out;
                double med, best = run(eng, st, kind, mm, nn, kk, bf16, reps, &med);
                double f = 2.0 * (double)mm * (double)nn * (double)kk;
                char shape[64];
                snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)mm, (long long)nn, (long long)kk);
                printf("%-6s %-5s %-18s %9.3f %9.3f %9.1f %9.1f\n", bf16 ? "bf16" : "fp32", kind_name[kind], shape, 1e3 * best, 1e3 * med,
                       f / best * 1e-9, f / med * 1e-9);
                tb += best; tm += med; flops += f;
            }
        }
        printf("%-6s total: %.3f MFLOP/sample; best %.2f ms = %.1f GFLOP/s = %.0f samples/s (MLP only); median %.2f ms = %.1f GFLOP/s\n",
               bf16 ? "bf16" : "fp32", flops / (double)M * 1e-6, 1e3 * tb, flops / tb * 1e-9, (double)M / tb, 1e3 * tm, flops / tm * 1e-9);
        printf("PEAK %s M=%lld gflops=%.1f mflop_per_sample=%.4f\n", bf16 ? "bf16" : "fp32", (long long)M, flops / tb * 1e-9, flops / (double)M * 1e-6);
    }
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
