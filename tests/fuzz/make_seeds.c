// Writes the seed corpora into tests/fuzz/corpus/<harness>/ (run by `make fuzz`
// when a corpus is missing): small valid inputs of each kind.
#define WIDEDEEP_IMPLEMENTATION
#include "../../widedeep.h"
#include <sys/stat.h>

static void put(const char *dir, const char *name, const void *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(p, 1, n, f); fclose(f); }
}
int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "tests/fuzz/corpus";
    char d[5][512];
    const char *names[5] = {"wdr", "criteo", "libsvm", "csv", "wdm"};
    mkdir(root, 0755);
    for (int i = 0; i < 5; i++) { snprintf(d[i], sizeof d[i], "%s/%s", root, names[i]); mkdir(d[i], 0755); }
    // a small .wdr with one-hot and multi-hot slots, two blocks
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = 2; s.nslots = 2;
    snprintf(s.slot[0].name, WD_NAME_MAX, "a"); s.slot[0].buckets = 10;
    snprintf(s.slot[1].name, WD_NAME_MAX, "b"); s.slot[1].buckets = 7; s.slot[1].kind = WD_MULTI_HOT;
    wd_batch b;
    wd_batch_init(&b, &s, 6, 20);
    for (int i = 0; i < 6; i++) {
        b.label[i] = (float)(i & 1); b.weight[i] = 1; b.dense[2 * i] = (float)i; b.dense[2 * i + 1] = -1.5f;
        b.ids[0][i] = (uint32_t)i; b.ids[1][b.offs[1][i]] = (uint32_t)(i % 7); b.offs[1][i + 1] = b.offs[1][i] + 1;
    }
    b.n = 6;
    char path[600];
    snprintf(path, sizeof path, "%s/small.wdr", d[0]);
    wd_writer *w;
    wd_writer_desc wdsc;
    memset(&wdsc, 0, sizeof wdsc);
    wdsc.block_samples = 4;
    if (wd_writer_open(path, &s, &wdsc, &w) || wd_writer_append(w, &b) || wd_writer_close(w)) return 1;
    const char *criteo = "0\t1\t1\t5\t0\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\t80e26c9b\tfb936136\t7b4723c4\t25c83c98\t7e0ccccf\tde7995b8\t1f89b562\ta73ee510\ta8cd5504\tb2cb9c98\t37c9c164\t2824a5f6\t1adce6ef\t8ba8b39a\t891b62e7\te5ba7672\tf54016b9\t21ddcdc9\tb1252a9d\t07b5194c\t\t3a171ecb\tc5c50484\te8b83407\t9727dd16\n1\t\t-1\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\r\n";
    put(d[1], "lines.tsv", criteo, strlen(criteo));
    const char *svm = "1 3:1 7:1 120:1 201:2.5\n-1 200:1\n0 5:1 99:1 199:1\n";
    put(d[2], "lines.svm", svm, strlen(svm));
    const char *csv = "1,0,14102100,1005,1fbe01fe,ecad2386\n2,1,14102101,1002,,a99f214a\n";
    put(d[3], "lines.csv", csv, strlen(csv));
    // a small model
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = &s; md.embed_dim = 2; md.hidden[0] = 3; md.ncross = 0;
    wd_model *m;
    if (wd_model_create(&md, &m)) return 1;
    snprintf(path, sizeof path, "%s/small.wdm", d[4]);
    if (wd_model_save(m, path)) return 1;
    wd_model_destroy(m);
    wd_batch_free(&b);
    // a converted file (.wdr v3: a vocabulary and the input format, derived
    // slots) and a model trained on it (.wdm v3: its input contract)
    char csvin[600], conv[600];
    snprintf(csvin, sizeof csvin, "%s/lines.csv", d[3]);
    snprintf(conv, sizeof conv, "%s/converted.wdr", d[0]);
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.header = "id,click,hour,C1,site_id,app_id"; cd.label = "click"; cd.cat = "C1,site_id,app_id"; cd.dense = "id";
    cd.derive = "hour_of_day=hour[6:8],day_of_week=weekday(hour[0:6])";
    wd_text_spec t;
    if (wd_text_spec_csv_desc(&t, &cd)) return 1;
    wd_convert_desc cv;
    memset(&cv, 0, sizeof cv);
    const char *ins[1] = {csvin};
    cv.spec = &t; cv.inputs = ins; cv.ninputs = 1; cv.output = conv; cv.min_count = 1;
    if (wd_convert(&cv, NULL)) return 1;
    wd_reader *r;
    if (wd_reader_open(conv, &r)) return 1;
    md.schema = wd_reader_schema(r);
    if (wd_model_create(&md, &m)) return 1;
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    const char *tf[1] = {conv};
    td.files = tf; td.nfiles = 1; td.threads = 1;
    snprintf(path, sizeof path, "%s/contract.wdm", d[4]);
    if (wd_train(m, &td, NULL) || wd_model_save(m, path)) return 1;
    snprintf(path, sizeof path, "%s/export.wdm", d[4]);   // the same model for serving (no optimizer state)
    if (wd_model_export(m, path)) return 1;
    wd_model_destroy(m);
    wd_reader_close(r);
    return 0;
}
