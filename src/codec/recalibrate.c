/* The prior's recalibration to the stream (codec_internal.h): each unit's
 * logits scaled and shifted by what the frames so far say, learned as
 * they go by at both ends alike, and the frequencies the range coder is
 * given from them. */

#include "codec/codec_internal.h"

/* logits per latent unit: 1 (binary), N (uniform) */
int frae_codec_prior_symbols(const frae_config *c)
{
    return c->quantizer == FRAE_QUANT_BINARY ? 1 : c->quant_levels;
}

/* The prior's logits of the state's next frame, before its codes, into
 * st->prior_logit; without the autoregression also what the frame's
 * frequencies are made of, recalibrated, for all units at once (one
 * vectorised loop); with it unit_weights makes them unit by unit */
void frae_codec_prior_logits(struct frae_codec_state *s)
{
    const frae_net *m = s->model;
    frae_state *st = &s->st;
    const float *ctx = st->h[1]; /* GRU: h_dec(t-1) as it is */
    if (!m->gru) {
        frae_prior_context(m, st, 0, 1, st->prior_ctx);
        ctx = st->prior_ctx;
    }
    frae_prior_forward(m, &st->scratch, 1, ctx, st->prior_hid, st->prior_logit);
    if (m->prior[2] >= 0)
        return;
    const int S = frae_codec_prior_symbols(&m->cfg);
    for (int i = 0; i < m->cfg.latent_dim * S; i++)
        s->weights[i] = s->scale[i / S] * st->prior_logit[i] + s->shift[i];
    frae_prior_weights(&m->cfg, s->weights);
}

/* What unit u's frequencies are made of: without the autoregression, as
 * prior_logits made them; with it, from unit u's logits plus the terms of
 * the codes before u in st->q (the encoder's, or those decoded so far),
 * recalibrated (frae_prior_unit_weights).  The logits used are kept in
 * st->prior_logit for prior_adapt. */
const float *frae_codec_unit_weights(struct frae_codec_state *s, int u)
{
    const frae_net *m = s->model;
    if (m->prior[2] < 0)
        return s->weights;
    const int S = frae_codec_prior_symbols(&m->cfg);
    float *lg = s->st.prior_logit + (size_t)u * S;
    float *w = s->weights + (size_t)u * S;
    for (int k = 0; k < S; k++) {
        lg[k] += frae_prior_ar_term(m, s->st.q, u * S + k);
        w[k] = s->scale[u] * lg[k] + s->shift[u * S + k];
    }
    frae_prior_unit_weights(&m->cfg, w);
    return s->weights;
}

/* After a frame's codes: one step of gradient descent on their -ln p in
 * scale and shift, from the weights they were coded with.  Both ends see
 * the same codes and floats (plain float arithmetic, no libm), so they
 * stay in step; the prior follows a voice it was not trained on (docs/codec.md,
 * "Entropy coding"). */
#define ADAPT_RATE 0.03125f /* 2^-5 */
#define ADAPT_SCALE_MAX 4.0f
#define ADAPT_SHIFT_MAX 8.0f
static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void frae_codec_prior_adapt(struct frae_codec_state *s, const float *weights)
{
    const frae_config *c = &s->model->cfg;
    const int S = frae_codec_prior_symbols(c);
    for (int u = 0; u < c->latent_dim; u++) {
        const float *w = weights + (size_t)u * S;
        const float *raw = s->st.prior_logit + (size_t)u * S;
        float *shift = s->shift + (size_t)u * S;
        float dscale = 0.0f;
        if (c->quantizer == FRAE_QUANT_BINARY) {
            /* d(-ln p(q)) / d logit = p(+1) - [q = +1] */
            const float g = w[0] - (s->st.q[u] > 0.0f ? 1.0f : 0.0f);
            dscale = g * raw[0];
            shift[0] = clampf(shift[0] - ADAPT_RATE * g, -ADAPT_SHIFT_MAX,
                              ADAPT_SHIFT_MAX);
        } else {
            const int sym = frae_code_symbol(c, s->st.q[u]);
            float sum = 0.0f;
            for (int k = 0; k < S; k++)
                sum += w[k];
            const float inv = 1.0f / sum; /* one division, not N */
            for (int k = 0; k < S; k++) {
                const float g = w[k] * inv - (k == sym ? 1.0f : 0.0f);
                dscale += g * raw[k];
                shift[k] = clampf(shift[k] - ADAPT_RATE * g, -ADAPT_SHIFT_MAX,
                                  ADAPT_SHIFT_MAX);
            }
        }
        s->scale[u] =
            clampf(s->scale[u] - ADAPT_RATE * dscale, 0.0f, ADAPT_SCALE_MAX);
    }
}
