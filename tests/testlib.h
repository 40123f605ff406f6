// A tiny test harness: RUN(fn) runs a test function; CHECK records failures
// with file:line; each test ends in one "PASS name", "FAIL name" or
// "SKIP name: why" line, which tests/run.sh counts.
// tests/run.sh expects exactly one result line per RUN( written in main() of
// the test's source, then test_summary()'s "# name: ..." line: write each
// RUN(test) once, directly in main (not in a loop or under an if; a test that
// cannot run says SKIP), and end main with `return test_summary("name");`,
// name being the source file's name without .c. A binary that prints fewer
// results or no summary (it crashed, or a test vanished) fails.
// A CHECK that fails in main outside any RUN (setup) makes test_summary
// return 1, so the binary fails even when every test passed.
#ifndef WD_TESTLIB_H
#define WD_TESTLIB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tl_fails, tl_skipped, tl_passed, tl_failed, tl_skips, tl_outside;
static char tl_skip_why[256];

#define CHECK(cond) do { if (!(cond)) { tl_fails++; printf("  check failed: %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_OK(expr) do { wd_status tl_st = (expr); if (tl_st != WD_OK) { tl_fails++; printf("  check failed: %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr, wd_status_string(tl_st), wd_last_error()); } } while (0)
// REQUIRE: a check that ends the test at once when it fails (setup, or a
// value every later check depends on): the test then reports FAIL, never a
// PASS that checked nothing.
#define REQUIRE(cond) do { if (!(cond)) { tl_fails++; printf("  required check failed: %s:%d: %s\n", __FILE__, __LINE__, #cond); return; } } while (0)
#define REQUIRE_OK(expr) do { wd_status tl_st = (expr); if (tl_st != WD_OK) { tl_fails++; printf("  required check failed: %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr, wd_status_string(tl_st), wd_last_error()); return; } } while (0)
#define SKIP(...) do { tl_skipped = 1; snprintf(tl_skip_why, sizeof tl_skip_why, __VA_ARGS__); } while (0)
// checks that failed since the last test ended: in main, outside any RUN
#define TL_OUTSIDE() do { if (tl_fails) { printf("  %d check(s) failed in main, outside any test\n", tl_fails); tl_outside += tl_fails; tl_fails = 0; } } while (0)
#define TL_RUN(fn) do { \
        TL_OUTSIDE(); tl_skipped = 0; fflush(stdout); fn(); \
        if (tl_fails) { printf("FAIL %s (%d checks)\n", #fn, tl_fails); tl_failed++; } \
        else if (tl_skipped) { printf("SKIP %s: %s\n", #fn, tl_skip_why); tl_skips++; } \
        else { printf("PASS %s\n", #fn); tl_passed++; } \
        tl_fails = 0; fflush(stdout); \
    } while (0)
#define RUN(fn) TL_RUN(fn)   // a test file may redefine RUN to select tests (tests/test_gpu.cu)

static inline int file_exists(const char *path) { FILE *f = fopen(path, "rb"); if (f) fclose(f); return f != NULL; }

// Writes text to path (replacing it): 0, or -1 when it could not.
static inline int tl_spit(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}
// A whole file in memory (caller frees); NULL if it cannot be read.
static inline unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = (unsigned char *)malloc((size_t)sz + 1);
    *n = fread(p, 1, (size_t)sz, f);
    fclose(f);
    return p;
}

#ifdef WIDEDEEP_H
// A wd_gen file of `rows` samples from row `first` (the planted model's
// probabilities beside it, path.prob).
static inline wd_status tl_gen(const char *path, int64_t rows, int64_t first, uint64_t seed, int max_card, int block) {
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = path; g.rows = rows; g.first_row = first; g.seed = seed; g.max_card = max_card; g.block_samples = block;
    char prob[400];
    snprintf(prob, sizeof prob, "%s.prob", path);
    g.prob = prob;
    return wd_gen(&g, NULL);
}
// Every sample of the .wdr at path, in file order, into *all (made here for
// cap samples); its schema into *schema when given.
static inline wd_status tl_read_all(const char *path, wd_batch *all, int cap, wd_schema *schema) {
    wd_reader *r;
    wd_status st0 = wd_reader_open(path, &r);
    if (st0) return st0;
    if (schema) *schema = *wd_reader_schema(r);
    wd_status st = wd_batch_init(all, wd_reader_schema(r), cap, 0);
    for (int64_t i = 0; !st && i < wd_reader_nblocks(r); i++) {
        const wd_batch *blk;
        st = wd_reader_block(r, i, &blk);
        if (!st) st = wd_batch_append(all, blk, 0, blk->n);
    }
    wd_reader_close(r);
    return st;
}
// Whether message s holds `what` (saying so when it does not).
static inline int tl_has(const char *s, const char *what) {
    if (!strstr(s, what)) { printf("  message \"%s\" lacks \"%s\"\n", s, what); return 0; }
    return 1;
}
// A model for a wd_gen file (E 4, MLP 16-8, a cross of slots 2 and 5 into
// 1000 buckets, seed 7); NULL (and a failed check) when the data cannot be
// opened or the model not made: callers REQUIRE it.
static inline wd_model *tl_criteo_model(int optimizer, const char *data) {
    wd_reader *r = NULL;
    wd_model *m = NULL;
    CHECK_OK(wd_reader_open(data, &r));
    if (!r) return NULL;
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = wd_reader_schema(r);
    d.embed_dim = 4;
    d.hidden[0] = 16; d.hidden[1] = 8;
    d.optimizer = optimizer;
    d.ncross = 1; d.cross[0][0] = 2; d.cross[0][1] = 5;
    d.cross_buckets = 1000;
    d.seed = 7;
    CHECK_OK(wd_model_create(&d, &m));
    wd_reader_close(r);
    return m;
}
// A communicator between "processes" whose abort reaches no other process
// (as between processes over NCCL), wrapping `in` (e.g. rank r of
// wd_comm_local_create): only the votes of the start-up agreement, of a
// step's tail (WD_STEP_TAIL) and of a validation's gather can end the
// others before the timeout.
typedef struct tl_deaf { wd_comm self; wd_comm *in; int aborts; } tl_deaf;   // aborts: calls of its abort (which reaches nobody)
static inline wd_comm *tl_deaf_in(wd_comm *c) { return ((tl_deaf *)c->impl)->in; }
static inline wd_status tl_deaf_allreduce(wd_comm *c, float *b, size_t n) { return tl_deaf_in(c)->ops->allreduce_sum(tl_deaf_in(c), b, n); }
static inline wd_status tl_deaf_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    return tl_deaf_in(c)->ops->allgather(tl_deaf_in(c), mine, bytes, all, sizes);
}
static inline wd_status tl_deaf_barrier(wd_comm *c) { return tl_deaf_in(c)->ops->barrier(tl_deaf_in(c)); }
static inline void tl_deaf_abort(wd_comm *c, wd_status st, const char *why) { (void)st; (void)why; ((tl_deaf *)c->impl)->aborts++; }
// dc's communicator: rank `in->rank` of `in->size` (returned)
static inline wd_comm *tl_deaf_init(tl_deaf *dc, wd_comm *in) {
    static const wd_comm_ops ops = {tl_deaf_allreduce, tl_deaf_allgather, tl_deaf_barrier, tl_deaf_abort, NULL, NULL, NULL};
    dc->in = in;
    dc->aborts = 0;
    dc->self.ops = &ops; dc->self.rank = in->rank; dc->self.size = in->size; dc->self.impl = dc;
    return &dc->self;
}
#endif
// A predicting thread (pthread_create(..., tl_predict_loop, &arg)): with a
// predictor of max_batch (-1: wd_predict each call) it scores `fixed` (np <=
// 256 samples) until *stop (or `most` calls, 0: no limit), and counts each
// result that equals one of the nwant <= 64 expected rows (want, np floats
// each) in hits[], the others in bad; a failing call ends it with st.
typedef struct tl_pred {
    wd_model *m; const wd_batch *fixed; volatile int *stop; int max_batch, most;
    const float *want; int nwant, np;
    int hits[64]; int bad, n; wd_status st;
} tl_pred;
static inline void *tl_predict_loop(void *p) {
    tl_pred *a = (tl_pred *)p;
    float out[256];
    wd_predictor *pr = NULL;
    wd_predictor_desc pd = {a->max_batch, 0};
    if (a->max_batch >= 0 && (a->st = wd_predictor_create(a->m, &pd, &pr)) != WD_OK) return NULL;
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE) && (!a->most || a->n < a->most)) {
        wd_status st = pr ? wd_predictor_run(pr, a->fixed, out) : wd_predict(a->m, a->fixed, out);
        if (st) { a->st = st; break; }
        int j = 0;
        while (j < a->nwant && memcmp(out, a->want + (size_t)j * (size_t)a->np, sizeof(float) * (size_t)a->np)) j++;
        if (j == a->nwant) a->bad++;
        else a->hits[j]++;
        a->n++;
    }
    wd_predictor_destroy(pr);
    return NULL;
}
#ifdef WIDEDEEP_IMPLEMENTATION
// Parameters and optimizer state, bit for bit, and the step.
static inline int tl_params_equal(const wd_model *a, const wd_model *b) {
    int64_t ne = a->emb ? a->emb_rows * a->E : 0;
    return a->P == b->P && a->wide_rows == b->wide_rows && a->step == b->step &&
           !memcmp(a->dense, b->dense, 4 * (size_t)a->P) && !memcmp(a->dense_s1, b->dense_s1, 4 * (size_t)a->P) && !memcmp(a->dense_s2, b->dense_s2, 4 * (size_t)a->P) &&
           !memcmp(a->wide, b->wide, 4 * (size_t)a->wide_rows) && !memcmp(a->wide_z, b->wide_z, 4 * (size_t)a->wide_rows) && !memcmp(a->wide_n, b->wide_n, 4 * (size_t)a->wide_rows) &&
           (!ne || (!memcmp(a->emb, b->emb, 4 * (size_t)ne) && !memcmp(a->emb_s1, b->emb_s1, 4 * (size_t)ne))) &&
           (!a->emb_s2 || !memcmp(a->emb_s2, b->emb_s2, 4 * (size_t)ne));
}
#endif

static int test_summary(const char *name) {
    TL_OUTSIDE();
    printf("# %s: %d passed, %d failed, %d skipped\n", name, tl_passed, tl_failed, tl_skips);
    return tl_failed || tl_outside ? 1 : 0;
}
#endif
