// Hardening, second round: the API surfaces the parser fuzzers do not
// reach. Batches of the wrong shape, hostile prediction batches, NULL and
// negative arguments, numbers that would poison a model, checkpoints with
// poisoned sections or absurd counters, memory a file or a description asks
// for, outputs that would destroy inputs. Built with ASan + UBSan: an
// overflow is a failure even where the status looks right.
// Usage: test_hardening [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"

static char TMP[200] = "/tmp";
static void tmp(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/hd-%s", TMP, name); }

// A file with slots [multi, one] of 20 samples.
static void mixed_schema(wd_schema *s) {
    memset(s, 0, sizeof *s);
    s->ndense = 2; s->nslots = 2;
    snprintf(s->slot[0].name, WD_NAME_MAX, "tags"); s->slot[0].kind = WD_MULTI_HOT; s->slot[0].buckets = 50;
    snprintf(s->slot[1].name, WD_NAME_MAX, "site"); s->slot[1].kind = WD_ONE_HOT; s->slot[1].buckets = 50;
}
static int write_mixed(const char *path) {
    wd_schema s;
    mixed_schema(&s);
    wd_batch b;
    if (wd_batch_init(&b, &s, 20, 200)) return -1;
    for (int i = 0; i < 20; i++) {
        b.label[i] = (float)(i % 2); b.weight[i] = 1;
        b.dense[2 * i] = (float)i; b.dense[2 * i + 1] = -1;
        uint32_t o = b.offs[0][i];
        for (int j = 0; j < 5; j++) b.ids[0][o + (uint32_t)j] = (uint32_t)(i + j);
        b.offs[0][i + 1] = o + 5;
        b.ids[1][i] = (uint32_t)i;
    }
    b.n = 20;
    wd_writer *w;
    int rc = wd_writer_open(path, &s, NULL, &w) || wd_writer_append(w, &b) || wd_writer_close(w);
    wd_batch_free(&b);
    return rc ? -1 : 0;
}

// A batch whose slot kinds differ from the file's is refused before a byte
// is written into it (a heap overflow or a NULL store before the fix).
static void test_decode_into_mismatched_batch(void) {
    char path[300];
    tmp(path, sizeof path, "mixed.wdr");
    REQUIRE(write_mixed(path) == 0);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(path, &r));
    for (int variant = 0; variant < 2; variant++) {
        wd_schema s;
        mixed_schema(&s);
        if (variant == 0) s.slot[1].kind = WD_MULTI_HOT;   // [multi, multi] against [multi, one]
        else s.slot[0].kind = WD_ONE_HOT;                  // file multi-hot into a one-hot batch
        wd_batch b;
        REQUIRE_OK(wd_batch_init(&b, &s, 4, 4));
        CHECK(wd_reader_read_block(r, 0, &b) == WD_ERR_SCHEMA && strstr(wd_last_error(), "slot") && strstr(wd_last_error(), "in the file"));
        wd_decoder *dec;
        REQUIRE_OK(wd_decoder_create(&dec));
        size_t n = wd_reader_block_bytes(r, 0);
        void *buf = malloc(n);
        REQUIRE_OK(wd_reader_fetch(r, 0, buf, n));
        CHECK(wd_decode_block(dec, r, 0, buf, n, &b) == WD_ERR_SCHEMA);
        CHECK(b.n == 0);
        free(buf);
        wd_decoder_destroy(dec);
        wd_batch_free(&b);
    }
    wd_reader_close(r);
}

// Prediction on hostile batches: a negative or too large count, offsets
// that run backwards or past the ids, missing arrays, an id outside its slot.
static void test_predict_hostile_batches(void) {
    wd_schema s;
    mixed_schema(&s);
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = &s; md.embed_dim = 2; md.hidden[0] = 4;
    wd_model *m;
    REQUIRE_OK(wd_model_create(&md, &m));
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &s, 8, 16));
    for (int i = 0; i < 8; i++) { b.offs[0][i + 1] = (uint32_t)(i + 1); b.ids[0][i] = 1; b.ids[1][i] = 2; b.dense[2 * i] = b.dense[2 * i + 1] = 0.5f; }
    b.n = 8;
    float p[8];
    CHECK_OK(wd_predict(m, &b, p));
    b.n = -5;
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "-5"));
    b.n = 9;
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG);
    b.n = 8;
    b.offs[0][3] = 7;   // runs backwards at sample 3
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "offsets"));
    b.offs[0][3] = 3;
    b.offs[0][8] = 1000;   // past the ids
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "offsets"));
    b.offs[0][8] = 8;
    b.ids[1][5] = 50;
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "outside"));
    b.ids[1][5] = 2;
    uint32_t *keep = b.ids[1];
    b.ids[1] = NULL;
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG);
    b.ids[1] = keep;
    b.kind[1] = WD_MULTI_HOT;
    CHECK(wd_predict(m, &b, p) == WD_ERR_SCHEMA);
    b.kind[1] = WD_ONE_HOT;
    CHECK_OK(wd_predict(m, &b, p));
    wd_batch_free(&b);
    wd_model_destroy(m);
}

// Every public call that returns a status refuses NULLs, negative counts and
// zero sizes with a message, instead of crashing; hashing into 0 buckets is 0.
static void test_null_and_bad_arguments(void) {
    wd_schema s;
    mixed_schema(&s);
    wd_batch b;
    memset(&b, 0, sizeof b);
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    int64_t bad;
    CHECK(wd_reader_verify(NULL, &bad) == WD_ERR_INVALID_ARG);
    CHECK(wd_decoder_create(NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_text_spec_libsvm(NULL, "a=0-9", NULL, 0) == WD_ERR_INVALID_ARG);
    CHECK(wd_text_spec_buckets(NULL, "a=3") == WD_ERR_INVALID_ARG);
    CHECK(wd_text_spec_match(NULL, &s) == WD_ERR_INVALID_ARG && wd_text_spec_match(t, NULL) == WD_ERR_INVALID_ARG);
    {   // a schema whose last slot differs: the spec keeps every bucket count (it was half overwritten)
        wd_text_spec *c = (wd_text_spec *)calloc(1, sizeof *c), *before = (wd_text_spec *)calloc(1, sizeof *c);
        wd_text_spec_criteo(c, 100);
        wd_schema other = c->schema;
        for (int k = 0; k < other.nslots; k++) other.slot[k].buckets = 7;
        snprintf(other.slot[25].name, WD_NAME_MAX, "C99");
        memcpy(before, c, sizeof *c);
        CHECK(wd_text_spec_match(c, &other) == WD_ERR_SCHEMA && strstr(wd_last_error(), "slot 25") && memcmp(before, c, sizeof *c) == 0);
        snprintf(other.slot[25].name, WD_NAME_MAX, "%s", c->schema.slot[25].name);
        CHECK(wd_text_spec_match(c, &other) == WD_OK && c->schema.slot[0].buckets == 7 && c->schema.slot[25].buckets == 7);
        free(c); free(before);
    }
    CHECK(wd_text_spec_csv(NULL, "a,b", "a", NULL, NULL, 1) == WD_ERR_INVALID_ARG);
    CHECK(wd_parse_line(NULL, "x", 1, &b) == WD_ERR_INVALID_ARG && wd_parse_line(t, NULL, 1, &b) == WD_ERR_INVALID_ARG);
    CHECK(wd_batch_init(NULL, &s, 1, 1) == WD_ERR_INVALID_ARG && wd_batch_init(&b, NULL, 1, 1) == WD_ERR_INVALID_ARG);
    CHECK(wd_batch_init(&b, &s, -1, 0) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "negative"));
    wd_schema huge = s;
    huge.nslots = WD_MAX_SLOTS + 1;
    CHECK(wd_batch_init(&b, &huge, 1, 1) == WD_ERR_LIMIT);
    CHECK(wd_batch_reserve(NULL, 1, 1) == WD_ERR_INVALID_ARG);
    CHECK(wd_batch_append(NULL, &b, 0, 0) == WD_ERR_INVALID_ARG);
    CHECK(wd_writer_open(NULL, &s, NULL, NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_writer_append(NULL, &b) == WD_ERR_INVALID_ARG && wd_writer_close(NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_reader_open(NULL, NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_reader_fetch(NULL, 0, NULL, 0) == WD_ERR_INVALID_ARG);
    CHECK(wd_reader_read_block(NULL, 0, &b) == WD_ERR_INVALID_ARG && wd_reader_block(NULL, 0, NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_convert(NULL, NULL) == WD_ERR_INVALID_ARG && wd_gen(NULL, NULL) == WD_ERR_INVALID_ARG);
    double auc;
    float sc[2] = {0.1f, 0.2f}, y[2] = {0, 1}, wbad[2] = {1, -1}, ybad[2] = {0, 2};
    CHECK(wd_auc(NULL, y, NULL, 2, &auc) == WD_ERR_INVALID_ARG && wd_auc(sc, y, NULL, -1, &auc) == WD_ERR_INVALID_ARG);
    CHECK(wd_auc(sc, y, wbad, 2, &auc) == WD_ERR_NUMERIC && wd_auc(sc, ybad, NULL, 2, &auc) == WD_ERR_NUMERIC);
    CHECK(wd_loader_open(NULL, NULL) == WD_ERR_INVALID_ARG && wd_loader_reset(NULL, 0, 0) == WD_ERR_INVALID_ARG && wd_loader_next(NULL, NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_model_create(NULL, NULL) == WD_ERR_INVALID_ARG);
    wd_model *m = NULL;
    CHECK(wd_model_create(NULL, &m) == WD_ERR_INVALID_ARG && m == NULL);
    CHECK(wd_comm_local_create(0, 1, NULL) == WD_ERR_INVALID_ARG);
    CHECK(wd_evaluate(NULL, NULL, NULL) == WD_ERR_INVALID_ARG && wd_train(NULL, NULL, NULL) == WD_ERR_INVALID_ARG && wd_predict(NULL, &b, sc) == WD_ERR_INVALID_ARG);
    CHECK(wd_model_save(NULL, "x") == WD_ERR_INVALID_ARG && wd_model_load(NULL, &m) == WD_ERR_INVALID_ARG);
    wd_plan plan;
    CHECK(wd_plan_make(NULL, 1, 1, &plan) == WD_ERR_INVALID_ARG && wd_plan_from_desc(NULL, 1, 1, &plan) == WD_ERR_INVALID_ARG);
    CHECK(wd_hash_bucket("abc", 3, 0, 0) == 0 && wd_cross_bucket(1, 2, 0, 0) == 0 && wd_hash_bucket(NULL, 5, 0, 10) == 0);
    free(t);
}

// Settings that would freeze or poison parts of a model are refused, each
// naming the setting.
static void test_model_settings(void) {
    wd_schema s;
    mixed_schema(&s);
    struct { const char *name; int field; float v; } cases[] = {
        {"emb_init", 0, INFINITY}, {"ftrl_l1", 1, INFINITY}, {"ftrl_l2", 2, NAN}, {"ftrl_beta", 3, INFINITY},
        {"adagrad_init", 4, INFINITY}, {"adam_eps", 5, INFINITY}, {"lr_deep", 6, -1}, {"lr_wide", 7, NAN}, {"adam_beta1", 8, 1.0f}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wd_model_desc d;
        memset(&d, 0, sizeof d);
        d.schema = &s; d.embed_dim = 2; d.hidden[0] = 4;
        float *f[9] = {&d.emb_init, &d.ftrl_l1, &d.ftrl_l2, &d.ftrl_beta, &d.adagrad_init, &d.adam_eps, &d.lr_deep, &d.lr_wide, &d.adam_beta1};
        *f[cases[i].field] = cases[i].v;
        wd_model *m = NULL;
        CHECK(wd_model_create(&d, &m) == WD_ERR_INVALID_ARG && m == NULL && strstr(wd_last_error(), cases[i].name));
    }
}

// A dense value of 1e25 would overflow the optimizer state: the step is
// refused with nothing written, and the model still saves and loads.
static wd_status huge_dense(void *user, wd_batch *blk, int worker) {
    (void)user; (void)worker;
    for (int i = 0; i < blk->n; i++) blk->dense[2 * i + 1] = 1e25f;   // every sample: some are misclassified
    return WD_OK;
}
static void test_huge_inputs_refused(void) {
    char path[300], ck[300];
    tmp(path, sizeof path, "mixed2.wdr");
    tmp(ck, sizeof ck, "after.wdm");
    REQUIRE(write_mixed(path) == 0);
    wd_schema s;
    mixed_schema(&s);
    for (int no_deep = 0; no_deep <= 1; no_deep++) {
        wd_model_desc md;
        memset(&md, 0, sizeof md);
        md.schema = &s; md.embed_dim = 2; md.hidden[0] = 4; md.no_deep = no_deep;
        wd_model *m;
        REQUIRE_OK(wd_model_create(&md, &m));
        wd_model_view v;
        wd_model_view_get(m, &v);
        float *snap = (float *)malloc(4 * (size_t)v.P), *wsnap = (float *)malloc(4 * (size_t)v.wide_rows);
        memcpy(snap, v.dense, 4 * (size_t)v.P);
        memcpy(wsnap, v.wide, 4 * (size_t)v.wide_rows);
        const char *files[1] = {path};
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.files = files; td.nfiles = 1; td.batch_size = 10; td.threads = 2; td.map = huge_dense;
        wd_status st = wd_train(m, &td, NULL);
        CHECK(st == WD_ERR_NUMERIC && (strstr(wd_last_error(), "gradient") || strstr(wd_last_error(), "loss")));
        int64_t step;
        wd_model_position(m, NULL, NULL, &step);
        CHECK(step == 0 && !memcmp(snap, v.dense, 4 * (size_t)v.P) && !memcmp(wsnap, v.wide, 4 * (size_t)v.wide_rows));
        CHECK_OK(wd_model_save(m, ck));
        wd_model *back = NULL;
        CHECK_OK(wd_model_load(ck, &back));
        wd_model_destroy(back);
        free(snap); free(wsnap);
        wd_model_destroy(m);
    }
}

// Checkpoints poisoned in any section (checksums fixed up) do not load; nor
// do absurd counters; and save refuses a model it could not load again.
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24); }
static void wr64(unsigned char *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }
// Offset of the payload of section `tag` in a .wdm image (0 if absent), and its bytes.
static size_t section(const unsigned char *f, size_t n, const char *tag, uint64_t *bytes) {
    for (size_t o = 12; o + 16 <= n;) {
        uint64_t b = rd64(f + o + 8);
        if (memcmp(f + o, tag, 4) == 0) { *bytes = b; return o + 16; }
        o += 16 + (size_t)b + 8;
    }
    return 0;
}
static void test_poisoned_checkpoints(void) {
    char ck[300], bad[300];
    tmp(ck, sizeof ck, "good.wdm"); tmp(bad, sizeof bad, "poison.wdm");
    wd_schema s;
    mixed_schema(&s);
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = &s; md.embed_dim = 2; md.hidden[0] = 4; md.optimizer = WD_ADAM;
    wd_model *m;
    REQUIRE_OK(wd_model_create(&md, &m));
    REQUIRE_OK(wd_model_save(m, ck));
    size_t n;
    unsigned char *src = slurp(ck, &n), *f = (unsigned char *)malloc(n);
    REQUIRE(src && f);
    const char *tags[3] = {"EMBD", "WIDE", "DENS"};
    const float poison[3] = {NAN, INFINITY, -INFINITY};
    int refused = 0, tried = 0;
    for (int t = 0; t < 3; t++)
        for (int q = 0; q < 3; q++)
            for (int where = 0; where < 3; where++) {   // first, middle and last value of the section
                memcpy(f, src, n);
                uint64_t bytes;
                size_t at = section(f, n, tags[t], &bytes);
                REQUIRE(at && bytes >= 12);
                size_t pos = at + (where == 0 ? 0 : where == 1 ? (size_t)(bytes / 8) * 4 : (size_t)bytes - 4);
                uint32_t u;
                memcpy(&u, &poison[q], 4);
                wr32(f + pos, u);
                wr32(f + at + bytes, wd__crc32c(f + at, (size_t)bytes));   // a valid checksum: only the values are wrong
                FILE *o = fopen(bad, "wb");
                REQUIRE(o && fwrite(f, 1, n, o) == n);
                fclose(o);
                wd_model *x = NULL;
                tried++;
                if (wd_model_load(bad, &x) == WD_ERR_CORRUPT && strstr(wd_last_error(), "poison.wdm")) refused++;
                else wd_model_destroy(x);
            }
    CHECK(refused == tried);
    // a negative Adam v (its square root would be NaN)
    memcpy(f, src, n);
    uint64_t bytes;
    size_t at = section(f, n, "EMBD", &bytes);
    float neg = -1.0f;
    uint32_t u;
    memcpy(&u, &neg, 4);
    wr32(f + at + (size_t)bytes - 4, u);   // the last value: Adam's v of the last row
    wr32(f + at + bytes, wd__crc32c(f + at, (size_t)bytes));
    FILE *o = fopen(bad, "wb");
    REQUIRE(o && fwrite(f, 1, n, o) == n);
    fclose(o);
    wd_model *x = NULL;
    CHECK(wd_model_load(bad, &x) == WD_ERR_CORRUPT && strstr(wd_last_error(), "negative"));
    // a step of INT64_MAX
    memcpy(f, src, n);
    at = section(f, n, "POS ", &bytes);
    wr64(f + at + 16, (uint64_t)INT64_MAX);
    wr32(f + at + bytes, wd__crc32c(f + at, (size_t)bytes));
    o = fopen(bad, "wb");
    REQUIRE(o && fwrite(f, 1, n, o) == n);
    fclose(o);
    CHECK(wd_model_load(bad, &x) == WD_ERR_CORRUPT && strstr(wd_last_error(), "training position"));
    // save refuses what load would refuse
    wd_model_view v;
    wd_model_view_get(m, &v);
    float e3 = v.emb[3];
    v.emb[3] = NAN;
    unlink(bad);
    CHECK(wd_model_save(m, bad) == WD_ERR_NUMERIC && strstr(wd_last_error(), "embeddings") && !file_exists(bad));
    v.emb[3] = e3;
    // a step past 2^53 (a crafted checkpoint at 2^53 trained on): refused at the save, not by every later load
    m->step = ((int64_t)1 << 53) + 1;
    CHECK(wd_model_save(m, bad) == WD_ERR_LIMIT && strstr(wd_last_error(), "past 2^53") && !file_exists(bad));
    m->step = (int64_t)1 << 53;   // the last step load accepts: saved and loaded
    CHECK_OK(wd_model_save(m, bad));
    x = NULL;
    CHECK(wd_model_load(bad, &x) == WD_OK && x && x->step == m->step);
    wd_model_destroy(x);
    unlink(bad);
    free(src); free(f);
    wd_model_destroy(m);
}

// Memory: a description or a file that asks for more than the machine can
// give is refused with both sizes named, before anything is allocated.
static void test_memory_asked_for(void) {
    wd_schema s;
    mixed_schema(&s);
    s.slot[1].buckets = 4294967295u;   // 2^32 - 1 rows x (embeddings + state + wide)
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = &s;
    wd_model *m = NULL;
    double t0 = wd__now();
    CHECK(wd_model_create(&md, &m) == WD_ERR_NOMEM && m == NULL && strstr(wd_last_error(), "GiB") && strstr(wd_last_error(), "available"));
    CHECK(wd__now() - t0 < 1.0);   // refused, not attempted
    // a small file whose one block decodes to 160 MB, under a 100 MB limit
    char path[300];
    tmp(path, sizeof path, "wide.wdr");
    wd_schema w;
    memset(&w, 0, sizeof w);
    w.ndense = 1000; w.nslots = 1;
    snprintf(w.slot[0].name, WD_NAME_MAX, "c"); w.slot[0].buckets = 2;
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &w, 40000, 0));
    memset(b.dense, 0, sizeof(float) * 40000 * 1000);
    for (int i = 0; i < 40000; i++) { b.label[i] = 0; b.weight[i] = 1; b.ids[0][i] = 0; }
    b.n = 40000;
    wd_writer_desc wdsc;
    memset(&wdsc, 0, sizeof wdsc);
    wdsc.block_samples = 40000;
    wd_writer *wr;
    REQUIRE_OK(wd_writer_open(path, &w, &wdsc, &wr));
    REQUIRE_OK(wd_writer_append(wr, &b));
    REQUIRE_OK(wd_writer_close(wr));
    wd_batch_free(&b);
    setenv("WD_MEMORY_LIMIT", "100000000", 1);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(path, &r));
    int64_t bad;
    CHECK(wd_reader_verify(r, &bad) == WD_ERR_NOMEM && bad == 0 && strstr(wd_last_error(), "wide.wdr: block 0") && strstr(wd_last_error(), "GiB") &&
          strstr(wd_last_error(), "(WD_MEMORY_LIMIT)"));
    wd_reader_close(r);
    // WD_MEMORY_LIMIT takes the CLI's size suffixes (x 1024^n) and refuses
    // anything else, naming itself: "100m" is 100 MiB (the 320 MB block is
    // refused), "8G" 8 GiB (read, where the machine has the memory), not 8
    // bytes; whatever the size asked for, a bad value fails
    const char *too_small[] = {"100m", "100MB", "104857600", "97656k"};
    for (int i = 0; i < 4; i++) {
        setenv("WD_MEMORY_LIMIT", too_small[i], 1);
        REQUIRE_OK(wd_reader_open(path, &r));
        CHECK(wd_reader_verify(r, &bad) == WD_ERR_NOMEM && strstr(wd_last_error(), "(WD_MEMORY_LIMIT)"));
        wd_reader_close(r);
    }
    const char *refused[] = {"abc", "8X", "0", "-5", " 8G", "8GiB", "18446744073709551616", "17179869184G", "1e9"};
    for (int i = 0; i < 9; i++) {
        setenv("WD_MEMORY_LIMIT", refused[i], 1);
        REQUIRE_OK(wd_reader_open(path, &r));   // the header is small: the limit is still read and refused
        wd_status st = wd_reader_verify(r, &bad);
        if (!(st == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "WD_MEMORY_LIMIT") && strstr(wd_last_error(), refused[i])))
            printf("  WD_MEMORY_LIMIT='%s': %s: %s\n", refused[i], wd_status_string(st), wd_last_error());
        CHECK(st == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "WD_MEMORY_LIMIT") && strstr(wd_last_error(), refused[i]));
        wd_reader_close(r);
    }
    setenv("WD_MEMORY_LIMIT", "8G", 1);
    uint64_t left = 0, cap = 0;
    CHECK_OK(wd__memory_limit_env(&cap));
    CHECK(cap == (uint64_t)8 << 30 && wd__memory_left(&left) == WD_OK && left <= cap);
    setenv("WD_MEMORY_LIMIT", "16777215T", 1);   // the largest that fits 64 bits
    CHECK(wd__memory_limit_env(&cap) == WD_OK && cap == (uint64_t)16777215 << 40);
    unsetenv("WD_MEMORY_LIMIT");
    REQUIRE_OK(wd_reader_open(path, &r));
    CHECK_OK(wd_reader_verify(r, &bad));   // the same file reads when the memory is there
    wd_reader_close(r);
}

// Outputs that would destroy inputs, and checkpoints that cannot be written,
// are refused before any work; nothing trains on or evaluates zero samples.
static void test_outputs_and_empty_inputs(void) {
    char data[300], prob[300], empty[300];
    tmp(data, sizeof data, "g.wdr"); tmp(prob, sizeof prob, "g.prob"); tmp(empty, sizeof empty, "empty.wdr");
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = data; g.rows = 500; g.seed = 3; g.max_card = 50; g.prob = prob;
    REQUIRE_OK(wd_gen(&g, NULL));
    g.tsv = data;   // the TSV onto the records
    CHECK(wd_gen(&g, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "two outputs"));
    g.tsv = NULL; g.prob = data;
    CHECK(wd_gen(&g, NULL) == WD_ERR_INVALID_ARG);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(data, &r));
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = wd_reader_schema(r); md.embed_dim = 2; md.hidden[0] = 4;
    wd_model *m;
    REQUIRE_OK(wd_model_create(&md, &m));
    wd_writer *w;
    REQUIRE_OK(wd_writer_open(empty, wd_reader_schema(r), NULL, &w));
    REQUIRE_OK(wd_writer_close(w));
    wd_reader_close(r);
    const char *files[1] = {data}, *none[1] = {empty};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = 50; td.threads = 1;
    td.checkpoint_path = data;
    size_t n0;
    unsigned char *before = slurp(data, &n0);
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "destroyed"));
    td.checkpoint_path = "/nonexistent-dir/m.wdm";
    double t0 = wd__now();
    CHECK(wd_train(m, &td, NULL) == WD_ERR_IO && strstr(wd_last_error(), "/nonexistent-dir/m.wdm") && wd__now() - t0 < 1.0);
    td.checkpoint_path = NULL;
    td.files = none;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "no samples"));
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = none; e.nfiles = 1;
    wd_metrics mt;
    CHECK(wd_evaluate(m, &e, &mt) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "no samples") && strstr(wd_last_error(), "empty.wdr"));
    size_t n1;
    unsigned char *after = slurp(data, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
    int64_t step;
    wd_model_position(m, NULL, NULL, &step);
    CHECK(step == 0);
    free(before); free(after);
    wd_model_destroy(m);
}

// A vocabulary crafted so that every value lands in one slot of an index
// placed by the bare, invertible wd_mix64 (the values are its inverse of
// i << 32: low 32 bits 0) opens, and has every value looked up, in about the
// time of one of the same size with spread values. Before the index was
// keyed, 20000 crafted values cost 2 * 10^8 probes (a ratio of hundreds).
static uint64_t unxorshift(uint64_t x, int s) { uint64_t y = x; for (int i = 0; i < 64 / s + 1; i++) y = x ^ (y >> s); return y; }
static uint64_t inv_odd(uint64_t c) { uint64_t v = c; for (int i = 0; i < 6; i++) v *= 2 - c * v; return v; }
static uint64_t unmix64(uint64_t x) {
    x = unxorshift(x, 31); x *= inv_odd(0x94d049bb133111ebULL);
    x = unxorshift(x, 27); x *= inv_odd(0xbf58476d1ce4e5b9ULL);
    return unxorshift(x, 30);
}
static int write_vocab_file(const char *path, int64_t n, int crafted) {
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.nslots = 1;
    snprintf(s.slot[0].name, WD_NAME_MAX, "site"); s.slot[0].kind = WD_ONE_HOT; s.slot[0].buckets = (uint32_t)n + 1;
    wd_vocab v;
    memset(&v, 0, sizeof v);
    v.nslots = 1;
    for (int k = 1; k < WD_MAX_SLOTS; k++) v.n[k] = -1;
    v.n[0] = n;
    v.hash[0] = (uint64_t *)malloc(8 * (size_t)n);
    for (int64_t i = 0; i < n; i++) v.hash[0][i] = crafted ? unmix64((uint64_t)(i + 1) << 32) : wd_mix64((uint64_t)i + 12345);
    wd__blockfile bf;
    int rc = wd__bf_open(&bf, path, &s, "crafted", &v, NULL) || wd__bf_close(&bf);
    free(v.hash[0]);
    return rc ? -1 : 0;
}
static double open_and_look_up(const char *path, int64_t n, int *ok) {
    double t0 = wd__now();
    wd_reader *r;
    if (wd_reader_open(path, &r)) { *ok = 0; return 0; }
    const wd_vocab *v = wd_reader_vocab(r);
    for (int64_t i = 0; i < n; i++) *ok &= wd__vocab_id(v, 0, v->hash[0][i]) == (uint32_t)(i + 1);
    *ok &= wd__vocab_id(v, 0, 7) == 0;
    wd_reader_close(r);
    return wd__now() - t0;
}
static void test_crafted_vocabulary_opens_in_linear_time(void) {
    const int64_t n = 20000;
    char crafted[300], spread[300];
    tmp(crafted, sizeof crafted, "crafted-vocab.wdr");
    tmp(spread, sizeof spread, "spread-vocab.wdr");
    CHECK(unmix64(wd_mix64(0x0123456789abcdefULL)) == 0x0123456789abcdefULL);
    for (int64_t i = 0; i < 4; i++) CHECK((wd_mix64(unmix64((uint64_t)(i + 1) << 32)) & 0xFFFFFFFFu) == 0);   // one slot unkeyed
    REQUIRE(write_vocab_file(crafted, n, 1) == 0);
    REQUIRE(write_vocab_file(spread, n, 0) == 0);
    double tc = 1e9, ts = 1e9;
    int ok = 1;
    for (int rep = 0; rep < 3; rep++) {   // the best of 3 of each, interleaved: robust on a busy machine
        double a = open_and_look_up(spread, n, &ok), b = open_and_look_up(crafted, n, &ok);
        if (a < ts) ts = a;
        if (b < tc) tc = b;
        if (tc > 2.0) break;   // quadratic: no need for more
    }
    CHECK(ok);
    printf("# crafted vocabulary of %lld values: %.4f s to open and look up, spread: %.4f s\n", (long long)n, tc, ts);
    CHECK(tc < 6 * ts + 0.005);
    unlink(crafted); unlink(spread);
}

// Records that pass every checksum but disagree with each other: the
// footer's total against its block entries (more and fewer), a block entry's
// count against the block's own header, and values out of range inside a
// block whose checksums are right (labels 2, -0.5 and NaN, an id past its
// slot): each refused, naming the file and block, no sample exposed.
static void refooter(unsigned char *f, size_t n, int64_t dtotal, int32_t dentry0) {
    uint64_t foff = wd__get64(f + n - 24), fbytes = wd__get64(f + n - 16);
    unsigned char *ft = f + foff;
    wd__put64(ft + 16, wd__get64(ft + 16) + (uint64_t)dtotal);
    wd__put32(ft + 24 + 8, wd__get32(ft + 24 + 8) + (uint32_t)dentry0);
    wd__put32(ft + fbytes - 8, wd__crc32c(ft, (size_t)fbytes - 8));
}
static int write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, n, f) == n;
    if (f && fclose(f)) ok = 0;
    return ok ? 0 : -1;
}
static void test_consistent_records(void) {
    char good[300], bad[300];
    tmp(good, sizeof good, "rec.wdr"); tmp(bad, sizeof bad, "rec-bad.wdr");
    REQUIRE(write_mixed(good) == 0);
    size_t n;
    unsigned char *src = slurp(good, &n), *f = (unsigned char *)malloc(n);
    REQUIRE(src && f);
    wd_reader *r;
    const int64_t dt[2] = {1, -1};
    for (int i = 0; i < 2; i++) {   // the footer's total says one more, one fewer
        memcpy(f, src, n);
        refooter(f, n, dt[i], 0);
        REQUIRE(write_bytes(bad, f, n) == 0);
        CHECK(wd_reader_open(bad, &r) == WD_ERR_CORRUPT && strstr(wd_last_error(), "rec-bad.wdr") && strstr(wd_last_error(), dt[i] > 0 ? "footer says 21" : "footer says 19"));
    }
    memcpy(f, src, n);   // the footer says block 0 holds 19 (total 19, consistent); the block says 20
    refooter(f, n, -1, -1);
    REQUIRE(write_bytes(bad, f, n) == 0);
    REQUIRE_OK(wd_reader_open(bad, &r));
    CHECK(wd_reader_nsamples(r) == 19);
    const wd_batch *b = NULL;
    CHECK(wd_reader_block(r, 0, &b) == WD_ERR_CORRUPT && strstr(wd_last_error(), "block 0") && strstr(wd_last_error(), "disagrees with the footer"));
    wd_reader_close(r);
    // values out of range in a block whose checksums hold (written past the writer's checks)
    wd_schema s;
    mixed_schema(&s);
    const float labels[3] = {2.0f, -0.5f, NAN};
    for (int v = 0; v < 4; v++) {
        wd_batch x;
        REQUIRE_OK(wd_batch_init(&x, &s, 20, 200));
        for (int i = 0; i < 20; i++) {
            x.label[i] = (float)(i % 2); x.weight[i] = 1;
            x.dense[2 * i] = (float)i; x.dense[2 * i + 1] = -1;
            x.offs[0][i + 1] = x.offs[0][i] + 1; x.ids[0][i] = (uint32_t)i;
            x.ids[1][i] = (uint32_t)i;
        }
        x.n = 20;
        if (v < 3) x.label[13] = labels[v];
        else x.ids[1][13] = 50;   // site has 50 buckets: ids 0..49
        ZSTD_CCtx *cc = ZSTD_createCCtx();
        wd__buf raw, blk;
        memset(&raw, 0, sizeof raw); memset(&blk, 0, sizeof blk);
        wd__blockfile bf;
        int ok = wd__block_encode(&s, &x, 0, 20, cc, 3, &raw, &blk) == WD_OK && wd__bf_open(&bf, bad, &s, "crafted", NULL, NULL) == WD_OK;
        if (ok) ok = wd__bf_put(&bf, blk.p, blk.len) == WD_OK && wd__bf_close(&bf) == WD_OK;
        ZSTD_freeCCtx(cc); wd__buf_free(&raw); wd__buf_free(&blk); wd_batch_free(&x);
        REQUIRE(ok);
        REQUIRE_OK(wd_reader_open(bad, &r));
        wd_batch y;
        REQUIRE_OK(wd_batch_init(&y, &s, 0, 0));
        wd_status st = wd_reader_read_block(r, 0, &y);
        CHECK(st != WD_OK && strstr(wd_last_error(), "rec-bad.wdr: block 0") && strstr(wd_last_error(), "sample 13") && strstr(wd_last_error(), v < 3 ? "label" : "site") && y.n == 0);
        wd_batch_free(&y);
        wd_reader_close(r);
    }
    free(src); free(f);
    unlink(good); unlink(bad);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_decode_into_mismatched_batch);
    RUN(test_predict_hostile_batches);
    RUN(test_null_and_bad_arguments);
    RUN(test_model_settings);
    RUN(test_huge_inputs_refused);
    RUN(test_poisoned_checkpoints);
    RUN(test_memory_asked_for);
    RUN(test_outputs_and_empty_inputs);
    RUN(test_crafted_vocabulary_opens_in_linear_time);
    RUN(test_consistent_records);
    return test_summary("test_hardening");
}
