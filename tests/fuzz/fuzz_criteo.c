// The Criteo TSV parser, line by line.
#include "fuzz_common.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    static wd_text_spec t;
    static int ready;
    if (!ready) { wd_text_spec_criteo(&t, 1000); ready = 1; }
    fz_lines(&t, data, n);
    return 0;
}
