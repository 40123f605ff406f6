// test_nccl_cpu.c - build/libnccl_cpu.so (tests/cudacpu/nccl_cpu.c) against
// NCCL's rules, on the emulated device: linked in (the backend's dlopen of
// WD_NCCL_LIB, set to it, finds the same library), ranks on devices 0 and 1
// (CUDACPU_DEVICES=2), its collectives on the devices' streams; then the
// backend (widedeep_cuda.cu on the emulated device) against its injected
// faults (CUDACPU_NCCL_FAULT): a peer that hangs, a remote error, a set-up
// that never completes, each ended within WD_COMM_TIMEOUT and torn down;
// and examples/multi_gpu.c with its ranks as threads. Usage: test_nccl_cpu [TMPDIR].
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#define WIDEDEEP_IMPLEMENTATION
#include "../../widedeep.h"
#include "../testlib.h"


static char TMP[256] = "/tmp";   // scratch files (argv[1])
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static ncclConfig_t nonblocking(void) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    return cfg;
}
// polls comm until its state is not ncclInProgress or `s` seconds passed;
// the state, and in *polls the in-progress answers
static ncclResult_t settle(ncclComm_t comm, double s, int *polls) {
    double t0 = now_s();
    int n = 0;
    for (;;) {
        ncclResult_t st = ncclInProgress;
        if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) return ncclInternalError;
        if (st != ncclInProgress || now_s() - t0 > s) { if (polls) *polls = n; return st; }
        n++;
        usleep(100);
    }
}
// 1 when stream st has run everything within `s` seconds
static int drains(cudaStream_t st, double s) {
    double t0 = now_s();
    while (now_s() - t0 <= s) {
        cudaError_t e = cudaStreamQuery(st);
        if (e == cudaSuccess) return 1;
        if (e != cudaErrorNotReady) return 0;
        usleep(200);
    }
    return 0;
}

// n ranks on devices dev[i], made by one thread in a group, each with a stream
typedef struct { int n; ncclComm_t c[4]; cudaStream_t st[4]; int dev[4]; } clique;
static int make(clique *q, int n, const int *dev) {
    memset(q, 0, sizeof *q);
    q->n = n;
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return 0;
    int ok = ncclGroupStart() == ncclSuccess;
    for (int i = 0; ok && i < n; i++) {
        q->dev[i] = dev ? dev[i] : i;
        ncclConfig_t cfg = nonblocking();
        ok = cudaSetDevice(q->dev[i]) == cudaSuccess && cudaStreamCreate(&q->st[i]) == cudaSuccess &&
             ncclCommInitRankConfig(&q->c[i], n, id, i, &cfg) == ncclInProgress;
    }
    return ncclGroupEnd() == ncclInProgress && ok;
}
static int make_settled(clique *q, int n) {
    if (!make(q, n, NULL)) return 0;
    for (int i = 0; i < n; i++) if (settle(q->c[i], 5, NULL) != ncclSuccess) return 0;
    return 1;
}
static void end(clique *q, int abort) {
    for (int i = 0; i < q->n; i++) {
        if (q->c[i]) {
            if (abort) CHECK(ncclCommAbort(q->c[i]) == ncclSuccess);
            else {
                CHECK(ncclCommFinalize(q->c[i]) == ncclInProgress && settle(q->c[i], 5, NULL) == ncclSuccess);
                CHECK(ncclCommDestroy(q->c[i]) == ncclSuccess);
            }
        }
        if (q->st[i]) { CHECK(drains(q->st[i], 5)); cudaSetDevice(q->dev[i]); cudaStreamDestroy(q->st[i]); }
    }
    memset(q, 0, sizeof *q);
}
static float *dev_floats(int device, const float *h, size_t n) {
    float *d = NULL;
    cudaSetDevice(device);
    if (cudaMalloc((void **)&d, 4 * n) != cudaSuccess) return NULL;
    cudaMemcpy(d, h, 4 * n, cudaMemcpyHostToDevice);
    return d;
}

// Set-up: in progress until the group ends, then for CUDACPU_NCCL_POLLS polls
// (3); a collective before that, a blocking config, a foreign unique id, a
// group end without a start and two ranks on one device are refused.
static void test_set_up(void) {
    ncclUniqueId id;
    REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
    ncclComm_t c[2] = {NULL, NULL};
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < 2; i++) {
        ncclConfig_t cfg = nonblocking();
        cudaSetDevice(i);
        CHECK(ncclCommInitRankConfig(&c[i], 2, id, i, &cfg) == ncclInProgress && c[i]);
    }
    int polls = -1;
    CHECK(settle(c[0], 0.2, &polls) == ncclInProgress);   // nobody joins before the group ends
    CHECK(ncclGroupEnd() == ncclInProgress);
    float *d = NULL;
    cudaSetDevice(0);
    CHECK(cudaMalloc((void **)&d, 4) == cudaSuccess);
    CHECK(ncclAllReduce(d, d, 1, ncclFloat, ncclSum, c[0], 0) == ncclInvalidUsage);   // still in progress
    for (int i = 0; i < 2; i++) {
        CHECK(settle(c[i], 5, &polls) == ncclSuccess);
        CHECK(polls == 3);   // CUDACPU_NCCL_POLLS, default 3
        CHECK(ncclCommAbort(c[i]) == ncclSuccess);
    }
    cudaFree(d);
    ncclResult_t st;
    CHECK(ncclCommGetAsyncError(c[0], &st) == ncclInvalidArgument);   // aborted: no longer a communicator
    ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER, cfg = nonblocking();
    ncclComm_t x = NULL;
    CHECK(ncclCommInitRankConfig(&x, 1, id, 0, &blocking) == ncclInvalidArgument && !x);
    CHECK(ncclCommInitRankConfig(&x, 1, id, 0, NULL) == ncclInvalidArgument && !x);
    ncclUniqueId foreign;
    memset(&foreign, 7, sizeof foreign);
    CHECK(ncclCommInitRankConfig(&x, 1, foreign, 0, &cfg) == ncclInvalidArgument && !x);
    CHECK(ncclCommInitRankConfig(&x, 2, id, 2, &cfg) == ncclInvalidArgument && !x);
    CHECK(ncclGroupEnd() == ncclInvalidUsage);
    clique q;
    static const int same[2] = {0, 0};
    CHECK(make(&q, 2, same));
    for (int i = 0; i < 2; i++) CHECK(settle(q.c[i], 5, NULL) == ncclInvalidUsage);
    end(&q, 1);
    // 3 ranks, rank 0 aborted before the clique filled: the others' set-up never completes
    ncclComm_t t[3];
    REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
    for (int i = 0; i < 3; i++) {
        cudaSetDevice(i % 2);
        CHECK(ncclCommInitRankConfig(&t[i], 3, id, i, &cfg) == ncclInProgress);
        if (i == 1) CHECK(ncclCommAbort(t[0]) == ncclSuccess);
    }
    for (int i = 1; i < 3; i++) CHECK(settle(t[i], 0.2, NULL) == ncclInProgress && ncclCommAbort(t[i]) == ncclSuccess);
}

// AllReduce (float sum, in place) and AllGather (bytes, out of place) between
// 2 ranks on 2 devices: exact results on both; the first collective outside a
// group answers ncclInProgress (NCCL connects there), the next ncclSuccess;
// a group of both ranks' calls from one thread answers ncclInProgress.
static void test_collectives(void) {
    enum { N = 1000, G = 37 };
    clique q;
    REQUIRE(make_settled(&q, 2));
    float h[2][N], out[N];
    float *d[2];
    unsigned char send[2][G], got[2 * G], *ds[2], *dr[2];
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < N; i++) h[r][i] = (float)i * (float)(r + 1) + 0.25f;
        for (int i = 0; i < G; i++) send[r][i] = (unsigned char)(r * 100 + i);
        d[r] = dev_floats(r, h[r], N);
        CHECK(cudaMalloc((void **)&ds[r], G) == cudaSuccess && cudaMalloc((void **)&dr[r], 2 * G) == cudaSuccess);
        cudaMemcpy(ds[r], send[r], G, cudaMemcpyHostToDevice);
    }
    for (int r = 0; r < 2; r++) {
        cudaSetDevice(r);
        CHECK(ncclAllReduce(d[r], d[r], N, ncclFloat, ncclSum, q.c[r], q.st[r]) == ncclInProgress);
        CHECK(settle(q.c[r], 5, NULL) == ncclSuccess);
        CHECK(ncclAllGather(ds[r], dr[r], G, ncclUint8, q.c[r], q.st[r]) == ncclSuccess);
    }
    for (int r = 0; r < 2; r++) {
        CHECK(cudaStreamSynchronize(q.st[r]) == cudaSuccess);
        cudaSetDevice(r);
        cudaMemcpy(out, d[r], sizeof out, cudaMemcpyDeviceToHost);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += out[i] != h[0][i] + h[1][i];
        CHECK(bad == 0);
        cudaMemcpy(got, dr[r], sizeof got, cudaMemcpyDeviceToHost);
        CHECK(memcmp(got, send[0], G) == 0 && memcmp(got + G, send[1], G) == 0);
    }
    CHECK(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < 2; r++) {
        cudaSetDevice(r);
        CHECK(ncclAllReduce(d[r], d[r], N, ncclFloat, ncclSum, q.c[r], q.st[r]) == ncclSuccess);
    }
    CHECK(ncclGroupEnd() == ncclInProgress);
    for (int r = 0; r < 2; r++)
        CHECK(settle(q.c[r], 5, NULL) == ncclSuccess && cudaStreamSynchronize(q.st[r]) == cudaSuccess);
    cudaSetDevice(1);
    cudaMemcpy(out, d[1], sizeof out, cudaMemcpyDeviceToHost);
    CHECK(out[7] == 2 * (h[0][7] + h[1][7]));
    for (int r = 0; r < 2; r++) { cudaSetDevice(r); cudaFree(d[r]); cudaFree(ds[r]); cudaFree(dr[r]); }
    CHECK(ncclAllReduce(out, out, N, ncclFloat, ncclMax, q.c[0], q.st[0]) ==
          ncclInvalidArgument); // not what the backend asks
    end(&q, 0);
}

// A communicator's collectives run in the order they were issued, whatever
// stream: rank 0 issues an allgather on a stream held back by a gate, then an
// allreduce on another stream; rank 1 both on one stream. Without the order
// (each stream on its own) rank 0's allreduce would meet rank 1's allgather:
// a mismatch, ncclInvalidUsage.
static volatile int gate;
static void CUDART_CB gate_fn(void *p) { (void)p; while (!__atomic_load_n(&gate, __ATOMIC_ACQUIRE)) usleep(200); }
static void test_order_across_streams(void) {
    clique q;
    REQUIRE(make_settled(&q, 2));
    cudaStream_t held;
    float one[2] = {1, 2}, *d[2];
    unsigned char *g[2];
    for (int r = 0; r < 2; r++) { d[r] = dev_floats(r, one, 2); cudaMalloc((void **)&g[r], 8); }
    cudaSetDevice(0);
    REQUIRE(cudaStreamCreate(&held) == cudaSuccess);
    gate = 0;
    CHECK(cudaLaunchHostFunc(held, gate_fn, NULL) == cudaSuccess);
    CHECK(ncclAllGather(g[0], g[0], 4, ncclUint8, q.c[0], held) == ncclInProgress);
    CHECK(settle(q.c[0], 5, NULL) == ncclSuccess);
    CHECK(ncclAllReduce(d[0], d[0], 2, ncclFloat, ncclSum, q.c[0], q.st[0]) == ncclSuccess);
    cudaSetDevice(1);
    CHECK(ncclAllGather(g[1], g[1], 4, ncclUint8, q.c[1], q.st[1]) == ncclInProgress);
    CHECK(settle(q.c[1], 5, NULL) == ncclSuccess);
    CHECK(ncclAllReduce(d[1], d[1], 2, ncclFloat, ncclSum, q.c[1], q.st[1]) == ncclSuccess);
    usleep(100000);
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
    CHECK(cudaStreamSynchronize(held) == cudaSuccess);
    for (int r = 0; r < 2; r++) {
        CHECK(cudaStreamSynchronize(q.st[r]) == cudaSuccess);
        CHECK(settle(q.c[r], 1, NULL) == ncclSuccess);
        float out[2] = {0, 0};
        cudaSetDevice(r);
        cudaMemcpy(out, d[r], sizeof out, cudaMemcpyDeviceToHost);
        CHECK(out[0] == 2 && out[1] == 4);
        cudaFree(d[r]); cudaFree(g[r]);
    }
    cudaSetDevice(0);
    cudaStreamDestroy(held);
    end(&q, 0);
}

// Peers whose calls differ (counts 10 and 11): an error on both, said on stderr.
static void test_mismatch(void) {
    clique q;
    REQUIRE(make_settled(&q, 2));
    float z[11] = {0}, *d[2];
    for (int r = 0; r < 2; r++) {
        d[r] = dev_floats(r, z, 11);
        CHECK(ncclAllReduce(d[r], d[r], 10 + (size_t)r, ncclFloat, ncclSum, q.c[r], q.st[r]) == ncclInProgress);
    }
    for (int r = 0; r < 2; r++) { CHECK(drains(q.st[r], 5)); CHECK(settle(q.c[r], 5, NULL) == ncclInvalidUsage); }
    for (int r = 0; r < 2; r++) { cudaSetDevice(r); cudaFree(d[r]); }
    end(&q, 1);
}

// A collective whose peer never comes waits on its stream; ncclCommAbort
// from the host releases it (the stream drains), moving nothing; the peer's
// later collective waits too (a peer's abort releases nobody) until its own
// abort. A finalize waits for the communicator's collectives.
static void test_abort_releases(void) {
    clique q;
    REQUIRE(make_settled(&q, 2));
    float v[4] = {1, 2, 3, 4}, *d[2], out[4];
    for (int r = 0; r < 2; r++) d[r] = dev_floats(r, v, 4);
    cudaSetDevice(0);
    CHECK(ncclAllReduce(d[0], d[0], 4, ncclFloat, ncclSum, q.c[0], q.st[0]) == ncclInProgress);
    CHECK(settle(q.c[0], 5, NULL) == ncclSuccess);
    CHECK(ncclCommFinalize(q.c[0]) == ncclInProgress);
    CHECK(!drains(q.st[0], 0.3) && settle(q.c[0], 0.1, NULL) == ncclInProgress);   // waits for rank 1
    double t0 = now_s();
    CHECK(ncclCommAbort(q.c[0]) == ncclSuccess);
    CHECK(drains(q.st[0], 2));
    printf("  an abort released the waiting collective in %.3f s\n", now_s() - t0);
    q.c[0] = NULL;
    cudaMemcpy(out, d[0], sizeof out, cudaMemcpyDeviceToHost);
    CHECK(memcmp(out, v, sizeof v) == 0);   // nothing moved
    cudaSetDevice(1);
    CHECK(ncclAllReduce(d[1], d[1], 4, ncclFloat, ncclSum, q.c[1], q.st[1]) == ncclInProgress);
    CHECK(!drains(q.st[1], 0.3));
    CHECK(ncclCommAbort(q.c[1]) == ncclSuccess && drains(q.st[1], 2));
    q.c[1] = NULL;
    for (int r = 0; r < 2; r++) { cudaSetDevice(r); cudaFree(d[r]); }
    end(&q, 1);
}

// CUDACPU_NCCL_FAULT: hang:1:2 (rank 1's second collective never ends: both
// streams wait, no error is reported, aborts release them), error:1:1 (rank
// 1 reports ncclRemoteError, rank 0 waits), init:1 (no set-up completes).
static void test_faults(void) {
    clique q;
    float v[2] = {1, 2}, *d[2];
    for (int r = 0; r < 2; r++) d[r] = dev_floats(r, v, 2);
    setenv("CUDACPU_NCCL_FAULT", "hang:1:2", 1);
    int made = make_settled(&q, 2);
    unsetenv("CUDACPU_NCCL_FAULT");
    CHECK(made);
    for (int k = 0; made && k < 2; k++)
        for (int r = 0; r < 2; r++) {
            cudaSetDevice(r);
            CHECK(ncclAllReduce(d[r], d[r], 2, ncclFloat, ncclSum, q.c[r], q.st[r]) ==
                  (k ? ncclSuccess : ncclInProgress));
            if (!k) CHECK(settle(q.c[r], 5, NULL) == ncclSuccess);
        }
    for (int r = 0; made && r < 2; r++) CHECK(!drains(q.st[r], 0.3) && settle(q.c[r], 0.1, NULL) == ncclSuccess);
    end(&q, 1);
    setenv("CUDACPU_NCCL_FAULT", "error:1:1", 1);
    made = make_settled(&q, 2);
    unsetenv("CUDACPU_NCCL_FAULT");
    CHECK(made);
    for (int r = 0; made && r < 2; r++) {
        cudaSetDevice(r);
        CHECK(ncclAllReduce(d[r], d[r], 2, ncclFloat, ncclSum, q.c[r], q.st[r]) == ncclInProgress);
    }
    if (made) {
        CHECK(drains(q.st[1], 2) && settle(q.c[1], 5, NULL) == ncclRemoteError);
        CHECK(!drains(q.st[0], 0.3) && settle(q.c[0], 1, NULL) == ncclSuccess);
    }
    end(&q, 1);
    setenv("CUDACPU_NCCL_FAULT", "init:1", 1);
    made = make(&q, 2, NULL);
    unsetenv("CUDACPU_NCCL_FAULT");
    CHECK(made);
    for (int r = 0; made && r < 2; r++) CHECK(settle(q.c[r], 0.3, NULL) == ncclInProgress);
    end(&q, 1);
    for (int r = 0; r < 2; r++) { cudaSetDevice(r); cudaFree(d[r]); }
}

// Ranks as threads (as processes would): each makes its rank outside a
// group, waits for the set-up, runs 50 allreduces, finalizes and destroys.
typedef struct { ncclUniqueId id; int rank, ok; } rank_job;
static void *rank_main(void *p) {
    rank_job *j = (rank_job *)p;
    ncclComm_t c = NULL;
    ncclConfig_t cfg = nonblocking();
    cudaStream_t st;
    float *d = NULL, h[64];
    cudaSetDevice(j->rank);
    j->ok = cudaStreamCreate(&st) == cudaSuccess && cudaMalloc((void **)&d, sizeof h) == cudaSuccess &&
            ncclCommInitRankConfig(&c, 2, j->id, j->rank, &cfg) == ncclInProgress && settle(c, 5, NULL) == ncclSuccess;
    for (int k = 0; j->ok && k < 50; k++) {
        for (int i = 0; i < 64; i++) h[i] = (float)(k + i + j->rank);
        cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
        ncclResult_t r = ncclAllReduce(d, d, 64, ncclFloat, ncclSum, c, st);
        j->ok = (r == ncclSuccess || (r == ncclInProgress && settle(c, 5, NULL) == ncclSuccess)) &&
                cudaStreamSynchronize(st) == cudaSuccess;
        cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
        for (int i = 0; i < 64; i++) j->ok &= h[i] == (float)(2 * (k + i) + 1);
    }
    j->ok = j->ok && ncclCommFinalize(c) == ncclInProgress && settle(c, 5, NULL) == ncclSuccess &&
            ncclCommDestroy(c) == ncclSuccess;
    cudaFree(d);
    cudaStreamDestroy(st);
    return NULL;
}
static void test_ranks_as_threads(void) {
    rank_job j[2];
    pthread_t t[2];
    REQUIRE(ncclGetUniqueId(&j[0].id) == ncclSuccess);
    for (int r = 0; r < 2; r++) {
        j[r].id = j[0].id;
        j[r].rank = r;
        j[r].ok = 0;
        pthread_create(&t[r], NULL, rank_main, &j[r]);
    }
    for (int r = 0; r < 2; r++) { pthread_join(t[r], NULL); CHECK(j[r].ok); }
}

// ---- the backend against the faults ----------------------------------------------------------
// rank c->rank's allreduce of 16 floats (rank + 1 each) on device c->rank,
// from its own thread, as wd_train's ranks do
typedef struct { wd_comm *c; wd_status st; float got; double took; char err[1024]; } coll_job;
static void *allreduce_main(void *p) {
    coll_job *j = (coll_job *)p;
    float h[16], *d = NULL;
    for (int i = 0; i < 16; i++) h[i] = (float)(j->c->rank + 1);
    d = dev_floats(j->c->rank, h, 16);
    double t0 = now_s();
    j->st = d ? j->c->ops->allreduce_sum(j->c, d, 16) : WD_ERR_DEVICE;
    j->took = now_s() - t0;
    snprintf(j->err, sizeof j->err, "%s", j->st ? wd_last_error() : "");
    if (d && !j->st) cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    j->got = h[15];
    cudaFree(d);
    return NULL;
}
static void allreduce_both(wd_comm **c, coll_job *j) {
    pthread_t t[2];
    for (int r = 0; r < 2; r++) {
        memset(&j[r], 0, sizeof j[r]);
        j[r].c = c[r];
        pthread_create(&t[r], NULL, allreduce_main, &j[r]);
    }
    for (int r = 0; r < 2; r++) {
        pthread_join(t[r], NULL);
        printf("  rank %d: %s after %.2f s%s%s\n", r, wd_status_string(j[r].st), j[r].took, j[r].st ? ": " : "",
               j[r].err);
    }
}
// destroys both ranks: every wait bounded, the streams drained (no collective left waiting)
static void destroy_both(wd_comm **c) {
    double t0 = now_s();
    for (int r = 0; r < 2; r++) wd_comm_nccl_destroy(c[r]);
    printf("  torn down in %.2f s\n", now_s() - t0);
    CHECK(now_s() - t0 < 3);
}

// The backend's 2 ranks (wd_comm_nccl_create_all) with fault `fault` and
// timeout `timeout` (both read when a communicator is made)
static wd_status make_faulty(wd_comm **c, const char *fault, const char *timeout) {
    setenv("CUDACPU_NCCL_FAULT", fault, 1);
    setenv("WD_COMM_TIMEOUT", timeout, 1);
    wd_status st = wd_comm_nccl_create_all(2, NULL, c);
    unsetenv("CUDACPU_NCCL_FAULT");
    setenv("WD_COMM_TIMEOUT", "1", 1);
    return st;
}
// A peer hangs in the third collective (the warm-up is the first): the second
// sums right; in the third both ranks end with WD_ERR_ABORTED after the
// timeout (3 s), one naming WD_COMM_TIMEOUT, the other stopped by its abort.
static void test_backend_peer_hangs(void) {
    wd_comm *c[2];
    REQUIRE_OK(make_faulty(c, "hang:1:3", "3"));
    coll_job j[2];
    allreduce_both(c, j);
    for (int r = 0; r < 2; r++) CHECK(j[r].st == WD_OK && j[r].got == 3);
    allreduce_both(c, j);
    // the rank that timed out waited the whole 3 s; the other, stopped by its
    // abort, started its collective a little later, so it may have waited less
    int timed = strstr(j[0].err, "WD_COMM_TIMEOUT") ? 0 : 1;
    CHECK(strstr(j[timed].err, "WD_COMM_TIMEOUT") && j[timed].took >= 3);
    for (int r = 0; r < 2; r++) CHECK(j[r].st == WD_ERR_ABORTED && j[r].took >= 2.5 && j[r].took < 6);
    destroy_both(c);
}
// A remote error in rank 1's second collective: it fails naming NCCL's
// error, rank 0 is stopped by the group's abort long before the timeout (20 s).
static void test_backend_remote_error(void) {
    wd_comm *c[2];
    REQUIRE_OK(make_faulty(c, "error:1:2", "20"));
    coll_job j[2];
    allreduce_both(c, j);
    CHECK(j[1].st == WD_ERR_ABORTED && strstr(j[1].err, "a collective failed in NCCL: remote process exited"));
    CHECK(j[0].st == WD_ERR_ABORTED && strstr(j[0].err, "stopped because rank 1"));
    for (int r = 0; r < 2; r++) CHECK(j[r].took < 3);
    destroy_both(c);
}
// A set-up that never completes (rank 1 never joins): wd_comm_nccl_create_all
// fails after the timeout (1 s), naming it, and leaves nothing behind.
static void test_backend_init_never_completes(void) {
    wd_comm *c[2] = {NULL, NULL};
    double t0 = now_s();
    wd_status st = make_faulty(c, "init:1", "1");
    printf("  %s after %.2f s: %s\n", wd_status_string(st), now_s() - t0, wd_last_error());
    CHECK(st == WD_ERR_ABORTED && strstr(wd_last_error(), "NCCL set-up") &&
          strstr(wd_last_error(), "not done after 1 s"));
    CHECK(now_s() - t0 < 3 && !c[0] && !c[1]);
}
// Ranks as processes would make them (wd_comm_nccl_unique_id, then
// wd_comm_nccl_init_rank on each rank's thread; no abort reaches the other
// rank): the host allgather (sizes per rank) and a barrier; then, rank 0
// hanging in its barrier (collective 4: the warm-up, the allgather's two, the
// barrier), each rank's own timeout (3 s) ends it.
typedef struct { const char *id; int rank; wd_comm *c; wd_status st[3]; char err[1024]; } proc_job;
static void *proc_main(void *p) {
    proc_job *j = (proc_job *)p;
    j->st[0] = wd_comm_nccl_init_rank(j->id, j->rank, 2, j->rank, &j->c);
    if (j->st[0]) return NULL;
    char mine[40];
    memset(mine, 'a' + j->rank, sizeof mine);
    const void *all[2];
    size_t sizes[2];
    j->st[1] = j->c->ops->allgather(j->c, mine, 10 + 30 * (size_t)j->rank, all, sizes);
    if (!j->st[1] &&
        (sizes[0] != 10 || sizes[1] != 40 || memcmp(all[0], "aaaaaaaaaa", 10) || ((const char *)all[1])[39] != 'b'))
        j->st[1] = WD_ERR_INTERNAL;
    j->st[2] = j->c->ops->barrier(j->c);
    snprintf(j->err, sizeof j->err, "%s", j->st[2] ? wd_last_error() : "");
    return NULL;
}
// Both ranks' jobs, each on a thread of its own as in a process of its own, run to their end.
static void run_procs(proc_job *j, const char *id, void *(*fn)(void *)) {
    pthread_t t[2];
    for (int r = 0; r < 2; r++) {
        memset(&j[r], 0, sizeof j[r]);
        j[r].id = id;
        j[r].rank = r;
        pthread_create(&t[r], NULL, fn, &j[r]);
    }
    for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
}
static void test_backend_ranks_as_processes(void) {
    for (int hang = 0; hang < 2; hang++) {   // a job each
        char id[128];
        proc_job j[2];
        REQUIRE_OK(wd_comm_nccl_unique_id(id, sizeof id));
        if (hang) setenv("CUDACPU_NCCL_FAULT", "hang:0:4", 1);
        setenv("WD_COMM_TIMEOUT", hang ? "3" : "30", 1);
        double t0 = now_s();
        run_procs(j, id, proc_main);
        unsetenv("CUDACPU_NCCL_FAULT");
        setenv("WD_COMM_TIMEOUT", "1", 1);
        double dt = now_s() - t0;
        for (int r = 0; r < 2; r++) {
            printf("  %s, rank %d: %s, %s, %s%s%s\n", hang ? "a hanging barrier" : "clean", r,
                   wd_status_string(j[r].st[0]), wd_status_string(j[r].st[1]), wd_status_string(j[r].st[2]),
                   j[r].err[0] ? ": " : "", j[r].err);
            CHECK(!j[r].st[0] && !j[r].st[1] && j[r].st[2] == (hang ? WD_ERR_ABORTED : WD_OK));
            if (hang) CHECK(strstr(j[r].err, "WD_COMM_TIMEOUT") != NULL);
        }
        CHECK(dt < (hang ? 7 : 30));
        double t1 = now_s();
        for (int r = 0; r < 2; r++) wd_comm_nccl_destroy(j[r].c);
        CHECK(now_s() - t1 < 3);
    }
}

// The host allgather with a peer that never finishes it (ranks as processes:
// no group abort reaches the other rank): rank 1 hangs in the allgather's
// first collective (the counts), then in its second (the data); each rank
// ends with WD_ERR_ABORTED within its WD_COMM_TIMEOUT (2 s). (Without
// wdc_nccl_wait before the copies to pageable host memory, the copy blocked
// the host until the allgather ended: never.)
static void *proc_allgather(void *p) {
    proc_job *j = (proc_job *)p;
    j->st[0] = wd_comm_nccl_init_rank(j->id, j->rank, 2, j->rank, &j->c);
    if (j->st[0]) return NULL;
    const void *all[2];
    j->st[1] = j->c->ops->allgather(j->c, "abc", 3, all, NULL);
    snprintf(j->err, sizeof j->err, "%s", j->st[1] ? wd_last_error() : "");
    __atomic_store_n(&j->st[2], 1, __ATOMIC_RELEASE);   // done
    return NULL;
}
static void test_backend_allgather_peer_hangs(void) {
    for (int k = 2; k <= 3; k++) {
        char id[128], fault[32];
        proc_job j[2];
        pthread_t t[2];
        REQUIRE_OK(wd_comm_nccl_unique_id(id, sizeof id));
        snprintf(fault, sizeof fault, "hang:1:%d", k);
        setenv("CUDACPU_NCCL_FAULT", fault, 1);
        setenv("WD_COMM_TIMEOUT", "2", 1);
        double t0 = now_s();
        for (int r = 0; r < 2; r++) {
            memset(&j[r], 0, sizeof j[r]);
            j[r].id = id;
            j[r].rank = r;
            pthread_create(&t[r], NULL, proc_allgather, &j[r]);
        }
        while (now_s() - t0 < 20 && !(__atomic_load_n(&j[0].st[2], __ATOMIC_ACQUIRE) &&
                                      __atomic_load_n(&j[1].st[2], __ATOMIC_ACQUIRE)))
            usleep(10000);
        if (!j[0].st[2] || !j[1].st[2]) {   // blocked for good: nothing can be torn down
            printf("FAIL %s: the allgather (%s) still blocks after 20 s\n", __func__, fault);
            fflush(stdout);
            _exit(1);
        }
        for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
        unsetenv("CUDACPU_NCCL_FAULT");
        setenv("WD_COMM_TIMEOUT", "1", 1);
        double dt = now_s() - t0;
        for (int r = 0; r < 2; r++) {
            printf("  %s, rank %d: %s, %s after %.2f s%s%s\n", fault, r, wd_status_string(j[r].st[0]),
                   wd_status_string(j[r].st[1]), dt, j[r].err[0] ? ": " : "", j[r].err);
            CHECK(!j[r].st[0] && j[r].st[1] == WD_ERR_ABORTED && strstr(j[r].err, "WD_COMM_TIMEOUT"));
        }
        CHECK(dt >= 2 && dt < 6);
        double t1 = now_s();
        for (int r = 0; r < 2; r++) wd_comm_nccl_destroy(j[r].c);
        CHECK(now_s() - t1 < 3);
    }
}

// A communicator's destroy after a failure keeps that failure's message
// (the first error wins, wd_error_hold): rank 0 enqueued an allreduce that
// rank 1 never joins, so rank 0's finalize does not end within
// WD_COMM_TIMEOUT (1 s) and the destroy aborts it; that failure of the
// clean-up leaves wd_last_error() as it was. (Without the hold in
// wd_comm_nccl_destroy the message became "NCCL finalize: ...".)
static void *proc_init(void *p) {
    proc_job *j = (proc_job *)p;
    j->st[0] = wd_comm_nccl_init_rank(j->id, j->rank, 2, j->rank, &j->c);
    return NULL;
}
static void test_backend_destroy_keeps_the_error(void) {
    char id[128];
    proc_job j[2];
    REQUIRE_OK(wd_comm_nccl_unique_id(id, sizeof id));
    setenv("WD_COMM_TIMEOUT", "1", 1);
    run_procs(j, id, proc_init);
    if (j[0].st[0] || j[1].st[0]) { wd_comm_nccl_destroy(j[0].c); wd_comm_nccl_destroy(j[1].c); }
    REQUIRE(!j[0].st[0] && !j[1].st[0]);
    float *buf = NULL;
    cudaStream_t s = NULL;
    CHECK(cudaSetDevice(0) == cudaSuccess && cudaMalloc((void **)&buf, sizeof(float)) == cudaSuccess &&
          cudaStreamCreate(&s) == cudaSuccess);
    if (buf && s) CHECK_OK(j[0].c->ops->stream_allreduce_sum(j[0].c, buf, 1, s));   // rank 1 never joins it
    wd_set_last_error("the application's failure");
    double t0 = now_s();
    wd_comm_nccl_destroy(j[0].c);   // its finalize waits 1 s, then aborts
    printf("  rank 0 destroyed in %.2f s; the last error: %s\n", now_s() - t0, wd_last_error());
    CHECK(strcmp(wd_last_error(), "the application's failure") == 0);
    wd_comm_nccl_destroy(j[1].c);
    if (s) cudaStreamSynchronize(s), cudaStreamDestroy(s);
    if (buf) cudaFree(buf);
}

// wd_train on 2 emulated devices over NCCL (wd_train makes the ranks'
// communicator: wd_comm_nccl_create_all) with rank 1 hanging in its 16th
// collective, past the start-up and part way through the 30 steps (each
// step has two): wd_train ends with WD_ERR_ABORTED naming the timeout (3 s)
// within seconds of it, its teardown included (the abort released the
// collectives that waited, so the ranks' streams drained), the model short
// of its 30 steps.
static void test_backend_train_peer_hangs(void) {
    char data[300];
    snprintf(data, sizeof data, "%s/hang-train.wdr", TMP);
    REQUIRE_OK(tl_gen(data, 8192, 0, 7, 100, 256));
    wd_model *m = tl_criteo_model(WD_ADAGRAD, data);
    REQUIRE(m);
    const char *files[1] = {data};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = 256; td.max_steps = 30; td.no_shuffle = 1;
    td.device = WD_DEVICE_CUDA; td.devices = 2;
    setenv("CUDACPU_NCCL_FAULT", "hang:1:16", 1);
    setenv("WD_COMM_TIMEOUT", "3", 1);
    double t0 = now_s();
    wd_status st = wd_train(m, &td, NULL);
    double dt = now_s() - t0;
    unsetenv("CUDACPU_NCCL_FAULT");
    setenv("WD_COMM_TIMEOUT", "1", 1);
    printf("  %s after %.2f s, at step %lld: %s\n", wd_status_string(st), dt, (long long)m->step, wd_last_error());
    CHECK(st == WD_ERR_ABORTED && (strstr(wd_last_error(), "WD_COMM_TIMEOUT") || strstr(wd_last_error(), "timeout")));
    CHECK(dt >= 3 && dt < 20 && m->step > 0 && m->step < 30);
    wd_model_destroy(m);
}

// examples/multi_gpu.c, unchanged, its ranks threads of this process (the
// library's ranks are threads): rank 0 makes the unique id and writes the
// bootstrap file, rank 1 reads it, each trains its shard on its emulated
// device (rank % 2), rank 0 writes the checkpoint, which must load with the
// steps trained: 128 samples in blocks of 16; wd_train's default batch
// halves from 4096 down to its least, 32, for want of 100 steps: 4 steps
// (the example's default model, MLP 1024-512-256, costs seconds a step here).
#define main multi_gpu_main
#include "../../examples/multi_gpu.c"
#undef main
typedef struct { char rank[12], *argv[6]; int rc; } example_job;
static void *example_main(void *p) {
    example_job *j = (example_job *)p;
    j->rc = multi_gpu_main(6, j->argv);
    return NULL;
}
static void test_multi_gpu_example(void) {
    char data[300], boot[300], out[300];
    snprintf(data, sizeof data, "%s/mg-train.wdr", TMP);
    snprintf(boot, sizeof boot, "%s/mg-boot", TMP);
    snprintf(out, sizeof out, "%s/mg-out.wdm", TMP);
    unlink(boot);
    unlink(out);
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = data; g.rows = 128; g.seed = 5; g.max_card = 1000; g.block_samples = 16;
    REQUIRE_OK(wd_gen(&g, NULL));
    example_job j[2];
    pthread_t t[2];
    setenv("WD_COMM_TIMEOUT", "60", 1);   // an emulated step may take seconds (the others' 1 s is for their faults)
    double t0 = now_s();
    for (int r = 0; r < 2; r++) {
        snprintf(j[r].rank, sizeof j[r].rank, "%d", r);
        char *argv[6] = {"multi_gpu", j[r].rank, "2", boot, data, out};
        memcpy(j[r].argv, argv, sizeof argv);
        pthread_create(&t[r], NULL, example_main, &j[r]);
    }
    for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
    setenv("WD_COMM_TIMEOUT", "1", 1);
    printf("  ranks ended %d and %d after %.2f s\n", j[0].rc, j[1].rc, now_s() - t0);
    CHECK(j[0].rc == 0 && j[1].rc == 0);
    wd_model *m = NULL;
    int64_t ep = -1, bt = -1, step = -1;
    CHECK_OK(wd_model_load(out, &m));
    if (m) wd_model_position(m, &ep, &bt, &step);
    printf("  rank 0's checkpoint: epoch %lld, step %lld\n", (long long)ep, (long long)step);
    CHECK(step == 4);
    wd_model_destroy(m);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    unsetenv("CUDACPU_NCCL_POLLS");   // the default, 3 (test_set_up counts them)
    setenv("WD_COMM_TIMEOUT", "1", 1);   // the backend's (test_backend_*)
    const char *lib = getenv("WD_NCCL_LIB");   // the backend's: this library, the one linked in
    if (!lib || !*lib) setenv("WD_NCCL_LIB", "build/libnccl_cpu.so", 1);
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) printf("  %d emulated devices: CUDACPU_DEVICES=2 is needed\n", devices);
    CHECK(devices >= 2);
    if (tl_fails) return test_summary("test_nccl_cpu");
    RUN(test_set_up);
    RUN(test_collectives);
    RUN(test_order_across_streams);
    RUN(test_mismatch);
    RUN(test_abort_releases);
    RUN(test_faults);
    RUN(test_ranks_as_threads);
    RUN(test_backend_peer_hangs);
    RUN(test_backend_remote_error);
    RUN(test_backend_init_never_completes);
    RUN(test_backend_ranks_as_processes);
    RUN(test_backend_allgather_peer_hangs);
    RUN(test_backend_destroy_keeps_the_error);
    RUN(test_backend_train_peer_hangs);
    RUN(test_multi_gpu_example);
    return test_summary("test_nccl_cpu");
}
