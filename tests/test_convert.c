// wd_convert's inputs and id spaces: gzip/zstd/standard input, long lines
// through a pipe, CSV per RFC 4180 (quotes, BOM, delimiter), derived slots,
// id side files, vocabularies (min_count) stored in the file and reused,
// tables sized from the data, outputs that would destroy inputs, number
// edges. Usage: test_convert [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <zlib.h>
#include <sys/wait.h>
#include <sys/stat.h>

static char TMP[200] = "/tmp";
static void tmp(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/cv-%s", TMP, name); }
static int spit(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}
// A CSV file: the header line, then row(f, i) for i = 0 .. rows - 1.
static int spit_rows(const char *path, const char *header, int rows, void (*row)(FILE *f, int i)) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fprintf(f, "%s\n", header);
    for (int i = 0; i < rows; i++) row(f, i);
    int ok = !ferror(f);
    return fclose(f) == 0 && ok ? 0 : -1;
}
// Every sample of a .wdr file, as one comparable byte string per block.
static int same_samples(const char *a, const char *b) {
    wd_reader *ra = NULL, *rb = NULL;
    int same = wd_reader_open(a, &ra) == WD_OK && wd_reader_open(b, &rb) == WD_OK && wd_schema_equal(wd_reader_schema(ra), wd_reader_schema(rb)) &&
               wd_reader_nsamples(ra) == wd_reader_nsamples(rb) && wd_reader_nblocks(ra) == wd_reader_nblocks(rb);
    for (int64_t i = 0; same && i < wd_reader_nblocks(ra); i++) {
        wd_batch x, y;
        memset(&x, 0, sizeof x); memset(&y, 0, sizeof y);
        same = wd_batch_init(&x, wd_reader_schema(ra), 0, 0) == WD_OK && wd_batch_init(&y, wd_reader_schema(rb), 0, 0) == WD_OK &&
               wd_reader_read_block(ra, i, &x) == WD_OK && wd_reader_read_block(rb, i, &y) == WD_OK && x.n == y.n &&
               !memcmp(x.label, y.label, 4 * (size_t)x.n) && !memcmp(x.dense, y.dense, 4 * (size_t)x.n * (size_t)x.ndense);
        for (int k = 0; same && k < x.nslots; k++) same = !memcmp(x.ids[k], y.ids[k], 4 * (size_t)x.n);
        wd_batch_free(&x); wd_batch_free(&y);
    }
    wd_reader_close(ra); wd_reader_close(rb);
    return same;
}
static wd_status convert(const wd_text_spec *t, const char **in, int nin, const char *out, int threads, wd_convert_report *rep) {
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.inputs = in; d.ninputs = nin; d.output = out; d.threads = threads; d.block_samples = 500;
    return wd_convert(&d, rep);
}

static char TSV[300];
static unsigned char *tsv_bytes;
static size_t tsv_len;
static void test_setup(void) {
    char g[300];
    tmp(TSV, sizeof TSV, "data.tsv");
    tmp(g, sizeof g, "gen.wdr");
    wd_gen_desc d;
    memset(&d, 0, sizeof d);
    d.output = g; d.tsv = TSV; d.rows = 3000; d.seed = 12; d.max_card = 400;
    REQUIRE_OK(wd_gen(&d, NULL));
    REQUIRE((tsv_bytes = slurp(TSV, &tsv_len)) != NULL && tsv_len > 100000);
}

// gzip (also two members back to back) and zstd input give the samples the
// text gives; bytes_in counts the text; a truncated stream is an error.
static void test_compressed_inputs(void) {
    REQUIRE(tsv_bytes);
    char gz[300], gz2[300], zs[300], cut[300], o1[300], o2[300];
    tmp(gz, sizeof gz, "data.tsv.gz"); tmp(gz2, sizeof gz2, "data2.tsv.gz"); tmp(zs, sizeof zs, "data.tsv.zst");
    tmp(cut, sizeof cut, "cut.gz"); tmp(o1, sizeof o1, "plain.wdr"); tmp(o2, sizeof o2, "comp.wdr");
    gzFile f = gzopen(gz, "wb");
    REQUIRE(f && gzwrite(f, tsv_bytes, (unsigned)tsv_len) == (int)tsv_len && gzclose(f) == Z_OK);
    f = gzopen(gz2, "wb");   // the same text as two gzip members
    REQUIRE(f && gzwrite(f, tsv_bytes, (unsigned)(tsv_len / 2)) > 0 && gzclose(f) == Z_OK);
    f = gzopen(gz2, "ab");
    REQUIRE(f && gzwrite(f, tsv_bytes + tsv_len / 2, (unsigned)(tsv_len - tsv_len / 2)) > 0 && gzclose(f) == Z_OK);
    size_t zc = ZSTD_compressBound(tsv_len);
    void *z = malloc(zc);
    zc = ZSTD_compress(z, zc, tsv_bytes, tsv_len, 3);
    REQUIRE(!ZSTD_isError(zc) && spit(zs, z, zc) == 0);
    free(z);
    wd_text_spec t;
    wd_text_spec_criteo(&t, 5000);
    wd_convert_report rep;
    const char *in[1] = {TSV};
    REQUIRE_OK(convert(&t, in, 1, o1, 2, &rep));
    CHECK(rep.bytes_in == (int64_t)tsv_len && rep.rows == 3000);
    const char *names[3] = {gz, gz2, zs};
    for (int i = 0; i < 3; i++) {
        in[0] = names[i];
        CHECK_OK(convert(&t, in, 1, o2, 2, &rep));
        CHECK(rep.rows == 3000 && rep.bytes_in == (int64_t)tsv_len && same_samples(o1, o2));
    }
    size_t n;
    unsigned char *g = slurp(gz, &n);
    REQUIRE(g && spit(cut, g, n / 2) == 0);
    free(g);
    in[0] = cut;
    unlink(o2);
    CHECK(convert(&t, in, 1, o2, 2, &rep) == WD_ERR_CORRUPT && strstr(wd_last_error(), "cut.gz") && strstr(wd_last_error(), "truncated gzip") && !file_exists(o2));
}

// Standard input ("-") through a pipe fed 64 KB at a time, a long line
// included, gives the samples the file gives; a first pass is refused on it.
static void feed(int fd, const unsigned char *p, size_t n) {
    for (size_t at = 0; at < n;) {
        ssize_t w = write(fd, p + at, n - at < 65536 ? n - at : 65536);
        if (w <= 0) break;
        at += (size_t)w;
    }
    close(fd);
}
static wd_status convert_stdin(const wd_text_spec *t, const unsigned char *text, size_t n, const char *out, wd_convert_report *rep) {
    int p[2];
    if (pipe(p) != 0) return WD_ERR_IO;
    pid_t pid = fork();
    if (pid == 0) { close(p[0]); feed(p[1], text, n); _exit(0); }
    close(p[1]);
    int saved = dup(0);
    dup2(p[0], 0);
    close(p[0]);
    const char *in[1] = {"-"};
    wd_status st = convert(t, in, 1, out, 2, rep);
    dup2(saved, 0);
    close(saved);
    waitpid(pid, NULL, 0);
    return st;
}
static void test_standard_input(void) {
    REQUIRE(tsv_bytes);
    char o1[300], o2[300];
    tmp(o1, sizeof o1, "file.wdr"); tmp(o2, sizeof o2, "stdin.wdr");
    wd_text_spec t;
    wd_text_spec_criteo(&t, 5000);
    wd_convert_report rep;
    const char *in[1] = {TSV};
    REQUIRE_OK(convert(&t, in, 1, o1, 2, &rep));
    CHECK_OK(convert_stdin(&t, tsv_bytes, tsv_len, o2, &rep));
    CHECK(rep.rows == 3000 && rep.bytes_in == (int64_t)tsv_len && same_samples(o1, o2));
    // a 24 MB CSV line (one huge categorical value) through the pipe
    wd_text_spec c;
    REQUIRE_OK(wd_text_spec_csv(&c, "y,v", "y", NULL, "v", 1000));
    size_t big = (size_t)24 << 20;
    unsigned char *line = (unsigned char *)malloc(big + 16);
    memcpy(line, "1,", 2);
    memset(line + 2, 'x', big);
    memcpy(line + 2 + big, "\n0,a\n", 5);
    double t0 = wd__now();
    CHECK_OK(convert_stdin(&c, line, big + 7, o2, &rep));
    printf("  a %zu-byte line through a pipe: %.2f s\n", big, wd__now() - t0);
    CHECK(rep.rows == 2);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(o2, &r));
    const wd_batch *b;
    CHECK_OK(wd_reader_block(r, 0, &b));
    CHECK(b && b->n == 2 && b->ids[0][0] == wd_hash_bucket((const char *)line + 2, big, 0, 1000));
    wd_reader_close(r);
    free(line);
    wd_text_spec_criteo(&t, 0);   // sized from the data: needs a first pass
    CHECK(convert_stdin(&t, tsv_bytes, tsv_len, o2, &rep) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "standard input"));
    // a named pipe (zcat ... | or <(...)) is read once too: refused up front,
    // before it is opened (it used to be read twice and fail "no valid rows")
    char fifo[300];
    tmp(fifo, sizeof fifo, "in.fifo");
    unlink(fifo);
    REQUIRE(mkfifo(fifo, 0600) == 0);
    const char *fin[1] = {fifo};
    CHECK(convert(&t, fin, 1, o2, 1, &rep) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "in.fifo can be read once only"));
    unlink(fifo);
}

// RFC 4180: quoted fields with delimiters and "" inside, a byte-order mark,
// another delimiter, the id column to a side file, derived slots.
static void test_csv(void) {
    char in[300], out[300], ids[300];
    tmp(in, sizeof in, "q.csv"); tmp(out, sizeof out, "q.wdr"); tmp(ids, sizeof ids, "q.ids");
    const char *text =
        "\xEF\xBB\xBFid;click;hour;site;n\n"
        "a1;1;14102100;\"x;y\";3\n"
        "\"a\"\"2\";0;14102513;\"say \"\"hi\"\"\";\n"
        "a3;1;\"14102623\";plain;7\n";
    REQUIRE(spit(in, text, strlen(text)) == 0);
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.header = "\xEF\xBB\xBFid;click;hour;site;n"; cd.delimiter = ';'; cd.label = "click"; cd.dense = "n"; cd.cat = "site";
    cd.id = "id"; cd.derive = "hod=hour[6:8],dow=weekday(hour[0:6])"; cd.buckets = 100000;
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    REQUIRE_OK(wd_text_spec_csv_desc(t, &cd));
    CHECK(t->schema.nslots == 3 && strcmp(t->schema.slot[1].name, "hod") == 0 && strcmp(t->schema.slot[2].name, "dow") == 0 && t->schema.ndense == 1);
    const char *inputs[1] = {in};
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.inputs = inputs; d.ninputs = 1; d.output = out; d.ids_output = ids;
    wd_convert_report rep;
    REQUIRE_OK(wd_convert(&d, &rep));
    CHECK(rep.rows == 3 && rep.bad_rows == 0);
    size_t n;
    char *got = (char *)slurp(ids, &n);
    CHECK(got && n > 10 && memcmp(got, "a1\na\"2\na3\n#wd-ids rows=3 data=", 30) == 0);   // then the binding line
    free(got);
    CHECK_OK(wd_ids_check(ids, out));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(out, &r));
    const wd_batch *b;
    REQUIRE_OK(wd_reader_block(r, 0, &b));
    CHECK(b->n == 3 && b->label[0] == 1 && b->label[1] == 0);
    CHECK(b->ids[0][0] == wd_hash_bucket("x;y", 3, 0, 100000) && b->ids[0][1] == wd_hash_bucket("say \"hi\"", 8, 0, 100000));
    CHECK(b->ids[1][0] == wd_hash_bucket("00", 2, 1, 100000) && b->ids[1][1] == wd_hash_bucket("13", 2, 1, 100000) && b->ids[1][2] == wd_hash_bucket("23", 2, 1, 100000));
    // 2014-10-21 was a Tuesday (1), the 25th a Saturday (5), the 26th a Sunday (6)
    CHECK(b->ids[2][0] == wd_hash_bucket("1", 1, 2, 100000) && b->ids[2][1] == wd_hash_bucket("5", 1, 2, 100000) && b->ids[2][2] == wd_hash_bucket("6", 1, 2, 100000));
    CHECK(b->dense[0] == wd_count_feature(3) && b->dense[1] == 0.0f);
    wd_reader_close(r);
    // bad quoting names the line; bad derive specs are refused
    const char *bad = "id;click;hour;site;n\na1;1;14102100;x\"y;3\n";
    REQUIRE(spit(in, bad, strlen(bad)) == 0);
    unlink(out); unlink(ids);
    CHECK(wd_convert(&d, &rep) == WD_ERR_PARSE && strstr(wd_last_error(), "q.csv:2:") && strstr(wd_last_error(), "quote") && !file_exists(out) && !file_exists(ids));
    cd.derive = "x=nosuch[0:2]";
    CHECK(wd_text_spec_csv_desc(t, &cd) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "nosuch"));
    cd.derive = "x=weekday(hour[0:5])";
    CHECK(wd_text_spec_csv_desc(t, &cd) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "6 (YYMMDD)"));
    free(t);
}

// min_count: a vocabulary by frequency, stored in the file (version 2);
// another file converted with it shares the ids, unseen values get 0.
static void test_vocabulary(void) {
    char in[300], in2[300], out[300], out2[300];
    tmp(in, sizeof in, "v.csv"); tmp(in2, sizeof in2, "v2.csv"); tmp(out, sizeof out, "v.wdr"); tmp(out2, sizeof out2, "v2.wdr");
    const char *text = "y,a,b\n1,x,p\n0,x,q\n1,y,p\n0,x,r\n1,z,p\n";   // a: x3 y1 z1; b: p3 q1 r1
    REQUIRE(spit(in, text, strlen(text)) == 0);
    REQUIRE(spit(in2, "y,a,b\n1,z,p\n0,w,q\n1,x,s\n", 23) == 0);
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_csv(&t, "y,a,b", "y", NULL, "a,b", 0));
    const char *inputs[1] = {in};
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = &t; d.inputs = inputs; d.ninputs = 1; d.output = out; d.min_count = 1;
    wd_convert_report rep;
    REQUIRE_OK(wd_convert(&d, &rep));
    CHECK(rep.buckets[0] == 4 && rep.buckets[1] == 4);   // 3 values each + the out-of-vocabulary id
    d.min_count = 2;
    REQUIRE_OK(wd_convert(&d, &rep));
    CHECK(rep.buckets[0] == 2 && rep.buckets[1] == 2);
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(out, &r));
    const wd_vocab *v = wd_reader_vocab(r);
    REQUIRE(v != NULL);
    CHECK(wd_vocab_size(v, 0) == 1 && wd_vocab_size(v, 1) == 1 && wd_reader_schema(r)->slot[0].buckets == 2);
    const wd_batch *b;
    REQUIRE_OK(wd_reader_block(r, 0, &b));
    uint32_t wa[5] = {1, 1, 0, 1, 0}, wb[5] = {1, 0, 1, 0, 1};   // x and p kept, the rest out of vocabulary
    for (int i = 0; i < 5; i++) CHECK(b->ids[0][i] == wa[i] && b->ids[1][i] == wb[i]);
    // the test file with the training file's vocabulary
    wd_text_spec t2;
    REQUIRE_OK(wd_text_spec_csv(&t2, "y,a,b", "y", NULL, "a,b", 0));
    REQUIRE_OK(wd_text_spec_vocab(&t2, v));
    inputs[0] = in2;
    d.spec = &t2; d.output = out2; d.min_count = 0;
    REQUIRE_OK(wd_convert(&d, &rep));
    wd_reader *r2;
    REQUIRE_OK(wd_reader_open(out2, &r2));
    CHECK(wd_schema_equal(wd_reader_schema(r), wd_reader_schema(r2)) && wd_reader_vocab(r2) != NULL);
    REQUIRE_OK(wd_reader_block(r2, 0, &b));
    CHECK(b->ids[0][0] == 0 && b->ids[0][1] == 0 && b->ids[0][2] == 1 && b->ids[1][0] == 1 && b->ids[1][1] == 0 && b->ids[1][2] == 0);
    wd_reader_close(r2);
    wd_reader_close(r);
    wd_text_spec_free(&t2);
    // a file without a vocabulary: version 3 for its input format, flags
    // bit 1 alone (wd_writer's files, with neither, stay version 1)
    wd_text_spec t3;
    REQUIRE_OK(wd_text_spec_csv(&t3, "y,a,b", "y", NULL, "a,b", 50));
    inputs[0] = in;
    d.spec = &t3;
    REQUIRE_OK(wd_convert(&d, &rep));
    size_t n;
    unsigned char *f = slurp(out2, &n);
    CHECK(f && n > 28 && f[8] == 3 && f[24] == 2);
    free(f);
}

// Tables sized from the data: a slot of at most 4096 distinct values gets an
// id per value (a vocabulary in the file: distinct + 1 rows, no collisions);
// a larger one 16 buckets per distinct value (estimated), at most
// WD_DEFAULT_BUCKETS; explicit sizes stay.
static int64_t distinct_in_column(const char *text, size_t len, char sep, int col) {
    int64_t distinct = 0;
    size_t cap = 1 << 16;
    uint32_t *seen = (uint32_t *)calloc(cap, 4);
    const char *p = text, *end = p + len;
    while (p < end) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
        const char *f = p;
        for (int c = 0; c < col; c++) f = (const char *)memchr(f, sep, (size_t)(nl - f)) + 1;
        const char *fe = (const char *)memchr(f, sep, (size_t)(nl - f));
        if (!fe) fe = nl;
        uint32_t h = (uint32_t)wd_hash_bytes(f, (size_t)(fe - f), 99) | 1;
        size_t j = h & (cap - 1);
        while (seen[j] && seen[j] != h) j = (j + 1) & (cap - 1);
        if (!seen[j]) { seen[j] = h; distinct++; }
        p = nl + 1;
    }
    free(seen);
    return distinct;
}
// a slot of 6000 values and one of 7
static void wide_row(FILE *f, int i) { fprintf(f, "%d,v%d,s%d\n", i & 1, i % 6000, i % 7); }
static void test_sized_from_data(void) {
    REQUIRE(tsv_bytes);
    char out[300];
    tmp(out, sizeof out, "sized.wdr");
    wd_text_spec t;
    wd_text_spec_criteo(&t, 0);
    REQUIRE_OK(wd_text_spec_buckets(&t, "C2=777"));
    const char *in[1] = {TSV};
    wd_convert_report rep;
    REQUIRE_OK(convert(&t, in, 1, out, 2, &rep));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(out, &r));
    const wd_vocab *v = wd_reader_vocab(r);
    CHECK(v != NULL);
    int bad = 0;
    for (int k = 0; k < 26; k++) {
        int64_t d = k == 1 ? 0 : distinct_in_column((const char *)tsv_bytes, tsv_len, '\t', 14 + k);
        int ok = k == 1 ? rep.buckets[k] == 777 && (!v || wd_vocab_size(v, k) < 0)
                        : d <= 4096 && rep.buckets[k] == (uint32_t)d + 1 && v && wd_vocab_size(v, k) == d;
        ok &= wd_reader_schema(r)->slot[k].buckets == rep.buckets[k];
        if (!ok) { bad++; printf("  C%d: %lld distinct, %u buckets, vocabulary %lld\n", k + 1, (long long)d, rep.buckets[k], v ? (long long)wd_vocab_size(v, k) : -2LL); }
    }
    CHECK(bad == 0);
    wd_reader_close(r);
    // a slot of 6000 values is hashed (16 per value, estimated), one of 7 gets ids
    char csv[300], out2[300];
    tmp(csv, sizeof csv, "wide.csv"); tmp(out2, sizeof out2, "wide.wdr");
    REQUIRE(spit_rows(csv, "y,big,small", 12000, wide_row) == 0);
    wd_text_spec c;
    REQUIRE_OK(wd_text_spec_csv(&c, "y,big,small", "y", NULL, "big,small", 0));
    const char *in2[1] = {csv};
    REQUIRE_OK(convert(&c, in2, 1, out2, 2, &rep));
    CHECK(fabs((double)rep.buckets[0] - 16.0 * 6000) <= 0.05 * 16.0 * 6000 && rep.buckets[1] == 8);
    REQUIRE_OK(wd_reader_open(out2, &r));
    v = wd_reader_vocab(r);
    CHECK(v && wd_vocab_size(v, 0) < 0 && wd_vocab_size(v, 1) == 7);
    wd_reader_close(r);
}

// An output never replaces an input of the same conversion.
static void test_output_is_input(void) {
    REQUIRE(tsv_bytes);
    char copy[300], link[300];
    tmp(copy, sizeof copy, "self.tsv"); tmp(link, sizeof link, "self-link.tsv");
    REQUIRE(spit(copy, tsv_bytes, tsv_len) == 0);
    unlink(link);
    REQUIRE(symlink(copy, link) == 0);
    wd_text_spec t;
    wd_text_spec_criteo(&t, 1000);
    const char *in[1] = {copy};
    wd_convert_report rep;
    CHECK(convert(&t, in, 1, copy, 1, &rep) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "destroyed"));
    CHECK(convert(&t, in, 1, link, 1, &rep) == WD_ERR_INVALID_ARG);   // the same file under another name
    size_t n;
    unsigned char *after = slurp(copy, &n);
    CHECK(after && n == tsv_len && memcmp(after, tsv_bytes, n) == 0);
    free(after);
}

// Numbers at the edges: blanks around a value, subnormals and FLT_MAX pass;
// hexadecimal, inf, nan and values beyond a float do not; INT64_MIN is a count.
static void test_number_edges(void) {
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_csv(&t, "y,v", "y", "v", NULL, 10));
    t.dense_raw = 1;
    wd_batch b;
    REQUIRE_OK(wd_batch_init(&b, &t.schema, 0, 0));
    const char *ok[] = {"1, 5 ", "1,1e-310", "1,3.4e38", "1,-3.4028234e38", "1,+2.5"};
    float want[] = {5.0f, (float)1e-310, 3.4e38f, -3.4028234e38f, 2.5f};
    for (int i = 0; i < 5; i++) {
        int n0 = b.n;
        CHECK_OK(wd_parse_line(&t, ok[i], strlen(ok[i]), &b));
        CHECK(b.n == n0 + 1 && b.dense[n0] == want[i]);
    }
    const char *no[] = {"1,0x10", "1,0x1p3", "1,inf", "1,nan", "1,3.5e38", "1,1e999", "1,5 5"};
    for (int i = 0; i < 7; i++) {
        int n0 = b.n;
        CHECK(wd_parse_line(&t, no[i], strlen(no[i]), &b) == WD_ERR_PARSE && b.n == n0);
    }
    wd_batch_free(&b);
    wd_text_spec c;
    wd_text_spec_criteo(&c, 10);
    REQUIRE_OK(wd_batch_init(&b, &c.schema, 0, 0));
    char line[600];
    int n = snprintf(line, sizeof line, "0\t-9223372036854775808");
    for (int j = 1; j < 13; j++) n += snprintf(line + n, sizeof line - (size_t)n, "\t");
    for (int k = 0; k < 26; k++) n += snprintf(line + n, sizeof line - (size_t)n, "\tab");
    CHECK_OK(wd_parse_line(&c, line, (size_t)n, &b));
    CHECK(b.n == 1 && b.dense[0] == wd_count_feature(INT64_MIN));
    line[21] = '9';   // -9223372036854775809: outside int64
    CHECK(wd_parse_line(&c, line, (size_t)n, &b) == WD_ERR_PARSE && strstr(wd_last_error(), "too large"));
    wd_text_spec_criteo(&c, 0);   // unsized slots cannot map values
    CHECK(wd_parse_line(&c, line, (size_t)n, &b) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "0 buckets"));
    wd_batch_free(&b);
    // a header longer than the spec holds is an error, not a silent cut
    char *h = (char *)malloc(6000);
    memset(h, 'c', 5999);
    h[0] = 'y'; h[1] = ','; h[5999] = 0;
    CHECK(wd_text_spec_csv(&t, h, "y", NULL, NULL, 10) == WD_ERR_LIMIT && strstr(wd_last_error(), "header"));
    free(h);
}

// wd_batch_add maps raw values as wd_parse_line maps the line they came from
// (a serving program scores what training saw): the raw counts, through the
// spec's dense rule applied by the library; and refuses what it cannot map.
static void test_batch_from_values(void) {
    wd_text_spec t;
    wd_text_spec_criteo(&t, 5000);
    const char *line = "1\t3\t-2\t\t7\t0\t1\t2\t3\t4\t5\t6\t7\t8\t68fd1e64\t80e26c9b\t\tx\ty\tz\ta\tb\tc\td\te\tf\tg\th\ti\tj\tk\tl\tm\tn\to\tp\tq\tr\ts\tt";
    wd_batch a, b;
    REQUIRE_OK(wd_batch_init(&a, &t.schema, 0, 0));
    REQUIRE_OK(wd_batch_init(&b, &t.schema, 0, 0));
    REQUIRE_OK(wd_parse_line(&t, line, strlen(line), &a));
    const double dense[13] = {3, -2, NAN, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8};   // I3 missing: NAN
    const char *cat[26] = {"68fd1e64", "80e26c9b", NULL, "x", "y", "z", "a", "b", "c", "d", "e", "f", "g",
                           "h",        "i",        "j",  "k", "l", "m", "n", "o", "p", "q", "r", "s", "t"};
    CHECK_OK(wd_batch_add(&t, &b, 1.0f, dense, 13, cat, NULL, 26));
    CHECK(a.n == 1 && b.n == 1 && a.label[0] == b.label[0] && b.weight[0] == 1.0f &&
          !memcmp(a.dense, b.dense, 13 * sizeof(float)));
    int same = 1;
    for (int k = 0; k < 26; k++) same &= a.ids[k][0] == b.ids[k][0];
    CHECK(same);
    // bad values: the batch keeps its one sample. A count the rule cannot take
    // (1e30, 2.5: convert refuses such text), a value already transformed, Inf
    double bad[13];
    const double refused[3] = {1e30, 2.5, INFINITY};
    for (int r = 0; r < 3; r++) {
        memcpy(bad, dense, sizeof bad);
        bad[4] = refused[r];
        CHECK(wd_batch_add(&t, &b, 1.0f, bad, 13, cat, NULL, 26) == WD_ERR_NUMERIC &&
              strstr(wd_last_error(), "dense value 4") && strstr(wd_last_error(), "not a count"));
    }
    CHECK(wd_batch_add(&t, &b, 2.0f, dense, 13, cat, NULL, 26) == WD_ERR_INVALID_ARG &&
          strstr(wd_last_error(), "label"));
    CHECK(wd_batch_add(NULL, &b, 0.0f, dense, 13, cat, NULL, 26) == WD_ERR_INVALID_ARG &&
          strstr(wd_last_error(), "text spec"));
    // counts checked against the spec: a request of another shape (an Avazu
    // model's 0 dense and 22 values, a Criteo request) is refused, never read short
    CHECK(wd_batch_add(&t, &b, 0.0f, dense, 12, cat, NULL, 26) == WD_ERR_SCHEMA &&
          strstr(wd_last_error(), "12 dense and 26 categorical"));
    CHECK(wd_batch_add(&t, &b, 0.0f, dense, 13, cat, NULL, 22) == WD_ERR_SCHEMA &&
          strstr(wd_last_error(), "takes 13 dense and 26"));
    CHECK(wd_batch_add(&t, &b, 0.0f, NULL, 13, cat, NULL, 26) == WD_ERR_SCHEMA &&
          strstr(wd_last_error(), "dense NULL"));
    wd_text_spec unsized;
    wd_text_spec_criteo(&unsized, 0);   // buckets from the data: none yet
    CHECK(wd_batch_add(&unsized, &b, 0.0f, dense, 13, cat, NULL, 26) == WD_ERR_INVALID_ARG &&
          strstr(wd_last_error(), "no buckets"));
    wd_text_spec svm;
    REQUIRE_OK(wd_text_spec_libsvm(&svm, "a=1-10", NULL, 0));
    CHECK(wd_batch_add(&svm, &b, 0.0f, NULL, 0, NULL, NULL, 1) == WD_ERR_UNSUPPORTED);
    CHECK(b.n == 1);
    // missing values: NAN dense values and NULL strings
    double none[13];
    for (int j = 0; j < 13; j++) none[j] = NAN;
    CHECK_OK(wd_batch_add(&t, &b, 0.0f, none, 13, NULL, NULL, 26));
    CHECK(b.n == 2 && b.dense[13 + 5] == 0.0f && b.ids[7][1] == wd_hash_bucket("", 0, 7, 5000));
    wd_batch_free(&a);
    wd_batch_free(&b);
}

// Boundaries of the documented formats and limits, each at the limit and one
// past it: the table sizing threshold (4096 distinct values: ids of their
// own; 4097: hashed, 16 buckets a value), the label syntax of each text
// format, the derived weekday on every day of 2000-2030 (both date forms),
// and vocabulary ids of values of equal count whatever the block size and
// thread count (ties broken by hash, not by arrival).
static int days_from_civil(int y, int m, int d) {   // days since 1970-01-01 (Howard Hinnant's algorithm)
    y -= m <= 2;
    int era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
    int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}
// slots of 4096, 4097 and 1 values
static void edge_row(FILE *f, int i) { fprintf(f, "%d,a%d,b%d,c\n", i & 1, i % 4096, i % 4097); }
static void test_format_boundaries(void) {
    // sizing: 4096 distinct values get a vocabulary, 4097 hash
    char csv[300], out[300];
    tmp(csv, sizeof csv, "edge.csv"); tmp(out, sizeof out, "edge.wdr");
    REQUIRE(spit_rows(csv, "y,a,b,c", 8194, edge_row) == 0);
    wd_text_spec t;
    REQUIRE_OK(wd_text_spec_csv(&t, "y,a,b,c", "y", NULL, "a,b,c", 0));
    const char *in[1] = {csv};
    wd_convert_report rep;
    REQUIRE_OK(convert(&t, in, 1, out, 2, &rep));
    wd_reader *r;
    REQUIRE_OK(wd_reader_open(out, &r));
    const wd_vocab *v = wd_reader_vocab(r);
    printf("  4096 values: %u buckets; 4097: %u; 1: %u\n", rep.buckets[0], rep.buckets[1], rep.buckets[2]);
    CHECK(v && wd_vocab_size(v, 0) == 4096 && rep.buckets[0] == 4097);
    CHECK(v && wd_vocab_size(v, 1) == -1 && rep.buckets[1] >= 16 * 4097 * 97 / 100 && rep.buckets[1] <= 16 * 4097 * 103 / 100);
    CHECK(v && wd_vocab_size(v, 2) == 1 && rep.buckets[2] == 2);
    wd_reader_close(r);
    // ties: every value of a seen twice; ids equal whatever the block size and threads
    char out2[300];
    tmp(out2, sizeof out2, "edge2.wdr");
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = &t; d.inputs = in; d.ninputs = 1; d.output = out2; d.threads = 1; d.block_samples = 7;
    REQUIRE_OK(wd_convert(&d, NULL));
    wd_reader *r1, *r2;
    REQUIRE_OK(wd_reader_open(out, &r1));
    REQUIRE_OK(wd_reader_open(out2, &r2));
    const wd_vocab *v1 = wd_reader_vocab(r1), *v2 = wd_reader_vocab(r2);
    REQUIRE(v1 && v2 && v1->n[0] == 4096 && v2->n[0] == 4096);
    CHECK(memcmp(v1->hash[0], v2->hash[0], 8 * 4096) == 0 && memcmp(v1->hash[2], v2->hash[2], 8) == 0);
    int sorted = 1;
    for (int i = 1; i < 4096; i++) sorted &= i == 2 || v1->hash[0][i - 1] < v1->hash[0][i];   // a0, a1 3 times, the rest twice: by hash within each count
    CHECK(sorted);
    wd_batch a, b;
    REQUIRE_OK(wd_batch_init(&a, wd_reader_schema(r1), 0, 0));
    REQUIRE_OK(wd_batch_init(&b, wd_reader_schema(r2), 0, 0));
    int64_t row = 0, same = 1;
    for (int64_t bi = 0, bj = 0, ja = 0, jb = 0; same && row < 8194; row++) {   // sample by sample across block layouts
        if (ja == 0 && wd_reader_read_block(r1, bi++, &a)) { same = 0; break; }
        if (jb == 0 && wd_reader_read_block(r2, bj++, &b)) { same = 0; break; }
        for (int k = 0; k < 3; k++) same &= a.ids[k][ja] == b.ids[k][jb];
        if (++ja == a.n) ja = 0;
        if (++jb == b.n) jb = 0;
    }
    CHECK(same && row == 8194);
    wd_batch_free(&a); wd_batch_free(&b);
    wd_reader_close(r1); wd_reader_close(r2);
    // label syntax, each format: accepted spellings and what they mean, refused ones
    wd_text_spec c, l, x;
    wd_text_spec_criteo(&c, 100);
    REQUIRE_OK(wd_text_spec_csv(&x, "y,d,k", "y", "d", "k", 100));
    REQUIRE_OK(wd_text_spec_libsvm(&l, "s=0-9", NULL, 0));
    struct { const wd_text_spec *t; const char *label; float want; } ok[] = {
        {&c, "0", 0}, {&c, "1", 1}, {&x, "0", 0}, {&x, "1", 1}, {&x, "1.0", 1}, {&x, "0.0", 0}, {&x, "1e0", 1},
        {&l, "0", 0}, {&l, "1", 1}, {&l, "-1", 0}, {&l, "+1", 1}, {&l, "1.0", 1}, {&l, "-1.0", 0}};
    const char *bad_c[] = {"2", "01", "00", "", "-1", "1.0", "+1", " 1", "x"};
    const char *bad_x[] = {"2", "-1", "0.5", "", "nan", "inf", "x", "1x", "0.9999999"};
    const char *bad_l[] = {"2", "-2", "0.5", "", "+2", "x", "nan", "-0.5", "1.5"};
    wd_batch bb;
    REQUIRE_OK(wd_batch_init(&bb, &c.schema, 0, 0));
    char line[600];
    int fails = 0;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        wd_batch q;
        REQUIRE_OK(wd_batch_init(&q, &ok[i].t->schema, 0, 0));
        if (ok[i].t == &c) {
            int k = snprintf(line, sizeof line, "%s", ok[i].label);
            for (int f = 0; f < 13; f++) k += snprintf(line + k, sizeof line - (size_t)k, "\t%d", f);
            for (int f = 0; f < 26; f++) k += snprintf(line + k, sizeof line - (size_t)k, "\tv%d", f);
        } else if (ok[i].t == &x) snprintf(line, sizeof line, "%s,3,k1", ok[i].label);
        else snprintf(line, sizeof line, "%s 2:1 5:1", ok[i].label);
        wd_status st = wd_parse_line(ok[i].t, line, strlen(line), &q);
        if (st || q.n != 1 || q.label[0] != ok[i].want) { fails++; printf("  label '%s' (%s): %s, %g\n", ok[i].label, ok[i].t == &c ? "criteo" : ok[i].t == &x ? "csv" : "libsvm", st ? wd_last_error() : "ok", q.n ? (double)q.label[0] : -1.0); }
        wd_batch_free(&q);
    }
    for (int f = 0; f < 3; f++) {
        const wd_text_spec *t3 = f == 0 ? &c : f == 1 ? &x : &l;
        const char **bad = f == 0 ? bad_c : f == 1 ? bad_x : bad_l;
        wd_batch q;
        REQUIRE_OK(wd_batch_init(&q, &t3->schema, 0, 0));
        for (int i = 0; i < 9; i++) {
            if (f == 0) {
                int k = snprintf(line, sizeof line, "%s", bad[i]);
                for (int g = 0; g < 13; g++) k += snprintf(line + k, sizeof line - (size_t)k, "\t%d", g);
                for (int g = 0; g < 26; g++) k += snprintf(line + k, sizeof line - (size_t)k, "\tv%d", g);
            } else if (f == 1) snprintf(line, sizeof line, "%s,3,k1", bad[i]);
            else snprintf(line, sizeof line, "%s 2:1 5:1", bad[i]);
            wd_status st = wd_parse_line(t3, line, strlen(line), &q);
            if (st != WD_ERR_PARSE || q.n != 0 || !strstr(wd_last_error(), "label")) { fails++; printf("  label '%s' (format %d) accepted or misreported: %s\n", bad[i], f, st ? wd_last_error() : "ok"); }
        }
        wd_batch_free(&q);
    }
    wd_batch_free(&bb);
    CHECK(fails == 0);
    // the weekday of every day of 2000-2030, YYMMDD and YYYYMMDD; no weekday for impossible dates
    int wrong = 0;
    for (int y = 2000; y <= 2030; y++)
        for (int mo = 1; mo <= 12; mo++) {
            int dim = mo == 2 ? (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) ? 29 : 28) : (mo == 4 || mo == 6 || mo == 9 || mo == 11) ? 30 : 31;
            for (int dd = 1; dd <= dim; dd++) {
                int want = (days_from_civil(y, mo, dd) + 3) % 7;   // 1970-01-01 was a Thursday (Monday = 0)
                char s6[48], s8[48];
                snprintf(s6, sizeof s6, "%02d%02d%02d", y % 100, mo, dd);
                snprintf(s8, sizeof s8, "%04d%02d%02d", y, mo, dd);
                if (wd__weekday(s6, 6) != want || wd__weekday(s8, 8) != want) { if (wrong++ < 5) printf("  %s: weekday %d/%d, want %d\n", s8, wd__weekday(s6, 6), wd__weekday(s8, 8), want); }
            }
        }
    CHECK(wrong == 0);
    const char *not_dates[] = {"141300", "141000", "141032", "20141300", "20140000", "1410", "2014101", "14-101", "abcdef"};
    for (int i = 0; i < 9; i++) CHECK(wd__weekday(not_dates[i], strlen(not_dates[i])) == -1);
    unlink(csv); unlink(out); unlink(out2);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_setup);
    RUN(test_compressed_inputs);
    RUN(test_standard_input);
    RUN(test_csv);
    RUN(test_vocabulary);
    RUN(test_sized_from_data);
    RUN(test_output_is_input);
    RUN(test_number_edges);
    RUN(test_batch_from_values);
    RUN(test_format_boundaries);
    free(tsv_bytes);
    return test_summary("test_convert");
}
