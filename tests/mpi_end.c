// tests/mpi.sh's mpi_end_after_abort: under `mpirun -np 2`, built with
// -fsanitize=address. Rank 0 waits in a collective that rank 1 does not join
// in time: at its WD_COMM_TIMEOUT (0.5 s) rank 0 calls the roll, aborts (its
// notices to rank 1 sent) and returns WD_ERR_ABORTED, its collective still
// pending in MPI (MPI can neither finish nor cancel it). Every rank then
// calls wd_comm_mpi_destroy, which receives the notices on their way to it
// and completes its own sends before freeing them, and gives every rank the
// same verdict: a collective pending on any rank forbids MPI_Finalize on all
// (WD_ERR_ABORTED, naming the rank and the collective).
// test_late_rank_finishes_pending_collective (the sum, then the gather):
// rank 1 joins that collective late, with MPI itself on the communicator's
// MPI_Comm, after rank 0 freed its buffer and entered its destroy: what MPI
// then writes on rank 0 must be the communicator's own memory (the sum
// staged in its buffer; the gather's counts), never freed memory (before:
// ASan's heap-use-after-free, MPI writing the sum into the caller's freed
// buffer).
// test_notices_received_before_free: rank 0 aborts (its notice: 400 bytes,
// sent by the rendezvous protocol here: tests/mpi.sh runs this over TCP with
// an eager limit of 128 bytes, so MPI reads them when rank 1 receives) and
// destroys at once; 1 s later rank 1 receives it in its next collective
// (which it had not started: nothing pending), then destroys: rank 0's
// destroy waits for rank 1's before freeing the notice (before: ASan's
// heap-use-after-free, writev reading the freed notice as rank 0 sent it in
// its next MPI call). Both may finalize (WD_OK).
// test_pending_collective_refuses_finalize: a barrier rank 1 never joins.
// The program then ends as wd-mpi does: rank 0 calls MPI_Abort (errorcode
// 3), rank 1 waits outside MPI to be ended (Open MPI 4.1's mpirun may hang
// when a rank calls MPI_Finalize while another aborts), after both printed
// their results (tests/testlib.h's harness: each rank its PASS/FAIL lines).
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"

// rank 1 joins rank 0's pending collective late (the same call, on the same MPI_Comm)
static void join_late(wd_comm *c, int sum) {
    MPI_Comm comm = ((wd__mpi *)c->impl)->comm;
    MPI_Request rq;
    if (sum) {
        float x[64];
        for (int i = 0; i < 64; i++) x[i] = 1.0f;
        MPI_Iallreduce(MPI_IN_PLACE, x, 64, MPI_FLOAT, MPI_SUM, comm, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        long long mine = 0, all[2];
        MPI_Iallgather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, comm, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
}
// A communicator whose rank 0 times out after 0.5 s (rank 1 keeps the default)
static wd_comm *make(void) {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0) setenv("WD_COMM_TIMEOUT", "0.5", 1);
    wd_comm *c = NULL;
    wd_status st = wd_comm_mpi_create(MPI_COMM_WORLD, &c);
    unsetenv("WD_COMM_TIMEOUT");
    CHECK_OK(st);
    if (c && c->size != 2) { printf("  run it on 2 ranks\n"); wd_comm_mpi_destroy(c); c = NULL; CHECK(0); }
    return c;
}
static void test_late_rank_finishes_pending_collective(void) {
    for (int sum = 1; sum >= 0; sum--) {
        wd_comm *c = make();
        REQUIRE(c);
        if (c->rank == 1) {
            struct timespec ts = {2, 500000000};
            nanosleep(&ts, NULL);   // rank 0 timed out (0.5 s, then 0.5 s of roll call), freed its buffer
            join_late(c, sum);
            CHECK(wd_comm_mpi_destroy(c) == WD_ERR_ABORTED);
            CHECK(strstr(wd_last_error(), "rank 1 of 2: rank 0 left a collective pending after the abort: ") != NULL);
        } else {
            float *buf = (float *)calloc(64, sizeof(float));
            unsigned char bytes[40] = {1};
            const void *all[2];
            size_t sz[2];
            wd_status st = sum ? c->ops->allreduce_sum(c, buf, 64) : c->ops->allgather(c, bytes, sizeof bytes, all, sz);
            CHECK(st == WD_ERR_ABORTED);
            CHECK(strstr(wd_last_error(), "rank 1 did not answer") != NULL);
            free(buf);   // the caller's buffer is the caller's: MPI must not write into it any more
            CHECK(wd_comm_mpi_destroy(c) == WD_ERR_ABORTED);
            CHECK(strstr(wd_last_error(), sum ? "rank 0 of 2: the dense gradient's MPI_Allreduce was left pending" :
                         "rank 0 of 2: MPI_Allgather (the byte counts) was left pending") != NULL);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}
static void test_notices_received_before_free(void) {
    wd_comm *c = make();
    REQUIRE(c);
    if (c->rank == 0) c->ops->abort(c, WD_ERR_IO, "a test's failure");
    else {
        sleep(1);   // then the notice is received as a peer in its next collective receives it
        CHECK(c->ops->barrier(c) == WD_ERR_ABORTED);
        CHECK(strstr(wd_last_error(), "rank 0 failed (I/O error): a test's failure") != NULL);
    }
    CHECK_OK(wd_comm_mpi_destroy(c));
}
static int g_abort;   // MPI may not be finalized: rank 0 ends the job with MPI_Abort
static void test_pending_collective_refuses_finalize(void) {
    wd_comm *c = make();
    REQUIRE(c);
    wd_status st;
    if (c->rank == 1) {
        st = wd_comm_mpi_destroy(c);
        CHECK(strstr(wd_last_error(), "rank 1 of 2: rank 0 left a collective pending after the abort: ") != NULL);
    } else {
        CHECK(c->ops->barrier(c) == WD_ERR_ABORTED);
        st = wd_comm_mpi_destroy(c);
        CHECK(strstr(wd_last_error(), "rank 0 of 2: MPI_Barrier was left pending by the abort (pending on rank 0)"));
        CHECK(wd__mpi_kept && wd__mpi_kept->nstale == 1);   // its memory kept
    }
    CHECK(st == WD_ERR_ABORTED);
    CHECK(strstr(wd_last_error(), "no rank may call MPI_Finalize (end the job with MPI_Abort)") != NULL);
    g_abort = st == WD_ERR_ABORTED;
}
int main(int argc, char **argv) {
    int level = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level);
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    RUN(test_late_rank_finishes_pending_collective);
    RUN(test_notices_received_before_free);
    RUN(test_pending_collective_refuses_finalize);
    int rc = test_summary("mpi_end");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);   // both ranks' results are out
    if (g_abort && me == 0) MPI_Abort(MPI_COMM_WORLD, rc ? rc : 3);   // 3: ended as wd_comm_mpi_destroy said
    for (int i = 0; g_abort && i < 600; i++) usleep(100000);   // ended by rank 0's MPI_Abort
    MPI_Finalize();
    return rc;
}
