// Serving from C++: load a .wdm model and score samples built in memory.
// Build: c++ -O2 -std=c++17 -o predict examples/predict.cpp -lzstd -lpthread -lm
// Usage: predict MODEL.wdm DATA.wdr   (scores the first block of DATA.wdr,
//        then one hand-built sample)
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <cstdio>
#include <memory>
#include <vector>

struct ModelDeleter { void operator()(wd_model *m) const { wd_model_destroy(m); } };
struct BatchDeleter { void operator()(wd_batch *b) const { wd_batch_free(b); delete b; } };

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

    // one sample assembled by the serving code: dense counts and hashed ids
    std::unique_ptr<wd_batch, BatchDeleter> one(new wd_batch());
    if (wd_batch_init(one.get(), s, 1, 16) != WD_OK) return 1;
    for (int d = 0; d < s->ndense; d++) one->dense[d] = wd_count_feature(d + 1);
    for (int k = 0; k < s->nslots; k++) {
        uint32_t id = wd_hash_bucket("example", 7, k, s->slot[k].buckets);
        if (s->slot[k].kind == WD_MULTI_HOT) { one->ids[k][0] = id; one->offs[k][1] = 1; }
        else one->ids[k][0] = id;
    }
    one->label[0] = 0; one->weight[0] = 1; one->n = 1;
    float q = 0;
    if (wd_predict(model.get(), one.get(), &q) != WD_OK) { std::fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    std::printf("hand-built sample: p = %.4f\n", q);
    return 0;
}
