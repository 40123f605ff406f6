/* Serving latency: p50 / p99 of one request (a batch of 1 or 256 samples)
   from 1 and 4 caller threads, each with its own wd_predictor on one shared
   const model, for the GEMM engine's thread settings a server can choose:
     predictor threads=1   the default: each call on its caller's thread
     predictor threads=N   the engine's OpenMP team of N (= cores) in every call
     wd_predict            the simple form (a predictor made and freed per call)
   The model is the training benchmarks' shape: Criteo's 13 dense + 26 one-hot
   slots of BUCKETS rows, E = 16, MLP 1024-512-256, a wide part (its weights
   set to small random values, so that it counts). Every malloc of the process
   (the library's and oneDNN's: this file interposes malloc) is counted during
   the timed calls of the predictors.
   With an output directory it also writes the model's weights and the
   requests as raw arrays, the probabilities it computed, and the model as
   model.wdm, for bench/peer_predict.py (the same model in PyTorch) and
   bench/peer_onnx.py (`wd export --onnx` of model.wdm in ONNX Runtime),
   each checked against these probabilities. bench/predict_bench.sh runs
   the three, one after the other.
   Build: make build/predict_bench, or cc -O2 -DWD_USE_ONEDNN -o predict_bench bench/predict_bench.c -lzstd -lz -lpthread -lm -ldnnl -lgomp
   Usage: predict_bench [OUTDIR] [BUCKETS] [SECONDS_PER_ROW] [BATCH,CALLERS]
   (the last: only that request size and caller count's rows) */
#define _GNU_SOURCE
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// ---- every allocation of the process, counted while `counting`
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static int counting;
static long nallocs;
static void note(void) { if (__atomic_load_n(&counting, __ATOMIC_RELAXED)) __atomic_add_fetch(&nallocs, 1, __ATOMIC_RELAXED); }
void *malloc(size_t n) { note(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { note(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { note(); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) { note(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { note(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    note();
    void *p = __libc_memalign(a, n);
    if (!p) return 12;   // ENOMEM
    *out = p;
    return 0;
}

#define D 13
#define S 26
#define NREQ 4096                   // distinct requests' samples
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec; }
static int64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static void die(const char *what) { fprintf(stderr, "predict_bench: %s: %s\n", what, wd_last_error()); exit(1); }

typedef struct job {
    const wd_model *m;
    const wd_batch *req;            // NREQ samples; request r is samples [r*batch, r*batch+batch) mod NREQ
    int batch, mode, threads;       // mode 0: predictor, 1: wd_predict
    int64_t *deadline_ns;           // set by the main thread once every caller is warm
    double *lat;                    // latencies (s)
    int n, cap;
    pthread_barrier_t *go;
} job;
static void *caller(void *arg) {
    job *j = (job *)arg;
    wd_predictor *p = NULL;
    wd_predictor_desc pd = {256, j->threads};
    if (j->mode == 0 && wd_predictor_create(j->m, &pd, &p)) die("wd_predictor_create");
    wd_batch b;
    if (wd_batch_init(&b, wd_model_schema(j->m), j->batch, 0)) die("wd_batch_init");
    float prob[256];
    for (int r = 0, warm = 0;; r++) {
        wd_batch_clear(&b);
        int from = (r * j->batch) % (NREQ - j->batch);
        if (wd_batch_append(&b, j->req, from, j->batch)) die("wd_batch_append");
        if (r == 20 && !warm) { warm = 1; r = 0; pthread_barrier_wait(j->go); }   // warm, then together
        double t0 = now();
        wd_status st = j->mode == 0 ? wd_predictor_run(p, &b, prob) : wd_predict(j->m, &b, prob);
        double t1 = now();
        if (st) die("predict");
        if (!warm) continue;
        j->lat[j->n++] = t1 - t0;
        if (j->n == j->cap || now_ns() >= __atomic_load_n(j->deadline_ns, __ATOMIC_ACQUIRE)) break;
    }
    wd_predictor_destroy(p);
    wd_batch_free(&b);
    return NULL;
}
// One row: `callers` threads for `seconds`; prints p50, p99, requests/s, allocations per call.
static void row(const wd_model *m, const wd_batch *req, int batch, int callers, int mode, int threads, double seconds, const char *setting) {
    job j[4];
    pthread_t th[4];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)callers + 1);
    int64_t deadline = INT64_MAX;
    for (int c = 0; c < callers; c++) {
        memset(&j[c], 0, sizeof j[c]);
        j[c].m = m; j[c].req = req; j[c].batch = batch; j[c].mode = mode; j[c].threads = threads;
        j[c].cap = 1000000; j[c].lat = (double *)malloc(sizeof(double) * (size_t)j[c].cap); j[c].go = &go;
        j[c].deadline_ns = &deadline;
        pthread_create(&th[c], NULL, caller, &j[c]);
    }
    pthread_barrier_wait(&go);   // every caller warm (20 calls each)
    __atomic_store_n(&nallocs, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
    double t0 = now();
    __atomic_store_n(&deadline, now_ns() + (int64_t)(seconds * 1e9), __ATOMIC_RELEASE);
    for (int c = 0; c < callers; c++) pthread_join(th[c], NULL);
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
    double wall = now() - t0;
    int n = 0;
    for (int c = 0; c < callers; c++) n += j[c].n;
    double *all = (double *)malloc(sizeof(double) * (size_t)n);
    n = 0;
    for (int c = 0; c < callers; c++) { memcpy(all + n, j[c].lat, sizeof(double) * (size_t)j[c].n); n += j[c].n; free(j[c].lat); }
    qsort(all, (size_t)n, sizeof(double), cmpd);
    printf("widedeep  %-26s batch %3d  callers %d  p50 %8.3f ms  p99 %8.3f ms  %8.0f req/s  %9.0f samples/s  mallocs/call %.2f  (%d calls)\n",
           setting, batch, callers, 1e3 * all[n / 2], 1e3 * all[(size_t)(0.99 * (n - 1))], n / wall, n / wall * batch,
           (double)nallocs / n, n);
    fflush(stdout);
    free(all);
    pthread_barrier_destroy(&go);
}

static void put(const char *dir, const char *name, const void *p, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f)) { fprintf(stderr, "predict_bench: cannot write %s\n", path); exit(1); }
}

int main(int argc, char **argv) {
    const char *out = argc > 1 ? argv[1] : NULL;
    uint32_t buckets = argc > 2 ? (uint32_t)atol(argv[2]) : 100000;
    double secs = argc > 3 ? atof(argv[3]) : 2.0;
    int only_b = 0, only_c = 0;   // BATCH,CALLERS: that configuration's rows only
    if (argc > 4 && sscanf(argv[4], "%d,%d", &only_b, &only_c) != 2) { fprintf(stderr, "predict_bench: '%s' is not BATCH,CALLERS\n", argv[4]); return 2; }
    wd_schema s;
    wd_schema_criteo(&s, buckets);
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = &s; md.embed_dim = 16; md.seed = 7;   // hidden: the default 1024-512-256
    wd_model *mm;
    if (wd_model_create(&md, &mm)) die("wd_model_create");
    wd_model_view v;
    wd_model_view_get(mm, &v);
    uint64_t rng = 12345;
    for (int64_t i = 0; i < v.wide_rows; i++) { rng = rng * 6364136223846793005ull + 1442695040888963407ull; v.wide[i] = (float)((double)(rng >> 40) / (double)(1ull << 24) - 0.5) * 0.2f; }
    for (int j = 0; j <= D; j++) v.dense[v.P_mlp + j] = 0.01f * (float)(j - 6);
    const wd_model *m = mm;
    // NREQ request samples: counts through the dense rule, ids uniform in the tables
    wd_batch req;
    if (wd_batch_init(&req, &s, NREQ, 0)) die("wd_batch_init");
    for (int i = 0; i < NREQ; i++) {
        for (int j = 0; j < D; j++) { rng = rng * 6364136223846793005ull + 1442695040888963407ull; req.dense[i * D + j] = wd_count_feature((int64_t)(rng >> 54)); }
        for (int k = 0; k < S; k++) { rng = rng * 6364136223846793005ull + 1442695040888963407ull; req.ids[k][i] = (uint32_t)((rng >> 32) % buckets); }
        req.label[i] = 0; req.weight[i] = 1;
    }
    req.n = NREQ;
    char engine[200];
    wd__engine_describe(m, engine, sizeof engine);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("# model: 13 dense + 26 slots x %u rows, E 16, MLP 1024-512-256, wide; %s; %ld cores\n", buckets, engine, cores);
    if (out) {   // the model and the requests for the PyTorch peer, and our probabilities
        float *p = (float *)malloc(sizeof(float) * NREQ);
        if (wd_predict(m, &req, p)) die("wd_predict");
        char meta[512];
        int n = snprintf(meta, sizeof meta, "D %d\nS %d\nE %d\nbuckets %u\nhidden 1024,512,256\nnreq %d\n", D, S, v.E, buckets, NREQ);
        put(out, "meta.txt", meta, (size_t)n);
        for (int l = 0; l < v.nlayers; l++) {
            char name[64];
            snprintf(name, sizeof name, "w%d.f32", l);
            put(out, name, v.dense + v.layer_w[l], sizeof(float) * (size_t)v.layer_in[l] * (size_t)v.layer_out[l]);
            snprintf(name, sizeof name, "b%d.f32", l);
            put(out, name, v.dense + v.layer_b[l], sizeof(float) * (size_t)v.layer_out[l]);
        }
        put(out, "wide_dense.f32", v.dense + v.P_mlp, sizeof(float) * (D + 1));
        put(out, "emb.f32", v.emb, sizeof(float) * (size_t)(v.emb_rows * v.E));
        put(out, "wide.f32", v.wide, sizeof(float) * (size_t)v.wide_rows);
        put(out, "dense.f32", req.dense, sizeof(float) * NREQ * D);
        uint32_t *ids = (uint32_t *)malloc(sizeof(uint32_t) * NREQ * S);
        for (int i = 0; i < NREQ; i++) for (int k = 0; k < S; k++) ids[i * S + k] = req.ids[k][i];
        put(out, "ids.u32", ids, sizeof(uint32_t) * NREQ * S);
        put(out, "probs.f32", p, sizeof(float) * NREQ);
        char path[4096];   // the model itself, for `wd export --onnx` (bench/peer_onnx.py)
        snprintf(path, sizeof path, "%s/model.wdm", out);
        if (wd_model_save(m, path)) die("wd_model_save");
        free(ids); free(p);
    }
    char all[64];
    snprintf(all, sizeof all, "predictor threads=%ld", cores);
    static const int batches[2] = {1, 256}, callers[2] = {1, 4};
    for (int bi = 0; bi < 2; bi++)
        for (int ci = 0; ci < 2; ci++) {
            if (only_b && (batches[bi] != only_b || callers[ci] != only_c)) continue;
            row(m, &req, batches[bi], callers[ci], 0, 1, secs, "predictor threads=1");
            row(m, &req, batches[bi], callers[ci], 0, (int)cores, secs, all);
            row(m, &req, batches[bi], callers[ci], 1, 1, secs, "wd_predict (simple form)");
        }
    wd_batch_free(&req);
    wd_model_destroy(mm);
    return 0;
}
