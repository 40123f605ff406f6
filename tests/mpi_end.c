// tests/mpi.sh's mpi_end_after_abort: under `mpirun -np 2`, built with
// -fsanitize=address. Rank 0 waits in a collective that rank 1 does not join
// in time: at its WD_COMM_TIMEOUT (0.5 s) rank 0 calls the roll, aborts (its
// notice to rank 1 sent) and returns WD_ERR_ABORTED, its collective still
// pending in MPI (MPI can neither finish nor cancel it). wd_comm_mpi_destroy
// never frees a communicator that aborted (MPI may still read its notice and
// write its collective's buffers) and says so: WD_ERR_ABORTED, MPI must not
// be finalized; one that never aborted it frees (WD_OK). The program then
// ends as wd-mpi does: the ranks agree (MPI_Allreduce, MAX, of "destroy said
// no"), rank 0 calls MPI_Abort (errorcode 3) and rank 1 waits outside MPI to
// be ended (Open MPI 4.1's mpirun may hang when a rank calls MPI_Finalize
// while another aborts), after both printed their results (tests/testlib.h's
// harness: each rank its PASS/FAIL lines).
// test_late_rank_finishes_pending_collective (the sum, then the gather):
// rank 1 joins that collective late, with MPI itself on the communicator's
// MPI_Comm, after rank 0 freed its buffer and destroyed the communicator:
// what MPI then writes on rank 0 must be the communicator's own memory (the
// sum staged in its buffer; the gather's counts), never freed memory (at
// 27fd887: ASan's heap-use-after-free, MPI writing the sum into the caller's
// freed buffer; freeing the aborted communicator: into its freed staging).
// test_notices_received_before_free: rank 0 aborts (its notice: 400 bytes,
// sent by the rendezvous protocol here: tests/mpi.sh runs this over TCP with
// an eager limit of 128 bytes, so MPI reads them when rank 1 receives) and
// destroys at once; 1 s later rank 1 receives it in its next collective
// (which it had not started: nothing pending), while rank 0 is in the next
// test's MPI calls: the notice's bytes must still be there (at 27fd887:
// ASan's heap-use-after-free, writev reading the freed notice).
// test_pending_collective_refuses_finalize: a communicator that never
// aborted is freed (WD_OK on both ranks); then a barrier rank 1 never joins:
// rank 0's communicator is kept (read after destroy: ASan would report a
// freed one), rank 1's, which never learnt of the abort, freed.
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
static int g_abort;   // a destroy said WD_ERR_ABORTED here: MPI may not be finalized
static void test_late_rank_finishes_pending_collective(void) {
    for (int sum = 1; sum >= 0; sum--) {
        wd_comm *c = make();
        REQUIRE(c);
        if (c->rank == 1) {
            struct timespec ts = {2, 500000000};
            nanosleep(&ts, NULL);   // rank 0 timed out (0.5 s, then 0.5 s of roll call), freed its buffer
            join_late(c, sum);
            CHECK_OK(wd_comm_mpi_destroy(c));   // it never aborted: freed (its notice never received)
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
            CHECK(strstr(wd_last_error(), "rank 0 of 2: the communicator aborted (rank 0 failed (aborted): waited "));
            CHECK(strstr(wd_last_error(), sum ? "s in the dense gradient's MPI_Allreduce" :
                         "s in MPI_Allgather (the byte counts)") != NULL);
            CHECK(strstr(wd_last_error(), "must not be finalized: end the job with MPI_Abort") != NULL);
            g_abort = 1;
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
    CHECK(wd_comm_mpi_destroy(c) == WD_ERR_ABORTED);   // aborted by itself or by the notice: kept
    CHECK(strstr(wd_last_error(), "the communicator aborted (rank 0 failed (I/O error): a test's failure)") != NULL);
    g_abort = 1;
}
static void test_pending_collective_refuses_finalize(void) {
    wd_comm *c = NULL;
    REQUIRE_OK(wd_comm_mpi_create(MPI_COMM_WORLD, &c));   // the default timeout: rank 1 comes from test 2
    CHECK_OK(c->ops->barrier(c));
    CHECK_OK(wd_comm_mpi_destroy(c));   // never aborted: freed
    c = make();
    REQUIRE(c);
    if (c->rank == 1) CHECK_OK(wd_comm_mpi_destroy(c));   // never aborted (nor polled: its notice unread)
    else {
        CHECK(c->ops->barrier(c) == WD_ERR_ABORTED);
        CHECK(wd_comm_mpi_destroy(c) == WD_ERR_ABORTED);
        CHECK(strstr(wd_last_error(), "rank 0 of 2: the communicator aborted (rank 0 failed (aborted): waited "));
        CHECK(strstr(wd_last_error(), "s in MPI_Barrier for the other ranks") != NULL);
        CHECK(((wd__mpi *)c->impl)->aborted && ((wd__mpi *)c->impl)->self.size == 2);   // kept (ASan: not freed)
    }
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
    int any = 0;   // the ranks' verdict, as wd-mpi's end reaches it; both ranks' results are out
    MPI_Allreduce(&g_abort, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && me == 0) MPI_Abort(MPI_COMM_WORLD, rc ? rc : 3);   // 3: ended as wd_comm_mpi_destroy said
    for (int i = 0; any && i < 600; i++) usleep(100000);   // ended by rank 0's MPI_Abort
    MPI_Finalize();
    return rc;
}
