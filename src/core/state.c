/* The stream state (state.h): its layout, carved from memory its owner
 * provides, and its reset.  One layout for the model's batch and for a
 * codec's single sequence. */
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "core/frae_internal.h"

/* The pieces' pointers once carved (base), NULL when only sizing. */
typedef struct {
    frae_arena arena;
    char *base;
} walker;

static void *take(walker *w, size_t n)
{
    size_t off = frae_arena_reserve(&w->arena, n);
    return w->base && !w->arena.overflow ? w->base + off : NULL;
}

static size_t prod(walker *w, size_t a, size_t b, size_t c)
{
    return frae_arena_mul3(&w->arena, a, b, c);
}

size_t frae_state_layout(const frae_config *c, int rows, int frames,
                         frae_state *s, char *base)
{
    walker w = {{0, 0}, base};
    frae_state st;
    memset(&st, 0, sizeof st);
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
    st.rows = rows;
    st.frames = frames;
    st.frame_dim = c->frame_dim;
    const int gru = c->family == FRAE_FAMILY_GRU;
    for (int l = 0; l < n_layers - 1;
         l++) { /* the output layer writes the ring */
        int gru_side = gru && l == 0 ? 0 : gru && l == ne + 1 ? 1 : -1;
        /* a GRU keeps its state h, H of its 3H products */
        size_t units = gru_side >= 0 ? (size_t)out[l] / 3 : (size_t)out[l];
        st.a[l] = take(&w, prod(&w, F, R, units));
        if (gru_side >= 0) {
            st.h0[gru_side] = take(&w, prod(&w, R, units, 1));
            st.h[gru_side] = st.h0[gru_side];
            st.gx[gru_side] = take(&w, prod(&w, R, (size_t)out[l], 1));
            st.gh[gru_side] = take(&w, prod(&w, R, (size_t)out[l], 1));
            st.gates[gru_side] = take(&w, prod(&w, F, R, 4 * units));
        }
    }
    if (K > 0) {
        /* an even number of slots: a pair of frames' sums is contiguous */
        st.pend_cap = K < 2 ? 2 : (K + 1) / 2 * 2;
        st.pend[0] = take(&w, prod(&w, (size_t)st.pend_cap, R, (size_t)out[0]));
        st.pend[1] =
            take(&w, prod(&w, (size_t)st.pend_cap, R, (size_t)out[ne + 1]));
        st.pair_in = take(&w, prod(&w, 2, R, D));
    }
    st.q = take(&w, prod(&w, F, R, (size_t)c->latent_dim));
    if (c->prior_hidden > 0) {
        const int p0 = frae_prior_mat(c, 0), p1 = frae_prior_mat(c, 1);
        st.prior_ctx = take(&w, prod(&w, F, R, (size_t)in[p0]));
        st.prior_hid = take(&w, prod(&w, F, R, (size_t)out[p0]));
        st.prior_logit = take(&w, prod(&w, F, R, (size_t)out[p1]));
    }
    if ((long)K + frames > INT32_MAX)
        return SIZE_MAX;
    st.ring_cap = K + frames;
    st.ring = take(&w, prod(&w, (size_t)st.ring_cap, R, D));
    st.scratch.idx = take(&w, widest + FRAE_COMPACT_SLACK);
    st.scratch.val = take(&w, widest + FRAE_COMPACT_SLACK);
    st.scratch.threads = 1;
    if (w.arena.overflow)
        return SIZE_MAX;
    if (base)
        *s = st;
    return w.arena.bytes;
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
    for (int side = 0; side < 2; side++)
        dst->h[side] =
            src->h[side]
                ? (float *)(void *)(dst_base +
                                    ((const char *)src->h[side] - src_base))
                : NULL;
}
