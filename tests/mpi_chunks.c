// tests/mpi.sh's mpi_chunked_bit_identical: under `mpirun -np 3`,
// mpi_chunks TRAIN.wdr VALID.wdr trains the same model twice on
// wd_comm_mpi_create's communicator: with the default chunk (1 GiB: every
// MPI call whole), then with WD_MPI_CHUNK_BYTES=300 (a new communicator:
// the dense gradient's sum, the sparse rows and the validation's scores in
// many chunks, the last of each partial). Every rank compares the two runs
// bit for bit: the parameters and optimizer state, and every validation's
// AUC and log loss (tests/testlib.h's harness: each rank prints its PASS or
// FAIL line and summary). The communicator's call counters show that the
// chunks were used: the default gathers every step in one MPI_Iallgatherv,
// 300 bytes in rounds of broadcasts and the sums in more calls.
// test_allgather_edges: every rank's bytes in place and the sums exact for
// lengths 0 (a rank sending nothing), 1, exact multiples of the chunk and
// one past, under chunks of 8, 9, 300 bytes and the default.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"

typedef struct history { int n; double auc[64], ll[64]; } history;
static int record(void *user, const wd_progress *p) {
    history *h = (history *)user;
    if (!isnan(p->valid_auc) && h->n < 64) { h->auc[h->n] = p->valid_auc; h->ll[h->n] = p->valid_logloss; h->n++; }
    return 0;
}
static wd_status train(const char *train, const char *valid, wd_model **m, history *h, long long calls[3]) {
    wd_comm *comm = NULL;
    wd_status st = wd_comm_mpi_create(MPI_COMM_WORLD, &comm);
    if (st) return st;
    *m = tl_criteo_model(0, train);
    if (!*m) { wd_comm_mpi_destroy(comm); return WD_ERR_INVALID_ARG; }
    const char *files[1] = {train}, *vfiles[1] = {valid};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.valid_files = vfiles; td.nvalid = 1;
    td.batch_size = 600; td.no_shuffle = 1; td.threads = 1; td.eval_every = 3;
    td.comm = comm; td.progress = record; td.user = h;   // every rank's own history
    st = wd_train(*m, &td, NULL);
    memcpy(calls, ((wd__mpi *)comm->impl)->calls, sizeof ((wd__mpi *)comm->impl)->calls);
    wd_comm_mpi_destroy(comm);
    return st;
}
static const char *g_train, *g_valid;
static size_t edge_len(int q, int t, int P) {   // the review's probe: 0, around and at multiples of 8, 9 and 300
    static const size_t L[] = {0, 1, 7, 8, 9, 15, 16, 17, 18, 27, 31, 64, 300, 301, 600, 1000};
    return L[(q * 7 + t * 3) % 16] * (size_t)((t + q) % 3 == 0 ? 0 : 1) + (size_t)(t % 5 == 0 && q == P - 1 ? 8 * 3 + 1 : 0);
}
static void test_allgather_edges(void) {
    static const char *chunk[4] = {"8", "9", "300", NULL};
    for (int c = 0; c < 4; c++) {
        if (chunk[c]) setenv("WD_MPI_CHUNK_BYTES", chunk[c], 1);
        else unsetenv("WD_MPI_CHUNK_BYTES");
        wd_comm *comm = NULL;
        wd_status st = wd_comm_mpi_create(MPI_COMM_WORLD, &comm);
        unsetenv("WD_MPI_CHUNK_BYTES");
        REQUIRE_OK(st);
        int P = comm->size, r = comm->rank, bad = 0, zero = 0;
        const void *all[64];
        size_t sz[64];
        if (P > 64) wd_comm_mpi_destroy(comm);
        REQUIRE(P <= 64);
        for (int t = 0; t < 60 && !bad; t++) {
            size_t n = edge_len(r, t, P);
            unsigned char *b = (unsigned char *)malloc(n + 1);
            for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(r * 31 + i * 7 + t);
            st = comm->ops->allgather(comm, b, n, all, sz);
            free(b);
            CHECK_OK(st);
            if (st) break;
            for (int q = 0; q < P; q++) {
                zero += sz[q] == 0;
                if (sz[q] != edge_len(q, t, P) || ((uintptr_t)all[q]) % 8) bad++;
                for (size_t i = 0; i < sz[q]; i++)
                    if (((const unsigned char *)all[q])[i] != (unsigned char)(q * 31 + i * 7 + t)) { bad++; break; }
            }
            size_t m = (size_t)(t * 13 % 257);
            float *f = (float *)malloc(sizeof(float) * (m + 1));
            for (size_t i = 0; i < m; i++) f[i] = (float)(r + 1) * (float)i;
            st = comm->ops->allreduce_sum(comm, f, m);
            CHECK_OK(st);
            for (size_t i = 0; !st && i < m; i++)
                if (f[i] != (float)(P * (P + 1) / 2) * (float)i) { bad++; break; }
            free(f);
            if (st) break;
        }
        const long long *k = ((wd__mpi *)comm->impl)->calls;
        printf("  chunk %s: %d wrong, %d views of 0 bytes; MPI calls: sums %lld, whole allgathers %lld, broadcast rounds %lld\n", chunk[c] ? chunk[c] : "default", bad, zero, k[0], k[1], k[2]);
        CHECK(bad == 0 && zero > 0);
        if (chunk[c]) CHECK(k[WD__MPI_ROUNDS] > 0 && k[WD__MPI_SUMS] > 60);   // trials beyond one chunk: in rounds, the sums in several calls
        else CHECK(k[WD__MPI_ROUNDS] == 0 && k[WD__MPI_GATHERS] > 0);
        wd_comm_mpi_destroy(comm);
    }
}
static void test_chunked_bit_identical(void) {
    wd_model *m[2] = {NULL, NULL};
    history h[2];
    long long calls[2][3] = {{0}};
    memset(h, 0, sizeof h);
    unsetenv("WD_MPI_CHUNK_BYTES");
    wd_status st = train(g_train, g_valid, &m[0], &h[0], calls[0]);
    if (!st) { setenv("WD_MPI_CHUNK_BYTES", "300", 1); st = train(g_train, g_valid, &m[1], &h[1], calls[1]); }
    unsetenv("WD_MPI_CHUNK_BYTES");
    CHECK_OK(st);
    if (!st) {
        printf("  MPI calls (sums, whole allgathers, broadcast rounds): default chunk %lld %lld %lld, 300 bytes %lld %lld %lld\n", calls[0][0], calls[0][1], calls[0][2],
               calls[1][0], calls[1][1], calls[1][2]);
        CHECK(calls[0][WD__MPI_GATHERS] > 0 && calls[0][WD__MPI_ROUNDS] == 0);            // every gather in one call
        CHECK(calls[1][WD__MPI_ROUNDS] > calls[0][WD__MPI_GATHERS]);                      // the steps' rows in rounds
        CHECK(calls[1][WD__MPI_SUMS] > 2 * calls[0][WD__MPI_SUMS]);                       // the dense gradient in chunks
        printf("  %d validations, the last AUC %.17g, log loss %.17g (chunked %.17g, %.17g); step %lld\n", h[0].n, h[0].auc[h[0].n - 1], h[0].ll[h[0].n - 1],
               h[1].auc[h[1].n - 1], h[1].ll[h[1].n - 1], (long long)m[0]->step);
        CHECK(h[0].n == 4 && h[1].n == 4);
        CHECK(!memcmp(h[0].auc, h[1].auc, sizeof h[0].auc) && !memcmp(h[0].ll, h[1].ll, sizeof h[0].ll));
        CHECK(m[0]->step == 12 && tl_params_equal(m[0], m[1]));
    }
    wd_model_destroy(m[0]);
    wd_model_destroy(m[1]);
}
int main(int argc, char **argv) {
    int level = 0;
    if (argc != 3 || MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level) != MPI_SUCCESS) return 2;
    g_train = argv[1]; g_valid = argv[2];
    RUN(test_chunked_bit_identical);
    RUN(test_allgather_edges);
    int rc = test_summary("mpi_chunks");
    MPI_Finalize();
    return rc;
}
