// wd_train against the reference step of tests/ref.h (written from the
// header's formulas): every parameter and optimizer-state array and the
// reported loss after one and two steps, for both deep optimizers with FTRL,
// default and non-default settings, sum and mean pooling, with and without a
// cross, the wide or the deep part alone, 1 and 3 workers. Then weighted
// AUC and log loss by brute force against wd_auc, wd_logloss, wd_evaluate.
// Usage: test_ref [TMPDIR]
// the implementation is linked in (tests/impl.c); this file uses the declarations only
#define WIDEDEEP_INTERNAL   // wd_model_view (tests/ref.h), wd_cross_bucket: the header's tier 3
#include "../widedeep.h"
#include "testlib.h"
#include "ref.h"
#include <math.h>

static char TMP[200] = "/tmp";

/* Tolerances. An element of a tensor (a layer's weights, a layer's
   biases, the wide dense weights, the wide bias, one slot's or one cross's
   table: ref_segments in ref.h) passes when
       |got - ref| <= TOL_RMS * rms(ref tensor) + TOL_REL * |ref|.
   The library computes in float (eps 6e-8), the reference in double. After
   one or two steps on 10-sample batches the honest differences are a few
   float roundings: at most 8e-7 of the tensor's RMS over every run here
   (0.08 of the tolerance: each run prints its worst), with 1 or 3 workers
   (other summation orders). 1e-5 leaves a 12x margin for that. A 1% error
   fails as soon as it moves a compared value by 1e-3 of its tensor's RMS:
   every step here moves weights by lr = 1e-3..0.1 against tensors' RMS of
   0.01..0.9, and the states are g^2 and g sums, so a learning rate, l2, a
   bias correction or a whole gradient 1% off fails by 6x to 10^4x
   (test_detects_errors), and so does any single gradient element that is at
   least a quarter of its tensor's RMS gradient (most down to a hundredth:
   test_detects_each_gradient_element). Smaller elements can hide: their 1%
   is below the rounding noise of the tensor. TOL_REL (16 float ulps) covers
   elements much larger than their tensor's RMS. The reported loss is
   compared relatively (TOL_LOSS; worst seen 0.01 of it). */
#define TOL_RMS 1e-5
#define TOL_REL 1e-6
#define TOL_LOSS 1e-5       // relative, for the reported loss (float sums in the library)

// ---- data ------------------------------------------------------------------------
#define NB 10               // samples per step = block = batch
#define NSTEPS 2
#define NDENSE 3

// dense column 0 carries a code; the map callback turns it into a weight
static const float WEIGHT_OF_CODE[8] = {1.0f, 0.0f, 2.5f, 0.5f, 1.0f, 3.0f, 0.25f, 1.5f};
static int code_of(float v) { return (int)lrintf((v + 1.0f) * 4.0f); }   // v = code/4 - 1
static float value_of_code(int code) { return (float)code * 0.25f - 1.0f; }

// Files carry no weights: every sample decodes with weight 1. This map gives
// each sample the weight of its code (deterministic, so the reference can
// apply it to its own copy of the batch).
static wd_status weight_map(void *user, wd_batch *b, int worker) {
    (void)user; (void)worker;
    for (int i = 0; i < b->n; i++) {
        int c = code_of(b->dense[(size_t)i * (size_t)b->ndense]);
        if (c < 0 || c > 7) return WD_ERR_INVALID_ARG;
        b->weight[i] = WEIGHT_OF_CODE[c];
    }
    return WD_OK;
}
// For the evaluation tests: positives weigh nothing, so one class is absent.
static wd_status zero_positives_map(void *user, wd_batch *b, int worker) {
    (void)user; (void)worker;
    for (int i = 0; i < b->n; i++) b->weight[i] = b->label[i] > 0.0f ? 0.0f : 1.0f;
    return WD_OK;
}

// 3 dense columns; slots: u one-hot (5 buckets), m multi-hot (6), v one-hot (7).
static void make_schema(wd_schema *s) {
    memset(s, 0, sizeof *s);
    s->ndense = NDENSE;
    s->nslots = 3;
    const char *names[3] = {"u", "m", "v"};
    const uint32_t buckets[3] = {5, 6, 7};
    for (int k = 0; k < 3; k++) {
        snprintf(s->slot[k].name, WD_NAME_MAX, "%s", names[k]);
        s->slot[k].buckets = buckets[k];
        s->slot[k].kind = k == 1 ? WD_MULTI_HOT : WD_ONE_HOT;
    }
}

/* Two batches of NB samples. Ids repeat across samples (u has 5 buckets),
   inside one multi-hot sample ({2,2,4}, {3,3,3}), and multi-hot samples can
   be empty. Sample codes cycle 0..7 over the 20 samples, so weights 0 (codes
   1: samples 1, 9, 17), 0.25, 0.5, 1, 1.5, 2.5 and 3 all occur; id 5 of slot
   m is held in step 2 only by sample 17, of weight 0 (a row "seen" with a
   zero gradient). One label is fractional (0.25). */
static const uint32_t U_IDS[NSTEPS][NB] = {{0, 1, 2, 0, 3, 0, 4, 1, 2, 0}, {1, 1, 3, 0, 2, 4, 0, 3, 1, 2}};
static const uint32_t V_IDS[NSTEPS][NB] = {{6, 2, 2, 5, 0, 1, 2, 3, 6, 4}, {0, 2, 5, 5, 1, 6, 3, 4, 2, 2}};
static const int M_COUNT[NSTEPS][NB] = {{3, 0, 1, 2, 1, 3, 0, 3, 1, 3}, {2, 1, 0, 3, 1, 0, 2, 1, 2, 2}};
static const uint32_t M_IDS[NSTEPS][20] = {{2, 2, 4, /**/ /**/ 1, /**/ 0, 5, /**/ 2, /**/ 3, 3, 3, /**/ /**/ 4, 1, 4, /**/ 1, /**/ 0, 2, 2},
                                           {0, 1, /**/ 2, /**/ /**/ 3, 1, 3, /**/ 4, /**/ /**/ 0, 2, /**/ 5, /**/ 4, 4, /**/ 1, 3}};
static const float LABELS[NSTEPS][NB] = {{1, 0, 1, 1, 0, 0, 1, 0.25f, 0, 1}, {0, 1, 1, 0, 0, 1, 0, 1, 1, 0}};

static int make_batches(wd_batch b[NSTEPS], const wd_schema *s) {
    uint64_t lcg = 12345;
    for (int t = 0; t < NSTEPS; t++) {
        if (wd_batch_init(&b[t], s, NB, 64) != WD_OK) return -1;
        int o = 0;
        for (int i = 0; i < NB; i++) {
            int g = t * NB + i;
            b[t].label[i] = LABELS[t][i];
            b[t].weight[i] = 1.0f;
            b[t].dense[i * NDENSE + 0] = value_of_code(g % 8);
            for (int j = 1; j < NDENSE; j++) {
                lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
                b[t].dense[i * NDENSE + j] = (float)((double)(lcg >> 11) / 9007199254740992.0 * 2.0 - 1.0);
            }
            b[t].ids[0][i] = U_IDS[t][i];
            b[t].ids[2][i] = V_IDS[t][i];
            for (int j = 0; j < M_COUNT[t][i]; j++) b[t].ids[1][o + j] = M_IDS[t][o + j];
            o += M_COUNT[t][i];
            b[t].offs[1][i + 1] = (uint32_t)o;
        }
        b[t].n = NB;
    }
    return 0;
}

// The batches written to `path` as one block each (block_samples = NB).
static wd_status write_batches(const char *path, const wd_schema *s, const wd_batch *b, int nb) {
    wd_writer_desc wdsc;
    memset(&wdsc, 0, sizeof wdsc);
    wdsc.block_samples = NB;
    wd_writer *w;
    wd_status st = wd_writer_open(path, s, &wdsc, &w);
    if (st) return st;
    for (int t = 0; t < nb; t++) {
        st = wd_writer_append(w, &b[t]);
        if (st) { wd_writer_abort(w); return st; }
    }
    return wd_writer_close(w);
}

typedef struct fixture {
    wd_schema schema;
    wd_batch raw[NSTEPS];       // as written (weight 1)
    wd_batch mapped[NSTEPS];    // after weight_map: what each training step sees
    char path[300];
} fixture;

static void fixture_free(fixture *f) {
    for (int t = 0; t < NSTEPS; t++) { wd_batch_free(&f->raw[t]); wd_batch_free(&f->mapped[t]); }
}
// Builds the batches, writes them, checks the file holds one block per step.
static int fixture_make(fixture *f, const char *name) {
    memset(f, 0, sizeof *f);
    make_schema(&f->schema);
    if (make_batches(f->raw, &f->schema) != 0 || make_batches(f->mapped, &f->schema) != 0) { printf("  cannot build batches\n"); return -1; }
    for (int t = 0; t < NSTEPS; t++) weight_map(NULL, &f->mapped[t], 0);
    snprintf(f->path, sizeof f->path, "%s/%s.wdr", TMP, name);
    wd_status st = write_batches(f->path, &f->schema, f->raw, NSTEPS);
    if (st) { printf("  writing %s: %s\n", f->path, wd_last_error()); return -1; }
    wd_reader *r;
    if (wd_reader_open(f->path, &r) != WD_OK) { printf("  %s\n", wd_last_error()); return -1; }
    int ok = wd_reader_nblocks(r) == NSTEPS;
    for (int t = 0; ok && t < NSTEPS; t++) ok = wd_reader_block_samples(r, t) == NB;
    wd_reader_close(r);
    if (!ok) { printf("  %s does not hold %d blocks of %d samples\n", f->path, NSTEPS, NB); return -1; }
    // the weights the map gives: a 0 and several non-unit ones in each step
    int zeros = 0, nonunit = 0;
    for (int t = 0; t < NSTEPS; t++)
        for (int i = 0; i < NB; i++) { zeros += f->mapped[t].weight[i] == 0.0f; nonunit += f->mapped[t].weight[i] != 1.0f; }
    if (zeros < 2 || nonunit < 8) { printf("  weights: %d zero, %d non-unit\n", zeros, nonunit); return -1; }
    return 0;
}

// ---- configurations ------------------------------------------------------------------
typedef struct cfg {
    int optimizer;              // WD_ADAGRAD / WD_ADAM
    int tuned;                  // 0: documented defaults; 1: non-zero adagrad_init, ftrl_beta/l1/l2, other lrs (and Adam betas, eps)
    int pooling;
    int cross;                  // 1: crosses u x v and v x u
    int no_wide, no_deep;
    int threads;
    int steps;
} cfg;

static void cfg_name(const cfg *c, char *out, size_t n) {
    snprintf(out, n, "%s+ftrl %s %s %s%s%s T=%d steps=%d", c->optimizer == WD_ADAM ? "adam" : "adagrad",
             c->tuned ? "tuned  " : "default", c->pooling == WD_POOL_MEAN ? "mean" : "sum ", c->cross ? "cross   " : "no-cross",
             c->no_wide ? " no_wide" : "", c->no_deep ? " no_deep" : "", c->threads, c->steps);
}

static void cfg_desc(const cfg *c, const wd_schema *s, wd_model_desc *d) {
    memset(d, 0, sizeof *d);
    d->schema = s;
    d->embed_dim = 4;
    d->hidden[0] = 8; d->hidden[1] = 6;
    d->optimizer = c->optimizer;
    d->pooling = c->pooling;
    d->emb_init = 0.3f;             // embeddings large enough to matter
    d->seed = 3;                    // every hidden unit active on some sample, no sample with a dead top layer (checked)
    d->no_wide = c->no_wide;
    d->no_deep = c->no_deep;
    if (c->cross) {                 // u x v, and v x u (another salt, the ids swapped)
        d->ncross = 2;
        d->cross[0][0] = 0; d->cross[0][1] = 2;
        d->cross[1][0] = 2; d->cross[1][1] = 0;
        d->cross_buckets = 11;
    }
    if (c->tuned) {
        d->lr_deep = c->optimizer == WD_ADAM ? 0.003f : 0.02f;
        d->lr_wide = 0.1f;
        d->adagrad_init = 0.01f;
        d->ftrl_beta = 0.5f;
        d->ftrl_l1 = 0.01f;
        d->ftrl_l2 = 0.3f;
        if (c->optimizer == WD_ADAM) { d->adam_beta1 = 0.8f; d->adam_beta2 = 0.99f; d->adam_eps = 1e-6f; }
    }
}

static void train_desc(const cfg *c, wd_train_desc *td, const char *const *files) {
    memset(td, 0, sizeof *td);
    td->files = files;
    td->nfiles = 1;
    td->batch_size = NB;
    td->threads = c->threads;
    td->max_steps = c->steps;
    td->no_shuffle = 1;
    td->map = weight_map;
    td->loader_ram = 1 << 20;
}

// The result of one comparison, kept for the caller's checks.
typedef struct outcome {
    ref_report rep;
    double loss_got, loss_ref, loss_ratio;
    int ok;                     // every array and the loss within tolerance
} outcome;

static void print_outcome(const char *name, const outcome *o) {
    int a = o->rep.arg;
    printf("  %-52s worst %.3g of tol (%s[%lld])  loss %.3g of tol (%.7f vs %.7f)%s\n", name, o->rep.overall, ref_array_name(a),
           (long long)o->rep.at[a], o->loss_ratio, o->loss_got, o->loss_ref, o->ok ? "" : "  MISMATCH");
}

// A model for c, its reference copy (taken before training), trained
// c->steps steps by wd_train. Returns 0; -1 when setup failed (reported).
static int train_and_copy(const fixture *f, const cfg *c, wd_model **out, ref_model *r, wd_train_report *rep) {
    wd_model_desc d;
    cfg_desc(c, &f->schema, &d);
    wd_model *m = NULL;
    wd_status st = wd_model_create(&d, &m);
    if (st) { printf("  wd_model_create: %s\n", wd_last_error()); return -1; }
    wd_model_view v;
    wd_model_view_get(m, &v);
    char why[400];
    if (ref_from_view(r, &v, why, sizeof why) != 0) { printf("  ref_from_view: %s\n", why); wd_model_destroy(m); return -1; }
    const char *files[1] = {f->path};
    wd_train_desc td;
    train_desc(c, &td, files);
    st = wd_train(m, &td, rep);
    if (st) { printf("  wd_train: %s\n", wd_last_error()); ref_free(r); wd_model_destroy(m); return -1; }
    if (rep->steps != c->steps || *v.step != c->steps) {
        printf("  wd_train ran %lld steps (position %lld), not %d\n", (long long)rep->steps, (long long)*v.step, c->steps);
        ref_free(r); wd_model_destroy(m); return -1;
    }
    *out = m;
    return 0;
}

static void compare(const ref_model *r, wd_model *m, double loss_got, double loss_ref, outcome *o) {
    wd_model_view v;
    wd_model_view_get(m, &v);
    ref_compare_view(r, &v, TOL_RMS, TOL_REL, &o->rep);
    o->loss_got = loss_got;
    o->loss_ref = loss_ref;
    double err = fabs(loss_got - loss_ref), tol = TOL_LOSS * fabs(loss_ref);
    o->loss_ratio = !isfinite(loss_got) || !isfinite(loss_ref) ? INFINITY : err == 0 ? 0 : tol > 0 ? err / tol : INFINITY;
    o->ok = o->rep.overall <= 1.0 && o->loss_ratio <= 1.0 && r->step == *v.step;
}

// Trains c with wd_train and the reference; compares. 0 when the run and
// the comparison happened (o filled), -1 when setup failed.
static int run_cfg(const fixture *f, const cfg *c, outcome *o) {
    wd_model *m;
    ref_model r;
    wd_train_report rep;
    if (train_and_copy(f, c, &m, &r, &rep) != 0) return -1;
    double loss = NAN;
    int rc = 0;
    for (int t = 0; t < c->steps && rc == 0; t++) rc = ref_step(&r, &f->mapped[t], &loss);
    if (rc != 0) { printf("  ref_step failed\n"); ref_free(&r); wd_model_destroy(m); return -1; }
    compare(&r, m, rep.last_loss, loss, o);
    ref_free(&r);
    wd_model_destroy(m);
    return 0;
}

// Every combination of pooling x cross x threads x steps for one setting.
static void sweep(const char *file, int optimizer, int tuned, int no_wide, int no_deep) {
    fixture f;
    REQUIRE(fixture_make(&f, file) == 0);
    int runs = 0;
    for (int pool = 0; pool < 2; pool++)
        for (int cross = 0; cross < 2; cross++)
            for (int ti = 0; ti < 2; ti++)
                for (int steps = 1; steps <= 2; steps++) {
                    cfg c = {optimizer, tuned, pool, cross, no_wide, no_deep, ti ? 3 : 1, steps};
                    char name[120];
                    cfg_name(&c, name, sizeof name);
                    outcome o;
                    if (run_cfg(&f, &c, &o) != 0) { tl_fails++; printf("  %s: setup failed\n", name); continue; }
                    print_outcome(name, &o);
                    CHECK(o.ok);
                    runs++;
                }
    CHECK(runs == 16);
    fixture_free(&f);
}

// ---- tests -------------------------------------------------------------------------------

// The reference's own layout and cross hash agree with the library's view
// (a disagreement here would make every later comparison meaningless).
static void test_layout_and_cross_hash(void) {
    wd_schema s;
    make_schema(&s);
    int configs = 0;
    for (int nw = 0; nw < 2; nw++)
        for (int nd = 0; nd < 2; nd++) {
            if (nw && nd) continue;
            cfg c = {nw ? WD_ADAM : WD_ADAGRAD, 0, 0, 1, nw, nd, 1, 1};
            wd_model_desc d;
            cfg_desc(&c, &s, &d);
            wd_model *m;
            REQUIRE_OK(wd_model_create(&d, &m));
            wd_model_view v;
            wd_model_view_get(m, &v);
            ref_model r;
            char why[400] = "";
            int rc = ref_from_view(&r, &v, why, sizeof why);
            if (rc) printf("  no_wide=%d no_deep=%d: %s\n", nw, nd, why);
            CHECK(rc == 0);
            if (rc == 0) {
                // copied exactly
                ref_report rep;
                CHECK(ref_compare_view(&r, &v, 0.0, 0.0, &rep) == 0.0);
                ref_free(&r);
                configs++;
            }
            wd_model_destroy(m);
        }
    CHECK(configs == 3);
    // the data exercises the deep part: every hidden unit is active on some
    // sample, and every sample reaches the deep logit through some unit
    {
        fixture f;
        REQUIRE(fixture_make(&f, "cover") == 0);
        cfg c = {WD_ADAGRAD, 0, 0, 1, 0, 0, 1, 1};
        wd_model_desc d;
        cfg_desc(&c, &f.schema, &d);
        wd_model *m;
        REQUIRE_OK(wd_model_create(&d, &m));
        wd_model_view v;
        wd_model_view_get(m, &v);
        ref_model r;
        char why[400];
        REQUIRE(ref_from_view(&r, &v, why, sizeof why) == 0);
        ref_work w;
        REQUIRE(ref_work_init(&w, &r) == 0);
        int active[2][64] = {{0}}, dead_top = 0;
        REQUIRE(r.nlayers == 3 && r.layer_out[0] <= 64 && r.layer_out[1] <= 64);
        for (int t = 0; t < NSTEPS; t++)
            for (int i = 0; i < NB; i++) {
                ref_forward(&r, &w, &f.mapped[t], i);
                int any = 0;
                for (int l = 0; l < 2; l++) for (int o = 0; o < r.layer_out[l]; o++) active[l][o] |= w.act[l][o] > 0;
                for (int o = 0; o < r.layer_out[1]; o++) any |= w.act[1][o] > 0;
                dead_top += !any;
            }
        int never = 0;
        for (int l = 0; l < 2; l++) for (int o = 0; o < r.layer_out[l]; o++) never += !active[l][o];
        printf("  coverage: %d hidden units never active, %d samples with a dead top layer\n", never, dead_top);
        CHECK(never == 0 && dead_top == 0);
        ref_work_free(&w);
        ref_free(&r);
        wd_model_destroy(m);
        fixture_free(&f);
    }
    // the documented hash against the library's, over pairs and crosses
    uint64_t x = 99;
    int n = 0, same = 0;
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 2000; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t a = (uint32_t)(x >> 32), b = (uint32_t)x, buckets = i % 3 == 0 ? 11u : i % 3 == 1 ? (1u << 20) : 4294967291u;
            if (i < 16) { a = (uint32_t)i; b = (uint32_t)(i * 7); }
            same += ref_cross_bucket(a, b, c, buckets) == wd_cross_bucket(a, b, c, buckets);
            n++;
        }
    printf("  cross bucket: %d of %d agree with the documented formula\n", same, n);
    CHECK(same == n);
    // a value from the formula by hand: mix64((3<<32|5) ^ 1*golden) % 2^32
    uint64_t k = (3ull << 32 | 5ull) ^ 0x9E3779B97F4A7C15ull;
    k ^= k >> 30; k *= 0xbf58476d1ce4e5b9ull; k ^= k >> 27; k *= 0x94d049bb133111ebull; k ^= k >> 31;
    CHECK(ref_cross_bucket(3, 5, 0, 0xFFFFFFFFu) == (uint32_t)(k % 0xFFFFFFFFull));
}

// The comparison itself: float rounding passes, 1% anywhere fails, NaN fails.
static void test_comparator(void) {
    enum { N = 64 };
    double want[N];
    float got[N];
    for (int i = 0; i < N; i++) { want[i] = sin(i * 0.7) * (i % 5 ? 0.3 : 2.0); got[i] = (float)want[i]; }
    int64_t at;
    double r = ref_compare_array(got, want, N, TOL_RMS, TOL_REL, &at);
    printf("  float rounding: %.3g of tol\n", r);
    CHECK(r <= 0.1);
    for (int i = 0; i < N; i++) {
        float keep = got[i];
        got[i] = (float)(want[i] * 1.01);
        double ri = ref_compare_array(got, want, N, TOL_RMS, TOL_REL, &at);
        // an element 1% off fails unless it is tiny against the array's RMS
        if (fabs(want[i]) > 1e-3) CHECK(ri > 1.0 && at == i);
        got[i] = keep;
    }
    got[7] = NAN;
    CHECK(isinf(ref_compare_array(got, want, N, TOL_RMS, TOL_REL, &at)) && at == 7);
    got[7] = (float)want[7];
    want[9] = NAN;
    CHECK(isinf(ref_compare_array(got, want, N, TOL_RMS, TOL_REL, &at)) && at == 9);
    // an all-zero reference array must be matched exactly
    double zeros[4] = {0, 0, 0, 0};
    float fz[4] = {0, 0, 0, 0};
    CHECK(ref_compare_array(fz, zeros, 4, TOL_RMS, TOL_REL, &at) == 0.0);
    fz[2] = 1e-30f;
    CHECK(isinf(ref_compare_array(fz, zeros, 4, TOL_RMS, TOL_REL, &at)) && at == 2);
}

static void test_adagrad_ftrl_defaults(void) { sweep("agd", WD_ADAGRAD, 0, 0, 0); }
static void test_adagrad_ftrl_tuned(void) { sweep("agt", WD_ADAGRAD, 1, 0, 0); }
static void test_adam_ftrl_defaults(void) { sweep("add", WD_ADAM, 0, 0, 0); }
static void test_adam_ftrl_tuned(void) { sweep("adt", WD_ADAM, 1, 0, 0); }
// the deep part alone (no_wide), both optimizers, both settings
static void test_deep_only(void) {
    sweep("dpa", WD_ADAGRAD, 0, 1, 0);
    sweep("dpb", WD_ADAGRAD, 1, 1, 0);
    sweep("dpc", WD_ADAM, 0, 1, 0);
    sweep("dpd", WD_ADAM, 1, 1, 0);
}
// the wide part alone (no_deep: logistic regression with FTRL)
static void test_wide_only(void) {
    sweep("wda", WD_ADAGRAD, 0, 0, 1);
    sweep("wdb", WD_ADAGRAD, 1, 0, 1);
}

// The comparison catches errors: the same run against a reference that is
// wrong in one way must report a mismatch (and the right one must not).
typedef enum { P_NONE, P_LR_DEEP, P_LR_WIDE, P_EMB_GRAD_ONE, P_DENSE_GRAD_ALL, P_WIDE_GRAD_ONE, P_ADAM_STEP, P_L2, P_LOSS } perturbation;

static int run_perturbed(const fixture *f, const cfg *c, perturbation p, outcome *o) {
    wd_model *m;
    ref_model r;
    wd_train_report rep;
    if (train_and_copy(f, c, &m, &r, &rep) != 0) return -1;
    if (p == P_LR_DEEP) r.d.lr_deep *= 1.01;
    if (p == P_LR_WIDE) r.d.lr_wide *= 1.01;
    if (p == P_L2) r.d.ftrl_l2 *= 1.01;
    double loss = NAN;
    int rc = 0;
    for (int t = 0; t < c->steps && rc == 0; t++) {
        ref_grads g;
        if (ref_grads_init(&g, &r) != 0) { rc = -1; break; }
        rc = ref_gradients(&r, &f->mapped[t], &g);
        if (rc == 0) {
            if (p == P_EMB_GRAD_ONE) {   // the largest gradient element of slot m's table
                int64_t best = -1;
                for (int64_t i = r.table_off[1] * r.d.E; i < r.table_off[2] * r.d.E; i++)
                    if (best < 0 || fabs(g.emb[i]) > fabs(g.emb[best])) best = i;
                g.emb[best] *= 1.01;
            }
            if (p == P_WIDE_GRAD_ONE) {  // the last touched wide row
                for (int64_t row = r.wide_rows - 1; row >= 0; row--) if (g.wide_seen[row]) { g.wide[row] *= 1.01; break; }
            }
            if (p == P_DENSE_GRAD_ALL) for (int64_t i = 0; i < r.P; i++) g.dense[i] *= 1.01;
            if (p == P_ADAM_STEP && t == c->steps - 1) r.step++;   // bias correction one step late
            ref_apply(&r, &g);
            if (p == P_ADAM_STEP && t == c->steps - 1) r.step--;
            loss = g.loss;
        }
        ref_grads_free(&g);
    }
    if (p == P_LOSS) loss *= 1.01;
    if (rc == 0) compare(&r, m, rep.last_loss, loss, o);
    ref_free(&r);
    wd_model_destroy(m);
    return rc;
}

static void test_detects_errors(void) {
    fixture f;
    REQUIRE(fixture_make(&f, "det") == 0);
    struct { const char *what; perturbation p; cfg c; int mismatch_in; } cases[] = {
        // the right reference: no mismatch
        {"exact reference, adagrad default", P_NONE, {WD_ADAGRAD, 0, WD_POOL_SUM, 1, 0, 0, 1, 2}, -1},
        {"exact reference, adam tuned", P_NONE, {WD_ADAM, 1, WD_POOL_MEAN, 1, 0, 0, 3, 2}, -1},
        // the deep learning rate 1% high moves every MLP weight 1% of lr further
        {"lr_deep x1.01, adagrad default, 1 step", P_LR_DEEP, {WD_ADAGRAD, 0, WD_POOL_SUM, 0, 0, 0, 1, 1}, 0},
        {"lr_deep x1.01, adam default, 1 step", P_LR_DEEP, {WD_ADAM, 0, WD_POOL_SUM, 0, 0, 0, 1, 1}, 0},
        {"lr_wide x1.01, default, 1 step", P_LR_WIDE, {WD_ADAGRAD, 0, WD_POOL_SUM, 1, 0, 0, 1, 1}, 3},
        {"ftrl_l2 x1.01, tuned, 1 step", P_L2, {WD_ADAGRAD, 1, WD_POOL_SUM, 1, 0, 0, 1, 1}, 3},
        // with the defaults a first step moves by exactly +-lr: a gradient
        // scale error shows only in the state (acc = g^2), which is compared
        {"one emb gradient x1.01, adagrad default, 1 step", P_EMB_GRAD_ONE, {WD_ADAGRAD, 0, WD_POOL_SUM, 0, 0, 0, 1, 1}, 7},
        {"one emb gradient x1.01, adagrad tuned, 1 step", P_EMB_GRAD_ONE, {WD_ADAGRAD, 1, WD_POOL_MEAN, 0, 0, 0, 3, 1}, 6},
        {"one wide gradient x1.01, default, 1 step", P_WIDE_GRAD_ONE, {WD_ADAGRAD, 0, WD_POOL_SUM, 1, 0, 0, 1, 1}, 4},
        {"dense gradient x1.01, adagrad tuned, 1 step", P_DENSE_GRAD_ALL, {WD_ADAGRAD, 1, WD_POOL_SUM, 0, 0, 0, 1, 1}, 0},
        // Adam's step is invariant to the gradient's scale (but for eps): only v shows it
        {"dense gradient x1.01, adam default, 2 steps", P_DENSE_GRAD_ALL, {WD_ADAM, 0, WD_POOL_SUM, 0, 0, 0, 3, 2}, 2},
        {"adam bias correction at t+1, step 2", P_ADAM_STEP, {WD_ADAM, 0, WD_POOL_SUM, 0, 0, 0, 1, 2}, 0},
        {"reported loss x1.01", P_LOSS, {WD_ADAGRAD, 0, WD_POOL_SUM, 0, 0, 0, 1, 2}, -2},
    };
    int n = (int)(sizeof cases / sizeof cases[0]), ran = 0;
    for (int i = 0; i < n; i++) {
        outcome o;
        if (run_perturbed(&f, &cases[i].c, cases[i].p, &o) != 0) { tl_fails++; printf("  %s: setup failed\n", cases[i].what); continue; }
        ran++;
        print_outcome(cases[i].what, &o);
        int want = cases[i].mismatch_in;
        if (want == -1) CHECK(o.ok);
        else if (want == -2) CHECK(!o.ok && o.loss_ratio > 1.0 && o.rep.overall <= 1.0);
        else {
            CHECK(!o.ok);
            CHECK(o.rep.worst[want] > 1.0);
            if (o.rep.worst[want] <= 1.0) printf("    expected a mismatch in %s\n", ref_array_name(want));
        }
        // default settings, step 1: the embedding values themselves still match
        if (cases[i].p == P_EMB_GRAD_ONE && !cases[i].c.tuned) CHECK(o.rep.worst[6] <= 1.0);
    }
    CHECK(ran == n);
    fixture_free(&f);
}

// Section 13's initialisation, checked on a fresh model.
static void test_initialisation(void) {
    wd_schema s;
    make_schema(&s);
    int models = 0;
    for (int opt = 0; opt < 2; opt++) {
        cfg c = {opt ? WD_ADAM : WD_ADAGRAD, 1, 0, 1, 0, 0, 1, 1};   // tuned: adagrad_init 0.01
        wd_model_desc d;
        cfg_desc(&c, &s, &d);
        wd_model *m, *same, *other;
        REQUIRE_OK(wd_model_create(&d, &m));
        REQUIRE_OK(wd_model_create(&d, &same));
        d.seed = 4;
        REQUIRE_OK(wd_model_create(&d, &other));
        wd_model_view v, vs, vo;
        wd_model_view_get(m, &v);
        wd_model_view_get(same, &vs);
        wd_model_view_get(other, &vo);
        const wd_model_desc *md = v.desc;
        REQUIRE(v.nlayers == 3);
        double acc0 = opt ? 0.0 : md->adagrad_init;
        int bad = 0;
        for (int l = 0; l < v.nlayers; l++) {
            int in = v.layer_in[l], out = v.layer_out[l];
            double bound = l + 1 < v.nlayers ? sqrt(6.0 / in) : sqrt(6.0 / (in + 1));
            double mx = 0, ss = 0;
            for (int64_t i = 0; i < (int64_t)in * out; i++) {
                double w = v.dense[v.layer_w[l] + i];
                mx = fmax(mx, fabs(w));
                ss += w * w;
            }
            double sd = sqrt(ss / ((double)in * out));
            printf("  %s layer %d (%dx%d): max |w| %.4f, rms %.4f; bound %.4f (uniform rms %.4f)\n", opt ? "adam" : "adagrad", l, out, in, mx, sd, bound, bound / sqrt(3.0));
            bad += mx > bound * (1 + 1e-6) || mx < 0.5 * bound;
            if ((int64_t)in * out >= 40) bad += fabs(sd / (bound / sqrt(3.0)) - 1) > 0.3;
            for (int o = 0; o < out; o++) bad += v.dense[v.layer_b[l] + o] != 0.0f;
        }
        for (int64_t i = 0; i < v.P; i++) {
            int mlp = i < v.P_mlp;
            bad += v.dense_s1[i] != (float)(mlp ? acc0 : 0.0);
            bad += v.dense_s2[i] != 0.0f;
            if (!mlp) bad += v.dense[i] != 0.0f;                   // wide dense weights and bias
        }
        for (int64_t i = 0; i < v.wide_rows; i++) bad += v.wide[i] != 0.0f || v.wide_z[i] != 0.0f || v.wide_n[i] != 0.0f;
        double emx = 0;
        int64_t ne = v.emb_rows * v.E;
        for (int64_t i = 0; i < ne; i++) {
            emx = fmax(emx, fabs(v.emb[i]));
            bad += v.emb_s1[i] != (float)acc0;
            if (opt) bad += v.emb_s2[i] != 0.0f;
        }
        printf("  %s embeddings: max |e| %.4f, emb_init %.4f\n", opt ? "adam" : "adagrad", emx, (double)md->emb_init);
        bad += emx > md->emb_init * (1 + 1e-6) || emx < 0.8 * md->emb_init;
        CHECK(bad == 0);
        // deterministic from the seed
        CHECK(memcmp(v.dense, vs.dense, sizeof(float) * (size_t)v.P) == 0 && memcmp(v.emb, vs.emb, sizeof(float) * (size_t)ne) == 0);
        CHECK(memcmp(v.dense, vo.dense, sizeof(float) * (size_t)v.P) != 0 && memcmp(v.emb, vo.emb, sizeof(float) * (size_t)ne) != 0);
        wd_model_destroy(m);
        wd_model_destroy(same);
        wd_model_destroy(other);
        models++;
    }
    CHECK(models == 2);
}

// The defaults section 13 documents for a description of zeros (the
// reference takes its settings from the filled description, so they are
// checked here against the header's words).
static void test_documented_defaults(void) {
    wd_schema s;
    make_schema(&s);
    for (int opt = 0; opt < 2; opt++) {
        wd_model_desc d;
        memset(&d, 0, sizeof d);
        d.schema = &s;
        d.optimizer = opt ? WD_ADAM : WD_ADAGRAD;
        wd_model *m;
        REQUIRE_OK(wd_model_create(&d, &m));
        const wd_model_desc *f = wd_model_description(m);
        CHECK(f->embed_dim == 16);
        CHECK(f->hidden[0] == 1024 && f->hidden[1] == 512 && f->hidden[2] == 256 && f->hidden[3] == 0);
        CHECK(f->lr_deep == (opt ? 0.001f : 0.01f));
        CHECK(f->lr_wide == 0.05f);
        CHECK(f->ftrl_beta == 0 && f->ftrl_l1 == 0 && f->ftrl_l2 == 0 && f->adagrad_init == 0);
        CHECK(f->adam_beta1 == 0.9f && f->adam_beta2 == 0.999f && f->adam_eps == 1e-8f);
        CHECK(f->emb_init == 0.05f);
        CHECK(f->pooling == WD_POOL_SUM && f->cross_buckets == (1u << 20));
        CHECK(f->no_wide == 0 && f->no_deep == 0);
        wd_model_destroy(m);
    }
}

// wd_train called twice, one step each, continues where it stopped: the
// second call's Adam bias correction uses the global step 2.
static void test_two_calls_continue(void) {
    fixture f;
    REQUIRE(fixture_make(&f, "cont") == 0);
    int runs = 0;
    for (int k = 0; k < 2; k++) {
        cfg c = {k ? WD_ADAGRAD : WD_ADAM, k, WD_POOL_MEAN, 1, 0, 0, k ? 3 : 1, 1};
        char name[120];
        cfg_name(&c, name, sizeof name);
        wd_model *m;
        ref_model r;
        wd_train_report rep;
        REQUIRE(train_and_copy(&f, &c, &m, &r, &rep) == 0);   // call 1: max_steps 1
        double loss;
        REQUIRE(ref_step(&r, &f.mapped[0], &loss) == 0);
        outcome o;
        compare(&r, m, rep.last_loss, loss, &o);
        printf("  call 1 of 2, ");
        print_outcome(name, &o);
        CHECK(o.ok);
        const char *files[1] = {f.path};
        wd_train_desc td;
        c.steps = 2;
        cfg_name(&c, name, sizeof name);
        train_desc(&c, &td, files);
        REQUIRE_OK(wd_train(m, &td, &rep));                     // call 2: max_steps 2
        CHECK(rep.steps == 1);
        REQUIRE(ref_step(&r, &f.mapped[1], &loss) == 0);
        compare(&r, m, rep.last_loss, loss, &o);
        printf("  call 2 of 2, ");
        print_outcome(name, &o);
        CHECK(o.ok);
        ref_free(&r);
        wd_model_destroy(m);
        runs++;
    }
    CHECK(runs == 2);
    fixture_free(&f);
}

/* Each gradient element of a step alone, 1% off, in a reference replayed
   from the state before that step: the comparison with the trained model
   must fail for every element that is not negligible in its tensor (|g| at
   least DETECT_MIN of the RMS gradient of its layer, bias vector or table).
   Smaller elements may pass: their 1% moves nothing by 1e-5 of the scale. */
#define DETECT_MIN 0.25
static void detect_each(const fixture *f, const cfg *c) {
    char name[120];
    cfg_name(c, name, sizeof name);
    wd_model *m;
    ref_model r0;
    wd_train_report rep;
    REQUIRE(train_and_copy(f, c, &m, &r0, &rep) == 0);
    double loss;
    for (int t = 0; t + 1 < c->steps; t++) REQUIRE(ref_step(&r0, &f->mapped[t], &loss) == 0);
    ref_grads g;
    REQUIRE(ref_grads_init(&g, &r0) == 0);
    REQUIRE(ref_gradients(&r0, &f->mapped[c->steps - 1], &g) == 0);
    wd_model_view v;
    wd_model_view_get(m, &v);
    ref_model r;
    ref_report rr;
    REQUIRE(ref_copy(&r, &r0) == 0);
    ref_apply(&r, &g);
    CHECK(ref_compare_view(&r, &v, TOL_RMS, TOL_REL, &rr) <= 1.0);   // unperturbed: passes
    ref_free(&r);
    int nonzero = 0, detected = 0, big = 0, missed = 0;
    double smallest_detected = INFINITY, largest_missed = 0;
    for (int fam = 0; fam < 3; fam++) {
        if (fam == 1 && r0.d.no_wide) continue;
        if (fam == 2 && r0.d.no_deep) continue;
        double *ga = fam == 0 ? g.dense : fam == 1 ? g.wide : g.emb;
        int64_t bounds[REF_MAX_SEGMENTS + 1];
        int nseg = ref_segments(&r0, fam == 0 ? REF_DENSE : fam == 1 ? REF_WIDE : REF_EMB, bounds);
        for (int j = 0; j < nseg; j++) {
            double ss = 0;
            for (int64_t i = bounds[j]; i < bounds[j + 1]; i++) ss += ga[i] * ga[i];
            double rms = bounds[j + 1] > bounds[j] ? sqrt(ss / (double)(bounds[j + 1] - bounds[j])) : 0;
            for (int64_t i = bounds[j]; i < bounds[j + 1]; i++) {
                if (ga[i] == 0.0) continue;
                nonzero++;
                double rel = fabs(ga[i]) / rms;
                REQUIRE(ref_copy(&r, &r0) == 0);
                double keep = ga[i];
                ga[i] *= 1.01;
                ref_apply(&r, &g);
                ga[i] = keep;
                int hit = ref_compare_view(&r, &v, TOL_RMS, TOL_REL, &rr) > 1.0;
                ref_free(&r);
                detected += hit;
                if (hit && rel < smallest_detected) smallest_detected = rel;
                if (!hit && rel > largest_missed) largest_missed = rel;
                if (rel >= DETECT_MIN) {
                    big++;
                    if (!hit) { missed++; if (missed <= 3) printf("    not detected: %s gradient %lld (%.3g of its tensor's RMS)\n", fam == 0 ? "dense" : fam == 1 ? "wide" : "emb", (long long)i, rel); }
                }
            }
        }
    }
    printf("  %-52s %d nonzero gradient elements, %d detected; all %d above %.2g of their tensor's RMS: %d missed (smallest detected %.3g, largest missed %.3g)\n",
           name, nonzero, detected, big, DETECT_MIN, missed, smallest_detected, largest_missed);
    CHECK(missed == 0);
    CHECK(nonzero > 100 && big > nonzero / 2);
    ref_grads_free(&g);
    ref_free(&r0);
    wd_model_destroy(m);
}

static void test_detects_each_gradient_element(void) {
    fixture f;
    REQUIRE(fixture_make(&f, "each") == 0);
    cfg cs[] = {
        {WD_ADAGRAD, 0, WD_POOL_SUM, 1, 0, 0, 1, 1},    // defaults, first step: only the states show a scale error
        {WD_ADAGRAD, 1, WD_POOL_MEAN, 1, 0, 0, 3, 2},
        {WD_ADAM, 0, WD_POOL_MEAN, 1, 0, 0, 1, 2},
        {WD_ADAM, 1, WD_POOL_SUM, 1, 0, 0, 3, 1},
    };
    for (int k = 0; k < (int)(sizeof cs / sizeof cs[0]); k++) detect_each(&f, &cs[k]);
    fixture_free(&f);
}

// ---- weighted metrics ---------------------------------------------------------------------

/* Weighted AUC by brute force: every sample i is a positive of weight
   y_i w_i and a negative of weight (1 - y_i) w_i; AUC = sum over (positive
   i, negative j) of pos_i neg_j ([s_i > s_j] + [s_i == s_j] / 2), divided
   by (sum pos)(sum neg); NaN when either sum is 0. (The header documents
   ties counted half and NaN for an absent class; fractional labels are this
   test's reading, the usual one.) */
static double brute_auc(const float *s, const float *y, const float *w, int n) {
    double num = 0, P = 0, N = 0;
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        P += y[i] * wi;
        N += (1.0 - y[i]) * wi;
        for (int j = 0; j < n; j++) {
            double wj = w ? w[j] : 1.0;
            double pair = (double)y[i] * wi * (1.0 - (double)y[j]) * wj;
            if (pair == 0) continue;
            if (s[i] > s[j]) num += pair;
            else if (s[i] == s[j]) num += 0.5 * pair;
        }
    }
    return P > 0 && N > 0 ? num / (P * N) : NAN;
}
static double brute_logloss(const float *p, const float *y, const float *w, int n) {
    double s = 0, ws = 0;
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        s += wi * -((double)y[i] * log((double)p[i]) + (1.0 - (double)y[i]) * log(1.0 - (double)p[i]));
        ws += wi;
    }
    return s / ws;
}
static int same_or_both_nan(double a, double b, double tol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return fabs(a - b) <= tol;
}

static void test_weighted_auc(void) {
    enum { N = 300 };
    float s[N], y[N], w[N], yf[N];
    uint64_t x = 4242;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        s[i] = (float)((x >> 40) % 23) * 0.125f - 1.0f;     // 23 distinct scores: many ties
        y[i] = (float)((x >> 20) % 3 == 0);
        w[i] = (x >> 8) % 7 == 0 ? 0.0f : (float)((x >> 12) % 9) * 0.375f + 0.125f;
        yf[i] = (float)((x >> 30) % 5) * 0.25f;              // 0, .25, .5, .75, 1
    }
    s[3] = -0.0f; s[4] = 0.0f; y[3] = 1; y[4] = 0;               // -0 ties +0
    s[5] = INFINITY; s[6] = -INFINITY;
    int cases = 0;
    struct { const char *what; const float *lab; const float *wt; int n; double tol; } c[] = {
        {"binary, weighted, ties and zero weights", y, w, N, 1e-12},
        {"binary, unweighted (NULL)", y, NULL, N, 1e-12},
        {"fractional labels, weighted", yf, w, N, 1e-6},       // label*weight rounds in float
        {"small: 40 samples", y, w, 40, 1e-12},
    };
    for (int k = 0; k < (int)(sizeof c / sizeof c[0]); k++) {
        double got = -1;
        REQUIRE_OK(wd_auc(s, c[k].lab, c[k].wt, c[k].n, &got));
        double want = brute_auc(s, c[k].lab, c[k].wt, c[k].n);
        printf("  %-45s wd_auc %.12f brute %.12f  diff %.2g\n", c[k].what, got, want, fabs(got - want));
        CHECK(isfinite(want) && same_or_both_nan(got, want, c[k].tol));
        cases++;
    }
    // weight 0 is the same as leaving the sample out
    float s2[N], y2[N], w2[N];
    int m = 0;
    for (int i = 0; i < N; i++) if (w[i] != 0.0f) { s2[m] = s[i]; y2[m] = y[i]; w2[m] = w[i]; m++; }
    double a1, a2;
    REQUIRE_OK(wd_auc(s, y, w, N, &a1));
    REQUIRE_OK(wd_auc(s2, y2, w2, m, &a2));
    CHECK(m < N && fabs(a1 - a2) <= 1e-12);
    // all scores tied: 0.5
    float flat[N];
    for (int i = 0; i < N; i++) flat[i] = 0.25f;
    REQUIRE_OK(wd_auc(flat, y, w, N, &a1));
    CHECK(fabs(a1 - 0.5) <= 1e-12);
    // perfect separation, and reversed
    float sep[N], rev[N];
    for (int i = 0; i < N; i++) { sep[i] = y[i] > 0 ? 1.0f + (float)i : -(float)i; rev[i] = -sep[i]; }
    REQUIRE_OK(wd_auc(sep, y, w, N, &a1));
    REQUIRE_OK(wd_auc(rev, y, w, N, &a2));
    CHECK(fabs(a1 - 1.0) <= 1e-12 && fabs(a2) <= 1e-12);
    // one class absent: NaN (all negative; all positive; positives of weight 0)
    float zero[N], one[N], wz[N];
    for (int i = 0; i < N; i++) { zero[i] = 0; one[i] = 1; wz[i] = y[i] > 0 ? 0.0f : w[i]; }
    double nz, no, nw;
    REQUIRE_OK(wd_auc(s, zero, w, N, &nz));
    REQUIRE_OK(wd_auc(s, one, w, N, &no));
    REQUIRE_OK(wd_auc(s, y, wz, N, &nw));
    printf("  one class absent: all negative %g, all positive %g, positives weigh 0 %g (brute %g)\n", nz, no, nw, brute_auc(s, y, wz, N));
    CHECK(isnan(nz) && isnan(no) && isnan(nw) && isnan(brute_auc(s, y, wz, N)));
    CHECK(cases == 4);
}

static void test_weighted_logloss(void) {
    enum { N = 200 };
    float p[N], y[N], w[N];
    uint64_t x = 777;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = 0.02f + 0.96f * (float)((x >> 40) % 1000) / 1000.0f;
        y[i] = i % 11 == 3 ? 0.25f : (float)((x >> 20) % 2);
        w[i] = i % 6 == 1 ? 0.0f : (float)((x >> 12) % 5) * 0.5f + 0.25f;
    }
    double got = wd_logloss(p, y, w, N), want = brute_logloss(p, y, w, N);
    printf("  weighted: wd_logloss %.12f brute %.12f\n", got, want);
    CHECK(fabs(got - want) <= 1e-10 * fabs(want));
    double gu = wd_logloss(p, y, NULL, N), wu = brute_logloss(p, y, NULL, N);
    printf("  unweighted: wd_logloss %.12f brute %.12f\n", gu, wu);
    CHECK(fabs(gu - wu) <= 1e-10 * fabs(wu));
    // a zero-weight sample that would dominate the loss changes nothing
    float p2[N];
    memcpy(p2, p, sizeof p);
    p2[1] = y[1] > 0.5f ? 1e-6f : 1.0f - 1e-6f;
    CHECK(w[1] == 0.0f && fabs(wd_logloss(p2, y, w, N) - got) <= 1e-12);
    CHECK(fabs(got - gu) > 1e-3);   // the weights matter here
}

// wd_evaluate with weights from the map: its predictions against the
// reference forward pass, its AUC and log loss against brute force over
// those predictions with the map's weights; wd_predict too.
static void test_evaluate_weighted(void) {
    fixture f;
    REQUIRE(fixture_make(&f, "eval") == 0);
    // a model trained two steps (non-zero wide weights, moved embeddings)
    cfg c = {WD_ADAGRAD, 1, WD_POOL_MEAN, 1, 0, 0, 1, 2};
    wd_model *m;
    ref_model r;
    wd_train_report rep;
    REQUIRE(train_and_copy(&f, &c, &m, &r, &rep) == 0);
    ref_free(&r);
    wd_model_view v;
    wd_model_view_get(m, &v);
    char why[400];
    REQUIRE(ref_from_view(&r, &v, why, sizeof why) == 0);
    // eval file: both batches, then batch 0 again with labels flipped (every
    // sample of it ties with a sample of the other class)
    enum { NE = 3 * NB };
    wd_batch eb[4];   // eb[0], eb[1]: the two batches; eb[2]: batch 0 again (eb[3] unused)
    wd_schema s;
    make_schema(&s);
    REQUIRE(make_batches(eb, &s) == 0);
    REQUIRE(make_batches(eb + 2, &s) == 0);
    for (int i = 0; i < NB; i++) eb[2].label[i] = 1.0f - eb[2].label[i];
    char path[300];
    snprintf(path, sizeof path, "%s/eval3.wdr", TMP);
    REQUIRE_OK(write_batches(path, &s, eb, 3));
    float pred[NE], lab[NE], wt[NE];
    double want[NE];
    for (int t = 0; t < 3; t++) {
        weight_map(NULL, &eb[t], 0);
        REQUIRE(ref_predict(&r, &eb[t], want + t * NB) == 0);
        for (int i = 0; i < NB; i++) { lab[t * NB + i] = eb[t].label[i]; wt[t * NB + i] = eb[t].weight[i]; }
    }
    const char *files[1] = {path};
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    ed.files = files; ed.nfiles = 1; ed.threads = 2; ed.batch_size = 7;
    ed.predictions = pred; ed.predictions_cap = NE;
    ed.map = weight_map;
    wd_metrics mt;
    for (int i = 0; i < NE; i++) pred[i] = NAN;
    REQUIRE_OK(wd_evaluate(m, &ed, &mt));
    CHECK(mt.samples == NE);
    // predictions: float forward against the double reference
    double ss = 0;
    for (int i = 0; i < NE; i++) ss += want[i] * want[i];
    double rms = sqrt(ss / NE), worst = 0;
    int wat = 0;
    for (int i = 0; i < NE; i++) {
        double e = fabs(pred[i] - want[i]) / (TOL_RMS * rms + TOL_REL * fabs(want[i]));
        if (!(e <= worst)) { worst = isnan(e) ? INFINITY : e; wat = i; }
    }
    printf("  predictions vs reference: worst %.3g of tol (sample %d: %.7f vs %.7f)\n", worst, wat, (double)pred[wat], want[wat]);
    CHECK(worst <= 1.0);
    int ties = 0;
    for (int i = 0; i < NB; i++) ties += pred[i] == pred[2 * NB + i] && lab[i] != lab[2 * NB + i];
    CHECK(ties >= NB - 1);   // the fractional label 0.25 flips to 0.75: still differs
    double auc = brute_auc(pred, lab, wt, NE), ll = brute_logloss(pred, lab, wt, NE);
    printf("  wd_evaluate auc %.12f brute %.12f; logloss %.12f brute %.12f\n", mt.auc, auc, mt.logloss, ll);
    CHECK(isfinite(auc) && fabs(mt.auc - auc) <= 1e-9);
    CHECK(fabs(mt.logloss - ll) <= 1e-9 * fabs(ll));
    // the weights mattered: unweighted metrics differ
    double auc1 = brute_auc(pred, lab, NULL, NE);
    CHECK(fabs(auc1 - auc) > 1e-6);
    // one class absent by weight: positives weigh 0
    ed.map = zero_positives_map;
    wd_metrics mz;
    REQUIRE_OK(wd_evaluate(m, &ed, &mz));
    float wz[NE];
    for (int i = 0; i < NE; i++) wz[i] = lab[i] > 0.0f ? 0.0f : 1.0f;
    double llz = brute_logloss(pred, lab, wz, NE);
    printf("  positives of weight 0: auc %g (want NaN); logloss %.12f brute %.12f\n", mz.auc, mz.logloss, llz);
    CHECK(isnan(mz.auc));
    CHECK(fabs(mz.logloss - llz) <= 1e-9 * fabs(llz));
    // wd_predict on each batch: the same numbers as evaluation
    float pp[NB];
    double pw = 0;
    for (int t = 0; t < 3; t++) {
        REQUIRE_OK(wd_predict(m, &eb[t], pp));
        for (int i = 0; i < NB; i++) {
            double e = fabs(pp[i] - want[t * NB + i]) / (TOL_RMS * rms + TOL_REL * fabs(want[t * NB + i]));
            if (!(e <= pw)) pw = isnan(e) ? INFINITY : e;
        }
    }
    printf("  wd_predict vs reference: worst %.3g of tol\n", pw);
    CHECK(pw <= 1.0);
    for (int t = 0; t < 4; t++) wd_batch_free(&eb[t]);
    ref_free(&r);
    wd_model_destroy(m);
    fixture_free(&f);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_layout_and_cross_hash);
    RUN(test_comparator);
    RUN(test_initialisation);
    RUN(test_documented_defaults);
    RUN(test_adagrad_ftrl_defaults);
    RUN(test_adagrad_ftrl_tuned);
    RUN(test_adam_ftrl_defaults);
    RUN(test_adam_ftrl_tuned);
    RUN(test_deep_only);
    RUN(test_wide_only);
    RUN(test_two_calls_continue);
    RUN(test_detects_errors);
    RUN(test_detects_each_gradient_element);
    RUN(test_weighted_auc);
    RUN(test_weighted_logloss);
    RUN(test_evaluate_weighted);
    return test_summary("test_ref");
}
