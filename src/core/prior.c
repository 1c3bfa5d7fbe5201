/* The learned prior over the quantized latent (cfg.prior_hidden > 0).
 *
 * For frame t it predicts the distribution of each latent unit's code from
 * what both ends of the codec hold before the frame: the decoder's state
 * (h_dec(t-1) for the GRU family, the K fed-back frames for the dense
 * one).  That state already folds in every earlier code, so the prior is
 * a function of the past alone, as an entropy decoder needs.  Two layers:
 * a tanh layer of P units, then per unit one logit (binary: a Bernoulli
 * over +1) or N (uniform: a categorical over the levels).
 *
 * Training adds lambda x rate to the loss, rate = -log2 p(q_t) summed over
 * units.  The prior learns from it by its exact gradient; the encoder
 * through the straight-through quantizer, by the slope of -log2 p between
 * q's neighbouring levels.  The context follows the feedback mode, as the
 * fed-back frames and h_dec do: detached, it is a constant to the rate;
 * full, the rate's gradient also reaches the decoder's state through it,
 * so the decoder learns to hold what makes the next codes predictable. */
#include <math.h>
#include <string.h>

#include "core/frae_internal.h"

#define LN2 0.693147180559945309f

void frae_prior_context(const frae_net *m, const frae_state *st, long t, int nb,
                        float *dst)
{
    const int C = m->layer[m->prior[0]].in;
    if (m->gru) { /* h_dec(t-1): h0 or the last frame's slot */
        memcpy(dst, st->h[1], sizeof(float) * (size_t)nb * C);
        return;
    }
    const int D = m->cfg.frame_dim, K = m->cfg.history;
    for (int j = 0; j < K; j++) { /* buffer slot j: y_{t-1-j} */
        const float *y = frae_state_frame(st, st->ring_pos + t - 1 - j);
        for (int b = 0; b < nb; b++)
            memcpy(dst + (size_t)b * C + (size_t)j * D, y + (size_t)b * D,
                   sizeof(float) * (size_t)D);
    }
}

void frae_prior_forward(const frae_net *m, const frae_scratch *sc, int rows,
                        const float *ctx, float *hid, float *logit)
{
    const frae_layer *l0 = &m->layer[m->prior[0]], *l1 = &m->layer[m->prior[1]];
    frae_layer_product(m, sc, m->prior[0], rows, l0->in, ctx, l0->in, 0, hid,
                       l0->bias, GEMM_BIAS);
    /* frae's own tanh (the GRU cell's: a few ulp from libm's, vectorised,
     * no libm call per unit on the codec's path) */
    frae_gru_tanh_n(hid, (size_t)rows * l0->out);
    frae_layer_product(m, sc, m->prior[1], rows, l1->in, hid, l1->in, 0, logit,
                       l1->bias, GEMM_BIAS);
}

void frae_prior_ar_forward(const frae_net *m, const frae_scratch *sc, int rows,
                           const float *q, float *logit)
{
    const int l = m->prior[2];
    if (l < 0)
        return;
    const frae_layer *ly = &m->layer[l];
    frae_layer_product(m, sc, l, rows, ly->in, q, ly->in, 0, logit, NULL,
                       GEMM_ACC);
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < ly->out; o++)
            logit[(size_t)r * ly->out + o] += ly->bias[o];
}

float frae_prior_ar_term(const frae_net *m, const float *q, int col)
{
    const int l = m->prior[2];
    /* the codes before unit u, in order */
    return frae_weight_column_dot(
        m, l, col, q, col / frae_prior_symbols(&m->cfg), m->layer[l].bias[col]);
}

/* softplus(x) = log(1 + e^x), without overflow */
static float softplus(float x)
{
    return x > 0.0f ? x + frae_log1pf(expf(-x)) : frae_log1pf(expf(x));
}

/* The level index of a uniform code (as the quantizer made it). */
static int level_of(float q, int N)
{
    long k = lrintf((q + 1.0f) * 0.5f * (float)(N - 1));
    return k < 0 ? 0 : k >= N ? N - 1 : (int)k;
}

double frae_prior_bits(const frae_config *c, const float *logit, const float *q,
                       float *dlogit, float *dq, float scale)
{
    const int L = c->latent_dim;
    double bits = 0.0;
    if (c->quantizer == FRAE_QUANT_BINARY) {
        for (int u = 0; u < L; u++) {
            const float l = logit[u];
            const int one = q[u] > 0.0f;
            /* -ln p(q) = softplus(-l) for +1, softplus(l) for -1 */
            bits += (double)(softplus(one ? -l : l) / LN2);
            if (dlogit) {
                dlogit[u] =
                    scale * (1.0f / (1.0f + expf(-l)) - (float)one) / LN2;
                /* (r(+1) - r(-1)) / 2 = -l / (2 ln 2) */
                dq[u] = -scale * l / (2.0f * LN2);
            }
        }
        return bits;
    }
    const int N = c->quant_levels;
    const float delta = 2.0f / (float)(N - 1); /* between levels */
    for (int u = 0; u < L; u++) {
        const float *lg = logit + (size_t)u * N;
        const int k = level_of(q[u], N);
        float mx = lg[0];
        for (int j = 1; j < N; j++)
            mx = lg[j] > mx ? lg[j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < N; j++)
            sum += expf(lg[j] - mx);
        const float lse = mx + logf(sum);
        bits += (double)((lse - lg[k]) / LN2);
        if (!dlogit)
            continue;
        float *dl = dlogit + (size_t)u * N;
        for (int j = 0; j < N; j++)
            dl[j] = scale * (expf(lg[j] - lse) - (j == k ? 1.0f : 0.0f)) / LN2;
        /* r_j - r_i = (l_i - l_j) / ln 2: the slope between neighbours,
         * one-sided at the ends */
        float slope = k == 0       ? (lg[0] - lg[1]) / delta
                      : k == N - 1 ? (lg[N - 2] - lg[N - 1]) / delta
                                   : (lg[k - 1] - lg[k + 1]) / (2.0f * delta);
        dq[u] = scale * slope / LN2;
    }
    return bits;
}

void frae_prior_backward(frae_model *mod, int rows)
{
    const frae_net *m = &mod->net;
    const frae_trainer *tr = &mod->tr;
    const int p0 = m->prior[0], p1 = m->prior[1];
    const frae_layer *l0 = &m->layer[p0], *l1 = &m->layer[p1];
    const frae_state *st = &mod->state;
    const frae_scratch *sc = &mod->state.scratch;
    const float *dlogit = tr->dz[p1];
    float *dh = tr->dz[p0];
    frae_gemm_packed_b(m, sc, rows, l1->out, dlogit, l1->out, 1, l1->wt,
                       l1->out, l1->in, 0, 0, l1->in, dh, l0->out, NULL,
                       GEMM_ZERO);
    frae_activation_backward(ACT_TANH, st->prior_hid, dh,
                             (size_t)rows * l0->out);
    frae_gemm_packed_c(m, sc, l1->in, rows, st->prior_hid, l1->in, dlogit,
                       l1->out, tr->grads + l1->w_off, l1->in, l1->out, 0,
                       GEMM_ZERO);
    frae_bias_grad(dlogit, rows, l1->out, tr->grads + l1->b_off, 0);
    frae_gemm_packed_c(m, sc, l0->in, rows, st->prior_ctx, l0->in, dh, l0->out,
                       tr->grads + l0->w_off, l0->in, l0->out, 0, GEMM_ZERO);
    frae_bias_grad(dh, rows, l0->out, tr->grads + l0->b_off, 0);
    if (tr->prior_dctx)
        frae_gemm_packed_b(m, sc, rows, l0->out, dh, l0->out, 1, l0->wt,
                           l0->out, l0->in, 0, 0, l0->in, tr->prior_dctx,
                           l0->in, NULL, GEMM_ZERO);
}

void frae_prior_ar_backward(frae_model *mod, int rows, const float *q,
                            float *dq)
{
    const frae_net *m = &mod->net;
    const frae_trainer *tr = &mod->tr;
    const int l = m->prior[2];
    if (l < 0)
        return;
    const frae_layer *ly = &m->layer[l];
    const frae_scratch *sc = &mod->state.scratch;
    const float *dlogit = tr->dz[m->prior[1]];
    frae_gemm_packed_c(m, sc, ly->in, rows, q, ly->in, dlogit, ly->out,
                       tr->grads + ly->w_off, ly->in, ly->out, 0, GEMM_ZERO);
    frae_prior_ar_mask(m, tr->grads + ly->w_off); /* it stays causal */
    frae_bias_grad(dlogit, rows, ly->out, tr->grads + ly->b_off, 0);
    /* the codes' share: through the straight-through quantizer, as the
     * slope of their own bits does */
    frae_gemm_packed_b(m, sc, rows, ly->out, dlogit, ly->out, 1, ly->wt,
                       ly->out, ly->in, 0, 0, ly->in, dq, ly->in, NULL,
                       GEMM_ACC);
}

/* A uniform unit's N logits less their largest, so exp stays <= 1 */
static void minus_max(float *lg, int N)
{
    float mx = lg[0];
    for (int j = 1; j < N; j++)
        mx = lg[j] > mx ? lg[j] : mx;
    for (int j = 0; j < N; j++)
        lg[j] -= mx;
}

void frae_prior_weights(const frae_config *c, float *logit)
{
    const int L = c->latent_dim;
    if (c->quantizer == FRAE_QUANT_BINARY) {
        frae_gru_sigmoid_n(logit, (size_t)L);
        return;
    }
    const int N = c->quant_levels;
    for (int u = 0; u < L; u++)
        minus_max(logit + (size_t)u * N, N);
    frae_gru_exp_n(logit, (size_t)L * N); /* the whole frame, one loop */
}

void frae_prior_unit_weights(const frae_config *c, float *logit)
{
    if (c->quantizer == FRAE_QUANT_BINARY) {
        frae_gru_sigmoid_n(logit, 1);
        return;
    }
    minus_max(logit, c->quant_levels);
    frae_gru_exp_n(logit, (size_t)c->quant_levels);
}

void frae_prior_freqs(const frae_config *c, const float *weights, int u,
                      uint32_t *freq)
{
    if (c->quantizer == FRAE_QUANT_BINARY) {
        /* two symbols: f(+1) = 1 + floor(p(+1) (2^15 - 2)), f(-1) the
         * rest, both >= 1, no division by a sum */
        const uint32_t total = 1u << FRAE_RANGE_TOTAL_BITS;
        freq[1] = 1 + (uint32_t)(weights[u] * (float)(total - 2));
        freq[0] = total - freq[1];
        return;
    }
    const int N = c->quant_levels;
    frae_quantize_pmf(weights + (size_t)u * N, N, freq);
}

/* ---- frequencies for the range coder (frae.h): one rule, shared with the
 * codec ------------------------------------------------------------------ */

int frae_quantize_pmf(const float *p, int n, uint32_t *freq)
{
    const uint32_t total = 1u << FRAE_RANGE_TOTAL_BITS;
    if (n < 1 || (uint32_t)n > total / 2)
        return -1;
    /* every symbol gets 1, the rest is shared in proportion to p (NaN,
     * negative and infinite weights count as 0; all zero: uniform) */
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (p[i] > 0 && isfinite(p[i]))
            sum += p[i];
    const uint32_t spare = total - (uint32_t)n;
    uint32_t given = 0;
    int best = 0;
    for (int i = 0; i < n; i++) {
        double w = p[i] > 0 && isfinite(p[i]) ? p[i] : 0.0;
        uint32_t extra =
            sum > 0 ? (uint32_t)floor(w / sum * spare) : spare / (uint32_t)n;
        if (extra > spare - given) /* rounding can never overshoot; guard */
            extra = spare - given;
        freq[i] = 1 + extra;
        given += extra;
        if (freq[i] > freq[best])
            best = i;
    }
    /* what rounding left over goes to the most probable symbol (the
     * lowest index on ties): one deterministic rule */
    freq[best] += spare - given;
    return 0;
}
