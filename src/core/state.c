/* The stream state (state.h): its plan of offsets, the buffers carved
 * from memory its owner provides, and its reset.  One layout for the
 * model's batch and for a codec's single sequence. */
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "core/frae_internal.h"

/* Piece k of the plan: a x b x c 4-byte values, 64-byte aligned. */
static void put(frae_state_plan *p, frae_arena *w, int k, size_t a, size_t b,
                size_t c)
{
    p->off[k] = frae_arena_reserve(w, frae_arena_mul3(w, a, b, c));
}

size_t frae_state_plan_make(const frae_config *c, int rows, int frames,
                            frae_state_plan *p)
{
    frae_arena w = {0, 0};
    memset(p, 0, sizeof *p);
    for (int k = 0; k < FRAE_SP_COUNT; k++)
        p->off[k] = FRAE_STATE_NONE;
    p->bytes = SIZE_MAX;
    const int ne = c->n_enc_hidden, nd = c->n_dec_hidden,
              n_layers = ne + nd + 2;
    const int n_mats = frae_mat_count(c);
    const size_t R = (size_t)rows, F = (size_t)frames, D = (size_t)c->frame_dim;
    const int K = c->history;
    int in[FRAE_MAX_MATS], out[FRAE_MAX_MATS];
    size_t widest = 0;
    for (int l = 0; l < n_mats; l++) {
        if (frae_layer_shape(c, l, &in[l], &out[l]))
            return SIZE_MAX;
        widest = (size_t)in[l] > widest ? (size_t)in[l] : widest;
        widest = (size_t)out[l] > widest ? (size_t)out[l] : widest;
    }
    p->rows = rows;
    p->frames = frames;
    p->frame_dim = c->frame_dim;
    p->ahead_width = frae_ahead_width(c);
    const int gru = c->family == FRAE_FAMILY_GRU;
    for (int l = 0; l < n_layers - 1;
         l++) { /* the output layer writes the ring */
        int side = gru && l == 0 ? 0 : gru && l == ne + 1 ? 1 : -1;
        /* a GRU keeps its state h, H of its 3H products */
        size_t units = side >= 0 ? (size_t)out[l] / 3 : (size_t)out[l];
        put(p, &w, FRAE_SP_A + l, F, R, units);
        if (side >= 0) {
            put(p, &w, FRAE_SP_H0 + side, R, units, 1);
            put(p, &w, FRAE_SP_GX + side, R, (size_t)out[l], 1);
            put(p, &w, FRAE_SP_GH + side, R, (size_t)out[l], 1);
            put(p, &w, FRAE_SP_GATES + side, F, R, 4 * units);
        }
    }
    if (K > 0) {
        /* an even number of slots: a pair of frames' sums is contiguous */
        p->pend_cap = K < 2 ? 2 : (K + 1) / 2 * 2;
        put(p, &w, FRAE_SP_PEND, (size_t)p->pend_cap, R, (size_t)out[0]);
        put(p, &w, FRAE_SP_PEND + 1, (size_t)p->pend_cap, R,
            (size_t)out[ne + 1]);
        put(p, &w, FRAE_SP_PAIR_IN, 2, R, D);
    }
    if (c->lookahead > 0)
        put(p, &w, FRAE_SP_AHEAD, R, 1, (size_t)p->ahead_width);
    put(p, &w, FRAE_SP_Q, F, R, (size_t)c->latent_dim);
    if (c->prior_hidden > 0) {
        const int p0 = frae_prior_mat(c, 0), p1 = frae_prior_mat(c, 1);
        put(p, &w, FRAE_SP_PRIOR_CTX, F, R, (size_t)in[p0]);
        put(p, &w, FRAE_SP_PRIOR_HID, F, R, (size_t)out[p0]);
        put(p, &w, FRAE_SP_PRIOR_LOGIT, F, R, (size_t)out[p1]);
    }
    if ((long)K + frames > INT32_MAX)
        return SIZE_MAX;
    p->ring_cap = K + frames;
    put(p, &w, FRAE_SP_RING, (size_t)p->ring_cap, R, D);
    put(p, &w, FRAE_SP_IDX, widest + FRAE_COMPACT_SLACK, 1, 1);
    put(p, &w, FRAE_SP_VAL, widest + FRAE_COMPACT_SLACK, 1, 1);
    if (w.overflow)
        return SIZE_MAX;
    p->bytes = w.bytes;
    return p->bytes;
}

/* The piece at offset k of the plan, from base; NULL if the plan has none. */
static void *piece(const frae_state_plan *p, int k, char *base)
{
    return p->off[k] == FRAE_STATE_NONE ? NULL : base + p->off[k];
}

void frae_state_carve(const frae_state_plan *p, frae_state *s, char *base)
{
    memset(s, 0, sizeof *s);
    s->rows = p->rows;
    s->frames = p->frames;
    s->frame_dim = p->frame_dim;
    for (int l = 0; l < FRAE_MAX_LAYERS; l++)
        s->a[l] = piece(p, FRAE_SP_A + l, base);
    for (int side = 0; side < 2; side++) {
        s->h0[side] = piece(p, FRAE_SP_H0 + side, base);
        s->h[side] = s->h0[side];
        s->gx[side] = piece(p, FRAE_SP_GX + side, base);
        s->gh[side] = piece(p, FRAE_SP_GH + side, base);
        s->gates[side] = piece(p, FRAE_SP_GATES + side, base);
        s->pend[side] = piece(p, FRAE_SP_PEND + side, base);
    }
    s->pend_cap = p->pend_cap;
    s->pair_in = piece(p, FRAE_SP_PAIR_IN, base);
    s->ahead = piece(p, FRAE_SP_AHEAD, base);
    s->la = s->ahead;
    s->la_rs = p->ahead_width;
    s->q = piece(p, FRAE_SP_Q, base);
    s->prior_ctx = piece(p, FRAE_SP_PRIOR_CTX, base);
    s->prior_hid = piece(p, FRAE_SP_PRIOR_HID, base);
    s->prior_logit = piece(p, FRAE_SP_PRIOR_LOGIT, base);
    s->ring_cap = p->ring_cap;
    s->ring = piece(p, FRAE_SP_RING, base);
    s->scratch.idx = piece(p, FRAE_SP_IDX, base);
    s->scratch.val = piece(p, FRAE_SP_VAL, base);
    s->scratch.threads = 1;
}

/* Every pending sum of first layer `which` back to its bias. */
void frae_state_fill_sums(const frae_net *m, frae_state *s, int which)
{
    const frae_layer *ly = &m->layer[which ? m->dec_first : 0];
    const size_t rows = (size_t)s->pend_cap * s->rows;
    for (size_t r = 0; r < rows; r++)
        memcpy(s->pend[which] + r * ly->out, ly->bias, sizeof(float) * ly->out);
}

void frae_state_reset(const frae_net *m, frae_state *s)
{
    memset(s->ring, 0,
           sizeof(float) * (size_t)s->ring_cap * s->rows * s->frame_dim);
    s->ring_pos = m->cfg.history;
    s->ring_rows = 0;
    s->pend_next[0] = s->pend_next[1] = 0;
    for (int side = 0; side < 2; side++)
        if (s->h0[side]) { /* h(-1) = 0, as torch.nn.GRUCell's default */
            memset(s->h0[side], 0,
                   sizeof(float) * (size_t)s->rows * m->layer[m->rec[side]].in);
            s->h[side] = s->h0[side];
        }
    if (m->cfg.history > 0) {
        frae_state_fill_sums(m, s, 0);
        frae_state_fill_sums(m, s, 1);
    }
}

void frae_state_copy(frae_state *dst, char *dst_base, const frae_state *src,
                     const char *src_base, size_t bytes)
{
    memcpy(dst_base, src_base, bytes);
    /* the scalars a stream moves on; the pointers stay dst's own, carved
     * by the same layout, save h, which points at h0 or an activation
     * slot: the same offset in dst */
    dst->ring_pos = src->ring_pos;
    dst->ring_rows = src->ring_rows;
    dst->pend_next[0] = src->pend_next[0];
    dst->pend_next[1] = src->pend_next[1];
    /* the frames ahead: dst's own copy, unless src borrowed training's */
    dst->la = src->la == src->ahead ? dst->ahead : src->la;
    dst->la_rs = src->la_rs;
    for (int side = 0; side < 2; side++)
        dst->h[side] =
            src->h[side]
                ? (float *)(void *)(dst_base +
                                    ((const char *)src->h[side] - src_base))
                : NULL;
}
