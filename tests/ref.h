/* tests/ref.h - the reference training step of the widedeep model.

   A plain, scalar implementation of one training step (forward, weighted
   mean log loss, backward, Adagrad/Adam + FTRL-Proximal update) written from
   the formulas documented in widedeep.h section 13 ("Model"), in double, one
   sample and one coordinate at a time. It is the reference the CPU trainer
   (wd_train, tests/test_ref.c) and the CUDA trainer (tests/test_gpu.cu) are
   compared against, so it deliberately shares no code with the library: it
   calls no wd__* function and neither wd_cross_bucket nor wd_hash_* (the
   cross hash is implemented below from the documented formula). It only
   reads public structures: wd_model_desc and wd_schema (the settings),
   wd_model_view (to copy parameters in and compare them) and wd_batch.

   Use: ref_from_view() copies a model (wd_model_view_get) into a
   ref_model; ref_step() trains it one batch (or ref_gradients() then
   ref_apply(), to inspect or alter the gradient in between); after the
   library trained the same batches, ref_compare_view() compares every
   parameter and state array, each tensor against its own RMS. Include
   widedeep.h before this file. Compiles as C11 and C++17 (nvcc included).

   What the header leaves unsaid and this file assumes:
   - The dense buffer is "MLP | wide dense (D) | wide bias" (section 17);
     inside the MLP, layer l's weights come first, then its biases, layers
     from the input up; a layer's weight matrix is (out, in) row-major:
     W[o * in + j] multiplies input j into output o.
   - The state arrays (section 17) hold: dense_s1 = Adagrad accumulator or
     Adam m, dense_s2 = Adam v for the MLP part; for the wide dense weights
     and the wide bias (FTRL, like the wide tables) dense_s1 = z and
     dense_s2 = n; emb_s1 = Adagrad accumulator or Adam m, emb_s2 = Adam v.
   - The wide dense weights and the wide bias are updated every step (they
     see every sample); MLP weights every step; wide-table and embedding rows
     only when one of the batch's samples holds their id, whatever that
     sample's weight ("only rows seen in the batch are touched").
   - The wide term of a one-hot slot is its id's wide weight; the wide part
     is bias + sum_j w_j dense_j + slot terms + cross terms.
   - With no_wide the wide parameters (tables, wide dense, bias) and their
     state stay as they are; with no_deep the MLP and embeddings do.
   - A batch whose weights sum to 0 has no defined mean: ref_gradients
     returns -1 and nothing is updated.
   - Precision bf16 (the header's wd_precision note): the MLP's products
     read bf16 values of the input x, the weights, the hidden activations
     (stored rounded, after the ReLU) and every dz (dlogit w (p - y), not yet
     divided by the weight sum, then each layer's ReLU'd gradient); sums stay
     exact here (fp32 there); the biases, the bias gradients (sums of the
     unrounded dz), dW, the input gradient dx and the logit are not rounded.
     The rounding (ref_bf16) is float's to 8 significant bits, ties to even,
     a float subnormal to a zero of its sign. */
#ifndef WD_REF_H
#define WD_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_desc {
    int E, D, S;                        // embedding dim, dense features, slots
    int kind[WD_MAX_SLOTS];             // WD_ONE_HOT / WD_MULTI_HOT
    uint32_t buckets[WD_MAX_SLOTS];
    int nhidden, hidden[WD_MAX_LAYERS];
    int pooling;                        // WD_POOL_SUM / WD_POOL_MEAN
    int ncross, cross[WD_MAX_CROSSES][2];
    uint32_t cross_buckets;
    int no_wide, no_deep;
    int optimizer;                      // WD_ADAGRAD / WD_ADAM (deep part)
    double lr_deep, lr_wide;            // lr_wide is FTRL's alpha
    double ftrl_beta, ftrl_l1, ftrl_l2;
    double adam_beta1, adam_beta2, adam_eps;
    int bf16;                           // precision bf16 (rounding as above)
    int bf16_skip;                      // tests' negative controls: rounding sites left out (REF_BF16_*)
} ref_desc;
#define REF_BF16_DZ 1                   // the dz the products read
#define REF_BF16_ACT 2                  // the hidden activations

typedef struct ref_model {
    ref_desc d;
    // layout derived from d (see the assumptions above)
    int IN, nlayers;
    int layer_in[WD_MAX_LAYERS + 1], layer_out[WD_MAX_LAYERS + 1];
    int64_t layer_w[WD_MAX_LAYERS + 1], layer_b[WD_MAX_LAYERS + 1];
    int64_t P_mlp, P;
    int ntables;
    int64_t table_off[WD_MAX_SLOTS + WD_MAX_CROSSES + 1];
    int64_t wide_rows, emb_rows;
    // parameters and optimizer state
    double *dense, *dense_s1, *dense_s2;    // (P)
    double *wide, *wide_z, *wide_n;         // (wide_rows)
    double *emb, *emb_s1, *emb_s2;          // (emb_rows * E), NULL without the deep part
    int64_t step;                           // updates applied so far (Adam's t - 1)
} ref_model;

// The gradient of one batch: d(weighted mean loss)/d(parameter).
typedef struct ref_grads {
    double *dense;                  // (P)
    double *wide;                   // (wide_rows)
    double *emb;                    // (emb_rows * E)
    unsigned char *wide_seen;       // (wide_rows) row held by a sample of the batch
    unsigned char *emb_seen;        // (emb_rows)
    double loss;                    // weighted mean log loss
    double wsum;                    // sum of the sample weights
} ref_grads;

// ---- settings and layout ----------------------------------------------------

// Settings from a model description whose defaults are filled in
// (wd_model_description, or wd_model_view.desc).
static inline void ref_desc_from(ref_desc *r, const wd_model_desc *d) {
    memset(r, 0, sizeof *r);
    const wd_schema *s = d->schema;
    r->E = d->embed_dim;
    r->D = s->ndense;
    r->S = s->nslots;
    for (int k = 0; k < s->nslots; k++) { r->kind[k] = s->slot[k].kind; r->buckets[k] = s->slot[k].buckets; }
    while (r->nhidden < WD_MAX_LAYERS && d->hidden[r->nhidden] > 0) { r->hidden[r->nhidden] = d->hidden[r->nhidden]; r->nhidden++; }
    r->pooling = d->pooling;
    r->ncross = d->ncross;
    for (int c = 0; c < d->ncross; c++) { r->cross[c][0] = d->cross[c][0]; r->cross[c][1] = d->cross[c][1]; }
    r->cross_buckets = d->cross_buckets;
    r->no_wide = d->no_wide;
    r->no_deep = d->no_deep;
    r->optimizer = d->optimizer;
    r->lr_deep = d->lr_deep;
    r->lr_wide = d->lr_wide;
    r->ftrl_beta = d->ftrl_beta;
    r->ftrl_l1 = d->ftrl_l1;
    r->ftrl_l2 = d->ftrl_l2;
    r->adam_beta1 = d->adam_beta1;
    r->adam_beta2 = d->adam_beta2;
    r->adam_eps = d->adam_eps;
    r->bf16 = d->precision == WD_PRECISION_BF16;
}

static inline void ref_layout(ref_model *m) {
    const ref_desc *d = &m->d;
    m->IN = d->D + d->S * d->E;
    m->nlayers = d->no_deep ? 0 : d->nhidden + 1;
    int64_t off = 0;
    int width = m->IN;
    for (int l = 0; l < m->nlayers; l++) {
        int out = l < d->nhidden ? d->hidden[l] : 1;
        m->layer_in[l] = width;
        m->layer_out[l] = out;
        m->layer_w[l] = off; off += (int64_t)width * out;
        m->layer_b[l] = off; off += out;
        width = out;
    }
    m->P_mlp = off;
    m->P = off + d->D + 1;                          // | wide dense (D) | wide bias
    m->ntables = d->S + d->ncross;                  // slots, then crosses
    int64_t rows = 0;
    for (int t = 0; t < m->ntables; t++) {
        m->table_off[t] = rows;
        rows += t < d->S ? (int64_t)d->buckets[t] : (int64_t)d->cross_buckets;
    }
    m->table_off[m->ntables] = rows;
    m->wide_rows = rows;
    m->emb_rows = m->table_off[d->S];
}

static inline double *ref_zeros(int64_t n) { return (double *)calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

static inline void ref_free(ref_model *m) {
    free(m->dense); free(m->dense_s1); free(m->dense_s2);
    free(m->wide); free(m->wide_z); free(m->wide_n);
    free(m->emb); free(m->emb_s1); free(m->emb_s2);
    memset(m, 0, sizeof *m);
}

// A model of zeros with d's layout; 0, or -1 when out of memory.
static inline int ref_init(ref_model *m, const ref_desc *d) {
    memset(m, 0, sizeof *m);
    m->d = *d;
    ref_layout(m);
    m->dense = ref_zeros(m->P); m->dense_s1 = ref_zeros(m->P); m->dense_s2 = ref_zeros(m->P);
    m->wide = ref_zeros(m->wide_rows); m->wide_z = ref_zeros(m->wide_rows); m->wide_n = ref_zeros(m->wide_rows);
    int ok = m->dense && m->dense_s1 && m->dense_s2 && m->wide && m->wide_z && m->wide_n;
    if (!d->no_deep) {
        m->emb = ref_zeros(m->emb_rows * d->E);
        m->emb_s1 = ref_zeros(m->emb_rows * d->E);
        m->emb_s2 = ref_zeros(m->emb_rows * d->E);
        ok = ok && m->emb && m->emb_s1 && m->emb_s2;
    }
    if (!ok) { ref_free(m); return -1; }
    return 0;
}

static inline void ref_copy_in(double *dst, const float *src, int64_t n) {
    if (!src) return;   // an array the model does not keep stays 0
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

// A reference copy of a model: settings from v->desc, the layout derived
// from them (and checked against the view's), every parameter and state
// array copied. 0 on success; -1 with the reason in `why`.
static inline int ref_from_view(ref_model *m, const wd_model_view *v, char *why, size_t whylen) {
    ref_desc d;
    ref_desc_from(&d, v->desc);
    if (ref_init(m, &d) != 0) { snprintf(why, whylen, "out of memory"); return -1; }
    int bad = m->IN != v->IN || m->nlayers != v->nlayers || m->P_mlp != v->P_mlp || m->P != v->P ||
              m->ntables != v->ntables || m->wide_rows != v->wide_rows || m->emb_rows != v->emb_rows ||
              d.E != v->E || d.D != v->D || d.S != v->S;
    for (int l = 0; !bad && l < m->nlayers; l++)
        bad = m->layer_in[l] != v->layer_in[l] || m->layer_out[l] != v->layer_out[l] ||
              m->layer_w[l] != v->layer_w[l] || m->layer_b[l] != v->layer_b[l];
    for (int t = 0; !bad && t <= m->ntables; t++) bad = m->table_off[t] != v->table_off[t];
    if (bad) {
        snprintf(why, whylen, "layout differs from the view's: IN %d/%d layers %d/%d P_mlp %lld/%lld P %lld/%lld tables %d/%d wide_rows %lld/%lld emb_rows %lld/%lld",
                 m->IN, v->IN, m->nlayers, v->nlayers, (long long)m->P_mlp, (long long)v->P_mlp, (long long)m->P, (long long)v->P,
                 m->ntables, v->ntables, (long long)m->wide_rows, (long long)v->wide_rows, (long long)m->emb_rows, (long long)v->emb_rows);
        ref_free(m);
        return -1;
    }
    if (!d.no_deep && (!v->emb || !v->emb_s1 || (d.optimizer == WD_ADAM && !v->emb_s2))) {
        snprintf(why, whylen, "the view lacks embedding arrays");
        ref_free(m);
        return -1;
    }
    ref_copy_in(m->dense, v->dense, m->P);
    ref_copy_in(m->dense_s1, v->dense_s1, m->P);
    ref_copy_in(m->dense_s2, v->dense_s2, m->P);
    ref_copy_in(m->wide, v->wide, m->wide_rows);
    ref_copy_in(m->wide_z, v->wide_z, m->wide_rows);
    ref_copy_in(m->wide_n, v->wide_n, m->wide_rows);
    if (!d.no_deep) {
        int64_t ne = m->emb_rows * d.E;
        ref_copy_in(m->emb, v->emb, ne);
        ref_copy_in(m->emb_s1, v->emb_s1, ne);
        if (d.optimizer == WD_ADAM) ref_copy_in(m->emb_s2, v->emb_s2, ne);
    }
    m->step = v->step ? *v->step : 0;
    return 0;
}

// ---- the cross hash (section 13) ---------------------------------------------

// splitmix64's finalizer, 64-bit wrapping arithmetic.
static inline uint64_t ref_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}
// Row of crossed pair c (0-based) for ids a (first slot) and b (second slot).
static inline uint32_t ref_cross_bucket(uint32_t a, uint32_t b, int c, uint32_t buckets) {
    uint64_t key = ((uint64_t)a << 32) | (uint64_t)b;
    uint64_t salt = (uint64_t)(c + 1) * 0x9E3779B97F4A7C15ULL;
    return (uint32_t)(ref_mix64(key ^ salt) % buckets);
}

// ---- forward -------------------------------------------------------------------

// v as float, rounded to bf16's 8 significant bits (to nearest, ties to
// even; a float subnormal to a zero of its sign; Inf and NaN kept).
static inline double ref_bf16(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t e = u & 0x7f800000u;
    if (e == 0) u &= 0x80000000u;
    else if (e != 0x7f800000u) u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}
// What a product reads of v: v, or at precision bf16 ref_bf16(v).
static inline double ref_in(const ref_desc *d, double v) { return d->bf16 ? ref_bf16(v) : v; }
// The same at one rounding site (REF_BF16_*), unless a negative control leaves it out.
static inline double ref_in_at(const ref_desc *d, double v, int site) { return d->bf16_skip & site ? v : ref_in(d, v); }

// Ids of sample i in slot k of a batch (pointer and count).
static inline const uint32_t *ref_ids(const wd_batch *b, int k, int i, int *count) {
    if (b->kind[k] == WD_MULTI_HOT) {
        *count = (int)(b->offs[k][i + 1] - b->offs[k][i]);
        return b->ids[k] + b->offs[k][i];
    }
    *count = 1;
    return b->ids[k] + i;
}

// Scratch for one sample: the MLP input and every layer's output.
typedef struct ref_work {
    double *x;                              // (IN)
    double *act[WD_MAX_LAYERS + 1];         // (layer_out[l]) after ReLU; the last is the deep logit
    double *delta, *delta2;                 // (widest) backward ping-pong
    double *dx;                             // (IN) gradient of the MLP input
} ref_work;

static inline void ref_work_free(ref_work *w) {
    free(w->x); free(w->delta); free(w->delta2); free(w->dx);
    for (int l = 0; l <= WD_MAX_LAYERS; l++) free(w->act[l]);
    memset(w, 0, sizeof *w);
}
static inline int ref_work_init(ref_work *w, const ref_model *m) {
    memset(w, 0, sizeof *w);
    int widest = m->IN;
    for (int l = 0; l < m->nlayers; l++) if (m->layer_out[l] > widest) widest = m->layer_out[l];
    w->x = ref_zeros(m->IN);
    w->dx = ref_zeros(m->IN);
    w->delta = ref_zeros(widest);
    w->delta2 = ref_zeros(widest);
    int ok = w->x && w->dx && w->delta && w->delta2;
    for (int l = 0; l < m->nlayers; l++) { w->act[l] = ref_zeros(m->layer_out[l]); ok = ok && w->act[l]; }
    if (!ok) { ref_work_free(w); return -1; }
    return 0;
}

// The logit of sample i of b (wide + deep), leaving the MLP's input and
// activations in w for the backward pass.
static inline double ref_forward(const ref_model *m, ref_work *w, const wd_batch *b, int i) {
    const ref_desc *d = &m->d;
    int D = d->D, E = d->E;
    const float *xd = b->dense + (size_t)i * (size_t)D;
    double deep = 0.0, wide = 0.0;
    if (!d->no_deep) {
        // x = [dense | pooled embedding of slot 0 | ... | slot S-1]
        for (int j = 0; j < D; j++) w->x[j] = xd[j];
        for (int k = 0; k < d->S; k++) {
            double *e = w->x + D + k * E;
            for (int q = 0; q < E; q++) e[q] = 0.0;
            int c;
            const uint32_t *ids = ref_ids(b, k, i, &c);
            for (int j = 0; j < c; j++) {
                const double *row = m->emb + (m->table_off[k] + ids[j]) * E;
                for (int q = 0; q < E; q++) e[q] += row[q];
            }
            if (d->pooling == WD_POOL_MEAN && c > 0) for (int q = 0; q < E; q++) e[q] /= c;
        }
        if (d->bf16) for (int j = 0; j < m->IN; j++) w->x[j] = ref_bf16(w->x[j]);   // the products' input (the embeddings' gradient is not rounded)
        const double *in = w->x;
        for (int l = 0; l < m->nlayers; l++) {
            int nin = m->layer_in[l], nout = m->layer_out[l];
            const double *W = m->dense + m->layer_w[l], *bias = m->dense + m->layer_b[l];
            for (int o = 0; o < nout; o++) {
                double s = bias[o];
                for (int j = 0; j < nin; j++) s += ref_in(d, W[(int64_t)o * nin + j]) * in[j];
                if (l + 1 < m->nlayers) {
                    if (s < 0.0) s = 0.0;   // ReLU on hidden layers
                    s = ref_in_at(d, s, REF_BF16_ACT);   // at bf16 stored rounded: the next product's input
                }
                w->act[l][o] = s;
            }
            in = w->act[l];
        }
        deep = w->act[m->nlayers - 1][0];
    }
    if (!d->no_wide) {
        const double *wd_ = m->dense + m->P_mlp;       // D weights, then the bias
        wide = wd_[D];
        for (int j = 0; j < D; j++) wide += wd_[j] * xd[j];
        for (int k = 0; k < d->S; k++) {
            int c;
            const uint32_t *ids = ref_ids(b, k, i, &c);
            double s = 0.0;
            for (int j = 0; j < c; j++) s += m->wide[m->table_off[k] + ids[j]];
            if (d->pooling == WD_POOL_MEAN && c > 0) s /= c;
            wide += s;
        }
        for (int c = 0; c < d->ncross; c++) {
            uint32_t a = b->ids[d->cross[c][0]][i], bb = b->ids[d->cross[c][1]][i];
            wide += m->wide[m->table_off[d->S + c] + ref_cross_bucket(a, bb, c, d->cross_buckets)];
        }
    }
    return wide + deep;
}

static inline double ref_sigmoid(double z) { return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)); }
// -(y log p + (1-y) log(1-p)) with p = sigmoid(z), without overflow.
static inline double ref_logloss(double z, double y) { return (z > 0 ? z : 0.0) - z * y + log1p(exp(-fabs(z))); }

// Probabilities of every sample of b. 0, or -1 when out of memory.
static inline int ref_predict(const ref_model *m, const wd_batch *b, double *probs) {
    ref_work w;
    if (ref_work_init(&w, m) != 0) return -1;
    for (int i = 0; i < b->n; i++) probs[i] = ref_sigmoid(ref_forward(m, &w, b, i));
    ref_work_free(&w);
    return 0;
}

// ---- backward ------------------------------------------------------------------

static inline void ref_grads_free(ref_grads *g) {
    free(g->dense); free(g->wide); free(g->emb); free(g->wide_seen); free(g->emb_seen);
    memset(g, 0, sizeof *g);
}
static inline int ref_grads_init(ref_grads *g, const ref_model *m) {
    memset(g, 0, sizeof *g);
    g->dense = ref_zeros(m->P);
    g->wide = ref_zeros(m->wide_rows);
    g->emb = ref_zeros(m->emb_rows * m->d.E);
    g->wide_seen = (unsigned char *)calloc((size_t)(m->wide_rows > 0 ? m->wide_rows : 1), 1);
    g->emb_seen = (unsigned char *)calloc((size_t)(m->emb_rows > 0 ? m->emb_rows : 1), 1);
    if (!g->dense || !g->wide || !g->emb || !g->wide_seen || !g->emb_seen) { ref_grads_free(g); return -1; }
    return 0;
}

// Gradient of the batch's weighted mean log loss,
//   L = sum_i w_i l_i / sum_i w_i,  l_i = -(y_i log p_i + (1-y_i) log(1-p_i)),
// with respect to every parameter, into g (initialised by ref_grads_init).
// 0; -1 when the weights sum to 0 (no mean) or memory runs out.
static inline int ref_gradients(const ref_model *m, const wd_batch *b, ref_grads *g) {
    const ref_desc *d = &m->d;
    int D = d->D, E = d->E;
    memset(g->dense, 0, sizeof(double) * (size_t)m->P);
    memset(g->wide, 0, sizeof(double) * (size_t)(m->wide_rows > 0 ? m->wide_rows : 1));
    memset(g->emb, 0, sizeof(double) * (size_t)(m->emb_rows * E > 0 ? m->emb_rows * E : 1));
    memset(g->wide_seen, 0, (size_t)(m->wide_rows > 0 ? m->wide_rows : 1));
    memset(g->emb_seen, 0, (size_t)(m->emb_rows > 0 ? m->emb_rows : 1));
    g->loss = 0.0;
    g->wsum = 0.0;
    for (int i = 0; i < b->n; i++) g->wsum += b->weight[i];
    if (!(g->wsum > 0.0)) return -1;
    ref_work w;
    if (ref_work_init(&w, m) != 0) return -1;
    // at precision bf16 the products read rounded dz, rounded before the
    // division by the weight sum (as the library): there the MLP's deltas
    // are w (p - y) and what they add to g is scaled by inv
    double inv = d->bf16 ? 1.0 / g->wsum : 1.0;
    for (int i = 0; i < b->n; i++) {
        double y = b->label[i], wt = b->weight[i];
        double z = ref_forward(m, &w, b, i);
        g->loss += wt * ref_logloss(z, y) / g->wsum;
        double dl = wt * (ref_sigmoid(z) - y) / g->wsum;   // dL/dlogit_i
        const float *xd = b->dense + (size_t)i * (size_t)D;
        if (!d->no_deep) {
            // MLP, output layer first: delta = dL/d(layer output before ReLU) (/ inv)
            w.delta[0] = d->bf16 ? wt * (ref_sigmoid(z) - y) : dl;
            for (int l = m->nlayers - 1; l >= 0; l--) {
                int nin = m->layer_in[l], nout = m->layer_out[l];
                const double *W = m->dense + m->layer_w[l];
                const double *in = l ? w.act[l - 1] : w.x;
                double *gW = g->dense + m->layer_w[l], *gb = g->dense + m->layer_b[l];
                for (int o = 0; o < nout; o++) {
                    double dz = ref_in_at(d, w.delta[o], REF_BF16_DZ);
                    gb[o] += w.delta[o] * inv;
                    for (int j = 0; j < nin; j++) gW[(int64_t)o * nin + j] += dz * in[j] * inv;
                }
                double *down = l ? w.delta2 : w.dx;
                for (int j = 0; j < nin; j++) {
                    double s = 0.0;
                    for (int o = 0; o < nout; o++) s += ref_in(d, W[(int64_t)o * nin + j]) * ref_in_at(d, w.delta[o], REF_BF16_DZ);
                    if (l) s = in[j] > 0.0 ? s : 0.0;   // through the ReLU of layer l-1
                    down[j] = l ? s : s * inv;
                }
                if (l) { double *t = w.delta; w.delta = w.delta2; w.delta2 = t; }
            }
            // embeddings: each id occurrence gets its slot's share of dx
            for (int k = 0; k < d->S; k++) {
                int c;
                const uint32_t *ids = ref_ids(b, k, i, &c);
                double scale = (d->pooling == WD_POOL_MEAN && c > 0) ? 1.0 / c : 1.0;
                for (int j = 0; j < c; j++) {
                    int64_t row = m->table_off[k] + ids[j];
                    g->emb_seen[row] = 1;
                    for (int q = 0; q < E; q++) g->emb[row * E + q] += w.dx[D + k * E + q] * scale;
                }
            }
        }
        if (!d->no_wide) {
            double *gw = g->dense + m->P_mlp;
            for (int j = 0; j < D; j++) gw[j] += dl * xd[j];
            gw[D] += dl;
            for (int k = 0; k < d->S; k++) {
                int c;
                const uint32_t *ids = ref_ids(b, k, i, &c);
                double scale = (d->pooling == WD_POOL_MEAN && c > 0) ? 1.0 / c : 1.0;
                for (int j = 0; j < c; j++) {
                    int64_t row = m->table_off[k] + ids[j];
                    g->wide_seen[row] = 1;
                    g->wide[row] += dl * scale;
                }
            }
            for (int c = 0; c < d->ncross; c++) {
                uint32_t a = b->ids[d->cross[c][0]][i], bb = b->ids[d->cross[c][1]][i];
                int64_t row = m->table_off[d->S + c] + ref_cross_bucket(a, bb, c, d->cross_buckets);
                g->wide_seen[row] = 1;
                g->wide[row] += dl;
            }
        }
    }
    ref_work_free(&w);
    return 0;
}

// ---- optimizers (section 13), one coordinate each --------------------------------

static inline void ref_adagrad(double *w, double *acc, double g, double lr) {
    *acc += g * g;
    *w -= lr * g / (sqrt(*acc) + 1e-10);
}
// t: the global step of this update, from 1.
static inline void ref_adam(double *w, double *mo, double *v, double g, const ref_desc *d, int64_t t) {
    *mo = d->adam_beta1 * *mo + (1.0 - d->adam_beta1) * g;
    *v = d->adam_beta2 * *v + (1.0 - d->adam_beta2) * g * g;
    double mhat = *mo / (1.0 - pow(d->adam_beta1, (double)t));
    double vhat = *v / (1.0 - pow(d->adam_beta2, (double)t));
    *w -= d->lr_deep * mhat / (sqrt(vhat) + d->adam_eps);
}
static inline void ref_deep_update(double *w, double *s1, double *s2, double g, const ref_desc *d, int64_t t) {
    if (d->optimizer == WD_ADAM) ref_adam(w, s1, s2, g, d, t);
    else ref_adagrad(w, s1, g, d->lr_deep);
}
// FTRL-Proximal with alpha = lr_wide.
static inline void ref_ftrl(double *w, double *z, double *n, double g, const ref_desc *d) {
    double alpha = d->lr_wide;
    double sigma = (sqrt(*n + g * g) - sqrt(*n)) / alpha;
    *z += g - sigma * *w;
    *n += g * g;
    if (fabs(*z) <= d->ftrl_l1 || *n == 0.0) *w = 0.0;
    else {
        double sgn = *z > 0 ? 1.0 : -1.0;
        *w = -(*z - sgn * d->ftrl_l1) / ((d->ftrl_beta + sqrt(*n)) / alpha + d->ftrl_l2);
    }
}

// Applies one step's update from gradients g, then counts the step.
static inline void ref_apply(ref_model *m, const ref_grads *g) {
    const ref_desc *d = &m->d;
    int E = d->E;
    int64_t t = m->step + 1;
    if (!d->no_deep) {
        for (int64_t i = 0; i < m->P_mlp; i++) ref_deep_update(&m->dense[i], &m->dense_s1[i], &m->dense_s2[i], g->dense[i], d, t);
        for (int64_t row = 0; row < m->emb_rows; row++) {
            if (!g->emb_seen[row]) continue;
            for (int q = 0; q < E; q++) {
                int64_t at = row * E + q;
                ref_deep_update(&m->emb[at], &m->emb_s1[at], &m->emb_s2[at], g->emb[at], d, t);
            }
        }
    }
    if (!d->no_wide) {
        for (int64_t i = m->P_mlp; i < m->P; i++) ref_ftrl(&m->dense[i], &m->dense_s1[i], &m->dense_s2[i], g->dense[i], d);
        for (int64_t row = 0; row < m->wide_rows; row++)
            if (g->wide_seen[row]) ref_ftrl(&m->wide[row], &m->wide_z[row], &m->wide_n[row], g->wide[row], d);
    }
    m->step = t;
}

// One training step on batch b; the batch's weighted mean loss (at the
// parameters before the update) in *loss. 0, or -1 (see ref_gradients).
static inline int ref_step(ref_model *m, const wd_batch *b, double *loss) {
    ref_grads g;
    if (ref_grads_init(&g, m) != 0) return -1;
    int rc = ref_gradients(m, b, &g);
    if (rc == 0) {
        ref_apply(m, &g);
        if (loss) *loss = g.loss;
    }
    ref_grads_free(&g);
    return rc;
}

// A deep copy of a model (e.g. the state before a step, to replay it).
static inline int ref_copy(ref_model *dst, const ref_model *src) {
    if (ref_init(dst, &src->d) != 0) return -1;
    int64_t ne = src->emb_rows * src->d.E;
    memcpy(dst->dense, src->dense, sizeof(double) * (size_t)src->P);
    memcpy(dst->dense_s1, src->dense_s1, sizeof(double) * (size_t)src->P);
    memcpy(dst->dense_s2, src->dense_s2, sizeof(double) * (size_t)src->P);
    memcpy(dst->wide, src->wide, sizeof(double) * (size_t)src->wide_rows);
    memcpy(dst->wide_z, src->wide_z, sizeof(double) * (size_t)src->wide_rows);
    memcpy(dst->wide_n, src->wide_n, sizeof(double) * (size_t)src->wide_rows);
    if (!src->d.no_deep) {
        memcpy(dst->emb, src->emb, sizeof(double) * (size_t)ne);
        memcpy(dst->emb_s1, src->emb_s1, sizeof(double) * (size_t)ne);
        memcpy(dst->emb_s2, src->emb_s2, sizeof(double) * (size_t)ne);
    }
    dst->step = src->step;
    return 0;
}

// ---- comparison ------------------------------------------------------------------
/* got (float, from the library) against want (the reference), element by
   element: |got - want| <= tol_rms * rms(want) + tol_rel * |want|. Returns
   the worst ratio |got - want| / tolerance (<= 1 passes) and its index in
   *at; a NaN or Inf on either side, or any difference where the tolerance is
   0 (an all-zero array), gives INFINITY. The RMS is over want's finite
   values. */
static inline double ref_compare_array(const float *got, const double *want, int64_t n,
                                       double tol_rms, double tol_rel, int64_t *at) {
    double ss = 0.0;
    int64_t nf = 0;
    for (int64_t i = 0; i < n; i++) if (isfinite(want[i])) { ss += want[i] * want[i]; nf++; }
    double rms = nf > 0 ? sqrt(ss / (double)nf) : 0.0;
    double worst = 0.0;
    *at = n > 0 ? 0 : -1;
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i], r;
        if (!isfinite(g) || !isfinite(w)) r = INFINITY;
        else {
            double err = fabs(g - w), tol = tol_rms * rms + tol_rel * fabs(w);
            r = err == 0.0 ? 0.0 : tol > 0.0 ? err / tol : INFINITY;
        }
        if (r > worst) { worst = r; *at = i; }
    }
    return worst;
}

#define REF_NARRAYS 9
enum { REF_DENSE, REF_DENSE_S1, REF_DENSE_S2, REF_WIDE, REF_WIDE_Z, REF_WIDE_N, REF_EMB, REF_EMB_S1, REF_EMB_S2 };
static inline const char *ref_array_name(int a) {
    static const char *const names[REF_NARRAYS] = {"dense", "dense_s1", "dense_s2", "wide", "wide_z", "wide_n", "emb", "emb_s1", "emb_s2"};
    return a >= 0 && a < REF_NARRAYS ? names[a] : "?";
}
#define REF_MAX_SEGMENTS (2 * (WD_MAX_LAYERS + 1) + 2 + WD_MAX_SLOTS + WD_MAX_CROSSES)

/* The tensors inside array a: segment j is [bounds[j], bounds[j+1]). Dense
   arrays: each layer's weights, each layer's biases, the wide dense
   weights, the wide bias; wide arrays: one table per slot and per cross;
   embedding arrays: one table per slot. Returns the segment count. The
   tolerance's RMS is taken per segment: the values of one tensor share a
   scale, those of different tensors (an MLP accumulator next to an FTRL n)
   need not. */
static inline int ref_segments(const ref_model *m, int a, int64_t bounds[REF_MAX_SEGMENTS + 1]) {
    int n = 0;
    if (a <= REF_DENSE_S2) {
        for (int l = 0; l < m->nlayers; l++) {
            bounds[n++] = m->layer_w[l];
            bounds[n++] = m->layer_b[l];
        }
        bounds[n++] = m->P_mlp;
        bounds[n++] = m->P_mlp + m->d.D;
        bounds[n] = m->P;
        if (m->d.D == 0) { bounds[n - 1] = m->P; n--; }   // no wide dense weights: one segment less
    } else if (a <= REF_WIDE_N) {
        for (int t = 0; t <= m->ntables; t++) bounds[n++] = m->table_off[t];
        n--;
    } else {
        for (int k = 0; k <= m->d.S; k++) bounds[n++] = m->table_off[k] * m->d.E;
        n--;
    }
    return n;
}

typedef struct ref_report {
    double worst[REF_NARRAYS];      // per array (0 for arrays not compared)
    int64_t at[REF_NARRAYS];        // index of the worst element (-1: not compared)
    double overall;                 // the worst of them
    int arg;                        // which array holds it
} ref_report;

// Every parameter and state array of the view against the reference,
// each tensor (see ref_segments) with its own RMS.
static inline double ref_compare_view(const ref_model *m, const wd_model_view *v, double tol_rms, double tol_rel, ref_report *rep) {
    const float *got[REF_NARRAYS] = {v->dense, v->dense_s1, v->dense_s2, v->wide, v->wide_z, v->wide_n, v->emb, v->emb_s1, v->emb_s2};
    const double *want[REF_NARRAYS] = {m->dense, m->dense_s1, m->dense_s2, m->wide, m->wide_z, m->wide_n, m->emb, m->emb_s1, m->emb_s2};
    int use[REF_NARRAYS] = {1, 1, 1, 1, 1, 1, !m->d.no_deep, !m->d.no_deep, !m->d.no_deep && m->d.optimizer == WD_ADAM};
    rep->overall = 0.0;
    rep->arg = 0;
    for (int a = 0; a < REF_NARRAYS; a++) {
        rep->worst[a] = 0.0;
        rep->at[a] = -1;
        if (!use[a]) continue;
        if (!got[a]) { rep->worst[a] = INFINITY; rep->at[a] = 0; }
        else {
            int64_t bounds[REF_MAX_SEGMENTS + 1];
            int nseg = ref_segments(m, a, bounds);
            for (int j = 0; j < nseg; j++) {
                int64_t lo = bounds[j], at;
                double r = ref_compare_array(got[a] + lo, want[a] + lo, bounds[j + 1] - lo, tol_rms, tol_rel, &at);
                if (rep->at[a] < 0 || r > rep->worst[a]) { rep->worst[a] = r; rep->at[a] = lo + at; }
            }
        }
        if (rep->worst[a] > rep->overall) { rep->overall = rep->worst[a]; rep->arg = a; }
    }
    return rep->overall;
}

#endif // WD_REF_H
