// redzone.cu - the device plan's red zones (WD_PLAN_REDZONE, widedeep.h section 17; poisoned by
// widedeep_cuda.cu's wdc_plan_poison on the emulated device) against a seeded overrun
// (tests/run.sh: build/cudacpu_redzone). A copy of widedeep_cuda.cu's wdc_colsum_final_k writes the
// plan's logits buffer, each case in a child process:
//   control   as written, in the test build's plan: the right sums, no report
//   caught    one float past the buffer's end, in the same plan: ASan reports the write into the gap
//   needed    the same overrun in the production layout (the gaps closed, each buffer rounded up to 256
//             bytes and the next right after it, as wd_plan_make lays them out without WD_PLAN_REDZONE):
//             nothing reports it, and the next buffer's first float is overwritten, silently
// A case passes only as described; a check that cannot fail is a defect.
#define WIDEDEEP_IMPLEMENTATION
#include "widedeep.h"
#include "child.h"

extern "C" void wdc_plan_poison(const wd_plan *p, char *slab);   // widedeep_cuda.cu, emulated test builds only

enum { OK = 0, WRONG = 3, OVERWROTE = 4 };   // a child's exit status

// widedeep_cuda.cu's wdc_colsum_final_k; bug: j <= m, so thread m writes out[m]
__global__ void colsum_final_k(float *out, const float *partial, int chunks, int m, int bug) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (bug ? j > m : j >= m) return;
    float t = 0.0f;
    for (int c = 0; c < chunks; c++) t += partial[(size_t)c * m + j];
    out[j] = t;
}

// mode 0: control, 1: the overrun with red zones, 2: the overrun in the production layout
static int run_case(int mode) {
    wd_schema s;
    wd_schema_criteo(&s, 1000);
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = &s;
    d.embed_dim = 4;
    d.hidden[0] = 16;
    wd_plan p;
    if (wd_plan_from_desc(&d, 64, 1, &p) != WD_OK) return WRONG;
    int at = -1;
    for (int i = 0; i + 1 < p.n; i++) at = p.e[i].buf == WD_BUF_LOGITS ? i : at;
    // the overrun must land in the gap, or (production layout) in the next buffer: the logits' size a
    // multiple of 256 (no rounding slack) and a gap after it in the test build
    if (at < 0 || p.e[at].bytes % 256 || p.e[at + 1].offset - p.e[at].offset - p.e[at].bytes < 4) return WRONG;
    if (mode == 2) {   // as wd_plan_make lays the plan out without WD_PLAN_REDZONE
        p.total = 0;
        for (int i = 0; i < p.n; i++) {
            p.e[i].bytes = (p.e[i].bytes + 255) & ~(int64_t)255;
            p.e[i].offset = p.total;
            p.total += p.e[i].bytes;
        }
    }
    char *slab = NULL;
    float *partial = NULL;
    int m = (int)(p.e[at].bytes / 4), chunks = 3;
    // (the input: one float more, which only the overrunning thread reads, so that only its write is wrong)
    if (cudaMalloc((void **)&slab, (size_t)p.total) || cudaMalloc((void **)&partial, sizeof(float) * (chunks * m + 1)))
        return WRONG;
    if (mode != 2) wdc_plan_poison(&p, slab);
    float *out = (float *)(slab + p.e[at].offset), *next = (float *)(slab + p.e[at + 1].offset);
    float *h = (float *)malloc(sizeof(float) * (chunks * m + 1)), before = 0, after = 0;
    for (int i = 0; i <= chunks * m; i++) h[i] = (float)(i % 7 + (i == chunks * m));
    cudaMemcpy(partial, h, sizeof(float) * (chunks * m + 1), cudaMemcpyHostToDevice);
    cudaMemcpy(next, &before, sizeof before, cudaMemcpyHostToDevice);
    CUDACPU_GO(colsum_final_k, (m + 1 + 255) / 256, 256, 0)(out, partial, chunks, m, mode != 0);
    cudaMemcpy(h, out, sizeof(float) * m, cudaMemcpyDeviceToHost);
    cudaMemcpy(&after, next, sizeof after, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int j = 0; j < m; j++) bad += h[j] != (float)(j % 7 + (m + j) % 7 + (2 * m + j) % 7);
    free(h);
    cudaFree(partial);
    cudaFree(slab);
    if (bad) return WRONG;
    return after != before ? OVERWROTE : OK;
}

int main(void) {
    const char *name[3] = {"redzone_control", "redzone_overrun_caught", "redzone_needed"};
    int pass = 0, failed = 0;
    for (int mode = 0; mode < 3; mode++) {
        std::string err;
        int rc = run_child([mode] { return run_case(mode); }, err);
        bool report = err.find("Sanitizer") != std::string::npos || err.find("runtime error") != std::string::npos ||
                      err.find("cudacpu:") != std::string::npos;
        bool ok = mode == 0   ? rc == OK && !report
                  : mode == 1 ? rc != OK && rc != WRONG && err.find("use-after-poison") != std::string::npos
                              : rc == OVERWROTE && !report;
        const char *what[3] = {"colsum_final_k into the plan's logits buffer: right, no report",
                               "the same writing out[m]: caught in the red zone after the buffer",
                               "the same without red zones (the production layout): no report, the next buffer "
                               "overwritten"};
        if (ok) {
            pass++;
            printf("PASS %s: %s%s%s\n", name[mode], what[mode], mode == 1 ? ": " : "",
                   mode == 1 ? first_line(err, "use-after-poison").c_str() : "");
        } else {
            failed++;
            printf("FAIL %s: %s: not so (exit %d): %s\n", name[mode], what[mode], rc,
                   first_line(err, "").c_str());
        }
    }
    printf("# cudacpu_redzone: %d passed, %d failed, 0 skipped\n", pass, failed);
    return failed != 0;
}
