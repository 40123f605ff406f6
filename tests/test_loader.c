// Loader tests (also built with ThreadSanitizer). Usage: test_loader [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <dirent.h>

static char TMP[200] = "/tmp";

// Schema: dense[0] = sample id (exact in float below 2^24), slot 0 one-hot id
// = sample id, slot 1 multi-hot with (id % 4) ids each equal to id % 97.
static void id_schema(wd_schema *s) {
    memset(s, 0, sizeof *s);
    s->ndense = 1;
    s->nslots = 2;
    snprintf(s->slot[0].name, WD_NAME_MAX, "sid");
    s->slot[0].buckets = 1u << 24;
    snprintf(s->slot[1].name, WD_NAME_MAX, "mh");
    s->slot[1].buckets = 97;
    s->slot[1].kind = WD_MULTI_HOT;
}
static int make_id_file(const char *path, int first, int n, int block) {
    wd_schema s;
    id_schema(&s);
    wd_batch b;
    if (wd_batch_init(&b, &s, n, (int64_t)n * 4)) return -1;
    for (int i = 0; i < n; i++) {
        int id = first + i;
        b.label[i] = (float)(id % 2);
        b.weight[i] = 1.0f;
        b.dense[i] = (float)id;
        b.ids[0][i] = (uint32_t)id;
        uint32_t o = b.offs[1][i];
        for (int j = 0; j < id % 4; j++) b.ids[1][o + (uint32_t)j] = (uint32_t)(id % 97);
        b.offs[1][i + 1] = o + (uint32_t)(id % 4);
    }
    b.n = n;
    wd_writer *w;
    wd_writer_desc d;
    memset(&d, 0, sizeof d);
    d.block_samples = block;
    int rc = wd_writer_open(path, &s, &d, &w) || wd_writer_append(w, &b) || wd_writer_close(w);
    wd_batch_free(&b);
    return rc ? -1 : 0;
}
static char F[3][300];
static const char *FILES[3] = {F[0], F[1], F[2]};
#define NTOTAL (1000 + 777 + 2500)

// A consistent sample: ids derived from its dense id.
static int sample_ok(const wd_batch *b, int i) {
    int id = (int)b->dense[i];
    int c;
    const uint32_t *m = wd_batch_sample_ids(b, 1, i, &c);
    if (b->ids[0][i] != (uint32_t)id || c != id % 4 || b->label[i] != (float)(id % 2)) return 0;
    for (int j = 0; j < c; j++) if (m[j] != (uint32_t)(id % 97)) return 0;
    return 1;
}

static void setup(void) {
    for (int f = 0; f < 3; f++) snprintf(F[f], sizeof F[f], "%s/ld%d.wdr", TMP, f);
    CHECK(make_id_file(F[0], 0, 1000, 64) == 0);
    CHECK(make_id_file(F[1], 1000, 777, 100) == 0);
    CHECK(make_id_file(F[2], 1777, 2500, 50) == 0);
}

static wd_loader_desc base_desc(int batch, int shard, int nshards, int threads, int shuffle) {
    wd_loader_desc d;
    memset(&d, 0, sizeof d);
    d.files = FILES; d.nfiles = 3; d.batch_size = batch;
    d.shard_index = shard; d.shard_count = nshards; d.threads = threads;
    d.shuffle = shuffle; d.seed = 99; d.ram_bytes = 64 << 20;
    return d;
}

static void test_exactly_once(void) {
    int *seen = (int *)calloc(NTOTAL, sizeof(int));
    int bad = 0, runs = 0;
    for (int nshards = 1; nshards <= 4; nshards++)
        for (int threads = 1; threads <= 3; threads++)
            for (int shuffle = 0; shuffle <= 1; shuffle++)
                for (int epoch = 0; epoch < 2; epoch++) {
                    memset(seen, 0, NTOTAL * sizeof(int));
                    int64_t nb = -1;
                    for (int sh = 0; sh < nshards; sh++) {
                        wd_loader_desc d = base_desc(97, sh, nshards, threads, shuffle);
                        wd_loader *l;
                        CHECK_OK(wd_loader_open(&d, &l));
                        if (!l) continue;
                        CHECK_OK(wd_loader_reset(l, epoch, 0));
                        if (nb < 0) nb = wd_loader_batches(l);
                        CHECK(wd_loader_batches(l) == nb);   // every shard the same count
                        int64_t got = 0;
                        for (;;) {
                            const wd_batch *b;
                            wd_status st = wd_loader_next(l, &b);
                            CHECK_OK(st);
                            if (st || !b) break;
                            got++;
                            CHECK(b->n == 97);
                            for (int i = 0; i < b->n; i++) {
                                if (b->weight[i] == 0.0f) continue;
                                int id = (int)b->dense[i];
                                if (id < 0 || id >= NTOTAL || !sample_ok(b, i)) bad++;
                                else seen[id]++;
                            }
                        }
                        CHECK(got == nb);
                        wd_loader_close(l);
                    }
                    for (int i = 0; i < NTOTAL; i++) bad += seen[i] != 1;
                    runs++;
                }
    printf("  %d configurations (1-4 shards x 1-3 threads x shuffle x 2 epochs)\n", runs);
    CHECK(bad == 0);
    free(seen);
}

// The ids of every sample of an epoch, in delivery order.
static int epoch_sequence(wd_loader_desc d, int64_t epoch, int64_t skip, int *out, int cap) {
    wd_loader *l;
    if (wd_loader_open(&d, &l)) return -1;
    int n = 0;
    if (wd_loader_reset(l, epoch, skip)) { wd_loader_close(l); return -1; }
    const wd_batch *b;
    while (!wd_loader_next(l, &b) && b)
        for (int i = 0; i < b->n && n < cap; i++) out[n++] = b->weight[i] ? (int)b->dense[i] : -1;
    wd_loader_close(l);
    return n;
}

static void test_determinism_and_resume(void) {
    int cap = NTOTAL + 1000;
    int *a = (int *)malloc(sizeof(int) * (size_t)cap), *b = (int *)malloc(sizeof(int) * (size_t)cap);
    wd_loader_desc d = base_desc(128, 1, 2, 1, 1);
    int na = epoch_sequence(d, 3, 0, a, cap);
    d.threads = 3;
    int nb = epoch_sequence(d, 3, 0, b, cap);
    CHECK(na > 0 && na == nb && memcmp(a, b, sizeof(int) * (size_t)na) == 0);   // thread count does not matter
    nb = epoch_sequence(d, 4, 0, b, cap);
    CHECK(nb > 0 && memcmp(a, b, sizeof(int) * (size_t)(na < nb ? na : nb)) != 0);   // epochs reshuffle
    // resume: skipping k batches gives the tail of the full sequence
    for (int k = 1; k < na / 128; k += 3) {
        nb = epoch_sequence(d, 3, k, b, cap);
        CHECK(nb == na - k * 128 && memcmp(a + k * 128, b, sizeof(int) * (size_t)nb) == 0);
    }
    // shuffling actually mixes samples across blocks
    int inversions = 0;
    for (int i = 1; i < na; i++) inversions += a[i] >= 0 && a[i - 1] >= 0 && a[i] < a[i - 1];
    CHECK(inversions > na / 4);
    free(a); free(b);
}

static int count_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    if (!dir) return -1;
    while ((e = readdir(dir))) n += e->d_name[0] != '.';
    closedir(dir);
    return n;
}

static void test_budgets(void) {
    int before = count_threads();
    for (int threads = 1; threads <= 4; threads++) {
        wd_loader_desc d = base_desc(256, 0, 1, threads, 1);
        d.ram_bytes = 400000;
        wd_loader *l;
        CHECK_OK(wd_loader_open(&d, &l));
        if (!l) continue;
        CHECK_OK(wd_loader_reset(l, 0, 0));
        const wd_batch *b;
        int n = 0;
        CHECK_OK(wd_loader_next(l, &b));
        if (before > 0) CHECK(count_threads() == before + threads);
        while (!wd_loader_next(l, &b) && b) n += b->n;
        CHECK(n > 0);
        wd_loader_stats s;
        wd_loader_stats_get(l, &s);
        CHECK(s.threads == threads && s.peak_bytes <= d.ram_bytes && s.ram_budget == d.ram_bytes);
        if (threads == 1) printf("  budget %zu: window %d blocks, ahead %d, queue %d, peak %zu bytes\n", d.ram_bytes, s.window_blocks, s.ahead_blocks, s.queue_batches, s.peak_bytes);
        wd_loader_close(l);
        if (before > 0) CHECK(count_threads() == before);
    }
    // a tight budget shrinks the window and decode-ahead but still delivers every sample once
    {
        wd_loader_desc d = base_desc(256, 0, 1, 2, 1);
        d.ram_bytes = 40000;
        wd_loader *l;
        CHECK_OK(wd_loader_open(&d, &l));
        if (l) {
            CHECK_OK(wd_loader_reset(l, 0, 0));
            const wd_batch *b;
            int real = 0;
            while (!wd_loader_next(l, &b) && b) for (int i = 0; i < b->n; i++) real += b->weight[i] != 0;
            wd_loader_stats s;
            wd_loader_stats_get(l, &s);
            printf("  budget %zu: window %d blocks, ahead %d, queue %d, peak %zu bytes\n", d.ram_bytes, s.window_blocks, s.ahead_blocks, s.queue_batches, s.peak_bytes);
            CHECK(real == NTOTAL && s.window_blocks < 8 && s.peak_bytes <= d.ram_bytes);
            wd_loader_close(l);
        }
    }
    // a budget too small for two batches fails cleanly
    wd_loader_desc d = base_desc(4096, 0, 1, 1, 0);
    d.ram_bytes = 10000;
    wd_loader *l;
    CHECK(wd_loader_open(&d, &l) == WD_ERR_LIMIT && strstr(wd_last_error(), "RAM budget"));
}

static void test_remainder_drop(void) {
    for (int nshards = 1; nshards <= 3; nshards++) {
        int64_t want = -1;
        for (int sh = 0; sh < nshards; sh++) {
            wd_loader_desc d = base_desc(300, sh, nshards, 2, 1);
            d.remainder = WD_REMAINDER_DROP;
            wd_loader *l;
            CHECK_OK(wd_loader_open(&d, &l));
            if (!l) continue;
            CHECK_OK(wd_loader_reset(l, 0, 0));
            if (want < 0) want = wd_loader_batches(l);
            CHECK(wd_loader_batches(l) == want && want > 0);
            const wd_batch *b;
            int64_t got = 0, zero = 0;
            while (!wd_loader_next(l, &b) && b) { got++; for (int i = 0; i < b->n; i++) zero += b->weight[i] == 0; }
            CHECK(got == want && zero == 0);
            wd_loader_close(l);
        }
    }
}

static void test_corrupt_blocks(void) {
    char bad[300];
    snprintf(bad, sizeof bad, "%s/ld-bad.wdr", TMP);
    CHECK(make_id_file(bad, 1777, 2500, 50) == 0);
    wd_reader *r;
    CHECK_OK(wd_reader_open(bad, &r));
    int64_t off = r->index[7].offset + 40;   // inside block 7's payload
    wd_reader_close(r);
    FILE *f = fopen(bad, "r+b");
    fseek(f, (long)off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, (long)off, SEEK_SET);
    fputc(c ^ 0x55, f);
    fclose(f);
    const char *files[3] = {F[0], F[1], bad};
    for (int policy = 0; policy <= 1; policy++) {
        wd_loader_desc d = base_desc(97, 0, 1, 2, 1);
        d.files = files;
        d.corrupt = policy;
        wd_loader *l;
        CHECK_OK(wd_loader_open(&d, &l));
        if (!l) continue;
        CHECK_OK(wd_loader_reset(l, 0, 0));
        int64_t nb = wd_loader_batches(l), got = 0, real = 0;
        wd_status st = WD_OK;
        const wd_batch *b;
        while (!(st = wd_loader_next(l, &b)) && b) { got++; for (int i = 0; i < b->n; i++) real += b->weight[i] != 0; }
        wd_loader_stats s;
        wd_loader_stats_get(l, &s);
        if (policy == WD_CORRUPT_FAIL) CHECK(st == WD_ERR_CORRUPT && strstr(wd_last_error(), "ld-bad.wdr: block 7"));
        else CHECK(st == WD_OK && got == nb && s.skipped_blocks == 1 && real == NTOTAL - 50);
        wd_loader_close(l);   // also right after an error: nothing hangs
    }
}

static wd_status double_dense(void *user, wd_batch *blk, int worker) {
    (void)worker;
    for (int i = 0; i < blk->n; i++) blk->dense[i] *= 2.0f;
    __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED);
    return WD_OK;
}
static wd_status failing_map(void *user, wd_batch *blk, int worker) {
    (void)user; (void)worker;
    return blk->dense[0] >= 1000.0f ? wd__fail(WD_ERR_INVALID_ARG, "feature transform refused") : WD_OK;
}

static void test_map_and_shutdown(void) {
    int calls = 0;
    wd_loader_desc d = base_desc(64, 0, 1, 2, 0);
    d.map = double_dense;
    d.map_user = &calls;
    wd_loader *l;
    CHECK_OK(wd_loader_open(&d, &l));
    if (!l) return;
    CHECK_OK(wd_loader_reset(l, 0, 0));
    const wd_batch *b;
    CHECK_OK(wd_loader_next(l, &b));
    CHECK(b && b->dense[5] == 10.0f && b->ids[0][5] == 5);   // no shuffle: in order, transformed
    wd_loader_close(l);                                       // early shutdown mid-epoch
    CHECK(__atomic_load_n(&calls, __ATOMIC_RELAXED) >= 1);
    d.map = failing_map;
    CHECK_OK(wd_loader_open(&d, &l));
    if (!l) return;
    CHECK_OK(wd_loader_reset(l, 0, 0));
    wd_status st;
    while (!(st = wd_loader_next(l, &b)) && b) {}
    CHECK(st == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "feature transform refused"));
    // reset after an error starts cleanly
    d.map = NULL;
    CHECK_OK(wd_loader_reset(l, 1, 0));
    CHECK_OK(wd_loader_next(l, &b));
    wd_loader_close(l);
    // many quick open/reset/close cycles
    for (int i = 0; i < 20; i++) {
        wd_loader_desc e = base_desc(32, i % 2, 2, 1 + i % 3, i % 2);
        CHECK_OK(wd_loader_open(&e, &l));
        if (!l) continue;
        CHECK_OK(wd_loader_reset(l, 0, 0));
        for (int k = 0; k < i % 4; k++) wd_loader_next(l, &b);
        wd_loader_close(l);
    }
}

static void test_schema_mismatch(void) {
    char other[300];
    snprintf(other, sizeof other, "%s/ld-other.wdr", TMP);
    wd_schema s;
    wd_schema_criteo(&s, 10);
    wd_writer *w;
    CHECK_OK(wd_writer_open(other, &s, NULL, &w));
    CHECK_OK(wd_writer_close(w));
    const char *files[2] = {F[0], other};
    wd_loader_desc d = base_desc(32, 0, 1, 1, 0);
    d.files = files; d.nfiles = 2;
    wd_loader *l;
    CHECK(wd_loader_open(&d, &l) == WD_ERR_SCHEMA && strstr(wd_last_error(), "ld-other.wdr") && strstr(wd_last_error(), "ld0.wdr"));
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    setup();
    RUN(test_exactly_once);
    RUN(test_determinism_and_resume);
    RUN(test_budgets);
    RUN(test_remainder_drop);
    RUN(test_corrupt_blocks);
    RUN(test_map_and_shutdown);
    RUN(test_schema_mismatch);
    return test_summary("test_loader");
}
