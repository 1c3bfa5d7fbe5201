/* The streaming codec: per-frame encoder and decoder states, code packing,
 * frames fixed-rate and entropy-coded, and loss.
 * The pitch coders are pitch_coder.c's, the prior's recalibration
 * recalibrate.c's, the encoder's search and DTX search.c's, the .fbs
 * bitstream container.c's (codec_internal.h).
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
#include <string.h>

#include "codec/codec_internal.h"

/* ---- codes ---------------------------------------------------------------- */

size_t frae_code_bytes(const frae_net *m)
{
    return ((size_t)m->cfg.latent_dim * frae_code_bits(m) +
            (m->cfg.pitch ? FRAE_PITCH_BITS : 0) + 7) /
           8;
}

void frae_code_put_bits(unsigned char *dst, size_t pos, uint32_t v, int bits)
{
    for (int i = 0; i < bits; i++, pos++) {
        unsigned char mask = (unsigned char)(1u << (pos & 7));
        if (v >> i & 1u)
            dst[pos >> 3] |= mask;
        else
            dst[pos >> 3] &= (unsigned char)~mask;
    }
}

uint32_t frae_code_get_bits(const unsigned char *src, size_t pos, int bits)
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
    memset(
        code, 0,
        ((size_t)c->latent_dim * bits + (c->pitch ? FRAE_PITCH_BITS : 0) + 7) /
            8);
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
        frae_code_put_bits(code, (size_t)i * bits, v, bits);
    }
}

/* Code bytes -> q, the same floats the encoder's quantizer produced.
 * Returns -1 for an index beyond the quantizer's levels. */
static int unpack_code(const frae_config *c, int bits,
                       const unsigned char *code, float *q)
{
    for (int i = 0; i < c->latent_dim; i++) {
        uint32_t v = frae_code_get_bits(code, (size_t)i * bits, bits);
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

/* ---- states ------------------------------------------------------------------ */

/* adaptive pitch counts (entropy-coded streams): start, step, halving */
#define PITCH_COUNT_INIT 4
#define SILENCE_COUNT_SAME 62
#define SILENCE_COUNT_OTHER 2

#define HEAD_BYTES ((sizeof(struct frae_codec_state) + 63) & ~(size_t)63)

/* floats of the prior's recalibration: scale [L], shift and weights
 * [L x S] */
static size_t adapt_floats(const frae_config *c)
{
    if (c->prior_hidden <= 0)
        return 0;
    return (size_t)c->latent_dim *
           (1 + 2 * (size_t)frae_codec_prior_symbols(c));
}

/* bytes of a decoder; an encoder's search adds a second stream state and
 * search_floats */
static size_t search_floats(const frae_config *c)
{
    return (size_t)c->latent_dim * (1 + (size_t)frae_codec_prior_symbols(c));
}

static size_t aligned64(size_t n) { return (n + 63) & ~(size_t)63; }

void frae_codec_plan_make(const frae_net *m, frae_codec_plan *p)
{
    const frae_config *c = &m->cfg;
    p->at_st = HEAD_BYTES;
    frae_state_plan_make(c, 1, 1, &p->st);
    p->xnorm = p->at_st + p->st.bytes;
    p->adapt =
        p->xnorm + (c->normalize ? sizeof(float) * (size_t)c->frame_dim : 0);
    /* a multiple of 64, as aligned_alloc wants */
    p->decoder = aligned64(p->adapt + sizeof(float) * adapt_floats(c));
    p->search = p->decoder + p->st.bytes;
    p->encoder = p->search + aligned64(sizeof(float) * search_floats(c));
}

size_t frae_decoder_size(const frae_net *m)
{
    frae_codec_plan p;
    frae_codec_plan_make(m, &p);
    return p.decoder;
}

size_t frae_encoder_size(const frae_net *m)
{
    frae_codec_plan p;
    frae_codec_plan_make(m, &p);
    return p.encoder;
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
            s->silence_count[i][k] =
                i == k ? SILENCE_COUNT_SAME : SILENCE_COUNT_OTHER;
    /* the ranged coder starts from counts fitted on speech, the 4-bit
     * quantizer's steps from even ones */
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++)
            s->voicing_count[i][k] =
                c->pitch_ranged ? pitch_voicing_start[i][k] : PITCH_COUNT_INIT;
    for (int i = 0; i < 81; i++)
        for (int k = 0; k < 8; k++)
            s->step_count[i][k] =
                c->pitch_ranged ? pitch_step_start[i][k] : PITCH_COUNT_INIT;
    for (int i = 0; i < PITCH_ENV_CONTEXTS; i++)
        for (int k = 0; k < 2; k++)
            s->env_voicing_count[i][k] = pitch_env_voicing_start[i][k];
    s->prev_tilt = 0.0f;
    s->have_tilt = 0;
    s->last_pitch[0] = s->last_pitch[1] = 0.0f;
    if (s->scale) { /* the prior as trained: scale 1, shift 0 */
        const size_t LS = (size_t)c->latent_dim * frae_codec_prior_symbols(c);
        for (int u = 0; u < c->latent_dim; u++)
            s->scale[u] = 1.0f;
        memset(s->shift, 0, sizeof(float) * LS);
    }
    frae_state_reset(s->model, &s->st);
    s->st.ring_rows = 1; /* the one sequence, from the first frame */
}

struct frae_codec_state *frae_codec_state_init(void *mem, const frae_net *m,
                                               const frae_codec_plan *p,
                                               int encoder)
{
    if (!mem || !m)
        return NULL;
    memset(mem, 0, encoder ? p->encoder : p->decoder);
    struct frae_codec_state *s = mem;
    s->model = m;
    s->st_base = (char *)mem + p->at_st;
    frae_state_carve(&p->st, &s->st, s->st_base);
    s->st_bytes = p->st.bytes;
    if (m->cfg.normalize)
        s->xnorm = (float *)(void *)((char *)mem + p->xnorm);
    if (m->cfg.prior_hidden > 0) {
        const size_t LS =
            (size_t)m->cfg.latent_dim * frae_codec_prior_symbols(&m->cfg);
        s->scale = (float *)(void *)((char *)mem + p->adapt);
        s->shift = s->scale + m->cfg.latent_dim;
        s->weights = s->shift + LS;
    }
    if (encoder) { /* the search's, after a decoder's bytes */
        s->trial_base = (char *)mem + p->decoder;
        frae_state_carve(&p->st, &s->trial, s->trial_base);
        s->raw_logit = (float *)(void *)((char *)mem + p->search);
        s->best_q = s->raw_logit + (size_t)m->cfg.latent_dim *
                                       frae_codec_prior_symbols(&m->cfg);
    }
    s->code_bits = frae_code_bits(m);
    state_reset(s);
    return s;
}

/* An encoder or a decoder in mem, or in a block of its own (mem NULL). */
static struct frae_codec_state *state_new(void *mem, const frae_net *m,
                                          int encoder)
{
    if (!m)
        return NULL;
    frae_codec_plan p;
    frae_codec_plan_make(m, &p);
    if (!mem)
        mem = aligned_alloc(64, encoder ? p.encoder : p.decoder);
    return frae_codec_state_init(mem, m, &p, encoder);
}

frae_encoder *frae_encoder_init(void *mem, const frae_net *m)
{
    return mem ? (frae_encoder *)state_new(mem, m, 1) : NULL;
}

frae_decoder *frae_decoder_init(void *mem, const frae_net *m)
{
    return mem ? (frae_decoder *)state_new(mem, m, 0) : NULL;
}

frae_encoder *frae_encoder_create(const frae_net *m)
{
    return (frae_encoder *)state_new(NULL, m, 1);
}

frae_decoder *frae_decoder_create(const frae_net *m)
{
    return (frae_decoder *)state_new(NULL, m, 0);
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
void frae_codec_decode_and_advance(struct frae_codec_state *s, float *frame)
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

int frae_encoder_set_ahead(frae_encoder *e, const float *frames, int n,
                           size_t stride)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    const int A = s->model->cfg.lookahead;
    if (n < 0 || n > A || (n > 0 && !frames))
        return -1;
    for (int k = 0; k < n; k++)
        frae_ahead_put(s->model, &s->st, 0, k, frames + (size_t)k * stride);
    s->ahead_given = n;
    return 0;
}

/* The encoder's view ahead for the frame about to be coded: the frames the
 * caller gave, the rest held at the last of them (none given: the frame
 * itself, as at a sequence's end), or for a model with look-ahead packets
 * marked as not there; the next frame starts with none. */
static void fill_ahead(struct frae_codec_state *s, const float *frame)
{
    const int A = s->model->cfg.lookahead, D = s->model->cfg.frame_dim;
    for (int k = s->ahead_given; k < A; k++) {
        if (s->model->cfg.lookahead_packet > 0)
            frae_ahead_put(s->model, &s->st, 0, k, NULL);
        else if (k == 0)
            frae_ahead_put(s->model, &s->st, 0, 0, frame);
        else
            memcpy(s->st.ahead + (size_t)k * D,
                   s->st.ahead + (size_t)(k - 1) * D, sizeof(float) * D);
    }
    s->ahead_given = 0;
}

void frae_encode_frame(frae_encoder *e, const float *frame, unsigned char *code,
                       float *recon)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    fp_env env = fp_enter();
    const frae_config *c = &s->model->cfg;
    const float *x = frame;
    if (c->normalize) {
        frae_normalize_rows(s->model, frame, 0, 1, s->xnorm);
        x = s->xnorm;
    }
    if (c->lookahead > 0)
        fill_ahead(s, frame);
    frae_forward_encode(s->model, &s->st, 0, x);
    if (s->search_passes)
        frae_codec_search_codes(s, x, 0);
    pack_code(c, s->code_bits, s->st.q, code);
    float pitch[2];
    if (c->pitch)
        frae_code_put_bits(
            code, (size_t)c->latent_dim * s->code_bits,
            frae_pitch_encode(&s->pitch_pred, frame + c->frame_dim, pitch),
            FRAE_PITCH_BITS);
    /* closed loop: run the decoder too, so the buffer holds exactly what
     * the far end will have */
    frae_codec_decode_and_advance(s, recon);
    if (c->pitch && recon)
        memcpy(recon + c->frame_dim, pitch, sizeof pitch);
    fp_leave(env);
}

int frae_decode_frame(frae_decoder *d, const unsigned char *code, float *frame)
{
    struct frae_codec_state *s = (struct frae_codec_state *)d;
    const frae_config *c = &s->model->cfg;
    if (unpack_code(c, s->code_bits, code, s->st.q))
        return -1;
    float pitch[2], pred = s->pitch_pred;
    if (c->pitch &&
        frae_pitch_decode(
            &pred,
            frae_code_get_bits(code, (size_t)c->latent_dim * s->code_bits,
                               FRAE_PITCH_BITS),
            pitch))
        return -1;
    s->pitch_pred = pred;
    fp_env env = fp_enter();
    frae_codec_decode_and_advance(s, frame);
    fp_leave(env);
    s->prev_silent = 0;
    if (c->pitch) {
        memcpy(s->last_pitch, pitch, sizeof pitch);
        if (frame)
            memcpy(frame + c->frame_dim, pitch, sizeof pitch);
    }
    return 0;
}

int frae_encode_silence_ranged(frae_encoder *e, frae_range_enc *rc,
                               float *recon)
{
    struct frae_codec_state *s = (struct frae_codec_state *)e;
    if (!s->dtx)
        return -1;
    s->ahead_given = 0; /* the frames ahead were this frame's */
    fp_env env = fp_enter();
    frae_codec_silence_encode(s, rc, 1);
    frae_codec_silent_frame(s, recon);
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
        frae_codec_silence_encode(s, rc, 0);
    if (c->normalize) {
        frae_normalize_rows(s->model, frame, 0, 1, s->xnorm);
        x = s->xnorm;
    }
    frae_codec_prior_logits(s);
    if (c->lookahead > 0)
        fill_ahead(s, frame);
    frae_forward_encode(s->model, &s->st, 0, x);
    if (s->search_passes)
        frae_codec_search_codes(s, x, 1);
    for (int u = 0; u < c->latent_dim; u++) {
        frae_prior_freqs(c, frae_codec_unit_weights(s, u), u, freq);
        frae_range_encode_symbol(rc, freq, frae_code_symbol(c, s->st.q[u]));
    }
    frae_codec_prior_adapt(s, s->weights);
    /* the envelope first: the pitch may be coded in its context */
    frae_codec_decode_and_advance(s, recon);
    if (c->pitch) {
        float pitch[2];
        uint32_t code =
            frae_pitch_encode(&s->pitch_pred, frame + c->frame_dim, pitch);
        const int voiced = (int)(code & 1u);
        frae_count_encode(rc, frae_pitch_voicing_counts(s), 2, voiced);
        if (voiced)
            frae_count_encode(rc, s->step_count[frae_pitch_step_context(s)], 8,
                              (int)(code >> 1));
        frae_pitch_context_advance(s, voiced, (int)(code >> 1));
        if (recon)
            memcpy(recon + c->frame_dim, pitch, sizeof pitch);
    }
    fp_leave(env);
}

int frae_decode_frame_ranged(frae_decoder *d, frae_range_dec *rc, float *frame)
{
    struct frae_codec_state *s = (struct frae_codec_state *)d;
    fp_env env = fp_enter();
    const frae_config *c = &s->model->cfg;
    uint32_t freq[4096];
    if (s->dtx && frae_codec_silence_decode(s, rc)) {
        frae_codec_silent_frame(s, frame);
        fp_leave(env);
        return frae_range_dec_status(rc);
    }
    frae_codec_prior_logits(s);
    const int n = c->quantizer == FRAE_QUANT_BINARY ? 2 : c->quant_levels;
    const float top = (float)(c->quant_levels - 1);
    for (int u = 0; u < c->latent_dim; u++) {
        frae_prior_freqs(c, frae_codec_unit_weights(s, u), u, freq);
        int sym = frae_range_decode_symbol(rc, freq, n);
        s->st.q[u] = c->quantizer == FRAE_QUANT_BINARY
                         ? (sym ? 1.0f : -1.0f)
                         : (float)sym * (2.0f / top) - 1.0f;
    }
    frae_codec_prior_adapt(s, s->weights);
    frae_codec_decode_and_advance(s, frame); /* the envelope, then the pitch */
    if (c->pitch) {
        float pitch[2] = {0.0f, 0.0f};
        const int voiced =
            frae_count_decode(rc, frae_pitch_voicing_counts(s), 2);
        uint32_t code = (uint32_t)voiced;
        if (voiced)
            code |= (uint32_t)frae_count_decode(
                        rc, s->step_count[frae_pitch_step_context(s)], 8)
                    << 1;
        frae_pitch_context_advance(s, voiced, (int)(code >> 1));
        frae_pitch_decode(&s->pitch_pred, code,
                          pitch); /* always a valid code */
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
#define CONCEAL_DECAY FRAE_CONCEAL_DECAY /* erasure training's too */

void frae_decoder_conceal(frae_decoder *d, float *frame)
{
    struct frae_codec_state *s = (struct frae_codec_state *)d;
    const frae_config *c = &s->model->cfg;
    fp_env env = fp_enter();
    if (s->prev_silent) {
        frae_codec_silent_frame(s, frame);
    } else {
        for (int u = 0; u < c->latent_dim; u++)
            s->st.q[u] *= CONCEAL_DECAY;
        frae_codec_decode_and_advance(
            s, frame); /* st.q: the last latent, decayed */
    }
    fp_leave(env);
    if (c->pitch && frame)
        memcpy(frame + c->frame_dim, s->last_pitch, sizeof s->last_pitch);
}

/* log2 f0 on 2^FRAE_PITCH_ANCHOR_BITS levels over 50..600 Hz: 0.028
 * octave apart */
static float anchor_value(uint32_t code)
{
    return PITCH_LO +
           (float)code * ((PITCH_HI - PITCH_LO) /
                          (float)((1u << FRAE_PITCH_ANCHOR_BITS) - 1u));
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
