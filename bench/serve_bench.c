/* A service's model (issue 32): its memory, and its requests' latency while
   training runs beside it.
     serve_bench rss load|weights M.wdm
       RSS (VmRSS) of this process before and after loading M with
       wd_model_load or wd_model_load_weights, and after a predictor's first
       calls (its scratch, the GEMM engine's state), against the weights'
       bytes (4 per dense parameter, wide weight and embedding value).
     serve_bench colo M.wdm DATA.wdr SECONDS none|THREADS
       One caller thread with one predictor (threads 1) sends requests of one
       sample (DATA's samples in turn) back to back for SECONDS and prints
       p50 / p99 / max of a request. THREADS: meanwhile a wd_trainer (that
       many workers, 0: every core) trains M (a checkpoint) on DATA's
       samples in a loop, batch 512, publishing every 20 steps; none: no
       training. Printed with the steps trained and the load average.
   Build: make build/serve_bench. bench/serve_bench.sh runs both on the
   Criteo sample. */
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if ((x) != WD_OK) {                                                                                            \
            fprintf(stderr, "serve_bench: %s:%d: %s\n", __FILE__, __LINE__, wd_last_error());                          \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}
static double cpu_s(int who) {
    struct rusage u;
    getrusage(who, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
           1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
static double loadavg(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}
// Every sample of a .wdr in one batch.
static void read_all(const char *path, wd_batch *all) {
    wd_reader *r;
    TRY(wd_reader_open(path, &r));
    TRY(wd_batch_init(all, wd_reader_schema(r), (int)wd_reader_nsamples(r), 0));
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *blk;
        TRY(wd_reader_block(r, i, &blk));
        TRY(wd_batch_append(all, blk, 0, blk->n));
    }
    wd_reader_close(r);
}

static int rss(const char *how, const char *path) {
    long before = rss_kb();
    wd_model *m;
    double t0 = now();
    TRY(!strcmp(how, "weights") ? wd_model_load_weights(path, &m) : wd_model_load(path, &m));
    double load_s = now() - t0;
    long loaded = rss_kb();
    int64_t weights = 4 * (m->P + m->wide_rows + (m->emb ? m->emb_rows * m->E : 0));
    wd_batch b;
    TRY(wd_batch_init(&b, wd_model_schema(m), 256, 0));
    b.n = 256; // zeros: a request's shape is what the scratch needs
    memset(b.dense, 0, sizeof(float) * 256 * (size_t)b.ndense);
    for (int k = 0; k < b.nslots; k++) memset(b.ids[k], 0, sizeof(uint32_t) * 256); // (one-hot slots)
    wd_predictor *p;
    TRY(wd_predictor_create(m, NULL, &p));
    float out[256];
    for (int n = 1; n <= 256; n *= 2) {
        b.n = n;
        TRY(wd_predictor_run(p, &b, out));
    }
    long served = rss_kb();
    wd_predictor *p2; // a second serving thread's predictor: what each one adds
    TRY(wd_predictor_create(m, NULL, &p2));
    for (int n = 1; n <= 256; n *= 2) {
        b.n = n;
        TRY(wd_predictor_run(p2, &b, out));
    }
    long two = rss_kb();
    printf(
        "rss %-7s %s: weights %.2f MB; RSS +%.2f MB after the load (ratio %.3f, %.2f s), +%.2f MB after a predictor's"
        " first calls (1..256 samples; the GEMM engine's code and state), +%.2f MB per further predictor\n",
        how, path, weights / 1e6, (loaded - before) / 1e3, (loaded - before) * 1e3 / (double)weights, load_s,
        (served - loaded) / 1e3, (two - served) / 1e3);
    wd_predictor_destroy(p2);
    wd_predictor_destroy(p);
    wd_batch_free(&b);
    wd_model_destroy(m);
    return 0;
}

typedef struct trainer_arg {
    wd_model *m;
    const wd_batch *all;
    int threads;
    volatile int *stop;
    int64_t steps;
} trainer_arg;
static void *train_loop(void *arg) {
    trainer_arg *a = (trainer_arg *)arg;
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.batch_size = 512;
    td.threads = a->threads;
    td.publish_every = 20;
    wd_trainer *t;
    TRY(wd_trainer_open(a->m, &td, &t));
    wd_batch b;
    TRY(wd_batch_init(&b, wd_model_schema(a->m), 512, 0));
    for (int at = 0; !__atomic_load_n(a->stop, __ATOMIC_ACQUIRE); at = (at + 512) % (a->all->n - 512)) {
        b.n = 0;
        TRY(wd_batch_append(&b, a->all, at, 512));
        TRY(wd_trainer_push(t, &b));
        a->steps++;
    }
    TRY(wd_trainer_close(t, NULL));
    wd_trainer_free(t);
    wd_batch_free(&b);
    return NULL;
}
static int colo(const char *model, const char *data, double secs, const char *train) {
    wd_model *m;
    TRY(wd_model_load(model, &m));
    wd_model_new_run(m); // a stream after the file's run
    wd_batch all, req;
    read_all(data, &all);
    TRY(wd_batch_init(&req, wd_model_schema(m), 1, 0));
    TRY(wd_model_publish(m)); // predictions read snapshots while training runs
    wd_predictor *p;
    TRY(wd_predictor_create(m, NULL, &p));
    float prob;
    for (int i = 0; i < 100; i++) {
        wd_batch_clear(&req);
        TRY(wd_batch_append(&req, &all, i, 1));
        TRY(wd_predictor_run(p, &req, &prob));
    }
    volatile int stop = 0;
    trainer_arg ta = {m, &all, strcmp(train, "none") ? atoi(train) : -1, &stop, 0};
    pthread_t th;
    if (ta.threads >= 0 && pthread_create(&th, NULL, train_loop, &ta)) {
        fprintf(stderr, "serve_bench: no thread\n");
        return 1;
    }
    usleep(300000); // training under way
    size_t cap = 1 << 22, n = 0;
    double *lat = (double *)malloc(sizeof(double) * cap), l0 = loadavg(), end = now() + secs, t_start = now();
    double all0 = cpu_s(RUSAGE_SELF), me0 = cpu_s(RUSAGE_THREAD);
    for (int i = 0; n < cap && now() < end; i = (i + 1) % all.n) {
        wd_batch_clear(&req);
        TRY(wd_batch_append(&req, &all, i, 1));
        double t0 = now();
        TRY(wd_predictor_run(p, &req, &prob));
        lat[n++] = now() - t0;
    }
    double wall = now() - t_start, others = (cpu_s(RUSAGE_SELF) - all0) - (cpu_s(RUSAGE_THREAD) - me0);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    if (ta.threads >= 0) pthread_join(th, NULL);
    qsort(lat, n, sizeof *lat, cmpd);
    printf("colo training=%-4s: %zu requests of 1 sample on 1 thread in %.0f s: p50 %.3f ms p99 %.3f ms max %.2f ms;"
           " %lld training steps of 512 beside them using %.2f cores; load %.2f -> %.2f\n",
           ta.threads < 0 ? "none" : train, n, secs, 1e3 * lat[n / 2], 1e3 * lat[n * 99 / 100], 1e3 * lat[n - 1],
           (long long)ta.steps, others / wall, l0, loadavg());
    free(lat);
    wd_predictor_destroy(p);
    wd_batch_free(&req);
    wd_batch_free(&all);
    wd_model_destroy(m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "rss") && (!strcmp(argv[2], "load") || !strcmp(argv[2], "weights")))
        return rss(argv[2], argv[3]);
    if (argc == 6 && !strcmp(argv[1], "colo")) return colo(argv[2], argv[3], atof(argv[4]), argv[5]);
    fprintf(stderr,
            "usage: serve_bench rss load|weights M.wdm | serve_bench colo M.wdm DATA.wdr SECONDS none|THREADS\n");
    return 2;
}
