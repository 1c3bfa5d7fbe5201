/* The encoder's search and discontinuous transmission (codec_internal.h):
 * each frame's codes searched for the least distortion plus rate, and
 * silent frames sent as a flag. */
#include <math.h>
#include <string.h>

#include "codec/codec_internal.h"

/* ---- the encoder's search -------------------------------------------------------
 * Analysis by synthesis (frae_codec.h, frae_encoder_set_search): the network's
 * codes are a start; each pass decodes every code moved by one level on a
 * copy of the stream state and keeps the move that lowers distortion +
 * weight x rate the most.  Everything it computes is plain float and
 * double arithmetic on frae's bit-exact kernels, no libm, so the same
 * input makes the same choices, and the same stream, on every machine. */

/* -log2 (f / 2^15) for a frequency f >= 1: ln m = 2 atanh((m-1)/(m+1)) by
 * its series (m in [1, 2): |error| < 1e-7) */
static double freq_bits(uint32_t f)
{
    int e = 0;
    double m = (double)f;
    while (m >= 2.0) {
        m *= 0.5;
        e++;
    }
    const double z = (m - 1.0) / (m + 1.0), z2 = z * z;
    const double ln_m =
        2.0 * z *
        (1.0 +
         z2 * (1.0 / 3 +
               z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 * (1.0 / 9 + z2 / 11)))));
    return FRAE_RANGE_TOTAL_BITS - (e + ln_m * 1.4426950408889634);
}

/* The share of the training's level weight a frame's level gets in the
 * search.  Training weighs a window's summed power, where the frames'
 * errors partly cancel; per frame the whole weight undid most of what the
 * search buys (the encoder's squared error on 51 of the many voices'
 * held-out clips 0.0623 unsearched, 0.0545 searched on the squared error
 * alone, LSD 6.34 / 6.27 / 6.14 unsearched / whole weight / none), and a
 * tenth (0.0555) let the level test's worst condition drift to -0.82 dB;
 * a quarter: 0.0574, at worst -0.59 (docs/codec.md, "Encoder search") */
#define SEARCH_LEVEL_SHARE 0.25

/* the level term's scale (cfg.level_scale: the features' log unit) */
static double level_scale(const frae_config *c)
{
    return c->level_scale > 0 ? c->level_scale : 5.0;
}

/* distortion + weight x rate of the codes in st.q: the frame decoded on
 * the trial copy against x (the model's space, as training measures it),
 * and with ranged their bits under the prior as the coder would code them
 * (from the logits saved before the frame).  A model trained to keep the
 * speech's power (cfg.level_loss) also weighs the frame's power as its
 * training did, level_loss x (ln P_decoded - ln P_input)^2, x_power the
 * input's ln P: the squared error alone would steer each frame to the
 * log-domain mean and lose the level the training kept (1 dB on
 * tests/speech_level_test.py's loud and noisy clips) */
static double search_cost(struct frae_codec_state *s, const float *x,
                          double x_power, int ranged)
{
    const frae_net *m = s->model;
    const frae_config *c = &m->cfg;
    double bits = 0.0;
    if (ranged) {
        uint32_t freq[4096];
        memcpy(s->st.prior_logit, s->raw_logit,
               sizeof(float) * (size_t)c->latent_dim *
                   frae_codec_prior_symbols(c));
        for (int u = 0; u < c->latent_dim; u++) {
            frae_prior_freqs(c, frae_codec_unit_weights(s, u), u, freq);
            bits += freq_bits(freq[frae_code_symbol(c, s->st.q[u])]);
        }
    }
    frae_state_copy(&s->trial, s->trial_base, &s->st, s->st_base, s->st_bytes);
    frae_forward_decode(m, &s->trial, 0);
    const float *y = frae_state_frame(&s->trial, s->trial.ring_pos);
    double sse = 0.0;
    for (int i = 0; i < c->frame_dim; i++) {
        const double d = (double)y[i] - (double)x[i];
        sse += (double)frae_value_weight(c, i) * d * d;
    }
    double level = 0.0;
    if (c->level_loss > 0.0f) {
        double top;
        const double delta =
            frae_frame_log_power(m, y, level_scale(c), &top) - x_power;
        level = SEARCH_LEVEL_SHARE * (double)c->level_loss * delta * delta;
    }
    return sse / c->frame_dim + level + (double)s->search_weight * bits;
}

/* The level a code takes one step up (dir 1) or down (-1): 0 when there
 * is none; binary codes have one neighbour, the other sign */
static int code_neighbour(const frae_config *c, float q, int dir, float *v)
{
    if (c->quantizer == FRAE_QUANT_BINARY) {
        if (dir < 0)
            return 0;
        *v = q > 0.0f ? -1.0f : 1.0f;
        return 1;
    }
    const int top = c->quant_levels - 1, k = frae_code_symbol(c, q) + dir;
    if (k < 0 || k > top)
        return 0;
    *v = (float)k * (2.0f / (float)top) - 1.0f; /* as the decoder makes it */
    return 1;
}

void frae_codec_search_codes(struct frae_codec_state *s, const float *x,
                             int ranged)
{
    const frae_config *c = &s->model->cfg;
    const int L = c->latent_dim;
    float *q = s->st.q;
    if (ranged)
        memcpy(s->raw_logit, s->st.prior_logit,
               sizeof(float) * (size_t)L * frae_codec_prior_symbols(c));
    memcpy(s->best_q, q, sizeof(float) * L);
    double top, x_power = 0.0;
    if (c->level_loss > 0.0f)
        x_power = frae_frame_log_power(s->model, x, level_scale(c), &top);
    double best = search_cost(s, x, x_power, ranged);
    for (int pass = 0; pass < s->search_passes; pass++) {
        int best_u = -1;
        float best_v = 0.0f;
        for (int u = 0; u < L; u++)
            for (int dir = -1; dir <= 1; dir += 2) {
                float v;
                if (!code_neighbour(c, s->best_q[u], dir, &v))
                    continue;
                memcpy(q, s->best_q, sizeof(float) * L);
                q[u] = v;
                const double cost = search_cost(s, x, x_power, ranged);
                if (cost < best) {
                    best = cost;
                    best_u = u;
                    best_v = v;
                }
            }
        if (best_u < 0)
            break;
        s->best_q[best_u] = best_v;
    }
    memcpy(q, s->best_q, sizeof(float) * L);
    if (ranged) /* the logits as prior_logits left them, for the coding */
        memcpy(s->st.prior_logit, s->raw_logit,
               sizeof(float) * (size_t)L * frae_codec_prior_symbols(c));
}

int frae_encoder_set_search(frae_encoder *e, int passes, float rate_weight)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    if (!s || passes < 0 || !(rate_weight >= 0.0f) || !isfinite(rate_weight) ||
        (passes > 0 && s->model->cfg.quantizer == FRAE_QUANT_NONE))
        return -1;
    s->search_passes = passes;
    s->search_weight = rate_weight;
    return 0;
}

/* ---- discontinuous transmission ------------------------------------------------
 * With DTX on (frae_encoder_set_dtx), each frame starts with a flag, 1 for
 * a silent frame, coded with adaptive counts in the context of the last
 * frame's flag.  A silent frame codes nothing else and freezes both ends:
 * the network's state, the prior's recalibration and the pitch coder stay
 * as they were, and the decoder repeats the last frame it decoded (f0 and
 * voicing 0), so a pause costs a fraction of a bit a frame. */
void frae_codec_silence_encode(struct frae_codec_state *s, frae_range_enc *rc,
                               int silent)
{
    frae_count_encode(rc, s->silence_count[s->prev_silent], 2, silent);
    s->prev_silent = silent;
}

int frae_codec_silence_decode(struct frae_codec_state *s, frae_range_dec *rc)
{
    s->prev_silent = frae_count_decode(rc, s->silence_count[s->prev_silent], 2);
    return s->prev_silent;
}

/* A silent frame's output: the last frame decoded, as it came out (before
 * a sequence's first coded frame, the model's zero frame) */
void frae_codec_silent_frame(const struct frae_codec_state *s, float *frame)
{
    const frae_config *c = &s->model->cfg;
    if (!frame)
        return;
    const float *last = frae_state_frame(&s->st, s->st.ring_pos - 1);
    if (c->normalize)
        frae_denormalize(s->model, last, frame);
    else
        memcpy(frame, last, sizeof(float) * (size_t)c->frame_dim);
    if (c->pitch)
        frame[c->frame_dim] = frame[c->frame_dim + 1] = 0.0f;
}

static int set_dtx(struct frae_codec_state *s, int on)
{
    if (!s || s->model->cfg.prior_hidden <= 0)
        return -1;
    s->dtx = on != 0;
    return 0;
}

int frae_encoder_set_dtx(frae_encoder *e, int on)
{
    return set_dtx((struct frae_codec_state *)e, on);
}

int frae_decoder_set_dtx(frae_decoder *d, int on)
{
    return set_dtx((struct frae_codec_state *)d, on);
}
