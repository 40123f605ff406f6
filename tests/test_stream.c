// Training from the application's data (a source callback, wd_trainer_push)
// and online learning (wd_predict and predictors on published snapshots while training
// runs): streams equal files bit for bit, resume exactly, refuse bad input
// clearly, and predictions always see one whole published model.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <pthread.h>
#include <unistd.h>

static char TMP[200] = "/tmp";
static char DATA[300];
enum { B = 128, N = 2000, STEPS = (N + B - 1) / B };   // 16 steps, the last one padded
static wd_batch g_all;                                   // the file's samples in order
static wd_schema g_schema;
static int g_ok;


static void test_setup(void) {
    g_ok = 0;
    snprintf(DATA, sizeof DATA, "%s/stream.wdr", TMP);
    REQUIRE_OK(tl_gen(DATA, N, 0, 5, 300, 256));
    REQUIRE_OK(tl_read_all(DATA, &g_all, N, &g_schema));
    REQUIRE(g_all.n == N);
    g_ok = 1;
}

// A source over batches [next, end) of g_all, B samples each (the last short).
typedef struct src { int64_t next, end; wd_batch b; int fail_at; } src;
static wd_status source_fn(void *user, const wd_batch **out) {
    src *s = (src *)user;
    *out = NULL;
    if (s->fail_at >= 0 && s->next == s->fail_at) { wd_set_last_error("the queue went away"); return WD_ERR_IO; }
    if (s->next >= s->end) return WD_OK;
    int from = (int)(s->next * B), cnt = WD__MIN(B, N - from);
    s->b.n = 0;
    WD__TRY(wd_batch_append(&s->b, &g_all, from, cnt));
    s->next++;
    *out = &s->b;
    return WD_OK;
}
static void src_init(src *s, int64_t from, int64_t end) {
    memset(s, 0, sizeof *s);
    s->next = from; s->end = end; s->fail_at = -1;
    CHECK_OK(wd_batch_init(&s->b, &g_schema, 0, 0));
}
static void stream_desc(wd_train_desc *td, src *s) {
    memset(td, 0, sizeof *td);
    td->batch_size = B; td->threads = 2; td->source = source_fn; td->source_user = s;
}

// Pushed from memory = the same samples from the .wdr in the same order,
// bit for bit; the saved model reloads equal; a stream split over two runs
// (checkpoint, load, resume from its step) equals the one run.
static void test_push_equals_files(void) {
    REQUIRE(g_ok);
    char ca[300], cb[300], cc[300];
    snprintf(ca, sizeof ca, "%s/stream_a.wdm", TMP);
    snprintf(cb, sizeof cb, "%s/stream_b.wdm", TMP);
    snprintf(cc, sizeof cc, "%s/stream_c.wdm", TMP);
    wd_model *a = tl_criteo_model(WD_ADAM, DATA), *b = tl_criteo_model(WD_ADAM, DATA), *c = tl_criteo_model(WD_ADAM, DATA), *c2 = NULL, *bl = NULL;
    REQUIRE(a && b && c);
    const char *files[] = {DATA};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = B; td.threads = 2; td.no_shuffle = 1; td.checkpoint_path = ca;
    wd_train_report ra, rb;
    CHECK_OK(wd_train(a, &td, &ra));
    // pushed, B samples at a time; the last 80 padded as the loader pads
    memset(&td, 0, sizeof td);
    td.batch_size = B; td.threads = 2; td.checkpoint_path = cb;
    wd_trainer *t = NULL;
    CHECK_OK(wd_trainer_open(b, &td, &t));
    REQUIRE(t);
    wd_batch one;
    CHECK_OK(wd_batch_init(&one, wd_model_schema(b), 0, 0));
    for (int s = 0; s < STEPS; s++) {
        one.n = 0;
        CHECK_OK(wd_batch_append(&one, &g_all, s * B, WD__MIN(B, N - s * B)));
        CHECK_OK(wd_trainer_push(t, &one));
    }
    CHECK_OK(wd_trainer_close(t, &rb));
    wd_trainer_free(t);
    wd_batch_free(&one);
    CHECK(ra.steps == STEPS && rb.steps == STEPS);
    CHECK(ra.samples == N && rb.samples == N);
    CHECK(tl_params_equal(a, b));
    int64_t e, bt, st;
    wd_model_position(a, &e, &bt, &st);
    CHECK(e == 1 && bt == 0 && st == STEPS);
    wd_model_position(b, &e, &bt, &st);
    CHECK(e == 0 && bt == 0 && st == STEPS);   // a stream: the step alone
    CHECK_OK(wd_model_load(cb, &bl));
    if (bl) CHECK(tl_params_equal(b, bl) && bl->epoch == 0 && bl->batch == 0 && bl->data_fp == 0);
    // the source callback in two runs: 7 steps, saved, loaded, the rest
    src s1;
    src_init(&s1, 0, STEPS);
    stream_desc(&td, &s1);
    td.max_steps = 7; td.checkpoint_path = cc;
    CHECK_OK(wd_train(c, &td, NULL));
    CHECK(s1.next == 7);   // max_steps: the source is not asked for an 8th batch
    CHECK_OK(wd_model_load(cc, &c2));
    if (c2) {
        wd_model_position(c2, &e, &bt, &st);
        CHECK(e == 0 && bt == 0 && st == 7);
        src s2;
        src_init(&s2, st, STEPS);   // the application knows: step x batch_size samples consumed
        stream_desc(&td, &s2);
        CHECK_OK(wd_train(c2, &td, NULL));
        CHECK(tl_params_equal(a, c2));
        wd_batch_free(&s2.b);
    }
    wd_batch_free(&s1.b);
    // a file run after a stream: a new run over files, from the stream's step
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.batch_size = B; td.threads = 2; td.no_shuffle = 1; td.max_steps = STEPS + 3;
    CHECK_OK(wd_train(b, &td, NULL));
    wd_model_position(b, &e, &bt, &st);
    CHECK(e == 0 && bt == 3 && st == STEPS + 3);
    wd_model_destroy(a); wd_model_destroy(b); wd_model_destroy(c); wd_model_destroy(c2); wd_model_destroy(bl);
    unlink(ca); unlink(cb); unlink(cc);
}

// Bad batches are refused at the push naming it, and training goes on;
// a failing source, pushing after close, and settings a stream cannot take.
static void test_bad_input(void) {
    REQUIRE(g_ok);
    wd_model *m = tl_criteo_model(WD_ADAGRAD, DATA);
    REQUIRE(m);
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.batch_size = B; td.threads = 2;
    wd_trainer *t = NULL;
    CHECK_OK(wd_trainer_open(m, &td, &t));
    REQUIRE(t);
    wd_batch one, other;
    CHECK_OK(wd_batch_init(&one, wd_model_schema(m), 0, 0));
    wd_schema sc;
    wd_schema_criteo(&sc, 100);
    sc.ndense = 3;
    CHECK_OK(wd_batch_init(&other, &sc, 4, 0));
    other.n = 4;
    memset(other.label, 0, 16); memset(other.dense, 0, 48);
    for (int i = 0; i < 4; i++) other.weight[i] = 1;
    for (int k = 0; k < sc.nslots; k++) memset(other.ids[k], 0, 16);
    CHECK(wd_trainer_push(t, &other) == WD_ERR_SCHEMA && tl_has(wd_last_error(), "wd_trainer_push: batch 0") && tl_has(wd_last_error(), "dense"));
    one.n = 0;
    CHECK_OK(wd_batch_append(&one, &g_all, 0, B));
    CHECK_OK(wd_trainer_push(t, &one));
    one.label[5] = 2.0f;
    CHECK(wd_trainer_push(t, &one) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "batch 1") &&
          tl_has(wd_last_error(), "sample 5: label 2"));   // an invalid label, not a non-finite number
    one.label[5] = -INFINITY;   // a non-finite label: a number gone wrong, as NaN
    CHECK(wd_trainer_push(t, &one) == WD_ERR_NUMERIC && tl_has(wd_last_error(), "sample 5: label -inf"));
    one.label[5] = 1.0f;
    one.ids[3][7] = wd_model_schema(m)->slot[3].buckets;
    CHECK(wd_trainer_push(t, &one) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "sample 7") &&
          tl_has(wd_last_error(), "outside its"));   // as wd_predict says it
    one.ids[3][7] = 0;
    one.n = 0;
    CHECK_OK(wd_batch_append(&one, &g_all, 0, B + 1));
    CHECK(wd_trainer_push(t, &one) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "holds 129 samples; a step takes 1..128"));
    one.n = 0;
    CHECK_OK(wd_batch_append(&one, &g_all, B, B));
    CHECK_OK(wd_trainer_push(t, &one));
    wd_train_report rep;
    CHECK_OK(wd_trainer_close(t, &rep));
    CHECK(rep.steps == 2 && m->step == 2);   // the good batches, and only they
    CHECK(wd_trainer_push(t, &one) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "closed"));
    CHECK(wd_trainer_close(t, NULL) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "closed already"));
    wd_trainer_free(t);
    // a trainer whose training ended (max_steps): pushes then fail saying so
    td.max_steps = 3;
    t = NULL;
    CHECK_OK(wd_trainer_open(m, &td, &t));
    REQUIRE(t);
    wd_status last = WD_OK;
    for (int i = 0; i < 8 && !last; i++) last = wd_trainer_push(t, &one);
    CHECK(last == WD_ERR_ABORTED && tl_has(wd_last_error(), "training ended"));
    CHECK_OK(wd_trainer_close(t, &rep));
    CHECK(rep.steps == 1 && m->step == 3);   // max_steps is the global step
    wd_trainer_free(t);
    td.max_steps = 0;
    // a source that fails: its message, the batch, the finished steps kept
    src s;
    src_init(&s, 0, STEPS);
    s.fail_at = 3;
    stream_desc(&td, &s);
    int64_t before = m->step;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_IO && tl_has(wd_last_error(), "the queue went away") && tl_has(wd_last_error(), "batch 3"));
    CHECK(m->step == before + 3);
    // settings a stream refuses, each named
    const char *files[] = {DATA};
    td.files = files; td.nfiles = 1;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "both training files and a source"));
    td.source = NULL;
    CHECK(wd_trainer_open(m, &td, &t) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "names training files"));
    td.files = NULL; td.nfiles = 0; td.publish_every = -1;
    CHECK(wd_trainer_open(m, &td, &t) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "publish_every -1 is negative"));
    td.publish_every = 0;
    td.source = source_fn; td.epochs = 2;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "no epochs"));
    td.epochs = 0;
    // a model in the middle of a run over files
    wd_train_desc fd;
    memset(&fd, 0, sizeof fd);
    fd.files = files; fd.nfiles = 1; fd.batch_size = B; fd.threads = 2; fd.max_steps = m->step + 2;
    wd_model_new_run(m);
    CHECK_OK(wd_train(m, &fd, NULL));
    s.fail_at = -1; s.next = 0;
    CHECK(wd_train(m, &td, NULL) == WD_ERR_INVALID_ARG && tl_has(wd_last_error(), "wd_model_new_run"));
    wd_model_new_run(m);
    CHECK_OK(wd_train(m, &td, NULL));
    CHECK(s.next == STEPS);
    wd_batch_free(&s.b); wd_batch_free(&one); wd_batch_free(&other);
    wd_model_destroy(m);
}

// Validation and the progress callback's stop work on a stream as on files:
// with eval_every 4 the model is validated after steps 4 and 8, each
// validation's AUC is wd_evaluate's of the model after that step (a twin
// trained the same batches), and a callback returning nonzero after step 10
// stops training at the next step boundary (WD_ERR_ABORTED, report.stopped
// 1, at most one step past the request: test_loop's rule for files).
typedef struct vrec { int64_t vstep[8]; double vauc[8]; int nv; int64_t stop_at; } vrec;
static int vprogress(void *user, const wd_progress *p) {
    vrec *v = (vrec *)user;
    int valid = !isnan(p->valid_auc) || !isnan(p->valid_logloss);
    if (valid && v->nv < 8) { v->vstep[v->nv] = p->step; v->vauc[v->nv] = p->valid_auc; v->nv++; }
    return !valid && p->step >= v->stop_at;
}
static void test_stream_validation_and_stop(void) {
    REQUIRE(g_ok);
    wd_model *m = tl_criteo_model(WD_ADAM, DATA), *twin = tl_criteo_model(WD_ADAM, DATA);
    REQUIRE(m && twin);
    const char *valid[] = {DATA};
    src s, s2;
    src_init(&s, 0, STEPS);
    src_init(&s2, 0, 8);
    wd_train_desc td;
    stream_desc(&td, &s);
    td.valid_files = valid; td.nvalid = 1; td.eval_every = 4;
    vrec v;
    memset(&v, 0, sizeof v);
    v.stop_at = 10;
    td.progress = vprogress; td.user = &v;
    wd_train_report rep;
    memset(&rep, 0, sizeof rep);
    wd_status st = wd_train(m, &td, &rep);
    CHECK(st == WD_ERR_ABORTED && strstr(wd_last_error(), "stopped at step"));   // as with files
    printf("  stopped %d at step %lld (source asked for %lld batches); %d validations:", rep.stopped, (long long)m->step, (long long)s.next, v.nv);
    for (int i = 0; i < v.nv; i++) printf(" step %lld auc %.6f", (long long)v.vstep[i], v.vauc[i]);
    printf("\n");
    CHECK(rep.stopped == 1 && m->step >= 10 && m->step <= 11 && rep.steps == m->step);   // at most one step past the request, as with files
    CHECK(v.nv >= 2 && v.vstep[0] == 4 && v.vstep[1] == 8);
    stream_desc(&td, &s2);   // the twin: the same 8 batches, no validation
    CHECK_OK(wd_train(twin, &td, NULL));
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    ed.files = valid; ed.nfiles = 1; ed.threads = 2;
    wd_metrics mt;
    CHECK_OK(wd_evaluate(twin, &ed, &mt));
    printf("  the twin after 8 steps: auc %.6f\n", mt.auc);
    CHECK(v.nv >= 2 && mt.auc == v.vauc[1]);
    wd_batch_free(&s.b); wd_batch_free(&s2.b);
    wd_model_destroy(m); wd_model_destroy(twin);
}

// Online learning: 4 threads predict while training (2 workers) runs with
// publish_every; every prediction equals one published snapshot's.
enum { K = 2, NSNAP = STEPS / K + 1, NP = 64 };
static float g_snap[NSNAP][NP];
// Threads 0 and 1 call wd_predict; 2 and 3 keep a predictor each (max_batch
// 256 and 24: the batch in pieces), made before training starts.
static void test_online_predictions(void) {
    REQUIRE(g_ok);
    wd_batch fixed;
    wd_model *ref = tl_criteo_model(WD_ADAM, DATA), *m = tl_criteo_model(WD_ADAM, DATA);
    REQUIRE(ref && m);
    REQUIRE_OK(wd_batch_init(&fixed, wd_model_schema(m), NP, 0));
    CHECK_OK(wd_batch_append(&fixed, &g_all, N - NP, NP));
    // the snapshots' predictions: the same steps, K at a time, on a reference
    CHECK_OK(wd_predict(ref, &fixed, g_snap[0]));
    for (int j = 1; j < NSNAP; j++) {
        src s;
        src_init(&s, (j - 1) * K, j * K);
        wd_train_desc td;
        stream_desc(&td, &s);
        CHECK_OK(wd_train(ref, &td, NULL));
        CHECK_OK(wd_predict(ref, &fixed, g_snap[j]));
        wd_batch_free(&s.b);
    }
    int distinct = 1;
    for (int j = 1; j < NSNAP; j++) distinct &= memcmp(g_snap[j], g_snap[j - 1], sizeof g_snap[j]) != 0;
    CHECK(distinct);   // else membership would prove nothing
    CHECK_OK(wd_model_publish(m));   // before the predicting threads start
    volatile int stop = 0;
    tl_pred args[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].m = m; args[i].fixed = &fixed; args[i].stop = &stop; args[i].most = 4000;
        args[i].want = &g_snap[0][0]; args[i].nwant = NSNAP; args[i].np = NP;
        args[i].max_batch = i < 2 ? -1 : i == 2 ? 0 : 24;
        CHECK(pthread_create(&th[i], NULL, tl_predict_loop, &args[i]) == 0);
    }
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.batch_size = B; td.threads = 2; td.publish_every = K;
    wd_trainer *t = NULL;
    CHECK_OK(wd_trainer_open(m, &td, &t));
    wd_batch one;
    CHECK_OK(wd_batch_init(&one, wd_model_schema(m), 0, 0));
    for (int s = 0; t && s < STEPS; s++) {
        one.n = 0;
        CHECK_OK(wd_batch_append(&one, &g_all, s * B, WD__MIN(B, N - s * B)));
        CHECK_OK(wd_trainer_push(t, &one));
        if (s % 4 == 3) usleep(2000);   // let predictions land between publishes
    }
    if (t) CHECK_OK(wd_trainer_close(t, NULL));
    wd_trainer_free(t);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int total = 0, bad = 0, seen = 0, hits[NSNAP] = {0};
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_OK(args[i].st);
        total += args[i].n; bad += args[i].bad;
        for (int j = 0; j < NSNAP; j++) hits[j] += args[i].hits[j];
    }
    for (int j = 0; j < NSNAP; j++) seen += hits[j] > 0;
    printf("  %d predictions from 4 threads (2 wd_predict, 2 predictors), %d snapshots of %d seen, %d outside them\n", total, seen, NSNAP, bad);
    CHECK(total > 0 && bad == 0);
    float out[NP];
    CHECK_OK(wd_predict(m, &fixed, out));   // after training: the final model, published
    CHECK(!memcmp(out, g_snap[NSNAP - 1], sizeof out));
    CHECK(tl_params_equal(ref, m));
    wd_batch_free(&one); wd_batch_free(&fixed);
    wd_model_destroy(ref); wd_model_destroy(m);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_setup);
    RUN(test_push_equals_files);
    RUN(test_bad_input);
    RUN(test_stream_validation_and_stop);
    RUN(test_online_predictions);
    wd_batch_free(&g_all);
    unlink(DATA);
    char prob[320];
    snprintf(prob, sizeof prob, "%s.prob", DATA);
    unlink(prob);
    return test_summary("test_stream");
}
