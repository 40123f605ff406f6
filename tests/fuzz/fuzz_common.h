// Shared by the libFuzzer harnesses: the library's implementation, and an
// in-memory file (memfd) so file readers see fuzz input through a path.
#ifndef WD_FUZZ_COMMON_H
#define WD_FUZZ_COMMON_H
#define WIDEDEEP_IMPLEMENTATION
#include "../../widedeep.h"
#include <sys/mman.h>

static int fz_fd = -1;
static char fz_path[64];
// Replaces the memfd's contents with data; returns its /proc path.
static inline const char *fz_file(const uint8_t *data, size_t n) {
    if (fz_fd < 0) {
        fz_fd = memfd_create("wdfuzz", MFD_CLOEXEC);
        snprintf(fz_path, sizeof fz_path, "/proc/self/fd/%d", fz_fd);
    }
    if (ftruncate(fz_fd, 0) != 0) abort();
    if (n && pwrite(fz_fd, data, n, 0) != (ssize_t)n) abort();
    return fz_path;
}
// Runs the line parser over every line of the input; a sample that parses
// must hold values the writer accepts (ids inside buckets, finite numbers).
static inline void fz_lines(const wd_text_spec *t, const uint8_t *data, size_t n) {
    wd_batch b;
    if (wd_batch_init(&b, &t->schema, 0, 0)) return;
    const char *p = (const char *)data, *end = p + n;
    while (p < end) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        wd_parse_line(t, p, (size_t)(le - p), &b);
        p = le + 1;
    }
    if (wd__check_values(&t->schema, &b, 0, b.n, "fuzz", WD_ERR_CORRUPT) != WD_OK) abort();   // parsed garbage would be a bug
    wd_batch_free(&b);
}
#endif
