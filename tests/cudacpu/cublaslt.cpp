// cublaslt.cpp - the cuBLASLt calls widedeep_cuda.cu makes, on the emulated
// device: column-major layouts (fp32 or bf16 A/B, fp32 or bf16 C/D), op N/T,
// compute 32F (products and sums in fp32) or 32F_FAST_TF32 (inputs rounded to
// TF32's 10 mantissa bits first: to nearest, ties away, as cvt.rna.tf32;
// CUDACPU_TF32=rz truncates), the epilogues DEFAULT, BIAS, RELU_BIAS,
// RELU_AUX_BIAS (the ReLU mask as a bitmask, aux_ld a multiple of 128) and
// DRELU_BGRAD (the mask applied to the product, the bias gradient its row
// sums), a bias of BIAS_DATA_TYPE (by default C's type), bf16 outputs rounded
// to nearest even, the preferences' workspace and alignments checked against
// the pointers at the call. CUDACPU_LT_REFUSE=all or a list of epilogues
// (bias,relu_bias,relu_aux_bias,drelu_bgrad) makes the heuristic find no
// algorithm for those, so that the caller's fallback runs. A matmul is an operation of
// its stream, like a kernel.
#include "internal.h"
#include <cublasLt.h>
#include <strings.h>
#include <vector>

struct cublasLtContext { int magic; };
namespace {
struct lt_desc {
    cublasComputeType_t compute;
    int ta, tb;
    cublasLtEpilogue_t epi;
    const void *bias;
    int bias_type;    // -1: C's
    void *aux;
    int64_t aux_ld;
};
struct lt_layout { cudaDataType_t type; uint64_t rows, cols; int64_t ld; };
struct lt_pref { uint64_t ws; uint32_t align[4]; };
static_assert(sizeof(lt_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "desc");
static_assert(sizeof(lt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout");
static_assert(sizeof(lt_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "pref");
static_assert(sizeof(lt_pref) <= sizeof(cublasLtMatmulAlgo_t), "algo");

float bf16_to_f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
uint16_t f_to_bf16(float f) {   // to nearest even; a NaN stays a (quiet) NaN
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
float tf32(float f) {
    static int rz = getenv("CUDACPU_TF32") && !strcmp(getenv("CUDACPU_TF32"), "rz");
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000) == 0x7f800000) return f;
    u = (rz ? u : u + 0x1000) & 0xffffe000u;
    memcpy(&f, &u, 4);
    return f;
}
bool type_ok(cudaDataType_t t) { return t == CUDA_R_32F || t == CUDA_R_16BF; }
float ld_el(const void *p, cudaDataType_t t, size_t i) {
    return t == CUDA_R_16BF ? bf16_to_f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
// op(A) m x k, op(B) k x n, C and D m x n; the types cuBLASLt takes for the compute type
cublasStatus_t check(const lt_desc *x, const lt_layout *a, const lt_layout *b, const lt_layout *c, const lt_layout *d, uint64_t *m,
                     uint64_t *n, uint64_t *k) {
    uint64_t am = x->ta ? a->cols : a->rows, ak = x->ta ? a->rows : a->cols;
    uint64_t bk = x->tb ? b->cols : b->rows, bn = x->tb ? b->rows : b->cols;
    if (ak != bk || c->rows != am || c->cols != bn || d->rows != am || d->cols != bn) return CUBLAS_STATUS_INVALID_VALUE;
    if (a->type != b->type || c->type != d->type || !type_ok(a->type) || !type_ok(c->type)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (x->compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a->type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (x->compute != CUBLAS_COMPUTE_32F && x->compute != CUBLAS_COMPUTE_32F_FAST_TF32) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (a->type == CUDA_R_32F && c->type != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;   // fp32 in, bf16 out: no such kernel
    *m = am; *n = bn; *k = ak;
    return CUBLAS_STATUS_SUCCESS;
}
bool refused(cublasLtEpilogue_t e) {
    static const struct { const char *name; cublasLtEpilogue_t e; } names[] = {
        {"bias", CUBLASLT_EPILOGUE_BIAS}, {"relu_bias", CUBLASLT_EPILOGUE_RELU_BIAS},
        {"relu_aux_bias", CUBLASLT_EPILOGUE_RELU_AUX_BIAS}, {"drelu_bgrad", CUBLASLT_EPILOGUE_DRELU_BGRAD}};
    const char *r = getenv("CUDACPU_LT_REFUSE");
    if (!r || !*r || e == CUBLASLT_EPILOGUE_DEFAULT) return false;
    for (const char *p = r; *p;) {
        size_t len = strcspn(p, ",");
        bool known = len == 3 && !strncmp(p, "all", 3), hit = known;
        for (auto &n : names)
            if (strlen(n.name) == len && !strncasecmp(p, n.name, len)) { known = true; hit |= n.e == e; }
        if (!known) cudacpu::fatal("CUDACPU_LT_REFUSE=%s: all, or some of bias,relu_bias,relu_aux_bias,drelu_bgrad", r);
        if (hit) return true;
        p += len + (p[len] == ',');
    }
    return false;
}
// acc (m x n, row-major here: acc[i * n + j]) = op(A) op(B): each element summed over q in order, in fp32
__attribute__((no_sanitize("address", "undefined")))
void product(float *acc, const float *fa, const float *fbt, uint64_t m, uint64_t n, uint64_t k) {
    for (uint64_t i = 0; i < m; i++) {
        float *row = acc + i * n;
        for (uint64_t j = 0; j < n; j++) row[j] = 0.0f;
        for (uint64_t q = 0; q < k; q++) {
            float a = fa[i * k + q];
            const float *b = fbt + q * n;
            for (uint64_t j = 0; j < n; j++) row[j] += a * b[j];
        }
    }
}
}   // namespace

extern "C" {
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) { *h = new cublasLtContext{0x17}; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { delete h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c, cudaDataType_t scale) {
    if (scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    auto *o = new cublasLtMatmulDescOpaque_t;
    memset(o, 0, sizeof *o);
    lt_desc *x = (lt_desc *)o->data;
    x->compute = c; x->epi = CUBLASLT_EPILOGUE_DEFAULT; x->bias_type = -1;
    *d = o;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { delete d; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n) {
    lt_desc *x = (lt_desc *)d->data;
    size_t want = a == CUBLASLT_MATMUL_DESC_BIAS_POINTER || a == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER ||
                  a == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD ? 8 : 4;
    if (n != want) return CUBLAS_STATUS_INVALID_VALUE;
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA: x->ta = *(const int32_t *)buf == CUBLAS_OP_T; break;
    case CUBLASLT_MATMUL_DESC_TRANSB: x->tb = *(const int32_t *)buf == CUBLAS_OP_T; break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: x->epi = *(const cublasLtEpilogue_t *)buf; break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: x->bias = *(const void *const *)buf; break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: x->bias_type = *(const int32_t *)buf; break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: x->aux = *(void *const *)buf; break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: x->aux_ld = *(const int64_t *)buf; break;
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows, uint64_t cols, int64_t ld) {
    if (ld < (int64_t)rows || !type_ok(t)) return CUBLAS_STATUS_INVALID_VALUE;
    auto *o = new cublasLtMatrixLayoutOpaque_t;
    memset(o, 0, sizeof *o);
    *(lt_layout *)o->data = lt_layout{t, rows, cols, ld};
    *l = o;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { delete l; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    auto *o = new cublasLtMatmulPreferenceOpaque_t;
    memset(o, 0, sizeof *o);
    lt_pref *x = (lt_pref *)o->data;
    for (int i = 0; i < 4; i++) x->align[i] = 256;   // cuBLASLt's default: pointers 256-byte aligned
    *p = o;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { delete p; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *buf,
                                                   size_t n) {
    lt_pref *x = (lt_pref *)p->data;
    switch (a) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: if (n != 8) return CUBLAS_STATUS_INVALID_VALUE; x->ws = *(const uint64_t *)buf; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        if (n != 4) return CUBLAS_STATUS_INVALID_VALUE;
        x->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = *(const uint32_t *)buf;
        break;
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t p, int req,
                                              cublasLtMatmulHeuristicResult_t res[], int *found) {
    if (!h || h->magic != 0x17 || req < 1) return CUBLAS_STATUS_INVALID_VALUE;
    *found = 0;
    const lt_desc *x = (const lt_desc *)d->data;
    uint64_t m, n, k;
    cublasStatus_t st = check(x, (lt_layout *)A->data, (lt_layout *)B->data, (lt_layout *)C->data, (lt_layout *)D->data, &m, &n, &k);
    if (st) return st;
    if (refused(x->epi)) return CUBLAS_STATUS_NOT_SUPPORTED;
    memset(&res[0], 0, sizeof res[0]);
    memcpy(res[0].algo.data, p->data, sizeof(lt_pref));   // the algorithm keeps the alignments it was chosen for
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].wavesCount = 1.0f;
    *found = 1;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A, cublasLtMatrixLayout_t Ad,
                              const void *B, cublasLtMatrixLayout_t Bd, const void *beta, const void *C, cublasLtMatrixLayout_t Cd, void *D,
                              cublasLtMatrixLayout_t Dd, const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsb, cudaStream_t st) {
    if (!h || h->magic != 0x17) return CUBLAS_STATUS_INVALID_VALUE;
    lt_desc x = *(const lt_desc *)d->data;
    lt_layout a = *(lt_layout *)Ad->data, b = *(lt_layout *)Bd->data, c = *(lt_layout *)Cd->data, dl = *(lt_layout *)Dd->data;
    uint64_t m, n, k;
    cublasStatus_t s = check(&x, &a, &b, &c, &dl, &m, &n, &k);
    if (s) return s;
    if (algo) {   // the pointers must have the alignments the algorithm was chosen for, the workspace its size
        const lt_pref *p = (const lt_pref *)algo->data;
        const void *ptr[4] = {A, B, C, D};
        for (int i = 0; i < 4; i++) if (p->align[i] && (uintptr_t)ptr[i] % p->align[i]) return CUBLAS_STATUS_INVALID_VALUE;
        if (p->ws && (wsb < p->ws || !ws)) return CUBLAS_STATUS_INVALID_VALUE;
    }
    cublasLtEpilogue_t e = x.epi;
    bool relu = e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    bool bias = e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    bool aux_out = e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS, drelu = e == CUBLASLT_EPILOGUE_DRELU_BGRAD, bgrad = drelu;
    if (!relu && !bias && !drelu && e != CUBLASLT_EPILOGUE_DEFAULT) return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((aux_out || drelu) && (!x.aux || x.aux_ld % 128 || x.aux_ld < (int64_t)m)) return CUBLAS_STATUS_INVALID_VALUE;
    if ((bias || bgrad) && !x.bias) return CUBLAS_STATUS_INVALID_VALUE;
    cudaDataType_t bt = x.bias_type < 0 ? c.type : (cudaDataType_t)x.bias_type;
    if (!type_ok(bt)) return CUBLAS_STATUS_NOT_SUPPORTED;
    float al = *(const float *)alpha, be = *(const float *)beta;
    bool t32 = x.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    cudaError_t qe = cudacpu::enqueue(st, [=]() {
        if (ws) cudacpu::scribble(ws, wsb);
        std::vector<float> fa(m * k), fbt(k * n), acc(m * n), bg(bgrad ? m : 0, 0.0f);
        for (uint64_t i = 0; i < m; i++)
            for (uint64_t q = 0; q < k; q++) {
                float v = ld_el(A, a.type, x.ta ? q + i * (uint64_t)a.ld : i + q * (uint64_t)a.ld);
                fa[i * k + q] = t32 ? tf32(v) : v;
            }
        for (uint64_t q = 0; q < k; q++)
            for (uint64_t j = 0; j < n; j++) {
                float v = ld_el(B, b.type, x.tb ? j + q * (uint64_t)b.ld : q + j * (uint64_t)b.ld);
                fbt[q * n + j] = t32 ? tf32(v) : v;
            }
        product(acc.data(), fa.data(), fbt.data(), m, n, k);
        for (uint64_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < m; i++) {
                float v = al * acc[i * n + j];
                if (be != 0.0f) v += be * ld_el(C, c.type, i + j * (uint64_t)c.ld);
                if (bias) v += ld_el(x.bias, bt, i);
                uint64_t bit = j * (uint64_t)x.aux_ld + i;
                uint8_t *mk = (uint8_t *)x.aux;
                if (aux_out) {
                    if (v > 0.0f) mk[bit / 8] |= (uint8_t)(1u << (bit % 8));
                    else mk[bit / 8] &= (uint8_t) ~(1u << (bit % 8));
                }
                if (relu && !(v > 0.0f)) v = 0.0f;
                if (drelu && !(mk[bit / 8] >> (bit % 8) & 1)) v = 0.0f;
                if (bgrad) bg[i] += v;
                uint64_t at = i + j * (uint64_t)dl.ld;
                if (dl.type == CUDA_R_16BF) ((uint16_t *)D)[at] = f_to_bf16(v);
                else ((float *)D)[at] = v;
            }
        for (uint64_t i = 0; i < (bgrad ? m : 0); i++) {
            if (bt == CUDA_R_16BF) ((uint16_t *)x.bias)[i] = f_to_bf16(bg[i]);
            else ((float *)x.bias)[i] = bg[i];
        }
    }, "cublasLtMatmul");
    return qe == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
}   // extern "C"
