// Serving from C++: load a .wdm model and score samples built in memory.
// Build: c++ -O2 -std=c++17 -o predict examples/predict.cpp -lzstd -lz -lpthread -lm
// Usage: predict MODEL.wdm DATA.wdr   (scores the first block of DATA.wdr,
//        then one request made of raw values, mapped by the model's own
//        input format and vocabularies: the model file is all it needs)
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <cstdio>
#include <memory>
#include <vector>

struct ModelDeleter { void operator()(wd_model *m) const { wd_model_destroy(m); } };
struct BatchDeleter { void operator()(wd_batch *b) const { wd_batch_free(b); delete b; } };
struct SpecDeleter { void operator()(wd_text_spec *t) const { wd_text_spec_free(t); delete t; } };

int main(int argc, char **argv) {
    if (argc < 3) { std::fprintf(stderr, "usage: %s MODEL.wdm DATA.wdr\n", argv[0]); return 2; }
    wd_model *raw = nullptr;
    if (wd_model_load(argv[1], &raw) != WD_OK) { std::fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    std::unique_ptr<wd_model, ModelDeleter> model(raw);
    const wd_schema *s = wd_model_schema(model.get());

    // a block of stored samples
    wd_reader *r = nullptr;
    if (wd_reader_open(argv[2], &r) != WD_OK) { std::fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    const wd_batch *blk = nullptr;
    if (wd_reader_block(r, 0, &blk) != WD_OK) { std::fprintf(stderr, "%s\n", wd_last_error()); wd_reader_close(r); return 1; }
    std::vector<float> p((size_t)blk->n);
    if (wd_predict(model.get(), blk, p.data()) != WD_OK) { std::fprintf(stderr, "%s\n", wd_last_error()); wd_reader_close(r); return 1; }
    double mean = 0;
    for (float x : p) mean += x;
    std::printf("scored %d stored samples, mean p = %.4f, first p = %.4f\n", blk->n, mean / blk->n, p[0]);
    wd_reader_close(r);

    // one request assembled by the serving code from raw values: the model's
    // spec maps them exactly as `wd convert` mapped its training data
    std::unique_ptr<wd_text_spec, SpecDeleter> spec(new wd_text_spec());
    if (wd_model_spec(model.get(), spec.get()) != WD_OK) { std::fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    if (spec->format == WD_FMT_LIBSVM) { std::fprintf(stderr, "a libsvm model takes feature indexes: build its batch with wd_parse_line\n"); return 1; }
    std::unique_ptr<wd_batch, BatchDeleter> one(new wd_batch());
    if (wd_batch_init(one.get(), s, 1, 0) != WD_OK) return 1;
    std::vector<double> dense((size_t)s->ndense);
    for (int d = 0; d < s->ndense; d++) dense[(size_t)d] = d + 1;   // raw values: the spec's rule applies
    std::vector<const char *> cat((size_t)s->nslots, "example");    // one raw string per slot
    if (wd_batch_add(spec.get(), one.get(), 0.0f, dense.data(), (int)dense.size(), cat.data(), nullptr,
                     (int)cat.size()) != WD_OK) {
        std::fprintf(stderr, "%s\n", wd_last_error());
        return 1;
    }
    float q = 0;
    if (wd_predict(model.get(), one.get(), &q) != WD_OK) { std::fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    std::printf("hand-built sample: p = %.4f\n", q);
    return 0;
}
