// The LibSVM parser (two multi-hot slot ranges and a dense range).
#include "fuzz_common.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    static wd_text_spec t;
    static int ready;
    if (!ready) { if (wd_text_spec_libsvm(&t, "user=0-99,item=100-199", "200-203", 0)) abort(); ready = 1; }
    fz_lines(&t, data, n);
    return 0;
}
