// wd - the widedeep command-line tool.
//   wd convert   text (Criteo TSV, LibSVM, CSV) -> .wdr records
//   wd inspect   schema, blocks, samples of a .wdr file; --verify checks every block
//   wd gen       synthetic Criteo-shaped data from a planted model
//   wd train     train a Wide&Deep model from .wdr files
//   wd eval      AUC and log loss of a model on .wdr files
//   wd predict   one probability per line, in input order
//   wd dump      raw arrays (labels, dense, ids) for other tools and peers
// Exit status: 0 success, 1 failure (message on stderr), 2 usage error.
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "wd: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'wd help' for usage)\n");
    return 2;
}
static int fail(wd_status st) {
    fprintf(stderr, "wd: error: %s: %s\n", wd_status_string(st), wd_last_error());
    return 1;
}

static const char *USAGE =
    "usage: wd COMMAND [options]\n"
    "\n"
    "  wd convert --format criteo|libsvm|csv [options] -o OUT.wdr IN...\n"
    "      --threads T          parser threads (default 1); output bytes do not depend on T\n"
    "      --block M            samples per block (default 4096)\n"
    "      --level L            zstd level (default 3)\n"
    "      --buckets N          hash buckets per categorical slot (default 1048576)\n"
    "      --slot-buckets A=N,.. per-slot bucket counts\n"
    "      --schema-from F.wdr  take the slot bucket counts from an existing file\n"
    "      --bad-lines error|skip  stop at the first bad line (default) or skip and count\n"
    "    csv:    --label COL --dense COLS --cat COLS [--columns NAMES] [--dense-raw]\n"
    "            --preset avazu   the Avazu layout (click label, 21 categorical columns)\n"
    "            without --columns the first line of the first file is the header; a line\n"
    "            equal to the header is skipped in every file\n"
    "    libsvm: --slots NAME=LO-HI,...  [--dense-range LO-HI]\n"
    "\n"
    "  wd inspect [--verify] FILE.wdr\n"
    "\n"
    "  wd gen -o OUT.wdr --rows N [--seed S] [--first-row R] [--tsv OUT.tsv] [--prob OUT.prob]\n"
    "         [--buckets N] [--max-card C] [--zipf A] [--threads T] [--block M]\n"
    "      --seed fixes the planted model; --first-row R starts at row R of its stream,\n"
    "      so a second call with R = the first call's rows gives held-out data\n"
    "\n"
    "  wd train --train A.wdr[,B.wdr...] [--valid V.wdr[,...]] [options]\n"
    "      --epochs N (1)  --batch B (4096; smaller on small data: >= 100 steps per epoch)\n"
    "      --threads T (cores)  --seed S (0)\n"
    "      --embed-dim E (16)  --hidden 1024,512,256  --optimizer adagrad|adam\n"
    "      --lr-deep X (0.01 adagrad, 0.001 adam)  --lr-wide Y (FTRL alpha, 0.05)\n"
    "      --ftrl-l1 X  --ftrl-l2 X  --ftrl-beta X (all 0)  --pooling sum|mean\n"
    "      --cross AxB,...     crossed slot pairs (slot names or 0-based indexes)\n"
    "      --no-wide | --no-deep   train one part only\n"
    "      --save M.wdm  --resume M.wdm  --checkpoint-every STEPS  --max-steps N\n"
    "      --eval-every STEPS  --log metrics.csv  --no-shuffle\n"
    "      --loader-threads N (1)  --loader-ram BYTES  --device cpu|cuda  --gpus N\n"
    "      --plan   print every device buffer's bytes for these settings and exit\n"
    "\n"
    "  wd eval --model M.wdm [--threads T] DATA.wdr...\n"
    "      ends with: auc=<x> logloss=<y> samples=<n>\n"
    "  wd predict --model M.wdm [--threads T] DATA.wdr... -o PRED.txt\n"
    "\n"
    "  wd dump DATA.wdr OUTDIR   (one-hot schemas) writes OUTDIR/labels.f32 (N),\n"
    "      dense.f32 (N x D), ids.u32 (N x S), little-endian, row-major, and meta.txt\n";

static const char *AVAZU_COLUMNS =
    "id,click,hour,C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,"
    "app_category,device_id,device_ip,device_model,device_type,device_conn_type,C14,C15,"
    "C16,C17,C18,C19,C20,C21";
static const char *AVAZU_CATS =
    "C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,app_category,device_id,"
    "device_ip,device_model,device_type,device_conn_type,C14,C15,C16,C17,C18,C19,C20,C21";

static int parse_long(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static void progress_cb(void *user, int64_t done, int64_t total, int64_t rows) {
    double t0 = *(double *)user, dt = wd__now() - t0;
    fprintf(stderr, "\r  %5.1f%%  %lld rows  %.0f rows/s   ", total ? 100.0 * (double)done / (double)total : 100.0,
            (long long)rows, dt > 0 ? (double)rows / dt : 0.0);
}

static int read_first_line(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    if (!fgets(buf, (int)cap, f)) { fclose(f); return -1; }
    fclose(f);
    buf[strcspn(buf, "\r\n")] = 0;
    return 0;
}

static int cmd_convert(int argc, char **argv) {
    const char *format = NULL, *out = NULL, *label = NULL, *dense = NULL, *cat = NULL, *columns = NULL;
    const char *slots = NULL, *dense_range = NULL, *slot_buckets = NULL, *schema_from = NULL, *preset = NULL;
    long long threads = 1, block = 0, level = 0, buckets = WD_DEFAULT_BUCKETS;
    int skip = 0, dense_raw = 0;
    const char **inputs = (const char **)calloc((size_t)argc + 1, sizeof(char *));
    int ninputs = 0;
    if (!inputs) return fail(wd__fail(WD_ERR_NOMEM, "out of memory"));
    int rc = 2;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] == '-' && a[1] && strcmp(a, "--dense-raw") != 0 && !v) { rc = usage_error("%s needs a value", a); goto done; }
#define OPT(name) (strcmp(a, name) == 0 && (i++, 1))
        if (OPT("--format")) format = v;
        else if (OPT("-o") || OPT("--output")) out = v;
        else if (OPT("--threads")) { if (parse_long(v, 1, 256, &threads)) { rc = usage_error("--threads: '%s' is not 1..256", v); goto done; } }
        else if (OPT("--block")) { if (parse_long(v, 1, WD_MAX_BLOCK_SAMPLES, &block)) { rc = usage_error("--block: '%s' is out of range", v); goto done; } }
        else if (OPT("--level")) { if (parse_long(v, 1, 19, &level)) { rc = usage_error("--level: '%s' is not 1..19", v); goto done; } }
        else if (OPT("--buckets")) { if (parse_long(v, 1, 0xFFFFFFFFll, &buckets)) { rc = usage_error("--buckets: '%s' is out of range", v); goto done; } }
        else if (OPT("--slot-buckets")) slot_buckets = v;
        else if (OPT("--schema-from")) schema_from = v;
        else if (OPT("--bad-lines")) {
            if (strcmp(v, "skip") == 0) skip = 1;
            else if (strcmp(v, "error") == 0) skip = 0;
            else { rc = usage_error("--bad-lines: '%s' is not error or skip", v); goto done; }
        }
        else if (OPT("--label")) label = v;
        else if (OPT("--dense")) dense = v;
        else if (OPT("--cat")) cat = v;
        else if (OPT("--columns")) columns = v;
        else if (OPT("--preset")) preset = v;
        else if (strcmp(a, "--dense-raw") == 0) dense_raw = 1;
        else if (OPT("--slots")) slots = v;
        else if (OPT("--dense-range")) dense_range = v;
        else if (a[0] == '-' && a[1]) { rc = usage_error("convert: unknown option '%s'", a); goto done; }
        else inputs[ninputs++] = a;
#undef OPT
    }
    if (!format) { rc = usage_error("convert: --format is required%s", ""); goto done; }
    if (!out) { rc = usage_error("convert: -o OUT.wdr is required%s", ""); goto done; }
    if (!ninputs) { rc = usage_error("convert: no input files%s", ""); goto done; }
    {
        wd_text_spec *spec = (wd_text_spec *)calloc(1, sizeof *spec);
        if (!spec) { rc = fail(wd__fail(WD_ERR_NOMEM, "out of memory")); goto done; }
        wd_status st = WD_OK;
        if (strcmp(format, "criteo") == 0) wd_text_spec_criteo(spec, (uint32_t)buckets);
        else if (strcmp(format, "csv") == 0) {
            char header[4096];
            if (preset) {
                if (strcmp(preset, "avazu") != 0) { free(spec); rc = usage_error("--preset: unknown preset '%s' (known: avazu)", preset); goto done; }
                columns = columns ? columns : AVAZU_COLUMNS;
                label = label ? label : "click";
                cat = cat ? cat : AVAZU_CATS;
            }
            if (!label) { free(spec); rc = usage_error("csv: --label COL is required%s", ""); goto done; }
            if (columns) snprintf(header, sizeof header, "%s", columns);
            else if (read_first_line(inputs[0], header, sizeof header)) { free(spec); rc = fail(wd__fail(WD_ERR_IO, "%s: cannot read the header line", inputs[0])); goto done; }
            st = wd_text_spec_csv(spec, header, label, dense, cat, (uint32_t)buckets);
            spec->dense_raw = dense_raw;
        } else if (strcmp(format, "libsvm") == 0) {
            if (!slots && !dense_range) { free(spec); rc = usage_error("libsvm: --slots NAME=LO-HI,... or --dense-range LO-HI is required%s", ""); goto done; }
            st = wd_text_spec_libsvm(spec, slots, dense_range, (uint32_t)buckets);
        } else { free(spec); rc = usage_error("--format: '%s' is not criteo, libsvm or csv", format); goto done; }
        if (!st && slot_buckets) st = wd_text_spec_buckets(spec, slot_buckets);
        if (!st && schema_from) {
            wd_reader *r;
            st = wd_reader_open(schema_from, &r);
            if (!st) { st = wd_text_spec_match(spec, wd_reader_schema(r)); wd_reader_close(r); }
        }
        if (st) { free(spec); rc = fail(st); goto done; }
        double t0 = wd__now();
        wd_convert_desc d;
        memset(&d, 0, sizeof d);
        d.spec = spec; d.inputs = inputs; d.ninputs = ninputs; d.output = out;
        d.threads = (int)threads; d.block_samples = (int)block; d.level = (int)level; d.skip_bad_lines = skip;
        if (isatty(2)) { d.progress = progress_cb; d.user = &t0; }
        wd_convert_report rep;
        st = wd_convert(&d, &rep);
        if (isatty(2)) fprintf(stderr, "\n");
        free(spec);
        if (st) { rc = fail(st); goto done; }
        for (int i = 0; i < rep.nbad_shown; i++) fprintf(stderr, "wd: skipped %s\n", rep.bad_where[i]);
        printf("converted rows=%lld bad_rows=%lld blocks=%lld seconds=%.3f rows/s=%.0f MB/s=%.1f bytes_in=%lld bytes_out=%lld bytes/row=%.1f\n",
               (long long)rep.rows, (long long)rep.bad_rows, (long long)rep.blocks, rep.seconds,
               rep.seconds > 0 ? (double)rep.rows / rep.seconds : 0.0, rep.seconds > 0 ? (double)rep.bytes_in / rep.seconds / 1e6 : 0.0,
               (long long)rep.bytes_in, (long long)rep.bytes_out, rep.rows ? (double)rep.bytes_out / (double)rep.rows : 0.0);
        rc = 0;
    }
done:
    free(inputs);
    return rc;
}

static int cmd_inspect(int argc, char **argv) {
    int verify = 0;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--verify") == 0) verify = 1;
        else if (argv[i][0] == '-' && argv[i][1]) return usage_error("inspect: unknown option '%s'", argv[i]);
        else if (path) return usage_error("inspect: one file at a time ('%s')", argv[i]);
        else path = argv[i];
    }
    if (!path) return usage_error("inspect: FILE.wdr is required%s", "");
    wd_reader *r;
    wd_status st = wd_reader_open(path, &r);
    if (st) return fail(st);
    const wd_schema *s = wd_reader_schema(r);
    int64_t nb = wd_reader_nblocks(r), ns = wd_reader_nsamples(r);
    printf("file:     %s\n", path);
    printf("created:  %s\n", wd_reader_created(r));
    printf("schema:   %d dense, %d slots\n", s->ndense, s->nslots);
    for (int k = 0; k < s->nslots; k++)
        printf("  slot %-3d %-20s %10u buckets  %s\n", k, s->slot[k].name, s->slot[k].buckets, s->slot[k].kind == WD_MULTI_HOT ? "multi-hot" : "one-hot");
    printf("blocks:   %lld (first holds %d samples)\n", (long long)nb, nb ? wd_reader_block_samples(r, 0) : 0);
    printf("samples:  %lld\n", (long long)ns);
    printf("bytes:    %lld (%.2f per sample)\n", (long long)wd_reader_file_bytes(r), ns ? (double)wd_reader_file_bytes(r) / (double)ns : 0.0);
    // label mean (and, with --verify, every check) needs every block decoded
    double pos = 0, t0 = wd__now();
    int64_t bad = -1;
    for (int64_t i = 0; i < nb; i++) {
        const wd_batch *b;
        st = wd_reader_block(r, i, &b);
        if (st) { bad = i; break; }
        for (int j = 0; j < b->n; j++) pos += b->label[j];
    }
    double dt = wd__now() - t0;
    if (st) {
        fprintf(stderr, "wd: %s: block %lld of %lld is bad: %s\n", path, (long long)bad, (long long)nb, wd_last_error());
        if (verify) printf("verify:   FAILED at block %lld\n", (long long)bad);
        wd_reader_close(r);
        return 1;
    }
    printf("labels:   mean %.6f\n", ns ? pos / (double)ns : 0.0);
    if (verify) printf("verify:   OK, %lld blocks, %lld samples, decoded at %.2fM samples/s\n", (long long)nb, (long long)ns, dt > 0 ? (double)ns / dt / 1e6 : 0.0);
    wd_reader_close(r);
    return 0;
}

static int cmd_gen(int argc, char **argv) {
    wd_gen_desc d;
    memset(&d, 0, sizeof d);
    long long v;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) return usage_error("gen: '%s' needs a value", a);
        i++;
        if (strcmp(a, "-o") == 0) d.output = val;
        else if (strcmp(a, "--tsv") == 0) d.tsv = val;
        else if (strcmp(a, "--prob") == 0) d.prob = val;
        else if (strcmp(a, "--rows") == 0) { if (parse_long(val, 1, (long long)1 << 40, &v)) return usage_error("--rows: '%s' is out of range", val); d.rows = v; }
        else if (strcmp(a, "--seed") == 0) { if (parse_long(val, 0, INT64_MAX, &v)) return usage_error("--seed: '%s' is not a number", val); d.seed = (uint64_t)v; }
        else if (strcmp(a, "--first-row") == 0) { if (parse_long(val, 0, INT64_MAX, &v)) return usage_error("--first-row: '%s' is not a number", val); d.first_row = v; }
        else if (strcmp(a, "--buckets") == 0) { if (parse_long(val, 1, 0xFFFFFFFFll, &v)) return usage_error("--buckets: '%s' is out of range", val); d.buckets = (uint32_t)v; }
        else if (strcmp(a, "--max-card") == 0) { if (parse_long(val, 1, 0xFFFFFFFFll, &v)) return usage_error("--max-card: '%s' is out of range", val); d.max_card = (uint32_t)v; }
        else if (strcmp(a, "--threads") == 0) { if (parse_long(val, 1, 256, &v)) return usage_error("--threads: '%s' is not 1..256", val); d.threads = (int)v; }
        else if (strcmp(a, "--block") == 0) { if (parse_long(val, 1, WD_MAX_BLOCK_SAMPLES, &v)) return usage_error("--block: '%s' is out of range", val); d.block_samples = (int)v; }
        else if (strcmp(a, "--zipf") == 0) { d.zipf = atof(val); if (!(d.zipf > 0 && d.zipf < 10)) return usage_error("--zipf: '%s' is not in (0,10)", val); }
        else return usage_error("gen: unknown option '%s'", a);
    }
    if (!d.output || d.rows <= 0) return usage_error("gen: -o OUT.wdr and --rows N are required%s", "");
    wd_gen_report rep;
    wd_status st = wd_gen(&d, &rep);
    if (st) return fail(st);
    printf("generated rows=%lld ctr=%.4f oracle_auc=%.4f oracle_logloss=%.4f seconds=%.2f\n",
           (long long)rep.rows, rep.ctr, rep.oracle_auc, rep.oracle_logloss, rep.seconds);
    return 0;
}

// Splits "a,b,c" into at most max pointers into a copy of s (caller frees *mem).
static int split_list(const char *s, const char **out, int max, char **mem) {
    *mem = strdup(s);
    int n = 0;
    for (char *p = strtok(*mem, ","); p && n < max; p = strtok(NULL, ",")) out[n++] = p;
    return n;
}
// "activations 2" for per-layer buffers, the plain name otherwise.
static const char *wd__plan_label(const wd_plan_entry *e) {
    static char buf[64];
    if (e->buf == WD_BUF_ACT || e->buf == WD_BUF_BATCH || e->buf == WD_BUF_GRAD) { snprintf(buf, sizeof buf, "%s %d", wd_buf_name(e->buf), e->index); return buf; }
    return wd_buf_name(e->buf);
}
static int slot_index(const wd_schema *s, const char *name) {
    for (int k = 0; k < s->nslots; k++) if (strcmp(s->slot[k].name, name) == 0) return k;
    char *end;
    long v = strtol(name, &end, 10);
    return (*name && !*end && v >= 0 && v < s->nslots) ? (int)v : -1;
}

typedef struct train_ui { FILE *log; int tty; int64_t last_print_step; double last_print; } train_ui;
static int train_progress(void *user, const wd_progress *p) {
    train_ui *u = (train_ui *)user;
    if (u->log) {
        fprintf(u->log, "%lld,%lld,%lld,%.6f,%.1f,", (long long)p->step, (long long)p->samples, (long long)p->epoch, p->loss, p->elapsed_s);
        if (p->valid_auc == p->valid_auc) fprintf(u->log, "%.6f,%.6f\n", p->valid_auc, p->valid_logloss);
        else fprintf(u->log, ",\n");
    }
    double now = wd__now();
    if (p->valid_auc == p->valid_auc)
        fprintf(stderr, "%sstep %lld epoch %lld: valid auc=%.5f logloss=%.5f\n", u->tty ? "\r\033[K" : "", (long long)p->step, (long long)p->epoch, p->valid_auc, p->valid_logloss);
    else if (u->tty && now - u->last_print > 0.2) {
        u->last_print = now;
        fprintf(stderr, "\r\033[Kstep %lld  epoch %lld  loss %.5f  %.0f samples/s  ETA %.0fs", (long long)p->step, (long long)p->epoch, p->loss, p->samples_per_s, p->eta_s);
    }
    return 0;
}

static int cmd_train(int argc, char **argv) {
    const char *train = NULL, *valid = NULL, *save = NULL, *resume = NULL, *logpath = NULL, *hidden = NULL, *cross = NULL;
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    long long v;
    int model_flags = 0, plan = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int flag = strcmp(a, "--no-wide") == 0 || strcmp(a, "--no-deep") == 0 || strcmp(a, "--no-shuffle") == 0;
        if (strcmp(a, "--plan") == 0) { plan = 1; continue; }
        if (flag) {
            if (a[5] == 'w') { md.no_wide = 1; model_flags++; }
            else if (a[5] == 'd') { md.no_deep = 1; model_flags++; }
            else td.no_shuffle = 1;
            continue;
        }
        if (!val) return usage_error("train: '%s' needs a value", a);
        i++;
#define NUM(name, lo, hi, dst) else if (strcmp(a, name) == 0) { if (parse_long(val, lo, hi, &v)) return usage_error(name ": '%s' is out of range", val); dst = v; }
#define FLT(name, dst) else if (strcmp(a, name) == 0) { char *e; double x = strtod(val, &e); if (*e || !(x >= 0) || x > 1e6) return usage_error(name ": '%s' is not a non-negative number", val); dst = (float)x; model_flags++; }
        if (strcmp(a, "--train") == 0) train = val;
        else if (strcmp(a, "--valid") == 0) valid = val;
        else if (strcmp(a, "--save") == 0) save = val;
        else if (strcmp(a, "--resume") == 0) resume = val;
        else if (strcmp(a, "--log") == 0) logpath = val;
        else if (strcmp(a, "--hidden") == 0) { hidden = val; model_flags++; }
        else if (strcmp(a, "--cross") == 0) { cross = val; model_flags++; }
        NUM("--epochs", 1, 100000, td.epochs)
        NUM("--batch", 1, 1 << 24, td.batch_size)
        NUM("--threads", 1, 256, td.threads)
        NUM("--loader-threads", 1, 256, td.loader_threads)
        NUM("--loader-ram", 1, INT64_MAX, td.loader_ram)
        NUM("--checkpoint-every", 1, INT64_MAX, td.checkpoint_every)
        NUM("--eval-every", 1, INT64_MAX, td.eval_every)
        NUM("--max-steps", 1, INT64_MAX, td.max_steps)
        NUM("--gpus", 1, 1024, td.devices)
        NUM("--seed", 0, INT64_MAX, md.seed)
        NUM("--embed-dim", 1, 1024, md.embed_dim)
        FLT("--lr-deep", md.lr_deep)
        FLT("--lr-wide", md.lr_wide)
        FLT("--ftrl-l1", md.ftrl_l1)
        FLT("--ftrl-l2", md.ftrl_l2)
        FLT("--ftrl-beta", md.ftrl_beta)
        else if (strcmp(a, "--optimizer") == 0) {
            if (strcmp(val, "adagrad") == 0) md.optimizer = WD_ADAGRAD;
            else if (strcmp(val, "adam") == 0) md.optimizer = WD_ADAM;
            else return usage_error("--optimizer: '%s' is not adagrad or adam", val);
            model_flags++;
        } else if (strcmp(a, "--precision") == 0) {
            if (strcmp(val, "fp32") == 0) md.precision = WD_PRECISION_FP32;
            else if (strcmp(val, "bf16") == 0) md.precision = WD_PRECISION_BF16;
            else return usage_error("--precision: '%s' is not fp32 or bf16", val);
            model_flags++;
        } else if (strcmp(a, "--pooling") == 0) {
            if (strcmp(val, "sum") == 0) md.pooling = WD_POOL_SUM;
            else if (strcmp(val, "mean") == 0) md.pooling = WD_POOL_MEAN;
            else return usage_error("--pooling: '%s' is not sum or mean", val);
            model_flags++;
        } else if (strcmp(a, "--device") == 0) {
            if (strcmp(val, "cpu") == 0) td.device = WD_DEVICE_CPU;
            else if (strcmp(val, "cuda") == 0) td.device = WD_DEVICE_CUDA;
            else return usage_error("--device: '%s' is not cpu or cuda", val);
        } else return usage_error("train: unknown option '%s'", a);
#undef NUM
#undef FLT
    }
    if (!train) return usage_error("train: --train FILE.wdr[,...] is required%s", "");
    if (resume && model_flags) return usage_error("train: --resume takes the model settings from the checkpoint; drop the model options%s", "");
    const char *files[1024], *vfiles[1024];
    char *fmem, *vmem = NULL;
    int nf = split_list(train, files, 1024, &fmem), nv = valid ? split_list(valid, vfiles, 1024, &vmem) : 0;
    wd_model *m = NULL;
    wd_status st;
    if (resume) st = wd_model_load(resume, &m);
    else {
        wd_reader *r;
        st = wd_reader_open(files[0], &r);
        if (st) { free(fmem); free(vmem); return fail(st); }
        wd_schema schema = *wd_reader_schema(r);
        wd_reader_close(r);
        md.schema = &schema;
        if (hidden) {
            const char *h[WD_MAX_LAYERS + 1];
            char *hm;
            int nh = split_list(hidden, h, WD_MAX_LAYERS + 1, &hm);
            if (nh > WD_MAX_LAYERS) { free(hm); free(fmem); free(vmem); return usage_error("--hidden: at most %s layers", "8"); }
            for (int l = 0; l < nh; l++) if (parse_long(h[l], 1, 65536, &v)) { free(hm); free(fmem); free(vmem); return usage_error("--hidden: '%s' is not a width", h[l]); } else md.hidden[l] = (int)v;
            free(hm);
        }
        if (cross) {
            const char *c[WD_MAX_CROSSES + 1];
            char *cm;
            int nc = split_list(cross, c, WD_MAX_CROSSES + 1, &cm);
            for (int q = 0; q < nc; q++) {
                char *x = strchr((char *)c[q], 'x');
                if (!x) { free(cm); free(fmem); free(vmem); return usage_error("--cross: '%s' is not AxB", c[q]); }
                *x = 0;
                int a = slot_index(&schema, c[q]), b = slot_index(&schema, x + 1);
                if (a < 0 || b < 0) { free(cm); free(fmem); free(vmem); return usage_error("--cross: unknown slot in '%s'", c[q]); }
                md.cross[q][0] = a; md.cross[q][1] = b;
            }
            md.ncross = nc;
            free(cm);
        }
        if (plan) {   // sizes only: nothing is allocated
            int ranks = td.devices > 0 ? (int)td.devices : 1;
            int batch = (int)((td.batch_size > 0 ? td.batch_size : 4096) / ranks);
            wd_plan p;
            st = wd_plan_from_desc(&md, batch, ranks, &p);
            free(fmem); free(vmem);
            if (st) return fail(st);
            printf("device plan: %d rank(s), batch %d per rank\n", ranks, batch);
            for (int i = 0; i < p.n; i++) if (p.e[i].bytes) printf("  %-28s %14lld bytes  %9.2f MiB\n", wd__plan_label(&p.e[i]), (long long)p.e[i].bytes, p.e[i].bytes / 1048576.0);
            printf("  %-28s %14lld bytes  %9.2f GiB per GPU\n", "total", (long long)p.total, p.total / 1073741824.0);
            return 0;
        }
        st = wd_model_create(&md, &m);
    }
    if (st) { free(fmem); free(vmem); return fail(st); }
    train_ui ui;
    memset(&ui, 0, sizeof ui);
    ui.tty = isatty(2);
    if (logpath) {
        ui.log = fopen(logpath, "w");
        if (!ui.log) { wd_model_destroy(m); free(fmem); free(vmem); return fail(wd__fail(WD_ERR_IO, "%s: cannot create the log", logpath)); }
        fprintf(ui.log, "step,samples,epoch,loss,elapsed_s,valid_auc,valid_logloss\n");
    }
    td.files = files; td.nfiles = nf; td.valid_files = vfiles; td.nvalid = nv;
    td.checkpoint_path = save;
    td.progress = train_progress; td.user = &ui;
    wd_train_report rep;
    st = wd_train(m, &td, &rep);
    if (ui.tty) fprintf(stderr, "\r\033[K");
    if (ui.log) fclose(ui.log);
    if (!st) {
        printf("trained steps=%lld samples=%lld seconds=%.2f samples/s=%.0f last_loss=%.5f", (long long)rep.steps, (long long)rep.samples, rep.seconds, rep.samples_per_s, rep.last_loss);
        if (rep.valid_auc == rep.valid_auc) printf(" valid_auc=%.5f valid_logloss=%.5f", rep.valid_auc, rep.valid_logloss);
        printf("\n");
        if (rep.steps > 0 && rep.train_s > 0) {   // where the step loop's time went
            printf("time per step (rank 0, ms):");
            for (int s = 0; s < WD_STAGE_COUNT; s++) printf(" %s %.3f", wd_stage_name(s), 1e3 * rep.stage_s[s] / (double)rep.steps);
            printf(" | %s\n", rep.engine);
        }
    }
    wd_model_destroy(m);
    free(fmem); free(vmem);
    return st ? fail(st) : 0;
}

// eval and predict share their options.
static int cmd_eval_predict(int argc, char **argv, int predict) {
    const char *model = NULL, *out = NULL, *files[1024];
    int nf = 0;
    long long threads = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] == '-' && a[1]) {
            if (!val) return usage_error("'%s' needs a value", a);
            i++;
            if (strcmp(a, "--model") == 0) model = val;
            else if (predict && (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)) out = val;
            else if (strcmp(a, "--threads") == 0) { if (parse_long(val, 1, 256, &threads)) return usage_error("--threads: '%s' is not 1..256", val); }
            else return usage_error("unknown option '%s'", a);
        } else if (nf < 1024) files[nf++] = a;
    }
    if (!model || !nf || (predict && !out)) return usage_error(predict ? "predict: --model M.wdm, DATA.wdr and -o PRED.txt are required%s" : "eval: --model M.wdm and DATA.wdr are required%s", "");
    wd_model *m;
    wd_status st = wd_model_load(model, &m);
    if (st) return fail(st);
    int64_t total = 0;
    for (int f = 0; f < nf && !st; f++) {
        wd_reader *r;
        st = wd_reader_open(files[f], &r);
        if (!st) { total += wd_reader_nsamples(r); wd_reader_close(r); }
    }
    float *pred = NULL;
    if (!st && predict) {
        pred = (float *)malloc(sizeof(float) * (size_t)(total ? total : 1));
        if (!pred) st = wd__fail(WD_ERR_NOMEM, "out of memory for %lld predictions", (long long)total);
    }
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = files; e.nfiles = nf; e.threads = (int)threads; e.predictions = pred; e.predictions_cap = total;
    wd_metrics mt;
    if (!st) st = wd_evaluate(m, &e, &mt);
    if (!st && predict) {
        FILE *f = fopen(out, "w");
        if (!f) st = wd__fail(WD_ERR_IO, "%s: cannot create", out);
        for (int64_t i = 0; !st && i < total; i++) fprintf(f, "%.7g\n", (double)pred[i]);
        if (f && fclose(f) != 0 && !st) st = wd__fail(WD_ERR_IO, "%s: write failed", out);
        if (!st) printf("predicted %lld samples -> %s\n", (long long)total, out);
    } else if (!st) {
        printf("mean_pred=%.6f ctr=%.6f\n", mt.mean_pred, mt.ctr);
        printf("auc=%.6f logloss=%.6f samples=%lld\n", mt.auc, mt.logloss, (long long)mt.samples);
    }
    free(pred);
    wd_model_destroy(m);
    return st ? fail(st) : 0;
}

static int cmd_dump(int argc, char **argv) {
    if (argc != 2) return usage_error("dump: DATA.wdr OUTDIR%s", "");
    wd_reader *r;
    wd_status st = wd_reader_open(argv[0], &r);
    if (st) return fail(st);
    const wd_schema *s = wd_reader_schema(r);
    for (int k = 0; k < s->nslots; k++)
        if (s->slot[k].kind != WD_ONE_HOT) { wd_reader_close(r); return fail(wd__fail(WD_ERR_UNSUPPORTED, "dump: slot %s is multi-hot", s->slot[k].name)); }
    char path[3][4096];
    const char *names[3] = {"labels.f32", "dense.f32", "ids.u32"};
    FILE *f[3];
    for (int i = 0; i < 3; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", argv[1], names[i]);
        f[i] = fopen(path[i], "wb");
        if (!f[i]) { st = wd__fail(WD_ERR_IO, "%s: cannot create", path[i]); while (i--) fclose(f[i]); wd_reader_close(r); return fail(st); }
    }
    uint32_t *row = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)(s->nslots ? s->nslots : 1));
    for (int64_t i = 0; !st && i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        st = wd_reader_block(r, i, &b);
        if (st) break;
        fwrite(b->label, sizeof(float), (size_t)b->n, f[0]);
        fwrite(b->dense, sizeof(float), (size_t)b->n * (size_t)s->ndense, f[1]);
        for (int j = 0; j < b->n; j++) {
            for (int k = 0; k < s->nslots; k++) row[k] = b->ids[k][j];
            fwrite(row, sizeof(uint32_t), (size_t)s->nslots, f[2]);
        }
    }
    int bad = 0;
    for (int i = 0; i < 3; i++) bad |= fclose(f[i]) != 0;
    if (!st && bad) st = wd__fail(WD_ERR_IO, "%s: write failed", argv[1]);
    if (!st) {   // meta.txt: "samples dense slots" then one bucket count per slot
        char mp[4096];
        snprintf(mp, sizeof mp, "%s/meta.txt", argv[1]);
        FILE *m = fopen(mp, "w");
        if (!m) st = wd__fail(WD_ERR_IO, "%s: cannot create", mp);
        else {
            fprintf(m, "%lld %d %d\n", (long long)wd_reader_nsamples(r), s->ndense, s->nslots);
            for (int k = 0; k < s->nslots; k++) fprintf(m, "%u%c", s->slot[k].buckets, k + 1 < s->nslots ? ' ' : '\n');
            if (fclose(m) != 0) st = wd__fail(WD_ERR_IO, "%s: write failed", mp);
        }
    }
    if (!st) printf("dumped %lld samples, %d dense, %d slots to %s\n", (long long)wd_reader_nsamples(r), s->ndense, s->nslots, argv[1]);
    free(row);
    wd_reader_close(r);
    return st ? fail(st) : 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "convert") == 0) return cmd_convert(argc - 2, argv + 2);
    if (strcmp(cmd, "inspect") == 0) return cmd_inspect(argc - 2, argv + 2);
    if (strcmp(cmd, "gen") == 0) return cmd_gen(argc - 2, argv + 2);
    if (strcmp(cmd, "train") == 0) return cmd_train(argc - 2, argv + 2);
    if (strcmp(cmd, "eval") == 0) return cmd_eval_predict(argc - 2, argv + 2, 0);
    if (strcmp(cmd, "predict") == 0) return cmd_eval_predict(argc - 2, argv + 2, 1);
    if (strcmp(cmd, "dump") == 0) return cmd_dump(argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0) { printf("wd %s\n", WD_VERSION_STRING); return 0; }
    return usage_error("unknown command '%s'", cmd);
}
