// The entry point of build/fuzz_<name> and build/replay_<name>: harness <name>
// of tests/fuzz/fuzz_all.c, named by the Makefile (-DFUZZ_HARNESS=fuzz_<name>_one).
#include <stddef.h>
#include <stdint.h>
int FUZZ_HARNESS(const uint8_t *data, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) { return FUZZ_HARNESS(data, n); }
