// The API with hostile callers: a valid file decoded into batches of any
// shape (wd_reader_read_block), and wd_predict on batches whose counts,
// offsets, ids and dense values come from the input. Each call either
// succeeds with values the writer would accept (decode) or probabilities in
// [0, 1] (predict), or fails with a status; it never reads or writes outside
// what the batch holds.
//   byte 0: bit 0 picks decode (0) or predict (1)
//   bytes 1..7: the batch's shape (dense columns, slots, slot kinds, n, cap,
//   id capacity, block); the rest: the batch's contents (predict)
#include "fuzz_common.h"

static wd_model *fa_model;
static wd_reader *fa_reader;
static wd_schema fa_schema;   // 2 dense; slot a: one-hot, 10 buckets; slot b: multi-hot, 7 buckets

static void fa_init(void) {
    memset(&fa_schema, 0, sizeof fa_schema);
    fa_schema.ndense = 2; fa_schema.nslots = 2;
    snprintf(fa_schema.slot[0].name, WD_NAME_MAX, "a"); fa_schema.slot[0].buckets = 10;
    snprintf(fa_schema.slot[1].name, WD_NAME_MAX, "b"); fa_schema.slot[1].buckets = 7; fa_schema.slot[1].kind = WD_MULTI_HOT;
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = &fa_schema; md.embed_dim = 2; md.hidden[0] = 3; md.seed = 7;
    if (wd_model_create(&md, &fa_model)) abort();
    wd_batch b;
    if (wd_batch_init(&b, &fa_schema, 9, 30)) abort();
    for (int i = 0; i < 9; i++) {
        b.label[i] = (float)(i & 1); b.weight[i] = 1; b.dense[2 * i] = (float)i; b.dense[2 * i + 1] = -0.5f;
        b.ids[0][i] = (uint32_t)i;
        uint32_t o = b.offs[1][i];
        for (int j = 0; j < i % 3; j++) b.ids[1][o + (uint32_t)j] = (uint32_t)((i + j) % 7);   // 0, 1 or 2 ids
        b.offs[1][i + 1] = o + (uint32_t)(i % 3);
    }
    b.n = 9;
    char path[64];
    snprintf(path, sizeof path, "/tmp/wdfuzz-api-%d.wdr", (int)getpid());
    wd_writer_desc wdsc;
    memset(&wdsc, 0, sizeof wdsc);
    wdsc.block_samples = 4;   // blocks of 4, 4 and 1 samples
    wd_writer *w;
    if (wd_writer_open(path, &fa_schema, &wdsc, &w) || wd_writer_append(w, &b) || wd_writer_close(w)) abort();
    if (wd_reader_open(path, &fa_reader)) abort();
    unlink(path);   // the reader holds it open
    wd_batch_free(&b);
}

// A batch of the shape the input asks for (its arrays as wd_batch_init makes them).
static int fa_batch(const uint8_t *h, wd_batch *b, int cap, int64_t nnz) {
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = h[1] % 4; s.nslots = h[2] % 4;
    for (int k = 0; k < s.nslots; k++) {
        snprintf(s.slot[k].name, WD_NAME_MAX, "s%d", k);
        s.slot[k].buckets = 1 + (uint32_t)(h[3] >> (2 * k) & 3) * 5;
        s.slot[k].kind = (h[3] >> k & 1) ? WD_MULTI_HOT : WD_ONE_HOT;
    }
    return wd_batch_init(b, &s, cap, nnz) == WD_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (!fa_model) fa_init();
    if (n < 8) return 0;
    wd_batch b;
    if (!(data[0] & 1)) {   // decode a valid file into any batch
        if (!fa_batch(data, &b, data[5] % 8, data[6] % 16)) return 0;
        b.n = (int8_t)data[4];   // maybe negative, maybe past the capacity
        int64_t bi = (int8_t)data[7] % 5;
        if (wd_reader_read_block(fa_reader, bi, &b) == WD_OK &&
            (b.n < 0 || b.n > b.cap || wd__check_values(&fa_schema, &b, 0, b.n, "fuzz", WD_ERR_INVALID_ARG) != WD_OK)) abort();
        wd_batch_free(&b);
        return 0;
    }
    int cap = data[5] % 16;
    if (!fa_batch(data, &b, cap, data[6] % 32)) return 0;
    b.n = (int8_t)data[4];
    const uint8_t *p = data + 8, *end = data + n;
    for (int i = 0; i < b.cap * b.ndense && end - p >= 4; i++, p += 4) memcpy(&b.dense[i], p, 4);   // any bits: NaN, Inf, huge
    for (int k = 0; k < b.nslots; k++) {
        if (b.kind[k] == WD_MULTI_HOT)
            for (int i = 0; i <= b.cap && p < end; i++) b.offs[k][i] = *p++ % 40u;   // maybe falling, maybe past nnz_cap
        int64_t m = b.kind[k] == WD_MULTI_HOT ? b.nnz_cap : b.cap;
        for (int64_t i = 0; i < m && p < end; i++) b.ids[k][i] = *p++ < 240 ? p[-1] % 12u : 0xFFFFFFF0u + p[-1] % 16u;
    }
    float probs[16];
    if (wd_predict(fa_model, &b, probs) == WD_OK)
        for (int i = 0; i < b.n; i++) if (!(probs[i] >= 0 && probs[i] <= 1)) abort();
    wd_batch_free(&b);
    return 0;
}
