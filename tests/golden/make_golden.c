// make_golden: writes the checked-in golden fixtures that tests/test_golden.c
// pins (a version-1 .wdr record file and two version-1 .wdm checkpoints).
//
// DO NOT REGENERATE the checked-in files. They are what "files written by
// this version still load, and decode to the same values" means: a later
// build must read these exact bytes. Regenerate (into a new name, keeping
// the old files and their tests) only when a new format version is
// introduced, and then update the pinned values in tests/test_golden.c.
//
// This program is not built by `make test`. To build and run it by hand
// (portable GEMM loops, no BLAS, so the training steps are reproducible):
//     cc -std=c11 -O1 -g -Wall -Wextra -o build/make_golden tests/golden/make_golden.c -lzstd -lpthread -lm
//     build/make_golden OUTDIR          # writes OUTDIR/v1.wdr, v1_adam.wdm, v1_adagrad.wdm
//
// What the files hold:
//   v1.wdr          47 samples in blocks of 20, 20 and 7 (block_samples 20),
//                   created "widedeep golden v1"; schema: 3 dense columns,
//                   one-hot "C1" (16 buckets, ids hashed from 8-hex-digit
//                   strings, one empty/missing), one-hot "site" (9 buckets,
//                   hashed "site-N"), multi-hot "tags" (6 buckets, 0..3 ids a
//                   sample; every 4th sample has none). Dense columns: the
//                   count feature of counts with negatives and zeros; raw
//                   floats from -2.875 to 2.875 with a 0 and a -0; the count
//                   feature of i*i-40. Labels 0/1 and one 0.25.
//                   golden_sample() below is the definition, and
//                   tests/test_golden.c repeats it.
//   v1_adam.wdm     model on v1.wdr's schema: E=3, hidden {4,3}, Adam, FTRL
//                   with beta/l1/l2, cross C1 x site into 17 buckets, seed
//                   20260101; trained 9 steps of batch 8 (shuffled), so it
//                   stops in epoch 1 after batch 3 with every optimizer
//                   state non-zero.
//   v1_adagrad.wdm  E=2, hidden {5}, Adagrad (init 0.1), mean pooling, no
//                   wide part, seed 5; one unshuffled epoch of batch 16.
#define WIDEDEEP_IMPLEMENTATION
#include "../../widedeep.h"
#include <stdio.h>
#include <string.h>

#define GOLDEN_N 47

static void golden_schema(wd_schema *s) {
    memset(s, 0, sizeof *s);
    s->ndense = 3;
    s->nslots = 3;
    snprintf(s->slot[0].name, WD_NAME_MAX, "C1");
    s->slot[0].buckets = 16;
    s->slot[0].kind = WD_ONE_HOT;
    snprintf(s->slot[1].name, WD_NAME_MAX, "site");
    s->slot[1].buckets = 9;
    s->slot[1].kind = WD_ONE_HOT;
    snprintf(s->slot[2].name, WD_NAME_MAX, "tags");
    s->slot[2].buckets = 6;
    s->slot[2].kind = WD_MULTI_HOT;
}

// Sample i of v1.wdr (tests/test_golden.c has the same function).
static void golden_sample(int i, float *label, float dense[3], uint32_t *c1, uint32_t *site, uint32_t tags[3], int *ntags) {
    static const int64_t counts[10] = {0, 1, -1, 2, -3, 10, 1000, -2, 123456789, 7};
    *label = i == 5 ? 0.25f : (float)(i % 3 == 0);
    dense[0] = wd_count_feature(counts[i % 10]);
    dense[1] = i == GOLDEN_N - 1 ? -0.0f : (float)(i - 23) * 0.125f;
    dense[2] = wd_count_feature((int64_t)i * i - 40);
    char s[32];
    if (i == 7) s[0] = 0;   // a missing value: hashes like the empty string
    else snprintf(s, sizeof s, "%08x", (unsigned)((uint32_t)i * 2654435761u));
    *c1 = wd_hash_bucket(s, strlen(s), 0, 16);
    snprintf(s, sizeof s, "site-%d", i % 5);
    *site = wd_hash_bucket(s, strlen(s), 1, 9);
    *ntags = i % 4;
    for (int j = 0; j < *ntags; j++) tags[j] = (uint32_t)((i + 2 * j) % 6);
}

static int fail(const char *what, wd_status st) {
    fprintf(stderr, "make_golden: %s: %s: %s\n", what, wd_status_string(st), wd_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: make_golden OUTDIR\n"); return 2; }
    char wdr[1024], adam[1024], adagrad[1024];
    snprintf(wdr, sizeof wdr, "%s/v1.wdr", argv[1]);
    snprintf(adam, sizeof adam, "%s/v1_adam.wdm", argv[1]);
    snprintf(adagrad, sizeof adagrad, "%s/v1_adagrad.wdm", argv[1]);

    wd_schema s;
    golden_schema(&s);
    wd_batch b;
    wd_status st = wd_batch_init(&b, &s, GOLDEN_N, 3 * GOLDEN_N);
    if (st) return fail("batch", st);
    for (int i = 0; i < GOLDEN_N; i++) {
        uint32_t tags[3];
        int nt;
        golden_sample(i, &b.label[i], b.dense + 3 * i, &b.ids[0][i], &b.ids[1][i], tags, &nt);
        b.weight[i] = 1.0f;
        uint32_t o = b.offs[2][i];
        for (int j = 0; j < nt; j++) b.ids[2][o + (uint32_t)j] = tags[j];
        b.offs[2][i + 1] = o + (uint32_t)nt;
    }
    b.n = GOLDEN_N;
    wd_writer_desc wdesc;
    memset(&wdesc, 0, sizeof wdesc);
    wdesc.block_samples = 20;
    wdesc.level = 19;
    wdesc.created = "widedeep golden v1";
    wd_writer *w;
    if ((st = wd_writer_open(wdr, &s, &wdesc, &w))) return fail(wdr, st);
    if ((st = wd_writer_append(w, &b))) { wd_writer_abort(w); return fail(wdr, st); }
    if ((st = wd_writer_close(w))) return fail(wdr, st);
    wd_batch_free(&b);

    const char *files[1] = {wdr};
    {   // Adam, wide with FTRL regularisation, one cross; stops mid-epoch
        wd_model_desc md;
        memset(&md, 0, sizeof md);
        md.schema = &s;
        md.embed_dim = 3;
        md.hidden[0] = 4; md.hidden[1] = 3;
        md.optimizer = WD_ADAM;
        md.lr_deep = 0.01f; md.lr_wide = 0.1f;
        md.ftrl_beta = 1.0f; md.ftrl_l1 = 0.001f; md.ftrl_l2 = 0.01f;
        md.emb_init = 0.1f;
        md.ncross = 1; md.cross[0][0] = 0; md.cross[0][1] = 1;
        md.cross_buckets = 17;
        md.seed = 20260101;
        wd_model *m;
        if ((st = wd_model_create(&md, &m))) return fail("adam model", st);
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.files = files; td.nfiles = 1;
        td.epochs = 2; td.batch_size = 8; td.max_steps = 9;
        td.threads = 1; td.loader_threads = 1;
        if ((st = wd_train(m, &td, NULL))) return fail("adam train", st);
        if ((st = wd_model_save(m, adam))) return fail(adam, st);
        wd_model_destroy(m);
    }
    {   // Adagrad, deep only, mean pooling; one whole epoch
        wd_model_desc md;
        memset(&md, 0, sizeof md);
        md.schema = &s;
        md.embed_dim = 2;
        md.hidden[0] = 5;
        md.optimizer = WD_ADAGRAD;
        md.lr_deep = 0.05f;
        md.adagrad_init = 0.1f;
        md.pooling = WD_POOL_MEAN;
        md.no_wide = 1;
        md.seed = 5;
        wd_model *m;
        if ((st = wd_model_create(&md, &m))) return fail("adagrad model", st);
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.files = files; td.nfiles = 1;
        td.epochs = 1; td.batch_size = 16; td.no_shuffle = 1;
        td.threads = 1; td.loader_threads = 1;
        if ((st = wd_train(m, &td, NULL))) return fail("adagrad train", st);
        if ((st = wd_model_save(m, adagrad))) return fail(adagrad, st);
        wd_model_destroy(m);
    }
    printf("wrote %s, %s, %s\n", wdr, adam, adagrad);
    return 0;
}
