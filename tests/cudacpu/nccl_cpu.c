// nccl_cpu.c - NCCL for the emulated device (tests only): build/libnccl_cpu.so,
// loaded by widedeep_cuda.cu through WD_NCCL_LIB. Its ranks are threads of
// one process: the ranks made with one unique id meet in a clique; a
// collective is a host function on the caller's stream (cudaLaunchHostFunc),
// so it runs in stream order on the emulated device's executor, and there it
// waits for its peers' same collective, the last of them moving the data
// (device memory of the emulated device is this process's memory). It uses
// the public CUDA runtime API only (the program provides it: the test binary
// exports the emulator's symbols with -rdynamic) and NCCL's own nccl.h for
// the types, so the backend sees NCCL's ABI.
//
// What it implements is what the backend calls (the 12 symbols of
// widedeep_cuda.cu's wdc_nccl_api), with NCCL's rules for nonblocking
// communicators enforced, each breach printed on stderr and answered with an
// error code (never silently accepted):
//  - ncclCommInitRankConfig: nonblocking only (config.blocking = 0); answers
//    ncclInProgress; inside ncclGroupStart/End the rank joins its clique at
//    the group's end; the set-up completes once every rank joined, and then
//    ncclCommGetAsyncError still answers ncclInProgress CUDACPU_NCCL_POLLS
//    times (default 3); two ranks on one device fail it (ncclInvalidUsage).
//  - ncclAllReduce (ncclFloat, ncclSum; in place or not) and ncclAllGather
//    (any type), matched across ranks by their order on the communicator:
//    as NCCL does, a communicator's collectives run one after another
//    whatever streams they were issued on (each stream waits, by an event, for
//    the communicator's previous collective). A mismatch of the peers' calls
//    (kind, count, type) is an error on every rank. A communicator's first
//    collective outside a group (NCCL >= 2.22 connects there) and every group
//    of collectives answer ncclInProgress for CUDACPU_NCCL_POLLS polls; a call
//    on a communicator still in progress, finalized or in error is refused.
//  - ncclCommFinalize: ncclInProgress until every collective issued on the
//    communicator ran (then the polls); ncclCommDestroy frees (after waiting
//    for them if not finalized); ncclCommAbort frees and releases its
//    collective that waits (and those queued behind it: they end without
//    moving data). A peer's abort does not release the others (as over NVLink,
//    where nobody notices a vanished peer): they wait until their own abort.
//  - Handles are checked: a call on a communicator destroyed, aborted or never
//    made is refused (ncclInvalidArgument), not a use after free.
// Fault injection (tests/cudacpu/README.md, "NCCL"): CUDACPU_NCCL_FAULT, read
// when a rank is made: hang:R:K (rank R's K-th collective, counting from 1,
// never ends until the rank is aborted; its peers wait for it), error:R:K
// (rank R's K-th collective fails with ncclRemoteError, reported by
// ncclCommGetAsyncError; its peers wait for it), init:R (rank R never joins:
// no rank's set-up completes).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <nccl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NC_MAGIC 0x6e63636cu   // "nccl": a live communicator
static const char nc_id_tag[16] = "nccl_cpu uid v1";

typedef enum { NC_NONE, NC_HANG, NC_ERROR, NC_INIT } nc_fault_kind;
typedef enum { NC_ALLREDUCE, NC_ALLGATHER } nc_kind;

typedef struct nc_op {   // one collective of one rank
    struct ncclComm *c;
    long seq;               // 1, 2, ...: its place on the communicator
    nc_kind kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    cudaStream_t stream;    // where it runs (enqueued at the call or at the group's end)
    int aborted;            // its rank was aborted before the group's end
    struct nc_op *next;     // the calling thread's group list
} nc_op;

typedef struct nc_clique nc_clique;
struct ncclComm {
    unsigned magic;
    nc_clique *q;
    ncclUniqueId id;
    int rank, nranks, device;
    int joined;             // counted in its clique (a group's end, or the call outside a group)
    int polls;              // ncclCommGetAsyncError's in-progress answers left (set-up, connect, group, finalize)
    int connected;          // a collective was issued (the first one outside a group "connects")
    int finalizing, aborted;
    ncclResult_t error;     // the asynchronous error (sticky)
    long issued, done;      // collectives enqueued, and run
    int refs;               // the user's handle and each enqueued collective
    cudaEvent_t last;       // recorded after each collective: the next one, on any stream, waits for it
    nc_fault_kind fault;    // CUDACPU_NCCL_FAULT, when it names this rank
    long fault_k;           // the collective it strikes (hang, error)
    struct ncclComm *next_live, *next_init;   // the live list; the calling thread's group list
};
struct nc_clique {
    ncclUniqueId id;
    int nranks, joined, users;
    int dead;               // a member aborted or failed: no collective completes any more
    long round;             // collectives completed
    int arrived;            // members waiting in the round in progress
    nc_op **at;             // [nranks]: each arrived member's collective
    struct ncclComm **member;
    nc_clique *next;
};

// one lock for everything (tests: a few ranks); waits and wake-ups on one condition
static pthread_mutex_t nc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nc_cv = PTHREAD_COND_INITIALIZER;
static struct ncclComm *nc_live;
static nc_clique *nc_cliques;
static __thread int nc_depth;              // ncclGroupStart nesting of this thread
static __thread nc_op *nc_group_ops;       // its collectives issued in the group, in order
static __thread struct ncclComm *nc_group_inits;

static void nc_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void nc_say(const char *fmt, ...) {
    char b[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    fprintf(stderr, "nccl_cpu: %s\n", b);
}
static int nc_polls(void) {
    const char *v = getenv("CUDACPU_NCCL_POLLS");
    int n = v && *v ? atoi(v) : 3;
    return n < 0 ? 0 : n;
}
// CUDACPU_NCCL_FAULT for a new communicator (its rank set)
static void nc_fault_read(struct ncclComm *c) {
    const char *v = getenv("CUDACPU_NCCL_FAULT");
    c->fault = NC_NONE;
    if (!v || !*v) return;
    int r = -1;
    long k = 0;
    if (sscanf(v, "hang:%d:%ld", &r, &k) == 2 && k > 0) c->fault = NC_HANG;
    else if (sscanf(v, "error:%d:%ld", &r, &k) == 2 && k > 0) c->fault = NC_ERROR;
    else if (sscanf(v, "init:%d", &r) == 1) c->fault = NC_INIT;
    else { nc_say("CUDACPU_NCCL_FAULT=%s: expected hang:RANK:K, error:RANK:K or init:RANK (ignored)", v); return; }
    if (r != c->rank) c->fault = NC_NONE;
    c->fault_k = k;
}
// the live communicator of handle c, or NULL (said on stderr); under nc_mu
static struct ncclComm *nc_find(struct ncclComm *c, const char *call) {
    for (struct ncclComm *x = nc_live; x; x = x->next_live)
        if (x == c && x->magic == NC_MAGIC) return x;
    nc_say("%s on %p: not a live communicator (never made, destroyed or aborted)", call, (void *)c);
    return NULL;
}
static void nc_unlink_live(struct ncclComm *c) {
    for (struct ncclComm **p = &nc_live; *p; p = &(*p)->next_live)
        if (*p == c) { *p = c->next_live; return; }
}
// drops one reference (under nc_mu); the last frees the communicator and its
// clique membership
static void nc_release(struct ncclComm *c) {
    if (--c->refs > 0) return;
    nc_clique *q = c->q;
    if (q) {   // a rank gone before the clique filled no longer counts: the others' set-up never completes
        q->member[c->rank] = NULL;
        if (q->joined < q->nranks) q->joined--;
    }
    if (q && --q->users == 0) {
        for (nc_clique **p = &nc_cliques; *p; p = &(*p)->next)
            if (*p == q) { *p = q->next; break; }
        free(q->at); free(q->member); free(q);
    }
    c->magic = 0;
    free(c);
}

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (nccl_cpu: a CUDA call failed; see stderr)";
    case ncclSystemError: return "unhandled system error (nccl_cpu: out of memory)";
    case ncclInternalError: return "internal error (nccl_cpu)";
    case ncclInvalidArgument: return "invalid argument (nccl_cpu said why on stderr)";
    case ncclInvalidUsage: return "invalid usage (nccl_cpu said why on stderr)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static unsigned long long counter;
    if (!id) return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    memcpy(id->internal, nc_id_tag, sizeof nc_id_tag);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long v[3] = {(unsigned long long)getpid(), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED),
                               (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec};
    memcpy(id->internal + sizeof nc_id_tag, v, sizeof v);
    return ncclSuccess;
}

// rank c joins its clique (under nc_mu): the set-up completes when the last joins
static void nc_join(struct ncclComm *c) {
    if (c->fault == NC_INIT) {
        nc_say("rank %d never joins its clique (CUDACPU_NCCL_FAULT=init:%d)", c->rank, c->rank);
        return;
    }
    nc_clique *q = nc_cliques;
    while (q && memcmp(&q->id, &c->id, sizeof q->id) != 0) q = q->next;
    if (!q) {
        q = (nc_clique *)calloc(1, sizeof *q);
        if (q) {
            q->at = (nc_op **)calloc((size_t)c->nranks, sizeof *q->at);
            q->member = (struct ncclComm **)calloc((size_t)c->nranks, sizeof *q->member);
        }
        if (!q || !q->at || !q->member) {
            if (q) { free(q->at); free(q->member); free(q); }
            c->error = ncclSystemError;
            return;
        }
        q->id = c->id; q->nranks = c->nranks;
        q->next = nc_cliques; nc_cliques = q;
    }
    if (q->nranks != c->nranks || q->member[c->rank]) {
        nc_say("rank %d of %d: its clique %s", c->rank, c->nranks,
               q->nranks != c->nranks ? "has another number of ranks" : "has this rank already");
        c->error = ncclInvalidUsage;
        return;
    }
    q->member[c->rank] = c;
    q->users++;
    c->q = q;
    c->joined = 1;
    if (++q->joined < q->nranks) return;
    for (int i = 0; i < q->nranks; i++) {
        q->member[i]->polls = nc_polls();
        for (int j = 0; j < i; j++)
            if (q->member[j]->device == q->member[i]->device) {
                nc_say("ranks %d and %d are on one device (%d): NCCL refuses a clique with a device twice", j, i,
                       q->member[i]->device);
                for (int k = 0; k < q->nranks; k++) q->member[k]->error = ncclInvalidUsage;
                q->dead = 1;
            }
    }
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config) {
    if (!out) { nc_say("ncclCommInitRankConfig: the communicator pointer is NULL"); return ncclInvalidArgument; }
    *out = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        nc_say("ncclCommInitRankConfig: rank %d of %d", rank, nranks);
        return ncclInvalidArgument;
    }
    if (memcmp(id.internal, nc_id_tag, sizeof nc_id_tag) != 0) {
        nc_say("ncclCommInitRankConfig: a unique id not made by ncclGetUniqueId");
        return ncclInvalidArgument;
    }
    if (!config || config->magic != 0xcafebeef || config->size != sizeof(ncclConfig_t)) {
        nc_say("ncclCommInitRankConfig: %s", config
                                                 ? "a config not made by NCCL_CONFIG_INITIALIZER"
                                                 : "no config (blocking): nccl_cpu has nonblocking communicators only");
        return ncclInvalidArgument;
    }
    if (config->blocking != 0) {
        nc_say("ncclCommInitRankConfig: blocking=%d: nccl_cpu has nonblocking communicators only", config->blocking);
        return ncclInvalidArgument;
    }
    struct ncclComm *c = (struct ncclComm *)calloc(1, sizeof *c);
    if (!c) return ncclSystemError;
    c->magic = NC_MAGIC; c->id = id; c->rank = rank; c->nranks = nranks; c->refs = 1;
    cudaError_t e = cudaGetDevice(&c->device);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->last, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        nc_say("ncclCommInitRankConfig: %s", cudaGetErrorString(e));
        free(c);
        return ncclUnhandledCudaError;
    }
    nc_fault_read(c);
    pthread_mutex_lock(&nc_mu);
    c->next_live = nc_live; nc_live = c;
    if (nc_depth > 0) { c->next_init = nc_group_inits; nc_group_inits = c; c->refs++; }   // the group's list holds it
    else nc_join(c);
    pthread_mutex_unlock(&nc_mu);
    *out = c;
    return ncclInProgress;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
    if (!state) return ncclInvalidArgument;
    pthread_mutex_lock(&nc_mu);
    struct ncclComm *c = nc_find(comm, "ncclCommGetAsyncError");
    ncclResult_t r = ncclSuccess;
    if (!c) r = ncclInvalidArgument;
    else if (c->error) *state = c->error;
    else if (!c->joined || c->q->joined < c->q->nranks || (c->finalizing && c->done < c->issued))
        *state = ncclInProgress;
    else if (c->polls > 0) { c->polls--; *state = ncclInProgress; }
    else *state = ncclSuccess;
    pthread_mutex_unlock(&nc_mu);
    return r;
}

// ---- collectives ------------------------------------------------------------------------------
static size_t nc_type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}
static const char *nc_kind_name(nc_kind k) { return k == NC_ALLREDUCE ? "ncclAllReduce" : "ncclAllGather"; }

// The round's data movement, by its last member (under nc_mu): every rank's
// result from every rank's input; 0, or -1 when the members' calls differ.
static int nc_complete(nc_clique *q) {
    nc_op *a = q->at[0];
    for (int r = 1; r < q->nranks; r++) {
        nc_op *b = q->at[r];
        if (b->kind != a->kind || b->count != a->count || b->type != a->type) {
            nc_say("collective %ld differs between ranks: rank 0 %s of %zu (type %d), rank %d %s of %zu (type %d)",
                   a->seq, nc_kind_name(a->kind), a->count, (int)a->type, r, nc_kind_name(b->kind), b->count,
                   (int)b->type);
            return -1;
        }
    }
    size_t es = nc_type_size(a->type), n = a->count, bytes = es * n * (a->kind == NC_ALLGATHER ? (size_t)q->nranks : 1);
    if (!bytes) return 0;
    char *tmp = (char *)malloc(bytes);
    if (!tmp) return -1;
    if (a->kind == NC_ALLREDUCE) {   // ncclFloat, ncclSum: in rank order, the same bits on every rank
        float *s = (float *)tmp;
        memcpy(s, a->send, bytes);
        for (int r = 1; r < q->nranks; r++) {
            const float *x = (const float *)q->at[r]->send;
            for (size_t i = 0; i < n; i++) s[i] += x[i];
        }
    } else
        for (int r = 0; r < q->nranks; r++) memcpy(tmp + es * n * (size_t)r, q->at[r]->send, es * n);
    for (int r = 0; r < q->nranks; r++) memcpy(q->at[r]->recv, tmp, bytes);
    free(tmp);
    return 0;
}

// One wait of a collective for its peers' (under nc_mu). Under the
// emulator's lazy streams (CUDACPU_STREAMS=lazy: an operation runs only once
// the host waits for it) a peer's collective would run only when its host
// thread waits for it, which may be never (one thread waiting for its ranks
// one after another): the peers' issued collectives are demanded here, as a
// GPU runs them anyway (a query of the event recorded after each
// communicator's last collective; cleared under nc_mu before it is destroyed).
static void nc_wait_peers(nc_clique *q, struct ncclComm *c) {
    static int lazy = -1;
    if (lazy < 0) { const char *v = getenv("CUDACPU_STREAMS"); lazy = v && !strcmp(v, "lazy"); }
    if (!lazy) { pthread_cond_wait(&nc_cv, &nc_mu); return; }
    for (int r = 0; r < q->nranks; r++) {
        struct ncclComm *p = q->member[r];
        if (p && p != c && p->last && p->done < p->issued) cudaEventQuery(p->last);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 1000000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&nc_cv, &nc_mu, &ts);
}

// A collective on its stream (the executor's thread): meets its peers', or
// ends at once, moving nothing, on an aborted or failed communicator.
static void CUDART_CB nc_run(void *arg) {
    nc_op *op = (nc_op *)arg;
    struct ncclComm *c = op->c;
    pthread_mutex_lock(&nc_mu);
    nc_clique *q = c->q;
    if (c->fault == NC_HANG && op->seq == c->fault_k) {
        nc_say("rank %d hangs in its collective %ld until it is aborted (CUDACPU_NCCL_FAULT)", c->rank, op->seq);
        while (!c->aborted) pthread_cond_wait(&nc_cv, &nc_mu);
    } else if (c->fault == NC_ERROR && op->seq == c->fault_k && !c->aborted && !c->error) {
        nc_say("rank %d: its collective %ld fails with a remote error (CUDACPU_NCCL_FAULT)", c->rank, op->seq);
        c->error = ncclRemoteError;
        q->dead = 1;
    } else if (!c->aborted && !c->error) {
        long round = q->round;
        q->at[c->rank] = op;
        if (++q->arrived == q->nranks && !q->dead) {
            if (nc_complete(q))
                for (int r = 0; r < q->nranks; r++) q->member[r]->error = ncclInvalidUsage;   // all here
            q->arrived = 0;
            q->round++;
            pthread_cond_broadcast(&nc_cv);
        }
        while (q->round == round && !c->aborted) nc_wait_peers(q, c);
    }
    c->done++;
    pthread_cond_broadcast(&nc_cv);   // a finalize or destroy waiting for it
    nc_release(c);
    pthread_mutex_unlock(&nc_mu);
    free(op);
}

// Enqueues op on its stream behind the communicator's previous collective
// (outside nc_mu: CUDA calls). A CUDA error is said, and is the
// communicator's error from then on (ncclUnhandledCudaError).
static ncclResult_t nc_enqueue(nc_op *op) {
    struct ncclComm *c = op->c;   // op is the host function's once launched (it may have run and freed it)
    cudaStream_t st = op->stream;
    const char *call = nc_kind_name(op->kind);
    int dev = -1, launched = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && dev != c->device) e = cudaSetDevice(c->device);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(st, c->last, 0);
    if (e == cudaSuccess) launched = (e = cudaLaunchHostFunc(st, nc_run, op)) == cudaSuccess;
    if (e == cudaSuccess) e = cudaEventRecord(c->last, st);
    if (dev >= 0 && dev != c->device) cudaSetDevice(dev);
    if (e == cudaSuccess) return ncclSuccess;
    nc_say("%s on rank %d: enqueueing on the stream: %s", call, c->rank, cudaGetErrorString(e));
    pthread_mutex_lock(&nc_mu);
    c->error = ncclUnhandledCudaError;
    if (!launched) {   // gives back what it took
        c->issued--;
        nc_release(c);
        free(op);
    }
    pthread_mutex_unlock(&nc_mu);
    return ncclUnhandledCudaError;
}

static ncclResult_t nc_collective(nc_kind kind, const void *send, void *recv, size_t count, ncclDataType_t type,
                                  ncclComm_t comm, cudaStream_t stream) {
    const char *call = nc_kind_name(kind);
    if (!nc_type_size(type) || (count && (!send || !recv))) {
        nc_say("%s: type %d, count %zu, buffers %p %p", call, (int)type, count, send, recv);
        return ncclInvalidArgument;
    }
    nc_op *op = (nc_op *)calloc(1, sizeof *op);
    if (!op) return ncclSystemError;
    op->kind = kind; op->send = send; op->recv = recv; op->count = count; op->type = type; op->stream = stream;
    pthread_mutex_lock(&nc_mu);
    struct ncclComm *c = nc_find(comm, call);
    ncclResult_t r = ncclSuccess;
    if (!c) r = ncclInvalidArgument;
    else if (c->error) r = c->error;
    else if (c->finalizing) { nc_say("%s on rank %d after ncclCommFinalize", call, c->rank); r = ncclInvalidUsage; }
    else if (!c->joined || c->q->joined < c->q->nranks || c->polls > 0) {
        nc_say("%s on rank %d while its communicator's last call is in progress (poll ncclCommGetAsyncError until "
               "ncclSuccess first)",
               call, c->rank);
        r = ncclInvalidUsage;
    }
    if (r != ncclSuccess) { pthread_mutex_unlock(&nc_mu); free(op); return r; }
    op->c = c;
    op->seq = ++c->issued;
    c->refs++;
    if (nc_depth > 0) {   // enqueued at the group's end, in the order of the calls
        nc_op **p = &nc_group_ops;
        while (*p) p = &(*p)->next;
        *p = op;
        pthread_mutex_unlock(&nc_mu);
        return ncclSuccess;
    }
    int connect = !c->connected;
    c->connected = 1;
    if (connect) c->polls = nc_polls();
    pthread_mutex_unlock(&nc_mu);
    if ((r = nc_enqueue(op)) != ncclSuccess) return r;
    return connect ? ncclInProgress : ncclSuccess;
}
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    if (type != ncclFloat || op != ncclSum) {
        nc_say("ncclAllReduce: type %d, op %d: nccl_cpu sums ncclFloat only", (int)type, (int)op);
        return ncclInvalidArgument;
    }
    return nc_collective(NC_ALLREDUCE, send, recv, count, type, comm, stream);
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
    return nc_collective(NC_ALLGATHER, send, recv, count, type, comm, stream);
}

// ---- groups ----------------------------------------------------------------------------------
ncclResult_t ncclGroupStart(void) {
    nc_depth++;
    return ncclSuccess;
}
// The outermost end: the group's ranks join their cliques, then its
// collectives are enqueued; ncclInProgress when it held any (every
// communicator is nonblocking).
ncclResult_t ncclGroupEnd(void) {
    if (nc_depth == 0) { nc_say("ncclGroupEnd without ncclGroupStart"); return ncclInvalidUsage; }
    if (--nc_depth > 0) return ncclSuccess;
    pthread_mutex_lock(&nc_mu);
    struct ncclComm *inits = nc_group_inits;
    nc_op *ops = nc_group_ops;
    nc_group_inits = NULL; nc_group_ops = NULL;
    ncclResult_t r = inits || ops ? ncclInProgress : ncclSuccess;
    while (inits) {   // an aborted one never joins
        struct ncclComm *c = inits;
        inits = c->next_init;
        if (!c->aborted) nc_join(c);
        nc_release(c);
    }
    for (nc_op *op = ops; op; op = op->next) {
        op->c->connected = 1;
        op->c->polls = nc_polls();
        op->aborted = op->c->aborted;
    }
    pthread_mutex_unlock(&nc_mu);
    while (ops) {
        nc_op *op = ops;
        ops = op->next;
        if (op->aborted) nc_run(op);   // its rank was aborted in the group: it ends at once
        else if (nc_enqueue(op) != ncclSuccess) r = ncclUnhandledCudaError;
    }
    return r;
}

// ---- teardown --------------------------------------------------------------------------------
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    pthread_mutex_lock(&nc_mu);
    struct ncclComm *c = nc_find(comm, "ncclCommFinalize");
    ncclResult_t r = ncclInProgress;
    if (!c) r = ncclInvalidArgument;
    else if (c->finalizing) { nc_say("ncclCommFinalize twice on rank %d", c->rank); r = ncclInvalidUsage; }
    else { c->finalizing = 1; c->polls = nc_polls(); }
    pthread_mutex_unlock(&nc_mu);
    return r;
}
// The user's handle ends (under nc_mu, c live): no call reaches it any more;
// its collectives still queued hold it until they ran.
static void nc_end_handle(struct ncclComm *c) {
    nc_unlink_live(c);
    c->magic = 0;
    cudaEvent_t ev = c->last;
    c->last = NULL;   // no peer's nc_wait_peers queries it any more
    nc_release(c);
    pthread_mutex_unlock(&nc_mu);
    cudaEventDestroy(ev);   // outside the lock: a CUDA call
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    pthread_mutex_lock(&nc_mu);
    struct ncclComm *c = nc_find(comm, "ncclCommDestroy");
    if (!c) { pthread_mutex_unlock(&nc_mu); return ncclInvalidArgument; }
    while (c->done < c->issued && !c->error)
        pthread_cond_wait(&nc_cv, &nc_mu); // NCCL: destroy finalizes first (blocking)
    nc_end_handle(c);
    return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    pthread_mutex_lock(&nc_mu);
    struct ncclComm *c = nc_find(comm, "ncclCommAbort");
    if (!c) { pthread_mutex_unlock(&nc_mu); return ncclInvalidArgument; }
    c->aborted = 1;
    if (c->q) c->q->dead = 1;
    pthread_cond_broadcast(&nc_cv);   // its collective that waits ends
    nc_end_handle(c);
    return ncclSuccess;
}
