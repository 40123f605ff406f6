// fiber.cpp - a grid's blocks, one after another, each block's GPU threads as
// fibers on the calling (executor) thread, switched at __syncthreads and
// __shfl_sync only; the order they run in is the schedule (CUDACPU_SCHED):
//   fifo    every ready thread in turn (the default)
//   random  any ready thread, and the blocks in any order (CUDACPU_SEED)
//   warp    PCT-like: a random priority per warp, redrawn at each barrier; the
//           highest-priority warp runs until it waits, so one warp runs far
//           ahead of the others and a missing barrier between warps shows
// A thread gets a fiber (a stack) of its own only if it is started while
// another waits: when a thread ends and the schedule's next one never ran,
// that one runs on the same stack, without a switch, so a block whose threads
// never wait is a loop; a waiting thread switches to the schedule's next
// itself. The order is the schedule's either way.
// Checks (compute-sanitizer's synccheck): a barrier not reached by every
// thread of the block (a thread exited, or the block deadlocked), a shuffle
// whose mask leaves out the caller or names a lane that exited, lanes
// disagreeing on a mask. Shared arrays (CUDACPU_SHARED): each block's are
// 0xff bytes (NaN) before any write, with ASan red zones around each.
#include "cudacpu.h"
#include "internal.h"
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <vector>
#if defined(__SANITIZE_ADDRESS__)
#define CUDACPU_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define CUDACPU_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif

// x86-64 SysV: push the callee-saved registers on the old stack, switch stacks, pop them.
asm(R"(
.text
.globl cudacpu_switch
.type cudacpu_switch,@function
cudacpu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size cudacpu_switch,.-cudacpu_switch
)");
extern "C" void cudacpu_switch(void **save, void *to);

// the code that runs for each GPU thread (the schedule, the switches, barriers, shuffles) is not instrumented
// itself: the kernels it runs are
#define HOT __attribute__((no_sanitize("address", "undefined")))

namespace cudacpu {
__thread thread_ctx *cur;

namespace {
enum { F_READY, F_RUNNING, F_BAR, F_WARP, F_DONE };
struct fiber {
    thread_ctx ctx;
    int idx, state;
    unsigned shfl_seq;
    char *stk;
    size_t stk_size;
    void *sp;
    void *fake;   // ASan's fake stack while switched out
    void *tsan;
};
struct warp_state {
    unsigned exited;   // lanes that exited or do not exist (a partial warp)
    unsigned mask[2];
    int arrived[2], nwait[2];
    int waiting[2][32];
    uint64_t val[2][32];
};
constexpr int MAX_THREADS = 1024, MAX_WARPS = MAX_THREADS / 32;   // a block's, at most (check_config)
constexpr int MAX_ARRAYS = 16;                                      // __shared__ arrays of a kernel
// a block being run; one per executor thread, reused (no allocation while fibers run; plain arrays, whose
// accesses the HOT functions below make without a call)
struct block_state {
    int n, done, nbar;
    fiber f[MAX_THREADS];
    warp_state w[MAX_WARPS];
    int ring[MAX_THREADS], bar_wait[MAX_THREADS];   // ring: the ready threads (head, count; a power of two long)
    size_t head, count;
    const std::function<void()> *body;
    const char *kname;
    uint3 bid;
    void *sched_sp, *sched_fake, *sched_tsan;
    const void *sched_bottom;
    size_t sched_size;
    std::mt19937_64 *rng;
    int sched;
    uint32_t prio[MAX_WARPS];                              // CUDACPU_SCHED=warp: per warp
    struct {
        const void *site;
        void *p;
    } arrays[MAX_ARRAYS];   // CUDACPU_SHARED: site -> this block's copy
    int narrays;
    char *region;
    size_t region_used;
};
__thread block_state *blk;
__thread fiber *curf;
constexpr size_t REGION = 64 << 10;   // shared memory per block, at most

size_t stack_bytes() {
    static size_t b = (size_t)env_long("CUDACPU_STACK_KB",
#ifdef CUDACPU_ASAN
                                       256
#else
                                       64
#endif
                                       ) *
                      1024;
    return b;
}
// this executor thread's free fiber stacks, a guard page below each (a kernel's
// stack overflow faults); a fiber takes one when it starts and gives it back
// when the last thread it ran ends (fiber_main). Between blocks a thread keeps
// at most KEEP_STACKS and gives the rest to every thread's pool (stacks_keep):
// per-thread pools alone held each thread's own peak, up to blockDim stacks a
// thread, two mappings each, and 31 executor threads of the random policy
// reached 18,411 stacks (37,245 mappings; vm.max_map_count is 65,530: one CI
// run's part 2 ended in ENOMEM). (A fiber's stack is pushed before it switches
// away, so only its own thread may take it then: the shared pool gets stacks
// between blocks alone.)
__thread std::vector<char *> *free_stacks;
std::mutex shared_mu;
std::vector<char *> shared_stacks;
constexpr size_t KEEP_STACKS = 64;
void stacks_keep() {
    if (!free_stacks || free_stacks->size() <= KEEP_STACKS) return;
    std::lock_guard<std::mutex> lk(shared_mu);
    shared_stacks.insert(shared_stacks.end(), free_stacks->begin() + KEEP_STACKS, free_stacks->end());
    free_stacks->resize(KEEP_STACKS);
}
char *stack_take() {
    if (!free_stacks) free_stacks = new std::vector<char *>;
    if (!free_stacks->empty()) {
        char *p = free_stacks->back();
        free_stacks->pop_back();
        return p;
    }
    {
        std::lock_guard<std::mutex> lk(shared_mu);
        if (!shared_stacks.empty()) {
            char *p = shared_stacks.back();
            shared_stacks.pop_back();
            return p;
        }
    }
    size_t sz = stack_bytes(), page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = (char *)mmap(NULL, sz + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fatal("out of memory for fiber stacks");
    mprotect(p, page, PROT_NONE);
    return p + page;
}

inline void asan_start(void **fake, const void *bottom, size_t size) {
#ifdef CUDACPU_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)fake, (void)bottom, (void)size;
#endif
}
inline void asan_finish(void *fake, const void **bottom, size_t *size) {
#ifdef CUDACPU_ASAN
    __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
    (void)fake, (void)bottom, (void)size;
#endif
}
inline void tsan_switch(void *to) {
#ifdef CUDACPU_TSAN
    __tsan_switch_to_fiber(to, 0);   // a switch synchronizes (tsan.cpp's harness makes none do)
#else
    (void)to;
#endif
}

void where(char *out, size_t n) {
    fiber *f = curf;
    snprintf(out, n, "%s block (%u,%u,%u) thread (%u,%u,%u) (warp %d lane %d)", blk->kname, blk->bid.x, blk->bid.y,
             blk->bid.z, f->ctx.tid.x, f->ctx.tid.y, f->ctx.tid.z, f->ctx.warp, f->ctx.lane);
}
[[noreturn]] void deadlock() {
    block_state &b = *blk;
    int warp = 0;
    for (int q = 0; q < b.n; q++) warp += b.f[q].state == F_WARP;
    fatal("synccheck: %s block (%u,%u,%u) deadlocked: %d threads wait at __syncthreads, %d in __shfl_sync, %d exited",
          b.kname, b.bid.x, b.bid.y, b.bid.z, b.nbar, warp, b.done);
}
// the schedule's next thread, taken off the ring of ready ones (there is one): fifo the first, random any,
// warp the highest-priority warp's first
HOT int pick() {
    block_state &b = *blk;
    size_t q = 0;
#define RING(q) b.ring[(b.head + (q)) % MAX_THREADS]
    if (b.sched == 2) {
        for (size_t r = 1; r < b.count; r++)
            if (b.prio[b.f[RING(r)].ctx.warp] > b.prio[b.f[RING(q)].ctx.warp]) q = r;
    } else if (b.sched == 1) q = (size_t)((*b.rng)() % b.count);
    int i = RING(q);
    RING(q) = RING(0);
#undef RING
    b.head = (b.head + 1) % MAX_THREADS;
    b.count--;
    return i;
}
void fiber_main();
// the running context (fiber f, or the scheduler where f is NULL) gives the CPU to thread g, which
// either goes on where it waited or starts on a stack of its own; returns when f runs again
HOT void switch_to(fiber *f, fiber &g, bool dying) {
    if (!g.sp) {
        g.stk = stack_take();
        void **sp = (void **)(((uintptr_t)(g.stk + g.stk_size)) & ~(uintptr_t)15);
        *--sp = NULL;                               // the entry's return-address slot (keeps the ABI's alignment)
        *--sp = (void *)fiber_main;                 // cudacpu_switch's ret goes here
        for (int r = 0; r < 6; r++) *--sp = NULL;   // rbp rbx r12-r15
        g.sp = sp;
#ifdef CUDACPU_TSAN
        g.tsan = __tsan_create_fiber(0);
#endif
    }
    g.state = F_RUNNING;
    curf = &g;
    cur = &g.ctx;
    void **fake = f ? &f->fake : &blk->sched_fake;
    asan_start(dying ? NULL : fake, g.stk, g.stk_size);
    tsan_switch(g.tsan);
    cudacpu_switch(f ? &f->sp : &blk->sched_sp, g.sp);
    asan_finish(*fake, NULL, NULL);
}
// the running thread waits at a barrier or a shuffle: the schedule's next ready thread runs (the
// same one may go on at once); returns when it runs again
HOT void wait_turn() {
    fiber *f = curf;
    if (blk->count == 0) deadlock();
    fiber &g = blk->f[pick()];
    if (&g == f) f->state = F_RUNNING;
    else switch_to(f, g, false);
}
// a block's threads run in here: each fiber starts with a thread; when a thread ends and the schedule's
// next is one that never ran, that one runs on here, on the same stack, so that a block whose threads
// never wait is a loop without a switch; otherwise the next goes on where it waited, or (the block
// ended) the scheduler does
HOT void fiber_main() {
    const void *bottom = NULL;
    size_t size = 0;
    asan_finish(NULL, &bottom, &size);
    if (!blk->sched_bottom) blk->sched_bottom = bottom, blk->sched_size = size;   // the first comes from it
    char at[200];
    for (;;) {
        (*blk->body)();
        fiber *f = curf;
        f->state = F_DONE;
        blk->done++;
        warp_state &w = blk->w[f->ctx.warp];
        w.exited |= 1u << f->ctx.lane;
        for (int p = 0; p < 2; p++)
            if (w.nwait[p] && (w.mask[p] >> f->ctx.lane & 1)) {
                where(at, sizeof at);
                fatal("synccheck: %s exited while its warp waits in a __shfl_sync whose mask 0x%08x names it", at,
                      w.mask[p]);
            }
        if (blk->nbar) {
            where(at, sizeof at);
            fatal("synccheck: %s exited while %d threads of its block wait at __syncthreads (a divergent barrier)",
                  at, blk->nbar);
        }
        if (blk->done == blk->n) break;
        if (blk->count == 0) deadlock();
        fiber &g = blk->f[pick()];
        if (g.sp) {   // a waiting thread goes on; this stack is free once this one has switched away
            free_stacks->push_back(f->stk);
            switch_to(f, g, true);
            fatal("internal: a finished fiber was resumed");
        }
        g.stk = f->stk;
#ifdef CUDACPU_TSAN
        g.tsan = __tsan_create_fiber(0);   // a TSan fiber of its own all the same: a GPU thread of its own
        tsan_switch(g.tsan);
#endif
        g.state = F_RUNNING;
        curf = &g;
        cur = &g.ctx;
    }
    free_stacks->push_back(curf->stk);
    asan_start(NULL, blk->sched_bottom, blk->sched_size);
    tsan_switch(blk->sched_tsan);
    cudacpu_switch(&curf->sp, blk->sched_sp);
    fatal("internal: a finished fiber was resumed");
}
HOT void make_ready(int i) {
    blk->f[i].state = F_READY;
    blk->ring[(blk->head + blk->count++) % MAX_THREADS] = i;
}
// CUDACPU_SCHED: 0 fifo, 1 random, 2 warp
int sched_kind() {
    static int k = [] {
        const char *s = getenv("CUDACPU_SCHED");
        if (!s || !*s || !strcmp(s, "fifo")) return 0;
        if (!strcmp(s, "random")) return 1;
        if (!strcmp(s, "warp")) return 2;
        fatal("CUDACPU_SCHED=%s: fifo, random or warp", s);
    }();
    return k;
}
std::atomic<unsigned long long> launches{0};
}   // namespace

HOT void block_barrier() {
    fiber *f = curf;
    if (!f) fatal("__syncthreads outside a kernel");
    char at[200];
    if (blk->done) {
        where(at, sizeof at);
        fatal("synccheck: %s reached __syncthreads after %d threads of its block exited (a divergent barrier)", at,
              blk->done);
    }
    f->state = F_BAR;
    blk->bar_wait[blk->nbar++] = f->idx;
    if (blk->nbar == blk->n) {   // the last one: every waiter goes on
        for (int q = 0; q < blk->n; q++) make_ready(blk->bar_wait[q]);
        blk->nbar = 0;
        if (blk->sched == 2)
            for (int q = 0; q < (blk->n + 31) / 32; q++) blk->prio[q] = (uint32_t)(*blk->rng)();
    }
    wait_turn();
}

HOT uint64_t warp_exchange(unsigned mask, uint64_t v, int src, int width) {
    fiber *f = curf;
    if (!f) fatal("__shfl_sync outside a kernel");
    char at[200];
    int lane = f->ctx.lane;
    warp_state &w = blk->w[f->ctx.warp];
    int p = f->shfl_seq++ & 1;
    if (w.arrived[p] == 0) w.mask[p] = mask;
    if (!(mask >> lane & 1) || width != 32 || w.mask[p] != mask || (mask & w.exited)) {
        where(at, sizeof at);
        if (!(mask >> lane & 1))
            fatal("synccheck: %s calls __shfl_sync with mask 0x%08x, which leaves out its own lane", at, mask);
        if (width != 32) fatal("%s: __shfl_sync of width %d is not emulated", at, width);
        if (w.mask[p] != mask)
            fatal("synccheck: %s: lanes disagree on the __shfl_sync mask (0x%08x, 0x%08x)", at, w.mask[p], mask);
        fatal("synccheck: %s calls __shfl_sync with mask 0x%08x, but lanes 0x%08x of its warp have exited", at, mask,
              mask & w.exited);
    }
    w.val[p][lane] = v;
    w.waiting[p][w.nwait[p]++] = f->idx;
    f->state = F_WARP;
    if (++w.arrived[p] == __builtin_popcount(mask)) {
        for (int i = 0; i < w.nwait[p]; i++) make_ready(w.waiting[p][i]);
        w.nwait[p] = 0;
    }
    wait_turn();
    uint64_t r = w.val[p][src & 31];
    // the last reader of a phase resets it: a lane at shuffle k+2 (phase p
    // again) cannot arrive before every lane of k+1 arrived, so every lane
    // has read k's values by then
    if (--w.arrived[p] < 0) fatal("internal: warp phase underflow");
    return r;
}

HOT void *shared_array(const void *site, size_t bytes) {
    if (!blk) fatal("a __shared__ array outside a kernel");
    for (int q = 0; q < blk->narrays; q++)
        if (blk->arrays[q].site == site) return blk->arrays[q].p;
    if (blk->narrays == MAX_ARRAYS) fatal("%s: more than %d __shared__ arrays", blk->kname, MAX_ARRAYS);
    // the next piece of the block's region, ending on a 16-byte boundary with a
    // poisoned gap of 64 bytes before the next (ASan: an element past either end faults)
    size_t start = (blk->region_used + 64 + 15) & ~(size_t)15, end = start + ((bytes + 15) & ~(size_t)15);
    if (end + 64 > REGION) fatal("%s: more than %zu bytes of __shared__ arrays", blk->kname, REGION);
    char *p = blk->region + end - bytes;
#ifdef CUDACPU_ASAN
    __asan_unpoison_memory_region(p, bytes);
#endif
    memset(p, 0xff, bytes);   // NaN for floats: a read before any write shows
    blk->region_used = end;
    blk->arrays[blk->narrays++] = {site, p};
    return p;
}

HOT static void run_block(dim3 grid, dim3 block, uint3 bid, const std::function<void()> &body, const char *name,
                      std::mt19937_64 *rng, int sched) {
    static __thread block_state *bs;
    if (!bs) bs = new block_state();
    block_state &b = *bs;
    int n = (int)(block.x * block.y * block.z);
    b.n = n;
    b.done = 0;
    b.body = &body;
    b.kname = name;
    b.bid = bid;
    b.rng = rng;
    b.sched = sched;
    int nw = (n + 31) / 32;
    for (int q = 0; q < nw; q++) {
        int live = n - q * 32;
        b.w[q] = warp_state{};
        b.w[q].exited = live >= 32 ? 0u : ~0u << live;
    }
    b.nbar = 0;
    b.head = b.count = 0;
    if (sched == 2)
        for (int q = 0; q < nw; q++) b.prio[q] = (uint32_t)(*rng)();
    b.narrays = 0;
    if (!b.region) {   // the executor thread's shared memory, poisoned but for the arrays a block uses
        b.region = (char *)malloc(REGION);
        if (!b.region) fatal("out of memory for shared memory");
#ifdef CUDACPU_ASAN
        __asan_poison_memory_region(b.region, REGION);
#endif
    }
    b.region_used = 0;
    b.sched_bottom = NULL;
    b.sched_size = 0;
#ifdef CUDACPU_TSAN
    b.sched_tsan = __tsan_get_current_fiber();
#endif
    block_state *saved_blk = blk;
    fiber *saved_f = curf;
    thread_ctx *saved_cur = cur;
    blk = &b;
    for (int i = 0; i < n; i++) {
        fiber &f = b.f[i];
        f.idx = i;
        f.shfl_seq = 0;
        f.fake = NULL;
        f.ctx.tid =
            uint3{(unsigned)i % block.x, (unsigned)(i / block.x) % block.y, (unsigned)(i / (block.x * block.y))};
        f.ctx.bid = bid;
        f.ctx.bdim = block;
        f.ctx.gdim = grid;
        f.ctx.lane = i % 32;
        f.ctx.warp = i / 32;
        f.stk = NULL;   // a stack when it first runs, unless it runs on a finished one's; TSan's fiber either way
        f.sp = NULL;
        f.stk_size = stack_bytes();
        f.tsan = NULL;
        make_ready(i);
    }
    switch_to(NULL, b.f[pick()], false);   // back when the block's last thread ended
    stacks_keep();
    if (b.done < n) fatal("internal: %s block (%u,%u,%u) left with %d threads running", name, bid.x, bid.y, bid.z,
                          n - b.done);
#ifdef CUDACPU_TSAN
    for (int q = 0; q < n; q++)
        if (b.f[q].tsan) __tsan_destroy_fiber(b.f[q].tsan);
#endif
#ifdef CUDACPU_ASAN
    __asan_poison_memory_region(b.region, REGION);   // the next block's arrays are its own
#endif
    blk = saved_blk;
    curf = saved_f;
    cur = saved_cur;
}

// launch-time checks: what cudaGetLastError reports for a bad configuration
cudaError_t check_config(dim3 g, dim3 b) {
    unsigned long long t = (unsigned long long)b.x * b.y * b.z;
    if (t == 0 || t > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 || g.y > 65535 ||
        g.z > 65535)
        return cudaErrorInvalidConfiguration;
    return cudaSuccess;
}

void run_grid(dim3 grid, dim3 block, const std::function<void()> &body, const char *name) {
    int sched = sched_kind();
    unsigned long long no = launches++;
    std::mt19937_64 rng(env_long("CUDACPU_SEED", 0) * 0x9E3779B97F4A7C15ull + no);
    size_t nb = (size_t)grid.x * grid.y * grid.z;
    std::vector<size_t> order(nb);
    for (size_t i = 0; i < nb; i++) order[i] = i;
    if (sched) std::shuffle(order.begin(), order.end(), rng);   // blocks in any order
    for (size_t o : order) {
        uint3 bid = {(unsigned)(o % grid.x), (unsigned)((o / grid.x) % grid.y),
                     (unsigned)(o / ((size_t)grid.x * grid.y))};
        run_block(grid, block, bid, body, name, &rng, sched);
    }
}
}   // namespace cudacpu

unsigned long long cudacpu_globaltimer() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
void __nanosleep(unsigned ns) {
    struct timespec t = {0, (long)ns};
    nanosleep(&t, NULL);
}
