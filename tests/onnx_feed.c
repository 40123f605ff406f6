// onnx_feed M.wdm DATA.wdr OUTDIR: the inputs of the model's ONNX graph
// (wd export --onnx) for every sample of DATA.wdr, and wd_predict's
// probabilities, as raw little-endian arrays for tests/onnx_check.py.
// OUTDIR/feed.txt has a line per array: NAME TYPE FILE DIM0 [DIM1]; the
// names follow widedeep.h's section 18: dense, ids.<slot>, offsets.<slot>,
// cross<c>, and wd_predict (the probabilities, not an input).
// the implementation is linked in (tests/impl.c); this file uses the declarations only
#include "../widedeep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what) {
    fprintf(stderr, "onnx_feed: %s: %s\n", what, wd_last_error());
    return 1;
}
int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: onnx_feed M.wdm DATA.wdr OUTDIR\n"); return 2; }
    wd_model *m;
    wd_reader *r;
    if (wd_model_load(argv[1], &m)) return die(argv[1]);
    if (wd_reader_open(argv[2], &r)) return die(argv[2]);
    const wd_schema *s = wd_model_schema(m);
    const wd_model_desc *d = wd_model_description(m);
    int nf = 2 + s->nslots * 2 + d->ncross;   // dense, probs, ids/offsets per slot, crosses
    FILE **f = (FILE **)calloc((size_t)nf, sizeof(FILE *));
    int64_t *tot = (int64_t *)calloc((size_t)s->nslots, sizeof(int64_t));   // ids so far per multi-hot slot
    char path[4096];
    for (int i = 0; i < nf; i++) {
        snprintf(path, sizeof path, "%s/%d.bin", argv[3], i);
        if (!(f[i] = fopen(path, "wb"))) { perror(path); return 1; }
    }
    int64_t n = 0;
    for (int64_t blk = 0; blk < wd_reader_nblocks(r); blk++) {
        const wd_batch *b;
        if (wd_reader_block(r, blk, &b)) return die(argv[2]);
        float *p = (float *)malloc(sizeof(float) * (size_t)(b->n ? b->n : 1));
        if (wd_predict(m, b, p)) return die("wd_predict");
        fwrite(b->dense, sizeof(float), (size_t)b->n * (size_t)s->ndense, f[0]);
        fwrite(p, sizeof(float), (size_t)b->n, f[1]);
        free(p);
        for (int i = 0; i < b->n; i++) {
            for (int k = 0; k < s->nslots; k++) {
                int c;
                const uint32_t *ids = wd_batch_sample_ids(b, k, i, &c);
                if (s->slot[k].kind == WD_MULTI_HOT) { fwrite(&tot[k], 8, 1, f[3 + 2 * k]); tot[k] += c; }
                for (int j = 0; j < c; j++) { int64_t v = ids[j]; fwrite(&v, 8, 1, f[2 + 2 * k]); }
            }
            for (int c = 0; c < d->ncross; c++) {
                int64_t v = wd_cross_hash(b->ids[d->cross[c][0]][i], b->ids[d->cross[c][1]][i], c, d->cross_buckets);
                fwrite(&v, 8, 1, f[2 + 2 * s->nslots + c]);
            }
        }
        n += b->n;
    }
    for (int i = 0; i < nf; i++) if (fclose(f[i]) != 0) { perror("close"); return 1; }
    snprintf(path, sizeof path, "%s/feed.txt", argv[3]);
    FILE *t = fopen(path, "w");
    if (!t) { perror(path); return 1; }
    if (s->ndense) fprintf(t, "dense f32 0.bin %lld %d\n", (long long)n, s->ndense);
    fprintf(t, "wd_predict f32 1.bin %lld\n", (long long)n);
    for (int k = 0; k < s->nslots; k++) {
        if (s->slot[k].kind == WD_ONE_HOT) { fprintf(t, "ids.%s i64 %d.bin %lld\n", s->slot[k].name, 2 + 2 * k, (long long)n); continue; }
        fprintf(t, "ids.%s i64 %d.bin %lld\n", s->slot[k].name, 2 + 2 * k, (long long)tot[k]);
        fprintf(t, "offsets.%s i64 %d.bin %lld\n", s->slot[k].name, 3 + 2 * k, (long long)n);
    }
    for (int c = 0; c < d->ncross; c++) fprintf(t, "cross%d i64 %d.bin %lld\n", c, 2 + 2 * s->nslots + c, (long long)n);
    if (fclose(t) != 0) { perror(path); return 1; }
    printf("onnx_feed: %lld samples\n", (long long)n);
    free(f); free(tot);
    wd_reader_close(r);
    wd_model_destroy(m);
    return 0;
}
