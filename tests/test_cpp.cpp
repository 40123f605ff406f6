// Proves the header builds and works as C++ (the implementation included):
// writes a file through the public API and reads it back.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    std::string dir = argc > 1 ? argv[1] : "/tmp";
    std::string path = dir + "/cpp.wdr";
    wd_schema s;
    wd_schema_criteo(&s, 1000);
    wd_batch b;
    if (wd_batch_init(&b, &s, 10, 0) != WD_OK) return 1;
    for (int i = 0; i < 10; i++) {
        b.label[i] = (float)(i % 2);
        b.weight[i] = 1.0f;
        for (int d = 0; d < 13; d++) b.dense[i * 13 + d] = wd_count_feature(i * d);
        for (int k = 0; k < 26; k++) b.ids[k][i] = (uint32_t)((i * 31 + k) % 1000);
    }
    b.n = 10;
    wd_writer *w = nullptr;
    bool ok = wd_writer_open(path.c_str(), &s, nullptr, &w) == WD_OK && wd_writer_append(w, &b) == WD_OK &&
              wd_writer_close(w) == WD_OK;
    wd_reader *r = nullptr;
    const wd_batch *back = nullptr;
    ok = ok && wd_reader_open(path.c_str(), &r) == WD_OK && wd_reader_block(r, 0, &back) == WD_OK && back->n == 10;
    for (int i = 0; ok && i < 10; i++)
        for (int k = 0; k < 26; k++) ok = ok && back->ids[k][i] == b.ids[k][i];
    std::vector<float> sc = {0.1f, 0.9f, 0.5f}, y = {0, 1, 1};
    double auc = 0;
    ok = ok && wd_auc(sc.data(), y.data(), nullptr, 3, &auc) == WD_OK && auc == 1.0;
    wd_reader_close(r);
    wd_batch_free(&b);
    std::printf("%s test_cpp_roundtrip\n", ok ? "PASS" : "FAIL");
    if (!ok) std::printf("  %s\n", wd_last_error());
    return ok ? 0 : 1;
}
