// wd - the widedeep command-line tool.
//   wd convert   text (Criteo TSV, LibSVM, CSV; plain, gzip or zstd; or stdin) -> .wdr records
//   wd inspect   schema, blocks, samples of a .wdr file; --verify checks every block
//   wd gen       synthetic Criteo-shaped data from a planted model
//   wd train     train a Wide&Deep model from .wdr files
//   wd eval      AUC and log loss of a model on .wdr files
//   wd predict   one probability per line (id<TAB>probability with ids), in input order
//   wd export    a model for serving: weights and input contract, no optimizer state
//   wd dump      raw arrays (labels, dense, ids) for other tools and peers
//   wd export    the model as an ONNX graph (ONNX Runtime, Triton, TensorRT)
// Exit status: 0 success, 1 failure (message on stderr), 2 usage error,
// 128+N stopped by signal N (130 SIGINT, 143 SIGTERM).
//
// Every command's options are one table (opt below) that drives parsing,
// `wd COMMAND --help` and `wd COMMAND --list-options` (tab-separated, for
// completion scripts and tests/cli.sh). Numbers are checked against the
// table's range: the library reads 0 as "default", so a 0 the user typed is
// refused where it means nothing rather than passed on.
//
// Signals: the library installs no handlers; this tool does. During `wd
// train` and `wd convert` the first SIGINT/SIGTERM/SIGHUP makes the progress
// callback return nonzero: training stops at the next step boundary (wd_train
// saves --save and returns WD_ERR_ABORTED), a conversion stops without output;
// wd then exits 128+N. A second signal exits at once (_exit), after unlinking
// the temporary files ("<path>.tmp-<pid>") the library or wd may be writing.
// Other commands exit at once on the first signal, the same way. A SIGINT or
// SIGHUP that was ignored when wd started (nohup, a background job) stays ignored.
// The handlers are installed before any temporary file can exist (the
// up-front probe of an output's directory included: check_output), and a
// closed fd 0, 1 or 2 is opened on /dev/null first (main).
//
// The tool is a user of the library: it includes widedeep.h for its declarations alone, so that any private
// name (wd__*, WD__*) or field of an opaque type used here does not compile, and compiles the implementation
// at the end of the file (the stb pattern). Tier 3 (internal), deliberately: the device plan that `wd train
// --plan` prints (wd_plan_from_desc, wd_plan, wd_buf_name, WD_BUF_*: what widedeep_cuda.cu allocates, not a
// user's concern), and wd-mpi's end barrier waiting as long as the communicators do (wd_comm_timeout: one
// WD_COMM_TIMEOUT rule).
#ifndef _GNU_SOURCE         // POSIX and GNU names (sigaction, strsignal, ...) for this file and the implementation:
#define _GNU_SOURCE         // before the first system header, as widedeep.h asks for them under IMPLEMENTATION
#endif
#define WIDEDEEP_INTERNAL
#include "../widedeep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__) || defined(__clang__)
#define WD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define WD_PRINTF(a, b)
#endif

// ---- messages -----------------------------------------------------------------------------------
static const char *g_cmd = "";   // the command being run, for the usage hint

WD_PRINTF(1, 2) static int usage_error(const char *fmt, ...) {
    char msg[2 * PATH_MAX + 512];   // two names and the why, said in one write: the ranks of a job share a stderr
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (*g_cmd) fprintf(stderr, "wd: %s\n(run 'wd %s --help' for usage)\n", msg, g_cmd);
    else fprintf(stderr, "wd: %s\n(run 'wd help' for usage)\n", msg);
    return 2;
}
// The last error said (an MPI rank that fails before wd_train aborts the job's communicator with it: mpi_end)
static char g_errline[4096];
static wd_status g_errst;
static int fail(wd_status st) {
    fprintf(stderr, "wd: error: %s: %s\n", wd_status_string(st), wd_last_error());
    g_errst = st;
    snprintf(g_errline, sizeof g_errline, "%s", wd_last_error());
    return 1;
}
WD_PRINTF(1, 2) static int fail_msg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_errline, sizeof g_errline, fmt, ap);
    va_end(ap);
    g_errst = WD_ERR_IO;
    fprintf(stderr, "wd: error: %s\n", g_errline);
    return 1;
}
WD_PRINTF(1, 2) static void warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("wd: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
static double now_s(void) {   // a monotonic clock, in seconds
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---- signals ------------------------------------------------------------------------------------
#define MAX_TEMPS 8
#define TEMP_MAX (PATH_MAX + 48)
static volatile sig_atomic_t g_signal;     // the first signal caught (0: none)
static volatile sig_atomic_t g_graceful;   // 1: the first signal asks the command to stop
static volatile sig_atomic_t g_ntemps;
static char g_temps[MAX_TEMPS][TEMP_MAX];  // unlinked on a hard exit
static char g_stop_msg[2][PATH_MAX + 200];  // what the first signal says, two copies: one is rewritten
static volatile sig_atomic_t g_stop_cur;   //   (set_stop_msg) while the handler may read the other

// Runs on the main thread only: wd starts no thread of its own and the library starts every thread with these
// signals blocked (widedeep.h), so signal fences between the main thread and it suffice.
static void on_signal(int sig) {
    if (g_graceful && !g_signal) {
        g_signal = sig;
        const char *m = g_stop_msg[g_stop_cur];
        ssize_t w = write(2, m, strlen(m));
        (void)w;
        return;
    }
    for (int i = 0; i < g_ntemps; i++) unlink(g_temps[i]);
    static const char bye[] = "\nwd: interrupted: exiting now\n";
    ssize_t w = write(2, bye, sizeof bye - 1);
    (void)w;
    _exit(128 + sig);
}
// The temporary name the library (and wd) write `path` under until it is complete.
static void temp_name(char *buf, size_t n, const char *path) { wd_temp_name(buf, n, path); }
// Registers path's temporary file for removal on a hard exit, before it
// can exist (and after install_signals): the name is whole before the
// handler can see it.
static void add_temp(const char *path) {
    if (!path || strcmp(path, "-") == 0 || g_ntemps >= MAX_TEMPS) return;
    temp_name(g_temps[g_ntemps], TEMP_MAX, path);
    atomic_signal_fence(memory_order_seq_cst);
    g_ntemps++;
}
static void install_signals(int graceful, const char *stop_msg) {
    g_graceful = graceful;
    snprintf(g_stop_msg[g_stop_cur], sizeof g_stop_msg[0], "%s", stop_msg);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) {
        struct sigaction old, sa;
        if (sigs[i] != SIGTERM && sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(sigs[i], &sa, NULL);
    }
}
// A new stop message (say what is true now), made in the copy the handler does not read.
WD_PRINTF(1, 2) static void set_stop_msg(const char *fmt, ...) {
    int next = !g_stop_cur;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_stop_msg[next], sizeof g_stop_msg[0], fmt, ap);
    va_end(ap);
    atomic_signal_fence(memory_order_seq_cst);
    g_stop_cur = next;
}
static const char *signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

// ---- small utilities ----------------------------------------------------------------------------
// A growing array of strings; `mem` (optional) owns the characters.
typedef struct strvec { const char **v; int n, cap; char *mem; } strvec;
static int sv_push(strvec *s, const char *p) {
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 16;
        const char **nv = (const char **)realloc((void *)s->v, sizeof *nv * (size_t)nc);
        if (!nv) return -1;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = p;
    return 0;
}
static void sv_free(strvec *s) {
    free((void *)s->v);
    free(s->mem);
    memset(s, 0, sizeof *s);
}
// Splits a comma-separated list (checked for empty items when parsed) into s.
static int sv_split(strvec *s, const char *list) {
    s->mem = strdup(list);
    if (!s->mem) return -1;
    for (char *p = s->mem;;) {
        char *c = strchr(p, ',');
        if (c) *c = 0;
        if (sv_push(s, p)) return -1;
        if (!c) return 0;
        p = c + 1;
    }
}
static int list_has_empty(const char *s) {
    return !*s || s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,") != NULL;
}
static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}
static int count_items(const char *s) {
    int n = 1;
    for (; *s; s++) n += *s == ',';
    return n;
}

static int refuse_same(const char *out_opt, const char *out, const char *what, const char *in) {
    return usage_error("%s '%s' is %s '%s': an output may not replace an input of the same command", out_opt, out, what,
                       in);
}
// A name an output will be written as, checked before any work starts:
// its last component within NAME_MAX, the whole within PATH_MAX, every
// directory on the way searchable (what rename() onto it needs; the
// temporary name may be a shortened one). Returns 0 or the exit status.
static int check_name(const char *opt_name, const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0 && errno != ENOENT)
        return fail_msg("%s %s: cannot be written: %s", opt_name, path, strerror(errno));
    return 0;
}
// --tensorboard DIR: a directory (made if needed) that can hold the events
// file wd_tb_open names (events.out.tfevents.TIME.HOST.PID.N.widedeep).
static int check_tb_dir(const char *dir) {
    struct stat sb;
    int rc = check_name("--tensorboard", dir);
    if (rc) return rc;
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) return usage_error("--tensorboard '%s' is not a directory", dir);
    char host[64] = "host", name[256];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = 0;
    int n = snprintf(name, sizeof name, "/events.out.tfevents.%lld.%s.%ld.%d.widedeep", (long long)time(NULL), host,
                     (long)getpid(), 99);
    if (strlen(dir) + (size_t)n + 8 >= PATH_MAX)
        return fail_msg("--tensorboard %s: cannot be written: %s (its events file's name)", dir,
                        strerror(ENAMETOOLONG));
    return 0;
}
// An output written under its temporary name and renamed when complete: it
// may not be a directory or a special file (renaming over /dev/null would
// replace the device), its name must be one it can have (check_name), and
// its directory must let us create the temporary file: all checked before
// any work starts. The temporary name is registered for removal on a hard
// exit first: install_signals comes before, so a signal during the probe
// removes it. Returns 0 or the exit status.
static int check_output(const char *opt_name, const char *path) {
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return usage_error("%s '%s' is %s, not a regular file", opt_name, path,
                           S_ISDIR(sb.st_mode) ? "a directory" : "a special file");
    int rc = check_name(opt_name, path);
    if (rc) return rc;
    add_temp(path);
    char tmp[TEMP_MAX];
    temp_name(tmp, sizeof tmp, path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return fail_msg("%s: cannot write there: %s", path, strerror(errno));
    if (fd >= 0) { close(fd); unlink(tmp); }
    return 0;
}
// mkdir -p; 0 or -1 (errno set). *made: where in path the first directory
// it created ends (strlen(path) + 1: none; for unmake_dirs).
static int make_dirs(const char *path, size_t *made) {
    char buf[PATH_MAX];
    size_t n = strlen(path);
    *made = n + 1;
    if (n == 0 || n >= sizeof buf) { errno = ENAMETOOLONG; return -1; }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) == 0) { if (*made > n) *made = (size_t)(p - buf); }
            else if (errno != EEXIST) return -1;
            *p = c;
            if (!c) break;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    if (!S_ISDIR(sb.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}
// Removes the directories make_dirs created (made: its *made), deepest first,
// each only if empty: on a failure's return, not on a hard exit by signal
// (on_signal removes the registered temporary files only; empty
// directories may stay).
static void unmake_dirs(const char *path, size_t made) {
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (made > n || n >= sizeof buf) return;
    memcpy(buf, path, n + 1);
    for (;;) {
        if (rmdir(buf) != 0) return;
        char *slash = strrchr(buf, '/');
        while (slash && slash > buf && slash[-1] == '/') slash--;
        if (!slash || (size_t)(slash - buf) < made) return;
        *slash = 0;
    }
}

// ---- option tables ------------------------------------------------------------------------------
enum { K_FLAG, K_INT, K_SIZE, K_FLOAT, K_CHOICE, K_STR, K_LIST, K_IN, K_INS, K_OUT, K_COUNT };
static const char *const KIND_NAME[K_COUNT] = {"flag", "int", "size", "float", "choice", "string", "list", "input",
                                               "inputs", "output"};
enum { T_INT = 1, T_I64, T_U32, T_U64, T_SIZE, T_F32, T_F64, T_STR };
enum { G_NONE = 0, G_MODEL, G_CSV, G_LIBSVM };
static const char *const GROUP_NAME[] = {"-", "model", "csv", "libsvm"};

typedef struct opt {
    const char *name, *alias;       // "--output", "-o"
    int kind, type;                 // K_*, and the C type it is stored as (T_*)
    const char *meta;               // the value's placeholder; K_CHOICE: its values "a|b"
    long long ilo, ihi;             // K_INT, K_SIZE: the accepted range
    double flo, fhi;                // K_FLOAT: the accepted range,
    int lo_open, hi_open;           //   without flo / fhi themselves when set
    const char *word;               // K_INT: a word also accepted ("all", "auto"),
    long long word_value;           //   stored as this value
    size_t off;                     // where the value goes in the command's arguments
    int group;                      // G_MODEL: refused with --resume/--init-from; G_CSV, G_LIBSVM: format options
    const char *sets;               // what it sets (--list-options)
    const char *example;            // a valid value ({data}, {model}, {out}: a test's files)
    const char *help;
    const char *section;            // printed as a heading before this option in --help
} opt;

typedef struct cmdinfo {
    const char *name, *synopsis, *about;
    const opt *tab;
    int ntab;
    const char *notes;
} cmdinfo;

static void range_text(const opt *o, char *buf, size_t n) {
    buf[0] = 0;
    if (o->kind == K_INT || o->kind == K_SIZE) {
        int len;
        if (o->ihi >= LLONG_MAX / 2) len = snprintf(buf, n, ">= %lld", o->ilo);
        else len = snprintf(buf, n, "%lld..%lld", o->ilo, o->ihi);
        if (o->word && len > 0 && (size_t)len < n) snprintf(buf + len, n - (size_t)len, " or %s", o->word);
    } else if (o->kind == K_FLOAT) {
        snprintf(buf, n, "%s %g and %s %g", o->lo_open ? ">" : ">=", o->flo, o->hi_open ? "<" : "<=", o->fhi);
    }
}
static void print_opt(FILE *f, const opt *o, int indent) {
    char left[160], rg[96];
    int n = snprintf(left, sizeof left, "%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", o->name,
                     o->meta ? " " : "", o->meta ? o->meta : "");
    const int w = 30;
    if (o->section) fprintf(f, "%*s%s\n", indent - 2, "", o->section);
    fprintf(f, "%*s%-*s ", indent, "", w, left);
    if (n > w) fprintf(f, "\n%*s", indent + w + 1, "");
    for (const char *h = o->help; *h; h++) {
        if (*h == '\n') fprintf(f, "\n%*s", indent + w + 1, "");
        else fputc(*h, f);
    }
    range_text(o, rg, sizeof rg);
    if (rg[0]) fprintf(f, " [%s]", rg);
    fputc('\n', f);
}
static void print_notes(FILE *f, const char *notes, int indent) {
    if (!notes) return;
    fprintf(f, "%*s", indent, "");
    for (const char *p = notes; *p; p++) {
        fputc(*p, f);
        if (*p == '\n' && p[1]) fprintf(f, "%*s", indent, "");
    }
}
static void print_command_help(FILE *f, const cmdinfo *c) {
    fprintf(f, "usage: wd %s\n\n%s\n", c->synopsis, c->about);
    if (c->ntab) fputs("\noptions:\n", f);
    for (int i = 0; i < c->ntab; i++) print_opt(f, &c->tab[i], 2);
    fputs("  -h, --help                     this help\n"
          "  --list-options                 the option table, tab-separated: name, kind, values,\n"
          "                                 range, example, what it sets, group\n", f);
    if (c->notes) { fputc('\n', f); print_notes(f, c->notes, 0); }
}
static void list_options(const cmdinfo *c) {
    for (int i = 0; i < c->ntab; i++) {
        const opt *o = &c->tab[i];
        char rg[96];
        range_text(o, rg, sizeof rg);
        printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o->name, KIND_NAME[o->kind], o->meta ? o->meta : "-", rg[0] ? rg : "-",
               o->example ? o->example : "-", o->sets ? o->sets : "-", GROUP_NAME[o->group]);
    }
}
static const opt *find_opt(const cmdinfo *c, const char *a, size_t n) {
    for (int i = 0; i < c->ntab; i++) {
        const opt *o = &c->tab[i];
        if ((strlen(o->name) == n && strncmp(o->name, a, n) == 0) || (o->alias && strlen(o->alias) == n
                                                                      && strncmp(o->alias, a, n) == 0)) return o;
    }
    return NULL;
}

// strict numbers: 0 ok, -1 not a number, -2 out of the type's range
static int parse_int(const char *s, long long *out) {   // an optional '-', then digits
    if (*s != '-' && (*s < '0' || *s > '9')) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end) return -1;
    if (errno == ERANGE) return -2;
    *out = v;
    return 0;
}
static int parse_size(const char *s, long long *out) {   // BYTES with an optional K, M, G or T suffix (x 1024^n)
    if (!*s || *s == ' ' || *s == '+' || *s == '-') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return -1;
    int shift = 0;
    if (*end) {
        const char *u = "KMGT", *q = strchr(u, *end >= 'a' ? *end - 32 : *end);
        if (!q || !*end) return -1;
        shift = 10 * (int)(q - u + 1);
        end++;
        if (*end == 'B' || *end == 'b') end++;   // "64MB"
        if (*end) return -1;
    }
    if (errno == ERANGE || v > ((unsigned long long)LLONG_MAX >> shift)) return -2;
    *out = (long long)(v << shift);
    return 0;
}
static int parse_double(const char *s, double *out) {
    if (!*s || *s == ' ' || *s == '\t' || *s == '+') return -1;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}
// "a|b|c" -> "a, b or c"
static void choices_text(const char *meta, char *buf, size_t n) {
    size_t k = 0;
    int items = 1;
    for (const char *p = meta; *p; p++) items += *p == '|';
    int i = 0;
    for (const char *p = meta; *p && k + 8 < n;) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (i > 0) k += (size_t)snprintf(buf + k, n - k, "%s", i == items - 1 ? " or " : ", ");
        if (k + len + 1 >= n) break;
        memcpy(buf + k, p, len);
        k += len;
        i++;
        if (!e) break;
        p = e + 1;
    }
    buf[k < n ? k : n - 1] = 0;
}
static int choice_index(const char *meta, const char *v) {
    int i = 0;
    size_t vl = strlen(v);
    for (const char *p = meta;; i++) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == vl && strncmp(p, v, len) == 0) return i;
        if (!e) return -1;
        p = e + 1;
    }
}

// Checks and stores one option's value; 0 or the exit status.
static int set_opt(const opt *o, void *args, const char *val) {
    char *p = (char *)args + o->off;
    switch (o->kind) {
    case K_FLAG: *(int *)(void *)p = 1; return 0;
    case K_INT:
    case K_SIZE: {
        long long v = 0;
        if (o->word && strcmp(val, o->word) == 0) v = o->word_value;
        else {
            char rg[96];
            int r = o->kind == K_SIZE ? parse_size(val, &v) : parse_int(val, &v);
            double d;
            if (r == -1 && parse_double(val, &d) == 0)
                return usage_error("%s: '%s' is not a whole number", o->name, val);
            if (r == -1) return usage_error("%s: '%s' is not a number", o->name, val);
            range_text(o, rg, sizeof rg);
            if (r == -2 || v < o->ilo || v > o->ihi)
                return usage_error("%s: '%s' is out of range (%s)", o->name, val, rg);
        }
        switch (o->type) {
        case T_INT: *(int *)(void *)p = (int)v; break;
        case T_I64: *(int64_t *)(void *)p = (int64_t)v; break;
        case T_U32: *(uint32_t *)(void *)p = (uint32_t)v; break;
        case T_U64: *(uint64_t *)(void *)p = (uint64_t)v; break;
        case T_SIZE: *(size_t *)(void *)p = (size_t)v; break;
        default: return fail_msg("internal: option %s has no integer type", o->name);
        }
        return 0;
    }
    case K_FLOAT: {
        double v;
        char rg[96];
        if (parse_double(val, &v)) return usage_error("%s: '%s' is not a number", o->name, val);
        range_text(o, rg, sizeof rg);
        // the bounds hold for the value given and for what the library gets (0.99999999 is 1.0f)
        for (int as_float = 0; as_float < 1 + (o->type == T_F32); as_float++) {
            double x = as_float ? (double)(float)v : v;
            if (x < o->flo || x > o->fhi || (o->lo_open && x == o->flo) || (o->hi_open && x == o->fhi))
                return as_float ? usage_error("%s: '%s' is out of range (%s) as a 32-bit float (%g)", o->name, val, rg,
                                              x)
                                : usage_error("%s: '%s' is out of range (%s)", o->name, val, rg);
        }
        if (o->type == T_F32) *(float *)(void *)p = (float)v;
        else *(double *)(void *)p = v;
        return 0;
    }
    case K_CHOICE: {
        int i = choice_index(o->meta, val);
        if (i < 0) {
            char ch[160];
            choices_text(o->meta, ch, sizeof ch);
            return usage_error("%s: '%s' is not %s", o->name, val, ch);
        }
        *(int *)(void *)p = i;
        return 0;
    }
    case K_LIST:
    case K_INS:
        if (list_has_empty(val))
            return usage_error("%s: '%s' has an empty %s", o->name, val, o->kind == K_INS ? "file name" : "item");
        *(const char **)(void *)p = val;
        return 0;
    case K_IN:
    case K_OUT:
        if (!*val) return usage_error("%s: the file name is empty", o->name);
        if (o->kind == K_OUT && strcmp(val, "-") == 0 && !(o->word && strcmp(o->word, "-") == 0))
            return usage_error("%s: '-' (standard output) cannot take this file: it is written under a temporary name and renamed", o->name);
        *(const char **)(void *)p = val;
        return 0;
    default:
        *(const char **)(void *)p = val;
        return 0;
    }
}

// Parses argv by the command's table into args; positional arguments go to
// pos. Returns -1 when the command should run, else its exit status (0 after
// --help or --list-options, 2 after a usage error). given[i]: option i was set.
static int parse_args(const cmdinfo *c, void *args, int argc, char **argv, strvec *pos, unsigned char *given) {
    g_cmd = c->name;
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { print_command_help(stdout, c); return 0; }
        if (strcmp(argv[i], "--list-options") == 0) { list_options(c); return 0; }
    }
    if (given) memset(given, 0, (size_t)c->ntab);
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || !a[1]) {
            if (sv_push(pos, a)) return fail_msg("out of memory");
            continue;
        }
        if (strcmp(a, "--") == 0) { only_pos = 1; continue; }
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        const opt *o = find_opt(c, a, nl);
        if (!o) return usage_error("%s: unknown option '%.*s'", c->name, (int)nl, a);
        const char *val = NULL;
        if (o->kind == K_FLAG) {
            if (eq) return usage_error("%s takes no value", o->name);
        } else if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) return usage_error("%s needs a value", o->name);
            val = argv[++i];
            if (val[0] == '-' && val[1] && (find_opt(c, val, strcspn(val, "=")) || strcmp(val, "--") == 0))
                return usage_error("%s needs a value (got the option '%s')", o->name, val);
        }
        int rc = set_opt(o, args, val);
        if (rc) return rc;
        if (given) given[o - c->tab] = 1;
    }
    return -1;
}
static int opt_given(const cmdinfo *c, const unsigned char *given, const char *name) {
    for (int i = 0; i < c->ntab; i++) if (strcmp(c->tab[i].name, name) == 0) return given[i];
    return 0;
}
static const opt *first_given(const cmdinfo *c, const unsigned char *given, int group) {
    for (int i = 0; i < c->ntab; i++) if (given[i] && c->tab[i].group == group) return &c->tab[i];
    return NULL;
}

// One line: the out-of-vocabulary share of what `what` read, and the worst slots.
static void print_oov(const char *what, const wd_oov *o, const wd_schema *s) {
    if (!o->values) return;
    int worst[3];
    int n = wd_oov_worst(o, s->nslots, worst, 3);
    printf("oov %s values=%lld oov=%lld share=%.4f worst=", what, (long long)o->values, (long long)o->oov,
           (double)o->oov / (double)o->values);
    for (int i = 0; i < n; i++)
        printf("%s%s:%.4f", i ? "," : "", s->slot[worst[i]].name,
               (double)o->slot_oov[worst[i]] / (double)o->slot_values[worst[i]]);
    printf("%s\n", n ? "" : "-");
}

// ---- the arguments of each command, and their tables --------------------------------------------
typedef struct convert_args {
    int format, preset, skip, dense_raw;
    const char *out, *label, *dense, *cat, *columns, *slots, *dense_range, *slot_buckets, *schema_from;
    const char *delimiter, *id_column, *derive;
    int threads, block, level, min_count, extend_vocab;
    uint32_t buckets, vocab_capacity;
    double progress_every;
} convert_args;
enum { FMT_CRITEO, FMT_LIBSVM, FMT_CSV };
#define CA(f) offsetof(convert_args, f)
static const opt CONVERT_OPTS[] = {
    {.name = "--format", .kind = K_CHOICE, .type = T_INT, .meta = "criteo|libsvm|csv", .off = CA(format),
     .sets = "wd_text_spec_*", .example = "criteo",
     .help = "the text format (required)"},
    {.name = "--output", .alias = "-o", .kind = K_OUT, .type = T_STR, .meta = "OUT.wdr", .off = CA(out),
     .sets = "wd_convert_desc.output",
     .example = "{out}.wdr", .help = "the records to write (required)"},
    {.name = "--threads", .kind = K_INT, .type = T_INT, .meta = "T", .ilo = 1, .ihi = 256, .off = CA(threads),
     .sets = "wd_convert_desc.threads",
     .example = "2", .help = "parser threads (default 1); the output does not depend on T"},
    {.name = "--block", .kind = K_INT, .type = T_INT, .meta = "M", .ilo = 1, .ihi = WD_MAX_BLOCK_SAMPLES,
     .off = CA(block),
     .sets = "wd_convert_desc.block_samples", .example = "1000", .help = "samples per block (default 4096)"},
    {.name = "--level", .kind = K_INT, .type = T_INT, .meta = "L", .ilo = 1, .ihi = 19, .off = CA(level),
     .sets = "wd_convert_desc.level",
     .example = "5", .help = "zstd level (default 3)"},
    {.name = "--buckets", .kind = K_INT, .type = T_U32, .meta = "N", .ilo = 1, .ihi = 0xFFFFFFFFll, .word = "auto",
     .word_value = 0,
     .off = CA(buckets), .sets = "wd_text_spec buckets", .example = "1000",
     .help = "hash buckets per categorical slot; default auto: sized from the\ndata, 16 x its distinct values, at most 1048576 (a first pass)"},
    {.name = "--slot-buckets", .kind = K_STR, .type = T_STR, .meta = "A=N,...", .off = CA(slot_buckets),
     .sets = "wd_text_spec_buckets",
     .example = "C1=100", .help = "bucket counts of named slots"},
    {.name = "--min-count", .kind = K_INT, .type = T_INT, .meta = "K", .ilo = 1, .ihi = INT_MAX, .off = CA(min_count),
     .sets = "wd_convert_desc.min_count", .example = "2",
     .help = "a vocabulary instead of hashing: values seen K times or more get\nids of their own, the others one out-of-vocabulary id (stored in OUT.wdr)"},
    {.name = "--schema-from", .kind = K_IN, .type = T_STR, .meta = "F.wdr|M.wdm", .off = CA(schema_from),
     .sets = "wd_reader_spec, wd_model_spec, wd_text_spec_compare", .example = "{data}",
     .help = "the bucket counts, and vocabulary if any, of a converted file or a\n"
             "model, so that a test set shares the training set's ids; the input\n"
             "format (columns, dense rule, derived slots) must be F's"},
    {.name = "--extend-vocab", .kind = K_FLAG, .type = T_INT, .off = CA(extend_vocab),
     .sets = "wd_convert_desc.extend_vocab",
     .help = "with --schema-from: values F.wdr's vocabulary lacks get the next ids\n(every old id kept) while the slot's table has rows; a day's file\nfor --init-from (see --vocab-capacity)"},
    {.name = "--vocab-capacity", .kind = K_INT, .type = T_U32, .meta = "N", .ilo = 1, .ihi = 0xFFFFFFFEll,
     .off = CA(vocab_capacity),
     .sets = "wd_convert_desc.vocab_capacity", .example = "4096",
     .help = "a new vocabulary's tables hold N values or more: room for the\nvalues later --extend-vocab days bring"},
    {.name = "--bad-lines", .kind = K_CHOICE, .type = T_INT, .meta = "error|skip", .off = CA(skip),
     .sets = "wd_convert_desc.skip_bad_lines",
     .example = "skip", .help = "stop at the first bad line (default) or skip and count them"},
    {.name = "--progress-every", .kind = K_FLOAT, .type = T_F64, .meta = "SECONDS", .flo = 0, .fhi = 86400,
     .lo_open = 1,
     .off = CA(progress_every), .sets = "(progress lines)", .example = "5",
     .help = "seconds between progress lines when stderr is not a terminal\n(default 10)"},
    {.name = "--label", .kind = K_STR, .type = T_STR, .meta = "COL", .off = CA(label), .group = G_CSV,
     .sets = "wd_csv_desc.label",
     .example = "click", .help = "the 0/1 label column (required)", .section = "csv (--format csv):"},
    {.name = "--dense", .kind = K_STR, .type = T_STR, .meta = "COLS", .off = CA(dense), .group = G_CSV,
     .sets = "wd_csv_desc.dense",
     .example = "a", .help = "numeric columns, comma-separated (counts: log1p; see --dense-raw)"},
    {.name = "--cat", .kind = K_STR, .type = T_STR, .meta = "COLS", .off = CA(cat), .group = G_CSV,
     .sets = "wd_csv_desc.cat",
     .example = "b", .help = "categorical columns, comma-separated"},
    {.name = "--columns", .kind = K_STR, .type = T_STR, .meta = "NAMES", .off = CA(columns), .group = G_CSV,
     .sets = "wd_csv_desc.header",
     .example = "a,b", .help =
         "the column names, comma-separated, for files without a header line\n(needed for standard input and compressed files)"},
    {.name = "--delimiter", .kind = K_STR, .type = T_STR, .meta = "C", .off = CA(delimiter), .group = G_CSV,
     .sets = "wd_csv_desc.delimiter",
     .example = ";", .help = "the field separator: one character, or 'tab' (default ',')"},
    {.name = "--id-column", .kind = K_STR, .type = T_STR, .meta = "COL", .off = CA(id_column), .group = G_CSV,
     .sets = "wd_csv_desc.id, wd_convert_desc.ids_output", .example = "id",
     .help = "copy this column to OUT.wdr.ids, one line per converted row, then\n"
             "a line binding it to OUT.wdr; wd predict then writes id<TAB>probability"},
    {.name = "--derive", .kind = K_STR, .type = T_STR, .meta = "NAME=COL[a:b],...", .off = CA(derive), .group = G_CSV,
     .sets = "wd_csv_desc.derive", .example = "h=hour[6:8]",
     .help = "derived categorical slots: bytes a..b-1 of COL, or\nNAME=weekday(COL[a:b]), the day of the week of a YYMMDD or YYYYMMDD date"},
    {.name = "--preset", .kind = K_CHOICE, .type = T_INT, .meta = "avazu", .off = CA(preset), .group = G_CSV,
     .sets = "(the options below)",
     .example = "avazu",
     .help = "Avazu: label click, its 21 categorical columns, and\nhour_of_day=hour[6:8],day_of_week=weekday(hour[0:6]) (options given win)"},
    {.name = "--dense-raw", .kind = K_FLAG, .type = T_INT, .off = CA(dense_raw), .group = G_CSV,
     .sets = "wd_csv_desc.dense_raw",
     .help = "dense values are finite floats taken as they are (not counts)"},
    {.name = "--slots", .kind = K_STR, .type = T_STR, .meta = "NAME=LO-HI,...", .off = CA(slots), .group = G_LIBSVM,
     .sets = "wd_text_spec_libsvm", .example = "u=0-9", .help =
         "feature index ranges, each a multi-hot slot (id = index - LO)",
     .section = "libsvm (--format libsvm):"},
    {.name = "--dense-range", .kind = K_STR, .type = T_STR, .meta = "LO-HI", .off = CA(dense_range), .group = G_LIBSVM,
     .sets = "wd_text_spec_libsvm", .example = "100-101", .help =
         "feature indexes that become dense columns (index - LO) with their value"},
};

typedef struct gen_args { wd_gen_desc d; } gen_args;
#define GA(f) offsetof(gen_args, d.f)
static const opt GEN_OPTS[] = {
    {.name = "--output", .alias = "-o", .kind = K_OUT, .type = T_STR, .meta = "OUT.wdr", .off = GA(output),
     .sets = "wd_gen_desc.output",
     .example = "{out}.wdr", .help = "the records to write (required)"},
    {.name = "--rows", .kind = K_INT, .type = T_I64, .meta = "N", .ilo = 1, .ihi = 1ll << 40, .off = GA(rows),
     .sets = "wd_gen_desc.rows",
     .example = "1000", .help = "rows to draw (required)"},
    {.name = "--seed", .kind = K_INT, .type = T_U64, .meta = "S", .ilo = 0, .ihi = LLONG_MAX, .off = GA(seed),
     .sets = "wd_gen_desc.seed",
     .example = "7", .help = "fixes the planted model and the row stream (default 0)"},
    {.name = "--first-row", .kind = K_INT, .type = T_I64, .meta = "R", .ilo = 0, .ihi = LLONG_MAX, .off = GA(first_row),
     .sets = "wd_gen_desc.first_row", .example = "1000", .help =
         "start at row R of the stream: held-out rows of the same model"},
    {.name = "--tsv", .kind = K_OUT, .type = T_STR, .meta = "OUT.tsv", .off = GA(tsv), .sets = "wd_gen_desc.tsv",
     .example = "{out}.tsv",
     .help = "also write the rows as Criteo TSV"},
    {.name = "--prob", .kind = K_OUT, .type = T_STR, .meta = "OUT.prob", .off = GA(prob), .sets = "wd_gen_desc.prob",
     .example = "{out}.prob",
     .help = "each row's true click probability (default OUT.wdr.prob)"},
    {.name = "--buckets", .kind = K_INT, .type = T_U32, .meta = "N", .ilo = 1, .ihi = 0xFFFFFFFFll, .off = GA(buckets),
     .sets = "wd_gen_desc.buckets",
     .example = "1000", .help = "cap on the buckets of a slot (default 1048576; 16 x its cardinality)"},
    {.name = "--max-card", .kind = K_INT, .type = T_U32, .meta = "C", .ilo = 1, .ihi = 0xFFFFFFFFll,
     .off = GA(max_card), .sets = "wd_gen_desc.max_card",
     .example = "100", .help = "cap on each slot's cardinality (default 1048576)"},
    {.name = "--zipf", .kind = K_FLOAT, .type = T_F64, .meta = "A", .flo = 0, .fhi = 10, .lo_open = 1, .hi_open = 1,
     .off = GA(zipf),
     .sets = "wd_gen_desc.zipf", .example = "1.2", .help = "the ids' Zipf exponent (default 1.1)"},
    {.name = "--threads", .kind = K_INT, .type = T_INT, .meta = "T", .ilo = 1, .ihi = 256, .off = GA(threads),
     .sets = "wd_gen_desc.threads",
     .example = "2", .help = "threads (default 1); the output does not depend on T"},
    {.name = "--block", .kind = K_INT, .type = T_INT, .meta = "M", .ilo = 1, .ihi = WD_MAX_BLOCK_SAMPLES,
     .off = GA(block_samples),
     .sets = "wd_gen_desc.block_samples", .example = "1000", .help = "samples per block (default 4096)"},
};

typedef struct train_args {
    wd_model_desc md;
    wd_train_desc td;
    const char *train, *valid, *save, *resume, *init_from, *log, *hidden, *cross, *tensorboard;
    double progress_every;
    int plan;
} train_args;
#define TA(f) offsetof(train_args, f)
static const opt TRAIN_OPTS[] = {
    {.name = "--train", .kind = K_INS, .type = T_STR, .meta = "A.wdr[,B.wdr...]", .off = TA(train),
     .sets = "wd_train_desc.files",
     .example = "{data}", .help = "the training files (required)"},
    {.name = "--valid", .kind = K_INS, .type = T_STR, .meta = "V.wdr[,...]", .off = TA(valid),
     .sets = "wd_train_desc.valid_files",
     .example = "{data}", .help = "validation files: AUC and log loss after every epoch"},
    {.name = "--epochs", .kind = K_INT, .type = T_INT, .meta = "N", .ilo = 1, .ihi = 100000, .off = TA(td.epochs),
     .sets = "wd_train_desc.epochs",
     .example = "2", .help = "passes over the training files (default 1; --resume: up to epoch N)"},
    {.name = "--batch", .kind = K_INT, .type = T_INT, .meta = "B", .ilo = 1, .ihi = 1 << 24, .off = TA(td.batch_size),
     .sets = "wd_train_desc.batch_size", .example = "64",
     .help = "the global batch (default 4096, halved down to 32 until an epoch\nhas >= 100 steps; --resume: the checkpoint's)"},
    {.name = "--threads", .kind = K_INT, .type = T_INT, .meta = "T", .ilo = 1, .ihi = 256, .off = TA(td.threads),
     .sets = "wd_train_desc.threads",
     .example = "2", .help = "CPU worker threads (default: the online cores)"},
    {.name = "--loader-threads", .kind = K_INT, .type = T_INT, .meta = "N", .ilo = 1, .ihi = 256,
     .off = TA(td.loader_threads),
     .sets = "wd_train_desc.loader_threads", .example = "2", .help =
         "loader threads per rank (default 1 on the CPU, cores / GPUs on GPUs)"},
    {.name = "--loader-ram", .kind = K_SIZE, .type = T_SIZE, .meta = "BYTES", .ilo = 1, .ihi = LLONG_MAX,
     .off = TA(td.loader_ram),
     .sets = "wd_train_desc.loader_ram", .example = "64M", .help =
         "decoded bytes in flight per rank (suffix K, M, G; default: the loader's)"},
    {.name = "--device", .kind = K_CHOICE, .type = T_INT, .meta = "cpu|cuda", .off = TA(td.device),
     .sets = "wd_train_desc.device",
     .example = "cuda", .help = "where to train (cuda: the CUDA build, wd-cuda; default cpu)"},
    {.name = "--gpus", .kind = K_INT, .type = T_INT, .meta = "N", .ilo = 1, .ihi = 256, .word = "all",
     .word_value = WD_ALL_GPUS,
     .off = TA(td.devices), .sets = "wd_train_desc.devices", .example = "2",
         .help = "GPUs for --device cuda (and --plan), one rank each (default 1)"},
    {.name = "--gpu-fp32", .kind = K_FLAG, .type = T_INT, .off = TA(td.cuda.fp32), .sets = "wd_train_desc.cuda.fp32",
     .help = "--device cuda: the MLP's products in full fp32, as on the CPU\n(default TF32 tensor cores for an fp32 model)"},
    {.name = "--max-steps", .kind = K_INT, .type = T_I64, .meta = "N", .ilo = 1, .ihi = LLONG_MAX,
     .off = TA(td.max_steps),
     .sets = "wd_train_desc.max_steps", .example = "1", .help = "stop after global step N"},
    {.name = "--save", .kind = K_OUT, .type = T_STR, .meta = "M.wdm", .off = TA(save),
     .sets = "wd_train_desc.checkpoint_path",
     .example = "{out}.wdm", .help =
         "the checkpoint: written at the end, every --checkpoint-every steps\nand when interrupted"},
    {.name = "--checkpoint-every", .kind = K_INT, .type = T_I64, .meta = "STEPS", .ilo = 1, .ihi = LLONG_MAX,
     .off = TA(td.checkpoint_every),
     .sets = "wd_train_desc.checkpoint_every", .example = "1", .help = "also save every STEPS steps (needs --save)"},
    {.name = "--resume", .kind = K_IN, .type = T_STR, .meta = "M.wdm", .off = TA(resume), .sets = "wd_model_load",
     .example = "{model}",
     .help = "continue a checkpoint's run on the same training files (its model\nsettings and batch size; bit-exact)"},
    {.name = "--init-from", .kind = K_IN, .type = T_STR, .meta = "M.wdm", .off = TA(init_from),
     .sets = "wd_model_load, wd_model_new_run",
     .example = "{model}", .help =
         "start a new run (epoch 0, any files and batch size) from a model's\nweights and optimizer state"},
    {.name = "--eval-every", .kind = K_INT, .type = T_I64, .meta = "STEPS", .ilo = 1, .ihi = LLONG_MAX,
     .off = TA(td.eval_every),
     .sets = "wd_train_desc.eval_every", .example = "1", .help = "also validate every STEPS steps (needs --valid)"},
    {.name = "--early-stop", .kind = K_INT, .type = T_INT, .meta = "N", .ilo = 1, .ihi = 1000000,
     .off = TA(td.early_stop),
     .sets = "wd_train_desc.early_stop", .example = "2", .help =
         "stop after N validations in a row without a better AUC (needs --valid)"},
    {.name = "--keep-best", .kind = K_FLAG, .type = T_INT, .off = TA(td.keep_best), .sets = "wd_train_desc.keep_best",
     .help = "--save holds the model of the best validation AUC\n(needs --valid and --save; not with --checkpoint-every)"},
    {.name = "--no-shuffle", .kind = K_FLAG, .type = T_INT, .off = TA(td.no_shuffle),
     .sets = "wd_train_desc.no_shuffle",
     .help = "read blocks and samples in file order"},
    {.name = "--log", .kind = K_OUT, .type = T_STR, .meta = "FILE.csv", .off = TA(log), .sets = "(progress callback)",
     .example = "{out}.csv",
     .help = "a CSV line per step (a validation fills its step's last two\ncolumns), flushed line by line, elapsed_s to the ms:\nstep,samples,epoch,loss,elapsed_s,valid_auc,valid_logloss;\n"
             "FILE.jsonl: a JSON object per step, validation and epoch\n(the --tensorboard scalars, by their tags)"},
    {.name = "--tensorboard", .kind = K_STR, .type = T_STR, .meta = "DIR", .off = TA(tensorboard),
     .sets = "wd_tb_open (progress callback)",
     .example = "{out}.tb", .help =
         "TensorBoard scalars (an events file in DIR, created if needed):\nloss, validation AUC and log loss, samples/s, learning rates,\nstage times, data wait share"},
    {.name = "--progress-every", .kind = K_FLOAT, .type = T_F64, .meta = "SECONDS", .flo = 0, .fhi = 86400,
     .lo_open = 1,
     .off = TA(progress_every), .sets = "(progress callback)", .example = "5",
     .help = "seconds between progress lines when stderr is not a terminal\n(default 10)"},
    {.name = "--plan", .kind = K_FLAG, .type = T_INT, .off = TA(plan), .sets = "wd_plan_from_desc",
     .help = "print every GPU buffer's bytes for these settings and exit"},
    {.name = "--seed", .kind = K_INT, .type = T_U64, .meta = "S", .ilo = 0, .ihi = LLONG_MAX, .off = TA(md.seed),
     .group = G_MODEL,
     .sets = "wd_model_desc.seed", .example = "7", .help = "initialisation and shuffling seed (default 0)",
     .section = "model (taken from the checkpoint with --resume and --init-from):"},
    {.name = "--embed-dim", .kind = K_INT, .type = T_INT, .meta = "E", .ilo = 1, .ihi = 1024, .off = TA(md.embed_dim),
     .group = G_MODEL,
     .sets = "wd_model_desc.embed_dim", .example = "8", .help = "embedding width (default 16)"},
    {.name = "--hidden", .kind = K_LIST, .type = T_STR, .meta = "W1,W2,...", .off = TA(hidden), .group = G_MODEL,
     .sets = "wd_model_desc.hidden",
     .example = "8,4", .help = "MLP widths, 1..65536 each, at most 8 layers (default 1024,512,256)"},
    {.name = "--optimizer", .kind = K_CHOICE, .type = T_INT, .meta = "adagrad|adam", .off = TA(md.optimizer),
     .group = G_MODEL,
     .sets = "wd_model_desc.optimizer", .example = "adam", .help = "the deep part's optimizer (default adagrad)"},
    {.name = "--lr-deep", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1e6, .lo_open = 1,
     .off = TA(md.lr_deep), .group = G_MODEL,
     .sets = "wd_model_desc.lr_deep", .example = "0.02", .help =
         "deep learning rate (default 0.01 adagrad, 0.001 adam)"},
    {.name = "--lr-wide", .kind = K_FLOAT, .type = T_F32, .meta = "Y", .flo = 0, .fhi = 1e6, .lo_open = 1,
     .off = TA(md.lr_wide), .group = G_MODEL,
     .sets = "wd_model_desc.lr_wide", .example = "0.1", .help = "FTRL alpha of the wide part (default 0.05)"},
    {.name = "--ftrl-l1", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1e6, .off = TA(md.ftrl_l1),
     .group = G_MODEL,
     .sets = "wd_model_desc.ftrl_l1", .example = "0.1", .help = "FTRL L1 (default 0)"},
    {.name = "--ftrl-l2", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1e6, .off = TA(md.ftrl_l2),
     .group = G_MODEL,
     .sets = "wd_model_desc.ftrl_l2", .example = "0.1", .help = "FTRL L2 (default 0)"},
    {.name = "--ftrl-beta", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1e6, .off = TA(md.ftrl_beta),
     .group = G_MODEL,
     .sets = "wd_model_desc.ftrl_beta", .example = "1", .help = "FTRL beta (default 0)"},
    {.name = "--adagrad-init", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1e6,
     .off = TA(md.adagrad_init), .group = G_MODEL,
     .sets = "wd_model_desc.adagrad_init", .example = "0.1", .help = "initial Adagrad accumulator (default 0)"},
    {.name = "--adam-beta1", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1, .lo_open = 1,
     .hi_open = 1, .off = TA(md.adam_beta1),
     .group = G_MODEL, .sets = "wd_model_desc.adam_beta1", .example = "0.8", .help = "Adam beta1 (default 0.9)"},
    {.name = "--adam-beta2", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1, .lo_open = 1,
     .hi_open = 1, .off = TA(md.adam_beta2),
     .group = G_MODEL, .sets = "wd_model_desc.adam_beta2", .example = "0.99", .help = "Adam beta2 (default 0.999)"},
    {.name = "--adam-eps", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1, .lo_open = 1,
     .off = TA(md.adam_eps), .group = G_MODEL,
     .sets = "wd_model_desc.adam_eps", .example = "1e-6", .help = "Adam epsilon (default 1e-8)"},
    {.name = "--emb-init", .kind = K_FLOAT, .type = T_F32, .meta = "X", .flo = 0, .fhi = 1000, .lo_open = 1,
     .off = TA(md.emb_init), .group = G_MODEL,
     .sets = "wd_model_desc.emb_init", .example = "0.01", .help = "embeddings start uniform in [-X, X] (default 0.05)"},
    {.name = "--pooling", .kind = K_CHOICE, .type = T_INT, .meta = "sum|mean", .off = TA(md.pooling), .group = G_MODEL,
     .sets = "wd_model_desc.pooling", .example = "mean", .help =
         "multi-hot slots: the sum or mean of their embeddings (default sum)"},
    {.name = "--cross", .kind = K_LIST, .type = T_STR, .meta = "AxB,...", .off = TA(cross), .group = G_MODEL,
     .sets = "wd_model_desc.cross",
     .example = "0x1", .help =
         "crossed one-hot slot pairs of the wide part (slot names or 0-based\nindexes; at most 32)"},
    {.name = "--cross-buckets", .kind = K_INT, .type = T_U32, .meta = "N", .ilo = 1, .ihi = 0xFFFFFFFFll,
     .off = TA(md.cross_buckets),
     .group = G_MODEL, .sets = "wd_model_desc.cross_buckets", .example = "1000",
         .help = "rows of each cross's wide table (default 1048576)"},
    {.name = "--no-wide", .kind = K_FLAG, .type = T_INT, .off = TA(md.no_wide), .group = G_MODEL,
     .sets = "wd_model_desc.no_wide",
     .help = "no wide part (the deep part alone)"},
    {.name = "--no-deep", .kind = K_FLAG, .type = T_INT, .off = TA(md.no_deep), .group = G_MODEL,
     .sets = "wd_model_desc.no_deep",
     .help = "no deep part (logistic regression)"},
    {.name = "--precision", .kind = K_CHOICE, .type = T_INT, .meta = "fp32|bf16", .off = TA(md.precision),
     .group = G_MODEL,
     .sets = "wd_model_desc.precision", .example = "bf16",
     .help = "the MLP's matrix products (bf16: oneDNN on a CPU with AVX512-BF16\nor AMX, cuBLASLt with --device cuda; default fp32)"},
};

typedef struct eval_args { const char *model, *out, *ids; int threads, no_ids; } eval_args;
#define EA(f) offsetof(eval_args, f)
static const opt EVAL_OPTS[] = {
    {.name = "--model", .kind = K_IN, .type = T_STR, .meta = "M.wdm", .off = EA(model), .sets = "wd_model_load",
     .example = "{model}",
     .help = "the model (required)"},
    {.name = "--threads", .kind = K_INT, .type = T_INT, .meta = "T", .ilo = 1, .ihi = 256, .off = EA(threads),
     .sets = "wd_eval_desc.threads",
     .example = "2", .help = "CPU worker threads (default: the online cores)"},
};
static const opt PREDICT_OPTS[] = {
    {.name = "--model", .kind = K_IN, .type = T_STR, .meta = "M.wdm", .off = EA(model), .sets = "wd_model_load",
     .example = "{model}",
     .help = "the model (required)"},
    {.name = "--output", .alias = "-o", .kind = K_OUT, .type = T_STR, .meta = "PRED.txt", .word = "-", .off = EA(out),
     .sets = "(the output)",
     .example = "{out}.txt", .help = "where the predictions go (required; '-': standard output)"},
    {.name = "--ids", .kind = K_INS, .type = T_STR, .meta = "IDS[,...]", .off = EA(ids), .sets = "(the output)",
     .example = "{data}.ids",
     .help = "one ids file per DATA.wdr, one id per sample (default:\nDATA.wdr.ids when every DATA.wdr has one)"},
    {.name = "--no-ids", .kind = K_FLAG, .type = T_INT, .off = EA(no_ids), .sets = "(the output)",
     .help = "probabilities only, even when DATA.wdr.ids exist"},
    {.name = "--threads", .kind = K_INT, .type = T_INT, .meta = "T", .ilo = 1, .ihi = 256, .off = EA(threads),
     .sets = "wd_eval_desc.threads",
     .example = "2", .help = "CPU worker threads (default: the online cores)"},
};

typedef struct export_args { int onnx; const char *values; } export_args;
static const opt EXPORT_OPTS[] = {
    {.name = "--onnx", .kind = K_FLAG, .type = T_INT, .off = offsetof(export_args, onnx),
     .sets = "wd_model_export_onnx", .help = "write OUT as an ONNX graph instead of a serving .wdm"},
    {.name = "--values-from", .kind = K_INS, .type = T_STR, .meta = "TEXT[,TEXT...]",
     .off = offsetof(export_args, values), .sets = "wd_model_export_onnx_values", .example = "{data}",
     .help = "with --onnx: the graph maps raw strings of the slots with a vocabulary\n"
             "(input values.<slot>), whose values it reads back from these text\n"
             "files (the ones the vocabulary was converted from)"},
};

typedef struct inspect_args { int verify; } inspect_args;
static const opt INSPECT_OPTS[] = {
    {.name = "--verify", .kind = K_FLAG, .type = T_INT, .off = offsetof(inspect_args, verify),
     .sets = "wd_reader_verify",
     .help = "decode and check every block; exit 1 naming the first bad one\n(a model is checked whole by loading it)"},
};

// K_CHOICE stores the index of the value: the tables list each enum in order
_Static_assert(WD_DEVICE_CPU == 0 && WD_DEVICE_CUDA == 1 && WD_ADAGRAD == 0 && WD_ADAM == 1 && WD_POOL_SUM == 0
               && WD_POOL_MEAN == 1 &&
               WD_PRECISION_FP32 == 0 && WD_PRECISION_BF16 == 1, "a choice table no longer matches its enum");
#define NOPTS(t) ((int)(sizeof t / sizeof t[0]))
enum { C_CONVERT, C_INSPECT, C_GEN, C_TRAIN, C_EVAL, C_PREDICT, C_EXPORT, C_DUMP, C_COUNT };
static const cmdinfo CMDS[C_COUNT] = {
    {"convert", "convert --format criteo|libsvm|csv [options] -o OUT.wdr IN...",
     "Converts text (Criteo TSV, LibSVM, CSV) into .wdr records.", CONVERT_OPTS, NOPTS(CONVERT_OPTS),
     "Inputs may be gzip- or zstd-compressed (told by their first bytes); '-' reads standard\n"
     "input. Standard input and pipes are read once: give them --buckets N (or --schema-from),\n"
     "and --columns for csv.\n"
     "Criteo TSV: label, 13 counts, 26 categorical columns. Counts become log1p(x) (-log1p(-x)\n"
     "below 0, 0 when missing); categorical strings hash into their slot's buckets, an empty\n"
     "field like the empty string.\n"
     "csv: without --columns the first line of the first input is the header; a line equal to\n"
     "it is skipped in every file. The Avazu preset writes no ids by default (a training set\n"
     "needs none): add --id-column id for a file whose predictions you submit.\n"
     "The output is written as OUT.wdr.tmp-PID and renamed when complete: a failure or an\n"
     "interrupt (exit 130 on SIGINT) leaves nothing. Without --id-column an OUT.wdr.ids left\n"
     "by an earlier conversion to OUT.wdr is removed (it no longer matches).\n"},
    {"inspect", "inspect [--verify] FILE.wdr|M.wdm",
     "Prints the input format, the schema (each vocabulary's fingerprint), blocks, samples, label\n"
     "mean and bytes per sample of a .wdr file; of a model (.wdm), its input format, layers,\n"
     "position (step, epoch), training files' fingerprint, each slot's rows and vocabulary (size,\n"
     "rows left, fingerprint) and its bytes by part (wide, embeddings, MLP, optimizer state).",
     INSPECT_OPTS, NOPTS(INSPECT_OPTS), NULL},
    {"gen", "gen -o OUT.wdr --rows N [options]",
     "Draws synthetic Criteo-shaped data from a planted model and prints its oracle AUC.", GEN_OPTS, NOPTS(GEN_OPTS),
     "--seed fixes the planted model; --first-row R starts at row R of its stream, so a second\n"
     "call with R = the first call's rows gives held-out data. Converting --tsv with\n"
     "--schema-from OUT.wdr reproduces OUT.wdr sample for sample.\n"},
    {"train", "train --train A.wdr[,B.wdr...] [--valid V.wdr[,...]] [options]",
     "Trains a Wide&Deep model; ends with: trained steps=... samples=... engine=...", TRAIN_OPTS, NOPTS(TRAIN_OPTS),
     "--resume continues a run on the files it was written for; to train a saved model on new\n"
     "data use --init-from. Progress: a live line on a terminal, else a line every\n"
     "--progress-every seconds, and a line per validation. The --log CSV has one line per step\n"
     "(written when the next one starts); a validation fills its step's last two columns,\n"
     "which are empty otherwise; valid_auc is empty when it is undefined (one class).\n"
     "Without --save the model is thrown away (wd warns).\n"
     "Interrupt (Ctrl-C) or SIGTERM: training stops after the current step, --save is written,\n"
     "and wd exits 130 (SIGINT) or 143 (SIGTERM); a second one exits at once, keeping the\n"
     "previous checkpoint.\n"},
    {"eval", "eval --model M.wdm [options] DATA.wdr...",
     "AUC and log loss of a model; ends with: auc=<x> logloss=<y> samples=<n>.", EVAL_OPTS, NOPTS(EVAL_OPTS),
     "Data without samples is an error; an AUC that is undefined (one class) prints as nan.\n"},
    {"predict", "predict --model M.wdm [options] DATA.wdr... -o PRED.txt",
     "One probability per sample, in input order, printed with 9 significant\ndigits (each float exactly).",
         PREDICT_OPTS, NOPTS(PREDICT_OPTS),
     "With ids (wd convert --id-column writes DATA.wdr.ids) each line is id<TAB>probability;\n"
     "an ids file that is not the one its conversion wrote beside DATA.wdr (another file's,\n"
     "or reordered, cut or edited since) is refused before any work.\n"
     "PRED.txt is written under a temporary name and renamed when complete.\n"},
    {"export", "export [--onnx [--values-from TEXT,...]] M.wdm OUT",
     "Writes a model for serving: its weights and input contract without optimizer state;\n"
     "with --onnx, an ONNX graph (opset 17) for ONNX Runtime, Triton or TensorRT.", EXPORT_OPTS, NOPTS(EXPORT_OPTS),
     "OUT.wdm loads for eval, predict and wd_model_spec (the input format and vocabularies it\n"
     "was trained with) and cannot train (train M.wdm).\n"
     "ONNX inputs, N samples: dense float [N, D] (no input when D = 0); per one-hot slot\n"
     "ids.<slot> int64 [N]; per multi-hot slot ids.<slot> int64 [T] (every sample's ids in turn)\n"
     "and offsets.<slot> int64 [N] (where each sample's start); per crossed pair c cross<c>\n"
     "int64 [N] = wd_cross_hash(id_p, id_q, c, cross buckets). Output: probability float [N],\n"
     "as wd predict gives. Ids are those wd convert assigns (wd dump writes them); the graph's\n"
     "doc strings name every input. Refused: bf16 models, slot names empty or repeated, > 2 GiB.\n"
     "With --values-from (opset 18), a one-hot slot with a vocabulary takes values.<slot> string\n"
     "[N] instead (raw values, mapped in the graph), and crosses are computed in the graph; hashed\n"
     "slots and dense features stay as above.\n"
     "The model comes first, the output second, with or without --onnx.\n"
     "Either output is written under a temporary name and renamed when complete.\n"},
    {"dump", "dump DATA.wdr OUTDIR",
     "Raw arrays for other tools (one-hot schemas): creates OUTDIR and writes labels.f32 (N),\n"
     "dense.f32 (N x D), ids.u32 (N x S), little-endian, row-major, and meta.txt\n"
     "('samples dense slots', then each slot's bucket count).", NULL, 0, NULL},
};

static void print_overview(FILE *f, int all) {
    fputs("usage: wd COMMAND [options]\n\n", f);
    for (int i = 0; i < C_COUNT; i++) {
        const cmdinfo *c = &CMDS[i];
        fprintf(f, "  wd %s\n", c->synopsis);
        if (!all) continue;
        fprintf(f, "      ");
        for (const char *p = c->about; *p; p++) { fputc(*p, f); if (*p == '\n') fputs("      ", f); }
        fputc('\n', f);
        for (int k = 0; k < c->ntab; k++) print_opt(f, &c->tab[k], 6);
        fputc('\n', f);
    }
    fputs(all ? "" : "\n", f);
    fputs("  wd COMMAND --help    one command's options and notes\n"
          "  wd --version         the version and the build's GEMM engine\n"
          "exit status: 0 success, 1 failure, 2 usage error, 128+N stopped by signal N (130: Ctrl-C)\n", f);
}

// ---- convert --------------------------------------------------------------------------------------
static const char *AVAZU_COLUMNS =
    "id,click,hour,C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,"
    "app_category,device_id,device_ip,device_model,device_type,device_conn_type,C14,C15,"
    "C16,C17,C18,C19,C20,C21";
static const char *AVAZU_CATS =
    "C1,banner_pos,site_id,site_domain,site_category,app_id,app_domain,app_category,device_id,"
    "device_ip,device_model,device_type,device_conn_type,C14,C15,C16,C17,C18,C19,C20,C21";
static const char *AVAZU_DERIVE = "hour_of_day=hour[6:8],day_of_week=weekday(hour[0:6])";

typedef struct conv_ui { double t0, every, last_line; int tty; } conv_ui;
static int convert_progress(void *user, int64_t done, int64_t total, int64_t rows) {
    conv_ui *u = (conv_ui *)user;
    double now = now_s(), dt = now - u->t0, rate = dt > 0 ? (double)rows / dt : 0.0;
    char where[64];
    if (total > 0) snprintf(where, sizeof where, "%5.1f%%", 100.0 * (double)done / (double)total);
    else snprintf(where, sizeof where, "%.1f MB", (double)done / 1e6);
    if (u->tty) fprintf(stderr, "\r  %s  %lld rows  %.0f rows/s   ", where, (long long)rows, rate);
    else if (now - u->last_line >= u->every) {
        u->last_line = now;
        fprintf(stderr, "wd: convert: %s of the input, %lld rows, %.0f rows/s\n", where, (long long)rows, rate);
    }
    return g_signal != 0;
}
// Standard input, a pipe or a device: an input that can be read once.
static int is_stream(const char *path) {
    struct stat sb;
    return strcmp(path, "-") == 0 || (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode));
}
// 0: the first line of path into buf; -1 unreadable; -2 compressed; -3 longer than cap; -4 empty
static int read_first_line(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    errno = 0;
    if (!fgets(buf, (int)cap, f)) { int e = errno; fclose(f); errno = e; return e ? -1 : -4; }
    fclose(f);
    const unsigned char *u = (const unsigned char *)buf;
    if ((u[0] == 0x1f && u[1] == 0x8b) || (u[0] == 0x28 && u[1] == 0xb5 && u[2] == 0x2f && u[3] == 0xfd)) return -2;
    size_t n = strcspn(buf, "\r\n");
    if (!buf[n] && n + 1 == cap) return -3;
    buf[n] = 0;
    return 0;
}

// --schema-from F (a .wdr, or a .wdm: told by its first bytes): spec takes
// F's bucket counts and vocabulary, and must map raw input as F's spec does
// (wd_text_spec_compare: format, columns, dense rule, derived slots).
static wd_status take_schema(const char *path, wd_text_spec *spec) {
    wd_text_spec want;
    memset(&want, 0, sizeof want);
    char magic[4] = "";
    FILE *f = fopen(path, "rb");
    int model = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "\x89WDM", 4) == 0;
    if (f) fclose(f);
    wd_status st;
    if (model) {
        wd_model *m;
        st = wd_model_load(path, &m);
        if (!st) { st = wd_model_spec(m, &want); wd_model_destroy(m); }
    } else {
        wd_reader *r;
        st = wd_reader_open(path, &r);
        if (!st) { st = wd_reader_spec(r, &want); wd_reader_close(r); }
    }
    wd_status mt = WD_OK;
    if (!st) {
        mt = wd_text_spec_match(spec, &want.schema);
        if (!mt && want.vocab) mt = wd_text_spec_vocab(spec, want.vocab);
        st = wd_text_spec_compare(spec, &want, 0);   // names the first difference, also one wd_text_spec_match refused
    }
    wd_text_spec_free(&want);
    if (!st) return mt;
    char msg[1024];   // within the 1023 bytes wd_last_error() keeps
    snprintf(msg, sizeof msg, "--schema-from %.400s: %.600s", path, wd_last_error());
    wd_set_last_error(msg);
    return st;
}

static int cmd_convert(int argc, char **argv) {
    const cmdinfo *c = &CMDS[C_CONVERT];
    convert_args a;
    memset(&a, 0, sizeof a);
    a.format = a.preset = -1;
    unsigned char given[NOPTS(CONVERT_OPTS)];
    strvec in = {0};
    wd_text_spec *spec = NULL;
    char ids_path[PATH_MAX + 8] = "";
    int rc = parse_args(c, &a, argc, argv, &in, given);
    if (rc >= 0) goto done;
    rc = 2;
    if (a.format < 0) { usage_error("convert: --format is required"); goto done; }
    if (!a.out) { usage_error("convert: -o OUT.wdr is required"); goto done; }
    if (!in.n) { usage_error("convert: no input files"); goto done; }
    for (int i = 0; i < c->ntab; i++) {
        const opt *o = &c->tab[i];
        if (given[i] && o->group == G_CSV && a.format != FMT_CSV) {
            usage_error("%s is an option of --format csv", o->name); goto done; }
        if (given[i] && o->group == G_LIBSVM && a.format != FMT_LIBSVM) {
            usage_error("%s is an option of --format libsvm", o->name); goto done; }
    }
    if (a.format == FMT_LIBSVM && opt_given(c, given, "--buckets")) {
        usage_error("--buckets: libsvm slots take their size from their index ranges"); goto done; }
    if (a.format == FMT_LIBSVM && a.min_count) {
        usage_error("--min-count: libsvm slots hold indexes, not values to count"); goto done; }
    if (a.schema_from && opt_given(c, given, "--buckets")) {
        usage_error("--buckets and --schema-from both set the bucket counts: choose one"); goto done; }
    if (a.schema_from && a.slot_buckets) {
        usage_error("--slot-buckets and --schema-from both set the bucket counts: choose one"); goto done; }
    if (a.schema_from && a.min_count && !a.extend_vocab) {
        usage_error("--min-count builds a new vocabulary, --schema-from takes F.wdr's ids: choose one (or --extend-vocab: K counts for new values)"); goto done; }
    if (a.extend_vocab && !a.schema_from) {
        usage_error("--extend-vocab extends the vocabulary of --schema-from F.wdr: give it"); goto done; }
    if (a.vocab_capacity && a.schema_from) {
        usage_error("--vocab-capacity sizes a new vocabulary's tables; --schema-from keeps F.wdr's"); goto done; }
    if (a.vocab_capacity && a.format == FMT_LIBSVM) {
        usage_error("--vocab-capacity: libsvm slots hold indexes, not values: no vocabulary"); goto done; }
    int nstdin = 0;
    const char *stream = NULL;   // an input that can be read once: standard input, a pipe
    for (int i = 0; i < in.n; i++) {
        nstdin += strcmp(in.v[i], "-") == 0;
        if (!stream && is_stream(in.v[i])) stream = strcmp(in.v[i], "-") == 0 ? "standard input" : in.v[i];
    }
    if (nstdin > 1) { usage_error("convert: standard input ('-') can be read once"); goto done; }
    if (stream && (a.min_count || a.extend_vocab)) {
        usage_error("convert: %s needs a first pass over the input, and %s can be read once",
                    a.extend_vocab ? "--extend-vocab" : "--min-count", stream); goto done; }
    if (stream && a.format != FMT_LIBSVM && !a.buckets && !a.schema_from && !a.slot_buckets) {
        usage_error("convert: %s can be read once: give --buckets N or --schema-from F.wdr (sizing the tables from the data needs a first pass)", stream);
        goto done;
    }
    if (a.id_column) snprintf(ids_path, sizeof ids_path, "%s.ids", a.out);
    // no output may replace an input
    for (int i = 0; i < in.n; i++) {
        if (wd_same_file(a.out, in.v[i])) { refuse_same("-o", a.out, "the input", in.v[i]); goto done; }
        if (ids_path[0] && wd_same_file(ids_path, in.v[i])) {
            refuse_same("--id-column's output", ids_path, "the input", in.v[i]); goto done; }
    }
    if (a.schema_from && wd_same_file(a.out, a.schema_from)) {
        refuse_same("-o", a.out, "the --schema-from file", a.schema_from); goto done; }
    // handlers first: a signal from here on removes every temporary file (check_output's probes too)
    install_signals(1, "\nwd: stopping the conversion (no output is written); interrupt again to quit at once\n");
    if ((rc = check_output("-o", a.out)) != 0) goto done;
    if (ids_path[0] && (rc = check_output("--id-column's output", ids_path)) != 0) goto done;
    rc = 2;

    spec = (wd_text_spec *)calloc(1, sizeof *spec);
    if (!spec) { rc = fail_msg("out of memory"); goto done; }
    wd_status st = WD_OK;
    if (a.format == FMT_CRITEO) wd_text_spec_criteo(spec, a.buckets);
    else if (a.format == FMT_CSV) {
        if (a.preset == 0) {   // avazu; options given win
            if (!a.columns) a.columns = AVAZU_COLUMNS;
            if (!a.label) a.label = "click";
            if (!a.cat) a.cat = AVAZU_CATS;
            if (!a.derive) a.derive = AVAZU_DERIVE;
        }
        if (!a.label) { usage_error("csv: --label COL is required"); goto done; }
        char delim = ',';
        if (a.delimiter) {
            if (strcmp(a.delimiter, "tab") == 0 || strcmp(a.delimiter, "\\t") == 0) delim = '\t';
            else if (strlen(a.delimiter) == 1 && a.delimiter[0] != '"' && a.delimiter[0] != '\r'
                     && a.delimiter[0] != '\n') delim = a.delimiter[0];
            else { usage_error("--delimiter: '%s' is not one character (other than a quote) or 'tab'", a.delimiter);
                  goto done; }
        }
        char header[4096];
        if (a.columns) {   // comma-separated names; the header line they stand for uses the delimiter
            if (strlen(a.columns) >= sizeof header) {
                usage_error("--columns: longer than %d bytes", (int)sizeof header - 1); goto done; }
            strcpy(header, a.columns);
            for (char *p = header; *p; p++) if (*p == ',') *p = delim;
        } else if (is_stream(in.v[0])) {
            usage_error("csv: the header line of %s is not read ahead (it can be read once): give --columns NAMES",
                        strcmp(in.v[0], "-") == 0 ? "standard input" : in.v[0]);
            goto done;
        } else {
            int r = read_first_line(in.v[0], header, sizeof header);
            if (r == -2) {
                usage_error("csv: the header line of the compressed file '%s' is not read ahead: give --columns NAMES",
                            in.v[0]); goto done; }
            if (r == -3) { rc = fail_msg("%s: the header line is longer than %d bytes", in.v[0],
                                         (int)sizeof header - 1); goto done; }
            if (r == -4) { rc = fail_msg("%s: empty file: no header line", in.v[0]); goto done; }
            if (r) { rc = fail_msg("%s: cannot read the header line: %s", in.v[0], strerror(errno)); goto done; }
        }
        wd_csv_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.header = header; cd.delimiter = delim; cd.label = a.label; cd.dense = a.dense; cd.cat = a.cat;
        cd.id = a.id_column; cd.derive = a.derive; cd.buckets = a.buckets; cd.dense_raw = a.dense_raw;
        st = wd_text_spec_csv_desc(spec, &cd);
    } else {
        if (!a.slots && !a.dense_range) {
            usage_error("libsvm: --slots NAME=LO-HI,... or --dense-range LO-HI is required"); goto done; }
        st = wd_text_spec_libsvm(spec, a.slots, a.dense_range, 0);
    }
    if (!st && a.slot_buckets) st = wd_text_spec_buckets(spec, a.slot_buckets);
    if (!st && a.schema_from) st = take_schema(a.schema_from, spec);
    if (st) { rc = fail(st); goto done; }

    conv_ui ui;
    memset(&ui, 0, sizeof ui);
    ui.t0 = ui.last_line = now_s();
    ui.tty = isatty(2);
    ui.every = a.progress_every > 0 ? a.progress_every : 10.0;
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = spec; d.inputs = in.v; d.ninputs = in.n; d.output = a.out;
    d.threads = a.threads; d.block_samples = a.block; d.level = a.level; d.skip_bad_lines = a.skip;
    d.min_count = a.min_count; d.ids_output = ids_path[0] ? ids_path : NULL;
    d.vocab_capacity = a.vocab_capacity; d.extend_vocab = a.extend_vocab;
    d.progress = convert_progress; d.user = &ui;
    wd_convert_report rep;
    st = wd_convert(&d, &rep);
    if (ui.tty) fprintf(stderr, "\r\033[K");
    if (g_signal) {
        if (st && st != WD_ERR_ABORTED) fail(st);
        if (!st) fprintf(stderr, "wd: interrupted by %s after the conversion finished: %s is complete\n",
                         signal_name(g_signal), a.out);
        else fprintf(stderr, "wd: interrupted by %s: the conversion stopped; %s was not written\n",
                     signal_name(g_signal), a.out);
        rc = 128 + g_signal;
        goto done;
    }
    if (st) { rc = fail(st); goto done; }
    for (int i = 0; i < rep.nbad_shown; i++) fprintf(stderr, "wd: skipped %s\n", rep.bad_where[i]);
    printf("converted rows=%lld bad_rows=%lld blocks=%lld seconds=%.3f rows/s=%.0f MB/s=%.1f bytes_in=%lld bytes_out=%lld bytes/row=%.1f\n",
           (long long)rep.rows, (long long)rep.bad_rows, (long long)rep.blocks, rep.seconds,
           rep.seconds > 0 ? (double)rep.rows / rep.seconds : 0.0,
           rep.seconds > 0 ? (double)rep.bytes_in / rep.seconds / 1e6 : 0.0,
           (long long)rep.bytes_in, (long long)rep.bytes_out,
           rep.rows ? (double)rep.bytes_out / (double)rep.rows : 0.0);
    print_oov("converted", &rep.oov, &spec->schema);
    if (a.extend_vocab) {
        int64_t added = 0, full = 0;
        int grown = 0;
        for (int k = 0; k < spec->schema.nslots; k++) {
            added += rep.vocab_added[k]; full += rep.vocab_no_room[k]; grown += rep.vocab_added[k] > 0; }
        printf("vocabulary extended new_ids=%lld slots=%d no_room=%lld\n", (long long)added, grown, (long long)full);
        for (int k = 0; k < spec->schema.nslots; k++)
            if (rep.vocab_no_room[k])
                warn("slot %s: its table is full (%lld values in %u rows): %lld new values stay out of vocabulary; convert the first day with a larger --vocab-capacity",
                     spec->schema.slot[k].name, (long long)rep.vocab_size[k], rep.buckets[k],
                     (long long)rep.vocab_no_room[k]);
    }
    if (ids_path[0]) printf("ids -> %s\n", ids_path);
    else {   // an ids file of an earlier conversion to this name no longer matches it
        char stale[PATH_MAX + 8];
        struct stat sb;
        snprintf(stale, sizeof stale, "%s.ids", a.out);
        int is_input = 0;
        for (int i = 0; i < in.n; i++) is_input |= wd_same_file(stale, in.v[i]);
        if (!is_input && stat(stale, &sb) == 0 && S_ISREG(sb.st_mode) && unlink(stale) == 0)
            fprintf(stderr, "wd: removed %s: it held the ids of the file this conversion replaced\n", stale);
    }
    rc = 0;
done:
    wd_text_spec_free(spec);
    free(spec);
    sv_free(&in);
    return rc;
}

// ---- inspect ----------------------------------------------------------------------------------------
// 1 if path starts with the .wdm magic (a model, not records)
static int is_model_file(const char *path) {
    char head[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    return got == sizeof head && memcmp(head, WD_WDM_MAGIC, sizeof head) == 0;
}
// inspect M.wdm: what the model is, where its training stopped, what its input contract is, its bytes by part
static int inspect_model(const char *path, int verify) {
    wd_model *m;
    wd_status st = wd_model_load(path, &m);   // checks every section's CRC32C and every value
    if (st) return fail(st);
    const wd_model_desc *d = wd_model_description(m);
    const wd_schema *s = wd_model_schema(m);
    wd_model_info info;
    wd_model_get_info(m, &info);
    wd_text_spec sp, *spec = NULL;   // the input format, where one is recorded (WD_ERR_UNSUPPORTED: none)
    if (info.contract && (st = wd_model_spec(m, &sp)) != WD_ERR_UNSUPPORTED) {
        if (st) { wd_model_destroy(m); return fail(st); }
        spec = &sp;
    }
    const wd_vocab *v = info.vocab;
    int64_t epoch, batch, step;
    wd_model_position(m, &epoch, &batch, &step);
    static const char *fmt_names[3] = {"criteo (TSV)", "libsvm", "csv"};
    printf("file:     %s\n", path);
    printf("model:    %s%s\n", info.weights_only ? "exported for serving (weights only, no optimizer state)"
                                                : "a checkpoint (weights and optimizer state)",
           wd_model_after_error(m) ? ", saved by wd train after an error" : "");
    if (!info.contract)
        printf("input:    no input contract recorded (saved before .wdm version 3, or never trained)\n");
    else if (!spec) printf("input:    no input format (its training files carried none); vocabularies recorded\n");
    else
        printf("input:    %s%s%s\n", fmt_names[spec->format],
               spec->format != WD_FMT_CSV ? "" : spec->dense_raw ? ", dense values as they are"
                                                                 : ", dense counts through log1p",
               spec->nderived ? ", derived slots" : "");
    printf("layers:   %d dense, %d slots, embed dim %d, hidden", s->ndense, s->nslots, d->embed_dim);
    int nh = 0;   // the hidden layers: the description's widths up to the first 0 (none without the deep part)
    for (; !d->no_deep && nh < WD_MAX_LAYERS && d->hidden[nh] > 0; nh++)
        printf("%c%d", nh ? ',' : ' ', d->hidden[nh]);
    if (!nh) printf(" none");
    if (d->ncross) printf(", %d crosses (%u buckets)", d->ncross, d->cross_buckets);
    printf(", %s%s, optimizer %s, pooling %s, precision %s\n", d->no_wide ? "no wide part" : "wide",
           d->no_deep ? ", no deep part" : "", d->optimizer == WD_ADAM ? "adam" : "adagrad",
           d->pooling == WD_POOL_MEAN ? "mean" : "sum", d->precision == WD_PRECISION_BF16 ? "bf16" : "fp32");
    printf("position: step %lld, epoch %lld, batch %lld of it, batch size %lld\n", (long long)step,
           (long long)epoch, (long long)batch, (long long)info.batch_size);
    if (info.data_fp)
        printf("training files: fingerprint %016llx (the files of the run that reached this position)\n",
               (unsigned long long)info.data_fp);
    else printf("training files: none recorded (saved before .wdm version 2, never trained on files, --init-from)\n");
    for (int k = 0; k < s->nslots; k++) {   // per slot: its table, its vocabulary's size and the rows it has left
        int64_t n = wd_vocab_size(v, k);
        char voc[120] = "hashed";
        if (!info.contract) snprintf(voc, sizeof voc, "no vocabulary recorded");
        else if (spec && spec->format == WD_FMT_LIBSVM) snprintf(voc, sizeof voc, "feature indexes");
        else if (n >= 0)
            snprintf(voc, sizeof voc, "vocabulary %lld values, %lld rows left, fingerprint %016llx", (long long)n,
                     (long long)s->slot[k].buckets - 1 - (long long)n, (unsigned long long)wd_vocab_fingerprint(v, k));
        printf("  slot %-3d %-20s %10u rows  %s  %s\n", k, s->slot[k].name, s->slot[k].buckets,
               s->slot[k].kind == WD_MULTI_HOT ? "multi-hot" : "one-hot", voc);
    }
    printf("bytes:    wide %lld, embeddings %lld, MLP %lld, optimizer state %lld%s; total %lld\n",
           (long long)info.wide_bytes, (long long)info.embedding_bytes, (long long)info.mlp_bytes,
           (long long)info.state_bytes, info.weights_only ? " (none in an export)" : "",
           (long long)(info.wide_bytes + info.embedding_bytes + info.mlp_bytes + info.state_bytes));
    if (verify) printf("verify:   OK (every section's checksum and value checked by loading)\n");
    if (spec) wd_text_spec_free(spec);
    wd_model_destroy(m);
    return 0;
}
static int cmd_inspect(int argc, char **argv) {
    const cmdinfo *c = &CMDS[C_INSPECT];
    inspect_args a = {0};
    strvec pos = {0};
    int rc = parse_args(c, &a, argc, argv, &pos, NULL);
    if (rc < 0 && pos.n != 1)
        rc = usage_error(pos.n ? "inspect: one file at a time ('%s')" : "inspect: FILE.wdr or M.wdm is required%s",
                         pos.n ? pos.v[1] : "");
    const char *path = pos.n ? pos.v[0] : NULL;
    if (rc >= 0) { sv_free(&pos); return rc; }
    if (is_model_file(path)) { rc = inspect_model(path, a.verify); sv_free(&pos); return rc; }
    wd_reader *r;
    wd_status st = wd_reader_open(path, &r);
    if (st) { sv_free(&pos); return fail(st); }
    const wd_schema *s = wd_reader_schema(r);
    const wd_vocab *v = wd_reader_vocab(r);
    int64_t nb = wd_reader_nblocks(r), ns = wd_reader_nsamples(r);
    printf("file:     %s\n", path);
    printf("created:  %s\n", wd_reader_created(r));
    static const char *fmt_names[3] = {"criteo (TSV)", "libsvm", "csv"};
    wd_text_spec sp;   // the input format the file records (WD_ERR_UNSUPPORTED: none)
    if ((st = wd_reader_spec(r, &sp)) != WD_OK && st != WD_ERR_UNSUPPORTED) {
        wd_reader_close(r); sv_free(&pos); return fail(st); }
    if (!st) {
        printf("input:    %s%s%s\n", fmt_names[sp.format],
               sp.format == WD_FMT_CSV ? (sp.dense_raw ? ", dense values as they are" : ", dense counts through log1p")
                                       : "",
               sp.nderived ? ", derived slots" : "");
        wd_text_spec_free(&sp);
    } else
        printf("input:    no input format stored "
               "(written by wd_writer or wd gen, or converted before .wdr version 3)\n");
    printf("schema:   %d dense, %d slots%s\n", s->ndense, s->nslots, v ? " (vocabulary ids)" : "");
    for (int k = 0; k < s->nslots; k++) {   // the fingerprint: two files' ids agree where theirs do
        uint64_t fp = wd_vocab_fingerprint(v, k);
        char fps[40] = "";
        if (fp) snprintf(fps, sizeof fps, "  vocabulary %016llx", (unsigned long long)fp);
        printf("  slot %-3d %-20s %10u buckets  %s%s\n", k, s->slot[k].name, s->slot[k].buckets,
               s->slot[k].kind == WD_MULTI_HOT ? "multi-hot" : "one-hot", fps);
    }
    printf("blocks:   %lld (first holds %d samples)\n", (long long)nb, nb ? wd_reader_block_samples(r, 0) : 0);
    printf("samples:  %lld\n", (long long)ns);
    printf("bytes:    %lld (%.2f per sample)\n", (long long)wd_reader_file_bytes(r),
           ns ? (double)wd_reader_file_bytes(r) / (double)ns : 0.0);
    const wd_vocab *voc = wd_reader_vocab(r);
    if (voc) {   // ids of their own for these slots' values: 8 bytes a value in the header
        long long values = 0;
        int covered = 0;
        for (int k = 0; k < s->nslots; k++) if (wd_vocab_size(voc, k) >= 0) {
            values += wd_vocab_size(voc, k); covered++; }
        // the header's vocabulary: an i64 count a slot, then a u64 a value (widedeep.h's file format)
        printf("vocabulary: %lld values in %d of %d slots (%lld bytes of the header)\n", values, covered, s->nslots,
               8 * ((long long)s->nslots + values));
    }
    // the label mean (and, with --verify, every check) needs every block decoded
    double pos_labels = 0, t0 = now_s();
    int64_t bad = -1;
    for (int64_t i = 0; i < nb; i++) {
        const wd_batch *b;
        st = wd_reader_block(r, i, &b);
        if (st) { bad = i; break; }
        for (int j = 0; j < b->n; j++) pos_labels += b->label[j];
    }
    double dt = now_s() - t0;
    if (st) {   // a block that does not decode is bad; out of memory, or a setting, is said as it is
        if (st == WD_ERR_CORRUPT || st == WD_ERR_IO || st == WD_ERR_FORMAT || st == WD_ERR_NUMERIC)
            fprintf(stderr, "wd: %s: block %lld of %lld is bad: %s\n", path, (long long)bad, (long long)nb,
                    wd_last_error());
        else fprintf(stderr, "wd: %s: block %lld of %lld cannot be read: %s: %s\n", path, (long long)bad, (long long)nb,
                     wd_status_string(st), wd_last_error());
        if (a.verify) printf("verify:   FAILED at block %lld\n", (long long)bad);
        wd_reader_close(r);
        sv_free(&pos);
        return 1;
    }
    printf("labels:   mean %.6f\n", ns ? pos_labels / (double)ns : 0.0);
    if (a.verify) printf("verify:   OK, %lld blocks, %lld samples, decoded at %.2fM samples/s\n", (long long)nb,
                         (long long)ns, dt > 0 ? (double)ns / dt / 1e6 : 0.0);
    wd_reader_close(r);
    sv_free(&pos);
    return 0;
}

// ---- gen ----------------------------------------------------------------------------------------------
static int cmd_gen(int argc, char **argv) {
    const cmdinfo *c = &CMDS[C_GEN];
    gen_args a;
    memset(&a, 0, sizeof a);
    strvec pos = {0};
    int rc = parse_args(c, &a, argc, argv, &pos, NULL);
    if (rc < 0 && pos.n) rc = usage_error("gen: unexpected argument '%s'", pos.v[0]);
    sv_free(&pos);
    if (rc >= 0) return rc;
    wd_gen_desc *d = &a.d;
    if (!d->output || d->rows <= 0) return usage_error("gen: -o OUT.wdr and --rows N are required");
    char prob[PATH_MAX + 8];
    snprintf(prob, sizeof prob, "%s%s", d->prob ? d->prob : d->output, d->prob ? "" : ".prob");
    const char *outs[3] = {d->output, d->tsv, prob},
               *names[3] = {"-o", "--tsv", d->prob ? "--prob" : "the probabilities (OUT.wdr.prob)"};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (outs[i] && outs[j] && wd_same_file(outs[i], outs[j]))
                return usage_error("gen: %s and %s are both '%s'", names[i], names[j], outs[i]);
    install_signals(0, "");
    for (int i = 0; i < 3; i++) if (outs[i] && (rc = check_output(names[i], outs[i])) != 0) return rc;
    wd_gen_report rep;
    wd_status st = wd_gen(d, &rep);
    if (st) return fail(st);
    printf("generated rows=%lld ctr=%.4f oracle_auc=%.4f oracle_logloss=%.4f seconds=%.2f\n",
           (long long)rep.rows, rep.ctr, rep.oracle_auc, rep.oracle_logloss, rep.seconds);
    return 0;
}

// ---- train ------------------------------------------------------------------------------------------
// "activations 2" for per-layer buffers, the plain name otherwise.
static const char *plan_label(const wd_plan_entry *e, char *buf, size_t n) {
    if (e->buf == WD_BUF_ACT || e->buf == WD_BUF_BATCH || e->buf == WD_BUF_GRAD || e->buf == WD_BUF_RELU_MASK
        || e->buf == WD_BUF_GRAD_LP) { snprintf(buf, n, "%s %d", wd_buf_name(e->buf), e->index); return buf; }
    return wd_buf_name(e->buf);
}
// A slot by name or 0-based index, given as the n bytes at name; -1 if none.
static int slot_index(const wd_schema *s, const char *name, size_t n) {
    for (int k = 0; k < s->nslots; k++) if (strlen(s->slot[k].name) == n && strncmp(s->slot[k].name, name, n) == 0)
        return k;
    if (n == 0 || n > 9) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v < s->nslots ? v : -1;
}
// --hidden W1,W2,... into md->hidden; 0 or the exit status.
static int parse_hidden(const char *list, wd_model_desc *md) {
    strvec h = {0};
    int rc = 0;
    if (sv_split(&h, list)) { sv_free(&h); return fail_msg("out of memory"); }
    if (h.n > WD_MAX_LAYERS) rc = usage_error("--hidden: %d layers, at most %d", h.n, WD_MAX_LAYERS);
    for (int l = 0; !rc && l < h.n; l++) {
        long long v = 0;
        int r = parse_int(h.v[l], &v);
        if (r == -1) rc = usage_error("--hidden: '%s' is not a number", h.v[l]);
        else if (r == -2 || v < 1 || v > 65536) rc = usage_error("--hidden: '%s' is not a width (1..65536)", h.v[l]);
        else md->hidden[l] = (int)v;
    }
    sv_free(&h);
    return rc;
}
// --cross AxB,... into md->cross against the schema; 0 or the exit status.
// A slot name may itself hold an 'x': every split of an item is tried.
static int parse_cross(const char *list, const wd_schema *s, wd_model_desc *md) {
    strvec cs = {0};
    int rc = 0;
    if (sv_split(&cs, list)) { sv_free(&cs); return fail_msg("out of memory"); }
    if (cs.n > WD_MAX_CROSSES) rc = usage_error("--cross: %d pairs, at most %d", cs.n, WD_MAX_CROSSES);
    for (int q = 0; !rc && q < cs.n; q++) {
        const char *item = cs.v[q];
        int a = -1, b = -1, splits = 0;
        for (const char *x = strchr(item, 'x'); x && a < 0; x = strchr(x + 1, 'x')) {
            splits++;
            int l = slot_index(s, item, (size_t)(x - item)), r = slot_index(s, x + 1, strlen(x + 1));
            if (l >= 0 && r >= 0) { a = l; b = r; }
        }
        if (a >= 0) { md->cross[q][0] = a; md->cross[q][1] = b; continue; }
        if (splits == 0) rc = usage_error("--cross: '%s' is not AxB (two slots)", item);
        else if (splits == 1) {
            const char *x = strchr(item, 'x');
            int left_ok = slot_index(s, item, (size_t)(x - item)) >= 0;
            const char *bad = left_ok ? x + 1 : item;
            int blen = left_ok ? (int)strlen(x + 1) : (int)(x - item);
            rc = usage_error("--cross: unknown slot '%.*s' in '%s' (slots: names or 0..%d)", blen, bad, item,
                             s->nslots - 1);
        } else rc = usage_error("--cross: '%s' is not a pair of slots (names or 0..%d)", item, s->nslots - 1);
    }
    if (!rc) md->ncross = cs.n;
    sv_free(&cs);
    return rc;
}

typedef struct train_ui {
    FILE *log;
    int log_errno;
    int err_errno;                  // standard error failed (a closed pipe: EPIPE)
    int early_stop, keep_best, said_nan;
    int tty;
    double every, last_line, last_tty;
    int jsonl;                      // --log FILE.jsonl
    wd_tb *tb;                      // --tensorboard
    wd_status tb_st;                // its first failure, and its message
    char tb_err[1024];              // (wd_last_error()'s text: its messages are at most 1023 bytes)
    double lr_deep, lr_wide;
    int64_t step0;                  // the model's step before this run
    const char *save;               // --save (rank 0 writes it), every --checkpoint-every steps,
    int64_t ckpt_every, saved;      //   the last step saved there this run (-1: none yet)
    int keep_best_save, rank;
    int64_t epoch, last_step;       // the epoch being trained; the last step reported
    double epoch_loss;              // its steps' summed loss, and their count
    int64_t epoch_steps;
    wd_progress held;               // CSV --log: the last step's row, written at the next call:
    int holding;                    // a validation of the same step fills its last columns
} train_ui;
// One row of scalars: a JSONL object ({"kind": KIND, "step": S, "epoch": E,
// TAG: value, ...}, NaN as null; E: epochs done, fractional) in --log
// FILE.jsonl, and the same tags at step S in --tensorboard.
typedef struct scalar { const char *tag; double v; } scalar;
static void emit_scalars(train_ui *u, const char *kind, int64_t step, double epoch, const scalar *sc, int n) {
    if (u->log && u->jsonl && !u->log_errno) {
        errno = 0;
        fprintf(u->log, "{\"kind\": \"%s\", \"step\": %lld, \"epoch\": %.9g", kind, (long long)step, epoch);
        for (int i = 0; i < n; i++)
            if (isnan(sc[i].v)) fprintf(u->log, ", \"%s\": null", sc[i].tag);
            else fprintf(u->log, ", \"%s\": %.9g", sc[i].tag, sc[i].v);
        fputs("}\n", u->log);
        if (fflush(u->log) != 0 || ferror(u->log)) u->log_errno = errno ? errno : EIO;
    }
    if (!u->tb || u->tb_st) return;
    for (int i = 0; !u->tb_st && i < n; i++)
        if (!isnan(sc[i].v)) u->tb_st = wd_tb_scalar(u->tb, sc[i].tag, step, sc[i].v);
    if (!u->tb_st) u->tb_st = wd_tb_flush(u->tb);
    if (u->tb_st) snprintf(u->tb_err, sizeof u->tb_err, "%s", wd_last_error());
}
// The epoch that just ended (its mean training loss; validation metrics if given).
static void emit_epoch(train_ui *u, int64_t step, double auc, double ll) {
    scalar sc[3] = {{"epoch/loss", u->epoch_steps ? u->epoch_loss / (double)u->epoch_steps : NAN},
                    {"epoch/valid_auc", auc},
                    {"epoch/valid_logloss", ll}};
    emit_scalars(u, "epoch", step, (double)(u->epoch + 1), sc, 3);
    u->epoch_loss = 0;
    u->epoch_steps = 0;
}
static void emit_progress(train_ui *u, const wd_progress *p, int valid) {
    if (!u->tb && !(u->log && u->jsonl)) return;
    if (p->epoch > u->epoch) {   // an epoch ended: at its last step
        emit_epoch(u, u->last_step, valid ? p->valid_auc : NAN, valid ? p->valid_logloss : NAN);
        u->epoch = p->epoch;
    }
    if (valid) {
        scalar sc[2] = {{"valid/auc", p->valid_auc}, {"valid/logloss", p->valid_logloss}};
        emit_scalars(u, "valid", p->step, p->epoch_f, sc, 2);
        return;
    }
    u->last_step = p->step;
    u->epoch_loss += p->loss;
    u->epoch_steps++;
    enum { NS = 5 + WD_STAGE_COUNT };
    scalar sc[NS] = {{"train/loss", p->loss}, {"train/samples_per_s", p->samples_per_s},
                     {"train/lr_deep", u->lr_deep}, {"train/lr_wide", u->lr_wide},
                     {"time/data_wait_share", p->elapsed_s > 0 ? p->stage_s[WD_STAGE_DATA] / p->elapsed_s : NAN}};
    static char tags[WD_STAGE_COUNT][48];   // time/<stage>_ms: milliseconds per step so far
    int64_t steps = p->step - u->step0;
    for (int s = 0; s < WD_STAGE_COUNT; s++) {
        if (!tags[s][0]) {
            int n = snprintf(tags[s], sizeof tags[s], "time/%s_ms", wd_stage_name(s));
            for (int i = 5; i < n; i++) if (tags[s][i] == ' ' || tags[s][i] == '+') tags[s][i] = '_';
        }
        sc[5 + s].tag = tags[s];
        sc[5 + s].v = steps > 0 ? 1e3 * p->stage_s[s] / (double)steps : NAN;
    }
    emit_scalars(u, "step", p->step, p->epoch_f, sc, NS);
}
// One --log row: a step, and the validation that followed it (NaN: none, or undefined).
static void log_row(train_ui *u, const wd_progress *p, double auc, double ll) {
    if (!u->log || u->log_errno) return;
    errno = 0;
    fprintf(u->log, "%lld,%lld,%lld,%.6f,%.3f,", (long long)p->step, (long long)p->samples, (long long)p->epoch,
            p->loss, p->elapsed_s);
    if (!isnan(auc)) fprintf(u->log, "%.6f", auc);
    fputc(',', u->log);
    if (!isnan(ll)) fprintf(u->log, "%.6f", ll);
    fputc('\n', u->log);
    if (fflush(u->log) != 0 || ferror(u->log)) u->log_errno = errno ? errno : EIO;
}
static void log_flush(train_ui *u) {
    if (u->holding) log_row(u, &u->held, NAN, NAN);
    u->holding = 0;
}
// What --save holds now (rank 0 saves step multiples of --checkpoint-every
// before the next step's progress call), said by every rank.
static void checkpoint_state(const train_ui *u, char *buf, size_t n) {
    if (u->keep_best_save) snprintf(buf, n, "%s holds the best model validated so far, if any", u->save);
    else if (u->saved >= 0) snprintf(buf, n, "%s holds the checkpoint of step %lld", u->save, (long long)u->saved);
    else snprintf(buf, n, "%s is not written yet by this run", u->save);
}
// The stop message of this rank: never a promise it does not keep (rank 0
// alone writes --save, and only when the step completes).
static void train_stop_msg(const train_ui *u) {
    char now[PATH_MAX + 80];
    static const char again[] = "interrupt again to quit at once";
    if (!u->save) set_stop_msg("\nwd: stopping after the current step (no --save: the model is lost); %s\n", again);
    else {
        checkpoint_state(u, now, sizeof now);
        if (u->rank)
            set_stop_msg("\nwd: rank %d: stopping after the current step (rank 0 then writes --save; %s); %s\n",
                         u->rank, now, again);
        else set_stop_msg("\nwd: stopping after the current step, then writing --save (until then, %s); %s\n", now,
                          again);
    }
}
static void note_checkpoints(train_ui *u, int64_t step) {
    if (!u->save || u->ckpt_every <= 0) return;
    int64_t s = (step - 1) / u->ckpt_every * u->ckpt_every;   // saved after its step, before this call
    if (s > u->step0 && s > u->saved) { u->saved = s; train_stop_msg(u); }
}
static int train_progress(void *user, const wd_progress *p) {
    train_ui *u = (train_ui *)user;
    int valid = !isnan(p->valid_auc) || !isnan(p->valid_logloss);
    note_checkpoints(u, p->step);
    emit_progress(u, p, valid);
    if (u->log && !u->jsonl) {   // CSV: one row per step
        if (valid && u->holding && u->held.step == p->step) {   // the step's row with its validation
            log_row(u, &u->held, p->valid_auc, p->valid_logloss);
            u->holding = 0;
        } else {
            log_flush(u);
            if (valid) log_row(u, p, p->valid_auc, p->valid_logloss);   // a validation of no step of this run
            else { u->held = *p; u->holding = 1; }
        }
    }
    double now = now_s();
    errno = 0;
    clearerr(stderr);
    if (valid && isnan(p->valid_auc) && !u->said_nan) {
        u->said_nan = 1;
        fprintf(stderr,
                "%swd: warning: the validation AUC is undefined: the validation files hold labels of one class%s\n",
                u->tty ? "\r\033[K" : "",
                u->early_stop ? (u->keep_best ? "; --early-stop and --keep-best cannot judge the model"
                                 : "; --early-stop cannot judge the model")
                              : u->keep_best ? "; --keep-best cannot judge the model" : "");
    }
    if (valid)
        fprintf(stderr, "%sstep %lld epoch %lld: valid auc=%.5f logloss=%.5f\n", u->tty ? "\r\033[K" : "",
                (long long)p->step, (long long)p->epoch,
                p->valid_auc, p->valid_logloss);
    else if (u->tty) {
        if (now - u->last_tty > 0.2) {
            u->last_tty = now;
            fprintf(stderr, "\r\033[Kstep %lld  epoch %lld  loss %.5f  %.0f samples/s  ETA %.0fs", (long long)p->step,
                    (long long)p->epoch, p->loss,
                    p->samples_per_s, p->eta_s);
        }
    } else if (now - u->last_line >= u->every) {
        u->last_line = now;
        fprintf(stderr, "wd: step %lld epoch %lld loss %.5f, %.0f samples/s, %.0f s elapsed, ETA %.0f s\n",
                (long long)p->step, (long long)p->epoch,
                p->loss, p->samples_per_s, p->elapsed_s, p->eta_s);
    }
    if (ferror(stderr) && !u->err_errno) u->err_errno = errno ? errno : EIO;   // e.g. `wd train 2>&1 | head -1`
    return g_signal != 0 || u->log_errno != 0 || u->err_errno != 0 || u->tb_st != 0;
}
// The --log file. Opened without blocking: a FIFO that no process reads yet
// is waited for (said once), and a signal ends the wait (a blocking open()
// would hang there, restarted after the first SIGTERM). NULL: errno set
// (EINTR after a signal).
static FILE *open_log(const char *path) {
    for (int waited = 0;; waited++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
        if (fd >= 0) {
            int fl = fcntl(fd, F_GETFL);
            FILE *f = fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1 ? NULL : fdopen(fd, "w");
            if (!f) { int e = errno; close(fd); errno = e; }
            return f;
        }
        if (errno != ENXIO) return NULL;   // ENXIO: a FIFO with no reader
        if (g_signal) { errno = EINTR; return NULL; }
        if (!waited) warn("--log %s is a FIFO that no process reads: waiting for a reader (interrupt to stop)", path);
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
}
// The progress of the ranks other than 0 of a job: silent; a signal stops them too.
static int train_follow(void *user, const wd_progress *p) {
    note_checkpoints((train_ui *)user, p->step);
    return g_signal != 0;
}
// The MLP on a slow GEMM engine: say so (report.engine names it).
static void warn_engine(const char *engine) {
    static const char *const generic[] = {"Prescott", "Katmai", "Coppermine", "Northwood", "Banias", "Core2", "Penryn",
                                          "Dunnington", "Nehalem", "Atom", "Opteron", "Opteron_SSE3", "Barcelona",
                                          "Bobcat", "Nano", "Generic"};
    if (strstr(engine, "gemm=portable"))
        warn("the MLP runs on the portable GEMM loops (slow): install libdnnl-dev (or libopenblas-dev) and rebuild");
    const char *core = strstr(engine, "core=");
    if (core) {
        core += 5;
        size_t n = strcspn(core, " ");
        for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++)
            if (strlen(generic[i]) == n && strncasecmp(core, generic[i], n) == 0) {
                warn("OpenBLAS runs its generic %.*s kernels on this CPU (slow): install libdnnl-dev and rebuild, "
                     "or set OPENBLAS_CORETYPE to this CPU's core", (int)n, core);
                break;
            }
    }
    if (strstr(engine, "isa=sse41")) warn("oneDNN found only SSE4.1 on this CPU: the MLP runs slowly");
}

// Dense columns far outside the scale of the first layer's initial weights
// (raw values like 1e6, from --dense-raw): the layer saturates and the model
// learns next to nothing (AUC 0.51, p = 0 for most rows). Counts go in
// through log1p (at most 45) and standardized values rarely pass 100, so
// |x| > 1000 in the first blocks of the first training file gets a warning.
#define DENSE_SCALE_MAX 1000.0
static void warn_dense_scale(const char *path) {
    wd_reader *r;
    if (wd_reader_open(path, &r)) return;   // training reports it
    const wd_schema *s = wd_reader_schema(r);
    double mx[WD_MAX_DENSE];
    int nd = s->ndense < WD_MAX_DENSE ? s->ndense : WD_MAX_DENSE;
    for (int j = 0; j < nd; j++) mx[j] = 0;
    for (int64_t i = 0; i < wd_reader_nblocks(r) && i < 4; i++) {
        const wd_batch *b;
        if (wd_reader_block(r, i, &b)) break;
        for (int n = 0; n < b->n; n++)
            for (int j = 0; j < nd; j++)
                mx[j] = fmax(mx[j], fabs((double)b->dense[(size_t)n * (size_t)b->ndense + (size_t)j]));
    }
    char list[256] = "";
    int bad = 0;
    size_t k = 0;
    for (int j = 0; j < nd; j++)
        if (mx[j] > DENSE_SCALE_MAX && bad++ < 5 && k < sizeof list - 40)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%d (|x| up to %.3g)", k ? ", " : "", j, mx[j]);
    if (bad)
        warn("%s: dense column%s %s%s: values this large saturate the first layer and the model learns little; scale them "
             "(e.g. log1p, or standardize) before training", path, bad > 1 ? "s" : "", list,
             bad > 5 ? " and more" : "");
    wd_reader_close(r);
}

// A checkpoint wd_train saved after an error (wd_model_after_error): say so.
static void warn_after_error(const char *path, const wd_model *m) {
    int64_t step = 0;
    wd_model_position(m, NULL, NULL, &step);
    if (wd_model_after_error(m))
        warn("%s was saved after an error stopped training: it holds the model after step %lld, the last step finished before the error", path, (long long)step);
}

// ---- a job of several processes: mpirun (build/wd-mpi, -DWD_USE_MPI) ------------------------------
// `mpirun -np N wd-mpi train ...` (or srun): each process sees its rank in
// Open MPI's OMPI_COMM_WORLD_RANK/SIZE or PMI's PMI_RANK/PMI_SIZE, trains
// its shard of the blocks with --threads workers (default: the cores over
// the processes of its node), or with --device cuda one GPU per local rank
// (NCCL, its id shared by MPI_Bcast). Every rank scores its share of the
// validation blocks (the library gathers them); rank 0 alone writes --save,
// --log and progress; every rank reports its own errors. A failed rank aborts the
// communicator (the library's fail-fast rule: every other rank's wd_train ends naming
// it); when every rank then reaches the end they all finalize, unless a communicator
// aborted (mpi_end), else the job is ended (MPI_Abort); a stop (SIGINT/SIGTERM
// to every rank, as mpirun sends on Ctrl-C) ends every rank at the same step.
#ifdef WD_USE_MPI
static int g_mpi_rank, g_mpi_size = 1, g_mpi_init, g_mpi_trained;   // trained: wd_train was called
static wd_comm *g_mpi_comm;
static MPI_Comm g_mpi_end = MPI_COMM_NULL;   // mpi_end's reduction alone (no other collective is ever on it)
static int env_int(const char *a, const char *b, int dflt) {
    const char *v = getenv(a);
    if (!v || !*v) v = getenv(b);
    return v && *v ? atoi(v) : dflt;
}
static int mpi_rank(void) { return g_mpi_rank; }
static void mpi_trained(void) { g_mpi_trained = 1; }
// Rank 0 alone writes --save and --tensorboard: a rank given one that is
// not rank 0's (rank 0 has another, or none) would leave it unwritten, so
// every rank refuses it alike. The names are gathered before anything can
// fail on one rank (every rank calls this collective). 0 or the exit status.
static int mpi_same_outputs(const char *save, const char *tb) {
    enum { NAME = PATH_MAX + 2 };   // a name, its NUL and a last byte set when it is longer (refused)
    static const char *const opt_names[2] = {"--save", "--tensorboard"};
    const char *mine[2] = {save, tb};
    char own[2][NAME] = {{0}};
    for (int o = 0; o < 2; o++) {
        snprintf(own[o], NAME - 1, "%s", mine[o] ? mine[o] : "");
        own[o][NAME - 1] = mine[o] && strlen(mine[o]) > NAME - 2;   // whole names are compared, never prefixes
    }
    char *all = (char *)malloc((size_t)g_mpi_size * sizeof own);
    if (!all) return fail_msg("rank %d: out of memory", g_mpi_rank);
    int e = MPI_Allgather(own, (int)sizeof own, MPI_CHAR, all, (int)sizeof own, MPI_CHAR, MPI_COMM_WORLD);
    int rc = e != MPI_SUCCESS ? fail_msg("rank %d: MPI_Allgather of the output names failed", g_mpi_rank) : 0;
    for (int q = 0; !rc && q < g_mpi_size; q++)   // every rank gives the same verdict
        for (int o = 0; !rc && o < 2; o++)
            if (all[(size_t)q * sizeof own + o * NAME + NAME - 1])
                rc = usage_error("rank %d's %s is longer than %d bytes", q, opt_names[o], PATH_MAX);
    for (int q = 1; !rc && q < g_mpi_size; q++)
        for (int o = 0; !rc && o < 2; o++) {
            const char *r0 = all + o * NAME, *rq = all + (size_t)q * sizeof own + o * NAME;
            if (rq[0] && strcmp(rq, r0) != 0)
                rc = usage_error("rank %d's %s '%.300s' is not rank 0's (%s%.300s%s): rank 0 alone writes it; "
                                 "give every rank the same %s", q, opt_names[o], rq, r0[0] ? "'" : "none", r0,
                                 r0[0] ? "'" : "", opt_names[o]);
        }
    free(all);
    return rc;
}
// MPI and the job's communicator when mpirun launched this process; 0 or the exit status.
static int mpi_begin(wd_train_desc *td, const char *save, const char *tb) {
    int size = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", 0);
    if (size <= 0) return 0;   // not launched by mpirun/srun: one process
    int level = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &level) != MPI_SUCCESS)
        return fail_msg("MPI_Init_thread failed");
    g_mpi_init = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_mpi_size);
    // before anything can fail on one rank: its mpi_end then never meets
    // another rank's collective on MPI_COMM_WORLD
    if (MPI_Comm_dup(MPI_COMM_WORLD, &g_mpi_end) != MPI_SUCCESS) {
        g_mpi_end = MPI_COMM_NULL; return fail_msg("rank %d: MPI_Comm_dup failed", g_mpi_rank); }
    int rc = mpi_same_outputs(save, tb);
    if (rc) return rc;
    if (level < MPI_THREAD_FUNNELED)
        return fail_msg("rank %d: MPI gives thread level %d, the trainer needs MPI_THREAD_FUNNELED", g_mpi_rank, level);
    int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", g_mpi_rank);
    int nlocal = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", g_mpi_size);
    if (td->devices > 1 || td->devices == WD_ALL_GPUS)
        return usage_error("under mpirun each process trains one GPU (its local rank's): drop --gpus");
    wd_status st = WD_OK;
    if (td->device == WD_DEVICE_CUDA) {
#ifdef WD_HAVE_CUDA
        int ngpu = 0;
        st = wd_cuda_device_count(&ngpu);
        if (!st && ngpu < 1) { wd_set_last_error("no CUDA device"); st = WD_ERR_UNSUPPORTED; }
        if (!st) { td->device_index = local % ngpu; st = wd_comm_nccl_init_mpi(MPI_COMM_WORLD, td->device_index,
            &g_mpi_comm); }
#else
        (void)local;
        wd_set_last_error("this wd was built without CUDA (build/wd-mpi-cuda has both)");
        st = WD_ERR_UNSUPPORTED;
#endif
    } else {
        long share = sysconf(_SC_NPROCESSORS_ONLN) / (nlocal > 1 ? nlocal : 1);   // the cores a local rank has
        if (td->threads == 0) td->threads = share > 1 ? (int)share : 1;
        st = wd_comm_mpi_create(MPI_COMM_WORLD, &g_mpi_comm);
    }
    if (st) return fail_msg("rank %d: %s: %s", g_mpi_rank, wd_status_string(st), wd_last_error());
    td->comm = g_mpi_comm;
    return 0;
}
// Ends MPI. The ranks agree here how to end: an MPI_Iallreduce (MAX) on a
// communicator of its own of "my communicator's destroy said no" (it
// aborted: what MPI may still use is kept, and MPI must not be finalized),
// waited for WD_COMM_TIMEOUT at most (at least 60 s: rank 0 may be saving the
// model after an error, and a shorter wait's MPI_Abort would kill it
// mid-save). Every rank that came has the same verdict: all finalize, each
// with its own exit status and message (rank 0 alone failing its final
// save), or rank 0 ends the job (MPI_Abort with its exit status) and the
// others wait for it outside MPI (Open MPI 4.1's mpirun hung in 3 of 12 runs
// when one rank aborted beside another's MPI_Finalize). A rank that the
// others did not meet in time ends the job too.
static int mpi_end(int rc) {
    if (!g_mpi_init) return rc;
    // failed after MPI started, before wd_train (its --log, --tensorboard):
    // the abort ends the other ranks' wd_train (their settings check) naming this rank
    if (rc && g_mpi_comm && !g_mpi_trained)
        g_mpi_comm->ops->abort(g_mpi_comm, g_errst ? g_errst : WD_ERR_INVALID_ARG,
                               g_errline[0] ? g_errline : "failed before training started");
    fflush(stdout);
    fflush(stderr);
#ifdef WD_HAVE_CUDA
    int nccl = g_mpi_comm && g_mpi_comm->ops->stream_allreduce_sum;   // (destroyed once every rank is here)
#else
    int nccl = 0;
#endif
    int no = !nccl && wd_comm_mpi_destroy(g_mpi_comm) != WD_OK, any = 1, done = 0;
    if (!nccl) g_mpi_comm = NULL;
    double most = wd_comm_timeout();   // a step (a save) may take that long
    most = most > 60.0 ? most : 60.0;
    MPI_Request rq;
    if (g_mpi_end != MPI_COMM_NULL && MPI_Iallreduce(&no, &any, 1, MPI_INT, MPI_MAX, g_mpi_end, &rq) == MPI_SUCCESS)
        for (double t0 = now_s(); !done && now_s() - t0 < most;) {
            if (MPI_Test(&rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
            if (!done) usleep(1000);
        }
    if (done) {   // every rank is here, its work done: mpirun's SIGTERM (after rank 0's MPI_Abort) ends it quietly
        signal(SIGTERM, SIG_DFL);
        MPI_Comm_free(&g_mpi_end);
#ifdef WD_HAVE_CUDA
        if (nccl) wd_comm_nccl_destroy(g_mpi_comm);
        g_mpi_comm = NULL;
#endif
    }
    if (done && any && g_mpi_rank != 0)   // rank 0 alone ends the job
        for (int i = 0; i < 600; i++) usleep(100000);
    if (!done || any) {   // MPI may not be finalized, or the end's reduction is still pending
        if (done) fprintf(stderr, "wd: rank %d of %d: a rank's communicator aborted, so MPI must not be finalized: "
                          "ending the job (exit status %d)\n", g_mpi_rank, g_mpi_size, rc ? rc : 1);
        else if (rc != 0 && rc < 128)
            fprintf(stderr, "wd: rank %d of %d failed (exit status %d): ending the job\n", g_mpi_rank, g_mpi_size, rc);
        else fprintf(stderr, "wd: rank %d of %d: the other ranks did not reach the end within %.0f s: ending the job "
                     "(exit status %d)\n", g_mpi_rank, g_mpi_size, most, rc ? rc : 1);
        fflush(stderr);
        signal(SIGTERM, SIG_IGN);   // mpirun's, as it ends the job, must not cut this rank's abort short (mpirun
                                    // then lost its report and exited 0); it exits in MPI_Abort
        MPI_Abort(MPI_COMM_WORLD, rc ? rc : 1);
    }
    MPI_Finalize();
    return rc;
}
#else
static int mpi_rank(void) { return 0; }
static void mpi_trained(void) {}
static int mpi_begin(wd_train_desc *td, const char *save, const char *tb) { (void)td; (void)save; (void)tb; return 0; }
static int mpi_end(int rc) { return rc; }
#endif

static int cmd_train(int argc, char **argv) {
    const cmdinfo *c = &CMDS[C_TRAIN];
    train_args a;
    memset(&a, 0, sizeof a);
    unsigned char given[NOPTS(TRAIN_OPTS)];
    strvec pos = {0}, files = {0}, vfiles = {0};
    wd_model *m = NULL;
    wd_reader *r = NULL;
    train_ui ui;
    memset(&ui, 0, sizeof ui);
    wd_model_desc *md = &a.md;
    wd_train_desc *td = &a.td;
    int rc = parse_args(c, &a, argc, argv, &pos, given);
    if (rc >= 0) goto done;
    rc = 2;
    if (pos.n) { usage_error("train: unexpected argument '%s' (training files go in --train A.wdr,B.wdr)", pos.v[0]);
        goto done; }
    if (!a.train) { usage_error("train: --train FILE.wdr[,...] is required"); goto done; }
    const opt *model_opt = first_given(c, given, G_MODEL);
    const char *from = a.resume ? "--resume" : "--init-from";
    if (a.resume && a.init_from) {
        usage_error("train: --resume continues a run, --init-from starts a new one: choose one"); goto done; }
    if ((a.resume || a.init_from) && model_opt) {
        usage_error("train: %s takes the model settings from the checkpoint; drop %s", from, model_opt->name);
        goto done; }
    const char *needs_valid[3] = {"--early-stop", "--keep-best", "--eval-every"};
    for (int i = 0; i < 3; i++)
        if (!a.valid && opt_given(c, given, needs_valid[i])) {
            usage_error("%s needs --valid (validation files)", needs_valid[i]); goto done; }
    if (td->keep_best && !a.save) { usage_error("--keep-best needs --save (where the best model goes)"); goto done; }
    if (td->keep_best && td->checkpoint_every) {
        usage_error("--keep-best and --checkpoint-every would both write --save: choose one"); goto done; }
    if (td->checkpoint_every && !a.save) { usage_error("--checkpoint-every needs --save"); goto done; }
    if (opt_given(c, given, "--gpus") && td->device != WD_DEVICE_CUDA && !a.plan) {
        usage_error("--gpus needs --device cuda (the CPU device uses --threads)"); goto done; }
    if (td->cuda.fp32 && td->device != WD_DEVICE_CUDA) {
        usage_error("--gpu-fp32 needs --device cuda (the CPU computes in fp32)"); goto done; }
    if (a.cross && count_items(a.cross) > WD_MAX_CROSSES) {
        usage_error("--cross: %d pairs, at most %d", count_items(a.cross), WD_MAX_CROSSES); goto done; }
    if (a.hidden && (rc = parse_hidden(a.hidden, md)) != 0) goto done;
    rc = 2;
    if (sv_split(&files, a.train) || (a.valid && sv_split(&vfiles, a.valid))) {
        rc = fail_msg("out of memory"); goto done; }
    // no output may replace an input (--save onto --resume's checkpoint continues it: allowed)
    const char *outs[2] = {a.save, a.log}, *out_names[2] = {"--save", "--log"};
    for (int o = 0; o < 2; o++) {
        if (!outs[o]) continue;
        for (int i = 0; i < files.n; i++) if (wd_same_file(outs[o], files.v[i])) {
            refuse_same(out_names[o], outs[o], "the training file", files.v[i]); goto done; }
        for (int i = 0; i < vfiles.n; i++) if (wd_same_file(outs[o], vfiles.v[i])) {
            refuse_same(out_names[o], outs[o], "the validation file", vfiles.v[i]); goto done; }
        if (a.init_from && wd_same_file(outs[o], a.init_from)) {
            refuse_same(out_names[o], outs[o], "the --init-from model", a.init_from); goto done; }
    }
    if (a.log && a.resume && wd_same_file(a.log, a.resume)) {
        refuse_same("--log", a.log, "the --resume checkpoint", a.resume); goto done; }
    if (a.log && a.save && wd_same_file(a.log, a.save)) {
        usage_error("--log and --save are both '%s'", a.log); goto done; }
    // handlers first: a signal from here on removes every temporary file (check_output's probe too)
    install_signals(1, "\nwd: stopping before training starts (nothing is written); interrupt again to quit at once\n");
    if (a.save && !a.plan && (rc = check_output("--save", a.save)) != 0) goto done;
    if (a.log && !a.plan && (rc = check_name("--log", a.log)) != 0) goto done;
    if (a.tensorboard && !a.plan && (rc = check_tb_dir(a.tensorboard)) != 0) goto done;
    rc = 1;

    wd_status st = WD_OK;
    if (a.resume || a.init_from) {
        st = wd_model_load(a.resume ? a.resume : a.init_from, &m);
        if (st) { rc = fail(st); goto done; }
        warn_after_error(a.resume ? a.resume : a.init_from, m);
        if (a.init_from) wd_model_new_run(m);
        *md = *wd_model_description(m);
    } else {
        st = wd_reader_open(files.v[0], &r);
        if (st) { rc = fail(st); goto done; }
        md->schema = wd_reader_schema(r);
        if (a.cross && (rc = parse_cross(a.cross, md->schema, md)) != 0) goto done;
        rc = 1;
    }
    if (a.plan) {   // sizes only: nothing is allocated
        if (td->devices == WD_ALL_GPUS) {
            rc = usage_error("--plan: give --gpus a number (the plan is made without GPUs)"); goto done; }
        int ranks = td->devices > 0 ? td->devices : 1;
        int batch = (td->batch_size > 0 ? td->batch_size : 4096) / ranks;
        if (batch < 1) { rc = usage_error("--plan: a batch of %d does not split over %d GPUs", td->batch_size, ranks);
            goto done; }
        wd_plan p;
        st = wd_plan_from_desc(md, batch, ranks, &p);
        if (st) { rc = fail(st); goto done; }
        char lb[64];
        printf("device plan: %d rank(s), batch %d per rank\n", ranks, batch);
        for (int i = 0; i < p.n; i++)
            if (p.e[i].bytes) printf("  %-28s %14lld bytes  %9.2f MiB\n", plan_label(&p.e[i], lb, sizeof lb),
                                     (long long)p.e[i].bytes, p.e[i].bytes / 1048576.0);
        printf("  %-28s %14lld bytes  %9.2f GiB per GPU\n", "total", (long long)p.total, p.total / 1073741824.0);
        rc = 0;
        goto done;
    }
    if (!m) {
        st = wd_model_create(md, &m);
        if (st) { rc = fail(st); goto done; }
    }
    wd_reader_close(r);
    r = NULL;
    if ((rc = mpi_begin(td, a.save, a.tensorboard)) != 0) goto done;
    rc = 1;
    ui.tty = isatty(2) && mpi_rank() == 0;
    ui.every = a.progress_every > 0 ? a.progress_every : 10.0;
    ui.last_line = now_s();
    signal(SIGPIPE, SIG_IGN);   // a closed pipe (stdout, stderr, a --log FIFO) is a write error: stop and save
    if (a.log && mpi_rank() == 0) {   // written line by line: a stopped run leaves whole lines
        ui.log = open_log(a.log);
        if (!ui.log && g_signal) {
            fprintf(stderr, "wd: interrupted by %s before training started (waiting for a reader of --log %s)\n",
                    signal_name(g_signal), a.log); rc = 128 + g_signal; goto done; }
        if (!ui.log) { rc = fail_msg("%s: cannot create the log: %s", a.log, strerror(errno)); goto done; }
        setvbuf(ui.log, NULL, _IOLBF, 0);
        errno = 0;
        size_t ln = strlen(a.log);
        ui.jsonl = ln >= 6 && strcmp(a.log + ln - 6, ".jsonl") == 0;
        if (!ui.jsonl) fputs("step,samples,epoch,loss,elapsed_s,valid_auc,valid_logloss\n", ui.log);
        if (fflush(ui.log) != 0 || ferror(ui.log)) {
            rc = fail_msg("%s: write failed: %s", a.log, strerror(errno ? errno : EIO)); goto done; }
    }
    if (!a.save && mpi_rank() == 0) warn("no --save: the trained model will be thrown away when training ends");
    if (mpi_rank() == 0) warn_dense_scale(files.v[0]);
    if (td->epochs > 1 && !a.valid && mpi_rank() == 0)
        warn("--epochs %d without --valid: deep CTR models often overfit sharply at the start of their second epoch (the one-epoch "
             "phenomenon, Zhang et al., CIKM 2022) and nothing will show it; add --valid V.wdr with --early-stop 1 (and --keep-best) "
             "to stop at the best epoch", td->epochs);
    td->files = files.v; td->nfiles = files.n; td->valid_files = vfiles.v; td->nvalid = vfiles.n;
    td->checkpoint_path = a.save;
    td->progress = mpi_rank() == 0 ? train_progress : train_follow; td->user = &ui;
    ui.early_stop = td->early_stop; ui.keep_best = td->keep_best;
    ui.lr_deep = wd_model_description(m)->lr_deep;
    ui.lr_wide = wd_model_description(m)->lr_wide;
    wd_model_position(m, &ui.epoch, NULL, &ui.step0);
    ui.last_step = ui.step0;
    ui.save = a.save; ui.ckpt_every = td->checkpoint_every; ui.saved = -1;
    ui.keep_best_save = td->keep_best; ui.rank = mpi_rank();
    train_stop_msg(&ui);
    if (a.tensorboard && mpi_rank() == 0) {   // rank 0 writes the scalars, as the log
        st = wd_tb_open(a.tensorboard, &ui.tb);
        if (st) { rc = fail(st); goto done; }
    }
    wd_train_report rep;
    memset(&rep, 0, sizeof rep);
    rep.valid_auc = rep.valid_logloss = rep.best_auc = NAN;
    mpi_trained();
    if (g_signal) {
        st = WD_ERR_ABORTED;
        wd_set_last_error("interrupted before training started");
        if (td->comm) td->comm->ops->abort(td->comm, st, wd_last_error());   // the other ranks' wd_train end naming it
    } else st = wd_train(m, td, &rep);
    if (ui.tty) fprintf(stderr, "\r\033[K");
    log_flush(&ui);
    int64_t epoch = 0, inb = 0, step = 0;
    wd_model_position(m, &epoch, &inb, &step);
    if (epoch > ui.epoch && ui.epoch_steps) emit_epoch(&ui, step, NAN, NAN);   // the last epoch, not validated
    if (ui.tb) {
        wd_status s2 = wd_tb_close(ui.tb);
        ui.tb = NULL;
        if (s2 && !ui.tb_st) { ui.tb_st = s2; snprintf(ui.tb_err, sizeof ui.tb_err, "%s", wd_last_error()); }
    }
    if (ui.log) {
        if (fclose(ui.log) != 0 && !ui.log_errno) ui.log_errno = errno ? errno : EIO;
        ui.log = NULL;
    }
    // what --save holds after a stop: the last step, or with --keep-best the best one so far
    char where[PATH_MAX + 96] = "";
    if (a.save && st == WD_ERR_ABORTED && rep.stopped == 1 && mpi_rank() != 0) {
        snprintf(where, sizeof where, "; rank 0 saves the checkpoint");
    } else if (a.save && st == WD_ERR_ABORTED && rep.stopped == 1) {
        if (td->keep_best && rep.best_step >= 0)
            snprintf(where, sizeof where, "; %s holds the best model so far (step %lld)", a.save,
                     (long long)rep.best_step);
        else snprintf(where, sizeof where, "; checkpoint saved to %s (continue with --resume)", a.save);
    } else if (!a.save) snprintf(where, sizeof where, "; no --save: the model is lost");
    if (g_signal) {
        if (st && st != WD_ERR_ABORTED) fail(st);
        if (!st) fprintf(stderr, "wd: interrupted by %s after training finished%s%s\n", signal_name(g_signal),
                         a.save ? "; the model is saved to " : "",
                         a.save ? a.save : "");
        else fprintf(stderr, "wd: interrupted by %s: training stopped at step %lld (epoch %lld)%s\n",
                     signal_name(g_signal), (long long)step,
                     (long long)epoch, where);
        rc = 128 + g_signal;
    } else if (ui.log_errno) {
        fail_msg("%s: write failed: %s; training stopped at step %lld%s", a.log, strerror(ui.log_errno),
                 (long long)step, where);
        rc = 1;
    } else if (ui.err_errno) {   // said on standard error, in case it works again
        fail_msg("standard error: write failed: %s; training stopped at step %lld%s", strerror(ui.err_errno),
                 (long long)step, where);
        rc = 1;
    } else if (ui.tb_st) {
        fail_msg("--tensorboard: %s; training stopped at step %lld%s", ui.tb_err, (long long)step, where);
        rc = 1;
    } else if (st) {
        rc = fail(st);
        if (rep.error_saved) fprintf(stderr,
            "wd: %s holds the state before the error (step %lld); continue with --resume %s once its cause is fixed\n",
            a.save, (long long)step, a.save);
        else if (a.save) {   // what is on disk (a stopped or failed rank: no save after the error)
            char now[PATH_MAX + 80];
            checkpoint_state(&ui, now, sizeof now);
            fprintf(stderr, "wd: %s%s%s\n", mpi_rank() ? "rank 0's " : "", now,
                    mpi_rank() ? " (or, where rank 0 ran on, its state at this error: its message says)" : "");
        }
    } else if (mpi_rank() != 0) {
        rc = 0;   // rank 0 reports the job
    } else if (rep.steps == 0) {   // a finished run resumed: no loss to report
        int epochs = td->epochs > 0 ? td->epochs : 1;
        printf("trained steps=0 samples=0 seconds=%.2f: nothing to train: the model is at epoch %lld, step %lld, "
               "where this run ends (", rep.seconds, (long long)epoch, (long long)step);
        if (td->max_steps > 0 && step >= td->max_steps) printf("--max-steps %lld", (long long)td->max_steps);
        else printf("--epochs %d", epochs);
        printf("); raise it to train on%s\n", a.save ? "" : " (no --save: nothing is written)");
        rc = 0;
    } else {
        printf("trained steps=%lld samples=%lld seconds=%.2f samples/s=%.0f last_loss=%.5f", (long long)rep.steps,
               (long long)rep.samples, rep.seconds,
               rep.samples_per_s, rep.last_loss);
        if (!isnan(rep.valid_auc) || !isnan(rep.valid_logloss))
            printf(" valid_auc=%.5f valid_logloss=%.5f", rep.valid_auc, rep.valid_logloss);
        if (vfiles.n && rep.best_step >= 0)
            printf(" best_auc=%.5f best_step=%lld best_epoch=%.2f", rep.best_auc, (long long)rep.best_step,
                   rep.best_epoch);
        if (rep.stopped == 2) printf(" early_stop=1");
        printf(" engine=%s\n", rep.engine);
        print_oov("trained", &rep.oov, wd_model_schema(m));
        if (rep.steps > 0 && rep.train_s > 0) {   // where the step loop's time went
            printf("time per step (rank 0, ms):");
            for (int s = 0; s < WD_STAGE_COUNT; s++)
                printf(" %s %.3f", wd_stage_name(s), 1e3 * rep.stage_s[s] / (double)rep.steps);
            printf(" | %s\n", rep.engine);
        }
        if (rep.stopped == 2)
            fprintf(stderr,
                    "wd: early stop: no better validation AUC in %d validations; the best, %.5f, came at step %lld\n",
                    td->early_stop,
                    rep.best_auc, (long long)rep.best_step);
        if (rep.stopped == 3) fprintf(stderr,
                                      "wd: another rank stopped training at step %lld (its own message says why)\n",
                                      (long long)step);
        if (td->keep_best && rep.best_step >= 0)
            fprintf(stderr, "wd: %s holds the model of step %lld (the best validation AUC)\n", a.save,
                    (long long)rep.best_step);
        else if (rep.best_step >= 0 && rep.best_step < step && rep.valid_auc < rep.best_auc)
            fprintf(stderr,
                "wd: the best validation AUC, %.5f, came at epoch %.2f (step %lld); the final model's is %.5f: later steps overfit "
                    "(deep CTR models often do from their second epoch on); --keep-best keeps the best model, --early-stop N stops after N "
                    "validations without a better one\n", rep.best_auc, rep.best_epoch, (long long)rep.best_step,
                    rep.valid_auc);
        rc = 0;
    }
    if (rep.engine[0] && mpi_rank() == 0) warn_engine(rep.engine);
done:
    if (ui.log) fclose(ui.log);
    if (ui.tb) wd_tb_close(ui.tb);
    if (r) wd_reader_close(r);
    wd_model_destroy(m);
    sv_free(&pos);
    sv_free(&files);
    sv_free(&vfiles);
    return mpi_end(rc);
}

// ---- eval and predict -------------------------------------------------------------------------------
// Writes the predictions (with ids when ids[] is given) to f; 0, or -1 with
// the message printed. path: f's name for messages.
static int write_predictions(FILE *f, const char *path, const float *pred, const int64_t *counts, const strvec *files,
                             const strvec *ids) {
    int64_t at = 0;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    errno = 0;
    for (int k = 0; k < files->n && !rc; k++) {
        FILE *in = NULL;
        if (ids->n) {
            in = fopen(ids->v[k], "r");
            if (!in) { rc = fail_msg("%s: cannot open: %s", ids->v[k], strerror(errno)); break; }
        }
        for (int64_t i = 0; i < counts[k] && !rc; i++, at++) {
            if (in) {
                ssize_t n = getline(&line, &cap, in);
                if (n < 0) { rc = fail_msg("%s: %lld ids for the %lld samples of %s", ids->v[k], (long long)i,
                                           (long long)counts[k], files->v[k]); break; }
                while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
                if (fprintf(f, "%s\t%.9g\n", line, (double)pred[at]) < 0) break;
            } else if (fprintf(f, "%.9g\n", (double)pred[at]) < 0) break;
        }
        // then the line binding the ids to their data (wd_ids_check passed), and nothing after it
        if (in && !rc && (getline(&line, &cap, in) < 0 || strncmp(line, "#wd-ids ", 8) != 0 ||
                          getline(&line, &cap, in) >= 0))
            rc = fail_msg("%s: changed while it was read: not the ids of the %lld samples of %s", ids->v[k],
                          (long long)counts[k], files->v[k]);
        if (in) fclose(in);
        if (ferror(f)) break;
    }
    free(line);
    if (!rc && (fflush(f) != 0 || ferror(f)))
        rc = fail_msg("%s: write failed: %s", path, strerror(errno ? errno : EIO));
    return rc ? -1 : 0;
}

static int cmd_eval_predict(int argc, char **argv, int predict) {
    const cmdinfo *c = &CMDS[predict ? C_PREDICT : C_EVAL];
    eval_args a;
    memset(&a, 0, sizeof a);
    strvec files = {0}, ids = {0};
    wd_model *m = NULL;
    float *pred = NULL;
    int64_t *counts = NULL;
    FILE *f = NULL;
    char tmp[TEMP_MAX] = "";
    int rc = parse_args(c, &a, argc, argv, &files, NULL);
    if (rc >= 0) goto done;
    rc = 2;
    if (!a.model || !files.n || (predict && !a.out)) {
        usage_error(predict ? "predict: --model M.wdm, DATA.wdr and -o PRED.txt are required"
                    : "eval: --model M.wdm and DATA.wdr are required");
        goto done;
    }
    if (a.ids && a.no_ids) { usage_error("predict: --ids and --no-ids exclude each other"); goto done; }
    if (a.ids) {
        if (sv_split(&ids, a.ids)) { rc = fail_msg("out of memory"); goto done; }
        if (ids.n != files.n) {
            usage_error("--ids: %d ids files for %d data files (one each, in order)", ids.n, files.n); goto done; }
    } else if (predict && !a.no_ids) {   // automatic: DATA.wdr.ids next to every DATA.wdr
        int have = 0;
        const char *with = NULL, *without = NULL;
        for (int i = 0; i < files.n; i++) {
            char p[PATH_MAX + 8];
            struct stat sb;
            snprintf(p, sizeof p, "%s.ids", files.v[i]);
            if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) { have++; with = files.v[i]; } else without = files.v[i];
        }
        if (have && have < files.n) {
            usage_error("predict: %s has ids (%s.ids) but %s has none: give --ids or --no-ids", with, with, without);
            goto done; }
        if (have) {
            size_t total = 0;
            for (int i = 0; i < files.n; i++) total += strlen(files.v[i]) + 5;
            ids.mem = (char *)malloc(total);
            if (!ids.mem) { rc = fail_msg("out of memory"); goto done; }
            char *q = ids.mem;
            for (int i = 0; i < files.n; i++) {
                int n = sprintf(q, "%s.ids", files.v[i]);
                if (sv_push(&ids, q)) { rc = fail_msg("out of memory"); goto done; }
                q += n + 1;
            }
        }
    }
    int to_stdout = predict && strcmp(a.out, "-") == 0, direct = to_stdout;
    if (predict && !to_stdout) {
        if (wd_same_file(a.out, a.model)) { refuse_same("-o", a.out, "the model", a.model); goto done; }
        for (int i = 0; i < files.n; i++) if (wd_same_file(a.out, files.v[i])) {
            refuse_same("-o", a.out, "the data file", files.v[i]); goto done; }
        for (int i = 0; i < ids.n; i++) if (wd_same_file(a.out, ids.v[i])) {
            refuse_same("-o", a.out, "the ids file", ids.v[i]); goto done; }
        struct stat sb;
        install_signals(0, "");
        if (stat(a.out, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
            direct = 1;   // a pipe or a device: written as it is
        else if ((rc = check_output("-o", a.out)) != 0) goto done;
        if (!direct) temp_name(tmp, sizeof tmp, a.out);
    }
    rc = 1;
    wd_status st = WD_OK;
    for (int i = 0; i < ids.n; i++)   // every ids file bound to its data file before any work
        if ((st = wd_ids_check(ids.v[i], files.v[i])) != WD_OK) { rc = fail(st); goto done; }
    st = wd_model_load_weights(a.model, &m);   // no optimizer state: its memory is its weights
    if (st) { rc = fail(st); goto done; }
    warn_after_error(a.model, m);
    counts = (int64_t *)calloc((size_t)files.n, sizeof *counts);
    if (!counts) { rc = fail_msg("out of memory"); goto done; }
    int64_t total = 0;
    for (int i = 0; i < files.n; i++) {
        wd_reader *r;
        st = wd_reader_open(files.v[i], &r);
        if (st) { rc = fail(st); goto done; }
        counts[i] = wd_reader_nsamples(r);
        total += counts[i];
        wd_reader_close(r);
    }
    if (total == 0 && !predict) {
        fprintf(stderr, "wd: error: no samples to evaluate in");
        for (int i = 0; i < files.n; i++) fprintf(stderr, " %s", files.v[i]);
        fputc('\n', stderr);
        goto done;
    }
    if (predict) {
        pred = (float *)malloc(sizeof(float) * (size_t)(total ? total : 1));
        if (!pred) { rc = fail_msg("out of memory for %lld predictions", (long long)total); goto done; }
    }
    wd_eval_desc e;
    memset(&e, 0, sizeof e);
    e.files = files.v; e.nfiles = files.n; e.threads = a.threads; e.predictions = pred; e.predictions_cap = total;
    wd_metrics mt;
    memset(&mt, 0, sizeof mt);
    if (total > 0) {
        st = wd_evaluate(m, &e, &mt);
        if (st) { rc = fail(st); goto done; }
    }
    if (!predict) {
        printf("mean_pred=%.6f ctr=%.6f\n", mt.mean_pred, mt.ctr);
        print_oov("evaluated", &mt.oov, wd_model_schema(m));
        printf("auc=%.6f logloss=%.6f samples=%lld\n", mt.auc, mt.logloss, (long long)mt.samples);
        if (isnan(mt.auc)) warn("the AUC is undefined: every sample has label %g", mt.ctr);
        rc = 0;
        goto done;
    }
    const char *wpath = direct ? a.out : tmp;
    f = to_stdout ? stdout : fopen(wpath, "w");
    if (!f) { rc = fail_msg("%s: cannot create: %s", a.out, strerror(errno)); goto done; }
    if (write_predictions(f, to_stdout ? "standard output" : a.out, pred, counts, &files, &ids)) goto done;
    if (!to_stdout) {
        if (!direct && fsync(fileno(f)) != 0) {
            rc = fail_msg("%s: fsync failed: %s", a.out, strerror(errno)); goto done; }
        int cr = fclose(f);
        f = NULL;
        if (cr != 0) { rc = fail_msg("%s: write failed: %s", a.out, strerror(errno)); goto done; }
        if (!direct && rename(tmp, a.out) != 0) {
            rc = fail_msg("%s: cannot finish writing: %s", a.out, strerror(errno)); goto done; }
        tmp[0] = 0;
    }
    fprintf(to_stdout ? stderr : stdout, "predicted %lld samples%s -> %s\n", (long long)total, ids.n ? " with ids" : "",
            to_stdout ? "standard output" : a.out);
    rc = 0;
done:
    if (f && f != stdout) fclose(f);
    if (tmp[0]) unlink(tmp);
    free(pred);
    free(counts);
    wd_model_destroy(m);
    sv_free(&files);
    sv_free(&ids);
    return rc;
}

// ---- export -------------------------------------------------------------------------------------------
static int export_onnx(const export_args *a, strvec *pos);
static int cmd_export(int argc, char **argv) {
    const cmdinfo *c = &CMDS[C_EXPORT];
    strvec pos = {0};
    export_args ea;
    memset(&ea, 0, sizeof ea);
    int rc = parse_args(c, &ea, argc, argv, &pos, NULL);
    if (rc < 0 && pos.n != 2)
        rc = usage_error(pos.n > 2 ? "export: one model at a time ('%s'): export [--onnx] M.wdm OUT"
                                   : "export [--onnx] M.wdm OUT: %s",
                         pos.n > 2 ? pos.v[2] : pos.n ? "the output is required"
                                                      : "the model and the output are required");
    if (rc < 0 && ea.values && !ea.onnx)
        rc = usage_error("--values-from: it maps raw strings in an ONNX graph: give --onnx too");
    if (rc < 0 && wd_same_file(pos.v[0], pos.v[1])) rc = refuse_same("export:", pos.v[1], "the model", pos.v[0]);
    if (rc < 0 && ea.onnx && (ends_with(pos.v[0], ".onnx") || ends_with(pos.v[1], ".wdm")))   // earlier builds' order
        rc = usage_error("export --onnx M.wdm OUT.onnx: the model comes first and the output second, "
                         "as in export M.wdm OUT.wdm (got '%s' then '%s')", pos.v[0], pos.v[1]);
    if (rc < 0 && ea.onnx) { rc = export_onnx(&ea, &pos); sv_free(&pos); return rc; }
    if (rc >= 0) { sv_free(&pos); return rc; }
    const char *in = pos.v[0], *out = pos.v[1];
    wd_model *m = NULL;
    install_signals(0, "");
    if ((rc = check_output("export:", out)) != 0) goto done;
    wd_status st = wd_model_load(in, &m);
    if (!st) st = wd_model_export(m, out);
    if (st) { rc = fail(st); goto done; }
    struct stat a, b;
    if (stat(in, &a) == 0 && stat(out, &b) == 0)
        printf("exported %s -> %s: %lld bytes (the checkpoint %lld, %.1f%%)\n", in, out, (long long)b.st_size,
               (long long)a.st_size,
               a.st_size ? 100.0 * (double)b.st_size / (double)a.st_size : 0.0);
    rc = 0;
done:
    wd_model_destroy(m);
    sv_free(&pos);
    return rc;
}

// ---- dump ---------------------------------------------------------------------------------------------
static int cmd_dump(int argc, char **argv) {
    const cmdinfo *c = &CMDS[C_DUMP];
    strvec pos = {0};
    int rc = parse_args(c, NULL, argc, argv, &pos, NULL);
    if (rc < 0 && pos.n != 2) rc = usage_error("dump: DATA.wdr OUTDIR");
    if (rc >= 0) { sv_free(&pos); return rc; }
    const char *in = pos.v[0], *dir = pos.v[1];
    enum { NF = 4 };
    static const char *const names[NF] = {"labels.f32", "dense.f32", "ids.u32", "meta.txt"};
    char path[NF][PATH_MAX], tmp[NF][TEMP_MAX];
    FILE *f[NF] = {NULL, NULL, NULL, NULL};
    uint32_t *row = NULL;
    wd_reader *r = NULL;
    int created = 0;   // temporary files created (removed on failure)
    size_t made = strlen(dir) + 1;   // the directories made (removed on failure, when empty)
    wd_status st = wd_reader_open(in, &r);
    if (st) { rc = fail(st); goto done; }
    const wd_schema *s = wd_reader_schema(r);
    for (int k = 0; k < s->nslots; k++)
        if (s->slot[k].kind != WD_ONE_HOT) {
            rc = fail_msg("dump: slot %s is multi-hot (dump writes one id per slot)", s->slot[k].name); goto done; }
    install_signals(0, "");
    if (make_dirs(dir, &made) != 0) {
        rc = fail_msg("%s: cannot create the directory: %s", dir, strerror(errno));
        goto done;
    }
    for (int i = 0; i < NF; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
        if (wd_same_file(path[i], in)) { rc = refuse_same("dump:", path[i], "the input", in); goto done; }
        temp_name(tmp[i], sizeof tmp[i], path[i]);
        add_temp(path[i]);
    }
    for (; created < NF; created++) {
        f[created] = fopen(tmp[created], "wb");
        if (!f[created]) { rc = fail_msg("%s: cannot create: %s", path[created], strerror(errno)); goto done; }
    }
    row = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)(s->nslots ? s->nslots : 1));
    if (!row) { rc = fail_msg("out of memory"); goto done; }
    int bad = -1;   // the first file a write failed on
    errno = 0;
    for (int64_t i = 0; bad < 0 && i < wd_reader_nblocks(r); i++) {
        const wd_batch *b;
        st = wd_reader_block(r, i, &b);
        if (st) { rc = fail(st); goto done; }
        if (fwrite(b->label, sizeof(float), (size_t)b->n, f[0]) != (size_t)b->n) bad = 0;
        size_t nd = (size_t)b->n * (size_t)s->ndense;
        if (bad < 0 && nd && fwrite(b->dense, sizeof(float), nd, f[1]) != nd) bad = 1;
        for (int j = 0; bad < 0 && j < b->n; j++) {
            for (int k = 0; k < s->nslots; k++) row[k] = b->ids[k][j];
            if (s->nslots && fwrite(row, sizeof(uint32_t), (size_t)s->nslots, f[2]) != (size_t)s->nslots) bad = 2;
        }
    }
    if (bad < 0) {   // meta.txt: "samples dense slots", then one bucket count per slot
        fprintf(f[3], "%lld %d %d\n", (long long)wd_reader_nsamples(r), s->ndense, s->nslots);
        for (int k = 0; k < s->nslots; k++) fprintf(f[3], "%u%c", s->slot[k].buckets, k + 1 < s->nslots ? ' ' : '\n');
    }
    for (int i = 0; i < NF; i++) {
        int ok = bad < 0 && fflush(f[i]) == 0 && !ferror(f[i]) && fsync(fileno(f[i])) == 0;
        if (fclose(f[i]) != 0) ok = 0;
        f[i] = NULL;
        if (!ok && bad < 0) bad = i;
    }
    if (bad >= 0) { rc = fail_msg("%s: write failed: %s", path[bad], strerror(errno ? errno : EIO)); goto done; }
    for (int i = 0; i < NF; i++)
        if (rename(tmp[i], path[i]) != 0) {
            rc = fail_msg("%s: cannot finish writing: %s", path[i], strerror(errno)); goto done; }
    printf("dumped %lld samples, %d dense, %d slots to %s\n", (long long)wd_reader_nsamples(r), s->ndense, s->nslots,
           dir);
    rc = 0;
done:
    for (int i = 0; i < created; i++) {
        if (f[i]) fclose(f[i]);
        if (rc != 0) unlink(tmp[i]);
    }
    if (rc != 0) unmake_dirs(dir, made);
    free(row);
    if (r) wd_reader_close(r);
    sv_free(&pos);
    return rc;
}

static int run_command(int argc, char **argv);
// Every command's results go to stdout: a failed write there fails the command.
int main(int argc, char **argv) {
    // A closed standard stream (`wd convert ... 2>&-`) would hand its number
    // to the first file opened, an output among them, and messages meant for
    // it would land in that file: each closed one is opened on /dev/null.
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF && open("/dev/null", fd ? O_WRONLY : O_RDONLY) != fd) return 127;
    signal(SIGXFSZ, SIG_IGN);   // past a file size limit (ulimit -f) a write fails with EFBIG: the write error every
                                // output handles
    int rc = run_command(argc, argv);
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {   // (a failed command said why already)
        fprintf(stderr, "wd: error: standard output: write failed: %s\n", strerror(errno ? errno : EIO));
        return 1;
    }
    return rc;
}
// export --onnx M.wdm OUT.onnx (pos: the two arguments besides the options)
static int export_onnx(const export_args *a, strvec *pos) {
    const char *in = pos->v[0], *onnx = pos->v[1];
    wd_model *m = NULL;
    strvec texts = {0};
    int rc = 2;
    if (a->values && sv_split(&texts, a->values)) { rc = fail_msg("out of memory"); goto done; }
    for (int i = 0; i < texts.n; i++)
        if (wd_same_file(onnx, texts.v[i])) {
            refuse_same("export --onnx:", onnx, "the --values-from file", texts.v[i]);
            goto done;
        }
    install_signals(0, "");
    if ((rc = check_output("export --onnx:", onnx)) != 0) goto done;
    wd_status st = wd_model_load(in, &m);
    if (!st && texts.n) st = wd_model_export_onnx_values(m, onnx, (const char *const *)texts.v, texts.n);
    else if (!st) st = wd_model_export_onnx(m, onnx);
    if (st) { rc = fail(st); goto done; }
    const wd_model_desc *d = wd_model_description(m);
    const wd_schema *s = wd_model_schema(m);
    wd_model_info info;
    wd_model_get_info(m, &info);
    struct stat sb;
    printf("exported %s to %s: ONNX opset %d, %lld bytes\ninputs:", in, onnx, texts.n ? 18 : 17,
           stat(onnx, &sb) == 0 ? (long long)sb.st_size : -1ll);
    if (s->ndense) printf(" dense[N,%d]", s->ndense);
    for (int k = 0; k < s->nslots; k++)
        if (s->slot[k].kind == WD_ONE_HOT)
            printf(" %s.%s[N]", texts.n && wd_vocab_size(info.vocab, k) >= 0 ? "values" : "ids", s->slot[k].name);
        else printf(" ids.%s[T] offsets.%s[N]", s->slot[k].name, s->slot[k].name);
    for (int k = 0; !d->no_wide && !texts.n && k < d->ncross; k++)
        printf(" cross%d[N]", k);   // (--values-from: in the graph)
    printf("\noutput: probability[N]\n");
    rc = 0;
done:
    wd_model_destroy(m);
    sv_free(&texts);
    return rc;
}

static int run_command(int argc, char **argv) {
    if (argc < 2) { print_overview(stderr, 0); return 2; }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2)
            for (int i = 0; i < C_COUNT; i++)
                if (strcmp(argv[2], CMDS[i].name) == 0) { print_command_help(stdout, &CMDS[i]); return 0; }
        if (argc > 2) return usage_error("help: unknown command '%s'", argv[2]);
        print_overview(stdout, 1);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0 || strcmp(cmd, "-V") == 0) {
#ifdef WD_HAVE_CUDA
        const char *cuda = ", cuda";
#else
        const char *cuda = "";
#endif
        printf("wd %s (gemm=%s%s)\n", WD_VERSION_STRING, wd_gemm_engine_name(), cuda);
        return 0;
    }
    // a bad setting is said as such up front, not as the first thing it fails (a block "is bad"), once the
    // command is known and will run (its --help, --list-options and an unknown command's usage come first)
    int runs = 0;
    for (int i = 0; i < C_COUNT; i++) runs |= strcmp(cmd, CMDS[i].name) == 0;
    for (int i = 2; runs && i < argc && strcmp(argv[i], "--") != 0; i++)
        runs = strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "-h") != 0 && strcmp(argv[i], "--list-options") != 0;
    uint64_t limit;
    if (runs && wd_memory_available(&limit) != WD_OK) return fail(WD_ERR_INVALID_ARG);
    if (strcmp(cmd, "convert") == 0) return cmd_convert(argc - 2, argv + 2);
    if (strcmp(cmd, "inspect") == 0) return cmd_inspect(argc - 2, argv + 2);
    if (strcmp(cmd, "gen") == 0) return cmd_gen(argc - 2, argv + 2);
    if (strcmp(cmd, "train") == 0) return cmd_train(argc - 2, argv + 2);
    if (strcmp(cmd, "eval") == 0) return cmd_eval_predict(argc - 2, argv + 2, 0);
    if (strcmp(cmd, "predict") == 0) return cmd_eval_predict(argc - 2, argv + 2, 1);
    if (strcmp(cmd, "export") == 0) return cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "dump") == 0) return cmd_dump(argc - 2, argv + 2);
    return usage_error("unknown command '%s'", cmd);
}

// the implementation, after every line of the tool (see the top of the file)
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
