// Fault injection: every allocation of the main paths failed in turn, and
// writes to a device that is full. Built with ASan: a leak on any error
// path fails the run at exit. Usage: test_faults [TMPDIR]
// the implementation is linked in (tests/impl.c); this file uses the declarations only
#define _GNU_SOURCE   // fork, unlink, _exit
#include "../widedeep.h"
#include "testlib.h"
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char TMP[200] = "/tmp";
static long g_count, g_fail_at;   // atomics: the trainer allocates on several threads
static void *count_alloc(size_t n, void *u) {
    (void)u;
    long k = __atomic_add_fetch(&g_count, 1, __ATOMIC_RELAXED);
    if (k == __atomic_load_n(&g_fail_at, __ATOMIC_RELAXED)) return NULL;
    return malloc(n);
}
static void count_free(void *p, void *u) { (void)u; free(p); }
static const wd_allocator HOOK = {count_alloc, count_free, NULL};


typedef wd_status (*path_fn)(void);
// Runs fn once counting allocations, then once per k failing the k-th.
// Every injected failure must end the run in WD_ERR_NOMEM (the documented
// status) with a message saying "out of memory" (the first failure's: the
// clean-up after it never rewrites it), and leave no file under the output name. A run
// whose k-th allocation never happened (fewer allocations this time, e.g.
// thread timing) had no failure injected: it must succeed, and is counted.
static void sweep(const char *name, path_fn fn, const char *output) {
    g_count = 0; g_fail_at = -1;
    wd_set_allocator(&HOOK);
    wd_status st = fn();
    wd_set_allocator(NULL);
    REQUIRE_OK(st);
    long total = g_count, nomem = 0, other = 0, survived = 0, unreached = 0, left = 0, unnamed = 0;
    REQUIRE(total > 0);
    for (long k = 1; k <= total; k++) {
        if (output) unlink(output);
        g_count = 0; g_fail_at = k;
        wd_set_allocator(&HOOK);
        st = fn();
        wd_set_allocator(NULL);
        int reached = g_count >= k;
        if (!reached) { unreached++; if (st != WD_OK) { other++; printf("  %s: allocation %ld was never made, yet the run failed: %s: %s\n", name, k, wd_status_string(st), wd_last_error()); } continue; }
        if (st == WD_ERR_NOMEM && wd_last_error()[0]) {
            nomem++;
            // the first failure's message, not a clean-up's after it
            if (!strstr(wd_last_error(), "out of memory") && ++unnamed < 6)
                printf("  %s: allocation %ld failed: the message does not say so: %s\n", name, k, wd_last_error());
        }
        else if (st == WD_OK) { survived++; printf("  %s: allocation %ld failed but the run succeeded\n", name, k); }
        else { other++; if (other < 6) printf("  %s: allocation %ld failed: %s (want %s): %s\n", name, k, wd_status_string(st), wd_status_string(WD_ERR_NOMEM), wd_last_error()); }
        // a failed run leaves no file under the output name
        if (st != WD_OK && output && file_exists(output)) { left++; printf("  %s: allocation %ld failed (%s) but %s exists\n", name, k, wd_last_error(), output); }
    }
    printf("  %-8s %4ld allocations, each failed in turn: %ld ended in WD_ERR_NOMEM, %ld in another status, %ld succeeded anyway, %ld not reached, %ld left output\n",
           name, total, nomem, other, survived, unreached, left);
    CHECK(nomem == total - unreached && other == 0 && survived == 0 && left == 0 && unnamed == 0);
    CHECK(unreached == 0);   // these paths allocate the same way every run
}

static char DATA[300], TSV[300], OUT[300], MODEL[300], MODEL2[300];

static wd_status path_open_verify(void) {
    wd_reader *r;
    wd_status st = wd_reader_open(DATA, &r);
    if (st) return st;
    int64_t bad;
    st = wd_reader_verify(r, &bad);
    wd_reader_close(r);
    return st;
}
static wd_status path_convert(void) {
    static wd_text_spec t;
    wd_text_spec_criteo(&t, 1000);
    const char *ins[1] = {TSV};
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = &t; d.inputs = ins; d.ninputs = 1; d.output = OUT; d.threads = 2; d.block_samples = 100;
    return wd_convert(&d, NULL);
}
static wd_status path_train_save(void) {
    wd_reader *r;
    wd_status st = wd_reader_open(DATA, &r);
    if (st) return st;
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = wd_reader_schema(r);
    md.embed_dim = 2; md.hidden[0] = 4; md.ncross = 1; md.cross[0][0] = 0; md.cross[0][1] = 1; md.cross_buckets = 50;
    wd_model *m;
    st = wd_model_create(&md, &m);
    wd_reader_close(r);
    if (st) return st;
    const char *files[1] = {DATA};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = 100; td.threads = 2; td.max_steps = 3;
    st = wd_train(m, &td, NULL);
    if (!st) st = wd_model_save(m, MODEL);
    wd_model_destroy(m);
    return st;
}
static wd_status path_load_eval(void) {
    wd_model *m;
    wd_status st = wd_model_load(MODEL2, &m);
    if (st) return st;
    const char *files[1] = {DATA};
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = files; e.nfiles = 1; e.threads = 2;
    wd_metrics mt;
    st = wd_evaluate(m, &e, &mt);
    wd_model_destroy(m);
    return st;
}

// Serving: a loaded model, a predictor on a block and on a line without its
// label, and wd_predict.
static wd_status path_serve(void) {
    wd_model *m;
    wd_status st = wd_model_load(MODEL2, &m);
    if (st) return st;
    wd_reader *r = NULL;
    const wd_batch *blk = NULL;
    wd_predictor *p = NULL;
    wd_predictor_desc pd = {64, 0};
    static float prob[1000];
    wd_batch b;
    memset(&b, 0, sizeof b);
    static wd_text_spec t;
    wd_text_spec_criteo(&t, 0);
    st = wd_text_spec_match(&t, wd_model_schema(m));
    if (!st) st = wd_reader_open(DATA, &r);
    if (!st) st = wd_reader_block(r, 0, &blk);
    if (!st) st = wd_predictor_create(m, &pd, &p);
    if (!st) st = wd_predictor_run(p, blk, prob);
    if (!st) st = wd_predict(m, blk, prob);
    if (!st) st = wd_batch_init(&b, wd_model_schema(m), 0, 0);
    const char *line = "1\t2\t3\t\t\t\t\t\t\t\t\t\t\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt\tu\tv\tw\tx\ty\tz";
    if (!st) st = wd_parse_unlabeled(&t, line, strlen(line), &b);
    if (!st) st = wd_predictor_run(p, &b, prob);
    wd_batch_free(&b);
    wd_predictor_destroy(p);
    wd_reader_close(r);
    wd_model_destroy(m);
    return st;
}

static int g_data_ok;   // test_setup made the data and the model
static void test_allocation_sweeps(void) {
    REQUIRE(g_data_ok);
    sweep("open", path_open_verify, NULL);
    sweep("convert", path_convert, OUT);
    sweep("train", path_train_save, MODEL);
    sweep("load", path_load_eval, NULL);
    sweep("serve", path_serve, NULL);
}

// Runs fn in a child whose files may not grow past `limit` bytes (a device
// that is full); returns the child's wd_status.
static int in_small_device(path_fn fn, rlim_t limit) {
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);   // write() then fails with EFBIG instead of killing us
        struct rlimit rl = {limit, limit};
        setrlimit(RLIMIT_FSIZE, &rl);
        _exit((int)fn());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_full_device(void) {
    REQUIRE(g_data_ok);
    // earlier files exist under the final names
    REQUIRE_OK(path_convert());
    REQUIRE_OK(path_train_save());
    size_t n1 = 0, n2 = 0;
    uint8_t *before_out = slurp(OUT, &n1), *before_model = slurp(MODEL, &n2);
    REQUIRE(before_out && before_model && n1 > 0 && n2 > 0);
    for (rlim_t limit = 0; limit < 40000; limit += 3999) {
        int st1 = in_small_device(path_convert, limit), st2 = in_small_device(path_train_save, limit);
        CHECK(st1 == WD_ERR_IO && st2 == WD_ERR_IO);
        size_t m1, m2;
        uint8_t *after_out = slurp(OUT, &m1), *after_model = slurp(MODEL, &m2);
        CHECK(after_out && m1 == n1 && !memcmp(before_out, after_out, n1));      // untouched
        CHECK(after_model && m2 == n2 && !memcmp(before_model, after_model, n2));
        free(after_out); free(after_model);
    }
    wd_model *m;
    REQUIRE_OK(wd_model_load(MODEL, &m));
    wd_model_destroy(m);
    free(before_out); free(before_model);
}

// Setup as a test: the data (600 rows, its TSV) and a trained model. Stale
// files from an earlier run are removed first, so a failed setup leaves the
// later tests nothing to pass on: they REQUIRE g_data_ok.
static void test_setup(void) {
    g_data_ok = 0;
    const char *stale[] = {DATA, TSV, OUT, MODEL, MODEL2};
    for (int i = 0; i < 5; i++) unlink(stale[i]);
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = DATA; g.tsv = TSV; g.rows = 600; g.seed = 4; g.max_card = 50; g.block_samples = 200;
    wd_gen_report rep;
    REQUIRE_OK(wd_gen(&g, &rep));
    REQUIRE(rep.rows == 600 && file_exists(DATA) && file_exists(TSV));
    REQUIRE_OK(path_train_save());
    REQUIRE(rename(MODEL, MODEL2) == 0);
    REQUIRE_OK(path_load_eval());
    g_data_ok = 1;
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    snprintf(DATA, sizeof DATA, "%s/f-data.wdr", TMP);
    snprintf(TSV, sizeof TSV, "%s/f-data.tsv", TMP);
    snprintf(OUT, sizeof OUT, "%s/f-out.wdr", TMP);
    snprintf(MODEL, sizeof MODEL, "%s/f-model.wdm", TMP);
    snprintf(MODEL2, sizeof MODEL2, "%s/f-model2.wdm", TMP);
    RUN(test_setup);
    RUN(test_allocation_sweeps);
    RUN(test_full_device);
    return test_summary("test_faults");
}
