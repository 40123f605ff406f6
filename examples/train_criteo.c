// A host program that trains Wide&Deep from C on Criteo TSV:
// converts the text to records, trains with a progress callback, evaluates,
// saves the model. Build: cc -O2 -o train_criteo examples/train_criteo.c -lzstd -lz -lpthread -lm
// Usage: train_criteo TRAIN.tsv TEST.tsv OUTDIR
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>

static int on_progress(void *user, const wd_progress *p) {
    (void)user;
    if (p->valid_auc == p->valid_auc)
        printf("epoch %lld: step %lld, loss %.4f, valid AUC %.4f\n", (long long)p->epoch, (long long)p->step, p->loss, p->valid_auc);
    return 0;   // nonzero would stop training at the next step
}

static int check(wd_status st) {
    if (st != WD_OK) fprintf(stderr, "error: %s: %s\n", wd_status_string(st), wd_last_error());
    return st != WD_OK;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s TRAIN.tsv TEST.tsv OUTDIR\n", argv[0]); return 2; }
    char train[512], test[512], model[512];
    snprintf(train, sizeof train, "%s/train.wdr", argv[3]);
    snprintf(test, sizeof test, "%s/test.wdr", argv[3]);
    snprintf(model, sizeof model, "%s/criteo.wdm", argv[3]);

    // 1. text -> records (once); the test set shares the training id space
    static wd_text_spec spec;
    wd_text_spec_criteo(&spec, 100000);
    const char *in_train[1] = {argv[1]}, *in_test[1] = {argv[2]};
    wd_convert_desc cd = {0};
    cd.spec = &spec; cd.threads = 2;
    cd.inputs = in_train; cd.ninputs = 1; cd.output = train;
    if (check(wd_convert(&cd, NULL))) return 1;
    cd.inputs = in_test; cd.output = test;
    if (check(wd_convert(&cd, NULL))) return 1;

    // 2. a model for that schema
    wd_reader *r;
    if (check(wd_reader_open(train, &r))) return 1;
    wd_model_desc md = {0};
    md.schema = wd_reader_schema(r);
    md.embed_dim = 8;
    md.hidden[0] = 128; md.hidden[1] = 64;
    wd_model *m;
    wd_status st = wd_model_create(&md, &m);
    wd_reader_close(r);
    if (check(st)) return 1;

    // 3. train, validating after each epoch
    const char *files[1] = {train}, *valid[1] = {test};
    wd_train_desc td = {0};
    td.files = files; td.nfiles = 1; td.valid_files = valid; td.nvalid = 1;
    td.epochs = 3; td.batch_size = 256;
    td.progress = on_progress;
    wd_train_report rep;
    if (check(wd_train(m, &td, &rep))) { wd_model_destroy(m); return 1; }

    // 4. evaluate and save
    wd_eval_desc ed = {0};
    ed.files = valid; ed.nfiles = 1;
    wd_metrics mt;
    if (check(wd_evaluate(m, &ed, &mt)) || check(wd_model_save(m, model))) { wd_model_destroy(m); return 1; }
    printf("test AUC %.4f, log loss %.4f on %lld samples; %.0f samples/s; model in %s\n", mt.auc, mt.logloss, (long long)mt.samples, rep.samples_per_s, model);
    wd_model_destroy(m);
    return 0;
}
