/* The forward pass of one frame: a model, read only, and a stream state
 * (state.h).  The first layers sum the fed-back frames ahead of time (see
 * below); every other layer is one product on the previous one's output.
 * The latent layer also quantizes into the state's q; the output layer
 * writes the decoded frame into the state's ring. */
#include <string.h>

#include "core/frae_internal.h"

/* ---- first layers: fed-back frames summed ahead of time ----------------
 *
 * A first layer's output for frame t is one FMA chain per unit: the bias,
 * then the fed-back frames oldest first (W_K y_{t-K}, ..., W_1 y_{t-1}),
 * then the head (x_t or the latent).  Every term but the head is known
 * before frame t, so the chain runs ahead in a pending sum per future
 * frame (the state's pend, slot t % pend_cap).  That lets a buffer block W_k (k >=
 * 2) meet two frames per read instead of one: it is applied to the pair
 * (y_{s-1}, y_s) at the end of frame s whenever s + k is odd.  A chain
 * still receives its terms in order (W_k y_{s-1} is applied no later than
 * W_{k-1} y_s), and W_1 y_s at the end of every frame.  At batch 1 the
 * weights stream from L3, and this reads 3/8 fewer bytes of the default
 * model's first layers.  Nothing else changes: each output is still one
 * ordered chain, the same on every path.  With more than
 * FRAE_PEND_MAX_ROWS sequences each weight read already serves many rows,
 * and the chain is computed at the frame itself, with the same result. */

static float *pend_slot(const frae_net *m, const frae_state *st, int which,
                        long j, int nb)
{
    const frae_layer *ly = &m->layer[which ? m->dec_first : 0];
    return st->pend[which] + (size_t)(j % st->pend_cap) * nb * ly->out;
}

static void fill_bias(const frae_layer *ly, const float *bias, float *dst,
                      int rows)
{
    for (int r = 0; r < rows; r++)
        memcpy(dst + (size_t)r * ly->out, bias, sizeof(float) * ly->out);
}

/* The end of frame s when W_k (k >= 2) takes y_s into its sums. */
static long pend_when(int k, long s)
{
    return k == 1 || ((s + k) & 1) ? s : s + 1;
}

/* Applies the fed-back terms due at the end of frame s (s >= 0) to first
 * layer `which`'s pending sums; t is frame s + 1's window position. */
static void pend_feed(const frae_net *m, frae_state *st, int which, long s,
                      long t, int nb)
{
    const int l = which ? m->dec_first : 0;
    const frae_layer *ly = &m->layer[l];
    const int D = m->cfg.frame_dim, K = m->cfg.history;
    const int head_w = frae_buffer_row(m, which);
    const float *ys = frae_state_frame(st, st->ring_pos + t - 1);
    const float *pair = frae_state_frame(st, st->ring_pos + t - 2);
    if (K >= 2 && pair + (size_t)nb * D != ys) {
        /* the ring wraps between the two: side by side in pair_in */
        memcpy(st->pair_in, pair, sizeof(float) * (size_t)nb * D);
        memcpy(st->pair_in + (size_t)nb * D, ys,
               sizeof(float) * (size_t)nb * D);
        pair = st->pair_in;
    }
    /* W_K is every chain's first term, so it starts the sum from the bias
     * (the slot's last frame has been consumed) */
    for (int k = K; k >= 2; k--)
        if ((s + k) & 1) /* targets s-1+k (even: its pair of slots is
                            contiguous, pend_cap being even) and s+k */
            frae_layer_product(
                m, &st->scratch, l, 2 * nb, D, pair, D, head_w + (k - 1) * D,
                pend_slot(m, st, which, s - 1 + k, nb),
                k == K ? ly->bias : NULL, k == K ? GEMM_BIAS : GEMM_ACC);
    frae_layer_product(m, &st->scratch, l, nb, D, ys, D, head_w,
                       pend_slot(m, st, which, s + 1, nb),
                       K == 1 ? ly->bias : NULL, K == 1 ? GEMM_BIAS : GEMM_ACC);
}

/* Recomputes the pending sums from the ring after the weights changed
 * mid-stream (an Adam step between windows, set_params): each sum gets the
 * terms the schedule above has applied so far, in the same order. */
static void pend_rebuild(const frae_net *m, frae_state *st, int which)
{
    const int l = which ? m->dec_first : 0;
    const frae_layer *ly = &m->layer[l];
    const float *bias = ly->bias;
    const int D = m->cfg.frame_dim, K = m->cfg.history;
    const int head_w = frae_buffer_row(m, which);
    const int nb = st->ring_rows;
    const long tau = st->pend_next[which];
    if (nb == 0 || tau == 0 || nb > FRAE_PEND_MAX_ROWS) { /* none applied */
        frae_state_fill_sums(m, st, which);
        return;
    }
    for (long j = tau; j < tau + st->pend_cap; j++) {
        float *acc = pend_slot(m, st, which, j, nb);
        fill_bias(ly, bias, acc, nb);
        for (int k = K; k >= 1; k--) {
            long s = j - k, e = pend_when(k, s);
            if (e < 0 || e > tau - 2)
                continue;
            /* frame s sits tau - s frames before the next one, whose
             * window position is 0 once the window has moved on */
            frae_layer_product(m, &st->scratch, l, nb, D,
                               frae_state_frame(st, st->ring_pos - (tau - s)),
                               D, head_w + (k - 1) * D, acc, NULL, GEMM_ACC);
        }
    }
}

void frae_state_rebuild(const frae_net *m, frae_state *st)
{
    if (m->cfg.history == 0)
        return;
    pend_rebuild(m, st, 0);
    pend_rebuild(m, st, 1);
}

/* First encoder or decoder layer (`which` 0 or 1) for frame t (window
 * position) of nb sequences: z = its pending sum + head . W_head, the head
 * being head_w values per row (x or the latent) at kernel row 0.  The GRU
 * encoder's head goes on with h_dec (see gru_forward). */
static void first_layer_forward(const frae_net *m, frae_state *st, int which,
                                long t, const float *head, ptrdiff_t head_rs,
                                int head_w, int nb, float *z)
{
    const int l = which ? m->dec_first : 0;
    const frae_layer *ly = &m->layer[l];
    const float *bias = ly->bias;
    if (m->cfg.history == 0) {
        frae_layer_product(m, &st->scratch, l, nb, head_w, head, head_rs, 0, z,
                           bias, GEMM_BIAS);
        return;
    }
    const long tau = st->pend_next[which]++;
    if (nb > FRAE_PEND_MAX_ROWS) {
        /* many rows already share each weight read: the same chain, in
         * the same order, computed at the frame itself */
        const int D = m->cfg.frame_dim, K = m->cfg.history;
        const int buf = frae_buffer_row(m, which);
        for (int k = K; k >= 1; k--)
            frae_layer_product(m, &st->scratch, l, nb, D,
                               frae_state_frame(st, st->ring_pos + t - k), D,
                               buf + (k - 1) * D, z, k == K ? bias : NULL,
                               k == K ? GEMM_BIAS : GEMM_ACC);
        frae_layer_product(m, &st->scratch, l, nb, head_w, head, head_rs, 0, z,
                           NULL, GEMM_ACC);
        return;
    }
    if (tau > 0)
        pend_feed(m, st, which, tau - 1, t, nb);
    const float *acc = pend_slot(m, st, which, tau, nb);
    if (nb == 1) { /* the sum is the head's starting row */
        frae_layer_product(m, &st->scratch, l, 1, head_w, head, head_rs, 0, z,
                           acc, GEMM_BIAS);
        return;
    }
    memcpy(z, acc, sizeof(float) * (size_t)nb * ly->out);
    frae_layer_product(m, &st->scratch, l, nb, head_w, head, head_rs, 0, z,
                       NULL, GEMM_ACC);
}

/* A GRU layer (side 0: the encoder's, layer 0; 1: the decoder's) for frame
 * t: its input product (first_layer_forward, then for the encoder the
 * chain goes on over h_dec(t-1)), its recurrent product on its own h(t-1),
 * and the cell.  h(t) lands in the activation slot, which st->h then
 * points at (with one frame kept, the cell updates it in place). */
static void gru_forward(const frae_net *m, frae_state *st, int side, long t,
                        const float *head, ptrdiff_t head_rs, int head_w,
                        int nb, size_t slot)
{
    const int l = side ? m->dec_first : 0, rec = m->rec[side];
    const int H = m->layer[l].units;
    float *gx = st->gx[side], *gh = st->gh[side];
    first_layer_forward(m, st, side, t, head, head_rs, head_w, nb, gx);
    if (side == 0) {
        const int Hd = m->layer[m->dec_first].units;
        frae_layer_product(m, &st->scratch, 0, nb, Hd, st->h[1], Hd,
                           m->cfg.frame_dim, gx, NULL, GEMM_ACC);
        if (m->cfg.lookahead > 0) /* the chain ends with the frames ahead */
            frae_layer_product(m, &st->scratch, 0, nb,
                               frae_ahead_width(&m->cfg), st->la, st->la_rs,
                               frae_lookahead_row(m), gx, NULL, GEMM_ACC);
    }
    frae_layer_product(m, &st->scratch, rec, nb, H, st->h[side], H, 0, gh,
                       m->layer[rec].bias, GEMM_BIAS);
    float *h = st->a[l] + slot * H;
    frae_gru_rows_forward(m, &st->scratch, nb, H, gx, gh, st->h[side],
                          st->gates[side] + slot * 4 * H, h);
    st->h[side] = h;
}

/* Layers from..to of frame t for nb sequences.  x points at frame t of
 * sequence 0 (rows x_rs apart; read by layer 0 only).  The latent layer
 * also quantizes into the state's q; the output layer writes into its
 * ring. */
static void run_layers(const frae_net *m, frae_state *st, long t,
                       const float *x, ptrdiff_t x_rs, int nb, int from, int to)
{
    const int L = m->cfg.latent_dim, last = m->n_layers - 1;
    const size_t slot = (size_t)(t % st->frames) * nb;
    float *q = st->q + slot * L;
    for (int l = from; l <= to; l++) {
        const frae_layer *ly = &m->layer[l];
        if (ly->act == ACT_GRU) {
            if (l == 0)
                gru_forward(m, st, 0, t, x, x_rs, m->cfg.frame_dim, nb, slot);
            else
                gru_forward(m, st, 1, t, q, L, L, nb, slot);
            continue;
        }
        float *z = l == last ? frae_state_frame(st, st->ring_pos + t)
                             : st->a[l] + slot * ly->out;
        if (l == 0)
            first_layer_forward(m, st, 0, t, x, x_rs, m->cfg.frame_dim, nb, z);
        else if (l == m->dec_first)
            first_layer_forward(m, st, 1, t, q, L, L, nb, z);
        else
            frae_layer_product(m, &st->scratch, l, nb, ly->in,
                               st->a[l - 1] + slot * ly->in, ly->in, 0, z,
                               ly->bias, GEMM_BIAS);
        frae_activate(ly->act, z, (size_t)nb * ly->out);
        if (l == m->latent)
            frae_quantize(&m->cfg, z, q, (size_t)nb * L);
    }
}

void frae_forward_frame(const frae_net *m, frae_state *st, long t,
                        const float *x, ptrdiff_t x_rs, int nb)
{
    run_layers(m, st, t, x, x_rs, nb, 0, m->n_layers - 1);
}

/* Erasure training's frame (train.c), over nb = 2S rows: the encoder of
 * every row, then the receiver's track (rows S..2S-1) takes the code its
 * sender's row b - S made, or, where lost[b], the latent it ran last
 * halved, as frae_decoder_conceal does; then every row's decoder.  The
 * sender's track loses nothing, so what its encoder is fed back is a
 * loss-free decoder's, as a real sender's is; the receiver's encoder runs
 * (the rows are one batch) but its codes are not used.  last_q [nb][L]
 * holds each row's last decoder latent, and is moved on. */
void frae_forward_frame_lossy(const frae_net *m, frae_state *st, long t,
                              const float *x, ptrdiff_t x_rs, int nb,
                              const unsigned char *lost, float *last_q)
{
    const int L = m->cfg.latent_dim, S = nb / 2;
    run_layers(m, st, t, x, x_rs, nb, 0, m->latent);
    float *q = st->q + (size_t)(t % st->frames) * nb * L;
    for (int b = S; b < nb; b++) {
        float *qb = q + (size_t)b * L, *last = last_q + (size_t)b * L;
        if (lost[b])
            for (int u = 0; u < L; u++)
                qb[u] = FRAE_CONCEAL_DECAY * last[u];
        else
            memcpy(qb, q + (size_t)(b - S) * L, sizeof(float) * L);
        memcpy(last, qb, sizeof(float) * L);
    }
    run_layers(m, st, t, NULL, 0, nb, m->dec_first, m->n_layers - 1);
}

void frae_forward_encode(const frae_net *m, frae_state *st, long t,
                         const float *x)
{
    run_layers(m, st, t, x, m->cfg.frame_dim, 1, 0, m->latent);
}

void frae_forward_decode(const frae_net *m, frae_state *st, long t)
{
    run_layers(m, st, t, NULL, 0, 1, m->dec_first, m->n_layers - 1);
}
