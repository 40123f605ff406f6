// Edges and checks the mutation pass found untested (tests/mutate.sh with
// tests/mutations.txt; bench/RESULTS.md, issue 14): each test names the
// mutations it catches. Limits at their exact boundary, checks that only a
// crafted input reaches (with valid checksums), contracts of the allocator
// hooks, the loader's map callback, the training loop's options and the
// device plan. Through the public API; wd_gen for data.
// Usage: test_edges [TMPDIR]
// the implementation is linked in (tests/impl.c); this file uses the declarations only
#define _GNU_SOURCE   // unlink
#define WIDEDEEP_INTERNAL   // wd_model_view, the device plan, WD_STEP_TAIL: the header's tier 3
#include "../widedeep.h"
#include "testlib.h"
#include <math.h>
#include <unistd.h>

static char TMP[200] = "/tmp";
static void tmppath(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/edges-%s", TMP, name); }

// ---- helpers (independent of the library's internals) -------------------------------
static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
// CRC32C (Castagnoli, reflected 0x82F63B78) bit by bit, as section 7 documents it.
static uint32_t crc32c(const void *p, size_t n) {
    const uint8_t *c = (const uint8_t *)p;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= c[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}
static int spit(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}
// Two slots: "u" one-hot (buckets bu), "m" multi-hot (buckets 50); D dense.
static void mini_schema(wd_schema *s, int D, uint32_t bu) {
    memset(s, 0, sizeof *s);
    s->ndense = D;
    s->nslots = 2;
    snprintf(s->slot[0].name, WD_NAME_MAX, "u");
    s->slot[0].buckets = bu;
    snprintf(s->slot[1].name, WD_NAME_MAX, "m");
    s->slot[1].buckets = 50;
    s->slot[1].kind = WD_MULTI_HOT;
}
#define TRY(expr) do { wd_status st_ = (expr); if (st_ != WD_OK) return st_; } while (0)
// n samples: label i % 2, dense (i + d) / 8, u = i % bu, m = (i % 4) ids (3 i + j) % 50.
static wd_status mini_batch(wd_batch *b, const wd_schema *s, int n) {
    TRY(wd_batch_init(b, s, n, (int64_t)n * 4));
    for (int i = 0; i < n; i++) {
        b->label[i] = (float)(i % 2);
        b->weight[i] = 1.0f;
        for (int d = 0; d < s->ndense; d++) b->dense[(size_t)i * (size_t)s->ndense + (size_t)d] = (float)(i + d) / 8.0f;
        b->ids[0][i] = (uint32_t)i % s->slot[0].buckets;
        uint32_t o = b->offs[1][i], c = (uint32_t)(i % 4);
        for (uint32_t j = 0; j < c; j++) b->ids[1][o + j] = (uint32_t)(3 * i + (int)j) % 50;
        b->offs[1][i + 1] = o + c;
    }
    b->n = n;
    return WD_OK;
}
static wd_status write_batch(const char *path, const wd_schema *s, const wd_batch *b, int block) {
    wd_writer *w;
    wd_writer_desc d;
    memset(&d, 0, sizeof d);
    d.block_samples = block;
    unlink(path);
    TRY(wd_writer_open(path, s, &d, &w));
    wd_status st = wd_writer_append(w, b);
    if (st) { wd_writer_abort(w); return st; }
    return wd_writer_close(w);
}
static int same_sample(const wd_batch *a, int i, const wd_batch *b, int j) {
    if (a->label[i] != b->label[j] || memcmp(a->dense + (size_t)i * (size_t)a->ndense, b->dense + (size_t)j * (size_t)b->ndense, sizeof(float) * (size_t)a->ndense)) return 0;
    for (int k = 0; k < a->nslots; k++) {
        int ca, cb;
        const uint32_t *ia = wd_batch_sample_ids(a, k, i, &ca), *ib = wd_batch_sample_ids(b, k, j, &cb);
        if (ca != cb || (ca && memcmp(ia, ib, sizeof(uint32_t) * (size_t)ca))) return 0;
    }
    return 1;
}

// Criteo-shaped data from wd_gen: the model tests train on it.
static char DATA[300], VALID[300];
static int data_ok;
static wd_status gen_file(const char *path, int64_t rows, int64_t first, uint64_t seed, const char *tsv, wd_gen_report *rep) {
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = path; g.tsv = tsv; g.rows = rows; g.first_row = first; g.seed = seed; g.max_card = 300; g.block_samples = 500; g.threads = 2;
    unlink(path);
    return wd_gen(&g, rep);
}
static wd_model *gen_model(int optimizer, int no_wide, int no_deep, int pooling) {
    wd_reader *r = NULL;
    if (wd_reader_open(DATA, &r)) return NULL;
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = wd_reader_schema(r);
    d.embed_dim = 4; d.hidden[0] = 12; d.hidden[1] = 6;
    d.optimizer = optimizer; d.no_wide = no_wide; d.no_deep = no_deep; d.pooling = pooling;
    d.ncross = 1; d.cross[0][0] = 2; d.cross[0][1] = 5; d.cross_buckets = 500;
    d.seed = 5;
    wd_model *m = NULL;
    wd_status st = wd_model_create(&d, &m);
    wd_reader_close(r);
    return st ? NULL : m;
}
static wd_train_desc train_desc(const char *const *files, int batch, int64_t max_steps) {
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = batch; td.threads = 2; td.max_steps = max_steps;
    return td;
}

// ---- 2. Status ----------------------------------------------------------------------
// catches status-bound: the last code and one past it
static void test_status_string_bounds(void) {
    CHECK(strcmp(wd_status_string(WD_ERR_INTERNAL), "internal error") == 0);
    CHECK(strcmp(wd_status_string(WD_STATUS_COUNT), "unknown status") == 0);
    CHECK(strcmp(wd_status_string((wd_status)(WD_STATUS_COUNT + 1)), "unknown status") == 0);
    CHECK(strcmp(wd_status_string((wd_status)-1), "unknown status") == 0);
}

// ---- 3. Allocator ------------------------------------------------------------------
// Hooks that count the blocks they hand out and get back.
static long g_live, g_allocs, g_frees;
static void *count_alloc(size_t n, void *u) {
    (void)u;
    void *p = malloc(n);
    if (p) { __atomic_add_fetch(&g_live, 1, __ATOMIC_RELAXED); __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED); }
    return p;
}
static void count_free(void *p, void *u) {
    (void)u;
    if (p) { __atomic_sub_fetch(&g_live, 1, __ATOMIC_RELAXED); __atomic_add_fetch(&g_frees, 1, __ATOMIC_RELAXED); }
    free(p);
}
static wd_status hooked_work(void) {
    char path[400], ck[400];
    tmppath(path, sizeof path, "hooks.wdr");
    tmppath(ck, sizeof ck, "hooks.wdm");
    wd_schema s;
    mini_schema(&s, 2, 7);
    wd_batch b;
    TRY(mini_batch(&b, &s, 40));
    wd_status st = write_batch(path, &s, &b, 16);
    wd_reader *r = NULL;
    if (!st) st = wd_reader_open(path, &r);
    int64_t bad;
    if (!st) st = wd_reader_verify(r, &bad);
    wd_reader_close(r);
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = &s; d.embed_dim = 3; d.hidden[0] = 5; d.ncross = 0; d.optimizer = WD_ADAM;
    wd_model *m = NULL, *m2 = NULL;
    if (!st) st = wd_model_create(&d, &m);
    const char *files[1] = {path};
    wd_train_desc td = train_desc(files, 8, 3);
    td.valid_files = files; td.nvalid = 1;
    if (!st) st = wd_train(m, &td, NULL);
    if (!st) st = wd_model_save(m, ck);
    if (!st) st = wd_model_load(ck, &m2);
    float p[40];
    if (!st) st = wd_predict(m2, &b, p);
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = files; e.nfiles = 1; e.threads = 2; e.batch_size = 16;
    wd_metrics mt;
    if (!st) st = wd_evaluate(m2, &e, &mt);
    wd_model_destroy(m);
    wd_model_destroy(m2);
    wd_batch_free(&b);
    return st;
}
// catches free-bypasses-hook (and a hook that is never installed):
// every block the library takes from the hooks goes back through them
static void test_allocator_hooks_balance(void) {
    wd_allocator a = {count_alloc, count_free, NULL};
    g_live = g_allocs = g_frees = 0;
    wd_set_allocator(&a);
    wd_status st = hooked_work();
    wd_set_allocator(NULL);
    printf("  %ld blocks from the hooks, %ld returned to them\n", g_allocs, g_frees);
    CHECK_OK(st);
    CHECK(g_allocs > 20 && g_live == 0 && g_frees == g_allocs);
    // NULL restores malloc/free: nothing more reaches the hooks
    long before = g_allocs;
    wd_batch b;
    wd_schema s;
    mini_schema(&s, 1, 3);
    CHECK_OK(wd_batch_init(&b, &s, 10, 10));
    wd_batch_free(&b);
    CHECK(g_allocs == before);
}

// ---- 4. Schema -------------------------------------------------------------------------
// catches schema-dense-limit: WD_MAX_DENSE dense columns and WD_MAX_SLOTS
// slots are allowed, one more is not; a file at the limit round-trips
static void test_schema_limits(void) {
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = WD_MAX_DENSE;
    CHECK_OK(wd_schema_check(&s));
    s.ndense = WD_MAX_DENSE + 1;
    CHECK(wd_schema_check(&s) == WD_ERR_LIMIT);
    s.ndense = 1;
    s.nslots = WD_MAX_SLOTS;
    for (int k = 0; k < WD_MAX_SLOTS; k++) { snprintf(s.slot[k].name, WD_NAME_MAX, "c%d", k); s.slot[k].buckets = 3; }
    CHECK_OK(wd_schema_check(&s));
    s.nslots = WD_MAX_SLOTS + 1;
    CHECK(wd_schema_check(&s) == WD_ERR_LIMIT);
    // a file of WD_MAX_DENSE dense columns
    memset(&s, 0, sizeof s);
    s.ndense = WD_MAX_DENSE;
    char path[400];
    tmppath(path, sizeof path, "dense-limit.wdr");
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &s, 3, 0));
    for (int i = 0; i < 3; i++) {
        b.label[i] = (float)(i & 1); b.weight[i] = 1.0f;
        for (int d = 0; d < WD_MAX_DENSE; d++) b.dense[(size_t)i * WD_MAX_DENSE + (size_t)d] = (float)(i * 1000 + d);
    }
    b.n = 3;
    CHECK_OK(write_batch(path, &s, &b, 2));
    wd_reader *r = NULL;
    CHECK_OK(wd_reader_open(path, &r));
    if (r) {
        const wd_batch *x;
        CHECK(wd_reader_schema(r)->ndense == WD_MAX_DENSE && wd_reader_nsamples(r) == 3);
        CHECK_OK(wd_reader_block(r, 1, &x));
        CHECK(x && x->n == 1 && same_sample(x, 0, &b, 2));
        wd_reader_close(r);
    }
    wd_batch_free(&b);
}

// catches schema-equal-buckets: schemas differing in one slot's bucket count
// differ, and the loader and wd_evaluate refuse such files
static void test_schema_equal(void) {
    wd_schema a, b;
    mini_schema(&a, 2, 7);
    b = a;
    CHECK(wd_schema_equal(&a, &b));
    b.slot[1].buckets = 51;
    CHECK(!wd_schema_equal(&a, &b));
    b = a; b.slot[0].kind = WD_MULTI_HOT;
    CHECK(!wd_schema_equal(&a, &b));
    b = a; b.slot[1].name[0] = 'n';
    CHECK(!wd_schema_equal(&a, &b));
    b = a; b.ndense = 3;
    CHECK(!wd_schema_equal(&a, &b));
    char pa[400], pb[400];
    tmppath(pa, sizeof pa, "schema-a.wdr");
    tmppath(pb, sizeof pb, "schema-b.wdr");
    b = a; b.slot[0].buckets = 8;   // only the bucket count of slot u differs
    wd_batch x;
    REQUIRE_OK(mini_batch(&x, &a, 20));
    CHECK_OK(write_batch(pa, &a, &x, 10));
    CHECK_OK(write_batch(pb, &b, &x, 10));
    wd_batch_free(&x);
    const char *files[2] = {pa, pb};
    wd_loader_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.files = files; ld.nfiles = 2; ld.batch_size = 4; ld.threads = 1; ld.ram_bytes = 1 << 24;
    wd_loader *l = NULL;
    wd_status st = wd_loader_open(&ld, &l);
    CHECK(st == WD_ERR_SCHEMA && strstr(wd_last_error(), "schema-b.wdr"));
    if (!st) wd_loader_close(l);
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = &a; d.embed_dim = 2; d.hidden[0] = 3;
    wd_model *m = NULL;
    REQUIRE_OK(wd_model_create(&d, &m));
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = files + 1; e.nfiles = 1; e.threads = 1;
    wd_metrics mt;
    CHECK(wd_evaluate(m, &e, &mt) == WD_ERR_SCHEMA && strstr(wd_last_error(), "buckets"));
    wd_model_destroy(m);
}

// ---- 5. Batch ---------------------------------------------------------------------------
// catches append-nnz: a multi-hot batch appended in pieces to a growing batch
static void test_batch_append_pieces(void) {
    wd_schema s;
    mini_schema(&s, 1, 9);
    wd_batch src, dst;
    REQUIRE_OK(mini_batch(&src, &s, 60));
    REQUIRE_OK(wd_batch_init(&dst, &s, 0, 0));
    int cuts[5] = {0, 7, 19, 20, 60};   // an empty piece and a one-sample piece too
    for (int c = 0; c < 4; c++) CHECK_OK(wd_batch_append(&dst, &src, cuts[c], cuts[c + 1] - cuts[c]));
    CHECK_OK(wd_batch_append(&dst, &src, 60, 0));
    CHECK(wd_batch_append(&dst, &src, 55, 6) == WD_ERR_INVALID_ARG);
    REQUIRE(dst.n == 60);
    int bad = 0;
    for (int i = 0; i < 60; i++) bad += !same_sample(&dst, i, &src, i) || dst.weight[i] != 1.0f;
    CHECK(bad == 0 && dst.offs[1][60] == src.offs[1][60]);
    // and onto a batch that already holds samples (ids appended after its own)
    CHECK_OK(wd_batch_append(&dst, &src, 30, 30));
    bad = 0;
    for (int i = 0; i < 30; i++) bad += !same_sample(&dst, 60 + i, &src, 30 + i);
    CHECK(dst.n == 90 && bad == 0);
    wd_batch_free(&src);
    wd_batch_free(&dst);
}

// ---- 7. Records --------------------------------------------------------------------------
// catches reader-slot-limit: a header of WD_MAX_SLOTS + 1 slots, consistent
// in size and checksum, is refused before it is read
static void test_reader_slot_limit(void) {
    char ok[400], path[400];
    tmppath(ok, sizeof ok, "version.wdr");
    tmppath(path, sizeof path, "slots.wdr");
    wd_schema s;
    mini_schema(&s, 1, 5);
    wd_batch b;
    REQUIRE_OK(mini_batch(&b, &s, 4));
    wd_status st = write_batch(ok, &s, &b, 4);
    wd_batch_free(&b);
    REQUIRE_OK(st);
    size_t n0 = 0;
    uint8_t *valid = slurp(ok, &n0);
    REQUIRE(valid && n0 > 12);
    const uint32_t S = WD_MAX_SLOTS + 1;
    size_t hb = 96 + 48 * (size_t)S + 4;
    uint8_t *h = (uint8_t *)calloc(hb + 24, 1);
    REQUIRE(h != NULL);
    memcpy(h, valid, 12);   // magic and the version this build writes
    free(valid);
    put32(h + 12, (uint32_t)hb);
    put32(h + 16, 1);
    put32(h + 20, S);
    for (uint32_t k = 0; k < S; k++) {
        uint8_t *e = h + 96 + 48 * (size_t)k;
        snprintf((char *)e, 32, "c%u", k);
        put32(e + 32, 10);
    }
    put32(h + hb - 4, crc32c(h, hb - 4));
    CHECK(spit(path, h, hb + 24) == 0);
    free(h);
    wd_reader *r = NULL;
    st = wd_reader_open(path, &r);
    CHECK(st == WD_ERR_CORRUPT && strstr(wd_last_error(), "slots"));
    if (!st) wd_reader_close(r);
}

// catches decode-append-weights: blocks decoded one after another into one
// batch each set their own samples' weights
static void test_decode_appends_weights(void) {
    char path[400];
    tmppath(path, sizeof path, "append.wdr");
    wd_schema s;
    mini_schema(&s, 2, 7);
    wd_batch b, acc;
    REQUIRE_OK(mini_batch(&b, &s, 150));
    wd_status st = write_batch(path, &s, &b, 50);
    REQUIRE_OK(st);
    REQUIRE_OK(wd_batch_init(&acc, &s, 200, 800));
    for (int i = 0; i < 200; i++) acc.weight[i] = 7.0f;   // what decoding must overwrite
    wd_reader *r = NULL;
    wd_decoder *dec = NULL;
    REQUIRE_OK(wd_reader_open(path, &r));
    REQUIRE_OK(wd_decoder_create(&dec));
    REQUIRE(wd_reader_nblocks(r) == 3);
    uint8_t *buf = (uint8_t *)malloc(1 << 16);
    for (int64_t i = 0; i < 3; i++) {
        CHECK_OK(wd_reader_fetch(r, i, buf, 1 << 16));
        CHECK_OK(wd_decode_block(dec, r, i, buf, wd_reader_block_bytes(r, i), &acc));
    }
    int bad = 0, badw = 0;
    for (int i = 0; i < acc.n && i < 150; i++) { bad += !same_sample(&acc, i, &b, i); badw += acc.weight[i] != 1.0f; }
    CHECK(acc.n == 150 && bad == 0 && badw == 0);
    free(buf);
    wd_decoder_destroy(dec);
    wd_reader_close(r);
    wd_batch_free(&b);
    wd_batch_free(&acc);
}

// catches unshuffle-max: ids beyond a (shrunk) bucket count are found in
// blocks of 64 samples too (the vectorised unshuffle), one-hot and multi-hot
static void test_decode_range_wide_blocks(void) {
    char path[400], bad[400];
    tmppath(path, sizeof path, "range.wdr");
    tmppath(bad, sizeof bad, "range-bad.wdr");
    wd_schema s;
    mini_schema(&s, 1, 40);
    wd_batch b;
    REQUIRE_OK(mini_batch(&b, &s, 128));
    wd_status st = write_batch(path, &s, &b, 64);
    wd_batch_free(&b);
    REQUIRE_OK(st);
    size_t n = 0;
    uint8_t *src = slurp(path, &n);
    REQUIRE(src && n > 200);
    uint32_t hb = get32(src + 12);
    for (int slot = 0; slot < 2; slot++) {
        uint8_t *buf = (uint8_t *)malloc(n);
        memcpy(buf, src, n);
        put32(buf + 96 + 48 * slot + 32, 2);   // ids go up to 39 (u) and 49 (m): 2 buckets now
        put32(buf + hb - 4, crc32c(buf, hb - 4));
        CHECK(spit(bad, buf, n) == 0);
        free(buf);
        wd_reader *r = NULL;
        REQUIRE_OK(wd_reader_open(bad, &r));
        int64_t blk = -1;
        st = wd_reader_verify(r, &blk);
        CHECK(st == WD_ERR_CORRUPT && blk == 0 && strstr(wd_last_error(), "outside its 2 buckets") && strstr(wd_last_error(), "block 0"));
        wd_reader_close(r);
    }
    free(src);
}

// ---- 8. Text parsers ----------------------------------------------------------------------
// A Criteo line with I1 = v and every other field empty.
static void criteo_line(char *buf, size_t n, const char *v) {
    int k = snprintf(buf, n, "0\t%s", v);
    for (int i = 0; i < 12 + 26 && k < (int)n - 1; i++) buf[k++] = '\t';
    buf[k] = 0;
}
// catches i64-overflow: counts at the limits of int64
static void test_parse_integer_limits(void) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    REQUIRE(t != NULL);
    wd_text_spec_criteo(t, 1000);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    char line[256];
    struct { const char *v; int ok; double want; } cases[] = {
        {"9223372036854775807", 1, log1p(9223372036854775807.0)},
        {"-9223372036854775808", 1, -log1p(9223372036854775808.0)},
        {"+5", 1, log1p(5.0)},
        {"9223372036854775808", 0, 0},
        {"-9223372036854775809", 0, 0},
        {"18446744073709551616", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        criteo_line(line, sizeof line, cases[i].v);
        int n0 = b.n;
        wd_status st = wd_parse_line(t, line, strlen(line), &b);
        if (cases[i].ok) {
            CHECK_OK(st);
            CHECK(b.n == n0 + 1 && fabs(b.dense[(size_t)n0 * 13] - cases[i].want) <= 1e-6 * fabs(cases[i].want));
        } else {
            CHECK(st == WD_ERR_PARSE && strstr(wd_last_error(), "too large"));
            CHECK(b.n == n0);
        }
    }
    wd_batch_free(&b);
    free(t);
}

// catches float-range: values outside the float range are refused (LibSVM
// values, CSV with dense_raw), the largest floats are not
static void test_parse_float_range(void) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    REQUIRE(t != NULL);
    REQUIRE_OK(wd_text_spec_libsvm(t, "a=0-9", "10-11", 0));
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    const char *bad[3] = {"1 10:1e39", "0 11:-4e38", "1 3:1 10:1e300"};
    for (int i = 0; i < 3; i++) CHECK(wd_parse_line(t, bad[i], strlen(bad[i]), &b) == WD_ERR_PARSE && b.n == 0);
    const char *good = "1 10:3.4e38 11:-3.4e38";
    CHECK_OK(wd_parse_line(t, good, strlen(good), &b));
    CHECK(b.n == 1 && b.dense[0] == 3.4e38f && b.dense[1] == -3.4e38f);
    wd_batch_free(&b);
    REQUIRE_OK(wd_text_spec_csv(t, "y,x,c", "y", "x", "c", 10));
    t->dense_raw = 1;
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    CHECK(wd_parse_line(t, "1,1e39,a", 8, &b) == WD_ERR_PARSE && b.n == 0);
    CHECK(wd_parse_line(t, "1,-1e39,a", 9, &b) == WD_ERR_PARSE && b.n == 0);
    CHECK_OK(wd_parse_line(t, "0,-2.5,a", 8, &b));
    CHECK(b.n == 1 && b.dense[0] == -2.5f);
    wd_batch_free(&b);
    free(t);
}

// ---- 10. Synthetic data -------------------------------------------------------------------
// catches gen-bias and gen-negative-counts: the planted model of section 10.
// Only I2 holds negative counts (count - 3), and the clicks of a seeded
// stream are pinned: 2206 of rows 0..6999 for seed 13, max_card 300 (counted
// once, on 0.1.0's wd_gen; a label moves only when the model does, so the
// count is robust to float rounding). A bias b0 0.1 off moves it by ~100.
static void test_gen_planted_model(void) {
    REQUIRE(data_ok);
    wd_reader *r = NULL;
    REQUIRE_OK(wd_reader_open(DATA, &r));
    int64_t pos = 0, neg[13] = {0}, n = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        REQUIRE_OK(wd_reader_block(r, i, &b));
        for (int j = 0; j < b->n; j++) {
            pos += b->label[j] == 1.0f;
            for (int c = 0; c < 13; c++) neg[c] += b->dense[(size_t)j * 13 + (size_t)c] < 0.0f;
        }
        n += b->n;
    }
    wd_reader_close(r);
    int others = 0;
    for (int c = 0; c < 13; c++) others += c != 1 && neg[c] != 0;
    printf("  %lld rows: %lld clicks, %lld negative I2 counts, %d other columns with negatives\n", (long long)n, (long long)pos, (long long)neg[1], others);
    CHECK(n == 7000 && neg[1] > 100 && others == 0);
    CHECK(pos == 2206);
}

// ---- 11. Metrics ----------------------------------------------------------------------------
// catches logloss-clip: probabilities inside [1e-7, 1 - 1e-7] count as they
// are, those outside are clipped to it
static void test_logloss_clipping(void) {
    float p[4] = {1e-5f, 1.0f - 1e-5f, 0.0f, 1.0f}, y[4] = {1, 0, 1, 0};
    double want = -(log((double)p[0]) + log(1.0 - (double)p[1])) / 2;
    CHECK(fabs(wd_logloss(p, y, NULL, 2) - want) <= 1e-9 * want);
    CHECK(fabs(wd_logloss(p + 2, y + 2, NULL, 2) + log(1e-7)) <= 1e-6 * -log(1e-7));
    CHECK(fabs(wd_logloss(p + 2, y + 2, NULL, 1) + log(1e-7)) <= 1e-9 * -log(1e-7));
}

// ---- 12. Loader ----------------------------------------------------------------------------
static int g_map_mode;
static wd_status bad_map(void *user, wd_batch *b, int worker) {
    (void)user; (void)worker;
    int i = b->n / 2;
    switch (g_map_mode) {
    case 0: b->label[i] = 2.0f; break;
    case 1: b->dense[(size_t)i * (size_t)b->ndense] = NAN; break;
    case 2: b->ids[0][i] = 7; break;            // u has 7 buckets
    case 3: b->weight[i] = -1.0f; break;
    default: wd_set_last_error("map refused the block"); return WD_ERR_INVALID_ARG;
    }
    return WD_OK;
}
// catches loader-map-check and loader-skip-policy: what the map callback
// leaves is checked like a decoded block; a failing callback stops the epoch
// under either corrupt-block policy
static void test_loader_map_contract(void) {
    char path[400];
    tmppath(path, sizeof path, "map.wdr");
    wd_schema s;
    mini_schema(&s, 2, 7);
    wd_batch b;
    REQUIRE_OK(mini_batch(&b, &s, 60));
    wd_status st = write_batch(path, &s, &b, 20);
    wd_batch_free(&b);
    REQUIRE_OK(st);
    const char *files[1] = {path};
    const wd_status want[5] = {WD_ERR_INVALID_ARG, WD_ERR_NUMERIC, WD_ERR_INVALID_ARG, WD_ERR_NUMERIC,
                               WD_ERR_INVALID_ARG};   // a label 2 and an id out of range from the callback: invalid
    for (int policy = WD_CORRUPT_FAIL; policy <= WD_CORRUPT_SKIP; policy++)
        for (int mode = 0; mode < 5; mode++) {
            g_map_mode = mode;
            wd_loader_desc d;
            memset(&d, 0, sizeof d);
            d.files = files; d.nfiles = 1; d.batch_size = 16; d.threads = 2; d.ram_bytes = 1 << 24;
            d.corrupt = policy; d.map = bad_map;
            wd_loader *l = NULL;
            REQUIRE_OK(wd_loader_open(&d, &l));
            st = wd_loader_reset(l, 0, 0);
            CHECK_OK(st);
            const wd_batch *x = NULL;
            while (!st && !(st = wd_loader_next(l, &x)) && x) {}
            wd_loader_stats ls;
            wd_loader_stats_get(l, &ls);
            wd_loader_close(l);
            if (st != want[mode] || ls.skipped_blocks != 0) printf("  policy %d, map mode %d: %s (%s), %lld blocks skipped\n", policy, mode, wd_status_string(st), wd_last_error(), (long long)ls.skipped_blocks);
            CHECK(st == want[mode] && ls.skipped_blocks == 0);
            CHECK(strstr(wd_last_error(), "map.wdr") != NULL);
        }
}

// ---- 13. Model ------------------------------------------------------------------------------
// catches cross-slot-range: a cross must name two existing slots
static void test_model_cross_range(void) {
    wd_schema s;
    mini_schema(&s, 1, 7);
    s.slot[1].kind = WD_ONE_HOT;
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = &s; d.embed_dim = 2; d.hidden[0] = 3; d.ncross = 1;
    wd_model *m = NULL;
    const int pairs[4][2] = {{0, 2}, {2, 0}, {-1, 1}, {1, 0}};
    for (int i = 0; i < 4; i++) {
        d.cross[0][0] = pairs[i][0]; d.cross[0][1] = pairs[i][1];
        wd_status st = wd_model_create(&d, &m);
        if (i < 3) CHECK(st == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "cross"));
        else CHECK_OK(st);
        if (!st) { wd_model_destroy(m); m = NULL; }
    }
}

// ---- 13. Gradient guards ---------------------------------------------------------------------
// catches grad-max: a step whose gradient exceeds 1e15 (dense inputs of 1e30)
// is refused before anything is written, with a message that says so
static void test_gradient_limit(void) {
    char path[400];
    tmppath(path, sizeof path, "huge.wdr");
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = 1; s.nslots = 1;
    snprintf(s.slot[0].name, WD_NAME_MAX, "u");
    s.slot[0].buckets = 4;
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &s, 8, 0));
    for (int i = 0; i < 8; i++) { b.label[i] = i < 4 ? 0.0f : 1.0f; b.weight[i] = 1.0f; b.dense[i] = i < 4 ? 1e30f : 1.0f; b.ids[0][i] = (uint32_t)i % 4; }
    b.n = 8;
    wd_status st = write_batch(path, &s, &b, 8);
    wd_batch_free(&b);
    REQUIRE_OK(st);
    for (int deep = 0; deep <= 1; deep++) {
        wd_model_desc d;
        memset(&d, 0, sizeof d);
        d.schema = &s; d.embed_dim = 2; d.hidden[0] = 3; d.no_deep = !deep;
        wd_model *m = NULL;
        REQUIRE_OK(wd_model_create(&d, &m));
        wd_model_view v;
        wd_model_view_get(m, &v);
        float *snap = (float *)malloc(sizeof(float) * (size_t)v.P);
        memcpy(snap, v.dense, sizeof(float) * (size_t)v.P);
        const char *files[1] = {path};
        wd_train_desc td = train_desc(files, 8, 1);
        st = wd_train(m, &td, NULL);
        printf("  %s: %s: %s\n", deep ? "wide & deep" : "wide only", wd_status_string(st), wd_last_error());
        CHECK(st == WD_ERR_NUMERIC && (strstr(wd_last_error(), "exceed") || strstr(wd_last_error(), "loss is not finite")));
        if (!deep) CHECK(strstr(wd_last_error(), "exceed") != NULL);   // the loss is finite here: the gradient is not
        int64_t step = -1;
        wd_model_position(m, NULL, NULL, &step);
        CHECK(step == 0 && memcmp(snap, v.dense, sizeof(float) * (size_t)v.P) == 0);
        free(snap);
        wd_model_destroy(m);
    }
}

// ---- 15. Training loop ---------------------------------------------------------------------
typedef struct ck_probe { const char *path; int64_t at5, at7; } ck_probe;
static int probe_checkpoint(void *user, const wd_progress *p) {
    ck_probe *c = (ck_probe *)user;
    if (p->step == 5 || p->step == 7) {
        wd_model *m = NULL;
        int64_t step = -2;
        if (wd_model_load(c->path, &m) == WD_OK) { wd_model_position(m, NULL, NULL, &step); wd_model_destroy(m); }
        if (p->step == 5) c->at5 = step; else c->at7 = step;
    }
    return 0;
}
// catches loop-checkpoint-every: with checkpoint_every 3 the file holds the
// model of step 3 after step 5, of step 6 after step 7, and of step 7 at the end
static void test_checkpoint_every(void) {
    REQUIRE(data_ok);
    char ck[400];
    tmppath(ck, sizeof ck, "every.wdm");
    unlink(ck);
    wd_model *m = gen_model(WD_ADAGRAD, 0, 0, WD_POOL_SUM);
    REQUIRE(m != NULL);
    const char *files[1] = {DATA};
    wd_train_desc td = train_desc(files, 100, 7);
    td.checkpoint_path = ck; td.checkpoint_every = 3;
    ck_probe c = {ck, -1, -1};
    td.progress = probe_checkpoint; td.user = &c;
    CHECK_OK(wd_train(m, &td, NULL));
    wd_model *f = NULL;
    int64_t last = -1;
    CHECK_OK(wd_model_load(ck, &f));
    if (f) { wd_model_position(f, NULL, NULL, &last); wd_model_destroy(f); }
    printf("  checkpoint after step 5: step %lld; after step 7: step %lld; at the end: step %lld\n", (long long)c.at5, (long long)c.at7, (long long)last);
    CHECK(c.at5 == 3 && c.at7 == 6 && last == 7);
    wd_model_destroy(m);
}

typedef struct eval_log { int n; int64_t step[16]; } eval_log;
static int log_validations(void *user, const wd_progress *p) {
    eval_log *g = (eval_log *)user;
    if (!isnan(p->valid_auc) && g->n < 16) g->step[g->n++] = p->step;
    return 0;
}
// catches loop-eval-every: eval_every 30 over an epoch of 70 steps validates
// after steps 30 and 60, then at the epoch's end
static void test_eval_every(void) {
    REQUIRE(data_ok);
    wd_model *m = gen_model(WD_ADAGRAD, 0, 0, WD_POOL_SUM);
    REQUIRE(m != NULL);
    const char *files[1] = {DATA}, *valid[1] = {VALID};
    wd_train_desc td = train_desc(files, 100, 0);
    td.valid_files = valid; td.nvalid = 1; td.eval_every = 30;
    eval_log g;
    memset(&g, 0, sizeof g);
    td.progress = log_validations; td.user = &g;
    wd_train_report rep;
    CHECK_OK(wd_train(m, &td, &rep));
    printf("  %d validations, after steps", g.n);
    for (int i = 0; i < g.n; i++) printf(" %lld", (long long)g.step[i]);
    printf("\n");
    CHECK(rep.steps == 70 && g.n == 3 && g.step[0] == 30 && g.step[1] == 60 && g.step[2] == 70);
    wd_model_destroy(m);
}

// catches loop-auto-batch: with no batch size, 4096 halved until an epoch
// has at least 100 steps: 64 for 7000 samples
static void test_default_batch(void) {
    REQUIRE(data_ok);
    wd_model *m = gen_model(WD_ADAGRAD, 0, 0, WD_POOL_SUM);
    REQUIRE(m != NULL);
    const char *files[1] = {DATA};
    wd_train_desc td = train_desc(files, 0, 2);
    wd_train_report rep;
    CHECK_OK(wd_train(m, &td, &rep));
    wd_model_view v;
    wd_model_view_get(m, &v);
    CHECK(*v.batch_size == 64 && rep.steps == 2 && rep.samples == 128);
    wd_model_destroy(m);
}

// ---- 15. Evaluation and prediction ------------------------------------------------------------
// catches eval-predictions-cap and predict-id-bound
static void test_eval_and_predict_bounds(void) {
    REQUIRE(data_ok);
    wd_model *m = gen_model(WD_ADAGRAD, 0, 0, WD_POOL_SUM);
    REQUIRE(m != NULL);
    const char *files[1] = {DATA};
    float *p = (float *)malloc(sizeof(float) * 7000);
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = files; e.nfiles = 1; e.threads = 2; e.batch_size = 1000;
    e.predictions = p; e.predictions_cap = 6999;
    wd_metrics mt;
    CHECK(wd_evaluate(m, &e, &mt) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "predictions"));
    e.predictions_cap = 7000;
    CHECK_OK(wd_evaluate(m, &e, &mt));
    CHECK(mt.samples == 7000);
    // wd_predict: ids must be below the slot's bucket count
    wd_reader *r = NULL;
    REQUIRE_OK(wd_reader_open(DATA, &r));
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, wd_reader_schema(r), 0, 0));
    REQUIRE_OK(wd_reader_read_block(r, 0, &b));
    uint32_t B0 = wd_reader_schema(r)->slot[0].buckets, B25 = wd_reader_schema(r)->slot[25].buckets;
    wd_reader_close(r);
    b.ids[0][1] = B0 - 1;
    b.ids[25][2] = B25 - 1;
    CHECK_OK(wd_predict(m, &b, p));
    b.ids[0][1] = B0;
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "outside"));
    b.ids[0][1] = 0; b.ids[25][2] = B25;
    CHECK(wd_predict(m, &b, p) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "outside"));
    wd_batch_free(&b);
    free(p);
    wd_model_destroy(m);
}

// ---- 16. Checkpoints ----------------------------------------------------------------------------
// catches ckpt-flags and ckpt-trailing-bytes: every kind of model (wide only,
// deep only with mean pooling and Adam, both) saves and loads to the same
// description and predictions; a file with bytes after its end is refused
static void test_checkpoint_kinds(void) {
    REQUIRE(data_ok);
    char ck[400], ck2[400];
    tmppath(ck, sizeof ck, "kind.wdm");
    tmppath(ck2, sizeof ck2, "kind-tail.wdm");
    wd_reader *r = NULL;
    REQUIRE_OK(wd_reader_open(DATA, &r));
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, wd_reader_schema(r), 0, 0));
    REQUIRE_OK(wd_reader_read_block(r, 0, &b));
    wd_reader_close(r);
    b.n = 64;
    const char *files[1] = {DATA};
    const int kinds[3][4] = {{WD_ADAGRAD, 0, 1, WD_POOL_SUM}, {WD_ADAM, 1, 0, WD_POOL_MEAN}, {WD_ADAM, 0, 0, WD_POOL_SUM}};
    for (int k = 0; k < 3; k++) {
        wd_model *m = gen_model(kinds[k][0], kinds[k][1], kinds[k][2], kinds[k][3]), *x = NULL;
        REQUIRE(m != NULL);
        wd_train_desc td = train_desc(files, 100, 3);
        CHECK_OK(wd_train(m, &td, NULL));
        CHECK_OK(wd_model_save(m, ck));
        CHECK_OK(wd_model_load(ck, &x));
        if (x) {
            const wd_model_desc *a = wd_model_description(m), *c = wd_model_description(x);
            CHECK(c->optimizer == a->optimizer && c->no_wide == a->no_wide && c->no_deep == a->no_deep && c->pooling == a->pooling &&
                  c->ncross == a->ncross && c->embed_dim == a->embed_dim && c->precision == a->precision);
            float p1[64], p2[64];
            CHECK_OK(wd_predict(m, &b, p1));
            CHECK_OK(wd_predict(x, &b, p2));
            CHECK(memcmp(p1, p2, sizeof p1) == 0);
            int64_t s1, s2;
            wd_model_position(m, NULL, NULL, &s1);
            wd_model_position(x, NULL, NULL, &s2);
            CHECK(s1 == 3 && s2 == 3);
            wd_model_destroy(x);
        }
        // the same file with one byte more is not a checkpoint we wrote
        size_t n = 0;
        uint8_t *bytes = slurp(ck, &n);
        REQUIRE(bytes != NULL);
        bytes[n] = 0;
        CHECK(spit(ck2, bytes, n + 1) == 0);
        free(bytes);
        x = NULL;
        wd_status st = wd_model_load(ck2, &x);
        CHECK(st == WD_ERR_CORRUPT && strstr(wd_last_error(), "kind-tail.wdm"));
        if (!st) wd_model_destroy(x);
        wd_model_destroy(m);
    }
    wd_batch_free(&b);
}

// catches ckpt-unsound: a checkpoint holding a NaN, with every checksum
// right, is refused; and a model holding one is not saved
static void test_checkpoint_unsound(void) {
    REQUIRE(data_ok);
    char ck[400], bad[400];
    tmppath(ck, sizeof ck, "sound.wdm");
    tmppath(bad, sizeof bad, "unsound.wdm");
    wd_model *m = gen_model(WD_ADAGRAD, 0, 0, WD_POOL_SUM);
    REQUIRE(m != NULL);
    REQUIRE_OK(wd_model_save(m, ck));
    size_t n = 0;
    uint8_t *f = slurp(ck, &n);
    REQUIRE(f != NULL && n > 12);
    // walk the sections ({tag, 0, u64 bytes, payload, crc32c, 0}) to 'DENS'
    size_t off = 12, dens = 0, len = 0;
    while (off + 16 <= n) {
        uint64_t bytes = (uint64_t)get32(f + off + 8) | (uint64_t)get32(f + off + 12) << 32;
        if (memcmp(f + off, "DENS", 4) == 0) { dens = off + 16; len = (size_t)bytes; break; }
        off += 16 + (size_t)bytes + 8;
    }
    REQUIRE(dens > 0 && len >= 8 && dens + len + 8 <= n);
    float nan = NAN;
    memcpy(f + dens + 4, &nan, 4);   // the second dense parameter
    put32(f + dens + len, crc32c(f + dens, len));
    CHECK(spit(bad, f, n) == 0);
    free(f);
    wd_model *x = NULL;
    wd_status st = wd_model_load(bad, &x);
    CHECK(st == WD_ERR_CORRUPT && strstr(wd_last_error(), "unsound.wdm"));
    if (!st) wd_model_destroy(x);
    wd_model_view v;
    wd_model_view_get(m, &v);
    v.dense[1] = NAN;
    CHECK(wd_model_save(m, bad) == WD_ERR_NUMERIC);
    wd_model_destroy(m);
}

// ---- 17. Device plan -----------------------------------------------------------------------------
// catches plan-dense-grad: the buffer sizes the wd_buf comments document,
// with P and IN from the layout of section 17 (computed here), over 240
// model shapes: each buffer is rounded up to 256 bytes, so a few bytes too
// few show only where the true size sits just above a multiple of 256.
static void test_plan_sizes(void) {
    wd_schema s;
    mini_schema(&s, 3, 7);
    s.nslots = 3;
    snprintf(s.slot[2].name, WD_NAME_MAX, "v");
    s.slot[2].buckets = 11;
    const int B = 100, ranks = 2, D = 3, S = 3, ncross = 1;
    int configs = 0, bad = 0, tight = 0;
    for (int E = 2; E <= 4; E++)
        for (int H0 = 1; H0 <= 40; H0++)
            for (int H1 = 0; H1 <= 7; H1 += 7) {
                wd_model_desc d;
                memset(&d, 0, sizeof d);
                d.schema = &s; d.embed_dim = E; d.hidden[0] = H0; d.hidden[1] = H1; d.optimizer = WD_ADAM;
                d.ncross = ncross; d.cross[0][0] = 0; d.cross[0][1] = 2; d.cross_buckets = 13;
                wd_plan p;
                if (wd_plan_from_desc(&d, B, ranks, &p) != WD_OK) { bad++; continue; }
                int IN = D + S * E, INp = (IN + 15) / 16 * 16, widths[3] = {H0, H1 ? H1 : 1, 1}, nl = H1 ? 3 : 2;
                int64_t P = 0, in = IN, widest = INp, colw = D + 1;
                for (int l = 0; l < nl; l++) { P += in * widths[l] + widths[l]; in = widths[l]; widest = widths[l] > widest ? widths[l] : widest; colw = widths[l] > colw ? widths[l] : colw; }
                P += D + 1;
                int64_t Pd = P + (int64_t)(INp - IN) * H0, R = 1 + E;
                int64_t N = (int64_t)ranks * B * (2 + ncross + 8);   // 2 one-hot slots, 1 cross, 8 ids per multi-hot slot
                int64_t emb = 4 * (int64_t)(7 + 50 + 11) * E;
                tight += (4 * (Pd + WD_STEP_TAIL)) % 256 != 0 && (4 * (Pd + WD_STEP_TAIL)) % 256 <= 16;
                struct { int buf, index; int64_t bytes; } want[] = {
                    {WD_BUF_DENSE, 0, 4 * Pd}, {WD_BUF_DENSE_S1, 0, 4 * Pd}, {WD_BUF_DENSE_S2, 0, 4 * Pd},
                    {WD_BUF_WIDE, 0, 4 * (7 + 50 + 11 + 13)}, {WD_BUF_EMB, 0, emb}, {WD_BUF_EMB_S1, 0, emb}, {WD_BUF_EMB_S2, 0, emb},
                    {WD_BUF_X, 0, 4 * (int64_t)B * INp}, {WD_BUF_ACT, 0, 4 * (int64_t)B * H0}, {WD_BUF_ACT, nl - 1, 4 * (int64_t)B},
                    {WD_BUF_GRAD, 0, 4 * (int64_t)B * widest}, {WD_BUF_GRAD, 1, 4 * (int64_t)B * widest}, {WD_BUF_LOGITS, 0, 4 * 5 * (int64_t)B},
                    {WD_BUF_DENSE_GRAD, 0, 4 * (Pd + WD_STEP_TAIL)}, {WD_BUF_PARTIAL, 0, 4 * (int64_t)(B / 256 + 1) * colw},
                    {WD_BUF_KEYS, 0, 8 * N}, {WD_BUF_KEYS_ALT, 0, 8 * N}, {WD_BUF_UKEYS, 0, 8 * (N + 1)}, {WD_BUF_ROWS, 0, 4 * N * R},
                };
                for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
                    int64_t off, bytes;
                    int64_t w = (want[i].bytes + 255) / 256 * 256;
                    if (wd_plan_find(&p, want[i].buf, want[i].index, &off, &bytes) != WD_OK || bytes != w) {
                        if (bad++ < 5) printf("  E %d, hidden %d,%d: %s (%d): %lld bytes, documented %lld\n", E, H0, H1, wd_buf_name(want[i].buf), want[i].index, (long long)bytes, (long long)w);
                    }
                }
                configs++;
            }
    printf("  %d model shapes, %d with the dense gradient's tail in its last 16 bytes\n", configs, tight);
    CHECK(configs == 240 && bad == 0 && tight > 0);
    // and a model's own plan agrees with its view
    REQUIRE(data_ok);
    wd_model *m = gen_model(WD_ADAM, 0, 0, WD_POOL_SUM);
    REQUIRE(m != NULL);
    wd_plan p;
    REQUIRE_OK(wd_plan_make(m, B, ranks, &p));
    wd_model_view v;
    wd_model_view_get(m, &v);
    int64_t INp = (v.IN + 15) / 16 * 16, off, bytes;
    CHECK_OK(wd_plan_find(&p, WD_BUF_DENSE_GRAD, 0, &off, &bytes));
    CHECK(bytes == (4 * (v.P + (INp - v.IN) * v.layer_out[0] + WD_STEP_TAIL) + 255) / 256 * 256);
    wd_model_destroy(m);
}

static void test_setup(void) {
    snprintf(DATA, sizeof DATA, "%s/edges-gen.wdr", TMP);
    char prob[400];
    snprintf(prob, sizeof prob, "%s.prob", DATA);
    unlink(prob);
    wd_gen_report rep;
    REQUIRE_OK(gen_file(DATA, 7000, 0, 13, NULL, &rep));
    REQUIRE(rep.rows == 7000);
    snprintf(VALID, sizeof VALID, "%s/edges-valid.wdr", TMP);
    snprintf(prob, sizeof prob, "%s.prob", VALID);
    unlink(prob);
    REQUIRE_OK(gen_file(VALID, 500, 7000, 13, NULL, &rep));
    data_ok = 1;
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_setup);
    RUN(test_status_string_bounds);
    RUN(test_allocator_hooks_balance);
    RUN(test_schema_limits);
    RUN(test_schema_equal);
    RUN(test_batch_append_pieces);
    RUN(test_reader_slot_limit);
    RUN(test_decode_appends_weights);
    RUN(test_decode_range_wide_blocks);
    RUN(test_parse_integer_limits);
    RUN(test_parse_float_range);
    RUN(test_gen_planted_model);
    RUN(test_logloss_clipping);
    RUN(test_loader_map_contract);
    RUN(test_model_cross_range);
    RUN(test_gradient_limit);
    RUN(test_checkpoint_every);
    RUN(test_eval_every);
    RUN(test_default_batch);
    RUN(test_eval_and_predict_bounds);
    RUN(test_checkpoint_kinds);
    RUN(test_checkpoint_unsound);
    RUN(test_plan_sizes);
    return test_summary("test_edges");
}
