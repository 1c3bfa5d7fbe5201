/* Model creation: sizing with overflow checks, one arena for everything,
 * Glorot-uniform initialisation; the parameters in and out; the model's
 * identity (frae_model_hash).  The config's defaults, checks and shapes
 * are config.c's. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "core/frae_internal.h"
#include "core/pool.h"

/* A bf16 kernel: panels of FRAE_PANEL_BF16 columns, rows padded to 32. */
static size_t bf16_elems(int rows, int cols)
{
    int last =
        cols % FRAE_PANEL_BF16 ? cols % FRAE_PANEL_BF16 : FRAE_PANEL_BF16;
    return (size_t)rows *
           ((size_t)cols - (size_t)last + (size_t)((last + 31) / 32 * 32));
}

/* Walks the layout once: used both to size the arena and to carve it. */
typedef struct {
    size_t params, grads, adam_m, adam_v, xwin, fb, state, wvalid, bias;
    size_t norm, xnorm, twin, tnorm, level_lx;
    size_t wt[FRAE_MAX_MATS], dz[FRAE_MAX_MATS], wh[FRAE_MAX_MATS];
    size_t w_off[FRAE_MAX_MATS], b_off[FRAE_MAX_MATS];
    int in[FRAE_MAX_MATS], out[FRAE_MAX_MATS], act[FRAE_MAX_MATS];
    int units[FRAE_MAX_MATS];
    size_t dh_carry[2], rate_dq, prior_dctx, lost, last_q, q_carry;
    int n_layers, n_mats, act_frames, chunk_frames;
    size_t n_params;
    frae_state_plan st; /* the batch's stream state, at offset state */
} layout;

static int plan(const frae_config *c, layout *L, frae_arena *p, char *err,
                size_t errlen)
{
    int ne = c->n_enc_hidden, nd = c->n_dec_hidden;
    /* rows: erasure training runs each sequence on two tracks */
    size_t B = (size_t)frae_train_rows(c), D = (size_t)c->frame_dim;
    memset(L, 0, sizeof *L);
    memset(p, 0, sizeof *p);
    L->n_layers = ne + nd + 2;
    L->n_mats = frae_mat_count(c);
    L->act_frames = c->training ? c->window : 1;
    if ((long)c->history + L->act_frames > INT_MAX)
        return frae_errorf(err, errlen, "history K + window W overflows");
    long chunk_rows = c->chunk_rows ? c->chunk_rows : FRAE_CHUNK_ROWS;
    L->chunk_frames = (int)((chunk_rows + (long)B - 1) / (long)B);
    if (L->chunk_frames > L->act_frames)
        L->chunk_frames = L->act_frames;
    if ((size_t)L->act_frames * B > (size_t)INT_MAX)
        return frae_errorf(err, errlen, "batch x window = %zu rows overflows",
                           (size_t)L->act_frames * B);

    size_t np = 0;
    for (int l = 0; l < L->n_mats; l++) {
        if (frae_layer_spec(c, l, &L->in[l], &L->out[l], &L->act[l],
                            &L->units[l]))
            return frae_errorf(err, errlen,
                               "layer %d input width (history K x D) overflows",
                               l + 1);
        size_t w = frae_arena_mul3(p, (size_t)L->in[l], (size_t)L->out[l], 1);
        L->w_off[l] = np;
        if (__builtin_add_overflow(np, w, &np))
            p->overflow = 1;
        L->b_off[l] = np;
        if (__builtin_add_overflow(np, (size_t)L->out[l], &np))
            p->overflow = 1;
    }
    if (p->overflow)
        return frae_errorf(err, errlen, "parameter count overflows size_t");
    L->n_params = np;

    size_t frames = (size_t)L->act_frames;
    if (c->weights == FRAE_WEIGHTS_BF16) {
        /* no f32 weights: the biases alone, then the bf16 kernels below */
        size_t n_bias = 0;
        for (int l = 0; l < L->n_mats; l++)
            n_bias += (size_t)L->out[l];
        L->bias = frae_arena_reserve(p, n_bias);
    } else {
        L->params = frae_arena_reserve(p, np);
    }
    if (c->training) {
        L->grads = frae_arena_reserve(p, np);
        L->adam_m = frae_arena_reserve(p, np);
        L->adam_v = frae_arena_reserve(p, np);
        const size_t xw = D + (size_t)frae_ahead_width(c); /* + tr.xla */
        L->xwin = frae_arena_reserve(p, frae_arena_mul3(p, frames, B, xw));
        if (c->targets)
            L->twin = frae_arena_reserve(p, frae_arena_mul3(p, frames, B, D));
        if (c->level_loss > 0.0f) /* doubles, two floats each */
            L->level_lx =
                frae_arena_reserve(p, frae_arena_mul3(p, frames, B, 2));
        L->fb =
            frae_arena_reserve(p, frae_arena_mul3(p, B, (size_t)c->history, D));
        if (c->family == FRAE_FAMILY_GRU)
            for (int s = 0; s < 2; s++)
                L->dh_carry[s] = frae_arena_reserve(
                    p,
                    frae_arena_mul3(
                        p, B, (size_t)(s ? c->dec_hidden[0] : c->enc_hidden[0]),
                        1));
    }
    if (c->training && c->erasure > 0.0f) {
        /* the window's lost frames and each row's channel state, bytes */
        size_t bytes = frae_arena_mul3(p, frames + 1, B, 1);
        L->lost = frae_arena_reserve(p, bytes / sizeof(float) + 1);
        L->last_q = frae_arena_reserve(
            p, frae_arena_mul3(p, B, (size_t)c->latent_dim, 1));
        L->q_carry = frae_arena_reserve(
            p, frae_arena_mul3(p, B, (size_t)c->latent_dim, 1));
    }
    if (c->training && c->prior_hidden > 0)
        L->rate_dq = frae_arena_reserve(
            p, frae_arena_mul3(p, frames, B, (size_t)c->latent_dim));
    if (c->training && c->prior_hidden > 0 &&
        c->feedback == FRAE_FEEDBACK_FULL) /* the rate's gradient, context */
        L->prior_dctx = frae_arena_reserve(
            p,
            frae_arena_mul3(p, frames, B, (size_t)frae_prior_context_width(c)));
    for (int l = 0; l < L->n_mats; l++) {
        /* transposed weights serve only input gradients: training, and
         * for the first layer only full feedback */
        /* the output layer's and the prior's gradients span the window */
        const int whole = l == L->n_layers - 1 ||
                          (c->prior_hidden > 0 && l >= frae_prior_mat(c, 0));
        if (frae_needs_transposed(c, l))
            L->wt[l] = frae_arena_reserve(
                p, frae_arena_mul3(p, (size_t)L->in[l], (size_t)L->out[l], 1));
        if (c->weights == FRAE_WEIGHTS_BF16) /* uint16s, as floats */
            L->wh[l] = frae_arena_reserve(
                p, (bf16_elems(L->in[l], L->out[l]) + 1) / 2);
        if (c->training)
            L->dz[l] = frae_arena_reserve(
                p, frae_arena_mul3(p, whole ? frames : (size_t)L->chunk_frames,
                                   B, (size_t)L->out[l]));
    }
    /* the batch's stream: activations of act_frames frames, the ring, the
     * sums ahead and the products' scratch (state.c) */
    size_t state_bytes = frae_state_plan_make(c, (int)B, L->act_frames, &L->st);
    if (state_bytes == SIZE_MAX)
        p->overflow = 1;
    L->state = frae_arena_reserve(p, state_bytes / sizeof(float));
    L->wvalid = frae_arena_reserve(p, B); /* ints, same size as floats */
    if (c->normalize) {
        L->norm = frae_arena_reserve(p, frae_arena_mul3(p, 2, D, 1));
        L->xnorm = frae_arena_reserve(p, frae_arena_mul3(p, B, D, 1));
        if (c->targets)
            L->tnorm = frae_arena_reserve(p, frae_arena_mul3(p, B, D, 1));
    }
    if (p->overflow)
        return frae_errorf(err, errlen, "model memory size overflows size_t");
    return 0;
}

size_t frae_param_count_for(const frae_config *cfg)
{
    layout L;
    frae_arena p;
    if (frae_config_check(cfg, NULL, 0) || plan(cfg, &L, &p, NULL, 0))
        return 0;
    return L.n_params;
}

/* Normal deviate (Box-Muller), for the orthogonal initialiser. */
static double rng_normal(uint64_t *rng)
{
    double u1 = ((double)frae_rng_uniform(rng) + 0x1p-25),
           u2 = frae_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Keras' orthogonal initialiser for a GRU's recurrent kernel [H][3H]: its
 * H rows orthonormal (Gram-Schmidt on normal rows, in double, in a
 * scratch block freed at once).  Element (i, c) goes to Keras column c.
 * -1 if the scratch cannot be had. */
static int orthogonal_init(frae_model *m, int l, uint64_t *rng)
{
    const frae_layer *ly = &m->net.layer[l];
    const int H = ly->in, C = ly->out;
    double *rows = malloc(sizeof(double) * (size_t)H * C);
    if (!rows)
        return -1;
    for (size_t k = 0; k < (size_t)H * C; k++)
        rows[k] = rng_normal(rng);
    for (int i = 0; i < H; i++) {
        double *r = rows + (size_t)i * C;
        for (int j = 0; j < i; j++) {
            const double *q = rows + (size_t)j * C;
            double dot = 0.0;
            for (int c = 0; c < C; c++)
                dot += r[c] * q[c];
            for (int c = 0; c < C; c++)
                r[c] -= dot * q[c];
        }
        double norm = 0.0;
        for (int c = 0; c < C; c++)
            norm += r[c] * r[c];
        norm = sqrt(norm);
        for (int c = 0; c < C; c++)
            r[c] /= norm;
    }
    for (int i = 0; i < H; i++)
        for (int c = 0; c < C; c++)
            frae_weight_set(m, l, i, frae_keras_col(1, c, C),
                            (float)rows[(size_t)i * C + c]);
    free(rows);
    return 0;
}

/* Keras defaults, drawn in Keras order so that the layout does not change
 * the model: Glorot-uniform kernels (a GRU's over its [in][3H] kernel),
 * orthogonal recurrent kernels, zero biases.  -1 if out of memory. */
static int glorot_init(frae_model *m)
{
    uint64_t rng = m->net.cfg.seed;
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(&m->net.cfg, e);
    for (int k = 0; k < n; k++) {
        const int l = e[k].mat;
        const frae_layer *ly = &m->net.layer[l];
        if (e[k].bias) {
            memset(m->wbias[l], 0, sizeof(float) * (size_t)ly->out);
            continue;
        }
        if (l == m->net.rec[0] || l == m->net.rec[1]) {
            if (orthogonal_init(m, l, &rng))
                return -1;
            continue;
        }
        if (l == m->net.prior[2]) { /* the autoregression starts as none */
            for (int i = 0; i < ly->in; i++)
                for (int o = 0; o < ly->out; o++)
                    frae_weight_set(m, l, i, o, 0.0f);
            continue;
        }
        float limit = sqrtf(6.0f / (float)(ly->in + ly->out));
        for (int i = 0; i < ly->in; i++)
            for (int o = 0; o < ly->out; o++)
                frae_weight_set(m, l, i, frae_keras_col(e[k].gru, o, ly->out),
                                (2.0f * frae_rng_uniform(&rng) - 1.0f) * limit);
    }
    return 0;
}

/* The config checked and planned, and refused if it cannot fit: a model
 * larger than the machine's memory is refused here rather than left to
 * the OOM killer later. */
static int plan_checked(const frae_config *cfg, layout *L, frae_arena *p,
                        char *err, size_t errlen)
{
    if (frae_config_check(cfg, err, errlen) || plan(cfg, L, p, err, errlen))
        return -1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && p->bytes / (size_t)page >= (size_t)pages)
        return frae_errorf(err, errlen,
                           "model needs %.1f GiB, more than this machine's "
                           "%.1f GiB",
                           (double)p->bytes / 1073741824.0,
                           (double)pages * (double)page / 1073741824.0);
    return 0;
}

int frae_bytes_needed(const frae_config *cfg, size_t *bytes, char *err,
                      size_t errlen)
{
    layout L;
    frae_arena p;
    if (plan_checked(cfg, &L, &p, err, errlen))
        return -1;
    *bytes = p.bytes;
    return 0;
}

frae_model *frae_create(const frae_config *cfg, char *err, size_t errlen)
{
    layout L;
    frae_arena p;
    if (plan_checked(cfg, &L, &p, err, errlen))
        return NULL;

    frae_kernels kern;
    if (frae_select_kernels(cfg->isa, &kern) < 0) {
        frae_errorf(err, errlen,
                    "the requested instruction set is not supported by "
                    "this CPU");
        return NULL;
    }

    frae_model *m = calloc(1, sizeof *m);
    void *block = NULL;
    if (!m || posix_memalign(&block, FRAE_ARENA_ALIGN,
                             p.bytes ? p.bytes : FRAE_ARENA_ALIGN)) {
        free(m);
        frae_errorf(err, errlen, "out of memory allocating %zu bytes", p.bytes);
        return NULL;
    }
    memset(block, 0, p.bytes);
    char *base = block;
    frae_net *n = &m->net;
    frae_trainer *tr = &m->tr;
    n->cfg = *cfg;
    n->gemm = kern.gemm;
    n->gemv_sparse = kern.sparse;
    n->gemv_bf16 = kern.bf16;
    n->gemv2_bf16 = kern.bf16_pair;
    n->compact = kern.compact;
    n->adam = kern.adam;
    n->gru_forward = kern.gru_forward;
    n->gru_backward = kern.gru_backward;
    m->threads = cfg->threads > 1 ? cfg->threads : 1;
    /* the workers start once, with the model; without them (the system
     * refused a thread) its products run on the caller, with the same bits */
    m->pool = frae_pool_create(m->threads);
    n->isa_name = kern.name;
    m->block = block;
    m->block_bytes = p.bytes;
    n->n_layers = L.n_layers;
    n->n_mats = L.n_mats;
    n->gru = cfg->family == FRAE_FAMILY_GRU;
    n->rec[0] = n->gru ? L.n_layers : -1;
    n->rec[1] = n->gru ? L.n_layers + 1 : -1;
    n->prior[0] = cfg->prior_hidden > 0 ? frae_prior_mat(cfg, 0) : -1;
    n->prior[1] = cfg->prior_hidden > 0 ? frae_prior_mat(cfg, 1) : -1;
    n->prior[2] = cfg->prior_ar ? frae_prior_mat(cfg, 2) : -1;
    n->latent = cfg->n_enc_hidden;
    n->dec_first = cfg->n_enc_hidden + 1;
    n->n_params = L.n_params;
    tr->chunk_frames = L.chunk_frames;
    m->params =
        cfg->weights == FRAE_WEIGHTS_BF16 ? NULL : (float *)(base + L.params);
    n->params = m->params;
    size_t bias_at = 0;
    if (cfg->training) {
        tr->grads = (float *)(base + L.grads);
        tr->adam_m = (float *)(base + L.adam_m);
        tr->adam_v = (float *)(base + L.adam_v);
        tr->xwin = (float *)(base + L.xwin);
        tr->xla = tr->xwin + (size_t)L.act_frames * L.st.rows * L.st.frame_dim;
        if (cfg->targets)
            tr->twin = (float *)(base + L.twin);
        if (cfg->level_loss > 0.0f)
            tr->level_lx = (double *)(void *)(base + L.level_lx);
        tr->fb = (float *)(base + L.fb);
        if (n->gru)
            for (int s = 0; s < 2; s++)
                tr->dh_carry[s] = (float *)(base + L.dh_carry[s]);
        if (cfg->prior_hidden > 0)
            tr->rate_dq = (float *)(base + L.rate_dq);
        if (cfg->prior_hidden > 0 && cfg->feedback == FRAE_FEEDBACK_FULL)
            tr->prior_dctx = (float *)(base + L.prior_dctx);
        if (cfg->erasure > 0.0f) {
            tr->lost = (unsigned char *)(base + L.lost);
            tr->lost_bad =
                tr->lost + (size_t)L.act_frames * frae_train_rows(cfg);
            tr->last_q = (float *)(base + L.last_q);
            tr->q_carry = (float *)(base + L.q_carry);
        }
    }
    for (int l = 0; l < L.n_mats; l++) {
        frae_layer *ly = &n->layer[l];
        ly->in = L.in[l];
        ly->out = L.out[l];
        ly->units = L.units[l];
        ly->act = L.act[l];
        ly->w_off = L.w_off[l];
        ly->b_off = L.b_off[l];
        if (m->params) {
            m->wbias[l] = m->params + ly->b_off;
        } else {
            m->wbias[l] = (float *)(base + L.bias) + bias_at;
            bias_at += (size_t)ly->out;
        }
        ly->bias = m->wbias[l];
        m->wt[l] =
            frae_needs_transposed(cfg, l) ? (float *)(base + L.wt[l]) : NULL;
        ly->wt = m->wt[l];
        m->wh[l] = cfg->weights == FRAE_WEIGHTS_BF16
                       ? (uint16_t *)(void *)(base + L.wh[l])
                       : NULL;
        ly->wh = m->wh[l];
        tr->dz[l] = cfg->training ? (float *)(base + L.dz[l]) : NULL;
    }
    frae_state_carve(&L.st, &m->state, base + L.state);
    m->state.scratch.threads = m->threads;
    m->state.scratch.pool = m->pool;
    m->wvalid = (int *)(base + L.wvalid);
    if (cfg->normalize) {
        m->norm_mean = (float *)(base + L.norm);
        m->norm_std = m->norm_mean + cfg->frame_dim;
        n->norm_mean = m->norm_mean;
        n->norm_std = m->norm_std;
        m->xnorm = (float *)(base + L.xnorm);
        if (cfg->targets)
            tr->tnorm = (float *)(base + L.tnorm);
        for (int d = 0; d < cfg->frame_dim; d++)
            m->norm_mean[d] = 0.0f, m->norm_std[d] = 1.0f;
    }
    if (glorot_init(m)) {
        frae_errorf(err, errlen, "out of memory initialising the GRU weights");
        frae_destroy(m);
        return NULL;
    }
    frae_weights_changed(m);
    frae_reset(m);
    return m;
}

void frae_destroy(frae_model *m)
{
    if (!m)
        return;
    frae_pool_destroy(m->pool);
    free(m->block);
    free(m);
}

const frae_config *frae_get_config(const frae_model *m) { return &m->net.cfg; }
const frae_net *frae_model_net(const frae_model *m) { return &m->net; }
const frae_config *frae_net_config(const frae_net *n) { return &n->cfg; }
size_t frae_param_count(const frae_model *m) { return m->net.n_params; }
const char *frae_isa_name(const frae_model *m) { return m->net.isa_name; }
long frae_adam_step_count(const frae_model *m) { return m->tr.adam_step; }

size_t frae_bytes_allocated(const frae_model *m)
{
    return m->block_bytes + sizeof *m;
}

int frae_norm_stat_ok(double v, int is_std)
{
    return isfinite(v) && fabs(v) <= FRAE_NORM_MAX && (!is_std || v > 0.0);
}

int frae_norm_stats_why(const float *mean, const float *std, int D, char *why,
                        size_t cap)
{
    for (int d = 0; d < D; d++) {
        const int mean_ok = frae_norm_stat_ok(mean[d], 0);
        if (mean_ok && frae_norm_stat_ok(std[d], 1))
            continue;
        return frae_errorf(why, cap,
                           "band %d has %s %.9g; every mean must be finite and "
                           "every std finite and > 0, both at most 3e38 in "
                           "magnitude",
                           d, mean_ok ? "std" : "mean",
                           (double)(mean_ok ? std[d] : mean[d]));
    }
    return 0;
}

int frae_set_normalization(frae_model *m, const float *mean, const float *std)
{
    const int D = m->net.cfg.frame_dim;
    if (!m->net.cfg.normalize)
        return -1;
    for (int d = 0; d < D; d++)
        if (!frae_norm_stat_ok(mean[d], 0) || !frae_norm_stat_ok(std[d], 1))
            return -1;
    memcpy(m->norm_mean, mean, sizeof(float) * (size_t)D);
    memcpy(m->norm_std, std, sizeof(float) * (size_t)D);
    return 0;
}

int frae_get_normalization(const frae_model *m, float *mean, float *std)
{
    if (!m->net.cfg.normalize)
        return -1;
    memcpy(mean, m->norm_mean, sizeof(float) * (size_t)m->net.cfg.frame_dim);
    memcpy(std, m->norm_std, sizeof(float) * (size_t)m->net.cfg.frame_dim);
    return 0;
}

void frae_normalize_rows(const frae_net *m, const float *x, ptrdiff_t x_rs,
                         int rows, float *dst)
{
    const int D = m->cfg.frame_dim;
    for (int b = 0; b < rows; b++)
        for (int d = 0; d < D; d++) /* as torch: (x - mean) / std */
            dst[(size_t)b * D + d] =
                (x[b * x_rs + d] - m->norm_mean[d]) / m->norm_std[d];
}

void frae_denormalize(const frae_net *m, const float *y, float *dst)
{
    for (int d = 0; d < m->cfg.frame_dim; d++) /* y * std + mean */
        dst[d] = y[d] * m->norm_std[d] + m->norm_mean[d];
}

void frae_band_stats_begin(frae_band_stats *s, int dim, double *sum,
                           double *sum_sq)
{
    s->dim = dim, s->count = 0, s->sum = sum, s->sum_sq = sum_sq;
    for (int d = 0; d < dim; d++)
        sum[d] = sum_sq[d] = 0.0;
}

void frae_band_stats_add(frae_band_stats *s, const float *frames, long n,
                         long stride)
{
    for (long t = 0; t < n; t++)
        for (int d = 0; d < s->dim; d++) {
            double v = frames[t * stride + d];
            s->sum[d] += v;
            s->sum_sq[d] += v * v;
        }
    s->count += (double)n;
}

int frae_band_stats_finish(const frae_band_stats *s, float *mean, float *std)
{
    if (!(s->count > 0))
        return -1;
    for (int d = 0; d < s->dim; d++) {
        double mu = s->sum[d] / s->count, sq = s->sum_sq[d] / s->count;
        double var = sq - mu * mu;
        mean[d] = (float)mu;
        /* a constant band: only centred, never divided by ~0 */
        std[d] = var > 1e-12 * sq && var > 0 ? (float)sqrt(var) : 1.0f;
        if (!(std[d] > 0.0f) || !isfinite(std[d]))
            std[d] = 1.0f;
    }
    return 0;
}

double frae_bits_per_frame(const frae_model *m)
{
    return (double)m->net.cfg.latent_dim * frae_code_bits(&m->net) +
           (m->net.cfg.pitch ? FRAE_PITCH_BITS : 0);
}

/* A packed param-shaped array (parameters, gradients, Adam moments) in an
 * exchange layout, tensor by tensor (frae_tensor_entries): each kernel as
 * [in][out] with a GRU's gates in Keras order (Keras), or [out][in] with
 * PyTorch's (torch_layout), then the bias likewise. */
void frae_export_params(const frae_net *m, const float *src, float *dst,
                        int torch_layout)
{
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(&m->cfg, e);
    for (int k = 0; k < n; k++) {
        const int l = e[k].mat;
        const frae_layer *ly = &m->layer[l];
        const int keras_gates = e[k].gru && !torch_layout;
        if (e[k].bias) {
            const float *b = src ? src + ly->b_off : ly->bias;
            for (int o = 0; o < ly->out; o++)
                *dst++ = b[frae_keras_col(keras_gates, o, ly->out)];
            continue;
        }
        const int rows = torch_layout ? ly->out : ly->in;
        const int cols = torch_layout ? ly->in : ly->out;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                int i = torch_layout ? c : r, o = torch_layout ? r : c;
                o = frae_keras_col(keras_gates, o, ly->out);
                *dst++ =
                    src ? src[ly->w_off + packed_index(ly->in, ly->out, i, o)]
                        : frae_weight_get(m, l, i, o);
            }
    }
}

/* bf16 kernels: panels of FRAE_PANEL_BF16 columns, rows padded to 32
 * columns and paired (kernels.h). */
static size_t bf16_index(const frae_layer *ly, int i, int o)
{
    int pc0 = o - o % FRAE_PANEL_BF16;
    int w = ly->out - pc0 < FRAE_PANEL_BF16 ? ly->out - pc0 : FRAE_PANEL_BF16;
    return (size_t)pc0 * ly->in + (size_t)i * (size_t)((w + 31) / 32 * 32) +
           frae_bf16_pos(o - pc0);
}

float frae_weight_get(const frae_net *m, int l, int i, int o)
{
    const frae_layer *ly = &m->layer[l];
    if (ly->wh)
        return frae_bf16_to_f32(ly->wh[bf16_index(ly, i, o)]);
    return m->params[ly->w_off + packed_index(ly->in, ly->out, i, o)];
}

float frae_weight_column_dot(const frae_net *m, int l, int o, const float *x,
                             int n, float acc)
{
    const frae_layer *ly = &m->layer[l];
    const int pc0 = o - o % (ly->wh ? FRAE_PANEL_BF16 : FRAE_PANEL);
    if (ly->wh) { /* rows of the panel (w + 31) / 32 * 32 apart */
        const int w =
            ly->out - pc0 < FRAE_PANEL_BF16 ? ly->out - pc0 : FRAE_PANEL_BF16;
        const size_t ld = (size_t)((w + 31) / 32 * 32);
        const uint16_t *col =
            ly->wh + (size_t)pc0 * ly->in + frae_bf16_pos(o - pc0);
        for (int i = 0; i < n; i++)
            acc += frae_bf16_to_f32(col[(size_t)i * ld]) * x[i];
        return acc;
    }
    const int w = ly->out - pc0 < FRAE_PANEL ? ly->out - pc0 : FRAE_PANEL;
    const float *col = m->params + ly->w_off + (size_t)pc0 * ly->in + (o - pc0);
    for (int i = 0; i < n; i++) /* rows of the panel w apart */
        acc += col[(size_t)i * w] * x[i];
    return acc;
}

void frae_weight_set(frae_model *m, int l, int i, int o, float v)
{
    const frae_layer *ly = &m->net.layer[l];
    if (m->wh[l])
        m->wh[l][bf16_index(ly, i, o)] = frae_f32_to_bf16(v);
    else
        m->params[ly->w_off + packed_index(ly->in, ly->out, i, o)] = v;
}

int frae_tensor_count(const frae_model *m)
{
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    return frae_tensor_entries(&m->net.cfg, e);
}

int frae_tensor_info_get(const frae_model *m, int k, frae_tensor_info *t)
{
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    if (k < 0 || k >= frae_tensor_entries(&m->net.cfg, e))
        return -1;
    const frae_layer *ly = &m->net.layer[e[k].mat];
    memcpy(t->name, e[k].name, sizeof t->name);
    t->rows = e[k].bias ? ly->out : ly->in;
    t->cols = e[k].bias ? 0 : ly->out;
    t->gru = e[k].gru;
    return 0;
}

void frae_get_params(const frae_model *m, float *dst)
{
    frae_export_params(&m->net, NULL, dst, 0);
}

void frae_set_params(frae_model *m, const float *src)
{
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(&m->net.cfg, e);
    for (int k = 0; k < n; k++) {
        const int l = e[k].mat;
        const frae_layer *ly = &m->net.layer[l];
        if (e[k].bias) {
            /* a -0 bias would start a chain at -0, the one case where
             * skipping zero inputs (kernels.h) could differ, in the sign
             * of a zero */
            for (int o = 0; o < ly->out; o++, src++)
                m->wbias[l][frae_keras_col(e[k].gru, o, ly->out)] =
                    *src == 0.0f ? 0.0f : *src;
            continue;
        }
        for (int i = 0; i < ly->in; i++)
            for (int o = 0; o < ly->out; o++)
                frae_weight_set(m, l, i, frae_keras_col(e[k].gru, o, ly->out),
                                *src++);
    }
    frae_weights_changed(m);
}

/* The autoregression's entries that would see a code not yet coded: unit
 * u's logits (columns u S .. u S + S - 1) take codes j < u (rows) only. */
static int ar_causal(const frae_config *c, int j, int col)
{
    return j < col / frae_prior_symbols(c);
}

int frae_prior_ar_check(const frae_net *m, char *err, size_t errlen)
{
    const int l = m->prior[2];
    if (l < 0)
        return 0;
    const frae_layer *ly = &m->layer[l];
    for (int j = 0; j < ly->in; j++)
        for (int o = 0; o < ly->out; o++)
            if (!ar_causal(&m->cfg, j, o) &&
                frae_weight_get(m, l, j, o) != 0.0f)
                return frae_errorf(err, errlen,
                                   "tensor 'prior.2.weight' is %g at [%d, "
                                   "%d]: unit %d's logits may see only the "
                                   "codes before it in its frame (entries "
                                   "for code %d on must be 0)",
                                   (double)frae_weight_get(m, l, j, o), o, j,
                                   o / frae_prior_symbols(&m->cfg),
                                   o / frae_prior_symbols(&m->cfg));
    return 0;
}

void frae_prior_ar_mask(const frae_net *m, float *w)
{
    const int l = m->prior[2];
    if (l < 0)
        return;
    const frae_layer *ly = &m->layer[l];
    for (int j = 0; j < ly->in; j++)
        for (int o = 0; o < ly->out; o++)
            if (!ar_causal(&m->cfg, j, o))
                w[packed_index(ly->in, ly->out, j, o)] = 0.0f;
}

void frae_weights_changed(frae_model *m)
{
    /* weights set through the API: the autoregression stays causal (a
     * file that breaks it is refused, frae_prior_ar_check) */
    const frae_net *n = &m->net;
    const int l = n->prior[2];
    if (l >= 0)
        for (int j = 0; j < n->layer[l].in; j++)
            for (int o = 0; o < n->layer[l].out; o++)
                if (!ar_causal(&n->cfg, j, o))
                    frae_weight_set(m, l, j, o, 0.0f);
    frae_refresh_transposed(m);
    /* a stream under way goes on with the new weights */
    frae_state_rebuild(n, &m->state);
}

void frae_get_grads(const frae_model *m, float *dst)
{
    if (m->tr.grads)
        frae_export_params(&m->net, m->tr.grads, dst, 0);
    else
        memset(dst, 0, sizeof(float) * m->net.n_params);
}

void frae_reset(frae_model *m)
{
    frae_state_reset(&m->net, &m->state);
    if (m->tr.lost) { /* erasure training: every row's channel good, and
                         the latent a lost first frame halves is 0 */
        const size_t B = (size_t)frae_train_rows(&m->net.cfg);
        memset(m->tr.lost_bad, 0, B);
        memset(m->tr.last_q, 0, sizeof(float) * B * m->net.cfg.latent_dim);
    }
}

/* ---- model identity ------------------------------------------------------- */

/* frae_model_hash (frae_codec.h: what a stream names, bytes 8-15): here,
 * below the checkpoints, which record it when they save (frae.model_hash) */

uint64_t frae_model_hash(const frae_net *m)
{
    const frae_config *c = &m->cfg;
    int32_t shape[8 + 2 * FRAE_MAX_HIDDEN] = {
        c->frame_dim,          c->history,
        c->latent_dim,         (int32_t)c->activation,
        (int32_t)c->quantizer, c->quant_levels,
        c->n_enc_hidden,       c->n_dec_hidden};
    for (int i = 0; i < c->n_enc_hidden; i++)
        shape[8 + i] = c->enc_hidden[i];
    for (int i = 0; i < c->n_dec_hidden; i++)
        shape[8 + FRAE_MAX_HIDDEN + i] = c->dec_hidden[i];
    uint64_t h =
        frae_fnv1a64((const unsigned char *)shape, sizeof shape, FRAE_FNV_INIT);
    if (c->family != FRAE_FAMILY_DENSE) { /* dense models hash as before */
        int32_t family = (int32_t)c->family;
        h = frae_fnv1a64((const unsigned char *)&family, 4, h);
    }
    if (c->prior_hidden > 0) { /* the prior decides the stream's bytes */
        int32_t prior = c->prior_hidden;
        h = frae_fnv1a64((const unsigned char *)&prior, 4, h);
    }
    if (c->prior_ar) { /* ... and so does the order it codes the units in */
        int32_t ar = 1;
        h = frae_fnv1a64((const unsigned char *)&ar, 4, h);
    }
    if (c->pitch_ranged) { /* ... and how it codes the pitch */
        int32_t pr = c->pitch_ranged == FRAE_PITCH_CODER_ENVELOPE ? 3 : 2;
        h = frae_fnv1a64((const unsigned char *)&pr, 4, h);
    }
    if (c->normalize) { /* the statistics decide what a code decodes to */
        h = frae_fnv1a64((const unsigned char *)m->norm_mean,
                         sizeof(float) * (size_t)c->frame_dim, h);
        h = frae_fnv1a64((const unsigned char *)m->norm_std,
                         sizeof(float) * (size_t)c->frame_dim, h);
    }
    /* the weights in Keras order, so the hash does not depend on layout
     * (nor on the storage: a bf16 model hashes as the f32 model holding
     * its rounded weights, which computes the same) */
    frae_tensor_entry e[FRAE_MAX_TENSORS];
    const int n = frae_tensor_entries(c, e);
    for (int k = 0; k < n; k++) {
        const int l = e[k].mat;
        const frae_layer *ly = &m->layer[l];
        for (int i = 0; i < (e[k].bias ? 1 : ly->in); i++)
            for (int o = 0; o < ly->out; o++) {
                int col = frae_keras_col(e[k].gru, o, ly->out);
                float w =
                    e[k].bias ? ly->bias[col] : frae_weight_get(m, l, i, col);
                h = frae_fnv1a64((const unsigned char *)&w, 4, h);
            }
    }
    return h;
}
