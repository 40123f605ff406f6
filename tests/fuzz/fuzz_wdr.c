// The .wdr reader: open, read and verify every block of arbitrary bytes.
#include "fuzz_common.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    wd_reader *r;
    if (wd_reader_open(fz_file(data, n), &r) != WD_OK) return 0;
    wd_batch b;
    if (wd_batch_init(&b, wd_reader_schema(r), 0, 0) == WD_OK) {
        for (int64_t i = 0; i < wd_reader_nblocks(r); i++)
            if (wd_reader_read_block(r, i, &b) == WD_OK && wd__check_values(wd_reader_schema(r), &b, 0, b.n, "fuzz", WD_ERR_CORRUPT) != WD_OK) abort();
        wd_batch_free(&b);
    }
    wd_reader_close(r);
    return 0;
}
