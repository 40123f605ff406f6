// The model is the contract (widedeep.h section 16, "The model is the
// contract"; issues 20 and 21): a .wdm carries the input format, bucket
// counts and vocabularies of its training files, so that raw strings scored
// through a loaded model alone equal predictions over the converted file,
// bit for bit (Criteo TSV, CSV with derived slots, LibSVM; from 8 threads);
// files whose vocabularies differ (converted separately: permuted ids, equal
// bucket counts) are refused naming the slot, in training, validation,
// evaluation and resume; models and files of the older formats still load
// and say what they lack; vocabularies that grow day by day keep every old
// id (the Criteo sample as 4 days, from DATA_DIR; skipped without it).
// Usage: test_contract [TMPDIR [GOLDEN_DIR [DATA_DIR]]]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <pthread.h>
#include <stdarg.h>

static char TMP[300] = "/tmp", GOLD[300] = "tests/golden", DATA[300] = "../shared/data";
static void tmp(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/ct-%s", TMP, name); }
static uint64_t rng_next(uint64_t *s) { *s += 0x9E3779B97F4A7C15ull; return wd_mix64(*s); }

// A growing text buffer.
typedef struct text { char *p; size_t n, cap; } text;
static void tput(text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int w = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (t->p && (size_t)w < t->cap - t->n) { t->n += (size_t)w; return; }
        t->cap = (t->cap + (size_t)w + 1) * 2;
        t->p = (char *)realloc(t->p, t->cap);
    }
}

// Avazu-shaped CSV: id, click, hour (YYMMDDHH), and categorical columns of
// few values; the preset's derived slots come from hour.
static const char *AVAZU_HEADER = "id,click,hour,C1,banner_pos,site_id,device_type";
static void avazu_text(text *t, int rows, uint64_t seed, int header) {
    uint64_t s = seed;
    if (header) tput(t, "%s\n", AVAZU_HEADER);
    for (int i = 0; i < rows; i++) {
        uint64_t r = rng_next(&s);
        int day = 21 + (int)(r % 9), hour = (int)(r >> 8) % 24, bp = (int)((r >> 16) % 3), dt = (int)((r >> 20) % 4);
        int site = (int)((r >> 24) % 40), c1 = (int)((r >> 32) % 7);
        int click = ((r >> 40) % 100) < (uint64_t)(10 + 15 * bp + 2 * (hour % 5));
        tput(t, "%llu,%d,1410%02d%02d,%d,%d,s%02x,%d\n", (unsigned long long)(r >> 3), click, day, hour, 1000 + c1, bp, site * 7, dt);
    }
}
// LibSVM: a label, then ids of two multi-hot slots (u: 0-99, v: 100-149) and
// the dense columns 200-202.
static void libsvm_text(text *t, int rows, uint64_t seed) {
    uint64_t s = seed;
    for (int i = 0; i < rows; i++) {
        uint64_t r = rng_next(&s);
        tput(t, "%d", (int)(r & 1));
        int nu = 1 + (int)((r >> 4) % 3);
        for (int j = 0; j < nu; j++) tput(t, " %d:1", (int)((rng_next(&s) >> 7) % 100));
        if ((r >> 12) & 1) tput(t, " %d:1", 100 + (int)((r >> 16) % 50));
        tput(t, " 200:%.3f 202:%d\n", (double)((r >> 24) % 1000) / 100.0, (int)((r >> 36) % 7));
    }
}

static wd_status convert(const wd_text_spec *t, const char *in, const char *out) {
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    const char *ins[1] = {in};
    d.spec = t; d.inputs = ins; d.ninputs = 1; d.output = out; d.block_samples = 300;
    return wd_convert(&d, NULL);
}
// A spec for files converted with --schema-from `from`: its buckets and vocabulary.
static wd_status spec_from(wd_text_spec *t, const char *from) {
    wd_reader *r;
    WD__TRY(wd_reader_open(from, &r));
    wd_status st = wd_text_spec_match(t, wd_reader_schema(r));
    if (!st && wd_reader_vocab(r)) st = wd_text_spec_vocab(t, wd_reader_vocab(r));
    wd_reader_close(r);   // the spec owns its copy: closing the reader first is fine
    return st;
}
static wd_status train_small(const char *const *files, int nfiles, const char *save) {
    wd_reader *r;
    WD__TRY(wd_reader_open(files[0], &r));
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = wd_reader_schema(r);
    md.embed_dim = 4; md.hidden[0] = 16; md.hidden[1] = 8; md.seed = 3;
    wd_model *m;
    wd_status st = wd_model_create(&md, &m);
    wd_reader_close(r);
    if (st) return st;
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = nfiles; td.epochs = 2; td.batch_size = 64; td.threads = 1;
    st = wd_train(m, &td, NULL);
    if (!st) st = wd_model_save(m, save);
    wd_model_destroy(m);
    return st;
}

// Scoring raw lines from threads: thread t takes lines t, t+T, ..., each as a
// batch of one (a request), through the model and the spec alone.
typedef struct scorer {
    const wd_model *m;
    const wd_text_spec *spec;
    const char *const *lines;
    const size_t *lens;
    int n, t, T;
    float *out;
    wd_status st;
} scorer;
static void *score_lines(void *u) {
    scorer *s = (scorer *)u;
    wd_batch b;
    memset(&b, 0, sizeof b);
    s->st = wd_batch_init(&b, wd_model_schema(s->m), 1, 4);
    for (int i = s->t; !s->st && i < s->n; i += s->T) {
        b.n = 0;
        s->st = wd_parse_line(s->spec, s->lines[i], s->lens[i], &b);
        if (!s->st) s->st = wd_predict((wd_model *)(uintptr_t)s->m, &b, &s->out[i]);
    }
    wd_batch_free(&b);
    return NULL;
}

// The whole path for one input format: convert a training and a test text
// (the test --schema-from the training file), train, save; then, with the
// loaded model alone, every raw test line maps to the very ids and features
// of the converted file and scores what evaluation over the file predicts.
static void roundtrip(const char *name, const wd_text_spec *base, const char *train_txt, const char *test_txt, int skip_header) {
    char trp[400], tep[400], trw[400], tew[400], mp[400];
    char nm[64];
    snprintf(nm, sizeof nm, "%s-train.txt", name); tmp(trp, sizeof trp, nm);
    snprintf(nm, sizeof nm, "%s-test.txt", name); tmp(tep, sizeof tep, nm);
    snprintf(nm, sizeof nm, "%s-train.wdr", name); tmp(trw, sizeof trw, nm);
    snprintf(nm, sizeof nm, "%s-test.wdr", name); tmp(tew, sizeof tew, nm);
    snprintf(nm, sizeof nm, "%s.wdm", name); tmp(mp, sizeof mp, nm);
    REQUIRE(tl_spit(trp, train_txt) == 0 && tl_spit(tep, test_txt) == 0);
    wd_text_spec *ts = (wd_text_spec *)malloc(sizeof *ts);
    REQUIRE(ts != NULL);
    *ts = *base;
    wd_status st = convert(ts, trp, trw);
    if (!st) st = spec_from(ts, trw);
    if (!st) st = convert(ts, tep, tew);
    wd_text_spec_free(ts);
    free(ts);
    REQUIRE_OK(st);
    const char *files[1] = {trw};
    REQUIRE_OK(train_small(files, 1, mp));

    wd_model *m = NULL;
    REQUIRE_OK(wd_model_load(mp, &m));
    wd_reader *r = NULL;
    if (wd_reader_open(tew, &r)) { wd_model_destroy(m); REQUIRE(!"test file opens"); }
    int64_t n = wd_reader_nsamples(r);
    float *pe = (float *)calloc((size_t)n, 4), *pr = (float *)calloc((size_t)n, 4), *pt = (float *)calloc((size_t)n, 4);
    const char **lines = (const char **)calloc((size_t)n + 1, sizeof *lines);
    size_t *lens = (size_t *)calloc((size_t)n + 1, sizeof *lens);
    wd_text_spec spec;
    memset(&spec, 0, sizeof spec);
    wd_batch all, file;
    memset(&all, 0, sizeof all); memset(&file, 0, sizeof file);
    int nl = 0;
    for (const char *p = test_txt; *p && nl <= n;) {   // the raw lines, header skipped
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (!(skip_header && p == test_txt)) { lines[nl] = p; lens[nl] = len; nl++; }
        p += len + (e != NULL);
    }
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    const char *tf[1] = {tew};
    ed.files = tf; ed.nfiles = 1; ed.threads = 1; ed.predictions = pe; ed.predictions_cap = n;
    wd_metrics mt;
    CHECK(nl == n);
    CHECK_OK(wd_evaluate(m, &ed, &mt));   // what `wd predict` writes
    CHECK_OK(wd_model_spec(m, &spec));    // the model alone maps raw strings
    CHECK_OK(wd_batch_init(&all, wd_model_schema(m), (int)n, 16));
    CHECK_OK(wd_batch_init(&file, wd_reader_schema(r), (int)n, 16));
    for (int i = 0; i < nl && !tl_fails; i++) CHECK_OK(wd_parse_line(&spec, lines[i], lens[i], &all));
    for (int64_t bi = 0; bi < wd_reader_nblocks(r) && !tl_fails; bi++) {
        wd_batch blk;
        memset(&blk, 0, sizeof blk);
        CHECK_OK(wd_batch_init(&blk, wd_reader_schema(r), 0, 0));
        CHECK_OK(wd_reader_read_block(r, bi, &blk));
        CHECK_OK(wd_batch_append(&file, &blk, 0, blk.n));
        wd_batch_free(&blk);
    }
    if (!tl_fails) {   // the same samples, bit for bit: labels, dense values, every slot's ids
        const wd_schema *s = wd_model_schema(m);
        CHECK(all.n == file.n && all.n == n);
        CHECK(!memcmp(all.label, file.label, 4 * (size_t)n));
        CHECK(!memcmp(all.dense, file.dense, 4 * (size_t)n * (size_t)s->ndense));
        for (int k = 0; k < s->nslots; k++) {
            int64_t cnt = s->slot[k].kind == WD_MULTI_HOT ? (int64_t)all.offs[k][n] : n;
            if (s->slot[k].kind == WD_MULTI_HOT) CHECK(!memcmp(all.offs[k], file.offs[k], 4 * ((size_t)n + 1)));
            if (memcmp(all.ids[k], file.ids[k], 4 * (size_t)cnt)) { printf("  %s: slot %d (%s): ids differ\n", name, k, s->slot[k].name); CHECK(!"ids equal"); }
        }
        // scores, printed as %.9g (every float's exact value): one batch of
        // all lines, and one request at a time from 8 threads
        CHECK_OK(wd_predict(m, &all, pr));
        scorer sc[8];
        pthread_t th[8];
        for (int t = 0; t < 8; t++) {
            sc[t] = (scorer){m, &spec, lines, lens, nl, t, 8, pt, WD_OK};
            CHECK(pthread_create(&th[t], NULL, score_lines, &sc[t]) == 0);
        }
        for (int t = 0; t < 8; t++) { pthread_join(th[t], NULL); CHECK_OK(sc[t].st); }
        int diff = 0, diff1 = 0;
        for (int64_t i = 0; i < n; i++) {
            char a[32], b[32], c[32];
            snprintf(a, sizeof a, "%.9g", (double)pe[i]); snprintf(b, sizeof b, "%.9g", (double)pr[i]); snprintf(c, sizeof c, "%.9g", (double)pt[i]);
            if (strcmp(a, b) && !diff++) printf("  %s: sample %lld: file %s, raw batch %s\n", name, (long long)i, a, b);
            if (strcmp(a, c) && !diff1++) printf("  %s: sample %lld: file %s, raw request %s\n", name, (long long)i, a, c);
        }
        CHECK(diff == 0);
        CHECK(diff1 == 0);
    }
    wd_batch_free(&all); wd_batch_free(&file);
    wd_text_spec_free(&spec);
    wd_text_spec_free(&spec);   // twice: harmless
    wd_reader_close(r);
    wd_model_destroy(m);
    free(pe); free(pr); free(pt); free(lines); free(lens);
}

static void test_criteo_raw_equals_file(void) {
    char g[400], tsv[400];
    tmp(g, sizeof g, "gen.wdr"); tmp(tsv, sizeof tsv, "gen.tsv");
    wd_gen_desc d;
    memset(&d, 0, sizeof d);
    d.output = g; d.tsv = tsv; d.rows = 1600; d.seed = 21; d.max_card = 300;
    REQUIRE_OK(wd_gen(&d, NULL));
    size_t len = 0;
    char *all = (char *)slurp(tsv, &len);
    REQUIRE(all != NULL);
    all[len] = 0;
    char *cut = all;   // the first 1200 lines train, the rest test
    for (int i = 0; i < 1200 && cut; i++) cut = strchr(cut, '\n') + 1;
    char *test_txt = strdup(cut);
    *cut = 0;
    wd_text_spec t;
    wd_text_spec_criteo(&t, 0);   // sized from the data: vocabularies for the small slots
    roundtrip("criteo", &t, all, test_txt, 0);
    free(all); free(test_txt);
}
static void test_avazu_raw_equals_file(void) {
    text tr = {0}, te = {0};
    avazu_text(&tr, 1500, 5, 1);
    avazu_text(&te, 400, 6, 1);
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.header = AVAZU_HEADER; cd.label = "click"; cd.cat = "C1,banner_pos,site_id,device_type";
    cd.derive = "hour_of_day=hour[6:8],day_of_week=weekday(hour[0:6])";
    wd_text_spec t;
    CHECK_OK(wd_text_spec_csv_desc(&t, &cd));
    if (!tl_fails) roundtrip("avazu", &t, tr.p, te.p, 1);
    free(tr.p); free(te.p);
}
static void test_libsvm_raw_equals_file(void) {
    text tr = {0}, te = {0};
    libsvm_text(&tr, 1200, 7);
    libsvm_text(&te, 300, 8);
    wd_text_spec t;
    CHECK_OK(wd_text_spec_libsvm(&t, "u=0-99,v=100-149", "200-202", 0));
    if (!tl_fails) roundtrip("libsvm", &t, tr.p, te.p, 0);
    free(tr.p); free(te.p);
}

// Issue 21's finding: two files converted separately with the same distinct
// counts get permuted ids. Slot c: x is the frequent value of the training
// day, y of the test day; the label follows x. Every use of the test file
// converted alone is refused, naming the slot; --schema-from converts it
// into the model's ids.
static void test_permuted_vocabulary_refused(void) {
    text tr = {0}, te = {0};
    tput(&tr, "click,c,d\n");
    tput(&te, "click,c,d\n");
    for (int i = 0; i < 300; i++) {
        int xa = i % 5 < 3, xb = i % 5 >= 3;   // x: 60% of training rows, 40% of test rows
        tput(&tr, "%d,%s,%s\n", xa, xa ? "x" : "y", i % 2 ? "p" : "q");
        tput(&te, "%d,%s,%s\n", xb, xb ? "x" : "y", i % 2 ? "p" : "q");
    }
    char trp[400], tep[400], trw[400], tew[400], tal[400], mp[400];
    tmp(trp, sizeof trp, "perm-train.csv"); tmp(tep, sizeof tep, "perm-test.csv");
    tmp(trw, sizeof trw, "perm-train.wdr"); tmp(tew, sizeof tew, "perm-test.wdr"); tmp(tal, sizeof tal, "perm-alone.wdr");
    tmp(mp, sizeof mp, "perm.wdm");
    CHECK(tl_spit(trp, tr.p) == 0 && tl_spit(tep, te.p) == 0);
    free(tr.p); free(te.p);
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_csv(&t, "click,c,d", "click", NULL, "c,d", 0));
    REQUIRE_OK(convert(&t, trp, trw));
    REQUIRE_OK(convert(&t, tep, tal));   // alone: its own vocabulary
    REQUIRE_OK(spec_from(&t, trw));
    wd_status cst = convert(&t, tep, tew);   // --schema-from the training file
    wd_text_spec_free(&t);
    REQUIRE_OK(cst);
    wd_reader *a = NULL, *b = NULL;
    REQUIRE_OK(wd_reader_open(trw, &a));
    if (wd_reader_open(tal, &b)) { wd_reader_close(a); REQUIRE(!"opens"); }
    CHECK(wd_schema_equal(wd_reader_schema(a), wd_reader_schema(b)));   // what the old check compared
    CHECK(wd_vocab_fingerprint(wd_reader_vocab(a), 0) != wd_vocab_fingerprint(wd_reader_vocab(b), 0));
    CHECK(wd_vocab_fingerprint(wd_reader_vocab(a), 1) == wd_vocab_fingerprint(wd_reader_vocab(b), 1));   // d: p, q equally often: ties by hash
    CHECK(wd_vocab_fingerprint(wd_reader_vocab(a), 0) != 0 && wd_vocab_fingerprint(NULL, 0) == 0 && wd_vocab_fingerprint(wd_reader_vocab(a), 2) == 0);
    wd_reader_close(a); wd_reader_close(b);
    REQUIRE_OK(wd_reader_open(tew, &a));
    REQUIRE_OK(wd_reader_open(trw, &b));
    CHECK(wd_vocab_fingerprint(wd_reader_vocab(a), 0) == wd_vocab_fingerprint(wd_reader_vocab(b), 0));   // --schema-from: the same ids
    wd_reader_close(a); wd_reader_close(b);

    const char *train1[1] = {trw};
    REQUIRE_OK(train_small(train1, 1, mp));
    wd_model *m = NULL;
    REQUIRE_OK(wd_model_load(mp, &m));
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    const char *good[1] = {tew}, *alone[1] = {tal};
    wd_metrics mt;
    ed.files = good; ed.nfiles = 1; ed.threads = 1;
    CHECK_OK(wd_evaluate(m, &ed, &mt));
    CHECK(mt.auc > 0.99);   // the label follows x
    ed.files = alone;
    wd_status st = wd_evaluate(m, &ed, &mt);
    CHECK(st == WD_ERR_SCHEMA);
    CHECK(strstr(wd_last_error(), "slot 0 (c)") && strstr(wd_last_error(), "perm-alone.wdr") && strstr(wd_last_error(), "--schema-from"));
    if (st != WD_ERR_SCHEMA) printf("  eval: %s (auc %.3f)\n", wd_last_error(), mt.auc);
    // resume and warm start on it: refused; on the right file: trains
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = alone; td.nfiles = 1; td.threads = 1; td.batch_size = 64; td.max_steps = 100000;
    wd_model_new_run(m);
    CHECK(wd_train(m, &td, NULL) == WD_ERR_SCHEMA && strstr(wd_last_error(), "slot 0 (c)") && strstr(wd_last_error(), "the model"));
    td.files = good;
    CHECK_OK(wd_train(m, &td, NULL));
    // validation with it: refused
    td.valid_files = alone; td.nvalid = 1;
    wd_model_new_run(m);
    CHECK(wd_train(m, &td, NULL) == WD_ERR_SCHEMA && strstr(wd_last_error(), "perm-alone.wdr"));
    wd_model_destroy(m);
    // a new model over both files: the second is refused against the first
    const char *both[2] = {trw, tal};
    CHECK(train_small(both, 2, mp) == WD_ERR_SCHEMA && strstr(wd_last_error(), "slot 0 (c)") && strstr(wd_last_error(), "training files before it"));
    const char *both_ok[2] = {trw, tew};
    CHECK_OK(train_small(both_ok, 2, mp));
}

// Ids that grow with the data (issue 20, Build 3): the Criteo sample's
// 7,200 training rows as 4 days of 1,800, converted frozen (days 2-4
// --schema-from day 1: new values take the out-of-vocabulary id) and
// growing (day 1 with vocab_capacity, day N --schema-from day N-1 with
// extend_vocab). Day 4's out-of-vocabulary share: over 15% frozen, under 2%
// growing; every old value keeps its id (day-1 lines parsed with day 4's
// spec give day 1's ids, and the day-1 model scores them bit for bit as
// before); warm start (day 1, then each day from the previous model) scores
// the held-out rows at least as well growing as frozen (mean AUC of 3
// seeds); the model records the extended vocabulary (wd_model_spec, and
// after save/load); a file with an extended vocabulary is refused for
// evaluation by a model that never trained on it, a permuted one for
// training, naming the slot; an older day's file is accepted.
static wd_status convert_day(const char *in, const char *out, const char *from, uint32_t capacity, int extend, wd_convert_report *rep) {
    wd_text_spec t;
    wd_text_spec_criteo(&t, 0);
    wd_status st = from ? spec_from(&t, from) : WD_OK;
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    const char *ins[1] = {in};
    d.spec = &t; d.inputs = ins; d.ninputs = 1; d.output = out; d.threads = 2;
    d.vocab_capacity = capacity; d.extend_vocab = extend;
    if (!st) st = wd_convert(&d, rep);
    wd_text_spec_free(&t);
    return st;
}
static wd_status day_train(wd_model **m, const char *wdr, uint64_t seed) {
    wd_status st = WD_OK;
    if (!*m) {
        wd_reader *r;
        WD__TRY(wd_reader_open(wdr, &r));
        wd_model_desc md;
        memset(&md, 0, sizeof md);
        md.schema = wd_reader_schema(r);
        md.embed_dim = 8; md.hidden[0] = 32; md.hidden[1] = 16; md.seed = seed;
        st = wd_model_create(&md, m);
        wd_reader_close(r);
        if (st) return st;
    }
    wd_model_new_run(*m);   // the CLI's --init-from
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    const char *files[1] = {wdr};
    td.files = files; td.nfiles = 1; td.batch_size = 128; td.threads = 2;
    return wd_train(*m, &td, NULL);
}
static double oov_share(const wd_oov *o) { return o->values ? (double)o->oov / (double)o->values : -1; }
static void test_daily_vocabulary_grows(void) {
    char src[400 + 40];
    snprintf(src, sizeof src, "%s/criteo_kaggle_head8000_train.tsv", DATA);
    if (!file_exists(src)) { SKIP("the Criteo sample is not in %.150s", DATA); return; }
    FILE *f = fopen(src, "rb");
    REQUIRE(f);
    char day[4][400], fz[4][400], gr[4][400], held[3][400], line[1 << 16];
    FILE *out[4];
    for (int d = 0; d < 4; d++) {
        char n[64];
        snprintf(n, sizeof n, "day%d.tsv", d + 1); tmp(day[d], sizeof day[d], n);
        snprintf(n, sizeof n, "day%d-frozen.wdr", d + 1); tmp(fz[d], sizeof fz[d], n);
        snprintf(n, sizeof n, "day%d-growing.wdr", d + 1); tmp(gr[d], sizeof gr[d], n);
        out[d] = fopen(day[d], "wb");
        REQUIRE(out[d]);
    }
    int rows = 0;
    while (fgets(line, sizeof line, f)) { if (rows < 7200) fputs(line, out[rows / 1800]); rows++; }
    fclose(f);
    for (int d = 0; d < 4; d++) fclose(out[d]);
    REQUIRE(rows == 7200);
    wd_convert_report rep;
    REQUIRE_OK(convert_day(day[0], fz[0], NULL, 0, 0, &rep));
    REQUIRE_OK(convert_day(day[0], gr[0], NULL, 8192, 0, &rep));
    for (int k = 0; k < 26; k++) CHECK(rep.vocab_size[k] > 0 && rep.buckets[k] == 8193);   // every slot of a day: <= 4096 values, a vocabulary
    double frozen = 0, growing = 0;
    for (int d = 1; d < 4; d++) {
        REQUIRE_OK(convert_day(day[d], fz[d], fz[0], 0, 0, &rep));
        frozen = oov_share(&rep.oov);
        REQUIRE_OK(convert_day(day[d], gr[d], gr[d - 1], 0, 1, &rep));
        growing = oov_share(&rep.oov);
        int64_t added = 0;
        for (int k = 0; k < 26; k++) { added += rep.vocab_added[k]; CHECK(rep.vocab_no_room[k] == 0); }
        CHECK(added > 1000);
    }
    printf("  day 4 out-of-vocabulary share: frozen %.4f, growing %.4f\n", frozen, growing);
    CHECK(frozen > 0.15);
    CHECK(growing >= 0 && growing < 0.02);
    // held out: dev + test, --schema-from each scheme's day 4
    char heldtxt[2][400 + 40];
    snprintf(heldtxt[0], sizeof heldtxt[0], "%s/criteo_kaggle_head8000_dev.tsv", DATA);
    snprintf(heldtxt[1], sizeof heldtxt[1], "%s/criteo_kaggle_head8000_test.tsv", DATA);
    tmp(held[0], sizeof held[0], "held-frozen.wdr"); tmp(held[1], sizeof held[1], "held-growing.wdr");
    tmp(held[2], sizeof held[2], "day2-alone.wdr");
    for (int g = 0; g < 2; g++) {
        wd_text_spec t;
        wd_text_spec_criteo(&t, 0);
        REQUIRE_OK(spec_from(&t, g ? gr[3] : fz[3]));
        wd_convert_desc d;
        memset(&d, 0, sizeof d);
        const char *ins[2] = {heldtxt[0], heldtxt[1]};
        d.spec = &t; d.inputs = ins; d.ninputs = 2; d.output = held[g];
        wd_status st = wd_convert(&d, &rep);
        wd_text_spec_free(&t);
        REQUIRE_OK(st);
    }
    // warm start, 3 seeds: growing at least as good as frozen
    double auc[2] = {0, 0};
    wd_model *m1 = NULL, *m2 = NULL, *m4 = NULL;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        for (int g = 0; g < 2; g++) {
            wd_model *m = NULL;
            for (int d = 0; d < 4; d++) {
                REQUIRE_OK(day_train(&m, g ? gr[d] : fz[d], seed));
                if (g && seed == 1 && d == 0) REQUIRE_OK(wd_model_save(m, held[2]));   // the day-1 model (reloaded below)
                if (g && seed == 1 && d == 1) {
                    char mp[400];
                    tmp(mp, sizeof mp, "day2-growing.wdm");
                    REQUIRE_OK(wd_model_save(m, mp));
                    REQUIRE_OK(wd_model_load(mp, &m2));
                }
            }
            wd_eval_desc ed;
            memset(&ed, 0, sizeof ed);
            const char *ev[1] = {held[g]};
            ed.files = ev; ed.nfiles = 1; ed.threads = 2;
            wd_metrics mt;
            REQUIRE_OK(wd_evaluate(m, &ed, &mt));
            CHECK(mt.oov.values == 800 * 26 && mt.oov.oov > 0);
            auc[g] += mt.auc / 3;
            if (g && seed == 1) m4 = m;
            else wd_model_destroy(m);
        }
    }
    printf("  warm start, held-out AUC (mean of 3 seeds): frozen %.4f, growing %.4f\n", auc[0], auc[1]);
    CHECK(auc[1] >= auc[0]);
    REQUIRE_OK(wd_model_load(held[2], &m1));
    unlink(held[2]);
    // old ids unchanged: day-1 lines through day 4's spec (and the day-4
    // model's own) give day 1's ids and the day-1 model's very scores
    wd_text_spec s1, s4, sm;
    wd_text_spec_criteo(&s1, 0); wd_text_spec_criteo(&s4, 0);
    memset(&sm, 0, sizeof sm);
    REQUIRE_OK(spec_from(&s1, gr[0]));
    REQUIRE_OK(spec_from(&s4, gr[3]));
    REQUIRE_OK(wd_model_spec(m4, &sm));
    wd_reader *r1, *r4;
    int grew = 0;
    REQUIRE_OK(wd_reader_open(gr[0], &r1));
    REQUIRE_OK(wd_reader_open(gr[3], &r4));
    for (int k = 0; k < 26; k++) {
        CHECK(wd_vocab_size(sm.vocab, k) == wd_vocab_size(wd_reader_vocab(r4), k));   // the model recorded day 4's
        CHECK(wd_vocab_fingerprint(sm.vocab, k) == wd_vocab_fingerprint(wd_reader_vocab(r4), k));
        CHECK(wd_vocab_size(s4.vocab, k) >= wd_vocab_size(s1.vocab, k));
        grew += wd_vocab_size(s4.vocab, k) > wd_vocab_size(s1.vocab, k);
        CHECK(sm.schema.slot[k].buckets == 8193 && s4.schema.slot[k].buckets == 8193);
    }
    CHECK(grew >= 20);
    wd_reader_close(r1); wd_reader_close(r4);
    wd_batch b1, b4, bm;
    REQUIRE_OK(wd_batch_init(&b1, wd_model_schema(m1), 1800, 4));
    REQUIRE_OK(wd_batch_init(&b4, wd_model_schema(m1), 1800, 4));
    REQUIRE_OK(wd_batch_init(&bm, wd_model_schema(m1), 1800, 4));
    f = fopen(day[0], "rb");
    REQUIRE(f);
    int bad = 0;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n') n--;
        bad |= wd_parse_line(&s1, line, n, &b1) || wd_parse_line(&s4, line, n, &b4) || wd_parse_line(&sm, line, n, &bm);
    }
    fclose(f);
    CHECK(!bad && b1.n == 1800 && b4.n == 1800 && bm.n == 1800);
    int same = 1;
    for (int k = 0; k < 26; k++) same &= memcmp(b1.ids[k], b4.ids[k], 4 * 1800) == 0 && memcmp(b1.ids[k], bm.ids[k], 4 * 1800) == 0;
    CHECK(same);
    float *p1 = (float *)malloc(4 * 1800), *p4 = (float *)malloc(4 * 1800);
    REQUIRE(p1 && p4);
    CHECK_OK(wd_predict(m1, &b1, p1));
    CHECK_OK(wd_predict(m1, &b4, p4));
    CHECK(memcmp(p1, p4, 4 * 1800) == 0);
    free(p1); free(p4);
    wd_batch_free(&b1); wd_batch_free(&b4); wd_batch_free(&bm);
    wd_text_spec_free(&s1); wd_text_spec_free(&s4); wd_text_spec_free(&sm);
    // the day-2 model after save and load: day 2's vocabulary
    REQUIRE_OK(wd_model_spec(m2, &sm));
    REQUIRE_OK(wd_reader_open(gr[1], &r1));
    for (int k = 0; k < 26; k++) CHECK(wd_vocab_fingerprint(sm.vocab, k) == wd_vocab_fingerprint(wd_reader_vocab(r1), k));
    wd_reader_close(r1);
    wd_text_spec_free(&sm);
    // refusals: day 2's extended file evaluated by the day-1 model; day 2
    // converted alone (its own ids, the same table sizes) trained on from
    // the day-1 model; accepted: day 1's file evaluated by the day-4 model
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    const char *ev[1] = {gr[1]};
    ed.files = ev; ed.nfiles = 1; ed.threads = 2;
    wd_metrics mt;
    CHECK(wd_evaluate(m1, &ed, &mt) == WD_ERR_SCHEMA && strstr(wd_last_error(), "extends the model's") && strstr(wd_last_error(), "slot 0 (C1)"));
    ev[0] = gr[0];
    CHECK_OK(wd_evaluate(m4, &ed, &mt));
    REQUIRE_OK(convert_day(day[1], held[2], NULL, 8192, 0, &rep));
    wd_status st = day_train(&m1, held[2], 1);
    CHECK(st == WD_ERR_SCHEMA && strstr(wd_last_error(), "day2-alone.wdr") && strstr(wd_last_error(), "the same value would have another id"));
    if (st != WD_ERR_SCHEMA) printf("  permuted: %s\n", wd_last_error());
    CHECK_OK(day_train(&m1, gr[1], 1));   // the extension: accepted
    wd_model_destroy(m1); wd_model_destroy(m2); wd_model_destroy(m4);
    for (int d = 0; d < 4; d++) { unlink(day[d]); unlink(fz[d]); unlink(gr[d]); }
    for (int i = 0; i < 3; i++) unlink(held[i]);
}
// The table full: values past its rows stay out of vocabulary, reported per
// slot; ids never pass the table; a spec with a vocabulary refuses
// vocab_capacity, extend_vocab needs one.
static void test_vocabulary_capacity_full(void) {
    text a = {0}, b = {0};
    tput(&a, "click,c,d\n");
    tput(&b, "click,c,d\n");
    for (int i = 0; i < 200; i++) {
        tput(&a, "%d,a%d,d%d\n", i % 2, i % 10, i % 3);        // c: 10 values, d: 3
        tput(&b, "%d,b%d,d%d\n", i % 2, i % 20, i % 3);        // c: 20 new values (b0 most often? all equal), d: none new
    }
    char ap[400], bp[400], aw[400], bw[400];
    tmp(ap, sizeof ap, "cap-a.csv"); tmp(bp, sizeof bp, "cap-b.csv"); tmp(aw, sizeof aw, "cap-a.wdr"); tmp(bw, sizeof bw, "cap-b.wdr");
    CHECK(tl_spit(ap, a.p) == 0 && tl_spit(bp, b.p) == 0);
    free(a.p); free(b.p);
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_csv(&t, "click,c,d", "click", NULL, "c,d", 0));
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    const char *ins[1] = {ap};
    d.spec = &t; d.inputs = ins; d.ninputs = 1; d.output = aw; d.vocab_capacity = 15;
    wd_convert_report rep;
    REQUIRE_OK(wd_convert(&d, &rep));
    CHECK(rep.buckets[0] == 16 && rep.vocab_size[0] == 10 && rep.buckets[1] == 16 && rep.vocab_size[1] == 3);
    d.extend_vocab = 1;
    CHECK(wd_convert(&d, &rep) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "extend_vocab needs"));
    REQUIRE_OK(spec_from(&t, aw));
    CHECK(wd_convert(&d, &rep) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "vocab_capacity"));
    d.vocab_capacity = 0; ins[0] = bp; d.output = bw;
    REQUIRE_OK(wd_convert(&d, &rep));
    CHECK(rep.vocab_added[0] == 5 && rep.vocab_no_room[0] == 15 && rep.vocab_size[0] == 15 && rep.buckets[0] == 16);
    CHECK(rep.vocab_added[1] == 0 && rep.vocab_no_room[1] == 0);
    CHECK(rep.oov.slot_values[0] == 200 && rep.oov.slot_oov[0] == 150 && rep.oov.slot_oov[1] == 0 && rep.oov.oov == 150 && rep.oov.values == 400);
    int worst[3];
    CHECK(wd_oov_worst(&rep.oov, 2, worst, 3) == 1 && worst[0] == 0);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(bw, &r));
    const wd_batch *blk;
    REQUIRE_OK(wd_reader_block(r, 0, &blk));
    uint32_t top = 0;
    for (int i = 0; i < blk->n; i++) top = blk->ids[0][i] > top ? blk->ids[0][i] : top;
    CHECK(top == 15);
    wd_reader_close(r);
    wd_text_spec_free(&t);
    unlink(ap); unlink(bp); unlink(aw); unlink(bw);
}

// Specs own their vocabulary: the reader it came from may close first (it
// was a heap use-after-free in wd__cat_id), copies are independent, a spec
// set up twice through wd_text_spec_vocab frees the first copy.
static void test_spec_owns_vocabulary(void) {
    char trp[400], trw[400];
    tmp(trp, sizeof trp, "own.csv"); tmp(trw, sizeof trw, "own.wdr");
    REQUIRE(tl_spit(trp, "y,a,b\n1,u,v\n0,w,v\n1,u,z\n") == 0);
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_csv(&t, "y,a,b", "y", NULL, "a,b", 0));
    REQUIRE_OK(convert(&t, trp, trw));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(trw, &r));
    wd_status st = wd_text_spec_match(&t, wd_reader_schema(r));
    if (!st) st = wd_text_spec_vocab(&t, wd_reader_vocab(r));
    if (!st) st = wd_text_spec_vocab(&t, wd_reader_vocab(r));   // again: the first copy is freed
    wd_reader_close(r);
    REQUIRE_OK(st);
    CHECK(t.vocab != NULL && t.schema.slot[0].buckets == 3 && t.schema.slot[1].buckets == 3);
    wd_batch b;
    memset(&b, 0, sizeof b);
    CHECK_OK(wd_batch_init(&b, &t.schema, 2, 0));
    const char *cat[2] = {"u", "z"}, *unseen[2] = {"never", ""};
    CHECK_OK(wd_batch_add(&t, &b, 0.0f, NULL, 0, cat, NULL, 2));   // after the reader closed
    CHECK_OK(wd_batch_add(&t, &b, 0.0f, NULL, 0, unseen, NULL, 2));
    CHECK(b.n == 2 && b.ids[0][0] == 1 && b.ids[1][0] != 0 && b.ids[0][1] == 0 && b.ids[1][1] == 0);   // u most frequent: id 1; unseen: 0
    wd_batch_free(&b);
    wd_text_spec_free(&t);
    CHECK(t.vocab == NULL);
    wd_text_spec_free(NULL);
}

// A saved model carries its input contract; a corrupt one is refused; a
// model trained on files with no input format says so.
static void test_contract_in_checkpoint(void) {
    char g[300], mp[400], bad[400];
    tmp(g, sizeof g, "writer.wdr"); tmp(mp, sizeof mp, "writer.wdm"); tmp(bad, sizeof bad, "bad.wdm");
    char gg[300];
    tmp(gg, sizeof gg, "gen.wdr");
    REQUIRE_OK(tl_gen(gg, 500, 0, 4, 50, 100));   // wd gen records the Criteo format; its rows through wd_writer: none
    wd_reader *gr;
    const wd_batch *gb;
    wd_writer *w;
    REQUIRE_OK(wd_reader_open(gg, &gr));
    REQUIRE_OK(wd_reader_block(gr, 0, &gb));
    REQUIRE_OK(wd_writer_open(g, wd_reader_schema(gr), NULL, &w));
    wd_status wst = wd_writer_append(w, gb);
    if (wst) wd_writer_abort(w);
    else wst = wd_writer_close(w);
    wd_reader_close(gr);
    REQUIRE_OK(wst);
    const char *f[1] = {g};
    REQUIRE_OK(train_small(f, 1, mp));
    wd_model *m = NULL;
    REQUIRE_OK(wd_model_load(mp, &m));
    wd_text_spec s;
    CHECK(wd_model_spec(m, &s) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "carry no input format"));
    CHECK(s.vocab == NULL);
    wd_model_destroy(m);
    // the Avazu model of the round trip: its INPT section, corrupted with a
    // recomputed checksum, is refused by what it says
    char am[400];
    tmp(am, sizeof am, "avazu.wdm");
    size_t n = 0;
    unsigned char *p = slurp(am, &n);
    REQUIRE(p != NULL);
    size_t off = 12;
    int found = 0;
    while (off + 16 <= n) {
        uint64_t bytes = wd__get64(p + off + 8);
        if (!memcmp(p + off, "INPT", 4)) { found = 1; break; }
        off += 16 + (size_t)bytes + 8;
    }
    CHECK(found);
    if (found) {
        uint64_t bytes = wd__get64(p + off + 8);
        unsigned char *q = p + off + 16;
        CHECK(wd__get32(q) == 3);   // recorded, with an input format
        // the spec sits at the end (before up to 3 bytes of padding): its
        // label column, 16 bytes in, pointed past the columns
        size_t at = 8;
        for (uint32_t k = 0; k < wd__get32(q + 4); k++) { int64_t vn = (int64_t)wd__get64(q + at); at += 8 + (vn > 0 ? 8 * (size_t)vn : 0); }
        CHECK(wd__get32(q + at + 4) == 2);   // CSV
        wd__put32(q + at + 4 + 16, 999);
        wd__put32(q + bytes, wd__crc32c(q, (size_t)bytes));
        FILE *o = fopen(bad, "wb");
        CHECK(o && fwrite(p, 1, n, o) == n);
        if (o) fclose(o);
        wd_status st = wd_model_load(bad, &m);
        CHECK(st == WD_ERR_CORRUPT && strstr(wd_last_error(), "INPT") && strstr(wd_last_error(), "input format"));
        if (!st) wd_model_destroy(m);
    }
    free(p);
    // a .wdr header whose input format passes its checksum but not its checks
    char cw[400], ct[400];
    tmp(cw, sizeof cw, "crit.wdr"); tmp(ct, sizeof ct, "crit.tsv");
    text tsv = {0};
    for (int i = 0; i < 20; i++) { tput(&tsv, "%d", i % 2); for (int j = 0; j < 13; j++) tput(&tsv, "\t%d", i + j); for (int j = 0; j < 26; j++) tput(&tsv, "\tv%d", (i * j) % 5); tput(&tsv, "\n"); }
    CHECK(tl_spit(ct, tsv.p) == 0);
    free(tsv.p);
    wd_text_spec t;
    wd_text_spec_criteo(&t, 1000);   // hashed: no vocabulary before the spec
    REQUIRE_OK(convert(&t, ct, cw));
    p = slurp(cw, &n);
    REQUIRE(p != NULL);
    uint32_t hb = wd__get32(p + 12), so = 96 + 48 * 26 + 4;
    CHECK(wd__get32(p + 8) == 3 && wd__get32(p + 24) == 2 && hb == so + 48 + 4);
    wd__put32(p + so + 16, 5);   // a Criteo format with a CSV label column
    wd__put32(p + hb - 4, wd__crc32c(p, hb - 4));
    FILE *o = fopen(cw, "wb");
    CHECK(o && fwrite(p, 1, n, o) == n);
    if (o) fclose(o);
    free(p);
    wd_reader *r = NULL;
    wd_status st = wd_reader_open(cw, &r);
    CHECK(st == WD_ERR_CORRUPT && strstr(wd_last_error(), "input format is inconsistent"));
    if (st != WD_ERR_CORRUPT) printf("  %s -> %s\n", wd_status_string(st), wd_last_error());
    if (!st) wd_reader_close(r);
}

// Files and checkpoints of the formats before the self-contained model
// (tests/golden/make_v2.sh): they load and score as before, and a spec asked
// of them is refused saying what is missing; training records the
// fingerprints (the .wdr v2's vocabulary), not an input format it lacks.
static void test_old_formats(void) {
    char wdm[400], wdr[400], v1[400];
    snprintf(wdm, sizeof wdm, "%s/v2_vocab.wdm", GOLD); snprintf(wdr, sizeof wdr, "%s/v2_vocab.wdr", GOLD);
    snprintf(v1, sizeof v1, "%s/v1_adam.wdm", GOLD);
    wd_model *m = NULL;
    REQUIRE_OK(wd_model_load(v1, &m));
    wd_text_spec s;
    CHECK(wd_model_spec(m, &s) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "before .wdm version 3"));
    wd_model_destroy(m);
    REQUIRE_OK(wd_model_load(wdm, &m));
    CHECK(wd_model_spec(m, &s) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "before .wdm version 3"));
    wd_reader *r = NULL;
    CHECK_OK(wd_reader_open(wdr, &r));
    if (r) {
        CHECK(wd_reader_vocab(r) != NULL && wd_vocab_fingerprint(wd_reader_vocab(r), 0) != 0);
        wd_reader_close(r);
    }
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    const char *f[1] = {wdr};
    float pred[96];
    ed.files = f; ed.nfiles = 1; ed.threads = 1; ed.predictions = pred; ed.predictions_cap = 96;
    wd_metrics mt;
    CHECK_OK(wd_evaluate(m, &ed, &mt));   // schema alone, as before
    CHECK(mt.samples == 96);
    char w2[400];
    tmp(w2, sizeof w2, "v2-retrained.wdm");
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = f; td.nfiles = 1; td.threads = 1; td.max_steps = 100;
    wd_model_new_run(m);   // --init-from: a new run records the files' fingerprints
    CHECK_OK(wd_train(m, &td, NULL));
    CHECK_OK(wd_model_save(m, w2));
    wd_model_destroy(m);
    m = NULL;
    REQUIRE_OK(wd_model_load(w2, &m));
    CHECK(wd_model_spec(m, &s) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "before .wdr version 3"));
    CHECK(m->in.known && m->in.vocab && m->in.spec == NULL);
    wd_model_destroy(m);
}

// The serving export: weights and input contract, no optimizer state; it
// predicts what the checkpoint predicts, bit for bit, gives the same spec,
// cannot train, and saves as an export again.
static void test_export(void) {
    char am[400], ex[400], ex2[400], tew[400];
    tmp(am, sizeof am, "avazu.wdm"); tmp(ex, sizeof ex, "avazu-serve.wdm"); tmp(ex2, sizeof ex2, "avazu-serve2.wdm"); tmp(tew, sizeof tew, "avazu-test.wdr");
    wd_model *m = NULL, *e = NULL;
    REQUIRE_OK(wd_model_load(am, &m));
    CHECK_OK(wd_model_export(m, ex));
    wd_status st = wd_model_load(ex, &e);
    CHECK_OK(st);
    if (!st) {
        size_t nm = 0, ne = 0;
        unsigned char *a = slurp(am, &nm), *b = slurp(ex, &ne);
        int64_t state = 4 * (2 * m->P + 2 * m->wide_rows + m->emb_rows * m->E);   // Adagrad: dense s1 s2, FTRL z n, embedding s1
        CHECK(a && b && (int64_t)nm - (int64_t)ne == state);
        printf("  checkpoint %zu bytes, export %zu (%.1f%%)\n", nm, ne, 100.0 * (double)ne / (double)nm);
        free(a); free(b);
        float pa[400], pb[400];
        wd_eval_desc ed;
        memset(&ed, 0, sizeof ed);
        const char *f[1] = {tew};
        wd_metrics ma, mb;
        ed.files = f; ed.nfiles = 1; ed.threads = 1; ed.predictions = pa; ed.predictions_cap = 400;
        CHECK_OK(wd_evaluate(m, &ed, &ma));
        ed.predictions = pb;
        CHECK_OK(wd_evaluate(e, &ed, &mb));   // files checked against its fingerprints too
        CHECK(ma.samples == 400 && mb.samples == 400 && !memcmp(pa, pb, sizeof pa));
        wd_text_spec t;
        CHECK_OK(wd_model_spec(e, &t));
        CHECK(t.format == WD_FMT_CSV && t.nderived == 2 && t.vocab != NULL);
        wd_text_spec_free(&t);
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.files = f; td.nfiles = 1; td.threads = 1;
        CHECK(wd_train(e, &td, NULL) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "exported"));
        CHECK_OK(wd_model_save(e, ex2));   // an export saves as one
        size_t n1 = 0, n2 = 0;
        a = slurp(ex, &n1); b = slurp(ex2, &n2);
        CHECK(a && b && n1 == n2 && !memcmp(a, b, n1));
        free(a); free(b);
    }
    wd_model_destroy(e);
    wd_model_destroy(m);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    if (argc > 3) snprintf(DATA, sizeof DATA, "%s", argv[3]);
    if (argc > 2) snprintf(GOLD, sizeof GOLD, "%s", argv[2]);
    else if (!file_exists("tests/golden/v1.wdr")) {   // build/test_contract -> build/../tests/golden
        const char *slash = strrchr(argv[0], '/');
        if (slash) snprintf(GOLD, sizeof GOLD, "%.*s/../tests/golden", (int)(slash - argv[0]), argv[0]);
    }
    RUN(test_criteo_raw_equals_file);
    RUN(test_avazu_raw_equals_file);
    RUN(test_libsvm_raw_equals_file);
    RUN(test_permuted_vocabulary_refused);
    RUN(test_spec_owns_vocabulary);
    RUN(test_contract_in_checkpoint);
    RUN(test_old_formats);
    RUN(test_export);
    RUN(test_daily_vocabulary_grows);
    RUN(test_vocabulary_capacity_full);
    return test_summary("test_contract");
}
