/* The stream state: what a stream of frames carries from one frame to the
 * next, for S sequences side by side.  A model holds one for its batch (in
 * its arena, with a window of activations when it trains); each codec
 * encoder or decoder holds one for a single sequence, next to a const
 * pointer to the model, as rnnoise's DenoiseState does.  The forward pass
 * (forward.c) takes a model, read only, and a state. */
#ifndef FRAE_STATE_H
#define FRAE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "frae.h"

#define FRAE_MAX_LAYERS (2 * FRAE_MAX_HIDDEN + 2)
/* + two GRUs' recurrent matrices, + the prior's two */
#define FRAE_MAX_MATS (FRAE_MAX_LAYERS + 5) /* + 2 GRU recurrent, + 3 prior */

/* Scratch of the one-row products (gemm.c), and how many threads the
 * products of this state may use. */
typedef struct {
    int *idx;               /* nonzero positions of a one-row product's input */
    float *val;             /* ... and their values; both [widest layer side +
                     FRAE_COMPACT_SLACK] */
    int threads;            /* 1 for a one-frame stream: never worth a fork */
    struct frae_pool *pool; /* the model's threads (pool.h); NULL: alone */
} frae_scratch;

typedef struct {
    int rows;      /* S: sequences it holds */
    int frame_dim; /* D */
    int frames;    /* frames of activations kept: a window (training), or 1 */
    /* outputs after activation of every layer but the output one,
     * [frames][rows][out]; frame t in slot t % frames */
    float *a[FRAE_MAX_LAYERS];
    float *q; /* quantized latent, [frames][rows][L] */

    /* Feedback ring: ring_cap = K + frames frames of ring_rows x D.  The
     * frame written at window position t lives at (ring_pos + t) %
     * ring_cap; buffer slot j (0 = newest) at window position t is the
     * frame at (ring_pos + t - 1 - j).  Nothing is ever shifted. */
    float *ring;
    int ring_cap;
    int ring_pos;
    int ring_rows; /* sequences in flight since the last reset, 0 = none */

    /* First layers' sums ahead (forward.c): for the encoder's (0) and the
     * decoder's (1) first layer, pend_cap slots of [rows][out], frame j's
     * sum in slot j % pend_cap; pend_next: the frame (counted from the
     * reset) each computes next.  NULL when K = 0. */
    float *pend[2];
    int pend_cap;
    long pend_next[2];
    float *pair_in; /* two fed-back frames side by side, [2][rows][D] */
    /* cfg.lookahead: the encoder's view of the frame's next A input
     * frames, rows la_rs apart: the state's own ahead [rows][A*D (+ A
     * flags: frae_ahead_width)] (a
     * codec's and inference fill it frame by frame), or training's window
     * of them; NULL without look-ahead */
    float *ahead;
    const float *la;
    ptrdiff_t la_rs;

    /* GRU family, per side (0 encoder, 1 decoder; NULL otherwise): */
    float *h[2];  /* h(t-1), what the next frame reads: h0 after a reset
                        or at a training window's start, else the last
                        frame's activation slot (nothing is copied) */
    float *h0[2]; /* [rows][H]: zeros after a reset, the state a training
                        window starts from */
    float *gx[2], *gh[2]; /* the frame's two products, [rows][3H] */
    float *gates[2]; /* r, z, n, gh_n of every kept frame, [frames][rows][4H] */

    /* The prior (cfg.prior_hidden), per kept frame: its input, the
     * decoder's state before the frame ([frames][rows][C], see
     * frae_prior_context), its tanh layer [frames][rows][P] and its
     * logits [frames][rows][L x symbols]; NULL without a prior */
    float *prior_ctx, *prior_hid, *prior_logit;

    frae_scratch scratch;
} frae_state;

/* Where a state's pieces lie: one plan of offsets, made once and read by
 * whatever sizes the state and whatever carves it (as model.c plans the
 * model's arena).  A piece's index in off[]: */
enum {
    FRAE_SP_A = 0, /* a[l], FRAE_MAX_LAYERS of them */
    FRAE_SP_H0 = FRAE_SP_A + FRAE_MAX_LAYERS, /* h0[side], 2 of each */
    FRAE_SP_GX = FRAE_SP_H0 + 2,
    FRAE_SP_GH = FRAE_SP_GX + 2,
    FRAE_SP_GATES = FRAE_SP_GH + 2,
    FRAE_SP_PEND = FRAE_SP_GATES + 2,
    FRAE_SP_PAIR_IN = FRAE_SP_PEND + 2,
    FRAE_SP_AHEAD,
    FRAE_SP_Q,
    FRAE_SP_PRIOR_CTX,
    FRAE_SP_PRIOR_HID,
    FRAE_SP_PRIOR_LOGIT,
    FRAE_SP_RING,
    FRAE_SP_IDX,
    FRAE_SP_VAL,
    FRAE_SP_COUNT
};
#define FRAE_STATE_NONE SIZE_MAX /* off[] of a piece the state has not */

typedef struct {
    size_t bytes;              /* the whole state, or SIZE_MAX: overflow */
    size_t off[FRAE_SP_COUNT]; /* each piece's byte offset from the base */
    int rows, frames, frame_dim, pend_cap, ring_cap;
    int ahead_width; /* frae_ahead_width */
} frae_state_plan;

/* Plans a state of `rows` sequences keeping `frames` frames of activations
 * for a model of config c (checked): every buffer 64-byte aligned from a
 * 64-byte aligned base.  Returns p->bytes, SIZE_MAX if that overflows. */
size_t frae_state_plan_make(const frae_config *c, int rows, int frames,
                            frae_state_plan *p);

/* Carves the buffers of plan p (bytes != SIZE_MAX) from base into s, every
 * other field zero but threads, 1. */
void frae_state_carve(const frae_state_plan *p, frae_state *s, char *base);

/* dst (bytes from dst_base, carved by frae_state_carve with the same
 * config, rows and frames as src from src_base) becomes src as it stands:
 * the same buffers' bytes and the same place in the stream, so running
 * either gives the same bits (the codec's encoder search tries a frame's
 * codes on a copy). */
void frae_state_copy(frae_state *dst, char *dst_base, const frae_state *src,
                     const char *src_base, size_t bytes);

/* New sequences: an empty (all-zero) buffer, every sum ahead back to the
 * bias. */
void frae_state_reset(const frae_net *m, frae_state *s);

/* After the model's weights changed mid-stream (an Adam step between
 * windows, frae_set_params): the sums ahead made so far again, with the new
 * weights (forward.c). */
void frae_state_rebuild(const frae_net *m, frae_state *s);

/* The ring frame at position pos (any integer: taken mod ring_cap). */
static inline float *frae_state_frame(const frae_state *s, long pos)
{
    long p = pos % s->ring_cap;
    if (p < 0)
        p += s->ring_cap;
    return s->ring + (size_t)p * s->ring_rows * s->frame_dim;
}

#endif
