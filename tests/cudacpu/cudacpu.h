// cudacpu.h - the CUDA C++ device language for g++, on an emulated device (tests only).
// Included ahead of everything (g++ -x c++ -include tests/cudacpu/cudacpu.h
// -I tests/cudacpu -I $CUDA_HOME/include): the runtime's types, enums and
// prototypes come from the real CUDA headers (they parse in host mode); this
// header adds what only nvcc knows (qualifiers, threadIdx and the other
// built-in variables, the intrinsics and atomics the backend calls) and the
// source hooks of widedeep_cuda.cu: CUDACPU_GO (a launch), CUDACPU_SHARED (a
// __shared__ array, one per block) and cudacpu_globaltimer. A kernel's GPU
// threads run as fibers of a block (fiber.cpp), on the executor of the
// stream's emulated device (cudart.cpp). README.md: the switches, the runtime
// subset and what each check catches.
#pragma once
#define CUDACPU 1
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __shared__ cudacpu_write_shared_arrays_with_WDC_SHARED   // a plain one would be shared by every block
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif

namespace cudacpu {
struct thread_ctx {   // the GPU thread a fiber runs
    uint3 tid, bid;
    dim3 bdim, gdim;
    int lane, warp;
};
extern __thread thread_ctx *cur;   // __thread, not thread_local: no TLS wrapper call on fiber stacks
void block_barrier();                                                  // __syncthreads
uint64_t warp_exchange(unsigned mask, uint64_t v, int src, int width);   // __shfl_sync
void *shared_array(const void *site, size_t bytes);                     // CUDACPU_SHARED: this block's copy
// a launch: checks the configuration (an invalid one is the host thread's
// cudaGetLastError, as CUDA reports it) and enqueues the grid on the stream
void launch(dim3 grid, dim3 block, cudaStream_t st, const char *name, std::function<void()> body);
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
}   // namespace cudacpu

#define threadIdx (cudacpu::cur->tid)
#define blockIdx (cudacpu::cur->bid)
#define blockDim (cudacpu::cur->bdim)
#define gridDim (cudacpu::cur->gdim)

// CUDACPU_SHARED(T, name, [dims]): the block's own array (0xff bytes before
// any write, ASan red zones around it); `site` is the declaration's own
// static byte, which names the array.
#define CUDACPU_SHARED(T, name, dims) \
    typedef T cudacpu_##name##_t dims; \
    static const char cudacpu_##name##_site = 0; \
    cudacpu_##name##_t &name = *(cudacpu_##name##_t *)cudacpu::shared_array(&cudacpu_##name##_site, sizeof(cudacpu_##name##_t))

// ---- intrinsics ------------------------------------------------------------------------------
static inline void __syncthreads() { cudacpu::block_barrier(); }
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "__shfl_sync of a type the GPU cannot shuffle");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof v);
    u = cudacpu::warp_exchange(mask, u, src, width);
    T r;
    memcpy(&r, &u, sizeof r);
    return r;
}
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
// correctly rounded and never contracted (the build has -ffp-contract=off)
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
void __nanosleep(unsigned ns);
unsigned long long cudacpu_globaltimer();   // %globaltimer: CLOCK_MONOTONIC in ns
// atomics: relaxed, as the GPU's (TSan sees atomics)
template <typename T> static inline T atomicAdd(T *p, std::common_type_t<T> v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline float atomicAdd(float *p, float v) {
    float old, want;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do want = old + v; while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
}
template <typename T> static inline T atomicOr(T *p, std::common_type_t<T> v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
// device min/max of integers (nvcc's math headers give both host and device ones)
#define CUDACPU_MINMAX(T) \
    static inline T min(T a, T b) { return a < b ? a : b; } \
    static inline T max(T a, T b) { return a > b ? a : b; }
CUDACPU_MINMAX(int)
CUDACPU_MINMAX(unsigned)
CUDACPU_MINMAX(long long)
CUDACPU_MINMAX(unsigned long long)
#undef CUDACPU_MINMAX

// ---- the launch ------------------------------------------------------------------------------
// CUDACPU_GO(k, grid, block, stream)(args...): the arguments are converted to
// the kernel's parameter types and copied once, at the launch (as CUDA does);
// every GPU thread then calls the kernel on that copy.
namespace cudacpu {
template <typename... P> struct launcher {
    void (*k)(P...);
    dim3 grid, block;
    cudaStream_t st;
    const char *name;
    template <typename... A> void operator()(A &&...a) const {
        static_assert(sizeof...(A) == sizeof...(P), "a kernel launched with the wrong number of arguments");
        auto args = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(a)...);
        auto kern = k;
        launch(grid, block, st, name, [kern, args]() { std::apply(kern, *args); });
    }
};
template <typename... P> launcher<P...> make_launcher(void (*k)(P...), dim3 g, dim3 b, cudaStream_t st, const char *name) {
    return launcher<P...>{k, g, b, st, name};
}
}   // namespace cudacpu
#define CUDACPU_GO(k, grid, block, stream) cudacpu::make_launcher(k, dim3(grid), dim3(block), (cudaStream_t)(stream), #k)
