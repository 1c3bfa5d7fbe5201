/* Inside the codec (src/codec): the state every frame codec keeps, and
 * what its files share.  codec.c: states, codes, the model's identity,
 * frames fixed-rate and entropy-coded, the prior's recalibration, loss;
 * recalibrate.c: the prior's recalibration and its frequencies;
 * pitch_coder.c: the pitch quantizer and its entropy-coding contexts;
 * search.c: the encoder's search and discontinuous transmission;
 * container.c: the .fbs bitstream. */
#ifndef FRAE_CODEC_INTERNAL_H
#define FRAE_CODEC_INTERNAL_H

#include <stdint.h>

#include "codec/container.h"
#include "codec/entropy.h"
#include "codec/pitch_counts.h"
#include "core/frae_internal.h"

#define PITCH_COUNT_LIMIT 4096
#define PITCH_COUNT_STEP 32
#define PITCH_START 7.22881869f /* log2 150 Hz */
#define PITCH_LO 5.64385619f    /* log2 50 Hz */
#define PITCH_HI 9.22881869f    /* log2 600 Hz */

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
    /* a look-ahead model's encoder: how many of the frames ahead the
     * caller gave for the next frame (frae_encoder_set_ahead) */
    int ahead_given;
};

/* Where a frame codec's pieces lie in its block, from one plan made once
 * (codec.c): the head (struct frae_codec_state), the stream state st
 * (at_st), xnorm [D] (cfg.normalize), the prior's recalibration (a model
 * with a prior: scale, shift, weights); a decoder ends there, a multiple
 * of 64 bytes.  An encoder's search follows: the trial state (at
 * decoder, st.bytes), raw_logit [L x S] and best_q [L] (at search). */
typedef struct {
    frae_state_plan st;
    size_t at_st, xnorm, adapt, decoder, search, encoder; /* bytes */
} frae_codec_plan;

/* The plan of m's frame codec states. */
void frae_codec_plan_make(const frae_net *m, frae_codec_plan *p);
/* An encoder (encoder 1) or a decoder in mem, p->encoder or p->decoder
 * bytes 64-byte aligned, from m's plan p; reset. */
struct frae_codec_state *frae_codec_state_init(void *mem, const frae_net *m,
                                               const frae_codec_plan *p,
                                               int encoder);

uint32_t frae_pitch_encode(float *pred, const float *in, float *out);
int frae_pitch_decode(float *pred, uint32_t code, float *out);
/* n decoded frames (width floats each, f0 and voicing at dim, dim + 1):
 * each onset's climb at the step limit given the pitch it reaches
 * (pitch_coder.c); *voiced_before: the frame before frames[0] was voiced
 * (0 at a sequence's start), updated to the last one. */
void frae_pitch_backfill(float *frames, long n, int width, int dim,
                         int *voiced_before);
int frae_pitch_step_context(const struct frae_codec_state *s);
int frae_pitch_env_context(struct frae_codec_state *s);
void frae_pitch_context_advance(struct frae_codec_state *s, int voiced,
                                int step);
uint32_t *frae_pitch_voicing_counts(struct frae_codec_state *s);
void frae_count_encode(frae_range_enc *rc, uint32_t *count, int n, int symbol);
int frae_count_decode(frae_range_dec *rc, uint32_t *count, int n);
int frae_code_symbol(const frae_config *c, float q);
void frae_codec_prior_logits(struct frae_codec_state *s);
const float *frae_codec_unit_weights(struct frae_codec_state *s, int u);
void frae_codec_prior_adapt(struct frae_codec_state *s, const float *weights);
int frae_codec_prior_symbols(const frae_config *c);
void frae_codec_search_codes(struct frae_codec_state *s, const float *x,
                             int ranged);
void frae_codec_decode_and_advance(struct frae_codec_state *s, float *frame);
void frae_codec_silence_encode(struct frae_codec_state *s, frae_range_enc *rc,
                               int silent);
int frae_codec_silence_decode(struct frae_codec_state *s, frae_range_dec *rc);
void frae_codec_silent_frame(const struct frae_codec_state *s, float *frame);
void frae_code_put_bits(unsigned char *dst, size_t pos, uint32_t v, int bits);
uint32_t frae_code_get_bits(const unsigned char *src, size_t pos, int bits);

/* NULL if m can code a stream with o, else why not (one line): the check
 * frae_stream_encoder_create and the codec option table make. */
const char *frae_stream_options_check(const frae_net *m,
                                      const frae_stream_options *o);

/* ---- frames range-coded, and discontinuous transmission ---------------- */
/* A model with a prior (frae_config.prior_hidden): one frame through the
 * encoder, its codes range-coded into rc with the prior's frequencies
 * (computed from the state before the frame, alike at both ends; with
 * cfg.prior_ar unit by unit, each also from the frame's codes before it,
 * recalibrated to the stream as it goes: docs/codec.md), then its
 * pitch code (cfg.pitch) with adaptive frequencies: the voicing bit in the
 * context of the last frame's, a voiced frame's step in one context.  The
 * decoder reads them back; it returns 0, or -1 once rc has met bytes no
 * encoder writes (frae_range_dec_status), the frame then being whatever
 * the symbols decoded to.  Exact: decoding reproduces frae_forward. */
void frae_encode_frame_ranged(frae_encoder *e, const float *frame,
                              frae_range_enc *rc, float *recon);
int frae_decode_frame_ranged(frae_decoder *d, frae_range_dec *rc, float *frame);

/* Discontinuous transmission (DTX), for a model with a prior: off after
 * init.  With it on, every frame starts with a silence flag (range-coded
 * with adaptive counts in the context of the last frame's), and the
 * caller, who knows what silence is for its frames (frae encode --dtx: a
 * level gate), may code a frame as silent with
 * frae_encode_silence_ranged instead of frae_encode_frame_ranged.  A
 * silent frame codes nothing else and changes nothing at either end (the
 * network's state, the prior's recalibration, the pitch coder); the
 * decoder gives the last frame it decoded again (f0 and voicing 0; before
 * a sequence's first coded frame, the model's zero frame, denormalized),
 * and recon is that frame.  Encoder and decoder must agree (a version-3
 * stream says so: FRAE_STREAM_DTX).  Coded frames decode to the bit as
 * without DTX, but a silent frame is not the network's output, so
 * decode(encode(x)) == frae_forward only while no frame is silent.
 * set_dtx returns 0, or -1 for a model without a prior;
 * frae_encode_silence_ranged 0, or -1 (nothing coded) with DTX off. */
int frae_encoder_set_dtx(frae_encoder *e, int on);
int frae_decoder_set_dtx(frae_decoder *d, int on);
int frae_encode_silence_ranged(frae_encoder *e, frae_range_enc *rc,
                               float *recon);

#endif
