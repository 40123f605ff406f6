// Reader decode throughput on one thread: fetch (pread) + CRC + zstd +
// unpack into a reused batch + value checks, over every block of the files,
// repeated until at least --seconds have passed. Prints samples/s and the
// time per stage. Usage: decode_bench [--seconds S] FILE.wdr...
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    double min_s = 3.0;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--seconds") == 0) { min_s = atof(argv[2]); first = 3; }
    if (first >= argc) { fprintf(stderr, "usage: decode_bench [--seconds S] FILE.wdr...\n"); return 2; }
    wd_decoder *dec;
    if (wd_decoder_create(&dec)) return 1;
    wd__buf buf = {0, 0, 0};
    double fetch_s = 0, t0 = wd__now();
    int64_t samples = 0, passes = 0;
    while (wd__now() - t0 < min_s) {
        for (int f = first; f < argc; f++) {
            wd_reader *r;
            wd_status st = wd_reader_open(argv[f], &r);
            if (st) { fprintf(stderr, "decode_bench: %s\n", wd_last_error()); return 1; }
            wd_batch b;
            wd_batch_init(&b, wd_reader_schema(r), 0, 0);
            for (int64_t i = 0; i < wd_reader_nblocks(r); i++) {
                size_t n = wd_reader_block_bytes(r, i);
                double a = wd__now();
                if (wd__buf_reserve(&buf, n) || wd_reader_fetch(r, i, buf.p, buf.cap)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
                fetch_s += wd__now() - a;
                b.n = 0;
                if (wd_decode_block(dec, r, i, buf.p, n, &b)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
                samples += b.n;
            }
            wd_batch_free(&b);
            wd_reader_close(r);
        }
        passes++;
    }
    double dt = wd__now() - t0;
    wd_decode_stats s;
    wd_decoder_stats(dec, &s);
    printf("decode: %lld samples in %.2f s (%lld passes) = %.2fM samples/s on 1 thread; %.1f MB/s compressed, %.1f MB/s raw\n",
           (long long)samples, dt, (long long)passes, (double)samples / dt / 1e6, (double)s.bytes_in / dt / 1e6, (double)s.bytes_raw / dt / 1e6);
    printf("stages (%% of wall): fetch %.1f  crc %.1f  zstd %.1f  unpack %.1f  check %.1f\n",
           100 * fetch_s / dt, 100 * s.crc_s / dt, 100 * s.zstd_s / dt, 100 * s.unpack_s / dt, 100 * s.check_s / dt);
    wd__buf_free(&buf);
    wd_decoder_destroy(dec);
    return 0;
}
