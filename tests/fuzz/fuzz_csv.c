// The CSV parser (the Avazu-like layout: label, dense counts, categoricals).
#include "fuzz_common.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    static wd_text_spec t;
    static int ready;
    if (!ready) { if (wd_text_spec_csv(&t, "id,click,hour,C1,site,app", "click", "hour", "C1,site,app", 500)) abort(); ready = 1; }
    fz_lines(&t, data, n);
    return 0;
}
