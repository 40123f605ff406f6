// Arrow C stream input (widedeep.h section 20), with arrays built by hand:
// a stream converts to the .wdr that wd_convert makes of the same rows as
// CSV text (byte for byte), and reads back through wd_arrow_reader as that
// file's samples; every refusal (unsupported type, offsets out of range, a
// schema that changes mid-stream, a producer's error, a null label) is an
// error naming where, with no output file and every producer object
// released; random valid streams against their CSV text, and random
// corruptions of them refused (under ASan: never a read out of bounds).
// Usage: test_arrow [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <sys/stat.h>

static char TMP[200] = "/tmp";
static void tmp(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/ar-%s", TMP, name); }

// ---- what the test allocates for its arrays (freed after each test)
static void *pool[4096];
static int npool;
static void *keep(void *p) { if (npool < 4096) pool[npool++] = p; return p; }
static void *zalloc(size_t n) { return keep(calloc(1, n ? n : 1)); }
static void pool_free(void) { while (npool) free(pool[--npool]); }

// A column's array: n rows after `pad` rows of garbage (its offset); v[i]
// NULL: a null. Formats u U z Z (offsets), vu vz (views), integers, floats, b.
static void rel_child(struct ArrowArray *a) { a->release = NULL; }   // a parent's child: released with it
static struct ArrowArray *mk(int64_t len, int64_t off, int64_t nulls, int nbuf) {
    struct ArrowArray *a = (struct ArrowArray *)zalloc(sizeof *a);
    a->release = rel_child;
    a->length = len; a->offset = off; a->null_count = nulls; a->n_buffers = nbuf;
    a->buffers = (const void **)zalloc(sizeof(void *) * (size_t)(nbuf + 1));
    return a;
}
static uint8_t *bits(const char **v, int n, int pad, int64_t *nulls) {
    uint8_t *b = (uint8_t *)zalloc((size_t)(n + pad) / 8 + 1);
    *nulls = 0;
    for (int i = 0; i < n; i++) { if (v[i]) b[(i + pad) >> 3] |= (uint8_t)(1u << ((i + pad) & 7)); else ++*nulls; }
    return b;
}
static struct ArrowArray *col_str(const char *fmt, const char **v, int n, int pad) {
    int64_t nulls;
    uint8_t *valid = bits(v, n, pad, &nulls);
    if (fmt[0] == 'v') {   // views: inline up to 12 bytes, else in the one data buffer
        struct ArrowArray *a = mk(n, pad, nulls, 4);
        uint8_t *views = (uint8_t *)zalloc(16 * (size_t)(n + pad));
        size_t total = 0;
        for (int i = 0; i < n; i++) total += v[i] ? strlen(v[i]) : 0;
        char *data = (char *)zalloc(total);
        int64_t *sizes = (int64_t *)zalloc(sizeof(int64_t));
        int32_t at = 0;
        for (int i = 0; i < n; i++) {
            uint8_t *w = views + 16 * (i + pad);
            int32_t len = v[i] ? (int32_t)strlen(v[i]) : 0, zero = 0;
            memcpy(w, &len, 4);
            if (len <= 12) { if (len) memcpy(w + 4, v[i], (size_t)len); continue; }
            memcpy(w + 4, v[i], 4); memcpy(w + 8, &zero, 4); memcpy(w + 12, &at, 4);
            memcpy(data + at, v[i], (size_t)len);
            at += len;
        }
        *sizes = at;
        a->buffers[0] = valid; a->buffers[1] = views; a->buffers[2] = data; a->buffers[3] = sizes;
        return a;
    }
    struct ArrowArray *a = mk(n, pad, nulls, 3);
    int wide = fmt[0] == 'U' || fmt[0] == 'Z';
    size_t total = 0;
    for (int i = 0; i < n; i++) total += v[i] ? strlen(v[i]) : 0;
    char *data = (char *)zalloc(total + 8);
    memset(data, '#', total + 8);
    void *offs = zalloc((size_t)(n + pad + 1) * 8);
    int64_t at = 0;
    for (int i = 0; i <= n + pad; i++) {
        if (i > pad && v[i - pad - 1]) {
            memcpy(data + at, v[i - pad - 1], strlen(v[i - pad - 1]));
            at += (int64_t)strlen(v[i - pad - 1]);
        }
        if (i < pad) { if (wide) ((int64_t *)offs)[i] = 0; else ((int32_t *)offs)[i] = 0; continue; }
        if (wide) ((int64_t *)offs)[i] = at; else ((int32_t *)offs)[i] = (int32_t)at;
    }
    a->buffers[0] = valid; a->buffers[1] = offs; a->buffers[2] = data;
    return a;
}
// Numbers: v[i] as the format's type; isnull[i] (NULL: none) a null. The
// pad rows hold 7 (an invalid label: a reader that ignores the offset fails).
static struct ArrowArray *col_num(const char *fmt, const double *v, const int *isnull, int n, int pad) {
    const char *vv[256];
    for (int i = 0; i < n; i++) vv[i] = isnull && isnull[i] ? NULL : "";
    int64_t nulls;
    uint8_t *valid = bits(vv, n, pad, &nulls);
    struct ArrowArray *a = mk(n, pad, nulls, 2);
    uint8_t *p = (uint8_t *)zalloc(8 * (size_t)(n + pad) + 8);
    for (int i = 0; i < n + pad; i++) {
        double x = i < pad ? 7 : v[i - pad];
        switch (fmt[0]) {
        case 'b': if (x != 0) p[i >> 3] |= (uint8_t)(1u << (i & 7)); break;
        case 'c': ((int8_t *)p)[i] = (int8_t)x; break;
        case 'C': ((uint8_t *)p)[i] = (uint8_t)x; break;
        case 's': ((int16_t *)p)[i] = (int16_t)x; break;
        case 'S': ((uint16_t *)p)[i] = (uint16_t)x; break;
        case 'i': ((int32_t *)p)[i] = (int32_t)x; break;
        case 'I': ((uint32_t *)p)[i] = (uint32_t)x; break;
        case 'l': ((int64_t *)p)[i] = (int64_t)x; break;
        case 'L': ((uint64_t *)p)[i] = (uint64_t)x; break;
        case 'f': ((float *)p)[i] = (float)x; break;
        default: ((double *)p)[i] = x; break;
        }
    }
    a->buffers[0] = valid; a->buffers[1] = p;
    return a;
}

// ---- a producer: a schema and batches (parent struct arrays over the
// columns above), handed out afresh by each stream opened
static int released_schemas, released_arrays, released_streams, opened;
static void rel_schema(struct ArrowSchema *s) { released_schemas++; s->release = NULL; }
static void rel_array(struct ArrowArray *a) { released_arrays++; a->release = NULL; }
typedef struct producer {
    struct ArrowSchema schema;
    struct ArrowArray batch[64];
    int nbatches;
    int fail_at;                    // get_next fails at this batch (-1: never)
    int next;
} producer;
static struct ArrowSchema *sch(producer *p, const char *name, const char *fmt) {
    struct ArrowSchema *c = (struct ArrowSchema *)zalloc(sizeof *c);
    c->format = fmt; c->name = name; c->flags = ARROW_FLAG_NULLABLE; c->release = rel_schema;
    if (!p->schema.children) p->schema.children = (struct ArrowSchema **)zalloc(sizeof(void *) * 64);
    p->schema.children[p->schema.n_children++] = c;
    p->schema.format = "+s"; p->schema.name = ""; p->schema.release = rel_schema;
    return c;
}
// A batch of `len` rows (from parent offset off) over the columns given.
static struct ArrowArray *batch(producer *p, int64_t len, int64_t off, struct ArrowArray **cols, int ncols) {
    struct ArrowArray *b = &p->batch[p->nbatches++];
    memset(b, 0, sizeof *b);
    b->length = len; b->offset = off; b->n_buffers = 1; b->n_children = ncols;
    b->buffers = (const void **)zalloc(sizeof(void *));
    b->children = (struct ArrowArray **)zalloc(sizeof(void *) * (size_t)(ncols + 1));
    for (int i = 0; i < ncols; i++) b->children[i] = cols[i];
    b->release = rel_array;
    return b;
}
static int st_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
    *out = ((producer *)s->private_data)->schema;
    out->release = rel_schema;
    return 0;
}
static int st_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
    producer *p = (producer *)s->private_data;
    if (p->next == p->fail_at) return 5;   // EIO
    if (p->next == p->nbatches) { memset(out, 0, sizeof *out); return 0; }
    *out = p->batch[p->next++];
    out->release = rel_array;
    return 0;
}
static const char *st_error(struct ArrowArrayStream *s) { (void)s; return "disk on fire (the producer's message)"; }
static void st_release(struct ArrowArrayStream *s) { released_streams++; s->release = NULL; }
static int shrink_on_open;   // from this open (1, 2, ...) on, the producer's first batch only: a source that changed
static int open_stream(void *user, struct ArrowArrayStream *out) {
    producer *p = (producer *)user;
    p->next = 0;
    opened++;
    if (shrink_on_open && opened >= shrink_on_open) p->nbatches = 1;
    out->get_schema = st_schema; out->get_next = st_next; out->get_last_error = st_error;
    out->release = st_release; out->private_data = p;
    return 0;
}
static void counts_reset(void) { released_schemas = released_arrays = released_streams = opened = 0; }
// A reader of s (spec t, bs rows a batch) decoding ahead on `threads` threads within `ram` bytes (0: the defaults).
static wd_status reader_open(const wd_text_spec *t, struct ArrowArrayStream *s, int unlabeled, int bs, int threads,
        size_t ram, wd_arrow_reader **out) {
    wd_arrow_reader_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.batch_size = bs; d.unlabeled = unlabeled; d.threads = threads; d.ram_bytes = ram;
    return wd_arrow_reader_open(&d, s, out);
}

static int spit(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}
static int same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x); free(y);
    return same;
}
// CSV text converted with its header line given (as wd convert --columns):
// blocks of `block` rows, as a stream's (a header line in the file would be
// one of the first block's lines).
static wd_status convert_csv(const char *csv, const wd_csv_desc *cd0, const char *out, int block) {
    size_t n = 0;
    char *text = (char *)slurp(csv, &n), header[4096], body[300];
    if (!text) return WD_ERR_IO;
    size_t hl = strcspn(text, "\n");
    snprintf(header, sizeof header, "%.*s", (int)hl, text);
    snprintf(body, sizeof body, "%s.body", csv);
    FILE *f = fopen(body, "wb");
    int bad = !f || (hl + 1 < n && fwrite(text + hl + 1, 1, n - hl - 1, f) != n - hl - 1);
    if (f && fclose(f) != 0) bad = 1;
    free(text);
    if (bad) return WD_ERR_IO;
    csv = body;
    wd_csv_desc cd = *cd0;
    cd.header = header;
    wd_text_spec t;
    WD__TRY(wd_text_spec_csv_desc(&t, &cd));
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    const char *in[1] = {csv};
    d.spec = &t; d.inputs = in; d.ninputs = 1; d.output = out; d.block_samples = block;
    wd_status st = wd_convert(&d, NULL);
    wd_text_spec_free(&t);
    return st;
}
static wd_status convert_stream(
        producer *p, const wd_csv_desc *cd, const char *out, int block, int threads, int skip, wd_convert_report *rep) {
    struct ArrowArrayStream s;
    struct ArrowSchema schema;
    open_stream(p, &s);
    s.get_schema(&s, &schema);
    wd_text_spec t;
    wd_status st = wd_text_spec_arrow(&t, &schema, cd);
    schema.release(&schema);
    s.release(&s);
    if (st) return st;
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = &t;
    d.arrow = open_stream;
    d.arrow_user = p;
    d.output = out;
    d.block_samples = block;
    d.threads = threads;
    d.skip_bad_lines = skip;
    st = wd_convert(&d, rep);
    wd_text_spec_free(&t);
    return st;
}

// ---- the rows every test starts from: 5 rows in 2 batches, the second
// reading its columns from parent offset 1 (and column C1 from its own offset 2)
static const char *CSV5 =
    "y,I1,F,C1,C2,C3,C4,C5,X\n"
    "0,5,3,a,xx,blue,-7,short,\n"
    "1,,0,,,red,0,a long string over twelve bytes,\n"
    "0,-3,-2,,\"q,z\",,123456789012,,\n"
    "1,100,7,b,w,green,42,another long string value!,\n"
    "1,0,,a,xx,blue,-7,x,\n";
static void five_rows(producer *p, const char *yfmt) {
    memset(p, 0, sizeof *p);
    p->fail_at = -1;
    const char *names[9] = {"y", "I1", "F", "C1", "C2", "C3", "C4", "C5", "X"};
    const char *fmts[9] = {yfmt, "i", "g", "u", "U", "i", "l", "vu", "e"};
    for (int i = 0; i < 9; i++) sch(p, names[i], fmts[i]);
    struct ArrowSchema *dict = (struct ArrowSchema *)zalloc(sizeof *dict);
    dict->format = "u"; dict->name = ""; dict->release = rel_schema;
    p->schema.children[5]->dictionary = dict;
    static const char *dwords[3] = {"red", "blue", "green"};
    struct ArrowArray *dictionary = col_str("u", dwords, 3, 0);
    // batch 1: rows 0..2
    double y1[3] = {0, 1, 0}, i1[3] = {5, 0, -3}, f1[3] = {3, 0, -2}, d1[3] = {1, 0, 0},
           c41[3] = {-7, 0, 123456789012.0};
    int i1n[3] = {0, 1, 0}, d1n[3] = {0, 0, 1};
    const char *c1[3] = {"a", NULL, ""}, *c2[3] = {"xx", "", "q,z"},
               *c5[3] = {"short", "a long string over twelve bytes", NULL};
    struct ArrowArray *b1[9] = {col_num(yfmt, y1, NULL, 3, 0), col_num("i", i1, i1n, 3, 0),
            col_num("g", f1, NULL, 3, 0), col_str("u", c1, 3, 0), col_str("U", c2, 3, 0), col_num("i", d1, d1n, 3, 0),
            col_num("l", c41, NULL, 3, 0), col_str("vu", c5, 3, 0), col_num("g", f1, NULL, 3, 0)};
    b1[5]->dictionary = dictionary;
    b1[8]->n_buffers = 2;   // X: half floats, never read (not mapped)
    batch(p, 3, 0, b1, 9);
    // batch 2: rows 3..4 at parent offset 1 (row 0 of each column: garbage)
    double y2[3] = {7, 1, 1}, i2[3] = {9, 100, 0}, f2[3] = {1.5, 7, 0}, d2[3] = {0, 2, 1}, c42[3] = {1, 42, -7};
    int f2n[3] = {0, 0, 1};
    const char *c1b[3] = {"junk", "b", "a"}, *c2b[3] = {"junk", "w", "xx"},
               *c5b[3] = {"junk junk junk", "another long string value!", "x"};
    struct ArrowArray *b2[9] = {col_num(yfmt, y2, NULL, 3, 0), col_num("i", i2, NULL, 3, 0),
            col_num("g", f2, f2n, 3, 0), col_str("u", c1b, 3, 2), col_str("U", c2b, 3, 0), col_num("i", d2, NULL, 3, 0),
            col_num("l", c42, NULL, 3, 0), col_str("vu", c5b, 3, 0), col_num("g", f2, NULL, 3, 0)};
    b2[3]->offset = 2; b2[3]->length = 3;   // C1 starts 2 rows into its buffers
    b2[5]->dictionary = dictionary;
    b2[8]->n_buffers = 2;
    batch(p, 2, 1, b2, 9);
}
static wd_csv_desc five_desc(void) {
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.label = "y"; cd.dense = "I1,F"; cd.cat = "C1,C2,C3,C4,C5";
    return cd;
}

static void test_stream_equals_csv(void) {
    char csv[300], a[300], b[300], c[300];
    tmp(csv, sizeof csv, "five.csv");
    tmp(a, sizeof a, "five-text.wdr");
    tmp(b, sizeof b, "five-arrow.wdr");
    tmp(c, sizeof c, "five-arrow2.wdr");
    REQUIRE(spit(csv, CSV5) == 0);
    wd_csv_desc cd = five_desc();
    REQUIRE_OK(convert_csv(csv, &cd, a, 2));
    const char *yfmts[4] = {"c", "b", "g", "L"};   // the label as int8, boolean, double, uint64
    for (int f = 0; f < 4; f++) {
        producer p;
        five_rows(&p, yfmts[f]);
        counts_reset();
        wd_convert_report rep;
        CHECK_OK(convert_stream(&p, &cd, b, 2, 1 + f % 2, 0, &rep));   // tables sized from the data: two passes
        CHECK(opened == 3);   // the spec's look at the schema, then the two passes
        CHECK(rep.rows == 5 && rep.blocks == 3);
        CHECK(same_file(a, b));
        CHECK(released_streams == opened && released_schemas == opened &&
                released_arrays == 2 * 2);   // every object handed out, released
        pool_free();
    }
    // buckets given: one pass; the .wdr of the CSV converted with them
    cd.buckets = 1000;
    producer p;
    five_rows(&p, "c");
    counts_reset();
    CHECK_OK(convert_stream(&p, &cd, b, 3, 1, 0, NULL));
    CHECK(opened == 2);
    CHECK_OK(convert_csv(csv, &cd, c, 3));
    CHECK(same_file(b, c));
    pool_free();
}

// uint64 values of 2^63 and above: their decimal text, as the CSV of the same
// values (they were all read as "-1": one id for half of a hashed id range)
static void test_uint64(void) {
    char csv[300], a[300], b[300];
    tmp(csv, sizeof csv, "u64.csv");
    tmp(a, sizeof a, "u64-text.wdr");
    tmp(b, sizeof b, "u64-arrow.wdr");
    producer p;
    memset(&p, 0, sizeof p);
    p.fail_at = -1;
    sch(&p, "y", "c");
    sch(&p, "L", "L");
    double y[3] = {0, 1, 0}, zero[3] = {0, 0, 0};
    struct ArrowArray *cols[2] = {col_num("c", y, NULL, 3, 0), col_num("L", zero, NULL, 3, 0)};
    uint64_t *v = (uint64_t *)cols[1]->buffers[1];
    v[0] = 9223372036854775813ull; v[1] = UINT64_MAX; v[2] = 1;
    batch(&p, 3, 0, cols, 2);
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.label = "y"; cd.cat = "L";
    REQUIRE(spit(csv, "y,L\n0,9223372036854775813\n1,18446744073709551615\n0,1\n") == 0);
    REQUIRE_OK(convert_csv(csv, &cd, a, 4));
    CHECK_OK(convert_stream(&p, &cd, b, 4, 1, 0, NULL));
    CHECK(same_file(a, b));
    cd.buckets = 1000;   // hashed: the same ids as the CSV's
    REQUIRE_OK(convert_csv(csv, &cd, a, 4));
    CHECK_OK(convert_stream(&p, &cd, b, 4, 1, 0, NULL));
    CHECK(same_file(a, b));
    // a dense column: refused as the CSV refuses the text (too large for an int64), not read as -1
    cd.cat = NULL; cd.dense = "L";
    wd_status want = convert_csv(csv, &cd, a, 4);
    CHECK(want != WD_OK);
    CHECK(convert_stream(&p, &cd, b, 4, 1, 0, NULL) == want);
    pool_free();
}

// The five columns' spec with the ids of r's file (its buckets and
// vocabulary), and a model desc of its schema (r's: r stays open).
static int file_spec(wd_reader *r, wd_text_spec *t, wd_model_desc *md) {
    wd_csv_desc cd = five_desc();
    cd.header = "y,I1,F,C1,C2,C3,C4,C5,X";
    if (wd_text_spec_csv_desc(t, &cd) != WD_OK) return 0;
    memset(md, 0, sizeof *md);
    md->schema = wd_reader_schema(r);
    if (wd_text_spec_match(t, wd_reader_schema(r)) == WD_OK &&
            (!wd_reader_vocab(r) || wd_text_spec_vocab(t, wd_reader_vocab(r)) == WD_OK))
        return 1;
    wd_text_spec_free(t);
    return 0;
}
// Two models of md: one trained on `file` with no_shuffle, one on p's stream
// (spec t) through wd_arrow_source, bs samples a step, its reader decoding
// ahead on `threads` threads within `ram` bytes (0, 0: the defaults): equal bit for bit.
static void trains_like_file(const wd_model_desc *md, const char *file, producer *p, const wd_text_spec *t, int bs,
        int threads, size_t ram) {
    wd_model *m1 = NULL, *m2 = NULL;
    wd_arrow_reader *ar = NULL;
    struct ArrowArrayStream s;
    open_stream(p, &s);
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    const char *files[1] = {file};
    td.files = files; td.nfiles = 1; td.batch_size = bs; td.no_shuffle = 1; td.threads = 1;
    CHECK_OK(wd_model_create(md, &m1));
    CHECK_OK(wd_model_create(md, &m2));
    CHECK_OK(reader_open(t, &s, 0, bs, threads, ram, &ar));
    if (m1 && m2 && ar) {
        CHECK_OK(wd_train(m1, &td, NULL));
        memset(&td, 0, sizeof td);
        td.source = wd_arrow_source; td.source_user = ar; td.batch_size = bs; td.threads = 1;
        CHECK_OK(wd_train(m2, &td, NULL));
        CHECK(tl_params_equal(m1, m2));
    }
    wd_arrow_reader_close(ar);
    wd_model_destroy(m1); wd_model_destroy(m2);
}

// wd_arrow_reader: the batches are the converted file's samples; a model
// trained from the stream is the model trained from the file (no_shuffle).
static void test_reader_and_training(void) {
    char csv[300], w[300];
    tmp(csv, sizeof csv, "five.csv"); tmp(w, sizeof w, "five-text.wdr");
    REQUIRE(spit(csv, CSV5) == 0);
    wd_csv_desc cd = five_desc();
    REQUIRE_OK(convert_csv(csv, &cd, w, 4096));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(w, &r));
    const wd_batch *blk;
    REQUIRE_OK(wd_reader_block(r, 0, &blk));
    wd_text_spec t;
    wd_model_desc md;
    REQUIRE(file_spec(r, &t, &md));
    for (int bs = 1; bs <= 5; bs += 2) {
        producer p;
        five_rows(&p, "s");
        struct ArrowArrayStream s;
        open_stream(&p, &s);
        wd_arrow_reader *ar;
        REQUIRE_OK(reader_open(&t, &s, 0, bs, 0, 0, &ar));
        CHECK(s.release == NULL);   // moved into the reader
        int seen = 0;
        const wd_batch *b;
        while (wd_arrow_reader_next(ar, &b) == WD_OK && b) {
            for (int i = 0; i < b->n; i++, seen++) {
                CHECK(b->label[i] == blk->label[seen]);
                CHECK(!memcmp(b->dense + 2 * i, blk->dense + 2 * seen, 8));
                for (int k = 0; k < 5; k++) CHECK(b->ids[k][i] == blk->ids[k][seen]);
            }
        }
        CHECK(seen == 5 && wd_arrow_reader_rows(ar) == 5);
        wd_arrow_reader_close(ar);
        pool_free();
    }
    // training: the stream as a source, the file with no_shuffle, batch 2
    producer p;
    five_rows(&p, "i");
    trains_like_file(&md, w, &p, &t, 2, 0, 0);
    pool_free();
    struct ArrowArrayStream s;
    wd_arrow_reader *ar;
    // unlabeled: a stream without the label column reads with labels 0
    producer q;
    five_rows(&q, "i");
    q.schema.children[0]->name = "not_y";
    open_stream(&q, &s);
    CHECK(reader_open(&t, &s, 0, 8, 0, 0, &ar) == WD_ERR_INVALID_ARG &&
            strstr(wd_last_error(), "no column 'y' (the label"));
    open_stream(&q, &s);
    REQUIRE_OK(reader_open(&t, &s, 1, 8, 0, 0, &ar));
    const wd_batch *b;
    CHECK_OK(wd_arrow_reader_next(ar, &b));
    CHECK(b && b->n == 5 && b->label[1] == 0.0f && b->ids[4][1] == blk->ids[4][1]);
    wd_arrow_reader_close(ar);
    pool_free();
    // unlabeled with the label column present: not read (a label of 7 was refused though nothing needs it)
    five_rows(&q, "i");
    ((int32_t *)q.batch[0].children[0]->buffers[1])[1] = 7;
    open_stream(&q, &s);
    REQUIRE_OK(reader_open(&t, &s, 0, 8, 0, 0, &ar));
    CHECK(wd_arrow_reader_next(ar, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "label '7' is not 0 or 1"));
    wd_arrow_reader_close(ar);
    open_stream(&q, &s);
    REQUIRE_OK(reader_open(&t, &s, 1, 8, 0, 0, &ar));
    CHECK_OK(wd_arrow_reader_next(ar, &b));
    CHECK(b && b->n == 5 && b->label[1] == 0.0f && b->label[3] == 0.0f && b->ids[4][1] == blk->ids[4][1]);
    wd_arrow_reader_close(ar);
    pool_free();
    wd_text_spec_free(&t);
    wd_reader_close(r);
}

// A model of md trained from p's stream (spec t), 7 samples a step, its
// reader on `threads` threads within `ram` bytes; *rows: the rows the reader gave.
static wd_status train_stream(producer *p, const wd_text_spec *t, const wd_model_desc *md, int threads, size_t ram,
        wd_train_report *rep, int64_t *rows) {
    struct ArrowArrayStream s;
    wd_arrow_reader *ar;
    wd_model *m = NULL;
    open_stream(p, &s);
    wd_status st = reader_open(t, &s, 0, 7, threads, ram, &ar);
    if (!st) st = wd_model_create(md, &m);
    if (!st) {
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.source = wd_arrow_source; td.source_user = ar; td.batch_size = 7; td.threads = 1;
        st = wd_train(m, &td, rep);
        if (rows) *rows = wd_arrow_reader_rows(ar);
    }
    wd_arrow_reader_close(ar);
    wd_model_destroy(m);
    return st;
}
// five_rows' two batches again and again: 60 batches, 150 rows.
static void many_rows(producer *p) {
    five_rows(p, "c");
    for (int k = 2; k < 60; k++) p->batch[p->nbatches++] = p->batch[k % 2];
}
// many_rows' stream converted to the file w (tmp's `name`), open as *r; its
// spec *t and a small model desc *md of its schema (r stays open).
static int many_file(char *w, size_t n, const char *name, producer *p, wd_reader **r, wd_text_spec *t,
        wd_model_desc *md) {
    tmp(w, n, name);
    many_rows(p);
    wd_csv_desc cd = five_desc();
    if (convert_stream(p, &cd, w, 4096, 1, 0, NULL) != WD_OK || wd_reader_open(w, r) != WD_OK) return 0;
    if (!file_spec(*r, t, md)) { wd_reader_close(*r); return 0; }
    md->hidden[0] = 8; md->embed_dim = 4;   // small: the input path is what is tested
    return 1;
}
// Training from a stream decoded ahead on 1 and 3 threads (within a budget
// of 2 batches, and the default): the model of the converted file, bit for
// bit; a producer's error, a null label and a schema change are refused at
// their place (the steps before them trained, naming the batch), with every
// batch the producer gave released; a budget below 2 batches is
// WD_ERR_LIMIT naming ram_bytes.
static void test_read_ahead(void) {
    char w[300];
    producer p;
    wd_reader *r;
    wd_text_spec t;
    wd_model_desc md;
    REQUIRE(many_file(w, sizeof w, "many.wdr", &p, &r, &t, &md));
    size_t two = 0;   // what 2 batches of 7 take: the least budget
    for (int threads = 1; threads <= 3; threads += 2) {
        trains_like_file(&md, w, &p, &t, 7, threads, 0);
        CHECK(train_stream(&p, &t, &md, threads, 1000, NULL, NULL) == WD_ERR_LIMIT &&
                strstr(wd_last_error(), "ram_bytes") &&
                sscanf(strstr(wd_last_error(), "below the ") + 10, "%zu", &two) == 1 && two > 1000);
        trains_like_file(&md, w, &p, &t, 7, threads, two);
    }
    // refusals at batch 41 of the producer's: rows 101.., the source's batch 14 (from 0) of 7 rows
    struct ArrowArray *bad[9];
    for (int i = 0; i < 9; i++) bad[i] = p.batch[0].children[i];
    double y[3] = {0, 1, 0};
    int isnull[3] = {0, 1, 0};
    bad[0] = col_num("c", y, isnull, 3, 0);
    struct ArrowArray null_label = *batch(&p, 3, 0, bad, 9);
    p.nbatches--;
    struct ArrowArray narrow = p.batch[0];
    narrow.n_children = 8;
    for (int c = 0; c < 3; c++) {
        counts_reset();
        if (c == 0) p.fail_at = 40;
        if (c == 1) p.batch[40] = null_label;
        if (c == 2) p.batch[40] = narrow;
        const char *want = c == 0 ? "the producer failed reading batch 41 (error 5): disk on fire"
                         : c == 1 ? "row 102 (batch 41, its row 2): column 'y': a null label"
                                  : "arrow: batch 41: 8 columns";
        wd_train_report rep;
        int64_t rows = 0;
        wd_status st = train_stream(&p, &t, &md, 3, 0, &rep, &rows);
        CHECK(st == (c == 0 ? WD_ERR_IO : c == 1 ? WD_ERR_PARSE : WD_ERR_CORRUPT));
        CHECK(strstr(wd_last_error(), "training source: batch 14 (") && strstr(wd_last_error(), want));
        CHECK(rep.steps == 14 && rows == 98);
        CHECK(released_streams == 1 && released_arrays == p.next);
        p.fail_at = -1;
        p.batch[40] = p.batch[0];
    }
    wd_text_spec_free(&t);
    wd_reader_close(r);
    pool_free();
}

// The threads of this process (Linux: /proc/self/status; -1 elsewhere),
// once two reads 10 ms apart agree: a joined thread may still be counted
// for a moment (pthread_join returns before the kernel's count drops).
static int proc_threads(void) {
    int n = -1, last = -2;
    for (int tries = 0; tries < 200 && n != last; tries++) {
        if (tries) { struct timespec ts = {0, 10000000}; nanosleep(&ts, NULL); }
        last = n;
        n = -1;
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "Threads: %d", &n) == 1) break;
        if (f) fclose(f);
    }
    return n;
}
// A reader's budgets are its desc's: `threads` read-ahead threads (0: 1)
// run from wd_arrow_reader_open to close, and give the same batches, bit
// for bit, whatever their number; ram_bytes admits exactly 2 batches and no
// less (WD_ERR_LIMIT below, the stream released, no thread started; so
// are threads outside 0..256, a NULL desc or out); as
// wd_train's source the reader keeps them (the train desc's loader budgets,
// 1000 bytes here, budget its files).
static void test_reader_budgets(void) {
    char w[300];
    producer p;
    wd_reader *r;
    wd_text_spec t;
    wd_model_desc md;
    REQUIRE(many_file(w, sizeof w, "budgets.wdr", &p, &r, &t, &md));
    struct ArrowArrayStream s;
    wd_arrow_reader *ar = NULL;
    open_stream(&p, &s);
    CHECK(reader_open(&t, &s, 0, 7, 0, 1000, &ar) == WD_ERR_LIMIT && !ar && s.release == NULL);
    size_t two = 0;   // what 2 batches of 7 take
    CHECK(strstr(wd_last_error(), "RAM budget 1000 bytes (ram_bytes)") &&
            sscanf(strstr(wd_last_error(), "below the ") + 10, "%zu", &two) == 1 && two > 1000);
    int before = proc_threads();
    counts_reset();
    open_stream(&p, &s);
    CHECK(reader_open(&t, &s, 0, 7, 3, two - 1, &ar) == WD_ERR_LIMIT && released_streams == 1);
    CHECK(proc_threads() == before);
    for (int bad = -1; bad <= 257; bad += 258) {
        open_stream(&p, &s);
        CHECK(reader_open(&t, &s, 0, 7, bad, 0, &ar) == WD_ERR_INVALID_ARG &&
                strstr(wd_last_error(), "threads") && strstr(wd_last_error(), "is outside 0..256"));
    }
    open_stream(&p, &s);
    CHECK(wd_arrow_reader_open(NULL, &s, &ar) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "the desc is NULL"));
    open_stream(&p, &s);
    CHECK(reader_open(&t, &s, 0, 7, 0, 0, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "out is NULL"));
    CHECK(released_streams == 5 && proc_threads() == before);   // every refused stream released
    float label[150], weight[150], dense[300];
    uint32_t ids[5][150];
    static const int tn[3] = {1, 3, 0};   // 1 first: the reference batches
    for (int i = 0; i < 3; i++)
        for (int tight = 0; tight < 2; tight++) {
            int threads = tn[i];
            counts_reset();
            open_stream(&p, &s);
            REQUIRE_OK(reader_open(&t, &s, 0, 7, threads, tight ? two : 0, &ar));
            if (before >= 0) CHECK(proc_threads() - before == (threads ? threads : 1));
            int seen = 0, same = 1;
            const wd_batch *b;
            while (wd_arrow_reader_next(ar, &b) == WD_OK && b && seen + b->n <= 150) {
                size_t n = (size_t)b->n;
                if (threads == 1 && !tight) {   // the reference
                    memcpy(label + seen, b->label, 4 * n); memcpy(weight + seen, b->weight, 4 * n);
                    memcpy(dense + 2 * seen, b->dense, 8 * n);
                    for (int k = 0; k < 5; k++) memcpy(ids[k] + seen, b->ids[k], 4 * n);
                }
                same = same && !memcmp(label + seen, b->label, 4 * n) && !memcmp(weight + seen, b->weight, 4 * n)
                    && !memcmp(dense + 2 * seen, b->dense, 8 * n);
                for (int k = 0; k < 5; k++) same = same && !memcmp(ids[k] + seen, b->ids[k], 4 * n);
                seen += b->n;
            }
            CHECK(same && seen == 150 && wd_arrow_reader_rows(ar) == 150);
            wd_arrow_reader_close(ar);
            CHECK(proc_threads() == before && released_streams == 1 && released_arrays == 60);
        }
    // the source keeps its budgets: the train desc's loader_ram (1000 bytes) and loader_threads are the files'
    wd_model *m1 = NULL, *m2 = NULL;
    CHECK_OK(wd_model_create(&md, &m1));
    CHECK_OK(wd_model_create(&md, &m2));
    open_stream(&p, &s);
    REQUIRE_OK(reader_open(&t, &s, 0, 7, 2, two, &ar));
    if (m1 && m2) {
        const char *files[1] = {w};
        wd_train_desc td;
        memset(&td, 0, sizeof td);
        td.files = files; td.nfiles = 1; td.batch_size = 7; td.no_shuffle = 1; td.threads = 1;
        CHECK_OK(wd_train(m1, &td, NULL));
        memset(&td, 0, sizeof td);
        td.source = wd_arrow_source; td.source_user = ar; td.batch_size = 7; td.threads = 1;
        td.loader_threads = 5; td.loader_ram = 1000;
        CHECK_OK(wd_train(m2, &td, NULL));
        CHECK(tl_params_equal(m1, m2));
    }
    wd_arrow_reader_close(ar);
    wd_model_destroy(m1); wd_model_destroy(m2);
    wd_text_spec_free(&t);
    wd_reader_close(r);
    pool_free();
}

// Each refusal: its status, its message, no output, everything released.
static void refused_with(producer *p, const wd_csv_desc *cd, wd_status want, const char *msg, int line) {
    char out[300];
    tmp(out, sizeof out, "refused.wdr");
    unlink(out);
    counts_reset();
    wd_status st = convert_stream(p, cd, out, 2, 2, 0, NULL);
    struct stat sb;
    if (st != want || !strstr(wd_last_error(), msg) || stat(out, &sb) == 0 || released_streams != opened ||
            released_schemas != opened) {
        tl_fails++;
        printf("  check failed: line %d: %s (want %s, '%s'): %s; output %s; released %d/%d streams\n", line,
                wd_status_string(st), wd_status_string(want), msg, wd_last_error(),
                stat(out, &sb) == 0 ? "written" : "absent", released_streams, opened);
    }
    pool_free();
}
static void refused(producer *p, wd_status want, const char *msg, int line) {
    wd_csv_desc cd = five_desc();
    cd.buckets = 100;
    refused_with(p, &cd, want, msg, line);
}
static void test_refusals(void) {
    producer p;
    wd_csv_desc cd = five_desc();
    struct ArrowSchema *c;
    // unsupported types, named with their column and format
    five_rows(&p, "c");
    p.schema.children[6]->format = "+l";
    struct ArrowSchema *item = (struct ArrowSchema *)zalloc(sizeof *item);
    item->format = "g"; item->name = "item";   // a list of doubles
    p.schema.children[6]->children = &item; p.schema.children[6]->n_children = 1;
    wd_text_spec t;
    CHECK(wd_text_spec_arrow(&t, &p.schema, &cd) == WD_ERR_UNSUPPORTED &&
            strstr(wd_last_error(), "column 'C4' has format '+l<g>'"));
    p.schema.children[6]->format = "+m";   // a map
    CHECK(wd_text_spec_arrow(&t, &p.schema, &cd) == WD_ERR_UNSUPPORTED &&
            strstr(wd_last_error(), "column 'C4' has format '+m'"));
    pool_free();
    five_rows(&p, "c");
    p.schema.children[1]->format = "u";   // a string column as dense
    CHECK(wd_text_spec_arrow(&t, &p.schema, &cd) == WD_ERR_UNSUPPORTED &&
            strstr(wd_last_error(), "column 'I1' has format 'u', not supported as a dense column"));
    pool_free();
    five_rows(&p, "c");
    p.schema.children[3]->format = "g";   // a float column as categorical
    CHECK(wd_text_spec_arrow(&t, &p.schema, &cd) == WD_ERR_UNSUPPORTED &&
            strstr(wd_last_error(), "column 'C1' has format 'g'"));
    pool_free();
    five_rows(&p, "c");
    p.schema.children[5]->dictionary->format = "g";   // a dictionary of floats
    CHECK(wd_text_spec_arrow(&t, &p.schema, &cd) == WD_ERR_UNSUPPORTED &&
            strstr(wd_last_error(), "column 'C3': a dictionary of 'g'"));
    pool_free();
    five_rows(&p, "tsn");   // a timestamp label
    CHECK(wd_text_spec_arrow(&t, &p.schema, &cd) == WD_ERR_UNSUPPORTED &&
            strstr(wd_last_error(), "column 'y' has format 'tsn'"));
    pool_free();
    // offsets out of range
    five_rows(&p, "c");
    ((int32_t *)p.batch[1].children[3]->buffers[1])[4] = 0;   // C1's offsets decrease
    refused(&p, WD_ERR_CORRUPT,
            "batch 2, column 'C1' (u): offset 0 at index 1 of the batch's is below the one before "
            "(offsets out of range)",
            __LINE__);
    five_rows(&p, "c");
    ((int64_t *)p.batch[0].children[4]->buffers[1])[0] = -4;   // C2's first offset negative
    refused(&p, WD_ERR_CORRUPT, "batch 1, column 'C2' (U): offset -4 at index 0 of the batch's is negative", __LINE__);
    five_rows(&p, "c");
    {
        int32_t big = 1000;
        memcpy((uint8_t *)p.batch[0].children[7]->buffers[1] + 16 + 12, &big, 4);
    }   // a view past its data buffer
    refused(&p, WD_ERR_CORRUPT,
            "batch 1, column 'C5' (vu): row 2: a view of 31 bytes at 1000 in data buffer 0, outside the data",
            __LINE__);
    five_rows(&p, "c");
    p.batch[1].children[1]->length = 2;   // I1 shorter than the batch reads (offset 1 + 2 rows)
    refused(&p, WD_ERR_CORRUPT, "batch 2, column 'I1' (i): length 2, the batch reads rows 1..3 of it", __LINE__);
    five_rows(&p, "c");
    p.batch[0].children[0]->offset = -1;
    refused(&p, WD_ERR_CORRUPT, "column 'y' (c): length 3, offset -1: out of range", __LINE__);
    five_rows(&p, "c");
    ((int32_t *)p.batch[0].children[5]->buffers[1])[1] = 3;   // a dictionary index past its 3 values
    refused(&p, WD_ERR_CORRUPT, "column 'C3' (i): row 2: index 3 outside the dictionary's 3 values", __LINE__);
    five_rows(&p, "c");
    p.batch[0].children[1]->buffers[1] = NULL;
    refused(&p, WD_ERR_CORRUPT, "column 'I1' (i): the values buffer is missing", __LINE__);
    five_rows(&p, "c");
    p.batch[0].children[1]->buffers[0] = NULL;   // nulls counted, no validity buffer
    refused(&p, WD_ERR_CORRUPT, "column 'I1' (i): 1 nulls and no validity buffer", __LINE__);
    // a schema that changes mid-stream
    five_rows(&p, "c");
    p.batch[1].n_children = 8;
    refused(&p, WD_ERR_CORRUPT,
            "batch 2: 8 columns, length 2, offset 1; the stream's schema has 9 columns "
            "(a schema that changes mid-stream",
            __LINE__);
    five_rows(&p, "c");
    p.batch[1].children[3] = p.batch[1].children[6];   // C1: an int64 array where the schema says utf8
    refused(&p, WD_ERR_CORRUPT, "batch 2, column 'C1' (u): 2 buffers, its format has 3 (the schema changed mid-stream",
            __LINE__);
    five_rows(&p, "c");
    p.batch[1].children[5]->dictionary = NULL;
    refused(&p, WD_ERR_CORRUPT, "batch 2, column 'C3' (i): no dictionary", __LINE__);
    // the producer's error, with its message
    five_rows(&p, "c");
    p.fail_at = 1;
    refused(&p, WD_ERR_IO, "the producer failed reading batch 2 (error 5): disk on fire (the producer's message)",
            __LINE__);
    // a null label; a label other than 0/1; a value the CSV rules refuse
    five_rows(&p, "c");
    {
        int64_t nn;
        const char *v[3] = {"", NULL, ""};
        p.batch[0].children[0]->buffers[0] = bits(v, 3, 0, &nn);
        p.batch[0].children[0]->null_count = nn;
    }
    refused(&p, WD_ERR_PARSE, "arrow stream: row 2 (batch 1, its row 2): column 'y': a null label", __LINE__);
    five_rows(&p, "c");
    p.batch[1].offset = 0;   // now row 4 is the garbage row: label 7
    refused(&p, WD_ERR_PARSE, "row 4 (batch 2, its row 1): label '7' is not 0 or 1", __LINE__);
    five_rows(&p, "c");
    ((double *)p.batch[1].children[2]->buffers[1])[1] = 7.5;   // F is a count: 7.5 is not an integer
    refused(&p, WD_ERR_PARSE, "row 4 (batch 2, its row 1): column 3: '7.5' is not an integer", __LINE__);
    // the same rows skipped with skip_bad_lines: counted, the rest converted
    five_rows(&p, "c");
    {
        int64_t nn;
        const char *v[3] = {"", NULL, ""};
        p.batch[0].children[0]->buffers[0] = bits(v, 3, 0, &nn);
        p.batch[0].children[0]->null_count = nn;
    }
    char out[300];
    tmp(out, sizeof out, "skip.wdr");
    wd_convert_report rep;
    cd.buckets = 100;
    CHECK_OK(convert_stream(&p, &cd, out, 2, 1, 1, &rep));
    CHECK(rep.rows == 4 && rep.bad_rows == 1 && rep.nbad_shown == 1 &&
            strstr(rep.bad_where[0], "row 2: column 'y': a null label"));
    pool_free();
    // two columns of one name, one of them mapped
    five_rows(&p, "c");
    c = p.schema.children[8];
    c->name = "C1";
    CHECK(wd_text_spec_arrow(&t, &p.schema, &cd) == WD_ERR_INVALID_ARG &&
            strstr(wd_last_error(), "both named 'C1'"));   // the CSV header's rule, which the stream's names go through
    pool_free();
    // a source that gives other rows on the second pass than on the first: refused (was written from tables
    // sized on rows it no longer gave)
    five_rows(&p, "c");
    cd = five_desc();
    shrink_on_open = 3;   // the spec's look at the schema, the first pass, then the second
    refused_with(&p, &cd, WD_ERR_IO, "the stream gave 3 rows on the second pass, 5 on the first", __LINE__);
    shrink_on_open = 0;
    // the opener's failure
    wd_text_spec_criteo(&t, 10);
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    const char *in[1] = {"x"};
    d.spec = &t; d.arrow = open_stream; d.output = out; d.inputs = in; d.ninputs = 1;
    CHECK(wd_convert(&d, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "arrow and inputs: choose one"));
}

// A stop request acted on after the block it came in, not at the end of the batch: a one-batch table
// (pyarrow's combine_chunks) was converted whole before its first progress call
static int64_t stop_rows = -1;
static int stop_calls;
static int stop_now(void *user, int64_t done, int64_t total, int64_t rows) {
    (void)user; (void)done; (void)total;
    if (!stop_calls++) stop_rows = rows;
    return 1;
}
static void test_progress_stop(void) {
    char out[300];
    tmp(out, sizeof out, "stopped.wdr");
    unlink(out);
    producer p;
    memset(&p, 0, sizeof p);
    p.fail_at = -1;
    sch(&p, "y", "c");
    sch(&p, "C", "l");
    double y[256], v[256];
    for (int i = 0; i < 256; i++) { y[i] = i & 1; v[i] = i % 50; }
    struct ArrowArray *cols[2] = {col_num("c", y, NULL, 256, 0), col_num("l", v, NULL, 256, 0)};
    batch(&p, 256, 0, cols, 2);
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.label = "y"; cd.cat = "C"; cd.buckets = 100;
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_arrow(&t, &p.schema, &cd));
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = &t; d.arrow = open_stream; d.arrow_user = &p; d.output = out; d.block_samples = 2; d.threads = 1;
    d.progress = stop_now;
    CHECK(wd_convert(&d, NULL) == WD_ERR_ABORTED);
    struct stat sb;
    CHECK(stop_calls == 1 && stop_rows == 0 && stat(out, &sb) != 0);   // was: 248 rows written when first asked
    wd_text_spec_free(&t);
    pool_free();
}

// ---- list columns: multi-hot slots
static struct ArrowArray *col_list(
        const char *fmt, const int64_t *offs, const int *isnull, int n, struct ArrowArray *values) {
    const char *vv[64];
    for (int i = 0; i < n; i++) vv[i] = isnull && isnull[i] ? NULL : "";
    int64_t nulls;
    uint8_t *valid = bits(vv, n, 0, &nulls);
    struct ArrowArray *a = mk(n, 0, nulls, 2);
    void *o = zalloc(8 * (size_t)(n + 1));
    for (int i = 0; i <= n; i++) {
        if (fmt[1] == 'l') ((int32_t *)o)[i] = (int32_t)offs[i];
        else ((int64_t *)o)[i] = offs[i];
    }
    a->buffers[0] = valid; a->buffers[1] = o;
    a->n_children = 1;
    a->children = (struct ArrowArray **)zalloc(sizeof(void *));
    a->children[0] = values;
    return a;
}
// Rows: y, T list<utf8>, N large_list<int64>, C utf8 (one-hot beside them).
static void list_rows(producer *p) {
    memset(p, 0, sizeof *p);
    p->fail_at = -1;
    sch(p, "y", "c");
    struct ArrowSchema *t = sch(p, "T", "+l"), *nn = sch(p, "N", "+L");
    sch(p, "C", "u");
    struct ArrowSchema **ti = (struct ArrowSchema **)zalloc(sizeof(void *)),
                       **ni = (struct ArrowSchema **)zalloc(sizeof(void *));
    ti[0] = (struct ArrowSchema *)zalloc(sizeof **ti);
    ti[0]->format = "u";
    ti[0]->name = "item";
    ti[0]->release = rel_schema;
    ni[0] = (struct ArrowSchema *)zalloc(sizeof **ni);
    ni[0]->format = "l";
    ni[0]->name = "item";
    ni[0]->release = rel_schema;
    t->children = ti; t->n_children = 1; nn->children = ni; nn->n_children = 1;
    // 4 rows: T = [a, b], [], null, [c, null, a]; N = [7], [1, 2], [], null
    double y[4] = {1, 0, 0, 1}, nv[3] = {7, 1, 2};
    const char *tv[6] = {"a", "b", "c", NULL, "a", "x"}, *cv[4] = {"p", "q", "p", NULL};
    int64_t to[5] = {0, 2, 2, 2, 5}, no[5] = {0, 1, 3, 3, 3};
    int tn[4] = {0, 0, 1, 0}, nnul[4] = {0, 0, 0, 1};
    struct ArrowArray *cols[4] = {col_num("c", y, NULL, 4, 0), col_list("+l", to, tn, 4, col_str("u", tv, 5, 0)),
                                  col_list("+L", no, nnul, 4, col_num("l", nv, NULL, 3, 0)), col_str("u", cv, 4, 0)};
    batch(p, 4, 0, cols, 4);
}
static void test_lists(void) {
    char out[300], w2[300];
    tmp(out, sizeof out, "lists.wdr"); tmp(w2, sizeof w2, "lists-sized.wdr");
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.label = "y"; cd.cat = "T,N,C"; cd.buckets = 1000;
    producer p;
    list_rows(&p);
    CHECK_OK(convert_stream(&p, &cd, out, 3, 1, 0, NULL));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(out, &r));
    const wd_schema *sc = wd_reader_schema(r);
    CHECK(sc->nslots == 3 && sc->slot[0].kind == WD_MULTI_HOT && sc->slot[1].kind == WD_MULTI_HOT &&
            sc->slot[2].kind == WD_ONE_HOT);
    // the ids: each value hashed as a CSV field would be (slot 0's strings, slot 1's decimal integers)
    static const char *want_t[4][3] = {{"a", "b"}, {NULL}, {NULL}, {"c", "a"}};
    static const char *want_n[4][3] = {{"7"}, {"1", "2"}, {NULL}, {NULL}};
    int64_t samples = 0;
    for (int64_t blk = 0; blk < wd_reader_nblocks(r); blk++) {
        const wd_batch *b;
        REQUIRE_OK(wd_reader_block(r, blk, &b));
        for (int i = 0; i < b->n; i++, samples++) {
            for (int k = 0; k < 2; k++) {
                int cnt;
                const uint32_t *ids = wd_batch_sample_ids(b, k, i, &cnt);
                const char *const *want = k == 0 ? want_t[samples] : want_n[samples];
                int nw = 0;
                while (nw < 3 && want[nw]) nw++;
                CHECK(cnt == nw);
                for (int q = 0; q < cnt && q < nw; q++)
                    CHECK(ids[q] == wd_hash_bucket(want[q], strlen(want[q]), k, 1000));
            }
        }
    }
    CHECK(samples == 4);
    // the reader's batches and a model trained from the stream: the file's, bit for bit
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_arrow(&t, &p.schema, &cd));
    CHECK(t.schema.slot[0].kind == WD_MULTI_HOT);
    wd_batch one;
    REQUIRE_OK(wd_batch_init(&one, &t.schema, 1, 4));
    CHECK(wd_parse_line(&t, "1,,,p", 5, &one) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "slot T is multi-hot"));
    wd_batch_free(&one);
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.schema = sc; md.hidden[0] = 8; md.embed_dim = 4;
    trains_like_file(&md, out, &p, &t, 2, 0, 0);
    wd_reader_close(r);
    struct ArrowArrayStream s;
    wd_arrow_reader *ar;
    // sized from the data (two passes: the lists' values counted), then refusals
    cd.buckets = 0;
    CHECK_OK(convert_stream(&p, &cd, w2, 4096, 2, 0, NULL));
    pool_free();
    list_rows(&p);
    ((int32_t *)p.batch[0].children[1]->buffers[1])[4] = 6;   // past T's 5 values
    refused_with(&p, &cd, WD_ERR_CORRUPT, "column 'T' (+l<u>): offset 6 past the 5 values of the list", __LINE__);
    list_rows(&p);
    ((int64_t *)p.batch[0].children[2]->buffers[1])[2] = 0;   // N's offsets decrease
    refused_with(&p, &cd, WD_ERR_CORRUPT,
            "column 'N' (+L<l>): offset 0 at index 2 of the batch's is below the one before", __LINE__);
    list_rows(&p);
    ((int32_t *)p.batch[0].children[1]->children[0]->buffers[1])[3] = 1;   // T's strings' offsets decrease
    refused_with(&p, &cd, WD_ERR_CORRUPT, "column 'T' (+l<u>): offset 1 at index 3", __LINE__);
    list_rows(&p);
    // a list column read as text by a derived slot or as the id column: refused (the slot was "" on every row)
    wd_csv_desc cd2 = cd;
    cd2.derive = "t1=T[0:1]";
    refused_with(&p, &cd2, WD_ERR_UNSUPPORTED,
            "column 'T' has format '+l<u>': a list column fills a multi-hot slot with strings, binary or integers "
            "(derived slots and the id column take no lists)", __LINE__);
    list_rows(&p);
    cd2 = cd;
    cd2.id = "N";
    refused_with(&p, &cd2, WD_ERR_UNSUPPORTED, "column 'N' has format '+L<l>'", __LINE__);
    list_rows(&p);
    cd.buckets = 100;
    memset(&t, 0, sizeof t);   // a one-hot spec's slot meets a list column
    const char *hdr = "y,T,N,C";
    cd.header = hdr;
    REQUIRE_OK(wd_text_spec_csv_desc(&t, &cd));
    open_stream(&p, &s);
    CHECK(reader_open(&t, &s, 0, 4, 0, 0, &ar) == WD_ERR_UNSUPPORTED &&
            strstr(wd_last_error(), "column 'T' has format '+l<u>'") &&
            strstr(wd_last_error(), "this spec's slot is one-hot"));
    pool_free();
}

// ---- random streams: valid ones against their CSV text, then corrupted
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static void test_random_streams(void) {
    char csv[300], a[300], b[300];
    tmp(csv, sizeof csv, "rand.csv"); tmp(a, sizeof a, "rand-text.wdr"); tmp(b, sizeof b, "rand-arrow.wdr");
    static const char *num_fmts[] = {"c", "C", "s", "S", "i", "I", "l", "L", "f", "g", "b"};
    static const char *cat_fmts[] = {"u", "U", "z", "Z", "vu", "vz", "i", "l", "C", "dict"};
    int valid_ok = 0, corrupt_refused = 0;
    for (int iter = 0; iter < 60; iter++) {
        producer p;
        memset(&p, 0, sizeof p);
        p.fail_at = -1;
        int nd = (int)(rnd() % 3), nc = 1 + (int)(rnd() % 4), rows = 1 + (int)(rnd() % 40);
        const char *fmt[8];
        char names[8][8];
        fmt[0] = num_fmts[rnd() % 11];
        if (fmt[0][0] == 'f' || fmt[0][0] == 'g') fmt[0] = "l";
        for (int j = 0; j < nd; j++) fmt[1 + j] = num_fmts[rnd() % 11];
        for (int k = 0; k < nc; k++) fmt[1 + nd + k] = cat_fmts[rnd() % 10];
        int ncol = 1 + nd + nc;
        // the values: text per cell (NULL: null) and numbers
        static char cell[8][64][40];
        const char *txt[8][64];
        double num[8][64];
        int isnull[8][64];
        static const char *words[] = {"a", "bb", "", "hello world!", "longer than twelve", "x,y", "q\"uote", "0"};
        for (int c = 0; c < ncol; c++)
            for (int r = 0; r < rows; r++) {
                int null = c > 0 && rnd() % 5 == 0;
                isnull[c][r] = null;
                const char *f = fmt[c];
                if (c == 0) { num[c][r] = (double)(rnd() % 2); snprintf(cell[c][r], 40, "%d", (int)num[c][r]);
                } else if (c <= nd ||
                        (f[0] != 'u' && f[0] != 'U' && f[0] != 'z' && f[0] != 'Z' && f[0] != 'v' && f[0] != 'd')) {
                    double x = (double)(rnd() % 200) - (strchr("CSIL", f[0]) ? 0 : 100);
                    if (f[0] == 'b') x = (double)(rnd() % 2);
                    if ((f[0] == 'f' || f[0] == 'g') && rnd() % 2) x = x * 0.25;   // not counts: dense_raw below
                    num[c][r] = x;
                    snprintf(cell[c][r], 40, "%.17g", x);
                } else snprintf(cell[c][r], 40, "%s", words[rnd() % 8]);
                txt[c][r] = null ? NULL : cell[c][r];
            }
        int raw = 0;
        for (int j = 0; j < nd; j++) raw |= fmt[1 + j][0] == 'f' || fmt[1 + j][0] == 'g';
        // the CSV text (quoted where needed; a null is an empty field)
        char *text = (char *)zalloc(64 * 64 * 8 + 4096);
        size_t n = 0;
        for (int c = 0; c < ncol; c++) {
            snprintf(names[c], 8, "c%d", c);
            n += (size_t)sprintf(text + n, "%s%s", c ? "," : "", names[c]);
        }
        text[n++] = '\n';
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < ncol; c++) {
                const char *v = txt[c][r];
                if (c) text[n++] = ',';
                if (!v) continue;
                int q = strchr(v, ',') || strchr(v, '"');
                if (q) text[n++] = '"';
                for (const char *s = v; *s; s++) { if (*s == '"') text[n++] = '"'; text[n++] = *s; }
                if (q) text[n++] = '"';
            }
            text[n++] = '\n';
        }
        text[n] = 0;
        REQUIRE(spit(csv, text) == 0);
        // the stream: random batch cuts, random padding (offsets)
        for (int c = 0; c < ncol; c++) {
            struct ArrowSchema *s = sch(&p, names[c], fmt[c][0] == 'd' ? "s" : fmt[c]);
            if (fmt[c][0] == 'd') {
                s->dictionary = (struct ArrowSchema *)zalloc(sizeof *s->dictionary);
                s->dictionary->format = "U"; s->dictionary->name = ""; s->dictionary->release = rel_schema;
            }
        }
        for (int r0 = 0; r0 < rows;) {
            int len = 1 + (int)(rnd() % 16);
            if (len > rows - r0) len = rows - r0;
            int poff = (int)(rnd() % 3);
            struct ArrowArray *cols[8];
            for (int c = 0; c < ncol; c++) {
                int pad = (int)(rnd() % 3);
                const char *f = fmt[c];
                const char *v[64];
                double x[64];
                int nul[64];
                for (int i = 0; i < poff + len; i++) {   // poff rows before the batch's (any value)
                    int r = i < poff ? 0 : r0 + i - poff;
                    v[i] = txt[c][r]; x[i] = num[c][r]; nul[i] = isnull[c][r];
                }
                if (f[0] == 'd') {   // a dictionary: each value its own entry, indices reversed
                    cols[c] = col_num("s", x, nul, poff + len, pad);
                    const char *dv[64];
                    for (int i = 0; i < poff + len; i++) {
                        dv[poff + len - 1 - i] = v[i] ? v[i] : "unused";
                        ((int16_t *)cols[c]->buffers[1])[pad + i] = (int16_t)(poff + len - 1 - i);
                    }
                    cols[c]->dictionary = col_str("U", dv, poff + len, (int)(rnd() % 2));
                } else if (c > nd && (f[0] == 'u' || f[0] == 'U' || f[0] == 'z' || f[0] == 'Z' || f[0] == 'v'))
                    cols[c] = col_str(f, v, poff + len, pad);
                else cols[c] = col_num(f, x, nul, poff + len, pad);
            }
            batch(&p, len, poff, cols, ncol);
            r0 += len;
        }
        wd_csv_desc cd;
        memset(&cd, 0, sizeof cd);
        char dense[64] = "", cat[64] = "";
        for (int j = 0; j < nd; j++)
            snprintf(dense + strlen(dense), 64 - strlen(dense), "%s%s", j ? "," : "", names[1 + j]);
        for (int k = 0; k < nc; k++)
            snprintf(cat + strlen(cat), 64 - strlen(cat), "%s%s", k ? "," : "", names[1 + nd + k]);
        cd.label = "c0"; cd.dense = nd ? dense : NULL; cd.cat = cat; cd.dense_raw = raw;
        int block = 1 + (int)(rnd() % 20);
        wd_status st = convert_csv(csv, &cd, a, block);
        if (st) {
            printf("  iteration %d: the CSV text did not convert: %s\n", iter, wd_last_error());
            tl_fails++;
            pool_free();
            continue;
        }
        counts_reset();
        st = convert_stream(&p, &cd, b, block, 1 + iter % 2, 0, NULL);
        if (st || !same_file(a, b)) {
            printf("  iteration %d: %s: %s\n", iter, st ? "refused" : "differs from the CSV's",
                    st ? wd_last_error() : "");
            tl_fails++;
        } else valid_ok++;
        CHECK(released_streams == opened && released_arrays == 2 * p.nbatches);
        // one corruption of a random batch: always refused
        struct ArrowArray *bt = &p.batch[rnd() % (uint64_t)p.nbatches];
        int c = (int)(rnd() % (uint64_t)ncol);
        struct ArrowArray *col = bt->children[c];
        const char *f = fmt[c];
        int kind = (int)(rnd() % 4);
        if (kind == 0) col->length = bt->offset + bt->length - 1;   // shorter than the batch reads
        else if (kind == 1) bt->n_children = ncol + 1;               // other columns (the schema changed)
        else if (kind == 2) col->n_buffers += 1;                     // other buffers (another type)
        else if (f[0] == 'u' || f[0] == 'z')
            ((int32_t *)col->buffers[1])[col->offset + bt->offset + bt->length] = -1;   // an offset out of range
        else if (f[0] == 'U' || f[0] == 'Z') ((int64_t *)col->buffers[1])[col->offset + bt->offset + bt->length] = -1;
        else if (f[0] == 'd')
            ((int16_t *)col->buffers[1])[col->offset + bt->offset] =
                    (int16_t)col->dictionary->length;   // past the dictionary
        else bt->n_children = 0;
        if (kind == 3 && f[0] == 'd' && !wd__arrow_valid(col, col->offset + bt->offset))
            bt->n_children = 0;   // a null index is not read
        counts_reset();
        cd.buckets = 64;
        st = convert_stream(&p, &cd, b, block, 1, 0, NULL);
        if (st == WD_ERR_CORRUPT) corrupt_refused++;
        else {
            printf("  iteration %d: corruption %d of column %d (%s) gave %s: %s\n", iter, kind, c, f,
                    wd_status_string(st), wd_last_error());
            tl_fails++;
        }
        CHECK(released_streams == opened);
        pool_free();
    }
    printf("  random streams: %d valid ones equal to their CSV's .wdr, %d corrupted ones refused\n", valid_ok,
            corrupt_refused);
}

// Random list columns (list<utf8>, large_list<int64>): valid ones convert,
// with each sample's ids those of its list's values; corrupted ones are refused.
static void test_random_lists(void) {
    char out[300];
    tmp(out, sizeof out, "rand-lists.wdr");
    int ok = 0, refused_n = 0;
    for (int iter = 0; iter < 40; iter++) {
        producer p;
        memset(&p, 0, sizeof p);
        p.fail_at = -1;
        int large = iter % 2, rows = 1 + (int)(rnd() % 30);
        sch(&p, "y", "c");
        struct ArrowSchema *ls = sch(&p, "L", large ? "+L" : "+l");
        struct ArrowSchema **it = (struct ArrowSchema **)zalloc(sizeof(void *));
        it[0] = (struct ArrowSchema *)zalloc(sizeof **it);
        it[0]->format = large ? "l" : "u"; it[0]->name = "item"; it[0]->release = rel_schema;
        ls->children = it; ls->n_children = 1;
        static const char *words[] = {"a", "bb", "", "a long value, over twelve", "7"};
        const char *vals[256];
        double nums[256];
        int nulls[256], lnull[64], nv = 0;
        int64_t offs[65];
        double y[64];
        offs[0] = 0;
        for (int r = 0; r < rows; r++) {   // 0..4 values a row, some null; some rows a null list
            int n = (int)(rnd() % 5);
            lnull[r] = rnd() % 6 == 0;
            for (int e = 0; e < n && !lnull[r]; e++, nv++) {
                nulls[nv] = rnd() % 5 == 0;
                vals[nv] = nulls[nv] ? NULL : words[rnd() % 5];
                nums[nv] = (double)(rnd() % 1000) - 500;
            }
            offs[r + 1] = nv;
            y[r] = (double)(rnd() % 2);
        }
        struct ArrowArray *values = large ? col_num("l", nums, nulls, nv, 0) : col_str("u", vals, nv, 0);
        struct ArrowArray *cols[2] = {
                col_num("c", y, NULL, rows, 0), col_list(large ? "+L" : "+l", offs, lnull, rows, values)};
        batch(&p, rows, 0, cols, 2);
        wd_csv_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.label = "y"; cd.cat = "L"; cd.buckets = 997;
        wd_status st = convert_stream(&p, &cd, out, 1 + (int)(rnd() % 8), 1, 0, NULL);
        wd_reader *r = NULL;
        int64_t seen = 0, bad = st != WD_OK;
        if (!st && wd_reader_open(out, &r) == WD_OK) {
            for (int64_t blk = 0; blk < wd_reader_nblocks(r); blk++) {
                const wd_batch *b;
                if (wd_reader_block(r, blk, &b) != WD_OK) { bad = 1; break; }
                for (int i = 0; i < b->n; i++, seen++) {
                    int cnt, q = 0;
                    const uint32_t *ids = wd_batch_sample_ids(b, 0, i, &cnt);
                    for (int64_t e = offs[seen]; !lnull[seen] && e < offs[seen + 1]; e++) {
                        if (nulls[e]) continue;
                        char txt[32];
                        const char *v = large ? txt : vals[e];
                        if (large) snprintf(txt, sizeof txt, "%lld", (long long)nums[e]);
                        bad |= q >= cnt || ids[q] != wd_hash_bucket(v, strlen(v), 0, 997);
                        q++;
                    }
                    bad |= q != cnt;
                }
            }
            wd_reader_close(r);
        }
        if (bad || seen != rows) {
            printf("  iteration %d: %s\n", iter, st ? wd_last_error() : "the ids differ");
            tl_fails++;
        } else ok++;
        // one corruption: refused
        struct ArrowArray *l = p.batch[0].children[1];
        int kind = (int)(rnd() % 3);
        if (kind == 0) l->length = rows - 1;   // shorter than the batch
        else if (kind == 1) {   // the last offset past the values (or, with none, an offset below the one before)
            if (large) ((int64_t *)l->buffers[1])[rows] = nv + 1; else ((int32_t *)l->buffers[1])[rows] = nv + 1;
        } else l->n_children = 2;
        st = convert_stream(&p, &cd, out, 4, 1, 0, NULL);
        if (st == WD_ERR_CORRUPT) refused_n++;
        else {
            printf("  iteration %d: corruption %d gave %s: %s\n", iter, kind, wd_status_string(st), wd_last_error());
            tl_fails++;
        }
        pool_free();
    }
    printf("  random lists: %d valid ones with their values' ids, %d corrupted ones refused\n", ok, refused_n);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_stream_equals_csv);
    RUN(test_uint64);
    RUN(test_reader_and_training);
    RUN(test_read_ahead);
    RUN(test_reader_budgets);
    RUN(test_refusals);
    RUN(test_progress_stop);
    RUN(test_lists);
    RUN(test_random_streams);
    RUN(test_random_lists);
    return test_summary("test_arrow");
}
