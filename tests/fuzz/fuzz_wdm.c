// The checkpoint loader: arbitrary bytes must load as a finite model or fail cleanly.
#include "fuzz_common.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    wd_model *m;
    if (wd_model_load(fz_file(data, n), &m) != WD_OK) return 0;
    for (int64_t i = 0; i < m->P; i++) if (!isfinite(m->dense[i])) abort();
    wd_model_destroy(m);
    return 0;
}
