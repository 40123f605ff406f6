// The checkpoint loader: arbitrary bytes must load as a finite model or fail
// cleanly, and a model that loads must predict probabilities in [0, 1].
#include "fuzz_common.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    wd_model *m;
    if (wd_model_load(fz_file(data, n), &m) != WD_OK) return 0;
    for (int64_t i = 0; i < m->P; i++) if (!isfinite(m->dense[i])) abort();
    // a batch of 3 samples over the model's schema: ids spread over each slot, dense 0, 1, -1
    wd_batch b;
    if (wd_batch_init(&b, &m->schema, 3, 3) == WD_OK) {
        for (int i = 0; i < 3; i++) {
            b.label[i] = 0; b.weight[i] = 1;
            for (int j = 0; j < b.ndense; j++) b.dense[i * b.ndense + j] = (float)(i == 2 ? -1 : i);
            for (int k = 0; k < b.nslots; k++) {
                uint32_t id = (uint32_t)(((uint64_t)m->schema.slot[k].buckets * (uint64_t)i) / 3);
                if (b.kind[k] == WD_MULTI_HOT) { b.ids[k][i] = id; b.offs[k][i + 1] = (uint32_t)i + 1; }
                else b.ids[k][i] = id;
            }
        }
        b.n = 3;
        float probs[3];
        if (wd_predict(m, &b, probs) == WD_OK)
            for (int i = 0; i < 3; i++) if (!(probs[i] >= 0 && probs[i] <= 1)) abort();
        wd_batch_free(&b);
    }
    wd_text_spec t;   // a model with an input contract gives a spec that parses
    if (wd_model_spec(m, &t) == WD_OK) {
        if (wd_batch_init(&b, &m->schema, 1, 1) == WD_OK) {
            const char *line = t.format == WD_FMT_LIBSVM ? "1 0:1" : t.format == WD_FMT_CSV ? "1,0,14102100,1005,1fbe01fe,ecad2386" : "0\t1\t\t\t\t\t\t\t\t\t\t\t\t\ta\tb\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
            float p;
            if (wd_parse_line(&t, line, strlen(line), &b) == WD_OK && wd_predict(m, &b, &p) == WD_OK && !(p >= 0 && p <= 1)) abort();
            wd_batch_free(&b);
        }
        wd_text_spec_free(&t);
    }
    wd_model_destroy(m);
    return 0;
}
