// The input-pipeline ablation ladder (issue 4): how many samples per second
// reach a consumer under six ways of feeding it, on the same Criteo-shaped
// data. Every stage hands batches of B samples to one consumer thread that
// spends C microseconds per batch (a stand-in for a device step; default
// 500 us per 4096, i.e. a consumer that could take 8M samples/s).
//   1 per-sample parse of TSV, one thread, no prefetch (parse, then wait for the consumer)
//   2 per-sample parse of TSV on T threads, no prefetch (each waits for its batch to be consumed)
//   3 as 2 plus prefetch: a bounded queue of ready batches overlaps parsing with consuming
//   4 pre-converted uncompressed records (fixed 164-byte samples), read and mapped per sample, prefetch
//   5 compressed records (zstd frames of 4096 records), decompressed, then mapped per sample, prefetch
//   6 batch-then-map: wd_loader, whole .wdr blocks decoded at once, prefetch
// Usage: loader_ladder DATA.tsv DATA.wdr WORKDIR [--threads T] [--stages 123456]
//                      [--consumer-us C] [--batch B] [--seconds S]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int B = 4096, T = 2;
static double CONSUMER_US = 500, MAX_S = 20;

static void busy_us(double us) { double end = wd__now() + us * 1e-6; while (wd__now() < end) {} }

// ---- a bounded queue of batches between producers and the consumer ----
typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    wd_batch *slots;                // depth + T batches in all
    int *state;                     // 0 free, 1 filled, 2 consumed-by-handoff (sync mode)
    int nslots, depth, stop, producers_done, nprod;
    int64_t consumed;
} queue;
static queue Q;
static wd_schema SCHEMA;

static wd_batch *q_get_free(void) {
    pthread_mutex_lock(&Q.mu);
    for (;;) {
        int filled = 0;
        for (int i = 0; i < Q.nslots; i++) filled += Q.state[i] == 1;
        for (int i = 0; i < Q.nslots; i++)
            if (Q.state[i] == 0 && (filled < Q.depth || Q.depth == 0)) { Q.state[i] = 3; pthread_mutex_unlock(&Q.mu); Q.slots[i].n = 0; return &Q.slots[i]; }
        if (Q.stop) { pthread_mutex_unlock(&Q.mu); return NULL; }
        pthread_cond_wait(&Q.cv, &Q.mu);
    }
}
// Publishes a filled batch; without prefetch (depth 0) waits until it is consumed.
static int q_put(wd_batch *b) {
    int i = (int)(b - Q.slots);
    pthread_mutex_lock(&Q.mu);
    Q.state[i] = 1;
    pthread_cond_broadcast(&Q.cv);
    if (Q.depth == 0) while (Q.state[i] != 0 && !Q.stop) pthread_cond_wait(&Q.cv, &Q.mu);
    int stop = Q.stop;
    pthread_mutex_unlock(&Q.mu);
    return stop;
}
static void *consumer(void *arg) {
    (void)arg;
    double t0 = wd__now();
    for (;;) {
        pthread_mutex_lock(&Q.mu);
        int pick = -1;
        while (pick < 0) {
            for (int i = 0; i < Q.nslots && pick < 0; i++) if (Q.state[i] == 1) pick = i;
            if (pick >= 0 || Q.producers_done == Q.nprod || Q.stop) break;
            pthread_cond_wait(&Q.cv, &Q.mu);
        }
        if (pick < 0) { pthread_mutex_unlock(&Q.mu); break; }
        Q.state[pick] = 2;
        pthread_mutex_unlock(&Q.mu);
        volatile float s = 0;
        for (int j = 0; j < Q.slots[pick].n; j += 64) s += Q.slots[pick].label[j];   // touch it
        busy_us(CONSUMER_US * Q.slots[pick].n / B);
        pthread_mutex_lock(&Q.mu);
        Q.consumed += Q.slots[pick].n;
        Q.state[pick] = 0;
        if (wd__now() - t0 > MAX_S) Q.stop = 1;
        pthread_cond_broadcast(&Q.cv);
        pthread_mutex_unlock(&Q.mu);
    }
    return NULL;
}

typedef struct job { int index; const char *path; int64_t lo, hi; } job;
typedef void *(*producer_fn)(void *);

// Runs nprod producers and the consumer; returns samples/s delivered.
static double run_stage(producer_fn fn, job *jobs, int nprod, int depth) {
    memset(&Q, 0, sizeof Q);
    pthread_mutex_init(&Q.mu, NULL);
    pthread_cond_init(&Q.cv, NULL);
    Q.depth = depth;
    Q.nprod = nprod;
    Q.nslots = depth + nprod + 1;
    Q.slots = (wd_batch *)calloc((size_t)Q.nslots, sizeof(wd_batch));
    Q.state = (int *)calloc((size_t)Q.nslots, sizeof(int));
    for (int i = 0; i < Q.nslots; i++) wd_batch_init(&Q.slots[i], &SCHEMA, B, 0);
    pthread_t pc, pp[256];
    double t0 = wd__now();
    pthread_create(&pc, NULL, consumer, NULL);
    for (int i = 0; i < nprod; i++) pthread_create(&pp[i], NULL, fn, &jobs[i]);
    for (int i = 0; i < nprod; i++) pthread_join(pp[i], NULL);
    pthread_join(pc, NULL);
    double dt = wd__now() - t0;
    for (int i = 0; i < Q.nslots; i++) wd_batch_free(&Q.slots[i]);
    free(Q.slots); free(Q.state);
    return (double)Q.consumed / dt;
}
static void producer_done(void) {
    pthread_mutex_lock(&Q.mu);
    Q.producers_done++;
    pthread_cond_broadcast(&Q.cv);
    pthread_mutex_unlock(&Q.mu);
}

// ---- stages 1-3: per-sample TSV parsing of a byte range ----
static wd_text_spec SPEC;
static void *tsv_producer(void *arg) {
    job *jb = (job *)arg;
    FILE *f = fopen(jb->path, "rb");
    size_t cap = 1 << 22;
    char *buf = (char *)malloc(cap + 1);
    int64_t pos = jb->lo;
    if (pos > 0) {   // start after the first newline at or past lo
        fseek(f, (long)(pos - 1), SEEK_SET);
        int c;
        while ((c = fgetc(f)) != EOF && c != '\n') pos++;
    } else fseek(f, 0, SEEK_SET);
    size_t have = 0;
    wd_batch *b = q_get_free();
    while (b && pos < jb->hi) {
        size_t got = fread(buf + have, 1, cap - have, f);
        have += got;
        size_t at = 0;
        for (;;) {
            char *nl = (char *)memchr(buf + at, '\n', have - at);
            if (!nl || pos >= jb->hi) break;
            size_t len = (size_t)(nl - (buf + at));
            wd_parse_line(&SPEC, buf + at, len, b);   // one sample at a time
            pos += (int64_t)len + 1;
            at += len + 1;
            if (b->n == B) { if (q_put(b)) { b = NULL; break; } b = q_get_free(); if (!b) break; }
        }
        memmove(buf, buf + at, have - at);
        have -= at;
        if (!got) break;
    }
    if (b && b->n) q_put(b);
    else if (b) { pthread_mutex_lock(&Q.mu); b->n = 0; Q.state[b - Q.slots] = 0; pthread_mutex_unlock(&Q.mu); }
    free(buf);
    fclose(f);
    producer_done();
    return NULL;
}

// ---- stage 4: fixed-size uncompressed records, one sample at a time ----
#define REC_FLOATS (1 + 13)
#define REC_BYTES (4 * (1 + 13 + 26))
static void map_record(const uint8_t *r, wd_batch *b) {   // the per-sample map function
    int i = b->n;
    memcpy(&b->label[i], r, 4);
    b->weight[i] = 1.0f;
    memcpy(b->dense + (size_t)i * 13, r + 4, 52);
    for (int k = 0; k < 26; k++) memcpy(&b->ids[k][i], r + 56 + 4 * k, 4);
    b->n++;
}
static void *raw_producer(void *arg) {
    job *jb = (job *)arg;
    FILE *f = fopen(jb->path, "rb");
    fseek(f, (long)(jb->lo * REC_BYTES), SEEK_SET);
    uint8_t rec[REC_BYTES];
    wd_batch *b = q_get_free();
    for (int64_t i = jb->lo; b && i < jb->hi; i++) {
        if (fread(rec, REC_BYTES, 1, f) != 1) break;   // one record per read: a per-sample reader
        map_record(rec, b);
        if (b->n == B) { if (q_put(b)) { b = NULL; break; } b = q_get_free(); }
    }
    if (b && b->n) q_put(b);
    else if (b) { pthread_mutex_lock(&Q.mu); Q.state[b - Q.slots] = 0; pthread_mutex_unlock(&Q.mu); }
    fclose(f);
    producer_done();
    return NULL;
}

// ---- stage 5: zstd frames of 4096 records, then per-sample map ----
typedef struct zindex { int64_t *off; int *n; int64_t frames; } zindex;
static zindex ZI;
static void *zrec_producer(void *arg) {
    job *jb = (job *)arg;
    FILE *f = fopen(jb->path, "rb");
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    uint8_t *raw = (uint8_t *)malloc(4096 * REC_BYTES), *comp = (uint8_t *)malloc(ZSTD_compressBound(4096 * REC_BYTES));
    wd_batch *b = q_get_free();
    for (int64_t fr = jb->lo; b && fr < jb->hi; fr++) {
        size_t len = (size_t)(ZI.off[fr + 1] - ZI.off[fr]);
        fseek(f, (long)ZI.off[fr], SEEK_SET);
        if (fread(comp, 1, len, f) != len) break;
        size_t got = ZSTD_decompressDCtx(dc, raw, 4096 * REC_BYTES, comp, len);
        if (ZSTD_isError(got)) break;
        for (int i = 0; b && i < ZI.n[fr]; i++) {
            map_record(raw + (size_t)i * REC_BYTES, b);
            if (b->n == B) { if (q_put(b)) { b = NULL; break; } b = q_get_free(); }
        }
    }
    if (b && b->n) q_put(b);
    else if (b) { pthread_mutex_lock(&Q.mu); Q.state[b - Q.slots] = 0; pthread_mutex_unlock(&Q.mu); }
    ZSTD_freeDCtx(dc);
    free(raw); free(comp);
    fclose(f);
    producer_done();
    return NULL;
}

// Converts the .wdr into the stage 4 and 5 formats (once).
static int64_t make_record_files(const char *wdr, const char *rawp, const char *zp) {
    wd_reader *r;
    if (wd_reader_open(wdr, &r)) { fprintf(stderr, "%s\n", wd_last_error()); exit(1); }
    FILE *fr = fopen(rawp, "wb"), *fz = fopen(zp, "wb");
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    uint8_t *raw = (uint8_t *)malloc(4096 * REC_BYTES), *comp = (uint8_t *)malloc(ZSTD_compressBound(4096 * REC_BYTES));
    int64_t total = 0, nfr = 0, cap = 1024, zoff = 0;
    ZI.off = (int64_t *)malloc(sizeof(int64_t) * (size_t)(cap + 1));
    ZI.n = (int *)malloc(sizeof(int) * (size_t)cap);
    int fill = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        wd_reader_block(r, i, &b);
        for (int j = 0; j < b->n; j++) {
            uint8_t *p = raw + (size_t)fill * REC_BYTES;
            memcpy(p, &b->label[j], 4);
            memcpy(p + 4, b->dense + (size_t)j * 13, 52);
            for (int k = 0; k < 26; k++) memcpy(p + 56 + 4 * k, &b->ids[k][j], 4);
            fwrite(p, REC_BYTES, 1, fr);
            total++;
            if (++fill == 4096 || (i == wd_reader_nblocks(r) - 1 && j == b->n - 1)) {
                size_t c = ZSTD_compressCCtx(cc, comp, ZSTD_compressBound(4096 * REC_BYTES), raw, (size_t)fill * REC_BYTES, 3);
                fwrite(comp, 1, c, fz);
                if (nfr == cap) { cap *= 2; ZI.off = (int64_t *)realloc(ZI.off, sizeof(int64_t) * (size_t)(cap + 1)); ZI.n = (int *)realloc(ZI.n, sizeof(int) * (size_t)cap); }
                ZI.off[nfr] = zoff; ZI.n[nfr] = fill; nfr++;
                zoff += (int64_t)c;
                fill = 0;
            }
        }
    }
    ZI.off[nfr] = zoff;
    ZI.frames = nfr;
    fclose(fr); fclose(fz);
    ZSTD_freeCCtx(cc);
    free(raw); free(comp);
    wd_reader_close(r);
    return total;
}

// ---- stage 6: the loader ----
static double stage6(const char *wdr, int threads) {
    wd_loader_desc d;
    memset(&d, 0, sizeof d);
    const char *files[1] = {wdr};
    d.files = files; d.nfiles = 1; d.batch_size = B; d.threads = threads; d.shuffle = 1; d.seed = 1;
    wd_loader *l;
    if (wd_loader_open(&d, &l) || wd_loader_reset(l, 0, 0)) { fprintf(stderr, "%s\n", wd_last_error()); exit(1); }
    double t0 = wd__now();
    int64_t n = 0;
    const wd_batch *b;
    while (!wd_loader_next(l, &b) && b) {   // the consumer runs on this thread
        volatile float s = 0;
        for (int j = 0; j < b->n; j += 64) s += b->label[j];
        busy_us(CONSUMER_US);
        n += b->n;
        if (wd__now() - t0 > MAX_S) break;
    }
    double dt = wd__now() - t0;
    wd_loader_stats st;
    wd_loader_stats_get(l, &st);
    printf("     loader: read %.1fs decompress %.1fs decode %.1fs assemble %.1fs (summed over threads), consumer waited %.1f%% of %.1fs\n",
           st.read_s, st.decompress_s, st.decode_s, st.assemble_s, 100 * st.wait_s / dt, dt);
    wd_loader_close(l);
    return (double)n / dt;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: loader_ladder DATA.tsv DATA.wdr WORKDIR [--threads T] [--stages 123456] [--consumer-us C] [--batch B] [--seconds S] [--scaling 1,2,4]\n"); return 2; }
    const char *tsv = argv[1], *wdr = argv[2], *work = argv[3], *stages = "123456", *scaling = NULL;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) T = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--stages")) stages = argv[i + 1];
        else if (!strcmp(argv[i], "--consumer-us")) CONSUMER_US = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) B = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) MAX_S = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--scaling")) scaling = argv[i + 1];
    }
    wd_reader *r;
    if (wd_reader_open(wdr, &r)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    SCHEMA = *wd_reader_schema(r);
    int64_t total = wd_reader_nsamples(r);
    wd_reader_close(r);
    wd_text_spec_criteo(&SPEC, 0);
    wd_text_spec_match(&SPEC, &SCHEMA);
    printf("ladder: %lld samples, batch %d, consumer %.0f us per batch (%.1fM samples/s alone), %d threads, at most %.0f s per stage\n",
           (long long)total, B, CONSUMER_US, CONSUMER_US > 0 ? B / CONSUMER_US : 0.0, T, MAX_S);
    char rawp[1024], zp[1024];
    snprintf(rawp, sizeof rawp, "%s/ladder.rec", work);
    snprintf(zp, sizeof zp, "%s/ladder.zrec", work);
    if (strpbrk(stages, "45")) make_record_files(wdr, rawp, zp);
    int64_t tsv_bytes = 0;   // stages 1-3 only read the TSV
    if (strpbrk(stages, "123")) {
        FILE *f = fopen(tsv, "rb");
        if (!f) { perror(tsv); return 1; }
        fseek(f, 0, SEEK_END);
        tsv_bytes = ftell(f);
        fclose(f);
    }
    job jobs[256];
    double first = 0;
    for (const char *s = stages; *s; s++) {
        int st = *s - '0', nprod = st == 1 ? 1 : T;
        double rate = 0;
        const char *what = "";
        for (int i = 0; i < nprod; i++) {
            jobs[i].index = i;
            if (st <= 3) { jobs[i].path = tsv; jobs[i].lo = tsv_bytes * i / nprod; jobs[i].hi = tsv_bytes * (i + 1) / nprod; }
            else if (st == 4) { jobs[i].path = rawp; jobs[i].lo = total * i / nprod; jobs[i].hi = total * (i + 1) / nprod; }
            else if (st == 5) { jobs[i].path = zp; jobs[i].lo = ZI.frames * i / nprod; jobs[i].hi = ZI.frames * (i + 1) / nprod; }
        }
        switch (st) {
        case 1: what = "per-sample TSV parse, 1 thread, no prefetch"; rate = run_stage(tsv_producer, jobs, 1, 0); break;
        case 2: what = "per-sample TSV parse, all threads, no prefetch"; rate = run_stage(tsv_producer, jobs, T, 0); break;
        case 3: what = "per-sample TSV parse, all threads, prefetch"; rate = run_stage(tsv_producer, jobs, T, 2 * T); break;
        case 4: what = "uncompressed records, per-sample read+map, prefetch"; rate = run_stage(raw_producer, jobs, T, 2 * T); break;
        case 5: what = "compressed records, per-sample map, prefetch"; rate = run_stage(zrec_producer, jobs, T, 2 * T); break;
        case 6: what = "batch-then-map (wd_loader, whole blocks)"; rate = stage6(wdr, T); break;
        default: continue;
        }
        if (!first) first = rate;
        printf("  (%d) %-55s %10.0f samples/s  %6.1fx (1)\n", st, what, rate, rate / first);
        fflush(stdout);
    }
    if (scaling) {   // stage 6 with no consumer cost: the loader alone
        double save = CONSUMER_US;
        CONSUMER_US = 0;
        printf("scaling of (6), consumer cost 0:\n");
        char *sc = strdup(scaling);
        double one = 0;
        for (char *p = strtok(sc, ","); p; p = strtok(NULL, ",")) {
            int t = atoi(p);
            double rate = stage6(wdr, t);
            if (!one) one = rate / t;
            printf("  threads %2d: %10.0f samples/s  (%.2fM per thread, %.0f%% of linear)\n", t, rate, rate / t / 1e6, 100 * rate / (one * t));
            fflush(stdout);
        }
        free(sc);
        CONSUMER_US = save;
    }
    return 0;
}
