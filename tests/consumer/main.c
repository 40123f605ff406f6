/* A program that uses an installed (or vendored) widedeep the way its users
   do: tests/consumer.sh builds it through pkg-config, find_package,
   add_subdirectory and FetchContent. It writes a small .wdr file with
   wd_writer_*, creates a model for its schema, trains two steps, predicts,
   checks that the GEMM engine compiled in is the package's (WD_EXPECT_GEMM)
   and asks for a step on a GPU: "cuda=trained", "cuda=linked (no device)"
   or "cuda=absent" (no backend linked in). Last line: "consumer ok: ...".
   Usage: consumer WORKDIR */
#include "widedeep.h"
#include <stdio.h>
#include <string.h>

#define N 512
static int fail(const char *what, wd_status st) {
    fprintf(stderr, "consumer: %s: %s: %s\n", what, wd_status_string(st), wd_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: consumer WORKDIR\n"); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/consumer.wdr", argv[1]);

    /* schema: 2 dense columns, a one-hot slot and a multi-hot slot */
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = 2;
    s.nslots = 2;
    strcpy(s.slot[0].name, "site");  s.slot[0].buckets = 50; s.slot[0].kind = WD_ONE_HOT;
    strcpy(s.slot[1].name, "tags");  s.slot[1].buckets = 30; s.slot[1].kind = WD_MULTI_HOT;
    wd_status st = wd_schema_check(&s);
    if (st) return fail("wd_schema_check", st);

    /* N samples, label from the site id: something to learn */
    wd_batch b;
    if ((st = wd_batch_init(&b, &s, N, 2 * N))) return fail("wd_batch_init", st);
    b.offs[1][0] = 0;
    for (int i = 0; i < N; i++) {
        uint32_t site = (uint32_t)(i * 7) % 50;
        b.label[i] = site < 20 ? 1.0f : 0.0f;
        b.weight[i] = 1;
        b.dense[2 * i] = wd_count_feature(i % 13);
        b.dense[2 * i + 1] = (float)(i % 5) * 0.25f;
        b.ids[0][i] = site;
        b.ids[1][2 * i] = (uint32_t)i % 30;
        b.ids[1][2 * i + 1] = (uint32_t)(i / 3) % 30;
        b.offs[1][i + 1] = 2 * (uint32_t)(i + 1);
    }
    b.n = N;
    wd_writer *w;
    wd_writer_desc wdesc = {0};
    wdesc.block_samples = 128;
    if ((st = wd_writer_open(path, &s, &wdesc, &w))) return fail("wd_writer_open", st);
    if ((st = wd_writer_append(w, &b))) { wd_writer_abort(w); return fail("wd_writer_append", st); }
    if ((st = wd_writer_close(w))) return fail("wd_writer_close", st);

    wd_model_desc md = {0};
    md.schema = &s;
    md.embed_dim = 4;
    md.hidden[0] = 8;
    md.seed = 1;
    wd_model *m;
    if ((st = wd_model_create(&md, &m))) return fail("wd_model_create", st);

    const char *files[] = {path};
    wd_train_desc td = {0};
    td.files = files;
    td.nfiles = 1;
    td.batch_size = 64;
    td.threads = 1;
    td.max_steps = 2;
    wd_train_report rep;
    if ((st = wd_train(m, &td, &rep))) return fail("wd_train", st);
    if (rep.steps != 2) { fprintf(stderr, "consumer: trained %lld steps, wanted 2\n", (long long)rep.steps); return 1; }

    float p[N];
    if ((st = wd_predict(m, &b, p))) return fail("wd_predict", st);
    for (int i = 0; i < N; i++)
        if (!(p[i] > 0 && p[i] < 1)) { fprintf(stderr, "consumer: p[%d] = %g\n", i, p[i]); return 1; }

    /* the engine this file's package compiled in: widedeep.pc's gemm, or WIDEDEEP_GEMM_ENGINE in CMake */
    char want[64];
    snprintf(want, sizeof want, "gemm=%s ", WD_EXPECT_GEMM);
    if (!strstr(rep.engine, want)) {
        fprintf(stderr, "consumer: engine \"%s\", wanted %s(the package's compile definitions did not arrive)\n", rep.engine, want);
        return 1;
    }
    /* The CUDA backend is found at link time (widedeep_cuda.o, or
       libwidedeep_cuda.a and its -u flag), whether or not this file or the
       implementation's saw WD_HAVE_CUDA: a step on the GPU trains; without a
       GPU the backend answers that there is no device; without the backend
       linked in, the library says the program has none. */
    char cuda[300];
    td.device = WD_DEVICE_CUDA;
    td.max_steps = 3;   /* one more step, on the GPU */
    wd_train_report crep;
    st = wd_train(m, &td, &crep);
    if (!st) snprintf(cuda, sizeof cuda, " cuda=trained steps=%lld (%s)", (long long)crep.steps, crep.engine);
    else if (strstr(wd_last_error(), "no CUDA backend")) snprintf(cuda, sizeof cuda, " cuda=absent");
    else if (strstr(wd_last_error(), "no CUDA device")) snprintf(cuda, sizeof cuda, " cuda=linked (no device)");
    else return fail("wd_train on CUDA", st);
    wd_batch_free(&b);
    wd_model_destroy(m);
    printf("consumer ok: steps=2 p[0]=%.4f engine=\"%s\"%s\n", p[0], rep.engine, cuda);
    return 0;
}
