// The host side of a GPU training step, on the CPU alone (issue 22, item 4):
// what the loader delivers to one rank at T threads, and what each part of
// the per-batch host work costs, so that the GPU host's rate (16 cores) can
// be predicted from a small machine and checked there.
//
// The single-thread parts are timed in thread CPU time; the loader in wall time.
//
//   loader T      wd_loader as wd_train opens it for a GPU rank (batch B,
//                 shuffled windows, PAD remainder), consumed by one thread
//                 doing the rank thread's host work (wd_loader_next, then
//                 wd_oov_count); samples/s, and where the loader's time went
//   assembly      the output batch's columns gathered from a shuffled window
//                 of 8 decoded blocks (wd__gather_col, every column on one
//                 thread): ns per sample. The loader's assembler shares the
//                 columns with its idle threads; alone, one thread stops at
//                 this rate
//   window        the permutation of a window's samples, drawn by the
//                 assembler alone under the loader's lock: ns per sample
//   decode        wd_reader_block of every block on one thread (read, zstd,
//                 CRC, unpack): samples/s per decoding thread
//   rank thread   wd_oov_count of one batch (the rank thread's own per-batch
//                 work besides the CUDA calls, which need a GPU to time)
//
// The device side of the GPU path adds no host copy: the loader's output
// batches are pinned (the backend's batch_alloc) and wdc_batch_copy queues
// one cudaMemcpyAsync of the whole batch on the copy stream.
//
// Usage: host_feed DATA.wdr [--batch B] [--threads 1,2] [--seconds S]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

// This thread's CPU time (the single-thread parts: robust to other processes on a shared machine).
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
// CPU time of the whole process so far (every thread), seconds.
static double process_cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}
static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

// wd_train's loader for one GPU rank, consumed as its rank thread consumes it.
static int loader_run(const char *path, int B, int T, double max_s) {
    const char *files[1] = {path};
    wd_loader_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.files = files; ld.nfiles = 1; ld.batch_size = B; ld.threads = T;
    ld.shuffle = 1; ld.seed = 1; ld.remainder = WD_REMAINDER_PAD;
    wd_loader *l;
    if (wd_loader_open(&ld, &l) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); return 1; }
    wd_oov oov;
    memset(&oov, 0, sizeof oov);
    int64_t samples = 0, batches = 0;
    double t0 = wd__now(), c0 = process_cpu(), oov_s = 0;
    for (int64_t epoch = 0; wd__now() - t0 < max_s; epoch++) {
        if (wd_loader_reset(l, epoch, 0) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); wd_loader_close(l); return 1; }
        for (;;) {
            const wd_batch *b;
            if (wd_loader_next(l, &b) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); wd_loader_close(l); return 1; }
            if (!b) break;
            double t1 = wd__now();
            wd_oov_count(NULL, b, &oov);
            oov_s += wd__now() - t1;
            samples += b->n;
            batches++;
            if (wd__now() - t0 >= max_s) break;
        }
    }
    double el = wd__now() - t0, cpu = process_cpu() - c0;
    wd_loader_stats st;
    wd_loader_stats_get(l, &st);
    wd_loader_close(l);
    printf("loader %2d thread%s: %.2fM samples/s (%lld batches of %d in %.2f s; %.2f CPU s: %.2fM samples a CPU second); per batch: wait %.3f ms, "
           "oov count %.3f ms; thread time per batch: read %.3f, zstd+crc %.3f, unpack %.3f, assemble %.3f ms\n",
           T, T == 1 ? " " : "s", samples / el / 1e6, (long long)batches, B, el, cpu, samples / cpu / 1e6, 1e3 * st.wait_s / (double)batches, 1e3 * oov_s / (double)batches,
           1e3 * st.read_s / (double)batches, 1e3 * st.decompress_s / (double)batches, 1e3 * st.decode_s / (double)batches,
           1e3 * st.assemble_s / (double)batches);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: host_feed DATA.wdr [--batch B] [--threads 1,2] [--seconds S]\n"); return 2; }
    const char *path = argv[1], *threads = "1,2";
    int B = 16384;
    double secs = 8;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--batch")) B = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds")) secs = atof(argv[i + 1]);
        else { fprintf(stderr, "host_feed: unknown option %s\n", argv[i]); return 2; }
    }
    if (B < 1) { fprintf(stderr, "host_feed: --batch %d\n", B); return 2; }
    wd_reader *r;
    if (wd_reader_open(path, &r) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); return 1; }
    const wd_schema *s = wd_reader_schema(r);
    int64_t nb = wd_reader_nblocks(r);
    enum { K = 8 };   // the loader's default shuffle window, in blocks
    if (nb < K) { fprintf(stderr, "host_feed: %s has %lld blocks; %d needed\n", path, (long long)nb, K); wd_reader_close(r); return 1; }
    printf("host_feed: %s: %lld blocks of %d samples, %d dense, %d slots; batch %d; %d cores online\n", path, (long long)nb,
           wd_reader_block_samples(r, 0), s->ndense, s->nslots, B, wd__online_cores());

    // decode: every block once, one thread (the samples/s one decoding thread gives)
    {
        double t0 = cpu_now();
        int64_t n = 0;
        for (int64_t i = 0; i < nb; i++) {
            const wd_batch *b;
            if (wd_reader_block(r, i, &b) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); wd_reader_close(r); return 1; }
            n += b->n;
        }
        double el = cpu_now() - t0;
        printf("decode: %.2fM samples/s on one thread (%lld samples: read, zstd, CRC, unpack)\n", n / el / 1e6, (long long)n);
    }
    // assembly: wd__gather of B samples from a shuffled window of K blocks, repeated
    {
        wd__lslot *slots = (wd__lslot *)calloc(K, sizeof(wd__lslot));
        int64_t wn = 0;
        for (int j = 0; j < K; j++) {
            const wd_batch *b;
            if (wd_reader_block(r, j, &b) != WD_OK || wd_batch_init(&slots[j].b, s, b->n, b->nnz_cap) != WD_OK ||
                wd_batch_append(&slots[j].b, b, 0, b->n) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); return 1; }
            wn += b->n;
        }
        int32_t *ps = (int32_t *)malloc(sizeof(int32_t) * (size_t)wn);
        uint32_t *pi = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)wn);
        int64_t q = 0;
        for (int j = 0; j < K; j++) for (int i = 0; i < slots[j].b.n; i++) { ps[q] = j; pi[q] = (uint32_t)i; q++; }
        double tp = cpu_now();   // the window's permutation, as wd__loader_next_window draws it (on the assembler alone)
        wd__rng rng = {12345};
        for (int64_t i = q - 1; i > 0; i--) {
            int64_t k = (int64_t)(wd__rng_next(&rng) % (uint64_t)(i + 1));
            int32_t a = ps[i]; ps[i] = ps[k]; ps[k] = a;
            uint32_t c = pi[i]; pi[i] = pi[k]; pi[k] = c;
        }
        tp = (cpu_now() - tp) / (double)q;
        printf("window: its permutation %.1f ns a sample (%lld samples, the assembler alone, under the loader's lock)\n", 1e9 * tp, (long long)q);
        wd_batch out;
        if (wd_batch_init(&out, s, B, (int64_t)B * 8) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); return 1; }
        double per[15];
        for (int rep = 0; rep < 15; rep++) {
            out.n = 0;
            for (int k = 0; k < out.nslots; k++) if (out.offs[k]) out.offs[k][0] = 0;
            int64_t at = 0;
            double t0 = cpu_now();
            while (out.n < B) {   // as wd__loader_assemble takes from the window, wrapping round it
                int take = (int)WD__MIN((int64_t)(B - out.n), wn - at);
                if (wd__gather_mh(&out, slots, ps + at, pi + at, out.n, take) != WD_OK) { fprintf(stderr, "host_feed: %s\n", wd_last_error()); return 1; }
                for (int col = 0; col <= out.nslots; col++) wd__gather_col(&out, slots, ps + at, pi + at, out.n, take, col);
                out.n += take;
                at = (at + take) % wn;
            }
            per[rep] = (cpu_now() - t0) / B;
        }
        qsort(per, 15, sizeof per[0], cmp_double);
        printf("assembly: %.1f ns a sample (median of 15 batches; min %.1f, max %.1f): one thread gathering every column stops at %.1fM samples/s\n",
               1e9 * per[7], 1e9 * per[0], 1e9 * per[14], 1e-6 / per[7]);
        // the rank thread's own work on a batch
        double oov[15];
        wd_oov o;
        memset(&o, 0, sizeof o);
        for (int rep = 0; rep < 15; rep++) {
            double t0 = cpu_now();
            wd_oov_count(NULL, &out, &o);
            oov[rep] = cpu_now() - t0;
        }
        qsort(oov, 15, sizeof oov[0], cmp_double);
        printf("rank thread: wd_oov_count %.3f ms a batch of %d (median of 15): %.1fM samples/s alone\n", 1e3 * oov[7], B, B / oov[7] / 1e6);
        wd_batch_free(&out);
        for (int j = 0; j < K; j++) wd_batch_free(&slots[j].b);
        free(slots); free(ps); free(pi);
    }
    wd_reader_close(r);
    for (const char *p = threads; *p;) {
        int T = atoi(p);
        if (T >= 1 && loader_run(path, B, T, secs) != 0) return 1;
        p += strcspn(p, ",");
        if (*p == ',') p++;
    }
    return 0;
}
