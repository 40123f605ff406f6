// GPU tests (`make test-gpu`): the CUDA backend against the reference step
// of tests/ref.h (written from the header's formulas, in double), against
// itself (CUDA graph or not, overlapped or not, resumed or not, N ranks or
// 1), the communicators, and the failure paths. Usage: test_gpu [TMPDIR]
//
// Without a GPU it prints one "SKIP test_gpu: no CUDA device: ..." and exits
// 0 (tests/run.sh accepts that on machines without one); with
// WD_REQUIRE_GPU=1 (make test-gpu, bench/gpu_run.sh) it fails instead.
// WD_GPU_TEST_QUICK=1 runs fewer steps on less data (the compute-sanitizer
// runs); every test still runs. WD_GPU_TESTS=a,b runs only the tests named
// (with or without "test_"; the others print SKIP). WD_COMM_TIMEOUT: the
// communicators' timeout in seconds (default here 30; the tests that need a
// failure to end the other ranks want it within two thirds of that, 20 s,
// never at the timeout).
// Output is line-buffered (a run killed at its time limit keeps every line).
//
// What can fail, and the tolerances. An element passes when
//     |gpu - ref| <= TOL * rms(its tensor) + TOL * |ref|
// (ref.h's ref_compare_array; a tensor is a layer's weights, a layer's
// biases, the wide dense weights, the wide bias, one slot's or cross's table).
//  - Gradients are compared directly: one step of Adam (beta1 0.8) from a
//    fresh model leaves m = (1 - beta1) g in every deep state array, and FTRL
//    from z = n = w = 0 leaves z = g in the wide ones. FP32 (cuda.fp32 = 1):
//    TOL 1e-4 (the CPU backend, float too, stays within 0.06 of it here and
//    within 0.21 after 4 steps: the dry run below; a 1% gradient error fails
//    by 90x, a 1% error in lr_deep or lr_wide by 80x or more); TF32 (the
//    default): 0.25. TF32 rounds every GEMM input to 11 bits (u = 2^-11 to
//    nearest, 2^-10 truncated: cuBLASLt does not say which), so a product's
//    error is up to 2u of the sum of its terms' magnitudes, not of its value,
//    and an embedding row's gradient is three chained products summed over
//    the row's samples: where those cancel, the error is many times 2u of
//    the tensor's RMS. Measured on the emulated device (tests/cudacpu: the
//    same code, only the compute type differs from the FP32 runs, which agree
//    to 0.063 of 1e-4): worst 0.066 of (RMS + |ref|) rounding to nearest
//    (hidden 63-31's embeddings), 0.20 truncating (criteo-shaped); 2e-2
//    failed both. Errors of a quarter of a tensor's RMS are caught here,
//    smaller ones are the FP32 runs' to catch.
//  - Parameters and every optimizer state after several steps with nonzero
//    adagrad_init, ftrl_beta, l1, l2 and Adam betas/eps, so that a step's
//    size depends on the gradient's scale (with the zero defaults the first
//    step moves every weight by exactly +-lr and only signs are seen).
//  - ReLU is the one discontinuity: a sample whose pre-activation lies within
//    rounding noise of 0 in some unit may take the other branch on the GPU
//    and move that unit's gradient by a whole sample's share. Before every
//    compared step the reference finds such samples (|pre-activation| below
//    SCREEN x the layer's RMS) and gives them weight 0 in the batch both
//    sides train on; the rest is compared tightly.
//  - Precision bf16 (test_gradients_bf16, test_steps_bf16) against the
//    reference rounding what the library rounds (ref.h's bf16 note): TOL
//    1e-3, screen 1e-3. Measured on the CPU harness (the CPU's bf16: oneDNN
//    on AMX, WD_GPU_TESTS=gradients_bf16 build/test_gpu_on_cpu): worst 0.39
//    of it (else under 0.03); the fp32 reference's gradient (bf16's own
//    effect) misses it by 106x to 2690x, layer 0's dW 1% too large by 9.1x to
//    9.7x, the reference without the dz rounding by 5.4x to 85x and without
//    the activations' by 56x to 1040x (all checked in every run), and a
//    scratch build of the library with its hidden bias gradients 1% too
//    large (wd__hidden_grad's column sum x 1.01) by 7.4x to 8.2x. The GPU's
//    products accumulate in fp32 as oneDNN's do, in another order: the same
//    noise is expected there.
//  - Runs of the same code on the same shapes must agree: graph or stream or
//    timed stream, on each sparse path, bit for bit; resumed from a
//    checkpoint or not, to 1e-6 (bitwise is expected; the number of
//    differing elements is printed); overlap (cuda.no_overlap) on and off
//    must agree bit for bit (only the scheduling differs). N simulated ranks against one
//    rank (other GEMM shapes and summation orders): relative L2 error per
//    tensor <= 1e-4.
//
// Dry run without a GPU: g++ -std=c++17 -x c++ -DWD_TEST_GPU_ON_CPU -I. tests/test_gpu.cu
// -lzstd -lz -lpthread -lm (plus the GEMM engine's flags) runs the same
// tests on the CPU backend where they apply (the rank, NCCL and CUDA-only
// parts skip): it checks this file's harness (the reference runs, the screen,
// the gradient read-back, the tolerances), not the GPU.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include "ref.h"
#include <pthread.h>
#include <time.h>

#ifdef WD_TEST_GPU_ON_CPU
#define TEST_BACKEND() wd_backend_cpu()
#define TEST_DEVICE WD_DEVICE_CPU
#define ON_CPU 1
#else
#define TEST_BACKEND() wd_backend_cuda()
#define TEST_DEVICE WD_DEVICE_CUDA
#define ON_CPU 0
#endif

static char TMP[200] = "/tmp", CRITEO[300], VALID[300], ZIPF[300], MH[300], DENSE[300], HOT[300];
static int QUICK;                   // WD_GPU_TEST_QUICK=1
// "promptly": two thirds of WD_COMM_TIMEOUT (20 s at the default 30), so that
// a rank left waiting for the timeout fails while a slower device (the
// emulated one, tests/cudacpu, with a longer timeout) is not failed for its pace
static double PROMPT = 20;
static int NDEV;
#define BLOCK 256                   // samples per block of every test file
#define NB 1024                     // the batch of the direct backend tests
#define MH_IDS 8                    // ids per sample the device reserves per multi-hot slot (WD_PLAN_MULTI_HOT_IDS)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
// The CUDA settings every backend and training of a test gets (backend_open,
// backend_steps, train_desc; wd_eval_desc.cuda where it evaluates): a test
// sets its fields, and they are 0 again (the defaults) after every test (RUN).
static wd_cuda_desc CUDA;
static void set_fp32(int on) { CUDA.fp32 = on == 1; }
// The precision modes of the compared runs: TF32 (the default), FP32
// (cuda.fp32) and a model of precision bf16.
enum { M_TF32 = 0, M_FP32 = 1, M_BF16 = 2 };
static const char *mode_name(int mode) { return mode == M_BF16 ? "bf16" : mode == M_FP32 ? "fp32" : "tf32"; }
static void set_epilogue(int on) { CUDA.no_epilogue = !on; }
// Whether every ReLU mask the engine line's mlp= says a forward product writes
// ("aux") is read by the next layer's da (its "fused": DRELU_BGRAD); true
// without mlp= or with mlp=none.
static int masks_read(const char *what) {
    const char *p = strstr(what, " mlp=");
    if (!p || !strncmp(p + 5, "none", 4)) return 1;
    int prev_aux = 0;
    for (p += 5; *p && *p != ' ';) {
        const char *slash = strchr(p, '/');
        if (!slash) return 0;
        if (prev_aux && strncmp(slash + 1, "fused", 5) != 0) return 0;
        prev_aux = !strncmp(p, "aux", 3);
        p += strcspn(p, ", ");
        if (*p == ',') p++;
    }
    return 1;
}
// Whether the engine line `what` has the field name=value (space-separated name=value words).
static int field_is(const char *what, const char *name, const char *value) {
    size_t n = strlen(name), v = strlen(value);
    for (const char *p = what; (p = strstr(p, name)) != NULL; p += n)
        if ((p == what || p[-1] == ' ') && p[n] == '=' && !strncmp(p + n + 1, value, v) && (p[n + 1 + v] == ' ' || !p[n + 1 + v])) return 1;
    return 0;
}

// ---- data -------------------------------------------------------------------------------------
// Writes b (BLOCK samples a block) to path and frees it.
static wd_status write_batch(const char *path, const wd_schema *s, wd_batch *b) {
    wd_writer_desc wdd;
    memset(&wdd, 0, sizeof wdd);
    wdd.block_samples = BLOCK;
    wd_writer *w;
    wd_status st = wd_writer_open(path, s, &wdd, &w);
    if (!st) { st = wd_writer_append(w, b); if (st) wd_writer_abort(w); else st = wd_writer_close(w); }
    wd_batch_free(b);
    return st;
}
// A multi-hot file: 4 dense columns; slots a (one-hot, 50), b (multi-hot, 300
// buckets, 0..9 ids per sample: some samples hold more than the device's 8
// per sample, a batch fewer than 8 per sample), c (multi-hot, 40 buckets,
// 0..4 ids skewed to a few hot ones, repeats inside a sample), d (one-hot, 30).
static wd_status write_multi_hot(const char *path, int rows) {
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = 4;
    s.nslots = 4;
    const char *names[4] = {"a", "b", "c", "d"};
    const uint32_t buckets[4] = {50, 300, 40, 30};
    for (int k = 0; k < 4; k++) {
        snprintf(s.slot[k].name, WD_NAME_MAX, "%s", names[k]);
        s.slot[k].buckets = buckets[k];
        s.slot[k].kind = k == 1 || k == 2 ? WD_MULTI_HOT : WD_ONE_HOT;
    }
    wd_batch b;
    wd_status st = wd_batch_init(&b, &s, rows, (int64_t)rows * 10);
    if (st) return st;
    uint64_t x = 77;
#define LCG() (x = x * 6364136223846793005ull + 1442695040888963407ull, (uint32_t)(x >> 33))
    float ta[50], tb[300], tc[40], td[30];
    for (int i = 0; i < 50; i++) ta[i] = (float)((int)(LCG() % 2001) - 1000) * 1e-3f;
    for (int i = 0; i < 300; i++) tb[i] = (float)((int)(LCG() % 2001) - 1000) * 5e-4f;
    for (int i = 0; i < 40; i++) tc[i] = (float)((int)(LCG() % 2001) - 1000) * 1e-3f;
    for (int i = 0; i < 30; i++) td[i] = (float)((int)(LCG() % 2001) - 1000) * 1e-3f;
    b.offs[1][0] = b.offs[2][0] = 0;
    uint32_t nb = 0, nc = 0;
    for (int i = 0; i < rows; i++) {
        float z = 0;
        for (int j = 0; j < 4; j++) {
            float v = (float)(LCG() % 3001) * 1e-3f - 1.0f;
            b.dense[(size_t)i * 4 + j] = v;
            z += (j == 0 ? 0.5f : j == 1 ? -0.3f : 0.1f) * v;
        }
        uint32_t a = LCG() % 50, d = LCG() % 30;
        b.ids[0][i] = a; b.ids[3][i] = d;
        z += ta[a] + td[d];
        int cb = (int)(LCG() % 10), cc = (int)(LCG() % 5);
        for (int j = 0; j < cb; j++) { uint32_t u = LCG() % 300, id = u * u / 300; b.ids[1][nb++] = id; z += tb[id]; }
        for (int j = 0; j < cc; j++) { uint32_t u = LCG() % 40, id = u * u / 160; b.ids[2][nc++] = id; z += tc[id]; }
        b.offs[1][i + 1] = nb; b.offs[2][i + 1] = nc;
        b.label[i] = (float)(LCG() % 10000) * 1e-4f < 1.0f / (1.0f + expf(-z)) ? 1.0f : 0.0f;
        b.weight[i] = 1.0f;
    }
#undef LCG
    b.n = rows;
    return write_batch(path, &s, &b);
}

// A dense-only file: 6 dense columns, no slots (so no crosses and no sparse
// occurrences: the device's sort and sparse kernels see empty ranges).
static wd_status write_dense_only(const char *path, int rows) {
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = 6;
    wd_batch b;
    wd_status st = wd_batch_init(&b, &s, rows, 0);
    if (st) return st;
    uint64_t x = 91;
#define LCG() (x = x * 6364136223846793005ull + 1442695040888963407ull, (uint32_t)(x >> 33))
    for (int i = 0; i < rows; i++) {
        float v[6];
        for (int j = 0; j < 6; j++) v[j] = b.dense[(size_t)i * 6 + j] = (float)(LCG() % 4001) * 1e-3f - 2.0f;
        float z = 0.8f * v[0] - 0.5f * v[1] + 0.6f * v[2] * v[3] - 0.4f * fabsf(v[4]) + 0.2f;   // products and |.|: the MLP has work to do
        b.label[i] = (float)(LCG() % 10000) * 1e-4f < 1.0f / (1.0f + expf(-z)) ? 1.0f : 0.0f;
        b.weight[i] = 1.0f;
    }
#undef LCG
    b.n = rows;
    return write_batch(path, &s, &b);
}

// Runs of every length the sparse kernels treat differently, in every batch of
// NB samples (sample j = i % NB of its batch): slot c (one-hot, 8 buckets):
// id 0 for j < 128 (a run of WDC_HOT = 128 rows: the longest one warp sums),
// id 1 for the next 129 (the shortest hot run), id 2 for the other 767 (a
// hot run of one partial chunk); slot h (multi-hot, 60 buckets): id 0 once
// per sample and twice in sample 0 (1025 rows: a chunk of WDC_HOT_CHUNK =
// 1024 and one more), id 5 three times per sample (3072: three whole
// chunks), id 7 twice, and once more for j < 100 (2148: far longer than one
// block's share), and 0..2 of ids 8..59 (short runs); slot u (one-hot, 5000
// buckets, uniform: about a thousand runs of one or two rows); 3 dense
// columns. Labels from a planted logistic model.
static wd_status write_hot(const char *path, int rows) {
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = 3;
    s.nslots = 3;
    const char *names[3] = {"c", "h", "u"};
    const uint32_t buckets[3] = {8, 60, 5000};
    for (int k = 0; k < 3; k++) {
        snprintf(s.slot[k].name, WD_NAME_MAX, "%s", names[k]);
        s.slot[k].buckets = buckets[k];
        s.slot[k].kind = k == 1 ? WD_MULTI_HOT : WD_ONE_HOT;
    }
    wd_batch b;
    wd_status st = wd_batch_init(&b, &s, rows, (int64_t)rows * MH_IDS);
    if (st) return st;
    uint64_t x = 123;
#define LCG() (x = x * 6364136223846793005ull + 1442695040888963407ull, (uint32_t)(x >> 33))
    float tc[8], th[60], tu[5000];
    for (int i = 0; i < 8; i++) tc[i] = (float)((int)(LCG() % 2001) - 1000) * 1e-3f;
    for (int i = 0; i < 60; i++) th[i] = (float)((int)(LCG() % 2001) - 1000) * 3e-4f;
    for (int i = 0; i < 5000; i++) tu[i] = (float)((int)(LCG() % 2001) - 1000) * 1e-3f;
    b.offs[1][0] = 0;
    uint32_t nh = 0;
    for (int i = 0; i < rows; i++) {
        int j = i % NB;
        float z = 0;
        for (int q = 0; q < 3; q++) {
            float v = (float)(LCG() % 3001) * 1e-3f - 1.0f;
            b.dense[(size_t)i * 3 + q] = v;
            z += (q == 0 ? 0.6f : -0.4f) * v;
        }
        uint32_t c = j < 128 ? 0 : j < 257 ? 1 : 2, u = LCG() % 5000;
        b.ids[0][i] = c; b.ids[2][i] = u;
        z += tc[c] + tu[u];
        uint32_t hid[MH_IDS];
        int nid = 0;
        hid[nid++] = 0;
        if (j == 0) hid[nid++] = 0;
        for (int q = 0; q < 3; q++) hid[nid++] = 5;
        hid[nid++] = 7; hid[nid++] = 7;
        if (j < 100) hid[nid++] = 7;
        for (int extra = (int)(LCG() % 3); extra > 0 && nid < MH_IDS; extra--) hid[nid++] = 8 + LCG() % 52;
        for (int q = 0; q < nid; q++) { b.ids[1][nh++] = hid[q]; z += th[hid[q]]; }
        b.offs[1][i + 1] = nh;
        b.label[i] = (float)(LCG() % 10000) * 1e-4f < 1.0f / (1.0f + expf(-z)) ? 1.0f : 0.0f;
        b.weight[i] = 1.0f;
    }
#undef LCG
    b.n = rows;
    return write_batch(path, &s, &b);
}

static wd_status file_schema(const char *path, wd_schema *s) {
    wd_reader *r;
    wd_status st = wd_reader_open(path, &r);
    if (st) return st;
    *s = *wd_reader_schema(r);
    wd_reader_close(r);
    return WD_OK;
}

// Appends src's samples to dst (dst's capacity suffices; checked).
static int batch_append(wd_batch *dst, const wd_batch *src) {
    int n0 = dst->n, n = src->n, D = src->ndense;
    if (n0 + n > dst->cap) return -1;
    memcpy(dst->label + n0, src->label, sizeof(float) * (size_t)n);
    memcpy(dst->weight + n0, src->weight, sizeof(float) * (size_t)n);
    memcpy(dst->dense + (size_t)n0 * D, src->dense, sizeof(float) * (size_t)n * (size_t)D);
    for (int k = 0; k < src->nslots; k++) {
        if (src->kind[k] != WD_MULTI_HOT) { memcpy(dst->ids[k] + n0, src->ids[k], sizeof(uint32_t) * (size_t)n); continue; }
        if (n0 == 0) dst->offs[k][0] = 0;
        uint32_t base = dst->offs[k][n0], nnz = src->offs[k][n] - src->offs[k][0];
        if ((int64_t)base + nnz > dst->nnz_cap) return -1;
        memcpy(dst->ids[k] + base, src->ids[k] + src->offs[k][0], sizeof(uint32_t) * nnz);
        for (int i = 0; i < n; i++) dst->offs[k][n0 + i + 1] = base + (src->offs[k][i + 1] - src->offs[k][0]);
    }
    dst->n = n0 + n;
    return 0;
}
// Batch t of NB samples (blocks t*NB/BLOCK ...) of a file, in pinned memory
// laid out as the CUDA backend's own batches.
static wd_status read_batch(const char *path, int t, wd_batch *out) {
    wd_reader *r;
    wd_status st = wd_reader_open(path, &r);
    if (st) return st;
    st = wd_batch_init_with(out, wd_reader_schema(r), NB, (int64_t)NB * MH_IDS, TEST_BACKEND()->batch_alloc);
    for (int q = 0; !st && q < NB / BLOCK; q++) {
        int64_t blk = (int64_t)t * (NB / BLOCK) + q;
        if (blk >= wd_reader_nblocks(r)) { wd_set_last_error("test file too short"); st = WD_ERR_INVALID_ARG; break; }
        const wd_batch *b;
        st = wd_reader_block(r, blk, &b);
        if (!st && batch_append(out, b) != 0) { wd_set_last_error("batch overflow"); st = WD_ERR_LIMIT; }
    }
    wd_reader_close(r);
    return st;
}

// ---- models -----------------------------------------------------------------------------------
typedef struct cfg {
    const char *name;
    const char *data;               // one of the file paths above (filled in by main)
    int optimizer;                  // deep part: WD_ADAGRAD / WD_ADAM
    int tuned;                      // nonzero adagrad_init, ftrl_beta/l1/l2, Adam betas and eps
    int pooling, cross, no_wide, no_deep;
    int hidden0, hidden1;           // 0: 64, 32
    int embed_dim;                  // 0: 8
} cfg;

static void cfg_desc(const cfg *c, const wd_schema *s, wd_model_desc *d) {
    memset(d, 0, sizeof *d);
    d->schema = s;
    d->embed_dim = c->embed_dim ? c->embed_dim : 8;   // IN = D + 8 S: 221 (Criteo-shaped) and 36, both padded on the device
    d->hidden[0] = c->hidden0 ? c->hidden0 : 64; d->hidden[1] = c->hidden1 ? c->hidden1 : 32;
    d->optimizer = c->optimizer;
    d->pooling = c->pooling;
    d->no_wide = c->no_wide; d->no_deep = c->no_deep;
    d->seed = 5;
    if (c->cross) {                 // two crosses of the first two one-hot slots (each order: two salts)
        int oh[2], n = 0;
        for (int k = 0; k < s->nslots && n < 2; k++) if (s->slot[k].kind == WD_ONE_HOT) oh[n++] = k;
        if (n == 2) {
            d->ncross = 2;
            d->cross[0][0] = oh[0]; d->cross[0][1] = oh[1];
            d->cross[1][0] = oh[1]; d->cross[1][1] = oh[0];
            d->cross_buckets = 3001;
        }
    }
    if (c->tuned) {
        d->lr_deep = c->optimizer == WD_ADAM ? 0.003f : 0.02f;
        d->lr_wide = 0.1f;
        d->adagrad_init = 0.1f;
        d->ftrl_beta = 1.0f; d->ftrl_l1 = 1e-3f; d->ftrl_l2 = 0.1f;
        d->adam_beta1 = 0.8f; d->adam_beta2 = 0.99f; d->adam_eps = 1e-6f;
    }
}
static wd_model *cfg_model_mode(const cfg *c, wd_schema *s, int mode) {
    if (file_schema(c->data, s) != WD_OK) { printf("  %s: %s\n", c->data, wd_last_error()); return NULL; }
    wd_model_desc d;
    cfg_desc(c, s, &d);
    if (mode == M_BF16) d.precision = WD_PRECISION_BF16;
    wd_model *m = NULL;
    if (wd_model_create(&d, &m) != WD_OK) { printf("  wd_model_create: %s\n", wd_last_error()); return NULL; }
    return m;
}
static wd_model *cfg_model(const cfg *c, wd_schema *s) { return cfg_model_mode(c, s, M_TF32); }
static wd_status backend_open(wd_model *m, int batch, wd_backend **be) {
    wd_backend_desc bd;
    memset(&bd, 0, sizeof bd);
    bd.model = m; bd.batch = batch; bd.rank = 0; bd.ranks = 1; bd.device = 0; bd.threads = 2; bd.cuda = CUDA;
    return TEST_BACKEND()->create(&bd, be);
}

// ---- the ReLU screen ----------------------------------------------------------------------------
// Gives weight 0 to every sample of b that has a hidden pre-activation within
// delta x (that layer's RMS over the batch) of 0 under the reference's
// current parameters. Returns how many it zeroed.
static int screen(const ref_model *m, wd_batch *b, double delta) {
    if (m->d.no_deep || m->nlayers < 2 || delta <= 0) return 0;
    int H = 0, L = m->nlayers - 1;  // hidden layers: 0 .. L-1
    for (int l = 0; l < L; l++) H += m->layer_out[l];
    double *pre = (double *)malloc(sizeof(double) * (size_t)b->n * (size_t)H);
    ref_work w;
    if (!pre || ref_work_init(&w, m) != 0) { free(pre); return -1; }
    double ss[WD_MAX_LAYERS + 1] = {0};
    for (int i = 0; i < b->n; i++) {
        ref_forward(m, &w, b, i);
        double *p = pre + (size_t)i * H;
        for (int l = 0; l < L; l++) {
            const double *in = l ? w.act[l - 1] : w.x, *W = m->dense + m->layer_w[l], *bias = m->dense + m->layer_b[l];
            int nin = m->layer_in[l];
            for (int o = 0; o < m->layer_out[l]; o++) {
                double s = bias[o];
                for (int j = 0; j < nin; j++) s += ref_in(&m->d, W[(int64_t)o * nin + j]) * in[j];
                *p++ = s;
                ss[l] += s * s;
            }
        }
    }
    int zeroed = 0;
    for (int i = 0; i < b->n; i++) {
        const double *p = pre + (size_t)i * H;
        int near = 0;
        for (int l = 0; l < L; l++) {
            double lim = delta * sqrt(ss[l] / ((double)b->n * m->layer_out[l]));
            for (int o = 0; o < m->layer_out[l]; o++, p++) near |= fabs(*p) < lim;
        }
        if (near && b->weight[i] != 0.0f) { b->weight[i] = 0.0f; zeroed++; }
    }
    ref_work_free(&w);
    free(pre);
    return zeroed;
}

// ---- comparisons --------------------------------------------------------------------------------
static void print_report(const char *what, const ref_report *rep, double limit) {
    printf("  %-44s worst %.3g of tolerance in %s[%lld] (", what, rep->overall, ref_array_name(rep->arg), (long long)rep->at[rep->arg]);
    for (int a = 0; a < REF_NARRAYS; a++) if (rep->at[a] >= 0) printf(" %s %.2g", ref_array_name(a), rep->worst[a]);
    printf(" )%s\n", rep->overall <= limit ? "" : "  MISMATCH");
}

// Worst |got - want| / tolerance over one array, tensor by tensor.
static double compare_segments(const ref_model *m, int a, const float *got, const double *want, double tol, int64_t *at) {
    int64_t bounds[REF_MAX_SEGMENTS + 1];
    int n = ref_segments(m, a, bounds);
    double worst = 0;
    *at = -1;
    for (int j = 0; j < n; j++) {
        int64_t k;
        double r = ref_compare_array(got + bounds[j], want + bounds[j], bounds[j + 1] - bounds[j], tol, tol, &k);
        if (*at < 0 || r > worst) { worst = r; *at = bounds[j] + k; }
    }
    return worst;
}

// Relative L2 distance of two arrays, tensor by tensor (the worst).
static double rel_l2(const ref_model *m, int a, const float *x, const float *y) {
    int64_t bounds[REF_MAX_SEGMENTS + 1];
    int n = ref_segments(m, a, bounds);
    double worst = 0;
    for (int j = 0; j < n; j++) {
        double d = 0, s = 0;
        for (int64_t i = bounds[j]; i < bounds[j + 1]; i++) { double e = (double)x[i] - y[i]; d += e * e; s += (double)y[i] * y[i]; }
        double r = d == 0 ? 0 : s > 0 ? sqrt(d / s) : INFINITY;
        if (!(r <= worst)) worst = r;   // NaN counts as worst
    }
    return worst;
}
// Two models of the same description: the worst relative L2 distance of any
// tensor of any parameter or state array, and the count of elements that differ.
static double models_rel_l2(const wd_model *a, const wd_model *b, int64_t *differ, const char *what) {
    wd_model_view va, vb;
    wd_model_view_get((wd_model *)a, &va);
    wd_model_view_get((wd_model *)b, &vb);
    ref_model shape;   // the layout only (segments)
    ref_desc rd;
    ref_desc_from(&rd, va.desc);
    memset(&shape, 0, sizeof shape);
    shape.d = rd;
    ref_layout(&shape);
    const float *x[REF_NARRAYS] = {va.dense, va.dense_s1, va.dense_s2, va.wide, va.wide_z, va.wide_n, va.emb, va.emb_s1, va.emb_s2};
    const float *y[REF_NARRAYS] = {vb.dense, vb.dense_s1, vb.dense_s2, vb.wide, vb.wide_z, vb.wide_n, vb.emb, vb.emb_s1, vb.emb_s2};
    int64_t len[REF_NARRAYS] = {va.P, va.P, va.P, va.wide_rows, va.wide_rows, va.wide_rows, va.emb_rows * va.E, va.emb_rows * va.E, va.emb_rows * va.E};
    double worst = 0, w[REF_NARRAYS] = {0};
    *differ = 0;
    for (int k = 0; k < REF_NARRAYS; k++) {
        if (!x[k] || !y[k]) continue;
        w[k] = rel_l2(&shape, k, x[k], y[k]);
        if (!(w[k] <= worst)) worst = w[k];
        for (int64_t i = 0; i < len[k]; i++) *differ += memcmp(&x[k][i], &y[k][i], sizeof(float)) != 0;
    }
    printf("  %-44s relative L2 %.3g (dense %.2g %.2g %.2g wide %.2g %.2g %.2g emb %.2g %.2g %.2g), %lld elements differ\n", what, worst,
           w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], (long long)*differ);
    return worst;
}

// ---- the direct backend tests ---------------------------------------------------------------------
// Gradients of one step, compared directly: a fresh Adam model (beta1 0.8),
// one step on the GPU, g = m / (1 - beta1) for the deep parts and g = z for
// the wide parts, against the reference's gradient of the same batch.
// Returns 0 (checked here), or -1 when the backend refused the model (a CPU
// without bf16 in the dry run: the caller skips).
// Precision bf16 is compared with the reference rounding as the library does
// (ref.h's bf16 note); two more comparisons show that the tolerance tells
// bf16 from fp32 and a wrong gradient from a right one: the fp32 reference's
// gradient, and the bf16 one with layer 0's dW 1% too large, must both fail it;
// and over the models tested, the reference without the dz rounding and the
// one without the activations' rounding must each fail it for some model
// (bf16_ctl: the tolerance tells each rounding site).
static double bf16_ctl[2];   // gradients_case's worst against the reference without the dz rounding, without the activations'
static int gradients_case(const cfg *c0, int mode, double tol, double delta) {
    cfg c = *c0;
    c.optimizer = WD_ADAM; c.tuned = 1;
    wd_schema s;
    wd_model *m = cfg_model_mode(&c, &s, mode);
    if (!m) { tl_fails++; return 0; }
    wd_model_view v;
    wd_model_view_get(m, &v);
    ref_model r;
    char why[400];
    if (ref_from_view(&r, &v, why, sizeof why) != 0) { printf("  ref_from_view: %s\n", why); tl_fails++; wd_model_destroy(m); return 0; }
    wd_batch b;
    memset(&b, 0, sizeof b);
    wd_status st = read_batch(c.data, 1, &b);
    CHECK_OK(st);
    int zeroed = st ? 0 : screen(&r, &b, delta);
    ref_grads g;
    if (st || ref_grads_init(&g, &r) != 0 || ref_gradients(&r, &b, &g) != 0) {
        printf("  the reference gradient failed\n"); tl_fails++; ref_free(&r); wd_batch_free(&b); wd_model_destroy(m); return 0;
    }
    set_fp32(mode);
    wd_backend *be = NULL;
    const wd_backend_ops *ops = TEST_BACKEND();
    st = backend_open(m, NB, &be);
    if (st == WD_ERR_UNSUPPORTED && mode == M_BF16 && ON_CPU) {   // the CPU needs AVX512-BF16 and oneDNN
        printf("  %s: %s\n", c.name, wd_last_error());
        ref_grads_free(&g); ref_free(&r); wd_batch_free(&b); wd_model_destroy(m);
        return -1;
    }
    CHECK_OK(st);
    wd_step_result res;
    memset(&res, 0, sizeof res);
    if (!st) {
        char what[300];
        ops->describe(be, what, sizeof what);
        printf("  %-34s %s\n", c.name, what);
        CHECK(masks_read(what));
        CHECK_OK(ops->submit(be, &b, 0));
        CHECK_OK(ops->complete(be, &res));
        CHECK_OK(ops->download(be));
        ops->destroy(be);
    }
    double b1 = (double)v.desc->adam_beta1, worst[3] = {0, 0, 0};
    int64_t at[3] = {-1, -1, -1};
    float *gd = (float *)calloc((size_t)r.P, sizeof(float)), *gw = (float *)calloc((size_t)r.wide_rows + 1, sizeof(float));
    float *ge = (float *)calloc((size_t)(r.emb_rows * r.d.E) + 1, sizeof(float));
    if (!gd || !gw || !ge) { printf("  out of memory\n"); tl_fails++; free(gd); free(gw); free(ge); ref_grads_free(&g); ref_free(&r); wd_batch_free(&b); wd_model_destroy(m); return 0; }
    for (int64_t i = 0; i < r.P; i++) gd[i] = i < r.P_mlp ? (float)(v.dense_s1[i] / (1.0 - b1)) : v.dense_s1[i];
    for (int64_t i = 0; i < r.wide_rows; i++) gw[i] = v.wide_z[i];
    if (v.emb_s1) for (int64_t i = 0; i < r.emb_rows * r.d.E; i++) ge[i] = (float)(v.emb_s1[i] / (1.0 - b1));
    // the ids: a row is touched on the device (FTRL's n, Adam's v moved from 0) exactly
    // when the reference's batch holds it with a nonzero gradient
    int64_t id_miss = 0, ids = 0;
    for (int64_t i = 0; !c.no_wide && i < r.wide_rows; i++) {
        int want = g.wide_seen[i] && g.wide[i] != 0.0, got = v.wide_n[i] != 0.0f;
        id_miss += want != got; ids += want;
    }
    for (int64_t row = 0; v.emb_s2 && row < r.emb_rows; row++) {
        int want = 0, got = 0;
        for (int q = 0; q < r.d.E; q++) { want |= g.emb_seen[row] && g.emb[row * r.d.E + q] != 0.0; got |= v.emb_s2[row * r.d.E + q] != 0.0f; }
        id_miss += want != got; ids += want;
    }
    worst[0] = compare_segments(&r, REF_DENSE, gd, g.dense, tol, &at[0]);
    worst[1] = compare_segments(&r, REF_WIDE, gw, g.wide, tol, &at[1]);
    if (!c.no_deep) worst[2] = compare_segments(&r, REF_EMB, ge, g.emb, tol, &at[2]);
    double loss = res.weight > 0 ? res.loss / res.weight : NAN, lratio = fabs(loss - g.loss) / (tol * 0.1 * fabs(g.loss));
    int kept = 0;
    for (int i = 0; i < b.n; i++) kept += b.weight[i] != 0.0f;
    printf("  %-34s %s: gradient worst / tol: dense %.3g [%lld] wide %.3g [%lld] emb %.3g [%lld]; loss %.7f vs %.7f (%.2g of tol); %d of %d samples screened out; "
           "%lld rows touched, %lld differ\n", c.name, mode_name(mode), worst[0], (long long)at[0], worst[1], (long long)at[1], worst[2], (long long)at[2],
           loss, g.loss, lratio, zeroed, b.n, (long long)ids, (long long)id_miss);
    CHECK(worst[0] <= 1.0 && worst[1] <= 1.0 && worst[2] <= 1.0);
    CHECK(id_miss == 0 && (ids > 0 || r.wide_rows == 0));   // a dense-only model has no rows
    CHECK(lratio <= 1.0);
    CHECK((int)res.samples == kept && fabs(res.weight - g.wsum) <= 1e-6 * g.wsum);
    CHECK(zeroed >= 0 && zeroed < b.n / 2);   // the screen leaves most of the batch
    if (mode == M_BF16 && !c.no_deep) {
        ref_model r32;
        ref_grads g32;
        int64_t k;
        int ok = ref_copy(&r32, &r) == 0 && ref_grads_init(&g32, &r32) == 0;
        r32.d.bf16 = 0;
        ok = ok && ref_gradients(&r32, &b, &g32) == 0;
        CHECK(ok);
        double vs32 = compare_segments(&r, REF_DENSE, gd, g32.dense, tol, &k), e32 = compare_segments(&r, REF_EMB, ge, g32.emb, tol, &k);
        if (e32 > vs32) vs32 = e32;
        double skip[2];   // the reference without one rounding site: dz, then the activations
        for (int q = 0; q < 2; q++) {
            ref_model rq;
            ref_grads gq;
            int okq = ref_copy(&rq, &r) == 0 && ref_grads_init(&gq, &rq) == 0;
            rq.d.bf16_skip = q ? REF_BF16_ACT : REF_BF16_DZ;
            okq = okq && ref_gradients(&rq, &b, &gq) == 0;
            CHECK(okq);
            skip[q] = compare_segments(&r, REF_DENSE, gd, gq.dense, tol, &k);
            double eq = compare_segments(&r, REF_EMB, ge, gq.emb, tol, &k);
            if (eq > skip[q]) skip[q] = eq;
            if (skip[q] > bf16_ctl[q]) bf16_ctl[q] = skip[q];
            ref_grads_free(&gq);
            ref_free(&rq);
        }
        int64_t w0 = r.layer_w[0], n0 = (int64_t)r.layer_in[0] * r.layer_out[0];
        for (int64_t i = w0; i < w0 + n0; i++) g.dense[i] *= 1.01;
        double broken = compare_segments(&r, REF_DENSE, gd, g.dense, tol, &k);
        printf("  %-34s bf16 against the fp32 reference: worst %.3g of the tolerance; against layer 0's dW 1%% too large: %.3g (both must fail); "
               "against the reference without the dz rounding %.3g, without the activations' %.3g (the worst of the models must fail)\n", "",
               vs32, broken, skip[0], skip[1]);
        CHECK(vs32 > 1.0 && broken > 1.0);
        ref_grads_free(&g32);
        ref_free(&r32);
    }
    free(gd); free(gw); free(ge);
    ref_grads_free(&g);
    ref_free(&r);
    wd_batch_free(&b);
    wd_model_destroy(m);
    return 0;
}

static const cfg C_CRITEO = {"criteo-shaped, 2 crosses, sum", CRITEO, WD_ADAGRAD, 1, WD_POOL_SUM, 1, 0, 0, 0, 0, 0};
static const cfg C_ZIPF = {"zipf ids (hot runs), 2 crosses", ZIPF, WD_ADAM, 1, WD_POOL_SUM, 1, 0, 0, 0, 0, 0};
static const cfg C_MH_MEAN = {"multi-hot, mean pooling, 2 crosses", MH, WD_ADAGRAD, 1, WD_POOL_MEAN, 1, 0, 0, 0, 0, 0};
static const cfg C_MH_SUM = {"multi-hot, sum pooling", MH, WD_ADAM, 1, WD_POOL_SUM, 0, 0, 0, 0, 0, 0};
static const cfg C_NO_WIDE = {"criteo-shaped, no_wide", CRITEO, WD_ADAM, 1, WD_POOL_SUM, 0, 1, 0, 0, 0, 0};
static const cfg C_NO_DEEP = {"criteo-shaped, no_deep, 2 crosses", CRITEO, WD_ADAGRAD, 1, WD_POOL_SUM, 1, 0, 1, 0, 0, 0};
// hidden 63, 31: on the device layer 1's W starts at a 4-byte boundary (its
// bf16 copy at a 2-byte one: test_gradients_bf16) and layer 2's bias at an
// 8-byte one, so the GEMM plans ask cuBLASLt for 4-byte (2-byte) aligned
// operands, try the fused epilogue and fall back to wdc_bias_act_k
static const cfg C_ODD = {"criteo-shaped, hidden 63-31 (unaligned)", CRITEO, WD_ADAGRAD, 1, WD_POOL_SUM, 1, 0, 0, 63, 31, 0};
// no slots and no crosses: no sparse occurrences at all (empty launches and sorts)
static const cfg C_DENSE = {"dense only (no slots, no crosses)", DENSE, WD_ADAGRAD, 1, WD_POOL_SUM, 0, 0, 0, 0, 0, 0};
// E = 6: the embedding columns are not in quads (the overlapped gather's column-a-lane path)
static const cfg C_E6 = {"criteo-shaped, E=6, 2 crosses", CRITEO, WD_ADAGRAD, 1, WD_POOL_SUM, 1, 0, 0, 0, 0, 6};

// runs of 128, 129, 767, 1025, 2148 and 3072 rows, a thousand of 1 or 2 (write_hot); FTRL on the wide part of both
static const cfg C_HOT_ADAGRAD = {"hot runs, adagrad, sum, 2 crosses", HOT, WD_ADAGRAD, 1, WD_POOL_SUM, 1, 0, 0, 0, 0, 0};
static const cfg C_HOT_ADAM = {"hot runs, adam, mean", HOT, WD_ADAM, 1, WD_POOL_MEAN, 0, 0, 0, 0, 0, 0};

#define SCREEN_FP32 1e-4
#define SCREEN_TF32 5e-3
#define SCREEN_BF16 1e-3
#define TOL_FP32 1e-4
#define TOL_TF32 0.25
#define TOL_BF16 1e-3

static void test_gradients_fp32(void) {
    const cfg *cs[7] = {&C_CRITEO, &C_ZIPF, &C_MH_MEAN, &C_NO_WIDE, &C_NO_DEEP, &C_ODD, &C_DENSE};
    for (int i = 0; i < 7; i++) gradients_case(cs[i], M_FP32, TOL_FP32, SCREEN_FP32);
}
static void test_gradients_tf32(void) {
    const cfg *cs[4] = {&C_CRITEO, &C_MH_SUM, &C_ZIPF, &C_ODD};
    for (int i = 0; i < 4; i++) gradients_case(cs[i], M_TF32, TOL_TF32, SCREEN_TF32);
}
static wd_model *steps_case(const cfg *c, int steps, int fp32, double tol, double delta);
// Precision bf16 against the reference rounding as the library does, with
// the ReLU-mask epilogues (the default: each hidden output written in fp32
// and rounded after), with them writing bf16 themselves
// (cuda.bf16_direct: fp32 biases with a bf16 output, a combination
// cuBLASLt does not document; the engine line printed says which layers got
// it, "+r" where cuBLASLt refused it and the rounded offer ran), and without
// them (cuda.no_epilogue: the separate kernels, each layer's product
// rounded by relu_grad or bias_act).
static void test_gradients_bf16(void) {
    const cfg *cs[4] = {&C_CRITEO, &C_MH_MEAN, &C_ZIPF, &C_ODD};
    static const int variant[3][2] = {{1, 0}, {1, 1}, {0, 0}};   // epilogues on, cuda.bf16_direct
    for (int k = 0; k < 3; k++) {
        if (ON_CPU && variant[k][1]) continue;   // the CPU has no such switch
        set_epilogue(variant[k][0]);
        CUDA.bf16_direct = variant[k][1];
        printf("  epilogues %s, bf16_direct %d\n", variant[k][0] ? "on" : "off", variant[k][1]);
        bf16_ctl[0] = bf16_ctl[1] = 0;
        for (int i = 0; i < 4; i++)
            if (gradients_case(cs[i], M_BF16, TOL_BF16, SCREEN_BF16) < 0) { SKIP("precision bf16 is not available on this CPU: %.180s", wd_last_error()); return; }
        // the tolerance tells each rounding site: without either, some model fails it
        printf("  the reference without the dz rounding: worst %.3g of the tolerance; without the activations': %.3g (both must fail)\n", bf16_ctl[0], bf16_ctl[1]);
        CHECK(bf16_ctl[0] > 1.0 && bf16_ctl[1] > 1.0);
    }
}
// The separate kernels (cuda.no_epilogue) against the reference in FP32,
// as test_gradients_fp32 does with the epilogues (the default); the report
// names what ran: mlp= per layer, no RELU_AUX_BIAS or DRELU_BGRAD without
// them (cuda.no_epilogue turns off the ReLU-mask epilogues only, as the
// backend's header and README say: the forward products still fuse their
// bias and ReLU, RELU_BIAS or BIAS, "fused"; the backward ones run
// relu_grad and the column sums, "kernel"), and with them every product of the criteo-shaped model (three layers,
// 64-32-1, 16-byte aligned biases: layer 0 has no ReLU below it, the top no
// ReLU of its own) fused where cuBLASLt documents the epilogue, at TF32 and
// at bf16 (the hidden outputs in fp32, rounded after: "+r"); at bf16 with
// cuda.bf16_direct the line is printed, not checked (whether cuBLASLt
// takes an fp32 bias with a bf16 output is what a GPU run finds out:
// bench/GPU_RUN.md).
static void test_epilogue_off(void) {
    set_epilogue(0);
    const cfg *cs[3] = {&C_CRITEO, &C_MH_MEAN, &C_ODD};
    for (int i = 0; i < 3; i++) gradients_case(cs[i], M_FP32, TOL_FP32, SCREEN_FP32);
    wd_model_destroy(steps_case(&C_CRITEO, QUICK ? 2 : 4, M_FP32, TOL_FP32, SCREEN_FP32));
    static const struct { int mode, epi, direct; const char *mlp; } v[4] = {
        {M_TF32, 0, 0, "fused/-,fused/kernel,fused/kernel"},
        {M_TF32, 1, 0, "aux/-,aux/fused,fused/fused"},
        {M_BF16, 1, 0, "aux+r/-,aux+r/fused+r,fused/fused+r"},
        {M_BF16, 1, 1, NULL}};
    for (int k = 0; k < 4; k++) {
        set_epilogue(v[k].epi);
        set_fp32(v[k].mode);   // TF32, not the FP32 gradients_case left set
        CUDA.bf16_direct = v[k].direct;
        wd_schema sc;
        wd_model *m = cfg_model_mode(&C_CRITEO, &sc, v[k].mode);
        wd_backend *be = NULL;
        wd_status st = m ? backend_open(m, NB, &be) : WD_ERR_INTERNAL;
        char what[300] = "";
        if (!st) { TEST_BACKEND()->describe(be, what, sizeof what); TEST_BACKEND()->destroy(be); }
        printf("  %s, epilogues %s, bf16_direct %d: %s\n", mode_name(v[k].mode), v[k].epi ? "on" : "off", v[k].direct,
               st ? wd_last_error() : what);
        wd_model_destroy(m);
        if (ON_CPU) continue;   // the CPU's bf16 may be refused (no AVX512-BF16), and its line has no mlp=
        CHECK_OK(st);
        CHECK(field_is(what, "precision", mode_name(v[k].mode)) && field_is(what, "epilogue", v[k].epi ? "on" : "off"));
        if (v[k].mlp) CHECK(field_is(what, "mlp", v[k].mlp));
    }
}

// `steps` steps of batches 0.. of c's data through the CUDA backend (two in
// flight, as wd_train runs it) and the reference; every parameter and state
// array compared at the end, every step's loss on the way. Returns the model.
static wd_model *steps_case(const cfg *c, int steps, int fp32, double tol, double delta) {
    wd_schema s;
    wd_model *m = cfg_model_mode(c, &s, fp32);
    if (!m) { tl_fails++; return NULL; }
    wd_model_view v;
    wd_model_view_get(m, &v);
    ref_model r;
    char why[400];
    if (ref_from_view(&r, &v, why, sizeof why) != 0) { printf("  ref_from_view: %s\n", why); tl_fails++; wd_model_destroy(m); return NULL; }
    set_fp32(fp32);
    const wd_backend_ops *ops = TEST_BACKEND();
    wd_backend *be = NULL;
    wd_status st = backend_open(m, NB, &be);
    CHECK_OK(st);
    wd_batch b[2];
    memset(b, 0, sizeof b);
    double ref_loss[64], worst_loss = 0;
    int zeroed = 0, inflight = 0, done = 0;
    for (int t = 0; !st && t < steps && t < 64; t++) {
        wd_batch *bt = &b[t % 2];
        wd_batch_free(bt);
        st = read_batch(c->data, t, bt);
        CHECK_OK(st);
        if (st) break;
        zeroed += screen(&r, bt, delta);
        if (ref_step(&r, bt, &ref_loss[t]) != 0) { printf("  ref_step failed\n"); tl_fails++; st = WD_ERR_INTERNAL; break; }
        st = ops->submit(be, bt, 0);
        CHECK_OK(st);
        if (!st) inflight++;
        while (!st && inflight > 1) {
            wd_step_result res;
            st = ops->complete(be, &res);
            CHECK_OK(st);
            inflight--;
            if (!st) {   // res is not filled in by a failed step
                double l = res.loss / res.weight, e = fabs(l - ref_loss[done]) / (tol * 0.1 * fabs(ref_loss[done]));
                if (!(e <= worst_loss)) worst_loss = e;
            }
            done++;
        }
    }
    while (inflight > 0) {
        wd_step_result res;
        wd_status s2 = ops->complete(be, &res);
        CHECK_OK(s2);
        inflight--;
        if (!s2) {
            double l = res.loss / res.weight, e = fabs(l - ref_loss[done]) / (tol * 0.1 * fabs(ref_loss[done]));
            if (!(e <= worst_loss)) worst_loss = e;
        }
        done++;
    }
    if (be) { CHECK_OK(ops->download(be)); ops->destroy(be); }
    CHECK(done == steps);
    ref_report rep;
    ref_compare_view(&r, &v, tol, tol, &rep);
    char what[160];
    snprintf(what, sizeof what, "%s, %s, %d steps (%d screened)", c->name, mode_name(fp32), steps, zeroed);
    print_report(what, &rep, 1.0);
    printf("  %-44s every step's loss within %.2g of its tolerance\n", "", worst_loss);
    CHECK(rep.overall <= 1.0);
    CHECK(worst_loss <= 1.0);
    wd_batch_free(&b[0]); wd_batch_free(&b[1]);
    ref_free(&r);
    return m;
}
static void test_steps_fp32(void) {
    cfg adam_criteo = C_CRITEO;
    adam_criteo.optimizer = WD_ADAM;
    adam_criteo.name = "criteo-shaped adam, 2 crosses";
    const cfg *cs[9] = {&C_CRITEO, &adam_criteo, &C_ZIPF, &C_MH_MEAN, &C_MH_SUM, &C_NO_WIDE, &C_NO_DEEP, &C_ODD, &C_DENSE};
    int steps = QUICK ? 2 : 4;
    for (int i = 0; i < 9; i++) wd_model_destroy(steps_case(cs[i], steps, 1, TOL_FP32, SCREEN_FP32));
}
static void test_steps_tf32(void) {
    const cfg *cs[2] = {&C_CRITEO, &C_MH_MEAN};
    for (int i = 0; i < 2; i++) wd_model_destroy(steps_case(cs[i], QUICK ? 2 : 4, 0, TOL_TF32, SCREEN_TF32));
}
// Precision bf16, several steps: every parameter and optimizer state array
// against the reference rounding as the library does, epilogues on and off.
static void test_steps_bf16(void) {
    if (ON_CPU) { SKIP("the CPU's bf16 steps are test_gradients_bf16's and test_engine's"); return; }
    const cfg *cs[2] = {&C_CRITEO, &C_MH_MEAN};
    for (int epi = 1; epi >= 0; epi--) {
        set_epilogue(epi);
        for (int i = 0; i < 2; i++) wd_model_destroy(steps_case(cs[i], QUICK ? 2 : 4, M_BF16, TOL_BF16, SCREEN_BF16));
    }
}

// The two sparse paths (cuda.sparse segmented and fused) on runs of every
// length the kernels treat differently (write_hot) and on Zipf ids, with
// Adagrad and Adam on the embeddings and FTRL on the wide part: one step's
// gradients and the touched rows (exactly), then several steps' parameters
// and optimizer states against the reference; each path twice, bit for bit
// the same; the two paths within 1e-4 (relative L2) of each other. The backend
// says which path it ran (a misspelt switch: test_settings).
static void test_sparse_paths(void) {
    static const char *path[2] = {"segmented", "fused"};
    const cfg *cs[3] = {&C_HOT_ADAGRAD, &C_HOT_ADAM, &C_ZIPF};
    int steps = QUICK ? 2 : 4;
    for (int i = 0; i < 3; i++) {
        wd_model *got[2] = {NULL, NULL};
        for (int p = 0; p < 2; p++) {
            CUDA.sparse = p ? WD_CUDA_SPARSE_FUSED : WD_CUDA_SPARSE_SEGMENTED;
            printf("  sparse %s\n", path[p]);
            if (!ON_CPU) {   // the switch reaches the backend (its description names the path)
                wd_schema s;
                wd_model *m = cfg_model(cs[i], &s);
                REQUIRE(m);
                wd_backend *be = NULL;
                REQUIRE_OK(backend_open(m, NB, &be));
                char what[300], want[40];
                TEST_BACKEND()->describe(be, what, sizeof what);
                TEST_BACKEND()->destroy(be);
                snprintf(want, sizeof want, "sparse=%s", path[p]);
                CHECK(strstr(what, want) != NULL);
                wd_model_destroy(m);
            }
            if (i < 2) gradients_case(cs[i], 1, TOL_FP32, SCREEN_FP32);
            wd_model *a = steps_case(cs[i], steps, 1, TOL_FP32, SCREEN_FP32), *b = steps_case(cs[i], steps, 1, TOL_FP32, SCREEN_FP32);
            REQUIRE(a && b);
            int64_t differ = -1;
            models_rel_l2(a, b, &differ, "run 1 vs run 2");
            CHECK(differ == 0);
            wd_model_destroy(b);
            got[p] = a;
            // the fused kernels' grid-stride loops (GPU only): their grids capped at 1 and 2 blocks
            // (cuda.fused_grid, tests only) against the resident grid, bit for bit. At 1 block
            // (8 warps) every loop takes several passes; the first batch's slots alone (crosses
            // add more) hold, in HOT, 998 runs, 5 hot runs (> WDC_HOT), 10 chunks (hot runs of
            // 2 and 3 chunks merged), in ZIPF 449 runs, 52 hot runs, 52 chunks: wdc_fused_rows_k
            // takes 57 passes or more, wdc_hot_chunk_k 10 and 52, wdc_hot_merge_k 7 (ZIPF).
            // A run or chunk a pass leaves out or takes twice changes the model.
            for (int g = 1; p == 1 && !ON_CPU && g <= 2; g++) {
                char want[48], what[300];
                wd_schema s;
                wd_model *m = cfg_model(cs[i], &s);
                REQUIRE(m);
                CUDA.fused_grid = g;
                wd_backend *be = NULL;
                REQUIRE_OK(backend_open(m, NB, &be));
                TEST_BACKEND()->describe(be, what, sizeof what);
                TEST_BACKEND()->destroy(be);
                wd_model_destroy(m);
                snprintf(want, sizeof want, "fused_grid=%d,%d,%d", g, g, g);
                printf("  fused_grid %d: %s\n", g, what);
                CHECK(strstr(what, want) != NULL);   // the cap reached the kernels' grids
                wd_model *c = steps_case(cs[i], steps, 1, TOL_FP32, SCREEN_FP32);
                CUDA.fused_grid = 0;
                REQUIRE(c);
                int64_t gd = -1;
                models_rel_l2(c, a, &gd, g == 1 ? "grid 1 vs resident" : "grid 2 vs resident");
                CHECK(gd == 0);
                wd_model_destroy(c);
            }
        }
        int64_t differ;
        CHECK(models_rel_l2(got[1], got[0], &differ, "fused vs segmented") <= 1e-4);   // other summation orders, as N ranks vs 1
        wd_model_destroy(got[0]); wd_model_destroy(got[1]);
    }
}

// The CUDA graph replays exactly what the stream runs, bit for bit; the
// timed stream (cuda.timing: no graph, no overlap, event marks between
// the stages) too, and it fills the device stages of the report; on each
// sparse path (cuda.sparse fused on hot runs: runs of a warp, of a block's
// chunks, several chunks merged).
static void test_graph_matches_stream(void) {
    int steps = QUICK ? 2 : 4;
    static const char *path[2] = {"segmented", "fused"};
    for (int p = 0; p < 2; p++) {   // each sparse path (cuda.sparse), fused on hot runs longer than a chunk
        const cfg *c = p ? &C_HOT_ADAGRAD : &C_MH_MEAN;
        CUDA.sparse = p;
        printf("  sparse %s\n", path[p]);
        wd_model *g = steps_case(c, steps, 0, TOL_TF32, SCREEN_TF32);
        CUDA.no_graph = 1;
        wd_model *s = steps_case(c, steps, 0, TOL_TF32, SCREEN_TF32);
        CUDA.timing = 1;
        wd_model *t = steps_case(c, steps, 0, TOL_TF32, SCREEN_TF32);
        CUDA.timing = CUDA.no_graph = 0;
        REQUIRE(g && s && t);
        int64_t d1, d2;
        CHECK(models_rel_l2(g, s, &d1, "graph vs stream") <= 1e-6 && d1 == 0);
        CHECK(models_rel_l2(s, t, &d2, "stream vs timed stream") <= 1e-6 && d2 == 0);
        wd_model_destroy(g); wd_model_destroy(s); wd_model_destroy(t);
    }
    // the stage breakdown of a timed wd_train, each sparse path
    for (int p = 0; p < 2; p++) {
        CUDA.sparse = p;
        wd_schema sc;
        wd_model *m = cfg_model(&C_CRITEO, &sc);
        REQUIRE(m);
        const char *files[1] = {CRITEO};
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.files = files; td.nfiles = 1; td.batch_size = NB; td.max_steps = 6; td.device = TEST_DEVICE; td.loader_threads = 2;
        td.cuda = CUDA;
        td.cuda.timing = 1;
        wd_train_report rep;
        CHECK_OK(wd_train(m, &td, &rep));
        printf("  timed wd_train, sparse %s: %s; ms per step:", path[p], rep.engine);
        for (int i = 0; i < WD_STAGE_COUNT; i++) printf(" %s %.3f", wd_stage_name(i), rep.steps ? 1e3 * rep.stage_s[i] / (double)rep.steps : 0.0);
        printf("\n");
        char want[40];
        snprintf(want, sizeof want, "sparse=%s", path[p]);
        // the engine's device_ms: the steps after the first 4, each within the loop's time
        const char *dm = strstr(rep.engine, "device_ms=");
        double dms = dm ? atof(dm + 10) : -1;
        CHECK(ON_CPU || (dms > 0 && 2 * dms * 1e-3 <= rep.train_s));
        CHECK(rep.steps == 6 && rep.stage_s[WD_STAGE_EMBED] > 0 && rep.stage_s[WD_STAGE_MLP_FWD] > 0 && rep.stage_s[WD_STAGE_MLP_BWD] > 0 &&
              rep.stage_s[WD_STAGE_SORT] > 0 && rep.stage_s[WD_STAGE_ROWS] > 0 && rep.stage_s[WD_STAGE_OPTIMIZER] > 0 &&
              (ON_CPU || (strstr(rep.engine, "graph=off") && strstr(rep.engine, "overlap=off") && strstr(rep.engine, want))));
        wd_model_destroy(m);
    }
}

// Overlap on (the default: the sort on a forked branch of the step,
// beside the MLP; the gather and the wide logit in one kernel) schedules the
// same arithmetic as cuda.no_overlap (one stream, the wide logit in the
// loss kernel): trained models and predictions equal bit for bit, with the
// graph and without it (the fork and join on real streams), on every kind of
// model: D = 13 and E = 8 (the gather's quads of embedding columns, passed
// between lanes to stores at any column; crosses), D = 4 (multi-hot, mean
// pooling), E = 6 (a column a lane), no deep part (the wide logit alone), no
// wide part (the gather alone), no slots (an empty sort), precision bf16
// (both gathers write the rounded x16 alone; GPU only), and hot runs
// through cuda.sparse fused (its rows read the joined sort). The
// overlapped runs delay the sort's branch by 2 ms
// (cuda.overlap_delay_us): a reader of its buffers that is not behind the
// join then reads them before they are written, every time, and the models
// differ. The engine line says which ran (overlap=on, overlap=off).
static void overlap_pair(const cfg *c, int steps, const char *how, int predict, int mode) {
    double tol = mode == M_BF16 ? TOL_BF16 : TOL_FP32, screen = mode == M_BF16 ? SCREEN_BF16 : SCREEN_FP32;
    for (int o = 1; !ON_CPU && o >= 0; o--) {
        CUDA.no_overlap = !o;
        wd_schema s;
        wd_model *m = cfg_model(c, &s);
        wd_backend *be = NULL;
        wd_status st = m ? backend_open(m, NB, &be) : WD_ERR_INTERNAL;
        char what[300] = "";
        if (!st) { TEST_BACKEND()->describe(be, what, sizeof what); TEST_BACKEND()->destroy(be); }
        CHECK_OK(st);
        CHECK(field_is(what, "overlap", o ? "on" : "off"));
        if (CUDA.side_priority) CHECK((strstr(what, " side=high") != NULL) == (o == 1));   // it took (overlap on only)
        wd_model_destroy(m);
    }
    CUDA.no_overlap = 0;
    CUDA.overlap_delay_us = 2000;
    wd_model *on = steps_case(c, steps, mode, tol, screen);
    CUDA.overlap_delay_us = 0;
    CUDA.no_overlap = 1;
    wd_model *off = steps_case(c, steps, mode, tol, screen);
    CUDA.no_overlap = 0;
    REQUIRE(on && off);
    char what[160];
    snprintf(what, sizeof what, "%s: overlap vs serial, %s", c->name, how);
    int64_t differ = -1;
    models_rel_l2(on, off, &differ, what);
    CHECK(differ == 0);
    if (predict) {   // the same trained model predicts the same with either path
        wd_batch b;
        memset(&b, 0, sizeof b);
        REQUIRE_OK(read_batch(c->data, 3, &b));
        float *p[2];
        p[0] = (float *)malloc(sizeof(float) * NB); p[1] = (float *)malloc(sizeof(float) * NB);
        REQUIRE(p[0] && p[1]);
        for (int o = 0; o < 2; o++) {
            CUDA.no_overlap = o;
            wd_backend *be;
            REQUIRE_OK(backend_open(on, NB, &be));
            CHECK_OK(TEST_BACKEND()->predict(be, &b, p[o]));
            TEST_BACKEND()->destroy(be);
        }
        CUDA.no_overlap = 0;
        int64_t pd = 0;
        for (int k = 0; k < b.n; k++) pd += memcmp(&p[0][k], &p[1][k], sizeof(float)) != 0;
        printf("  %-44s predictions of %d samples: %lld differ\n", "", b.n, (long long)pd);
        CHECK(pd == 0);
        free(p[0]); free(p[1]);
        wd_batch_free(&b);
    }
    wd_model_destroy(on); wd_model_destroy(off);
}
static void test_overlap_matches_serial(void) {
    const cfg *cs[6] = {&C_CRITEO, &C_MH_MEAN, &C_NO_DEEP, &C_E6, &C_NO_WIDE, &C_DENSE};
    int steps = QUICK ? 2 : 3;
    for (int i = 0; i < 6; i++) overlap_pair(cs[i], steps, "graph on", i < 4, M_FP32);
    if (!ON_CPU) overlap_pair(&C_CRITEO, steps, "graph on, precision bf16 (x16 from the gather)", 1, M_BF16);   // the CPU's bf16 may be refused
    CUDA.sparse = WD_CUDA_SPARSE_FUSED;
    overlap_pair(&C_HOT_ADAGRAD, steps, "graph on, sparse fused", 0, M_FP32);
    CUDA.sparse = WD_CUDA_SPARSE_SEGMENTED;
    CUDA.no_graph = 1;
    for (int i = 0; i < 2; i++) overlap_pair(cs[i], steps, "graph off", 0, M_FP32);
    if (!ON_CPU) {   // the side branch's stream at the greatest priority: scheduling only, the same bits; the
        // graph is instantiated with its nodes' priorities (cudaGraphInstantiateFlagUseNodePriority), and
        // without a graph the streams' own priorities schedule
        CUDA.side_priority = 1;
        for (int g = 1; g >= 0; g--) {
            CUDA.no_graph = !g;
            overlap_pair(&C_CRITEO, steps, g ? "graph on, side_priority" : "graph off, side_priority", 0, M_FP32);
        }
    }
}

// Predictions on the device (the backend's predict, full and partial
// batches, one-hot and multi-hot) against the reference's, and wd_evaluate
// on the GPU against wd_evaluate on the CPU.
static void test_predict_and_evaluate(void) {
    const cfg *cs[2] = {&C_CRITEO, &C_MH_MEAN};
    const double atol[2] = {2e-5, 2e-3};   // fp32, tf32
    for (int i = 0; i < 2; i++)
        for (int fp32 = 1; fp32 >= 0; fp32--) {
            wd_model *m = steps_case(cs[i], 2, fp32, fp32 ? TOL_FP32 : TOL_TF32, fp32 ? SCREEN_FP32 : SCREEN_TF32);   // a trained model
            REQUIRE(m);
            wd_model_view v;
            wd_model_view_get(m, &v);
            ref_model r;
            char why[400];
            REQUIRE(ref_from_view(&r, &v, why, sizeof why) == 0);
            wd_batch b, part;
            memset(&b, 0, sizeof b);
            memset(&part, 0, sizeof part);
            REQUIRE_OK(read_batch(cs[i]->data, 3, &b));
            // a batch of 100 samples laid out for 100 (the backend copies it array by array)
            REQUIRE_OK(wd_batch_init(&part, v.schema, 100, 100 * 10));
            wd_batch head = b;
            head.n = 100;
            REQUIRE(batch_append(&part, &head) == 0);
            set_fp32(fp32);
            wd_backend *be;
            REQUIRE_OK(backend_open(m, NB, &be));
            float *p = (float *)malloc(sizeof(float) * NB);
            double *want = (double *)malloc(sizeof(double) * NB), worst = 0, worst_part = 0;
            REQUIRE(p && want);
            CHECK_OK(TEST_BACKEND()->predict(be, &b, p));
            REQUIRE(ref_predict(&r, &b, want) == 0);
            for (int k = 0; k < b.n; k++) { double e = fabs(p[k] - want[k]); if (!(e <= worst)) worst = e; }
            for (int k = 0; k < NB; k++) p[k] = -1.0f;
            CHECK_OK(TEST_BACKEND()->predict(be, &part, p));
            for (int k = 0; k < 100; k++) { double e = fabs(p[k] - want[k]); if (!(e <= worst_part)) worst_part = e; }
            CHECK(p[100] == -1.0f);   // nothing written past the batch
            TEST_BACKEND()->destroy(be);
            printf("  predict %-34s %s: worst |p - ref| %.3g (full batch), %.3g (100 samples); tolerance %.0e\n", cs[i]->name, fp32 ? "fp32" : "tf32",
                   worst, worst_part, atol[!fp32]);
            CHECK(worst <= atol[!fp32] && worst_part <= atol[!fp32]);
            // wd_evaluate on the GPU and on the CPU
            const char *files[1] = {cs[i]->data};
            wd_eval_desc e;
            memset(&e, 0, sizeof e);
            e.files = files; e.nfiles = 1; e.batch_size = NB; e.threads = 2; e.cuda = CUDA;
            int64_t total = 0;
            {
                wd_reader *rd;
                REQUIRE_OK(wd_reader_open(files[0], &rd));
                total = wd_reader_nsamples(rd);
                wd_reader_close(rd);
            }
            float *pg = (float *)malloc(sizeof(float) * (size_t)total), *pc = (float *)malloc(sizeof(float) * (size_t)total);
            REQUIRE(pg && pc);
            e.predictions_cap = total;
            wd_metrics mg, mc;
            e.device = TEST_DEVICE; e.predictions = pg;
            CHECK_OK(wd_evaluate(m, &e, &mg));
            e.device = WD_DEVICE_CPU; e.predictions = pc;
            CHECK_OK(wd_evaluate(m, &e, &mc));
            double we = 0;
            for (int64_t k = 0; k < total; k++) { double d = fabs(pg[k] - pc[k]); if (!(d <= we)) we = d; }
            printf("  evaluate %-33s %s: AUC gpu %.6f cpu %.6f, log loss %.6f / %.6f, worst |p_gpu - p_cpu| %.3g\n", cs[i]->name, fp32 ? "fp32" : "tf32",
                   mg.auc, mc.auc, mg.logloss, mc.logloss, we);
            CHECK(mg.samples == total && mc.samples == total && we <= atol[!fp32] && fabs(mg.auc - mc.auc) <= (fp32 ? 1e-4 : 5e-3));
            free(pg); free(pc); free(p); free(want);
            wd_batch_free(&b); wd_batch_free(&part);
            ref_free(&r);
            wd_model_destroy(m);
        }
}

// ---- wd_train on the GPU --------------------------------------------------------------------------
static wd_train_desc train_desc(const char **files, int batch) {
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = batch; td.threads = 2; td.loader_threads = 2;
    td.device = TEST_DEVICE; td.cuda = CUDA;
    return td;
}

// The settings reach the backend through the desc (wd_train_desc.cuda: the
// engine line says what ran), an environment override replaces the desc's
// value (widedeep.h's table: the benchmarks' switches), and a value wd_train
// or wd_evaluate cannot take is refused before anything runs, naming the
// field (a desc's) or the variable and its value (an override's).
static void test_settings(void) {
    if (ON_CPU) { SKIP("the CPU device reads no CUDA setting"); return; }
    const char *files[1] = {CRITEO};
    wd_schema s;
    for (int env = 0; env < 2; env++) {   // the desc alone; then overrides of each field it set
        wd_model *m = cfg_model(&C_CRITEO, &s);
        REQUIRE(m);
        wd_train_desc td = train_desc(files, BLOCK);
        td.max_steps = 1;
        td.cuda.sparse = WD_CUDA_SPARSE_FUSED; td.cuda.fp32 = 1; td.cuda.no_graph = 1;
        if (env) { setenv("WD_CUDA_SPARSE", "segmented", 1); setenv("WD_CUDA_FP32", "0", 1); }
        if (env) setenv("WD_CUDA_GRAPH", "1", 1);
        wd_train_report rep;
        CHECK_OK(wd_train(m, &td, &rep));
        unsetenv("WD_CUDA_SPARSE"); unsetenv("WD_CUDA_FP32"); unsetenv("WD_CUDA_GRAPH");
        printf("  %s: %s\n", env ? "the desc, overridden by the environment" : "the desc", rep.engine);
        CHECK(field_is(rep.engine, "sparse", env ? "segmented" : "fused"));
        CHECK(field_is(rep.engine, "precision", env ? "tf32" : "fp32"));
        CHECK(field_is(rep.engine, "graph", env ? "on" : "off"));
        wd_model_destroy(m);
    }
    wd_model *m = cfg_model(&C_CRITEO, &s);
    REQUIRE(m);
    static const struct { const char *var, *val, *says; } bad_env[] = {
        {"WD_CUDA_SPARSE", "fast", "WD_CUDA_SPARSE=fast"}, {"WD_CUDA_FUSED_GRID", "0", "WD_CUDA_FUSED_GRID=0"},
        {"WD_CUDA_FUSED_GRID", "2x", "WD_CUDA_FUSED_GRID=2x"}};
    for (size_t k = 0; k < sizeof bad_env / sizeof bad_env[0]; k++) {
        wd_train_desc td = train_desc(files, BLOCK);
        setenv(bad_env[k].var, bad_env[k].val, 1);
        wd_status st = wd_train(m, &td, NULL);
        unsetenv(bad_env[k].var);
        printf("  %s=%s: %s: %s\n", bad_env[k].var, bad_env[k].val, wd_status_string(st), wd_last_error());
        CHECK(st == WD_ERR_INVALID_ARG && strstr(wd_last_error(), bad_env[k].says));
    }
    for (int k = 0; k < 5; k++) {   // a desc's value out of range, through wd_train (and wd_evaluate, the last)
        wd_train_desc td = train_desc(files, BLOCK);
        static const char *const field_of[5] = {"sparse", "no_graph", "fused_grid", "exchange_cap", "fp32"};
        char field[64];
        snprintf(field, sizeof field, "wd_cuda_desc.%s", field_of[k]);
        if (k == 0) td.cuda.sparse = 2;
        if (k == 1) td.cuda.no_graph = -1;
        if (k == 2) td.cuda.fused_grid = (1 << 20) + 1;
        if (k == 3) td.cuda.exchange_cap = -64;
        wd_status st;
        if (k < 4) st = wd_train(m, &td, NULL);
        else {
            wd_eval_desc e;
            memset(&e, 0, sizeof e);
            e.files = files; e.nfiles = 1; e.device = TEST_DEVICE; e.cuda.fp32 = 3;
            wd_metrics mt;
            st = wd_evaluate(m, &e, &mt);
        }
        printf("  %s out of range: %s: %s\n", field, wd_status_string(st), wd_last_error());
        CHECK(st == WD_ERR_INVALID_ARG && strstr(wd_last_error(), field));
    }
    int64_t ep, bt, stp;
    wd_model_position(m, &ep, &bt, &stp);
    CHECK(stp == 0);   // nothing ran
    wd_model_destroy(m);
}

// Several epochs with shuffling; a run stopped in the middle of epoch 2
// with a checkpoint and resumed from it ends where the uninterrupted run
// does (same code, same shapes: bitwise expected); the CPU trains the same
// epochs to a validation AUC within 0.02; the checkpoint loads on the CPU
// and predicts what the GPU predicts (within TF32's 2e-3).
static void test_epochs_checkpoint_resume(void) {
    char ck[300];
    snprintf(ck, sizeof ck, "%s/g-resume.wdm", TMP);
    const char *files[1] = {CRITEO}, *valid[1] = {VALID};
    wd_schema s;
    set_fp32(0);   // the default TF32 path
    int64_t per_epoch = 0;
    {
        wd_reader *rd;
        REQUIRE_OK(wd_reader_open(CRITEO, &rd));
        per_epoch = (wd_reader_nsamples(rd) + NB - 1) / NB;
        wd_reader_close(rd);
    }
    int epochs = 3;
    wd_model *a = cfg_model(&C_CRITEO, &s), *b = cfg_model(&C_CRITEO, &s);
    REQUIRE(a && b);
    wd_train_desc td = train_desc(files, NB);
    td.epochs = epochs; td.valid_files = valid; td.nvalid = 1;
    wd_train_report ra, rb, rc;
    CHECK_OK(wd_train(a, &td, &ra));
    printf("  %d epochs: %lld steps, valid AUC %.4f, last loss %.4f, %s\n", epochs, (long long)ra.steps, ra.valid_auc, ra.last_loss, ra.engine);
    CHECK(ra.steps == epochs * per_epoch);
    // stopped mid-epoch 2, saved, loaded, resumed
    wd_train_desc t1 = td;
    t1.max_steps = per_epoch + per_epoch / 2; t1.checkpoint_path = ck; t1.nvalid = 0; t1.valid_files = NULL;
    CHECK_OK(wd_train(b, &t1, &rb));
    CHECK(rb.steps == t1.max_steps);
    wd_model *c = NULL;
    REQUIRE_OK(wd_model_load(ck, &c));
    int64_t ep, bt, stp;
    wd_model_position(c, &ep, &bt, &stp);
    CHECK(ep == 1 && bt == per_epoch / 2 && stp == t1.max_steps);
    CHECK_OK(wd_train(c, &td, &rc));
    CHECK(rc.steps == epochs * per_epoch - t1.max_steps);
    int64_t differ;
    CHECK(models_rel_l2(a, c, &differ, "resumed vs uninterrupted") <= 1e-6);
    printf("  valid AUC uninterrupted %.6f resumed %.6f\n", ra.valid_auc, rc.valid_auc);
    CHECK(fabs(ra.valid_auc - rc.valid_auc) <= 1e-6);
    // the CPU, same epochs
    wd_model *cpu = cfg_model(&C_CRITEO, &s);
    REQUIRE(cpu);
    wd_train_desc tc = td;
    tc.device = WD_DEVICE_CPU;
    wd_train_report rcpu;
    CHECK_OK(wd_train(cpu, &tc, &rcpu));
    printf("  valid AUC after %d epochs: GPU %.4f, CPU %.4f\n", epochs, ra.valid_auc, rcpu.valid_auc);
    CHECK(fabs(ra.valid_auc - rcpu.valid_auc) <= 0.02 && ra.valid_auc > 0.55);
    // the GPU's checkpoint on the CPU: the predictions of the trained model on the GPU (TF32), within 2e-3
    snprintf(ck, sizeof ck, "%s/g-final.wdm", TMP);
    CHECK_OK(wd_model_save(a, ck));
    wd_model *back = NULL;
    REQUIRE_OK(wd_model_load(ck, &back));
    float *p1 = (float *)malloc(sizeof(float) * 8192), *p2 = (float *)malloc(sizeof(float) * 8192);
    REQUIRE(p1 && p2);
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = valid; e.nfiles = 1; e.predictions_cap = 8192; e.threads = 2; e.cuda = CUDA;
    wd_metrics m1, m2;
    e.device = TEST_DEVICE; e.predictions = p1; CHECK_OK(wd_evaluate(a, &e, &m1));
    e.device = WD_DEVICE_CPU; e.predictions = p2; CHECK_OK(wd_evaluate(back, &e, &m2));
    double wp = 0;
    for (int64_t k = 0; k < m1.samples && k < m2.samples; k++) { double d = fabs((double)p1[k] - p2[k]); if (!(d <= wp)) wp = d; }
    printf("  checkpoint on the CPU vs the model on %s: %lld / %lld samples, worst |p_ckpt - p_model| %.3g (tolerance 2e-3)\n", ON_CPU ? "the CPU" : "the GPU",
           (long long)m2.samples, (long long)m1.samples, wp);
    CHECK(m1.samples == m2.samples && m1.samples > 0 && wp <= 2e-3);
    // and training continues on the CPU from the GPU's checkpoint
    tc.epochs = epochs + 1;
    CHECK_OK(wd_train(back, &tc, NULL));
    free(p1); free(p2);
    wd_model_destroy(a); wd_model_destroy(b); wd_model_destroy(c); wd_model_destroy(cpu); wd_model_destroy(back);
}

// Training from the application's data on the device: batches pushed
// through wd_trainer_push train what the same samples from the file train
// (same loop, same shapes: bitwise expected; within 1e-6 as resume is
// checked); a short pushed batch is padded to the device's fixed batch; with
// publish_every the published snapshot (downloaded from the device) predicts
// what the downloaded host model predicts, bit for bit.
static void test_stream_matches_files(void) {
    const char *files[1] = {CRITEO};
    wd_schema s;
    set_fp32(0);
    wd_model *a = cfg_model(&C_CRITEO, &s), *b = cfg_model(&C_CRITEO, &s), *c = NULL;
    REQUIRE(a && b);
    const int steps = 6;
    wd_train_desc td = train_desc(files, NB);
    td.no_shuffle = 1; td.max_steps = steps;
    CHECK_OK(wd_train(a, &td, NULL));
    wd_train_desc tp = train_desc(NULL, NB);
    tp.files = NULL; tp.nfiles = 0; tp.publish_every = 2;
    wd_trainer *t = NULL;
    REQUIRE_OK(wd_trainer_open(b, &tp, &t));
    wd_batch one;
    memset(&one, 0, sizeof one);
    for (int k = 0; k < steps; k++) {
        CHECK_OK(read_batch(CRITEO, k, &one));
        CHECK_OK(wd_trainer_push(t, &one));
        wd_batch_free(&one);
    }
    CHECK_OK(read_batch(CRITEO, steps, &one));
    wd_train_report rep;
    CHECK_OK(wd_trainer_close(t, &rep));
    wd_trainer_free(t);
    int64_t differ = 0;
    CHECK(rep.steps == steps && b->step == steps && b->epoch == 0 && b->batch == 0);
    CHECK(models_rel_l2(a, b, &differ, "pushed vs the file") <= 1e-6);
    // the published model is the downloaded one
    char ck[300];
    snprintf(ck, sizeof ck, "%s/g-stream.wdm", TMP);
    CHECK_OK(wd_model_save(b, ck));
    REQUIRE_OK(wd_model_load(ck, &c));
    float *p1 = (float *)malloc(sizeof(float) * NB), *p2 = (float *)malloc(sizeof(float) * NB);
    REQUIRE(p1 && p2);
    CHECK_OK(wd_predict(b, &one, p1));
    CHECK_OK(wd_predict(c, &one, p2));
    CHECK(memcmp(p1, p2, sizeof(float) * NB) == 0);
    // a short batch: padded to the device's batch, one step
    one.n = NB / 2 + 3;
    t = NULL;
    REQUIRE_OK(wd_trainer_open(c, &tp, &t));
    CHECK_OK(wd_trainer_push(t, &one));
    CHECK_OK(wd_trainer_close(t, &rep));
    wd_trainer_free(t);
    CHECK(rep.steps == 1 && rep.samples == NB / 2 + 3 && c->step == steps + 1);
    free(p1); free(p2);
    wd_batch_free(&one);
    wd_model_destroy(a); wd_model_destroy(b); wd_model_destroy(c);
    unlink(ck);
}

// The premise of the rank test: with blocks of b samples, no shuffling and a
// per-rank batch of b, shard r's batch s is block s N + r, so the N shards'
// batch s together are the one-shard batch s of N b samples, in order.
static int shards_match(const char *path, int N, int steps) {
    wd_loader *one = NULL, *sh[8] = {NULL};
    wd_loader_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.files = &path; ld.nfiles = 1; ld.threads = 1;
    ld.batch_size = N * BLOCK;
    int ok = wd_loader_open(&ld, &one) == WD_OK && wd_loader_reset(one, 0, 0) == WD_OK;
    for (int r = 0; ok && r < N; r++) {
        ld.batch_size = BLOCK; ld.shard_index = r; ld.shard_count = N;
        ok = wd_loader_open(&ld, &sh[r]) == WD_OK && wd_loader_reset(sh[r], 0, 0) == WD_OK;
    }
    for (int s = 0; ok && s < steps; s++) {
        const wd_batch *g, *p;
        ok = wd_loader_next(one, &g) == WD_OK && g && g->n == N * BLOCK;
        for (int r = 0; ok && r < N; r++) {
            ok = wd_loader_next(sh[r], &p) == WD_OK && p && p->n == BLOCK;
            ok = ok && memcmp(p->label, g->label + r * BLOCK, sizeof(float) * BLOCK) == 0 &&
                 memcmp(p->dense, g->dense + (size_t)r * BLOCK * g->ndense, sizeof(float) * BLOCK * (size_t)g->ndense) == 0 &&
                 memcmp(p->ids[0], g->ids[0] + r * BLOCK, sizeof(uint32_t) * BLOCK) == 0;
        }
    }
    wd_loader_close(one);
    for (int r = 0; r < N; r++) wd_loader_close(sh[r]);
    return ok;
}

// N ranks on one GPU (device_ids all 0: the same-GPU communicator) train the
// very samples one rank trains with N times their batch, and end with the
// same model (relative L2 <= 1e-4 per tensor); the replicas are compared
// every step (cuda.check_tables 1: equal checksums or the step fails). The
// Criteo runs validate after their last step: each rank scores its share of
// VALID's blocks, gathered back in file order, which must give the AUC and
// log loss that one rank evaluating the same model gives (within 1e-6: the
// GEMMs see other batch shapes). The hot runs train with cuda.sparse fused
// too (each rank's fused rows are what it packs and exchanges).
static void test_simulated_ranks(void) {
    set_fp32(1);
    CUDA.check_tables = 1;
    static const int same_gpu[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    // the last: sparse fused (the rows each rank packs and exchanges) on hot runs
    const cfg *cs[3] = {&C_CRITEO, &C_MH_MEAN, &C_HOT_ADAGRAD};
    int steps = QUICK ? 3 : 6;
    for (int i = 0; i < 3; i++)
        for (int N = 2; N <= 4; N *= 2) {
            if (i >= 1 && N == 4) continue;
            if (i == 2) CUDA.sparse = WD_CUDA_SPARSE_FUSED;
            const char *files[1] = {cs[i]->data};
            int ok = shards_match(files[0], N, steps);
            printf("  %s: the %d shards' batches are the 1-rank batches: %s\n", cs[i]->name, N, ok ? "yes" : "NO");
            CHECK(ok);
            if (ON_CPU) { SKIP("the CPU device trains as one rank (the shards were checked)"); continue; }
            wd_schema s;
            wd_model *one = cfg_model(cs[i], &s), *many = cfg_model(cs[i], &s);
            REQUIRE(one && many);
            wd_train_desc td = train_desc(files, N * BLOCK);
            td.no_shuffle = 1; td.max_steps = steps;
            wd_train_report r1, rn;
            CHECK_OK(wd_train(one, &td, &r1));
            td.devices = N; td.device_ids = same_gpu;
            const char *valid[1] = {VALID};
            if (i == 0) { td.valid_files = valid; td.nvalid = 1; td.eval_every = steps; }
            double t0 = now_s();
            CHECK_OK(wd_train(many, &td, &rn));
            if (i == 0) {
                wd_eval_desc e;
                memset(&e, 0, sizeof e);
                e.files = valid; e.nfiles = 1; e.threads = 2; e.device = TEST_DEVICE; e.cuda = CUDA;
                wd_metrics one_rank;
                CHECK_OK(wd_evaluate(many, &e, &one_rank));
                printf("  %d ranks validate their shares: AUC %.7f log loss %.7f; one rank: %.7f %.7f\n", N, rn.valid_auc, rn.valid_logloss,
                       one_rank.auc, one_rank.logloss);
                CHECK(fabs(rn.valid_auc - one_rank.auc) <= 1e-6 && fabs(rn.valid_logloss - one_rank.logloss) <= 1e-6);
            }
            char what[120];
            snprintf(what, sizeof what, "%s: %d ranks vs 1, %d steps", cs[i]->name, N, steps);
            int64_t differ;
            CHECK(models_rel_l2(many, one, &differ, what) <= 1e-4);
            printf("  %-44s last loss %.7f vs %.7f; %.1f s; %s\n", "", rn.last_loss, r1.last_loss, now_s() - t0, rn.engine);
            CHECK(rn.steps == steps && r1.steps == steps && rn.samples == r1.samples);
            CHECK(fabs(rn.last_loss - r1.last_loss) <= 1e-5 * fabs(r1.last_loss));
            // the exchange capped at 64 rows per rank (cuda.exchange_cap): steps done again with
            // every rank's whole capacity, the same model bit for bit
            wd_model *capped = cfg_model(cs[i], &s);
            REQUIRE(capped);
            wd_train_report rc;
            td.cuda.exchange_cap = 64;
            CHECK_OK(wd_train(capped, &td, &rc));
            snprintf(what, sizeof what, "%s: %d ranks, cap 64 rows vs default", cs[i]->name, N);
            differ = -1;
            CHECK(models_rel_l2(capped, many, &differ, what) == 0 && differ == 0);
            const char *rd = strstr(rc.engine, "redone="), *rd0 = strstr(rn.engine, "redone=");
            printf("  %-44s %s\n", "", rc.engine);
            CHECK(rd && atoll(rd + 7) >= 1 && rd0);
            wd_model_destroy(capped);
            CHECK(i < 2 || (strstr(rn.engine, "sparse=fused") && strstr(r1.engine, "sparse=fused")));
            wd_model_destroy(one); wd_model_destroy(many);
        }
}

#ifndef WD_TEST_GPU_ON_CPU
// Steps on a direct backend (the batches of c->data), with comm (the
// exchange path) or without; the model downloaded into m; what ran into
// what (NULL: not asked).
static void backend_steps(wd_model *m, const char *data, int steps, wd_comm *comm, char *what = NULL) {
    wd_backend_desc bd;
    memset(&bd, 0, sizeof bd);
    bd.model = m; bd.batch = NB; bd.rank = 0; bd.ranks = 1; bd.device = 0; bd.threads = 2; bd.comm = comm;
    bd.cuda = CUDA;
    const wd_backend_ops *ops = TEST_BACKEND();
    wd_backend *be = NULL;
    REQUIRE_OK(ops->create(&bd, &be));
    wd_batch b;
    memset(&b, 0, sizeof b);
    for (int t = 0; t < steps; t++) {
        wd_batch_free(&b);
        wd_step_result res;
        CHECK_OK(read_batch(data, t, &b));
        CHECK_OK(ops->submit(be, &b, 0));
        CHECK_OK(ops->complete(be, &res));
    }
    CHECK_OK(ops->download(be));
    if (what) ops->describe(be, what, 300);
    ops->destroy(be);
    wd_batch_free(&b);
}
// The exchange's steps done again (describe's "redone=N"), -1 if not said.
static long long redone(const char *what) {
    const char *p = strstr(what, "redone=");
    return p ? atoll(p + 7) : -1;
}
#endif
// A 1-rank NCCL communicator: the host collectives (the allgather with the
// CPU communicator's contract: host views, sizes per rank), then training
// through it, which runs the multi-GPU exchange (allreduce, allgather of the
// merged rows, the second sort): the model must be the 1-rank path's bit
// for bit; and so with a cap of 64 rows (cuda.exchange_cap): the first step's
// rows do not fit, it is done again with the whole capacity (the slow
// path), the cap grows.
static void test_nccl_one_rank(void) {
#ifdef WD_TEST_GPU_ON_CPU
    SKIP("NCCL: GPU only");
#else
    wd_comm *c[1];
    double t0 = now_s();
    REQUIRE_OK(wd_comm_nccl_create_all(1, NULL, c));
    printf("  NCCL communicator made (with its warm-up) in %.2f s\n", now_s() - t0);
    float h[1000], *d = NULL;
    for (int i = 0; i < 1000; i++) h[i] = (float)i;
    CHECK(cudaMalloc((void **)&d, sizeof h) == cudaSuccess);
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK_OK(c[0]->ops->allreduce_sum(c[0], d, 1000));
    const void *views[1];
    size_t sizes[1];
    CHECK_OK(c[0]->ops->allgather(c[0], h, 400, views, sizes));
    CHECK(sizes[0] == 400 && views[0] != (const void *)h && memcmp(views[0], h, 400) == 0);   // host memory, a copy
    CHECK_OK(c[0]->ops->barrier(c[0]));
    cudaFree(d);
    set_fp32(1);
    CUDA.no_graph = 1;   // the exchange path runs without a graph: compare like with like
    int steps = QUICK ? 2 : 4;
    const cfg *cs[3] = {&C_CRITEO, &C_MH_MEAN, &C_HOT_ADAM};
    for (int i = 0; i < 3; i++)
        for (int p = 0; p < 2; p++) {   // both sparse paths: the exchange's first merge is the path's
            CUDA.sparse = p;
            wd_schema s;
            wd_model *one = cfg_model(cs[i], &s), *ex = cfg_model(cs[i], &s), *capped = cfg_model(cs[i], &s);
            REQUIRE(one && ex && capped);
            backend_steps(one, cs[i]->data, steps, NULL);
            char how[300] = "", how_cap[300] = "";
            backend_steps(ex, cs[i]->data, steps, c[0], how);
            char what[160];
            snprintf(what, sizeof what, "%s, %s: 1-rank NCCL exchange vs none", cs[i]->name, p ? "fused" : "segmented");
            int64_t differ = -1;
            CHECK(models_rel_l2(ex, one, &differ, what) == 0 && differ == 0);
            CUDA.exchange_cap = 64;
            backend_steps(capped, cs[i]->data, steps, c[0], how_cap);
            CUDA.exchange_cap = 0;
            printf("  %s\n  %s\n", how, how_cap);
            snprintf(what, sizeof what, "%s, %s: 1-rank NCCL exchange, cap 64 rows, vs none", cs[i]->name, p ? "fused" : "segmented");
            differ = -1;
            CHECK(models_rel_l2(capped, one, &differ, what) == 0 && differ == 0);
            CHECK(redone(how) >= 0 && redone(how_cap) >= 1);
            wd_model_destroy(one); wd_model_destroy(ex); wd_model_destroy(capped);
        }
    t0 = now_s();
    wd_comm_nccl_destroy(c[0]);
    printf("  torn down in %.2f s\n", now_s() - t0);
#endif
}

// Two GPUs through NCCL against one rank (needs two GPUs).
static void test_nccl_two_gpus(void) {
    if (NDEV < 2) { SKIP("%d GPU: NCCL between GPUs needs two", NDEV); return; }
    set_fp32(1);
    CUDA.check_tables = 1;
    const char *files[1] = {CRITEO};
    wd_schema s;
    wd_model *one = cfg_model(&C_CRITEO, &s), *two = cfg_model(&C_CRITEO, &s);
    REQUIRE(one && two);
    wd_train_desc td = train_desc(files, 2 * BLOCK);
    td.no_shuffle = 1; td.max_steps = QUICK ? 3 : 6;
    CHECK_OK(wd_train(one, &td, NULL));
    td.devices = 2;
    wd_train_report rep;
    CHECK_OK(wd_train(two, &td, &rep));
    int64_t differ;
    CHECK(models_rel_l2(two, one, &differ, "2 GPUs (NCCL) vs 1") <= 1e-4);
    printf("  %s\n", rep.engine);
    wd_model_destroy(one); wd_model_destroy(two);
}

// ---- failures ---------------------------------------------------------------------------------------
// A map callback that fails on one block (identified by its first sample):
// the rank whose shard holds it fails; every other rank must stop at once.
// after: if set, the failure waits (on the loader's thread, up to 60 s) until that file exists, so a
// checkpoint the test names is on disk before the failure, however the loader's read-ahead is timed.
typedef struct fail_at { float label, dense[64]; int D; const char *after; } fail_at;
static wd_status failing_map(void *user, wd_batch *b, int worker) {
    (void)worker;
    const fail_at *f = (const fail_at *)user;
    if (b->n > 0 && b->label[0] == f->label && memcmp(b->dense, f->dense, sizeof(float) * (size_t)f->D) == 0) {
        for (int i = 0; f->after && access(f->after, F_OK) != 0 && i < 6000; i++) usleep(10000);
        wd_set_last_error("injected failure of one rank's loader");
        return WD_ERR_PARSE;
    }
    return WD_OK;
}
#ifndef WD_TEST_GPU_ON_CPU
static void *abort_rank(void *p) {
    wd_comm *c = (wd_comm *)p;
    float *d = NULL;
    cudaSetDevice(0);
    cudaMalloc((void **)&d, 64);
    wd_status st = c->rank == 1 ? (c->ops->abort(c, WD_ERR_IO, "injected failure"), WD_ERR_IO) : c->ops->allreduce_sum(c, d, 16);
    cudaFree(d);
    return (void *)(intptr_t)st;
}
#endif
static void test_rank_failure_aborts_all(void) {
#ifdef WD_TEST_GPU_ON_CPU
    SKIP("ranks and the device plan: GPU only");
#else
    // the communicator alone: rank 1 aborts, rank 0's allreduce returns WD_ERR_ABORTED
    {
        wd_comm *c[2];
        REQUIRE_OK(wd_comm_cuda_local_create(2, 0, c));
        pthread_t t[2];
        for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, abort_rank, c[r]);
        void *res[2];
        for (int r = 0; r < 2; r++) pthread_join(t[r], &res[r]);
        CHECK((wd_status)(intptr_t)res[0] == WD_ERR_ABORTED);
        wd_comm_cuda_local_destroy(c, 2);
    }
    // wd_train: rank 1 fails at its first batch (before any collective) or at
    // its third (mid-training); the call returns that error, promptly
    wd_reader *rd;
    REQUIRE_OK(wd_reader_open(CRITEO, &rd));
    static const int same_gpu[4] = {0, 0, 0, 0};
    const char *files[1] = {CRITEO};
    for (int N = 2; N <= 4; N *= 2)
        for (int which = 0; which < 2; which++) {
            int64_t blk = which == 0 ? 1 : 1 + 2 * N;   // rank 1's first or third block
            const wd_batch *b;
            REQUIRE_OK(wd_reader_block(rd, blk, &b));
            fail_at f;
            memset(&f, 0, sizeof f);
            f.D = b->ndense; f.label = b->label[0];
            memcpy(f.dense, b->dense, sizeof(float) * (size_t)f.D);
            wd_schema s;
            wd_model *m = cfg_model(&C_CRITEO, &s);
            REQUIRE(m);
            wd_train_desc td = train_desc(files, N * BLOCK);
            td.no_shuffle = 1; td.max_steps = 8; td.devices = N; td.device_ids = same_gpu;
            td.map = failing_map; td.map_user = &f;
            double t0 = now_s();
            wd_status st = wd_train(m, &td, NULL);
            double dt = now_s() - t0;
            printf("  %d ranks, rank 1 fails at block %lld: %s after %.2f s: %s\n", N, (long long)blk, wd_status_string(st), dt, wd_last_error());
            CHECK(st == WD_ERR_PARSE && strstr(wd_last_error(), "injected") && dt < PROMPT);
            wd_model_destroy(m);
        }
    wd_reader_close(rd);
    // every rank refuses a device too small for its plan, before allocating
    for (int N = 1; N <= 2; N++) {
        wd_schema s;
        wd_model *m = cfg_model(&C_CRITEO, &s);
        REQUIRE(m);
        wd_train_desc td = train_desc(files, N * BLOCK);
        td.max_steps = 1; td.devices = N; td.device_ids = same_gpu; td.cuda.max_bytes = 1000000;
        double t0 = now_s();
        wd_status st = wd_train(m, &td, NULL);
        printf("  %d rank(s), a 1 MB device: %s after %.2f s: %s\n", N, wd_status_string(st), now_s() - t0, wd_last_error());
        CHECK(st == WD_ERR_NOMEM && strstr(wd_last_error(), "plan needs") && now_s() - t0 < PROMPT);
        wd_model_destroy(m);
    }
#endif
}

// Fail fast between the GPUs of one process (NCCL, issue 31): rank 1's
// loader fails at its second block; wd_train ends within PROMPT naming rank 1
// and the reason, and says which checkpoint is on disk (the replicas' step
// in flight was cut off by the abort: not saved); resumed from it, the run
// ends bit-identical to one that never failed.
static void test_nccl_fail_fast(void) {
    if (NDEV < 2) { SKIP("%d GPU: NCCL between GPUs needs two", NDEV); return; }
    set_fp32(1);
    const char *files[1] = {CRITEO};
    wd_reader *rd;
    REQUIRE_OK(wd_reader_open(CRITEO, &rd));
    const wd_batch *b;
    REQUIRE_OK(wd_reader_block(rd, 3, &b));   // rank 1's second block (its blocks: 1, 3, 5)
    fail_at f;
    memset(&f, 0, sizeof f);
    f.D = b->ndense; f.label = b->label[0];
    memcpy(f.dense, b->dense, sizeof(float) * (size_t)f.D);
    wd_reader_close(rd);
    char ck[300];
    snprintf(ck, sizeof ck, "%s/nccl-ff.wdm", TMP);
    unlink(ck);
    wd_schema s;
    wd_model *ref = cfg_model(&C_CRITEO, &s), *m = cfg_model(&C_CRITEO, &s), *back = NULL;
    REQUIRE(ref && m);
    wd_train_desc td = train_desc(files, 2 * BLOCK);
    td.no_shuffle = 1; td.max_steps = 4; td.devices = 2;
    CHECK_OK(wd_train(ref, &td, NULL));
    td.map = failing_map; td.map_user = &f; td.checkpoint_path = ck; td.checkpoint_every = 1;
    f.after = ck;   // the failure comes once rank 0 saved step 1 (under load the read-ahead ran before any step)
    double t0 = now_s();
    wd_status st = wd_train(m, &td, NULL);
    double dt = now_s() - t0;
    printf("  2 GPUs, rank 1's loader fails at step 2: %s after %.2f s: %s\n", wd_status_string(st), dt, wd_last_error());
    CHECK(st == WD_ERR_PARSE && strstr(wd_last_error(), "rank 1 failed (parse error): ") && strstr(wd_last_error(), "injected") &&
          (strstr(wd_last_error(), "holds the checkpoint of step ") || strstr(wd_last_error(), "is saved to")) && dt < PROMPT);
    td.map = NULL; td.checkpoint_path = NULL; td.checkpoint_every = 0;
    CHECK_OK(wd_model_load(ck, &back));
    if (back) {
        CHECK_OK(wd_train(back, &td, NULL));
        int64_t differ = -1;
        CHECK(back->step == 4 && models_rel_l2(back, ref, &differ, "resumed against uninterrupted") == 0 && differ == 0);
    }
    unlink(ck);
    wd_model_destroy(back); wd_model_destroy(m); wd_model_destroy(ref);
}

// The failure tests' ranks of a job: threads, each calling wd_train with its
// rank of a communicator, as processes under mpirun do.
typedef struct vote_rank { wd_model *m; wd_train_desc td; wd_status st; char err[1024]; } vote_rank;
static void *vote_main(void *p) {
    vote_rank *v = (vote_rank *)p;
    v->st = wd_train(v->m, &v->td, NULL);
    snprintf(v->err, sizeof v->err, "%s", v->st ? wd_last_error() : "");
    return NULL;
}
// The failure tests' N ranks' communicators: on the GPU the same-GPU
// communicator (c; in and dc unused); on the CPU harness the CPU's (in; dc
// unused: a failed rank's abort reaches the others, the fail-fast rule),
// with a 30 s timeout
static wd_status vote_comms(int n, wd_comm **c, wd_comm **in, tl_deaf *dc) {
#ifdef WD_TEST_GPU_ON_CPU
    (void)dc;
    wd_status st = wd_comm_local_create(n, 30.0, in);
    for (int p = 0; !st && p < n; p++) c[p] = in[p];
    return st;
#else
    (void)in; (void)dc;
    return wd_comm_cuda_local_create(n, 0, c);
#endif
}
// The failure tests' N ranks: each its own Criteo-shaped model training
// `files` in file order, max_steps steps over its communicator c[p];
// 1 if every model was made
static int vote_ranks(vote_rank *v, int n, const char **files, wd_comm **c, int64_t max_steps) {
    wd_schema s;
    int made = 1;
    for (int p = 0; p < n; p++) {
        memset(&v[p], 0, sizeof v[p]);
        made &= (v[p].m = cfg_model(&C_CRITEO, &s)) != NULL;
        v[p].td = train_desc(files, n * BLOCK);
        v[p].td.no_shuffle = 1; v[p].td.max_steps = max_steps; v[p].td.comm = c[p];
    }
    return made;
}
// Fail fast (issue 31): rank 1 of 3 fails, at its third block's load
// (mid-step), right after its third step's collectives, right before them
// (GPU), or at the end of its backend's creation (set-up). Rank 1 reports
// its own error, ranks 0 and 2 "rank 1 failed (status): reason", all within
// PROMPT. Rank 0 writes a checkpoint every step, and the job resumed from the
// one on disk ends bit-identical to a run that never failed. The same-GPU
// communicator on the GPU, the CPU's shared-memory one on the CPU harness.
static int fail_fast_run(vote_rank *v, const char **files, const char *resume, const char *ck, fail_at *f) {
    enum { N = 3 };
    wd_comm *c[N], *in[N];
    tl_deaf dc[N];
    if (vote_comms(N, c, in, dc)) return 0;
    pthread_t th[N];
    int made = vote_ranks(v, N, files, c, 8);
    for (int p = 0; resume && p < N; p++) {
        wd_model_destroy(v[p].m);
        v[p].m = NULL;
        made &= wd_model_load(resume, &v[p].m) == WD_OK;
    }
    for (int p = 0; f && p < N; p++) { v[p].td.map = failing_map; v[p].td.map_user = f; }
    if (ck) { v[0].td.checkpoint_path = ck; for (int p = 0; p < N; p++) v[p].td.checkpoint_every = 1; }
    for (int p = 0; made && p < N; p++) pthread_create(&th[p], NULL, vote_main, &v[p]);
    for (int p = 0; made && p < N; p++) pthread_join(th[p], NULL);
#ifdef WD_TEST_GPU_ON_CPU
    wd_comm_local_destroy(in, N);
#else
    wd_comm_cuda_local_destroy(c, N);
#endif
    return made;
}
static void test_rank_failure_fails_fast(void) {
    enum { N = 3 };
    wd_reader *rd;
    REQUIRE_OK(wd_reader_open(CRITEO, &rd));
    const wd_batch *b;
    REQUIRE_OK(wd_reader_block(rd, 1 + 2 * N, &b));   // rank 1's third block (its blocks: 1, 1 + N, 1 + 2N)
    fail_at f;
    memset(&f, 0, sizeof f);
    f.D = b->ndense; f.label = b->label[0];
    memcpy(f.dense, b->dense, sizeof(float) * (size_t)f.D);
    wd_reader_close(rd);
    set_fp32(1);
    const char *files[1] = {CRITEO};
    char ck[300], saved[320];
    snprintf(ck, sizeof ck, "%s/ff.wdm", TMP);
    vote_rank ref[N];
    REQUIRE(fail_fast_run(ref, files, NULL, NULL, NULL));
    for (int p = 0; p < N; p++) CHECK(ref[p].st == WD_OK && ref[p].m->step == 8);
    const char *env = ON_CPU ? "WD_CPU_TEST_FAIL" : "WD_CUDA_TEST_FAIL";
    // resume: the step of the checkpoint on disk (-1: none)
    static const struct { const char *name, *fail, *why; wd_status st; int gpu_only, resume; } cs[] = {
        {"mid-step (its loader)", NULL, "injected failure of one rank's loader", WD_ERR_PARSE, 0, 2},
        {"after its step 3's collectives", "1:3", "injected after", WD_ERR_DEVICE, 0, 3},
        {"before its step 3's collectives", "1:3:pre", "injected before", WD_ERR_DEVICE, 1, 2},
        {"at the end of its backend's creation", "1:create", "injected at the end", WD_ERR_DEVICE, 0, -1}};
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        if (ON_CPU && cs[k].gpu_only) continue;
        unlink(ck);
        if (cs[k].fail) setenv(env, cs[k].fail, 1);   // read when each rank's backend is made
        vote_rank v[N];
        double t0 = now_s();
        int made = fail_fast_run(v, files, NULL, ck, cs[k].fail ? NULL : &f);
        double dt = now_s() - t0;
        unsetenv(env);
        CHECK(made);
        printf("  rank 1 fails %s: %.2f s\n", cs[k].name, dt);
        for (int p = 0; p < N; p++) printf("    rank %d: %s (step %lld): %s\n", p, wd_status_string(v[p].st), (long long)(v[p].m ? v[p].m->step : -1), v[p].err);
        CHECK(dt < PROMPT);
        CHECK(v[1].st == cs[k].st && strstr(v[1].err, cs[k].why));
        char want[64];
        snprintf(want, sizeof want, "rank 1 failed (%s): ", wd_status_string(cs[k].st));
        for (int p = 0; p < N; p += 2) CHECK(v[p].st == WD_ERR_ABORTED && strstr(v[p].err, want) && strstr(v[p].err, cs[k].why));
        wd_model *m = NULL;
        int64_t ep, bt, stp = -1;
        if (cs[k].resume >= 0 && wd_model_load(ck, &m) == WD_OK) wd_model_position(m, &ep, &bt, &stp);
        wd_model_destroy(m);
        // the last step rank 0 finished whole (-1: nothing saved); on the GPU a step that ended as the
        // abort came is not trusted (its collectives may have been cut off): maybe one less
        CHECK(stp == cs[k].resume || (!ON_CPU && cs[k].resume > 0 && stp == cs[k].resume - 1));
        snprintf(saved, sizeof saved, "%s", ck);
        for (int p = 0; p < N; p++) wd_model_destroy(v[p].m);
        if (cs[k].resume < 0 || stp < 0) continue;
        vote_rank r[N];   // every rank resumes from rank 0's checkpoint: bit-identical to the run that never failed
        CHECK(fail_fast_run(r, files, saved, NULL, NULL));
        for (int p = 0; p < N; p++) {
            int64_t differ = -1;
            CHECK(r[p].st == WD_OK && r[p].m && r[p].m->step == 8);
            if (r[p].m) CHECK(models_rel_l2(r[p].m, ref[p].m, &differ, "resumed against uninterrupted") == 0 && differ == 0);
            wd_model_destroy(r[p].m);
        }
    }
    unlink(ck);
    for (int p = 0; p < N; p++) wd_model_destroy(ref[p].m);
}

// Teardown with a step in flight whose collective never ends (a peer that
// never comes): the stalled communicator below is a 1-rank device
// communicator whose allreduce enqueues a kernel that spins until the flag is
// set; its poll reports the failure after 0.2 s and sets the flag, as
// ncclCommAbort ends NCCL's kernels. Destroy must poll while it waits for the
// compute stream (and wait for the side stream only after it): it must end
// within 10 s (the test releases the kernel itself after 20 s, so a hang
// fails the test instead of hanging it). No second step can be enqueued
// behind the stalled one (this test used to submit one, whose side branch
// would wait behind the stalled kernel): with a communicator the host reads
// each step's exchange and tail before it enqueues the next (wdc_settle, a
// wait that polls too), so that submit would itself fail once the poll aborts.
#ifndef WD_TEST_GPU_ON_CPU
typedef struct { volatile int *flag, *dflag; int armed; } stall_comm;
#ifdef CUDACPU   // the emulated device (tests/cudacpu): widedeep_cuda.cu's WDC_GO
#define TEST_GO(k, grid, block, stream) CUDACPU_GO(k, grid, block, stream)
#else
#define TEST_GO(k, grid, block, stream) k<<<grid, block, 0, stream>>>
#endif
__global__ static void stall_k(volatile int *flag) { while (*flag == 0) __nanosleep(1000); }
static wd_status stall_allreduce(wd_comm *c, float *buf, size_t n, void *stream) {
    (void)buf; (void)n;
    stall_comm *s = (stall_comm *)c->impl;
    if (s->armed) { TEST_GO(stall_k, 1, 1, (cudaStream_t)stream)(s->dflag); s->armed = 0; }
    return cudaGetLastError() == cudaSuccess ? WD_OK : WD_ERR_DEVICE;
}
static wd_status stall_allgather(wd_comm *c, const void *send, void *recv, size_t bytes, void *stream) {
    (void)c;
    return cudaMemcpyAsync(recv, send, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream) == cudaSuccess ? WD_OK : WD_ERR_DEVICE;
}
static void stall_abort(wd_comm *c, wd_status st, const char *why) { (void)st; (void)why; *((stall_comm *)c->impl)->flag = 1; }
static wd_status stall_poll(wd_comm *c, double waited_s) {
    if (waited_s < 0.2) return WD_OK;
    stall_abort(c, WD_ERR_ABORTED, "timeout");
    return WD_ERR_ABORTED;
}
typedef struct { const wd_backend_ops *ops; wd_backend *be; double took; int done; } destroy_job;
static void *destroy_thread(void *p) {
    destroy_job *j = (destroy_job *)p;
    double t0 = now_s();
    j->ops->destroy(j->be);
    j->took = now_s() - t0;
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
#endif
static void test_teardown_stalled_collective(void) {
#ifdef WD_TEST_GPU_ON_CPU
    SKIP("a device communicator and the side stream: GPU only");
#else
    static const wd_comm_ops ops = {NULL, NULL, NULL, stall_abort, stall_allreduce, stall_allgather, stall_poll};
    int *flag = NULL;
    REQUIRE(cudaHostAlloc((void **)&flag, sizeof(int), cudaHostAllocMapped) == cudaSuccess);
    *flag = 0;
    stall_comm sc = {flag, NULL, 1};
    void *dflag = NULL;
    REQUIRE(cudaHostGetDevicePointer(&dflag, flag, 0) == cudaSuccess);
    sc.dflag = (volatile int *)dflag;
    wd_comm comm = {&ops, 0, 1, &sc};
    wd_schema s;
    wd_model *m = cfg_model(&C_CRITEO, &s);
    wd_batch b[2];
    memset(b, 0, sizeof b);
    int ok = m && !read_batch(C_CRITEO.data, 0, &b[0]) && !read_batch(C_CRITEO.data, 1, &b[1]);
    CHECK(ok);
    wd_backend_desc bd;
    memset(&bd, 0, sizeof bd);   // overlap on: the default
    bd.model = m; bd.batch = NB; bd.rank = 0; bd.ranks = 1; bd.device = 0; bd.threads = 2; bd.comm = &comm;
    destroy_job j = {TEST_BACKEND(), NULL, -1, 0};
    wd_status st = ok ? j.ops->create(&bd, &j.be) : WD_ERR_INTERNAL;
    CHECK_OK(st);
    if (!st) {
        char what[300];
        j.ops->describe(j.be, what, sizeof what);
        printf("  %s\n", what);
        CHECK(strstr(what, "overlap=on") != NULL);
        CHECK_OK(j.ops->submit(j.be, &b[0], 0));   // its allreduce stalls
        pthread_t t;
        pthread_create(&t, NULL, destroy_thread, &j);
        double t0 = now_s();
        while (!__atomic_load_n(&j.done, __ATOMIC_ACQUIRE) && now_s() - t0 < 20) usleep(10000);
        int hung = !__atomic_load_n(&j.done, __ATOMIC_ACQUIRE);
        *flag = 1;   // a hung teardown ends here
        pthread_join(t, NULL);
        printf("  destroy with a step in flight behind a stalled collective: %.2f s%s\n", j.took, hung ? " (hung: released by the test at 20 s)" : "");
        CHECK(!hung && j.took < 12);
    }
    wd_batch_free(&b[0]); wd_batch_free(&b[1]);
    wd_model_destroy(m);
    cudaFreeHost(flag);
#endif
}

// bf16 through wd_train and wd_evaluate reports bf16 (never fp32 in its
// place); a step whose gradient is out of range fails with WD_ERR_NUMERIC,
// changes nothing, and no later step changes anything either.
static void test_failed_steps_change_nothing(void) {
    wd_schema s;
    if (!ON_CPU) {   // the CPU takes bf16 where it has AVX512-BF16 and oneDNN
        REQUIRE_OK(file_schema(CRITEO, &s));
        wd_model_desc d;
        cfg_desc(&C_CRITEO, &s, &d);
        d.precision = WD_PRECISION_BF16;
        wd_model *m;
        REQUIRE_OK(wd_model_create(&d, &m));
        const char *files[1] = {CRITEO};
        wd_train_desc td = train_desc(files, NB);
        td.max_steps = 4;
        wd_train_report rep;
        CHECK_OK(wd_train(m, &td, &rep));
        printf("  bf16 on the GPU: %s, last loss %.5f\n", rep.engine, rep.last_loss);
        CHECK(rep.steps == 4 && strstr(rep.engine, "precision=bf16") && rep.last_loss > 0 && rep.last_loss < 1);
        wd_eval_desc e;
        memset(&e, 0, sizeof e);
        e.files = files; e.nfiles = 1; e.device = WD_DEVICE_CUDA;
        wd_metrics mt;
        CHECK_OK(wd_evaluate(m, &e, &mt));
        CHECK(mt.auc > 0.5 && mt.auc < 1);
        wd_model_destroy(m);
    }
    for (int fp32 = 0; fp32 < 2; fp32++) {
        set_fp32(fp32);
        wd_model *m = cfg_model(&C_CRITEO, &s), *same = cfg_model(&C_CRITEO, &s);
        REQUIRE(m && same);
        wd_batch b;
        memset(&b, 0, sizeof b);
        REQUIRE_OK(read_batch(CRITEO, 0, &b));
        wd_backend *be;
        REQUIRE_OK(backend_open(m, NB, &be));
        const wd_backend_ops *ops = TEST_BACKEND();
        // dense column 7 = 1e30 in every sample: the logits are huge, wrong-sided
        // for some samples (a single sample could land on its label's side,
        // where its gradient is exactly 0), and the wide weight's gradient is
        // far above 1e15
        float *keep = (float *)malloc(sizeof(float) * (size_t)b.n);
        REQUIRE(keep);
        for (int i = 0; i < b.n; i++) { keep[i] = b.dense[(size_t)i * b.ndense + 7]; b.dense[(size_t)i * b.ndense + 7] = 1e30f; }
        wd_step_result res;
        CHECK_OK(ops->submit(be, &b, 0));
        wd_status st = ops->complete(be, &res);
        printf("  %s: a step with dense values of 1e30: %s: %s\n", fp32 ? "fp32" : "tf32", wd_status_string(st), wd_last_error());
        CHECK(st == WD_ERR_NUMERIC);
        for (int i = 0; i < b.n; i++) b.dense[(size_t)i * b.ndense + 7] = keep[i];
        free(keep);
        CHECK_OK(ops->submit(be, &b, 0));
        st = ops->complete(be, &res);
        CHECK(st == WD_ERR_NUMERIC && strstr(wd_last_error(), "earlier step"));
        CHECK_OK(ops->download(be));
        ops->destroy(be);
        int64_t differ;
        CHECK(models_rel_l2(m, same, &differ, "after two refused steps vs untouched") == 0 && differ == 0);
        wd_batch_free(&b);
        wd_model_destroy(m); wd_model_destroy(same);
    }
}

// WD_GPU_TESTS=a,b: only these tests run (the others print SKIP, so that
// tests/run.sh still counts one result per RUN).
static const char *ONLY;
static int selected(const char *fn) {
    if (!ONLY || !*ONLY) return 1;
    const char *bare = strncmp(fn, "test_", 5) == 0 ? fn + 5 : fn;
    for (const char *p = ONLY; *p;) {
        size_t n = strcspn(p, ",");
        if ((strlen(fn) == n && !strncmp(p, fn, n)) || (strlen(bare) == n && !strncmp(p, bare, n))) return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}
// The settings the tests set, put back after every test: CUDA to 0, and the
// environment variables (test_settings's overrides, the failure tests' hooks)
// to what the run started with: a test that returns early (a failed REQUIRE)
// leaves none of its settings to the tests after it.
static const char *const SWITCHES[] = {"WD_CUDA_SPARSE", "WD_CUDA_FP32", "WD_CUDA_GRAPH", "WD_CUDA_FUSED_GRID",
                                       "WD_CHECK_TABLES", "WD_CUDA_TEST_FAIL"};
#define NSWITCHES (int)(sizeof SWITCHES / sizeof SWITCHES[0])
static char *switch0[NSWITCHES];
static void switches_save(void) {
    for (int i = 0; i < NSWITCHES; i++) { const char *v = getenv(SWITCHES[i]); switch0[i] = v ? strdup(v) : NULL; }
}
static void switches_restore(const char *test) {
    memset(&CUDA, 0, sizeof CUDA);
    for (int i = 0; i < NSWITCHES; i++) {
        const char *v = getenv(SWITCHES[i]);
        if (v ? switch0[i] && !strcmp(v, switch0[i]) : !switch0[i]) continue;
        printf("  (%s left %s %s%s: put back)\n", test, SWITCHES[i], v ? "=" : "unset", v ? v : "");
        if (switch0[i]) setenv(SWITCHES[i], switch0[i], 1);
        else unsetenv(SWITCHES[i]);
    }
}
#undef RUN
#define RUN(fn) do { \
        if (!selected(#fn)) { printf("SKIP %s: not in WD_GPU_TESTS\n", #fn); tl_skips++; break; } \
        double t_ = now_s(); \
        TL_RUN(fn); \
        switches_restore(#fn); \
        printf("  (%s: %.1f s)\n", #fn, now_s() - t_); \
    } while (0)

// A step whose update leaves parameters non-finite (every Adagrad
// accumulator of layer 0 made negative: sqrt gives NaN) is applied whole and
// the same way every time, as on the CPU, and reported: two runs give
// bit-identical models, and the embeddings (updated after the dense part)
// moved too. The GPU's replica then holds the failed step, which no position
// counts: its download is refused (a test build reads it anyway with
// WD_CUDA_TEST_READ_UNSAFE).
static void test_non_finite_update_whole(void) {
    set_fp32(0);
    wd_model *m[2] = {NULL, NULL};
    wd_schema s;
    for (int run = 0; run < 2; run++) {
        REQUIRE((m[run] = cfg_model(&C_CRITEO, &s)) != NULL);
        wd_model_view v;
        wd_model_view_get(m[run], &v);
        for (int64_t i = v.layer_w[0]; i < v.layer_w[0] + (int64_t)v.layer_in[0] * v.layer_out[0]; i++) v.dense_s1[i] = -1e30f;
        wd_batch b;
        memset(&b, 0, sizeof b);
        REQUIRE_OK(read_batch(CRITEO, 0, &b));
        wd_backend *be;
        REQUIRE_OK(backend_open(m[run], NB, &be));
        const wd_backend_ops *ops = TEST_BACKEND();
        wd_step_result res;
        CHECK_OK(ops->submit(be, &b, 0));
        wd_status st = ops->complete(be, &res);
        printf("  run %d: %s: %s\n", run, wd_status_string(st), wd_last_error());
        CHECK(st == WD_ERR_NUMERIC && strstr(wd_last_error(), "non-finite"));
        if (!ON_CPU) {
            st = ops->download(be);
            printf("  run %d: download: %s: %s\n", run, wd_status_string(st), wd_last_error());
            CHECK(st == WD_ERR_DEVICE && strstr(wd_last_error(), "download refused"));
            setenv("WD_CUDA_TEST_READ_UNSAFE", "1", 1);
        }
        CHECK_OK(ops->download(be));
        unsetenv("WD_CUDA_TEST_READ_UNSAFE");
        ops->destroy(be);
        wd_batch_free(&b);
    }
    wd_model *init = cfg_model(&C_CRITEO, &s);
    REQUIRE(init);
    int64_t differ = -1, moved = 0;
    models_rel_l2(m[0], m[1], &differ, "non-finite update, run 1 vs 2");
    CHECK(differ == 0);
    wd_model_view a, z;
    wd_model_view_get(m[0], &a);
    wd_model_view_get(init, &z);
    for (int64_t i = 0; a.emb && i < a.emb_rows * a.E; i++) moved += a.emb[i] != z.emb[i];
    printf("  %lld embedding values moved\n", (long long)moved);
    CHECK(moved > 0);
    wd_model_destroy(m[0]); wd_model_destroy(m[1]); wd_model_destroy(init);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);   // line by line, also into a pipe or a file
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    ONLY = getenv("WD_GPU_TESTS");
    setenv("WD_COMM_TIMEOUT", "30", 0);   // the caller's, else 30 s
    PROMPT = atof(getenv("WD_COMM_TIMEOUT")) * 2 / 3;
    const char *q = getenv("WD_GPU_TEST_QUICK"), *req = getenv("WD_REQUIRE_GPU");
    QUICK = q && *q && strcmp(q, "0") != 0;
    switches_save();
#ifdef WD_TEST_GPU_ON_CPU
    NDEV = 1;
    (void)req;
    printf("dry run of the harness on the CPU backend (WD_TEST_GPU_ON_CPU)\n");
#else
    if (wd_cuda_device_count(&NDEV) != WD_OK) {
        if (req && *req && strcmp(req, "0") != 0) {
            printf("test_gpu: %s, and WD_REQUIRE_GPU=1: failing\n# test_gpu: 0 passed, 1 failed, 0 skipped\n", wd_last_error());
            return 1;
        }
        printf("SKIP test_gpu: %s\n# test_gpu: 0 passed, 0 failed, 1 skipped\n", wd_last_error());
        return 0;
    }
    {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
            printf("device count: %d; GPU 0: %s, sm_%d%d%s; WD_COMM_TIMEOUT=%s%s%s\n", NDEV, p.name, p.major, p.minor, QUICK ? " (quick)" : "",
                   getenv("WD_COMM_TIMEOUT"), ONLY && *ONLY ? "; WD_GPU_TESTS=" : "", ONLY && *ONLY ? ONLY : "");
    }
#endif
    snprintf(CRITEO, sizeof CRITEO, "%s/g-criteo.wdr", TMP);
    snprintf(VALID, sizeof VALID, "%s/g-valid.wdr", TMP);
    snprintf(ZIPF, sizeof ZIPF, "%s/g-zipf.wdr", TMP);
    snprintf(MH, sizeof MH, "%s/g-multihot.wdr", TMP);
    snprintf(DENSE, sizeof DENSE, "%s/g-dense.wdr", TMP);
    snprintf(HOT, sizeof HOT, "%s/g-hot.wdr", TMP);
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = CRITEO; g.rows = QUICK ? 8192 : 16384; g.seed = 3; g.max_card = 1000; g.block_samples = BLOCK;
    CHECK_OK(wd_gen(&g, NULL));
    g.output = VALID; g.rows = 4096; g.first_row = 1 << 20;
    CHECK_OK(wd_gen(&g, NULL));
    g.output = ZIPF; g.rows = 4096; g.first_row = 0; g.max_card = 20; g.zipf = 1.5;   // runs of one id far longer than a segment
    CHECK_OK(wd_gen(&g, NULL));
    CHECK_OK(write_multi_hot(MH, 4096));
    CHECK_OK(write_dense_only(DENSE, 4096));
    CHECK_OK(write_hot(HOT, 4096));
    RUN(test_gradients_fp32);
    RUN(test_gradients_tf32);
    RUN(test_gradients_bf16);
    RUN(test_epilogue_off);
    RUN(test_steps_fp32);
    RUN(test_steps_tf32);
    RUN(test_sparse_paths);
    RUN(test_settings);
    RUN(test_steps_bf16);
    RUN(test_graph_matches_stream);
    RUN(test_overlap_matches_serial);
    RUN(test_predict_and_evaluate);
    RUN(test_epochs_checkpoint_resume);
    RUN(test_stream_matches_files);
    RUN(test_simulated_ranks);
    RUN(test_nccl_one_rank);
    RUN(test_nccl_two_gpus);
    RUN(test_rank_failure_aborts_all);
    RUN(test_rank_failure_fails_fast);
    RUN(test_nccl_fail_fast);
    RUN(test_teardown_stalled_collective);
    RUN(test_failed_steps_change_nothing);
    RUN(test_non_finite_update_whole);
    return test_summary("test_gpu");
}
