// The GEMM engine and what runs on it, with whichever engine this build
// links (oneDNN, OpenBLAS or the header's portable loops; widedeep.h, "The
// GEMM engine"): concurrent wd_predict and predictors on one model, bit-identical
// multi-worker training, the engine's products against a plain loop, bf16
// against fp32, the memory cap, bf16 rounding and the fused backward pass. The implementation is compiled in, so the
// engine's static entry points (wd__mm, wd__sgemm) are called directly.
// Usage: test_engine [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#if defined(__SANITIZE_ADDRESS__)
#define TE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TE_ASAN 1
#endif
#endif

static char TMP[200] = "/tmp";
static char DATA[300], HELD[300];
static int ready;
static char self_exe[1024] = "/proc/self/exe";   // this binary (main reads the link)

// ---- helpers ---------------------------------------------------------------------------------
static void gen(const char *path, int64_t rows, int64_t first) { REQUIRE_OK(tl_gen(path, rows, first, 77, 200, 512)); }
static void test_setup(void) {
    snprintf(DATA, sizeof DATA, "%s/engine-train.wdr", TMP);
    snprintf(HELD, sizeof HELD, "%s/engine-held.wdr", TMP);
    gen(DATA, 4096, 0);
    gen(HELD, 2048, 100000);
    ready = 1;
}
// The reference shape: 13 dense + 26 one-hot slots (wd_gen's Criteo layout),
// an MLP wide enough that the engine's GEMMs do the work, two crossed pairs.
static wd_model_desc base_desc(wd_schema *s) {
    wd_reader *r;
    memset(s, 0, sizeof *s);
    if (wd_reader_open(DATA, &r) == WD_OK) { *s = *wd_reader_schema(r); wd_reader_close(r); }
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = s;
    d.embed_dim = 8; d.hidden[0] = 64; d.hidden[1] = 32;
    d.ncross = 2; d.cross[0][0] = 0; d.cross[0][1] = 1; d.cross[1][0] = 2; d.cross[1][1] = 5;
    d.cross_buckets = 4096;
    d.seed = 5;
    return d;
}
static wd_model *make_model(const wd_model_desc *d) {
    wd_model *m = NULL;
    return wd_model_create(d, &m) == WD_OK ? m : NULL;
}
static wd_status train(wd_model *m, int threads, int64_t max_steps, int batch, wd_train_report *rep) {
    const char *files[1] = {DATA};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = batch; td.threads = threads; td.max_steps = max_steps;
    return wd_train(m, &td, rep);
}
// Bit-for-bit comparison of every array of two models' views; names the first difference.
static int models_identical(wd_model *a, wd_model *b, char *why, size_t n) {
    wd_model_view va, vb;
    wd_model_view_get(a, &va);
    wd_model_view_get(b, &vb);
    snprintf(why, n, "identical");
    if (va.P != vb.P || va.wide_rows != vb.wide_rows || va.emb_rows != vb.emb_rows || va.E != vb.E) { snprintf(why, n, "shapes differ"); return 0; }
    struct { const char *name; const float *x, *y; int64_t len; } arr[] = {
        {"dense", va.dense, vb.dense, va.P}, {"dense_s1", va.dense_s1, vb.dense_s1, va.P}, {"dense_s2", va.dense_s2, vb.dense_s2, va.P},
        {"wide", va.wide, vb.wide, va.wide_rows}, {"wide_z", va.wide_z, vb.wide_z, va.wide_rows}, {"wide_n", va.wide_n, vb.wide_n, va.wide_rows},
        {"emb", va.emb, vb.emb, va.emb_rows * va.E}, {"emb_s1", va.emb_s1, vb.emb_s1, va.emb_rows * va.E},
        {"emb_s2", va.emb_s2, vb.emb_s2, va.emb_s2 ? va.emb_rows * va.E : 0}};
    for (size_t k = 0; k < sizeof arr / sizeof arr[0]; k++) {
        if (!arr[k].len) continue;
        if (!arr[k].x != !arr[k].y) { snprintf(why, n, "%s present in one model only", arr[k].name); return 0; }
        for (int64_t i = 0; i < arr[k].len; i++)
            if (memcmp(&arr[k].x[i], &arr[k].y[i], 4) != 0) {
                snprintf(why, n, "%s[%lld]: %.9g vs %.9g", arr[k].name, (long long)i, (double)arr[k].x[i], (double)arr[k].y[i]);
                return 0;
            }
    }
    if (*va.step != *vb.step || *va.epoch != *vb.epoch || *va.batch != *vb.batch || *va.batch_size != *vb.batch_size) { snprintf(why, n, "positions differ"); return 0; }
    return 1;
}
// Samples [from, from+count) of a file's decoded samples, as one batch.
static wd_status load_rows(const char *path, wd_batch *out, int from, int count) {
    wd_reader *r;
    WD__TRY(wd_reader_open(path, &r));
    wd_status st = wd_batch_init(out, wd_reader_schema(r), count, 0);
    int at = 0;   // sample index of the block's first sample
    for (int64_t i = 0; !st && i < wd_reader_nblocks(r) && out->n < count; i++) {
        const wd_batch *b;
        st = wd_reader_block(r, i, &b);
        if (st) break;
        int lo = WD__MAX(from - at, 0), hi = WD__MIN(b->n, from + count - at);
        if (hi > lo) st = wd_batch_append(out, b, lo, hi - lo);
        at += b->n;
    }
    wd_reader_close(r);
    if (!st && out->n != count) st = wd__fail(WD_ERR_INTERNAL, "%s holds fewer than %d samples from %d", path, count, from);
    if (st) wd_batch_free(out);
    return st;
}
// Whether this build and CPU train in bf16 (and the library's message when not).
static int bf16_ok(char *why, size_t n) {
    wd_schema s;
    wd_model_desc d = base_desc(&s);
    d.precision = WD_PRECISION_BF16;
    d.hidden[0] = 4; d.hidden[1] = 0; d.ncross = 0;
    wd_model *m = make_model(&d);
    if (!m) { snprintf(why, n, "model: %.400s", wd_last_error()); return 0; }
    wd_status st = wd__precision_check(m);
    snprintf(why, n, "%.400s", st ? wd_last_error() : "");
    wd_model_destroy(m);
    return st == WD_OK;
}

// ---- 1. concurrent prediction ------------------------------------------------------------------
/* Catches: wd_predict keeping state anywhere but the caller's stack and its
   own workspace (a static or per-model scratch buffer, an engine primitive
   or stream shared between calling threads): 8 threads predicting the same
   batches at once on one trained model must reproduce the single-threaded
   probabilities bit for bit, for batch sizes 1, 7, 64, 333 and 1000,
   different threads on different sizes at the same moment. The threads run
   in rounds (a barrier before and after) so that they overlap. With bf16
   (when the CPU has it), before every round the model's bf16 weight copy is
   made stale and wrong (zeroed, then marked stale as wd_model_view_get
   does): the threads race to rebuild it (wd__lp_refresh), and one that
   computes with a half-built copy (the flag published before the copy is
   complete, no lock) gets other probabilities. */
#define PT 8
#define PROUNDS 12
#define NB 5
static const int pred_sizes[NB] = {1, 7, 64, 333, 1000};
typedef struct pred_ctx {
    wd_model *m;
    wd_batch *b;                    // NB batches
    float *ref[NB];
    pthread_barrier_t *go;
    int t;
    int64_t mismatches, errors, calls;
    char err[256];
} pred_ctx;
static void *pred_thread(void *arg) {
    pred_ctx *c = (pred_ctx *)arg;
    float *p = (float *)malloc(sizeof(float) * 1000);
    for (int round = 0; round < PROUNDS; round++) {
        pthread_barrier_wait(c->go);   // the main thread has prepared the round
        for (int q = 0; q < NB; q++) {
            int k = (q + c->t + round) % NB;   // threads on different batch sizes at the same moment
            memset(p, 0xff, sizeof(float) * 1000);
            wd_status st = wd_predict(c->m, &c->b[k], p);
            c->calls++;
            if (st) { c->errors++; snprintf(c->err, sizeof c->err, "%.250s", wd_last_error()); continue; }
            if (memcmp(p, c->ref[k], sizeof(float) * (size_t)c->b[k].n) != 0) c->mismatches++;
        }
        pthread_barrier_wait(c->go);   // round over
    }
    free(p);
    return NULL;
}
// Single-threaded references, then PT threads; returns mismatching or failed calls (-1: no reference).
static int64_t predict_concurrently(wd_model *m, wd_batch *b, int stale_bf16, int64_t *calls) {
    float *ref[NB];
    *calls = 0;
    for (int k = 0; k < NB; k++) {
        ref[k] = (float *)malloc(sizeof(float) * (size_t)b[k].n);
        if (wd_predict(m, &b[k], ref[k]) != WD_OK) { printf("  reference prediction failed: %s\n", wd_last_error()); for (int j = 0; j <= k; j++) free(ref[j]); return -1; }
    }
    // the model must be doing something: probabilities in (0, 1), not all alike
    float lo = 1, hi = 0;
    for (int i = 0; i < b[NB - 1].n; i++) { lo = fminf(lo, ref[NB - 1][i]); hi = fmaxf(hi, ref[NB - 1][i]); }
    int sane = lo > 0 && hi < 1 && hi - lo > 0.05f;
    if (!sane) printf("  suspicious reference probabilities: %g..%g\n", (double)lo, (double)hi);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, PT + 1);
    pred_ctx c[PT];
    pthread_t th[PT];
    for (int t = 0; t < PT; t++) {
        memset(&c[t], 0, sizeof c[t]);
        c[t].m = m; c[t].b = b; c[t].go = &go; c[t].t = t;
        for (int k = 0; k < NB; k++) c[t].ref[k] = ref[k];
        pthread_create(&th[t], NULL, pred_thread, &c[t]);
    }
    for (int round = 0; round < PROUNDS; round++) {
        if (stale_bf16) {   // a wrong, stale bf16 copy: every thread may find it so and rebuild it
            memset(m->dense_lp, 0, sizeof(uint16_t) * (size_t)m->P_mlp);
            wd_model_view v;
            wd_model_view_get(m, &v);
        }
        pthread_barrier_wait(&go);
        pthread_barrier_wait(&go);
    }
    int64_t bad = 0;
    for (int t = 0; t < PT; t++) {
        pthread_join(th[t], NULL);
        bad += c[t].mismatches + c[t].errors;
        *calls += c[t].calls;
        if (c[t].errors) printf("  thread %d: %lld failed calls: %s\n", t, (long long)c[t].errors, c[t].err);
    }
    pthread_barrier_destroy(&go);
    for (int k = 0; k < NB; k++) free(ref[k]);
    return sane ? bad : (bad ? bad : 1);
}
static void test_concurrent_predict(void) {
    REQUIRE(ready);
    wd_schema s;
    wd_model_desc d = base_desc(&s);
    wd_model *m = make_model(&d);
    REQUIRE(m);
    wd_train_report rep;
    REQUIRE_OK(train(m, 2, 6, 256, &rep));
    wd_batch b[NB];
    int ok = 1;
    for (int k = 0; k < NB; k++)
        if (load_rows(HELD, &b[k], 37 * k, pred_sizes[k]) != WD_OK) { ok = 0; for (int j = 0; j < k; j++) wd_batch_free(&b[j]); break; }
    if (!ok) wd_model_destroy(m);
    REQUIRE(ok);
    int64_t calls = 0;
    double t0 = wd__now();
    int64_t bad = predict_concurrently(m, b, 0, &calls);
    printf("  fp32 (%s): %lld calls on %d threads, %lld differing from the single-threaded result (%.2f s)\n", rep.engine, (long long)calls, PT, (long long)bad, wd__now() - t0);
    CHECK(bad == 0 && calls == PT * PROUNDS * NB);
    char why[512];
    if (bf16_ok(why, sizeof why)) {
        // the trained weights in a bf16 model; its bf16 copy is stale when the threads start
        d.precision = WD_PRECISION_BF16;
        wd_model *h = make_model(&d);
        CHECK(h != NULL);
        if (h) {
            wd_model_view vm, vh;
            wd_model_view_get(m, &vm);
            wd_model_view_get(h, &vh);
            memcpy(vh.dense, vm.dense, 4 * (size_t)vm.P);
            memcpy(vh.wide, vm.wide, 4 * (size_t)vm.wide_rows);
            memcpy(vh.emb, vm.emb, 4 * (size_t)(vm.emb_rows * vm.E));
            t0 = wd__now();
            bad = predict_concurrently(h, b, 1, &calls);
            printf("  bf16: %lld calls on %d threads, %lld differing (%.2f s)\n", (long long)calls, PT, (long long)bad, wd__now() - t0);
            CHECK(bad == 0 && calls == PT * PROUNDS * NB);
            wd_model_destroy(h);
        }
    } else printf("  bf16 part not run: %s\n", why);
    for (int k = 0; k < NB; k++) wd_batch_free(&b[k]);
    wd_model_destroy(m);
}

// ---- 1b. predictors ----------------------------------------------------------------------------
/* Catches: a predictor that shares scratch or engine state between threads,
   keeps samples of an earlier call, pads a piece wrongly (rows past the
   batch read as samples, or a piece's results copied from the wrong rows),
   allocates on a call, or leaves the caller's OpenMP setting changed:
   PT threads, each with its own predictors (max_batch 64: the 333 and 1000
   batches run in pieces, rounded up to 64 + 16.. rows; and the default 256)
   on one const model, on batch sizes 1, 7, 64, 333 and 1000 in rotating
   order, must reproduce wd_predict bit for bit; under TSan (test_engine_tsan)
   the threads must not race. Then, on one thread with counting allocator
   hooks: after a warm-up call at each size, 40 more calls allocate nothing
   (wd_predict, the simple form, does allocate: the hooks count). Bad
   arguments are refused with messages naming them. */
typedef struct pctx_t {
    const wd_model *m;
    const wd_batch *b;
    float *ref[NB];
    int t, cap;
    int64_t mismatches, errors, calls;
    char err[256];
} pctx_t;
static void *predictor_thread(void *arg) {
    pctx_t *c = (pctx_t *)arg;
    wd_predictor_desc pd = {c->cap, 0};
    wd_predictor *p = NULL;
    float *out = (float *)malloc(sizeof(float) * 1000);
    if (wd_predictor_create(c->m, &pd, &p) != WD_OK) { c->errors++; snprintf(c->err, sizeof c->err, "%.250s", wd_last_error()); free(out); return NULL; }
    for (int round = 0; round < 4; round++)
        for (int q = 0; q < NB; q++) {
            int k = (q + c->t + round) % NB;
            memset(out, 0xff, sizeof(float) * 1000);
            wd_status st = wd_predictor_run(p, &c->b[k], out);
            c->calls++;
            if (st) { c->errors++; snprintf(c->err, sizeof c->err, "%.250s", wd_last_error()); continue; }
            if (memcmp(out, c->ref[k], sizeof(float) * (size_t)c->b[k].n) != 0) c->mismatches++;
        }
    wd_predictor_destroy(p);
    free(out);
    return NULL;
}
static long pc_allocs;
static void *pc_alloc(size_t n, void *u) { (void)u; __atomic_add_fetch(&pc_allocs, 1, __ATOMIC_RELAXED); return malloc(n); }
static void pc_free(void *p, void *u) { (void)u; free(p); }
static void test_predictor(void) {
    REQUIRE(ready);
    wd_schema s;
    wd_model_desc d = base_desc(&s);
    wd_model *mm = make_model(&d);
    REQUIRE(mm);
    wd_train_report rep;
    wd_status tst = train(mm, 2, 6, 256, &rep);
    if (tst) wd_model_destroy(mm);
    REQUIRE_OK(tst);
    const wd_model *m = mm;   // a predictor reads the model only
    wd_batch b[NB];
    int nb = 0;
    while (nb < NB && load_rows(HELD, &b[nb], 37 * nb, pred_sizes[nb]) == WD_OK) nb++;
    float *ref[NB] = {0};
    int ok = nb == NB;
    for (int k = 0; ok && k < NB; k++) {
        ref[k] = (float *)malloc(sizeof(float) * (size_t)b[k].n);
        if (wd_predict(m, &b[k], ref[k]) != WD_OK) { printf("  wd_predict: %s\n", wd_last_error()); ok = 0; }
    }
    CHECK(ok);
    // PT threads with their own predictors, half max_batch 64, half the default
    pctx_t c[PT];
    pthread_t th[PT];
    for (int t = 0; ok && t < PT; t++) {
        memset(&c[t], 0, sizeof c[t]);
        c[t].m = m; c[t].b = b; c[t].t = t; c[t].cap = t % 2 ? 64 : 0;
        for (int k = 0; k < NB; k++) c[t].ref[k] = ref[k];
        pthread_create(&th[t], NULL, predictor_thread, &c[t]);
    }
    int64_t bad = 0, calls = 0;
    for (int t = 0; ok && t < PT; t++) {
        pthread_join(th[t], NULL);
        bad += c[t].mismatches + c[t].errors;
        calls += c[t].calls;
        if (c[t].errors) printf("  thread %d: %lld failed calls: %s\n", t, (long long)c[t].errors, c[t].err);
    }
    printf("  %lld predictor calls on %d threads (max_batch 64 and 256), %lld differing from wd_predict\n", (long long)calls, PT, (long long)bad);
    CHECK(ok && bad == 0 && calls == PT * 4 * NB);
    // no allocation per call once each size was seen; the caller's OpenMP setting kept
    wd_predictor *p = NULL;
    wd_predictor_desc pd = {64, 0};
    CHECK_OK(wd_predictor_create(m, &pd, &p));
    float *out = (float *)malloc(sizeof(float) * 1000);
    for (int k = 0; p && ok && k < NB; k++) CHECK_OK(wd_predictor_run(p, &b[k], out));   // warm-up
#ifdef WD_USE_ONEDNN
    int omp0 = omp_get_max_threads();
    omp_set_num_threads(3);
#endif
    wd_allocator hooks = {pc_alloc, pc_free, NULL};
    pc_allocs = 0;
    wd_set_allocator(&hooks);
    int fails = 0;
    for (int r = 0; p && ok && r < 40; r++) {
        int k = (r * 3) % NB;
        fails += wd_predictor_run(p, &b[k], out) != WD_OK || memcmp(out, ref[k], sizeof(float) * (size_t)b[k].n) != 0;
    }
    long per_call = pc_allocs;
    if (ok) CHECK_OK(wd_predict(m, &b[1], out));
    long simple = pc_allocs - per_call;
    wd_set_allocator(NULL);
    printf("  40 calls of a warm predictor: %ld allocations, %d wrong; wd_predict: %ld allocations\n", per_call, fails, simple);
    CHECK(per_call == 0 && fails == 0 && simple > 0);
    // once published (online learning), the same predictor reads the snapshot:
    // the model's probabilities, and still no allocation per call
    CHECK_OK(wd_model_publish(mm));
    wd_set_allocator(&hooks);
    pc_allocs = 0;
    int sfails = 0;
    for (int r = 0; p && ok && r < 40; r++) {
        int k = (r * 3) % NB;
        sfails += wd_predictor_run(p, &b[k], out) != WD_OK || memcmp(out, ref[k], sizeof(float) * (size_t)b[k].n) != 0;
    }
    long snap_calls = pc_allocs;
    wd_set_allocator(NULL);
    printf("  published: 40 calls reading the snapshot: %ld allocations, %d wrong\n", snap_calls, sfails);
    CHECK(snap_calls == 0 && sfails == 0);
#ifdef WD_USE_ONEDNN
    CHECK(omp_get_max_threads() == 3);   // scoped to the calls
    wd_predictor *p2 = NULL;
    wd_predictor_desc two = {0, 2};
    CHECK_OK(wd_predictor_create(m, &two, &p2));
    if (p2 && ok) {   // two engine threads: the same probabilities (to rounding)
        CHECK_OK(wd_predictor_run(p2, &b[4], out));
        double mx = 0;
        for (int i = 0; i < b[4].n; i++) mx = fmax(mx, fabs((double)out[i] - ref[4][i]));
        printf("  threads=2: max difference from threads=1 %.3g\n", mx);
        CHECK(mx < 1e-6);
    }
    CHECK(omp_get_max_threads() == 3);
    wd_predictor_destroy(p2);
    omp_set_num_threads(omp0);
#endif
    // bad arguments
    wd_predictor *q = (wd_predictor *)&q;
    CHECK(wd_predictor_create(NULL, NULL, &q) == WD_ERR_INVALID_ARG && q == NULL && strstr(wd_last_error(), "model"));
    wd_predictor_desc neg = {-1, 0};
    CHECK(wd_predictor_create(m, &neg, &q) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "max_batch -1"));
    neg.max_batch = 0; neg.threads = -2;
    CHECK(wd_predictor_create(m, &neg, &q) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "threads -2"));
    CHECK(wd_predictor_run(NULL, &b[0], out) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "predictor"));
    if (p && ok) {
        CHECK(wd_predictor_run(p, NULL, out) == WD_ERR_INVALID_ARG);
        uint32_t keep = b[0].ids[3][0];
        b[0].ids[3][0] = s.slot[3].buckets;
        CHECK(wd_predictor_run(p, &b[0], out) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "wd_predictor_run: sample 0: slot") && strstr(wd_last_error(), "outside"));
        b[0].ids[3][0] = keep;
        CHECK_OK(wd_predictor_run(p, &b[0], out));   // still usable after a refused batch
        CHECK(memcmp(out, ref[0], sizeof(float)) == 0);
        wd_batch empty = b[0];
        empty.n = 0;
        CHECK_OK(wd_predictor_run(p, &empty, out));
    }
    wd_predictor_destroy(p);
    wd_predictor_destroy(NULL);
    free(out);
    for (int k = 0; k < NB; k++) free(ref[k]);
    for (int k = 0; k < nb; k++) wd_batch_free(&b[k]);
    wd_model_destroy(mm);
}

// ---- 2. multi-worker determinism ---------------------------------------------------------------
/* Catches: anything in a multi-worker step whose result depends on thread
   timing: a reduction that sums in arrival order (atomics, a first-come
   accumulator), sparse rows merged in the order workers deliver them, an
   update applied while another worker still reads the parameters. Two runs
   from the same seed on the same file with threads = 2 (Adagrad, crosses,
   one epoch) and threads = 3 (Adam: its second state arrays too) must give
   bit-identical models: parameters, optimizer state, position.
   threads = 1 vs 2: the header's section 15 says only that the dense
   gradient is summed by a ring allreduce between workers; README.md
   ("Model and trainer") documents "N workers give the same model as one up
   to float rounding". So that pair is compared within a tolerance; it
   catches a worker's share of the batch lost or counted twice, or the
   rows of one worker combined with the wrong ones (each moves the
   predictions and most parameters far beyond rounding: the test checks
   that a model one step short of the run, 1/16 of the data, is outside
   the tolerance). A gradient scaled by a constant (a per-worker mean) is
   invisible here: Adagrad with a zero initial accumulator, Adam and FTRL
   with beta 0 are all invariant to the gradient's scale. */
static double rel_diff(const float *a, const float *b, int64_t n, double *maxabs) {
    double num = 0, den = 0, mx = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d; den += (double)b[i] * b[i];
        if (!(fabs(d) <= mx)) mx = fabs(d);
    }
    if (maxabs) *maxabs = mx;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
static void test_multiworker_determinism(void) {
    REQUIRE(ready);
    wd_schema s;
    wd_model_desc d = base_desc(&s);
    char why[300];
    // threads = 2, Adagrad, a whole epoch (16 steps)
    wd_model *a = make_model(&d), *b = make_model(&d), *one = make_model(&d), *init = make_model(&d);
    REQUIRE(a && b && one && init);
    wd_train_report ra, rb, r1;
    REQUIRE_OK(train(a, 2, 0, 256, &ra));
    REQUIRE_OK(train(b, 2, 0, 256, &rb));
    CHECK(ra.steps == 16 && strstr(ra.engine, "threads=2") != NULL);
    int same = models_identical(a, b, why, sizeof why);
    printf("  threads=2, 2 runs of %lld steps: %s\n", (long long)ra.steps, why);
    CHECK(same);
    CHECK(!models_identical(a, init, why, sizeof why));   // it trained: the comparison is not of two untouched models
    // threads = 1 against threads = 2, up to float rounding
    REQUIRE_OK(train(one, 1, 0, 256, &r1));
    wd_model_view va, v1;
    wd_model_view_get(a, &va);
    wd_model_view_get(one, &v1);
    double mx_d, mx_e, mx_w;
    double rd = rel_diff(va.dense, v1.dense, va.P, &mx_d);
    double re = rel_diff(va.emb, v1.emb, va.emb_rows * va.E, &mx_e);
    double rw = rel_diff(va.wide, v1.wide, va.wide_rows, &mx_w);
    int64_t far = 0;   // MLP parameters further apart than rounding can take them
    for (int64_t i = 0; i < va.P; i++) far += fabs((double)va.dense[i] - v1.dense[i]) > 1e-4;
    wd_batch hb;
    REQUIRE_OK(load_rows(HELD, &hb, 0, 1000));
    float *p2 = (float *)malloc(sizeof(float) * 1000), *p1 = (float *)malloc(sizeof(float) * 1000);
    CHECK_OK(wd_predict(a, &hb, p2));
    CHECK_OK(wd_predict(one, &hb, p1));
    double mxp;
    rel_diff(p2, p1, 1000, &mxp);
    printf("  threads=1 vs 2: dense rel %.2g (max %.2g, %lld above 1e-4), embeddings rel %.2g (max %.2g), wide rel %.2g (max %.2g); predictions max %.2g; loss %.6f vs %.6f\n",
           rd, mx_d, (long long)far, re, mx_e, rw, mx_w, mxp, r1.last_loss, ra.last_loss);
    CHECK(rd < 1e-4 && re < 1e-4 && rw < 1e-4 && far <= va.P / 1000 && mxp < 1e-4);
    // the tolerance is tight enough: the model of 15 of the 16 steps (a share of the data lost) fails it
    wd_model *short_run = make_model(&d);
    REQUIRE(short_run);
    CHECK_OK(train(short_run, 2, 15, 256, NULL));
    float *ps = (float *)malloc(sizeof(float) * 1000);
    CHECK_OK(wd_predict(short_run, &hb, ps));
    double mxs;
    wd_model_view vs;
    wd_model_view_get(short_run, &vs);
    double rds = rel_diff(vs.dense, v1.dense, va.P, NULL);
    rel_diff(ps, p1, 1000, &mxs);
    printf("  (15 steps instead of 16: dense rel %.2g, predictions max %.2g: outside the tolerance)\n", rds, mxs);
    CHECK(rds >= 1e-4 && mxs >= 1e-4);
    free(p1); free(p2); free(ps);
    wd_batch_free(&hb);
    wd_model_destroy(short_run);
    wd_model_destroy(a); wd_model_destroy(b); wd_model_destroy(one); wd_model_destroy(init);
    // threads = 3, Adam: an odd split of every batch (256 = 85 + 85 + 86), both state arrays
    d.optimizer = WD_ADAM; d.seed = 6;
    a = make_model(&d); b = make_model(&d);
    REQUIRE(a && b);
    CHECK_OK(train(a, 3, 8, 256, &ra));
    CHECK_OK(train(b, 3, 8, 256, &rb));
    CHECK(ra.steps == 8 && strstr(ra.engine, "threads=3") != NULL);
    same = models_identical(a, b, why, sizeof why);
    printf("  threads=3 (Adam), 2 runs of %lld steps: %s\n", (long long)ra.steps, why);
    CHECK(same);
    wd_model_destroy(a); wd_model_destroy(b);
}

// ---- 3. the engine's GEMM against a plain loop ------------------------------------------------------
/* Catches: a wrong transpose, stride or leading dimension for any of the
   MLP's three products (forward y = x W^T + b with or without ReLU; weight
   gradient dW = dz^T a; input gradient da = dz W), a dropped or repeated
   term of the sum (tail loops of odd sizes: 1, 3, 17, 429 in every
   position), beta/accumulation mistakes (the forward and weight-gradient
   products add to C, the input gradient overwrites it, whatever C held: NaN
   here), a cached oneDNN primitive reused for the wrong shape or after its
   eviction (more shapes than the cache holds, then the first ones again),
   and, when the CPU has it, the bf16 products (reference: the same bf16
   inputs, summed in double). The tolerance is the fp32 summation bound,
   2 (K + 2) u sum_k |a_ik b_kj| (u = 2^-24), per element; the test checks
   that leaving one term out of a sum of 429 exceeds it. */
static const int gdims[] = {1, 3, 17, 64, 429};
#define NGD (int)(sizeof gdims / sizeof gdims[0])
static uint16_t bf16_of(float x) { uint16_t h; wd__to_bf16_sw(&h, &x, 1); return h; }
static float f32_of_bf16(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static void fill(float *x, size_t n, wd__rng *r, double zeros) {
    for (size_t i = 0; i < n; i++) x[i] = wd__rng_uniform(r) < zeros ? 0.0f : (float)(2.0 * wd__rng_uniform(r) - 1.0);
}
// Worst |C - ref| over the bound; ref = op(A) op(B) in double (+ beta C0, + bias, ReLU).
// A is (M, K) or, transposed, (K, M); B is (K, N) or, transposed, (N, K); row-major, tight.
typedef struct gcase { int M, N, K, ta, tb; float alpha, beta; const float *A, *B, *C0, *bias; int relu; double out_rel; } gcase;   // out_rel: C rounded to that relative precision (bf16 output)
static double gemm_error(const gcase *g, const float *C, int *wi, int *wj) {
    double worst = 0;
    for (int i = 0; i < g->M; i++)
        for (int j = 0; j < g->N; j++) {
            double s = 0, mag = 0;
            for (int k = 0; k < g->K; k++) {
                double a = g->ta ? g->A[(size_t)k * g->M + i] : g->A[(size_t)i * g->K + k];
                double b = g->tb ? g->B[(size_t)j * g->K + k] : g->B[(size_t)k * g->N + j];
                s += a * b; mag += fabs(a * b);
            }
            s *= g->alpha; mag *= fabs(g->alpha);
            if (g->C0 && g->beta != 0.0f) { s += g->beta * (double)g->C0[(size_t)i * g->N + j]; mag += fabs(g->beta * (double)g->C0[(size_t)i * g->N + j]); }
            if (g->bias) { s += g->bias[j]; mag += fabs(g->bias[j]); }
            if (g->relu && s < 0) s = 0;
            double bound = 2.0 * (g->K + 2) * 0x1p-24 * mag + g->out_rel * fabs(s) + 1e-30;
            double e = fabs((double)C[(size_t)i * g->N + j] - s) / bound;
            if (!(e <= worst)) { worst = e; if (wi) *wi = i; if (wj) *wj = j; }   // NaN counts as the worst
        }
    return worst;
}
static void test_gemm_vs_reference(void) {
    size_t big = 429 * 429;
    float *A = (float *)malloc(4 * big), *B = (float *)malloc(4 * big), *C = (float *)malloc(4 * big), *C0 = (float *)malloc(4 * big);
    float *bias = (float *)malloc(4 * 429), *Ar = (float *)malloc(4 * big), *Br = (float *)malloc(4 * big);
    uint16_t *Ah = (uint16_t *)malloc(2 * big), *Bh = (uint16_t *)malloc(2 * big), *Ch = (uint16_t *)malloc(2 * big);
    wd__rng r = {12345};
    double worst = 0, worst_lp = 0;
    int cases = 0, cases_lp = 0, bad = 0;
    char wcase[160] = "";
#ifdef WD_USE_ONEDNN
    char why[512];
    int lp_ok = bf16_ok(why, sizeof why);
    wd__gemm g;
    memset(&g, 0, sizeof g);
    // kinds: 0 forward (bias, ReLU on odd shapes), 1 weight gradient, 2 input gradient
    static const char *kname[3] = {"forward x W^T + b", "weight grad dz^T a", "input grad dz W"};
    for (int pass = 0; pass < 3; pass++)   // pass 1: the last shapes again (cached); pass 2: the first again (evicted, remade)
        for (int si = 0; si < NGD * NGD * NGD; si++) {
            if (pass == 1 && si < NGD * NGD * NGD - 12) continue;
            if (pass == 2 && si >= 8) break;
            int M = gdims[si / (NGD * NGD)], N = gdims[(si / NGD) % NGD], K = gdims[si % NGD];
            if ((double)M * N * K > 429.0 * 429 * 17) continue;   // time (ASan): 121 of the 125 shapes
            for (int kind = 0; kind < 3; kind++)
                for (int lp = 0; lp <= (lp_ok ? (kind == WD__MM_FWD ? WD__LP_OUT : WD__LP_IN) : 0); lp++) {   // bf16 output: the forward product's
                    gcase c = {M, N, K, kind == WD__MM_WGRAD, kind == WD__MM_FWD, 1.0f, 0.0f, NULL, NULL, NULL, NULL, 0, 0.0};
                    fill(A, (size_t)M * K, &r, 0.3);   // ReLU-like zeros
                    fill(B, (size_t)K * N, &r, 0.0);
                    fill(bias, (size_t)N, &r, 0.0);
                    for (size_t q = 0; q < (size_t)M * N; q++) C[q] = NAN;   // the product overwrites C
                    if (kind == WD__MM_FWD) { c.bias = bias; c.relu = si & 1; }
                    const void *pa = A, *pb = B;
                    c.A = A; c.B = B;
                    if (lp) {   // bf16 inputs; the reference sums the same rounded values
                        for (size_t q = 0; q < (size_t)M * K; q++) { Ah[q] = bf16_of(A[q]); Ar[q] = f32_of_bf16(Ah[q]); }
                        for (size_t q = 0; q < (size_t)K * N; q++) { Bh[q] = bf16_of(B[q]); Br[q] = f32_of_bf16(Bh[q]); }
                        pa = Ah; pb = Bh; c.A = Ar; c.B = Br;
                    }
                    if (lp == WD__LP_OUT) for (size_t q = 0; q < (size_t)M * N; q++) Ch[q] = 0x7fc0;   // NaN
                    wd_status st = wd__mm(&g, kind, si, M, N, K, lp, pa, pb, c.bias, c.relu, lp == WD__LP_OUT ? (void *)Ch : (void *)C);   // layer si: as the MLP, kinds and precisions share a layer
                    if (st) { bad++; printf("  wd__mm %s %dx%dx%d: %s\n", kname[kind], M, N, K, wd_last_error()); continue; }
                    if (lp == WD__LP_OUT) {   // rounded to bf16 once, at the end: half a unit in the 8th bit
                        for (size_t q = 0; q < (size_t)M * N; q++) C[q] = f32_of_bf16(Ch[q]);
                        c.out_rel = 0x1p-8;
                    }
                    double e = gemm_error(&c, C, NULL, NULL);
                    if (lp) { cases_lp++; if (!(e <= worst_lp)) worst_lp = e; }
                    else { cases++; if (!(e <= worst)) { worst = e; snprintf(wcase, sizeof wcase, "%s M=%d N=%d K=%d", kname[kind], M, N, K); } }
                    if (!(e <= 1)) { bad++; if (bad < 6) printf("  %s%s M=%d N=%d K=%d pass %d: error %.3g x the bound\n", kname[kind], lp ? " bf16" : "", M, N, K, pass, e); }
                }
        }
    printf("  oneDNN: %d fp32 products, worst %.3g of the bound (%s); %d bf16 products, worst %.3g%s%s\n", cases, worst, wcase, cases_lp, worst_lp,
           lp_ok ? "" : "; bf16 not run: ", lp_ok ? "" : why);
    CHECK(g.nprim == WD__PRIMS);   // the cache filled and evicted
    // the tolerance sees one missing term: the forward product of K = 429 without its largest term
    {
        int M = 3, N = 17, K = 429;
        gcase c = {M, N, K, 0, 1, 1.0f, 0.0f, A, B, NULL, NULL, 0, 0.0};
        fill(A, (size_t)M * K, &r, 0.0);
        fill(B, (size_t)K * N, &r, 0.0);
        CHECK_OK(wd__mm(&g, WD__MM_FWD, 999999, M, N, K, 0, A, B, NULL, 0, C));
        CHECK(gemm_error(&c, C, NULL, NULL) <= 1);
        int kb = 0;
        for (int k = 1; k < K; k++) if (fabsf(A[k] * B[k]) > fabsf(A[kb] * B[kb])) kb = k;
        C[0] -= A[kb] * B[kb];   // entry (0, 0): A row 0 . W row 0
        double e = gemm_error(&c, C, NULL, NULL);
        printf("  one term of 429 left out: %.3g x the bound\n", e);
        CHECK(e > 1);
    }
    wd__gemm_free(&g);
#else
    // wd__sgemm: the MLP's three (ta, tb) uses with their alpha/beta, and (1, 1) with other alpha/beta
    static const struct { int ta, tb; float alpha, beta; const char *what; } uses[] = {
        {0, 1, 1.0f, 1.0f, "forward x W^T onto the bias"}, {1, 0, 1.0f, 1.0f, "weight grad dz^T a, accumulated"},
        {0, 0, 1.0f, 0.0f, "input grad dz W, overwriting"}, {1, 1, 0.5f, -0.5f, "A^T B^T, alpha 0.5, beta -0.5"},
        {0, 0, -2.0f, 1.0f, "A B, alpha -2, beta 1"}};
    int nuses = (int)(sizeof uses / sizeof uses[0]);
    for (int si = 0; si < NGD * NGD * NGD; si++) {
        int M = gdims[si / (NGD * NGD)], N = gdims[(si / NGD) % NGD], K = gdims[si % NGD];
        if ((double)M * N * K > 429.0 * 429 * 17) continue;   // time (ASan): 121 of the 125 shapes
        for (int u = 0; u < nuses; u++) {
            gcase c = {M, N, K, uses[u].ta, uses[u].tb, uses[u].alpha, uses[u].beta, A, B, C0, NULL, 0, 0.0};
            fill(A, (size_t)M * K, &r, 0.3);
            fill(B, (size_t)K * N, &r, 0.0);
            fill(C0, (size_t)M * N, &r, 0.0);
            if (uses[u].beta == 0.0f) for (size_t q = 0; q < (size_t)M * N; q++) C0[q] = NAN;   // beta 0: C is not read
            memcpy(C, C0, 4 * (size_t)M * N);
            wd__sgemm(c.ta, c.tb, M, N, K, c.alpha, A, c.ta ? M : K, B, c.tb ? K : N, c.beta, C, N);
            double e = gemm_error(&c, C, NULL, NULL);
            cases++;
            if (!(e <= worst)) { worst = e; snprintf(wcase, sizeof wcase, "%s M=%d N=%d K=%d", uses[u].what, M, N, K); }
            if (!(e <= 1)) { bad++; if (bad < 6) printf("  %s M=%d N=%d K=%d: error %.3g x the bound\n", uses[u].what, M, N, K, e); }
        }
    }
    printf("  %s: %d products, worst %.3g of the bound (%s)\n", wd_gemm_engine_name(), cases, worst, wcase);
    {
        int M = 3, N = 17, K = 429;
        gcase c = {M, N, K, 0, 1, 1.0f, 0.0f, A, B, NULL, NULL, 0, 0.0};
        fill(A, (size_t)M * K, &r, 0.0);
        fill(B, (size_t)K * N, &r, 0.0);
        wd__sgemm(0, 1, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
        CHECK(gemm_error(&c, C, NULL, NULL) <= 1);
        int kb = 0;
        for (int k = 1; k < K; k++) if (fabsf(A[k] * B[k]) > fabsf(A[kb] * B[kb])) kb = k;
        C[0] -= A[kb] * B[kb];
        double e = gemm_error(&c, C, NULL, NULL);
        printf("  one term of 429 left out: %.3g x the bound\n", e);
        CHECK(e > 1);
    }
    (void)worst_lp; (void)cases_lp; (void)Ar; (void)Br; (void)Ah; (void)Bh;
#endif
    CHECK(bad == 0 && cases > 0);
    free(A); free(B); free(C); free(C0); free(bias); free(Ar); free(Br); free(Ah); free(Bh); free(Ch);
}

// ---- 4. bf16 against fp32 ----------------------------------------------------------------------
/* Catches: a bf16 path that computes a different gradient than fp32 does
   (a transposed or mis-strided bf16 product, a gradient scaled wrongly, a
   loss computed from other logits), a bf16 weight copy left stale by the
   update (after the step it must equal the updated weights rounded), and a
   bf16 path that is secretly fp32. One step (batch 512) from the same
   initial model in both precisions. With adagrad_init = 1 the
   first Adagrad step is w -= lr g / sqrt(1 + g^2), about lr g: the update
   is proportional to the gradient (with the default 0 it would be lr
   sign(g), blind to a gradient's scale). Tolerance: per MLP layer and for
   the embedding rows, |delta_bf16 - delta_fp32| / |delta_fp32| (2-norms)
   <= 0.1, and the loss within 0.5 %. bf16 keeps 8 significant bits
   (relative rounding 2^-9 = 0.2 % per input); the products sum hundreds of
   such terms in fp32 and the error grows through the layers, measured here
   at about 0.1-2 % (embeddings the most: their gradient passes through
   every layer's bf16 products). A gradient scaled by 2 is off by 100 %, a transposed
   one by about 140 %: the test checks both fail the same comparison.
   Without bf16 support (no oneDNN, or a CPU without AVX512-BF16/AMX) the
   library refuses with WD_ERR_UNSUPPORTED and a message naming what is
   missing; the test then SKIPs with that message. In a oneDNN build on a
   bf16 CPU, the refusal is checked too, in a child run with oneDNN capped
   at AVX512_CORE (ONEDNN_MAX_CPU_ISA). */
#define BF16_TOL 0.1
static double delta_err(const float *after_x, const float *after_ref, const float *init, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double dx = (double)after_x[i] - init[i], dr = (double)after_ref[i] - init[i];
        num += (dx - dr) * (dx - dr); den += dr * dr;
    }
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}
// The child of the refusal check: a bf16 model, one prediction; prints the status and message.
static int bf16_refusal_child(void) {
    wd_schema s;
    wd_model_desc d = base_desc(&s);
    d.precision = WD_PRECISION_BF16;
    wd_model *m = make_model(&d);
    if (!m) { printf("create failed: %s\n", wd_last_error()); return 2; }
    wd_batch b;
    wd_status st = load_rows(HELD, &b, 0, 4);
    if (st) { printf("load failed: %s\n", wd_last_error()); wd_model_destroy(m); return 2; }
    float p[4];
    st = wd_predict(m, &b, p);
    printf("status=%d predict: %s\n", (int)st, st ? wd_last_error() : "ok");
    wd_train_report rep;
    wd_status st2 = train(m, 1, 1, 64, &rep);
    printf("status=%d train: %s\n", (int)st2, st2 ? wd_last_error() : "ok");
#ifdef WD_USE_ONEDNN
    printf("isa=%s\n", wd__isa_name((int)dnnl_get_effective_cpu_isa()));   // what oneDNN made of the cap
#endif
    wd_batch_free(&b);
    wd_model_destroy(m);
    return 0;
}
static void test_bf16_step(void) {
    REQUIRE(ready);
    wd_schema s;
    wd_model_desc d = base_desc(&s);
    d.adagrad_init = 1.0f; d.lr_deep = 0.05f;
    wd_model *f = make_model(&d);
    d.precision = WD_PRECISION_BF16;
    wd_model *h = make_model(&d);
    REQUIRE(f && h);
    wd_model_view vf, vh;
    wd_model_view_get(f, &vf);
    wd_model_view_get(h, &vh);
    int64_t ne = vf.emb_rows * vf.E;
    // the same initial model in both precisions (parameters stay fp32)
    CHECK(memcmp(vf.dense, vh.dense, 4 * (size_t)vf.P) == 0 && memcmp(vf.emb, vh.emb, 4 * (size_t)ne) == 0);
    wd_train_report rf, rh;
    wd_status st = train(h, 2, 1, 512, &rh);
    if (st == WD_ERR_UNSUPPORTED) {
        char why[WD__ERR_MAX];
        snprintf(why, sizeof why, "%s", wd_last_error());
        // the message names what is missing: the engine or the CPU's instructions
        CHECK(strstr(why, "bf16") && (strstr(why, "oneDNN") || strstr(why, "AVX512-BF16")));
#ifdef WD_USE_ONEDNN
        CHECK(strstr(why, "AVX512-BF16") && strstr(why, "this one runs"));
#else
        CHECK(strstr(why, "oneDNN") && strstr(why, wd_gemm_engine_name()));
#endif
        // prediction refuses the same way
        wd_batch b;
        if (load_rows(HELD, &b, 0, 4) == WD_OK) {
            float p[4];
            CHECK(wd_predict(h, &b, p) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "bf16"));
            wd_batch_free(&b);
        }
        SKIP("%.250s", why);
        wd_model_destroy(f); wd_model_destroy(h);
        return;
    }
    CHECK_OK(st);
    float *init_d = (float *)malloc(4 * (size_t)vf.P), *init_e = (float *)malloc(4 * (size_t)ne);
    // (f was not trained yet: its arrays are the initial model)
    memcpy(init_d, vf.dense, 4 * (size_t)vf.P);
    memcpy(init_e, vf.emb, 4 * (size_t)ne);
    CHECK_OK(train(f, 2, 1, 512, &rf));
    wd_model_view_get(f, &vf);
    wd_model_view_get(h, &vh);
    CHECK(strstr(rh.engine, "precision=bf16") && strstr(rf.engine, "precision=fp32"));
    double lerr = fabs(rh.last_loss - rf.last_loss) / rf.last_loss;
    printf("  engine %s; loss fp32 %.6f, bf16 %.6f (rel %.2g)\n", rh.engine, rf.last_loss, rh.last_loss, lerr);
    CHECK(lerr < 5e-3);
    double worst = 0, least = INFINITY;
    for (int l = 0; l < vf.nlayers; l++) {
        int64_t w = vf.layer_w[l], n = (int64_t)vf.layer_in[l] * vf.layer_out[l];
        double ew = delta_err(vh.dense + w, vf.dense + w, init_d + w, n);
        double eb = delta_err(vh.dense + vf.layer_b[l], vf.dense + vf.layer_b[l], init_d + vf.layer_b[l], vf.layer_out[l]);
        printf("  layer %d (%d -> %d): weights' update off by %.3g, biases' by %.3g\n", l, vf.layer_in[l], vf.layer_out[l], ew, eb);
        worst = fmax(worst, fmax(ew, eb));
        least = fmin(least, ew);
    }
    double ee = delta_err(vh.emb, vf.emb, init_e, ne);
    printf("  embedding rows' update off by %.3g\n", ee);
    worst = fmax(worst, ee);
    CHECK(worst <= BF16_TOL);
    CHECK(least > 1e-5);   // bf16 rounding is visible: the products did run in bf16
    // the bf16 copy the next products (and wd_predict) read holds the updated weights, rounded
    uint16_t *lp = (uint16_t *)malloc(2 * (size_t)vh.P_mlp);
    wd__to_bf16(lp, vh.dense, (size_t)vh.P_mlp);
    CHECK(h->dense_lp && memcmp(lp, h->dense_lp, 2 * (size_t)vh.P_mlp) == 0);
    free(lp);
    // the tolerance rejects wrong gradients: every layer's update scaled by 2, or transposed
    float *wrong = (float *)malloc(4 * (size_t)vf.P);
    double w2 = INFINITY, wt = INFINITY;
    for (int l = 0; l < vf.nlayers; l++) {
        int64_t w = vf.layer_w[l], in = vf.layer_in[l], out = vf.layer_out[l];
        for (int64_t i = 0; i < in * out; i++) wrong[w + i] = init_d[w + i] + 2.0f * (vf.dense[w + i] - init_d[w + i]);
        w2 = fmin(w2, delta_err(wrong + w, vh.dense + w, init_d + w, in * out));
        if (in > 1 && out > 1) {   // the (out, in) update read as if it were (in, out)
            for (int64_t o = 0; o < out; o++)
                for (int64_t j = 0; j < in; j++) wrong[w + o * in + j] = init_d[w + o * in + j] + (vf.dense[w + j * out + o] - init_d[w + j * out + o]);
            wt = fmin(wt, delta_err(wrong + w, vh.dense + w, init_d + w, in * out));
        }
    }
    printf("  wrong updates against bf16's: scaled by 2 off by >= %.3g, transposed off by >= %.3g (tolerance %.2g)\n", w2, wt, BF16_TOL);
    CHECK(w2 > 4 * BF16_TOL && wt > 4 * BF16_TOL);
    free(wrong); free(init_d); free(init_e);
    wd_model_destroy(f); wd_model_destroy(h);
#ifdef WD_USE_ONEDNN
    // the refusal, on this bf16 CPU: a child with oneDNN capped below AVX512-BF16
    char cmd[2400], line[700], out[1400] = "";
    snprintf(cmd, sizeof cmd, "ONEDNN_MAX_CPU_ISA=AVX512_CORE '%s' --bf16-refusal-child '%s' 2>&1", self_exe, TMP);
    FILE *pp = popen(cmd, "r");
    REQUIRE(pp);
    while (fgets(line, sizeof line, pp)) if (strlen(out) + strlen(line) + 4 < sizeof out) { strcat(out, "    "); strcat(out, line); }
    int rc = pclose(pp);
    printf("  a child with ONEDNN_MAX_CPU_ISA=AVX512_CORE (exit %d):\n%s", rc, out);
    if (strstr(out, "isa=avx512_core_bf16") || strstr(out, "isa=avx512_core_amx")) {   // this oneDNN was built without the ISA cap
        printf("  (this oneDNN ignores ONEDNN_MAX_CPU_ISA: the refusal is not checked here)\n");
        return;
    }
    char want[64];
    snprintf(want, sizeof want, "status=%d predict: precision bf16 needs a CPU with AVX512-BF16", (int)WD_ERR_UNSUPPORTED);
    CHECK(rc == 0 && strstr(out, want) && strstr(out, "this one runs avx512_core"));
    snprintf(want, sizeof want, "status=%d train: precision bf16 needs", (int)WD_ERR_UNSUPPORTED);
    CHECK(strstr(out, want) != NULL);
#endif
}

// ---- 5. memory cap -------------------------------------------------------------------------------
/* Catches: a model larger than the memory the process may use being
   allocated anyway (then touched page by page: the OOM killer, or a hang in
   swap) instead of refused up front. In a forked child with an alarm()
   watchdog, under WD_MEMORY_LIMIT = 200 MB (read by wd__memory_left), a
   model of 1.93 GiB (26 tables of 2^20 rows) must fail creation with
   WD_ERR_NOMEM whose message names both sizes (the model's GiB, checked
   against the model's own arithmetic, and the GiB available, at most the
   cap), within 5 s. (Were it allocated, the child would train it on data of
   another schema and fail otherwise, or die of the 30 s alarm.) Without ASan (which reserves terabytes of address space) the
   same again with setrlimit(RLIMIT_AS) = current size + 300 MB. In the
   parent, a 130 MB model (above the 64 MiB from which sizes are checked)
   under the same 200 MB variable is created: the check does not refuse
   what fits. */
typedef struct cap_result { int st; double secs; char msg[600]; } cap_result;
static wd_model_desc big_desc(wd_schema *s, uint32_t buckets) {
    wd_model_desc d = base_desc(s);
    for (int k = 0; k < s->nslots; k++) s->slot[k].buckets = buckets;
    d.ncross = 0;
    return d;
}
// Expected bytes of a model made from d (fp32, Adagrad): 4 x (3 P + 3 wide rows + 2 emb rows x E).
static double model_bytes(const wd_model_desc *d) {
    wd_model *m = WD__NEW(wd_model);
    double bytes = -1;
    if (m && wd__model_plan(m, d) == WD_OK) bytes = 4.0 * (3.0 * m->P + 3.0 * m->wide_rows + 2.0 * m->emb_rows * m->E);
    wd__free(m);
    return bytes;
}
// Runs the over-cap creation (and, should it succeed, training) in a child; 0 when it reported.
static int capped_child(int use_rlimit, uint32_t buckets, cap_result *res) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        alarm(30);   // watchdog: a hang dies of SIGALRM
        if (use_rlimit) {
            long pages = 0, psz = sysconf(_SC_PAGESIZE);
            FILE *f = fopen("/proc/self/statm", "r");
            if (!f || fscanf(f, "%ld", &pages) != 1) _exit(3);
            fclose(f);
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)psz + ((rlim_t)300 << 20);
            if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
        } else setenv("WD_MEMORY_LIMIT", "200000000", 1);
        cap_result out;
        memset(&out, 0, sizeof out);
        wd_schema s;
        wd_model_desc d = big_desc(&s, buckets);
        double t0 = wd__now();
        wd_model *m = NULL;
        out.st = (int)wd_model_create(&d, &m);
        snprintf(out.msg, sizeof out.msg, "%.590s", out.st ? wd_last_error() : "created");
        if (!out.st) {   // it should not get here; train what was made, as a program would
            wd_train_report rep;
            out.st = (int)train(m, 1, 2, 256, &rep);
            snprintf(out.msg, sizeof out.msg, "created (%lld bytes), then training: %.450s", (long long)wd_model_bytes(m), out.st ? wd_last_error() : "ok");
        }
        out.secs = wd__now() - t0;
        if (write(fd[1], &out, sizeof out) != (ssize_t)sizeof out) _exit(4);
        _exit(0);   // no destructors, no leak check of the child
    }
    close(fd[1]);
    int status = 0, got = 0;
    double t0 = wd__now();
    while (!(got = waitpid(pid, &status, WNOHANG)) && wd__now() - t0 < 60) { struct timespec ts = {0, 20000000}; nanosleep(&ts, NULL); }
    if (!got) { kill(pid, SIGKILL); waitpid(pid, &status, 0); printf("  the child hung: killed after 60 s\n"); close(fd[0]); return -1; }
    ssize_t n = read(fd[0], res, sizeof *res);
    close(fd[0]);
    if (WIFSIGNALED(status)) { printf("  the child died of signal %d%s\n", WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (the 30 s watchdog: it hung)" : ""); return -1; }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n != (ssize_t)sizeof *res) { printf("  the child exited with %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1); return -1; }
    return 0;
}
static int check_cap_message(const cap_result *res, double want_bytes, double cap_bytes) {
    double need = -1, have = -1;
    const char *p = strstr(res->msg, "needs "), *q = strstr(res->msg, "has ");
    if (p) sscanf(p, "needs %lf GiB", &need);
    if (q) sscanf(q, "has %lf GiB", &have);
    int ok = res->st == WD_ERR_NOMEM && res->secs < 5.0 && fabs(need * 1073741824.0 - want_bytes) < 0.01 * want_bytes + 0.01 * 1073741824.0 &&
             have >= 0 && have * 1073741824.0 <= cap_bytes + 0.01 * 1073741824.0;
    printf("  %s after %.3f s: %s\n", wd_status_string((wd_status)res->st), res->secs, res->msg);
    if (!ok) printf("  expected out of memory within 5 s, naming %.2f GiB needed and at most %.2f GiB available\n", want_bytes / 1073741824.0, cap_bytes / 1073741824.0);
    return ok;
}
static void test_memory_cap(void) {
    REQUIRE(ready);
    uint32_t huge = 1u << 20;   // 26 tables of 2^20 rows, E = 8: 1.93 GiB
    wd_schema s;
    wd_model_desc d = big_desc(&s, huge);
    double want = model_bytes(&d);
    REQUIRE(want > 1e9);
    cap_result res;
    REQUIRE(capped_child(0, huge, &res) == 0);
    CHECK(check_cap_message(&res, want, 200e6));
    CHECK(strstr(res.msg, "table rows") != NULL);   // and says what it was making
#ifndef TE_ASAN
    memset(&res, 0, sizeof res);
    REQUIRE(capped_child(1, huge, &res) == 0);
    CHECK(check_cap_message(&res, want, 1e18));   // the available size is the rlimit's room (not known here exactly)
#else
    printf("  (the RLIMIT_AS variant is not run under ASan, which reserves terabytes of address space)\n");
#endif
    // what fits is made, under the same limit (when the machine has room for it)
    uint64_t avail = 0;
    if (wd__memory_left(&avail) || avail < 400000000u) { printf("  (the positive case needs 400 MB available: not run)\n"); return; }
    uint32_t fits = 1u << 16;   // 26 x 65536 rows: about 130 MB
    d = big_desc(&s, fits);
    want = model_bytes(&d);
    REQUIRE(want > 70e6 && want < 150e6);
    char *was = getenv("WD_MEMORY_LIMIT") ? strdup(getenv("WD_MEMORY_LIMIT")) : NULL;   // the caller's, put back after
    setenv("WD_MEMORY_LIMIT", "200000000", 1);
    wd_model *m = NULL;
    wd_status st = wd_model_create(&d, &m);
    if (was) setenv("WD_MEMORY_LIMIT", was, 1); else unsetenv("WD_MEMORY_LIMIT");
    free(was);
    printf("  a %.0f MB model under the same limit: %s\n", want / 1e6, st ? wd_last_error() : "created");
    CHECK_OK(st);
    wd_model_destroy(m);
}

// ---- 6. bf16 rounding and the fused hidden-layer gradient ----------------------------------------
/* Catches: a bf16 conversion that rounds ties away from zero or truncates,
   turns a NaN into an infinity, keeps a subnormal that the hardware
   instruction (VCVTNEPS2BF16, used when the CPU has it) flushes, or whose
   software path (array tails; CPUs without AVX512-BF16) disagrees with the
   hardware one: every sign and exponent with mantissas at the rounding
   boundaries, and 2^20 random patterns, against the rule spelled out here
   another way (upper half, then compare the lower half with one half). */
static uint16_t bf16_rule(uint32_t u) {
    uint32_t e = (u >> 23) & 0xff, up = u >> 16, lo = u & 0xffff;
    if (e == 0) return (uint16_t)(up & 0x8000);              // subnormal or zero: a zero of its sign
    if (e == 0xff && (u & 0x7fffff)) return (uint16_t)(up | 0x40);   // NaN: quiet, payload's top kept
    if (lo > 0x8000 || (lo == 0x8000 && (up & 1))) up++;     // to nearest, ties to even (may reach infinity)
    return (uint16_t)up;
}
static void test_bf16_rounding(void) {
    static const uint32_t mant[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, 0x10000, 0x17fff, 0x18000, 0x18001, 0x7f7fff, 0x7f8000, 0x7fffff, 0x400000, 0x3f8000};
    int nm = (int)(sizeof mant / sizeof mant[0]);
    size_t n = (size_t)512 * (size_t)nm + ((size_t)1 << 20) + 13;   // not a multiple of 16: the tail path too
    uint32_t *u = (uint32_t *)malloc(4 * n);
    uint16_t *hw = (uint16_t *)malloc(2 * n), *sw = (uint16_t *)malloc(2 * n);
    REQUIRE(u && hw && sw);
    size_t k = 0;
    for (uint32_t se = 0; se < 512; se++) for (int j = 0; j < nm; j++) u[k++] = se << 23 | mant[j];
    wd__rng r = {12345};
    while (k < n) u[k++] = (uint32_t)wd__rng_next(&r);
    wd__to_bf16(hw, (const float *)u, n);
    wd__to_bf16_sw(sw, (const float *)u, n);
    int64_t bad_hw = 0, bad_sw = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t want = bf16_rule(u[i]);
        if (hw[i] != want && bad_hw++ < 4) printf("  wd__to_bf16(%08x) = %04x, want %04x\n", u[i], hw[i], want);
        if (sw[i] != want && bad_sw++ < 4) printf("  wd__to_bf16_sw(%08x) = %04x, want %04x\n", u[i], sw[i], want);
    }
#ifdef WD__HAVE_BF16_AVX512
    const char *path = __builtin_cpu_supports("avx512bf16") ? "AVX512-BF16 instruction" : "software (no AVX512-BF16 here)";
#else
    const char *path = "software";
#endif
    printf("  %zu patterns: wd__to_bf16 (%s) %lld wrong, wd__to_bf16_sw %lld wrong\n", n, path, (long long)bad_hw, (long long)bad_sw);
    CHECK(bad_hw == 0);
    CHECK(bad_sw == 0);
    free(u); free(hw); free(sw);
}
/* Catches: a fused backward pass (wd__hidden_grad: ReLU', bias gradient,
   bf16 copy in one pass) that masks by the wrong array or with >= 0, sums a
   column out of row order (the bias gradient must be bit-identical to the
   plain loop's, so that 1 and N workers, and CPU and GPU references, stay
   comparable), adds into a bias gradient it should have left alone past
   `width`, drops the tail columns (widths 1 to 9, 17, 64), or writes the
   bf16 copy from the unmasked gradient, or reads the bf16 activations
   wrongly (shift, lanes; -0, NaN and subnormal values among them). Exact
   comparison with plain loops. */
static void test_hidden_grad(void) {
    static const int widths[] = {1, 2, 3, 4, 5, 7, 8, 9, 17, 64};
    static const int rows[] = {1, 3, 8, 13};
    wd__rng r = {99};
    int cases = 0;
    for (int wi = 0; wi < (int)(sizeof widths / sizeof widths[0]); wi++)
        for (int ri = 0; ri < (int)(sizeof rows / sizeof rows[0]); ri++)
            for (int mode = 0; mode < 4; mode++) {   // bit 0: the bf16 copy; bit 1: bf16 activations (a16)
                int withlp = mode & 1, use16 = mode >> 1;
                int W = widths[wi], n = rows[ri];
                size_t N = (size_t)n * (size_t)W;
                float *d = (float *)malloc(4 * N), *a = (float *)malloc(4 * N), *dref = (float *)malloc(4 * N);
                float gb[65], gref[65];
                uint16_t *lp = (uint16_t *)malloc(2 * N), *lref = (uint16_t *)malloc(2 * N), *a16 = (uint16_t *)malloc(2 * N);
                REQUIRE(d && a && dref && lp && lref && a16);
                for (size_t q = 0; q < N; q++) {
                    d[q] = dref[q] = (float)(2.0 * wd__rng_uniform(&r) - 1.0) * 1e-3f;
                    double v = wd__rng_uniform(&r);
                    a[q] = v < 0.3 ? 0.0f : v < 0.5 ? -(float)v : (float)v;   // zeros, negatives, positives
                    if (q % 7 == 3) a[q] = -0.0f;
                    if (q % 11 == 5) a[q] = 1e-39f;   // subnormal: a zero in bf16, so no gradient there
                    if (q % 13 == 6) a[q] = NAN;
                    if (use16) { a16[q] = bf16_of(a[q]); a[q] = f32_of_bf16(a16[q]); }   // the reference masks by the bf16 values
                }
                for (int o = 0; o < 65; o++) gb[o] = gref[o] = (float)o * 0.25f;
                for (int i = 0; i < n; i++)
                    for (int o = 0; o < W; o++) {
                        size_t at = (size_t)i * (size_t)W + (size_t)o;
                        dref[at] = a[at] > 0.0f ? dref[at] : 0.0f;
                        gref[o] += dref[at];
                    }
                wd__to_bf16_sw(lref, dref, N);
                wd__hidden_grad(d, use16 ? NULL : a, use16 ? a16 : NULL, gb, withlp ? lp : NULL, n, W);
                int bad = memcmp(d, dref, 4 * N) != 0 || memcmp(gb, gref, sizeof gb) != 0 || (withlp && memcmp(lp, lref, 2 * N) != 0);
                if (bad) printf("  width %d rows %d%s%s: differs from the plain loop\n", W, n, withlp ? ", bf16 copy" : "", use16 ? ", bf16 activations" : "");
                CHECK(!bad);
                cases++;
                free(d); free(a); free(dref); free(lp); free(lref); free(a16);
            }
    printf("  %d shapes, bit-identical to the plain loops\n", cases);
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--bf16-refusal-child") == 0) {
        snprintf(TMP, sizeof TMP, "%s", argv[2]);
        snprintf(DATA, sizeof DATA, "%s/engine-train.wdr", TMP);
        snprintf(HELD, sizeof HELD, "%s/engine-held.wdr", TMP);
        return bf16_refusal_child();
    }
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n > 0) self_exe[n] = 0;
    RUN(test_setup);
    RUN(test_concurrent_predict);
    RUN(test_predictor);
    RUN(test_multiworker_determinism);
    RUN(test_gemm_vs_reference);
    RUN(test_bf16_step);
    RUN(test_memory_cap);
    RUN(test_bf16_rounding);
    RUN(test_hidden_grad);
    return test_summary("test_engine");
}
