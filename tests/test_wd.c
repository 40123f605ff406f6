// Unit and bad-input tests for widedeep.h. Each test prints PASS/FAIL/SKIP
// lines; the exit code is the number of failures (capped at 1).
// Usage: test_wd [TMPDIR [DATADIR]]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"

static char TMP[200] = "/tmp";
static char DATA[200] = "../shared/data";

static void tmppath(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", TMP, name); }

// ---- helpers ---------------------------------------------------------------------
static void make_schema(wd_schema *s, int ndense, int nslots, int multi_every) {
    memset(s, 0, sizeof *s);
    s->ndense = ndense;
    s->nslots = nslots;
    for (int k = 0; k < nslots; k++) {
        snprintf(s->slot[k].name, WD_NAME_MAX, "s%d", k);
        s->slot[k].buckets = 50 + 37u * (uint32_t)k;
        s->slot[k].kind = (multi_every && k % multi_every == 1) ? WD_MULTI_HOT : WD_ONE_HOT;
    }
}
// Fills b with n random samples (seeded); multi-hot slots get 0..4 ids.
static void fill_random(wd_batch *b, const wd_schema *s, int n, uint64_t seed) {
    wd__rng r = {seed};
    b->n = 0;
    CHECK_OK(wd_batch_reserve(b, n, (int64_t)n * 5));
    for (int i = 0; i < n; i++) {
        b->label[i] = (float)(wd__rng_next(&r) & 1);
        b->weight[i] = 1.0f;
        for (int d = 0; d < s->ndense; d++) b->dense[(size_t)i * (size_t)s->ndense + (size_t)d] = (float)wd__rng_normal(&r);
        for (int k = 0; k < s->nslots; k++) {
            uint32_t B = s->slot[k].buckets;
            if (s->slot[k].kind == WD_MULTI_HOT) {
                uint32_t c = (uint32_t)(wd__rng_next(&r) % 5), o = b->offs[k][i];
                for (uint32_t j = 0; j < c; j++) b->ids[k][o + j] = (uint32_t)(wd__rng_next(&r) % B);
                b->offs[k][i + 1] = o + c;
            } else b->ids[k][i] = (uint32_t)(wd__rng_next(&r) % B);
        }
    }
    b->n = n;
}
static int batch_sample_equal(const wd_batch *a, int i, const wd_batch *b, int j) {
    if (a->label[i] != b->label[j]) return 0;
    if (memcmp(a->dense + (size_t)i * (size_t)a->ndense, b->dense + (size_t)j * (size_t)b->ndense, sizeof(float) * (size_t)a->ndense)) return 0;
    for (int k = 0; k < a->nslots; k++) {
        int ca, cb;
        const uint32_t *ia = wd_batch_sample_ids(a, k, i, &ca), *ib = wd_batch_sample_ids(b, k, j, &cb);
        if (ca != cb || (ca && memcmp(ia, ib, sizeof(uint32_t) * (size_t)ca))) return 0;
    }
    return 1;
}
static int write_file(const char *path, const wd_schema *s, const wd_batch *b, int block) {
    wd_writer *w;
    wd_writer_desc d;
    memset(&d, 0, sizeof d);
    d.block_samples = block;
    wd_status st = wd_writer_open(path, s, &d, &w);
    if (!st && (st = wd_writer_append(w, b)) != WD_OK) wd_writer_abort(w);
    else if (!st) st = wd_writer_close(w);
    if (st && st != WD_ERR_NOMEM) printf("  write_file(%s): %s\n", path, wd_last_error());
    return st ? -1 : 0;
}
static void spit(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(p, 1, n, f); fclose(f); }
}
static int no_tmp_files(const char *path) {   // no "<path>.tmp-*" left behind
    char pat[600];
    snprintf(pat, sizeof pat, "%s.tmp-%ld", path, (long)getpid());
    return !file_exists(pat);
}
// Opens and verifies; returns the status of whichever step failed first.
static wd_status open_verify(const char *path, int64_t *bad) {
    wd_reader *r;
    *bad = -1;
    wd_status st = wd_reader_open(path, &r);
    if (st) return st;
    st = wd_reader_verify(r, bad);
    wd_reader_close(r);
    return st;
}

// ---- tests -------------------------------------------------------------------------
static void test_status_strings(void) {
    for (int s = 0; s < WD_STATUS_COUNT; s++) {
        CHECK(wd_status_string((wd_status)s) != NULL);
        for (int t = 0; t < s; t++) CHECK(strcmp(wd_status_string((wd_status)s), wd_status_string((wd_status)t)) != 0);
    }
    CHECK(strcmp(wd_status_string((wd_status)999), "unknown status") == 0);
    wd_reader *r;
    CHECK(wd_reader_open("/nonexistent/x.wdr", &r) == WD_ERR_IO);
    CHECK(strstr(wd_last_error(), "/nonexistent/x.wdr") != NULL);
}

static void test_roundtrip(void) {
    char path[600];
    tmppath(path, sizeof path, "rt.wdr");
    int sizes[] = {1, 7, 100, 1000};
    int blocks[] = {1, 3, 64, 4096};
    for (int si = 0; si < 4; si++) for (int bi = 0; bi < 4; bi++) {
        wd_schema s;
        make_schema(&s, si % 3 == 0 ? 0 : 5, 6, si == 1 ? 0 : 3);
        wd_batch b;
        CHECK_OK(wd_batch_init(&b, &s, 0, 0));
        fill_random(&b, &s, sizes[si], 42 + (uint64_t)si);
        CHECK(write_file(path, &s, &b, blocks[bi]) == 0);
        CHECK(no_tmp_files(path));
        wd_reader *r;
        CHECK_OK(wd_reader_open(path, &r));
        if (!r) { wd_batch_free(&b); continue; }
        CHECK(wd_schema_equal(wd_reader_schema(r), &s));
        CHECK(wd_reader_nsamples(r) == sizes[si]);
        CHECK(wd_reader_nblocks(r) == (sizes[si] + blocks[bi] - 1) / blocks[bi]);
        int at = 0, bad = 0;
        wd_batch own;
        CHECK_OK(wd_batch_init(&own, &s, 0, 0));
        for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
            const wd_batch *lb;
            CHECK_OK(wd_reader_block(r, i, &lb));
            CHECK_OK(wd_reader_read_block(r, i, &own));   // caller-owned path too
            CHECK(lb->n == own.n && lb->n == wd_reader_block_samples(r, i));
            for (int j = 0; j < lb->n; j++) { bad += !batch_sample_equal(lb, j, &b, at + j); bad += !batch_sample_equal(&own, j, &b, at + j); }
            at += lb->n;
        }
        CHECK(at == sizes[si] && bad == 0);
        int64_t badblk;
        CHECK_OK(wd_reader_verify(r, &badblk));
        CHECK(badblk == -1);
        wd_reader_close(r);
        wd_batch_free(&own);
        wd_batch_free(&b);
    }
}

static void test_split_decode_appends(void) {
    char path[600];
    tmppath(path, sizeof path, "split.wdr");
    wd_schema s;
    make_schema(&s, 3, 4, 2);
    wd_batch b, acc;
    CHECK_OK(wd_batch_init(&b, &s, 0, 0));
    CHECK_OK(wd_batch_init(&acc, &s, 0, 0));
    fill_random(&b, &s, 500, 9);
    CHECK(write_file(path, &s, &b, 64) == 0);
    wd_reader *r;
    wd_decoder *dec;
    CHECK_OK(wd_reader_open(path, &r));
    CHECK_OK(wd_decoder_create(&dec));
    uint8_t *buf = (uint8_t *)malloc(1 << 20);
    for (int64_t i = 0; r && i < wd_reader_nblocks(r); i++) {
        size_t n = wd_reader_block_bytes(r, i);
        CHECK_OK(wd_reader_fetch(r, i, buf, 1 << 20));
        CHECK_OK(wd_decode_block(dec, r, i, buf, n, &acc));
    }
    CHECK(acc.n == 500);
    int bad = 0;
    for (int i = 0; i < acc.n && i < 500; i++) bad += !batch_sample_equal(&acc, i, &b, i);
    CHECK(bad == 0);
    free(buf);
    wd_decoder_destroy(dec);
    wd_reader_close(r);
    wd_batch_free(&b);
    wd_batch_free(&acc);
}

static void test_writer_rejects(void) {
    char path[600];
    tmppath(path, sizeof path, "rej.wdr");
    unlink(path);
    wd_schema s;
    make_schema(&s, 2, 2, 0);
    wd_batch b;
    CHECK_OK(wd_batch_init(&b, &s, 0, 0));
    for (int which = 0; which < 4; which++) {
        fill_random(&b, &s, 10, 1);
        if (which == 0) b.dense[5] = NAN;
        if (which == 1) b.dense[3] = INFINITY;
        if (which == 2) b.label[4] = 2.0f;
        if (which == 3) b.ids[1][7] = s.slot[1].buckets;
        wd_writer *w;
        CHECK_OK(wd_writer_open(path, &s, NULL, &w));
        wd_status st = wd_writer_append(w, &b);
        CHECK(st == (which == 3 ? WD_ERR_CORRUPT : WD_ERR_NUMERIC));
        CHECK(strstr(wd_last_error(), "sample") != NULL);
        // a rejected batch is not written; the writer stays usable
        fill_random(&b, &s, 3, 2);
        CHECK_OK(wd_writer_append(w, &b));
        CHECK_OK(wd_writer_close(w));
        wd_reader *r;
        CHECK_OK(wd_reader_open(path, &r));
        CHECK(r && wd_reader_nsamples(r) == 3);
        wd_reader_close(r);
        unlink(path);
    }
    // the final name appears only at close
    fill_random(&b, &s, 10, 1);
    wd_writer *w;
    CHECK_OK(wd_writer_open(path, &s, NULL, &w));
    CHECK_OK(wd_writer_append(w, &b));
    CHECK(!file_exists(path));
    wd_writer_abort(w);
    CHECK(!file_exists(path) && no_tmp_files(path));
    // bad schemas
    wd_schema z = s;
    z.slot[0].buckets = 0;
    CHECK(wd_writer_open(path, &z, NULL, &w) == WD_ERR_INVALID_ARG);
    z = s; z.nslots = WD_MAX_SLOTS + 1;
    CHECK(wd_writer_open(path, &z, NULL, &w) == WD_ERR_LIMIT);
    wd_batch_free(&b);
}

// A small valid file: 3 blocks of 5 samples, for the corruption tests.
static size_t small_file(const char *path, uint8_t **bytes) {
    wd_schema s;
    make_schema(&s, 2, 3, 2);
    wd_batch b;
    CHECK_OK(wd_batch_init(&b, &s, 0, 0));
    fill_random(&b, &s, 15, 77);
    CHECK(write_file(path, &s, &b, 5) == 0);
    wd_batch_free(&b);
    size_t n = 0;
    *bytes = slurp(path, &n);
    return n;
}

static void test_truncation(void) {
    char path[600], cut[600];
    tmppath(path, sizeof path, "trunc-src.wdr");
    tmppath(cut, sizeof cut, "trunc.wdr");
    uint8_t *src;
    size_t n = small_file(path, &src);
    wd_reader *r;
    CHECK_OK(wd_reader_open(path, &r));
    if (!r) return;
    // every block boundary, every mid-block point, and every other length
    int silent = 0, named = 0, tried = 0;
    for (size_t len = 0; len < n; len++) {
        spit(cut, src, len);
        int64_t bad;
        wd_status st = open_verify(cut, &bad);
        tried++;
        if (st == WD_OK) silent++;
        if (st != WD_OK && strstr(wd_last_error(), "trunc.wdr")) named++;
    }
    CHECK(tried == (int)n && silent == 0 && named == tried);
    // block boundaries explicitly
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        int64_t bad;
        spit(cut, src, (size_t)r->index[i].offset);
        CHECK(open_verify(cut, &bad) != WD_OK);
        spit(cut, src, (size_t)r->index[i].offset + r->index[i].bytes / 2);
        CHECK(open_verify(cut, &bad) != WD_OK);
    }
    wd_reader_close(r);
    // zero-length file
    spit(cut, src, 0);
    CHECK(wd_reader_open(cut, &r) == WD_ERR_FORMAT);
    CHECK(strstr(wd_last_error(), "empty") != NULL);
    free(src);
}

static void test_bit_flips(void) {
    char path[600], bad_path[600];
    tmppath(path, sizeof path, "flip-src.wdr");
    tmppath(bad_path, sizeof bad_path, "flip.wdr");
    uint8_t *src;
    size_t n = small_file(path, &src);
    uint8_t *buf = (uint8_t *)malloc(n);
    wd_reader *r0;
    CHECK_OK(wd_reader_open(path, &r0));
    if (!r0) return;
    int silent = 0, flips = 0, block_named = 0, in_blocks = 0;
    for (size_t byte = 0; byte < n; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(buf, src, n);
            buf[byte] ^= (uint8_t)(1u << bit);
            spit(bad_path, buf, n);
            int64_t bad;
            wd_status st = open_verify(bad_path, &bad);
            flips++;
            if (st == WD_OK) silent++;
            // a flip inside block i must be reported at block i
            for (int64_t i = 0; i < r0->nblocks; i++)
                if ((int64_t)byte >= r0->index[i].offset && (int64_t)byte < r0->index[i].offset + r0->index[i].bytes) {
                    in_blocks++;
                    char want[64];
                    snprintf(want, sizeof want, "block %lld", (long long)i);
                    if (bad == i && strstr(wd_last_error(), want)) block_named++;
                }
        }
    }
    printf("  bit flips: %d tried, %d undetected, %d of %d in blocks named their block\n", flips, silent, block_named, in_blocks);
    CHECK(silent == 0);
    CHECK(block_named == in_blocks);
    wd_reader_close(r0);
    free(buf);
    free(src);
}

static void test_bad_headers(void) {
    char path[600], bad_path[600];
    tmppath(path, sizeof path, "hdr-src.wdr");
    tmppath(bad_path, sizeof bad_path, "hdr.wdr");
    uint8_t *src;
    size_t n = small_file(path, &src);
    uint8_t *buf = (uint8_t *)malloc(n);
    wd_reader *r;
    // wrong magic
    memcpy(buf, src, n); buf[1] = 'X'; spit(bad_path, buf, n);
    CHECK(wd_reader_open(bad_path, &r) == WD_ERR_FORMAT && strstr(wd_last_error(), "magic"));
    // wrong version (checksum fixed up so only the version is wrong)
    memcpy(buf, src, n); wd__put32(buf + 8, 7);
    {
        uint32_t hb = wd__get32(buf + 12);
        wd__put32(buf + hb - 4, wd__crc32c(buf, hb - 4));
    }
    spit(bad_path, buf, n);
    CHECK(wd_reader_open(bad_path, &r) == WD_ERR_FORMAT && strstr(wd_last_error(), "version 7"));
    // absurd slot count, checksum fixed: rejected before any allocation from it
    memcpy(buf, src, n); wd__put32(buf + 20, 0x7fffffff);
    spit(bad_path, buf, n);
    CHECK(wd_reader_open(bad_path, &r) == WD_ERR_CORRUPT && strstr(wd_last_error(), "slots"));
    // absurd bucket count: 0 buckets, checksum fixed
    memcpy(buf, src, n); wd__put32(buf + WD__HDR_FIXED + 32, 0);
    {
        uint32_t hb = wd__get32(buf + 12);
        wd__put32(buf + hb - 4, wd__crc32c(buf, hb - 4));
    }
    spit(bad_path, buf, n);
    CHECK(wd_reader_open(bad_path, &r) == WD_ERR_CORRUPT && strstr(wd_last_error(), "0 buckets"));
    // footer pointing outside the file (trailer checksum fixed up)
    memcpy(buf, src, n);
    uint8_t *t = buf + n - WD__TRAILER;
    wd__put64(t, (uint64_t)n * 4);
    wd__put32(t + 16, wd__crc32c(t, 16));
    spit(bad_path, buf, n);
    CHECK(wd_reader_open(bad_path, &r) == WD_ERR_CORRUPT && strstr(wd_last_error(), "outside the file"));
    // a footer claiming billions of blocks / samples (all checksums fixed up)
    memcpy(buf, src, n);
    uint64_t foff = wd__get64(t), fb = wd__get64(t + 8);
    wd__put64(buf + foff + 8, 4000000000ull);
    wd__put32(buf + foff + fb - 8, wd__crc32c(buf + foff, (size_t)fb - 8));
    spit(bad_path, buf, n);
    CHECK(wd_reader_open(bad_path, &r) == WD_ERR_CORRUPT && strstr(wd_last_error(), "4000000000 blocks"));
    memcpy(buf, src, n);
    wd__put32(buf + foff + 24 + 8, 3000000000u);   // block 0 sample count
    wd__put32(buf + foff + fb - 8, wd__crc32c(buf + foff, (size_t)fb - 8));
    spit(bad_path, buf, n);
    CHECK(wd_reader_open(bad_path, &r) == WD_ERR_CORRUPT && strstr(wd_last_error(), "block 0"));
    // a block that claims more ids than its payload: header checksum fixed
    memcpy(buf, src, n);
    {
        uint8_t *h = buf + WD__HDR_FIXED + WD__SLOT_BYTES * 3 + 4;   // first block header
        wd__put32(h + 16, wd__get32(h + 16) + 1000000);
        wd__put32(h + 28, wd__crc32c(h, 28));
    }
    spit(bad_path, buf, n);
    int64_t bad;
    CHECK(open_verify(bad_path, &bad) == WD_ERR_CORRUPT && bad == 0 && strstr(wd_last_error(), "block 0"));
    // valid checksums but ids beyond the (shrunk) bucket count: decode names block and sample
    memcpy(buf, src, n);
    wd__put32(buf + WD__HDR_FIXED + 32, 2);   // slot 0: 50 buckets -> 2
    {
        uint32_t hb = wd__get32(buf + 12);
        wd__put32(buf + hb - 4, wd__crc32c(buf, hb - 4));
    }
    spit(bad_path, buf, n);
    CHECK(open_verify(bad_path, &bad) == WD_ERR_CORRUPT && bad >= 0 && strstr(wd_last_error(), "outside its 2 buckets") && strstr(wd_last_error(), "sample"));
    free(buf);
    free(src);
}

// Allocation hook that fails the k-th allocation.
static long g_alloc_count, g_alloc_fail_at;
static void *failing_alloc(size_t n, void *u) {
    (void)u;
    if (++g_alloc_count == g_alloc_fail_at) return NULL;
    return malloc(n);
}
static void failing_free(void *p, void *u) { (void)u; free(p); }

static void test_alloc_failures(void) {
    char path[600], out[600];
    tmppath(path, sizeof path, "alloc-src.wdr");
    tmppath(out, sizeof out, "alloc-out.wdr");
    uint8_t *src;
    small_file(path, &src);
    free(src);
    wd_schema s;
    make_schema(&s, 2, 3, 2);
    wd_batch b;
    CHECK_OK(wd_batch_init(&b, &s, 0, 0));
    fill_random(&b, &s, 40, 5);
    wd_allocator a = {failing_alloc, failing_free, NULL};
    int clean = 0, total = 0;
    for (long k = 1; k < 200; k++) {
        g_alloc_count = 0; g_alloc_fail_at = k;
        wd_set_allocator(&a);
        // open + verify
        int64_t bad;
        wd_status st1 = open_verify(path, &bad);
        // write
        g_alloc_count = 0;
        unlink(out);
        wd_status st2 = write_file(out, &s, &b, 16) ? WD_ERR_NOMEM : WD_OK;
        wd_set_allocator(NULL);
        total++;
        if ((st1 == WD_OK || st1 == WD_ERR_NOMEM) && (st2 == WD_OK || !file_exists(out))) clean++;
    }
    CHECK(clean == total);
    wd_batch_free(&b);
}

static void test_auc_bruteforce(void) {
    wd__rng r = {3};
    for (int trial = 0; trial < 20; trial++) {
        int n = 1 + (int)(wd__rng_next(&r) % 300);
        float *sc = (float *)malloc(sizeof(float) * (size_t)n), *y = (float *)malloc(sizeof(float) * (size_t)n);
        for (int i = 0; i < n; i++) {
            sc[i] = (float)(wd__rng_next(&r) % (trial % 2 ? 5 : 1000)) / 7.0f - 3.0f;   // many ties on odd trials
            if (trial == 3 && i % 3 == 0) sc[i] = -0.0f;
            if (trial == 3 && i % 3 == 1) sc[i] = 0.0f;
            y[i] = (float)(wd__rng_next(&r) % 3 == 0);
        }
        double num = 0, P = 0, N = 0;
        for (int i = 0; i < n; i++) { P += y[i]; N += 1 - y[i]; }
        for (int i = 0; i < n; i++) if (y[i] == 1)
            for (int j = 0; j < n; j++) if (y[j] == 0) num += sc[i] > sc[j] ? 1.0 : sc[i] == sc[j] ? 0.5 : 0.0;
        double want = (P > 0 && N > 0) ? num / (P * N) : NAN, got;
        CHECK_OK(wd_auc(sc, y, NULL, n, &got));
        CHECK((isnan(want) && isnan(got)) || fabs(want - got) < 1e-12);
        free(sc); free(y);
    }
    float s2[3] = {0.1f, NAN, 0.3f}, y2[3] = {0, 1, 0};
    double a;
    CHECK(wd_auc(s2, y2, NULL, 3, &a) == WD_ERR_NUMERIC);
}

static void test_crc32c(void) {
    // the standard check value, then software and dispatched paths agree
    CHECK(wd__crc32c_sw(0, "123456789", 9) == 0xE3069283u);
    CHECK(wd__crc32c_ext(wd__crc32c("1234", 4), "56789", 5) == 0xE3069283u);
    CHECK(wd__crc32c("123456789", 9) == 0xE3069283u);
    uint8_t buf[1000];
    wd__rng r = {11};
    for (int i = 0; i < 1000; i++) buf[i] = (uint8_t)wd__rng_next(&r);
    int same = 0;
    for (int n = 0; n < 990; n += 37) same += wd__crc32c_sw(0, buf + n % 7, (size_t)(1000 - n) - 7) == wd__crc32c(buf + n % 7, (size_t)(1000 - n) - 7);
    CHECK(same == 27);
}

static void test_count_feature(void) {
    CHECK(wd_count_feature(0) == 0.0f);
    CHECK(fabsf(wd_count_feature(1) - (float)log(2.0)) < 1e-7f);
    CHECK(fabsf(wd_count_feature(-1) + (float)log(2.0)) < 1e-7f);
    CHECK(isfinite(wd_count_feature(INT64_MIN + 1)) && isfinite(wd_count_feature(INT64_MAX)));
}

// ---- text parsing ------------------------------------------------------------------
static const char *CRITEO_OK =
    "1\t1\t-3\t5\t\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\t80e26c9b\tfb936136\t7b4723c4\t25c83c98\t7e0ccccf\tde7995b8\t1f89b562\ta73ee510\ta8cd5504\tb2cb9c98\t37c9c164\t2824a5f6\t1adce6ef\t8ba8b39a\t891b62e7\te5ba7672\tf54016b9\t21ddcdc9\tb1252a9d\t07b5194c\t\t3a171ecb\tc5c50484\te8b83407\t9727dd16";

static void test_parse_criteo(void) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    wd_text_spec_criteo(t, 1000);
    wd_batch b;
    CHECK_OK(wd_batch_init(&b, &t->schema, 0, 0));
    CHECK_OK(wd_parse_line(t, CRITEO_OK, strlen(CRITEO_OK), &b));
    CHECK(b.n == 1 && b.label[0] == 1.0f);
    CHECK(fabsf(b.dense[1] + (float)log1p(3.0)) < 1e-6f);   // negative count rule
    CHECK(b.dense[3] == 0.0f);                               // missing
    CHECK(b.ids[21][0] == wd_hash_bucket("", 0, 21, 1000));  // empty categorical
    CHECK(b.ids[0][0] == wd_hash_bucket("68fd1e64", 8, 0, 1000));
    // CRLF gives the same sample
    char crlf[1024];
    snprintf(crlf, sizeof crlf, "%s\r", CRITEO_OK);
    CHECK_OK(wd_parse_line(t, crlf, strlen(crlf), &b));
    CHECK(b.n == 2 && batch_sample_equal(&b, 0, &b, 1));
    // bad lines, each with its reason
    struct { const char *line; const char *reason; } bad[] = {
        {"1\t2\t3", "3 fields"},
        {"0\t1\t1\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz\textra", "too many fields"},
        {"2\t1\t1\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz", "label"},
        {"0\tx1\t1\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz", "I1: 'x1' is not an integer"},
        {"0\t1\t99999999999999999999\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz", "too large"},
        {"0\t1\t1.5\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz", "not an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n0 = b.n;
        CHECK(wd_parse_line(t, bad[i].line, strlen(bad[i].line), &b) == WD_ERR_PARSE);
        CHECK(strstr(wd_last_error(), bad[i].reason) != NULL);
        CHECK(b.n == n0);
    }
    wd_batch_free(&b);
    free(t);
}

static void test_parse_csv_libsvm(void) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    CHECK_OK(wd_text_spec_csv(t, "id,click,hour,a,b", "click", "hour", "a,b", 100));
    CHECK(t->schema.ndense == 1 && t->schema.nslots == 2);
    wd_batch b;
    CHECK_OK(wd_batch_init(&b, &t->schema, 0, 0));
    const char *ok = "17,1,14102100,x,y";
    CHECK_OK(wd_parse_line(t, ok, strlen(ok), &b));
    CHECK(b.label[0] == 1.0f && fabsf(b.dense[0] - wd_count_feature(14102100)) < 1e-6f);
    CHECK(b.ids[1][0] == wd_hash_bucket("y", 1, 1, 100));
    CHECK(wd_parse_line(t, "1,0,3,x", 7, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "4 fields"));
    CHECK(wd_parse_line(t, "1,0,3,x,y,z", 11, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "more than 5"));
    CHECK(wd_parse_line(t, "1,0,abc,x,y", 11, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "not an integer"));
    CHECK(wd_text_spec_csv(t, "a,b", "nolabel", NULL, NULL, 10) == WD_ERR_INVALID_ARG);
    wd_batch_free(&b);

    CHECK_OK(wd_text_spec_libsvm(t, "user=0-99,item=100-149", "1000-1002", 0));
    CHECK(t->schema.nslots == 2 && t->schema.ndense == 3 && t->schema.slot[1].buckets == 50 && t->schema.slot[0].kind == WD_MULTI_HOT);
    CHECK_OK(wd_batch_init(&b, &t->schema, 0, 0));
    const char *l1 = "+1 3:1 7:1 120:1 1001:2.5", *l2 = "-1 1000:1", *l3 = "0 5:1 99:1 149:1";
    CHECK_OK(wd_parse_line(t, l1, strlen(l1), &b));
    CHECK_OK(wd_parse_line(t, l2, strlen(l2), &b));
    CHECK_OK(wd_parse_line(t, l3, strlen(l3), &b));
    int c;
    const uint32_t *ids = wd_batch_sample_ids(&b, 0, 0, &c);
    CHECK(b.n == 3 && c == 2 && ids[0] == 3 && ids[1] == 7);
    ids = wd_batch_sample_ids(&b, 1, 0, &c);
    CHECK(c == 1 && ids[0] == 20 && b.dense[1] == 2.5f && b.label[0] == 1 && b.label[1] == 0);
    wd_batch_sample_ids(&b, 0, 1, &c);
    CHECK(c == 0);
    ids = wd_batch_sample_ids(&b, 1, 2, &c);
    CHECK(c == 1 && ids[0] == 49);
    CHECK(wd_parse_line(t, "1 500:1", 7, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "no slot range"));
    CHECK(wd_parse_line(t, "1 5-1", 5, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "INDEX:VALUE"));
    CHECK(wd_parse_line(t, "3 5:1", 5, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "label"));
    // multi-hot roundtrip through a file
    char path[600];
    tmppath(path, sizeof path, "libsvm.wdr");
    CHECK(write_file(path, &t->schema, &b, 2) == 0);
    wd_reader *r;
    CHECK_OK(wd_reader_open(path, &r));
    wd_batch back;
    CHECK_OK(wd_batch_init(&back, &t->schema, 0, 0));
    CHECK_OK(wd_reader_read_block(r, 1, &back));
    CHECK(back.n == 1 && batch_sample_equal(&back, 0, &b, 2));
    wd_reader_close(r);
    wd_batch_free(&back);
    wd_batch_free(&b);
    CHECK(wd_text_spec_libsvm(t, "a=0-10,b=5-20", NULL, 0) == WD_ERR_INVALID_ARG);
    free(t);
}

// Writes text to a file.
static void write_text(const char *path, const char *text) { spit(path, text, strlen(text)); }

static void test_convert(void) {
    char in[600], in2[600], out[600], out2[600];
    tmppath(in, sizeof in, "conv.tsv");
    tmppath(in2, sizeof in2, "conv2.tsv");
    tmppath(out, sizeof out, "conv.wdr");
    tmppath(out2, sizeof out2, "conv-b.wdr");
    // 1000 lines, last without newline, some CRLF
    FILE *f = fopen(in, "wb");
    for (int i = 0; i < 1000; i++) fprintf(f, "%d\t%d\t%d\t\t\t\t\t\t\t\t\t\t\t\tab%02x\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\tzz%s", i % 2, i, -i, i & 0xff, i == 999 ? "" : (i % 7 ? "\n" : "\r\n"));
    fclose(f);
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    wd_text_spec_criteo(t, 5000);
    const char *ins[2] = {in, in2};
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.inputs = ins; d.ninputs = 1; d.output = out; d.block_samples = 64;
    wd_convert_report rep;
    uint8_t *ref = NULL;
    size_t nref = 0;
    for (int th = 1; th <= 4; th++) {
        d.threads = th;
        CHECK_OK(wd_convert(&d, &rep));
        CHECK(rep.rows == 1000 && rep.bad_rows == 0 && rep.blocks == 16);
        size_t n;
        uint8_t *p = slurp(out, &n);
        if (!ref) { ref = p; nref = n; }
        else { CHECK(n == nref && memcmp(p, ref, n) == 0); free(p); }
    }
    free(ref);
    wd_reader *r;
    CHECK_OK(wd_reader_open(out, &r));
    const wd_batch *b;
    CHECK_OK(wd_reader_block(r, 15, &b));
    CHECK(b->n == 40 && b->label[39] == 1.0f && fabsf(b->dense[39 * 13 + 1] + (float)log1p(999.0)) < 1e-5f);
    wd_reader_close(r);
    // a bad line in the second file: error names file:line, leaves no output
    write_text(in2, "0\t1\t1\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n1\t2\n");
    d.ninputs = 2; d.output = out2; d.threads = 2;
    unlink(out2);
    CHECK(wd_convert(&d, &rep) == WD_ERR_PARSE);
    CHECK(strstr(wd_last_error(), "conv2.tsv:2:") && strstr(wd_last_error(), "2 fields"));
    CHECK(!file_exists(out2) && no_tmp_files(out2));
    // skip mode counts them and keeps the rest
    d.skip_bad_lines = 1;
    CHECK_OK(wd_convert(&d, &rep));
    CHECK(rep.rows == 1001 && rep.bad_rows == 1 && rep.nbad_shown == 1 && strstr(rep.bad_where[0], "conv2.tsv:2:"));
    // empty input and an all-bad input fail cleanly
    write_text(in2, "");
    d.inputs = ins + 1; d.ninputs = 1;
    unlink(out2);
    CHECK(wd_convert(&d, &rep) == WD_ERR_PARSE && !file_exists(out2));
    // a missing input file
    const char *missing[1] = {"/nonexistent.tsv"};
    d.inputs = missing;
    CHECK(wd_convert(&d, &rep) == WD_ERR_IO && strstr(wd_last_error(), "/nonexistent.tsv"));
    free(t);
}

static void test_gen(void) {
    char a[600], a2[600], tsv[600], conv[600];
    tmppath(a, sizeof a, "gen-a.wdr");
    tmppath(a2, sizeof a2, "gen-b.wdr");
    tmppath(tsv, sizeof tsv, "gen.tsv");
    tmppath(conv, sizeof conv, "gen-conv.wdr");
    wd_gen_desc d;
    memset(&d, 0, sizeof d);
    d.output = a; d.tsv = tsv; d.rows = 3000; d.seed = 5; d.threads = 2; d.block_samples = 512; d.max_card = 20000;
    wd_gen_report rep;
    CHECK_OK(wd_gen(&d, &rep));
    CHECK(rep.rows == 3000 && rep.ctr > 0.1 && rep.ctr < 0.4 && rep.oracle_auc > 0.7 && rep.oracle_auc < 1.0);
    d.output = a2; d.tsv = NULL; d.threads = 1;
    wd_gen_report rep2;
    CHECK_OK(wd_gen(&d, &rep2));
    size_t n1, n2;
    uint8_t *p1 = slurp(a, &n1), *p2 = slurp(a2, &n2);
    CHECK(n1 == n2 && memcmp(p1, p2, n1) == 0 && rep.oracle_auc == rep2.oracle_auc);   // same seed, same bytes
    free(p2);
    d.seed = 6;
    CHECK_OK(wd_gen(&d, &rep2));
    p2 = slurp(a2, &n2);
    CHECK(n1 != n2 || memcmp(p1, p2, n1) != 0);
    free(p1); free(p2);
    // its TSV converts to the same samples
    wd_reader *ra, *rc;
    CHECK_OK(wd_reader_open(a, &ra));
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    wd_text_spec_criteo(t, 0);
    CHECK_OK(wd_text_spec_match(t, wd_reader_schema(ra)));
    const char *ins[1] = {tsv};
    wd_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.spec = t; cd.inputs = ins; cd.ninputs = 1; cd.output = conv; cd.block_samples = 512; cd.threads = 2;
    CHECK_OK(wd_convert(&cd, NULL));
    CHECK_OK(wd_reader_open(conv, &rc));
    CHECK(wd_reader_nblocks(ra) == wd_reader_nblocks(rc));
    wd_batch ba, bc;
    CHECK_OK(wd_batch_init(&ba, wd_reader_schema(ra), 0, 0));
    CHECK_OK(wd_batch_init(&bc, wd_reader_schema(ra), 0, 0));
    int diff = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(ra); i++) {
        CHECK_OK(wd_reader_read_block(ra, i, &ba));
        CHECK_OK(wd_reader_read_block(rc, i, &bc));
        for (int j = 0; j < ba.n; j++) diff += !batch_sample_equal(&ba, j, &bc, j);
    }
    CHECK(diff == 0);
    wd_batch_free(&ba); wd_batch_free(&bc);
    wd_reader_close(ra); wd_reader_close(rc);
    free(t);
}

static void test_real_data(void) {
    char in[600], out[600];
    snprintf(in, sizeof in, "%s/avazu_kaggle_head9000_train.csv", DATA);
    if (!file_exists(in)) { SKIP("real data not found in %s", DATA); return; }
    char dev[600];
    snprintf(dev, sizeof dev, "%s/avazu_kaggle_head9000_dev.csv", DATA);
    tmppath(out, sizeof out, "avazu.wdr");
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    char header[1024];
    FILE *f = fopen(in, "rb");
    CHECK(fgets(header, sizeof header, f) != NULL);
    fclose(f);
    CHECK_OK(wd_text_spec_csv(t, header, "click", NULL,
        "C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,app_category,device_id,device_ip,device_model,device_type,device_conn_type,C14,C15,C16,C17,C18,C19,C20,C21", 1 << 18));
    const char *ins[2] = {in, dev};
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.inputs = ins; d.ninputs = 2; d.output = out; d.threads = 2;
    wd_convert_report rep;
    CHECK_OK(wd_convert(&d, &rep));
    CHECK(rep.rows == 8087 + 480 && rep.bad_rows == 0);   // header of the train file skipped
    wd_reader *r;
    CHECK_OK(wd_reader_open(out, &r));
    double pos = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        CHECK_OK(wd_reader_block(r, i, &b));
        for (int j = 0; j < b->n; j++) pos += b->label[j];
    }
    CHECK(pos == 1397 + 86);   // click counts from SOURCES.md
    wd_reader_close(r);
    free(t);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    if (argc > 2) snprintf(DATA, sizeof DATA, "%s", argv[2]);
    RUN(test_status_strings);
    RUN(test_roundtrip);
    RUN(test_split_decode_appends);
    RUN(test_writer_rejects);
    RUN(test_truncation);
    RUN(test_bit_flips);
    RUN(test_bad_headers);
    RUN(test_alloc_failures);
    RUN(test_auc_bruteforce);
    RUN(test_crc32c);
    RUN(test_count_feature);
    RUN(test_parse_criteo);
    RUN(test_parse_csv_libsvm);
    RUN(test_convert);
    RUN(test_gen);
    RUN(test_real_data);
    return test_summary("test_wd");
}
