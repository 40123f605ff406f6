// Loader tests (also built with ThreadSanitizer). Usage: test_loader [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <dirent.h>
#include <math.h>

static uint32_t fbits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

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

// Every test REQUIREs the files: a failed setup makes each test FAIL, never
// a PASS that checked nothing.
static int FILES_OK;
#define NEED_FILES() REQUIRE(FILES_OK)
// REQUIRE_OK that runs `cleanup` before the test returns.
#define REQUIRE_OK_CLEAN(expr, cleanup) do { wd_status st_ = (expr); if (st_ != WD_OK) { tl_fails++; \
        printf("  required check failed: %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr, wd_status_string(st_), wd_last_error()); \
        cleanup; return; } } while (0)

// The block layout of a set of files written by make_id_file, computed from
// how they were written (not read back): block j of the list of every block
// of every file holds ids first[j] .. first[j] + count[j] - 1.
#define MAXBLK 2048
typedef struct fileset {
    const char *files[4];
    int nfiles, nblocks, total, id_hi;   // ids < id_hi
    int first[MAXBLK], count[MAXBLK];
} fileset;
static void fileset_add(fileset *fs, const char *path, int first, int n, int block) {
    fs->files[fs->nfiles++] = path;
    for (int at = 0; at < n; at += block) {
        fs->first[fs->nblocks] = first + at;
        fs->count[fs->nblocks] = n - at < block ? n - at : block;
        fs->nblocks++;
    }
    fs->total += n;
    if (first + n > fs->id_hi) fs->id_hi = first + n;
}
static fileset MAIN_SET, TINY_SET, GS_SET;   // the three files above; one file of 3 blocks; 2000 blocks of 4
static char TINY[300], GS[2][300];

static void test_setup(void) {
    for (int f = 0; f < 3; f++) snprintf(F[f], sizeof F[f], "%s/ld%d.wdr", TMP, f);
    snprintf(TINY, sizeof TINY, "%s/ld-tiny.wdr", TMP);
    for (int f = 0; f < 2; f++) snprintf(GS[f], sizeof GS[f], "%s/ld-gs%d.wdr", TMP, f);
    REQUIRE(make_id_file(F[0], 0, 1000, 64) == 0);
    REQUIRE(make_id_file(F[1], 1000, 777, 100) == 0);
    REQUIRE(make_id_file(F[2], 1777, 2500, 50) == 0);
    REQUIRE(make_id_file(TINY, 5000, 25, 10) == 0);
    REQUIRE(make_id_file(GS[0], 0, 4000, 4) == 0);
    REQUIRE(make_id_file(GS[1], 4000, 4000, 4) == 0);
    memset(&MAIN_SET, 0, sizeof MAIN_SET);
    fileset_add(&MAIN_SET, F[0], 0, 1000, 64);
    fileset_add(&MAIN_SET, F[1], 1000, 777, 100);
    fileset_add(&MAIN_SET, F[2], 1777, 2500, 50);
    memset(&TINY_SET, 0, sizeof TINY_SET);
    fileset_add(&TINY_SET, TINY, 5000, 25, 10);
    memset(&GS_SET, 0, sizeof GS_SET);
    fileset_add(&GS_SET, GS[0], 0, 4000, 4);
    fileset_add(&GS_SET, GS[1], 4000, 4000, 4);
    REQUIRE(MAIN_SET.total == NTOTAL && MAIN_SET.nblocks == 16 + 8 + 50 && TINY_SET.nblocks == 3 && GS_SET.nblocks == 2000);
    // the files hold what the layout says
    const fileset *sets[3] = {&MAIN_SET, &TINY_SET, &GS_SET};
    for (int s = 0; s < 3; s++) {
        int j = 0;
        for (int f = 0; f < sets[s]->nfiles; f++) {
            wd_reader *r = NULL;
            REQUIRE_OK(wd_reader_open(sets[s]->files[f], &r));
            for (int64_t i = 0; i < wd_reader_nblocks(r); i++, j++) CHECK(j < sets[s]->nblocks && wd_reader_block_samples(r, i) == sets[s]->count[j]);
            wd_reader_close(r);
        }
        CHECK(j == sets[s]->nblocks);
    }
    FILES_OK = !tl_fails;
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
    NEED_FILES();
    int *seen = (int *)calloc(NTOTAL, sizeof(int));
    REQUIRE(seen != NULL);
    int bad = 0, runs = 0;
    for (int nshards = 1; nshards <= 4; nshards++)
        for (int threads = 1; threads <= 3; threads++)
            for (int shuffle = 0; shuffle <= 1; shuffle++)
                for (int epoch = 0; epoch < 2; epoch++) {
                    memset(seen, 0, NTOTAL * sizeof(int));
                    int64_t nb = -1;
                    for (int sh = 0; sh < nshards; sh++) {
                        wd_loader_desc d = base_desc(97, sh, nshards, threads, shuffle);
                        wd_loader *l = NULL;
                        REQUIRE_OK_CLEAN(wd_loader_open(&d, &l), free(seen));
                        REQUIRE_OK_CLEAN(wd_loader_reset(l, epoch, 0), (wd_loader_close(l), free(seen)));
                        if (nb < 0) nb = wd_loader_batches(l);
                        CHECK(nb > 0 && wd_loader_batches(l) == nb);   // every shard the same count
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
// -1 when opening, resetting or any batch fails (or the output does not fit).
static int epoch_sequence(wd_loader_desc d, int64_t epoch, int64_t skip, int *out, int cap) {
    wd_loader *l = NULL;
    if (wd_loader_open(&d, &l)) return -1;
    int n = 0;
    if (wd_loader_reset(l, epoch, skip)) { wd_loader_close(l); return -1; }
    const wd_batch *b;
    wd_status st;
    while (!(st = wd_loader_next(l, &b)) && b) {
        if (n + b->n > cap) { st = WD_ERR_LIMIT; break; }
        for (int i = 0; i < b->n; i++) out[n++] = b->weight[i] ? (int)b->dense[i] : -1;
    }
    wd_loader_close(l);
    return st ? -1 : n;
}

static void test_determinism_and_resume(void) {
    NEED_FILES();
    int cap = NTOTAL + 1000;
    int *a = (int *)malloc(sizeof(int) * (size_t)cap), *b = (int *)malloc(sizeof(int) * (size_t)cap);
    wd_loader_desc d = base_desc(128, 1, 2, 1, 1);
    int na = epoch_sequence(d, 3, 0, a, cap);
    if (na <= 0) { free(a); free(b); REQUIRE(na > 0); }
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
    NEED_FILES();
    int before = count_threads();
    CHECK(before > 0);
    for (int threads = 1; threads <= 4; threads++) {
        wd_loader_desc d = base_desc(256, 0, 1, threads, 1);
        d.ram_bytes = 400000;
        wd_loader *l = NULL;
        REQUIRE_OK(wd_loader_open(&d, &l));
        REQUIRE_OK_CLEAN(wd_loader_reset(l, 0, 0), wd_loader_close(l));
        const wd_batch *b = NULL;
        int n = 0, real = 0;
        CHECK_OK(wd_loader_next(l, &b));
        CHECK(b != NULL);
        if (before > 0) CHECK(count_threads() == before + threads);
        for (; b; wd_loader_next(l, &b)) { n += b->n; for (int i = 0; i < b->n; i++) real += b->weight[i] != 0; }
        CHECK(n == (NTOTAL + 255) / 256 * 256 && real == NTOTAL);
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
        wd_loader *l = NULL;
        REQUIRE_OK(wd_loader_open(&d, &l));
        {
            REQUIRE_OK_CLEAN(wd_loader_reset(l, 0, 0), wd_loader_close(l));
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
    wd_loader *l = NULL;
    wd_status st = wd_loader_open(&d, &l);
    CHECK(st == WD_ERR_LIMIT && strstr(wd_last_error(), "RAM budget"));
    if (st == WD_OK) wd_loader_close(l);
}

static void test_remainder_drop(void) {
    NEED_FILES();
    for (int nshards = 1; nshards <= 3; nshards++) {
        int64_t want = -1;
        for (int sh = 0; sh < nshards; sh++) {
            wd_loader_desc d = base_desc(300, sh, nshards, 2, 1);
            d.remainder = WD_REMAINDER_DROP;
            wd_loader *l = NULL;
            REQUIRE_OK(wd_loader_open(&d, &l));
            REQUIRE_OK_CLEAN(wd_loader_reset(l, 0, 0), wd_loader_close(l));
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

// ---- the remainder contract: exact batch counts -------------------------------------------
// Section 12: per epoch the list of every block of every file (shuffled by
// (seed, epoch) when shuffle is on) is dealt out, block j to shard
// j % shard_count; PAD gives ceil(max shard samples / batch) batches, DROP
// floor(min shard samples / batch), on every shard.
static int64_t rule_batches(const int64_t *tot, int sc, int B, int rem) {
    int64_t mn = INT64_MAX, mx = 0;
    for (int s = 0; s < sc; s++) { mn = tot[s] < mn ? tot[s] : mn; mx = tot[s] > mx ? tot[s] : mx; }
    return rem == WD_REMAINDER_DROP ? mn / B : (mx + B - 1) / B;
}
// Shard totals and the sample order of each shard for the unshuffled block list.
static void rule_totals(const fileset *fs, int sc, int64_t *tot) {
    for (int s = 0; s < sc; s++) tot[s] = 0;
    for (int j = 0; j < fs->nblocks; j++) tot[j % sc] += fs->count[j];
}
static int rule_blocks_of_shard(const fileset *fs, int sc, int s) { return fs->nblocks > s ? (fs->nblocks - s + sc - 1) / sc : 0; }

typedef struct shard_run {
    int64_t reported, delivered;    // wd_loader_batches, batches delivered
    int64_t real, pads;
    int errors;                     // broken invariants (printed)
} shard_run;

// One epoch of one shard: checks every batch and every sample, records ids.
// owner[blk]: PAD fills it (block -> shard; a block split across shards is an
// error), DROP checks against it. seen[id] counts deliveries. With
// `order` (unshuffled), real samples must come exactly in that order.
static void run_epoch(wd_loader *l, const fileset *fs, const int *blk_of, int shard, int B, int rem, int *owner, int *seen, const int *order, int norder, shard_run *r) {
    memset(r, 0, sizeof *r);
    r->reported = wd_loader_batches(l);
    int pad_started = 0;
    for (;;) {
        const wd_batch *b = NULL;
        wd_status st = wd_loader_next(l, &b);
        if (st) { r->errors++; printf("  shard %d: wd_loader_next: %s: %s\n", shard, wd_status_string(st), wd_last_error()); break; }
        if (!b) break;
        r->delivered++;
        if (b->n != B) { r->errors++; printf("  shard %d: batch of %d, not %d\n", shard, b->n, B); }
        for (int i = 0; i < b->n; i++) {
            int c;
            wd_batch_sample_ids(b, 1, i, &c);
            if (b->weight[i] == 0.0f) {   // padding: weight 0, label 0, zero features, id 0, no multi-hot ids
                r->pads++;
                pad_started = 1;
                if (b->label[i] != 0.0f || fbits_of(b->dense[i]) != 0 || b->ids[0][i] != 0 || c != 0) { if (r->errors++ < 3) printf("  shard %d: padding sample with features\n", shard); }
                continue;
            }
            int id = (int)b->dense[i];
            if (b->weight[i] != 1.0f || id < 0 || id >= fs->id_hi || blk_of[id] < 0 || !sample_ok(b, i)) { if (r->errors++ < 3) printf("  shard %d: bad sample (id %d)\n", shard, id); continue; }
            if (pad_started) { if (r->errors++ < 3) printf("  shard %d: a real sample after padding\n", shard); }
            if (order && (r->real >= norder || order[r->real] != id)) { if (r->errors++ < 3) printf("  shard %d: sample %lld is id %d, the unshuffled order has %d\n", shard, (long long)r->real, id, r->real < norder ? order[r->real] : -1); }
            int blk = blk_of[id];
            if (rem == WD_REMAINDER_PAD) {
                if (owner[blk] < 0) owner[blk] = shard;
                else if (owner[blk] != shard) { if (r->errors++ < 3) printf("  block %d split across shards %d and %d\n", blk, owner[blk], shard); }
            } else if (owner[blk] != shard) { if (r->errors++ < 3) printf("  shard %d (DROP) delivered id %d of block %d, which PAD gave shard %d\n", shard, id, blk, owner[blk]); }
            seen[id]++;
            r->real++;
        }
    }
    if (rem == WD_REMAINDER_DROP && r->pads) { r->errors++; printf("  shard %d: DROP delivered %lld padding samples\n", shard, (long long)r->pads); }
}

static void test_remainder_counts(void) {
    NEED_FILES();
    static const int BM[] = {1, 7, 50, 64, 97, 100, 333, 1000, 1500, 5000};   // 5000 > every shard
    static const int BT[] = {1, 3, 5, 10, 11, 30};                              // tiny: 30 > 25 samples
    const fileset *sets[2] = {&MAIN_SET, &TINY_SET};
    int configs = 0, failures = 0, zero_drop = 0;
    static int owner[2][MAXBLK];   // per epoch: the shard PAD delivered each block to
    for (int si = 0; si < 2; si++) {
        const fileset *fs = sets[si];
        const int *Bs = si ? BT : BM;
        int nB = si ? (int)(sizeof BT / sizeof BT[0]) : (int)(sizeof BM / sizeof BM[0]);
        int *blk_of = (int *)malloc(sizeof(int) * (size_t)fs->id_hi);
        int *seen = (int *)malloc(sizeof(int) * (size_t)fs->id_hi * 2);
        int *order = (int *)malloc(sizeof(int) * (size_t)fs->total);
        REQUIRE(blk_of && seen && order);
        for (int i = 0; i < fs->id_hi; i++) blk_of[i] = -1;
        for (int j = 0; j < fs->nblocks; j++) for (int q = 0; q < fs->count[j]; q++) blk_of[fs->first[j] + q] = j;
        for (int sc = 1; sc <= 5; sc++)
            for (int bi = 0; bi < nB; bi++)
                for (int shuffle = 0; shuffle <= 1; shuffle++) {
                    int B = Bs[bi], bad = 0;
                    int64_t pad_tot[2][5];
                    shard_run runs[2][2][5];   // [rem][epoch][shard]
                    int64_t doc_tot[5];
                    rule_totals(fs, sc, doc_tot);
                    for (int e = 0; e < 2; e++) for (int j = 0; j < fs->nblocks; j++) owner[e][j] = -1;
                    for (int rem = WD_REMAINDER_PAD; rem <= WD_REMAINDER_DROP; rem++) {
                        memset(seen, 0, sizeof(int) * (size_t)fs->id_hi * 2);
                        for (int s = 0; s < sc; s++) {
                            wd_loader_desc d = base_desc(B, s, sc, 2, shuffle);
                            d.files = fs->files; d.nfiles = fs->nfiles;
                            d.remainder = rem;
                            d.seed = 1234 + (uint64_t)sc;
                            wd_loader *l = NULL;
                            REQUIRE_OK_CLEAN(wd_loader_open(&d, &l), (free(blk_of), free(seen), free(order)));
                            // the documented unshuffled order of shard s: blocks s, s + sc, s + 2 sc, ...
                            int norder = 0;
                            for (int j = s; j < fs->nblocks; j += sc) for (int q = 0; q < fs->count[j]; q++) order[norder++] = fs->first[j] + q;
                            for (int e = 0; e < 2; e++) {
                                REQUIRE_OK_CLEAN(wd_loader_reset(l, e, 0), (wd_loader_close(l), free(blk_of), free(seen), free(order)));
                                run_epoch(l, fs, blk_of, s, B, rem, owner[e], seen + (size_t)e * (size_t)fs->id_hi, shuffle ? NULL : order, norder, &runs[rem][e][s]);
                                bad += runs[rem][e][s].errors;
                            }
                            wd_loader_close(l);
                        }
                        for (int e = 0; e < 2; e++) {
                            const int *sn = seen + (size_t)e * (size_t)fs->id_hi;
                            if (rem == WD_REMAINDER_PAD) {
                                // every sample exactly once across the shards; whole blocks per shard,
                                // as many blocks per shard as dealing them round-robin gives
                                int64_t nblk[5] = {0};
                                for (int j = 0; j < fs->nblocks; j++) {
                                    for (int q = 0; q < fs->count[j]; q++) if (sn[fs->first[j] + q] != 1) { bad++; if (bad < 4) printf("  PAD: id %d delivered %d times\n", fs->first[j] + q, sn[fs->first[j] + q]); }
                                    if (owner[e][j] >= 0) nblk[owner[e][j]]++;
                                    if (!shuffle && owner[e][j] != j % sc) bad++;
                                }
                                for (int s = 0; s < sc; s++) {
                                    pad_tot[e][s] = runs[rem][e][s].real;
                                    if (nblk[s] != rule_blocks_of_shard(fs, sc, s)) { bad++; printf("  shard %d of %d got %lld blocks, not %d\n", s, sc, (long long)nblk[s], rule_blocks_of_shard(fs, sc, s)); }
                                    if (!shuffle && pad_tot[e][s] != doc_tot[s]) bad++;
                                }
                            } else {
                                for (int i = 0; i < fs->id_hi; i++) bad += sn[i] > 1;
                            }
                            // the count: from the documented block list without shuffle; with it,
                            // from the shard totals PAD actually delivered (the same block deal)
                            int64_t want = rule_batches(shuffle ? pad_tot[e] : doc_tot, sc, B, rem);
                            if (rem == WD_REMAINDER_DROP && want == 0) zero_drop++;
                            for (int s = 0; s < sc; s++) {
                                const shard_run *r = &runs[rem][e][s];
                                int ok = r->reported == want && r->delivered == want &&
                                         (rem == WD_REMAINDER_PAD ? r->real + r->pads == want * B : r->real == want * B && r->pads == 0);
                                if (!ok) {
                                    bad++;
                                    printf("  %s %s, %d shards, batch %d, epoch %d, shard %d: %lld batches reported, %lld delivered, %lld real + %lld padding; the rule gives %lld batches\n",
                                           si ? "tiny" : "main", rem ? "DROP" : "PAD", sc, B, e, s, (long long)r->reported, (long long)r->delivered, (long long)r->real, (long long)r->pads, (long long)want);
                                }
                            }
                        }
                        configs++;
                    }
                    if (bad) { failures++; tl_fails++; printf("  ^ %s set, %d shards, batch %d, shuffle %d: %d broken invariants\n", si ? "tiny" : "main", sc, B, shuffle, bad); }
                }
        free(blk_of); free(seen); free(order);
    }
    printf("  %d configurations (2 file sets x 1-5 shards x batch sizes x shuffle x PAD/DROP, 2 epochs each), %d epochs where DROP gives 0 batches\n", configs, zero_drop);
    CHECK(failures == 0 && configs == 2 * 5 * (10 + 6) * 2);
}

// ---- the global shuffle --------------------------------------------------------------------
static double pearson(const double *x, const double *y, int n) {
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) { mx += x[i]; my += y[i]; }
    mx /= n; my /= n;
    for (int i = 0; i < n; i++) { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) * (x[i] - mx); syy += (y[i] - my) * (y[i] - my); }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0.0;
}
// Pearson r between delivery position and sample id over a sequence.
static double position_id_r(const int *seq, int n) {
    double *x = (double *)malloc(sizeof(double) * (size_t)n), *y = (double *)malloc(sizeof(double) * (size_t)n);
    if (!x || !y) { free(x); free(y); return 2.0; }
    for (int i = 0; i < n; i++) { x[i] = i; y[i] = seq[i]; }
    double r = pearson(x, y, n);
    free(x); free(y);
    return r;
}
// Mean delivery position of each block of 4 ids (the block order an epoch used).
static void block_positions(const int *seq, int n, double *pos, int nblocks) {
    for (int j = 0; j < nblocks; j++) pos[j] = 0;
    for (int i = 0; i < n; i++) if (seq[i] >= 0 && seq[i] / 4 < nblocks) pos[seq[i] / 4] += i / 4.0;
}

// 8000 samples in 2000 blocks of 4 over two files. Under a uniformly random
// block order the position-id correlation is, to within the small noise of
// the in-window sample mix, the correlation of a random permutation of the
// 2000 blocks: mean 0, standard deviation 1/sqrt(1999) = 0.022 (0.032 for a
// shard's 1000 blocks). |r| < 0.1 (0.15 for a shard) is 4.5 (4.7) standard
// deviations: a correct loader fails it with probability below 1e-5, while a
// loader that only mixes within windows of consecutive blocks gives r > 0.99
// (checked below with shuffle off, where r = 1).
static void test_global_shuffle(void) {
    NEED_FILES();
    const int N = 8000, NB = 2000;
    int *e0 = (int *)malloc(sizeof(int) * N), *e0b = (int *)malloc(sizeof(int) * N), *e1 = (int *)malloc(sizeof(int) * N);
    double *p0 = (double *)malloc(sizeof(double) * NB), *p1 = (double *)malloc(sizeof(double) * NB);
    int *seen = (int *)calloc((size_t)N, sizeof(int));
    if (!e0 || !e0b || !e1 || !p0 || !p1 || !seen) { free(e0); free(e0b); free(e1); free(p0); free(p1); free(seen); REQUIRE(!"memory"); }
    wd_loader_desc d = base_desc(100, 0, 1, 2, 1);
    d.files = GS_SET.files; d.nfiles = 2;
    d.seed = 7;
    int n0 = epoch_sequence(d, 0, 0, e0, N);
    d.threads = 1;
    int n0b = epoch_sequence(d, 0, 0, e0b, N);
    d.threads = 3;
    int n1 = epoch_sequence(d, 1, 0, e1, N);
    CHECK(n0 == N && n0b == N && n1 == N);   // 80 full batches, no padding
    if (n0 == N && n0b == N && n1 == N) {
        CHECK(memcmp(e0, e0b, sizeof(int) * (size_t)N) == 0);   // deterministic for the seed, whatever the threads
        for (int i = 0; i < N; i++) if (e0[i] >= 0 && e0[i] < N) seen[e0[i]]++;
        int once = 0;
        for (int i = 0; i < N; i++) once += seen[i] == 1;
        CHECK(once == N);
        double r0 = position_id_r(e0, N), r1 = position_id_r(e1, N);
        block_positions(e0, N, p0, NB);
        block_positions(e1, N, p1, NB);
        double rb = pearson(p0, p1, NB);   // block order of epoch 0 against epoch 1
        int first_differs = e0[0] / 4 != e1[0] / 4 || e0[1] / 4 != e1[1] / 4;
        printf("  r(position, id): epoch 0 %.4f, epoch 1 %.4f; r(block order epoch 0, epoch 1) %.4f\n", r0, r1, rb);
        CHECK(fabs(r0) < 0.1 && fabs(r1) < 0.1);
        CHECK(fabs(rb) < 0.1);   // each epoch draws a new block order, not the same one again
        CHECK(memcmp(e0, e1, sizeof(int) * (size_t)N) != 0 && first_differs);
        // the same statistic sees order: without shuffle r = 1
        wd_loader_desc u = d;
        u.shuffle = 0;
        int nu = epoch_sequence(u, 0, 0, e0b, N);
        CHECK(nu == N && position_id_r(e0b, N) > 0.99);
        // a different seed gives a different order
        d.seed = 8;
        int n2 = epoch_sequence(d, 0, 0, e0b, N);
        CHECK(n2 == N && memcmp(e0, e0b, sizeof(int) * (size_t)N) != 0);
        // each shard of two is globally shuffled too
        for (int s = 0; s < 2; s++) {
            wd_loader_desc h = base_desc(100, s, 2, 2, 1);
            h.files = GS_SET.files; h.nfiles = 2; h.seed = 7;
            int ns = epoch_sequence(h, 0, 0, e0b, N);
            double rs = ns > 0 ? position_id_r(e0b, ns) : 2.0;
            printf("  shard %d of 2: %d samples, r(position, id) %.4f\n", s, ns, rs);
            CHECK(ns == N / 2 && fabs(rs) < 0.15);
        }
    }
    free(e0); free(e0b); free(e1); free(p0); free(p1); free(seen);
}

static void test_corrupt_blocks(void) {
    NEED_FILES();
    char bad[300];
    snprintf(bad, sizeof bad, "%s/ld-bad.wdr", TMP);
    REQUIRE(make_id_file(bad, 1777, 2500, 50) == 0);
    wd_reader *r = NULL;
    REQUIRE_OK(wd_reader_open(bad, &r));
    int64_t off = r->index[7].offset + 40;   // inside block 7's payload
    wd_reader_close(r);
    FILE *f = fopen(bad, "r+b");
    REQUIRE(f != NULL);
    fseek(f, (long)off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, (long)off, SEEK_SET);
    CHECK(c != EOF && fputc(c ^ 0x55, f) != EOF);
    fclose(f);
    const char *files[3] = {F[0], F[1], bad};
    for (int policy = 0; policy <= 1; policy++) {
        wd_loader_desc d = base_desc(97, 0, 1, 2, 1);
        d.files = files;
        d.corrupt = policy;
        wd_loader *l = NULL;
        REQUIRE_OK(wd_loader_open(&d, &l));
        REQUIRE_OK_CLEAN(wd_loader_reset(l, 0, 0), wd_loader_close(l));
        int64_t nb = wd_loader_batches(l), got = 0, real = 0;
        wd_status st = WD_OK;
        const wd_batch *b;
        while (!(st = wd_loader_next(l, &b)) && b) { got++; for (int i = 0; i < b->n; i++) real += b->weight[i] != 0; }
        wd_loader_stats s;
        wd_loader_stats_get(l, &s);
        if (policy == WD_CORRUPT_FAIL) CHECK(st == WD_ERR_CORRUPT && strstr(wd_last_error(), "ld-bad.wdr: block 7") && got < nb);
        else CHECK(st == WD_OK && nb > 0 && got == nb && s.skipped_blocks == 1 && real == NTOTAL - 50);
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
    NEED_FILES();
    int calls = 0;
    wd_loader_desc d = base_desc(64, 0, 1, 2, 0);
    d.map = double_dense;
    d.map_user = &calls;
    wd_loader *l = NULL;
    REQUIRE_OK(wd_loader_open(&d, &l));
    REQUIRE_OK_CLEAN(wd_loader_reset(l, 0, 0), wd_loader_close(l));
    const wd_batch *b = NULL;
    CHECK_OK(wd_loader_next(l, &b));
    CHECK(b && b->dense[5] == 10.0f && b->ids[0][5] == 5);   // no shuffle: in order, transformed
    wd_loader_close(l);                                       // early shutdown mid-epoch
    CHECK(__atomic_load_n(&calls, __ATOMIC_RELAXED) >= 1);
    d.map = failing_map;
    l = NULL;
    REQUIRE_OK(wd_loader_open(&d, &l));
    REQUIRE_OK_CLEAN(wd_loader_reset(l, 0, 0), wd_loader_close(l));
    wd_status st;
    while (!(st = wd_loader_next(l, &b)) && b) {}
    CHECK(st == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "feature transform refused"));
    // reset after an error starts cleanly
    d.map = NULL;
    CHECK_OK(wd_loader_reset(l, 1, 0));
    b = NULL;
    CHECK_OK(wd_loader_next(l, &b));
    CHECK(b != NULL && b->n == 64);
    wd_loader_close(l);
    // many quick open/reset/close cycles
    for (int i = 0; i < 20; i++) {
        wd_loader_desc e = base_desc(32, i % 2, 2, 1 + i % 3, i % 2);
        l = NULL;
        REQUIRE_OK(wd_loader_open(&e, &l));
        REQUIRE_OK_CLEAN(wd_loader_reset(l, 0, 0), wd_loader_close(l));
        for (int k = 0; k < i % 4; k++) { b = NULL; CHECK_OK(wd_loader_next(l, &b)); CHECK(b != NULL && b->n == 32); }
        wd_loader_close(l);
    }
}

static void test_schema_mismatch(void) {
    NEED_FILES();
    char other[300];
    snprintf(other, sizeof other, "%s/ld-other.wdr", TMP);
    wd_schema s;
    wd_schema_criteo(&s, 10);
    wd_writer *w = NULL;
    REQUIRE_OK(wd_writer_open(other, &s, NULL, &w));
    REQUIRE_OK(wd_writer_close(w));
    const char *files[2] = {F[0], other};
    wd_loader_desc d = base_desc(32, 0, 1, 1, 0);
    d.files = files; d.nfiles = 2;
    wd_loader *l = NULL;
    wd_status st = wd_loader_open(&d, &l);
    CHECK(st == WD_ERR_SCHEMA && strstr(wd_last_error(), "ld-other.wdr") && strstr(wd_last_error(), "ld0.wdr"));
    if (st == WD_OK) wd_loader_close(l);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_setup);
    RUN(test_exactly_once);
    RUN(test_determinism_and_resume);
    RUN(test_budgets);
    RUN(test_remainder_drop);
    RUN(test_remainder_counts);
    RUN(test_global_shuffle);
    RUN(test_corrupt_blocks);
    RUN(test_map_and_shutdown);
    RUN(test_schema_mismatch);
    return test_summary("test_loader");
}
