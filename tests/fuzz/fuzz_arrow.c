// The Arrow C stream reader (widedeep.h section 20) with hostile producers:
// the input builds a schema of up to 8 columns (every supported type, some
// unsupported ones, dictionaries, lists) and up to 6 record batches of
// arrays built for that schema, each with what the input asks of it: lengths
// and offsets (parent's and children's), null bitmaps and null counts,
// string and list offsets, views, dictionary indices, values (labels other
// than 0/1, NaN), and the structural faults a consumer can see (another
// number of columns, buffers or children, a missing or extra dictionary, a
// missing buffer, a released child), a producer error at any batch or at
// its schema. Every buffer is allocated at exactly the size its array's own
// length and offset call for (a string data buffer: its largest offset), so
// ASan sees any read outside what the producer gave. The stream is then
// converted (wd_convert, 1 or 2 threads) and read (wd_arrow_reader, read
// ahead on 1 to 3 threads): each either succeeds, with batches whose values
// a .wdr could hold, or fails with a status and a message; every array,
// schema and stream the producer made is released.
//   byte 0: columns (low 3 bits) and batches (next 3 bits); byte 1: buckets;
//   then, per column, its kind, its role (dense or categorical), then every
//   batch's arrays and faults, drawn from the rest (zeros when it runs out)
#include "fuzz_common.h"

typedef struct { const uint8_t *p; size_t n, i; } az_in;
static unsigned az_b(az_in *r) { return r->i < r->n ? r->p[r->i++] : 0; }

// Leaf formats: the supported ones, then two that are not (read by nothing,
// refused if mapped); a column is a leaf, a dictionary or a list of one.
static const char *const az_leaf[] = {"b", "c", "C", "s", "S", "i", "I", "l", "L", "f", "g", "u", "U", "z", "Z", "vu",
        "vz", "e", "tdm"};
enum { AZ_NLEAF = sizeof az_leaf / sizeof *az_leaf };
static const int az_width[AZ_NLEAF] = {0, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, -4, -8, -4, -8, 16, 16, 2, 8};
typedef struct { int leaf, dict, list; } az_col;   // dict: the dictionary's leaf + 1; list: 1 +l, 2 +L

static int az_arrays, az_schemas;   // alive: released at the end of every input

typedef struct { void *mem[24]; int nmem; struct ArrowArray *kid[12]; int nkid; } az_priv;
static void *az_keep(az_priv *p, size_t n) {
    void *m = calloc(1, n ? n : 1);
    if (!m || p->nmem == 24) abort();
    p->mem[p->nmem++] = m;
    return m;
}
static void az_release(struct ArrowArray *a) {
    az_priv *p = (az_priv *)a->private_data;
    for (int i = 0; i < p->nkid; i++) {
        if (p->kid[i]->release) p->kid[i]->release(p->kid[i]);
        free(p->kid[i]);
    }
    for (int i = 0; i < p->nmem; i++) free(p->mem[i]);
    free(p);
    a->release = NULL;
    az_arrays--;
}
static struct ArrowArray *az_new(az_priv **pp) {
    struct ArrowArray *a = (struct ArrowArray *)calloc(1, sizeof *a);
    az_priv *p = (az_priv *)calloc(1, sizeof *p);
    if (!a || !p) abort();
    a->private_data = p; a->release = az_release;
    az_arrays++;
    *pp = p;
    return a;
}
static void az_kid(az_priv *p, struct ArrowArray *k) { if (p->nkid == 12) abort(); p->kid[p->nkid++] = k; }

// A validity bitmap of `rows` bits (NULL: none); *nulls its zeros.
static uint8_t *az_bits(az_in *r, az_priv *p, int64_t rows, int64_t *nulls) {
    *nulls = 0;
    unsigned mode = az_b(r);
    if (mode % 3 == 0) return NULL;
    uint8_t *v = (uint8_t *)az_keep(p, (size_t)(rows + 7) / 8);
    for (int64_t i = 0; i < rows; i++)
        if (mode % 3 == 2 || az_b(r) % 4) v[i >> 3] |= (uint8_t)(1u << (i & 7)); else ++*nulls;
    return v;
}
// A leaf array of format az_leaf[leaf] that its parent reads `need` rows
// of (offset included); the input may make it wrong.
static struct ArrowArray *az_leaf_array(az_in *r, int leaf, int64_t need) {
    az_priv *p;
    struct ArrowArray *a = az_new(&p);
    unsigned f = az_b(r);
    a->offset = f % 8 == 1 ? -1 : (int64_t)(az_b(r) % 3);
    a->length = need + (f % 8 == 2 ? -1 : (int64_t)(az_b(r) % 2));
    if (a->length < 0) a->length = 0;
    int64_t rows = (a->offset < 0 ? 0 : a->offset) + a->length, nulls;
    uint8_t *valid = az_bits(r, p, rows, &nulls);
    a->null_count = f % 8 == 3 ? -1 : f % 8 == 4 ? nulls + 1 : nulls;
    int w = az_width[leaf], nvar = w == 16 ? (int)(az_b(r) % 3) : 0;
    a->n_buffers = w < 0 ? 3 : w == 16 ? 3 + nvar : 2;
    if (f % 8 == 5 && w != 16) a->n_buffers = (int64_t)(az_b(r) % 4);   // another layout (refused)
    const void **bufs = (const void **)az_keep(p, sizeof(void *) * (size_t)(a->n_buffers + 1));
    a->buffers = bufs;
    if (f % 8 == 6 && az_b(r) % 2) { a->n_children = 1; a->children = (struct ArrowArray **)az_keep(p, 8); }
    if (a->n_buffers > 0) bufs[0] = valid;
    if (a->n_buffers < 2 || (f % 8 == 7 && az_b(r) % 2)) return a;   // (a missing buffer)
    if (w >= 0 && w != 16) {   // booleans (bits) or fixed width: small numbers mostly (0/1 labels), some anything
        size_t bytes = w == 0 ? (size_t)(rows + 7) / 8 : (size_t)w * (size_t)rows;
        uint8_t *v = (uint8_t *)az_keep(p, bytes);
        for (size_t i = 0; i < bytes; i++) {
            unsigned x = az_b(r);
            v[i] = (uint8_t)(x & 0x80 ? az_b(r) : w == 0 || i % (size_t)w == 0 ? x & 3 : 0);
        }
        if (leaf == 9 || leaf == 10)   // floats: 0, 1 or their bytes as they are (NaN, huge)
            for (int64_t i = 0; i < rows; i++) {
                unsigned x = az_b(r) % 4;
                if (x < 2) { if (leaf == 9) ((float *)v)[i] = (float)x; else ((double *)v)[i] = x; }
            }
        bufs[1] = v;
        return a;
    }
    if (w < 0) {   // offsets (int32 or int64) and data
        int wide = w == -8;
        void *o = az_keep(p, (size_t)(rows + 1) * (wide ? 8 : 4));
        int64_t at = az_b(r) % 4, most = 0;
        for (int64_t i = 0; i <= rows; i++) {
            unsigned x = az_b(r);
            int64_t v = x % 16 == 15 ? (int64_t)(int8_t)az_b(r) : at;   // sometimes anything (negative, decreasing)
            at += x % 5;
            if (wide) ((int64_t *)o)[i] = v; else ((int32_t *)o)[i] = (int32_t)v;
            most = v > most ? v : most;
        }
        char *d = (char *)az_keep(p, (size_t)most);
        for (int64_t i = 0; i < most; i++) d[i] = (char)('a' + az_b(r) % 4);
        bufs[1] = o;
        bufs[2] = az_b(r) % 16 == 7 ? NULL : d;
        return a;
    }
    // views: inline up to 12 bytes, else (buffer, offset) into nvar data buffers with their sizes
    uint8_t *views = (uint8_t *)az_keep(p, 16 * (size_t)rows);
    int64_t *sizes = (int64_t *)az_keep(p, 8 * (size_t)nvar);
    for (int k = 0; k < nvar; k++) {
        sizes[k] = az_b(r) % 24;
        char *d = (char *)az_keep(p, (size_t)sizes[k]);
        memset(d, 'v', (size_t)sizes[k]);
        bufs[2 + k] = d;
        if (az_b(r) % 16 == 3) sizes[k] = -1;
    }
    bufs[2 + nvar] = sizes;
    for (int64_t i = 0; i < rows; i++) {
        int32_t len = (int32_t)(az_b(r) % 24) - (az_b(r) % 32 == 0), bi = (int32_t)(az_b(r) % 4) - 1,
                off = (int32_t)(az_b(r) % 16) - 1;
        memcpy(views + 16 * i, &len, 4);
        if (len > 12) { memcpy(views + 16 * i + 8, &bi, 4); memcpy(views + 16 * i + 12, &off, 4); }
        else for (int k = 0; k < len; k++) views[16 * i + 4 + k] = (uint8_t)('a' + az_b(r) % 3);
    }
    bufs[1] = views;
    return a;
}
// A column's array for column c (a leaf, a dictionary-encoded leaf or a list).
static struct ArrowArray *az_column(az_in *r, const az_col *c, int64_t need) {
    if (c->list) {
        az_priv *p;
        struct ArrowArray *a = az_new(&p);
        unsigned f = az_b(r);
        a->offset = az_b(r) % 2;
        a->length = need + (f % 8 == 1 ? -1 : 0);
        if (a->length < 0) a->length = 0;
        int64_t rows = a->offset + a->length, nulls;
        a->buffers = (const void **)az_keep(p, 2 * sizeof(void *));
        a->buffers[0] = az_bits(r, p, rows, &nulls);
        a->null_count = nulls;
        a->n_buffers = f % 8 == 2 ? 1 : 2;
        void *o = az_keep(p, (size_t)(rows + 1) * (c->list == 2 ? 8 : 4));
        int64_t at = 0;
        for (int64_t i = 0; i <= rows; i++) {
            unsigned x = az_b(r);
            int64_t v = x % 16 == 15 ? (int64_t)(int8_t)az_b(r) : at;
            at += x % 4;
            if (c->list == 2) ((int64_t *)o)[i] = v; else ((int32_t *)o)[i] = (int32_t)v;
        }
        a->buffers[1] = f % 8 == 3 ? NULL : o;
        a->n_children = f % 8 == 4 ? 0 : 1;
        a->children = (struct ArrowArray **)az_keep(p, sizeof(void *));
        struct ArrowArray *v = az_leaf_array(r, c->leaf, at - (f % 8 == 5));   // its values (sometimes too few)
        az_kid(p, v);
        a->children[0] = f % 8 == 6 ? NULL : v;
        return a;
    }
    struct ArrowArray *a = az_leaf_array(r, c->leaf, need);
    unsigned f = az_b(r);
    if ((c->dict != 0) != (f % 16 == 9)) {   // the dictionary (sometimes missing, or there where none is)
        int64_t n = 1 + az_b(r) % 5;
        struct ArrowArray *d = az_leaf_array(r, c->dict ? c->dict - 1 : 11, n);
        az_kid((az_priv *)a->private_data, d);
        a->dictionary = d;
        if (f % 16 == 10) d->release(d);   // a released dictionary
    }
    return a;
}

// ---- the producer: the schema and batches (moved out by get_next)
typedef struct {
    int ncols, nbatches, next, fail_at, schema_calls, schema_fail_at;
    az_col col[8];
    struct ArrowArray batch[6];
} az_prod;
static void az_schema_release(struct ArrowSchema *s) {
    for (int64_t i = 0; i < s->n_children; i++) {
        struct ArrowSchema *c = s->children[i];
        if (c->children) { c->children[0]->release(c->children[0]); free(c->children[0]); free(c->children); }
        if (c->dictionary) { c->dictionary->release(c->dictionary); free(c->dictionary); }
        if (c->release) c->release(c);
        free(c);
    }
    free(s->children);
    s->release = NULL;
    az_schemas--;
}
static void az_leaf_schema_release(struct ArrowSchema *s) { s->release = NULL; az_schemas--; }
static struct ArrowSchema *az_leaf_schema(const char *fmt) {
    struct ArrowSchema *s = (struct ArrowSchema *)calloc(1, sizeof *s);
    if (!s) abort();
    s->format = fmt; s->name = "item"; s->flags = ARROW_FLAG_NULLABLE; s->release = az_leaf_schema_release;
    az_schemas++;
    return s;
}
static const char *const az_names[8] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};
static int az_get_schema(struct ArrowArrayStream *st, struct ArrowSchema *out) {
    az_prod *p = (az_prod *)st->private_data;
    if (p->schema_calls++ == p->schema_fail_at) return 22;
    memset(out, 0, sizeof *out);
    out->format = "+s"; out->name = ""; out->n_children = p->ncols; out->release = az_schema_release;
    out->children = (struct ArrowSchema **)calloc(8, sizeof(void *));
    if (!out->children) abort();
    az_schemas++;
    for (int i = 0; i < p->ncols; i++) {
        const az_col *c = &p->col[i];
        struct ArrowSchema *s = (struct ArrowSchema *)calloc(1, sizeof *s);
        if (!s) abort();
        s->name = az_names[i]; s->flags = ARROW_FLAG_NULLABLE; s->release = az_leaf_schema_release;
        az_schemas++;
        s->format = c->list == 1 ? "+l" : c->list == 2 ? "+L" : az_leaf[c->leaf];
        if (c->list) {
            s->n_children = 1;
            s->children = (struct ArrowSchema **)calloc(1, sizeof(void *));
            if (!s->children) abort();
            s->children[0] = az_leaf_schema(az_leaf[c->leaf]);
        }
        if (c->dict) s->dictionary = az_leaf_schema(az_leaf[c->dict - 1]);
        out->children[i] = s;
    }
    return 0;
}
static int az_get_next(struct ArrowArrayStream *st, struct ArrowArray *out) {
    az_prod *p = (az_prod *)st->private_data;
    memset(out, 0, sizeof *out);
    if (p->next == p->fail_at) return 5;
    if (p->next < p->nbatches) { *out = p->batch[p->next]; p->batch[p->next++].release = NULL; }
    return 0;
}
static const char *az_error(struct ArrowArrayStream *st) { (void)st; return "the producer's own error"; }
static void az_stream_release(struct ArrowArrayStream *st) {
    az_prod *p = (az_prod *)st->private_data;
    for (int i = 0; i < p->nbatches; i++) if (p->batch[i].release) p->batch[i].release(&p->batch[i]);
    st->release = NULL;
}
static int az_open(void *user, struct ArrowArrayStream *out) {
    out->get_schema = az_get_schema; out->get_next = az_get_next; out->get_last_error = az_error;
    out->release = az_stream_release; out->private_data = user;
    ((az_prod *)user)->next = 0;
    return 0;
}
// The producer's batches, made afresh (each pass of a conversion, each reader).
static void az_batches(az_prod *p, const uint8_t *data, size_t n, size_t at) {
    az_in r = {data, n, at};
    for (int b = 0; b < p->nbatches; b++) {
        az_priv *q;
        struct ArrowArray *a = &p->batch[b];
        struct ArrowArray *heap = az_new(&q);   // its private data, moved into the batch
        *a = *heap;
        free(heap);
        unsigned f = az_b(&r);
        a->length = az_b(&r) % 9;
        a->offset = az_b(&r) % 3;
        a->null_count = f % 16 == 1 ? 1 : 0;
        a->n_buffers = 1;
        a->buffers = (const void **)az_keep(q, sizeof(void *));
        a->n_children = p->ncols + (f % 16 == 2) - (f % 16 == 3 && p->ncols);   // a schema change
        a->children = (struct ArrowArray **)az_keep(q, sizeof(void *) * (size_t)(a->n_children + 1));
        for (int i = 0; i < a->n_children; i++) {
            struct ArrowArray *c = az_column(&r, &p->col[i % p->ncols], a->offset + a->length);
            az_kid(q, c);
            a->children[i] = c;
        }
    }
}
// Each batch a .wdr could hold (the reader's values checked like a decoded block's).
static void az_read(const wd_text_spec *t, az_prod *p, const uint8_t *data, size_t n, size_t at, int threads) {
    az_batches(p, data, n, at);
    struct ArrowArrayStream s;
    az_open(p, &s);
    wd_arrow_reader *ar = NULL;
    wd_arrow_reader_desc d;
    memset(&d, 0, sizeof d);
    d.spec = t; d.unlabeled = threads == 3; d.batch_size = 1 + (int)(at % 5); d.threads = threads;
    wd_status st = wd_arrow_reader_open(&d, &s, &ar);
    if (s.release) abort();   // moved, also on failure
    const wd_batch *b;
    while (!st && (st = wd_arrow_reader_next(ar, &b)) == WD_OK && b)
        if (wd__check_values(&t->schema, b, 0, b->n, "fuzz", WD_ERR_CORRUPT) != WD_OK) abort();
    if (st && !wd_last_error()[0]) abort();   // a failure says why
    wd_arrow_reader_close(ar);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    az_in r = {data, n, 0};
    az_prod p;
    memset(&p, 0, sizeof p);
    unsigned h = az_b(&r);
    p.ncols = 1 + (int)(h % 8);
    p.nbatches = (int)(h >> 3 & 7) % 7;
    uint32_t buckets = 1 + az_b(&r) % 40;
    unsigned g = az_b(&r);
    p.fail_at = g % 8 < 6 ? -1 : (int)(az_b(&r) % 7);
    p.schema_fail_at = g % 32 == 31 ? 1 + (int)(az_b(&r) % 3) : -1;   // a later call: convert's or a reader's
    char dense[64] = "", cat[64] = "", derive[32] = "";
    for (int i = 0; i < p.ncols; i++) {
        unsigned k = az_b(&r), role = az_b(&r);
        az_col *c = &p.col[i];
        c->leaf = (int)(k % AZ_NLEAF);
        if (k / AZ_NLEAF % 4 == 1) c->dict = 1 + (int)(az_b(&r) % AZ_NLEAF);   // index type: c->leaf
        if (k / AZ_NLEAF % 4 == 2) c->list = 1 + (int)(az_b(&r) % 2);
        if (i == 0) continue;   // c0: the label
        char *to = role % 2 ? dense : cat;
        snprintf(to + strlen(to), 8, "%s%s", *to ? "," : "", az_names[i]);
        if (role % 16 == 6 && !derive[0]) snprintf(derive, sizeof derive, "d=%s[0:2]", az_names[i]);
    }
    size_t at = r.i;   // the batches are drawn from here on
    struct ArrowArrayStream s;
    az_open(&p, &s);
    struct ArrowSchema schema;
    wd_text_spec t;
    int have_spec = 0;
    if (s.get_schema(&s, &schema) == 0) {
        wd_csv_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.label = "c0"; cd.dense = dense[0] ? dense : NULL; cd.cat = cat[0] ? cat : NULL;
        cd.derive = derive[0] ? derive : NULL; cd.buckets = buckets;
        have_spec = wd_text_spec_arrow(&t, &schema, &cd) == WD_OK;
        schema.release(&schema);
    }
    s.release(&s);
    if (have_spec) {
        char out[64];
        snprintf(out, sizeof out, "/tmp/wdfuzz-arrow-%d.wdr", (int)getpid());
        az_batches(&p, data, n, at);
        wd_convert_desc d;
        memset(&d, 0, sizeof d);
        d.spec = &t; d.arrow = az_open; d.arrow_user = &p; d.output = out; d.block_samples = 1 + (int)(n % 7);
        d.threads = 1 + (int)(n % 2); d.skip_bad_lines = (int)(n / 2 % 2);
        wd_status st = wd_convert(&d, NULL);
        if (st && !wd_last_error()[0]) abort();
        az_stream_release(&(struct ArrowArrayStream){.private_data = &p});   // batches a failed pass left
        if (!st) {   // what was written reads back whole
            wd_reader *rd;
            if (wd_reader_open(out, &rd) != WD_OK) abort();
            const wd_batch *blk;
            for (int64_t i = 0; i < wd_reader_nblocks(rd); i++) if (wd_reader_block(rd, i, &blk) != WD_OK) abort();
            wd_reader_close(rd);
        }
        unlink(out);
        for (int threads = 1; threads <= 3; threads += 2) az_read(&t, &p, data, n, at, threads);
        wd_text_spec_free(&t);
    }
    if (az_arrays != 0 || az_schemas != 0) abort();   // every array and schema the producer made released
    return 0;
}
