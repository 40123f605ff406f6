// internal.h - what the emulator's files share (tests/cudacpu; not for the code under test).
#pragma once
#include "cudacpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <functional>

namespace cudacpu {
static inline long long env_long(const char *name, long long dflt) {
    const char *s = getenv(name);
    return s && *s ? atoll(s) : dflt;
}
cudaError_t check_config(dim3 grid, dim3 block);
// runs a grid's blocks on the calling thread (fiber.cpp)
void run_grid(dim3 grid, dim3 block, const std::function<void()> &body, const char *name);
// enqueues op on stream st (captured into a graph while st is being captured); what names it in reports
cudaError_t enqueue(cudaStream_t st, std::function<void()> op, const char *what);
// a seeded random number for the emulator's choices (CUDACPU_SEED; the same sequence in every run)
unsigned long long seeded_random();
// fills temporary storage with garbage before a library call uses it
void scribble(void *p, size_t n);
}   // namespace cudacpu
