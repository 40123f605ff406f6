// cudart.cpp - the CUDA runtime subset widedeep_cuda.cu, tests/test_gpu.cu and
// an NCCL of host threads call, on emulated devices (CUDACPU_DEVICES, default 1).
// Device memory is host memory (one address space, as with UVA). Streams are
// asynchronous: every stream operation (a grid, a copy, a memset, an event
// record or wait, a host function, a library call, a graph launch) is an
// operation of its device's executor, which runs it once the operation before
// it on its stream and the events it waits for are done, on a pool of worker
// threads (operations of different streams run at the same time, as on a GPU;
// among those ready the greatest stream priority first). CUDACPU_STREAMS:
//   eager   (default) an operation may run as soon as it is ready
//   random  the same, the ready one picked at random (CUDACPU_SEED) and each
//           started after a random pause of up to 200 us
//   lazy    an operation runs only once the host waits for it or for
//           something after it (a synchronize, a query, a blocking copy, a
//           cudaFree): a missing event between streams or a host read of
//           memory before its wait reads what was there before, every time
// Graphs: stream capture records the operations and their dependencies (the
// capturing stream's order, events forking other streams into the capture and
// joining them back; an unjoined stream fails cudaStreamEndCapture); a launch
// runs the nodes in an order the dependencies allow (seeded random under
// CUDACPU_SEED, else capture order) as one operation.
#include "internal.h"
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <stdarg.h>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace cudacpu {
[[noreturn]] void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cudacpu: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    abort();
}
static double now_s() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static std::mutex &rng_mu = *new std::mutex;
unsigned long long seeded_random() {
    static std::mt19937_64 rng((unsigned long long)env_long("CUDACPU_SEED", 0) * 0x2545F4914F6CDD1Dull + 1);
    std::lock_guard<std::mutex> g(rng_mu);
    return rng();
}
void scribble(void *p, size_t n) { memset(p, 0xa5, n); }   // -3e-16 as floats, large negative integers
enum { P_EAGER, P_RANDOM, P_LAZY };
static int policy() {
    static int p = [] {
        const char *s = getenv("CUDACPU_STREAMS");
        if (!s || !*s || !strcmp(s, "eager")) return (int)P_EAGER;
        if (!strcmp(s, "random")) return (int)P_RANDOM;
        if (!strcmp(s, "lazy")) return (int)P_LAZY;
        fatal("CUDACPU_STREAMS=%s: eager, random or lazy", s);
    }();
    return p;
}
static int ndevices() {
    static int n = (int)env_long("CUDACPU_DEVICES", 1);
    return n;
}

// ---- the executor ----------------------------------------------------------------------------
struct op;
typedef std::shared_ptr<op> opp;
struct op {
    std::function<void()> fn;
    const char *what;
    int dev, prio;
    unsigned long long seq;
    std::vector<opp> deps;   // cleared once done
    bool demanded, running, done;
    double t_done;
};
struct device_state {
    std::vector<opp> pending, running;
    int workers, idle;
};
// never destroyed: the workers still wait on them while the program exits
static std::mutex &mu = *new std::mutex;   // every structure of this file
static std::condition_variable &work_cv = *new std::condition_variable, &done_cv = *new std::condition_variable;
static std::vector<device_state> &devs = *new std::vector<device_state>;
static unsigned long long op_seq;
static __thread int cur_dev = -1;   // a host thread's current device; a worker's is its operation's
static __thread cudaError_t last_error;
static int current_device() { return cur_dev < 0 ? 0 : cur_dev; }

static cudaError_t fail(cudaError_t e) {
    last_error = e;
    return e;
}
static bool ready(const op *o) {
    if (!o->demanded) return false;
    for (auto &d : o->deps)
        if (!d->done) return false;
    return true;
}
static void demand(const opp &o) {   // o and everything it waits for (under mu)
    if (o->done || o->demanded) return;
    o->demanded = true;
    for (auto &d : o->deps) demand(d);
}
static void worker(int d);
static void kick(int d) {   // a ready operation gets a worker (under mu)
    device_state &ds = devs[d];
    bool any = false;
    for (auto &o : ds.pending)
        if (ready(o.get())) {
            any = true;
            break;
        }
    if (!any) return;
    if (ds.idle > 0) {
        work_cv.notify_all();
        return;
    }
    if (ds.workers >= (int)env_long("CUDACPU_WORKERS", 32)) return;   // it runs when a worker is free
    ds.workers++;
    std::thread(worker, d).detach();
}
static void kick_all() {
    for (int d = 0; d < (int)devs.size(); d++) kick(d);
}
static void worker(int d) {
    std::unique_lock<std::mutex> lk(mu);
    device_state &ds = devs[d];
    for (;;) {
        size_t best = SIZE_MAX, nready = 0;
        for (size_t i = 0; i < ds.pending.size(); i++) {
            op *o = ds.pending[i].get();
            if (!ready(o)) continue;
            nready++;
            if (policy() == P_RANDOM) {
                if (seeded_random() % nready == 0) best = i;
            } else if (best == SIZE_MAX || o->prio < ds.pending[best]->prio ||
                       (o->prio == ds.pending[best]->prio && o->seq < ds.pending[best]->seq))
                best = i;
        }
        if (best == SIZE_MAX) {
            ds.idle++;
            work_cv.wait(lk);
            ds.idle--;
            continue;
        }
        opp o = ds.pending[best];
        ds.pending.erase(ds.pending.begin() + (long)best);
        o->running = true;
        ds.running.push_back(o);
        if (nready > 1) kick(d);
        lk.unlock();
        cur_dev = d;
        if (policy() == P_RANDOM) usleep((useconds_t)(seeded_random() % 200));
        o->fn();
        lk.lock();
        o->fn = nullptr;
        o->deps.clear();
        o->done = true;
        o->t_done = now_s();
        ds.running.erase(std::find(ds.running.begin(), ds.running.end(), o));
        done_cv.notify_all();
        kick_all();
    }
}
static void wait_done(std::unique_lock<std::mutex> &lk, const opp &o) {
    demand(o);
    kick_all();
    while (!o->done) done_cv.wait(lk);
}
// a query's answer for work not done when asked: it is demanded, and the answer (cudaErrorNotReady, what
// was true when asked) comes once it is done or after 1 ms, so that a host polling in a loop (the backend
// sleeps 20 us between queries) does not take the CPU from the executor that does the work
static cudaError_t not_ready(std::unique_lock<std::mutex> &lk, opp o) {   // (o: a copy, s->last may move on)
    demand(o);
    kick_all();
    done_cv.wait_for(lk, std::chrono::milliseconds(1), [&] { return o->done; });
    return cudaErrorNotReady;
}
static void drain(std::unique_lock<std::mutex> &lk, int d) {   // everything enqueued on device d so far
    std::vector<opp> all(devs[d].pending);
    all.insert(all.end(), devs[d].running.begin(), devs[d].running.end());
    for (auto &o : all) wait_done(lk, o);
}
static void init_devices() {
    static std::once_flag once;
    std::call_once(once, [] { devs.resize((size_t)ndevices()); });
}
}   // namespace cudacpu
using namespace cudacpu;

// ---- streams, events, graphs -----------------------------------------------------------------
struct gnode {
    std::function<void()> fn;
    const char *what;
    std::vector<int> deps;
};
struct CUgraph_st {
    std::vector<gnode> nodes;
};
struct CUgraphExec_st {
    std::vector<gnode> nodes;
};
struct capture {
    CUgraph_st *g;
    std::vector<CUstream_st *> members;   // every stream in the capture, the origin first
    bool broken;
};
struct CUstream_st {
    int dev, prio;
    bool blocking;
    opp last;                // the last operation enqueued
    capture *cap;            // the capture this stream takes part in, or NULL
    std::vector<int> tail;   // its last captured nodes (what the next node depends on)
};
struct CUevent_st {
    bool timing;
    opp rec;        // the operation of its last record outside a capture
    capture *cap;   // recorded in a capture: the nodes it stands for
    std::vector<int> nodes;
};
namespace cudacpu {
static std::vector<CUstream_st> &null_streams = *new std::vector<CUstream_st>;   // each device's legacy stream
static std::vector<CUstream_st *> &blocking_streams =
    *new std::vector<CUstream_st *>;   // made without cudaStreamNonBlocking
static CUstream_st *S(cudaStream_t s) {
    init_devices();
    if (s && s != cudaStreamLegacy && s != cudaStreamPerThread) return (CUstream_st *)s;
    static std::once_flag once;
    std::call_once(once, [] {
        null_streams.resize((size_t)ndevices());
        for (int d = 0; d < ndevices(); d++) null_streams[(size_t)d] = CUstream_st{d, 0, true, nullptr, nullptr, {}};
    });
    return &null_streams[(size_t)current_device()];
}
// an operation on s (under mu); extra: what it waits for besides s's previous operation
static opp add_op(CUstream_st *s, std::function<void()> fn, const char *what, std::vector<opp> extra = {}) {
    opp o = std::make_shared<op>();
    o->fn = std::move(fn);
    o->what = what;
    o->dev = s->dev;
    o->prio = s->prio;
    o->seq = op_seq++;
    o->deps = std::move(extra);
    o->demanded = o->running = o->done = false;
    if (s->last && !s->last->done) o->deps.push_back(s->last);
    // the legacy default stream and the blocking streams wait for each other
    CUstream_st *ns = &null_streams[(size_t)s->dev];
    if (s == ns) {
        for (CUstream_st *b : blocking_streams)
            if (b->dev == s->dev && b->last && !b->last->done) o->deps.push_back(b->last);
    } else if (s->blocking && ns->last && !ns->last->done) o->deps.push_back(ns->last);
    s->last = o;
    devs[(size_t)s->dev].pending.push_back(o);
    if (policy() != P_LAZY) demand(o);
    kick(s->dev);
    return o;
}
static void capture_node(CUstream_st *s, std::function<void()> fn, const char *what) {   // under mu
    CUgraph_st *g = s->cap->g;
    g->nodes.push_back(gnode{std::move(fn), what, s->tail});
    s->tail.assign(1, (int)g->nodes.size() - 1);
}
cudaError_t enqueue(cudaStream_t st, std::function<void()> fn, const char *what) {
    CUstream_st *s = S(st);
    std::lock_guard<std::mutex> g(mu);
    if (s->cap) capture_node(s, std::move(fn), what);
    else add_op(s, std::move(fn), what);
    return cudaSuccess;
}
void launch(dim3 grid, dim3 block, cudaStream_t st, const char *name, std::function<void()> body) {
    cudaError_t e = check_config(grid, block);
    if (e != cudaSuccess) {
        fail(e);
        return;
    }
    enqueue(
        st, [grid, block, name, body]() { run_grid(grid, block, body, name); }, name);
}
}   // namespace cudacpu

// ---- memory ----------------------------------------------------------------------------------
namespace cudacpu {
enum { M_DEVICE, M_PINNED };
struct alloc {
    size_t n;
    int kind, dev;
    bool mapped;
};
static std::map<uintptr_t, alloc> &allocs = *new std::map<uintptr_t, alloc>;
static size_t device_bytes;
static const alloc *find_alloc(const void *p, uintptr_t *base) {   // under mu
    auto it = allocs.upper_bound((uintptr_t)p);
    if (it == allocs.begin()) return NULL;
    --it;
    if ((uintptr_t)p >= it->first + (it->second.n ? it->second.n : 1)) return NULL;
    if (base) *base = it->first;
    return &it->second;
}
static int kind_of(const void *p) {   // M_DEVICE, M_PINNED or -1 (pageable host memory)
    std::lock_guard<std::mutex> g(mu);
    const alloc *a = find_alloc(p, NULL);
    return a ? a->kind : -1;
}
}   // namespace cudacpu

extern "C" {
cudaError_t cudaGetDeviceCount(int *n) {
    *n = ndevices();
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) {   // the emulated driver is as new as the headers compiled against
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
    if (d < 0 || d >= ndevices()) return fail(cudaErrorInvalidDevice);
    init_devices();
    cur_dev = d;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
    *d = current_device();
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return last_error; }
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
    }
}
const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureUnjoined: return "capture unjoined";
    case cudaErrorStreamCaptureIsolation:
        return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    default: return "cudacpu: an error the emulator does not name";
    }
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (d < 0 || d >= ndevices()) return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "cudacpu emulated device %d", d);
    p->major = 9;
    p->minor = 0;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->multiProcessorCount = (int)env_long("CUDACPU_SMS", 132);
    p->totalGlobalMem = (size_t)16 << 30;
    p->sharedMemPerBlock = 48 << 10;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = INT32_MAX;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d) {
    if (d < 0 || d >= ndevices()) return fail(cudaErrorInvalidDevice);
    switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = (int)env_long("CUDACPU_SMS", 132); return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; return cudaSuccess;
    case cudaDevAttrWarpSize: *v = 32; return cudaSuccess;
    default: return fail(cudaErrorInvalidValue);
    }
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *f, int bs, size_t sh,
                                                                   unsigned fl) {
    (void)f;
    (void)sh;
    (void)fl;
    if (bs <= 0 || bs > 1024) return fail(cudaErrorInvalidValue);
    *n = 2048 / bs < 32 ? 2048 / bs
                        : 32;   // sm_90: 2048 threads and 32 blocks per multiprocessor (no registers modelled)
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *f, int bs, size_t sh) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, f, bs, sh, 0);
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    init_devices();
    std::unique_lock<std::mutex> lk(mu);
    drain(lk, current_device());
    return cudaSuccess;
}

// device memory: host memory filled with CUDACPU_POISON bytes (default 0xff:
// NaN for floats, -1 for integers), so a read of memory nobody wrote shows
cudaError_t cudaMemGetInfo(size_t *fr, size_t *total) {
    std::lock_guard<std::mutex> g(mu);
    *total = (size_t)16 << 30;
    *fr = *total > device_bytes ? *total - device_bytes : 0;
    return cudaSuccess;
}
static cudaError_t new_alloc(void **p, size_t n, int kind, bool mapped) {
    init_devices();
    *p = NULL;
    if (posix_memalign(p, 256, n ? n : 1)) return fail(cudaErrorMemoryAllocation);
    memset(*p, kind == M_DEVICE ? (int)env_long("CUDACPU_POISON", 0xff) : 0, n);
    std::lock_guard<std::mutex> g(mu);
    allocs[(uintptr_t)*p] = alloc{n, kind, current_device(), mapped};
    if (kind == M_DEVICE) device_bytes += n;
    return cudaSuccess;
}
// cudaFree and cudaFreeHost wait for the device's work (the device's, all devices') first, as CUDA's do
static cudaError_t free_alloc(void *p, int kind) {
    if (!p) return cudaSuccess;
    init_devices();
    std::unique_lock<std::mutex> lk(mu);
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end() || it->second.kind != kind) return fail(cudaErrorInvalidValue);
    if (kind == M_DEVICE) drain(lk, it->second.dev);
    else
        for (int d = 0; d < (int)devs.size(); d++) drain(lk, d);
    it = allocs.find((uintptr_t)p);
    if (it == allocs.end()) return fail(cudaErrorInvalidValue);   // freed by another thread meanwhile
    if (kind == M_DEVICE) device_bytes -= it->second.n;
    allocs.erase(it);
    lk.unlock();
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) { return new_alloc(p, n, M_DEVICE, false); }
cudaError_t cudaFree(void *p) { return free_alloc(p, M_DEVICE); }
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned fl) {
    return new_alloc(p, n, M_PINNED, (fl & cudaHostAllocMapped) != 0);
}
cudaError_t cudaMallocHost(void **p, size_t n) { return new_alloc(p, n, M_PINNED, false); }
cudaError_t cudaFreeHost(void *p) { return free_alloc(p, M_PINNED); }
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned fl) {
    std::lock_guard<std::mutex> g(mu);
    const alloc *a = find_alloc(h, NULL);
    if (fl || !a || a->kind != M_PINNED || !a->mapped) return fail(cudaErrorInvalidValue);
    *d = h;
    return cudaSuccess;
}
}   // extern "C"

namespace cudacpu {
// a copy's sides must be what its kind says (cudaMemcpyDefault: anything)
static bool kind_ok(const void *dst, const void *src, enum cudaMemcpyKind k) {
    int d = kind_of(dst), s = kind_of(src);
    switch (k) {
    case cudaMemcpyHostToDevice: return d == M_DEVICE && s != M_DEVICE;
    case cudaMemcpyDeviceToHost: return s == M_DEVICE && d != M_DEVICE;
    case cudaMemcpyDeviceToDevice: return d == M_DEVICE && s == M_DEVICE;
    case cudaMemcpyHostToHost: return d != M_DEVICE && s != M_DEVICE;
    case cudaMemcpyDefault: return true;
    }
    return false;
}
// rows x width bytes; pageable host memory as CUDA treats it: a copy from it is
// staged before the call returns, a copy to it completes before the call returns
static cudaError_t copy2d(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k,
                          cudaStream_t st, bool sync, const char *what) {
    if (w > dp || w > sp || !kind_ok(dst, src, k)) return fail(cudaErrorInvalidValue);
    CUstream_st *s = S(st);
    bool from_pageable = kind_of(src) < 0, to_pageable = kind_of(dst) < 0;
    if (s->cap && (from_pageable || to_pageable)) return fail(cudaErrorStreamCaptureUnsupported);
    std::shared_ptr<std::vector<char>> staged;
    if (from_pageable) {
        staged = std::make_shared<std::vector<char>>(w * h);
        for (size_t r = 0; r < h; r++) memcpy(staged->data() + r * w, (const char *)src + r * sp, w);
        src = staged->data();
        sp = w;
    }
    auto fn = [=]() {
        for (size_t r = 0; r < h; r++) memmove((char *)dst + r * dp, (const char *)src + r * sp, w);
        (void)staged;
    };
    std::unique_lock<std::mutex> lk(mu);
    if (s->cap) {
        capture_node(s, fn, what);
        return cudaSuccess;
    }
    opp o = add_op(s, fn, what);
    if (sync || to_pageable) wait_done(lk, o);
    return cudaSuccess;
}
static cudaError_t set(void *p, int v, size_t n, cudaStream_t st, bool sync) {
    if (kind_of(p) != M_DEVICE) return fail(cudaErrorInvalidValue);
    CUstream_st *s = S(st);
    auto fn = [=]() { memset(p, v, n); };
    std::unique_lock<std::mutex> lk(mu);
    if (s->cap) {
        capture_node(s, fn, "cudaMemsetAsync");
        return cudaSuccess;
    }
    opp o = add_op(s, fn, "cudaMemset");
    if (sync) wait_done(lk, o);
    return cudaSuccess;
}
}   // namespace cudacpu

extern "C" {
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
    return copy2d(dst, n, src, n, n, 1, k, st, false, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k) {
    return copy2d(dst, n, src, n, n, 1, k, 0, true, "cudaMemcpy");
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind k, cudaStream_t st) {
    return copy2d(dst, dp, src, sp, w, h, k, st, false, "cudaMemcpy2DAsync");
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st) { return set(p, v, n, st, false); }
cudaError_t cudaMemset(void *p, int v, size_t n) { return set(p, v, n, 0, true); }

// ---- streams ----
static cudaError_t new_stream(cudaStream_t *st, unsigned fl, int prio) {
    init_devices();
    S(0);   // the null streams exist
    if (prio > 0) prio = 0;
    if (prio < -5) prio = -5;
    CUstream_st *s = new CUstream_st{current_device(), prio, !(fl & cudaStreamNonBlocking), nullptr, nullptr, {}};
    std::lock_guard<std::mutex> g(mu);
    if (s->blocking) blocking_streams.push_back(s);
    *st = (cudaStream_t)s;
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return new_stream(s, 0, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned fl) { return new_stream(s, fl, 0); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned fl, int prio) { return new_stream(s, fl, prio); }
cudaError_t cudaStreamGetPriority(cudaStream_t st, int *prio) {
    *prio = S(st)->prio;
    return cudaSuccess;
}
// destroying a stream with work in it: the work still runs (CUDA's rule), so under lazy it is demanded now
cudaError_t cudaStreamDestroy(cudaStream_t st) {
    if (!st) return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *s = S(st);
    std::lock_guard<std::mutex> g(mu);
    if (s->cap) return fail(cudaErrorIllegalState);
    if (s->last) {
        demand(s->last);
        kick_all();
    }
    blocking_streams.erase(std::remove(blocking_streams.begin(), blocking_streams.end(), s), blocking_streams.end());
    delete s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t st) {
    CUstream_st *s = S(st);
    std::unique_lock<std::mutex> lk(mu);
    if (s->cap) {
        s->cap->broken = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (s->last) wait_done(lk, s->last);
    return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t st) {
    CUstream_st *s = S(st);
    std::unique_lock<std::mutex> lk(mu);
    if (s->cap) {
        s->cap->broken = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (!s->last || s->last->done) return cudaSuccess;
    return not_ready(lk, s->last);
}
cudaError_t cudaLaunchHostFunc(cudaStream_t st, cudaHostFn_t fn, void *data) {
    return enqueue(
        st, [fn, data]() { fn(data); }, "cudaLaunchHostFunc");
}

// ---- events ----
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned fl) {
    *e = (cudaEvent_t) new CUevent_st{!(fl & cudaEventDisableTiming), nullptr, nullptr, {}};
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    std::lock_guard<std::mutex> g(mu);
    delete (CUevent_st *)e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t st) {
    CUevent_st *e = (CUevent_st *)ev;
    CUstream_st *s = S(st);
    std::lock_guard<std::mutex> g(mu);
    if (s->cap) {
        e->cap = s->cap;
        e->nodes = s->tail;
        e->rec = nullptr;
        return cudaSuccess;
    }
    e->cap = nullptr;
    e->nodes.clear();
    e->rec = add_op(
        s, [] {}, "cudaEventRecord");
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t ev, unsigned fl) {
    (void)fl;
    CUevent_st *e = (CUevent_st *)ev;
    CUstream_st *s = S(st);
    std::lock_guard<std::mutex> g(mu);
    if (e->cap) {   // an event of a capture: s joins it (a fork) or depends on the nodes (a join)
        if (!s->cap) {
            s->cap = e->cap;
            s->tail.clear();
            e->cap->members.push_back(s);
        } else if (s->cap != e->cap) return fail(cudaErrorStreamCaptureIsolation);
        for (int n : e->nodes)
            if (std::find(s->tail.begin(), s->tail.end(), n) == s->tail.end()) s->tail.push_back(n);
        return cudaSuccess;
    }
    if (s->cap) {
        if (e->rec && !e->rec->done)
            return fail(cudaErrorStreamCaptureIsolation);   // an external dependency: not emulated
        return cudaSuccess;
    }
    if (e->rec && !e->rec->done) add_op(s, [] {}, "cudaStreamWaitEvent", {e->rec});
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t ev) {
    CUevent_st *e = (CUevent_st *)ev;
    std::unique_lock<std::mutex> lk(mu);
    if (e->cap) return fail(cudaErrorCapturedEvent);
    if (!e->rec || e->rec->done) return cudaSuccess;
    return not_ready(lk, e->rec);
}
cudaError_t cudaEventSynchronize(cudaEvent_t ev) {
    CUevent_st *e = (CUevent_st *)ev;
    std::unique_lock<std::mutex> lk(mu);
    if (e->cap) return fail(cudaErrorCapturedEvent);
    if (e->rec) wait_done(lk, e->rec);
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    CUevent_st *x = (CUevent_st *)a, *y = (CUevent_st *)b;
    std::lock_guard<std::mutex> g(mu);
    if (!x->timing || !y->timing || !x->rec || !y->rec) return fail(cudaErrorInvalidResourceHandle);
    if (!x->rec->done || !y->rec->done) return fail(cudaErrorNotReady);
    *ms = (float)(1e3 * (y->rec->t_done - x->rec->t_done));
    return cudaSuccess;
}

// ---- graphs ----
cudaError_t cudaStreamBeginCapture(cudaStream_t st, enum cudaStreamCaptureMode m) {
    (void)m;
    CUstream_st *s = S(st);
    std::lock_guard<std::mutex> g(mu);
    if (s->cap) return fail(cudaErrorIllegalState);
    if (s == &null_streams[(size_t)s->dev]) return fail(cudaErrorStreamCaptureUnsupported);
    s->cap = new capture{new CUgraph_st, {s}, false};
    s->tail.clear();
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t st, enum cudaStreamCaptureStatus *cs) {
    CUstream_st *s = S(st);
    std::lock_guard<std::mutex> g(mu);
    *cs = s->cap ? (s->cap->broken ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive)
                 : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
// every stream forked into the capture must have joined the origin back: each of
// its last nodes is the origin's last node or one the origin's depend on
cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t *out) {
    CUstream_st *s = S(st);
    std::lock_guard<std::mutex> g(mu);
    *out = NULL;
    if (!s->cap || s->cap->members[0] != s) return fail(cudaErrorIllegalState);
    capture *c = s->cap;
    std::vector<char> before(c->g->nodes.size(), 0);
    std::vector<int> todo(s->tail);
    while (!todo.empty()) {
        int n = todo.back();
        todo.pop_back();
        if (before[(size_t)n]) continue;
        before[(size_t)n] = 1;
        for (int d : c->g->nodes[(size_t)n].deps) todo.push_back(d);
    }
    bool unjoined = false;
    for (CUstream_st *m : c->members) {
        for (int n : m->tail) unjoined |= !before[(size_t)n];
        m->cap = nullptr;
        m->tail.clear();
    }
    bool broken = c->broken;
    CUgraph_st *gr = c->g;
    delete c;
    if (unjoined || broken) {
        delete gr;
        return fail(broken ? cudaErrorStreamCaptureInvalidated : cudaErrorStreamCaptureUnjoined);
    }
    *out = (cudaGraph_t)gr;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long fl) {
    (void)fl;
    *x = (cudaGraphExec_t) new CUgraphExec_st{((CUgraph_st *)g)->nodes};
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete (CUgraph_st *)g;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
    std::lock_guard<std::mutex> g(mu);   // (a launch in flight holds its own copy of the nodes)
    delete (CUgraphExec_st *)x;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t st) {
    auto nodes = std::make_shared<std::vector<gnode>>(((CUgraphExec_st *)x)->nodes);
    return enqueue(
        st,
        [nodes]() {
            // a topological order: among the nodes whose dependencies ran, the first (or, seeded, any)
            size_t n = nodes->size();
            std::vector<char> ran(n, 0);
            for (size_t done = 0; done < n; done++) {
                std::vector<size_t> ready;
                for (size_t i = 0; i < n; i++) {
                    if (ran[i]) continue;
                    bool ok = true;
                    for (int d : (*nodes)[i].deps) ok &= ran[(size_t)d] != 0;
                    if (ok) ready.push_back(i);
                }
                size_t pick = ready[getenv("CUDACPU_SEED") ? seeded_random() % ready.size() : 0];
                (*nodes)[pick].fn();
                ran[pick] = 1;
            }
        },
        "cudaGraphLaunch");
}
}   // extern "C"
