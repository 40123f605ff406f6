// Unit and bad-input tests of sections 18 and 19 of widedeep.h: the protobuf
// encoder, ONNX export's refusals and file handling, the TensorBoard event
// writer's framing. ONNX Runtime's and TensorBoard's own readers check the
// files themselves in tests/ecosystem.sh.
// Usage: test_export [TMPDIR]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include "testlib.h"
#include <dirent.h>

static char TMP[200] = "/tmp";

static int pb_is(wd__pb *p, const char *hex) {   // p's bytes as hex, then emptied
    char got[256] = "";
    for (size_t i = 0; i < p->b.len && 2 * i + 2 < sizeof got; i++) snprintf(got + 2 * i, 3, "%02x", p->b.p[i]);
    p->b.len = 0;
    if (strcmp(got, hex) == 0) return 1;
    printf("  encoded %s, wanted %s\n", got, hex);
    return 0;
}
// Varints, keys and fields as protobuf's encoding documentation gives them.
static void test_protobuf_encoding(void) {
    wd__pb p = {{0, 0, 0}, WD_OK}, sub = {{0, 0, 0}, WD_OK};
    wd__pb_varint(&p, 0); CHECK(pb_is(&p, "00"));
    wd__pb_varint(&p, 1); CHECK(pb_is(&p, "01"));
    wd__pb_varint(&p, 127); CHECK(pb_is(&p, "7f"));
    wd__pb_varint(&p, 128); CHECK(pb_is(&p, "8001"));
    wd__pb_varint(&p, 300); CHECK(pb_is(&p, "ac02"));
    wd__pb_varint(&p, UINT64_MAX); CHECK(pb_is(&p, "ffffffffffffffffff01"));
    wd__pb_int(&p, 1, 150); CHECK(pb_is(&p, "089601"));                 // the documentation's "Test1"
    wd__pb_int(&p, 2, -1); CHECK(pb_is(&p, "10ffffffffffffffffff01"));  // int64 -1: ten bytes
    wd__pb_str(&p, 2, "testing"); CHECK(pb_is(&p, "120774657374696e67"));
    wd__pb_int(&sub, 1, 150);
    wd__pb_msg(&p, 3, &sub); CHECK(pb_is(&p, "1a03089601") && sub.b.len == 0);   // "Test3": an embedded message
    wd__pb_f32(&p, 2, 1.0f); CHECK(pb_is(&p, "150000803f"));
    wd__pb_f64(&p, 1, 1.0); CHECK(pb_is(&p, "09000000000000f03f"));
    wd__pb_int(&p, 16, 1); CHECK(pb_is(&p, "8001" "01"));   // field 16: a two-byte key
    CHECK(wd__pb_varint_len(0) == 1 && wd__pb_varint_len(127) == 1 && wd__pb_varint_len(128) == 2 && wd__pb_varint_len(UINT64_MAX) == 10);
    CHECK(p.st == WD_OK);
    wd__pb_free(&p);
    wd__pb_free(&sub);
}

static wd_model *small_model(int multi, int precision, const char *dup) {
    wd_schema s;
    memset(&s, 0, sizeof s);
    s.ndense = 2; s.nslots = 3;
    for (int k = 0; k < 3; k++) {
        snprintf(s.slot[k].name, WD_NAME_MAX, "s%d", k);
        s.slot[k].buckets = 10;
        s.slot[k].kind = multi && k == 2 ? WD_MULTI_HOT : WD_ONE_HOT;
    }
    if (dup) snprintf(s.slot[1].name, WD_NAME_MAX, "%s", dup);
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = &s; d.embed_dim = 4; d.hidden[0] = 8; d.ncross = 1; d.cross[0][0] = 0; d.cross[0][1] = 1; d.cross_buckets = 16;
    d.precision = precision;
    wd_model *m = NULL;
    if (wd_model_create(&d, &m)) { printf("  wd_model_create: %s\n", wd_last_error()); return NULL; }
    return m;
}
static int temps_left(const char *dir) {   // files named *.tmp-* in dir
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}
static long file_size(const char *path) { struct stat sb; return stat(path, &sb) == 0 ? (long)sb.st_size : -1; }

// A written graph: ModelProto's first fields (ir_version 8, producer
// "widedeep"), the opset, every input's name in the file; refusals name why.
static void test_onnx_export(void) {
    char dir[300], path[400], bad[400];
    snprintf(dir, sizeof dir, "%s/export", TMP);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    wd_model *m = small_model(1, WD_PRECISION_FP32, NULL);
    REQUIRE(m);
    unlink(path);
    REQUIRE_OK(wd_model_export_onnx(m, path));
    size_t len = 0;
    uint8_t *buf = slurp(path, &len);
    long n = (long)len;
    REQUIRE(buf && n > 0 && n == file_size(path));
    CHECK(memcmp(buf, "\x08\x08\x12\x08widedeep", 12) == 0);   // ir_version 8, producer_name
    const char *names[] = {"dense", "ids.s0", "ids.s1", "ids.s2", "offsets.s2", "cross0", "probability", "emb.s2", "wide.cross0", "mlp.1.weight", "ScatterElements"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int found = 0;
        for (long j = 0; !found && j + (long)strlen(names[i]) <= n; j++) found = memcmp(buf + j, names[i], strlen(names[i])) == 0;
        if (!found) printf("  '%s' is not in the file\n", names[i]);
        CHECK(found);
    }
    free(buf);
    // the same model twice: the same bytes
    char path2[400];
    snprintf(path2, sizeof path2, "%s/m2.onnx", dir);
    REQUIRE_OK(wd_model_export_onnx(m, path2));
    CHECK(file_size(path2) == n);
    // refusals
    CHECK(wd_model_export_onnx(NULL, path) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "model"));
    CHECK(wd_model_export_onnx(m, NULL) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "path"));
    CHECK(wd_model_export_onnx(m, "") == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "empty"));
    snprintf(bad, sizeof bad, "%s/no/such/dir/m.onnx", dir);
    CHECK(wd_model_export_onnx(m, bad) == WD_ERR_IO && strstr(wd_last_error(), "no/such/dir/m.onnx") && strstr(wd_last_error(), "No such file"));
    CHECK(wd_model_export_onnx(m, dir) == WD_ERR_IO);   // a directory: its temporary file is created, the rename fails
    CHECK(temps_left(dir) == 0 && temps_left(TMP) == 0);
    wd_model_destroy(m);
    wd_model *b = small_model(0, WD_PRECISION_BF16, NULL);
    REQUIRE(b);
    unlink(path);
    CHECK(wd_model_export_onnx(b, path) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "bf16") && strstr(wd_last_error(), "m.onnx"));
    CHECK(file_size(path) == -1);   // nothing written
    wd_model_destroy(b);
    wd_model *d = small_model(0, WD_PRECISION_FP32, "s0");
    REQUIRE(d);
    CHECK(wd_model_export_onnx(d, path) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "slots 0 and 1 are both named 's0'"));
    wd_model_destroy(d);
    wd_model *e = small_model(0, WD_PRECISION_FP32, "");
    REQUIRE(e);
    CHECK(wd_model_export_onnx(e, path) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "slot 1 has no name"));
    CHECK(file_size(path) == -1 && temps_left(dir) == 0);
    wd_model_destroy(e);
}

// wd_model_export_onnx_values: a CSV model's vocabulary values read back from
// its text into the graph; the refusals; set up by onnx_values_model
static char g_csv[400];
static wd_model *onnx_values_model(const char *dir) {
    char wdr[400];
    snprintf(g_csv, sizeof g_csv, "%s/v.csv", dir);
    snprintf(wdr, sizeof wdr, "%s/v.wdr", dir);
    FILE *f = fopen(g_csv, "w");
    if (!f) return NULL;
    fprintf(f, "click,c,d\n");
    for (int i = 0; i < 300; i++) fprintf(f, "%d,val%d,%s\n", i % 3 == 0, i % 12, i % 2 ? "odd" : "even");
    fclose(f);
    wd_text_spec t;
    if (wd_text_spec_csv(&t, "click,c,d", "click", NULL, "c,d", 0)) return NULL;
    const char *in[] = {g_csv};
    wd_convert_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.spec = &t; cd.inputs = in; cd.ninputs = 1; cd.output = wdr;
    wd_convert_report rep;
    wd_reader *r = NULL;
    wd_model *m = NULL;
    wd_status st = wd_convert(&cd, &rep);
    if (!st) st = wd_reader_open(wdr, &r);
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    if (!st) { md.schema = wd_reader_schema(r); md.embed_dim = 4; md.hidden[0] = 8; st = wd_model_create(&md, &m); }
    if (r) wd_reader_close(r);
    const char *files[] = {wdr};
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    td.files = files; td.nfiles = 1; td.threads = 1; td.batch_size = 32; td.max_steps = 3;
    if (!st) st = wd_train(m, &td, NULL);
    if (st) { printf("  setup: %s\n", wd_last_error()); wd_model_destroy(m); return NULL; }
    return m;
}
static void test_onnx_values(void) {
    char dir[300], path[400], part[400], none[400];
    snprintf(dir, sizeof dir, "%s/values", TMP);
    mkdir(dir, 0755);
    wd_model *m = onnx_values_model(dir);
    REQUIRE(m);
    snprintf(path, sizeof path, "%s/v.onnx", dir);
    const char *files[] = {g_csv};
    REQUIRE_OK(wd_model_export_onnx_values(m, path, files, 1));
    size_t len = 0;
    uint8_t *buf = slurp(path, &len);
    REQUIRE(buf && len > 0);
    const char *names[] = {"values.c", "values.d", "LabelEncoder", "ai.onnx.ml", "keys_strings", "val11", "even", "probability"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int found = 0;
        for (size_t j = 0; !found && j + strlen(names[i]) <= len; j++) found = memcmp(buf + j, names[i], strlen(names[i])) == 0;
        if (!found) printf("  '%s' is not in the file\n", names[i]);
        CHECK(found);
    }
    free(buf);
    // refusals, nothing written: arguments; text that lacks values; a missing file; a model without input format
    unlink(path);
    CHECK(wd_model_export_onnx_values(NULL, path, files, 1) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "model"));
    CHECK(wd_model_export_onnx_values(m, path, NULL, 1) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "files"));
    CHECK(wd_model_export_onnx_values(m, path, files, 0) == WD_ERR_INVALID_ARG && strstr(wd_last_error(), "no text files"));
    snprintf(part, sizeof part, "%s/part.csv", dir);
    FILE *f = fopen(part, "w");
    REQUIRE(f);
    fprintf(f, "click,c,d\n1,val0,odd\n0,val1,even\nbad line\n");   // (a line that does not parse: passed over)
    fclose(f);
    const char *pf[] = {part};
    CHECK(wd_model_export_onnx_values(m, path, pf, 1) == WD_ERR_INVALID_ARG &&
          strstr(wd_last_error(), "slot c: 10 of its 12 vocabulary values"));
    snprintf(none, sizeof none, "%s/none.csv", dir);
    const char *nf[] = {g_csv, none};
    CHECK(wd_model_export_onnx_values(m, path, nf, 2) == WD_ERR_IO && strstr(wd_last_error(), "none.csv"));
    CHECK(file_size(path) == -1 && temps_left(dir) == 0);
    wd_model *s = small_model(0, WD_PRECISION_FP32, NULL);
    REQUIRE(s);
    CHECK(wd_model_export_onnx_values(s, path, files, 1) == WD_ERR_UNSUPPORTED && strstr(wd_last_error(), "no input format"));
    wd_model_destroy(s);
    wd_model_destroy(m);
}

// Event files: TFRecord framing (u64 length, masked CRC32C of it, the Event,
// its masked CRC32C), the first event the file version, then one per scalar.
static void test_tensorboard_writer(void) {
    char dir[300], file[300];
    snprintf(dir, sizeof dir, "%s/tb/a/b", TMP);
    wd_tb *t = NULL;
    REQUIRE_OK(wd_tb_open(dir, &t));   // parents created
    CHECK(strncmp(wd_tb_path(t), dir, strlen(dir)) == 0 && strstr(wd_tb_path(t), "/events.out.tfevents."));
    char path[400];
    snprintf(path, sizeof path, "%s", wd_tb_path(t));
    CHECK_OK(wd_tb_scalar(t, "train/loss", 1, 0.5));
    CHECK_OK(wd_tb_scalar(t, "train/loss", 2, 0.25));
    CHECK_OK(wd_tb_scalar(t, "valid/auc", 2, 0.75));
    CHECK(wd_tb_scalar(t, NULL, 3, 1.0) == WD_ERR_INVALID_ARG);
    CHECK_OK(wd_tb_close(t));
    size_t len = 0;
    uint8_t *buf = slurp(path, &len);
    long n = (long)len;
    REQUIRE(buf && n > 0 && n == file_size(path));
    int records = 0, framing_ok = 1;
    long at = 0;
    while (at + 12 <= n) {
        uint64_t len = wd__get64(buf + at);
        if (wd__get32(buf + at + 8) != wd__tb_masked_crc(buf + at, 8) || at + 16 + (long)len > n) { framing_ok = 0; break; }
        if (wd__get32(buf + at + 12 + len) != wd__tb_masked_crc(buf + at + 12, len)) { framing_ok = 0; break; }
        if (records == 0) framing_ok &= memmem(buf + at + 12, len, "brain.Event:2", 13) != NULL;
        if (records == 3) framing_ok &= memmem(buf + at + 12, len, "valid/auc", 9) != NULL;
        at += 16 + (long)len;
        records++;
    }
    CHECK(framing_ok && at == n && records == 4);
    // TensorFlow's masking: rotate right by 15, add 0xa282ead8
    uint32_t c = wd__crc32c("abc", 3);
    CHECK(wd__tb_masked_crc("abc", 3) == ((c >> 15) | (c << 17)) + 0xa282ead8u && c == 0x364B3FB7u);
    free(buf);
    // a file where the directory should be; NULL arguments
    snprintf(file, sizeof file, "%s/tbfile", TMP);
    FILE *f = fopen(file, "w");
    REQUIRE(f);
    fclose(f);
    CHECK(wd_tb_open(file, &t) == WD_ERR_IO && strstr(wd_last_error(), "tbfile") && t == NULL);
    CHECK(wd_tb_open(NULL, &t) == WD_ERR_INVALID_ARG && wd_tb_open(dir, NULL) == WD_ERR_INVALID_ARG && wd_tb_open("", &t) == WD_ERR_INVALID_ARG);
    CHECK(wd_tb_close(NULL) == WD_OK && wd_tb_path(NULL) == NULL);
}

// Every allocation of an export and of an event file failed in turn: each
// ends in WD_ERR_NOMEM with a message, leaves no file, and leaks nothing (ASan).
static long g_count, g_fail_at;
static void *count_alloc(size_t n, void *u) { (void)u; return ++g_count == g_fail_at ? NULL : malloc(n); }
static void count_free(void *p, void *u) { (void)u; free(p); }
static const wd_allocator HOOK = {count_alloc, count_free, NULL};
static wd_model *g_m;
static char g_out[400], g_tbdir[400];
static wd_status path_export(void) { return wd_model_export_onnx(g_m, g_out); }
static wd_model *g_vm;
static wd_status path_values(void) { const char *f[] = {g_csv}; return wd_model_export_onnx_values(g_vm, g_out, f, 1); }
static wd_status path_tb(void) {   // a failure after the file was made: the host removes it
    wd_tb *t;
    WD__TRY(wd_tb_open(g_tbdir, &t));
    char path[600];
    snprintf(path, sizeof path, "%s", wd_tb_path(t));
    wd_status st = wd_tb_scalar(t, "train/loss", 1, 0.5);
    if (!st) st = wd_tb_scalar(t, "valid/auc", 1, 0.7);
    wd_status s2 = wd_tb_close(t);
    if (st || s2) unlink(path);
    return st ? st : s2;
}
static int dir_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}
static void empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    char p[700];
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') { snprintf(p, sizeof p, "%s/%s", dir, e->d_name); unlink(p); }
    if (d) closedir(d);
}
// Runs fn once counting allocations, then once per k failing the k-th, in an
// empty directory: each run ends in WD_ERR_NOMEM with a message and no file.
static void sweep(const char *name, wd_status (*fn)(void), const char *dir) {
    g_count = 0; g_fail_at = -1;
    wd_set_allocator(&HOOK);
    wd_status st = fn();
    wd_set_allocator(NULL);
    REQUIRE_OK(st);
    long total = g_count, nomem = 0, bad = 0;
    REQUIRE(total > 0);
    for (long k = 1; k <= total; k++) {
        empty_dir(dir);
        g_count = 0; g_fail_at = k;
        wd_set_allocator(&HOOK);
        st = fn();
        wd_set_allocator(NULL);
        if (st == WD_ERR_NOMEM && wd_last_error()[0] && dir_files(dir) == 0) nomem++;
        else { bad++; if (bad < 5) printf("  %s: allocation %ld failed: %s: %s (files left in %s: %d)\n", name, k, wd_status_string(st), wd_last_error(), dir, dir_files(dir)); }
    }
    printf("  %s: %ld allocations, each failed in turn: %ld ended in WD_ERR_NOMEM with nothing left\n", name, total, nomem);
    CHECK(bad == 0 && nomem == total);
}
static void test_allocation_failures(void) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/faults", TMP);
    mkdir(dir, 0755);
    snprintf(g_tbdir, sizeof g_tbdir, "%s/tb", dir);
    mkdir(g_tbdir, 0755);
    snprintf(dir, sizeof dir, "%s/faults/onnx", TMP);
    mkdir(dir, 0755);
    snprintf(g_out, sizeof g_out, "%s/f.onnx", dir);
    g_m = small_model(1, WD_PRECISION_FP32, NULL);
    REQUIRE(g_m);
    sweep("export", path_export, dir);
    sweep("tensorboard", path_tb, g_tbdir);
    wd_model_destroy(g_m);
    snprintf(dir, sizeof dir, "%s/faults/values", TMP);   // the text read back, the string maps
    mkdir(dir, 0755);
    REQUIRE((g_vm = onnx_values_model(dir)) != NULL);
    snprintf(dir, sizeof dir, "%s/faults/values/out", TMP);
    mkdir(dir, 0755);
    snprintf(g_out, sizeof g_out, "%s/v.onnx", dir);
    sweep("export values", path_values, dir);
    wd_model_destroy(g_vm);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(TMP, sizeof TMP, "%s", argv[1]);
    RUN(test_protobuf_encoding);
    RUN(test_onnx_export);
    RUN(test_onnx_values);
    RUN(test_tensorboard_writer);
    RUN(test_allocation_failures);
    return test_summary("test_export");
}
