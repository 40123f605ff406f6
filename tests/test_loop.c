// The training loop's contract, whatever the backend: stopping at a step
// boundary (progress callback), early stopping and keeping the best model,
// resuming only over the same files, warm starts on new data, the report's
// stage breakdown, the backend interface driven directly, and the checks
// made before the first step. Usage: test_loop [TMPDIR]
// the implementation is linked in (tests/impl.c); this file uses the declarations only
#define _GNU_SOURCE   // unlink
#define WIDEDEEP_INTERNAL   // wd_backend_ops, wd_model_view, wd_test_fail_parse: the header's tier 3
#include "../widedeep.h"
#include "testlib.h"
#include <time.h>
#include <unistd.h>

static char TMP[200] = "/tmp";
static double now_s(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec; }
static char DAY1[300], DAY2[300], VALID[300], CK[300], BEST[300];
static int ready;

static void gen(const char *path, int64_t rows, int64_t first, uint64_t seed) { REQUIRE_OK(tl_gen(path, rows, first, seed, 300, 256)); }
static void test_setup(void) {
    snprintf(DAY1, sizeof DAY1, "%s/loop-day1.wdr", TMP);
    snprintf(DAY2, sizeof DAY2, "%s/loop-day2.wdr", TMP);
    snprintf(VALID, sizeof VALID, "%s/loop-valid.wdr", TMP);
    snprintf(CK, sizeof CK, "%s/loop.wdm", TMP);
    snprintf(BEST, sizeof BEST, "%s/loop-best.wdm", TMP);
    gen(DAY1, 4096, 0, 21);
    gen(DAY2, 3072, 4096, 21);
    gen(VALID, 1024, 9000, 21);
    ready = 1;
}
static wd_model *model(uint64_t seed) {
    wd_reader *r;
    if (wd_reader_open(DAY1, &r)) return NULL;
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = wd_reader_schema(r);
    d.embed_dim = 4; d.hidden[0] = 16; d.seed = seed;
    wd_model *m = NULL;
    wd_status st = wd_model_create(&d, &m);
    wd_reader_close(r);
    return st ? NULL : m;
}
static wd_train_desc desc(const char **files, int nfiles) {
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = nfiles; td.batch_size = 128; td.threads = 2;
    return td;
}
static int models_equal(const wd_model *a, const wd_model *b) {
    wd_model_view va, vb;
    wd_model_view_get((wd_model *)a, &va);
    wd_model_view_get((wd_model *)b, &vb);
    int64_t ne = va.emb ? va.emb_rows * va.E : 0;
    return va.P == vb.P && !memcmp(va.dense, vb.dense, 4 * (size_t)va.P) && !memcmp(va.dense_s1, vb.dense_s1, 4 * (size_t)va.P) &&
           !memcmp(va.wide, vb.wide, 4 * (size_t)va.wide_rows) && !memcmp(va.wide_n, vb.wide_n, 4 * (size_t)va.wide_rows) &&
           (!ne || !memcmp(va.emb, vb.emb, 4 * (size_t)ne)) && *va.step == *vb.step && *va.epoch == *vb.epoch && *va.batch == *vb.batch;
}

// The progress callback asks to stop after step `at`: training ends at a
// step boundary with WD_ERR_ABORTED, the model and checkpoint hold that step,
// and resuming from the checkpoint gives the uninterrupted run's model.
typedef struct stopper { int64_t at; int calls; } stopper;
static int stop_at(void *user, const wd_progress *p) {
    stopper *s = (stopper *)user;
    s->calls++;
    return p->step >= s->at;
}
static void test_stop_and_resume(void) {
    REQUIRE(ready);
    const char *files[1] = {DAY1};
    for (int threads = 1; threads <= 2; threads++) {
        wd_model *full = model(3), *a = model(3);
        REQUIRE(full && a);
        wd_train_desc td = desc(files, 1);
        td.threads = threads; td.epochs = 2;
        REQUIRE_OK(wd_train(full, &td, NULL));
        stopper s = {7, 0};
        td.progress = stop_at; td.user = &s; td.checkpoint_path = CK;
        wd_train_report rep;
        wd_status st = wd_train(a, &td, &rep);
        CHECK(st == WD_ERR_ABORTED && strstr(wd_last_error(), "stopped at step") && strstr(wd_last_error(), "loop.wdm"));
        int64_t ep, bt, step;
        wd_model_position(a, &ep, &bt, &step);
        CHECK(rep.stopped == 1 && step >= 7 && step <= 9 && rep.steps == step && ep == 0 && bt == step);   // at most one step past the request
        wd_model *b = NULL;
        REQUIRE_OK(wd_model_load(CK, &b));
        CHECK(models_equal(a, b));   // the checkpoint is the model at the stop
        td.progress = NULL; td.checkpoint_path = NULL;
        REQUIRE_OK(wd_train(b, &td, NULL));
        CHECK(models_equal(full, b));   // and continuing from it loses nothing
        wd_model_destroy(full); wd_model_destroy(a); wd_model_destroy(b);
    }
}

// Resuming over other files is refused (naming the remedy); a new run on
// them trains them, from the weights and optimizer state kept.
static void test_resume_other_files_refused(void) {
    REQUIRE(ready);
    const char *day1[1] = {DAY1}, *day2[1] = {DAY2};
    wd_model *m = model(4);
    REQUIRE(m);
    wd_train_desc td = desc(day1, 1);
    REQUIRE_OK(wd_train(m, &td, NULL));   // one epoch: the position says it is over
    int64_t step0;
    wd_model_position(m, NULL, NULL, &step0);
    REQUIRE_OK(wd_model_save(m, CK));
    wd_model *r = NULL;
    REQUIRE_OK(wd_model_load(CK, &r));
    td.files = day2;
    wd_train_report rep;
    CHECK(wd_train(r, &td, &rep) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "other training files") && strstr(wd_last_error(), "--init-from"));
    // the same files resume (here: nothing left of the one epoch)
    td.files = day1;
    REQUIRE_OK(wd_train(r, &td, &rep));
    CHECK(rep.steps == 0);
    // a new run on day 2: every batch of it, the step count continuing
    wd_model_new_run(r);
    int64_t ep, bt, step;
    wd_model_position(r, &ep, &bt, &step);
    CHECK(ep == 0 && bt == 0 && step == step0);
    td.files = day2;
    REQUIRE_OK(wd_train(r, &td, &rep));
    wd_model_position(r, &ep, &bt, &step);
    CHECK(rep.steps == 3072 / 128 && step == step0 + 3072 / 128 && ep == 1);
    wd_model_destroy(m); wd_model_destroy(r);
}

// Early stopping ends training after N validations without a better AUC;
// keep_best leaves the best validated model in checkpoint_path.
static int record_auc(void *user, const wd_progress *p) {
    double *best = (double *)user;
    if (!isnan(p->valid_auc) && !(p->valid_auc <= best[0])) { best[0] = p->valid_auc; best[1] = (double)p->step; }
    if (!isnan(p->valid_auc)) best[2]++;
    return 0;
}
static void test_early_stop_and_keep_best(void) {
    REQUIRE(ready);
    const char *files[1] = {DAY1}, *valid[1] = {VALID};
    wd_model *m = model(5);
    REQUIRE(m);
    wd_train_desc td = desc(files, 1);
    td.valid_files = valid; td.nvalid = 1;
    td.epochs = 40; td.eval_every = 4; td.early_stop = 3; td.keep_best = 1; td.checkpoint_path = BEST;
    td.map = NULL;
    double seen[3] = {-1, -1, 0};
    td.progress = record_auc; td.user = seen;
    wd_train_report rep;
    REQUIRE_OK(wd_train(m, &td, &rep));
    int64_t step;
    wd_model_position(m, NULL, NULL, &step);
    printf("  early stop after %lld steps (%g validations); best AUC %.4f at step %lld\n", (long long)step, seen[2], rep.best_auc, (long long)rep.best_step);
    CHECK(rep.stopped == 2 && step < 40 * 4096 / 128);   // it stopped early, and that is no error
    CHECK(rep.best_auc == seen[0] && (double)rep.best_step == seen[1] && rep.best_step < step);
    // pinned: validations at every 4th step (epoch ends, every 32nd, are the
    // same models) and a tenth into the second epoch (step 32 + 3), the stop
    // right after the 3rd without a better AUC
    int64_t vs[64];
    int nv = 0, at = -1;
    for (int64_t s = 1; s <= step && nv < 64; s++) if (s % 4 == 0 || s == 35) vs[nv++] = s;
    for (int i = 0; i < nv; i++) if (vs[i] == rep.best_step) at = i;
    CHECK(nv > 0 && at >= 0 && at + 3 == nv - 1 && vs[nv - 1] == step && seen[2] == (double)nv);
    wd_model *b = NULL;
    REQUIRE_OK(wd_model_load(BEST, &b));
    int64_t bstep;
    wd_model_position(b, NULL, NULL, &bstep);
    CHECK(bstep == rep.best_step);   // the checkpoint is the best model, not the last
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = valid; e.nfiles = 1;
    wd_metrics mt;
    REQUIRE_OK(wd_evaluate(b, &e, &mt));
    CHECK(fabs(mt.auc - rep.best_auc) < 1e-12);
    wd_model_destroy(b);
    // bad combinations are refused before anything runs
    td.nvalid = 0;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "validation"));
    td.nvalid = 1; td.checkpoint_path = NULL;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "checkpoint_path"));
    td.checkpoint_path = BEST; td.checkpoint_every = 5;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "checkpoint_every"));
    wd_model_destroy(m);
}

// Every training and validation file is opened and matched before the first
// step: a missing or mismatched validation file fails at once, naming it.
static void test_checks_before_training(void) {
    REQUIRE(ready);
    char other[300];
    snprintf(other, sizeof other, "%s/loop-other.wdr", TMP);
    wd_gen_desc g;
    memset(&g, 0, sizeof g);
    g.output = other; g.rows = 300; g.seed = 9; g.max_card = 50;   // other bucket counts
    REQUIRE_OK(wd_gen(&g, NULL));
    const char *files[1] = {DAY1}, *missing[1] = {"/nonexistent/v.wdr"}, *mismatch[1] = {other};
    wd_model *m = model(6);
    REQUIRE(m);
    wd_train_desc td = desc(files, 1);
    td.valid_files = missing; td.nvalid = 1;
    double t0 = now_s();
    CHECK(wd_train(m, &td, NULL) == WD_ERR_IO && strstr(wd_last_error(), "/nonexistent/v.wdr"));
    td.valid_files = mismatch;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_SCHEMA && strstr(wd_last_error(), "loop-other.wdr") && strstr(wd_last_error(), "buckets") && strstr(wd_last_error(), "--schema-from"));
    CHECK(now_s() - t0 < 1.0);
    int64_t step;
    wd_model_position(m, NULL, NULL, &step);
    CHECK(step == 0);   // nothing trained
    wd_model_destroy(m);
}

// The report: samples exclude padding, the stages add up to the loop's time,
// the engine is named.
static void test_report(void) {
    REQUIRE(ready);
    const char *files[1] = {DAY2};
    wd_model *m = model(7);
    REQUIRE(m);
    wd_train_desc td = desc(files, 1);
    td.batch_size = 1000;   // 3072 samples: 4 batches, the last padded
    wd_train_report rep;
    REQUIRE_OK(wd_train(m, &td, &rep));
    double sum = 0;
    for (int s = 0; s < WD_STAGE_COUNT; s++) { CHECK(rep.stage_s[s] >= 0); sum += rep.stage_s[s]; }
    printf("  %lld steps, %lld samples, %.3f s in the loop (stages sum %.3f s); %s\n", (long long)rep.steps, (long long)rep.samples, rep.train_s, sum, rep.engine);
    CHECK(rep.steps == 4 && rep.samples == 3072 && fabs(sum - rep.train_s) < 1e-6 + 1e-3 * rep.train_s);
    CHECK(rep.samples_per_s > 0 && rep.seconds >= rep.train_s && strstr(rep.engine, "cpu threads=2 gemm="));
    CHECK(strcmp(wd_stage_name(WD_STAGE_DATA), "data wait") == 0 && strcmp(wd_stage_name(WD_STAGE_COUNT), "?") == 0);
    wd_model_destroy(m);
}

// The CPU backend driven through its table, the way wd_train's loop does:
// two steps in flight, results in order, a stop that changes nothing; its
// test hook (WD_CPU_TEST_FAIL): a failed step changes nothing, nor does any later one.
static void test_backend_interface(void) {
    REQUIRE(ready);
    wd_model *m = model(8), *ref = model(8);
    REQUIRE(m && ref);
    const char *files[1] = {DAY1};
    wd_train_desc td = desc(files, 1);
    td.max_steps = 2; td.no_shuffle = 1;
    REQUIRE_OK(wd_train(ref, &td, NULL));   // two steps over the first blocks
    const wd_backend_ops *ops = wd_backend_cpu();
    wd_backend_desc bd;
    memset(&bd, 0, sizeof bd);
    bd.model = m; bd.batch = 128; bd.ranks = 1; bd.threads = 2;
    wd_backend *be = NULL;
    REQUIRE_OK(ops->create(&bd, &be));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(DAY1, &r));
    wd_batch full, first, second;   // block 0 holds 256 samples: the loop's first two batches of 128
    REQUIRE_OK(wd_batch_init(&full, wd_reader_schema(r), 0, 0));
    REQUIRE_OK(wd_batch_init(&first, wd_reader_schema(r), 0, 0));
    REQUIRE_OK(wd_batch_init(&second, wd_reader_schema(r), 0, 0));
    REQUIRE_OK(wd_reader_read_block(r, 0, &full));
    REQUIRE(full.n == 256);
    REQUIRE_OK(wd_batch_append(&first, &full, 0, 128));
    REQUIRE_OK(wd_batch_append(&second, &full, 128, 128));
    wd_step_result res;
    CHECK(ops->complete(be, &res) == WD_ERR_INTERNAL);   // nothing in flight
    REQUIRE_OK(ops->submit(be, &first, 0));
    REQUIRE_OK(ops->submit(be, &second, 0));
    CHECK(ops->submit(be, &second, 0) == WD_ERR_INTERNAL);   // at most two in flight
    REQUIRE_OK(ops->complete(be, &res));
    CHECK(!res.stopped && res.samples == 128 && res.weight == 128);
    REQUIRE_OK(ops->complete(be, &res));
    CHECK(!res.stopped && res.samples == 128);
    wd_model *snap = NULL;
    REQUIRE_OK(wd_model_save(m, CK));
    REQUIRE_OK(wd_model_load(CK, &snap));
    REQUIRE_OK(ops->submit(be, &first, 1));   // a stop vote: nothing changes
    REQUIRE_OK(ops->complete(be, &res));
    CHECK(res.stopped);
    float *p = (float *)malloc(sizeof(float) * 128), *q = (float *)malloc(sizeof(float) * 128);
    REQUIRE_OK(ops->predict(be, &first, p));
    REQUIRE_OK(wd_predict(snap, &first, q));
    CHECK(memcmp(p, q, sizeof(float) * 128) == 0);
    // the two steps equal wd_train's two steps over the same samples
    wd_model_view vm, vr;
    wd_model_view_get(m, &vm);
    wd_model_view_get(ref, &vr);
    double worst = 0;
    for (int64_t i = 0; i < vm.P; i++) { double dd = fabs((double)vm.dense[i] - vr.dense[i]); if (!(dd <= worst)) worst = dd; }
    CHECK(worst == 0);
    char what[300];
    ops->describe(be, what, sizeof what);
    CHECK(strstr(what, "cpu threads=2") != NULL);
    ops->destroy(be);
    // the failure hooks (tests only): WD_CPU_TEST_FAIL and WD_CUDA_TEST_FAIL in one parser
    // (the CPU hook used to accept trailing text, ":pre" among it, and fail after the
    // collectives all the same); both count the backend's own steps, from 1 whatever the
    // model's step (the CPU hook used to count from the model's: never fired when resumed)
    {
        static const char *refused[] = {"1:4:pre", "1:4x", "1", "-1:3", "1:0", "a:b"};
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
            setenv("WD_CPU_TEST_FAIL", refused[i], 1);
            wd_backend *b2 = NULL;
            wd_status s2 = ops->create(&bd, &b2);
            if (s2 != WD_ERR_INVALID_ARG) printf("  WD_CPU_TEST_FAIL=%s: %s\n", refused[i], wd_status_string(s2));
            CHECK(s2 == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "WD_CPU_TEST_FAIL=") && strstr(wd_last_error(), "RANK:STEP") && !b2);
            if (b2) ops->destroy(b2);
        }
        int fr = 0, pre = 0, create = 1;
        long long fs = 0;
        setenv("WD_CUDA_TEST_FAIL", "2:7:pre", 1);
        CHECK(wd_test_fail_parse("WD_CUDA_TEST_FAIL", 1, &fr, &fs, &pre, &create) == WD_OK && fr == 2 && fs == 7 && pre == 1 && !create);
        CHECK(wd_test_fail_parse("WD_CUDA_TEST_FAIL", 0, &fr, &fs, &pre, &create) == WD_ERR_INVALID_ARG);
        setenv("WD_CUDA_TEST_FAIL", "1:create", 1);   // rank 1's backend fails at the end of its creation
        CHECK(wd_test_fail_parse("WD_CUDA_TEST_FAIL", 0, &fr, &fs, &pre, &create) == WD_OK && fr == 1 && fs == 0 && !pre && create == 1);
        setenv("WD_CUDA_TEST_FAIL", "1:createx", 1);
        CHECK(wd_test_fail_parse("WD_CUDA_TEST_FAIL", 1, &fr, &fs, &pre, &create) == WD_ERR_INVALID_ARG);
        unsetenv("WD_CUDA_TEST_FAIL");
        CHECK(wd_test_fail_parse("WD_CUDA_TEST_FAIL", 1, &fr, &fs, &pre, &create) == WD_OK && fs == 0 && fr == -1 && !create);
        int64_t at = -1;
        wd_model_position(ref, NULL, NULL, &at);
        CHECK(at == 2);   // ref trained 2 steps: a resumed model
        bd.model = ref;
        setenv("WD_CPU_TEST_FAIL", "0:2", 1);
        wd_backend *b2 = NULL;
        wd_status s2 = ops->create(&bd, &b2);
        unsetenv("WD_CPU_TEST_FAIL");
        REQUIRE_OK(s2);
        REQUIRE_OK(ops->submit(b2, &first, 0));
        REQUIRE_OK(ops->complete(b2, &res));
        s2 = ops->submit(b2, &second, 0);   // this backend's second step
        CHECK(s2 == WD_ERR_DEVICE && strstr(wd_last_error(), "injected after the step's collectives"));
        REQUIRE_OK(ops->submit(b2, &second, 0));   // nothing more is applied
        CHECK(ops->complete(b2, &res) != WD_OK && strstr(wd_last_error(), "earlier step failed"));
        REQUIRE_OK(ops->predict(b2, &first, p));
        REQUIRE_OK(wd_predict(ref, &first, q));   // the backend writes the host model in place (CPU)
        CHECK(memcmp(p, q, sizeof(float) * 128) == 0);
        ops->destroy(b2);
    }
    free(p); free(q);
    wd_batch_free(&first); wd_batch_free(&second); wd_batch_free(&full);
    wd_reader_close(r);
    wd_model_destroy(m); wd_model_destroy(ref); wd_model_destroy(snap);
}

// The steps at which validation and checkpoints happen, pinned exactly:
// eval_every 3 validates the models of steps 3, 6, 9 and 12; checkpoint_every
// 5 writes those of steps 5 and 10 (each after its step's progress call) and
// the end writes step 13 (max_steps), which is no epoch end: no validation.
typedef struct pin { int64_t valid[16], ck[16]; int nvalid, nsteps; } pin;
static int record_steps(void *user, const wd_progress *p) {
    pin *q = (pin *)user;
    if (!isnan(p->valid_auc)) { if (q->nvalid < 16) q->valid[q->nvalid++] = p->step; return 0; }
    wd_model *c = NULL;
    int64_t st = -1;
    if (wd_model_load(CK, &c) == WD_OK) wd_model_position(c, NULL, NULL, &st);
    wd_model_destroy(c);
    if (p->step >= 1 && p->step <= 16) q->ck[p->step - 1] = st;
    q->nsteps++;
    return 0;
}
static void test_loop_steps_pinned(void) {
    REQUIRE(ready);
    const char *files[1] = {DAY1}, *valid[1] = {VALID};
    wd_model *m = model(9);
    REQUIRE(m);
    wd_train_desc td = desc(files, 1);
    td.valid_files = valid; td.nvalid = 1; td.eval_every = 3;
    td.checkpoint_path = CK; td.checkpoint_every = 5; td.max_steps = 13;
    pin q;
    memset(&q, 0, sizeof q);
    td.progress = record_steps; td.user = &q;
    unlink(CK);
    REQUIRE_OK(wd_train(m, &td, NULL));
    CHECK(q.nsteps == 13 && q.nvalid == 4 && q.valid[0] == 3 && q.valid[1] == 6 && q.valid[2] == 9 && q.valid[3] == 12);
    int bad = 0;
    for (int k = 1; k <= 13; k++) {
        int64_t want = k <= 5 ? -1 : 5 * ((k - 1) / 5);
        if (q.ck[k - 1] != want) { bad++; printf("  at step %d the checkpoint holds step %lld, want %lld\n", k, (long long)q.ck[k - 1], (long long)want); }
    }
    CHECK(bad == 0);
    wd_model *c = NULL;
    REQUIRE_OK(wd_model_load(CK, &c));
    int64_t st;
    wd_model_position(c, NULL, NULL, &st);
    CHECK(st == 13);
    wd_model_destroy(c); wd_model_destroy(m);
    unlink(CK);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_setup);
    RUN(test_stop_and_resume);
    RUN(test_resume_other_files_refused);
    RUN(test_early_stop_and_keep_best);
    RUN(test_loop_steps_pinned);
    RUN(test_checks_before_training);
    RUN(test_report);
    RUN(test_backend_interface);
    return test_summary("test_loop");
}
