/* The streaming codec: per-frame encoder and decoder states, code packing,
 * the model identity hash and the .fbs bitstream.
 *
 * A state is one block the caller may own (get_size + init): a const
 * pointer to the model and a stream state for one sequence (state.h: one
 * frame of activations, the latent, a ring of K+1 frames, the sums ahead),
 * carved from the rest of the block by the same layout as the model's own.
 * The forward pass (forward.c) runs on the pair; the parameters are the
 * model's, read only.  States never allocate after init and share nothing
 * writable: separate states are safe in separate threads.  The model must
 * outlive its states and keep its parameters unchanged while they are in
 * use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/formats.h"
#include "core/frae_internal.h"
#include "codec/pitch_counts.h"
#include "codec/container.h"

struct frae_codec_state {
    const frae_net *model;
    frae_state st; /* one sequence, one frame of activations */
    int code_bits;
    float pitch_pred; /* log2 f0 of the last voiced frame, as decoded */
    float *xnorm;     /* cfg.normalize: one z-scored frame [D] */
    /* entropy-coded pitch (a model with a prior): adaptive counts of the
     * voicing bit after an unvoiced / a voiced frame, and of the step in
     * its context (step_context): the last frame's step (-1: unvoiced)
     * and, for the ranged coder, the one before */
    uint32_t voicing_count[2][2], step_count[81][8];
    int prev_voiced, prev_step, prev_step2;
    /* the envelope coder's (FRAE_PITCH_CODER_ENVELOPE): counts of the
     * voicing bit in its contexts (env_voicing_context), and the tilt of
     * the last frame coded (have_tilt 0: none yet in this sequence) */
    uint32_t env_voicing_count[PITCH_ENV_CONTEXTS][2];
    float prev_tilt;
    int have_tilt;
    /* loss (packets.c): the last frame's decoded f0 and voicing, which a
     * concealed frame holds */
    float last_pitch[2];
    /* discontinuous transmission (frae_encoder_set_dtx): on or off, and
     * adaptive counts of the silence flag after a coded / a silent frame */
    int dtx, prev_silent;
    uint32_t silence_count[2][2];
    /* the prior's logits, recalibrated to the stream (a model with a
     * prior): logit' = scale[u] x logit + shift[u][k], both learned as
     * the frames go by; weights holds the frame's, from logit' */
    float *scale, *shift, *weights;
    /* an encoder's search (frae_encoder_set_search): passes (0: off) and
     * the rate's weight; a copy of st a frame's candidate codes are
     * decoded on (trial, st_bytes from trial_base; st's from st_base),
     * the prior's logits before the frame's codes [L x S] and the best
     * codes so far [L].  NULL in a decoder. */
    int search_passes;
    float search_weight;
    frae_state trial;
    char *st_base, *trial_base;
    size_t st_bytes;
    float *raw_logit, *best_q;
};

/* ---- pitch ------------------------------------------------------------------
 * Closed-loop predictive quantizer of log2 f0 (frae.h, "Pitch"): encoder
 * and decoder update the prediction with the same float additions and
 * clamps, no libm, so they never drift apart. */
#define PITCH_START 7.22881869f /* log2 150 Hz */
#define PITCH_LO 5.64385619f    /* log2 50 Hz */
#define PITCH_HI 9.22881869f    /* log2 600 Hz */
/* both coders' steps (tools/fit_pitch_counts.py uses the same) */
static const float pitch_steps[8] = {-0.5f,   -0.17f, -0.06f, -0.015f,
                                     0.015f, 0.06f,  0.17f,  0.5f};

static float pitch_step(float pred, int i)
{
    float v = pred + pitch_steps[i];
    return v < PITCH_LO ? PITCH_LO : v > PITCH_HI ? PITCH_HI : v;
}

/* in: f0 (Hz), voicing; out: the decoded pair.  Returns the code. */
static uint32_t pitch_encode(float *pred, const float *in, float *out)
{
    const float f0 = in[0];
    if (!(in[1] >= 0.5f) || !(f0 > 0.0f) || !isfinite(f0)) {
        out[0] = out[1] = 0.0f;
        return 0;
    }
    const float target = log2f(f0);
    int best = 0;
    for (int i = 1; i < 8; i++)
        if (fabsf(pitch_step(*pred, i) - target) <
            fabsf(pitch_step(*pred, best) - target))
            best = i;
    *pred = pitch_step(*pred, best);
    out[0] = exp2f(*pred);
    out[1] = 1.0f;
    return 1u | (uint32_t)best << 1;
}

static int pitch_decode(float *pred, uint32_t code, float *out)
{
    if (!(code & 1u)) {
        if (code) /* step bits on an unvoiced frame: no encoder makes it */
            return -1;
        out[0] = out[1] = 0.0f;
        return 0;
    }
    *pred = pitch_step(*pred, (int)(code >> 1));
    out[0] = exp2f(*pred);
    out[1] = 1.0f;
    return 0;
}

/* ---- codes ---------------------------------------------------------------- */

size_t frae_code_bytes(const frae_net *m)
{
    return ((size_t)m->cfg.latent_dim * frae_code_bits(m) +
            (m->cfg.pitch ? FRAE_PITCH_BITS : 0) + 7) / 8;
}

static void put_bits(unsigned char *dst, size_t pos, uint32_t v, int bits)
{
    for (int i = 0; i < bits; i++, pos++) {
        unsigned char mask = (unsigned char)(1u << (pos & 7));
        if (v >> i & 1u)
            dst[pos >> 3] |= mask;
        else
            dst[pos >> 3] &= (unsigned char)~mask;
    }
}

static uint32_t get_bits(const unsigned char *src, size_t pos, int bits)
{
    uint32_t v = 0;
    for (int i = 0; i < bits; i++, pos++)
        v |= (uint32_t)(src[pos >> 3] >> (pos & 7) & 1u) << i;
    return v;
}

/* Quantized latent q -> code bytes (L values of code_bits, LSB first). */
static void pack_code(const frae_config *c, int bits, const float *q,
                      unsigned char *code)
{
    /* padding bits of the last byte are zero: codes are deterministic */
    memset(code, 0, ((size_t)c->latent_dim * bits +
                     (c->pitch ? FRAE_PITCH_BITS : 0) + 7) / 8);
    for (int i = 0; i < c->latent_dim; i++) {
        uint32_t v;
        if (c->quantizer == FRAE_QUANT_BINARY) {
            v = q[i] > 0.0f;
        } else if (c->quantizer == FRAE_QUANT_UNIFORM) {
            /* q = idx * step - 1 exactly as the quantizer made it */
            float top = (float)(c->quant_levels - 1);
            v = (uint32_t)lrintf((q[i] + 1.0f) * 0.5f * top);
        } else {
            memcpy(&v, &q[i], 4);
        }
        put_bits(code, (size_t)i * bits, v, bits);
    }
}

/* Code bytes -> q, the same floats the encoder's quantizer produced.
 * Returns -1 for an index beyond the quantizer's levels. */
static int unpack_code(const frae_config *c, int bits,
                       const unsigned char *code, float *q)
{
    for (int i = 0; i < c->latent_dim; i++) {
        uint32_t v = get_bits(code, (size_t)i * bits, bits);
        if (c->quantizer == FRAE_QUANT_BINARY) {
            q[i] = v ? 1.0f : -1.0f;
        } else if (c->quantizer == FRAE_QUANT_UNIFORM) {
            if (v >= (uint32_t)c->quant_levels)
                return -1;
            const float top = (float)(c->quant_levels - 1);
            q[i] = (float)v * (2.0f / top) - 1.0f;
        } else {
            memcpy(&q[i], &v, 4);
            if (!isfinite(q[i]))
                return -1;
        }
    }
    return 0;
}

/* ---- model identity ------------------------------------------------------- */

uint64_t frae_model_hash(const frae_net *m)
{
    const frae_config *c = &m->cfg;
    int32_t shape[8 + 2 * FRAE_MAX_HIDDEN] = {
        c->frame_dim, c->history, c->latent_dim, (int32_t)c->activation,
        (int32_t)c->quantizer, c->quant_levels, c->n_enc_hidden,
        c->n_dec_hidden};
    for (int i = 0; i < c->n_enc_hidden; i++)
        shape[8 + i] = c->enc_hidden[i];
    for (int i = 0; i < c->n_dec_hidden; i++)
        shape[8 + FRAE_MAX_HIDDEN + i] = c->dec_hidden[i];
    uint64_t h = frae_fnv1a64((const unsigned char *)shape, sizeof shape,
                              FRAE_FNV_INIT);
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
                float w = e[k].bias ? ly->bias[col]
                                    : frae_weight_get(m, l, i, col);
                h = frae_fnv1a64((const unsigned char *)&w, 4, h);
            }
    }
    return h;
}

/* ---- states ------------------------------------------------------------------ */

/* adaptive pitch counts (entropy-coded streams): start, step, halving */
#define PITCH_COUNT_INIT 4
#define PITCH_COUNT_STEP 32
#define PITCH_COUNT_LIMIT 4096
#define SILENCE_COUNT_SAME 62
#define SILENCE_COUNT_OTHER 2

#define HEAD_BYTES ((sizeof(struct frae_codec_state) + 63) & ~(size_t)63)

/* logits per latent unit: 1 (binary), N (uniform) */
static int prior_symbols(const frae_config *c)
{
    return c->quantizer == FRAE_QUANT_BINARY ? 1 : c->quant_levels;
}

/* floats of the prior's recalibration: scale [L], shift and weights
 * [L x S] */
static size_t adapt_floats(const frae_config *c)
{
    if (c->prior_hidden <= 0)
        return 0;
    return (size_t)c->latent_dim * (1 + 2 * (size_t)prior_symbols(c));
}

/* bytes of a decoder; an encoder's search adds a second stream state and
 * search_floats */
static size_t search_floats(const frae_config *c)
{
    return (size_t)c->latent_dim * (1 + (size_t)prior_symbols(c));
}

static size_t aligned64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t frae_decoder_size(const frae_net *m)
{
    /* a multiple of 64, as aligned_alloc wants */
    return aligned64(HEAD_BYTES + frae_state_layout(&m->cfg, 1, 1, NULL, NULL) +
                     (m->cfg.normalize ? sizeof(float) * (size_t)m->cfg.frame_dim
                                       : 0) +
                     sizeof(float) * adapt_floats(&m->cfg));
}

size_t frae_encoder_size(const frae_net *m)
{
    return frae_decoder_size(m) + frae_state_layout(&m->cfg, 1, 1, NULL, NULL) +
           aligned64(sizeof(float) * search_floats(&m->cfg));
}

static void state_reset(struct frae_codec_state *s)
{
    const frae_config *c = &s->model->cfg;
    s->pitch_pred = PITCH_START;
    s->prev_voiced = 0;
    s->prev_step = s->prev_step2 = -1;
    s->prev_silent = 0;
    /* a flag mostly repeats itself: 1 in 32 to change, at first */
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++)
            s->silence_count[i][k] = i == k ? SILENCE_COUNT_SAME
                                            : SILENCE_COUNT_OTHER;
    /* the ranged coder starts from counts fitted on speech, the 4-bit
     * quantizer's steps from even ones */
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++)
            s->voicing_count[i][k] = c->pitch_ranged ? pitch_voicing_start[i][k]
                                                     : PITCH_COUNT_INIT;
    for (int i = 0; i < 81; i++)
        for (int k = 0; k < 8; k++)
            s->step_count[i][k] = c->pitch_ranged ? pitch_step_start[i][k]
                                                  : PITCH_COUNT_INIT;
    for (int i = 0; i < PITCH_ENV_CONTEXTS; i++)
        for (int k = 0; k < 2; k++)
            s->env_voicing_count[i][k] = pitch_env_voicing_start[i][k];
    s->prev_tilt = 0.0f;
    s->have_tilt = 0;
    s->last_pitch[0] = s->last_pitch[1] = 0.0f;
    if (s->scale) { /* the prior as trained: scale 1, shift 0 */
        const size_t LS = (size_t)c->latent_dim * prior_symbols(c);
        for (int u = 0; u < c->latent_dim; u++)
            s->scale[u] = 1.0f;
        memset(s->shift, 0, sizeof(float) * LS);
    }
    frae_state_reset(s->model, &s->st);
    s->st.ring_rows = 1; /* the one sequence, from the first frame */
}

static struct frae_codec_state *state_init(void *mem, const frae_net *m,
                                           int encoder)
{
    if (!mem || !m)
        return NULL;
    memset(mem, 0, encoder ? frae_encoder_size(m) : frae_decoder_size(m));
    struct frae_codec_state *s = mem;
    s->model = m;
    s->st_base = (char *)mem + HEAD_BYTES;
    const size_t st_bytes = frae_state_layout(&m->cfg, 1, 1, &s->st, s->st_base);
    s->st_bytes = st_bytes;
    float *after = (float *)(void *)((char *)mem + HEAD_BYTES + st_bytes);
    if (m->cfg.normalize) {
        s->xnorm = after;
        after += m->cfg.frame_dim;
    }
    if (m->cfg.prior_hidden > 0) {
        const size_t LS = (size_t)m->cfg.latent_dim * prior_symbols(&m->cfg);
        s->scale = after;
        s->shift = s->scale + m->cfg.latent_dim;
        s->weights = s->shift + LS;
    }
    if (encoder) { /* the search's, after a decoder's bytes */
        s->trial_base = (char *)mem + frae_decoder_size(m);
        frae_state_layout(&m->cfg, 1, 1, &s->trial, s->trial_base);
        s->raw_logit = (float *)(void *)(s->trial_base + st_bytes);
        s->best_q = s->raw_logit +
                    (size_t)m->cfg.latent_dim * prior_symbols(&m->cfg);
    }
    s->code_bits = frae_code_bits(m);
    state_reset(s);
    return s;
}

frae_encoder *frae_encoder_init(void *mem, const frae_net *m)
{
    return (frae_encoder *)state_init(mem, m, 1);
}

frae_decoder *frae_decoder_init(void *mem, const frae_net *m)
{
    return (frae_decoder *)state_init(mem, m, 0);
}

frae_encoder *frae_encoder_create(const frae_net *m)
{
    void *mem = aligned_alloc(64, frae_encoder_size(m));
    return mem ? frae_encoder_init(mem, m) : NULL;
}

frae_decoder *frae_decoder_create(const frae_net *m)
{
    void *mem = aligned_alloc(64, frae_decoder_size(m));
    return mem ? frae_decoder_init(mem, m) : NULL;
}

void frae_encoder_destroy(frae_encoder *e) { free(e); }
void frae_decoder_destroy(frae_decoder *d) { free(d); }

void frae_encoder_reset(frae_encoder *e)
{
    state_reset((struct frae_codec_state *)e);
}

void frae_decoder_reset(frae_decoder *d)
{
    state_reset((struct frae_codec_state *)d);
}

/* The decoder half on the state's latent, then the ring moves on. */
static void decode_and_advance(struct frae_codec_state *s, float *frame)
{
    frae_state *st = &s->st;
    frae_forward_decode(s->model, st, 0);
    if (frame && s->model->cfg.normalize)
        frae_denormalize(s->model, frae_state_frame(st, st->ring_pos), frame);
    else if (frame)
        memcpy(frame, frae_state_frame(st, st->ring_pos),
               sizeof(float) * (size_t)st->frame_dim);
    st->ring_pos = (st->ring_pos + 1) % st->ring_cap;
}

static void search_codes(struct frae_codec_state *s, const float *x,
                         int ranged);

void frae_encode_frame(frae_encoder *e, const float *frame,
                       unsigned char *code, float *recon)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    fp_env env = fp_enter();
    const frae_config *c = &s->model->cfg;
    const float *x = frame;
    if (c->normalize) {
        frae_normalize_rows(s->model, frame, 0, 1, s->xnorm);
        x = s->xnorm;
    }
    frae_forward_encode(s->model, &s->st, 0, x);
    if (s->search_passes)
        search_codes(s, x, 0);
    pack_code(c, s->code_bits, s->st.q, code);
    float pitch[2];
    if (c->pitch)
        put_bits(code, (size_t)c->latent_dim * s->code_bits,
                 pitch_encode(&s->pitch_pred, frame + c->frame_dim, pitch),
                 FRAE_PITCH_BITS);
    /* closed loop: run the decoder too, so the buffer holds exactly what
     * the far end will have */
    decode_and_advance(s, recon);
    if (c->pitch && recon)
        memcpy(recon + c->frame_dim, pitch, sizeof pitch);
    fp_leave(env);
}

int frae_decode_frame(frae_decoder *d, const unsigned char *code,
                      float *frame)
{
    struct frae_codec_state *s = (struct frae_codec_state *)d;
    const frae_config *c = &s->model->cfg;
    if (unpack_code(c, s->code_bits, code, s->st.q))
        return -1;
    float pitch[2], pred = s->pitch_pred;
    if (c->pitch &&
        pitch_decode(&pred,
                     get_bits(code, (size_t)c->latent_dim * s->code_bits,
                              FRAE_PITCH_BITS),
                     pitch))
        return -1;
    s->pitch_pred = pred;
    fp_env env = fp_enter();
    decode_and_advance(s, frame);
    fp_leave(env);
    s->prev_silent = 0;
    if (c->pitch) {
        memcpy(s->last_pitch, pitch, sizeof pitch);
        if (frame)
            memcpy(frame + c->frame_dim, pitch, sizeof pitch);
    }
    return 0;
}

/* ---- entropy-coded frames ------------------------------------------------------
 * A model with a prior codes each frame's L codes with the prior's
 * frequencies, computed from the state before the frame (the same floats
 * at both ends: frae_prior_freqs), then its pitch code with adaptive
 * counts: the voicing bit in the context of the last frame's voicing, a
 * voiced frame's step in the context of the last frame's step (or of an
 * onset): a glide repeats its step.  The ranged pitch coder
 * (cfg.pitch_ranged) also sees the step before that, and starts from
 * counts fitted on speech (pitch_counts.h) instead of even ones. */

/* The step's context: the last frame's step (-1 after an unvoiced frame)
 * and, for the ranged coder, the one before (pitch_counts.h's 9 x 9 rows) */
static int step_context(const struct frae_codec_state *s)
{
    return s->model->cfg.pitch_ranged
               ? (s->prev_step + 1) * 9 + s->prev_step2 + 1
               : s->prev_step + 1;
}

static void pitch_context_advance(struct frae_codec_state *s, int voiced,
                                  int step)
{
    s->prev_voiced = voiced;
    s->prev_step2 = s->prev_step;
    s->prev_step = voiced ? step : -1;
}

/* values above how many of the edges */
static int env_bin(float v, const float *edges, int n)
{
    int bin = 0;
    for (int i = 0; i < n; i++)
        bin += v > edges[i];
    return bin;
}

/* The envelope coder's voicing context, from the frame just decoded (both
 * ends have it before the pitch: the envelope's codes come first) in the
 * model's feature units: the last voicing, then bins of the frame's level
 * (the mean of its D values), tilt (the mean of the lowest quarter minus
 * that of the top three eighths) and change of tilt since the last coded
 * frame (0 for a sequence's first), as tools/fit_pitch_counts.py fitted
 * them.  Voicing follows the envelope: a voiced frame is loud and slopes
 * down (README, "Entropy coding").  Plain float sums in one order at both
 * ends.  Called once per coded frame: it moves the tilt on. */
static int env_voicing_context(struct frae_codec_state *s)
{
    const frae_net *m = s->model;
    const int D = m->cfg.frame_dim;
    const int lo = D / 4 > 1 ? D / 4 : 1;
    const int hi = 5 * D / 8 < D - 1 ? 5 * D / 8 : D - 1;
    const float *y = frae_state_frame(&s->st, s->st.ring_pos - 1);
    float sum = 0.0f, sum_lo = 0.0f, sum_hi = 0.0f;
    for (int i = 0; i < D; i++) {
        const float v = m->cfg.normalize ? y[i] * m->norm_std[i] + m->norm_mean[i]
                                         : y[i];
        sum += v;
        if (i < lo)
            sum_lo += v;
        if (i >= hi)
            sum_hi += v;
    }
    const float tilt = sum_lo / (float)lo - sum_hi / (float)(D - hi);
    const float change = s->have_tilt ? tilt - s->prev_tilt : 0.0f;
    s->prev_tilt = tilt;
    s->have_tilt = 1;
    int ctx = s->prev_voiced;
    ctx = ctx * PITCH_ENV_BINS_LEVEL +
          env_bin(sum / (float)D, pitch_env_level_edges, PITCH_ENV_BINS_LEVEL - 1);
    ctx = ctx * PITCH_ENV_BINS_TILT +
          env_bin(tilt, pitch_env_tilt_edges, PITCH_ENV_BINS_TILT - 1);
    ctx = ctx * PITCH_ENV_BINS_CHANGE +
          env_bin(change, pitch_env_tilt_change_edges, PITCH_ENV_BINS_CHANGE - 1);
    return ctx;
}

/* the counts a coded frame's voicing bit is coded with */
static uint32_t *voicing_counts(struct frae_codec_state *s)
{
    if (s->model->cfg.pitch_ranged == FRAE_PITCH_CODER_ENVELOPE)
        return s->env_voicing_count[env_voicing_context(s)];
    return s->voicing_count[s->prev_voiced];
}

/* frequencies of n adaptive counts */
static void count_freqs(const uint32_t *count, int n, uint32_t *freq)
{
    float p[8];
    for (int i = 0; i < n; i++)
        p[i] = (float)count[i];
    frae_quantize_pmf(p, n, freq);
}

/* a symbol seen: its count grows; all are halved past a limit, so the
 * model follows the speaker */
static void count_update(uint32_t *count, int n, int symbol)
{
    uint32_t total = 0;
    count[symbol] += PITCH_COUNT_STEP;
    for (int i = 0; i < n; i++)
        total += count[i];
    if (total > PITCH_COUNT_LIMIT)
        for (int i = 0; i < n; i++)
            count[i] = (count[i] + 1) / 2;
}

/* A symbol of n (at most 8) coded with adaptive counts, which it then
 * updates: the same steps at both ends */
static void count_encode(frae_range_enc *rc, uint32_t *count, int n, int symbol)
{
    uint32_t freq[8];
    count_freqs(count, n, freq);
    frae_range_encode_symbol(rc, freq, symbol);
    count_update(count, n, symbol);
}

static int count_decode(frae_range_dec *rc, uint32_t *count, int n)
{
    uint32_t freq[8];
    count_freqs(count, n, freq);
    const int symbol = frae_range_decode_symbol(rc, freq, n);
    count_update(count, n, symbol);
    return symbol;
}

static int code_symbol(const frae_config *c, float q)
{
    if (c->quantizer == FRAE_QUANT_BINARY)
        return q > 0.0f;
    return (int)lrintf((q + 1.0f) * 0.5f * (float)(c->quant_levels - 1));
}

/* The prior's logits of the state's next frame, before its codes, into
 * st->prior_logit; without the autoregression also what the frame's
 * frequencies are made of, recalibrated, for all units at once (one
 * vectorised loop); with it unit_weights makes them unit by unit */
static void prior_logits(struct frae_codec_state *s)
{
    const frae_net *m = s->model;
    frae_state *st = &s->st;
    const float *ctx = st->h[1]; /* GRU: h_dec(t-1) as it is */
    if (!m->gru) {
        frae_prior_context(m, st, 0, 1, st->prior_ctx);
        ctx = st->prior_ctx;
    }
    frae_prior_forward(m, &st->scratch, 1, ctx, st->prior_hid,
                       st->prior_logit);
    if (m->prior[2] >= 0)
        return;
    const int S = prior_symbols(&m->cfg);
    for (int i = 0; i < m->cfg.latent_dim * S; i++)
        s->weights[i] = s->scale[i / S] * st->prior_logit[i] + s->shift[i];
    frae_prior_weights(&m->cfg, s->weights);
}

/* What unit u's frequencies are made of: without the autoregression, as
 * prior_logits made them; with it, from unit u's logits plus the terms of
 * the codes before u in st->q (the encoder's, or those decoded so far),
 * recalibrated (frae_prior_unit_weights).  The logits used are kept in
 * st->prior_logit for prior_adapt. */
static const float *unit_weights(struct frae_codec_state *s, int u)
{
    const frae_net *m = s->model;
    if (m->prior[2] < 0)
        return s->weights;
    const int S = prior_symbols(&m->cfg);
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
 * stay in step; the prior follows a voice it was not trained on (README,
 * "Entropy coding"). */
#define ADAPT_RATE 0.03125f /* 2^-5 */
#define ADAPT_SCALE_MAX 4.0f
#define ADAPT_SHIFT_MAX 8.0f
static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void prior_adapt(struct frae_codec_state *s, const float *weights)
{
    const frae_config *c = &s->model->cfg;
    const int S = prior_symbols(c);
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
            const int sym = code_symbol(c, s->st.q[u]);
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
        s->scale[u] = clampf(s->scale[u] - ADAPT_RATE * dscale, 0.0f,
                             ADAPT_SCALE_MAX);
    }
}

/* ---- the encoder's search -------------------------------------------------------
 * Analysis by synthesis (frae.h, frae_encoder_set_search): the network's
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
        (1.0 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 * (1.0 / 9 +
                                                                     z2 / 11)))));
    return FRAE_RANGE_TOTAL_BITS - (e + ln_m * 1.4426950408889634);
}

/* distortion + weight x rate of the codes in st.q: the frame decoded on
 * the trial copy against x (the model's space, as training measures it),
 * and with ranged their bits under the prior as the coder would code them
 * (from the logits saved before the frame) */
static double search_cost(struct frae_codec_state *s, const float *x,
                          int ranged)
{
    const frae_net *m = s->model;
    const frae_config *c = &m->cfg;
    double bits = 0.0;
    if (ranged) {
        uint32_t freq[4096];
        memcpy(s->st.prior_logit, s->raw_logit,
               sizeof(float) * (size_t)c->latent_dim * prior_symbols(c));
        for (int u = 0; u < c->latent_dim; u++) {
            frae_prior_freqs(c, unit_weights(s, u), u, freq);
            bits += freq_bits(freq[code_symbol(c, s->st.q[u])]);
        }
    }
    frae_state_copy(&s->trial, s->trial_base, &s->st, s->st_base, s->st_bytes);
    frae_forward_decode(m, &s->trial, 0);
    const float *y = frae_state_frame(&s->trial, s->trial.ring_pos);
    double sse = 0.0;
    for (int i = 0; i < c->frame_dim; i++) {
        const double d = (double)y[i] - (double)x[i];
        sse += d * d;
    }
    return sse / c->frame_dim + (double)s->search_weight * bits;
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
    const int top = c->quant_levels - 1, k = code_symbol(c, q) + dir;
    if (k < 0 || k > top)
        return 0;
    *v = (float)k * (2.0f / (float)top) - 1.0f; /* as the decoder makes it */
    return 1;
}

static void search_codes(struct frae_codec_state *s, const float *x,
                         int ranged)
{
    const frae_config *c = &s->model->cfg;
    const int L = c->latent_dim;
    float *q = s->st.q;
    if (ranged)
        memcpy(s->raw_logit, s->st.prior_logit,
               sizeof(float) * (size_t)L * prior_symbols(c));
    memcpy(s->best_q, q, sizeof(float) * L);
    double best = search_cost(s, x, ranged);
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
                const double cost = search_cost(s, x, ranged);
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
               sizeof(float) * (size_t)L * prior_symbols(c));
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
static void silence_flag_encode(struct frae_codec_state *s, frae_range_enc *rc,
                                int silent)
{
    count_encode(rc, s->silence_count[s->prev_silent], 2, silent);
    s->prev_silent = silent;
}

static int silence_flag_decode(struct frae_codec_state *s, frae_range_dec *rc)
{
    s->prev_silent = count_decode(rc, s->silence_count[s->prev_silent], 2);
    return s->prev_silent;
}

/* A silent frame's output: the last frame decoded, as it came out (before
 * a sequence's first coded frame, the model's zero frame) */
static void silent_frame(const struct frae_codec_state *s, float *frame)
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

int frae_encode_silence_ranged(frae_encoder *e, frae_range_enc *rc,
                               float *recon)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    if (!s->dtx)
        return -1;
    fp_env env = fp_enter();
    silence_flag_encode(s, rc, 1);
    silent_frame(s, recon);
    fp_leave(env);
    return 0;
}

void frae_encode_frame_ranged(frae_encoder *e, const float *frame,
                              frae_range_enc *rc, float *recon)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    fp_env env = fp_enter();
    const frae_config *c = &s->model->cfg;
    uint32_t freq[4096];
    const float *x = frame;
    if (s->dtx)
        silence_flag_encode(s, rc, 0);
    if (c->normalize) {
        frae_normalize_rows(s->model, frame, 0, 1, s->xnorm);
        x = s->xnorm;
    }
    prior_logits(s);
    frae_forward_encode(s->model, &s->st, 0, x);
    if (s->search_passes)
        search_codes(s, x, 1);
    for (int u = 0; u < c->latent_dim; u++) {
        frae_prior_freqs(c, unit_weights(s, u), u, freq);
        frae_range_encode_symbol(rc, freq, code_symbol(c, s->st.q[u]));
    }
    prior_adapt(s, s->weights);
    /* the envelope first: the pitch may be coded in its context */
    decode_and_advance(s, recon);
    if (c->pitch) {
        float pitch[2];
        uint32_t code = pitch_encode(&s->pitch_pred, frame + c->frame_dim,
                                     pitch);
        const int voiced = (int)(code & 1u);
        count_encode(rc, voicing_counts(s), 2, voiced);
        if (voiced)
            count_encode(rc, s->step_count[step_context(s)], 8,
                         (int)(code >> 1));
        pitch_context_advance(s, voiced, (int)(code >> 1));
        if (recon)
            memcpy(recon + c->frame_dim, pitch, sizeof pitch);
    }
    fp_leave(env);
}

int frae_decode_frame_ranged(frae_decoder *d, frae_range_dec *rc,
                             float *frame)
{
    struct frae_codec_state *s = (struct frae_codec_state *)d;
    fp_env env = fp_enter();
    const frae_config *c = &s->model->cfg;
    uint32_t freq[4096];
    if (s->dtx && silence_flag_decode(s, rc)) {
        silent_frame(s, frame);
        fp_leave(env);
        return frae_range_dec_status(rc);
    }
    prior_logits(s);
    const int n = c->quantizer == FRAE_QUANT_BINARY ? 2 : c->quant_levels;
    const float top = (float)(c->quant_levels - 1);
    for (int u = 0; u < c->latent_dim; u++) {
        frae_prior_freqs(c, unit_weights(s, u), u, freq);
        int sym = frae_range_decode_symbol(rc, freq, n);
        s->st.q[u] = c->quantizer == FRAE_QUANT_BINARY
                         ? (sym ? 1.0f : -1.0f)
                         : (float)sym * (2.0f / top) - 1.0f;
    }
    prior_adapt(s, s->weights);
    decode_and_advance(s, frame); /* the envelope, then the pitch */
    if (c->pitch) {
        float pitch[2] = {0.0f, 0.0f};
        const int voiced = count_decode(rc, voicing_counts(s), 2);
        uint32_t code = (uint32_t)voiced;
        if (voiced)
            code |= (uint32_t)count_decode(rc, s->step_count[step_context(s)],
                                           8)
                    << 1;
        pitch_context_advance(s, voiced, (int)(code >> 1));
        pitch_decode(&s->pitch_pred, code, pitch); /* always a valid code */
        memcpy(s->last_pitch, pitch, sizeof pitch);
        if (frame)
            memcpy(frame + c->frame_dim, pitch, sizeof pitch);
    }
    fp_leave(env);
    return frae_range_dec_status(rc);
}

/* ---- loss: concealment and the pitch anchor (packets.c) -----------------------
 * A frame that never arrived runs the decoder on the last frame's latent
 * halved, and halved again at each further frame lost (CONCEAL_DECAY):
 * toward 0, the middle of the codes (binary +-1, uniform over [-1, 1]),
 * where the network gives a frame that commits to no sound, rather than
 * holding the last one as the state drifts (measured through audio on the
 * demo's fixed-rate codec, 40 ms packets, docs/2026-12-02-loss-study.md:
 * at 5% random loss LSD rose 1.79 dB with the latent repeated, 0.84
 * decayed by 0.8 a frame, 0.53 by 0.5, 0.56 zeroed at once).  The state
 * runs on, to meet the codes when they come again.  The pitch holds the
 * last decoded f0 and voicing and leaves the prediction alone; after a
 * silent frame (DTX) silence goes on.  The entropy coder's adaptive
 * counts are not touched: a decoder that lost a packet of an
 * entropy-coded stream waits for a resynchronisation point, where both
 * ends start them afresh. */
#define CONCEAL_DECAY 0.5f

void frae_decoder_conceal(frae_decoder *d, float *frame)
{
    struct frae_codec_state *s = (struct frae_codec_state *)d;
    const frae_config *c = &s->model->cfg;
    fp_env env = fp_enter();
    if (s->prev_silent) {
        silent_frame(s, frame);
    } else {
        for (int u = 0; u < c->latent_dim; u++)
            s->st.q[u] *= CONCEAL_DECAY;
        decode_and_advance(s, frame); /* st.q: the last latent, decayed */
    }
    fp_leave(env);
    if (c->pitch && frame)
        memcpy(frame + c->frame_dim, s->last_pitch, sizeof s->last_pitch);
}

/* log2 f0 on 2^FRAE_PITCH_ANCHOR_BITS levels over 50..600 Hz: 0.028
 * octave apart */
static float anchor_value(uint32_t code)
{
    return PITCH_LO + (float)code * ((PITCH_HI - PITCH_LO) /
                                     (float)((1u << FRAE_PITCH_ANCHOR_BITS) -
                                             1u));
}

uint32_t frae_encoder_pitch_anchor(frae_encoder *e)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    const float top = (float)((1u << FRAE_PITCH_ANCHOR_BITS) - 1u);
    float v = (s->pitch_pred - PITCH_LO) / (PITCH_HI - PITCH_LO) * top;
    v = v < 0.0f ? 0.0f : v > top ? top : v;
    const uint32_t code = (uint32_t)lrintf(v);
    s->pitch_pred = anchor_value(code);
    return code;
}

void frae_decoder_pitch_anchor(frae_decoder *d, uint32_t code)
{
    struct frae_codec_state *s = (struct frae_codec_state *)d;
    s->pitch_pred = anchor_value(code & ((1u << FRAE_PITCH_ANCHOR_BITS) - 1u));
}

/* ---- the .fbs bitstream --------------------------------------------------------- */

static void wr32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Bits of one frame's code: L values, then the pitch bits. */
static uint64_t frame_bits(const frae_stream *s)
{
    return (uint64_t)s->latent_dim * s->code_bits +
           (s->flags & FRAE_STREAM_PITCH ? FRAE_PITCH_BITS : 0);
}

/* Total bits of codes, or 0 on overflow. */
static uint64_t payload_bits(const frae_stream *s)
{
    uint64_t n;
    if (__builtin_mul_overflow((uint64_t)s->sequences, (uint64_t)s->frames,
                               &n) ||
        __builtin_mul_overflow(n, frame_bits(s), &n) ||
        n > ((uint64_t)1 << 60))
        return 0;
    return n;
}

int frae_stream_ranged(const frae_stream *s)
{
    return s->version == FRAE_STREAM_VERSION_RANGED ||
           s->version == FRAE_STREAM_VERSION_RANGED_V3 ||
           (s->version == FRAE_STREAM_VERSION_PACKETS &&
            (s->flags & FRAE_STREAM_RANGED_PACKETS));
}

size_t frae_stream_bytes(const frae_stream *s)
{
    if (frae_stream_ranged(s))
        return 0; /* variable: known once written */
    return FRAE_STREAM_HEADER + (size_t)((payload_bits(s) + 7) / 8) + 4;
}

/* ---- versions 3 and 4's compact fields ---------------------------------------
 * LEB128 varints: 7 bits a byte, low first, the top bit set on all but the
 * last.  Minimal (no trailing zero byte), so each value has one form. */
size_t frae_varint_put(unsigned char *p, uint32_t v)
{
    size_t n = 0;
    for (; v >= 0x80; v >>= 7)
        p[n++] = (unsigned char)(v | 0x80);
    p[n++] = (unsigned char)v;
    return n;
}

/* A varint within avail bytes: its bytes; 0 if it runs past avail; -1 if
 * malformed (over 5 bytes or 32 bits, or not minimal). */
int frae_varint_get(const unsigned char *p, size_t avail, uint32_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 5; i++) {
        if ((size_t)i >= avail)
            return 0;
        x |= (uint64_t)(p[i] & 0x7f) << 7 * i;
        if (!(p[i] & 0x80)) {
            if (x > UINT32_MAX || (i > 0 && p[i] == 0))
                return -1;
            *v = (uint32_t)x;
            return i + 1;
        }
    }
    return -1;
}

static size_t put_header_ranged(unsigned char *dst, const frae_stream *s);

size_t frae_stream_header_bytes(const frae_stream *s)
{
    unsigned char scratch[FRAE_STREAM_HEADER_V3_MAX];
    return frae_stream_ranged(s) ? put_header_ranged(scratch, s)
                                 : FRAE_STREAM_HEADER;
}

/* Version 4: the CRC-16 of a packet's bytes (n of them) of stream s: the
 * header's bytes (as put_header_ranged writes them: the parsed ones, since
 * each field has one form), the packet's, then its index as a u32 */
static uint16_t packet_crc_before_index(const frae_stream *s,
                                        const unsigned char *packet, size_t n)
{
    unsigned char head[FRAE_STREAM_HEADER_V3_MAX];
    return frae_crc16_update(frae_crc16(head, put_header_ranged(head, s)), packet,
                        n);
}

static uint16_t packet_crc_index(uint16_t before, uint32_t index)
{
    unsigned char k[4];
    for (int i = 0; i < 4; i++)
        k[i] = (unsigned char)(index >> 8 * i);
    return frae_crc16_update(before, k, 4);
}

uint16_t frae_packet_crc(const frae_stream *s, const unsigned char *packet,
                         size_t n, uint32_t index)
{
    return packet_crc_index(packet_crc_before_index(s, packet, n), index);
}

/* Packets of a version-3 or -4 stream: ceil(frames / packet_frames) per
 * sequence (0 on overflow, which parse refuses). */
uint64_t frae_stream_packets(const frae_stream *s)
{
    if (!s->packet_frames)
        return 0;
    uint64_t per = ((uint64_t)s->frames + s->packet_frames - 1) /
                   s->packet_frames;
    return per * s->sequences;
}

/* The most a packet of packet_frames frames can take: every symbol costs
 * at most 15 bits (no frequency is below 1 in 2^15), the coder's flush 5
 * bytes, and the packet's (index,) length and CRC. */
size_t frae_stream_packet_cap(const frae_stream *s)
{
    uint64_t symbols = (uint64_t)s->latent_dim +
                       (s->flags & FRAE_STREAM_PITCH ? 2 : 0) +
                       (s->flags & FRAE_STREAM_DTX ? 1 : 0);
    uint64_t bytes = ((uint64_t)s->packet_frames * symbols *
                      FRAE_RANGE_TOTAL_BITS + 7) / 8 + 6;
    return (size_t)(bytes + FRAE_PACKET_OVERHEAD);
}

size_t frae_stream_packet_seal(const frae_stream *s, unsigned char *packet,
                               uint32_t index, size_t payload_bytes)
{
    const int v3 = s->version == FRAE_STREAM_VERSION_RANGED_V3;
    unsigned char length[3];
    const size_t lb = frae_varint_put(length, (uint32_t)payload_bytes);
    const size_t head = (size_t)v3 + lb;
    /* the payload moves left to follow the length (head <= 4) */
    memmove(packet + head, packet + FRAE_PACKET_PAYLOAD, payload_bytes);
    if (v3)
        packet[0] = (unsigned char)(index & 0xff);
    memcpy(packet + v3, length, lb);
    const size_t n = head + payload_bytes;
    const uint16_t crc =
        v3 ? frae_crc16(packet, n) : frae_packet_crc(s, packet, n, index);
    packet[n] = (unsigned char)(crc & 0xff);
    packet[n + 1] = (unsigned char)(crc >> 8);
    return n + 2;
}

/* A version-4 packet that fails its CRC as packet index: the index within
 * 256 either side it passes as (a lost or reordered packet), or -1 (a
 * damaged one, or a damaged header).  A damaged packet passes as another
 * index by chance 1 in 128; either way the stream is refused. */
static long packet_found_as(const frae_stream *s, const unsigned char *p,
                            size_t body, uint32_t index, uint16_t crc)
{
    const uint16_t before = packet_crc_before_index(s, p, body);
    for (uint32_t d = 1; d <= 256; d++)
        for (int side = 0; side < 2; side++) {
            if (side ? index < d : index + d < index)
                continue;
            const uint32_t k = side ? index - d : index + d;
            if (packet_crc_index(before, k) == crc)
                return (long)k;
        }
    return -1;
}

long frae_stream_packet_parse(const frae_stream *s, const unsigned char *p,
                              size_t avail, uint32_t index,
                              const unsigned char **payload, size_t *len,
                              char *err, size_t errlen)
{
    const int v3 = s->version == FRAE_STREAM_VERSION_RANGED_V3;
    const size_t least = FRAE_PACKET_MIN + (size_t)v3;
    if (avail < least)
        return frae_errorf(err, errlen,
                           "packet %u: truncated (%zu bytes left, a packet "
                           "takes at least %zu)",
                           index, avail, least);
    uint32_t n = 0;
    const int lb = frae_varint_get(p + v3, avail - (size_t)v3, &n);
    if (lb == 0)
        return frae_errorf(err, errlen,
                           "packet %u: truncated (its length runs past the "
                           "stream's end)",
                           index);
    if (lb < 0 || n > 0xffff)
        return frae_errorf(err, errlen,
                           "packet %u: corrupted (a malformed length)", index);
    const size_t head = (size_t)v3 + (size_t)lb;
    if (avail < head + 2 || n > avail - head - 2)
        return frae_errorf(err, errlen,
                           "packet %u: truncated (it declares %u bytes, "
                           "%zu are left)",
                           index, n, avail < head + 2 ? 0 : avail - head - 2);
    const size_t body = head + n;
    const uint16_t crc = (uint16_t)(p[body] | p[body + 1] << 8);
    if (v3) {
        if (frae_crc16(p, body) != crc)
            return frae_errorf(err, errlen, "packet %u: corrupted (CRC-16 "
                                            "mismatch)", index);
        if (p[0] != (index & 0xff))
            return frae_errorf(err, errlen,
                               "packet %u is missing: found packet %u (mod "
                               "256) in its place",
                               index, p[0]);
    } else if (frae_packet_crc(s, p, body, index) != crc) {
        const long found = packet_found_as(s, p, body, index, crc);
        if (found >= 0)
            return frae_errorf(err, errlen,
                               "packet %u is missing: found packet %ld in "
                               "its place",
                               index, found);
        return frae_errorf(err, errlen,
                           "packet %u: corrupted (CRC-16 mismatch%s)", index,
                           index == 0 ? ": the packet or the header" : "");
    }
    *payload = p + head;
    *len = n;
    return (long)(body + 2);
}

void frae_stream_header(const frae_net *m, uint32_t sequences,
                        uint32_t frames, int flags, frae_stream *s)
{
    memset(s, 0, sizeof *s);
    s->version = m->cfg.prior_hidden > 0 ? FRAE_STREAM_VERSION_RANGED
                                         : FRAE_STREAM_VERSION;
    s->flags = (uint8_t)((flags & 1) | (m->cfg.pitch ? FRAE_STREAM_PITCH : 0) |
                         (m->cfg.prior_hidden > 0 ? flags & FRAE_STREAM_DTX : 0));
    if (m->cfg.prior_hidden > 0) /* a payload must fit 65535 bytes */
        for (s->packet_frames = FRAE_PACKET_FRAMES;
             s->packet_frames > 1 &&
             frae_stream_packet_cap(s) - FRAE_PACKET_OVERHEAD > 0xffff;)
            s->packet_frames /= 2;
    s->model_hash = frae_model_hash(m);
    s->sequences = sequences;
    s->frames = frames;
    s->frame_dim = (uint32_t)m->cfg.frame_dim;
    s->latent_dim = (uint32_t)m->cfg.latent_dim;
    s->code_bits = (uint8_t)frae_code_bits(m);
    s->quantizer = (uint8_t)m->cfg.quantizer;
    s->levels = (uint16_t)(m->cfg.quantizer == FRAE_QUANT_UNIFORM
                               ? m->cfg.quant_levels
                               : 0);
}

/* version 4's header, or version 3's */
static size_t put_header_ranged(unsigned char *dst, const frae_stream *s)
{
    memcpy(dst, "FRAEBS", 6);
    dst[6] = s->version;
    dst[7] = s->flags;
    for (int i = 0; i < 8; i++)
        dst[8 + i] = (unsigned char)(s->model_hash >> 8 * i);
    size_t n = 16;
    n += frae_varint_put(dst + n, s->sequences);
    n += frae_varint_put(dst + n, s->frames);
    if (s->version != FRAE_STREAM_VERSION_RANGED_V3)
        return n + frae_varint_put(dst + n, s->packet_frames);
    n += frae_varint_put(dst + n, s->frame_dim);
    n += frae_varint_put(dst + n, s->latent_dim);
    dst[n++] = s->code_bits;
    dst[n++] = s->quantizer;
    n += frae_varint_put(dst + n, s->levels);
    n += frae_varint_put(dst + n, s->packet_frames);
    wr32(dst + n, frae_crc32(dst, n));
    return n + 4;
}

static size_t put_header(unsigned char *dst, const frae_stream *s)
{
    if (frae_stream_ranged(s))
        return put_header_ranged(dst, s);
    memcpy(dst, "FRAEBS", 6);
    dst[6] = s->version;
    dst[7] = s->flags;
    for (int i = 0; i < 8; i++)
        dst[8 + i] = (unsigned char)(s->model_hash >> 8 * i);
    wr32(dst + 16, s->sequences);
    wr32(dst + 20, s->frames);
    wr32(dst + 24, s->frame_dim);
    wr32(dst + 28, s->latent_dim);
    dst[32] = s->code_bits;
    dst[33] = s->quantizer;
    dst[34] = (unsigned char)(s->levels & 0xff);
    dst[35] = (unsigned char)(s->levels >> 8);
    return FRAE_STREAM_HEADER;
}

/* Version 4's or 3's header from p: its bytes, or -1 and one line in err.
 * Version 4's has no check of its own: each packet's CRC covers it. */
static long parse_header_ranged(const unsigned char *p, size_t size,
                                frae_stream *s, char *err, size_t errlen)
{
    const int v3 = s->version == FRAE_STREAM_VERSION_RANGED_V3;
    /* version 3: sequences, frames, D, L, then levels and P; 4: sequences,
     * frames, P */
    uint32_t v[6];
    const int nv = v3 ? 6 : 3;
    size_t at = 16;
    for (int k = 0; k < nv; k++) {
        int used = at < size ? frae_varint_get(p + at, size - at, &v[k]) : 0;
        if (used < 0)
            return frae_errorf(err, errlen,
                               "corrupted: a malformed size in the version-%d "
                               "header (byte %zu)",
                               s->version, at);
        if (used == 0 || (v3 && k == 3 && size - at - (size_t)used < 2))
            return frae_errorf(err, errlen,
                               "truncated: %zu bytes, shorter than a "
                               "version-%d header",
                               size, s->version);
        at += (size_t)used;
        if (v3 && k == 3) { /* code bits and quantizer, one byte each */
            s->code_bits = p[at];
            s->quantizer = p[at + 1];
            at += 2;
        }
    }
    s->sequences = v[0], s->frames = v[1];
    const uint32_t packet_frames = v[nv - 1];
    if (v3) {
        if (size - at < 4)
            return frae_errorf(err, errlen,
                               "truncated: %zu bytes, shorter than a "
                               "version-3 header",
                               size);
        if (frae_crc32(p, at) != rd32(p + at))
            return frae_errorf(err, errlen,
                               "corrupted: the header's CRC-32 does not "
                               "match (%zu bytes)",
                               size);
        s->frame_dim = v[2], s->latent_dim = v[3];
        if (v[4] > 0xffff)
            return frae_errorf(err, errlen, "bitstream header: %u levels",
                               v[4]);
        s->levels = (uint16_t)v[4];
        at += 4;
    }
    if (packet_frames < 1 || packet_frames > FRAE_PACKET_MAX_FRAMES)
        return frae_errorf(err, errlen,
                           "bitstream header: %u frames per packet (1..%d)",
                           packet_frames, FRAE_PACKET_MAX_FRAMES);
    s->packet_frames = packet_frames;
    return (long)at;
}

size_t frae_stream_writer_begin(frae_stream_writer *w, const frae_stream *s,
                                unsigned char *out)
{
    memset(w, 0, sizeof *w);
    w->s = *s;
    size_t n = put_header(out, s);
    w->crc = frae_crc32_update(0, out, n);
    return n;
}

size_t frae_stream_writer_add(frae_stream_writer *w, const unsigned char *code,
                              unsigned char *out)
{
    /* frames arrive byte-aligned; the stream packs them bit-tight: whole
     * bytes go out, the last partial one waits for the next frame */
    const size_t bits = (size_t)frame_bits(&w->s);
    size_t done = 0;
    for (size_t k = 0; k < bits; k++) {
        w->carry |= (unsigned char)(get_bits(code, k, 1) << w->carry_bits);
        if (++w->carry_bits == 8) {
            out[done++] = w->carry;
            w->carry = 0, w->carry_bits = 0;
        }
    }
    w->crc = frae_crc32_update(w->crc, out, done);
    return done;
}

size_t frae_stream_writer_end(frae_stream_writer *w, unsigned char *out)
{
    size_t n = 0;
    if (w->carry_bits) /* zero bits up to the byte boundary */
        out[n++] = w->carry;
    w->crc = frae_crc32_update(w->crc, out, n);
    wr32(out + n, w->crc);
    return n + 4;
}

void frae_stream_write(unsigned char *dst, const frae_stream *s,
                       const unsigned char *frame_codes)
{
    frae_stream_writer w;
    const size_t per_frame = (size_t)(frame_bits(s) + 7) / 8;
    const uint64_t n_frames = (uint64_t)s->sequences * s->frames;
    unsigned char *p = dst + frae_stream_writer_begin(&w, s, dst);
    for (uint64_t f = 0; f < n_frames; f++)
        p += frae_stream_writer_add(&w, frame_codes + f * per_frame, p);
    frae_stream_writer_end(&w, p);
}

int frae_stream_parse(const void *buf, size_t size, frae_stream *s,
                      char *err, size_t errlen)
{
    const unsigned char *p = buf;
    memset(s, 0, sizeof *s);
    if (size < 8 || memcmp(p, "FRAEBS", 6)) {
        frae_errorf(err, errlen, "not a frae bitstream (bad magic or %zu bytes)",
                 size);
        return -1;
    }
    s->version = p[6];
    s->flags = p[7];
    if (s->version == 1) {
        frae_errorf(err, errlen,
                 "bitstream version 1, from frae 0.1, whose decoder summed "
                 "in another order; this frae reads version %d: re-encode "
                 "the input",
                 FRAE_STREAM_VERSION);
        return -1;
    }
    if (s->version != FRAE_STREAM_VERSION && !frae_stream_ranged(s)) {
        frae_errorf(err, errlen,
                 "bitstream version %d; this frae reads versions %d, %d and %d",
                 s->version, FRAE_STREAM_VERSION, FRAE_STREAM_VERSION_RANGED_V3,
                 FRAE_STREAM_VERSION_RANGED);
        return -1;
    }
    const int ranged = frae_stream_ranged(s);
    const int v4 = s->version == FRAE_STREAM_VERSION_RANGED;
    if (size < (ranged ? 16 : FRAE_STREAM_HEADER + 4)) {
        frae_errorf(err, errlen,
                    "truncated: %zu bytes, shorter than a version-%d header",
                    size, s->version);
        return -1;
    }
    for (int i = 7; i >= 0; i--)
        s->model_hash = s->model_hash << 8 | p[8 + i];
    long head = FRAE_STREAM_HEADER, first = 0; /* version 4: packet 0's bytes */
    if (ranged) {
        head = parse_header_ranged(p, size, s, err, errlen);
        if (head < 0)
            return -1;
        /* version 4: the first packet's CRC checks the header, before any
         * of its fields is believed */
        const unsigned char *pl;
        size_t n;
        if (v4 && (first = frae_stream_packet_parse(s, p + head,
                                                    size - (size_t)head, 0, &pl,
                                                    &n, err, errlen)) < 0)
            return -1;
    } else {
        s->sequences = rd32(p + 16);
        s->frames = rd32(p + 20);
        s->frame_dim = rd32(p + 24);
        s->latent_dim = rd32(p + 28);
        s->code_bits = p[32];
        s->quantizer = p[33];
        s->levels = (uint16_t)(p[34] | p[35] << 8);
    }
    if (s->flags & ~(1 | FRAE_STREAM_PITCH | (ranged ? FRAE_STREAM_DTX : 0))) {
        frae_errorf(err, errlen, "bitstream flags 0x%02x: unknown bits set",
                    s->flags);
        return -1;
    }
    if (!s->sequences || !s->frames ||
        (!v4 && /* version 4 leaves the code's format to the model */
         (!s->frame_dim || !s->latent_dim || s->frame_dim > (1u << 24) ||
          s->latent_dim > (1u << 24) ||
          !(s->code_bits == 32 || (s->code_bits >= 1 && s->code_bits <= 16)) ||
          s->quantizer > FRAE_QUANT_UNIFORM || !payload_bits(s) ||
          (ranged && (s->quantizer == FRAE_QUANT_NONE ||
                      (s->quantizer == FRAE_QUANT_UNIFORM &&
                       (s->levels < 2 || s->levels > 4096))))))) {
        frae_errorf(err, errlen, "bitstream header has impossible sizes");
        return -1;
    }
    if (ranged) {
        /* The frames a stream may declare, bounded by its bytes before
         * anything is walked or allocated: a packet takes at least
         * FRAE_PACKET_MIN bytes (version 3: one more) and holds at most
         * packet_frames <= FRAE_PACKET_MAX_FRAMES frames, so B bytes after
         * the header hold at most B / 3 packets and 1000 B / 3 frames.
         * The bound is the packets', not the bits': a frame can cost
         * almost nothing inside a packet (with DTX a silent frame's flag
         * well under 0.1 bits; without, a code the prior is sure of
         * 4.4e-5 bits, its frequency 2^15 - 1 of 2^15), and the coder's
         * flush drops trailing zero bytes, so an encoder can write a
         * packet of 1000 frames with an empty payload: 3 bytes. */
        const uint64_t packets = frae_stream_packets(s);
        const size_t rest = size - (size_t)head;
        const size_t least = FRAE_PACKET_MIN + (size_t)!v4;
        if (packets > rest / least) {
            frae_errorf(err, errlen,
                        "truncated: %u x %u frames declared, in %llu packets "
                        "of up to %u frames; %zu bytes hold at most %zu "
                        "packets (%zu bytes each at least)",
                        s->sequences, s->frames, (unsigned long long)packets,
                        s->packet_frames, rest, rest / least, least);
            return -1;
        }
        size_t at = (size_t)(head + first); /* after the packets checked */
        for (uint64_t k = first > 0; k < packets; k++) {
            const unsigned char *pl;
            size_t n;
            long used = frae_stream_packet_parse(s, p + at, size - at,
                                                 (uint32_t)k, &pl, &n, err,
                                                 errlen);
            if (used < 0)
                return -1;
            at += (size_t)used;
        }
        if (at != size) {
            frae_errorf(err, errlen,
                        "trailing bytes: %zu after the last packet",
                        size - at);
            return -1;
        }
        s->size = size;
        s->payload = p + head;
        return 0;
    }
    /* version 2: every frame costs its L x b (+ pitch) bits, so the size
     * is exact, and a stream declares as many frames as its bytes hold */
    size_t want = frae_stream_bytes(s);
    if (size != want) {
        frae_errorf(err, errlen,
                 "%s: the header describes %zu bytes, the stream has %zu",
                 size < want ? "truncated" : "trailing bytes", want, size);
        return -1;
    }
    if (frae_crc32(p, size - 4) != rd32(p + size - 4)) {
        frae_errorf(err, errlen, "corrupted: CRC-32 mismatch");
        return -1;
    }
    s->payload = p + FRAE_STREAM_HEADER;
    s->size = size;
    return 0;
}

int frae_stream_check_model(const frae_stream *s, const frae_net *m,
                            char *err, size_t errlen)
{
    frae_stream want;
    frae_stream_header(m, 1, 1, 0, &want);
    if (s->version != FRAE_STREAM_VERSION_RANGED && /* 4 states no shape */
        (s->frame_dim != want.frame_dim || s->latent_dim != want.latent_dim ||
         s->code_bits != want.code_bits || s->quantizer != want.quantizer ||
         s->levels != want.levels)) {
        frae_errorf(err, errlen,
                 "stream has D %u, L %u, %u-bit codes; the model has D %u, L "
                 "%u, %u-bit codes",
                 s->frame_dim, s->latent_dim, s->code_bits, want.frame_dim,
                 want.latent_dim, want.code_bits);
        return -1;
    }
    if (frae_stream_ranged(s) != frae_stream_ranged(&want)) {
        if (frae_stream_ranged(s))
            frae_errorf(err, errlen,
                        "stream is entropy-coded (version %d); the model has "
                        "no prior to decode it",
                        s->version);
        else
            frae_errorf(err, errlen,
                        "stream is fixed-rate (version 2); the model has a "
                        "prior and codes version %d",
                        FRAE_STREAM_VERSION_RANGED);
        return -1;
    }
    if ((s->flags & FRAE_STREAM_PITCH) != (want.flags & FRAE_STREAM_PITCH)) {
        frae_errorf(err, errlen,
                    s->flags & FRAE_STREAM_PITCH
                        ? "stream carries pitch; the model codes the "
                          "envelope alone"
                        : "stream carries no pitch; the model codes pitch too");
        return -1;
    }
    if (s->model_hash != want.model_hash) {
        frae_errorf(err, errlen,
                 "stream was encoded with another model (hash %016llx, this "
                 "model %016llx)",
                 (unsigned long long)s->model_hash,
                 (unsigned long long)want.model_hash);
        return -1;
    }
    return 0;
}

void frae_stream_frame_code(const frae_stream *s, uint64_t frame,
                            unsigned char *code)
{
    const size_t bits = (size_t)frame_bits(s);
    size_t pos = (size_t)(frame * bits);
    memset(code, 0, (bits + 7) / 8);
    for (size_t k = 0; k < bits; k += 16) {
        int n = bits - k < 16 ? (int)(bits - k) : 16;
        put_bits(code, k, get_bits(s->payload, pos + k, n), n);
    }
}
