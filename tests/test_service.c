// A service's model over months: hot swaps under live predictors (each call
// sees the old model or the new one whole, none fails), swaps between
// online-learning runs, and the swap's refusals.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <pthread.h>
#include <unistd.h>
#include <math.h>

static char TMP[200] = "/tmp";
enum { N = 600, NP = 48, NV = 3, SWAPS = 100, THREADS = 4, BUCKETS = 64 };
static wd_schema g_schema;   // Criteo's layout with small tables: 100 models are made in a second under TSan
static wd_batch g_all;
static int g_ok;

static void test_setup(void) {
    g_ok = 0;
    wd_schema_criteo(&g_schema, BUCKETS);
    REQUIRE_OK(wd_batch_init(&g_all, &g_schema, N, 0));
    uint64_t r = 11;
    for (int i = 0; i < N; i++) {   // labels that the ids and dense values explain in part
        float z = 0;
        for (int j = 0; j < g_schema.ndense; j++) {
            float x = (float)((r = wd_mix64(r)) % 1000) / 250.0f;
            g_all.dense[i * g_schema.ndense + j] = x;
            z += j < 3 ? x - 2.0f : 0.0f;
        }
        for (int k = 0; k < g_schema.nslots; k++) {
            g_all.ids[k][i] = (uint32_t)((r = wd_mix64(r)) % BUCKETS);
            z += k < 4 && g_all.ids[k][i] < BUCKETS / 4 ? 1.0f : 0.0f;
        }
        g_all.label[i] = (float)((r = wd_mix64(r)) % 100) < 100.0f / (1.0f + expf(-z)) ? 1.0f : 0.0f;
        g_all.weight[i] = 1.0f;
    }
    g_all.n = N;
    g_ok = 1;
}
// Variant v of the model (E 4, MLP 16-8, a cross of slots 2 and 5, seed 7 + v;
// hidden0: the first layer's width, 0: 16); NULL after a failed check.
static wd_model *variant(int v, int hidden0) {
    wd_model *m = NULL;
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = &g_schema;
    d.embed_dim = 4;
    d.hidden[0] = hidden0 ? hidden0 : 16; d.hidden[1] = 8;
    d.optimizer = WD_ADAGRAD;
    d.ncross = 1; d.cross[0][0] = 2; d.cross[0][1] = 5;
    d.cross_buckets = 100;
    d.seed = 7 + (uint64_t)v;
    CHECK_OK(wd_model_create(&d, &m));
    return m;
}

// Pushes `count` batches of 100 of g_all (from its start) through a trainer
// of `threads` workers publishing every `publish_every` steps; *most (if
// given): the most threads the process had meanwhile (tasks()).
static int tasks(void);
static void push_batches(wd_model *m, int threads, int64_t publish_every, int count, int *most) {
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.batch_size = 100; td.threads = threads; td.publish_every = publish_every;
    wd_trainer *t = NULL;
    CHECK_OK(wd_trainer_open(m, &td, &t));
    wd_batch one;
    CHECK_OK(wd_batch_init(&one, wd_model_schema(m), 0, 0));
    for (int s = 0; t && s < count; s++) {
        one.n = 0;
        CHECK_OK(wd_batch_append(&one, &g_all, s * 100, 100));
        CHECK_OK(wd_trainer_push(t, &one));
        if (most) { int n = tasks(); *most = n > *most ? n : *most; }
    }
    if (t) CHECK_OK(wd_trainer_close(t, NULL));
    wd_trainer_free(t);
    wd_batch_free(&one);
}

// Training's share of the machine: a trainer with `threads` T runs T
// threads (its own, which is worker 0, and T - 1 workers) and nothing else:
// no GEMM engine team of its own (OpenMP's thread count is per thread: the
// workers set theirs to 1), whatever the machine's cores.
static int tasks(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f)) if (!strncmp(line, "Threads:", 8)) n = atoi(line + 8);
    if (f) fclose(f);
    return n;
}
static void *nothing(void *p) { return p; }
static void test_training_budget(void) {
    REQUIRE(g_ok);
    if (tasks() < 0) { SKIP("no /proc/self/status"); return; }
    pthread_t dummy;   // a first thread made and joined: a sanitizer's own thread (TSan's) starts with it
    if (pthread_create(&dummy, NULL, nothing, NULL) == 0) pthread_join(dummy, NULL);
    for (int threads = 1; threads <= 3; threads++) {
        wd_model *m = variant(0, 0);
        REQUIRE(m);
        int before = tasks(), most = 0;
        push_batches(m, threads, 2, 6, &most);
        printf("  threads %d: %d threads beside the caller's %d while training\n", threads, most - before, before);
        CHECK(most - before == threads);
        wd_model_destroy(m);
    }
}

// 4 threads predict (2 with predictors, max_batch 256 and 20: the batch in
// pieces; 2 with wd_predict) while the main thread swaps 100 times through 3
// variants: every result equals one variant's whole.
static float g_want[NV][NP];
static void test_swap_under_load(void) {
    REQUIRE(g_ok);
    wd_batch fixed;
    wd_model *m = variant(0, 0);
    REQUIRE(m);
    REQUIRE_OK(wd_batch_init(&fixed, wd_model_schema(m), NP, 0));
    CHECK_OK(wd_batch_append(&fixed, &g_all, N - NP, NP));
    for (int v = 0; v < NV; v++) {
        wd_model *x = variant(v, 0);
        REQUIRE(x);
        CHECK_OK(wd_predict(x, &fixed, g_want[v]));
        wd_model_destroy(x);
    }
    CHECK(memcmp(g_want[0], g_want[1], sizeof g_want[0]) && memcmp(g_want[1], g_want[2], sizeof g_want[0]));
    volatile int stop = 0;
    tl_pred args[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].m = m; args[i].fixed = &fixed; args[i].stop = &stop;
        args[i].want = &g_want[0][0]; args[i].nwant = NV; args[i].np = NP;
        args[i].max_batch = i < 2 ? -1 : i == 2 ? 0 : 20;
        CHECK(pthread_create(&th[i], NULL, tl_predict_loop, &args[i]) == 0);
    }
    int swapped = 0;
    for (int s = 1; s <= SWAPS; s++) {
        wd_model *next = variant(s % NV, 0);
        if (!next) break;
        wd_status st = wd_model_swap(m, next);
        CHECK_OK(st);
        if (st) { wd_model_destroy(next); break; }
        swapped++;
        if (s % 10 == 0) usleep(1000);   // let calls land on each model
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int total = 0, bad = 0, hits[NV] = {0};
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_OK(args[i].st);
        total += args[i].n; bad += args[i].bad;
        for (int j = 0; j < NV; j++) hits[j] += args[i].hits[j];
    }
    printf("  %d swaps under %d predictions from 4 threads: %d / %d / %d per variant, %d mixed or failed\n",
           swapped, total, hits[0], hits[1], hits[2], bad);
    CHECK(swapped == SWAPS && total > 0 && bad == 0);
    CHECK(hits[0] > 0 && hits[1] > 0 && hits[2] > 0);   // calls met more than one model
    // m is the last variant now, whole: parameters, description (seed), in place
    wd_model *last = variant(SWAPS % NV, 0);
    REQUIRE(last);
    CHECK(tl_params_equal(m, last));
    CHECK(wd_model_description(m)->seed == wd_model_description(last)->seed);
    float out[NP];
    CHECK_OK(wd_predict(m, &fixed, out));
    CHECK(!memcmp(out, g_want[SWAPS % NV], sizeof out));
    wd_model_destroy(last);
    wd_batch_free(&fixed);
    wd_model_destroy(m);
}

// Online learning, then a swap, then online learning again: predictions
// follow the published snapshot, then the swapped-in model, then the new
// run's snapshots; the swap frees the snapshot (the model reads in place).
static void test_swap_between_online_runs(void) {
    REQUIRE(g_ok);
    wd_model *m = variant(0, 0), *next = variant(1, 0), *twin = variant(1, 0);
    REQUIRE(m && next && twin);
    wd_batch fixed;
    REQUIRE_OK(wd_batch_init(&fixed, wd_model_schema(m), NP, 0));
    CHECK_OK(wd_batch_append(&fixed, &g_all, 0, NP));
    for (int run = 0; run < 2; run++) {
        push_batches(m, 2, 2, 3, NULL);
        CHECK(wd__published(m));
        if (run == 1) break;
        CHECK_OK(wd_model_swap(m, next));
        CHECK(!wd__published(m));   // the old model's snapshot freed
        float a[NP], b[NP];
        CHECK_OK(wd_predict(m, &fixed, a));
        CHECK_OK(wd_predict(twin, &fixed, b));
        CHECK(!memcmp(a, b, sizeof a));
        CHECK(m->step == 0);   // the swapped-in model's position
    }
    push_batches(twin, 2, 2, 3, NULL);   // the second run trained the swapped-in model: as the twin trains
    CHECK(tl_params_equal(m, twin));
    float a[NP], b[NP];
    CHECK_OK(wd_predict(m, &fixed, a));
    CHECK_OK(wd_predict(twin, &fixed, b));
    CHECK(!memcmp(a, b, sizeof a));
    wd_batch_free(&fixed);
    wd_model_destroy(m); wd_model_destroy(twin);
}

static int has(const char *s, const char *what) {
    if (strstr(s, what)) return 1;
    printf("  message \"%s\" lacks \"%s\"\n", s, what);
    return 0;
}
// Refusals leave both models as they were.
static void test_swap_refusals(void) {
    REQUIRE(g_ok);
    wd_model *m = variant(0, 0), *wide = variant(1, 32), *other = variant(2, 0);
    REQUIRE(m && wide && other);
    CHECK(wd_model_swap(NULL, other) == WD_ERR_INVALID_ARG);
    CHECK(wd_model_swap(m, NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_model_swap(m, m) == WD_ERR_INVALID_ARG && has(wd_last_error(), "is the served model"));
    CHECK(wd_model_swap(m, wide) == WD_ERR_SCHEMA && has(wd_last_error(), "layer 0: width 32, the served model's 16"));
    wd_model *fewer = NULL;
    {   // a slot with other buckets: the callers' ids would not fit
        wd_model_desc d = *wd_model_description(other);
        wd_schema s = *wd_model_schema(other);
        s.slot[3].buckets += 1;
        d.schema = &s;
        CHECK_OK(wd_model_create(&d, &fewer));
    }
    if (fewer) {
        CHECK(wd_model_swap(m, fewer) == WD_ERR_SCHEMA && has(wd_last_error(), "slot 3:"));
        wd_model_destroy(fewer);
    }
    wd_predictor *p = NULL;
    CHECK_OK(wd_predictor_create(other, NULL, &p));
    CHECK(wd_model_swap(m, other) == WD_ERR_INVALID_ARG && has(wd_last_error(), "predictors"));
    wd_predictor_destroy(p);
    {   // a next model checked with wd_predict first (its predictor gone) swaps in
        wd_model *checked = variant(2, 0), *sm = variant(0, 0);
        wd_batch one;
        float x[1], y[1];
        REQUIRE(checked && sm);
        CHECK_OK(wd_batch_init(&one, &g_schema, 1, 0));
        CHECK_OK(wd_batch_append(&one, &g_all, 0, 1));
        CHECK_OK(wd_predict(checked, &one, x));
        CHECK_OK(wd_model_swap(sm, checked));
        CHECK_OK(wd_predict(sm, &one, y));
        CHECK(x[0] == y[0]);
        wd_batch_free(&one);
        wd_model_destroy(sm);
    }
    wd_model *fresh = variant(0, 0);
    REQUIRE(fresh);
    CHECK(tl_params_equal(m, fresh));   // unchanged by the refusals
    wd_model_destroy(fresh);
    wd_model_destroy(m); wd_model_destroy(wide); wd_model_destroy(other);
}

// A model loaded for serving holds its weights and nothing else: from a
// checkpoint (wd_model_load_weights) or an export (wd_model_load); its
// predictions are the checkpoint's bit for bit, the peak of the library's
// memory while loading is the weights plus one read buffer, training
// refuses it, and it saves as the export.
typedef struct counter { int64_t live, peak, calls, fail_at; } counter;   // fail_at: the call that fails (-1: none)
static void *count_alloc(size_t n, void *user) {
    counter *c = (counter *)user;
    if (c->calls++ == c->fail_at) return NULL;
    int64_t *p = (int64_t *)malloc(n + 16);
    if (!p) return NULL;
    p[0] = (int64_t)n;
    c->live += (int64_t)n;
    if (c->live > c->peak) c->peak = c->live;
    return p + 2;
}
static void count_free(void *q, void *user) {
    if (!q) return;
    int64_t *p = (int64_t *)q - 2;
    ((counter *)user)->live -= p[0];
    free(p);
}
static void test_serving_memory(void) {
    REQUIRE(g_ok);
    char ck[300], ex[300], again[300];
    snprintf(ck, sizeof ck, "%s/service_ck.wdm", TMP);
    snprintf(ex, sizeof ex, "%s/service_ex.wdm", TMP);
    snprintf(again, sizeof again, "%s/service_again.wdm", TMP);
    wd_model *m = variant(0, 0);
    REQUIRE(m);
    {   // Adam: three arrays per parameter in the checkpoint
        wd_model_desc d = *wd_model_description(m);
        wd_schema sc = *wd_model_schema(m);
        d.schema = &sc; d.optimizer = WD_ADAM;
        wd_model_destroy(m);
        m = NULL;
        REQUIRE_OK(wd_model_create(&d, &m));
    }
    push_batches(m, 1, 0, 4, NULL);
    CHECK_OK(wd_model_save(m, ck));
    CHECK_OK(wd_model_export(m, ex));
    int64_t weights = 4 * (m->P + m->wide_rows + m->emb_rows * m->E);
    counter c = {0, 0, 0, -1};
    wd_allocator hooks = {count_alloc, count_free, &c};
    wd_model *w = NULL, *e = NULL;
    wd_set_allocator(&hooks);   // (what is allocated under the hooks is freed under them)
    wd_status st = wd_model_load_weights(ck, &w);
    int64_t held = c.live;
    if (!st) CHECK(!w->dense_s1 && !w->dense_s2 && !w->wide_z && !w->wide_n && !w->emb_s1 && !w->emb_s2);
    wd_model_destroy(w);
    wd_set_allocator(NULL);
    CHECK_OK(st);
    printf("  loaded for serving: peak %lld bytes in the library, weights %lld, model held %lld (%lld after destroy)\n",
           (long long)c.peak, (long long)weights, (long long)held, (long long)c.live);
    CHECK(held >= weights && held < weights + 16384);   // the weights, the description, the contract
    CHECK(c.peak < weights + 65536 + 32768);           // plus the buffer the optimizer state is read through
    CHECK(c.live == 0);
    w = NULL;
    CHECK_OK(wd_model_load_weights(ck, &w));
    REQUIRE(w);
    CHECK(!w->dense_s1 && !w->dense_s2 && !w->wide_z && !w->wide_n && !w->emb_s1 && !w->emb_s2);
    CHECK_OK(wd_model_load(ex, &e));
    if (e) CHECK(!e->dense_s1 && !e->emb_s1 && !e->wide_n);
    float a[NP], b[NP], x[NP];
    wd_batch fixed;
    REQUIRE_OK(wd_batch_init(&fixed, wd_model_schema(m), NP, 0));
    CHECK_OK(wd_batch_append(&fixed, &g_all, 0, NP));
    CHECK_OK(wd_predict(m, &fixed, a));
    CHECK_OK(wd_predict(w, &fixed, b));
    if (e) CHECK_OK(wd_predict(e, &fixed, x));
    CHECK(!memcmp(a, b, sizeof a) && (!e || !memcmp(a, x, sizeof a)));
    CHECK(!memcmp(w->dense, m->dense, 4 * (size_t)m->P) && !memcmp(w->emb, m->emb, 4 * (size_t)(m->emb_rows * m->E)));
    CHECK(w->step == m->step);
    {   // wd_model_get_info: the weights by part, the same in both; the state only in the checkpoint
        wd_model_info im, iw;
        wd_model_get_info(m, &im);
        wd_model_get_info(w, &iw);
        CHECK(!im.weights_only && iw.weights_only && im.state_bytes > 0 && iw.state_bytes == 0);
        CHECK(im.wide_bytes + im.embedding_bytes + im.mlp_bytes == weights && im.mlp_bytes == 4 * m->P_mlp);
        CHECK(iw.wide_bytes == im.wide_bytes && iw.embedding_bytes == im.embedding_bytes
              && iw.mlp_bytes == im.mlp_bytes);
        CHECK(weights + im.state_bytes == wd_model_bytes(m));   // Adam's m and v, FTRL's z and n: all of it
    }
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    wd_trainer *t = NULL;
    CHECK(wd_trainer_open(w, &td, &t) == WD_ERR_UNSUPPORTED && has(wd_last_error(), "wd_model_load_weights"));
    CHECK_OK(wd_model_save(w, again));   // weights only, as the export
    size_t n1 = 0, n2 = 0;
    unsigned char *f1 = slurp(ex, &n1), *f2 = slurp(again, &n2);
    CHECK(f1 && f2 && n1 == n2 && !memcmp(f1, f2, n1));
    free(f1); free(f2);
    {   // a truncated checkpoint is refused by the serving load too, naming the file
        size_t n = 0;
        unsigned char *f = slurp(ck, &n);
        FILE *o = f ? fopen(again, "wb") : NULL;
        if (o) { fwrite(f, 1, n - 40, o); fclose(o); }
        free(f);
        wd_model *bad = NULL;
        CHECK(wd_model_load_weights(again, &bad) == WD_ERR_CORRUPT && !bad && has(wd_last_error(), again));
    }
    // and swaps into a served model as any other
    wd_model *srv = NULL;
    CHECK_OK(wd_model_load_weights(ex, &srv));
    if (srv) {
        wd_model *w2 = NULL;
        CHECK_OK(wd_model_load_weights(ck, &w2));
        if (w2) CHECK_OK(wd_model_swap(srv, w2));
        CHECK_OK(wd_predict(srv, &fixed, x));
        CHECK(!memcmp(a, x, sizeof a));
    }
    wd_model_destroy(srv);
    wd_batch_free(&fixed);
    wd_model_destroy(w); wd_model_destroy(e); wd_model_destroy(m);
    unlink(ck); unlink(ex); unlink(again);
}

// Vocabularies that grow in memory: a trainer fed the Criteo sample's raw
// lines (wd_trainer_push_lines, 100 a push) while 3 threads predict and ask
// the model's spec, against each push's lines converted --extend-vocab from
// the previous spec and their samples pushed: the same ids, the same model
// bit for bit, the same vocabulary, saved with the model.
static char SAMPLE[300] = "../shared/data";
enum { DAY1 = 600, PUSH = 100, PUSHES = 6 };
typedef struct asker { wd_model *m; wd_batch *fixed; volatile int *stop; int n, grew; wd_status st; } asker;
static void *ask(void *p) {
    asker *a = (asker *)p;
    float out[NP];
    int64_t first = -1;
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
        wd_text_spec sp;
        wd_status st = wd_predict(a->m, a->fixed, out);
        if (!st) st = wd_model_spec(a->m, &sp);
        if (st) { a->st = st; break; }
        int64_t n = wd_vocab_size(sp.vocab, 0) + wd_vocab_size(sp.vocab, 2);
        if (first < 0) first = n;
        a->grew |= n > first;
        wd_text_spec_free(&sp);
        a->n++;
    }
    return NULL;
}
// The lines [from, from + n) of the sample's training file into out (a text), NUL-ended.
static size_t lines_of(const char *text, size_t len, int from, int n, char *out, size_t cap) {
    const char *s = text, *end = text + len;
    for (int i = 0; i < from && s < end; i++) s = (const char *)memchr(s, '\n', (size_t)(end - s)) + 1;
    const char *e = s;
    for (int i = 0; i < n && e < end; i++) e = (const char *)memchr(e, '\n', (size_t)(end - e)) + 1;
    size_t k = (size_t)(e - s) < cap ? (size_t)(e - s) : cap - 1;
    memcpy(out, s, k);
    out[k] = 0;
    return k;
}
static void write_file(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(text, 1, n, f); fclose(f); }
}
static void test_vocab_grows_online(void) {
    char path[600], day1[600], ck[600], chunk[600], cw[600];
    snprintf(path, sizeof path, "%s/criteo_kaggle_head8000_train.tsv", SAMPLE);
    size_t len = 0;
    char *text = (char *)slurp(path, &len);
    if (!text) { SKIP("no Criteo sample in %.200s", SAMPLE); return; }
    static char buf[1 << 20];
    snprintf(day1, sizeof day1, "%s/svc_day1.tsv", TMP);
    snprintf(cw, sizeof cw, "%s/svc_day1.wdr", TMP);
    snprintf(ck, sizeof ck, "%s/svc_day1.wdm", TMP);
    snprintf(chunk, sizeof chunk, "%s/svc_chunk.tsv", TMP);
    write_file(day1, buf, lines_of(text, len, 0, DAY1, buf, sizeof buf));
    // day 1: converted with room for 1024 values a slot, trained, saved
    wd_text_spec spec;
    wd_text_spec_criteo(&spec, 0);
    wd_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    const char *in1[] = {day1};
    cd.spec = &spec; cd.inputs = in1; cd.ninputs = 1; cd.output = cw; cd.vocab_capacity = 1024;
    REQUIRE_OK(wd_convert(&cd, NULL));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(cw, &r));
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    wd_schema sc = *wd_reader_schema(r);
    wd_reader_close(r);
    d.schema = &sc; d.embed_dim = 4; d.hidden[0] = 16; d.hidden[1] = 8; d.seed = 3;
    wd_model *m0 = NULL;
    REQUIRE_OK(wd_model_create(&d, &m0));
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    const char *files[] = {cw};
    td.files = files; td.nfiles = 1; td.batch_size = PUSH; td.threads = 2;
    CHECK_OK(wd_train(m0, &td, NULL));
    CHECK_OK(wd_model_save(m0, ck));
    wd_model_destroy(m0);
    wd_model *m = NULL, *twin = NULL;
    REQUIRE_OK(wd_model_load(ck, &m));
    REQUIRE_OK(wd_model_load(ck, &twin));
    wd_model_new_run(m); wd_model_new_run(twin);
    wd_text_spec s0;
    REQUIRE_OK(wd_model_spec(m, &s0));
    // online: raw lines pushed while predictions and spec requests run
    wd_batch fixed;
    REQUIRE_OK(wd_batch_init(&fixed, wd_model_schema(m), NP, 0));
    {
        const char *l = text;
        for (int i = 0; i < NP; i++) {
            const char *e = strchr(l, '\n');
            CHECK_OK(wd_parse_line(&s0, l, (size_t)(e - l), &fixed));
            l = e + 1;
        }
    }
    memset(&td, 0, sizeof td);
    td.batch_size = PUSH; td.threads = 2; td.publish_every = 2;
    CHECK_OK(wd_model_publish(m));
    volatile int stop = 0;
    asker as[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        memset(&as[i], 0, sizeof as[i]);
        as[i].m = m; as[i].fixed = &fixed; as[i].stop = &stop;
        CHECK(pthread_create(&th[i], NULL, ask, &as[i]) == 0);
    }
    wd_trainer *t = NULL;
    CHECK_OK(wd_trainer_open(m, &td, &t));
    for (int c = 0; t && c < PUSHES; c++) {
        size_t n = lines_of(text, len, DAY1 + c * PUSH, PUSH, buf, sizeof buf);
        CHECK_OK(wd_trainer_push_lines(t, buf, n));
        if (c == 2) {   // a bad line refuses the whole push; the vocabulary and the training go on
            char bad[] = "1\t2\tnot-a-number\n";
            CHECK(wd_trainer_push_lines(t, bad, strlen(bad)) == WD_ERR_PARSE && has(wd_last_error(), "line 1"));
        }
        usleep(3000);   // let predictions land between publishes
    }
    if (t) CHECK_OK(wd_trainer_close(t, NULL));
    wd_trainer_free(t);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int asked = 0, grew = 0;
    for (int i = 0; i < 3; i++) { pthread_join(th[i], NULL); CHECK_OK(as[i].st); asked += as[i].n; grew |= as[i].grew; }
    // files: each push's lines converted --extend-vocab from the last spec, their samples pushed
    wd_text_spec fs;
    REQUIRE_OK(wd_model_spec(twin, &fs));
    memset(&td, 0, sizeof td);
    td.batch_size = PUSH; td.threads = 2;
    CHECK_OK(wd_trainer_open(twin, &td, &t));
    wd_batch ids[PUSHES];
    for (int c = 0; t && c < PUSHES; c++) {
        write_file(chunk, buf, lines_of(text, len, DAY1 + c * PUSH, PUSH, buf, sizeof buf));
        char out[600];
        snprintf(out, sizeof out, "%s/svc_chunk%d.wdr", TMP, c);
        memset(&cd, 0, sizeof cd);
        const char *in[] = {chunk};
        cd.spec = &fs; cd.inputs = in; cd.ninputs = 1; cd.output = out; cd.extend_vocab = 1;
        CHECK_OK(wd_convert(&cd, NULL));
        REQUIRE_OK(wd_reader_open(out, &r));
        REQUIRE_OK(wd_batch_init(&ids[c], wd_reader_schema(r), PUSH, 0));
        for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
            const wd_batch *blk;
            CHECK_OK(wd_reader_block(r, i, &blk));
            if (blk) CHECK_OK(wd_batch_append(&ids[c], blk, 0, blk->n));
        }
        CHECK_OK(wd_trainer_push(t, &ids[c]));
        CHECK_OK(wd_text_spec_vocab(&fs, wd_reader_vocab(r)));
        wd_reader_close(r);
        unlink(out);
    }
    if (t) CHECK_OK(wd_trainer_close(t, NULL));
    wd_trainer_free(t);
    // the same model, the same vocabulary (also after a save), the same ids
    wd_text_spec on;
    CHECK_OK(wd_model_spec(m, &on));
    int64_t before = 0, after = 0, same = 1;
    for (int k = 0; k < 26; k++) {
        before += wd_vocab_size(s0.vocab, k); after += wd_vocab_size(on.vocab, k);
        same &= wd_vocab_fingerprint(on.vocab, k) == wd_vocab_fingerprint(fs.vocab, k);
    }
    printf("  %d pushes of %d raw lines: vocabularies %lld -> %lld values; %d predictions and specs beside them%s\n",
           PUSHES, PUSH, (long long)before, (long long)after, asked, grew ? ", which saw the vocabulary grow" : "");
    CHECK(after > before + 100 && same);
    CHECK(tl_params_equal(m, twin));
    int id_ok = 1;
    for (int c = 0; c < PUSHES; c++) {   // the final vocabulary gives each push's values their push-time ids
        wd_batch b;
        CHECK_OK(wd_batch_init(&b, &on.schema, PUSH, 0));
        size_t n = lines_of(text, len, DAY1 + c * PUSH, PUSH, buf, sizeof buf);
        for (const char *l = buf; l < buf + n;) {
            const char *e = strchr(l, '\n');
            CHECK_OK(wd_parse_line(&on, l, (size_t)(e - l), &b));
            l = e + 1;
        }
        id_ok &= b.n == ids[c].n;
        for (int k = 0; id_ok && k < 26; k++) id_ok &= !memcmp(b.ids[k], ids[c].ids[k], 4 * (size_t)b.n);
        wd_batch_free(&b);
        wd_batch_free(&ids[c]);
    }
    CHECK(id_ok);
    CHECK_OK(wd_model_save(m, ck));
    wd_model *back = NULL;
    CHECK_OK(wd_model_load(ck, &back));
    if (back) {
        wd_text_spec bs;
        CHECK_OK(wd_model_spec(back, &bs));
        int eq = 1;
        for (int k = 0; k < 26; k++) eq &= wd_vocab_fingerprint(bs.vocab, k) == wd_vocab_fingerprint(on.vocab, k);
        CHECK(eq);
        wd_text_spec_free(&bs);
        wd_model_destroy(back);
    }
    wd_text_spec_free(&on); wd_text_spec_free(&fs); wd_text_spec_free(&s0); wd_text_spec_free(&spec);
    wd_batch_free(&fixed);
    wd_model_destroy(m); wd_model_destroy(twin);
    free(text);
    unlink(day1); unlink(cw); unlink(ck); unlink(chunk);
}

// Every allocation of a serving load, a publish and a swap failed in turn:
// WD_ERR_NOMEM, nothing leaked, the served model unchanged.
static void test_allocation_failures(void) {
    REQUIRE(g_ok);
    char ck[300];
    snprintf(ck, sizeof ck, "%s/service_nomem.wdm", TMP);
    wd_model *src = variant(0, 0);
    REQUIRE(src);
    CHECK_OK(wd_model_save(src, ck));
    wd_model_destroy(src);
    int loads = 0;
    for (int64_t k = 0;; k++) {   // load_weights, then publish and swap on what it loaded
        counter c = {0, 0, 0, k};
        wd_allocator hooks = {count_alloc, count_free, &c};
        wd_set_allocator(&hooks);
        wd_model *m = NULL, *next = NULL;
        wd_status st = wd_model_load_weights(ck, &m);
        if (!st) st = wd_model_load_weights(ck, &next);
        if (!st) st = wd_model_publish(m);
        if (!st) st = wd_model_swap(m, next);
        if (!st) next = NULL;   // consumed
        CHECK(st == WD_OK || st == WD_ERR_NOMEM);
        wd_model_destroy(next);
        wd_model_destroy(m);
        wd_set_allocator(NULL);
        CHECK(c.live == 0);
        if (c.live) { printf("  failing allocation %lld leaked %lld bytes\n", (long long)k, (long long)c.live); break; }
        if (st == WD_OK) break;
        loads++;
    }
    printf("  %d allocations failed in turn: each WD_ERR_NOMEM, nothing leaked\n", loads);
    CHECK(loads > 10);
    unlink(ck);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    if (argc > 2) snprintf(SAMPLE, sizeof SAMPLE, "%s", argv[2]);
    RUN(test_setup);
    RUN(test_training_budget);   // first: no thread of an earlier test around
    RUN(test_swap_under_load);
    RUN(test_swap_between_online_runs);
    RUN(test_swap_refusals);
    RUN(test_serving_memory);
    RUN(test_allocation_failures);
    RUN(test_vocab_grows_online);
    wd_batch_free(&g_all);
    return test_summary("test_service");
}
