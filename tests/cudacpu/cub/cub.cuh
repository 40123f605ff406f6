// cub/cub.cuh - the three CUB device algorithms widedeep_cuda.cu calls, on the
// emulated device (tests/cudacpu; found ahead of the toolkit's cub by -I).
// CUB's contracts, kept strictly: a call with d_temp_storage == NULL only sizes
// the temporary storage; a call with less than that fails; the work is an
// operation of the stream (ordered, and captured into graphs), which first
// scribbles over the whole temporary storage (nothing may live there across
// calls); DeviceRadixSort's DoubleBuffer result lands in either buffer (the
// selector is flipped or not at random, CUDACPU_SEED: a caller reading
// d_buffers[0] instead of Current() reads the wrong one); the sort is stable
// over [begin_bit, end_bit); RunLengthEncode writes the number of runs to
// device memory; ExclusiveSum may work in place.
#pragma once
#include <cuda_runtime.h>
#include <string.h>
#include <functional>
#include <type_traits>
#include <vector>

namespace cudacpu {
cudaError_t enqueue(cudaStream_t st, std::function<void()> op, const char *what);
unsigned long long seeded_random();
void scribble(void *p, size_t n);
}   // namespace cudacpu

namespace cub {
template <typename T> struct DoubleBuffer {
    T *d_buffers[2];
    int selector;
    DoubleBuffer() : d_buffers{nullptr, nullptr}, selector(0) {}
    DoubleBuffer(T *cur, T *alt) : d_buffers{cur, alt}, selector(0) {}
    T *Current() { return d_buffers[selector]; }
    T *Alternate() { return d_buffers[selector ^ 1]; }
};
namespace detail {
// the emulator's temporary storage need: at least what a plan must hold (CUB's own depends on the device)
static inline size_t temp_bytes(long long n, size_t per) { return 4096 + (size_t)(n > 0 ? n : 0) * per / 16; }
}   // namespace detail
struct DeviceRadixSort {
    template <typename K, typename V>
    static cudaError_t SortPairs(void *temp, size_t &bytes, DoubleBuffer<K> &keys, DoubleBuffer<V> &vals, int n, int begin_bit = 0,
                                 int end_bit = sizeof(K) * 8, cudaStream_t st = 0) {
        static_assert(std::is_unsigned<K>::value, "the emulator sorts unsigned keys only");
        size_t need = detail::temp_bytes(n, sizeof(K) + sizeof(V));
        if (!temp) { bytes = need; return cudaSuccess; }
        if (bytes < need || n < 0 || begin_bit < 0 || end_bit > (int)sizeof(K) * 8 || begin_bit >= end_bit) return cudaErrorInvalidValue;
        K *kin = keys.Current(), *kalt = keys.Alternate();
        V *vin = vals.Current(), *valt = vals.Alternate();
        bool flip = cudacpu::seeded_random() & 1;   // an odd or even number of passes
        if (flip) { keys.selector ^= 1; vals.selector ^= 1; }
        return cudacpu::enqueue(st, [=]() {
            cudacpu::scribble(temp, need);
            std::vector<K> k0(kin, kin + n), k1((size_t)n);
            std::vector<V> v0(vin, vin + n), v1((size_t)n);
            for (int b = begin_bit; b < end_bit; b += 8) {   // LSD, 8 bits a pass, stable
                int w = end_bit - b < 8 ? end_bit - b : 8;
                K dmask = (K)((1u << w) - 1);
                size_t cnt[257] = {0};
                for (int i = 0; i < n; i++) cnt[((k0[i] >> b) & dmask) + 1]++;
                for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
                for (int i = 0; i < n; i++) {
                    size_t at = cnt[(k0[i] >> b) & dmask]++;
                    k1[at] = k0[i];
                    v1[at] = v0[i];
                }
                k0.swap(k1);
                v0.swap(v1);
            }
            // the result in the buffer Current() names now; the other holds garbage, as CUB may leave it
            K *kout = flip ? kalt : kin, *kother = flip ? kin : kalt;
            V *vout = flip ? valt : vin, *vother = flip ? vin : valt;
            if (n) {
                memcpy(kout, k0.data(), sizeof(K) * (size_t)n);
                memcpy(vout, v0.data(), sizeof(V) * (size_t)n);
                cudacpu::scribble(kother, sizeof(K) * (size_t)n);
                cudacpu::scribble(vother, sizeof(V) * (size_t)n);
            }
        }, "cub::DeviceRadixSort::SortPairs");
    }
};
struct DeviceRunLengthEncode {
    template <typename I, typename U, typename C, typename R>
    static cudaError_t Encode(void *temp, size_t &bytes, I in, U unique_out, C counts_out, R num_runs_out, int n, cudaStream_t st = 0) {
        size_t need = detail::temp_bytes(n, 8);
        if (!temp) { bytes = need; return cudaSuccess; }
        if (bytes < need || n < 0) return cudaErrorInvalidValue;
        return cudacpu::enqueue(st, [=]() {
            cudacpu::scribble(temp, need);
            int runs = 0;
            for (int i = 0; i < n;) {
                int j = i + 1;
                while (j < n && in[j] == in[i]) j++;
                unique_out[runs] = in[i];
                counts_out[runs] = j - i;
                runs++;
                i = j;
            }
            *num_runs_out = runs;
        }, "cub::DeviceRunLengthEncode::Encode");
    }
};
struct DeviceScan {
    template <typename I, typename O>
    static cudaError_t ExclusiveSum(void *temp, size_t &bytes, I in, O out, int n, cudaStream_t st = 0) {
        size_t need = detail::temp_bytes(n, 4);
        if (!temp) { bytes = need; return cudaSuccess; }
        if (bytes < need || n < 0) return cudaErrorInvalidValue;
        return cudacpu::enqueue(st, [=]() {
            cudacpu::scribble(temp, need);
            typename std::remove_reference<decltype(*out)>::type acc = 0;
            for (int i = 0; i < n; i++) {
                auto v = in[i];
                out[i] = acc;
                acc += v;
            }
        }, "cub::DeviceScan::ExclusiveSum");
    }
};
}   // namespace cub
