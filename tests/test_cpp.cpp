// Proves the header builds and works as C++ (the implementation included):
// writes a file through the public API and reads it back, checks metrics,
// features and hashes against values computed or pinned here (the C++ build
// must give the ids the C build gives), and trains, saves, loads and
// predicts a small model, and serves it as a C++ program would (a
// predictor, std::string_view values). Usage: test_cpp [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

static std::string dir = "/tmp";

static void fill(wd_batch &b) {
    for (int i = 0; i < 10; i++) {
        b.label[i] = (float)(i % 2);
        b.weight[i] = 1.0f;
        for (int d = 0; d < 13; d++) b.dense[i * 13 + d] = wd_count_feature(i * d - 7);
        for (int k = 0; k < 26; k++) b.ids[k][i] = (uint32_t)((i * 31 + k * 7) % 1000);
    }
    b.n = 10;
}

static void test_cpp_roundtrip() {
    std::string path = dir + "/cpp.wdr";
    wd_schema s;
    wd_schema_criteo(&s, 1000);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &s, 10, 0));
    fill(b);
    wd_writer *w = nullptr;
    REQUIRE_OK(wd_writer_open(path.c_str(), &s, nullptr, &w));
    CHECK_OK(wd_writer_append(w, &b));
    REQUIRE_OK(wd_writer_close(w));
    wd_reader *r = nullptr;
    REQUIRE_OK(wd_reader_open(path.c_str(), &r));
    const wd_batch *back = nullptr;
    REQUIRE_OK(wd_reader_block(r, 0, &back));
    REQUIRE(back->n == 10 && wd_schema_equal(wd_reader_schema(r), &s));
    int bad = 0;
    for (int i = 0; i < 10; i++) {
        bad += back->label[i] != b.label[i];
        for (int d = 0; d < 13; d++) bad += back->dense[i * 13 + d] != b.dense[i * 13 + d];
        for (int k = 0; k < 26; k++) bad += back->ids[k][i] != b.ids[k][i];
    }
    CHECK(bad == 0);
    int64_t badblk = 0;
    CHECK_OK(wd_reader_verify(r, &badblk));
    CHECK(badblk == -1);
    wd_reader_close(r);
    wd_batch_free(&b);
}

static void test_cpp_metrics() {
    // unweighted 3/4; weighted (3*1 + 0.5*1 + 0.5*2) / (3.5 * 3); a weighted tie
    std::vector<float> sc = {0.1f, 0.4f, 0.35f, 0.8f}, y = {0, 0, 1, 1}, w = {1, 2, 3, 0.5f};
    double auc = 0;
    CHECK_OK(wd_auc(sc.data(), y.data(), nullptr, 4, &auc));
    CHECK(std::fabs(auc - 0.75) < 1e-15);
    CHECK_OK(wd_auc(sc.data(), y.data(), w.data(), 4, &auc));
    CHECK(std::fabs(auc - 4.5 / 10.5) < 1e-15);
    std::vector<float> s2 = {0.5f, 0.5f, 0.2f}, y2 = {1, 0, 0}, w2 = {2, 3, 1};
    CHECK_OK(wd_auc(s2.data(), y2.data(), w2.data(), 3, &auc));
    CHECK(std::fabs(auc - 0.625) < 1e-15);
    std::vector<float> p4 = {0.5f, 0.25f}, y4 = {1, 0}, w4 = {2, 1};
    CHECK(std::fabs(wd_logloss(p4.data(), y4.data(), w4.data(), 2) - (2 * std::log(2.0) - std::log(0.75)) / 3) < 1e-9);
}

static void test_cpp_features_and_hash() {
    int bad = 0;
    for (int64_t x = -500; x <= 5000; x++) {
        double want = x >= 0 ? std::log1p((double)x) : -std::log1p(-(double)x);
        bad += !(std::fabs(wd_count_feature(x) - want) <= 6e-8 * std::fabs(want));
    }
    CHECK(bad == 0);
    // the same pinned values as tests/test_wd.c (C build)
    CHECK(wd_hash_bytes("68fd1e64", 8, 3) == 6325684233314481914ull);
    CHECK(wd_hash_bytes("hello world, this is long", 25, 3) == 12198993382989205395ull);
    CHECK(wd_hash_bucket("", 0, 21, 1u << 20) == 466766u && wd_hash_bucket("68fd1e64", 8, 0, 1u << 20) == 415238u);
    // a Criteo line parsed in C++: ids pinned, dense by the log1p rule
    wd_text_spec *t = new wd_text_spec();
    wd_text_spec_criteo(t, 1000);
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &t->schema, 0, 0));
    std::string line = "1\t1\t-3\t5\t\t1382\t4\t15\t2\t181\t1\t2\t\t2\t68fd1e64\t80e26c9b\tfb936136\t7b4723c4\t25c83c98\t7e0ccccf\tde7995b8\t1f89b562\ta73ee510\ta8cd5504\tb2cb9c98\t37c9c164\t2824a5f6\t1adce6ef\t8ba8b39a\t891b62e7\te5ba7672\tf54016b9\t21ddcdc9\tb1252a9d\t07b5194c\t\t3a171ecb\tc5c50484\te8b83407\t9727dd16";
    REQUIRE_OK(wd_parse_line(t, line.data(), line.size(), &b));
    static const uint32_t ids[26] = {478, 42, 803, 56, 721, 161, 594, 506, 906, 373, 243, 181, 788, 661, 876, 22, 678, 306, 680, 166, 621, 358, 426, 740, 796, 938};
    for (int k = 0; k < 26; k++) CHECK(b.ids[k][0] == ids[k]);
    CHECK(b.label[0] == 1.0f && b.dense[3] == 0.0f && std::fabs(b.dense[1] + std::log1p(3.0)) < 1e-6 && std::fabs(b.dense[4] - std::log1p(1382.0)) < 1e-6);
    wd_batch_free(&b);
    delete t;
}

static void test_cpp_train_save_predict() {
    std::string data = dir + "/cpp-gen.wdr", model = dir + "/cpp.wdm";
    std::remove(data.c_str());
    wd_gen_desc g = {};
    g.output = data.c_str(); g.rows = 800; g.seed = 2; g.max_card = 100; g.block_samples = 200;
    REQUIRE_OK(wd_gen(&g, nullptr));
    wd_reader *r = nullptr;
    REQUIRE_OK(wd_reader_open(data.c_str(), &r));
    wd_model_desc md = {};
    md.schema = wd_reader_schema(r);
    md.embed_dim = 4; md.hidden[0] = 8; md.ncross = 1; md.cross[0][0] = 0; md.cross[0][1] = 1; md.cross_buckets = 100; md.seed = 1;
    wd_model *m = nullptr;
    wd_status st = wd_model_create(&md, &m);
    wd_batch b;
    if (!st) st = wd_batch_init(&b, wd_reader_schema(r), 0, 0);
    if (!st) st = wd_reader_read_block(r, 0, &b);
    wd_reader_close(r);
    REQUIRE_OK(st);
    const char *files[1] = {data.c_str()};
    wd_train_desc td = {};
    td.files = files; td.nfiles = 1; td.batch_size = 100; td.threads = 2; td.epochs = 2;
    wd_train_report rep;
    REQUIRE_OK(wd_train(m, &td, &rep));
    CHECK(rep.steps == 16 && std::isfinite(rep.last_loss) && rep.last_loss > 0);
    REQUIRE_OK(wd_model_save(m, model.c_str()));
    wd_model *m2 = nullptr;
    REQUIRE_OK(wd_model_load(model.c_str(), &m2));
    std::vector<float> p1(b.n), p2(b.n);
    CHECK_OK(wd_predict(m, &b, p1.data()));
    CHECK_OK(wd_predict(m2, &b, p2.data()));
    int same = 0, inside = 0;
    for (int i = 0; i < b.n; i++) { same += p1[i] == p2[i]; inside += p1[i] > 0 && p1[i] < 1; }
    CHECK(b.n == 200 && same == b.n && inside == b.n);
    int64_t ep = 0, bt = 0, stp = 0;
    wd_model_position(m2, &ep, &bt, &stp);
    CHECK(ep == 2 && bt == 0 && stp == 16);
    wd_batch_free(&b);
    wd_model_destroy(m);
    wd_model_destroy(m2);
}

// A C++ server's path: a predictor (const model, one per thread, reused),
// requests as std::string_view values (wd_batch_add with lengths: no copies; raw counts) and as
// label-less lines (wd_parse_unlabeled), one batch refilled with
// wd_batch_clear. Each request's probability must equal wd_predict's on the
// same sample, bit for bit, and the string_view path must map as the line does.
static void test_cpp_serving() {
    wd_schema s;
    wd_schema_criteo(&s, 1000);
    wd_model_desc md = {};
    md.schema = &s;
    md.embed_dim = 4; md.hidden[0] = 16; md.seed = 3;
    wd_model *mm = nullptr;
    REQUIRE_OK(wd_model_create(&md, &mm));
    const wd_model *m = mm;
    wd_text_spec spec;
    wd_text_spec_criteo(&spec, 1000);
    std::string line = "5\t\t-2\t7\t0\t1\t2\t3\t4\t5\t6\t7\t8\t"
                       "aa\tbb\tcc\tdd\tee\tff\tgg\thh\tii\tjj\tkk\tll\tmm\tnn\too\tpp\tqq\trr\tss\ttt\tuu\tvv\tww\txx\tyy\tzz";
    std::vector<std::string_view> fields;
    for (size_t at = 0;;) {
        size_t tab = line.find('\t', at);
        fields.emplace_back(std::string_view(line).substr(at, tab == std::string::npos ? std::string::npos : tab - at));
        if (tab == std::string::npos) break;
        at = tab + 1;
    }
    REQUIRE(fields.size() == 39);
    const char *cat[26];
    size_t len[26];
    double dense[13];
    for (int j = 0; j < 13; j++) dense[j] = fields[j].empty() ? NAN : (double)std::stoll(std::string(fields[j]));
    for (int k = 0; k < 26; k++) { cat[k] = fields[13 + k].data(); len[k] = fields[13 + k].size(); }
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &s, 4, 0));
    wd_predictor *p = nullptr;
    wd_predictor_desc pd = {};
    CHECK_OK(wd_predictor_create(m, &pd, &p));
    float prob[4] = {0}, want[4] = {0};
    int rounds = 0;
    for (int r = 0; p && r < 3; r++, rounds++) {
        wd_batch_clear(&b);
        CHECK_OK(wd_batch_add(&spec, &b, 0.0f, dense, 13, cat, len, 26));
        CHECK_OK(wd_parse_unlabeled(&spec, line.data(), line.size(), &b));
        CHECK(b.n == 2 && std::memcmp(b.dense, b.dense + 13, 13 * sizeof(float)) == 0);
        for (int k = 0; k < 26; k++) CHECK(b.ids[k][0] == b.ids[k][1] && b.ids[k][0] == wd_hash_bucket(cat[k], len[k], k, 1000));
        CHECK_OK(wd_predictor_run(p, &b, prob));
        CHECK_OK(wd_predict(m, &b, want));
        CHECK(std::memcmp(prob, want, 2 * sizeof(float)) == 0 && prob[0] == prob[1] && prob[0] > 0 && prob[0] < 1);
    }
    CHECK(rounds == 3 && b.cap == 4);
    wd_predictor_destroy(p);
    wd_batch_free(&b);
    wd_model_destroy(mm);
}

int main(int argc, char **argv) {
    if (argc > 1) dir = argv[1];
    RUN(test_cpp_roundtrip);
    RUN(test_cpp_metrics);
    RUN(test_cpp_features_and_hash);
    RUN(test_cpp_train_save_predict);
    RUN(test_cpp_serving);
    return test_summary("test_cpp");
}
