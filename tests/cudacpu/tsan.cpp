// tsan.cpp - the TSan kernel harness's happens-before (make test-gpu-emu-tsan; README.md, "The checks").
// Kernels, host code and the emulator's runtime are compiled with -fsanitize=thread but for fiber.cpp
// (the GPU threads' switches, barriers and shuffles: no concern of TSan's) and this file, compiled without
// it but with fiber.cpp's TSan fiber hooks on (-D__SANITIZE_THREAD__), and this file is linked with
// -Wl,--wrap for the calls below, so that the only order TSan sees between the GPU threads of a
// block is the order CUDA guarantees:
//   __tsan_switch_to_fiber  every switch without synchronisation: the executor's to a block's first GPU thread,
//                           a GPU thread's to the next (at a barrier or a shuffle), to the executor, and to a
//                           thread that runs on the stack of one that ended, each with a TSan fiber of its own
//                           (fiber.cpp's switches synchronise, which would order a block's threads by the
//                           schedule, hiding every race)
//   __tsan_create_fiber,    TSan's fibers kept for the next block's GPU threads (a TSan fiber's creation
//   __tsan_destroy_fiber    zeroes a large state: made and destroyed for every GPU thread, they cost most
//                           of the run's time)
//   block_barrier           __syncthreads: each thread releases before it waits and acquires after, on a
//                           sync object per barrier parity (a thread can be at most one barrier ahead)
//   shared_array            a block's __shared__ array: its 0xff fill (the initcheck poison) is not a GPU
//                           thread's write
//   run_grid                each GPU thread starts after the kernel's launch (what the executor did before
//                           the grid) and after the GPU threads that ended before it on this executor thread
//                           (their stacks and shared memory are reused: no false races on them; so the
//                           blocks of a grid are ordered, and a race between two is not reported); what
//                           fiber.cpp does once a GPU thread ended (its stack given back) is ordered after
//                           the same for those that ended before; the executor goes on after the grid's
//                           threads (what the host reads after a kernel)
// Not ordered: the threads of a block between barriers (a missing __syncthreads is a race), lanes of a
// warp at a shuffle (a shuffle moves registers, not memory), kernels on other executors.
#include "internal.h"
#include <sanitizer/tsan_interface.h>
#include <vector>

// the first race ends the run (exit 66 as tests/run.sh's TSAN_OPTIONS say; TSAN_OPTIONS overrides this)
extern "C" const char *__tsan_default_options() { return "halt_on_error=1:exitcode=66"; }

extern "C" {
void __real___tsan_switch_to_fiber(void *fiber, unsigned flags);
void *__real___tsan_create_fiber(unsigned flags);
void __real__ZN7cudacpu13block_barrierEv();
void *__real__ZN7cudacpu12shared_arrayEPKvm(const void *site, size_t bytes);
void __real__ZN7cudacpu8run_gridE4dim3S0_RKSt8functionIFvvEEPKc(dim3, dim3, const std::function<void()> &,
                                                                  const char *);
void AnnotateIgnoreWritesBegin(const char *file, int line);   // TSan's dynamic annotations
void AnnotateIgnoreWritesEnd(const char *file, int line);
}

namespace {
__thread char ended;           // the launches and every ended GPU thread of this executor thread released here
__thread char tails;           // fiber.cpp's work on an ended GPU thread (its stack given back)
__thread bool ending;          // the GPU thread running has ended: its next switch is its last
__thread std::vector<void *> *spare;   // TSan fibers of GPU threads that ended, for the next block
__thread char barrier_obj[2];  // __syncthreads by parity
// per GPU thread of the block running: barriers passed (sized before the grid runs: an allocation on a
// GPU thread would be a heap access TSan sees)
__thread std::vector<unsigned> *barriers;
unsigned &passed() {
    const cudacpu::thread_ctx *c = cudacpu::cur;
    return (*barriers)[c->tid.x + (size_t)c->bdim.x * (c->tid.y + (size_t)c->bdim.y * c->tid.z)];
}
}   // namespace

extern "C" void __wrap___tsan_switch_to_fiber(void *fiber, unsigned flags) {
    if (ending) __tsan_release(&tails);
    ending = false;
    __real___tsan_switch_to_fiber(fiber, flags | __tsan_switch_to_fiber_no_sync);
}
extern "C" void *__wrap___tsan_create_fiber(unsigned flags) {
    if (!spare || spare->empty()) return __real___tsan_create_fiber(flags);
    void *f = spare->back();
    spare->pop_back();
    return f;
}
extern "C" void __wrap___tsan_destroy_fiber(void *fiber) {
    if (!spare) spare = new std::vector<void *>;
    spare->push_back(fiber);
}

extern "C" void __wrap__ZN7cudacpu13block_barrierEv() {
    char *o = &barrier_obj[passed()++ & 1];
    __tsan_release(o);
    __real__ZN7cudacpu13block_barrierEv();
    __tsan_acquire(o);
}

extern "C" void *__wrap__ZN7cudacpu12shared_arrayEPKvm(const void *site, size_t bytes) {
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    void *p = __real__ZN7cudacpu12shared_arrayEPKvm(site, bytes);
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
    return p;
}

extern "C" void __wrap__ZN7cudacpu8run_gridE4dim3S0_RKSt8functionIFvvEEPKc(dim3 grid, dim3 block,
                                                                         const std::function<void()> &body,
                                                                         const char *name) {
    if (!barriers) barriers = new std::vector<unsigned>;
    barriers->resize((size_t)block.x * block.y * block.z);
    const std::function<void()> thread = [&body] {
        passed() = 0;
        __tsan_acquire(&ended);
        body();
        __tsan_release(&ended);
        __tsan_acquire(&tails);
        ending = true;
    };
    __tsan_release(&ended);   // the launch happens before every GPU thread of the grid
    __real__ZN7cudacpu8run_gridE4dim3S0_RKSt8functionIFvvEEPKc(grid, block, thread, name);
    __tsan_acquire(&ended);
}
