// What one step exchanges between processes, measured: wd_train on the MPI
// communicator (wd_comm_mpi_create) wrapped by a counter of the bytes each
// collective hands to MPI and gets back. Rank 0 prints, per rank and step,
// the dense allreduce's payload and the sparse allgather's bytes sent and
// received (the mean and the largest over the ranks), and samples/s.
// Build: make build/mpi_exchange (needs mpicc). Usage:
//     mpirun -np N build/mpi_exchange DATA.wdr BATCH_PER_RANK STEPS [THREADS]
// The model: E = 16, MLP 1024-512-256 (the defaults), Adagrad + FTRL.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>
#include <stdlib.h>

typedef struct counted {
    wd_comm self, *inner;
    double dense, sent, recv;       // bytes
    int64_t reduces, gathers;
} counted;
static wd_status c_allreduce(wd_comm *c, float *buf, size_t n) {
    counted *k = (counted *)c->impl;
    k->dense += 4.0 * (double)n; k->reduces++;
    return k->inner->ops->allreduce_sum(k->inner, buf, n);
}
static wd_status c_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    counted *k = (counted *)c->impl;
    size_t *sz = sizes ? sizes : (size_t *)calloc((size_t)c->size, sizeof(size_t));
    wd_status st = k->inner->ops->allgather(k->inner, mine, bytes, all, sz);
    if (!st) {
        k->sent += (double)bytes; k->gathers++;
        for (int q = 0; q < c->size; q++) if (q != c->rank) k->recv += (double)sz[q];
    }
    if (!sizes) free(sz);
    return st;
}
static wd_status c_barrier(wd_comm *c) { counted *k = (counted *)c->impl; return k->inner->ops->barrier(k->inner); }
static void c_abort(wd_comm *c, wd_status st, const char *why) { counted *k = (counted *)c->impl; k->inner->ops->abort(k->inner, st, why); }
static const wd_comm_ops counted_ops = {c_allreduce, c_allgather, c_barrier, c_abort, NULL, NULL, NULL};

static int fail(int rank, const char *what) { fprintf(stderr, "rank %d: %s: %s\n", rank, what, wd_last_error()); MPI_Abort(MPI_COMM_WORLD, 1); return 1; }

int main(int argc, char **argv) {
    int level = 0, rank = 0, size = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) { if (!rank) fprintf(stderr, "usage: mpirun -np N %s DATA.wdr BATCH_PER_RANK STEPS [THREADS]\n", argv[0]); MPI_Finalize(); return 2; }
    int B = atoi(argv[2]), steps = atoi(argv[3]), threads = argc > 4 ? atoi(argv[4]) : 1;
    wd_reader *r;
    if (wd_reader_open(argv[1], &r)) return fail(rank, argv[1]);
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = wd_reader_schema(r);
    md.embed_dim = 16;
    md.seed = 1;
    wd_model *m;
    wd_status st = wd_model_create(&md, &m);
    wd_reader_close(r);
    if (st) return fail(rank, "model");
    counted k;
    memset(&k, 0, sizeof k);
    if (wd_comm_mpi_create(MPI_COMM_WORLD, &k.inner)) return fail(rank, "communicator");
    k.self.ops = &counted_ops; k.self.rank = rank; k.self.size = size; k.self.impl = &k;
    const char *files[1] = {argv[1]};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = B * size; td.threads = threads; td.no_shuffle = 1;
    td.max_steps = steps; td.epochs = 1000;
    td.comm = &k.self;
    wd_train_report rep;
    if (wd_train(m, &td, &rep)) return fail(rank, "train");
    double mine[3] = {k.dense / (double)rep.steps, k.sent / (double)rep.steps, k.recv / (double)rep.steps}, sum[3], mx[3];
    MPI_Reduce(mine, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, mx, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double ring = size > 1 ? 2.0 * (size - 1) / size * sum[0] / size : 0;
        printf("processes %d x threads %d, batch %d per rank, %lld steps: %.0f samples/s (comm %.1f ms a step on rank 0)\n", size, threads, B,
               (long long)rep.steps, rep.samples_per_s, 1e3 * rep.stage_s[WD_STAGE_COMM] / (double)rep.steps);
        printf("  per rank per step: dense allreduce payload %.3f MB (a ring sends %.3f MB); sparse allgather sent %.3f MB (largest %.3f), received %.3f MB (largest %.3f)\n",
               sum[0] / size / 1e6, ring / 1e6, sum[1] / size / 1e6, mx[1] / 1e6, sum[2] / size / 1e6, mx[2] / 1e6);
    }
    wd_comm_mpi_destroy(k.inner);
    wd_model_destroy(m);
    MPI_Finalize();
    return 0;
}
