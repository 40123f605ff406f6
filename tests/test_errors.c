// The error contract and the library's threads (issue 31 item 6; issue 30's
// review finding 7): the first error of a call survives the clean-up after
// it, and a signal sent to the process never runs the application's handler
// on a thread the library started. Usage: test_errors [TMPDIR]
// the implementation is linked in (tests/impl.c); this file uses the declarations only
#define _GNU_SOURCE   // kill, getpid, usleep, mkdir, rmdir
#define WIDEDEEP_INTERNAL   // wd_error_hold: the header's tier 3
#include "../widedeep.h"
#include "testlib.h"
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

static char TMP[200] = "/tmp", DATA[300];
static int g_ok;

static int has(const char *s, const char *part) { return strstr(s, part) != NULL; }

// The checkpoint's directory goes away after the first step: the final
// checkpoint then fails (the start-up's check of the path has passed).
static int remove_dir_after_step(void *user, const wd_progress *p) {
    if (!p->warning && p->step >= 1) rmdir((const char *)user);
    return 0;
}

// A release call after a failed call keeps that call's message: here
// wd_trainer_free, whose close joins a training that failed on its own
// (its final checkpoint cannot be written). (Without wd_error_hold in
// wd_trainer_free, the message became the checkpoint's.)
static void test_release_keeps_the_error(void) {
    REQUIRE(g_ok);
    wd_model *m = tl_criteo_model(0, DATA);
    REQUIRE(m);
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.threads = 1;
    td.batch_size = 64;
    char dir[300], ck[400];
    snprintf(dir, sizeof dir, "%s/errors_gone", TMP);
    snprintf(ck, sizeof ck, "%s/model.wdm", dir);
    td.checkpoint_path = ck;
    td.progress = remove_dir_after_step;
    td.user = dir;
    mkdir(dir, 0755);
    wd_trainer *t = NULL;
    wd_status st = wd_trainer_open(m, &td, &t);
    if (st) wd_model_destroy(m);
    REQUIRE_OK(st);
    wd_batch b;
    CHECK_OK(wd_batch_init(&b, wd_model_schema(m), 64, 0));
    wd_reader *r = NULL;
    CHECK_OK(wd_reader_open(DATA, &r));
    if (r) CHECK_OK(wd_reader_read_block(r, 0, &b));
    wd_reader_close(r);
    if (b.n > 64) b.n = 64;
    CHECK_OK(wd_trainer_push(t, &b));
    CHECK(wd_trainer_push(t, NULL) == WD_ERR_INVALID_ARG);   // the application's failed call
    char first[1024];
    snprintf(first, sizeof first, "%s", wd_last_error());
    CHECK(first[0] != 0);
    wd_trainer_free(t);   // closes: the training ends, its checkpoint fails
    if (strcmp(wd_last_error(), first) != 0)
        printf("  after wd_trainer_free: \"%s\", want \"%s\"\n", wd_last_error(), first);
    CHECK(strcmp(wd_last_error(), first) == 0);
    // the training did fail (so the hold had something to hold back)
    mkdir(dir, 0755);
    CHECK_OK(wd_trainer_open(m, &td, &t));
    if (t) {
        CHECK_OK(wd_trainer_push(t, &b));
        CHECK(wd_trainer_close(t, NULL) == WD_ERR_IO && has(wd_last_error(), "errors_gone"));
        wd_trainer_free(t);
    }
    wd_batch_free(&b);
    wd_model_destroy(m);
}

// wd_error_hold: nested, per thread; wd_set_last_error honours it too.
static void test_hold_nests(void) {
    wd_set_last_error("the first");
    wd_error_hold(1);
    wd_error_hold(1);
    wd_set_last_error("a clean-up's");
    CHECK(wd_batch_init(NULL, NULL, 0, 0) != WD_OK);   // a library failure under the hold
    wd_error_hold(0);
    wd_set_last_error("still a clean-up's");
    CHECK(strcmp(wd_last_error(), "the first") == 0);
    wd_error_hold(0);
    wd_error_hold(0);   // unbalanced: stays at 0
    wd_set_last_error("the next call's");
    CHECK(strcmp(wd_last_error(), "the next call's") == 0);
}

// Signals sent to the process reach the application's threads only. The
// handler records where it ran while wd_gen, wd_convert-like pipelines and
// wd_train (team workers, loader threads) run on the main thread; a helper
// thread of the test (signals blocked in it) sends SIGUSR1, SIGUSR2 and
// SIGALRM to the process in bursts. Every delivery must run on the main
// thread. (Without wd__thread_start, library threads ran the handler.)
static pthread_t g_main;
static volatile int g_stop_sending;
static long g_delivered, g_elsewhere;
static void on_signal(int sig) {
    (void)sig;
    __atomic_add_fetch(&g_delivered, 1, __ATOMIC_RELAXED);
    if (!pthread_equal(pthread_self(), g_main)) __atomic_add_fetch(&g_elsewhere, 1, __ATOMIC_RELAXED);
}
static void *sender(void *arg) {
    (void)arg;
    static const int sigs[3] = {SIGUSR1, SIGUSR2, SIGALRM};
    for (long i = 0; !__atomic_load_n(&g_stop_sending, __ATOMIC_ACQUIRE); i++) {
        for (int k = 0; k < 8; k++) kill(getpid(), sigs[(i + k) % 3]);   // a burst: some land while one is pending
        usleep(200);
    }
    return NULL;
}
static void test_signals_reach_the_application_only(void) {
    REQUIRE(g_ok);
    g_main = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    struct sigaction old[3];
    static const int sigs[3] = {SIGUSR1, SIGUSR2, SIGALRM};
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, &old[i]);
    sigset_t block, mask;
    sigemptyset(&block);
    for (int i = 0; i < 3; i++) sigaddset(&block, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &block, &mask);   // the sender inherits it: it never takes them
    pthread_t th;
    g_stop_sending = 0;
    int made = pthread_create(&th, NULL, sender, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    REQUIRE(made);
    char out[300];
    snprintf(out, sizeof out, "%s/errors_sig.wdr", TMP);
    wd_gen_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.output = out; gd.rows = 20000; gd.seed = 3; gd.buckets = 1000; gd.threads = 4; gd.block_samples = 500;
    CHECK_OK(wd_gen(&gd, NULL));   // the block pipeline's threads
    wd_model *m = tl_criteo_model(0, out);
    CHECK(m != NULL);
    if (m) {
        const char *files[1] = {out};
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.files = files; td.nfiles = 1; td.threads = 4; td.loader_threads = 3; td.batch_size = 256; td.epochs = 2;
        CHECK_OK(wd_train(m, &td, NULL));   // the team's workers, the loader's threads
    }
    __atomic_store_n(&g_stop_sending, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    usleep(10000);   // the last burst's pending signals arrive
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
    long got = __atomic_load_n(&g_delivered, __ATOMIC_RELAXED), off = __atomic_load_n(&g_elsewhere, __ATOMIC_RELAXED);
    printf("  %ld signals handled, %ld of them on a thread other than main\n", got, off);
    CHECK(got > 100);   // the test did send while the library's threads ran
    CHECK(off == 0);
    wd_model_destroy(m);
    unlink(out);
    char prob[320];
    snprintf(prob, sizeof prob, "%s.prob", out);
    unlink(prob);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    snprintf(DATA, sizeof DATA, "%s/errors_data.wdr", TMP);
    wd_gen_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.output = DATA; gd.rows = 2000; gd.seed = 1; gd.buckets = 1000; gd.threads = 1;
    g_ok = wd_gen(&gd, NULL) == WD_OK;
    CHECK(g_ok);
    RUN(test_release_keeps_the_error);
    RUN(test_hold_nests);
    RUN(test_signals_reach_the_application_only);
    unlink(DATA);
    char prob[320];
    snprintf(prob, sizeof prob, "%s.prob", DATA);
    unlink(prob);
    return test_summary("test_errors");
}
