// The implementation, compiled once per test flavor (build/impl_san.o: ASan +
// UBSan and the build's GEMM engine; build/impl_san_portable.o: the portable
// GEMM loops) and linked into the test programs that use the header's
// declarations only (test_ref, test_golden, test_faults, test_loop, test_edges, onnx_feed): each of
// them would otherwise compile all of widedeep.h again under the sanitizers.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
