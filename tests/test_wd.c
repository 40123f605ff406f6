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
static wd_status write_file(const char *path, const wd_schema *s, const wd_batch *b, int block) {
    wd_writer *w;
    wd_writer_desc d;
    memset(&d, 0, sizeof d);
    d.block_samples = block;
    wd_status st = wd_writer_open(path, s, &d, &w);
    if (!st && (st = wd_writer_append(w, b)) != WD_OK) wd_writer_abort(w);
    else if (!st) st = wd_writer_close(w);
    if (st && st != WD_ERR_NOMEM) printf("  write_file(%s): %s\n", path, wd_last_error());
    return st;
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
        REQUIRE_OK(wd_batch_init(&b, &s, 0, 0));
        fill_random(&b, &s, sizes[si], 42 + (uint64_t)si);
        REQUIRE_OK(write_file(path, &s, &b, blocks[bi]));
        CHECK(no_tmp_files(path));
        wd_reader *r;
        REQUIRE_OK(wd_reader_open(path, &r));
        CHECK(wd_schema_equal(wd_reader_schema(r), &s));
        CHECK(wd_reader_nsamples(r) == sizes[si]);
        CHECK(wd_reader_nblocks(r) == (sizes[si] + blocks[bi] - 1) / blocks[bi]);
        int at = 0, bad = 0;
        wd_batch own;
        REQUIRE_OK(wd_batch_init(&own, &s, 0, 0));
        for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
            const wd_batch *lb;
            REQUIRE_OK(wd_reader_block(r, i, &lb));
            REQUIRE_OK(wd_reader_read_block(r, i, &own));   // caller-owned path too
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
    REQUIRE_OK(wd_batch_init(&b, &s, 0, 0));
    REQUIRE_OK(wd_batch_init(&acc, &s, 0, 0));
    fill_random(&b, &s, 500, 9);
    REQUIRE_OK(write_file(path, &s, &b, 64));
    wd_reader *r;
    wd_decoder *dec;
    REQUIRE_OK(wd_reader_open(path, &r));
    REQUIRE_OK(wd_decoder_create(&dec));
    REQUIRE(wd_reader_nblocks(r) == 8);
    uint8_t *buf = (uint8_t *)malloc(1 << 20);
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        size_t n = wd_reader_block_bytes(r, i);
        REQUIRE_OK(wd_reader_fetch(r, i, buf, 1 << 20));
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
    REQUIRE_OK(wd_batch_init(&b, &s, 0, 0));
    for (int which = 0; which < 4; which++) {
        fill_random(&b, &s, 10, 1);
        if (which == 0) b.dense[5] = NAN;
        if (which == 1) b.dense[3] = INFINITY;
        if (which == 2) b.label[4] = 2.0f;
        if (which == 3) b.ids[1][7] = s.slot[1].buckets;
        wd_writer *w;
        REQUIRE_OK(wd_writer_open(path, &s, NULL, &w));
        wd_status st = wd_writer_append(w, &b);
        CHECK(st == (which >= 2 ? WD_ERR_INVALID_ARG : WD_ERR_NUMERIC));   // a caller's label 2 or id: invalid
        CHECK(strstr(wd_last_error(), "sample") != NULL);
        // a rejected batch is not written; the writer stays usable
        fill_random(&b, &s, 3, 2);
        CHECK_OK(wd_writer_append(w, &b));
        CHECK_OK(wd_writer_close(w));
        wd_reader *r;
        REQUIRE_OK(wd_reader_open(path, &r));
        CHECK(wd_reader_nsamples(r) == 3);
        wd_reader_close(r);
        unlink(path);
    }
    // the final name appears only at close
    fill_random(&b, &s, 10, 1);
    wd_writer *w;
    REQUIRE_OK(wd_writer_open(path, &s, NULL, &w));
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
    *bytes = NULL;
    wd_status ist = wd_batch_init(&b, &s, 0, 0);
    CHECK_OK(ist);
    if (ist) return 0;
    fill_random(&b, &s, 15, 77);
    unlink(path);
    wd_status st = write_file(path, &s, &b, 5);
    CHECK_OK(st);
    wd_batch_free(&b);
    size_t n = 0;
    if (st == WD_OK) *bytes = slurp(path, &n);
    return *bytes ? n : 0;   // callers REQUIRE a non-zero size
}

static void test_truncation(void) {
    char path[600], cut[600];
    tmppath(path, sizeof path, "trunc-src.wdr");
    tmppath(cut, sizeof cut, "trunc.wdr");
    uint8_t *src;
    size_t n = small_file(path, &src);
    REQUIRE(n > 0);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(path, &r));
    REQUIRE(wd_reader_nblocks(r) == 3);
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
    REQUIRE(n > 0);
    uint8_t *buf = (uint8_t *)malloc(n);
    wd_reader *r0;
    REQUIRE_OK(wd_reader_open(path, &r0));
    REQUIRE(wd_reader_nblocks(r0) == 3);
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
    REQUIRE(n > 0);
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

// Allocation hook that fails the k-th allocation (none when fail_at < 0).
static long g_alloc_count, g_alloc_fail_at;
static void *failing_alloc(size_t n, void *u) {
    (void)u;
    if (++g_alloc_count == g_alloc_fail_at) return NULL;
    return malloc(n);
}
static void failing_free(void *p, void *u) { (void)u; free(p); }

// Open + verify and write, each allocation failed in turn: every failure
// ends in WD_ERR_NOMEM (none succeeds anyway, no other status), a failed
// write leaves neither the file nor a temporary; one more than the count
// fails nothing and succeeds.
static void test_alloc_failures(void) {
    char path[600], out[600];
    tmppath(path, sizeof path, "alloc-src.wdr");
    tmppath(out, sizeof out, "alloc-out.wdr");
    uint8_t *src;
    REQUIRE(small_file(path, &src) > 0);
    free(src);
    wd_schema s;
    make_schema(&s, 2, 3, 2);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &s, 0, 0));
    fill_random(&b, &s, 40, 5);
    wd_allocator a = {failing_alloc, failing_free, NULL};
    long counts[2] = {0, 0}, nomem[2] = {0, 0}, bad[2] = {0, 0};
    for (int which = 0; which < 2; which++) {
        for (long k = 0; k <= counts[which] + 1; k++) {   // k = 0: count; then 1..count+1
            g_alloc_count = 0; g_alloc_fail_at = k ? k : -1;
            unlink(out);
            int64_t badblk;
            wd_set_allocator(&a);
            wd_status st = which == 0 ? open_verify(path, &badblk) : write_file(out, &s, &b, 16);
            wd_set_allocator(NULL);
            if (k == 0) { counts[which] = g_alloc_count; CHECK_OK(st); continue; }
            int want_fail = k <= counts[which];
            if (want_fail && st == WD_ERR_NOMEM && (which == 0 || (!file_exists(out) && no_tmp_files(out)))) nomem[which]++;
            else if (!want_fail && st == WD_OK) continue;
            else { bad[which]++; printf("  %s, allocation %ld of %ld failed: %s: %s\n", which ? "write" : "open+verify", k, counts[which], wd_status_string(st), wd_last_error()); }
        }
    }
    printf("  open+verify: %ld allocations, %ld failures gave WD_ERR_NOMEM; write: %ld allocations, %ld gave WD_ERR_NOMEM and no file\n", counts[0], nomem[0], counts[1], nomem[1]);
    CHECK(counts[0] > 3 && counts[1] > 3 && bad[0] == 0 && bad[1] == 0 && nomem[0] == counts[0] && nomem[1] == counts[1]);
    wd_batch_free(&b);
}

// AUC by brute force over all (i, j) pairs: sample i's positive weight
// y_i w_i against sample j's negative weight (1 - y_j) w_j, ties half.
static double brute_auc(const float *sc, const float *y, const float *w, int n) {
    double num = 0, P = 0, N = 0;
    for (int i = 0; i < n; i++) { double wi = w ? w[i] : 1.0; P += y[i] * wi; N += (1 - y[i]) * wi; }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            num += y[i] * (w ? w[i] : 1.0) * (1 - y[j]) * (w ? w[j] : 1.0) * (sc[i] > sc[j] ? 1.0 : sc[i] == sc[j] ? 0.5 : 0.0);
    return (P > 0 && N > 0) ? num / (P * N) : NAN;
}
static int same_auc(double want, double got) { return (isnan(want) && isnan(got)) || fabs(want - got) < 1e-12; }

static void test_auc_bruteforce(void) {
    wd__rng r = {3};
    int checked = 0, weighted = 0, bad = 0;
    for (int trial = 0; trial < 60; trial++) {
        int n = 1 + (int)(wd__rng_next(&r) % 300);
        float *sc = (float *)malloc(sizeof(float) * (size_t)n), *y = (float *)malloc(sizeof(float) * (size_t)n);
        float *w = (float *)malloc(sizeof(float) * (size_t)n);
        // integer weights, zeros included, so the weighted AUC is also that of
        // the samples repeated w_i times (dropped when 0)
        float *rs = (float *)malloc(sizeof(float) * (size_t)n * 4), *ry = (float *)malloc(sizeof(float) * (size_t)n * 4);
        int wkind = trial % 3, rn = 0;   // 0: no weights, 1: integers 0..3, 2: any in (0, 4)
        for (int i = 0; i < n; i++) {
            sc[i] = (float)(wd__rng_next(&r) % (trial % 2 ? 5 : 1000)) / 7.0f - 3.0f;   // many ties on odd trials
            if (trial % 6 == 3 && i % 3 == 0) sc[i] = -0.0f;
            if (trial % 6 == 3 && i % 3 == 1) sc[i] = 0.0f;
            y[i] = (float)(wd__rng_next(&r) % 3 == 0);
            w[i] = wkind == 1 ? (float)(wd__rng_next(&r) % 4) : wkind == 2 ? (float)(0.01 + 3.98 * wd__rng_uniform(&r)) : 1.0f;
            for (int c = 0; wkind == 1 && c < (int)w[i]; c++) { rs[rn] = sc[i]; ry[rn] = y[i]; rn++; }
        }
        double want = brute_auc(sc, y, wkind ? w : NULL, n), got;
        CHECK_OK(wd_auc(sc, y, wkind ? w : NULL, n, &got));
        checked++; weighted += wkind != 0;
        if (!same_auc(want, got)) { bad++; printf("  trial %d (n %d, weights %d): AUC %.15f, brute force %.15f\n", trial, n, wkind, got, want); }
        if (wkind == 1) {   // integer weights: the same as repeated samples
            double rep;
            CHECK_OK(wd_auc(rs, ry, NULL, rn, &rep));
            if (!same_auc(rep, got)) { bad++; printf("  trial %d: weighted AUC %.15f, repeated samples %.15f\n", trial, got, rep); }
        }
        if (wkind) {   // weighted log loss, likewise
            float *p = (float *)malloc(sizeof(float) * (size_t)n);
            double s = 0, ws = 0;
            for (int i = 0; i < n; i++) {
                p[i] = (float)(0.02 + 0.96 * wd__rng_uniform(&r));
                s -= w[i] * (y[i] * log((double)p[i]) + (1 - y[i]) * log(1 - (double)p[i]));
                ws += w[i];
            }
            double ll = wd_logloss(p, y, w, n);
            if (ws > 0 && !(fabs(ll - s / ws) < 1e-12 * (s / ws))) { bad++; printf("  trial %d: weighted logloss %.15f, want %.15f\n", trial, ll, s / ws); }
            free(p);
        }
        free(sc); free(y); free(w); free(rs); free(ry);
    }
    printf("  %d AUCs against brute force (%d weighted, ties and +-0 included), %d off\n", checked, weighted, bad);
    CHECK(bad == 0);
    // by hand: weights change the answer (unweighted 3/4)
    float s1[4] = {0.1f, 0.4f, 0.35f, 0.8f}, y1[4] = {0, 0, 1, 1}, w1[4] = {1, 2, 3, 0.5f};
    double a;
    CHECK_OK(wd_auc(s1, y1, NULL, 4, &a));
    CHECK(fabs(a - 0.75) < 1e-15);
    CHECK_OK(wd_auc(s1, y1, w1, 4, &a));
    CHECK(fabs(a - 4.5 / 10.5) < 1e-15);   // pairs 3*1 + 0.5*1 + 0.5*2 over 3.5 * 3
    // a weighted tie: (2 x 3) / 2 + 2 x 1 over 2 x 4
    float s2[3] = {0.5f, 0.5f, 0.2f}, y2[3] = {1, 0, 0}, w2[3] = {2, 3, 1};
    CHECK_OK(wd_auc(s2, y2, w2, 3, &a));
    CHECK(fabs(a - 0.625) < 1e-15);
    // zero weights remove samples: here every negative, so no AUC
    float w3[3] = {1, 0, 0};
    CHECK_OK(wd_auc(s2, y2, w3, 3, &a));
    CHECK(isnan(a));
    // the weighted log loss by hand: (2 ln 2 + 1 ln 5) / 3
    float p4[2] = {0.5f, 0.2f}, y4[2] = {1, 0}, w4[2] = {2, 1};
    CHECK(fabs(wd_logloss(p4, y4, w4, 2) - (2 * log(2.0) - log(0.8)) / 3) < 1e-7);
    float s5[3] = {0.1f, NAN, 0.3f}, y5[3] = {0, 1, 0};
    CHECK(wd_auc(s5, y5, NULL, 3, &a) == WD_ERR_NUMERIC);
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

// The dense feature rule, computed here in double: log1p(x), -log1p(-x)
// for negatives. Float rounding allows half a unit in the last place.
static double want_count(int64_t x) { return x >= 0 ? log1p((double)x) : -log1p(-(double)x); }
static int count_ok(int64_t x) {
    double want = want_count(x), got = wd_count_feature(x);
    return fabs(got - want) <= 6e-8 * fabs(want);
}
static void test_count_feature(void) {
    CHECK(wd_count_feature(0) == 0.0f);
    CHECK(fabsf(wd_count_feature(1) - (float)log(2.0)) < 1e-7f);
    CHECK(fabsf(wd_count_feature(-1) + (float)log(2.0)) < 1e-7f);
    CHECK(isfinite(wd_count_feature(INT64_MIN + 1)) && isfinite(wd_count_feature(INT64_MAX)));
    int tried = 0, bad = 0;
    for (int64_t x = -3000; x <= 20000; x++) { tried++; if (!count_ok(x)) { if (bad++ < 5) printf("  f(%lld) = %.9g, log1p rule %.9g\n", (long long)x, (double)wd_count_feature(x), want_count(x)); } }
    for (double v = 2; v < 9.2e18; v *= 1.37) {   // up to 2^63, both signs
        int64_t x = (int64_t)v;
        tried += 2;
        if (!count_ok(x) || !count_ok(-x)) { if (bad++ < 5) printf("  f(+-%lld) = %.9g / %.9g, log1p rule %.9g\n", (long long)x, (double)wd_count_feature(x), (double)wd_count_feature(-x), want_count(x)); }
    }
    tried += 2; bad += !count_ok(INT64_MAX) + !count_ok(INT64_MIN + 1);
    printf("  %d counts against log1p in double, %d off\n", tried, bad);
    CHECK(bad == 0);
    // a few by value
    CHECK(fabs(wd_count_feature(2) - 1.0986122886681098) < 1e-7 && fabs(wd_count_feature(1382) - 7.2320106) < 1e-6);
    CHECK(fabs(wd_count_feature(-2) + 1.0986122886681098) < 1e-7);
}

// wd_hash_bytes and wd_hash_bucket pinned (values computed once, on the
// implementation of 0.1.0): a changed hash silently changes every id of
// every converted file, so it must be a visible, deliberate change.
static void test_hash_pinned(void) {
    static const struct { const char *s; uint64_t h; uint32_t b; } pin[] = {
        {"", 6360500718281360773ull, 757856062u},
        {"a", 7548155771681843195ull, 844753169u},
        {"ab", 15787799027191942574ull, 677350162u},
        {"abcdefg", 14401570048960480106ull, 149490470u},
        {"abcdefgh", 17096043309557614828ull, 885312505u},
        {"abcdefghi", 3383403418994855210ull, 311031445u},
        {"68fd1e64", 6325684233314481914ull, 34692591u},
        {"hello world, this is long", 12198993382989205395ull, 596252316u},
    };
    for (size_t i = 0; i < sizeof pin / sizeof pin[0]; i++) {
        size_t n = strlen(pin[i].s);
        CHECK(wd_hash_bytes(pin[i].s, n, 3) == pin[i].h);
        CHECK(wd_hash_bucket(pin[i].s, n, 3, 1000000007u) == pin[i].b);
        CHECK(wd_hash_bucket(pin[i].s, n, 3, 1000000007u) == (uint32_t)(wd_hash_bytes(pin[i].s, n, 3) % 1000000007u));   // the documented rule
    }
    // the slot is part of the hash: one string, 26 slots, 26 ids
    static const uint32_t by_slot[26] = {415238, 994988, 434065, 1029882, 706206, 868693, 185869, 535052, 883911, 143429, 991209, 689758, 216125,
                                         959085, 212525, 294651, 236869, 314403, 151593, 781791, 25627, 604969, 987140, 172944, 135939, 474387};
    int same = 0;
    for (int k = 0; k < 26; k++) {
        CHECK(wd_hash_bucket("68fd1e64", 8, k, 1u << 20) == by_slot[k]);
        for (int j = 0; j < k; j++) same += wd_hash_bucket("68fd1e64", 8, k, 1u << 20) == wd_hash_bucket("68fd1e64", 8, j, 1u << 20);
    }
    CHECK(same == 0);
    // every byte counts, at every position
    int collide = 0;
    char buf[20] = "0123456789abcdefghi";
    uint64_t h0 = wd_hash_bytes(buf, 19, 0);
    for (int i = 0; i < 19; i++) { buf[i] ^= 1; collide += wd_hash_bytes(buf, 19, 0) == h0; buf[i] ^= 1; }
    CHECK(collide == 0 && wd_hash_bytes(buf, 18, 0) != h0);
}

// ---- text parsing ------------------------------------------------------------------
static const char *CRITEO_OK =
    "1\t1\t-3\t5\t\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\t80e26c9b\tfb936136\t7b4723c4\t25c83c98\t7e0ccccf\tde7995b8\t1f89b562\ta73ee510\ta8cd5504\tb2cb9c98\t37c9c164\t2824a5f6\t1adce6ef\t8ba8b39a\t891b62e7\te5ba7672\tf54016b9\t21ddcdc9\tb1252a9d\t07b5194c\t\t3a171ecb\tc5c50484\te8b83407\t9727dd16";

static void test_parse_criteo(void) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    wd_text_spec_criteo(t, 1000);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    CHECK_OK(wd_parse_line(t, CRITEO_OK, strlen(CRITEO_OK), &b));
    CHECK(b.n == 1 && b.label[0] == 1.0f && b.weight[0] == 1.0f);
    CHECK(fabsf(b.dense[1] + (float)log1p(3.0)) < 1e-6f);   // negative count rule
    CHECK(b.dense[3] == 0.0f && b.dense[11] == 0.0f);        // missing
    static const int64_t counts[13] = {1, -3, 5, 0, 1382, 4, 15, 2, 181, 1, 2, 0, 2};
    for (int j = 0; j < 13; j++) CHECK(fabs(b.dense[j] - want_count(counts[j])) <= 6e-8 * fabs(want_count(counts[j])));
    // ids pinned (computed once; C22 is empty: the empty string's bucket)
    static const uint32_t ids[26] = {478, 42, 803, 56, 721, 161, 594, 506, 906, 373, 243, 181, 788, 661, 876, 22, 678, 306, 680, 166, 621, 358, 426, 740, 796, 938};
    for (int k = 0; k < 26; k++) CHECK(b.ids[k][0] == ids[k]);
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
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    const char *ok = "17,1,14102100,x,y";
    CHECK_OK(wd_parse_line(t, ok, strlen(ok), &b));
    CHECK(b.label[0] == 1.0f && fabsf(b.dense[0] - wd_count_feature(14102100)) < 1e-6f);
    CHECK(b.ids[0][0] == 61 && b.ids[1][0] == 1);   // pinned: "x" in slot 0, "y" in slot 1 of 100 buckets
    CHECK(wd_parse_line(t, "1,0,3,x", 7, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "4 fields"));
    CHECK(wd_parse_line(t, "1,0,3,x,y,z", 11, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "more than 5"));
    CHECK(wd_parse_line(t, "1,0,abc,x,y", 11, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "not an integer"));
    CHECK(wd_text_spec_csv(t, "a,b", "nolabel", NULL, NULL, 10) == WD_ERR_INVALID_ARG);
    wd_batch_free(&b);

    CHECK_OK(wd_text_spec_libsvm(t, "user=0-99,item=100-149", "1000-1002", 0));
    CHECK(t->schema.nslots == 2 && t->schema.ndense == 3 && t->schema.slot[1].buckets == 50 && t->schema.slot[0].kind == WD_MULTI_HOT);
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
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
    CHECK(c == 1 && ids[0] == 49 && b.label[2] == 0.0f);   // labels +1, -1, 0 -> 1, 0, 0
    CHECK(b.weight[0] == 1.0f && b.weight[1] == 1.0f && b.weight[2] == 1.0f && b.dense[0] == 0.0f && b.dense[2] == 0.0f);   // absent dense indexes are 0
    CHECK(wd_parse_line(t, "1 500:1", 7, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "no slot range"));
    CHECK(wd_parse_line(t, "1 5-1", 5, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "INDEX:VALUE"));
    CHECK(wd_parse_line(t, "3 5:1", 5, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "label"));
    // multi-hot roundtrip through a file
    char path[600];
    tmppath(path, sizeof path, "libsvm.wdr");
    CHECK(write_file(path, &t->schema, &b, 2) == 0);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(path, &r));
    wd_batch back;
    REQUIRE_OK(wd_batch_init(&back, &t->schema, 0, 0));
    REQUIRE_OK(wd_reader_read_block(r, 1, &back));
    CHECK(back.n == 1 && batch_sample_equal(&back, 0, &b, 2));
    wd_reader_close(r);
    wd_batch_free(&back);
    wd_batch_free(&b);
    CHECK(wd_text_spec_libsvm(t, "a=0-10,b=5-20", NULL, 0) == WD_ERR_INVALID_ARG);
    free(t);
}

/* Serving input: wd_parse_unlabeled (the line less its label field) and
   wd_batch_add (values as pointer + length, not NUL-terminated) must give
   exactly the sample wd_parse_line gives for the labeled line with label 0,
   for Criteo, CSV (label in the middle, a derived slot from a column before
   it, a slot after it: the columns shift) and LibSVM; wrong field counts
   are refused naming the count; wd_batch_clear empties a batch and keeps
   its memory, so refilling it allocates nothing. */
static void test_parse_unlabeled_add_n(void) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    REQUIRE(t);
    wd_text_spec_criteo(t, 1000);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    char line[1024];
    snprintf(line, sizeof line, "0%s", CRITEO_OK + 1);   // label 0
    const char *nolabel = CRITEO_OK + 2;                 // past "1\t"
    CHECK_OK(wd_parse_line(t, line, strlen(line), &b));
    CHECK_OK(wd_parse_unlabeled(t, nolabel, strlen(nolabel), &b));
    CHECK(b.n == 2 && batch_sample_equal(&b, 0, &b, 1) && b.weight[1] == 1.0f);
    // the 26 categorical fields as (pointer, length) into the line, dense as counts
    const char *cat[26];
    size_t len[26];
    const char *p = nolabel;
    double dense[13];
    for (int f = 0; f < 39; f++) {
        const char *tab = strchr(p, '\t');
        size_t n = tab ? (size_t)(tab - p) : strlen(p);
        if (f < 13) {
            char tmp[32];
            snprintf(tmp, sizeof tmp, "%.*s", (int)n, p);
            dense[f] = n ? (double)strtoll(tmp, NULL, 10) : NAN;
        } else {
            cat[f - 13] = p;
            len[f - 13] = n;
        }
        p = tab ? tab + 1 : p + n;
    }
    CHECK_OK(wd_batch_add(t, &b, 0.0f, dense, 13, cat, len, 26));
    CHECK(b.n == 3 && batch_sample_equal(&b, 0, &b, 2));
    // NUL-terminated copies (cat_len NULL); a NULL entry is the empty value
    char own[26][16];
    const char *cz[26];
    for (int k = 0; k < 26; k++) { snprintf(own[k], sizeof own[k], "%.*s", (int)len[k], cat[k]); cz[k] = own[k]; }
    cz[21] = NULL;   // C22 is empty in the line
    size_t zl[26];
    for (int k = 0; k < 26; k++) zl[k] = cz[k] ? strlen(cz[k]) : 0;
    CHECK_OK(wd_batch_add(t, &b, 0.0f, dense, 13, cz, NULL, 26));
    CHECK_OK(wd_batch_add(t, &b, 0.0f, dense, 13, cz, zl, 26));
    CHECK(b.n == 5 && batch_sample_equal(&b, 0, &b, 3) && batch_sample_equal(&b, 0, &b, 4));
    len[0] = 7;   // a different value: "68fd1e6"
    CHECK_OK(wd_batch_add(t, &b, 0.0f, dense, 13, cat, len, 26));
    CHECK(b.n == 6 && b.ids[0][5] == wd_hash_bucket("68fd1e6", 7, 0, 1000) && b.ids[0][5] != b.ids[0][0]);
    // wrong field counts
    CHECK(wd_parse_unlabeled(t, CRITEO_OK, strlen(CRITEO_OK), &b) == WD_ERR_PARSE && strstr(wd_last_error(), "too many fields (more than 39)"));
    const char *short38 = strchr(nolabel, '\t') + 1;
    CHECK(wd_parse_unlabeled(t, short38, strlen(short38), &b) == WD_ERR_PARSE && strstr(wd_last_error(), "38 fields"));
    CHECK(wd_parse_line(t, nolabel, strlen(nolabel), &b) == WD_ERR_PARSE && strstr(wd_last_error(), "39 fields, Criteo lines have 40"));
    CHECK(b.n == 6);
    // wd_batch_clear: empty, same memory; refilled without allocating
    void *mem = b.mem;
    int cap = b.cap;
    wd_batch_clear(&b);
    CHECK(b.n == 0 && b.mem == mem && b.cap == cap);
    for (int i = 0; i < cap; i++) CHECK_OK(wd_parse_unlabeled(t, nolabel, strlen(nolabel), &b));
    CHECK(b.n == cap && b.mem == mem && batch_sample_equal(&b, cap - 1, &b, 0));
    wd_batch_clear(NULL);
    wd_batch_free(&b);

    // CSV: label between the derived slot's column and a slot
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.header = "id,hour,click,site"; cd.label = "click"; cd.cat = "site"; cd.derive = "hod=hour[6:8]"; cd.buckets = 100000;
    REQUIRE_OK(wd_text_spec_csv_desc(t, &cd));
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    CHECK_OK(wd_parse_line(t, "7,14102113,0,abc", 16, &b));
    CHECK_OK(wd_parse_unlabeled(t, "7,14102113,abc", 14, &b));
    CHECK_OK(wd_parse_unlabeled(t, "7,14102113,abd\r", 15, &b));
    CHECK(b.n == 3 && batch_sample_equal(&b, 0, &b, 1) && !batch_sample_equal(&b, 0, &b, 2));
    CHECK(b.ids[1][0] == b.ids[1][2] && b.ids[1][0] == wd_hash_bucket("13", 2, 1, 100000));   // hod from the hour column
    CHECK(wd_parse_unlabeled(t, "7,14102113,0,abc", 16, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "more than 3 fields"));
    CHECK(wd_parse_unlabeled(t, "7,14102113", 10, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "2 fields, the header has 3 besides the label"));
    wd_batch_free(&b);

    // LibSVM: the features alone
    CHECK_OK(wd_text_spec_libsvm(t, "user=0-99,item=100-149", "1000-1002", 0));
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    CHECK_OK(wd_parse_line(t, "0 3:1 7:1 120:1 1001:2.5", 24, &b));
    CHECK_OK(wd_parse_unlabeled(t, "3:1 7:1 120:1 1001:2.5", 22, &b));
    CHECK_OK(wd_parse_unlabeled(t, "  ", 2, &b));   // no feature at all
    CHECK(b.n == 3 && batch_sample_equal(&b, 0, &b, 1) && b.label[2] == 0.0f && b.dense[2 * 3 + 1] == 0.0f);
    CHECK(wd_parse_unlabeled(t, "1 3:1", 5, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "'1' is not INDEX:VALUE"));
    CHECK(wd_parse_unlabeled(NULL, "3:1", 3, &b) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "wd_parse_unlabeled: the spec"));
    wd_batch_free(&b);
    free(t);
}

// Hand-written lines, parsed and converted, against values computed here:
// dense features from log1p in double (not wd_count_feature), ids pinned.
// (test_gen and the CLI compare the parser with `wd gen`, which shares the
// hash and the count rule with it; this does not.)
static const int64_t HAND_COUNTS[13] = {0, 1, 2, 3, 10, 0 /* missing */, 255, -1, -2, 1000000, 123456789, 0 /* missing */, INT64_MAX};
static const uint32_t HAND_IDS[26] = {1028477, 325740, 763505, 535772, 512451, 868693, 1044048, 646413, 69576, 98770, 337704, 450448, 69321,
                                      511054, 722935, 521666, 695712, 38647, 861617, 211434, 473666, 466282, 415881, 343140, 198412, 332929};
static const uint32_t EMPTY_IDS[26] = {639862, 325740, 309024, 460165, 428509, 55146, 1002942, 1001549, 529960, 286668, 421530, 906203, 981542,
                                       2690, 232573, 102004, 431715, 199891, 617802, 54735, 427878, 466766, 782943, 921790, 344977, 863592};
static const char *HAND1 = "0\t0\t1\t2\t3\t10\t\t255\t-1\t-2\t1000000\t123456789\t\t9223372036854775807\ta\t\tdeadbeef\tDEADBEEF\tx y\t68fd1e64\t0\t00\tc9\tc10\tc11\tc12\tc13\tc14\tc15\tc16\tc17\tc18\tc19\tc20\tc21\tc22\tc23\tc24\tc25\ta";
static const char *HAND2 = "1\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";   // all missing
// Sample i of b is HAND1 (which 1) or HAND2 (which 2)?
static int hand_sample_ok(const wd_batch *b, int i, int which) {
    int ok = b->label[i] == (which == 1 ? 0.0f : 1.0f) && b->weight[i] == 1.0f;
    for (int j = 0; j < 13; j++) {
        double want = which == 1 && j != 5 && j != 11 ? want_count(HAND_COUNTS[j]) : 0.0;
        ok &= fabs(b->dense[(size_t)i * 13 + (size_t)j] - want) <= 6e-8 * fabs(want);
    }
    for (int k = 0; k < 26; k++) ok &= b->ids[k][i] == (which == 1 ? HAND_IDS[k] : EMPTY_IDS[k]);
    return ok;
}
static void test_parse_handwritten(void) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    wd_text_spec_criteo(t, 1u << 20);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    REQUIRE_OK(wd_parse_line(t, HAND1, strlen(HAND1), &b));
    REQUIRE_OK(wd_parse_line(t, HAND2, strlen(HAND2), &b));
    REQUIRE(b.n == 2);
    CHECK(hand_sample_ok(&b, 0, 1) && hand_sample_ok(&b, 1, 2));
    CHECK(b.dense[4] == (float)log1p(10.0) && b.dense[2] == (float)log(3.0) && b.dense[8] == -(float)log(3.0));   // 10, 2, -2
    // structure the pins share: empty fields share their slot's bucket; the
    // same string in slots 0 and 25 lands in different buckets
    CHECK(HAND_IDS[1] == EMPTY_IDS[1] && b.ids[1][0] == b.ids[1][1] && b.ids[0][0] != b.ids[25][0]);
    // the same lines through wd_convert (CRLF, no final newline, 2 threads)
    char in[600], out[600];
    tmppath(in, sizeof in, "hand.tsv");
    tmppath(out, sizeof out, "hand.wdr");
    FILE *f = fopen(in, "wb");
    REQUIRE(f != NULL);
    for (int i = 0; i < 50; i++) fprintf(f, "%s%s", i % 2 ? HAND2 : HAND1, i == 49 ? "" : i % 3 ? "\n" : "\r\n");
    fclose(f);
    const char *ins[1] = {in};
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.inputs = ins; d.ninputs = 1; d.output = out; d.block_samples = 16; d.threads = 2;
    unlink(out);
    wd_convert_report rep;
    REQUIRE_OK(wd_convert(&d, &rep));
    CHECK(rep.rows == 50 && rep.bad_rows == 0 && rep.blocks == 4);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(out, &r));
    CHECK(wd_reader_nsamples(r) == 50 && wd_reader_schema(r)->slot[7].buckets == 1u << 20);
    int at = 0, bad = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *lb;
        REQUIRE_OK(wd_reader_block(r, i, &lb));
        for (int j = 0; j < lb->n; j++, at++) bad += !hand_sample_ok(lb, j, at % 2 ? 2 : 1);
    }
    CHECK(at == 50 && bad == 0);
    wd_reader_close(r);
    wd_batch_free(&b);
    // CSV: dense by the same rule, missing fields 0 and the empty string's bucket
    CHECK_OK(wd_text_spec_csv(t, "id,click,hour,a,b", "click", "hour", "a,b", 1000));
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    const char *lines[4] = {"1,0,0,x,y", "2,1,9,,z", "3,0,,abc,", "4,1,-5,x,x"};
    static const int64_t hour[4] = {0, 9, 0, -5};
    static const uint32_t ida[4] = {861, 942, 328, 861}, idb[4] = {1, 37, 92, 974};
    for (int i = 0; i < 4; i++) CHECK_OK(wd_parse_line(t, lines[i], strlen(lines[i]), &b));
    REQUIRE(b.n == 4);
    for (int i = 0; i < 4; i++) {
        CHECK(b.label[i] == (float)(i % 2) && fabs(b.dense[i] - want_count(hour[i])) <= 6e-8 * fabs(want_count(hour[i])));
        CHECK(b.ids[0][i] == ida[i] && b.ids[1][i] == idb[i]);
    }
    CHECK(b.ids[0][3] != b.ids[1][3]);   // "x" in slot 0 and in slot 1
    wd_batch_free(&b);
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
    REQUIRE(f != NULL);
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
    REQUIRE_OK(wd_reader_open(out, &r));
    const wd_batch *b;
    REQUIRE_OK(wd_reader_block(r, 15, &b));
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
    unlink(a); unlink(tsv);
    wd_gen_report rep;
    REQUIRE_OK(wd_gen(&d, &rep));
    CHECK(rep.rows == 3000 && rep.ctr > 0.1 && rep.ctr < 0.4 && rep.oracle_auc > 0.7 && rep.oracle_auc < 1.0);
    // the report against the file and its .prob side file (true p per line):
    // CTR, oracle AUC (by brute force here) and oracle log loss
    {
        char probpath[700];
        snprintf(probpath, sizeof probpath, "%s.prob", a);
        size_t np = 0;
        char *txt = (char *)slurp(probpath, &np);
        REQUIRE(txt != NULL);
        txt[np] = 0;
        float *pr = (float *)malloc(sizeof(float) * 3001), *yl = (float *)malloc(sizeof(float) * 3000);
        int lines = 0;
        for (char *q = txt; *q && lines <= 3000; lines++) { char *e; pr[lines] = (float)strtod(q, &e); if (e == q || *e != '\n') break; q = e + 1; }
        free(txt);
        wd_reader *rr;
        REQUIRE_OK(wd_reader_open(a, &rr));
        int64_t at = 0;
        for (int64_t i = 0; i < wd_reader_nblocks(rr); i++) {
            const wd_batch *bb;
            REQUIRE_OK(wd_reader_block(rr, i, &bb));
            for (int j = 0; j < bb->n && at < 3000; j++) yl[at++] = bb->label[j];
        }
        wd_reader_close(rr);
        REQUIRE(lines == 3000 && at == 3000);
        double ctr = 0, ll = 0;
        for (int i = 0; i < 3000; i++) { ctr += yl[i]; ll -= yl[i] * log((double)pr[i]) + (1 - yl[i]) * log(1 - (double)pr[i]); }
        double bauc = brute_auc(pr, yl, NULL, 3000);
        printf("  gen: ctr %.4f, oracle AUC %.6f (brute force over the .prob file %.6f), logloss %.6f (%.6f)\n", rep.ctr, rep.oracle_auc, bauc, rep.oracle_logloss, ll / 3000);
        CHECK(fabs(rep.ctr - ctr / 3000) < 1e-12);
        CHECK(fabs(rep.oracle_auc - bauc) < 2e-5 && fabs(rep.oracle_logloss - ll / 3000) < 1e-5);   // .prob holds 7 decimals
        free(pr); free(yl);
    }
    d.output = a2; d.tsv = NULL; d.threads = 1;
    wd_gen_report rep2;
    REQUIRE_OK(wd_gen(&d, &rep2));
    size_t n1 = 0, n2 = 0;
    uint8_t *p1 = slurp(a, &n1), *p2 = slurp(a2, &n2);
    REQUIRE(p1 && p2);
    CHECK(n1 == n2 && memcmp(p1, p2, n1) == 0 && rep.oracle_auc == rep2.oracle_auc);   // same seed, same bytes
    free(p2);
    d.seed = 6;
    REQUIRE_OK(wd_gen(&d, &rep2));
    p2 = slurp(a2, &n2);
    REQUIRE(p2 != NULL);
    CHECK(n1 != n2 || memcmp(p1, p2, n1) != 0);
    free(p1); free(p2);
    // its TSV converts to the same samples
    wd_reader *ra, *rc;
    REQUIRE_OK(wd_reader_open(a, &ra));
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    wd_text_spec_criteo(t, 0);
    CHECK_OK(wd_text_spec_match(t, wd_reader_schema(ra)));
    const char *ins[1] = {tsv};
    wd_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.spec = t; cd.inputs = ins; cd.ninputs = 1; cd.output = conv; cd.block_samples = 512; cd.threads = 2;
    unlink(conv);
    REQUIRE_OK(wd_convert(&cd, NULL));
    REQUIRE_OK(wd_reader_open(conv, &rc));
    CHECK(wd_reader_nblocks(ra) == wd_reader_nblocks(rc) && wd_reader_nsamples(rc) == 3000);
    wd_batch ba, bc;
    REQUIRE_OK(wd_batch_init(&ba, wd_reader_schema(ra), 0, 0));
    REQUIRE_OK(wd_batch_init(&bc, wd_reader_schema(ra), 0, 0));
    int diff = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(ra); i++) {
        REQUIRE_OK(wd_reader_read_block(ra, i, &ba));
        REQUIRE_OK(wd_reader_read_block(rc, i, &bc));
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
    REQUIRE(f != NULL);
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
    REQUIRE_OK(wd_reader_open(out, &r));
    double pos = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        REQUIRE_OK(wd_reader_block(r, i, &b));
        for (int j = 0; j < b->n; j++) pos += b->label[j];
    }
    CHECK(pos == 1397 + 86);   // click counts from SOURCES.md
    wd_reader_close(r);
    free(t);
}

// The real Criteo sample converted, every row checked against the text as
// read here: label, and the 13 dense features by log1p in double (empty
// fields 0); the first row's ids pinned; click counts from SOURCES.md.
static void test_real_criteo(void) {
    const char *names[3] = {"criteo_kaggle_head8000_train.tsv", "criteo_kaggle_head8000_dev.tsv", "criteo_kaggle_head8000_test.tsv"};
    char in[3][600], out[600];
    for (int i = 0; i < 3; i++) snprintf(in[i], sizeof in[i], "%s/%s", DATA, names[i]);
    if (!file_exists(in[0])) { SKIP("real data not found in %s", DATA); return; }
    tmppath(out, sizeof out, "criteo-real.wdr");
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    wd_text_spec_criteo(t, 1u << 20);
    const char *ins[3] = {in[0], in[1], in[2]};
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.inputs = ins; d.ninputs = 3; d.output = out; d.threads = 2; d.block_samples = 1000;
    unlink(out);
    wd_convert_report rep;
    REQUIRE_OK(wd_convert(&d, &rep));
    CHECK(rep.rows == 8000 && rep.bad_rows == 0);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(out, &r));
    REQUIRE(wd_reader_nsamples(r) == 8000);
    wd_batch all;
    REQUIRE_OK(wd_batch_init(&all, wd_reader_schema(r), 0, 0));
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        REQUIRE_OK(wd_reader_block(r, i, &b));
        REQUIRE_OK(wd_batch_append(&all, b, 0, b->n));
    }
    wd_reader_close(r);
    REQUIRE(all.n == 8000);
    int row = 0, bad = 0, missing = 0, negative = 0;
    double clicks = 0;
    for (int fi = 0; fi < 3; fi++) {
        size_t n = 0;
        char *txt = (char *)slurp(in[fi], &n);
        REQUIRE(txt != NULL);
        txt[n] = 0;
        for (char *line = txt; *line && row < 8000; row++) {
            char *nl = strchr(line, '\n');
            if (nl) *nl = 0;
            char *fld[40];
            int nf = 0;
            for (char *q = line; nf < 40; nf++) { fld[nf] = q; char *tab = strchr(q, '\t'); if (!tab) { nf++; break; } *tab = 0; q = tab + 1; }
            int ok = nf == 40 && all.label[row] == (float)atoi(fld[0]);
            clicks += atoi(fld[0]);
            for (int j = 0; ok && j < 13; j++) {
                double want = 0;
                if (*fld[1 + j]) { long long x = strtoll(fld[1 + j], NULL, 10); want = want_count(x); negative += x < 0; } else missing++;
                ok &= fabs(all.dense[(size_t)row * 13 + (size_t)j] - want) <= 6e-8 * fabs(want);
            }
            if (!ok && bad++ < 3) printf("  %s: row %d differs from its conversion\n", names[fi], row);
            line = nl ? nl + 1 : line + strlen(line);
        }
        free(txt);
    }
    // the first row (Kaggle's first): ids pinned, C22 empty
    static const uint32_t first[26] = {415238, 757242, 86627, 1046064, 94897, 690849, 582674, 76554, 635914, 581189, 454163, 647709, 423196,
                                       480253, 414236, 677350, 178390, 1047474, 259776, 823902, 937173, 466766, 325018, 288132, 894188, 383810};
    int idbad = 0;
    for (int k = 0; k < 26; k++) idbad += all.ids[k][0] != first[k];
    printf("  criteo: %d rows against the text, %d differ; %d missing and %d negative counts; first row ids %s\n", row, bad, missing, negative, idbad ? "differ" : "as pinned");
    CHECK(row == 8000 && bad == 0 && clicks == 1549 + 93 + 86 && missing > 10000 && negative == 800 && idbad == 0);
    wd_batch_free(&all);
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
    RUN(test_hash_pinned);
    RUN(test_parse_criteo);
    RUN(test_parse_csv_libsvm);
    RUN(test_parse_unlabeled_add_n);
    RUN(test_parse_handwritten);
    RUN(test_convert);
    RUN(test_gen);
    RUN(test_real_data);
    RUN(test_real_criteo);
    return test_summary("test_wd");
}
