// widedeep's Python extension: the header (WIDEDEEP_IMPLEMENTATION, the
// portable GEMM loops unless WIDEDEEP_GEMM says otherwise in setup.py)
// under a thin CPython layer. Arrow data comes in through the PyCapsule
// interface (__arrow_c_stream__: pyarrow, Polars, DuckDB), straight into
// section 20's reader; nothing of the library is written again here.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define WIDEDEEP_IMPLEMENTATION
#include "widedeep.h"

static PyObject *WdError;

// Raises widedeep.Error with wd_last_error()'s text (which holds a pending
// Python exception's, when opening a stream raised one). The text is decoded
// with errors='replace': the library cuts names and values at a byte count,
// maybe inside a UTF-8 character.
static PyObject *raise_wd(wd_status st) {
    char msg[WD__ERR_MAX + 64];
    snprintf(msg, sizeof msg, "%s: %s", wd_status_string(st), wd_last_error());
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) PyErr_Clear();
    if (PyErr_Occurred()) return NULL;   // Ctrl-C: KeyboardInterrupt stays
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    PyObject *e = text ? PyObject_CallFunctionObjArgs(WdError, text, NULL) : NULL, *code = PyLong_FromLong((long)st);
    if (e && code && PyObject_SetAttrString(e, "status", code) == 0) PyErr_SetObject(WdError, e);
    Py_XDECREF(text); Py_XDECREF(e); Py_XDECREF(code);
    return NULL;
}

// Moves the stream out of a PyCapsule "arrow_array_stream" (the capsule's
// destructor then finds it released).
static int take_stream(PyObject *cap, struct ArrowArrayStream *out) {
    struct ArrowArrayStream *s = (struct ArrowArrayStream *)PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (!s) return -1;
    if (!s->release) { PyErr_SetString(PyExc_ValueError, "the Arrow stream was already consumed"); return -1; }
    *out = *s;
    s->release = NULL;
    return 0;
}
// Closes a stream's reader without the GIL: close waits for its read-ahead,
// whose producer call (a Python-made reader's get_next) may need the GIL.
static void reader_close(wd_arrow_reader *ar) {
    if (!ar) return;
    Py_BEGIN_ALLOW_THREADS
    wd_arrow_reader_close(ar);
    Py_END_ALLOW_THREADS
}
// The message of the pending Python exception into the library's error.
static void python_error_to_wd(const char *what) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *str = value ? PyObject_Str(value) : NULL;
    const char *s = str ? PyUnicode_AsUTF8(str) : NULL;
    wd__fail(WD_ERR_IO, "%s: %s: %s", what, type ? ((PyTypeObject *)type)->tp_name : "error", s ? s : "");
    if (!s) PyErr_Clear();
    Py_XDECREF(str);
    PyErr_Restore(type, value, tb);
}

// ---- convert
typedef struct opener {
    PyObject *factory;              // () -> a capsule (obj.__arrow_c_stream__)
    struct ArrowArrayStream pending;   // the stream opened for the schema: the first pass's
} opener;
static int open_stream(void *user, struct ArrowArrayStream *out) {
    opener *o = (opener *)user;
    if (o->pending.release) { *out = o->pending; o->pending.release = NULL; return 0; }
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *cap = PyObject_CallNoArgs(o->factory);
    int rc = cap ? take_stream(cap, out) : -1;
    Py_XDECREF(cap);
    if (rc) python_error_to_wd("opening the Arrow stream again (a pass over the data)");
    PyGILState_Release(g);
    return rc;
}
// Progress: Ctrl-C (a pending KeyboardInterrupt) stops the library's work.
static int stop_requested(void) {
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = PyErr_CheckSignals() != 0;
    PyGILState_Release(g);
    return stop;
}
static int convert_progress(void *user, int64_t done, int64_t total, int64_t rows) {
    (void)user; (void)done; (void)total; (void)rows;
    return stop_requested();
}
// Splits "a,b" style lists are passed through; the CSV rules are the library's.
static PyObject *py_convert(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *names[] = {"factory", "output", "label", "dense", "cat", "id", "derive", "buckets", "slot_buckets",
            "delimiter", "dense_raw", "schema_from", "min_count", "vocab_capacity", "extend_vocab", "threads", "block",
            "level", "skip_bad", NULL};
    PyObject *factory;
    const char *output, *label, *dense = NULL, *cat = NULL, *id = NULL, *derive = NULL, *slot_buckets = NULL,
                                *schema_from = NULL;
    const char *delimiter = ",";
    unsigned long buckets = 0, vocab_capacity = 0;
    int dense_raw = 0, min_count = 0, extend_vocab = 0, threads = 1, block = 0, level = 0, skip_bad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oss|zzzzkzspzikpiiip", names, &factory, &output, &label, &dense, &cat,
                &id, &derive, &buckets, &slot_buckets, &delimiter, &dense_raw, &schema_from, &min_count,
                &vocab_capacity, &extend_vocab, &threads, &block, &level, &skip_bad))
        return NULL;
    if (strlen(delimiter) != 1) { PyErr_SetString(PyExc_ValueError, "delimiter: one character"); return NULL; }
    opener o;
    memset(&o, 0, sizeof o);
    o.factory = factory;
    PyObject *cap = PyObject_CallNoArgs(factory);
    if (!cap) return NULL;
    int rc = take_stream(cap, &o.pending);
    Py_DECREF(cap);
    if (rc) return NULL;
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    struct ArrowSchema schema;
    memset(&schema, 0, sizeof schema);
    wd_status st = t ? WD_OK : wd__fail(WD_ERR_NOMEM, "out of memory");
    if (!st && o.pending.get_schema(&o.pending, &schema) != 0) {
        const char *e = o.pending.get_last_error ? o.pending.get_last_error(&o.pending) : NULL;
        st = wd__fail(WD_ERR_IO, "arrow: the producer failed giving its schema: %s", e ? e : "(no message)");
    }
    wd_csv_desc cd;
    memset(&cd, 0, sizeof cd);
    cd.label = label; cd.dense = dense; cd.cat = cat; cd.id = id; cd.derive = derive; cd.buckets = (uint32_t)buckets;
    cd.dense_raw = dense_raw; cd.delimiter = delimiter[0];
    if (!st) st = wd_text_spec_arrow(t, &schema, &cd);
    if (schema.release) schema.release(&schema);
    if (!st && slot_buckets) st = wd_text_spec_buckets(t, slot_buckets);
    if (!st && schema_from) {   // its bucket counts and vocabulary, as wd convert --schema-from
        wd_reader *ref = NULL;
        st = wd_reader_open(schema_from, &ref);
        if (!st && ref->spec && (ref->spec->format != t->format || ref->spec->dense_raw != t->dense_raw))
            st = wd__fail(WD_ERR_INVALID_ARG,
                    "schema_from %s: that file's input format is not csv%s, this conversion's is%s: "
                     "its ids and features "
                    "would not mean the same",
                    schema_from, t->dense_raw ? " with dense_raw" : "",
                    t->dense_raw ? " with dense_raw" : " without dense_raw");
        if (!st) st = wd_text_spec_match(t, wd_reader_schema(ref));
        if (!st && wd_reader_vocab(ref)) st = wd_text_spec_vocab(t, wd_reader_vocab(ref));
        wd_reader_close(ref);
    }
    char ids[4200];
    snprintf(ids, sizeof ids, "%s.ids", output);
    wd_convert_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t;
    d.arrow = open_stream;
    d.arrow_user = &o;
    d.output = output;
    d.threads = threads;
    d.block_samples = block;
    d.level = level; d.skip_bad_lines = skip_bad; d.min_count = min_count; d.vocab_capacity = (uint32_t)vocab_capacity;
    d.extend_vocab = extend_vocab; d.ids_output = id ? ids : NULL; d.progress = convert_progress;
    wd_convert_report rep;
    memset(&rep, 0, sizeof rep);
    if (!st) {
        Py_BEGIN_ALLOW_THREADS
        st = wd_convert(&d, &rep);
        Py_END_ALLOW_THREADS
    }
    if (o.pending.release) o.pending.release(&o.pending);
    if (t) wd_text_spec_free(t);
    free(t);
    if (st) return raise_wd(st);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:d}", "rows", (long long)rep.rows, "bad_rows", (long long)rep.bad_rows,
            "blocks", (long long)rep.blocks, "bytes_out", (long long)rep.bytes_out, "seconds", rep.seconds);
}

// ---- the model
typedef struct {
    PyObject_HEAD
    wd_model *m;
    wd_text_spec *spec;             // how raw columns map: the model's own, or its schema file's (NULL: unknown)
} ModelObject;
static PyTypeObject ModelType;

static void model_dealloc(ModelObject *o) {
    if (o->m) wd_model_destroy(o->m);
    if (o->spec) { wd_text_spec_free(o->spec); free(o->spec); }
    Py_TYPE(o)->tp_free((PyObject *)o);
}
// The model's own input format (recorded from training files), if any.
static void model_refresh_spec(ModelObject *o) {
    wd_text_spec *t = (wd_text_spec *)calloc(1, sizeof *t);
    if (t && wd_model_spec(o->m, t) == WD_OK) {
        if (o->spec) { wd_text_spec_free(o->spec); free(o->spec); }
        o->spec = t;
    } else free(t);
}
static PyObject *wrap_model(wd_model *m, wd_text_spec *spec) {
    ModelObject *o = PyObject_New(ModelObject, &ModelType);
    if (!o) { wd_model_destroy(m); if (spec) { wd_text_spec_free(spec); free(spec); } return NULL; }
    o->m = m; o->spec = spec;
    model_refresh_spec(o);
    return (PyObject *)o;
}
static const char *OPTIMIZERS[] = {"adagrad", "adam", NULL};
static PyObject *py_model_create(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *names[] = {"schema_from", "embed_dim", "hidden", "optimizer", "lr_deep", "lr_wide", "seed", NULL};
    const char *path, *optimizer = "adagrad";
    int embed_dim = 0;
    PyObject *hidden = NULL;
    float lr_deep = 0, lr_wide = 0;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(
                args, kw, "s|iOsffK", names, &path, &embed_dim, &hidden, &optimizer, &lr_deep, &lr_wide, &seed))
        return NULL;
    wd_model_desc md;
    memset(&md, 0, sizeof md);
    md.embed_dim = embed_dim; md.lr_deep = lr_deep; md.lr_wide = lr_wide; md.seed = seed;
    int opt = -1;
    for (int i = 0; OPTIMIZERS[i]; i++) if (strcmp(optimizer, OPTIMIZERS[i]) == 0) opt = i;
    if (opt < 0) { PyErr_Format(PyExc_ValueError, "optimizer '%s': adagrad or adam", optimizer); return NULL; }
    md.optimizer = opt == 1 ? WD_ADAM : WD_ADAGRAD;
    if (hidden && hidden != Py_None) {
        PyObject *seq = PySequence_Fast(hidden, "hidden: a sequence of layer widths");
        if (!seq) return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n > WD_MAX_LAYERS) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "hidden: at most %d layers", WD_MAX_LAYERS);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) md.hidden[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        Py_DECREF(seq);
        if (PyErr_Occurred()) return NULL;
    }
    wd_reader *r = NULL;
    wd_status st = wd_reader_open(path, &r);
    if (st) return raise_wd(st);
    md.schema = wd_reader_schema(r);
    wd_model *m = NULL;
    st = wd_model_create(&md, &m);
    wd_text_spec *t = NULL;
    if (!st && r->spec && (t = (wd_text_spec *)calloc(1, sizeof *t)) != NULL) {   // the file's mapping, for streams
        *t = *r->spec;
        t->vocab = NULL;
        t->schema = *wd_reader_schema(r);
        if (wd_reader_vocab(r)) st = wd_text_spec_vocab(t, wd_reader_vocab(r));
    }
    wd_reader_close(r);
    if (st) { if (m) wd_model_destroy(m); if (t) { wd_text_spec_free(t); free(t); } return raise_wd(st); }
    return wrap_model(m, t);
}
static PyObject *py_model_load(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    wd_model *m = NULL;
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wd_model_load(path, &m);
    Py_END_ALLOW_THREADS
    if (st) return raise_wd(st);
    return wrap_model(m, NULL);
}
static PyObject *model_save(ModelObject *o, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    wd_status st;
    Py_BEGIN_ALLOW_THREADS
    st = wd_model_save(o->m, path);
    Py_END_ALLOW_THREADS
    if (st) return raise_wd(st);
    Py_RETURN_NONE;
}

// A list of paths into a NULL-terminated array (strings kept by `keep`).
static const char **paths_of(PyObject *list, int *n, PyObject **keep) {
    *keep = PySequence_Fast(list, "a list of .wdr paths");
    if (!*keep) return NULL;
    *n = (int)PySequence_Fast_GET_SIZE(*keep);
    const char **v = (const char **)calloc((size_t)*n + 1, sizeof *v);
    if (!v) { PyErr_NoMemory(); return NULL; }
    for (int i = 0; i < *n; i++)
        if (!(v[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(*keep, i)))) { free(v); return NULL; }
    return v;
}
typedef struct train_ui { PyObject *progress; int stop; } train_ui;
static int train_progress(void *user, const wd_progress *p) {
    train_ui *u = (train_ui *)user;
    if (u->stop) return 1;   // an exception is pending: no more Python calls
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = PyErr_CheckSignals() != 0;
    if (!stop && u->progress && u->progress != Py_None) {
        PyObject *r = PyObject_CallFunction(u->progress, "{s:L,s:L,s:L,s:d,s:d,s:d,s:d,s:d}", "step",
                (long long)p->step, "samples", (long long)p->samples, "epoch", (long long)p->epoch, "loss", p->loss,
                "samples_per_s", p->samples_per_s, "elapsed_s", p->elapsed_s, "valid_auc", p->valid_auc,
                "valid_logloss", p->valid_logloss);
        if (!r) stop = 1;   // the callback raised: stop, and the exception is raised
        else stop = PyObject_IsTrue(r) == 1;
        Py_XDECREF(r);
    }
    PyGILState_Release(g);
    u->stop = stop;
    return stop;
}
// The spec a stream is read with: the model's own input format, or the file's it was created from.
static const wd_text_spec *model_spec(ModelObject *o) {
    if (!o->spec)
        wd__fail(WD_ERR_UNSUPPORTED,
                "this model has no input format to map an Arrow stream's columns with: create it from a .wdr "
                "converted with one (widedeep.Model.create(schema_from=...)), or train it on such files first");
    return o->spec;
}
static PyObject *model_train(ModelObject *o, PyObject *args, PyObject *kw) {
    static char *names[] = {"files", "stream", "valid", "batch_size", "epochs", "threads", "no_shuffle", "max_steps",
            "checkpoint", "checkpoint_every", "eval_every", "progress", "loader_threads", "loader_ram", NULL};
    PyObject *files = Py_None, *stream = Py_None, *valid = Py_None, *progress = Py_None;
    int batch_size = 0, epochs = 0, threads = 0, no_shuffle = 0, loader_threads = 0;
    long long max_steps = 0, checkpoint_every = 0, eval_every = 0;
    long long loader_ram = 0;
    const char *checkpoint = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOiiipLzLLOiL", names, &files, &stream, &valid, &batch_size, &epochs,
                &threads, &no_shuffle, &max_steps, &checkpoint, &checkpoint_every, &eval_every, &progress,
                &loader_threads, &loader_ram))
        return NULL;
    if (loader_ram < 0) return PyErr_Format(PyExc_ValueError, "loader_ram %lld is negative", loader_ram);
    wd_train_desc td;
    memset(&td, 0, sizeof td);
    PyObject *kf = NULL, *kv = NULL;
    const char **fv = NULL, **vv = NULL;
    wd_arrow_reader *ar = NULL;
    wd_status st = WD_OK;
    int raised = 0;   // the progress callback raised (or Ctrl-C): that exception, as it is
    if (files != Py_None && !(fv = paths_of(files, &td.nfiles, &kf))) goto fail;
    if (valid != Py_None && !(vv = paths_of(valid, &td.nvalid, &kv))) goto fail;
    td.files = fv;
    td.valid_files = vv;
    td.batch_size = batch_size;
    td.epochs = epochs;
    td.threads = threads;
    td.no_shuffle = no_shuffle;
    td.max_steps = max_steps;
    td.checkpoint_path = checkpoint;
    td.checkpoint_every = checkpoint_every;
    td.eval_every = eval_every;
    td.loader_threads = loader_threads;
    td.loader_ram = (size_t)loader_ram;
    train_ui ui = {progress, 0};
    td.progress = train_progress; td.user = &ui;
    if (stream != Py_None) {   // a capsule: the stream's batches through wd_arrow_source, decoded within the budgets
        wd_arrow_reader_desc rd;
        memset(&rd, 0, sizeof rd);
        rd.spec = model_spec(o);
        if (!rd.spec) { st = WD_ERR_UNSUPPORTED; goto fail; }
        struct ArrowArrayStream s;
        if (take_stream(stream, &s)) goto fail;
        int bs = batch_size > 0 ? batch_size : 4096;
        rd.batch_size = bs; rd.threads = loader_threads; rd.ram_bytes = (size_t)loader_ram;
        st = wd_arrow_reader_open(&rd, &s, &ar);
        if (st) goto fail;
        td.batch_size = bs;
        td.source = wd_arrow_source; td.source_user = ar;
    }
    wd_train_report rep;
    memset(&rep, 0, sizeof rep);
    Py_BEGIN_ALLOW_THREADS
    st = wd_train(o->m, &td, &rep);
    Py_END_ALLOW_THREADS
    if (st == WD_ERR_ABORTED && rep.stopped == 1) {   // stopped by progress: the checkpoint saved
        raised = PyErr_Occurred() != NULL;
        if (!raised) st = WD_OK;   // the callback's true result: the report, its "stopped" 1
    }
    if (st) goto fail;
    reader_close(ar);
    free(fv); free(vv); Py_XDECREF(kf); Py_XDECREF(kv);
    model_refresh_spec(o);
    double data_share = rep.train_s > 0 ? rep.stage_s[WD_STAGE_DATA] / rep.train_s : 0.0;   // waiting for batches
    return Py_BuildValue("{s:L,s:L,s:d,s:d,s:d,s:d,s:d,s:i,s:s,s:d}", "steps", (long long)rep.steps, "samples",
            (long long)rep.samples, "seconds", rep.seconds, "samples_per_s", rep.samples_per_s, "last_loss",
            rep.last_loss, "valid_auc", rep.valid_auc, "valid_logloss", rep.valid_logloss, "stopped", rep.stopped,
            "engine", rep.engine, "stage_data", data_share);
fail:
    reader_close(ar);
    free(fv); free(vv); Py_XDECREF(kf); Py_XDECREF(kv);
    if (PyErr_Occurred() && (raised || !st)) return NULL;
    return raise_wd(st ? st : WD_ERR_INVALID_ARG);
}
// Probabilities (and labels) of a stream's rows, batch by batch: bytes of float32.
static PyObject *model_predict_stream(ModelObject *o, PyObject *args, PyObject *kw) {
    static char *names[] = {"stream", "batch_size", "labels", NULL};
    PyObject *stream;
    int batch_size = 4096, want_labels = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|ip", names, &stream, &batch_size, &want_labels)) return NULL;
    const wd_text_spec *t = model_spec(o);
    if (!t) return raise_wd(WD_ERR_UNSUPPORTED);
    struct ArrowArrayStream s;
    if (take_stream(stream, &s)) return NULL;
    wd_arrow_reader *ar = NULL;
    wd_arrow_reader_desc rd;
    memset(&rd, 0, sizeof rd);
    rd.spec = t; rd.batch_size = batch_size; rd.unlabeled = !want_labels;
    wd_status st = wd_arrow_reader_open(&rd, &s, &ar);
    if (st) return raise_wd(st);
    float *p = NULL, *y = NULL;
    size_t n = 0, cap = 0;
    Py_BEGIN_ALLOW_THREADS
    const wd_batch *b;
    while (!st && (st = wd_arrow_reader_next(ar, &b)) == WD_OK && b) {
        if (n + (size_t)b->n > cap) {
            size_t nc = (n + (size_t)b->n) * 2;
            float *np_ = (float *)realloc(p, nc * sizeof *p), *ny = (float *)realloc(y, nc * sizeof *y);
            if (np_) p = np_;
            if (ny) y = ny;
            if (!np_ || !ny) { st = wd__fail(WD_ERR_NOMEM, "out of memory for %zu predictions", nc); break; }
            cap = nc;
        }
        st = wd_predict(o->m, b, p + n);
        memcpy(y + n, b->label, sizeof(float) * (size_t)b->n);
        n += (size_t)b->n;
    }
    Py_END_ALLOW_THREADS
    reader_close(ar);
    PyObject *res = NULL;
    if (st) raise_wd(st);
    else
        res = Py_BuildValue("(y#y#)", (const char *)p, (Py_ssize_t)(n * sizeof(float)), (const char *)y,
                (Py_ssize_t)(n * sizeof(float)));
    free(p); free(y);
    return res;
}
static PyObject *model_evaluate_files(ModelObject *o, PyObject *args, PyObject *kw) {
    static char *names[] = {"files", "batch_size", "threads", "predictions", NULL};
    PyObject *files;
    int batch_size = 0, threads = 0, want = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iip", names, &files, &batch_size, &threads, &want)) return NULL;
    PyObject *keep = NULL;
    wd_eval_desc ed;
    memset(&ed, 0, sizeof ed);
    const char **fv = paths_of(files, &ed.nfiles, &keep);
    if (!fv) { Py_XDECREF(keep); return NULL; }
    wd_status st = WD_OK;
    int64_t total = 0;
    for (int i = 0; !st && i < ed.nfiles; i++) {   // room for every prediction
        wd_reader *r;
        st = wd_reader_open(fv[i], &r);
        if (!st) { total += wd_reader_nsamples(r); wd_reader_close(r); }
    }
    float *pred = want && !st ? (float *)malloc(sizeof(float) * (size_t)(total ? total : 1)) : NULL;
    ed.files = fv;
    ed.batch_size = batch_size;
    ed.threads = threads;
    ed.predictions = pred;
    ed.predictions_cap = pred ? total : 0;
    wd_metrics met;
    memset(&met, 0, sizeof met);
    if (!st) {
        Py_BEGIN_ALLOW_THREADS
        st = wd_evaluate(o->m, &ed, &met);
        Py_END_ALLOW_THREADS
    }
    free(fv); Py_XDECREF(keep);
    if (st) { free(pred); return raise_wd(st); }
    PyObject *res = Py_BuildValue("{s:d,s:d,s:d,s:d,s:L,s:y#}", "auc", met.auc, "logloss", met.logloss, "mean_pred",
            met.mean_pred, "ctr", met.ctr, "samples", (long long)met.samples, "predictions", (const char *)pred,
            (Py_ssize_t)(pred ? sizeof(float) * (size_t)total : 0));
    free(pred);
    return res;
}
static PyObject *py_metrics(PyObject *self, PyObject *args) {   // exact AUC and log loss of float32 bytes
    (void)self;
    Py_buffer p, y;
    if (!PyArg_ParseTuple(args, "y*y*", &p, &y)) return NULL;
    int64_t n = (int64_t)(p.len / 4);
    double auc = NAN, ll = NAN;
    wd_status st =
            p.len == y.len ? wd_auc((const float *)p.buf, (const float *)y.buf, NULL, n, &auc) : WD_ERR_INVALID_ARG;
    if (!st) ll = wd_logloss((const float *)p.buf, (const float *)y.buf, NULL, n);
    PyBuffer_Release(&p); PyBuffer_Release(&y);
    if (st) return raise_wd(st);
    return Py_BuildValue("(dd)", auc, ll);
}
static PyObject *model_info(ModelObject *o, PyObject *unused) {
    (void)unused;
    const wd_schema *s = wd_model_schema(o->m);
    int64_t epoch, batch, step;
    wd_model_position(o->m, &epoch, &batch, &step);
    return Py_BuildValue("{s:i,s:i,s:L,s:L,s:O}", "dense", s->ndense, "slots", s->nslots, "bytes",
            (long long)wd_model_bytes(o->m), "step", (long long)step, "has_input_format", o->spec ? Py_True : Py_False);
}
// The parameters and optimizer state, as bytes (bit-for-bit comparisons).
static PyObject *model_state(ModelObject *o, PyObject *unused) {
    (void)unused;
    const wd_model *m = o->m;
    size_t P = (size_t)m->P, W = (size_t)m->wide_rows, N = m->emb ? (size_t)(m->emb_rows * m->E) : 0;
    const float *parts[] = {
            m->dense, m->dense_s1, m->dense_s2, m->wide, m->wide_z, m->wide_n, m->emb, m->emb_s1, m->emb_s2};
    size_t sizes[] = {P, P, P, W, W, W, N, N, N}, total = 0;
    for (int i = 0; i < 9; i++) total += parts[i] ? sizes[i] : 0;
    PyObject *res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * 4));
    if (!res) return NULL;
    char *q = PyBytes_AS_STRING(res);
    for (int i = 0; i < 9; i++) if (parts[i]) { memcpy(q, parts[i], sizes[i] * 4); q += sizes[i] * 4; }
    return res;
}

static PyMethodDef model_methods[] = {{"save", (PyCFunction)model_save, METH_VARARGS, "save(path): a .wdm checkpoint"},
        {"train", (PyCFunction)(void (*)(void))model_train, METH_VARARGS | METH_KEYWORDS, "train(files=|stream=, ...)"},
        {"predict_stream", (PyCFunction)(void (*)(void))model_predict_stream, METH_VARARGS | METH_KEYWORDS,
                "(probabilities, labels) bytes"},
        {"evaluate_files", (PyCFunction)(void (*)(void))model_evaluate_files, METH_VARARGS | METH_KEYWORDS,
                "metrics of .wdr files"},
        {"info", (PyCFunction)model_info, METH_NOARGS, "schema and position"},
        {"state", (PyCFunction)model_state, METH_NOARGS, "parameters and optimizer state as bytes"},
        {NULL, NULL, 0, NULL}};
static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "widedeep._wd.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a widedeep model (wd_model)",
    .tp_methods = model_methods,
};

static PyMethodDef methods[] = {{"convert", (PyCFunction)(void (*)(void))py_convert, METH_VARARGS | METH_KEYWORDS,
                                        "an Arrow stream factory to a .wdr"},
        {"model_create", (PyCFunction)(void (*)(void))py_model_create, METH_VARARGS | METH_KEYWORDS,
                "a new model for a .wdr's schema"},
        {"model_load", py_model_load, METH_VARARGS, "a model from a .wdm"},
        {"metrics", py_metrics, METH_VARARGS, "(auc, logloss) of float32 probabilities and labels"},
        {NULL, NULL, 0, NULL}};
static struct PyModuleDef moddef = {
        PyModuleDef_HEAD_INIT, "_wd", "widedeep.h under Python", -1, methods, NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit__wd(void) {
    if (PyType_Ready(&ModelType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    WdError = PyErr_NewExceptionWithDoc("widedeep.Error",
            "a widedeep library error: its message is wd_last_error()'s, .status the wd_status", PyExc_RuntimeError,
            NULL);
    Py_INCREF(WdError);
    PyModule_AddObject(m, "Error", WdError);
    Py_INCREF(&ModelType);
    PyModule_AddObject(m, "Model", (PyObject *)&ModelType);
    PyModule_AddStringConstant(m, "version", WD_VERSION_STRING);
    return m;
}
