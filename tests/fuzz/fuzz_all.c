// Every harness in one translation unit with the implementation, so that the
// Makefile compiles widedeep.h once for all of them (build/fuzz_all.o for
// libFuzzer, build/replay_all.o for the replay): harness <name>'s entry point
// becomes fuzz_<name>_one, and tests/fuzz/fuzz_one.c makes it the
// LLVMFuzzerTestOneInput of build/fuzz_<name> and build/replay_<name>. A
// harness added to the Makefile's FUZZERS is added here too (else its binary
// does not link: fuzz_<name>_one is undefined).
#include "fuzz_common.h"
#define LLVMFuzzerTestOneInput fuzz_wdr_one
#include "fuzz_wdr.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_criteo_one
#include "fuzz_criteo.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_libsvm_one
#include "fuzz_libsvm.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_csv_one
#include "fuzz_csv.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_wdm_one
#include "fuzz_wdm.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_api_one
#include "fuzz_api.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_arrow_one
#include "fuzz_arrow.c"
#undef LLVMFuzzerTestOneInput
