// tests/mpi.sh's mpi_chunked_bit_identical: under `mpirun -np 3`,
// mpi_chunks TRAIN.wdr VALID.wdr trains the same model twice on
// wd_comm_mpi_create's communicator: with the default chunk (1 GiB: every
// MPI call whole), then with WD_MPI_CHUNK_BYTES=300 (a new communicator:
// the dense gradient's sum, the sparse rows and the validation's scores in
// many chunks, the last of each partial). Every rank compares the two runs
// bit for bit: the parameters and optimizer state, and every validation's
// AUC and log loss (tests/testlib.h's harness: each rank prints its PASS or
// FAIL line and summary).
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"

typedef struct history { int n; double auc[64], ll[64]; } history;
static int record(void *user, const wd_progress *p) {
    history *h = (history *)user;
    if (!isnan(p->valid_auc) && h->n < 64) { h->auc[h->n] = p->valid_auc; h->ll[h->n] = p->valid_logloss; h->n++; }
    return 0;
}
static wd_status train(const char *train, const char *valid, wd_model **m, history *h) {
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
    wd_comm_mpi_destroy(comm);
    return st;
}
static const char *g_train, *g_valid;
static void test_chunked_bit_identical(void) {
    wd_model *m[2] = {NULL, NULL};
    history h[2];
    memset(h, 0, sizeof h);
    unsetenv("WD_MPI_CHUNK_BYTES");
    wd_status st = train(g_train, g_valid, &m[0], &h[0]);
    if (!st) { setenv("WD_MPI_CHUNK_BYTES", "300", 1); st = train(g_train, g_valid, &m[1], &h[1]); }
    CHECK_OK(st);
    if (!st) {
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
    int rc = test_summary("mpi_chunks");
    MPI_Finalize();
    return rc;
}
