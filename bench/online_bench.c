// The cost of online learning: training pushed through wd_trainer_push with
// a snapshot published every K steps (K = 0: never), samples/s of the step
// loop, and the time of one publish (wd_model_publish: a copy of every
// parameter), with and without threads calling wd_predict meanwhile.
// Build: cc -std=c11 -O2 -DWD_USE_ONEDNN bench/online_bench.c -o online_bench -lzstd -lz -lpthread -lm -ldnnl -lgomp
// Run:   ./online_bench [rows] [buckets]   (synthetic Criteo-shaped data from wd_gen, in /tmp)
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec; }
#define TRY(x) do { if ((x) != WD_OK) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, wd_last_error()); exit(1); } } while (0)

typedef struct pred { wd_model *m; const wd_batch *b; volatile int *stop; long n; } pred;
static void *predictor(void *p) {
    pred *a = (pred *)p;
    float out[256];
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) { TRY(wd_predict(a->m, a->b, out)); a->n++; }
    return NULL;
}

int main(int argc, char **argv) {
    int64_t rows = argc > 1 ? atoll(argv[1]) : 65536;
    int buckets = argc > 2 ? atoi(argv[2]) : 100000;
    const char *path = "/tmp/online_bench.wdr";
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = path; g.rows = rows; g.seed = 1; g.max_card = buckets;
    TRY(wd_gen(&g, NULL));
    wd_reader *r;
    TRY(wd_reader_open(path, &r));
    wd_schema s = *wd_reader_schema(r);
    wd_batch all;
    TRY(wd_batch_init(&all, &s, (int)rows, 0));
    for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        TRY(wd_reader_block(r, i, &b));
        TRY(wd_batch_append(&all, b, 0, b->n));
    }
    wd_reader_close(r);
    wd_batch req;   // a request of 256 samples for the predicting threads
    TRY(wd_batch_init(&req, &s, 256, 0));
    TRY(wd_batch_append(&req, &all, 0, 256));
    const int B = 1024;
    int ks[4] = {0, 100, 10, 1};
    for (int withpred = 0; withpred < 2; withpred++)
        for (int q = 0; q < 4; q++) {
            wd_model_desc md;
            memset(&md, 0, sizeof md);
            md.schema = &s; md.hidden[0] = 256; md.hidden[1] = 128; md.seed = 1;
            wd_model *m;
            TRY(wd_model_create(&md, &m));
            double tp = now();
            TRY(wd_model_publish(m));
            TRY(wd_model_publish(m));   // both buffers allocated; the second is a pure copy
            double t1 = now();
            TRY(wd_model_publish(m));
            double pub_s = now() - t1;
            (void)tp;
            volatile int stop = 0;
            pred pa[2];
            pthread_t th[2];
            for (int i = 0; withpred && i < 2; i++) { pa[i].m = m; pa[i].b = &req; pa[i].stop = &stop; pa[i].n = 0; pthread_create(&th[i], NULL, predictor, &pa[i]); }
            wd_train_desc td;
            memset(&td, 0, sizeof td);
            td.batch_size = B; td.threads = 2; td.publish_every = ks[q];
            wd_trainer *t;
            TRY(wd_trainer_open(m, &td, &t));
            wd_batch one;
            TRY(wd_batch_init(&one, &s, B, 0));
            double t0 = now();
            for (int64_t at = 0; at + B <= rows; at += B) {
                one.n = 0;
                TRY(wd_batch_append(&one, &all, (int)at, B));
                TRY(wd_trainer_push(t, &one));
            }
            wd_train_report rep;
            TRY(wd_trainer_close(t, &rep));
            double wall = now() - t0;
            wd_trainer_free(t);
            __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
            long preds = 0;
            for (int i = 0; withpred && i < 2; i++) { pthread_join(th[i], NULL); preds += pa[i].n; }
            printf("publish_every %3d%s: %lld steps, %.0f samples/s (step loop %.2f s, push wall %.2f s), one publish %.2f ms of %.1f MB parameters%s",
                   ks[q], withpred ? " + 2 predicting threads" : "", (long long)rep.steps, rep.samples_per_s, rep.train_s, wall, 1e3 * pub_s,
                   4e-6 * (double)(m->P + m->wide_rows + (m->emb ? m->emb_rows * m->E : 0)), withpred ? "" : "\n");
            if (withpred) printf(", %.0f predictions/s of 256 samples\n", (double)preds / wall);
            wd_batch_free(&one);
            wd_model_destroy(m);
        }
    wd_batch_free(&all); wd_batch_free(&req);
    unlink(path);
    return 0;
}
