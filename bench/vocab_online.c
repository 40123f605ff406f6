/* Issue 32: days 2-4 streamed online (wd_trainer_push_lines: raw lines, the
   vocabulary grown in memory) from a day-1 model, then the held-out rows
   converted with the grown model's spec and evaluated.
   Usage: vocab_online M1.wdm BATCH(0: the model's) HELD.tsv[,HELD2.tsv...] DAY2.tsv [DAY3.tsv ...]
   Prints the held-out AUC, log loss and out-of-vocabulary share, and the
   vocabulary's growth. bench/vocab_online.sh runs it beside
   bench/daily_bench.sh's file-based days (the same day-1 models). */
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if ((x) != WD_OK) {                                                                                            \
            fprintf(stderr, "vocab_online: %s:%d: %s\n", __FILE__, __LINE__, wd_last_error());                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vocab_online: %s: cannot open\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = (char *)malloc((size_t)len + 1);
    if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "vocab_online: %s: cannot read\n", path);
        exit(1);
    }
    fclose(f);
    p[len] = 0;
    *n = (size_t)len;
    return p;
}
static int64_t vocab_values(const wd_model *m) {
    wd_text_spec s;
    TRY(wd_model_spec(m, &s));
    int64_t n = 0;
    for (int k = 0; k < s.schema.nslots; k++) n += wd_vocab_size(s.vocab, k) > 0 ? wd_vocab_size(s.vocab, k) : 0;
    wd_text_spec_free(&s);
    return n;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: vocab_online M1.wdm BATCH HELD.tsv[,HELD2.tsv] DAY2.tsv [DAY3.tsv ...]\n");
        return 2;
    }
    wd_model *m;
    TRY(wd_model_load(argv[1], &m));
    int batch = atoi(argv[2]) > 0 ? atoi(argv[2]) : (int)m->batch_size; // 0: the day-1 run's (as --init-from takes it)
    wd_model_new_run(m);
    int64_t v0 = vocab_values(m);
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.batch_size = batch;
    wd_trainer *t;
    TRY(wd_trainer_open(m, &td, &t));
    for (int a = 4; a < argc; a++) { // each day's lines in file order, BATCH at a time
        size_t len;
        char *text = slurp(argv[a], &len), *s = text, *end = text + len;
        while (s < end) {
            char *e = s;
            for (int i = 0; i < batch && e < end; i++) {
                char *nl = memchr(e, '\n', (size_t)(end - e));
                e = nl ? nl + 1 : end;
            }
            TRY(wd_trainer_push_lines(t, s, (size_t)(e - s)));
            s = e;
        }
        free(text);
    }
    wd_train_report rep;
    TRY(wd_trainer_close(t, &rep));
    wd_trainer_free(t);
    // held out: converted with the grown model's spec (no extension), evaluated
    wd_text_spec spec;
    TRY(wd_model_spec(m, &spec));
    char *list = strdup(argv[3]), *held[8];
    int nheld = 0;
    for (char *tok = strtok(list, ","); tok && nheld < 8; tok = strtok(NULL, ",")) held[nheld++] = tok;
    const char *out = "/tmp/vocab_online_held.wdr";
    wd_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.spec = &spec;
    cd.inputs = (const char *const *)held;
    cd.ninputs = nheld;
    cd.output = out;
    wd_convert_report cr;
    TRY(wd_convert(&cd, &cr));
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    const char *files[] = {out};
    ed.files = files;
    ed.nfiles = 1;
    wd_metrics mt;
    TRY(wd_evaluate(m, &ed, &mt));
    printf("online auc=%.4f logloss=%.4f held-out oov %.4f; %lld steps of %d; vocabularies %lld -> %lld values\n",
           mt.auc, mt.logloss, cr.oov.values ? (double)cr.oov.oov / (double)cr.oov.values : 0.0, (long long)rep.steps,
           batch, (long long)v0, (long long)vocab_values(m));
    remove(out);
    free(list);
    wd_text_spec_free(&spec);
    wd_model_destroy(m);
    return 0;
}
